//! Keyspaces written in sorted runs: new keys wait in memory and reach
//! fjall only at a mark, as one sorted table per keyspace (fjall's bulk
//! ingestion), never through fjall's journal.
//!
//! Why: the leaves are already the write-ahead log. Sending every key
//! through fjall's journal too wrote each key twice, and every open
//! replayed that journal (up to 64 MiB, a point read per key) before a
//! command could start: half a second at 1M events, more as the journal
//! grew. Keys held here are lost in a crash, which costs nothing: the mark
//! is written only after their run is, and the open replays the leaves
//! past the mark.
//!
//! Invariant: a key reads the same whether it is still pending, frozen
//! or already in its run. Keys move one way, pending → frozen → run, each
//! step adding them to the next place before dropping them from the last,
//! and a reader looks in the same order, so it never misses one.
//!
//! A mark freezes the pending keys (a pointer swap) and writes the run on
//! a thread of its own ([`Frozen::write`]): writing the runs of ~370k
//! events took 310–384 ms, and a commit thread that wrote them itself
//! held every HTTP request waiting for the commit after it that long
//! (docs/performance.md "HTTP ingest under load").
//!
//! Pending and frozen keys are held in one buffer each, found through a
//! hash table ([`pending`](super::pending)): every event inserts an id and
//! two time keys and reads and writes one object state, so an insert and a
//! point read must cost one probe and no allocation. Range reads of them
//! (a writer's own queries) and the mark's thread sort them.
//!
//! Emptying a keyspace replaces it by a new one (`ids`, then `ids.1`, ...)
//! rather than calling fjall's `clear`: fjall journals a clear and replays
//! it on every open after any run registered since, which would empty a
//! rebuilt index again.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

use fjall::config::{PartitioningPolicy, PinningPolicy};
use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use super::pending::{Keys, Lookup, Pair};

/// How a keyspace is read, which decides what of its tables stays in
/// memory (fjall keeps a keyspace's options from its creation on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reads {
    /// Point reads of keys that are mostly absent or spread over the whole
    /// key space (object states: every new object asks for its state).
    /// Every table's bloom filter and block index stay in memory: fjall's
    /// default keeps them only for the first levels, and below those a
    /// lookup read (and checksummed) a table's whole filter, megabytes,
    /// through a 16 MiB cache; past about 5M events ingest fell to 3k
    /// events/s (27.7k over 10M with them pinned). The cost is the
    /// filters' bits per key (about 1.25 B per key below level 0) and the
    /// block indexes (about 1% of the keyspace's bytes).
    Point,
    /// Point reads behind a filter of its own in memory (the id index,
    /// behind the [`IdFilter`](super::id_filter)), which answers almost
    /// every "is this id new?" so that only its false positives (0.8%),
    /// duplicates and lookups by id reach the keyspace. Its filters are
    /// partitioned (a lookup loads one small partition, not a table's
    /// whole filter) and only level 0's stay in memory: pinning every
    /// level's, as for [`Reads::Point`], held 1.25 B per id twice over:
    /// a 10M-event ingest peaked at 334-335 MB with them, 320-324 MB
    /// without (its rate within the runs' noise).
    Filtered,
    /// Range scans (the time orders): no bloom filters (fjall consults
    /// them only for point reads, which these keyspaces never get; at 10M
    /// events building them was 7% of the compaction worker's samples, a
    /// worker that took up to half a core then), and block indexes
    /// partitioned at every level. fjall holds a table's top-level index
    /// in memory for the table's life, and unpartitioned (its default below
    /// level 3) that is the whole block index: the tables of all
    /// keyspaces held 4.6 MB of top-level indexes at ingest's peak over
    /// 6M events, against 0.2 MB at 1M (heaptrack), and the time orders'
    /// are there only for scans, which ingest never makes. A scan now
    /// reads the partitions it needs through the block cache.
    Range,
}

/// Size of the tables compaction writes (fjall's default is 64 MiB).
///
/// Writing a table holds memory in proportion to its size: the table's
/// filter collects one hash per key, and (as lsm-tree's writer reads; not
/// proven) a block index entry's key can be a slice of the input block it
/// was read from, which stays alive with it. At 64 MiB a
/// compaction held 44 MB of input blocks and 34 MB of hashes at ingest's
/// peak (heaptrack, 3M events), and compactions grow with the ledger.
/// Smaller tables bound that; fjall keeps a keyspace's options from its
/// creation, so ledgers made before keep theirs (until `annal reindex`).
const TABLE_BYTES: u64 = 4 << 20;

/// Runs in level 0 before they are merged into the level below (fjall's
/// default is 4), and the size ratio between levels (its default is 10).
///
/// Why: every run holds keys from the whole key space (ids are random,
/// and each run has every cluster's and type's newest times), so a merge
/// from level 0 rewrites all of level 1, whose size is `TABLE_BYTES *
/// L0_RUNS`. With fjall's defaults and a run per second, compaction
/// rewrote 64 MiB for every 2 MiB of new ids and its worker took a third
/// of ingest's CPU (34% over 4M- and 5M-event ingests, 37% in the middle
/// of a 10M one). With 16 runs of three seconds each (two since), level
/// 0 gathered about 48 s of keys before one merge: the worker used 14 s
/// of CPU over the 4M-event ingest instead of 114 s (docs/storage-experiments.md "Storage:
/// compaction of the key indexes"). The price is on reads: a lookup
/// checks up to 16 more bloom filters (pinned in memory), 9% of the
/// commit thread at 10M.
const L0_RUNS: u8 = 16;
const LEVEL_RATIO: f32 = 4.0;

impl Reads {
    /// How the keys waiting for a run are read: the time orders only by
    /// range.
    fn lookup(self) -> Lookup {
        match self {
            Reads::Point | Reads::Filtered => Lookup::ByKey,
            Reads::Range => Lookup::InOrder,
        }
    }

    fn options(self) -> KeyspaceCreateOptions {
        let base = KeyspaceCreateOptions::default().compaction_strategy(Arc::new(
            fjall::compaction::Leveled::default()
                .with_table_target_size(TABLE_BYTES)
                .with_l0_threshold(L0_RUNS)
                .with_level_ratio_policy(vec![LEVEL_RATIO]),
        ));
        match self {
            Reads::Point => base
                .filter_block_pinning_policy(PinningPolicy::all(true))
                .index_block_pinning_policy(PinningPolicy::all(true)),
            Reads::Filtered => base
                .filter_block_partitioning_policy(PartitioningPolicy::all(true))
                .index_block_pinning_policy(PinningPolicy::all(true)),
            Reads::Range => base
                .filter_policy(fjall::config::FilterPolicy::disabled())
                .index_block_partitioning_policy(PartitioningPolicy::all(true)),
        }
    }
}

/// One keyspace and the keys not yet in a run.
pub(crate) struct Buffered {
    db: Database,
    name: &'static str,
    reads: Reads,
    /// The generation in use and its keyspace.
    current: RwLock<(u32, Keyspace)>,
    pending: RwLock<Pending>,
    /// Keys on their way into a run (empty when none are): read after the
    /// pending ones, before the runs.
    frozen: Arc<RwLock<Arc<Keys>>>,
}

/// Keys frozen for a run, and where the run goes: what a mark writes on
/// its own thread.
pub(crate) struct Frozen {
    keyspace: Keyspace,
    keys: Arc<Keys>,
    slot: Arc<RwLock<Arc<Keys>>>,
}

impl Frozen {
    /// Writes the keys as one sorted run, then drops them from memory
    /// (readers find them in the run from then on).
    pub(crate) fn write(self) -> Result<(), fjall::Error> {
        self.write_run()?;
        self.release();
        Ok(())
    }

    fn write_run(&self) -> Result<(), fjall::Error> {
        if self.keys.is_empty() {
            return Ok(());
        }
        let mut run = self.keyspace.start_ingestion()?;
        for (k, v) in self.keys.sorted() {
            run.write(k, v)?;
        }
        run.finish()
    }

    fn release(self) {
        let mut slot = self.slot.write().unwrap_or_else(|p| p.into_inner());
        // Keys frozen since (after a run that failed, with these among
        // them) are not this run's to drop.
        if Arc::ptr_eq(&slot, &self.keys) {
            *slot = Arc::default();
        }
    }
}

struct Pending {
    keys: Keys,
    /// Bytes of keys and values (what a run will be, roughly).
    bytes: usize,
}

impl Pending {
    fn new(reads: Reads) -> Pending {
        Pending {
            keys: Keys::with_capacity(0, 0, reads.lookup()),
            bytes: 0,
        }
    }

    /// Empty, with room for as many keys as `last` held.
    fn after(last: &Pending) -> Pending {
        Pending {
            keys: Keys::with_capacity(last.keys.buffer_len(), last.keys.len(), last.keys.lookup()),
            bytes: 0,
        }
    }
}

impl Buffered {
    /// Opens the newest generation of keyspace `name`, dropping older
    /// ones (an emptying that stopped half way).
    pub(crate) fn open(
        db: &Database,
        name: &'static str,
        reads: Reads,
    ) -> Result<Buffered, fjall::Error> {
        let mut generations: Vec<u32> = db
            .list_keyspace_names()
            .iter()
            .filter_map(|n| generation(name, n))
            .collect();
        generations.sort_unstable();
        let newest = generations.last().copied().unwrap_or(0);
        for g in generations.iter().filter(|g| **g != newest) {
            let old = db.keyspace(&keyspace_name(name, *g), KeyspaceCreateOptions::default)?;
            db.delete_keyspace(old)?;
        }
        let keyspace = db.keyspace(&keyspace_name(name, newest), || reads.options())?;
        Ok(Buffered {
            db: db.clone(),
            name,
            reads,
            current: RwLock::new((newest, keyspace)),
            pending: RwLock::new(Pending::new(reads)),
            frozen: Arc::default(),
        })
    }

    fn keyspace(&self) -> Keyspace {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }

    /// Sets `key` to `value` (the newest write wins, pending or not).
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) {
        let mut p = self.write();
        match p.keys.insert(key, value) {
            Some(old) => p.bytes = (p.bytes + value.len()).saturating_sub(old),
            None => p.bytes += key.len() + value.len(),
        }
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, fjall::Error> {
        if let Some(v) = self.read().keys.get(key) {
            return Ok(Some(v.to_vec()));
        }
        if let Some(v) = self.frozen_keys().get(key) {
            return Ok(Some(v.to_vec()));
        }
        Ok(self.keyspace().get(key)?.map(|v| v.to_vec()))
    }

    /// Keys and values in `[start, end)`, in key order: the runs' and the
    /// pending ones merged (a key in both, written again by a replay,
    /// comes once, with its pending value). The pending ones in the range
    /// are copied when the iterator is made.
    pub(crate) fn range(
        &self,
        start: Vec<u8>,
        end: Vec<u8>,
    ) -> impl Iterator<Item = Result<Pair, fjall::Error>> + 'static {
        // An empty range (a scan from after its end): a `BTreeMap` panics
        // on it.
        let end = if end < start { start.clone() } else { end };
        self.merged((Bound::Included(start), Bound::Excluded(end)))
    }

    /// Every key and value, in key order.
    pub(crate) fn all(&self) -> impl Iterator<Item = Result<Pair, fjall::Error>> + 'static {
        self.merged((Bound::Unbounded, Bound::Unbounded))
    }

    fn merged(
        &self,
        bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    ) -> impl Iterator<Item = Result<Pair, fjall::Error>> + 'static {
        // Pending before frozen (the way keys move), the newer value of a
        // key in both kept.
        let pending = self.read().keys.range(&bounds);
        let frozen = self.frozen_keys();
        let pending: Vec<Pair> = match frozen.is_empty() {
            true => pending,
            false => {
                let mut both: BTreeMap<Vec<u8>, Vec<u8>> =
                    frozen.range(&bounds).into_iter().collect();
                both.extend(pending);
                both.into_iter().collect()
            }
        };
        let stored = self
            .keyspace()
            .range(bounds)
            .map(|guard| guard.into_inner().map(|(k, v)| (k.to_vec(), v.to_vec())));
        Merged {
            pending: pending.into_iter().peekable(),
            stored: stored.peekable(),
        }
    }

    /// Bytes waiting for the next run.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.read().bytes
    }

    /// Writes the pending keys as one sorted run and then forgets them
    /// (tests; a mark freezes them and writes the run on its thread).
    #[cfg(test)]
    pub(crate) fn flush(&self) -> Result<(), fjall::Error> {
        self.freeze().write()
    }

    /// Moves the pending keys aside for a run (see [`Frozen`]); new keys
    /// pend meanwhile. Keys still frozen (their run failed) go into this
    /// run too, the newer value of a key winning; runs must be written in
    /// the order they were frozen.
    pub(crate) fn freeze(&self) -> Frozen {
        let mut p = self.write();
        let mut slot = self.frozen.write().unwrap_or_else(|p| p.into_inner());
        let fresh = Pending::after(&p);
        let keys = std::mem::replace(&mut *p, fresh).keys;
        let keys = match slot.is_empty() {
            true => keys,
            false => {
                let mut both = Keys::clone(&slot);
                both.extend(&keys);
                both
            }
        };
        *slot = Arc::new(keys);
        Frozen {
            keyspace: self.keyspace(),
            keys: Arc::clone(&slot),
            slot: Arc::clone(&self.frozen),
        }
    }

    /// Empties the keyspace, runs and pending keys: the next generation
    /// replaces it. No frozen keys may be on their way into a run.
    pub(crate) fn clear(&self) -> Result<(), fjall::Error> {
        *self.write() = Pending::new(self.reads);
        *self.frozen.write().unwrap_or_else(|p| p.into_inner()) = Arc::default();
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        let next = current.0 + 1;
        let reads = self.reads;
        let fresh = self
            .db
            .keyspace(&keyspace_name(self.name, next), || reads.options())?;
        let old = std::mem::replace(&mut *current, (next, fresh)).1;
        self.db.delete_keyspace(old)
    }

    fn frozen_keys(&self) -> Arc<Keys> {
        Arc::clone(&self.frozen.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The keyspace itself (tests damage it).
    #[cfg(test)]
    pub(crate) fn stored(&self) -> Keyspace {
        self.keyspace()
    }

    /// Drops `key` from the pending keys (tests: damage that must reach
    /// the runs).
    #[cfg(test)]
    pub(crate) fn forget_pending(&self, key: &[u8]) {
        self.write().keys.remove(key);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Pending> {
        self.pending.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Pending> {
        self.pending.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// `name` for generation 0, `name.N` after.
fn keyspace_name(name: &str, generation: u32) -> String {
    match generation {
        0 => name.to_string(),
        g => format!("{name}.{g}"),
    }
}

/// The generation of keyspace `found` if it is one of `name`'s.
fn generation(name: &str, found: &str) -> Option<u32> {
    match found.strip_prefix(name)? {
        "" => Some(0),
        rest => rest.strip_prefix('.')?.parse().ok(),
    }
}

/// Two key-sorted streams as one, an equal key once (the pending value).
struct Merged<P: Iterator<Item = Pair>, S: Iterator<Item = Result<Pair, fjall::Error>>> {
    pending: std::iter::Peekable<P>,
    stored: std::iter::Peekable<S>,
}

impl<P, S> Iterator for Merged<P, S>
where
    P: Iterator<Item = Pair>,
    S: Iterator<Item = Result<Pair, fjall::Error>>,
{
    type Item = Result<Pair, fjall::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let stored = match self.stored.peek() {
            Some(Ok((k, _))) => Some(k),
            Some(Err(_)) => return self.stored.next(),
            None => None,
        };
        match (self.pending.peek(), stored) {
            (None, None) => None,
            (Some(_), None) => self.pending.next().map(Ok),
            (None, Some(_)) => self.stored.next(),
            (Some((p, _)), Some(s)) => match p.cmp(s) {
                std::cmp::Ordering::Less => self.pending.next().map(Ok),
                std::cmp::Ordering::Greater => self.stored.next(),
                std::cmp::Ordering::Equal => {
                    self.stored.next();
                    self.pending.next().map(Ok)
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keyspace(dir: &std::path::Path, reads: Reads) -> (fjall::Database, Buffered) {
        let db = fjall::Database::builder(dir).open().unwrap();
        let b = Buffered::open(&db, "k", reads).unwrap();
        (db, b)
    }

    #[test]
    fn runs_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (_db, b) = keyspace(dir.path(), Reads::Point);
            b.insert(b"a", b"1");
            b.flush().unwrap();
            b.insert(b"b", b"2");
            b.flush().unwrap();
            assert_eq!(b.get(b"a").unwrap(), Some(b"1".to_vec()));
        }
        let (_db, b) = keyspace(dir.path(), Reads::Point);
        assert_eq!(b.get(b"b").unwrap(), Some(b"2".to_vec()));
        assert_eq!(b.get(b"a").unwrap(), Some(b"1".to_vec()));
        // Emptied, then written: what was written after survives reopening
        // (a journaled clear would be replayed over it).
        b.clear().unwrap();
        assert_eq!(b.get(b"a").unwrap(), None);
        b.insert(b"c", b"3");
        b.flush().unwrap();
        drop((_db, b));
        let (_db, b) = keyspace(dir.path(), Reads::Point);
        assert_eq!(b.get(b"a").unwrap(), None);
        assert_eq!(b.get(b"c").unwrap(), Some(b"3".to_vec()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Against a BTreeMap, whatever a keyspace's read options: every get
        /// and range answers as the model, whichever keys were flushed
        /// into runs, which are frozen (their run not started, written but
        /// not yet released, or failed and frozen again) and which still
        /// wait.
        #[test]
        fn answers_as_a_sorted_map_across_runs(
            ops in prop::collection::vec((0u8..40, 0u8..4, 0u8..5), 1..120),
            reads in prop_oneof![Just(Reads::Point), Just(Reads::Filtered), Just(Reads::Range)],
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (_db, b) = keyspace(dir.path(), reads);
            let mut model = BTreeMap::new();
            // The run a mark would be writing, and whether it is written.
            let mut frozen: Option<(Frozen, bool)> = None;
            for (k, v, step) in ops {
                let key = vec![b'k', k];
                b.insert(&key, &[v]);
                model.insert(key, vec![v]);
                match step {
                    // A synchronous flush (a run still frozen failed).
                    1 => {
                        frozen = None;
                        b.flush().unwrap();
                    }
                    // A mark freezes (the run before it, if any, failed).
                    2 => frozen = Some((b.freeze(), false)),
                    // Its run is written, the keys not yet released.
                    3 => {
                        if let Some((f, written)) = &mut frozen {
                            f.write_run().unwrap();
                            *written = true;
                        }
                    }
                    // The mark's thread is done.
                    4 => {
                        if let Some((f, written)) = frozen.take() {
                            if !written {
                                f.write_run().unwrap();
                            }
                            f.release();
                        }
                    }
                    _ => {}
                }
                let probe = vec![b'k', k / 2];
                prop_assert_eq!(b.get(&probe).unwrap(), model.get(&probe).cloned());
                let (lo, hi) = (vec![b'k', k / 3], vec![b'k', k]);
                let got: Vec<_> = b.range(lo.clone(), hi.clone()).map(|kv| kv.unwrap()).collect();
                let want: Vec<_> = model.range(lo..hi).map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(got, want);
            }
            let all: Vec<_> = b.all().map(|kv| kv.unwrap()).collect();
            prop_assert_eq!(all, model.clone().into_iter().collect::<Vec<_>>());
            // Whatever was frozen and never released is in the next run.
            drop(frozen);
            b.flush().unwrap();
            drop(b);
            let b = Buffered::open(&_db, "k", reads).unwrap();
            let all: Vec<_> = b.all().map(|kv| kv.unwrap()).collect();
            prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
        }
    }
}
