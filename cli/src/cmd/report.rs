//! `annal report cost|capacity`: attribution reports as a table, CSV, one
//! JSON document, or one self-contained HTML page (`-o html`), to stdout or
//! `--out FILE`.

use std::io::Write;

use annal_query::report::{
    self, html, Budgets, CapacityReport, CapacityRequest, CostReport, CostRequest, GroupBy,
    PriceTable,
};
use annal_query::QueryError;
use annal_schemas::Timestamp;
use annal_store::Store;
use anyhow::Context;
use serde_json::json;

use crate::args::{CapacityArgs, CostArgs, ReportCommand};
use crate::exit::{Exit, UsageError};
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, command: ReportCommand, printer: &Printer) -> anyhow::Result<Exit> {
    match command {
        ReportCommand::Cost(args) => cost(store, args, printer),
        ReportCommand::Capacity(args) => capacity(store, args, printer),
    }
}

fn cost(store: &Store, args: CostArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let request = CostRequest {
        from: args.from,
        to: args.to.unwrap_or_else(Timestamp::now),
        by: args.by.parse::<GroupBy>().map_err(usage)?,
        step_seconds: step(&args.step)?,
        prices: args
            .prices
            .as_deref()
            .map(PriceTable::read)
            .transpose()
            .map_err(usage)?,
    };
    let r = report::cost(store, &request).map_err(usage_if_input)?;
    write(&args.out, |out| match printer.format {
        OutputFormat::Html => out.write_all(html::cost_page(&r, args.top).as_bytes()),
        OutputFormat::Json => {
            let mut doc = serde_json::to_value(&r).map_err(std::io::Error::other)?;
            doc["totals"] = totals(&r);
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)
        }
        _ => printer.table_to(&cost_table(&r), out),
    })?;
    Ok(Exit::Ok)
}

fn capacity(store: &Store, args: CapacityArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let request = CapacityRequest {
        from: args.from,
        to: args.to.unwrap_or_else(Timestamp::now),
        step_seconds: step(&args.step)?,
        budgets: args
            .budgets
            .as_deref()
            .map(Budgets::read)
            .transpose()
            .map_err(usage)?
            .unwrap_or_default(),
    };
    let r = report::capacity(store, &request).map_err(usage_if_input)?;
    write(&args.out, |out| match printer.format {
        OutputFormat::Html => out.write_all(html::capacity_page(&r, args.top).as_bytes()),
        OutputFormat::Json => {
            let mut doc = serde_json::to_value(&r).map_err(std::io::Error::other)?;
            doc["flagged"] = json!(r.flagged());
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)
        }
        _ => printer.table_to(&capacity_table(&r), out),
    })?;
    // A broken budget is for a person to look at, as a gate's finding is.
    Ok(if r.flagged() > 0 {
        Exit::NeedsApproval
    } else {
        Exit::Ok
    })
}

fn cost_table(r: &CostReport) -> Table {
    let mut columns = vec!["group", "step_start", "step_end"];
    columns.extend(report::MEASURES);
    columns.extend(["ledger_bytes_by_source", "cost"]);
    let mut t = Table::new(&columns);
    for row in &r.rows {
        let m = &row.measures;
        t.push(vec![
            json!(row.group),
            json!(row.step_start),
            json!(row.step_end),
            json!(m.syncs),
            json!(round(m.sync_seconds)),
            json!(round(m.render_seconds)),
            json!(m.api_requests),
            json!(m.api_throttled),
            json!(m.applied_bytes),
            json!(round(m.object_hours)),
            json!(m.ledger_bytes),
            json!(serde_json::to_string(&m.ledger_bytes_by_source).unwrap_or_default()),
            json!(row.cost.map(round)),
        ]);
    }
    t
}

fn capacity_table(r: &CapacityReport) -> Table {
    let mut t = Table::new(&[
        "cluster",
        "step_start",
        "step_end",
        "apps",
        "objects",
        "fan_out",
        "api_requests_per_second",
        "throttled_per_second",
        "queue_age_seconds",
        "flags",
    ]);
    for row in &r.rows {
        t.push(vec![
            json!(row.cluster),
            json!(row.step_start),
            json!(row.step_end),
            json!(row.apps),
            json!(row.objects),
            json!(row.fan_out),
            json!(round(row.api_requests_per_second)),
            json!(round(row.throttled_per_second)),
            json!(row.queue_age_seconds),
            json!(row.flags.join("; ")),
        ]);
    }
    t
}

fn totals(r: &CostReport) -> serde_json::Value {
    json!(r
        .totals()
        .into_iter()
        .map(|(group, measures, cost)| {
            let mut doc = serde_json::to_value(&measures).unwrap_or_default();
            doc["group"] = json!(group);
            doc["cost"] = json!(cost);
            doc
        })
        .collect::<Vec<_>>())
}

/// Six significant decimals: tables stay readable, sums stay exact enough.
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn step(s: &Option<String>) -> anyhow::Result<Option<u64>> {
    s.as_deref()
        .map(report::parse_step)
        .transpose()
        .map_err(|e| usage(e).into())
}

fn usage(e: QueryError) -> UsageError {
    UsageError(e.to_string())
}

fn usage_if_input(e: QueryError) -> anyhow::Error {
    match e {
        QueryError::BadInput(m) => UsageError(m).into(),
        other => other.into(),
    }
}

/// Runs `body` against stdout or the `--out` file.
fn write(
    out: &Option<std::path::PathBuf>,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    match out {
        None => body(&mut std::io::stdout().lock())?,
        Some(path) => {
            let mut file = std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?,
            );
            body(&mut file).with_context(|| format!("writing {}", path.display()))?;
            file.flush()
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}
