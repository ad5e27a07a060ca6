//! The timeline's buckets against a naive model: every event put in its
//! bucket by hand, for random ledgers, windows and filters (cluster,
//! actor, marks), through both paths (the type index alone, and the
//! leaves a filter selects); and the notable list is the latest notable
//! events, newest first.

use std::collections::BTreeMap;

use annal_query::timeline::{self, Mark, TimelineQuery};
use annal_schemas::{Envelope, Timestamp};
use annal_store::Store;
use proptest::prelude::*;
use serde_json::json;

#[derive(Clone, Debug)]
struct Ev {
    /// 0 observed, 1 deleted, 2 sync, 3 pruning sync, 4 failed sync,
    /// 5 credential revoked, 6 fence, 7 heartbeat.
    kind: u8,
    cluster: u8,
    minute: u32,
    who: Option<u8>,
}

fn ev() -> impl Strategy<Value = Ev> {
    (0u8..8, 0u8..3, 0u32..600, proptest::option::of(0u8..3)).prop_map(
        |(kind, cluster, minute, who)| Ev {
            kind,
            cluster,
            minute,
            who,
        },
    )
}

const START: i64 = 1_793_491_200; // 2026-11-01T00:00:00Z

fn time(minute: u32) -> String {
    Timestamp::from_unix_micros((START + i64::from(minute) * 60) * 1_000_000)
        .unwrap()
        .to_string()
}

fn envelope(n: usize, e: &Ev) -> Envelope {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("m{n}"), "namespace": "d"}});
    let sync = |phase: &str, action: &str| {
        json!({"app": "argocd:a", "phase": phase, "revision": "r",
            "resources": [{"kind": "ConfigMap", "name": "m", "action": action}]})
    };
    let (ty, data) = match e.kind {
        0 => ("object.observed", object),
        1 => ("object.deleted", object),
        2 => ("app.sync", sync("Succeeded", "configured")),
        3 => ("app.sync", sync("Succeeded", "pruned")),
        4 => ("app.sync", sync("Failed", "configured")),
        5 => (
            "cluster.credential.revoked",
            json!({"principal": "p", "fingerprint": "fp1"}),
        ),
        6 => ("controlplane.fenced", json!({"controller": "argocd-old"})),
        _ => ("cluster.heartbeat", json!({"agent": "a"})),
    };
    let mut v = json!({"schema": "annal.event/v1", "id": format!("e{n}"), "type": ty,
        "time": time(e.minute), "cluster": format!("c{}", e.cluster), "data": data});
    if let Some(w) = e.who {
        v["actor"] = json!({"principal": format!("user{w}")});
    }
    Envelope::from_value(v).unwrap()
}

fn mark(e: &Ev) -> Mark {
    match e.kind {
        0 => Mark::Observed,
        1 => Mark::Deletion,
        2 => Mark::Sync,
        3 => Mark::Prune,
        4 => Mark::FailedSync,
        5 => Mark::Credential,
        6 => Mark::Fence,
        _ => Mark::Other,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn buckets_hold_what_a_naive_count_holds(
        events in proptest::collection::vec(ev(), 1..120),
        window in (0u32..500, 1u32..700),
        cluster in proptest::option::of(0u8..3),
        actor in proptest::option::of(0u8..3),
        marks in proptest::sample::subsequence(Mark::ALL.to_vec(), 0..4),
        buckets in 1usize..50,
    ) {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/timeline").unwrap();
        let store = Store::open(dir.path()).unwrap();
        let all: Vec<Envelope> = events.iter().enumerate().map(|(n, e)| envelope(n, e)).collect();
        store.append(all).unwrap();

        let (from_minute, length) = window;
        let to_minute = from_minute + length;
        let q = TimelineQuery {
            from: time(from_minute).parse().unwrap(),
            to: time(to_minute).parse().unwrap(),
            cluster: cluster.map(|c| format!("c{c}")),
            app: None,
            actor: actor.map(|a| format!("user{a}")),
            marks: marks.clone(),
            buckets,
        };
        let t = timeline::timeline(&store, &q).unwrap();

        // The model: the same width and first bucket, every event placed
        // by hand.
        let width = timeline::bucket_width(i64::from(length) * 60, buckets);
        let start = (START + i64::from(from_minute) * 60).div_euclid(width) * width;
        prop_assert_eq!(t.bucket_seconds, width);
        prop_assert_eq!(t.starts[0], start);
        let mut model: BTreeMap<Mark, BTreeMap<i64, u64>> = BTreeMap::new();
        let mut notable = Vec::new();
        for (n, e) in events.iter().enumerate() {
            let in_window = e.minute >= from_minute && e.minute < to_minute;
            let in_cluster = cluster.is_none_or(|c| c == e.cluster);
            let by_actor = actor.is_none_or(|a| e.who == Some(a));
            let m = mark(e);
            if in_window && in_cluster && by_actor && (marks.is_empty() || marks.contains(&m)) {
                let second = START + i64::from(e.minute) * 60;
                *model.entry(m).or_default().entry((second - start) / width).or_default() += 1;
                if m.notable() {
                    notable.push((e.minute, n as u64));
                }
            }
        }
        let got: BTreeMap<Mark, BTreeMap<i64, u64>> = t
            .series
            .iter()
            .map(|(m, counts)| {
                let by_bucket = counts
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(|(i, c)| (i as i64, *c))
                    .collect();
                (*m, by_bucket)
            })
            .collect();
        prop_assert_eq!(got, model);
        // Newest first: (time, index) descending.
        notable.sort();
        notable.reverse();
        notable.truncate(timeline::NOTABLE);
        let listed: Vec<u64> = t.notable.iter().map(|n| n.index).collect();
        let expected: Vec<u64> = notable.iter().map(|(_, i)| *i).collect();
        prop_assert_eq!(listed, expected);
    }
}

#[test]
fn an_empty_or_backwards_window_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/timeline").unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(timeline::default_window(&store).unwrap(), None);
    let t: Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
    let q = TimelineQuery {
        from: t,
        to: t,
        cluster: None,
        app: None,
        actor: None,
        marks: vec![],
        buckets: 10,
    };
    let e = timeline::timeline(&store, &q).unwrap_err().to_string();
    assert!(e.contains("earlier instant first"), "{e}");
}
