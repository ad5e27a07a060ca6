//! `annal demo`: a newcomer's first minute.
//!
//! Creates the ledger if needed, appends the bundled examples (idempotent, so
//! running it twice appends nothing), verifies the log, and shows what the
//! ledger now knows.

use std::path::Path;

use annal_ingest::{pipeline, Format, Input};
use annal_store::{Store, StoreError, DEFAULT_ORIGIN};

use super::inventory;
use crate::args::InventoryArgs;
use crate::exit::Exit;
use crate::output::{OutputFormat, Printer};

/// The bundled examples: two clusters, Argo CD, Flux and Helm owned objects.
const EXAMPLES: &str = include_str!("../../../examples/quickstart.jsonl");

pub fn run(data: &Path, printer: &Printer) -> anyhow::Result<Exit> {
    match Store::init(data, DEFAULT_ORIGIN) {
        Ok(report) => eprintln!("Created ledger {} in {}", report.origin, data.display()),
        Err(StoreError::AlreadyInitialized { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let store = Store::open(data)?;
    let summary = pipeline::run(
        &store,
        vec![Input::reader(
            "examples/quickstart.jsonl",
            EXAMPLES.as_bytes(),
        )],
        Format::Envelope,
        &pipeline::Options::default(),
        &mut (),
    )?;
    let report = store.verify(None)?;
    let human = matches!(printer.format, OutputFormat::Table | OutputFormat::Wide);
    if human {
        println!(
            "Loaded the bundled examples: appended {}, duplicates {}, rejected {}.",
            summary.appended, summary.duplicates, summary.rejected
        );
        println!(
            "Log: {} entries, verify: {}.\n",
            report.leaves,
            if report.is_intact() {
                "intact"
            } else {
                "FAILED"
            }
        );
        println!("Objects that exist now:");
    }
    inventory::run(
        &store,
        &InventoryArgs {
            at: None,
            known_at: None,
            cluster: None,
            owner: None,
            freshness: crate::args::Freshness {
                gap: std::time::Duration::from_secs(
                    annal_query::asof::coverage::DEFAULT_GAP_SECONDS as u64,
                ),
            },
        },
        printer,
    )?;
    if human {
        println!(
            "\nNext: annal --data {} log | annal --data {0} verify | annal --data {0} inventory --at 2026-11-01T09:30:00Z",
            data.display()
        );
    }
    Ok(if report.is_intact() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}
