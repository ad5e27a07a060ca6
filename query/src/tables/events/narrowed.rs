//! A sidecar scan that a hash join narrows while the query runs.
//!
//! Once a hash join has built its small side, it knows which keys the
//! other side can match, and DataFusion offers them to that side's scan
//! as a dynamic filter: `key IN (…)` (or `struct(k1, k2) IN (…)` for two
//! keys) and `key >= min AND key <= max`. "Uses of a revoked credential"
//! joins 40 revocations with every event on (cluster, credential); without
//! the filter the scan decoded four columns of all 10M events and the
//! join hashed two strings of each, to keep a few hundred.
//!
//! This scan takes those filters ([`ExecutionPlan::handle_child_pushdown_result`]),
//! starts reading only when it is first polled (a join polls its probe
//! side once the build side is done, so the filter is known by then), and
//! reads what the filter says of the envelope's text columns as the
//! store's [`Within`] bounds: a grouped chunk's runs of other clusters are
//! skipped unread, and the other columns are decoded only for rows whose
//! credential is one the join can match. A filter it does not understand
//! narrows nothing, and the join still tests every row it is given.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use annal_store::columns::{Within, COLUMNS, TEXT};
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, DynamicFilterPhysicalExpr, InListExpr, Literal,
};
use datafusion::physical_expr::ScalarFunctionExpr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;

use super::chunks::Part;
use super::floors::KeyFloors;

/// The sidecar scan's partitions, and the dynamic filters it was given.
pub(crate) struct ChunkScanExec {
    parts: Vec<Arc<Part>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    /// Filters whose current expression is read when a partition starts.
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// A join's floors per key ([`super::floors`]), read when a partition
    /// starts.
    floors: Option<KeyFloors>,
    metrics: ExecutionPlanMetricsSet,
}

impl ChunkScanExec {
    pub(super) fn new(schema: SchemaRef, parts: Vec<Arc<Part>>) -> ChunkScanExec {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(parts.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        ChunkScanExec {
            parts,
            schema,
            properties: Arc::new(properties),
            filters: Vec::new(),
            floors: None,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The same scan, also narrowed by a join's floors.
    pub(super) fn with_floors(&self, floors: KeyFloors) -> ChunkScanExec {
        ChunkScanExec {
            parts: self.parts.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
            filters: self.filters.clone(),
            floors: Some(floors),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl fmt::Debug for ChunkScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkScanExec")
            .field("parts", &self.parts.len())
            .field("filters", &self.filters.len())
            .finish_non_exhaustive()
    }
}

impl DisplayAs for ChunkScanExec {
    /// The filters before the projection, which ends the line: the
    /// estimate that wraps the scan follows it.
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ChunkScanExec: partitions={}", self.parts.len())?;
        if !self.filters.is_empty() {
            let filters: Vec<String> = self.filters.iter().map(|e| e.to_string()).collect();
            write!(f, ", narrowed_by=[{}]", filters.join(", "))?;
        }
        if let Some(floors) = &self.floors {
            write!(f, ", floored_by=[{}]", floors.describe())?;
        }
        let names: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(f, ", projection=[{}]", names.join(", "))
    }
}

impl ExecutionPlan for ChunkScanExec {
    fn name(&self) -> &str {
        "ChunkScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    /// The filters it holds: a join computes its dynamic filter only when
    /// it finds the filter in its probe side.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for e in &self.filters {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// Keeps the dynamic filters it is offered (after the other
    /// optimizations, when joins add theirs) and says it applies none
    /// exactly: whoever offered a filter still applies it.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let offered: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        let unapplied = vec![PushedDown::No; offered.len()];
        let dynamic: Vec<_> = offered.into_iter().filter(is_dynamic).collect();
        let result = FilterPushdownPropagation::with_parent_pushdown_result(unapplied);
        if phase != FilterPushdownPhase::Post || dynamic.is_empty() {
            return Ok(result);
        }
        let mut filters = self.filters.clone();
        filters.extend(dynamic);
        let narrowed = ChunkScanExec {
            parts: self.parts.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
            filters,
            floors: self.floors.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        };
        Ok(result.with_updated_node(Arc::new(narrowed)))
    }

    /// Forgets the filters and floors: a plan run again (a recursive
    /// query) gets new joins with new filters, and the old ones still hold
    /// the last run's keys.
    fn reset_state(self: Arc<Self>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(ChunkScanExec::new(
            self.schema.clone(),
            self.parts.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let part = self.parts.get(partition).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!("no partition {partition} in a chunk scan"))
        })?;
        let filters = self.filters.clone();
        let floors = self.floors.clone();
        let schema = self.schema.clone();
        let metrics = BaselineMetrics::new(&self.metrics, partition);
        // Started on the first poll, not here: by then a join has built
        // its side and set the filter (and noted its floors).
        let started = futures::stream::once(async move {
            let within = within(&filters, &schema);
            part.read(within, floors.and_then(|f| f.started()))
        })
        .flatten()
        .map(move |batch| {
            if let Ok(b) = &batch {
                metrics.record_output(b.num_rows());
            }
            batch
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            started,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// Whether `expr` is (or holds) a filter that changes while the query runs.
fn is_dynamic(expr: &Arc<dyn PhysicalExpr>) -> bool {
    expr.is::<DynamicFilterPhysicalExpr>() || expr.children().into_iter().any(is_dynamic)
}

/// What `filters`, as they are now, allow of the text columns of `schema`:
/// one [`Within`] per column they bound, the conjunction of all they say
/// of it.
pub(crate) fn within(filters: &[Arc<dyn PhysicalExpr>], schema: &Schema) -> Vec<Within> {
    let mut found = BTreeMap::new();
    for f in filters {
        conjuncts(f, schema, &mut found);
    }
    found.into_values().collect()
}

/// Adds to `found` what each conjunct of `expr` says of one text column:
/// `c IN (…)`, `struct(c1, c2) IN (…)` (each field's values, a looser
/// but still sound bound) and `c >= v`, `c <= v` (`>` and `<` as if
/// inclusive). Anything else, an `OR` included, adds nothing.
fn conjuncts(expr: &Arc<dyn PhysicalExpr>, schema: &Schema, found: &mut BTreeMap<String, Within>) {
    if let Some(d) = expr.downcast_ref::<DynamicFilterPhysicalExpr>() {
        if let Ok(now) = d.current() {
            conjuncts(&now, schema, found);
        }
    } else if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        let (column, value) = match (text_column(b.left(), schema), text_literal(b.right())) {
            (Some(c), Some(Some(v))) => (c, v),
            _ if *b.op() == Operator::And => {
                conjuncts(b.left(), schema, found);
                conjuncts(b.right(), schema, found);
                return;
            }
            _ => return,
        };
        let w = entry(found, column);
        match b.op() {
            Operator::GtEq | Operator::Gt => {
                w.min = Some(w.min.take().map_or(value.clone(), |m| m.max(value)));
            }
            Operator::LtEq | Operator::Lt => {
                w.max = Some(w.max.take().map_or(value.clone(), |m| m.min(value)));
            }
            Operator::Eq => allow(w, vec![value]),
            _ => {}
        }
    } else if let Some(list) = expr.downcast_ref::<InListExpr>() {
        if list.negated() {
            return;
        }
        // The columns compared, and which field of each listed value
        // holds each one's (`None`: the value itself).
        let columns: Vec<(Option<String>, Option<usize>)> = match text_column(list.expr(), schema) {
            Some(c) => vec![(Some(c), None)],
            None => match list.expr().downcast_ref::<ScalarFunctionExpr>() {
                Some(f) if f.name() == "struct" => f
                    .args()
                    .iter()
                    .enumerate()
                    .map(|(i, a)| (text_column(a, schema), Some(i)))
                    .collect(),
                _ => return,
            },
        };
        for (column, field) in columns {
            let Some(column) = column else { continue };
            let values: Option<Vec<Option<String>>> = list
                .list()
                .iter()
                .map(|l| {
                    let value = l.downcast_ref::<Literal>()?.value();
                    match (field, value) {
                        (None, v) => text(v),
                        (Some(i), ScalarValue::Struct(s)) if s.len() == 1 => {
                            text(&ScalarValue::try_from_array(s.columns().get(i)?, 0).ok()?)
                        }
                        _ => None,
                    }
                })
                .collect();
            // A null is equal to nothing: it allows no row.
            if let Some(values) = values {
                allow(entry(found, column), values.into_iter().flatten().collect());
            }
        }
    }
}

/// The [`Within`] of `column` in `found`, new if it bounds nothing yet.
fn entry(found: &mut BTreeMap<String, Within>, column: String) -> &mut Within {
    found.entry(column.clone()).or_insert(Within {
        column,
        values: None,
        min: None,
        max: None,
    })
}

/// Narrows `w` to the values in `values` (and in any set it had).
fn allow(w: &mut Within, mut values: Vec<String>) {
    values.sort_unstable();
    values.dedup();
    w.values = Some(match w.values.take() {
        Some(had) => values
            .into_iter()
            .filter(|v| had.binary_search(v).is_ok())
            .collect(),
        None => values,
    });
}

/// The sidecar text column `expr` reads, as is or cast to another text
/// type (which leaves every value as it was).
fn text_column(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<String> {
    let (_, name) = super::floors::text_column(expr, schema)?;
    COLUMNS[TEXT].contains(&name.as_str()).then_some(name)
}

/// A literal's text (see [`text`]).
fn text_literal(expr: &Arc<dyn PhysicalExpr>) -> Option<Option<String>> {
    text(expr.downcast_ref::<Literal>()?.value())
}

/// A text scalar's value: `Some(None)` for a null, `None` for anything
/// that is not text.
fn text(value: &ScalarValue) -> Option<Option<String>> {
    match value {
        ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s) => {
            Some(s.clone())
        }
        ScalarValue::Dictionary(_, v) => text(v),
        ScalarValue::Null => Some(None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
    use datafusion::physical_expr::expressions::{cast, col, in_list, lit};

    use super::*;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new(
                "time",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                false,
            ),
            Field::new("cluster", DataType::Utf8View, true),
            Field::new("credential", DataType::Utf8View, true),
        ])
    }

    fn text_lit(v: &str) -> Arc<dyn PhysicalExpr> {
        lit(ScalarValue::Utf8View(Some(v.into())))
    }

    fn binary(
        l: Arc<dyn PhysicalExpr>,
        op: Operator,
        r: Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(l, op, r))
    }

    fn bound(
        column: &str,
        values: Option<&[&str]>,
        min: Option<&str>,
        max: Option<&str>,
    ) -> Within {
        Within {
            column: column.into(),
            values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
            min: min.map(str::to_string),
            max: max.map(str::to_string),
        }
    }

    /// A join's filter, before and after its build side is known, and the
    /// shapes that must narrow nothing (an `OR`, a `NOT IN`, a column that
    /// is not text).
    #[test]
    fn a_joins_filter_becomes_sets_and_ranges_of_text_columns() {
        let s = schema();
        let cluster = col("cluster", &s).unwrap();
        let credential = col("credential", &s).unwrap();
        let listed = |negated: bool| {
            in_list(
                cluster.clone(),
                vec![text_lit("c2"), text_lit("c1"), text_lit("c2")],
                &negated,
                &s,
            )
            .unwrap()
        };
        let range = binary(
            binary(credential.clone(), Operator::GtEq, text_lit("fp1")),
            Operator::And,
            binary(
                cast(credential.clone(), &s, DataType::Utf8).unwrap(),
                Operator::LtEq,
                lit(ScalarValue::Utf8(Some("fp3".into()))),
            ),
        );
        let dynamic = Arc::new(DynamicFilterPhysicalExpr::new(
            vec![cluster.clone(), credential.clone()],
            lit(true),
        ));
        let filters = [dynamic.clone() as Arc<dyn PhysicalExpr>];
        assert_eq!(within(&filters, &s), vec![], "not built yet");
        assert!(is_dynamic(&filters[0]));
        dynamic
            .update(binary(listed(false), Operator::And, range.clone()))
            .unwrap();
        assert_eq!(
            within(&filters, &s),
            vec![
                bound("cluster", Some(&["c1", "c2"]), None, None),
                bound("credential", None, Some("fp1"), Some("fp3")),
            ]
        );
        // Two filters on one column: both hold.
        let narrower = in_list(cluster.clone(), vec![text_lit("c1")], &false, &s).unwrap();
        let both = [filters[0].clone(), narrower];
        assert_eq!(
            within(&both, &s)[0],
            bound("cluster", Some(&["c1"]), None, None)
        );
        let or = binary(listed(false), Operator::Or, range);
        assert_eq!(within(std::slice::from_ref(&or), &s), vec![]);
        assert!(!is_dynamic(&or));
        assert_eq!(within(&[listed(true)], &s), vec![]);
        let time = binary(
            col("time", &s).unwrap(),
            Operator::GtEq,
            lit(ScalarValue::TimestampMicrosecond(
                Some(1),
                Some("UTC".into()),
            )),
        );
        assert_eq!(within(&[time], &s), vec![]);
    }
}
