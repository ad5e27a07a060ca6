//! Derived indexes: caches over the log, each in its own sled tree.
//!
//! They are written after the log batch commits and carry a watermark (the
//! log size they cover). Losing them loses nothing: on open the store replays
//! the log from the watermark, and `annal reindex` rebuilds them from scratch.

use annal_schemas::{Envelope, EventType, Timestamp};

use crate::versions::{ClusterVersions, NewVersion, VersionIndex};
use crate::StoreError;

/// Reserved key holding a derived tree's watermark. No index key starts with
/// 0xFF: index keys start with UTF-8 text, which never contains that byte.
const WATERMARK_KEY: &[u8] = b"\xffwatermark";

/// What the derived indexes need from one event.
///
/// Ingest computes it on the decoding thread, next to the canonical bytes,
/// so the commit neither re-reads the batch from the log nor decodes it
/// again; a replay computes it from the stored entry.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    cluster: Option<String>,
    event_type: EventType,
    time: Timestamp,
    version: Option<NewVersion>,
}

impl Facts {
    pub(crate) fn of(event: &Envelope) -> Facts {
        Facts {
            cluster: event.cluster.clone(),
            event_type: event.event_type,
            time: event.time,
            version: NewVersion::of(event),
        }
    }
}

/// One derived index.
trait DerivedIndex: Send + Sync {
    /// The sled tree it lives in.
    fn tree_name(&self) -> &'static str;
    /// Adds the keys for the event at `index`.
    fn add(&self, index: u64, facts: &Facts, batch: &mut sled::Batch);
}

/// `cluster ‖ 0x00 ‖ valid time ‖ index`: one cluster's events in time order.
struct ByClusterTime;

/// `type ‖ 0x00 ‖ valid time ‖ index`: one event type in time order.
struct ByTypeTime;

impl DerivedIndex for ByClusterTime {
    fn tree_name(&self) -> &'static str {
        "idx.cluster_time"
    }
    fn add(&self, index: u64, facts: &Facts, batch: &mut sled::Batch) {
        let cluster = facts.cluster.as_deref().unwrap_or("");
        batch.insert(time_key(cluster, facts.time, index), &[]);
    }
}

impl DerivedIndex for ByTypeTime {
    fn tree_name(&self) -> &'static str {
        "idx.type_time"
    }
    fn add(&self, index: u64, facts: &Facts, batch: &mut sled::Batch) {
        batch.insert(time_key(facts.event_type.as_str(), facts.time, index), &[]);
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

/// The set of derived indexes of one store.
pub(crate) struct Derived {
    indexes: Vec<(Box<dyn DerivedIndex>, sled::Tree)>,
    versions: VersionIndex,
}

/// Which derived index a scan uses.
#[derive(Clone, Copy, Debug)]
pub enum ScanKey<'a> {
    /// Events of one cluster.
    Cluster(&'a str),
    /// Events of one type.
    Type(&'a str),
}

impl Derived {
    pub(crate) fn open(db: &sled::Db, versions: std::path::PathBuf) -> Result<Self, StoreError> {
        let all: Vec<Box<dyn DerivedIndex>> = vec![Box::new(ByClusterTime), Box::new(ByTypeTime)];
        let indexes = all
            .into_iter()
            .map(|ix| {
                let tree = db.open_tree(ix.tree_name())?;
                Ok((ix, tree))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Derived {
            indexes,
            versions: VersionIndex::open(db, versions)?,
        })
    }

    /// Names of the derived trees.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.indexes.iter().map(|(ix, _)| ix.tree_name()).collect();
        names.push(self.versions.tree_name());
        names
    }

    /// The log size every index covers (`None`: an interrupted apply left
    /// an index to rebuild from scratch).
    pub(crate) fn watermark(&self) -> Result<Option<u64>, StoreError> {
        let Some(mut low) = self.versions.watermark()? else {
            return Ok(None);
        };
        for (_, tree) in &self.indexes {
            let w = tree
                .get(WATERMARK_KEY)?
                .and_then(|v| crate::layout::u64_value(&v))
                .unwrap_or(0);
            low = low.min(w);
        }
        Ok(Some(low))
    }

    /// Adds the events at log indexes `first..` (so ending at log size
    /// `first + facts.len()`).
    pub(crate) fn apply(&self, first: u64, facts: &[Facts]) -> Result<(), StoreError> {
        let upto = first + facts.len() as u64;
        for (ix, tree) in &self.indexes {
            let mut batch = sled::Batch::default();
            for (index, f) in (first..).zip(facts) {
                ix.add(index, f, &mut batch);
            }
            batch.insert(WATERMARK_KEY, &upto.to_be_bytes());
            tree.apply_batch(batch)?;
        }
        self.versions.apply(
            (first..)
                .zip(facts)
                .filter_map(|(index, f)| f.version.as_ref().map(|v| (index, v))),
            upto,
        )
    }

    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        for (_, tree) in &self.indexes {
            tree.clear()?;
        }
        self.versions.clear()
    }

    /// Cluster ids with object versions.
    pub(crate) fn version_clusters(&self) -> Result<Vec<String>, StoreError> {
        self.versions.clusters()
    }

    /// A copy of one cluster's object versions.
    pub(crate) fn cluster_versions(
        &self,
        cluster: &str,
    ) -> Result<Option<ClusterVersions>, StoreError> {
        self.versions.cluster(cluster)
    }

    /// Log indexes of events under `key` with valid time in `[from, to)`.
    pub(crate) fn scan(
        &self,
        key: ScanKey<'_>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<u64, StoreError>> + '_ {
        let (tree_name, prefix) = match key {
            ScanKey::Cluster(c) => ("idx.cluster_time", c),
            ScanKey::Type(t) => ("idx.type_time", t),
        };
        let tree = self
            .indexes
            .iter()
            .find(|(ix, _)| ix.tree_name() == tree_name)
            .map(|(_, t)| t.clone());
        let mut start = prefix.as_bytes().to_vec();
        start.push(0);
        let mut end = start.clone();
        start.extend_from_slice(&sortable_micros(from.map_or(i64::MIN, |t| t.unix_micros())));
        match to {
            Some(t) => end.extend_from_slice(&sortable_micros(t.unix_micros())),
            None => {
                // Everything under the prefix: bump the 0x00 separator.
                if let Some(last) = end.last_mut() {
                    *last = 1;
                }
            }
        }
        tree.into_iter().flat_map(move |t| {
            t.range(start.clone()..end.clone()).map(|kv| {
                let (k, _) = kv?;
                k.len()
                    .checked_sub(8)
                    .and_then(|at| crate::layout::u64_value(&k[at..]))
                    .ok_or_else(|| StoreError::Corrupt("short derived index key".into()))
            })
        })
    }
}
