//! The frame every page shares, its stylesheet, how times read, and the
//! error pages (a bad time is a 400 that says what is expected; an
//! unknown cluster a 404 that names it).

use annal_schemas::Timestamp;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

/// The pages in the navigation bar: (path, label).
const NAV: [(&str, &str); 7] = [
    ("/ui/fleet", "Fleet"),
    ("/ui/timeline", "Timeline"),
    ("/ui/inventory", "Inventory"),
    ("/ui/diff", "Diff"),
    ("/ui/app", "Apps"),
    ("/ui/recovery", "Recovery"),
    ("/ui/integrity", "Integrity"),
];

/// The Content-Security-Policy of every page: scripts, styles and
/// requests from this server only, so a page can load nothing from
/// elsewhere even if a bug put an outside address in it.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A whole page: `title`, the navigation with `active` marked, `body`.
pub fn frame(title: &str, active: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · annal" }
                // htmx's own inline indicator styles would break the
                // policy above (annal.css has them); error pages (400,
                // 404) are pages too, swapped in like any other.
                meta name="htmx-config" content=r#"{"includeIndicatorStyles":false,"allowEval":false,"historyCacheSize":0,"responseHandling":[{"code":"204","swap":false},{"code":"[2345]..","swap":true,"error":false}]}"#;
                // No icon to fetch (the browser would ask for /favicon.ico).
                link rel="icon" href="data:,";
                link rel="stylesheet" href="/ui/static/annal.css";
                link rel="stylesheet" href="/ui/static/vendor/uPlot.min.css";
                script src="/ui/static/vendor/htmx.min.js" defer {}
                script src="/ui/static/vendor/uPlot.iife.min.js" defer {}
                script src="/ui/static/annal.js" defer {}
            }
            // Links and forms swap the page body without a reload; the
            // bar shows while a request takes longer than 200 ms.
            body hx-boost="true" hx-indicator="#loading" {
                div #loading .htmx-indicator role="progressbar" aria-label="Loading" {}
                a.skip href="#main" { "Skip to content" }
                header {
                    nav aria-label="Pages" {
                        span.brand { "annal" }
                        @for (path, label) in NAV {
                            @if path == active {
                                a href=(path) aria-current="page" { (label) }
                            } @else {
                                a href=(path) { (label) }
                            }
                        }
                    }
                }
                main #main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// An error page with its status: what went wrong and what to do.
pub fn error(status: StatusCode, title: &str, message: &str) -> Response {
    let body = html! {
        p.error role="alert" { (message) }
        p { a href="/ui/fleet" { "Back to the fleet" } }
    };
    (status, frame(title, "", body)).into_response()
}

/// Why a page's question had no answer.
pub enum Failure {
    /// Something named does not exist: (title, message), a 404.
    NotFound(&'static str, String),
    /// The question cannot be answered as asked, a 400.
    Bad(String),
}

impl From<annal_query::QueryError> for Failure {
    fn from(e: annal_query::QueryError) -> Self {
        match e {
            annal_query::QueryError::NotFound(m) => Failure::NotFound("Not found", m),
            e => Failure::Bad(e.to_string()),
        }
    }
}

impl From<annal_store::StoreError> for Failure {
    fn from(e: annal_store::StoreError) -> Self {
        Failure::Bad(e.to_string())
    }
}

/// Runs a page's reads off the async threads (they touch files) and turns
/// a failure into its error page.
pub async fn answer<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(Failure::NotFound(title, m))) => Err(error(StatusCode::NOT_FOUND, title, &m)),
        Ok(Err(Failure::Bad(m))) => Err(error(StatusCode::BAD_REQUEST, "Cannot answer", &m)),
        Err(e) => Err(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Failed",
            &e.to_string(),
        )),
    }
}

/// The 404 page's failure for a cluster no event names.
pub fn unknown_cluster(cluster: &str) -> Failure {
    Failure::NotFound(
        "No such cluster",
        format!("The ledger has never heard of cluster {cluster:?}: no event names it."),
    )
}

/// Whether any event names `cluster`.
pub fn known_cluster(store: &annal_store::Store, cluster: &str) -> Result<bool, Failure> {
    Ok(store.event_clusters()?.iter().any(|c| c == cluster))
}

/// A time for people: UTC with its offset spelled out.
pub fn utc(t: &Timestamp) -> String {
    let s = t.to_string();
    match s.strip_suffix('Z') {
        Some(t) => format!("{} UTC (+00:00)", t.replacen('T', " ", 1)),
        None => s,
    }
}

/// Reads `name=value` as a time (RFC 3339 or `now-2h`); the error is
/// what [`bad_time`] shows.
pub fn time(name: &str, value: &Option<String>) -> Result<Option<Timestamp>, String> {
    let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    Timestamp::parse_at(v.trim(), Timestamp::now())
        .map(Some)
        .map_err(|e| {
            format!(
                "{name}={v:?} is not a time ({e}): use RFC 3339, like 2026-11-01T09:30:00Z, or a moment relative to now, like now-2h"
            )
        })
}

/// `at` (default now) and `known_at`, or the message [`bad_time`] shows.
pub fn clocks(
    at: &Option<String>,
    known_at: &Option<String>,
) -> Result<(Timestamp, Option<Timestamp>), String> {
    Ok((
        time("at", at)?.unwrap_or_else(Timestamp::now),
        time("known_at", known_at)?,
    ))
}

/// The 400 page for a time that is not one.
pub fn bad_time(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "Not a time", message)
}

/// The time control: valid time and "as known at" system time, kept in
/// the query string.
pub fn time_control(action: &str, at: &Timestamp, known_at: Option<&Timestamp>) -> Markup {
    html! {
        form.controls method="get" action=(action) {
            label { "Valid time " input name="at" value=(at.to_string()) size="26" aria-describedby="time-help"; }
            label { "As known at " input name="known_at" value=(known_at.map(|t| t.to_string()).unwrap_or_default()) size="26" placeholder="everything recorded"; }
            button type="submit" { "Show" }
            small #time-help { "RFC 3339 (2026-11-01T09:30:00Z) or now-2h; shown in UTC" }
        }
    }
}

/// A query string from its pairs (empty values left out).
pub fn query(pairs: &[(&str, &str)]) -> String {
    let kept: Vec<(&str, &str)> = pairs
        .iter()
        .copied()
        .filter(|(_, v)| !v.is_empty())
        .collect();
    serde_urlencoded::to_string(kept).unwrap_or_default()
}
