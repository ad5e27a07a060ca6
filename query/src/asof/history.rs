//! Object history and field blame (DESIGN "Change questions", "Who
//! changed it"): every version of one object in valid-time order, each
//! with the fields it changed against the version before, and who made it.
//!
//! **Who**, per version, from the facts the ledger holds and never a
//! guess:
//!
//! - the **writer**: the version's own actor when an audited request
//!   recorded it, else the last successful audited write of the same
//!   object on the cluster in the [`JOIN_WINDOW`] before the version (and
//!   after the previous one): its user, impersonated user and user agent;
//! - the **tool**: the version's field manager (`?fieldManager=` of the
//!   request, else the managedFields entry written last) and its
//!   operation;
//! - the **app** and **revision**: the version's own ownership claims, and
//!   the owning app's last `app.sync` on the cluster started at or before
//!   the version (in the window before it; a sync is recorded when it
//!   finishes, so the scan reaches the window after it too);
//! - the **person**: the writer's impersonated user, else the writer when
//!   it is not a service account or a `system:` identity; else, for a write
//!   by a GitOps controller, the user who initiated the operation (Argo CD
//!   `initiatedBy.username` on the sync, or an Argo CD Event
//!   "`USER` initiated sync to ..." about the app). Otherwise the person is
//!   unknown and `via` says through which controller or manager.
//!
//! One object's versions come from its cluster's version index; each
//! version costs one leaf read and two short index scans of the window.

use annal_schemas::data::KubeObject;
use annal_schemas::ownership;
use annal_schemas::{Actor, EventType, Timestamp};
use annal_store::versions::{ClusterVersions, Span, VersionDetails, VersionRow};
use annal_store::{Entry, ScanKey, Store};
use serde::Serialize;
use serde_json::Value;

use crate::asof::aliases::Aliases;
use crate::asof::diff::{differences, managers_of};
use crate::asof::managed_fields;
use crate::QueryError;

/// How far before a version the join looks for the request that wrote it
/// and the sync that applied it: a watch or snapshot observes a write
/// seconds after it, and a sync writes within minutes of its start.
pub const JOIN_WINDOW_SECONDS: i64 = 600;

/// The canonical (JCS) text of the event types the join reads.
const JOINED_TYPES: [&[u8]; 2] = [b"\"type\":\"audit.request\"", b"\"type\":\"app.sync\""];

/// The object asked about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectQuery {
    /// Cluster id.
    pub cluster: String,
    /// API group (`None`: any; two groups with the object are ambiguous).
    pub group: Option<String>,
    /// Kind.
    pub kind: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// How a version relates to the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionChange {
    /// The first version.
    Created,
    /// Changed content.
    Updated,
    /// The same content observed again.
    Unchanged,
    /// A deletion.
    Deleted,
    /// After a deletion, or with a new uid.
    Recreated,
}

impl VersionChange {
    /// The name the CLI and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionChange::Created => "created",
            VersionChange::Updated => "updated",
            VersionChange::Unchanged => "unchanged",
            VersionChange::Deleted => "deleted",
            VersionChange::Recreated => "recreated",
        }
    }
}

/// One version of one object, with who made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryRow {
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
    /// Valid time the version starts.
    pub valid_from: Timestamp,
    /// Valid time the next version starts (`None`: current).
    pub valid_to: Option<Timestamp>,
    /// Log index of the version.
    pub index: u64,
    /// System time the ledger recorded it.
    pub recorded_at: Timestamp,
    /// How it relates to the version before.
    pub change: VersionChange,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// The person behind the version (`None`: unknown).
    pub person: Option<String>,
    /// Where `person` came from: `audit` (the version's own request),
    /// `audit-request` (a request joined by object and time),
    /// `argocd-initiated-by` (the sync's initiator), `argocd-event` (an
    /// Argo CD Event naming the user).
    pub person_source: Option<String>,
    /// The authenticated user of the request that wrote it.
    pub principal: Option<String>,
    /// The user that request impersonated.
    pub impersonated: Option<String>,
    /// The request's user agent.
    pub user_agent: Option<String>,
    /// When the person is unknown: the controller or manager it came
    /// through (`controller argocd-application-controller`).
    pub via: Option<String>,
    /// The field manager that wrote the version.
    pub manager: Option<String>,
    /// Its operation (`Apply`, `Update`).
    pub operation: Option<String>,
    /// The deciding owner from the version's own claims.
    pub app: Option<String>,
    /// The owning app's revision being applied (its last sync in the
    /// window).
    pub revision: Option<String>,
    /// Paths that differ from the version before.
    pub changed: Vec<String>,
    /// Managers of this version owning one of `changed`.
    pub managers: Vec<String>,
}

impl HistoryRow {
    /// Who, in words: `alice`, `alice (as bob)`, or `person unknown, via
    /// controller X`.
    pub fn who(&self) -> String {
        match (&self.person, &self.via) {
            (Some(p), _) => match (&self.principal, &self.impersonated) {
                (Some(by), Some(as_)) if as_ == p && by != p => format!("{p} (by {by})"),
                _ => p.clone(),
            },
            (None, Some(via)) => format!("person unknown, via {via}"),
            (None, None) => "unknown".into(),
        }
    }
}

/// One value a field had: from when, until when, set by whom.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlameRow {
    /// The field (`.spec.replicas`).
    pub field: String,
    /// Its value (`null`: absent).
    pub value: Value,
    /// Valid time of the version that set it.
    pub from: Timestamp,
    /// Valid time of the version that changed it next (`None`: current).
    pub to: Option<Timestamp>,
    /// Who set it ([`HistoryRow::who`]).
    pub set_by: String,
    /// The manager that set it.
    pub manager: Option<String>,
    /// The owning app then.
    pub app: Option<String>,
    /// Log index of the version that set it.
    pub index: u64,
}

/// Every version of the object `q` names, in version order.
pub fn object_history(store: &Store, q: &ObjectQuery) -> Result<Vec<HistoryRow>, QueryError> {
    // The rows alone (no details, no ends): one object's details come
    // from its own leaves, which are read anyway, and its ends from its
    // own rows; at 10M events, reading a cluster's details and linking
    // every row to the next was most of an object's history.
    let everything = Span::Starting {
        since: i64::MIN,
        until: i64::MAX,
    };
    let Some(cv) = store.cluster_versions_in(&q.cluster, everything)? else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::new();
    for id in 0..cv.object_count() as u32 {
        let Some(o) = cv.object(id) else { continue };
        if o.kind == q.kind
            && o.namespace == q.namespace
            && o.name == q.name
            && q.group.as_deref().is_none_or(|g| g == o.group)
        {
            ids.push(id);
        }
    }
    if ids.len() > 1 {
        let groups: Vec<String> = ids
            .iter()
            .filter_map(|&id| cv.object(id).map(|o| format!("{:?}", o.group)))
            .collect();
        return Err(QueryError::BadInput(format!(
            "{} {}/{} exists in more than one API group ({}): name one with --group",
            q.kind,
            q.namespace,
            q.name,
            groups.join(", ")
        )));
    }
    let Some(&id) = ids.first() else {
        return Ok(Vec::new());
    };
    let rows: Vec<&VersionRow> = cv.rows().iter().filter(|r| r.object == id).collect();
    let aliases = Aliases::load(store, store.size())?;
    versions_of_rows(store, &cv, rows, Some(&aliases))
}

/// [`object_history`], an object with no version being an error that
/// says what was looked for.
pub fn find(store: &Store, q: &ObjectQuery) -> Result<Vec<HistoryRow>, QueryError> {
    let versions = object_history(store, q)?;
    if versions.is_empty() {
        let name = match q.namespace.is_empty() {
            true => q.name.clone(),
            false => format!("{}/{}", q.namespace, q.name),
        };
        return Err(QueryError::NotFound(format!(
            "no version of {} {name} on cluster {} (kind, namespace and name are exact; a cluster-scoped object has no namespace)",
            q.kind, q.cluster
        )));
    }
    Ok(versions)
}

/// The answer as one document (`annal history -o json`, `GET
/// /v1/history`): the object and its `versions`, or with `field` the
/// field's `values`.
pub fn document(store: &Store, q: &ObjectQuery, field: Option<&str>) -> Result<Value, QueryError> {
    let versions = find(store, q)?;
    let object = serde_json::json!({
        "cluster": q.cluster,
        "group": versions[0].group,
        "kind": q.kind,
        "namespace": q.namespace,
        "name": q.name,
    });
    Ok(match field {
        Some(f) => {
            serde_json::json!({"object": object, "field": f, "values": blame(store, &versions, f)?})
        }
        None => serde_json::json!({"object": object, "versions": versions}),
    })
}

/// Every version of every object of `cluster`, object by object (in name
/// order), each object's in version order: the `changes` table.
pub fn cluster_changes(store: &Store, cluster: &str) -> Result<Vec<HistoryRow>, QueryError> {
    let Some(cv) = store.cluster_versions(cluster)? else {
        return Ok(Vec::new());
    };
    let mut by_object: Vec<Vec<&VersionRow>> = vec![Vec::new(); cv.object_count()];
    for r in cv.rows() {
        if let Some(slot) = by_object.get_mut(r.object as usize) {
            slot.push(r);
        }
    }
    let mut order: Vec<u32> = (0..cv.object_count() as u32).collect();
    order.sort_by(|a, b| cv.name_key(*a).cmp(cv.name_key(*b)));
    let aliases = Aliases::load(store, store.size())?;
    let mut out = Vec::new();
    for id in order {
        let rows = std::mem::take(&mut by_object[id as usize]);
        if !rows.is_empty() {
            out.extend(versions_of_rows(store, &cv, rows, Some(&aliases))?);
        }
    }
    Ok(out)
}

/// The history rows of one object's version rows; who made each is
/// joined only when given the alias table (else see [`join`]).
pub(crate) fn versions_of_rows(
    store: &Store,
    cv: &ClusterVersions,
    mut rows: Vec<&VersionRow>,
    join: Option<&Aliases>,
) -> Result<Vec<HistoryRow>, QueryError> {
    rows.sort_by_key(|r| r.order());
    let mut out: Vec<HistoryRow> = Vec::with_capacity(rows.len());
    let mut previous: Option<(Entry, bool)> = None;
    for (i, r) in rows.iter().enumerate() {
        let entry = read(store, r.index)?;
        let Some(mut row) = version_row(cv, r, &entry, previous.as_ref())? else {
            continue;
        };
        // A version ends where the object's next one starts.
        row.valid_to = rows
            .get(i + 1)
            .and_then(|next| Timestamp::from_unix_micros(next.from));
        if let Some(aliases) = join {
            let since = previous.as_ref().map(|(p, _)| p.event.time);
            join_people(store, &entry, since, &mut row, aliases)?;
        }
        previous = Some((entry, r.deleted()));
        out.push(row);
    }
    Ok(out)
}

/// The entry at `index` (an object version the index names).
pub(crate) fn read(store: &Store, index: u64) -> Result<Entry, QueryError> {
    store
        .entry(index)?
        .ok_or_else(|| QueryError::NotFound(format!("no entry {index}")))
}

/// The history row of version `r` (whose entry is `entry`) after
/// `previous` (its entry, and whether it was a deletion), who made it
/// left to [`join`]; `None` for a row whose object has no name.
pub(crate) fn version_row(
    cv: &ClusterVersions,
    r: &VersionRow,
    entry: &Entry,
    previous: Option<&(Entry, bool)>,
) -> Result<Option<HistoryRow>, QueryError> {
    let Some(object) = cv.object(r.object) else {
        return Ok(None);
    };
    let details = match cv.span() {
        Span::Starting { .. } => details_of_entry(entry, r.deleted()),
        _ => cv.details(r)?,
    };
    let mut changed = Vec::new();
    let change = match previous {
        _ if r.deleted() => VersionChange::Deleted,
        None => VersionChange::Created,
        Some((_, true)) => VersionChange::Recreated,
        Some((prev, false)) => {
            if uid_of(&prev.event.data) != details.uid.as_str() {
                VersionChange::Recreated
            } else {
                differences("", &prev.event.data, &entry.event.data, &mut changed);
                match changed.is_empty() {
                    true => VersionChange::Unchanged,
                    false => VersionChange::Updated,
                }
            }
        }
    };
    let managed = managed_fields::of_entry(entry);
    let managers = managers_of(managed.clone(), &changed);
    let (manager, operation) = tool(entry.event.actor.as_ref(), &managed);
    Ok(Some(HistoryRow {
        cluster: cv.cluster.clone(),
        group: object.group.to_string(),
        kind: object.kind.to_string(),
        namespace: object.namespace.to_string(),
        name: object.name.to_string(),
        valid_from: entry.event.time,
        valid_to: (r.to != i64::MAX)
            .then(|| Timestamp::from_unix_micros(r.to))
            .flatten(),
        index: r.index,
        recorded_at: entry.recorded_at,
        change,
        uid: details.uid.clone(),
        resource_version: details.resource_version.clone(),
        person: None,
        person_source: None,
        principal: None,
        impersonated: None,
        user_agent: None,
        via: None,
        manager,
        operation,
        app: ownership::decide(&details.claims).owner,
        revision: None,
        changed,
        managers,
    }))
}

/// The values `field` (`.spec.replicas` or `spec.replicas`) had over the
/// versions of `history`, one row per value, set by whom.
pub fn blame(
    store: &Store,
    history: &[HistoryRow],
    field: &str,
) -> Result<Vec<BlameRow>, QueryError> {
    let path: Vec<&str> = field
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    if path.is_empty() {
        return Err(QueryError::BadInput(format!(
            "--field {field:?}: name a field such as spec.replicas"
        )));
    }
    let field = format!(".{}", path.join("."));
    let mut out: Vec<BlameRow> = Vec::new();
    for v in history {
        let value = match v.change {
            VersionChange::Deleted => Value::Null,
            _ => {
                let entry = read(store, v.index)?;
                value_at(&entry.event.data, &field)
                    .cloned()
                    .unwrap_or(Value::Null)
            }
        };
        if out.last().is_some_and(|last| last.value == value) {
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.to = Some(v.valid_from);
        }
        out.push(BlameRow {
            field: field.clone(),
            value,
            from: v.valid_from,
            to: None,
            set_by: v.who(),
            manager: v.manager.clone(),
            app: v.app.clone(),
            index: v.index,
        });
    }
    Ok(out)
}

/// What the index's details say about a version, read from its leaf:
/// uid, resourceVersion and the claims of its labels and annotations.
fn details_of_entry(entry: &Entry, deleted: bool) -> VersionDetails {
    let data = &entry.event.data;
    let text = |p: &str| {
        data.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let claims = match deleted {
        true => Vec::new(),
        false => serde_json::from_value::<KubeObject>(data.clone())
            .map(|o| ownership::of_object(&o).claims)
            .unwrap_or_default(),
    };
    VersionDetails {
        api_version: text("/apiVersion"),
        uid: text("/metadata/uid"),
        resource_version: text("/metadata/resourceVersion"),
        claims,
        ..VersionDetails::default()
    }
}

fn uid_of(data: &Value) -> &str {
    data.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The manager that wrote a version: the request's `?fieldManager=`, else
/// the managedFields entry with the latest time (ties: the last listed),
/// entries written through a subresource (`status`, `scale`) only when no
/// other has a later time: those touch status and replicas, not what
/// the object declares.
fn tool(
    actor: Option<&Actor>,
    managed: &[managed_fields::ManagerFields],
) -> (Option<String>, Option<String>) {
    let latest = managed
        .iter()
        .filter(|m| m.manager.is_some())
        .max_by(|a, b| {
            let main = |m: &managed_fields::ManagerFields| {
                m.subresource.as_deref().is_none_or(str::is_empty)
            };
            a.time.cmp(&b.time).then(main(a).cmp(&main(b)))
        });
    match actor.and_then(|a| a.field_manager.clone()) {
        Some(m) => {
            let op = managed
                .iter()
                .find(|f| f.manager.as_deref() == Some(m.as_str()))
                .and_then(|f| f.operation.clone());
            (Some(m), op)
        }
        None => (
            latest.and_then(|m| m.manager.clone()),
            latest.and_then(|m| m.operation.clone()),
        ),
    }
}

/// Whether `user` names a workload rather than a person: a service
/// account, or a `system:` identity (nodes, the control plane).
pub fn is_machine(user: &str) -> bool {
    user.starts_with("system:")
}

/// The service account or system identity `user` stands for, as a
/// controller name (`system:serviceaccount:argocd:argocd-application-controller`
/// → `argocd-application-controller`).
fn controller_of(user: &str) -> String {
    match user.strip_prefix("system:serviceaccount:") {
        Some(sa) => sa.rsplit(':').next().unwrap_or(sa).to_string(),
        None => user.to_string(),
    }
}

/// Fills who made `row`, a version after `since` (the version before),
/// when [`versions_of_rows`] left it out.
pub(crate) fn join(
    store: &Store,
    row: &mut HistoryRow,
    since: Option<Timestamp>,
    aliases: &Aliases,
) -> Result<(), QueryError> {
    let entry = read(store, row.index)?;
    join_people(store, &entry, since, row, aliases)
}

/// The value at `path` as [`differences`] names it (`.spec.replicas`,
/// `.metadata.annotations.argocd.argoproj.io/tracking-id`: a key may hold
/// dots, so at each level the shortest key present wins).
pub fn value_at<'a>(data: &'a Value, path: &str) -> Option<&'a Value> {
    let rest = path.strip_prefix('.').unwrap_or(path);
    if rest.is_empty() {
        return Some(data);
    }
    let object = data.as_object()?;
    let mut ends: Vec<usize> = rest.match_indices('.').map(|(i, _)| i).collect();
    ends.push(rest.len());
    ends.into_iter().find_map(|end| {
        let value = object.get(&rest[..end])?;
        value_at(value, &rest[end..])
    })
}

/// Fills who wrote `row` (see the module doc).
fn join_people(
    store: &Store,
    entry: &Entry,
    since: Option<Timestamp>,
    row: &mut HistoryRow,
    aliases: &Aliases,
) -> Result<(), QueryError> {
    let t = entry.event.time;
    let window_start = shifted(t, -JOIN_WINDOW_SECONDS * 1_000_000);
    let window_start = since.map_or(window_start, |s| s.max(window_start));
    let own = entry.event.actor.clone().filter(|a| a.principal.is_some());
    // The request that wrote it (the version's own, or one joined by
    // object and time), and the owning app's last sync.
    let mut request: Option<Entry> = None;
    let mut sync: Option<Entry> = None;
    // A sync is recorded when it finishes, and writes from its start: the
    // scan reaches a window past the version for syncs started before it.
    let mut sync_start = None;
    // The app's events may name the cluster by a server URL (see
    // [`Aliases`]): those names are scanned too, for syncs.
    let names = aliases.names_of(&row.cluster);
    let scans = names.iter().flat_map(|n| {
        store.scan_leaf_bytes(
            ScanKey::Cluster(n),
            Some(window_start),
            Some(shifted(t, JOIN_WINDOW_SECONDS * 1_000_000)),
        )
    });
    let finders: Vec<memchr::memmem::Finder<'_>> = JOINED_TYPES
        .iter()
        .map(memchr::memmem::Finder::new)
        .collect();
    for leaf in scans {
        let (index, bytes) = leaf?;
        // Most of a busy cluster's window is object versions and
        // heartbeats: a leaf is decoded only when its canonical bytes
        // can hold one of the two types wanted (a prefilter; the type is
        // checked on the decoded entry).
        if !finders.iter().any(|f| f.find(&bytes).is_some()) {
            continue;
        }
        let e = Entry::from_leaf_bytes(&bytes).map_err(|err| {
            QueryError::Store(annal_store::StoreError::Corrupt(format!(
                "leaf {index}: {err}"
            )))
        })?;
        if e.event.cluster.as_deref() != Some(row.cluster.as_str())
            && (e.event.event_type != EventType::AppSync
                || e.event
                    .cluster
                    .as_deref()
                    .is_none_or(|c| aliases.resolve(c, e.event.time) != row.cluster))
        {
            continue;
        }
        match e.event.event_type {
            // With its own actor, only the request at its own time is the
            // same request (for the user agent).
            EventType::AuditRequest
                if e.event.time <= t && (own.is_none() || e.event.time == t) && writes(&e, row) =>
            {
                request = Some(e);
            }
            EventType::AppSync
                if row.app.is_some()
                    && e.event.data.get("app").and_then(Value::as_str) == row.app.as_deref() =>
            {
                let started = e
                    .event
                    .data
                    .get("started_at")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<Timestamp>().ok())
                    .unwrap_or(e.event.time);
                if started <= t && sync_start.is_none_or(|s| s <= started) {
                    sync_start = Some(started);
                    sync = Some(e);
                }
            }
            _ => {}
        }
    }
    let writer = own.or_else(|| request.as_ref().and_then(|r| r.event.actor.clone()));
    if let Some(w) = &writer {
        row.principal = w.principal.clone();
        row.impersonated = w.impersonated.clone();
        if row.manager.is_none() {
            row.manager = w.field_manager.clone();
        }
    }
    row.user_agent = request
        .as_ref()
        .and_then(|r| r.event.data.get("user_agent"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let from_request = match entry
        .event
        .actor
        .as_ref()
        .and_then(|a| a.principal.as_ref())
    {
        Some(_) => "audit",
        None => "audit-request",
    };
    let human = |u: &Option<String>| u.clone().filter(|u| !is_machine(u));
    if let Some(p) = human(&row.impersonated).or_else(|| human(&row.principal)) {
        row.person = Some(p);
        row.person_source = Some(from_request.into());
    }
    if let Some(s) = &sync {
        row.revision = s
            .event
            .data
            .get("revision")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if row.person.is_none() {
        if let Some((user, source)) = sync
            .as_ref()
            .and_then(initiated_by)
            .map(|u| (u, "argocd-initiated-by"))
            .or_else(|| argocd_event_user(store, row, window_start, t).map(|u| (u, "argocd-event")))
        {
            row.person = Some(user);
            row.person_source = Some(source.into());
        }
    }
    if row.person.is_none() {
        row.via = match (&row.principal, &row.manager) {
            (Some(p), _) => Some(format!("controller {}", controller_of(p))),
            (None, Some(m)) => Some(format!("manager {m}")),
            (None, None) => None,
        };
        if let Some(automated) = sync.as_ref().filter(|s| automated(s)) {
            let controller = automated
                .event
                .data
                .get("controller")
                .and_then(Value::as_str)
                .unwrap_or("the GitOps controller");
            row.via = Some(format!("automated sync by {controller}"));
        }
    }
    Ok(())
}

/// Whether the audited request `e` is a successful write of `row`'s
/// object.
fn writes(e: &Entry, row: &HistoryRow) -> bool {
    let d = &e.event.data;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let r = d.get("object_ref").unwrap_or(&Value::Null);
    let verb = s(d, "verb");
    matches!(
        verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection"
    ) && d.get("dry_run").and_then(Value::as_bool) != Some(true)
        && d.get("code")
            .and_then(Value::as_u64)
            .is_none_or(|c| c < 400)
        && s(d, "stage") != "Admission"
        && s(r, "kind") == row.kind
        && s(r, "namespace") == row.namespace
        && s(r, "name") == row.name
        && s(r, "group") == row.group
}

/// `initiated_by.username` of a sync (Argo CD), when a person started it.
fn initiated_by(sync: &Entry) -> Option<String> {
    let by = sync.event.data.get("initiated_by")?;
    by.get("username")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty() && !is_machine(u))
        .map(str::to_string)
}

fn automated(sync: &Entry) -> bool {
    sync.event
        .data
        .pointer("/initiated_by/automated")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The user an Argo CD Event names for `row`'s app in the window
/// (`"alice initiated sync to HEAD (abc)"`, `"alice updated application
/// spec"`), the last one.
fn argocd_event_user(
    store: &Store,
    row: &HistoryRow,
    from: Timestamp,
    t: Timestamp,
) -> Option<String> {
    let app = row.app.as_deref()?.strip_prefix("argocd:")?;
    let mut found = None;
    for e in store.scan(
        ScanKey::Type(EventType::KubeEvent.as_str()),
        Some(from),
        Some(shifted(t, 1)),
    ) {
        let Ok(e) = e else { continue };
        let d = &e.event.data;
        let involved = d.get("involved").unwrap_or(&Value::Null);
        let name = involved.get("name").and_then(Value::as_str).unwrap_or("");
        let namespace = involved
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let is_app = involved.get("kind").and_then(Value::as_str) == Some("Application")
            && (app == name || app == format!("{namespace}_{name}"));
        if !is_app {
            continue;
        }
        let message = d.get("message").and_then(Value::as_str).unwrap_or("");
        if let Some(user) = argocd_event_actor(message) {
            found = Some(user);
        }
    }
    found
}

/// The user of an Argo CD audit Event message: Argo CD writes
/// `"<user> <action>"` for what a user did through its API (`initiated
/// sync to ...`, `initiated rollback to ...`, `updated application
/// spec`, `created application`, `deleted application`, ...). Automated
/// operations (`"Initiated automated sync to ..."`) and `Unknown user`
/// name nobody.
pub fn argocd_event_actor(message: &str) -> Option<String> {
    const ACTIONS: [&str; 7] = [
        " initiated sync",
        " initiated partial sync",
        " initiated rollback",
        " updated application spec",
        " created application",
        " deleted application",
        " patched application",
    ];
    let at = ACTIONS.iter().filter_map(|a| message.find(a)).min()?;
    let user = message[..at].trim();
    (!user.is_empty() && user != "Unknown user" && !is_machine(user)).then(|| user.to_string())
}

/// `t` moved by `micros` (kept at `t` past the representable range).
fn shifted(t: Timestamp, micros: i64) -> Timestamp {
    t.unix_micros()
        .checked_add(micros)
        .and_then(Timestamp::from_unix_micros)
        .unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argocd_event_messages_name_the_user_or_nobody() {
        assert_eq!(
            argocd_event_actor("alice initiated sync to HEAD (5c7a1f0)").as_deref(),
            Some("alice")
        );
        assert_eq!(
            argocd_event_actor("admin updated application spec").as_deref(),
            Some("admin")
        );
        assert_eq!(
            argocd_event_actor("bob@example.com initiated rollback to 3").as_deref(),
            Some("bob@example.com")
        );
        assert_eq!(
            argocd_event_actor("Initiated automated sync to 'abc'"),
            None
        );
        assert_eq!(
            argocd_event_actor("Unknown user initiated sync to HEAD"),
            None
        );
        assert_eq!(
            argocd_event_actor("Updated sync status: OutOfSync -> Synced"),
            None
        );
    }

    #[test]
    fn values_are_found_at_paths_whose_keys_hold_dots() {
        let data = serde_json::json!({"metadata": {"annotations": {
            "argocd.argoproj.io/tracking-id": "a", "argocd": {"x": 1}}},
            "spec": {"replicas": 3}});
        assert_eq!(
            value_at(&data, ".spec.replicas"),
            Some(&serde_json::json!(3))
        );
        assert_eq!(
            value_at(
                &data,
                ".metadata.annotations.argocd.argoproj.io/tracking-id"
            ),
            Some(&serde_json::json!("a"))
        );
        assert_eq!(
            value_at(&data, ".metadata.annotations.argocd.x"),
            Some(&serde_json::json!(1))
        );
        assert_eq!(value_at(&data, ".spec.paused"), None);
    }

    #[test]
    fn service_accounts_are_controllers_not_people() {
        assert!(is_machine(
            "system:serviceaccount:argocd:argocd-application-controller"
        ));
        assert!(is_machine("system:node:worker-1"));
        assert!(!is_machine("alice@example.com"));
        assert_eq!(
            controller_of("system:serviceaccount:argocd:argocd-application-controller"),
            "argocd-application-controller"
        );
    }
}
