//! A leaf's top-level fields without decoding its `data`: what the sidecar
//! holds, read straight from the canonical bytes for the entries no chunk
//! holds yet (the tail, a damaged chunk, a chunk being built). serde skips
//! `data` without building it, except for the entries whose `data` has
//! sidecar columns (`app.*`, `controller.metrics`).

use std::borrow::Cow;

use annal_schemas::{EventType, Timestamp};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::row::{app_in, Row};
use super::sync::Sync;
use crate::StoreError;

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
    #[serde(rename = "type", borrow)]
    event_type: Cow<'a, str>,
    #[serde(borrow)]
    time: Cow<'a, str>,
    #[serde(default, borrow)]
    cluster: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    actor: Option<Actor<'a>>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Actor<'a> {
    #[serde(default, borrow)]
    principal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    impersonated: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    field_manager: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    controller: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    credential: Option<Cow<'a, str>>,
}

/// One entry's sidecar fields.
pub(crate) struct Fields {
    pub(crate) index: u64,
    pub(crate) recorded_at: Timestamp,
    pub(crate) cluster: Option<String>,
    pub(crate) event_type: EventType,
    pub(crate) time: Timestamp,
    pub(crate) row: Row,
}

/// The sidecar fields of the leaf `bytes`.
pub(crate) fn fields(bytes: &[u8]) -> Result<Fields, StoreError> {
    let bad = |what: String| StoreError::Corrupt(format!("leaf: {what}"));
    let leaf: Leaf = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let e = leaf.event;
    let event_type: EventType = e.event_type.parse().map_err(|_| {
        bad(format!(
            "entry {}: unknown type {:?}",
            leaf.index, e.event_type
        ))
    })?;
    let time = |s: &str| {
        s.parse::<Timestamp>()
            .map_err(|err| bad(format!("entry {}: time {s:?}: {err}", leaf.index)))
    };
    let actor = e.actor.unwrap_or_default();
    let own = |c: Option<Cow<str>>| c.map(Cow::into_owned);
    // Only these types' data has sidecar columns: the rest is never built.
    let has_app =
        event_type.as_str().starts_with("app.") || event_type == EventType::ControllerMetrics;
    let data: Option<serde_json::Value> = match e.data.filter(|_| has_app) {
        Some(raw) => Some(
            serde_json::from_str(raw.get())
                .map_err(|err| bad(format!("entry {}: data: {err}", leaf.index)))?,
        ),
        None => None,
    };
    Ok(Fields {
        index: leaf.index,
        recorded_at: time(&leaf.recorded_at)?,
        cluster: own(e.cluster),
        event_type,
        time: time(&e.time)?,
        row: Row {
            source: own(e.source),
            principal: own(actor.principal),
            impersonated: own(actor.impersonated),
            field_manager: own(actor.field_manager),
            controller: own(actor.controller),
            credential: own(actor.credential),
            app: data.as_ref().and_then(app_in),
            sync: data
                .as_ref()
                .filter(|_| event_type == EventType::AppSync)
                .map(|d| Box::new(Sync::of(d))),
        },
    })
}
