//! `annal verify [--key FILE] [--checkpoint FILE]`.
//!
//! Without `--checkpoint` it recomputes every leaf, node and the root and
//! checks the latest checkpoint's signature. With a checkpoint an auditor
//! saved earlier it also proves the current log extends it: the recomputed
//! root at the saved size must be the saved root, and the RFC 9162
//! consistency proof from it to the latest checkpoint must verify. An
//! operator who rewrote history and re-signed with the real key passes the
//! first check and fails these.

use annal_query::proof::hex;
use annal_store::checkpoint::{Checkpoint, NoteVerifier};
use annal_store::proof::{verify_consistency_signed, ProofError};
use annal_store::Store;
use anyhow::Context;
use serde_json::json;

use crate::args::VerifyArgs;
use crate::exit::{Exit, UsageError};
use crate::output::Printer;

pub fn run(store: &Store, args: VerifyArgs, printer: &Printer) -> anyhow::Result<Exit> {
    let key = match &args.key {
        Some(path) => Some(read_key(path)?),
        None => None,
    };
    let saved = args
        .checkpoint
        .as_deref()
        .map(super::proof::read_checkpoint)
        .transpose()?;
    // The keys trusted for the latest checkpoint: the auditor's key and
    // the keys the log records rotating to from it.
    let keys = match &key {
        Some(k) => store.keys_trusted_from(k)?,
        None => store.verifiers(),
    };
    let started = std::time::Instant::now();
    let report = store.verify_with(&keys)?;
    let mut problem = report.problem.as_ref().map(|p| (p.index, p.reason.clone()));
    let mut saved_doc = serde_json::Value::Null;
    if let (Some(note), None) = (&saved, &problem) {
        match extends(store, note, key.as_ref(), &keys) {
            Ok(cp) => {
                saved_doc = json!({"size": cp.size, "root": hex(&cp.root), "consistent": true})
            }
            Err(reason) => problem = Some((None, reason)),
        }
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let root = hex(&report.root);
    let cp_size = report.checkpoint.as_ref().map(|c| c.size);
    let doc = json!({
        "intact": problem.is_none(),
        "entries": report.leaves,
        "bytes": report.bytes,
        "root": root,
        "checkpoint_size": cp_size,
        "saved_checkpoint": saved_doc,
        "seconds": secs,
        "problem": problem.as_ref().map(|(index, reason)| json!({"index": index, "reason": reason})),
    });
    match &problem {
        None => {
            let mut line = format!(
                "OK: {} entries ({:.1} MB) verified in {:.2}s ({:.0} MB/s); root {}; signed checkpoint at size {}",
                report.leaves,
                report.bytes as f64 / 1e6,
                secs,
                report.bytes as f64 / 1e6 / secs,
                root,
                cp_size.map_or("-".to_string(), |s| s.to_string())
            );
            if let Some(size) = saved_doc["size"].as_u64() {
                line.push_str(&format!(
                    "\nOK: the log extends the saved checkpoint at size {size} (consistency proof verified)"
                ));
            }
            printer.record(&doc, &line)?;
            Ok(Exit::Ok)
        }
        Some((index, reason)) => {
            let at = index.map_or(String::new(), |i| format!(" at index {i}"));
            printer.record(&doc, &format!("FAILED{at}: {reason}"))?;
            Ok(Exit::Failure)
        }
    }
}

/// Proves that the (already verified) log extends the saved checkpoint.
fn extends(
    store: &Store,
    note: &str,
    key: Option<&NoteVerifier>,
    keys: &[NoteVerifier],
) -> Result<Checkpoint, String> {
    let saved_keys = key.map_or(keys, std::slice::from_ref);
    let saved = annal_store::proof::open_with_any(saved_keys, note)
        .map_err(|e| format!("the saved checkpoint does not verify: {e}"))?;
    let size = store.size();
    if saved.size > size {
        return Err(format!(
            "the saved checkpoint covers {} entries but the log has {size}: entries were removed (the history was rewritten)",
            saved.size
        ));
    }
    let ours = store.root_at(saved.size).map_err(|e| e.to_string())?;
    if ours != saved.root {
        return Err(format!(
            "the log's root at the saved size {} is {}, the saved checkpoint's is {}: the history was rewritten or forked",
            saved.size,
            hex(&ours),
            hex(&saved.root)
        ));
    }
    let latest = store
        .checkpoint_at(size)
        .map_err(|e| e.to_string())?
        .ok_or("the log has no signed checkpoint to prove against")?;
    let proof = store
        .consistency_proof(saved.size, size)
        .map_err(|e| e.to_string())?;
    let mut trusted = keys.to_vec();
    trusted.extend(key.cloned());
    verify_consistency_signed(&trusted, note, &latest, &proof).map_err(|e: ProofError| {
        format!(
            "the consistency proof from size {} to {size} does not verify: {e}",
            saved.size
        )
    })?;
    Ok(saved)
}

fn read_key(path: &std::path::Path) -> anyhow::Result<NoteVerifier> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    NoteVerifier::from_text(&text)
        .with_context(|| format!("verifier key {}", path.display()))
        .map_err(|e| UsageError(format!("{e:#}")).into())
}
