//! `--format argocd`: Applications, AppProjects and cluster Secrets.
//!
//! An Application yields, on its destination cluster:
//! - `app.declared` (source(s), destination, sync policy), keyed by content
//!   so an unchanged spec read from many snapshots is stored once;
//! - `app.sync` per `status.history` entry (a deployed revision) and for
//!   `status.operationState` (the last operation, with its `syncResult`
//!   resources, pruned ones included);
//! - `app.inventory` from `status.resources`;
//! - `app.health` from `status.health`.
//!
//! Multi-source apps carry `revisions`/`sources`; the first revision is the
//! event's `revision` and all of them are kept.
//!
//! The app is `argocd:<name>`, or `argocd:<namespace>_<name>` when the
//! Application lives outside the controller's namespace (Argo CD's
//! instance name). Its cluster is `destination.name`, else the server URL
//! (`in-cluster` for `https://kubernetes.default.svc`).
//!
//! The Application, AppProject and cluster Secret objects themselves live on
//! the control-plane cluster: they are recorded as `object.observed` on
//! `--cluster` when it is given (and counted as skipped when not).

use annal_schemas::EventType;
use serde_json::{json, Map, Value};

use super::time::{self, TimeSource};
use super::{k8s_object, Emitter, Event, Id};
use crate::redact;

/// Argo CD's name for the cluster it runs in.
const IN_CLUSTER: &str = "in-cluster";
const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";

/// An Application.
pub(super) fn application(
    doc: Value,
    emit: &mut Emitter<'_, '_>,
    app_events: bool,
) -> Result<(), String> {
    if app_events {
        AppView::new(&doc)?.emit_all(emit)?;
    }
    control_plane_object(doc, emit)
}

/// An AppProject: recorded as an object (its destinations and roles are
/// what a takeover re-creates).
pub(super) fn project(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    if emit.ctx.cluster.is_none() {
        return Err(
            "an AppProject is a control-plane object: pass --cluster ID (the Argo CD cluster)"
                .into(),
        );
    }
    control_plane_object(doc, emit)
}

/// A cluster Secret → `cluster.registered` (with fingerprints, never the
/// credential), and the (redacted) Secret as an object.
pub(super) fn cluster_secret(
    doc: Value,
    emit: &mut Emitter<'_, '_>,
    cluster_events: bool,
) -> Result<(), String> {
    if cluster_events {
        let field = |key: &str| -> Result<Option<String>, String> {
            if let Some(v) = doc
                .pointer(&format!("/stringData/{key}"))
                .and_then(Value::as_str)
            {
                return Ok(Some(v.to_string()));
            }
            match doc.pointer(&format!("/data/{key}")).and_then(Value::as_str) {
                Some(b64) => base64_decode(b64)
                    .map(Some)
                    .ok_or_else(|| format!("field `data.{key}`: not base64 text")),
                None => Ok(None),
            }
        };
        let name = field("name")?;
        let server = field("server")?;
        let config_text = field("config")?;
        let cluster = name
            .clone()
            .or_else(|| server.clone())
            .ok_or("cluster Secret has neither `name` nor `server`")?;
        let mut data = Map::new();
        if let Some(n) = &name {
            data.insert("display_name".into(), n.clone().into());
        }
        if let Some(s) = &server {
            data.insert("api_server".into(), s.clone().into());
        }
        let mut attributes = Map::new();
        for (k, v) in doc
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if k != "argocd.argoproj.io/secret-type" {
                if let Some(v) = v.as_str() {
                    attributes.insert(k.clone(), v.into());
                }
            }
        }
        if let Some(p) = field("project")? {
            attributes.insert("argocd.project".into(), p.into());
        }
        if !attributes.is_empty() {
            data.insert("attributes".into(), Value::Object(attributes));
        }
        if let Some(text) = config_text {
            let raw: Option<Value> = serde_json::from_str(&text).ok();
            let credential = raw.as_ref().and_then(credential_of);
            data.insert(
                "credential_fingerprint".into(),
                credential
                    .unwrap_or_else(|| redact::fingerprint(text.as_bytes()))
                    .into(),
            );
            if let Some(ca) = raw
                .as_ref()
                .and_then(|c| c.pointer("/tlsClientConfig/caData"))
                .and_then(Value::as_str)
            {
                data.insert(
                    "ca_fingerprint".into(),
                    redact::fingerprint(ca.as_bytes()).into(),
                );
            }
            match redact::json_text(&text) {
                Some(redacted) => data.insert("argocd_config".into(), redacted),
                None => data.insert(
                    "argocd_config".into(),
                    redact::fingerprint(text.as_bytes()).into(),
                ),
            };
        }
        let data = Value::Object(data);
        let own = time::field(
            doc.get("metadata").unwrap_or(&Value::Null),
            "creationTimestamp",
        );
        let time = match emit.ctx.time {
            Some(t) => (t, TimeSource::Flag),
            None => emit.time(own),
        };
        let id = Id::content("argocd", false);
        emit.emit(Event::new(
            EventType::ClusterRegistered,
            id,
            time,
            cluster,
            data,
        ))?;
    }
    control_plane_object(doc, emit)
}

/// The credential a cluster `config` holds, fingerprinted: the bearer
/// token, else the client key, else the password.
fn credential_of(config: &Value) -> Option<String> {
    ["/bearerToken", "/tlsClientConfig/keyData", "/password"]
        .iter()
        .find_map(|p| config.pointer(p).and_then(Value::as_str))
        .map(|s| redact::fingerprint(s.as_bytes()))
}

fn control_plane_object(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    if emit.ctx.cluster.is_none() {
        emit.skip(
            "an Argo CD control-plane object without --cluster (its app/cluster events are kept)",
        );
        return Ok(());
    }
    k8s_object::observed(doc, emit)
}

/// The parts of an Application the events are made from.
struct AppView<'a> {
    doc: &'a Value,
    app: String,
    cluster: String,
}

impl<'a> AppView<'a> {
    fn new(doc: &'a Value) -> Result<Self, String> {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or("field `metadata.name`: missing")?;
        let namespace = doc.pointer("/metadata/namespace").and_then(Value::as_str);
        let controller_ns = doc
            .pointer("/status/controllerNamespace")
            .and_then(Value::as_str);
        let app = match (namespace, controller_ns) {
            (Some(ns), Some(ctl)) if ns != ctl => format!("argocd:{ns}_{name}"),
            _ => format!("argocd:{name}"),
        };
        let dest = doc.pointer("/spec/destination");
        let dest_name = dest
            .and_then(|d| d.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let dest_server = dest
            .and_then(|d| d.get("server"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let cluster = match (dest_name, dest_server) {
            (Some(n), _) => n.to_string(),
            (None, Some(IN_CLUSTER_SERVER)) => IN_CLUSTER.to_string(),
            (None, Some(s)) => s.to_string(),
            (None, None) => {
                return Err(
                    "field `spec.destination`: names no cluster (`name` or `server`)".into(),
                )
            }
        };
        Ok(AppView { doc, app, cluster })
    }

    fn status(&self, pointer: &str) -> Option<&'a Value> {
        self.doc.pointer(&format!("/status{pointer}"))
    }

    fn emit_all(&self, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        self.declared(emit)?;
        if let Some(history) = self.status("/history").and_then(Value::as_array) {
            for (i, entry) in history.iter().enumerate() {
                self.history_sync(entry, emit)
                    .map_err(|e| format!("status.history[{i}]: {e}"))?;
            }
        }
        if let Some(op) = self.status("/operationState").filter(|o| o.is_object()) {
            self.operation_sync(op, emit)
                .map_err(|e| format!("status.operationState: {e}"))?;
        }
        self.inventory(emit)?;
        self.health(emit)
    }

    /// When the status was last computed: `reconciledAt`, else the last
    /// operation's end, else `--time`/file time.
    fn status_time(&self, emit: &Emitter<'_, '_>) -> (annal_schemas::Timestamp, TimeSource) {
        let own = self
            .status("/reconciledAt")
            .and_then(time::parse)
            .or_else(|| {
                self.status("/operationState/finishedAt")
                    .and_then(time::parse)
            });
        emit.time(own)
    }

    fn push(
        &self,
        emit: &mut Emitter<'_, '_>,
        event_type: EventType,
        time: (annal_schemas::Timestamp, TimeSource),
        data: Value,
        time_in_id: bool,
    ) -> Result<(), String> {
        let id = Id::content("argocd", time_in_id);
        emit.emit(Event::new(event_type, id, time, self.cluster.clone(), data))
    }

    fn declared(&self, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let spec = self.doc.get("spec").ok_or("field `spec`: missing")?;
        let sources: Vec<&Value> = match spec.get("sources").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => list.iter().collect(),
            _ => spec.get("source").into_iter().collect(),
        };
        let source = |s: &Value| {
            let mut m = Map::new();
            for (from, to) in [
                ("repoURL", "repo"),
                ("path", "path"),
                ("targetRevision", "target_revision"),
                ("chart", "chart"),
                ("ref", "ref"),
            ] {
                if let Some(v) = s.get(from).and_then(Value::as_str) {
                    m.insert(to.into(), v.into());
                }
            }
            Value::Object(m)
        };
        let policy = spec.get("syncPolicy");
        let automated = policy
            .and_then(|p| p.get("automated"))
            .filter(|a| !a.is_null());
        let flag = |key: &str| {
            automated
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let mut destination = json!({"cluster": self.cluster});
        for key in ["namespace", "server", "name"] {
            if let Some(v) = spec
                .pointer(&format!("/destination/{key}"))
                .and_then(Value::as_str)
            {
                destination[key] = v.into();
            }
        }
        let mut data = json!({
            "app": self.app,
            "project": spec.get("project").and_then(Value::as_str).unwrap_or("default"),
            "destination": destination,
            "sync_policy": {
                "automated": automated.is_some_and(|a| a.get("enabled").and_then(Value::as_bool).unwrap_or(true)),
                "prune": flag("prune"),
                "self_heal": flag("selfHeal"),
            },
        });
        if let Some(first) = sources.first() {
            data["source"] = source(first);
        }
        if sources.len() > 1 {
            data["sources"] = Value::Array(sources.iter().map(|s| source(s)).collect());
        }
        let own = time::field(
            self.doc.get("metadata").unwrap_or(&Value::Null),
            "creationTimestamp",
        );
        let time = match emit.ctx.time {
            Some(t) => (t, TimeSource::Flag),
            None => emit.time(own),
        };
        self.push(emit, EventType::AppDeclared, time, data, false)
    }

    fn history_sync(&self, entry: &Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let mut data = json!({"app": self.app, "controller": "argocd", "phase": "Succeeded"});
        revisions_into(entry, &mut data);
        for (from, to) in [
            ("deployStartedAt", "started_at"),
            ("deployedAt", "finished_at"),
        ] {
            if let Some(t) = entry.get(from).and_then(time::parse) {
                data[to] = t.to_string().into();
            }
        }
        if let Some(id) = entry.get("id") {
            data["history_id"] = id.clone();
        }
        if let Some(by) = entry.get("initiatedBy").filter(|v| v.is_object()) {
            data["initiated_by"] = by.clone();
        }
        let own = entry.get("deployedAt").and_then(time::parse);
        self.push(emit, EventType::AppSync, emit.time(own), data, true)
    }

    fn operation_sync(&self, op: &Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let phase = match op.get("phase").and_then(Value::as_str) {
            Some(p @ ("Running" | "Succeeded" | "Failed" | "Error" | "Terminating")) => p,
            Some(other) => return Err(format!("field `phase`: unknown phase {other:?}")),
            None => "Running",
        };
        let sync = op.pointer("/operation/sync");
        let mut data = json!({
            "app": self.app,
            "controller": "argocd",
            "phase": phase,
            "prune": sync.and_then(|s| s.get("prune")).and_then(Value::as_bool).unwrap_or(false),
            "dry_run": sync.and_then(|s| s.get("dryRun")).and_then(Value::as_bool).unwrap_or(false),
        });
        match op.get("syncResult") {
            Some(result)
                if result.get("revision").is_some() || result.get("revisions").is_some() =>
            {
                revisions_into(result, &mut data)
            }
            _ => {
                if let Some(s) = sync {
                    revisions_into(s, &mut data)
                }
            }
        }
        for (from, to) in [("startedAt", "started_at"), ("finishedAt", "finished_at")] {
            if let Some(t) = op.get(from).and_then(time::parse) {
                data[to] = t.to_string().into();
            }
        }
        if let Some(m) = op.get("message").and_then(Value::as_str) {
            data["message"] = m.into();
        }
        if let Some(by) = op
            .pointer("/operation/initiatedBy")
            .filter(|v| v.is_object())
        {
            data["initiated_by"] = by.clone();
        }
        let resources: Vec<Value> = op
            .pointer("/syncResult/resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(sync_resource)
            .collect();
        if !resources.is_empty() {
            data["resources"] = Value::Array(resources);
        }
        let own = op
            .get("finishedAt")
            .and_then(time::parse)
            .or_else(|| op.get("startedAt").and_then(time::parse));
        self.push(emit, EventType::AppSync, emit.time(own), data, true)
    }

    fn inventory(&self, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let Some(resources) = self.status("/resources").and_then(Value::as_array) else {
            return Ok(());
        };
        let entries: Vec<Value> = resources
            .iter()
            .map(|r| {
                let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                json!({"group": s("group"), "version": s("version"), "kind": s("kind"), "namespace": s("namespace"), "name": s("name")})
            })
            .collect();
        let mut data = json!({"app": self.app, "entries": entries});
        if let Some(sync) = self.status("/sync") {
            revisions_into(sync, &mut data);
        }
        let time = self.status_time(emit);
        self.push(emit, EventType::AppInventory, time, data, true)
    }

    fn health(&self, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let Some(status) = self.status("/health/status").and_then(Value::as_str) else {
            return Ok(());
        };
        let status = match status {
            "Healthy" | "Progressing" | "Degraded" | "Suspended" | "Missing" | "Unknown" => status,
            _ => "Unknown",
        };
        let mut data = json!({"app": self.app, "status": status});
        if let Some(sync) = self.status("/sync") {
            revisions_into(sync, &mut data);
            if let Some(s) = sync.get("status").and_then(Value::as_str) {
                data["sync_status"] = s.into();
            }
        }
        let time = self.status_time(emit);
        self.push(emit, EventType::AppHealth, time, data, true)
    }
}

/// `revision` (single source) or `revisions` (multi-source; the first is
/// also `revision`).
fn revisions_into(from: &Value, data: &mut Value) {
    if let Some(r) = from
        .get("revision")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        data["revision"] = r.into();
    }
    if let Some(list) = from.get("revisions").and_then(Value::as_array) {
        let revs: Vec<Value> = list.iter().filter(|v| v.is_string()).cloned().collect();
        if let Some(first) = revs.first() {
            if data.get("revision").is_none() {
                data["revision"] = first.clone();
            }
            data["revisions"] = Value::Array(revs);
        }
    }
}

/// A `syncResult.resources[]` entry; `action` is the verb kubectl printed
/// (`configured`, `created`, `pruned`, `serverside-applied`, ...).
fn sync_resource(r: &Value) -> Value {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = json!({"group": s("group"), "version": s("version"), "kind": s("kind"), "namespace": s("namespace"), "name": s("name")});
    if let Some(status) = r.get("status").and_then(Value::as_str) {
        out["status"] = status.into();
    }
    let message = s("message");
    let action = if s("status") == "Pruned" || message == "pruned" {
        Some("pruned")
    } else {
        message.split_whitespace().last()
    };
    if let Some(a) = action {
        out["action"] = a.into();
    }
    for (from, to) in [
        ("syncPhase", "sync_phase"),
        ("hookPhase", "hook_phase"),
        ("hookType", "hook_type"),
    ] {
        if let Some(v) = r.get(from).and_then(Value::as_str) {
            out[to] = v.into();
        }
    }
    out
}

fn base64_decode(s: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .ok()?;
    String::from_utf8(bytes).ok()
}
