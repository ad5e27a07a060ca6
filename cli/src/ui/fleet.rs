//! `/ui/fleet`: every cluster the ledger knows at an instant, with its
//! registry entry (environment, region, tenant, lifecycle, credential),
//! how many objects and apps it holds, and whether its data is stale
//! (nothing heard in the coverage gap before the instant: `annal
//! coverage`).

use std::collections::{BTreeMap, BTreeSet};

use annal_query::asof::inventory::{self, AsOf};
use annal_query::asof::{coverage, registry};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::page::{self, frame, query, time_control, utc};
use super::Ui;

#[derive(Debug, Default, Deserialize)]
pub struct Params {
    at: Option<String>,
    known_at: Option<String>,
}

/// One cluster's line.
#[derive(Default)]
struct Line {
    registry: Option<registry::ClusterVersion>,
    objects: usize,
    apps: BTreeSet<String>,
    stale: Option<coverage::Stale>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let (at, known_at) = match page::clocks(&p.at, &p.known_at) {
        Ok(clocks) => clocks,
        Err(e) => return page::bad_time(&e),
    };
    let store = ui.store.clone();
    let lines = match page::answer(move || {
        let as_of = AsOf::new(&store, at, known_at)?;
        let mut lines: BTreeMap<String, Line> = BTreeMap::new();
        for c in store.event_clusters()? {
            lines.entry(c).or_default();
        }
        for v in registry::at(&store, None, &as_of)? {
            let cluster = v.cluster.clone();
            lines.entry(cluster).or_default().registry = Some(v);
        }
        for row in inventory::fleet_rows(&store, None, &as_of)? {
            let row = row?;
            let line = lines.entry(row.cluster.clone()).or_default();
            line.objects += 1;
            line.apps.extend(row.claims);
        }
        for s in coverage::stale_in(&store, &[], &as_of, None)? {
            let cluster = s.cluster.clone();
            lines.entry(cluster).or_default().stale = Some(s);
        }
        Ok::<_, page::Failure>(lines)
    })
    .await
    {
        Ok(lines) => lines,
        Err(page) => return page,
    };
    let at_text = at.to_string();
    let field = |l: &Line, f: &dyn Fn(&registry::ClusterVersion) -> Option<String>| {
        l.registry.as_ref().and_then(f).unwrap_or_default()
    };
    let body = html! {
        (time_control("/ui/fleet", &at, known_at.as_ref()))
        p.summary #summary data-total=(lines.len()) {
            @if lines.is_empty() {
                "The ledger names no cluster yet: ingest something (annal ingest) first."
            } @else {
                (lines.len()) " clusters at " (utc(&at))
                @if let Some(k) = &known_at { ", as known at " (utc(k)) } "."
            }
        }
        @if !lines.is_empty() {
            table.sortable #clusters {
                thead { tr {
                    th scope="col" { "Cluster" } th scope="col" { "Environment" } th scope="col" { "Region" }
                    th scope="col" { "Tenant" } th scope="col" { "Lifecycle" } th scope="col" { "Credential" }
                    th scope="col" class="num" { "Objects" } th scope="col" class="num" { "Apps" } th scope="col" { "Coverage" }
                } }
                tbody {
                    @for (cluster, l) in &lines {
                        tr data-cluster=(cluster) {
                            td {
                                a href=(format!("/ui/inventory?{}", query(&[("at", &at_text), ("cluster", cluster)]))) { (cluster) }
                                @if let Some(name) = l.registry.as_ref().and_then(|r| r.display_name.as_deref()).filter(|n| *n != cluster.as_str()) {
                                    br; small.muted { (name) }
                                }
                            }
                            td { (field(l, &|r| r.environment.clone())) }
                            td { (field(l, &|r| r.region.clone())) }
                            td { (field(l, &|r| r.tenant.clone())) }
                            td { (field(l, &|r| r.state.clone().or_else(|| r.lifecycle.clone()))) }
                            td { (field(l, &|r| r.credential_fingerprint.as_deref().map(short))) }
                            td.num data-objects=(l.objects) { (l.objects) }
                            td.num data-apps=(l.apps.len()) { (l.apps.len()) }
                            td {
                                @match &l.stale {
                                    Some(s) => span.badge.stale title=(s.describe()) { "stale: silent since " (utc(&s.last_seen)) },
                                    None => span.badge.fresh { "fresh" },
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    frame("Fleet", "/ui/fleet", body).into_response()
}

/// A fingerprint's first characters, enough to tell credentials apart.
fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(19).collect()
}
