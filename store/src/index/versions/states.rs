//! Object states the writer keeps in memory, so that a new version of an
//! object it wrote recently does not read the object's state back from
//! the `objects` keyspace.
//!
//! Why: every version asks for its object's id and last details. At 10M
//! events over 1M objects those point reads in fjall (filters of up to 16
//! level-0 runs, a block index, a block read, checksummed and searched)
//! were 37% of the commit thread's samples (docs/storage-experiments.md "Storage: object
//! states kept in memory").
//!
//! Invariant: **a state held here is what the keyspace would answer for
//! its key, as this writer last wrote it.** States are put only after the
//! batch that made them is in the files and the keyspace; the writer drops
//! the whole cache whenever it drops its open files or the index is
//! emptied or reloaded.
//!
//! Layout: one table of 24-byte entries (32 MiB, about 1.4M entries) in
//! sets of [`WAYS`], allocated zeroed, so that memory is taken page by
//! page as objects arrive (a fleet of 10k objects already touches most
//! pages) and never past the table. An entry holds 62 bits of a BLAKE3
//! digest of the object's key (64 more choose its two sets), the object
//! id, its details offset (40 bits) and 56 bits of its details digest.
//! A key lives in either of two sets, and a new key goes to the one with
//! room (two choices): at 1M objects, 72% of the entries, a single set
//! per key would overflow for about one object in ten (a Poisson
//! estimate), and each of those
//! cost a point read per batch. A full pair of sets gives up an entry not
//! read since the pair last had to make room (a second chance).

use super::ObjectState;

/// Entries per set.
const WAYS: usize = 4;
/// Bytes of the table: 32 MiB.
pub(crate) const BYTES: usize = 32 << 20;

/// Bit 0 of an entry's first word: the entry holds a state.
const HELD: u64 = 1;
/// Bit 1: read since its set last had to make room.
const READ: u64 = 2;
/// Details offsets an entry holds: below 2^40 (a TiB of one cluster's
/// details); the largest stands for "no details yet". A state whose
/// offset does not fit is not held.
const OFFSET_BITS: u32 = 40;
const NO_OFFSET: u64 = (1 << OFFSET_BITS) - 1;

/// A digest of an object's key in the `objects` keyspace.
pub(super) type Digest = [u8; 16];

/// The digest of `key`.
pub(super) fn digest(key: &[u8]) -> Digest {
    let mut d = [0u8; 16];
    d.copy_from_slice(&blake3::hash(key).as_bytes()[..16]);
    d
}

/// Whether details whose digest is `held` are those whose digest is
/// `new`, by their first 56 bits (the cache keeps no more): a false match
/// is a 2^-56 chance per version.
pub(super) fn same_details(held: &[u8; 16], new: &[u8; 16]) -> bool {
    held[..7] == new[..7]
}

/// One entry, as three words: the key's first 62 digest bits with
/// [`HELD`] and [`READ`]; the id and the details offset's low 32 bits;
/// the offset's high 8 bits and the details digest's first 56 bits.
type Entry = [u64; 3];

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
        // Whole sets within the bytes.
        StateCache::sized(BYTES / std::mem::size_of::<Entry>() / WAYS * WAYS)
    }
}

impl StateCache {
    /// A cache of `entries` (rounded up to whole sets), allocated on the
    /// first put.
    pub(super) fn sized(entries: usize) -> StateCache {
        StateCache {
            entries: Vec::new(),
            sets: entries.div_ceil(WAYS).max(1),
            #[cfg(test)]
            dropped: 0,
        }
    }

    /// The state of the object whose key has `digest`, if held.
    pub(super) fn get(&mut self, digest: &Digest) -> Option<ObjectState> {
        if self.entries.is_empty() {
            return None;
        }
        let (sets, tag) = self.place(digest);
        let e = self.find(sets, tag)?;
        let e = &mut self.entries[e];
        e[0] |= READ;
        let mut details_hash = [0u8; 16];
        details_hash[..7].copy_from_slice(&e[2].to_le_bytes()[1..]);
        Some(ObjectState {
            id: e[1] as u32,
            details: details_of((e[1] >> 32) | ((e[2] & 0xff) << 32)),
            details_hash,
        })
    }

    /// Holds `state` for the object whose key has `digest` (or, for a
    /// details offset an entry cannot hold, holds none for it).
    pub(super) fn put(&mut self, digest: &Digest, state: &ObjectState) {
        if self.entries.is_empty() {
            // Zeroed, so the allocator hands out pages the kernel commits
            // only when written.
            self.entries = vec![[0u64; 3]; self.sets * WAYS];
        }
        let (sets, tag) = self.place(digest);
        let held = self.find(sets, tag);
        let Some(offset) = offset_of(state.details) else {
            if let Some(e) = held {
                self.entries[e] = [0; 3];
            }
            return;
        };
        let e = match held {
            Some(e) => e,
            None => self.room(sets),
        };
        let mut hash = [0u8; 8];
        hash[1..].copy_from_slice(&state.details_hash[..7]);
        self.entries[e] = [
            tag,
            u64::from(state.id) | (offset << 32),
            (offset >> 32) | u64::from_le_bytes(hash),
        ];
    }

    /// The entry of `sets` that holds the key whose first word is `tag`.
    fn find(&self, sets: [usize; 2], tag: u64) -> Option<usize> {
        sets.into_iter().find_map(|s| {
            self.entries[s..s + WAYS]
                .iter()
                .position(|e| holds(e, tag))
                .map(|w| s + w)
        })
    }

    /// An entry of `sets` for a new key: a free one in the set with more
    /// room, or one given up.
    fn room(&mut self, sets: [usize; 2]) -> usize {
        let free = |s: usize| {
            self.entries[s..s + WAYS]
                .iter()
                .filter(|e| e[0] & HELD == 0)
                .count()
        };
        let s = if free(sets[1]) > free(sets[0]) {
            sets[1]
        } else {
            sets[0]
        };
        if let Some(w) = self.entries[s..s + WAYS]
            .iter()
            .position(|e| e[0] & HELD == 0)
        {
            return s + w;
        }
        #[cfg(test)]
        {
            self.dropped += 1;
        }
        // A second chance: the first not read since the last time,
        // clearing the marks of those passed over.
        for s in sets {
            for w in s..s + WAYS {
                let e = &mut self.entries[w];
                if e[0] & READ == 0 {
                    return w;
                }
                e[0] &= !READ;
            }
        }
        sets[0]
    }

    /// Bytes the table holds.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.entries.len() * std::mem::size_of::<Entry>()
    }

    /// The first entries of `digest`'s two sets, and the key's bits as an
    /// entry's first word (marked held).
    fn place(&self, digest: &Digest) -> ([usize; 2], u64) {
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&digest[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let (a, b) = (word(0), word(8));
        // Each half of `b` picks a set, scaled to the count (no modulo).
        let pick = |half: u64| ((half * self.sets as u64) >> 32) as usize * WAYS;
        ([pick(b >> 32), pick(b & 0xffff_ffff)], (a << 2) | HELD)
    }
}

/// A details offset as an entry holds it ([`NO_OFFSET`] for none), if it
/// fits.
fn offset_of(details: u64) -> Option<u64> {
    match details {
        super::NO_DETAILS => Some(NO_OFFSET),
        d if d < NO_OFFSET => Some(d),
        _ => None,
    }
}

/// The details offset an entry's bits stand for ([`offset_of`] undone).
fn details_of(offset: u64) -> u64 {
    if offset == NO_OFFSET {
        super::NO_DETAILS
    } else {
        offset
    }
}

/// Whether entry `e` holds the key whose first word (from
/// [`StateCache::place`]) is `tag`.
fn holds(e: &Entry, tag: u64) -> bool {
    e[0] & !READ == tag
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
    fn the_table_stays_within_32_mib() {
        let mut cache = StateCache::default();
        cache.put(&digest(b"k"), &state(1, 0, 0));
        assert!(cache.bytes() <= BYTES);
        assert!(cache.bytes() > BYTES - WAYS * std::mem::size_of::<Entry>());
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
                prop_assert!(cache.bytes() <= size.div_ceil(WAYS) * WAYS * std::mem::size_of::<Entry>());
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
        cache.put(&d, &state(u32::MAX - 1, super::super::NO_DETAILS, 0xab));
        let got = cache.get(&d).expect("held");
        assert_eq!(
            (got.id, got.details),
            (u32::MAX - 1, super::super::NO_DETAILS)
        );
        assert!(same_details(&got.details_hash, &[0xab; 16]));
        assert!(!same_details(&got.details_hash, &[0xac; 16]));
        let largest = NO_OFFSET - 1;
        cache.put(&d, &state(7, largest, 0xcd));
        let got = cache.get(&d).expect("held");
        assert_eq!((got.id, got.details), (7, largest));
    }

    #[test]
    fn a_state_whose_offset_does_not_fit_is_not_held() {
        let mut cache = StateCache::sized(64);
        let d = digest(b"k");
        cache.put(&d, &state(1, 10, 0));
        assert!(cache.get(&d).is_some());
        // The old state must go: a get must never answer it now.
        cache.put(&d, &state(1, NO_OFFSET, 0));
        assert!(cache.get(&d).is_none());
        cache.put(&d, &state(1, u64::MAX - 1, 0));
        assert!(cache.get(&d).is_none());
    }

    #[test]
    fn a_key_takes_the_set_with_room() {
        // Two sets of four, and eight keys that may each live in either:
        // all eight are held, where one set per key would hold four.
        let mut cache = StateCache::sized(2 * WAYS);
        let keys: Vec<Digest> = (0u8..8)
            .map(|k| {
                let mut d = [k; 16];
                // The second word's high half picks set 0, its low half
                // set 1 (see `place`).
                d[8..16].copy_from_slice(&(1u64 << 31).to_le_bytes());
                d
            })
            .collect();
        for k in &keys {
            assert_eq!(cache.place(k).0, [0, WAYS]);
        }
        for (i, k) in keys.iter().enumerate() {
            cache.put(k, &state(i as u32, 0, 0));
        }
        assert_eq!(cache.dropped, 0);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(cache.get(k).map(|s| s.id), Some(i as u32));
        }
    }
}
