//! Store behaviour against the naive reference tree.

use annal_schemas::Envelope;
use proptest::prelude::*;

use crate::merkle::reference;
use crate::{layout, ScanKey, Store, StoreError};

fn event(id: &str, cluster: &str, minute: u32) -> Envelope {
    Envelope::parse(
        format!(
            r#"{{"schema":"annal.event/v1","id":"{id}","type":"cluster.heartbeat",
            "time":"2026-11-01T10:{minute:02}:00Z","cluster":"{cluster}","data":{{"agent":"a"}}}}"#
        )
        .as_bytes(),
    )
    .unwrap()
}

fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

/// Every stored leaf, in order.
fn leaves(store: &Store) -> Vec<Vec<u8>> {
    (0..store.size())
        .map(|i| store.leaf_bytes(i).unwrap().unwrap())
        .collect()
}

#[test]
fn duplicates_append_nothing_within_and_across_batches() {
    let (_dir, store) = new_store();
    let out = store
        .append(vec![
            event("a", "c1", 0),
            event("b", "c1", 1),
            event("a", "c1", 2),
        ])
        .unwrap();
    assert_eq!((out.appended, out.duplicates, out.size), (2, 1, 2));
    let out = store
        .append(vec![event("b", "c1", 1), event("c", "c2", 3)])
        .unwrap();
    assert_eq!((out.appended, out.duplicates, out.size), (1, 1, 3));
    assert_eq!(store.index_of("c").unwrap(), Some(2));
    assert_eq!(store.entry(1).unwrap().unwrap().event.id, "b");
}

#[test]
fn recorded_at_never_goes_backwards_and_reopen_continues_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        for i in 0..5 {
            store
                .append(vec![event(&format!("e{i}"), "c1", i)])
                .unwrap();
        }
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.writes_refused(), None);
    store.append(vec![event("e5", "c1", 5)]).unwrap();
    let entries: Vec<_> = store.entries(0, 6).map(Result::unwrap).collect();
    assert!(entries
        .windows(2)
        .all(|w| w[0].recorded_at <= w[1].recorded_at));
    assert_eq!(store.status().root, reference::root(&leaves(&store)));
    let r = store.verify(None).unwrap();
    assert!(r.is_intact(), "{:?}", r.problem);
}

#[test]
fn derived_indexes_scan_by_cluster_and_survive_reindex() {
    let (_dir, store) = new_store();
    store
        .append(vec![
            event("a", "c1", 5),
            event("b", "c2", 1),
            event("c", "c1", 2),
        ])
        .unwrap();
    let ids = |s: &Store| -> Vec<String> {
        s.scan(ScanKey::Cluster("c1"), None, None)
            .map(|e| e.unwrap().event.id)
            .collect()
    };
    // Valid-time order, not arrival order.
    assert_eq!(ids(&store), ["c", "a"]);
    let from = "2026-11-01T10:03:00Z".parse().ok();
    let late: Vec<_> = store
        .scan(ScanKey::Cluster("c1"), from, None)
        .map(|e| e.unwrap().event.id)
        .collect();
    assert_eq!(late, ["a"]);
    let (replayed, _) = store.reindex().unwrap();
    assert_eq!(replayed, 3);
    assert_eq!(ids(&store), ["c", "a"]);
    let types: Vec<_> = store
        .scan(ScanKey::Type("cluster.heartbeat"), None, None)
        .map(|e| e.unwrap().index)
        .collect();
    assert_eq!(types, [1, 2, 0]);
    // The same order with valid times, from the keys alone.
    let times: Vec<(String, u64)> = store
        .scan_times(ScanKey::Cluster("c1"), None, None)
        .map(|t| t.map(|(t, i)| (t.to_string(), i)).unwrap())
        .collect();
    assert_eq!(
        times,
        [
            ("2026-11-01T10:02:00Z".to_string(), 2),
            ("2026-11-01T10:05:00Z".to_string(), 0)
        ]
    );
}

#[test]
fn truncation_below_the_checkpoint_refuses_writes_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store
            .append((0..4).map(|i| event(&format!("e{i}"), "c", i)).collect())
            .unwrap();
    }
    {
        // Roll the log back by one entry, consistently, as an attacker would:
        // leaf line, pointer, leaf hash and recorded size.
        let store = Store::open(dir.path()).unwrap();
        let last = store.pointer(3).unwrap();
        drop(store);
        let cut = |path: std::path::PathBuf, len: u64| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(len)
                .unwrap();
        };
        let log_dir = dir.path().join("log");
        cut(
            log_dir.join(format!("{:020}.jsonl", last.segment)),
            last.offset,
        );
        cut(log_dir.join("offsets"), 3 * 20);
        cut(log_dir.join("tree"), (2 * 3 - 1) * 32);
        let db = sled::open(dir.path().join("ledger")).unwrap();
        let log = db.open_tree(layout::LOG_TREE).unwrap();
        log.insert(layout::META_SIZE, &3u64.to_be_bytes()).unwrap();
        db.flush().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let refused = store.writes_refused().expect("writes must be refused");
    assert!(refused.contains("covers 4"), "{refused}");
    match store.append(vec![event("x", "c", 9)]) {
        Err(StoreError::WritesRefused(why)) => assert!(why.contains("entries were lost"), "{why}"),
        other => panic!("expected refusal, got {other:?}"),
    }
    let report = store.verify(None).unwrap();
    assert_eq!(report.problem.unwrap().index, Some(3));
}

#[test]
fn leaves_rotate_across_segments_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let store = Store::open(dir.path()).unwrap().with_segment_bytes(2000);
    for b in 0..5 {
        store
            .append(
                (0..7)
                    .map(|i| event(&format!("e{b}-{i}"), "c", i))
                    .collect(),
            )
            .unwrap();
    }
    let segments = std::fs::read_dir(dir.path().join("log"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".jsonl")
        })
        .count();
    assert!(segments > 3, "only {segments} segments");
    let ids: Vec<_> = store.entries(5, 30).map(|e| e.unwrap().event.id).collect();
    assert_eq!(ids.len(), 25);
    assert_eq!(ids[0], "e0-5");
    assert_eq!(store.entry(34).unwrap().unwrap().event.id, "e4-6");
    assert_eq!(store.status().root, reference::root(&leaves(&store)));
    assert!(store.verify(None).unwrap().is_intact());
    drop(store);
    let store = Store::open(dir.path()).unwrap().with_segment_bytes(2000);
    store.append(vec![event("late", "c", 1)]).unwrap();
    assert!(store.verify(None).unwrap().is_intact());
}

#[test]
fn init_twice_is_refused_and_the_private_key_is_private() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    assert!(matches!(
        Store::init(dir.path(), "annal.test/store"),
        Err(StoreError::AlreadyInitialized { .. })
    ));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("keys/checkpoint.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(matches!(
        Store::open(dir.path().join("nothing-here")),
        Err(StoreError::NotInitialized { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any split of the same events into batches (with repeats and reopens
    /// between batches) yields a log whose root is the reference root of its
    /// leaves, and the same sequence of event ids.
    #[test]
    fn random_batch_splits_match_the_reference(
        n in 0usize..300,
        cuts in proptest::collection::vec(0usize..300, 0..6),
        reopen in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/store").unwrap();
        let events: Vec<_> = (0..n).map(|i| event(&format!("e{i}"), "c", (i % 60) as u32)).collect();
        let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c <= n).collect();
        cuts.sort_unstable();
        let mut store = Some(Store::open(dir.path()).unwrap());
        let mut at: usize = 0;
        for cut in cuts.into_iter().chain([n]) {
            if reopen {
                drop(store.take());
                store = Some(Store::open(dir.path()).unwrap());
            }
            let s = store.as_ref().unwrap();
            // Re-send the previous batch's tail: it must dedupe.
            let from = at.saturating_sub(3);
            s.append(events[from..cut].to_vec()).unwrap();
            at = cut;
        }
        let s = store.as_ref().unwrap();
        prop_assert_eq!(s.size(), n as u64);
        let ids: Vec<_> = s.entries(0, n as u64).map(|e| e.unwrap().event.id).collect();
        let expected: Vec<_> = (0..n).map(|i| format!("e{i}")).collect();
        prop_assert_eq!(ids, expected);
        prop_assert_eq!(s.status().root, reference::root(&leaves(s)));
        prop_assert!(s.verify(None).unwrap().is_intact());
    }
}

/// Golden vectors: the bundled examples as leaves with a fixed system time,
/// and the root of every prefix. They pin the leaf format and the hashing:
/// any change that alters either breaks every auditor's copy, so it must
/// fail here first. `ANNAL_BLESS=1 cargo test -p annal-store golden`
/// rewrites them (only for a deliberate format change).
#[test]
fn golden_leaves_and_roots() {
    use crate::canonical;
    use crate::merkle::{self, Frontier};
    use base64::Engine;

    let examples = include_str!("../../examples/quickstart.jsonl");
    let recorded_at: annal_schemas::Timestamp = "2026-11-01T12:00:00Z".parse().unwrap();
    let mut leaves = String::new();
    let mut roots = format!(
        "0 {}\n",
        base64::engine::general_purpose::STANDARD.encode(merkle::empty_root())
    );
    let mut frontier = Frontier::new();
    for (index, line) in examples.lines().enumerate() {
        let entry = crate::Entry {
            index: index as u64,
            recorded_at,
            event: Envelope::parse(line.as_bytes()).unwrap(),
        };
        let bytes = canonical::to_vec(&entry).unwrap();
        frontier.push(merkle::leaf_hash(&bytes), |_, _| {});
        leaves.push_str(std::str::from_utf8(&bytes).unwrap());
        leaves.push('\n');
        roots.push_str(&format!(
            "{} {}\n",
            frontier.size(),
            base64::engine::general_purpose::STANDARD.encode(frontier.root())
        ));
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/golden");
    let leaf_file = dir.join("log/00000000000000000000.jsonl");
    if std::env::var_os("ANNAL_BLESS").is_some() {
        std::fs::write(&leaf_file, &leaves).unwrap();
        std::fs::write(dir.join("roots.txt"), &roots).unwrap();
    }
    assert_eq!(
        leaves,
        std::fs::read_to_string(&leaf_file).unwrap(),
        "leaf bytes changed"
    );
    assert_eq!(
        roots,
        std::fs::read_to_string(dir.join("roots.txt")).unwrap(),
        "roots changed"
    );
    // The reference tree over the golden leaves agrees too.
    let lines: Vec<Vec<u8>> = leaves.lines().map(|l| l.as_bytes().to_vec()).collect();
    assert_eq!(frontier.root(), reference::root(&lines));
}

#[test]
fn a_damaged_id_index_is_found_by_verify_and_rebuilt_by_reindex() {
    let (_dir, store) = new_store();
    store
        .append((0..6).map(|i| event(&format!("e{i}"), "c", i)).collect())
        .unwrap();
    store.key_index().keys().forget_id("e3").unwrap();
    let report = store.verify(None).unwrap();
    let problem = report.problem.expect("a missing id must be found");
    assert_eq!(problem.index, Some(3));
    assert!(problem.reason.contains("id index"), "{}", problem.reason);
    // A wrong mapping is found too.
    store.key_index().keys().remap_id("e3", 1).unwrap();
    assert_eq!(store.verify(None).unwrap().problem.unwrap().index, Some(3));
    let (replayed, trees) = store.reindex().unwrap();
    assert_eq!(replayed, 6);
    assert_eq!(trees[0], "id index");
    assert!(store.verify(None).unwrap().is_intact());
    assert_eq!(
        store.append(vec![event("e3", "c", 3)]).unwrap().duplicates,
        1
    );
    // An id the log never held, mapped to a real entry: every leaf's id
    // is still found at its own index, and the extra one is reported.
    store.key_index().keys().remap_id("ghost", 2).unwrap();
    let problem = store.verify(None).unwrap().problem.expect("an extra id");
    assert_eq!(problem.index, None);
    assert!(
        problem.reason.contains("holds 7 ids, the log 6"),
        "{}",
        problem.reason
    );
}

fn observed(id: &str, name: &str, minute: u32) -> Envelope {
    Envelope::parse(
        format!(
            r#"{{"schema":"annal.event/v1","id":"{id}","type":"object.observed",
            "time":"2026-11-01T10:{minute:02}:00Z","cluster":"c1",
            "data":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns"}}}}}}"#
        )
        .as_bytes(),
    )
    .unwrap()
}

/// (object name, from, to) of every version row of cluster c1.
fn version_rows(store: &Store) -> Vec<(String, i64, i64)> {
    let v = store.cluster_versions("c1").unwrap().unwrap();
    let mut rows: Vec<_> = v
        .rows()
        .iter()
        .map(|r| (v.object(r.object).unwrap().name.to_string(), r.from, r.to))
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_late_version_splits_its_predecessors_interval() {
    let (_dir, store) = new_store();
    store
        .append(vec![observed("a", "x", 0), observed("b", "x", 20)])
        .unwrap();
    store.append(vec![observed("late", "x", 10)]).unwrap();
    let minute = |m: i64| {
        let t: annal_schemas::Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
        t.unix_micros() + m * 60_000_000
    };
    assert_eq!(
        version_rows(&store),
        [
            ("x".into(), minute(0), minute(10)),
            ("x".into(), minute(10), minute(20)),
            ("x".into(), minute(20), i64::MAX),
        ]
    );
}

#[test]
fn version_files_past_or_short_of_their_recorded_lengths_are_cut_or_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let expected = {
        let store = Store::open(dir.path()).unwrap();
        store
            .append(vec![observed("a", "x", 0), observed("b", "y", 1)])
            .unwrap();
        store.append(vec![observed("c", "x", 2)]).unwrap();
        version_rows(&store)
    };
    // Bytes an apply wrote but never committed are cut off on reopen.
    let rows = layout::DataDir::new(dir.path()).versions().join("0/rows");
    let mut bytes = std::fs::read(&rows).unwrap();
    bytes.extend_from_slice(&[0xAB; 56]);
    std::fs::write(&rows, &bytes).unwrap();
    {
        let mut reports = Vec::new();
        let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
        assert_eq!(reports, []);
        assert_eq!(version_rows(&store), expected);
        store.append(vec![observed("d", "z", 3)]).unwrap();
        assert_eq!(version_rows(&store).len(), expected.len() + 1);
    }
    // A file that lost committed bytes is never trusted: the versions are
    // rebuilt from the log, with the same rows.
    let bytes = std::fs::read(&rows).unwrap();
    std::fs::write(&rows, &bytes[..bytes.len() / 2]).unwrap();
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert!(
        matches!(&reports[..], [crate::Rebuild::Indexes { entries: 4, reason }] if reason.contains("holds") && reason.contains("the index records")),
        "{reports:?}"
    );
    let rebuilt = version_rows(&store);
    assert_eq!(rebuilt.len(), expected.len() + 1);
    assert!(expected.iter().all(|r| rebuilt.contains(r)));
}

/// Every version file of a cluster with complete zones, damaged by one
/// flipped byte in a closed ledger: the next reads answer as the log says
/// (the damage is found by its checksum and the indexes rebuilt), both a
/// read of every version and one through the zone map. Damage to the zone
/// map or to the rows past the last zone is found by the open itself.
#[test]
fn a_flipped_byte_in_any_version_file_is_found_and_rebuilt_from_the_log() {
    let intact = tempfile::tempdir().unwrap();
    Store::init(intact.path(), "annal.test/store").unwrap();
    let span = crate::versions::Span::Starting {
        since: i64::MIN,
        until: i64::MAX,
    };
    let starting = |store: &Store| {
        let v = store.cluster_versions_in("c1", span).unwrap().unwrap();
        let mut got: Vec<(String, i64)> = v
            .rows()
            .iter()
            .map(|r| (v.object(r.object).unwrap().name.to_string(), r.from))
            .collect();
        got.sort();
        got
    };
    let (all, some) = {
        let store = Store::open(intact.path()).unwrap();
        let events = (0..1100u32).map(|i| {
            Envelope::parse(
                format!(
                    r#"{{"schema":"annal.event/v1","id":"f{i}","type":"object.observed",
                    "time":"2026-11-01T{:02}:{:02}:00Z","cluster":"c1",
                    "data":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"o{}","namespace":"ns","labels":{{"i":"{i}"}}}}}}}}"#,
                    i / 60, i % 60, i % 13
                )
                .as_bytes(),
            )
            .unwrap()
        });
        store.append(events.collect()).unwrap();
        (version_intervals(&store), starting(&store))
    };
    assert_eq!(all.len(), 1100);
    let files = layout::DataDir::new(intact.path()).versions().join("0");
    // Three places in each file, and the last row (past the two complete
    // zones of 512 rows).
    let places = ["rows", "details", "objects", "zonemap"]
        .into_iter()
        .flat_map(|name| [0, 1, 2].map(|part| (name, part)))
        .chain([("rows", 3)]);
    for (name, part) in places {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(intact.path(), dir.path());
        let path = dir
            .path()
            .join(files.strip_prefix(intact.path()).unwrap())
            .join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = match part {
            3 => bytes.len() - 5,
            _ => bytes.len() * part / 3 + 5,
        };
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let mut reports = Vec::new();
        let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
        // The open checks the zone map and the rows past the last zone
        // (bounded reads); the rest is checked by the reads below.
        if name == "zonemap" || part == 3 {
            assert!(
                matches!(&reports[..], [crate::Rebuild::Indexes { reason, .. }] if reason.contains("checksum")),
                "{name} at {at}: {reports:?}"
            );
        } else {
            assert_eq!(reports, [], "{name} at {at}");
        }
        // Either read may meet the damage first.
        if part == 1 {
            assert_eq!(starting(&store), some, "{name} at {at}");
            assert_eq!(version_intervals(&store), all, "{name} at {at}");
        } else {
            assert_eq!(version_intervals(&store), all, "{name} at {at}");
            assert_eq!(starting(&store), some, "{name} at {at}");
        }
        assert_ne!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{name} at {at}: rebuilt"
        );
    }
}

/// A ledger whose version files have no zone map (written before zone
/// maps, or the file lost) gets one when a writer opens it, before any
/// write; a read of the rows starting in a range then skips the zones
/// that cannot hold one and still returns every row that does.
#[test]
fn a_missing_zone_map_is_computed_on_open_and_narrows_starting_reads() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    // 1,200 versions of cluster c1, one per minute of 20 hours.
    let minute = |m: u32| {
        let t: annal_schemas::Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
        t.unix_micros() + i64::from(m) * 60_000_000
    };
    {
        let store = Store::open(dir.path()).unwrap();
        let events = (0..1200u32).map(|m| {
            let hour = 10 + m / 60;
            Envelope::parse(
                format!(
                    r#"{{"schema":"annal.event/v1","id":"v{m}","type":"object.observed",
                    "time":"2026-11-{:02}T{:02}:{:02}:00Z","cluster":"c1",
                    "data":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"o{}","namespace":"ns"}}}}}}"#,
                    1 + hour / 24, hour % 24, m % 60, m % 7
                )
                .as_bytes(),
            )
            .unwrap()
        });
        store.append(events.collect()).unwrap();
    }
    let zones = layout::DataDir::new(dir.path())
        .versions()
        .join("0/zonemap");
    assert_eq!(
        std::fs::metadata(&zones).unwrap().len(),
        2 * 24,
        "two complete zones"
    );
    std::fs::remove_file(&zones).unwrap();
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(
        reports,
        [crate::Rebuild::Zones {
            clusters: 1,
            zones: 2
        }],
        "the open says what it computes"
    );
    assert_eq!(
        std::fs::metadata(&zones).unwrap().len(),
        2 * 24,
        "computed again on open"
    );
    drop(store);
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(reports, [], "once");
    let span = crate::versions::Span::Starting {
        since: minute(100),
        until: minute(110),
    };
    let starts = |v: &crate::versions::ClusterVersions| -> Vec<i64> {
        v.rows().iter().map(|r| r.from).collect()
    };
    let v = store.cluster_versions_in("c1", span).unwrap().unwrap();
    assert_eq!(v.span(), span);
    assert_eq!(starts(&v), (100..110).map(minute).collect::<Vec<_>>());
    assert!(v.details(&v.rows()[0]).is_err(), "no details were read");
    // Narrowed: the first zone and the incomplete third are read, not the
    // second, so a flipped byte in the second goes unseen by this read
    // and is found (and the index rebuilt) by a read of every row.
    let rows = layout::DataDir::new(dir.path()).versions().join("0/rows");
    let mut bytes = std::fs::read(&rows).unwrap();
    let width = bytes.len() / (2 * 512 + 176);
    bytes[512 * width + 3] ^= 1;
    std::fs::write(&rows, &bytes).unwrap();
    let v = store.cluster_versions_in("c1", span).unwrap().unwrap();
    assert_eq!(starts(&v), (100..110).map(minute).collect::<Vec<_>>());
    assert_eq!(std::fs::read(&rows).unwrap(), bytes, "not found yet");
    let all = store
        .cluster_versions_in("c1", crate::versions::Span::All)
        .unwrap()
        .unwrap();
    assert_eq!(all.rows().len(), 1200);
    assert_ne!(std::fs::read(&rows).unwrap(), bytes, "found and rebuilt");
}

#[test]
fn an_unclosed_index_replays_only_the_tail_past_its_mark() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let data = layout::DataDir::new(dir.path());
    let saved = dir.path().join("saved-versions");
    let store = Store::open(dir.path()).unwrap();
    store.key_index().hold_sync_mark();
    // The first apply of a process syncs; the later ones wait for the mark.
    store
        .append(vec![observed("a", "x", 0), observed("b", "y", 1)])
        .unwrap();
    copy_dir(&data.versions(), &saved);
    let synced = store.key_index().synced().unwrap();
    assert_eq!(synced, 2);
    store.append(vec![observed("c", "x", 2)]).unwrap();
    store
        .append(vec![observed("d", "z", 3), observed("e", "x", 4)])
        .unwrap();
    let expected = version_rows(&store);
    store.abandon();

    // A crash that kept every write (a SIGKILL): the tail past the mark is
    // replayed, nothing is rebuilt.
    let store = Store::open_reporting(dir.path(), &mut |r| panic!("no rebuild: {r:?}")).unwrap();
    assert_eq!(version_rows(&store), expected);
    store.key_index().hold_sync_mark();
    store.append(vec![observed("f", "y", 5)]).unwrap();
    let expected = version_rows(&store);
    store.abandon();

    // A power loss that took the unsynced bytes of the version files: the
    // files as they were at the mark, the index as it was written.
    let synced = {
        let store = Store::open(dir.path()).unwrap();
        let mark = store.key_index().synced().unwrap();
        copy_dir(&data.versions(), &saved);
        store.key_index().hold_sync_mark();
        store.append(vec![observed("g", "q", 6)]).unwrap();
        store.append(vec![observed("h", "x", 7)]).unwrap();
        store.abandon();
        mark
    };
    assert_eq!(synced, 6, "the open's first apply synced");
    let expected_after: Vec<_> = {
        let mut e = expected.clone();
        let minute = |m: i64| {
            let t: annal_schemas::Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
            t.unix_micros() + m * 60_000_000
        };
        e.push(("q".into(), minute(6), i64::MAX));
        // h ends the x version that started at minute 4.
        let at = e
            .iter()
            .position(|r| r.0 == "x" && r.1 == minute(4))
            .unwrap();
        e[at].2 = minute(7);
        e.push(("x".into(), minute(7), i64::MAX));
        e.sort();
        e
    };
    copy_dir(&saved, &data.versions());
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(reports, [], "only the tail is replayed");
    assert_eq!(version_rows(&store), expected_after);
    // The replayed tail allocated the same object ids: a later version of
    // q and a new object both land where they belong.
    store
        .append(vec![observed("i", "q", 8), observed("j", "new", 9)])
        .unwrap();
    drop(store);
    let fresh = {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), copy.path());
        let s = Store::open(copy.path()).unwrap();
        s.reindex().unwrap();
        version_rows(&s)
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(version_rows(&store), fresh);
    assert!(store.verify(None).unwrap().is_intact());
}

#[test]
fn updates_that_change_only_the_resource_version_share_one_details_record() {
    let (_dir, store) = new_store();
    let update = |i: u32, rv: &str| {
        Envelope::parse(
            format!(
                r#"{{"schema":"annal.event/v1","id":"u{i}","type":"object.observed",
                "time":"2026-11-01T10:{i:02}:00Z","cluster":"c1",
                "data":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"x","namespace":"ns","resourceVersion":"{rv}"}}}}}}"#
            )
            .as_bytes(),
        )
        .unwrap()
    };
    store
        .append((0..5).map(|i| update(i, &(100 + i).to_string())).collect())
        .unwrap();
    // A resourceVersion that is not a plain integer keeps its text.
    store.append(vec![update(9, "007")]).unwrap();
    let v = store.cluster_versions("c1").unwrap().unwrap();
    let offsets: std::collections::BTreeSet<u64> = v.rows().iter().map(|r| r.details).collect();
    assert_eq!(offsets.len(), 2, "five plain updates share one record");
    let rvs: Vec<String> = v
        .rows()
        .iter()
        .map(|r| v.details(r).unwrap().resource_version)
        .collect();
    assert_eq!(rvs, ["100", "101", "102", "103", "104", "007"]);
}

#[test]
fn consumed_offsets_commit_with_their_leaves_survive_reopen_and_never_go_back() {
    use crate::{PreparedEvent, SourceOffset};
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/offsets").unwrap();
    let source = "kafka:annal:events";
    let at = |partition, next| SourceOffset {
        source: source.into(),
        partition,
        next,
    };
    let prepared = |ids: &[&str]| {
        ids.iter()
            .map(|id| PreparedEvent::new(&event(id, "c1", 0)).unwrap())
            .collect::<Vec<_>>()
    };
    {
        let store = Store::open(dir.path()).unwrap();
        assert!(store.source_offsets(source).unwrap().is_empty());
        let out = store
            .append_consumed(&prepared(&["a", "b"]), &[at(0, 2), at(1, 7)])
            .unwrap();
        assert_eq!(out.appended, 2);
        // Re-delivered messages: duplicates only, yet the offset moves on.
        let out = store
            .append_consumed(&prepared(&["b"]), &[at(1, 8)])
            .unwrap();
        assert_eq!((out.appended, out.duplicates), (0, 1));
        // An older offset (a partition re-read after a rebalance) is ignored.
        store
            .append_consumed(&prepared(&["c"]), &[at(0, 1)])
            .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.source_offsets(source).unwrap(),
        [(0, 2), (1, 8)].into_iter().collect()
    );
    assert!(store
        .source_offsets("kafka:other:events")
        .unwrap()
        .is_empty());
    assert_eq!(store.size(), 3);
}

#[test]
fn a_rotated_key_co_signs_until_its_end_survives_reopening_and_is_followed_from_the_old_key() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let old = {
        let store = Store::open(dir.path()).unwrap();
        store.append(vec![event("a", "c1", 0)]).unwrap();
        let old = store.verifiers()[0].clone();
        let r = store.rotate_key(Duration::from_secs(3600)).unwrap();
        assert_eq!((r.index, store.size()), (1, 2));
        assert_eq!(r.previous_key, old.to_text());
        old
    };
    // A new process: both keys loaded, the old one still co-signing.
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.writes_refused(), None);
    let keys = store.verifiers();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[1].to_text(), old.to_text());
    store.append(vec![event("b", "c1", 1)]).unwrap();
    let note = store.status().checkpoint.unwrap();
    assert!(old.open(&note).is_ok() && keys[0].open(&note).is_ok());
    assert!(store.verify(Some(&old)).unwrap().is_intact());

    // A rotation with no window: the next note has one signature, by the
    // newest key; the old key alone no longer opens it, but the keys the
    // log records rotating to from it do.
    let newest = {
        store.rotate_key(Duration::ZERO).unwrap();
        store.append(vec![event("c", "c1", 2)]).unwrap();
        store.verifiers()[0].clone()
    };
    let note = store.status().checkpoint.unwrap();
    assert_eq!(note.matches('\u{2014}').count(), 1, "{note}");
    assert!(newest.open(&note).is_ok());
    assert!(!store.verify(Some(&old)).unwrap().is_intact());
    let trusted = store.keys_trusted_from(&old).unwrap();
    let texts: Vec<String> = trusted.iter().map(|k| k.to_text()).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts.last(), Some(&newest.to_text()));
    assert!(store.verify_with(&trusted).unwrap().is_intact());
    // Proofs against the latest and an older size open with the newest key.
    let proof = store.inclusion_proof(1, store.size()).unwrap();
    let leaf = store.leaf_bytes(1).unwrap().unwrap();
    crate::proof::verify_inclusion_signed(std::slice::from_ref(&newest), &note, &leaf, &proof)
        .unwrap();
    let older = store.checkpoint_at(2).unwrap().unwrap();
    let growth = store.consistency_proof(2, store.size()).unwrap();
    crate::proof::verify_consistency_signed(&[newest], &older, &note, &growth).unwrap();
}

/// What can happen to the key indexes between two opens of a ledger.
#[derive(Clone, Debug)]
enum IndexFate {
    /// Nothing: a clean reopen.
    Kept,
    /// The index directory goes back to the copy saved earlier, as if the
    /// writes since had never reached the disk (a power loss: the index is
    /// never synced on the commit path).
    LostSince,
    /// Deleted.
    Deleted,
    /// One of its files, chosen by the number, cut to a fraction of its
    /// length (a torn write).
    Truncated(usize, u8),
    /// One byte of one of its files flipped (not fjall's manifests: see
    /// [`flippable`]).
    Flipped(usize, u64),
    /// Replaced by another ledger's index (same ids, other history).
    Foreign,
}

/// Whether a flipped byte in `file` is damage the store must survive.
/// fjall's manifests (`keyspaces/<n>/v<id>`) are left out: some of their
/// bytes are covered by no checksum, and lsm-tree decodes them with
/// assertions and allocates by counts read from them, so a flip there can
/// abort the process inside fjall (`index/preflight.rs` catches the
/// fields fjall asserts on and the archive counts, not every count). Every
/// other file is flipped: tables (checksummed blocks), fjall's journal,
/// `current`, the mark.
fn flippable(file: &std::path::Path) -> bool {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let manifest = name.len() > 1
        && name.starts_with('v')
        && name[1..].bytes().all(|b| b.is_ascii_digit())
        && file
            .parent()
            .and_then(|p| p.parent())
            .is_some_and(|p| p.ends_with("keyspaces"));
    !manifest
}

fn index_fate() -> impl Strategy<Value = IndexFate> {
    prop_oneof![
        3 => Just(IndexFate::Kept),
        2 => Just(IndexFate::LostSince),
        1 => Just(IndexFate::Deleted),
        2 => (any::<usize>(), 0u8..100).prop_map(|(f, p)| IndexFate::Truncated(f, p)),
        2 => (any::<usize>(), any::<u64>()).prop_map(|(f, o)| IndexFate::Flipped(f, o)),
        1 => Just(IndexFate::Foreign),
    ]
}

/// Every file under `dir`, sorted.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let _ = std::fs::remove_dir_all(to);
    for f in files_under(from) {
        let target = to.join(f.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&f, &target).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The key indexes against a HashMap: batches of ids drawn from a small
    /// pool (so redeliveries are common), and between batches a reopen
    /// after whatever can happen to a cache on disk. After every reopen,
    /// every acknowledged id is found at its index and appends as a
    /// duplicate, no unacknowledged id is found, and the cluster time order
    /// is the model's; the leaves and root never change.
    #[test]
    fn the_key_indexes_agree_with_a_hashmap_whatever_happens_to_them(
        batches in proptest::collection::vec(
            (proptest::collection::vec((0u32..60, 0u32..3, 0u32..60), 1..25), index_fate()),
            1..8,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/keys").unwrap();
        let data = crate::DataDir::new(dir.path());
        let index_dir = data.key_index();
        let saved = dir.path().join("saved-index");
        // The foreign index: another ledger fed the same first ids.
        let foreign = tempfile::tempdir().unwrap();
        Store::init(foreign.path(), "annal.test/keys").unwrap();
        {
            let other = Store::open(foreign.path()).unwrap();
            other.append((0..5).map(|i| event(&format!("id{i}"), "c9", i)).collect()).unwrap();
        }
        let mut model: std::collections::HashMap<String, u64> = Default::default();
        // (cluster, minute, index) of every entry, in log order.
        let mut order: Vec<(String, u32, u64)> = Vec::new();
        let mut store = Some(Store::open(dir.path()).unwrap());
        {
            drop(store.take());
            copy_dir(&index_dir, &saved);
            store = Some(Store::open(dir.path()).unwrap());
        }
        for (batch, fate) in batches {
            let s = store.as_ref().unwrap();
            let events: Vec<Envelope> = batch
                .iter()
                .map(|(id, c, m)| event(&format!("id{id}"), &format!("c{c}"), *m))
                .collect();
            let mut appended = 0u64;
            let mut duplicates = 0u64;
            for e in &events {
                if model.contains_key(&e.id) {
                    duplicates += 1;
                } else {
                    let index = model.len() as u64;
                    model.insert(e.id.clone(), index);
                    order.push((e.cluster.clone().unwrap(), e.time.unix_micros() as u32, index));
                    appended += 1;
                }
            }
            let out = s.append(events).unwrap();
            prop_assert_eq!((out.appended, out.duplicates), (appended, duplicates));
            let root = s.status().root;
            drop(store.take());
            let files = files_under(&index_dir);
            match &fate {
                IndexFate::Kept => {}
                IndexFate::LostSince => copy_dir(&saved, &index_dir),
                IndexFate::Deleted => std::fs::remove_dir_all(&index_dir).unwrap(),
                IndexFate::Truncated(pick, percent) if !files.is_empty() => {
                    let f = &files[pick % files.len()];
                    let len = std::fs::metadata(f).unwrap().len();
                    let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
                    file.set_len(len * u64::from(*percent) / 100).unwrap();
                }
                IndexFate::Flipped(pick, offset) if files.iter().any(|f| flippable(f)) => {
                    let files: Vec<_> = files.iter().filter(|f| flippable(f)).collect();
                    let f = files[pick % files.len()];
                    let mut bytes = std::fs::read(f).unwrap();
                    if !bytes.is_empty() {
                        let at = (*offset % bytes.len() as u64) as usize;
                        bytes[at] ^= 0x55;
                        std::fs::write(f, bytes).unwrap();
                    }
                }
                IndexFate::Foreign => copy_dir(&crate::DataDir::new(foreign.path()).key_index(), &index_dir),
                _ => {}
            }
            if matches!(fate, IndexFate::Kept) {
                copy_dir(&index_dir, &saved);
            }
            let s = Store::open(dir.path()).unwrap();
            prop_assert_eq!(s.status().root, root, "the log is untouched");
            // Half the time the lookups go through the filled id filter,
            // half the time (mostly) to the index while it fills.
            if model.len() % 2 == 0 {
                s.key_index().keys().wait_for_id_filter();
            }
            for id in 0..60 {
                let id = format!("id{id}");
                prop_assert_eq!(s.index_of(&id).unwrap(), model.get(&id).copied(), "{}", id);
            }
            for c in 0..3 {
                let cluster = format!("c{c}");
                let got: Vec<u64> = s
                    .scan(ScanKey::Cluster(&cluster), None, None)
                    .map(|e| e.unwrap().index)
                    .collect();
                let mut want: Vec<(u32, u64)> = order
                    .iter()
                    .filter(|(oc, _, _)| *oc == cluster)
                    .map(|(_, m, i)| (*m, *i))
                    .collect();
                want.sort_unstable();
                let want: Vec<u64> = want.into_iter().map(|(_, i)| i).collect();
                prop_assert_eq!(got, want, "cluster {}", cluster);
            }
            store = Some(s);
        }
        let s = store.as_ref().unwrap();
        // Redelivering everything appends nothing.
        let all: Vec<Envelope> = model.keys().map(|id| event(id, "c0", 0)).collect();
        let n = all.len() as u64;
        let out = s.append(all).unwrap();
        prop_assert_eq!((out.appended, out.duplicates), (0, n));
        prop_assert!(s.verify(None).unwrap().is_intact());
    }
}

#[test]
fn a_reopened_writer_fills_its_id_filter_and_answers_every_id_exactly() {
    let (dir, store) = new_store();
    let held: Vec<Envelope> = (0..600)
        .map(|i| event(&format!("e{i}"), "c1", i % 60))
        .collect();
    store.append(held.clone()).unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let keys = store.key_index().keys();
    keys.wait_for_id_filter();
    assert!(keys.id_filter().complete(), "a writer's filter is filled");
    for i in 0..600 {
        assert_eq!(store.index_of(&format!("e{i}")).unwrap(), Some(i));
    }
    let before = keys.id_filter().answered();
    // Redelivered: every one a duplicate (never a false "new").
    let out = store.append(held).unwrap();
    assert_eq!((out.appended, out.duplicates), (0, 600));
    // New ones: appended, and the filter, not the index, said so.
    let fresh: Vec<Envelope> = (600..1000)
        .map(|i| event(&format!("e{i}"), "c2", i % 60))
        .collect();
    let out = store.append(fresh).unwrap();
    assert_eq!((out.appended, out.duplicates), (400, 0));
    assert!(keys.id_filter().answered() - before >= 390);
    assert_eq!(store.index_of("e999").unwrap(), Some(999));
    drop(store);
    // A reader does not fill one: the index answers.
    let reader = Store::open_with(dir.path(), crate::Compaction::Deferred, &mut |_| {}).unwrap();
    assert!(!reader.key_index().keys().id_filter().complete());
    assert_eq!(reader.index_of("e700").unwrap(), Some(700));
    assert_eq!(reader.index_of("e1000").unwrap(), None);
}

#[test]
fn a_half_written_table_no_manifest_names_is_not_damage() {
    let (dir, store) = new_store();
    store
        .append((0..50).map(|i| event(&format!("e{i}"), "c1", i)).collect())
        .unwrap();
    drop(store);
    // What a compaction leaves when the process ends mid-write: a table
    // file no manifest names yet (fjall removes it on open).
    let keyspaces = crate::DataDir::new(dir.path())
        .key_index()
        .join("keyspaces");
    for tree in std::fs::read_dir(&keyspaces).unwrap() {
        let tables = tree.unwrap().path().join("tables");
        if tables.exists() {
            std::fs::write(tables.join("999999"), b"half a table").unwrap();
        }
    }
    let store = Store::open_reporting(dir.path(), &mut |r| panic!("no rebuild: {r:?}")).unwrap();
    assert_eq!(store.index_of("e49").unwrap(), Some(49));
    assert!(store.verify(None).unwrap().is_intact());
}

#[test]
fn a_key_index_that_is_truncated_or_from_another_ledger_is_rebuilt_not_trusted() {
    let (dir, store) = new_store();
    store
        .append(
            (0..300)
                .map(|i| event(&format!("e{i}"), "c1", i % 60))
                .collect(),
        )
        .unwrap();
    drop(store);
    let index_dir = crate::DataDir::new(dir.path()).key_index();
    // Cut every file of the index to half: whatever fjall makes of it,
    // the store must end up answering as the log says.
    for f in files_under(&index_dir) {
        let len = std::fs::metadata(&f).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&f)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    }
    let mut rebuilt = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| rebuilt.push(r)).unwrap();
    assert!(
        matches!(&rebuilt[..], [crate::Rebuild::Indexes { entries: 300, reason }] if reason.contains("unusable")),
        "{rebuilt:?}"
    );
    assert_eq!(store.index_of("e299").unwrap(), Some(299));
    assert_eq!(store.index_of("e0").unwrap(), Some(0));
    assert_eq!(
        store.append(vec![event("e7", "c1", 7)]).unwrap().duplicates,
        1
    );
    assert!(store.verify(None).unwrap().is_intact());
    drop(store);

    // Another ledger's index, covering more entries than this log has.
    let (other_dir, other) = new_store();
    other
        .append(
            (0..400)
                .map(|i| event(&format!("x{i}"), "c2", i % 60))
                .collect(),
        )
        .unwrap();
    drop(other);
    copy_dir(
        &crate::DataDir::new(other_dir.path()).key_index(),
        &index_dir,
    );
    let mut reasons = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reasons.push(r)).unwrap();
    assert!(
        reasons.iter().any(|r| matches!(r, crate::Rebuild::Indexes { reason, .. } if reason.contains("another history"))),
        "{reasons:?}"
    );
    assert_eq!(
        store.index_of("x10").unwrap(),
        None,
        "a foreign id is not ours"
    );
    assert_eq!(store.index_of("e10").unwrap(), Some(10));
    assert_eq!(
        store.append(vec![event("x10", "c2", 1)]).unwrap().appended,
        1
    );
}

/// A copy of `store/testdata/NAME` to open and migrate.
fn fixture_copy(name: &str) -> tempfile::TempDir {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    dir
}

/// Every leaf, offset and tree file of a ledger, with its bytes.
fn leaf_files(data: &crate::DataDir) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    files_under(&data.leaves())
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f, bytes)
        })
        .collect()
}

fn root_hex(store: &Store) -> String {
    crate::merkle::to_hex(&store.status().root)
}

/// Every stored version as (kind, name, valid from, valid to), sorted.
fn version_intervals(store: &Store) -> Vec<(String, String, i64, i64)> {
    let mut got = Vec::new();
    for cluster in store.version_clusters().unwrap() {
        let v = store.cluster_versions(&cluster).unwrap().unwrap();
        for r in v.rows() {
            let o = v.object(r.object).unwrap();
            got.push((o.kind.to_string(), o.name.to_string(), r.from, r.to));
        }
    }
    got.sort();
    got
}

/// The intervals an old binary printed to `store/testdata/NAME` (`annal
/// sql` over `objects`, as JSON), in [`version_intervals`]' form.
fn printed_intervals(name: &str) -> Vec<(String, String, i64, i64)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    let printed: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let micros = |v: &serde_json::Value| {
        v.as_str().map_or(i64::MAX, |t| {
            t.parse::<annal_schemas::Timestamp>().unwrap().unix_micros()
        })
    };
    let mut want: Vec<(String, String, i64, i64)> = printed
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                micros(&r["valid_from"]),
                micros(&r["valid_to"]),
            )
        })
        .collect();
    want.sort();
    want
}

#[test]
fn a_ledger_in_the_first_layout_opens_migrated_with_leaves_roots_and_answers_unchanged() {
    let dir = fixture_copy("v1-ledger");
    let data = crate::DataDir::new(dir.path());
    let before = leaf_files(&data);
    let checkpoint = std::fs::read_to_string(data.checkpoint()).unwrap();
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(
        reports,
        [
            crate::Rebuild::Indexes {
                entries: 18,
                reason: "a ledger in the first layout (ids in sled)".into()
            },
            crate::Rebuild::OldLayoutRemoved
        ]
    );
    assert_eq!(
        root_hex(&store),
        "091881611b1ee812fcdae39c962e7c78bb14d5c88a02805e517279b7a13e608c"
    );
    assert_eq!(store.checkpoint().unwrap(), checkpoint);
    assert!(store.verify(None).unwrap().is_intact());
    // The ids moved: every entry's id is found at its index, and sled
    // holds none of them any more.
    for i in 0..18 {
        let id = store.entry(i).unwrap().unwrap().event.id;
        assert_eq!(store.index_of(&id).unwrap(), Some(i));
    }
    assert!(store
        .log_tree()
        .scan_prefix(layout::ID_PREFIX)
        .next()
        .is_none());
    // Redelivered, the same events are duplicates.
    let again: Vec<Envelope> = (0..18)
        .map(|i| store.entry(i).unwrap().unwrap().event)
        .collect();
    assert_eq!(store.append(again).unwrap().duplicates, 18);
    // The time orders answer as before: each cluster's entries.
    let clusters: std::collections::BTreeSet<String> = (0..18)
        .filter_map(|i| store.entry(i).unwrap().unwrap().event.cluster)
        .collect();
    for c in &clusters {
        let scanned = store.scan(ScanKey::Cluster(c), None, None).count();
        let direct = (0..18)
            .filter(|i| store.entry(*i).unwrap().unwrap().event.cluster.as_deref() == Some(c))
            .count();
        assert_eq!(scanned, direct, "cluster {c}");
    }
    drop(store);
    assert_eq!(
        leaf_files(&data),
        before,
        "leaf, offset and tree files unchanged"
    );
    // A second open has nothing left to migrate.
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(reports, []);
    assert_eq!(store.size(), 18);
}

#[test]
fn a_ledger_in_the_third_layout_opens_rebuilt_in_a_fresh_index_with_its_answers_unchanged() {
    let dir = fixture_copy("v3-ledger");
    let data = crate::DataDir::new(dir.path());
    let before = leaf_files(&data);
    let checkpoint = std::fs::read_to_string(data.checkpoint()).unwrap();
    // What the old binary printed (the same as for v2-ledger).
    let want = printed_intervals("v2-ledger.objects.json");
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert!(
        matches!(&reports[..], [crate::Rebuild::Indexes { entries: 20, reason }] if reason.contains("layout 2")),
        "{reports:?}"
    );
    assert_eq!(
        root_hex(&store),
        "a5fa902eff365b24f55800d1aa01c38c5b34bae34e8f5be3801e977bce9099ea"
    );
    assert_eq!(store.checkpoint().unwrap(), checkpoint);
    assert!(store.verify(None).unwrap().is_intact());
    let rebuilt = version_intervals(&store);
    assert_eq!(rebuilt, want);
    drop(store);
    // The old layout's keyspaces and journal are gone: a fresh directory.
    let index = data.key_index();
    assert!(index.join(crate::index::mark::FILE).exists());
    // fjall's own tree and this layout's four keyspaces; the old six are
    // not carried over (nor their journal, replayed on every open).
    let keyspaces = std::fs::read_dir(index.join("keyspaces")).unwrap().count();
    assert_eq!(keyspaces, 5);
    // The next open rebuilds nothing and answers the same.
    let store = Store::open_reporting(dir.path(), &mut |r| panic!("no rebuild: {r:?}")).unwrap();
    assert_eq!(version_intervals(&store), rebuilt);
    assert_eq!(
        leaf_files(&data),
        before,
        "leaf, offset and tree files unchanged"
    );
}

/// A ledger whose mark has no checksums (index layout 4 before them):
/// the open computes them from the files, once, and writes the zone maps
/// again; nothing else is rebuilt, and a byte flipped afterwards is found.
#[test]
fn a_ledger_without_version_checksums_gets_them_on_open_with_its_answers_unchanged() {
    let dir = fixture_copy("v4-ledger");
    let data = crate::DataDir::new(dir.path());
    let before = leaf_files(&data);
    let checkpoint = std::fs::read_to_string(data.checkpoint()).unwrap();
    let want = printed_intervals("v2-ledger.objects.json");
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(reports, [crate::Rebuild::Checksums { clusters: 2 }]);
    assert_eq!(
        root_hex(&store),
        "e87b00b9de4bf8feb8e1bce2a35298aa05db414ebcfb9bc0cd91deb118235a65"
    );
    assert_eq!(store.checkpoint().unwrap(), checkpoint);
    assert_eq!(version_intervals(&store), want);
    drop(store);
    let mark = std::fs::read_to_string(data.key_index().join(crate::index::mark::FILE)).unwrap();
    assert_eq!(mark.matches("\"sums\"").count(), 2, "{mark}");
    for cluster in ["0", "1"] {
        let files = data.versions().join(cluster);
        assert!(!files.join("zones").exists(), "the old zone map is gone");
        assert!(files.join("zonemap").exists());
    }
    // Once: the next open computes nothing.
    let store = Store::open_reporting(dir.path(), &mut |r| panic!("no rebuild: {r:?}")).unwrap();
    assert_eq!(version_intervals(&store), want);
    drop(store);
    assert_eq!(
        leaf_files(&data),
        before,
        "leaf, offset and tree files unchanged"
    );
    // The checksums now guard the files.
    let details = data.versions().join("0/details");
    let mut bytes = std::fs::read(&details).unwrap();
    bytes[10] ^= 0x01;
    std::fs::write(&details, &bytes).unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(version_intervals(&store), want);
    assert_ne!(
        std::fs::read(&details).unwrap(),
        bytes,
        "rebuilt from the log"
    );
}

#[test]
fn a_ledger_in_the_second_layout_opens_migrated_with_its_version_intervals_unchanged() {
    let dir = fixture_copy("v2-ledger");
    let data = crate::DataDir::new(dir.path());
    let before = leaf_files(&data);
    let checkpoint = std::fs::read_to_string(data.checkpoint()).unwrap();
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert!(
        matches!(&reports[..], [crate::Rebuild::Indexes { entries: 20, reason }, crate::Rebuild::OldLayoutRemoved] if reason.contains("layout 1")),
        "{reports:?}"
    );
    assert_eq!(
        root_hex(&store),
        "7f26217b2114b6bbe881169ad7b0cafd60c40916c11123bce28284913cab2aca"
    );
    assert_eq!(store.checkpoint().unwrap(), checkpoint);
    assert!(store.verify(None).unwrap().is_intact());
    assert!(!store
        .owned()
        .unwrap()
        .db
        .tree_names()
        .iter()
        .any(|t| t == layout::SECOND_LAYOUT_TREE.as_bytes()));
    // Every interval the old binary printed (late versions included).
    assert_eq!(
        version_intervals(&store),
        printed_intervals("v2-ledger.objects.json")
    );
    drop(store);
    assert_eq!(
        leaf_files(&data),
        before,
        "leaf, offset and tree files unchanged"
    );
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r)).unwrap();
    assert_eq!(reports, [], "a second open has nothing to migrate");
    assert_eq!(store.size(), 20);
}

#[test]
fn a_second_open_beside_the_writer_is_a_view_that_answers_as_the_writer_did() {
    let (dir, writer) = new_store();
    writer
        .append(
            (0..40)
                .map(|i| {
                    if i % 2 == 0 {
                        observed(&format!("o{i}"), &format!("obj{}", i % 7), i % 60)
                    } else {
                        event(&format!("e{i}"), &format!("c{}", i % 3), i % 60)
                    }
                })
                .collect(),
        )
        .unwrap();
    let reader = Store::open(dir.path()).unwrap();
    assert_eq!(reader.beside_writer(), Some(std::process::id()));
    assert_eq!(reader.size(), writer.size());
    assert_eq!(reader.status().root, writer.status().root);
    assert_eq!(reader.checkpoint(), writer.checkpoint());
    assert_eq!(
        reader.version_clusters().unwrap(),
        writer.version_clusters().unwrap()
    );
    assert_eq!(version_rows(&reader), version_rows(&writer));
    for c in ["c0", "c1", "c2", "c1"] {
        let indexes = |s: &Store| -> Vec<u64> {
            s.scan(ScanKey::Cluster(c), None, None)
                .map(|e| e.unwrap().index)
                .collect()
        };
        assert_eq!(indexes(&reader), indexes(&writer), "cluster {c}");
    }
    assert_eq!(
        reader.index_of("e7").unwrap(),
        writer.index_of("e7").unwrap()
    );
    assert_eq!(reader.index_of("nope").unwrap(), None);
    let report = reader.verify(None).unwrap();
    assert!(report.is_intact(), "{:?}", report.problem);
    assert_eq!(report.leaves, 40);
    // A view never writes, and says who does.
    let refused = reader.append(vec![event("new", "c0", 1)]).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains(&format!("process {}", std::process::id())),
        "{refused}"
    );
    assert!(reader.quarantine().list().next().unwrap().is_err());
    assert!(reader.reindex().is_err());
    // The view is one committed size: the writer moves on without it.
    writer
        .append(vec![observed("late", "obj1", 59), event("more", "c0", 2)])
        .unwrap();
    assert_eq!(reader.size(), 40);
    assert_eq!(reader.entry(40).unwrap(), None);
    let later = Store::open(dir.path()).unwrap();
    assert_eq!(later.size(), 42);
    assert_eq!(version_rows(&later), version_rows(&writer));
    drop((reader, later));
    // Once the writer is gone, the next open writes again.
    drop(writer);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.beside_writer(), None);
    assert_eq!(
        store
            .append(vec![event("after", "c0", 3)])
            .unwrap()
            .appended,
        1
    );
}

#[test]
fn the_tree_scanner_reads_the_nodes_a_plain_reader_reads() {
    let (_dir, store) = new_store();
    // 70,000 leaves: a 4.5 MB tree file, past several windows, with nodes
    // of levels up to 16 behind the window.
    for chunk in 0..7 {
        store
            .append(
                (0..10_000)
                    .map(|i| event(&format!("t{chunk}-{i}"), "c", i % 60))
                    .collect(),
            )
            .unwrap();
    }
    let files = store.tree_files();
    let (plain, scan) = (files.reader().unwrap(), files.scanner().unwrap());
    let mut frontier = crate::merkle::Frontier::new();
    let mut nodes = 0;
    for i in 0..store.size() {
        let leaf = plain
            .read(crate::merkle::NodeId { level: 0, index: i })
            .unwrap();
        let mut completed = Vec::new();
        frontier.push(leaf, |id, _| completed.push(id));
        for id in completed {
            assert_eq!(scan.read(id).unwrap(), plain.read(id).unwrap(), "{id:?}");
            nodes += 1;
        }
    }
    assert_eq!(nodes, 2 * 70_000 - 70_000u64.count_ones() as u64);
    assert_eq!(frontier.root(), store.status().root);
    // Past the end: missing, not zeros.
    let beyond = crate::merkle::NodeId {
        level: 0,
        index: 70_000,
    };
    assert!(scan.read(beyond).is_err());
}

#[test]
fn verify_names_a_system_time_that_goes_back_within_and_across_its_chunks() {
    // Two commits: entries 0..1024 (one verify chunk) and 1024..1100.
    for tampered in [1024u64, 1030] {
        let (dir, store) = new_store();
        store
            .append(
                (0..1024)
                    .map(|i| event(&format!("a{i}"), "c", i % 60))
                    .collect(),
            )
            .unwrap();
        store
            .append(
                (0..76)
                    .map(|i| event(&format!("b{i}"), "c", i % 60))
                    .collect(),
            )
            .unwrap();
        let leaf = String::from_utf8(store.leaf_bytes(tampered).unwrap().unwrap()).unwrap();
        drop(store);
        // The same leaf, recorded a year earlier (same length, canonical).
        let at = leaf.find("\"recorded_at\":\"").unwrap() + 15;
        let year: u32 = leaf[at..at + 4].parse().unwrap();
        let earlier = format!("{}{}{}", &leaf[..at], year - 1, &leaf[at + 4..]);
        let segment = crate::DataDir::new(dir.path())
            .leaves()
            .join(format!("{:020}.jsonl", 0));
        let text = std::fs::read_to_string(&segment).unwrap();
        std::fs::write(&segment, text.replacen(&leaf, &earlier, 1)).unwrap();
        let store = Store::open(dir.path()).unwrap();
        let problem = store.verify(None).unwrap().problem.expect("caught");
        assert_eq!(problem.index, Some(tampered), "{}", problem.reason);
        assert!(
            problem
                .reason
                .contains("recorded_at before its predecessor"),
            "{}",
            problem.reason
        );
    }
}

#[test]
fn indexes_of_layout_3_are_rebuilt_on_open_with_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let data = layout::DataDir::new(dir.path());
    let store = Store::open(dir.path()).unwrap();
    store
        .append(vec![
            observed("a", "x", 0),
            observed("b", "y", 1),
            observed("c", "x", 2),
        ])
        .unwrap();
    let rows = version_rows(&store);
    let root = root_hex(&store);
    drop(store);
    // The mark of a ledger written before layout 4 (its keyspaces created
    // with fjall's default pinning, which fjall keeps).
    let mark = data.key_index().join("mark");
    let text = std::fs::read_to_string(&mark).unwrap();
    let old = text.replace(
        &format!("\"layout\":{}", crate::index::MARK_LAYOUT),
        "\"layout\":3",
    );
    assert_ne!(old, text, "the mark names its layout: {text}");
    std::fs::write(&mark, old).unwrap();

    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(format!("{r:?}"))).unwrap();
    assert!(
        reports
            .iter()
            .any(|r| r.contains("Indexes") && r.contains("layout 3")),
        "{reports:?}"
    );
    assert_eq!(version_rows(&store), rows);
    assert_eq!(root_hex(&store), root);
    assert_eq!(store.key_index().id("b").unwrap(), Some(1));
    drop(store);
    let text = std::fs::read_to_string(&mark).unwrap();
    assert!(
        text.contains(&format!("\"layout\":{}", crate::index::MARK_LAYOUT)),
        "{text}"
    );
}

/// One byte of a ledger's files changed behind its back.
#[derive(Clone, Debug)]
enum Damage {
    /// A byte of leaf `n % size`, at `at % len`.
    Leaf(u64, usize),
    /// A byte of the tree file at `at % len`.
    Tree(u64),
    /// The stored hash of a complete node, of level `l % levels` (the
    /// runs' own nodes, and the few above them that only stage two sees).
    Node(u8, u64),
    /// A byte of the leaf pointer file at `at % len`.
    Pointer(u64),
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Verify checks runs of 1024 leaves on separate threads and the
    /// nodes above them in log order. Against the naive answer: a changed
    /// byte in leaf k, or in k's pointer, is named at k; a changed tree
    /// node at the leaf that completes it (nothing, for a slot the tree
    /// does not use yet), wherever the runs begin and end.
    #[test]
    fn verify_names_the_first_damaged_entry_as_the_naive_model_does(
        commits in proptest::collection::vec(1u64..1200, 1..5),
        damage in prop_oneof![
            (any::<u64>(), any::<usize>()).prop_map(|(n, at)| Damage::Leaf(n, at)),
            any::<u64>().prop_map(Damage::Tree),
            (any::<u8>(), any::<u64>()).prop_map(|(l, i)| Damage::Node(l, i)),
            any::<u64>().prop_map(Damage::Pointer),
        ],
    ) {
        let (dir, store) = new_store();
        let mut next = 0u64;
        for n in commits {
            store
                .append((next..next + n).map(|i| event(&format!("e{i}"), "c", (i % 60) as u32)).collect())
                .unwrap();
            next += n;
        }
        let size = store.size();
        prop_assert!(store.verify(None).unwrap().is_intact());
        let leaf_lens: Vec<usize> = leaves(&store).iter().map(Vec::len).collect();
        drop(store);
        let data = crate::DataDir::new(dir.path());
        let flip = |path: std::path::PathBuf, at: u64| -> u64 {
            let mut bytes = std::fs::read(&path).unwrap();
            let at = at % bytes.len() as u64;
            bytes[at as usize] ^= 0x01;
            std::fs::write(&path, bytes).unwrap();
            at
        };
        let expected = match damage {
            Damage::Leaf(n, at) => {
                let k = n % size;
                let start: usize = leaf_lens[..k as usize].iter().map(|l| l + 1).sum();
                // Within the leaf's bytes (its newline is another test's).
                let offset = start + at % leaf_lens[k as usize];
                flip(data.leaves().join(format!("{:020}.jsonl", 0)), offset as u64);
                Some(k)
            }
            Damage::Pointer(at) => {
                let at = flip(data.leaves().join("offsets"), at);
                Some(at / crate::leaves::LeafPointer::ENCODED_LEN as u64)
            }
            Damage::Tree(at) => {
                let position = flip(data.leaves().join("tree"), at) / 32;
                // The node at this in-order position, and the leaf that
                // completes it, if it is complete.
                let level = position.trailing_ones() as u8;
                let index = position >> (level + 1);
                let last = ((index + 1) << level) - 1;
                (last < size).then_some(last)
            }
            Damage::Node(l, i) => {
                let level = l % (64 - size.leading_zeros() as u8);
                let index = i % (size >> level);
                let position = (index << (level + 1)) + (1u64 << level) - 1;
                flip(data.leaves().join("tree"), position * 32 + i % 32);
                Some(((index + 1) << level) - 1)
            }
        };
        let store = Store::open(dir.path()).unwrap();
        let report = store.verify(None).unwrap();
        prop_assert_eq!(
            report.problem.as_ref().and_then(|p| p.index),
            expected,
            "{:?}",
            report.problem
        );
        prop_assert_eq!(report.problem.is_some(), expected.is_some());
    }
}

/// The nodes above verify's runs of 1024 leaves are checked in log order
/// on the main thread: a changed level-11 node (leaves 0..2048) is named
/// at the leaf that completes it, even with damage further on.
#[test]
fn verify_names_a_changed_node_above_its_runs_at_the_leaf_that_completes_it() {
    let (dir, store) = new_store();
    for part in 0..3u64 {
        store
            .append(
                (part * 1000..(part + 1) * 1000)
                    .map(|i| event(&format!("e{i}"), "c", (i % 60) as u32))
                    .collect(),
            )
            .unwrap();
    }
    assert!(store.verify(None).unwrap().is_intact());
    drop(store);
    let tree = crate::DataDir::new(dir.path()).leaves().join("tree");
    let mut bytes = std::fs::read(&tree).unwrap();
    // Node (11, 0) at in-order position 2^11 − 1; and leaf 2500's hash.
    bytes[((1usize << 11) - 1) * 32] ^= 1;
    bytes[2 * 2500 * 32] ^= 1;
    std::fs::write(&tree, bytes).unwrap();
    let store = Store::open(dir.path()).unwrap();
    let problem = store.verify(None).unwrap().problem.expect("caught");
    assert_eq!(problem.index, Some(2047), "{}", problem.reason);
    assert!(
        problem.reason.contains("level 11, index 0"),
        "{}",
        problem.reason
    );
}

/// Everything the key indexes answer about `store`: each entry's index by
/// id, and every cluster's and type's entries in valid-time order.
fn key_answers(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..store.size() {
        let id = store.entry(i).unwrap().unwrap().event.id;
        out.push(format!("{id}={:?}", store.index_of(&id).unwrap()));
    }
    for cluster in ["c0", "c1", "c2"] {
        let scan: Vec<u64> = store
            .scan(ScanKey::Cluster(cluster), None, None)
            .map(|e| e.unwrap().index)
            .collect();
        out.push(format!("{cluster}: {scan:?}"));
    }
    let types: Vec<u64> = store
        .scan(ScanKey::Type("cluster.heartbeat"), None, None)
        .map(|e| e.unwrap().index)
        .collect();
    out.push(format!("heartbeats: {types:?}"));
    out
}

#[test]
fn a_store_opened_to_read_leaves_compaction_to_the_next_writer() {
    use crate::Compaction;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/store").unwrap();
    let deferred = || {
        Store::open_with(dir.path(), Compaction::Deferred, &mut |r| {
            panic!("no rebuild: {r:?}")
        })
        .unwrap()
    };
    // Five processes that each commit once (the first apply of a process
    // writes its runs): runs pile up in level 0, with no worker to compact
    // them.
    for session in 0..5u32 {
        let store = deferred();
        let batch = (0..12u32)
            .map(|i| {
                event(
                    &format!("e{session}-{i}"),
                    &format!("c{}", i % 3),
                    (session * 7 + i) % 60,
                )
            })
            .collect();
        store.append(batch).unwrap();
    }
    let store = deferred();
    let level0 = store.key_index().level0_tables();
    // (The first run of an empty keyspace may go below level 0.)
    assert!(
        level0 >= 12,
        "three keyspaces, four runs or more each: {level0}"
    );
    let answers = key_answers(&store);
    assert_eq!(answers.len(), 60 + 4);
    drop(store);
    let store = deferred();
    assert_eq!(
        store.key_index().level0_tables(),
        level0,
        "a deferred open compacts nothing"
    );
    assert_eq!(key_answers(&store), answers);
    drop(store);

    // The next writer compacts them, and every answer stays.
    let store = Store::open(dir.path()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while store.key_index().level0_tables() >= level0 {
        assert!(
            Instant::now() < deadline,
            "the writer never compacted level 0"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(key_answers(&store), answers);
}

/// Every stored version as (cluster, object name, valid from, resource
/// version, uid, managers), in row order per cluster.
fn version_details(store: &Store) -> Vec<(String, String, i64, String, String, Vec<String>)> {
    let mut got = Vec::new();
    for cluster in store.version_clusters().unwrap() {
        let v = store.cluster_versions(&cluster).unwrap().unwrap();
        for r in v.rows() {
            let d = v.details(r).unwrap();
            got.push((
                cluster.clone(),
                v.object(r.object).unwrap().name.to_string(),
                r.from,
                d.resource_version,
                d.uid,
                d.managers,
            ));
        }
    }
    got
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// A writer that stays open keeps the object states it wrote in
    /// memory and writes a state to the keyspace only when it changed;
    /// reopened, it reads them back. Whatever the batches, reopens and
    /// details changes, every version row names the object and details a
    /// rebuild of the index from the log gives it.
    #[test]
    fn object_states_held_or_read_back_give_the_rows_a_rebuild_gives(
        batches in proptest::collection::vec(
            (
                proptest::collection::vec((0u32..8, 0u32..2, 0u32..60, 0u32..3), 1..20),
                any::<bool>(),
            ),
            1..10,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/states").unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let mut n = 0u32;
        // What every event says, as `version_details` reads it back.
        let mut model = Vec::new();
        for (batch, reopen) in batches {
            let events: Vec<Envelope> = batch
                .iter()
                .map(|(object, cluster, minute, variant)| {
                    n += 1;
                    model.push((
                        format!("c{cluster}"),
                        format!("o{object}"),
                        i64::from(*minute),
                        n.to_string(),
                        format!("u{object}-{variant}"),
                        vec![format!("m{variant}")],
                    ));
                    // The uid and manager change with `variant`, so an
                    // object's details change now and then.
                    Envelope::parse(
                        format!(
                            r#"{{"schema":"annal.event/v1","id":"e{n}","type":"object.observed",
                            "time":"2026-11-01T10:{minute:02}:00Z","cluster":"c{cluster}",
                            "data":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{
                              "name":"o{object}","namespace":"ns","resourceVersion":"{n}",
                              "uid":"u{object}-{variant}",
                              "managedFields":[{{"manager":"m{variant}","operation":"Apply"}}]}}}}}}"#
                        )
                        .as_bytes(),
                    )
                    .unwrap()
                })
                .collect();
            store.append(events).unwrap();
            if reopen {
                drop(store);
                store = Store::open(dir.path()).unwrap();
            }
        }
        let minute = |micros: i64| (micros / 60_000_000) % 60;
        let mut live: Vec<_> = version_details(&store)
            .into_iter()
            .map(|(c, o, from, rv, uid, m)| (c, o, minute(from), rv, uid, m))
            .collect();
        live.sort();
        model.sort();
        prop_assert_eq!(&live, &model);
        // Each object has one id, whatever reopened between its versions.
        for cluster in store.version_clusters().unwrap() {
            let v = store.cluster_versions(&cluster).unwrap().unwrap();
            let names: std::collections::BTreeSet<&String> =
                model.iter().filter(|m| m.0 == cluster).map(|m| &m.1).collect();
            prop_assert_eq!(v.object_count(), names.len());
        }
        store.reindex().unwrap();
        let mut rebuilt: Vec<_> = version_details(&store)
            .into_iter()
            .map(|(c, o, from, rv, uid, m)| (c, o, minute(from), rv, uid, m))
            .collect();
        rebuilt.sort();
        prop_assert_eq!(rebuilt, live);
    }
}
