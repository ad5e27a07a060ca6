//! `--format k8s-event`: core/v1 and events.k8s.io/v1 Events → `k8s.event`.
//!
//! The two APIs name the same things differently (`involvedObject` /
//! `regarding`, `message` / `note`, `source.component` /
//! `reportingController`, `count` / `series.count` / `deprecatedCount`);
//! both map to one shape. An Event object is updated in place as it
//! repeats, so its id hashes the content with the last-seen time: each new
//! occurrence count is a new fact, a re-read of the same one is not.

use std::collections::BTreeMap;

use annal_schemas::EventType;
use serde_json::{json, Map, Value};

use super::time;
use super::{Emitter, Event, Id};

/// One Event object.
pub(super) fn event(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let cluster = emit.cluster("this Event")?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let api_version = s(&doc, "apiVersion").unwrap_or_else(|| "v1".into());
    let events_api = api_version.starts_with("events.k8s.io/");
    let meta = doc.get("metadata").cloned().unwrap_or(Value::Null);
    let involved = doc
        .get("involvedObject")
        .or_else(|| doc.get("regarding"))
        .ok_or(if events_api {
            "field `regarding`: missing"
        } else {
            "field `involvedObject`: missing"
        })?;
    let mut involved_ref = Map::new();
    let api = s(involved, "apiVersion").unwrap_or_default();
    let (group, version) = match api.rsplit_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api),
    };
    involved_ref.insert("group".into(), group.into());
    involved_ref.insert("version".into(), version.into());
    for (from, to) in [
        ("kind", "kind"),
        ("namespace", "namespace"),
        ("name", "name"),
        ("uid", "uid"),
        ("fieldPath", "field_path"),
    ] {
        if let Some(v) = s(involved, from) {
            involved_ref.insert(to.into(), v.into());
        }
    }
    let first_time = time::first(
        &doc,
        &["firstTimestamp", "deprecatedFirstTimestamp", "eventTime"],
    );
    let last_time = doc
        .pointer("/series/lastObservedTime")
        .and_then(time::parse)
        .or_else(|| {
            time::first(
                &doc,
                &[
                    "lastTimestamp",
                    "deprecatedLastTimestamp",
                    "eventTime",
                    "firstTimestamp",
                ],
            )
        });
    let own_time = last_time.or_else(|| time::field(&meta, "creationTimestamp"));
    let count = doc
        .pointer("/series/count")
        .or_else(|| doc.get("count"))
        .or_else(|| doc.get("deprecatedCount"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let reporting_controller = nonempty(s(&doc, "reportingController"))
        .or_else(|| nonempty(s(&doc, "reportingComponent")))
        .or_else(|| {
            doc.pointer("/source/component")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| {
            doc.pointer("/deprecatedSource/component")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let reporting_instance = nonempty(s(&doc, "reportingInstance"))
        .or_else(|| {
            doc.pointer("/source/host")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| {
            doc.pointer("/deprecatedSource/host")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let annotations: BTreeMap<String, String> = meta
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    let mut data = json!({
        "api_version": api_version,
        "name": s(&meta, "name").ok_or("field `metadata.name`: missing")?,
        "namespace": s(&meta, "namespace").unwrap_or_default(),
        "involved": involved_ref,
        "reason": s(&doc, "reason").unwrap_or_default(),
        "message": s(&doc, "message").or_else(|| s(&doc, "note")).unwrap_or_default(),
        "event_type": s(&doc, "type").unwrap_or_default(),
        "count": count,
    });
    let map = data.as_object_mut().expect("literal object");
    let opt = [
        ("reporting_controller", reporting_controller),
        ("reporting_instance", reporting_instance),
        ("action", nonempty(s(&doc, "action"))),
        ("first_time", first_time.map(|t| t.to_string())),
        ("last_time", last_time.map(|t| t.to_string())),
    ];
    for (k, v) in opt {
        if let Some(v) = v {
            map.insert(k.into(), v.into());
        }
    }
    if !annotations.is_empty() {
        map.insert("annotations".into(), json!(annotations));
    }
    let time = emit.time(own_time);
    let id = Id::content("k8s-event", true);
    emit.emit(Event::new(EventType::KubeEvent, id, time, cluster, data))
}

/// An OpenTelemetry log entry (stanza `k8s_event_input`, k8seventsreceiver)
/// whose `body` is the Event.
pub(super) fn otel(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let Value::Object(mut map) = doc else {
        return Err("expected an object".into());
    };
    let body = map.remove("body").ok_or("field `body`: missing")?;
    event(body, emit).map_err(|e| format!("body: {e}"))
}
