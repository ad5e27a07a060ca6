//! The `objects` table skips versions outside a `valid_from` range before
//! building them (reading only the rows of the zones that can hold them
//! when neither `valid_to` nor details are asked for), and reads no
//! details for a scan that asks for none: the answers are those of the
//! same query with nothing pushed down (a computed `valid_from` and a
//! filter on `uid` defeat both).

mod support;

use support::runtime;

use std::sync::Arc;

use annal_query::sql;
use annal_schemas::Envelope;
use annal_store::Store;
use datafusion::arrow::util::pretty::pretty_format_batches;
use proptest::prelude::*;
use serde_json::json;

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/objects").unwrap();
    let store = Store::open(dir.path()).unwrap();
    // 1,000 versions per cluster: the first zones of each are complete.
    let events: Vec<Envelope> = (0..3000u32)
        .map(|n| {
            let kind = if n % 17 == 0 { "object.deleted" } else { "object.observed" };
            // Mostly in time order, every 13th out of it: valid_from
            // ranges cut across the log and across zones.
            let hour = if n % 13 == 0 { (n * 37) % 72 } else { n * 72 / 3000 };
            Envelope::from_value(json!({
                "schema": "annal.event/v1", "id": format!("e{n}"), "type": kind,
                "time": format!("2026-11-{:02}T{:02}:00:00Z", 1 + hour / 24, hour % 24),
                "cluster": format!("c{}", n % 3),
                "data": {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": format!("cm-{}", n % 40), "namespace": "d",
                                      "uid": format!("u-{}", n % 40), "resourceVersion": n.to_string(),
                                      "labels": {"app.kubernetes.io/instance": "web"}}},
            }))
            .unwrap()
        })
        .collect();
    store.append(events).unwrap();
    (dir, Arc::new(store))
}

fn text(
    rt: &tokio::runtime::Runtime,
    ctx: &datafusion::prelude::SessionContext,
    q: &str,
) -> String {
    let answer = rt
        .block_on(sql::run(ctx, q))
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    pretty_format_batches(&answer.batches).unwrap().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4))]

    #[test]
    fn pushed_and_unpushed_valid_from_ranges_agree(
        ranges in proptest::collection::vec((0u32..72, 0u32..40), 6)
    ) {
        let (_dir, store) = store();
        let rt = runtime();
        // Once as a command reads (names parsed for each read), once as
        // `serve` does (names kept, with their column of `name`s).
        for keep in [false, true] {
            if keep {
                store.keep_object_names();
            }
            let ctx = rt.block_on(sql::session(store.clone())).unwrap();
            for (from, len) in ranges.iter().copied() {
                let at = |h: u32| format!("2026-11-{:02}T{:02}:00:00Z", 1 + h / 24, h % 24);
                let (a, b) = (at(from), at((from + len).min(71)));
                let pushed = format!("valid_from >= '{a}' AND valid_from < '{b}'");
                let unpushed = format!(
                    "valid_from + INTERVAL '0 seconds' >= '{a}' AND valid_from + INTERVAL '0 seconds' < '{b}' AND length(uid) >= 0"
                );
                for (p, u) in [
                    (
                        format!("SELECT cluster, count(*) AS versions, count(DISTINCT name) AS objects FROM objects WHERE {pushed} GROUP BY cluster ORDER BY cluster"),
                        format!("SELECT cluster, count(*) AS versions, count(DISTINCT name) AS objects FROM objects WHERE {unpushed} GROUP BY cluster ORDER BY cluster"),
                    ),
                    (
                        format!("SELECT cluster, kind, name, deleted, valid_from, index FROM objects WHERE {pushed} ORDER BY index"),
                        format!("SELECT cluster, kind, name, deleted, valid_from, index FROM objects WHERE {unpushed} ORDER BY index"),
                    ),
                    (
                        format!("SELECT * FROM objects WHERE {pushed} ORDER BY index"),
                        format!("SELECT * FROM objects WHERE {unpushed} ORDER BY index"),
                    ),
                    (
                        // Exclusive and inclusive ends the other way round.
                        format!("SELECT cluster, count(*) AS versions, count(DISTINCT name) AS objects FROM objects WHERE valid_from > '{a}' AND valid_from <= '{b}' GROUP BY cluster ORDER BY cluster"),
                        format!("SELECT cluster, count(*) AS versions, count(DISTINCT name) AS objects FROM objects WHERE valid_from + INTERVAL '0 seconds' > '{a}' AND valid_from + INTERVAL '0 seconds' <= '{b}' AND length(uid) >= 0 GROUP BY cluster ORDER BY cluster"),
                    ),
                    (
                        // A bound the scan answers exactly lets DataFusion
                        // hand it a limit: it counts rows in the range only.
                        format!("SELECT count(*) AS n FROM (SELECT name FROM objects WHERE {pushed} LIMIT 7)"),
                        format!("SELECT count(*) AS n FROM (SELECT name FROM objects WHERE {unpushed} LIMIT 7)"),
                    ),
                    (
                        // No name column: rows without their names, in log
                        // order, against the path that reads names and details.
                        format!("SELECT cluster, deleted, valid_from, valid_to, index FROM objects WHERE {pushed} ORDER BY index"),
                        format!("SELECT cluster, deleted, valid_from, valid_to, index FROM objects WHERE {unpushed} ORDER BY index"),
                    ),
                    (
                        format!("SELECT cluster, count(*) AS versions, max(index) AS last FROM objects WHERE {pushed} GROUP BY cluster ORDER BY cluster"),
                        format!("SELECT cluster, count(*) AS versions, max(index) AS last FROM objects WHERE {unpushed} GROUP BY cluster ORDER BY cluster"),
                    ),
                    (
                        // `name` the only name column: taken from the
                        // cluster's column of names by object id.
                        format!("SELECT name, cluster, valid_from, index FROM objects WHERE {pushed} ORDER BY index"),
                        format!("SELECT name, cluster, valid_from, index FROM objects WHERE {unpushed} ORDER BY index"),
                    ),
                    (
                        format!("SELECT cluster, name, deleted, valid_to FROM objects WHERE valid_from BETWEEN '{a}' AND '{b}' ORDER BY index"),
                        format!("SELECT cluster, name, deleted, valid_to FROM objects WHERE valid_from + INTERVAL '0 seconds' BETWEEN '{a}' AND '{b}' AND length(uid) >= 0 ORDER BY index"),
                    ),
                ] {
                    prop_assert_eq!(text(&rt, &ctx, &p), text(&rt, &ctx, &u), "{}", p);
                }
            }
        }
    }
}

/// The objects scan deals clusters to partitions as DataFusion's hash
/// repartitioning would, and says so: a grouping by cluster runs in one
/// stage, and a partitioned join with a side DataFusion repartitions on
/// `cluster` meets each cluster in the same partition. Both answer as the
/// same queries on a computed cluster, which nothing claims to partition.
#[test]
fn a_scan_dealt_by_cluster_answers_as_a_repartitioned_one() {
    let (_dir, store) = store();
    let rt = runtime();
    for partitions in [2, 3, 5] {
        let ctx = rt.block_on(sql::session(store.clone())).unwrap();
        {
            let state = ctx.state_ref();
            let mut state = state.write();
            let options = state.config_mut().options_mut();
            options.execution.target_partitions = partitions;
            // A partitioned join, not one side collected: the partitions
            // must agree.
            options.optimizer.hash_join_single_partition_threshold = 0;
            options.optimizer.hash_join_single_partition_threshold_rows = 0;
        }
        let grouped = "SELECT cluster, count(*) AS versions, count(DISTINCT name) AS objects \
                       FROM objects GROUP BY cluster ORDER BY cluster";
        let computed = "SELECT c AS cluster, count(*) AS versions, count(DISTINCT name) AS objects \
                        FROM (SELECT cluster || '' AS c, name FROM objects) GROUP BY c ORDER BY cluster";
        assert_eq!(text(&rt, &ctx, grouped), text(&rt, &ctx, computed));
        let plan = text(&rt, &ctx, &format!("EXPLAIN {grouped}"));
        assert!(plan.contains("mode=SinglePartitioned"), "{plan}");
        assert!(!plan.contains("RepartitionExec"), "{plan}");
        // The other side is grouped on a computed cluster, which
        // DataFusion repartitions itself.
        let joined = |on: &str| {
            format!(
                "SELECT o.cluster, count(*) AS n, sum(x.n) AS versions FROM objects o \
                 JOIN (SELECT c, count(*) AS n FROM (SELECT cluster || '' AS c FROM objects) \
                       GROUP BY c) x \
                 ON {on} = x.c GROUP BY o.cluster ORDER BY o.cluster"
            )
        };
        let join = text(&rt, &ctx, &joined("o.cluster"));
        assert_eq!(join, text(&rt, &ctx, &joined("o.cluster || ''")));
        assert!(join.contains("| c2 "), "{join}");
        let plan = text(&rt, &ctx, &format!("EXPLAIN {}", joined("o.cluster")));
        assert!(plan.contains("mode=Partitioned"), "{plan}");
    }
}
