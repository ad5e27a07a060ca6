//! Envelope v1: the one canonical event every annal source is normalized into.
//!
//! [`Envelope`] is the wire and storage shape (`schema: "annal.event/v1"`);
//! [`EventType`] names every `type` and [`data`] holds the typed `data` shape
//! of each. [`Envelope::parse`] is the single entry point for untrusted
//! bytes: it rejects unknown top-level fields, checks the per-type rules and
//! returns a [`ValidationError`] naming the JSON path that failed, so callers
//! can add the file and line.
//!
//! ```
//! let line = br#"{"schema":"annal.event/v1","id":"e1","type":"cluster.heartbeat",
//!   "time":"2026-11-01T10:00:00Z","cluster":"prod-eu1-a","data":{"agent":"a","version":"1"}}"#;
//! let env = annal_schemas::Envelope::parse(line).unwrap();
//! assert_eq!(env.cluster.as_deref(), Some("prod-eu1-a"));
//! ```
//!
//! The normative JSON Schema lives next to this crate in
//! `schemas/json/envelope.v1.schema.json`; a test keeps the two in step.
#![deny(missing_docs)]

mod api_error;
pub mod data;
mod envelope;
mod event_type;
mod node;
pub mod ownership;
mod timestamp;
mod validation;

pub use api_error::ErrorCode;
pub use envelope::{Actor, Envelope, EnvelopeRef, Header, SCHEMA_V1};
pub use event_type::{EventType, UnknownEventType};
pub use node::{key_order, Node};
pub use timestamp::{duration_seconds, InstantError, Timestamp, TimestampError};
pub use validation::ValidationError;

/// The JSON Schema (draft 2020-12) for Envelope v1 and every `data` shape.
pub const ENVELOPE_JSON_SCHEMA: &str = include_str!("../json/envelope.v1.schema.json");

#[cfg(test)]
mod json_schema_tests {
    use super::*;

    /// The JSON Schema is written by hand for outside consumers; this keeps it
    /// from drifting from the Rust types when a type is added.
    #[test]
    fn json_schema_covers_every_event_type_with_a_data_shape() {
        let schema: serde_json::Value = serde_json::from_str(ENVELOPE_JSON_SCHEMA).unwrap();
        let listed: Vec<&str> = schema["properties"]["type"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(listed, ours);
        let branches = schema["allOf"].as_array().unwrap();
        for t in EventType::ALL {
            let branch = branches
                .iter()
                .find(|b| b["if"]["properties"]["type"]["const"] == t.as_str())
                .unwrap_or_else(|| panic!("no data branch for {t}"));
            let reference = branch["then"]["properties"]["data"]["$ref"]
                .as_str()
                .unwrap();
            let def = reference.trim_start_matches("#/$defs/");
            assert!(
                schema["$defs"][def].is_object(),
                "{t} points at missing {def}"
            );
        }
        assert_eq!(schema["additionalProperties"], false);
    }
}
