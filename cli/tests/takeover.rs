//! `annal takeover-plan`: each class on the smallest ledger that shows it,
//! through the real binary, with the exit codes a pipeline gates on.

use serde_json::{json, Value};

use crate::util::*;

const T: &str = "2026-11-01T12:00:00Z";

fn event(id: &str, kind: &str, time: &str, data: Value) -> String {
    crate::util::event(id, kind, time, Some("canary"), Value::Null, data).to_string()
}

/// An object version (event id `obs-<name>`): `tracking` is the Argo CD
/// tracking id (if any), `managers` (manager, operation, subresource,
/// fieldsV1).
fn object(
    api_version: &str,
    kind: &str,
    name: &str,
    tracking: Option<&str>,
    labels: Value,
    extra_annotations: Value,
    managers: Vec<(&str, &str, Option<&str>, Value)>,
) -> String {
    let mut annotations = extra_annotations;
    if let Some(t) = tracking {
        annotations["argocd.argoproj.io/tracking-id"] = json!(t);
    }
    let managed: Vec<Value> = managers
        .into_iter()
        .map(|(m, op, sub, fields)| {
            let mut e = json!({"manager": m, "operation": op, "apiVersion": api_version,
                               "fieldsType": "FieldsV1", "fieldsV1": fields});
            if let Some(s) = sub {
                e["subresource"] = json!(s);
            }
            e
        })
        .collect();
    event(
        &format!("obs-{name}"),
        "object.observed",
        "2026-11-01T10:00:00Z",
        json!({"apiVersion": api_version, "kind": kind, "metadata": {
            "name": name, "namespace": "web", "uid": format!("uid-{name}"), "resourceVersion": "7",
            "labels": labels, "annotations": annotations, "managedFields": managed}}),
    )
}

/// An `app.sync` of `argocd:web` to `revision`, recorded when it finished.
fn sync(id: &str, revision: &str, phase: &str, started: &str, finished: &str) -> String {
    let data = json!({"app": "argocd:web", "controller": "argocd-application-controller",
                      "revision": revision, "phase": phase, "started_at": started,
                      "finished_at": finished, "prune": false, "dry_run": false});
    event(id, "app.sync", finished, data)
}

fn inventory(id: &str, time: &str, revision: &str, names: &[(&str, &str, &str)]) -> String {
    let entries: Vec<Value> = names
        .iter()
        .map(|(group, kind, name)| {
            json!({"group": group, "version": "v1", "kind": kind, "namespace": "web", "name": name})
        })
        .collect();
    event(
        id,
        "app.inventory",
        time,
        json!({"app": "argocd:web", "revision": revision, "entries": entries}),
    )
}

/// One app, `argocd:web`, on cluster `canary`: revision B was synced and
/// healthy (last good), revision C synced after it and never became
/// healthy, so B's inventory is what a takeover must restore.
fn ledger() -> Ledger {
    let apply = |fields: Value| ("argocd-controller", "Apply", None, fields);
    let spec = json!({"f:spec": {"f:replicas": {}}});
    let lines = [
        // ADOPT: tracked by web, only normal managers.
        object(
            "apps/v1",
            "Deployment",
            "web",
            Some("web:apps/Deployment:web/web"),
            json!({}),
            json!({}),
            vec![
                apply(spec.clone()),
                (
                    "kube-controller-manager",
                    "Update",
                    Some("status"),
                    json!({"f:status": {"f:replicas": {}}}),
                ),
            ],
        ),
        // CONFLICT helm-vs-gitops: tracked by web and installed by Helm.
        object(
            "v1",
            "ConfigMap",
            "web-config",
            Some("web:/ConfigMap:web/web-config"),
            json!({"app.kubernetes.io/managed-by": "Helm"}),
            json!({"meta.helm.sh/release-name": "redis", "meta.helm.sh/release-namespace": "web"}),
            vec![],
        ),
        // CONFLICT foreign-manager: someone ran kubectl edit on spec.
        object(
            "apps/v1",
            "Deployment",
            "web-worker",
            Some("web:apps/Deployment:web/web-worker"),
            json!({}),
            json!({}),
            vec![
                apply(spec.clone()),
                ("kubectl-edit", "Update", None, spec.clone()),
            ],
        ),
        // CONFLICT tracking-mismatch: annotation copied from another Service.
        object(
            "v1",
            "Service",
            "web-svc",
            Some("web:/Service:web/other-svc"),
            json!({}),
            json!({}),
            vec![],
        ),
        // ORPHAN: in B's inventory, now owned by another app.
        object(
            "v1",
            "Secret",
            "web-secret",
            Some("other:/Secret:web/web-secret"),
            json!({}),
            json!({}),
            vec![],
        ),
        sync(
            "sync-b",
            "B",
            "Succeeded",
            "2026-11-01T08:59:00Z",
            "2026-11-01T09:00:00Z",
        ),
        event(
            "health-b",
            "app.health",
            "2026-11-01T09:01:00Z",
            json!({"app": "argocd:web", "status": "Healthy", "revision": "B"}),
        ),
        inventory(
            "inv-b",
            "2026-11-01T09:01:00Z",
            "B",
            &[
                ("apps", "Deployment", "web"),
                ("", "ConfigMap", "web-config"),
                ("apps", "Deployment", "web-worker"),
                ("", "Service", "web-svc"),
                ("", "Secret", "web-secret"),
                ("", "ConfigMap", "web-gone"),
            ],
        ),
        sync(
            "sync-c",
            "C",
            "Failed",
            "2026-11-01T10:59:00Z",
            "2026-11-01T11:00:00Z",
        ),
        inventory(
            "inv-c",
            "2026-11-01T11:00:00Z",
            "C",
            &[
                ("apps", "Deployment", "web"),
                ("", "ConfigMap", "web-config"),
                ("apps", "Deployment", "web-worker"),
                ("", "Service", "web-svc"),
                ("", "ConfigMap", "only-in-c"),
            ],
        ),
    ];
    ledger_with(&lines)
}

fn classes(plan: &Value) -> Vec<(String, String, Vec<String>)> {
    plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let codes = o["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["code"].as_str().unwrap().to_string())
                .collect();
            (
                o["name"].as_str().unwrap().to_string(),
                o["class"].as_str().unwrap().to_string(),
                codes,
            )
        })
        .collect()
}

#[test]
fn takeover_plan_classifies_each_object_and_gates_with_exit_3() {
    let l = ledger();
    let (code, plan) = l.json(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--app",
        "argocd:web",
        "--at",
        T,
    ]);
    assert_eq!(code, Some(3), "{plan}");
    assert_eq!(plan["needs_approval"], true);
    let mut got = classes(&plan);
    got.sort();
    let want = |n: &str, c: &str, r: &[&str]| {
        (
            n.to_string(),
            c.to_string(),
            r.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        got,
        vec![
            want("web", "ADOPT", &[]),
            want("web-config", "CONFLICT", &["helm-vs-gitops"]),
            want("web-gone", "MISSING", &["not-live"]),
            want("web-secret", "ORPHAN", &["owner-not-in-set"]),
            want("web-svc", "CONFLICT", &["tracking-mismatch"]),
            want("web-worker", "CONFLICT", &["foreign-manager"]),
        ],
        "only-in-c is in the failed revision's inventory, not the last good one"
    );
    assert_eq!(
        plan["summary"],
        json!([{"cluster": "canary", "app": "argocd:web",
                "adopt": 1, "conflict": 3, "orphan": 1, "missing": 1}]),
        "the orphan counts under the app that expects it"
    );

    let (code, _) = l.json(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--app",
        "argocd:web",
        "--at",
        T,
        "--allow-conflicts",
        // Silent since 10:00 at T (12:00): see coverage.rs for that gate.
        "--allow-stale",
    ]);
    assert_eq!(code, Some(0));

    // The same app through --apps-from, as a pull-request comment.
    let apps = l.file(
        "apps.txt",
        "# apps moving to the new control plane\nargocd:web\n",
    );
    let out = l.run(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--apps-from",
        path_str(&apps),
        "--at",
        T,
        "-o",
        "markdown",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let md = stdout(&out);
    assert!(
        md.contains("| CONFLICT | canary |") && md.contains("kubectl-edit"),
        "{md}"
    );
    assert!(
        !md.contains("| ADOPT |"),
        "markdown lists only what needs a reviewer: {md}"
    );

    // Before the hand edit and the Helm install existed, nothing was live:
    // every expected object is MISSING.
    let (code, early) = l.json(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--app",
        "argocd:web",
        "--at",
        "2026-11-01T09:30:00Z",
    ]);
    assert_eq!(code, Some(3));
    assert!(
        classes(&early).iter().all(|(_, c, _)| c == "MISSING"),
        "{early}"
    );
}

#[test]
fn takeover_plan_by_cluster_takes_every_app_there_and_rejects_empty_scopes() {
    let l = ledger();
    let (code, plan) = l.json(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--cluster",
        "canary",
        "--at",
        T,
    ]);
    assert_eq!(code, Some(3));
    let apps: Vec<&str> = plan["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        apps.contains(&"argocd:other") && apps.contains(&"argocd:web"),
        "{apps:?}"
    );
    let got = classes(&plan);
    let secret = got.iter().find(|(n, _, _)| n == "web-secret").unwrap();
    assert_eq!(secret.1, "ADOPT", "its owner is taken over too");

    let out = l.run(&[
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--app",
        "argocd:nope",
        "--at",
        T,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing to take over"),
        "{}",
        stderr(&out)
    );

    let out = l.run(&["takeover-plan", "--controller", "argocd-new"]);
    assert_eq!(out.status.code(), Some(2), "a scope is required");
}
