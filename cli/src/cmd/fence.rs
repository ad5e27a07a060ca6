//! `annal fence check`: did the fenced control plane still act? Exit 1 when
//! it did.

use annal_query::asof::inventory::AsOf;
use annal_query::recovery::fence::{self, Report, Request};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::json;

use crate::args::{FenceCheckArgs, FenceCommand};
use crate::exit::{Exit, UsageError};
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, command: FenceCommand, printer: &Printer) -> anyhow::Result<Exit> {
    match command {
        FenceCommand::Check(args) => check(store, &args, printer),
    }
}

fn check(store: &Store, args: &FenceCheckArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let request = Request {
        controller: args.controller.clone(),
        since: args.since,
        principals: args.principals.clone(),
    };
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let report = fence::check(store, &request, &as_of).map_err(|e| match e {
        annal_query::QueryError::Sql(m) => anyhow::Error::from(UsageError(m)),
        other => other.into(),
    })?;
    print(&report, printer)?;
    Ok(if report.violations.is_empty() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

fn print(r: &Report, printer: &Printer) -> anyhow::Result<()> {
    let verdict = if r.violations.is_empty() {
        "holds: no violation".to_string()
    } else {
        format!("broken: {} violations", r.violations.len())
    };
    if printer.format == OutputFormat::Json {
        printer.document(r, &[("holds", json!(r.violations.is_empty()))])?;
        return Ok(());
    }
    let heading = format!(
        "Fence of {} at {} (principals: {}): {verdict}\n",
        r.controller,
        r.fenced_at,
        if r.principals.is_empty() {
            "none known".to_string()
        } else {
            r.principals.join(", ")
        }
    );
    printer.heading("annal fence check", &heading)?;
    let mut table = Table::new(&["code", "index", "time", "cluster", "detail"])
        .narrow(&["code", "time", "cluster", "detail"]);
    for v in &r.violations {
        table.push(vec![
            json!(v.code),
            json!(v.index),
            json!(v.time),
            json!(v.cluster),
            json!(v.detail),
        ]);
    }
    printer.table(&table)?;
    Ok(())
}
