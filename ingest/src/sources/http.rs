//! HTTP ingest: envelopes, every adapter format, the Kubernetes audit
//! webhook backend, and Flux and Argo CD notification webhooks.
//!
//! Each request body is one input run through the same pipeline as a file
//! (framing, decoding, redaction, quarantine of bad records), and the
//! requests in flight share commits ([`crate::group_commit`]): the answer
//! `{"appended", "duplicates", "rejected"}` is sent only after the commit
//! holding the request's events is durable. Overload is refused, never queued without
//! bound: at most `max_in_flight` requests are being ingested at once, and
//! another gets 429 with `Retry-After`; a body over `max_body_bytes` gets
//! 413; a body none of whose records decode gets 400 naming the first
//! problem (its records are quarantined like any rejected input).
//!
//! | route | format |
//! |---|---|
//! | `POST /v1/events` | envelopes (JSON Lines or a JSON array) |
//! | `POST /v1/ingest/{format}` | any `--format` name |
//! | `POST /v1/ingest/{format}/stream?name=FILE` | the same, streamed: no body limit, answered with the whole summary (what `annal ingest` beside a server sends) |
//! | `POST /v1/k8s/audit?cluster=ID` | `k8s-audit` (a kube-apiserver webhook backend's `EventList`) |
//! | `POST /v1/webhooks/flux?cluster=ID` | `flux` (notification-controller generic provider) |
//! | `POST /v1/webhooks/argocd?cluster=ID` | `argocd` |
//!
//! Every route takes `cluster=` (for inputs that do not name one) and
//! `time=` (valid time for inputs that carry none).

/// A line on stderr that never panics: a server whose stderr was closed
/// (its parent went away) must keep serving and shut down cleanly.
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use annal_schemas::{ErrorCode, Timestamp};
use annal_store::Store;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::group_commit::GroupCommit;
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

/// Counters of the ingest routes, for `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    appended: AtomicU64,
    duplicates: AtomicU64,
    rejected: AtomicU64,
    refused: AtomicU64,
    in_flight: AtomicU64,
    /// Request durations (body read to durable commit), cumulative per
    /// bucket of [`LATENCY_BUCKETS`], then the count and the sum in µs.
    latency: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
}

/// Upper bounds (seconds) of the commit latency histogram.
pub const LATENCY_BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

impl Metrics {
    /// Requests being ingested now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Prometheus text exposition of the counters.
    pub fn render(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        };
        metric(
            "annal_ingest_appended_total",
            "counter",
            "Envelopes appended over HTTP.",
            get(&self.appended),
        );
        metric(
            "annal_ingest_duplicates_total",
            "counter",
            "Envelopes already stored.",
            get(&self.duplicates),
        );
        metric(
            "annal_ingest_rejected_total",
            "counter",
            "Records rejected and quarantined.",
            get(&self.rejected),
        );
        metric(
            "annal_ingest_refused_total",
            "counter",
            "Requests refused with 429.",
            get(&self.refused),
        );
        metric(
            "annal_ingest_queue_depth",
            "gauge",
            "Ingest requests in flight.",
            get(&self.in_flight),
        );
        out.push_str("# HELP annal_ingest_commit_seconds Time from a request's body to its durable commit.\n");
        out.push_str("# TYPE annal_ingest_commit_seconds histogram\n");
        for (le, count) in LATENCY_BUCKETS.iter().zip(&self.latency) {
            out.push_str(&format!(
                "annal_ingest_commit_seconds_bucket{{le=\"{le}\"}} {}\n",
                get(count)
            ));
        }
        let n = get(&self.latency_count);
        out.push_str(&format!(
            "annal_ingest_commit_seconds_bucket{{le=\"+Inf\"}} {n}\n"
        ));
        out.push_str(&format!(
            "annal_ingest_commit_seconds_sum {}\nannal_ingest_commit_seconds_count {n}\n",
            get(&self.latency_sum_micros) as f64 / 1e6
        ));
        out
    }

    fn observe(&self, seconds: f64) {
        for (le, count) in LATENCY_BUCKETS.iter().zip(&self.latency) {
            if seconds <= *le {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }
}

#[derive(Clone)]
struct Ingest {
    store: Arc<Store>,
    slots: Arc<Semaphore>,
    max_body_bytes: usize,
    metrics: Arc<Metrics>,
    /// Requests in flight share commits through it.
    commits: GroupCommit,
    /// Bodies being decoded at once (one per core): decoding is all CPU.
    decoders: Arc<Semaphore>,
}

/// The ingest routes over `store`, counting into `metrics`.
pub fn router(store: Arc<Store>, limits: Limits, metrics: Arc<Metrics>) -> Router {
    let state = Ingest {
        commits: GroupCommit::start(store.clone(), crate::group_commit::DEFAULT_MAX_EVENTS),
        store,
        slots: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
        decoders: Arc::new(Semaphore::new(
            std::thread::available_parallelism().map_or(2, |n| n.get()),
        )),
        max_body_bytes: limits.max_body_bytes,
        metrics,
    };
    Router::new()
        .route("/v1/events", post(events))
        .route("/v1/ingest/{format}", post(any_format))
        .route("/v1/ingest/{format}/stream", post(stream))
        .route("/v1/k8s/audit", post(k8s_audit))
        .route("/v1/webhooks/flux", post(flux))
        .route("/v1/webhooks/argocd", post(argocd))
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

/// Query string of every ingest route.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    cluster: Option<String>,
    time: Option<String>,
    /// The input's name in rejections and the quarantine (the streamed
    /// route only).
    name: Option<String>,
}

type QueryParams = Result<Query<Params>, axum::extract::rejection::QueryRejection>;

async fn events(State(s): State<Ingest>, q: QueryParams, body: Body) -> Response {
    ingest(s, Format::Envelope, "/v1/events", q, body).await
}

async fn any_format(
    State(s): State<Ingest>,
    Path(format): Path<String>,
    q: QueryParams,
    body: Body,
) -> Response {
    match format.parse::<Format>() {
        Ok(f) => ingest(s, f, "/v1/ingest", q, body).await,
        Err(e) => error(ErrorCode::NotFound, e.to_string()),
    }
}

async fn k8s_audit(State(s): State<Ingest>, q: QueryParams, body: Body) -> Response {
    ingest(s, Format::K8sAudit, "/v1/k8s/audit", q, body).await
}

async fn flux(State(s): State<Ingest>, q: QueryParams, body: Body) -> Response {
    ingest(s, Format::Flux, "/v1/webhooks/flux", q, body).await
}

async fn argocd(State(s): State<Ingest>, q: QueryParams, body: Body) -> Response {
    ingest(s, Format::ArgoCd, "/v1/webhooks/argocd", q, body).await
}

/// Rejections a streamed answer lists (the rest are counted).
const LISTED_REJECTIONS: usize = 100;

/// One whole input, streamed: the body is read as the pipeline consumes
/// it (never held whole), so it has no size limit; it holds one slot until
/// its last commit. The answer is the pipeline's summary, with the first
/// rejections, so that `annal ingest` beside a server prints what it
/// prints alone.
async fn stream(
    State(s): State<Ingest>,
    Path(format): Path<String>,
    q: QueryParams,
    body: Body,
) -> Response {
    let format = match format.parse::<Format>() {
        Ok(f) => f,
        Err(e) => return error(ErrorCode::NotFound, e.to_string()),
    };
    let Admitted {
        params,
        time,
        permit,
        gauge: _gauge,
    } = match admit(&s, q, "cluster=, time=, name=") {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        use futures::StreamExt as _;
        let mut frames = body.into_data_stream();
        while let Some(frame) = frames.next().await {
            if tx.send(frame.map_err(|e| e.to_string())).await.is_err() {
                break;
            }
        }
    });
    let name = params
        .name
        .unwrap_or_else(|| "http:/v1/ingest/stream".into());
    let options = Options {
        cluster: params.cluster,
        time,
        group_commit: Some(s.commits.clone()),
        ..Options::default()
    };
    let store = s.store.clone();
    let result = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut listed = Listed::default();
        let input = Input::reader(
            &name,
            BodyReader {
                rx,
                current: bytes::Bytes::new(),
            },
        );
        pipeline::run(&store, vec![input], format, &options, &mut listed)
            .map(|summary| (summary, listed, store.size()))
    })
    .await;
    match result {
        Ok(Ok((summary, listed, size))) => {
            let m = &s.metrics;
            m.appended.fetch_add(summary.appended, Ordering::Relaxed);
            m.duplicates
                .fetch_add(summary.duplicates, Ordering::Relaxed);
            m.rejected.fetch_add(summary.rejected, Ordering::Relaxed);
            let times: serde_json::Map<String, serde_json::Value> = summary
                .times
                .iter()
                .map(|(source, n)| (source.as_str().to_string(), n.into()))
                .collect();
            let body = json!({
                "appended": summary.appended, "duplicates": summary.duplicates,
                "rejected": summary.rejected, "skipped": summary.skipped,
                "skips": summary.skips, "inputs": summary.inputs,
                "time_sources": times, "records": summary.records,
                "bytes": summary.bytes, "size": size,
                "rejections": listed.0,
            });
            (StatusCode::OK, Json(body)).into_response()
        }
        Ok(Err(e)) => {
            log!("annal: streamed ingest failed: {e}");
            error(ErrorCode::Internal, format!("ingest failed: {e}"))
        }
        Err(e) => {
            log!("annal: ingest task failed: {e}");
            error(
                ErrorCode::Internal,
                "ingest failed (see the server log)".into(),
            )
        }
    }
}

/// The first rejections of a streamed input, as `{"reason", "quarantine_id"}`.
#[derive(Default)]
struct Listed(Vec<serde_json::Value>);

impl Observer for Listed {
    fn rejected(&mut self, rejected: &Rejected, quarantine_id: &str) {
        if self.0.len() < LISTED_REJECTIONS {
            self.0
                .push(json!({"reason": rejected.to_string(), "quarantine_id": quarantine_id}));
        }
    }
}

/// A request body as a blocking reader, for the pipeline's thread.
struct BodyReader {
    rx: tokio::sync::mpsc::Receiver<Result<bytes::Bytes, String>>,
    current: bytes::Bytes,
}

impl std::io::Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(b)) => self.current = b,
                Some(Err(e)) => return Err(std::io::Error::other(format!("request body: {e}"))),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        let _ = self.current.split_to(n);
        Ok(n)
    }
}

/// A request's parameters (`accepted` names them in the 400) and its
/// ingest slot (429 when every slot is taken). The slot is taken before
/// the body is read, so a slow sender holds it too: memory is bounded by
/// slots × body limit.
fn admit(s: &Ingest, q: QueryParams, accepted: &str) -> Result<Admitted, Box<Response>> {
    let Ok(Query(params)) = q else {
        return Err(Box::new(error(
            ErrorCode::BadRequest,
            format!("unknown or malformed query parameters ({accepted})"),
        )));
    };
    let time = match params
        .time
        .as_deref()
        .map(|t| Timestamp::parse_at(t, Timestamp::now()))
    {
        Some(Err(e)) => return Err(Box::new(error(ErrorCode::BadRequest, format!("time: {e}")))),
        Some(Ok(t)) => Some(t),
        None => None,
    };
    let Ok(permit) = s.slots.clone().try_acquire_owned() else {
        s.metrics.refused.fetch_add(1, Ordering::Relaxed);
        return Err(Box::new(
            (
                status_of(ErrorCode::Busy),
                [(header::RETRY_AFTER, "1")],
                Json(ErrorCode::Busy.body("ingest is at capacity; retry later")),
            )
                .into_response(),
        ));
    };
    s.metrics.in_flight.fetch_add(1, Ordering::Relaxed);
    Ok(Admitted {
        params,
        time,
        permit,
        gauge: InFlight(s.metrics.clone()),
    })
}

/// An admitted request: its parameters, valid time and slot, and the
/// in-flight gauge it holds until it ends.
struct Admitted {
    params: Params,
    time: Option<Timestamp>,
    permit: tokio::sync::OwnedSemaphorePermit,
    gauge: InFlight,
}

/// Decrements the in-flight gauge when a request ends, however it ends.
struct InFlight(Arc<Metrics>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The API's error document for `code` (see [`ErrorCode`]), with its
/// status.
fn error(code: ErrorCode, reason: String) -> Response {
    (status_of(code), Json(code.body(&reason))).into_response()
}

/// The HTTP status of `code`.
fn status_of(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
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

async fn ingest(s: Ingest, format: Format, route: &str, q: QueryParams, body: Body) -> Response {
    let Admitted {
        params,
        time,
        permit,
        gauge: _gauge,
    } = match admit(&s, q, "cluster=, time=") {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    let started = std::time::Instant::now();
    let body = match axum::body::to_bytes(body, s.max_body_bytes).await {
        Ok(b) => b,
        Err(e) if e.to_string().contains("length limit") => {
            return error(
                ErrorCode::BodyTooLarge,
                format!(
                    "the body is over {} bytes (--max-body-bytes)",
                    s.max_body_bytes
                ),
            )
        }
        Err(e) => return error(ErrorCode::BadRequest, format!("cannot read the body: {e}")),
    };
    let name = format!("http:{route}");
    let options = Options {
        cluster: params.cluster,
        time,
        ..Options::default()
    };
    let (store, commits) = (s.store.clone(), s.commits.clone());
    // The request keeps its slot (`permit`) until its commit answers, but
    // a thread only while its body is decoded: at most one per core
    // decodes, and a request waiting for its commit holds none.
    let Ok(decoding) = s.decoders.clone().acquire_owned().await else {
        return error(ErrorCode::Internal, "no decoder".into());
    };
    let submitted = tokio::task::spawn_blocking(move || {
        let _decoding = decoding;
        let mut first = FirstRejection::default();
        let input = Input::reader(&name, Cursor::new(body));
        pipeline::submit(&store, &commits, vec![input], format, &options, &mut first)
            .map(|submitted| (submitted, first.0))
    })
    .await;
    let result = match submitted {
        Ok(Ok((submitted, first))) => Ok(submitted.committed().await.map(|s| (s, first))),
        Ok(Err(e)) => Ok(Err(e)),
        Err(e) => Err(e),
    };
    drop(permit);
    match result {
        Ok(Ok((summary, first))) => {
            let m = &s.metrics;
            m.appended.fetch_add(summary.appended, Ordering::Relaxed);
            m.duplicates
                .fetch_add(summary.duplicates, Ordering::Relaxed);
            m.rejected.fetch_add(summary.rejected, Ordering::Relaxed);
            m.observe(started.elapsed().as_secs_f64());
            let counts = json!({"appended": summary.appended, "duplicates": summary.duplicates,
                                "rejected": summary.rejected});
            if summary.appended + summary.duplicates == 0 && summary.rejected > 0 {
                let mut body = counts;
                body["error"] = json!(first.unwrap_or_else(|| "no record decodes".into()));
                body["code"] = json!(ErrorCode::BadRequest.as_str());
                return (StatusCode::BAD_REQUEST, Json(body)).into_response();
            }
            (StatusCode::OK, Json(counts)).into_response()
        }
        Ok(Err(e)) => {
            log!("annal: ingest failed: {e}");
            error(
                ErrorCode::Internal,
                "ingest failed (see the server log)".into(),
            )
        }
        // The ingest task panicked: its message stays in the log.
        Err(e) => {
            log!("annal: ingest task failed: {e}");
            error(
                ErrorCode::Internal,
                "ingest failed (see the server log)".into(),
            )
        }
    }
}
