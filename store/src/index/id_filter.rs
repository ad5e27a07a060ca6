//! A filter in memory over every id the id index holds, so that the
//! question ingest asks of every event, "is this id new?", is answered
//! for almost every new id by bloom filters in memory (fastbloom) instead
//! of a lookup in the index.
//!
//! Why: the id index is an LSM tree (fjall). A lookup of an absent id
//! probes the bloom filter of every run in level 0 (up to 16, see
//! `runs::L0_RUNS`) and of one table per level below, each through
//! fjall's table list, block index and cache. With those lookups skipped
//! (an experiment on a dataset without duplicates), a 4M-event ingest's
//! commit thread used 48.9 s instead of 56.2 s, and the ingest took
//! 59.3 s instead of 68.1 s.
//!
//! Invariant: **while the filter is complete, every id the index holds
//! was inserted in it.** So "not in the filter" means new; anything else
//! (a possible match, or a filter not complete) asks the index. An index
//! that opens with ids in it starts incomplete; a writer fills it from
//! the index's keys on a thread of its own, and until that is done every
//! lookup asks the index. Emptying the index makes it complete (and
//! empty) at once.
//!
//! Memory: 10 bits (1.25 B) per id, in segments of [`SEGMENT_IDS`] ids
//! (5 MiB each) allocated as the ids come, at most [`MAX_SEGMENTS`]
//! (160 MiB, 128M ids). Past that the filter is dropped, its memory
//! freed, and every lookup asks the index again.

#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use fastbloom::BloomFilter;

/// Ids per segment.
pub(crate) const SEGMENT_IDS: u64 = 1 << 22;
/// Bits per id: with 7 hashes, about 0.8% false positives per segment.
const BITS_PER_ID: u64 = 10;
/// Segments at most (`MAX_SEGMENTS * SEGMENT_IDS` ids).
pub(crate) const MAX_SEGMENTS: usize = 32;

/// The filter and what it can answer.
pub(crate) struct IdFilter {
    inner: Mutex<Inner>,
    segment_ids: u64,
    max_segments: usize,
    /// Lookups the filter answered "new" (tests: the filter is used).
    #[cfg(test)]
    answered: AtomicU64,
}

struct Inner {
    segments: Vec<BloomFilter>,
    /// Ids in the newest segment.
    in_last: u64,
    state: State,
    /// Counts emptyings, so that a fill begun before one is ignored.
    epoch: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The index may hold ids the filter lacks (opened, not yet filled).
    Incomplete,
    /// Every id in the index is in the filter.
    Complete,
    /// Past [`MAX_SEGMENTS`]: dropped for good (until the index is
    /// emptied).
    Dropped,
}

/// The hash the filter keys on (the same for every segment).
pub(crate) fn hash(id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id)
}

impl IdFilter {
    pub(crate) fn new() -> IdFilter {
        IdFilter::sized(SEGMENT_IDS, MAX_SEGMENTS)
    }

    /// A filter of segments of `segment_ids` ids, at most `max_segments`
    /// (tests use small ones).
    pub(crate) fn sized(segment_ids: u64, max_segments: usize) -> IdFilter {
        IdFilter {
            inner: Mutex::new(Inner {
                segments: Vec::new(),
                in_last: 0,
                state: State::Incomplete,
                epoch: 0,
            }),
            segment_ids: segment_ids.max(1),
            max_segments: max_segments.max(1),
            #[cfg(test)]
            answered: AtomicU64::new(0),
        }
    }

    /// Whether `id` is certainly not in the index (`false`: ask it).
    pub(crate) fn absent(&self, id: &[u8]) -> bool {
        let inner = self.lock();
        if inner.state != State::Complete {
            return false;
        }
        let h = hash(id);
        let absent = !inner.segments.iter().any(|s| s.contains_hash(h));
        #[cfg(test)]
        if absent {
            self.answered.fetch_add(1, Ordering::Relaxed);
        }
        absent
    }

    /// Adds an id the index now holds.
    pub(crate) fn insert(&self, id: &[u8]) {
        let mut inner = self.lock();
        self.insert_locked(&mut inner, hash(id));
    }

    /// The index was emptied: nothing in it, nothing in the filter.
    pub(crate) fn reset(&self) {
        let mut inner = self.lock();
        inner.epoch += 1;
        inner.segments = Vec::new();
        inner.in_last = 0;
        inner.state = State::Complete;
    }

    /// Fills the filter from `ids` (every id the index held when the
    /// iterator was made) on a thread of its own; the filter is complete
    /// when it is done, unless the index was emptied meanwhile. Dropping
    /// the returned [`Filling`] stops and joins the thread.
    pub(crate) fn fill<I>(self: &Arc<Self>, ids: I) -> Filling
    where
        I: Iterator<Item = Result<Vec<u8>, fjall::Error>> + Send + 'static,
    {
        let epoch = {
            let inner = self.lock();
            if inner.state != State::Incomplete {
                return Filling::default();
            }
            inner.epoch
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (filter, halt) = (Arc::clone(self), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("annal-id-filter".into())
            .spawn(move || filter.fill_from(epoch, ids, &halt));
        match thread {
            Ok(thread) => Filling {
                stop,
                thread: Some(thread),
            },
            // No thread: the filter stays incomplete, the index answers.
            Err(_) => Filling::default(),
        }
    }

    fn fill_from<I>(&self, epoch: u64, ids: I, stop: &AtomicBool)
    where
        I: Iterator<Item = Result<Vec<u8>, fjall::Error>>,
    {
        const CHUNK: usize = 4096;
        let mut hashes = Vec::with_capacity(CHUNK);
        for id in ids {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match id {
                Ok(id) => hashes.push(hash(&id)),
                // A key the index cannot read: the filter stays
                // incomplete, and the index answers every lookup.
                Err(_) => return,
            }
            if hashes.len() == CHUNK && !self.take(epoch, &mut hashes) {
                return;
            }
        }
        if self.take(epoch, &mut hashes) {
            let mut inner = self.lock();
            if inner.epoch == epoch && inner.state == State::Incomplete {
                inner.state = State::Complete;
            }
        }
    }

    /// Inserts `hashes` (and empties it) if the index was not emptied
    /// since `epoch`; whether it was not.
    fn take(&self, epoch: u64, hashes: &mut Vec<u64>) -> bool {
        let mut inner = self.lock();
        if inner.epoch != epoch {
            return false;
        }
        for h in hashes.drain(..) {
            self.insert_locked(&mut inner, h);
        }
        true
    }

    fn insert_locked(&self, inner: &mut Inner, h: u64) {
        if inner.state == State::Dropped {
            return;
        }
        if inner.segments.is_empty() || inner.in_last >= self.segment_ids {
            if inner.segments.len() >= self.max_segments {
                inner.segments = Vec::new();
                inner.state = State::Dropped;
                return;
            }
            let bits = (self.segment_ids * BITS_PER_ID) as usize;
            inner
                .segments
                .push(BloomFilter::with_num_bits(bits).expected_items(self.segment_ids as usize));
            inner.in_last = 0;
        }
        if let Some(last) = inner.segments.last_mut() {
            last.insert_hash(h);
            inner.in_last += 1;
        }
    }

    /// Whether the filter answers lookups (tests).
    #[cfg(test)]
    pub(crate) fn complete(&self) -> bool {
        self.lock().state == State::Complete
    }

    /// Lookups answered "new" so far (tests).
    #[cfg(test)]
    pub(crate) fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }

    /// Segments allocated (tests).
    #[cfg(test)]
    pub(crate) fn segments(&self) -> usize {
        self.lock().segments.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A fill under way; dropping it stops the thread and waits for it.
#[derive(Default)]
pub(crate) struct Filling {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Filling {
    /// Waits for the fill to end (tests).
    #[cfg(test)]
    pub(crate) fn wait(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Filling {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn ids(range: std::ops::Range<u32>) -> Vec<Vec<u8>> {
        range.map(|i| format!("id-{i}").into_bytes()).collect()
    }

    #[test]
    fn an_opened_filter_answers_nothing_until_filled() {
        let filter = Arc::new(IdFilter::sized(64, 8));
        filter.insert(b"new-since-open");
        // Ids the index held at open are not in it yet: no answer.
        assert!(!filter.absent(b"id-3"));
        let held = ids(0..300);
        let mut filling = filter.fill(held.clone().into_iter().map(Ok));
        filling.wait();
        assert!(filter.complete());
        for id in held.iter().chain([&b"new-since-open".to_vec()]) {
            assert!(!filter.absent(id), "{:?} held but answered absent", id);
        }
        let fresh = ids(10_000..11_000);
        let answered = fresh.iter().filter(|id| filter.absent(id)).count();
        // Five segments at ~0.8% false positives each.
        assert!(answered > 900, "only {answered} of 1000 new ids answered");
        assert_eq!(filter.answered(), answered as u64);
    }

    #[test]
    fn a_fill_that_fails_leaves_the_filter_to_the_index() {
        let filter = Arc::new(IdFilter::sized(64, 8));
        let broken = vec![
            Ok(b"a".to_vec()),
            Err(fjall::Error::Poisoned),
            Ok(b"b".to_vec()),
        ];
        filter.fill(broken.into_iter()).wait();
        assert!(!filter.complete());
        assert!(!filter.absent(b"b"));
    }

    #[test]
    fn an_emptying_during_a_fill_wins() {
        let filter = Arc::new(IdFilter::sized(64, 8));
        // The fill's ids come after the index was emptied: they are not
        // taken, and the emptied filter answers.
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let mut filling = filter.fill(rx.into_iter().map(Ok));
        filter.reset();
        tx.send(b"old".to_vec()).unwrap();
        drop(tx);
        filling.wait();
        assert!(filter.complete());
        assert!(filter.absent(b"old"));
        assert_eq!(filter.segments(), 0);
    }

    #[test]
    fn past_its_bound_the_filter_is_dropped() {
        let filter = IdFilter::sized(16, 2);
        filter.reset();
        for id in ids(0..32) {
            filter.insert(&id);
        }
        assert_eq!(filter.segments(), 2);
        assert!(filter.complete());
        filter.insert(b"one-more");
        assert_eq!(filter.segments(), 0);
        assert!(!filter.complete());
        assert!(!filter.absent(b"never-seen"));
        // Emptying the index gives it back.
        filter.reset();
        assert!(filter.absent(b"never-seen"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Against a HashSet: an id inserted is never answered absent,
        /// before or after a fill, across segments and emptyings.
        #[test]
        fn never_answers_absent_for_a_held_id(
            ops in prop::collection::vec((0u16..400, 0u8..10), 1..400)
        ) {
            let filter = Arc::new(IdFilter::sized(32, 64));
            let mut model: HashSet<Vec<u8>> = HashSet::new();
            // What the index held at open.
            let opened: Vec<Vec<u8>> = (0..50u16).map(|i| format!("k{i}").into_bytes()).collect();
            model.extend(opened.iter().cloned());
            let mut pending_fill = Some(opened);
            for (k, op) in ops {
                let id = format!("k{k}").into_bytes();
                match op {
                    0 => {
                        filter.reset();
                        model.clear();
                        pending_fill = None;
                    }
                    1 => {
                        if let Some(held) = pending_fill.take() {
                            filter.fill(held.into_iter().map(Ok)).wait();
                        }
                    }
                    2..=5 => {
                        filter.insert(&id);
                        model.insert(id);
                    }
                    _ => {
                        if filter.absent(&id) {
                            prop_assert!(!model.contains(&id), "{:?} held, answered absent", id);
                        }
                    }
                }
            }
        }
    }
}
