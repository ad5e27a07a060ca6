//! The disaster-recovery drill of the "Recovery runbook" in docs/recovery.md, end to
//! end through the binary: a ledger built from events, then every recovery
//! command in the order an SRE runs them, each JSON answer and exit code
//! asserted.
//!
//! Three clusters: canary (wave 0), batch-a and batch-b (wave 1). App
//! `argocd:web` goes through revisions A, B, C; batch-b was disconnected
//! during B and reconnected straight to C; batch-a had B replayed after C.
//! The old control plane `argocd-old` is fenced at 06:00 and writes once
//! more at 06:30. On canary the app has a Helm-owned ConfigMap and a
//! Deployment someone edited by hand. The last `argocd admin export` lacks
//! app `argocd:api`.

use serde_json::{json, Value};

use crate::util::*;

const OLD: &str = "system:serviceaccount:argocd:argocd-application-controller";

/// An event at `time` (HH:MM) on 2026-11-01.
fn ev(id: &str, kind: &str, time: &str, cluster: Option<&str>, data: Value) -> Value {
    let time = format!("2026-11-01T{time}:00Z");
    event(id, kind, &time, cluster, Value::Null, data)
}

fn sync(cluster: &str, revision: &str, time: &str, phase: &str) -> Value {
    let mut e = ev(
        &format!("sync-{cluster}-{revision}-{time}"),
        "app.sync",
        time,
        Some(cluster),
        json!({"app": "argocd:web", "controller": "argocd-old", "revision": revision, "phase": phase,
               "started_at": format!("2026-11-01T{time}:00Z"), "finished_at": format!("2026-11-01T{time}:30Z"),
               "metrics": {"api_throttled": 2}}),
    );
    e["actor"] = json!({"controller": "argocd-old", "principal": OLD});
    e
}

fn object(
    name: &str,
    kind: &str,
    api: &str,
    annotations: Value,
    labels: Value,
    managers: Value,
) -> Value {
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    let mut a = annotations;
    a["argocd.argoproj.io/tracking-id"] = json!(format!("web:{group}/{kind}:web/{name}"));
    ev(
        &format!("obj-{name}"),
        "object.observed",
        "04:10",
        Some("canary"),
        json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "web",
              "uid": format!("uid-{name}"), "annotations": a, "labels": labels, "managedFields": managers}}),
    )
}

fn drill() -> Ledger {
    let spec = json!({"f:spec": {"f:replicas": {}}});
    let argocd = json!({"manager": "argocd-controller", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": spec});
    let mut events = vec![];
    for (c, wave) in [("canary", "0"), ("batch-a", "1"), ("batch-b", "1")] {
        events.push(ev(&format!("reg-{c}"), "cluster.registered", "00:00", Some(c),
            json!({"environment": "prod", "attributes": {"wave": wave}, "api_server": "https://10.9.9.9:6443"})));
        events.push(ev(
            &format!("cred-{c}"),
            "cluster.credential.issued",
            "00:00",
            Some(c),
            json!({"principal": OLD, "fingerprint": format!("blake3:old-{c}")}),
        ));
        events.push(ev(
            &format!("revoke-{c}"),
            "cluster.credential.revoked",
            "06:00",
            Some(c),
            json!({"principal": OLD, "fingerprint": format!("blake3:old-{c}")}),
        ));
    }
    for a in ["web", "api"] {
        events.push(ev(
            &format!("decl-{a}"),
            "app.declared",
            "00:00",
            Some("canary"),
            json!({"app": format!("argocd:{a}")}),
        ));
    }
    // Revisions: everyone gets A; B reaches canary and batch-a (batch-b is
    // disconnected); C reaches all three; B is replayed on batch-a.
    for c in ["canary", "batch-a", "batch-b"] {
        events.push(sync(c, "A", "01:00", "Succeeded"));
    }
    events.push(sync("canary", "B", "02:00", "Succeeded"));
    events.push(sync("batch-a", "B", "02:10", "Succeeded"));
    events.push(sync("canary", "C", "04:00", "Succeeded"));
    events.push(sync("batch-a", "C", "04:10", "Succeeded"));
    events.push(sync("batch-b", "C", "04:20", "Succeeded"));
    events.push(sync("batch-a", "B", "05:00", "Succeeded"));
    events.push(ev(
        "health-canary-C",
        "app.health",
        "04:05",
        Some("canary"),
        json!({"app": "argocd:web", "status": "Healthy", "revision": "C"}),
    ));
    events.push(ev("inv-canary-C", "app.inventory", "04:05", Some("canary"),
        json!({"app": "argocd:web", "revision": "C", "entries": [
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web"},
            {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "web", "name": "web-redis"},
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web-worker"}]})));
    events.push(object(
        "web",
        "Deployment",
        "apps/v1",
        json!({}),
        json!({}),
        json!([argocd.clone()]),
    ));
    events.push(object(
        "web-redis",
        "ConfigMap",
        "v1",
        json!({"meta.helm.sh/release-name": "redis", "meta.helm.sh/release-namespace": "web"}),
        json!({"app.kubernetes.io/managed-by": "Helm"}),
        json!([]),
    ));
    events.push(object("web-worker", "Deployment", "apps/v1", json!({}), json!({}), json!([argocd,
        {"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": spec}])));
    events.push(ev(
        "backup",
        "controlplane.backup",
        "05:30",
        None,
        json!({"controller": "argocd-old", "digest": "blake3:ffff", "counts": {"Application": 2}}),
    ));
    events.push(ev(
        "fence",
        "controlplane.fenced",
        "06:00",
        None,
        json!({"controller": "argocd-old", "principal": OLD}),
    ));
    let mut late = ev(
        "late-write",
        "audit.request",
        "06:30",
        Some("batch-a"),
        json!({"audit_id": "late-1", "stage": "ResponseComplete", "verb": "patch", "code": 200}),
    );
    late["actor"] = json!({"principal": OLD});
    events.push(late);

    ledger_with(&events)
}

const AT: &str = "2026-11-01T07:00:00Z";

#[test]
fn the_recovery_runbook_end_to_end() {
    let l = drill();

    // 1. Is the old control plane really fenced? One late write: exit 1.
    let (code, fence) = l.json(&["fence", "check", "--controller", "argocd-old", "--at", AT]);
    assert_eq!(code, Some(1), "{fence}");
    let v = fence["violations"].as_array().unwrap();
    assert_eq!(
        v.len(),
        1,
        "credentials were revoked; only the 06:30 patch: {fence}"
    );
    assert_eq!(
        (v[0]["code"].as_str(), v[0]["cluster"].as_str()),
        (Some("write-after-fence"), Some("batch-a"))
    );

    // 2. Is the last backup complete? It lacks argocd:api: exit 3.
    let export = l.file(
        "export.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata:\n  name: default\n  namespace: argocd\n---\n\
         apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n",
    );
    let (code, backup) = l.json(&["backup", "check", path_str(&export), "--at", AT]);
    assert_eq!(code, Some(3), "{backup}");
    assert_eq!(backup["missing_in_export"], json!(["argocd:api"]));

    // 3. Where did the rollout stand? C reached every cluster; B never
    // reached batch-b; batch-a went back to B after C.
    let (code, c) = l.json(&[
        "rollout",
        "status",
        "--revision",
        "C",
        "--app",
        "argocd:web",
        "--at",
        AT,
    ]);
    assert_eq!(code, Some(0), "{c}");
    let cohorts: Vec<(String, u64, u64, u64)> = c["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cohort"].as_str().unwrap().to_string(),
                c["candidates"].as_u64().unwrap(),
                c["succeeded"].as_u64().unwrap(),
                c["api_throttled"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cohorts,
        [("0".to_string(), 1, 1, 2), ("1".to_string(), 2, 2, 4)]
    );
    let (_, b) = l.json(&[
        "rollout",
        "status",
        "--revision",
        "B",
        "--app",
        "argocd:web",
        "--at",
        AT,
    ]);
    assert_eq!(b["cohorts"][1]["waiting_clusters"], json!(["batch-b"]));
    let (code, reg) = l.json(&["rollout", "regressions", "--at", AT]);
    assert_eq!(code, Some(1));
    assert_eq!(
        reg,
        json!([{"app": "argocd:web", "cluster": "batch-a", "time": "2026-11-01T05:00:00Z",
                "index": reg[0]["index"], "revision": "B", "newer": "C"}])
    );

    let (code, rows) = l.json(&[
        "sql",
        "SELECT cluster, revision, newer FROM rollout_regressions('2026-11-01T07:00:00Z')",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        rows,
        json!([{"cluster": "batch-a", "revision": "B", "newer": "C"}])
    );
    let (_, before) = l.json(&[
        "sql",
        "SELECT count(*) AS n FROM rollout_regressions('2026-11-01T04:30:00Z')",
    ]);
    assert_eq!(
        before,
        json!([{"n": 0}]),
        "before the replay there was none"
    );

    // 4. Which clusters does the new control plane take? Same selector,
    // nothing removed since registration: exit 0.
    let (code, placement) = l.json(&[
        "placement",
        "diff",
        "--selector",
        "environment=prod",
        "--from",
        "2026-11-01T00:30:00Z",
        "--to",
        AT,
    ]);
    assert_eq!(code, Some(0), "{placement}");
    assert_eq!(
        placement["candidates"],
        json!(["batch-a", "batch-b", "canary"])
    );
    assert!(!placement.to_string().contains("10.9.9.9"));

    // 5. What can the new controller adopt on canary? The Helm ConfigMap
    // and the hand-edited Deployment need a person: exit 3.
    let (code, plan) = l.json(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--app",
        "argocd:web",
        "--at",
        AT,
    ]);
    assert_eq!(code, Some(3), "{plan}");
    let classes: Vec<(String, String)> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap().to_string(),
                o["class"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        [
            ("web-redis".to_string(), "CONFLICT".to_string()),
            ("web".to_string(), "ADOPT".to_string()),
            ("web-worker".to_string(), "CONFLICT".to_string()),
        ],
        "by cluster, group, kind, namespace, name"
    );

    // 6. Before re-enabling prune: the rendered manifests now hold only the
    // Deployment web; both other objects would go, each flagged: exit 3.
    let desired = l.file(
        "rendered.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
    );
    let (code, prune) = l.json(&[
        "prune-plan",
        "--app",
        "argocd:web",
        "--cluster",
        "canary",
        "--namespace",
        "web",
        "--desired",
        path_str(&desired),
        "--at",
        AT,
    ]);
    assert_eq!(code, Some(3), "{prune}");
    let flagged: Vec<(String, Vec<String>)> = prune["prune"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap().to_string(),
                o["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["code"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        flagged,
        [
            (
                "web-redis".to_string(),
                vec!["claimed-by-another-app".to_string()]
            ),
            (
                "web-worker".to_string(),
                vec!["foreign-manager".to_string()]
            ),
        ]
    );
}
