//! Field ownership: who manages which fields of each object version, from
//! `metadata.managedFields` (server-side apply's record).
//!
//! `fieldsV1` is a trie whose keys are `f:<field>`, `k:<json key of a list
//! item>`, `v:<json set value>`, `i:<index>`, and `.` (the node itself).
//! It is flattened to one path per owned node, in a kubectl-like syntax:
//! `.spec.template.spec.containers[name="web"].image`, `.metadata.finalizers[="x"]`.

use annal_schemas::data::{KubeObject, ManagedFieldsEntry};
use annal_schemas::ownership;
use annal_schemas::{EventType, Timestamp};
use annal_store::Entry;
use serde_json::Value;

/// One manager's fields in one object version.
#[derive(Clone, Debug, PartialEq)]
pub struct ManagerFields {
    /// Stable cluster id.
    pub cluster: String,
    /// API group.
    pub group: String,
    /// API version of the object.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// The manager.
    pub manager: Option<String>,
    /// `Apply` or `Update`.
    pub operation: Option<String>,
    /// Subresource written through (`status`, `scale`, ...).
    pub subresource: Option<String>,
    /// When the manager last changed its fields (as given).
    pub time: Option<String>,
    /// The owned field paths.
    pub fields: Vec<String>,
    /// Valid time of the object version.
    pub valid_from: Timestamp,
    /// Log index of the object version.
    pub index: u64,
}

/// The managers of the object version `entry` records (none for other
/// events).
pub fn of_entry(entry: &Entry) -> Vec<ManagerFields> {
    let event = &entry.event;
    if event.event_type != EventType::ObjectObserved {
        return Vec::new();
    }
    let (Some(cluster), Ok(object)) = (
        event.cluster.clone(),
        serde_json::from_value::<KubeObject>(event.data.clone()),
    ) else {
        return Vec::new();
    };
    let meta = &object.metadata;
    let version = ownership::version_of(&object.api_version);
    meta.managed_fields
        .iter()
        .map(|m: &ManagedFieldsEntry| ManagerFields {
            cluster: cluster.clone(),
            group: ownership::group_of(&object.api_version).to_string(),
            version: version.to_string(),
            kind: object.kind.clone(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            manager: m.manager.clone(),
            operation: m.operation.clone(),
            subresource: m.subresource.clone(),
            time: m.time.clone(),
            fields: m.fields_v1.as_ref().map(field_paths).unwrap_or_default(),
            valid_from: event.time,
            index: entry.index,
        })
        .collect()
}

/// The paths of the nodes a `fieldsV1` trie owns, in trie order.
pub fn field_paths(fields_v1: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(fields_v1, &mut String::new(), &mut out);
    out
}

fn walk(node: &Value, path: &mut String, out: &mut Vec<String>) {
    let Some(children) = node.as_object() else {
        return;
    };
    if !path.is_empty() && (children.is_empty() || children.contains_key(".")) {
        out.push(path.clone());
    }
    for (key, child) in children {
        let len = path.len();
        match key.split_once(':') {
            Some(("f", field)) => {
                path.push('.');
                path.push_str(field);
            }
            Some(("k", json)) => path.push_str(&list_key(json)),
            Some(("v", json)) => {
                path.push_str("[=");
                path.push_str(json);
                path.push(']');
            }
            Some(("i", index)) => {
                path.push('[');
                path.push_str(index);
                path.push(']');
            }
            _ => continue, // "." (handled above) or a key newer servers add
        }
        walk(child, path, out);
        path.truncate(len);
    }
}

/// `{"name":"web","port":80}` → `[name="web",port=80]`.
fn list_key(json: &str) -> String {
    match serde_json::from_str::<serde_json::Map<String, Value>>(json) {
        Ok(fields) => {
            let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("[{}]", parts.join(","))
        }
        Err(_) => format!("[{json}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_flatten_to_paths() {
        let set: Value = serde_json::from_str(
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},
                "f:spec":{"f:template":{"f:spec":{"f:containers":{
                  "k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}},
                  "f:finalizers":{"v:\"example.com/x\"":{}},
                  "f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{}},
                  "f:args":{"i:0":{}}}}"#,
        )
        .unwrap();
        assert_eq!(
            field_paths(&set),
            [
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.template.spec.containers[name=\"web\"]",
                ".spec.template.spec.containers[name=\"web\"].image",
                ".spec.finalizers[=\"example.com/x\"]",
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.args[0]",
            ]
        );
        assert!(field_paths(&Value::Null).is_empty());
    }
}
