//! The `objects` table: every version of every object, one row each, with
//! the valid-time interval during which it was current (`valid_to` NULL:
//! still current) and deletions as rows with `deleted = true`. Rows come
//! cluster by cluster; a scan that returns a detail or a name column other
//! than `name` alone (`group`, `kind`, `namespace`) gives each cluster's by
//! object, each object's versions in log order, and one that returns none
//! of them, or `name` alone from the names a store keeps, gives them in
//! log order (SQL promises no order: say `ORDER BY`).
//!
//! Owner and claims here come from the version's own labels and
//! annotations; claims through app inventories depend on the instant and
//! are added by `inventory_at`. `cluster = '…'` and bounds on
//! `valid_from` are pushed down.

use std::sync::Arc;

use annal_schemas::ownership;
use annal_store::versions::{Span, VersionRow};
use annal_store::Store;
use datafusion::arrow::array::{Array, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;

use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::adapter::{Scan, Source, Table};
use super::cluster_scan;
use super::object_batch::{self, Batch, ObjectRow, Shape};
use crate::QueryError;

/// The `objects` table over a store.
pub type ObjectsTable = Table<Objects>;

impl ObjectsTable {
    /// The table over `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Table::of(Objects {
            store,
            schema: object_batch::schema(Shape::Versions),
        })
    }
}

/// What is particular to the `objects` table.
pub struct Objects {
    store: Arc<Store>,
    schema: SchemaRef,
}

impl Source for Objects {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn pushdown(&self, filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        let by_cluster = cluster_scan::pushdown(filters);
        filters
            .iter()
            .zip(by_cluster)
            .map(|(f, p)| {
                // The scan keeps exactly the rows in the `valid_from`
                // range (see `scan`): a plain bound is not applied again.
                let bounded =
                    crate::tables::pushdown::time_range(std::slice::from_ref(*f), "valid_from")
                        != (None, None);
                match bounded {
                    true if crate::tables::pushdown::exact_time_bound(f, "valid_from") => {
                        TableProviderFilterPushDown::Exact
                    }
                    true => TableProviderFilterPushDown::Inexact,
                    false => p,
                }
            })
            .collect()
    }

    fn scan(&self, scan: Scan<'_>) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = scan.columns.clone();
        let out = scan.schema.clone();
        // Versions recorded after planning are left out: one query, one
        // log prefix.
        let known_below = self.store.size();
        // Rows outside a `valid_from` range are skipped before they are
        // built; a version's details (and its owners) are read only for a
        // scan that asks for one of the columns they give.
        let (since, until) = crate::tables::pushdown::time_range(scan.filters, "valid_from");
        let (since, until) = (
            since.map(|t| t.unix_micros()),
            until.map(|t| t.unix_micros()),
        );
        let needs_details = columns.iter().any(|&c| {
            !matches!(
                self.schema.field(c).name().as_str(),
                "cluster"
                    | "group"
                    | "kind"
                    | "namespace"
                    | "name"
                    | "deleted"
                    | "valid_from"
                    | "valid_to"
                    | "index"
            )
        });
        // A scan bounded on `valid_from` that needs neither `valid_to` nor
        // details reads only the zones of rows that can start in its range
        // (rows are appended nearly in valid-time order; a day of a month
        // reads a few zones of each cluster, not all its rows).
        let span = match (since, until) {
            (None, None) => Span::All,
            _ if needs_details
                || columns
                    .iter()
                    .any(|&c| self.schema.field(c).name() == "valid_to") =>
            {
                Span::All
            }
            (since, until) => Span::Starting {
                since: since.unwrap_or(i64::MIN),
                until: until.unwrap_or(i64::MAX),
            },
        };
        // Object names are looked up only for a scan that returns one (a
        // count of versions per cluster and day reads rows alone), and a
        // scan whose only name column is `name` (objects changed on a day,
        // counted per cluster) takes it from the cluster's column of names
        // by object id, where the store keeps one (`serve`).
        let named: Vec<&str> = columns
            .iter()
            .map(|&c| self.schema.field(c).name().as_str())
            .filter(|n| matches!(*n, "group" | "kind" | "namespace" | "name"))
            .collect();
        let needs_names = needs_details || !named.is_empty();
        let name_only = !needs_details && named == ["name"];
        let produce: cluster_scan::Producer = Arc::new(move |store: &Store, cluster: &str| {
            let Some(versions) = store.cluster_versions_in(cluster, span)? else {
                return Ok(Vec::new());
            };
            let kept: Vec<&VersionRow> = versions
                .rows()
                .iter()
                .filter(|row| {
                    let outside =
                        since.is_some_and(|s| row.from < s) || until.is_some_and(|u| row.from >= u);
                    row.index < known_below && !outside
                })
                .collect();
            let row_valid_to = |row: &VersionRow| valid_to(row, known_below);
            if !needs_names {
                return Ok(vec![object_batch::of_rows(
                    cluster,
                    &kept,
                    row_valid_to,
                    None,
                    &out,
                )?]);
            }
            let column = versions.name_column().filter(|_| name_only);
            if let Some(names) = column {
                // Taken by object id from one column of a cluster's names
                // (tens of KiB, in cache), the rows need no regrouping by
                // object: they stay in log order.
                let ids = UInt32Array::from_iter_values(kept.iter().map(|row| row.object));
                if let Some(bad) = ids
                    .values()
                    .iter()
                    .find(|&&id| id as usize >= names.len() || names.is_null(id as usize))
                {
                    return Err(no_object(*bad));
                }
                let names = take(names, &ids, None)?;
                return Ok(vec![object_batch::of_rows(
                    cluster,
                    &kept,
                    row_valid_to,
                    Some(names),
                    &out,
                )?]);
            }
            // Rows name their objects in arrival order, all over the
            // cluster's names; taken in object order (each object's
            // versions in log order), the names are read front to back, a
            // cache line once (in row order, a scan of a day's versions at
            // 10M took 44 ms against 31; the names already split).
            let kept = by_object(kept, versions.object_count());
            let mut batch = Batch::with_capacity(Shape::Versions, &columns, kept.len());
            // A row with none of the columns a name or details give.
            let unnamed = |row: &VersionRow| ObjectRow {
                valid_to: row_valid_to(row),
                ..ObjectRow::unnamed(cluster, row)
            };
            let mut last = None;
            for row in kept {
                let object = match last {
                    Some((id, object)) if id == row.object => Some(object),
                    _ => versions.object(row.object),
                };
                let object = object.ok_or_else(|| no_object(row.object))?;
                last = Some((row.object, object));
                if !needs_details {
                    // The columns the details give are not projected: any
                    // value does, and none is read.
                    batch.push(&ObjectRow {
                        group: object.group,
                        kind: object.kind,
                        namespace: object.namespace,
                        name: object.name,
                        ..unnamed(row)
                    });
                    continue;
                }
                let d = versions.details(row)?;
                let owners = ownership::decide(&d.claims);
                batch.push(&ObjectRow {
                    valid_to: row_valid_to(row),
                    ..ObjectRow::of_version(cluster, object, row, &d, &owners)
                });
            }
            Ok(vec![batch.finish(&columns, &out)?])
        });
        cluster_scan::plan(self.store.clone(), scan, produce)
    }
}

/// A version's `valid_to`: its end, unless the version that ended it was
/// recorded after the query's log prefix (`known_below`).
fn valid_to(row: &VersionRow, known_below: u64) -> Option<i64> {
    (row.to != i64::MAX && row.to_index < known_below).then_some(row.to)
}

/// The error of a version whose object has no (readable) name.
fn no_object(id: u32) -> QueryError {
    QueryError::Store(annal_store::StoreError::Corrupt(format!("no object {id}")))
}

/// `rows` (in log order) regrouped by object, each object's rows still in
/// log order: a counting sort over the cluster's `objects` ids, two passes
/// over the rows (a comparison sort was an eighth of a day's scan). A few
/// rows of a cluster with many objects are sorted instead; an id past
/// `objects` (which a lookup then reports) sorts last.
fn by_object(rows: Vec<&VersionRow>, objects: usize) -> Vec<&VersionRow> {
    let slot = |row: &VersionRow| (row.object as usize).min(objects);
    if objects > rows.len().saturating_mul(16) {
        let mut rows = rows;
        rows.sort_by_key(|row| slot(row));
        return rows;
    }
    let mut starts = vec![0usize; objects + 2];
    for row in &rows {
        starts[slot(row) + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut out: Vec<Option<&VersionRow>> = vec![None; rows.len()];
    for row in rows {
        let at = &mut starts[slot(row)];
        out[*at] = Some(row);
        *at += 1;
    }
    out.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn row(object: u32, index: u64) -> VersionRow {
        VersionRow {
            object,
            flags: 0,
            from: 0,
            to: i64::MAX,
            to_index: u64::MAX,
            index,
            rv: 0,
            details: 0,
        }
    }

    proptest! {
        /// Regrouped rows are the rows stably sorted by object (ids past
        /// the cluster's objects last), whichever way they are sorted.
        #[test]
        fn rows_by_object_keep_log_order_within_an_object(
            ids in proptest::collection::vec(0u32..40, 0..200),
            objects in 0usize..4000,
        ) {
            let rows: Vec<VersionRow> =
                ids.iter().enumerate().map(|(i, &o)| row(o, i as u64)).collect();
            let got: Vec<(u32, u64)> = by_object(rows.iter().collect(), objects)
                .into_iter()
                .map(|r| (r.object, r.index))
                .collect();
            let mut want: Vec<(u32, u64)> = rows.iter().map(|r| (r.object, r.index)).collect();
            want.sort_by_key(|&(o, _)| (o as usize).min(objects));
            prop_assert_eq!(got, want);
        }
    }
}
