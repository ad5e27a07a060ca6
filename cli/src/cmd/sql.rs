//! `annal sql`.

use std::sync::Arc;

use annal_store::Store;
use serde_json::Value;

use crate::args::SqlArgs;
use crate::exit::{Exit, UsageError};
use crate::output::{Printer, Table};

pub fn run(store: Store, args: &SqlArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let answer = runtime.block_on(async {
        let limits = annal_query::sql::Limits {
            memory_bytes: args.query_memory,
            timeout: args.query_timeout,
            ..annal_query::sql::Limits::default()
        };
        let ctx = annal_query::sql::session_with(Arc::new(store), &limits).await?;
        annal_query::sql::run(&ctx, &args.query).await
    });
    let answer = match answer {
        Ok(a) => a,
        // Not a query, bad SQL, or a query that fails on its own values:
        // the caller's to fix (exit 2).
        Err(
            e @ (annal_query::QueryError::Sql(_)
            | annal_query::QueryError::NotAllowed(_)
            | annal_query::QueryError::Evaluation(_)),
        ) => return Err(UsageError(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    let columns: Vec<String> = answer
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut table = Table::new(&names);
    for row in annal_query::sql::rows_as_json(&answer)? {
        table.push(
            columns
                .iter()
                .map(|c| row.get(c).cloned().unwrap_or(Value::Null))
                .collect(),
        );
    }
    printer.table(&table)?;
    Ok(Exit::Ok)
}
