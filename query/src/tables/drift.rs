//! `drift(since [, until])`: writes to GitOps-owned objects outside Git in
//! the window (`until` default now), one row each, as `annal drift` lists
//! them (see [`crate::asof::drift`] for the rule).
//!
//! ```sql
//! SELECT cluster, kind, name, app, who, fields
//! FROM drift('now-7d') WHERE NOT reverted
//! ```
//!
//! The instants are bound when the query is planned; `cluster = '…'` is
//! pushed down.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use super::args::instant;
use super::fold::{FoldFunction, Producer};
use crate::asof::drift::{self, DriftQuery};

const NAME: &str = "drift";

/// The columns, in order.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        text("cluster", false),
        text("group", false),
        text("kind", false),
        text("namespace", false),
        text("name", false),
        text("app", false),
        Field::new("time", ts(), false),
        Field::new("index", DataType::UInt64, false),
        text("who", false),
        text("person", true),
        text("manager", true),
        text("principal", true),
        Field::new(
            "fields",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        Field::new("reverted", DataType::Boolean, false),
        Field::new("reverted_at", ts(), true),
        Field::new("reverted_index", DataType::UInt64, true),
    ]))
}

/// The function over `store`.
pub(crate) fn function(store: Arc<Store>) -> FoldFunction {
    FoldFunction::new(NAME, store, schema(), bind)
}

/// Checks the arguments and binds the producer.
fn bind(_store: &Store, exprs: &[Expr]) -> Result<Producer> {
    if !(1..=2).contains(&exprs.len()) {
        return plan_err!(
            "{NAME}(since [, until]) takes one or two times, got {}",
            exprs.len()
        );
    }
    let now = annal_schemas::Timestamp::now();
    let Some(since) = instant(NAME, exprs, 0, now)? else {
        return plan_err!("{NAME}: since must not be NULL");
    };
    let until = instant(NAME, exprs, 1, now)?.unwrap_or(now);
    if until < since {
        return plan_err!("{NAME}: {since} is after {until}: give the earlier instant first");
    }
    let produce: Producer = Arc::new(move |store, cluster, emit| {
        let q = DriftQuery {
            since,
            until,
            clusters: cluster.map(|c| vec![c.to_string()]).unwrap_or_default(),
            app: None,
            normal_managers: Vec::new(),
        };
        for row in drift::drift(store, &q)? {
            if !emit(serde_json::to_value(row)?) {
                break;
            }
        }
        Ok(())
    });
    Ok(produce)
}
