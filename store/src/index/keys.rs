//! The key indexes: envelope id → log index (the idempotency check), and
//! each cluster's and each event type's entries in valid-time order.
//!
//! Every event adds one key to each, at random places in the id order. A
//! B-tree (sled, which held them first) rewrites a page per key on every
//! group commit, and that copy-on-write dominated ingest; an LSM tree
//! (fjall) writes sorted runs sequentially and answers the common
//! question, "is this id new?", from bloom filters. The keys reach fjall
//! in sorted runs ([`super::runs`]), not through its journal.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use annal_schemas::Timestamp;

use super::id_filter::{Filling, IdFilter};
use super::runs::{Buffered, Frozen};
use super::{index_error, Facts};
use crate::StoreError;

/// Which key index a scan uses.
#[derive(Clone, Copy, Debug)]
pub enum ScanKey<'a> {
    /// Events of one cluster.
    Cluster(&'a str),
    /// Events of one type.
    Type(&'a str),
}

/// The three keyspaces.
pub(crate) struct Keys {
    path: PathBuf,
    ids: Buffered,
    /// Answers "is this id new?" before the id index is asked.
    filter: Arc<IdFilter>,
    /// The filter's fill from the index, while under way.
    filling: Mutex<Filling>,
    cluster_time: Buffered,
    type_time: Buffered,
}

impl Keys {
    pub(super) fn new(
        path: &Path,
        ids: Buffered,
        cluster_time: Buffered,
        type_time: Buffered,
    ) -> Keys {
        Keys {
            path: path.to_path_buf(),
            ids,
            filter: Arc::new(IdFilter::new()),
            filling: Mutex::new(Filling::default()),
            cluster_time,
            type_time,
        }
    }

    /// Adds the keys of the entry at `index`.
    pub(super) fn add(&self, index: u64, id: &str, facts: &Facts) {
        self.filter.insert(id.as_bytes());
        self.ids.insert(id.as_bytes(), &index.to_be_bytes());
        let cluster = facts.cluster.as_deref().unwrap_or("");
        self.cluster_time
            .insert(&time_key(cluster, facts.time, index), &[]);
        self.type_time
            .insert(&time_key(facts.event_type.as_str(), facts.time, index), &[]);
    }

    /// Freezes the pending keys of each index for a run (written by
    /// [`Frozen::write`]).
    pub(super) fn freeze(&self) -> [Frozen; 3] {
        [&self.ids, &self.cluster_time, &self.type_time].map(Buffered::freeze)
    }

    /// Bytes of keys not yet in a run.
    pub(super) fn pending_bytes(&self) -> usize {
        [&self.ids, &self.cluster_time, &self.type_time]
            .iter()
            .map(|b| b.pending_bytes())
            .sum()
    }

    /// Empties the three indexes.
    pub(super) fn clear(&self) -> Result<(), StoreError> {
        for b in [&self.ids, &self.cluster_time, &self.type_time] {
            b.clear().map_err(|e| index_error(&self.path, e))?;
        }
        // Only once the ids are gone: a clear that failed half way leaves
        // the filter holding more ids than the index, which costs lookups,
        // never a wrong "new".
        self.filter.reset();
        Ok(())
    }

    /// Fills the id filter from the id index on a thread of its own (a
    /// writer's open: until it is done, the index answers every lookup).
    pub(super) fn fill_id_filter(&self) {
        let ids = self.ids.all().map(|kv| kv.map(|(id, _)| id));
        *self.filling.lock().unwrap_or_else(|p| p.into_inner()) = self.filter.fill(ids);
    }

    /// The id filter (tests).
    #[cfg(test)]
    pub(crate) fn id_filter(&self) -> &IdFilter {
        &self.filter
    }

    /// Waits for the id filter's fill to end (tests).
    #[cfg(test)]
    pub(crate) fn wait_for_id_filter(&self) {
        self.filling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .wait();
    }

    /// The log index of the entry with envelope id `id`.
    pub(crate) fn id(&self, id: &str) -> Result<Option<u64>, StoreError> {
        if self.filter.absent(id.as_bytes()) {
            return Ok(None);
        }
        let Some(v) = self
            .ids
            .get(id.as_bytes())
            .map_err(|e| index_error(&self.path, e))?
        else {
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

    /// The digest of every (id, log index) pair the id index holds (see
    /// [`IdDigest`]).
    pub(crate) fn id_digest(&self) -> Result<IdDigest, StoreError> {
        let mut digest = IdDigest::default();
        for kv in self.ids.all() {
            let (id, index) = kv.map_err(|e| index_error(&self.path, e))?;
            let index = <[u8; 8]>::try_from(&index[..]).map_err(|_| {
                StoreError::Corrupt(format!(
                    "{}: the id index holds a {}-byte value",
                    self.path.display(),
                    index.len()
                ))
            })?;
            digest.add(&id, u64::from_be_bytes(index));
        }
        Ok(digest)
    }

    /// (valid time in Unix microseconds, log index) of the entries under
    /// `key` with valid time in `[from, to)`, in that order: the key holds
    /// both, so coverage questions read no leaf.
    pub(crate) fn scan(
        &self,
        key: ScanKey<'_>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<(i64, u64), StoreError>> + 'static {
        let (keys, prefix) = match key {
            ScanKey::Cluster(c) => (&self.cluster_time, c),
            ScanKey::Type(t) => (&self.type_time, t),
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
        keys.range(start, end).map(move |kv| {
            let (key, _) = kv.map_err(|e| index_error(&path, e))?;
            let tail = |from_end: usize| {
                key.len()
                    .checked_sub(from_end)
                    .and_then(|at| <[u8; 8]>::try_from(key.get(at..at + 8)?).ok())
            };
            match (tail(16), tail(8)) {
                (Some(micros), Some(index)) => Ok((
                    (u64::from_be_bytes(micros) ^ (1 << 63)) as i64,
                    u64::from_be_bytes(index),
                )),
                _ => Err(StoreError::Corrupt("short time index key".into())),
            }
        })
    }

    /// Every cluster with an entry, in id order: one seek per cluster
    /// through the cluster/time keys (each seek lands on the cluster's
    /// first key and jumps past its prefix), not a read of every key.
    pub(crate) fn clusters(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        let mut start = Vec::new();
        // Cluster ids are UTF-8, which never holds 0xFF.
        while let Some(kv) = self.cluster_time.range(start.clone(), vec![0xFF]).next() {
            let (key, _) = kv.map_err(|e| index_error(&self.path, e))?;
            let Some(end) = key.iter().position(|b| *b == 0) else {
                return Err(StoreError::Corrupt(format!(
                    "{}: a time index key without its separator",
                    self.path.display()
                )));
            };
            start = key[..end].to_vec();
            start.push(1);
            if end > 0 {
                out.push(String::from_utf8_lossy(&key[..end]).into_owned());
            }
        }
        Ok(out)
    }

    /// Removes `id` from the id index (tests: a damaged index).
    #[cfg(test)]
    pub(crate) fn forget_id(&self, id: &str) -> Result<(), StoreError> {
        self.ids.forget_pending(id.as_bytes());
        self.ids
            .stored()
            .remove(id.as_bytes())
            .map_err(|e| index_error(&self.path, e))
    }

    /// Maps `id` to `index` (tests: a damaged index).
    #[cfg(test)]
    pub(crate) fn remap_id(&self, id: &str, index: u64) -> Result<(), StoreError> {
        self.ids.forget_pending(id.as_bytes());
        self.filter.insert(id.as_bytes());
        self.ids
            .stored()
            .insert(id.as_bytes(), index.to_be_bytes())
            .map_err(|e| index_error(&self.path, e))
    }
}

/// An order-independent digest of a set of (id, log index) pairs: their
/// count and the wrapping sum of a 128-bit hash of each (xxh3: the
/// digest guards a cache against damage, not against a forger, who could
/// as well rewrite the cache; BLAKE3 there cost a twentieth of verify). Verify computes
/// it over the leaves while it hashes them and compares it with the id
/// index's, one sequential read of the index instead of a lookup per
/// leaf; only when the two differ does it look the ids up one by one, to
/// name the first entry that is wrong.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdDigest {
    /// Pairs added.
    pub count: u64,
    sum: u128,
}

impl IdDigest {
    /// Adds the pair (`id`, `index`).
    pub fn add(&mut self, id: &[u8], index: u64) {
        let h = xxhash_rust::xxh3::xxh3_128_with_seed(id, index);
        self.count += 1;
        self.sum = self.sum.wrapping_add(h);
    }

    /// Both digests' pairs (of disjoint sets).
    pub fn merge(&mut self, other: IdDigest) {
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::runs::Reads;
    use annal_schemas::Envelope;
    use proptest::prelude::*;

    /// The generated instants' step: six hours.
    const STEP: i64 = 6 * 3_600_000_000;

    fn keys(dir: &Path) -> (fjall::Database, Keys) {
        let db = fjall::Database::builder(dir).open().unwrap();
        let open = |name| Buffered::open(&db, name, Reads::Range).unwrap();
        let keys = Keys::new(dir, open("ids"), open("cluster_time"), open("type_time"));
        (db, keys)
    }

    fn facts(cluster: &str, event_type: &str, micros: i64) -> Facts {
        let time = Timestamp::from_unix_micros(micros).unwrap();
        let data = match event_type {
            "cluster.heartbeat" => r#"{"agent":"a"}"#,
            _ => r#"{"display_name":"d"}"#,
        };
        Facts::of(
            &Envelope::parse(
                format!(
                    r#"{{"schema":"annal.event/v1","id":"x","type":"{event_type}",
                    "time":"{time}","cluster":"{cluster}","data":{data}}}"#
                )
                .as_bytes(),
            )
            .unwrap(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Against a list of (cluster, type, time, index): every scan of
        /// a cluster or a type, unbounded or bounded on either side,
        /// answers the model's entries in (time, index) order, whether
        /// their keys wait in memory or sit in runs (late entries, equal
        /// times, before 1970, and a scan from after its end, which
        /// panicked in the pending keys' `BTreeMap`).
        #[test]
        fn scans_answer_as_a_sorted_model(
            entries in prop::collection::vec(
                (0u8..3, any::<bool>(), -30i64..80, any::<bool>(), any::<bool>()),
                0..60,
            ),
            bounds in prop::collection::vec((prop::option::of(-40i64..90), prop::option::of(-40i64..90)), 1..6),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (_db, keys) = keys(dir.path());
            // Around 2026-11-01T00:00Z or around the epoch, in steps.
            let base = |epoch: bool| if epoch { 0 } else { 1_761_955_200_000_000i64 };
            let mut model = Vec::new();
            for (index, (c, heartbeat, steps, epoch, flush)) in entries.into_iter().enumerate() {
                let cluster = format!("c{c}");
                let event_type = if heartbeat { "cluster.heartbeat" } else { "cluster.registered" };
                let micros = base(epoch) + steps * STEP + i64::from(c);
                keys.add(index as u64, &format!("id{index}"), &facts(&cluster, event_type, micros));
                model.push((cluster, event_type, micros, index as u64));
                if flush {
                    for run in keys.freeze() {
                        run.write().unwrap();
                    }
                }
            }
            let mut clusters: Vec<String> = model.iter().map(|(c, ..)| c.clone()).collect();
            clusters.sort();
            clusters.dedup();
            prop_assert_eq!(keys.clusters().unwrap(), clusters);
            for (epoch, (from, to)) in [false, true].into_iter().zip(bounds.iter().cycle()) {
                let at = |h: &Option<i64>| h.map(|h| Timestamp::from_unix_micros(base(epoch) + h * STEP).unwrap());
                let (from, to) = (at(from), at(to));
                for key in ["c0", "c1", "c2", "cluster.heartbeat", "cluster.registered"] {
                    let scan = match key.starts_with("cluster.") {
                        true => ScanKey::Type(key),
                        false => ScanKey::Cluster(key),
                    };
                    // Times come back from the key as stored (before
                    // 1970 included), beside their indexes.
                    let got: Vec<(i64, u64)> = keys.scan(scan, from, to).map(|i| i.unwrap()).collect();
                    let mut want: Vec<(i64, u64)> = model
                        .iter()
                        .filter(|(c, t, m, _)| {
                            (c == key || *t == key)
                                && from.is_none_or(|f| *m >= f.unix_micros())
                                && to.is_none_or(|t| *m < t.unix_micros())
                        })
                        .map(|(_, _, m, i)| (*m, *i))
                        .collect();
                    want.sort_unstable();
                    prop_assert_eq!(got, want, "{} from {:?} to {:?}", key, from, to);
                }
            }
        }
    }
}
