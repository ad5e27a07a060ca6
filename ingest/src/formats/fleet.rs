//! `--format fleet`: Rancher Fleet BundleDeployments.
//!
//! A BundleDeployment is one bundle on one downstream cluster: app
//! `fleet:<bundle-namespace>/<bundle-name>`, on the cluster its
//! `fleet.cattle.io/cluster` label names (else `--cluster`). It yields
//! `app.sync` for its deployment (revision: the `fleet.cattle.io/commit`
//! label, else `spec.deploymentID`; phase from whether
//! `status.appliedDeploymentID` caught up and `status.ready`),
//! `app.inventory` from `status.resources`, and `app.health` from
//! `status.ready` / `nonReadyStatus` (Unknown when the agent reported
//! nothing yet).

use annal_schemas::EventType;
use serde_json::{json, Value};

use super::time::TimeSource;
use super::{k8s_object, Emitter, Event, Id};

const LABEL_CLUSTER: &str = "fleet.cattle.io/cluster";
const LABEL_BUNDLE: &str = "fleet.cattle.io/bundle-name";
const LABEL_BUNDLE_NS: &str = "fleet.cattle.io/bundle-namespace";
const LABEL_COMMIT: &str = "fleet.cattle.io/commit";

/// A BundleDeployment.
pub(super) fn bundle_deployment(
    doc: Value,
    emit: &mut Emitter<'_, '_>,
    app_events: bool,
) -> Result<(), String> {
    if app_events {
        let label = |k: &str| {
            doc.pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let cluster = match label(LABEL_CLUSTER) {
            Some(c) => c,
            None => emit.cluster("this BundleDeployment (no fleet.cattle.io/cluster label)")?,
        };
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or("field `metadata.name`: missing")?;
        let bundle = label(LABEL_BUNDLE).unwrap_or_else(|| name.to_string());
        let bundle_ns = label(LABEL_BUNDLE_NS)
            .or_else(|| {
                doc.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        let app = format!("fleet:{bundle_ns}/{bundle}");
        let spec = doc.get("spec").cloned().unwrap_or(Value::Null);
        let status = doc.get("status").cloned().unwrap_or(Value::Null);
        let deployment_id = spec.get("deploymentID").and_then(Value::as_str);
        let applied_id = status.get("appliedDeploymentID").and_then(Value::as_str);
        let ready = status.get("ready").and_then(Value::as_bool);
        let revision = label(LABEL_COMMIT).or_else(|| deployment_id.map(str::to_string));
        let time = emit.time(None);
        let push = |emit: &mut Emitter<'_, '_>,
                    event_type: EventType,
                    data: Value,
                    time: (annal_schemas::Timestamp, TimeSource)| {
            let id = Id::content("fleet", true);
            emit.emit(Event::new(event_type, id, time, cluster.clone(), data))
        };

        let phase = match (deployment_id, applied_id, ready) {
            (Some(d), Some(a), Some(false)) if d == a => "Failed",
            (Some(d), Some(a), _) if d == a => "Succeeded",
            _ => "Running",
        };
        let mut sync = json!({"app": app, "controller": "fleet-agent", "phase": phase});
        if let Some(r) = &revision {
            sync["revision"] = r.clone().into();
        }
        if let Some(d) = deployment_id {
            sync["deployment_id"] = d.into();
        }
        if let Some(a) = applied_id {
            sync["applied_deployment_id"] = a.into();
        }
        push(emit, EventType::AppSync, sync, time)?;

        if let Some(resources) = status.get("resources").and_then(Value::as_array) {
            let entries: Vec<Value> = resources
                .iter()
                .map(|r| {
                    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                    let (group, version) = s("apiVersion").rsplit_once('/').unwrap_or(("", s("apiVersion")));
                    json!({"group": group, "version": version, "kind": s("kind"), "namespace": s("namespace"), "name": s("name")})
                })
                .collect();
            let mut inv = json!({"app": app, "entries": entries});
            if let Some(r) = &revision {
                inv["revision"] = r.clone().into();
            }
            push(emit, EventType::AppInventory, inv, time)?;
        }

        let non_ready = status
            .get("nonReadyStatus")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let health = match (ready, non_ready) {
            (Some(true), _) => "Healthy",
            (_, true) | (Some(false), _) => "Degraded",
            (None, false) => "Unknown",
        };
        let mut h = json!({"app": app, "status": health});
        if let Some(r) = &revision {
            h["revision"] = r.clone().into();
        }
        push(emit, EventType::AppHealth, h, time)?;
    }
    if emit.ctx.cluster.is_none() {
        emit.skip("a Fleet control-plane object without --cluster (its app events are kept)");
        return Ok(());
    }
    k8s_object::observed(doc, emit)
}
