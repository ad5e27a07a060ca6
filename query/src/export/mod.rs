//! Export to Parquet for external engines (DuckDB, pyarrow, Spark, ...).
//!
//! Each table is written under `DIR/<table>/` with Hive-style partitions
//! `day=YYYY-MM-DD/cluster=<id>/`, by the table's valid time (`time` for
//! events, `valid_from` for the versioned tables). Partition columns live
//! in the paths, as Hive readers expect: `read_parquet('DIR/objects/**/*.parquet',
//! hive_partitioning = true)` in DuckDB, `pyarrow.dataset.dataset(DIR/objects,
//! partitioning="hive")` in pyarrow. Events without a cluster (control
//! plane events) are under `cluster=_none`.
//!
//! Export is a copy, not a view: it reads through the same tables as SQL,
//! so it is as current as the log when it starts. It streams: memory holds
//! a bounded number of open files ([`hive`]), whatever the table's size.

mod hive;

use std::path::Path;
use std::sync::Arc;

use annal_store::Store;
use futures::StreamExt;

use crate::{sql, QueryError};

/// Files open at once per table.
const MAX_OPEN_FILES: usize = 128;

/// The exported tables and the valid-time column each is partitioned by.
pub const TABLES: [(&str, &str); 5] = [
    ("events", "time"),
    ("objects", "valid_from"),
    ("managed_fields", "valid_from"),
    ("clusters", "valid_from"),
    ("revisions", "valid_from"),
];

/// What one table export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// Table name (also the directory under the export root).
    pub table: String,
    /// Rows written.
    pub rows: u64,
}

/// Writes the tables named in `only` (every table when empty) under `to`
/// (created if needed; a table exported before is replaced, never appended
/// to).
pub async fn parquet(
    store: Arc<Store>,
    to: &Path,
    only: &[String],
) -> Result<Vec<Exported>, QueryError> {
    if let Some(unknown) = only.iter().find(|t| !TABLES.iter().any(|(n, _)| n == t)) {
        let names: Vec<&str> = TABLES.iter().map(|(n, _)| *n).collect();
        return Err(QueryError::Sql(format!(
            "no table {unknown:?} to export (tables: {})",
            names.join(", ")
        )));
    }
    let ctx = sql::session(store).await?;
    let mut out = Vec::new();
    for (table, time) in TABLES {
        if !only.is_empty() && !only.iter().any(|t| t == table) {
            continue;
        }
        let dir = to.join(table);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| {
                QueryError::Execution(format!("cannot replace {}: {e}", dir.display()))
            })?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| QueryError::Execution(format!("cannot create {}: {e}", dir.display())))?;
        let query = format!(
            "SELECT * EXCLUDE (cluster), coalesce(cluster, '_none') AS cluster, \
             to_char(\"{time}\", '%Y-%m-%d') AS day FROM {table}"
        );
        let df = sql::dataframe(&ctx, &query).await?;
        let mut writer: Option<hive::HiveWriter> = None;
        let mut stream = df.execute_stream().await?;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let w = match &mut writer {
                Some(w) => w,
                None => writer.insert(hive::HiveWriter::new(
                    &dir,
                    &batch.schema(),
                    &["day", "cluster"],
                    MAX_OPEN_FILES,
                )?),
            };
            w.write(&batch)?;
        }
        let rows = match writer {
            Some(w) => w.finish()?,
            None => 0,
        };
        out.push(Exported {
            table: table.to_string(),
            rows,
        });
    }
    Ok(out)
}
