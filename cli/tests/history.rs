//! Object history and the person behind each change, through the binary
//! and over HTTP, from the real input formats: Argo CD Applications
//! (`operationState.operation.initiatedBy`), Kubernetes audit events (with
//! and without the object, impersonation), Argo CD's Kubernetes Events, and
//! watched objects with managedFields.
//! See: issue 20 (change history: object history, field blame, the person).

use serde_json::{json, Value};

use crate::util::*;

/// The Deployment `shop/web` on `c1`, tracked by Argo CD app `shop`.
fn deployment(replicas: u32, rv: u32, managers: Value, label: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web",
                     "resourceVersion": rv.to_string(),
                     "labels": {"tier": label},
                     "annotations": {"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/web"},
                     "managedFields": managers},
        "spec": {"replicas": replicas}
    })
}

fn manager(name: &str, operation: &str, time: &str) -> Value {
    json!({"manager": name, "operation": operation, "apiVersion": "apps/v1", "time": time,
           "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}})
}

/// An Argo CD Application `shop` on `c1` whose last operation ran from
/// `started` to `finished` at `revision`, initiated by `by`.
fn application(started: &str, finished: &str, revision: &str, by: Value) -> String {
    json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "shop", "namespace": "argocd"},
        "spec": {"project": "default",
                 "source": {"repoURL": "https://git.example/shop.git", "path": "deploy", "targetRevision": "HEAD"},
                 "destination": {"name": "c1", "namespace": "shop"}},
        "status": {"operationState": {
            "operation": {"sync": {"revision": revision}, "initiatedBy": by},
            "phase": "Succeeded", "startedAt": started, "finishedAt": finished,
            "syncResult": {"revision": revision}}}
    })
    .to_string()
}

/// An audit event of a write to `shop/web`.
fn audit(
    id: &str,
    time: &str,
    user: &str,
    impersonated: Option<&str>,
    object: Option<Value>,
) -> String {
    let mut e = json!({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
        "auditID": id, "stage": "ResponseComplete", "verb": "update",
        "requestURI": "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit",
        "user": {"username": user, "groups": ["system:authenticated"]},
        "userAgent": "kubectl/v1.31.0 (linux/amd64)",
        "objectRef": {"resource": "deployments", "namespace": "shop", "name": "web",
                      "apiGroup": "apps", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": time, "stageTimestamp": time
    });
    if let Some(u) = impersonated {
        e["impersonatedUser"] = json!({"username": u});
        e["requestURI"] = json!("/apis/apps/v1/namespaces/shop/deployments/web");
    }
    match object {
        Some(o) => e["responseObject"] = o,
        None => e["level"] = json!("Metadata"),
    }
    e.to_string()
}

fn ingest(l: &Ledger, name: &str, text: &str, args: &[&str]) {
    let f = l.file(name, text);
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    all.push(path_str(&f));
    let out = l.run(&all);
    assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
}

/// Five versions of `shop/web`:
/// 1. 10:00 applied by Argo CD for a sync alice started (rev abc123);
/// 2. 11:00 bob's `kubectl edit` (replicas 3), audited with the object;
/// 3. 11:30 watched (replicas 5); the audit log, at Metadata level, says a
///    deploy bot impersonating carol wrote it;
/// 4. 12:00 an automated sync puts replicas back to 2 (rev def456);
/// 5. 12:30 the application controller's service account relabels it,
///    after dave initiated a sync through the Argo CD API (its Event).
fn ledger() -> Ledger {
    let l = Ledger::new();
    let argocd = "argocd-application-controller";
    ingest(
        &l,
        "app-1.json",
        &application(
            "2026-11-01T09:59:00Z",
            "2026-11-01T10:00:30Z",
            "abc123",
            json!({"username": "alice"}),
        ),
        &["--format", "argocd", "--cluster", "cp"],
    );
    ingest(
        &l,
        "app-2.json",
        &application(
            "2026-11-01T11:59:00Z",
            "2026-11-01T12:00:30Z",
            "def456",
            json!({"automated": true}),
        ),
        &["--format", "argocd", "--cluster", "cp"],
    );
    let watched = |id: &str, time: &str, object: Value| {
        event(id, "object.observed", time, Some("c1"), Value::Null, object).to_string()
    };
    let v1 = deployment(
        2,
        100,
        json!([manager(argocd, "Apply", "2026-11-01T10:00:00Z")]),
        "web",
    );
    let v2 = deployment(
        3,
        110,
        json!([
            manager(argocd, "Apply", "2026-11-01T10:00:00Z"),
            manager("kubectl-edit", "Update", "2026-11-01T11:00:00Z")
        ]),
        "web",
    );
    let v3 = deployment(
        5,
        120,
        json!([
            manager(argocd, "Apply", "2026-11-01T10:00:00Z"),
            manager("kubectl-patch", "Update", "2026-11-01T11:30:00Z")
        ]),
        "web",
    );
    let v4 = deployment(
        2,
        130,
        json!([manager(argocd, "Apply", "2026-11-01T12:00:00Z")]),
        "web",
    );
    let v5 = deployment(
        2,
        140,
        json!([manager(argocd, "Apply", "2026-11-01T12:30:00Z")]),
        "frontend",
    );
    let watches = [
        watched("w1", "2026-11-01T10:00:00Z", v1),
        watched("w3", "2026-11-01T11:30:00Z", v3),
        watched("w4", "2026-11-01T12:00:00Z", v4),
        watched("w5", "2026-11-01T12:30:00Z", v5),
    ]
    .join("\n");
    ingest(&l, "watched.jsonl", &watches, &[]);
    let audits = [
        audit(
            "a-bob",
            "2026-11-01T11:00:00Z",
            "bob@example.com",
            None,
            Some(v2),
        ),
        audit(
            "a-carol",
            "2026-11-01T11:29:50Z",
            "system:serviceaccount:ci:deploy-bot",
            Some("carol@example.com"),
            None,
        ),
        audit(
            "a-ctl",
            "2026-11-01T12:29:59Z",
            "system:serviceaccount:argocd:argocd-application-controller",
            None,
            None,
        ),
    ]
    .join("\n");
    ingest(
        &l,
        "audit.jsonl",
        &audits,
        &["--format", "k8s-audit", "--cluster", "c1"],
    );
    let argocd_event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "shop.17f0", "namespace": "argocd"},
        "involvedObject": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                           "name": "shop", "namespace": "argocd"},
        "reason": "OperationStarted", "type": "Normal",
        "message": "dave initiated sync to HEAD (789abc)",
        "source": {"component": "argocd-server"},
        "firstTimestamp": "2026-11-01T12:29:30Z", "lastTimestamp": "2026-11-01T12:29:30Z",
        "count": 1
    });
    ingest(
        &l,
        "events.json",
        &argocd_event.to_string(),
        &["--format", "k8s-event", "--cluster", "cp"],
    );
    l
}

const OBJECT: [&str; 9] = [
    "history",
    "--cluster",
    "c1",
    "--kind",
    "Deployment",
    "--namespace",
    "shop",
    "--name",
    "web",
];

fn col<'a>(versions: &'a [Value], key: &str) -> Vec<&'a Value> {
    versions.iter().map(|v| &v[key]).collect()
}

#[test]
fn history_names_the_person_tool_app_and_revision_of_each_version() {
    let l = ledger();
    let (code, doc) = l.json(&OBJECT);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["object"]["group"], "apps");
    let v = doc["versions"].as_array().unwrap();
    assert_eq!(v.len(), 5, "{doc}");
    assert_eq!(
        col(v, "change"),
        ["created", "updated", "updated", "updated", "updated"]
    );
    assert_eq!(
        col(v, "person"),
        [
            &json!("alice"),
            &json!("bob@example.com"),
            &json!("carol@example.com"),
            &Value::Null,
            &json!("dave")
        ]
    );
    assert_eq!(
        col(v, "person_source"),
        [
            &json!("argocd-initiated-by"),
            &json!("audit"),
            &json!("audit-request"),
            &Value::Null,
            &json!("argocd-event")
        ]
    );
    // The tool: the request's field manager, else the latest managedFields entry.
    assert_eq!(v[0]["manager"], "argocd-application-controller");
    assert_eq!(v[0]["operation"], "Apply");
    assert_eq!(v[1]["manager"], "kubectl-edit");
    assert_eq!(v[1]["user_agent"], "kubectl/v1.31.0 (linux/amd64)");
    assert_eq!(v[2]["manager"], "kubectl-patch");
    assert_eq!(v[2]["principal"], "system:serviceaccount:ci:deploy-bot");
    assert_eq!(v[2]["impersonated"], "carol@example.com");
    // Nobody is guessed: an automated sync names the controller.
    assert_eq!(v[3]["via"], "automated sync by argocd");
    assert_eq!(
        v[4]["principal"],
        "system:serviceaccount:argocd:argocd-application-controller"
    );
    // App and revision.
    assert_eq!(col(v, "app"), [&json!("argocd:shop"); 5]);
    assert_eq!(
        col(v, "revision"),
        [
            &json!("abc123"),
            &Value::Null,
            &Value::Null,
            &json!("def456"),
            &Value::Null
        ]
    );
    // What changed, and who owns it.
    assert_eq!(v[0]["changed"], json!([]));
    assert_eq!(v[1]["changed"], json!([".spec.replicas"]));
    assert_eq!(
        v[1]["managers"],
        json!(["argocd-application-controller", "kubectl-edit"])
    );
    assert_eq!(v[4]["changed"], json!([".metadata.labels.tier"]));
    assert_eq!(v[0]["valid_to"], "2026-11-01T11:00:00Z");
    assert_eq!(v[4]["valid_to"], Value::Null);

    // Table output: the narrow columns, one line per version.
    let out = l.run(&OBJECT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("VALID_FROM"), "{text}");
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(
        text.contains("person unknown, via automated sync by argocd"),
        "{text}"
    );
    assert!(
        text.contains("carol@example.com (by system:serviceaccount:ci:deploy-bot)"),
        "{text}"
    );

    // Nothing by that name: exit 2 saying what was looked for.
    let out = l.run(&[
        "history",
        "--cluster",
        "c1",
        "--kind",
        "Deployment",
        "--name",
        "web",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no version of Deployment web on cluster c1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_field_s_blame_lists_each_value_with_who_set_it() {
    let l = ledger();
    let (code, doc) = l.json(&[&OBJECT[..], &["--field", "spec.replicas"]].concat());
    assert_eq!(code, Some(0), "{doc}");
    let values = doc["values"].as_array().unwrap();
    let got: Vec<(Value, &str, &str)> = values
        .iter()
        .map(|b| {
            (
                b["value"].clone(),
                b["from"].as_str().unwrap(),
                b["set_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (json!(2), "2026-11-01T10:00:00Z", "alice"),
            (json!(3), "2026-11-01T11:00:00Z", "bob@example.com"),
            (
                json!(5),
                "2026-11-01T11:30:00Z",
                "carol@example.com (by system:serviceaccount:ci:deploy-bot)"
            ),
            (
                json!(2),
                "2026-11-01T12:00:00Z",
                "person unknown, via automated sync by argocd"
            ),
        ]
    );
    assert_eq!(values[0]["to"], "2026-11-01T11:00:00Z");
    assert_eq!(values[3]["to"], Value::Null);
}

#[test]
fn history_over_http_and_sql_give_the_command_s_rows() {
    let l = ledger();
    let (_, cli) = l.json(&OBJECT);
    let server = Server::start(&l, &[]);
    let (status, body) = server.request(
        "GET",
        "/v1/history?cluster=c1&kind=Deployment&namespace=shop&name=web",
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    let api: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(api, cli);
    let (status, body) = server.request(
        "GET",
        "/v1/history?cluster=c1&kind=Deployment&namespace=shop&name=nope",
        None,
        "",
    );
    assert_eq!(status, 404, "{body}");

    let (code, rows) = l.json(&[
        "sql",
        "SELECT change, person, via, revision, changed FROM object_history('c1', 'Deployment', 'shop', 'web') ORDER BY valid_from",
    ]);
    assert_eq!(code, Some(0), "{rows}");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let versions = cli["versions"].as_array().unwrap();
    for (r, v) in rows.iter().zip(versions) {
        for key in ["change", "person", "via", "revision", "changed"] {
            assert_eq!(r[key], v[key], "{key}: {r} vs {v}");
        }
    }
    let (code, rows) = l.json(&[
        "sql",
        "SELECT person, count(*) AS n FROM changes WHERE cluster = 'c1' AND person IS NOT NULL GROUP BY person ORDER BY person",
    ]);
    assert_eq!(code, Some(0), "{rows}");
    assert_eq!(
        rows,
        json!([{"person": "alice", "n": 1}, {"person": "bob@example.com", "n": 1},
               {"person": "carol@example.com", "n": 1}, {"person": "dave", "n": 1}])
    );
    let out = l.run(&["sql", "SELECT * FROM object_history('c1', 'Deployment')"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("takes four strings"),
        "{}",
        stderr(&out)
    );
}
