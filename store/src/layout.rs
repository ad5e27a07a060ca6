//! Where things live: the data directory and the keys inside the sled trees.
//!
//! ```text
//! DATA/ledger/                sled database
//!   tree "log"                the log proper, written in one atomic batch per commit:
//!     'L' ‖ u64be index       leaf bytes (JCS canonical entry)
//!     'H' ‖ u8 level ‖ u64be  complete Merkle node hashes (level 0 = leaf hashes)
//!     'I' ‖ id                envelope id → u64be index (idempotency)
//!     'M' ‖ name              meta: size, recorded_at, checkpoint
//!   tree "quarantine"         rejected input, keyed by content hash
//!   tree "idx.*"              derived indexes (caches, rebuilt by `annal reindex`)
//! DATA/keys/checkpoint.key    Ed25519 signing key, mode 0600
//! DATA/keys/checkpoint.vkey   its public key, for auditors
//! DATA/checkpoint             latest signed checkpoint (published after each commit)
//! ```

use std::path::{Path, PathBuf};

use crate::merkle::NodeId;

pub(crate) const LOG_TREE: &str = "log";
pub(crate) const QUARANTINE_TREE: &str = "quarantine";

pub(crate) const META_SIZE: &[u8] = b"Msize";
pub(crate) const META_RECORDED_AT: &[u8] = b"Mrecorded_at";
pub(crate) const META_CHECKPOINT: &[u8] = b"Mcheckpoint";
pub(crate) const LEAF_PREFIX: u8 = b'L';

/// Paths inside a data directory.
#[derive(Clone, Debug)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// A data directory rooted at `root` (it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DataDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The sled database directory.
    pub fn db(&self) -> PathBuf {
        self.root.join("ledger")
    }

    /// The directory of key files.
    pub fn keys(&self) -> PathBuf {
        self.root.join("keys")
    }

    /// The private signing key (mode 0600).
    pub fn signing_key(&self) -> PathBuf {
        self.keys().join("checkpoint.key")
    }

    /// The public verifier key.
    pub fn verifier_key(&self) -> PathBuf {
        self.keys().join("checkpoint.vkey")
    }

    /// The latest published checkpoint.
    pub fn checkpoint(&self) -> PathBuf {
        self.root.join("checkpoint")
    }
}

pub(crate) fn leaf_key(index: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = LEAF_PREFIX;
    k[1..].copy_from_slice(&index.to_be_bytes());
    k
}

pub(crate) fn leaf_index(key: &[u8]) -> Option<u64> {
    match key {
        [LEAF_PREFIX, rest @ ..] => rest.try_into().ok().map(u64::from_be_bytes),
        _ => None,
    }
}

pub(crate) fn node_key(id: NodeId) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[0] = b'H';
    k[1] = id.level;
    k[2..].copy_from_slice(&id.index.to_be_bytes());
    k
}

pub(crate) fn id_key(id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(id.len() + 1);
    k.push(b'I');
    k.extend_from_slice(id.as_bytes());
    k
}

pub(crate) fn u64_value(bytes: &[u8]) -> Option<u64> {
    bytes.try_into().ok().map(u64::from_be_bytes)
}
