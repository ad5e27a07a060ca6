//! Where things live: the data directory and the keys inside the sled trees.
//!
//! ```text
//! DATA/log/<first index>.jsonl leaf files: one JCS canonical entry per line
//! DATA/log/offsets            20 bytes per leaf: segment u64, offset u64, length u32
//! DATA/log/tree               32-byte Merkle node hashes in in-order position (see tree.rs)
//! DATA/ledger/                sled database: the small commit record
//!   tree "log"                committed in one atomic batch per commit:
//!     'M' ‖ name              meta: size, recorded_at, checkpoint
//!     'O' ‖ source ‖ 0 ‖ partition  next offset to consume (Kafka), u64be
//!   tree "quarantine"         rejected input, keyed by content hash
//! DATA/index/                 the indexes (fjall, in sorted runs; derived,
//!                             see index/): ids, cluster and type time
//!                             orders, object states; `mark` (size, root,
//!                             version file lengths)
//! DATA/columns/              the columnar sidecar: Parquet chunks of the
//!                             envelope fields and their manifest (derived,
//!                             see columns/)
//! DATA/versions/<n>/          object version files, append-only (derived,
//!                             see index/versions/)
//! DATA/keys/checkpoint.key    Ed25519 signing key, mode 0600
//! DATA/keys/checkpoint.vkey   its public key, for auditors
//! DATA/checkpoint             latest signed checkpoint (published after each commit)
//! DATA/view                   what readers in other processes read (see view.rs)
//! ```

use std::path::{Path, PathBuf};

pub(crate) const LOG_TREE: &str = "log";
pub(crate) const QUARANTINE_TREE: &str = "quarantine";

/// The first layout kept each envelope id in the `log` tree as `'I' ‖ id`
/// and the time orders in these trees; a store that finds them moves them
/// to the key indexes and deletes them.
pub(crate) const ID_PREFIX: &[u8] = b"I";
pub(crate) const FIRST_LAYOUT_TREES: [&str; 2] = ["idx.cluster_time", "idx.type_time"];
/// The first and second layouts kept the object version index's state in
/// this tree (and 64-byte rows patched in place); a store that finds it
/// rebuilds the versions in the indexes and drops it.
pub(crate) const SECOND_LAYOUT_TREE: &str = "idx.versions";
pub(crate) const META_SIZE: &[u8] = b"Msize";
pub(crate) const META_RECORDED_AT: &[u8] = b"Mrecorded_at";
pub(crate) const META_CHECKPOINT: &[u8] = b"Mcheckpoint";
pub(crate) const OFFSET_PREFIX: u8 = b'O';

/// `'O' ‖ source ‖ 0x00 ‖ partition (i32be)`.
pub(crate) fn offset_key(source: &str, partition: i32) -> Vec<u8> {
    let mut k = offset_prefix(source);
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

/// `'O' ‖ source ‖ 0x00`: every partition of one source.
pub(crate) fn offset_prefix(source: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(source.len() + 6);
    k.push(OFFSET_PREFIX);
    k.extend_from_slice(source.as_bytes());
    k.push(0);
    k
}

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

    /// The directory of leaf files.
    pub fn leaves(&self) -> PathBuf {
        self.root.join("log")
    }

    /// The key indexes (ids, cluster and type time orders): derived.
    pub fn key_index(&self) -> PathBuf {
        self.root.join("index")
    }

    /// The columnar sidecar (a derived index).
    pub fn columns(&self) -> PathBuf {
        self.root.join("columns")
    }

    /// The object version index files (a derived index).
    pub fn versions(&self) -> PathBuf {
        self.root.join("versions")
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

    /// The key that signed before the last rotation (mode 0600); it
    /// co-signs checkpoints until [`DataDir::previous_until`].
    pub fn previous_signing_key(&self) -> PathBuf {
        self.keys().join("previous.key")
    }

    /// The public half of the previous key.
    pub fn previous_verifier_key(&self) -> PathBuf {
        self.keys().join("previous.vkey")
    }

    /// The end of the previous key's validity (one RFC 3339 line).
    pub fn previous_until(&self) -> PathBuf {
        self.keys().join("previous.until")
    }

    /// The latest published checkpoint.
    pub fn checkpoint(&self) -> PathBuf {
        self.root.join("checkpoint")
    }
}

pub(crate) fn u64_value(bytes: &[u8]) -> Option<u64> {
    bytes.try_into().ok().map(u64::from_be_bytes)
}
