//! The web UI of `annal serve`: server-rendered pages over the same
//! questions as the read API, for the people in a recovery room and the
//! auditors, who look before they type.
//!
//! Nothing is fetched at run time (no CDN, no font, no script from
//! elsewhere): the pages are HTML rendered here, with one stylesheet, one
//! small script of annal's and two vendored ones (htmx, uPlot) built into
//! the binary ([`assets`]), so the UI works air-gapped and offline; a
//! Content-Security-Policy on every page holds the browser to that. Every page's
//! state is in its URL (`/ui/inventory?at=2026-11-01T09:30:00Z&cluster=prod-eu1-a`),
//! so a link pasted into an incident channel shows the same answer. The
//! UI is read-only and asks for the same tokens as the read API: a login
//! form keeps a read token in an HttpOnly, SameSite=Strict cookie
//! ([`crate::auth`] accepts it on `/ui/` only).
//!
//! | page | module |
//! |---|---|
//! | `/ui/login` | [`login`] |
//! | `/ui/fleet`: clusters, their registry entry, objects and apps, staleness | [`fleet`] |
//! | `/ui/timeline`: events over time, bucketed on the server | [`timeline`] |
//! | `/ui/inventory`: the objects at an instant, filtered, paginated | [`inventory`] |
//! | `/ui/object`: one object's versions, manifests, diffs, blame, owners | [`object`] |
//! | `/ui/diff`: what changed between two instants, per cluster | [`diff`] |
//! | `/ui/app`: an app's syncs and health, last-good revision, objects, drift | [`app`] |
//! | `/ui/recovery`: takeover, prune, placement and fence gates, read-only | [`recovery`] |
//! | `/ui/integrity`: checkpoint, keys, inclusion proofs | [`integrity`] |
//! | `/ui/static/...`: stylesheet and scripts | [`assets`] |
//! | the frame, times, error pages | [`page`] |

use std::sync::Arc;

use annal_store::Store;
use axum::http::{header, HeaderValue};
use axum::response::{Redirect, Response};
use axum::routing::get;
use axum::Router;

use crate::auth::Tokens;

mod app;
mod assets;
mod diff;
mod fleet;
mod integrity;
mod inventory;
mod login;
mod object;
mod page;
mod recovery;
mod timeline;

/// What the pages read.
#[derive(Clone)]
pub struct Ui {
    pub store: Arc<Store>,
    /// `--tokens`, for the login form (`None`: no login).
    pub tokens: Option<Arc<Tokens>>,
}

/// The UI's routes.
pub fn router(ui: Ui) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/fleet") }))
        .route("/ui", get(|| async { Redirect::to("/ui/fleet") }))
        .route("/ui/", get(|| async { Redirect::to("/ui/fleet") }))
        .route("/ui/login", get(login::form).post(login::submit))
        .route("/ui/static/{*name}", get(assets::file))
        .route("/ui/fleet", get(fleet::page))
        .route("/ui/timeline", get(timeline::page))
        .route("/ui/inventory", get(inventory::page))
        .route("/ui/object", get(object::page))
        .route("/ui/diff", get(diff::page))
        .route("/ui/app", get(app::page))
        .route("/ui/recovery", get(recovery::page))
        .route("/ui/integrity", get(integrity::page))
        .layer(axum::middleware::map_response(policy))
        .with_state(ui)
}

/// Every UI response carries the page policy ([`page::CSP`]) and is not
/// to be framed or sniffed.
async fn policy(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(page::CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
