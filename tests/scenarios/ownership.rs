//! Ownership markers survive ingest: every label and annotation a GitOps
//! tool claims objects with is stored as it came and still reads as a claim
//! after the round trip through redaction, canonical encoding and the log.

use std::path::Path;

use annal_ingest::pipeline;
use annal_ingest::{Format, Input};
use annal_query::asof::inventory::{self, AsOf, InventoryRow};
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

/// inventory_at over the published samples: each kind of claim gives the
/// owner, claims and flags DESIGN.md's rules say.
#[test]
fn real_fixtures_get_the_owners_the_rules_say() {
    let Some(real) = crate::conformance::fixtures_dir() else {
        eprintln!("ownership: ../shared/fixtures/real not found; skipped (CI has it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/ownership").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let files = [
        "argocd/tracking/live-pdb.yaml",
        "argocd/tracking/docs-resource-tracking-examples.yaml",
        "flux/mixed/flux2-trace-deployment.yaml",
        "flux/kustomizations/flux2-tree-kustomizations.yaml",
        "helm/helm-uninstall-test-release-manifests.yaml",
    ];
    let mut inputs: Vec<Input> = files
        .iter()
        .map(|f| Input::open(real.join(f).to_str().unwrap()).unwrap())
        .collect();
    // The PDB copied under another name keeps its tracking id: a copied
    // annotation, which must not claim the copy.
    let pdb = std::fs::read_to_string(real.join("argocd/tracking/live-pdb.yaml")).unwrap();
    let copy = pdb.replace("\n  name: myapp-pdb\n", "\n  name: myapp-pdb-copy\n");
    assert_ne!(copy, pdb);
    inputs.push(Input::reader(
        "pdb-copy.yaml",
        std::io::Cursor::new(copy.into_bytes()),
    ));
    let options = pipeline::Options {
        cluster: Some("prod".into()),
        time: Some("2026-11-01T10:00:00Z".parse().unwrap()),
        ..pipeline::Options::default()
    };
    let summary = pipeline::run(&store, inputs, Format::Auto, &options, &mut ()).unwrap();
    assert_eq!(summary.rejected, 0);

    let as_of = AsOf::new(&store, "2026-11-02T00:00:00Z".parse().unwrap(), None).unwrap();
    let rows = inventory::fleet_at(&store, Some("prod"), &as_of).unwrap();
    let find = |kind: &str, ns: &str, name: &str| {
        rows.iter()
            .find(|r| r.object.kind == kind && r.object.namespace == ns && r.object.name == name)
            .unwrap_or_else(|| panic!("{kind} {ns}/{name} not live"))
    };
    let owner = |r: &InventoryRow| {
        (
            r.owner.clone().unwrap_or_default(),
            r.owner_kind.map_or("", |m| m.as_str()).to_string(),
            r.claims.clone(),
            r.conflict,
        )
    };
    let one = |app: &str, marker: &str| {
        (
            app.to_string(),
            marker.to_string(),
            vec![app.to_string()],
            false,
        )
    };

    // Annotation tracking.
    let pdb = find("PodDisruptionBudget", "default", "myapp-pdb");
    assert_eq!(owner(pdb), one("argocd:myapp", "tracking-id"));
    assert_eq!(pdb.tracking_mismatch, None);
    // The copy: no claim, flagged with the id it carries.
    let copy = find("PodDisruptionBudget", "default", "myapp-pdb-copy");
    assert_eq!(copy.owner, None);
    assert!(copy.claims.is_empty() && !copy.conflict);
    assert_eq!(
        copy.tracking_mismatch.as_deref(),
        Some("myapp:policy/PodDisruptionBudget:default/myapp-pdb")
    );
    // Label tracking (the later document of the same Deployment wins).
    assert_eq!(
        owner(find("Deployment", "default", "my-deployment")),
        one("argocd:some-application", "instance-label")
    );
    // Flux kustomize-controller labels, and helm-controller labels.
    assert_eq!(
        owner(find("HelmRelease", "podinfo", "podinfo")),
        one("flux:flux-system/infrastructure", "flux-kustomization")
    );
    assert_eq!(
        owner(find("Deployment", "podinfo", "podinfo")),
        one("flux-helm:podinfo/podinfo", "flux-helmrelease")
    );
    // Helm's managed-by label with the release annotations.
    assert_eq!(
        owner(find("Secret", "", "kept-secret")),
        one("helm:default/keep-and-ownership", "helm")
    );
    // Listed only in a Kustomization's status.inventory.
    assert_eq!(
        owner(find("Namespace", "", "flux-system")),
        one("flux:flux-system/flux-system", "inventory")
    );
    assert_eq!(
        owner(find("Kustomization", "flux-system", "infrastructure")),
        one("flux:flux-system/flux-system", "inventory")
    );
    // Nothing claims the podinfo Namespace.
    assert_eq!(find("Namespace", "", "podinfo").owner, None);
}
