//! `--format k8s-object`: Kubernetes objects → `object.observed`.
//!
//! Objects come from `kubectl get -o json|yaml` (single, `*List`,
//! multi-document) and watch streams. An object's valid time is `--time`,
//! else the newest `managedFields[].time` (the last write any manager made),
//! else the file's modification time; the choice is counted per run and
//! written into each event's `source`.

use annal_schemas::{EventType, Timestamp};
use serde_json::{Map, Value};

use super::time::{self, TimeSource};
use super::{Emitter, Event, Id};

/// An object, as a whole → `object.observed` on `--cluster`.
pub(super) fn observed(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let cluster = emit.cluster("this object")?;
    let time = object_time(&doc, emit);
    observed_on(doc, cluster, time, None, None, emit)
}

/// Records `doc` as observed on `cluster` at `time`.
pub(super) fn observed_on(
    mut doc: Value,
    cluster: String,
    time: (Timestamp, TimeSource),
    actor: Option<annal_schemas::Actor>,
    id: Option<String>,
    emit: &mut Emitter<'_, '_>,
) -> Result<(), String> {
    normalize(&mut doc);
    let id = id.map_or(Id::content("k8s-object", false), Id::Fixed);
    emit.emit(Event::new(EventType::ObjectObserved, id, time, cluster, doc).by(actor))
}

/// Records the deletion of the object `identity` names.
pub(super) fn deleted_on(
    identity: &Value,
    cluster: String,
    time: (Timestamp, TimeSource),
    actor: Option<annal_schemas::Actor>,
    id: Option<String>,
    emit: &mut Emitter<'_, '_>,
) -> Result<(), String> {
    let data = deletion_identity(identity);
    let id = id.map_or(Id::content("k8s-object", true), Id::Fixed);
    emit.emit(Event::new(EventType::ObjectDeleted, id, time, cluster, data).by(actor))
}

/// A watch event: `ADDED`/`MODIFIED` observe, `DELETED` deletes;
/// `BOOKMARK` and `ERROR` carry no object state.
pub(super) fn watch(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let Value::Object(mut map) = doc else {
        return Err("expected an object".into());
    };
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let object = map.remove("object").unwrap_or(Value::Null);
    match kind.as_str() {
        "ADDED" | "MODIFIED" => observed(object, emit).map_err(|e| format!("object: {e}")),
        "DELETED" => {
            let cluster = emit.cluster("this watch event")?;
            let time = object_time(&object, emit);
            deleted_on(&object, cluster, time, None, None, emit).map_err(|e| format!("object: {e}"))
        }
        "BOOKMARK" => {
            emit.skip("a watch BOOKMARK (a resourceVersion marker, no object)");
            Ok(())
        }
        _ => {
            emit.skip("a watch ERROR (the watch expired; no object)");
            Ok(())
        }
    }
}

/// `--time`, else the newest managedFields time, else the file time.
pub(super) fn object_time(doc: &Value, emit: &Emitter<'_, '_>) -> (Timestamp, TimeSource) {
    if let Some(t) = emit.ctx.time {
        return (t, TimeSource::Flag);
    }
    let newest = doc
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| time::field(e, "time"))
        .max();
    match newest {
        Some(t) => (t, TimeSource::ManagedFields),
        None => (emit.ctx.file_time, TimeSource::File),
    }
}

/// The identity fields of an object (`object.deleted` data).
fn deletion_identity(object: &Value) -> Value {
    let mut meta = Map::new();
    for key in ["name", "namespace", "uid", "resourceVersion"] {
        if let Some(v @ Value::String(_)) = object.pointer(&format!("/metadata/{key}")) {
            meta.insert(key.to_string(), v.clone());
        }
    }
    let mut out = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = object.get(key) {
            out.insert(key.to_string(), v.clone());
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    Value::Object(out)
}

/// Label and annotation values are strings in Kubernetes; YAML written by
/// hand sometimes leaves `true` or `1` unquoted, which the API server would
/// have turned into strings. Do the same rather than reject the object.
fn normalize(doc: &mut Value) {
    let Some(Value::Object(meta)) = doc.get_mut("metadata") else {
        return;
    };
    for field in ["labels", "annotations"] {
        if let Some(Value::Object(map)) = meta.get_mut(field) {
            for v in map.values_mut() {
                match v {
                    Value::Bool(_) | Value::Number(_) => *v = Value::String(v.to_string()),
                    Value::Null => *v = Value::String(String::new()),
                    _ => {}
                }
            }
        }
    }
}
