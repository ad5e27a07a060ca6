//! One entry's row in the sidecar, and the builders a chunk fills.
//!
//! The columns are the envelope's top-level fields, the ones full scans
//! filter and group on, then the fields of `app.sync` entries ([`sync`]);
//! `id` and `data` stay in the leaves (an `id` is answered by the id
//! index, and `data` is the JSON itself).

use super::sync::{self, Sync};

use std::collections::BTreeMap;
use std::sync::Arc;

use annal_schemas::{Envelope, EventType, Header, Timestamp};

use crate::data_view::Data;
use arrow_array::builder::{
    ArrayBuilder, StringBuilder, TimestampMicrosecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};

/// The sidecar's columns, in file order: the envelope's (named as the
/// `events` table names them), then the syncs' (from [`SYNC_START`]),
/// then the hash of the object's name ([`NAME_HASH`], see [`super::name`]).
pub const COLUMNS: [&str; 25] = [
    "index",
    "recorded_at",
    "time",
    "type",
    "cluster",
    "source",
    "principal",
    "impersonated",
    "field_manager",
    "controller",
    "credential",
    "app",
    "sync_controller",
    "sync_revision",
    "sync_phase",
    "sync_started_at",
    "sync_finished_at",
    "sync_prune",
    "sync_dry_run",
    "sync_resources",
    "sync_render_seconds",
    "sync_api_requests",
    "sync_api_throttled",
    "sync_applied_bytes",
    "name_hash",
];

/// Where the sync columns start in [`COLUMNS`].
pub const SYNC_START: usize = 12;

/// The envelope's text columns in [`COLUMNS`], `type` to `app`: the ones
/// a [`super::Prefix`] may test.
pub const TEXT: std::ops::Range<usize> = 3..SYNC_START;

/// Where the name hash is in [`COLUMNS`] (after the sync columns).
pub const NAME_HASH: usize = 24;

/// The Arrow schema of a chunk.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let mut fields = vec![
        Field::new("index", DataType::UInt64, false),
        Field::new("recorded_at", ts(), false),
        Field::new("time", ts(), false),
        Field::new("type", DataType::Utf8, false),
    ];
    fields.extend(
        COLUMNS[4..SYNC_START]
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, true)),
    );
    fields.extend(sync::fields(&COLUMNS[SYNC_START..NAME_HASH]));
    fields.push(Field::new(COLUMNS[NAME_HASH], DataType::UInt32, false));
    Arc::new(Schema::new(fields))
}

/// The Arrow schema of what reads give ([`super::Columns::read`] and the
/// rows built from the leaves): [`schema`] with its strings as
/// `Utf8View` (see [`super::file::decode`] for why).
pub fn read_schema() -> SchemaRef {
    let fields: Vec<Field> = schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 => Field::new(f.name(), DataType::Utf8View, f.is_nullable()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// What the sidecar keeps of one envelope besides its cluster, type and
/// time (which the key indexes take too).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Row {
    pub(crate) source: Option<String>,
    pub(crate) principal: Option<String>,
    pub(crate) impersonated: Option<String>,
    pub(crate) field_manager: Option<String>,
    pub(crate) controller: Option<String>,
    pub(crate) credential: Option<String>,
    pub(crate) app: Option<String>,
    /// An `app.sync` entry's fields (boxed: most rows have none).
    pub(crate) sync: Option<Box<Sync>>,
    /// The hash of `data.metadata.name` ([`super::name`]; `None` is
    /// stored as [`super::name::NONE`]).
    pub(crate) name: Option<u32>,
}

impl Row {
    /// The row of an event: its header, and a few fields of its `data`.
    pub(crate) fn of<D: Data>(event: &Header<'_>, data: &D) -> Row {
        let actor = event.actor;
        let field =
            |f: fn(&annal_schemas::Actor) -> &Option<String>| actor.and_then(|a| f(a).clone());
        Row {
            source: event.source.map(str::to_string),
            principal: field(|a| &a.principal),
            impersonated: field(|a| &a.impersonated),
            field_manager: field(|a| &a.field_manager),
            controller: field(|a| &a.controller),
            credential: field(|a| &a.credential),
            app: has_app(event.event_type).then(|| app_in(data)).flatten(),
            sync: (event.event_type == EventType::AppSync).then(|| Box::new(Sync::of(data))),
            name: super::name::of_value(data),
        }
    }
}

/// The app an event is about: `data.app` of the `app.*` events and of
/// `controller.metrics` (the only types whose data has one at the top).
pub fn app_of(event: &Envelope) -> Option<String> {
    app_of_data(event.event_type, &event.data)
}

/// [`app_of`], from an entry's type and `data`.
pub fn app_of_data(event_type: EventType, data: &serde_json::Value) -> Option<String> {
    has_app(event_type).then(|| app_in(data)).flatten()
}

/// Whether entries of `event_type` have an app (`app.*`,
/// `controller.metrics`): the only types whose `data` has one at the top.
pub fn has_app(event_type: EventType) -> bool {
    event_type.as_str().starts_with("app.") || event_type == EventType::ControllerMetrics
}

/// `data.app`, when it is a string.
pub(crate) fn app_in<D: Data>(data: &D) -> Option<String> {
    data.get("app")?.str().map(str::to_string)
}

/// Rows of one chunk being built, with the statistics its manifest line
/// records.
pub(crate) struct Rows {
    /// Log index of the first row.
    pub(crate) start: u64,
    index: UInt64Builder,
    recorded_at: TimestampMicrosecondBuilder,
    time: TimestampMicrosecondBuilder,
    event_type: StringBuilder,
    text: [StringBuilder; 8],
    sync: sync::Builders,
    name: UInt32Builder,
    pub(crate) stats: Stats,
}

/// What a chunk holds, for skipping it without reading it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Valid time, min and max (Unix microseconds).
    pub(crate) time: Option<(i64, i64)>,
    /// System time, min and max.
    pub(crate) recorded: Option<(i64, i64)>,
    /// Rows per cluster (rows without one are not counted).
    pub(crate) clusters: BTreeMap<String, u64>,
    /// Rows per type.
    pub(crate) types: BTreeMap<String, u64>,
}

/// One more row of `key` (allocating its name only the first time: this
/// runs once per committed event).
fn count(counts: &mut BTreeMap<String, u64>, key: &str) {
    match counts.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}

fn widen(range: &mut Option<(i64, i64)>, v: i64) {
    *range = Some(match *range {
        Some((lo, hi)) => (lo.min(v), hi.max(v)),
        None => (v, v),
    });
}

impl Rows {
    pub(crate) fn new(start: u64) -> Rows {
        Rows {
            start,
            index: UInt64Builder::new(),
            recorded_at: TimestampMicrosecondBuilder::new(),
            time: TimestampMicrosecondBuilder::new(),
            event_type: StringBuilder::new(),
            text: std::array::from_fn(|_| StringBuilder::new()),
            sync: sync::Builders::new(),
            name: UInt32Builder::new(),
            stats: Stats::default(),
        }
    }

    /// Rows held.
    pub(crate) fn len(&self) -> u64 {
        self.index.len() as u64
    }

    /// The index the next row must have.
    pub(crate) fn next(&self) -> u64 {
        self.start + self.len()
    }

    pub(crate) fn push(
        &mut self,
        recorded_at: Timestamp,
        cluster: Option<&str>,
        event_type: EventType,
        time: Timestamp,
        row: &Row,
    ) {
        let index = self.next();
        self.index.append_value(index);
        let (rec, t) = (recorded_at.unix_micros(), time.unix_micros());
        self.recorded_at.append_value(rec);
        self.time.append_value(t);
        self.event_type.append_value(event_type.as_str());
        let texts = [
            cluster,
            row.source.as_deref(),
            row.principal.as_deref(),
            row.impersonated.as_deref(),
            row.field_manager.as_deref(),
            row.controller.as_deref(),
            row.credential.as_deref(),
            row.app.as_deref(),
        ];
        for (b, v) in self.text.iter_mut().zip(texts) {
            b.append_option(v);
        }
        self.sync.push(row.sync.as_deref());
        self.name
            .append_value(row.name.unwrap_or(super::name::NONE));
        widen(&mut self.stats.time, t);
        widen(&mut self.stats.recorded, rec);
        if let Some(c) = cluster {
            count(&mut self.stats.clusters, c);
        }
        count(&mut self.stats.types, event_type.as_str());
    }

    /// The rows as one batch, and their statistics.
    pub(crate) fn finish(mut self) -> Result<(RecordBatch, Stats), ArrowError> {
        let ts = |b: &mut TimestampMicrosecondBuilder| -> ArrayRef {
            Arc::new(b.finish().with_timezone("UTC"))
        };
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(self.index.finish()),
            ts(&mut self.recorded_at),
            ts(&mut self.time),
            Arc::new(self.event_type.finish()),
        ];
        arrays.extend(
            self.text
                .iter_mut()
                .map(|b| Arc::new(b.finish()) as ArrayRef),
        );
        arrays.extend(self.sync.finish());
        arrays.push(Arc::new(self.name.finish()));
        Ok((RecordBatch::try_new(schema(), arrays)?, self.stats))
    }
}

impl Stats {
    /// Both chunks' rows, as one.
    pub(crate) fn merge(mut self, other: Stats) -> Stats {
        for v in other.time.into_iter().flat_map(|(a, b)| [a, b]) {
            widen(&mut self.time, v);
        }
        for v in other.recorded.into_iter().flat_map(|(a, b)| [a, b]) {
            widen(&mut self.recorded, v);
        }
        for (k, n) in other.clusters {
            *self.clusters.entry(k).or_default() += n;
        }
        for (k, n) in other.types {
            *self.types.entry(k).or_default() += n;
        }
        self
    }
}
