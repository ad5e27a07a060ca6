//! Coverage (DESIGN "Coverage"): an answer about cluster C at T is only as
//! good as what the ledger heard from C around T.
//!
//! Per cluster, the ledger knows when it heard from it: the valid time of
//! every event of the cluster, heartbeats included, read from the
//! cluster/time key index (no leaf is read). A **gap** is a stretch longer
//! than a threshold (default [`DEFAULT_GAP`]) with no event; a cluster is
//! **stale at T** when it sent nothing in the threshold before T
//! (`(T - gap, T]`), as the ledger knew it at the system time asked. A
//! cluster that reconnects and flushes its history late fills the gap in
//! valid time: asked again as known later, T is covered.
//!
//! In scope at T are the clusters that sent anything at or before T and
//! are not retired then (registry lifecycle state `retired`): a cluster
//! registered later is not stale, it did not exist yet.

use std::collections::BTreeSet;

use annal_schemas::Timestamp;
use annal_store::{ScanKey, Store};
use serde::Serialize;

use crate::asof::inventory::AsOf;
use crate::asof::registry;
use crate::QueryError;

/// The silence after which a cluster counts as stale: ten minutes, a few
/// missed heartbeats of any agent that sends one a minute.
pub const DEFAULT_GAP_SECONDS: i64 = 600;

/// [`DEFAULT_GAP_SECONDS`] as the CLI writes it.
pub const DEFAULT_GAP: &str = "10m";

/// A cluster whose data at T is stale: what every as-of answer lists as
/// `stale_clusters`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stale {
    /// Stable cluster id.
    pub cluster: String,
    /// Valid time of its last event at or before T.
    pub last_seen: Timestamp,
    /// Seconds from `last_seen` to T.
    pub gap_seconds: i64,
}

impl Stale {
    /// The warning in words, as the CLI prints it.
    pub fn describe(&self) -> String {
        format!(
            "stale data: cluster {} sent nothing for {} before the instant asked (last seen {})",
            self.cluster,
            words(self.gap_seconds),
            self.last_seen
        )
    }
}

/// `7260` as `2h1m`, `90` as `1m30s`.
fn words(seconds: i64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds % 86_400 / 3_600,
        seconds % 3_600 / 60,
        seconds % 60,
    );
    let mut out = String::new();
    for (n, unit) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if n > 0 || (unit == "s" && out.is_empty()) {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

/// A stretch in which a cluster sent nothing for longer than the
/// threshold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// Valid time of the last event before the silence.
    pub from: Timestamp,
    /// Valid time of the first event after it, or the end of the window
    /// asked about when the cluster had not spoken again by then (`open`).
    pub to: Timestamp,
    /// Length in seconds.
    pub seconds: i64,
    /// Whether the silence lasts to the end of the window.
    pub open: bool,
}

/// One cluster's coverage over a window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterCoverage {
    /// Stable cluster id.
    pub cluster: String,
    /// Events in the window.
    pub events: u64,
    /// Valid time of its first event in the window.
    pub first_seen: Option<Timestamp>,
    /// Valid time of its last event at or before the window's end.
    pub last_seen: Option<Timestamp>,
    /// Silences longer than the threshold in the window.
    pub gaps: Vec<Gap>,
    /// Whether it is stale at the instant asked (`--at`).
    pub stale: bool,
}

/// What a coverage question asks.
#[derive(Clone, Debug)]
pub struct Window {
    /// Start of the window (`None`: the cluster's first event).
    pub from: Option<Timestamp>,
    /// End of the window.
    pub to: Timestamp,
    /// The instant staleness is judged at, and the system time asked.
    pub at: AsOf,
    /// The threshold, in seconds.
    pub gap_seconds: i64,
}

/// The clusters an answer at `as_of` covers: those among `wanted` (every
/// cluster the ledger knows when empty) that sent anything at or before
/// it, retired ones left out.
pub fn in_scope(store: &Store, wanted: &[String], as_of: &AsOf) -> Result<Vec<String>, QueryError> {
    let registry = registry::at(store, None, as_of)?;
    let retired: BTreeSet<&str> = registry
        .iter()
        .filter(|v| v.state.as_deref() == Some("retired"))
        .map(|v| v.cluster.as_str())
        .collect();
    let candidates: BTreeSet<String> = match wanted.is_empty() {
        false => wanted.iter().cloned().collect(),
        true => store.event_clusters()?.into_iter().collect(),
    };
    let mut out = Vec::new();
    let until = shifted(as_of.valid, 1);
    for c in candidates {
        if retired.contains(c.as_str()) {
            continue;
        }
        // Sent anything by then: the first known key is enough.
        let sent = store
            .scan_times(ScanKey::Cluster(&c), None, Some(until))
            .find_map(|t| match t {
                Ok((_, index)) => (index < as_of.known_below).then_some(Ok(())),
                Err(e) => Some(Err(e)),
            })
            .transpose()?
            .is_some();
        if sent {
            out.push(c);
        }
    }
    Ok(out)
}

/// The clusters among `clusters` whose data at `as_of` is stale: nothing
/// in the `gap_seconds` before it. A cluster that sent nothing at all by
/// then is not listed (see [`in_scope`]).
pub fn stale_at(
    store: &Store,
    clusters: &[String],
    as_of: &AsOf,
    gap_seconds: i64,
) -> Result<Vec<Stale>, QueryError> {
    let mut out = Vec::new();
    for c in clusters {
        let since = shifted(as_of.valid, 1 - gap_seconds * 1_000_000);
        if last_seen(store, c, as_of, Some(since))?.is_some() {
            continue;
        }
        if let Some(seen) = last_seen(store, c, as_of, None)? {
            out.push(Stale {
                cluster: c.clone(),
                last_seen: seen,
                gap_seconds: seconds_between(seen, as_of.valid),
            });
        }
    }
    Ok(out)
}

/// The stale clusters of an as-of answer over `wanted` clusters (every
/// cluster when empty), with the default threshold unless one is given.
pub fn stale_in(
    store: &Store,
    wanted: &[String],
    as_of: &AsOf,
    gap_seconds: Option<i64>,
) -> Result<Vec<Stale>, QueryError> {
    let clusters = in_scope(store, wanted, as_of)?;
    stale_at(
        store,
        &clusters,
        as_of,
        gap_seconds.unwrap_or(DEFAULT_GAP_SECONDS),
    )
}

/// Coverage of `clusters` (every cluster in scope at the window's end
/// when empty) over `window`, one cluster at a time in id order.
pub fn coverage(
    store: &Store,
    clusters: &[String],
    window: &Window,
) -> Result<Vec<ClusterCoverage>, QueryError> {
    if window.from.is_some_and(|f| window.to < f) {
        return Err(QueryError::BadInput(format!(
            "{} is after {}: give the earlier instant first",
            window.from.map(|f| f.to_string()).unwrap_or_default(),
            window.to
        )));
    }
    if window.gap_seconds <= 0 {
        return Err(QueryError::BadInput(
            "the gap threshold must be longer than 0s".into(),
        ));
    }
    let end = AsOf {
        valid: window.to,
        ..window.at
    };
    let clusters = match clusters.is_empty() {
        true => in_scope(store, &[], &end)?,
        false => clusters.to_vec(),
    };
    let mut out = Vec::new();
    for c in clusters {
        out.push(one_cluster(store, &c, window)?);
    }
    Ok(out)
}

/// Each cluster's coverage over `window` ([`coverage`]) and the clusters
/// stale at the instant asked, with when each was last seen.
pub fn answer(
    store: &Store,
    clusters: &[String],
    window: &Window,
) -> Result<(Vec<ClusterCoverage>, Vec<Stale>), QueryError> {
    let covered = coverage(store, clusters, window)?;
    let stale_ones: Vec<String> = covered
        .iter()
        .filter(|c| c.stale)
        .map(|c| c.cluster.clone())
        .collect();
    let stale = stale_at(store, &stale_ones, &window.at, window.gap_seconds)?;
    Ok((covered, stale))
}

/// The answer as one document (`annal coverage -o json`,
/// `GET /v1/coverage`): the window, each cluster's coverage, and the
/// clusters stale at the instant asked.
pub fn document(
    store: &Store,
    clusters: &[String],
    window: &Window,
) -> Result<serde_json::Value, QueryError> {
    let (covered, stale) = answer(store, clusters, window)?;
    Ok(serde_json::json!({
        "from": window.from.map(|t| t.to_string()),
        "to": window.to.to_string(),
        "at": window.at.valid.to_string(),
        "known_at": window.at.known_at.map(|t| t.to_string()),
        "gap_seconds": window.gap_seconds,
        "clusters": covered,
        "stale_clusters": stale,
    }))
}

fn one_cluster(store: &Store, cluster: &str, w: &Window) -> Result<ClusterCoverage, QueryError> {
    let known_below = w.at.known_below;
    // The silence running into the window counts from the event before
    // it, when there is one.
    let mut previous = match w.from {
        Some(from) => {
            let before = AsOf {
                valid: from,
                ..w.at
            };
            last_seen(store, cluster, &before, None)?
        }
        None => None,
    };
    let mut cov = ClusterCoverage {
        cluster: cluster.to_string(),
        events: 0,
        first_seen: None,
        last_seen: previous,
        gaps: Vec::new(),
        stale: false,
    };
    let until = shifted(w.to, 1);
    for t in store.scan_times(ScanKey::Cluster(cluster), w.from, Some(until)) {
        let (time, index) = t?;
        if index >= known_below {
            continue;
        }
        cov.events += 1;
        cov.first_seen.get_or_insert(time);
        if let Some(p) = previous {
            let seconds = seconds_between(p, time);
            if seconds > w.gap_seconds {
                cov.gaps.push(Gap {
                    from: p,
                    to: time,
                    seconds,
                    open: false,
                });
            }
        }
        previous = Some(time);
        cov.last_seen = Some(time);
    }
    if let Some(p) = previous {
        let seconds = seconds_between(p, w.to);
        if seconds > w.gap_seconds {
            cov.gaps.push(Gap {
                from: p,
                to: w.to,
                seconds,
                open: true,
            });
        }
    }
    cov.stale = !stale_at(store, &[cluster.to_string()], &w.at, w.gap_seconds)?.is_empty();
    Ok(cov)
}

/// Valid time of `cluster`'s last event at or before `as_of` (and at or
/// after `since`), as known then.
///
/// The keys are read forwards only, so the search walks back from the
/// instant in windows that double (ten minutes, twenty, ...) until one
/// holds a known event, or nothing is left before it: a few short range
/// reads, never every key of a busy cluster's past.
fn last_seen(
    store: &Store,
    cluster: &str,
    as_of: &AsOf,
    since: Option<Timestamp>,
) -> Result<Option<Timestamp>, QueryError> {
    let known = |t: Result<(Timestamp, u64), annal_store::StoreError>| match t {
        Ok((time, index)) => (index < as_of.known_below).then_some(Ok(time)),
        Err(e) => Some(Err(e)),
    };
    let mut hi = shifted(as_of.valid, 1);
    let mut width: i64 = DEFAULT_GAP_SECONDS * 1_000_000;
    loop {
        let mut lo = shifted(hi, -width);
        if let Some(s) = since.filter(|s| *s >= lo) {
            lo = s;
        }
        let mut last = None;
        for t in store
            .scan_times(ScanKey::Cluster(cluster), Some(lo), Some(hi))
            .filter_map(known)
        {
            last = Some(t?);
        }
        if last.is_some() || since.is_some_and(|s| s >= lo) {
            return Ok(last);
        }
        // Anything known before this window at all?
        let earlier = store
            .scan_times(ScanKey::Cluster(cluster), since, Some(lo))
            .find_map(known)
            .transpose()?;
        if earlier.is_none() || lo == hi {
            return Ok(None);
        }
        hi = lo;
        width = width.saturating_mul(2);
    }
}

/// `t` moved by `micros` (kept at `t` past the representable range).
fn shifted(t: Timestamp, micros: i64) -> Timestamp {
    t.unix_micros()
        .checked_add(micros)
        .and_then(Timestamp::from_unix_micros)
        .unwrap_or(t)
}

fn seconds_between(a: Timestamp, b: Timestamp) -> i64 {
    (b.unix_micros() - a.unix_micros()) / 1_000_000
}
