//! Chunk files held in memory, as checked, by a store that answers many
//! questions (`annal serve`, the bench's SQL runner): at most a budget of
//! bytes, the files read longest ago given up first.
//!
//! Why: a scan of a few columns of every chunk (human-writes-per-day at
//! 10M) spent a fifth of its time copying pages out of the page cache
//! (`pread`) into fresh buffers; a held file's pages are slices of its
//! bytes, with no system call and no copy. The first read of a file in a
//! process reads it whole to check its hash anyway: those bytes are what
//! is held. A held file is the one its manifest line names (the key is
//! its start and BLAKE3); one replaced on disk has another key, and one
//! cut or changed after it was checked is still answered as checked.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

/// Bytes a store that keeps chunks may hold: the sidecar of about 13M
/// entries (19.4 bytes each).
pub(crate) const HELD_BUDGET: usize = 256 << 20;

/// A file's key: its first entry and BLAKE3 (hex).
type Key = (u64, String);

/// The files held, within a budget (0, the default: none).
#[derive(Default)]
pub(crate) struct Held {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    budget: usize,
    used: usize,
    /// Each file's bytes and when it was last read.
    files: HashMap<Key, (Bytes, u64)>,
    clock: u64,
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds files from now on, within `budget` bytes.
    pub(crate) fn set_budget(&self, budget: usize) {
        self.lock().budget = budget;
    }

    /// Whether it holds anything at all (a budget was set).
    pub(crate) fn holding(&self) -> bool {
        self.lock().budget > 0
    }

    /// The bytes of `key`, if held.
    pub(crate) fn get(&self, key: &Key) -> Option<Bytes> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let (bytes, read) = inner.files.get_mut(key)?;
        *read = now;
        Some(bytes.clone())
    }

    /// Holds `bytes` as `key`, giving up the files read longest ago to
    /// stay within the budget; a file larger than the budget is not held.
    pub(crate) fn put(&self, key: Key, bytes: Bytes) {
        let mut inner = self.lock();
        if bytes.len() > inner.budget || inner.files.contains_key(&key) {
            return;
        }
        while inner.used + bytes.len() > inner.budget {
            let Some(oldest) = inner
                .files
                .iter()
                .min_by_key(|(_, (_, read))| *read)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((gone, _)) = inner.files.remove(&oldest) {
                inner.used -= gone.len();
            }
        }
        inner.clock += 1;
        let now = inner.clock;
        inner.used += bytes.len();
        inner.files.insert(key, (bytes, now));
    }

    /// Holds nothing (the sidecar was emptied).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.files.clear();
        inner.used = 0;
    }

    #[cfg(test)]
    fn used(&self) -> usize {
        self.lock().used
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// What it holds is what was put, within the budget, and a file
        /// just put is held whenever it fits.
        #[test]
        fn held_files_are_the_ones_put_within_the_budget(
            budget in 0usize..64,
            lens in proptest::collection::vec(1usize..24, 8),
            ops in proptest::collection::vec((0u64..8, any::<bool>()), 1..60),
        ) {
            let held = Held::default();
            held.set_budget(budget);
            // A file's bytes are its key's (a chunk's key names its bytes).
            let bytes = |start: u64| Bytes::from(vec![start as u8; lens[start as usize]]);
            for (start, put) in ops {
                let key = (start, format!("h{start}"));
                match put {
                    true => held.put(key.clone(), bytes(start)),
                    false => {
                        if let Some(b) = held.get(&key) {
                            prop_assert_eq!(b, bytes(start));
                        }
                    }
                }
                prop_assert!(held.used() <= budget);
                // The file just put is held if it fits at all.
                if put && lens[start as usize] <= budget {
                    prop_assert!(held.get(&key).is_some(), "{:?} lost", key);
                }
            }
        }
    }

    #[test]
    fn the_file_read_longest_ago_goes_first() {
        let held = Held::default();
        assert!(!held.holding());
        held.set_budget(30);
        let key = |n: u64| (n, format!("h{n}"));
        held.put(key(1), Bytes::from(vec![1; 10]));
        held.put(key(2), Bytes::from(vec![2; 10]));
        held.put(key(3), Bytes::from(vec![3; 10]));
        assert!(held.get(&key(1)).is_some());
        held.put(key(4), Bytes::from(vec![4; 10]));
        assert!(held.get(&key(2)).is_none(), "read longest ago");
        assert!(held.get(&key(1)).is_some() && held.get(&key(3)).is_some());
        held.put(key(5), Bytes::from(vec![5; 31]));
        assert!(held.get(&key(5)).is_none(), "larger than the budget");
        held.clear();
        assert!(held.get(&key(1)).is_none());
        assert_eq!(held.used(), 0);
    }
}
