//! The diff of two instants (DESIGN "Change questions"): which objects
//! were added, removed, changed or changed owner between T1 and T2, each
//! side answered as [`inventory::cluster_at`] answers it, so late events
//! land where they belong and the answer does not depend on arrival
//! order.
//!
//! An object live at both instants is `changed` when its two versions
//! differ in content (`metadata.resourceVersion` and
//! `metadata.managedFields` aside: they change with every write), and
//! `owner-changed` when its deciding owner differs (whether or not its
//! content did). A changed object names the fields that differ (paths
//! like `.spec.replicas`; a list is compared whole) and the field managers
//! of the later version that own one of them. Clusters are answered one at
//! a time, so memory holds two answers of one cluster, never the fleet's.

use std::collections::BTreeMap;

use annal_schemas::Timestamp;
use annal_store::versions::ObjectName;
use annal_store::{Entry, Store};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::asof::inventory::{self, AsOf, InventoryRow, Listings};
use crate::asof::managed_fields;
use crate::QueryError;

/// How an object differs between the two instants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Live at T2, not at T1.
    Added,
    /// Live at T1, not at T2.
    Removed,
    /// Live at both, with other content.
    Changed,
    /// Live at both, with another deciding owner.
    OwnerChanged,
}

impl Change {
    /// The name the CLI and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
            Change::OwnerChanged => "owner-changed",
        }
    }
}

/// One object that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffRow {
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
    /// How it differs.
    pub change: Change,
    /// The deciding owner at T1 (`None` when unowned or not live).
    pub owner_before: Option<String>,
    /// The deciding owner at T2.
    pub owner_after: Option<String>,
    /// Fields whose values differ between the two versions (changed
    /// objects only).
    pub fields: Vec<String>,
    /// Managers of the later version that own one of `fields`.
    pub managers: Vec<String>,
    /// Log index of the version live at T1.
    pub index_before: Option<u64>,
    /// Log index of the version live at T2.
    pub index_after: Option<u64>,
}

impl DiffRow {
    /// Whether `app` is the deciding owner at either instant.
    pub fn owned_by(&self, app: &str) -> bool {
        self.owner_before.as_deref() == Some(app) || self.owner_after.as_deref() == Some(app)
    }
}

/// The answer as one document (`annal diff -o json`, `GET /v1/diff`):
/// owner changes are listed under `changed`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Document {
    /// Objects live at T2, not at T1.
    pub added: Vec<DiffRow>,
    /// Objects live at T1, not at T2.
    pub removed: Vec<DiffRow>,
    /// Objects live at both, changed in content or owner.
    pub changed: Vec<DiffRow>,
}

impl Document {
    /// Files `row` under its change.
    pub fn push(&mut self, row: DiffRow) {
        match row.change {
            Change::Added => self.added.push(row),
            Change::Removed => self.removed.push(row),
            Change::Changed | Change::OwnerChanged => self.changed.push(row),
        }
    }
}

/// The two sides of a diff: `t1` and `t2` as the ledger knew them at
/// `known_at`. `t1` after `t2` is bad input, whichever surface asked.
pub fn sides(
    store: &Store,
    t1: Timestamp,
    t2: Timestamp,
    known_at: Option<Timestamp>,
) -> Result<(AsOf, AsOf), QueryError> {
    if t2 < t1 {
        return Err(QueryError::BadInput(format!(
            "{t1} is after {t2}: give the earlier instant first"
        )));
    }
    Ok((
        AsOf::new(store, t1, known_at)?,
        AsOf::new(store, t2, known_at)?,
    ))
}

/// The objects of `clusters` (every cluster when `None`) that differ
/// between `from` and `to`, cluster by cluster, each cluster's in object
/// order.
pub fn fleet_diff<'a>(
    store: &'a Store,
    clusters: Option<&[String]>,
    from: &'a AsOf,
    to: &'a AsOf,
) -> Result<impl Iterator<Item = Result<DiffRow, QueryError>> + 'a, QueryError> {
    let before = Listings::at(store, from)?;
    let after = Listings::at(store, to)?;
    let clusters = match clusters {
        Some(c) if !c.is_empty() => c.to_vec(),
        _ => store.version_clusters()?,
    };
    Ok(clusters.into_iter().flat_map(move |c| {
        let rows = inventory::cluster_at(store, &c, from, &before)
            .and_then(|b| Ok((b, inventory::cluster_at(store, &c, to, &after)?)))
            .and_then(|(b, a)| cluster_diff(store, b, a));
        match rows {
            Ok(rows) => rows.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => vec![Err(e)],
        }
    }))
}

/// The differences between one cluster's answers at the two instants.
fn cluster_diff(
    store: &Store,
    before: Vec<InventoryRow>,
    after: Vec<InventoryRow>,
) -> Result<Vec<DiffRow>, QueryError> {
    let mut sides: BTreeMap<ObjectName, (Option<InventoryRow>, Option<InventoryRow>)> =
        BTreeMap::new();
    for r in before {
        let key = r.object.clone();
        sides.entry(key).or_default().0 = Some(r);
    }
    for r in after {
        let key = r.object.clone();
        sides.entry(key).or_default().1 = Some(r);
    }
    let mut out = Vec::new();
    for (object, sides) in sides {
        let row =
            |cluster: &str, change, b: Option<&InventoryRow>, a: Option<&InventoryRow>| DiffRow {
                cluster: cluster.to_string(),
                group: object.group.clone(),
                kind: object.kind.clone(),
                namespace: object.namespace.clone(),
                name: object.name.clone(),
                change,
                owner_before: b.and_then(|r| r.owner.clone()),
                owner_after: a.and_then(|r| r.owner.clone()),
                fields: Vec::new(),
                managers: Vec::new(),
                index_before: b.map(|r| r.index),
                index_after: a.map(|r| r.index),
            };
        match sides {
            (Some(b), None) => out.push(row(&b.cluster, Change::Removed, Some(&b), None)),
            (None, Some(a)) => out.push(row(&a.cluster, Change::Added, None, Some(&a))),
            (Some(b), Some(a)) => {
                let (fields, managers) = if b.index == a.index {
                    (Vec::new(), Vec::new())
                } else {
                    // Each version is read once: its content, and for the
                    // later one the managers of what changed.
                    let later = entry(store, a.index)?;
                    let mut fields = Vec::new();
                    differences(
                        "",
                        &entry(store, b.index)?.event.data,
                        &later.event.data,
                        &mut fields,
                    );
                    let managers = match fields.is_empty() {
                        true => Vec::new(),
                        false => managers_of(managed_fields::of_entry(&later), &fields),
                    };
                    (fields, managers)
                };
                let change = if b.owner != a.owner {
                    Change::OwnerChanged
                } else if !fields.is_empty() {
                    Change::Changed
                } else {
                    continue;
                };
                out.push(DiffRow {
                    fields,
                    managers,
                    ..row(&a.cluster, change, Some(&b), Some(&a))
                });
            }
            (None, None) => {}
        }
    }
    Ok(out)
}

/// The entry at `index` (an object version the index names).
fn entry(store: &Store, index: u64) -> Result<Entry, QueryError> {
    store
        .entry(index)?
        .ok_or_else(|| QueryError::NotFound(format!("no entry {index}")))
}

/// Paths every write changes, never reported.
const EVERY_WRITE: [&str; 2] = [".metadata.resourceVersion", ".metadata.managedFields"];

/// Appends to `out` the paths under `at` where `a` and `b` differ: objects
/// are compared key by key, anything else (lists included) whole; the
/// paths every write changes (`.metadata.resourceVersion`,
/// `.metadata.managedFields`) are left out.
pub fn differences(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let empty = Value::Object(Map::new());
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (a.get(k), b.get(k));
                if x == y {
                    continue;
                }
                let path = format!("{at}.{k}");
                if EVERY_WRITE.contains(&path.as_str()) {
                    continue;
                }
                match (x, y) {
                    (Some(x), Some(y)) => differences(&path, x, y, out),
                    // A key on one side only: its leaves (or itself) changed.
                    (Some(v), None) | (None, Some(v)) => differences(&path, v, &empty, out),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a != b => out.push(if at.is_empty() {
            ".".into()
        } else {
            at.to_string()
        }),
        _ => {}
    }
}

/// The managers among `owned` (a version's) owning a field under or above
/// one of `fields` (list selectors such as `[name="web"]` aside).
pub(crate) fn managers_of(
    owned: Vec<managed_fields::ManagerFields>,
    fields: &[String],
) -> Vec<String> {
    if fields.is_empty() {
        return Vec::new();
    }
    let related = |path: &str| {
        let path = path.split('[').next().unwrap_or(path);
        fields.iter().any(|f| {
            let under = |long: &str, short: &str| {
                long == short || long.strip_prefix(short).is_some_and(|r| r.starts_with('.'))
            };
            under(path, f) || under(f, path)
        })
    };
    let mut managers: Vec<String> = owned
        .into_iter()
        .filter(|m| m.fields.iter().any(|f| related(f)))
        .filter_map(|m| m.manager)
        .collect();
    managers.sort();
    managers.dedup();
    managers
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn differences_name_each_changed_leaf_and_lists_whole() {
        let a = json!({"spec": {"replicas": 2, "paused": false, "ports": [80]},
                       "metadata": {"labels": {"a": "1"}}});
        let b = json!({"spec": {"replicas": 3, "paused": false, "ports": [80, 443]},
                       "metadata": {"labels": {"a": "1", "b": "2"}}, "status": {"ready": 1}});
        let mut out = Vec::new();
        differences("", &a, &b, &mut out);
        assert_eq!(
            out,
            [
                ".metadata.labels.b",
                ".spec.ports",
                ".spec.replicas",
                ".status.ready"
            ]
        );
        let mut none = Vec::new();
        differences("", &a, &a.clone(), &mut none);
        assert!(none.is_empty());
        // What every write changes is not a change.
        let written = |rv: &str, manager: &str| {
            json!({"metadata": {"name": "x", "resourceVersion": rv,
                                "managedFields": [{"manager": manager}]}})
        };
        differences("", &written("1", "a"), &written("2", "b"), &mut none);
        assert!(none.is_empty(), "{none:?}");
    }
}
