//! annal's SQL is read-only and bounded, on the sessions every surface
//! uses: statements that write are refused before they run (nothing is
//! created, on disk or in the session), files cannot be named, and a query
//! over its memory or time limit fails cleanly and gives its memory back.
//! See: issue 17 (a read token could write files through COPY ... TO).

mod support;

use support::runtime;

use std::sync::Arc;
use std::time::Duration;

use annal_query::sql::{self, limits::Usage, Limits};
use annal_query::QueryError;
use annal_schemas::Envelope;
use annal_store::Store;
use serde_json::json;

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/read-only").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let events = (0..20)
        .map(|i| {
            Envelope::from_value(json!({"schema": "annal.event/v1", "id": format!("e{i}"),
                "type": "cluster.heartbeat", "time": "2026-11-01T10:00:00Z", "cluster": "c1",
                "data": {"agent": "a", "version": "1"}}))
            .unwrap()
        })
        .collect();
    store.append(events).unwrap();
    (dir, Arc::new(store))
}

#[test]
fn statements_that_write_are_refused_and_nothing_is_created() {
    let (_dir, store) = store();
    let out = tempfile::tempdir().unwrap();
    let target = |name: &str| out.path().join(name).display().to_string();
    let cases = [
        (
            format!("COPY (SELECT 1 AS a) TO '{}'", target("copy.csv")),
            "COPY",
            Some("copy.csv"),
        ),
        (
            format!(
                "COPY events TO '{}' STORED AS PARQUET",
                target("events.parquet")
            ),
            "COPY",
            Some("events.parquet"),
        ),
        (
            format!(
                "EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{}'",
                target("explain.csv")
            ),
            "COPY",
            Some("explain.csv"),
        ),
        (
            "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION '/etc/passwd'".to_string(),
            "CREATE EXTERNAL TABLE",
            None,
        ),
        (
            "CREATE TABLE t AS SELECT 1 AS a".to_string(),
            "CREATE TABLE",
            None,
        ),
        ("CREATE VIEW v AS SELECT 1".to_string(), "CREATE VIEW", None),
        ("DROP VIEW syncs".to_string(), "DROP VIEW", None),
        ("DROP TABLE events".to_string(), "DROP TABLE", None),
        (
            "INSERT INTO events SELECT * FROM events".to_string(),
            "INSERT",
            None,
        ),
        (
            "SET datafusion.execution.target_partitions = 64".to_string(),
            "SET",
            None,
        ),
    ];
    let rt = runtime();
    rt.block_on(async {
        let ctx = sql::session(store.clone()).await.unwrap();
        for (statement, name, file) in &cases {
            match sql::run(&ctx, statement).await {
                Err(QueryError::NotAllowed(message)) => {
                    assert!(
                        message.starts_with(&format!("{name} is not allowed")),
                        "{statement}: {message}"
                    );
                    assert!(message.contains("read-only"), "{message}");
                }
                other => panic!("{statement}: {other:?}"),
            }
            if let Some(file) = file {
                assert!(!out.path().join(file).exists(), "{statement} wrote {file}");
            }
        }
        // Nothing of them took effect in the session either.
        let tables = sql::run(&ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1").await.unwrap();
        let names: Vec<String> = sql::rows_as_json(&tables)
            .unwrap()
            .iter()
            .map(|r| r["table_name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "changes",
                "clusters",
                "events",
                "managed_fields",
                "objects",
                "revisions",
                "syncs"
            ]
        );
        let n = sql::run(&ctx, "SELECT count(*) AS n FROM events")
            .await
            .unwrap();
        assert_eq!(sql::rows_as_json(&n).unwrap()[0]["n"], json!(20));
        let partitions = sql::run(
            &ctx,
            "SELECT value FROM information_schema.df_settings WHERE name = 'datafusion.execution.target_partitions'",
        )
        .await
        .unwrap();
        assert_eq!(
            sql::rows_as_json(&partitions).unwrap()[0]["value"],
            json!("2")
        );
    });
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn a_query_cannot_name_a_file() {
    let (_dir, store) = store();
    let rt = runtime();
    rt.block_on(async {
        let ctx = sql::session(store).await.unwrap();
        for q in [
            "SELECT * FROM '/etc/passwd'",
            "SELECT * FROM 'file:///etc/hostname'",
        ] {
            match sql::run(&ctx, q).await {
                Err(QueryError::Sql(message)) => {
                    assert!(message.contains("not found"), "{q}: {message}")
                }
                other => panic!("{q}: {other:?}"),
            }
        }
    });
}

#[test]
fn queries_that_read_still_run() {
    let (_dir, store) = store();
    let rt = runtime();
    rt.block_on(async {
        let ctx = sql::session(store).await.unwrap();
        for q in [
            "SELECT count(*) FROM events",
            "WITH h AS (SELECT * FROM events) SELECT cluster, count(*) FROM h GROUP BY cluster",
            "EXPLAIN SELECT * FROM events WHERE cluster = 'c1'",
            "EXPLAIN ANALYZE SELECT count(*) FROM events",
            "SHOW TABLES",
            "SHOW datafusion.execution.batch_size",
            "DESCRIBE events",
            "SELECT * FROM syncs",
            "SELECT * FROM inventory_at('2026-11-01T12:00:00Z')",
        ] {
            if let Err(e) = sql::run(&ctx, q).await {
                panic!("{q}: {e}");
            }
        }
    });
}

/// Waits (bounded) until every reservation is given back: a failed or
/// cancelled query's other partitions drop theirs as their tasks stop.
async fn released(usage: &Usage) {
    for _ in 0..200 {
        if usage.reserved_bytes() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(usage.reserved_bytes(), 0, "memory given back");
}

#[test]
fn a_query_over_its_memory_fails_cleanly_and_the_next_one_runs() {
    let (_dir, store) = store();
    let usage = Arc::new(Usage::default());
    let limits = Limits {
        memory_bytes: 16 << 20,
        usage: usage.clone(),
        ..Limits::default()
    };
    let rt = runtime();
    rt.block_on(async {
        let ctx = sql::session_with(store, &limits).await.unwrap();
        // Two million distinct groups, in no order (a key in the series'
        // own order would aggregate as it streams), need far more than
        // 16 MiB.
        let big = "SELECT (v * 48271) % 2147483647 AS k, count(*) AS n FROM generate_series(1, 2000000) AS t(v) GROUP BY k";
        match sql::run(&ctx, big).await {
            Err(e @ QueryError::MemoryLimit { limit, .. }) => {
                assert_eq!(limit, 16 << 20);
                assert!(e.to_string().contains("16 MiB"), "{e}");
                assert!(e.to_string().contains("--query-memory"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        released(&usage).await;
        let small = sql::run(&ctx, "SELECT count(*) AS n FROM events").await.unwrap();
        assert_eq!(sql::rows_as_json(&small).unwrap()[0]["n"], json!(20));
    });
    assert_eq!(usage.running(), 0);
}

#[test]
fn a_query_past_its_time_is_cancelled_and_gives_its_memory_back() {
    let (_dir, store) = store();
    let usage = Arc::new(Usage::default());
    let limits = Limits {
        memory_bytes: 4 << 30,
        timeout: Some(Duration::from_millis(500)),
        usage: usage.clone(),
        ..Limits::default()
    };
    let rt = runtime();
    rt.block_on(async {
        let ctx = sql::session_with(store, &limits).await.unwrap();
        // Hours of work: a hash aggregate over ten billion rows.
        let endless = "SELECT v % 1000000 AS k, count(*) AS n FROM generate_series(1, 10000000000) AS t(v) GROUP BY k";
        let started = std::time::Instant::now();
        match sql::run(&ctx, endless).await {
            Err(e @ QueryError::Timeout { .. }) => {
                assert!(e.to_string().contains("0.5 s"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        // Cancelled at the limit, not at the end of the work (which would
        // take minutes): generous bound for a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(usage.running(), 0);
        released(&usage).await;
        let small = sql::run(&ctx, "SELECT count(*) AS n FROM events").await.unwrap();
        assert_eq!(sql::rows_as_json(&small).unwrap()[0]["n"], json!(20));
    });
}

#[test]
fn export_goes_through_the_same_policy() {
    // The export builds its own statements over the tables; they are
    // queries, so the export still writes its Parquet files.
    let (_dir, store) = store();
    let out = tempfile::tempdir().unwrap();
    let rt = runtime();
    let exported = rt
        .block_on(annal_query::export::parquet(
            store,
            out.path(),
            &["events".to_string()],
        ))
        .unwrap();
    assert_eq!(exported[0].rows, 20);
}
