//! The folded tables on a scenario small enough to work out by hand:
//! registry versions, last-good intervals, syncs and field managers, with
//! late events and both clocks.

use std::sync::Arc;

use annal_query::sql;
use annal_schemas::Envelope;
use annal_store::Store;
use serde_json::{json, Value};

fn at(hhmm: &str) -> String {
    format!("2026-11-01T{hhmm}:00Z")
}

fn event(id: &str, t: &str, hhmm: &str, cluster: &str, data: Value) -> Envelope {
    Envelope::from_value(json!({"schema": "annal.event/v1", "id": id, "type": t,
        "time": at(hhmm), "cluster": cluster, "data": data}))
    .unwrap()
}

struct Scenario {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    /// recorded_at of the first batch.
    first_batch: String,
}

fn scenario() -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/folds").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let sync = |id: &str, hhmm: &str, rev: &str, phase: &str| {
        event(
            id,
            "app.sync",
            hhmm,
            "c1",
            json!({"app": "argocd:shop", "revision": rev,
            "phase": phase, "prune": phase == "Succeeded",
            "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"}],
            "metrics": {"render_seconds": 1.5, "api_requests": 10, "api_throttled": 1, "applied_bytes": 2048}}),
        )
    };
    let health = |id: &str, hhmm: &str, rev: Option<&str>, status: &str| {
        let mut data = json!({"app": "argocd:shop", "status": status});
        if let Some(r) = rev {
            data["revision"] = r.into();
        }
        event(id, "app.health", hhmm, "c1", data)
    };
    // First batch: the update arrives before the registration it updates.
    store
        .append(vec![
            event(
                "u1",
                "cluster.updated",
                "11:00",
                "c1",
                json!({"tenant": "t2"}),
            ),
            sync("s1", "09:10", "r1", "Succeeded"),
            health("h1", "09:12", Some("r1"), "Healthy"),
        ])
        .unwrap();
    let first_batch = store.entry(0).unwrap().unwrap().recorded_at.to_string();
    store
        .append(vec![
            event("r1", "cluster.registered", "09:00", "c1",
                json!({"environment": "prod", "tenant": "t1", "attributes": {"wave": "1"}})),
            event("l1", "cluster.lifecycle", "12:00", "c1", json!({"state": "draining"})),
            event("r2", "cluster.registered", "10:00", "c2", json!({"environment": "staging"})),
            sync("s2", "10:00", "r2", "Succeeded"),
            health("h2", "10:05", Some("r2"), "Degraded"),
            sync("s3", "10:10", "r3", "Running"),
            // Healthy for r2, but a newer sync started: not a last-good.
            health("h3", "10:15", Some("r2"), "Healthy"),
            sync("s4", "10:20", "r3", "Succeeded"),
            health("h4", "10:25", None, "Healthy"),
            event("g1", "app.revision.good", "11:00", "c1", json!({"app": "argocd:shop", "revision": "r2"})),
            event("o1", "object.observed", "09:30", "c1", json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop", "managedFields": [
                    {"manager": "argocd-controller", "operation": "Apply", "time": "2026-11-01T09:30:00Z",
                     "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                    {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                     "fieldsV1": {"f:status": {"f:readyReplicas": {}}}}]}})),
        ])
        .unwrap();
    Scenario {
        _dir: dir,
        store: Arc::new(store),
        first_batch,
    }
}

fn query(s: &Scenario, q: &str) -> Vec<Value> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ctx = sql::session(s.store.clone()).await.unwrap();
        let answer = sql::run(&ctx, q)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        sql::rows_as_json(&answer)
            .unwrap()
            .into_iter()
            .map(Value::Object)
            .collect()
    })
}

#[test]
fn registry_versions_fold_in_valid_time_order() {
    let s = scenario();
    let rows = query(
        &s,
        "SELECT cluster, environment, tenant, state, attributes, valid_from, valid_to FROM clusters ORDER BY cluster, valid_from",
    );
    assert_eq!(
        rows,
        [
            json!({"cluster": "c1", "environment": "prod", "tenant": "t1", "state": null,
                   "attributes": "{\"wave\":\"1\"}", "valid_from": "2026-11-01T09:00:00Z", "valid_to": "2026-11-01T11:00:00Z"}),
            json!({"cluster": "c1", "environment": "prod", "tenant": "t2", "state": null,
                   "attributes": "{\"wave\":\"1\"}", "valid_from": "2026-11-01T11:00:00Z", "valid_to": "2026-11-01T12:00:00Z"}),
            json!({"cluster": "c1", "environment": "prod", "tenant": "t2", "state": "draining",
                   "attributes": "{\"wave\":\"1\"}", "valid_from": "2026-11-01T12:00:00Z", "valid_to": null}),
            json!({"cluster": "c2", "environment": "staging", "tenant": null, "state": null,
                   "attributes": "{}", "valid_from": "2026-11-01T10:00:00Z", "valid_to": null}),
        ]
    );
    let at_0930 = query(
        &s,
        &format!(
            "SELECT cluster, tenant FROM clusters_at('{}') ORDER BY cluster",
            at("09:30")
        ),
    );
    assert_eq!(at_0930, [json!({"cluster": "c1", "tenant": "t1"})]);
    // Known only the first batch: the update alone, which is a version too.
    let early = query(
        &s,
        &format!(
            "SELECT cluster, tenant, environment FROM clusters_at('{}', '{}')",
            at("11:30"),
            s.first_batch
        ),
    );
    assert_eq!(
        early,
        [json!({"cluster": "c1", "tenant": "t2", "environment": null})]
    );
}

#[test]
fn last_good_needs_success_then_health_before_the_next_sync() {
    let s = scenario();
    let rows = query(
        &s,
        "SELECT revision, good_by, valid_from, valid_to FROM revisions WHERE cluster = 'c1' ORDER BY valid_from",
    );
    assert_eq!(
        rows,
        [
            json!({"revision": "r1", "good_by": "sync+health", "valid_from": at("09:12"), "valid_to": at("10:25")}),
            json!({"revision": "r3", "good_by": "sync+health", "valid_from": at("10:25"), "valid_to": at("11:00")}),
            json!({"revision": "r2", "good_by": "marker", "valid_from": at("11:00"), "valid_to": null}),
        ]
    );
    let good = |t: &str, known: Option<&str>| {
        let args = match known {
            Some(k) => format!("'{}', '{k}'", at(t)),
            None => format!("'{}'", at(t)),
        };
        query(
            &s,
            &format!("SELECT app, revision FROM last_good_at({args})"),
        )
        .into_iter()
        .map(|r| r["revision"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
    };
    assert_eq!(good("09:00", None), Vec::<String>::new());
    assert_eq!(good("10:20", None), ["r1"]);
    assert_eq!(good("10:30", None), ["r3"]);
    assert_eq!(good("12:00", None), ["r2"]);
    // As known after the first batch: only r1 had been reported good.
    assert_eq!(good("12:00", Some(&s.first_batch)), ["r1"]);
}

#[test]
fn syncs_and_field_managers_are_columns() {
    let s = scenario();
    let syncs = query(
        &s,
        "SELECT phase, count(*) AS n, sum(api_requests) AS requests, bool_and(prune) AS pruned \
         FROM syncs WHERE cluster = 'c1' GROUP BY phase ORDER BY phase",
    );
    assert_eq!(
        syncs,
        [
            json!({"phase": "Running", "n": 1, "requests": 10, "pruned": false}),
            json!({"phase": "Succeeded", "n": 3, "requests": 30, "pruned": true}),
        ]
    );
    let managers = query(
        &s,
        "SELECT manager, operation, subresource, fields FROM managed_fields WHERE cluster = 'c1' ORDER BY manager",
    );
    assert_eq!(
        managers,
        [
            json!({"manager": "argocd-controller", "operation": "Apply", "subresource": null, "fields": [".spec.replicas"]}),
            json!({"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "fields": [".status.readyReplicas"]}),
        ]
    );
    assert!(query(&s, "SELECT * FROM managed_fields WHERE cluster = 'c2'").is_empty());
}
