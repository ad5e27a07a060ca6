//! Proof documents: the JSON an auditor takes away and checks with any
//! RFC 6962 verifier using BLAKE3 (`tools/verify_proof.py` is one, in
//! Python, that shares no code with annal).
//!
//! Every document carries the signed checkpoint it proves against, so a
//! verifier takes the tree size and root from a signature, never from the
//! proof. Hashes are lowercase hex; `leaf` is the entry's canonical bytes
//! (RFC 8785 JSON) as a string, so the verifier hashes exactly what the log
//! hashed.

pub mod http;

use annal_store::checkpoint::Checkpoint;
use annal_store::merkle::leaf_hash;
use annal_store::Store;
use serde_json::{json, Value};

use crate::QueryError;

/// Which entry an inclusion proof is for.
#[derive(Clone, Debug)]
pub enum Leaf {
    /// By log index.
    Index(u64),
    /// By envelope id.
    EventId(String),
}

/// The tree an inclusion or consistency proof leads to.
#[derive(Clone, Debug)]
pub enum Against {
    /// The latest signed checkpoint.
    Latest,
    /// A tree size (its checkpoint is the stored one or signed now).
    Size(u64),
    /// A signed checkpoint the caller holds (an auditor's saved one).
    Note(String),
}

/// The inclusion proof of one entry, as a JSON document.
pub fn inclusion(store: &Store, leaf: &Leaf, against: &Against) -> Result<Value, QueryError> {
    let index = match leaf {
        Leaf::Index(i) => *i,
        Leaf::EventId(id) => store
            .index_of(id)?
            .ok_or_else(|| QueryError::NotFound(format!("no event with id {id:?}")))?,
    };
    let (size, note) = resolve(store, against)?;
    let proof = store.inclusion_proof(index, size)?;
    let bytes = store
        .leaf_bytes(index)?
        .ok_or_else(|| QueryError::NotFound(format!("no entry at index {index}")))?;
    let leaf_text = String::from_utf8(bytes)
        .map_err(|_| QueryError::Execution(format!("entry {index} is not UTF-8")))?;
    let event_id = serde_json::from_str::<Value>(&leaf_text)
        .ok()
        .and_then(|v| v["event"]["id"].as_str().map(str::to_string));
    Ok(json!({
        "proof": "inclusion",
        "index": index,
        "tree_size": size,
        "event_id": event_id,
        "leaf": leaf_text,
        "leaf_hash": hex(&leaf_hash(leaf_text.as_bytes())),
        "path": proof.path.iter().map(|h| hex(h)).collect::<Vec<_>>(),
        "root": hex(&store.root_at(size)?),
        "checkpoint": note,
    }))
}

/// The consistency proof from the tree of `from` entries to `to`.
pub fn consistency(store: &Store, from: &Against, to: &Against) -> Result<Value, QueryError> {
    let (from_size, from_note) = resolve(store, from)?;
    let (to_size, to_note) = resolve(store, to)?;
    let proof = store.consistency_proof(from_size, to_size)?;
    Ok(json!({
        "proof": "consistency",
        "from_size": from_size,
        "to_size": to_size,
        "from_root": hex(&store.root_at(from_size)?),
        "to_root": hex(&store.root_at(to_size)?),
        "path": proof.path.iter().map(|h| hex(h)).collect::<Vec<_>>(),
        "from_checkpoint": from_note,
        "checkpoint": to_note,
    }))
}

/// The size and signed note a proof is against. A caller's note must agree
/// with this log at its size; if it does not, the log it was signed for is
/// not this one any more (rewritten or forked), and no proof is given.
fn resolve(store: &Store, against: &Against) -> Result<(u64, Option<String>), QueryError> {
    match against {
        Against::Latest => {
            let size = store.size();
            Ok((size, store.checkpoint_at(size)?))
        }
        Against::Size(size) => Ok((*size, store.checkpoint_at(*size)?)),
        Against::Note(note) => {
            let cp = Checkpoint::parse_unverified(note)
                .map_err(|e| QueryError::BadInput(format!("checkpoint: {e}")))?;
            let ours = store.root_at(cp.size)?;
            if ours != cp.root {
                return Err(QueryError::Diverged(format!(
                    "this log's root at size {} is {}, the checkpoint's is {}: the log was rewritten or forked since it was signed",
                    cp.size,
                    hex(&ours),
                    hex(&cp.root)
                )));
            }
            Ok((cp.size, Some(note.clone())))
        }
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
