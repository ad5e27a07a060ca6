//! `/ui/inventory`: the objects live at an instant (valid time, and as
//! the ledger knew it at a system time), with owners and conflicts,
//! filtered by cluster, namespace, kind, owner and conflict, and paginated
//! on the server: the rows `annal inventory -o json` prints for the same
//! question.

use annal_query::asof::inventory::{self, AsOf, InventoryRow};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::page::{self, error, frame, query, utc};
use super::Ui;

/// Rows per page.
const PAGE_ROWS: usize = 100;

/// The page's query string: its whole state.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    at: Option<String>,
    known_at: Option<String>,
    cluster: Option<String>,
    namespace: Option<String>,
    kind: Option<String>,
    owner: Option<String>,
    /// `true`: only objects two owners claim.
    conflict: Option<String>,
    /// 1-based.
    page: Option<usize>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let (at, known_at) = match page::clocks(&p.at, &p.known_at) {
        Ok(clocks) => clocks,
        Err(e) => return page::bad_time(&e),
    };
    let text = |v: &Option<String>| v.as_deref().unwrap_or("").trim().to_string();
    let (cluster, namespace, kind, owner) = (
        text(&p.cluster),
        text(&p.namespace),
        text(&p.kind),
        text(&p.owner),
    );
    let only_conflicts = p.conflict.as_deref() == Some("true");
    let store = ui.store.clone();
    let wanted = cluster.clone();
    let answer =
        tokio::task::spawn_blocking(move || -> Result<Option<Vec<InventoryRow>>, String> {
            if !wanted.is_empty() && !known_cluster(&store, &wanted)? {
                return Ok(None);
            }
            let as_of = AsOf::new(&store, at, known_at).map_err(|e| e.to_string())?;
            let scope = (!wanted.is_empty()).then_some(wanted.as_str());
            inventory::fleet_at(&store, scope, &as_of)
                .map(Some)
                .map_err(|e| e.to_string())
        })
        .await;
    let rows = match answer {
        Ok(Ok(Some(rows))) => rows,
        Ok(Ok(None)) => {
            return error(
                StatusCode::NOT_FOUND,
                "No such cluster",
                &format!("The ledger has never heard of cluster {cluster:?}: no event names it."),
            )
        }
        Ok(Err(e)) => return error(StatusCode::BAD_REQUEST, "Cannot answer", &e),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "Failed", &e.to_string()),
    };
    let rows: Vec<InventoryRow> = rows
        .into_iter()
        .filter(|r| namespace.is_empty() || r.object.namespace == namespace)
        .filter(|r| kind.is_empty() || r.object.kind == kind)
        .filter(|r| owner.is_empty() || r.claims.contains(&owner))
        .filter(|r| !only_conflicts || r.conflict)
        .collect();
    let total = rows.len();
    let pages = total.div_ceil(PAGE_ROWS).max(1);
    let current = p.page.unwrap_or(1).clamp(1, pages);
    let shown = &rows[(current - 1) * PAGE_ROWS..(current * PAGE_ROWS).min(total)];
    let at_text = at.to_string();
    let known_text = known_at.map(|t| t.to_string()).unwrap_or_default();
    let conflict_text = if only_conflicts { "true" } else { "" };
    let state = [
        ("at", at_text.as_str()),
        ("known_at", known_text.as_str()),
        ("cluster", cluster.as_str()),
        ("namespace", namespace.as_str()),
        ("kind", kind.as_str()),
        ("owner", owner.as_str()),
        ("conflict", conflict_text),
    ];
    let link_to = |n: usize| {
        let number = n.to_string();
        let mut pairs = state.to_vec();
        pairs.push(("page", number.as_str()));
        format!("/ui/inventory?{}", query(&pairs))
    };
    let body = html! {
        form.controls method="get" action="/ui/inventory" {
            label { "Valid time " input name="at" value=(at_text) size="26" aria-describedby="time-help"; }
            label { "As known at " input name="known_at" value=(known_text) size="26" placeholder="everything recorded"; }
            label { "Cluster " input name="cluster" value=(cluster) size="14"; }
            label { "Namespace " input name="namespace" value=(namespace) size="14"; }
            label { "Kind " input name="kind" value=(kind) size="14"; }
            label { "Owner " input name="owner" value=(owner) size="20" placeholder="argocd:guestbook"; }
            label { "Conflicts only " select name="conflict" {
                option value="" selected[!only_conflicts] { "no" }
                option value="true" selected[only_conflicts] { "yes" }
            } }
            button type="submit" { "Show" }
            small #time-help { "Times: RFC 3339 (2026-11-01T09:30:00Z) or now-2h, shown in UTC" }
        }
        p.summary #summary data-total=(total) {
            @if total == 0 {
                "No object existed at " (utc(&at)) " with these filters."
            } @else {
                (total) " objects at " (utc(&at))
                @if let Some(k) = &known_at { ", as known at " (utc(k)) }
                "; rows " ((current - 1) * PAGE_ROWS + 1) "–" ((current - 1) * PAGE_ROWS + shown.len())
                "."
            }
        }
        @if total > 0 {
            table #objects {
                thead { tr {
                    th scope="col" { "Cluster" } th scope="col" { "Namespace" } th scope="col" { "Kind" }
                    th scope="col" { "Name" } th scope="col" { "Owner" } th scope="col" { "Conflict" }
                    th scope="col" { "Managers" } th scope="col" { "Since" }
                } }
                tbody {
                    @for r in shown {
                        tr data-object=(format!("{}/{}/{}/{}", r.cluster, r.object.kind, r.object.namespace, r.object.name)) {
                            td { (r.cluster) }
                            td { (r.object.namespace) }
                            td { (r.object.kind) }
                            td { a href=(history_link(r)) { (r.object.name) } }
                            td { (r.owner.as_deref().unwrap_or("")) }
                            td { @if r.conflict { span.badge.conflict { "conflict: " (r.claims.join(", ")) } } }
                            td { (r.managers.join(", ")) }
                            td { (utc(&r.valid_from)) }
                        }
                    }
                }
            }
            nav.pages aria-label="Pages of rows" {
                @if current > 1 { a href=(link_to(current - 1)) rel="prev" { "← Previous" } }
                span { "Page " (current) " of " (pages) }
                @if current < pages { a href=(link_to(current + 1)) rel="next" { "Next →" } }
            }
        }
    };
    frame("Inventory", "/ui/inventory", body).into_response()
}

/// Where a row's object history is (`GET /v1/history`, until the object
/// page exists).
fn history_link(r: &InventoryRow) -> String {
    format!(
        "/v1/history?{}",
        query(&[
            ("cluster", &r.cluster),
            ("group", &r.object.group),
            ("kind", &r.object.kind),
            ("namespace", &r.object.namespace),
            ("name", &r.object.name),
        ])
    )
}

/// Whether any event names `cluster`.
pub fn known_cluster(store: &annal_store::Store, cluster: &str) -> Result<bool, String> {
    Ok(store
        .event_clusters()
        .map_err(|e| e.to_string())?
        .iter()
        .any(|c| c == cluster))
}
