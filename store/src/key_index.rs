//! The key indexes: envelope id → log index (the idempotency check), and
//! each cluster's and each event type's entries in valid-time order.
//!
//! Every event adds one key to each, at random places in the id order. A
//! B-tree (sled, which held them first) rewrites a page per key on every
//! group commit, and that copy-on-write dominated ingest; an LSM tree
//! (fjall) writes sorted runs sequentially and answers the common
//! question, "is this id new?", from bloom filters. They live in
//! `DATA/index/`, one fjall database with a keyspace per index and one for
//! the watermark.
//!
//! They are caches of the leaves, with one invariant: **the indexes hold
//! the keys of exactly the entries below their watermark, and the watermark
//! is stored with the root of the log at that size.** Each commit adds its
//! keys and the new watermark in one atomic fjall batch, after the commit's
//! flush and without a sync of its own: the leaf files are the write-ahead
//! log. After a crash (or a power loss that takes the unsynced tail), the
//! store replays the leaves past the recovered watermark. An index that
//! does not open, whose watermark passes the log, or whose recorded root is
//! not the log's root at that size (another ledger's index, or one left
//! over from a restore), is never trusted: it is emptied and rebuilt from
//! the leaves.

use std::path::{Path, PathBuf};

use annal_schemas::Timestamp;
use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use crate::derived::{Facts, ScanKey};
use crate::merkle::Hash;
use crate::StoreError;

/// Key of the watermark in the `meta` keyspace: `u64be size ‖ root`.
const WATERMARK: &[u8] = b"watermark";
/// Key of the layout version in `meta`; an index of another version is
/// rebuilt.
const FORMAT: &[u8] = b"format";
const FORMAT_VERSION: &[u8] = b"1";

/// Memtable bound per keyspace: what a keyspace buffers before it writes a
/// sorted run, and so what an open replays from fjall's journal at most.
const MEMTABLE_BYTES: u64 = 8 << 20;
/// Block cache shared by the keyspaces.
const CACHE_BYTES: u64 = 16 << 20;

/// The open key indexes.
pub(crate) struct KeyIndex {
    path: PathBuf,
    db: Database,
    ids: Keyspace,
    cluster_time: Keyspace,
    type_time: Keyspace,
    meta: Keyspace,
}

/// How the key indexes opened.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// As left, with their watermark.
    Existing,
    /// Created empty: none was there.
    Created,
    /// The old ones could not be used (the reason) and were replaced by
    /// empty ones.
    Replaced(String),
}

impl KeyIndex {
    /// Opens the indexes at `path`, creating them when absent; indexes
    /// that fail to open are removed and created empty.
    pub(crate) fn open(path: &Path) -> Result<(KeyIndex, Opened), StoreError> {
        let existed = path.join(FORMAT_MARKER).exists();
        // Opened and its layout read, or not usable at all.
        let opened = KeyIndex::open_at(path).and_then(|index| {
            let format = index.format()?;
            Ok((index, format))
        });
        match opened {
            Ok((index, format)) => match format {
                Some(v) if v == FORMAT_VERSION => Ok((index, Opened::Existing)),
                Some(other) => {
                    let reason = format!(
                        "index layout {:?}, this annal writes {:?}",
                        String::from_utf8_lossy(&other),
                        String::from_utf8_lossy(FORMAT_VERSION)
                    );
                    index.clear()?;
                    Ok((index, Opened::Replaced(reason)))
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
                let index = KeyIndex::open_at(path)?;
                index.clear()?;
                Ok((index, Opened::Replaced(reason)))
            }
        }
    }

    /// Opens fjall at `path`. Its recovery asserts on some malformed
    /// journal entries (a debug assertion), and a cache that cannot be
    /// read must be rebuilt, never bring the store down: a panic while
    /// opening counts as an index that did not open.
    fn open_at(path: &Path) -> Result<KeyIndex, StoreError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| KeyIndex::recover_at(path)))
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

    fn recover_at(path: &Path) -> Result<KeyIndex, StoreError> {
        let db = Database::builder(path)
            .cache_size(CACHE_BYTES)
            // Two cores: one worker flushes and compacts in the background.
            .worker_threads(1)
            .max_journaling_size(64 << 20)
            .open()
            .map_err(|e| index_error(path, e))?;
        let options = || KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES);
        let keyspace = |name: &str| db.keyspace(name, options).map_err(|e| index_error(path, e));
        let (ids, cluster_time, type_time, meta) = (
            keyspace("ids")?,
            keyspace("cluster_time")?,
            keyspace("type_time")?,
            keyspace("meta")?,
        );
        let marker = path.join(FORMAT_MARKER);
        if !marker.exists() {
            std::fs::write(&marker, b"annal key indexes\n")
                .map_err(|e| StoreError::io(&marker, e))?;
        }
        Ok(KeyIndex {
            path: path.to_path_buf(),
            db,
            ids,
            cluster_time,
            type_time,
            meta,
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
                "{}: the key index watermark has {} bytes, not 40",
                self.path.display(),
                v.len()
            ))),
        }
    }

    /// The log index of the entry with envelope id `id`.
    pub(crate) fn id(&self, id: &str) -> Result<Option<u64>, StoreError> {
        let Some(v) = self.ids.get(id.as_bytes()).map_err(|e| self.error(e))? else {
            return Ok(None);
        };
        <[u8; 8]>::try_from(&v[..])
            .map(|b| Some(u64::from_be_bytes(b)))
            .map_err(|_| {
                StoreError::Corrupt(format!(
                    "{}: the id index holds a {}-byte value for {id:?}",
                    self.path.display(),
                    v.len()
                ))
            })
    }

    /// Adds the entries at `first..` (their ids and facts) and moves the
    /// watermark to the end of them, where the log's root is `root`: one
    /// atomic batch.
    pub(crate) fn apply<'a>(
        &self,
        first: u64,
        entries: impl IntoIterator<Item = (&'a str, &'a Facts)>,
        root: Hash,
    ) -> Result<u64, StoreError> {
        let mut batch = self.db.batch();
        let mut upto = first;
        for (id, facts) in entries {
            let index = upto;
            batch.insert(&self.ids, id.as_bytes(), index.to_be_bytes());
            let cluster = facts.cluster.as_deref().unwrap_or("");
            batch.insert(&self.cluster_time, time_key(cluster, facts.time, index), []);
            batch.insert(
                &self.type_time,
                time_key(facts.event_type.as_str(), facts.time, index),
                [],
            );
            upto += 1;
        }
        let mut mark = Vec::with_capacity(40);
        mark.extend_from_slice(&upto.to_be_bytes());
        mark.extend_from_slice(&root);
        batch.insert(&self.meta, WATERMARK, mark);
        batch.insert(&self.meta, FORMAT, FORMAT_VERSION);
        batch.commit().map_err(|e| self.error(e))?;
        Ok(upto)
    }

    /// Empties every index (the watermark goes too).
    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        for ks in [&self.ids, &self.cluster_time, &self.type_time, &self.meta] {
            ks.clear().map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    /// Writes the indexes' journal to disk: not needed for correctness
    /// (the leaves are the log), only so that the next open replays less.
    pub(crate) fn persist(&self) -> Result<(), StoreError> {
        self.db
            .persist(fjall::PersistMode::SyncData)
            .map_err(|e| self.error(e))
    }

    /// Log indexes of entries under `key` with valid time in `[from, to)`,
    /// in (valid time, index) order.
    pub(crate) fn scan(
        &self,
        key: ScanKey<'_>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<u64, StoreError>> + 'static {
        let (keyspace, prefix) = match key {
            ScanKey::Cluster(c) => (self.cluster_time.clone(), c),
            ScanKey::Type(t) => (self.type_time.clone(), t),
        };
        let mut start = prefix.as_bytes().to_vec();
        start.push(0);
        let mut end = start.clone();
        start.extend_from_slice(&sortable_micros(from.map_or(i64::MIN, |t| t.unix_micros())));
        match to {
            Some(t) => end.extend_from_slice(&sortable_micros(t.unix_micros())),
            // Everything under the prefix: bump the 0x00 separator.
            None => {
                if let Some(last) = end.last_mut() {
                    *last = 1;
                }
            }
        }
        let path = self.path.clone();
        keyspace.range(start..end).map(move |guard| {
            let key = guard.key().map_err(|e| index_error(&path, e))?;
            key.len()
                .checked_sub(8)
                .and_then(|at| <[u8; 8]>::try_from(&key[at..]).ok())
                .map(u64::from_be_bytes)
                .ok_or_else(|| StoreError::Corrupt("short time index key".into()))
        })
    }

    /// Removes `id` from the id index (tests: a damaged index).
    #[cfg(test)]
    pub(crate) fn forget_id(&self, id: &str) -> Result<(), StoreError> {
        self.ids.remove(id.as_bytes()).map_err(|e| self.error(e))
    }

    /// Maps `id` to `index` (tests: a damaged index).
    #[cfg(test)]
    pub(crate) fn remap_id(&self, id: &str, index: u64) -> Result<(), StoreError> {
        self.ids
            .insert(id.as_bytes(), index.to_be_bytes())
            .map_err(|e| self.error(e))
    }

    fn error(&self, e: fjall::Error) -> StoreError {
        index_error(&self.path, e)
    }
}

/// A file left beside fjall's own, so that a directory fjall no longer
/// recognises is known to have held annal's indexes.
const FORMAT_MARKER: &str = "ANNAL-KEY-INDEX";

fn index_error(path: &Path, e: fjall::Error) -> StoreError {
    StoreError::Index {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// `prefix ‖ 0x00 ‖ sortable micros ‖ index`.
fn time_key(prefix: &str, time: Timestamp, index: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 17);
    k.extend_from_slice(prefix.as_bytes());
    k.push(0);
    k.extend_from_slice(&sortable_micros(time.unix_micros()));
    k.extend_from_slice(&index.to_be_bytes());
    k
}

fn sortable_micros(micros: i64) -> [u8; 8] {
    ((micros as u64) ^ (1 << 63)).to_be_bytes()
}
