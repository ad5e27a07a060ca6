//! Rows built from the leaves: what the columns of the sidecar do not hold
//! (`id`, `data`), the entries past its last chunk, and chunks whose file
//! is damaged. Each leaf is read in place ([`LeafView`]): its fields are
//! borrowed from the line and `data` is copied as the leaf's canonical
//! text, never built into a JSON tree and printed again.

use std::sync::Arc;

use annal_store::columns::{app_of_data, has_app};
use annal_store::leaf_view::LeafView;
use annal_store::RawLeaf;
use datafusion::arrow::array::{
    ArrayRef, RecordBatch, StringBuilder, TimestampMicrosecondBuilder, UInt64Builder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use tokio::sync::mpsc::Sender;

use crate::events::EventFilter;
use crate::tables::pushdown::EventBounds;

/// Rows per Arrow batch.
const BATCH_ROWS: usize = 8192;

/// A scan of leaves as the bounds ask for it: their filter with the scan's
/// limit (`None`: a type no event has, so nothing to read), the types and
/// bytes a leaf must have, and the projected columns (positions in the
/// `events` schema) with their schema.
pub(super) struct LeafScan {
    pub(super) filter: Option<EventFilter>,
    types: Option<Vec<String>>,
    needles: Vec<Vec<u8>>,
    columns: Vec<usize>,
    schema: SchemaRef,
}

impl LeafScan {
    pub(super) fn new(
        bounds: &EventBounds,
        limit: Option<usize>,
        columns: Vec<usize>,
        schema: &SchemaRef,
    ) -> LeafScan {
        LeafScan {
            filter: bounds.to_filter().map(|mut f| {
                f.limit = limit;
                f
            }),
            types: bounds.possible_types(),
            needles: bounds.needles.clone(),
            columns,
            schema: schema.clone(),
        }
    }

    /// Sends the rows of the `leaves` this scan keeps (see [`send`]), with
    /// its `filter`.
    pub(super) fn send(
        &self,
        leaves: impl Iterator<Item = std::result::Result<RawLeaf, annal_store::StoreError>>,
        filter: &EventFilter,
        tx: &Sender<Result<RecordBatch>>,
    ) -> bool {
        let needles: Vec<_> = self
            .needles
            .iter()
            .map(memchr::memmem::Finder::new)
            .collect();
        let types = self.types.as_deref();
        send(
            leaves,
            filter,
            types,
            &needles,
            &self.columns,
            &self.schema,
            tx,
        )
    }
}

/// Sends the rows of the `leaves` that `filter` selects, whose type is one
/// of `types` (when given) and that contain every one of `needles` (at
/// most its limit), in batches of `schema` (the projected `columns`);
/// false once the consumer is gone or a read failed.
fn send(
    leaves: impl Iterator<Item = std::result::Result<RawLeaf, annal_store::StoreError>>,
    filter: &EventFilter,
    types: Option<&[String]>,
    needles: &[memchr::memmem::Finder<'_>],
    columns: &[usize],
    schema: &SchemaRef,
    tx: &Sender<Result<RecordBatch>>,
) -> bool {
    let fail = |e: annal_store::StoreError| {
        let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
        false
    };
    let mut batch = Rows::new(columns);
    let mut sent = 0usize;
    for leaf in leaves {
        if filter.limit.is_some_and(|n| sent >= n) {
            break;
        }
        let (_, bytes) = match leaf {
            Ok(l) => l,
            Err(e) => return fail(e),
        };
        // Most leaves a `data` filter rules out are skipped unparsed.
        if !needles.iter().all(|n| n.find(&bytes).is_some()) {
            continue;
        }
        let view = match LeafView::parse(&bytes) {
            Ok(v) => v,
            Err(e) => return fail(e),
        };
        let typed = types.is_none_or(|t| t.iter().any(|t| t == view.event_type.as_str()));
        if !typed || !filter.matches(&view) {
            continue;
        }
        if let Err(e) = batch.push(&view) {
            return fail(e);
        }
        sent += 1;
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

/// One projected column (numbered as in the `events` schema).
enum Column {
    Index(UInt64Builder),
    Time(TimestampMicrosecondBuilder, bool),
    Text(StringBuilder, usize),
}

impl Rows {
    fn new(columns: &[usize]) -> Rows {
        let columns = columns
            .iter()
            .map(|&c| match c {
                0 => Column::Index(UInt64Builder::with_capacity(BATCH_ROWS)),
                1 | 2 => Column::Time(
                    TimestampMicrosecondBuilder::with_capacity(BATCH_ROWS),
                    c == 1,
                ),
                c => Column::Text(StringBuilder::new(), c),
            })
            .collect();
        Rows { columns, len: 0 }
    }

    fn push(&mut self, v: &LeafView<'_>) -> std::result::Result<(), annal_store::StoreError> {
        for c in &mut self.columns {
            match c {
                Column::Index(b) => b.append_value(v.index),
                Column::Time(b, recorded) => b.append_value(match recorded {
                    true => v.recorded_at.unix_micros(),
                    false => v.time.unix_micros(),
                }),
                Column::Text(b, n) => {
                    let a = &v.actor;
                    match n {
                        3 => b.append_value(v.event_type.as_str()),
                        4 => b.append_option(v.cluster.as_deref()),
                        5 => b.append_value(&v.id),
                        6 => b.append_option(v.source.as_deref()),
                        7 => b.append_option(a.principal.as_deref()),
                        8 => b.append_option(a.impersonated.as_deref()),
                        9 => b.append_option(a.field_manager.as_deref()),
                        10 => b.append_option(a.controller.as_deref()),
                        11 => b.append_option(a.credential.as_deref()),
                        12 => b.append_option(app(v)?),
                        _ => b.append_value(v.data),
                    }
                }
            }
        }
        self.len += 1;
        Ok(())
    }

    /// The batch as `schema` (the envelope's strings as the views it
    /// names, `id` and `data` as built).
    fn finish(self, schema: &SchemaRef) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .into_iter()
            .zip(schema.fields())
            .map(|(c, field)| -> Result<ArrayRef> {
                Ok(match c {
                    Column::Index(mut b) => Arc::new(b.finish()),
                    Column::Time(mut b, _) => Arc::new(b.finish().with_timezone("UTC")),
                    Column::Text(mut b, _) => cast(&b.finish(), field.data_type())?,
                })
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let options =
            datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(self.len));
        Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            arrays,
            &options,
        )?)
    }
}

/// The `app` column: `data.app` of the types that have one (their `data`
/// is parsed for it; no other type's is).
fn app(v: &LeafView<'_>) -> std::result::Result<Option<String>, annal_store::StoreError> {
    if !has_app(v.event_type) {
        return Ok(None);
    }
    let data: serde_json::Value = serde_json::from_str(v.data)
        .map_err(|e| annal_store::StoreError::Corrupt(format!("leaf {}: data: {e}", v.index)))?;
    Ok(app_of_data(v.event_type, &data))
}
