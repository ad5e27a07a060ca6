//! `changes` (one row per object version, with who made it and what it
//! changed) and `object_history(cluster, kind, namespace, name)` (one
//! object's rows): see [`crate::asof::history`] for the join.
//!
//! ```sql
//! SELECT valid_from, change, person, via, manager, app, revision, changed
//! FROM object_history('prod-eu1-a', 'Deployment', 'shop', 'web')
//! ```
//!
//! `changes` reads every version of the clusters it covers, one leaf and
//! two short index scans each: say `WHERE cluster = '…'` (pushed down).

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::common::{plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use serde_json::{json, Value};

use super::fold::{FoldFunction, FoldTable, Producer};
use crate::asof::history::{self, HistoryRow, ObjectQuery};

const FUNCTION: &str = "object_history";

/// The columns, in order.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
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
        Field::new("valid_from", ts(), false),
        Field::new("valid_to", ts(), true),
        Field::new("index", DataType::UInt64, false),
        Field::new("recorded_at", ts(), false),
        text("change", false),
        text("uid", false),
        text("resource_version", false),
        text("person", true),
        text("person_source", true),
        text("principal", true),
        text("impersonated", true),
        text("user_agent", true),
        text("via", true),
        text("manager", true),
        text("operation", true),
        text("app", true),
        text("revision", true),
        list("changed"),
        list("managers"),
    ]))
}

fn row(r: &HistoryRow) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    v["change"] = json!(r.change.as_str());
    v
}

/// The `changes` table.
pub(crate) fn table(store: Arc<Store>) -> FoldTable {
    let produce: Producer = Arc::new(|store, cluster, emit| {
        let clusters = match cluster {
            Some(c) => vec![c.to_string()],
            None => store.version_clusters()?,
        };
        for c in clusters {
            for r in history::cluster_changes(store, &c)? {
                if !emit(row(&r)) {
                    return Ok(());
                }
            }
        }
        Ok(())
    });
    FoldTable::new(store, schema(), produce)
}

/// The function over `store`.
pub(crate) fn function(store: Arc<Store>) -> FoldFunction {
    FoldFunction::new(FUNCTION, store, schema(), bind)
}

/// Checks the arguments and binds the producer.
fn bind(_store: &Store, exprs: &[Expr]) -> Result<Producer> {
    if exprs.len() != 4 {
        return plan_err!(
            "{FUNCTION}(cluster, kind, namespace, name) takes four strings ('' for a cluster-scoped object's namespace), got {}",
            exprs.len()
        );
    }
    let mut text = Vec::with_capacity(4);
    for (i, e) in exprs.iter().enumerate() {
        let e = match e {
            Expr::Cast(c) => c.expr.as_ref(),
            e => e,
        };
        match e {
            Expr::Literal(
                ScalarValue::Utf8(Some(s))
                | ScalarValue::LargeUtf8(Some(s))
                | ScalarValue::Utf8View(Some(s)),
                _,
            ) => text.push(s.clone()),
            _ => return plan_err!("{FUNCTION}: argument {} must be a string literal", i + 1),
        }
    }
    let q = ObjectQuery {
        cluster: text[0].clone(),
        group: None,
        kind: text[1].clone(),
        namespace: text[2].clone(),
        name: text[3].clone(),
    };
    let produce: Producer = Arc::new(move |store, cluster, emit| {
        if cluster.is_some_and(|c| c != q.cluster) {
            return Ok(());
        }
        for r in history::object_history(store, &q)? {
            if !emit(row(&r)) {
                break;
            }
        }
        Ok(())
    });
    Ok(produce)
}
