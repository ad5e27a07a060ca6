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

use std::collections::BTreeSet;

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

fn writer(row: &HistoryRow, app: &str, normal: &[String]) -> Writer {
    let owner = controllers_of(app);
    let judge = |name: &str| {
        if owner.contains(&name) {
            Writer::Owner
        } else if normal.iter().any(|n| n == name)
            || (NORMAL_MANAGERS.contains(&name) && !gitops_manager(name))
        {
            Writer::Normal
        } else {
            Writer::Other
        }
    };
    if let Some(m) = &row.manager {
        return judge(m);
    }
    match &row.principal {
        Some(p) if p.starts_with("system:serviceaccount:") => {
            judge(p.rsplit(':').next().unwrap_or(p))
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
    let mut out = Vec::new();
    for c in clusters {
        out.extend(cluster_drift(store, &c, q)?);
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
    // Objects written in the window whose version there is claimed by an
    // app (the version's or the one before's claims are checked below
    // with the history; this only skips objects no app ever claims).
    let mut touched: BTreeSet<u32> = BTreeSet::new();
    for r in cv.rows() {
        if r.from >= since && r.from < until && !r.deleted() {
            touched.insert(r.object);
        }
    }
    let mut touched: Vec<u32> = touched.into_iter().collect();
    touched.sort_by(|a, b| cv.name_key(*a).cmp(cv.name_key(*b)));
    let mut by_object: Vec<Vec<&VersionRow>> = Vec::new();
    for &id in &touched {
        let rows: Vec<&VersionRow> = cv.rows().iter().filter(|r| r.object == id).collect();
        if claimed(&cv, &rows, q.app.as_deref())? {
            by_object.push(rows);
        }
    }
    let aliases = Aliases::load(store, store.size())?;
    let mut out = Vec::new();
    for rows in by_object {
        let mut versions = history::versions_of_rows(store, &cv, rows, None)?;
        out.extend(object_drift(store, &mut versions, q, &aliases)?);
    }
    Ok(out)
}

/// Whether any of an object's versions is claimed (by `app` when given).
fn claimed(
    cv: &ClusterVersions,
    rows: &[&VersionRow],
    app: Option<&str>,
) -> Result<bool, QueryError> {
    for r in rows {
        if r.deleted() {
            continue;
        }
        let owner = ownership::decide(&cv.details(r)?.claims).owner;
        if owner.is_some() && (app.is_none() || owner.as_deref() == app) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn object_drift(
    store: &Store,
    versions: &mut [HistoryRow],
    q: &DriftQuery,
    aliases: &Aliases,
) -> Result<Vec<DriftRow>, QueryError> {
    let (since, until) = (q.since, q.until);
    // Who wrote each version is joined only where the managers do not
    // say (it costs two index scans), and for the drift found.
    for i in 0..versions.len() {
        if versions[i].manager.is_none() {
            let before = i.checked_sub(1).map(|b| versions[b].valid_from);
            history::join(store, &mut versions[i], before, aliases)?;
        }
    }
    let mut out = Vec::new();
    for i in 1..versions.len() {
        let v = &versions[i];
        if v.valid_from < since || v.valid_from >= until {
            continue;
        }
        let before = &versions[i - 1];
        let Some(app) = v.app.clone().or_else(|| before.app.clone()) else {
            continue;
        };
        if q.app.as_deref().is_some_and(|a| a != app) {
            continue;
        }
        let fields: Vec<String> = v
            .changed
            .iter()
            .filter(|f| !f.starts_with(".status") && f.as_str() != ".metadata.generation")
            .cloned()
            .collect();
        if fields.is_empty() || writer(v, &app, &q.normal_managers) != Writer::Other {
            continue;
        }
        let reverted = reverted_by(store, versions, i, &app, &fields, &q.normal_managers)?
            .map(|r| (r.valid_from, r.index));
        let mut v = versions[i].clone();
        if v.person.is_none() && v.principal.is_none() {
            history::join(store, &mut v, Some(before.valid_from), aliases)?;
        }
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

/// The first later version written by `app`'s controller that puts every
/// path of `fields` back to its value before version `i`.
fn reverted_by<'a>(
    store: &Store,
    versions: &'a [HistoryRow],
    i: usize,
    app: &str,
    fields: &[String],
    normal: &[String],
) -> Result<Option<&'a HistoryRow>, QueryError> {
    let before = data(store, versions[i - 1].index)?;
    let wanted: Vec<Option<&Value>> = fields
        .iter()
        .map(|f| history::value_at(&before, f))
        .collect();
    for later in &versions[i + 1..] {
        if later.change == history::VersionChange::Deleted {
            return Ok(None);
        }
        if writer(later, app, normal) != Writer::Owner {
            continue;
        }
        let now = data(store, later.index)?;
        if fields
            .iter()
            .zip(&wanted)
            .all(|(f, w)| history::value_at(&now, f) == *w)
        {
            return Ok(Some(later));
        }
    }
    Ok(None)
}

fn data(store: &Store, index: u64) -> Result<Value, QueryError> {
    let entry: Entry = store
        .entry(index)?
        .ok_or_else(|| QueryError::NotFound(format!("no entry {index}")))?;
    Ok(entry.event.data)
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
