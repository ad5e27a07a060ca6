//! Capacity: per cluster and step, how close delivery is to its budgets.
//!
//! Series, per cluster (every cluster registered, holding objects or
//! reporting controller counters):
//! - `apps`, `objects`, `fan_out`: at the end of each step, the apps that
//!   own live objects on the cluster, the live objects, and the app-object
//!   pairs (each live object once per app claiming it), from the object
//!   version index;
//! - `api_requests_per_second`, `throttled_per_second`: the controllers'
//!   own counters (`controller.metrics`) summed over the step, per second;
//! - `queue_age_seconds`: the oldest work-queue item any controller reported
//!   for the cluster in the step.
//!
//! Flags, against a [`Budgets`] file: fan-out, API rate or 429 rate over
//! budget; the 429 rate rising three steps in a row (flagged on the third);
//! queue age above half the release window.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use annal_schemas::data::ControllerMetrics;
use annal_schemas::{EventType, Timestamp};
use annal_store::{ScanKey, Store};
use serde::{Deserialize, Serialize};

use super::buckets::{instant, Buckets};
use crate::QueryError;

/// Limits a capacity owner sets (TOML; every key optional):
///
/// ```toml
/// max_fan_out = 200000                 # app-object pairs per cluster
/// max_api_requests_per_second = 50.0
/// max_throttled_per_second = 0.5
/// release_window_seconds = 3600        # queue age above half of it is flagged
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// Largest fan-out per cluster.
    pub max_fan_out: Option<u64>,
    /// Largest API request rate per cluster.
    pub max_api_requests_per_second: Option<f64>,
    /// Largest 429 rate per cluster.
    pub max_throttled_per_second: Option<f64>,
    /// The release window; queue age above half of it is flagged.
    pub release_window_seconds: Option<f64>,
}

impl Budgets {
    /// Reads a budgets file.
    pub fn read(path: &Path) -> Result<Self, QueryError> {
        let bad = |e: String| QueryError::BadInput(format!("budgets {}: {e}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        toml::from_str(&text).map_err(|e| bad(e.to_string()))
    }
}

/// What to report on.
#[derive(Clone, Debug)]
pub struct CapacityRequest {
    /// Window start (valid time).
    pub from: Timestamp,
    /// Window end (exclusive).
    pub to: Timestamp,
    /// Step length in seconds (none: one step).
    pub step_seconds: Option<u64>,
    /// Limits to flag against.
    pub budgets: Budgets,
}

/// One cluster in one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CapacityRow {
    /// Cluster id.
    pub cluster: String,
    /// Step start.
    pub step_start: Timestamp,
    /// Step end (exclusive).
    pub step_end: Timestamp,
    /// Apps owning live objects at the step's end.
    pub apps: u64,
    /// Live objects at the step's end.
    pub objects: u64,
    /// App-object pairs at the step's end.
    pub fan_out: u64,
    /// Controller API requests per second over the step.
    pub api_requests_per_second: f64,
    /// Throttled (429) requests per second over the step.
    pub throttled_per_second: f64,
    /// Oldest queue item reported in the step (seconds).
    pub queue_age_seconds: Option<f64>,
    /// Budgets broken in this step.
    pub flags: Vec<String>,
}

/// The capacity report.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityReport {
    /// Window start.
    pub from: Timestamp,
    /// Window end.
    pub to: Timestamp,
    /// Step length in seconds.
    pub step_seconds: u64,
    /// The budgets applied.
    pub budgets: Budgets,
    /// Rows by cluster, then step (every step of every cluster).
    pub rows: Vec<CapacityRow>,
}

impl CapacityReport {
    /// Rows with at least one flag.
    pub fn flagged(&self) -> usize {
        self.rows.iter().filter(|r| !r.flags.is_empty()).count()
    }
}

/// Controller counters summed per (cluster, step).
#[derive(Default)]
struct Counters {
    requests: f64,
    throttled: f64,
    queue_age: Option<f64>,
}

/// Computes the capacity report over the committed log.
pub fn capacity(store: &Store, request: &CapacityRequest) -> Result<CapacityReport, QueryError> {
    let buckets = Buckets::new(request.from, request.to, request.step_seconds)?;
    let known_below = store.size();
    let (from, to) = buckets.window();

    let mut counters: BTreeMap<(String, usize), Counters> = BTreeMap::new();
    for entry in store.scan(
        ScanKey::Type(EventType::ControllerMetrics.as_str()),
        Some(request.from),
        Some(request.to),
    ) {
        let entry = entry?;
        if entry.index >= known_below {
            continue;
        }
        let (Some(cluster), Some(step)) = (
            entry.event.cluster.clone(),
            buckets.of(entry.event.time.unix_micros()),
        ) else {
            continue;
        };
        let Ok(m) = serde_json::from_value::<ControllerMetrics>(entry.event.data) else {
            continue;
        };
        let c = counters.entry((cluster, step)).or_default();
        c.requests += m.api_requests.unwrap_or(0) as f64;
        c.throttled += m.api_throttled.unwrap_or(0) as f64;
        if let Some(age) = m.queue_age_seconds {
            c.queue_age = Some(c.queue_age.map_or(age, |a: f64| a.max(age)));
        }
    }

    // Every cluster the ledger knows: registered, with objects, or with
    // controller counters.
    let mut clusters: BTreeSet<String> = store.version_clusters()?.into_iter().collect();
    clusters.extend(counters.keys().map(|(c, _)| c.clone()));
    clusters.extend(
        crate::asof::registry::versions(store, None, known_below)?
            .into_iter()
            .map(|v| v.cluster),
    );
    let b = &request.budgets;
    let mut rows = Vec::new();
    for cluster in clusters {
        let versions = store.cluster_versions(&cluster)?;
        let mut throttled_rates: Vec<f64> = Vec::new();
        for step in 0..buckets.len() {
            let (start, end) = buckets.bounds(step);
            let seconds = (end - start) as f64 / 1e6;
            let (mut apps, mut objects, mut fan_out) = (BTreeSet::new(), 0u64, 0u64);
            if let Some(v) = &versions {
                for row in v.live_at(end - 1, known_below) {
                    objects += 1;
                    let owners = annal_schemas::ownership::decide(&v.details(row)?.claims).claims;
                    fan_out += owners.len() as u64;
                    apps.extend(owners);
                }
            }
            let c = counters
                .remove(&(cluster.clone(), step))
                .unwrap_or_default();
            let rate = c.requests / seconds;
            let throttled = c.throttled / seconds;
            let mut flags = Vec::new();
            if let Some(max) = b.max_fan_out {
                if fan_out > max {
                    flags.push(format!("fan-out {fan_out} over the budget of {max}"));
                }
            }
            if let Some(max) = b.max_api_requests_per_second {
                if rate > max {
                    flags.push(format!("{rate:.2} API requests/s over the budget of {max}"));
                }
            }
            if let Some(max) = b.max_throttled_per_second {
                if throttled > max {
                    flags.push(format!(
                        "{throttled:.3} throttled requests/s over the budget of {max}"
                    ));
                }
            }
            throttled_rates.push(throttled);
            if let [.., x, y, z] = throttled_rates[..] {
                if x < y && y < z {
                    flags.push("429 rate rising three steps in a row".into());
                }
            }
            if let (Some(window), Some(age)) = (b.release_window_seconds, c.queue_age) {
                if age > window / 2.0 {
                    flags.push(format!(
                        "queue age {age:.0}s above half the release window ({window:.0}s)"
                    ));
                }
            }
            rows.push(CapacityRow {
                cluster: cluster.clone(),
                step_start: instant(start),
                step_end: instant(end),
                apps: apps.len() as u64,
                objects,
                fan_out,
                api_requests_per_second: rate,
                throttled_per_second: throttled,
                queue_age_seconds: c.queue_age,
                flags,
            });
        }
    }
    Ok(CapacityReport {
        from: request.from,
        to: request.to,
        step_seconds: request
            .step_seconds
            .unwrap_or(((to - from) / 1_000_000) as u64),
        budgets: request.budgets.clone(),
        rows,
    })
}
