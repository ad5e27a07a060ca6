//! `/ui/inventory`: the objects live at an instant (valid time, and as
//! the ledger knew it at a system time), with owners and conflicts,
//! filtered by cluster, namespace, kind, owner and conflict, and paginated
//! on the server: the rows `annal inventory -o json` prints for the same
//! question.

use annal_query::asof::inventory::{self, AsOf, InventoryRow};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::page::{self, frame, query, utc};
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
    /// The column the rows are sorted by (over every page, on the
    /// server): one of [`COLUMNS`]; default the inventory's order
    /// (cluster, then object).
    sort: Option<String>,
    /// `desc`: descending.
    order: Option<String>,
}

/// The sortable columns: (name in the URL, header).
const COLUMNS: [(&str, &str); 6] = [
    ("cluster", "Cluster"),
    ("namespace", "Namespace"),
    ("kind", "Kind"),
    ("name", "Name"),
    ("owner", "Owner"),
    ("since", "Since"),
];

/// The key a row sorts by under `column`.
fn sort_key(r: &InventoryRow, column: &str) -> String {
    match column {
        "namespace" => r.object.namespace.clone(),
        "kind" => r.object.kind.clone(),
        "name" => r.object.name.clone(),
        "owner" => r.owner.clone().unwrap_or_default(),
        "since" => r.valid_from.to_string(),
        _ => r.cluster.clone(),
    }
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
    let rows = match page::answer(move || {
        if !wanted.is_empty() && !page::known_cluster(&store, &wanted)? {
            return Err(page::unknown_cluster(&wanted));
        }
        let as_of = AsOf::new(&store, at, known_at)?;
        let scope = (!wanted.is_empty()).then_some(wanted.as_str());
        Ok(inventory::fleet_at(&store, scope, &as_of)?)
    })
    .await
    {
        Ok(rows) => rows,
        Err(page) => return page,
    };
    let sort = p
        .sort
        .as_deref()
        .filter(|s| COLUMNS.iter().any(|(c, _)| c == s))
        .unwrap_or("")
        .to_string();
    let descending = p.order.as_deref() == Some("desc");
    let mut rows: Vec<InventoryRow> = rows
        .into_iter()
        .filter(|r| namespace.is_empty() || r.object.namespace == namespace)
        .filter(|r| kind.is_empty() || r.object.kind == kind)
        .filter(|r| owner.is_empty() || r.claims.contains(&owner))
        .filter(|r| !only_conflicts || r.conflict)
        .collect();
    if !sort.is_empty() {
        // Stable: rows with the same key keep the inventory's order.
        rows.sort_by_cached_key(|r| sort_key(r, &sort));
        if descending {
            rows.reverse();
        }
    }
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
    let order_text = if descending { "desc" } else { "" };
    let link_to = |n: usize| {
        let number = n.to_string();
        let mut pairs = state.to_vec();
        pairs.extend([
            ("sort", sort.as_str()),
            ("order", order_text),
            ("page", number.as_str()),
        ]);
        format!("/ui/inventory?{}", query(&pairs))
    };
    // A header's link sorts by its column, ascending, or descending when
    // it is the column sorted ascending now.
    let sort_link = |column: &str| {
        let flip = if sort == column && !descending {
            "desc"
        } else {
            ""
        };
        let mut pairs = state.to_vec();
        pairs.extend([("sort", column), ("order", flip)]);
        format!("/ui/inventory?{}", query(&pairs))
    };
    let aria_sort = |column: &str| match (sort == column, descending) {
        (true, false) => Some("ascending"),
        (true, true) => Some("descending"),
        _ => None,
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
                    @for (column, label) in &COLUMNS[..5] {
                        th scope="col" aria-sort=[aria_sort(column)] { a.sort href=(sort_link(column)) { (label) } }
                    }
                    th scope="col" { "Conflict" } th scope="col" { "Managers" }
                    th scope="col" aria-sort=[aria_sort("since")] { a.sort href=(sort_link("since")) { "Since" } }
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

/// The row's object page.
fn history_link(r: &InventoryRow) -> String {
    super::object::link(
        &r.cluster,
        &r.object.group,
        &r.object.kind,
        &r.object.namespace,
        &r.object.name,
    )
}
