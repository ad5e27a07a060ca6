//! The files the pages load, built into the binary and served under
//! `/ui/static/`: annal's own stylesheet and script, and the vendored
//! htmx (links and forms swap the page without a full reload, with a
//! loading indicator) and uPlot (the timeline chart), whose versions and
//! licences `static/vendor/README.md` records. Nothing else is served
//! from there, and nothing is fetched from elsewhere.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// (name under `/ui/static/`, content type, bytes).
const FILES: [(&str, &str, &[u8]); 7] = [
    (
        "annal.css",
        "text/css; charset=utf-8",
        include_bytes!("static/annal.css"),
    ),
    (
        "annal.js",
        "text/javascript; charset=utf-8",
        include_bytes!("static/annal.js"),
    ),
    (
        "vendor/htmx.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("static/vendor/htmx.min.js"),
    ),
    (
        "vendor/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("static/vendor/uPlot.iife.min.js"),
    ),
    (
        "vendor/uPlot.min.css",
        "text/css; charset=utf-8",
        include_bytes!("static/vendor/uPlot.min.css"),
    ),
    (
        "vendor/LICENSE-htmx",
        "text/plain; charset=utf-8",
        include_bytes!("static/vendor/LICENSE-htmx"),
    ),
    (
        "vendor/LICENSE-uPlot",
        "text/plain; charset=utf-8",
        include_bytes!("static/vendor/LICENSE-uPlot"),
    ),
];

/// `GET /ui/static/*name`. The files change only with the binary, so a
/// browser may keep them for an hour.
pub async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=3600"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            *bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}
