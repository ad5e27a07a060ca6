//! Input formats: each turns one framed record into envelopes.

use std::fmt;
use std::str::FromStr;

use annal_schemas::Envelope;

use crate::Record;

mod envelope;

/// An input format, named by `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Envelope v1 records (JSON Lines or a JSON array).
    Envelope,
}

impl Format {
    /// Every format, for help texts.
    pub const ALL: [Format; 1] = [Format::Envelope];

    /// The `--format` name.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Envelope => "envelope",
        }
    }

    /// Decodes one record. The error names the field at fault; the caller
    /// adds the file and line.
    pub fn decode(&self, record: &Record) -> Result<Vec<Envelope>, String> {
        match self {
            Format::Envelope => envelope::decode(record),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--format` value that names no format.
#[derive(Debug, thiserror::Error)]
#[error("unknown format {0:?} (known: envelope)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}
