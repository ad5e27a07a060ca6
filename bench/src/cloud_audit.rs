//! Native audit events re-wrapped as the clouds export them (GKE Cloud
//! Logging entries, AKS diagnostic records, EKS CloudWatch events), so that
//! `bench/audit.sh` times each export's ingest against the native log on
//! the same requests. The shapes are those of
//! `ingest/testdata/cloud-audit/` (see its SOURCES.md).

use serde_json::{json, Map, Value};

/// An export shape, one record per line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// The API server's own audit log.
    Native,
    /// Cloud Logging `LogEntry` (a Pub/Sub or storage sink's lines).
    Gke,
    /// AKS `kube-audit` diagnostic records (storage-account lines).
    Aks,
    /// EKS CloudWatch events (`filter-log-events` events, one per line).
    Eks,
}

/// `ev` as `shape` writes it, on `cluster`.
pub fn wrap(shape: Shape, ev: Value, cluster: &str) -> Value {
    match shape {
        Shape::Native => ev,
        Shape::Aks => json!({
            "operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
            "category": "kube-audit",
            "resourceId": format!("/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000000/RESOURCEGROUPS/BENCH/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/{}", cluster.to_ascii_uppercase()),
            "properties": {"log": ev.to_string(), "stream": "stdout", "pod": "kube-apiserver-0"},
            "time": ev.get("stageTimestamp").cloned().unwrap_or(Value::Null),
        }),
        Shape::Eks => json!({
            "logStreamName": "kube-apiserver-audit-0c5a1b2d3e4f5a6b7c8d9e0f1a2b3c4d",
            "timestamp": 0,
            "message": ev.to_string(),
            "ingestionTime": 0,
            "eventId": ev.get("auditID").cloned().unwrap_or(Value::Null),
        }),
        Shape::Gke => gke(ev, cluster),
    }
}

fn gke(mut ev: Value, cluster: &str) -> Value {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let r = ev.get("objectRef").cloned().unwrap_or(json!({}));
    let group = match text(&r, "apiGroup").as_str() {
        "" => "core".to_string(),
        g => g.to_string(),
    };
    let version = text(&r, "apiVersion");
    let mut path = vec![group.clone(), version.clone()];
    let namespace = text(&r, "namespace");
    // A Namespace's own path has no namespace segment (its audit objectRef
    // names itself as the namespace).
    if !namespace.is_empty() && text(&r, "resource") != "namespaces" {
        path.extend(["namespaces".to_string(), namespace]);
    }
    path.push(text(&r, "resource"));
    for k in ["name", "subresource"] {
        let v = text(&r, k);
        if !v.is_empty() {
            path.push(v);
        }
    }
    let verb = text(&ev, "verb");
    let mut method: Vec<String> = vec!["io".into(), "k8s".into()];
    method.extend(
        group
            .trim_end_matches(".k8s.io")
            .rsplit('.')
            .map(str::to_string),
    );
    method.extend([version.clone(), text(&r, "resource")]);
    let sub = text(&r, "subresource");
    if !sub.is_empty() {
        method.push(sub);
    }
    method.push(verb);
    let mut payload = Map::new();
    payload.insert(
        "@type".into(),
        "type.googleapis.com/google.cloud.audit.AuditLog".into(),
    );
    payload.insert(
        "authenticationInfo".into(),
        json!({"principalEmail": ev.pointer("/user/username").cloned().unwrap_or(Value::Null)}),
    );
    payload.insert("methodName".into(), method.join(".").into());
    payload.insert(
        "requestMetadata".into(),
        json!({
            "callerIp": ev.pointer("/sourceIPs/0").cloned().unwrap_or(Value::Null),
            "callerSuppliedUserAgent": ev.get("userAgent").cloned().unwrap_or(Value::Null),
        }),
    );
    let resource_name = match ev.get("objectRef") {
        Some(_) => path.join("/"),
        // A non-resource request: its path.
        None => text(&ev, "requestURI").trim_start_matches('/').to_string(),
    };
    payload.insert("resourceName".into(), resource_name.into());
    payload.insert("serviceName".into(), "k8s.io".into());
    let at_type = |o: &Value| {
        format!(
            "{}.k8s.io/{version}.{}",
            if group == "core" {
                "core"
            } else {
                group.as_str()
            },
            text(o, "kind")
        )
    };
    for (from, to) in [("requestObject", "request"), ("responseObject", "response")] {
        if let Some(Value::Object(mut o)) = ev.as_object_mut().and_then(|m| m.remove(from)) {
            let t = at_type(&Value::Object(o.clone()));
            o.insert("@type".into(), t.into());
            payload.insert(to.into(), Value::Object(o));
        }
    }
    let code = ev
        .pointer("/responseStatus/code")
        .and_then(Value::as_u64)
        .unwrap_or(200);
    if code >= 400 {
        let mut status = ev.get("responseStatus").cloned().unwrap_or(json!({}));
        status["kind"] = "Status".into();
        status["apiVersion"] = "v1".into();
        status["@type"] = "core.k8s.io/v1.Status".into();
        payload.insert("response".into(), status);
        payload.insert(
            "status".into(),
            json!({"code": if code == 403 { 7 } else { 2 }, "message": ev.pointer("/responseStatus/message").cloned().unwrap_or(Value::Null)}),
        );
    }
    let mut labels = ev.get("annotations").cloned().unwrap_or(json!({}));
    if text(&ev, "requestURI").contains("dryRun=") {
        labels["command.gke.io/dryRun"] = "All".into();
    }
    let id = ev.get("auditID").cloned().unwrap_or(Value::Null);
    // GKE logs a long-running request's start (`ResponseStarted`) as an
    // entry with `operation.first` and not `.last`.
    let first = text(&ev, "stage") == "ResponseStarted";
    let time = ["stageTimestamp", "requestReceivedTimestamp", "timestamp"]
        .iter()
        .find_map(|k| ev.get(*k).cloned())
        .unwrap_or(Value::Null);
    json!({
        "protoPayload": payload,
        "insertId": id,
        "resource": {"type": "k8s_cluster", "labels": {"project_id": "bench", "location": "europe-west1", "cluster_name": cluster}},
        "timestamp": time,
        "labels": labels,
        "logName": "projects/bench/logs/cloudaudit.googleapis.com%2Factivity",
        "operation": {"id": id, "producer": "k8s.io", "first": true, "last": !first},
    })
}
