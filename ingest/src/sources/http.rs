//! HTTP ingest: envelopes, every adapter format, the Kubernetes audit
//! webhook backend, and Flux and Argo CD notification webhooks.
//!
//! Each request body is one input run through the same pipeline as a file
//! (framing, decoding, redaction, quarantine of bad records, group commit),
//! and the answer `{"appended", "duplicates", "rejected"}` is sent only
//! after the batch is durable. Overload is refused, never queued without
//! bound: at most `max_in_flight` requests are being ingested at once, and
//! another gets 429 with `Retry-After`; a body over `max_body_bytes` gets
//! 413; a body none of whose records decode gets 400 naming the first
//! problem (its records are quarantined like any rejected input).
//!
//! | route | format |
//! |---|---|
//! | `POST /v1/events` | envelopes (JSON Lines or a JSON array) |
//! | `POST /v1/ingest/{format}` | any `--format` name |
//! | `POST /v1/k8s/audit?cluster=ID` | `k8s-audit` (a kube-apiserver webhook backend's `EventList`) |
//! | `POST /v1/webhooks/flux?cluster=ID` | `flux` (notification-controller generic provider) |
//! | `POST /v1/webhooks/argocd?cluster=ID` | `argocd` |
//!
//! Every route takes `cluster=` (for inputs that do not name one) and
//! `time=` (valid time for inputs that carry none).

use std::io::Cursor;
use std::sync::Arc;

use annal_schemas::Timestamp;
use annal_store::Store;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::pipeline::{self, Observer, Options};
use crate::{Format, Input, Rejected};

/// Bounds on what ingest accepts at once.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request body (413 above).
    pub max_body_bytes: usize,
    /// Requests ingested at once (429 above).
    pub max_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 16 << 20,
            max_in_flight: 8,
        }
    }
}

#[derive(Clone)]
struct Ingest {
    store: Arc<Store>,
    slots: Arc<Semaphore>,
}

/// The ingest routes over `store`.
pub fn router(store: Arc<Store>, limits: Limits) -> Router {
    let state = Ingest {
        store,
        slots: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
    };
    Router::new()
        .route("/v1/events", post(events))
        .route("/v1/ingest/{format}", post(any_format))
        .route("/v1/k8s/audit", post(k8s_audit))
        .route("/v1/webhooks/flux", post(flux))
        .route("/v1/webhooks/argocd", post(argocd))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .with_state(state)
}

/// Query string of every ingest route.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    cluster: Option<String>,
    time: Option<String>,
}

type QueryParams = Result<Query<Params>, axum::extract::rejection::QueryRejection>;

async fn events(State(s): State<Ingest>, q: QueryParams, body: Bytes) -> Response {
    ingest(s, Format::Envelope, "/v1/events", q, body).await
}

async fn any_format(
    State(s): State<Ingest>,
    Path(format): Path<String>,
    q: QueryParams,
    body: Bytes,
) -> Response {
    match format.parse::<Format>() {
        Ok(f) => ingest(s, f, "/v1/ingest", q, body).await,
        Err(e) => error(StatusCode::NOT_FOUND, e.to_string()),
    }
}

async fn k8s_audit(State(s): State<Ingest>, q: QueryParams, body: Bytes) -> Response {
    ingest(s, Format::K8sAudit, "/v1/k8s/audit", q, body).await
}

async fn flux(State(s): State<Ingest>, q: QueryParams, body: Bytes) -> Response {
    ingest(s, Format::Flux, "/v1/webhooks/flux", q, body).await
}

async fn argocd(State(s): State<Ingest>, q: QueryParams, body: Bytes) -> Response {
    ingest(s, Format::ArgoCd, "/v1/webhooks/argocd", q, body).await
}

fn error(status: StatusCode, reason: String) -> Response {
    (status, Json(json!({"error": reason}))).into_response()
}

/// Keeps the first rejection's reason, for a 400.
#[derive(Default)]
struct FirstRejection(Option<String>);

impl Observer for FirstRejection {
    fn rejected(&mut self, rejected: &Rejected, _quarantine_id: &str) {
        if self.0.is_none() {
            self.0 = Some(rejected.to_string());
        }
    }
}

async fn ingest(s: Ingest, format: Format, route: &str, q: QueryParams, body: Bytes) -> Response {
    let Ok(Query(params)) = q else {
        return error(
            StatusCode::BAD_REQUEST,
            "unknown or malformed query parameters (cluster=, time=)".into(),
        );
    };
    let time = match params
        .time
        .as_deref()
        .map(|t| Timestamp::parse_at(t, Timestamp::now()))
    {
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, format!("time: {e}")),
        Some(Ok(t)) => Some(t),
        None => None,
    };
    let Ok(permit) = s.slots.clone().try_acquire_owned() else {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            Json(json!({"error": "ingest is at capacity; retry later"})),
        )
            .into_response();
    };
    let name = format!("http:{route}");
    let options = Options {
        cluster: params.cluster,
        time,
        ..Options::default()
    };
    let store = s.store.clone();
    let result = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut first = FirstRejection::default();
        let input = Input::reader(&name, Cursor::new(body));
        pipeline::run(&store, vec![input], format, &options, &mut first)
            .map(|summary| (summary, first.0))
    })
    .await;
    match result {
        Ok(Ok((summary, first))) => {
            let counts = json!({"appended": summary.appended, "duplicates": summary.duplicates,
                                "rejected": summary.rejected});
            if summary.appended + summary.duplicates == 0 && summary.rejected > 0 {
                let mut body = counts;
                body["error"] = json!(first.unwrap_or_else(|| "no record decodes".into()));
                return (StatusCode::BAD_REQUEST, Json(body)).into_response();
            }
            (StatusCode::OK, Json(counts)).into_response()
        }
        Ok(Err(e)) => {
            eprintln!("annal: ingest failed: {e}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "ingest failed (see the server log)".into(),
            )
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
