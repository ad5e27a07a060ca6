//! Coverage against a naive model: random heartbeats of a few clusters
//! over a day, appended in a random order and random batches (so that
//! clusters "flush" late), then at random instants and as known at every
//! batch boundary: which clusters are stale, when each was last seen, and
//! the gaps of a window, each computed here from the entries alone.

use annal_query::asof::coverage::{self, Window};
use annal_query::asof::inventory::AsOf;
use annal_schemas::{Envelope, Timestamp};
use annal_store::{Entry, Store};
use proptest::prelude::*;
use serde_json::json;

const CLUSTERS: [&str; 3] = ["c0", "c1", "c2"];
const GAP: i64 = 600;

fn time(minute: i64) -> Timestamp {
    Timestamp::from_unix_micros(1_793_520_000_000_000 + minute * 60_000_000).unwrap()
}

fn envelope(n: usize, cluster: usize, minute: i64) -> Envelope {
    let e = json!({"schema": "annal.event/v1", "id": format!("hb-{n}"),
                   "type": "cluster.heartbeat", "time": time(minute).to_string(),
                   "cluster": CLUSTERS[cluster], "data": {"agent": "a"}});
    Envelope::parse(e.to_string().as_bytes()).unwrap()
}

/// Valid time of the last event of `cluster` at or before `at` among
/// those recorded below `known_below`.
fn naive_last(
    entries: &[Entry],
    cluster: &str,
    at: Timestamp,
    known_below: u64,
) -> Option<Timestamp> {
    entries
        .iter()
        .filter(|e| e.index < known_below && e.event.cluster.as_deref() == Some(cluster))
        .map(|e| e.event.time)
        .filter(|t| *t <= at)
        .max()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn staleness_last_seen_and_gaps_equal_the_naive_model(
        beats in proptest::collection::vec((0..CLUSTERS.len(), 0..1440i64), 1..60),
        seed in any::<u64>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..4),
        instants in proptest::collection::vec(-10..1500i64, 1..5),
    ) {
        let events: Vec<Envelope> = beats.iter().enumerate().map(|(n, (c, m))| envelope(n, *c, *m)).collect();
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/coverage").unwrap();
        let store = Store::open(dir.path()).unwrap();
        // A seeded shuffle, cut into batches.
        let mut order: Vec<usize> = (0..events.len()).collect();
        let mut x = seed | 1;
        for i in (1..order.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (order.len() + 1)).collect();
        bounds.push(order.len());
        bounds.sort();
        let mut start = 0;
        let mut known_at = vec![None];
        for end in bounds {
            if end > start {
                store.append(order[start..end].iter().map(|&i| events[i].clone()).collect()).unwrap();
                start = end;
                known_at.push(Some(Timestamp::now()));
            }
        }
        let entries: Vec<Entry> = store.entries(0, store.size()).map(Result::unwrap).collect();
        for k in known_at {
            for &m in &instants {
                let at = time(m);
                let as_of = AsOf::new(&store, at, k).unwrap();
                let kb = as_of.known_below;
                // Stale: sent something by `at`, nothing in the gap before it.
                let want: Vec<(String, Timestamp, i64)> = CLUSTERS
                    .iter()
                    .filter_map(|c| {
                        let last = naive_last(&entries, c, at, kb)?;
                        let silent = (at.unix_micros() - last.unix_micros()) / 1_000_000;
                        (at.unix_micros() - last.unix_micros() >= GAP * 1_000_000)
                            .then(|| (c.to_string(), last, silent))
                    })
                    .collect();
                let got: Vec<(String, Timestamp, i64)> = coverage::stale_in(&store, &[], &as_of, Some(GAP))
                    .unwrap()
                    .into_iter()
                    .map(|s| (s.cluster, s.last_seen, s.gap_seconds))
                    .collect();
                prop_assert_eq!(got, want, "at minute {} known_at {:?}", m, k);

                // Gaps of the window [minute 0, at]: between consecutive
                // known events, and open to the end.
                if m < 0 {
                    continue;
                }
                let window = Window { from: Some(time(0)), to: at, at: as_of, gap_seconds: GAP };
                for c in coverage::coverage(&store, &[], &window).unwrap() {
                    let mut times: Vec<Timestamp> = entries
                        .iter()
                        .filter(|e| e.index < kb && e.event.cluster.as_deref() == Some(c.cluster.as_str()))
                        .map(|e| e.event.time)
                        .filter(|t| *t >= time(0) && *t <= at)
                        .collect();
                    times.sort();
                    let mut want = Vec::new();
                    for w in times.windows(2) {
                        let s = (w[1].unix_micros() - w[0].unix_micros()) / 1_000_000;
                        if s > GAP {
                            want.push((w[0], w[1], false));
                        }
                    }
                    if let Some(last) = times.last() {
                        if (at.unix_micros() - last.unix_micros()) / 1_000_000 > GAP {
                            want.push((*last, at, true));
                        }
                    }
                    let got: Vec<(Timestamp, Timestamp, bool)> =
                        c.gaps.iter().map(|g| (g.from, g.to, g.open)).collect();
                    prop_assert_eq!(got, want, "{} to minute {}", c.cluster, m);
                    prop_assert_eq!(c.events, times.len() as u64);
                }
            }
        }
    }
}
