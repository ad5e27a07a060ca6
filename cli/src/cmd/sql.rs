//! `annal sql`.

use std::sync::Arc;

use annal_store::Store;
use serde_json::Value;

use crate::args::SqlArgs;
use crate::exit::{Exit, UsageError};
use crate::output::Printer;

pub fn run(store: Store, args: &SqlArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let limits = annal_query::sql::Limits {
        memory_bytes: args.query_memory,
        timeout: args.query_timeout,
        ..annal_query::sql::Limits::default()
    };
    runtime.block_on(async {
        let ctx = annal_query::sql::session_with(Arc::new(store), &limits).await?;
        let mut rows = annal_query::sql::stream(&ctx, &args.query)
            .await
            .map_err(usage_or_failure)?;
        let columns: Vec<String> = rows
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let names: Vec<&str> = columns.iter().map(String::as_str).collect();
        // Each batch is printed as it is computed.
        let mut out = printer.stream(&names);
        while let Some(batch) = rows.next().await {
            let batch = batch.map_err(usage_or_failure)?;
            for row in annal_query::sql::batches_as_json(std::slice::from_ref(&batch))? {
                let cells: Vec<Value> = columns
                    .iter()
                    .map(|c| row.get(c).cloned().unwrap_or(Value::Null))
                    .collect();
                out.push(&cells)?;
            }
        }
        out.finish()?;
        Ok(Exit::Ok)
    })
}

/// Not a query, bad SQL, or a query that fails on its own values: the
/// caller's to fix (exit 2); anything else is a failure.
fn usage_or_failure(e: annal_query::QueryError) -> anyhow::Error {
    match e {
        e @ (annal_query::QueryError::Sql(_)
        | annal_query::QueryError::NotAllowed(_)
        | annal_query::QueryError::Evaluation(_)) => UsageError(e.to_string()).into(),
        e => e.into(),
    }
}
