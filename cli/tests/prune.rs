//! `annal prune-plan`: candidates, each risk flag, creations, thresholds and
//! exit codes, through the real binary against rendered manifests on disk.

use serde_json::{json, Value};

use crate::util::*;

const T: &str = "2026-11-01T12:00:00Z";

/// A live object in namespace `web` of cluster `canary`, tracked by
/// `argocd:<app>`.
fn live(app: &str, api_version: &str, kind: &str, name: &str, meta: Value) -> String {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let mut metadata = json!({"name": name, "namespace": "web", "uid": format!("uid-{name}"),
        "annotations": {"argocd.argoproj.io/tracking-id": format!("{app}:{group}/{kind}:web/{name}")}});
    for (k, v) in meta.as_object().cloned().unwrap_or_default() {
        if k == "annotations" {
            for (ak, av) in v.as_object().cloned().unwrap_or_default() {
                metadata["annotations"][ak] = av;
            }
        } else {
            metadata[k] = v;
        }
    }
    json!({"schema": "annal.event/v1", "id": format!("obs-{name}"), "type": "object.observed",
           "time": "2026-11-01T10:00:00Z", "cluster": "canary",
           "data": {"apiVersion": api_version, "kind": kind, "metadata": metadata}})
    .to_string()
}

fn ledger() -> Ledger {
    let lines = [
        live("web", "v1", "ConfigMap", "keep-me", json!({})),
        live("web", "v1", "ConfigMap", "old-config", json!({})),
        live(
            "web",
            "v1",
            "PersistentVolumeClaim",
            "data",
            json!({"finalizers": ["kubernetes.io/pvc-protection"]}),
        ),
        live(
            "web",
            "apps/v1",
            "Deployment",
            "legacy",
            json!({"annotations": {"argocd.argoproj.io/sync-options": "Prune=false"}}),
        ),
        live(
            "web",
            "v1",
            "Secret",
            "shared",
            json!({"labels": {"kustomize.toolkit.fluxcd.io/name": "api",
                               "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}),
        ),
        live("api", "v1", "ConfigMap", "not-ours", json!({})),
    ];
    ledger_with(&lines)
}

fn manifest(kind: &str, api_version: &str, name: &str) -> String {
    format!("apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n")
}

fn candidates(plan: &Value) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = plan["prune"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let codes = o["flags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["code"].as_str().unwrap().to_string())
                .collect();
            (o["name"].as_str().unwrap().to_string(), codes)
        })
        .collect();
    out.sort();
    out
}

fn prune(l: &Ledger, desired: &std::path::Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec![
        "prune-plan",
        "--app",
        "argocd:web",
        "--cluster",
        "canary",
        "--namespace",
        "web",
        "--at",
        T,
        "--desired",
        path_str(desired),
        // The scenario's cluster is silent after 10:00 and T is 12:00:
        // the staleness gate is tested in coverage.rs, not here.
        "--allow-stale",
    ];
    args.extend_from_slice(extra);
    l.json(&args)
}

#[test]
fn prune_plan_flags_each_risk_and_lists_creations() {
    let l = ledger();
    // The rendered manifests keep one object and add one; namespaced
    // manifests without a namespace take --namespace.
    let dir = l.dir.path().join("rendered");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("app.yaml"),
        manifest("ConfigMap", "v1", "keep-me")
            + "---\n"
            + &manifest("ConfigMap", "v1", "new-config"),
    )
    .unwrap();
    let (code, plan) = prune(&l, &dir, &[]);
    assert_eq!(code, Some(3), "{plan}");
    assert_eq!(plan["needs_approval"], true);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        candidates(&plan),
        vec![
            ("data".to_string(), s(&["protected-kind", "finalizers"])),
            ("legacy".to_string(), s(&["protection-annotation"])),
            ("old-config".to_string(), s(&[])),
            (
                "shared".to_string(),
                s(&["protected-kind", "claimed-by-another-app"])
            ),
        ],
        "not-ours belongs to another app; keep-me is desired"
    );
    assert_eq!(plan["live"], 5);
    let created: Vec<&str> = plan["create"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(created, ["new-config"]);
}

#[test]
fn prune_plan_thresholds_gate_an_otherwise_safe_plan() {
    let l = ledger();
    let desired = l.file(
        "desired.yaml",
        &[
            manifest("ConfigMap", "v1", "keep-me"),
            manifest("PersistentVolumeClaim", "v1", "data"),
            manifest("Deployment", "apps/v1", "legacy"),
            manifest("Secret", "v1", "shared"),
        ]
        .join("---\n"),
    );
    let (code, plan) = prune(&l, &desired, &[]);
    assert_eq!(code, Some(0), "only old-config goes, unflagged: {plan}");
    assert_eq!(candidates(&plan), vec![("old-config".to_string(), vec![])]);

    let (code, plan) = prune(&l, &desired, &["--max-deletions", "0"]);
    assert_eq!(code, Some(3));
    assert_eq!(plan["flags"][0]["code"], "max-deletions");

    let (code, plan) = prune(&l, &desired, &["--max-fraction", "0.1"]);
    assert_eq!(code, Some(3), "1 of 5 is 20%");
    assert_eq!(plan["flags"][0]["code"], "max-fraction");
    let (code, _) = prune(&l, &desired, &["--max-fraction", "0.2"]);
    assert_eq!(code, Some(0));

    let bad = l.file(
        "bad.yaml",
        &(manifest("ConfigMap", "v1", "ok") + "---\nkind: Secret\nmetadata: {}\n"),
    );
    let out = l.run(&[
        "prune-plan",
        "--app",
        "argocd:web",
        "--cluster",
        "canary",
        "--at",
        T,
        "--desired",
        path_str(&bad),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.yaml:5"), "{}", stderr(&out));
}
