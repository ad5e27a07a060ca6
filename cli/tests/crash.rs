//! SIGKILL during ingest, again and again: nothing lost, nothing twice,
//! and the indexes recovered from their watermarks answer as indexes
//! rebuilt from scratch do.

use std::process::Stdio;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::util::*;

const RECORDS: u64 = 200_000;
const KILLS: usize = 20;

#[test]
fn repeated_sigkill_during_ingest_loses_and_duplicates_nothing() {
    let l = Ledger::new();
    let input = l.file("big.jsonl", &fleet_events(RECORDS));
    let input = path_str(&input).to_string();
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut kills = 0;
    let mut kills_mid_log = 0;
    let mut sizes = Vec::new();
    for _attempt in 0..200 {
        if kills >= KILLS {
            break;
        }
        let mut child = l
            .command(&["ingest", "--batch-size", "1000", &input])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A random moment: the kill itself is the event under test; nothing
        // below depends on where it lands.
        std::thread::sleep(Duration::from_millis(rng.random_range(10..1500)));
        if child.try_wait().unwrap().is_some() {
            continue; // finished before the kill; try again
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        let size = l.size();
        assert!(size <= RECORDS);
        if let Some(prev) = sizes.last() {
            assert!(size >= *prev, "the log shrank from {prev} to {size}");
        }
        if size > 0 && size < RECORDS {
            kills_mid_log += 1;
        }
        sizes.push(size);
    }
    assert!(kills >= KILLS, "only {kills} kills landed mid-ingest");
    assert!(
        kills_mid_log > 0,
        "no kill landed while the log was growing: {sizes:?}"
    );

    // Restart to completion.
    let (code, done) = l.json(&["ingest", &input]);
    assert_eq!(code, Some(0));
    assert_eq!(done["rejected"], 0);
    assert_eq!(
        l.size(),
        RECORDS,
        "every record exactly once (ids are distinct)"
    );
    // Every record is present: a further pass finds each one a duplicate.
    let (_, again) = l.json(&["ingest", &input]);
    assert_eq!(
        counts(&again),
        serde_json::json!({"appended": 0, "duplicates": RECORDS, "rejected": 0})
    );
    let (code, report) = l.json(&["verify"]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["entries"], RECORDS);

    // The indexes that lived through the kills answer as a rebuild does.
    let copy = Ledger::empty();
    copy_tree(&l.data(), &copy.data());
    let out = copy.run(&["reindex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for at in [
        "2026-11-01T03:00:00Z",
        "2026-11-01T12:00:00Z",
        "2026-11-01T23:59:59Z",
    ] {
        let (code, survived) = l.json(&["inventory", "--at", at]);
        assert_eq!(code, Some(0));
        let (_, rebuilt) = copy.json(&["inventory", "--at", at]);
        assert!(
            survived["objects"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
            "no objects live at {at}"
        );
        assert_eq!(survived, rebuilt, "inventory at {at}");
    }
    for cluster in ["c0", "c3"] {
        let args = ["log", "--cluster", cluster, "--limit", "1000000"];
        let (_, survived) = l.json(&args);
        let (_, rebuilt) = copy.json(&args);
        assert_eq!(
            survived.as_array().map(Vec::len),
            Some(RECORDS as usize / 7 + usize::from(cluster == "c0"))
        );
        assert_eq!(survived, rebuilt, "log of {cluster}");
    }
    // The column sidecar that lived through the kills holds what the
    // leaves say: a scan of its columns answers as the rebuilt one and as
    // the leaves themselves (a filter on `id` reads the leaves).
    //
    // Rows a killed writer held in memory are built from the leaves by the
    // next writer, in the background, and a closing writer leaves what it
    // has not built yet to the one after: how many chunks the kills left
    // depends on timing (a faster ingest left one). Finish them as a
    // long-running writer (`annal serve`) would, so that the check covers
    // both chunks written by the killed processes and chunks built from
    // the leaves they left.
    {
        let store = annal_store::Store::open(l.data()).unwrap();
        store.catch_up_columns();
        store.wait_for_columns().unwrap();
    }
    let manifest = std::fs::read_to_string(l.data().join("columns/manifest")).unwrap();
    assert!(manifest.lines().count() >= 3, "{manifest}");
    let scan = |filter: &str| {
        format!(
            "SELECT cluster, type, count(*) AS n, min(time) AS first, max(recorded_at) AS last, \
             count(DISTINCT index) AS entries FROM events WHERE {filter} \
             GROUP BY cluster, type ORDER BY cluster, type"
        )
    };
    let (code, survived) = l.json(&["sql", &scan("true")]);
    assert_eq!(code, Some(0), "{survived}");
    let (_, rebuilt) = copy.json(&["sql", &scan("true")]);
    let (_, leaves) = l.json(&["sql", &scan("length(id) >= 0")]);
    assert_eq!(
        survived, rebuilt,
        "events from the chunks, survived and rebuilt"
    );
    assert_eq!(
        survived, leaves,
        "events from the chunks and from the leaves"
    );
}

/// `n` envelopes over 7 clusters: heartbeats, and every fourth one a
/// version of one of 3,000 objects (some deleted), with valid times out
/// of arrival order.
fn fleet_events(n: u64) -> String {
    let mut text = String::new();
    for i in 0..n {
        let cluster = format!("c{}", i % 7);
        let second = (i * 7919) % 86_400;
        let time = format!(
            "2026-11-01T{:02}:{:02}:{:02}Z",
            second / 3600,
            second / 60 % 60,
            second % 60
        );
        let line = if i % 4 == 0 {
            let object = (i / 4) % 3000;
            let kind = if i % 52 == 0 {
                "object.deleted"
            } else {
                "object.observed"
            };
            serde_json::json!({
                "schema": "annal.event/v1", "id": format!("crash-{i}"), "type": kind,
                "time": time, "cluster": cluster,
                "data": {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": format!("cm-{object}"), "namespace": "ns",
                                      "uid": format!("u-{object}"), "resourceVersion": i.to_string()}},
            })
            .to_string()
        } else {
            serde_json::json!({
                "schema": "annal.event/v1", "id": format!("crash-{i}"), "type": "cluster.heartbeat",
                "time": time, "cluster": cluster, "data": {"agent": "annal-test", "version": "1"},
            })
            .to_string()
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}
