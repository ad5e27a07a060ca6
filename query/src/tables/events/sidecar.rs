//! The store's column sidecar as a table of its own: every entry's
//! top-level fields and its `app.sync` fields, always read from the chunks
//! (and the leaves past them). Not registered under a name: the `syncs`
//! view ([`crate::tables::syncs`]) is built on it.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::StreamingTableExec;
use datafusion::physical_plan::ExecutionPlan;

use super::chunks::ChunkScan;
use crate::tables::adapter::{Scan, Source, Table};
use crate::tables::estimated::Estimated;
use crate::tables::pushdown::EventBounds;

/// Every sidecar column ([`annal_store::columns::COLUMNS`]) of every entry.
pub(crate) fn table(store: Arc<Store>) -> Table<Sidecar> {
    Table::of(Sidecar {
        store,
        schema: annal_store::columns::read_schema(),
    })
}

/// What is particular to the sidecar's table.
pub(crate) struct Sidecar {
    store: Arc<Store>,
    schema: SchemaRef,
}

impl Source for Sidecar {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The envelope's columns keep the `events` table's names, so the
    /// same bounds skip chunks (and are applied again above the scan).
    fn pushdown(&self, filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        EventBounds::pushdown(filters)
    }

    fn scan(&self, scan: Scan<'_>) -> Result<Arc<dyn ExecutionPlan>> {
        let bounds = EventBounds::from_filters(scan.filters);
        let chunks = ChunkScan::new(
            self.store.clone(),
            scan.columns,
            &scan.schema,
            &bounds,
            scan.partitions,
        )?;
        let rows = chunks.matching() + chunks.tail();
        let exec = StreamingTableExec::try_new(
            scan.schema,
            chunks.partitions(),
            None,
            vec![],
            false,
            scan.limit,
        )?;
        Ok(Estimated::wrap(Arc::new(exec), rows))
    }
}
