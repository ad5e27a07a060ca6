//! As-of reads over HTTP:
//!
//! - `GET /v1/inventory?at=TS&known_at=TS&cluster=C&owner=APP`: the objects
//!   live at `at` (default now), the rows `annal inventory -o json` prints.
//! - `GET /v1/diff?from=T1&to=T2&known_at=TS&cluster=C1,C2&owner=APP`: what
//!   changed between the two instants (`to` default now), the document
//!   `annal diff -o json` prints.

use std::sync::Arc;

use annal_store::Store;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::asof::diff;
use crate::asof::inventory::{self, AsOf};
use crate::http::request::{answer, clocks, list, params, Params};
use crate::http::ApiError;

/// The as-of read routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/inventory", get(inventory))
        .route("/v1/diff", get(diff_of))
        .with_state(store)
}

/// Query string of `GET /v1/inventory`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InventoryParams {
    at: Option<String>,
    known_at: Option<String>,
    cluster: Option<String>,
    owner: Option<String>,
}

async fn inventory(
    State(store): State<Arc<Store>>,
    p: Params<InventoryParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let rows: Vec<Value> = inventory::fleet_at(&store, p.cluster.as_deref(), &as_of)?
            .into_iter()
            .filter(|r| p.owner.as_ref().is_none_or(|o| r.claims.contains(o)))
            .map(|r| r.to_json())
            .collect();
        Ok((rows, vec![]))
    })
    .await
}

/// Query string of `GET /v1/diff`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffParams {
    from: String,
    to: Option<String>,
    known_at: Option<String>,
    cluster: Option<String>,
    owner: Option<String>,
}

async fn diff_of(
    State(store): State<Arc<Store>>,
    p: Params<DiffParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (to, known_at) = clocks(&p.to, &p.known_at)?;
    let (from, _) = clocks(&Some(p.from.clone()), &None)?;
    let clusters = list(&p.cluster);
    answer(move || {
        let (from, to) = diff::sides(&store, from, to, known_at)?;
        let scope = (!clusters.is_empty()).then_some(clusters.as_slice());
        let mut doc = diff::Document::default();
        for r in diff::fleet_diff(&store, scope, &from, &to)? {
            let r = r?;
            if p.owner.as_ref().is_none_or(|o| r.owned_by(o)) {
                doc.push(r);
            }
        }
        let extra = vec![
            ("from", json!(from.valid.to_string())),
            ("to", json!(to.valid.to_string())),
        ];
        Ok((doc, extra))
    })
    .await
}
