//! `/ui/app`: one GitOps app (`argocd:guestbook`, `flux:apps/podinfo`):
//! its whole sync and health history (every entry the ledger holds, not
//! the last ten Argo CD keeps), its last-good revision per cluster at T,
//! the objects it owns at T, and writes to them outside Git (drift) in
//! the day before T. Without `app=`, the apps the ledger knows.

use std::collections::BTreeMap;

use annal_query::asof::drift::{self, DriftQuery, DriftRow};
use annal_query::asof::inventory::{self, AsOf, InventoryRow};
use annal_query::asof::revisions::{self, GoodInterval};
use annal_schemas::{EventType, Timestamp};
use annal_store::leaf_view::LeafView;
use annal_store::{ScanKey, Store};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;

use super::page::{self, frame, query, utc, Failure};
use super::Ui;

/// History rows per page.
const PAGE_ROWS: usize = 100;

/// The page's query string.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    app: Option<String>,
    at: Option<String>,
    known_at: Option<String>,
    page: Option<usize>,
}

/// One sync or health report.
struct Step {
    index: u64,
    time: Timestamp,
    cluster: String,
    app: String,
    /// `sync` or `health`.
    what: &'static str,
    /// Phase or health status.
    state: String,
    revision: String,
    initiated_by: String,
}

/// The `app.sync` and `app.health` events of `app` (all apps when
/// `None`), in valid-time order per type, merged by time.
fn steps(store: &Store, app: Option<&str>) -> Result<Vec<Step>, Failure> {
    let needle = app.map(|a| format!("\"app\":{}", Value::String(a.into())));
    let mut out = Vec::new();
    for (t, what) in [
        (EventType::AppSync, "sync"),
        (EventType::AppHealth, "health"),
    ] {
        for leaf in store.scan_leaf_bytes(ScanKey::Type(t.as_str()), None, None) {
            let (_, bytes) = leaf?;
            let v = LeafView::parse(&bytes)?;
            // The canonical bytes hold `"app":"NAME"`: most leaves of
            // other apps are passed over without parsing their data.
            if needle
                .as_ref()
                .is_some_and(|n| !v.data.contains(n.as_str()))
            {
                continue;
            }
            let data: Value = serde_json::from_str(v.data).unwrap_or(Value::Null);
            let s = |k: &str| {
                data.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            if app.is_some_and(|a| s("app") != a) {
                continue;
            }
            out.push(Step {
                index: v.index,
                time: v.time,
                cluster: v.cluster.as_deref().unwrap_or("").to_string(),
                app: s("app"),
                what,
                state: match what {
                    "sync" => s("phase"),
                    _ => s("status"),
                },
                revision: s("revision"),
                initiated_by: data
                    .pointer("/initiated_by/username")
                    .or_else(|| data.pointer("/initiatedBy/username"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            });
        }
    }
    out.sort_by_key(|s| (s.time, s.index));
    Ok(out)
}

/// What the page shows for one app.
struct Answer {
    history: Vec<Step>,
    good: Vec<GoodInterval>,
    objects: Vec<InventoryRow>,
    drift: Vec<DriftRow>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let (at, known_at) = match page::clocks(&p.at, &p.known_at) {
        Ok(clocks) => clocks,
        Err(e) => return page::bad_time(&e),
    };
    let app = p.app.as_deref().unwrap_or("").trim().to_string();
    let store = ui.store.clone();
    if app.is_empty() {
        let listing = page::answer(move || {
            let mut apps: BTreeMap<String, (usize, Option<Timestamp>)> = BTreeMap::new();
            for s in steps(&store, None)? {
                let (n, last) = apps.entry(s.app).or_default();
                *n += 1;
                *last = Some(s.time);
            }
            Ok(apps)
        })
        .await;
        return match listing {
            Ok(apps) => frame("Apps", "/ui/app", list(&apps)).into_response(),
            Err(page) => page,
        };
    }
    let name = app.clone();
    let answer = page::answer(move || {
        let history = steps(&store, Some(&name))?;
        let as_of = AsOf::new(&store, at, known_at)?;
        let good: Vec<GoodInterval> = revisions::at(&store, None, &as_of)?
            .into_iter()
            .filter(|g| g.app == name)
            .collect();
        let objects: Vec<InventoryRow> = inventory::fleet_at(&store, None, &as_of)?
            .into_iter()
            .filter(|r| r.claims.contains(&name))
            .collect();
        if history.is_empty() && good.is_empty() && objects.is_empty() {
            return Err(Failure::NotFound(
                "No such app",
                format!("The ledger holds no sync, health report or object of app {name:?} (names are qualified: argocd:guestbook, flux:apps/podinfo)."),
            ));
        }
        let q = DriftQuery {
            since: Timestamp::from_unix_micros(at.unix_micros() - 86_400_000_000).unwrap_or(at),
            until: at,
            clusters: Vec::new(),
            app: Some(name),
            normal_managers: Vec::new(),
        };
        let drift = drift::drift(&store, &q)?;
        Ok(Answer { history, good, objects, drift })
    })
    .await;
    let a = match answer {
        Ok(a) => a,
        Err(page) => return page,
    };
    let total = a.history.len();
    let pages = total.div_ceil(PAGE_ROWS).max(1);
    let current = p.page.unwrap_or(pages).clamp(1, pages);
    let shown = &a.history[(current - 1) * PAGE_ROWS..(current * PAGE_ROWS).min(total)];
    let at_text = at.to_string();
    let link_to = |n: usize| {
        format!(
            "/ui/app?{}",
            query(&[("app", &app), ("at", &at_text), ("page", &n.to_string())])
        )
    };
    let body = html! {
        (time_control_for(&app, &at, known_at.as_ref()))
        p.summary #summary data-total=(total) {
            (total) " syncs and health reports; " (a.objects.len()) " objects owned at " (utc(&at)) "."
        }
        h2 { "Last-good revision at " (utc(&at)) }
        @if a.good.is_empty() {
            p.muted { "No revision of this app was good (a succeeded sync followed by Healthy, or a marker) at this instant." }
        } @else {
            table.sortable #good {
                thead { tr { th scope="col" { "Cluster" } th scope="col" { "Revision" } th scope="col" { "Good since" } th scope="col" { "By" } } }
                tbody { @for g in &a.good {
                    tr data-good=(g.cluster) { td { (g.cluster) } td { code { (g.revision) } } td { (utc(&g.valid_from)) } td { (g.by.as_str()) } }
                } }
            }
        }
        h2 { "Sync and health history" }
        @if total > 0 {
            table.sortable #history {
                thead { tr {
                    th scope="col" { "Time" } th scope="col" { "Cluster" } th scope="col" { "What" }
                    th scope="col" { "Phase / health" } th scope="col" { "Revision" } th scope="col" { "Initiated by" } th scope="col" class="num" { "Entry" }
                } }
                tbody { @for s in shown {
                    tr data-step=(s.index) {
                        td data-sort=(s.time.to_string()) { (utc(&s.time)) } td { (s.cluster) } td { (s.what) }
                        td { (s.state) } td { code { (s.revision.chars().take(12).collect::<String>()) } }
                        td { (s.initiated_by) } td.num { (s.index) }
                    }
                } }
            }
            nav.pages aria-label="Pages of history" {
                @if current > 1 { a href=(link_to(current - 1)) rel="prev" { "← Older" } }
                span { "Page " (current) " of " (pages) }
                @if current < pages { a href=(link_to(current + 1)) rel="next" { "Newer →" } }
            }
        }
        h2 { "Objects owned at " (utc(&at)) }
        (objects(&a.objects))
        h2 { "Drift in the day before " (utc(&at)) }
        @if a.drift.is_empty() {
            p.muted { "No write outside Git to this app's objects." }
        } @else {
            table.sortable #drift {
                thead { tr { th scope="col" { "Time" } th scope="col" { "Cluster" } th scope="col" { "Object" } th scope="col" { "Who" } th scope="col" { "Fields" } th scope="col" { "Reverted" } } }
                tbody { @for d in &a.drift {
                    tr data-drift=(d.index) {
                        td { (utc(&d.time)) } td { (d.cluster) }
                        td { a href=(super::object::link(&d.cluster, &d.group, &d.kind, &d.namespace, &d.name)) { (d.kind) " " (d.namespace) "/" (d.name) } }
                        td { (d.who) } td { (d.fields.join(", ")) }
                        td { @if d.reverted { "yes" } @else { span.badge.conflict { "no" } } }
                    }
                } }
            }
        }
    };
    frame(&format!("App {app}"), "/ui/app", body).into_response()
}

fn time_control_for(app: &str, at: &Timestamp, known_at: Option<&Timestamp>) -> Markup {
    html! {
        form.controls method="get" action="/ui/app" {
            label { "App " input name="app" value=(app) size="26"; }
            label { "Valid time " input name="at" value=(at.to_string()) size="26" aria-describedby="time-help"; }
            label { "As known at " input name="known_at" value=(known_at.map(|t| t.to_string()).unwrap_or_default()) size="26" placeholder="everything recorded"; }
            button type="submit" { "Show" }
            small #time-help { "RFC 3339 (2026-11-01T09:30:00Z) or now-2h; shown in UTC" }
        }
    }
}

fn objects(rows: &[InventoryRow]) -> Markup {
    html! {
        @if rows.is_empty() {
            p.muted { "No object claims this app at this instant." }
        } @else {
            table.sortable #objects {
                thead { tr { th scope="col" { "Cluster" } th scope="col" { "Namespace" } th scope="col" { "Kind" } th scope="col" { "Name" } th scope="col" { "Conflict" } } }
                tbody { @for r in rows {
                    tr data-object=(format!("{}/{}/{}/{}", r.cluster, r.object.kind, r.object.namespace, r.object.name)) {
                        td { (r.cluster) } td { (r.object.namespace) } td { (r.object.kind) }
                        td { a href=(super::object::link(&r.cluster, &r.object.group, &r.object.kind, &r.object.namespace, &r.object.name)) { (r.object.name) } }
                        td { @if r.conflict { span.badge.conflict { (r.claims.join(", ")) } } }
                    }
                } }
            }
        }
    }
}

fn list(apps: &BTreeMap<String, (usize, Option<Timestamp>)>) -> Markup {
    html! {
        (time_control_for("", &Timestamp::now(), None))
        p.summary #summary data-total=(apps.len()) { (apps.len()) " apps with syncs or health reports in the ledger." }
        @if !apps.is_empty() {
            table.sortable #apps {
                thead { tr { th scope="col" { "App" } th scope="col" class="num" { "Syncs and reports" } th scope="col" { "Last" } } }
                tbody { @for (name, (n, last)) in apps {
                    tr data-app=(name) {
                        td { a href=(format!("/ui/app?{}", query(&[("app", name)]))) { (name) } }
                        td.num { (n) }
                        td { @if let Some(t) = last { (utc(t)) } }
                    }
                } }
            }
        }
    }
}
