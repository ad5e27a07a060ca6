//! `annal sql`: real process, real ledger, every output format.

use crate::util::*;

#[test]
fn sql_answers_in_every_output_format_and_rejects_bad_queries_with_exit_2() {
    let l = Ledger::new();
    let f = l.file("events.jsonl", &envelopes("q", 30));
    assert_eq!(l.run(&["ingest", path_str(&f)]).status.code(), Some(0));

    let (code, rows) = l.json(&[
        "sql",
        "SELECT cluster, count(*) AS n FROM events GROUP BY cluster ORDER BY cluster",
    ]);
    assert_eq!(code, Some(0));
    let total: u64 = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 30);

    let out = l.run(&[
        "sql",
        "SELECT index, id FROM events WHERE index < 2 ORDER BY index",
        "-o",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "index,id\n0,q-0\n1,q-1\n"
    );

    let out = l.run(&["sql", "SELECT id FROM events WHERE index = 3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ID") && text.contains("q-3"), "{text}");

    let out = l.run(&["sql", "SELECT * FROM nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
}
