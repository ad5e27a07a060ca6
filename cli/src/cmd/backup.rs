//! `annal backup check`: is an `argocd admin export` complete? Exit 3 when
//! it is empty, shrank, or misses apps.

use annal_ingest::manifests;
use annal_query::asof::coverage::Stale;
use annal_query::asof::inventory::AsOf;
use annal_query::recovery::backup::{self, Report};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::json;

use crate::args::{BackupCheckArgs, BackupCommand};
use crate::exit::{Exit, UsageError};
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, command: BackupCommand, printer: &Printer) -> anyhow::Result<Exit> {
    match command {
        BackupCommand::Check(args) => check(store, &args, printer),
    }
}

fn check(store: &Store, args: &BackupCheckArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let exported: Vec<backup::Exported> = manifests::read(&args.export)
        .map_err(|e| UsageError(format!("export: {e}")))?
        .into_iter()
        .map(|m| (m.kind, m.namespace, m.name))
        .collect();
    let as_of = AsOf::new(store, args.at.unwrap_or_else(Timestamp::now), args.known_at)?;
    let report = backup::check(store, &exported, &as_of)?;
    let stale = super::coverage::stale(store, &[], &as_of, &args.freshness, printer)?;
    print(&report, &stale, printer)?;
    Ok(if report.flags.is_empty() {
        Exit::Ok
    } else {
        Exit::NeedsApproval
    })
}

fn print(r: &Report, stale: &[Stale], printer: &Printer) -> anyhow::Result<()> {
    if printer.format == OutputFormat::Json {
        printer.document(
            r,
            &[
                ("needs_approval", json!(!r.flags.is_empty())),
                ("stale_clusters", json!(stale)),
            ],
        )?;
        return Ok(());
    }
    let verdict = if r.flags.is_empty() {
        "complete".to_string()
    } else {
        format!(
            "needs approval: {}",
            r.flags
                .iter()
                .map(|f| f.detail.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    let heading = format!("Backup check against the ledger at {}: {verdict}\n", r.at);
    printer.heading("annal backup check", &heading)?;
    let mut table = Table::new(&["kind", "in_export", "in_previous_backup"]);
    let mut kinds: std::collections::BTreeSet<&String> = r.export_counts.keys().collect();
    if let Some(p) = &r.previous_counts {
        kinds.extend(p.keys());
    }
    for k in kinds {
        table.push(vec![
            json!(k),
            json!(r.export_counts.get(k).copied().unwrap_or(0)),
            json!(r.previous_counts.as_ref().and_then(|p| p.get(k))),
        ]);
    }
    printer.table(&table)?;
    Ok(())
}
