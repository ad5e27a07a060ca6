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
//! - `POST /v1/prune-plan?app=&cluster=&namespace=&at=&known_at=&max_deletions=&max_fraction=`
//!   with the rendered manifests as a JSON array or `List` in the body.
//! - `GET /v1/placement/diff?selector=&exclude=&from=&to=` (or
//!   `proposed_selector=&at=`) `&max_add=&max_remove=`.
//! - `GET /v1/fence/check?controller=&since=&principals=a,b&at=`.
//! - `POST /v1/backup/check?at=` with the export as a JSON array or `List`.
//! - `GET /v1/rollout/status?revision=&app=&cohort_attribute=&at=` and
//!   `GET /v1/rollout/regressions?since=&at=`.
//! - `GET /v1/checkpoint`: the latest signed note, as text.
//! - `GET /v1/proof/inclusion?index=N|event_id=ID[&size=N]` and
//!   `GET /v1/proof/consistency?from=SIZE[&to=SIZE]`: the documents `annal
//!   proof` prints (404 for an unknown id, 400 for a size past the log).
//!
//! Every recovery answer is the document its command prints with `-o json`
//! (with `needs_approval`, or `holds` for the fence); the gate itself is the
//! caller's, as HTTP has no exit codes.
//!
//! Bad SQL and bad times are 400 with `{"error": "..."}` naming the
//! problem; a failing store is 500 without details (they go to stderr).
//! Authentication and roles wrap this router where it is served.

/// A line on stderr that never panics: a server whose stderr was closed
/// (its parent went away) must keep serving and shut down cleanly.
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

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
use crate::{backup, fence, placement, proof, prune, rollout, takeover};
use crate::{sql, QueryError};

/// The media type of an Arrow IPC stream.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// The read routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/sql", post(run_sql))
        .route("/v1/inventory", get(inventory))
        .route("/v1/takeover-plan", get(takeover_plan))
        .route("/v1/prune-plan", post(prune_plan))
        .route("/v1/placement/diff", get(placement_diff))
        .route("/v1/fence/check", get(fence_check))
        .route("/v1/backup/check", post(backup_check))
        .route("/v1/rollout/status", get(rollout_status))
        .route("/v1/rollout/regressions", get(rollout_regressions))
        .route("/v1/checkpoint", get(checkpoint))
        .route("/v1/proof/inclusion", get(proof_inclusion))
        .route("/v1/proof/consistency", get(proof_consistency))
        .with_state(store)
}

/// What a read request can fail with.
#[derive(Debug)]
pub enum ApiError {
    /// The request is wrong: 400 with the reason.
    BadRequest(String),
    /// What was asked for does not exist: 404 with the reason.
    NotFound(String),
    /// The caller's checkpoint disagrees with this log: 409 with the reason.
    Conflict(String),
    /// The server failed: 500, details logged, not returned.
    Internal(String),
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Sql(_)
            | QueryError::Time { .. }
            | QueryError::BadInput(_)
            | QueryError::Store(annal_store::StoreError::Proof(_)) => {
                ApiError::BadRequest(e.to_string())
            }
            QueryError::NotFound(_) => ApiError::NotFound(e.to_string()),
            QueryError::Diverged(_) => ApiError::Conflict(e.to_string()),
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
            ApiError::NotFound(reason) => {
                (StatusCode::NOT_FOUND, Json(json!({"error": reason}))).into_response()
            }
            ApiError::Conflict(reason) => {
                (StatusCode::CONFLICT, Json(json!({"error": reason}))).into_response()
            }
            ApiError::Internal(detail) => {
                log!("annal: internal error: {detail}");
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

/// A query string, or 400 naming what is wrong with it.
type Params<T> = Result<Query<T>, axum::extract::rejection::QueryRejection>;

fn params<T>(p: Params<T>) -> Result<T, ApiError> {
    p.map(|Query(t)| t)
        .map_err(|e| ApiError::BadRequest(e.body_text()))
}

/// Comma-separated values.
fn list(v: &Option<String>) -> Vec<String> {
    v.as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Runs a store question off the async threads and adds `extra` fields to
/// its JSON document.
async fn answer<T: serde::Serialize + Send + 'static>(
    job: impl FnOnce() -> Result<(T, Vec<(&'static str, Value)>), QueryError> + Send + 'static,
) -> Result<Json<Value>, ApiError> {
    let doc = tokio::task::spawn_blocking(move || -> Result<Value, QueryError> {
        let (value, extra) = job()?;
        let mut doc = serde_json::to_value(&value)?;
        if let Value::Object(map) = &mut doc {
            for (k, v) in extra {
                map.insert(k.into(), v);
            }
        }
        Ok(doc)
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(doc))
}

/// (apiVersion, kind, namespace, name) of each object in a JSON body: an
/// array of objects or a `*List`.
fn body_objects(body: &[u8]) -> Result<Vec<(String, String, String, String)>, ApiError> {
    let bad = |m: String| ApiError::BadRequest(m);
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        bad(format!(
            "the body is not JSON (a JSON array or List of objects): {e}"
        ))
    })?;
    let items = match &value {
        Value::Array(items) => items.clone(),
        Value::Object(o) if o.get("items").is_some_and(Value::is_array) => {
            o["items"].as_array().cloned().unwrap_or_default()
        }
        _ => {
            return Err(bad(
                "the body must be a JSON array of objects or a List".into()
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let text = |path: &[&str]| -> Result<String, ApiError> {
                let mut at = o;
                for p in path {
                    at = at
                        .get(p)
                        .ok_or_else(|| bad(format!("object {i}: no {}", path.join("."))))?;
                }
                at.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("object {i}: {} is not a string", path.join("."))))
            };
            Ok((
                text(&["apiVersion"])?,
                text(&["kind"])?,
                o.get("metadata")
                    .and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                text(&["metadata", "name"])?,
            ))
        })
        .collect()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PruneParams {
    app: String,
    cluster: String,
    namespace: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    max_deletions: Option<u64>,
    max_fraction: Option<f64>,
    normal_managers: Option<String>,
}

async fn prune_plan(
    State(store): State<Arc<Store>>,
    p: Params<PruneParams>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let desired = body_objects(&body)?
        .into_iter()
        .map(|(api, kind, ns, name)| {
            prune::desired_name(&api, kind, ns, name, p.namespace.as_deref())
        })
        .collect();
    let request = prune::Request {
        app: p.app,
        cluster: p.cluster,
        desired,
        max_deletions: p.max_deletions,
        max_fraction: p.max_fraction,
        normal_managers: list(&p.normal_managers),
    };
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    answer(move || {
        let plan = prune::plan(&store, &request, &AsOf::new(&store, at, known_at)?)?;
        let approval = plan.needs_approval();
        Ok((plan, vec![("needs_approval", json!(approval))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlacementParams {
    selector: String,
    exclude: Option<String>,
    from: Option<String>,
    to: Option<String>,
    proposed_selector: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    max_add: Option<u64>,
    max_remove: Option<u64>,
}

async fn placement_diff(
    State(store): State<Arc<Store>>,
    p: Params<PlacementParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let parse = |s: &str| placement::Selector::parse(s).map_err(ApiError::from);
    let selector = parse(&p.selector)?;
    let exclude = parse(p.exclude.as_deref().unwrap_or(""))?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (from, to) = match (&p.proposed_selector, &p.from, &p.to) {
        (Some(proposed), None, None) => ((selector.clone(), at), (parse(proposed)?, at)),
        (None, Some(_), Some(_)) => {
            let (t1, _) = clocks(&p.from, &None)?;
            let (t2, _) = clocks(&p.to, &None)?;
            ((selector.clone(), t1), (selector, t2))
        }
        _ => {
            return Err(ApiError::BadRequest(
                "give from and to, or proposed_selector".into(),
            ))
        }
    };
    let (max_add, max_remove) = (p.max_add, p.max_remove.unwrap_or(0));
    answer(move || {
        let side = |(selector, t): (placement::Selector, Timestamp)| -> Result<placement::Side, QueryError> {
            Ok(placement::Side {
                selector,
                as_of: AsOf::new(&store, t, known_at)?,
            })
        };
        let d = placement::diff(&store, &side(from)?, &side(to)?, &exclude)?;
        let flags = placement::gate(&d, max_add, max_remove);
        let approval = !flags.is_empty();
        Ok((d, vec![("flags", json!(flags)), ("needs_approval", json!(approval))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FenceParams {
    controller: String,
    since: Option<String>,
    principals: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
}

async fn fence_check(
    State(store): State<Arc<Store>>,
    p: Params<FenceParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (since, _) = clocks(&p.since, &None)?;
    let request = fence::Request {
        controller: p.controller,
        since: p.since.is_some().then_some(since),
        principals: list(&p.principals),
    };
    answer(move || {
        let r = fence::check(&store, &request, &AsOf::new(&store, at, known_at)?)?;
        let holds = r.violations.is_empty();
        Ok((r, vec![("holds", json!(holds))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackupParams {
    at: Option<String>,
    known_at: Option<String>,
}

async fn backup_check(
    State(store): State<Arc<Store>>,
    p: Params<BackupParams>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let exported: Vec<backup::Exported> = body_objects(&body)?
        .into_iter()
        .map(|(_, kind, ns, name)| (kind, ns, name))
        .collect();
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    answer(move || {
        let r = backup::check(&store, &exported, &AsOf::new(&store, at, known_at)?)?;
        let approval = !r.flags.is_empty();
        Ok((r, vec![("needs_approval", json!(approval))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolloutParams {
    revision: String,
    app: Option<String>,
    cohort_attribute: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
}

async fn rollout_status(
    State(store): State<Arc<Store>>,
    p: Params<RolloutParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let attribute = p.cohort_attribute.as_deref().unwrap_or("wave");
        let s = rollout::status(&store, &p.revision, p.app.as_deref(), attribute, &as_of)?;
        let failed: u64 = s.cohorts.iter().map(|c| c.failed).sum();
        Ok((s, vec![("needs_approval", json!(failed > 0))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegressionParams {
    since: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
}

async fn rollout_regressions(
    State(store): State<Arc<Store>>,
    p: Params<RegressionParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (since, _) = clocks(&p.since, &None)?;
    let since = p.since.is_some().then_some(since);
    answer(move || {
        let found = rollout::regressions(&store, since, &AsOf::new(&store, at, known_at)?)?;
        Ok((found, vec![]))
    })
    .await
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
