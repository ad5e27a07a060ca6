//! `/ui/diff`: what changed between two instants for the fleet or some
//! clusters: objects added, removed, changed (with the fields and their
//! managers) or changed owner, counted per cluster: the answer `annal
//! diff -o json` gives for the same question.

use std::collections::BTreeMap;

use annal_query::asof::diff::{self, Change, DiffRow};
use annal_schemas::Timestamp;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::page::{self, frame, query, utc};
use super::Ui;

/// Rows per page.
const PAGE_ROWS: usize = 100;

#[derive(Debug, Default, Deserialize)]
pub struct Params {
    from: Option<String>,
    to: Option<String>,
    known_at: Option<String>,
    /// Comma-separated cluster ids (empty: the fleet).
    cluster: Option<String>,
    owner: Option<String>,
    page: Option<usize>,
}

/// Counts of one cluster's differences, in [`Change`] order.
type Counts = [usize; 4];

fn slot(change: Change) -> usize {
    match change {
        Change::Added => 0,
        Change::Removed => 1,
        Change::Changed => 2,
        Change::OwnerChanged => 3,
    }
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let to = match page::time("to", &p.to) {
        Ok(t) => t.unwrap_or_else(Timestamp::now),
        Err(e) => return page::bad_time(&e),
    };
    let from = match page::time("from", &p.from) {
        Ok(Some(t)) => t,
        Ok(None) => Timestamp::from_unix_micros(to.unix_micros() - 86_400_000_000).unwrap_or(to),
        Err(e) => return page::bad_time(&e),
    };
    let known_at = match page::time("known_at", &p.known_at) {
        Ok(t) => t,
        Err(e) => return page::bad_time(&e),
    };
    let clusters = annal_query::http::request::list(&p.cluster);
    let owner = p.owner.as_deref().unwrap_or("").trim().to_string();
    let store = ui.store.clone();
    let wanted = clusters.clone();
    let rows = match page::answer(move || {
        for c in &wanted {
            if !page::known_cluster(&store, c)? {
                return Err(page::unknown_cluster(c));
            }
        }
        let (from, to) = diff::sides(&store, from, to, known_at)?;
        let scope = (!wanted.is_empty()).then_some(wanted.as_slice());
        let mut rows = Vec::new();
        for r in diff::fleet_diff(&store, scope, &from, &to)? {
            rows.push(r?);
        }
        Ok(rows)
    })
    .await
    {
        Ok(rows) => rows,
        Err(page) => return page,
    };
    let rows: Vec<DiffRow> = rows
        .into_iter()
        .filter(|r| owner.is_empty() || r.owned_by(&owner))
        .collect();
    let mut per_cluster: BTreeMap<&str, Counts> = BTreeMap::new();
    for r in &rows {
        per_cluster.entry(&r.cluster).or_default()[slot(r.change)] += 1;
    }
    let total = rows.len();
    let pages = total.div_ceil(PAGE_ROWS).max(1);
    let current = p.page.unwrap_or(1).clamp(1, pages);
    let shown = &rows[(current - 1) * PAGE_ROWS..(current * PAGE_ROWS).min(total)];
    let (from_text, to_text) = (from.to_string(), to.to_string());
    let known_text = known_at.map(|t| t.to_string()).unwrap_or_default();
    let cluster_text = clusters.join(",");
    let link_to = |n: usize| {
        let number = n.to_string();
        format!(
            "/ui/diff?{}",
            query(&[
                ("from", &from_text),
                ("to", &to_text),
                ("known_at", &known_text),
                ("cluster", &cluster_text),
                ("owner", &owner),
                ("page", &number),
            ])
        )
    };
    let body = html! {
        form.controls method="get" action="/ui/diff" {
            label { "From (T1) " input name="from" value=(from_text) size="26" aria-describedby="time-help"; }
            label { "To (T2) " input name="to" value=(to_text) size="26"; }
            label { "As known at " input name="known_at" value=(known_text) size="26" placeholder="everything recorded"; }
            label { "Clusters " input name="cluster" value=(cluster_text) size="20" placeholder="all; or c1,c2"; }
            label { "Owner " input name="owner" value=(owner) size="20" placeholder="argocd:guestbook"; }
            button type="submit" { "Compare" }
            small #time-help { "Times: RFC 3339 (2026-11-01T09:30:00Z) or now-2h, shown in UTC; T1 defaults to a day before T2" }
        }
        p.summary #summary data-total=(total) {
            @if total == 0 {
                "Nothing changed between " (utc(&from)) " and " (utc(&to)) "."
            } @else {
                (total) " objects differ between " (utc(&from)) " and " (utc(&to))
                @if let Some(k) = &known_at { ", as known at " (utc(k)) } "."
            }
        }
        @if total > 0 {
            table #per-cluster {
                caption { "Per cluster" }
                thead { tr {
                    th scope="col" { "Cluster" } th scope="col" class="num" { "Added" } th scope="col" class="num" { "Removed" }
                    th scope="col" class="num" { "Changed" } th scope="col" class="num" { "Owner changed" }
                } }
                tbody {
                    @for (cluster, c) in &per_cluster {
                        tr data-counts=(format!("{cluster}:{}:{}:{}:{}", c[0], c[1], c[2], c[3])) {
                            td { (cluster) }
                            td.num { (c[0]) } td.num { (c[1]) } td.num { (c[2]) } td.num { (c[3]) }
                        }
                    }
                }
            }
            h2 { "Objects" }
            table #changes {
                thead { tr {
                    th scope="col" { "Change" } th scope="col" { "Cluster" } th scope="col" { "Namespace" }
                    th scope="col" { "Kind" } th scope="col" { "Name" } th scope="col" { "Owner before → after" }
                    th scope="col" { "Fields" } th scope="col" { "Managers" }
                } }
                tbody {
                    @for r in shown {
                        tr data-diff=(format!("{} {}/{}/{}/{}", r.change.as_str(), r.cluster, r.kind, r.namespace, r.name)) {
                            td { span class=(format!("badge {}", r.change.as_str())) { (r.change.as_str()) } }
                            td { (r.cluster) } td { (r.namespace) } td { (r.kind) } td { (r.name) }
                            td { (r.owner_before.as_deref().unwrap_or("–")) " → " (r.owner_after.as_deref().unwrap_or("–")) }
                            td { (r.fields.join(", ")) }
                            td { (r.managers.join(", ")) }
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
    frame("Diff", "/ui/diff", body).into_response()
}
