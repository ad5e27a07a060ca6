//! `/ui/login`: with `--tokens`, a read (or admin) token typed once is
//! kept in an HttpOnly, SameSite=Strict cookie scoped to `/ui/`: scripts
//! cannot read it and other sites cannot send it. Ingest-only tokens are
//! refused, as they are on the read API. Without `--tokens` the server is
//! on loopback only and there is nothing to log in to.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use maud::html;
use serde::Deserialize;

use super::page::frame;
use super::Ui;
use crate::auth::{Role, COOKIE};

#[derive(Debug, Default, Deserialize)]
pub struct Next {
    next: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Submitted {
    token: String,
    next: Option<String>,
}

/// Where to go after logging in: a UI page, nothing else (no open redirect).
fn target(next: &Option<String>) -> String {
    match next.as_deref() {
        Some(n) if n.starts_with("/ui/") && !n.starts_with("/ui//") && !n.contains('\\') => {
            n.to_string()
        }
        _ => "/ui/fleet".into(),
    }
}

pub async fn form(State(ui): State<Ui>, Query(n): Query<Next>) -> Response {
    page(&ui, &target(&n.next), None, StatusCode::OK)
}

pub async fn submit(State(ui): State<Ui>, Form(f): Form<Submitted>) -> Response {
    let next = target(&f.next);
    let Some(tokens) = &ui.tokens else {
        return Redirect::to(&next).into_response();
    };
    match tokens.role(f.token.trim()) {
        Some(Role::Read | Role::Admin) => {
            let cookie = format!(
                "{COOKIE}={}; Path=/ui/; HttpOnly; SameSite=Strict",
                f.token.trim()
            );
            ([(header::SET_COOKIE, cookie)], Redirect::to(&next)).into_response()
        }
        Some(Role::Ingest) => page(
            &ui,
            &next,
            Some("That token may only ingest; the UI needs a read or admin token."),
            StatusCode::FORBIDDEN,
        ),
        None => page(
            &ui,
            &next,
            Some("That token is not one this server accepts."),
            StatusCode::UNAUTHORIZED,
        ),
    }
}

fn page(ui: &Ui, next: &str, problem: Option<&str>, status: StatusCode) -> Response {
    let body = html! {
        @if ui.tokens.is_none() {
            p { "This server runs without " code { "--tokens" } ", on loopback only: no login is needed." }
            p { a href=(next) { "Continue" } }
        } @else {
            @if let Some(problem) = problem {
                p.error role="alert" { (problem) }
            }
            // A plain post: the answer sets the cookie and redirects,
            // which a whole-page load follows best.
            form method="post" action="/ui/login" hx-boost="false" {
                label { "Read token " input type="password" name="token" autocomplete="current-password" required autofocus; }
                input type="hidden" name="next" value=(next);
                " "
                button type="submit" { "Log in" }
            }
            p.muted { "The token is kept in a cookie only this site's pages send, and no script can read." }
        }
    };
    (status, frame("Log in", "", body)).into_response()
}
