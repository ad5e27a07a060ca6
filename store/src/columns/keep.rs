//! Which rows a chunk read keeps: a scan's object name, cluster, type,
//! valid-time and text-prefix bounds, evaluated inside the Parquet reader
//! (a row filter), so that the other projected columns are decoded only
//! for the rows that pass.
//!
//! A scan of one cluster in a fleet of a hundred used to decode every
//! projected string of every row of a surviving chunk (chunks hold every
//! cluster) and let DataFusion drop 99% of them: the filter reads the
//! `cluster` column first, and the rest only where it matched. A name
//! bound goes before it: four bytes a row, and it keeps a handful.

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, BooleanArray, DictionaryArray, RecordBatch, StringArray, StringViewArray,
    TimestampMicrosecondArray, UInt32Array,
};
use arrow_schema::ArrowError;
use arrow_select::filter::{filter_record_batch, prep_null_mask_filter};
use parquet::arrow::arrow_reader::{ArrowPredicate, ArrowPredicateFn, RowFilter};
use parquet::arrow::ProjectionMask;
use parquet::schema::types::SchemaDescriptor;

use super::{COLUMNS, NAME_HASH, TEXT};

/// The rows of a chunk a scan can use. Each bound is a conjunct; `None`
/// keeps every row. Rows it drops are rows the scan's own filter would
/// drop (the caller applies that filter again, so keeping more is safe).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// `data.metadata.name = …` (by its hash, [`super::name`]).
    pub name: Option<String>,
    /// `cluster = …`.
    pub cluster: Option<String>,
    /// `type IN (…)` (one for `type = …`).
    pub types: Option<Vec<String>>,
    /// Valid time at or after, in microseconds since the epoch.
    pub since: Option<i64>,
    /// Valid time before, in microseconds since the epoch.
    pub until: Option<i64>,
    /// `column [NOT] LIKE 'prefix%'` on the envelope's text columns.
    pub prefixes: Vec<Prefix>,
    /// Sets and ranges of text values that a join's other side allows
    /// (learned while the query runs, see [`Within`]).
    pub within: Vec<Within>,
}

/// A text column's value is one of `values` (when given) and between
/// `min` and `max` inclusive (when given, compared byte by byte, as
/// Arrow and SQL compare text); a null is never within.
///
/// Why: a hash join knows, once it has built its small side, which keys
/// the big side can match ("uses of a revoked credential": 40 revocations
/// against every event). DataFusion hands that to the scan as a dynamic
/// filter; as a `Within` it is one test per distinct value of a chunk's
/// dictionary, and on `cluster` or `type` it selects a grouped file's runs
/// without reading the column, so the other columns are decoded only for
/// the rows the join can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Within {
    /// One of the text columns of [`COLUMNS`] (another name keeps no row).
    pub column: String,
    /// The values allowed, sorted and without duplicates.
    pub values: Option<Vec<String>>,
    /// The least value allowed.
    pub min: Option<String>,
    /// The greatest value allowed.
    pub max: Option<String>,
}

impl Within {
    /// Whether `value` is within.
    pub fn admits(&self, value: &str) -> bool {
        self.values
            .as_ref()
            .is_none_or(|v| v.binary_search_by(|x| x.as_str().cmp(value)).is_ok())
            && self.min.as_deref().is_none_or(|m| value >= m)
            && self.max.as_deref().is_none_or(|m| value <= m)
    }
}

/// A text column's value starts (or, negated, does not start) with
/// `prefix`: SQL's `column [NOT] LIKE 'prefix%'`. A null passes neither.
///
/// Why in the reader: `principal NOT LIKE 'system:%'` (an auditor's "what
/// did people, not controllers, do") keeps 2% of the bench fleet's rows,
/// and DataFusion tested it on every row's view, byte by byte (a fifth of
/// that query's time); on a chunk's dictionary it is one test per
/// distinct principal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// One of the text columns of [`COLUMNS`] (another name keeps no row).
    pub column: String,
    /// What the value starts with.
    pub prefix: String,
    /// `NOT LIKE`: the value does not start with it.
    pub negated: bool,
}

impl Keep {
    /// The reader's row filter: the most selective column first (a name
    /// is one object's; a cluster one of many; a type one of a dozen; a
    /// time bound that reaches into a chunk cuts it once).
    /// `answered`: what a grouped file's runs already selected (those
    /// bounds are not tested again).
    pub(crate) fn row_filter(
        &self,
        schema: &SchemaDescriptor,
        answered: Answered,
    ) -> Option<RowFilter> {
        let predicates: Vec<Box<dyn ArrowPredicate>> = self
            .tests(answered)
            .into_iter()
            .map(|(at, test)| -> Box<dyn ArrowPredicate> {
                let mask = ProjectionMask::roots(schema, [at]);
                Box::new(ArrowPredicateFn::new(mask, move |b| test(b.column(0))))
            })
            .collect();
        (!predicates.is_empty()).then(|| RowFilter::new(predicates))
    }

    /// Whether a [`Prefix`] tests the text column `name` (the reader then
    /// reads it as a dictionary: one test per distinct value).
    pub(crate) fn tests_text(&self, name: &str) -> bool {
        self.prefixes.iter().any(|p| p.column == name)
            || self.within.iter().any(|w| w.column == name)
    }

    // A grouped file's runs are selected by the next three, each tested
    // once per distinct value of the file's runs (see `file::Groups`): a
    // row's type, cluster and principal bounds are conjuncts, each on
    // one column.

    /// Whether the bounds on `type` keep `ty`.
    pub(crate) fn keeps_type(&self, ty: &str) -> bool {
        self.types
            .as_ref()
            .is_none_or(|k| k.iter().any(|t| t == ty))
            && self
                .within
                .iter()
                .all(|w| w.column != "type" || w.admits(ty))
    }

    /// Whether the bounds on `cluster` keep `cluster` (`None`: no cluster).
    pub(crate) fn keeps_cluster(&self, cluster: Option<&str>) -> bool {
        self.cluster.as_deref().is_none_or(|k| cluster == Some(k))
            && self
                .within
                .iter()
                .all(|w| w.column != "cluster" || cluster.is_some_and(|c| w.admits(c)))
    }

    /// Whether the bounds on `principal` keep `principal` (`None`: no
    /// principal).
    pub(crate) fn keeps_principal(&self, principal: Option<&str>) -> bool {
        self.within
            .iter()
            .all(|w| w.column != PRINCIPAL || principal.is_some_and(|p| w.admits(p)))
            && self.prefixes.iter().all(|x| {
                x.column != PRINCIPAL
                    || principal.is_some_and(|p| p.starts_with(&x.prefix) != x.negated)
            })
    }

    /// Whether it bounds `principal` (a file grouped by principal too
    /// answers that from its runs).
    pub(crate) fn bounds_principal(&self) -> bool {
        self.tests_text(PRINCIPAL)
    }

    /// The rows of `batch` (every sidecar column, in [`COLUMNS`] order)
    /// it keeps: the same tests as [`Keep::row_filter`], for rows built
    /// from the leaves, so that every read of the sidecar keeps exactly
    /// the same rows (the `events` table relies on it: its cluster and
    /// type filters are exact).
    pub(crate) fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
        let mut keep: Option<BooleanArray> = None;
        for (at, test) in self.tests(Answered::default()) {
            // A null (no value) is not kept.
            let hit = test(batch.column(at))?;
            let hit = match hit.nulls() {
                Some(_) => prep_null_mask_filter(&hit),
                None => hit,
            };
            keep = Some(match keep {
                Some(k) => BooleanArray::from(k.values() & hit.values()),
                None => hit,
            });
        }
        match keep {
            Some(k) => filter_record_batch(batch, &k),
            None => Ok(batch.clone()),
        }
    }

    /// Each bound as (column position, test of that column), without the
    /// ones `answered` says a file's runs answered; a null never passes.
    pub(crate) fn tests(&self, answered: Answered) -> Vec<(usize, Test)> {
        let Answered {
            groups: grouped,
            principal,
        } = answered;
        let mut tests: Vec<(usize, Test)> = Vec::new();
        if let Some(name) = &self.name {
            let hash = super::name::hash(name);
            tests.push((
                NAME_HASH,
                Box::new(move |a| {
                    Ok(BooleanArray::from_unary(column::<UInt32Array>(a)?, |h| {
                        h == hash
                    }))
                }),
            ));
        }
        if let Some(cluster) = self.cluster.clone().filter(|_| !grouped) {
            tests.push((position("cluster"), strings(move |v| v == cluster)));
        }
        for w in &self.within {
            if grouped && (w.column == "type" || w.column == "cluster")
                || principal && w.column == PRINCIPAL
            {
                continue;
            }
            let w = w.clone();
            match COLUMNS[TEXT].iter().position(|c| *c == w.column) {
                Some(at) => tests.push((TEXT.start + at, strings(move |v| w.admits(v)))),
                // Not a text column: nothing can match.
                _ => tests.push((position("type"), strings(|_| false))),
            }
        }
        for p in &self.prefixes {
            if principal && p.column == PRINCIPAL {
                continue;
            }
            let Prefix {
                column,
                prefix,
                negated,
            } = p.clone();
            match COLUMNS[TEXT].iter().position(|c| *c == column) {
                Some(at) => tests.push((
                    TEXT.start + at,
                    strings(move |v| v.starts_with(prefix.as_str()) != negated),
                )),
                // Not a text column: nothing can match.
                _ => tests.push((position("type"), strings(|_| false))),
            }
        }
        if let Some(types) = self.types.clone().filter(|_| !grouped) {
            tests.push((
                position("type"),
                strings(move |v| types.iter().any(|t| t == v)),
            ));
        }
        if self.since.is_some() || self.until.is_some() {
            let (since, until) = (self.since, self.until);
            tests.push((
                position("time"),
                Box::new(move |a| {
                    let times = column::<TimestampMicrosecondArray>(a)?;
                    Ok(BooleanArray::from_unary(times, |t| {
                        since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u)
                    }))
                }),
            ));
        }
        tests
    }
}

/// What a grouped file's runs answered of a read's bounds, which its row
/// filter then does not test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Answered {
    /// The `cluster` and `type` bounds (the runs' groups).
    pub(crate) groups: bool,
    /// The `principal` bounds (runs of one principal each).
    pub(crate) principal: bool,
}

/// The text column a file's runs may be grouped by, after type and cluster.
pub(crate) const PRINCIPAL: &str = "principal";

/// A test of one column's values.
pub(crate) type Test = Box<dyn Fn(&dyn Array) -> Result<BooleanArray, ArrowError> + Send + 'static>;

/// A test of a string column (plain, view or dictionary): null never
/// matches.
fn strings(matches: impl Fn(&str) -> bool + Send + 'static) -> Test {
    Box::new(move |a| {
        // Built a word at a time (an iterator of `Option<bool>` cost more
        // than the comparisons); a null stays null, which no filter keeps.
        // Read as a dictionary (see `file::decode`), each distinct value
        // is compared once and the rows looked up by key.
        if let Some(d) = a.as_any().downcast_ref::<DictionaryArray<Int32Type>>() {
            let values = d
                .values()
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| ArrowError::SchemaError("a dictionary of non-strings".into()))?;
            let hit: Vec<bool> = (0..values.len())
                .map(|i| values.is_valid(i) && matches(values.value(i)))
                .collect();
            return Ok(BooleanArray::from_unary(d.keys(), |k| {
                hit.get(k as usize).copied().unwrap_or(false)
            }));
        }
        if let Some(v) = a.as_any().downcast_ref::<StringViewArray>() {
            return Ok(BooleanArray::from_unary(v, &matches));
        }
        Ok(BooleanArray::from_unary(
            column::<StringArray>(a)?,
            &matches,
        ))
    })
}

fn position(name: &str) -> usize {
    COLUMNS.iter().position(|c| *c == name).unwrap_or(0)
}

/// `array` as `A`.
fn column<A: Array + 'static>(array: &dyn Array) -> Result<&A, ArrowError> {
    array
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| ArrowError::SchemaError("unexpected column type in a chunk".into()))
}
