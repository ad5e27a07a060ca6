//! What a report groups by, and the group an event or object falls in.
//!
//! Tenant, team and environment come from the cluster registry as it was
//! at the instant measured: `tenant` and `environment` are registry fields,
//! the team is the `team` attribute, else the registry `owner`. A cluster
//! not registered at that instant is `(unregistered)`; a field it lacks is
//! `(unset)`; an event with no cluster (or no app, by app) is `(none)`.

use std::collections::HashMap;
use std::str::FromStr;

use annal_store::Store;

use crate::asof::registry::{self, ClusterVersion};
use crate::QueryError;

/// The dimension a cost report is broken down by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// The cluster id.
    Cluster,
    /// The GitOps app (syncs: the synced app; objects: their owner).
    App,
    /// The cluster's tenant in the registry.
    Tenant,
    /// The cluster's team (`team` attribute, else `owner`).
    Team,
    /// The cluster's environment.
    Environment,
}

impl FromStr for GroupBy {
    type Err = QueryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "cluster" => GroupBy::Cluster,
            "app" => GroupBy::App,
            "tenant" => GroupBy::Tenant,
            "team" => GroupBy::Team,
            "environment" | "env" => GroupBy::Environment,
            other => {
                return Err(QueryError::BadInput(format!(
                    "cannot group by {other:?}: use cluster, app, tenant, team or environment"
                )))
            }
        })
    }
}

impl GroupBy {
    /// The name used in arguments and columns.
    pub fn as_str(&self) -> &'static str {
        match self {
            GroupBy::Cluster => "cluster",
            GroupBy::App => "app",
            GroupBy::Tenant => "tenant",
            GroupBy::Team => "team",
            GroupBy::Environment => "environment",
        }
    }
}

/// Group label of what has no cluster, app or owner.
pub const NONE: &str = "(none)";
/// Group label of a cluster not in the registry at the instant.
pub const UNREGISTERED: &str = "(unregistered)";
/// Group label of a registry entry without the field.
pub const UNSET: &str = "(unset)";

/// Each cluster's registry versions, to look up attributes by instant.
#[derive(Default)]
pub struct Registry {
    by_cluster: HashMap<String, Vec<ClusterVersion>>,
}

impl Registry {
    /// The registry as the first `known_below` entries tell it.
    pub fn load(store: &Store, known_below: u64) -> Result<Self, QueryError> {
        let mut by_cluster: HashMap<String, Vec<ClusterVersion>> = HashMap::new();
        for v in registry::versions(store, None, known_below)? {
            by_cluster.entry(v.cluster.clone()).or_default().push(v);
        }
        Ok(Registry { by_cluster })
    }

    /// The registry label of `cluster` at `t` (Unix microseconds) for a
    /// registry dimension.
    pub fn label(&self, by: GroupBy, cluster: Option<&str>, t: i64) -> String {
        let Some(cluster) = cluster else {
            return NONE.into();
        };
        match self.version_at(cluster, t) {
            None => UNREGISTERED.into(),
            Some(v) => field(v, by).unwrap_or(UNSET).to_string(),
        }
    }

    /// The instants in `(start, end)` where `cluster`'s registry entry
    /// changes, so an interval can be cut where its group changes.
    pub fn changes(&self, cluster: &str, start: i64, end: i64) -> Vec<i64> {
        self.by_cluster.get(cluster).map_or_else(Vec::new, |vs| {
            vs.iter()
                .map(|v| v.valid_from.unix_micros())
                .filter(|t| *t > start && *t < end)
                .collect()
        })
    }

    fn version_at(&self, cluster: &str, t: i64) -> Option<&ClusterVersion> {
        self.by_cluster.get(cluster)?.iter().find(|v| {
            v.valid_from.unix_micros() <= t && v.valid_to.is_none_or(|to| t < to.unix_micros())
        })
    }
}

fn field(v: &ClusterVersion, by: GroupBy) -> Option<&str> {
    match by {
        GroupBy::Cluster => Some(v.cluster.as_str()),
        GroupBy::Tenant => v.tenant.as_deref(),
        GroupBy::Environment => v.environment.as_deref(),
        GroupBy::Team => v
            .attributes
            .get("team")
            .map(String::as_str)
            .or(v.owner.as_deref()),
        GroupBy::App => None,
    }
}
