//! A join's range condition, as a floor per key for the scan it probes.
//!
//! "Uses of a revoked credential" joins 40 revocations with the events on
//! (`cluster`, `credential`) and keeps `e.time > r.revoked_at`. The join's
//! dynamic filter narrows the `events` scan to the revoked credentials
//! ([`super::narrowed`]), but most of their uses came before their
//! revocation: at 10M the scan read 1.49M rows for the join to keep 1,445.
//! DataFusion's dynamic filter carries the keys, not the range.
//!
//! [`JoinFloors`] finds a hash join whose condition has a conjunct
//! `probe.time > build.t` (or `>=`, or `recorded_at`) and whose probe side
//! is the sidecar scan, wraps the build side in [`FloorsExec`], which
//! passes its rows through and notes each key's floor (the least `t` of
//! its rows), and gives the scan the floors ([`KeyFloors`]): a chunk whose
//! time range ends at or before a key's floor is read without that key,
//! one that ends before every floor is not opened, and the rows read start
//! at the least floor left.
//!
//! Sound by construction: a row left out has, for every build row with its
//! key, a time at or before that row's `t`, so the condition fails for
//! each; the join tests every row it is given as before. The rule applies
//! only where a probe row that matches nothing produces no output (inner,
//! left, left semi/anti/mark and right semi joins), the build side is
//! collected once (`CollectLeft`, one partition), and nulls match nothing.
//! Past [`MAX_KEYS`] keys, or if the build side did not end before the
//! scan starts, nothing is narrowed.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use annal_store::columns::{Within, COLUMNS, TEXT};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Schema, TimeUnit, TimestampMicrosecondType};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column};
use datafusion::physical_expr::{split_conjunction, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;

use super::narrowed::ChunkScanExec;
use crate::tables::estimated::Estimated;

/// Distinct keys a build side may have for its floors to be noted: a few
/// hundred bytes each, so at most about a megabyte per join.
pub(crate) const MAX_KEYS: usize = 4096;

/// The physical optimizer rule (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct JoinFloors;

impl PhysicalOptimizerRule for JoinFloors {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            Ok(match floored(&node)? {
                Some(join) => Transformed::yes(join),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "annal_join_floors"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `node` with its build side noting floors and its probe scan reading
/// them, if it is a join this applies to.
fn floored(node: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(join) = node.downcast_ref::<HashJoinExec>() else {
        return Ok(None);
    };
    let applies = *join.partition_mode() == PartitionMode::CollectLeft
        && join.null_equality() == NullEquality::NullEqualsNothing
        && join.left().output_partitioning().partition_count() == 1
        && matches!(
            join.join_type(),
            JoinType::Inner
                | JoinType::Left
                | JoinType::LeftSemi
                | JoinType::LeftAnti
                | JoinType::LeftMark
                | JoinType::RightSemi
        );
    let (build, probe) = (join.left().schema(), join.right().schema());
    let Some(range) = join
        .filter()
        .filter(|_| applies)
        .and_then(|f| range_of(f, &build, &probe))
    else {
        return Ok(None);
    };
    // The keys: each pair whose probe side is a text column of the scan
    // and whose build side is a text column.
    let mut keys = Vec::new();
    let mut columns = Vec::new();
    for (b, p) in join.on() {
        if let (Some((at, _)), Some((_, name))) = (text_column(b, &build), text_column(p, &probe)) {
            if COLUMNS[TEXT].contains(&name.as_str()) {
                keys.push(at);
                columns.push(name);
            }
        }
    }
    let floors = Arc::new(Floors::default());
    let scan = KeyFloors {
        floors: floors.clone(),
        columns,
        recorded: range.probe == "recorded_at",
        strict: range.strict,
        snapshot: Vec::new(),
    };
    let Some(right) = with_floors(join.right(), &scan)? else {
        return Ok(None);
    };
    let left = Arc::new(FloorsExec {
        input: join.left().clone(),
        keys,
        floor: range.build,
        floors,
    });
    node.clone()
        .replace_children(vec![left, right], recompute())
        .map(Some)
}

/// A conjunct `probe > build` (or `>=`, or written the other way) of the
/// join's condition, on a probe `time` or `recorded_at` and a build
/// timestamp of microseconds.
struct Range {
    probe: String,
    build: usize,
    strict: bool,
}

fn range_of(filter: &JoinFilter, build: &Schema, probe: &Schema) -> Option<Range> {
    let side = |e: &Arc<dyn PhysicalExpr>| {
        let c = e.downcast_ref::<Column>()?;
        let at = filter.column_indices().get(c.index())?;
        Some((at.side, at.index))
    };
    let micros = |t: &DataType| matches!(t, DataType::Timestamp(TimeUnit::Microsecond, _));
    split_conjunction(filter.expression())
        .into_iter()
        .find_map(|conjunct| {
            let b = conjunct.downcast_ref::<BinaryExpr>()?;
            // Oriented as probe (op) build.
            let (p, bu, op) = match (side(b.left())?, side(b.right())?) {
                ((JoinSide::Right, p), (JoinSide::Left, bu)) => (p, bu, *b.op()),
                ((JoinSide::Left, bu), (JoinSide::Right, p)) => (p, bu, b.op().swap()?),
                _ => return None,
            };
            let strict = match op {
                Operator::Gt => true,
                Operator::GtEq => false,
                _ => return None,
            };
            let (pf, bf) = (probe.fields().get(p)?, build.fields().get(bu)?);
            let named = pf.name() == "time" || pf.name() == "recorded_at";
            (named && micros(pf.data_type()) && micros(bf.data_type())).then(|| Range {
                probe: pf.name().clone(),
                build: bu,
                strict,
            })
        })
}

/// Children replaced: the plan's properties are worked out again.
fn recompute() -> ReplaceChildrenOptions {
    ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute)
}

/// The column of `schema` (position and name) that `expr` reads, as is or
/// cast to text (which leaves each value as it was), if that column is
/// text.
pub(super) fn text_column(
    expr: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Option<(usize, String)> {
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    if let Some(c) = expr.downcast_ref::<CastExpr>() {
        return text(c.cast_type())
            .then(|| text_column(c.expr(), schema))
            .flatten();
    }
    let c = expr.downcast_ref::<Column>()?;
    let f = schema.fields().get(c.index())?;
    (f.name() == c.name() && text(f.data_type())).then(|| (c.index(), f.name().clone()))
}

/// `plan` with the sidecar scan at its bottom reading `floors`, through
/// nodes that only drop or move rows and keep the scan's columns as they
/// are; `None` if there is no such scan.
fn with_floors(
    plan: &Arc<dyn ExecutionPlan>,
    floors: &KeyFloors,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(estimated) = plan.downcast_ref::<Estimated>() {
        return Ok(with_floors(estimated.inner(), floors)?.map(|s| estimated.rewrap(s)));
    }
    if let Some(scan) = plan.downcast_ref::<ChunkScanExec>() {
        return Ok(Some(Arc::new(scan.with_floors(floors.clone()))));
    }
    let keeps_rows = matches!(
        plan.name(),
        "RepartitionExec" | "CoalesceBatchesExec" | "CooperativeExec" | "FilterExec"
    );
    let [child] = plan.children()[..] else {
        return Ok(None);
    };
    if !keeps_rows || child.schema().fields() != plan.schema().fields() {
        return Ok(None);
    }
    match with_floors(child, floors)? {
        Some(c) => plan
            .clone()
            .replace_children(vec![c], recompute())
            .map(Some),
        None => Ok(None),
    }
}

/// Each key's floor, noted as the build side passes.
#[derive(Debug, Default)]
pub(crate) struct Floors {
    noted: Mutex<Noted>,
}

#[derive(Debug, Default)]
struct Noted {
    floors: HashMap<Vec<String>, i64>,
    /// More than [`MAX_KEYS`] keys: nothing is narrowed.
    overflow: bool,
    /// The build side ended.
    complete: bool,
}

impl Floors {
    /// Notes the rows of `batch`: `keys` its key columns, `floor` its
    /// floor column. A row with a null key or floor matches nothing.
    fn note(&self, batch: &RecordBatch, keys: &[usize], floor: usize) -> Result<()> {
        let Ok(mut noted) = self.noted.lock() else {
            return Ok(());
        };
        if noted.overflow {
            return Ok(());
        }
        let floors = cast(
            batch.column(floor),
            &DataType::Timestamp(TimeUnit::Microsecond, None),
        )?;
        let floors = floors.as_primitive::<TimestampMicrosecondType>();
        let keys = keys
            .iter()
            .map(|&k| cast(batch.column(k), &DataType::Utf8))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let keys: Vec<_> = keys.iter().map(|k| k.as_string::<i32>()).collect();
        for row in 0..batch.num_rows() {
            if floors.is_null(row) || keys.iter().any(|k| k.is_null(row)) {
                continue;
            }
            let key: Vec<String> = keys.iter().map(|k| k.value(row).to_string()).collect();
            let t = floors.value(row);
            let n = noted.floors.len();
            match noted.floors.get_mut(&key) {
                Some(f) => *f = (*f).min(t),
                None if n >= MAX_KEYS => {
                    noted.overflow = true;
                    noted.floors.clear();
                    return Ok(());
                }
                None => {
                    noted.floors.insert(key, t);
                }
            }
        }
        Ok(())
    }

    fn complete(&self) {
        if let Ok(mut noted) = self.noted.lock() {
            noted.complete = true;
        }
    }

    /// The floors, once the build side has ended (and kept them all).
    fn snapshot(&self) -> Option<Vec<(Vec<String>, i64)>> {
        let noted = self.noted.lock().ok()?;
        (noted.complete && !noted.overflow)
            .then(|| noted.floors.iter().map(|(k, f)| (k.clone(), *f)).collect())
    }
}

/// What the probe scan reads of a join's floors.
#[derive(Clone, Debug)]
pub(crate) struct KeyFloors {
    floors: Arc<Floors>,
    /// The scan's text column each key compares with.
    columns: Vec<String>,
    /// The floor bounds `recorded_at` (otherwise `time`).
    recorded: bool,
    /// `>` (otherwise `>=`).
    strict: bool,
    /// The floors as the scan started.
    snapshot: Vec<(Vec<String>, i64)>,
}

/// What a chunk (or the entries past the chunks) must still be read for.
#[derive(Debug, PartialEq)]
pub(crate) struct Narrowing {
    /// Values of each key column a row can still match with.
    pub(crate) within: Vec<Within>,
    /// Valid time at or after which a row can match.
    pub(crate) since: Option<i64>,
}

impl KeyFloors {
    /// The floors as they are now, if the build side has ended.
    pub(crate) fn started(&self) -> Option<KeyFloors> {
        let snapshot = self.floors.snapshot()?;
        Some(KeyFloors {
            snapshot,
            ..self.clone()
        })
    }

    /// What rows of a chunk with valid-time and recorded ranges `time`
    /// and `recorded` (`None`: not known, as for the entries past the
    /// chunks) can still match; `None` if none can.
    pub(crate) fn narrowing(
        &self,
        time: Option<(i64, i64)>,
        recorded: Option<(i64, i64)>,
    ) -> Option<Narrowing> {
        let range = if self.recorded { recorded } else { time };
        let reaches = |floor: i64| {
            range.is_none_or(|(_, hi)| match self.strict {
                true => hi > floor,
                false => hi >= floor,
            })
        };
        let mut values: Vec<Vec<String>> = vec![Vec::new(); self.columns.len()];
        let mut least: Option<i64> = None;
        for (key, floor) in self.snapshot.iter().filter(|(_, f)| reaches(*f)) {
            for (v, k) in values.iter_mut().zip(key) {
                v.push(k.clone());
            }
            least = Some(least.map_or(*floor, |l| l.min(*floor)));
        }
        let least = least?;
        let within = self
            .columns
            .iter()
            .zip(values)
            .map(|(column, mut values)| {
                values.sort_unstable();
                values.dedup();
                Within {
                    column: column.clone(),
                    values: Some(values),
                    min: None,
                    max: None,
                }
            })
            .collect();
        let since = (!self.recorded).then(|| match self.strict {
            true => least.saturating_add(1),
            false => least,
        });
        Some(Narrowing { within, since })
    }

    /// How `EXPLAIN` shows it.
    pub(crate) fn describe(&self) -> String {
        let column = if self.recorded { "recorded_at" } else { "time" };
        let op = if self.strict { ">" } else { ">=" };
        format!(
            "{column} {op} the join's floor per [{}]",
            self.columns.join(", ")
        )
    }
}

/// A join's build side, passed through while its floors are noted.
pub(crate) struct FloorsExec {
    input: Arc<dyn ExecutionPlan>,
    keys: Vec<usize>,
    floor: usize,
    floors: Arc<Floors>,
}

impl fmt::Debug for FloorsExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloorsExec")
            .field("keys", &self.keys)
            .field("floor", &self.floor)
            .finish_non_exhaustive()
    }
}

impl DisplayAs for FloorsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let schema = self.input.schema();
        let name = |i: &usize| schema.fields().get(*i).map_or("?", |f| f.name().as_str());
        let keys: Vec<&str> = self.keys.iter().map(name).collect();
        write!(
            f,
            "FloorsExec: floor={}, keys=[{}]",
            name(&self.floor),
            keys.join(", ")
        )
    }
}

impl ExecutionPlan for FloorsExec {
    fn name(&self) -> &str {
        "FloorsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children.pop().unwrap_or_else(|| self.input.clone());
        Ok(Arc::new(FloorsExec {
            input,
            keys: self.keys.clone(),
            floor: self.floor,
            floors: self.floors.clone(),
        }))
    }

    /// Notes afresh; the scan, reset too, no longer reads these floors.
    fn reset_state(self: Arc<Self>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(FloorsExec {
            input: self.input.clone().reset_state()?,
            keys: self.keys.clone(),
            floor: self.floor,
            floors: Arc::new(Floors::default()),
        }))
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let (floors, ended) = (self.floors.clone(), self.floors.clone());
        let (keys, floor) = (self.keys.clone(), self.floor);
        let noted = input.map(move |batch| {
            let batch = batch?;
            floors.note(&batch, &keys, floor)?;
            Ok(batch)
        });
        // After the last batch (not after an error: that ends the query).
        let end = futures::stream::once(async move {
            ended.complete();
            None
        })
        .filter_map(|b: Option<Result<RecordBatch>>| async move { b });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.input.schema(),
            noted.chain(end),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floors(strict: bool, recorded: bool, keys: &[(&str, &str, i64)]) -> KeyFloors {
        KeyFloors {
            floors: Arc::default(),
            columns: vec!["cluster".into(), "credential".into()],
            recorded,
            strict,
            snapshot: keys
                .iter()
                .map(|(c, k, f)| (vec![c.to_string(), k.to_string()], *f))
                .collect(),
        }
    }

    fn within(column: &str, values: &[&str]) -> Within {
        Within {
            column: column.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
            min: None,
            max: None,
        }
    }

    /// A chunk keeps the keys whose floor it reaches past, and its rows
    /// start after the least of them; with no range, every key.
    #[test]
    fn a_chunk_is_read_for_the_keys_whose_floor_it_reaches() {
        let f = floors(
            true,
            false,
            &[("c1", "k1", 100), ("c2", "k2", 200), ("c1", "k3", 300)],
        );
        assert_eq!(
            f.narrowing(Some((0, 100)), None),
            None,
            "ends at the first floor"
        );
        assert_eq!(
            f.narrowing(Some((0, 101)), None),
            Some(Narrowing {
                within: vec![within("cluster", &["c1"]), within("credential", &["k1"])],
                since: Some(101),
            })
        );
        assert_eq!(
            f.narrowing(Some((150, 250)), Some((0, 0))),
            Some(Narrowing {
                within: vec![
                    within("cluster", &["c1", "c2"]),
                    within("credential", &["k1", "k2"])
                ],
                since: Some(101),
            })
        );
        let all = f.narrowing(None, None).unwrap();
        assert_eq!(all.within[1], within("credential", &["k1", "k2", "k3"]));
        // `>=`: a chunk ending at the floor may hold a row at it.
        let f = floors(false, false, &[("c1", "k1", 100)]);
        assert_eq!(f.narrowing(Some((0, 100)), None).unwrap().since, Some(100));
        assert_eq!(f.narrowing(Some((0, 99)), None), None);
        // On `recorded_at`: the recorded range decides, no time bound.
        let f = floors(true, true, &[("c1", "k1", 100)]);
        assert_eq!(f.narrowing(Some((0, 1000)), Some((0, 100))), None);
        assert_eq!(
            f.narrowing(Some((0, 0)), Some((0, 101))).unwrap().since,
            None
        );
        // No floors (an empty build side): nothing can match.
        assert_eq!(floors(true, false, &[]).narrowing(None, None), None);
    }

    /// Floors are the least per key, null keys and floors are not noted,
    /// and none are given before the build side ends or past MAX_KEYS.
    #[test]
    fn floors_are_the_least_per_key_and_only_once_complete() {
        use datafusion::arrow::array::{StringArray, TimestampMicrosecondArray};
        use datafusion::arrow::datatypes::Field;
        let schema = Arc::new(Schema::new(vec![
            Field::new("c", DataType::Utf8, true),
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ]));
        let batch = |c: Vec<Option<&str>>, t: Vec<Option<i64>>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(c)),
                    Arc::new(TimestampMicrosecondArray::from(t).with_timezone("UTC")),
                ],
            )
            .unwrap()
        };
        let f = Floors::default();
        f.note(
            &batch(
                vec![Some("a"), Some("a"), None, Some("b"), Some("c")],
                vec![Some(5), Some(3), Some(1), None, Some(9)],
            ),
            &[0],
            1,
        )
        .unwrap();
        assert_eq!(f.snapshot(), None, "not complete");
        f.complete();
        let mut got = f.snapshot().unwrap();
        got.sort();
        assert_eq!(got, vec![(vec!["a".into()], 3), (vec!["c".into()], 9)]);
        let many: Vec<String> = (0..=MAX_KEYS).map(|i| i.to_string()).collect();
        let f = Floors::default();
        f.note(
            &batch(
                many.iter().map(|s| Some(s.as_str())).collect(),
                vec![Some(1); many.len()],
            ),
            &[0],
            1,
        )
        .unwrap();
        f.complete();
        assert_eq!(f.snapshot(), None, "too many keys");
    }
}
