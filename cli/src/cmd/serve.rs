//! `annal serve`: the ledger's HTTP API on the embedded store.
//!
//! For now the read routes of `annal-query` plus `/healthz`. There is no
//! authentication yet, so the server refuses any address but loopback.

use std::sync::Arc;

use annal_store::Store;
use axum::routing::get;

use crate::args::ServeArgs;
use crate::exit::{Exit, UsageError};

pub fn run(store: Store, args: &ServeArgs) -> anyhow::Result<Exit> {
    if !args.listen.ip().is_loopback() {
        return Err(UsageError(format!(
            "--listen {}: without token authentication annal serves loopback only \
             (127.0.0.1 or ::1)",
            args.listen
        ))
        .into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let app =
            annal_query::http::router(Arc::new(store)).route("/healthz", get(|| async { "ok\n" }));
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let addr = listener.local_addr()?;
        eprintln!(
            "annal: serving on http://{addr} (POST /v1/sql, GET /v1/inventory, GET /healthz)"
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await?;
        eprintln!("annal: stopped");
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
