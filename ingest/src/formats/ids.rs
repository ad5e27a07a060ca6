//! Deterministic event ids: re-ingesting the same input appends nothing.
//!
//! Sources with their own unique ids use them (an audit event's `auditID`).
//! Everything else is content-addressed: the id hashes the event type, the
//! cluster, the valid time when it is part of the fact and came from the
//! record itself (a time taken from `--time` or the file's mtime would make
//! a re-read of the same bytes a new fact), and the canonical
//! (RFC 8785) bytes of the redacted `data`, so the same fact read from JSON
//! or YAML, in any key order, gets the same id.

use annal_schemas::{EventType, Timestamp};

use super::TimeSource;
use serde_json::Value;

/// `<prefix>:<128-bit hex>` from the event's content.
pub(super) fn content(
    prefix: &str,
    event_type: EventType,
    cluster: &str,
    time: Option<&(Timestamp, TimeSource)>,
    data: &Value,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(event_type.as_str().as_bytes());
    h.update(&[0]);
    h.update(cluster.as_bytes());
    h.update(&[0]);
    if let Some((t, TimeSource::Record)) = time {
        h.update(t.to_string().as_bytes());
    }
    h.update(&[0]);
    match annal_store::canonical::to_vec(data) {
        Ok(bytes) => h.update(&bytes),
        Err(_) => h.update(data.to_string().as_bytes()),
    };
    let hex = h.finalize().to_hex();
    format!("{prefix}:{}", &hex[..32])
}
