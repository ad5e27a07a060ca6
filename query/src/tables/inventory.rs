//! `inventory_at(valid_time [, known_at])`: the objects live at an instant,
//! with their owners, as the ledger knew it at `known_at` (default: now).
//!
//! ```sql
//! SELECT cluster, kind, namespace, name, owner, conflict
//! FROM inventory_at('2026-11-01T10:00:00Z', 'now-1d')
//! WHERE cluster = 'prod-eu1-a' AND array_has(claims, 'argocd:guestbook')
//! ```
//!
//! The function binds its instants when the query is planned (so `now-2h`
//! means two hours before planning, and the log prefix the answer reads is
//! fixed then); `cluster = '…'` filters are pushed down to the per-cluster
//! version files.

use std::sync::Arc;

use annal_store::Store;
use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::cluster_scan;
use super::object_batch::{self, Batch, ObjectRow, Shape};
use crate::asof::inventory::{self, AsOf, Listings, Order};

/// The `inventory_at` table function.
#[derive(Clone)]
pub struct InventoryAt {
    store: Arc<Store>,
}

impl std::fmt::Debug for InventoryAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InventoryAt").finish_non_exhaustive()
    }
}

impl InventoryAt {
    /// The function over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        InventoryAt { store }
    }
}

impl TableFunctionImpl for InventoryAt {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let as_of = super::args::as_of("inventory_at", args.exprs(), &self.store)?;
        Ok(Arc::new(InventoryTable {
            store: self.store.clone(),
            as_of,
            schema: object_batch::schema(Shape::Live),
        }))
    }
}

/// `inventory_at` bound to its instants.
pub struct InventoryTable {
    store: Arc<Store>,
    as_of: AsOf,
    schema: SchemaRef,
}

impl std::fmt::Debug for InventoryTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InventoryTable")
            .field("as_of", &self.as_of)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TableProvider for InventoryTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(cluster_scan::pushdown(filters))
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
        let projected = Arc::new(self.schema.project(&columns)?);
        let as_of = self.as_of;
        let listings = Arc::new(std::sync::OnceLock::new());
        let out = projected.clone();
        let produce: cluster_scan::Producer = Arc::new(move |store: &Store, cluster: &str| {
            // App inventories are read once per scan, on the first cluster.
            let listings = match listings.get() {
                Some(l) => l,
                None => {
                    let l = Listings::at(store, &as_of)?;
                    listings.get_or_init(|| l)
                }
            };
            let mut batch = Batch::new(Shape::Live, &columns);
            inventory::each_live(store, cluster, &as_of, listings, Order::Index, |live| {
                batch.push(&ObjectRow::of_version(
                    live.cluster,
                    live.object,
                    live.row,
                    &live.details,
                    &live.owners,
                ));
                Ok(())
            })?;
            Ok(vec![batch.finish(&columns, &out)?])
        });
        cluster_scan::plan(
            self.store.clone(),
            projected,
            filters,
            limit,
            state.config().target_partitions(),
            produce,
        )
    }
}
