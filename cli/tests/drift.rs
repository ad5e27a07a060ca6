//! Drift outside Git through the binary, over HTTP and in SQL: a kubectl
//! edit the next sync reverted, a break-glass edit nobody reverted, and
//! writes that are not drift (the HPA, an object no app owns).
//! See: issue 20 (change history: drift outside Git).

use serde_json::{json, Value};

use crate::util::*;

fn object(kind: &str, name: &str, rv: u32, body: Value, manager: (&str, &str)) -> Value {
    let api = if kind == "Deployment" {
        "apps/v1"
    } else {
        "v1"
    };
    let group = if kind == "Deployment" { "apps" } else { "" };
    let mut o = json!({
        "apiVersion": api, "kind": kind,
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                     "resourceVersion": rv.to_string(),
                     "managedFields": [{"manager": manager.0, "operation": "Update",
                                        "apiVersion": api, "time": manager.1,
                                        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]}
    });
    if name != "free" {
        o["metadata"]["annotations"] =
            json!({"argocd.argoproj.io/tracking-id": format!("shop:{group}/{kind}:shop/{name}")});
    }
    if let (Value::Object(o), Value::Object(b)) = (&mut o, body) {
        o.extend(b);
    }
    o
}

fn ledger() -> Ledger {
    let argo = "argocd-application-controller";
    let v = |id: &str, time: &str, actor: Value, data: Value| {
        event(id, "object.observed", time, Some("c1"), actor, data)
    };
    let by = |who: &str, manager: &str| json!({"principal": who, "field_manager": manager});
    let at = |hm: &str| format!("2026-11-01T{hm}:00Z");
    let replicas = |n: u32| json!({"spec": {"replicas": n}});
    let data = |a: &str| json!({"data": {"a": a}});
    ledger_with(&[
        v(
            "web-1",
            &at("10:00"),
            Value::Null,
            object("Deployment", "web", 1, replicas(2), (argo, &at("10:00"))),
        ),
        v(
            "web-2",
            &at("11:00"),
            by("bob@example.com", "kubectl-edit"),
            object(
                "Deployment",
                "web",
                2,
                replicas(3),
                ("kubectl-edit", &at("11:00")),
            ),
        ),
        v(
            "web-3",
            &at("11:10"),
            Value::Null,
            object("Deployment", "web", 3, replicas(2), (argo, &at("11:10"))),
        ),
        v(
            "web-4",
            &at("12:30"),
            Value::Null,
            object(
                "Deployment",
                "web",
                4,
                replicas(4),
                ("horizontal-pod-autoscaler", &at("12:30")),
            ),
        ),
        v(
            "cfg-1",
            &at("10:00"),
            Value::Null,
            object("ConfigMap", "cfg", 1, data("1"), (argo, &at("10:00"))),
        ),
        v(
            "cfg-2",
            &at("12:00"),
            by("ops-admin", "kubectl-client-side-apply"),
            object(
                "ConfigMap",
                "cfg",
                2,
                data("2"),
                ("kubectl-client-side-apply", &at("12:00")),
            ),
        ),
        v(
            "free-1",
            &at("10:00"),
            Value::Null,
            object(
                "ConfigMap",
                "free",
                1,
                data("1"),
                ("kubectl-create", &at("10:00")),
            ),
        ),
        v(
            "free-2",
            &at("12:00"),
            by("alice", "kubectl-edit"),
            object(
                "ConfigMap",
                "free",
                2,
                data("2"),
                ("kubectl-edit", &at("12:00")),
            ),
        ),
    ])
}

const WINDOW: [&str; 5] = [
    "drift",
    "--since",
    "2026-11-01T09:00:00Z",
    "--until",
    "2026-11-01T13:00:00Z",
];

#[test]
fn drift_lists_writes_outside_git_and_whether_the_next_sync_reverted_them() {
    let l = ledger();
    let (code, doc) = l.json(&WINDOW);
    assert_eq!(code, Some(3), "an unreverted drift is a finding: {doc}");
    assert_eq!(doc["unreverted"], 1);
    assert_eq!(doc["needs_approval"], true);
    let rows = doc["drift"].as_array().unwrap();
    let got: Vec<(&str, &str, &str, bool)> = rows
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["who"].as_str().unwrap(),
                r["time"].as_str().unwrap(),
                r["reverted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("cfg", "ops-admin", "2026-11-01T12:00:00Z", false),
            ("web", "bob@example.com", "2026-11-01T11:00:00Z", true),
        ],
        "the HPA and the unowned ConfigMap are not drift"
    );
    assert_eq!(rows[1]["fields"], json!([".spec.replicas"]));
    assert_eq!(rows[1]["reverted_at"], "2026-11-01T11:10:00Z");
    assert_eq!(rows[1]["manager"], "kubectl-edit");
    assert_eq!(rows[1]["app"], "argocd:shop");
    assert_eq!(rows[0]["fields"], json!([".data.a"]));

    // Before the break-glass edit, only the reverted one: exit 0.
    let (code, doc) = l.json(&[&WINDOW[..3], &["--until", "2026-11-01T11:30:00Z"]].concat());
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["drift"].as_array().unwrap().len(), 1);
    // Another app's objects: none.
    let (code, doc) = l.json(&[&WINDOW[..], &["--app", "argocd:other"]].concat());
    assert_eq!((code, doc["drift"].clone()), (Some(0), json!([])));
    // An autoscaler of one's own is not drift when named normal.
    let (_, doc) = l.json(&[&WINDOW[..], &["--normal-manager", "kubectl-edit"]].concat());
    assert_eq!(doc["drift"].as_array().unwrap().len(), 1, "{doc}");
    // Table output: the headline and one line each.
    let out = l.run(&WINDOW);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 writes outside Git, 1 not reverted"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains("argocd:shop")).count(),
        2,
        "{text}"
    );
    // Instants the wrong way round are a usage error.
    let out = l.run(&[
        "drift",
        "--since",
        "2026-11-02T00:00:00Z",
        "--until",
        "2026-11-01T00:00:00Z",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn drift_over_http_and_sql_agree_with_the_command() {
    let l = ledger();
    let (_, cli) = l.json(&WINDOW);
    let server = Server::start(&l, &[]);
    let (status, body) = server.request(
        "GET",
        "/v1/drift?since=2026-11-01T09:00:00Z&until=2026-11-01T13:00:00Z",
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    let api: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(api, cli);
    let (code, rows) = l.json(&[
        "sql",
        "SELECT name, who, fields FROM drift('2026-11-01T09:00:00Z', '2026-11-01T13:00:00Z') WHERE NOT reverted",
    ]);
    assert_eq!(code, Some(0), "{rows}");
    assert_eq!(
        rows,
        json!([{"name": "cfg", "who": "ops-admin", "fields": [".data.a"]}])
    );
    let out = l.run(&["sql", "SELECT * FROM drift()"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("one or two times"),
        "{}",
        stderr(&out)
    );
}
