//! Filter pushdown: which part of a `WHERE` clause the store can answer.
//!
//! The `events` table pushes down `cluster = '…'` and `type = '…'` (served
//! by the store's derived cluster/type-by-time indexes), bounds on `time`
//! (the same indexes are ordered by valid time) and bounds on `index`
//! (a range of the log); bounds on `recorded_at` only skip column chunks
//! (see [`crate::tables::events`]), `type IN (…)` narrows the rows a chunk
//! read keeps, and `json_get_str(data, …, 'key') = 'value'` gives bytes a
//! leaf must contain to be parsed at all (for `'metadata', 'name'`, also
//! the name hash a chunk read keeps). A filter every way of scanning
//! applies exactly (`cluster = '…'`, `type = '…'`, `type IN (…)`, `time` against
//! a timestamp by `>=`, `>`, `<` or `<=`) is reported `Exact`, so DataFusion neither
//! applies it again nor reads its column for it ([`exact`]); the others
//! are `Inexact`: the scan may return more, never less.

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
    /// `type IN (…)` (or `type = … OR type = …`): only narrows column
    /// chunk reads (the indexes take one type).
    pub types: Option<Vec<String>>,
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
    /// Bytes every matching leaf contains, from `json_get_str(data, …,
    /// 'key') = 'value'` (see `data_needle`): a read of the leaves skips the
    /// others before parsing them.
    pub needles: Vec<Vec<u8>>,
    /// `json_get_str(data, 'metadata', 'name') = …`: column chunk reads
    /// keep only the rows of that name's hash, and a scan that needs the
    /// leaves reads only theirs.
    pub name: Option<String>,
    /// `column [NOT] LIKE 'prefix%'` on an envelope text column: column
    /// chunk reads keep only the rows that match (inexact: the leaves are
    /// not narrowed by it, so it is applied again above the scan).
    pub prefixes: Vec<annal_store::columns::Prefix>,
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

    /// The types a row can have under these bounds (`None`: any).
    pub fn possible_types(&self) -> Option<Vec<String>> {
        match (&self.event_type, &self.types) {
            (Some(t), Some(list)) => Some(list.iter().filter(|l| *l == t).cloned().collect()),
            (Some(t), None) => Some(vec![t.clone()]),
            (None, list) => list.clone(),
        }
    }

    /// The rows a column chunk read keeps under these bounds.
    pub fn keep(&self) -> annal_store::columns::Keep {
        annal_store::columns::Keep {
            name: self.name.clone(),
            cluster: self.cluster.clone(),
            types: self.possible_types(),
            since: self.since.map(|t| t.unix_micros()),
            until: self.until.map(|t| t.unix_micros()),
            prefixes: self.prefixes.clone(),
            within: Vec::new(),
        }
    }

    /// How an events scan takes each of `filters`: the ones these bounds
    /// understand narrow the scan, and are applied again above it unless
    /// the scan applies them exactly ([`exact`]); the rest are not pushed.
    pub fn pushdown(filters: &[&Expr]) -> Vec<TableProviderFilterPushDown> {
        filters
            .iter()
            .map(|f| match (EventBounds::understands(f), exact(f)) {
                (true, true) => TableProviderFilterPushDown::Exact,
                (true, false) => TableProviderFilterPushDown::Inexact,
                (false, _) => TableProviderFilterPushDown::Unsupported,
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
        if let Some((path, value)) = data_equality(expr) {
            if path == [Some("metadata".into()), Some("name".into())] {
                self.name = Some(value.clone());
            }
            self.needles.extend(data_needle(&path, &value));
            return;
        }
        match expr {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::And,
                right,
            }) => {
                self.add(left);
                self.add(right);
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) if *op != Operator::Or => {
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
            Expr::Like(like) => self.prefixes.extend(prefix_like(like)),
            Expr::Between(between) if !between.negated => {
                if let Some(c) = column_name(&between.expr) {
                    self.compare(c, Operator::GtEq, &between.low);
                    self.compare(c, Operator::LtEq, &between.high);
                }
            }
            _ => {
                if let Some(list) = type_list(expr) {
                    self.types = Some(match self.types.take() {
                        Some(had) => had.into_iter().filter(|t| list.contains(t)).collect(),
                        None => list,
                    });
                }
            }
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

/// `column [NOT] LIKE 'prefix%'` on an envelope text column, with no
/// other wildcard and no escape: the only `LIKE` a prefix test answers.
fn prefix_like(
    like: &datafusion::logical_expr::expr::Like,
) -> Option<annal_store::columns::Prefix> {
    if like.case_insensitive || like.escape_char.is_some() {
        return None;
    }
    let text = &annal_store::columns::COLUMNS[annal_store::columns::TEXT];
    let column = column_name(&like.expr).filter(|c| text.contains(c))?;
    let pattern = string_literal(&like.pattern)?;
    let prefix = pattern.strip_suffix('%')?;
    if prefix.contains(['%', '_', '\\']) {
        return None;
    }
    Some(annal_store::columns::Prefix {
        column: column.to_string(),
        prefix: prefix.to_string(),
        negated: like.negated,
    })
}

/// Whether every way of scanning `events` keeps exactly the rows `expr`
/// keeps: chunk reads keep exactly the rows their [`EventBounds::keep`]
/// matches, rows built from the leaves past the chunks go through the
/// same test, and reads through the indexes test the cluster, the type
/// (list) and the time window of each leaf. Only the plain forms qualify:
/// the column itself (no cast) against a literal whose value the bounds
/// hold without rounding.
fn exact(expr: &Expr) -> bool {
    match expr {
        Expr::InList(l) => {
            !l.negated
                && matches!(l.expr.as_ref(), Expr::Column(c) if c.name == "type")
                && l.list.iter().all(|v| string_literal(v).is_some())
        }
        // `type = 'a' OR type = 'b'`: how DataFusion writes a short
        // `type IN ('a', 'b')` before it pushes it down.
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let typed = |e: &Expr| type_list(e).is_some() && exact(e);
            typed(left) && typed(right)
        }
        Expr::BinaryExpr(_) => {
            let Some((column, op, value)) = comparison(expr) else {
                return false;
            };
            match (column, op) {
                ("cluster" | "type", Operator::Eq) => string_literal(value).is_some(),
                ("time", _) => exact_time_bound(expr, "time"),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `expr` is one bound on the timestamp column `name` that
/// [`time_range`] holds exactly (`name` against a timestamp literal with
/// no finer part than a microsecond, by `>=`, `>`, `<` or `<=`): a scan
/// that keeps exactly the rows in that range answers it `Exact`.
pub fn exact_time_bound(expr: &Expr, name: &str) -> bool {
    comparison(expr).is_some_and(|(column, op, value)| {
        column == name
            && matches!(
                op,
                Operator::GtEq | Operator::Lt | Operator::Gt | Operator::LtEq
            )
            && exact_micros(value).is_some()
    })
}

/// `expr` as `column op value`, either way round (`op` as seen from the
/// column): the plain column itself, no cast.
fn comparison(expr: &Expr) -> Option<(&str, Operator, &Expr)> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = expr else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), v) => Some((c.name.as_str(), *op, v)),
        (v, Expr::Column(c)) => Some((c.name.as_str(), op.swap()?, v)),
        _ => None,
    }
}

/// A timestamp literal's microseconds, when it has no finer part.
fn exact_micros(e: &Expr) -> Option<i64> {
    match literal(e)? {
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampNanosecond(Some(v), _) => (v % 1000 == 0).then_some(v / 1000),
        ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1000),
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000),
        _ => None,
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
        // Times are whole microseconds, so `> t` is `>= t + 1µs`: held
        // that way, the bound keeps exactly the rows the filter does.
        Operator::Gt => {
            if let Some(t) = at(micros.saturating_add(1)) {
                raise(since, t);
            }
        }
        Operator::GtEq => {
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

/// `json_get_str(data, path…) = 'value'` (either way round) as its path
/// (keys; `None` for an array position or an expression) and value.
fn data_equality(e: &Expr) -> Option<(Vec<Option<String>>, String)> {
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Eq,
        right,
    }) = e
    else {
        return None;
    };
    let (call, value) = match (left.as_ref(), right.as_ref()) {
        (Expr::ScalarFunction(f), v) | (v, Expr::ScalarFunction(f)) => (f, string_literal(v)?),
        _ => return None,
    };
    if call.func.name() != "json_get_str" {
        return None;
    }
    let (first, path) = call.args.split_first()?;
    if column_name(first) != Some("data") {
        return None;
    }
    Some((path.iter().map(string_literal).collect(), value))
}

/// `"key":"value"` for the last key of a `data` equality: the canonical
/// text of a leaf whose `data` has that string at that path holds those
/// bytes (RFC 8785 puts no space around the colon and writes printable
/// ASCII as it is). Keys or values with characters it could escape
/// (quotes, backslashes, controls) or outside ASCII give none.
fn data_needle(path: &[Option<String>], value: &str) -> Option<Vec<u8>> {
    let key = path.last()?.as_ref()?;
    let plain = |s: &str| {
        s.bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    };
    (plain(key) && plain(value)).then(|| format!("\"{key}\":\"{value}\"").into_bytes())
}

/// The types of `type IN ('…', …)` or `type = '…' OR type = '…' …`.
fn type_list(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::InList(l) if !l.negated && column_name(&l.expr) == Some("type") => {
            l.list.iter().map(string_literal).collect()
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            let mut list = type_list(left)?;
            list.extend(type_list(right)?);
            Some(list)
        }
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => match (column_name(left), column_name(right)) {
            (Some("type"), None) => Some(vec![string_literal(right)?]),
            (None, Some("type")) => Some(vec![string_literal(left)?]),
            _ => None,
        },
        _ => None,
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
    fn only_the_plain_forms_every_scan_applies_are_exact() {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::prelude::cast;
        use TableProviderFilterPushDown::{Exact, Inexact, Unsupported};
        let micros = |v: i64| lit(ScalarValue::TimestampMicrosecond(Some(v), None));
        let nanos = |v: i64| lit(ScalarValue::TimestampNanosecond(Some(v), None));
        let cases = [
            (col("cluster").eq(lit("prod")), Exact),
            (lit("prod").eq(col("cluster")), Exact),
            (col("type").eq(lit("app.sync")), Exact),
            (
                col("type").in_list(vec![lit("object.observed"), lit("app.sync")], false),
                Exact,
            ),
            (col("time").gt_eq(micros(5)), Exact),
            (col("time").lt(micros(5)), Exact),
            (micros(5).gt(col("time")), Exact),
            (col("time").lt(nanos(5_000)), Exact),
            // Rounded to microseconds: the bound keeps more.
            (col("time").lt(nanos(5_001)), Inexact),
            // Held as `time >= t + 1µs` and `time < t + 1µs`.
            (col("time").gt(micros(5)), Exact),
            (col("time").lt_eq(micros(5)), Exact),
            (micros(5).lt(col("time")), Exact),
            (col("time").gt(nanos(5_001)), Inexact),
            (col("time").gt_eq(lit("2026-11-01T00:00:00Z")), Inexact),
            (col("index").lt(lit(100u64)), Inexact),
            (col("recorded_at").lt(micros(5)), Inexact),
            (
                col("type")
                    .eq(lit("a"))
                    .or(lit("b").eq(col("type")))
                    .or(col("type").in_list(vec![lit("c")], false)),
                Exact,
            ),
            (
                col("type")
                    .eq(lit("a"))
                    .or(cast(col("type"), DataType::Utf8).eq(lit("b"))),
                Inexact,
            ),
            (
                col("cluster")
                    .eq(lit("prod"))
                    .and(col("time").gt(micros(5))),
                Inexact,
            ),
            (
                cast(
                    col("time"),
                    DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, None),
                )
                .gt(micros(5)),
                Inexact,
            ),
            (col("principal").eq(lit("x")), Unsupported),
        ];
        for (filter, want) in cases {
            assert_eq!(EventBounds::pushdown(&[&filter]), vec![want], "{filter}");
        }
    }

    #[test]
    fn a_prefix_like_on_a_text_column_narrows_chunk_reads_inexactly() {
        use TableProviderFilterPushDown::{Inexact, Unsupported};
        let prefix = |column: &str, prefix: &str, negated: bool| annal_store::columns::Prefix {
            column: column.into(),
            prefix: prefix.into(),
            negated,
        };
        let cases = [
            (
                col("principal").not_like(lit("system:%")),
                Some(prefix("principal", "system:", true)),
            ),
            (
                col("credential").like(lit("sha256:%")),
                Some(prefix("credential", "sha256:", false)),
            ),
            (col("app").like(lit("%")), Some(prefix("app", "", false))),
            // Any other wildcard, an escape, case folding, a column the
            // sidecar does not hold as text: not a prefix test.
            (col("principal").like(lit("system:%:x%")), None),
            (col("principal").like(lit("sys_em:%")), None),
            (col("principal").like(lit("%admin")), None),
            (col("principal").like(lit("alice")), None),
            (col("principal").like(lit("a\\%%")), None),
            (col("principal").ilike(lit("system:%")), None),
            (col("data").like(lit("{%")), None),
            (col("id").like(lit("e%")), None),
        ];
        for (filter, want) in cases {
            let b = EventBounds::from_filters(std::slice::from_ref(&filter));
            assert_eq!(
                b.prefixes,
                want.clone().into_iter().collect::<Vec<_>>(),
                "{filter}"
            );
            let push = if want.is_some() { Inexact } else { Unsupported };
            assert_eq!(EventBounds::pushdown(&[&filter]), vec![push], "{filter}");
            assert_eq!(b.keep().prefixes, b.prefixes);
        }
    }

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
        assert_eq!(b.types, None);
        assert_eq!(b.possible_types(), Some(vec!["app.sync".to_string()]));
        // `time > t` keeps t's own microsecond out; `time <= t` keeps it in.
        let after = EventBounds::from_filters(&[col("time").gt(ts("2026-11-01T00:00:00Z"))]);
        assert_eq!(after.since, Some(t("2026-11-01T00:00:00.000001Z")));
        let before = EventBounds::from_filters(&[col("time").lt_eq(ts("2026-11-01T00:00:00Z"))]);
        assert_eq!(before.until, Some(t("2026-11-01T00:00:00.000001Z")));
        let listed = EventBounds::from_filters(&[
            col("type").in_list(vec![lit("object.observed"), lit("object.deleted")], false)
        ]);
        assert_eq!(
            listed.possible_types(),
            Some(vec!["object.observed".into(), "object.deleted".into()])
        );
        let ored = EventBounds::from_filters(&[col("type")
            .eq(lit("object.observed"))
            .or(lit("object.deleted").eq(col("type")))]);
        assert_eq!(ored.types, listed.types);
        let both = EventBounds::from_filters(&[
            col("type").in_list(vec![lit("object.observed"), lit("object.deleted")], false),
            col("type").eq(lit("app.sync")),
        ]);
        assert_eq!(both.possible_types(), Some(vec![]));
        assert!(!EventBounds::understands(
            &col("type").in_list(vec![lit("object.observed")], true)
        ));
        assert!(!EventBounds::understands(
            &col("type").eq(lit("a")).or(col("cluster").eq(lit("b")))
        ));
        assert!(!EventBounds::understands(&col("data").eq(lit("x"))));
        let json = |path: &[&str]| {
            let mut args = vec![col("data")];
            args.extend(path.iter().map(|p| lit(*p)));
            datafusion_functions_json::udfs::json_get_str_udf().call(args)
        };
        let needled = EventBounds::from_filters(&[
            json(&["metadata", "name"]).eq(lit("web-1")),
            lit("Deployment").eq(json(&["kind"])),
            json(&["metadata", "namespace"]).eq(lit("with \"quote\"")),
            json(&["metadata", "labels", "app"]).eq(lit("caf\u{e9}")),
        ]);
        assert_eq!(
            needled.needles,
            vec![
                br#""name":"web-1""#.to_vec(),
                br#""kind":"Deployment""#.to_vec()
            ]
        );
        assert_eq!(needled.name.as_deref(), Some("web-1"));
        let nested = EventBounds::from_filters(&[
            json(&["spec", "metadata", "name"]).eq(lit("inner")),
            json(&["name"]).eq(lit("top")),
        ]);
        assert_eq!(nested.name, None, "only data.metadata.name is the object's");
        assert_eq!(
            EventBounds::from_filters(&[json(&["metadata", "name"]).eq(lit("caf\u{e9}"))]).name,
            Some("caf\u{e9}".into()),
            "a name with no needle still has a hash"
        );
        assert!(!EventBounds::understands(&json(&["kind"]).not_eq(lit("x"))));
        assert!(!EventBounds::understands(&col("cluster").not_eq(lit("x"))));
        assert!(EventBounds::understands(&col("time").between(
            ts("2026-11-01T00:00:00Z"),
            ts("2026-11-02T00:00:00Z")
        )));
    }
}
