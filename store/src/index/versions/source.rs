//! Reading an object version out of a log entry.

use annal_schemas::data::shape;
use annal_schemas::ownership::{self, ObjectIdentity};
use annal_schemas::{EventType, Header};

use crate::data_view::Data;

use super::{ObjectName, VersionDetails};

/// An object version about to be indexed (its log index comes with it when
/// it is applied).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NewVersion {
    pub(crate) cluster: String,
    pub(crate) name: ObjectName,
    pub(crate) time: i64,
    pub(crate) rv: u64,
    /// The resourceVersion is exactly the decimal text of `rv`.
    pub(crate) rv_decimal: bool,
    pub(crate) deleted: bool,
    pub(crate) details: VersionDetails,
}

impl NewVersion {
    /// The version `event` records, if it records one.
    ///
    /// Not versions: events other than `object.observed`/`object.deleted`,
    /// events without a cluster, data that no longer decodes (validated on
    /// ingest, so only shapes a newer writer added), and partial versions
    /// (`partial: "scale"`, from an audited `scale` write): those carry only
    /// `spec.replicas` and change neither existence nor ownership.
    ///
    /// The data is read through a borrow: cloning an event's JSON tree
    /// to decode it cost more than the rest of indexing.
    pub(crate) fn of<D: Data>(event: &Header<'_>, data: &D) -> Option<NewVersion> {
        let cluster = event.cluster?.to_string();
        let deleted = match event.event_type {
            EventType::ObjectObserved => {
                if data.get("partial").is_some() {
                    return None;
                }
                false
            }
            EventType::ObjectDeleted => true,
            _ => return None,
        };
        // The borrowed view decodes exactly what the owned types decode
        // (`KubeObject`, `ObjectDeleted`), without copying the object.
        let shape::Object {
            api_version,
            kind,
            metadata,
        } = data.object()?;
        let namespace = metadata.namespace.unwrap_or_default();
        let name = ObjectName {
            group: ownership::group_of(api_version).to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: metadata.name.to_string(),
        };
        let parsed: Option<u64> = metadata.resource_version.and_then(|rv| rv.parse().ok());
        let rv = parsed.unwrap_or(0);
        let rv_decimal =
            parsed.is_some_and(|n| metadata.resource_version == Some(n.to_string().as_str()));
        let mut details = details_of(api_version, kind, namespace, &metadata, deleted);
        if rv_decimal {
            details.resource_version.clear();
        }
        Some(NewVersion {
            cluster,
            name,
            time: event.time.unix_micros(),
            rv,
            rv_decimal,
            deleted,
            details,
        })
    }
}

fn details_of(
    api_version: &str,
    kind: &str,
    namespace: &str,
    meta: &shape::Meta<'_>,
    deleted: bool,
) -> VersionDetails {
    let markers = if deleted {
        ownership::Markers::default()
    } else {
        ownership::markers(
            ObjectIdentity {
                api_version,
                kind,
                namespace,
                name: meta.name,
            },
            &meta.labels,
            &meta.annotations,
        )
    };
    let mut managers: Vec<String> = meta
        .managed_fields
        .iter()
        .filter_map(|m| m.manager.map(str::to_string))
        .collect();
    managers.sort();
    managers.dedup();
    VersionDetails {
        api_version: api_version.to_string(),
        uid: meta.uid.unwrap_or_default().to_string(),
        resource_version: meta.resource_version.unwrap_or_default().to_string(),
        claims: markers.claims,
        tracking_mismatch: markers.tracking_mismatch,
        managers,
    }
}
