//! Scans that read the store on a blocking thread.
//!
//! The store's reads are synchronous, so each scan runs its reader on a
//! blocking thread that sends Arrow batches through a two-slot channel: a
//! scan holds two batches in memory, whatever it reads, and stops reading
//! when the consumer goes away (a send fails).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::SendableRecordBatchStream;
use tokio::sync::mpsc::Sender;

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
