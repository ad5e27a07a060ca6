//! As-of reconstruction against a naive reference fold.
//!
//! Random event streams (several clusters; creations, updates, deletions,
//! recreation with a new uid; ownership moving between apps, two owners at
//! once, copied tracking ids; app inventories; duplicates) are appended in a
//! random order and random batch splits, so most events arrive late and out
//! of order. `inventory_at(T [, known_at])` at every instant of the stream,
//! as known at every batch boundary, must equal a fold written here from
//! DESIGN.md alone: read every entry back, keep those recorded by
//! `known_at`, and take each object's greatest version at or before T by
//! (time, resourceVersion, index). The version index is then rebuilt from
//! the log and checked again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use annal_query::asof::inventory::{self, AsOf};
use annal_schemas::data::{AppInventory, KubeObject, ObjectDeleted};
use annal_schemas::ownership::{self, Claim, Marker, ObjectIdentity};
use annal_schemas::{Envelope, EventType, Timestamp};
use annal_store::{Entry, Store};
use proptest::prelude::*;
use serde_json::{json, Value};

const CLUSTERS: [&str; 2] = ["c0", "c1"];
/// (apiVersion, kind, namespace, name): a small pool, so events collide.
const OBJECTS: [(&str, &str, &str, &str); 4] = [
    ("apps/v1", "Deployment", "shop", "web"),
    ("v1", "ConfigMap", "shop", "web"),
    ("v1", "Service", "shop", "api"),
    ("v1", "Namespace", "", "shop"),
];
const APPS: [&str; 3] = ["argocd:shop", "argocd:other", "flux:flux-system/apps"];

/// How an observation marks its owner.
#[derive(Clone, Copy, Debug)]
enum Owner {
    None,
    TrackingId(usize),
    /// A tracking id copied from another object: no claim, flagged.
    CopiedTrackingId,
    Flux,
    Helm,
    FluxHelmChain,
    InstanceLabel,
    /// Argo CD tracking id and Flux labels at once: a conflict.
    Two,
}

#[derive(Clone, Debug)]
enum Op {
    Observe {
        generation: u8,
        rv: Option<u16>,
        owner: Owner,
    },
    Delete,
    Inventory {
        app: usize,
        entries: Vec<usize>,
    },
}

#[derive(Clone, Debug)]
struct Gen {
    minute: i64,
    cluster: usize,
    object: usize,
    op: Op,
}

fn owner() -> impl Strategy<Value = Owner> {
    prop_oneof![
        Just(Owner::None),
        (0..2usize).prop_map(Owner::TrackingId),
        Just(Owner::CopiedTrackingId),
        Just(Owner::Flux),
        Just(Owner::Helm),
        Just(Owner::FluxHelmChain),
        Just(Owner::InstanceLabel),
        Just(Owner::Two),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3u8, proptest::option::of(0..40u16), owner())
            .prop_map(|(generation, rv, owner)| Op::Observe { generation, rv, owner }),
        2 => Just(Op::Delete),
        2 => (0..APPS.len(), proptest::collection::vec(0..OBJECTS.len(), 0..4))
            .prop_map(|(app, entries)| Op::Inventory { app, entries }),
    ]
}

fn stream() -> impl Strategy<Value = Vec<Gen>> {
    proptest::collection::vec(
        (0..12i64, 0..CLUSTERS.len(), 0..OBJECTS.len(), op()).prop_map(
            |(minute, cluster, object, op)| Gen {
                minute,
                cluster,
                object,
                op,
            },
        ),
        1..40,
    )
}

fn time(minute: i64) -> Timestamp {
    Timestamp::from_unix_micros(1_793_520_000_000_000 + minute * 60_000_000).unwrap()
}

fn envelope(n: usize, g: &Gen) -> Envelope {
    let (api_version, kind, namespace, name) = OBJECTS[g.object];
    let group = ownership::group_of(api_version);
    let (event_type, data) = match &g.op {
        Op::Observe {
            generation,
            rv,
            owner,
        } => {
            let mut labels = serde_json::Map::new();
            let mut annotations = serde_json::Map::new();
            let tracking = |app: &str| format!("{app}:{group}/{kind}:{namespace}/{name}");
            match owner {
                Owner::None => {}
                Owner::TrackingId(i) => {
                    let app = ["shop", "other"][*i];
                    annotations.insert(
                        "argocd.argoproj.io/tracking-id".into(),
                        tracking(app).into(),
                    );
                }
                Owner::CopiedTrackingId => {
                    annotations.insert(
                        "argocd.argoproj.io/tracking-id".into(),
                        "shop:apps/Deployment:elsewhere/copied".into(),
                    );
                }
                Owner::Flux | Owner::Two => {
                    labels.insert("kustomize.toolkit.fluxcd.io/name".into(), "apps".into());
                    labels.insert(
                        "kustomize.toolkit.fluxcd.io/namespace".into(),
                        "flux-system".into(),
                    );
                    if matches!(owner, Owner::Two) {
                        annotations.insert(
                            "argocd.argoproj.io/tracking-id".into(),
                            tracking("shop").into(),
                        );
                    }
                }
                Owner::Helm | Owner::FluxHelmChain => {
                    labels.insert("app.kubernetes.io/managed-by".into(), "Helm".into());
                    annotations.insert("meta.helm.sh/release-name".into(), "web".into());
                    annotations.insert("meta.helm.sh/release-namespace".into(), "shop".into());
                    if matches!(owner, Owner::FluxHelmChain) {
                        labels.insert("helm.toolkit.fluxcd.io/name".into(), "web".into());
                        labels.insert("helm.toolkit.fluxcd.io/namespace".into(), "shop".into());
                    }
                }
                Owner::InstanceLabel => {
                    labels.insert("app.kubernetes.io/instance".into(), "shop".into());
                }
            }
            let mut metadata = json!({
                "name": name,
                "uid": format!("uid-{}-{generation}", g.object),
                "labels": labels,
                "annotations": annotations,
                "managedFields": [{"manager": format!("m{generation}"), "operation": "Apply"}],
            });
            if !namespace.is_empty() {
                metadata["namespace"] = namespace.into();
            }
            if let Some(rv) = rv {
                metadata["resourceVersion"] = rv.to_string().into();
            }
            (
                "object.observed",
                json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}),
            )
        }
        Op::Delete => {
            let mut metadata = json!({"name": name});
            if !namespace.is_empty() {
                metadata["namespace"] = namespace.into();
            }
            (
                "object.deleted",
                json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}),
            )
        }
        Op::Inventory { app, entries } => {
            let entries: Vec<Value> = entries
                .iter()
                .map(|&i| {
                    let (api_version, kind, namespace, name) = OBJECTS[i];
                    json!({"group": ownership::group_of(api_version), "version": "v1",
                           "kind": kind, "namespace": namespace, "name": name})
                })
                .collect();
            (
                "app.inventory",
                json!({"app": APPS[*app], "entries": entries}),
            )
        }
    };
    let text = json!({
        "schema": "annal.event/v1",
        "id": format!("e{n}"),
        "type": event_type,
        "time": time(g.minute).to_string(),
        "cluster": CLUSTERS[g.cluster],
        "data": data,
    });
    Envelope::parse(text.to_string().as_bytes()).unwrap()
}

/// One answer row, as both sides report it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    cluster: String,
    group: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    resource_version: String,
    owner: Option<String>,
    claims: Vec<String>,
    conflict: bool,
    tracking_mismatch: Option<String>,
    managers: Vec<String>,
}

/// (cluster, group, kind, namespace, name).
type Identity = (String, String, String, String, String);

/// An object version's identity and its place among the object's
/// versions: (valid time, resourceVersion as an integer, log index).
fn version_key(e: &Entry) -> (Identity, (i64, u64, u64)) {
    let o: ObjectDeleted = serde_json::from_value(e.event.data.clone()).unwrap();
    let key = (
        e.event.cluster.clone().unwrap(),
        ownership::group_of(&o.api_version).to_string(),
        o.kind,
        o.metadata.namespace.unwrap_or_default(),
        o.metadata.name,
    );
    let rv = o
        .metadata
        .resource_version
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    (key, (e.event.time.unix_micros(), rv, e.index))
}

/// The naive fold: DESIGN.md's rules over the entries as read back.
fn reference(entries: &[Entry], at: Timestamp, known_at: Option<Timestamp>) -> Vec<Row> {
    let known = |e: &&Entry| known_at.is_none_or(|k| e.recorded_at <= k) && e.event.time <= at;
    let mut latest: BTreeMap<Identity, (i64, u64, u64, &Entry)> = BTreeMap::new();
    let mut inventories: BTreeMap<(String, String), (Timestamp, u64, AppInventory)> =
        BTreeMap::new();
    for e in entries.iter().filter(known) {
        let cluster = e.event.cluster.clone().unwrap();
        match e.event.event_type {
            EventType::ObjectObserved | EventType::ObjectDeleted => {
                let (key, order) = version_key(e);
                if latest
                    .get(&key)
                    .is_none_or(|(t, r, i, _)| (*t, *r, *i) < order)
                {
                    latest.insert(key, (order.0, order.1, order.2, e));
                }
            }
            EventType::AppInventory => {
                let inv: AppInventory = serde_json::from_value(e.event.data.clone()).unwrap();
                let key = (cluster, inv.app.clone());
                if inventories
                    .get(&key)
                    .is_none_or(|(t, i, _)| (*t, *i) < (e.event.time, e.index))
                {
                    inventories.insert(key, (e.event.time, e.index, inv));
                }
            }
            _ => {}
        }
    }
    let mut rows = Vec::new();
    for ((cluster, group, kind, namespace, name), (_, _, _, e)) in latest {
        if e.event.event_type != EventType::ObjectObserved {
            continue;
        }
        let o: KubeObject = serde_json::from_value(e.event.data.clone()).unwrap();
        let m = ownership::markers(
            ObjectIdentity {
                api_version: &o.api_version,
                kind: &kind,
                namespace: &namespace,
                name: &name,
            },
            &o.metadata.labels,
            &o.metadata.annotations,
        );
        let mut claims = m.claims;
        for ((c, app), (_, _, inv)) in &inventories {
            let listed = inv.entries.iter().any(|x| {
                x.group == group && x.kind == kind && x.namespace == namespace && x.name == name
            });
            if *c == cluster && listed {
                claims.push(Claim {
                    owner: app.clone(),
                    marker: Marker::Inventory,
                });
            }
        }
        let decided = ownership::decide(&claims);
        let managers: BTreeSet<String> = o
            .metadata
            .managed_fields
            .iter()
            .filter_map(|m| m.manager.clone())
            .collect();
        rows.push(Row {
            cluster,
            group,
            kind,
            namespace,
            name,
            uid: o.metadata.uid.unwrap_or_default(),
            resource_version: o.metadata.resource_version.unwrap_or_default(),
            owner: decided.owner,
            claims: decided.claims,
            conflict: decided.conflict,
            tracking_mismatch: m.tracking_mismatch,
            managers: managers.into_iter().collect(),
        });
    }
    rows.sort();
    rows
}

fn answer(store: &Store, at: Timestamp, known_at: Option<Timestamp>) -> Vec<Row> {
    let as_of = AsOf::new(store, at, known_at).unwrap();
    let mut rows: Vec<Row> = inventory::fleet_at(store, None, &as_of)
        .unwrap()
        .into_iter()
        .map(|r| Row {
            cluster: r.cluster,
            group: r.object.group,
            kind: r.object.kind,
            namespace: r.object.namespace,
            name: r.object.name,
            uid: r.uid,
            resource_version: r.resource_version,
            owner: r.owner,
            claims: r.claims,
            conflict: r.conflict,
            tracking_mismatch: r.tracking_mismatch,
            managers: r.managers,
        })
        .collect();
    rows.sort();
    rows
}

/// `0..n` in a seeded random order (xorshift).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = seed | 1;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// Appends `events` in `order`, cut into batches at `cuts`; repeats a few
/// (redelivery).
fn ingest(
    events: &[Envelope],
    order: &[usize],
    cuts: &[usize],
    repeats: usize,
) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/as-of").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut sequence: Vec<Envelope> = order.iter().map(|&i| events[i].clone()).collect();
    sequence.extend(order.iter().take(repeats).map(|&i| events[i].clone()));
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (sequence.len() + 1)).collect();
    bounds.push(sequence.len());
    bounds.sort();
    for end in bounds {
        if end > start {
            store.append(sequence[start..end].to_vec()).unwrap();
            start = end;
        }
    }
    (dir, store)
}

fn check(store: &Store) -> Result<(), TestCaseError> {
    let entries: Vec<Entry> = store.entries(0, store.size()).map(Result::unwrap).collect();
    let mut known: Vec<Option<Timestamp>> = vec![None];
    let mut recorded: Vec<Timestamp> = entries.iter().map(|e| e.recorded_at).collect();
    recorded.dedup();
    known.extend(recorded.iter().map(|t| Some(*t)));
    if let Some(first) = recorded.first() {
        known.push(Timestamp::from_unix_micros(first.unix_micros() - 1));
    }
    for k in known {
        for minute in -1..13 {
            let at = time(minute);
            prop_assert_eq!(
                answer(store, at, k),
                reference(&entries, at, k),
                "at minute {} known_at {:?}",
                minute,
                k
            );
        }
    }
    Ok(())
}

/// Each object's content at `at` by the naive rule (the greatest version
/// at or before `at` by (time, resourceVersion, index)), without the fields
/// every write changes; `None` when that version is a deletion.
fn naive_contents(entries: &[Entry], at: Timestamp) -> BTreeMap<Identity, Option<Value>> {
    let mut latest: BTreeMap<Identity, ((i64, u64, u64), &Entry)> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.event.time <= at) {
        if !matches!(
            e.event.event_type,
            EventType::ObjectObserved | EventType::ObjectDeleted
        ) {
            continue;
        }
        let (key, order) = version_key(e);
        if latest.get(&key).is_none_or(|(o, _)| *o < order) {
            latest.insert(key, (order, e));
        }
    }
    latest
        .into_iter()
        .map(|(key, (_, e))| {
            let live = e.event.event_type == EventType::ObjectObserved;
            let mut data = e.event.data.clone();
            if let Some(meta) = data.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
            }
            (key, live.then_some(data))
        })
        .collect()
}

/// The diff by the naive folds: set differences of the two answers, owner
/// changes from the reference rows, content changes from the naive
/// versions, as (identity, change, changed fields).
fn reference_diff(
    entries: &[Entry],
    t1: Timestamp,
    t2: Timestamp,
) -> Vec<(Identity, &'static str, Vec<String>)> {
    let owners = |at| -> BTreeMap<Identity, Option<String>> {
        reference(entries, at, None)
            .into_iter()
            .map(|r| ((r.cluster, r.group, r.kind, r.namespace, r.name), r.owner))
            .collect()
    };
    let (o1, o2) = (owners(t1), owners(t2));
    let (c1, c2) = (naive_contents(entries, t1), naive_contents(entries, t2));
    let keys: BTreeSet<&Identity> = o1.keys().chain(o2.keys()).collect();
    let mut out = Vec::new();
    for k in keys {
        match (o1.get(k), o2.get(k)) {
            (Some(_), None) => out.push((k.clone(), "removed", vec![])),
            (None, Some(_)) => out.push((k.clone(), "added", vec![])),
            (Some(a), Some(b)) => {
                let mut fields = Vec::new();
                let (x, y) = (&c1[k], &c2[k]);
                annal_query::asof::diff::differences(
                    "",
                    x.as_ref().unwrap(),
                    y.as_ref().unwrap(),
                    &mut fields,
                );
                if a != b {
                    out.push((k.clone(), "owner-changed", fields));
                } else if !fields.is_empty() {
                    out.push((k.clone(), "changed", fields));
                }
            }
            (None, None) => {}
        }
    }
    out
}

/// (log index, deletion, changed fields).
type NaiveVersion = (u64, bool, Vec<String>);

/// Every object's versions by the naive rule, as (log index, deletion,
/// fields changed against the version before when both are live and of
/// one uid).
fn reference_histories(entries: &[Entry]) -> BTreeMap<Identity, Vec<NaiveVersion>> {
    type Ordered<'a> = Vec<((i64, u64, u64), &'a Entry)>;
    let mut versions: BTreeMap<Identity, Ordered> = BTreeMap::new();
    for e in entries {
        if matches!(
            e.event.event_type,
            EventType::ObjectObserved | EventType::ObjectDeleted
        ) {
            let (key, order) = version_key(e);
            versions.entry(key).or_default().push((order, e));
        }
    }
    let uid = |e: &Entry| e.event.data.pointer("/metadata/uid").cloned();
    versions
        .into_iter()
        .map(|(key, mut list)| {
            list.sort_by_key(|(order, _)| *order);
            let mut out = Vec::new();
            let mut before: Option<&Entry> = None;
            for (_, e) in list {
                let deleted = e.event.event_type == EventType::ObjectDeleted;
                let mut fields = Vec::new();
                if let Some(b) = before {
                    let both_live = !deleted && b.event.event_type == EventType::ObjectObserved;
                    if both_live && uid(b) == uid(e) {
                        annal_query::asof::diff::differences(
                            "",
                            &b.event.data,
                            &e.event.data,
                            &mut fields,
                        );
                    }
                }
                out.push((e.index, deleted, fields));
                before = Some(e);
            }
            (key, out)
        })
        .collect()
}

/// `annal diff`'s rows for t1..t2, in the reference's terms.
fn diff_answer(
    store: &Store,
    t1: Timestamp,
    t2: Timestamp,
) -> Vec<(Identity, &'static str, Vec<String>)> {
    let (from, to) = (
        AsOf::new(store, t1, None).unwrap(),
        AsOf::new(store, t2, None).unwrap(),
    );
    let mut rows: Vec<_> = annal_query::asof::diff::fleet_diff(store, None, &from, &to)
        .unwrap()
        .map(Result::unwrap)
        .map(|r| {
            (
                (r.cluster, r.group, r.kind, r.namespace, r.name),
                r.change.as_str(),
                r.fields,
            )
        })
        .collect();
    rows.sort();
    rows
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn inventory_at_equals_the_reference_fold(
        gens in stream(),
        seed in any::<u64>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
        repeats in 0usize..4,
    ) {
        let events: Vec<Envelope> = gens.iter().enumerate().map(|(n, g)| envelope(n, g)).collect();
        // A seeded shuffle: late arrivals are the normal case.
        let order = shuffled(events.len(), seed);
        let (_dir, store) = ingest(&events, &order, &cuts, repeats);
        prop_assert_eq!(store.size(), events.len() as u64, "duplicates are stored once");
        check(&store)?;
        // The index is a cache: rebuilt from the log, it answers the same.
        store.reindex().unwrap();
        check(&store)?;
    }

    /// `object_history` of every object is the naive per-object version
    /// list: every version (deletions included), in (time,
    /// resourceVersion, index) order, each changed field against the one
    /// before, whatever the arrival order.
    #[test]
    fn object_history_equals_the_naive_version_list(
        gens in stream(),
        seed in any::<u64>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let events: Vec<Envelope> = gens.iter().enumerate().map(|(n, g)| envelope(n, g)).collect();
        let order = shuffled(events.len(), seed);
        let (_dir, store) = ingest(&events, &order, &cuts, 0);
        let entries: Vec<Entry> = store.entries(0, store.size()).map(Result::unwrap).collect();
        for (key, naive) in reference_histories(&entries) {
            let q = annal_query::asof::history::ObjectQuery {
                cluster: key.0.clone(),
                group: Some(key.1.clone()),
                kind: key.2.clone(),
                namespace: key.3.clone(),
                name: key.4.clone(),
            };
            let got: Vec<(u64, bool, Vec<String>)> = annal_query::asof::history::object_history(&store, &q)
                .unwrap()
                .into_iter()
                .map(|r| {
                    let deleted = r.change == annal_query::asof::history::VersionChange::Deleted;
                    (r.index, deleted, r.changed)
                })
                .collect();
            prop_assert_eq!(got, naive, "{:?}", key);
        }
    }

    /// `fleet_diff(t1, t2)` is the difference of the two naive folds,
    /// whatever the arrival order.
    #[test]
    fn the_diff_of_two_instants_equals_the_difference_of_the_reference_folds(
        gens in stream(),
        seed in any::<u64>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
        t1 in -1i64..13,
        span in 0i64..14,
    ) {
        let events: Vec<Envelope> = gens.iter().enumerate().map(|(n, g)| envelope(n, g)).collect();
        let order = shuffled(events.len(), seed);
        let (_dir, store) = ingest(&events, &order, &cuts, 0);
        let entries: Vec<Entry> = store.entries(0, store.size()).map(Result::unwrap).collect();
        let (t1, t2) = (time(t1), time(t1 + span));
        prop_assert_eq!(diff_answer(&store, t1, t2), reference_diff(&entries, t1, t2));
    }
}

/// The SQL table function gives the fold's answer too, with `known_at`,
/// cluster pushdown and bad arguments named.
#[test]
fn the_inventory_at_table_function_answers_in_sql() {
    let gens: Vec<Gen> = (0..8)
        .map(|i| Gen {
            minute: i,
            cluster: (i % 2) as usize,
            object: (i % 4) as usize,
            op: Op::Observe {
                generation: 0,
                rv: Some(i as u16),
                owner: if i == 6 {
                    Owner::Two
                } else {
                    Owner::TrackingId(0)
                },
            },
        })
        .collect();
    let events: Vec<Envelope> = gens
        .iter()
        .enumerate()
        .map(|(n, g)| envelope(n, g))
        .collect();
    let (_dir, store) = ingest(&events, &(0..8).collect::<Vec<_>>(), &[2], 0);
    let store = Arc::new(store);
    let first_batch = store.entry(0).unwrap().unwrap().recorded_at;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ctx = runtime
        .block_on(annal_query::sql::session(store.clone()))
        .unwrap();
    let query = |sql: &str| {
        let answer = runtime.block_on(annal_query::sql::run(&ctx, sql));
        answer.map(|a| annal_query::sql::rows_as_json(&a).unwrap())
    };
    let at = time(12).to_string();
    let all = query(&format!(
        "SELECT cluster, kind, name, owner, claims, conflict FROM inventory_at('{at}') ORDER BY cluster, kind"
    ))
    .unwrap();
    let expected = reference(
        &store
            .entries(0, store.size())
            .map(Result::unwrap)
            .collect::<Vec<_>>(),
        time(12),
        None,
    );
    assert_eq!(all.len(), expected.len());
    let conflicted: Vec<_> = all
        .iter()
        .filter(|r| r["conflict"] == json!(true))
        .collect();
    assert_eq!(conflicted.len(), 1);
    assert_eq!(
        conflicted[0]["claims"],
        json!(["argocd:shop", "flux:flux-system/apps"])
    );
    let c1 = query(&format!(
        "SELECT count(*) AS n FROM inventory_at('{at}') WHERE cluster = 'c1'"
    ))
    .unwrap();
    assert_eq!(
        c1[0]["n"],
        json!(expected.iter().filter(|r| r.cluster == "c1").count())
    );
    // As known after the first batch only (2 events, 2 objects).
    let early = query(&format!(
        "SELECT count(*) AS n FROM inventory_at('{at}', '{first_batch}')"
    ))
    .unwrap();
    assert_eq!(early[0]["n"], json!(2));
    assert_eq!(expected.len(), 4);
    let bad = query("SELECT * FROM inventory_at('yesterday-ish')").unwrap_err();
    assert!(
        bad.to_string().contains("inventory_at: argument 1"),
        "{bad}"
    );
    let versions = query("SELECT count(*) AS n FROM objects WHERE cluster = 'c0'").unwrap();
    assert_eq!(versions[0]["n"], json!(4));
}
