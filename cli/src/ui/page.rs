//! The frame every page shares, its stylesheet, how times read, and the
//! error pages (a bad time is a 400 that says what is expected; an
//! unknown cluster a 404 that names it).

use annal_schemas::Timestamp;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

/// The stylesheet: light and dark from the reader's system setting,
/// focus rings for keyboard use, nothing loaded from elsewhere.
const CSS: &str = include_str!("annal.css");

pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        CSS,
    )
        .into_response()
}

/// The pages in the navigation bar: (path, label).
const NAV: [(&str, &str); 3] = [
    ("/ui/fleet", "Fleet"),
    ("/ui/inventory", "Inventory"),
    ("/ui/diff", "Diff"),
];

/// A whole page: `title`, the navigation with `active` marked, `body`.
pub fn frame(title: &str, active: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · annal" }
                link rel="stylesheet" href="/ui/static/annal.css";
            }
            body {
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
