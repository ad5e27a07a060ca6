//! The store's column sidecar as a table of its own: every entry's
//! top-level fields and its `app.sync` fields, always read from the chunks
//! (and the leaves past them). Not registered under a name: the `syncs`
//! view ([`crate::tables::syncs`]) is built on it.

use std::sync::Arc;

use annal_store::Store;
use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::StreamingTableExec;
use datafusion::physical_plan::ExecutionPlan;

use super::chunks::ChunkScan;
use crate::tables::estimated::Estimated;
use crate::tables::pushdown::EventBounds;

/// Every sidecar column ([`annal_store::columns::COLUMNS`]) of every entry.
pub(crate) struct SidecarTable {
    store: Arc<Store>,
    schema: SchemaRef,
}

impl std::fmt::Debug for SidecarTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SidecarTable").finish_non_exhaustive()
    }
}

impl SidecarTable {
    pub(crate) fn new(store: Arc<Store>) -> SidecarTable {
        SidecarTable {
            store,
            schema: annal_store::columns::read_schema(),
        }
    }
}

#[async_trait]
impl TableProvider for SidecarTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The envelope's columns keep the `events` table's names, so the
    /// same bounds skip chunks (and are applied again above the scan).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(EventBounds::pushdown(filters))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        let bounds = EventBounds::from_filters(filters);
        let parts = state.config().target_partitions().max(1);
        let scan = ChunkScan::new(self.store.clone(), columns, &schema, &bounds, parts)?;
        let rows = scan.matching() + scan.tail();
        let exec =
            StreamingTableExec::try_new(schema, scan.partitions(), None, vec![], false, limit)?;
        Ok(Estimated::wrap(Arc::new(exec), rows))
    }
}
