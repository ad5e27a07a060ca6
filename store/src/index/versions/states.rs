//! Object states the writer keeps in memory, so that a new version of an
//! object it wrote recently does not read the object's state back from
//! the `objects` keyspace.
//!
//! Why: every version asks for its object's id and last details. At 10M
//! events over 1M objects those point reads in fjall (filters of up to 16
//! level-0 runs, a block index, a block read, checksummed and searched)
//! were 37% of the commit thread's samples (README "Storage: object
//! states kept in memory").
//!
//! Invariant: **a state held here is what the keyspace would answer for
//! its key, as this writer last wrote it.** States are put only after the
//! batch that made them is in the files and the keyspace; the writer drops
//! the whole cache whenever it drops its open files or the index is
//! emptied or reloaded.
//!
//! Layout: one table of [`ENTRIES`] 32-byte entries (32 MiB) in sets of
//! [`WAYS`], allocated zeroed, so that memory is taken page by page as
//! objects arrive (a fleet of 8k objects already touches most pages) and
//! never past the table. An entry holds 94 bits of a BLAKE3 digest of the
//! object's key (18 more choose the set), the object id, its details
//! offset and 64 bits of its details digest. A full set gives up an entry
//! not read since the set last had to make room (a second chance).

use super::ObjectState;

/// Entries per set: an object's state lives in one of these.
const WAYS: usize = 4;
/// Entries in the table: 1M, 32 MiB.
pub(crate) const ENTRIES: usize = 1 << 20;

/// Bit 0 of an entry's first word: the entry holds a state.
const HELD: u64 = 1;
/// Bit 1: read since its set last had to make room.
const READ: u64 = 2;

/// A digest of an object's key in the `objects` keyspace.
pub(super) type Digest = [u8; 16];

/// The digest of `key`.
pub(super) fn digest(key: &[u8]) -> Digest {
    let mut d = [0u8; 16];
    d.copy_from_slice(&blake3::hash(key).as_bytes()[..16]);
    d
}

/// Whether details whose digest is `held` are those whose digest is
/// `new`, by their first 64 bits (the cache keeps no more): a false match
/// is a 2^-64 chance per version.
pub(super) fn same_details(held: &[u8; 16], new: &[u8; 16]) -> bool {
    held[..8] == new[..8]
}

/// One entry, as four words: the key's first 62 digest bits with
/// [`HELD`] and [`READ`]; 32 more digest bits and the id; the details
/// offset; the details digest's first 64 bits.
type Entry = [u64; 4];

/// The cache (see the module doc).
pub(super) struct StateCache {
    entries: Vec<Entry>,
    sets: usize,
    /// States given up so far to make room (tests).
    #[cfg(test)]
    dropped: u64,
}

impl Default for StateCache {
    fn default() -> Self {
        StateCache::sized(ENTRIES)
    }
}

impl StateCache {
    /// A cache of `entries` (rounded up to a power of two of whole sets),
    /// allocated on the first put.
    pub(super) fn sized(entries: usize) -> StateCache {
        StateCache {
            entries: Vec::new(),
            sets: (entries.div_ceil(WAYS)).next_power_of_two(),
            #[cfg(test)]
            dropped: 0,
        }
    }

    /// The state of the object whose key has `digest`, if held.
    pub(super) fn get(&mut self, digest: &Digest) -> Option<ObjectState> {
        if self.entries.is_empty() {
            return None;
        }
        let (set, w0, w1) = self.place(digest);
        let e = self.entries[set..set + WAYS]
            .iter_mut()
            .find(|e| holds(e, w0, w1))?;
        e[0] |= READ;
        let mut details_hash = [0u8; 16];
        details_hash[..8].copy_from_slice(&e[3].to_le_bytes());
        Some(ObjectState {
            id: e[1] as u32,
            details: e[2],
            details_hash,
        })
    }

    /// Holds `state` for the object whose key has `digest`.
    pub(super) fn put(&mut self, digest: &Digest, state: &ObjectState) {
        if self.entries.is_empty() {
            // Zeroed, so the allocator hands out pages the kernel commits
            // only when written.
            self.entries = vec![[0u64; 4]; self.sets * WAYS];
        }
        let (set, w0, w1) = self.place(digest);
        let ways = &mut self.entries[set..set + WAYS];
        let way = match ways.iter().position(|e| holds(e, w0, w1)) {
            Some(w) => w,
            None => match ways.iter().position(|e| e[0] & HELD == 0) {
                Some(w) => w,
                None => {
                    #[cfg(test)]
                    {
                        self.dropped += 1;
                    }
                    // A second chance: the first not read since the last
                    // time, clearing the marks of those passed over.
                    let mut victim = None;
                    for (w, e) in ways.iter_mut().enumerate() {
                        if e[0] & READ == 0 {
                            victim = Some(w);
                            break;
                        }
                        e[0] &= !READ;
                    }
                    victim.unwrap_or(0)
                }
            },
        };
        let mut hash = [0u8; 8];
        hash.copy_from_slice(&state.details_hash[..8]);
        ways[way] = [
            w0,
            w1 | u64::from(state.id),
            state.details,
            u64::from_le_bytes(hash),
        ];
    }

    /// Bytes the table holds.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.entries.len() * std::mem::size_of::<Entry>()
    }

    /// The first entry of `digest`'s set, and the key's bits as an entry's
    /// first word (marked held) and second (the id's half empty).
    fn place(&self, digest: &Digest) -> (usize, u64, u64) {
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&digest[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let (a, b) = (word(0), word(8));
        // `sets` is a power of two; the set takes the digest's last bits.
        let set = ((b >> 32) as usize & (self.sets - 1)) * WAYS;
        (set, (a << 2) | HELD, b << 32)
    }
}

/// Whether entry `e` holds the key whose first words (from
/// [`StateCache::place`]) are `w0` and `w1`.
fn holds(e: &Entry, w0: u64, w1: u64) -> bool {
    e[0] & !READ == w0 && e[1] >> 32 == w1 >> 32
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    fn state(id: u32, details: u64, h: u8) -> ObjectState {
        ObjectState {
            id,
            details,
            details_hash: [h; 16],
        }
    }

    #[test]
    fn the_table_is_32_mib() {
        assert_eq!(std::mem::size_of::<Entry>() * ENTRIES, 32 << 20);
    }

    proptest! {
        /// Against a HashMap of every put: a get answers the last state
        /// put for its key or nothing, never another key's or an older
        /// one, and nothing only if the cache gave states up; the table
        /// never passes its size.
        #[test]
        fn held_states_are_the_last_put(
            ops in prop::collection::vec((0u16..600, any::<bool>(), 0u64..1_000_000), 1..3_000),
            size in prop::sample::select(vec![4usize, 60, 64, 1 << 12]),
        ) {
            let mut cache = StateCache::sized(size);
            let mut model: HashMap<u16, ObjectState> = HashMap::new();
            for (key, is_put, value) in ops {
                let d = digest(&key.to_be_bytes());
                if is_put {
                    let s = state(u32::from(key), value, (value % 251) as u8);
                    cache.put(&d, &s);
                    model.insert(key, s);
                } else {
                    match (cache.get(&d), model.get(&key)) {
                        (Some(got), Some(want)) => {
                            prop_assert_eq!(got.id, want.id);
                            prop_assert_eq!(got.details, want.details);
                            prop_assert!(same_details(&got.details_hash, &want.details_hash));
                        }
                        (Some(_), None) => prop_assert!(false, "a state never put for {}", key),
                        (None, Some(_)) => prop_assert!(cache.dropped > 0, "key {} lost", key),
                        (None, None) => {}
                    }
                }
                prop_assert!(cache.bytes() <= size.div_ceil(WAYS).next_power_of_two() * WAYS * 32);
            }
        }
    }

    #[test]
    fn a_full_set_gives_up_one_not_read_since() {
        // One set of four: five keys, the first read again before the fifth.
        let mut cache = StateCache::sized(WAYS);
        let keys: Vec<Digest> = (0u8..5).map(|k| digest(&[k])).collect();
        for (i, k) in keys[..4].iter().enumerate() {
            cache.put(k, &state(i as u32, 0, 0));
        }
        assert!(cache.get(&keys[0]).is_some());
        cache.put(&keys[4], &state(4, 0, 0));
        assert!(cache.get(&keys[0]).is_some(), "read since, kept");
        assert!(cache.get(&keys[1]).is_none(), "not read, given up");
        assert_eq!(cache.get(&keys[4]).map(|s| s.id), Some(4));
        assert_eq!(cache.dropped, 1);
    }

    #[test]
    fn no_details_and_large_ids_survive() {
        let mut cache = StateCache::sized(64);
        let d = digest(b"k");
        cache.put(&d, &state(u32::MAX - 1, u64::MAX, 0xab));
        let got = cache.get(&d).expect("held");
        assert_eq!((got.id, got.details), (u32::MAX - 1, u64::MAX));
        assert!(same_details(&got.details_hash, &[0xab; 16]));
        assert!(!same_details(&got.details_hash, &[0xac; 16]));
    }
}
