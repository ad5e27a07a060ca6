//! The derived indexes under `DATA/index/`: the key indexes ([`keys`]:
//! ids, cluster and type time orders, with an [`id_filter`] in memory in
//! front of the ids) and the object version index's
//! per-object state ([`versions`], whose rows live in plain append-only
//! files beside it), in one fjall database, and the [`mark`] that says
//! what they hold.
//!
//! They are caches of the leaves, with one invariant: **everything the
//! mark names is on disk, and the mark is stored with the root of the log
//! at its size.** Commits add their keys and object states to memory
//! ([`runs`]) and their version rows to the files, without a sync: the
//! leaf files are the write-ahead log. Every two seconds ([`SYNC_EVERY`];
//! and when the pending keys pass [`PENDING_BYTES`], and on close) the
//! version files are synced and the pending keys frozen; a thread of the
//! mark's own then writes them as sorted runs, and then moves the mark to
//! the log size they cover, while commits go on ([`MarkJob`]).
//!
//! What a crash loses is therefore a tail: the next open finds the mark,
//! cuts the version files to its lengths and replays the leaves past it,
//! a few seconds of ingest, never the whole log. Keys that reached a run
//! after the mark are written again with the same values. fjall's journal
//! carries none of this, so an open does not replay it. An index that
//! does not open, whose mark passes the log, whose recorded root is not
//! the log's root at that size (another ledger's index, or one left over
//! from a restore), or whose version files are shorter than recorded, is
//! never trusted: it is emptied and rebuilt from the leaves; so are the
//! indexes when a read finds bytes that fail their checksum.

mod id_filter;
mod keys;
pub(crate) mod mark;
mod pending;
mod preflight;
mod runs;
pub mod versions;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use annal_schemas::{Envelope, EventType, Header, Timestamp};
use fjall::{Database, KeyspaceCreateOptions};

use crate::data_view::Data;
use crate::merkle::Hash;
use crate::StoreError;

pub(crate) use keys::IdDigest;
pub use keys::ScanKey;
pub(crate) use mark::ClusterMark;
use mark::Mark;
pub(crate) use mark::LAYOUT as MARK_LAYOUT;
use runs::{Buffered, Frozen, Reads};
use versions::{ClusterVersions, NewVersion, Span, VersionIndex};

/// Keyspaces only older layouts have: the mark and the clusters' file
/// lengths, which layout 3 keeps in the mark file.
const OLD_KEYSPACES: [&str; 2] = ["meta", "version_files"];
/// Key of the layout version in the old `meta` keyspace.
const OLD_FORMAT: &[u8] = b"format";

/// Pending keys past which a mark is written at once: what memory holds
/// between marks, and so what ingest's memory does not grow past.
///
/// Pending keys are held twice at a mark (the frozen ones being written
/// beside the new ones), so this bound counts double at ingest's peak. At
/// 48 MiB only the clock started marks, and a fleet's first inventory
/// (every event a new object: the object states pend too) peaked at
/// 286-305 MB over its first 1M events against 263-271 MB for 1M events
/// of the same fleet later on; at 16 MiB, 264-266 MB against 255-259,
/// at the same rate (three runs each, alternating).
const PENDING_BYTES: usize = 16 << 20;
/// fjall's journal bound (its minimum, 64 MiB). Only fjall's own records
/// (and damage the tests write) go through the journal.
const JOURNAL_BYTES: u64 = 64 << 20;
/// Block cache shared by the keyspaces. Ingest's point reads (the id
/// filter's false positives, object states the writer does not hold) fill
/// it as the ledger grows: at 6M events it held 17 MB of a 16 MiB cache at
/// ingest's peak, against under 1 MB at 1M (heaptrack), so whatever it is
/// allowed is memory the large ingest has and the small one has not. At
/// 4 MiB (with the time orders' indexes partitioned, see `runs::Reads`)
/// 10M events ran at the same rate as with 8 MiB and peaked 7-17 MB lower.
const CACHE_BYTES: u64 = 4 << 20;
/// How often a mark is written: the most an open after a crash replays.
///
/// Each mark writes one run per keyspace and syncs every cluster's
/// version files, so it also sets how small the runs are: at one second,
/// the runs' compaction took a third of ingest's CPU (see
/// `runs::L0_RUNS`). At two seconds rather than three, the same ingests
/// ran at 83k events/s at 10M and 120–129k at 1M, against 59–63k and
/// 92–103k (single runs, docs/storage-experiments.md "Storage: a mark every two seconds"):
/// the commit thread used 88 s of CPU over 10M instead of
/// 127 s, compaction about the same (13 s, 14 s). Why is not profiled;
/// the pending key maps are a third smaller. Two seconds is at most
/// about 170k events of replay after a crash.
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// What the indexes need from one event.
///
/// Ingest computes it on the decoding thread, next to the canonical bytes,
/// so the commit neither re-reads the batch from the log nor decodes it
/// again; a replay computes it from the stored entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Facts {
    pub(crate) cluster: Option<String>,
    pub(crate) event_type: EventType,
    pub(crate) time: Timestamp,
    /// The rest of the envelope's top-level fields, for the sidecar.
    pub(crate) row: crate::columns::Row,
    pub(crate) version: Option<NewVersion>,
}

impl Facts {
    pub(crate) fn of(event: &Envelope) -> Facts {
        Facts::of_parts(&event.header(), &event.data)
    }

    /// The facts of an event given as its header and its `data` (either
    /// tree: see [`crate::data_view`]).
    pub(crate) fn of_parts<D: Data>(header: &Header<'_>, data: &D) -> Facts {
        Facts {
            cluster: header.cluster.map(str::to_string),
            event_type: header.event_type,
            time: header.time,
            row: crate::columns::Row::of(header, data),
            version: NewVersion::of(header, data),
        }
    }
}

/// The open indexes.
pub(crate) struct Indexes {
    path: PathBuf,
    /// Holds the keyspaces' runs (and the directory lock).
    db: Database,
    keys: keys::Keys,
    versions: VersionIndex,
    /// What they hold: `(size, root)`, everything applied (`None`: empty).
    current: Mutex<Option<(u64, Hash)>>,
    /// The size at the last mark written (0 when never).
    marked: Arc<Mutex<u64>>,
    /// The mark being written on its own thread, if one is.
    writing: Mutex<Option<JoinHandle<Result<(), StoreError>>>>,
    /// When the last mark was written (`None`: not yet by this process).
    last_sync: Mutex<Option<Instant>>,
    /// [`SYNC_EVERY`], unless a test holds the mark back.
    sync_every: Mutex<Duration>,
}

/// Whether a process compacts the key indexes' runs while it runs.
///
/// fjall queues a compaction for every keyspace with runs in level 0 as
/// it opens, and closing waits for the one under way. After a large
/// ingest that debt is seconds of work (1.55 s, then 1.22 s, for the
/// first two `annal checkpoint`s after a 10M ingest), and a read command
/// paid it on top of its answer. Commands that mostly read leave it to
/// the next writer; the runs they write themselves (a tail replayed past
/// the mark, a quarantined entry retried) are few, and are compacted
/// then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compaction {
    /// One worker compacts in the background (two cores: the other one
    /// ingests); writers (ingest, serve, reindex) open so.
    Background,
    /// No worker: level 0 stays as it is until a process that compacts
    /// opens the ledger. Indexes that must be rebuilt are opened with a
    /// worker all the same.
    Deferred,
}

impl Compaction {
    fn workers(self) -> usize {
        match self {
            Compaction::Background => 1,
            // fjall's public setter asserts at least one worker; with
            // none, its compaction requests wait in a channel that is
            // dropped with the database (its own tests open so). Writes
            // here are bulk runs, which never wait for a worker (only
            // journaled writes stall on level 0 or on memtables).
            Compaction::Deferred => 0,
        }
    }
}

/// How the indexes opened.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// As left, with their mark.
    Existing,
    /// Created empty: none was there.
    Created,
    /// Written by an older annal in another layout (the layout found), and
    /// emptied.
    Outdated(String),
    /// The old ones could not be used (the reason) and were replaced by
    /// empty ones.
    Replaced(String),
}

impl Indexes {
    /// Opens the indexes at `path` (version files under `versions`),
    /// creating them when absent; indexes that fail to open are removed
    /// and created empty.
    pub(crate) fn open(
        path: &Path,
        versions: PathBuf,
        compaction: Compaction,
    ) -> Result<(Indexes, Opened), StoreError> {
        let existed = path.join(FORMAT_MARKER).exists();
        let mark = Mark::read(path);
        // Indexes about to be rebuilt write every key again: whoever opens
        // them then compacts, or the runs would pile up in level 0.
        let compaction = match &mark {
            Ok(Some(m)) if m.layout == mark::LAYOUT => compaction,
            _ => Compaction::Background,
        };
        let replaced = match Indexes::open_at(path, versions.clone(), compaction) {
            Ok(index) => match index.old_layout()? {
                None => {
                    let opened = index.take_mark(mark, existed)?;
                    // A writer asks the id index of every event it
                    // appends: the filter in front of it is filled from
                    // the runs meanwhile (emptied indexes start with an
                    // empty, complete one).
                    if opened == Opened::Existing && compaction == Compaction::Background {
                        index.keys.fill_id_filter();
                    }
                    return Ok((index, opened));
                }
                // Rebuilt in a fresh directory: fjall would go on
                // replaying the old layout's journal on every open.
                Some(found) => Opened::Outdated(found),
            },
            Err(e) => Opened::Replaced(e.to_string()),
        };
        std::fs::remove_dir_all(path).map_err(|e| StoreError::io(path, e))?;
        let index = Indexes::open_at(path, versions, Compaction::Background)?;
        index.clear()?;
        Ok((index, replaced))
    }

    /// Takes the mark read from disk into memory, or empties indexes that
    /// have none this annal can use.
    fn take_mark(
        &self,
        mark: Result<Option<Mark>, String>,
        existed: bool,
    ) -> Result<Opened, StoreError> {
        match mark {
            Ok(Some(mark)) if mark.layout == mark::LAYOUT => match mark.root() {
                Some(root) => {
                    self.versions.load(&mark.clusters);
                    *lock(&self.current) = Some((mark.size, root));
                    *lock(&self.marked) = mark.size;
                    Ok(Opened::Existing)
                }
                None => {
                    self.clear()?;
                    Ok(Opened::Replaced(format!(
                        "the mark's root {:?} is not a hash",
                        mark.root
                    )))
                }
            },
            Ok(Some(mark)) => {
                self.clear()?;
                Ok(Opened::Outdated(mark.layout.to_string()))
            }
            Ok(None) => {
                self.clear()?;
                Ok(if existed {
                    Opened::Replaced("no mark".into())
                } else {
                    Opened::Created
                })
            }
            Err(reason) => {
                self.clear()?;
                Ok(Opened::Replaced(reason))
            }
        }
    }

    /// The layout of indexes written by an older annal (1 or 2, which
    /// kept their mark in a `meta` keyspace), if these are.
    fn old_layout(&self) -> Result<Option<String>, StoreError> {
        if !OLD_KEYSPACES
            .iter()
            .any(|name| self.db.keyspace_exists(name))
        {
            return Ok(None);
        }
        let format = match self.db.keyspace_exists("meta") {
            true => self
                .db
                .keyspace("meta", KeyspaceCreateOptions::default)
                .and_then(|meta| meta.get(OLD_FORMAT))
                .map_err(|e| self.error(e))?,
            false => None,
        };
        Ok(Some(format.map_or_else(
            || "2".to_string(),
            |v| String::from_utf8_lossy(&v).into_owned(),
        )))
    }

    /// Opens fjall at `path`. Its recovery asserts on some malformed
    /// journal entries (a debug assertion), and a cache that cannot be
    /// read must be rebuilt, never bring the store down: a panic while
    /// opening counts as an index that did not open.
    fn open_at(
        path: &Path,
        versions: PathBuf,
        compaction: Compaction,
    ) -> Result<Indexes, StoreError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Indexes::recover_at(path, versions, compaction)
        }))
        .unwrap_or_else(|panic| {
            let reason = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "no message".into());
            Err(StoreError::Index {
                path: path.to_path_buf(),
                reason: format!("recovery failed ({reason})"),
            })
        })
    }

    fn recover_at(
        path: &Path,
        versions: PathBuf,
        compaction: Compaction,
    ) -> Result<Indexes, StoreError> {
        preflight::manifests(path).map_err(|reason| StoreError::Index {
            path: path.to_path_buf(),
            reason,
        })?;
        let db = Database::builder(path)
            .cache_size(CACHE_BYTES)
            .worker_threads_unchecked(compaction.workers())
            .max_journaling_size(JOURNAL_BYTES)
            .open()
            .map_err(|e| index_error(path, e))?;
        let keyspace = |name: &'static str, reads: Reads| {
            Buffered::open(&db, name, reads).map_err(|e| index_error(path, e))
        };
        let keys = keys::Keys::new(
            path,
            keyspace("ids", Reads::Filtered)?,
            keyspace("cluster_time", Reads::Range)?,
            keyspace("type_time", Reads::Range)?,
        );
        let versions = VersionIndex::new(path, versions, keyspace("objects", Reads::Point)?);
        let marker = path.join(FORMAT_MARKER);
        if !marker.exists() {
            std::fs::write(&marker, b"annal indexes\n").map_err(|e| StoreError::io(&marker, e))?;
        }
        Ok(Indexes {
            path: path.to_path_buf(),
            db,
            keys,
            versions,
            current: Mutex::new(None),
            marked: Arc::new(Mutex::new(0)),
            writing: Mutex::new(None),
            last_sync: Mutex::new(None),
            sync_every: Mutex::new(SYNC_EVERY),
        })
    }

    /// The log size the indexes cover and the root the log had then
    /// (`None`: empty indexes, never written).
    pub(crate) fn watermark(&self) -> Option<(u64, Hash)> {
        *lock(&self.current)
    }

    /// The size at the last mark: what an open after a crash would find
    /// (once the mark under way, if any, is written).
    #[cfg(test)]
    pub(crate) fn synced(&self) -> Result<u64, StoreError> {
        self.wait_for_mark()?;
        Ok(*lock(&self.marked))
    }

    /// Why the version files cannot be trusted, as far as an open checks
    /// them (lengths, the zone map, the rows past the last zone), if
    /// they cannot.
    pub(crate) fn damaged_files(&self) -> Result<Option<String>, StoreError> {
        self.versions.damaged()
    }

    /// The digest of every (id, index) pair in the id index.
    pub(crate) fn id_digest(&self) -> Result<IdDigest, StoreError> {
        self.keys.id_digest()
    }

    /// The log index of the entry with envelope id `id`.
    pub(crate) fn id(&self, id: &str) -> Result<Option<u64>, StoreError> {
        self.keys.id(id)
    }

    /// Every cluster with an entry, in id order.
    pub(crate) fn event_clusters(&self) -> Result<Vec<String>, StoreError> {
        self.keys.clusters()
    }

    /// (valid time in microseconds, log index) of the entries under `key`
    /// with valid time in `[from, to)`, in that order.
    pub(crate) fn scan(
        &self,
        key: ScanKey<'_>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<(i64, u64), StoreError>> + 'static {
        self.keys.scan(key, from, to)
    }

    /// Adds the entries at `first..` (their ids and facts), which now
    /// cover the log up to the end of them, where its root is `root`.
    /// Every [`SYNC_EVERY`], a mark is written.
    pub(crate) fn apply<'a>(
        &self,
        first: u64,
        entries: impl IntoIterator<Item = (&'a str, &'a Facts)>,
        root: Hash,
    ) -> Result<u64, StoreError> {
        let mut upto = first;
        let mut versions = Vec::new();
        for (id, facts) in entries {
            self.keys.add(upto, id, facts);
            if let Some(v) = &facts.version {
                versions.push((upto, v));
            }
            upto += 1;
        }
        if let Err(e) = self.versions.add(versions) {
            // The files may hold bytes past the committed lengths: they
            // are cut back when next opened.
            self.versions.forget_open_files();
            return Err(e);
        }
        *lock(&self.current) = Some((upto, root));
        let every = *lock(&self.sync_every);
        let due = lock(&self.last_sync).is_none_or(|t| t.elapsed() >= every)
            || self.keys.pending_bytes() + self.versions.pending_bytes() > PENDING_BYTES;
        if due {
            let job = self.begin_mark(upto, root)?;
            let handle = std::thread::Builder::new()
                .name("annal-mark".into())
                .spawn(move || {
                    yield_to_commits();
                    job.write()
                })
                .map_err(|e| StoreError::io(&self.path, e))?;
            *lock(&self.writing) = Some(handle);
        }
        Ok(upto)
    }

    /// Makes what the indexes hold at `size` (root `root`) durable before
    /// it returns.
    fn mark(&self, size: u64, root: Hash) -> Result<(), StoreError> {
        self.begin_mark(size, root)?.write()
    }

    /// The part of a mark at `size` (root `root`) that must happen before
    /// the next commit: the mark before it written (its error, if it
    /// failed), the version files synced at their lengths now, the pending
    /// keys frozen. The rest is the [`MarkJob`]'s.
    fn begin_mark(&self, size: u64, root: Hash) -> Result<MarkJob, StoreError> {
        self.wait_for_mark()?;
        let clusters = self.versions.sync()?;
        let [ids, cluster_time, type_time] = self.keys.freeze();
        *lock(&self.last_sync) = Some(Instant::now());
        Ok(MarkJob {
            runs: [ids, cluster_time, type_time, self.versions.freeze_states()],
            mark: Mark::new(size, &root, clusters),
            path: self.path.clone(),
            marked: Arc::clone(&self.marked),
        })
    }

    /// Waits for the mark being written on its own thread, if one is;
    /// its error if it failed (its keys stay frozen and go into the next
    /// run, and the mark stays where it was).
    fn wait_for_mark(&self) -> Result<(), StoreError> {
        let writing = lock(&self.writing).take();
        match writing.map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(StoreError::Index {
                path: self.path.clone(),
                reason: "writing the key runs panicked".into(),
            }),
        }
    }

    /// Writes a mark at what the indexes hold (a clean close: the next
    /// open replays nothing, and fjall has no journal of ours to replay).
    pub(crate) fn close(&self) -> Result<(), StoreError> {
        self.wait_for_mark()?;
        let current = *lock(&self.current);
        if let Some((size, root)) = current {
            let pending = self.keys.pending_bytes() + self.versions.pending_bytes();
            if *lock(&self.marked) != size || pending > 0 {
                self.mark(size, root)?;
            }
        }
        Ok(())
    }

    /// Empties every index (the mark and the version files go too).
    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        // A mark under way would write runs into the keyspaces replaced
        // here, and its mark over the emptied indexes: it ends first (its
        // error is moot, what it wrote goes).
        let _ = self.wait_for_mark();
        self.keys.clear()?;
        self.versions.clear()?;
        Mark::remove(&self.path)?;
        *lock(&self.current) = None;
        *lock(&self.marked) = 0;
        Ok(())
    }

    /// Cluster ids with object versions, sorted.
    pub(crate) fn version_clusters(&self) -> Result<Vec<String>, StoreError> {
        self.versions.clusters()
    }

    /// Every cluster's version files (for the published view).
    pub(crate) fn version_files(&self) -> Vec<ClusterMark> {
        self.versions.snapshot()
    }

    /// A consistent copy of one cluster's object versions, as much as
    /// `span` asks for.
    pub(crate) fn cluster_versions(
        &self,
        cluster: &str,
        span: Span,
        names: &versions::NameCache,
    ) -> Result<Option<ClusterVersions>, StoreError> {
        self.versions.cluster(cluster, span, names)
    }

    /// Clusters and zones the version files' zone maps lack (see
    /// [`VersionIndex::zones_missing`]).
    pub(crate) fn zones_missing(&self) -> Result<(u64, u64), StoreError> {
        self.versions.zones_missing()
    }

    /// Clusters whose version files have no checksums yet (see
    /// [`VersionIndex::unsummed`]).
    pub(crate) fn unsummed(&self) -> u64 {
        self.versions.unsummed()
    }

    /// Completes the version files' zone maps and checksums (see
    /// [`VersionIndex::complete_zones`]); checksums computed now are
    /// marked at once, so they are computed once.
    pub(crate) fn complete_zones(&self) -> Result<(), StoreError> {
        if self.versions.complete_zones()? {
            let current = *lock(&self.current);
            if let Some((size, root)) = current {
                self.mark(size, root)?;
            }
        }
        Ok(())
    }

    /// Moves the mark only on close from now on (tests: the indexes as a
    /// crash leaves them).
    #[cfg(test)]
    pub(crate) fn hold_sync_mark(&self) {
        *lock(&self.sync_every) = Duration::MAX;
    }

    /// Tables in level 0 across the keyspaces (tests: what compaction
    /// has left).
    #[cfg(test)]
    pub(crate) fn level0_tables(&self) -> usize {
        let _ = self.wait_for_mark();
        self.db
            .list_keyspace_names()
            .iter()
            .filter_map(|name| self.db.keyspace(name, KeyspaceCreateOptions::default).ok())
            .map(|k| k.l0_table_count())
            .sum()
    }

    /// The key indexes (tests damage them), once the mark under way is
    /// written: damage is done to keys pending or in runs, not frozen.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> &keys::Keys {
        let _ = self.wait_for_mark();
        &self.keys
    }

    fn error(&self, e: fjall::Error) -> StoreError {
        index_error(&self.path, e)
    }
}

impl Drop for Indexes {
    /// A mark under way is finished: the next open of the directory (in
    /// this process, often) must not find its runs half written or the
    /// database still held.
    fn drop(&mut self) {
        let _ = self.wait_for_mark();
    }
}

/// Nice value of the mark's writer (commits run at 0).
const MARK_NICENESS: i32 = 10;

/// Lowers the calling thread's priority to [`MARK_NICENESS`]: Linux keeps
/// a nice value per thread, and this one only moves the mark.
///
/// Why: on two cores, the mark's runs (a third of a second of CPU every
/// 3 s under HTTP load) took their core from the commit thread and the
/// request handlers, and those commits made the p99. At nice 10 the
/// runs get the CPU the commits leave. Best effort: where it fails the
/// thread runs as it is.
fn yield_to_commits() {
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), MARK_NICENESS);
}

/// The part of a mark written while commits go on: the frozen keys'
/// runs, then the mark itself, naming only what is on disk (the version
/// files were synced before the keys were frozen).
struct MarkJob {
    runs: [Frozen; 4],
    mark: Mark,
    path: PathBuf,
    marked: Arc<Mutex<u64>>,
}

impl MarkJob {
    fn write(self) -> Result<(), StoreError> {
        for run in self.runs {
            run.write().map_err(|e| index_error(&self.path, e))?;
        }
        self.mark.write(&self.path)?;
        *lock(&self.marked) = self.mark.size;
        Ok(())
    }
}

/// A file left beside fjall's own, so that a directory fjall no longer
/// recognises is known to have held annal's indexes.
const FORMAT_MARKER: &str = "ANNAL-KEY-INDEX";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fjall error as the store's: I/O and the like as they are, anything
/// that says the bytes are not what fjall wrote as damage (rebuilt).
fn index_error(path: &Path, e: fjall::Error) -> StoreError {
    let path = path.to_path_buf();
    let reason = e.to_string();
    match e {
        fjall::Error::Io(_)
        | fjall::Error::Poisoned
        | fjall::Error::Locked
        | fjall::Error::KeyspaceDeleted
        | fjall::Error::Storage(fjall::LsmError::Io(_)) => StoreError::Index { path, reason },
        _ => StoreError::IndexDamaged { path, reason },
    }
}
