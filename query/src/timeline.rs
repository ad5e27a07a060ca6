//! Events over time, bucketed on the server: what the UI's timeline draws
//! for the fleet, a cluster or an app, with the moments people look for
//! (syncs, prunes, failed syncs, deletions, credential changes, fences)
//! kept apart from the bulk of observations, and the coverage gaps beside
//! them.
//!
//! A browser never receives events, only a fixed number of buckets per
//! mark and the latest notable events: the answer's size does not grow
//! with the ledger. Without an actor or app filter the counts come from
//! the type index alone (valid time and log index, no leaf), and only
//! `app.sync` leaves are read, to tell a prune and a failure from a sync;
//! a cluster, actor or app filter reads the leaves it selects.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use annal_schemas::data::KubeObject;
use annal_schemas::{ownership, EventType, Timestamp};
use annal_store::leaf_view::LeafView;
use annal_store::{ScanKey, Store};
use serde::Serialize;
use serde_json::Value;

use crate::asof::coverage::{self, Gap, Window};
use crate::asof::inventory::AsOf;
use crate::QueryError;

/// How many notable events an answer lists (the latest in the window).
pub const NOTABLE: usize = 200;

/// What a bucket counts, one series each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// `object.observed`: an object seen or changed.
    Observed,
    /// `object.deleted`.
    Deletion,
    /// `app.sync` that succeeded or ran, without pruning.
    Sync,
    /// `app.sync` with a pruned resource.
    Prune,
    /// `app.sync` that failed or errored.
    FailedSync,
    /// `cluster.credential.issued` / `.revoked`.
    Credential,
    /// `controlplane.fenced`.
    Fence,
    /// `audit.request`.
    Audit,
    /// Everything else (app health, inventory, registry, heartbeats, ...).
    Other,
}

impl Mark {
    /// Every mark, in the order series are drawn.
    pub const ALL: [Mark; 9] = [
        Mark::Observed,
        Mark::Deletion,
        Mark::Sync,
        Mark::Prune,
        Mark::FailedSync,
        Mark::Credential,
        Mark::Fence,
        Mark::Audit,
        Mark::Other,
    ];

    /// The name in URLs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::Observed => "observed",
            Mark::Deletion => "deletion",
            Mark::Sync => "sync",
            Mark::Prune => "prune",
            Mark::FailedSync => "failed-sync",
            Mark::Credential => "credential",
            Mark::Fence => "fence",
            Mark::Audit => "audit",
            Mark::Other => "other",
        }
    }

    /// The mark named `name`.
    pub fn parse(name: &str) -> Option<Mark> {
        Mark::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// Whether events of this mark are listed one by one.
    pub fn notable(self) -> bool {
        !matches!(self, Mark::Observed | Mark::Audit | Mark::Other)
    }

    /// The mark of an event of type `t` (an `app.sync` is refined by
    /// [`sync_mark`]).
    fn of_type(t: EventType) -> Mark {
        match t {
            EventType::ObjectObserved => Mark::Observed,
            EventType::ObjectDeleted => Mark::Deletion,
            EventType::AppSync => Mark::Sync,
            EventType::ClusterCredentialIssued | EventType::ClusterCredentialRevoked => {
                Mark::Credential
            }
            EventType::ControlplaneFenced => Mark::Fence,
            EventType::AuditRequest => Mark::Audit,
            _ => Mark::Other,
        }
    }
}

/// A sync's mark from its data: failed before pruned before synced.
fn sync_mark(data: &Value) -> Mark {
    let phase = data.get("phase").and_then(Value::as_str).unwrap_or("");
    if matches!(phase, "Failed" | "Error") {
        return Mark::FailedSync;
    }
    let pruned = data
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|rs| {
            rs.iter().any(|r| {
                let said = |k: &str| {
                    r.get(k)
                        .and_then(Value::as_str)
                        .is_some_and(|v| v.eq_ignore_ascii_case("pruned"))
                };
                said("action") || said("status")
            })
        });
    match pruned {
        true => Mark::Prune,
        false => Mark::Sync,
    }
}

/// What a timeline asks.
#[derive(Clone, Debug)]
pub struct TimelineQuery {
    /// Start of the window (valid time, inclusive).
    pub from: Timestamp,
    /// End of the window (exclusive).
    pub to: Timestamp,
    /// Only this cluster.
    pub cluster: Option<String>,
    /// Only events of this app: its `app.*` events and the versions of
    /// objects it claims.
    pub app: Option<String>,
    /// Only events whose actor's principal (or impersonated user)
    /// contains this text.
    pub actor: Option<String>,
    /// Only these marks (empty: all).
    pub marks: Vec<Mark>,
    /// How many buckets at most.
    pub buckets: usize,
}

/// One event worth listing.
#[derive(Clone, Debug, Serialize)]
pub struct Notable {
    /// Log index.
    pub index: u64,
    /// Valid time.
    pub time: Timestamp,
    /// Its mark.
    pub mark: Mark,
    /// Event type.
    pub event_type: String,
    /// Cluster id.
    pub cluster: Option<String>,
    /// What it was about, in a few words.
    pub summary: String,
}

/// The answer: counts per mark per bucket, the latest notable events,
/// and the coverage gaps in the window.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    /// Start of the first bucket.
    pub from: Timestamp,
    /// End of the window.
    pub to: Timestamp,
    /// Width of a bucket in seconds.
    pub bucket_seconds: i64,
    /// Start of each bucket, in Unix seconds.
    pub starts: Vec<i64>,
    /// Per mark with any event: its count per bucket.
    pub series: Vec<(Mark, Vec<u64>)>,
    /// The latest [`NOTABLE`] notable events, newest first.
    pub notable: Vec<Notable>,
    /// Silences longer than the coverage threshold, per cluster.
    pub gaps: Vec<(String, Gap)>,
}

impl Timeline {
    /// Events counted under `mark` in the whole window.
    pub fn total(&self, mark: Mark) -> u64 {
        self.series
            .iter()
            .find(|(m, _)| *m == mark)
            .map_or(0, |(_, c)| c.iter().sum())
    }
}

/// Bucket widths a person reads easily, in seconds.
const WIDTHS: [i64; 16] = [
    1, 5, 10, 30, 60, 300, 600, 900, 1_800, 3_600, 10_800, 21_600, 43_200, 86_400, 604_800,
    2_592_000,
];

/// The narrowest readable width that covers `span_seconds` in at most
/// `buckets` buckets.
pub fn bucket_width(span_seconds: i64, buckets: usize) -> i64 {
    let buckets = buckets.max(1) as i64;
    WIDTHS
        .into_iter()
        .find(|w| span_seconds <= w * buckets)
        .unwrap_or_else(|| (span_seconds + buckets - 1) / buckets)
}

/// The valid times a timeline shows when none is asked: from the
/// earliest event (the first of each type index) to just after the
/// latest of the last thousand appended (late arrivals aside, the
/// newest); `None` for an empty ledger.
pub fn default_window(store: &Store) -> Result<Option<(Timestamp, Timestamp)>, QueryError> {
    let mut first: Option<Timestamp> = None;
    for t in EventType::ALL {
        if let Some(item) = store
            .scan_times(ScanKey::Type(t.as_str()), None, None)
            .next()
        {
            let (time, _) = item?;
            first = Some(first.map_or(time, |f| f.min(time)));
        }
    }
    let size = store.size();
    let mut last: Option<Timestamp> = None;
    for leaf in store.leaves(size.saturating_sub(1_000), size) {
        let leaf = leaf?;
        let time = LeafView::parse(&leaf.1)?.time;
        last = Some(last.map_or(time, |l| l.max(time)));
    }
    Ok(match (first, last) {
        (Some(f), Some(l)) => {
            let end = Timestamp::from_unix_micros(l.unix_micros() + 1_000_000).unwrap_or(l);
            Some((f.min(l), end))
        }
        _ => None,
    })
}

/// The timeline `q` asks for.
pub fn timeline(store: &Store, q: &TimelineQuery) -> Result<Timeline, QueryError> {
    if q.to <= q.from {
        return Err(QueryError::BadInput(format!(
            "from {} is not before to {}: give the earlier instant first",
            q.from, q.to
        )));
    }
    let micros = 1_000_000i64;
    let span = (q.to.unix_micros() - q.from.unix_micros() + micros - 1) / micros;
    let width = bucket_width(span, q.buckets);
    let start = q.from.unix_micros().div_euclid(width * micros) * width;
    let end = (q.to.unix_micros() + micros - 1) / micros;
    let n = ((end - start + width - 1) / width).max(1) as usize;
    let mut tally = Tally {
        start,
        width,
        counts: vec![vec![0u64; n]; Mark::ALL.len()],
        latest: BinaryHeap::new(),
        wanted: q.marks.clone(),
    };
    let leaves_needed = q.cluster.is_some() || q.app.is_some() || q.actor.is_some();
    if leaves_needed {
        count_leaves(store, q, &mut tally)?;
    } else {
        count_index(store, q, &mut tally)?;
    }
    let mut notable = Vec::new();
    let mut latest = tally.latest.into_vec();
    latest.sort();
    for Reverse((time, index, mark)) in latest {
        if let Some(leaf) = store.leaf_bytes(index)? {
            let v = LeafView::parse(&leaf)?;
            notable.push(Notable {
                index,
                time: Timestamp::from_unix_micros(time).unwrap_or(v.time),
                mark,
                event_type: v.event_type.as_str().to_string(),
                cluster: v.cluster.as_deref().map(str::to_string),
                summary: summary(&v),
            });
        }
    }
    let series = Mark::ALL
        .into_iter()
        .zip(tally.counts)
        .filter(|(_, c)| c.iter().any(|&n| n > 0))
        .collect();
    let window = Window {
        from: Some(q.from),
        to: q.to,
        at: AsOf::new(store, q.to, None)?,
        gap_seconds: coverage::DEFAULT_GAP_SECONDS,
    };
    let clusters: Vec<String> = q.cluster.iter().cloned().collect();
    let mut gaps = Vec::new();
    for c in coverage::coverage(store, &clusters, &window)? {
        for g in c.gaps {
            gaps.push((c.cluster.clone(), g));
        }
    }
    Ok(Timeline {
        from: Timestamp::from_unix_micros(start * micros).unwrap_or(q.from),
        to: q.to,
        bucket_seconds: width,
        starts: (0..n as i64).map(|i| start + i * width).collect(),
        series,
        notable,
        gaps,
    })
}

/// Counts being gathered.
struct Tally {
    /// First bucket's start, Unix seconds.
    start: i64,
    /// Bucket width, seconds.
    width: i64,
    /// Per mark (in [`Mark::ALL`] order), per bucket.
    counts: Vec<Vec<u64>>,
    /// The latest notable events: a min-heap on (time, index) bounded to
    /// [`NOTABLE`].
    latest: BinaryHeap<Reverse<(i64, u64, Mark)>>,
    wanted: Vec<Mark>,
}

impl Tally {
    fn add(&mut self, time: Timestamp, index: u64, mark: Mark) {
        if !self.wanted.is_empty() && !self.wanted.contains(&mark) {
            return;
        }
        let second = time.unix_micros().div_euclid(1_000_000);
        let bucket = ((second - self.start) / self.width) as usize;
        let slot = Mark::ALL.iter().position(|m| *m == mark).unwrap_or(0);
        if let Some(c) = self.counts[slot].get_mut(bucket) {
            *c += 1;
        }
        if mark.notable() {
            self.latest.push(Reverse((time.unix_micros(), index, mark)));
            if self.latest.len() > NOTABLE {
                self.latest.pop();
            }
        }
    }
}

/// Counts from the type index; only syncs are read, to mark them.
fn count_index(store: &Store, q: &TimelineQuery, tally: &mut Tally) -> Result<(), QueryError> {
    for t in EventType::ALL {
        let mark = Mark::of_type(t);
        let syncs = t == EventType::AppSync;
        let may_be = |m: Mark| tally.wanted.is_empty() || tally.wanted.contains(&m);
        let wanted = match syncs {
            true => [Mark::Sync, Mark::Prune, Mark::FailedSync]
                .into_iter()
                .any(may_be),
            false => may_be(mark),
        };
        if !wanted {
            continue;
        }
        if syncs {
            for leaf in store.scan_leaf_bytes(ScanKey::Type(t.as_str()), Some(q.from), Some(q.to)) {
                let leaf = leaf?;
                let v = LeafView::parse(&leaf.1)?;
                let data: Value = serde_json::from_str(v.data).unwrap_or(Value::Null);
                tally.add(v.time, v.index, sync_mark(&data));
            }
            continue;
        }
        for item in store.scan_times(ScanKey::Type(t.as_str()), Some(q.from), Some(q.to)) {
            let (time, index) = item?;
            tally.add(time, index, mark);
        }
    }
    Ok(())
}

/// Counts from the leaves the cluster (or every type) selects, each
/// checked against the actor and app filters.
fn count_leaves(store: &Store, q: &TimelineQuery, tally: &mut Tally) -> Result<(), QueryError> {
    let mut visit = |bytes: &[u8]| -> Result<(), QueryError> {
        let v = LeafView::parse(bytes)?;
        if q.cluster
            .as_deref()
            .is_some_and(|c| v.cluster.as_deref() != Some(c))
        {
            return Ok(());
        }
        if let Some(actor) = q.actor.as_deref() {
            let said = |s: &Option<std::borrow::Cow<'_, str>>| {
                s.as_deref().is_some_and(|p| p.contains(actor))
            };
            if !said(&v.actor.principal) && !said(&v.actor.impersonated) {
                return Ok(());
            }
        }
        let needs_data = v.event_type == EventType::AppSync || q.app.is_some();
        let data: Value = match needs_data {
            true => serde_json::from_str(v.data).unwrap_or(Value::Null),
            false => Value::Null,
        };
        if let Some(app) = q.app.as_deref() {
            if !of_app(&v, &data, app) {
                return Ok(());
            }
        }
        let mark = match v.event_type {
            EventType::AppSync => sync_mark(&data),
            t => Mark::of_type(t),
        };
        tally.add(v.time, v.index, mark);
        Ok(())
    };
    match q.cluster.as_deref() {
        Some(c) => {
            for leaf in store.scan_leaf_bytes(ScanKey::Cluster(c), Some(q.from), Some(q.to)) {
                visit(&leaf?.1)?;
            }
        }
        None => {
            for t in EventType::ALL {
                for leaf in
                    store.scan_leaf_bytes(ScanKey::Type(t.as_str()), Some(q.from), Some(q.to))
                {
                    visit(&leaf?.1)?;
                }
            }
        }
    }
    Ok(())
}

/// Whether the event is `app`'s: an `app.*` event naming it, or a
/// version of an object that claims it.
fn of_app(v: &LeafView<'_>, data: &Value, app: &str) -> bool {
    match v.event_type {
        EventType::ObjectObserved | EventType::ObjectDeleted => {
            serde_json::from_value::<KubeObject>(data.clone())
                .map(|o| {
                    ownership::of_object(&o)
                        .claims
                        .iter()
                        .any(|c| c.owner == app)
                })
                .unwrap_or(false)
        }
        _ => data.get("app").and_then(Value::as_str) == Some(app),
    }
}

/// A few words about a notable event.
fn summary(v: &LeafView<'_>) -> String {
    let data: Value = serde_json::from_str(v.data).unwrap_or(Value::Null);
    let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or("");
    match v.event_type {
        EventType::AppSync => {
            let revision: String = s("revision").chars().take(12).collect();
            format!("{} {} at {revision}", s("app"), s("phase"))
        }
        EventType::ObjectDeleted | EventType::ObjectObserved => {
            let meta = data.get("metadata");
            let m = |k: &str| {
                meta.and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            match m("namespace") {
                "" => format!("{} {}", s("kind"), m("name")),
                ns => format!("{} {ns}/{}", s("kind"), m("name")),
            }
        }
        EventType::ClusterCredentialIssued | EventType::ClusterCredentialRevoked => {
            format!(
                "{} {}",
                s("principal"),
                s("fingerprint").chars().take(19).collect::<String>()
            )
        }
        EventType::ControlplaneFenced => format!("{} {}", s("controller"), s("principal")),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_cover_the_span_in_the_buckets_asked() {
        assert_eq!(bucket_width(60, 120), 1);
        assert_eq!(bucket_width(3_600, 120), 30);
        assert_eq!(bucket_width(86_400, 120), 900);
        assert_eq!(bucket_width(86_400 * 365, 120), 604_800);
        let huge = 2_592_000 * 120 + 1;
        assert_eq!(bucket_width(huge, 120), 2_592_001);
    }

    #[test]
    fn a_sync_is_failed_before_pruned_before_synced() {
        let sync = |phase: &str, action: &str| serde_json::json!({"phase": phase, "resources": [{"kind": "Pod", "name": "a", "action": action}]});
        assert_eq!(sync_mark(&sync("Succeeded", "configured")), Mark::Sync);
        assert_eq!(sync_mark(&sync("Succeeded", "pruned")), Mark::Prune);
        assert_eq!(sync_mark(&sync("Failed", "pruned")), Mark::FailedSync);
        assert_eq!(sync_mark(&sync("Error", "")), Mark::FailedSync);
        assert!(Mark::ALL
            .iter()
            .all(|m| Mark::parse(m.as_str()) == Some(*m)));
    }
}
