//! The cluster registry over time: each cluster's attributes and lifecycle
//! state, one version per registry event, with its valid-time interval.
//!
//! `cluster.registered` sets the attributes; `cluster.updated` changes the
//! fields it carries (absent fields keep their value; a non-empty
//! `attributes` map replaces the previous one); `cluster.lifecycle` sets the
//! state. Events of one cluster are folded in (valid time, log index) order,
//! so a late registry event is placed where it belongs.

use std::collections::BTreeMap;

use annal_schemas::data::{ClusterInfo, ClusterLifecycle, LifecycleState};
use annal_schemas::{EventType, Timestamp};
use annal_store::{Entry, ScanKey, Store};
use serde::Serialize;

use crate::asof::inventory::AsOf;
use crate::QueryError;

/// One version of one cluster's registry entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterVersion {
    /// Stable cluster id.
    pub cluster: String,
    /// Human name.
    pub display_name: Option<String>,
    /// Environment (prod, staging, ...).
    pub environment: Option<String>,
    /// Region.
    pub region: Option<String>,
    /// Fault domain.
    pub fault_domain: Option<String>,
    /// Tenant.
    pub tenant: Option<String>,
    /// Compliance regime.
    pub compliance: Option<String>,
    /// Owning team.
    pub owner: Option<String>,
    /// Lifecycle label from the registration.
    pub lifecycle: Option<String>,
    /// Lifecycle state from `cluster.lifecycle` (`None`: never set).
    pub state: Option<String>,
    /// Free-form attributes.
    pub attributes: BTreeMap<String, String>,
    /// API server URL.
    pub api_server: Option<String>,
    /// Fingerprint of the cluster CA.
    pub ca_fingerprint: Option<String>,
    /// Fingerprint of the registry's credential for the cluster.
    pub credential_fingerprint: Option<String>,
    /// Valid time the version starts.
    pub valid_from: Timestamp,
    /// Valid time the next version starts (`None`: current).
    pub valid_to: Option<Timestamp>,
    /// Log index of the event that made this version.
    pub index: u64,
}

impl ClusterVersion {
    /// A registry field by name (`environment`, `region`, `fault_domain`,
    /// `tenant`, `compliance`, `owner`, `lifecycle`, `state`,
    /// `display_name`, `cluster`), else a key of `attributes`: what
    /// selectors and cohorts read.
    pub fn field(&self, key: &str) -> Option<&str> {
        match key {
            "cluster" | "id" => Some(self.cluster.as_str()),
            "display_name" => self.display_name.as_deref(),
            "environment" => self.environment.as_deref(),
            "region" => self.region.as_deref(),
            "fault_domain" => self.fault_domain.as_deref(),
            "tenant" => self.tenant.as_deref(),
            "compliance" => self.compliance.as_deref(),
            "owner" => self.owner.as_deref(),
            "lifecycle" => self.lifecycle.as_deref(),
            "state" => self.state.as_deref(),
            other => self.attributes.get(other).map(String::as_str),
        }
    }
}

/// Every registry version of every cluster (or of `cluster`), among the
/// first `known_below` entries.
pub fn versions(
    store: &Store,
    cluster: Option<&str>,
    known_below: u64,
) -> Result<Vec<ClusterVersion>, QueryError> {
    let mut by_cluster: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for t in [
        EventType::ClusterRegistered,
        EventType::ClusterUpdated,
        EventType::ClusterLifecycle,
    ] {
        for entry in store.scan(ScanKey::Type(t.as_str()), None, None) {
            let entry = entry?;
            let Some(c) = entry.event.cluster.clone() else {
                continue;
            };
            if entry.index < known_below && cluster.is_none_or(|want| want == c) {
                by_cluster.entry(c).or_default().push(entry);
            }
        }
    }
    let mut out = Vec::new();
    for (cluster, mut entries) in by_cluster {
        entries.sort_by_key(|e| (e.event.time, e.index));
        let mut info = ClusterInfo::default();
        let mut state: Option<LifecycleState> = None;
        let first = out.len();
        for e in &entries {
            match e.event.event_type {
                EventType::ClusterRegistered => {
                    if let Ok(i) = serde_json::from_value(e.event.data.clone()) {
                        info = i;
                    }
                }
                EventType::ClusterUpdated => {
                    if let Ok(i) = serde_json::from_value::<ClusterInfo>(e.event.data.clone()) {
                        merge(&mut info, i);
                    }
                }
                _ => {
                    if let Ok(l) = serde_json::from_value::<ClusterLifecycle>(e.event.data.clone())
                    {
                        state = Some(l.state);
                    }
                }
            }
            out.push(version(&cluster, &info, state, e));
        }
        for i in first..out.len().saturating_sub(1) {
            out[i].valid_to = Some(out[i + 1].valid_from);
        }
    }
    Ok(out)
}

/// Each cluster's registry entry at `as_of` (clusters registered later are
/// absent).
pub fn at(
    store: &Store,
    cluster: Option<&str>,
    as_of: &AsOf,
) -> Result<Vec<ClusterVersion>, QueryError> {
    Ok(versions(store, cluster, as_of.known_below)?
        .into_iter()
        .filter(|v| as_of.covers(v.valid_from, v.valid_to))
        .collect())
}

fn merge(info: &mut ClusterInfo, update: ClusterInfo) {
    let fields = [
        (&mut info.display_name, update.display_name),
        (&mut info.environment, update.environment),
        (&mut info.region, update.region),
        (&mut info.fault_domain, update.fault_domain),
        (&mut info.tenant, update.tenant),
        (&mut info.compliance, update.compliance),
        (&mut info.owner, update.owner),
        (&mut info.lifecycle, update.lifecycle),
        (&mut info.api_server, update.api_server),
        (&mut info.ca_fingerprint, update.ca_fingerprint),
        (
            &mut info.credential_fingerprint,
            update.credential_fingerprint,
        ),
    ];
    for (slot, value) in fields {
        if value.is_some() {
            *slot = value;
        }
    }
    if !update.attributes.is_empty() {
        info.attributes = update.attributes;
    }
}

fn version(
    cluster: &str,
    info: &ClusterInfo,
    state: Option<LifecycleState>,
    e: &Entry,
) -> ClusterVersion {
    let state = state.map(|s| {
        serde_json::to_value(s)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    });
    ClusterVersion {
        cluster: cluster.to_string(),
        display_name: info.display_name.clone(),
        environment: info.environment.clone(),
        region: info.region.clone(),
        fault_domain: info.fault_domain.clone(),
        tenant: info.tenant.clone(),
        compliance: info.compliance.clone(),
        owner: info.owner.clone(),
        lifecycle: info.lifecycle.clone(),
        state,
        attributes: info.attributes.clone(),
        api_server: info.api_server.clone(),
        ca_fingerprint: info.ca_fingerprint.clone(),
        credential_fingerprint: info.credential_fingerprint.clone(),
        valid_from: e.event.time,
        valid_to: None,
        index: e.index,
    }
}
