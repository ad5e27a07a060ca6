//! A scan that produces one cluster at a time on blocking threads.
//!
//! The object tables answer per cluster (the version index keeps each
//! cluster's files apart), so a scan splits the clusters asked for across
//! the session's target partitions (clusters are independent, so every
//! core works), and each partition builds one cluster's rows at a time and
//! sends them through a two-slot channel: memory holds a few clusters'
//! answers, never the fleet's versions.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};

use crate::pushdown::EventBounds;
use crate::QueryError;

/// Rows per Arrow batch.
const BATCH_ROWS: usize = 8192;

/// Builds the batches of one cluster (projected to the scan's schema).
pub(crate) type Producer =
    Arc<dyn Fn(&Store, &str) -> std::result::Result<Vec<RecordBatch>, QueryError> + Send + Sync>;

/// `cluster = '…'` is pushed down (Inexact: DataFusion still checks it).
pub(crate) fn pushdown(filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| {
            if EventBounds::from_filters(std::slice::from_ref(*f))
                .cluster
                .is_some()
            {
                TableProviderFilterPushDown::Inexact
            } else {
                TableProviderFilterPushDown::Unsupported
            }
        })
        .collect()
}

/// The plan of one scan over the clusters the filters allow, in up to
/// `partitions` partitions. The cluster list is fixed here, when the query
/// is planned, like the log prefix the answer reads.
pub(crate) fn plan(
    store: Arc<Store>,
    schema: SchemaRef,
    filters: &[Expr],
    limit: Option<usize>,
    partitions: usize,
    produce: Producer,
) -> Result<Arc<dyn ExecutionPlan>> {
    let clusters = match EventBounds::from_filters(filters).cluster {
        Some(c) => vec![c],
        None => store
            .version_clusters()
            .map_err(|e| DataFusionError::External(Box::new(QueryError::from(e))))?,
    };
    let n = partitions.clamp(1, clusters.len().max(1));
    let parts: Vec<Arc<dyn PartitionStream>> = (0..n)
        .map(|p| {
            Arc::new(ClusterScan {
                store: store.clone(),
                clusters: clusters.iter().skip(p).step_by(n).cloned().collect(),
                schema: schema.clone(),
                produce: produce.clone(),
            }) as Arc<dyn PartitionStream>
        })
        .collect();
    Ok(Arc::new(StreamingTableExec::try_new(
        schema,
        parts,
        None,
        vec![],
        false,
        limit,
    )?))
}

/// One partition: its share of the clusters.
struct ClusterScan {
    store: Arc<Store>,
    clusters: Vec<String>,
    schema: SchemaRef,
    produce: Producer,
}

impl std::fmt::Debug for ClusterScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterScan")
            .field("clusters", &self.clusters.len())
            .finish_non_exhaustive()
    }
}

impl PartitionStream for ClusterScan {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let store = self.store.clone();
        let clusters = self.clusters.clone();
        let produce = self.produce.clone();
        super::stream::blocking(self.schema.clone(), move |tx| {
            let fail = |e: QueryError| {
                let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
            };
            for cluster in clusters {
                let batches = match produce(&store, &cluster) {
                    Ok(b) => b,
                    Err(e) => return fail(e),
                };
                for batch in batches {
                    let mut offset = 0;
                    while offset < batch.num_rows() {
                        let len = BATCH_ROWS.min(batch.num_rows() - offset);
                        if tx.blocking_send(Ok(batch.slice(offset, len))).is_err() {
                            return;
                        }
                        offset += len;
                    }
                }
            }
        })
    }
}
