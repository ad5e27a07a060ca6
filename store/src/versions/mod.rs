//! The object version index: every version of every Kubernetes object with
//! the valid-time interval during which it was current.
//!
//! Versions of one object are ordered by (valid time, resourceVersion as an
//! integer, log index): DESIGN's order, made total by reading a
//! resourceVersion that does not parse as 0. A version's interval runs from
//! its own time to the time of the next version of the same object, so a
//! late event that lands between two known versions splits an interval: the
//! earlier version now ends where the late one starts. The answer at T
//! therefore never depends on arrival order.
//!
//! Layout, per cluster, under `DATA/versions/<n>/`:
//!
//! ```text
//! rows     fixed-width version rows (see [`VersionRow`]), in insertion order
//! details  length-prefixed version details (uid, claims, managers, ...)
//! objects  length-prefixed object names; the object id is the ordinal
//! ```
//!
//! Each row also names the object's previous version in version order, so
//! a late version walks back from the newest to its place (usually a step
//! or two) and splits the interval it lands in. The sled tree
//! `idx.versions` holds the cluster numbers, per object its id, last
//! details and newest version (one read per new version, one write per
//! object per batch), and per cluster the committed file lengths. Rows are
//! scanned as a whole: an as-of question reads a few 8-byte columns per
//! version and touches details only for the answer.
//!
//! Like every derived index this is a cache: [`Store::reindex`] rebuilds it
//! from the log, and an apply interrupted by a crash (a dirty marker is
//! flushed before any file is touched) makes the next reader rebuild it.
//!
//! [`Store::reindex`]: crate::Store::reindex

mod details;
mod files;
mod row;
mod source;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, RwLock};

use crate::StoreError;

pub use details::VersionDetails;
pub use row::VersionRow;

use files::{ClusterFiles, ClusterMeta};
pub(crate) use source::NewVersion;

const TREE: &str = "idx.versions";
const WATERMARK_KEY: &[u8] = b"\xffwatermark";
const DIRTY_KEY: &[u8] = b"\xffdirty";
const CLUSTER_PREFIX: u8 = b'C';
const META_PREFIX: u8 = b'N';
const OBJECT_PREFIX: u8 = b'O';
/// The layout version: an index written in another layout is rebuilt.
const FORMAT_KEY: &[u8] = b"\xffformat";
const FORMAT: &[u8] = b"2";

/// An object's name within its cluster.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectName {
    /// API group ("" for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A consistent copy of one cluster's versions, read in one go.
#[derive(Debug)]
pub struct ClusterVersions {
    /// The cluster id.
    pub cluster: String,
    objects: Vec<ObjectName>,
    rows: Vec<VersionRow>,
    details: Vec<u8>,
}

impl ClusterVersions {
    /// Every version row, in insertion order.
    pub fn rows(&self) -> &[VersionRow] {
        &self.rows
    }

    /// The name of object `id`.
    pub fn object(&self, id: u32) -> Option<&ObjectName> {
        self.objects.get(id as usize)
    }

    /// Number of objects (live or not) the cluster ever had.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Decodes the details of `row`.
    pub fn details(&self, row: &VersionRow) -> Result<VersionDetails, StoreError> {
        let mut d = details::decode(&self.details, row.details)?;
        if row.flags & row::RV_DECIMAL != 0 {
            d.resource_version = row.rv.to_string();
        }
        Ok(d)
    }

    /// The version of each object current at valid time `at` (microseconds)
    /// as the ledger knew it when it held `known_below` entries, deletions
    /// left out.
    ///
    /// A row is a candidate when it was known (`index < known_below`),
    /// started at or before `at`, and either ended after `at` or was ended
    /// by a version not yet known. The newest candidate of each object wins:
    /// without `known_below` there is exactly one, and with it every known
    /// version that ends the winner's interval is itself a candidate.
    pub fn live_at(&self, at: i64, known_below: u64) -> Vec<&VersionRow> {
        let mut best: Vec<Option<u32>> = vec![None; self.objects.len()];
        for (i, r) in self.rows.iter().enumerate() {
            if r.index >= known_below || r.from > at || (r.to <= at && r.to_index < known_below) {
                continue;
            }
            let Some(slot) = best.get_mut(r.object as usize) else {
                continue;
            };
            match slot {
                Some(j) if self.rows[*j as usize].order() >= r.order() => {}
                _ => *slot = Some(i as u32),
            }
        }
        best.into_iter()
            .flatten()
            .map(|i| &self.rows[i as usize])
            .filter(|r| !r.deleted())
            .collect()
    }
}

/// The index: a sled tree plus per-cluster files.
pub(crate) struct VersionIndex {
    tree: sled::Tree,
    dir: PathBuf,
    /// Writers hold it exclusively while files change; readers share it
    /// while they copy a cluster, so no reader sees half an apply.
    files: RwLock<Writer>,
    /// Serialises applies (the sled reads during an apply must see the
    /// keys of earlier versions of the same batch).
    apply: Mutex<()>,
}

#[derive(Default)]
struct Writer {
    open: HashMap<u32, ClusterFiles>,
    /// Cluster id → number, as stored under `C` keys.
    numbers: HashMap<String, u32>,
}

impl VersionIndex {
    pub(crate) fn open(db: &sled::Db, dir: PathBuf) -> Result<Self, StoreError> {
        Ok(VersionIndex {
            tree: db.open_tree(TREE)?,
            dir,
            files: RwLock::new(Writer::default()),
            apply: Mutex::new(()),
        })
    }

    pub(crate) fn tree_name(&self) -> &'static str {
        TREE
    }

    /// The log size covered, or `None` when an apply was interrupted and
    /// the index must be rebuilt.
    pub(crate) fn watermark(&self) -> Result<Option<u64>, StoreError> {
        if self.tree.contains_key(DIRTY_KEY)? {
            return Ok(None);
        }
        let Some(mark) = self.tree.get(WATERMARK_KEY)? else {
            return Ok(Some(0));
        };
        if self.tree.get(FORMAT_KEY)?.as_deref() != Some(FORMAT) {
            return Ok(None);
        }
        Ok(crate::layout::u64_value(&mark))
    }

    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        let _apply = self.apply.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = self.write();
        w.open.clear();
        w.numbers.clear();
        self.tree.clear()?;
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        }
        Ok(())
    }

    /// Adds `versions` (each with its log index), and records that the
    /// index now covers log size `upto`.
    pub(crate) fn apply<'a>(
        &self,
        versions: impl IntoIterator<Item = (u64, &'a NewVersion)>,
        upto: u64,
    ) -> Result<(), StoreError> {
        let _apply = self.apply.lock().unwrap_or_else(|p| p.into_inner());
        let mut versions = versions.into_iter().peekable();
        if versions.peek().is_none() {
            let mut batch = sled::Batch::default();
            batch.insert(WATERMARK_KEY, &upto.to_be_bytes());
            batch.insert(FORMAT_KEY, FORMAT);
            self.tree.apply_batch(batch)?;
            return Ok(());
        }
        self.tree.insert(DIRTY_KEY, &[])?;
        self.tree.flush()?;
        let mut w = self.write();
        let Writer { open, numbers } = &mut *w;
        // Object states change many times in a batch: they are kept here
        // and written once, with the watermark.
        let mut states: HashMap<Vec<u8>, ObjectState> = HashMap::new();
        let mut touched = Vec::new();
        for (index, v) in versions {
            let no = self.cluster_number(numbers, &v.cluster)?;
            let files = match open.entry(no) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let meta = self.meta(no)?.unwrap_or_default();
                    slot.insert(ClusterFiles::open(&self.cluster_dir(no), meta)?)
                }
            };
            let key = object_key(no, &v.name);
            if !states.contains_key(&key) {
                if let Some(value) = self.tree.get(&key)? {
                    states.insert(key.clone(), ObjectState::decode(&value)?);
                }
            }
            match states.get_mut(&key) {
                Some(state) => add_version(files, state, index, v)?,
                None => {
                    let state = first_version(files, index, v)?;
                    states.insert(key, state);
                }
            }
            if !touched.contains(&no) {
                touched.push(no);
            }
        }
        let mut batch = sled::Batch::default();
        for no in touched {
            if let Some(files) = open.get_mut(&no) {
                let meta = files.flush()?;
                batch.insert(meta_key(no), meta.encode());
            }
        }
        for (key, state) in states {
            batch.insert(key, state.encode());
        }
        batch.insert(WATERMARK_KEY, &upto.to_be_bytes());
        batch.insert(FORMAT_KEY, FORMAT);
        batch.remove(DIRTY_KEY);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Cluster ids that have versions.
    pub(crate) fn clusters(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for kv in self.tree.scan_prefix([CLUSTER_PREFIX]) {
            let (k, _) = kv?;
            out.push(String::from_utf8_lossy(&k[1..]).into_owned());
        }
        Ok(out)
    }

    /// A copy of one cluster's versions (`None`: the cluster has none).
    pub(crate) fn cluster(&self, cluster: &str) -> Result<Option<ClusterVersions>, StoreError> {
        let Some(no) = self.tree.get(cluster_key(cluster))? else {
            return Ok(None);
        };
        let no = u32_value(&no)?;
        let _shared = self.files.read().unwrap_or_else(|p| p.into_inner());
        let Some(meta) = self.meta(no)? else {
            return Ok(None);
        };
        let files::Contents {
            objects,
            rows,
            details,
        } = files::read(&self.cluster_dir(no), &meta)?;
        Ok(Some(ClusterVersions {
            cluster: cluster.to_string(),
            objects,
            rows,
            details,
        }))
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Writer> {
        self.files.write().unwrap_or_else(|p| p.into_inner())
    }

    fn cluster_dir(&self, no: u32) -> PathBuf {
        self.dir.join(no.to_string())
    }

    fn cluster_number(
        &self,
        numbers: &mut HashMap<String, u32>,
        cluster: &str,
    ) -> Result<u32, StoreError> {
        if let Some(no) = numbers.get(cluster) {
            return Ok(*no);
        }
        let no = match self.tree.get(cluster_key(cluster))? {
            Some(no) => u32_value(&no)?,
            None => {
                let no = self.tree.scan_prefix([CLUSTER_PREFIX]).count() as u32;
                self.tree.insert(cluster_key(cluster), &no.to_be_bytes())?;
                no
            }
        };
        numbers.insert(cluster.to_string(), no);
        Ok(no)
    }

    fn meta(&self, no: u32) -> Result<Option<ClusterMeta>, StoreError> {
        self.tree
            .get(meta_key(no))?
            .map(|v| ClusterMeta::decode(&v))
            .transpose()
    }
}

/// What the index keeps per object (the value of its `O` key): its id,
/// the last details written for it (successive versions mostly say the
/// same, the resourceVersion living in the row, so they share one record),
/// and its newest version, which an in-order version simply follows.
struct ObjectState {
    id: u32,
    details: u64,
    details_hash: [u8; 16],
    newest: u64,
    newest_order: (i64, u64, u64),
}

impl ObjectState {
    const WIDTH: usize = 60;

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::WIDTH);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.details.to_be_bytes());
        out.extend_from_slice(&self.details_hash);
        out.extend_from_slice(&self.newest.to_be_bytes());
        let (time, rv, index) = self.newest_order;
        out.extend_from_slice(&time.to_be_bytes());
        out.extend_from_slice(&rv.to_be_bytes());
        out.extend_from_slice(&index.to_be_bytes());
        out
    }

    fn decode(b: &[u8]) -> Result<ObjectState, StoreError> {
        if b.len() != Self::WIDTH {
            return Err(StoreError::Corrupt(
                "bad object state in the version index".into(),
            ));
        }
        let mut details_hash = [0u8; 16];
        details_hash.copy_from_slice(&b[12..28]);
        Ok(ObjectState {
            id: u32_value(&b[..4])?,
            details: u64_value(&b[4..12])?,
            details_hash,
            newest: u64_value(&b[28..36])?,
            newest_order: (
                u64_value(&b[36..44])? as i64,
                u64_value(&b[44..52])?,
                u64_value(&b[52..60])?,
            ),
        })
    }
}

/// The first version of an object the cluster has seen.
fn first_version(
    files: &mut ClusterFiles,
    index: u64,
    v: &NewVersion,
) -> Result<ObjectState, StoreError> {
    let id = files.add_object(&v.name)?;
    let (encoded, details_hash) = encode_details(v);
    let details = files.add_details(&encoded);
    let newest = files.add_row(&new_row(id, index, v, details, row::NONE, None));
    Ok(ObjectState {
        id,
        details,
        details_hash,
        newest,
        newest_order: (v.time, v.rv, index),
    })
}

/// A further version of a known object. In order (the common case) it
/// follows the newest and ends its interval; late, it walks back along the
/// `prev` chain to its place and splits the interval it lands in.
fn add_version(
    files: &mut ClusterFiles,
    state: &mut ObjectState,
    index: u64,
    v: &NewVersion,
) -> Result<(), StoreError> {
    let order = (v.time, v.rv, index);
    if order == state.newest_order {
        return Ok(()); // already indexed
    }
    // (predecessor, successor row number and row)
    let (prev, next) = if order > state.newest_order {
        (Some(state.newest), None)
    } else {
        let mut next = state.newest;
        let mut next_row = files.row(next)?;
        loop {
            if next_row.prev == row::NONE {
                break (None, Some((next, next_row)));
            }
            let r = files.row(next_row.prev)?;
            if r.order() == order {
                return Ok(()); // already indexed
            }
            if r.order() < order {
                break (Some(next_row.prev), Some((next, next_row)));
            }
            next = next_row.prev;
            next_row = r;
        }
    };
    let (encoded, hash) = encode_details(v);
    if hash != state.details_hash {
        state.details = files.add_details(&encoded);
        state.details_hash = hash;
    }
    let row = new_row(
        state.id,
        index,
        v,
        state.details,
        prev.unwrap_or(row::NONE),
        next.as_ref().map(|(_, r)| r),
    );
    let n = files.add_row(&row);
    if let Some(p) = prev {
        files.end_row(p, v.time, index)?;
    }
    match next {
        Some((next, _)) => files.set_prev(next, n)?,
        None => {
            state.newest = n;
            state.newest_order = order;
        }
    }
    Ok(())
}

fn encode_details(v: &NewVersion) -> (Vec<u8>, [u8; 16]) {
    let mut encoded = Vec::new();
    details::encode(&v.details, &mut encoded);
    let mut hash = [0u8; 16];
    hash.copy_from_slice(&blake3::hash(&encoded).as_bytes()[..16]);
    (encoded, hash)
}

/// The row of version `v`, ending where `next` starts.
fn new_row(
    object: u32,
    index: u64,
    v: &NewVersion,
    details: u64,
    prev: u64,
    next: Option<&VersionRow>,
) -> VersionRow {
    VersionRow {
        object,
        flags: if v.deleted { row::DELETED } else { 0 }
            | if v.rv_decimal { row::RV_DECIMAL } else { 0 },
        from: v.time,
        to: next.map_or(i64::MAX, |r| r.from),
        to_index: next.map_or(u64::MAX, |r| r.index),
        index,
        rv: v.rv,
        details,
        prev,
    }
}

fn cluster_key(cluster: &str) -> Vec<u8> {
    let mut k = vec![CLUSTER_PREFIX];
    k.extend_from_slice(cluster.as_bytes());
    k
}

fn meta_key(no: u32) -> Vec<u8> {
    let mut k = vec![META_PREFIX];
    k.extend_from_slice(&no.to_be_bytes());
    k
}

fn object_key(no: u32, name: &ObjectName) -> Vec<u8> {
    let mut k = vec![OBJECT_PREFIX];
    k.extend_from_slice(&no.to_be_bytes());
    for part in [&name.group, &name.kind, &name.namespace, &name.name] {
        k.extend_from_slice(part.as_bytes());
        k.push(0);
    }
    k
}

fn u64_value(bytes: &[u8]) -> Result<u64, StoreError> {
    crate::layout::u64_value(bytes)
        .ok_or_else(|| StoreError::Corrupt("bad u64 in the version index".into()))
}

fn u32_value(bytes: &[u8]) -> Result<u32, StoreError> {
    bytes
        .try_into()
        .map(u32::from_be_bytes)
        .map_err(|_| StoreError::Corrupt("bad u32 in the version index".into()))
}
