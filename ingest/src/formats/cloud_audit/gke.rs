//! `--format gke-audit`: GKE audit logs from Cloud Logging.
//!
//! GKE turns each Kubernetes audit event into a Cloud Audit Logs `LogEntry`
//! (`logName` `.../cloudaudit.googleapis.com%2Factivity` for writes,
//! `%2Fdata_access` for reads) whose `protoPayload` is a
//! `google.cloud.audit.AuditLog`. `gcloud logging read --format json`
//! writes a JSON array of them; a Pub/Sub or storage sink, one per line; a
//! BigQuery sink's export names the payload `protopayload_auditlog`, with
//! `requestJson`/`responseJson` strings. The entry is translated back into
//! the audit event it came from:
//!
//! | audit event | LogEntry |
//! |---|---|
//! | `auditID` | `operation.id` (else `insertId`) |
//! | `stage` | `ResponseStarted` when `operation.first` and not `.last`, else `ResponseComplete` |
//! | `verb` | the last segment of `protoPayload.methodName` (`io.k8s.core.v1.pods.create`) |
//! | `objectRef` | `protoPayload.resourceName` (`core/v1/namespaces/ns/pods/name[/subresource]`; `core` is the core group) |
//! | `requestURI` | `/` + `protoPayload.resourceName` of a non-resource request (`/healthz`), else none |
//! | `user.username` | `protoPayload.authenticationInfo.principalEmail` |
//! | `sourceIPs`, `userAgent` | `protoPayload.requestMetadata.callerIp`, `.callerSuppliedUserAgent` |
//! | `requestObject`, `responseObject` | `protoPayload.request`, `.response` (without `@type`) |
//! | `responseStatus.code` | a `Status` response's `code`, else `protoPayload.status.code` (a google.rpc code) as HTTP |
//! | `annotations` | `labels` |
//! | dry run (`?dryRun` in `requestURI`) | the `command.gke.io/dryRun` label |
//! | `stageTimestamp` | `timestamp` |
//!
//! What Cloud Logging does not keep is not invented: the request URI (so
//! no `?fieldManager=`), the user's groups, impersonation, and the HTTP
//! code of a successful request.
//!
//! See: <https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging>,
//! <https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry>,
//! <https://cloud.google.com/logging/docs/reference/audit/auditlog/rest/Shared.Types/AuditLog>
//! and <https://cloud.google.com/logging/docs/export/bigquery>.

use serde_json::{json, Map, Value};

use super::decode;
use crate::formats::{kind::json_type, Emitter};

/// The label GKE sets on dry-run requests.
const DRY_RUN_LABEL: &str = "command.gke.io/dryRun";

/// One `LogEntry`.
pub(in crate::formats) fn entry(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let Value::Object(mut entry) = doc else {
        return Err("expected an object".into());
    };
    let (mut payload, field) = match (
        entry.remove("protoPayload"),
        entry.remove("protopayload_auditlog"),
    ) {
        (Some(Value::Object(p)), _) => (p, "protoPayload"),
        (None, Some(Value::Object(p))) => (p, "protopayload_auditlog"),
        (Some(other), _) | (None, Some(other)) => {
            return Err(format!(
                "field `protoPayload`: expected an object, got {}",
                json_type(&other)
            ))
        }
        (None, None) => return Err("field `protoPayload`: missing".into()),
    };
    let service = payload
        .get("serviceName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if service != "k8s.io" {
        emit.skip(&format!(
            "a Cloud Audit Logs entry of service {service:?} (not a Kubernetes API request)"
        ));
        return Ok(());
    }
    let method = required(&payload, "methodName", field)?;
    let resource_name = required(&payload, "resourceName", field)?;
    let verb = method.rsplit('.').next().unwrap_or_default().to_string();
    // A non-resource request (`/healthz`, `/api`) names its path instead.
    let object_ref = object_ref(&resource_name, &method);
    let operation = entry.get("operation");
    let audit_id = operation
        .and_then(|o| o.get("id"))
        .and_then(Value::as_str)
        .or_else(|| entry.get("insertId").and_then(Value::as_str))
        .ok_or("field `operation.id`: missing (and no `insertId`)")?
        .to_string();
    let flag = |key: &str| {
        operation
            .and_then(|o| o.get(key))
            .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"))
    };
    let stage =
        if flag("first") && !flag("last") && operation.is_some_and(|o| o.get("last").is_some()) {
            "ResponseStarted"
        } else {
            "ResponseComplete"
        };
    let labels = labels(entry.get("labels"));
    let dry_run = labels
        .get(DRY_RUN_LABEL)
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());

    let request = body(&mut payload, "request", field)?;
    let response = body(&mut payload, "response", field)?;
    let status = payload.get("status");
    let rpc_code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let failure = response
        .as_ref()
        .filter(|r| r.get("kind").and_then(Value::as_str) == Some("Status"));
    let code = failure
        .and_then(|r| r.get("code"))
        .and_then(Value::as_u64)
        .filter(|c| *c >= 100)
        .or_else(|| http_of_rpc(rpc_code));
    let message = failure
        .and_then(|r| r.get("message"))
        .or_else(|| status.and_then(|s| s.get("message")))
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty());

    let mut native = Map::new();
    native.insert("kind".into(), "Event".into());
    native.insert("apiVersion".into(), "audit.k8s.io/v1".into());
    native.insert("auditID".into(), audit_id.into());
    native.insert("stage".into(), stage.into());
    native.insert("verb".into(), verb.into());
    if let Some(user) = payload
        .get("authenticationInfo")
        .and_then(|a| a.get("principalEmail"))
        .and_then(Value::as_str)
    {
        native.insert("user".into(), json!({ "username": user }));
    }
    let caller = payload.get("requestMetadata");
    if let Some(ip) = caller
        .and_then(|m| m.get("callerIp"))
        .and_then(Value::as_str)
    {
        native.insert("sourceIPs".into(), json!([ip]));
    }
    if let Some(ua) = caller
        .and_then(|m| m.get("callerSuppliedUserAgent"))
        .and_then(Value::as_str)
    {
        native.insert("userAgent".into(), ua.into());
    }
    let text = |key: &str| {
        object_ref
            .as_ref()
            .and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (group, version) = (text("apiGroup"), text("apiVersion"));
    match object_ref {
        Some(r) => {
            native.insert("objectRef".into(), r);
        }
        None => {
            let path = format!("/{}", resource_name.trim_start_matches('/'));
            native.insert("requestURI".into(), path.into());
        }
    }
    if code.is_some() || message.is_some() {
        let mut rs = Map::new();
        if let Some(c) = code {
            rs.insert("code".into(), c.into());
        }
        if let Some(m) = message {
            rs.insert("message".into(), m.into());
        }
        native.insert("responseStatus".into(), Value::Object(rs));
    }
    for (key, object) in [("requestObject", request), ("responseObject", response)] {
        if let Some(mut object) = object {
            typed(&mut object, &group, &version);
            native.insert(key.into(), object);
        }
    }
    if let Some(t) = entry.get("timestamp").and_then(timestamp) {
        native.insert("stageTimestamp".into(), t.into());
    }
    let annotations: Map<String, Value> = labels
        .into_iter()
        .filter(|(k, v)| k != DRY_RUN_LABEL && v.is_string())
        .collect();
    if !annotations.is_empty() {
        native.insert("annotations".into(), Value::Object(annotations));
    }
    let cluster = entry
        .get("resource")
        .and_then(|r| r.pointer("/labels/cluster_name"))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    decode(Value::Object(native), cluster, dry_run, emit)
}

fn required(payload: &Map<String, Value>, key: &str, field: &str) -> Result<String, String> {
    match payload.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(format!("field `{field}.{key}`: missing"))
        }
        Some(other) => Err(format!(
            "field `{field}.{key}`: expected a string, got {}",
            json_type(other)
        )),
    }
}

/// `request`/`response`, or BigQuery's `requestJson`/`responseJson` string.
fn body(payload: &mut Map<String, Value>, key: &str, field: &str) -> Result<Option<Value>, String> {
    let value = match payload.remove(key) {
        Some(v @ Value::Object(_)) => v,
        None | Some(Value::Null) => match payload.remove(&format!("{key}Json")) {
            Some(Value::String(s)) if !s.is_empty() => serde_json::from_str(&s)
                .map_err(|e| format!("field `{field}.{key}Json`: not JSON: {e}"))?,
            _ => return Ok(None),
        },
        Some(other) => {
            return Err(format!(
                "field `{field}.{key}`: expected an object, got {}",
                json_type(&other)
            ))
        }
    };
    Ok(Some(value).filter(Value::is_object))
}

/// A request or response body as the API server logged it: without the
/// `@type` Cloud Logging adds, with its `kind` and `apiVersion` (from
/// `@type`, `core.k8s.io/v1.Pod`, and the resource path) when it lost them.
fn typed(object: &mut Value, group: &str, version: &str) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let at_type = match map.remove("@type") {
        Some(Value::String(s)) => s,
        _ => return,
    };
    // `k8s.io/Patch` and `meta.k8s.io/v1.DeleteOptions` bodies are not
    // the object; only a body typed as the resource's own kind is.
    let Some((_, tail)) = at_type.rsplit_once('/') else {
        return;
    };
    let Some((type_version, kind)) = tail.split_once('.') else {
        return;
    };
    if !map.contains_key("kind") && type_version == version && map.contains_key("metadata") {
        map.insert("kind".into(), kind.into());
    }
    if !map.contains_key("apiVersion") && map.contains_key("metadata") {
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        map.insert("apiVersion".into(), api_version.into());
    }
}

/// `labels` as a map: a LogEntry's object, or a BigQuery export's
/// sanitized keys (`command_gke_io_dryRun`) mapped back for the keys annal
/// reads.
fn labels(v: Option<&Value>) -> Map<String, Value> {
    let Some(Value::Object(map)) = v else {
        return Map::new();
    };
    const KNOWN: [&str; 3] = [
        DRY_RUN_LABEL,
        "authorization.k8s.io/decision",
        "authorization.k8s.io/reason",
    ];
    map.iter()
        .map(|(k, v)| {
            let known = KNOWN
                .iter()
                .find(|known| known.replace(['.', '/'], "_") == *k)
                .map_or(k.as_str(), |known| known);
            (known.to_string(), v.clone())
        })
        .collect()
}

/// An RFC 3339 time, or BigQuery's `2024-06-26 04:10:49.129747 UTC`.
fn timestamp(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    match s.strip_suffix(" UTC") {
        Some(t) => Some(format!("{}Z", t.replacen(' ', "T", 1))),
        None => Some(s.to_string()),
    }
}

/// The audit `objectRef` a resource path names. `core/v1/namespaces/ns`
/// is the Namespace `ns` when the method is on namespaces; otherwise
/// `namespaces/<ns>/` scopes the resource that follows.
fn object_ref(resource_name: &str, method: &str) -> Option<Value> {
    let parts: Vec<&str> = resource_name.split('/').collect();
    if parts.len() < 3 || parts.iter().take(3).any(|p| p.is_empty()) {
        return None;
    }
    let group = if parts[0] == "core" { "" } else { parts[0] };
    let rest = &parts[2..];
    let on_namespaces = group.is_empty() && method.split('.').any(|s| s == "namespaces");
    let (namespace, resource, tail) =
        if rest[0] == "namespaces" && rest.len() >= 3 && !on_namespaces {
            (rest[1], rest[2], &rest[3..])
        } else {
            ("", rest[0], &rest[1..])
        };
    let mut r = Map::new();
    if !group.is_empty() {
        r.insert("apiGroup".into(), group.into());
    }
    r.insert("apiVersion".into(), parts[1].into());
    r.insert("resource".into(), resource.into());
    if !namespace.is_empty() {
        r.insert("namespace".into(), namespace.into());
    }
    if let Some(name) = tail.first().filter(|n| !n.is_empty()) {
        r.insert("name".into(), (*name).into());
    }
    if let Some(sub) = tail.get(1).filter(|s| !s.is_empty()) {
        r.insert("subresource".into(), (*sub).into());
    }
    Some(Value::Object(r))
}

/// The HTTP status a `google.rpc.Code` stands for (Google's own mapping);
/// `None` for OK.
fn http_of_rpc(code: i64) -> Option<u64> {
    Some(match code {
        0 => return None,
        1 => 499,
        3 | 9 | 11 => 400,
        4 => 504,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        8 => 429,
        12 => 501,
        14 => 503,
        16 => 401,
        _ => 500,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_paths_are_object_refs() {
        let r = object_ref(
            "core/v1/namespaces/shop/pods/web-1",
            "io.k8s.core.v1.pods.create",
        )
        .unwrap();
        assert_eq!(
            r,
            json!({"apiVersion": "v1", "resource": "pods", "namespace": "shop", "name": "web-1"})
        );
        let r = object_ref(
            "apps/v1/namespaces/shop/deployments/web/scale",
            "io.k8s.apps.v1.deployments.scale.patch",
        )
        .unwrap();
        assert_eq!(r["apiGroup"], "apps");
        assert_eq!(r["subresource"], "scale");
        assert_eq!(r["name"], "web");
        // The Namespace itself, and its subresource.
        let r = object_ref(
            "core/v1/namespaces/shop",
            "io.k8s.core.v1.namespaces.create",
        )
        .unwrap();
        assert_eq!(
            (r["resource"].as_str(), r["name"].as_str()),
            (Some("namespaces"), Some("shop"))
        );
        assert!(r.get("namespace").is_none());
        let r = object_ref(
            "core/v1/namespaces/shop/finalize",
            "io.k8s.core.v1.namespaces.finalize.update",
        )
        .unwrap();
        assert_eq!(
            (r["name"].as_str(), r["subresource"].as_str()),
            (Some("shop"), Some("finalize"))
        );
        // A namespaced collection (a create names no object in the path).
        let r = object_ref(
            "core/v1/namespaces/shop/configmaps",
            "io.k8s.core.v1.configmaps.create",
        )
        .unwrap();
        assert_eq!(
            (r["resource"].as_str(), r["namespace"].as_str()),
            (Some("configmaps"), Some("shop"))
        );
        assert!(r.get("name").is_none());
        // Cluster-scoped, in a dotted group.
        let r = object_ref(
            "rbac.authorization.k8s.io/v1/clusterroles/view",
            "io.k8s.authorization.rbac.v1.clusterroles.update",
        )
        .unwrap();
        assert_eq!(r["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(r["name"], "view");
        assert!(object_ref("projects/p", "x").is_none());
        assert!(object_ref("core//pods", "x").is_none());
    }

    #[test]
    fn rpc_codes_map_to_http() {
        assert_eq!(http_of_rpc(0), None);
        assert_eq!(http_of_rpc(7), Some(403));
        assert_eq!(http_of_rpc(5), Some(404));
        assert_eq!(http_of_rpc(6), Some(409));
        assert_eq!(http_of_rpc(99), Some(500));
    }

    #[test]
    fn bigquery_times_and_labels_read_as_log_entries() {
        assert_eq!(
            timestamp(&json!("2024-06-26 04:10:49.129747 UTC")).as_deref(),
            Some("2024-06-26T04:10:49.129747Z")
        );
        let l = labels(Some(
            &json!({"command_gke_io_dryRun": "All", "other_key": "x"}),
        ));
        assert_eq!(l[DRY_RUN_LABEL], "All");
        assert_eq!(l["other_key"], "x");
    }
}
