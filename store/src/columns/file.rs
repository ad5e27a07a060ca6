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
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::StoreError;

/// Rows per batch a chunk is read in.
const BATCH_ROWS: usize = 8192;

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("column chunk: {what}"))
}

/// `batch` as Parquet bytes: dictionary pages for the repeated strings
/// (clusters, types, principals), zstd for the rest.
pub(crate) fn encode(batch: &RecordBatch) -> Result<Vec<u8>, StoreError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(corrupt)?))
        .set_max_row_group_row_count(Some(batch.num_rows().max(1)))
        .build();
    let mut writer =
        ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).map_err(corrupt)?;
    writer.write(batch).map_err(corrupt)?;
    writer.into_inner().map_err(corrupt)
}

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

/// Batches of the chunk in `bytes`, with only `columns` (file order).
pub(crate) fn decode(
    bytes: Bytes,
    columns: &[usize],
) -> Result<ParquetRecordBatchReader, StoreError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(corrupt)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
    builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(corrupt)
}
