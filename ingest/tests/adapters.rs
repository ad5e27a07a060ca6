//! The format adapters on the project's own small fixtures (`testdata/`),
//! so `cargo test` checks every adapter's semantics without the shared
//! corpus.

use std::path::Path;

use annal_ingest::pipeline::{self, Decoded, Options};
use annal_ingest::Format;
use annal_schemas::{EventType, Timestamp};
use serde_json::Value;

fn decode(format: Format, file: &str, options: &Options) -> Decoded {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(file);
    let bytes = std::fs::read(&path).unwrap();
    let d = pipeline::decode_bytes(format, file, &bytes, options);
    assert!(d.rejected.is_empty(), "{file}: {:?}", d.rejected);
    d
}

fn on_cluster() -> Options {
    Options {
        cluster: Some("prod-eu1".into()),
        ..Options::default()
    }
}

fn of_type(d: &Decoded, t: EventType) -> Vec<&annal_schemas::Envelope> {
    d.events.iter().filter(|e| e.event_type == t).collect()
}

#[test]
fn audit_stages_dry_runs_failures_subresources_and_deletes() {
    let d = decode(Format::K8sAudit, "audit.jsonl", &on_cluster());
    let facts = of_type(&d, EventType::AuditRequest);
    assert_eq!(facts.len(), 8, "one fact per (auditID, stage)");
    let applied: Vec<(&str, bool)> = facts
        .iter()
        .map(|e| {
            (
                e.data["audit_id"].as_str().unwrap(),
                e.data["applied"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        applied,
        [
            ("a-create", false), // RequestReceived
            ("a-create", true),
            ("a-ssa-dry", false),
            ("a-ssa", true),
            ("a-forbidden", false),
            ("a-scale", true),
            ("a-delete", true),
            ("a-dc", true),
        ]
    );
    let dry = facts
        .iter()
        .find(|e| e.data["audit_id"] == "a-ssa-dry")
        .unwrap();
    assert_eq!(dry.data["dry_run"], true);
    let actor = dry.actor.as_ref().unwrap();
    assert_eq!(actor.field_manager.as_deref(), Some("kustomize-controller"));
    let forbidden = facts
        .iter()
        .find(|e| e.data["audit_id"] == "a-forbidden")
        .unwrap();
    assert_eq!(forbidden.data["code"], 403);
    let actor = forbidden.actor.as_ref().unwrap();
    assert_eq!(
        (actor.principal.as_deref(), actor.impersonated.as_deref()),
        (Some("system:admin"), Some("bob"))
    );
    let created = facts
        .iter()
        .find(|e| e.data["audit_id"] == "a-create" && e.data["stage"] == "ResponseComplete")
        .unwrap();
    assert!(created
        .actor
        .as_ref()
        .unwrap()
        .credential
        .as_deref()
        .unwrap()
        .starts_with("blake3:"));

    // Inventory: create + SSA patch + scale (partial) + terminating item.
    let observed = of_type(&d, EventType::ObjectObserved);
    let versions: Vec<(&str, &str)> = observed
        .iter()
        .map(|e| {
            (
                e.data["metadata"]["name"].as_str().unwrap(),
                e.data["metadata"]["resourceVersion"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("web-config", "100"),
            ("web-config", "101"),
            ("web", "200"),
            ("cm-b", "")
        ]
    );
    let scale = observed[2];
    assert_eq!(
        (
            scale.data["kind"].as_str(),
            scale.data["apiVersion"].as_str(),
            scale.data["partial"].as_str()
        ),
        (Some("Deployment"), Some("apps/v1"), Some("scale"))
    );
    assert_eq!(scale.data["spec"]["replicas"], 3);
    let deleted = of_type(&d, EventType::ObjectDeleted);
    let names: Vec<&str> = deleted
        .iter()
        .map(|e| e.data["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web-config", "cm-a"], "cm-b is held by a finalizer");
    assert_eq!(deleted[0].data["kind"], "ConfigMap");
    // One logical change per auditID: ids come from the request.
    assert!(observed[0].id.starts_with("k8s-audit:prod-eu1:a-create#"));
    assert!(d
        .events
        .iter()
        .all(|e| e.time.to_string().starts_with("2026-11-01T10:0")));
}

#[test]
fn objects_take_their_time_from_managed_fields_unless_given_and_keep_markers() {
    let d = decode(Format::K8sObject, "objects.yaml", &on_cluster());
    let observed = of_type(&d, EventType::ObjectObserved);
    assert_eq!(observed.len(), 2);
    assert_eq!(
        observed[0].time.to_string(),
        "2026-11-01T09:30:00Z",
        "newest managedFields time"
    );
    assert!(observed[0]
        .source
        .as_deref()
        .unwrap()
        .ends_with("time=managedFields"));
    assert!(observed[1]
        .source
        .as_deref()
        .unwrap()
        .ends_with("time=file-mtime"));
    let fields = &observed[0].data["metadata"]["managedFields"][0]["fieldsV1"];
    assert!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]["."]
            .is_object()
    );

    let given: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    let options = Options {
        time: Some(given),
        ..on_cluster()
    };
    let d = decode(Format::K8sObject, "objects.yaml", &options);
    assert!(d.events.iter().all(|e| e.time == given));

    let no_cluster = pipeline::decode_bytes(
        Format::K8sObject,
        "objects.yaml",
        &std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/objects.yaml"))
            .unwrap(),
        &Options::default(),
    );
    assert_eq!(no_cluster.rejected.len(), 2);
    assert!(
        no_cluster.rejected[0].reason.contains("--cluster"),
        "{}",
        no_cluster.rejected[0]
    );
    assert_eq!(no_cluster.rejected[0].line, Some(1));
    assert_eq!(
        no_cluster.rejected[1].line,
        Some(39),
        "second document starts at its --- line"
    );
}

#[test]
fn argocd_application_history_operation_inventory_health_and_cluster_secret() {
    let d = decode(Format::ArgoCd, "argocd.yaml", &on_cluster());
    let declared = of_type(&d, EventType::AppDeclared);
    assert_eq!(declared.len(), 1);
    let decl = &declared[0].data;
    assert_eq!(decl["app"], "argocd:shop");
    assert_eq!(
        declared[0].cluster.as_deref(),
        Some("prod-eu1"),
        "destination.name"
    );
    assert_eq!(decl["sources"].as_array().unwrap().len(), 2);
    assert_eq!(
        decl["sync_policy"],
        serde_json::json!({"automated": true, "prune": true, "self_heal": true})
    );

    let syncs = of_type(&d, EventType::AppSync);
    assert_eq!(syncs.len(), 3, "two history entries and the operation");
    assert_eq!(syncs[0].data["revision"], "9999aaaa");
    assert_eq!(
        syncs[0].data["revisions"],
        serde_json::json!(["9999aaaa", "18.0.0"])
    );
    let op = &syncs[2].data;
    assert_eq!(
        (op["phase"].as_str(), op["prune"].as_bool()),
        (Some("Succeeded"), Some(true))
    );
    let actions: Vec<(&str, &str)> = op["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["action"].as_str().unwrap()))
        .collect();
    assert_eq!(actions, [("web", "configured"), ("old-config", "pruned")]);

    let inventory = of_type(&d, EventType::AppInventory);
    assert_eq!(inventory[0].data["entries"].as_array().unwrap().len(), 2);
    assert_eq!(inventory[0].data["entries"][1]["group"], "");
    let health = of_type(&d, EventType::AppHealth);
    assert_eq!(health[0].data["status"], "Healthy");
    assert_eq!(
        health[0].time.to_string(),
        "2026-11-01T11:00:00Z",
        "reconciledAt"
    );

    let clusters = of_type(&d, EventType::ClusterRegistered);
    assert_eq!(clusters.len(), 1);
    let c = &clusters[0];
    assert_eq!(c.cluster.as_deref(), Some("prod-eu1"));
    assert_eq!(c.data["api_server"], "https://prod-eu1.example.com");
    assert_eq!(
        c.data["credential_fingerprint"],
        annal_ingest::redact::fingerprint(b"tok-5ecret-value")
    );
    assert_eq!(c.data["attributes"]["env"], "prod");
    let all = serde_json::to_string(&d.events).unwrap();
    assert!(
        !all.contains("tok-5ecret-value"),
        "the token never leaves redaction"
    );

    let objects = of_type(&d, EventType::ObjectObserved);
    let kinds: Vec<&str> = objects
        .iter()
        .map(|e| e.data["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Application", "Secret", "AppProject"]);
}

#[test]
fn flux_inventory_ids_split_into_four_parts_and_conditions_drive_sync_and_health() {
    let d = decode(Format::Flux, "flux.yaml", &on_cluster());
    let inventory = of_type(&d, EventType::AppInventory);
    assert_eq!(inventory.len(), 1);
    let entries: Vec<(String, String, String, String)> = inventory[0].data["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("namespace"), s("name"), s("group"), s("kind"))
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("".into(), "shop".into(), "".into(), "Namespace".into()),
            (
                "shop".into(),
                "web".into(),
                "apps".into(),
                "Deployment".into()
            ),
            ("shop".into(), "web".into(), "".into(), "Service".into()),
            (
                "".into(),
                "shop-admin".into(),
                "rbac.authorization.k8s.io".into(),
                "ClusterRole".into()
            ),
        ]
    );
    let apps: Vec<&str> = of_type(&d, EventType::AppHealth)
        .iter()
        .map(|e| e.data["status"].as_str().unwrap())
        .collect();
    assert_eq!(apps, ["Healthy", "Degraded"]);
    let helm_syncs: Vec<(&str, &str)> = of_type(&d, EventType::AppSync)
        .iter()
        .filter(|e| e.data["app"] == "flux-helm:shop/web")
        .map(|e| {
            (
                e.data["phase"].as_str().unwrap(),
                e.data["revision"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        helm_syncs,
        [("Failed", ""), ("Failed", "1.2.0"), ("Succeeded", "1.1.0")]
    );

    let mut bad =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/flux.yaml"))
            .unwrap();
    bad = bad.replace("shop_web_apps_Deployment", "shop_web_Deployment");
    let d = pipeline::decode_bytes(Format::Flux, "flux.yaml", bad.as_bytes(), &on_cluster());
    assert_eq!(d.rejected.len(), 1);
    assert!(
        d.rejected[0]
            .reason
            .contains("status.inventory.entries[1].id"),
        "{}",
        d.rejected[0]
    );

    let d = decode(Format::Flux, "flux-events.jsonl", &on_cluster());
    let kinds: Vec<&str> = d.events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(kinds, ["k8s.event", "app.sync", "app.health"]);
    assert_eq!(
        d.events[1].data["revision"],
        "main@sha1:0123456789abcdef0123456789abcdef01234567"
    );
}

#[test]
fn fleet_bundle_deployments_belong_to_the_cluster_in_their_label() {
    let d = decode(Format::Fleet, "fleet.yaml", &Options::default());
    let kinds: Vec<(&str, Option<&str>)> = d
        .events
        .iter()
        .map(|e| (e.event_type.as_str(), e.cluster.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("app.sync", Some("prod-eu2")),
            ("app.inventory", Some("prod-eu2")),
            ("app.health", Some("prod-eu2"))
        ]
    );
    assert_eq!(d.events[0].data["phase"], "Succeeded");
    assert_eq!(
        d.events[0].data["revision"],
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    );
    assert_eq!(d.events[2].data["status"], "Healthy");
    assert_eq!(
        d.skipped.values().sum::<u64>(),
        1,
        "the object itself needs --cluster"
    );
}

#[test]
fn both_event_apis_map_to_one_shape() {
    let d = decode(Format::K8sEvent, "events.yaml", &on_cluster());
    assert_eq!(d.events.len(), 2);
    let core = &d.events[0].data;
    assert_eq!(core["involved"]["kind"], "Deployment");
    assert_eq!(core["involved"]["group"], "apps");
    assert_eq!(core["reporting_controller"], "deployment-controller");
    assert_eq!(
        (core["count"].as_u64(), core["last_time"].as_str()),
        (Some(4), Some("2026-11-01T09:10:00Z"))
    );
    let new = &d.events[1].data;
    assert_eq!(new["message"], "Back-off restarting failed container");
    assert_eq!(
        (new["count"].as_u64(), new["reporting_instance"].as_str()),
        (Some(7), Some("node-1"))
    );
    assert_eq!(
        d.events[1].time.to_string(),
        "2026-11-01T09:25:00Z",
        "series.lastObservedTime"
    );
}

#[test]
fn auto_detects_every_fixture_and_ids_are_stable_across_runs() {
    let mut all = Vec::new();
    for file in [
        "audit.jsonl",
        "objects.yaml",
        "argocd.yaml",
        "flux.yaml",
        "fleet.yaml",
        "events.yaml",
        "flux-events.jsonl",
    ] {
        let first = decode(Format::Auto, file, &on_cluster());
        let second = decode(Format::Auto, file, &on_cluster());
        let ids = |d: &Decoded| d.events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&first), ids(&second), "{file}");
        assert!(!first.events.is_empty(), "{file}");
        all.extend(first.events);
    }
    let mut ids: Vec<&str> = all.iter().map(|e| e.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "ids are distinct across facts");

    // An explicit format refuses another format's documents, with a hint.
    let bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/events.yaml")).unwrap();
    let d = pipeline::decode_bytes(Format::K8sAudit, "events.yaml", &bytes, &on_cluster());
    assert_eq!(d.rejected.len(), 2);
    assert!(
        d.rejected[0].reason.contains("try --format k8s-event"),
        "{}",
        d.rejected[0]
    );
}

#[test]
fn the_same_object_in_json_or_yaml_gets_the_same_id() {
    let yaml =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\ndata:\n  k: v\n";
    let json = r#"{"kind":"ConfigMap","data":{"k":"v"},"metadata":{"namespace":"b","name":"a"},"apiVersion":"v1"}"#;
    let a = pipeline::decode_bytes(Format::Auto, "a.yaml", yaml.as_bytes(), &on_cluster());
    let b = pipeline::decode_bytes(Format::Auto, "b.json", json.as_bytes(), &on_cluster());
    assert_eq!(a.events[0].id, b.events[0].id);
    let v: &Value = &a.events[0].data;
    assert_eq!(v["data"]["k"], "v");
}

#[test]
fn rejection_messages_never_quote_a_secret() {
    let line = r#"{"schema":"annal.event/v1","id":"h1","type":"app.health","time":"2026-11-01T10:00:00Z","cluster":"c","data":{"app":"a","status":"Bearer s3cr3t-t0ken-value"}}"#;
    let d = pipeline::decode_bytes(
        Format::Envelope,
        "h.jsonl",
        line.as_bytes(),
        &Options::default(),
    );
    assert_eq!(d.rejected.len(), 1);
    let r = &d.rejected[0];
    assert!(r.reason.contains("data.status"), "{r}");
    assert!(
        !r.reason.contains("s3cr3t") && !String::from_utf8_lossy(&r.raw).contains("s3cr3t"),
        "{r}"
    );
}

#[test]
fn auto_reads_envelopes_as_the_envelope_format_does() {
    // `--format auto` tries each JSON record as an envelope first; what it
    // keeps, redacts and rejects must be what `--format envelope` does.
    let lines = [
        r#"{"schema":"annal.event/v1","id":"a1","type":"app.health","time":"2026-11-01T10:00:00Z","cluster":"c","data":{"app":"a","status":"Healthy"}}"#,
        r#"{"schema":"annal.event/v1","id":"a2","type":"object.observed","time":"2026-11-01T10:00:01Z","cluster":"c","data":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"n"},"data":{"token":"c2VjcmV0LXZhbHVl"}}}"#,
        r#"{"schema":"annal.event/v1","id":"a3","type":"app.health","time":"2026-11-01T10:00:02Z","cluster":"c","extra":1,"data":{"app":"a"}}"#,
        r#"{"schema":"annal.event/v1","id":"a4","type":"app.health","time":"yesterday","cluster":"c","data":{"app":"a"}}"#,
        r#"{"schema":"annal.event/v1","id":"a5","type":"app.health","time":"2026-11-01T10:00:03Z","cluster":"c","data":{"app":"a","status":"Bearer s3cr3t-t0ken-value"}}"#,
    ];
    let text = lines.join("\n");
    let auto = pipeline::decode_bytes(
        Format::Auto,
        "e.jsonl",
        text.as_bytes(),
        &Options::default(),
    );
    let envelope = pipeline::decode_bytes(
        Format::Envelope,
        "e.jsonl",
        text.as_bytes(),
        &Options::default(),
    );
    let kept = |d: &Decoded| {
        d.events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(kept(&auto), kept(&envelope));
    let ids: Vec<&str> = auto.events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a1", "a2"]);
    let all = kept(&auto).join("\n");
    assert!(
        !all.contains("c2VjcmV0LXZhbHVl") && !all.contains("s3cr3t"),
        "{all}"
    );
    let lines_of = |d: &Decoded| d.rejected.iter().map(|r| r.line).collect::<Vec<_>>();
    assert_eq!(lines_of(&auto), [Some(3), Some(4), Some(5)]);
    assert_eq!(lines_of(&auto), lines_of(&envelope));
    assert!(
        auto.rejected[0].reason.contains("extra"),
        "{}",
        auto.rejected[0]
    );
    assert!(
        auto.rejected[1].reason.contains("time"),
        "{}",
        auto.rejected[1]
    );
    let r = &auto.rejected[2];
    assert!(r.reason.contains("data.status"), "{r}");
    assert!(!format!("{r:?}").contains("s3cr3t"), "{r}");
}

#[test]
fn a_list_larger_than_the_streaming_threshold_ingests_item_by_item() {
    // An API-server style typed list (kind before items, items without
    // kind), pretty-printed, past STREAM_LIST_BYTES.
    let n = 40_000;
    let mut text = String::from("{\n  \"kind\": \"ConfigMapList\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\"resourceVersion\": \"9\"},\n  \"items\": [\n");
    for i in 0..n {
        if i > 0 {
            text.push_str(",\n");
        }
        text.push_str(&format!(
            "    {{\"metadata\": {{\"name\": \"cm-{i}\", \"namespace\": \"bulk\", \"resourceVersion\": \"{i}\"}}, \"data\": {{\"payload\": \"{}\"}}}}",
            "x".repeat(200)
        ));
    }
    text.push_str("\n  ]\n}\n");
    assert!(text.len() > annal_ingest::STREAM_LIST_BYTES);
    let d = pipeline::decode_bytes(Format::Auto, "bulk.json", text.as_bytes(), &on_cluster());
    assert!(d.rejected.is_empty(), "{:?}", d.rejected.first());
    assert_eq!(d.events.len(), n);
    assert!(d
        .events
        .iter()
        .all(|e| e.data["kind"] == "ConfigMap" && e.data["apiVersion"] == "v1"));
    assert_eq!(
        d.events[n - 1].data["metadata"]["name"],
        format!("cm-{}", n - 1)
    );
    assert!(
        d.events[7]
            .source
            .as_deref()
            .unwrap()
            .contains("bulk.json:13 items[7]"),
        "{:?}",
        d.events[7].source
    );
}

/// Typed lists whose items carry no kind take it from the list, and a
/// GitOps list written with the generic `v1` still holds that tool's
/// kind: nothing with a name is skipped for lack of a kind.
/// See: issue 21 (Lists whose items carry no kind).
#[test]
fn typed_lists_give_their_items_kind_and_group() {
    let d = decode(Format::Auto, "typed-lists.yaml", &on_cluster());
    assert!(d.skipped.is_empty(), "{:?}", d.skipped);
    let mut declared: Vec<&str> = of_type(&d, EventType::AppDeclared)
        .iter()
        .filter_map(|e| e.data["app"].as_str())
        .collect();
    declared.sort();
    assert_eq!(
        declared,
        [
            "argocd:shop",
            "flux-helm:cache/redis",
            "flux:flux-system/apps"
        ]
    );
    let apps: Vec<&str> = d
        .events
        .iter()
        .filter(|e| e.event_type == EventType::AppInventory)
        .filter_map(|e| e.data["app"].as_str())
        .collect();
    assert_eq!(
        apps,
        ["flux:flux-system/apps"],
        "the v1 KustomizationList is Flux's"
    );
    let kinds: Vec<&str> = d
        .events
        .iter()
        .filter(|e| e.event_type == EventType::ObjectObserved)
        .filter_map(|e| e.data["kind"].as_str())
        .collect();
    for kind in ["Application", "Kustomization", "HelmRelease"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let events = of_type(&d, EventType::KubeEvent);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data["reason"], "ScalingReplicaSet");
}

/// A cloud export of any size is read in constant memory: an Event Hub
/// batch's `records` and `filter-log-events`' `events` are streamed item by
/// item past the threshold, and decode to exactly what the whole document
/// does. See: issue 21.
#[test]
fn cloud_export_arrays_stream_like_lists() {
    for (file, key) in [
        ("cloud-audit/aks-eventhub.json", "records"),
        ("cloud-audit/eks-filter-log-events.json", "events"),
    ] {
        let whole = decode(Format::Auto, file, &on_cluster());
        let streamed = decode(
            Format::Auto,
            file,
            &Options {
                stream_lists_over: 64,
                ..on_cluster()
            },
        );
        assert_eq!(whole.events.len(), 8, "{file}");
        assert_eq!(whole.skipped, streamed.skipped, "{file}");
        let strip = |d: &Decoded| -> Vec<Value> {
            d.events
                .iter()
                .map(|e| {
                    let mut v = serde_json::to_value(e).unwrap();
                    v.as_object_mut().unwrap().remove("source");
                    v
                })
                .collect()
        };
        assert_eq!(strip(&whole), strip(&streamed), "{file}");
        // Each streamed record is named by its place in the export.
        assert!(
            streamed.events.iter().all(|e| e
                .source
                .as_deref()
                .unwrap()
                .contains(&format!(" {key}["))),
            "{file}: {:?}",
            streamed.events[0].source
        );
    }
}

/// A GKE entry of a non-resource request (`/version`) is the request, with
/// its path as the URI and no object. See: issue 21.
#[test]
fn gke_non_resource_requests_are_recorded_with_their_path() {
    let entry = r#"{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"alice@example.com"},"methodName":"io.k8s.get","resourceName":"version","serviceName":"k8s.io"},"insertId":"a1","operation":{"id":"a1","producer":"k8s.io","first":true,"last":true},"resource":{"type":"k8s_cluster","labels":{"cluster_name":"gke-1"}},"timestamp":"2026-11-03T09:10:06Z","logName":"projects/p/logs/cloudaudit.googleapis.com%2Fdata_access"}"#;
    let d = pipeline::decode_bytes(
        Format::GkeAudit,
        "gke.json",
        entry.as_bytes(),
        &Options::default(),
    );
    assert!(d.rejected.is_empty(), "{:?}", d.rejected);
    assert_eq!(d.events.len(), 1);
    let e = &d.events[0];
    assert_eq!(e.cluster.as_deref(), Some("gke-1"));
    assert_eq!(e.id, "k8s-audit:gke-1:a1:ResponseComplete");
    assert_eq!(e.data["request_uri"], "/version");
    assert_eq!(e.data["verb"], "get");
    assert_eq!(e.data["applied"], false);
}
