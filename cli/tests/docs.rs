//! The documentation a newcomer follows: README.md and the guide under
//! `docs/`. Every relative link and anchor resolves, and every `annal sql
//! "..."` they show runs on the demo ledger.
//! See: issue 19 (the README split into a guide).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

/// README.md and every page of `docs/`, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut paths = vec![root.join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    paths.extend(guide);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, line))
    })
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped
/// (but `-` and `_`), spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (a repeated heading gets `-1`, `-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, line) in prose(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while found.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        found.insert(anchor);
    }
    found
}

/// The `[text](target)` links of a page outside code, with the line each
/// target is on (a link's text may wrap over lines; inline code does not
/// go past a blank line).
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut code = false;
    for (n, line) in prose(text) {
        if line.trim().is_empty() {
            code = false;
        }
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'`' => code = !code,
                b']' if !code && bytes.get(i + 1) == Some(&b'(') => {
                    if let Some(end) = line[i + 2..].find(')') {
                        out.push((n, line[i + 2..i + 2 + end].to_string()));
                        i += 2 + end;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// Every broken relative link of `page` (a file that does not exist, or
/// an anchor its target does not have), as `page:line: target (why)`.
/// Links out of the repository (`../shared/...`) are checked only when
/// their target is there, as `../shared` is beside the clone in CI only.
fn broken(
    page: &Path,
    text: &str,
    anchors_of: &dyn Fn(&Path) -> Option<BTreeSet<String>>,
) -> Vec<String> {
    let mut found = Vec::new();
    let dir = page.parent().expect("a page is in a directory");
    for (n, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
        let file = if path.is_empty() {
            page.to_path_buf()
        } else {
            dir.join(path)
        };
        let outside = !normalize(&file).starts_with(root());
        if !path.is_empty() && !file.exists() {
            if !outside {
                found.push(format!("{}:{n}: {target} (no such file)", page.display()));
            }
            continue;
        }
        if anchor.is_empty() {
            continue;
        }
        match anchors_of(&file) {
            Some(known) if known.contains(anchor) => {}
            Some(_) => found.push(format!(
                "{}:{n}: {target} (no such heading)",
                page.display()
            )),
            None => found.push(format!(
                "{}:{n}: {target} (an anchor into a file that is not Markdown)",
                page.display()
            )),
        }
    }
    found
}

/// `path` without `.` and `..` components.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn anchors_on_disk(path: &Path) -> Option<BTreeSet<String>> {
    if path.extension().is_some_and(|e| e == "md") {
        Some(anchors(&std::fs::read_to_string(path).ok()?))
    } else {
        None
    }
}

#[test]
fn every_relative_link_and_anchor_in_the_documentation_resolves() {
    let pages = pages();
    assert!(
        pages.len() >= 8,
        "README and the guide: {} pages",
        pages.len()
    );
    let mut problems = Vec::new();
    let mut checked = 0;
    for (page, text) in &pages {
        checked += links(text).len();
        problems.extend(broken(page, text, &anchors_on_disk));
    }
    assert!(checked >= 50, "only {checked} links found");
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_missing_file_a_missing_anchor_and_ignores_code() {
    let page = root().join("docs/example.md");
    let text = "# Top\n\n## Auditing: proofs, saved checkpoints (`key` rotation)\n\
                [ok](#auditing-proofs-saved-checkpoints-key-rotation) [top](#top)\n\
                [gone](no-such-page.md) [bad](#nowhere) [readme](../README.md#annal)\n\
                [bad readme](../README.md#no-such-heading) `[code](nothing.md)`\n\
                ```\n[fenced](nothing.md)\n```\n";
    let anchors_of = |p: &Path| -> Option<BTreeSet<String>> {
        if p == page {
            Some(anchors(text))
        } else {
            anchors_on_disk(p)
        }
    };
    let found = broken(&page, text, &anchors_of);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("no-such-page.md (no such file)"),
        "{found:#?}"
    );
    assert!(
        found[1].contains("#nowhere (no such heading)"),
        "{found:#?}"
    );
    assert!(
        found[2].contains("#no-such-heading (no such heading)"),
        "{found:#?}"
    );
    assert_eq!(
        slug("Against PostgreSQL and DuckDB (`bench/run`)"),
        "against-postgresql-and-duckdb-benchrun"
    );
    let repeated = anchors("# A\n## Step\n## Step\n");
    assert!(
        repeated.contains("step") && repeated.contains("step-1"),
        "{repeated:?}"
    );
}

/// Every `annal sql "..."` the README and the guide show, run on the demo
/// ledger.
#[test]
fn every_sql_query_the_documentation_shows_still_runs() {
    let text: String = pages().iter().map(|(_, text)| text.as_str()).collect();
    let mut queries = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("annal sql \"") {
        let after = &rest[start + "annal sql \"".len()..];
        let mut query = String::new();
        let mut chars = after.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => query.extend(chars.next()),
                '"' => break,
                c => query.push(c),
            }
        }
        queries.push(query);
        rest = chars.as_str();
    }
    assert!(queries.len() >= 8, "found only {queries:?}");
    let l = Ledger::new();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    for query in &queries {
        let out = l.run(&["sql", query, "-o", "json"]);
        assert_eq!(out.status.code(), Some(0), "{query}: {}", stderr(&out));
        let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(rows.is_array(), "{query}: {rows}");
    }
}
