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

/// A command-line time that is neither RFC 3339 nor a `now` offset.
#[derive(Debug, thiserror::Error)]
#[error("invalid time {input:?}: expected RFC 3339 (e.g. 2026-11-01T10:00:00Z), `now`, or an offset such as now-2h or now+30m (units s, m, h, d, w)")]
pub struct InstantError {
    input: String,
}

/// A duration as people type it: a whole number of seconds, minutes,
/// hours, days or weeks (`30s`, `15m`, `2h`, `7d`, `1w`), in seconds.
pub fn duration_seconds(input: &str) -> Option<u64> {
    let unit_at = input.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = input.split_at(unit_at);
    let n: u64 = digits.parse().ok()?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    n.checked_mul(seconds)
}

impl Timestamp {
    /// An instant as people type it on a command line or in a URL: RFC 3339,
    /// `now`, or `now` plus or minus a whole number of seconds, minutes,
    /// hours, days or weeks (`now-2h`, `now+30m`, `now-7d`).
    pub fn parse_at(input: &str, now: Timestamp) -> Result<Timestamp, InstantError> {
        let err = || InstantError {
            input: input.to_string(),
        };
        let s = input.trim();
        if let Ok(t) = s.parse::<Timestamp>() {
            return Ok(t);
        }
        let Some(rest) = s.strip_prefix("now") else {
            return Err(err());
        };
        if rest.is_empty() {
            return Ok(now);
        }
        let (sign, rest) = match rest.as_bytes()[0] {
            b'-' => (-1i64, &rest[1..]),
            b'+' => (1i64, &rest[1..]),
            _ => return Err(err()),
        };
        let seconds = duration_seconds(rest)
            .and_then(|s| i64::try_from(s).ok())
            .ok_or_else(err)?;
        let micros = seconds
            .checked_mul(1_000_000)
            .and_then(|d| now.unix_micros().checked_add(sign * d))
            .ok_or_else(err)?;
        Timestamp::from_unix_micros(micros).ok_or_else(err)
    }

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
    fn command_line_times_take_now_offsets() {
        let now: Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
        let at = |s: &str| Timestamp::parse_at(s, now).map(|t| t.to_string());
        assert_eq!(at("now").unwrap(), "2026-11-01T10:00:00Z");
        assert_eq!(at("now-2h").unwrap(), "2026-11-01T08:00:00Z");
        assert_eq!(at("now+30m").unwrap(), "2026-11-01T10:30:00Z");
        assert_eq!(at("now-7d").unwrap(), "2026-10-25T10:00:00Z");
        assert_eq!(
            at("2026-01-01T00:00:00+01:00").unwrap(),
            "2025-12-31T23:00:00Z"
        );
        for bad in [
            "yesterday",
            "now-",
            "now-2",
            "now-2y",
            "now*2h",
            "now-99999999999999w",
        ] {
            let e = at(bad).unwrap_err().to_string();
            assert!(e.contains("now-2h") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(duration_seconds("0s"), Some(0));
        assert_eq!(duration_seconds("90m"), Some(5400));
        assert_eq!(duration_seconds("7d"), Some(604_800));
        assert_eq!(duration_seconds("2w"), Some(1_209_600));
        for bad in ["", "h", "1", "1y", "-1h", "1.5h", "18446744073709551615w"] {
            assert_eq!(duration_seconds(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rejects_non_rfc3339() {
        let err = "2026-11-01 10:00".parse::<Timestamp>().unwrap_err();
        assert!(err.to_string().contains("2026-11-01 10:00"), "{err}");
    }
}
