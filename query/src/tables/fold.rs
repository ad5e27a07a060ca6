//! Tables whose rows are folded from events (registry versions, last-good
//! intervals, field managers): a producer emits rows as JSON values, which
//! become Arrow batches of the table's schema through arrow's JSON decoder.
//!
//! The producer runs on a blocking thread and rows leave in batches through
//! a two-slot channel, so a large table streams. `cluster = '…'` filters are
//! handed to the producer (Inexact: DataFusion still applies them).

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::ReaderBuilder;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::datasource::TableProvider;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::StreamingTableExec;
use datafusion::physical_plan::ExecutionPlan;
use serde_json::Value;
use tokio::sync::mpsc::Sender;

use super::adapter::{Scan, Source, Table};
use super::args::AsOfFunction;
use super::stream::Partition;
use crate::asof::inventory::AsOf;
use crate::tables::pushdown::EventBounds;
use crate::QueryError;

const BATCH_ROWS: usize = 8192;

/// Emits the rows of a table (for one cluster when given); the sink
/// returns false when nobody reads any more.
pub(crate) type Producer = Arc<
    dyn Fn(&Store, Option<&str>, &mut dyn FnMut(Value) -> bool) -> Result<(), QueryError>
        + Send
        + Sync,
>;

/// A table over a producer.
pub(crate) type FoldTable = Table<Fold>;

impl FoldTable {
    pub(crate) fn new(store: Arc<Store>, schema: SchemaRef, produce: Producer) -> Self {
        Table::of(Fold {
            store,
            schema,
            produce,
        })
    }
}

/// What is particular to a folded table: its producer.
pub(crate) struct Fold {
    store: Arc<Store>,
    schema: SchemaRef,
    produce: Producer,
}

impl Source for Fold {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn pushdown(&self, filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        super::cluster_scan::pushdown(filters)
    }

    fn scan(&self, scan: Scan<'_>) -> Result<Arc<dyn ExecutionPlan>> {
        let cluster = EventBounds::from_filters(scan.filters).cluster;
        let label = format!("FoldScan {{ cluster: {cluster:?} }}");
        let (store, full, produce) = (
            self.store.clone(),
            self.schema.clone(),
            self.produce.clone(),
        );
        let columns = scan.columns;
        let partition = Partition::of(scan.schema.clone(), label, move |tx| {
            send_rows(&store, &full, &columns, cluster.as_deref(), &produce, tx)
        });
        Ok(Arc::new(StreamingTableExec::try_new(
            scan.schema,
            vec![partition],
            None,
            vec![],
            false,
            scan.limit,
        )?))
    }
}

/// Sends the rows `produce` emits (for `cluster` when given) in batches of
/// [`BATCH_ROWS`], projected to `columns` of `full`; stops when nobody
/// reads any more, and ends with the producer's error if it fails.
fn send_rows(
    store: &Store,
    full: &SchemaRef,
    columns: &[usize],
    cluster: Option<&str>,
    produce: &Producer,
    tx: &Sender<Result<RecordBatch>>,
) {
    let mut rows = Vec::with_capacity(BATCH_ROWS);
    let send = |rows: &mut Vec<Value>| -> bool {
        let batch = to_batch(full, rows).and_then(|b| Ok(b.project(columns)?));
        rows.clear();
        tx.blocking_send(batch).is_ok()
    };
    let mut open = true;
    let result = produce(store, cluster, &mut |row| {
        rows.push(row);
        if rows.len() == BATCH_ROWS {
            open = send(&mut rows);
        }
        open
    });
    match result {
        Err(e) => {
            let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
        }
        Ok(()) if open && !rows.is_empty() => {
            send(&mut rows);
        }
        Ok(()) => {}
    }
}

/// JSON rows to one batch of `schema` (timestamps as RFC 3339 text, lists
/// as arrays).
fn to_batch(schema: &SchemaRef, rows: &[Value]) -> Result<RecordBatch> {
    let mut decoder = ReaderBuilder::new(schema.clone())
        .with_batch_size(rows.len().max(1))
        .build_decoder()?;
    decoder.serialize(rows)?;
    Ok(decoder
        .flush()?
        .unwrap_or_else(|| RecordBatch::new_empty(schema.clone())))
}

/// An as-of table function over a fold: `name(valid_time [, known_at])`,
/// whose rows `bind` produces for the instants given.
pub(crate) fn function(
    name: &'static str,
    store: Arc<Store>,
    schema: SchemaRef,
    bind: fn(AsOf) -> Producer,
) -> AsOfFunction {
    AsOfFunction::new(
        name,
        store,
        Box::new(move |store, as_of| {
            Arc::new(FoldTable::new(store.clone(), schema.clone(), bind(as_of)))
        }),
    )
}

/// A table function over a fold whose arguments are not an instant pair:
/// `bind` checks them (a plan error names the problem) and returns the
/// producer of the rows (`inventory_diff`, `drift`, `object_history`).
pub(crate) struct FoldFunction {
    name: &'static str,
    store: Arc<Store>,
    schema: SchemaRef,
    bind: fn(&Store, &[Expr]) -> Result<Producer>,
}

impl FoldFunction {
    pub(crate) fn new(
        name: &'static str,
        store: Arc<Store>,
        schema: SchemaRef,
        bind: fn(&Store, &[Expr]) -> Result<Producer>,
    ) -> Self {
        FoldFunction {
            name,
            store,
            schema,
            bind,
        }
    }
}

impl std::fmt::Debug for FoldFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl TableFunctionImpl for FoldFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let produce = (self.bind)(&self.store, args.exprs())?;
        Ok(Arc::new(FoldTable::new(
            self.store.clone(),
            self.schema.clone(),
            produce,
        )))
    }
}
