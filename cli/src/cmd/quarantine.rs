//! `annal quarantine list|show|retry|drop`.

use annal_ingest::{pipeline, Format};
use annal_store::{QuarantineRecord, Store};
use serde_json::json;

use crate::args::QuarantineCommand;
use crate::exit::{Exit, UsageError};
use crate::output::{Printer, Table};

pub fn run(store: &Store, command: QuarantineCommand, printer: &Printer) -> anyhow::Result<Exit> {
    let q = store.quarantine();
    match command {
        QuarantineCommand::List => {
            let mut table = Table::new(&["id", "source", "line", "format", "reason", "last_seen"]);
            for r in q.list() {
                let r = r?;
                table.push(vec![
                    json!(r.id),
                    json!(r.source),
                    json!(r.line),
                    json!(r.format),
                    json!(r.reason),
                    json!(r.last_seen.to_string()),
                ]);
            }
            printer.table(&table)?;
            Ok(Exit::Ok)
        }
        QuarantineCommand::Show { id } => {
            let r = q
                .get(&id)?
                .ok_or_else(|| UsageError(format!("no quarantined record {id:?}")))?;
            printer.record(&serde_json::to_value(&r)?, &r.raw)?;
            Ok(Exit::Ok)
        }
        QuarantineCommand::Retry { ids, cluster, time } => {
            let options = pipeline::Options {
                cluster,
                time,
                ..pipeline::Options::default()
            };
            let records: Vec<QuarantineRecord> = if ids.is_empty() {
                q.list().collect::<Result<_, _>>()?
            } else {
                ids.iter()
                    .map(|id| {
                        q.get(id)?.ok_or_else(|| {
                            anyhow::Error::new(UsageError(format!("no quarantined record {id:?}")))
                        })
                    })
                    .collect::<anyhow::Result<_>>()?
            };
            let mut table = Table::new(&["id", "result", "reason"]);
            let mut still_bad = 0;
            for r in records {
                let decoded = r
                    .format
                    .parse::<Format>()
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        pipeline::decode_record(
                            f,
                            &r.source,
                            r.line.unwrap_or(1),
                            r.raw.as_bytes(),
                            &options,
                        )
                    });
                match decoded {
                    Ok(events) if !r.truncated => {
                        let outcome = store.append(events)?;
                        q.remove(&r.id)?;
                        let result = if outcome.appended > 0 {
                            "appended"
                        } else {
                            "duplicate"
                        };
                        table.push(vec![json!(r.id), json!(result), json!(null)]);
                    }
                    Ok(_) => {
                        still_bad += 1;
                        table.push(vec![
                            json!(r.id),
                            json!("rejected"),
                            json!(
                                "record was truncated in quarantine; re-ingest it from its source"
                            ),
                        ]);
                    }
                    Err(reason) => {
                        still_bad += 1;
                        table.push(vec![json!(r.id), json!("rejected"), json!(reason)]);
                    }
                }
            }
            store.flush()?;
            printer.table(&table)?;
            Ok(if still_bad > 0 { Exit::Usage } else { Exit::Ok })
        }
        QuarantineCommand::Drop { ids } => {
            let mut missing = Vec::new();
            for id in &ids {
                if !q.remove(id)? {
                    missing.push(id.clone());
                }
            }
            store.flush()?;
            if missing.is_empty() {
                Ok(Exit::Ok)
            } else {
                Err(UsageError(format!("no quarantined record(s): {}", missing.join(", "))).into())
            }
        }
    }
}
