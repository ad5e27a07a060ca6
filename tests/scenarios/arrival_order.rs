//! The same events, ingested in any order and any batch split, give the same
//! answers: arrival order must never change what annal says existed at T.

use annal_ingest::{pipeline, Format, Input};
use annal_query::asof::inventory::{self, AsOf};
use annal_store::Store;
use proptest::prelude::*;

const EXAMPLES: &str = include_str!("../../examples/quickstart.jsonl");

fn ingest(lines: &[&str], batch_size: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    Store::init(dir.path(), "annal.test/scenario").unwrap();
    let store = Store::open(dir.path()).unwrap();
    let text = lines.join("\n") + "\n";
    let summary = pipeline::run(
        &store,
        vec![Input::reader(
            "examples",
            std::io::Cursor::new(text.into_bytes()),
        )],
        Format::Envelope,
        &pipeline::Options {
            batch_size,
            ..pipeline::Options::default()
        },
        &mut (),
    )
    .unwrap();
    assert_eq!(summary.rejected, 0);
    (dir, store)
}

fn names_at(store: &Store, at: &str) -> Vec<String> {
    let as_of = AsOf::new(store, at.parse().unwrap(), None).unwrap();
    inventory::fleet_at(store, None, &as_of)
        .unwrap()
        .into_iter()
        .map(|o| {
            format!(
                "{}/{}/{}/{}",
                o.cluster, o.object.kind, o.object.namespace, o.object.name
            )
        })
        .collect()
}

const INSTANTS: [&str; 5] = [
    "2026-11-01T08:59:59Z",
    "2026-11-01T09:00:00Z",
    "2026-11-01T09:30:00Z",
    "2026-11-01T10:30:00Z",
    "2026-11-02T00:00:00Z",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn any_arrival_order_and_batching_gives_the_same_objects(
        order in Just(EXAMPLES.lines().collect::<Vec<_>>()).prop_shuffle(),
        batch_size in 1usize..8,
        repeat in any::<bool>(),
    ) {
        let baseline = ingest(&EXAMPLES.lines().collect::<Vec<_>>(), 4096);
        let mut lines = order.clone();
        if repeat {
            // Redelivery of a prefix: duplicates change nothing.
            lines.extend(order.iter().take(5));
        }
        let shuffled = ingest(&lines, batch_size);
        prop_assert_eq!(shuffled.1.size(), baseline.1.size());
        for at in INSTANTS {
            prop_assert_eq!(names_at(&shuffled.1, at), names_at(&baseline.1, at), "at {}", at);
        }
        prop_assert!(shuffled.1.verify(None).unwrap().is_intact());
    }
}

#[test]
fn the_examples_reconstruct_as_documented() {
    let (_dir, store) = ingest(&EXAMPLES.lines().collect::<Vec<_>>(), 3);
    assert_eq!(
        names_at(&store, "2026-11-01T08:59:59Z"),
        Vec::<String>::new()
    );
    assert_eq!(
        names_at(&store, "2026-11-01T09:30:00Z"),
        [
            "prod-eu1-a/ConfigMap/guestbook/legacy-config",
            "prod-eu1-a/Namespace//guestbook"
        ]
    );
    let later = names_at(&store, "2026-11-01T10:30:00Z");
    assert!(
        !later.iter().any(|n| n.contains("legacy-config")),
        "deleted at 10:30"
    );
    assert_eq!(later.len(), 5);
}
