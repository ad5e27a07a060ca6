//! Derived indexes: caches over the log.
//!
//! [`Facts`] is what every derived index needs from one event. The key
//! indexes (ids and the cluster/type time orders) live in
//! [`crate::key_index`]; this module holds the object version index
//! ([`crate::versions`]), which follows each commit with a watermark of its
//! own. Losing any of them loses nothing: the store replays the log from
//! the watermark, and `annal reindex` rebuilds them from scratch.

use annal_schemas::{Envelope, EventType, Timestamp};

use crate::versions::{ClusterVersions, NewVersion, VersionIndex};
use crate::StoreError;

/// What the derived indexes need from one event.
///
/// Ingest computes it on the decoding thread, next to the canonical bytes,
/// so the commit neither re-reads the batch from the log nor decodes it
/// again; a replay computes it from the stored entry.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pub(crate) cluster: Option<String>,
    pub(crate) event_type: EventType,
    pub(crate) time: Timestamp,
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

/// The object version index of one store.
pub(crate) struct Derived {
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
        Ok(Derived {
            versions: VersionIndex::open(db, versions)?,
        })
    }

    /// Names of the derived trees.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        vec![self.versions.tree_name()]
    }

    /// The log size the version index covers (`None`: an interrupted apply
    /// left it to rebuild from scratch).
    pub(crate) fn watermark(&self) -> Result<Option<u64>, StoreError> {
        self.versions.watermark()
    }

    /// Adds the events at log indexes `first..` (so ending at log size
    /// `first + facts.len()`).
    pub(crate) fn apply(&self, first: u64, facts: &[Facts]) -> Result<(), StoreError> {
        let upto = first + facts.len() as u64;
        self.versions.apply(
            (first..)
                .zip(facts)
                .filter_map(|(index, f)| f.version.as_ref().map(|v| (index, v))),
            upto,
        )
    }

    pub(crate) fn clear(&self) -> Result<(), StoreError> {
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
}
