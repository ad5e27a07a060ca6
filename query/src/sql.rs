//! SQL sessions over a ledger: the tables, the JSON functions, and a runner
//! that turns DataFusion's errors into messages for people.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::tables::{EventsTable, InventoryAt, ObjectsTable};
use crate::QueryError;

/// A session with every annal table registered.
///
/// The JSON functions of `datafusion-functions-json` work on `data`:
/// `json_get_str(data, 'metadata', 'name')`, `data->>'app'`, ...
pub fn session(store: Arc<Store>) -> Result<SessionContext, QueryError> {
    let config = SessionConfig::new()
        .with_information_schema(true)
        .with_target_partitions(2);
    let mut ctx = SessionContext::new_with_config(config);
    datafusion_functions_json::register_all(&mut ctx)?;
    ctx.register_table("events", Arc::new(EventsTable::new(store.clone())))?;
    ctx.register_table("objects", Arc::new(ObjectsTable::new(store.clone())))?;
    ctx.register_udtf("inventory_at", Arc::new(InventoryAt::new(store)));
    Ok(ctx)
}

/// The result of a query.
#[derive(Debug)]
pub struct Answer {
    /// Column names and types.
    pub schema: SchemaRef,
    /// The rows, in batches.
    pub batches: Vec<RecordBatch>,
}

/// Plans and runs one SQL statement.
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<Answer, QueryError> {
    let df = ctx.sql(sql).await.map_err(QueryError::from_sql)?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.map_err(QueryError::from_sql)?;
    Ok(Answer { schema, batches })
}

/// Rows as JSON objects (columns in order, nulls explicit, timestamps as
/// RFC 3339 text).
pub fn rows_as_json(
    answer: &Answer,
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, QueryError> {
    use datafusion::arrow::json::{writer::JsonArray, WriterBuilder};
    let mut buf = Vec::new();
    {
        let mut writer = WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, JsonArray>(&mut buf);
        for batch in &answer.batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice(&buf)?)
}
