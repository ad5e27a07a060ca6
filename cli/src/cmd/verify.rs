//! `annal verify`.

use annal_store::checkpoint::NoteVerifier;
use annal_store::Store;
use anyhow::Context;
use serde_json::json;

use crate::args::VerifyArgs;
use crate::exit::Exit;
use crate::output::Printer;

pub fn run(store: &Store, args: VerifyArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let key = match &args.key {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(
                NoteVerifier::from_text(&text)
                    .with_context(|| format!("verifier key {}", path.display()))?,
            )
        }
        None => None,
    };
    let started = std::time::Instant::now();
    let report = store.verify(key.as_ref())?;
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let root = hex(&report.root);
    let cp_size = report.checkpoint.as_ref().map(|c| c.size);
    let doc = json!({
        "intact": report.is_intact(),
        "entries": report.leaves,
        "bytes": report.bytes,
        "root": root,
        "checkpoint_size": cp_size,
        "seconds": secs,
        "problem": report.problem.as_ref().map(|p| json!({"index": p.index, "reason": p.reason})),
    });
    match &report.problem {
        None => {
            printer.record(
                &doc,
                &format!(
                    "OK: {} entries ({:.1} MB) verified in {:.2}s ({:.0} MB/s); root {}; signed checkpoint at size {}",
                    report.leaves,
                    report.bytes as f64 / 1e6,
                    secs,
                    report.bytes as f64 / 1e6 / secs,
                    root,
                    cp_size.map_or("-".to_string(), |s| s.to_string())
                ),
            )?;
            Ok(Exit::Ok)
        }
        Some(problem) => {
            let at = problem
                .index
                .map_or(String::new(), |i| format!(" at index {i}"));
            printer.record(&doc, &format!("FAILED{at}: {}", problem.reason))?;
            Ok(Exit::Failure)
        }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
