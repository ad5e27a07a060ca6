//! `annal verify` against a log changed behind its back.

use std::fs;

use crate::util::*;

const N: u64 = 40;

fn ledger_with_entries() -> Ledger {
    let l = Ledger::new();
    let f = l.file("events.jsonl", &envelopes("tamper", N));
    assert_eq!(l.run(&["ingest", path_str(&f)]).status.code(), Some(0));
    assert_eq!(l.run(&["verify"]).status.code(), Some(0));
    l
}

fn lines(l: &Ledger) -> Vec<String> {
    fs::read_to_string(l.segment())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(l: &Ledger, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(l.segment(), text).unwrap();
}

/// Runs verify and returns (exit code, problem index, human line).
fn verify(l: &Ledger) -> (Option<i32>, Option<u64>, String) {
    let (code, doc) = l.json(&["verify"]);
    let human = stdout(&l.run(&["verify"]));
    (code, doc["problem"]["index"].as_u64(), human)
}

#[test]
fn one_changed_byte_is_named_by_index() {
    let l = ledger_with_entries();
    let mut bytes = fs::read(l.segment()).unwrap();
    // Change one digit inside leaf 5's "version" value.
    let lines = lines(&l);
    let start: usize = lines[..5].iter().map(|s| s.len() + 1).sum();
    let at = start + lines[5].find("\"version\":\"5\"").unwrap() + 11;
    assert_eq!(bytes[at], b'5');
    bytes[at] = b'6';
    fs::write(l.segment(), bytes).unwrap();
    let (code, index, human) = verify(&l);
    assert_eq!(code, Some(1));
    assert_eq!(index, Some(5));
    assert!(human.starts_with("FAILED at index 5"), "{human}");
}

#[test]
fn a_deleted_last_leaf_is_named_and_writes_are_refused() {
    let l = ledger_with_entries();
    let mut all = lines(&l);
    all.pop();
    write_lines(&l, &all);
    let (code, index, human) = verify(&l);
    assert_eq!(code, Some(1));
    assert_eq!(index, Some(N - 1));
    assert!(human.contains("missing"), "{human}");
    let f = l.file("more.jsonl", &envelopes("after", 1));
    let out = l.run(&["ingest", path_str(&f)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("writes refused"), "{}", stderr(&out));
}

#[test]
fn swapped_leaves_are_named_by_the_first_index() {
    let l = ledger_with_entries();
    let mut all = lines(&l);
    all.swap(2, 7);
    write_lines(&l, &all);
    let (code, index, human) = verify(&l);
    assert_eq!(code, Some(1));
    assert_eq!(index, Some(2));
    assert!(human.contains("reordered"), "{human}");
}

#[test]
fn a_forged_checkpoint_or_another_key_fails_verification() {
    let l = ledger_with_entries();
    // An auditor's own copy of someone else's key does not verify this log.
    let other = Ledger::new();
    let key = other.data().join("keys/checkpoint.vkey");
    let (code, doc) = l.json(&["verify", "--key", path_str(&key)]);
    assert_eq!(code, Some(1));
    assert!(
        doc["problem"]["reason"]
            .as_str()
            .unwrap()
            .contains("checkpoint"),
        "{doc}"
    );
    // The ledger's own public key does.
    let own = l.data().join("keys/checkpoint.vkey");
    assert_eq!(l.json(&["verify", "--key", path_str(&own)]).0, Some(0));
}
