//! A scan that says roughly how many rows it gives.
//!
//! The store's scans stream from blocking threads, and DataFusion's
//! streaming scan reports no statistics, so the optimizer knew nothing of
//! a join's sides and built its hash table on whichever came first: for
//! "uses of a revoked credential" that was every event (1M rows, 196 MB,
//! hashed and repartitioned) to probe 39 revocations. The tables know the
//! counts (the column chunks count rows per cluster and type), so each
//! scan carries an estimate, and the smaller side is built.
//!
//! A scan can also say how its rows are partitioned, when it deals them
//! as DataFusion's hash repartitioning would (the object tables, by
//! cluster: [`super::cluster_scan`]).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation,
};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

/// `inner`, with about `rows` rows (`None`: not known), and partitioned
/// as `properties` say.
#[derive(Debug)]
pub(crate) struct Estimated {
    inner: Arc<dyn ExecutionPlan>,
    rows: Option<usize>,
    properties: Arc<PlanProperties>,
}

impl Estimated {
    pub(crate) fn wrap(inner: Arc<dyn ExecutionPlan>, rows: u64) -> Arc<dyn ExecutionPlan> {
        Arc::new(Estimated {
            properties: inner.properties().clone(),
            inner,
            rows: Some(usize::try_from(rows).unwrap_or(usize::MAX)),
        })
    }

    /// `inner`, whose partitions hold the rows `partitioning` (a hash
    /// partitioning) would give them; its size not known.
    pub(crate) fn partitioned(
        inner: Arc<dyn ExecutionPlan>,
        partitioning: Partitioning,
    ) -> Arc<dyn ExecutionPlan> {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(inner.schema()),
            partitioning,
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Arc::new(Estimated {
            inner,
            rows: None,
            properties: Arc::new(properties),
        })
    }

    /// The scan it wraps.
    pub(crate) fn inner(&self) -> &Arc<dyn ExecutionPlan> {
        &self.inner
    }

    /// `inner` with this estimate.
    pub(crate) fn rewrap(&self, inner: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        Arc::new(Estimated {
            inner,
            rows: self.rows,
            properties: self.properties.clone(),
        })
    }
}

/// Bytes a row of `schema` takes in memory, roughly: text columns count
/// as 32 bytes, `data` (an event's JSON) as 1 KiB.
fn row_bytes(schema: &SchemaRef) -> usize {
    schema
        .fields()
        .iter()
        .map(|f| match (f.name().as_str(), f.data_type()) {
            ("data", _) => 1024,
            (_, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => 32,
            (_, t) => t.primitive_width().unwrap_or(16),
        })
        .sum::<usize>()
        .max(1)
}

impl DisplayAs for Estimated {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_as(t, f)?;
        if let Some(rows) = self.rows {
            write!(f, ", estimated_rows={rows}")?;
        }
        if self.properties.partitioning != self.inner.properties().partitioning {
            write!(f, ", partitioning={}", self.properties.partitioning)?;
        }
        Ok(())
    }
}

impl ExecutionPlan for Estimated {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.inner.execute(partition, context)
    }

    fn reset_state(self: Arc<Self>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self.rewrap(self.inner.clone().reset_state()?))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    /// Filters offered to the scan go to the scan it wraps (a join's
    /// dynamic filter, [`super::events`]), and so does what it makes of
    /// them.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let mut result =
            self.inner
                .handle_child_pushdown_result(phase, child_pushdown_result, config)?;
        result.updated_node = result.updated_node.map(|inner| self.rewrap(inner));
        Ok(result)
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let schema = self.schema();
        let mut stats = Statistics::new_unknown(&schema);
        if let (None, Some(rows)) = (args.partition(), self.rows) {
            stats.num_rows = Precision::Inexact(rows);
            stats.total_byte_size = Precision::Inexact(rows.saturating_mul(row_bytes(&schema)));
        }
        Ok(Arc::new(stats))
    }
}
