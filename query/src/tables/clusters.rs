//! `clusters` (every registry version, with valid_from/valid_to) and
//! `clusters_at(valid_time [, known_at])` (each cluster's entry at an
//! instant). See [`crate::asof::registry`] for the fold.

use std::sync::Arc;

use annal_store::Store;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use serde_json::json;

use super::args::AsOfFunction;
use super::fold::{FoldTable, Producer};
use crate::asof::inventory::AsOf;
use crate::asof::registry::{self, ClusterVersion};

/// The columns, in order.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        Field::new("cluster", DataType::Utf8, false),
        text("display_name"),
        text("environment"),
        text("region"),
        text("fault_domain"),
        text("tenant"),
        text("compliance"),
        text("owner"),
        text("lifecycle"),
        text("state"),
        Field::new("attributes", DataType::Utf8, false),
        text("api_server"),
        text("ca_fingerprint"),
        text("credential_fingerprint"),
        Field::new("valid_from", ts(), false),
        Field::new("valid_to", ts(), true),
        Field::new("index", DataType::UInt64, false),
    ]))
}

/// The `clusters` table.
pub(crate) fn table(store: Arc<Store>) -> FoldTable {
    let produce: Producer = Arc::new(|store, cluster, emit| {
        for v in registry::versions(store, cluster, store.size())? {
            if !emit(row(&v)) {
                break;
            }
        }
        Ok(())
    });
    FoldTable::new(store, schema(), produce)
}

/// The `clusters_at` table function.
pub(crate) fn function(store: Arc<Store>) -> AsOfFunction {
    super::fold::function("clusters_at", store, schema(), |as_of: AsOf| {
        Arc::new(move |store, cluster, emit| {
            for v in registry::at(store, cluster, &as_of)? {
                if !emit(row(&v)) {
                    break;
                }
            }
            Ok(())
        })
    })
}

fn row(v: &ClusterVersion) -> serde_json::Value {
    json!({
        "cluster": v.cluster,
        "display_name": v.display_name,
        "environment": v.environment,
        "region": v.region,
        "fault_domain": v.fault_domain,
        "tenant": v.tenant,
        "compliance": v.compliance,
        "owner": v.owner,
        "lifecycle": v.lifecycle,
        "state": v.state,
        "attributes": serde_json::to_string(&v.attributes).unwrap_or_default(),
        "api_server": v.api_server,
        "ca_fingerprint": v.ca_fingerprint,
        "credential_fingerprint": v.credential_fingerprint,
        "valid_from": v.valid_from.to_string(),
        "valid_to": v.valid_to.map(|t| t.to_string()),
        "index": v.index,
    })
}
