//! `annal placement diff`: what a cluster selector picks, and what changes,
//! as a CI gate.

use annal_query::asof::inventory::AsOf;
use annal_query::recovery::placement::{self, Diff, Selector, Side};
use annal_schemas::Timestamp;
use annal_store::Store;
use serde_json::json;

use crate::args::{PlacementCommand, PlacementDiffArgs};
use crate::exit::{Exit, UsageError};
use crate::output::{OutputFormat, Printer, Table};

pub fn run(store: &Store, command: PlacementCommand, printer: &Printer) -> anyhow::Result<Exit> {
    match command {
        PlacementCommand::Diff(args) => diff(store, &args, printer),
    }
}

fn diff(store: &Store, args: &PlacementDiffArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let parse = |s: &str| Selector::parse(s).map_err(|e| UsageError(e.to_string()));
    let selector = parse(&args.selector)?;
    let exclude = parse(&args.exclude)?;
    let side = |selector: Selector, at: Timestamp| -> anyhow::Result<Side> {
        Ok(Side {
            selector,
            as_of: AsOf::new(store, at, args.known_at)?,
        })
    };
    let (from, to) = match (&args.proposed_selector, args.from, args.to) {
        (Some(proposed), _, _) => {
            let at = args.at.unwrap_or_else(Timestamp::now);
            (side(selector, at)?, side(parse(proposed)?, at)?)
        }
        (None, Some(t1), Some(t2)) => (side(selector.clone(), t1)?, side(selector, t2)?),
        _ => return Err(UsageError("give --from and --to, or --proposed-selector".into()).into()),
    };
    let d = placement::diff(store, &from, &to, &exclude)?;
    let flags = placement::gate(&d, args.max_add, args.max_remove);
    print(&d, &flags, printer)?;
    Ok(if flags.is_empty() {
        Exit::Ok
    } else {
        Exit::NeedsApproval
    })
}

fn print(d: &Diff, flags: &[String], printer: &Printer) -> anyhow::Result<()> {
    let verdict = if flags.is_empty() {
        "safe".to_string()
    } else {
        format!("needs approval: {}", flags.join("; "))
    };
    if printer.format == OutputFormat::Json {
        printer.document(
            d,
            &[
                ("needs_approval", json!(!flags.is_empty())),
                ("flags", json!(flags)),
            ],
        )?;
        return Ok(());
    }
    let heading = format!(
        "Placement diff from {} to {}: {} candidates, {} added, {} removed\n{verdict}\n",
        d.from,
        d.to,
        d.candidates.len(),
        d.added.len(),
        d.removed.len()
    );
    printer.heading("annal placement diff", &heading)?;
    let mut table = Table::new(&["cluster", "change"]);
    for c in &d.candidates {
        let change = if d.added.contains(c) { "added" } else { "kept" };
        table.push(vec![json!(c), json!(change)]);
    }
    for c in &d.removed {
        table.push(vec![json!(c), json!("removed")]);
    }
    printer.table(&table)?;
    Ok(())
}
