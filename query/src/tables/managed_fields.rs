//! `managed_fields`: one row per object version and field manager, with the
//! field paths it owns (see [`crate::asof::managed_fields`]). `cluster = '…'` is
//! pushed down to the store's cluster index.

use std::sync::Arc;

use annal_schemas::EventType;
use annal_store::{ScanKey, Store};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use serde_json::json;

use super::fold::{FoldTable, Producer};
use crate::asof::managed_fields;

/// The columns, in order.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let text = |n: &str| Field::new(n, DataType::Utf8, false);
    let maybe = |n: &str| Field::new(n, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        text("cluster"),
        text("group"),
        text("version"),
        text("kind"),
        text("namespace"),
        text("name"),
        maybe("uid"),
        maybe("resource_version"),
        maybe("manager"),
        maybe("operation"),
        maybe("subresource"),
        maybe("time"),
        Field::new(
            "fields",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        Field::new("valid_from", ts(), false),
        Field::new("index", DataType::UInt64, false),
    ]))
}

/// The `managed_fields` table.
pub(crate) fn table(store: Arc<Store>) -> FoldTable {
    let produce: Producer = Arc::new(|store, cluster, emit| {
        let observed = EventType::ObjectObserved;
        let scan: Box<dyn Iterator<Item = _>> = match cluster {
            Some(c) => Box::new(store.scan(ScanKey::Cluster(c), None, None)),
            None => Box::new(store.scan(ScanKey::Type(observed.as_str()), None, None)),
        };
        for entry in scan {
            let entry = entry?;
            for m in managed_fields::of_entry(&entry) {
                let row = json!({
                    "cluster": m.cluster,
                    "group": m.group,
                    "version": m.version,
                    "kind": m.kind,
                    "namespace": m.namespace,
                    "name": m.name,
                    "uid": m.uid,
                    "resource_version": m.resource_version,
                    "manager": m.manager,
                    "operation": m.operation,
                    "subresource": m.subresource,
                    "time": m.time,
                    "fields": m.fields,
                    "valid_from": m.valid_from.to_string(),
                    "index": m.index,
                });
                if !emit(row) {
                    return Ok(());
                }
            }
        }
        Ok(())
    });
    FoldTable::new(store, schema(), produce)
}
