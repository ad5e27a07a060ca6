//! Log entries and their canonical leaf bytes.

use annal_schemas::{Envelope, Timestamp};
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// One stored event: the leaf of the Merkle log.
///
/// The leaf bytes are the RFC 8785 (JCS) canonical JSON of this struct,
/// `{"event":{...},"index":N,"recorded_at":"..."}`, so an auditor can
/// recompute them in any language from the JSON alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Position in the log, from 0.
    pub index: u64,
    /// System time: when the ledger committed the entry (UTC, microseconds).
    pub recorded_at: Timestamp,
    /// The envelope as accepted.
    pub event: Envelope,
}

impl Entry {
    /// The canonical leaf bytes.
    pub fn to_leaf_bytes(&self) -> Result<Vec<u8>, StoreError> {
        crate::canonical::to_vec(self).map_err(|source| StoreError::Encode {
            index: self.index,
            source,
        })
    }

    /// Decodes leaf bytes (not checking that they are canonical; see
    /// [`crate::verify`]).
    pub fn from_leaf_bytes(bytes: &[u8]) -> Result<Entry, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}
