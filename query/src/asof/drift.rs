//! Drift outside Git (DESIGN "Change questions"): writes to GitOps-owned
//! objects by anyone but the owning controller, and whether the owning
//! app's controller reverted them.
//!
//! A version is **drift** when
//!
//! - its object is owned by a GitOps app (the deciding owner of the
//!   version's own claims, or of the version before it);
//! - it changed the object's content against the version before (same
//!   uid) outside `.status` and `.metadata.generation` (what controllers
//!   and the API server keep up to date);
//! - its writer is known and is not the owning app's controller
//!   ([`controllers_of`]) nor a control-plane manager (the scheduler, the
//!   HPA, ...; see [`crate::asof::live_object::NORMAL_MANAGERS`]): the
//!   writer is the version's field manager (see
//!   [`crate::asof::history`]), else the service account or user of the
//!   request that wrote it. A version whose writer nothing on record names
//!   is not reported: drift is a claim about who wrote, never a guess.
//!
//! It is **reverted** when a later version written by the owning
//! controller (before any deletion) has, at every drifted path, the value
//! it had before the drift.

use std::collections::{BTreeSet, HashMap};

use annal_schemas::{ownership, Timestamp};
use annal_store::versions::{ClusterVersions, VersionRow};
use annal_store::{Entry, Store};
use serde::Serialize;
use serde_json::Value;

use crate::asof::aliases::Aliases;
use crate::asof::history::{self, HistoryRow};
use crate::asof::live_object::NORMAL_MANAGERS;
use crate::QueryError;

/// What a drift question asks.
#[derive(Clone, Debug)]
pub struct DriftQuery {
    /// Writes at or after this valid time.
    pub since: Timestamp,
    /// Writes before this valid time.
    pub until: Timestamp,
    /// Only these clusters (every cluster when empty).
    pub clusters: Vec<String>,
    /// Only objects this app owns.
    pub app: Option<String>,
    /// Further managers that are never drift.
    pub normal_managers: Vec<String>,
}

/// One write outside Git.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DriftRow {
    /// Cluster id.
    pub cluster: String,
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The owning app.
    pub app: String,
    /// Valid time of the write.
    pub time: Timestamp,
    /// Log index of the version it made.
    pub index: u64,
    /// Who, in words (see [`HistoryRow::who`]).
    pub who: String,
    /// The person, when known.
    pub person: Option<String>,
    /// The field manager that wrote it.
    pub manager: Option<String>,
    /// The request's user.
    pub principal: Option<String>,
    /// The paths it changed (outside `.status`).
    pub fields: Vec<String>,
    /// Whether the owning controller put every path back.
    pub reverted: bool,
    /// When it did.
    pub reverted_at: Option<Timestamp>,
    /// Log index of the version that reverted it.
    pub reverted_index: Option<u64>,
}

/// The field managers (and service-account names) of the controller that
/// applies an app of this kind: `argocd:` apps are written by Argo CD's
/// application controller, `flux:` by kustomize-controller, `flux-helm:`
/// by helm-controller, `helm:` by Helm, `fleet:` by the Fleet agent.
pub fn controllers_of(app: &str) -> &'static [&'static str] {
    match app.split_once(':').map(|(tool, _)| tool) {
        Some("argocd") => &[
            "argocd-controller",
            "argocd-application-controller",
            "argocd",
        ],
        Some("flux") => &["kustomize-controller"],
        Some("flux-helm") => &["helm-controller"],
        Some("helm") => &["helm", "Helm"],
        Some("fleet") => &["fleet-agent"],
        _ => &[],
    }
}

/// Every GitOps tool's manager: a write by one of them to another tool's
/// object is drift, not a control-plane write.
fn gitops_manager(m: &str) -> bool {
    ["argocd:", "flux:", "flux-helm:", "helm:", "fleet:"]
        .iter()
        .any(|tool| controllers_of(tool).contains(&m))
}

/// Who wrote a version, as far as drift is concerned.
#[derive(Debug, PartialEq, Eq)]
enum Writer {
    /// The owning app's controller.
    Owner,
    /// The control plane or a manager the question calls normal.
    Normal,
    /// Anyone else.
    Other,
    /// Nothing on record names it.
    Unknown,
}

/// How `name` (a field manager or a service account's name) writes to
/// `app`'s objects.
fn judge(name: &str, app: &str, normal: &[String]) -> Writer {
    if controllers_of(app).contains(&name) {
        Writer::Owner
    } else if normal.iter().any(|n| n == name)
        || (NORMAL_MANAGERS.contains(&name) && !gitops_manager(name))
    {
        Writer::Normal
    } else {
        Writer::Other
    }
}

fn writer(row: &HistoryRow, app: &str, normal: &[String]) -> Writer {
    if let Some(m) = &row.manager {
        return judge(m, app, normal);
    }
    match &row.principal {
        Some(p) if p.starts_with("system:serviceaccount:") => {
            judge(p.rsplit(':').next().unwrap_or(p), app, normal)
        }
        // Nodes and the control plane's own identities.
        Some(p) if history::is_machine(p) => Writer::Normal,
        Some(_) => Writer::Other,
        None => Writer::Unknown,
    }
}

/// The drift in `q`'s window, cluster by cluster (in id order), each
/// cluster's by object (group, kind, namespace, name) and time.
pub fn drift(store: &Store, q: &DriftQuery) -> Result<Vec<DriftRow>, QueryError> {
    if q.until < q.since {
        return Err(QueryError::BadInput(format!(
            "{} is after {}: give the earlier instant first",
            q.since, q.until
        )));
    }
    let clusters = match q.clusters.is_empty() {
        true => store.version_clusters()?,
        false => q.clusters.clone(),
    };
    // Clusters are independent: each core takes every n-th one, and the
    // answers are put back in cluster order.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, clusters.len().max(1));
    let mut answers: Vec<Option<Result<Vec<DriftRow>, QueryError>>> =
        (0..clusters.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let clusters = &clusters;
                scope.spawn(move || {
                    (w..clusters.len())
                        .step_by(workers)
                        .map(|i| (i, cluster_drift(store, &clusters[i], q)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        // A worker that panicked leaves its clusters unanswered (below).
        for done in handles.into_iter().filter_map(|h| h.join().ok()) {
            for (i, answer) in done {
                answers[i] = Some(answer);
            }
        }
    });
    let mut out = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        match answer {
            Some(rows) => out.extend(rows?),
            None => {
                return Err(QueryError::Execution(format!(
                    "the drift of cluster {} was not computed (its worker panicked)",
                    clusters[i]
                )))
            }
        }
    }
    Ok(out)
}

fn cluster_drift(
    store: &Store,
    cluster: &str,
    q: &DriftQuery,
) -> Result<Vec<DriftRow>, QueryError> {
    let Some(cv) = store.cluster_versions(cluster)? else {
        return Ok(Vec::new());
    };
    let (since, until) = (q.since.unix_micros(), q.until.unix_micros());
    let mut by_object: HashMap<u32, Vec<&VersionRow>> = HashMap::new();
    let mut touched: BTreeSet<u32> = BTreeSet::new();
    for r in cv.rows() {
        if r.from >= since && r.from < until && !r.deleted() {
            touched.insert(r.object);
        }
    }
    for r in cv.rows() {
        if touched.contains(&r.object) {
            by_object.entry(r.object).or_default().push(r);
        }
    }
    let mut touched: Vec<u32> = touched.into_iter().collect();
    touched.sort_by(|a, b| cv.name_key(*a).cmp(cv.name_key(*b)));
    let aliases = Aliases::load(store, store.size())?;
    let mut out = Vec::new();
    for id in touched {
        let mut rows = by_object.remove(&id).unwrap_or_default();
        rows.sort_by_key(|r| r.order());
        out.extend(object_drift(store, &cv, &rows, q, &aliases)?);
    }
    Ok(out)
}

/// The drift among one object's versions (`rows`, in version order).
/// Leaves are read lazily: a version whose managers are all the owner's
/// or the control plane's is skipped on its index details alone, and
/// the versions after a drift are read only to look for its revert.
fn object_drift(
    store: &Store,
    cv: &ClusterVersions,
    rows: &[&VersionRow],
    q: &DriftQuery,
    aliases: &Aliases,
) -> Result<Vec<DriftRow>, QueryError> {
    let (since, until) = (q.since.unix_micros(), q.until.unix_micros());
    let mut out = Vec::new();
    for i in 1..rows.len() {
        let (r, before) = (rows[i], rows[i - 1]);
        if r.from < since || r.from >= until || r.deleted() || before.deleted() {
            continue;
        }
        let details = cv.details(r)?;
        let owner = ownership::decide(&details.claims)
            .owner
            .or(ownership::decide(&cv.details(before)?.claims).owner);
        let Some(app) = owner else { continue };
        if q.app.as_deref().is_some_and(|a| a != app) {
            continue;
        }
        let innocent = |m: &String| judge(m, &app, &q.normal_managers) != Writer::Other;
        if !details.managers.is_empty() && details.managers.iter().all(innocent) {
            continue;
        }
        let entry = history::read(store, r.index)?;
        let previous = (history::read(store, before.index)?, false);
        let Some(mut v) = history::version_row(cv, r, &entry, Some(&previous))? else {
            continue;
        };
        if v.manager.is_none() {
            history::join(store, &mut v, Some(previous.0.event.time), aliases)?;
        }
        let fields: Vec<String> = v
            .changed
            .iter()
            .filter(|f| !f.starts_with(".status") && f.as_str() != ".metadata.generation")
            .cloned()
            .collect();
        if fields.is_empty() || writer(&v, &app, &q.normal_managers) != Writer::Other {
            continue;
        }
        if v.person.is_none() && v.via.is_none() {
            history::join(store, &mut v, Some(previous.0.event.time), aliases)?;
        }
        let reverted = reverted_by(
            store,
            cv,
            &rows[i + 1..],
            &previous.0,
            &app,
            &fields,
            q,
            aliases,
        )?;
        out.push(DriftRow {
            cluster: v.cluster.clone(),
            group: v.group.clone(),
            kind: v.kind.clone(),
            namespace: v.namespace.clone(),
            name: v.name.clone(),
            app,
            time: v.valid_from,
            index: v.index,
            who: v.who(),
            person: v.person.clone(),
            manager: v.manager.clone(),
            principal: v.principal.clone(),
            fields,
            reverted: reverted.is_some(),
            reverted_at: reverted.map(|r| r.0),
            reverted_index: reverted.map(|r| r.1),
        });
    }
    Ok(out)
}

/// The first of `later` (versions after a drift) written by `app`'s
/// controller that puts every path of `fields` back to its value in
/// `before`: (its valid time, its log index).
#[allow(clippy::too_many_arguments)]
fn reverted_by(
    store: &Store,
    cv: &ClusterVersions,
    later: &[&VersionRow],
    before: &Entry,
    app: &str,
    fields: &[String],
    q: &DriftQuery,
    aliases: &Aliases,
) -> Result<Option<(Timestamp, u64)>, QueryError> {
    let wanted: Vec<Option<&Value>> = fields
        .iter()
        .map(|f| history::value_at(&before.event.data, f))
        .collect();
    for r in later {
        if r.deleted() {
            return Ok(None);
        }
        let entry = history::read(store, r.index)?;
        let Some(mut v) = history::version_row(cv, r, &entry, None)? else {
            continue;
        };
        if v.manager.is_none() {
            history::join(store, &mut v, None, aliases)?;
        }
        if writer(&v, app, &q.normal_managers) != Writer::Owner {
            continue;
        }
        if fields
            .iter()
            .zip(&wanted)
            .all(|(f, w)| history::value_at(&entry.event.data, f) == *w)
        {
            return Ok(Some((v.valid_from, v.index)));
        }
    }
    Ok(None)
}

/// The answer as one document (`annal drift -o json`, `GET /v1/drift`):
/// the window, every drift row, and how many are not reverted.
pub fn document(q: &DriftQuery, rows: &[DriftRow]) -> Value {
    serde_json::json!({
        "since": q.since.to_string(),
        "until": q.until.to_string(),
        "drift": rows,
        "unreverted": rows.iter().filter(|r| !r.reverted).count(),
    })
}
