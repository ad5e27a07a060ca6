//! An entry read in place from its leaf bytes: the envelope's top-level
//! fields borrowed from the line, and `data` as its canonical JSON text,
//! never built into a tree. For scans that return `data` as text or filter
//! on a few fields: parsing a leaf into an [`crate::Entry`] and printing
//! its `data` again cost most of such a scan.

use std::borrow::Cow;

use annal_schemas::{EventType, Timestamp};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::StoreError;

/// One leaf, borrowed.
#[derive(Debug)]
pub struct LeafView<'a> {
    /// Position in the log.
    pub index: u64,
    /// When the ledger committed it.
    pub recorded_at: Timestamp,
    /// The envelope's `id`.
    pub id: Cow<'a, str>,
    /// Its type.
    pub event_type: EventType,
    /// Its valid time.
    pub time: Timestamp,
    /// Its cluster.
    pub cluster: Option<Cow<'a, str>>,
    /// Its source.
    pub source: Option<Cow<'a, str>>,
    /// Its actor (every field `None` when it has none).
    pub actor: ActorView<'a>,
    /// `data` exactly as the leaf holds it (canonical JSON).
    pub data: &'a str,
}

/// The actor's fields, borrowed.
#[derive(Debug, Default, Deserialize)]
pub struct ActorView<'a> {
    /// `principal`.
    #[serde(default, borrow)]
    pub principal: Option<Cow<'a, str>>,
    /// `impersonated`.
    #[serde(default, borrow)]
    pub impersonated: Option<Cow<'a, str>>,
    /// `field_manager`.
    #[serde(default, borrow)]
    pub field_manager: Option<Cow<'a, str>>,
    /// `controller`.
    #[serde(default, borrow)]
    pub controller: Option<Cow<'a, str>>,
    /// `credential`.
    #[serde(default, borrow)]
    pub credential: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Leaf<'a> {
    index: u64,
    #[serde(borrow)]
    recorded_at: Cow<'a, str>,
    #[serde(borrow)]
    event: Event<'a>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    event_type: Cow<'a, str>,
    #[serde(borrow)]
    time: Cow<'a, str>,
    #[serde(default, borrow)]
    cluster: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    actor: Option<ActorView<'a>>,
    #[serde(borrow)]
    data: &'a RawValue,
}

impl<'a> LeafView<'a> {
    /// The leaf `bytes`, read in place.
    pub fn parse(bytes: &'a [u8]) -> Result<LeafView<'a>, StoreError> {
        let bad = |what: String| StoreError::Corrupt(format!("leaf: {what}"));
        let leaf: Leaf<'a> = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        let e = leaf.event;
        let time = |s: &str| {
            s.parse::<Timestamp>()
                .map_err(|err| bad(format!("entry {}: time {s:?}: {err}", leaf.index)))
        };
        Ok(LeafView {
            index: leaf.index,
            recorded_at: time(&leaf.recorded_at)?,
            id: e.id,
            event_type: e.event_type.parse().map_err(|_| {
                bad(format!(
                    "entry {}: unknown type {:?}",
                    leaf.index, e.event_type
                ))
            })?,
            time: time(&e.time)?,
            cluster: e.cluster,
            source: e.source,
            actor: e.actor.unwrap_or_default(),
            data: e.data.get(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Entry;

    #[test]
    fn a_view_says_what_the_decoded_entry_says() {
        let event = annal_schemas::Envelope::parse(
            br#"{"schema":"annal.event/v1","id":"e\"1","type":"object.observed","time":"2026-11-01T10:00:00Z",
            "cluster":"c1","source":"s","actor":{"principal":"al\u00efce","credential":"fp"},
            "data":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m","namespace":"d"},"n":1.5}}"#,
        )
        .unwrap();
        let entry = Entry {
            index: 7,
            recorded_at: "2026-11-01T10:00:01Z".parse().unwrap(),
            event,
        };
        let bytes = entry.to_leaf_bytes().unwrap();
        let v = LeafView::parse(&bytes).unwrap();
        assert_eq!(v.index, 7);
        assert_eq!(v.recorded_at, entry.recorded_at);
        assert_eq!(v.id, "e\"1");
        assert_eq!(v.event_type, entry.event.event_type);
        assert_eq!(v.time, entry.event.time);
        assert_eq!(v.cluster.as_deref(), Some("c1"));
        assert_eq!(v.actor.principal.as_deref(), Some("alïce"));
        assert_eq!(v.actor.controller, None);
        assert_eq!(v.data, entry.event.data.to_string());
    }
}
