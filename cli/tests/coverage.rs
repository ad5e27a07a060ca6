//! Coverage gaps through the binary: `annal coverage`, `GET /v1/coverage`,
//! `stale_clusters` in the as-of answers, and the recovery gates that stop
//! on a stale cluster unless `--allow-stale`.
//! See: issue 20 (change history: coverage gaps).

use serde_json::{json, Value};

use crate::util::*;

/// Heartbeats of `cluster` every five minutes from `from` to `to`
/// (hours, inclusive of the start, exclusive of the end).
fn heartbeats(cluster: &str, from: u32, to: u32) -> Vec<Value> {
    (from * 12..to * 12)
        .map(|i| {
            let time = format!("2026-11-01T{:02}:{:02}:00Z", i / 12, (i % 12) * 5);
            event(
                &format!("{cluster}-hb-{i}"),
                "cluster.heartbeat",
                &time,
                Some(cluster),
                Value::Null,
                json!({"agent": "annal-agent", "version": "1"}),
            )
        })
        .collect()
}

/// `quiet` heard from 08:00 to 10:00 and 12:00 to 13:00 (silent for two
/// hours in between), `busy` every five minutes 08:00 to 13:00; one
/// Argo CD-tracked ConfigMap on `quiet` since 09:00.
fn ledger() -> Ledger {
    let mut lines = heartbeats("quiet", 8, 10);
    lines.extend(heartbeats("quiet", 12, 13));
    lines.extend(heartbeats("busy", 8, 13));
    lines.push(event(
        "cm-1",
        "object.observed",
        "2026-11-01T09:00:00Z",
        Some("quiet"),
        Value::Null,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cfg", "namespace": "shop",
                            "annotations": {"argocd.argoproj.io/tracking-id": "shop:/ConfigMap:shop/cfg"}}}),
    ));
    ledger_with(&lines)
}

const IN_GAP: &str = "2026-11-01T11:00:00Z";
const RESUMED: &str = "2026-11-01T12:30:00Z";

fn stale_names(doc: &Value) -> Vec<&str> {
    doc["stale_clusters"]
        .as_array()
        .unwrap_or_else(|| panic!("no stale_clusters in {doc}"))
        .iter()
        .map(|s| s["cluster"].as_str().unwrap())
        .collect()
}

#[test]
fn a_silent_cluster_is_stale_inside_its_gap_and_not_after_it_resumes() {
    let l = ledger();
    let window = [
        "coverage",
        "--from",
        "2026-11-01T08:00:00Z",
        "--to",
        "2026-11-01T13:00:00Z",
    ];
    let (code, doc) = l.json(&[&window[..], &["--at", IN_GAP]].concat());
    assert_eq!(code, Some(0));
    let clusters = doc["clusters"].as_array().unwrap();
    let quiet = clusters.iter().find(|c| c["cluster"] == "quiet").unwrap();
    let busy = clusters.iter().find(|c| c["cluster"] == "busy").unwrap();
    // The two-hour silence, from the last heartbeat before it to the
    // first after it; the window ends 5 minutes after the last event.
    assert_eq!(
        quiet["gaps"],
        json!([{"from": "2026-11-01T09:55:00Z", "to": "2026-11-01T12:00:00Z",
                "seconds": 7500, "open": false}])
    );
    assert_eq!(quiet["events"], 37);
    assert_eq!(quiet["stale"], true);
    assert_eq!(busy["gaps"], json!([]));
    assert_eq!(busy["stale"], false);
    assert_eq!(
        doc["stale_clusters"],
        json!([{"cluster": "quiet", "last_seen": "2026-11-01T09:55:00Z", "gap_seconds": 3900}])
    );
    // After it resumed, nobody is stale; two minutes after a heartbeat,
    // a one-minute threshold makes everyone stale.
    let (_, doc) = l.json(&[&window[..], &["--at", RESUMED]].concat());
    assert_eq!(stale_names(&doc), Vec::<&str>::new());
    let (_, doc) = l.json(
        &[
            &window[..],
            &["--at", "2026-11-01T12:32:00Z", "--gap", "1m"],
        ]
        .concat(),
    );
    assert_eq!(stale_names(&doc), ["busy", "quiet"]);
    // Open at the end: nothing after 13:00 by 15:00.
    let (_, doc) = l.json(&[
        "coverage",
        "--cluster",
        "busy",
        "--to",
        "2026-11-01T15:00:00Z",
    ]);
    assert_eq!(doc["clusters"][0]["gaps"][0]["open"], true);
    assert_eq!(doc["clusters"][0]["gaps"][0]["seconds"], 7500);
    assert_eq!(stale_names(&doc), ["busy"]);
    // Table output: one line per cluster, the warning on stderr.
    let out = l.run(&[&window[..], &["--at", IN_GAP]].concat());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("CLUSTER"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        stderr(&out).contains("stale data: cluster quiet sent nothing for 1h5m"),
        "{}",
        stderr(&out)
    );
    // Bad input names the problem.
    let out = l.run(&["coverage", "--gap", "0s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("longer than 0s"), "{}", stderr(&out));
    let out = l.run(&[
        "coverage",
        "--from",
        "2026-11-02T00:00:00Z",
        "--to",
        "2026-11-01T00:00:00Z",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn as_of_answers_list_stale_clusters_and_the_gates_stop_unless_allowed() {
    let l = ledger();
    let (code, doc) = l.json(&["inventory", "--at", IN_GAP]);
    assert_eq!(code, Some(0));
    assert_eq!(stale_names(&doc), ["quiet"]);
    assert_eq!(doc["objects"].as_array().unwrap().len(), 1);
    let (_, doc) = l.json(&["inventory", "--at", RESUMED]);
    assert_eq!(stale_names(&doc), Vec::<&str>::new());
    // One cluster asked: only its staleness.
    let (_, doc) = l.json(&["inventory", "--at", IN_GAP, "--cluster", "busy"]);
    assert_eq!(stale_names(&doc), Vec::<&str>::new());
    // Table output warns on stderr, the rows unchanged.
    let out = l.run(&["inventory", "--at", IN_GAP]);
    assert!(stderr(&out).contains("cluster quiet"), "{}", stderr(&out));
    let (_, doc) = l.json(&["diff", "--from", "2026-11-01T08:30:00Z", "--to", IN_GAP]);
    assert_eq!(stale_names(&doc), ["quiet"]);

    // The takeover gate: every object ADOPT, but the cluster is stale.
    let takeover = |at: &str, extra: &[&str]| {
        let args = [
            &[
                "takeover-plan",
                "--controller",
                "argocd-new",
                "--app",
                "argocd:shop",
                "--at",
                at,
            ][..],
            extra,
        ]
        .concat();
        l.json(&args)
    };
    let (code, plan) = takeover(IN_GAP, &[]);
    assert_eq!(code, Some(3), "{plan}");
    assert_eq!(plan["needs_approval"], true);
    assert_eq!(stale_names(&plan), ["quiet"]);
    assert_eq!(plan["stale_clusters"][0]["gap_seconds"], 3900);
    let (code, plan) = takeover(IN_GAP, &["--allow-stale"]);
    assert_eq!(code, Some(0), "{plan}");
    assert_eq!(stale_names(&plan), ["quiet"]);
    let (code, plan) = takeover(RESUMED, &[]);
    assert_eq!(code, Some(0), "{plan}");
    assert_eq!(stale_names(&plan), Vec::<&str>::new());

    // The prune gate, the same way.
    let desired = l.file(
        "desired.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\n",
    );
    let prune = |at: &str, extra: &[&str]| {
        let args = [
            &[
                "prune-plan",
                "--app",
                "argocd:shop",
                "--cluster",
                "quiet",
                "--desired",
                path_str(&desired),
                "--at",
                at,
            ][..],
            extra,
        ]
        .concat();
        l.json(&args)
    };
    let (code, plan) = prune(IN_GAP, &[]);
    assert_eq!(code, Some(3), "{plan}");
    assert_eq!(stale_names(&plan), ["quiet"]);
    assert_eq!(plan["prune"], json!([]));
    let (code, _) = prune(IN_GAP, &["--allow-stale"]);
    assert_eq!(code, Some(0));
    let (code, _) = prune(RESUMED, &[]);
    assert_eq!(code, Some(0));
}

#[test]
fn a_late_flush_fills_the_gap_as_known_after_it() {
    let l = ledger();
    let before_flush = annal_schemas::Timestamp::now().to_string();
    // The silent cluster reconnects and sends its two hours late.
    let late: String = heartbeats("quiet", 10, 12)
        .iter()
        .map(|e| format!("{e}\n"))
        .collect();
    let f = l.file("late.jsonl", &late);
    assert_eq!(l.run(&["ingest", path_str(&f)]).status.code(), Some(0));
    let (_, doc) = l.json(&["inventory", "--at", IN_GAP]);
    assert_eq!(stale_names(&doc), Vec::<&str>::new());
    let (_, doc) = l.json(&["inventory", "--at", IN_GAP, "--known-at", &before_flush]);
    assert_eq!(stale_names(&doc), ["quiet"]);
}

#[test]
fn coverage_over_http_is_the_command_s_document() {
    let l = ledger();
    let server = Server::start(&l, &[]);
    let query = "from=2026-11-01T08:00:00Z&to=2026-11-01T13:00:00Z&at=2026-11-01T11:00:00Z";
    let (status, body) = server.request("GET", &format!("/v1/coverage?{query}"), None, "");
    assert_eq!(status, 200, "{body}");
    let api: Value = serde_json::from_str(&body).unwrap();
    let (_, cli) = l.json(&[
        "coverage",
        "--from",
        "2026-11-01T08:00:00Z",
        "--to",
        "2026-11-01T13:00:00Z",
        "--at",
        IN_GAP,
    ]);
    assert_eq!(api, cli);
    let (status, body) = server.request("GET", &format!("/v1/inventory?at={IN_GAP}"), None, "");
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(stale_names(&doc), ["quiet"]);
    let (status, body) = server.request(
        "GET",
        &format!("/v1/takeover-plan?controller=new&apps=argocd:shop&at={IN_GAP}"),
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    let plan: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(plan["needs_approval"], true);
    assert_eq!(stale_names(&plan), ["quiet"]);
    let (status, body) = server.request("GET", "/v1/coverage?gap=never", None, "");
    assert_eq!(status, 400, "{body}");
}
