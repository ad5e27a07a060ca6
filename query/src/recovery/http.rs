//! The recovery gates over HTTP. Every answer is the document its command
//! prints with `-o json` (with `needs_approval`, or `holds` for the fence);
//! the gate itself is the caller's, as HTTP has no exit codes.
//!
//! - `GET /v1/takeover-plan?controller=NEW&apps=A,B&at=TS&known_at=TS`
//!   (or `clusters=C1,C2` instead of `apps`).
//! - `POST /v1/prune-plan?app=&cluster=&namespace=&at=&known_at=&max_deletions=&max_fraction=`
//!   with the rendered manifests as a JSON array or `List` in the body.
//! - `GET /v1/placement/diff?selector=&exclude=&from=&to=` (or
//!   `proposed_selector=&at=`) `&max_add=&max_remove=`.
//! - `GET /v1/fence/check?controller=&since=&principals=a,b&at=`.
//! - `POST /v1/backup/check?at=` with the export as a JSON array or `List`.
//! - `GET /v1/rollout/status?revision=&app=&cohort_attribute=&at=` and
//!   `GET /v1/rollout/regressions?since=&at=`.

use std::sync::Arc;

use annal_schemas::Timestamp;
use annal_store::Store;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::asof::coverage;
use crate::asof::inventory::AsOf;
use crate::error::QueryError;
use crate::http::request::{answer, clocks, gap_seconds, list, params, Params};
use crate::http::ApiError;
use crate::recovery::{backup, fence, placement, prune, rollout, takeover};

/// The gate routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/v1/takeover-plan", get(takeover_plan))
        .route("/v1/prune-plan", post(prune_plan))
        .route("/v1/placement/diff", get(placement_diff))
        .route("/v1/fence/check", get(fence_check))
        .route("/v1/backup/check", post(backup_check))
        .route("/v1/rollout/status", get(rollout_status))
        .route("/v1/rollout/regressions", get(rollout_regressions))
        .with_state(store)
}

/// Query string of `GET /v1/takeover-plan`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TakeoverParams {
    controller: String,
    apps: Option<String>,
    clusters: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    normal_managers: Option<String>,
    gap: Option<String>,
    allow_stale: Option<bool>,
}

async fn takeover_plan(
    State(store): State<Arc<Store>>,
    p: Params<TakeoverParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let scope = match (list(&p.apps), list(&p.clusters)) {
        (apps, clusters) if apps.is_empty() && !clusters.is_empty() => {
            takeover::Scope::Clusters(clusters)
        }
        (apps, clusters) if !apps.is_empty() && clusters.is_empty() => takeover::Scope::Apps(apps),
        _ => {
            return Err(ApiError::BadRequest(
                "give exactly one of apps=A,B or clusters=C1,C2".into(),
            ))
        }
    };
    let request = takeover::Request {
        controller: p.controller.clone(),
        scope,
        normal_managers: list(&p.normal_managers),
    };
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let gap = gap_seconds(&p.gap)?;
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let plan = takeover::plan(&store, &request, &as_of)?;
        let mut clusters: Vec<String> = plan.summary.iter().map(|s| s.cluster.clone()).collect();
        clusters.dedup();
        let stale = coverage::stale_in(&store, &clusters, &as_of, gap)?;
        let approval = plan.needs_approval() || (!stale.is_empty() && p.allow_stale != Some(true));
        Ok((
            plan,
            vec![
                ("needs_approval", json!(approval)),
                ("stale_clusters", json!(stale)),
            ],
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PruneParams {
    app: String,
    cluster: String,
    namespace: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    max_deletions: Option<u64>,
    max_fraction: Option<f64>,
    normal_managers: Option<String>,
    gap: Option<String>,
    allow_stale: Option<bool>,
}

async fn prune_plan(
    State(store): State<Arc<Store>>,
    p: Params<PruneParams>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let desired = body_objects(&body)?
        .into_iter()
        .map(|(api, kind, ns, name)| {
            prune::desired_name(&api, kind, ns, name, p.namespace.as_deref())
        })
        .collect();
    let request = prune::Request {
        app: p.app,
        cluster: p.cluster,
        desired,
        max_deletions: p.max_deletions,
        max_fraction: p.max_fraction,
        normal_managers: list(&p.normal_managers),
    };
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (gap, allow_stale) = (gap_seconds(&p.gap)?, p.allow_stale == Some(true));
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let plan = prune::plan(&store, &request, &as_of)?;
        let stale =
            coverage::stale_in(&store, std::slice::from_ref(&request.cluster), &as_of, gap)?;
        let approval = plan.needs_approval() || (!stale.is_empty() && !allow_stale);
        Ok((
            plan,
            vec![
                ("needs_approval", json!(approval)),
                ("stale_clusters", json!(stale)),
            ],
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlacementParams {
    selector: String,
    exclude: Option<String>,
    from: Option<String>,
    to: Option<String>,
    proposed_selector: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    max_add: Option<u64>,
    max_remove: Option<u64>,
}

async fn placement_diff(
    State(store): State<Arc<Store>>,
    p: Params<PlacementParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let parse = |s: &str| placement::Selector::parse(s).map_err(ApiError::from);
    let selector = parse(&p.selector)?;
    let exclude = parse(p.exclude.as_deref().unwrap_or(""))?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (from, to) = match (&p.proposed_selector, &p.from, &p.to) {
        (Some(proposed), None, None) => ((selector.clone(), at), (parse(proposed)?, at)),
        (None, Some(_), Some(_)) => {
            let (t1, _) = clocks(&p.from, &None)?;
            let (t2, _) = clocks(&p.to, &None)?;
            ((selector.clone(), t1), (selector, t2))
        }
        _ => {
            return Err(ApiError::BadRequest(
                "give from and to, or proposed_selector".into(),
            ))
        }
    };
    let (max_add, max_remove) = (p.max_add, p.max_remove.unwrap_or(0));
    answer(move || {
        let side = |(selector, t): (placement::Selector, Timestamp)| -> Result<placement::Side, QueryError> {
            Ok(placement::Side {
                selector,
                as_of: AsOf::new(&store, t, known_at)?,
            })
        };
        let d = placement::diff(&store, &side(from)?, &side(to)?, &exclude)?;
        let flags = placement::gate(&d, max_add, max_remove);
        let approval = !flags.is_empty();
        Ok((d, vec![("flags", json!(flags)), ("needs_approval", json!(approval))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FenceParams {
    controller: String,
    since: Option<String>,
    principals: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
}

async fn fence_check(
    State(store): State<Arc<Store>>,
    p: Params<FenceParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (since, _) = clocks(&p.since, &None)?;
    let request = fence::Request {
        controller: p.controller,
        since: p.since.is_some().then_some(since),
        principals: list(&p.principals),
    };
    answer(move || {
        let r = fence::check(&store, &request, &AsOf::new(&store, at, known_at)?)?;
        let holds = r.violations.is_empty();
        Ok((r, vec![("holds", json!(holds))]))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackupParams {
    at: Option<String>,
    known_at: Option<String>,
}

async fn backup_check(
    State(store): State<Arc<Store>>,
    p: Params<BackupParams>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let exported: Vec<backup::Exported> = body_objects(&body)?
        .into_iter()
        .map(|(_, kind, ns, name)| (kind, ns, name))
        .collect();
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let r = backup::check(&store, &exported, &as_of)?;
        let approval = !r.flags.is_empty();
        let stale = coverage::stale_in(&store, &[], &as_of, None)?;
        Ok((
            r,
            vec![
                ("needs_approval", json!(approval)),
                ("stale_clusters", json!(stale)),
            ],
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolloutParams {
    revision: String,
    app: Option<String>,
    cohort_attribute: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
}

async fn rollout_status(
    State(store): State<Arc<Store>>,
    p: Params<RolloutParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let attribute = p.cohort_attribute.as_deref().unwrap_or("wave");
        let s = rollout::status(&store, &p.revision, p.app.as_deref(), attribute, &as_of)?;
        let failed: u64 = s.cohorts.iter().map(|c| c.failed).sum();
        let stale = coverage::stale_in(&store, &[], &as_of, None)?;
        Ok((
            s,
            vec![
                ("needs_approval", json!(failed > 0)),
                ("stale_clusters", json!(stale)),
            ],
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegressionParams {
    since: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
}

async fn rollout_regressions(
    State(store): State<Arc<Store>>,
    p: Params<RegressionParams>,
) -> Result<Json<Value>, ApiError> {
    let p = params(p)?;
    let (at, known_at) = clocks(&p.at, &p.known_at)?;
    let (since, _) = clocks(&p.since, &None)?;
    let since = p.since.is_some().then_some(since);
    answer(move || {
        let found = rollout::regressions(&store, since, &AsOf::new(&store, at, known_at)?)?;
        Ok((found, vec![]))
    })
    .await
}

/// (apiVersion, kind, namespace, name) of each object in a JSON body: an
/// array of objects or a `*List`.
fn body_objects(body: &[u8]) -> Result<Vec<(String, String, String, String)>, ApiError> {
    let bad = |m: String| ApiError::BadRequest(m);
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        bad(format!(
            "the body is not JSON (a JSON array or List of objects): {e}"
        ))
    })?;
    let items = match &value {
        Value::Array(items) => items.clone(),
        Value::Object(o) if o.get("items").is_some_and(Value::is_array) => {
            o["items"].as_array().cloned().unwrap_or_default()
        }
        _ => {
            return Err(bad(
                "the body must be a JSON array of objects or a List".into()
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let text = |path: &[&str]| -> Result<String, ApiError> {
                let mut at = o;
                for p in path {
                    at = at
                        .get(p)
                        .ok_or_else(|| bad(format!("object {i}: no {}", path.join("."))))?;
                }
                at.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("object {i}: {} is not a string", path.join("."))))
            };
            Ok((
                text(&["apiVersion"])?,
                text(&["kind"])?,
                o.get("metadata")
                    .and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                text(&["metadata", "name"])?,
            ))
        })
        .collect()
}
