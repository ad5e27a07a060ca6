//! A chunk's file: one Parquet file (one row group), written whole and
//! named in the manifest with its BLAKE3, so that a file that was cut or
//! changed is never decoded. Its rows are grouped by type and cluster
//! ([`grouped`]); the `index` column says where each came from.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch, RecordBatchOptions, StringArray, UInt32Array};
use arrow_cast::cast;
use arrow_schema::{ArrowError, DataType, Field, Schema};
use arrow_select::take::take_record_batch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::ColumnPath;

use super::keep::Keep;
use super::{ChunkBatches, COLUMNS, NAME_HASH, SYNC_START};
use crate::StoreError;

/// Rows per batch a chunk is read in.
const BATCH_ROWS: usize = 8192;

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("column chunk: {what}"))
}

/// `batch` as Parquet bytes.
///
/// The envelope's columns are what every scan of `events` decodes, so
/// they are stored for decoding speed: `index` and `recorded_at` as
/// deltas (within a group of [`grouped`] rows they grow by a few steps a
/// row: a few bits each), `time` plain (eight bytes a row:
/// valid times jitter and arrive late, so its deltas took five bytes a
/// row anyway, and a delta column is skipped only by decoding every value
/// it skips, which was a quarter of credentials-after-t, whose row filter
/// keeps 1% of each chunk's rows and then reads their `time`), the
/// strings as dictionaries (clusters, types, principals repeat), and
/// none of them compressed: zstd saved nothing on the dictionary indexes
/// (a cluster of 100 takes 7 bits a row either way) and its decoding was
/// the largest cost of a scan of one cluster (14% of perf samples of
/// credentials-after-t at 10M). The sync columns, mostly null and read by
/// the `syncs` view only, keep zstd. The name hash is four random bytes a
/// row: stored plain, as nothing would make it smaller.
pub(crate) fn encode(batch: &RecordBatch) -> Result<Vec<u8>, StoreError> {
    let batch = &grouped(batch)?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(corrupt)?))
        .set_max_row_group_row_count(Some(batch.num_rows().max(1)));
    for (i, name) in COLUMNS[..SYNC_START].iter().enumerate() {
        let column = ColumnPath::from(*name);
        props = props.set_column_compression(column.clone(), Compression::UNCOMPRESSED);
        if i < DELTAS {
            props = props
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, Encoding::DELTA_BINARY_PACKED);
        } else if i == TIME {
            props = props
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, Encoding::PLAIN);
        }
    }
    let name = ColumnPath::from(COLUMNS[NAME_HASH]);
    props = props
        .set_column_compression(name.clone(), Compression::UNCOMPRESSED)
        .set_column_dictionary_enabled(name.clone(), false)
        .set_column_encoding(name, Encoding::PLAIN);
    let mut writer =
        ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props.build())).map_err(corrupt)?;
    writer.write(batch).map_err(corrupt)?;
    writer.into_inner().map_err(corrupt)
}

/// `batch`'s rows ordered by type, then cluster (no cluster first), then
/// log index: each (type, cluster) pair's rows are one run.
///
/// Why: a scan of one cluster, or of one type, keeps 1% of a chunk's rows
/// (a cluster of a hundred) or less. In log order those rows are spread
/// over the whole chunk, and the reader paid for every gap: building a
/// selection of a thousand runs from the row filter, and skipping through
/// each projected column a thousand times (credentials-after-t at 10M
/// spent most of its time there). Grouped, the row filter reads
/// `type` and `cluster` as a few hundred runs of the same key, keeps one
/// or two runs, and the projected columns are decoded in one stretch.
/// Nothing reads a chunk's rows in log order: the `events` table promises
/// no order, and a read by object name sorts the indexes it kept.
fn grouped(batch: &RecordBatch) -> Result<RecordBatch, StoreError> {
    let rank = |at: usize| -> Result<Vec<u32>, StoreError> {
        let strings = batch
            .column(at)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| corrupt(format!("{} is not text", COLUMNS[at])))?;
        let mut distinct: Vec<Option<&str>> =
            strings.iter().collect::<HashSet<_>>().into_iter().collect();
        distinct.sort_unstable();
        let ranks: HashMap<Option<&str>, u32> = distinct
            .into_iter()
            .enumerate()
            .map(|(i, v)| (v, i as u32))
            .collect();
        Ok(strings
            .iter()
            .map(|v| ranks.get(&v).copied().unwrap_or(0))
            .collect())
    };
    let (types, clusters) = (rank(TYPE)?, rank(CLUSTER)?);
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // Stable: log order within a group.
    order.sort_by_key(|&i| (types[i as usize], clusters[i as usize]));
    take_record_batch(batch, &UInt32Array::from(order)).map_err(corrupt)
}

/// Where `type` and `cluster` are in [`COLUMNS`].
const TYPE: usize = 3;
const CLUSTER: usize = 4;

/// The first columns, stored as deltas: `index`, `recorded_at`.
const DELTAS: usize = 2;

/// `time`, stored plain.
const TIME: usize = 2;

/// Writes `bytes` to `path` durably, through a temporary file and a rename.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let io = |e| StoreError::io(path, e);
    let mut file = fs::File::create(&tmp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_data().map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

/// The file's bytes if they are the ones the manifest names (`None`: cut,
/// changed or gone).
pub(crate) fn read_checked(path: &Path, blake3_hex: &str) -> Option<Bytes> {
    let bytes = fs::read(path).ok()?;
    (crate::merkle::to_hex(blake3::hash(&bytes).as_bytes()) == blake3_hex).then(|| bytes.into())
}

/// Batches of the chunk in `source` (its bytes, or the file once its
/// hash is known: then only the footer and the projected columns are
/// read), with only `columns` (file order), and only the rows `keep`
/// keeps.
///
/// Strings come out as `Utf8View` ([`super::read_schema`]): a row's view
/// points into the page's dictionary instead of copying its bytes, which
/// was half of a full scan that projects a string (copying `principal`
/// out of the dictionary for every row of human-writes-per-day at 10M),
/// and DataFusion groups, compares and filters views without copying
/// them again. The string columns a row filter tests (`cluster`, `type`,
/// and a [`super::Prefix`]'s) are read as Arrow dictionaries, so the
/// filter compares each distinct value once per page and the rows by
/// their keys; where projected, they become views of the rows that
/// passed.
pub(crate) fn decode<R: ChunkReader + 'static>(
    source: R,
    columns: &[usize],
    keep: &Keep,
) -> Result<ChunkBatches, StoreError> {
    let plain = ArrowReaderMetadata::load(&source, ArrowReaderOptions::new()).map_err(corrupt)?;
    let fields: Vec<Field> = plain
        .schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8
                if DICTIONARY_READ.contains(&f.name().as_str()) || keep.tests_text(f.name()) =>
            {
                Field::new(
                    f.name(),
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                    f.is_nullable(),
                )
            }
            DataType::Utf8 => Field::new(f.name(), DataType::Utf8View, f.is_nullable()),
            _ => f.as_ref().clone(),
        })
        .collect();
    let options = ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields)));
    let metadata =
        ArrowReaderMetadata::try_new(plain.metadata().clone(), options).map_err(corrupt)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(source, metadata);
    let schema = builder.parquet_schema();
    let mask = ProjectionMask::roots(schema, columns.iter().copied());
    let filter = keep.row_filter(schema);
    let builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
    let reader = match filter {
        Some(f) => builder.with_row_filter(f).build(),
        None => builder.build(),
    }
    .map_err(corrupt)?;
    Ok(Box::new(reader.map(|b| {
        b.map_err(corrupt).and_then(|b| views(&b).map_err(corrupt))
    })))
}

/// String columns read as dictionaries (see [`decode`]).
pub(crate) const DICTIONARY_READ: [&str; 2] = ["cluster", "type"];

/// `batch` with every string column (plain or dictionary) as `Utf8View`,
/// the type [`super::read_schema`] gives strings.
pub(crate) fn views(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let stringy = |t: &DataType| match t {
        DataType::Utf8 => true,
        DataType::Dictionary(_, v) => **v == DataType::Utf8,
        _ => false,
    };
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| stringy(f.data_type()))
    {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut arrays = Vec::with_capacity(batch.num_columns());
    for (f, a) in batch.schema().fields().iter().zip(batch.columns()) {
        match stringy(f.data_type()) {
            true => {
                fields.push(Field::new(f.name(), DataType::Utf8View, f.is_nullable()));
                arrays.push(cast(a, &DataType::Utf8View)?);
            }
            false => {
                fields.push(f.as_ref().clone());
                arrays.push(a.clone());
            }
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
}
