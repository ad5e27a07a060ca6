//! `annal serve --tokens`: ingest over real loopback HTTP, with the auth
//! matrix, 413 and 400, and a Kubernetes audit `EventList` as a
//! kube-apiserver webhook backend sends it.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{json, Value};

use crate::util::*;

const INGEST: &str = "ingest-0123456789abcdef";
const READ: &str = "read-0123456789abcdef";

/// `annal serve --tokens` (an ingest and a read token) with `extra`.
fn serve(l: &Ledger, extra: &[&str]) -> Server {
    let tokens = l.file("tokens", &format!("ingest {INGEST}\nread {READ}\n"));
    let mut args = vec!["--tokens", path_str(&tokens)];
    args.extend_from_slice(extra);
    Server::start(l, &args)
}

#[test]
fn ingest_over_http_checks_tokens_roles_sizes_and_bodies() {
    let l = Ledger::new();
    let server = serve(&l, &["--max-body-bytes", "100000"]);
    let addr = server.addr.clone();
    let events = envelopes("h", 3);

    // Health needs no token; everything under /v1/ does.
    assert_eq!(request(&addr, "GET", "/healthz", None, "").0, 200);
    assert_eq!(request(&addr, "POST", "/v1/events", None, &events).0, 401);
    assert_eq!(
        request(
            &addr,
            "POST",
            "/v1/events",
            Some("wrong-token-0123456789"),
            &events
        )
        .0,
        401
    );
    assert_eq!(
        request(&addr, "POST", "/v1/events", Some(READ), &events).0,
        403
    );
    assert_eq!(
        request(&addr, "GET", "/v1/inventory", Some(INGEST), "").0,
        403
    );
    assert_eq!(
        request(&addr, "GET", "/v1/inventory", Some(READ), "").0,
        200
    );

    let (status, r) = request(&addr, "POST", "/v1/events", Some(INGEST), &events);
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        body_json(&r),
        json!({"appended": 3, "duplicates": 0, "rejected": 0})
    );
    let (_, r) = request(&addr, "POST", "/v1/events", Some(INGEST), &events);
    assert_eq!(
        body_json(&r),
        json!({"appended": 0, "duplicates": 3, "rejected": 0})
    );

    let (status, r) = request(
        &addr,
        "POST",
        "/v1/events",
        Some(INGEST),
        "this is not json\n",
    );
    assert_eq!(status, 400, "{r}");
    assert!(
        body_json(&r)["error"]
            .as_str()
            .unwrap()
            .contains("http:/v1/events:1"),
        "{r}"
    );

    let big = "x".repeat(100_001);
    assert_eq!(
        request(&addr, "POST", "/v1/events", Some(INGEST), &big).0,
        413
    );
    assert_eq!(
        request(&addr, "POST", "/v1/ingest/nope", Some(INGEST), "{}").0,
        404
    );

    // The audit webhook backend: an EventList of the project's audit sample.
    let items: Vec<Value> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ingest/testdata/audit.jsonl"
    ))
    .unwrap()
    .lines()
    .filter(|l| !l.trim().is_empty())
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    let list =
        json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": items}).to_string();
    let (status, r) = request(
        &addr,
        "POST",
        "/v1/k8s/audit?cluster=c1",
        Some(INGEST),
        &list,
    );
    assert_eq!(status, 200, "{r}");
    let counts = body_json(&r);
    assert!(
        counts["appended"].as_u64().unwrap() >= items.len() as u64,
        "{counts}"
    );

    // A published EventList, when the shared fixtures are beside the repo.
    let real = concat!(env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/real/k8s-audit/gitops-reverser-webhook/audit-deletecollection-official-raw-hollow.json");
    if let Ok(text) = std::fs::read_to_string(real) {
        let (status, r) = request(
            &addr,
            "POST",
            "/v1/k8s/audit?cluster=c2",
            Some(INGEST),
            &text,
        );
        assert_eq!(status, 200, "{r}");
        assert!(body_json(&r)["appended"].as_u64().unwrap() > 0, "{r}");
    }
}

#[test]
fn tokens_files_are_checked_before_serving() {
    let l = Ledger::new();
    let bad = l.file("tokens", "root short\n");
    let out = l.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        path_str(&bad),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tokens:1"), "{}", stderr(&out));
}

#[test]
fn a_saturated_ingest_queue_answers_429_and_metrics_count_it() {
    let l = Ledger::new();
    let server = serve(&l, &["--max-in-flight", "1"]);
    let addr = server.addr.clone();
    // A sender that announces a body and sends one byte of it holds the
    // only slot until it goes away.
    let mut slow = TcpStream::connect(&addr).unwrap();
    write!(
        slow,
        "POST /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {INGEST}\r\nContent-Length: 1000\r\n\r\n{{"
    )
    .unwrap();
    slow.flush().unwrap();
    server.wait_for_metric(
        "annal_ingest_queue_depth",
        1,
        "the slow request never took the slot",
    );
    let (status, r) = request(
        &addr,
        "POST",
        "/v1/events",
        Some(INGEST),
        &envelopes("q", 1),
    );
    assert_eq!(status, 429, "{r}");
    assert!(r.to_ascii_lowercase().contains("retry-after: 1"), "{r}");
    assert_eq!(server.metric("annal_ingest_refused_total"), 1);

    drop(slow);
    server.wait_for_metric("annal_ingest_queue_depth", 0, "the slot was never released");
    let (status, _) = request(
        &addr,
        "POST",
        "/v1/events",
        Some(INGEST),
        &envelopes("q", 2),
    );
    assert_eq!(status, 200);
    assert_eq!(server.metric("annal_ingest_appended_total"), 2);
    assert_eq!(server.metric("annal_ingest_commit_seconds_count"), 1);
    assert_eq!(request(&addr, "GET", "/readyz", None, "").0, 200);
}

#[test]
fn serve_demo_starts_a_newcomer_with_the_examples_and_an_api() {
    let l = Ledger::empty();
    let server = Server::start(&l, &["--demo"]);
    let addr = server.addr.clone();
    let (status, r) = request(
        &addr,
        "GET",
        "/v1/inventory?at=2026-11-01T10:30:00Z",
        None,
        "",
    );
    assert_eq!(status, 200, "{r}");
    assert!(
        body_json(&r)["objects"].as_array().unwrap().len() > 3,
        "{r}"
    );
}

#[test]
fn sigterm_lets_an_ingest_in_flight_commit_before_exit() {
    let l = Ledger::new();
    let mut server = serve(&l, &[]);
    let addr = server.addr.clone();
    let body = envelopes("drain", 5);
    let (head, tail) = body.split_at(10);
    let mut slow = TcpStream::connect(&addr).unwrap();
    write!(
        slow,
        "POST /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {INGEST}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        body.len()
    )
    .unwrap();
    slow.flush().unwrap();
    server.wait_for_metric("annal_ingest_queue_depth", 1, "the request never started");
    server.sigterm();
    // The rest of the body arrives after SIGTERM: the request still commits
    // and is answered, then the server exits cleanly.
    slow.write_all(tail.as_bytes()).unwrap();
    let mut response = String::new();
    slow.read_to_string(&mut response).unwrap();
    assert_eq!(&response[9..12], "200", "{response}");
    assert_eq!(body_json(&response)["appended"], 5);
    let status = server.child.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(l.size(), 5, "the acknowledged events are in the ledger");
}

/// An Argo CD notifications webhook whose template renders the whole
/// Application (`body: '{{toJson .app}}'`, as docs/http.md recommends).
#[test]
fn argocd_notification_webhooks_record_the_application_once() {
    let l = Ledger::new();
    let server = serve(&l, &[]);
    let addr = server.addr.clone();
    let app = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "shop", "namespace": "argocd"},
        "spec": {
            "project": "retail",
            "destination": {"name": "prod-eu1", "namespace": "shop"},
            "source": {"repoURL": "https://git.example.com/shop.git", "path": "deploy", "targetRevision": "main"}
        },
        "status": {
            "sync": {"status": "Synced", "revision": "aaaa1111"},
            "health": {"status": "Healthy"},
            "operationState": {
                "phase": "Succeeded",
                "startedAt": "2026-11-01T10:59:00Z",
                "finishedAt": "2026-11-01T10:59:30Z",
                "operation": {"sync": {"revision": "aaaa1111"}},
                "syncResult": {
                    "revision": "aaaa1111",
                    "resources": [{"group": "apps", "version": "v1", "kind": "Deployment",
                                   "namespace": "shop", "name": "web", "status": "Synced",
                                   "message": "deployment.apps/web configured"}]
                }
            }
        }
    })
    .to_string();
    let path = "/v1/webhooks/argocd?cluster=prod-eu1";
    let (status, r) = request(&addr, "POST", path, Some(INGEST), &app);
    assert_eq!(status, 200, "{r}");
    let first = body_json(&r);
    assert!(first["appended"].as_u64().unwrap() >= 1, "{first}");
    assert_eq!(first["rejected"], 0);
    // Argo CD re-sends on every trigger firing: nothing is stored twice.
    let (_, r) = request(&addr, "POST", path, Some(INGEST), &app);
    let again = body_json(&r);
    assert_eq!(
        (again["appended"].clone(), again["duplicates"].clone()),
        (json!(0), first["appended"].clone())
    );
    let (status, r) = request(
        &addr,
        "POST",
        "/v1/sql",
        Some(READ),
        "SELECT count(*) AS n FROM events WHERE type = 'app.sync'",
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(body_json(&r)["rows"][0]["n"], 1, "{r}");
}
