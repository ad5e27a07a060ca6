//! `annal diff` and `GET /v1/diff` through the binary: added, removed,
//! changed (with the fields and the managers that own them) and
//! owner-changed objects between two instants, and bad instants refused.
//! See: issue 20 (change history: the diff of two instants).

use serde_json::{json, Value};

use crate::util::*;

/// `web` (replicas 2, by Argo CD) at 10:00 whose replicas someone edits to
/// 3 at 11:00; `old` deleted at 10:30; `new` created at 10:45; `cfg`
/// moving from Argo CD to Flux at 10:50.
fn ledger() -> Ledger {
    let object = |id: &str, minute: u32, kind: &str, name: &str, extra: Value| {
        let mut data = json!({"apiVersion": "v1", "kind": kind,
                              "metadata": {"name": name, "namespace": "shop"}});
        if let (Value::Object(d), Value::Object(e)) = (&mut data, extra) {
            for (k, v) in e {
                match (d.get_mut(&k), v) {
                    (Some(Value::Object(dm)), Value::Object(em)) => dm.extend(em),
                    (_, v) => {
                        d.insert(k, v);
                    }
                }
            }
        }
        let time = format!("2026-11-01T{}:{:02}:00Z", 10 + minute / 60, minute % 60);
        event(id, "object.observed", &time, Some("c1"), Value::Null, data)
    };
    let tracked = |name: &str| json!({"argocd.argoproj.io/tracking-id": format!("shop:/ConfigMap:shop/{name}")});
    let managed = |manager: &str| {
        json!([{"manager": manager, "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:replicas": {}}}}])
    };
    let lines = [
        object(
            "web-1",
            0,
            "ConfigMap",
            "web",
            json!({"data": {"replicas": "2"},
            "metadata": {"annotations": tracked("web"), "managedFields": managed("argocd-controller")}}),
        ),
        object(
            "web-2",
            60,
            "ConfigMap",
            "web",
            json!({"data": {"replicas": "3"},
            "metadata": {"annotations": tracked("web"), "managedFields": managed("kubectl-edit")}}),
        ),
        object("old-1", 0, "ConfigMap", "old", json!({})),
        event(
            "old-2",
            "object.deleted",
            "2026-11-01T10:30:00Z",
            Some("c1"),
            Value::Null,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old", "namespace": "shop"}}),
        ),
        object("new-1", 45, "ConfigMap", "new", json!({})),
        object(
            "cfg-1",
            0,
            "ConfigMap",
            "cfg",
            json!({"metadata": {"annotations": tracked("cfg")}}),
        ),
        object(
            "cfg-2",
            50,
            "ConfigMap",
            "cfg",
            json!({"metadata": {"labels": {
            "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}}),
        ),
    ];
    ledger_with(&lines)
}

fn names(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["change"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn diff_lists_added_removed_changed_and_owner_changed_objects() {
    let l = ledger();
    let args = [
        "diff",
        "--from",
        "2026-11-01T10:10:00Z",
        "--to",
        "2026-11-01T11:30:00Z",
    ];
    let (code, doc) = l.json(&args);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(
        names(&doc["added"]),
        [("new".to_string(), "added".to_string())]
    );
    assert_eq!(
        names(&doc["removed"]),
        [("old".to_string(), "removed".to_string())]
    );
    let changed = doc["changed"].as_array().unwrap();
    let web = changed
        .iter()
        .find(|r| r["name"] == "web")
        .expect("web changed");
    assert_eq!(web["change"], "changed");
    assert_eq!(web["fields"], json!([".data.replicas"]));
    assert_eq!(web["managers"], json!(["kubectl-edit"]));
    let cfg = changed
        .iter()
        .find(|r| r["name"] == "cfg")
        .expect("cfg changed owner");
    assert_eq!(cfg["change"], "owner-changed");
    assert_eq!(cfg["owner_before"], "argocd:shop");
    assert_eq!(cfg["owner_after"], "flux:flux-system/apps");
    assert_eq!(changed.len(), 2, "{doc}");

    // Before the edit, web has not changed; the owner filter keeps Flux's.
    let (_, early) = l.json(&[
        "diff",
        "--from",
        "2026-11-01T10:10:00Z",
        "--to",
        "2026-11-01T10:55:00Z",
        "--owner",
        "flux:flux-system/apps",
    ]);
    assert_eq!(
        names(&early["changed"]),
        [("cfg".to_string(), "owner-changed".to_string())]
    );
    assert_eq!(early["added"], json!([]));

    // The table, and instants in the wrong order.
    let out = l.run(&args);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("CLUSTER"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("web") && l.contains(".data.replicas")),
        "{text}"
    );
    let out = l.run(&[
        "diff",
        "--from",
        "2026-11-01T11:30:00Z",
        "--to",
        "2026-11-01T10:10:00Z",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("earlier instant first"),
        "{}",
        stderr(&out)
    );

    // The same document over HTTP.
    let server = Server::start(&l, &[]);
    let (status, body) = server.request(
        "GET",
        "/v1/diff?from=2026-11-01T10:10:00Z&to=2026-11-01T11:30:00Z",
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    let served: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(served, doc);
    let (status, body) = server.request("GET", "/v1/diff?from=yesterday-ish", None, "");
    assert_eq!(status, 400, "{body}");
}

#[test]
fn the_inventory_diff_table_function_answers_as_the_command_does() {
    let l = ledger();
    let query = "SELECT name, change, fields, managers, owner_after FROM \
                 inventory_diff('2026-11-01T10:10:00Z', '2026-11-01T11:30:00Z') ORDER BY name";
    let (code, rows) = l.json(&["sql", query]);
    assert_eq!(code, Some(0), "{rows}");
    let got: Vec<(String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().into(),
                r["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("cfg", "owner-changed"),
        ("new", "added"),
        ("old", "removed"),
        ("web", "changed"),
    ];
    assert_eq!(got, want.map(|(n, c)| (n.to_string(), c.to_string())));
    let web = &rows[3];
    assert_eq!(web["fields"], json!([".data.replicas"]));
    assert_eq!(web["managers"], json!(["kubectl-edit"]));
    assert_eq!(rows[0]["owner_after"], "flux:flux-system/apps");

    // Cluster pushdown: the cluster's rows, and none of a cluster without.
    let count = |cluster: &str| {
        let q = format!("SELECT count(*) AS n FROM inventory_diff('2026-11-01T10:10:00Z', '2026-11-01T11:30:00Z') WHERE cluster = '{cluster}'");
        l.json(&["sql", &q]).1[0]["n"].clone()
    };
    assert_eq!((count("c1"), count("c2")), (json!(4), json!(0)));

    // Instants in the wrong order, or too few, are named.
    for (bad, says) in [
        (
            "SELECT * FROM inventory_diff('2026-11-01T11:30:00Z', '2026-11-01T10:10:00Z')",
            "earlier instant first",
        ),
        (
            "SELECT * FROM inventory_diff('2026-11-01T11:30:00Z')",
            "two or three times",
        ),
    ] {
        let out = l.run(&["sql", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{bad}: {}", stderr(&out));
    }
}
