//! Conformance over every published sample in `../shared/fixtures/real`.
//!
//! Each file is ingested with `--format auto --cluster fixture` into a fresh
//! store. Valid files must ingest with zero rejections; the deliberately
//! broken ones (`malformed/` folders and `falco/fal_01_003.jsonl`) must be
//! rejected with a message naming the file, line and reason. A second ingest
//! of the same file must append nothing. A summary per file (events by
//! type, objects, owners, skips, rejections) is compared with the
//! checked-in golden file, so that any change in what an adapter extracts
//! shows up in review. `ANNAL_BLESS=1` rewrites the golden file.
//!
//! The fixtures live outside this repository (CI places `shared/` beside
//! the clone); without them this test says so and checks nothing, and the
//! project's own fixtures (`ingest/testdata`) keep the adapters covered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use annal_ingest::pipeline::{self, Observer};
use annal_ingest::{Format, Input, Rejected};
use annal_schemas::data::KubeObject;
use annal_schemas::ownership;
use annal_schemas::EventType;
use annal_store::Store;
use serde_json::{json, Value};

const GOLDEN: &str = "golden/real-fixtures.json";

pub fn fixtures_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("ANNAL_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/real"),
    };
    dir.is_dir().then_some(dir)
}

fn expected_invalid(rel: &str) -> bool {
    rel.contains("/malformed/") || rel == "k8s-audit/falco/fal_01_003.jsonl"
}

#[derive(Default)]
struct Collect(Vec<Rejected>);

impl Observer for Collect {
    fn rejected(&mut self, rejected: &Rejected, _id: &str) {
        self.0.push(rejected.clone());
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != "SOURCES.md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_real_fixture_ingests_or_is_rejected_as_documented() {
    let Some(dir) = fixtures_dir() else {
        eprintln!("conformance: ../shared/fixtures/real not found; skipped (CI has it)");
        return;
    };
    let files = files(&dir);
    assert!(
        files.len() > 150,
        "expected the whole corpus, found {}",
        files.len()
    );
    let mut summaries = BTreeMap::new();
    let mut problems = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let tmp = tempfile::tempdir().unwrap();
        Store::init(tmp.path(), "annal.test/conformance").unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let options = pipeline::Options {
            cluster: Some("fixture".into()),
            ..pipeline::Options::default()
        };
        let run = |observer: &mut Collect| {
            let input = Input::open(path.to_str().unwrap()).unwrap();
            pipeline::run(&store, vec![input], Format::Auto, &options, observer).unwrap()
        };
        let mut rejected = Collect::default();
        let first = run(&mut rejected);
        let mut again = Collect::default();
        let second = run(&mut again);
        if second.appended != 0 {
            problems.push(format!("{rel}: re-ingest appended {}", second.appended));
        }
        if expected_invalid(&rel) {
            if rejected.0.is_empty() {
                problems.push(format!("{rel}: invalid input was accepted"));
            }
            for r in &rejected.0 {
                let text = r.to_string();
                let named = text.starts_with(&format!("{}:", path.display()))
                    && r.line.is_some_and(|l| l > 0)
                    && !r.reason.is_empty();
                if !named {
                    problems.push(format!(
                        "{rel}: rejection does not name file, line and reason: {text}"
                    ));
                }
            }
        } else if !rejected.0.is_empty() {
            for r in &rejected.0 {
                problems.push(format!("{rel}: unexpected rejection: {r}"));
            }
        }
        summaries.insert(rel, summarize(&store, &first, &rejected.0));
    }
    assert!(
        problems.is_empty(),
        "conformance problems:\n{}",
        problems.join("\n")
    );

    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    let actual = serde_json::to_string_pretty(&summaries).unwrap() + "\n";
    if std::env::var_os("ANNAL_BLESS").is_some() {
        std::fs::create_dir_all(golden_path.parent().unwrap()).unwrap();
        std::fs::write(&golden_path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&golden_path)
        .unwrap_or_else(|e| panic!("{}: {e} (ANNAL_BLESS=1 writes it)", golden_path.display()));
    if expected != actual {
        let want: BTreeMap<String, Value> = serde_json::from_str(&expected).unwrap();
        let diffs: Vec<String> = summaries
            .iter()
            .filter(|(k, v)| want.get(*k) != Some(v))
            .map(|(k, v)| {
                format!(
                    "{k}:\n  golden: {}\n  actual: {v}",
                    want.get(k).map_or("(none)".into(), |w| w.to_string())
                )
            })
            .chain(
                want.keys()
                    .filter(|k| !summaries.contains_key(*k))
                    .map(|k| format!("{k}: in golden, not in corpus")),
            )
            .collect();
        panic!(
            "golden summaries differ (ANNAL_BLESS=1 to accept):\n{}",
            diffs.join("\n")
        );
    }
}

/// What one file produced, in a form that reads well in review.
fn summarize(store: &Store, summary: &pipeline::Summary, rejected: &[Rejected]) -> Value {
    let mut by_type: BTreeMap<&str, u64> = BTreeMap::new();
    let mut objects = BTreeSet::new();
    let mut owners = BTreeSet::new();
    let mut apps = BTreeSet::new();
    let mut clusters = BTreeSet::new();
    for entry in store.entries(0, store.size()) {
        let event = entry.unwrap().event;
        *by_type.entry(event.event_type.as_str()).or_default() += 1;
        if let Some(c) = &event.cluster {
            clusters.insert(c.clone());
        }
        if let Some(app) = event.data.get("app").and_then(Value::as_str) {
            apps.insert(app.to_string());
        }
        if event.event_type == EventType::ObjectObserved {
            let obj: KubeObject = serde_json::from_value(event.data).unwrap();
            let ns = obj.metadata.namespace.clone().unwrap_or_default();
            objects.insert(format!("{}/{}/{}", obj.kind, ns, obj.metadata.name));
            let markers = ownership::of_object(&obj);
            for claim in markers.claims {
                owners.insert(format!("{} ({})", claim.owner, claim.marker.as_str()));
            }
            if let Some(t) = markers.tracking_mismatch {
                owners.insert(format!("tracking-id mismatch: {t}"));
            }
        }
    }
    let times: BTreeMap<&str, u64> = summary.times.iter().map(|(s, n)| (s.as_str(), n)).collect();
    let mut out = json!({
        "records": summary.records,
        "events": by_type,
        "objects": objects,
        "owners": owners,
        "apps": apps,
        "clusters": clusters,
        "time": times,
    });
    if !summary.skipped.is_empty() {
        out["skipped"] = json!(summary.skipped);
    }
    if !rejected.is_empty() {
        out["rejected"] = json!(rejected
            .iter()
            .map(|r| format!("line {}: {}", r.line.unwrap_or(0), r.reason))
            .collect::<Vec<_>>());
    }
    out
}
