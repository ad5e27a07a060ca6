//! `GET /v1/inventory?at=TS&known_at=TS&cluster=C&owner=APP`: the objects
//! live at `at` (default now), the rows `annal inventory -o json` prints.

use std::sync::Arc;

use annal_store::Store;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use crate::asof::inventory::{self, AsOf};
use crate::http::request::{answer, clocks, params, Params};
use crate::http::ApiError;

/// The as-of read routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/inventory", get(inventory))
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
