//! Telling documents apart by content (`--format auto`).

use serde_json::Value;

use super::Format;

/// What a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An Envelope v1 (`schema: annal.event/v1`).
    Envelope,
    /// A Kubernetes audit `Event` (with or without `apiVersion`/`kind`).
    AuditEvent,
    /// An audit `EventList` (webhook batch body).
    AuditList,
    /// An admission webhook request capture (`request` with `operation`).
    Admission,
    /// A watch event `{type, object}`.
    Watch,
    /// A core/v1 or events.k8s.io/v1 `Event`.
    KubeEvent,
    /// An OpenTelemetry log entry whose `body` is a Kubernetes Event.
    OtelEvent,
    /// A Flux notification-controller event payload.
    FluxEvent,
    /// A `*List` of objects.
    List,
    /// An Argo CD `Application`.
    Application,
    /// An Argo CD `AppProject`.
    AppProject,
    /// An Argo CD cluster `Secret` (`argocd.argoproj.io/secret-type: cluster`).
    ClusterSecret,
    /// A Flux `Kustomization`.
    Kustomization,
    /// A Flux `HelmRelease`.
    HelmRelease,
    /// A Fleet `BundleDeployment`.
    BundleDeployment,
    /// A GKE audit log entry from Cloud Logging (`protoPayload` AuditLog).
    GkeAudit,
    /// An AKS diagnostic record (`category`, `properties.log`).
    AksRecord,
    /// An Azure Event Hub batch of diagnostic records (`{"records": [...]}`).
    AksRecords,
    /// A CloudWatch Logs event (`message`, `logStreamName`...).
    CloudWatchEvent,
    /// CloudWatch Logs events: `filter-log-events` output or a
    /// subscription payload.
    CloudWatchBatch,
    /// A CRD `ConversionReview` (carries no change of state).
    ConversionReview,
    /// Any other Kubernetes object.
    Object,
    /// An object snippet without `metadata.name` or `generateName` (docs
    /// show annotations this way): nothing identifies it.
    Unnamed,
    /// A fragment with neither `apiVersion` nor `kind` (e.g. a `status:`
    /// snippet from docs): nothing to record.
    Fragment,
}

impl Kind {
    /// Classifies a document. Fails only when `kind`/`apiVersion` are
    /// present but not strings, or an object lacks `metadata`.
    pub fn of(doc: &Value) -> Result<Kind, String> {
        let Value::Object(map) = doc else {
            return Err(format!("expected an object, got {}", json_type(doc)));
        };
        if map.get("schema").and_then(Value::as_str) == Some(annal_schemas::SCHEMA_V1) {
            return Ok(Kind::Envelope);
        }
        let kind = match map.get("kind") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                return Err(format!(
                    "field `kind`: expected a string, got {}",
                    json_type(other)
                ))
            }
        };
        let api_version = match map.get("apiVersion") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                return Err(format!(
                    "field `apiVersion`: expected a string, got {}",
                    json_type(other)
                ))
            }
        };
        let group = api_version.and_then(|v| v.rsplit_once('/')).map(|(g, _)| g);
        let is_audit_api = group == Some("audit.k8s.io");
        if is_audit_api && kind == Some("EventList") {
            return Ok(Kind::AuditList);
        }
        if map.contains_key("auditID")
            && map.contains_key("verb")
            && kind.is_none_or(|k| k == "Event")
            && (api_version.is_none() || is_audit_api)
        {
            return Ok(Kind::AuditEvent);
        }
        if is_audit_api {
            return Err("audit.k8s.io document without `auditID` and `verb`".into());
        }
        if kind.is_none() && api_version.is_none() {
            if let Some(cloud) = cloud_export(map) {
                return Ok(cloud);
            }
            if let Some(req) = map.get("request") {
                if req.get("operation").is_some() && req.get("uid").is_some() {
                    return Ok(Kind::Admission);
                }
            }
            if let (Some(Value::String(t)), Some(Value::Object(_))) =
                (map.get("type"), map.get("object"))
            {
                if matches!(
                    t.as_str(),
                    "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR"
                ) {
                    return Ok(Kind::Watch);
                }
            }
            if let Some(body) = map.get("body") {
                if map.contains_key("attributes") && Kind::of(body) == Ok(Kind::KubeEvent) {
                    return Ok(Kind::OtelEvent);
                }
            }
            if map.contains_key("involvedObject")
                && map.contains_key("reportingController")
                && map.contains_key("severity")
            {
                return Ok(Kind::FluxEvent);
            }
            if map.contains_key("involvedObject") && map.contains_key("reason") {
                return Ok(Kind::KubeEvent);
            }
            return Ok(Kind::Fragment);
        }
        if kind == Some("AdmissionReview") {
            return Ok(Kind::Admission);
        }
        if kind == Some("ConversionReview") {
            return Ok(Kind::ConversionReview);
        }
        if kind == Some("Event")
            && (matches!(api_version, Some("v1") | None) || group == Some("events.k8s.io"))
        {
            return Ok(Kind::KubeEvent);
        }
        if let Some(k) = kind {
            if k.ends_with("List") && map.get("items").is_some_and(Value::is_array) {
                return Ok(Kind::List);
            }
        }
        if !map.contains_key("metadata") {
            return Err(match (api_version, kind) {
                (None, _) => "field `apiVersion`: missing".to_string(),
                (_, None) => "field `kind`: missing".to_string(),
                _ => "field `metadata`: missing".to_string(),
            });
        }
        let meta = &map["metadata"];
        if meta.get("name").is_none() && meta.get("generateName").is_none() && kind.is_some() {
            return Ok(Kind::Unnamed);
        }
        Ok(match (group, kind.unwrap_or("")) {
            (Some("argoproj.io"), "Application") => Kind::Application,
            (Some("argoproj.io"), "AppProject") => Kind::AppProject,
            (Some("kustomize.toolkit.fluxcd.io"), "Kustomization") => Kind::Kustomization,
            (Some("helm.toolkit.fluxcd.io"), "HelmRelease") => Kind::HelmRelease,
            (Some("fleet.cattle.io"), "BundleDeployment") => Kind::BundleDeployment,
            (None, "Secret")
                if doc
                    .pointer("/metadata/labels/argocd.argoproj.io~1secret-type")
                    .and_then(Value::as_str)
                    == Some("cluster") =>
            {
                Kind::ClusterSecret
            }
            _ => Kind::Object,
        })
    }

    /// A phrase for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Kind::Envelope => "an annal envelope",
            Kind::AuditEvent => "a Kubernetes audit event",
            Kind::AuditList => "an audit EventList",
            Kind::Admission => "an admission request",
            Kind::Watch => "a watch event",
            Kind::KubeEvent => "a Kubernetes Event",
            Kind::OtelEvent => "an OpenTelemetry-wrapped Kubernetes Event",
            Kind::FluxEvent => "a Flux notification event",
            Kind::List => "a List of objects",
            Kind::Application => "an Argo CD Application",
            Kind::AppProject => "an Argo CD AppProject",
            Kind::ClusterSecret => "an Argo CD cluster Secret",
            Kind::Kustomization => "a Flux Kustomization",
            Kind::HelmRelease => "a Flux HelmRelease",
            Kind::BundleDeployment => "a Fleet BundleDeployment",
            Kind::GkeAudit => "a GKE audit log entry (Cloud Logging)",
            Kind::AksRecord => "an AKS diagnostic record",
            Kind::AksRecords => "an Azure Event Hub batch of diagnostic records",
            Kind::CloudWatchEvent => "a CloudWatch Logs event",
            Kind::CloudWatchBatch => "a batch of CloudWatch Logs events",
            Kind::ConversionReview => "a ConversionReview (no change of state to record)",
            Kind::Object => "a Kubernetes object",
            Kind::Fragment => "a fragment without apiVersion/kind (nothing to record)",
            Kind::Unnamed => "an object snippet without metadata.name (nothing identifies it)",
        }
    }

    /// The format that reads this kind.
    pub fn format(&self) -> Format {
        match self {
            Kind::Envelope => Format::Envelope,
            Kind::AuditEvent | Kind::AuditList | Kind::Admission => Format::K8sAudit,
            Kind::GkeAudit => Format::GkeAudit,
            Kind::AksRecord | Kind::AksRecords => Format::AksAudit,
            Kind::CloudWatchEvent | Kind::CloudWatchBatch => Format::EksAudit,
            Kind::KubeEvent | Kind::OtelEvent => Format::K8sEvent,
            Kind::FluxEvent | Kind::Kustomization | Kind::HelmRelease => Format::Flux,
            Kind::Application | Kind::AppProject | Kind::ClusterSecret => Format::ArgoCd,
            Kind::BundleDeployment => Format::Fleet,
            Kind::Watch | Kind::List | Kind::Object | Kind::ConversionReview | Kind::Unnamed => {
                Format::K8sObject
            }
            Kind::Fragment => Format::Auto,
        }
    }
}

/// The cloud log exports of audit events (see `cloud_audit`), told apart
/// by their wrappers' own keys.
fn cloud_export(map: &serde_json::Map<String, Value>) -> Option<Kind> {
    let has = |k: &str| map.contains_key(k);
    let payload = map
        .get("protoPayload")
        .or_else(|| map.get("protopayload_auditlog"));
    if let Some(Value::Object(p)) = payload {
        let audit_log = p
            .get("@type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("google.cloud.audit.AuditLog"));
        if audit_log || p.contains_key("methodName") {
            return Some(Kind::GkeAudit);
        }
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        if props.contains_key("log") && (has("category") || has("Category")) {
            return Some(Kind::AksRecord);
        }
    }
    if map.get("log_s").is_some_and(Value::is_string) && has("Category") {
        return Some(Kind::AksRecord);
    }
    if let Some(Value::Array(records)) = map.get("records") {
        // Azure's batch of diagnostic records, each with its category.
        let azure = records
            .first()
            .is_none_or(|r| r.get("category").or_else(|| r.get("Category")).is_some());
        if azure {
            return Some(Kind::AksRecords);
        }
    }
    if map.get("messageType").is_some_and(Value::is_string) && (has("logEvents") || has("logGroup"))
    {
        return Some(Kind::CloudWatchBatch);
    }
    if let Some(Value::Array(events)) = map.get("events") {
        let paged = [
            "searchedLogStreams",
            "nextForwardToken",
            "nextBackwardToken",
            "nextToken",
        ]
        .iter()
        .any(|k| has(k));
        let looks = events
            .first()
            .is_some_and(|e| e.get("message").is_some() && e.get("ingestionTime").is_some());
        if paged || looks {
            return Some(Kind::CloudWatchBatch);
        }
    }
    if map.get("message").is_some()
        && (has("logStreamName") || has("ingestionTime") || has("eventId"))
    {
        return Some(Kind::CloudWatchEvent);
    }
    None
}

/// JSON type name for messages (never the value: it may be a secret).
pub(super) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn documents_are_told_apart_by_content() {
        let cases = [
            (json!({"schema": "annal.event/v1"}), Kind::Envelope),
            (
                json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": []}),
                Kind::AuditList,
            ),
            (json!({"auditID": "a", "verb": "get"}), Kind::AuditEvent),
            (
                json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1beta1", "auditID": "a", "verb": "get"}),
                Kind::AuditEvent,
            ),
            (
                json!({"request": {"uid": "u", "operation": "CREATE"}}),
                Kind::Admission,
            ),
            (json!({"type": "ADDED", "object": {}}), Kind::Watch),
            (
                json!({"kind": "Event", "apiVersion": "v1", "metadata": {}}),
                Kind::KubeEvent,
            ),
            (
                json!({"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": {}}),
                Kind::KubeEvent,
            ),
            (
                json!({"involvedObject": {}, "severity": "info", "reportingController": "k"}),
                Kind::FluxEvent,
            ),
            (
                json!({"kind": "List", "apiVersion": "v1", "items": []}),
                Kind::List,
            ),
            (
                json!({"kind": "Application", "apiVersion": "argoproj.io/v1alpha1", "metadata": {"name": "n"}}),
                Kind::Application,
            ),
            (
                json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "n", "labels": {"argocd.argoproj.io/secret-type": "cluster"}}}),
                Kind::ClusterSecret,
            ),
            (
                json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "n"}}),
                Kind::Object,
            ),
            (
                json!({"kind": "Kustomization", "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "metadata": {"name": "n"}}),
                Kind::Kustomization,
            ),
            (
                json!({"kind": "Kustomization", "apiVersion": "kustomize.config.k8s.io/v1beta1", "metadata": {"name": "n"}}),
                Kind::Object,
            ),
            (json!({"status": {"conditions": []}}), Kind::Fragment),
            (
                json!({"protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog"}, "insertId": "i"}),
                Kind::GkeAudit,
            ),
            (
                json!({"protopayload_auditlog": {"methodName": "io.k8s.core.v1.pods.create"}}),
                Kind::GkeAudit,
            ),
            (
                json!({"category": "kube-audit", "properties": {"log": "{}"}}),
                Kind::AksRecord,
            ),
            (
                json!({"Category": "kube-audit", "log_s": "{}"}),
                Kind::AksRecord,
            ),
            (json!({"records": []}), Kind::AksRecords),
            (
                json!({"messageType": "DATA_MESSAGE", "logGroup": "/aws/eks/a/cluster", "logEvents": []}),
                Kind::CloudWatchBatch,
            ),
            (
                json!({"events": [], "searchedLogStreams": []}),
                Kind::CloudWatchBatch,
            ),
            (
                json!({"message": "{}", "logStreamName": "kube-apiserver-audit-1", "ingestionTime": 1}),
                Kind::CloudWatchEvent,
            ),
            // Other documents with these words stay what they were.
            (json!({"events": [1]}), Kind::Fragment),
            (json!({"message": "hello"}), Kind::Fragment),
            (json!({"records": [{"name": "a"}]}), Kind::Fragment),
            (
                json!({"kind": "Application", "apiVersion": "argoproj.io/v1alpha1", "metadata": {"annotations": {}}}),
                Kind::Unnamed,
            ),
        ];
        for (doc, kind) in cases {
            assert_eq!(Kind::of(&doc), Ok(kind), "{doc}");
        }
        let err = Kind::of(&json!({"kind": 0})).unwrap_err();
        assert_eq!(err, "field `kind`: expected a string, got a number");
        assert!(Kind::of(&json!([1])).is_err());
    }
}
