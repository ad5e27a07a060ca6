//! Cost and capacity reports on a scenario worked out by hand: two
//! clusters, a tenant change at noon, an object deleted mid-step, another
//! changing owner from Argo CD to Flux mid-step, three syncs and four
//! controller metric windows.
//!
//! Window 10:00–14:00, hourly steps. Objects (hours per step):
//! - c1 Deployment shop/web, argocd:shop, 10:30–12:15 deleted: 0.5, 1, 0.25, 0
//! - c1 ConfigMap shop/cfg, argocd:shop 10:00–11:30 then flux 11:30–: 1, 0.5 | 0.5, 1, 1
//! - c2 Service default/api, no owner, since 08:00: 1, 1, 1, 1
//!
//! Registry: c1 tenant acme, team attribute payments; from 12:00 tenant
//! globex. c2 tenant acme, no team attribute, owner platform.

use std::sync::Arc;

use annal_query::report::{self, Budgets, CapacityRequest, CostRequest, GroupBy, PriceTable};
use annal_query::sql;
use annal_schemas::{Envelope, Timestamp};
use annal_store::Store;
use serde_json::{json, Value};

fn at(hhmm: &str) -> Timestamp {
    format!("2026-11-01T{hhmm}:00Z").parse().unwrap()
}

fn event(id: &str, t: &str, hhmm: &str, cluster: &str, data: Value) -> Envelope {
    Envelope::from_value(json!({"schema": "annal.event/v1", "id": id, "type": t,
        "time": format!("2026-11-01T{hhmm}:00Z"), "cluster": cluster, "data": data}))
    .unwrap()
}

fn object(
    kind: &str,
    api: &str,
    ns: &str,
    name: &str,
    rv: u32,
    labels: Value,
    annotations: Value,
) -> Value {
    json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns,
        "uid": format!("uid-{name}"), "resourceVersion": rv.to_string(),
        "labels": labels, "annotations": annotations}})
}

fn scenario() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/reports").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let flux = json!({"kustomize.toolkit.fluxcd.io/name": "apps",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system"});
    let metrics = |id: &str, hhmm: &str, requests: u64, throttled: u64, age: Option<f64>| {
        let mut data = json!({"controller": "argocd", "window_seconds": 3600.0,
            "api_requests": requests, "api_throttled": throttled});
        if let Some(a) = age {
            data["queue_age_seconds"] = json!(a);
        }
        event(id, "controller.metrics", hhmm, "c1", data)
    };
    let events = vec![
        event(
            "r1",
            "cluster.registered",
            "09:00",
            "c1",
            json!({"tenant": "acme", "environment": "prod", "attributes": {"team": "payments"}}),
        ),
        event(
            "r2",
            "cluster.registered",
            "09:00",
            "c2",
            json!({"tenant": "acme", "environment": "staging", "owner": "platform"}),
        ),
        event(
            "r3",
            "cluster.updated",
            "12:00",
            "c1",
            json!({"tenant": "globex"}),
        ),
        event(
            "svc",
            "object.observed",
            "08:00",
            "c2",
            object("Service", "v1", "default", "api", 1, json!({}), json!({})),
        ),
        event(
            "web",
            "object.observed",
            "10:30",
            "c1",
            object(
                "Deployment",
                "apps/v1",
                "shop",
                "web",
                5,
                json!({}),
                json!({"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/web"}),
            ),
        ),
        event(
            "web-gone",
            "object.deleted",
            "12:15",
            "c1",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web"}}),
        ),
        event(
            "cfg1",
            "object.observed",
            "10:00",
            "c1",
            object(
                "ConfigMap",
                "v1",
                "shop",
                "cfg",
                7,
                json!({}),
                json!({"argocd.argoproj.io/tracking-id": "shop:/ConfigMap:shop/cfg"}),
            ),
        ),
        event(
            "cfg2",
            "object.observed",
            "11:30",
            "c1",
            object("ConfigMap", "v1", "shop", "cfg", 9, flux, json!({})),
        ),
        event(
            "s1",
            "app.sync",
            "10:10",
            "c1",
            json!({"app": "argocd:shop", "phase": "Succeeded",
            "started_at": "2026-11-01T10:09:00Z", "finished_at": "2026-11-01T10:10:00Z",
            "metrics": {"render_seconds": 1.5, "api_requests": 10, "api_throttled": 1, "applied_bytes": 2048}}),
        ),
        event(
            "s2",
            "app.sync",
            "12:20",
            "c1",
            json!({"app": "argocd:shop", "phase": "Succeeded",
            "started_at": "2026-11-01T12:19:30Z", "finished_at": "2026-11-01T12:20:00Z",
            "metrics": {"render_seconds": 0.5, "api_requests": 4, "api_throttled": 0, "applied_bytes": 1000}}),
        ),
        event(
            "s3",
            "app.sync",
            "13:05",
            "c2",
            json!({"app": "flux:flux-system/apps", "phase": "Failed",
            "metrics": {"api_requests": 7}}),
        ),
        metrics("m1", "10:30", 3600, 36, Some(100.0)),
        metrics("m2", "11:30", 7200, 72, Some(2000.0)),
        metrics("m3", "12:30", 3600, 108, Some(10.0)),
        metrics("m4", "13:30", 3600, 180, None),
    ];
    store.append(events).unwrap();
    (dir, Arc::new(store))
}

fn request(by: GroupBy, step: Option<u64>) -> CostRequest {
    CostRequest {
        from: at("10:00"),
        to: at("14:00"),
        by,
        step_seconds: step,
        prices: None,
    }
}

/// Bytes of the named entries' leaves.
fn bytes(store: &Store, ids: &[&str]) -> u64 {
    ids.iter()
        .map(|id| {
            let i = store.index_of(id).unwrap().unwrap();
            store.leaf_bytes(i).unwrap().unwrap().len() as u64
        })
        .sum()
}

/// (group, step start hh:mm) → row.
fn cell<'a>(r: &'a report::CostReport, group: &str, hhmm: &str) -> &'a report::Measures {
    let start = at(hhmm);
    &r.rows
        .iter()
        .find(|row| row.group == group && row.step_start == start)
        .unwrap_or_else(|| panic!("no row {group} {hhmm}: {:#?}", r.rows))
        .measures
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn cost_by_cluster_per_hour_matches_the_hand_computation() {
    let (_dir, store) = scenario();
    let r = report::cost(&store, &request(GroupBy::Cluster, Some(3600))).unwrap();
    // c1: 4 steps; c2: 4 steps.
    assert_eq!(r.rows.len(), 8, "{:#?}", r.rows);
    let expect = [
        (
            "c1",
            "10:00",
            1.5,
            1,
            60.0,
            10,
            &["web", "cfg1", "s1", "m1"][..],
        ),
        ("c1", "11:00", 2.0, 0, 0.0, 0, &["cfg2", "m2"][..]),
        (
            "c1",
            "12:00",
            1.25,
            1,
            30.0,
            4,
            &["r3", "web-gone", "s2", "m3"][..],
        ),
        ("c1", "13:00", 1.0, 0, 0.0, 0, &["m4"][..]),
        ("c2", "10:00", 1.0, 0, 0.0, 0, &[][..]),
        ("c2", "13:00", 1.0, 1, 0.0, 7, &["s3"][..]),
    ];
    for (cluster, hhmm, hours, syncs, seconds, requests, ids) in expect {
        let m = cell(&r, cluster, hhmm);
        assert!(
            close(m.object_hours, hours),
            "{cluster} {hhmm}: {} object-hours",
            m.object_hours
        );
        assert_eq!(
            (m.syncs, m.api_requests),
            (syncs, requests),
            "{cluster} {hhmm}"
        );
        assert!(
            close(m.sync_seconds, seconds),
            "{cluster} {hhmm}: {}",
            m.sync_seconds
        );
        assert_eq!(m.ledger_bytes, bytes(&store, ids), "{cluster} {hhmm}");
    }
    let first = cell(&r, "c1", "10:00");
    assert_eq!((first.api_throttled, first.applied_bytes), (1, 2048));
    assert!(close(first.render_seconds, 1.5));
    assert_eq!(
        first.ledger_bytes_by_source["object.observed"],
        bytes(&store, &["web", "cfg1"])
    );
    assert_eq!(
        first.ledger_bytes_by_source["controller.metrics"],
        bytes(&store, &["m1"])
    );
}

#[test]
fn object_hours_follow_the_owner_across_a_deletion_and_a_change_and_prices_apply() {
    let (_dir, store) = scenario();
    let mut req = request(GroupBy::App, None);
    req.prices = Some(
        PriceTable::parse(
            "currency = \"EUR\"\n[price]\nsyncs = 0.5\nobject_hours = 2\napi_requests = 0.01\n",
        )
        .unwrap(),
    );
    let r = report::cost(&store, &req).unwrap();
    let argo = cell(&r, "argocd:shop", "10:00");
    // web 1.75 h, cfg 1.5 h before Flux took it over at 11:30.
    assert!(close(argo.object_hours, 3.25), "{}", argo.object_hours);
    assert_eq!(
        (argo.syncs, argo.api_requests, argo.applied_bytes),
        (2, 14, 3048)
    );
    assert!(close(argo.sync_seconds, 90.0) && close(argo.render_seconds, 2.0));
    let flux = cell(&r, "flux:flux-system/apps", "10:00");
    assert!(close(flux.object_hours, 2.5), "{}", flux.object_hours);
    assert_eq!((flux.syncs, flux.api_requests), (1, 7));
    let none = cell(&r, "(none)", "10:00");
    assert!(close(none.object_hours, 4.0));
    let cost = |g: &str| {
        r.rows
            .iter()
            .find(|row| row.group == g)
            .unwrap()
            .cost
            .unwrap()
    };
    assert!(
        close(cost("argocd:shop"), 2.0 * 0.5 + 3.25 * 2.0 + 14.0 * 0.01),
        "{}",
        cost("argocd:shop")
    );
    assert!(close(cost("flux:flux-system/apps"), 0.5 + 5.0 + 0.07));
    assert!(close(cost("(none)"), 8.0));
    assert_eq!(r.currency.as_deref(), Some("EUR"));
    // The top table ranks by cost.
    let order: Vec<String> = r.totals().into_iter().map(|(g, _, _)| g).collect();
    assert_eq!(order, ["(none)", "argocd:shop", "flux:flux-system/apps"]);
}

#[test]
fn tenant_and_team_come_from_the_registry_at_each_instant() {
    let (_dir, store) = scenario();
    let r = report::cost(&store, &request(GroupBy::Tenant, Some(3600))).unwrap();
    let hours = |g: &str, h: &str| cell(&r, g, h).object_hours;
    assert!(close(hours("acme", "10:00"), 2.5));
    assert!(close(hours("acme", "11:00"), 3.0));
    // c1 moved to globex at noon: only c2's service is acme's after it.
    assert!(close(hours("acme", "12:00"), 1.0));
    assert!(close(hours("globex", "12:00"), 1.25));
    assert!(close(hours("globex", "13:00"), 1.0));
    assert_eq!(cell(&r, "globex", "12:00").syncs, 1);
    assert_eq!(cell(&r, "acme", "13:00").syncs, 1);
    let r = report::cost(&store, &request(GroupBy::Team, None)).unwrap();
    // c1's team is its attribute; c2 has none, so its registry owner.
    assert!(close(cell(&r, "payments", "10:00").object_hours, 5.75));
    assert!(close(cell(&r, "platform", "10:00").object_hours, 4.0));
    let r = report::cost(&store, &request(GroupBy::Environment, None)).unwrap();
    assert_eq!(
        r.rows.iter().map(|x| x.group.as_str()).collect::<Vec<_>>(),
        ["prod", "staging"]
    );
}

#[test]
fn capacity_flags_budgets_rising_429s_and_old_queues() {
    let (_dir, store) = scenario();
    let budgets: Budgets = toml_budgets(
        "max_fan_out = 2\nmax_api_requests_per_second = 1.5\nrelease_window_seconds = 3000\n",
    );
    let r = report::capacity(
        &store,
        &CapacityRequest {
            from: at("10:00"),
            to: at("14:00"),
            step_seconds: Some(3600),
            budgets,
        },
    )
    .unwrap();
    assert_eq!(r.rows.len(), 8);
    let c1: Vec<_> = r.rows.iter().filter(|x| x.cluster == "c1").collect();
    let shape: Vec<(u64, u64, u64)> = c1.iter().map(|x| (x.apps, x.objects, x.fan_out)).collect();
    assert_eq!(shape, [(1, 2, 2), (2, 2, 2), (1, 1, 1), (1, 1, 1)]);
    let rates: Vec<(f64, f64)> = c1
        .iter()
        .map(|x| (x.api_requests_per_second, x.throttled_per_second))
        .collect();
    assert_eq!(rates, [(1.0, 0.01), (2.0, 0.02), (1.0, 0.03), (1.0, 0.05)]);
    assert!(c1[0].flags.is_empty(), "{:?}", c1[0].flags);
    assert_eq!(c1[1].flags.len(), 2, "{:?}", c1[1].flags);
    assert!(c1[1].flags[0].contains("API requests/s over the budget"));
    assert!(c1[1].flags[1].contains("queue age 2000s above half the release window"));
    assert_eq!(c1[2].flags, ["429 rate rising three steps in a row"]);
    assert_eq!(c1[3].flags, ["429 rate rising three steps in a row"]);
    let c2: Vec<_> = r.rows.iter().filter(|x| x.cluster == "c2").collect();
    assert!(c2
        .iter()
        .all(|x| x.objects == 1 && x.fan_out == 0 && x.flags.is_empty()));
    assert_eq!(r.flagged(), 3);
}

#[tokio::test]
async fn the_reports_are_sql_table_functions() {
    let (_dir, store) = scenario();
    let ctx = sql::session(store.clone()).await.unwrap();
    let q = |text: &'static str| {
        let ctx = &ctx;
        async move {
            let answer = sql::run(ctx, text).await?;
            Ok::<Value, annal_query::QueryError>(Value::Array(
                sql::rows_as_json(&answer)?
                    .into_iter()
                    .map(Value::Object)
                    .collect(),
            ))
        }
    };
    let rows = q("SELECT \"group\", sum(object_hours) AS h, sum(syncs) AS s \
        FROM cost_report('2026-11-01T10:00:00Z', '2026-11-01T14:00:00Z', 'app', '1h') \
        GROUP BY \"group\" ORDER BY \"group\"")
    .await
    .unwrap();
    assert_eq!(
        rows,
        json!([
            {"group": "(none)", "h": 4.0, "s": 0},
            {"group": "argocd:shop", "h": 3.25, "s": 2},
            {"group": "flux:flux-system/apps", "h": 2.5, "s": 1},
        ])
    );
    let rows = q("SELECT cluster, fan_out, flags FROM capacity_report(\
        '2026-11-01T10:00:00Z', '2026-11-01T14:00:00Z', '1h') WHERE cluster = 'c1' ORDER BY step_start")
        .await.unwrap();
    let flags: Vec<usize> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["flags"].as_array().unwrap().len())
        .collect();
    assert_eq!(flags, [0, 0, 1, 1], "{rows}");
    let err =
        q("SELECT * FROM cost_report('2026-11-01T10:00:00Z', '2026-11-01T14:00:00Z', 'galaxy')")
            .await
            .unwrap_err();
    assert!(
        err.to_string().contains("cannot group by \"galaxy\""),
        "{err}"
    );
}

fn toml_budgets(text: &str) -> Budgets {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budgets.toml");
    std::fs::write(&path, text).unwrap();
    Budgets::read(&path).unwrap()
}
