//! `--format envelope`: each record is one Envelope v1.

use annal_schemas::Envelope;

use crate::Record;

pub(super) fn decode(record: &Record) -> Result<Vec<Envelope>, String> {
    Envelope::parse(&record.bytes)
        .map(|e| vec![e])
        .map_err(|e| e.to_string())
}
