//! The store's error type.

use std::path::PathBuf;

/// Everything that can go wrong opening, writing or reading a ledger.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The data directory holds no ledger.
    #[error("no ledger at {}: run `annal init` first (or pass --data DIR)", .path.display())]
    NotInitialized {
        /// The data directory.
        path: PathBuf,
    },
    /// `init` on a directory that already holds a ledger.
    #[error("a ledger already exists at {}", .path.display())]
    AlreadyInitialized {
        /// The data directory.
        path: PathBuf,
    },
    /// Another process has the ledger open.
    #[error("the ledger at {} is in use by another process that publishes no view for readers (an older annal?): stop or upgrade it", .path.display())]
    Locked {
        /// The data directory.
        path: PathBuf,
    },
    /// What only the writing process holds, asked of a view beside it.
    #[error("the ledger at {} is written by process {pid}, which holds its databases; this command needs them: run it after that process stops (or through its HTTP API)", .path.display())]
    Beside {
        /// The data directory.
        path: PathBuf,
        /// The writer's process id.
        pid: u32,
    },
    /// The store opened read-only because it failed its open-time check.
    #[error("writes refused: {0}")]
    WritesRefused(String),
    /// Stored data that does not decode as annal wrote it.
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// A file-system error on a named path.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A key or checkpoint file that cannot be used.
    #[error("{}: {reason}", .path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An entry that cannot be canonicalized.
    #[error("cannot encode entry {index}: {source}")]
    Encode {
        /// Entry index.
        index: u64,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A proof that cannot be built (an index or size outside the log).
    #[error(transparent)]
    Proof(#[from] crate::proof::ProofError),
    /// A key index (`DATA/index/`) failed; it is a cache, rebuilt from the
    /// leaves by `annal reindex` (and on open when it cannot be read).
    #[error("key index {}: {reason}", .path.display())]
    Index {
        /// The index directory.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// A derived index failed a checksum or did not decode: it is
    /// rebuilt from the leaves, never trusted.
    #[error("key index {}: damaged ({reason}); it is rebuilt from the log", .path.display())]
    IndexDamaged {
        /// The index directory.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The embedded database failed (including "locked by another process").
    #[error("storage: {0}")]
    Sled(#[from] sled::Error),
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}
