//! `annal coverage`: when each cluster was heard from, and the staleness
//! warning every as-of command prints ([`stale`]).

use std::io::Write as _;

use annal_query::asof::coverage::{self, ClusterCoverage, Stale, Window};
use annal_query::asof::inventory::AsOf;
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::{CoverageArgs, Freshness};
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer};

pub fn run(store: &Store, args: &CoverageArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let to = args.to.unwrap_or_else(Timestamp::now);
    let at = AsOf::new(store, args.at.unwrap_or(to), args.known_at)?;
    let window = Window {
        from: args.from,
        to,
        at,
        gap_seconds: args.freshness.seconds(),
    };
    if printer.format == OutputFormat::Json {
        printer.document(&coverage::document(store, &args.clusters, &window)?, &[])?;
        return Ok(Exit::Ok);
    }
    let (clusters, stale) = coverage::answer(store, &args.clusters, &window)?;
    for s in &stale {
        let _ = writeln!(std::io::stderr().lock(), "annal: {}", s.describe());
    }
    let mut out = printer.stream(&COLUMNS).narrow(&[
        "cluster",
        "events",
        "last_seen",
        "gaps",
        "longest_gap_seconds",
        "stale",
    ]);
    for c in &clusters {
        out.push(&cells(c))?;
    }
    out.finish()?;
    Ok(Exit::Ok)
}

const COLUMNS: [&str; 8] = [
    "cluster",
    "events",
    "first_seen",
    "last_seen",
    "gaps",
    "longest_gap_seconds",
    "open_gap_from",
    "stale",
];

fn cells(c: &ClusterCoverage) -> Vec<Value> {
    let longest = c.gaps.iter().map(|g| g.seconds).max();
    let open = c.gaps.iter().find(|g| g.open).map(|g| g.from.to_string());
    vec![
        json!(c.cluster),
        json!(c.events),
        json!(c.first_seen.map(|t| t.to_string())),
        json!(c.last_seen.map(|t| t.to_string())),
        json!(c.gaps.len()),
        json!(longest),
        json!(open),
        json!(c.stale),
    ]
}

/// The clusters among `clusters` (every cluster in scope when empty)
/// whose data at `as_of` is stale. Outside `-o json`, which carries them
/// as `stale_clusters`, each gets a warning on stderr, so that no table
/// answered from stale data looks as confident as one from fresh data.
pub fn stale(
    store: &Store,
    clusters: &[String],
    as_of: &AsOf,
    freshness: &Freshness,
    printer: &Printer,
) -> anyhow::Result<Vec<Stale>> {
    let stale = coverage::stale_in(store, clusters, as_of, Some(freshness.seconds()))?;
    if printer.format != OutputFormat::Json {
        let mut err = std::io::stderr().lock();
        for s in &stale {
            let _ = writeln!(err, "annal: {}", s.describe());
        }
    }
    Ok(stale)
}
