//! A scan that needs the leaves (`id` or `data`) of one object's entries:
//! `json_get_str(data, 'metadata', 'name') = …` with any other bounds.
//! The column chunks say which entries can match (their name hash, and
//! the cluster, type and time bounds, [`annal_store::columns::Keep`]) and
//! only those leaves are read: "who changed this object" reads about ten
//! leaves instead of every leaf of its cluster. Entries past the last
//! chunk, and a chunk whose file the store refuses, are read from the
//! leaves whole, as the index scan reads them.

use std::sync::Arc;

use annal_store::columns::{ChunkBatches, ColumnChunk};
use annal_store::{RawLeaf, Store, StoreError};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{SchemaRef, UInt64Type};
use datafusion::physical_plan::streaming::PartitionStream;

use super::leaf_rows::LeafScan;
use crate::tables::pushdown::EventBounds;
use crate::tables::stream::Partition;

/// One partition of a named scan: the leaves its `chunks` choose by the
/// bounds' name hash, then the entries of `tail` (past the chunks) whole;
/// `columns` are positions in the `events` schema, and it stops at `limit`.
pub(super) fn partition(
    store: Arc<Store>,
    chunks: Vec<Arc<ColumnChunk>>,
    tail: Option<(u64, u64)>,
    bounds: &EventBounds,
    columns: Vec<usize>,
    schema: &SchemaRef,
    limit: Option<usize>,
) -> Arc<dyn PartitionStream> {
    let label = format!(
        "NamedScan {{ chunks: {}, tail: {tail:?}, bounds: {bounds:?} }}",
        chunks.len()
    );
    let keep = bounds.keep();
    let scan = LeafScan::new(bounds, limit, columns, schema);
    Partition::of(schema.clone(), label, move |tx| {
        let Some(filter) = &scan.filter else {
            return; // a type no event has
        };
        let store = &*store;
        let chosen = chunks.iter().flat_map(|chunk| {
            let leaves: Box<dyn Iterator<Item = Result<RawLeaf, StoreError>> + '_> =
                match store.read_column_chunk(chunk, &[0], &keep) {
                    Ok(Some(batches)) => indexed(store, batches),
                    // Refused (damaged): every leaf of the chunk.
                    Ok(None) => store.leaves(chunk.start, chunk.end()),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                };
            leaves
        });
        let rest = tail.iter().flat_map(|&(from, to)| store.leaves(from, to));
        scan.send(chosen.chain(rest), filter, tx);
    })
}

/// The leaves of the entries a chunk read kept (its `index` column), in
/// log order (a chunk's file groups its rows by type and cluster).
fn indexed(
    store: &Store,
    batches: ChunkBatches,
) -> Box<dyn Iterator<Item = Result<RawLeaf, StoreError>> + '_> {
    let mut indexes = Vec::new();
    for batch in batches {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let Some(kept) = batch.column(0).as_primitive_opt::<UInt64Type>() else {
            let e = StoreError::Corrupt("a column chunk's index is not UInt64".into());
            return Box::new(std::iter::once(Err(e)));
        };
        indexes.extend_from_slice(kept.values());
    }
    indexes.sort_unstable();
    Box::new(indexes.into_iter().map(move |ix| {
        store
            .leaf_bytes(ix)?
            .map(|bytes| (ix, bytes))
            .ok_or_else(|| StoreError::Corrupt(format!("a column chunk names missing entry {ix}")))
    }))
}
