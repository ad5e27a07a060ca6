//! `count` as DataFusion's, with a grouped `count(DISTINCT s)` of strings
//! that neither copies its input nor grows its sets a doubling at a time.
//!
//! DataFusion 55 has no grouped accumulator for a distinct count of
//! strings: its adapter sorts each batch's rows by group, copies them per
//! group (`take`), and feeds one set per group that starts at 128 entries
//! and rehashes as it grows. Objects changed on a day, counted per cluster
//! (one cluster to a batch, a few thousand names each), spent a third of
//! its time there at 10M events, a quarter of it rehashing. Here every
//! row goes straight into its group's set, and a set is sized, when its
//! group first appears, for the run of rows of that group that starts
//! there. A string of up to 12 bytes (an object's name, mostly) is held
//! as the 16-byte view Arrow gives it inline, hashed and compared as one
//! integer, with no arena to copy it into (a tenth of the query's time at
//! 10M). Every other use of `count` is DataFusion's own, unchanged.

use std::hash::BuildHasher;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray, StringArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, filter};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{internal_err, Result, ScalarValue};
use datafusion::logical_expr::expr::{
    AggregateFunction, AggregateFunctionParams, WindowFunctionParams,
};
use datafusion::logical_expr::function::{
    AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs,
};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, Expr, GroupsAccumulator,
    Operator, ReversedUDAF, SetMonotonicity, Signature, StatisticsArgs,
};
use hashbrown::hash_table::{Entry, HashTable};

/// The function, to register over DataFusion's `count`.
pub(crate) fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(Count {
        inner: datafusion::functions_aggregate::count::count_udaf(),
    })
}

/// DataFusion's `count`, with [`DistinctStrings`] for a grouped distinct
/// count of one string argument.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Count {
    inner: Arc<AggregateUDF>,
}

/// Whether `args` are a distinct count of one string column.
fn distinct_strings(args: &AccumulatorArgs) -> bool {
    args.is_distinct
        && args.expr_fields.len() == 1
        && matches!(
            args.expr_fields[0].data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
}

#[warn(clippy::missing_trait_methods)] // Delegates: every method forwards.
impl AggregateUDFImpl for Count {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().schema_name(params)
    }

    fn human_display(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().human_display(params)
    }

    fn window_function_schema_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.inner().window_function_schema_name(params)
    }

    fn display_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().display_name(params)
    }

    fn window_function_display_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.inner().window_function_display_name(params)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        self.inner.return_field(arg_fields)
    }

    fn is_nullable(&self) -> bool {
        self.inner.is_nullable()
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(acc_args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        distinct_strings(&args) || self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        if distinct_strings(&args) {
            let input = args.expr_fields[0].data_type().clone();
            return Ok(Box::new(DistinctStrings::new(input)));
        }
        self.inner.create_groups_accumulator(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.create_sliding_accumulator(args)
    }

    fn with_beneficial_ordering(
        self: Arc<Self>,
        beneficial_ordering: bool,
    ) -> Result<Option<Arc<dyn AggregateUDFImpl>>> {
        Arc::clone(self.inner.inner()).with_beneficial_ordering(beneficial_ordering)
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.order_sensitivity()
    }

    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        self.inner.simplify()
    }

    fn simplify_expr_op_literal(
        &self,
        agg_function: &AggregateFunction,
        arg: &Expr,
        op: Operator,
        lit: &Expr,
        arg_is_left: bool,
    ) -> Result<Option<Expr>> {
        self.inner
            .simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        self.inner.reverse_udf()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn is_descending(&self) -> Option<bool> {
        self.inner.is_descending()
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs) -> Option<ScalarValue> {
        self.inner.value_from_stats(statistics_args)
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.default_value(data_type)
    }

    fn supports_null_handling_clause(&self) -> bool {
        self.inner.supports_null_handling_clause()
    }

    fn supports_within_group_clause(&self) -> bool {
        self.inner.supports_within_group_clause()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.inner().set_monotonicity(data_type)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// One string of a row, as a set holds it.
#[derive(Clone, Copy)]
enum Key<'a> {
    /// Up to 12 bytes: Arrow's inline view of it (length, then the bytes,
    /// zero-padded), compared and hashed as one integer.
    Short(u128),
    Long(&'a str),
}

/// The longest string a view holds inline.
const INLINE: usize = 12;

/// `s` as a [`Key`]: a string of up to [`INLINE`] bytes is always
/// [`Key::Short`], whichever array it came from, so that equal strings
/// meet in the same table.
fn key_of(s: &str) -> Key<'_> {
    if s.len() > INLINE {
        return Key::Long(s);
    }
    let mut view = [0u8; 16];
    view[..4].copy_from_slice(&(s.len() as u32).to_le_bytes());
    view[4..4 + s.len()].copy_from_slice(s.as_bytes());
    Key::Short(u128::from_le_bytes(view))
}

/// The string of a short key.
fn short_text(view: &u128) -> String {
    // The bytes of a string cut at its length: valid UTF-8 (nothing is
    // replaced).
    let bytes = view.to_le_bytes();
    let len = (*view as u32 as usize).min(INLINE);
    String::from_utf8_lossy(&bytes[4..4 + len]).into_owned()
}

/// The distinct strings of one group: those of up to 12 bytes as their
/// inline views (one compare each, no arena: names of objects mostly are
/// that short), the longer ones with their hashes and text in one arena,
/// a table holding their positions.
#[derive(Default)]
struct Set {
    short: HashTable<u128>,
    table: HashTable<usize>,
    hashes: Vec<u64>,
    /// Where each long string ends in `text` (it starts where the one
    /// before it ends).
    ends: Vec<usize>,
    text: String,
}

/// String `i` of an arena: `text` cut where `ends` say.
fn nth<'a>(text: &'a str, ends: &[usize], i: usize) -> &'a str {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

impl Set {
    /// Every string, short ones first.
    fn values(&self) -> impl Iterator<Item = String> + '_ {
        let long = (0..self.ends.len()).map(|i| nth(&self.text, &self.ends, i).to_string());
        self.short.iter().map(short_text).chain(long)
    }

    fn len(&self) -> usize {
        self.short.len() + self.ends.len()
    }

    /// Room for `short` more short strings and `long` long ones of about
    /// `bytes` bytes in all.
    fn reserve(&mut self, short: usize, long: usize, bytes: usize, hasher: &Hasher) {
        self.short.reserve(short, |v| hasher.hash_one(v));
        let hashes = &self.hashes;
        self.table.reserve(long, |&i| hashes[i]);
        self.hashes.reserve(long);
        self.ends.reserve(long);
        self.text.reserve(bytes);
    }

    fn insert(&mut self, key: Key<'_>, hasher: &Hasher) {
        match key {
            Key::Short(view) => {
                let hash = hasher.hash_one(view);
                if let Entry::Vacant(v) =
                    self.short
                        .entry(hash, |&w| w == view, |w| hasher.hash_one(w))
                {
                    v.insert(view);
                }
            }
            Key::Long(s) => self.insert_long(s, hasher.hash_one(s)),
        }
    }

    fn insert_long(&mut self, s: &str, hash: u64) {
        let Set {
            table,
            hashes,
            ends,
            text,
            ..
        } = self;
        let entry = table.entry(
            hash,
            |&i| hashes[i] == hash && nth(text, ends, i) == s,
            |&i| hashes[i],
        );
        if let Entry::Vacant(v) = entry {
            v.insert(ends.len());
            hashes.push(hash);
            text.push_str(s);
            ends.push(text.len());
        }
    }

    fn size(&self) -> usize {
        self.short.capacity() * size_of::<u128>()
            + self.table.capacity() * size_of::<usize>()
            + self.hashes.capacity() * size_of::<u64>()
            + self.ends.capacity() * size_of::<usize>()
            + self.text.capacity()
    }
}

type Hasher = foldhash::fast::FixedState;

/// A grouped `count(DISTINCT s)` for one column of strings (see the
/// module doc); its state is DataFusion's: each group's distinct values
/// as a list of the input's type.
struct DistinctStrings {
    input: DataType,
    sets: Vec<Set>,
    hasher: Hasher,
}

impl DistinctStrings {
    fn new(input: DataType) -> DistinctStrings {
        DistinctStrings {
            input,
            sets: Vec::new(),
            hasher: Hasher::default(),
        }
    }

    /// Adds the key of each row `keep` keeps (by row) and `key` gives
    /// (`None`: null) to the set of its row's group in `groups`.
    fn add<'a>(
        &mut self,
        key: impl Fn(usize) -> Option<Key<'a>>,
        groups: &[usize],
        keep: impl Fn(usize) -> bool,
    ) {
        for (i, &g) in groups.iter().enumerate() {
            if !keep(i) {
                continue;
            }
            let Some(k) = key(i) else { continue };
            let set = &mut self.sets[g];
            if set.len() == 0 && set.short.capacity() == 0 && set.table.capacity() == 0 {
                // First seen here: sized for the rows of its run.
                let run = groups[i..].iter().take_while(|&&h| h == g).count();
                let (mut short, mut long, mut bytes) = (0, 0, 0);
                for j in i..i + run {
                    match key(j) {
                        Some(Key::Short(_)) => short += 1,
                        Some(Key::Long(s)) => (long, bytes) = (long + 1, bytes + s.len()),
                        None => {}
                    }
                }
                set.reserve(short, long, bytes, &self.hasher);
            }
            set.insert(k, &self.hasher);
        }
    }

    /// Adds every string of a batch of `values` to the sets of `groups`.
    fn add_array(
        &mut self,
        values: &ArrayRef,
        groups: &[usize],
        keep: impl Fn(usize) -> bool,
    ) -> Result<()> {
        match values.data_type() {
            DataType::Utf8 => {
                let values = values.as_string::<i32>();
                self.add(
                    |i| values.is_valid(i).then(|| key_of(values.value(i))),
                    groups,
                    keep,
                )
            }
            DataType::LargeUtf8 => {
                let values = values.as_string::<i64>();
                self.add(
                    |i| values.is_valid(i).then(|| key_of(values.value(i))),
                    groups,
                    keep,
                )
            }
            DataType::Utf8View => {
                // A short string's key is its view as it is (the bytes
                // past its length masked, should a writer have left any).
                let values = values.as_string_view();
                let views = values.views();
                let key = |i: usize| {
                    if values.is_null(i) {
                        return None;
                    }
                    let view = views[i];
                    let len = view as u32 as usize;
                    if len > INLINE {
                        return Some(Key::Long(values.value(i)));
                    }
                    let kept_bits = 32 + 8 * len;
                    let mask = if kept_bits >= 128 {
                        u128::MAX
                    } else {
                        (1u128 << kept_bits) - 1
                    };
                    Some(Key::Short(view & mask))
                };
                self.add(key, groups, keep)
            }
            other => return internal_err!("count(DISTINCT) of strings given {other}"),
        }
        Ok(())
    }
}

/// Whether row `i` passes an aggregate's `FILTER` (a null drops it).
fn passes(filter: Option<&BooleanArray>, i: usize) -> bool {
    filter.is_none_or(|f| f.is_valid(i) && f.value(i))
}

impl GroupsAccumulator for DistinctStrings {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let [values] = values else {
            return internal_err!("count(DISTINCT) of strings given {} columns", values.len());
        };
        self.sets.resize_with(total_num_groups, Set::default);
        self.add_array(values, group_indices, |i| passes(opt_filter, i))
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sets = emit_to.take_needed(&mut self.sets);
        Ok(Arc::new(Int64Array::from_iter_values(
            sets.iter().map(|s| s.len() as i64),
        )))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sets = emit_to.take_needed(&mut self.sets);
        let values: StringArray = sets.iter().flat_map(Set::values).map(Some).collect();
        let values = cast(&values, &self.input)?;
        let offsets = OffsetBuffer::from_lengths(sets.iter().map(Set::len));
        let item = Arc::new(Field::new_list_field(self.input.clone(), true));
        Ok(vec![Arc::new(ListArray::try_new(
            item, offsets, values, None,
        )?)])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        let [lists] = values else {
            return internal_err!("count(DISTINCT) of strings merged {} columns", values.len());
        };
        self.sets.resize_with(total_num_groups, Set::default);
        let lists = lists.as_list::<i32>();
        // Each row is one group's list: its strings, all for that group.
        let offsets = lists.offsets();
        let mut groups = Vec::with_capacity(lists.values().len());
        for (row, &g) in group_indices.iter().enumerate() {
            let n = (offsets[row + 1] - offsets[row]) as usize;
            groups.extend(std::iter::repeat_n(g, n));
        }
        let start = offsets.first().copied().unwrap_or(0) as usize;
        let values = lists.values().slice(start, groups.len());
        self.add_array(&values, &groups, |_| true)
    }

    /// Each row as the state of a group of its own: a list of its string,
    /// or an empty list for a null or a row the filter drops.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let [values] = values else {
            return internal_err!("count(DISTINCT) of strings given {} columns", values.len());
        };
        let kept: BooleanArray = (0..values.len())
            .map(|i| Some(values.is_valid(i) && passes(opt_filter, i)))
            .collect();
        let offsets = OffsetBuffer::from_lengths(kept.values().iter().map(usize::from));
        let strings = filter(values, &kept)?;
        let item = Arc::new(Field::new_list_field(self.input.clone(), true));
        Ok(vec![Arc::new(ListArray::try_new(
            item, offsets, strings, None,
        )?)])
    }

    fn size(&self) -> usize {
        self.sets.capacity() * size_of::<Set>() + self.sets.iter().map(Set::size).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use datafusion::arrow::array::{LargeStringArray, StringViewArray, UInt32Array};
    use proptest::prelude::*;

    use super::*;

    /// Rows as (group, string or null, kept by the filter).
    type Rows = Vec<(usize, Option<String>, bool)>;

    fn column(input: &DataType, rows: &[(usize, Option<String>, bool)]) -> ArrayRef {
        let strings = rows.iter().map(|(_, s, _)| s.as_deref());
        match input {
            DataType::LargeUtf8 => Arc::new(strings.collect::<LargeStringArray>()),
            DataType::Utf8View => Arc::new(strings.collect::<StringViewArray>()),
            _ => Arc::new(strings.collect::<StringArray>()),
        }
    }

    /// The reference: distinct non-null strings kept, per group.
    fn model(batches: &[Rows], groups: usize) -> Vec<i64> {
        let mut seen: BTreeMap<usize, BTreeSet<&str>> = BTreeMap::new();
        for (g, s, keep) in batches.iter().flatten() {
            if let (true, Some(s)) = (keep, s) {
                seen.entry(*g).or_default().insert(s);
            }
        }
        (0..groups)
            .map(|g| seen.get(&g).map_or(0, |s| s.len() as i64))
            .collect()
    }

    fn update(acc: &mut DistinctStrings, input: &DataType, rows: &Rows, groups: usize) {
        let groups_of: Vec<usize> = rows.iter().map(|r| r.0).collect();
        let filter: BooleanArray = rows.iter().map(|r| Some(r.2)).collect();
        acc.update_batch(&[column(input, rows)], &groups_of, Some(&filter), groups)
            .unwrap();
    }

    fn counts(a: ArrayRef) -> Vec<i64> {
        a.as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .values()
            .to_vec()
    }

    fn rows() -> impl Strategy<Value = Rows> {
        // Runs of one group, as a scan by cluster gives, and groups mixed.
        proptest::collection::vec(
            (
                0usize..5,
                // Short strings and long ones (past the 12 bytes a view
                // holds inline), on both sides of the turn.
                proptest::option::weighted(0.9, "[a-c]{0,3}|[a-c]{10,15}"),
                proptest::bool::weighted(0.9),
                1usize..6,
            ),
            0..40,
        )
        .prop_map(|runs| {
            runs.into_iter()
                .flat_map(|(g, s, keep, n)| std::iter::repeat_n((g, s, keep), n))
                .collect()
        })
    }

    proptest! {
        /// Counts per group equal the model's, whatever the input's string
        /// type, the batches, the filter and nulls; and so do the counts
        /// of sets sent as state to another accumulator and merged there
        /// (as a two-phase aggregation does), emitted all at once or the
        /// first groups first.
        #[test]
        fn counts_equal_a_set_per_group(
            batches in proptest::collection::vec(rows(), 1..4),
            type_no in 0usize..3,
            first in 0usize..6,
        ) {
            const GROUPS: usize = 5;
            let input = [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View][type_no].clone();
            let want = model(&batches, GROUPS);
            let mut direct = DistinctStrings::new(input.clone());
            let mut partial = DistinctStrings::new(input.clone());
            for rows in &batches {
                update(&mut direct, &input, rows, GROUPS);
                update(&mut partial, &input, rows, GROUPS);
            }
            prop_assert_eq!(counts(direct.evaluate(EmitTo::All).unwrap()), want.clone());

            let mut merged = DistinctStrings::new(input.clone());
            let first = first.min(GROUPS);
            let head = partial.state(EmitTo::First(first)).unwrap();
            let tail = partial.state(EmitTo::All).unwrap();
            let head_groups: Vec<usize> = (0..first).collect();
            let tail_groups: Vec<usize> = (first..GROUPS).collect();
            merged.merge_batch(&head, &head_groups, GROUPS).unwrap();
            // A second merge of the same sets adds nothing new.
            merged.merge_batch(&head, &head_groups, GROUPS).unwrap();
            merged.merge_batch(&tail, &tail_groups, GROUPS).unwrap();
            prop_assert_eq!(counts(merged.evaluate(EmitTo::All).unwrap()), want.clone());

            // Rows turned into states one by one, then merged.
            let mut converted = DistinctStrings::new(input.clone());
            for rows in &batches {
                let groups_of: Vec<usize> = rows.iter().map(|r| r.0).collect();
                let filter: BooleanArray = rows.iter().map(|r| Some(r.2)).collect();
                let state = converted
                    .convert_to_state(&[column(&input, rows)], Some(&filter))
                    .unwrap();
                converted.merge_batch(&state, &groups_of, GROUPS).unwrap();
            }
            prop_assert_eq!(counts(converted.evaluate(EmitTo::All).unwrap()), want);
        }
    }

    /// Through SQL, on a table of several partitions (so that the plan
    /// aggregates in two phases as well as in one), the answers equal
    /// DataFusion's own `count`.
    #[test]
    fn sql_answers_equal_datafusions_count() {
        use datafusion::arrow::array::{RecordBatch, UInt64Array};
        use datafusion::arrow::datatypes::Schema;
        use datafusion::datasource::MemTable;
        use datafusion::prelude::{SessionConfig, SessionContext};

        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::UInt64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("k", DataType::Boolean, false),
        ]));
        let partitions: Vec<Vec<RecordBatch>> = (0..4u64)
            .map(|p| {
                let n = 500 + p * 37;
                let g: UInt64Array = (0..n).map(|i| (i * 7 + p) % 13).collect();
                let s: StringArray = (0..n)
                    .map(|i| (i % 11 != 0).then(|| format!("name-{}", (i * 31 + p) % 97)))
                    .collect();
                let k: BooleanArray = (0..n).map(|i| Some(i % 3 != 0)).collect();
                let columns: Vec<ArrayRef> = vec![Arc::new(g), Arc::new(s), Arc::new(k)];
                vec![RecordBatch::try_new(schema.clone(), columns).unwrap()]
            })
            .collect();
        let sql = "SELECT g, count(DISTINCT s) AS d, count(DISTINCT s) FILTER (WHERE k) AS f, \
                   count(*) AS n FROM t GROUP BY g ORDER BY g";
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let answer = |ours: bool, partitions_wanted: usize| {
            let config = SessionConfig::new().with_target_partitions(partitions_wanted);
            let ctx = SessionContext::new_with_config(config);
            if ours {
                ctx.register_udaf(udaf());
            }
            let table = MemTable::try_new(schema.clone(), partitions.clone()).unwrap();
            ctx.register_table("t", Arc::new(table)).unwrap();
            let batches = rt
                .block_on(async { ctx.sql(sql).await?.collect().await })
                .unwrap();
            datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                .unwrap()
                .to_string()
        };
        for wanted in [1, 4] {
            assert_eq!(answer(true, wanted), answer(false, wanted));
        }
        assert!(answer(true, 1).contains("| 12 |"), "{}", answer(true, 1));
    }

    /// A column of another type is an error, not a wrong count.
    #[test]
    fn a_column_not_of_strings_is_an_error() {
        let mut acc = DistinctStrings::new(DataType::Utf8);
        let values: ArrayRef = Arc::new(UInt32Array::from(vec![1, 2]));
        assert!(acc.update_batch(&[values], &[0, 0], None, 1).is_err());
    }
}
