//! A scan of the events table from the columnar sidecar: the chunks the
//! bounds leave, spread over the session's partitions (each read on its
//! own blocking thread), then the entries past the last chunk, whose
//! top-level fields the store reads from their leaves without decoding
//! `data`; so is a chunk whose file the store refuses (damaged).

use std::borrow::Cow;
use std::sync::Arc;

use annal_store::columns::{ColumnChunk, Keep, Within};
use annal_store::Store;
use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use tokio::sync::mpsc::Sender;

use super::floors::KeyFloors;
use super::named;
use crate::tables::pushdown::EventBounds;

/// What a sidecar scan reads.
pub(crate) struct ChunkScan {
    store: Arc<Store>,
    /// The chunks left after skipping, in log order.
    chunks: Vec<Arc<ColumnChunk>>,
    /// Where the sidecar ends: entries from here are decoded.
    pub(super) covered: u64,
    /// For each projected column, its position in the sidecar.
    sidecar: Vec<usize>,
    schema: SchemaRef,
    bounds: EventBounds,
    /// Partitions to spread the chunks over.
    parts: usize,
}

impl ChunkScan {
    /// The scan of the sidecar columns `sidecar` (positions in
    /// [`annal_store::columns::COLUMNS`], as `schema`) within `bounds`:
    /// the chunks that may hold such rows, then the entries past the last.
    pub(crate) fn new(
        store: Arc<Store>,
        sidecar: Vec<usize>,
        schema: &SchemaRef,
        bounds: &EventBounds,
        parts: usize,
    ) -> Result<ChunkScan> {
        let all = store
            .column_chunks()
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let covered = all.last().map_or(0, |c| c.end());
        let chunks = all.into_iter().filter(|c| may_hold(c, bounds)).collect();
        Ok(ChunkScan {
            store,
            chunks,
            covered,
            sidecar,
            schema: schema.clone(),
            bounds: bounds.clone(),
            parts,
        })
    }

    /// Entries past the chunks (within the index bounds): decoded from
    /// the leaves.
    pub(super) fn tail(&self) -> u64 {
        let size = self.store.size();
        let from = self.covered.max(self.bounds.from_index);
        let to = self.bounds.to_index.map_or(size, |t| t.min(size));
        to.saturating_sub(from)
    }

    /// Rows of the chunks it reads.
    pub(super) fn rows(&self) -> u64 {
        self.chunks.iter().map(|c| c.rows).sum()
    }

    /// Rows of those chunks the cluster and type bounds can match, at most.
    pub(super) fn matching(&self) -> u64 {
        self.chunks
            .iter()
            .map(|c| matching_rows(c, &self.bounds))
            .sum()
    }

    /// Rows of those chunks a read through the indexes decodes, at most:
    /// the indexes take one cluster and one type, not a list of types.
    pub(super) fn matching_in_indexes(&self) -> u64 {
        let indexed = EventBounds {
            types: None,
            ..self.bounds.clone()
        };
        self.chunks.iter().map(|c| matching_rows(c, &indexed)).sum()
    }

    /// The chunks dealt round-robin over at most `parts` partitions, the
    /// entries past them (within the index bounds) to the last one.
    fn dealt(&self) -> Vec<Dealt> {
        let parts = self.parts.min(self.chunks.len() + 1).max(1);
        let mut dealt: Vec<Dealt> = vec![Dealt::default(); parts];
        for (i, c) in self.chunks.iter().enumerate() {
            dealt[i % parts].chunks.push(c.clone());
        }
        let size = self.store.size();
        let from = self.covered.max(self.bounds.from_index);
        let to = self.bounds.to_index.map_or(size, |t| t.min(size));
        if let Some(last) = dealt.last_mut() {
            last.tail = (from < to).then_some((from, to));
        }
        dealt
    }

    /// The scan as partitions: chunks dealt round-robin, the tail to the
    /// last one.
    pub(crate) fn partitions(self) -> Vec<Arc<dyn PartitionStream>> {
        self.parts()
            .into_iter()
            .map(|p| p as Arc<dyn PartitionStream>)
            .collect()
    }

    /// The same partitions, as parts a join can still narrow
    /// ([`super::narrowed`]).
    pub(super) fn parts(self) -> Vec<Arc<Part>> {
        let mut read = self.sidecar.clone();
        read.sort_unstable();
        read.dedup();
        self.dealt()
            .into_iter()
            .map(|Dealt { chunks, tail }| {
                Arc::new(Part {
                    store: self.store.clone(),
                    chunks,
                    tail,
                    read: read.clone(),
                    sidecar: self.sidecar.clone(),
                    schema: self.schema.clone(),
                    bounds: self.bounds.clone(),
                })
            })
            .collect()
    }

    /// The scan of the leaves the chunks choose by the bounds' object name
    /// ([`super::named`]), as partitions: `columns` are positions in the
    /// `events` schema, and each partition stops at `limit`.
    pub(crate) fn named_partitions(
        self,
        columns: &[usize],
        limit: Option<usize>,
    ) -> Vec<Arc<dyn PartitionStream>> {
        self.dealt()
            .into_iter()
            .map(|Dealt { chunks, tail }| {
                named::partition(
                    self.store.clone(),
                    chunks,
                    tail,
                    &self.bounds,
                    columns.to_vec(),
                    &self.schema,
                    limit,
                )
            })
            .collect()
    }
}

/// One partition's share of a scan: chunks, and for the last partition
/// the entries past them.
#[derive(Clone, Default)]
struct Dealt {
    chunks: Vec<Arc<ColumnChunk>>,
    tail: Option<(u64, u64)>,
}

/// One partition of a sidecar scan.
pub(super) struct Part {
    store: Arc<Store>,
    chunks: Vec<Arc<ColumnChunk>>,
    /// Entries to decode after the chunks.
    tail: Option<(u64, u64)>,
    /// Sidecar columns to read, in file order.
    read: Vec<usize>,
    sidecar: Vec<usize>,
    schema: SchemaRef,
    bounds: EventBounds,
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkScan")
            .field("chunks", &self.chunks.len())
            .field("tail", &self.tail)
            .field("bounds", &self.bounds)
            .finish_non_exhaustive()
    }
}

impl PartitionStream for Part {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        self.read(Vec::new(), None)
    }
}

impl Part {
    /// The partition's rows, and of those only the ones whose text
    /// columns are `within` (what a join allows, besides the bounds) and
    /// that reach past the `floors` of their key (a join's range
    /// condition, [`super::floors`]).
    pub(super) fn read(
        &self,
        within: Vec<Within>,
        floors: Option<KeyFloors>,
    ) -> SendableRecordBatchStream {
        let store = self.store.clone();
        // A chunk that holds none of the clusters or types allowed is not
        // opened (its counts say so).
        let chunks: Vec<_> = self
            .chunks
            .iter()
            .filter(|c| within.iter().all(|w| may_hold_within(c, w)))
            .cloned()
            .collect();
        let tail = self.tail;
        // The rows of a chunk the bounds can match: the reader decodes
        // the projected columns of those rows only.
        let mut keep = self.bounds.keep();
        keep.within = within;
        let schema = self.schema.clone();
        // Always read one column: a `count(*)` projects none, but its
        // batches must still say how many rows they hold.
        let read = match self.read.is_empty() {
            true => vec![0],
            false => self.read.clone(),
        };
        // Where each projected column is in what a chunk file gives (the
        // columns read, in file order) and in what the leaves give (every
        // column).
        let from_file: Vec<usize> = self
            .sidecar
            .iter()
            .map(|s| read.iter().position(|r| r == s).unwrap_or(0))
            .collect();
        let from_leaves = self.sidecar.clone();
        super::super::stream::blocking(self.schema.clone(), move |tx| {
            // What of a chunk (or of the tail: no ranges) the floors leave.
            let floored = |time, recorded| -> Option<Cow<Keep>> {
                let Some(floors) = &floors else {
                    return Some(Cow::Borrowed(&keep));
                };
                let n = floors.narrowing(time, recorded)?;
                let mut k = keep.clone();
                k.within.extend(n.within);
                k.since = k.since.max(n.since);
                Some(Cow::Owned(k))
            };
            let leaves = |from: u64, to: u64, keep: &Keep| {
                let batches = store.column_batches_from_leaves(from, to, keep);
                batches.map(|b| send_chunk(b, &from_leaves, &schema, &tx))
            };
            for chunk in &chunks {
                let Some(keep) = floored(chunk.time, chunk.recorded) else {
                    continue;
                };
                if !keep.within.iter().all(|w| may_hold_within(chunk, w)) {
                    continue;
                }
                let sent = match store.read_column_chunk(chunk, &read, &keep) {
                    Ok(Some(batches)) => Ok(send_chunk(batches, &from_file, &schema, &tx)),
                    // Damaged: its entries from the leaves.
                    Ok(None) => leaves(chunk.start, chunk.end(), &keep),
                    Err(e) => Err(e),
                };
                match sent {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
                        return;
                    }
                }
            }
            let tail = tail.and_then(|t| Some((t, floored(None, None)?)));
            if let Some(((from, to), keep)) = tail {
                if let Err(e) = leaves(from, to, &keep) {
                    let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
                }
            }
        })
    }
}

/// Whether `chunk` may hold rows within `bounds` (by its ranges and counts).
fn may_hold(chunk: &ColumnChunk, b: &EventBounds) -> bool {
    let overlaps = |range: Option<(i64, i64)>, since: Option<i64>, until: Option<i64>| {
        range.is_some_and(|(lo, hi)| since.is_none_or(|s| hi >= s) && until.is_none_or(|u| lo < u))
    };
    let micros = |t: Option<annal_schemas::Timestamp>| t.map(|t| t.unix_micros());
    chunk.end() > b.from_index
        && b.to_index.is_none_or(|t| chunk.start < t)
        && overlaps(chunk.time, micros(b.since), micros(b.until))
        && overlaps(
            chunk.recorded,
            micros(b.recorded_since),
            micros(b.recorded_until),
        )
        && matching_rows(chunk, b) > 0
}

/// Whether `chunk` may hold rows `within` allows, by its counts of
/// clusters and types (every other column: it may).
fn may_hold_within(chunk: &ColumnChunk, within: &Within) -> bool {
    match within.column.as_str() {
        "cluster" => chunk.clusters.keys().any(|c| within.admits(c)),
        "type" => chunk.types.keys().any(|t| within.admits(t)),
        _ => true,
    }
}

/// Rows of `chunk` the cluster and type bounds can match, at most.
fn matching_rows(chunk: &ColumnChunk, b: &EventBounds) -> u64 {
    let by_cluster = b
        .cluster
        .as_ref()
        .map_or(chunk.rows, |c| chunk.clusters.get(c).copied().unwrap_or(0));
    let by_type = b.possible_types().map_or(chunk.rows, |types| {
        types
            .iter()
            .map(|t| chunk.types.get(t).copied().unwrap_or(0))
            .sum()
    });
    by_cluster.min(by_type)
}

/// Sends a chunk's batches as the projected schema; false once the
/// consumer is gone or a read failed.
fn send_chunk(
    batches: annal_store::columns::ChunkBatches,
    pick: &[usize],
    schema: &SchemaRef,
    tx: &Sender<Result<RecordBatch>>,
) -> bool {
    for batch in batches {
        let out = batch
            .map_err(|e| DataFusionError::External(Box::new(e)))
            .and_then(|b| {
                let arrays: Vec<ArrayRef> = pick.iter().map(|&p| b.column(p).clone()).collect();
                let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
                Ok(RecordBatch::try_new_with_options(
                    schema.clone(),
                    arrays,
                    &options,
                )?)
            });
        let failed = out.is_err();
        if tx.blocking_send(out).is_err() || failed {
            return false;
        }
    }
    true
}
