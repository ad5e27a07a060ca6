//! The `events` table answers the same from the columnar sidecar as from
//! the leaves: whatever the filters, chunk boundaries, entries past the
//! last chunk and damaged chunk files. A query that also reads `id` (here
//! through a filter the store cannot push down) is always answered from
//! the leaves, so it is the reference.

mod support;

use support::runtime;

use std::sync::Arc;

use annal_query::sql;
use annal_schemas::Envelope;
use annal_store::Store;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::pretty::pretty_format_batches;
use proptest::prelude::*;
use serde_json::json;

const TYPES: [&str; 5] = [
    "object.observed",
    "app.sync",
    "cluster.heartbeat",
    "cluster.credential.revoked",
    "controlplane.fenced",
];

#[derive(Clone, Debug)]
struct Ev {
    kind: usize,
    cluster: u8,
    minute: u32,
    who: Option<u8>,
}

/// Minutes that are exactly the time bounds of [`predicates`]
/// (2026-11-01T12:00 and 2026-11-02T06:00): a third of the events fall on
/// one, so that `>` against `>=` and `<` against `<=` answer differently.
const BOUNDARY_MINUTES: [u32; 2] = [120, 300];

fn ev() -> impl Strategy<Value = Ev> {
    (
        0..TYPES.len(),
        0u8..4,
        prop_oneof![
            2 => 0u32..600,
            1 => proptest::sample::select(BOUNDARY_MINUTES.to_vec()),
        ],
        proptest::option::of(0u8..3),
    )
        .prop_map(|(kind, cluster, minute, who)| Ev {
            kind,
            cluster,
            minute,
            who,
        })
}

fn envelope(n: usize, e: &Ev) -> Envelope {
    let time = format!(
        "2026-11-0{}T{:02}:{:02}:00Z",
        1 + e.minute / 240,
        (e.minute / 10) % 24,
        e.minute % 60
    );
    let ty = TYPES[e.kind];
    let data = match ty {
        "object.observed" => json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("m{n}"), "namespace": "d"}}),
        "app.sync" => {
            let phase = ["Succeeded", "Failed", "Error"][n % 3];
            let mut d =
                json!({"app": format!("argocd:a{}", n % 3), "phase": phase, "revision": "r"});
            if n % 2 == 0 {
                d["controller"] = json!("argocd-0");
                d["prune"] = json!(n % 4 == 0);
                d["dry_run"] = json!(n % 8 == 2);
                d["started_at"] = json!("2026-11-01T10:00:00Z");
                d["finished_at"] = json!(format!("2026-11-01T10:00:{:02}.5Z", n % 60));
                d["resources"] =
                    json!([{"kind": "ConfigMap", "name": "m"}, {"kind": "Secret", "name": "s"}]);
                d["metrics"] = json!({"render_seconds": (n % 7) as f64 + 0.25,
                    "api_requests": n, "api_throttled": n % 3, "applied_bytes": n * 100});
            }
            d
        }
        "cluster.heartbeat" => json!({"agent": "a"}),
        "cluster.credential.revoked" => json!({"principal": "p", "fingerprint": "fp1"}),
        _ => json!({"controller": "argocd-old"}),
    };
    let mut v = json!({"schema": "annal.event/v1", "id": format!("e{n}"), "type": ty,
        "time": time, "data": data});
    if ty != "controlplane.fenced" {
        v["cluster"] = json!(format!("c{}", e.cluster));
    }
    if let Some(w) = e.who {
        v["actor"] = json!({"principal": format!("user{w}"), "credential": format!("fp{w}")});
        v["source"] = json!("test");
    }
    Envelope::from_value(v).unwrap()
}

fn ledger(events: &[Ev], chunk_rows: u64, batch: usize) -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/sidecar").unwrap();
    let store = Store::open(dir.path())
        .unwrap()
        .with_column_rows(chunk_rows);
    let all: Vec<Envelope> = events
        .iter()
        .enumerate()
        .map(|(n, e)| envelope(n, e))
        .collect();
    for part in all.chunks(batch.max(1)) {
        store.append(part.to_vec()).unwrap();
    }
    store.wait_for_columns().unwrap();
    (dir, Arc::new(store))
}

async fn text(ctx: &datafusion::prelude::SessionContext, q: &str) -> String {
    let answer = sql::run(ctx, q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    pretty_format_batches(&answer.batches).unwrap().to_string()
}

const COLUMNS: &str = r#""index", recorded_at, "time", "type", cluster, source, principal,
    impersonated, field_manager, controller, credential, app"#;

/// Each query as the sidecar answers it and as the leaves do, then as
/// the sidecar answers it and as a scan that pushes none of the cluster,
/// type and time filters does (the pushed ones are exact: DataFusion does
/// not apply them again, so every path must keep exactly their rows).
fn pairs(pred: &str) -> Vec<(String, String)> {
    let leaves = format!("({pred}) AND length(id) >= 0");
    let unpushed = pred
        .replace("cluster ", "('' || cluster) ")
        .replace("type ", "('' || \"type\") ")
        .replace("time ", "(time + INTERVAL '0 seconds') ");
    let q = |p: &str| {
        vec![
            format!("SELECT {COLUMNS} FROM events WHERE {p} ORDER BY index"),
            format!(
                "SELECT cluster, principal, date_trunc('hour', time) AS h, count(*) AS n \
                 FROM events WHERE {p} GROUP BY cluster, principal, h ORDER BY cluster, principal, h"
            ),
            format!("SELECT count(*) AS n FROM events WHERE {p}"),
        ]
    };
    let mut pairs: Vec<_> = q(pred).into_iter().zip(q(&leaves)).collect();
    pairs.extend(q(pred).into_iter().zip(q(&unpushed)));
    pairs
}

fn predicates(recorded_mid: &str) -> Vec<String> {
    vec![
        "true".into(),
        "cluster = 'c1'".into(),
        "type = 'app.sync'".into(),
        "type = 'cluster.credential.revoked'".into(),
        "type = 'no.such.type'".into(),
        "cluster = 'c2' AND type = 'object.observed'".into(),
        "time >= '2026-11-01T12:00:00Z' AND time < '2026-11-02T06:00:00Z'".into(),
        "time > '2026-11-01T12:00:00Z' AND time <= '2026-11-02T06:00:00Z'".into(),
        "time <= '2026-11-01T12:00:00Z' OR time > '2026-11-02T06:00:00Z'".into(),
        format!("recorded_at <= '{recorded_mid}'"),
        format!("recorded_at > '{recorded_mid}' AND cluster = 'c3'"),
        "index >= 7 AND index < 30".into(),
        "principal NOT LIKE 'system:%' AND type IN ('object.observed', 'app.sync')".into(),
        "cluster = 'c1' AND type IN ('object.observed', 'cluster.credential.revoked') \
         AND time > '2026-11-01T20:00:00Z'"
            .into(),
        "(type = 'app.sync' OR type = 'cluster.heartbeat') AND cluster = 'c0'".into(),
    ]
}

/// Filters on `data` whose canonical bytes the leaf scan looks for before
/// parsing a leaf, each beside the same filter in a form nothing pushes
/// down. `"kind":"ConfigMap"` and `"name":"m"` are also in every full
/// sync's `resources`, and `"name":"m1"` is a prefix of `"name":"m10"`:
/// rows holding the bytes elsewhere must still be filtered out.
fn needle_pairs() -> Vec<(String, String)> {
    let q = |p: &str| {
        format!(
            "SELECT index, type, cluster, json_get_str(data, 'metadata', 'name') AS name \
             FROM events WHERE {p} ORDER BY index"
        )
    };
    [
        "json_get_str(data, 'metadata', 'name') = 'm1'",
        "json_get_str(data, 'metadata', 'name') = 'm'",
        "'ConfigMap' = json_get_str(data, 'kind') AND cluster = 'c2'",
        "cluster = 'c1' AND type IN ('object.observed', 'object.deleted') \
         AND json_get_str(data, 'kind') = 'ConfigMap' \
         AND json_get_str(data, 'metadata', 'namespace') = 'd' \
         AND json_get_str(data, 'metadata', 'name') = 'm5'",
        "json_get_str(data, 'metadata', 'name') = 'm7' AND time >= '2026-11-01T12:00:00Z'",
        "json_get_str(data, 'metadata', 'name') = 'nobody' OR cluster = 'c1'",
        "json_get_str(data, 'metadata', 'name') = 'nobody'",
    ]
    .iter()
    .map(|p| {
        let unpushed = p.replace("json_get_str(", "'' || json_get_str(");
        (q(p), q(&unpushed))
    })
    .collect()
}

/// Joins whose small side narrows the `events` scan of the other while
/// the query runs (a hash join's dynamic filter: two keys as
/// `struct(…) IN (…)`, one as `c IN (…)`), each beside the same join
/// answered from the leaves, which no filter narrows.
fn join_pairs() -> Vec<(String, String)> {
    let revoked = |more: &str| {
        format!(
            "WITH r AS (SELECT cluster AS c, json_get_str(data, 'fingerprint') AS f, time AS t                FROM events WHERE type = 'cluster.credential.revoked')              SELECT e.cluster, e.credential, e.principal, count(*) AS uses, min(e.time) AS first              FROM events e JOIN r ON e.credential = r.f AND e.cluster = r.c              WHERE e.time > r.t {more}              GROUP BY e.cluster, e.credential, e.principal ORDER BY e.cluster, e.credential, e.principal"
        )
    };
    let clusters = |more: &str| {
        format!(
            "SELECT e.type, e.cluster, count(*) AS n FROM events e              JOIN (SELECT DISTINCT cluster AS c FROM events WHERE principal = 'user1'                    AND type = 'app.sync') s ON e.cluster = s.c {more}              GROUP BY e.type, e.cluster ORDER BY e.type, e.cluster"
        )
    };
    // The revocations' range condition, as the join's floors narrow the
    // scan by it: inclusive, written the other way round, on
    // `recorded_at`, and as a left join (revocations without a use stay).
    let ranged = |condition: &str, more: &str| {
        format!(
            "WITH r AS (SELECT cluster AS c, json_get_str(data, 'fingerprint') AS f, time AS t, \
                    recorded_at AS rec FROM events WHERE type = 'cluster.credential.revoked') \
             SELECT r.c, r.f, count(e.index) AS uses, min(e.time) AS first \
             FROM r LEFT JOIN events e ON e.credential = r.f AND e.cluster = r.c \
               AND {condition} {more} \
             GROUP BY r.c, r.f ORDER BY r.c, r.f"
        )
    };
    let mut pairs = vec![
        (revoked(""), revoked("AND length(e.id) >= 0")),
        (clusters(""), clusters("WHERE length(e.id) >= 0")),
    ];
    for condition in ["e.time >= r.t", "r.t < e.time", "e.recorded_at > r.rec"] {
        pairs.push((
            ranged(condition, ""),
            ranged(condition, "AND length(e.id) >= 0"),
        ));
    }
    pairs.push((
        revoked("AND e.time >= r.t - INTERVAL '1 hour'"),
        revoked("AND e.time >= r.t - INTERVAL '1 hour' AND length(e.id) >= 0"),
    ));
    pairs
}

/// The `syncs` view as first defined: over `events`, each field taken out
/// of `data` by the JSON functions (so read from the leaves).
const FIRST_SYNCS: &str = r#"SELECT
    "index", "time", "cluster",
    json_get_str(data, 'app') AS app,
    json_get_str(data, 'controller') AS controller,
    json_get_str(data, 'revision') AS revision,
    json_get_str(data, 'phase') AS phase,
    to_timestamp_micros(json_get_str(data, 'started_at')) AS started_at,
    to_timestamp_micros(json_get_str(data, 'finished_at')) AS finished_at,
    coalesce(json_get_bool(data, 'prune'), false) AS prune,
    coalesce(json_get_bool(data, 'dry_run'), false) AS dry_run,
    coalesce(json_length(data, 'resources'), 0) AS resources,
    json_get_float(data, 'metrics', 'render_seconds') AS render_seconds,
    json_get_int(data, 'metrics', 'api_requests') AS api_requests,
    json_get_int(data, 'metrics', 'api_throttled') AS api_throttled,
    json_get_int(data, 'metrics', 'applied_bytes') AS applied_bytes,
    principal, controller AS actor_controller, credential
  FROM events WHERE type = 'app.sync'"#;

/// Queries of `syncs` (`{t}` the table), as the sidecar and the first
/// definition answer them.
fn sync_pairs() -> Vec<(String, String)> {
    let queries = [
        "SELECT * FROM {t} ORDER BY index",
        "SELECT app, date_trunc('day', time) AS day, count(*) AS n FROM {t} WHERE prune \
         GROUP BY app, day ORDER BY app, day",
        "SELECT cluster, count(*) AS failed FROM {t} \
         WHERE phase = 'Failed' AND time > '2026-11-01T12:00:00Z' GROUP BY cluster ORDER BY cluster",
        "SELECT app, count(*) AS n, sum(render_seconds) AS r, sum(api_requests) AS a, \
         sum(resources) AS res, max(finished_at - started_at) AS took FROM {t} \
         WHERE cluster = 'c1' GROUP BY app ORDER BY app",
    ];
    queries
        .iter()
        .map(|q| {
            (
                q.replace("{t}", "syncs"),
                q.replace("{t}", &format!("({FIRST_SYNCS})")),
            )
        })
        .collect()
}

fn check_all(store: &Arc<Store>) {
    let mid = store
        .entry(store.size() / 2)
        .unwrap()
        .unwrap()
        .recorded_at
        .to_string();
    runtime().block_on(async {
        let ctx = sql::session(store.clone()).await.unwrap();
        for pred in predicates(&mid) {
            for (sidecar, leaves) in pairs(&pred) {
                assert_eq!(
                    text(&ctx, &sidecar).await,
                    text(&ctx, &leaves).await,
                    "{sidecar}"
                );
            }
        }
        for (pushed, reference) in needle_pairs() {
            assert_eq!(
                text(&ctx, &pushed).await,
                text(&ctx, &reference).await,
                "{pushed}"
            );
        }
        for (narrowed, leaves) in join_pairs() {
            assert_eq!(
                text(&ctx, &narrowed).await,
                text(&ctx, &leaves).await,
                "{narrowed}"
            );
        }
        for (sidecar, first) in sync_pairs() {
            assert_eq!(
                text(&ctx, &sidecar).await,
                text(&ctx, &first).await,
                "{sidecar}"
            );
        }
        let described = |t: &str| format!("SELECT * FROM {t} LIMIT 0");
        let (a, b) = (
            sql::run(&ctx, &described("syncs")).await.unwrap().schema,
            sql::run(&ctx, &described(&format!("({FIRST_SYNCS})")))
                .await
                .unwrap()
                .schema,
        );
        // The same columns and types; text read from the sidecar is a
        // view, from `data` a plain string.
        let plain = |s: &datafusion::arrow::datatypes::Schema| -> Vec<(String, DataType, bool)> {
            s.fields()
                .iter()
                .map(|f| {
                    let t = match f.data_type() {
                        DataType::Utf8View => DataType::Utf8,
                        t => t.clone(),
                    };
                    (f.name().clone(), t, f.is_nullable())
                })
                .collect()
        };
        assert_eq!(plain(&a), plain(&b), "the same columns and types");
        // `id` and `data` from the leaves, read in place: what decoding
        // each entry gives.
        let answer = sql::run(&ctx, "SELECT id, data FROM events ORDER BY index")
            .await
            .unwrap();
        let mut got = Vec::new();
        for b in &answer.batches {
            let text = |c: usize| {
                b.column(c)
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::StringArray>()
                    .unwrap()
                    .clone()
            };
            let (ids, data) = (text(0), text(1));
            for i in 0..b.num_rows() {
                got.push((ids.value(i).to_string(), data.value(i).to_string()));
            }
        }
        let want: Vec<(String, String)> = store
            .entries(0, store.size())
            .map(|e| {
                let e = e.unwrap();
                (e.event.id.clone(), e.event.data.to_string())
            })
            .collect();
        assert_eq!(got, want);
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn the_sidecar_answers_as_the_leaves_do(
        events in proptest::collection::vec(ev(), 1..160),
        chunk_rows in 3u64..40,
        batch in 1usize..50,
    ) {
        let (_dir, store) = ledger(&events, chunk_rows, batch);
        check_all(&store);
    }
}

#[test]
fn a_full_scan_reads_chunks_and_a_query_of_id_reads_leaves() {
    // One revocation among 1,030 events: two chunks of 512, six past them.
    let events: Vec<Ev> = (0..1030)
        .map(|n| Ev {
            kind: if n == 50 { 3 } else { [0, 1, 2, 4][n % 4] },
            cluster: (n % 4) as u8,
            minute: (n % 120) as u32 * 5,
            who: Some((n % 3) as u8),
        })
        .collect();
    let (_dir, store) = ledger(&events, 512, 7);
    assert_eq!(store.column_chunks().unwrap().len(), 2);
    runtime().block_on(async {
        let ctx = sql::session(store.clone()).await.unwrap();
        let plan = |q: &str| format!("EXPLAIN {q}");
        let sidecar = text(
            &ctx,
            &plan("SELECT principal, count(*) FROM events GROUP BY principal"),
        )
        .await;
        assert!(sidecar.contains("ChunkScanExec: partitions=2"), "{sidecar}");
        let leaves = text(&ctx, &plan("SELECT id FROM events")).await;
        assert!(leaves.contains("partition_sizes=1"), "{leaves}");
        // A rare type is read through the type index, not the chunks.
        let rare = text(
            &ctx,
            &plan("SELECT time FROM events WHERE type = 'cluster.credential.revoked'"),
        )
        .await;
        assert!(rare.contains("partition_sizes=1"), "{rare}");
        // A filter on `data` reaches the leaf scan as the bytes to find:
        // the scan itself returns only the one entry that has them (the
        // projection right above it counts its rows).
        let named = text(
            &ctx,
            "EXPLAIN ANALYZE SELECT id FROM events \
             WHERE json_get_str(data, 'metadata', 'name') = 'm4'",
        )
        .await;
        let scan = named
            .lines()
            .find(|l| l.contains("ProjectionExec"))
            .unwrap_or_else(|| panic!("{named}"));
        assert!(scan.contains("output_rows=1,"), "{named}");
        // ... and it reads the leaves the chunks' name hashes choose, the
        // chunks spread over partitions (the index scan is one).
        let chosen = text(
            &ctx,
            &plan("SELECT id FROM events WHERE json_get_str(data, 'metadata', 'name') = 'm4'"),
        )
        .await;
        assert!(chosen.contains("partition_sizes=2"), "{chosen}");
        // A join builds its hash table on the side the counts say is
        // smaller (the one revocation, and the 176 entries past the
        // chunks), not on every event.
        let revoked = "WITH r AS (SELECT cluster AS c, json_get_str(data, 'fingerprint') AS f, time AS t \
                   FROM events WHERE type = 'cluster.credential.revoked') \
                 SELECT e.cluster, count(*) FROM events e JOIN r ON e.credential = r.f AND e.cluster = r.c \
                 WHERE e.time > r.t GROUP BY e.cluster";
        let join = text(&ctx, &plan(revoked)).await;
        let physical = &join[join.find("physical_plan").expect("a physical plan")..];
        let at = |needle: &str| physical.find(needle).unwrap_or_else(|| panic!("{needle}: {join}"));
        // The revocations: the one the chunks count and the six past them.
        let build = at("projection=[time, cluster, data], estimated_rows=7");
        let probe = at("projection=[time, cluster, credential], estimated_rows=1030");
        assert!(at("HashJoinExec") < build && build < probe, "{join}");
        // Once the revocation is built, the scan of every event reads only
        // the rows of its cluster and credential (chunks and tail alike).
        let count = |q: &'static str| {
            let ctx = ctx.clone();
            async move {
                let n = text(&ctx, q).await;
                n.lines()
                    .nth(3)
                    .and_then(|l| l.trim_matches(|c| c == '|' || c == ' ').parse::<u64>().ok())
                    .unwrap_or_else(|| panic!("{n}"))
            }
        };
        let uses = count(
            "SELECT count(*) AS n FROM events WHERE cluster = 'c2' AND credential = 'fp1'",
        )
        .await;
        // ... and of those, only the ones after the revocation: the join's
        // `e.time > r.t` is the floor of the one key.
        let want = count(
            "SELECT count(*) AS n FROM events WHERE cluster = 'c2' AND credential = 'fp1' \
             AND time > (SELECT time FROM events WHERE type = 'cluster.credential.revoked')",
        )
        .await;
        assert!(want > 0 && want < uses && uses < 200, "{want} {uses}");
        let ran = text(&ctx, &format!("EXPLAIN ANALYZE {revoked}")).await;
        let scan = ran
            .lines()
            .find(|l| l.contains("ChunkScanExec") && l.contains("credential"))
            .unwrap_or_else(|| panic!("{ran}"));
        assert!(scan.contains("narrowed_by=[DynamicFilter"), "{ran}");
        assert!(scan.contains("floored_by=[time > "), "{ran}");
        assert!(ran.contains("FloorsExec: floor=t, keys=[CAST(r.f AS Utf8View), c]"), "{ran}");
        assert!(scan.contains(&format!("output_rows={want},")), "{want}: {ran}");
    });
}

#[test]
fn a_damaged_chunk_is_answered_from_the_leaves() {
    let events: Vec<Ev> = (0..100)
        .map(|n| Ev {
            kind: n % 5,
            cluster: (n % 4) as u8,
            minute: n as u32 * 5,
            who: Some((n % 3) as u8),
        })
        .collect();
    let (dir, store) = ledger(&events, 16, 7);
    let second = store.column_chunks().unwrap()[2].clone();
    drop(store);
    let chunk = dir.path().join("columns").join(format!(
        "{:020}-{:020}.parquet",
        second.start,
        second.end()
    ));
    let mut bytes = std::fs::read(&chunk).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&chunk, bytes).unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    check_all(&store);
}
