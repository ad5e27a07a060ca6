//! Bearer tokens with roles for `annal serve --tokens FILE`.
//!
//! The file has one token per line, `ROLE TOKEN` (roles: `ingest`, `read`,
//! `admin`; `#` starts a comment). Only BLAKE3 hashes of the tokens are
//! kept in memory, and a presented token is compared by hash in constant
//! time (`blake3::Hash`'s equality), so neither the file's contents nor the
//! comparison's timing leak a token. `admin` may do everything; `ingest`
//! the ingest routes; `read` everything else under `/v1/` and the web UI
//! under `/ui/`. `/healthz`, `/readyz`, `/metrics`, `/`, the UI's login
//! page and its stylesheet need no token. The UI's pages also take the
//! token from the [`COOKIE`] its login sets (and only they do: the API
//! stays bearer-only, so no cookie can make it act); without one they
//! redirect to the login page.

use std::path::Path;
use std::sync::Arc;

use annal_query::http::status_of;
use annal_schemas::ErrorCode;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// The cookie the UI's login sets (HttpOnly, SameSite=Strict, `/ui/`).
pub const COOKIE: &str = "annal_token";

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The ingest routes.
    Ingest,
    /// The read routes.
    Read,
    /// Everything.
    Admin,
}

/// The tokens, hashed.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    hashes: Vec<(blake3::Hash, Role)>,
}

impl Tokens {
    /// Reads a tokens file; errors name the file and line.
    pub fn load(path: &Path) -> Result<Tokens, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Tokens::parse(&text).map_err(|(line, e)| format!("{}:{line}: {e}", path.display()))
    }

    fn parse(text: &str) -> Result<Tokens, (usize, String)> {
        let mut hashes = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(role), Some(token), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err((i + 1, "expected `ROLE TOKEN`".into()));
            };
            let role = match role {
                "ingest" => Role::Ingest,
                "read" => Role::Read,
                "admin" => Role::Admin,
                other => {
                    return Err((
                        i + 1,
                        format!("unknown role {other:?} (ingest, read, admin)"),
                    ))
                }
            };
            if token.len() < 16 {
                return Err((i + 1, "tokens must be at least 16 characters".into()));
            }
            hashes.push((blake3::hash(token.as_bytes()), role));
        }
        if hashes.is_empty() {
            return Err((0, "no tokens".into()));
        }
        Ok(Tokens { hashes })
    }

    /// The role of `token`, if any. Every stored hash is compared, so the
    /// time taken does not depend on which one matches.
    pub fn role(&self, token: &str) -> Option<Role> {
        let presented = blake3::hash(token.as_bytes());
        let mut found = None;
        for (hash, role) in &self.hashes {
            if *hash == presented {
                found = Some(*role);
            }
        }
        found
    }
}

/// The role a path needs (`None`: open).
pub fn needed(path: &str) -> Option<Role> {
    if matches!(
        path,
        "/healthz" | "/readyz" | "/metrics" | "/" | "/ui" | "/ui/" | "/ui/login"
    ) || path.starts_with("/ui/static/")
    {
        return None;
    }
    let under = ["/v1/ingest/", "/v1/k8s/", "/v1/webhooks/"];
    if path == "/v1/events" || under.iter().any(|p| path.starts_with(p)) {
        Some(Role::Ingest)
    } else {
        Some(Role::Read)
    }
}

/// Middleware: 401 without a valid bearer token, 403 with the wrong role.
pub async fn check(State(tokens): State<Arc<Tokens>>, req: Request, next: Next) -> Response {
    let Some(needed) = needed(req.uri().path()) else {
        return next.run(req).await;
    };
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let page = req.uri().path().starts_with("/ui/");
    let cookie = page.then(|| cookie(&req)).flatten();
    if page && bearer.is_none() {
        // A person at a browser: the login page, then back here.
        return match cookie.as_deref().and_then(|t| tokens.role(t)) {
            Some(Role::Read | Role::Admin) => next.run(req).await,
            _ => {
                let here = req
                    .uri()
                    .path_and_query()
                    .map_or("/ui/fleet", |p| p.as_str())
                    .to_string();
                let to = format!(
                    "/ui/login?{}",
                    serde_urlencoded::to_string([("next", here)]).unwrap_or_default()
                );
                axum::response::Redirect::to(&to).into_response()
            }
        };
    }
    let deny = |code: ErrorCode, reason: &str| {
        (
            status_of(code),
            [(header::WWW_AUTHENTICATE, "Bearer")],
            Json(code.body(reason)),
        )
            .into_response()
    };
    match bearer.and_then(|t| tokens.role(t.trim())) {
        None => deny(ErrorCode::Unauthorized, "a valid bearer token is required"),
        Some(role) if role == Role::Admin || role == needed => next.run(req).await,
        Some(_) => deny(
            ErrorCode::Forbidden,
            "this token's role may not use this route",
        ),
    }
}

/// The UI's token cookie, if the request carries one.
fn cookie(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE).then(|| value.to_string())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_hash_and_match_their_roles() {
        let t = Tokens::parse(
            "# comment\ningest ingest-token-0123456789\nread  read-token-0123456789  # x\n",
        )
        .unwrap();
        assert_eq!(t.role("ingest-token-0123456789"), Some(Role::Ingest));
        assert_eq!(t.role("read-token-0123456789"), Some(Role::Read));
        assert_eq!(t.role("read-token-012345678"), None);
        assert!(
            !format!("{t:?}").contains("read-token"),
            "only hashes are kept"
        );
        assert!(Tokens::parse("root abcdefghijklmnopq").is_err());
        assert!(Tokens::parse("read short").is_err());
        assert!(Tokens::parse("").is_err());
    }

    #[test]
    fn routes_need_the_right_role() {
        assert_eq!(needed("/healthz"), None);
        assert_eq!(needed("/v1/events"), Some(Role::Ingest));
        assert_eq!(needed("/v1/k8s/audit"), Some(Role::Ingest));
        assert_eq!(needed("/v1/sql"), Some(Role::Read));
        assert_eq!(needed("/ui/inventory"), Some(Role::Read));
        assert_eq!(needed("/ui/login"), None);
        assert_eq!(needed("/ui/static/annal.css"), None);
        assert_eq!(needed("/v1/eventsx"), Some(Role::Read));
        // An encoded or padded spelling of an ingest route is no ingest
        // route: it needs `read`, and the router does not match it (404).
        assert_eq!(needed("/v1/%65vents"), Some(Role::Read));
        assert_eq!(needed("//v1/events"), Some(Role::Read));
    }
}
