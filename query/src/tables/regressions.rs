//! `rollout_regressions(valid_time [, known_at])`: syncs that applied a
//! revision on an (app, cluster) after a newer one had been applied there
//! (see [`crate::recovery::rollout`]), so an auditor can slice them with SQL.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use serde_json::json;

use super::args::AsOfFunction;
use crate::asof::inventory::AsOf;
use crate::recovery::rollout;

/// The columns, in order.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("app", DataType::Utf8, false),
        Field::new("cluster", DataType::Utf8, false),
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("index", DataType::UInt64, false),
        Field::new("revision", DataType::Utf8, false),
        Field::new("newer", DataType::Utf8, false),
    ]))
}

/// The `rollout_regressions` table function.
pub(crate) fn function(store: Arc<Store>) -> AsOfFunction {
    super::fold::function("rollout_regressions", store, schema(), |as_of: AsOf| {
        Arc::new(move |store, cluster, emit| {
            for r in rollout::regressions(store, None, &as_of)? {
                if cluster.is_some_and(|c| c != r.cluster) {
                    continue;
                }
                let row = json!({"app": r.app, "cluster": r.cluster, "time": r.time,
                                 "index": r.index, "revision": r.revision, "newer": r.newer});
                if !emit(row) {
                    break;
                }
            }
            Ok(())
        })
    })
}
