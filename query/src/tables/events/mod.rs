//! The `events` table: every entry of the log, one row each.
//!
//! A scan reads one of two ways. When it asks only for the envelope's
//! top-level fields, it reads the store's columnar sidecar (Parquet chunks,
//! [`annal_store::columns`]), skipping chunks whose time ranges and
//! cluster/type counts rule them out, and decodes only the entries past
//! the last chunk ([`chunks`]); a hash join that probes it narrows it
//! further while the query runs, to the keys its build side holds
//! ([`narrowed`]) and, for a range condition on time, to the rows past
//! each key's floor ([`floors`]). When it needs `id` or `data`, or when a
//! `cluster`/`type` filter matches few rows, it reads the entries through
//! the store's indexes ([`crate::events::select_leaves`], as the CLI lists
//! events) and decodes them ([`leaf_rows`]), unless it names an object:
//! then the chunks' name hashes choose the leaves to read ([`named`]).
//! Either way the scan runs on blocking threads that send Arrow batches
//! through two-slot channels, so memory holds a few batches, never the log.

mod chunks;
pub(crate) mod floors;
mod leaf_rows;
mod named;
mod narrowed;
pub(crate) mod sidecar;

use std::sync::Arc;

use annal_store::columns::COLUMNS;
use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;

use super::adapter::{Scan, Source, Table};
use super::estimated::Estimated;
use super::stream::Partition;
use crate::tables::pushdown::EventBounds;
use chunks::ChunkScan;

/// A `cluster`/`type` filter is read through the indexes when the chunks
/// that hold it say it matches fewer than one row in this many: decoding a
/// leaf costs about that many column values. Measured on the 1M bench
/// ledger: at 64, one cluster of 100 went through the index (30 ms for
/// credentials-after-t), at 256 through the chunks (10 ms).
const INDEX_SELECTIVITY: u64 = 256;

/// The `events` table over a store.
pub type EventsTable = Table<Events>;

impl EventsTable {
    /// The table over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Table::of(Events {
            store,
            schema: events_schema(),
        })
    }
}

/// What is particular to the `events` table.
pub struct Events {
    store: Arc<Store>,
    schema: SchemaRef,
}

/// The columns, in order.
///
/// The envelope's strings are `Utf8View`, the type the sidecar's chunks
/// give them ([`annal_store::columns::read_schema`]: views into each
/// page's dictionary, not copies); `id` and `data`, which only the leaves
/// hold, are plain `Utf8`. SQL sees text either way.
pub fn events_schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8View, nullable);
    Arc::new(Schema::new(vec![
        Field::new("index", DataType::UInt64, false),
        Field::new("recorded_at", ts(), false),
        Field::new("time", ts(), false),
        text("type", false),
        text("cluster", true),
        Field::new("id", DataType::Utf8, false),
        text("source", true),
        text("principal", true),
        text("impersonated", true),
        text("field_manager", true),
        text("controller", true),
        text("credential", true),
        text("app", true),
        Field::new("data", DataType::Utf8, false),
    ]))
}

impl Source for Events {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn pushdown(&self, filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        EventBounds::pushdown(filters)
    }

    fn scan(&self, scan: Scan<'_>) -> Result<Arc<dyn ExecutionPlan>> {
        let Scan {
            columns,
            schema,
            filters,
            limit,
            partitions: parts,
        } = scan;
        let bounds = EventBounds::from_filters(filters);
        let names = self.schema.fields();
        // Where each column is in the sidecar (`None`: `id` or `data`,
        // which only the leaves have).
        let sidecar: Option<Vec<usize>> = columns
            .iter()
            .map(|&c| COLUMNS.iter().position(|n| *n == names[c].name()))
            .collect();
        let chunks = ChunkScan::new(
            self.store.clone(),
            sidecar.clone().unwrap_or_default(),
            &schema,
            &bounds,
            parts,
        )?;
        let through_chunks = sidecar.is_some()
            && limit.is_none() // the leaves stop at the limit
            && chunks.covered > 0 // no chunk yet: the leaves either way
            // The chunks left are read whole; through the indexes, only
            // the matching entries are decoded (the tail either way).
            && ((bounds.cluster.is_none() && bounds.event_type.is_none())
                || chunks.matching_in_indexes().saturating_mul(INDEX_SELECTIVITY) >= chunks.rows());
        // A scan that needs the leaves of one object's entries reads the
        // ones the chunks' name hashes choose.
        let named = sidecar.is_none() && bounds.name.is_some() && chunks.covered > 0;
        let tail = chunks.tail();
        let (partitions, rows): (Vec<Arc<dyn PartitionStream>>, u64) = match through_chunks {
            _ if named => {
                let rows = chunks.matching() + tail;
                (chunks.named_partitions(&columns, limit), rows)
            }
            true => {
                // Chunk reads keep only the rows the bounds match, and
                // those a join's build side allows ([`narrowed`]).
                let rows = chunks.matching() + tail;
                let exec = narrowed::ChunkScanExec::new(schema, chunks.parts());
                return Ok(Estimated::wrap(Arc::new(exec), rows));
            }
            false => {
                let rows = match chunks.covered {
                    0 => self.store.size(),
                    _ => chunks.matching_in_indexes() + tail,
                };
                (
                    vec![indexed(&self.store, bounds, columns, &schema, limit)],
                    rows,
                )
            }
        };
        let rows = limit.map_or(rows, |l| rows.min(l as u64));
        let exec = StreamingTableExec::try_new(schema, partitions, None, vec![], false, limit)?;
        Ok(Estimated::wrap(Arc::new(exec), rows))
    }
}

/// A scan of the leaves through the store's indexes, as one partition.
fn indexed(
    store: &Arc<Store>,
    bounds: EventBounds,
    columns: Vec<usize>,
    schema: &SchemaRef,
    limit: Option<usize>,
) -> Arc<dyn PartitionStream> {
    let label =
        format!("EventScan {{ bounds: {bounds:?}, columns: {columns:?}, limit: {limit:?} }}");
    let store = store.clone();
    let scan = leaf_rows::LeafScan::new(&bounds, limit, columns, schema);
    Partition::of(schema.clone(), label, move |tx| {
        let Some(filter) = &scan.filter else {
            return; // a type no event has
        };
        scan.send(crate::events::select_leaves(&store, filter), filter, tx);
    })
}
