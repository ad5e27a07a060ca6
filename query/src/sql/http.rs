//! `POST /v1/sql`: the body is the query, either as text or as JSON
//! `{"query": "..."}`. The answer is JSON `{"columns": [{"name", "type"}],
//! "rows": [{...}]}`, or an Arrow IPC stream when the request says
//! `Accept: application/vnd.apache.arrow.stream`.
//!
//! SQL is read-only and bounded ([`crate::sql::policy`],
//! [`crate::sql::limits`]): a statement that is not a query is 403, a query
//! over its memory 413, past its time 408 (cancelled), and more queries at
//! once than the server runs 429 with `Retry-After`. A JSON answer holds at
//! most `max_json_rows` rows and says `"truncated": true` past them; an
//! Arrow IPC answer streams every row.

use std::sync::Arc;

use annal_store::Store;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::http::{log, ApiError};
use crate::sql;

/// The media type of an Arrow IPC stream.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// `POST /v1/sql` over `store`, bounded by `limits` and at most
/// `max_queries` queries at once.
pub fn router(store: Arc<Store>, limits: sql::Limits, max_queries: usize) -> Router {
    let state = SqlService {
        store,
        limits: Arc::new(limits),
        slots: Arc::new(Semaphore::new(max_queries.max(1))),
    };
    Router::new()
        .route("/v1/sql", post(run_sql))
        .with_state(state)
}

/// The store, and what bounds its SQL.
#[derive(Clone)]
struct SqlService {
    store: Arc<Store>,
    limits: Arc<sql::Limits>,
    /// One permit per query running (an Arrow answer holds its permit
    /// until its last byte is sent).
    slots: Arc<Semaphore>,
}

async fn run_sql(
    State(service): State<SqlService>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let query = query_text(&headers, &body)?;
    let Ok(permit) = service.slots.clone().try_acquire_owned() else {
        service.limits.usage.count(sql::limits::Stopped::Busy);
        return Err(ApiError::Busy(
            "the server is running as many SQL queries as it allows (--max-queries); retry later"
                .into(),
        ));
    };
    let ctx = sql::session_with(service.store.clone(), &service.limits).await?;
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
