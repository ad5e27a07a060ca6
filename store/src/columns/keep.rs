//! Which rows a chunk read keeps: a scan's object name, cluster, type and
//! valid-time bounds, evaluated inside the Parquet reader (a row filter),
//! so that the other projected columns are decoded only for the rows that
//! pass.
//!
//! A scan of one cluster in a fleet of a hundred used to decode every
//! projected string of every row of a surviving chunk (chunks hold every
//! cluster) and let DataFusion drop 99% of them: the filter reads the
//! `cluster` column first, and the rest only where it matched. A name
//! bound goes before it: four bytes a row, and it keeps a handful.

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, BooleanArray, DictionaryArray, RecordBatch, StringArray, TimestampMicrosecondArray,
    UInt32Array,
};
use arrow_schema::ArrowError;
use parquet::arrow::arrow_reader::{ArrowPredicate, ArrowPredicateFn, RowFilter};
use parquet::arrow::ProjectionMask;
use parquet::schema::types::SchemaDescriptor;

use super::{COLUMNS, NAME_HASH};

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
}

impl Keep {
    /// The reader's row filter: the most selective column first (a name
    /// is one object's; a cluster one of many; a type one of a dozen; a
    /// time bound that reaches into a chunk cuts it once).
    pub(crate) fn row_filter(&self, schema: &SchemaDescriptor) -> Option<RowFilter> {
        let mut predicates: Vec<Box<dyn ArrowPredicate>> = Vec::new();
        if let Some(name) = &self.name {
            let hash = super::name::hash(name);
            let mask = ProjectionMask::roots(schema, [NAME_HASH]);
            predicates.push(Box::new(ArrowPredicateFn::new(mask, move |b| {
                Ok(BooleanArray::from_unary(column::<UInt32Array>(&b)?, |h| {
                    h == hash
                }))
            })));
        }
        if let Some(cluster) = self.cluster.clone() {
            predicates.push(strings(schema, "cluster", move |v| v == cluster));
        }
        if let Some(types) = self.types.clone() {
            predicates.push(strings(schema, "type", move |v| {
                types.iter().any(|t| t == v)
            }));
        }
        if self.since.is_some() || self.until.is_some() {
            let (since, until) = (self.since, self.until);
            let mask = ProjectionMask::roots(schema, [position("time")]);
            predicates.push(Box::new(ArrowPredicateFn::new(mask, move |b| {
                let times = column::<TimestampMicrosecondArray>(&b)?;
                Ok(BooleanArray::from_unary(times, |t| {
                    since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u)
                }))
            })));
        }
        (!predicates.is_empty()).then(|| RowFilter::new(predicates))
    }
}

/// A predicate on the string column `name`: null never matches.
fn strings(
    schema: &SchemaDescriptor,
    name: &str,
    matches: impl Fn(&str) -> bool + Send + 'static,
) -> Box<dyn ArrowPredicate> {
    let mask = ProjectionMask::roots(schema, [position(name)]);
    Box::new(ArrowPredicateFn::new(mask, move |b| {
        // Built a word at a time (an iterator of `Option<bool>` cost more
        // than the comparisons); a null stays null, which no filter keeps.
        // Read as a dictionary (see `file::decode`), each distinct value
        // is compared once and the rows looked up by key.
        if let Some(d) = b
            .column(0)
            .as_any()
            .downcast_ref::<DictionaryArray<Int32Type>>()
        {
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
        Ok(BooleanArray::from_unary(
            column::<StringArray>(&b)?,
            &matches,
        ))
    }))
}

fn position(name: &str) -> usize {
    COLUMNS.iter().position(|c| *c == name).unwrap_or(0)
}

/// The only column of a predicate's batch, as `A`.
fn column<A: Array + 'static>(batch: &RecordBatch) -> Result<&A, ArrowError> {
    batch
        .column(0)
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| ArrowError::SchemaError("unexpected column type in a chunk".into()))
}
