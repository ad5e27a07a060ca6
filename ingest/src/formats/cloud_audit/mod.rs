//! Managed clusters' audit logs, as their clouds export them.
//!
//! Nobody can point a managed API server's audit webhook at annal: on GKE,
//! AKS and EKS the audit log exists only as the cloud's log export, and each
//! wraps the same Kubernetes audit event its own way:
//! - [`gke`]: a Cloud Logging `LogEntry` whose `protoPayload` is a
//!   `google.cloud.audit.AuditLog` made from the audit event;
//! - [`aks`]: Azure diagnostic records of category `kube-audit` or
//!   `kube-audit-admin`, the audit event a JSON string in `properties.log`;
//! - [`eks`]: CloudWatch Logs events of the `kube-apiserver-audit-*`
//!   streams, the audit event a JSON string in `message`.
//!
//! Each record is unwrapped (AKS, EKS) or translated back (GKE) into a
//! native audit event and decoded by [`super::k8s_audit`], so one request
//! gives the same events with the same ids whichever copy is ingested, and
//! ingesting both appends it once. The cluster is the one the record names
//! (GKE `resource.labels.cluster_name`, AKS the `managedClusters/<name>` of
//! `resourceId`, EKS the log group `/aws/eks/<name>/cluster`) unless
//! `--cluster` names it.

use serde_json::Value;

use super::{k8s_audit, Context, Emitter};

pub(super) mod aks;
pub(super) mod eks;
pub(super) mod gke;

/// Decodes `native`, an audit event, on `cluster` unless `--cluster` names
/// one; `dry_run` when the export marked the request as one.
fn decode(
    native: Value,
    cluster: Option<&str>,
    dry_run: bool,
    emit: &mut Emitter<'_, '_>,
) -> Result<(), String> {
    let ctx = Context {
        cluster: emit.ctx.cluster.or(cluster),
        ..*emit.ctx
    };
    let mut inner = Emitter {
        ctx: &ctx,
        out: &mut *emit.out,
        path: emit.path,
    };
    k8s_audit::event_marked(native, &mut inner, dry_run)
}

/// Decodes each element of a wrapper's array with `one`; an element that
/// fails is rejected on its own (named `key[i]`) and the others still decode.
fn each(
    items: Vec<Value>,
    key: &str,
    emit: &mut Emitter<'_, '_>,
    mut one: impl FnMut(Value, &mut Emitter<'_, '_>) -> Result<(), String>,
) {
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("{}{key}[{i}].", emit.path);
        let mut item_ctx = *emit.ctx;
        item_ctx.item = Some(i);
        let kept = item.clone();
        let before = emit.out.events.len();
        let mut inner = Emitter {
            ctx: &item_ctx,
            out: &mut *emit.out,
            path: &path,
        };
        if let Err(reason) = one(item, &mut inner) {
            emit.out.events.truncate(before);
            emit.out.reject(super::at(&path, &reason), kept);
        }
    }
}

/// A JSON string field holding an audit event, parsed.
fn embedded_event(text: &str, field: &str) -> Result<Value, String> {
    let event: Value = serde_json::from_str(text)
        .map_err(|e| format!("field `{field}`: not a JSON audit event: {e}"))?;
    if event.get("auditID").is_none() || event.get("verb").is_none() {
        return Err(format!(
            "field `{field}`: not a Kubernetes audit event (no auditID/verb)"
        ));
    }
    Ok(event)
}
