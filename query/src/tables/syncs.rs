//! The `syncs` view: one row per `app.sync` entry, its phase, prune flag,
//! timing and API cost as columns.
//!
//! It was first a SQL view over `events` that took each field out of
//! `data` with the JSON functions; the store now keeps those fields in its
//! column sidecar (with the same values, see `annal_store::columns`), and
//! the view reads them there, so a report over every sync reads a few
//! compressed columns instead of every sync's JSON. The columns, their
//! types and their values are the first view's.

use std::sync::Arc;

use annal_store::Store;
use datafusion::catalog::view::ViewTable;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::prelude::{col, lit, SessionContext};

use super::events::sidecar;
use crate::QueryError;

/// The view's columns, as expressions over the sidecar's.
const COLUMNS: [&str; 19] = [
    "index",
    "time",
    "cluster",
    "app",
    "sync_controller AS controller",
    "sync_revision AS revision",
    "sync_phase AS phase",
    "to_timestamp_micros(sync_started_at) AS started_at",
    "to_timestamp_micros(sync_finished_at) AS finished_at",
    "coalesce(sync_prune, false) AS prune",
    "coalesce(sync_dry_run, false) AS dry_run",
    "coalesce(sync_resources, 0) AS resources",
    "sync_render_seconds AS render_seconds",
    "sync_api_requests AS api_requests",
    "sync_api_throttled AS api_throttled",
    "sync_applied_bytes AS applied_bytes",
    "principal",
    "controller AS actor_controller",
    "credential",
];

/// Registers `syncs` in `ctx`.
pub fn register(ctx: &SessionContext, store: Arc<Store>) -> Result<(), QueryError> {
    let source = provider_as_source(Arc::new(sidecar::table(store)));
    let plan = LogicalPlanBuilder::scan("sidecar", source, None)?.build()?;
    let view = DataFrame::new(ctx.state(), plan)
        .filter(col("type").eq(lit("app.sync")))?
        .select_exprs(&COLUMNS)?;
    let definition = format!(
        "SELECT {} FROM sidecar WHERE type = 'app.sync'",
        COLUMNS.join(", ")
    );
    let view = ViewTable::new(view.into_unoptimized_plan(), Some(definition));
    ctx.register_table("syncs", Arc::new(view))?;
    Ok(())
}
