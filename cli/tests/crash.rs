//! SIGKILL during ingest, again and again: nothing lost, nothing twice.

use std::process::Stdio;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::util::*;

const RECORDS: u64 = 200_000;
const KILLS: usize = 20;

#[test]
fn repeated_sigkill_during_ingest_loses_and_duplicates_nothing() {
    let l = Ledger::new();
    let input = l.file("big.jsonl", &envelopes("crash", RECORDS));
    let input = path_str(&input).to_string();
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut kills = 0;
    let mut kills_mid_log = 0;
    let mut sizes = Vec::new();
    for _attempt in 0..200 {
        if kills >= KILLS {
            break;
        }
        let mut child = l
            .command(&["ingest", "--batch-size", "1000", &input])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A random moment: the kill itself is the event under test; nothing
        // below depends on where it lands.
        std::thread::sleep(Duration::from_millis(rng.random_range(10..1500)));
        if child.try_wait().unwrap().is_some() {
            continue; // finished before the kill; try again
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        let size = l.size();
        assert!(size <= RECORDS);
        if let Some(prev) = sizes.last() {
            assert!(size >= *prev, "the log shrank from {prev} to {size}");
        }
        if size > 0 && size < RECORDS {
            kills_mid_log += 1;
        }
        sizes.push(size);
    }
    assert!(kills >= KILLS, "only {kills} kills landed mid-ingest");
    assert!(
        kills_mid_log > 0,
        "no kill landed while the log was growing: {sizes:?}"
    );

    // Restart to completion.
    let (code, done) = l.json(&["ingest", &input]);
    assert_eq!(code, Some(0));
    assert_eq!(done["rejected"], 0);
    assert_eq!(
        l.size(),
        RECORDS,
        "every record exactly once (ids are distinct)"
    );
    // Every record is present: a further pass finds each one a duplicate.
    let (_, again) = l.json(&["ingest", &input]);
    assert_eq!(
        counts(&again),
        serde_json::json!({"appended": 0, "duplicates": RECORDS, "rejected": 0})
    );
    let (code, report) = l.json(&["verify"]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["entries"], RECORDS);
}
