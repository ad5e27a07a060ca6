//! The append-only log: group commit, idempotency, checkpoints, open-time check.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use annal_schemas::{Envelope, Timestamp};

use crate::canonical::{self, PreparedEvent};
use crate::checkpoint::{sign_note, Checkpoint, NoteSigner, NoteVerifier};
use crate::columns::{ChunkBatches, ColumnChunk, Columns};
use crate::index::versions::{ClusterVersions, Span};
use crate::index::{Compaction, Facts, Indexes, Opened, ScanKey};
use crate::keys;
use crate::layout::{self, DataDir};
use crate::leaves::{LeafPointer, SegmentWriter, Segments, DEFAULT_SEGMENT_BYTES};
use crate::merkle::{self, Frontier, Hash, NodeId};
use crate::quarantine::Quarantine;
use crate::tree::{TreeFiles, TreeWriter};
use crate::view::View;
use crate::{Entry, StoreError};

/// Default log origin (C2SP checkpoint origin and key name).
pub const DEFAULT_ORIGIN: &str = "annal.local/ledger";

/// sled's page cache. Its default is 1 GiB; the ledger streams, so a small
/// cache keeps resident memory flat however large the log grows.
const CACHE_BYTES: u64 = 8 << 20;

/// An open ledger.
pub struct Store {
    dir: DataDir,
    segments: Segments,
    tree: TreeFiles,
    segment_bytes: u64,
    /// The writer's databases, or a view beside another process's writer.
    hold: Hold,
    /// The log size `keys` covers, as last written here (`u64::MAX`: not
    /// known to match the log; checked and caught up before use).
    keys_mark: AtomicU64,
    /// The columnar sidecar (see [`crate::columns`]).
    columns: Columns,
    /// The object names of the clusters read lately (see
    /// [`crate::index::versions::NameCache`]).
    names: crate::index::versions::NameCache,
    /// Whether dropping the store closes the indexes (tests clear it to
    /// leave them as a crash would).
    close_on_drop: std::sync::atomic::AtomicBool,
    writer: Mutex<Writer>,
}

/// What this process holds of the ledger.
enum Hold {
    /// Everything, exclusively: this process may write.
    Owned(Box<Owned>),
    /// The files, read beside another process that writes (see
    /// [`crate::view`]).
    View(View),
}

/// The writer's databases.
pub(crate) struct Owned {
    pub(crate) db: sled::Db,
    log: sled::Tree,
    quarantine: sled::Tree,
    /// Ids, the cluster/type time orders and the object versions (see
    /// [`crate::index`]).
    keys: Indexes,
}

/// What opening a ledger rebuilt, for a progress line: the store is a
/// library and prints nothing itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rebuild {
    /// The indexes are being built from `entries` leaves, and why (a
    /// ledger in an older layout, a damaged or missing index).
    Indexes {
        /// Leaves to replay.
        entries: u64,
        /// Why.
        reason: String,
    },
    /// How far a long replay has come (every 256Ki entries).
    Progress {
        /// Entries replayed so far.
        replayed: u64,
        /// Entries to replay in all.
        entries: u64,
    },
    /// An older layout's sled keys and trees are being removed after the
    /// rebuild.
    OldLayoutRemoved,
    /// The zone maps over `clusters` clusters' version rows lack `zones`
    /// zones (a ledger written before zone maps), computed now from the
    /// rows, before the open returns.
    Zones {
        /// Clusters whose map is incomplete.
        clusters: u64,
        /// Zones to compute (each the bounds of 512 rows).
        zones: u64,
    },
    /// The version files of `clusters` clusters have no checksums (a
    /// ledger written before them): computed now from the files, with
    /// their zone maps, before the open returns.
    Checksums {
        /// Clusters whose files are read and checksummed.
        clusters: u64,
    },
    /// `chunks` column chunks of an older sidecar layout are being written
    /// again in the background (scans read their entries from the leaves
    /// until then).
    Columns {
        /// Chunks to write again.
        chunks: u64,
    },
}

/// Mutable state behind the single-writer lock.
pub(crate) struct Writer {
    frontier: Frontier,
    /// Created on the first append, so that opening a damaged store to
    /// inspect it never modifies its files.
    files: Option<(SegmentWriter, TreeWriter)>,
    recorded_at: Option<Timestamp>,
    checkpoint: Option<String>,
    signer: Option<NoteSigner>,
    /// After a rotation, the previous key and the end of its validity:
    /// until then it co-signs every checkpoint.
    co_signer: Option<(NoteSigner, Timestamp)>,
    /// The public keys of this ledger, current first.
    verifiers: Vec<NoteVerifier>,
    /// Set when the open-time check failed: the reason writes are refused.
    refused: Option<String>,
}

impl Writer {
    pub(crate) fn refused(&self) -> Option<String> {
        self.refused.clone()
    }

    pub(crate) fn co_signer(&self) -> Option<&(NoteSigner, Timestamp)> {
        self.co_signer.as_ref()
    }

    pub(crate) fn signer_present(&self) -> bool {
        self.signer.is_some()
    }

    pub(crate) fn take_signer(&mut self) -> Option<NoteSigner> {
        self.signer.take()
    }

    /// Installs the signing key (and the previous one with its validity
    /// end), and the public keys that follow from them.
    pub(crate) fn set_signer(
        &mut self,
        signer: NoteSigner,
        co_signer: Option<(NoteSigner, Timestamp)>,
    ) {
        if co_signer.is_some() {
            self.co_signer = co_signer;
        }
        self.verifiers = std::iter::once(signer.verifier())
            .chain(self.co_signer.as_ref().map(|(s, _)| s.verifier()))
            .collect();
        self.signer = Some(signer);
    }

    /// The signed note of `checkpoint` (its origin is the key name): by the
    /// current key, and by the previous one while it is valid at `now`.
    pub(crate) fn sign(
        &self,
        checkpoint: &Checkpoint,
        now: Timestamp,
    ) -> Result<String, StoreError> {
        let Some(signer) = self.signer.as_ref() else {
            return Err(StoreError::WritesRefused("no signing key".into()));
        };
        let checkpoint = Checkpoint {
            origin: signer.name().to_string(),
            ..checkpoint.clone()
        };
        let mut signers = vec![signer];
        if let Some((previous, until)) = &self.co_signer {
            if now < *until {
                signers.push(previous);
            }
        }
        Ok(sign_note(&checkpoint, &signers))
    }
}

/// One entry's index and its leaf bytes as stored.
pub type RawLeaf = (u64, Vec<u8>);

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

/// How far a stream source has been consumed: the next offset to read of
/// one partition. Written in the same atomic batch as the leaves its
/// messages produced, so a restart resumes exactly after the last
/// committed message (no loss, no duplicate leaf).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceOffset {
    /// The source, e.g. `kafka:<group>:<topic>`.
    pub source: String,
    /// Partition number.
    pub partition: i32,
    /// The next offset to consume.
    pub next: u64,
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
        let signer = keys::create(&dir, origin)?;
        let store = Store::open_dir(dir, Compaction::Background, &mut |_| {})?;
        store.owned()?.db.flush()?;
        Ok(InitReport {
            origin: signer.name().to_string(),
            verifier_key: signer.verifier().to_text(),
        })
    }

    /// Opens an existing ledger and checks that the recovered tree extends
    /// the last signed checkpoint. If it does not, the store still opens (so
    /// it can be inspected and verified) but refuses every write, saying why.
    pub fn open(dir: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_reporting(dir, &mut |_| {})
    }

    /// [`Store::open`], telling `report` before any long rebuild starts
    /// (the first open of a ledger written in an older layout, or of one
    /// whose key indexes were lost or damaged).
    pub fn open_reporting(
        dir: impl AsRef<Path>,
        report: &mut dyn FnMut(Rebuild),
    ) -> Result<Store, StoreError> {
        Store::open_with(dir, Compaction::Background, report)
    }

    /// [`Store::open_reporting`], saying whether this process compacts the
    /// key indexes ([`Compaction`]): commands that mostly read open with
    /// [`Compaction::Deferred`], so that neither their start nor their exit
    /// waits for compaction left over by a writer.
    pub fn open_with(
        dir: impl AsRef<Path>,
        compaction: Compaction,
        report: &mut dyn FnMut(Rebuild),
    ) -> Result<Store, StoreError> {
        let dir = DataDir::new(dir.as_ref());
        if !dir.db().exists() {
            return Err(StoreError::NotInitialized {
                path: dir.root().to_path_buf(),
            });
        }
        Store::open_dir(dir, compaction, report)
    }

    /// Sets the entries per column chunk (tests use small chunks to
    /// exercise sealing; see [`crate::columns`]).
    pub fn with_column_rows(self, rows: u64) -> Self {
        if let Some(s) = self.columns.sealer() {
            s.set_chunk_rows(rows);
        }
        self
    }

    /// The column chunks that cover the start of the committed log, in
    /// order; entries past the last one are read from the leaves.
    pub fn column_chunks(&self) -> Result<Vec<std::sync::Arc<ColumnChunk>>, StoreError> {
        self.columns.chunks(self.lock_free_size())
    }

    /// The batches of `chunk`, with `columns` (positions in
    /// [`crate::columns::COLUMNS`]) and only the rows `keep` keeps (the
    /// others are never decoded); `None` when its file is damaged or gone
    /// (read those entries from the leaves; the writer rebuilds it).
    pub fn read_column_chunk(
        &self,
        chunk: &ColumnChunk,
        columns: &[usize],
        keep: &crate::columns::Keep,
    ) -> Result<Option<ChunkBatches>, StoreError> {
        self.columns.read(chunk, columns, keep)
    }

    /// The rows `keep` keeps of entries `from..to`, as column batches of
    /// every sidecar column, built from the leaves' top-level fields (what
    /// no chunk holds yet): exactly the rows a chunk read would keep.
    pub fn column_batches_from_leaves(
        &self,
        from: u64,
        to: u64,
        keep: &crate::columns::Keep,
    ) -> Result<ChunkBatches, StoreError> {
        crate::columns::from_leaves(&self.segments, from, to.min(self.lock_free_size()), keep)
    }

    /// Starts building, in the background, the column chunks the log is
    /// missing (a ledger written before the sidecar, or one whose chunks
    /// were lost); ingest does it on its first commit.
    pub fn catch_up_columns(&self) {
        if let Some(s) = self.columns.sealer() {
            s.catch_up(self.lock_free_size());
        }
    }

    /// Waits until the column chunks queued so far are written: the first
    /// failure since the last wait, if any.
    pub fn wait_for_columns(&self) -> Result<(), StoreError> {
        match self.columns.sealer() {
            Some(s) => s.wait(),
            None => Ok(()),
        }
    }

    /// Sets the size at which a new leaf file is started (tests use small
    /// segments to exercise rotation).
    pub fn with_segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes.max(1);
        self
    }

    fn open_dir(
        dir: DataDir,
        compaction: Compaction,
        report: &mut dyn FnMut(Rebuild),
    ) -> Result<Store, StoreError> {
        let (hold, opened) = match open_db(&dir) {
            Ok(db) => {
                let log = db.open_tree(layout::LOG_TREE)?;
                let quarantine = db.open_tree(layout::QUARANTINE_TREE)?;
                let (keys, opened) = Indexes::open(&dir.key_index(), dir.versions(), compaction)?;
                let owned = Owned {
                    db,
                    log,
                    quarantine,
                    keys,
                };
                (Hold::Owned(Box::new(owned)), Some(opened))
            }
            Err(StoreError::Locked { .. }) => (Hold::View(View::read(dir.root())?), None),
            Err(e) => return Err(e),
        };
        let viewing = matches!(hold, Hold::View(_));
        let signer = match viewing {
            // A view never signs: only the writer's checkpoints exist.
            true => None,
            false => keys::read_signer(&dir)?,
        };
        let co_signer = keys::read_previous(&dir)?;
        let current = match &signer {
            Some(s) => Some(s.verifier()),
            None => keys::read_verifier(&dir)?,
        };
        let previous = match &co_signer {
            Some((s, _)) => Some(s.verifier()),
            None => keys::read_previous_verifier(&dir)?,
        };
        let verifiers = current.into_iter().chain(previous).collect();
        let store = Store {
            writer: Mutex::new(Writer {
                frontier: Frontier::new(),
                files: None,
                recorded_at: None,
                checkpoint: None,
                signer,
                co_signer,
                verifiers,
                refused: None,
            }),
            segments: Segments::new(dir.leaves()),
            tree: TreeFiles::new(dir.leaves().join("tree")),
            columns: Columns::new(dir.columns()),
            names: Default::default(),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            dir,
            hold,
            keys_mark: AtomicU64::new(u64::MAX),
            close_on_drop: std::sync::atomic::AtomicBool::new(true),
        };
        store.recover()?;
        if let Some(opened) = opened {
            store.recover_keys(opened, report)?;
            store.publish_view()?;
            let size = {
                let w = store.lock();
                w.refused.is_none().then(|| w.frontier.size())
            };
            if let Some(size) = size {
                let older =
                    store
                        .columns
                        .start_writer(store.segments.clone(), store.tree.clone(), size)?;
                if older > 0 {
                    report(Rebuild::Columns { chunks: older });
                }
            }
        }
        Ok(store)
    }

    /// The data directory.
    pub fn data_dir(&self) -> &DataDir {
        &self.dir
    }

    /// The ledger's checkpoint verifier keys, the current one first (after
    /// a rotation the previous one follows).
    pub fn verifiers(&self) -> Vec<NoteVerifier> {
        self.lock().verifiers.clone()
    }

    /// Appends a batch as one group commit.
    ///
    /// Events whose id is already stored, or repeated earlier in the batch,
    /// are counted as duplicates and append nothing. The call returns only
    /// after the leaf and tree files are synced and the sled batch holding
    /// the ids, the new size and the signed checkpoint is flushed: that flush
    /// is the commit point, so a crash leaves the whole batch or none of it.
    /// `recorded_at` is one instant per batch and never goes backwards, even
    /// if the wall clock does.
    pub fn append(&self, events: Vec<Envelope>) -> Result<AppendOutcome, StoreError> {
        let prepared = events
            .into_iter()
            .map(|e| {
                let id = e.id.clone();
                PreparedEvent::new(&e).map_err(|source| {
                    StoreError::Corrupt(format!("cannot encode event {id:?}: {source}"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.append_prepared(prepared)
    }

    /// [`Store::append`] for events whose canonical bytes were computed
    /// already (on another thread).
    pub fn append_prepared(&self, events: Vec<PreparedEvent>) -> Result<AppendOutcome, StoreError> {
        self.append_consumed(&events, &[])
    }

    /// [`Store::append_prepared`], recording in the same commit how far
    /// stream sources were consumed. Offsets only move forward: an older
    /// one (a partition re-read after a rebalance) is ignored. A batch of
    /// nothing but duplicates still records its offsets.
    ///
    /// The events are borrowed: a pipeline that decoded them on another
    /// thread hands them back to be freed there. A block freed by a thread
    /// other than its allocator's goes through mimalloc's cross-thread
    /// lists (`mi_free_block_delayed_mt`, then `_mi_page_free_collect` on
    /// the owner): 9% of a 1M file ingest's samples.
    pub fn append_consumed(
        &self,
        events: &[PreparedEvent],
        offsets: &[SourceOffset],
    ) -> Result<AppendOutcome, StoreError> {
        let mut outcomes = self.append_groups(&[events], offsets)?;
        Ok(outcomes.pop().unwrap_or_default())
    }

    /// Appends several callers' batches as one group commit (one sync of
    /// the files, one flush of the commit record) and tells each caller
    /// what happened to its own events: an id repeated across the groups is
    /// appended for the first group holding it and a duplicate for the
    /// rest. Every outcome's `size` is the log size after the commit.
    pub fn append_together(
        &self,
        groups: Vec<Vec<PreparedEvent>>,
    ) -> Result<Vec<AppendOutcome>, StoreError> {
        let groups: Vec<&[PreparedEvent]> = groups.iter().map(Vec::as_slice).collect();
        self.append_groups(&groups, &[])
    }

    fn append_groups(
        &self,
        groups: &[&[PreparedEvent]],
        offsets: &[SourceOffset],
    ) -> Result<Vec<AppendOutcome>, StoreError> {
        let mut w = self.lock();
        if let Some(reason) = &w.refused {
            return Err(StoreError::WritesRefused(reason.clone()));
        }
        if w.signer.is_none() {
            return Err(StoreError::WritesRefused(format!(
                "no signing key at {}",
                self.dir.signing_key().display()
            )));
        }
        let recorded_at = next_recorded_at(w.recorded_at);
        let recorded_text = recorded_at.to_string();
        let first = w.frontier.size();
        // Dedup needs every committed id in the index.
        if self.keys_mark.load(Ordering::Acquire) != first {
            self.catch_up_keys(&w, &mut |_| {})?;
        }
        let total: usize = groups.iter().map(|g| g.len()).sum();
        // Ids of this commit so far (borrowed from the groups, which live
        // until the commit is done).
        let mut seen: HashSet<&str, foldhash::fast::RandomState> =
            HashSet::with_capacity_and_hasher(total, Default::default());
        let mut ids: Vec<&str> = Vec::with_capacity(total);
        let mut leaves = Vec::with_capacity(total);
        let mut facts: Vec<&Facts> = Vec::with_capacity(total);
        let mut outcomes = Vec::with_capacity(groups.len());
        for group in groups {
            let mut outcome = AppendOutcome::default();
            for prepared in group.iter() {
                let known = seen.contains(prepared.id.as_str())
                    || match self.keys()?.id(&prepared.id) {
                        Err(StoreError::IndexDamaged { .. }) => {
                            self.rebuild_damaged_locked(&w)?;
                            self.keys()?.id(&prepared.id)?.is_some()
                        }
                        known => known?.is_some(),
                    };
                if known {
                    outcome.duplicates += 1;
                    continue;
                }
                seen.insert(&prepared.id);
                leaves.push(canonical::EventLeaf {
                    event: &prepared.canonical,
                    recorded_at: &recorded_text,
                });
                ids.push(&prepared.id);
                facts.push(&prepared.facts);
                outcome.appended += 1;
            }
            outcomes.push(outcome);
        }
        let mut offset_batch = sled::Batch::default();
        let mut moved = false;
        for o in offsets {
            let key = layout::offset_key(&o.source, o.partition);
            let stored = self
                .owned()?
                .log
                .get(&key)?
                .and_then(|v| layout::u64_value(&v));
            if stored.is_none_or(|s| s < o.next) {
                offset_batch.insert(key, &o.next.to_be_bytes());
                moved = true;
            }
        }
        if ids.is_empty() {
            if moved {
                self.owned()?.log.apply_batch(offset_batch)?;
                self.owned()?.db.flush()?;
            }
            for o in &mut outcomes {
                o.size = first;
            }
            return Ok(outcomes);
        }
        let result = self.commit(&mut w, first, recorded_at, &leaves, offset_batch);
        if result.is_err() {
            // Whatever was half written is cut back to the committed size
            // when the file writers are next resumed.
            w.files = None;
        }
        let size = result?;
        // The indexes follow the commit under the writer lock, so the next
        // batch's dedup sees these ids, and ingest pays for every index
        // (and says so in its throughput). Should this fail, the batch is
        // still committed, and the next append or reader catches up.
        let mark = self
            .keys()?
            .apply(
                first,
                ids.iter().copied().zip(facts.iter().copied()),
                w.frontier.root(),
            )
            .unwrap_or(u64::MAX);
        self.keys_mark.store(mark, Ordering::Release);
        if let Some(sealer) = self.columns.sealer() {
            sealer.committed(first, recorded_at, facts.iter().copied());
        }
        if mark == size {
            // Readers in other processes see the commit from here on.
            let _ = self.publish_view_locked(&w);
        }
        drop(w);
        for o in &mut outcomes {
            o.size = size;
        }
        Ok(outcomes)
    }

    /// Files first, then the sled batch with size and checkpoint.
    fn commit(
        &self,
        w: &mut Writer,
        first: u64,
        recorded_at: Timestamp,
        leaves: &[canonical::EventLeaf<'_>],
        offsets: sled::Batch,
    ) -> Result<u64, StoreError> {
        let frontier = self.write_files(w, first, leaves)?;
        // The consumed offsets are part of the commit's atomic batch.
        let mut batch = offsets;
        let checkpoint = w.sign(
            &Checkpoint {
                origin: String::new(),
                size: frontier.size(),
                root: frontier.root(),
            },
            recorded_at,
        )?;
        batch.insert(layout::META_SIZE, &frontier.size().to_be_bytes());
        batch.insert(
            layout::META_RECORDED_AT,
            &recorded_at.unix_micros().to_be_bytes(),
        );
        // The checkpoint is signed before the flush but lands in the same
        // atomic batch as the size that commits the (already durable) leaves
        // it covers, and is published only after the flush: no signed root
        // can outlive its data.
        batch.insert(layout::META_CHECKPOINT, checkpoint.as_bytes());
        self.owned()?.log.apply_batch(batch)?;
        self.owned()?.db.flush()?;
        w.frontier = frontier;
        w.recorded_at = Some(recorded_at);
        publish_checkpoint(&self.dir, &checkpoint);
        w.checkpoint = Some(checkpoint);
        Ok(w.frontier.size())
    }

    /// Writes leaves, pointers and tree nodes, durably; returns the grown
    /// frontier (not yet installed: the commit is the sled flush).
    fn write_files(
        &self,
        w: &mut Writer,
        first: u64,
        leaves: &[canonical::EventLeaf<'_>],
    ) -> Result<Frontier, StoreError> {
        if w.files.is_none() {
            let last = match first.checked_sub(1) {
                Some(i) => Some(self.pointer(i)?),
                None => None,
            };
            w.files = Some((
                SegmentWriter::resume(self.segments.clone(), self.segment_bytes, first, last)?,
                TreeWriter::resume(self.tree.clone(), first)?,
            ));
        }
        let mut frontier = w.frontier.clone();
        let Some((leaf_writer, tree_writer)) = w.files.as_mut() else {
            return Err(StoreError::Corrupt("no file writers".into()));
        };
        let (_, hashes) = leaf_writer.append(first, leaves)?;
        for hash in hashes {
            frontier.push(hash, |id, h| tree_writer.push(id, h));
        }
        // The two files' syncs side by side, so that neither waits for the
        // other's journal commit (measured only together with the hashed
        // pending keys, c798ab3: docs/storage-experiments.md "Storage: a mark every two seconds").
        tree_writer.sync_beside(|| leaf_writer.sync())?;
        Ok(frontier)
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
            quarantined: self.quarantine().len(),
            writes_refused: w.refused.clone(),
        }
    }

    /// The latest signed checkpoint (`None` while the log is empty).
    pub fn checkpoint(&self) -> Option<String> {
        self.lock().checkpoint.clone()
    }

    /// Why writes are refused, if they are.
    pub fn writes_refused(&self) -> Option<String> {
        self.lock().refused.clone()
    }

    /// The entry at `index`.
    pub fn entry(&self, index: u64) -> Result<Option<Entry>, StoreError> {
        self.leaf_bytes(index)?
            .map(|bytes| decode_entry(index, &bytes))
            .transpose()
    }

    /// The raw leaf bytes at `index`.
    pub fn leaf_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        if index >= self.lock_free_size() {
            return Ok(None);
        }
        let pointer = self.pointer(index)?;
        self.segments.read(pointer).map(Some)
    }

    /// Where leaf `index` is.
    pub(crate) fn pointer(&self, index: u64) -> Result<LeafPointer, StoreError> {
        self.segments
            .pointer(index)?
            .ok_or_else(|| StoreError::Corrupt(format!("entry {index} has no leaf pointer")))
    }

    /// Index of the entry with envelope id `id`.
    pub fn index_of(&self, id: &str) -> Result<Option<u64>, StoreError> {
        match &self.hold {
            Hold::Owned(owned) => {
                self.keys_current()?;
                self.repaired(|| owned.keys.id(id))
            }
            // A view has no id index: the leaves are read instead.
            Hold::View(_) => {
                for leaf in self.leaves(0, self.lock_free_size()) {
                    let (index, bytes) = leaf?;
                    if crate::leaf_check::check(&bytes).is_ok_and(|f| f.id == id) {
                        return Ok(Some(index));
                    }
                }
                Ok(None)
            }
        }
    }

    /// The leaf bytes of entries `from..to` in log order, streamed from the
    /// leaf files without decoding: for scans that read a few fields of
    /// every entry (reports) and for their byte counts.
    pub fn leaves(
        &self,
        from: u64,
        to: u64,
    ) -> Box<dyn Iterator<Item = Result<RawLeaf, StoreError>> + '_> {
        let to = to.min(self.lock_free_size());
        if from >= to {
            return Box::new(std::iter::empty());
        }
        let stream = match self
            .pointer(from)
            .and_then(|p| self.segments.stream(Some(p)))
        {
            Ok(s) => s,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(
            stream
                .take((to - from) as usize)
                .zip(from..)
                .map(|(line, index)| line.map(|bytes| (index, bytes))),
        )
    }

    /// Entries `from..to` in log order, streamed from the leaf files.
    pub fn entries(
        &self,
        from: u64,
        to: u64,
    ) -> Box<dyn Iterator<Item = Result<Entry, StoreError>> + '_> {
        Box::new(
            self.leaves(from, to)
                .map(|leaf| leaf.and_then(|(index, bytes)| decode_entry(index, &bytes))),
        )
    }

    /// Entries of one cluster or type with valid time in `[from, to)`, in
    /// valid-time order, read through a derived index. The indexes are
    /// caches, brought up to date with the log here rather than on the
    /// ingest path, which stays as fast as the log itself.
    pub fn scan<'a>(
        &'a self,
        key: ScanKey<'a>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Box<dyn Iterator<Item = Result<Entry, StoreError>> + 'a> {
        if let Hold::View(_) = &self.hold {
            return Box::new(self.scan_leaves(key, from, to));
        }
        Box::new(self.scan_indexes(key, from, to).map(|ix| {
            let (_, ix) = ix?;
            self.entry(ix)?.ok_or_else(|| {
                StoreError::Corrupt(format!("derived index points at missing entry {ix}"))
            })
        }))
    }

    /// [`Store::scan`], as leaf bytes: for readers that parse only what
    /// they need of each leaf (a few fields, `data` as its text).
    pub fn scan_leaf_bytes<'a>(
        &'a self,
        key: ScanKey<'a>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Box<dyn Iterator<Item = Result<RawLeaf, StoreError>> + 'a> {
        if let Hold::View(_) = &self.hold {
            let entries = self.scan_leaves(key, from, to);
            return Box::new(entries.map(|e| e.and_then(|e| Ok((e.index, e.to_leaf_bytes()?)))));
        }
        Box::new(self.scan_indexes(key, from, to).map(|ix| {
            let (_, ix) = ix?;
            let bytes = self.leaf_bytes(ix)?.ok_or_else(|| {
                StoreError::Corrupt(format!("derived index points at missing entry {ix}"))
            })?;
            Ok((ix, bytes))
        }))
    }

    /// (valid time, log index) of each entry [`Store::scan`] would give,
    /// read from the key index alone, no leaf: what a question about
    /// when a cluster was heard from needs (coverage). A read-only view,
    /// which has no key indexes, reads the leaves.
    pub fn scan_times<'a>(
        &'a self,
        key: ScanKey<'a>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Box<dyn Iterator<Item = Result<(Timestamp, u64), StoreError>> + 'a> {
        if let Hold::View(_) = &self.hold {
            return Box::new(
                self.scan_leaves(key, from, to)
                    .map(|e| e.map(|e| (e.event.time, e.index))),
            );
        }
        Box::new(self.scan_indexes(key, from, to).map(|t| {
            let (micros, index) = t?;
            let time = Timestamp::from_unix_micros(micros).ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "the time index holds {micros} µs for entry {index}"
                ))
            })?;
            Ok((time, index))
        }))
    }

    /// (valid time in microseconds, log index) of [`Store::scan`] (a
    /// writer's; a view has no key indexes).
    fn scan_indexes<'a>(
        &'a self,
        key: ScanKey<'a>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Box<dyn Iterator<Item = Result<(i64, u64), StoreError>> + 'a> {
        let keys = match &self.hold {
            Hold::Owned(owned) => &owned.keys,
            Hold::View(_) => {
                return Box::new(std::iter::once(Err(StoreError::Corrupt(
                    "a read-only view has no key indexes".into(),
                ))))
            }
        };
        if let Err(e) = self.keys_current() {
            return Box::new(std::iter::once(Err(e)));
        }
        let mut indexes = keys.scan(key, from, to);
        // How many indexes were answered, and whether the indexes were
        // rebuilt during this scan already.
        let mut answered = 0usize;
        let mut rebuilt = false;
        Box::new(std::iter::from_fn(move || {
            let ix = match indexes.next()? {
                // Damage found (a block fails its checksum when read, which
                // an open cannot see without reading every run): rebuilt
                // from the leaves once, and the scan starts again past what
                // it already answered. The rebuilt indexes hold the same
                // keys, so the scan gives the same order, and the blocks
                // that gave those answers had passed their checksums.
                Err(StoreError::IndexDamaged { .. }) if !rebuilt => {
                    rebuilt = true;
                    if let Err(e) = self.rebuild_damaged() {
                        return Some(Err(e));
                    }
                    indexes = keys.scan(key, from, to);
                    for _ in 0..answered {
                        if let Err(e) = indexes.next()? {
                            return Some(Err(e));
                        }
                    }
                    indexes.next()?
                }
                Err(e @ StoreError::IndexDamaged { .. }) => {
                    return Some(self.rebuild_damaged().and(Err(e)));
                }
                other => other,
            };
            answered += 1;
            Some(ix)
        }))
    }

    /// `read`, and when it finds the indexes damaged, `read` again after
    /// they are rebuilt from the leaves.
    fn repaired<T>(&self, read: impl Fn() -> Result<T, StoreError>) -> Result<T, StoreError> {
        match read() {
            Err(StoreError::IndexDamaged { .. }) => {
                self.rebuild_damaged()?;
                read()
            }
            answer => answer,
        }
    }

    /// Empties the indexes and replays the whole log into them: a read
    /// found bytes that fail their checksum (damage an open cannot see
    /// without reading every run).
    fn rebuild_damaged(&self) -> Result<(), StoreError> {
        let w = self.lock();
        self.rebuild_damaged_locked(&w)
    }

    fn rebuild_damaged_locked(&self, w: &Writer) -> Result<(), StoreError> {
        let keys = self.keys()?;
        keys.clear()?;
        self.keys_mark.store(u64::MAX, Ordering::Release);
        self.catch_up_keys(w, &mut |_| {})
    }

    /// Stored Merkle node.
    pub fn node(&self, id: NodeId) -> Result<Hash, StoreError> {
        self.tree.read(id)
    }

    /// The quarantine area.
    pub fn quarantine(&self) -> Quarantine {
        Quarantine {
            tree: match &self.hold {
                Hold::Owned(owned) => Some(owned.quarantine.clone()),
                Hold::View(_) => None,
            },
        }
    }

    /// Rebuilds every index by replaying the log. Returns the number of
    /// entries replayed and the indexes rebuilt.
    pub fn reindex(&self) -> Result<(u64, Vec<&'static str>), StoreError> {
        let w = self.lock();
        if let Some(reason) = &w.refused {
            return Err(StoreError::WritesRefused(reason.clone()));
        }
        let keys = self.keys()?;
        keys.clear()?;
        self.keys_mark.store(u64::MAX, Ordering::Release);
        self.catch_up_keys(&w, &mut |_| {})?;
        keys.close()?;
        self.publish_view_locked(&w)?;
        let size = w.frontier.size();
        drop(w);
        self.columns.clear()?;
        if let Some(s) = self.columns.sealer() {
            s.catch_up(size);
        }
        self.wait_for_columns()?;
        Ok((
            size,
            vec![
                "id index",
                "cluster time index",
                "type time index",
                "object version index",
                "column sidecar",
            ],
        ))
    }

    /// Drops the store without closing its indexes, as a crash would
    /// leave them (tests).
    #[cfg(test)]
    pub(crate) fn abandon(self) {
        if let Some(s) = self.columns.sealer() {
            s.abandon();
        }
        self.close_on_drop.store(false, Ordering::Release);
    }

    /// The indexes as this process opened them (tests damage them).
    pub(crate) fn key_index(&self) -> &Indexes {
        match &self.hold {
            Hold::Owned(owned) => &owned.keys,
            Hold::View(_) => panic!("a view has no indexes"),
        }
    }

    /// Makes sure the key indexes cover the committed log (they lag only
    /// after a failed index write, or in a store that refuses writes).
    fn keys_current(&self) -> Result<(), StoreError> {
        if matches!(self.hold, Hold::View(_)) {
            return Ok(());
        }
        let size = self.lock_free_size();
        if self.keys_mark.load(Ordering::Acquire) == size {
            return Ok(());
        }
        let w = self.lock();
        if w.refused.is_some() {
            // The log itself is in question: answer from the index as it is.
            return Ok(());
        }
        self.catch_up_keys(&w, &mut |_| {})
    }

    /// After the open-time check: trusts the indexes only from a mark
    /// whose recorded root is the log's root at that size, and replays the
    /// leaves past it; removes older layouts' keys from sled once the new
    /// indexes hold them.
    fn recover_keys(
        &self,
        opened: Opened,
        report: &mut dyn FnMut(Rebuild),
    ) -> Result<(), StoreError> {
        let w = self.lock();
        if w.refused.is_some() {
            // Nothing is written to a ledger that failed its check; the
            // indexes are caught up once it is repaired.
            return Ok(());
        }
        let owned = self.owned()?;
        let first_layout = owned.log.scan_prefix(layout::ID_PREFIX).next().is_some();
        let second_layout = owned
            .db
            .tree_names()
            .iter()
            .any(|t| t == layout::SECOND_LAYOUT_TREE.as_bytes());
        let reason = match opened {
            Opened::Replaced(reason) => Some(format!("the indexes were unusable ({reason})")),
            _ if first_layout => Some("a ledger in the first layout (ids in sled)".to_string()),
            Opened::Outdated(found) if found == "1" => Some(format!(
                "indexes in layout {found} (object versions in sled); this annal keeps them beside the ids"
            )),
            Opened::Outdated(found) if found == "2" => Some(format!(
                "indexes in layout {found} (every key through fjall's journal); this annal writes them in sorted runs"
            )),
            Opened::Outdated(found) if found == "3" => Some(format!(
                "indexes in layout {found} (fjall's default pinning); this annal keeps the id and object keyspaces' filters in memory"
            )),
            Opened::Outdated(found) => Some(format!(
                "indexes in layout {found}; this annal writes layout {}",
                crate::index::MARK_LAYOUT
            )),
            Opened::Created if w.frontier.size() > 0 => Some("no indexes".to_string()),
            _ => {
                let damage = owned.keys.damaged_files()?;
                if damage.is_none() {
                    // A ledger from before zone maps or checksums gets
                    // them here, once.
                    let (clusters, zones) = owned.keys.zones_missing()?;
                    if zones > 0 {
                        report(Rebuild::Zones { clusters, zones });
                    }
                    let clusters = owned.keys.unsummed();
                    if clusters > 0 {
                        report(Rebuild::Checksums { clusters });
                    }
                    owned.keys.complete_zones()?;
                }
                damage.map(|damage| format!("a version file is damaged ({damage})"))
            }
        };
        if let Some(reason) = reason {
            let entries = w.frontier.size();
            if entries > 0 {
                report(Rebuild::Indexes { entries, reason });
            }
            owned.keys.clear()?;
        }
        self.catch_up_keys(&w, report)?;
        if first_layout || second_layout {
            report(Rebuild::OldLayoutRemoved);
            self.remove_old_layouts()?;
        }
        Ok(())
    }

    /// Replays the leaves past the indexes' mark (their watermark) into
    /// them; an index whose mark is past the log or whose root is not the
    /// log's is emptied first.
    fn catch_up_keys(&self, w: &Writer, report: &mut dyn FnMut(Rebuild)) -> Result<(), StoreError> {
        const CHUNK: u64 = 8192;
        let size = w.frontier.size();
        let read = &mut |id| self.tree.read(id);
        let keys = self.keys()?;
        let mut from = match keys.watermark() {
            Some((mark, root)) if mark <= size && merkle::root_at(mark, read)? == root => mark,
            Some((mark, _)) => {
                let reason = if mark > size {
                    format!("they cover {mark} entries, the log has {size}")
                } else {
                    format!("their root at size {mark} is not the log's")
                };
                report(Rebuild::Indexes {
                    entries: size,
                    reason: format!("the indexes belong to another history ({reason})"),
                });
                keys.clear()?;
                0
            }
            None => 0,
        };
        let start = from;
        let mut damage_seen = false;
        while from < size {
            let to = (from + CHUNK).min(size);
            let mut ids = Vec::with_capacity((to - from) as usize);
            let mut facts = Vec::with_capacity((to - from) as usize);
            for entry in self.entries(from, to) {
                let entry = entry?;
                facts.push(Facts::of(&entry.event));
                ids.push(entry.event.id);
            }
            let root = merkle::root_at(to, &mut |id| self.tree.read(id))?;
            from = match keys.apply(from, ids.iter().map(String::as_str).zip(&facts), root) {
                Ok(upto) => upto,
                // A damaged object state: everything is rebuilt, once.
                Err(StoreError::IndexDamaged { .. }) if !damage_seen => {
                    damage_seen = true;
                    keys.clear()?;
                    0
                }
                Err(e) => return Err(e),
            };
            if (from - start) % (32 * CHUNK) == 0 && from < size {
                report(Rebuild::Progress {
                    replayed: from - start,
                    entries: size - start,
                });
            }
        }
        self.keys_mark.store(size, Ordering::Release);
        Ok(())
    }

    /// Deletes the id keys and trees older layouts kept in sled (the
    /// indexes hold them now). Interrupted, it is resumed on the next open,
    /// which finds them left.
    fn remove_old_layouts(&self) -> Result<(), StoreError> {
        const CHUNK: usize = 8192;
        loop {
            let mut batch = sled::Batch::default();
            let mut n = 0;
            for kv in self.owned()?.log.scan_prefix(layout::ID_PREFIX).take(CHUNK) {
                batch.remove(kv?.0);
                n += 1;
            }
            if n == 0 {
                break;
            }
            self.owned()?.log.apply_batch(batch)?;
        }
        for tree in layout::FIRST_LAYOUT_TREES
            .into_iter()
            .chain([layout::SECOND_LAYOUT_TREE])
        {
            self.owned()?.db.drop_tree(tree)?;
        }
        self.owned()?.db.flush()?;
        Ok(())
    }

    /// Cluster ids that have object versions, sorted.
    pub fn version_clusters(&self) -> Result<Vec<String>, StoreError> {
        match &self.hold {
            Hold::Owned(owned) => {
                self.keys_current()?;
                owned.keys.version_clusters()
            }
            Hold::View(view) => {
                let mut ids: Vec<String> = view.clusters.iter().map(|c| c.id.clone()).collect();
                ids.sort();
                Ok(ids)
            }
        }
    }

    /// Every cluster with an entry of any type (heartbeats included), in
    /// id order: what a coverage question covers. From the key index; a
    /// read-only view, which has none, reads the leaves.
    pub fn event_clusters(&self) -> Result<Vec<String>, StoreError> {
        match &self.hold {
            Hold::Owned(owned) => {
                self.keys_current()?;
                self.repaired(|| owned.keys.event_clusters())
            }
            Hold::View(_) => {
                let mut out = std::collections::BTreeSet::new();
                for e in self.entries(0, self.lock_free_size()) {
                    if let Some(c) = e?.event.cluster {
                        out.insert(c);
                    }
                }
                Ok(out.into_iter().collect())
            }
        }
    }

    /// Keeps the object names of the clusters read from now on, parsed,
    /// for the reads after (at most 96 MiB, the clusters read longest ago
    /// dropped first; see [`crate::index::versions::NameCache`]): for a
    /// process that answers many questions, such as `annal serve`. A
    /// store keeps none by default, as a command that asks one question
    /// would only hold them past their use.
    pub fn keep_object_names(&self) {
        self.names.set_budget(crate::index::versions::NAMES_BUDGET);
    }

    /// Keeps the column chunks read from now on in memory, as checked (at
    /// most 256 MiB, the chunks read longest ago dropped first; see
    /// `columns::held`): for a process that answers many questions, as
    /// [`Store::keep_object_names`]. A scan of a held chunk reads its
    /// pages without a system call or a copy.
    pub fn keep_column_chunks(&self) {
        self.columns.hold_files();
    }

    /// A consistent copy of one cluster's object versions (see
    /// [`ClusterVersions::live_at`]); `None` when the cluster has none.
    pub fn cluster_versions(&self, cluster: &str) -> Result<Option<ClusterVersions>, StoreError> {
        self.cluster_versions_in(cluster, Span::All)
    }

    /// One cluster's object versions, as much of them as `span` asks for:
    /// a scan bounded on valid time that needs neither ends nor details
    /// reads only the zones of rows that can start in its range.
    pub fn cluster_versions_in(
        &self,
        cluster: &str,
        span: Span,
    ) -> Result<Option<ClusterVersions>, StoreError> {
        match &self.hold {
            Hold::Owned(owned) => {
                self.keys_current()?;
                self.repaired(|| owned.keys.cluster_versions(cluster, span, &self.names))
            }
            Hold::View(view) => view
                .cluster(&self.dir.versions(), cluster)
                .map(|(dir, meta)| {
                    crate::index::versions::read_cluster(&dir, cluster, &meta, span, &self.names)
                })
                .transpose(),
        }
    }

    /// How many entries the ledger had recorded at system time `at`: the
    /// `known_below` bound of an as-of-system-time question. Entries are
    /// recorded in index order with non-decreasing `recorded_at`, so this
    /// is a binary search.
    pub fn size_at(&self, at: Timestamp) -> Result<u64, StoreError> {
        let (mut lo, mut hi) = (0u64, self.lock_free_size());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let entry = self
                .entry(mid)?
                .ok_or_else(|| StoreError::Corrupt(format!("no entry {mid}")))?;
            if entry.recorded_at <= at {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The next offset to consume of each partition of `source`, as the
    /// last commit recorded it (see [`SourceOffset`]).
    pub fn source_offsets(
        &self,
        source: &str,
    ) -> Result<std::collections::BTreeMap<i32, u64>, StoreError> {
        let prefix = layout::offset_prefix(source);
        let mut out = std::collections::BTreeMap::new();
        let owned = self.owned()?;
        for kv in owned.log.scan_prefix(&prefix) {
            let (k, v) = kv?;
            let partition = k
                .get(prefix.len()..)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(i32::from_be_bytes)
                .ok_or_else(|| StoreError::Corrupt("bad source offset key".into()))?;
            let next = layout::u64_value(&v)
                .ok_or_else(|| StoreError::Corrupt("bad source offset value".into()))?;
            out.insert(partition, next);
        }
        Ok(out)
    }

    /// Flushes everything (quarantine writes included) to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        if let Hold::Owned(owned) = &self.hold {
            owned.db.flush()?;
        }
        Ok(())
    }

    /// The committed size and signed checkpoint as the commit record holds
    /// them (a view: as the writer published them).
    pub(crate) fn commit_record(&self) -> Result<(u64, Option<String>), StoreError> {
        match &self.hold {
            Hold::Owned(owned) => {
                let size = owned
                    .log
                    .get(layout::META_SIZE)?
                    .and_then(|v| layout::u64_value(&v))
                    .unwrap_or(0);
                let note = owned
                    .log
                    .get(layout::META_CHECKPOINT)?
                    .map(|v| String::from_utf8_lossy(&v).into_owned());
                Ok((size, note))
            }
            Hold::View(view) => Ok((view.size, view.checkpoint.clone())),
        }
    }

    /// The sled tree of the commit record (tests).
    #[cfg(test)]
    pub(crate) fn log_tree(&self) -> &sled::Tree {
        &self.owned().expect("a writer").log
    }

    /// The writer's databases, or the error a view gives for what only
    /// they hold.
    pub(crate) fn owned(&self) -> Result<&Owned, StoreError> {
        match &self.hold {
            Hold::Owned(owned) => Ok(owned),
            Hold::View(view) => Err(StoreError::Beside {
                path: self.dir.root().to_path_buf(),
                pid: view.pid,
            }),
        }
    }

    fn keys(&self) -> Result<&Indexes, StoreError> {
        self.owned().map(|o| &o.keys)
    }

    /// Whether this is a view beside another process's writer, and that
    /// process's id.
    pub fn beside_writer(&self) -> Option<u32> {
        match &self.hold {
            Hold::View(view) => Some(view.pid),
            Hold::Owned(_) => None,
        }
    }

    /// Publishes what readers in other processes may read.
    fn publish_view(&self) -> Result<(), StoreError> {
        let w = self.lock();
        self.publish_view_locked(&w)
    }

    fn publish_view_locked(&self, w: &Writer) -> Result<(), StoreError> {
        let keys = self.keys()?;
        View::new(
            w.frontier.size(),
            &w.frontier.root(),
            w.checkpoint.clone(),
            w.recorded_at.map(|t| t.unix_micros()),
            keys.version_files(),
        )
        .publish(self.dir.root())
    }

    /// A view's answer to [`Store::scan`]: every leaf read, the matching
    /// ones sorted by (valid time, index). Memory: 16 bytes per match.
    fn scan_leaves<'a>(
        &'a self,
        key: ScanKey<'a>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<Entry, StoreError>> + 'a {
        let mut matches: Vec<(i64, u64)> = Vec::new();
        let mut failed = None;
        for entry in self.entries(0, self.lock_free_size()) {
            let e = match entry {
                Ok(e) => e,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let hit = match key {
                ScanKey::Cluster(c) => e.event.cluster.as_deref().unwrap_or("") == c,
                ScanKey::Type(t) => e.event.event_type.as_str() == t,
            };
            let in_window =
                from.is_none_or(|f| e.event.time >= f) && to.is_none_or(|t| e.event.time < t);
            if hit && in_window {
                matches.push((e.event.time.unix_micros(), e.index));
            }
        }
        matches.sort_unstable();
        failed
            .map(Err)
            .into_iter()
            .chain(matches.into_iter().map(move |(_, ix)| {
                self.entry(ix)?
                    .ok_or_else(|| StoreError::Corrupt(format!("no entry {ix}")))
            }))
    }

    pub(crate) fn segments(&self) -> &Segments {
        &self.segments
    }

    pub(crate) fn tree_files(&self) -> &TreeFiles {
        &self.tree
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        // A panic while holding the lock leaves no half-written state behind:
        // the batch is applied atomically or not at all.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open-time check: load the frontier, then prove the recovered tree
    /// extends the last signed checkpoint.
    fn recover(&self) -> Result<(), StoreError> {
        let mut w = self.lock();
        let size = match &self.hold {
            Hold::Owned(owned) => {
                w.recorded_at = owned
                    .log
                    .get(layout::META_RECORDED_AT)?
                    .and_then(|v| layout::u64_value(&v))
                    .and_then(|m| Timestamp::from_unix_micros(m as i64));
                self.commit_record()?.0
            }
            Hold::View(view) => {
                w.recorded_at = view.recorded_at.and_then(Timestamp::from_unix_micros);
                w.refused = Some(format!(
                    "process {} writes the ledger at {}; this process reads it at {} entries",
                    view.pid,
                    self.dir.root().display(),
                    view.size
                ));
                view.size
            }
        };
        w.checkpoint = self.commit_record()?.1;
        let refused = w.refused.clone();
        match self.check_recovered(size, w.checkpoint.as_deref(), &w.verifiers) {
            Ok(frontier) => {
                if let Hold::View(view) = &self.hold {
                    if view.root()? != frontier.root() {
                        return Err(StoreError::Corrupt(format!(
                            "the view published by process {} does not match the tree files at {} entries",
                            view.pid, view.size
                        )));
                    }
                }
                w.frontier = frontier;
                w.refused = refused;
            }
            Err(reason) => {
                w.refused = Some(format!(
                    "{reason}; the ledger is read-only until this is resolved (run `annal verify`)"
                ));
                // Best effort, so status still shows a size.
                w.frontier = Frontier::load(size, &mut |id| self.tree.read(id)).unwrap_or_default();
            }
        }
        Ok(())
    }

    fn check_recovered(
        &self,
        size: u64,
        note: Option<&str>,
        verifiers: &[NoteVerifier],
    ) -> Result<Frontier, String> {
        let pointers = self.segments.pointer_count().map_err(|e| e.to_string())?;
        if pointers < size {
            return Err(format!(
                "the log records {size} entries but the offsets file holds {pointers}: entry {pointers} is missing"
            ));
        }
        let leaves = self.tree.leaf_capacity().map_err(|e| e.to_string())?;
        if leaves < size {
            return Err(format!(
                "the log records {size} entries but the tree file holds {leaves}"
            ));
        }
        let frontier = Frontier::load(size, &mut |id| self.tree.read(id))
            .map_err(|e| format!("tree nodes: {e}"))?;
        if let Some(last) = size.checked_sub(1) {
            let pointer = self.pointer(last).map_err(|e| e.to_string())?;
            let on_disk = self
                .segments
                .len_of(pointer.segment)
                .map_err(|e| e.to_string())?
                .unwrap_or(0);
            if on_disk < pointer.end() {
                return Err(format!("entry {last} is missing from the leaf files"));
            }
            let bytes = self.segments.read(pointer).map_err(|e| e.to_string())?;
            let stored = self
                .tree
                .read(NodeId {
                    level: 0,
                    index: last,
                })
                .map_err(|e| e.to_string())?;
            if merkle::leaf_hash(&bytes) != stored {
                return Err(format!("entry {last} does not match its stored leaf hash"));
            }
        }
        let Some(note) = note else {
            return if size == 0 {
                Ok(frontier)
            } else {
                Err(format!(
                    "the log has {size} entries but no signed checkpoint"
                ))
            };
        };
        if verifiers.is_empty() {
            return Err("no verifier key to check the last checkpoint with".to_string());
        }
        let cp = crate::proof::open_with_any(verifiers, note)
            .map_err(|e| format!("the last checkpoint does not verify: {e}"))?;
        if cp.size > size {
            return Err(format!(
                "the log has {size} entries but the last signed checkpoint covers {}: entries were lost",
                cp.size
            ));
        }
        let root =
            merkle::root_at(cp.size, &mut |id| self.tree.read(id)).map_err(|e| e.to_string())?;
        if root != cp.root {
            return Err(format!(
                "the stored tree at size {} does not match the signed checkpoint root",
                cp.size
            ));
        }
        Ok(frontier)
    }

    /// The committed size, read without the writer lock (so readers never
    /// wait on a commit, and code holding the lock can read).
    fn lock_free_size(&self) -> u64 {
        match &self.hold {
            Hold::Owned(owned) => owned
                .log
                .get(layout::META_SIZE)
                .ok()
                .flatten()
                .and_then(|v| layout::u64_value(&v))
                .unwrap_or(0),
            Hold::View(view) => view.size,
        }
    }
}

impl Drop for Store {
    /// Writes the indexes' pending keys and a mark at what they hold, so
    /// that the next open replays nothing. Best effort: without it the
    /// next open replays the leaves past the last mark.
    fn drop(&mut self) {
        if let (true, Hold::Owned(owned)) = (self.close_on_drop.load(Ordering::Acquire), &self.hold)
        {
            let _ = owned.keys.close();
        }
        if matches!(self.hold, Hold::Owned(_)) {
            note_dropped(&self.dir);
        }
    }
}

/// Data directories whose store this process dropped, and when: sled's own
/// threads can hold the file lock for a moment after the handle is gone.
static DROPPED: Mutex<Vec<(std::path::PathBuf, std::time::Instant)>> = Mutex::new(Vec::new());

/// How long a lock a dropped handle of this process may still hold is
/// waited for.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn note_dropped(dir: &DataDir) {
    let mut dropped = DROPPED.lock().unwrap_or_else(|p| p.into_inner());
    dropped.retain(|(_, at)| at.elapsed() < LOCK_WAIT);
    dropped.push((dir.root().to_path_buf(), std::time::Instant::now()));
}

fn dropped_recently(dir: &DataDir) -> bool {
    DROPPED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|(path, at)| path == dir.root() && at.elapsed() < LOCK_WAIT)
}

/// Opens sled. A held lock is another process's (the caller opens a view
/// beside it at once), unless this process dropped a store of the same
/// directory a moment ago: then it is retried briefly.
fn open_db(dir: &DataDir) -> Result<sled::Db, StoreError> {
    let started = std::time::Instant::now();
    loop {
        let result = sled::Config::new()
            .path(dir.db())
            .cache_capacity(CACHE_BYTES)
            // Every commit flushes explicitly; no background flusher.
            .flush_every_ms(None)
            .open();
        match result {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => {
                if !dropped_recently(dir) || started.elapsed() > LOCK_WAIT {
                    return Err(StoreError::Locked {
                        path: dir.root().to_path_buf(),
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return Ok(other?),
        }
    }
}

fn decode_entry(index: u64, bytes: &[u8]) -> Result<Entry, StoreError> {
    Entry::from_leaf_bytes(bytes).map_err(|e| StoreError::Corrupt(format!("leaf {index}: {e}")))
}

/// One instant per batch, never before the previous batch's.
fn next_recorded_at(previous: Option<Timestamp>) -> Timestamp {
    let now = Timestamp::now();
    previous.map_or(now, |p| now.max(p))
}

/// Writes the checkpoint file for auditors. Failure here loses nothing (the
/// checkpoint is durable in the log tree), so it is not an append error.
fn publish_checkpoint(dir: &DataDir, note: &str) {
    let tmp = dir.checkpoint().with_extension("tmp");
    if fs::write(&tmp, note).is_ok() {
        let _ = fs::rename(&tmp, dir.checkpoint());
    }
}
