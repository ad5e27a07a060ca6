//! Valid time: where each event's `time` came from.

use annal_schemas::Timestamp;
use serde_json::Value;

/// Where an event's valid time came from; reported per run so that an
/// operator knows when the file's modification time stood in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeSource {
    /// The record's own timestamp (audit `stageTimestamp`, Event
    /// `lastTimestamp`, Argo CD `deployedAt`, ...).
    Record = 0,
    /// `--time`.
    Flag = 1,
    /// The newest `metadata.managedFields[].time` of an object.
    ManagedFields = 2,
    /// The input file's modification time (ingest start for stdin).
    File = 3,
}

impl TimeSource {
    /// Number of sources.
    pub const COUNT: usize = 4;
    /// Every source, in discriminant order.
    pub const ALL: [TimeSource; 4] = [
        TimeSource::Record,
        TimeSource::Flag,
        TimeSource::ManagedFields,
        TimeSource::File,
    ];

    /// Name used in `source` and summaries.
    pub fn as_str(&self) -> &'static str {
        match self {
            TimeSource::Record => "record",
            TimeSource::Flag => "--time",
            TimeSource::ManagedFields => "managedFields",
            TimeSource::File => "file-mtime",
        }
    }
}

/// Reads an RFC 3339 timestamp field; placeholders (`<ts>`), nulls and
/// other non-times are `None`.
pub(super) fn field(v: &Value, key: &str) -> Option<Timestamp> {
    parse(v.get(key)?)
}

/// Reads an RFC 3339 timestamp value.
pub(super) fn parse(v: &Value) -> Option<Timestamp> {
    v.as_str()?.parse().ok()
}

/// The first of `keys` that holds a timestamp.
pub(super) fn first(v: &Value, keys: &[&str]) -> Option<Timestamp> {
    keys.iter().find_map(|k| field(v, k))
}
