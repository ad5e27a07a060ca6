//! `annal ingest`: inputs into the ledger, or through the `annal serve`
//! that writes it (see [`crate::server`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use annal_ingest::pipeline::{self, Observer};
use annal_ingest::{Input, Rejected};
use annal_store::{AppendOutcome, Store};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::args::IngestArgs;
use crate::exit::Exit;
use crate::output::Printer;
use crate::server::{self, Published};

/// Inputs smaller than this finish before a bar would be worth drawing.
const PROGRESS_MIN_BYTES: u64 = 8 << 20;

/// `annal ingest`: into the ledger, or, when `annal serve` writes it,
/// through that server.
pub fn dispatch(data: &Path, mut args: IngestArgs, printer: &Printer) -> anyhow::Result<Exit> {
    args.paths = expand(&args.paths)?;
    let store = super::open_store(data)?;
    let Some(pid) = store.beside_writer() else {
        return run(&store, args, printer);
    };
    drop(store);
    match Published::of(data, pid) {
        Some(server) => through(&server, args, printer),
        None => Err(super::written_elsewhere(data, pid)),
    }
}

pub fn run(store: &Store, args: IngestArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let inputs = args
        .paths
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let total: Option<u64> = inputs.iter().map(|i| i.len).sum();
    let bar = (!args.no_progress
        && std::io::stderr().is_terminal()
        && total.is_none_or(|t| t >= PROGRESS_MIN_BYTES))
    .then(|| progress_bar(total));
    let mut observer = Report { bar: bar.clone() };
    let started = Instant::now();
    let options = pipeline::Options {
        batch_size: args.batch_size as usize,
        cluster: args.cluster.clone(),
        time: args.time,
        ..pipeline::Options::default()
    };
    let summary = pipeline::run(store, inputs, args.format, &options, &mut observer)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let totals = Totals {
        appended: summary.appended,
        duplicates: summary.duplicates,
        rejected: summary.rejected,
        skipped: summary.skipped.clone(),
        skips: serde_json::to_value(&summary.skips)?
            .as_array()
            .cloned()
            .unwrap_or_default(),
        inputs: serde_json::to_value(&summary.inputs)?
            .as_array()
            .cloned()
            .unwrap_or_default(),
        times: summary
            .times
            .iter()
            .map(|(source, n)| (source.as_str().to_string(), n))
            .collect(),
        records: summary.records,
        bytes: summary.bytes,
        size: store.size(),
    };
    report(&totals, started, None, args.strict, printer)
}

/// The inputs: each path, or every file under a directory (recursively,
/// in path order; hidden entries skipped).
fn expand(paths: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for path in paths {
        let p = Path::new(path);
        if path == "-" || !p.is_dir() {
            out.push(path.clone());
            continue;
        }
        let mut files = Vec::new();
        let mut dirs = vec![p.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let entries = std::fs::read_dir(&dir)
                .with_context(|| format!("reading directory {}", dir.display()))?;
            for entry in entries {
                let entry =
                    entry.with_context(|| format!("reading directory {}", dir.display()))?;
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let child = entry.path();
                if child.is_dir() {
                    dirs.push(child);
                } else {
                    files.push(child);
                }
            }
        }
        if files.is_empty() {
            bail!("{path}: the directory holds no files");
        }
        files.sort();
        out.extend(files.into_iter().map(|f| f.to_string_lossy().into_owned()));
    }
    Ok(out)
}

/// Sends each input to `server` as one streamed request.
fn through(server: &Published, args: IngestArgs, printer: &Printer) -> anyhow::Result<Exit> {
    eprintln!(
        "annal: process {} (annal serve at {}) writes this ledger; sending the input through it",
        server.pid, server.url
    );
    if server.tokens && args.token.is_none() {
        bail!(
            "the server at {} asks for a bearer token: set ANNAL_TOKEN to a token with the ingest role",
            server.url
        );
    }
    let started = Instant::now();
    let mut totals = Totals::default();
    for path in &args.paths {
        let mut query = vec![("name", path.clone())];
        if let Some(c) = &args.cluster {
            query.push(("cluster", c.clone()));
        }
        if let Some(t) = args.time {
            query.push(("time", t.to_string()));
        }
        let target = format!(
            "/v1/ingest/{}/stream?{}",
            args.format.name(),
            serde_urlencoded::to_string(&query)?
        );
        let mut waited = 0;
        let answer = loop {
            let input: Box<dyn Read + Send> = if path == "-" {
                Box::new(std::io::stdin())
            } else {
                Box::new(File::open(path).with_context(|| format!("opening {path}"))?)
            };
            let answer = server::post_stream(server, &target, args.token.as_deref(), input)?;
            // At capacity: a file can be sent again, standard input cannot.
            if answer.status == 429 && path != "-" && waited < BUSY_WAIT_SECONDS {
                waited += 1;
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
            break answer;
        };
        let reason = || {
            answer.body["error"]
                .as_str()
                .map_or_else(|| answer.body.to_string(), str::to_string)
        };
        match answer.status {
            200 => {}
            401 | 403 => bail!(
                "the server at {} refused the token: {}",
                server.url,
                reason()
            ),
            status => bail!(
                "the server at {} answered {status} for {path}: {}",
                server.url,
                reason()
            ),
        }
        let listed = answer.body["rejections"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for r in &listed {
            eprintln!(
                "annal: rejected {} (quarantined as {})",
                r["reason"].as_str().unwrap_or("?"),
                r["quarantine_id"].as_str().unwrap_or("?")
            );
        }
        let rejected = count(&answer.body["rejected"]);
        if rejected > listed.len() as u64 {
            eprintln!(
                "annal: {} more rejection(s) of {path} not listed here",
                rejected - listed.len() as u64
            );
        }
        totals.add(&answer.body);
    }
    report(&totals, started, Some(&server.url), args.strict, printer)
}

/// Seconds a file waits for a server at capacity.
const BUSY_WAIT_SECONDS: u32 = 60;

fn count(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// What ingest did, summed over the inputs.
#[derive(Default)]
struct Totals {
    appended: u64,
    duplicates: u64,
    rejected: u64,
    skipped: BTreeMap<String, u64>,
    /// Where skipped documents are (`{input, line, reason}`), the first
    /// `pipeline::MAX_LISTED_SKIPS`.
    skips: Vec<serde_json::Value>,
    /// Per input: `{input, records, events, rejected, skipped}`.
    inputs: Vec<serde_json::Value>,
    /// Events per valid-time source.
    times: BTreeMap<String, u64>,
    records: u64,
    bytes: u64,
    size: u64,
}

impl Totals {
    /// Adds a server's answer.
    fn add(&mut self, body: &serde_json::Value) {
        self.appended += count(&body["appended"]);
        self.duplicates += count(&body["duplicates"]);
        self.rejected += count(&body["rejected"]);
        self.records += count(&body["records"]);
        self.bytes += count(&body["bytes"]);
        self.size = self.size.max(count(&body["size"]));
        let room = annal_ingest::pipeline::MAX_LISTED_SKIPS.saturating_sub(self.skips.len());
        let skips = body["skips"].as_array().into_iter().flatten();
        self.skips.extend(skips.take(room).cloned());
        self.inputs
            .extend(body["inputs"].as_array().into_iter().flatten().cloned());
        for (map, key) in [
            (&mut self.skipped, "skipped"),
            (&mut self.times, "time_sources"),
        ] {
            for (k, n) in body[key].as_object().into_iter().flatten() {
                *map.entry(k.clone()).or_default() += count(n);
            }
        }
    }
}

/// Prints the summary (and on stderr what was skipped, where valid times
/// came from, and the rejections' count); exit 2 when any was rejected,
/// or with `strict` when any was skipped.
fn report(
    t: &Totals,
    started: Instant,
    server: Option<&str>,
    strict: bool,
    printer: &Printer,
) -> anyhow::Result<Exit> {
    let secs = started.elapsed().as_secs_f64();
    let rate = if secs > 0.0 {
        t.records as f64 / secs
    } else {
        0.0
    };
    let skipped: u64 = t.skipped.values().sum();
    let mut record = json!({
        "appended": t.appended,
        "duplicates": t.duplicates,
        "rejected": t.rejected,
        "skipped": t.skipped,
        "skips": t.skips,
        "inputs": t.inputs,
        "time_sources": t.times,
    });
    if let Some(url) = server {
        record["server"] = json!(url);
    }
    printer.record(
        &record,
        &format!(
            "appended {}, duplicates {}, rejected {}, skipped {} ({} records, {:.1} MB in {:.2}s, {:.0} records/s; log size {})",
            t.appended,
            t.duplicates,
            t.rejected,
            skipped,
            t.records,
            t.bytes as f64 / 1e6,
            secs,
            rate,
            t.size
        ),
    )?;
    for (reason, n) in &t.skipped {
        eprintln!("annal: skipped {n} document(s): {reason}");
    }
    // Skips are never silent data loss: an input of which nothing at all
    // was recorded says so, naming it and its first skipped document.
    for input in &t.inputs {
        let (records, events, rejected, skipped) = (
            count(&input["records"]),
            count(&input["events"]),
            count(&input["rejected"]),
            count(&input["skipped"]),
        );
        if skipped == 0 || events + rejected > 0 {
            continue;
        }
        let name = input["input"].as_str().unwrap_or("-");
        let first = t
            .skips
            .iter()
            .find(|s| s["input"].as_str() == Some(name))
            .map(|s| {
                format!(
                    " (first at line {}: {})",
                    count(&s["line"]),
                    s["reason"].as_str().unwrap_or("")
                )
            })
            .unwrap_or_default();
        eprintln!(
            "annal: {name}: nothing was recorded: {skipped} document(s) in {records} record(s) skipped{first}; is this the right --format? ({})",
            match strict {
                true => "exit 2: --strict",
                false => "--strict makes this exit 2",
            }
        );
    }
    let record_source = annal_ingest::TimeSource::Record.as_str();
    if t.times.keys().any(|s| s != record_source) {
        let parts: Vec<String> = t
            .times
            .iter()
            .map(|(source, n)| format!("{n} from {source}"))
            .collect();
        eprintln!("annal: valid time: {}", parts.join(", "));
    }
    if t.rejected > 0 {
        eprintln!(
            "annal: {} record(s) rejected and kept in quarantine: see `annal quarantine list`",
            t.rejected
        );
        Ok(Exit::Usage)
    } else if strict && skipped > 0 {
        eprintln!("annal: {skipped} document(s) skipped and --strict given");
        Ok(Exit::Usage)
    } else {
        Ok(Exit::Ok)
    }
}

fn progress_bar(total: Option<u64>) -> ProgressBar {
    match total {
        Some(t) => {
            let bar = ProgressBar::new(t);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        }
        None => ProgressBar::new_spinner(),
    }
}

/// Prints each rejection as it happens and drives the progress bar.
struct Report {
    bar: Option<ProgressBar>,
}

impl Observer for Report {
    fn progress(&mut self, bytes_read: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(bytes_read);
        }
    }

    fn rejected(&mut self, rejected: &Rejected, quarantine_id: &str) {
        let line = format!("annal: rejected {rejected} (quarantined as {quarantine_id})");
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn committed(&mut self, outcome: &AppendOutcome) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("log size {}", outcome.size));
        }
    }
}
