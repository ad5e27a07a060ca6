//! Managed clusters' audit exports (GKE, AKS, EKS) decode into exactly the
//! events their native audit events give. See: issue 21.

use serde_json::{json, Value};

use crate::util::*;

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ingest/testdata/cloud-audit")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Every event of the ledger as `annal log --full -o json` prints it,
/// without what depends on the copy ingested (`source`) or on when
/// (`recorded_at`, `index`), by id.
fn events(l: &Ledger) -> std::collections::BTreeMap<String, Value> {
    let (code, doc) = l.json(&["log", "--full", "--limit", "1000"]);
    assert_eq!(code, Some(0));
    doc.as_array()
        .expect("an array of events")
        .iter()
        .map(|e| {
            let mut e = e.clone();
            let map = e.as_object_mut().unwrap();
            for key in ["source", "recorded_at", "index"] {
                map.remove(key);
            }
            (e["id"].as_str().unwrap().to_string(), e)
        })
        .collect()
}

fn ingested(args: &[&str]) -> (Ledger, Value) {
    let l = Ledger::new();
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    let (code, summary) = l.json(&all);
    assert_eq!(code, Some(0), "{args:?}: {summary}");
    (l, summary)
}

/// What Cloud Logging does not keep of an audit event (the request URI,
/// hence `?fieldManager=`; the user's groups; a success's HTTP code).
fn without_what_gke_drops(mut e: Value) -> Value {
    if let Some(data) = e.get_mut("data").and_then(Value::as_object_mut) {
        data.remove("request_uri");
        data.remove("groups");
        if data
            .get("code")
            .and_then(Value::as_u64)
            .is_some_and(|c| c < 400)
        {
            data.remove("code");
        }
    }
    if let Some(actor) = e.get_mut("actor").and_then(Value::as_object_mut) {
        actor.remove("field_manager");
    }
    e
}

#[test]
fn cloud_exports_decode_into_the_events_of_the_native_audit_events() {
    let (native_ledger, _) = ingested(&["--cluster", "prod-eu1-a", &fixture("native.jsonl")]);
    let native = events(&native_ledger);
    // create, patch, dry-run patch, 403, delete: five requests, and the
    // three that changed state (the dry run and the 403 did not).
    assert_eq!(native.len(), 8);
    let types: Vec<&str> = native
        .values()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.iter().filter(|t| **t == "audit.request").count(), 5);
    assert_eq!(types.iter().filter(|t| **t == "object.observed").count(), 2);
    assert_eq!(types.iter().filter(|t| **t == "object.deleted").count(), 1);

    // (file, format, extra flags, skipped documents of other kinds)
    let exports: [(&str, &str, &[&str], u64); 6] = [
        ("aks-eventhub.json", "aks-audit", &[], 1),
        ("aks-storage-PT1H.json", "aks-audit", &[], 0),
        ("eks-subscription.jsonl", "eks-audit", &[], 1),
        (
            "eks-filter-log-events.json",
            "eks-audit",
            &["--cluster", "prod-eu1-a"],
            1,
        ),
        ("gke-logging-read.json", "gke-audit", &[], 1),
        ("gke-bigquery.jsonl", "gke-audit", &[], 0),
    ];
    for (file, format, flags, skipped) in exports {
        for f in [format, "auto", "k8s-audit"] {
            let mut args = vec!["--format", f];
            args.extend_from_slice(flags);
            let path = fixture(file);
            args.push(&path);
            let (l, summary) = ingested(&args);
            assert_eq!(
                counts(&summary),
                json!({"appended": 8, "duplicates": 0, "rejected": 0}),
                "{file} as {f}"
            );
            let skips: u64 = summary["skipped"]
                .as_object()
                .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
            assert_eq!(skips, skipped, "{file}: {summary}");
            let exported = events(&l);
            if format == "gke-audit" {
                let expect: Vec<Value> = native
                    .values()
                    .cloned()
                    .map(without_what_gke_drops)
                    .collect();
                let got: Vec<Value> = exported.values().cloned().collect();
                assert_eq!(got, expect, "{file}");
                // The comparison is not vacuous: the native events carry
                // what GKE drops, the exported ones do not.
                assert_ne!(native.values().cloned().collect::<Vec<_>>(), got);
            } else {
                assert_eq!(exported, native, "{file} as {f}");
            }
        }
    }
}

#[test]
fn the_native_and_the_exported_copy_of_a_request_are_appended_once() {
    let (l, _) = ingested(&["--cluster", "prod-eu1-a", &fixture("native.jsonl")]);
    for file in [
        "aks-eventhub.json",
        "eks-subscription.jsonl",
        "gke-logging-read.json",
    ] {
        let (code, summary) = l.json(&["ingest", &fixture(file)]);
        assert_eq!(code, Some(0));
        assert_eq!(
            counts(&summary),
            json!({"appended": 0, "duplicates": 8, "rejected": 0}),
            "{file}"
        );
    }
    assert_eq!(l.size(), 8);
}

#[test]
fn the_cluster_comes_from_the_record_unless_given() {
    // AKS names it in resourceId (upper-cased by Azure Monitor), EKS in the
    // log group, GKE in resource.labels.cluster_name.
    for file in [
        "aks-eventhub.json",
        "eks-subscription.jsonl",
        "gke-logging-read.json",
    ] {
        let (l, _) = ingested(&[&fixture(file)]);
        let clusters: Vec<Value> = events(&l).values().map(|e| e["cluster"].clone()).collect();
        assert!(
            clusters.iter().all(|c| c == "prod-eu1-a"),
            "{file}: {clusters:?}"
        );
        let (l, _) = ingested(&["--cluster", "eu-renamed", &fixture(file)]);
        assert!(
            events(&l).values().all(|e| e["cluster"] == "eu-renamed"),
            "{file}: --cluster wins"
        );
    }
    // `aws logs filter-log-events` names no log group: each event is
    // rejected with what to do, and nothing else is lost.
    let l = Ledger::new();
    let out = l.run(&["ingest", &fixture("eks-filter-log-events.json")]);
    // Exit 2: input was rejected (and kept in quarantine).
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("events[0]") && err.contains("pass --cluster"),
        "{err}"
    );
    assert_eq!(l.size(), 0);
}

#[test]
fn an_export_given_the_wrong_cloud_format_names_the_right_one() {
    let l = Ledger::new();
    let out = l.run(&[
        "ingest",
        "--format",
        "gke-audit",
        &fixture("aks-eventhub.json"),
    ]);
    let err = stderr(&out);
    assert!(err.contains("--format aks-audit"), "{err}");
    assert_eq!(l.size(), 0);
}

/// The exports' push paths land on HTTP ingest: an Event Hub batch (as an
/// Azure Function forwards it) and a CloudWatch subscription payload (as a
/// Lambda or Firehose HTTP endpoint delivers it), each under its format.
#[test]
fn event_hub_batches_and_subscription_payloads_are_accepted_over_http() {
    let l = Ledger::new();
    let server = Server::start(&l, &[]);
    let batch = std::fs::read_to_string(fixture("aks-eventhub.json")).unwrap();
    let (status, body) = server.request_typed(
        "POST",
        "/v1/ingest/aks-audit",
        None,
        "application/json",
        &batch,
    );
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        counts(&doc),
        json!({"appended": 8, "duplicates": 0, "rejected": 0})
    );
    let payloads = std::fs::read_to_string(fixture("eks-subscription.jsonl")).unwrap();
    let data_message = payloads.lines().nth(1).unwrap();
    let (status, body) = server.request_typed(
        "POST",
        "/v1/ingest/eks-audit",
        None,
        "application/json",
        data_message,
    );
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    // The same requests: stored once.
    assert_eq!(
        counts(&doc),
        json!({"appended": 0, "duplicates": 8, "rejected": 0})
    );
    // The wrong cloud's format is refused with the right one named.
    let (status, body) = server.request_typed(
        "POST",
        "/v1/ingest/gke-audit",
        None,
        "application/json",
        data_message,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("eks-audit"), "{body}");
}

/// An AKS storage archive is a directory tree of hourly `PT1H.json`
/// blobs: `annal ingest DIR` reads every file under it, in path order.
#[test]
fn a_storage_archive_directory_is_read_file_by_file() {
    let l = Ledger::new();
    let root = l.dir.path().join("insights-logs-kube-audit-admin");
    let records = std::fs::read_to_string(fixture("aks-storage-PT1H.json")).unwrap();
    for hour in ["h=09", "h=10"] {
        let dir = root.join("y=2026/m=11/d=03").join(hour).join("m=00");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("PT1H.json"), &records).unwrap();
    }
    let (code, doc) = l.json(&["ingest", "--strict", path_str(&root)]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(
        counts(&doc),
        json!({"appended": 8, "duplicates": 8, "rejected": 0})
    );
    let inputs: Vec<&str> = doc["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["input"].as_str().unwrap())
        .collect();
    assert_eq!(inputs.len(), 2);
    assert!(
        inputs[0].ends_with("h=09/m=00/PT1H.json") && inputs[1].ends_with("h=10/m=00/PT1H.json"),
        "{inputs:?}"
    );
    let empty = l.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = l.run(&["ingest", path_str(&empty)]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("holds no files"), "{}", stderr(&out));
}
