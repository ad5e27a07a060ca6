//! The key indexes: envelope id → log index (the idempotency check), and
//! each cluster's and each event type's entries in valid-time order.
//!
//! Every event adds one key to each, at random places in the id order. A
//! B-tree (sled, which held them first) rewrites a page per key on every
//! group commit, and that copy-on-write dominated ingest; an LSM tree
//! (fjall) writes sorted runs sequentially and answers the common
//! question, "is this id new?", from bloom filters.

use std::path::{Path, PathBuf};

use annal_schemas::Timestamp;
use fjall::{Keyspace, OwnedWriteBatch as WriteBatch};

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
    pub(super) ids: Keyspace,
    pub(super) cluster_time: Keyspace,
    pub(super) type_time: Keyspace,
}

impl Keys {
    pub(super) fn new(
        path: &Path,
        ids: Keyspace,
        cluster_time: Keyspace,
        type_time: Keyspace,
    ) -> Keys {
        Keys {
            path: path.to_path_buf(),
            ids,
            cluster_time,
            type_time,
        }
    }

    /// Adds the keys of the entry at `index` to `batch`.
    pub(super) fn add(&self, batch: &mut WriteBatch, index: u64, id: &str, facts: &Facts) {
        batch.insert(&self.ids, id.as_bytes(), index.to_be_bytes());
        let cluster = facts.cluster.as_deref().unwrap_or("");
        batch.insert(&self.cluster_time, time_key(cluster, facts.time, index), []);
        batch.insert(
            &self.type_time,
            time_key(facts.event_type.as_str(), facts.time, index),
            [],
        );
    }

    /// The log index of the entry with envelope id `id`.
    pub(crate) fn id(&self, id: &str) -> Result<Option<u64>, StoreError> {
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
        self.ids
            .remove(id.as_bytes())
            .map_err(|e| index_error(&self.path, e))
    }

    /// Maps `id` to `index` (tests: a damaged index).
    #[cfg(test)]
    pub(crate) fn remap_id(&self, id: &str, index: u64) -> Result<(), StoreError> {
        self.ids
            .insert(id.as_bytes(), index.to_be_bytes())
            .map_err(|e| index_error(&self.path, e))
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
