//! Scans that read the store on a blocking thread.
//!
//! The store's reads are synchronous, so each scan runs its reader on a
//! blocking thread that sends Arrow batches through a two-slot channel: a
//! scan holds two batches in memory, whatever it reads, and stops reading
//! when the consumer goes away (a send fails). [`Partition`] is the one
//! DataFusion partition of those scans: what differs between them is the
//! job.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use tokio::sync::mpsc::Sender;

/// What a partition runs on its blocking thread: it sends its batches (and
/// stops when a send fails).
pub(crate) type Job = Arc<dyn Fn(&Sender<Result<RecordBatch>>) + Send + Sync>;

/// A partition of a scan whose batches a [`Job`] sends; DataFusion may run
/// it more than once (each run calls the job again).
pub(crate) struct Partition {
    schema: SchemaRef,
    /// What the plan's debug output says of the partition.
    label: String,
    job: Job,
}

impl Partition {
    pub(crate) fn of(
        schema: SchemaRef,
        label: String,
        job: impl Fn(&Sender<Result<RecordBatch>>) + Send + Sync + 'static,
    ) -> Arc<dyn PartitionStream> {
        Arc::new(Partition {
            schema,
            label,
            job: Arc::new(job),
        })
    }
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

impl PartitionStream for Partition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let job = self.job.clone();
        blocking(self.schema.clone(), move |tx| job(&tx))
    }
}

/// The batches `job` sends, as a stream of `schema`.
pub(crate) fn blocking(
    schema: SchemaRef,
    job: impl FnOnce(Sender<Result<RecordBatch>>) + Send + 'static,
) -> SendableRecordBatchStream {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(2);
    tokio::task::spawn_blocking(move || job(tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|batch| (batch, rx))
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}
