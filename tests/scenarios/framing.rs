//! Broken input in the middle of a file costs one record, never the rest.

use annal_ingest::pipeline::{self, Observer};
use annal_ingest::{Format, Input, Rejected};
use annal_store::Store;

#[derive(Default)]
struct Collect(Vec<String>);

impl Observer for Collect {
    fn rejected(&mut self, r: &Rejected, _id: &str) {
        self.0.push(r.to_string());
    }
}

fn line(id: &str) -> String {
    format!(
        r#"{{"schema":"annal.event/v1","id":"{id}","type":"controlplane.fenced","time":"2026-11-01T10:00:00Z","data":{{"controller":"argocd-old"}}}}"#
    )
}

#[test]
fn a_broken_array_element_is_quarantined_and_its_neighbours_stored() {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/framing").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let text = format!(
        "[\n{},\n{{\"schema\": \"annal.event/v1\", \"id\": 5}},\n{},\n]\n",
        line("a"),
        line("c")
    );
    let mut seen = Collect::default();
    let summary = pipeline::run(
        &store,
        vec![Input::reader(
            "batch.json",
            std::io::Cursor::new(text.into_bytes()),
        )],
        Format::Envelope,
        &pipeline::Options::default(),
        &mut seen,
    )
    .unwrap();
    assert_eq!((summary.appended, summary.rejected), (2, 2));
    assert!(
        seen.0[0].starts_with("batch.json:3: field `id`"),
        "{:?}",
        seen.0
    );
    assert!(
        seen.0[1].starts_with("batch.json:5: trailing comma"),
        "{:?}",
        seen.0
    );
    let q: Vec<_> = store.quarantine().list().map(Result::unwrap).collect();
    assert_eq!(q.len(), 2);
    assert!(q.iter().any(|r| r.raw.contains("\"id\": 5")));
    assert_eq!(store.index_of("c").unwrap(), Some(1));
}
