//! The web UI through a real `annal serve` on loopback: each page answers
//! what the CLI answers for the same question, errors are pages that say
//! what to do, nothing is loaded from elsewhere, the login holds with
//! `--tokens`, and headless Chromium renders it. See: issue 22.

use std::collections::BTreeSet;
use std::path::PathBuf;

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
    let mut scanned = 0;
    for path in [
        "/ui/fleet",
        "/ui/timeline",
        "/ui/inventory?at=2026-11-01T09:30:00Z",
        "/ui/diff?from=2026-11-01T09:30:00Z&to=2026-11-01T10:30:00Z",
        "/ui/app",
        "/ui/recovery",
        "/ui/integrity?index=0",
        "/ui/login",
        "/ui/static/annal.css",
        "/ui/static/annal.js",
        "/ui/static/vendor/htmx.min.js",
        "/ui/static/vendor/uPlot.iife.min.js",
        "/ui/static/vendor/uPlot.min.css",
        "/ui/inventory?at=nonsense",
    ] {
        let (status, response) = get(&server, path, None);
        assert!(status == 200 || status == 400, "{path}: {status}");
        let head = &response[..response.find("\r\n\r\n").unwrap_or(0)].to_ascii_lowercase();
        assert!(
            head.contains("content-security-policy: default-src 'self'"),
            "{path}: {head}"
        );
        let body = body_of(&response);
        if path.starts_with("/ui/static/") {
            // No outside origin anywhere in a served file, not even in
            // a vendored file's comment.
            for scheme in ["http://", "https://"] {
                assert!(!body.contains(scheme), "{path} names {scheme}...");
            }
        } else {
            // A page may show the ledger's own data (an API server's
            // address, a Git repository) as text, which loads nothing;
            // no tag may hold an outside origin.
            for tag in body.split('<').skip(1).filter_map(|t| t.split('>').next()) {
                assert!(
                    !tag.contains("http://") && !tag.contains("https://"),
                    "{path}: <{tag}>"
                );
            }
        }
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
                r.starts_with('/') && !r.starts_with("//")
                    || r.starts_with('#')
                    || r.starts_with("data:"),
                "{path} refers to {r:?}"
            );
        }
        for src in attrs(&body, "src") {
            assert!(src.starts_with("/ui/static/"), "{path}: script {src}");
        }
        assert!(!body.contains("@import"), "{path}");
        scanned += body.len();
    }
    // The vendored scripts are in what was scanned.
    assert!(scanned > 100_000, "{scanned}");
    let (status, _) = get(&server, "/ui/static/../Cargo.toml", None);
    assert_eq!(status, 404);
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

/// The DevTools-protocol driver (`tools/ui-check`, puppeteer-core from
/// npm over Debian's Chromium), when installed (`scripts/test.sh` does).
fn ui_check() -> Option<(PathBuf, PathBuf)> {
    let chromium = chromium()?;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools/ui-check");
    if dir.join("node_modules/puppeteer-core").exists() {
        return Some((chromium, dir.join("check.mjs")));
    }
    assert!(
        std::env::var("ANNAL_REQUIRE_UI_CHECK").is_err(),
        "ANNAL_REQUIRE_UI_CHECK is set but tools/ui-check has no node_modules"
    );
    eprintln!("skipped: npm ci --prefix tools/ui-check (scripts/test.sh does)");
    None
}

/// Each page of `pages` (name, path, extra spec) in Chromium: what
/// `check.mjs` reports, by name.
fn drive(
    (chromium, script): &(PathBuf, PathBuf),
    server: &Server,
    cookie: Option<&str>,
    pages: &[(&str, String, serde_json::Value)],
) -> std::collections::BTreeMap<String, serde_json::Value> {
    use std::io::Write;
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let plan = serde_json::json!({
        "base": format!("http://{}", server.addr),
        "chromium": chromium,
        "shots": shots,
        "cookie": cookie,
        "pages": pages.iter().map(|(name, path, extra)| {
            let mut spec = serde_json::json!({"name": name, "path": path});
            if let Some(extra) = extra.as_object() {
                for (k, v) in extra {
                    spec[k] = v.clone();
                }
            }
            spec
        }).collect::<Vec<_>>(),
    });
    let mut child = std::process::Command::new("node")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node (apt-get install nodejs)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(plan.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "check.mjs: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| (v["name"].as_str().unwrap().to_string(), v))
        .collect()
}

#[test]
fn every_page_in_chromium_answers_what_the_cli_answers_without_console_errors() {
    let Some(check) = ui_check() else {
        return;
    };
    let (l, server) = demo();
    let (t1, t2) = ("2026-11-01T09:30:00Z", "2026-11-01T10:30:00Z");
    // An object and its app, from the CLI.
    let (_, inventory) = l.json(&["inventory", "--at", t2]);
    let owned = inventory["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["owner"].is_string())
        .expect("the demo has an owned object")
        .clone();
    let s = |k: &str| owned[k].as_str().unwrap_or("").to_string();
    let app = s("owner");
    let object_path = format!(
        "/ui/object?cluster={}&kind={}&namespace={}&name={}",
        s("cluster"),
        s("kind"),
        s("namespace"),
        s("name")
    );
    let none = serde_json::Value::Null;
    let pages = vec![
        ("fleet", format!("/ui/fleet?at={t2}"), none.clone()),
        ("timeline", "/ui/timeline".to_string(), none.clone()),
        (
            "inventory",
            format!("/ui/inventory?at={t1}"),
            serde_json::json!({"fill": {"input[name=at]": t2}, "submit": "form.controls button"}),
        ),
        (
            "object",
            object_path.clone(),
            serde_json::json!({"click": "#versions thead th:nth-child(1) button", "keys": 1}),
        ),
        ("diff", format!("/ui/diff?from={t1}&to={t2}"), none.clone()),
        (
            "inventory-by-name",
            format!("/ui/inventory?at={t2}&sort=name&order=desc"),
            none.clone(),
        ),
        ("apps", "/ui/app".to_string(), none.clone()),
        ("app", format!("/ui/app?app={app}&at={t2}"), none.clone()),
        (
            "recovery",
            format!("/ui/recovery?at={t2}&controller=argocd-application-controller&apps={app}"),
            none.clone(),
        ),
        (
            "integrity",
            "/ui/integrity?index=0".to_string(),
            none.clone(),
        ),
        (
            "not-a-time",
            "/ui/inventory?at=yesterday-ish".to_string(),
            none.clone(),
        ),
        (
            "no-cluster",
            "/ui/inventory?cluster=nowhere".to_string(),
            none,
        ),
    ];
    let seen = drive(&check, &server, None, &pages);
    for (name, _, _) in &pages {
        let page = &seen[*name];
        assert_eq!(page["outside"], serde_json::json!([]), "{name}");
        let (status, problems) = match *name {
            // Chromium logs an error status of the page itself, and
            // nothing else may go wrong.
            "not-a-time" => (400, vec!["console error: Failed to load resource: the server responded with a status of 400 (Bad Request)"]),
            "no-cluster" => (404, vec!["console error: Failed to load resource: the server responded with a status of 404 (Not Found)"]),
            _ => (200, vec![]),
        };
        assert_eq!(page["status"], status, "{name}");
        assert_eq!(page["problems"], serde_json::json!(problems), "{name}");
    }
    assert!(
        seen["not-a-time"]["html"]
            .as_str()
            .unwrap()
            .contains("2026-11-01T09:30:00Z"),
        "the 400 page shows the expected format"
    );
    assert!(
        seen["no-cluster"]["html"]
            .as_str()
            .unwrap()
            .contains("nowhere"),
        "the 404 page names the cluster"
    );
    let html = |name: &str| seen[name]["html"].as_str().unwrap().to_string();

    // Sorted on the server by name, descending, over every page.
    let names: Vec<String> = attrs(&html("inventory-by-name"), "data-object")
        .iter()
        .map(|o| o.rsplit('/').next().unwrap().to_string())
        .collect();
    let mut expected = names.clone();
    expected.sort();
    expected.reverse();
    assert_eq!(names, expected);
    assert!(html("inventory-by-name").contains("aria-sort=\"descending\""));

    // The time control moved the inventory from t1 to t2, in the URL too.
    assert!(seen["inventory"]["url"]
        .as_str()
        .unwrap()
        .contains("at=2026-11-01T10%3A30%3A00Z"));
    let rows: BTreeSet<String> = attrs(&html("inventory"), "data-object")
        .into_iter()
        .collect();
    assert_eq!(rows, cli_objects(&l, &["--at", t2]));
    assert_ne!(
        rows,
        cli_objects(&l, &["--at", t1]),
        "the demo changes between t1 and t2"
    );

    // The object's versions are annal history's, sorted by the click.
    let (code, history) = l.json(&[
        "history",
        "--cluster",
        &s("cluster"),
        "--kind",
        &s("kind"),
        "--namespace",
        &s("namespace"),
        "--name",
        &s("name"),
    ]);
    assert_eq!(code, Some(0), "{history}");
    let mut expected: Vec<String> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["index"].to_string())
        .collect();
    expected.sort_by_key(|i| i.parse::<u64>().unwrap());
    assert_eq!(
        attrs(&html("object"), "data-version"),
        expected,
        "ascending after one click"
    );
    assert!(html("object").contains("aria-sort=\"ascending\""));
    assert!(html("object").contains("id=\"manifest\""));
    assert_eq!(
        seen["object"]["focus"], "a #main",
        "Tab reaches the skip link first"
    );

    // The diff page counts what annal diff counts.
    let (_, diff) = l.json(&["diff", "--from", t1, "--to", t2]);
    let total: usize = ["added", "removed", "changed", "owner_changed"]
        .iter()
        .map(|k| diff[k].as_array().map_or(0, Vec::len))
        .sum();
    assert!(total > 0, "{diff}");
    assert!(
        html("diff").contains(&format!("data-total=\"{total}\"")),
        "{total}"
    );

    // The timeline's total is every event in the ledger (its default
    // window spans them all) and its deletions are the log's.
    let (_, log) = l.json(&["log", "--limit", "100000"]);
    let events = log.as_array().unwrap();
    let deletions = events
        .iter()
        .filter(|e| e["type"] == "object.deleted")
        .count();
    assert!(deletions > 0);
    assert!(
        html("timeline").contains(&format!(
            "<tr data-mark=\"deletion\"><td>deletion</td><td class=\"num\">{deletions}</td>"
        )),
        "{deletions}"
    );
    assert!(
        html("timeline").contains(&format!("data-total=\"{}\"", events.len())),
        "{}",
        events.len()
    );

    // The app page lists the app's objects at t2, as the inventory does.
    let app_objects: BTreeSet<String> = attrs(&html("app"), "data-object").into_iter().collect();
    assert_eq!(app_objects, cli_objects(&l, &["--at", t2, "--owner", &app]));
    assert!(attrs(&html("apps"), "data-app").contains(&app));

    // The takeover plan's summary and verdict are annal takeover-plan's.
    let (code, plan) = l.json(&[
        "takeover-plan",
        "--controller",
        "argocd-application-controller",
        "--app",
        &app,
        "--at",
        t2,
    ]);
    let summary: Vec<String> = plan["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["cluster"].as_str().unwrap(),
                r["app"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(attrs(&html("recovery"), "data-summary"), summary);
    assert_eq!(
        attrs(&html("recovery"), "data-exit"),
        vec![code.unwrap().to_string()]
    );

    // Integrity: the checkpoint verifies and entry 0 is proved.
    assert!(html("integrity").contains("data-verified=\"true\""));
    assert!(html("integrity").contains("id=\"proof-summary\" data-index=\"0\""));
}

#[test]
fn in_chromium_the_login_is_required_and_a_bad_time_is_a_page_that_says_so() {
    let Some(check) = ui_check() else {
        return;
    };
    let l = Ledger::empty();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    let tokens = l.file("tokens", "read reader-token-0123456789\n");
    let server = Server::start(&l, &["--tokens", path_str(&tokens)]);
    let at = "2026-11-01T10:30:00Z";
    let login = |token: &str| serde_json::json!({"fill": {"input[name=token]": token}, "submit": "form button"});
    // The pages open in one browser, in order, sharing its cookies.
    let pages = vec![
        (
            "wrong-token",
            format!("/ui/fleet?at={at}"),
            login("wrong-token-0123456789"),
        ),
        (
            "right-token",
            format!("/ui/fleet?at={at}"),
            login("reader-token-0123456789"),
        ),
        (
            "bad-time-in-form",
            format!("/ui/inventory?at={at}"),
            serde_json::json!({"fill": {"input[name=at]": "yesterday-ish"}, "submit": "form.controls button"}),
        ),
    ];
    let seen = drive(&check, &server, None, &pages);
    let html = |name: &str| seen[name]["html"].as_str().unwrap().to_string();
    // Without the cookie the fleet leads to the login; a wrong token is
    // refused there, and the cookie is not set.
    assert!(html("wrong-token").contains("That token is not one this server accepts"));
    assert!(!html("wrong-token").contains("data-cluster"));
    // The right token leads back to the page asked for, with its rows.
    let url = seen["right-token"]["url"]
        .as_str()
        .unwrap()
        .replace("%3A", ":");
    assert!(url.ends_with("/ui/fleet?at=2026-11-01T10:30:00Z"), "{url}");
    assert!(html("right-token").contains("data-cluster=\"prod-eu1-a\""));
    assert_eq!(seen["right-token"]["problems"], serde_json::json!([]));
    // Logged in, a bad time typed into the form is the 400 page, swapped
    // in, naming the format expected.
    assert!(html("bad-time-in-form").contains("Not a time"));
    assert!(html("bad-time-in-form").contains("yesterday-ish"));
}
