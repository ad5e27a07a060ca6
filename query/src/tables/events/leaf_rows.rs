//! Rows built from decoded entries: what the columns of the sidecar do
//! not hold (`id`, `data`), the entries past its last chunk, and chunks
//! whose file is damaged.

use std::sync::Arc;

use annal_store::columns::app_of;
use annal_store::Entry;
use datafusion::arrow::array::{
    ArrayRef, RecordBatch, StringBuilder, TimestampMicrosecondBuilder, UInt64Builder,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use tokio::sync::mpsc::Sender;

/// Rows per Arrow batch.
const BATCH_ROWS: usize = 8192;

/// Sends the rows of `entries` in batches of `schema` (the projected
/// `columns`); false once the consumer is gone or a read failed.
pub(super) fn send(
    entries: impl Iterator<Item = std::result::Result<Entry, annal_store::StoreError>>,
    columns: &[usize],
    schema: &SchemaRef,
    tx: &Sender<Result<RecordBatch>>,
) -> bool {
    let mut batch = Rows::new(columns);
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
                return false;
            }
        };
        batch.push(&entry);
        if batch.len == BATCH_ROWS {
            let full = std::mem::replace(&mut batch, Rows::new(columns));
            if tx.blocking_send(full.finish(schema)).is_err() {
                return false;
            }
        }
    }
    batch.len == 0 || tx.blocking_send(batch.finish(schema)).is_ok()
}

/// Column builders for the projected columns of one batch.
struct Rows {
    columns: Vec<Column>,
    len: usize,
}

enum Column {
    Index(UInt64Builder),
    Time(TimestampMicrosecondBuilder, fn(&Entry) -> i64),
    Text(StringBuilder, fn(&Entry) -> Option<String>),
}

impl Rows {
    fn new(columns: &[usize]) -> Rows {
        let columns = columns
            .iter()
            .map(|c| match c {
                0 => Column::Index(UInt64Builder::with_capacity(BATCH_ROWS)),
                1 => Column::Time(ts_builder(), |e| e.recorded_at.unix_micros()),
                2 => Column::Time(ts_builder(), |e| e.event.time.unix_micros()),
                3 => Column::Text(StringBuilder::new(), |e| {
                    Some(e.event.event_type.as_str().to_string())
                }),
                4 => Column::Text(StringBuilder::new(), |e| e.event.cluster.clone()),
                5 => Column::Text(StringBuilder::new(), |e| Some(e.event.id.clone())),
                6 => Column::Text(StringBuilder::new(), |e| e.event.source.clone()),
                7 => Column::Text(StringBuilder::new(), |e| {
                    e.event.actor.as_ref().and_then(|a| a.principal.clone())
                }),
                8 => Column::Text(StringBuilder::new(), |e| {
                    e.event.actor.as_ref().and_then(|a| a.impersonated.clone())
                }),
                9 => Column::Text(StringBuilder::new(), |e| {
                    e.event.actor.as_ref().and_then(|a| a.field_manager.clone())
                }),
                10 => Column::Text(StringBuilder::new(), |e| {
                    e.event.actor.as_ref().and_then(|a| a.controller.clone())
                }),
                11 => Column::Text(StringBuilder::new(), |e| {
                    e.event.actor.as_ref().and_then(|a| a.credential.clone())
                }),
                12 => Column::Text(StringBuilder::new(), |e| app_of(&e.event)),
                _ => Column::Text(StringBuilder::new(), |e| Some(e.event.data.to_string())),
            })
            .collect();
        Rows { columns, len: 0 }
    }

    fn push(&mut self, e: &Entry) {
        for c in &mut self.columns {
            match c {
                Column::Index(b) => b.append_value(e.index),
                Column::Time(b, f) => b.append_value(f(e)),
                Column::Text(b, f) => b.append_option(f(e)),
            }
        }
        self.len += 1;
    }

    fn finish(self, schema: &SchemaRef) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self
            .columns
            .into_iter()
            .map(|c| -> ArrayRef {
                match c {
                    Column::Index(mut b) => Arc::new(b.finish()),
                    Column::Time(mut b, _) => Arc::new(b.finish().with_timezone("UTC")),
                    Column::Text(mut b, _) => Arc::new(b.finish()),
                }
            })
            .collect();
        let options =
            datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(self.len));
        Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            arrays,
            &options,
        )?)
    }
}

fn ts_builder() -> TimestampMicrosecondBuilder {
    TimestampMicrosecondBuilder::with_capacity(BATCH_ROWS)
}
