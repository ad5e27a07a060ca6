//! A leaf's sidecar fields without decoding its `data`: read in place
//! ([`LeafView`]) for the entries no chunk holds yet (the tail, a damaged
//! chunk, a chunk being built). `data` is parsed only for the entries whose
//! `data` has sidecar columns (`app.*`, `controller.metrics`).

use std::borrow::Cow;

use annal_schemas::{EventType, Timestamp};

use super::row::{app_in, has_app, Row};
use super::sync::Sync;
use crate::leaf_view::LeafView;
use crate::StoreError;

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
    let v = LeafView::parse(bytes)?;
    let own = |c: Option<Cow<str>>| c.map(Cow::into_owned);
    let data: Option<serde_json::Value> =
        match has_app(v.event_type) {
            true => Some(serde_json::from_str(v.data).map_err(|err| {
                StoreError::Corrupt(format!("leaf: entry {}: data: {err}", v.index))
            })?),
            false => None,
        };
    let a = v.actor;
    Ok(Fields {
        index: v.index,
        recorded_at: v.recorded_at,
        cluster: own(v.cluster),
        event_type: v.event_type,
        time: v.time,
        row: Row {
            source: own(v.source),
            principal: own(a.principal),
            impersonated: own(a.impersonated),
            field_manager: own(a.field_manager),
            controller: own(a.controller),
            credential: own(a.credential),
            app: data.as_ref().and_then(app_in),
            sync: data
                .as_ref()
                .filter(|_| v.event_type == EventType::AppSync)
                .map(|d| Box::new(Sync::of(d))),
            name: super::name::of_text(v.data),
        },
    })
}
