//! `/ui/recovery`: the recovery gates, read-only, for a chosen scope and
//! instant: the takeover plan (what a new controller would adopt, fight
//! over, orphan or miss), the prune plan of one app on one cluster
//! against its last listed inventory, a placement change's clusters, and
//! the fence check. Each shows its reasons and the verdict the CLI would
//! exit with (0, or 3: a person must approve), from the same code as
//! `annal takeover-plan`, `prune-plan`, `placement diff` and `fence check`.

use annal_query::asof::coverage;
use annal_query::asof::inventory::{AsOf, Listings};
use annal_query::http::request::list;
use annal_query::recovery::{fence, placement, prune, takeover};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::page::{self, frame, utc, Failure};
use super::Ui;

/// Plan objects listed at most (the counts cover all).
const SHOWN: usize = 500;

/// The page's query string: one group of fields per gate; a gate runs
/// when its first field is given.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    at: Option<String>,
    known_at: Option<String>,
    /// Takeover: the new controller's field manager.
    controller: Option<String>,
    /// Takeover scope: apps, comma-separated ...
    apps: Option<String>,
    /// ... or clusters.
    clusters: Option<String>,
    /// Prune: the app and cluster.
    prune_app: Option<String>,
    prune_cluster: Option<String>,
    max_deletions: Option<u64>,
    /// Placement: the selector today and the one proposed.
    selector: Option<String>,
    proposed_selector: Option<String>,
    /// Fence: the old controller.
    fence: Option<String>,
}

fn text(v: &Option<String>) -> String {
    v.as_deref().unwrap_or("").trim().to_string()
}

/// What the form asks, trimmed (empty: not asked).
#[derive(Clone)]
struct Asked {
    controller: String,
    apps: Vec<String>,
    clusters: Vec<String>,
    prune_app: String,
    prune_cluster: String,
    selector: String,
    proposed: String,
    fence: String,
}

/// The gates' answers.
#[derive(Default)]
struct Answer {
    takeover: Option<(takeover::Plan, Vec<String>)>,
    prune: Option<(prune::Plan, Vec<String>)>,
    placement: Option<(placement::Diff, Vec<String>)>,
    fence: Option<fence::Report>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let (at, known_at) = match page::clocks(&p.at, &p.known_at) {
        Ok(clocks) => clocks,
        Err(e) => return page::bad_time(&e),
    };
    let asked = Asked {
        controller: text(&p.controller),
        apps: list(&p.apps),
        clusters: list(&p.clusters),
        prune_app: text(&p.prune_app),
        prune_cluster: text(&p.prune_cluster),
        selector: text(&p.selector),
        proposed: text(&p.proposed_selector),
        fence: text(&p.fence),
    };
    let max_deletions = p.max_deletions;
    let store = ui.store.clone();
    let question = asked.clone();
    let answer = page::answer(move || {
        let Asked {
            controller,
            apps,
            clusters,
            prune_app,
            prune_cluster,
            selector,
            proposed,
            fence: fence_by,
        } = question;
        let as_of = AsOf::new(&store, at, known_at)?;
        let mut out = Answer::default();
        if !controller.is_empty() {
            let scope = match (apps.is_empty(), clusters.is_empty()) {
                (false, true) => takeover::Scope::Apps(apps),
                (true, false) => {
                    for c in &clusters {
                        if !page::known_cluster(&store, c)? {
                            return Err(page::unknown_cluster(c));
                        }
                    }
                    takeover::Scope::Clusters(clusters)
                }
                _ => {
                    return Err(Failure::Bad(
                        "a takeover plan needs apps or clusters, not both".into(),
                    ))
                }
            };
            let request = takeover::Request {
                controller,
                scope,
                normal_managers: Vec::new(),
            };
            let plan = takeover::plan(&store, &request, &as_of)?;
            let mut in_plan: Vec<String> = plan.summary.iter().map(|s| s.cluster.clone()).collect();
            in_plan.dedup();
            let stale = coverage::stale_in(&store, &in_plan, &as_of, None)?
                .into_iter()
                .map(|s| s.cluster)
                .collect();
            out.takeover = Some((plan, stale));
        }
        if !prune_app.is_empty() {
            if prune_cluster.is_empty() {
                return Err(Failure::Bad("a prune plan needs the app's cluster".into()));
            }
            if !page::known_cluster(&store, &prune_cluster)? {
                return Err(page::unknown_cluster(&prune_cluster));
            }
            let desired = Listings::at(&store, &as_of)?.listed_by(&prune_cluster, &prune_app);
            let request = prune::Request {
                app: prune_app,
                cluster: prune_cluster.clone(),
                desired,
                max_deletions,
                max_fraction: None,
                normal_managers: Vec::new(),
            };
            let plan = prune::plan(&store, &request, &as_of)?;
            let stale = coverage::stale_in(&store, &[prune_cluster], &as_of, None)?
                .into_iter()
                .map(|s| s.cluster)
                .collect();
            out.prune = Some((plan, stale));
        }
        if !selector.is_empty() {
            let parse = |s: &str| placement::Selector::parse(s).map_err(Failure::from);
            let side = |s: &str| -> Result<placement::Side, Failure> {
                Ok(placement::Side {
                    selector: parse(s)?,
                    as_of,
                })
            };
            let to = if proposed.is_empty() {
                selector.as_str()
            } else {
                proposed.as_str()
            };
            let d = placement::diff(&store, &side(&selector)?, &side(to)?, &parse("")?)?;
            let flags = placement::gate(&d, None, 0);
            out.placement = Some((d, flags));
        }
        if !fence_by.is_empty() {
            let request = fence::Request {
                controller: fence_by,
                since: None,
                principals: Vec::new(),
            };
            out.fence = Some(fence::check(&store, &request, &as_of)?);
        }
        Ok(out)
    })
    .await;
    let a = match answer {
        Ok(a) => a,
        Err(page) => return page,
    };
    let at_text = at.to_string();
    let known_text = known_at.map(|t| t.to_string()).unwrap_or_default();
    let body = html! {
        form.controls method="get" action="/ui/recovery" {
            label { "Valid time " input name="at" value=(at_text) size="24" aria-describedby="time-help"; }
            label { "As known at " input name="known_at" value=(known_text) size="24" placeholder="everything recorded"; }
            label { "New controller " input name="controller" value=(asked.controller) size="22" placeholder="argocd-application-controller"; }
            label { "Apps " input name="apps" value=(asked.apps.join(",")) size="22" placeholder="argocd:guestbook"; }
            label { "or clusters " input name="clusters" value=(asked.clusters.join(",")) size="16"; }
            label { "Prune: app " input name="prune_app" value=(asked.prune_app) size="20"; }
            label { "on cluster " input name="prune_cluster" value=(asked.prune_cluster) size="14"; }
            label { "Max deletions " input name="max_deletions" value=(max_deletions.map(|m| m.to_string()).unwrap_or_default()) size="5"; }
            label { "Placement selector " input name="selector" value=(asked.selector) size="20" placeholder="env=prod"; }
            label { "proposed " input name="proposed_selector" value=(asked.proposed) size="20" placeholder="env=prod,region=eu"; }
            label { "Fenced controller " input name="fence" value=(asked.fence) size="18"; }
            button type="submit" { "Check" }
            small #time-help { "Fill the fields of the gates to run. Times: RFC 3339 or now-2h, shown in UTC. The answers are what the CLI's gates print at " (utc(&at)) "." }
        }
        @if a.takeover.is_none() && a.prune.is_none() && a.placement.is_none() && a.fence.is_none() {
            p.summary #summary data-total="0" { "No gate asked yet: name a new controller and apps or clusters for a takeover plan, an app and its cluster for a prune plan, a selector, or a fenced controller." }
        }
        @if let Some((plan, stale)) = &a.takeover { (takeover_view(plan, stale)) }
        @if let Some((plan, stale)) = &a.prune { (prune_view(plan, stale)) }
        @if let Some((d, flags)) = &a.placement { (placement_view(d, flags)) }
        @if let Some(r) = &a.fence { (fence_view(r)) }
    };
    frame("Recovery", "/ui/recovery", body).into_response()
}

/// The exit code and what it means.
fn verdict(needs_approval: bool) -> Markup {
    html! {
        @if needs_approval {
            p.verdict.approve data-exit="3" { "Exit 3: a person must approve before this goes ahead." }
        } @else {
            p.verdict.ok data-exit="0" { "Exit 0: nothing needs approval." }
        }
    }
}

fn stale_note(stale: &[String]) -> Markup {
    html! {
        @if !stale.is_empty() {
            p.error { "Stale data: " (stale.join(", ")) " sent nothing in the coverage gap before this instant; the plan may miss recent changes." }
        }
    }
}

fn takeover_view(plan: &takeover::Plan, stale: &[String]) -> Markup {
    html! {
        section #takeover {
            h2 { "Takeover plan for " (plan.controller) }
            (verdict(plan.needs_approval() || !stale.is_empty()))
            (stale_note(stale))
            table.sortable #takeover-summary {
                thead { tr { th scope="col" { "Cluster" } th scope="col" { "App" }
                    @for c in takeover::Class::ALL { th scope="col" class="num" { (c.as_str()) } } } }
                tbody { @for s in &plan.summary {
                    tr data-summary=(format!("{}/{}", s.cluster, s.app)) {
                        td { (s.cluster) } td { (s.app) }
                        td.num { (s.adopt) } td.num { (s.conflict) } td.num { (s.orphan) } td.num { (s.missing) }
                    }
                } }
            }
            @if plan.objects.len() > SHOWN { p.muted { "The first " (SHOWN) " of " (plan.objects.len()) " objects; annal takeover-plan -o json lists all." } }
            table.sortable #takeover-objects {
                thead { tr { th scope="col" { "Class" } th scope="col" { "Cluster" } th scope="col" { "Object" } th scope="col" { "App" } th scope="col" { "Reasons" } } }
                tbody { @for o in plan.objects.iter().take(SHOWN) {
                    tr data-class=(o.class.as_str()) {
                        td { (o.class.as_str()) } td { (o.cluster) }
                        td { a href=(super::object::link(&o.cluster, &o.group, &o.kind, &o.namespace, &o.name)) { (o.kind) " " (o.namespace) "/" (o.name) } }
                        td { (o.app.as_deref().unwrap_or("")) }
                        td { @for r in &o.reasons { code { (r.code) } " " (r.detail) br; } }
                    }
                } }
            }
        }
    }
}

fn prune_view(plan: &prune::Plan, stale: &[String]) -> Markup {
    html! {
        section #prune {
            h2 { "Prune plan of " (plan.app) " on " (plan.cluster) }
            p.muted { "Desired: the " (plan.desired) " objects the app's inventory listed at this instant (the last state its Git source was applied from); live: " (plan.live) "." }
            (verdict(plan.needs_approval() || !stale.is_empty()))
            (stale_note(stale))
            @for f in &plan.flags { p.error { code { (f.code) } " " (f.detail) } }
            h3 { "Would prune (" (plan.prune.len()) ")" }
            (plan_objects("prune-objects", &plan.cluster, &plan.prune))
            h3 { "Would create (" (plan.create.len()) ")" }
            (plan_objects("create-objects", &plan.cluster, &plan.create))
        }
    }
}

fn plan_objects(id: &str, cluster: &str, objects: &[prune::PlanObject]) -> Markup {
    html! {
        @if !objects.is_empty() {
            table.sortable id=(id) {
                thead { tr { th scope="col" { "Object" } th scope="col" { "Claims" } th scope="col" { "Flags" } } }
                tbody { @for o in objects.iter().take(SHOWN) {
                    tr data-object=(format!("{}/{}/{}", o.kind, o.namespace, o.name)) {
                        td { a href=(super::object::link(cluster, &o.group, &o.kind, &o.namespace, &o.name)) { (o.kind) " " (o.namespace) "/" (o.name) } }
                        td { (o.claims.join(", ")) }
                        td { @for f in &o.flags { code { (f.code) } " " (f.detail) br; } }
                    }
                } }
            }
        }
    }
}

fn placement_view(d: &placement::Diff, flags: &[String]) -> Markup {
    html! {
        section #placement {
            h2 { "Placement: " code { (d.from) } " → " code { (d.to) } }
            (verdict(!flags.is_empty()))
            @for f in flags { p.error { (f) } }
            table #placement-clusters {
                thead { tr { th scope="col" { "Before" } th scope="col" { "Added" } th scope="col" { "Removed" } } }
                tbody { tr {
                    td { (d.before.join(", ")) }
                    td data-added=(d.added.join(",")) { (d.added.join(", ")) }
                    td data-removed=(d.removed.join(",")) { (d.removed.join(", ")) }
                } }
            }
        }
    }
}

fn fence_view(r: &fence::Report) -> Markup {
    html! {
        section #fence {
            h2 { "Fence check of " (r.controller) }
            (verdict(!r.violations.is_empty()))
            p.muted { "Fenced at " (r.fenced_at) "; principals: " (r.principals.join(", ")) "; credentials: " (r.credentials.len()) "." }
            @if r.violations.is_empty() {
                p { "The fence holds: nothing the old controller holds acted after it." }
            } @else {
                table.sortable #fence-violations {
                    thead { tr { th scope="col" { "Code" } th scope="col" { "Time" } th scope="col" { "Cluster" } th scope="col" { "Detail" } th scope="col" class="num" { "Entry" } } }
                    tbody { @for v in &r.violations {
                        tr { td { code { (v.code) } } td { (v.time.as_deref().unwrap_or("")) } td { (v.cluster.as_deref().unwrap_or("")) } td { (v.detail) }
                             td.num { (v.index.map(|i| i.to_string()).unwrap_or_default()) } }
                    } }
                }
            }
        }
    }
}
