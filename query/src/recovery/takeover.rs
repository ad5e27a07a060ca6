//! The takeover plan: what a new controller may adopt after the old control
//! plane is lost (DESIGN "Recovery questions").
//!
//! The scope is every object the apps own or are expected to own at T:
//! live objects any of them claims, and the entries of their last-good
//! inventories (the `app.inventory` of the revision that was last good on
//! that cluster, or the latest inventory when none is known good). Each
//! object gets one class:
//!
//! - `ADOPT`: one owner, in the set, and nothing below.
//! - `CONFLICT`: two owners; a Helm release against a GitOps owner; a
//!   foreign field manager on desired-state fields; a tracking id copied
//!   from another object.
//! - `ORPHAN`: in an app's expected set, but live under an owner outside the
//!   set (or none).
//! - `MISSING`: in a last-good inventory, not live.
//!
//! A field manager is foreign when it owns fields outside `.metadata` and
//! `.status` and is neither a Kubernetes component that normally writes
//! live objects, a GitOps tool ([`live_object::NORMAL_MANAGERS`]), the new
//! controller, nor one the caller names.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use annal_schemas::data::AppInventory;
use annal_schemas::{EventType, Timestamp};
use annal_store::versions::ObjectName;
use annal_store::Store;
use serde::Serialize;

use crate::asof::inventory::{self, AsOf, InventoryRow, Listings, Order};
use crate::asof::live_object::{self, LiveObject};
use crate::asof::revisions;
use crate::QueryError;

/// The question.
#[derive(Clone, Debug)]
pub struct Request {
    /// The new controller (its field manager name is not foreign).
    pub controller: String,
    /// What to take over.
    pub scope: Scope,
    /// Further field managers that are not foreign.
    pub normal_managers: Vec<String>,
}

/// What to take over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// These apps (qualified names: `argocd:guestbook`, `flux:ns/name`, ...)
    /// on every cluster.
    Apps(Vec<String>),
    /// Every app on these clusters.
    Clusters(Vec<String>),
}

/// One object's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Class {
    /// Safe to adopt.
    Adopt,
    /// Two claims on it, or someone else writes it.
    Conflict,
    /// Expected by the set, owned outside it.
    Orphan,
    /// Expected by the set, not live.
    Missing,
}

impl Class {
    /// All classes, in report order.
    pub const ALL: [Class; 4] = [Class::Adopt, Class::Conflict, Class::Orphan, Class::Missing];

    /// `ADOPT`, `CONFLICT`, ...
    pub fn as_str(&self) -> &'static str {
        match self {
            Class::Adopt => "ADOPT",
            Class::Conflict => "CONFLICT",
            Class::Orphan => "ORPHAN",
            Class::Missing => "MISSING",
        }
    }
}

/// Why an object is not ADOPT.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// Stable code: `two-owners`, `helm-vs-gitops`, `foreign-manager`,
    /// `tracking-mismatch`, `owner-not-in-set`, `not-live`.
    pub code: &'static str,
    /// The particulars, for people.
    pub detail: String,
}

/// One object of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Stable cluster id.
    pub cluster: String,
    /// API group ("" for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid` of the live version (`None` when missing).
    pub uid: Option<String>,
    /// The app the object counts under: its deciding owner when that app is
    /// taken over, else the taken-over app whose inventory expects it.
    pub app: Option<String>,
    /// Every owner claiming it.
    pub claims: Vec<String>,
    /// The verdict.
    pub class: Class,
    /// Why it is not ADOPT (empty when it is).
    pub reasons: Vec<Reason>,
}

/// Counts of one (cluster, app).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Stable cluster id.
    pub cluster: String,
    /// The app objects count under (`-`: none).
    pub app: String,
    /// ADOPT objects.
    pub adopt: u64,
    /// CONFLICT objects.
    pub conflict: u64,
    /// ORPHAN objects.
    pub orphan: u64,
    /// MISSING objects.
    pub missing: u64,
}

/// The plan.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The new controller.
    pub controller: String,
    /// The apps taken over (in cluster scope: every app found there).
    pub apps: Vec<String>,
    /// Valid time asked.
    pub at: String,
    /// System time asked (`None`: everything the ledger holds).
    pub known_at: Option<String>,
    /// Per (cluster, app), in that order.
    pub summary: Vec<Summary>,
    /// Every object in scope, by cluster and name.
    pub objects: Vec<Item>,
}

impl Plan {
    /// Whether anything needs a person (not every object is ADOPT).
    pub fn needs_approval(&self) -> bool {
        self.objects.iter().any(|o| o.class != Class::Adopt)
    }

    /// Objects of `class`.
    pub fn count(&self, class: Class) -> usize {
        self.objects.iter().filter(|o| o.class == class).count()
    }
}

/// What is known of one live object, for [`classify`].
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Distinct owners claiming it.
    pub claims: Vec<String>,
    /// A tracking id naming another object.
    pub tracking_mismatch: Option<String>,
    /// Managers owning desired-state fields, with one such field each.
    pub spec_managers: Vec<(String, String)>,
}

/// Builds the plan at `as_of`.
pub fn plan(store: &Store, request: &Request, as_of: &AsOf) -> Result<Plan, QueryError> {
    let listings = Listings::at(store, as_of)?;
    let clusters = match &request.scope {
        Scope::Clusters(c) => c.clone(),
        Scope::Apps(_) => store.version_clusters()?,
    };
    let in_clusters = |c: &str| match &request.scope {
        Scope::Clusters(cs) => cs.iter().any(|x| x == c),
        Scope::Apps(_) => true,
    };
    let mut live: Vec<InventoryRow> = Vec::new();
    for c in &clusters {
        live.extend(inventory::cluster_rows(
            store,
            c,
            as_of,
            &listings,
            Order::ByName,
        )?);
    }
    let apps: BTreeSet<String> = match &request.scope {
        Scope::Apps(a) => a.iter().cloned().collect(),
        Scope::Clusters(_) => live.iter().flat_map(|r| r.claims.iter().cloned()).collect(),
    };
    let expected = expected_objects(store, as_of, &|cluster, app| {
        in_clusters(cluster) && (matches!(request.scope, Scope::Clusters(_)) || apps.contains(app))
    })?;
    let normal = |m: &str| live_object::is_normal(m, &request.controller, &request.normal_managers);

    let mut objects = Vec::new();
    let mut seen: BTreeSet<(String, ObjectName)> = BTreeSet::new();
    for r in live {
        let key = (r.cluster.clone(), r.object.clone());
        let expected_by = expected.get(&key);
        let claimed_by_set = r.claims.iter().any(|c| apps.contains(c));
        if !claimed_by_set && expected_by.is_none() {
            continue;
        }
        seen.insert(key);
        let observed = Observed {
            claims: r.claims.clone(),
            tracking_mismatch: r.tracking_mismatch.clone(),
            spec_managers: LiveObject::read(store, r.index)?.foreign_managers(&normal),
        };
        let (class, reasons) = classify(&observed, &|a| apps.contains(a));
        // Counted under its owner when that app is taken over, else under
        // the taken-over app that expects it (an ORPHAN is that app's
        // problem), else under its owner.
        let expecting = expected_by.and_then(|e| e.first().map(|(a, _)| a.clone()));
        let app = match &r.owner {
            Some(o) if apps.contains(o) => Some(o.clone()),
            other => expecting.or_else(|| other.clone()),
        };
        objects.push(Item {
            cluster: r.cluster,
            group: r.object.group,
            kind: r.object.kind,
            namespace: r.object.namespace,
            name: r.object.name,
            uid: (!r.uid.is_empty()).then_some(r.uid),
            app,
            claims: r.claims,
            class,
            reasons,
        });
    }
    for ((cluster, object), by) in &expected {
        if seen.contains(&(cluster.clone(), object.clone())) {
            continue;
        }
        let (app, revision) = by.first().cloned().unwrap_or_else(|| (String::new(), None));
        objects.push(Item {
            cluster: cluster.clone(),
            group: object.group.clone(),
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            uid: None,
            app: Some(app.clone()),
            claims: Vec::new(),
            class: Class::Missing,
            reasons: vec![Reason {
                code: "not-live",
                detail: match revision {
                    Some(r) => {
                        format!("in the last-good inventory of {app} (revision {r}) but not live")
                    }
                    None => format!("in the inventory of {app} but not live"),
                },
            }],
        });
    }
    objects.sort_by(|a, b| {
        (&a.cluster, &a.group, &a.kind, &a.namespace, &a.name).cmp(&(
            &b.cluster,
            &b.group,
            &b.kind,
            &b.namespace,
            &b.name,
        ))
    });
    Ok(Plan {
        controller: request.controller.clone(),
        apps: apps.into_iter().collect(),
        at: as_of.valid.to_string(),
        known_at: as_of.known_at.map(|t| t.to_string()),
        summary: summarise(&objects),
        objects,
    })
}

/// The class of one live object in scope, and why. `in_set` says whether
/// an owner is one of the apps taken over.
pub fn classify(o: &Observed, in_set: &dyn Fn(&str) -> bool) -> (Class, Vec<Reason>) {
    let mut reasons = Vec::new();
    let helm: Vec<&String> = o.claims.iter().filter(|c| c.starts_with("helm:")).collect();
    let gitops: Vec<&String> = o
        .claims
        .iter()
        .filter(|c| !c.starts_with("helm:"))
        .collect();
    if !helm.is_empty() && !gitops.is_empty() {
        reasons.push(Reason {
            code: "helm-vs-gitops",
            detail: format!(
                "Helm release {} and GitOps owner {} both claim it",
                join(&helm),
                join(&gitops)
            ),
        });
    } else if o.claims.len() > 1 {
        let all: Vec<&String> = o.claims.iter().collect();
        reasons.push(Reason {
            code: "two-owners",
            detail: format!("claimed by {}", join(&all)),
        });
    }
    for (manager, field) in &o.spec_managers {
        reasons.push(Reason {
            code: "foreign-manager",
            detail: format!("field manager {manager} owns {field}"),
        });
    }
    if let Some(t) = &o.tracking_mismatch {
        reasons.push(Reason {
            code: "tracking-mismatch",
            detail: format!("tracking id {t:?} names another object (copied annotation)"),
        });
    }
    if !reasons.is_empty() {
        return (Class::Conflict, reasons);
    }
    match o.claims.first() {
        Some(owner) if in_set(owner) => (Class::Adopt, reasons),
        Some(owner) => (
            Class::Orphan,
            vec![Reason {
                code: "owner-not-in-set",
                detail: format!("owned by {owner}, which is not being taken over"),
            }],
        ),
        None => (
            Class::Orphan,
            vec![Reason {
                code: "owner-not-in-set",
                detail: "no owner claims it".into(),
            }],
        ),
    }
}

/// (cluster, object) → the apps (with the inventory's revision) that
/// expect it, from each in-scope (cluster, app)'s last-good inventory.
type Expected = BTreeMap<(String, ObjectName), Vec<(String, Option<String>)>>;

fn expected_objects(
    store: &Store,
    as_of: &AsOf,
    wanted: &dyn Fn(&str, &str) -> bool,
) -> Result<Expected, QueryError> {
    let good: HashMap<(String, String), String> = revisions::at(store, None, as_of)?
        .into_iter()
        .map(|g| ((g.cluster, g.app), g.revision))
        .collect();
    // Per (cluster, app): the latest inventory of the good revision, and
    // the latest of any.
    type Latest = Option<((Timestamp, u64), AppInventory)>;
    let mut chosen: HashMap<(String, String), (Latest, Latest)> = HashMap::new();
    for entry in as_of.events(store, EventType::AppInventory, None) {
        let entry = entry?;
        let Some(cluster) = entry.event.cluster.clone() else {
            continue;
        };
        let Ok(inv) = serde_json::from_value::<AppInventory>(entry.event.data) else {
            continue;
        };
        if !wanted(&cluster, &inv.app) {
            continue;
        }
        let order = (entry.event.time, entry.index);
        let key = (cluster, inv.app.clone());
        let is_good = good
            .get(&key)
            .is_some_and(|r| inv.revision.as_ref() == Some(r));
        let slot = chosen.entry(key).or_default();
        if is_good && slot.0.as_ref().is_none_or(|(o, _)| *o < order) {
            slot.0 = Some((order, inv.clone()));
        }
        if slot.1.as_ref().is_none_or(|(o, _)| *o < order) {
            slot.1 = Some((order, inv));
        }
    }
    let mut out: Expected = BTreeMap::new();
    for ((cluster, app), (good, latest)) in chosen {
        let Some((_, inv)) = good.or(latest) else {
            continue;
        };
        for e in inv.entries {
            let name = ObjectName {
                group: e.group,
                kind: e.kind,
                namespace: e.namespace,
                name: e.name,
            };
            out.entry((cluster.clone(), name))
                .or_default()
                .push((app.clone(), inv.revision.clone()));
        }
    }
    for apps in out.values_mut() {
        apps.sort();
        apps.dedup();
    }
    Ok(out)
}

fn summarise(objects: &[Item]) -> Vec<Summary> {
    let mut by: BTreeMap<(String, String), Summary> = BTreeMap::new();
    for o in objects {
        let app = o.app.clone().unwrap_or_else(|| "-".into());
        let s = by
            .entry((o.cluster.clone(), app.clone()))
            .or_insert_with(|| Summary {
                cluster: o.cluster.clone(),
                app,
                ..Summary::default()
            });
        match o.class {
            Class::Adopt => s.adopt += 1,
            Class::Conflict => s.conflict += 1,
            Class::Orphan => s.orphan += 1,
            Class::Missing => s.missing += 1,
        }
    }
    by.into_values().collect()
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(claims: &[&str]) -> Observed {
        Observed {
            claims: claims.iter().map(|c| c.to_string()).collect(),
            ..Observed::default()
        }
    }

    fn codes(r: &[Reason]) -> Vec<&'static str> {
        r.iter().map(|r| r.code).collect()
    }

    const SET: &[&str] = &["argocd:web", "argocd:api"];

    fn in_set(app: &str) -> bool {
        SET.contains(&app)
    }

    #[test]
    fn one_owner_in_the_set_is_adopt() {
        let (class, reasons) = classify(&observed(&["argocd:web"]), &in_set);
        assert_eq!(class, Class::Adopt);
        assert!(reasons.is_empty());
    }

    #[test]
    fn two_gitops_owners_conflict() {
        let (class, reasons) = classify(&observed(&["argocd:web", "flux:apps/web"]), &in_set);
        assert_eq!(class, Class::Conflict);
        assert_eq!(codes(&reasons), ["two-owners"]);
        assert!(reasons[0].detail.contains("flux:apps/web"));
    }

    #[test]
    fn helm_against_gitops_is_its_own_reason() {
        let (class, reasons) = classify(&observed(&["argocd:web", "helm:web/redis"]), &in_set);
        assert_eq!(class, Class::Conflict);
        assert_eq!(codes(&reasons), ["helm-vs-gitops"]);
    }

    #[test]
    fn a_foreign_manager_on_spec_conflicts() {
        let mut o = observed(&["argocd:web"]);
        o.spec_managers = vec![("kubectl-edit".into(), ".spec.replicas".into())];
        let (class, reasons) = classify(&o, &in_set);
        assert_eq!(class, Class::Conflict);
        assert_eq!(codes(&reasons), ["foreign-manager"]);
        assert!(reasons[0].detail.contains("kubectl-edit"));
    }

    #[test]
    fn a_copied_tracking_id_conflicts() {
        let mut o = observed(&["argocd:web"]);
        o.tracking_mismatch = Some("web:apps/Deployment:prod/other".into());
        let (class, reasons) = classify(&o, &in_set);
        assert_eq!(class, Class::Conflict);
        assert_eq!(codes(&reasons), ["tracking-mismatch"]);
    }

    #[test]
    fn an_owner_outside_the_set_is_orphan() {
        let (class, reasons) = classify(&observed(&["argocd:other"]), &in_set);
        assert_eq!(class, Class::Orphan);
        assert_eq!(codes(&reasons), ["owner-not-in-set"]);
        let (class, _) = classify(&observed(&[]), &in_set);
        assert_eq!(class, Class::Orphan);
    }

    #[test]
    fn summaries_count_each_class_per_cluster_and_app() {
        let item = |cluster: &str, app: &str, class| Item {
            cluster: cluster.into(),
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "ns".into(),
            name: "x".into(),
            uid: None,
            app: Some(app.into()),
            claims: Vec::new(),
            class,
            reasons: Vec::new(),
        };
        let s = summarise(&[
            item("a", "argocd:web", Class::Adopt),
            item("a", "argocd:web", Class::Missing),
            item("b", "argocd:web", Class::Conflict),
        ]);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].adopt, s[0].missing, s[0].conflict), (1, 1, 0));
        assert_eq!((s[1].cluster.as_str(), s[1].conflict), ("b", 1));
    }
}
