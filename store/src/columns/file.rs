//! A chunk's file: one Parquet file (one row group), written whole and
//! named in the manifest with its BLAKE3, so that a file that was cut or
//! changed is never decoded.

use std::fs;
use std::io::Write;
use std::path::Path;

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::ColumnPath;

use super::keep::Keep;
use super::{COLUMNS, NAME_HASH, SYNC_START};
use crate::StoreError;

/// Rows per batch a chunk is read in.
const BATCH_ROWS: usize = 8192;

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("column chunk: {what}"))
}

/// `batch` as Parquet bytes.
///
/// The envelope's columns are what every scan of `events` decodes, so
/// they are stored for decoding speed: `index` and the two times as
/// deltas (consecutive entries differ little; `index` by exactly one),
/// the strings as dictionaries (clusters, types, principals repeat), and
/// none of them compressed: zstd saved nothing on the dictionary indexes
/// (a cluster of 100 takes 7 bits a row either way) and its decoding was
/// the largest cost of a scan of one cluster (14% of perf samples of
/// credentials-after-t at 10M). The sync columns, mostly null and read by
/// the `syncs` view only, keep zstd. The name hash is four random bytes a
/// row: stored plain, as nothing would make it smaller.
pub(crate) fn encode(batch: &RecordBatch) -> Result<Vec<u8>, StoreError> {
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

/// The first columns, stored as deltas: `index`, `recorded_at`, `time`.
const DELTAS: usize = 3;

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
pub(crate) fn decode<R: ChunkReader + 'static>(
    source: R,
    columns: &[usize],
    keep: &Keep,
) -> Result<ParquetRecordBatchReader, StoreError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(source).map_err(corrupt)?;
    let schema = builder.parquet_schema();
    let mask = ProjectionMask::roots(schema, columns.iter().copied());
    let filter = keep.row_filter(schema);
    let builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
    match filter {
        Some(f) => builder.with_row_filter(f).build(),
        None => builder.build(),
    }
    .map_err(corrupt)
}
