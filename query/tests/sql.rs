//! SQL over a real store: results agree with a plain filter over the same
//! events, whatever filters are pushed down; errors are for people.

use std::sync::Arc;

use annal_query::sql;
use annal_query::QueryError;
use annal_schemas::{Envelope, Timestamp};
use annal_store::Store;
use datafusion::execution::FunctionRegistry;
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    events: Vec<Envelope>,
}

/// 600 events over three clusters, two types, six hours.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/sql").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let base: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
    let mut events = Vec::new();
    for i in 0..600u64 {
        // Valid times are shuffled against log order (late arrivals).
        let minute = (i * 37) % 360;
        let time =
            Timestamp::from_unix_micros(base.unix_micros() + minute as i64 * 60_000_000).unwrap();
        let cluster = ["c1", "c2", "c3"][(i % 3) as usize];
        let value = if i % 2 == 0 {
            json!({"schema": "annal.event/v1", "id": format!("e{i}"), "type": "cluster.heartbeat",
                   "time": time.to_string(), "cluster": cluster, "data": {"agent": format!("a{i}"), "version": "1"}})
        } else {
            json!({"schema": "annal.event/v1", "id": format!("e{i}"), "type": "app.health",
                   "time": time.to_string(), "cluster": cluster, "actor": {"principal": "bob"},
                   "data": {"app": format!("argocd:app{}", i % 7), "status": "Healthy"}})
        };
        events.push(Envelope::from_value(value).unwrap());
    }
    for chunk in events.chunks(128) {
        store.append(chunk.to_vec()).unwrap();
    }
    Fixture {
        _dir: dir,
        store: Arc::new(store),
        events,
    }
}

fn query(
    f: &Fixture,
    q: &str,
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, QueryError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = sql::session(f.store.clone()).await?;
        let answer = sql::run(&ctx, q).await?;
        sql::rows_as_json(&answer)
    })
}

fn count(f: &Fixture, q: &str) -> u64 {
    let rows = query(f, q).unwrap_or_else(|e| panic!("{q}: {e}"));
    rows[0]["n"].as_u64().unwrap()
}

#[test]
fn filtered_counts_agree_with_a_plain_filter() {
    let f = fixture();
    assert_eq!(count(&f, "SELECT count(*) AS n FROM events"), 600);
    let t = |s: &str| s.parse::<Timestamp>().unwrap();
    type Want = Box<dyn Fn(&Envelope, u64) -> bool>;
    let cases: Vec<(String, Want)> = vec![
        ("cluster = 'c2'".into(), Box::new(|e, _| e.cluster.as_deref() == Some("c2"))),
        ("type = 'app.health'".into(), Box::new(|e, _| e.event_type.as_str() == "app.health")),
        (
            "cluster = 'c1' AND time >= '2026-11-01T01:00:00Z' AND time < '2026-11-01T02:30:00Z'".into(),
            Box::new(move |e, _| {
                e.cluster.as_deref() == Some("c1")
                    && e.time >= t("2026-11-01T01:00:00Z")
                    && e.time < t("2026-11-01T02:30:00Z")
            }),
        ),
        (
            "type = 'cluster.heartbeat' AND time BETWEEN '2026-11-01T03:00:00Z' AND '2026-11-01T04:00:00Z'".into(),
            Box::new(move |e, _| {
                e.event_type.as_str() == "cluster.heartbeat"
                    && e.time >= t("2026-11-01T03:00:00Z")
                    && e.time <= t("2026-11-01T04:00:00Z")
            }),
        ),
        ("time > '2026-11-01T05:00:00Z'".into(), Box::new(move |e, _| e.time > t("2026-11-01T05:00:00Z"))),
        ("index >= 100 AND index < 250".into(), Box::new(|_, i| (100..250).contains(&i))),
        ("cluster = 'c3' AND index <= 10".into(), Box::new(|e, i| e.cluster.as_deref() == Some("c3") && i <= 10)),
        ("principal = 'bob' AND cluster = 'c1'".into(), Box::new(|e, _| e.actor.is_some() && e.cluster.as_deref() == Some("c1"))),
        ("cluster = 'nowhere'".into(), Box::new(|_, _| false)),
    ];
    for (cond, want) in cases {
        let expected = f
            .events
            .iter()
            .enumerate()
            .filter(|(i, e)| want(e, *i as u64))
            .count() as u64;
        let got = count(
            &f,
            &format!("SELECT count(*) AS n FROM events WHERE {cond}"),
        );
        assert_eq!(got, expected, "WHERE {cond}");
    }
}

#[test]
fn columns_json_functions_and_grouping() {
    let f = fixture();
    let rows = query(
        &f,
        "SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY type",
    )
    .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0]["type"].as_str(), rows[0]["n"].as_u64()),
        (Some("app.health"), Some(300))
    );
    let rows = query(
        &f,
        "SELECT index, id, time, json_get_str(data, 'app') AS app, principal FROM events WHERE id = 'e7'",
    )
    .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["app"], "argocd:app0");
    assert_eq!(rows[0]["principal"], "bob");
    assert_eq!(rows[0]["index"], 7);
    assert!(
        rows[0]["time"]
            .as_str()
            .unwrap()
            .starts_with("2026-11-01T04:19:00"),
        "{:?}",
        rows[0]["time"]
    );
    let rows = query(
        &f,
        "SELECT data->>'agent' AS agent FROM events WHERE index = 0",
    )
    .unwrap();
    assert_eq!(rows[0]["agent"], "a0");
}

#[test]
fn bad_sql_says_what_is_wrong() {
    let f = fixture();
    let err = query(&f, "SELECT * FROM evnts").unwrap_err();
    assert!(matches!(err, QueryError::Sql(_)), "{err:?}");
    assert!(err.to_string().contains("evnts"), "{err}");
    let err = query(&f, "SELEC 1").unwrap_err();
    assert!(
        matches!(err, QueryError::Sql(_)) && err.to_string().contains("SELEC"),
        "{err}"
    );
    let err = query(&f, "SELECT nope FROM events").unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

/// `date_trunc` on the UTC times annal stores answers by arithmetic (the
/// session registers its own over DataFusion's), with DataFusion's answer:
/// hours and days as the model computes them.
#[test]
fn date_trunc_of_utc_times_is_the_sessions_own() {
    let f = fixture();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = rt.block_on(sql::session(f.store.clone())).unwrap();
    let udf = ctx.udf("date_trunc").unwrap();
    assert!(
        format!("{:?}", udf.inner()).contains("UtcDateTrunc"),
        "{:?}",
        udf.inner()
    );
    let rows = query(
        &f,
        "SELECT date_trunc('hour', time) AS h, date_trunc('DAY', time) AS d, \
         count(*) AS n FROM events GROUP BY 1, 2 ORDER BY 1",
    )
    .unwrap();
    let mut hours = std::collections::BTreeMap::<i64, u64>::new();
    for e in &f.events {
        let t = e.time.unix_micros();
        *hours.entry(t - t.rem_euclid(3_600_000_000)).or_default() += 1;
    }
    let stamp = |v: &serde_json::Value| v.as_str().unwrap().parse::<Timestamp>().unwrap();
    let got: Vec<(i64, u64)> = rows
        .iter()
        .map(|r| (stamp(&r["h"]).unix_micros(), r["n"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, hours.into_iter().collect::<Vec<_>>());
    let midnight: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
    for r in &rows {
        assert_eq!(stamp(&r["d"]), midnight);
    }
}
