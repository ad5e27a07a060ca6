//! The mark: the one record that says what the indexes hold, in
//! `DATA/index/mark`, replaced whole (written beside, synced, renamed).
//!
//! It names the log size the indexes cover with the root the log had then,
//! and each cluster's version files with their lengths at that size. It is
//! written last, after the version files are synced and the key runs are
//! registered, so everything it names is on disk; runs or file bytes past
//! it (a crash between the two) are what the next open replays over.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::versions::ClusterMeta;
use crate::merkle::{self, Hash};
use crate::StoreError;

/// The mark's file name under the index directory.
pub(crate) const FILE: &str = "mark";

/// The layout of the indexes this annal writes: 4, keys in sorted runs,
/// the mark in its own file, and the point-read keyspaces created with
/// their filters and block indexes pinned (1: object versions in sled; 2:
/// every key through fjall's journal, the mark in a keyspace; 3: fjall's
/// default pinning, which fjall keeps for a keyspace's life, so moving to
/// 4 rebuilds the keyspaces).
pub(crate) const LAYOUT: u32 = 4;

/// What the indexes hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mark {
    pub(crate) layout: u32,
    /// Entries covered.
    pub(crate) size: u64,
    /// The log's root at `size`, hex.
    pub(crate) root: String,
    /// Clusters with version files, by number.
    pub(crate) clusters: Vec<ClusterMark>,
}

/// One cluster's version files at the mark (the lengths' fields stand
/// beside `id` and `no` in the JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClusterMark {
    pub(crate) id: String,
    pub(crate) no: u32,
    #[serde(flatten)]
    pub(crate) lengths: ClusterMeta,
}

impl Mark {
    pub(crate) fn new(size: u64, root: &Hash, clusters: Vec<ClusterMark>) -> Mark {
        Mark {
            layout: LAYOUT,
            size,
            root: merkle::to_hex(root),
            clusters,
        }
    }

    /// The root as bytes.
    pub(crate) fn root(&self) -> Option<Hash> {
        merkle::from_hex(&self.root)
    }

    /// The mark under `dir`: `Ok(None)` when there is none, `Err` (the
    /// reason) when it cannot be read.
    pub(crate) fn read(dir: &Path) -> Result<Option<Mark>, String> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Replaces the mark under `dir`, durably.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), StoreError> {
        let path = dir.join(FILE);
        let beside: PathBuf = dir.join(format!("{FILE}.new"));
        let bytes = serde_json::to_vec(self)
            .map_err(|e| StoreError::Corrupt(format!("the index mark: {e}")))?;
        let mut f = std::fs::File::create(&beside).map_err(|e| StoreError::io(&beside, e))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_data())
            .map_err(|e| StoreError::io(&beside, e))?;
        std::fs::rename(&beside, &path).map_err(|e| StoreError::io(&path, e))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io(dir, e))
    }

    /// Removes the mark (the indexes are being emptied).
    pub(crate) fn remove(dir: &Path) -> Result<(), StoreError> {
        let path = dir.join(FILE);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(&path, e)),
            _ => Ok(()),
        }
    }
}
