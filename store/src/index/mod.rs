//! The derived indexes, one fjall database under `DATA/index/`: the key
//! indexes ([`keys`]: ids, cluster and type time orders) and the object
//! version index's per-object state ([`versions`], whose rows live in
//! plain append-only files beside it).
//!
//! They are caches of the leaves, with one invariant: **the indexes hold
//! exactly the entries below their watermark, and the watermark is stored
//! with the root of the log at that size.** Each commit adds its keys, its
//! object states, the version files' new lengths and the new watermark in
//! one atomic fjall batch, after the commit's flush and without a sync of
//! its own: the leaf files are the write-ahead log. Version rows are
//! written to their files before that batch and only ever appended.
//!
//! What a crash can lose is therefore a tail: fjall recovers a prefix of
//! its batches, and the version files hold at least what the recovered
//! lengths say (a SIGKILL keeps everything written). A power loss can also
//! take unsynced version bytes, so about once a second the version files
//! are synced and that point (the *sync mark*) is recorded; an open that
//! finds the watermark past the sync mark (the last process did not close)
//! rewinds to the sync mark and replays the leaves from there, a second or
//! so of ingest, never the whole log. An index that does not open, whose
//! watermark passes the log, whose recorded root is not the log's root at
//! that size (another ledger's index, or one left over from a restore), or
//! whose version files are shorter than recorded, is never trusted: it is
//! emptied and rebuilt from the leaves.

mod keys;
pub mod versions;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use annal_schemas::{Envelope, EventType, Timestamp};
use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use crate::merkle::Hash;
use crate::StoreError;

pub use keys::ScanKey;
use versions::{ClusterVersions, NewVersion, VersionIndex};

/// Key of the watermark in the `meta` keyspace: `u64be size ‖ root`.
const WATERMARK: &[u8] = b"watermark";
/// Key of the sync mark in `meta`: `u64be size`, a watermark at which the
/// version files were synced.
const SYNCED: &[u8] = b"synced";
/// Key of the layout version in `meta`; an index of another version is
/// rebuilt.
const FORMAT: &[u8] = b"format";
/// 1: keys only (object versions in sled); 2: object versions too.
const FORMAT_VERSION: &[u8] = b"2";

/// Memtable bound per keyspace: what a keyspace buffers before it writes a
/// sorted run, and so what an open replays from fjall's journal at most.
const MEMTABLE_BYTES: u64 = 8 << 20;
/// fjall's journal bound (its minimum, 64 MiB): past it, memtables are
/// written out as sorted runs and the journal is started afresh.
const JOURNAL_BYTES: u64 = 64 << 20;
/// Block cache shared by the keyspaces.
const CACHE_BYTES: u64 = 16 << 20;
/// How often the version files are synced and the sync mark moved: the
/// most an open after a crash replays.
const SYNC_EVERY: Duration = Duration::from_secs(1);

/// What the indexes need from one event.
///
/// Ingest computes it on the decoding thread, next to the canonical bytes,
/// so the commit neither re-reads the batch from the log nor decodes it
/// again; a replay computes it from the stored entry.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pub(crate) cluster: Option<String>,
    pub(crate) event_type: EventType,
    pub(crate) time: Timestamp,
    version: Option<NewVersion>,
}

impl Facts {
    pub(crate) fn of(event: &Envelope) -> Facts {
        Facts {
            cluster: event.cluster.clone(),
            event_type: event.event_type,
            time: event.time,
            version: NewVersion::of(event),
        }
    }
}

/// The open indexes.
pub(crate) struct Indexes {
    path: PathBuf,
    db: Database,
    keys: keys::Keys,
    versions: VersionIndex,
    meta: Keyspace,
    /// When the version files were last synced (`None`: not yet by this
    /// process).
    last_sync: std::sync::Mutex<Option<Instant>>,
    /// [`SYNC_EVERY`], unless a test holds the sync mark back.
    sync_every: std::sync::Mutex<Duration>,
}

/// How the indexes opened.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// As left, with their watermark.
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
    pub(crate) fn open(path: &Path, versions: PathBuf) -> Result<(Indexes, Opened), StoreError> {
        let existed = path.join(FORMAT_MARKER).exists();
        // Opened and its layout read, or not usable at all.
        let opened = Indexes::open_at(path, versions.clone()).and_then(|index| {
            let format = index.format()?;
            Ok((index, format))
        });
        match opened {
            Ok((index, format)) => match format {
                Some(v) if v == FORMAT_VERSION => Ok((index, Opened::Existing)),
                Some(other) => {
                    index.clear()?;
                    let found = String::from_utf8_lossy(&other).into_owned();
                    Ok((index, Opened::Outdated(found)))
                }
                None if existed => {
                    index.clear()?;
                    Ok((index, Opened::Replaced("no layout version".into())))
                }
                None => {
                    index.clear()?;
                    Ok((index, Opened::Created))
                }
            },
            Err(e) => {
                let reason = e.to_string();
                std::fs::remove_dir_all(path).map_err(|e| StoreError::io(path, e))?;
                let index = Indexes::open_at(path, versions)?;
                index.clear()?;
                Ok((index, Opened::Replaced(reason)))
            }
        }
    }

    /// Opens fjall at `path`. Its recovery asserts on some malformed
    /// journal entries (a debug assertion), and a cache that cannot be
    /// read must be rebuilt, never bring the store down: a panic while
    /// opening counts as an index that did not open.
    fn open_at(path: &Path, versions: PathBuf) -> Result<Indexes, StoreError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Indexes::recover_at(path, versions)
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

    fn recover_at(path: &Path, versions: PathBuf) -> Result<Indexes, StoreError> {
        let db = Database::builder(path)
            .cache_size(CACHE_BYTES)
            // Two cores: one worker flushes and compacts in the background.
            .worker_threads(1)
            // What an open after a crash replays at most.
            .max_journaling_size(JOURNAL_BYTES)
            .open()
            .map_err(|e| index_error(path, e))?;
        let options = || KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES);
        let keyspace = |name: &str| db.keyspace(name, options).map_err(|e| index_error(path, e));
        let keys = keys::Keys::new(
            path,
            keyspace("ids")?,
            keyspace("cluster_time")?,
            keyspace("type_time")?,
        );
        let versions = VersionIndex::new(
            path,
            versions,
            keyspace("objects")?,
            keyspace("version_files")?,
        );
        let meta = keyspace("meta")?;
        let marker = path.join(FORMAT_MARKER);
        if !marker.exists() {
            std::fs::write(&marker, b"annal indexes\n").map_err(|e| StoreError::io(&marker, e))?;
        }
        Ok(Indexes {
            path: path.to_path_buf(),
            db,
            keys,
            versions,
            meta,
            last_sync: std::sync::Mutex::new(None),
            sync_every: std::sync::Mutex::new(SYNC_EVERY),
        })
    }

    fn format(&self) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .meta
            .get(FORMAT)
            .map_err(|e| self.error(e))?
            .map(|v| v.to_vec()))
    }

    /// The log size the indexes cover and the root the log had then
    /// (`None`: empty indexes, never written).
    pub(crate) fn watermark(&self) -> Result<Option<(u64, Hash)>, StoreError> {
        let Some(v) = self.meta.get(WATERMARK).map_err(|e| self.error(e))? else {
            return Ok(None);
        };
        let size = v
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes);
        let root = v.get(8..40).and_then(|b| <[u8; 32]>::try_from(b).ok());
        match (size, root) {
            (Some(size), Some(root)) => Ok(Some((size, root))),
            _ => Err(StoreError::Corrupt(format!(
                "{}: the index watermark has {} bytes, not 40",
                self.path.display(),
                v.len()
            ))),
        }
    }

    /// The sync mark: the watermark at which the version files were last
    /// synced (0 when never).
    pub(crate) fn synced(&self) -> Result<u64, StoreError> {
        let Some(v) = self.meta.get(SYNCED).map_err(|e| self.error(e))? else {
            return Ok(0);
        };
        <[u8; 8]>::try_from(&v[..])
            .map(u64::from_be_bytes)
            .map_err(|_| {
                StoreError::Corrupt(format!(
                    "{}: the index sync mark has {} bytes, not 8",
                    self.path.display(),
                    v.len()
                ))
            })
    }

    /// Why the version files cannot be trusted (one is shorter than the
    /// index records), if they cannot.
    pub(crate) fn damaged_files(&self) -> Result<Option<String>, StoreError> {
        self.versions.damaged()
    }

    /// Goes back to the sync mark `to` (where the log's root is `root`):
    /// the version files' lengths return to those synced there, and the
    /// watermark with them, so the leaves from `to` on are replayed. Keys
    /// replayed a second time are written again with the same values.
    pub(crate) fn rewind(&self, to: u64, root: Hash) -> Result<(), StoreError> {
        let mut batch = self.db.batch();
        self.versions.rewind(&mut batch)?;
        batch.insert(&self.meta, WATERMARK, watermark(to, &root));
        batch.commit().map_err(|e| self.error(e))?;
        Ok(())
    }

    /// The log index of the entry with envelope id `id`.
    pub(crate) fn id(&self, id: &str) -> Result<Option<u64>, StoreError> {
        self.keys.id(id)
    }

    /// Log indexes of entries under `key` with valid time in `[from, to)`,
    /// in (valid time, index) order.
    pub(crate) fn scan(
        &self,
        key: ScanKey<'_>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<u64, StoreError>> + 'static {
        self.keys.scan(key, from, to)
    }

    /// Adds the entries at `first..` (their ids and facts) and moves the
    /// watermark to the end of them, where the log's root is `root`: one
    /// atomic batch. About once a second, the version files are synced
    /// and the sync mark follows.
    pub(crate) fn apply<'a>(
        &self,
        first: u64,
        entries: impl IntoIterator<Item = (&'a str, &'a Facts)>,
        root: Hash,
    ) -> Result<u64, StoreError> {
        let mut batch = self.db.batch();
        let mut upto = first;
        let mut versions = Vec::new();
        for (id, facts) in entries {
            self.keys.add(&mut batch, upto, id, facts);
            if let Some(v) = &facts.version {
                versions.push((upto, v));
            }
            upto += 1;
        }
        let result = self.versions.add(&mut batch, versions).and_then(|()| {
            batch.insert(&self.meta, WATERMARK, watermark(upto, &root));
            batch.insert(&self.meta, FORMAT, FORMAT_VERSION);
            batch.commit().map_err(|e| self.error(e))
        });
        if let Err(e) = result {
            // The files may hold bytes the batch never recorded: they are
            // cut back to the recorded lengths when next opened.
            self.versions.forget_open_files();
            return Err(e);
        }
        let every = *self.sync_every.lock().unwrap_or_else(|p| p.into_inner());
        let due = self
            .last_sync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none_or(|t| t.elapsed() >= every);
        if due {
            self.sync(upto)?;
        }
        Ok(upto)
    }

    /// Syncs the version files and records `mark` (the current watermark)
    /// as the sync mark, durably.
    fn sync(&self, mark: u64) -> Result<(), StoreError> {
        let mut last = self.last_sync.lock().unwrap_or_else(|p| p.into_inner());
        let mut batch = self.db.batch();
        self.versions.sync(&mut batch)?;
        batch.insert(&self.meta, SYNCED, mark.to_be_bytes());
        batch.commit().map_err(|e| self.error(e))?;
        self.persist()?;
        *last = Some(Instant::now());
        Ok(())
    }

    /// Syncs at the current watermark (a clean close: the next open
    /// replays no leaves). fjall still replays its journal on the next
    /// open (up to [`JOURNAL_BYTES`]); writing the memtables out here
    /// would spare that, but fjall offers it only as a test hook
    /// (`rotate_memtable_and_wait`), which was seen to wait forever.
    pub(crate) fn close(&self) -> Result<(), StoreError> {
        if let Some((mark, _)) = self.watermark()? {
            if self.synced()? != mark {
                self.sync(mark)?;
            }
        }
        Ok(())
    }

    /// Empties every index (the watermark and the version files go too).
    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        for ks in [
            &self.keys.ids,
            &self.keys.cluster_time,
            &self.keys.type_time,
            &self.meta,
        ] {
            ks.clear().map_err(|e| self.error(e))?;
        }
        self.versions.clear()
    }

    /// Writes the indexes' journal to disk: not needed for correctness
    /// (the leaves are the log), only so that the next open replays less.
    pub(crate) fn persist(&self) -> Result<(), StoreError> {
        self.db
            .persist(fjall::PersistMode::SyncData)
            .map_err(|e| self.error(e))
    }

    /// Cluster ids with object versions, sorted.
    pub(crate) fn version_clusters(&self) -> Result<Vec<String>, StoreError> {
        self.versions.clusters()
    }

    /// Every cluster's version files (for the published view).
    pub(crate) fn version_files(
        &self,
    ) -> Result<Vec<(String, u32, versions::ClusterMeta)>, StoreError> {
        self.versions.snapshot()
    }

    /// A consistent copy of one cluster's object versions.
    pub(crate) fn cluster_versions(
        &self,
        cluster: &str,
    ) -> Result<Option<ClusterVersions>, StoreError> {
        self.versions.cluster(cluster)
    }

    /// Moves the sync mark only on close from now on (tests: the files
    /// as a crash leaves them).
    #[cfg(test)]
    pub(crate) fn hold_sync_mark(&self) {
        *self.sync_every.lock().unwrap_or_else(|p| p.into_inner()) = Duration::MAX;
    }

    /// The key indexes (tests damage them).
    #[cfg(test)]
    pub(crate) fn keys(&self) -> &keys::Keys {
        &self.keys
    }

    fn error(&self, e: fjall::Error) -> StoreError {
        index_error(&self.path, e)
    }
}

/// A file left beside fjall's own, so that a directory fjall no longer
/// recognises is known to have held annal's indexes.
const FORMAT_MARKER: &str = "ANNAL-KEY-INDEX";

fn watermark(size: u64, root: &Hash) -> Vec<u8> {
    let mut mark = Vec::with_capacity(40);
    mark.extend_from_slice(&size.to_be_bytes());
    mark.extend_from_slice(root);
    mark
}

fn index_error(path: &Path, e: fjall::Error) -> StoreError {
    StoreError::Index {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}
