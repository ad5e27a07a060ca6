//! What every read route shares: the error a request fails with
//! ([`ApiError`], one JSON shape and one status per kind), and the parsing
//! of query strings and clocks ([`request`]).
//!
//! The routes themselves live with their domain, each module exposing its
//! own `router`: [`crate::sql::http`] (`/v1/sql`), [`crate::asof::http`]
//! (`/v1/inventory`), [`crate::recovery::http`] (the gates) and
//! [`crate::proof::http`] (checkpoint and proofs). `annal serve` merges
//! them with the ingest routes and wraps them in authentication.
//!
//! Every error is `{"error": "...", "code": "..."}` with a stable `code`
//! (`bad_request`, `not_found`, `conflict`, `not_allowed`, `memory_limit`,
//! `timeout`, `busy`, `internal`). Bad input is 400 naming the problem; a
//! failing store or a panic is 500 without details (they go to stderr).

/// A line on stderr that never panics: a server whose stderr was closed
/// (its parent went away) must keep serving and shut down cleanly.
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use log;

mod error;
pub mod request;

pub use error::{status_of, ApiError};
