//! A ledger written by an older annal opens with this one: the indexes are
//! rebuilt on first open (said on stderr), and every answer is the one the
//! old binary printed (store/testdata/v2-ledger.README.md,
//! v3-ledger.README.md).

use crate::util::{copy_tree, stderr, Ledger};

fn testdata() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/testdata")
}

fn printed(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(testdata().join(name)).unwrap()).unwrap()
}

#[test]
fn a_second_layout_ledger_answers_as_the_old_binary_did() {
    answers_as_printed(
        "v2-ledger",
        "layout 1",
        "7f26217b2114b6bbe881169ad7b0cafd60c40916c11123bce28284913cab2aca",
    );
}

#[test]
fn a_third_layout_ledger_answers_as_the_old_binary_did() {
    answers_as_printed(
        "v3-ledger",
        "layout 2 (every key through fjall's journal)",
        "a5fa902eff365b24f55800d1aa01c38c5b34bae34e8f5be3801e977bce9099ea",
    );
}

/// The fixture `name` (whose old binary printed what v2-ledger's did)
/// opens saying it rebuilds `layout`, then answers as printed, with its
/// root `root`.
fn answers_as_printed(name: &str, layout: &str, root: &str) {
    let ledger = Ledger::empty();
    copy_tree(&testdata().join(name), &ledger.data());
    let first = ledger.run(&["inventory", "--at", "2026-11-01T10:30:00Z", "-o", "json"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let said = stderr(&first);
    assert!(
        said.contains("building the indexes from 20 entries") && said.contains(layout),
        "{said}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(doc["objects"], printed("v2-ledger.inventory-1030.json"));
    // Later opens rebuild nothing and answer the same.
    let again = ledger.run(&["inventory", "--at", "2026-11-01T09:50:00Z", "-o", "json"]);
    assert_eq!(stderr(&again), "");
    let doc: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(doc["objects"], printed("v2-ledger.inventory-0950.json"));
    let (code, doc) = ledger.json(&[
        "sql",
        "select cluster, kind, name, valid_from, valid_to from objects order by cluster, kind, name, valid_from",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(doc, printed("v2-ledger.objects.json"));
    let (_, status) = ledger.json(&["status"]);
    assert_eq!(status["root"], root);
    let verify = ledger.run(&["verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
}
