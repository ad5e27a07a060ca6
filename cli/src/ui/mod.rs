//! The web UI of `annal serve`: server-rendered pages over the same
//! questions as the read API, for the people in a recovery room and the
//! auditors, who look before they type.
//!
//! Nothing is fetched at run time (no CDN, no font, no script from
//! elsewhere): the pages are HTML rendered here and one stylesheet built
//! into the binary, so the UI works air-gapped and offline. Every page's
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
//! | `/ui/inventory`: the objects at an instant, filtered, paginated | [`inventory`] |
//! | `/ui/diff`: what changed between two instants, per cluster | [`diff`] |
//! | the frame, styles, times, error pages | [`page`] |

use std::sync::Arc;

use annal_store::Store;
use axum::response::Redirect;
use axum::routing::get;
use axum::Router;

use crate::auth::Tokens;

mod diff;
mod fleet;
mod inventory;
mod login;
mod page;

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
        .route("/ui/static/annal.css", get(page::stylesheet))
        .route("/ui/fleet", get(fleet::page))
        .route("/ui/inventory", get(inventory::page))
        .route("/ui/diff", get(diff::page))
        .with_state(ui)
}
