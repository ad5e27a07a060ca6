//! `annal serve`: the ledger's HTTP API on the embedded store.
//!
//! The read routes of `annal-query`, the ingest routes of `annal-ingest`
//! and `/healthz`. With `--tokens` every `/v1/` route needs a bearer token
//! of the right role ([`crate::auth`]); without, the server refuses any
//! address but loopback and says so.

/// A line on stderr that never panics: a server whose stderr was closed
/// (its parent went away) must keep serving and shut down cleanly.
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::sync::Arc;

use annal_store::Store;
use axum::routing::get;

use crate::args::ServeArgs;
use crate::auth::Tokens;
use crate::exit::{Exit, UsageError};

pub fn run(store: Store, args: &ServeArgs) -> anyhow::Result<Exit> {
    let tokens = match &args.tokens {
        Some(path) => Some(Arc::new(Tokens::load(path).map_err(UsageError)?)),
        None if !args.listen.ip().is_loopback() => {
            return Err(UsageError(format!(
                "--listen {}: without --tokens annal serves loopback only (127.0.0.1 or ::1)",
                args.listen
            ))
            .into());
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let store = Arc::new(store);
        let limits = annal_ingest::sources::http::Limits {
            max_body_bytes: args.max_body_bytes,
            max_in_flight: args.max_in_flight,
        };
        let metrics = Arc::new(annal_ingest::sources::http::Metrics::default());
        let exposition = metrics.clone();
        let mut app = annal_query::http::router(store.clone())
            .merge(annal_ingest::sources::http::router(store, limits, metrics))
            .route("/healthz", get(|| async { "ok\n" }))
            // The store is open and recovered before the listener binds.
            .route("/readyz", get(|| async { "ready\n" }))
            .route(
                "/metrics",
                get(move || {
                    let m = exposition.clone();
                    async move {
                        (
                            [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                            m.render(),
                        )
                    }
                }),
            );
        if let Some(tokens) = tokens {
            app = app.layer(axum::middleware::from_fn_with_state(tokens, crate::auth::check));
        }
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let addr = listener.local_addr()?;
        log!(
            "annal: serving on http://{addr} (read: /v1/sql, /v1/inventory, the recovery gates; ingest: /v1/events, /v1/ingest/FORMAT, /v1/k8s/audit, /v1/webhooks/flux|argocd; /healthz, /readyz, /metrics)"
        );
        if args.tokens.is_none() {
            log!("annal: no --tokens: serving without authentication, on loopback only");
        }
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await?;
        log!("annal: stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Exit::Ok)
}

/// Ctrl-C or SIGTERM.
async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
