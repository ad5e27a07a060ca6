//! `--format flux`: Kustomizations, HelmReleases and notification events.
//!
//! A Kustomization is app `flux:<ns>/<name>`, a HelmRelease
//! `flux-helm:<ns>/<name>`, on `--cluster` (where the controller runs).
//! Each yields:
//! - `app.declared` (source reference, path, prune/suspend);
//! - `app.inventory` from `status.inventory.entries`, whose ids are
//!   `<namespace>_<name>_<group>_<kind>` split into exactly four parts
//!   (Kubernetes names cannot hold `_`; the core group and cluster scope
//!   are empty parts), the version from `v`;
//! - `app.sync` for the last reconciliation (from `lastAppliedRevision`,
//!   `lastAttemptedRevision` and the `Ready` condition) and for each
//!   `status.history` entry;
//! - `app.health` from `Ready` (`True` Healthy, `False` Degraded, `Unknown`
//!   Progressing; `spec.suspend` Suspended).
//!
//! Notification-controller payloads (`involvedObject`, `severity`,
//! `reason`, `metadata["<group>/revision"]`) are kept as `k8s.event`, and
//! for Kustomizations and HelmReleases also become `app.sync`/`app.health`.

use annal_schemas::{EventType, Timestamp};
use serde_json::{json, Value};

use super::kind::Kind;
use super::time::{self, TimeSource};
use super::{ids, k8s_object, Emitter, Event, Id};

/// A Kustomization or HelmRelease.
pub(super) fn resource(
    doc: Value,
    kind: Kind,
    emit: &mut Emitter<'_, '_>,
    app_events: bool,
) -> Result<(), String> {
    if app_events {
        let cluster = emit.cluster(kind.describe())?;
        let meta = doc.get("metadata").ok_or("field `metadata`: missing")?;
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .ok_or("field `metadata.name`: missing")?;
        let ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let prefix = if kind == Kind::HelmRelease {
            "flux-helm"
        } else {
            "flux"
        };
        let app = App {
            app: format!("{prefix}:{ns}/{name}"),
            controller: if kind == Kind::HelmRelease {
                "helm-controller"
            } else {
                "kustomize-controller"
            },
            cluster,
        };
        app.emit_all(&doc, kind, emit)?;
    }
    k8s_object::observed(doc, emit)
}

/// A notification-controller event payload.
pub(super) fn notification(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let cluster = emit.cluster("this Flux event")?;
    let involved = doc
        .get("involvedObject")
        .ok_or("field `involvedObject`: missing")?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let kind = s(involved, "kind");
    let name = s(involved, "name");
    let ns = s(involved, "namespace");
    let api = s(involved, "apiVersion");
    let (group, version) = api
        .rsplit_once('/')
        .map_or((String::new(), api.clone()), |(g, v)| {
            (g.to_string(), v.to_string())
        });
    let severity = s(&doc, "severity");
    let reason = s(&doc, "reason");
    let own = time::field(&doc, "timestamp");
    let time = emit.time(own);
    let revision = doc
        .get("metadata")
        .and_then(Value::as_object)
        .and_then(|m| m.iter().find(|(k, _)| k.ends_with("/revision")))
        .and_then(|(_, v)| v.as_str())
        .map(str::to_string);
    let annotations: serde_json::Map<String, Value> = doc
        .get("metadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.is_string())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut event = json!({
        "api_version": "notification.toolkit.fluxcd.io/event",
        "name": format!("{name}.{}", &ids::content("", EventType::KubeEvent, &cluster, Some(&time), &doc)[1..17]),
        "namespace": ns,
        "involved": {"group": group, "version": version, "kind": kind, "namespace": ns, "name": name},
        "reason": reason,
        "message": s(&doc, "message"),
        "event_type": if severity == "error" { "Warning" } else { "Normal" },
        "reporting_controller": s(&doc, "reportingController"),
        "count": 1,
        "last_time": time.0.to_string(),
    });
    if let Some(uid) = involved.get("uid").and_then(Value::as_str) {
        event["involved"]["uid"] = uid.into();
    }
    if let Some(i) = doc.get("reportingInstance").and_then(Value::as_str) {
        event["reporting_instance"] = i.into();
    }
    if !annotations.is_empty() {
        event["annotations"] = Value::Object(annotations);
    }
    let id = Id::content("flux-event", true);
    emit.emit(Event::new(
        EventType::KubeEvent,
        id,
        time,
        cluster.clone(),
        event,
    ))?;

    let (prefix, controller) = match kind.as_str() {
        "Kustomization" if group.starts_with("kustomize.toolkit.fluxcd.io") => {
            ("flux", "kustomize-controller")
        }
        "HelmRelease" if group.starts_with("helm.toolkit.fluxcd.io") => {
            ("flux-helm", "helm-controller")
        }
        _ => return Ok(()),
    };
    let app = App {
        app: format!("{prefix}:{ns}/{name}"),
        controller,
        cluster,
    };
    let (phase, health) = match (severity.as_str(), reason.as_str()) {
        ("error", _) => ("Failed", "Degraded"),
        (_, r) if r.contains("Progressing") || r.contains("Started") => ("Running", "Progressing"),
        _ => ("Succeeded", "Healthy"),
    };
    let mut sync = json!({"app": app.app, "controller": controller, "phase": phase, "reason": reason, "finished_at": time.0.to_string()});
    let mut health_data = json!({"app": app.app, "status": health});
    if let Some(r) = &revision {
        sync["revision"] = r.clone().into();
        health_data["revision"] = r.clone().into();
    }
    app.push(emit, EventType::AppSync, time, sync)?;
    app.push(emit, EventType::AppHealth, time, health_data)
}

struct App {
    app: String,
    controller: &'static str,
    cluster: String,
}

impl App {
    fn push(
        &self,
        emit: &mut Emitter<'_, '_>,
        event_type: EventType,
        time: (Timestamp, TimeSource),
        data: Value,
    ) -> Result<(), String> {
        let in_id = event_type != EventType::AppDeclared;
        let id = Id::content("flux", in_id);
        emit.emit(Event::new(event_type, id, time, self.cluster.clone(), data))
    }

    fn emit_all(&self, doc: &Value, kind: Kind, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let spec = doc.get("spec").cloned().unwrap_or(Value::Null);
        let status = doc.get("status").cloned().unwrap_or(Value::Null);
        let ready = status
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
        let ready_time = ready.and_then(|c| time::field(c, "lastTransitionTime"));
        let status_time = emit.time(ready_time);

        // Declaration.
        let mut source = json!({});
        if let Some(r) = spec
            .get("sourceRef")
            .or_else(|| spec.get("chartRef"))
            .or_else(|| spec.pointer("/chart/spec/sourceRef"))
        {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            source["repo"] = format!("{}/{}", s("kind"), s("name")).into();
        }
        if let Some(p) = spec.get("path").and_then(Value::as_str) {
            source["path"] = p.into();
        }
        if let Some(c) = spec.pointer("/chart/spec/chart").and_then(Value::as_str) {
            source["path"] = c.into();
        }
        if let Some(v) = spec.pointer("/chart/spec/version").and_then(Value::as_str) {
            source["target_revision"] = v.into();
        }
        let suspended = spec
            .get("suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let prune = spec
            .get("prune")
            .and_then(Value::as_bool)
            .unwrap_or(kind == Kind::HelmRelease);
        let declared = json!({
            "app": self.app,
            "source": source,
            "destination": {"cluster": self.cluster, "namespace": spec.get("targetNamespace").and_then(Value::as_str).or_else(|| doc.pointer("/metadata/namespace").and_then(Value::as_str)).unwrap_or("default")},
            "sync_policy": {"automated": !suspended, "prune": prune, "self_heal": !suspended},
        });
        let declared_time = match emit.ctx.time {
            Some(t) => (t, TimeSource::Flag),
            None => emit.time(
                doc.get("metadata")
                    .and_then(|m| time::field(m, "creationTimestamp")),
            ),
        };
        self.push(emit, EventType::AppDeclared, declared_time, declared)?;

        let applied = status.get("lastAppliedRevision").and_then(Value::as_str);
        let attempted = status.get("lastAttemptedRevision").and_then(Value::as_str);

        // Inventory.
        if let Some(entries) = status
            .pointer("/inventory/entries")
            .and_then(Value::as_array)
        {
            let mut out = Vec::with_capacity(entries.len());
            for (i, e) in entries.iter().enumerate() {
                let id = e
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("status.inventory.entries[{i}].id: missing"))?;
                let parts: Vec<&str> = id.split('_').collect();
                let [namespace, name, group, kind] = parts[..] else {
                    return Err(format!(
                        "status.inventory.entries[{i}].id: {id:?} does not split into <namespace>_<name>_<group>_<kind>"
                    ));
                };
                if name.is_empty() || kind.is_empty() {
                    return Err(format!(
                        "status.inventory.entries[{i}].id: {id:?} has an empty name or kind"
                    ));
                }
                let version = e.get("v").and_then(Value::as_str).unwrap_or("");
                out.push(json!({"group": group, "version": version, "kind": kind, "namespace": namespace, "name": name}));
            }
            let mut inv = json!({"app": self.app, "entries": out});
            if let Some(r) = applied {
                inv["revision"] = r.into();
            }
            self.push(emit, EventType::AppInventory, status_time, inv)?;
        }

        // Last reconciliation.
        if let Some(ready) = ready {
            let cond = |k: &str| ready.get(k).and_then(Value::as_str).unwrap_or("");
            let (phase, revision) = match cond("status") {
                "True" => ("Succeeded", applied.or(attempted)),
                "False" => ("Failed", attempted.or(applied)),
                _ => ("Running", attempted.or(applied)),
            };
            let mut sync = json!({"app": self.app, "controller": self.controller, "phase": phase, "reason": cond("reason")});
            if let Some(r) = revision {
                sync["revision"] = r.into();
            }
            if let Some(t) = ready_time {
                sync["finished_at"] = t.to_string().into();
            }
            if !cond("message").is_empty() {
                sync["message"] = cond("message").into();
            }
            self.push(emit, EventType::AppSync, status_time, sync)?;
            let health = if suspended {
                "Suspended"
            } else {
                match cond("status") {
                    "True" => "Healthy",
                    "False" => "Degraded",
                    _ => "Progressing",
                }
            };
            let mut h = json!({"app": self.app, "status": health});
            if let Some(r) = revision {
                h["revision"] = r.into();
            }
            self.push(emit, EventType::AppHealth, status_time, h)?;
        }

        // History.
        if let Some(history) = status.get("history").and_then(Value::as_array) {
            for (i, entry) in history.iter().enumerate() {
                let result = if kind == Kind::HelmRelease {
                    self.helm_history(entry, emit)
                } else {
                    self.kustomize_history(entry, emit)
                };
                result.map_err(|e| format!("status.history[{i}]: {e}"))?;
            }
        }
        Ok(())
    }

    fn kustomize_history(&self, entry: &Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let succeeded = entry.get("lastReconciledStatus").and_then(Value::as_str)
            == Some("ReconciliationSucceeded");
        let mut sync = json!({"app": self.app, "controller": self.controller, "phase": if succeeded { "Succeeded" } else { "Failed" }});
        if let Some(r) = entry
            .pointer("/metadata/revision")
            .or_else(|| entry.pointer("/metadata/originRevision"))
            .and_then(Value::as_str)
        {
            sync["revision"] = r.into();
        }
        for (from, to) in [
            ("firstReconciled", "started_at"),
            ("lastReconciled", "finished_at"),
        ] {
            if let Some(t) = entry.get(from).and_then(time::parse) {
                sync[to] = t.to_string().into();
            }
        }
        for key in ["digest", "totalReconciliations", "lastReconciledStatus"] {
            if let Some(v) = entry.get(key) {
                sync[key] = v.clone();
            }
        }
        let time = emit.time(entry.get("lastReconciled").and_then(time::parse));
        self.push(emit, EventType::AppSync, time, sync)
    }

    fn helm_history(&self, entry: &Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
        let status = entry.get("status").and_then(Value::as_str).unwrap_or("");
        let phase = match status {
            "deployed" | "superseded" => "Succeeded",
            "pending-install" | "pending-upgrade" | "pending-rollback" => "Running",
            _ => "Failed",
        };
        let mut sync = json!({"app": self.app, "controller": self.controller, "phase": phase, "release_status": status});
        if let Some(v) = entry.get("chartVersion").and_then(Value::as_str) {
            sync["revision"] = v.into();
        }
        for key in [
            "chartName",
            "appVersion",
            "configDigest",
            "digest",
            "ociDigest",
            "version",
            "action",
        ] {
            if let Some(v) = entry.get(key) {
                sync[key] = v.clone();
            }
        }
        for (from, to) in [
            ("firstDeployed", "started_at"),
            ("lastDeployed", "finished_at"),
        ] {
            if let Some(t) = entry.get(from).and_then(time::parse) {
                sync[to] = t.to_string().into();
            }
        }
        let time = emit.time(entry.get("lastDeployed").and_then(time::parse));
        self.push(emit, EventType::AppSync, time, sync)
    }
}
