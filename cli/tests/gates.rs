//! `annal placement diff` and `annal fence check`: exit codes a pipeline
//! gates on, through the real binary, on ledgers built from events.

use serde_json::{json, Value};

use crate::util::*;

/// A completed `audit.request` on `cluster` by `actor`.
fn audit(
    id: &str,
    time: &str,
    cluster: &str,
    actor: Value,
    audit_id: &str,
    verb: &str,
    code: u16,
) -> Value {
    let data =
        json!({"audit_id": audit_id, "stage": "ResponseComplete", "verb": verb, "code": code});
    event(id, "audit.request", time, Some(cluster), actor, data)
}

fn ids(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect()
}

/// canary (wave 0), batch-a and batch-b (wave 1), all prod; batch-b moves
/// to environment decommissioned at 12:00.
fn registry() -> Ledger {
    let register = |c: &str, wave: &str| {
        event(
            &format!("reg-{c}"),
            "cluster.registered",
            "2026-11-01T08:00:00Z",
            Some(c),
            Value::Null,
            json!({"environment": "prod", "attributes": {"wave": wave}, "api_server": "https://10.1.2.3:6443"}),
        )
    };
    ledger_with(&[
        register("canary", "0"),
        register("batch-a", "1"),
        register("batch-b", "1"),
        event(
            "upd-b",
            "cluster.updated",
            "2026-11-01T12:00:00Z",
            Some("batch-b"),
            Value::Null,
            json!({"environment": "decommissioned"}),
        ),
    ])
}

#[test]
fn placement_diff_names_added_and_removed_clusters_and_gates_removals() {
    let l = registry();
    let diff = |extra: &[&str]| {
        let mut args = vec!["placement", "diff", "--selector", "environment=prod"];
        args.extend_from_slice(extra);
        l.json(&args)
    };
    let (code, d) = diff(&[
        "--from",
        "2026-11-01T10:00:00Z",
        "--to",
        "2026-11-01T13:00:00Z",
    ]);
    assert_eq!(code, Some(3), "a removal needs approval by default: {d}");
    assert_eq!(ids(&d["candidates"]), ["batch-a", "canary"]);
    assert_eq!(ids(&d["removed"]), ["batch-b"]);
    assert!(ids(&d["added"]).is_empty());
    assert!(!d.to_string().contains("10.1.2.3"), "cluster ids only: {d}");

    let (code, _) = diff(&[
        "--from",
        "2026-11-01T10:00:00Z",
        "--to",
        "2026-11-01T13:00:00Z",
        "--max-remove",
        "1",
    ]);
    assert_eq!(code, Some(0));

    // A proposed selector: wave 1 only drops the canary, adds nothing.
    let (code, d) = diff(&[
        "--proposed-selector",
        "environment=prod,wave=1",
        "--at",
        "2026-11-01T10:00:00Z",
    ]);
    assert_eq!(code, Some(3));
    assert_eq!(ids(&d["removed"]), ["canary"]);
    let (code, d) = diff(&[
        "--proposed-selector",
        "environment=prod",
        "--exclude",
        "wave=0",
        "--at",
        "2026-11-01T10:00:00Z",
        "--max-remove",
        "5",
    ]);
    assert_eq!(code, Some(0), "{d}");
    assert_eq!(ids(&d["candidates"]), ["batch-a", "batch-b"]);

    // Additions over --max-add, and an empty candidate set, also stop.
    let (code, d) = l.json(&[
        "placement",
        "diff",
        "--selector",
        "wave=0",
        "--proposed-selector",
        "environment=prod",
        "--at",
        "2026-11-01T10:00:00Z",
        "--max-add",
        "1",
    ]);
    assert_eq!(
        (code, ids(&d["added"])),
        (Some(3), vec!["batch-a", "batch-b"])
    );
    let (code, d) = diff(&[
        "--proposed-selector",
        "environment=nowhere",
        "--at",
        "2026-11-01T10:00:00Z",
        "--max-remove",
        "9",
    ]);
    assert_eq!(code, Some(3));
    assert!(d["flags"][0].as_str().unwrap().contains("no cluster"));

    let out = l.run(&[
        "placement",
        "diff",
        "--selector",
        "environment",
        "--proposed-selector",
        "x=y",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn fence_check_finds_late_writes_unrevoked_and_revoked_credentials() {
    let old = json!({"controller": "argocd-old", "principal": "system:serviceaccount:argocd:old"});
    let lines = [
        event(
            "cred-1",
            "cluster.credential.issued",
            "2026-11-01T08:00:00Z",
            Some("canary"),
            Value::Null,
            json!({"principal": "system:serviceaccount:argocd:old", "fingerprint": "blake3:aaaa"}),
        ),
        event(
            "cred-2",
            "cluster.credential.issued",
            "2026-11-01T08:00:00Z",
            Some("batch-a"),
            Value::Null,
            json!({"principal": "system:serviceaccount:argocd:old", "fingerprint": "blake3:bbbb"}),
        ),
        event(
            "revoke-1",
            "cluster.credential.revoked",
            "2026-11-01T10:00:00Z",
            Some("canary"),
            Value::Null,
            json!({"principal": "system:serviceaccount:argocd:old", "fingerprint": "blake3:aaaa"}),
        ),
        // Before the fence: allowed.
        event(
            "sync-early",
            "app.sync",
            "2026-11-01T09:00:00Z",
            Some("canary"),
            old.clone(),
            json!({"app": "argocd:web", "controller": "argocd-old", "revision": "A", "phase": "Succeeded"}),
        ),
        event(
            "fence",
            "controlplane.fenced",
            "2026-11-01T10:00:00Z",
            None,
            Value::Null,
            json!({"controller": "argocd-old", "principal": "system:serviceaccount:argocd:old"}),
        ),
        // After the fence: a late write by the old principal, one refused
        // write (the fence working), one read, and someone using the
        // revoked credential.
        audit(
            "late-write",
            "2026-11-01T10:30:00Z",
            "batch-a",
            json!({"principal": "system:serviceaccount:argocd:old"}),
            "a1",
            "patch",
            200,
        ),
        audit(
            "refused",
            "2026-11-01T10:31:00Z",
            "batch-a",
            json!({"principal": "system:serviceaccount:argocd:old"}),
            "a2",
            "patch",
            403,
        ),
        audit(
            "read",
            "2026-11-01T10:32:00Z",
            "batch-a",
            json!({"principal": "system:serviceaccount:argocd:old"}),
            "a3",
            "get",
            200,
        ),
        audit(
            "stolen",
            "2026-11-01T11:00:00Z",
            "canary",
            json!({"principal": "someone", "credential": "blake3:aaaa"}),
            "a4",
            "get",
            200,
        ),
    ];
    let l = ledger_with(&lines);
    let (code, r) = l.json(&[
        "fence",
        "check",
        "--controller",
        "argocd-old",
        "--at",
        "2026-11-01T12:00:00Z",
    ]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["fenced_at"], "2026-11-01T10:00:00Z");
    let got: Vec<(String, Value)> = r["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["code"].as_str().unwrap().to_string(),
                v["cluster"].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("credential-not-revoked".to_string(), json!("batch-a")),
            ("write-after-fence".to_string(), json!("batch-a")),
            ("revoked-credential-used".to_string(), json!("canary")),
        ],
        "the refused patch and the read are not writes; the early sync was before the fence"
    );

    // Before the late write, with the second credential revoked, it holds.
    let (code, r) = l.json(&[
        "fence",
        "check",
        "--controller",
        "argocd-old",
        "--at",
        "2026-11-01T10:15:00Z",
        "--known-at",
        "2099-01-01T00:00:00Z",
    ]);
    assert_eq!(
        code,
        Some(1),
        "batch-a's credential is still not revoked: {r}"
    );
    assert_eq!(r["violations"].as_array().unwrap().len(), 1);

    let out = l.run(&["fence", "check", "--controller", "argocd-unknown"]);
    assert_eq!(out.status.code(), Some(2), "no fence and no --since");
}

fn export_yaml(apps: &[&str]) -> String {
    let mut docs = vec![
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n".to_string(),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: argocd-secret\n  namespace: argocd\ndata:\n  admin.password: c2VjcmV0\n".to_string(),
        "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata:\n  name: default\n  namespace: argocd\n".to_string(),
    ];
    for a in apps {
        docs.push(format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {a}\n  namespace: argocd\n"
        ));
    }
    docs.join("---\n")
}

#[test]
fn backup_check_catches_a_shrunken_export_and_a_missing_app() {
    let declare = |a: &str| {
        event(
            &format!("decl-{a}"),
            "app.declared",
            "2026-11-01T08:00:00Z",
            Some("canary"),
            Value::Null,
            json!({"app": format!("argocd:{a}")}),
        )
    };
    let l = ledger_with(&[
        declare("web"),
        declare("api"),
        declare("db"),
        event(
            "backup-1",
            "controlplane.backup",
            "2026-11-01T09:00:00Z",
            None,
            Value::Null,
            json!({"controller": "argocd-old", "digest": "blake3:1234",
                   "counts": {"Application": 3, "AppProject": 1}}),
        ),
    ]);
    let at = "2026-11-01T12:00:00Z";
    let complete = l.file("complete.yaml", &export_yaml(&["web", "api", "db"]));
    let (code, r) = l.json(&["backup", "check", path_str(&complete), "--at", at]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["export_counts"]["Application"], 3);
    assert_eq!(r["ledger_apps"], 3);

    let short = l.file("short.yaml", &export_yaml(&["web", "api"]));
    let (code, r) = l.json(&["backup", "check", path_str(&short), "--at", at]);
    assert_eq!(code, Some(3));
    let codes: Vec<&str> = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["shrank", "shrank", "missing-in-export"], "{r}");
    assert_eq!(r["missing_in_export"], json!(["argocd:db"]));
    assert!(
        !r.to_string().contains("c2VjcmV0"),
        "Secret values never leave the export"
    );

    let empty = l.file("empty.yaml", "---\n");
    let (code, r) = l.json(&["backup", "check", path_str(&empty), "--at", at]);
    assert_eq!(code, Some(3));
    assert_eq!(r["flags"][0]["code"], "empty");
}
