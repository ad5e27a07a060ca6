//! The annal store: an append-only, BLAKE3-hashed Merkle log.
//!
//! [`Store`] is the one type most callers need: [`Store::init`] creates a
//! ledger and its Ed25519 checkpoint key, [`Store::open`] proves the
//! recovered tree extends the last signed checkpoint (or opens read-only and
//! says why), [`Store::append`] group-commits a batch of envelopes, and
//! [`Store::verify`] recomputes everything from the leaf bytes.
//!
//! The pieces are separate modules because auditors use them without the
//! store: [`merkle`] (RFC 6962 hashing with BLAKE3), [`proof`] (inclusion
//! and consistency proofs), [`Entry`] (the JCS leaf format) and
//! [`checkpoint`] (C2SP signed notes). sled holds only the small atomic
//! commit record; the indexes (ids, time orders, object versions: see
//! `index/`) are caches of the leaves, caught up from their mark on open
//! and rebuilt by [`Store::reindex`].
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use annal_store::Store;
//! Store::init(dir.path(), "annal.example/doc").unwrap();
//! let store = Store::open(dir.path()).unwrap();
//! let event = annal_schemas::Envelope::parse(br#"{"schema":"annal.event/v1","id":"e1",
//!   "type":"controlplane.fenced","time":"2026-11-01T10:00:00Z","data":{"controller":"argocd-old"}}"#).unwrap();
//! assert_eq!(store.append(vec![event.clone()]).unwrap().appended, 1);
//! assert_eq!(store.append(vec![event]).unwrap().duplicates, 1);
//! assert!(store.verify(None).unwrap().is_intact());
//! ```
#![deny(missing_docs)]

mod audit;
pub mod canonical;
pub mod checkpoint;
pub mod columns;
mod data_view;
mod entry;
mod error;
mod index;
mod keys;
mod layout;
mod leaf_check;
pub mod leaf_view;
mod leaves;
mod log;
pub mod merkle;
pub mod proof;
mod quarantine;
mod record_file;
mod syncer;
mod tree;
mod verify;
mod view;

pub use audit::KeyRotation;
pub use canonical::PreparedEvent;
pub use entry::Entry;
pub use error::StoreError;
pub use index::versions;
pub use index::{Compaction, ScanKey};
pub use layout::DataDir;
pub use log::{
    AppendOutcome, InitReport, RawLeaf, Rebuild, SourceOffset, Status, Store, DEFAULT_ORIGIN,
};
pub use quarantine::{Quarantine, QuarantineRecord, Rejection};
pub use verify::{Problem, VerifyReport};

#[cfg(test)]
mod tests;
