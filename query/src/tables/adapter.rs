//! One DataFusion `TableProvider` for every table over the store, as
//! InfluxDB 3's system tables do it: a table module implements [`Source`]
//! (its schema, which filters its scan applies, and the scan itself, given
//! the projection, the filters and the limit), and [`Table`] adapts it to
//! DataFusion. The projection is resolved here once, so a source only ever
//! sees the column numbers it must produce and their schema; a new table
//! (a diff, a history) costs a schema and a scan.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

/// What is particular to one table.
pub trait Source: Send + Sync + 'static {
    /// Every column of the table, in order.
    fn schema(&self) -> SchemaRef;

    /// `Base` for a table, `Temporary` for a table function's answer.
    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// How the scan treats each filter: `Exact` only when it keeps exactly
    /// the matching rows whichever way it reads, `Inexact` when it uses
    /// the filter to read less and DataFusion must still apply it.
    fn pushdown(&self, filters: &[&Expr]) -> Vec<TableProviderFilterPushDown>;

    /// The plan that reads the rows `scan` asks for.
    fn scan(&self, scan: Scan<'_>) -> Result<Arc<dyn ExecutionPlan>>;
}

/// One scan as DataFusion asks for it, the projection resolved.
pub struct Scan<'a> {
    /// The table's column numbers the scan returns, in output order.
    pub columns: Vec<usize>,
    /// The schema of those columns.
    pub schema: SchemaRef,
    /// The filters offered (see [`Source::pushdown`]).
    pub filters: &'a [Expr],
    /// At most this many rows are wanted.
    pub limit: Option<usize>,
    /// The session's target partitions (at least 1).
    pub partitions: usize,
}

/// A [`Source`] as a DataFusion table.
pub struct Table<S>(S);

impl<S: Source> Table<S> {
    /// The table reading `source`.
    pub fn of(source: S) -> Self {
        Table(source)
    }
}

impl<S> std::fmt::Debug for Table<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Table")
            .field(&std::any::type_name::<S>())
            .finish()
    }
}

#[async_trait]
impl<S: Source> TableProvider for Table<S> {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    fn table_type(&self) -> TableType {
        self.0.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(self.0.pushdown(filters))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let full = self.0.schema();
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..full.fields().len()).collect(),
        };
        let schema = Arc::new(full.project(&columns)?);
        self.0.scan(Scan {
            columns,
            schema,
            filters,
            limit,
            partitions: state.config().target_partitions().max(1),
        })
    }
}
