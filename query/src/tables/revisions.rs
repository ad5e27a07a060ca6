//! `revisions` (every last-good interval per cluster and app) and
//! `last_good_at(valid_time [, known_at])` (the last-good revision of each
//! (cluster, app) at an instant). See [`crate::asof::revisions`] for the rule.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use serde_json::json;

use super::args::AsOfFunction;
use super::fold::{FoldTable, Producer};
use crate::asof::inventory::AsOf;
use crate::asof::revisions::{self, GoodInterval};

/// The columns, in order.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    Arc::new(Schema::new(vec![
        Field::new("cluster", DataType::Utf8, false),
        Field::new("app", DataType::Utf8, false),
        Field::new("revision", DataType::Utf8, false),
        Field::new("good_by", DataType::Utf8, false),
        Field::new("sync_index", DataType::UInt64, true),
        Field::new("valid_from", ts(), false),
        Field::new("valid_to", ts(), true),
        Field::new("index", DataType::UInt64, false),
    ]))
}

/// The `revisions` table.
pub(crate) fn table(store: Arc<Store>) -> FoldTable {
    let produce: Producer = Arc::new(|store, cluster, emit| {
        for g in revisions::intervals(store, cluster, store.size())? {
            if !emit(row(&g)) {
                break;
            }
        }
        Ok(())
    });
    FoldTable::new(store, schema(), produce)
}

/// The `last_good_at` table function.
pub(crate) fn function(store: Arc<Store>) -> AsOfFunction {
    super::fold::function("last_good_at", store, schema(), |as_of: AsOf| {
        Arc::new(move |store, cluster, emit| {
            for g in revisions::at(store, cluster, &as_of)? {
                if !emit(row(&g)) {
                    break;
                }
            }
            Ok(())
        })
    })
}

fn row(g: &GoodInterval) -> serde_json::Value {
    json!({
        "cluster": g.cluster,
        "app": g.app,
        "revision": g.revision,
        "good_by": g.by.as_str(),
        "sync_index": g.sync_index,
        "valid_from": g.valid_from.to_string(),
        "valid_to": g.valid_to.map(|t| t.to_string()),
        "index": g.index,
    })
}
