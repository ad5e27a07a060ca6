//! `annal serve`: the ledger's HTTP API on the embedded store.
//!
//! The routes merged in [`crate::routes`]. With `--tokens` every `/v1/` route needs a bearer token
//! of the right role ([`crate::auth`]); without, the server refuses any
//! address but loopback and says so. With `--tls-cert/--tls-key` it serves
//! HTTPS (rustls); with `--kafka-brokers` it also consumes Kafka topics.

/// A line on stderr that never panics: a server whose stderr was closed
/// (its parent went away) must keep serving and shut down cleanly.
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::sync::Arc;

use annal_ingest::sources::kafka;
use annal_store::Store;

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
    // A ledger written before the column sidecar (or one whose chunks were
    // lost) gets them in the background; scans read the leaves meanwhile.
    store.catch_up_columns();
    // A server answers many questions: each cluster's object names are
    // parsed once, not for every read, and the column chunks it reads are
    // kept as checked (both within a budget).
    store.keep_object_names();
    store.keep_column_chunks();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let store = Arc::new(store);
    let limits = annal_ingest::sources::http::Limits {
        max_body_bytes: args.max_body_bytes,
        max_in_flight: args.max_in_flight,
    };
    let metrics = Arc::new(annal_ingest::sources::http::Metrics::default());
    let kafka_metrics = args
        .kafka_brokers
        .as_ref()
        .map(|_| Arc::new(annal_ingest::sources::kafka::Metrics::default()));
    let sql_limits = annal_query::sql::Limits {
        memory_bytes: args.query_memory,
        timeout: Some(args.query_timeout),
        max_json_rows: usize::try_from(args.sql_max_rows).unwrap_or(usize::MAX),
        ..annal_query::sql::Limits::default()
    };
    let max_queries = usize::try_from(args.max_queries).unwrap_or(usize::MAX);
    let app = crate::routes::router(crate::routes::Api {
        store: store.clone(),
        sql_limits,
        max_queries,
        ingest_limits: limits,
        ingest_metrics: metrics,
        kafka_metrics: kafka_metrics.clone(),
        tokens,
    });
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(runtime.block_on(tls_config(cert, key))?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let listener = runtime.block_on(tokio::net::TcpListener::bind(args.listen))?;
    let addr = listener.local_addr()?;
    // `annal ingest` on this data directory finds the server here.
    let data = store.data_dir().root().to_path_buf();
    crate::server::Published::new(addr, tls.is_some(), args.tokens.is_some()).publish(&data)?;
    log!(
        "annal: serving on {scheme}://{addr} (read: /v1/sql, /v1/inventory, the recovery gates; ingest: /v1/events, /v1/ingest/FORMAT, /v1/k8s/audit, /v1/webhooks/flux|argocd; /healthz, /readyz, /metrics)"
    );
    if args.tokens.is_none() {
        log!("annal: no --tokens: serving without authentication, on loopback only");
    }
    // The Kafka consumer runs on a thread of its own. If it stops by itself
    // (the store refused a batch) the server stops too, so that a
    // supervisor restarts it rather than it serving a ledger gone stale.
    let consumer_ended = Arc::new(tokio::sync::Notify::new());
    let kafka = match (&args.kafka_brokers, kafka_metrics) {
        (Some(brokers), Some(kafka_metrics)) => {
            let mut config =
                kafka::Config::new(brokers, &args.kafka_group, args.kafka_topic.clone());
            config.settings = args.kafka_option.clone();
            config.members = args.kafka_members as usize;
            let ended = consumer_ended.clone();
            let running = kafka::start(store, config, kafka_metrics, move || ended.notify_one())?;
            let topics: Vec<String> = args
                .kafka_topic
                .iter()
                .map(|t| format!("{} ({})", t.name, t.format.name()))
                .collect();
            log!(
                "annal: consuming Kafka {brokers} as group {}: {}",
                args.kafka_group,
                topics.join(", ")
            );
            Some(running)
        }
        _ => None,
    };
    let serving = runtime.block_on(async {
        match tls {
            None => {
                axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown(consumer_ended))
                    .await
            }
            Some(config) => {
                let handle = axum_server::Handle::new();
                let stopper = handle.clone();
                tokio::spawn(async move {
                    shutdown(consumer_ended).await;
                    // Requests in flight finish (an ingest commits and is
                    // answered); idle connections close.
                    stopper.graceful_shutdown(Some(std::time::Duration::from_secs(30)));
                });
                axum_server::from_tcp_rustls(listener.into_std()?, config)
                    .handle(handle)
                    .serve(app.into_make_service())
                    .await
            }
        }
    });
    crate::server::Published::withdraw(&data);
    // Commits the consumer's pending batch and leaves the group.
    let consumed = kafka.map(|k| k.stop()).unwrap_or(Ok(()));
    serving?;
    consumed?;
    log!("annal: stopped");
    Ok(Exit::Ok)
}

/// The rustls server configuration from PEM files, with errors that name
/// the file at fault.
async fn tls_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<axum_server::tls_rustls::RustlsConfig, UsageError> {
    // One process-wide provider; a second install (never here) is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))
    };
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
    axum_server::tls_rustls::RustlsConfig::from_pem(cert_pem, key_pem)
        .await
        .map_err(|e| {
            UsageError(format!(
                "--tls-cert {} / --tls-key {}: {e}",
                cert.display(),
                key.display()
            ))
        })
}

/// Ctrl-C, SIGTERM, or the Kafka consumer ending by itself.
async fn shutdown(consumer_ended: Arc<tokio::sync::Notify>) {
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
        _ = consumer_ended.notified() => {}
    }
}
