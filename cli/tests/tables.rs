//! Tables as kubectl prints them: `-o table` shows the columns a person
//! reads first and fits 120 columns for the demo's names, `-o wide` adds
//! the rest, and `-o json` keeps every field.
//! See: issue 19 (narrow default tables).

use crate::util::*;

/// The header cells and the widest line of a table printed on stdout.
fn table(l: &Ledger, args: &[&str]) -> (Vec<String>, usize) {
    let out = l.run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    let text = stdout(&out);
    let header = text
        .lines()
        .find(|line| line.starts_with("CLUSTER") || line.starts_with("INDEX"))
        .unwrap_or_else(|| panic!("{args:?}: no header in {text}"));
    let widest = text
        .lines()
        .map(|line| line.chars().count())
        .max()
        .unwrap_or(0);
    (
        header.split_whitespace().map(str::to_string).collect(),
        widest,
    )
}

fn demo() -> Ledger {
    let l = Ledger::new();
    let out = l.run(&["demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    l
}

#[test]
fn inventory_shows_the_columns_read_first_and_wide_shows_all() {
    let l = demo();
    let (narrow, widest) = table(&l, &["inventory"]);
    assert_eq!(
        narrow,
        [
            "CLUSTER",
            "NAMESPACE",
            "KIND",
            "NAME",
            "OWNER",
            "CONFLICT",
            "VALID_FROM"
        ]
    );
    assert!(widest <= 120, "the default table is {widest} columns wide");
    let (wide, widest_wide) = table(&l, &["inventory", "-o", "wide"]);
    assert_eq!(wide.len(), 15, "{wide:?}");
    for column in ["UID", "RESOURCE_VERSION", "MANAGERS", "CLAIMS", "GROUP"] {
        assert!(wide.iter().any(|c| c == column), "{column} in {wide:?}");
    }
    assert!(widest_wide > 120, "wide is wider: {widest_wide}");
    let (code, rows) = l.json(&["inventory"]);
    assert_eq!(code, Some(0));
    let first = rows["objects"][0].as_object().expect("rows are objects");
    assert_eq!(first.len(), 15, "{first:?}");
    assert!(first.contains_key("uid") && first.contains_key("managers"));
}

#[test]
fn log_leaves_recorded_at_to_wide() {
    let l = demo();
    let (narrow, widest) = table(&l, &["log"]);
    assert_eq!(narrow, ["INDEX", "TIME", "TYPE", "CLUSTER", "ID"]);
    assert!(widest <= 120, "{widest}");
    let (wide, _) = table(&l, &["log", "-o", "wide"]);
    assert_eq!(wide.last().map(String::as_str), Some("RECORDED_AT"));
    let (_, rows) = l.json(&["log"]);
    assert!(rows[0]["recorded_at"].is_string(), "{}", rows[0]);
}

#[test]
fn the_takeover_plan_names_objects_without_their_group_unless_wide() {
    let l = demo();
    let args = [
        "takeover-plan",
        "--controller",
        "argocd-new",
        "--cluster",
        "prod-eu1-a",
        "--cluster",
        "staging-us1",
        "--at",
        "2026-11-01T10:30:00Z",
    ];
    let objects_header = |extra: &[&str]| {
        let mut all = args.to_vec();
        all.extend(extra);
        let out = l.run(&all);
        let text = stdout(&out);
        let header = text
            .lines()
            .find(|line| line.starts_with("CLASS"))
            .unwrap_or_else(|| panic!("no object table in {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>();
        let widest = text
            .lines()
            .map(|line| line.chars().count())
            .max()
            .unwrap_or(0);
        (header, widest)
    };
    let (narrow, widest) = objects_header(&[]);
    assert_eq!(
        narrow,
        [
            "CLASS",
            "CLUSTER",
            "APP",
            "KIND",
            "NAMESPACE",
            "NAME",
            "REASONS"
        ]
    );
    assert!(widest <= 120, "{widest}");
    let (wide, _) = objects_header(&["-o", "wide"]);
    assert!(wide.iter().any(|c| c == "GROUP"), "{wide:?}");
    let (_, plan) = l.json(&args);
    assert!(plan["objects"][0].get("group").is_some(), "{plan}");
}
