//! Cost attribution: what each cluster, app, tenant, team or environment
//! cost the delivery platform, per step, from the log itself.
//!
//! Measures, all by the valid time of what they measure:
//! - `syncs`, `sync_seconds` (finished − started), `render_seconds`,
//!   `api_requests`, `api_throttled`, `applied_bytes`: from `app.sync`
//!   events and their `metrics` (the controller's own counters go to the
//!   capacity report, so nothing is counted twice);
//! - `object_hours`: every object version that exists, integrated over the
//!   part of its valid-time interval inside each step, attributed to its
//!   owner (from the version's own tracking labels and annotations, as in
//!   the `objects` table) or its cluster's registry entry at each instant;
//! - `ledger_bytes`: the bytes of the ledger entries whose valid time falls
//!   in the step, with `ledger_bytes_by_source` splitting them by the event
//!   type that wrote them.
//!
//! Cost is Σ measure × price from a [`PriceTable`]; without one the report
//! has measures only. The log is read once, streaming, and the object
//! versions once per cluster: memory grows with groups × steps, not with
//! the log.

use std::collections::{BTreeMap, HashMap};

use annal_schemas::data::AppSync;
use annal_schemas::ownership;
use annal_schemas::{EventType, Timestamp};
use annal_store::Store;
use serde::{Deserialize, Serialize};

use super::buckets::{instant, Buckets};
use super::groups::{GroupBy, Registry, NONE};
use super::prices::PriceTable;
use crate::QueryError;

/// What to report on.
#[derive(Clone, Debug)]
pub struct CostRequest {
    /// Window start (valid time).
    pub from: Timestamp,
    /// Window end (exclusive).
    pub to: Timestamp,
    /// The breakdown.
    pub by: GroupBy,
    /// Step length in seconds (none: one step over the window).
    pub step_seconds: Option<u64>,
    /// Prices (none: measures only).
    pub prices: Option<PriceTable>,
}

/// The measures of one group in one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Measures {
    /// `app.sync` events.
    pub syncs: u64,
    /// Σ finished_at − started_at of those syncs.
    pub sync_seconds: f64,
    /// Σ metrics.render_seconds.
    pub render_seconds: f64,
    /// Σ metrics.api_requests.
    pub api_requests: u64,
    /// Σ metrics.api_throttled (429 answers).
    pub api_throttled: u64,
    /// Σ metrics.applied_bytes.
    pub applied_bytes: u64,
    /// Objects owned, integrated over time, in hours.
    pub object_hours: f64,
    /// Bytes of ledger entries.
    pub ledger_bytes: u64,
    /// The same bytes by the event type that wrote them.
    pub ledger_bytes_by_source: BTreeMap<String, u64>,
}

/// One row: a group in a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostRow {
    /// The group's label.
    pub group: String,
    /// Step start.
    pub step_start: Timestamp,
    /// Step end (exclusive).
    pub step_end: Timestamp,
    /// The measures.
    #[serde(flatten)]
    pub measures: Measures,
    /// Σ measure × price, when a price table was given.
    pub cost: Option<f64>,
}

/// The cost report.
#[derive(Clone, Debug, Serialize)]
pub struct CostReport {
    /// The breakdown (`cluster`, `app`, ...).
    pub by: &'static str,
    /// Window start.
    pub from: Timestamp,
    /// Window end.
    pub to: Timestamp,
    /// Step length in seconds.
    pub step_seconds: u64,
    /// Currency of `cost` (when priced).
    pub currency: Option<String>,
    /// Rows by group, then step; steps where a group had nothing are left
    /// out.
    pub rows: Vec<CostRow>,
}

impl CostReport {
    /// Each group's total cost (or, unpriced, object-hours) over the
    /// window, largest first: the top-N table.
    pub fn totals(&self) -> Vec<(String, Measures, Option<f64>)> {
        let mut by_group: BTreeMap<&str, (Measures, Option<f64>)> = BTreeMap::new();
        for row in &self.rows {
            let (m, cost) = by_group.entry(&row.group).or_default();
            add(m, &row.measures);
            if let Some(c) = row.cost {
                *cost = Some(cost.unwrap_or(0.0) + c);
            }
        }
        let mut out: Vec<_> = by_group
            .into_iter()
            .map(|(g, (m, c))| (g.to_string(), m, c))
            .collect();
        out.sort_by(|a, b| {
            let key = |x: &(String, Measures, Option<f64>)| x.2.unwrap_or(x.1.object_hours);
            key(b).total_cmp(&key(a)).then_with(|| a.0.cmp(&b.0))
        });
        out
    }
}

/// Computes the cost report over the committed log.
pub fn cost(store: &Store, request: &CostRequest) -> Result<CostReport, QueryError> {
    let buckets = Buckets::new(request.from, request.to, request.step_seconds)?;
    let known_below = store.size();
    let registry = match request.by {
        GroupBy::Tenant | GroupBy::Team | GroupBy::Environment => {
            Registry::load(store, known_below)?
        }
        GroupBy::Cluster | GroupBy::App => Registry::default(),
    };
    let mut cells: HashMap<(String, usize), Measures> = HashMap::new();
    let by = request.by;

    // One pass over the log: syncs, their metrics, and ledger bytes.
    for leaf in store.leaves(0, known_below) {
        let (index, bytes) = leaf?;
        let head: Head =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(index, &e.to_string()))?;
        let t = head.event.time.unix_micros();
        let Some(step) = buckets.of(t) else {
            continue;
        };
        let cluster = head.event.cluster.as_deref();
        let app_of = || -> Option<String> {
            serde_json::from_slice::<AppOnly>(&bytes)
                .ok()
                .and_then(|a| a.event.data.app)
        };
        let group = match by {
            GroupBy::Cluster => cluster.unwrap_or(NONE).to_string(),
            GroupBy::App => app_of().unwrap_or_else(|| NONE.to_string()),
            _ => registry.label(by, cluster, t),
        };
        let m = cells.entry((group, step)).or_default();
        m.ledger_bytes += bytes.len() as u64;
        *m.ledger_bytes_by_source
            .entry(head.event.kind.as_str().to_string())
            .or_default() += bytes.len() as u64;
        if head.event.kind == EventType::AppSync {
            let sync: SyncEntry =
                serde_json::from_slice(&bytes).map_err(|e| corrupt(index, &e.to_string()))?;
            let s = sync.event.data;
            m.syncs += 1;
            if let (Some(a), Some(b)) = (s.started_at, s.finished_at) {
                m.sync_seconds += (b.unix_micros() - a.unix_micros()).max(0) as f64 / 1e6;
            }
            if let Some(x) = s.metrics {
                m.render_seconds += x.render_seconds.unwrap_or(0.0);
                m.api_requests += x.api_requests.unwrap_or(0);
                m.api_throttled += x.api_throttled.unwrap_or(0);
                m.applied_bytes += x.applied_bytes.unwrap_or(0);
            }
        }
    }

    // Object-hours from the version index.
    let (window_from, window_to) = buckets.window();
    for cluster in store.version_clusters()? {
        let Some(versions) = store.cluster_versions(&cluster)? else {
            continue;
        };
        for row in versions.rows() {
            if row.index >= known_below || row.deleted() {
                continue;
            }
            // The end as the ledger knows it (a later version not yet
            // known leaves the version open).
            let end = if row.to != i64::MAX && row.to_index < known_below {
                row.to
            } else {
                i64::MAX
            };
            if row.from >= window_to || end <= window_from {
                continue;
            }
            let mut pieces: Vec<(i64, i64, String)> = Vec::new();
            match by {
                GroupBy::Cluster => pieces.push((row.from, end, cluster.clone())),
                GroupBy::App => {
                    let d = versions.details(row)?;
                    let owner = ownership::decide(&d.claims).owner;
                    pieces.push((row.from, end, owner.unwrap_or_else(|| NONE.to_string())));
                }
                _ => {
                    // Cut where the cluster's registry entry changes.
                    let start = row.from.max(window_from);
                    let stop = end.min(window_to);
                    let mut cuts = registry.changes(&cluster, start, stop);
                    cuts.sort_unstable();
                    let mut at = start;
                    for cut in cuts.into_iter().chain([stop]) {
                        pieces.push((at, cut, registry.label(by, Some(&cluster), at)));
                        at = cut;
                    }
                }
            }
            for (start, stop, group) in pieces {
                for (step, micros) in buckets.spread(start, stop) {
                    cells.entry((group.clone(), step)).or_default().object_hours +=
                        micros as f64 / 3.6e9;
                }
            }
        }
    }

    let mut rows: Vec<CostRow> = cells
        .into_iter()
        .map(|((group, step), measures)| {
            let (a, b) = buckets.bounds(step);
            CostRow {
                group,
                step_start: instant(a),
                step_end: instant(b),
                cost: request.prices.as_ref().map(|p| price(&measures, p)),
                measures,
            }
        })
        .collect();
    rows.sort_by(|a, b| (&a.group, &a.step_start).cmp(&(&b.group, &b.step_start)));
    let (from, to) = buckets.window();
    Ok(CostReport {
        by: by.as_str(),
        from: request.from,
        to: request.to,
        step_seconds: request
            .step_seconds
            .unwrap_or(((to - from) / 1_000_000) as u64),
        currency: request.prices.as_ref().map(|p| p.currency.clone()),
        rows,
    })
}

/// Σ measure × price.
pub fn price(m: &Measures, prices: &PriceTable) -> f64 {
    let p = |name: &str| prices.price.get(name).copied().unwrap_or(0.0);
    m.syncs as f64 * p("syncs")
        + m.sync_seconds * p("sync_seconds")
        + m.render_seconds * p("render_seconds")
        + m.api_requests as f64 * p("api_requests")
        + m.api_throttled as f64 * p("api_throttled")
        + m.applied_bytes as f64 * p("applied_bytes")
        + m.object_hours * p("object_hours")
        + m.ledger_bytes as f64 * p("ledger_bytes")
}

/// Adds `b` into `a`.
pub fn add(a: &mut Measures, b: &Measures) {
    a.syncs += b.syncs;
    a.sync_seconds += b.sync_seconds;
    a.render_seconds += b.render_seconds;
    a.api_requests += b.api_requests;
    a.api_throttled += b.api_throttled;
    a.applied_bytes += b.applied_bytes;
    a.object_hours += b.object_hours;
    a.ledger_bytes += b.ledger_bytes;
    for (k, v) in &b.ledger_bytes_by_source {
        *a.ledger_bytes_by_source.entry(k.clone()).or_default() += v;
    }
}

fn corrupt(index: u64, reason: &str) -> QueryError {
    QueryError::Store(annal_store::StoreError::Corrupt(format!(
        "entry {index}: {reason}"
    )))
}

/// What every entry is read for: type, valid time, cluster.
#[derive(Deserialize)]
struct Head {
    event: HeadEvent,
}

#[derive(Deserialize)]
struct HeadEvent {
    #[serde(rename = "type")]
    kind: EventType,
    time: Timestamp,
    cluster: Option<String>,
}

/// `data.app`, when it is a string.
#[derive(Deserialize)]
struct AppOnly {
    event: AppEvent,
}

#[derive(Deserialize)]
struct AppEvent {
    data: AppField,
}

#[derive(Deserialize)]
struct AppField {
    app: Option<String>,
}

#[derive(Deserialize)]
struct SyncEntry {
    event: SyncEvent,
}

#[derive(Deserialize)]
struct SyncEvent {
    data: AppSync,
}
