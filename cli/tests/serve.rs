//! `annal serve` over real loopback HTTP: the read API answers, SIGTERM
//! stops it cleanly, and a non-loopback address is refused without auth.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use crate::util::*;

/// One HTTP/1.1 request; returns (status, body).
fn http(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn serve_answers_sql_and_inventory_over_loopback_and_stops_on_sigterm() {
    let l = Ledger::new();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    // Read before serving: the server holds the ledger's lock.
    let size = l.size();
    let mut child = Killed(
        l.command(&["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut server_log = BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    server_log.read_line(&mut line).unwrap();
    let addr = served_address(&line, "http");

    let (status, body) = http(
        &addr,
        &format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!((status, body.trim()), (200, "ok"));

    let (status, body) = http(
        &addr,
        &format!(
            "GET /v1/inventory?at=2026-11-01T10:30:00Z&cluster=staging-us1 HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(status, 200, "{body}");
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["podinfo", "redis-master"]);

    let query = "SELECT count(*) AS n FROM events";
    let (status, body) = http(
        &addr,
        &format!(
            "POST /v1/sql HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{query}",
            query.len()
        ),
    );
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["rows"][0]["n"], serde_json::json!(size));

    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    server_log.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("stopped"), "{rest}");

    let out = l.run(&["serve", "--listen", "0.0.0.0:7480"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
}
