//! Auditor integrity end to end: `annal proof` documents checked by the
//! independent Python verifier (`tools/verify_proof.py`, no annal code),
//! their mutations refused, the HTTP equivalents, the tamper drill (a tail
//! rewritten and re-signed with the real key, caught from an older saved
//! checkpoint) and key rotation with dual signatures.
//!
//! The verifier needs `python3` with `blake3` and `cryptography`;
//! `scripts/test.sh` installs them and sets `ANNAL_REQUIRE_PYTHON=1`, so in
//! CI a missing module fails instead of skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// Whether the independent verifier can run here.
fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import blake3, cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("ANNAL_REQUIRE_PYTHON").is_err(),
            "ANNAL_REQUIRE_PYTHON is set but python3 cannot import blake3 and cryptography"
        );
        eprintln!("skipped: python3 with blake3 and cryptography is needed (pip install blake3 cryptography)");
    }
    ok
}

/// Runs `tools/verify_proof.py`; returns (passed, what it printed).
fn python_verify(proof: &Path, key: &Path, saved: Option<&Path>) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/verify_proof.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).arg(proof).arg("--key").arg(key);
    if let Some(saved) = saved {
        cmd.arg("--checkpoint").arg(saved);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    match out.status.code() {
        Some(0) => {
            assert!(text.starts_with("OK: "), "{text}");
            (true, text)
        }
        Some(1) => {
            assert!(text.starts_with("FAILED: "), "{text}");
            (false, text)
        }
        other => panic!("verify_proof.py exited {other:?}: {text}"),
    }
}

/// `annal proof ...` as a JSON document (it prints JSON whatever `-o`).
fn proof(l: &Ledger, args: &[&str]) -> Value {
    let mut all = vec!["proof"];
    all.extend(args);
    let out = l.run(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn write_json(l: &Ledger, name: &str, doc: &Value) -> PathBuf {
    l.file(name, &serde_json::to_string_pretty(doc).unwrap())
}

/// The ledger's verifier key, saved as an auditor would.
fn save_key(l: &Ledger, name: &str) -> PathBuf {
    let out = l.run(&["key", "show"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let key = stdout(&out).lines().next().unwrap().to_string();
    assert!(key.starts_with("annal.test/cli+"), "{key}");
    l.file(name, &format!("{key}\n"))
}

fn save_checkpoint(l: &Ledger, name: &str) -> PathBuf {
    let note = std::fs::read_to_string(l.data().join("checkpoint")).unwrap();
    l.file(name, &note)
}

/// Flips one bit of the character at `at` in a hex string.
fn flip_hex(hex: &str, at: usize) -> String {
    let mut chars: Vec<char> = hex.chars().collect();
    let digit = chars[at].to_digit(16).unwrap() ^ 1;
    chars[at] = std::char::from_digit(digit, 16).unwrap();
    chars.into_iter().collect()
}

#[test]
fn proofs_verify_independently_and_every_tampered_copy_fails() {
    if !python_ready() {
        return;
    }
    let l = Ledger::new();
    let events = l.file("events.jsonl", &envelopes("p", 37));
    assert_eq!(l.run(&["ingest", path_str(&events)]).status.code(), Some(0));
    let key = save_key(&l, "auditor.vkey");
    let old = save_checkpoint(&l, "saved-37.cp");
    let more = l.file("more.jsonl", &envelopes("q", 26));
    assert_eq!(l.run(&["ingest", path_str(&more)]).status.code(), Some(0));
    assert_eq!(l.size(), 63);

    // Inclusion of every entry, by index and by id, against the latest
    // checkpoint and against the saved one.
    for index in 0..63u64 {
        let doc = proof(&l, &["inclusion", "--index", &index.to_string()]);
        assert_eq!(
            (doc["index"].as_u64(), doc["tree_size"].as_u64()),
            (Some(index), Some(63))
        );
        let path = write_json(&l, "inclusion.json", &doc);
        let (ok, text) = python_verify(&path, &key, None);
        assert!(ok, "entry {index}: {text}");
    }
    let by_id = proof(
        &l,
        &[
            "inclusion",
            "--event-id",
            "p-5",
            "--checkpoint",
            path_str(&old),
        ],
    );
    assert_eq!(
        (by_id["index"].as_u64(), by_id["tree_size"].as_u64()),
        (Some(5), Some(37))
    );
    let by_id_path = write_json(&l, "by-id.json", &by_id);
    assert!(python_verify(&by_id_path, &key, Some(&old)).0);
    // Consistency from every older size to the latest.
    for from in 0..=63u64 {
        let doc = proof(&l, &["consistency", "--from", &from.to_string()]);
        let path = write_json(&l, "consistency.json", &doc);
        let (ok, text) = python_verify(&path, &key, None);
        assert!(ok, "from {from}: {text}");
    }
    let grown = proof(&l, &["consistency", "--from-checkpoint", path_str(&old)]);
    let grown_path = write_json(&l, "grown.json", &grown);
    assert!(python_verify(&grown_path, &key, Some(&old)).0);

    // Tampered copies: each is refused by the independent verifier.
    let inclusion = proof(&l, &["inclusion", "--index", "21"]);
    let mut cases: Vec<(&str, Value)> = Vec::new();
    for k in 0..inclusion["path"].as_array().unwrap().len() {
        let mut d = inclusion.clone();
        let h = d["path"][k].as_str().unwrap().to_string();
        d["path"][k] = Value::from(flip_hex(&h, 7));
        cases.push(("a path hash bit", d));
    }
    let mut d = inclusion.clone();
    d["path"].as_array_mut().unwrap().pop();
    cases.push(("a path hash dropped", d));
    for (field, value) in [
        ("index", 22),
        ("index", 20),
        ("tree_size", 64),
        ("tree_size", 62),
    ] {
        let mut d = inclusion.clone();
        d[field] = Value::from(value);
        cases.push((field, d));
    }
    let mut d = inclusion.clone();
    let leaf = d["leaf"].as_str().unwrap().replace("\"p-21\"", "\"p-99\"");
    d["leaf"] = Value::from(leaf.clone());
    cases.push(("the leaf bytes", d.clone()));
    d.as_object_mut().unwrap().remove("leaf_hash");
    cases.push(("the leaf bytes without its hash", d));
    let note = inclusion["checkpoint"].as_str().unwrap().to_string();
    let mut lines: Vec<String> = note.lines().map(str::to_string).collect();
    lines[1] = "64".into();
    let mut d = inclusion.clone();
    d["checkpoint"] = Value::from(lines.join("\n") + "\n");
    cases.push(("the checkpoint size", d));
    let mut d = inclusion.clone();
    let sig_line = note.lines().last().unwrap();
    let mut flipped = sig_line.to_string();
    let at = flipped.len() - 10;
    let c = if &flipped[at..at + 1] == "A" {
        "B"
    } else {
        "A"
    };
    flipped.replace_range(at..at + 1, c);
    d["checkpoint"] = Value::from(note.replace(sig_line, &flipped));
    cases.push(("the checkpoint signature", d));
    let consistency = proof(&l, &["consistency", "--from", "37"]);
    for k in 0..consistency["path"].as_array().unwrap().len() {
        let mut d = consistency.clone();
        let h = d["path"][k].as_str().unwrap().to_string();
        d["path"][k] = Value::from(flip_hex(&h, 0));
        cases.push(("a consistency hash bit", d));
    }
    let mut d = consistency.clone();
    d["path"] = Value::from(Vec::<String>::new());
    cases.push(("an empty consistency path", d));
    let mut d = consistency.clone();
    d["from_size"] = Value::from(36);
    cases.push(("from_size", d));
    let mut d = consistency.clone();
    d["from_checkpoint"] = inclusion["checkpoint"].clone();
    cases.push(("the checkpoints swapped", d));
    for (what, doc) in &cases {
        let path = write_json(&l, "tampered.json", doc);
        let (ok, text) = python_verify(&path, &key, None);
        assert!(!ok, "a tampered {what} verified: {text}");
    }
    // The honest proof against a stranger's key, or against a saved
    // checkpoint of another size.
    let honest = write_json(&l, "honest.json", &inclusion);
    let stranger = Ledger::new();
    let stranger_key = save_key(&stranger, "stranger.vkey");
    assert!(!python_verify(&honest, &stranger_key, None).0);
    assert!(!python_verify(&honest, &key, Some(&old)).0);

    // Requests that cannot be answered are input errors naming the problem.
    let out = l.run(&["proof", "inclusion", "--index", "63"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("index 63 is not in a tree of 63"),
        "{}",
        stderr(&out)
    );
    let out = l.run(&["proof", "inclusion", "--event-id", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no event with id \"nope\""),
        "{}",
        stderr(&out)
    );
    let out = l.run(&["proof", "consistency", "--from", "70"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // The same documents over HTTP (read role), and the checkpoint as text.
    let from_cli = proof(&l, &["inclusion", "--index", "21"]);
    let consistency_cli = proof(&l, &["consistency", "--from", "37"]);
    let latest = std::fs::read_to_string(l.data().join("checkpoint")).unwrap();
    let server = Server::start(&l, &[]);
    let get = |path: &str| -> (u16, String) { server.request("GET", path, None, "") };
    assert_eq!(get("/v1/checkpoint"), (200, latest));
    let (status, body) = get("/v1/proof/inclusion?index=21");
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), from_cli);
    let (status, body) = get("/v1/proof/inclusion?event_id=p-21");
    assert_eq!(status, 200, "{body}");
    let served = write_json(&l, "served.json", &serde_json::from_str(&body).unwrap());
    assert!(python_verify(&served, &key, None).0);
    let (status, body) = get("/v1/proof/consistency?from=37");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        consistency_cli
    );
    assert_eq!(get("/v1/proof/inclusion?event_id=nope").0, 404);
    let (status, body) = get("/v1/proof/consistency?from=70");
    assert_eq!(status, 400);
    assert!(body.contains("past the log"), "{body}");
    assert_eq!(get("/v1/proof/inclusion?index=1&event_id=p-1").0, 400);
}

#[test]
fn tamper_drill_a_rewritten_tail_resigned_with_the_real_key_is_caught() {
    if !python_ready() {
        return;
    }
    // The operator's ledger; an auditor saves its key and a checkpoint.
    let l = Ledger::new();
    let history = envelopes("h", 40);
    let events = l.file("history.jsonl", &history);
    assert_eq!(l.run(&["ingest", path_str(&events)]).status.code(), Some(0));
    let key = save_key(&l, "auditor.vkey");
    let saved = save_checkpoint(&l, "auditor-40.cp");
    let later = l.file("later.jsonl", &envelopes("k", 10));
    assert_eq!(l.run(&["ingest", path_str(&later)]).status.code(), Some(0));
    let ok = l.run(&[
        "verify",
        "--checkpoint",
        path_str(&saved),
        "--key",
        path_str(&key),
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(stdout(&ok).contains("extends the saved checkpoint at size 40"));

    // The operator rewrites the tail: events 35.. (five the auditor saw)
    // change, the later ones are replayed, and the result is a fresh
    // ledger under the real signing key, so every checkpoint is genuinely
    // signed.
    let forged = Ledger::new();
    for file in ["checkpoint.key", "checkpoint.vkey"] {
        std::fs::copy(
            l.data().join("keys").join(file),
            forged.data().join("keys").join(file),
        )
        .unwrap();
    }
    let rewritten: String = history
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let line = if i >= 35 {
                line.replace("annal-test", "rewritten")
            } else {
                line.to_string()
            };
            line + "\n"
        })
        .collect();
    let rewritten = forged.file("rewritten.jsonl", &rewritten);
    assert_eq!(
        forged.run(&["ingest", path_str(&rewritten)]).status.code(),
        Some(0)
    );
    assert_eq!(
        forged.run(&["ingest", path_str(&later)]).status.code(),
        Some(0)
    );
    std::fs::remove_dir_all(l.data()).unwrap();
    std::fs::rename(forged.data(), l.data()).unwrap();
    assert_eq!(l.size(), 50);

    // On its own the forgery is self-consistent: every leaf, node and the
    // re-signed checkpoint check out with the real key.
    let alone = l.run(&["verify", "--key", path_str(&key)]);
    assert_eq!(alone.status.code(), Some(0), "{}", stdout(&alone));

    // The auditor's saved checkpoint catches it, in annal ...
    let (code, doc) = l.json(&[
        "verify",
        "--checkpoint",
        path_str(&saved),
        "--key",
        path_str(&key),
    ]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["intact"], false);
    let reason = doc["problem"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("at the saved size 40") && reason.contains("rewritten or forked"),
        "{reason}"
    );
    // ... which also refuses to prove anything against it ...
    let out = l.run(&[
        "proof",
        "consistency",
        "--from-checkpoint",
        path_str(&saved),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rewritten or forked"),
        "{}",
        stderr(&out)
    );
    // ... and in the independent verifier: the forged log's own
    // consistency proof from size 40 does not start at the saved root, and
    // an entry the auditor saw is not in the forged tree's root.
    let grown = proof(&l, &["consistency", "--from", "40"]);
    let grown = write_json(&l, "forged-consistency.json", &grown);
    let (ok, text) = python_verify(&grown, &key, Some(&saved));
    assert!(!ok && text.contains("older signed root"), "{text}");
    let inclusion = proof(&l, &["inclusion", "--index", "36", "--size", "40"]);
    let inclusion = write_json(&l, "forged-inclusion.json", &inclusion);
    let (ok, text) = python_verify(&inclusion, &key, Some(&saved));
    assert!(!ok && text.contains("signed root"), "{text}");
    // Against the forged log's own (genuinely signed) checkpoint the same
    // proof passes: the rewrite shows only from the auditor's saved copy.
    assert!(python_verify(&inclusion, &key, None).0);
}

#[test]
fn key_rotation_dual_signs_within_the_window_and_is_recorded_in_the_log() {
    if !python_ready() {
        return;
    }
    let l = Ledger::new();
    let events = l.file("events.jsonl", &envelopes("r", 12));
    assert_eq!(l.run(&["ingest", path_str(&events)]).status.code(), Some(0));
    let old_key = save_key(&l, "old.vkey");
    let saved = save_checkpoint(&l, "saved-12.cp");

    let (code, rotated) = l.json(&["key", "rotate", "--window", "1h"]);
    assert_eq!(code, Some(0), "{rotated}");
    assert_eq!(rotated["index"], 12);
    let new_key = save_key(&l, "new.vkey");
    assert_ne!(
        std::fs::read_to_string(&old_key).unwrap(),
        std::fs::read_to_string(&new_key).unwrap()
    );
    assert_eq!(
        rotated["next_key"].as_str().unwrap(),
        std::fs::read_to_string(&new_key).unwrap().trim()
    );
    let (_, shown) = l.json(&["key", "show"]);
    assert_eq!(
        shown["previous"]["key"].as_str().unwrap(),
        std::fs::read_to_string(&old_key).unwrap().trim()
    );

    // Within the window: two signatures, and a proof verifies with either key.
    let note = std::fs::read_to_string(l.data().join("checkpoint")).unwrap();
    assert_eq!(
        note.lines().filter(|x| x.starts_with('\u{2014}')).count(),
        2,
        "{note}"
    );
    let doc = proof(&l, &["inclusion", "--event-id", "r-3"]);
    let path = write_json(&l, "inclusion.json", &doc);
    assert!(python_verify(&path, &old_key, None).0);
    assert!(python_verify(&path, &new_key, None).0);

    // The rotation is an event in the verified log, with the old key's end.
    let (_, rows) = l.json(&[
        "sql",
        "SELECT index, data FROM events WHERE type = 'ledger.key.rotated'",
    ]);
    let data: Value = match &rows[0]["data"] {
        Value::String(s) => serde_json::from_str(s).unwrap(),
        other => other.clone(),
    };
    assert_eq!(rows[0]["index"], 12, "{rows}");
    assert_eq!(data["previous_key"], rotated["previous_key"]);
    assert_eq!(data["next_key"], rotated["next_key"]);
    assert_eq!(
        data["previous_valid_until"],
        rotated["previous_valid_until"]
    );

    // A rotation with no window: from the next commit only the newest key
    // signs. The old key alone no longer opens the latest checkpoint, but
    // an auditor holding it still verifies the log (annal follows the
    // rotations recorded in it) and that it extends their saved checkpoint.
    let (code, again) = l.json(&["key", "rotate", "--window", "0s"]);
    assert_eq!(code, Some(0), "{again}");
    let more = l.file("more.jsonl", &envelopes("s", 3));
    assert_eq!(l.run(&["ingest", path_str(&more)]).status.code(), Some(0));
    let note = std::fs::read_to_string(l.data().join("checkpoint")).unwrap();
    assert_eq!(
        note.lines().filter(|x| x.starts_with('\u{2014}')).count(),
        1,
        "{note}"
    );
    let doc = proof(&l, &["inclusion", "--index", "0"]);
    let path = write_json(&l, "after.json", &doc);
    let (ok, text) = python_verify(&path, &old_key, None);
    assert!(!ok && text.contains("not signed by this key"), "{text}");
    let newest = save_key(&l, "newest.vkey");
    assert!(python_verify(&path, &newest, None).0);
    let out = l.run(&[
        "verify",
        "--checkpoint",
        path_str(&saved),
        "--key",
        path_str(&old_key),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    // A key the log never rotated to is not trusted.
    let stranger = Ledger::new();
    let stranger_key = save_key(&stranger, "stranger.vkey");
    let out = l.run(&["verify", "--key", path_str(&stranger_key)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}
