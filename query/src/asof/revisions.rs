//! Last-good revisions: for each (cluster, app), the intervals during which
//! a revision was the last one known good.
//!
//! DESIGN's rule: a revision becomes good when its `app.sync` Succeeded and
//! an `app.health` Healthy for that revision followed before the next sync,
//! or when an explicit `app.revision.good` names it. Events of one (cluster,
//! app) are folded in (valid time, log index) order, so late events land
//! where they belong. A health report without a revision counts for the
//! revision just synced.

use std::collections::BTreeMap;

use annal_schemas::data::{AppHealth, AppRevisionGood, AppSync, HealthStatus, SyncPhase};
use annal_schemas::{EventType, Timestamp};
use annal_store::{Entry, ScanKey, Store};

use crate::asof::aliases::Aliases;
use crate::asof::inventory::AsOf;
use crate::QueryError;

/// How a revision became good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoodBy {
    /// A succeeded sync followed by a healthy report.
    SyncHealthy,
    /// An explicit `app.revision.good`.
    Marker,
}

impl GoodBy {
    /// A short name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            GoodBy::SyncHealthy => "sync+health",
            GoodBy::Marker => "marker",
        }
    }
}

/// One interval during which `revision` was the last good one.
#[derive(Clone, Debug, PartialEq)]
pub struct GoodInterval {
    /// Stable cluster id.
    pub cluster: String,
    /// Qualified app name.
    pub app: String,
    /// The revision.
    pub revision: String,
    /// How it became good.
    pub by: GoodBy,
    /// Log index of the sync that applied it (for `SyncHealthy`).
    pub sync_index: Option<u64>,
    /// Valid time it became good.
    pub valid_from: Timestamp,
    /// Valid time another revision became good (`None`: still).
    pub valid_to: Option<Timestamp>,
    /// Log index of the event that made it good (the health report or the
    /// marker).
    pub index: u64,
}

/// Every last-good interval (of `cluster`, or all), among the first
/// `known_below` entries.
pub fn intervals(
    store: &Store,
    cluster: Option<&str>,
    known_below: u64,
) -> Result<Vec<GoodInterval>, QueryError> {
    let mut by_app: BTreeMap<(String, String), Vec<Entry>> = BTreeMap::new();
    // Apps that target a cluster by server URL count under its id.
    let aliases = Aliases::load(store, known_below)?;
    let names = cluster.map(|c| aliases.names_of(c));
    for t in [
        EventType::AppSync,
        EventType::AppHealth,
        EventType::AppRevisionGood,
    ] {
        let scan: Box<dyn Iterator<Item = _>> = match &names {
            Some(names) => Box::new(
                names
                    .iter()
                    .flat_map(|n| store.scan(ScanKey::Cluster(n), None, None))
                    .filter(move |e| e.as_ref().map_or(true, |e| e.event.event_type == t)),
            ),
            None => Box::new(store.scan(ScanKey::Type(t.as_str()), None, None)),
        };
        for entry in scan {
            let entry = entry?;
            if entry.index >= known_below {
                continue;
            }
            let (Some(c), Some(app)) = (
                entry.event.cluster.as_deref(),
                entry.event.data.get("app").and_then(|a| a.as_str()),
            ) else {
                continue;
            };
            let c = aliases.resolve(c, entry.event.time).to_string();
            if cluster.is_some_and(|want| want != c) {
                continue;
            }
            by_app.entry((c, app.to_string())).or_default().push(entry);
        }
    }
    let mut out = Vec::new();
    for ((cluster, app), mut entries) in by_app {
        entries.sort_by_key(|e| (e.event.time, e.index));
        let first = out.len();
        // The revision a succeeded sync applied, until the next sync.
        let mut pending: Option<(String, u64)> = None;
        for e in &entries {
            let good = match e.event.event_type {
                EventType::AppSync => {
                    let s: Option<AppSync> = serde_json::from_value(e.event.data.clone()).ok();
                    pending = s.and_then(|s| {
                        (s.phase == SyncPhase::Succeeded && !s.dry_run)
                            .then_some(s.revision)
                            .flatten()
                            .map(|r| (r, e.index))
                    });
                    None
                }
                EventType::AppHealth => {
                    let h: Option<AppHealth> = serde_json::from_value(e.event.data.clone()).ok();
                    match (h, &pending) {
                        (Some(h), Some((rev, sync)))
                            if h.status == HealthStatus::Healthy
                                && h.revision.as_ref().is_none_or(|r| r == rev) =>
                        {
                            Some((rev.clone(), GoodBy::SyncHealthy, Some(*sync)))
                        }
                        _ => None,
                    }
                }
                _ => serde_json::from_value::<AppRevisionGood>(e.event.data.clone())
                    .ok()
                    .map(|g| (g.revision, GoodBy::Marker, None)),
            };
            let Some((revision, by, sync_index)) = good else {
                continue;
            };
            let same = out
                .get(first..)
                .and_then(|mine: &[GoodInterval]| mine.last())
                .is_some_and(|last| last.revision == revision);
            if same {
                continue;
            }
            out.push(GoodInterval {
                cluster: cluster.clone(),
                app: app.clone(),
                revision,
                by,
                sync_index,
                valid_from: e.event.time,
                valid_to: None,
                index: e.index,
            });
        }
        for i in first..out.len().saturating_sub(1) {
            out[i].valid_to = Some(out[i + 1].valid_from);
        }
    }
    Ok(out)
}

/// The last-good revision of each (cluster, app) at `as_of`.
pub fn at(
    store: &Store,
    cluster: Option<&str>,
    as_of: &AsOf,
) -> Result<Vec<GoodInterval>, QueryError> {
    Ok(intervals(store, cluster, as_of.known_below)?
        .into_iter()
        .filter(|g| as_of.covers(g.valid_from, g.valid_to))
        .collect())
}
