//! `annal ingest`.

use std::io::IsTerminal;
use std::time::Instant;

use annal_ingest::pipeline::{self, Observer};
use annal_ingest::{Input, Rejected};
use annal_store::{AppendOutcome, Store};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::args::IngestArgs;
use crate::exit::Exit;
use crate::output::Printer;

/// Inputs smaller than this finish before a bar would be worth drawing.
const PROGRESS_MIN_BYTES: u64 = 8 << 20;

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
    let secs = started.elapsed().as_secs_f64();
    let rate = if secs > 0.0 {
        summary.records as f64 / secs
    } else {
        0.0
    };
    let times: serde_json::Map<String, serde_json::Value> = summary
        .times
        .iter()
        .map(|(source, n)| (source.as_str().to_string(), n.into()))
        .collect();
    let skipped: u64 = summary.skipped.values().sum();
    printer.record(
        &json!({
            "appended": summary.appended,
            "duplicates": summary.duplicates,
            "rejected": summary.rejected,
            "skipped": summary.skipped,
            "time_sources": times,
        }),
        &format!(
            "appended {}, duplicates {}, rejected {}, skipped {} ({} records, {:.1} MB in {:.2}s, {:.0} records/s; log size {})",
            summary.appended,
            summary.duplicates,
            summary.rejected,
            skipped,
            summary.records,
            summary.bytes as f64 / 1e6,
            secs,
            rate,
            store.size()
        ),
    )?;
    for (reason, n) in &summary.skipped {
        eprintln!("annal: skipped {n} document(s): {reason}");
    }
    if summary
        .times
        .iter()
        .any(|(s, _)| s != annal_ingest::TimeSource::Record)
    {
        let parts: Vec<String> = summary
            .times
            .iter()
            .map(|(source, n)| format!("{n} from {}", source.as_str()))
            .collect();
        eprintln!("annal: valid time: {}", parts.join(", "));
    }
    if summary.rejected > 0 {
        eprintln!(
            "annal: {} record(s) rejected and kept in quarantine: see `annal quarantine list`",
            summary.rejected
        );
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
