//! `annal report cost|capacity` end to end: CSV, JSON, price tables and
//! budgets from files, exit codes, and the HTML page rendered in headless
//! Chromium (Debian's package, installed by `scripts/test.sh`, which sets
//! `ANNAL_REQUIRE_CHROMIUM=1` so a missing browser fails in CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::util::*;

/// Two clusters over 10:00–12:00: a Deployment owned by argocd:shop from
/// 10:30 on c1, a sync on each cluster, and rising throttling on c1.
fn ledger() -> Ledger {
    let e = |id: &str, t: &str, hhmm: &str, cluster: &str, data: Value| {
        let time = format!("2026-11-01T{hhmm}:00Z");
        event(id, t, &time, Some(cluster), Value::Null, data)
    };
    let lines = [
        e(
            "r1",
            "cluster.registered",
            "09:00",
            "c1",
            json!({"tenant": "acme", "environment": "prod"}),
        ),
        e(
            "r2",
            "cluster.registered",
            "09:00",
            "c2",
            json!({"tenant": "initech", "environment": "prod"}),
        ),
        e(
            "web",
            "object.observed",
            "10:30",
            "c1",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "3",
            "annotations": {"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/web"}}}),
        ),
        e(
            "s1",
            "app.sync",
            "10:10",
            "c1",
            json!({"app": "argocd:shop", "phase": "Succeeded",
            "started_at": "2026-11-01T10:09:00Z", "finished_at": "2026-11-01T10:10:00Z",
            "metrics": {"api_requests": 100, "api_throttled": 5}}),
        ),
        e(
            "s2",
            "app.sync",
            "11:10",
            "c2",
            json!({"app": "argocd:db", "phase": "Succeeded",
            "metrics": {"api_requests": 50}}),
        ),
        e(
            "m1",
            "controller.metrics",
            "10:05",
            "c1",
            json!({"controller": "argocd", "window_seconds": 60.0, "api_requests": 600, "api_throttled": 6}),
        ),
        e(
            "m2",
            "controller.metrics",
            "10:35",
            "c1",
            json!({"controller": "argocd", "window_seconds": 60.0, "api_requests": 600, "api_throttled": 12}),
        ),
        e(
            "m3",
            "controller.metrics",
            "11:05",
            "c1",
            json!({"controller": "argocd", "window_seconds": 60.0, "api_requests": 600, "api_throttled": 24, "queue_age_seconds": 900.0}),
        ),
    ];
    ledger_with(&lines)
}

const WINDOW: [&str; 4] = [
    "--from",
    "2026-11-01T10:00:00Z",
    "--to",
    "2026-11-01T12:00:00Z",
];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["report"];
    all.extend(extra.iter().take(1));
    all.extend(WINDOW);
    all.extend(extra.iter().skip(1));
    all
}

#[test]
fn cost_reports_print_csv_and_json_with_prices() {
    let l = ledger();
    let prices = l.file(
        "prices.toml",
        "currency = \"EUR\"\n[price]\nsyncs = 1.0\napi_requests = 0.01\nobject_hours = 0.5\n",
    );
    let out = l.run(&args(&[
        "cost",
        "--by",
        "tenant",
        "--step",
        "1h",
        "--prices",
        path_str(&prices),
        "-o",
        "csv",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let csv = stdout(&out);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "group,step_start,step_end,syncs,sync_seconds,render_seconds,api_requests,api_throttled,applied_bytes,object_hours,ledger_bytes,ledger_bytes_by_source,cost"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let acme_10: &Vec<&str> = rows
        .iter()
        .find(|r| r[0] == "acme" && r[1] == "2026-11-01T10:00:00Z")
        .unwrap_or_else(|| panic!("{csv}"));
    // One sync (60 s, 100 requests), half an hour of the Deployment:
    // 1.0 + 100 × 0.01 + 0.5 × 0.5 = 2.25.
    assert_eq!(
        (acme_10[3], acme_10[4], acme_10[6], acme_10[9]),
        ("1", "60.0", "100", "0.5")
    );
    assert_eq!(acme_10.last(), Some(&"2.25"));

    let (code, doc) = l.json(&args(&[
        "cost",
        "--by",
        "app",
        "--prices",
        path_str(&prices),
    ]));
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["by"], "app");
    assert_eq!(doc["currency"], "EUR");
    let totals = doc["totals"].as_array().unwrap();
    let shop = totals.iter().find(|t| t["group"] == "argocd:shop").unwrap();
    // 1 sync + 100 requests + 1.5 h of the Deployment (10:30–12:00).
    assert_eq!(shop["cost"], 1.0 + 1.0 + 0.75);
    assert_eq!(shop["object_hours"], 1.5);

    // A typo in the price table names the key and is an input error.
    let typo = l.file("typo.toml", "[price]\nsync = 1.0\n");
    let out = l.run(&args(&["cost", "--prices", path_str(&typo)]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("sync: not a measure"),
        "{}",
        stderr(&out)
    );
    let out = l.run(&args(&["cost", "--by", "galaxy"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot group by \"galaxy\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn capacity_reports_exit_3_on_a_broken_budget() {
    let l = ledger();
    let budgets = l.file(
        "budgets.toml",
        "max_api_requests_per_second = 100\nrelease_window_seconds = 1200\n",
    );
    let (code, doc) = l.json(&args(&[
        "capacity",
        "--step",
        "30m",
        "--budgets",
        path_str(&budgets),
    ]));
    assert_eq!(code, Some(3), "{doc}");
    let c1: Vec<&Value> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["cluster"] == "c1")
        .collect();
    let throttled: Vec<f64> = c1
        .iter()
        .map(|r| r["throttled_per_second"].as_f64().unwrap())
        .collect();
    // 6, 12, 24 throttled in successive half hours, then none.
    assert_eq!(throttled, [6.0 / 1800.0, 12.0 / 1800.0, 24.0 / 1800.0, 0.0]);
    let flags: Vec<Vec<String>> = c1
        .iter()
        .map(|r| {
            r["flags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        flags[2],
        [
            "429 rate rising three steps in a row",
            "queue age 900s above half the release window (1200s)"
        ]
    );
    assert_eq!(doc["flagged"], 1);
    let loose = l.file("loose.toml", "max_fan_out = 100\n");
    let out = l.run(&args(&[
        "capacity",
        "--step",
        "1h",
        "--budgets",
        path_str(&loose),
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// Chromium, if this machine has it (or must).
pub fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(
        std::env::var("ANNAL_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
    );
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("ANNAL_REQUIRE_CHROMIUM").is_err(),
        "ANNAL_REQUIRE_CHROMIUM is set but there is no Chromium at {}",
        path.display()
    );
    eprintln!("skipped: no Chromium (apt-get install chromium; scripts/test.sh does)");
    None
}

/// Headless Chromium with the flags this machine's closed network needs.
pub fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Width, height and the number of distinct colours among sampled pixels
/// of a PNG (decoded with the Python standard library).
fn png_stats(png: &Path) -> (u64, u64, u64) {
    const DECODE: &str = r#"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat = 8, b''
while pos < len(data):
    n, = struct.unpack('>I', data[pos:pos + 4]); kind = data[pos + 4:pos + 8]
    body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif kind == b'IDAT':
        idat += body
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, i = bytearray(stride), set(), 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 4 == 0:
        for x in range(0, stride, bpp * 4):
            colours.add(bytes(line[x:x + 3]))
print(w, h, len(colours))
"#;
    let out = Command::new("python3")
        .args(["-c", DECODE])
        .arg(png)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Vec<u64> = stdout(&out)
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

#[test]
fn the_html_reports_are_self_contained_and_render_in_chromium() {
    let l = ledger();
    let cost = l.dir.path().join("cost.html");
    let out = l.run(&args(&[
        "cost",
        "--by",
        "cluster",
        "--step",
        "30m",
        "-o",
        "html",
        "--out",
        path_str(&cost),
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let capacity = l.dir.path().join("capacity.html");
    let out = l.run(&args(&[
        "capacity",
        "--step",
        "30m",
        "-o",
        "html",
        "--out",
        path_str(&capacity),
    ]));
    // Exit 3: c1's 429 rate rises three half hours in a row.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    // Structure: one page, inline SVG, no script, nothing fetched.
    for (path, svgs, needles) in [
        (
            &cost,
            1,
            &[
                "<h1>annal cost report by cluster</h1>",
                "id=\"top\"",
                "<td>c1</td>",
            ][..],
        ),
        (
            &capacity,
            2,
            &[
                "<h1>annal capacity report</h1>",
                "id=\"flags\"",
                "429 rate rising",
            ][..],
        ),
    ] {
        let html = std::fs::read_to_string(path).unwrap();
        assert!(html.starts_with("<!doctype html>"), "{html}");
        assert!(html.trim_end().ends_with("</html>"));
        assert_eq!(html.matches("<svg").count(), svgs, "{}", path.display());
        for bad in ["<script", "src=", "href=", "@import", "url("] {
            assert!(!html.contains(bad), "{} contains {bad}", path.display());
        }
        let outside: Vec<&str> = html
            .match_indices("http")
            .map(|(i, _)| &html[i..(i + 30).min(html.len())])
            .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(outside.is_empty(), "links out: {outside:?}");
        for needle in needles {
            assert!(html.contains(needle), "{} lacks {needle}", path.display());
        }
    }

    let Some(chromium) = chromium() else {
        return;
    };
    for (path, svgs) in [(&cost, 1), (&capacity, 2)] {
        // A copy with a probe that writes each SVG's laid-out size into the
        // DOM, which --dump-dom prints (the report itself has no script).
        let html = std::fs::read_to_string(path).unwrap();
        let probe = html.replace(
            "</body>",
            "<script>document.body.setAttribute('data-svgs', JSON.stringify([...document.querySelectorAll('svg')].map(s => { const r = s.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; })));</script></body>",
        );
        let probed = l.file("probe.html", &probe);
        let profile = tempfile::tempdir().unwrap();
        let out = headless(&chromium, profile.path())
            .args(["--window-size=1200,1600", "--dump-dom"])
            .arg(format!("file://{}", probed.display()))
            .output()
            .unwrap();
        let dom = stdout(&out);
        let sizes = dom
            .split("data-svgs=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| {
                panic!(
                    "no sizes in the DOM of {}: {}",
                    path.display(),
                    stderr(&out)
                )
            })
            .replace("&quot;", "\"");
        let sizes: Vec<(u64, u64)> = serde_json::from_str(&sizes).unwrap();
        assert_eq!(sizes.len(), svgs, "{sizes:?}");
        for (w, h) in sizes {
            assert!(w >= 600 && h >= 250, "an SVG chart laid out at {w}x{h}");
        }
        // The screenshot of the report itself is not blank.
        let png = l.dir.path().join("shot.png");
        let out = headless(&chromium, profile.path())
            .args(["--window-size=1200,1600"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", path.display()))
            .output()
            .unwrap();
        assert!(png.exists(), "no screenshot: {}", stderr(&out));
        let (w, h, colours) = png_stats(&png);
        assert_eq!((w, h), (1200, 1600));
        assert!(
            colours >= 8,
            "{} renders almost blank: {colours} colours",
            path.display()
        );
    }
}
