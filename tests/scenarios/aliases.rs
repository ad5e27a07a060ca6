//! Argo CD cluster identity over the published samples: Applications that
//! target `destination.server: https://localhost:6443` and the cluster
//! Secret that registers that server as `minikube` are one cluster, and a
//! later registration of the same server under another name moves the
//! alias from then on.
//! See: issue 20 (Argo CD cluster identity).

use annal_ingest::{pipeline, Format, Input};
use annal_query::asof::inventory::AsOf;
use annal_query::asof::revisions;
use annal_query::recovery::rollout;
use annal_schemas::Envelope;
use annal_store::Store;
use serde_json::json;

const SERVER: &str = "https://localhost:6443";

fn envelope(id: &str, kind: &str, time: &str, cluster: &str, data: serde_json::Value) -> Envelope {
    let e = json!({"schema": "annal.event/v1", "id": id, "type": kind, "time": time,
                   "cluster": cluster, "data": data});
    Envelope::parse(e.to_string().as_bytes()).unwrap()
}

#[test]
fn applications_that_target_a_server_url_count_under_the_registered_cluster() {
    let Some(real) = crate::conformance::fixtures_dir() else {
        eprintln!("aliases: ../shared/fixtures/real not found; skipped (CI has it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/aliases").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let files = [
        "argocd/cluster-secrets/appcontroller-test-cluster-secret.yaml",
        "argocd/applications/appcontroller-test-apps.yaml",
    ];
    let inputs: Vec<Input> = files
        .iter()
        .map(|f| Input::open(real.join(f).to_str().unwrap()).unwrap())
        .collect();
    let options = pipeline::Options {
        cluster: Some("hub".into()),
        time: Some("2026-11-01T09:00:00Z".parse().unwrap()),
        ..pipeline::Options::default()
    };
    let summary = pipeline::run(&store, inputs, Format::ArgoCd, &options, &mut ()).unwrap();
    assert_eq!(summary.rejected, 0);
    // The samples' sync (2018, revision aaaa…) became healthy; later the
    // server is registered again as minikube-2, and revision bbbb syncs.
    let aaaa = "a".repeat(40);
    store
        .append(vec![
            envelope(
                "health-1",
                "app.health",
                "2018-09-21T23:51:00Z",
                SERVER,
                json!({"app": "argocd:my-app", "status": "Healthy", "revision": aaaa}),
            ),
            envelope(
                "reregistered",
                "cluster.registered",
                "2026-11-01T12:00:00Z",
                "minikube-2",
                json!({"display_name": "minikube-2", "api_server": SERVER}),
            ),
            envelope(
                "sync-2",
                "app.sync",
                "2026-11-01T13:00:00Z",
                SERVER,
                json!({"app": "argocd:my-app", "controller": "argocd", "phase": "Succeeded",
                            "revision": "bbbb"}),
            ),
            envelope(
                "health-2",
                "app.health",
                "2026-11-01T13:01:00Z",
                SERVER,
                json!({"app": "argocd:my-app", "status": "Healthy", "revision": "bbbb"}),
            ),
        ])
        .unwrap();

    let all = revisions::intervals(&store, None, store.size()).unwrap();
    let got: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|g| (g.cluster.as_str(), g.app.as_str(), g.revision.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("minikube", "argocd:my-app", aaaa.as_str()),
            ("minikube-2", "argocd:my-app", "bbbb"),
        ],
        "no interval is kept under the server URL"
    );
    // Asked for one cluster, its URL's events are found too.
    let one = revisions::intervals(&store, Some("minikube"), store.size()).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].revision, aaaa);

    // The rollout of bbbb counts (app, minikube-2) as done.
    let as_of = AsOf::new(&store, "2026-11-01T14:00:00Z".parse().unwrap(), None).unwrap();
    let status = rollout::status(&store, "bbbb", Some("argocd:my-app"), "wave", &as_of).unwrap();
    let succeeded: u64 = status.cohorts.iter().map(|c| c.succeeded).sum();
    let waiting: Vec<&String> = status
        .cohorts
        .iter()
        .flat_map(|c| &c.waiting_clusters)
        .collect();
    assert_eq!(succeeded, 1, "{status:?}");
    assert!(
        waiting.iter().all(|c| c.as_str() != SERVER),
        "the URL is no cluster of its own: {waiting:?}"
    );
}
