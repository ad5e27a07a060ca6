//! Keys waiting in memory for their run ([`runs`](super::runs)), held in
//! one buffer.
//!
//! Why: a key and its value used to be two heap allocations, in a B-tree
//! (the time orders) or a hash map (ids, object states) of such pairs.
//! Every event inserts three keys and most events write an object state:
//! the inserts, their allocations, and the frees on the mark's thread
//! (memory of another thread, which the allocator takes back through its
//! delayed lists) were about a fifth of the Kafka committer's samples.
//! Here a pair is appended to one buffer and its place is a number in a
//! hash table. The keys are sorted only when they are read in order: by a
//! range read (which copies the keys it returns) and by the mark's thread
//! for their run.
//!
//! Invariant: **a key has one entry, holding its newest value**, in keys
//! found by key. Inserting a key that is already held overwrites the value
//! in place when it has the same length; otherwise the pair is appended
//! and the entry points there, and the old bytes lie unused until the keys
//! are dropped.
//!
//! Keys that are only read in order (the time orders, whose keys end in a
//! log index, so that only a replay writes one again) have no hash table:
//! a pair is appended, and where a key was written twice the entry written
//! last wins when the keys are sorted. Inserts into the three keyspaces'
//! tables were 6% of the commit thread's samples (file ingest of 1M
//! envelopes), each insert a likely cache miss in a table of up to a
//! million keys, and two of the three per event went to the time orders,
//! for lookups that never came.

use std::hash::BuildHasher;
use std::ops::{Bound, RangeBounds};

use hashbrown::HashTable;

/// A key and its value, copied out.
pub(crate) type Pair = (Vec<u8>, Vec<u8>);

/// Where a pair lies in the buffer: the key, then the value.
#[derive(Clone, Copy)]
struct Entry {
    at: usize,
    key: u32,
    value: u32,
}

/// Keys and values in one buffer, found by key (or only read in order).
#[derive(Clone)]
pub(crate) struct Keys {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    /// Numbers of the entries (into `entries`), by their key's hash;
    /// `None` for keys only read in order.
    table: Option<HashTable<u32>>,
    hasher: foldhash::fast::RandomState,
}

impl Default for Keys {
    fn default() -> Keys {
        Keys::with_capacity(0, 0, Lookup::ByKey)
    }
}

/// How pending keys are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// By key, and in order.
    ByKey,
    /// Only in order: a range, or all of them for a run.
    InOrder,
}

impl Keys {
    /// Empty, with room for `keys` pairs of `bytes` bytes in all (the size
    /// of the keys before them, so that the buffer seldom grows).
    pub(crate) fn with_capacity(bytes: usize, keys: usize, lookup: Lookup) -> Keys {
        Keys {
            bytes: Vec::with_capacity(bytes),
            entries: Vec::with_capacity(keys),
            table: (lookup == Lookup::ByKey).then(|| HashTable::with_capacity(keys)),
            hasher: Default::default(),
        }
    }

    /// How these keys are read.
    pub(crate) fn lookup(&self) -> Lookup {
        match self.table {
            Some(_) => Lookup::ByKey,
            None => Lookup::InOrder,
        }
    }

    /// Entries held: the keys, and in keys read in order also each older
    /// write of a key written again.
    pub(crate) fn len(&self) -> usize {
        match &self.table {
            Some(table) => table.len(),
            None => self.entries.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the buffer in use (unused old values included).
    pub(crate) fn buffer_len(&self) -> usize {
        self.bytes.len()
    }

    /// The value of `key` (in keys read in order, by a scan from the
    /// newest entry: tests and rare reads only).
    pub(crate) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let (bytes, entries) = (&self.bytes, &self.entries);
        let n = match &self.table {
            Some(table) => *table.find(self.hasher.hash_one(key), |&n| {
                key_of(bytes, entries, n) == key
            })?,
            None => (0..entries.len() as u32)
                .rev()
                .find(|&n| key_of(bytes, entries, n) == key)?,
        };
        Some(value_of(bytes, entries, n))
    }

    /// Sets `key` to `value`; the length of the value it replaces, if the
    /// key was held.
    pub(crate) fn insert(&mut self, key: &[u8], value: &[u8]) -> Option<usize> {
        let Keys {
            bytes,
            entries,
            table,
            hasher,
        } = self;
        let Some(table) = table else {
            entries.push(append(bytes, key, value));
            return None;
        };
        let hash = hasher.hash_one(key);
        let slot = table.entry(
            hash,
            |&n| key_of(bytes, entries, n) == key,
            |&n| hasher.hash_one(key_of(bytes, entries, n)),
        );
        match slot {
            hashbrown::hash_table::Entry::Occupied(held) => {
                let e = &mut entries[*held.get() as usize];
                let old = e.value as usize;
                if old == value.len() {
                    let start = e.at + e.key as usize;
                    bytes[start..start + old].copy_from_slice(value);
                } else {
                    *e = append(bytes, key, value);
                }
                Some(old)
            }
            hashbrown::hash_table::Entry::Vacant(free) => {
                let n = entries.len() as u32;
                entries.push(append(bytes, key, value));
                free.insert(n);
                None
            }
        }
    }

    /// Drops `key` (tests, of keys found by key; its bytes stay unused).
    #[cfg(test)]
    pub(crate) fn remove(&mut self, key: &[u8]) {
        let hash = self.hasher.hash_one(key);
        let (bytes, entries) = (&self.bytes, &self.entries);
        let table = self
            .table
            .as_mut()
            .expect("remove is for keys found by key");
        if let Ok(held) = table.find_entry(hash, |&n| key_of(bytes, entries, n) == key) {
            held.remove();
        }
    }

    /// Takes in `newer`'s keys, its values winning.
    pub(crate) fn extend(&mut self, newer: &Keys) {
        for n in newer.numbers() {
            self.insert(
                key_of(&newer.bytes, &newer.entries, n),
                value_of(&newer.bytes, &newer.entries, n),
            );
        }
    }

    /// The numbers of the entries that hold a value: in keys found by key
    /// those in the table, in no order; in keys read in order all of them,
    /// oldest first (so that a key's last entry is its newest value).
    fn numbers(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match &self.table {
            Some(table) => Box::new(table.iter().copied()),
            None => Box::new(0..self.entries.len() as u32),
        }
    }

    /// Every key and value, in key order.
    ///
    /// Entry numbers are sorted (with a word of their key: 16 B per key,
    /// one keyspace at a time), not the pairs: the mark's thread sorts
    /// about three keys per event of the last two seconds, half a million
    /// or more at ingest's rate, which took 32 B per key as pairs of
    /// slices, at the time of ingest's peak of memory.
    pub(crate) fn sorted(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let (bytes, entries) = (&self.bytes, &self.entries);
        let rewritten = self.table.is_none();
        let mut order = self.order().into_iter().map(|(_, n)| n).peekable();
        std::iter::from_fn(move || loop {
            let n = order.next()?;
            // A key's entries lie together, the newest last: keep the last.
            if rewritten
                && order
                    .peek()
                    .is_some_and(|&m| key_of(bytes, entries, m) == key_of(bytes, entries, n))
            {
                continue;
            }
            return Some((key_of(bytes, entries, n), value_of(bytes, entries, n)));
        })
    }

    /// The entry numbers in key order (each beside the last word of its
    /// key it was sorted by), sorted eight key bytes at a time:
    /// each pass sorts numbers by a word of their keys' bytes, and the
    /// next pass only the runs that word left tied, by the next word.
    ///
    /// Why: compared as slices, each comparison reached into two entries
    /// and two keys (a cache miss each) and compared their bytes; keys of
    /// one keyspace share long beginnings (an event type, a cluster
    /// number), so most comparisons also ran over many equal bytes. That
    /// sort was 38% of the mark thread's samples in the Kafka bench.
    fn order(&self) -> Vec<(u64, u32)> {
        let mut items: Vec<(u64, u32)> = self
            .numbers()
            .map(|n| (word(key_of(&self.bytes, &self.entries, n), 0), n))
            .collect();
        items.sort_unstable();
        self.refine(&mut items, 0);
        items
    }

    /// Sorts each run of `items` tied at the word at `offset` by the
    /// words after it (whole keys compared where a key ends within it).
    fn refine(&self, items: &mut [(u64, u32)], offset: usize) {
        let key = |n: u32| key_of(&self.bytes, &self.entries, n);
        let mut start = 0;
        while start < items.len() {
            let tied = items[start..]
                .iter()
                .take_while(|(w, _)| *w == items[start].0)
                .count();
            let run = &mut items[start..start + tied];
            start += tied;
            if run.len() < 2 {
                continue;
            }
            if run.iter().any(|&(_, n)| key(n).len() <= offset + 8) {
                // A key ends here: the zero padding of its word cannot
                // tell it from a longer key with zero bytes.
                run.sort_unstable_by(|a, b| key(a.1).cmp(key(b.1)).then(a.1.cmp(&b.1)));
                continue;
            }
            for item in run.iter_mut() {
                item.0 = word(key(item.1), offset + 8);
            }
            run.sort_unstable();
            self.refine(run, offset + 8);
        }
    }

    /// Copies of the keys within `bounds`, in key order.
    pub(crate) fn range(&self, bounds: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> Vec<Pair> {
        let (bytes, entries) = (&self.bytes, &self.entries);
        let mut within: Vec<u32> = self
            .numbers()
            .filter(|&n| contains(bounds, key_of(bytes, entries, n)))
            .collect();
        // Equal keys (of keys read in order) by entry number, the newest last.
        within.sort_unstable_by(|&a, &b| {
            key_of(bytes, entries, a)
                .cmp(key_of(bytes, entries, b))
                .then(a.cmp(&b))
        });
        let mut pairs: Vec<Pair> = Vec::with_capacity(within.len());
        for n in within {
            let (k, v) = (key_of(bytes, entries, n), value_of(bytes, entries, n));
            match pairs.last_mut() {
                Some(last) if last.0 == k => last.1 = v.to_vec(),
                _ => pairs.push((k.to_vec(), v.to_vec())),
            }
        }
        pairs
    }
}

/// Whether `bounds` (of owned keys) holds `key`, compared as slices.
fn contains(bounds: &(Bound<Vec<u8>>, Bound<Vec<u8>>), key: &[u8]) -> bool {
    let above = match bounds.start_bound() {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match bounds.end_bound() {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// The eight key bytes from `offset`, big-endian (zeros past the end):
/// words compare as the bytes do.
fn word(key: &[u8], offset: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(rest) = key.get(offset..) {
        let n = rest.len().min(8);
        w[..n].copy_from_slice(&rest[..n]);
    }
    u64::from_be_bytes(w)
}

fn append(bytes: &mut Vec<u8>, key: &[u8], value: &[u8]) -> Entry {
    let at = bytes.len();
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(value);
    Entry {
        at,
        key: key.len() as u32,
        value: value.len() as u32,
    }
}

fn key_of<'a>(bytes: &'a [u8], entries: &[Entry], n: u32) -> &'a [u8] {
    let e = entries[n as usize];
    &bytes[e.at..e.at + e.key as usize]
}

fn value_of<'a>(bytes: &'a [u8], entries: &[Entry], n: u32) -> &'a [u8] {
    let e = entries[n as usize];
    let start = e.at + e.key as usize;
    &bytes[start..start + e.value as usize]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Against BTreeMaps: gets, the sorted pairs and ranges answer as
        /// the model, whatever was overwritten (with values of the same
        /// length or not) or removed, and after newer keys are merged in;
        /// keys read in order as keys found by key.
        #[test]
        fn answers_as_a_sorted_map(
            ops in prop::collection::vec((0u8..30, 0u8..4, prop::collection::vec(any::<u8>(), 0..4)), 1..150),
            cut in 0usize..150,
            lookup in prop_oneof![Just(Lookup::ByKey), Just(Lookup::InOrder)],
        ) {
            let mut keys = [Keys::with_capacity(0, 0, lookup), Keys::with_capacity(16, 2, lookup)];
            let mut models = [BTreeMap::new(), BTreeMap::new()];
            for (i, (k, op, v)) in ops.into_iter().enumerate() {
                let key: Vec<u8> = std::iter::repeat_n(b'k', 1 + (k % 3) as usize).chain([k]).collect();
                let which = usize::from(i >= cut);
                if lookup == Lookup::InOrder {
                    // Appended: no previous length is looked up.
                    prop_assert_eq!(keys[which].insert(&key, &v), None);
                    models[which].insert(key, v);
                } else if op == 0 {
                    keys[which].remove(&key);
                    models[which].remove(&key);
                } else {
                    let had = models[which].insert(key.clone(), v.clone());
                    prop_assert_eq!(keys[which].insert(&key, &v), had.map(|h| h.len()));
                }
            }
            let [mut older, newer] = keys;
            let [mut model, newer_model] = models;
            older.extend(&newer);
            model.extend(newer_model);
            if lookup == Lookup::ByKey {
                prop_assert_eq!(older.len(), model.len());
            }
            for (k, v) in &model {
                prop_assert_eq!(older.get(k), Some(v.as_slice()));
            }
            prop_assert_eq!(older.get(b"absent"), None);
            let sorted: Vec<Pair> = older.sorted().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(sorted, model.clone().into_iter().collect::<Vec<_>>());
            let (lo, hi) = (vec![b'k', 5], vec![b'k', b'k', 20]);
            let bounds = (Bound::Included(lo.clone()), Bound::Excluded(hi.clone()));
            let want: Vec<Pair> = model.range(lo..hi).map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(older.range(&bounds), want);
        }
    }

    proptest! {
        /// Keys that share long beginnings, end inside a word, or differ
        /// only by trailing zero bytes come out in byte order, each once,
        /// with its newest value.
        #[test]
        fn sorts_long_keys_with_shared_beginnings(
            keys in prop::collection::vec(
                (prop::sample::select(vec![&b""[..], b"object.observed\0", b"cluster-007\0\0\0\0\0"]),
                 prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0xff]), 0..20)),
                0..200),
            lookup in prop_oneof![Just(Lookup::ByKey), Just(Lookup::InOrder)],
        ) {
            let mut held = Keys::with_capacity(0, 0, lookup);
            let mut model = BTreeMap::new();
            for (i, (prefix, rest)) in keys.into_iter().enumerate() {
                let key: Vec<u8> = prefix.iter().copied().chain(rest).collect();
                let value = (i as u32).to_be_bytes();
                held.insert(&key, &value);
                model.insert(key, value.to_vec());
            }
            let sorted: Vec<Pair> = held.sorted().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(sorted, model.into_iter().collect::<Vec<_>>());
        }
    }
}
