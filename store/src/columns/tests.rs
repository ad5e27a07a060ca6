//! The sidecar against the leaves it is a cache of.

use std::path::Path;

use annal_schemas::Envelope;
use arrow_array::cast::AsArray;
use arrow_array::types::{TimestampMicrosecondType, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use proptest::prelude::*;

use super::{Keep, COLUMNS};
use crate::Store;

/// One row as the sidecar holds it: index, recorded_at, time, type, the
/// optional text columns, the sync columns (as text), and the object's
/// name (the hash the sidecar holds of it is compared).
type Model = (
    u64,
    i64,
    i64,
    String,
    Vec<Option<String>>,
    Vec<Option<String>>,
    Option<u32>,
);

fn event(n: u64) -> Envelope {
    let cluster = format!("c{}", n % 3);
    let json = match n % 4 {
        0 if n % 8 == 0 => format!(
            r#"{{"schema":"annal.event/v1","id":"e{n}","type":"app.sync","time":"2026-11-01T10:{:02}:00Z",
            "cluster":"{cluster}","source":"argocd","actor":{{"controller":"argocd","credential":"fp{n}"}},
            "data":{{"app":"argocd:a{}","phase":"Succeeded","revision":"r"}}}}"#,
            n % 60,
            n % 5
        ),
        0 => format!(
            r#"{{"schema":"annal.event/v1","id":"e{n}","type":"app.sync","time":"2026-11-01T10:{:02}:00Z",
            "cluster":"{cluster}","source":"argocd","actor":{{"controller":"argocd"}},
            "data":{{"app":"argocd:a{}","controller":"argocd-0","phase":"Failed","prune":true,"dry_run":false,
            "started_at":"2026-11-01T10:00:00Z","finished_at":"2026-11-01T10:00:0{}Z",
            "resources":[{{"kind":"ConfigMap","name":"m"}}],
            "metrics":{{"render_seconds":{}.5,"api_requests":{n},"api_throttled":1,"applied_bytes":2048}}}}}}"#,
            n % 60,
            n % 5,
            n % 10,
            n % 7
        ),
        1 => format!(
            r#"{{"schema":"annal.event/v1","id":"e{n}","type":"cluster.heartbeat","time":"2026-11-0{}T10:00:00Z",
            "cluster":"{cluster}","data":{{"agent":"a"}}}}"#,
            1 + n % 9
        ),
        // People and controllers write objects; groups are of one each.
        2 => format!(
            r#"{{"schema":"annal.event/v1","id":"e{n}","type":"object.observed","time":"2026-11-01T09:00:00Z",
            "cluster":"{cluster}","actor":{{"principal":"{}","impersonated":"bob","field_manager":"kubectl"}},
            "data":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"m{n}","namespace":"d"}},"app":"not-an-app"}}}}"#,
            ["alice", "system:node:n1", "system:kcm", "bob"][(n / 4 % 4) as usize]
        ),
        _ => format!(
            r#"{{"schema":"annal.event/v1","id":"e{n}","type":"controlplane.fenced","time":"2026-10-31T23:59:59Z",
            "data":{{"controller":"argocd-old"}}}}"#
        ),
    };
    Envelope::parse(json.as_bytes()).unwrap()
}

/// What the leaves say.
fn expected(store: &Store) -> Vec<Model> {
    store
        .entries(0, store.size())
        .map(|e| {
            let e = e.unwrap();
            let a = e.event.actor.clone().unwrap_or_default();
            let app = e
                .event
                .data
                .get("app")
                .and_then(|v| v.as_str())
                .map(str::to_string);
            let app = app.filter(|_| e.event.event_type.as_str().starts_with("app."));
            let d = &e.event.data;
            let text =
                |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_string);
            let metric = |k: &str| {
                d.get("metrics")
                    .and_then(|m| m.get(k))
                    .map(|v| v.to_string())
            };
            let sync = match e.event.event_type.as_str() == "app.sync" {
                true => vec![
                    text(d.get("controller")),
                    text(d.get("revision")),
                    text(d.get("phase")),
                    text(d.get("started_at")),
                    text(d.get("finished_at")),
                    Some(
                        d.get("prune")
                            .and_then(|v| v.as_bool())
                            .unwrap_or(false)
                            .to_string(),
                    ),
                    Some(
                        d.get("dry_run")
                            .and_then(|v| v.as_bool())
                            .unwrap_or(false)
                            .to_string(),
                    ),
                    Some(
                        d.get("resources")
                            .and_then(|v| v.as_array())
                            .map_or(0, |a| a.len())
                            .to_string(),
                    ),
                    metric("render_seconds"),
                    metric("api_requests"),
                    metric("api_throttled"),
                    metric("applied_bytes"),
                ],
                false => vec![None; 12],
            };
            (
                e.index,
                e.recorded_at.unix_micros(),
                e.event.time.unix_micros(),
                e.event.event_type.as_str().to_string(),
                vec![
                    e.event.cluster.clone(),
                    e.event.source.clone(),
                    a.principal,
                    a.impersonated,
                    a.field_manager,
                    a.controller,
                    a.credential,
                    app,
                ],
                sync,
                d.get("metadata")
                    .and_then(|m| m.get("name"))
                    .and_then(|n| n.as_str())
                    .map(super::name::hash),
            )
        })
        .collect()
}

/// What the chunks say (every column), and where they end.
fn in_chunks(store: &Store) -> (Vec<Model>, u64) {
    in_chunks_keeping(store, &Keep::default())
}

/// What the chunks say (every column) of the rows `keep` keeps, in log
/// order, and where they end; each file's rows must come grouped.
fn in_chunks_keeping(store: &Store, keep: &Keep) -> (Vec<Model>, u64) {
    let all: Vec<usize> = (0..COLUMNS.len()).collect();
    let mut rows = Vec::new();
    let mut next = 0;
    for chunk in store.column_chunks().unwrap() {
        assert_eq!(chunk.start, next, "the chain is contiguous");
        next = chunk.end();
        let batches = store
            .read_column_chunk(&chunk, &all, keep)
            .unwrap()
            .expect("intact");
        let mut read: Vec<Model> = batches.flat_map(|b| models(&b.unwrap())).collect();
        // A file groups its rows by type, then cluster, then principal,
        // in log order within a group.
        let key = |r: &Model| (r.3.clone(), r.4[0].clone(), r.4[2].clone(), r.0);
        assert!(
            read.windows(2).all(|w| key(&w[0]) < key(&w[1])),
            "chunk {} is not grouped by type, cluster and principal",
            chunk.start
        );
        read.sort_by_key(|r| r.0);
        rows.extend(read);
    }
    (rows, next)
}

/// The rows of a read's batch (every column, as [`super::read_schema`]).
fn models(b: &RecordBatch) -> Vec<Model> {
    assert_eq!(b.schema().fields(), super::read_schema().fields());
    let mut rows = Vec::new();
    for i in 0..b.num_rows() {
        let text = |c: usize| {
            let a = b.column(c).as_string_view();
            a.is_valid(i).then(|| a.value(i).to_string())
        };
        rows.push((
            b.column(0).as_primitive::<UInt64Type>().value(i),
            b.column(1)
                .as_primitive::<TimestampMicrosecondType>()
                .value(i),
            b.column(2)
                .as_primitive::<TimestampMicrosecondType>()
                .value(i),
            text(3).unwrap(),
            (4..12).map(text).collect(),
            (12..24).map(|c| sync_text(b.column(c), i)).collect(),
            {
                let a = b.column(24).as_primitive::<UInt32Type>();
                assert_eq!(a.null_count(), 0);
                Some(a.value(i)).filter(|h| *h != super::name::NONE)
            },
        ));
    }
    rows
}

/// A sync column's value as the model writes it (JSON's spelling).
fn sync_text(a: &dyn Array, i: usize) -> Option<String> {
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_schema::DataType;
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Utf8View => a.as_string_view().value(i).to_string(),
        DataType::Boolean => a.as_boolean().value(i).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).to_string(),
        other => panic!("a sync column of type {other}"),
    })
}

fn open(dir: &Path, rows: u64) -> Store {
    Store::open(dir).unwrap().with_column_rows(rows)
}

#[derive(Clone, Debug)]
enum Op {
    Append(u64),
    Reopen,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u64..12).prop_map(Op::Append),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the batches, reopenings and crashes, the chunks hold
    /// exactly the leaves' fields, from index 0 without a gap, and once
    /// the writer has caught up they cover every whole chunk of the log.
    #[test]
    fn chunks_hold_exactly_what_the_leaves_say(rows in 2u64..9, ops in proptest::collection::vec(op(), 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/columns").unwrap();
        let mut store = open(dir.path(), rows);
        let mut n = 0;
        for op in ops {
            match op {
                Op::Append(k) => {
                    store.append((n..n + k).map(event).collect()).unwrap();
                    n += k;
                }
                Op::Reopen => {
                    drop(store);
                    store = open(dir.path(), rows);
                }
                Op::Crash => {
                    store.abandon();
                    store = open(dir.path(), rows);
                }
            }
            // (A reader racing the writer may find a short chunk just
            // replaced, and read those entries from the leaves; the
            // chunks are compared once written.)
            store.wait_for_columns().unwrap();
            let (chunked, end) = in_chunks(&store);
            let leaves = expected(&store);
            prop_assert_eq!(&chunked[..], &leaves[..end as usize]);
        }
        store.catch_up_columns();
        store.wait_for_columns().unwrap();
        let (chunked, end) = in_chunks(&store);
        let leaves = expected(&store);
        // Whole chunks, and perhaps a short one a close wrote.
        prop_assert!(end >= n - n % rows && end <= n, "{} of {}", end, n);
        prop_assert_eq!(&chunked[..], &leaves[..end as usize]);
    }
}

/// The model of [`Keep`]: the row passes every bound it sets.
fn kept(keep: &Keep, row: &Model) -> bool {
    keep.name
        .as_ref()
        .is_none_or(|n| row.6 == Some(super::name::hash(n)))
        && keep
            .cluster
            .as_ref()
            .is_none_or(|c| row.4[0].as_ref() == Some(c))
        && keep.types.as_ref().is_none_or(|t| t.contains(&row.3))
        && keep.since.is_none_or(|s| row.2 >= s)
        && keep.until.is_none_or(|u| row.2 < u)
        && keep
            .prefixes
            .iter()
            .all(|p| text_of(row, &p.column).is_some_and(|v| v.starts_with(&p.prefix) != p.negated))
        && keep.within.iter().all(|w| {
            // The model's own reading of a set and a range.
            text_of(row, &w.column).is_some_and(|v| {
                w.values.as_ref().is_none_or(|vs| vs.contains(v))
                    && w.min.as_ref().is_none_or(|m| v >= m)
                    && w.max.as_ref().is_none_or(|m| v <= m)
            })
        })
}

/// The model row's value of the text column `column` (`None`: null, or
/// not a text column).
fn text_of<'a>(row: &'a Model, column: &str) -> Option<&'a String> {
    match super::COLUMNS.iter().position(|c| *c == column) {
        Some(3) => Some(&row.3),
        Some(c @ 4..12) => row.4[c - 4].as_ref(),
        _ => None,
    }
}

fn keep() -> impl Strategy<Value = Keep> {
    let types = [
        "app.sync",
        "cluster.heartbeat",
        "object.observed",
        "controlplane.fenced",
        "object.deleted",
    ];
    let micros = |t: &str| t.parse::<annal_schemas::Timestamp>().unwrap().unix_micros();
    let times = vec![
        micros("2026-10-31T23:59:59Z"),
        micros("2026-11-01T09:00:00Z"),
        micros("2026-11-01T10:30:00Z"),
        micros("2026-11-03T10:00:00Z"),
    ];
    (
        proptest::option::of(proptest::sample::select(vec!["m2", "m6", "m10", "m3"])),
        proptest::option::of(0u8..4),
        proptest::option::of(proptest::sample::subsequence(types.to_vec(), 0..3)),
        proptest::option::of(proptest::sample::select(times.clone())),
        proptest::option::of(proptest::sample::select(times)),
        proptest::collection::vec(prefix(), 0..3),
        proptest::collection::vec(within(), 0..3),
    )
        .prop_map(
            |(name, cluster, types, since, until, prefixes, within)| Keep {
                name: name.map(str::to_string),
                cluster: cluster.map(|c| format!("c{c}")),
                types: types.map(|t| t.into_iter().map(str::to_string).collect()),
                since,
                until,
                prefixes,
                within,
            },
        )
}

/// Sets and ranges of the test events' texts (some of none, some of a
/// column that is not text), as a join's dynamic filter gives them.
fn within() -> impl Strategy<Value = super::Within> {
    let texts = vec![
        "c0",
        "c1",
        "c2",
        "c3",
        "alice",
        "system:node:n1",
        "system:kcm",
        "fp1",
        "fp16",
        "fp40",
        "fp8",
        "argocd",
        "object.observed",
        "app.sync",
        "zz",
    ];
    (
        proptest::sample::select(vec![
            "cluster",
            "type",
            "credential",
            "principal",
            "controller",
            "sync_phase",
        ]),
        proptest::option::of(proptest::sample::subsequence(texts.clone(), 0..5)),
        proptest::option::of(proptest::sample::select(texts.clone())),
        proptest::option::of(proptest::sample::select(texts)),
    )
        .prop_map(|(column, values, min, max)| super::Within {
            column: column.to_string(),
            values: values.map(|v| {
                let mut v: Vec<String> = v.into_iter().map(str::to_string).collect();
                v.sort();
                v
            }),
            min: min.map(str::to_string),
            max: max.map(str::to_string),
        })
}

/// Prefixes of the test events' texts (and of none, and of a column
/// that is not text).
fn prefix() -> impl Strategy<Value = super::Prefix> {
    (
        proptest::sample::select(vec![
            "principal",
            "credential",
            "app",
            "type",
            "cluster",
            "controller",
            "sync_phase",
        ]),
        proptest::sample::select(vec![
            "",
            "a",
            "al",
            "alice",
            "fp1",
            "argocd:",
            "object.",
            "c1",
            "zz",
            "system:",
            "system:node:",
        ]),
        proptest::bool::ANY,
    )
        .prop_map(|(column, prefix, negated)| super::Prefix {
            column: column.to_string(),
            prefix: prefix.to_string(),
            negated,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A chunk read keeps exactly the rows the bounds match, on the
    /// first read of a file (hashed whole) and on later ones (read by
    /// range), whatever the projection.
    #[test]
    fn a_read_keeps_exactly_the_rows_its_bounds_match(keeps in proptest::collection::vec(keep(), 1..4)) {
        let (_dir, store) = filled(16, 90);
        let (all, end) = in_chunks(&store);
        prop_assert_eq!(end, 80, "five whole chunks");
        for keep in keeps {
            let want: Vec<Model> = all.iter().filter(|r| kept(&keep, r)).cloned().collect();
            let (got, _) = in_chunks_keeping(&store, &keep);
            prop_assert_eq!(&got, &want, "{:?}", keep);
            // One projected column that no bound reads: the row count.
            let counted: usize = store
                .column_chunks()
                .unwrap()
                .iter()
                .map(|c| {
                    store
                        .read_column_chunk(c, &[0], &keep)
                        .unwrap()
                        .expect("intact")
                        .map(|b| b.unwrap().num_rows())
                        .sum::<usize>()
                })
                .sum();
            prop_assert_eq!(counted, want.len());
            // The same entries built from the leaves (what a scan reads
            // past the last chunk, or for a damaged one) keep the same rows.
            let built: Vec<Model> = store
                .column_batches_from_leaves(0, end, &keep)
                .unwrap()
                .flat_map(|b| models(&b.unwrap()))
                .collect();
            prop_assert_eq!(&built, &want, "{:?}", keep);
        }
    }
}

fn filled(rows: u64, events: u64) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/columns").unwrap();
    let store = open(dir.path(), rows);
    for n in (0..events).step_by(7) {
        store
            .append((n..(n + 7).min(events)).map(event).collect())
            .unwrap();
    }
    store.wait_for_columns().unwrap();
    (dir, store)
}

/// Each file's footer names its groups, and they are its rows: every
/// run's rows have its type, cluster and principal, the runs ordered and
/// adding up to the file (a read of one cluster selects rows by them
/// alone).
#[test]
fn a_files_groups_are_its_runs_of_type_cluster_and_principal() {
    let (dir, store) = filled(16, 90);
    let chunks = store.column_chunks().unwrap();
    assert_eq!(chunks.len(), 5);
    let mut principals = std::collections::BTreeSet::new();
    for chunk in chunks {
        let bytes =
            bytes::Bytes::from(std::fs::read(chunk.path(&dir.path().join("columns"))).unwrap());
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        let groups = super::file::groups(reader.metadata()).expect("named in the footer");
        let mut rows = Vec::new();
        for b in reader.build().unwrap() {
            let b = b.unwrap();
            let text = |c: usize, i: usize| {
                let a = b.column(c).as_string::<i32>();
                a.is_valid(i).then(|| a.value(i).to_string())
            };
            rows.extend((0..b.num_rows()).map(|i| (text(3, i).unwrap(), text(4, i), text(6, i))));
        }
        assert_eq!(groups.run_principals.len() * 3, groups.runs.len());
        let mut at = 0;
        let mut last = None;
        for (i, run) in groups.runs.chunks_exact(3).enumerate() {
            let key = (
                groups.types[run[0] as usize].clone(),
                groups.clusters[run[1] as usize].clone(),
                groups.principals[groups.run_principals[i] as usize].clone(),
            );
            assert!(last.as_ref().is_none_or(|l| *l < key), "runs in order");
            let n = run[2] as usize;
            assert!(n > 0);
            assert!(rows[at..at + n].iter().all(|r| *r == key), "{key:?}");
            principals.insert(key.2.clone());
            at += n;
            last = Some(key);
        }
        assert_eq!(at, rows.len());
        assert_eq!(at as u64, chunk.rows);
    }
    assert!(
        principals.len() >= 4,
        "people, controllers and none: {principals:?}"
    );
}

#[test]
fn a_changed_chunk_file_is_never_read_and_is_rebuilt() {
    let (dir, store) = filled(10, 45);
    let chunks = store.column_chunks().unwrap();
    assert_eq!(chunks.len(), 4);
    let path = chunks[1].path(&dir.path().join("columns"));
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    // A fresh process has not checked the file yet.
    drop(store);
    let store = open(dir.path(), 10);
    assert!(store
        .read_column_chunk(&chunks[1], &[0], &Keep::default())
        .unwrap()
        .is_none());
    store.wait_for_columns().unwrap();
    // The 5 entries past the last whole chunk were written short on close.
    let (chunked, end) = in_chunks(&store);
    assert_eq!(end, 45);
    assert_eq!(chunked, expected(&store));
}

#[test]
fn a_cut_chunk_file_is_found_on_open_and_rebuilt() {
    let (dir, store) = filled(10, 45);
    let path = store.column_chunks().unwrap()[2].path(&dir.path().join("columns"));
    drop(store);
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let store = open(dir.path(), 10);
    store.wait_for_columns().unwrap();
    let (chunked, end) = in_chunks(&store);
    assert_eq!(end, 45);
    assert_eq!(chunked, expected(&store));
}

#[test]
fn a_short_chunk_written_on_close_is_filled_up_and_replaced() {
    let (dir, store) = filled(10, 45);
    drop(store);
    let columns = dir.path().join("columns");
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(&columns)
            .unwrap()
            .map(|f| f.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        files().last().unwrap(),
        &format!("{:020}-{:020}.parquet", 40, 45)
    );
    let store = open(dir.path(), 10);
    store.append((45..55).map(event).collect()).unwrap();
    store.wait_for_columns().unwrap();
    let chunks = store.column_chunks().unwrap();
    assert_eq!(
        chunks
            .iter()
            .map(|c| (c.start, c.end()))
            .collect::<Vec<_>>(),
        vec![(0, 10), (10, 20), (20, 30), (30, 40), (40, 50)]
    );
    assert!(!files().contains(&format!("{:020}-{:020}.parquet", 40, 45)));
    let (chunked, _) = in_chunks(&store);
    assert_eq!(chunked[..], expected(&store)[..50]);
    // Fewer than 1/16 of a chunk in memory: nothing is written on close.
    drop(store);
    let store = open(dir.path(), 1000);
    store.append(vec![event(55)]).unwrap();
    drop(store);
    let store = open(dir.path(), 1000);
    assert_eq!(in_chunks(&store).1, 55);
}

/// A writer that never filled a chunk has no chunk thread running when it
/// closes: the short chunk must still be written (a ledger smaller than
/// one chunk, such as the demo's, had no sidecar at all, and every scan
/// decoded the leaves).
#[test]
fn a_writer_that_never_filled_a_chunk_writes_its_rows_short_on_close() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/columns").unwrap();
    let store = open(dir.path(), 1000);
    for n in (0..100).step_by(10) {
        store.append((n..n + 10).map(event).collect()).unwrap();
    }
    drop(store);
    let store = open(dir.path(), 1000);
    let (chunked, end) = in_chunks(&store);
    assert_eq!(end, 100);
    assert_eq!(chunked, expected(&store));
}

#[test]
fn chunks_of_another_history_are_dropped() {
    let (dir, store) = filled(10, 30);
    drop(store);
    // Another ledger's sidecar, copied over this one's.
    let (other, other_store) = filled(10, 25);
    drop(other_store);
    let ours = dir.path().join("columns");
    std::fs::remove_dir_all(&ours).unwrap();
    std::fs::create_dir(&ours).unwrap();
    for f in std::fs::read_dir(other.path().join("columns")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, ours.join(f.file_name().unwrap())).unwrap();
    }
    let store = open(dir.path(), 10);
    assert!(
        store.column_chunks().unwrap().is_empty(),
        "another root: dropped"
    );
    store.catch_up_columns();
    store.wait_for_columns().unwrap();
    let (chunked, end) = in_chunks(&store);
    assert_eq!(end, 30);
    assert_eq!(chunked, expected(&store));
}

#[test]
fn chunks_of_an_older_layout_are_read_from_the_leaves_and_written_again() {
    let (dir, store) = filled(10, 45);
    drop(store);
    let columns = dir.path().join("columns");
    let mut chain = super::manifest::load(&columns).unwrap().chain;
    for c in &mut chain {
        c.layout = 1;
    }
    super::manifest::rewrite(&columns, &chain).unwrap();
    let mut reports = Vec::new();
    let store = Store::open_reporting(dir.path(), &mut |r| reports.push(r))
        .unwrap()
        .with_column_rows(10);
    assert_eq!(reports, vec![crate::Rebuild::Columns { chunks: 5 }]);
    // Until written again, an old chunk is not read (its columns differ).
    assert!(store
        .read_column_chunk(&chain[0], &[0], &Keep::default())
        .unwrap()
        .is_none());
    store.wait_for_columns().unwrap();
    let chunks = store.column_chunks().unwrap();
    assert!(chunks.iter().all(|c| c.layout == super::LAYOUT));
    let (chunked, end) = in_chunks(&store);
    assert_eq!(end, 45);
    assert_eq!(chunked, expected(&store));
    drop(store);
    let mut again = Vec::new();
    drop(Store::open_reporting(dir.path(), &mut |r| again.push(r)).unwrap());
    assert!(again.is_empty(), "written once: {again:?}");
}

#[test]
fn reindex_rebuilds_the_sidecar() {
    let (dir, store) = filled(10, 33);
    assert_eq!(in_chunks(&store).1, 30, "the 3 past the chunks in memory");
    let (_, rebuilt) = store.reindex().unwrap();
    assert!(rebuilt.contains(&"column sidecar"));
    // Every entry, the last 3 as a short chunk.
    assert_eq!(in_chunks(&store), (expected(&store), 33));
    // Again after a reopen, whose writer found that short chunk last.
    drop(store);
    let store = open(dir.path(), 10);
    store.reindex().unwrap();
    assert_eq!(in_chunks(&store), (expected(&store), 33));
}

/// A store that keeps chunks answers a held chunk from the bytes it
/// checked, with the same rows, even once the file is cut on disk; one
/// that keeps none finds the cut file damaged.
#[test]
fn a_held_chunk_is_read_as_it_was_checked() {
    let all: Vec<usize> = (0..COLUMNS.len()).collect();
    let cut_second = |hold: bool| {
        let (dir, store) = filled(10, 45);
        if hold {
            store.keep_column_chunks();
        }
        let (before, _) = in_chunks(&store);
        let chunk = store.column_chunks().unwrap()[1].clone();
        let path = chunk.path(&dir.path().join("columns"));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(chunk.bytes / 2)
            .unwrap();
        let read = store
            .read_column_chunk(&chunk, &all, &Keep::default())
            .unwrap()
            .map(|b| b.map(|b| b.unwrap().num_rows()).sum::<usize>());
        let after = read.is_some().then(|| in_chunks(&store).0);
        (read, chunk.rows as usize, before, after)
    };
    let (read, rows, before, after) = cut_second(true);
    assert_eq!(read, Some(rows));
    assert_eq!(after, Some(before));
    let (read, _, _, _) = cut_second(false);
    assert_eq!(read, None, "a store that holds nothing reads the cut file");
}

/// Every bound on the principal, answered by a file's runs of one
/// principal each (the principal column then comes from the runs, not
/// the file), keeps the rows the leaves say, alone and beside a type
/// bound (human-writes-per-day's read).
#[test]
fn principal_bounds_answered_by_the_groups_keep_what_the_leaves_say() {
    let (_dir, store) = filled(16, 90);
    let (all, _) = in_chunks(&store);
    let prefix = |prefix: &str, negated| super::Prefix {
        column: "principal".into(),
        prefix: prefix.into(),
        negated,
    };
    let within = |values: &[&str]| super::Within {
        column: "principal".into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
        min: None,
        max: None,
    };
    let mut keeps = Vec::new();
    for types in [None, Some(vec!["object.observed".to_string()])] {
        for p in [
            prefix("system:", true),
            prefix("system:", false),
            prefix("alice", false),
            prefix("zz", true),
        ] {
            keeps.push(Keep {
                types: types.clone(),
                prefixes: vec![p],
                ..Keep::default()
            });
        }
        keeps.push(Keep {
            types: types.clone(),
            within: vec![within(&["bob", "system:kcm"])],
            ..Keep::default()
        });
    }
    for keep in keeps {
        let want: Vec<Model> = all.iter().filter(|r| kept(&keep, r)).cloned().collect();
        assert!(!want.is_empty(), "{keep:?}");
        let (got, _) = in_chunks_keeping(&store, &keep);
        assert_eq!(got, want, "{keep:?}");
    }
}
