//! The `app.sync` fields of a row: what the `syncs` table shows of each
//! sync (phase, prune, timing, API cost), kept in the sidecar so that sync
//! reports read a few columns instead of every sync's JSON.
//!
//! Each value is what the SQL JSON functions the table was first defined
//! with give for the entry's `data` (`json_get_str`, `json_get_bool`,
//! `json_get_int`, `json_get_float`, `json_length`, from
//! datafusion-functions-json): a string that spells a number is that
//! number, a float with an integral value is an integer, anything else is
//! null. The times stay strings: the table converts them as
//! `to_timestamp_micros` does. Rows of other types hold nulls.

use std::sync::Arc;

use crate::data_view::{Data, Seen};
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt64Builder,
};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field};

/// The Arrow fields of the sync columns (`names`, in file order; all
/// nullable: null on rows that are not syncs).
pub(crate) fn fields(names: &[&str]) -> Vec<Field> {
    let types = [
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Utf8,
        DataType::Boolean,
        DataType::Boolean,
        DataType::UInt64,
        DataType::Float64,
        DataType::Int64,
        DataType::Int64,
        DataType::Int64,
    ];
    names
        .iter()
        .zip(types)
        .map(|(n, t)| Field::new(*n, t, true))
        .collect()
}

/// One sync's fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Sync {
    controller: Option<String>,
    revision: Option<String>,
    phase: Option<String>,
    started_at: Option<String>,
    finished_at: Option<String>,
    /// `coalesce(json_get_bool(data, 'prune'), false)`.
    prune: bool,
    dry_run: bool,
    /// `coalesce(json_length(data, 'resources'), 0)`.
    resources: u64,
    render_seconds: Option<f64>,
    api_requests: Option<i64>,
    api_throttled: Option<i64>,
    applied_bytes: Option<i64>,
}

impl Sync {
    /// The fields of an `app.sync` entry's `data`.
    pub(crate) fn of<D: Data>(data: &D) -> Sync {
        let metric = |key: &str| data.get("metrics").and_then(|m| m.get(key));
        Sync {
            controller: string(data.get("controller")),
            revision: string(data.get("revision")),
            phase: string(data.get("phase")),
            started_at: string(data.get("started_at")),
            finished_at: string(data.get("finished_at")),
            prune: boolean(data.get("prune")).unwrap_or(false),
            dry_run: boolean(data.get("dry_run")).unwrap_or(false),
            resources: length(data.get("resources")).unwrap_or(0),
            render_seconds: float(metric("render_seconds")),
            api_requests: int(metric("api_requests")),
            api_throttled: int(metric("api_throttled")),
            applied_bytes: int(metric("applied_bytes")),
        }
    }
}

/// `json_get_str`: a string, and nothing else.
fn string<D: Data>(v: Option<&D>) -> Option<String> {
    v?.str().map(str::to_string)
}

/// `json_get_bool`: a boolean, or a string that parses as one.
fn boolean<D: Data>(v: Option<&D>) -> Option<bool> {
    match v?.seen() {
        Seen::Bool(b) => Some(b),
        Seen::Str(s) => s.parse().ok(),
        _ => None,
    }
}

/// `json_length`: elements of an array, keys of an object.
fn length<D: Data>(v: Option<&D>) -> Option<u64> {
    match v?.seen() {
        Seen::Array(n) | Seen::Object(n) => Some(n as u64),
        _ => None,
    }
}

/// `json_get_float`: a number, or a string that parses as one.
fn float<D: Data>(v: Option<&D>) -> Option<f64> {
    match v?.seen() {
        Seen::Number(n) => n.as_f64(),
        Seen::Str(s) => s.parse().ok(),
        _ => None,
    }
}

/// `json_get_int`: an integer that fits i64, a float with an integral
/// value in range, or a string that parses as an i64.
fn int<D: Data>(v: Option<&D>) -> Option<i64> {
    match v?.seen() {
        Seen::Number(n) => n.as_i64().or_else(|| {
            if n.is_u64() {
                return None; // past i64::MAX
            }
            let f = n.as_f64()?;
            // -2^63 and 2^63 are exact as f64, so the range check is exact.
            #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
            (f.fract() == 0.0 && f >= i64::MIN as f64 && f < -(i64::MIN as f64)).then_some(f as i64)
        }),
        Seen::Str(s) => s.parse().ok(),
        _ => None,
    }
}

/// The builders of a chunk's sync columns.
pub(crate) struct Builders {
    text: [StringBuilder; 5],
    prune: BooleanBuilder,
    dry_run: BooleanBuilder,
    resources: UInt64Builder,
    render_seconds: Float64Builder,
    ints: [Int64Builder; 3],
}

impl Builders {
    pub(crate) fn new() -> Builders {
        Builders {
            text: std::array::from_fn(|_| StringBuilder::new()),
            prune: BooleanBuilder::new(),
            dry_run: BooleanBuilder::new(),
            resources: UInt64Builder::new(),
            render_seconds: Float64Builder::new(),
            ints: std::array::from_fn(|_| Int64Builder::new()),
        }
    }

    /// One more row: `sync`'s fields, or nulls.
    pub(crate) fn push(&mut self, sync: Option<&Sync>) {
        let Some(s) = sync else {
            self.text.iter_mut().for_each(|b| b.append_null());
            self.prune.append_null();
            self.dry_run.append_null();
            self.resources.append_null();
            self.render_seconds.append_null();
            self.ints.iter_mut().for_each(|b| b.append_null());
            return;
        };
        let texts = [
            &s.controller,
            &s.revision,
            &s.phase,
            &s.started_at,
            &s.finished_at,
        ];
        for (b, v) in self.text.iter_mut().zip(texts) {
            b.append_option(v.as_deref());
        }
        self.prune.append_value(s.prune);
        self.dry_run.append_value(s.dry_run);
        self.resources.append_value(s.resources);
        self.render_seconds.append_option(s.render_seconds);
        let ints = [s.api_requests, s.api_throttled, s.applied_bytes];
        for (b, v) in self.ints.iter_mut().zip(ints) {
            b.append_option(v);
        }
    }

    /// The columns, in file order.
    pub(crate) fn finish(&mut self) -> Vec<ArrayRef> {
        let mut out: Vec<ArrayRef> = self
            .text
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        out.push(Arc::new(self.prune.finish()));
        out.push(Arc::new(self.dry_run.finish()));
        out.push(Arc::new(self.resources.finish()));
        out.push(Arc::new(self.render_seconds.finish()));
        out.extend(
            self.ints
                .iter_mut()
                .map(|b| Arc::new(b.finish()) as ArrayRef),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_follow_the_json_functions() {
        let s = Sync::of(&json!({
            "app": "argocd/shop", "controller": 7, "revision": "abc", "phase": "Failed",
            "started_at": "2026-10-23T12:00:00Z", "prune": "true", "dry_run": 1,
            "resources": {"a": 1, "b": 2},
            "metrics": {"render_seconds": "1.5", "api_requests": 3.0,
                        "api_throttled": 2.5, "applied_bytes": "12"}
        }));
        assert_eq!(s.controller, None, "a number is not a string");
        assert_eq!(s.revision.as_deref(), Some("abc"));
        assert_eq!(s.finished_at, None);
        assert!(s.prune, "a string that parses as a bool");
        assert!(!s.dry_run, "a number is no bool: coalesced to false");
        assert_eq!(s.resources, 2, "an object's keys");
        assert_eq!(s.render_seconds, Some(1.5));
        assert_eq!(s.api_requests, Some(3), "an integral float");
        assert_eq!(s.api_throttled, None, "a fractional float");
        assert_eq!(s.applied_bytes, Some(12));
        assert_eq!(int(Some(&json!(u64::MAX))), None);
        assert_eq!(int(Some(&json!(-5))), Some(-5));
        assert_eq!(Sync::of(&json!([1])), Sync::default());
    }
}
