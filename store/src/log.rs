//! The append-only log: group commit, idempotency, checkpoints, open-time check.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use annal_schemas::{Envelope, Timestamp};

use crate::checkpoint::{Checkpoint, NoteSigner, NoteVerifier};
use crate::derived::{Derived, ScanKey};
use crate::layout::{self, DataDir};
use crate::merkle::{self, Frontier, Hash, NodeId};
use crate::quarantine::Quarantine;
use crate::{Entry, StoreError};

/// Default log origin (C2SP checkpoint origin and key name).
pub const DEFAULT_ORIGIN: &str = "annal.local/ledger";

/// sled's page cache. Its default is 1 GiB; the ledger streams, so a small
/// cache keeps resident memory flat however large the log grows.
const CACHE_BYTES: u64 = 64 << 20;

/// An open ledger.
pub struct Store {
    dir: DataDir,
    db: sled::Db,
    log: sled::Tree,
    quarantine: sled::Tree,
    derived: Derived,
    verifier: Option<NoteVerifier>,
    writer: Mutex<Writer>,
}

/// Mutable state behind the single-writer lock.
struct Writer {
    frontier: Frontier,
    recorded_at: Option<Timestamp>,
    checkpoint: Option<String>,
    signer: Option<NoteSigner>,
    /// Set when the open-time check failed: the reason writes are refused.
    refused: Option<String>,
}

/// What one committed batch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppendOutcome {
    /// Events stored as new leaves.
    pub appended: u64,
    /// Events whose id was already stored (or repeated within the batch).
    pub duplicates: u64,
    /// Log size after the batch.
    pub size: u64,
}

/// What `init` created.
#[derive(Clone, Debug)]
pub struct InitReport {
    /// Log origin / key name.
    pub origin: String,
    /// Public key text for auditors.
    pub verifier_key: String,
}

/// A summary of the store.
#[derive(Clone, Debug)]
pub struct Status {
    /// Number of leaves.
    pub size: u64,
    /// Current root.
    pub root: Hash,
    /// Latest system time.
    pub recorded_at: Option<Timestamp>,
    /// Latest signed checkpoint.
    pub checkpoint: Option<String>,
    /// Rejected records waiting in quarantine.
    pub quarantined: usize,
    /// Why writes are refused, if they are.
    pub writes_refused: Option<String>,
}

impl Store {
    /// Creates a ledger in `dir`: the database and an Ed25519 checkpoint key
    /// (private key file mode 0600).
    pub fn init(dir: impl AsRef<Path>, origin: &str) -> Result<InitReport, StoreError> {
        let dir = DataDir::new(dir.as_ref());
        if dir.signing_key().exists() || dir.db().exists() {
            return Err(StoreError::AlreadyInitialized {
                path: dir.root().to_path_buf(),
            });
        }
        let signer = NoteSigner::generate(origin).map_err(|e| StoreError::Key {
            path: dir.signing_key(),
            reason: e.to_string(),
        })?;
        let keys = dir.keys();
        fs::create_dir_all(&keys).map_err(|e| StoreError::io(&keys, e))?;
        restrict_dir(&keys)?;
        write_private(&dir.signing_key(), signer.to_text().as_bytes())?;
        let vkey = signer.verifier().to_text();
        fs::write(dir.verifier_key(), format!("{vkey}\n")).map_err(|e| StoreError::io(dir.verifier_key(), e))?;
        let store = Store::open_dir(dir)?;
        store.db.flush()?;
        Ok(InitReport {
            origin: signer.name().to_string(),
            verifier_key: vkey,
        })
    }

    /// Opens an existing ledger and checks that the recovered tree extends
    /// the last signed checkpoint. If it does not, the store still opens (so
    /// it can be inspected and verified) but refuses every write, saying why.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store, StoreError> {
        let dir = DataDir::new(dir.as_ref());
        if !dir.db().exists() {
            return Err(StoreError::NotInitialized {
                path: dir.root().to_path_buf(),
            });
        }
        Store::open_dir(dir)
    }

    fn open_dir(dir: DataDir) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir.db())
            .cache_capacity(CACHE_BYTES)
            .open()?;
        let log = db.open_tree(layout::LOG_TREE)?;
        let quarantine = db.open_tree(layout::QUARANTINE_TREE)?;
        let derived = Derived::open(&db)?;
        let signer = read_signer(&dir)?;
        let verifier = match &signer {
            Some(s) => Some(s.verifier()),
            None => read_verifier(&dir)?,
        };
        let store = Store {
            writer: Mutex::new(Writer {
                frontier: Frontier::new(),
                recorded_at: None,
                checkpoint: None,
                signer,
                refused: None,
            }),
            dir,
            db,
            log,
            quarantine,
            derived,
            verifier,
        };
        store.recover()?;
        store.catch_up_derived()?;
        Ok(store)
    }

    /// The data directory.
    pub fn data_dir(&self) -> &DataDir {
        &self.dir
    }

    /// The checkpoint verifier key, if the ledger has one.
    pub fn verifier(&self) -> Option<&NoteVerifier> {
        self.verifier.as_ref()
    }

    /// Appends a batch as one group commit.
    ///
    /// Events whose id is already stored, or repeated earlier in the batch,
    /// are counted as duplicates and append nothing. The call returns only
    /// after the leaves, the tree nodes, the id index and the signed
    /// checkpoint are flushed to disk in one atomic sled batch: a crash leaves
    /// either all of it or none. `recorded_at` is one instant per batch and
    /// never goes backwards, even if the wall clock does.
    pub fn append(&self, events: Vec<Envelope>) -> Result<AppendOutcome, StoreError> {
        let mut w = self.lock();
        if let Some(reason) = &w.refused {
            return Err(StoreError::WritesRefused(reason.clone()));
        }
        let Some(signer) = w.signer.as_ref() else {
            return Err(StoreError::WritesRefused(format!(
                "no signing key at {}",
                self.dir.signing_key().display()
            )));
        };
        let recorded_at = next_recorded_at(w.recorded_at);
        let mut frontier = w.frontier.clone();
        let mut batch = sled::Batch::default();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut duplicates = 0u64;
        let mut fresh: Vec<&Envelope> = Vec::with_capacity(events.len());
        for event in &events {
            if !seen.insert(event.id.as_str()) || self.log.contains_key(layout::id_key(&event.id))? {
                duplicates += 1;
            } else {
                fresh.push(event);
            }
        }
        let mut entries = Vec::with_capacity(fresh.len());
        for event in fresh {
            let entry = Entry {
                index: frontier.size(),
                recorded_at,
                event: event.clone(),
            };
            let bytes = entry.to_leaf_bytes()?;
            batch.insert(layout::id_key(&event.id), &entry.index.to_be_bytes());
            frontier.push(merkle::leaf_hash(&bytes), |id, h| {
                batch.insert(&layout::node_key(id), &h[..]);
            });
            batch.insert(&layout::leaf_key(entry.index), bytes);
            entries.push(entry);
        }
        let appended = entries.len() as u64;
        if appended == 0 {
            return Ok(AppendOutcome {
                appended,
                duplicates,
                size: frontier.size(),
            });
        }
        let checkpoint = signer.sign(&Checkpoint {
            origin: signer.name().to_string(),
            size: frontier.size(),
            root: frontier.root(),
        });
        batch.insert(layout::META_SIZE, &frontier.size().to_be_bytes());
        batch.insert(layout::META_RECORDED_AT, &recorded_at.unix_micros().to_be_bytes());
        // The checkpoint is signed before the flush but lands in the same
        // atomic batch as the leaves it covers, and is published (file,
        // return value) only after the flush: no signed root can outlive its
        // data.
        batch.insert(layout::META_CHECKPOINT, checkpoint.as_bytes());
        self.log.apply_batch(batch)?;
        self.db.flush()?;
        w.frontier = frontier;
        w.recorded_at = Some(recorded_at);
        publish_checkpoint(&self.dir, &checkpoint);
        w.checkpoint = Some(checkpoint);
        let size = w.frontier.size();
        drop(w);
        self.derived.apply(&entries, size)?;
        Ok(AppendOutcome {
            appended,
            duplicates,
            size,
        })
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.lock().frontier.size()
    }

    /// A summary of the store.
    pub fn status(&self) -> Status {
        let w = self.lock();
        Status {
            size: w.frontier.size(),
            root: w.frontier.root(),
            recorded_at: w.recorded_at,
            checkpoint: w.checkpoint.clone(),
            quarantined: self.quarantine.len(),
            writes_refused: w.refused.clone(),
        }
    }

    /// Why writes are refused, if they are.
    pub fn writes_refused(&self) -> Option<String> {
        self.lock().refused.clone()
    }

    /// The entry at `index`.
    pub fn entry(&self, index: u64) -> Result<Option<Entry>, StoreError> {
        self.log
            .get(layout::leaf_key(index))?
            .map(|bytes| decode_entry(index, &bytes))
            .transpose()
    }

    /// The raw leaf bytes at `index`.
    pub fn leaf_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.log.get(layout::leaf_key(index))?.map(|v| v.to_vec()))
    }

    /// Index of the entry with envelope id `id`.
    pub fn index_of(&self, id: &str) -> Result<Option<u64>, StoreError> {
        Ok(self
            .log
            .get(layout::id_key(id))?
            .and_then(|v| layout::u64_value(&v)))
    }

    /// Entries `from..to` in log order (streaming).
    pub fn entries(&self, from: u64, to: u64) -> impl Iterator<Item = Result<Entry, StoreError>> + '_ {
        self.log
            .range(layout::leaf_key(from)..layout::leaf_key(to))
            .map(|kv| {
                let (k, v) = kv?;
                let index = layout::leaf_index(&k).ok_or_else(|| StoreError::Corrupt("bad leaf key".into()))?;
                decode_entry(index, &v)
            })
    }

    /// Entries of one cluster or type with valid time in `[from, to)`, in
    /// valid-time order, read through a derived index.
    pub fn scan<'a>(
        &'a self,
        key: ScanKey<'a>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<Entry, StoreError>> + 'a {
        self.derived.scan(key, from, to).map(move |ix| {
            let ix = ix?;
            self.entry(ix)?
                .ok_or_else(|| StoreError::Corrupt(format!("derived index points at missing entry {ix}")))
        })
    }

    /// Stored Merkle node.
    pub fn node(&self, id: NodeId) -> Result<Hash, StoreError> {
        read_node(&self.log, id)
    }

    /// The quarantine area.
    pub fn quarantine(&self) -> Quarantine {
        Quarantine {
            tree: self.quarantine.clone(),
        }
    }

    /// Drops every derived index and rebuilds it by replaying the log.
    /// Returns the number of entries replayed and the trees rebuilt.
    pub fn reindex(&self) -> Result<(u64, Vec<&'static str>), StoreError> {
        let _w = self.lock();
        self.derived.clear()?;
        let replayed = self.replay_derived(0)?;
        self.db.flush()?;
        Ok((replayed, self.derived.names()))
    }

    /// Flushes everything (quarantine writes included) to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }

    pub(crate) fn log_tree(&self) -> &sled::Tree {
        &self.log
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        // A panic while holding the lock leaves no half-written state behind:
        // the batch is applied atomically or not at all.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open-time check: load the frontier, then prove the recovered tree
    /// extends the last signed checkpoint.
    fn recover(&self) -> Result<(), StoreError> {
        let mut w = self.lock();
        let size = self
            .log
            .get(layout::META_SIZE)?
            .and_then(|v| layout::u64_value(&v))
            .unwrap_or(0);
        w.recorded_at = self
            .log
            .get(layout::META_RECORDED_AT)?
            .and_then(|v| layout::u64_value(&v))
            .and_then(|m| Timestamp::from_unix_micros(m as i64));
        w.checkpoint = self
            .log
            .get(layout::META_CHECKPOINT)?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        match self.check_recovered(size, w.checkpoint.as_deref()) {
            Ok(frontier) => w.frontier = frontier,
            Err(reason) => {
                w.refused = Some(format!(
                    "{reason}; the ledger is read-only until this is resolved (run `annal verify`)"
                ));
                // Best effort, so status still shows a size.
                w.frontier = Frontier::load(size, &mut |id| read_node(&self.log, id)).unwrap_or_default();
            }
        }
        Ok(())
    }

    fn check_recovered(&self, size: u64, note: Option<&str>) -> Result<Frontier, String> {
        let last_leaf = self.log.last_leaf_index().map_err(|e| e.to_string())?;
        let expected_last = size.checked_sub(1);
        if last_leaf != expected_last {
            return Err(format!(
                "the log records {size} entries but its last leaf is {}",
                last_leaf.map_or("absent".to_string(), |i| format!("at index {i}"))
            ));
        }
        let frontier =
            Frontier::load(size, &mut |id| read_node(&self.log, id)).map_err(|e| format!("tree nodes: {e}"))?;
        if let Some(last) = expected_last {
            let bytes = self
                .log
                .get(layout::leaf_key(last))
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("leaf {last} is missing"))?;
            let stored = read_node(&self.log, NodeId { level: 0, index: last }).map_err(|e| e.to_string())?;
            if merkle::leaf_hash(&bytes) != stored {
                return Err(format!("leaf {last} does not match its stored hash"));
            }
        }
        let Some(note) = note else {
            return if size == 0 {
                Ok(frontier)
            } else {
                Err(format!("the log has {size} entries but no signed checkpoint"))
            };
        };
        let verifier = self
            .verifier
            .as_ref()
            .ok_or_else(|| "no verifier key to check the last checkpoint with".to_string())?;
        let cp = verifier
            .open(note)
            .map_err(|e| format!("the last checkpoint does not verify: {e}"))?;
        if cp.size > size {
            return Err(format!(
                "the log has {size} entries but the last signed checkpoint covers {}: entries were lost",
                cp.size
            ));
        }
        let root = merkle::root_at(cp.size, &mut |id| read_node(&self.log, id)).map_err(|e| e.to_string())?;
        if root != cp.root {
            return Err(format!(
                "the stored tree at size {} does not match the signed checkpoint root",
                cp.size
            ));
        }
        Ok(frontier)
    }

    fn catch_up_derived(&self) -> Result<(), StoreError> {
        let size = self.size();
        let mark = self.derived.watermark()?;
        if mark > size {
            self.derived.clear()?;
            self.replay_derived(0)?;
        } else if mark < size {
            self.replay_derived(mark)?;
        }
        Ok(())
    }

    fn replay_derived(&self, from: u64) -> Result<u64, StoreError> {
        const CHUNK: usize = 4096;
        let size = self.lock_free_size();
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut replayed = 0;
        for entry in self.entries(from, size) {
            chunk.push(entry?);
            if chunk.len() == CHUNK {
                let upto = chunk[CHUNK - 1].index + 1;
                self.derived.apply(&chunk, upto)?;
                replayed += CHUNK as u64;
                chunk.clear();
            }
        }
        replayed += chunk.len() as u64;
        self.derived.apply(&chunk, size)?;
        Ok(replayed)
    }

    /// The stored size, read without the writer lock (used while it is held).
    fn lock_free_size(&self) -> u64 {
        self.log
            .get(layout::META_SIZE)
            .ok()
            .flatten()
            .and_then(|v| layout::u64_value(&v))
            .unwrap_or(0)
    }
}

trait LastLeaf {
    fn last_leaf_index(&self) -> Result<Option<u64>, sled::Error>;
}

impl LastLeaf for sled::Tree {
    fn last_leaf_index(&self) -> Result<Option<u64>, sled::Error> {
        let last = self.scan_prefix([layout::LEAF_PREFIX]).next_back().transpose()?;
        Ok(last.and_then(|(k, _)| layout::leaf_index(&k)))
    }
}

fn read_node(log: &sled::Tree, id: NodeId) -> Result<Hash, StoreError> {
    log.get(layout::node_key(id))?
        .and_then(|v| <Hash>::try_from(v.as_ref()).ok())
        .ok_or_else(|| StoreError::Corrupt(format!("missing tree node level {} index {}", id.level, id.index)))
}

fn decode_entry(index: u64, bytes: &[u8]) -> Result<Entry, StoreError> {
    Entry::from_leaf_bytes(bytes).map_err(|e| StoreError::Corrupt(format!("leaf {index}: {e}")))
}

/// One instant per batch, truncated to microseconds (the stored precision),
/// and never before the previous batch's.
fn next_recorded_at(previous: Option<Timestamp>) -> Timestamp {
    let now = Timestamp::now().unix_micros();
    let micros = previous.map_or(now, |p| now.max(p.unix_micros()));
    Timestamp::from_unix_micros(micros).unwrap_or_else(Timestamp::now)
}

/// Writes the checkpoint file for auditors. Failure here loses nothing (the
/// checkpoint is durable in the log tree), so it is not an append error.
fn publish_checkpoint(dir: &DataDir, note: &str) {
    let tmp = dir.checkpoint().with_extension("tmp");
    if fs::write(&tmp, note).is_ok() {
        let _ = fs::rename(&tmp, dir.checkpoint());
    }
}

fn read_signer(dir: &DataDir) -> Result<Option<NoteSigner>, StoreError> {
    let path = dir.signing_key();
    match fs::read_to_string(&path) {
        Ok(text) => NoteSigner::from_text(&text).map(Some).map_err(|e| StoreError::Key {
            path,
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

fn read_verifier(dir: &DataDir) -> Result<Option<NoteVerifier>, StoreError> {
    let path = dir.verifier_key();
    match fs::read_to_string(&path) {
        Ok(text) => NoteVerifier::from_text(&text).map(Some).map_err(|e| StoreError::Key {
            path,
            reason: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| StoreError::io(path, e))?;
    file.write_all(bytes)
        .and_then(|_| file.write_all(b"\n"))
        .and_then(|_| file.sync_all())
        .map_err(|e| StoreError::io(path, e))
}

fn restrict_dir(path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(|e| StoreError::io(path, e))?;
    }
    Ok(())
}
