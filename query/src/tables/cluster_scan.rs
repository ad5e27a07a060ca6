//! A scan that produces one cluster at a time on blocking threads.
//!
//! The object tables answer per cluster (the version index keeps each
//! cluster's files apart), so a scan splits the clusters asked for across
//! the session's target partitions (clusters are independent, so every
//! core works; dealt as DataFusion would hash them, see [`plan`]), and
//! each partition builds one cluster's rows at a time and
//! sends them through a two-slot channel: memory holds a few clusters'
//! answers, never the fleet's versions.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{Partitioning, PhysicalExpr};
use datafusion::physical_plan::metrics::Time;
use datafusion::physical_plan::repartition::BatchPartitioner;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use tokio::sync::mpsc::Sender;

use super::adapter::Scan;
use super::estimated::Estimated;
use super::stream::Partition;

use crate::tables::pushdown::EventBounds;
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
///
/// When the scan gives `cluster`, each cluster goes to the partition
/// DataFusion's hash repartitioning would send its rows to, and the plan
/// says so (`Hash([cluster], n)`): an aggregate grouped by cluster then
/// runs in one stage, each partition's groups final, instead of a partial
/// stage, a repartition and a final one that merges them again (for
/// `count(DISTINCT name)` per cluster, the final stage inserted every
/// distinct name a second time: a third of objects-changed-on-day). Since
/// the partitions are DataFusion's own, a join with a side it repartitions
/// on `cluster` meets the same clusters in the same partitions.
pub(crate) fn plan(
    store: Arc<Store>,
    scan: Scan<'_>,
    produce: Producer,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Scan {
        schema,
        filters,
        limit,
        partitions,
        ..
    } = scan;
    let clusters = match EventBounds::from_filters(filters).cluster {
        Some(c) => vec![c],
        None => store
            .version_clusters()
            .map_err(|e| DataFusionError::External(Box::new(QueryError::from(e))))?,
    };
    let hashed = by_hash(&clusters, &schema, partitions.max(1))?;
    let (dealt, partitioning) = match hashed {
        Some((dealt, partitioning)) => (dealt, Some(partitioning)),
        None => {
            let n = partitions.clamp(1, clusters.len().max(1));
            let dealt = (0..n)
                .map(|p| clusters.iter().skip(p).step_by(n).cloned().collect())
                .collect();
            (dealt, None)
        }
    };
    let parts: Vec<Arc<dyn PartitionStream>> = dealt
        .into_iter()
        .map(|clusters| {
            let label = format!("ClusterScan {{ clusters: {} }}", clusters.len());
            let (store, produce) = (store.clone(), produce.clone());
            Partition::of(schema.clone(), label, move |tx| {
                send_clusters(&store, &clusters, &produce, tx)
            })
        })
        .collect();
    let scan = Arc::new(StreamingTableExec::try_new(
        schema,
        parts,
        None,
        vec![],
        false,
        limit,
    )?);
    Ok(match partitioning {
        Some(p) => Estimated::partitioned(scan, p),
        None => scan,
    })
}

/// The clusters each of `n` partitions reads, as DataFusion's hash
/// repartitioning on `cluster` would deal them, and that partitioning;
/// `None` when `schema` gives no text `cluster`.
#[allow(clippy::type_complexity)]
fn by_hash(
    clusters: &[String],
    schema: &SchemaRef,
    n: usize,
) -> Result<Option<(Vec<Vec<String>>, Partitioning)>> {
    let Ok(at) = schema.index_of("cluster") else {
        return Ok(None);
    };
    let kind = schema.field(at).data_type().clone();
    if !matches!(kind, DataType::Utf8 | DataType::Utf8View) {
        return Ok(None);
    }
    let names: ArrayRef = Arc::new(StringArray::from(clusters.to_vec()));
    let names = cast(&names, &kind)?;
    let one = Arc::new(Schema::new(vec![Field::new("cluster", kind, true)]));
    let batch = RecordBatch::try_new(one, vec![names])?;
    let column = || Arc::new(Column::new("cluster", 0)) as Arc<dyn PhysicalExpr>;
    let mut partitioner = BatchPartitioner::new_hash_partitioner(vec![column()], n, Time::new())?;
    let mut dealt: Vec<Vec<String>> = vec![Vec::new(); n];
    partitioner.partition(batch, |p, b| {
        let names = cast(b.column(0), &DataType::Utf8)?;
        let names = names.as_string::<i32>();
        let part = dealt
            .get_mut(p)
            .ok_or_else(|| DataFusionError::Internal(format!("no partition {p} of {n}")))?;
        part.extend(names.iter().flatten().map(str::to_string));
        Ok(())
    })?;
    let on = Arc::new(Column::new("cluster", at)) as Arc<dyn PhysicalExpr>;
    Ok(Some((dealt, Partitioning::Hash(vec![on], n))))
}

/// Sends the batches of `clusters`, one cluster at a time, sliced to
/// [`BATCH_ROWS`]; a failing cluster ends the partition with its error.
fn send_clusters(
    store: &Store,
    clusters: &[String],
    produce: &Producer,
    tx: &Sender<Result<RecordBatch>>,
) {
    let fail = |e: QueryError| {
        let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
    };
    for cluster in clusters {
        let batches = match produce(store, cluster) {
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
}
