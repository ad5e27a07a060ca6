//! `inventory_diff(t1, t2 [, known_at])`: the objects that differ between
//! two instants, one row each (see [`crate::asof::diff`] for the rule), as
//! `annal diff` lists them.
//!
//! ```sql
//! SELECT cluster, kind, name, change, fields
//! FROM inventory_diff('2026-11-01T09:30:00Z', 'now', NULL)
//! WHERE change <> 'added'
//! ```
//!
//! The instants are bound when the query is planned, as for
//! `inventory_at`; `cluster = '…'` is pushed down.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;

use super::args::instant;
use super::fold::{FoldFunction, Producer};
use crate::asof::diff;
use crate::QueryError;

const NAME: &str = "inventory_diff";

/// The columns, in order.
pub fn schema() -> SchemaRef {
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    let list = |name: &str| {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        )
    };
    Arc::new(Schema::new(vec![
        text("cluster", false),
        text("group", false),
        text("kind", false),
        text("namespace", false),
        text("name", false),
        text("change", false),
        text("owner_before", true),
        text("owner_after", true),
        list("fields"),
        list("managers"),
        Field::new("index_before", DataType::UInt64, true),
        Field::new("index_after", DataType::UInt64, true),
    ]))
}

/// The function over `store`.
pub(crate) fn function(store: Arc<Store>) -> FoldFunction {
    FoldFunction::new(NAME, store, schema(), bind)
}

/// Checks the arguments and binds the producer.
fn bind(store: &Store, exprs: &[Expr]) -> Result<Producer> {
    if !(2..=3).contains(&exprs.len()) {
        return plan_err!(
            "{NAME}(t1, t2 [, known_at]) takes two or three times, got {}",
            exprs.len()
        );
    }
    let now = annal_schemas::Timestamp::now();
    let (Some(t1), Some(t2)) = (instant(NAME, exprs, 0, now)?, instant(NAME, exprs, 1, now)?)
    else {
        return plan_err!("{NAME}: t1 and t2 must not be NULL");
    };
    let known_at = instant(NAME, exprs, 2, now)?;
    let (from, to) = diff::sides(store, t1, t2, known_at).map_err(|e| match e {
        QueryError::BadInput(m) => DataFusionError::Plan(format!("{NAME}: {m}")),
        e => DataFusionError::External(Box::new(e)),
    })?;
    let produce: Producer = Arc::new(move |store, cluster, emit| {
        let scope = cluster.map(|c| vec![c.to_string()]);
        for row in diff::fleet_diff(store, scope.as_deref(), &from, &to)? {
            if !emit(serde_json::to_value(row?)?) {
                break;
            }
        }
        Ok(())
    });
    Ok(produce)
}
