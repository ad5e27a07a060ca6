//! `annal drift`: writes to GitOps-owned objects outside Git, as a CI or
//! alerting gate (exit 3 while any is not reverted).

use annal_query::asof::drift::{self, DriftQuery, DriftRow};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::DriftArgs;
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer};

pub fn run(store: &Store, args: &DriftArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let until = args.until.unwrap_or_else(Timestamp::now);
    let since = match args.since {
        Some(s) => s,
        None => Timestamp::from_unix_micros(until.unix_micros() - 86_400_000_000).unwrap_or(until),
    };
    let q = DriftQuery {
        since,
        until,
        clusters: args.clusters.clone(),
        app: args.app.clone(),
        normal_managers: args.normal_managers.clone(),
    };
    let rows = drift::drift(store, &q)?;
    let unreverted = rows.iter().filter(|r| !r.reverted).count();
    if printer.format == OutputFormat::Json {
        printer.document(
            &drift::document(&q, &rows),
            &[("needs_approval", json!(unreverted > 0))],
        )?;
    } else {
        printer.heading(
            "annal drift",
            &format!(
                "Drift from {since} to {until}: {} writes outside Git, {unreverted} not reverted\n",
                rows.len()
            ),
        )?;
        let mut out = printer.stream(&COLUMNS).narrow(&[
            "time", "cluster", "kind", "name", "app", "who", "fields", "reverted",
        ]);
        for r in &rows {
            out.push(&cells(r))?;
        }
        out.finish()?;
    }
    Ok(match unreverted {
        0 => Exit::Ok,
        _ => Exit::NeedsApproval,
    })
}

const COLUMNS: [&str; 14] = [
    "time",
    "cluster",
    "group",
    "kind",
    "namespace",
    "name",
    "app",
    "who",
    "manager",
    "principal",
    "fields",
    "reverted",
    "reverted_at",
    "index",
];

fn cells(r: &DriftRow) -> Vec<Value> {
    vec![
        json!(r.time.to_string()),
        json!(r.cluster),
        json!(r.group),
        json!(r.kind),
        json!(r.namespace),
        json!(r.name),
        json!(r.app),
        json!(r.who),
        json!(r.manager),
        json!(r.principal),
        json!(r.fields),
        json!(r.reverted),
        json!(r.reverted_at.map(|t| t.to_string())),
        json!(r.index),
    ]
}
