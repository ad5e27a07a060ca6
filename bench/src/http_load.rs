//! The HTTP ingest load benchmark: concurrent clients posting batches of
//! envelopes to `POST /v1/events` on a running `annal serve`, over plain
//! HTTP/1.1 on loopback (one connection per request, as webhook senders
//! do). Each client records the latency of every answered request and the
//! events the server acknowledged; 429s are counted and retried after a
//! short pause, as a well-behaved sender would.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

/// What the clients saw.
#[derive(Debug, Default, serde::Serialize)]
pub struct Load {
    pub clients: usize,
    pub seconds: f64,
    pub batch: usize,
    pub requests: u64,
    pub acknowledged_events: u64,
    pub refused_429: u64,
    pub errors: u64,
    pub events_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Runs `clients` threads for `seconds`.
pub fn run(
    addr: &str,
    token: &str,
    clients: usize,
    seconds: u64,
    batch: usize,
    timeline: Option<&std::path::Path>,
) -> anyhow::Result<Load> {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (addr, token, stop) = (addr.to_string(), token.to_string(), stop.clone());
            std::thread::spawn(move || client(&addr, &token, c, batch, &stop, started))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut load = Load {
        clients,
        batch,
        ..Load::default()
    };
    let mut answered = Vec::new();
    for h in handles {
        let r = h.join().map_err(|_| anyhow::anyhow!("a client panicked"))?;
        load.requests += r.requests;
        load.acknowledged_events += r.acknowledged;
        load.refused_429 += r.refused;
        load.errors += r.errors;
        answered.extend(r.answered);
    }
    if let Some(path) = timeline {
        answered.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut csv = String::from("start_s,latency_ms\n");
        for (start, ms) in &answered {
            csv.push_str(&format!("{start:.4},{ms:.2}\n"));
        }
        std::fs::write(path, csv)?;
    }
    let mut latencies: Vec<f64> = answered.into_iter().map(|(_, ms)| ms).collect();
    load.seconds = started.elapsed().as_secs_f64();
    load.events_per_second = load.acknowledged_events as f64 / load.seconds;
    latencies.sort_by(f64::total_cmp);
    let pick = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    load.p50_ms = pick(0.50);
    load.p99_ms = pick(0.99);
    Ok(load)
}

#[derive(Default)]
struct ClientResult {
    requests: u64,
    acknowledged: u64,
    refused: u64,
    errors: u64,
    /// Each answered request: when it started (seconds into the run) and
    /// its latency (ms).
    answered: Vec<(f64, f64)>,
}

fn client(
    addr: &str,
    token: &str,
    c: usize,
    batch: usize,
    stop: &AtomicBool,
    run_started: Instant,
) -> ClientResult {
    let mut out = ClientResult::default();
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut body = String::new();
        for _ in 0..batch {
            let name = format!("obj-{}", seq % 5000);
            body.push_str(&json!({"schema": "annal.event/v1", "id": format!("load-{c}-{seq}"),
                "type": "object.observed", "time": "2026-11-01T10:00:00Z", "cluster": format!("c{:02}", c % 16),
                "data": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "load",
                    "resourceVersion": seq.to_string(),
                    "annotations": {"argocd.argoproj.io/tracking-id": format!("load:/ConfigMap:load/{name}")}}}})
                .to_string());
            body.push('\n');
            seq += 1;
        }
        loop {
            let t = Instant::now();
            match post(addr, token, &body) {
                Ok((200, response)) => {
                    out.answered.push((
                        t.duration_since(run_started).as_secs_f64(),
                        t.elapsed().as_secs_f64() * 1e3,
                    ));
                    out.requests += 1;
                    let answer: serde_json::Value = response
                        .split_once("\r\n\r\n")
                        .and_then(|(_, b)| serde_json::from_str(b).ok())
                        .unwrap_or_default();
                    out.acknowledged += answer["appended"].as_u64().unwrap_or(0);
                    break;
                }
                Ok((429, _)) => {
                    out.refused += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    out.errors += 1;
                    break;
                }
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
    out
}

fn post(addr: &str, token: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    write!(
        s,
        "POST /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    s.read_to_string(&mut response)?;
    let status = response
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, response))
}
