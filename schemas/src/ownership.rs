//! Ownership markers: the labels and annotations by which GitOps tools claim
//! the objects they manage (DESIGN.md, "Time travel and ownership").
//!
//! This module reads one object's metadata and lists its claims; deciding
//! between claims over time (inventories, conflicts) is the query layer's
//! job. It lives here because ingest (to report what it found) and query
//! (to reconstruct ownership) must read the markers the same way.

use std::collections::BTreeMap;

/// Argo CD annotation tracking: `<app>:<group>/<kind>:<namespace>/<name>`.
pub const ARGOCD_TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
/// Argo CD (legacy) label tracking.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Flux kustomize-controller labels.
pub const FLUX_KS_NAME: &str = "kustomize.toolkit.fluxcd.io/name";
/// See [`FLUX_KS_NAME`].
pub const FLUX_KS_NAMESPACE: &str = "kustomize.toolkit.fluxcd.io/namespace";
/// Flux helm-controller labels.
pub const FLUX_HELM_NAME: &str = "helm.toolkit.fluxcd.io/name";
/// See [`FLUX_HELM_NAME`].
pub const FLUX_HELM_NAMESPACE: &str = "helm.toolkit.fluxcd.io/namespace";
/// Helm's `managed-by` label (value `Helm`).
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Helm release annotations.
pub const HELM_RELEASE_NAME: &str = "meta.helm.sh/release-name";
/// See [`HELM_RELEASE_NAME`].
pub const HELM_RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";
/// Fleet bundle labels.
pub const FLEET_BUNDLE_NAME: &str = "fleet.cattle.io/bundle-name";
/// See [`FLEET_BUNDLE_NAME`].
pub const FLEET_BUNDLE_NAMESPACE: &str = "fleet.cattle.io/bundle-namespace";

/// Which marker a claim came from, in DESIGN's precedence order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Marker {
    /// `argocd.argoproj.io/tracking-id` matching the object.
    TrackingId,
    /// `kustomize.toolkit.fluxcd.io/name` + `/namespace`.
    FluxKustomization,
    /// `helm.toolkit.fluxcd.io/name` + `/namespace`.
    FluxHelmRelease,
    /// `app.kubernetes.io/managed-by: Helm` + `meta.helm.sh/release-*`.
    Helm,
    /// `fleet.cattle.io/bundle-name` + `/bundle-namespace`.
    Fleet,
    /// Listed in the app's latest `app.inventory` (not a marker on the
    /// object itself: the query layer adds it for the instant asked).
    Inventory,
    /// `app.kubernetes.io/instance` (Argo CD label tracking).
    InstanceLabel,
}

impl Marker {
    /// Every marker, in precedence order.
    pub const ALL: [Marker; 7] = [
        Marker::TrackingId,
        Marker::FluxKustomization,
        Marker::FluxHelmRelease,
        Marker::Helm,
        Marker::Fleet,
        Marker::Inventory,
        Marker::InstanceLabel,
    ];

    /// The marker named by [`Marker::as_str`].
    pub fn parse(name: &str) -> Option<Marker> {
        Marker::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// A short name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            Marker::TrackingId => "tracking-id",
            Marker::FluxKustomization => "flux-kustomization",
            Marker::FluxHelmRelease => "flux-helmrelease",
            Marker::Helm => "helm",
            Marker::Fleet => "fleet",
            Marker::Inventory => "inventory",
            Marker::InstanceLabel => "instance-label",
        }
    }
}

/// One owner claimed by an object's own metadata.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Claim {
    /// Qualified app name (`argocd:guestbook`, `flux:flux-system/apps`, ...).
    pub owner: String,
    /// Where the claim came from.
    pub marker: Marker,
}

/// The claims of one object, and the tracking id that did not match it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Markers {
    /// Claims, in precedence order.
    pub claims: Vec<Claim>,
    /// A tracking id naming another object (a copied annotation): no claim,
    /// and flagged.
    pub tracking_mismatch: Option<String>,
}

/// The identity fields a tracking id is checked against.
#[derive(Clone, Copy, Debug)]
pub struct ObjectIdentity<'a> {
    /// `apiVersion` (the group is the part before `/`).
    pub api_version: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Namespace (empty when cluster-scoped).
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
}

impl ObjectIdentity<'_> {
    /// API group: empty for the core group (`v1`).
    pub fn group(&self) -> &str {
        group_of(self.api_version)
    }
}

/// The API group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The version of an `apiVersion` (`apps/v1` → `v1`, `v1` → `v1`).
pub fn version_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or(api_version, |(_, v)| v)
}

/// The claims of a Kubernetes object (as stored in `object.observed`).
pub fn of_object(object: &crate::data::KubeObject) -> Markers {
    let meta = &object.metadata;
    markers(
        ObjectIdentity {
            api_version: &object.api_version,
            kind: &object.kind,
            namespace: meta.namespace.as_deref().unwrap_or(""),
            name: &meta.name,
        },
        &meta.labels,
        &meta.annotations,
    )
}

/// The claims an object makes through its labels and annotations.
pub fn markers(
    object: ObjectIdentity<'_>,
    labels: &impl Lookup,
    annotations: &impl Lookup,
) -> Markers {
    let mut out = Markers::default();
    if let Some(value) = annotations.lookup(ARGOCD_TRACKING_ID) {
        match TrackingId::parse(value) {
            Some(t) if t.matches(&object) => out.claims.push(Claim {
                owner: format!("argocd:{}", t.app),
                marker: Marker::TrackingId,
            }),
            _ => out.tracking_mismatch = Some(value.to_string()),
        }
    }
    let pairs = [
        (
            FLUX_KS_NAME,
            FLUX_KS_NAMESPACE,
            "flux",
            Marker::FluxKustomization,
        ),
        (
            FLUX_HELM_NAME,
            FLUX_HELM_NAMESPACE,
            "flux-helm",
            Marker::FluxHelmRelease,
        ),
    ];
    for (name_key, ns_key, prefix, marker) in pairs {
        if let (Some(name), Some(ns)) = (labels.lookup(name_key), labels.lookup(ns_key)) {
            out.claims.push(Claim {
                owner: format!("{prefix}:{ns}/{name}"),
                marker,
            });
        }
    }
    if labels.lookup(MANAGED_BY) == Some("Helm") {
        if let (Some(name), Some(ns)) = (
            annotations.lookup(HELM_RELEASE_NAME),
            annotations.lookup(HELM_RELEASE_NAMESPACE),
        ) {
            out.claims.push(Claim {
                owner: format!("helm:{ns}/{name}"),
                marker: Marker::Helm,
            });
        }
    }
    if let (Some(name), Some(ns)) = (
        labels.lookup(FLEET_BUNDLE_NAME),
        labels.lookup(FLEET_BUNDLE_NAMESPACE),
    ) {
        out.claims.push(Claim {
            owner: format!("fleet:{ns}/{name}"),
            marker: Marker::Fleet,
        });
    }
    if let Some(app) = labels.lookup(INSTANCE_LABEL) {
        out.claims.push(Claim {
            owner: format!("argocd:{app}"),
            marker: Marker::InstanceLabel,
        });
    }
    out
}

/// Labels or annotations, owned (a decoded object) or borrowed (the
/// indexes' view of an event's data).
pub trait Lookup {
    /// The value of `key`, if set.
    fn lookup(&self, key: &str) -> Option<&str>;
}

impl Lookup for BTreeMap<String, String> {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Lookup for BTreeMap<&str, &str> {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).copied()
    }
}

/// Who owns an object, decided from all its claims.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ownership {
    /// The owner: the first claim in precedence order (`None`: unowned).
    pub owner: Option<String>,
    /// The marker that owner's claim came from.
    pub owner_kind: Option<Marker>,
    /// Every distinct owner that counts, in precedence order.
    pub claims: Vec<String>,
    /// Two or more different GitOps owners claim the object.
    pub conflict: bool,
}

/// Decides ownership from an object's claims (its own markers plus the
/// inventories listing it), following DESIGN's rules:
///
/// - claims are ranked by [`Marker`] precedence; the first is the owner;
/// - a Helm release installed by Flux's helm-controller carries both
///   `flux-helm:` and `helm:` claims: one owner chain, so the `helm:` claim
///   is dropped when a `flux-helm:` claim exists;
/// - `app.kubernetes.io/instance` is Argo CD's legacy *label* tracking, and
///   many Helm charts set that label themselves: it counts only when no
///   other claim exists, or it would make every chart installed by Flux or
///   Helm look contested;
/// - the same owner through two markers is one claim; two different owners
///   are a conflict.
pub fn decide(claims: &[Claim]) -> Ownership {
    let mut ranked: Vec<&Claim> = claims.iter().collect();
    ranked.sort_by_key(|c| c.marker);
    let flux_helm = ranked.iter().any(|c| c.marker == Marker::FluxHelmRelease);
    let others = ranked.iter().any(|c| c.marker != Marker::InstanceLabel);
    let mut out = Ownership::default();
    for claim in ranked {
        if (claim.marker == Marker::Helm && flux_helm)
            || (claim.marker == Marker::InstanceLabel && others)
            || out.claims.contains(&claim.owner)
        {
            continue;
        }
        if out.owner.is_none() {
            out.owner = Some(claim.owner.clone());
            out.owner_kind = Some(claim.marker);
        }
        out.claims.push(claim.owner.clone());
    }
    out.conflict = out.claims.len() > 1;
    out
}

/// A parsed `argocd.argoproj.io/tracking-id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackingId<'a> {
    /// App instance name (`<app>` or `<appNamespace>_<app>`).
    pub app: &'a str,
    /// Group (empty for core).
    pub group: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Namespace (empty when cluster-scoped).
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
}

impl<'a> TrackingId<'a> {
    /// Parses `<app>:<group>/<kind>:<namespace>/<name>` as Argo CD does
    /// (`SplitN(value, ":", 3)`).
    pub fn parse(value: &'a str) -> Option<Self> {
        let mut parts = value.splitn(3, ':');
        let app = parts.next().filter(|a| !a.is_empty())?;
        let (group, kind) = parts.next()?.split_once('/')?;
        let (namespace, name) = parts.next()?.split_once('/')?;
        if kind.is_empty() || name.is_empty() {
            return None;
        }
        Some(TrackingId {
            app,
            group,
            kind,
            namespace,
            name,
        })
    }

    /// Whether the id names `object`.
    pub fn matches(&self, object: &ObjectIdentity<'_>) -> bool {
        self.group == object.group()
            && self.kind == object.kind
            && self.namespace == object.namespace
            && self.name == object.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const DEPLOY: ObjectIdentity<'static> = ObjectIdentity {
        api_version: "apps/v1",
        kind: "Deployment",
        namespace: "default",
        name: "web",
    };

    #[test]
    fn decide_ranks_claims_and_flags_two_owners() {
        let claim = |owner: &str, marker| Claim {
            owner: owner.into(),
            marker,
        };
        let none = decide(&[]);
        assert_eq!((none.owner, none.conflict), (None, false));

        // Flux's helm-controller sets both: one chain, owned by flux-helm.
        let chain = decide(&[
            claim("helm:shop/web", Marker::Helm),
            claim("flux-helm:shop/web", Marker::FluxHelmRelease),
        ]);
        assert_eq!(chain.owner.as_deref(), Some("flux-helm:shop/web"));
        assert_eq!(chain.owner_kind, Some(Marker::FluxHelmRelease));
        assert_eq!(chain.claims, ["flux-helm:shop/web"]);
        assert!(!chain.conflict);

        // A chart's own instance label does not contest a real owner...
        let chart = decide(&[
            claim("argocd:web", Marker::InstanceLabel),
            claim("helm:shop/web", Marker::Helm),
        ]);
        assert_eq!(chart.claims, ["helm:shop/web"]);
        // ...but is the owner when nothing else claims the object.
        let label = decide(&[claim("argocd:web", Marker::InstanceLabel)]);
        assert_eq!(label.owner.as_deref(), Some("argocd:web"));

        // Same owner twice is one claim; a second owner is a conflict.
        let same = decide(&[
            claim("argocd:shop", Marker::Inventory),
            claim("argocd:shop", Marker::TrackingId),
        ]);
        assert_eq!((same.claims.len(), same.conflict), (1, false));
        assert_eq!(same.owner_kind, Some(Marker::TrackingId));
        let two = decide(&[
            claim("flux:flux-system/apps", Marker::FluxKustomization),
            claim("argocd:shop", Marker::TrackingId),
            claim("helm:shop/web", Marker::Helm),
        ]);
        assert_eq!(
            two.claims,
            ["argocd:shop", "flux:flux-system/apps", "helm:shop/web"]
        );
        assert!(two.conflict);
        for m in Marker::ALL {
            assert_eq!(Marker::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn tracking_ids_parse_core_group_and_cluster_scope() {
        let t = TrackingId::parse("app:/Service:ns/svc").unwrap();
        assert_eq!(
            (t.group, t.kind, t.namespace, t.name),
            ("", "Service", "ns", "svc")
        );
        let t = TrackingId::parse("app:rbac.authorization.k8s.io/ClusterRole:/admin").unwrap();
        assert_eq!((t.namespace, t.name), ("", "admin"));
        let t = TrackingId::parse("argocd_app:apps/Deployment:default/web").unwrap();
        assert_eq!(t.app, "argocd_app");
        assert!(TrackingId::parse("nonsense").is_none());
        assert!(TrackingId::parse(":apps/Deployment:default/web").is_none());
    }

    #[test]
    fn each_marker_gives_its_owner_and_a_copied_tracking_id_is_flagged() {
        let labels = map(&[
            (FLUX_KS_NAME, "apps"),
            (FLUX_KS_NAMESPACE, "flux-system"),
            (FLUX_HELM_NAME, "podinfo"),
            (FLUX_HELM_NAMESPACE, "podinfo"),
            (MANAGED_BY, "Helm"),
            (FLEET_BUNDLE_NAME, "b"),
            (FLEET_BUNDLE_NAMESPACE, "fleet-local"),
            (INSTANCE_LABEL, "guestbook"),
        ]);
        let annotations = map(&[
            (ARGOCD_TRACKING_ID, "gb:apps/Deployment:default/web"),
            (HELM_RELEASE_NAME, "podinfo"),
            (HELM_RELEASE_NAMESPACE, "podinfo"),
        ]);
        let m = markers(DEPLOY, &labels, &annotations);
        let owners: Vec<&str> = m.claims.iter().map(|c| c.owner.as_str()).collect();
        assert_eq!(
            owners,
            [
                "argocd:gb",
                "flux:flux-system/apps",
                "flux-helm:podinfo/podinfo",
                "helm:podinfo/podinfo",
                "fleet:fleet-local/b",
                "argocd:guestbook"
            ]
        );
        assert_eq!(m.tracking_mismatch, None);

        let copied = map(&[(ARGOCD_TRACKING_ID, "gb:apps/Deployment:default/other")]);
        let m = markers(DEPLOY, &BTreeMap::<String, String>::new(), &copied);
        assert!(m.claims.is_empty());
        assert!(m.tracking_mismatch.is_some());
    }
}
