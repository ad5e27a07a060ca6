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
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::adapter::{Scan, Source, Table};
use super::args::AsOfFunction;
use super::cluster_scan;
use super::object_batch::{self, Batch, ObjectRow, Shape};
use crate::asof::inventory::{self, AsOf, Listings, Order};

/// The `inventory_at` table function over `store`.
pub(crate) fn function(store: Arc<Store>) -> AsOfFunction {
    AsOfFunction::new(
        "inventory_at",
        store,
        Box::new(|store, as_of| {
            Arc::new(Table::of(Live {
                store: store.clone(),
                as_of,
                schema: object_batch::schema(Shape::Live),
            }))
        }),
    )
}

/// `inventory_at` bound to its instants.
struct Live {
    store: Arc<Store>,
    as_of: AsOf,
    schema: SchemaRef,
}

impl Source for Live {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    fn pushdown(&self, filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        cluster_scan::pushdown(filters)
    }

    fn scan(&self, scan: Scan<'_>) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = scan.columns.clone();
        let as_of = self.as_of;
        let listings = Arc::new(std::sync::OnceLock::new());
        let out = scan.schema.clone();
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
        cluster_scan::plan(self.store.clone(), scan, produce)
    }
}
