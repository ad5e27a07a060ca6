//! One module per command; [`run`] dispatches.

mod backup;
mod coverage;
mod demo;
mod diff;
mod drift;
mod export;
mod fence;
mod history;
mod ingest;
mod inspect;
mod inventory;
mod key;
mod placement;
mod proof;
mod prune;
mod quarantine;
mod report;
mod rollout;
mod serve;
mod sql;
mod takeover;
mod verify;

use annal_store::Store;
use anyhow::Context;
use serde_json::json;

use crate::args::{Cli, Command};
use crate::exit::Exit;
use crate::output::Printer;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    let printer = Printer { format: cli.output };
    let data = cli.data.as_path();
    match cli.command {
        Command::Init(args) => init(data, &args.origin, &printer),
        Command::Ingest(args) => ingest::dispatch(data, args, &printer),
        Command::Verify(args) => verify::run(&open(data)?, args, &printer),
        Command::Status => inspect::status(&open(data)?, &printer),
        Command::Checkpoint => inspect::checkpoint(&open(data)?, &printer),
        Command::Proof(sub) => proof::run(&open(data)?, sub),
        Command::Key(sub) => key::run(&open(data)?, sub, &printer),
        Command::Report(sub) => report::run(&open(data)?, sub, &printer),
        Command::Log(args) => inspect::log(&open(data)?, &args, &printer),
        Command::Inventory(args) => inventory::run(&open(data)?, &args, &printer),
        Command::Diff(args) => diff::run(&open(data)?, &args, &printer),
        Command::Coverage(args) => coverage::run(&open(data)?, &args, &printer),
        Command::History(args) => history::run(&open(data)?, &args, &printer),
        Command::Drift(args) => drift::run(&open(data)?, &args, &printer),
        Command::Reindex => inspect::reindex(&open_writer(data)?, &printer),
        Command::Quarantine(sub) => quarantine::run(&open(data)?, sub, &printer),
        Command::Demo => demo::run(data, &printer),
        Command::Sql(args) => sql::run(open(data)?, &args, &printer),
        Command::Serve(args) => {
            if args.demo {
                demo::run(data, &printer)?;
            }
            serve::run(open_writer(data)?, &args)
        }
        Command::Export(sub) => export::run(open(data)?, sub, &printer),
        Command::TakeoverPlan(args) => takeover::run(&open(data)?, &args, &printer),
        Command::PrunePlan(args) => prune::run(&open(data)?, &args, &printer),
        Command::Placement(sub) => placement::run(&open(data)?, sub, &printer),
        Command::Fence(sub) => fence::run(&open(data)?, sub, &printer),
        Command::Backup(sub) => backup::run(&open(data)?, sub, &printer),
        Command::Rollout(sub) => rollout::run(&open(data)?, sub, &printer),
    }
}

/// Opens the ledger for a command that mostly reads (see [`open_store`]):
/// it leaves the key indexes' compaction to the next writer, so that it
/// neither starts nor ends waiting for one. Says on stderr when another
/// process writes the ledger.
fn open(data: &std::path::Path) -> anyhow::Result<Store> {
    use std::io::Write as _;
    let store = open_store_with(data, annal_store::Compaction::Deferred)?;
    if let Some(pid) = store.beside_writer() {
        let _ = writeln!(
            std::io::stderr(),
            "annal: process {pid} is writing this ledger; answering from what it has committed ({} entries)",
            store.size()
        );
    }
    Ok(store)
}

/// Opens the ledger, compacting its key indexes in the background as
/// writers do, saying on stderr when the first open after an upgrade (or a
/// lost index) rebuilds an index from the leaves.
fn open_store(data: &std::path::Path) -> anyhow::Result<Store> {
    open_store_with(data, annal_store::Compaction::Background)
}

fn open_store_with(
    data: &std::path::Path,
    compaction: annal_store::Compaction,
) -> anyhow::Result<Store> {
    use std::io::Write as _;
    let mut report = |r: annal_store::Rebuild| {
        let line = match r {
            annal_store::Rebuild::Indexes { entries, reason } => format!(
                "annal: building the indexes from {entries} entries ({reason}); the leaves, tree and checkpoints are not changed"
            ),
            annal_store::Rebuild::Progress { replayed, entries } => format!(
                "annal: indexed {replayed} of {entries} entries"
            ),
            annal_store::Rebuild::OldLayoutRemoved => {
                "annal: the indexes are built; removing the older layout's keys from the sled database".to_string()
            }
            annal_store::Rebuild::Zones { clusters, zones } => format!(
                "annal: computing {zones} zone maps over the version rows of {clusters} clusters (a ledger written before zone maps; once, from the rows); the leaves, tree and checkpoints are not changed"
            ),
            annal_store::Rebuild::Checksums { clusters } => format!(
                "annal: checksumming the version files of {clusters} clusters and computing their zone maps (a ledger written before checksums; once, from the files); the leaves, tree and checkpoints are not changed"
            ),
            annal_store::Rebuild::Columns { chunks } => format!(
                "annal: writing {chunks} column chunks again in the sidecar's new layout, in the background (scans read those entries from the leaves until then)"
            ),
        };
        let _ = writeln!(std::io::stderr(), "{line}");
    };
    Store::open_with(data, compaction, &mut report)
        .with_context(|| format!("opening the ledger at {}", data.display()))
}

/// Opens the ledger for a command that writes (ingest, reindex, serve):
/// beside another process that writes it, that is an error naming it.
fn open_writer(data: &std::path::Path) -> anyhow::Result<Store> {
    let store = open_store(data)?;
    match store.beside_writer() {
        Some(pid) => Err(written_elsewhere(data, pid)),
        None => Ok(store),
    }
}

/// The error of a command that writes, beside another process that does.
fn written_elsewhere(data: &std::path::Path, pid: u32) -> anyhow::Error {
    anyhow::anyhow!(
        "the ledger at {} is being written by process {pid}; only one process writes a ledger. \
         Send events to that process instead (if it is `annal serve`: POST them to /v1/events, \
         or a file of any format to /v1/ingest/auto), or stop it first; every read command works beside it",
        data.display()
    )
}

fn init(data: &std::path::Path, origin: &str, printer: &Printer) -> anyhow::Result<Exit> {
    let report = Store::init(data, origin)?;
    let dir = annal_store::DataDir::new(data);
    printer.record(
        &json!({
            "data": data.display().to_string(),
            "origin": report.origin,
            "verifier_key": report.verifier_key,
            "signing_key": dir.signing_key().display().to_string(),
        }),
        &format!(
            "Created ledger {} in {}\nCheckpoint verifier key (give this to auditors):\n  {}\nSigning key (keep private, mode 0600): {}",
            report.origin,
            data.display(),
            report.verifier_key,
            dir.signing_key().display()
        ),
    )?;
    Ok(Exit::Ok)
}
