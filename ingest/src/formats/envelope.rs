//! `--format envelope`: each record is one Envelope v1.

use annal_schemas::{Envelope, EnvelopeRef};
use annal_store::PreparedEvent;
use serde_json::Value;

use super::Emitter;
use crate::{redact, Record};

/// The fast path: raw bytes straight into the envelope type.
///
/// Validation errors can quote the value at fault; the message of a
/// rejected envelope is therefore taken from its redacted form, so that a
/// secret in a mistyped field cannot reach the quarantine or the terminal.
pub(super) fn decode(record: &Record) -> Result<Envelope, String> {
    Envelope::parse(&record.bytes).map_err(|e| {
        match serde_json::from_slice::<Value>(&record.bytes) {
            Ok(doc) => reason(doc, e),
            Err(_) => e.to_string(),
        }
    })
}

/// The fastest path, for a record headed straight for the log: a valid
/// envelope read through a borrow ([`EnvelopeRef`]) and encoded from it,
/// without building a `serde_json::Value`. `None` when it cannot be taken
/// so (invalid, something to redact, a header string with escapes): the
/// caller then decodes the record as before, which redacts it or explains
/// its error. Either way the event's bytes and facts are the same (tests
/// hold the two paths together).
pub(crate) fn prepare(record: &Record) -> Option<PreparedEvent> {
    let env = EnvelopeRef::parse(&record.bytes)?;
    if !redact::is_clean(&env.data) {
        return None;
    }
    PreparedEvent::from_ref(&env).ok()
}

/// `--format auto`'s first attempt: the record as an envelope, or `None`
/// (no error is explained here; the general path does that).
pub(super) fn try_parse(record: &Record) -> Option<Envelope> {
    let env = serde_json::from_slice::<Envelope>(&record.bytes).ok()?;
    env.validate().ok()?;
    Some(env)
}

/// An envelope met by `--format auto` (already parsed) that [`try_parse`]
/// did not take: a YAML one, a list's item, or one that is invalid, whose
/// error is taken from its redacted form as in [`decode`] (the copy kept
/// for it costs nothing on the envelopes `try_parse` takes).
pub(super) fn from_value(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let copy = doc.clone();
    let mut env = Envelope::from_value(doc).map_err(|e| reason(copy, e))?;
    redact::value(&mut env.data);
    emit.out.events.push(env);
    Ok(())
}

/// Why an envelope was rejected, in words taken from its redacted form
/// (`doc` is the unredacted document, `error` what validating it said).
/// Should the redacted form validate (redaction removed the fault), the
/// original error is all there is to say.
fn reason(mut doc: Value, error: impl std::fmt::Display) -> String {
    redact::value(&mut doc);
    match Envelope::from_value(doc) {
        Err(redacted) => redacted.to_string(),
        Ok(_) => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICKSTART: &str = include_str!("../../../examples/quickstart.jsonl");

    fn record(line: &str) -> Record {
        Record::new(1, line.as_bytes().to_vec())
    }

    /// The fast path is taken by every valid envelope with nothing to
    /// redact (the tests in `tests/fast_path.rs` hold its results to the
    /// general path's), and left to the general path otherwise.
    #[test]
    fn clean_valid_envelopes_take_the_fast_path_and_others_do_not() {
        for line in QUICKSTART.lines() {
            assert!(prepare(&record(line)).is_some(), "{line}");
        }
        let line = QUICKSTART
            .lines()
            .find(|l| l.contains("object.observed"))
            .unwrap();
        let mut secret: Value = serde_json::from_str(line).unwrap();
        secret["data"]["spec"] = serde_json::json!({"token": "t0k3n"});
        let mut invalid: Value = serde_json::from_str(line).unwrap();
        invalid["data"]["metadata"]["name"] = serde_json::json!(7);
        for doc in [secret, invalid] {
            assert!(prepare(&record(&doc.to_string())).is_none(), "{doc}");
        }
    }
}
