//! Arrow columns for object rows, shared by `inventory_at` and `objects`.

use std::sync::Arc;

use annal_schemas::ownership::{self, Ownership};
use annal_store::versions::{ObjectRef, VersionDetails, VersionRow};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, BooleanBuilder, ListBuilder, RecordBatch, RecordBatchOptions,
    StringBuilder, StringViewBuilder, TimestampMicrosecondArray, TimestampMicrosecondBuilder,
    UInt64Array, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::{DataFusionError, Result};

/// The kind of row a table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `inventory_at`: live objects, with inventory claims and managers.
    Live,
    /// `objects`: every version, with its interval and deletions.
    Versions,
}

/// The text columns every shape starts with, in order (one builder each).
const TEXT: [&str; 8] = [
    "cluster",
    "group",
    "version",
    "kind",
    "namespace",
    "name",
    "uid",
    "resource_version",
];

/// The columns of `shape`, in order.
pub fn schema(shape: Shape) -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    // Strings are views (as the `events` table's): a scan takes a
    // cluster's names by object id as 16-byte views sharing the names'
    // buffers instead of copying each string, and `cluster`, the same for
    // a whole batch, is one view repeated (copying them was a sixth of
    // objects-changed-on-day at 10M).
    let text = |name: &str| Field::new(name, DataType::Utf8View, false);
    let maybe = |name: &str| Field::new(name, DataType::Utf8View, true);
    let list = |name: &str| {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        )
    };
    let mut fields: Vec<Field> = TEXT.iter().map(|n| text(n)).collect();
    if shape == Shape::Versions {
        fields.push(Field::new("deleted", DataType::Boolean, false));
    }
    fields.extend([
        maybe("owner"),
        maybe("owner_kind"),
        list("claims"),
        Field::new("conflict", DataType::Boolean, false),
        maybe("tracking_mismatch"),
        list("managers"),
        Field::new("valid_from", ts(), false),
    ]);
    if shape == Shape::Versions {
        fields.push(Field::new("valid_to", ts(), true));
    }
    fields.push(Field::new("index", DataType::UInt64, false));
    Arc::new(Schema::new(fields))
}

/// The `projected` columns of `rows` of `cluster` when every one of them
/// is given by the rows alone (`cluster`, `deleted`, `valid_from`,
/// `valid_to` as `valid_to` says, `index`), or is `name` and `name` holds
/// it: built a column at a time. Why: a count of a day's versions pushes
/// no name and no detail, and pushing its rows one at a time through a
/// [`Batch`] (every builder asked for every row) was a seventh of that
/// scan's time at 10M.
pub fn of_rows(
    cluster: &str,
    rows: &[&VersionRow],
    valid_to: impl Fn(&VersionRow) -> Option<i64>,
    name: Option<ArrayRef>,
    projected: &SchemaRef,
) -> Result<RecordBatch> {
    let n = rows.len();
    let arrays = projected
        .fields()
        .iter()
        .map(|f| -> Result<ArrayRef> {
            Ok(match (f.name().as_str(), &name) {
                ("cluster", _) => {
                    // One view repeated, its bytes (past a view's 12)
                    // stored once.
                    let mut column = StringViewBuilder::with_capacity(n);
                    column.try_append_value_n(cluster, n)?;
                    Arc::new(column.finish())
                }
                ("deleted", _) => Arc::new(BooleanArray::from_iter(
                    rows.iter().map(|r| Some(r.deleted())),
                )),
                ("valid_from", _) => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.from))
                        .with_timezone("UTC"),
                ),
                ("valid_to", _) => Arc::new(
                    TimestampMicrosecondArray::from_iter(rows.iter().map(|r| valid_to(r)))
                        .with_timezone("UTC"),
                ),
                ("index", _) => {
                    Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.index)))
                }
                ("name", Some(name)) => name.clone(),
                (other, _) => {
                    return Err(DataFusionError::Internal(format!(
                        "column {other} is not given by version rows alone"
                    )))
                }
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(n));
    Ok(RecordBatch::try_new_with_options(
        projected.clone(),
        arrays,
        &options,
    )?)
}

/// One object row, borrowed from whoever built it.
pub struct ObjectRow<'a> {
    pub cluster: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub resource_version: &'a str,
    pub deleted: bool,
    pub owner: Option<&'a str>,
    pub owner_kind: Option<&'a str>,
    pub claims: &'a [String],
    pub conflict: bool,
    pub tracking_mismatch: Option<&'a str>,
    pub managers: &'a [String],
    pub valid_from: i64,
    pub valid_to: Option<i64>,
    pub index: u64,
}

impl<'a> ObjectRow<'a> {
    /// The row of a version in `cluster` with none of the columns its
    /// name or details give (empty: for a scan that projects none of
    /// them; the caller sets `valid_to`).
    pub fn unnamed(cluster: &'a str, row: &VersionRow) -> ObjectRow<'a> {
        ObjectRow {
            cluster,
            group: "",
            version: "",
            kind: "",
            namespace: "",
            name: "",
            uid: "",
            resource_version: "",
            deleted: row.deleted(),
            owner: None,
            owner_kind: None,
            claims: &[],
            conflict: false,
            tracking_mismatch: None,
            managers: &[],
            valid_from: row.from,
            valid_to: None,
            index: row.index,
        }
    }

    /// The row of a decoded version: its name, details and owners (the
    /// caller sets `deleted` and `valid_to` where they differ).
    pub fn of_version(
        cluster: &'a str,
        object: ObjectRef<'a>,
        row: &VersionRow,
        details: &'a VersionDetails,
        owners: &'a Ownership,
    ) -> ObjectRow<'a> {
        ObjectRow {
            cluster,
            group: object.group,
            version: ownership::version_of(&details.api_version),
            kind: object.kind,
            namespace: object.namespace,
            name: object.name,
            uid: &details.uid,
            resource_version: &details.resource_version,
            deleted: row.deleted(),
            owner: owners.owner.as_deref(),
            owner_kind: owners.owner_kind.map(|m| m.as_str()),
            claims: &owners.claims,
            conflict: owners.conflict,
            tracking_mismatch: details.tracking_mismatch.as_deref(),
            managers: &details.managers,
            valid_from: row.from,
            valid_to: None,
            index: row.index,
        }
    }
}

/// Which columns of [`schema`]`(shape)` a scan projects, by builder.
#[derive(Clone, Copy)]
struct Wanted {
    text: [bool; 8],
    deleted: bool,
    owner: bool,
    owner_kind: bool,
    claims: bool,
    conflict: bool,
    tracking_mismatch: bool,
    managers: bool,
    valid_from: bool,
    valid_to: bool,
    index: bool,
}

impl Wanted {
    fn new(shape: Shape, columns: &[usize]) -> Wanted {
        let schema = schema(shape);
        let wanted = |name: &str| schema.index_of(name).is_ok_and(|at| columns.contains(&at));
        Wanted {
            text: TEXT.map(wanted),
            deleted: wanted("deleted"),
            owner: wanted("owner"),
            owner_kind: wanted("owner_kind"),
            claims: wanted("claims"),
            conflict: wanted("conflict"),
            tracking_mismatch: wanted("tracking_mismatch"),
            managers: wanted("managers"),
            valid_from: wanted("valid_from"),
            valid_to: wanted("valid_to"),
            index: wanted("index"),
        }
    }
}

/// Builders for one batch: only the projected columns are built, so a
/// scan that counts names copies no owners or managers.
pub struct Batch {
    shape: Shape,
    /// Which columns are projected.
    wanted: Wanted,
    text: [StringViewBuilder; 8],
    deleted: BooleanBuilder,
    owner: StringViewBuilder,
    owner_kind: StringViewBuilder,
    claims: ListBuilder<StringBuilder>,
    conflict: BooleanBuilder,
    tracking_mismatch: StringViewBuilder,
    managers: ListBuilder<StringBuilder>,
    valid_from: TimestampMicrosecondBuilder,
    valid_to: TimestampMicrosecondBuilder,
    index: UInt64Builder,
    /// Rows so far.
    pub len: usize,
}

impl Batch {
    /// Empty builders for `columns` of [`schema`]`(shape)`.
    pub fn new(shape: Shape, columns: &[usize]) -> Batch {
        let wanted = Wanted::new(shape, columns);
        Batch {
            shape,
            wanted,
            text: std::array::from_fn(|_| StringViewBuilder::new()),
            deleted: BooleanBuilder::new(),
            owner: StringViewBuilder::new(),
            owner_kind: StringViewBuilder::new(),
            claims: ListBuilder::new(StringBuilder::new()),
            conflict: BooleanBuilder::new(),
            tracking_mismatch: StringViewBuilder::new(),
            managers: ListBuilder::new(StringBuilder::new()),
            valid_from: TimestampMicrosecondBuilder::new(),
            valid_to: TimestampMicrosecondBuilder::new(),
            index: UInt64Builder::new(),
            len: 0,
        }
    }

    /// Empty builders for `columns`, the projected ones sized for `rows`
    /// rows (growing them a doubling at a time was a tenth of a scan of
    /// a day's versions at 10M).
    pub fn with_capacity(shape: Shape, columns: &[usize], rows: usize) -> Batch {
        let mut batch = Batch::new(shape, columns);
        let wanted = batch.wanted;
        for (b, w) in batch.text.iter_mut().zip(wanted.text) {
            if w {
                *b = StringViewBuilder::with_capacity(rows);
            }
        }
        if wanted.deleted {
            batch.deleted = BooleanBuilder::with_capacity(rows);
        }
        if wanted.valid_from {
            batch.valid_from = TimestampMicrosecondBuilder::with_capacity(rows);
        }
        if wanted.valid_to {
            batch.valid_to = TimestampMicrosecondBuilder::with_capacity(rows);
        }
        if wanted.index {
            batch.index = UInt64Builder::with_capacity(rows);
        }
        batch
    }

    /// Appends one row.
    pub fn push(&mut self, r: &ObjectRow<'_>) {
        let text = [
            r.cluster,
            r.group,
            r.version,
            r.kind,
            r.namespace,
            r.name,
            r.uid,
            r.resource_version,
        ];
        let Wanted {
            text: text_wanted,
            deleted,
            owner,
            owner_kind,
            claims,
            conflict,
            tracking_mismatch,
            managers,
            valid_from,
            valid_to,
            index,
        } = self.wanted;
        for ((b, v), w) in self.text.iter_mut().zip(text).zip(text_wanted) {
            if w {
                b.append_value(v);
            }
        }
        if deleted {
            self.deleted.append_value(r.deleted);
        }
        if owner {
            self.owner.append_option(r.owner);
        }
        if owner_kind {
            self.owner_kind.append_option(r.owner_kind);
        }
        if claims {
            for c in r.claims {
                self.claims.values().append_value(c);
            }
            self.claims.append(true);
        }
        if conflict {
            self.conflict.append_value(r.conflict);
        }
        if tracking_mismatch {
            self.tracking_mismatch.append_option(r.tracking_mismatch);
        }
        if managers {
            for m in r.managers {
                self.managers.values().append_value(m);
            }
            self.managers.append(true);
        }
        if valid_from {
            self.valid_from.append_value(r.valid_from);
        }
        if valid_to {
            self.valid_to.append_option(r.valid_to);
        }
        if index {
            self.index.append_value(r.index);
        }
        self.len += 1;
    }

    /// The batch, projected to `columns` of [`schema`]`(shape)`.
    pub fn finish(mut self, columns: &[usize], projected: &SchemaRef) -> Result<RecordBatch> {
        let mut all: Vec<ArrayRef> = self
            .text
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        if self.shape == Shape::Versions {
            all.push(Arc::new(self.deleted.finish()));
        }
        all.push(Arc::new(self.owner.finish()));
        all.push(Arc::new(self.owner_kind.finish()));
        all.push(Arc::new(self.claims.finish()));
        all.push(Arc::new(self.conflict.finish()));
        all.push(Arc::new(self.tracking_mismatch.finish()));
        all.push(Arc::new(self.managers.finish()));
        all.push(Arc::new(self.valid_from.finish().with_timezone("UTC")));
        if self.shape == Shape::Versions {
            all.push(Arc::new(self.valid_to.finish().with_timezone("UTC")));
        }
        all.push(Arc::new(self.index.finish()));
        let arrays = columns.iter().map(|&c| all[c].clone()).collect();
        let options =
            datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(self.len));
        Ok(RecordBatch::try_new_with_options(
            projected.clone(),
            arrays,
            &options,
        )?)
    }
}
