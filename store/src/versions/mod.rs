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
//! and in the sled tree `idx.versions`: the cluster numbers, the object ids,
//! one key per version in version order (its row number as value, so a late
//! version finds its neighbours with one range read), and per cluster the
//! committed file lengths. Rows are scanned as a whole: an as-of question
//! reads two 8-byte columns per version and touches details only for the
//! answer.
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

use crate::{Entry, StoreError};

pub use details::VersionDetails;
pub use row::VersionRow;

use files::{ClusterFiles, ClusterMeta};
use source::NewVersion;

const TREE: &str = "idx.versions";
const WATERMARK_KEY: &[u8] = b"\xffwatermark";
const DIRTY_KEY: &[u8] = b"\xffdirty";
const CLUSTER_PREFIX: u8 = b'C';
const META_PREFIX: u8 = b'N';
const OBJECT_PREFIX: u8 = b'O';
const VERSION_PREFIX: u8 = b'V';

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
        Ok(Some(
            self.tree
                .get(WATERMARK_KEY)?
                .and_then(|v| crate::layout::u64_value(&v))
                .unwrap_or(0),
        ))
    }

    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        let _apply = self.apply.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = self.write();
        w.open.clear();
        self.tree.clear()?;
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        }
        Ok(())
    }

    /// Adds the object versions among `entries` (consecutive, ending at log
    /// size `upto`).
    pub(crate) fn apply(&self, entries: &[Entry], upto: u64) -> Result<(), StoreError> {
        let versions: Vec<NewVersion> = entries.iter().filter_map(NewVersion::of).collect();
        let _apply = self.apply.lock().unwrap_or_else(|p| p.into_inner());
        if versions.is_empty() {
            self.tree.insert(WATERMARK_KEY, &upto.to_be_bytes())?;
            return Ok(());
        }
        self.tree.insert(DIRTY_KEY, &[])?;
        self.tree.flush()?;
        let mut w = self.write();
        let mut touched = Vec::new();
        for v in &versions {
            let no = self.cluster_number(&v.cluster)?;
            let files = match w.open.entry(no) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let meta = self.meta(no)?.unwrap_or_default();
                    slot.insert(ClusterFiles::open(&self.cluster_dir(no), meta)?)
                }
            };
            self.insert(no, files, v)?;
            if !touched.contains(&no) {
                touched.push(no);
            }
        }
        let mut batch = sled::Batch::default();
        for no in touched {
            if let Some(files) = w.open.get_mut(&no) {
                let meta = files.flush()?;
                batch.insert(meta_key(no), meta.encode());
            }
        }
        batch.insert(WATERMARK_KEY, &upto.to_be_bytes());
        batch.remove(DIRTY_KEY);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// One version: its key, its row, and the interval split of its
    /// predecessor.
    fn insert(&self, no: u32, files: &mut ClusterFiles, v: &NewVersion) -> Result<(), StoreError> {
        // The object key's value: id, then the offset and hash of the last
        // details written for the object. Successive versions of an object
        // mostly say the same (the resourceVersion lives in the row), so
        // they share one details record.
        let object_key = object_key(no, &v.name);
        let (object, last) = match self.tree.get(&object_key)? {
            Some(value) => {
                let id = u32_value(value.get(..4).unwrap_or(&value))?;
                let last = match value.get(4..) {
                    Some(rest) if rest.len() == 24 => {
                        Some((u64_value(&rest[..8])?, rest[8..].to_vec()))
                    }
                    _ => None,
                };
                (id, last)
            }
            None => (files.add_object(&v.name)?, None),
        };
        let prefix = version_prefix(no, object);
        let key = version_key(&prefix, v);
        if self.tree.contains_key(&key)? {
            return Ok(());
        }
        let next = match self.tree.range(key.clone()..).next() {
            Some(kv) => {
                let (k, _) = kv?;
                k.starts_with(&prefix).then(|| order_of(&k)).transpose()?
            }
            None => None,
        };
        let previous = match self.tree.range(prefix.clone()..key.clone()).next_back() {
            Some(kv) => {
                let (k, row) = kv?;
                k.starts_with(&prefix)
                    .then(|| u64_value(&row))
                    .transpose()?
            }
            None => None,
        };
        let mut encoded = Vec::new();
        details::encode(&v.details, &mut encoded);
        let hash = blake3::hash(&encoded).as_bytes()[..16].to_vec();
        let details = match last {
            Some((offset, h)) if h == hash => offset,
            _ => {
                let offset = files.add_details(&encoded);
                let mut value = object.to_be_bytes().to_vec();
                value.extend_from_slice(&offset.to_be_bytes());
                value.extend_from_slice(&hash);
                self.tree.insert(&object_key, value)?;
                offset
            }
        };
        let row = VersionRow {
            object,
            flags: if v.deleted { row::DELETED } else { 0 }
                | if v.rv_decimal { row::RV_DECIMAL } else { 0 },
            from: v.time,
            to: next.map_or(i64::MAX, |(t, _)| t),
            to_index: next.map_or(u64::MAX, |(_, i)| i),
            index: v.index,
            rv: v.rv,
            details,
        };
        let number = files.add_row(&row);
        if let Some(previous) = previous {
            files.end_row(previous, v.time, v.index)?;
        }
        self.tree.insert(key, &number.to_be_bytes())?;
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

    fn cluster_number(&self, cluster: &str) -> Result<u32, StoreError> {
        if let Some(no) = self.tree.get(cluster_key(cluster))? {
            return u32_value(&no);
        }
        let no = self.tree.scan_prefix([CLUSTER_PREFIX]).count() as u32;
        self.tree.insert(cluster_key(cluster), &no.to_be_bytes())?;
        Ok(no)
    }

    fn meta(&self, no: u32) -> Result<Option<ClusterMeta>, StoreError> {
        self.tree
            .get(meta_key(no))?
            .map(|v| ClusterMeta::decode(&v))
            .transpose()
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

/// `'V' ‖ cluster ‖ object`: every version of one object shares it.
fn version_prefix(no: u32, object: u32) -> Vec<u8> {
    let mut k = vec![VERSION_PREFIX];
    k.extend_from_slice(&no.to_be_bytes());
    k.extend_from_slice(&object.to_be_bytes());
    k
}

/// The prefix, then the version order: sortable time, rv, index.
fn version_key(prefix: &[u8], v: &NewVersion) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 24);
    k.extend_from_slice(prefix);
    k.extend_from_slice(&(((v.time as u64) ^ (1 << 63)).to_be_bytes()));
    k.extend_from_slice(&v.rv.to_be_bytes());
    k.extend_from_slice(&v.index.to_be_bytes());
    k
}

/// (valid time, index) of a version key.
fn order_of(key: &[u8]) -> Result<(i64, u64), StoreError> {
    let short = || StoreError::Corrupt("short version key".into());
    let tail = key.len().checked_sub(24).ok_or_else(short)?;
    let time = u64_value(&key[tail..tail + 8])? ^ (1 << 63);
    let index = u64_value(&key[tail + 16..])?;
    Ok((time as i64, index))
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
