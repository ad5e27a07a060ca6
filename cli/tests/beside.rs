//! Readers beside a writer: while `annal serve` ingests, every read
//! command in another process answers from what the server has committed,
//! with the server's own answers; a second writer is refused by name.

use crate::util::{http, stderr, Ledger, Server};

/// An object version of `name` in cluster `cluster`.
fn object(id: &str, cluster: &str, name: &str, minute: u32) -> String {
    serde_json::json!({
        "schema": "annal.event/v1",
        "id": id,
        "type": "object.observed",
        "time": format!("2026-11-01T10:{minute:02}:00Z"),
        "cluster": cluster,
        "data": {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": name, "namespace": "ns",
                              "labels": {"app.kubernetes.io/instance": "web"}}},
    })
    .to_string()
}

fn batch(prefix: &str, cluster: &str, n: u32) -> String {
    (0..n)
        .map(|i| {
            object(
                &format!("{prefix}-{i}"),
                cluster,
                &format!("cm-{}", i % 50),
                i % 60,
            ) + "\n"
        })
        .collect()
}

#[test]
fn read_commands_beside_a_serving_writer_give_the_servers_answers() {
    let ledger = Ledger::new();
    let server = Server::start(&ledger, &[]);
    let (status, _) = server.request("POST", "/v1/events", None, &batch("fixed", "fixed", 300));
    assert_eq!(status, 200);

    // Ingest load on other clusters while the reads run.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let stop = stop.clone();
        let addr = server.addr.clone();
        std::thread::spawn(move || {
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = batch(&format!("load{round}"), &format!("load-{}", round % 4), 200);
                let (status, text) = http(&addr, "POST", "/v1/events", None, "text/plain", &body);
                assert_eq!(status, 200, "{text}");
                round += 1;
            }
            round
        })
    };

    for _ in 0..3 {
        // One cluster's inventory: the same as the server's.
        let out = ledger.run(&["inventory", "--cluster", "fixed", "-o", "json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("is writing this ledger"),
            "{}",
            stderr(&out)
        );
        let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let (status, text) = server.request("GET", "/v1/inventory?cluster=fixed", None, "");
        assert_eq!(status, 200, "{text}");
        let api: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(cli["objects"], api["objects"]);
        assert_eq!(cli["objects"].as_array().unwrap().len(), 50);

        // SQL: the same count.
        let query = "select count(*) as n from events where cluster = 'fixed'";
        let (code, doc) = ledger.json(&["sql", query]);
        assert_eq!(code, Some(0));
        let (status, api) = server.sql(None, query);
        assert_eq!(status, 200, "{api}");
        assert_eq!(doc[0]["n"], 300);
        assert_eq!(api["rows"][0]["n"], doc[0]["n"]);

        // Verify: intact at the committed size it read, with the root the
        // server gives for that size.
        let (code, v) = ledger.json(&["verify"]);
        assert_eq!(code, Some(0), "{v}");
        assert_eq!(v["intact"], true);
        let n = v["entries"].as_u64().unwrap();
        assert!(n >= 300);
        let (status, text) = server.request(
            "GET",
            &format!("/v1/proof/inclusion?index=0&size={n}"),
            None,
            "",
        );
        assert_eq!(status, 200, "{text}");
        let proof: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(proof["root"], v["root"]);
    }

    // `annal ingest` goes through the server, under the same load; a
    // second writer of another kind is refused by name.
    let file = ledger.file("more.jsonl", &batch("more", "fixed", 3));
    let out = ledger.run(&["ingest", file.to_str().unwrap(), "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sending the input through it"),
        "{}",
        stderr(&out)
    );
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (done["appended"].as_u64(), done["duplicates"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(done["server"], format!("http://{}", server.addr));
    let (_, api) = server.sql(
        None,
        "select count(*) as n from events where cluster = 'fixed'",
    );
    assert_eq!(api["rows"][0]["n"], 303);
    let out = ledger.run(&["reindex"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("is being written by process") && stderr(&out).contains("/v1/events"),
        "{}",
        stderr(&out)
    );

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = load.join().unwrap();
    assert!(rounds > 0);
    // With the load done, a reader sees everything the server committed.
    let (_, status) = ledger.json(&["status"]);
    assert_eq!(status["size"], 303 + 200 * rounds);
}

#[test]
fn ingest_beside_a_server_sends_each_file_through_it_with_its_token_and_rejections() {
    const INGEST: &str = "ingest-token-0123456789";
    const READ: &str = "read-token-0123456789ab";
    let ledger = Ledger::new();
    let tokens = ledger.file("tokens", &format!("ingest {INGEST}\nread {READ}\n"));
    let server = Server::start(&ledger, &["--tokens", tokens.to_str().unwrap()]);
    // One bad line among three envelopes, and a second file: a directory
    // of objects in another format.
    let good = batch("tok", "c1", 3);
    let file = ledger.file(
        "mixed.jsonl",
        &format!("{good}{{\"schema\": \"annal.event/v1\"}}\n"),
    );
    let path = file.to_str().unwrap();

    let out = ledger.run(&["ingest", path]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("ANNAL_TOKEN"), "{}", stderr(&out));

    let out = ledger
        .command(&["ingest", path, "-o", "json"])
        .env("ANNAL_TOKEN", READ)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("refused the token"),
        "{}",
        stderr(&out)
    );

    let out = ledger
        .command(&["ingest", path, "-o", "json"])
        .env("ANNAL_TOKEN", INGEST)
        .output()
        .unwrap();
    // Exit 2: a record was rejected; it is named with the file and kept.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (done["appended"].as_u64(), done["rejected"].as_u64()),
        (Some(3), Some(1))
    );
    assert!(
        stderr(&out).contains("mixed.jsonl") && stderr(&out).contains("quarantined as"),
        "{}",
        stderr(&out)
    );

    // Standard input, with --cluster for objects that name none.
    let object = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-stdin", "namespace": "d", "resourceVersion": "1", "creationTimestamp": "2026-11-01T10:00:00Z"}}"#;
    let mut child = ledger
        .command(&[
            "ingest",
            "-",
            "--format",
            "k8s-object",
            "--cluster",
            "c9",
            "-o",
            "json",
        ])
        .env("ANNAL_TOKEN", INGEST)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(object.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (_, api) = server.sql(
        Some(READ),
        "select count(*) as n from events where cluster = 'c9'",
    );
    assert_eq!(api["rows"][0]["n"], 1, "{api}");

    // Stopped, the server takes its address away: ingest writes alone,
    // and the quarantine names the file the rejected line came from.
    let mut server = server;
    let term = std::process::Command::new("kill")
        .args(["-TERM", &server.child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(server.child.0.wait().unwrap().success());
    assert!(!ledger.data().join("server").exists());
    let again = ledger.file("again.jsonl", &batch("again", "c1", 2));
    let out = ledger.run(&["ingest", again.to_str().unwrap(), "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("through it"), "{}", stderr(&out));
    let (code, listed) = ledger.json(&["quarantine", "list"]);
    assert_eq!(code, Some(0));
    assert!(listed.to_string().contains("mixed.jsonl"), "{listed}");

    // A server killed outright leaves its address behind; with no process
    // holding the ledger, ingest writes alone.
    let killed = Server::start(&ledger, &[]);
    drop(killed);
    assert!(ledger.data().join("server").exists());
    let out = ledger.run(&["ingest", again.to_str().unwrap(), "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["duplicates"], 2);
}
