//! `annal inventory`: the objects live at an instant, with their owners.

use annal_query::inventory::{self, AsOf, InventoryRow};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::Value;

use crate::args::InventoryArgs;
use crate::exit::Exit;
use crate::output::{Printer, Table};

pub fn run(store: &Store, args: &InventoryArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let mut table = Table::new(&InventoryRow::COLUMNS);
    for r in inventory::fleet_at(store, args.cluster.as_deref(), &as_of)? {
        if args.owner.as_ref().is_some_and(|o| !r.claims.contains(o)) {
            continue;
        }
        let row = r.to_json();
        table.push(
            InventoryRow::COLUMNS
                .iter()
                .map(|c| row.get(*c).cloned().unwrap_or(Value::Null))
                .collect(),
        );
    }
    printer.table(&table)?;
    Ok(Exit::Ok)
}
