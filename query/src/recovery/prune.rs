//! The prune plan: what a sync with pruning would delete, and whether a
//! person should look first (DESIGN "Recovery questions").
//!
//! Candidates are the objects live on the cluster at T that the app claims
//! and that are absent from the desired set (the rendered manifests). Each
//! is flagged when deleting it is risky:
//!
//! - `protected-kind`: Namespace, CustomResourceDefinition,
//!   PersistentVolumeClaim, PersistentVolume, ClusterRole,
//!   ClusterRoleBinding, or a Secret claimed by more than one app;
//! - `protection-annotation`: `argocd.argoproj.io/sync-options` with
//!   `Prune=false`, `helm.sh/resource-policy: keep`,
//!   `kustomize.toolkit.fluxcd.io/prune: disabled`;
//! - `foreign-manager`: someone else owns its desired-state fields;
//! - `claimed-by-another-app`: another app claims it too;
//! - `finalizers`: deletion will wait on a controller.
//!
//! `--max-deletions` and `--max-fraction` (of the app's live objects) turn
//! the plan into a gate: crossing either is a plan-level flag.

use annal_store::versions::ObjectName;
use annal_store::Store;
use serde::Serialize;

use crate::asof::inventory::{self, AsOf, Listings, Order};
use crate::asof::live_object::{self, LiveObject};
use crate::QueryError;

/// Kinds whose deletion loses data or breaks other tenants.
pub const PROTECTED_KINDS: [&str; 6] = [
    "Namespace",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
];

/// Kinds that have no namespace, so a default namespace does not apply.
pub const CLUSTER_SCOPED: [&str; 14] = [
    "Namespace",
    "Node",
    "PersistentVolume",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "StorageClass",
    "PriorityClass",
    "IngressClass",
    "RuntimeClass",
    "CSIDriver",
    "APIService",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

/// The identity of a rendered manifest: a namespaced kind without a
/// namespace gets `default_namespace` (the app's destination namespace, as
/// Argo CD and Flux apply it).
pub fn desired_name(
    api_version: &str,
    kind: String,
    namespace: String,
    name: String,
    default_namespace: Option<&str>,
) -> ObjectName {
    let namespace = match default_namespace {
        Some(ns) if namespace.is_empty() && !CLUSTER_SCOPED.contains(&kind.as_str()) => {
            ns.to_string()
        }
        _ => namespace,
    };
    ObjectName {
        group: annal_schemas::ownership::group_of(api_version).to_string(),
        kind,
        namespace,
        name,
    }
}

/// The question.
#[derive(Clone, Debug)]
pub struct Request {
    /// The app (qualified: `argocd:web`, `flux:ns/name`, ...).
    pub app: String,
    /// The cluster.
    pub cluster: String,
    /// The rendered manifests' objects.
    pub desired: Vec<ObjectName>,
    /// Most deletions allowed without approval.
    pub max_deletions: Option<u64>,
    /// Largest share of the app's live objects deleted without approval.
    pub max_fraction: Option<f64>,
    /// Further field managers that are not foreign.
    pub normal_managers: Vec<String>,
}

/// Why a candidate (or the plan) needs a person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flag {
    /// Stable code (see the module docs; plan-level: `max-deletions`,
    /// `max-fraction`).
    pub code: &'static str,
    /// The particulars.
    pub detail: String,
}

/// One object of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanObject {
    /// API group ("" for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid` of the live version (prune candidates only).
    pub uid: Option<String>,
    /// Every owner claiming it (prune candidates only).
    pub claims: Vec<String>,
    /// What makes deleting it risky (empty: nothing known).
    pub flags: Vec<Flag>,
}

/// The plan.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The app.
    pub app: String,
    /// The cluster.
    pub cluster: String,
    /// Valid time asked.
    pub at: String,
    /// System time asked.
    pub known_at: Option<String>,
    /// Live objects the app claims.
    pub live: u64,
    /// Objects in the desired set.
    pub desired: u64,
    /// Live, claimed, not desired: what pruning deletes.
    pub prune: Vec<PlanObject>,
    /// Desired, not live: what the sync creates.
    pub create: Vec<PlanObject>,
    /// Thresholds crossed.
    pub flags: Vec<Flag>,
}

impl Plan {
    /// Whether a person must approve: a flagged candidate or a crossed
    /// threshold.
    pub fn needs_approval(&self) -> bool {
        !self.flags.is_empty() || self.prune.iter().any(|o| !o.flags.is_empty())
    }
}

/// Builds the plan at `as_of`.
pub fn plan(store: &Store, request: &Request, as_of: &AsOf) -> Result<Plan, QueryError> {
    let listings = Listings::at(store, as_of)?;
    let live = inventory::cluster_rows(store, &request.cluster, as_of, &listings, Order::ByName)?;
    let normal = |m: &str| live_object::is_normal(m, "", &request.normal_managers);
    let desired: std::collections::BTreeSet<&ObjectName> = request.desired.iter().collect();
    let mut owned = 0u64;
    let mut prune = Vec::new();
    for r in &live {
        if !r.claims.contains(&request.app) {
            continue;
        }
        owned += 1;
        if desired.contains(&r.object) {
            continue;
        }
        let object = LiveObject::read(store, r.index)?;
        prune.push(PlanObject {
            group: r.object.group.clone(),
            kind: r.object.kind.clone(),
            namespace: r.object.namespace.clone(),
            name: r.object.name.clone(),
            uid: (!r.uid.is_empty()).then(|| r.uid.clone()),
            claims: r.claims.clone(),
            flags: flags(&r.object.kind, &r.claims, &request.app, &object, &normal),
        });
    }
    let live_names: std::collections::BTreeSet<&ObjectName> =
        live.iter().map(|r| &r.object).collect();
    let create = desired
        .iter()
        .filter(|d| !live_names.contains(*d))
        .map(|d| PlanObject {
            group: d.group.clone(),
            kind: d.kind.clone(),
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            uid: None,
            claims: Vec::new(),
            flags: Vec::new(),
        })
        .collect();
    let mut plan_flags = Vec::new();
    let deletions = prune.len() as u64;
    if let Some(max) = request.max_deletions {
        if deletions > max {
            plan_flags.push(Flag {
                code: "max-deletions",
                detail: format!("{deletions} deletions, more than --max-deletions {max}"),
            });
        }
    }
    if let Some(max) = request.max_fraction {
        let fraction = if owned == 0 {
            0.0
        } else {
            deletions as f64 / owned as f64
        };
        if fraction > max {
            plan_flags.push(Flag {
                code: "max-fraction",
                detail: format!(
                    "{deletions} of {owned} live objects ({:.1}%), more than --max-fraction {max}",
                    fraction * 100.0
                ),
            });
        }
    }
    Ok(Plan {
        app: request.app.clone(),
        cluster: request.cluster.clone(),
        at: as_of.valid.to_string(),
        known_at: as_of.known_at.map(|t| t.to_string()),
        live: owned,
        desired: request.desired.len() as u64,
        prune,
        create,
        flags: plan_flags,
    })
}

/// The risk flags of deleting one object `app` claims.
pub fn flags(
    kind: &str,
    claims: &[String],
    app: &str,
    object: &LiveObject,
    normal: &dyn Fn(&str) -> bool,
) -> Vec<Flag> {
    let mut out = Vec::new();
    let others: Vec<&String> = claims.iter().filter(|c| *c != app).collect();
    if PROTECTED_KINDS.contains(&kind) {
        out.push(Flag {
            code: "protected-kind",
            detail: format!("a {kind}: deleting it loses data or breaks other tenants"),
        });
    } else if kind == "Secret" && !others.is_empty() {
        out.push(Flag {
            code: "protected-kind",
            detail: "a Secret shared with other apps".into(),
        });
    }
    let a = &object.annotations;
    if a.get("argocd.argoproj.io/sync-options")
        .is_some_and(|v| v.split(',').any(|o| o.trim() == "Prune=false"))
    {
        out.push(Flag {
            code: "protection-annotation",
            detail: "argocd.argoproj.io/sync-options: Prune=false".into(),
        });
    }
    if a.get("helm.sh/resource-policy")
        .is_some_and(|v| v == "keep")
    {
        out.push(Flag {
            code: "protection-annotation",
            detail: "helm.sh/resource-policy: keep".into(),
        });
    }
    if a.get("kustomize.toolkit.fluxcd.io/prune")
        .is_some_and(|v| v == "disabled")
    {
        out.push(Flag {
            code: "protection-annotation",
            detail: "kustomize.toolkit.fluxcd.io/prune: disabled".into(),
        });
    }
    for (manager, field) in object.foreign_managers(normal) {
        out.push(Flag {
            code: "foreign-manager",
            detail: format!("field manager {manager} owns {field}"),
        });
    }
    if !others.is_empty() {
        out.push(Flag {
            code: "claimed-by-another-app",
            detail: format!(
                "also claimed by {}",
                others
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    if !object.finalizers.is_empty() {
        out.push(Flag {
            code: "finalizers",
            detail: format!("finalizers {}", object.finalizers.join(", ")),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(kind: &str, claims: &[&str], object: &LiveObject) -> Vec<&'static str> {
        let claims: Vec<String> = claims.iter().map(|c| c.to_string()).collect();
        flags(kind, &claims, "argocd:web", object, &|m| {
            live_object::is_normal(m, "", &[])
        })
        .iter()
        .map(|f| f.code)
        .collect()
    }

    fn annotated(k: &str, v: &str) -> LiveObject {
        LiveObject {
            annotations: [(k.to_string(), v.to_string())].into(),
            ..LiveObject::default()
        }
    }

    #[test]
    fn a_plain_object_of_one_app_has_no_flags() {
        assert!(codes("ConfigMap", &["argocd:web"], &LiveObject::default()).is_empty());
    }

    #[test]
    fn protected_kinds_and_shared_secrets_are_flagged() {
        for kind in PROTECTED_KINDS {
            assert_eq!(
                codes(kind, &["argocd:web"], &LiveObject::default()),
                ["protected-kind"]
            );
        }
        assert!(codes("Secret", &["argocd:web"], &LiveObject::default()).is_empty());
        assert_eq!(
            codes(
                "Secret",
                &["argocd:web", "argocd:api"],
                &LiveObject::default()
            ),
            ["protected-kind", "claimed-by-another-app"]
        );
    }

    #[test]
    fn each_protection_annotation_is_flagged() {
        for (k, v) in [
            (
                "argocd.argoproj.io/sync-options",
                "ServerSideApply=true,Prune=false",
            ),
            ("helm.sh/resource-policy", "keep"),
            ("kustomize.toolkit.fluxcd.io/prune", "disabled"),
        ] {
            assert_eq!(
                codes("ConfigMap", &["argocd:web"], &annotated(k, v)),
                ["protection-annotation"],
                "{k}"
            );
        }
        assert!(codes(
            "ConfigMap",
            &["argocd:web"],
            &annotated("argocd.argoproj.io/sync-options", "Prune=true")
        )
        .is_empty());
    }

    #[test]
    fn foreign_managers_and_finalizers_are_flagged() {
        let o = LiveObject {
            desired_state_managers: vec![
                ("argocd-controller".into(), ".spec.replicas".into()),
                ("kubectl-edit".into(), ".spec.replicas".into()),
            ],
            finalizers: vec!["kubernetes.io/pvc-protection".into()],
            ..LiveObject::default()
        };
        assert_eq!(
            codes("Deployment", &["argocd:web"], &o),
            ["foreign-manager", "finalizers"]
        );
    }
}
