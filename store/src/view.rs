//! Readers beside a writer.
//!
//! sled and fjall each lock their directory for one process, but the log
//! itself is append-only files (leaves, offsets, tree, version rows) that
//! any process can read. So after every commit the writer publishes a
//! small manifest, `DATA/view`, by atomic rename: the size its indexes
//! cover, the root and signed checkpoint at that size, and each cluster's
//! committed version-file lengths. A process that finds the ledger locked
//! opens a *view*: it reads the files up to the published size and never
//! writes. Every answer it gives is the writer's answer at that size.
//!
//! What a view cannot read is what lives only in the writer's databases:
//! the quarantine and the Kafka offsets (it says so), and the key indexes,
//! whose questions it answers by scanning the leaves instead (the id of an
//! entry, the entries of one cluster or type in valid-time order).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::index::versions::ClusterMeta;
use crate::index::ClusterMark;
use crate::merkle::{self, Hash};
use crate::StoreError;

/// The manifest's file name in the data directory.
const FILE: &str = "view";
/// Its layout version.
const FORMAT: u32 = 1;

/// What a writer published.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct View {
    format: u32,
    /// Entries covered.
    pub(crate) size: u64,
    /// Root at `size` (hex).
    root: String,
    /// The signed checkpoint for `size` (`None` while the log is empty).
    pub(crate) checkpoint: Option<String>,
    /// System time of the last entry (Unix microseconds).
    pub(crate) recorded_at: Option<i64>,
    /// The writer's process id, for messages.
    pub(crate) pid: u32,
    /// Version files of each cluster.
    pub(crate) clusters: Vec<ClusterMark>,
}

impl View {
    pub(crate) fn new(
        size: u64,
        root: &Hash,
        checkpoint: Option<String>,
        recorded_at: Option<i64>,
        clusters: Vec<ClusterMark>,
    ) -> View {
        View {
            format: FORMAT,
            size,
            root: merkle::to_hex(root),
            checkpoint,
            recorded_at,
            pid: std::process::id(),
            clusters,
        }
    }

    /// The root at `size`.
    pub(crate) fn root(&self) -> Result<Hash, StoreError> {
        merkle::from_hex(&self.root).ok_or_else(|| {
            StoreError::Corrupt(format!("the published view's root {:?}", self.root))
        })
    }

    /// Writes the manifest for readers (a temporary file renamed over the
    /// old one, so a reader sees one manifest or the other, never half).
    pub(crate) fn publish(&self, data: &Path) -> Result<(), StoreError> {
        let path = data.join(FILE);
        let tmp = data.join(format!("{FILE}.tmp"));
        let text = serde_json::to_vec(self)
            .map_err(|e| StoreError::Corrupt(format!("view manifest: {e}")))?;
        std::fs::write(&tmp, text).map_err(|e| StoreError::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))
    }

    /// Reads the manifest a writer published in `data`.
    pub(crate) fn read(data: &Path) -> Result<View, StoreError> {
        let path = data.join(FILE);
        let text = std::fs::read(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::Locked {
                    path: data.to_path_buf(),
                }
            } else {
                StoreError::io(&path, e)
            }
        })?;
        let view: View = serde_json::from_slice(&text).map_err(|e| {
            StoreError::Corrupt(format!("{}: not a view manifest ({e})", path.display()))
        })?;
        if view.format != FORMAT {
            return Err(StoreError::Corrupt(format!(
                "{}: view manifest format {}, this annal reads {FORMAT}",
                path.display(),
                view.format
            )));
        }
        Ok(view)
    }

    /// Where `cluster`'s version files are, under the versions directory.
    pub(crate) fn cluster(&self, versions: &Path, cluster: &str) -> Option<(PathBuf, ClusterMeta)> {
        self.clusters
            .iter()
            .find(|c| c.id == cluster)
            .map(|c| (versions.join(c.no.to_string()), c.lengths))
    }
}
