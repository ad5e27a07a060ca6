//! Rollouts: how far a revision got, cohort by cohort, and where an older
//! revision was applied over a newer one (DESIGN "Recovery questions":
//! rollout/reconnect).
//!
//! The candidates of a revision are the (app, cluster) pairs the app is
//! deployed to: its `app.declared` destinations and every cluster it synced
//! on, up to T. Clusters are grouped into cohorts by a registry attribute
//! (`wave` by default) as the registry stood at T. A pair has *started* the
//! revision when a sync of it exists, *succeeded* when one succeeded, has
//! *failed* when its syncs of it all failed or errored, and is *waiting*
//! when none started.
//!
//! A regression is a sync that applied (succeeded with) a revision on a
//! pair after a newer revision had already been applied there; "newer"
//! means first applied earlier anywhere in the fleet, which is the only
//! order the ledger can know for opaque revisions.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use annal_schemas::data::{AppDeclared, AppSync, SyncPhase};
use annal_schemas::{EventType, Timestamp};
use annal_store::Store;
use serde::Serialize;

use crate::asof::aliases::Aliases;
use crate::asof::inventory::AsOf;
use crate::asof::registry;
use crate::QueryError;

/// Progress of one cohort.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cohort {
    /// The attribute's value (`-`: clusters without it).
    pub cohort: String,
    /// (app, cluster) pairs that should get the revision.
    pub candidates: u64,
    /// Pairs with a sync of it.
    pub started: u64,
    /// Pairs where it succeeded.
    pub succeeded: u64,
    /// Pairs where every sync of it failed.
    pub failed: u64,
    /// Pairs with no sync of it.
    pub waiting: u64,
    /// Median sync duration of the successes (seconds).
    pub p50_seconds: Option<f64>,
    /// Longest successful sync (seconds).
    pub max_seconds: Option<f64>,
    /// Throttled API requests (429) of its syncs.
    pub api_throttled: u64,
    /// Clusters still waiting.
    pub waiting_clusters: Vec<String>,
}

/// Rollout status of a revision.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The revision.
    pub revision: String,
    /// Only this app, if asked.
    pub app: Option<String>,
    /// The attribute cohorts are grouped by.
    pub cohort_attribute: String,
    /// Valid time asked.
    pub at: String,
    /// One row per cohort, in cohort order.
    pub cohorts: Vec<Cohort>,
}

/// A revision applied after a newer one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Regression {
    /// The app.
    pub app: String,
    /// The cluster.
    pub cluster: String,
    /// Valid time of the sync that went back.
    pub time: String,
    /// Log index of that sync.
    pub index: u64,
    /// The revision it applied.
    pub revision: String,
    /// The newer revision applied there before.
    pub newer: String,
}

/// One `app.sync` with its place in the log.
struct Sync {
    cluster: String,
    time: Timestamp,
    index: u64,
    data: AppSync,
}

fn syncs(store: &Store, as_of: &AsOf, aliases: &Aliases) -> Result<Vec<Sync>, QueryError> {
    let mut out = Vec::new();
    for entry in as_of.events(store, EventType::AppSync, None) {
        let entry = entry?;
        let Some(cluster) = entry.event.cluster.as_deref() else {
            continue;
        };
        // An app that targets its cluster by server URL syncs to its id.
        let cluster = aliases.resolve(cluster, entry.event.time).to_string();
        if let Ok(data) = serde_json::from_value::<AppSync>(entry.event.data) {
            if !data.dry_run {
                out.push(Sync {
                    cluster,
                    time: entry.event.time,
                    index: entry.index,
                    data,
                });
            }
        }
    }
    out.sort_by_key(|s| (s.time, s.index));
    Ok(out)
}

/// How far `revision` got at `as_of`.
pub fn status(
    store: &Store,
    revision: &str,
    app: Option<&str>,
    cohort_attribute: &str,
    as_of: &AsOf,
) -> Result<Status, QueryError> {
    let wanted = |a: &str| app.is_none_or(|x| x == a);
    let aliases = Aliases::load(store, as_of.known_below)?;
    let all = syncs(store, as_of, &aliases)?;
    let mut pairs: BTreeSet<(String, String)> = all
        .iter()
        .filter(|s| wanted(&s.data.app))
        .map(|s| (s.data.app.clone(), s.cluster.clone()))
        .collect();
    for entry in as_of.events(store, EventType::AppDeclared, None) {
        let entry = entry?;
        if let Ok(d) = serde_json::from_value::<AppDeclared>(entry.event.data.clone()) {
            let cluster = d
                .destination
                .and_then(|dst| dst.cluster)
                .or(entry.event.cluster.clone())
                .map(|c| aliases.resolve(&c, entry.event.time).to_string());
            if let (true, Some(c)) = (wanted(&d.app), cluster) {
                pairs.insert((d.app, c));
            }
        }
    }
    let cohort_of: HashMap<String, String> = registry::at(store, None, as_of)?
        .into_iter()
        .filter_map(|c| {
            let v = c.field(cohort_attribute)?.to_string();
            Some((c.cluster, v))
        })
        .collect();
    let mut cohorts: BTreeMap<String, (Cohort, Vec<f64>)> = BTreeMap::new();
    for (a, cluster) in &pairs {
        let name = cohort_of
            .get(cluster)
            .cloned()
            .unwrap_or_else(|| "-".into());
        let (c, durations) = cohorts.entry(name.clone()).or_insert_with(|| {
            (
                Cohort {
                    cohort: name,
                    ..Cohort::default()
                },
                Vec::new(),
            )
        });
        c.candidates += 1;
        let of_revision: Vec<&Sync> = all
            .iter()
            .filter(|s| {
                &s.data.app == a
                    && &s.cluster == cluster
                    && s.data.revision.as_deref() == Some(revision)
            })
            .collect();
        if of_revision.is_empty() {
            c.waiting += 1;
            c.waiting_clusters.push(cluster.clone());
            continue;
        }
        c.started += 1;
        c.api_throttled += of_revision
            .iter()
            .filter_map(|s| s.data.metrics.as_ref().and_then(|m| m.api_throttled))
            .sum::<u64>();
        let success = of_revision
            .iter()
            .find(|s| s.data.phase == SyncPhase::Succeeded);
        match success {
            Some(s) => {
                c.succeeded += 1;
                if let (Some(b), Some(e)) = (s.data.started_at, s.data.finished_at) {
                    durations.push((e.unix_micros() - b.unix_micros()) as f64 / 1e6);
                }
            }
            None => {
                if of_revision
                    .iter()
                    .all(|s| matches!(s.data.phase, SyncPhase::Failed | SyncPhase::Error))
                {
                    c.failed += 1;
                }
            }
        }
    }
    let cohorts = cohorts
        .into_values()
        .map(|(mut c, mut d)| {
            d.sort_by(f64::total_cmp);
            c.p50_seconds = d.get(d.len().saturating_sub(1) / 2).copied();
            c.max_seconds = d.last().copied();
            c.waiting_clusters.sort();
            c.waiting_clusters.dedup();
            c
        })
        .collect();
    Ok(Status {
        revision: revision.to_string(),
        app: app.map(str::to_string),
        cohort_attribute: cohort_attribute.to_string(),
        at: as_of.valid.to_string(),
        cohorts,
    })
}

/// Syncs at or after `since` that applied a revision older than one
/// applied on the same (app, cluster) before.
pub fn regressions(
    store: &Store,
    since: Option<Timestamp>,
    as_of: &AsOf,
) -> Result<Vec<Regression>, QueryError> {
    let aliases = Aliases::load(store, as_of.known_below)?;
    let applied: Vec<Applied> = syncs(store, as_of, &aliases)?
        .into_iter()
        .filter(|s| s.data.phase == SyncPhase::Succeeded)
        .filter_map(|s| {
            let revision = s.data.revision?;
            Some(Applied {
                app: s.data.app,
                cluster: s.cluster,
                time: s.time,
                index: s.index,
                revision,
            })
        })
        .collect();
    Ok(find_regressions(&applied, since))
}

/// One successful sync: a revision applied on an (app, cluster).
#[derive(Clone, Debug)]
pub struct Applied {
    /// The app.
    pub app: String,
    /// The cluster.
    pub cluster: String,
    /// Valid time.
    pub time: Timestamp,
    /// Log index.
    pub index: u64,
    /// The revision applied.
    pub revision: String,
}

/// The regressions among `applied` (in (time, index) order): a revision
/// applied where one first applied later in the fleet already was.
pub fn find_regressions(applied: &[Applied], since: Option<Timestamp>) -> Vec<Regression> {
    // First application of each (app, revision) anywhere in the fleet.
    let mut first: HashMap<(&str, &str), (Timestamp, u64)> = HashMap::new();
    for s in applied {
        first
            .entry((s.app.as_str(), s.revision.as_str()))
            .or_insert((s.time, s.index));
    }
    // (app, cluster) → the newest revision applied there, with its age.
    type Newest<'a> = HashMap<(&'a str, &'a str), (&'a str, (Timestamp, u64))>;
    let mut newest_here: Newest = HashMap::new();
    let mut out = Vec::new();
    for s in applied {
        let Some(age) = first.get(&(s.app.as_str(), s.revision.as_str())).copied() else {
            continue;
        };
        let key = (s.app.as_str(), s.cluster.as_str());
        match newest_here.get(&key) {
            Some((newer, newer_age)) if *newer_age > age => {
                if since.is_none_or(|t| s.time >= t) {
                    out.push(Regression {
                        app: s.app.clone(),
                        cluster: s.cluster.clone(),
                        time: s.time.to_string(),
                        index: s.index,
                        revision: s.revision.clone(),
                        newer: newer.to_string(),
                    });
                }
            }
            _ => {
                newest_here.insert(key, (s.revision.as_str(), age));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(list: &[(&str, &str, i64)]) -> Vec<Applied> {
        list.iter()
            .enumerate()
            .map(|(i, (cluster, revision, minute))| Applied {
                app: "argocd:web".into(),
                cluster: cluster.to_string(),
                time: Timestamp::from_unix_micros(minute * 60_000_000).unwrap(),
                index: i as u64,
                revision: revision.to_string(),
            })
            .collect()
    }

    #[test]
    fn in_order_rollouts_and_skipped_revisions_are_not_regressions() {
        let a = applied(&[
            ("x", "A", 1),
            ("y", "A", 2),
            ("x", "B", 3),
            ("x", "C", 5),
            ("y", "C", 6),
        ]);
        assert!(
            find_regressions(&a, None).is_empty(),
            "y skipped B: not a regression"
        );
    }

    #[test]
    fn an_older_revision_after_a_newer_one_is_a_regression() {
        let a = applied(&[("x", "A", 1), ("x", "B", 2), ("y", "B", 3), ("y", "A", 4)]);
        let r = find_regressions(&a, None);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (
                r[0].cluster.as_str(),
                r[0].revision.as_str(),
                r[0].newer.as_str()
            ),
            ("y", "A", "B")
        );
    }

    #[test]
    fn age_is_first_application_anywhere_in_the_fleet_and_since_filters() {
        // C first appears (on z) after B (on x): C is the newer. y never had
        // B before, yet B after C there is a regression.
        let a = applied(&[("x", "B", 1), ("z", "C", 2), ("y", "C", 3), ("y", "B", 4)]);
        let r = find_regressions(&a, None);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].cluster.as_str(), r[0].newer.as_str()), ("y", "C"));
        let later = Timestamp::from_unix_micros(5 * 60_000_000).unwrap();
        assert!(find_regressions(&a, Some(later)).is_empty());
    }
}
