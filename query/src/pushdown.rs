//! Filter pushdown: which part of a `WHERE` clause the store can answer.
//!
//! The `events` table pushes down `cluster = '…'` and `type = '…'` (served
//! by the store's derived cluster/type-by-time indexes), bounds on `time`
//! (the same indexes are ordered by valid time) and bounds on `index`
//! (a range of the log); bounds on `recorded_at` only skip column chunks
//! (see [`crate::tables::events`]). Every pushed filter is reported `Inexact`, so
//! DataFusion still applies it: the scan may return more, never less.

use annal_schemas::{EventType, Timestamp};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};

use crate::events::EventFilter;

/// The part of a scan the store narrows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventBounds {
    /// `cluster = …`.
    pub cluster: Option<String>,
    /// `type = …`.
    pub event_type: Option<String>,
    /// Valid time at or after.
    pub since: Option<Timestamp>,
    /// Valid time before.
    pub until: Option<Timestamp>,
    /// First log index.
    pub from_index: u64,
    /// Log index bound (exclusive).
    pub to_index: Option<u64>,
    /// System time at or after (only skips column chunks).
    pub recorded_since: Option<Timestamp>,
    /// System time before (only skips column chunks).
    pub recorded_until: Option<Timestamp>,
}

impl EventBounds {
    /// Folds the pushed-down filters (a conjunction) into bounds.
    pub fn from_filters(filters: &[Expr]) -> EventBounds {
        let mut b = EventBounds::default();
        for f in filters {
            b.add(f);
        }
        b
    }

    /// The store filter for these bounds; `None` when `type` names no
    /// event type (nothing can match).
    pub fn to_filter(&self) -> Option<EventFilter> {
        let event_type = match &self.event_type {
            Some(t) => Some(t.parse::<EventType>().ok()?),
            None => None,
        };
        Some(EventFilter {
            cluster: self.cluster.clone(),
            event_type,
            since: self.since,
            until: self.until,
            from_index: self.from_index,
            to_index: self.to_index,
            limit: None,
        })
    }

    /// How an events scan takes each of `filters`: the ones these bounds
    /// understand narrow the scan but are applied again above it
    /// (inexact), the rest are not pushed.
    pub fn pushdown(filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        filters
            .iter()
            .map(|f| match EventBounds::understands(f) {
                true => TableProviderFilterPushDown::Inexact,
                false => TableProviderFilterPushDown::Unsupported,
            })
            .collect()
    }

    /// Whether `expr` narrows the scan (and is therefore worth pushing).
    pub fn understands(expr: &Expr) -> bool {
        let mut b = EventBounds::default();
        b.add(expr);
        b != EventBounds::default()
    }

    fn add(&mut self, expr: &Expr) {
        match expr {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::And,
                right,
            }) => {
                self.add(left);
                self.add(right);
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let (column, op, value) = match (column_name(left), column_name(right)) {
                    (Some(c), None) => (c, *op, right.as_ref()),
                    (None, Some(c)) => match op.swap() {
                        Some(swapped) => (c, swapped, left.as_ref()),
                        None => return,
                    },
                    _ => return,
                };
                self.compare(column, op, value);
            }
            Expr::Between(between) if !between.negated => {
                if let Some(c) = column_name(&between.expr) {
                    self.compare(c, Operator::GtEq, &between.low);
                    self.compare(c, Operator::LtEq, &between.high);
                }
            }
            _ => {}
        }
    }

    fn compare(&mut self, column: &str, op: Operator, value: &Expr) {
        match column {
            "cluster" | "type" if op == Operator::Eq => {
                if let Some(s) = string_literal(value) {
                    if column == "cluster" {
                        self.cluster = Some(s);
                    } else {
                        self.event_type = Some(s);
                    }
                }
            }
            "time" | "recorded_at" => {
                let Some(micros) = timestamp_micros(value) else {
                    return;
                };
                let (since, until) = match column {
                    "time" => (&mut self.since, &mut self.until),
                    _ => (&mut self.recorded_since, &mut self.recorded_until),
                };
                narrow(since, until, op, micros);
            }
            "index" => {
                let Some(n) = u64_literal(value) else {
                    return;
                };
                match op {
                    Operator::Gt => self.from_index = self.from_index.max(n.saturating_add(1)),
                    Operator::GtEq => self.from_index = self.from_index.max(n),
                    Operator::Lt => self.to_index = Some(self.to_index.map_or(n, |t| t.min(n))),
                    Operator::LtEq => {
                        let n = n.saturating_add(1);
                        self.to_index = Some(self.to_index.map_or(n, |t| t.min(n)))
                    }
                    Operator::Eq => {
                        self.from_index = self.from_index.max(n);
                        let n = n.saturating_add(1);
                        self.to_index = Some(self.to_index.map_or(n, |t| t.min(n)));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// The bounds a conjunction of `filters` puts on the timestamp column
/// `name`, as `[since, until)`: for tables whose rows carry a time that is
/// not the events' (the `objects` table's `valid_from`).
pub fn time_range(filters: &[Expr], name: &str) -> (Option<Timestamp>, Option<Timestamp>) {
    fn walk(e: &Expr, name: &str, since: &mut Option<Timestamp>, until: &mut Option<Timestamp>) {
        match e {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::And,
                right,
            }) => {
                walk(left, name, since, until);
                walk(right, name, since, until);
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let (op, value) = match (column_name(left), column_name(right)) {
                    (Some(c), None) if c == name => (*op, right.as_ref()),
                    (None, Some(c)) if c == name => match op.swap() {
                        Some(swapped) => (swapped, left.as_ref()),
                        None => return,
                    },
                    _ => return,
                };
                if let Some(micros) = timestamp_micros(value) {
                    narrow(since, until, op, micros);
                }
            }
            Expr::Between(b) if !b.negated && column_name(&b.expr) == Some(name) => {
                if let Some(lo) = timestamp_micros(&b.low) {
                    narrow(since, until, Operator::GtEq, lo);
                }
                if let Some(hi) = timestamp_micros(&b.high) {
                    narrow(since, until, Operator::LtEq, hi);
                }
            }
            _ => {}
        }
    }
    let (mut since, mut until) = (None, None);
    for f in filters {
        walk(f, name, &mut since, &mut until);
    }
    (since, until)
}

/// Narrows `[since, until)` by `op micros`.
fn narrow(since: &mut Option<Timestamp>, until: &mut Option<Timestamp>, op: Operator, micros: i64) {
    let at = |m: i64| Timestamp::from_unix_micros(m);
    let raise = |b: &mut Option<Timestamp>, t: Timestamp| *b = Some(b.map_or(t, |x| x.max(t)));
    let lower = |b: &mut Option<Timestamp>, t: Timestamp| *b = Some(b.map_or(t, |x| x.min(t)));
    match op {
        Operator::Gt | Operator::GtEq => {
            if let Some(t) = at(micros) {
                raise(since, t);
            }
        }
        Operator::Lt => {
            if let Some(t) = at(micros) {
                lower(until, t);
            }
        }
        Operator::LtEq => {
            if let Some(t) = at(micros.saturating_add(1)) {
                lower(until, t);
            }
        }
        Operator::Eq => {
            if let (Some(s), Some(u)) = (at(micros), at(micros.saturating_add(1))) {
                raise(since, s);
                lower(until, u);
            }
        }
        _ => {}
    }
}

fn column_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Column(c) => Some(c.name.as_str()),
        Expr::Cast(c) => column_name(&c.expr),
        _ => None,
    }
}

fn literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

fn string_literal(e: &Expr) -> Option<String> {
    match literal(e)? {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.clone()),
        _ => None,
    }
}

fn u64_literal(e: &Expr) -> Option<u64> {
    match literal(e)? {
        ScalarValue::UInt64(Some(n)) => Some(*n),
        ScalarValue::Int64(Some(n)) => u64::try_from(*n).ok(),
        ScalarValue::Int32(Some(n)) => u64::try_from(*n).ok(),
        ScalarValue::UInt32(Some(n)) => Some(u64::from(*n)),
        _ => None,
    }
}

/// A timestamp literal in microseconds, whatever unit the planner chose;
/// also a string cast to a timestamp.
fn timestamp_micros(e: &Expr) -> Option<i64> {
    if let Expr::Cast(c) = e {
        return timestamp_micros(&c.expr);
    }
    match literal(e)? {
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(v.div_euclid(1000)),
        ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1000),
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s.parse::<Timestamp>().ok().map(|t| t.unix_micros()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{col, lit};

    use super::*;

    #[test]
    fn conjunctions_of_cluster_type_time_and_index_become_bounds() {
        let t = |s: &str| s.parse::<Timestamp>().unwrap();
        let ts = |s: &str| {
            lit(ScalarValue::TimestampMicrosecond(
                Some(t(s).unix_micros()),
                Some("UTC".into()),
            ))
        };
        let filters = [
            col("cluster").eq(lit("prod")),
            lit("app.sync").eq(col("type")),
            col("time")
                .gt_eq(ts("2026-11-01T00:00:00Z"))
                .and(col("time").lt_eq(ts("2026-11-02T00:00:00Z"))),
            col("time").gt(ts("2026-10-01T00:00:00Z")),
            col("index").lt(lit(100u64)),
            col("data").eq(lit("x")),
            col("recorded_at").lt_eq(ts("2026-11-03T00:00:00Z")),
        ];
        let b = EventBounds::from_filters(&filters);
        assert_eq!(b.cluster.as_deref(), Some("prod"));
        assert_eq!(b.event_type.as_deref(), Some("app.sync"));
        assert_eq!(b.since, Some(t("2026-11-01T00:00:00Z")));
        assert_eq!(b.until, Some(t("2026-11-02T00:00:00.000001Z")));
        assert_eq!((b.from_index, b.to_index), (0, Some(100)));
        assert_eq!(b.recorded_since, None);
        assert_eq!(b.recorded_until, Some(t("2026-11-03T00:00:00.000001Z")));
        assert!(!EventBounds::understands(&col("data").eq(lit("x"))));
        assert!(!EventBounds::understands(&col("cluster").not_eq(lit("x"))));
        assert!(EventBounds::understands(&col("time").between(
            ts("2026-11-01T00:00:00Z"),
            ts("2026-11-02T00:00:00Z")
        )));
    }
}
