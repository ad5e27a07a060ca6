//! SQL sessions over a ledger: the tables, the JSON functions, and a runner
//! that is read-only, bounded, and turns DataFusion's errors into messages
//! for people.
//!
//! Every surface that runs SQL (`annal sql`, `POST /v1/sql` ([`http`]), `annal export`,
//! and whatever reads the ledger through SQL later) plans through
//! [`dataframe`], which refuses anything but a query ([`policy`]), and runs
//! on a session from [`session_with`], whose memory is bounded
//! ([`limits`]). [`run`] adds the time limit.

mod cluster_word;
mod date_trunc;
mod distinct_count;
pub mod http;
pub mod limits;
pub mod policy;

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::MemoryLimit;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use limits::Limits;

use crate::tables::events::floors::JoinFloors;
use crate::tables::{
    clusters, diff, inventory, managed_fields, reports, revisions, EventsTable, ObjectsTable,
};
use crate::QueryError;

/// A session with every annal table registered and the default [`Limits`].
///
/// The JSON functions of `datafusion-functions-json` work on `data`:
/// `json_get_str(data, 'metadata', 'name')`, `data->>'app'`, ...
pub async fn session(store: Arc<Store>) -> Result<SessionContext, QueryError> {
    session_with(store, &Limits::default()).await
}

/// Bytes of build-side keys a hash join may offer a scan as a list.
const INLIST_BYTES: usize = 4 << 20;

/// A session with every annal table registered, bounded by `limits`: a
/// memory pool of its own, no spilling to disk, and no URL tables (a query
/// cannot name a file).
pub async fn session_with(
    store: Arc<Store>,
    limits: &Limits,
) -> Result<SessionContext, QueryError> {
    let mut config = SessionConfig::new()
        .with_information_schema(true)
        .with_target_partitions(2)
        .with_extension(Arc::new(limits.clone()));
    // A hash join hands its build side's keys to the `events` scan as a
    // list (at most 150 distinct, DataFusion's default) only when the key
    // arrays take less than this; a list is what narrows the scan (a hash
    // table lookup narrows nothing). The arrays are measured with the
    // buffers they share with the batches they came from, so 39
    // revocations' keys measured over the default 128 KiB.
    config
        .options_mut()
        .optimizer
        .hash_join_inlist_pushdown_max_size = INLIST_BYTES;
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(limits::pool(limits.memory_bytes, limits.usage.clone()))
        .with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled),
        )
        .build_arc()?;
    // A join's range condition on time narrows the `events` scan it
    // probes, as its keys do (`tables::events::floors`).
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(JoinFloors))
        .build();
    let mut ctx = SessionContext::new_with_state(state);
    datafusion_functions_json::register_all(&mut ctx)?;
    ctx.register_udf(date_trunc::udf());
    ctx.register_udaf(distinct_count::udaf());
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
    ctx.register_udtf("inventory_at", Arc::new(inventory::function(store.clone())));
    ctx.register_udtf("inventory_diff", Arc::new(diff::function(store.clone())));
    ctx.register_table(
        "changes",
        Arc::new(crate::tables::history::table(store.clone())),
    )?;
    ctx.register_udtf(
        "drift",
        Arc::new(crate::tables::drift::function(store.clone())),
    );
    ctx.register_udtf(
        "object_history",
        Arc::new(crate::tables::history::function(store.clone())),
    );
    crate::tables::syncs::register(&ctx, store)?;
    Ok(ctx)
}

/// Plans one statement, refusing anything that is not a query (see
/// [`policy`]). Nothing of the statement runs before the check.
pub async fn dataframe(ctx: &SessionContext, sql: &str) -> Result<DataFrame, QueryError> {
    let plan = ctx
        .state()
        .create_logical_plan(&cluster_word::quoted(sql))
        .await
        .map_err(|e| error(ctx, e))?;
    if let Err(refused) = policy::check(&plan) {
        usage(ctx).count(limits::Stopped::NotAllowed);
        return Err(QueryError::NotAllowed(refused.to_string()));
    }
    policy::verify_with_datafusion(&plan)
        .map_err(|e| QueryError::NotAllowed(e.message().into_owned()))?;
    ctx.execute_logical_plan(plan)
        .await
        .map_err(|e| error(ctx, e))
}

/// The session's limits (the defaults for a session not made here).
pub fn limits(ctx: &SessionContext) -> Arc<Limits> {
    ctx.state()
        .config()
        .get_extension::<Limits>()
        .unwrap_or_default()
}

fn usage(ctx: &SessionContext) -> Arc<limits::Usage> {
    limits(ctx).usage.clone()
}

/// A DataFusion error as a [`QueryError`], naming the session's memory
/// limit when the query ran into it.
pub fn error(ctx: &SessionContext, e: DataFusionError) -> QueryError {
    if let DataFusionError::ResourcesExhausted(detail) = e.find_root() {
        usage(ctx).count(limits::Stopped::Memory);
        let limit = match ctx.runtime_env().memory_pool.memory_limit() {
            MemoryLimit::Finite(bytes) => bytes,
            MemoryLimit::Infinite | MemoryLimit::Unknown => limits(ctx).memory_bytes,
        };
        return QueryError::MemoryLimit {
            limit,
            detail: detail.clone(),
        };
    }
    QueryError::from_sql(e)
}

/// The result of a query.
#[derive(Debug)]
pub struct Answer {
    /// Column names and types.
    pub schema: SchemaRef,
    /// The rows, in batches.
    pub batches: Vec<RecordBatch>,
}

/// Plans and runs one SQL statement within the session's limits; past its
/// time limit the query is cancelled (its streams dropped, its memory
/// given back) and [`QueryError::Timeout`] returned.
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<Answer, QueryError> {
    run_capped(ctx, sql, None).await
}

/// [`run`], keeping at most `max_rows` rows: the plan itself is limited,
/// so the rows past the cap are never computed.
pub async fn run_capped(
    ctx: &SessionContext,
    sql: &str,
    max_rows: Option<usize>,
) -> Result<Answer, QueryError> {
    let limits = limits(ctx);
    let _running = limits.usage.start();
    let work = async {
        let mut df = dataframe(ctx, sql).await?;
        if let Some(n) = max_rows {
            df = df.limit(0, Some(n)).map_err(|e| error(ctx, e))?;
        }
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await.map_err(|e| error(ctx, e))?;
        Ok(Answer { schema, batches })
    };
    before(&limits, limits.deadline(), work).await
}

/// The rows of a query as they are computed, for answers too large to
/// hold: the stream ends with [`QueryError::Timeout`] at the session's
/// time limit (counted from planning), and dropping it cancels the query.
pub async fn stream(ctx: &SessionContext, sql: &str) -> Result<Rows, QueryError> {
    let limits = limits(ctx);
    let running = limits.usage.start();
    let deadline = limits.deadline();
    let plan = async {
        let df = dataframe(ctx, sql).await?;
        df.execute_stream().await.map_err(|e| error(ctx, e))
    };
    let batches = before(&limits, deadline, plan).await?;
    Ok(Rows {
        schema: batches.schema(),
        batches,
        deadline,
        ctx: ctx.clone(),
        limits,
        _running: running,
    })
}

/// `work`, cut off at `deadline`: the query's streams are dropped (which
/// cancels it) and the timeout is counted.
async fn before<T>(
    limits: &Limits,
    deadline: Option<tokio::time::Instant>,
    work: impl std::future::Future<Output = Result<T, QueryError>>,
) -> Result<T, QueryError> {
    let Some(at) = deadline else {
        return work.await;
    };
    match tokio::time::timeout_at(at, work).await {
        Ok(done) => done,
        Err(_) => {
            limits.usage.count(limits::Stopped::Timeout);
            Err(QueryError::Timeout {
                limit: limits.timeout.unwrap_or_default(),
            })
        }
    }
}

/// A query's rows as they come; see [`stream`].
pub struct Rows {
    /// Column names and types.
    pub schema: SchemaRef,
    batches: datafusion::physical_plan::SendableRecordBatchStream,
    deadline: Option<tokio::time::Instant>,
    ctx: SessionContext,
    limits: Arc<Limits>,
    _running: limits::Running,
}

impl Rows {
    /// The next batch; `None` after the last. After an error (a timeout
    /// included) the caller stops asking.
    pub async fn next(&mut self) -> Option<Result<RecordBatch, QueryError>> {
        use futures::StreamExt as _;
        let batches = &mut self.batches;
        let next = async move { Ok::<_, QueryError>(batches.next().await) };
        match before(&self.limits, self.deadline, next).await {
            Ok(next) => next.map(|batch| batch.map_err(|e| error(&self.ctx, e))),
            Err(timeout) => Some(Err(timeout)),
        }
    }
}

/// Rows as JSON objects (columns in order, nulls explicit, timestamps as
/// RFC 3339 text).
pub fn rows_as_json(
    answer: &Answer,
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, QueryError> {
    batches_as_json(&answer.batches)
}

/// [`rows_as_json`] of some batches (one at a time, for output that
/// streams).
pub fn batches_as_json(
    batches: &[RecordBatch],
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, QueryError> {
    use datafusion::arrow::json::{writer::JsonArray, WriterBuilder};
    let mut buf = Vec::new();
    {
        let mut writer = WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, JsonArray>(&mut buf);
        for batch in batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice(&buf)?)
}
