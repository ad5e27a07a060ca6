//! Proofs over HTTP: the documents `annal proof` prints.
//!
//! - `GET /v1/checkpoint`: the latest signed note, as text.
//! - `GET /v1/proof/inclusion?index=N|event_id=ID[&size=N]` (404 for an
//!   unknown id, 400 for a size past the log).
//! - `GET /v1/proof/consistency?from=SIZE[&to=SIZE]`.

use std::sync::Arc;

use annal_store::Store;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use crate::http::request::{answer, params, Params};
use crate::http::ApiError;
use crate::proof;

/// The checkpoint and proof routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/checkpoint", get(checkpoint))
        .route("/v1/proof/inclusion", get(proof_inclusion))
        .route("/v1/proof/consistency", get(proof_consistency))
        .with_state(store)
}

/// The latest signed checkpoint, as the note text (`text/plain`), so
/// auditors can save it as is and later pass it to `annal verify
/// --checkpoint` or `tools/verify_proof.py`.
async fn checkpoint(State(store): State<Arc<Store>>) -> Response {
    match store.checkpoint() {
        Some(note) => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], note).into_response(),
        None => ApiError::NotFound("the ledger is empty: no checkpoint yet".into()).into_response(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InclusionParams {
    index: Option<u64>,
    event_id: Option<String>,
    size: Option<u64>,
}

/// `GET /v1/proof/inclusion?index=N|event_id=ID[&size=N]`.
async fn proof_inclusion(
    State(store): State<Arc<Store>>,
    p: Params<InclusionParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let leaf = match (p.index, p.event_id) {
        (Some(i), None) => proof::Leaf::Index(i),
        (None, Some(id)) => proof::Leaf::EventId(id),
        _ => {
            return Err(ApiError::BadRequest(
                "give exactly one of index and event_id".into(),
            ))
        }
    };
    let against = p.size.map_or(proof::Against::Latest, proof::Against::Size);
    answer(move || Ok((proof::inclusion(&store, &leaf, &against)?, vec![]))).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsistencyParams {
    from: u64,
    to: Option<u64>,
}

/// `GET /v1/proof/consistency?from=SIZE[&to=SIZE]`.
async fn proof_consistency(
    State(store): State<Arc<Store>>,
    p: Params<ConsistencyParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let to = p.to.map_or(proof::Against::Latest, proof::Against::Size);
    answer(move || {
        let doc = proof::consistency(&store, &proof::Against::Size(p.from), &to)?;
        Ok((doc, vec![]))
    })
    .await
}
