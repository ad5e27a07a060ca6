//! `annal history`: every version of one object, who made it, and with
//! `--field` the blame of one field.

use annal_query::asof::history::{self, BlameRow, HistoryRow, ObjectQuery};
use annal_store::Store;
use serde_json::{json, Value};

use crate::args::HistoryArgs;
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer};

pub fn run(store: &Store, args: &HistoryArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let q = ObjectQuery {
        cluster: args.cluster.clone(),
        group: args.group.clone(),
        kind: args.kind.clone(),
        namespace: args.namespace.clone(),
        name: args.name.clone(),
    };
    if printer.format == OutputFormat::Json {
        printer.document(&history::document(store, &q, args.field.as_deref())?, &[])?;
        return Ok(Exit::Ok);
    }
    let versions = history::find(store, &q)?;
    if let Some(field) = &args.field {
        let values = history::blame(store, &versions, field)?;
        let mut out = printer
            .stream(&BLAME_COLUMNS)
            .narrow(&["value", "from", "to", "set_by", "manager"]);
        for b in &values {
            out.push(&blame_cells(b))?;
        }
        out.finish()?;
        return Ok(Exit::Ok);
    }
    let mut out = printer.stream(&COLUMNS).narrow(&[
        "valid_from",
        "change",
        "who",
        "manager",
        "app",
        "revision",
        "changed",
    ]);
    for v in &versions {
        out.push(&cells(v))?;
    }
    out.finish()?;
    Ok(Exit::Ok)
}

const COLUMNS: [&str; 14] = [
    "valid_from",
    "valid_to",
    "change",
    "who",
    "principal",
    "impersonated",
    "user_agent",
    "manager",
    "operation",
    "app",
    "revision",
    "changed",
    "managers",
    "index",
];

fn cells(v: &HistoryRow) -> Vec<Value> {
    vec![
        json!(v.valid_from.to_string()),
        json!(v.valid_to.map(|t| t.to_string())),
        json!(v.change.as_str()),
        json!(v.who()),
        json!(v.principal),
        json!(v.impersonated),
        json!(v.user_agent),
        json!(v.manager),
        json!(v.operation),
        json!(v.app),
        json!(v.revision),
        json!(v.changed),
        json!(v.managers),
        json!(v.index),
    ]
}

const BLAME_COLUMNS: [&str; 7] = ["field", "value", "from", "to", "set_by", "manager", "app"];

fn blame_cells(b: &BlameRow) -> Vec<Value> {
    vec![
        json!(b.field),
        match &b.value {
            Value::String(_) | Value::Null => b.value.clone(),
            other => json!(other.to_string()),
        },
        json!(b.from.to_string()),
        json!(b.to.map(|t| t.to_string())),
        json!(b.set_by),
        json!(b.manager),
        json!(b.app),
    ]
}
