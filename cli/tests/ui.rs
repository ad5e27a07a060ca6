//! The web UI through a real `annal serve` on loopback: each page answers
//! what the CLI answers for the same question, errors are pages that say
//! what to do, nothing is loaded from elsewhere, the login holds with
//! `--tokens`, and headless Chromium renders it. See: issue 22.

use std::collections::BTreeSet;

use crate::reports::{chromium, headless};
use crate::util::*;

fn demo() -> (Ledger, Server) {
    let l = Ledger::empty();
    let out = l.run(&["demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let server = Server::start(&l, &[]);
    (l, server)
}

fn get(server: &Server, path: &str, cookie: Option<&str>) -> (u16, String) {
    let cookie = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    exchange(
        &server.addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\n{cookie}Connection: close\r\n\r\n",
            server.addr
        ),
    )
}

/// Every value of `attr="..."` in the page.
fn attrs(html: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    html.split(&needle)
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|v| v.replace("&amp;", "&"))
        .collect()
}

/// The objects `annal inventory -o json` lists at `at`, as the page keys them.
fn cli_objects(l: &Ledger, args: &[&str]) -> BTreeSet<String> {
    let mut all = vec!["inventory"];
    all.extend_from_slice(args);
    let (code, doc) = l.json(&all);
    assert_eq!(code, Some(0), "{doc}");
    doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let s = |k: &str| o[k].as_str().unwrap_or("").to_string();
            format!(
                "{}/{}/{}/{}",
                s("cluster"),
                s("kind"),
                s("namespace"),
                s("name")
            )
        })
        .collect()
}

#[test]
fn pages_answer_what_the_cli_answers() {
    let (l, server) = demo();
    // The root leads to the fleet.
    let (status, response) = get(&server, "/", None);
    assert_eq!(status, 303, "{response}");
    assert!(response.contains("location: /ui/fleet"), "{response}");

    // Inventory at two instants, as the CLI says; the time control moves it.
    let mut seen = Vec::new();
    for at in ["2026-11-01T09:30:00Z", "2026-11-01T10:30:00Z"] {
        let (status, response) = get(&server, &format!("/ui/inventory?at={at}"), None);
        assert_eq!(status, 200, "{response}");
        let page: BTreeSet<String> = attrs(&response, "data-object").into_iter().collect();
        assert_eq!(page, cli_objects(&l, &["--at", at]), "{at}");
        assert!(!page.is_empty());
        seen.push(page);
    }
    assert_ne!(seen[0], seen[1], "the instant changes the inventory");
    // Filters: one cluster, one kind.
    let (_, response) = get(
        &server,
        "/ui/inventory?at=2026-11-01T09:30:00Z&cluster=prod-eu1-a&kind=ConfigMap",
        None,
    );
    let page: BTreeSet<String> = attrs(&response, "data-object").into_iter().collect();
    let want: BTreeSet<String> = seen[0]
        .iter()
        .filter(|o| o.starts_with("prod-eu1-a/ConfigMap/"))
        .cloned()
        .collect();
    assert_eq!(page, want);
    assert!(!want.is_empty());

    // The fleet: every cluster, with the inventory's object counts.
    let (status, fleet) = get(&server, "/ui/fleet?at=2026-11-01T09:30:00Z", None);
    assert_eq!(status, 200, "{fleet}");
    let clusters = attrs(&fleet, "data-cluster");
    let counts = attrs(&fleet, "data-objects");
    let (_, coverage) = l.json(&["coverage", "--at", "2026-11-01T09:30:00Z"]);
    let known: Vec<String> = coverage["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cluster"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(clusters, known, "{coverage}");
    for (cluster, count) in clusters.iter().zip(&counts) {
        let n = seen[0]
            .iter()
            .filter(|o| o.starts_with(&format!("{cluster}/")))
            .count();
        assert_eq!(count, &n.to_string(), "{cluster}");
    }
    // Stale clusters carry the badge the CLI's stale list gives.
    let (_, inv) = l.json(&["inventory", "--at", "2026-11-01T09:30:00Z"]);
    let stale = inv["stale_clusters"].as_array().unwrap().len();
    assert_eq!(fleet.matches("badge stale").count(), stale, "{inv}");

    // Errors say what to do.
    let (status, page) = get(&server, "/ui/inventory?at=yesterday", None);
    assert_eq!(status, 400);
    assert!(page.contains("RFC 3339"), "{page}");
    let (status, page) = get(&server, "/ui/inventory?cluster=no-such-cluster", None);
    assert_eq!(status, 404);
    assert!(page.contains("no-such-cluster"), "{page}");
}

#[test]
fn the_diff_page_matches_annal_diff() {
    let (l, server) = demo();
    let (t1, t2) = ("2026-11-01T09:30:00Z", "2026-11-01T10:30:00Z");
    let (code, doc) = l.json(&["diff", "--from", t1, "--to", t2]);
    assert_eq!(code, Some(0), "{doc}");
    let mut want = BTreeSet::new();
    for side in ["added", "removed", "changed"] {
        for r in doc[side].as_array().unwrap() {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            want.insert(format!(
                "{} {}/{}/{}/{}",
                s("change"),
                s("cluster"),
                s("kind"),
                s("namespace"),
                s("name")
            ));
        }
    }
    assert!(
        !want.is_empty(),
        "the demo changes between {t1} and {t2}: {doc}"
    );
    let (status, page) = get(&server, &format!("/ui/diff?from={t1}&to={t2}"), None);
    assert_eq!(status, 200, "{page}");
    let got: BTreeSet<String> = attrs(&page, "data-diff").into_iter().collect();
    assert_eq!(got, want);
    // Per-cluster counts add up to the rows.
    let counted: usize = attrs(&page, "data-counts")
        .iter()
        .map(|c| {
            c.split(':')
                .skip(1)
                .map(|n| n.parse::<usize>().unwrap())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(counted, want.len());
    // T1 after T2 is a 400 page saying so.
    let (status, page) = get(&server, &format!("/ui/diff?from={t2}&to={t1}"), None);
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("earlier instant first"), "{page}");
}

#[test]
fn no_page_loads_anything_from_elsewhere() {
    let (_l, server) = demo();
    for path in [
        "/ui/fleet",
        "/ui/inventory?at=2026-11-01T09:30:00Z",
        "/ui/diff?from=2026-11-01T09:30:00Z&to=2026-11-01T10:30:00Z",
        "/ui/login",
        "/ui/static/annal.css",
        "/ui/inventory?at=nonsense",
    ] {
        let (_, response) = get(&server, path, None);
        let body = body_of(&response);
        let mut refs = attrs(&body, "href");
        refs.extend(attrs(&body, "src"));
        refs.extend(attrs(&body, "action"));
        refs.extend(
            body.split("url(")
                .skip(1)
                .map(|r| r.split(')').next().unwrap_or("").to_string()),
        );
        for r in &refs {
            assert!(
                r.starts_with('/') && !r.starts_with("//") || r.starts_with('#'),
                "{path} refers to {r:?}"
            );
        }
        assert!(!body.contains("@import"), "{path}");
        assert!(!body.contains("<script"), "{path}: no script yet");
    }
}

#[test]
fn with_tokens_the_pages_need_a_login_and_the_cookie_opens_only_them() {
    let l = Ledger::empty();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    let tokens = l.file(
        "tokens",
        "read reader-token-0123456789\ningest ingest-token-0123456789\n",
    );
    let server = Server::start(&l, &["--tokens", path_str(&tokens)]);
    let (status, response) = get(&server, "/ui/inventory?cluster=prod-eu1-a", None);
    assert_eq!(status, 303, "{response}");
    assert!(
        response.contains("location: /ui/login?next=%2Fui%2Finventory%3Fcluster%3Dprod-eu1-a"),
        "{response}"
    );
    let (status, form) = get(&server, "/ui/login", None);
    assert_eq!(status, 200);
    assert!(form.contains("type=\"password\""), "{form}");
    let post = |body: &str| {
        exchange(
            &server.addr,
            &format!(
                "POST /ui/login HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                server.addr,
                body.len()
            ),
        )
    };
    let (status, _) = post("token=wrong-token-0123456789&next=%2Fui%2Ffleet");
    assert_eq!(status, 401);
    let (status, _) = post("token=ingest-token-0123456789&next=%2Fui%2Ffleet");
    assert_eq!(status, 403, "an ingest token may not read");
    let (status, response) =
        post("token=reader-token-0123456789&next=%2Fui%2Finventory%3Fcluster%3Dprod-eu1-a");
    assert_eq!(status, 303, "{response}");
    let set_cookie = response
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {response}"));
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/ui/"] {
        assert!(set_cookie.contains(attr), "{set_cookie}");
    }
    assert!(
        response.contains("location: /ui/inventory?cluster=prod-eu1-a"),
        "{response}"
    );
    let cookie = "annal_token=reader-token-0123456789";
    let (status, page) = get(&server, "/ui/inventory?cluster=prod-eu1-a", Some(cookie));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("data-object"), "{page}");
    // The cookie opens the pages only: the API stays bearer-only.
    let (status, _) = get(&server, "/v1/inventory", Some(cookie));
    assert_eq!(status, 401);
    // No open redirect after login.
    let (status, response) =
        post("token=reader-token-0123456789&next=https%3A%2F%2Fexample.org%2F");
    assert_eq!(status, 303);
    assert!(response.contains("location: /ui/fleet"), "{response}");
}

#[test]
fn chromium_renders_the_pages_with_their_rows() {
    let Some(chromium) = chromium() else {
        return;
    };
    let (l, server) = demo();
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (name, path, marker) in [
        ("fleet", "/ui/fleet?at=2026-11-01T09:30:00Z", "data-cluster"),
        (
            "inventory",
            "/ui/inventory?at=2026-11-01T09:30:00Z",
            "data-object",
        ),
    ] {
        let url = format!("http://{}{path}", server.addr);
        let profile = tempfile::tempdir().unwrap();
        let out = headless(&chromium, profile.path())
            .args(["--window-size=1280,800", "--dump-dom"])
            .arg(&url)
            .output()
            .unwrap();
        let dom = stdout(&out);
        assert!(dom.contains(marker), "{name}: {}", stderr(&out));
        if name == "inventory" {
            let rows: BTreeSet<String> = attrs(&dom, "data-object").into_iter().collect();
            assert_eq!(rows, cli_objects(&l, &["--at", "2026-11-01T09:30:00Z"]));
        }
        let png = shots.join(format!("{name}.png"));
        let out = headless(&chromium, profile.path())
            .args(["--window-size=1280,800"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(&url)
            .output()
            .unwrap();
        assert!(png.exists(), "{name}: no screenshot: {}", stderr(&out));
    }
}
