//! Which Kubernetes objects exist at an instant: the naive fold.
//!
//! Identity is (cluster, group, kind, namespace, name); versions of one object
//! are ordered by (valid time, resourceVersion as an integer when it parses,
//! log index), so the answer never depends on arrival order. An object exists
//! at T when its latest version at or before T is not a deletion.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use annal_schemas::data::{KubeObject, ObjectDeleted, ObjectMeta};
use annal_schemas::{EventType, Timestamp};
use annal_store::{Entry, ScanKey, Store, StoreError};

/// An object's identity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
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
}

/// The version of an object that is current at the instant asked.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveObject {
    /// Identity.
    pub key: ObjectKey,
    /// API version of the latest observation.
    pub version: String,
    /// Metadata of the latest observation.
    pub metadata: ObjectMeta,
    /// Valid time of that observation.
    pub observed_at: Timestamp,
    /// Log index of that observation.
    pub index: u64,
}

/// Ordering key of one version.
#[derive(Clone, Debug, PartialEq, Eq)]
struct VersionOrder {
    time: Timestamp,
    resource_version: Option<u64>,
    index: u64,
}

impl Ord for VersionOrder {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time
            .cmp(&other.time)
            .then_with(|| match (self.resource_version, other.resource_version) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => Ordering::Equal,
            })
            .then_with(|| self.index.cmp(&other.index))
    }
}

impl PartialOrd for VersionOrder {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Objects live at `at` (all of valid time when `None`), sorted by identity.
/// Full scan of the object events: fine for the demo and as a reference.
pub fn live_at(store: &Store, at: Option<Timestamp>) -> Result<Vec<LiveObject>, StoreError> {
    let mut latest: BTreeMap<ObjectKey, (VersionOrder, Option<LiveObject>)> = BTreeMap::new();
    let until = at.and_then(|t| Timestamp::from_unix_micros(t.unix_micros().saturating_add(1)));
    for kind in [EventType::ObjectObserved, EventType::ObjectDeleted] {
        for entry in store.scan(ScanKey::Type(kind.as_str()), None, until) {
            let entry = entry?;
            let Some((key, order, live)) = version_of(&entry) else {
                continue;
            };
            match latest.get(&key) {
                Some((seen, _)) if *seen >= order => {}
                _ => {
                    latest.insert(key, (order, live));
                }
            }
        }
    }
    Ok(latest.into_values().filter_map(|(_, live)| live).collect())
}

/// The identity, order and (for observations) state of one object event.
/// Events whose data does not decode are skipped: they were validated on
/// ingest, so this only happens for shapes a newer writer added.
fn version_of(entry: &Entry) -> Option<(ObjectKey, VersionOrder, Option<LiveObject>)> {
    let event = &entry.event;
    let cluster = event.cluster.clone()?;
    let (api_version, kind, metadata, observed) = match event.event_type {
        EventType::ObjectObserved => {
            let o: KubeObject = serde_json::from_value(event.data.clone()).ok()?;
            (o.api_version, o.kind, o.metadata, true)
        }
        EventType::ObjectDeleted => {
            let o: ObjectDeleted = serde_json::from_value(event.data.clone()).ok()?;
            (o.api_version, o.kind, o.metadata, false)
        }
        _ => return None,
    };
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let key = ObjectKey {
        cluster,
        group,
        kind,
        namespace: metadata.namespace.clone().unwrap_or_default(),
        name: metadata.name.clone(),
    };
    let order = VersionOrder {
        time: event.time,
        resource_version: metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok()),
        index: entry.index,
    };
    let live = observed.then(|| LiveObject {
        key: key.clone(),
        version,
        metadata,
        observed_at: event.time,
        index: entry.index,
    });
    Some((key, order, live))
}
