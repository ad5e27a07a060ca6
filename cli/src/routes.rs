//! The whole HTTP API of `annal serve`, merged in one place from the
//! routers each domain exposes (as the axum examples do):
//!
//! | routes | module |
//! |---|---|
//! | `/v1/sql` | `annal_query::sql::http` |
//! | `/v1/inventory` | `annal_query::asof::http` |
//! | `/v1/takeover-plan`, `/v1/prune-plan`, `/v1/placement/diff`, `/v1/fence/check`, `/v1/backup/check`, `/v1/rollout/*` | `annal_query::recovery::http` |
//! | `/v1/checkpoint`, `/v1/proof/*` | `annal_query::proof::http` |
//! | `/v1/events`, `/v1/ingest/*`, `/v1/k8s/audit`, `/v1/webhooks/*` | `annal_ingest::sources::http` |
//! | `/`, `/ui/*` (the web UI) | [`crate::ui`] |
//! | `/healthz`, `/readyz`, `/metrics` | here |
//!
//! Authentication ([`crate::auth`]) wraps all of them when tokens are
//! given; a panicking handler is a 500 with the API's error body.

use std::sync::Arc;

use annal_ingest::sources::{http as ingest_http, kafka};
use annal_query::{asof, proof, recovery, sql};
use annal_store::Store;
use axum::routing::get;
use axum::Router;

use crate::auth::Tokens;

/// What the routes are built from.
pub struct Api {
    pub store: Arc<Store>,
    pub sql_limits: sql::Limits,
    pub max_queries: usize,
    pub ingest_limits: ingest_http::Limits,
    pub ingest_metrics: Arc<ingest_http::Metrics>,
    pub kafka_metrics: Option<Arc<kafka::Metrics>>,
    pub tokens: Option<Arc<Tokens>>,
}

/// Every route, with authentication and the panic guard.
pub fn router(api: Api) -> Router {
    let store = api.store;
    let ui = crate::ui::router(crate::ui::Ui {
        store: store.clone(),
        tokens: api.tokens.clone(),
    });
    let sql_usage = api.sql_limits.usage.clone();
    let (exposition, kafka_exposition) = (api.ingest_metrics.clone(), api.kafka_metrics);
    let mut app = Router::new()
        .merge(sql::http::router(
            store.clone(),
            api.sql_limits,
            api.max_queries,
        ))
        .merge(ui)
        .merge(asof::http::router(store.clone()))
        .merge(recovery::http::router(store.clone()))
        .merge(proof::http::router(store.clone()))
        .merge(ingest_http::router(
            store,
            api.ingest_limits,
            api.ingest_metrics,
        ))
        .route("/healthz", get(|| async { "ok\n" }))
        // The store is open and recovered before the listener binds.
        .route("/readyz", get(|| async { "ready\n" }))
        .route(
            "/metrics",
            get(move || {
                let mut text = exposition.render();
                text.push_str(&sql_usage.render());
                if let Some(k) = &kafka_exposition {
                    text.push_str(&k.render());
                }
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4",
                        )],
                        text,
                    )
                }
            }),
        );
    if let Some(tokens) = api.tokens {
        app = app.layer(axum::middleware::from_fn_with_state(
            tokens,
            crate::auth::check,
        ));
    }
    // A panic in a handler is a 500 with a stable body; its message stays
    // in the server log (the panic hook prints it there).
    app.layer(tower_http::catch_panic::CatchPanicLayer::custom(
        |_: Box<dyn std::any::Any + Send>| {
            axum::response::IntoResponse::into_response(annal_query::http::ApiError::Internal(
                "a request handler panicked".into(),
            ))
        },
    ))
}
