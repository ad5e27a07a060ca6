//! `annal export parquet --to DIR`.

use std::sync::Arc;

use annal_store::Store;
use serde_json::json;

use crate::args::ExportCommand;
use crate::exit::{Exit, UsageError};
use crate::output::{Printer, Table};

pub fn run(store: Store, command: ExportCommand, printer: &Printer) -> anyhow::Result<Exit> {
    let ExportCommand::Parquet { to, tables } = command;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let started = std::time::Instant::now();
    let exported =
        match runtime.block_on(annal_query::export::parquet(Arc::new(store), &to, &tables)) {
            Ok(e) => e,
            Err(e @ annal_query::QueryError::Sql(_)) => {
                return Err(UsageError(e.to_string()).into())
            }
            Err(e) => return Err(e.into()),
        };
    let mut table = Table::new(&["table", "rows", "path"]);
    for e in &exported {
        table.push(vec![
            json!(e.table),
            json!(e.rows),
            json!(to.join(&e.table).display().to_string()),
        ]);
    }
    printer.table(&table)?;
    eprintln!(
        "annal: exported {} tables to {} in {:.2}s",
        exported.len(),
        to.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(Exit::Ok)
}
