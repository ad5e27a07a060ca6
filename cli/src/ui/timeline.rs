//! `/ui/timeline`: events over time for the fleet, a cluster or an app,
//! filtered by mark (sync, prune, deletion, credential, fence, ...),
//! actor and app, with coverage gaps beside them. The server buckets
//! ([`annal_query::timeline`]); the page carries at most a few hundred
//! numbers per series, whatever the ledger's size. Dragging across the
//! chart asks for the narrower window; the counts are also a table, so
//! the page reads without the chart.

use annal_query::timeline::{self, Mark, Timeline, TimelineQuery};
use annal_schemas::Timestamp;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, PreEscaped};
use serde::Deserialize;
use serde_json::json;

use super::page::{self, frame, query, utc};
use super::Ui;

/// Buckets a chart has at most.
const BUCKETS: usize = 120;

/// The page's query string.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    from: Option<String>,
    to: Option<String>,
    cluster: Option<String>,
    app: Option<String>,
    actor: Option<String>,
    /// Marks, comma-separated (`sync,prune`); empty: all.
    mark: Option<String>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let (from, to) = match (page::time("from", &p.from), page::time("to", &p.to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return page::bad_time(&e),
    };
    let text = |v: &Option<String>| v.as_deref().unwrap_or("").trim().to_string();
    let (cluster, app, actor, mark_text) = (
        text(&p.cluster),
        text(&p.app),
        text(&p.actor),
        text(&p.mark),
    );
    let mut marks = Vec::new();
    for name in mark_text
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        match Mark::parse(name) {
            Some(m) => marks.push(m),
            None => {
                let known: Vec<&str> = Mark::ALL.iter().map(|m| m.as_str()).collect();
                return page::error(
                    axum::http::StatusCode::BAD_REQUEST,
                    "No such mark",
                    &format!("mark={name:?} is not one of {}", known.join(", ")),
                );
            }
        }
    }
    let store = ui.store.clone();
    let q_cluster = cluster.clone();
    let (q_app, q_actor, q_marks) = (app.clone(), actor.clone(), marks.clone());
    let answer = page::answer(move || {
        if !q_cluster.is_empty() && !page::known_cluster(&store, &q_cluster)? {
            return Err(page::unknown_cluster(&q_cluster));
        }
        let (from, to) = match (from, to, timeline::default_window(&store)?) {
            (Some(f), Some(t), _) => (f, t),
            (f, t, Some((first, last))) => (f.unwrap_or(first), t.unwrap_or(last)),
            (f, t, None) => {
                let now = Timestamp::now();
                (f.unwrap_or(now), t.unwrap_or(now))
            }
        };
        if from == to {
            return Ok(None);
        }
        let q = TimelineQuery {
            from,
            to,
            cluster: (!q_cluster.is_empty()).then_some(q_cluster),
            app: (!q_app.is_empty()).then_some(q_app),
            actor: (!q_actor.is_empty()).then_some(q_actor),
            marks: q_marks,
            buckets: BUCKETS,
        };
        Ok(Some(timeline::timeline(&store, &q)?))
    })
    .await;
    let t = match answer {
        Ok(t) => t,
        Err(page) => return page,
    };
    let body = html! {
        form.controls method="get" action="/ui/timeline" {
            label { "From " input name="from" value=(t.as_ref().map(|t| t.from.to_string()).unwrap_or_default()) size="22" aria-describedby="time-help"; }
            label { "To " input name="to" value=(t.as_ref().map(|t| t.to.to_string()).unwrap_or_default()) size="22"; }
            label { "Cluster " input name="cluster" value=(cluster) size="14"; }
            label { "App " input name="app" value=(app) size="20" placeholder="argocd:guestbook"; }
            label { "Actor " input name="actor" value=(actor) size="16" placeholder="alice"; }
            label { "Marks " input name="mark" value=(mark_text) size="18" placeholder="sync,prune,deletion"; }
            button type="submit" { "Show" }
            small #time-help { "Times: RFC 3339 (2026-11-01T09:30:00Z) or now-2h, shown in UTC. Drag across the chart to zoom. Marks: "
                @for (i, m) in Mark::ALL.iter().enumerate() { @if i > 0 { ", " } (m.as_str()) } }
        }
        @match &t {
            None => p.summary #summary data-total="0" { "The ledger holds no event yet: ingest something (annal ingest) first." },
            Some(t) => (chart(t, &cluster, &app)),
        }
    };
    frame("Timeline", "/ui/timeline", body).into_response()
}

/// The chart, its counts as a table, the notable events and the gaps.
fn chart(t: &Timeline, cluster: &str, app: &str) -> maud::Markup {
    let total: u64 = t.series.iter().map(|(_, c)| c.iter().sum::<u64>()).sum();
    let data = json!({
        "starts": t.starts,
        "bucket_label": width_words(t.bucket_seconds),
        "series": t.series.iter().map(|(m, c)| json!({"mark": m.as_str(), "counts": c})).collect::<Vec<_>>(),
    });
    // `<` never appears in the numbers and names above, and the text is
    // escaped for a script element anyway.
    let data = data.to_string().replace('<', "\\u003c");
    let scope = match (cluster, app) {
        ("", "") => "the fleet".to_string(),
        (c, "") => format!("cluster {c}"),
        ("", a) => format!("app {a}"),
        (c, a) => format!("app {a} on cluster {c}"),
    };
    html! {
        p.summary #summary data-total=(total) {
            (total) " events of " (scope) " from " (utc(&t.from)) " to " (utc(&t.to))
            ", in buckets of " (width_words(t.bucket_seconds)) "."
        }
        div.chart #timeline data-timeline data-source="timeline-data" role="img" aria-label=(format!("Events per {} by mark", width_words(t.bucket_seconds))) {}
        script #timeline-data type="application/json" { (PreEscaped(data)) }
        div.legend-keys {
            @for (m, _) in &t.series { span { span class=(format!("swatch mark-{}", m.as_str())) {} (m.as_str()) } }
        }
        h2 { "Totals" }
        table.sortable #totals {
            thead { tr { th scope="col" { "Mark" } th scope="col" class="num" { "Events" } } }
            tbody {
                @for (m, c) in &t.series {
                    tr data-mark=(m.as_str()) { td { (m.as_str()) } td.num { (c.iter().sum::<u64>()) } }
                }
            }
        }
        h2 { "Notable events" }
        @if t.notable.is_empty() {
            p.muted { "No sync, prune, deletion, credential change or fence in this window." }
        } @else {
            p.muted { "The latest " (t.notable.len()) ", newest first." }
            table.sortable #notable {
                thead { tr {
                    th scope="col" { "Time" } th scope="col" { "Mark" } th scope="col" { "Cluster" }
                    th scope="col" { "Type" } th scope="col" { "What" } th scope="col" class="num" { "Index" }
                } }
                tbody {
                    @for n in &t.notable {
                        tr data-index=(n.index) {
                            td data-sort=(n.time.to_string()) { (utc(&n.time)) }
                            td { span class=(format!("swatch mark-{}", n.mark.as_str())) {} (n.mark.as_str()) }
                            td { (n.cluster.as_deref().unwrap_or("")) }
                            td { (n.event_type) }
                            td { (n.summary) }
                            td.num { a href=(format!("/ui/integrity?{}", query(&[("index", &n.index.to_string())]))) { (n.index) } }
                        }
                    }
                }
            }
        }
        h2 { "Coverage gaps" }
        @if t.gaps.is_empty() {
            p.muted { "Every cluster in scope was heard from throughout." }
        } @else {
            table.sortable #gaps {
                thead { tr { th scope="col" { "Cluster" } th scope="col" { "Silent from" } th scope="col" { "Until" } th scope="col" class="num" { "Seconds" } } }
                tbody {
                    @for (c, g) in &t.gaps {
                        tr data-gap=(c) {
                            td { (c) }
                            td data-sort=(g.from.to_string()) { (utc(&g.from)) }
                            td data-sort=(g.to.to_string()) { (utc(&g.to)) @if g.open { " (still silent)" } }
                            td.num { (g.seconds) }
                        }
                    }
                }
            }
        }
    }
}

/// A bucket width in words.
fn width_words(seconds: i64) -> String {
    match seconds {
        s if s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}
