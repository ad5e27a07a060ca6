//! The read API through the router: SQL as JSON and as an Arrow stream,
//! inventory with both clocks, and 400s that name the problem.

use std::sync::Arc;

use annal_query::sql::http::ARROW_STREAM;
use annal_schemas::Envelope;
use annal_store::Store;
use axum::body::{to_bytes, Body};
use axum::http::{header, Request, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use tower::ServiceExt;

/// Every read route of this crate, merged as `annal serve` merges them.
fn router(store: Arc<Store>, limits: annal_query::sql::Limits, max_queries: usize) -> Router {
    Router::new()
        .merge(annal_query::sql::http::router(
            store.clone(),
            limits,
            max_queries,
        ))
        .merge(annal_query::asof::http::router(store.clone()))
        .merge(annal_query::recovery::http::router(store.clone()))
        .merge(annal_query::proof::http::router(store))
}

fn store() -> (tempfile::TempDir, Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/http").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let object = |id: &str, cluster: &str, name: &str, app: &str| {
        Envelope::from_value(json!({"schema": "annal.event/v1", "id": id, "type": "object.observed",
            "time": "2026-11-01T10:00:00Z", "cluster": cluster,
            "data": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns",
                "annotations": {"argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:ns/{name}")}}}}))
        .unwrap()
    };
    store
        .append(vec![
            object("a", "c1", "one", "shop"),
            object("b", "c1", "two", "blog"),
            object("c", "c2", "three", "shop"),
        ])
        .unwrap();
    (dir, Arc::new(store))
}

async fn send(store: &Arc<Store>, req: Request<Body>) -> (StatusCode, Vec<u8>) {
    let res = router(store.clone(), annal_query::sql::Limits::default(), 4)
        .oneshot(req)
        .await
        .unwrap();
    let status = res.status();
    (
        status,
        to_bytes(res.into_body(), 1 << 20).await.unwrap().to_vec(),
    )
}

fn post_sql(body: &str, content_type: &str, accept: &str) -> Request<Body> {
    Request::post("/v1/sql")
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, accept)
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn sql_answers_json_or_an_arrow_stream() {
    let (_dir, store) = store();
    let q = "SELECT cluster, count(*) AS n FROM inventory_at('2026-11-02T00:00:00Z') GROUP BY cluster ORDER BY cluster";
    let (status, body) = send(&store, post_sql(q, "text/plain", "application/json")).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["columns"][0]["name"], "cluster");
    assert_eq!(
        answer["rows"],
        json!([{"cluster": "c1", "n": 2}, {"cluster": "c2", "n": 1}])
    );

    let as_json = json!({"query": q}).to_string();
    let (status, body) = send(&store, post_sql(&as_json, "application/json", ARROW_STREAM)).await;
    assert_eq!(status, StatusCode::OK);
    let reader =
        datafusion::arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(body), None)
            .unwrap();
    assert_eq!(reader.schema().field(1).name(), "n");
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 2);
}

#[tokio::test]
async fn bad_requests_are_400_and_say_why() {
    let (_dir, store) = store();
    for (body, content_type, expect) in [
        ("SELECT * FROM nowhere", "text/plain", "nowhere"),
        ("{\"q\": 1}", "application/json", "query"),
        ("   ", "text/plain", "no query"),
        (
            "SELECT * FROM inventory_at('soon')",
            "text/plain",
            "inventory_at",
        ),
    ] {
        let (status, out) = send(&store, post_sql(body, content_type, "*/*")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let error: Value = serde_json::from_slice(&out).unwrap();
        assert!(
            error["error"].as_str().unwrap().contains(expect),
            "{body}: {error}"
        );
    }
    let get = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
    let (status, out) = send(&store, get("/v1/inventory?at=yesterday")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&out).contains("at=\\\"yesterday\\\""));
    let (status, _) = send(&store, get("/v1/inventory?colour=red")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn inventory_filters_by_cluster_owner_and_clock() {
    let (_dir, store) = store();
    let get = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
    let (status, body) = send(
        &store,
        get("/v1/inventory?at=2026-11-02T00:00:00Z&cluster=c1"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["at"], "2026-11-02T00:00:00Z");
    let rows = doc["objects"].as_array().unwrap().clone();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["one", "two"]);
    assert_eq!(rows[0]["owner"], "argocd:shop");
    assert_eq!(rows[0]["claims"], json!(["argocd:shop"]));

    let (_, body) = send(
        &store,
        get("/v1/inventory?at=2026-11-02T00:00:00Z&owner=argocd:shop"),
    )
    .await;
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["objects"].as_array().unwrap().len(), 2);
    // Before the objects' valid time, nothing was live.
    let (_, body) = send(&store, get("/v1/inventory?at=2026-11-01T09:00:00Z")).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["objects"],
        json!([])
    );
    let (_, body) = send(
        &store,
        get("/v1/inventory?at=2026-11-02T00:00:00Z&known_at=2000-01-01T00:00:00Z"),
    )
    .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["objects"],
        json!([])
    );
}

async fn get_json(store: &Arc<Store>, uri: &str) -> (StatusCode, Value) {
    let (status, body) = send(store, Request::get(uri).body(Body::empty()).unwrap()).await;
    (status, serde_json::from_slice(&body).unwrap())
}

async fn post_json(store: &Arc<Store>, uri: &str, body: &str) -> (StatusCode, Value) {
    let req = Request::post(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, body) = send(store, req).await;
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn the_recovery_gates_answer_over_http_with_their_verdicts() {
    let (_dir, store) = store();
    let at = "at=2026-11-02T00:00:00Z";

    // The store's clusters are silent long before `at`: stale, which the
    // plan says and which needs approval unless allowed.
    let (status, plan) = get_json(
        &store,
        &format!("/v1/takeover-plan?controller=new&apps=argocd:shop&{at}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(plan["needs_approval"], true);
    assert_eq!(plan["stale_clusters"][0]["cluster"], "c1");
    let (_, plan) = get_json(
        &store,
        &format!("/v1/takeover-plan?controller=new&apps=argocd:shop&{at}&allow_stale=true"),
    )
    .await;
    assert_eq!(plan["needs_approval"], false);
    assert_eq!(plan["objects"].as_array().unwrap().len(), 2);

    // The app's manifests keep nothing on c1: `one` would be pruned.
    let uri =
        format!("/v1/prune-plan?app=argocd:shop&cluster=c1&namespace=ns&{at}&allow_stale=true");
    let (status, plan) = post_json(&store, &uri, "[]").await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(plan["prune"][0]["name"], "one");
    assert_eq!(plan["needs_approval"], false);
    let keep = r#"{"kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}}]}"#;
    let (_, plan) = post_json(&store, &uri, keep).await;
    assert_eq!(
        plan["prune"],
        json!([]),
        "`one` in the default namespace is desired"
    );
    let (_, plan) = post_json(&store, &format!("{uri}&max_deletions=0"), "[]").await;
    assert_eq!(plan["needs_approval"], true);
    let (status, err) = post_json(&store, &uri, r#"[{"kind": "ConfigMap"}]"#).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("object 0: no apiVersion"),
        "{err}"
    );

    // No registry: a selector picks nothing, which needs approval.
    let (status, d) = get_json(&store, &format!("/v1/placement/diff?selector=environment%3Dprod&proposed_selector=environment%3Dstaging&{at}")).await;
    assert_eq!(status, StatusCode::OK, "{d}");
    assert_eq!(d["needs_approval"], true);

    // No fence recorded and no `since`: the request is wrong.
    let (status, _) = get_json(&store, "/v1/fence/check?controller=argocd-old").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, f) = get_json(
        &store,
        &format!("/v1/fence/check?controller=argocd-old&since=2026-11-01T00:00:00Z&{at}"),
    )
    .await;
    assert_eq!((status, &f["holds"]), (StatusCode::OK, &json!(true)));

    let (status, b) = post_json(&store, &format!("/v1/backup/check?{at}"), "[]").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(b["flags"][0]["code"], "empty");

    let (status, r) = get_json(&store, &format!("/v1/rollout/regressions?{at}")).await;
    assert_eq!((status, r), (StatusCode::OK, json!([])));
    let (status, r) = get_json(&store, &format!("/v1/rollout/status?revision=A&{at}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(r["cohorts"], json!([]));
}

async fn send_with(
    store: &Arc<Store>,
    limits: annal_query::sql::Limits,
    req: Request<Body>,
) -> (StatusCode, Value) {
    let res = router(store.clone(), limits, 4).oneshot(req).await.unwrap();
    let status = res.status();
    let body = to_bytes(res.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn sql_that_is_not_a_query_is_403_with_a_stable_code() {
    let (_dir, store) = store();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("x.csv");
    let copy = format!("COPY (SELECT 1 AS a) TO '{}'", file.display());
    for (body, statement) in [
        (copy.as_str(), "COPY"),
        ("CREATE TABLE t AS SELECT 1", "CREATE TABLE"),
        ("SET datafusion.execution.target_partitions = 64", "SET"),
    ] {
        let as_json = json!({ "query": body }).to_string();
        let (status, error) = send_with(
            &store,
            Default::default(),
            post_sql(&as_json, "application/json", "*/*"),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}: {error}");
        assert_eq!(error["code"], "not_allowed");
        let reason = error["error"].as_str().unwrap();
        assert!(
            reason.starts_with(&format!(
                "{statement} is not allowed: annal's SQL is read-only"
            )),
            "{reason}"
        );
    }
    assert!(!file.exists());
    // An Arrow answer is planned, and refused, the same way.
    let (status, error) = send_with(
        &store,
        Default::default(),
        post_sql(&copy, "text/plain", ARROW_STREAM),
    )
    .await;
    assert_eq!(
        (status, &error["code"]),
        (StatusCode::FORBIDDEN, &json!("not_allowed"))
    );
    assert!(!file.exists());
}

#[tokio::test]
async fn json_answers_are_capped_and_say_so_and_arrow_streams_every_row() {
    let (_dir, store) = store();
    let limits = || annal_query::sql::Limits {
        max_json_rows: 1000,
        ..Default::default()
    };
    let q = "SELECT value FROM generate_series(1, 2500)";
    let (status, answer) = send_with(&store, limits(), post_sql(q, "text/plain", "*/*")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["rows"].as_array().unwrap().len(), 1000);
    assert_eq!(answer["truncated"], true);
    assert_eq!(answer["row_limit"], 1000);
    assert!(answer["note"].as_str().unwrap().contains("1000 rows"));
    // Exactly at the cap is not cut.
    let q = "SELECT value FROM generate_series(1, 1000)";
    let (_, answer) = send_with(&store, limits(), post_sql(q, "text/plain", "*/*")).await;
    assert_eq!(answer["rows"].as_array().unwrap().len(), 1000);
    assert!(answer.get("truncated").is_none(), "{}", answer["truncated"]);

    let q = "SELECT value FROM generate_series(1, 250000)";
    let res = router(store.clone(), limits(), 4)
        .oneshot(post_sql(q, "text/plain", ARROW_STREAM))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body = to_bytes(res.into_body(), 64 << 20).await.unwrap();
    let reader =
        datafusion::arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(body), None)
            .unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 250_000);
}

#[tokio::test]
async fn a_query_over_its_memory_is_413_and_the_next_one_answers() {
    let (_dir, store) = store();
    let limits = || annal_query::sql::Limits {
        memory_bytes: 16 << 20,
        ..Default::default()
    };
    let big = "SELECT (v * 48271) % 2147483647 AS k, count(*) FROM generate_series(1, 2000000) AS t(v) GROUP BY k";
    for accept in ["*/*", ARROW_STREAM] {
        let (status, error) =
            send_with(&store, limits(), post_sql(big, "text/plain", accept)).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{error}");
        assert_eq!(error["code"], "memory_limit");
        assert!(
            error["error"].as_str().unwrap().contains("16 MiB"),
            "{error}"
        );
    }
    let (status, answer) = send_with(
        &store,
        limits(),
        post_sql("SELECT count(*) AS n FROM events", "text/plain", "*/*"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["rows"][0]["n"], 3);
}

#[tokio::test]
async fn more_queries_than_the_server_runs_are_429_with_retry_after() {
    let (_dir, store) = store();
    let app = router(store.clone(), Default::default(), 1);
    // An Arrow answer holds its slot until its body is read to the end.
    let held = app
        .clone()
        .oneshot(post_sql(
            "SELECT value FROM generate_series(1, 1000000)",
            "text/plain",
            ARROW_STREAM,
        ))
        .await
        .unwrap();
    assert_eq!(held.status(), StatusCode::OK);
    let busy = app
        .clone()
        .oneshot(post_sql("SELECT 1", "text/plain", "*/*"))
        .await
        .unwrap();
    assert_eq!(busy.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(busy.headers()[header::RETRY_AFTER], "1");
    let error: Value =
        serde_json::from_slice(&to_bytes(busy.into_body(), 1 << 20).await.unwrap()).unwrap();
    assert_eq!(error["code"], "busy");
    // Reading the held answer to its end frees the slot.
    to_bytes(held.into_body(), 64 << 20).await.unwrap();
    let again = app
        .oneshot(post_sql("SELECT 1", "text/plain", "*/*"))
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}
