//! `annal rollout status` and `annal rollout regressions`.

use annal_query::asof::inventory::AsOf;
use annal_query::recovery::rollout;
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::json;

use crate::args::{RolloutCommand, RolloutRegressionsArgs, RolloutStatusArgs};
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, command: RolloutCommand, printer: &Printer) -> anyhow::Result<Exit> {
    match command {
        RolloutCommand::Status(args) => status(store, &args, printer),
        RolloutCommand::Regressions(args) => regressions(store, &args, printer),
    }
}

fn status(store: &Store, args: &RolloutStatusArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let s = rollout::status(
        store,
        &args.revision,
        args.app.as_deref(),
        &args.cohort_attribute,
        &as_of,
    )?;
    let failed: u64 = s.cohorts.iter().map(|c| c.failed).sum();
    let stale = super::coverage::stale(store, &[], &as_of, &args.freshness, printer)?;
    if printer.format == OutputFormat::Json {
        printer.document(
            &s,
            &[
                ("needs_approval", json!(failed > 0)),
                ("stale_clusters", json!(stale)),
            ],
        )?;
    } else {
        let heading = format!(
            "Rollout of {} at {} by {}: {} failed\n",
            s.revision, s.at, s.cohort_attribute, failed
        );
        printer.heading("annal rollout status", &heading)?;
        let mut table = Table::new(&[
            "cohort",
            "candidates",
            "started",
            "succeeded",
            "failed",
            "waiting",
            "p50_seconds",
            "max_seconds",
            "api_throttled",
            "waiting_clusters",
        ])
        .narrow(&[
            "cohort",
            "candidates",
            "started",
            "succeeded",
            "failed",
            "waiting",
            "waiting_clusters",
        ]);
        for c in &s.cohorts {
            table.push(vec![
                json!(c.cohort),
                json!(c.candidates),
                json!(c.started),
                json!(c.succeeded),
                json!(c.failed),
                json!(c.waiting),
                json!(c.p50_seconds),
                json!(c.max_seconds),
                json!(c.api_throttled),
                json!(c.waiting_clusters),
            ]);
        }
        printer.table(&table)?;
    }
    Ok(if failed > 0 {
        Exit::NeedsApproval
    } else {
        Exit::Ok
    })
}

fn regressions(
    store: &Store,
    args: &RolloutRegressionsArgs,
    printer: &Printer,
) -> anyhow::Result<Exit> {
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let found = rollout::regressions(store, args.since, &as_of)?;
    if printer.format == OutputFormat::Markdown {
        printer.prose(&format!(
            "### annal rollout regressions\n\n{} found\n",
            found.len()
        ))?;
    }
    let mut table = Table::new(&["app", "cluster", "time", "index", "revision", "newer"])
        .narrow(&["app", "cluster", "time", "revision", "newer"]);
    for r in &found {
        table.push(vec![
            json!(r.app),
            json!(r.cluster),
            json!(r.time),
            json!(r.index),
            json!(r.revision),
            json!(r.newer),
        ]);
    }
    printer.table(&table)?;
    Ok(if found.is_empty() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}
