//! Arrow columns for object rows, shared by `inventory_at` and `objects`.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, ListBuilder, RecordBatch, StringBuilder, TimestampMicrosecondBuilder,
    UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::Result;

/// The kind of row a table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `inventory_at`: live objects, with inventory claims and managers.
    Live,
    /// `objects`: every version, with its interval and deletions.
    Versions,
}

/// The columns of `shape`, in order.
pub fn schema(shape: Shape) -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    let maybe = |name: &str| Field::new(name, DataType::Utf8, true);
    let list = |name: &str| {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        )
    };
    let mut fields = vec![
        text("cluster"),
        text("group"),
        text("version"),
        text("kind"),
        text("namespace"),
        text("name"),
        text("uid"),
        text("resource_version"),
    ];
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

/// Builders for one batch.
pub struct Batch {
    shape: Shape,
    text: [StringBuilder; 8],
    deleted: BooleanBuilder,
    owner: StringBuilder,
    owner_kind: StringBuilder,
    claims: ListBuilder<StringBuilder>,
    conflict: BooleanBuilder,
    tracking_mismatch: StringBuilder,
    managers: ListBuilder<StringBuilder>,
    valid_from: TimestampMicrosecondBuilder,
    valid_to: TimestampMicrosecondBuilder,
    index: UInt64Builder,
    /// Rows so far.
    pub len: usize,
}

impl Batch {
    /// Empty builders.
    pub fn new(shape: Shape) -> Batch {
        Batch {
            shape,
            text: std::array::from_fn(|_| StringBuilder::new()),
            deleted: BooleanBuilder::new(),
            owner: StringBuilder::new(),
            owner_kind: StringBuilder::new(),
            claims: ListBuilder::new(StringBuilder::new()),
            conflict: BooleanBuilder::new(),
            tracking_mismatch: StringBuilder::new(),
            managers: ListBuilder::new(StringBuilder::new()),
            valid_from: TimestampMicrosecondBuilder::new(),
            valid_to: TimestampMicrosecondBuilder::new(),
            index: UInt64Builder::new(),
            len: 0,
        }
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
        for (b, v) in self.text.iter_mut().zip(text) {
            b.append_value(v);
        }
        self.deleted.append_value(r.deleted);
        self.owner.append_option(r.owner);
        self.owner_kind.append_option(r.owner_kind);
        for c in r.claims {
            self.claims.values().append_value(c);
        }
        self.claims.append(true);
        self.conflict.append_value(r.conflict);
        self.tracking_mismatch.append_option(r.tracking_mismatch);
        for m in r.managers {
            self.managers.values().append_value(m);
        }
        self.managers.append(true);
        self.valid_from.append_value(r.valid_from);
        self.valid_to.append_option(r.valid_to);
        self.index.append_value(r.index);
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
