//! `annal key show|rotate`: the checkpoint key auditors verify with.

use annal_store::Store;
use serde_json::json;

use crate::args::KeyCommand;
use crate::exit::Exit;
use crate::output::Printer;

pub fn run(store: &Store, command: KeyCommand, printer: &Printer) -> anyhow::Result<Exit> {
    match command {
        KeyCommand::Show => show(store, printer),
        KeyCommand::Rotate(args) => {
            let r = store.rotate_key(args.window)?;
            printer.record(
                &json!({
                    "next_key": r.next_key,
                    "previous_key": r.previous_key,
                    "previous_valid_until": r.previous_valid_until.to_string(),
                    "index": r.index,
                }),
                &format!(
                    "New checkpoint key (give this to auditors):\n  {}\nPrevious key, co-signing checkpoints until {}:\n  {}\nRecorded in the log at index {} (ledger.key.rotated).",
                    r.next_key, r.previous_valid_until, r.previous_key, r.index
                ),
            )?;
            Ok(Exit::Ok)
        }
    }
}

fn show(store: &Store, printer: &Printer) -> anyhow::Result<Exit> {
    let keys: Vec<String> = store.verifiers().iter().map(|k| k.to_text()).collect();
    let Some(current) = keys.first() else {
        eprintln!(
            "annal: no checkpoint key in {}",
            store.data_dir().keys().display()
        );
        return Ok(Exit::Failure);
    };
    let previous = store.previous_key();
    let mut human = current.clone();
    if let Some((key, until)) = &previous {
        human.push_str(&format!(
            "\n(previous key, co-signing until {until}: {key})"
        ));
    }
    printer.record(
        &json!({
            "key": current,
            "previous": previous.map(|(key, until)| json!({"key": key, "valid_until": until.to_string()})),
        }),
        &human,
    )?;
    Ok(Exit::Ok)
}
