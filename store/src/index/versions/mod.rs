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
//! Layout, per cluster, under `DATA/versions/<n>/`, every file only ever
//! appended:
//!
//! ```text
//! rows     fixed-width version rows (see [`VersionRow`]), in log order
//! details  length-prefixed version details (uid, claims, managers, ...)
//! objects  length-prefixed object names; the object id is the ordinal
//! zonemap  least and greatest start and CRC-32 of every 512 rows (see [`zones`])
//! ```
//!
//! The cluster numbers and each cluster's committed file lengths and
//! checksums are held in memory and written with every mark (see
//! [`crate::index::mark`]); a read checks what it reads against them
//! ([`files`]);
//! per object, its id and last details record live in the `objects`
//! keyspace, written in sorted runs: one write per object whose state a
//! batch changed (a new object, new details), one read per object a batch
//! touches unless the writer still holds its state ([`states`]). Rows
//! are scanned as a whole: an as-of question reads a few 8-byte columns
//! per version and touches details only for the answer.
//!
//! After a crash, an object's stored state may name an id or details
//! record past the lengths at the mark (a run registered after it, whose
//! entries are replayed now): such a state is not trusted, and the replay
//! allocates the same id again (ids follow first appearance in log
//! order).

mod details;
mod files;
mod names;
mod row;
mod source;
mod states;
mod zones;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use super::index_error;
use super::mark::ClusterMark;
use super::runs::{Buffered, Frozen};
use crate::StoreError;

pub use details::VersionDetails;
pub use row::VersionRow;

use files::ClusterFiles;
pub(crate) use files::ClusterMeta;
use names::Names;
pub(crate) use names::{NameCache, BUDGET as NAMES_BUDGET};
pub(crate) use source::NewVersion;
use states::StateCache;

/// The hasher of the maps a batch fills per version.
type Fold = foldhash::fast::RandomState;

/// An object state with no details record yet.
const NO_DETAILS: u64 = u64::MAX;

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

/// An object's name as the index stores it, borrowed from a
/// [`ClusterVersions`]: a scan reads every version's name and copies
/// none it does not keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef<'a> {
    /// API group ("" for core).
    pub group: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Namespace ("" when cluster-scoped).
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
}

impl ObjectRef<'_> {
    /// An owned copy.
    pub fn to_name(&self) -> ObjectName {
        ObjectName {
            group: self.group.to_string(),
            kind: self.kind.to_string(),
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
        }
    }
}

/// How much of a cluster's versions a read takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Span {
    /// Every row with its end, and the details: what a scan of
    /// intervals (`valid_to`) needs.
    All,
    /// Every row that can start at or before `at` (microseconds), found
    /// through the zone map, each row's end left open (`to` is
    /// `i64::MAX`), and the details: what [`ClusterVersions::live_at`]
    /// needs at `at` or before, since the newest candidate of each object
    /// wins whatever the ends say. At 10M events, linking each row to the
    /// next version of its object (a cache miss each) was an eighth of a
    /// fleet as-of answer, and reading the rows that start later the
    /// largest part of its reads.
    Live {
        /// Latest valid time asked about.
        at: i64,
    },
    /// Every row whose valid time starts in `[since, until)`
    /// (microseconds), found through the zone map (the zones' other rows
    /// are dropped as they are read). Their ends are not known
    /// (`to` is `i64::MAX`, since the next version of an object may lie in
    /// a zone not read) and no details are read: for a scan bounded on
    /// `valid_from` that asks for neither.
    Starting {
        /// Least start wanted.
        since: i64,
        /// Start bound, exclusive.
        until: i64,
    },
}

/// A consistent copy of one cluster's versions, read in one go.
#[derive(Debug)]
pub struct ClusterVersions {
    /// The cluster id.
    pub cluster: String,
    span: Span,
    names: Arc<Names>,
    rows: Vec<VersionRow>,
    details: Vec<u8>,
}

impl ClusterVersions {
    /// The version rows read, in insertion order: all of them, or for a
    /// [`Span::Starting`] read those of the zones it chose.
    pub fn rows(&self) -> &[VersionRow] {
        &self.rows
    }

    /// What was read.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The name of object `id` (`None`: no such object, or a stored name
    /// that is not four UTF-8 parts).
    pub fn object(&self, id: u32) -> Option<ObjectRef<'_>> {
        // Checked as UTF-8, and split, once, when the names were read.
        let [group, kind, namespace, name] = self.names.parts(id)?;
        Some(ObjectRef {
            group,
            kind,
            namespace,
            name,
        })
    }

    /// The `name` of every object of the cluster, by id (null for an id
    /// whose [`ClusterVersions::object`] is `None`), when the store keeps
    /// the cluster's names between reads (see
    /// [`crate::Store::keep_object_names`]); a scan that returns only
    /// names takes them from here with Arrow's `take`.
    pub fn name_column(&self) -> Option<&arrow_array::StringViewArray> {
        self.names.name_column()
    }

    /// Object `id`'s name as stored, `group\0kind\0namespace\0name`:
    /// byte order on it is [`ObjectName`]'s order, at one comparison
    /// (empty for an unknown id).
    pub fn name_key(&self, id: u32) -> &[u8] {
        self.names.key(id)
    }

    /// Number of objects (live or not) the cluster ever had.
    pub fn object_count(&self) -> usize {
        self.names.len()
    }

    /// Decodes the details of `row`.
    pub fn details(&self, row: &VersionRow) -> Result<VersionDetails, StoreError> {
        if let Span::Starting { .. } = self.span {
            return Err(StoreError::Corrupt(format!(
                "the details of cluster {} were not read ({:?})",
                self.cluster, self.span
            )));
        }
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
    /// A row is a candidate when it was known (`index < known_below`) and
    /// started at or before `at`; the newest candidate of each object wins.
    /// Ends only prune: a row ended at or before `at` by a known version
    /// loses to that version, itself a candidate, so where ends were read
    /// ([`Span::All`]) such rows are skipped unseen, and where they were
    /// not ([`Span::Live`]) the answer is the same.
    pub fn live_at(&self, at: i64, known_below: u64) -> Vec<&VersionRow> {
        debug_assert!(
            match self.span {
                Span::All => true,
                Span::Live { at: read } => at <= read,
                Span::Starting { .. } => false,
            },
            "live_at needs every row that can start by {at}"
        );
        // Each object's best row so far with its order beside it: the
        // comparisons stay in this small table instead of reaching back
        // into the rows (a cache miss each).
        const NONE: u32 = u32::MAX;
        let mut best = vec![(NONE, (i64::MIN, 0u64, 0u64)); self.names.len()];
        for (i, r) in self.rows.iter().enumerate() {
            if r.index >= known_below || r.from > at || (r.to <= at && r.to_index < known_below) {
                continue;
            }
            let Some(slot) = best.get_mut(r.object as usize) else {
                continue;
            };
            let order = r.order();
            if slot.0 == NONE || slot.1 < order {
                *slot = (i as u32, order);
            }
        }
        best.into_iter()
            .filter(|&(i, _)| i != NONE)
            .map(|(i, _)| &self.rows[i as usize])
            .filter(|r| !r.deleted())
            .collect()
    }
}

/// The version index: per-cluster files, the clusters' lengths, and the
/// object states.
pub(crate) struct VersionIndex {
    path: PathBuf,
    dir: PathBuf,
    objects: Buffered,
    writer: Mutex<Writer>,
    catalog: RwLock<Catalog>,
    /// Readers share it while they copy a cluster; [`VersionIndex::clear`]
    /// takes it alone, so no reader sees files vanish under it.
    readers: RwLock<()>,
}

/// The files the writer has open, and the object states it wrote
/// lately (both dropped together, see [`states`]).
#[derive(Default)]
struct Writer {
    open: HashMap<u32, ClusterFiles>,
    states: StateCache,
}

/// Which clusters have files, and how long those are.
#[derive(Default)]
struct Catalog {
    /// Cluster id → number (numbers count up from 0 in order of first use).
    numbers: BTreeMap<String, u32>,
    /// Committed lengths, by number.
    committed: HashMap<u32, ClusterMeta>,
    /// Lengths synced to disk, by number.
    synced: HashMap<u32, ClusterMeta>,
}

impl VersionIndex {
    pub(crate) fn new(path: &Path, dir: PathBuf, objects: Buffered) -> Self {
        VersionIndex {
            path: path.to_path_buf(),
            dir,
            objects,
            writer: Mutex::new(Writer::default()),
            catalog: RwLock::new(Catalog::default()),
            readers: RwLock::new(()),
        }
    }

    /// Takes the clusters and lengths a mark recorded (at open).
    pub(crate) fn load(&self, clusters: &[ClusterMark]) {
        let mut c = self.catalog_mut();
        *c = Catalog::default();
        for m in clusters {
            c.numbers.insert(m.id.clone(), m.no);
            c.committed.insert(m.no, m.lengths);
            c.synced.insert(m.no, m.lengths);
        }
        *self.lock() = Writer::default();
    }

    /// Empties the index: its keyspace and files.
    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        let _alone = self.readers.write().unwrap_or_else(|p| p.into_inner());
        *self.lock() = Writer::default();
        *self.catalog_mut() = Catalog::default();
        self.objects.clear().map_err(|e| self.error(e))?;
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        }
        Ok(())
    }

    /// Drops the open files (after a batch that did not complete: they
    /// are reopened, cut to the committed lengths). Their unsynced bytes
    /// below those lengths are synced first, so no later mark can pass
    /// them.
    pub(crate) fn forget_open_files(&self) {
        let mut w = self.lock();
        for files in w.open.values_mut() {
            let _ = files.sync();
        }
        *w = Writer::default();
    }

    /// Adds `versions` (each with its log index): the rows, details and
    /// names go to the files, then the new lengths and object states are
    /// taken, all or none.
    pub(crate) fn add(&self, versions: Vec<(u64, &NewVersion)>) -> Result<(), StoreError> {
        if versions.is_empty() {
            return Ok(());
        }
        let mut guard = self.lock();
        let w = &mut *guard;
        // The batch's clusters, looked up once each; those new here are
        // numbered from the catalog's count on and taken with the lengths.
        // Hashed with foldhash, not std's SipHash: every version looks up
        // its cluster here and its object below.
        let mut numbers: HashMap<String, u32, Fold> = HashMap::default();
        let mut new_clusters: Vec<(String, u32)> = Vec::new();
        // Object states change many times in a batch: they are kept here
        // (with whether they differ from the stored state) and written
        // once, and only if they changed. An object's id never changes and
        // its details seldom do, so most versions leave the stored state
        // as it was: writing it again anyway made the keyspace's runs
        // (and their compaction) several times larger. The key's digest
        // (the writer's cache is keyed by it) is kept beside, computed once.
        let mut changed: HashMap<Vec<u8>, (ObjectState, bool, states::Digest), Fold> =
            HashMap::default();
        let mut touched = Vec::new();
        for (index, v) in versions {
            let no = match numbers.get(&v.cluster) {
                Some(no) => *no,
                None => {
                    let c = self.catalog();
                    let no = match c.numbers.get(&v.cluster) {
                        Some(no) => *no,
                        None => {
                            let no = (c.numbers.len() + new_clusters.len()) as u32;
                            new_clusters.push((v.cluster.clone(), no));
                            no
                        }
                    };
                    numbers.insert(v.cluster.clone(), no);
                    no
                }
            };
            let files = match w.open.entry(no) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let meta = self
                        .catalog()
                        .committed
                        .get(&no)
                        .copied()
                        .unwrap_or_default();
                    slot.insert(ClusterFiles::open(&self.cluster_dir(no), meta)?)
                }
            };
            let (state, dirty, _) = match changed.entry(object_key(no, &v.name)) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let digest = states::digest(slot.key());
                    let stored = match w.states.get(&digest) {
                        Some(held) => Some(held),
                        None => self
                            .objects
                            .get(slot.key())
                            .map_err(|e| self.error(e))?
                            .map(|b| ObjectState::decode(&b))
                            .transpose()?
                            .and_then(|s| s.trusted(&files.committed())),
                    };
                    let state = match stored {
                        Some(s) => (s, false, digest),
                        None => (
                            ObjectState {
                                id: files.add_object(&v.name)?,
                                details: NO_DETAILS,
                                details_hash: [0; 16],
                            },
                            true,
                            digest,
                        ),
                    };
                    slot.insert(state)
                }
            };
            let (encoded, hash) = encode_details(v);
            if state.details == NO_DETAILS || !states::same_details(&state.details_hash, &hash) {
                state.details = files.add_details(&encoded);
                state.details_hash = hash;
                *dirty = true;
            }
            files.add_row(&VersionRow {
                object: state.id,
                flags: if v.deleted { row::DELETED } else { 0 }
                    | if v.rv_decimal { row::RV_DECIMAL } else { 0 },
                from: v.time,
                to: i64::MAX,
                to_index: u64::MAX,
                index,
                rv: v.rv,
                details: state.details,
            });
            if !touched.contains(&no) {
                touched.push(no);
            }
        }
        let mut lengths = Vec::with_capacity(touched.len());
        for no in touched {
            if let Some(files) = w.open.get_mut(&no) {
                lengths.push((no, files.write()?));
            }
        }
        {
            let mut c = self.catalog_mut();
            c.numbers.extend(new_clusters);
            c.committed.extend(lengths);
        }
        for (key, (state, dirty, digest)) in changed {
            w.states.put(&digest, &state);
            if dirty {
                self.objects.insert(&key, &state.encode());
            }
        }
        Ok(())
    }

    /// Syncs every cluster's files written since their last sync; returns
    /// every cluster with the lengths now on disk, for the mark.
    pub(crate) fn sync(&self) -> Result<Vec<ClusterMark>, StoreError> {
        let mut w = self.lock();
        let unsynced: Vec<(u32, ClusterMeta)> = {
            let c = self.catalog();
            c.committed
                .iter()
                .filter(|(no, meta)| c.synced.get(no) != Some(meta))
                .map(|(no, meta)| (*no, *meta))
                .collect()
        };
        let wanted: HashSet<u32> = unsynced.iter().map(|(no, _)| *no).collect();
        let mut jobs: Vec<SyncJob<'_>> = unsynced
            .iter()
            .filter(|(no, _)| !w.open.contains_key(no))
            .map(|(no, _)| SyncJob::Closed(self.cluster_dir(*no)))
            .collect();
        jobs.extend(
            w.open
                .iter_mut()
                .filter(|(no, _)| wanted.contains(no))
                .map(|(_, files)| SyncJob::Open(files)),
        );
        sync_in_parallel(&mut jobs)?;
        self.catalog_mut().synced.extend(unsynced);
        Ok(self.snapshot())
    }

    /// Freezes the object states not yet in a run, for one.
    pub(crate) fn freeze_states(&self) -> Frozen {
        self.objects.freeze()
    }

    /// Bytes of object states not yet in a run.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.objects.pending_bytes()
    }

    /// Damage an open can find cheaply, if any (the reason): a file
    /// shorter than its committed length, a zone record that fails its
    /// checksum, or rows past the last complete zone that do not match
    /// theirs. What this reads is bounded per cluster (the zone map, 24
    /// bytes per 512 rows, and fewer than 512 rows); the rows of complete
    /// zones, the details and the object names are checked by the reads
    /// that use them.
    pub(crate) fn damaged(&self) -> Result<Option<String>, StoreError> {
        for (_, dir, meta) in self.committed_all() {
            if let Some(reason) = files::short_file(&dir, &meta) {
                return Ok(Some(reason));
            }
            let Some(sums) = meta.sums else {
                continue; // checksummed by this open, from the files
            };
            let checked = zones::read(&dir, meta.rows / zones::ROWS)
                .and_then(|_| zones::filling(&dir, meta.rows, sums.tail));
            match checked {
                Ok(_) => {}
                Err(StoreError::IndexDamaged { path, reason }) => {
                    return Ok(Some(format!("{reason} in {}", path.display())));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Cluster ids that have versions, sorted.
    pub(crate) fn clusters(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.catalog().numbers.keys().cloned().collect())
    }

    /// The clusters whose zone map lacks complete zones, and how many
    /// zones they lack (a ledger written before zones, or a crash between
    /// a batch's rows and its zones); clusters without checksums are
    /// [`Self::unsummed`]'s.
    pub(crate) fn zones_missing(&self) -> Result<(u64, u64), StoreError> {
        let (mut clusters, mut zones) = (0, 0);
        for (_, dir, meta) in self.committed_dirs() {
            if meta.sums.is_some() {
                let lacking = zones::missing(&dir, meta.rows)?;
                clusters += u64::from(lacking > 0);
                zones += lacking;
            }
        }
        Ok((clusters, zones))
    }

    /// How many clusters' files have no checksums (a mark written before
    /// them).
    pub(crate) fn unsummed(&self) -> u64 {
        self.catalog()
            .committed
            .values()
            .filter(|m| m.sums.is_none())
            .count() as u64
    }

    /// Completes every cluster's zone map (see [`Self::zones_missing`]),
    /// and computes the checksums of files that have none; returns
    /// whether it computed any (the next mark records them).
    pub(crate) fn complete_zones(&self) -> Result<bool, StoreError> {
        let mut summed = Vec::new();
        for (no, dir, meta) in self.committed_dirs() {
            match &meta.sums {
                Some(sums) => {
                    zones::complete(&dir, meta.rows, sums)?;
                }
                None => summed.push((no, files::with_sums(&dir, &meta)?)),
            }
        }
        let any = !summed.is_empty();
        self.catalog_mut().committed.extend(summed);
        Ok(any)
    }

    /// Each cluster's directory that exists, with its number and
    /// committed lengths.
    fn committed_dirs(&self) -> Vec<(u32, PathBuf, ClusterMeta)> {
        let mut all = self.committed_all();
        all.retain(|(_, dir, _)| dir.exists());
        all
    }

    /// Each cluster's directory, whether it exists or not (a missing one
    /// lost committed bytes), with its number and committed lengths.
    fn committed_all(&self) -> Vec<(u32, PathBuf, ClusterMeta)> {
        let committed: Vec<(u32, ClusterMeta)> = self
            .catalog()
            .committed
            .iter()
            .map(|(no, meta)| (*no, *meta))
            .collect();
        committed
            .into_iter()
            .map(|(no, meta)| (no, self.cluster_dir(no), meta))
            .collect()
    }

    /// A copy of one cluster's versions, as much as `span` asks for
    /// (`None`: the cluster has none).
    pub(crate) fn cluster(
        &self,
        cluster: &str,
        span: Span,
        names: &NameCache,
    ) -> Result<Option<ClusterVersions>, StoreError> {
        let _shared = self.readers.read().unwrap_or_else(|p| p.into_inner());
        let found = {
            let c = self.catalog();
            c.numbers
                .get(cluster)
                .and_then(|no| c.committed.get(no).map(|m| (*no, *m)))
        };
        let Some((no, meta)) = found else {
            return Ok(None);
        };
        read_cluster(&self.cluster_dir(no), cluster, &meta, span, names).map(Some)
    }

    /// Every cluster with its number and committed lengths (what a view
    /// of the ledger, or a mark, needs to read the files).
    pub(crate) fn snapshot(&self) -> Vec<ClusterMark> {
        let c = self.catalog();
        c.numbers
            .iter()
            .map(|(id, no)| ClusterMark {
                id: id.clone(),
                no: *no,
                lengths: c.committed.get(no).copied().unwrap_or_default(),
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|p| p.into_inner())
    }

    fn catalog_mut(&self) -> std::sync::RwLockWriteGuard<'_, Catalog> {
        self.catalog.write().unwrap_or_else(|p| p.into_inner())
    }

    fn cluster_dir(&self, no: u32) -> PathBuf {
        self.dir.join(no.to_string())
    }

    fn error(&self, e: fjall::Error) -> StoreError {
        index_error(&self.path, e)
    }
}

/// What the index keeps per object: its id and the last details written
/// for it (successive versions mostly say the same, the resourceVersion
/// living in the row, so they share one record).
struct ObjectState {
    id: u32,
    details: u64,
    details_hash: [u8; 16],
}

impl ObjectState {
    const WIDTH: usize = 28;

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::WIDTH);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.details.to_be_bytes());
        out.extend_from_slice(&self.details_hash);
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
        })
    }

    /// The state as far as files of `committed` lengths bear it out: an id
    /// past them is no id (the object's first version is being replayed),
    /// and a details record past them must be written again.
    fn trusted(mut self, committed: &ClusterMeta) -> Option<ObjectState> {
        if self.id >= committed.objects {
            return None;
        }
        if self.details != NO_DETAILS && self.details >= committed.details_bytes {
            self.details = NO_DETAILS;
        }
        Some(self)
    }
}

/// Reads one cluster's files up to the lengths of `meta`, as much as
/// `span` asks for, its object names through `names`.
pub(crate) fn read_cluster(
    dir: &Path,
    cluster: &str,
    meta: &ClusterMeta,
    span: Span,
    names: &NameCache,
) -> Result<ClusterVersions, StoreError> {
    let files::Contents { rows, details } = files::read(dir, meta, span)?;
    Ok(ClusterVersions {
        cluster: cluster.to_string(),
        span,
        names: names.names(dir, meta)?,
        rows,
        details,
    })
}

fn encode_details(v: &NewVersion) -> (Vec<u8>, [u8; 16]) {
    let mut encoded = Vec::with_capacity(details::encoded_len(&v.details));
    details::encode(&v.details, &mut encoded);
    let mut hash = [0u8; 16];
    hash.copy_from_slice(&blake3::hash(&encoded).as_bytes()[..16]);
    (encoded, hash)
}

fn object_key(no: u32, name: &ObjectName) -> Vec<u8> {
    let mut k = no.to_be_bytes().to_vec();
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

/// Threads that sync cluster files at once.
const SYNC_THREADS: usize = 16;

/// One cluster's files to sync: open ones, or a folder not open now.
enum SyncJob<'a> {
    Open(&'a mut ClusterFiles),
    Closed(PathBuf),
}

/// Syncs the clusters' files, up to [`SYNC_THREADS`] clusters at a time.
///
/// Why: a mark syncs four files for every cluster written since the last
/// one, and a fleet writes to every cluster every second. One after
/// another, those `fdatasync`s (400 for 100 clusters) were four fifths
/// of the commit thread's sleeps, which were 37% of its time (`perf
/// sched` at 2M events of a 4M ingest); issued together, the file system
/// can commit them in a few journal transactions.
fn sync_in_parallel(jobs: &mut [SyncJob<'_>]) -> Result<(), StoreError> {
    let run = |share: &mut [SyncJob<'_>]| -> Result<(), StoreError> {
        for job in share {
            match job {
                SyncJob::Open(files) => {
                    files.sync()?;
                }
                SyncJob::Closed(dir) => files::sync_paths(dir)?,
            }
        }
        Ok(())
    };
    if jobs.len() <= 1 {
        return run(jobs);
    }
    let per_thread = jobs.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks_mut(per_thread)
            .map(|share| scope.spawn(move || run(share)))
            .collect();
        // Every thread is joined before the first error is returned.
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        results.into_iter().try_for_each(|r| {
            r.unwrap_or_else(|_| Err(StoreError::Corrupt("a version file sync panicked".into())))
        })
    })
}
