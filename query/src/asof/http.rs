//! As-of reads over HTTP:
//!
//! - `GET /v1/inventory?at=TS&known_at=TS&cluster=C&owner=APP`: the objects
//!   live at `at` (default now), the rows `annal inventory -o json` prints.
//! - `GET /v1/diff?from=T1&to=T2&known_at=TS&cluster=C1,C2&owner=APP`: what
//!   changed between the two instants (`to` default now), the document
//!   `annal diff -o json` prints.
//! - `GET /v1/coverage?from=T1&to=T2&at=TS&known_at=TS&cluster=C1,C2&gap=10m`:
//!   when each cluster was heard from, its gaps, and whether it is stale
//!   at `at`, the document `annal coverage -o json` prints.
//! - `GET /v1/history?cluster=C&kind=K&group=G&namespace=NS&name=N&field=PATH`:
//!   every version of one object with who made it, or a field's blame,
//!   the document `annal history -o json` prints (404: no such object).
//! - `GET /v1/drift?since=T1&until=T2&cluster=C1,C2&app=APP`: writes to
//!   GitOps-owned objects outside Git (`since` default a day before
//!   `until`, itself default now), the document `annal drift -o json`
//!   prints, with `needs_approval` when any is not reverted.
//!
//! Each as-of document carries `stale_clusters` (`gap=` sets the
//! threshold): the clusters in scope whose data at the instant is stale.

use std::sync::Arc;

use annal_store::Store;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::asof::inventory::{self, AsOf};
use crate::asof::{coverage, diff, drift, history};
use crate::http::request::{answer, clocks, gap_seconds, list, params, Params};
use crate::http::ApiError;

/// The as-of read routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/inventory", get(inventory))
        .route("/v1/diff", get(diff_of))
        .route("/v1/coverage", get(coverage_of))
        .route("/v1/history", get(history_of))
        .route("/v1/drift", get(drift_of))
        .with_state(store)
}

/// Query string of `GET /v1/inventory`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InventoryParams {
    at: Option<String>,
    known_at: Option<String>,
    cluster: Option<String>,
    owner: Option<String>,
    gap: Option<String>,
}

async fn inventory(
    State(store): State<Arc<Store>>,
    p: Params<InventoryParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let gap = gap_seconds(&p.gap)?;
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let rows: Vec<Value> = inventory::fleet_at(&store, p.cluster.as_deref(), &as_of)?
            .into_iter()
            .filter(|r| p.owner.as_ref().is_none_or(|o| r.claims.contains(o)))
            .map(|r| r.to_json())
            .collect();
        let scope: Vec<String> = p.cluster.iter().cloned().collect();
        let stale = coverage::stale_in(&store, &scope, &as_of, gap)?;
        let doc = json!({
            "at": as_of.valid.to_string(),
            "known_at": as_of.known_at.map(|t| t.to_string()),
            "stale_clusters": stale,
            "objects": rows,
        });
        Ok((doc, vec![]))
    })
    .await
}

/// Query string of `GET /v1/diff`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffParams {
    from: String,
    to: Option<String>,
    known_at: Option<String>,
    cluster: Option<String>,
    owner: Option<String>,
    gap: Option<String>,
}

async fn diff_of(
    State(store): State<Arc<Store>>,
    p: Params<DiffParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (to, known_at) = clocks(&p.to, &p.known_at)?;
    let (from, _) = clocks(&Some(p.from.clone()), &None)?;
    let clusters = list(&p.cluster);
    let gap = gap_seconds(&p.gap)?;
    answer(move || {
        let (from, to) = diff::sides(&store, from, to, known_at)?;
        let mut stale = coverage::stale_in(&store, &clusters, &from, gap)?;
        for s in coverage::stale_in(&store, &clusters, &to, gap)? {
            if !stale.contains(&s) {
                stale.push(s);
            }
        }
        let scope = (!clusters.is_empty()).then_some(clusters.as_slice());
        let mut doc = diff::Document::default();
        for r in diff::fleet_diff(&store, scope, &from, &to)? {
            let r = r?;
            if p.owner.as_ref().is_none_or(|o| r.owned_by(o)) {
                doc.push(r);
            }
        }
        let extra = vec![
            ("from", json!(from.valid.to_string())),
            ("to", json!(to.valid.to_string())),
            ("stale_clusters", json!(stale)),
        ];
        Ok((doc, extra))
    })
    .await
}

/// Query string of `GET /v1/coverage`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CoverageParams {
    from: Option<String>,
    to: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    cluster: Option<String>,
    gap: Option<String>,
}

async fn coverage_of(
    State(store): State<Arc<Store>>,
    p: Params<CoverageParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (to, known_at) = clocks(&p.to, &p.known_at)?;
    let from = match &p.from {
        Some(_) => Some(clocks(&p.from, &None)?.0),
        None => None,
    };
    let at = match &p.at {
        Some(_) => clocks(&p.at, &None)?.0,
        None => to,
    };
    let gap = gap_seconds(&p.gap)?.unwrap_or(coverage::DEFAULT_GAP_SECONDS);
    let clusters = list(&p.cluster);
    answer(move || {
        let window = coverage::Window {
            from,
            to,
            at: AsOf::new(&store, at, known_at)?,
            gap_seconds: gap,
        };
        let doc = coverage::document(&store, &clusters, &window)?;
        Ok((doc, vec![]))
    })
    .await
}

/// Query string of `GET /v1/history`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryParams {
    cluster: String,
    kind: String,
    group: Option<String>,
    namespace: Option<String>,
    name: String,
    field: Option<String>,
}

async fn history_of(
    State(store): State<Arc<Store>>,
    p: Params<HistoryParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let q = history::ObjectQuery {
        cluster: p.cluster,
        group: p.group,
        kind: p.kind,
        namespace: p.namespace.unwrap_or_default(),
        name: p.name,
    };
    answer(move || Ok((history::document(&store, &q, p.field.as_deref())?, vec![]))).await
}

/// Query string of `GET /v1/drift`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DriftParams {
    since: Option<String>,
    until: Option<String>,
    cluster: Option<String>,
    app: Option<String>,
    normal_managers: Option<String>,
}

async fn drift_of(
    State(store): State<Arc<Store>>,
    p: Params<DriftParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (until, _) = clocks(&p.until, &None)?;
    let since = match &p.since {
        Some(_) => clocks(&p.since, &None)?.0,
        None => annal_schemas::Timestamp::from_unix_micros(until.unix_micros() - 86_400_000_000)
            .unwrap_or(until),
    };
    let q = drift::DriftQuery {
        since,
        until,
        clusters: list(&p.cluster),
        app: p.app,
        normal_managers: list(&p.normal_managers),
    };
    answer(move || {
        let rows = drift::drift(&store, &q)?;
        let approval = rows.iter().any(|r| !r.reverted);
        Ok((
            drift::document(&q, &rows),
            vec![("needs_approval", json!(approval))],
        ))
    })
    .await
}
