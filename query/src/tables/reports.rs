//! The cost and capacity reports as SQL table functions, so auditors can
//! slice them further:
//!
//! - `cost_report(from, to, by [, step])`: one row per group and step with
//!   every measure (`by` is `'cluster'`, `'app'`, `'tenant'`, `'team'` or
//!   `'environment'`; `step` like `'1h'` or `'1d'`, default the whole
//!   window); costs are left to SQL (`syncs * 0.002 + ...`).
//! - `capacity_report(from, to [, step])`: one row per cluster and step,
//!   with the flags that need no budget (429 rising three steps in a row).
//!
//! The report is computed when the query is planned, over the log as it is
//! then.

use std::sync::Arc;

use annal_schemas::Timestamp;
use annal_store::Store;
use datafusion::arrow::array::{
    ArrayRef, Float64Builder, ListBuilder, StringBuilder, TimestampMicrosecondBuilder,
    UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::common::{plan_err, ScalarValue};
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;

use super::args::instant;
use crate::report::{self, Budgets, CapacityRequest, CostRequest, GroupBy};

/// `cost_report(from, to, by [, step])`.
pub struct CostReportFunction {
    store: Arc<Store>,
}

/// `capacity_report(from, to [, step])`.
pub struct CapacityReportFunction {
    store: Arc<Store>,
}

impl std::fmt::Debug for CostReportFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostReportFunction").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CapacityReportFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapacityReportFunction")
            .finish_non_exhaustive()
    }
}

impl CostReportFunction {
    /// The function over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        CostReportFunction { store }
    }
}

impl CapacityReportFunction {
    /// The function over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        CapacityReportFunction { store }
    }
}

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// The columns of `cost_report`.
pub fn cost_schema() -> SchemaRef {
    let u = |n: &str| Field::new(n, DataType::UInt64, false);
    let f = |n: &str| Field::new(n, DataType::Float64, false);
    Arc::new(Schema::new(vec![
        Field::new("group", DataType::Utf8, false),
        Field::new("step_start", ts(), false),
        Field::new("step_end", ts(), false),
        u("syncs"),
        f("sync_seconds"),
        f("render_seconds"),
        u("api_requests"),
        u("api_throttled"),
        u("applied_bytes"),
        f("object_hours"),
        u("ledger_bytes"),
        Field::new("ledger_bytes_by_source", DataType::Utf8, false),
    ]))
}

/// The columns of `capacity_report`.
pub fn capacity_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("cluster", DataType::Utf8, false),
        Field::new("step_start", ts(), false),
        Field::new("step_end", ts(), false),
        Field::new("apps", DataType::UInt64, false),
        Field::new("objects", DataType::UInt64, false),
        Field::new("fan_out", DataType::UInt64, false),
        Field::new("api_requests_per_second", DataType::Float64, false),
        Field::new("throttled_per_second", DataType::Float64, false),
        Field::new("queue_age_seconds", DataType::Float64, true),
        Field::new(
            "flags",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
    ]))
}

impl TableFunctionImpl for CostReportFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        const NAME: &str = "cost_report";
        let exprs = args.exprs();
        if !(3..=4).contains(&exprs.len()) {
            return plan_err!("{NAME}(from, to, by [, step]) takes three or four arguments");
        }
        let (from, to) = window(NAME, exprs)?;
        let by: GroupBy = text(NAME, exprs, 2)?
            .unwrap_or_default()
            .parse()
            .map_err(external)?;
        let step_seconds = step(NAME, exprs, 3)?;
        let request = CostRequest {
            from,
            to,
            by,
            step_seconds,
            prices: None,
        };
        let r = report::cost(&self.store, &request).map_err(external)?;
        let mut group = StringBuilder::new();
        let (mut start, mut end) = (
            TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            TimestampMicrosecondBuilder::new().with_timezone("UTC"),
        );
        let mut u: Vec<UInt64Builder> = (0..5).map(|_| UInt64Builder::new()).collect();
        let mut f: Vec<Float64Builder> = (0..3).map(|_| Float64Builder::new()).collect();
        let mut sources = StringBuilder::new();
        for row in &r.rows {
            let m = &row.measures;
            group.append_value(&row.group);
            start.append_value(row.step_start.unix_micros());
            end.append_value(row.step_end.unix_micros());
            u[0].append_value(m.syncs);
            f[0].append_value(m.sync_seconds);
            f[1].append_value(m.render_seconds);
            u[1].append_value(m.api_requests);
            u[2].append_value(m.api_throttled);
            u[3].append_value(m.applied_bytes);
            f[2].append_value(m.object_hours);
            u[4].append_value(m.ledger_bytes);
            sources
                .append_value(serde_json::to_string(&m.ledger_bytes_by_source).unwrap_or_default());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(group.finish()),
            Arc::new(start.finish()),
            Arc::new(end.finish()),
            Arc::new(u[0].finish()),
            Arc::new(f[0].finish()),
            Arc::new(f[1].finish()),
            Arc::new(u[1].finish()),
            Arc::new(u[2].finish()),
            Arc::new(u[3].finish()),
            Arc::new(f[2].finish()),
            Arc::new(u[4].finish()),
            Arc::new(sources.finish()),
        ];
        table(cost_schema(), columns)
    }
}

impl TableFunctionImpl for CapacityReportFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        const NAME: &str = "capacity_report";
        let exprs = args.exprs();
        if !(2..=3).contains(&exprs.len()) {
            return plan_err!("{NAME}(from, to [, step]) takes two or three arguments");
        }
        let (from, to) = window(NAME, exprs)?;
        let request = CapacityRequest {
            from,
            to,
            step_seconds: step(NAME, exprs, 2)?,
            budgets: Budgets::default(),
        };
        let r = report::capacity(&self.store, &request).map_err(external)?;
        let mut cluster = StringBuilder::new();
        let (mut start, mut end) = (
            TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            TimestampMicrosecondBuilder::new().with_timezone("UTC"),
        );
        let mut u: Vec<UInt64Builder> = (0..3).map(|_| UInt64Builder::new()).collect();
        let mut f: Vec<Float64Builder> = (0..3).map(|_| Float64Builder::new()).collect();
        let mut flags = ListBuilder::new(StringBuilder::new());
        for row in &r.rows {
            cluster.append_value(&row.cluster);
            start.append_value(row.step_start.unix_micros());
            end.append_value(row.step_end.unix_micros());
            u[0].append_value(row.apps);
            u[1].append_value(row.objects);
            u[2].append_value(row.fan_out);
            f[0].append_value(row.api_requests_per_second);
            f[1].append_value(row.throttled_per_second);
            f[2].append_option(row.queue_age_seconds);
            for flag in &row.flags {
                flags.values().append_value(flag);
            }
            flags.append(true);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(cluster.finish()),
            Arc::new(start.finish()),
            Arc::new(end.finish()),
            Arc::new(u[0].finish()),
            Arc::new(u[1].finish()),
            Arc::new(u[2].finish()),
            Arc::new(f[0].finish()),
            Arc::new(f[1].finish()),
            Arc::new(f[2].finish()),
            Arc::new(flags.finish()),
        ];
        table(capacity_schema(), columns)
    }
}

fn table(schema: SchemaRef, columns: Vec<ArrayRef>) -> Result<Arc<dyn TableProvider>> {
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

fn window(function: &str, exprs: &[Expr]) -> Result<(Timestamp, Timestamp)> {
    let now = Timestamp::now();
    match (
        instant(function, exprs, 0, now)?,
        instant(function, exprs, 1, now)?,
    ) {
        (Some(from), Some(to)) => Ok((from, to)),
        _ => plan_err!("{function}: from and to must not be NULL"),
    }
}

/// A string argument, `None` when absent.
fn text(function: &str, exprs: &[Expr], position: usize) -> Result<Option<String>> {
    match exprs.get(position) {
        None => Ok(None),
        Some(Expr::Literal(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
            _,
        )) => Ok(Some(s.clone())),
        Some(_) => plan_err!("{function}: argument {} must be a string", position + 1),
    }
}

fn step(function: &str, exprs: &[Expr], position: usize) -> Result<Option<u64>> {
    text(function, exprs, position)?
        .map(|s| report::parse_step(&s).map_err(external))
        .transpose()
}

fn external(e: crate::QueryError) -> DataFusionError {
    DataFusionError::Plan(e.to_string())
}
