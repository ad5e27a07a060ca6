//! `annal inventory`: the objects live at an instant, with their owners.

use annal_query::asof::inventory::{self, AsOf, InventoryRow};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::json;

use crate::args::InventoryArgs;
use crate::exit::Exit;
use crate::output::Printer;

pub fn run(store: &Store, args: &InventoryArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let scope: Vec<String> = args.cluster.iter().cloned().collect();
    let stale = super::coverage::stale(store, &scope, &as_of, &args.freshness, printer)?;
    let head = json!({
        "at": as_of.valid.to_string(),
        "known_at": as_of.known_at.map(|t| t.to_string()),
        "stale_clusters": stale,
    });
    // Rows are printed as each cluster's are computed.
    let mut out = printer
        .stream(&InventoryRow::COLUMNS)
        .narrow(&InventoryRow::NARROW)
        .within(&head, "objects");
    for r in inventory::fleet_rows(store, args.cluster.as_deref(), &as_of)? {
        let r = r?;
        if args.owner.as_ref().is_some_and(|o| !r.claims.contains(o)) {
            continue;
        }
        out.push(&r.cells())?;
    }
    out.finish()?;
    Ok(Exit::Ok)
}
