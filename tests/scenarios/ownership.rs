//! Ownership markers survive ingest: every label and annotation a GitOps
//! tool claims objects with is stored as it came and still reads as a claim
//! after the round trip through redaction, canonical encoding and the log.

use std::path::Path;

use annal_ingest::pipeline;
use annal_ingest::{Format, Input};
use annal_schemas::data::KubeObject;
use annal_schemas::ownership;
use annal_schemas::EventType;
use annal_store::Store;

#[test]
fn every_ownership_marker_is_stored_and_still_claims() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/ownership").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ingest/testdata");
    let inputs = ["objects.yaml", "audit.jsonl"]
        .iter()
        .map(|f| Input::open(testdata.join(f).to_str().unwrap()).unwrap())
        .collect();
    let options = pipeline::Options {
        cluster: Some("prod-eu1".into()),
        ..pipeline::Options::default()
    };
    let summary = pipeline::run(&store, inputs, Format::Auto, &options, &mut ()).unwrap();
    assert_eq!(summary.rejected, 0);

    let mut claims = Vec::new();
    for entry in store.entries(0, store.size()) {
        let event = entry.unwrap().event;
        if event.event_type != EventType::ObjectObserved {
            continue;
        }
        let obj: KubeObject = serde_json::from_value(event.data).unwrap();
        let m = ownership::of_object(&obj);
        assert_eq!(m.tracking_mismatch, None);
        for c in m.claims {
            claims.push(format!(
                "{}/{}: {} ({})",
                obj.kind,
                obj.metadata.name,
                c.owner,
                c.marker.as_str()
            ));
        }
    }
    claims.sort();
    claims.dedup();
    assert_eq!(
        claims,
        [
            "ConfigMap/web-config: argocd:shop (instance-label)",
            "Deployment/web: argocd:shop (tracking-id)",
            "Deployment/web: flux:flux-system/apps (flux-kustomization)",
            "Service/web: fleet:fleet-default/shop-web (fleet)",
            "Service/web: flux-helm:shop/web (flux-helmrelease)",
            "Service/web: helm:shop/web (helm)",
        ]
    );
}
