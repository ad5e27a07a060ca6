//! Ingest, idempotency, quarantine and exit codes.

use crate::util::*;

#[test]
fn ingesting_the_same_file_twice_appends_nothing_the_second_time() {
    let l = Ledger::new();
    let f = l.file("events.jsonl", &envelopes("idem", 500));
    let (code, first) = l.json(&["ingest", path_str(&f)]);
    assert_eq!(code, Some(0));
    assert_eq!(
        counts(&first),
        serde_json::json!({"appended": 500, "duplicates": 0, "rejected": 0})
    );
    let (code, second) = l.json(&["ingest", path_str(&f)]);
    assert_eq!(code, Some(0));
    assert_eq!(
        counts(&second),
        serde_json::json!({"appended": 0, "duplicates": 500, "rejected": 0})
    );
    assert_eq!(l.size(), 500);
}

#[test]
fn json_arrays_and_stdin_are_accepted() {
    let l = Ledger::new();
    let array = format!(
        "[\n{},\n{}\n]\n",
        envelope("arr-1", "c", 1),
        envelope("arr-2", "c", 2)
    );
    let f = l.file("events.json", &array);
    let (code, doc) = l.json(&["ingest", path_str(&f)]);
    assert_eq!((code, doc["appended"].as_u64()), (Some(0), Some(2)));

    use std::io::Write;
    let mut child = l
        .command(&["ingest", "-", "-o", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(envelopes("stdin", 3).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["appended"], 3);
    assert_eq!(l.size(), 5);
}

#[test]
fn bad_records_are_rejected_with_file_line_and_field_and_the_rest_is_stored() {
    let l = Ledger::new();
    let mut text = envelopes("ok", 3);
    // Line 4: an unknown status; line 5: not JSON; line 6: a misspelt top-level field.
    text.push_str(&envelope("bad-status", "c", 0).replace("\"version\":\"0\"", "\"version\":7"));
    text.push('\n');
    text.push_str("{not json\n");
    text.push_str(&envelope("typo", "c", 0).replace("\"cluster\"", "\"clutser\""));
    text.push('\n');
    text.push_str(&envelope("ok-after", "c", 9));
    text.push('\n');
    let f = l.file("mixed.jsonl", &text);
    let out = l.run(&["ingest", path_str(&f), "-o", "json"]);
    assert_eq!(out.status.code(), Some(2), "rejections exit 2");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        counts(&doc),
        serde_json::json!({"appended": 4, "duplicates": 0, "rejected": 3})
    );
    let err = stderr(&out);
    let name = path_str(&f);
    assert!(
        err.contains(&format!("{name}:4: field `data.version`")),
        "{err}"
    );
    assert!(err.contains(&format!("{name}:5: invalid JSON")), "{err}");
    assert!(err.contains(&format!("{name}:6: field `clutser`")), "{err}");

    let (code, list) = l.json(&["quarantine", "list"]);
    assert_eq!(code, Some(0));
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let mut lines: Vec<u64> = rows.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    lines.sort_unstable();
    assert_eq!(lines, [4, 5, 6]);

    // Fix one record from quarantine and re-ingest it.
    let typo = rows.iter().find(|r| r["line"] == 6).unwrap();
    let id = typo["id"].as_str().unwrap();
    let (_, shown) = l.json(&["quarantine", "show", id]);
    let fixed = shown["raw"].as_str().unwrap().replace("clutser", "cluster");
    let fixed_file = l.file("fixed.jsonl", &fixed);
    let (code, doc) = l.json(&["ingest", path_str(&fixed_file)]);
    assert_eq!((code, doc["appended"].as_u64()), (Some(0), Some(1)));
    assert_eq!(l.run(&["quarantine", "drop", id]).status.code(), Some(0));
    let (_, list) = l.json(&["quarantine", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    // What is still broken stays broken on retry, and says why.
    let (code, retry) = l.json(&["quarantine", "retry"]);
    assert_eq!(code, Some(2));
    assert!(retry
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["result"] == "rejected"));
    assert_eq!(l.size(), 5);
    assert_eq!(l.run(&["verify"]).status.code(), Some(0));
}

#[test]
fn usage_errors_exit_2_and_say_what_to_do() {
    let l = Ledger::empty();
    let out = l.run(&["status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("annal init"), "{}", stderr(&out));
    let l = Ledger::new();
    let out = l.run(&["ingest", "/nonexistent/file.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/nonexistent/file.jsonl"));
    assert_eq!(l.run(&["ingest"]).status.code(), Some(2));
    assert_eq!(
        l.run(&["log", "--since", "yesterday"]).status.code(),
        Some(2)
    );
    let out = l.run(&["init"]);
    assert_eq!(out.status.code(), Some(2), "init twice");
}

#[test]
fn version_help_and_demo_work_for_a_newcomer() {
    let l = Ledger::empty();
    let out = l.run(&["--version"]);
    assert!(stdout(&out).starts_with("annal "), "{}", stdout(&out));
    let out = l.run(&["--help"]);
    let help = stdout(&out);
    for word in [
        "ingest",
        "verify",
        "quarantine",
        "--data",
        "ANNAL_DATA",
        "Exit codes",
    ] {
        assert!(help.contains(word), "help lacks {word}");
    }
    let out = l.run(&["demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("guestbook-ui"));
    let (_, objects) = l.json(&["objects", "--at", "2026-11-01T09:30:00Z"]);
    let names: Vec<&str> = objects["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["legacy-config", "guestbook"],
        "deleted later, so alive at 09:30"
    );
    let (_, again) = l.json(&["demo"]);
    assert!(
        again["objects"].as_array().is_some(),
        "demo -o json prints one document"
    );
    let (_, csv) = (
        0,
        stdout(&l.run(&["log", "--cluster", "staging-us1", "-o", "csv"])),
    );
    assert!(
        csv.starts_with("index,time,type,cluster,id,recorded_at\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 6);
}

#[test]
fn real_formats_auto_detect_need_a_cluster_and_report_time_sources() {
    let l = Ledger::new();
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\ndata:\n  k: v\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n";
    let f = l.file("objects.yaml", yaml);

    // Without --cluster: each object is rejected with a hint, exit 2.
    let out = l.run(&["ingest", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:1: this object names no cluster: pass --cluster ID",
            path_str(&f)
        )),
        "{err}"
    );
    assert!(err.contains(&format!("{}:8:", path_str(&f))), "{err}");

    // With it: stored, the time source reported; again: nothing appended.
    let out = l.run(&[
        "ingest",
        "--cluster",
        "prod",
        "--time",
        "2026-11-01T10:00:00Z",
        path_str(&f),
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["appended"], 2);
    assert_eq!(doc["time_sources"], serde_json::json!({"--time": 2}));
    let (code, again) = l.json(&[
        "ingest",
        "--cluster",
        "prod",
        "--time",
        "2026-11-01T10:00:00Z",
        path_str(&f),
    ]);
    assert_eq!(
        (code, counts(&again)),
        (
            Some(0),
            serde_json::json!({"appended": 0, "duplicates": 2, "rejected": 0})
        )
    );

    // A named format refuses another format's documents.
    let out = l.run(&[
        "ingest",
        "--format",
        "k8s-audit",
        "--cluster",
        "prod",
        path_str(&f),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("try --format k8s-object"),
        "{}",
        stderr(&out)
    );

    // Unknown formats and bad times are usage errors naming the choices.
    let out = l.run(&["ingest", "--format", "helm3", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("known: auto, envelope, k8s-audit"),
        "{}",
        stderr(&out)
    );
    let out = l.run(&["ingest", "--time", "yesterday", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
}

#[test]
fn quarantined_objects_can_be_retried_with_the_missing_cluster() {
    let l = Ledger::new();
    let f = l.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n",
    );
    let out = l.run(&["ingest", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2));
    let (code, table) = l.json(&["quarantine", "retry"]);
    assert_eq!(code, Some(2), "still no cluster: {table}");
    let (code, table) = l.json(&["quarantine", "retry", "--cluster", "prod"]);
    assert_eq!(code, Some(0), "{table}");
    assert_eq!(table[0]["result"], "appended");
    assert_eq!(l.size(), 1);
    let (_, list) = l.json(&["quarantine", "list"]);
    assert_eq!(list, serde_json::json!([]));
}

/// A file of which every document is skipped is never silent: the summary
/// says nothing was recorded, and `--strict` exits 2 on any skip.
/// See: issue 21 (a skip is never silent data loss).
#[test]
fn an_input_that_records_nothing_says_so_and_strict_exits_2() {
    let l = Ledger::new();
    let f = l.file(
        "fragments.json",
        "{\"metadata\": {\"name\": \"x\"}}\n{\"spec\": {\"replicas\": 2}}\n",
    );
    let out = l.run(&["ingest", "--cluster", "c1", path_str(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("skipped 2 document(s)"), "{said}");
    assert!(said.contains("nothing was recorded"), "{said}");
    let out = l.run(&["ingest", "--strict", "--cluster", "c1", path_str(&f)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--strict"), "{}", stderr(&out));
    // A file that records something and skips nothing passes --strict.
    let good = l.file("good.jsonl", &envelopes("strict", 2));
    let out = l.run(&["ingest", "--strict", path_str(&good)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Per file: beside a file that records, the one that records nothing
    // is still named; -o json lists each skip with its file and line.
    let more = l.file("more.jsonl", &envelopes("more", 2));
    let out = l.run(&["ingest", "--cluster", "c1", path_str(&more), path_str(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains(&format!("{}: nothing was recorded", path_str(&f))),
        "{said}"
    );
    assert!(
        !said.contains(&format!("{}: nothing", path_str(&more))),
        "{said}"
    );
    let (code, doc) = l.json(&["ingest", "--cluster", "c1", path_str(&more), path_str(&f)]);
    assert_eq!(code, Some(0));
    let skips = doc["skips"].as_array().expect("skips listed");
    let lines: Vec<(String, u64)> = skips
        .iter()
        .map(|s| {
            (
                s["input"].as_str().unwrap().to_string(),
                s["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let name = path_str(&f).to_string();
    assert_eq!(lines, vec![(name.clone(), 1), (name.clone(), 2)]);
    assert!(skips
        .iter()
        .all(|s| s["reason"].as_str().is_some_and(|r| !r.is_empty())));
    let inputs = doc["inputs"].as_array().expect("inputs listed");
    assert_eq!(inputs.len(), 2);
    assert_eq!(
        (
            inputs[1]["input"].as_str(),
            inputs[1]["events"].as_u64(),
            inputs[1]["skipped"].as_u64()
        ),
        (Some(name.as_str()), Some(0), Some(2))
    );
    assert_eq!(inputs[0]["events"], 2);
}

/// What the GitOps CLIs print where it differs from the objects: the
/// Application of `argocd app get -o yaml` (no apiVersion/kind) and `argocd
/// app list -o yaml` (a YAML sequence) are decoded; the text views are
/// rejected naming the command that printed them and what to run instead.
/// See: issue 21, item 4.
#[test]
fn gitops_cli_outputs_are_decoded_or_rejected_naming_the_command() {
    let l = Ledger::new();
    let app = "metadata:\n  name: guestbook\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: https://github.com/argoproj/argocd-example-apps.git\n    path: guestbook\n    targetRevision: HEAD\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: default\nstatus:\n  sync:\n    status: Synced\n    revision: 53e28ff20cc530b9ada2173fbbd64d48338583ba\n  health:\n    status: Healthy\n  reconciledAt: \"2026-11-03T09:10:05Z\"\n";
    let get = l.file("app-get.yaml", app);
    let (code, doc) = l.json(&["ingest", "--cluster", "hub", path_str(&get)]);
    assert_eq!(
        (code, doc["rejected"].as_u64()),
        (Some(0), Some(0)),
        "{doc}"
    );
    let (_, declared) = l.json(&["sql", "SELECT count(*) AS n FROM events WHERE type = 'app.declared' AND data LIKE '%argocd:guestbook%'"]);
    assert_eq!(declared[0]["n"], 1, "{declared}");
    let list = l.file(
        "app-list.yaml",
        &format!(
            "- {}",
            app.replace("guestbook", "shop").replace('\n', "\n  ")
        ),
    );
    let (code, doc) = l.json(&["ingest", "--cluster", "hub", path_str(&list)]);
    assert_eq!(
        (code, doc["rejected"].as_u64()),
        (Some(0), Some(0)),
        "{doc}"
    );
    assert!(doc["appended"].as_u64().unwrap() > 0, "{doc}");

    let views = [
        ("history.txt", "SOURCE  https://github.com/argoproj/argocd-example-apps.git\nID      DATE                           REVISION\n0       2026-11-03 09:10:05 +0000 UTC  HEAD (53e28ff)\n", "`argocd app history NAME`"),
        ("get.txt", "Name:               argocd/guestbook\nProject:            default\nServer:             https://kubernetes.default.svc\nSync Status:        Synced to HEAD (53e28ff)\nHealth Status:      Healthy\n\nGROUP  KIND     NAMESPACE  NAME          STATUS  HEALTH\n       Service  default    guestbook-ui  Synced  Healthy\n", "`argocd app get NAME` text output"),
        ("flux-get.txt", "NAME       \tREVISION          \tSUSPENDED\tREADY\tMESSAGE\nflux-system\tmain@sha1:4d4a3a2e\tFalse    \tTrue \tApplied revision: main@sha1:4d4a3a2e\n", "`flux get ...`"),
        ("flux-status.yaml", "conditions:\n- type: Ready\n  status: \"True\"\n  reason: ReconciliationSucceeded\nlastAppliedRevision: main@sha1:4d4a3a2e\ninventory:\n  entries:\n  - id: default_podinfo__Service\n    v: v1\n", "`flux debug kustomization|helmrelease NAME --show-status`"),
        ("flux-vars.txt", "cluster_env=prod\nREGION=eu-west-1\n", "`flux debug kustomization NAME --show-vars`"),
    ];
    for (name, text, command) in views {
        let f = l.file(name, text);
        let out = l.run(&["ingest", "--cluster", "hub", path_str(&f)]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(command), "{name}: {err}");
        assert!(err.contains("annal reads"), "{name}: {err}");
    }
}
