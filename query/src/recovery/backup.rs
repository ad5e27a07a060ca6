//! Backup check: an `argocd admin export` compared with what the ledger
//! knew (DESIGN "Recovery questions"), so an empty or shrunken backup is
//! caught before it is the only copy.
//!
//! The export is multi-document YAML of ConfigMaps, Secrets, AppProjects,
//! Applications and ApplicationSets; only kinds and names are read (Secret
//! values never leave the file). Flags:
//!
//! - `empty`: no Application (or nothing at all) in the export;
//! - `shrank`: a kind's count is more than 10% below the latest
//!   `controlplane.backup` the ledger recorded at or before T, or the
//!   Applications are more than 10% fewer than the Argo CD apps the ledger
//!   knows (`app.declared`);
//! - `missing-in-export`: an app the ledger knows that the export lacks;
//! - `missing-in-ledger`: an exported Application the ledger never saw
//!   declared.

use std::collections::{BTreeMap, BTreeSet};

use annal_schemas::data::{AppDeclared, ControlplaneBackup};
use annal_schemas::{EventType, Timestamp};
use annal_store::Store;
use serde::Serialize;

use crate::asof::inventory::AsOf;
use crate::QueryError;

/// Largest drop, as a fraction, that is not `shrank`.
pub const SHRINK_TOLERANCE: f64 = 0.10;

/// One exported object: (kind, namespace, name).
pub type Exported = (String, String, String);

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Valid time compared with.
    pub at: String,
    /// Objects per kind in the export.
    pub export_counts: BTreeMap<String, u64>,
    /// Counts of the latest `controlplane.backup` at or before T, if any.
    pub previous_counts: Option<BTreeMap<String, u64>>,
    /// Argo CD apps the ledger knew (`argocd:<name>`, or
    /// `argocd:<namespace>_<name>` outside `argocd`).
    pub ledger_apps: u64,
    /// Ledger apps absent from the export.
    pub missing_in_export: Vec<String>,
    /// Exported apps the ledger never saw declared.
    pub missing_in_ledger: Vec<String>,
    /// What is wrong.
    pub flags: Vec<Flag>,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flag {
    /// `empty`, `shrank`, `missing-in-export`, `missing-in-ledger`.
    pub code: &'static str,
    /// The particulars.
    pub detail: String,
}

/// Compares `exported` with the ledger at `as_of`.
pub fn check(store: &Store, exported: &[Exported], as_of: &AsOf) -> Result<Report, QueryError> {
    let mut ledger_apps: BTreeSet<String> = BTreeSet::new();
    for entry in as_of.events(store, EventType::AppDeclared, None) {
        let entry = entry?;
        if let Ok(d) = serde_json::from_value::<AppDeclared>(entry.event.data) {
            if d.app.starts_with("argocd:") {
                ledger_apps.insert(d.app);
            }
        }
    }
    let mut previous: Option<((Timestamp, u64), BTreeMap<String, u64>)> = None;
    for entry in as_of.events(store, EventType::ControlplaneBackup, None) {
        let entry = entry?;
        if let Ok(b) = serde_json::from_value::<ControlplaneBackup>(entry.event.data) {
            let order = (entry.event.time, entry.index);
            if previous.as_ref().is_none_or(|(o, _)| *o < order) {
                previous = Some((order, b.counts));
            }
        }
    }
    let previous = previous.map(|(_, c)| c);
    Ok(compare(exported, &ledger_apps, previous, as_of.valid))
}

/// The comparison itself, on what was read.
pub fn compare(
    exported: &[Exported],
    ledger_apps: &BTreeSet<String>,
    previous_counts: Option<BTreeMap<String, u64>>,
    at: Timestamp,
) -> Report {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut export_apps = BTreeSet::new();
    for (kind, namespace, name) in exported {
        *counts.entry(kind.clone()).or_default() += 1;
        if kind == "Application" {
            export_apps.insert(if namespace.is_empty() || namespace == "argocd" {
                format!("argocd:{name}")
            } else {
                format!("argocd:{namespace}_{name}")
            });
        }
    }
    let mut flags = Vec::new();
    let apps = counts.get("Application").copied().unwrap_or(0);
    if exported.is_empty() || apps == 0 {
        flags.push(Flag {
            code: "empty",
            detail: format!(
                "the export holds {} objects and no Application",
                exported.len()
            ),
        });
    }
    let shrank =
        |before: u64, after: u64| (after as f64) < (before as f64) * (1.0 - SHRINK_TOLERANCE);
    if let Some(prev) = &previous_counts {
        for (kind, before) in prev {
            let after = counts.get(kind).copied().unwrap_or(0);
            if shrank(*before, after) {
                flags.push(Flag {
                    code: "shrank",
                    detail: format!("{after} {kind} objects, {before} in the previous backup"),
                });
            }
        }
    }
    if shrank(ledger_apps.len() as u64, apps) {
        flags.push(Flag {
            code: "shrank",
            detail: format!(
                "{apps} Applications, the ledger knows {} Argo CD apps",
                ledger_apps.len()
            ),
        });
    }
    let missing_in_export: Vec<String> = ledger_apps.difference(&export_apps).cloned().collect();
    let missing_in_ledger: Vec<String> = export_apps.difference(ledger_apps).cloned().collect();
    if !missing_in_export.is_empty() {
        flags.push(Flag {
            code: "missing-in-export",
            detail: format!("not in the export: {}", missing_in_export.join(", ")),
        });
    }
    if !missing_in_ledger.is_empty() {
        flags.push(Flag {
            code: "missing-in-ledger",
            detail: format!(
                "never declared in the ledger: {}",
                missing_in_ledger.join(", ")
            ),
        });
    }
    Report {
        at: at.to_string(),
        export_counts: counts,
        previous_counts,
        ledger_apps: ledger_apps.len() as u64,
        missing_in_export,
        missing_in_ledger,
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> Exported {
        ("Application".into(), "argocd".into(), name.into())
    }

    fn codes(r: &Report) -> Vec<&'static str> {
        r.flags.iter().map(|f| f.code).collect()
    }

    fn ledger(apps: &[&str]) -> BTreeSet<String> {
        apps.iter().map(|a| format!("argocd:{a}")).collect()
    }

    #[test]
    fn a_matching_export_has_no_flags() {
        let r = compare(
            &[app("web"), app("api")],
            &ledger(&["web", "api"]),
            None,
            Timestamp::now(),
        );
        assert!(r.flags.is_empty(), "{:?}", r.flags);
        assert_eq!(r.export_counts["Application"], 2);
    }

    #[test]
    fn an_empty_export_is_flagged() {
        let r = compare(&[], &ledger(&[]), None, Timestamp::now());
        assert_eq!(codes(&r), ["empty"]);
    }

    #[test]
    fn a_shrink_beyond_ten_percent_is_flagged_against_the_previous_backup() {
        let exported: Vec<Exported> = (0..9).map(|i| app(&format!("a{i}"))).collect();
        let names: Vec<String> = (0..9).map(|i| format!("a{i}")).collect();
        let known: BTreeSet<String> = names.iter().map(|n| format!("argocd:{n}")).collect();
        let prev = |n: u64| Some([("Application".to_string(), n)].into());
        assert!(
            compare(&exported, &known, prev(10), Timestamp::now())
                .flags
                .is_empty(),
            "9 of 10 is 10%"
        );
        let r = compare(&exported, &known, prev(11), Timestamp::now());
        assert_eq!(codes(&r), ["shrank"]);
    }

    #[test]
    fn apps_missing_on_either_side_are_named() {
        let exported = [
            app("web"),
            ("Application".into(), "team-a".into(), "api".into()),
        ];
        let r = compare(&exported, &ledger(&["web", "db"]), None, Timestamp::now());
        assert_eq!(r.missing_in_export, ["argocd:db"]);
        assert_eq!(r.missing_in_ledger, ["argocd:team-a_api"]);
        assert_eq!(codes(&r), ["missing-in-export", "missing-in-ledger"]);
    }
}
