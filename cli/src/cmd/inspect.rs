//! Read-only commands: `status`, `checkpoint`, `log` and `reindex`.

use annal_query::events::{self, EventFilter};
use annal_store::Store;
use serde_json::json;

use crate::args::LogArgs;
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer};
use annal_query::proof::hex;

pub fn status(store: &Store, printer: &Printer) -> anyhow::Result<Exit> {
    let s = store.status();
    let root = hex(&s.root);
    let recorded = s.recorded_at.map(|t| t.to_string());
    printer.record(
        &json!({
            "data": store.data_dir().root().display().to_string(),
            "size": s.size,
            "root": root,
            "recorded_at": recorded,
            "quarantined": s.quarantined,
            "writes_refused": s.writes_refused,
        }),
        &format!(
            "data:        {}\nentries:     {}\nroot:        {}\nrecorded at: {}\nquarantined: {}\nwrites:      {}",
            store.data_dir().root().display(),
            s.size,
            root,
            recorded.as_deref().unwrap_or("-"),
            s.quarantined,
            s.writes_refused.as_deref().unwrap_or("accepted")
        ),
    )?;
    Ok(if s.writes_refused.is_some() {
        Exit::Failure
    } else {
        Exit::Ok
    })
}

pub fn checkpoint(store: &Store, printer: &Printer) -> anyhow::Result<Exit> {
    match store.checkpoint() {
        Some(note) if matches!(printer.format, OutputFormat::Table | OutputFormat::Wide) => {
            print!("{note}");
            Ok(Exit::Ok)
        }
        Some(note) => {
            let mut lines = note.lines();
            let origin = lines.next().unwrap_or_default();
            let size: Option<u64> = lines.next().and_then(|l| l.parse().ok());
            let root = lines.next().unwrap_or_default();
            printer.record(
                &json!({"origin": origin, "size": size, "root": root, "note": note}),
                &note,
            )?;
            Ok(Exit::Ok)
        }
        None => {
            eprintln!("annal: the ledger is empty: no checkpoint yet");
            Ok(Exit::Failure)
        }
    }
}

pub fn log(store: &Store, args: &LogArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let filter = EventFilter {
        cluster: args.cluster.clone(),
        event_type: args.event_type,
        since: args.since,
        until: args.until,
        limit: Some(args.limit),
        ..EventFilter::default()
    };
    let mut columns = vec!["index", "time", "type", "cluster", "id", "recorded_at"];
    if args.full {
        columns.extend(["source", "actor", "data"]);
    }
    let mut out = printer
        .stream(&columns)
        .narrow(&["index", "time", "type", "cluster", "id"]);
    for entry in events::select(store, &filter) {
        let e = entry?;
        let mut row = vec![
            json!(e.index),
            json!(e.event.time.to_string()),
            json!(e.event.event_type.as_str()),
            json!(e.event.cluster),
            json!(e.event.id),
            json!(e.recorded_at.to_string()),
        ];
        if args.full {
            row.extend([json!(e.event.source), json!(e.event.actor), e.event.data]);
        }
        out.push(&row)?;
    }
    out.finish()?;
    Ok(Exit::Ok)
}

pub fn reindex(store: &Store, printer: &Printer) -> anyhow::Result<Exit> {
    let started = std::time::Instant::now();
    let (replayed, trees) = store.reindex()?;
    printer.record(
        &json!({"replayed": replayed, "indexes": trees, "seconds": started.elapsed().as_secs_f64()}),
        &format!(
            "rebuilt {} from {} entries in {:.2}s",
            trees.join(", "),
            replayed,
            started.elapsed().as_secs_f64()
        ),
    )?;
    Ok(Exit::Ok)
}
