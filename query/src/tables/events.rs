//! The `events` table: every entry of the log, one row each.
//!
//! Scans run on a blocking thread that reads the store and sends Arrow
//! batches through a two-slot channel, so a scan of the whole log holds two
//! batches in memory, never the log. Only projected columns are built (the
//! `data` JSON text is the expensive one). Filters on `cluster`, `type`,
//! `time` and `index` narrow what is read ([`crate::pushdown`]), through the
//! same [`crate::events::select`] the CLI lists events with.

use std::sync::Arc;

use annal_store::{Entry, Store};
use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, RecordBatch, StringBuilder, TimestampMicrosecondBuilder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};

use crate::pushdown::EventBounds;

/// Rows per Arrow batch.
const BATCH_ROWS: usize = 8192;

/// The `events` table over a store.
pub struct EventsTable {
    store: Arc<Store>,
    schema: SchemaRef,
}

impl std::fmt::Debug for EventsTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsTable").finish_non_exhaustive()
    }
}

impl EventsTable {
    /// The table over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        EventsTable {
            store,
            schema: events_schema(),
        }
    }
}

/// The columns, in order.
pub fn events_schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    Arc::new(Schema::new(vec![
        Field::new("index", DataType::UInt64, false),
        Field::new("recorded_at", ts(), false),
        Field::new("time", ts(), false),
        Field::new("type", DataType::Utf8, false),
        Field::new("cluster", DataType::Utf8, true),
        Field::new("id", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, true),
        Field::new("principal", DataType::Utf8, true),
        Field::new("impersonated", DataType::Utf8, true),
        Field::new("field_manager", DataType::Utf8, true),
        Field::new("controller", DataType::Utf8, true),
        Field::new("credential", DataType::Utf8, true),
        Field::new("data", DataType::Utf8, false),
    ]))
}

#[async_trait]
impl TableProvider for EventsTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if EventBounds::understands(f) {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        let partition = EventScan {
            store: self.store.clone(),
            bounds: EventBounds::from_filters(filters),
            columns,
            schema: schema.clone(),
            limit,
        };
        Ok(Arc::new(StreamingTableExec::try_new(
            schema,
            vec![Arc::new(partition)],
            None,
            vec![],
            false,
            limit,
        )?))
    }
}

/// One scan of the events table.
struct EventScan {
    store: Arc<Store>,
    bounds: EventBounds,
    columns: Vec<usize>,
    schema: SchemaRef,
    limit: Option<usize>,
}

impl std::fmt::Debug for EventScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventScan")
            .field("bounds", &self.bounds)
            .field("columns", &self.columns)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl PartitionStream for EventScan {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let store = self.store.clone();
        let filter = self.bounds.to_filter().map(|mut f| {
            f.limit = self.limit;
            f
        });
        let columns = self.columns.clone();
        let schema = self.schema.clone();
        super::stream::blocking(self.schema.clone(), move |tx| {
            let Some(filter) = filter else {
                return; // a type no event has
            };
            let mut batch = Rows::new(&columns);
            for entry in crate::events::select(&store, &filter) {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
                        return;
                    }
                };
                batch.push(&entry);
                if batch.len == BATCH_ROWS {
                    let full = std::mem::replace(&mut batch, Rows::new(&columns));
                    if tx.blocking_send(full.finish(&schema)).is_err() {
                        return;
                    }
                }
            }
            if batch.len > 0 {
                let _ = tx.blocking_send(batch.finish(&schema));
            }
        })
    }
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
