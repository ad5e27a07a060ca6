//! `annal diff`: what changed between two instants.

use annal_query::asof::diff::{self, DiffRow};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::DiffArgs;
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer};

pub fn run(store: &Store, args: &DiffArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let to = args.to.unwrap_or_else(Timestamp::now);
    let (from, to) = diff::sides(store, args.from, to, args.known_at)?;
    let owned = |r: &DiffRow| args.owner.as_ref().is_none_or(|o| r.owned_by(o));
    let clusters = (!args.clusters.is_empty()).then_some(args.clusters.as_slice());
    // Stale at either instant: the diff there is only as good as the data.
    let mut stale = super::coverage::stale(store, &args.clusters, &from, &args.freshness, printer)?;
    for s in super::coverage::stale(store, &args.clusters, &to, &args.freshness, printer)? {
        if !stale.contains(&s) {
            stale.push(s);
        }
    }
    let rows = diff::fleet_diff(store, clusters, &from, &to)?;
    if printer.format == OutputFormat::Json {
        let mut doc = diff::Document::default();
        for r in rows {
            let r = r?;
            if owned(&r) {
                doc.push(r);
            }
        }
        let extra = [
            ("from", json!(args.from.to_string())),
            ("to", json!(to.valid.to_string())),
            ("stale_clusters", json!(stale)),
        ];
        printer.document(&doc, &extra)?;
        return Ok(Exit::Ok);
    }
    let mut out = printer.stream(&COLUMNS).narrow(&[
        "cluster",
        "namespace",
        "kind",
        "name",
        "change",
        "owner_before",
        "owner_after",
        "fields",
    ]);
    for r in rows {
        let r = r?;
        if owned(&r) {
            out.push(&cells(&r))?;
        }
    }
    out.finish()?;
    Ok(Exit::Ok)
}

const COLUMNS: [&str; 10] = [
    "cluster",
    "group",
    "kind",
    "namespace",
    "name",
    "change",
    "owner_before",
    "owner_after",
    "fields",
    "managers",
];

fn cells(r: &DiffRow) -> Vec<Value> {
    vec![
        json!(r.cluster),
        json!(r.group),
        json!(r.kind),
        json!(r.namespace),
        json!(r.name),
        json!(r.change.as_str()),
        json!(r.owner_before),
        json!(r.owner_after),
        json!(r.fields),
        json!(r.managers),
    ]
}
