//! SQL sessions over a ledger: the tables, the JSON functions, and a runner
//! that turns DataFusion's errors into messages for people.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::tables::{
    clusters, managed_fields, reports, revisions, EventsTable, InventoryAt, ObjectsTable,
};
use crate::QueryError;

/// A session with every annal table registered.
///
/// The JSON functions of `datafusion-functions-json` work on `data`:
/// `json_get_str(data, 'metadata', 'name')`, `data->>'app'`, ...
pub async fn session(store: Arc<Store>) -> Result<SessionContext, QueryError> {
    let config = SessionConfig::new()
        .with_information_schema(true)
        .with_target_partitions(2);
    let mut ctx = SessionContext::new_with_config(config);
    datafusion_functions_json::register_all(&mut ctx)?;
    ctx.register_table("events", Arc::new(EventsTable::new(store.clone())))?;
    ctx.register_table("objects", Arc::new(ObjectsTable::new(store.clone())))?;
    ctx.register_table("clusters", Arc::new(clusters::table(store.clone())))?;
    ctx.register_table("revisions", Arc::new(revisions::table(store.clone())))?;
    ctx.register_table(
        "managed_fields",
        Arc::new(managed_fields::table(store.clone())),
    )?;
    ctx.register_udtf("clusters_at", Arc::new(clusters::function(store.clone())));
    ctx.register_udtf("last_good_at", Arc::new(revisions::function(store.clone())));
    ctx.register_udtf(
        "rollout_regressions",
        Arc::new(crate::tables::regressions::function(store.clone())),
    );
    ctx.register_udtf(
        "cost_report",
        Arc::new(reports::CostReportFunction::new(store.clone())),
    );
    ctx.register_udtf(
        "capacity_report",
        Arc::new(reports::CapacityReportFunction::new(store.clone())),
    );
    ctx.register_udtf("inventory_at", Arc::new(InventoryAt::new(store)));
    ctx.sql(SYNCS_VIEW).await?;
    Ok(ctx)
}

/// `syncs`: `app.sync` events as columns. A view over `events`, so filters
/// on cluster and time reach the store's indexes.
const SYNCS_VIEW: &str = r#"CREATE VIEW syncs AS SELECT
    "index", "time", "cluster",
    json_get_str(data, 'app') AS app,
    json_get_str(data, 'controller') AS controller,
    json_get_str(data, 'revision') AS revision,
    json_get_str(data, 'phase') AS phase,
    to_timestamp_micros(json_get_str(data, 'started_at')) AS started_at,
    to_timestamp_micros(json_get_str(data, 'finished_at')) AS finished_at,
    coalesce(json_get_bool(data, 'prune'), false) AS prune,
    coalesce(json_get_bool(data, 'dry_run'), false) AS dry_run,
    coalesce(json_length(data, 'resources'), 0) AS resources,
    json_get_float(data, 'metrics', 'render_seconds') AS render_seconds,
    json_get_int(data, 'metrics', 'api_requests') AS api_requests,
    json_get_int(data, 'metrics', 'api_throttled') AS api_throttled,
    json_get_int(data, 'metrics', 'applied_bytes') AS applied_bytes,
    principal, controller AS actor_controller, credential
  FROM events WHERE type = 'app.sync'"#;

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
