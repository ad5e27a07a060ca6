//! The ingest fast path (envelopes read through a borrow and encoded
//! straight from their bytes) against the general one (decoded whole,
//! redacted, then encoded): for every input, the same events in the same
//! order, byte for byte and fact for fact, and the same rejections.
//!
//! The inputs: the project's fixtures in every format, the quickstart,
//! envelopes built to meet each redaction rule and each kind of invalid
//! envelope, and, when `../shared` is beside the checkout, every published
//! sample under `fixtures/real` (and every event decoded from them, as an
//! envelope line).

use std::path::{Path, PathBuf};

use annal_ingest::pipeline::{self, Options};
use annal_ingest::Format;
use annal_schemas::Timestamp;
use annal_store::PreparedEvent;
use serde_json::{json, Value};

fn options() -> Options {
    Options {
        cluster: Some("prod-eu1".into()),
        time: Some("2026-11-01T00:00:00Z".parse().unwrap()),
        ..Options::default()
    }
}

/// Decodes `bytes` both ways and holds them together; returns how many
/// events there were.
fn same_both_ways(format: Format, name: &str, bytes: &[u8]) -> usize {
    let opts = options();
    let time: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
    let general = pipeline::decode_input(format, name, bytes, time, &opts);
    let expected: Vec<PreparedEvent> = general
        .events
        .iter()
        .map(|e| PreparedEvent::new(e).unwrap())
        .collect();
    let fast = pipeline::decode_prepared(format, name, bytes, time, &opts);
    assert!(fast.events.is_empty(), "{name}: events go to `prepared`");
    assert_eq!(fast.prepared.len(), expected.len(), "{name}");
    for (i, (got, want)) in fast.prepared.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "{name}: event {i}");
    }
    let reasons = |d: &pipeline::Decoded| {
        d.rejected
            .iter()
            .map(|r| (r.line, r.reason.clone(), r.raw.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(reasons(&fast), reasons(&general), "{name}");
    assert_eq!(fast.skipped, general.skipped, "{name}");
    expected.len()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "jsonl" | "yaml" | "yml")
        ) {
            out.push(path);
        }
    }
}

/// Every file, as it is (format `auto`), and every event it decodes to,
/// written as an envelope line (format `envelope`).
fn check_files(files: &[PathBuf]) -> usize {
    let mut events = 0;
    for path in files {
        let bytes = std::fs::read(path).unwrap();
        let name = path.display().to_string();
        events += same_both_ways(Format::Auto, &name, &bytes);
        let decoded = pipeline::decode_bytes(Format::Auto, &name, &bytes, &options());
        let mut lines = Vec::new();
        for e in &decoded.events {
            serde_json::to_writer(&mut lines, e).unwrap();
            lines.push(b'\n');
        }
        same_both_ways(Format::Envelope, &name, &lines);
    }
    events
}

#[test]
fn the_project_fixtures_decode_the_same_both_ways() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    files_under(&root.join("testdata"), &mut files);
    files.push(root.join("../examples/quickstart.jsonl"));
    assert!(files.len() >= 8, "{files:?}");
    let events = check_files(&files);
    assert!(events > 50, "{events}");
}

#[test]
fn the_published_samples_decode_the_same_both_ways() {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/real");
    if !real.is_dir() {
        eprintln!("skipped: no {}", real.display());
        return;
    }
    let mut files = Vec::new();
    files_under(&real, &mut files);
    assert!(files.len() > 20, "{}", files.len());
    let events = check_files(&files);
    assert!(events > 100, "{events}");
}

/// Envelopes that meet each redaction rule, escapes, repeated keys and
/// each kind of invalid envelope, in one input, so that records taking
/// either path follow each other.
#[test]
fn secrets_escapes_and_errors_decode_the_same_both_ways() {
    let base = json!({"schema": "annal.event/v1", "id": "e", "type": "object.observed",
        "time": "2026-11-01T10:00:00Z", "cluster": "prod", "source": "test",
        "data": {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "cm", "namespace": "default", "labels": {"a": "b"}}}});
    let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n";
    let edits: Vec<(&str, Value)> = vec![
        ("/data/kind", json!("Secret")),
        ("/data/data", json!({"password": "hunter2"})),
        ("/data/spec", json!({"auth": {"token": "t0k3n", "n": 5}})),
        ("/data/spec", json!({"header": "Bearer abcdefghijkl"})),
        ("/data/spec", json!({"key": pem})),
        (
            "/data/spec",
            json!({"config": "url: x\npassword: hunter2\n"}),
        ),
        ("/data/spec", json!({"config": "url: x\nname: y\n"})),
        (
            "/data/spec",
            json!({"password": format!("blake3:{}", "0".repeat(64))}),
        ),
        ("/data/metadata/name", json!("quote\"d \\ name\u{1}")),
        (
            "/data/metadata/labels",
            json!({"\u{e000}": "1", "\u{1f600}": "2", "é": "3"}),
        ),
        ("/id", json!("escaped\\id")),
        ("/cluster", json!("")),
        ("/schema", json!("annal.event/v0")),
        ("/data/metadata/name", json!(5)),
        ("/time", json!("yesterday")),
        ("/colour", json!("blue")),
        ("/type", json!("app.sync")),
        (
            "/data",
            json!({"app": "a", "revision": "r", "phase": "Succeeded",
                         "metrics": {"api_requests": 3}}),
        ),
    ];
    let mut input = Vec::new();
    for (i, (path, v)) in edits.into_iter().enumerate() {
        let mut e = base.clone();
        e["id"] = json!(format!("e{i}"));
        let (parent, key) = path.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() {
            &mut e
        } else {
            e.pointer_mut(parent).unwrap()
        };
        parent[key] = v;
        serde_json::to_writer(&mut input, &e).unwrap();
        input.push(b'\n');
        // The untouched envelope between each, which takes the fast path.
        let mut plain = base.clone();
        plain["id"] = json!(format!("plain{i}"));
        serde_json::to_writer(&mut input, &plain).unwrap();
        input.push(b'\n');
    }
    // A repeated key in `data` (the last wins) and one at the top (an error).
    input.extend_from_slice(
        br#"{"schema":"annal.event/v1","id":"dup","type":"object.observed","time":"2026-11-01T10:00:00Z","cluster":"c","data":{"kind":"Secret","apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"data":{"k":"v"}}}"#,
    );
    input.push(b'\n');
    input.extend_from_slice(
        br#"{"schema":"annal.event/v1","id":"dup","id":"dup2","type":"object.observed","time":"2026-11-01T10:00:00Z","cluster":"c","data":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"n"}}}"#,
    );
    input.push(b'\n');
    for format in [Format::Envelope, Format::Auto] {
        let events = same_both_ways(format, "edits.jsonl", &input);
        assert!(events >= 25, "{events}");
    }
}
