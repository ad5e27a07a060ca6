//! `annal sql`: real process, real ledger, every output format.

use crate::util::*;

#[test]
fn sql_answers_in_every_output_format_and_rejects_bad_queries_with_exit_2() {
    let l = Ledger::new();
    let f = l.file("events.jsonl", &envelopes("q", 30));
    assert_eq!(l.run(&["ingest", path_str(&f)]).status.code(), Some(0));

    let (code, rows) = l.json(&[
        "sql",
        "SELECT cluster, count(*) AS n FROM events GROUP BY cluster ORDER BY cluster",
    ]);
    assert_eq!(code, Some(0));
    let total: u64 = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 30);

    let out = l.run(&[
        "sql",
        "SELECT index, id FROM events WHERE index < 2 ORDER BY index",
        "-o",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "index,id\n0,q-0\n1,q-1\n"
    );

    let out = l.run(&["sql", "SELECT id FROM events WHERE index = 3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ID") && text.contains("q-3"), "{text}");

    let out = l.run(&["sql", "SELECT * FROM nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
}

#[test]
fn inventory_prints_owners_claims_and_managers_as_of_both_clocks() {
    let l = Ledger::new();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    let (code, rows) = l.json(&["inventory", "--at", "2026-11-01T10:30:00Z"]);
    assert_eq!(code, Some(0));
    let rows = rows["objects"].as_array().unwrap();
    let deployment = rows
        .iter()
        .find(|r| r["kind"] == "Deployment" && r["name"] == "guestbook-ui")
        .unwrap();
    for key in [
        "cluster",
        "group",
        "version",
        "kind",
        "namespace",
        "name",
        "uid",
        "resource_version",
        "owner",
        "owner_kind",
        "claims",
        "conflict",
        "managers",
    ] {
        assert!(deployment.get(key).is_some(), "no {key} in {deployment}");
    }
    assert_eq!(deployment["cluster"], "prod-eu1-a");
    assert_eq!(deployment["group"], "apps");
    assert_eq!(deployment["owner"], "argocd:guestbook");
    assert_eq!(
        deployment["claims"],
        serde_json::json!(["argocd:guestbook"])
    );
    assert_eq!(deployment["conflict"], false);
    assert!(deployment["managers"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("argocd-controller")));

    let (_, helm) = l.json(&[
        "inventory",
        "--at",
        "2026-11-01T10:30:00Z",
        "--owner",
        "helm:cache/redis",
    ]);
    let helm = helm["objects"].as_array().unwrap();
    assert_eq!(helm.len(), 1);
    assert_eq!(helm[0]["name"], "redis-master");

    // Before the ledger recorded anything, it knew of nothing.
    let (_, before) = l.json(&[
        "inventory",
        "--at",
        "2026-11-01T10:30:00Z",
        "--known-at",
        "2000-01-01T00:00:00Z",
    ]);
    assert_eq!(before["objects"], serde_json::json!([]));

    // The SQL table function gives the same rows.
    let (_, counted) = l.json(&[
        "sql",
        "SELECT count(*) AS n FROM inventory_at('2026-11-01T10:30:00Z')",
    ]);
    assert_eq!(counted[0]["n"], serde_json::json!(rows.len()));

    let out = l.run(&["inventory", "--at", "half past ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--at"), "{}", stderr(&out));
}

#[test]
fn export_writes_hive_partitions_and_rejects_unknown_tables() {
    let l = Ledger::new();
    assert_eq!(l.run(&["demo"]).status.code(), Some(0));
    let to = l.data().with_file_name("export");
    let out = l.run(&[
        "export",
        "parquet",
        "--to",
        path_str(&to),
        "--table",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("objects"), "{}", stderr(&out));

    let (code, tables) = l.json(&[
        "export",
        "parquet",
        "--to",
        path_str(&to),
        "--table",
        "objects",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(tables[0]["table"], "objects");
    let (_, versions) = l.json(&["sql", "SELECT count(*) AS n FROM objects"]);
    assert_eq!(tables[0]["rows"], versions[0]["n"]);
    assert!(!to.join("events").exists(), "only the table asked for");
    let mut partitions: Vec<String> = std::fs::read_dir(to.join("objects"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    partitions.sort();
    assert_eq!(partitions, ["day=2026-11-01"]);
    let clusters = std::fs::read_dir(to.join("objects/day=2026-11-01"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(
        clusters,
        ["cluster=prod-eu1-a", "cluster=staging-us1"]
            .map(String::from)
            .into()
    );
}
