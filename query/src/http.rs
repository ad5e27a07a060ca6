//! The read API: SQL and inventory over HTTP.
//!
//! - `POST /v1/sql`: the body is the query, either as text or as JSON
//!   `{"query": "..."}`. The answer is JSON `{"columns": [{"name", "type"}],
//!   "rows": [{...}]}`, or an Arrow IPC stream when the request says
//!   `Accept: application/vnd.apache.arrow.stream`.
//! - `GET /v1/inventory?at=TS&known_at=TS&cluster=C&owner=APP`: the objects
//!   live at `at` (default now), the rows `annal inventory -o json` prints.
//! - `GET /v1/takeover-plan?controller=NEW&apps=A,B&at=TS&known_at=TS`
//!   (or `clusters=C1,C2` instead of `apps`): the plan `annal takeover-plan
//!   -o json` prints, with `needs_approval`.
//!
//! Bad SQL and bad times are 400 with `{"error": "..."}` naming the
//! problem; a failing store is 500 without details (they go to stderr).
//! Authentication and roles wrap this router where it is served.

use std::sync::Arc;

use annal_schemas::Timestamp;
use annal_store::Store;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::inventory::{self, AsOf};
use crate::takeover;
use crate::{sql, QueryError};

/// The media type of an Arrow IPC stream.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// The read routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/sql", post(run_sql))
        .route("/v1/inventory", get(inventory))
        .route("/v1/takeover-plan", get(takeover_plan))
        .with_state(store)
}

/// What a read request can fail with.
#[derive(Debug)]
pub enum ApiError {
    /// The request is wrong: 400 with the reason.
    BadRequest(String),
    /// The server failed: 500, details logged, not returned.
    Internal(String),
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Sql(_) | QueryError::Time { .. } => ApiError::BadRequest(e.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::BadRequest(reason) => {
                (StatusCode::BAD_REQUEST, Json(json!({"error": reason}))).into_response()
            }
            ApiError::Internal(detail) => {
                eprintln!("annal: internal error: {detail}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Json(json!({"error": "internal error (see the server log)"})),
                )
                    .into_response()
            }
        }
    }
}

async fn run_sql(
    State(store): State<Arc<Store>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let query = query_text(&headers, &body)?;
    let ctx = sql::session(store).await?;
    let answer = sql::run(&ctx, &query).await?;
    let wants_arrow = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(ARROW_STREAM));
    if wants_arrow {
        let bytes = arrow_stream(&answer)?;
        return Ok(([(header::CONTENT_TYPE, ARROW_STREAM)], bytes).into_response());
    }
    let columns: Vec<Value> = answer
        .schema
        .fields()
        .iter()
        .map(|f| json!({"name": f.name(), "type": f.data_type().to_string()}))
        .collect();
    let rows = sql::rows_as_json(&answer)?;
    Ok(Json(json!({"columns": columns, "rows": rows})).into_response())
}

/// The SQL text of a request: JSON `{"query": ...}` or the raw body.
fn query_text(headers: &HeaderMap, body: &[u8]) -> Result<String, ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let text = if is_json {
        #[derive(Deserialize)]
        struct Body {
            query: String,
        }
        serde_json::from_slice::<Body>(body)
            .map_err(|e| {
                ApiError::BadRequest(format!("body: expected {{\"query\": \"...\"}}: {e}"))
            })?
            .query
    } else {
        String::from_utf8(body.to_vec())
            .map_err(|_| ApiError::BadRequest("body: the query is not UTF-8".into()))?
    };
    if text.trim().is_empty() {
        return Err(ApiError::BadRequest("body: no query".into()));
    }
    Ok(text)
}

fn arrow_stream(answer: &sql::Answer) -> Result<Vec<u8>, ApiError> {
    use datafusion::arrow::ipc::writer::StreamWriter;
    let internal = |e: datafusion::arrow::error::ArrowError| ApiError::Internal(e.to_string());
    let mut out = Vec::new();
    let mut writer = StreamWriter::try_new(&mut out, &answer.schema).map_err(internal)?;
    for batch in &answer.batches {
        writer.write(batch).map_err(internal)?;
    }
    writer.finish().map_err(internal)?;
    drop(writer);
    Ok(out)
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
    params: Result<Query<InventoryParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let Query(p) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let rows = tokio::task::spawn_blocking(move || -> Result<Vec<Value>, QueryError> {
        let as_of = AsOf::new(&store, at, known_at)?;
        Ok(inventory::fleet_at(&store, p.cluster.as_deref(), &as_of)?
            .into_iter()
            .filter(|r| p.owner.as_ref().is_none_or(|o| r.claims.contains(o)))
            .map(|r| r.to_json())
            .collect())
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(rows))
}

/// `at` (default now) and `known_at` from a query string.
fn clocks(
    at: &Option<String>,
    known_at: &Option<String>,
) -> Result<(Timestamp, Option<Timestamp>), ApiError> {
    let now = Timestamp::now();
    let time = |name: &str, value: &Option<String>| -> Result<Option<Timestamp>, ApiError> {
        value
            .as_deref()
            .map(|v| {
                Timestamp::parse_at(v, now)
                    .map_err(|e| ApiError::BadRequest(format!("{name}={v:?}: {e}")))
            })
            .transpose()
    };
    Ok((time("at", at)?.unwrap_or(now), time("known_at", known_at)?))
}

/// Query string of `GET /v1/takeover-plan`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TakeoverParams {
    controller: String,
    apps: Option<String>,
    clusters: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    normal_managers: Option<String>,
}

async fn takeover_plan(
    State(store): State<Arc<Store>>,
    params: Result<Query<TakeoverParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(p) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let list = |v: &Option<String>| -> Vec<String> {
        v.as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let scope = match (list(&p.apps), list(&p.clusters)) {
        (apps, clusters) if apps.is_empty() && !clusters.is_empty() => {
            takeover::Scope::Clusters(clusters)
        }
        (apps, clusters) if !apps.is_empty() && clusters.is_empty() => takeover::Scope::Apps(apps),
        _ => {
            return Err(ApiError::BadRequest(
                "give exactly one of apps=A,B or clusters=C1,C2".into(),
            ))
        }
    };
    let request = takeover::Request {
        controller: p.controller.clone(),
        scope,
        normal_managers: list(&p.normal_managers),
    };
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let plan = tokio::task::spawn_blocking(move || -> Result<Value, QueryError> {
        let as_of = AsOf::new(&store, at, known_at)?;
        let plan = takeover::plan(&store, &request, &as_of)?;
        let mut doc = serde_json::to_value(&plan)?;
        if let Value::Object(map) = &mut doc {
            map.insert("needs_approval".into(), json!(plan.needs_approval()));
        }
        Ok(doc)
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(plan))
}
