//! `annal inventory`: the objects live at an instant, with their owners.

use annal_query::inventory::{self, AsOf};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::InventoryArgs;
use crate::exit::Exit;
use crate::output::{Printer, Table};

pub fn run(store: &Store, args: &InventoryArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let mut table = Table::new(&[
        "cluster",
        "group",
        "version",
        "kind",
        "namespace",
        "name",
        "uid",
        "resource_version",
        "owner",
        "owner_kind",
        "claims",
        "conflict",
        "tracking_mismatch",
        "managers",
        "valid_from",
    ]);
    for r in inventory::fleet_at(store, args.cluster.as_deref(), &as_of)? {
        if let Some(owner) = &args.owner {
            if !r.claims.contains(owner) {
                continue;
            }
        }
        let text = |s: String| if s.is_empty() { Value::Null } else { json!(s) };
        table.push(vec![
            json!(r.cluster),
            json!(r.object.group),
            json!(r.version),
            json!(r.object.kind),
            json!(r.object.namespace),
            json!(r.object.name),
            text(r.uid),
            text(r.resource_version),
            json!(r.owner),
            json!(r.owner_kind.map(|m| m.as_str())),
            json!(r.claims),
            json!(r.conflict),
            json!(r.tracking_mismatch),
            json!(r.managers),
            json!(r.valid_from.to_string()),
        ]);
    }
    printer.table(&table)?;
    Ok(Exit::Ok)
}
