//! `/ui/object`: one object's life: every version with who made it, the
//! manifest at any version (as stored: secret values are fingerprints,
//! never the values), the differences between any two versions, who
//! owns each field (managedFields) and the values one field had (blame),
//! and its owners over time: what `annal history` answers.

use annal_query::asof::history::{self, HistoryRow, ObjectQuery, VersionChange};
use annal_query::asof::{diff, managed_fields};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;

use super::page::{self, frame, query, utc, Failure};
use super::Ui;

/// The page's query string: the object, and which versions to show.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    cluster: Option<String>,
    group: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    /// Log index of the version whose manifest is shown (default: the
    /// latest).
    v: Option<u64>,
    /// Log index of the older side of the diff (default: the version
    /// before `v`).
    a: Option<u64>,
    /// A field to blame (`spec.replicas`).
    field: Option<String>,
}

/// The link to an object's page.
pub fn link(cluster: &str, group: &str, kind: &str, namespace: &str, name: &str) -> String {
    format!(
        "/ui/object?{}",
        query(&[
            ("cluster", cluster),
            ("group", group),
            ("kind", kind),
            ("namespace", namespace),
            ("name", name),
        ])
    )
}

/// What the page reads.
struct Answer {
    versions: Vec<HistoryRow>,
    /// Index into `versions` of the one shown.
    shown: usize,
    manifest: Value,
    /// The older side of the diff: its position and manifest.
    older: Option<(usize, Value)>,
    managers: Vec<managed_fields::ManagerFields>,
    blame: Option<Vec<history::BlameRow>>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let text = |v: &Option<String>| v.as_deref().unwrap_or("").trim().to_string();
    let (cluster, kind, name) = (text(&p.cluster), text(&p.kind), text(&p.name));
    if cluster.is_empty() || kind.is_empty() || name.is_empty() {
        return page::error(
            axum::http::StatusCode::BAD_REQUEST,
            "Which object?",
            "Name the object: /ui/object?cluster=C&kind=K&namespace=NS&name=N (group= when two API groups have the kind). The inventory page links each object here.",
        );
    }
    let q = ObjectQuery {
        cluster: cluster.clone(),
        group: p.group.clone().filter(|g| !g.is_empty()),
        kind,
        namespace: text(&p.namespace),
        name,
    };
    let store = ui.store.clone();
    let query_of = q.clone();
    let (v, a, field) = (p.v, p.a, p.field.clone().filter(|f| !f.trim().is_empty()));
    let answer = page::answer(move || {
        if !page::known_cluster(&store, &query_of.cluster)? {
            return Err(page::unknown_cluster(&query_of.cluster));
        }
        let versions = history::find(&store, &query_of)?;
        let position = |index: u64| {
            versions
                .iter()
                .position(|r| r.index == index)
                .ok_or_else(|| {
                    Failure::NotFound(
                        "No such version",
                        format!("entry {index} is not a version of this object"),
                    )
                })
        };
        let shown = match v {
            Some(i) => position(i)?,
            None => versions.len() - 1,
        };
        let entry_of = |index: u64| -> Result<annal_store::Entry, Failure> {
            store
                .entry(index)?
                .ok_or_else(|| Failure::Bad(format!("entry {index} is past the log's end")))
        };
        let entry = entry_of(versions[shown].index)?;
        let older = match a {
            Some(i) => Some(position(i)?),
            None => shown.checked_sub(1),
        };
        let older = match older {
            Some(o) => Some((o, entry_of(versions[o].index)?.event.data)),
            None => None,
        };
        let blame = match &field {
            Some(f) => Some(history::blame(&store, &versions, f)?),
            None => None,
        };
        Ok(Answer {
            managers: managed_fields::of_entry(&entry),
            manifest: entry.event.data,
            versions,
            shown,
            older,
            blame,
        })
    })
    .await;
    let a = match answer {
        Ok(a) => a,
        Err(page) => return page,
    };
    let base = link(
        &q.cluster,
        &a.versions[0].group,
        &q.kind,
        &q.namespace,
        &q.name,
    );
    let title = match q.namespace.as_str() {
        "" => format!("{} {}", q.kind, q.name),
        ns => format!("{} {ns}/{}", q.kind, q.name),
    };
    let body = html! {
        p.summary #summary data-total=(a.versions.len()) {
            (a.versions.len()) " versions on cluster " a href=(format!("/ui/inventory?{}", query(&[("cluster", &q.cluster)]))) { (q.cluster) }
            @if !a.versions[0].group.is_empty() { ", group " (a.versions[0].group) }
            "; showing the version of " (utc(&a.versions[a.shown].valid_from)) " (entry " (a.versions[a.shown].index) ")."
        }
        h2 { "Versions" }
        (versions(&a, &base))
        h2 { "Owners over time" }
        (owners(&a.versions))
        div.grid2 {
            section {
                h2 { "Manifest at entry " (a.versions[a.shown].index) }
                p.muted { "As stored: secret values are fingerprints, never the values." }
                pre.manifest #manifest { (serde_json::to_string_pretty(&a.manifest).unwrap_or_default()) }
            }
            section {
                h2 { "Differences" }
                (differences(&a))
            }
        }
        h2 { "Field owners at entry " (a.versions[a.shown].index) }
        (field_owners(&a.managers))
        h2 #blame { "Blame" }
        form.controls method="get" action="/ui/object" {
            @for (k, val) in [("cluster", q.cluster.as_str()), ("group", a.versions[0].group.as_str()), ("kind", q.kind.as_str()), ("namespace", q.namespace.as_str()), ("name", q.name.as_str())] {
                input type="hidden" name=(k) value=(val);
            }
            label { "Field " input name="field" value=(p.field.clone().unwrap_or_default()) size="30" placeholder="spec.replicas"; }
            button type="submit" { "Blame" }
        }
        @if let Some(rows) = &a.blame { (blame(rows)) }
    };
    frame(&title, "", body).into_response()
}

fn versions(a: &Answer, base: &str) -> Markup {
    html! {
        table.sortable #versions {
            thead { tr {
                th scope="col" class="num" { "Entry" } th scope="col" { "Valid from" } th scope="col" { "Change" }
                th scope="col" { "Who" } th scope="col" { "Manager" } th scope="col" { "App" }
                th scope="col" { "Revision" } th scope="col" { "Fields changed" } th scope="col" { "Show" }
            } }
            tbody {
                @for (i, r) in a.versions.iter().enumerate() {
                    tr data-version=(r.index) aria-current=[(i == a.shown).then_some("true")] {
                        td.num { (r.index) }
                        td data-sort=(r.valid_from.to_string()) { (utc(&r.valid_from)) }
                        td { span class=(format!("badge {}", r.change.as_str())) { (r.change.as_str()) } }
                        td { (r.who()) }
                        td { (r.manager.as_deref().unwrap_or("")) @if let Some(op) = &r.operation { " (" (op) ")" } }
                        td { (r.app.as_deref().unwrap_or("")) }
                        td { (r.revision.as_deref().map(|s| s.chars().take(12).collect::<String>()).unwrap_or_default()) }
                        td { (r.changed.join(", ")) }
                        td {
                            a href=(format!("{base}&v={}", r.index)) { "manifest" }
                            @if i != a.shown { " · " a href=(format!("{base}&v={}&a={}", a.versions[a.shown].index, r.index)) { "diff with shown" } }
                        }
                    }
                }
            }
        }
    }
}

/// Runs of the same deciding owner, in version order.
fn owners(versions: &[HistoryRow]) -> Markup {
    let mut runs: Vec<(Option<&str>, &HistoryRow, Option<&HistoryRow>)> = Vec::new();
    for r in versions {
        let owner = match r.change {
            VersionChange::Deleted => None,
            _ => r.app.as_deref(),
        };
        match runs.last_mut() {
            Some(last) if last.0 == owner => {}
            _ => {
                if let Some(last) = runs.last_mut() {
                    last.2 = Some(r);
                }
                runs.push((owner, r, None));
            }
        }
    }
    html! {
        table #owners {
            thead { tr { th scope="col" { "Owner" } th scope="col" { "From" } th scope="col" { "Until" } } }
            tbody {
                @for (owner, from, to) in &runs {
                    tr data-owner=(owner.unwrap_or("")) {
                        td { (owner.unwrap_or("(none)")) }
                        td { (utc(&from.valid_from)) }
                        td { @match to { Some(t) => (utc(&t.valid_from)), None => "now" } }
                    }
                }
            }
        }
    }
}

fn differences(a: &Answer) -> Markup {
    let Some((older, before)) = &a.older else {
        return html! { p.muted { "The first version: nothing to compare with." } };
    };
    let mut paths = Vec::new();
    diff::differences("", before, &a.manifest, &mut paths);
    let show = |v: Option<&Value>| match v {
        None => "(absent)".to_string(),
        Some(v) => serde_json::to_string(v).unwrap_or_default(),
    };
    html! {
        p.muted { "Entry " (a.versions[*older].index) " (" (utc(&a.versions[*older].valid_from)) ") → entry "
            (a.versions[a.shown].index) " (" (utc(&a.versions[a.shown].valid_from)) "): " (paths.len()) " fields differ." }
        @if !paths.is_empty() {
            table #differences {
                thead { tr { th scope="col" { "Field" } th scope="col" { "Before" } th scope="col" { "After" } } }
                tbody {
                    @for path in &paths {
                        tr data-path=(path) {
                            td { code { (path) } }
                            td { del { (show(history::value_at(before, path))) } }
                            td { ins { (show(history::value_at(&a.manifest, path))) } }
                        }
                    }
                }
            }
        }
    }
}

fn field_owners(managers: &[managed_fields::ManagerFields]) -> Markup {
    html! {
        @if managers.is_empty() {
            p.muted { "This version carries no managedFields (a deletion, or an object read without them)." }
        } @else {
            table.sortable #field-owners {
                thead { tr { th scope="col" { "Field" } th scope="col" { "Manager" } th scope="col" { "Operation" } th scope="col" { "Time (as given)" } } }
                tbody {
                    @for m in managers {
                        @for f in &m.fields {
                            tr {
                                td { code { (f) } }
                                td { (m.manager.as_deref().unwrap_or("")) @if let Some(s) = &m.subresource { " (" (s) ")" } }
                                td { (m.operation.as_deref().unwrap_or("")) }
                                td { (m.time.as_deref().unwrap_or("")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn blame(rows: &[history::BlameRow]) -> Markup {
    html! {
        table #blame-rows {
            thead { tr {
                th scope="col" { "Value" } th scope="col" { "From" } th scope="col" { "Until" }
                th scope="col" { "Set by" } th scope="col" { "Manager" } th scope="col" { "App" } th scope="col" class="num" { "Entry" }
            } }
            tbody {
                @for r in rows {
                    tr data-blame=(r.index) {
                        td { code { (serde_json::to_string(&r.value).unwrap_or_default()) } }
                        td { (utc(&r.from)) }
                        td { @match &r.to { Some(t) => (utc(t)), None => "now" } }
                        td { (r.set_by) }
                        td { (r.manager.as_deref().unwrap_or("")) }
                        td { (r.app.as_deref().unwrap_or("")) }
                        td.num { (r.index) }
                    }
                }
            }
        }
    }
}
