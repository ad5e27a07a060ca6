//! RFC 3339 instants, normalized to UTC.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An instant on the valid-time or system-time axis.
///
/// Parsed from any RFC 3339 offset and always written back as UTC with a `Z`
/// suffix, so the same instant has one canonical spelling in the log (the leaf
/// bytes are hashed, so spelling matters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

/// A string that is not an RFC 3339 timestamp.
#[derive(Debug, thiserror::Error)]
#[error("invalid RFC 3339 timestamp {input:?} (expected e.g. 2026-11-01T10:00:00Z): {reason}")]
pub struct TimestampError {
    input: String,
    reason: chrono::ParseError,
}

impl Timestamp {
    /// The current wall-clock time, truncated to microseconds (the
    /// precision annal stores system time in).
    pub fn now() -> Self {
        let now = Utc::now();
        DateTime::from_timestamp_micros(now.timestamp_micros()).map_or(Timestamp(now), Timestamp)
    }

    /// Microseconds since the Unix epoch (the unit of every time index).
    pub fn unix_micros(&self) -> i64 {
        self.0.timestamp_micros()
    }

    /// The instant `micros` microseconds after the Unix epoch.
    pub fn from_unix_micros(micros: i64) -> Option<Self> {
        DateTime::from_timestamp_micros(micros).map(Timestamp)
    }

    /// The underlying chrono value.
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(value: DateTime<Utc>) -> Self {
        Timestamp(value)
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| Timestamp(t.with_timezone(&Utc)))
            .map_err(|reason| TimestampError {
                input: s.to_string(),
                reason,
            })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_normalize_to_utc() {
        let t: Timestamp = "2026-11-01T12:00:00+02:00".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-01T10:00:00Z");
        let t: Timestamp = "2026-11-01T10:00:00.250Z".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-01T10:00:00.250Z");
    }

    #[test]
    fn rejects_non_rfc3339() {
        let err = "2026-11-01 10:00".parse::<Timestamp>().unwrap_err();
        assert!(err.to_string().contains("2026-11-01 10:00"), "{err}");
    }
}
