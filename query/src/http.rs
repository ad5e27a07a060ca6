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
//! SQL is read-only and bounded ([`crate::sql::policy`],
//! [`crate::sql::limits`]): a statement that is not a query is 403, a query
//! over its memory 413, past its time 408 (cancelled), and more queries at
//! once than the server runs 429 with `Retry-After`. A JSON answer holds at
//! most `max_json_rows` rows and says `"truncated": true` past them; an
//! Arrow IPC answer streams every row.
//!
//! Every error is `{"error": "...", "code": "..."}` with a stable `code`
//! (`bad_request`, `not_found`, `conflict`, `not_allowed`, `memory_limit`,
//! `timeout`, `busy`, `internal`). Bad SQL and bad times are 400 naming the
//! problem; a failing store or a panic is 500 without details (they go to
//! stderr). Authentication and roles wrap this router where it is served.

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
use axum::extract::{FromRef, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::inventory::{self, AsOf};
use crate::{backup, fence, placement, proof, prune, rollout, takeover};
use crate::{sql, QueryError};

/// The media type of an Arrow IPC stream.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// The read routes over `store`, with SQL bounded by `limits` and at most
/// `max_queries` SQL queries at once.
pub fn router(store: Arc<Store>, limits: sql::Limits, max_queries: usize) -> Router {
    let state = Read {
        store,
        sql: Arc::new(SqlService {
            limits,
            slots: Arc::new(Semaphore::new(max_queries.max(1))),
        }),
    };
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
        .with_state(state)
}

/// The state of the read routes: the store, and what bounds SQL.
#[derive(Clone)]
struct Read {
    store: Arc<Store>,
    sql: Arc<SqlService>,
}

impl FromRef<Read> for Arc<Store> {
    fn from_ref(read: &Read) -> Arc<Store> {
        read.store.clone()
    }
}

/// The bounds of `POST /v1/sql`.
struct SqlService {
    limits: sql::Limits,
    /// One permit per query running (an Arrow answer holds its permit
    /// until its last byte is sent).
    slots: Arc<Semaphore>,
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
    /// A statement that is not allowed (SQL that is not a query): 403.
    NotAllowed(String),
    /// A query over its memory limit: 413 naming the limit.
    MemoryLimit(String),
    /// A query past its time limit: 408 naming the limit.
    Timeout(String),
    /// More queries at once than the server runs: 429 with Retry-After.
    Busy(String),
    /// The server failed: 500, details logged, not returned.
    Internal(String),
}

impl ApiError {
    /// The status and stable code of this error.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::NotAllowed(_) => (StatusCode::FORBIDDEN, "not_allowed"),
            ApiError::MemoryLimit(_) => (StatusCode::PAYLOAD_TOO_LARGE, "memory_limit"),
            ApiError::Timeout(_) => (StatusCode::REQUEST_TIMEOUT, "timeout"),
            ApiError::Busy(_) => (StatusCode::TOO_MANY_REQUESTS, "busy"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Sql(_)
            | QueryError::Time { .. }
            | QueryError::BadInput(_)
            | QueryError::Evaluation(_)
            | QueryError::Store(annal_store::StoreError::Proof(_)) => {
                ApiError::BadRequest(e.to_string())
            }
            QueryError::NotFound(_) => ApiError::NotFound(e.to_string()),
            QueryError::Diverged(_) => ApiError::Conflict(e.to_string()),
            QueryError::NotAllowed(_) => ApiError::NotAllowed(e.to_string()),
            QueryError::MemoryLimit { ref detail, .. } => {
                log!("annal: SQL query over its memory limit: {detail}");
                ApiError::MemoryLimit(e.to_string())
            }
            QueryError::Timeout { .. } => ApiError::Timeout(e.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let reason = match self {
            ApiError::Internal(detail) => {
                log!("annal: internal error: {detail}");
                "internal error (see the server log)".to_string()
            }
            ApiError::BadRequest(r)
            | ApiError::NotFound(r)
            | ApiError::Conflict(r)
            | ApiError::NotAllowed(r)
            | ApiError::MemoryLimit(r)
            | ApiError::Timeout(r)
            | ApiError::Busy(r) => r,
        };
        let body = Json(json!({"error": reason, "code": code}));
        if status == StatusCode::TOO_MANY_REQUESTS {
            return (status, [(header::RETRY_AFTER, "1")], body).into_response();
        }
        (status, body).into_response()
    }
}

async fn run_sql(
    State(read): State<Read>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let service = read.sql.clone();
    let query = query_text(&headers, &body)?;
    let Ok(permit) = service.slots.clone().try_acquire_owned() else {
        service.limits.usage.count(sql::limits::Stopped::Busy);
        return Err(ApiError::Busy(
            "the server is running as many SQL queries as it allows (--max-queries); retry later"
                .into(),
        ));
    };
    let ctx = sql::session_with(read.store, &service.limits).await?;
    let wants_arrow = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(ARROW_STREAM));
    if wants_arrow {
        let mut rows = sql::stream(&ctx, &query).await?;
        // Wait for the first batch before answering, so that a query that
        // fails before producing rows (most do, when they fail) still gets
        // its status and code.
        let first = match rows.next().await {
            Some(Err(e)) => return Err(e.into()),
            first => first.and_then(Result::ok),
        };
        return Ok((
            [(header::CONTENT_TYPE, ARROW_STREAM)],
            axum::body::Body::from_stream(arrow_stream(rows, first, permit)),
        )
            .into_response());
    }
    // One row past the cap tells a cut answer from one that fits exactly.
    let cap = service.limits.max_json_rows;
    let answer = sql::run_capped(&ctx, &query, Some(cap.saturating_add(1))).await?;
    drop(permit);
    let columns: Vec<Value> = answer
        .schema
        .fields()
        .iter()
        .map(|f| json!({"name": f.name(), "type": f.data_type().to_string()}))
        .collect();
    let mut rows = sql::rows_as_json(&answer)?;
    let truncated = rows.len() > cap;
    rows.truncate(cap);
    let mut doc = json!({"columns": columns, "rows": rows});
    if truncated {
        doc["truncated"] = json!(true);
        doc["row_limit"] = json!(cap);
        doc["note"] = json!(format!(
            "result truncated at {cap} rows (--sql-max-rows); ask for Accept: {ARROW_STREAM} to stream every row"
        ));
    }
    Ok(Json(doc).into_response())
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

/// An Arrow IPC stream of `rows`, encoded batch by batch as they come. A
/// failure after the first bytes (the time limit, say) can no longer change
/// the status: the body ends without the end-of-stream marker, so a reader
/// sees a broken stream rather than a short answer, and the reason goes to
/// the server's log.
fn arrow_stream(
    rows: sql::Rows,
    first: Option<datafusion::arrow::array::RecordBatch>,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    use datafusion::arrow::ipc::writer::StreamWriter;
    enum State {
        Start(sql::Rows, Option<datafusion::arrow::array::RecordBatch>),
        Batches(sql::Rows, Box<StreamWriter<Vec<u8>>>),
        Done,
    }
    let broken = |e: String| {
        log!("annal: SQL answer stopped: {e}");
        std::io::Error::other(e)
    };
    futures::stream::unfold(
        (State::Start(rows, first), permit),
        move |(state, permit)| async move {
            match state {
                State::Done => None,
                State::Start(rows, first) => {
                    let head = StreamWriter::try_new(Vec::new(), &rows.schema).and_then(|mut w| {
                        if let Some(batch) = &first {
                            w.write(batch)?;
                        }
                        Ok(w)
                    });
                    match head {
                        Ok(mut writer) => {
                            let head = Bytes::from(std::mem::take(writer.get_mut()));
                            Some((Ok(head), (State::Batches(rows, Box::new(writer)), permit)))
                        }
                        Err(e) => Some((Err(broken(e.to_string())), (State::Done, permit))),
                    }
                }
                State::Batches(mut rows, mut writer) => match rows.next().await {
                    Some(Ok(batch)) => match writer.write(&batch) {
                        Ok(()) => {
                            let bytes = Bytes::from(std::mem::take(writer.get_mut()));
                            Some((Ok(bytes), (State::Batches(rows, writer), permit)))
                        }
                        Err(e) => Some((Err(broken(e.to_string())), (State::Done, permit))),
                    },
                    Some(Err(e)) => Some((Err(broken(e.to_string())), (State::Done, permit))),
                    None => match writer.finish() {
                        Ok(()) => {
                            let tail = Bytes::from(std::mem::take(writer.get_mut()));
                            Some((Ok(tail), (State::Done, permit)))
                        }
                        Err(e) => Some((Err(broken(e.to_string())), (State::Done, permit))),
                    },
                },
            }
        },
    )
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
