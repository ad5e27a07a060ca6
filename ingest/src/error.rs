//! Errors: fatal ones stop ingest, rejections only skip a record.

use std::fmt;
use std::path::PathBuf;

use annal_store::StoreError;

/// An error that stops ingest (the input cannot be read, the store refuses).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// An input that cannot be opened or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The input.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The store failed or refused the batch.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A record that was not accepted. It names where it came from and why, and
/// carries the raw bytes for the quarantine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// File path, `-` for stdin, or another source name.
    pub source: String,
    /// 1-based line where the record starts.
    pub line: Option<u64>,
    /// Why (names the field when one is at fault).
    pub reason: String,
    /// The raw record.
    pub raw: Vec<u8>,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.source, line, self.reason),
            None => write!(f, "{}: {}", self.source, self.reason),
        }
    }
}
