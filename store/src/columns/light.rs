//! A leaf's top-level fields without decoding its `data`: what the sidecar
//! holds, read straight from the canonical bytes for the entries no chunk
//! holds yet (the tail, a damaged chunk, a chunk being built). serde skips
//! `data` without building it, except for the one `app` string.

use std::borrow::Cow;
use std::fmt;

use annal_schemas::{EventType, Timestamp};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::row::Row;
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
    #[serde(default)]
    data: App,
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

/// `data.app` when it is a string; every other key of `data` skipped.
#[derive(Default)]
struct App(Option<String>);

impl<'de> Deserialize<'de> for App {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<App, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = App;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the event's data")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<App, M::Error> {
                let mut app = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "app" {
                        app = match map.next_value::<serde_json::Value>()? {
                            serde_json::Value::String(s) => Some(s),
                            _ => None,
                        };
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(App(app))
            }
            // `data` that is not an object has no app.
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut s: S) -> Result<App, S::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(App(None))
            }
            fn visit_unit<E>(self) -> Result<App, E> {
                Ok(App(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<App, E> {
                Ok(App(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<App, E> {
                Ok(App(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<App, E> {
                Ok(App(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<App, E> {
                Ok(App(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<App, E> {
                Ok(App(None))
            }
        }
        d.deserialize_any(Keys)
    }
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
    let has_app =
        event_type.as_str().starts_with("app.") || event_type == EventType::ControllerMetrics;
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
            app: e.data.0.filter(|_| has_app),
        },
    })
}
