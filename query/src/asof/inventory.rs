//! Inventory at an instant: which objects were live on which cluster, and
//! who owned them, as the ledger knew it at some system time.
//!
//! The object versions come from the store's version index
//! ([`annal_store::versions`]), so a question reads two interval columns
//! per version and decodes details only for the answer. Ownership is
//! decided per answer row from the version's own markers plus the app
//! inventories in force at the instant ([`schemas::ownership::decide`]):
//! an `app.inventory` replaces the app's previous set, so the latest one of
//! each (cluster, app) at or before T counts.
//!
//! [`schemas::ownership::decide`]: annal_schemas::ownership::decide

use std::collections::HashMap;

use annal_schemas::data::AppInventory;
use annal_schemas::ownership::{self, Claim, Marker, Ownership};
use annal_schemas::{EventType, Timestamp};
use annal_store::versions::{ObjectName, ObjectRef, Span, VersionDetails, VersionRow};
use annal_store::{Entry, ScanKey, Store, StoreError};

use crate::asof::aliases::Aliases;
use crate::QueryError;

/// The two clocks of a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsOf {
    /// Valid time: the instant in the world.
    pub valid: Timestamp,
    /// System time: only what the ledger had recorded by then (`None`:
    /// everything it holds now).
    pub known_at: Option<Timestamp>,
    /// Entries recorded by `known_at`: the log prefix the answer reads.
    pub known_below: u64,
}

impl AsOf {
    /// Whether the interval [`from`, `to`) (`to` `None`: open) holds the
    /// valid time asked.
    pub fn covers(&self, from: Timestamp, to: Option<Timestamp>) -> bool {
        from <= self.valid && to.is_none_or(|t| self.valid < t)
    }

    /// Binds the clocks to `store` (fixing the log prefix, so a question
    /// asked during ingest reads one consistent prefix).
    pub fn new(
        store: &Store,
        valid: Timestamp,
        known_at: Option<Timestamp>,
    ) -> Result<AsOf, QueryError> {
        let known_below = match known_at {
            Some(k) => store.size_at(k)?,
            None => store.size(),
        };
        Ok(AsOf {
            valid,
            known_at,
            known_below,
        })
    }

    /// The events of type `t` this question can see: valid time from
    /// `from` (when given) up to and including the instant asked, recorded
    /// by `known_at`. Read through the type index.
    pub fn events<'a>(
        &self,
        store: &'a Store,
        t: EventType,
        from: Option<Timestamp>,
    ) -> impl Iterator<Item = Result<Entry, StoreError>> + 'a {
        let until = Timestamp::from_unix_micros(self.valid.unix_micros().saturating_add(1));
        let known_below = self.known_below;
        store
            .scan(ScanKey::Type(t.as_str()), from, until)
            .filter(move |e| e.as_ref().map_or(true, |e| e.index < known_below))
    }
}

/// One live object with its owners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryRow {
    /// Stable cluster id.
    pub cluster: String,
    /// The object's identity within the cluster.
    pub object: ObjectName,
    /// API version of the current version.
    pub version: String,
    /// `metadata.uid` (changes when the object is recreated).
    pub uid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// The deciding owner.
    pub owner: Option<String>,
    /// Which marker the owner's claim came from.
    pub owner_kind: Option<Marker>,
    /// Every owner claiming the object.
    pub claims: Vec<String>,
    /// Two different owners claim it.
    pub conflict: bool,
    /// A tracking id naming another object (copied annotation).
    pub tracking_mismatch: Option<String>,
    /// Field managers of the current version.
    pub managers: Vec<String>,
    /// Valid time of the current version.
    pub valid_from: Timestamp,
    /// Log index of the current version.
    pub index: u64,
}

impl InventoryRow {
    /// The columns of `annal inventory -o json` and `GET /v1/inventory`, in
    /// order.
    pub const COLUMNS: [&'static str; 15] = [
        "cluster",
        "group",
        "version",
        "kind",
        "namespace",
        "name",
        "uid",
        "resource_version",
        "owner",
        "owner_kind",
        "claims",
        "conflict",
        "tracking_mismatch",
        "managers",
        "valid_from",
    ];

    /// The columns a person reads first (`annal inventory -o table`; `-o
    /// wide` shows all of [`InventoryRow::COLUMNS`]).
    pub const NARROW: [&'static str; 7] = [
        "cluster",
        "namespace",
        "kind",
        "name",
        "owner",
        "conflict",
        "valid_from",
    ];

    /// The row as a JSON object with [`InventoryRow::COLUMNS`] (empty uid
    /// and resourceVersion as null).
    pub fn to_json(&self) -> serde_json::Value {
        let map = Self::COLUMNS
            .iter()
            .map(|c| c.to_string())
            .zip(self.cells())
            .collect();
        serde_json::Value::Object(map)
    }

    /// The row's values in [`InventoryRow::COLUMNS`] order (what a table
    /// or a streamed document prints, without building an object first).
    pub fn cells(&self) -> Vec<serde_json::Value> {
        use serde_json::Value;
        let text = |s: &str| match s {
            "" => Value::Null,
            s => Value::String(s.to_string()),
        };
        let strings = |v: &[String]| Value::Array(v.iter().cloned().map(Value::String).collect());
        vec![
            Value::String(self.cluster.clone()),
            Value::String(self.object.group.clone()),
            Value::String(self.version.clone()),
            Value::String(self.object.kind.clone()),
            Value::String(self.object.namespace.clone()),
            Value::String(self.object.name.clone()),
            text(&self.uid),
            text(&self.resource_version),
            self.owner.clone().map_or(Value::Null, Value::String),
            self.owner_kind
                .map_or(Value::Null, |m| Value::String(m.as_str().to_string())),
            strings(&self.claims),
            Value::Bool(self.conflict),
            self.tracking_mismatch
                .clone()
                .map_or(Value::Null, Value::String),
            strings(&self.managers),
            Value::String(self.valid_from.to_string()),
        ]
    }
}

/// App inventories in force at an instant: who lists each object.
#[derive(Debug, Default)]
pub struct Listings {
    /// cluster → object (its name as the version index stores it,
    /// `group\0kind\0namespace\0name`) → apps, in app-name order.
    by_object: HashMap<String, HashMap<Vec<u8>, Vec<String>>>,
}

impl Listings {
    /// The latest `app.inventory` of each (cluster, app) at or before
    /// `as_of` (by valid time, then log index).
    pub fn at(store: &Store, as_of: &AsOf) -> Result<Listings, QueryError> {
        let mut latest: HashMap<(String, String), (Timestamp, u64, AppInventory)> = HashMap::new();
        // An app that targets its cluster by server URL lists its objects.
        let aliases = Aliases::load(store, as_of.known_below)?;
        for entry in as_of.events(store, EventType::AppInventory, None) {
            let entry = entry?;
            let Some(cluster) = entry.event.cluster.as_deref() else {
                continue;
            };
            let cluster = aliases.resolve(cluster, entry.event.time).to_string();
            let Ok(inventory) = serde_json::from_value::<AppInventory>(entry.event.data) else {
                continue; // validated on ingest: only a newer writer's shape
            };
            let order = (entry.event.time, entry.index);
            let key = (cluster, inventory.app.clone());
            if latest.get(&key).is_none_or(|(t, i, _)| (*t, *i) < order) {
                latest.insert(key, (order.0, order.1, inventory));
            }
        }
        let mut by_object: HashMap<String, HashMap<Vec<u8>, Vec<String>>> = HashMap::new();
        for ((cluster, app), (_, _, inventory)) in latest {
            for e in inventory.entries {
                let name = [e.group, e.kind, e.namespace, e.name]
                    .join("\0")
                    .into_bytes();
                by_object
                    .entry(cluster.clone())
                    .or_default()
                    .entry(name)
                    .or_default()
                    .push(app.clone());
            }
        }
        for apps in by_object.values_mut().flat_map(|m| m.values_mut()) {
            apps.sort();
            apps.dedup();
        }
        Ok(Listings { by_object })
    }

    /// The objects `app`'s inventory in force lists on `cluster` (what
    /// its Git source held when it was last listed), in name order.
    pub fn listed_by(&self, cluster: &str, app: &str) -> Vec<ObjectName> {
        let mut out: Vec<ObjectName> = self
            .by_object
            .get(cluster)
            .into_iter()
            .flatten()
            .filter(|(_, apps)| apps.iter().any(|a| a == app))
            .filter_map(|(key, _)| {
                let text = std::str::from_utf8(key).ok()?;
                let mut parts = text.splitn(4, '\0');
                Some(ObjectName {
                    group: parts.next()?.to_string(),
                    kind: parts.next()?.to_string(),
                    namespace: parts.next()?.to_string(),
                    name: parts.next()?.to_string(),
                })
            })
            .collect();
        out.sort_by(|a, b| {
            (&a.group, &a.kind, &a.namespace, &a.name).cmp(&(
                &b.group,
                &b.kind,
                &b.namespace,
                &b.name,
            ))
        });
        out
    }

    /// The apps whose inventory lists the object stored as `name_key`
    /// ([`annal_store::versions::ClusterVersions::name_key`]).
    fn apps(&self, cluster: &str, name_key: &[u8]) -> &[String] {
        self.by_object
            .get(cluster)
            .and_then(|m| m.get(name_key))
            .map_or(&[], Vec::as_slice)
    }
}

/// Live objects of one cluster at `as_of`, sorted by (group, kind,
/// namespace, name).
pub fn cluster_at(
    store: &Store,
    cluster: &str,
    as_of: &AsOf,
    listings: &Listings,
) -> Result<Vec<InventoryRow>, QueryError> {
    cluster_rows(store, cluster, as_of, listings, Order::ByName)
}

/// The order of a cluster's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// By (group, kind, namespace, name): what people read.
    ByName,
    /// As the index holds them (first seen first): what SQL gets, since a
    /// query without ORDER BY promises no order and sorting names was most
    /// of a fleet question.
    Index,
}

/// [`cluster_at`] in the order asked.
pub(crate) fn cluster_rows(
    store: &Store,
    cluster: &str,
    as_of: &AsOf,
    listings: &Listings,
    order: Order,
) -> Result<Vec<InventoryRow>, QueryError> {
    let mut rows = Vec::new();
    each_live(store, cluster, as_of, listings, order, |live| {
        rows.push(live.into_row());
        Ok(())
    })?;
    Ok(rows)
}

/// One live object as [`each_live`] hands it over: borrowed from the
/// cluster's versions where it can be, so a table scan copies each value
/// once, into its Arrow builders.
pub(crate) struct LiveObject<'a> {
    /// The cluster id.
    pub(crate) cluster: &'a str,
    /// The object's name.
    pub(crate) object: ObjectRef<'a>,
    /// The current version's row.
    pub(crate) row: &'a VersionRow,
    /// The current version's details (their claims moved into `owners`).
    pub(crate) details: VersionDetails,
    /// Its owners, inventories included.
    pub(crate) owners: Ownership,
}

impl LiveObject<'_> {
    /// The API version of the current version.
    pub(crate) fn version(&self) -> &str {
        ownership::version_of(&self.details.api_version)
    }

    fn into_row(self) -> InventoryRow {
        InventoryRow {
            cluster: self.cluster.to_string(),
            object: self.object.to_name(),
            version: self.version().to_string(),
            uid: self.details.uid,
            resource_version: self.details.resource_version,
            owner: self.owners.owner,
            owner_kind: self.owners.owner_kind,
            claims: self.owners.claims,
            conflict: self.owners.conflict,
            tracking_mismatch: self.details.tracking_mismatch,
            managers: self.details.managers,
            valid_from: Timestamp::from_unix_micros(self.row.from).unwrap_or_else(Timestamp::now),
            index: self.row.index,
        }
    }
}

/// Calls `each` with every live object of `cluster` at `as_of`, in the
/// order asked.
pub(crate) fn each_live(
    store: &Store,
    cluster: &str,
    as_of: &AsOf,
    listings: &Listings,
    order: Order,
    mut each: impl FnMut(LiveObject<'_>) -> Result<(), QueryError>,
) -> Result<(), QueryError> {
    let at = as_of.valid.unix_micros();
    let Some(versions) = store.cluster_versions_in(cluster, Span::Live { at })? else {
        return Ok(());
    };
    let mut live = versions.live_at(at, as_of.known_below);
    if order == Order::ByName {
        // Object names are unique in a cluster: an unstable sort of the
        // references is deterministic and moves 8 bytes per row; the names
        // compare as stored (one byte string each, in tuple order).
        live.sort_unstable_by(|a, b| versions.name_key(a.object).cmp(versions.name_key(b.object)));
    }
    for row in live {
        let object = versions
            .object(row.object)
            .ok_or_else(|| annal_store::StoreError::Corrupt(format!("no object {}", row.object)))?;
        let mut details = versions.details(row)?;
        let mut claims = std::mem::take(&mut details.claims);
        claims.extend(
            listings
                .apps(&versions.cluster, versions.name_key(row.object))
                .iter()
                .map(|app| Claim {
                    owner: app.clone(),
                    marker: Marker::Inventory,
                }),
        );
        let owners = ownership::decide(&claims);
        each(LiveObject {
            cluster: &versions.cluster,
            object,
            row,
            details,
            owners,
        })?;
    }
    Ok(())
}

/// Live objects of every cluster (or only `cluster`) at `as_of`.
pub fn fleet_at(
    store: &Store,
    cluster: Option<&str>,
    as_of: &AsOf,
) -> Result<Vec<InventoryRow>, QueryError> {
    fleet_rows(store, cluster, as_of)?.collect()
}

/// [`fleet_at`] one cluster at a time, for output that streams: memory
/// holds one cluster's answer, never the fleet's.
pub fn fleet_rows<'a>(
    store: &'a Store,
    cluster: Option<&str>,
    as_of: &'a AsOf,
) -> Result<impl Iterator<Item = Result<InventoryRow, QueryError>> + 'a, QueryError> {
    let listings = Listings::at(store, as_of)?;
    let clusters = match cluster {
        Some(c) => vec![c.to_string()],
        None => store.version_clusters()?,
    };
    Ok(clusters.into_iter().flat_map(move |c| {
        let rows: Vec<Result<InventoryRow, QueryError>> =
            match cluster_at(store, &c, as_of, &listings) {
                Ok(rows) => rows.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
        rows
    }))
}
