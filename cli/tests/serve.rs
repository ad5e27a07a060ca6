//! `annal serve` over real loopback HTTP: the read API answers, SIGTERM
//! stops it cleanly, and a non-loopback address is refused without auth.

use crate::util::*;

#[test]
fn serve_answers_sql_and_inventory_over_loopback_and_stops_on_sigterm() {
    let l = Ledger::new();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    // Read before serving: the server holds the ledger's lock.
    let size = l.size();
    let mut server = Server::start(&l, &[]);

    let (status, body) = server.request("GET", "/healthz", None, "");
    assert_eq!((status, body.trim()), (200, "ok"));

    let (status, body) = server.request(
        "GET",
        "/v1/inventory?at=2026-11-01T10:30:00Z&cluster=staging-us1",
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = rows["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["podinfo", "redis-master"]);

    let query = "SELECT count(*) AS n FROM events";
    let (status, body) = server.request("POST", "/v1/sql", None, query);
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["rows"][0]["n"], serde_json::json!(size));

    let status = server.terminate();
    assert_eq!(status.code(), Some(0));
    assert!(server.logged("stopped"), "{}", server.log());

    let out = l.run(&["serve", "--listen", "0.0.0.0:7480"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
}
