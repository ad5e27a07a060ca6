//! `--format k8s-audit`: Kubernetes audit events and admission captures.
//!
//! Every audit event becomes one `audit.request` fact, keyed by
//! (`auditID`, `stage`): the stages of one request repeat its id, and the
//! same line read twice is stored once. A request changes inventory only
//! when it completed (`ResponseComplete`), succeeded (code < 400), was not a
//! dry run (`dryRun` appears only in `requestURI`), and is a write: then its
//! `responseObject` (else `requestObject`) becomes `object.observed`, keyed
//! by `auditID` alone (one logical change per request), and `delete` /
//! `deletecollection` become `object.deleted`.
//!
//! Subresources: a `status` write returns the parent object and records it;
//! a `scale` write returns a `Scale`, recorded as a partial version of the
//! parent (`partial: "scale"`, only `spec.replicas`), which the query layer
//! merges onto the previous version.

use annal_schemas::{Actor, EventType, Timestamp};
use serde_json::{json, Map, Value};

use super::kind::json_type;
use super::time::{self, TimeSource};
use super::{k8s_object, Emitter, Event, Id};
use crate::{redact, ListItem};

/// Audit-log key of the credential the request was authenticated with.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// One audit event.
pub(super) fn event(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    event_marked(doc, emit, false)
}

/// One audit event that its exporter marked as a dry run where the native
/// event says so only in `requestURI` (GKE's `command.gke.io/dryRun`
/// label: Cloud Logging keeps no request URI).
pub(super) fn event_marked(
    doc: Value,
    emit: &mut Emitter<'_, '_>,
    marked_dry_run: bool,
) -> Result<(), String> {
    let Value::Object(mut ev) = doc else {
        return Err("expected an object".into());
    };
    let audit_id = required_str(&ev, "auditID")?;
    let verb = required_str(&ev, "verb")?;
    let stage = optional_str(&ev, "stage")?.unwrap_or_else(|| "ResponseComplete".into());
    let request_uri = optional_str(&ev, "requestURI")?;
    let query = request_uri.as_deref().map(query_params).unwrap_or_default();
    let dry_run = marked_dry_run || query.iter().any(|(k, v)| k == "dryRun" && !v.is_empty());
    let field_manager = query
        .iter()
        .find(|(k, _)| k == "fieldManager")
        .map(|(_, v)| v.clone());
    let code = match get2(&ev, "responseStatus", "code") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .ok_or_else(|| {
                    format!(
                        "field `responseStatus.code`: expected a status code, got {}",
                        json_type(v)
                    )
                })?,
        ),
    };
    let cluster = emit.cluster("this audit event")?;
    let own_time = ["stageTimestamp", "requestReceivedTimestamp", "timestamp"]
        .iter()
        .find_map(|k| ev.get(*k).and_then(time::parse))
        .or_else(|| {
            ev.get("metadata")
                .and_then(|m| time::field(m, "creationTimestamp"))
        });
    let time = emit.time(own_time);
    let actor = actor(&ev, field_manager);
    let object_ref = object_ref(ev.get("objectRef"));

    // The inventory change, if any.
    let completed = stage == "ResponseComplete";
    let succeeded = code.is_none_or(|c| c < 400);
    let write = matches!(
        verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection"
    );
    let mut applied = false;
    if completed && succeeded && !dry_run && write {
        let response = ev.remove("responseObject").filter(|v| !v.is_null());
        let request = ev.remove("requestObject").filter(|v| !v.is_null());
        let change = Change {
            audit_id: &audit_id,
            verb: &verb,
            object_ref: &object_ref,
            cluster: &cluster,
            time,
            actor: actor.clone(),
        };
        applied = change.record(response, request, emit)?;
    }

    let annotations = ev.get("annotations");
    let annotation = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let mut data = json!({
        "audit_id": audit_id,
        "stage": stage,
        "verb": verb,
        "dry_run": dry_run,
        "applied": applied,
        "object_ref": object_ref,
    });
    let map = data.as_object_mut().expect("literal object");
    if let Some(uri) = request_uri {
        map.insert("request_uri".into(), uri.into());
    }
    if let Some(c) = code {
        map.insert("code".into(), c.into());
    }
    put_strings(map, "groups", get2(&ev, "user", "groups"));
    put_strings(map, "source_ips", ev.get("sourceIPs"));
    if let Some(ua) = ev.get("userAgent").and_then(Value::as_str) {
        map.insert("user_agent".into(), ua.into());
    }
    if let Some(d) = annotation("authorization.k8s.io/decision") {
        map.insert("decision".into(), d.into());
    }
    if let Some(r) = annotation("authorization.k8s.io/reason").filter(|r| !r.is_empty()) {
        map.insert("decision_reason".into(), r.into());
    }
    if let Some(m) = ev
        .get("responseStatus")
        .and_then(|r| r.get("message"))
        .or_else(|| get2(&ev, "responseStatus", "reason"))
        .and_then(Value::as_str)
    {
        map.insert("status_message".into(), m.into());
    }
    let id = Id::Fixed(format!(
        "k8s-audit:{cluster}:{}:{}",
        data["audit_id"].as_str().unwrap_or(""),
        data["stage"].as_str().unwrap_or("")
    ));
    emit.emit(Event::new(EventType::AuditRequest, id, time, cluster, data).by(actor))
}

/// An admission webhook request capture: who asked to do what. Admission
/// happens before persistence (the request may still fail), so it is an
/// audit fact only and changes no inventory.
pub(super) fn admission(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let req = doc
        .get("request")
        .filter(|r| r.is_object())
        .ok_or("field `request`: missing")?;
    let uid = required_str(
        req.as_object()
            .ok_or("field `request`: expected an object")?,
        "uid",
    )
    .map_err(|e| format!("request.{e}"))?;
    let operation = req.get("operation").and_then(Value::as_str).unwrap_or("");
    let cluster = emit.cluster("this admission request")?;
    let time = emit.time(None);
    let mut principal = Actor {
        principal: req
            .pointer("/userInfo/username")
            .and_then(Value::as_str)
            .map(str::to_string),
        credential: credential(req.pointer("/userInfo/extra")),
        ..Actor::default()
    };
    if principal == Actor::default() {
        principal.principal = None;
    }
    let object_ref = json!({
        "group": req.pointer("/kind/group").and_then(Value::as_str).unwrap_or(""),
        "version": req.pointer("/kind/version").and_then(Value::as_str).unwrap_or(""),
        "kind": req.pointer("/kind/kind").and_then(Value::as_str).unwrap_or(""),
        "resource": req.pointer("/resource/resource").and_then(Value::as_str).unwrap_or(""),
        "namespace": req.get("namespace").and_then(Value::as_str).unwrap_or(""),
        "name": req.get("name").and_then(Value::as_str).unwrap_or(""),
    });
    let mut data = json!({
        "audit_id": uid,
        "stage": "Admission",
        "verb": operation.to_ascii_lowercase(),
        "dry_run": req.get("dryRun").and_then(Value::as_bool).unwrap_or(false),
        "applied": false,
        "object_ref": object_ref,
    });
    if let Some(map) = data.as_object_mut() {
        put_strings(map, "groups", req.pointer("/userInfo/groups"));
        if let Some(sub) = req.get("subResource").and_then(Value::as_str) {
            map["object_ref"]["subresource"] = sub.into();
        }
    }
    let id = Id::Fixed(format!("k8s-admission:{cluster}:{uid}"));
    emit.emit(
        Event::new(EventType::AuditRequest, id, time, cluster, data)
            .by(Some(principal).filter(|a| *a != Actor::default())),
    )
}

/// A successful write to turn into inventory events.
struct Change<'a> {
    audit_id: &'a str,
    verb: &'a str,
    object_ref: &'a Value,
    cluster: &'a str,
    time: (Timestamp, TimeSource),
    actor: Option<Actor>,
}

impl Change<'_> {
    /// Emits the change; returns whether anything was recorded.
    fn record(
        &self,
        response: Option<Value>,
        request: Option<Value>,
        emit: &mut Emitter<'_, '_>,
    ) -> Result<bool, String> {
        let subresource = self
            .object_ref
            .get("subresource")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if matches!(subresource, Some(s) if s != "status" && s != "scale") {
            // exec, attach, log, eviction, token...: no object state.
            return Ok(false);
        }
        match self.verb {
            "delete" => {
                // A delete held by finalizers returns the object, now
                // terminating: it still exists.
                if let Some(obj) = response.filter(is_object_doc) {
                    if terminating_with_finalizers(&obj) {
                        self.observe(obj, "response", emit)?;
                        return Ok(true);
                    }
                }
                let identity = self.ref_identity();
                self.delete(&identity, 0, emit)?;
                Ok(true)
            }
            "deletecollection" => {
                // A hollow deletecollection names no objects.
                let Some(mut list) = response else {
                    return Ok(false);
                };
                let Some(Value::Array(items)) =
                    list.as_object_mut().and_then(|l| l.remove("items"))
                else {
                    return Ok(false);
                };
                // Items of a typed list omit their kind and apiVersion.
                let context = ListItem::of_list(&list, 0);
                let mut any = false;
                for (i, mut item) in items.into_iter().enumerate() {
                    context.fill(&mut item);
                    if !is_object_doc(&item) {
                        continue;
                    }
                    any = true;
                    if terminating_with_finalizers(&item) {
                        self.observe_n(item, i, emit)?;
                    } else {
                        self.delete(&item, i, emit)?;
                    }
                }
                Ok(any)
            }
            _ => {
                let object = response
                    .filter(is_object_doc)
                    .or(request.filter(is_object_doc));
                let Some(object) = object else {
                    return Ok(false);
                };
                let parent_kind = self.object_ref.get("kind").and_then(Value::as_str);
                if subresource == Some("scale")
                    && object.get("kind").and_then(Value::as_str) == Some("Scale")
                {
                    let partial = self.partial_scale(&object, parent_kind);
                    self.observe(partial, "scale", emit)?;
                    return Ok(true);
                }
                if object
                    .pointer("/metadata/deletionTimestamp")
                    .is_some_and(|t| !t.is_null())
                    && !terminating_with_finalizers(&object)
                {
                    // The last finalizer is gone: the object is deleted.
                    self.delete(&object, 0, emit)?;
                    return Ok(true);
                }
                self.observe(object, "response", emit)?;
                Ok(true)
            }
        }
    }

    fn observe(
        &self,
        object: Value,
        _what: &str,
        emit: &mut Emitter<'_, '_>,
    ) -> Result<(), String> {
        self.observe_n(object, 0, emit)
    }

    fn observe_n(&self, object: Value, n: usize, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        k8s_object::observed_on(
            object,
            self.cluster.to_string(),
            self.time,
            self.actor.clone(),
            Some(self.id(n)),
            emit,
        )
    }

    fn delete(&self, identity: &Value, n: usize, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        k8s_object::deleted_on(
            identity,
            self.cluster.to_string(),
            self.time,
            self.actor.clone(),
            Some(self.id(n)),
            emit,
        )
    }

    /// One logical change per auditID: the id is the request's, not the
    /// content's, so the stages of one request cannot record it twice
    /// (`n` numbers the objects of a deletecollection).
    fn id(&self, n: usize) -> String {
        format!("k8s-audit:{}:{}#{n}", self.cluster, self.audit_id)
    }

    /// The object a request addressed, from `objectRef`.
    fn ref_identity(&self) -> Value {
        let r = self.object_ref;
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let api_version = match (s("group"), s("version")) {
            ("", v) => v.to_string(),
            (g, v) => format!("{g}/{v}"),
        };
        let mut meta = Map::new();
        meta.insert("name".into(), s("name").into());
        if !s("namespace").is_empty() {
            meta.insert("namespace".into(), s("namespace").into());
        }
        if !s("uid").is_empty() {
            meta.insert("uid".into(), s("uid").into());
        }
        json!({"apiVersion": api_version, "kind": s("kind"), "metadata": meta})
    }

    /// A `Scale` response as a partial version of its parent.
    fn partial_scale(&self, scale: &Value, parent_kind: Option<&str>) -> Value {
        let mut parent = self.ref_identity();
        if let Some(kind) = parent_kind {
            parent["kind"] = kind.into();
        }
        for key in ["uid", "resourceVersion"] {
            if let Some(v) = scale.pointer(&format!("/metadata/{key}")) {
                parent["metadata"][key] = v.clone();
            }
        }
        if let Some(replicas) = scale.pointer("/spec/replicas") {
            parent["spec"] = json!({"replicas": replicas});
        }
        parent["partial"] = "scale".into();
        parent
    }
}

fn is_object_doc(v: &Value) -> bool {
    v.get("kind").is_some_and(Value::is_string)
        && v.get("apiVersion").is_some_and(Value::is_string)
        && v.pointer("/metadata/name").is_some_and(Value::is_string)
        && v.get("kind").and_then(Value::as_str) != Some("Status")
}

fn terminating_with_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
        && obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
}

/// `objectRef` in annal's shape, with the kind guessed from the resource.
fn object_ref(r: Option<&Value>) -> Value {
    let Some(r) = r else {
        return json!({});
    };
    let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
    let resource = s("resource").unwrap_or_default();
    let mut out = json!({
        "group": s("apiGroup").unwrap_or_default(),
        "version": s("apiVersion").unwrap_or_default(),
        "resource": resource,
        "kind": kind_of_resource(&resource),
        "namespace": s("namespace").unwrap_or_default(),
        "name": s("name").unwrap_or_default(),
    });
    // v1beta1-era events put "group/version" in apiVersion.
    if out["group"] == "" {
        if let Some((g, v)) = s("apiVersion").as_deref().and_then(|a| a.split_once('/')) {
            out["group"] = g.into();
            out["version"] = v.into();
        }
    }
    for (from, to) in [("subresource", "subresource"), ("uid", "uid")] {
        if let Some(v) = s(from).filter(|v| !v.is_empty()) {
            out[to] = v.into();
        }
    }
    out
}

/// The kind a resource name stands for: the built-in table, else the
/// singular of the plural with a capital (`flunders` → `Flunder`), which
/// holds for most CRDs. Only used when no object body names the kind.
fn kind_of_resource(resource: &str) -> String {
    const BUILTIN: &[(&str, &str)] = &[
        ("endpoints", "Endpoints"),
        ("configmaps", "ConfigMap"),
        ("serviceaccounts", "ServiceAccount"),
        ("persistentvolumeclaims", "PersistentVolumeClaim"),
        ("persistentvolumes", "PersistentVolume"),
        ("replicationcontrollers", "ReplicationController"),
        ("resourcequotas", "ResourceQuota"),
        ("limitranges", "LimitRange"),
        ("podtemplates", "PodTemplate"),
        ("daemonsets", "DaemonSet"),
        ("replicasets", "ReplicaSet"),
        ("statefulsets", "StatefulSet"),
        ("controllerrevisions", "ControllerRevision"),
        ("cronjobs", "CronJob"),
        ("horizontalpodautoscalers", "HorizontalPodAutoscaler"),
        ("networkpolicies", "NetworkPolicy"),
        ("ingresses", "Ingress"),
        ("ingressclasses", "IngressClass"),
        ("poddisruptionbudgets", "PodDisruptionBudget"),
        ("clusterroles", "ClusterRole"),
        ("clusterrolebindings", "ClusterRoleBinding"),
        ("rolebindings", "RoleBinding"),
        ("storageclasses", "StorageClass"),
        ("customresourcedefinitions", "CustomResourceDefinition"),
        (
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
        ),
        (
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
        ),
        ("priorityclasses", "PriorityClass"),
        ("apiservices", "APIService"),
        ("helmreleases", "HelmRelease"),
        ("gitrepositories", "GitRepository"),
        ("helmrepositories", "HelmRepository"),
        ("ocirepositories", "OCIRepository"),
        ("appprojects", "AppProject"),
        ("applicationsets", "ApplicationSet"),
        ("bundledeployments", "BundleDeployment"),
    ];
    if let Some((_, kind)) = BUILTIN.iter().find(|(r, _)| *r == resource) {
        return kind.to_string();
    }
    let singular = if let Some(stem) = resource.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = resource
        .strip_suffix("sses")
        .map(|s| format!("{s}ss"))
        .or_else(|| resource.strip_suffix("ches").map(|s| format!("{s}ch")))
        .or_else(|| resource.strip_suffix("xes").map(|s| format!("{s}x")))
    {
        stem
    } else {
        resource.strip_suffix('s').unwrap_or(resource).to_string()
    };
    let mut chars = singular.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn actor(ev: &Map<String, Value>, field_manager: Option<String>) -> Option<Actor> {
    let actor = Actor {
        principal: ev
            .get("user")
            .and_then(|u| u.get("username"))
            .and_then(Value::as_str)
            .map(str::to_string),
        impersonated: ev
            .get("impersonatedUser")
            .and_then(|u| u.get("username"))
            .and_then(Value::as_str)
            .map(str::to_string),
        field_manager,
        credential: credential(ev.get("user").and_then(|u| u.get("extra"))),
        controller: None,
    };
    (actor != Actor::default()).then_some(actor)
}

/// The credential id, fingerprinted (it identifies a token; an auditor
/// matches it by hashing the id they hold).
fn credential(extra: Option<&Value>) -> Option<String> {
    let id = extra?.get(CREDENTIAL_ID)?;
    let id = match id {
        Value::Array(a) => a.first()?.as_str()?,
        Value::String(s) => s,
        _ => return None,
    };
    Some(redact::fingerprint(id.as_bytes()))
}

/// `?a=b&c=d` of a request URI, percent-decoded.
fn query_params(uri: &str) -> Vec<(String, String)> {
    let Some((_, query)) = uri.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn get2<'a>(map: &'a Map<String, Value>, a: &str, b: &str) -> Option<&'a Value> {
    map.get(a)?.get(b)
}

fn put_strings(map: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    if let Some(Value::Array(items)) = v {
        let strings: Vec<Value> = items
            .iter()
            .filter_map(|s| s.as_str().map(Value::from))
            .collect();
        if !strings.is_empty() {
            map.insert(key.into(), Value::Array(strings));
        }
    }
}

fn required_str(map: &Map<String, Value>, key: &str) -> Result<String, String> {
    optional_str(map, key)?.ok_or_else(|| format!("field `{key}`: missing"))
}

fn optional_str(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "field `{key}`: expected a string, got {}",
            json_type(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_map_to_kinds() {
        for (r, k) in [
            ("deployments", "Deployment"),
            ("configmaps", "ConfigMap"),
            ("flunders", "Flunder"),
            ("policies", "Policy"),
            ("ingresses", "Ingress"),
            ("endpoints", "Endpoints"),
            ("namespaces", "Namespace"),
            ("clusterrolebindings", "ClusterRoleBinding"),
        ] {
            assert_eq!(kind_of_resource(r), k);
        }
    }

    #[test]
    fn query_strings_are_decoded() {
        let q = query_params("/api/v1/x?dryRun=All&fieldManager=kustomize%2Dcontroller&force=true");
        assert_eq!(
            q,
            vec![
                ("dryRun".to_string(), "All".to_string()),
                (
                    "fieldManager".to_string(),
                    "kustomize-controller".to_string()
                ),
                ("force".to_string(), "true".to_string())
            ]
        );
        assert!(query_params("/api/v1/x").is_empty());
        assert_eq!(percent_decode("a%"), "a%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
