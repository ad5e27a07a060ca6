//! Hive-partitioned Parquet files written from a stream of batches, with a
//! bounded number of files open.
//!
//! DataFusion's partitioned writer keeps one writer per partition open
//! until the stream ends, so its memory grows with the number of
//! (day, cluster) partitions times their data: gigabytes for a month of a
//! hundred clusters. Here at most `max_open` files are open; the least
//! recently used one is closed (finished, footer written) when another is
//! needed, and a partition seen again later gets a further file
//! (`part-00001.parquet`, ...). The tables stream grouped by cluster or by
//! time, so each partition is mostly written in one stretch.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::compute::{cast, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;

use crate::QueryError;

/// Rows per Parquet row group (also the most a writer buffers).
const ROW_GROUP_ROWS: usize = 65_536;

/// Writes batches under `root/<key>=<value>/<key>=<value>/part-N.parquet`.
pub(crate) struct HiveWriter {
    root: PathBuf,
    /// The partition columns (Utf8), outermost first, by position in the
    /// incoming batches; they are left out of the files, as Hive readers
    /// expect.
    keys: Vec<(String, usize)>,
    /// The incoming columns written to the files.
    data_columns: Vec<usize>,
    file_schema: SchemaRef,
    properties: WriterProperties,
    max_open: usize,
    open: HashMap<Vec<String>, OpenFile>,
    /// Files started so far per partition (names the next one).
    started: HashMap<Vec<String>, u32>,
    clock: u64,
    rows: u64,
}

struct OpenFile {
    writer: ArrowWriter<File>,
    path: PathBuf,
    last_used: u64,
}

impl HiveWriter {
    /// A writer for batches of `schema`, partitioned by the Utf8 columns
    /// named in `keys`.
    pub(crate) fn new(
        root: &Path,
        schema: &SchemaRef,
        keys: &[&str],
        max_open: usize,
    ) -> Result<HiveWriter, QueryError> {
        let mut positions = Vec::new();
        for k in keys {
            let at = schema
                .index_of(k)
                .map_err(|_| QueryError::Execution(format!("no partition column {k:?}")))?;
            positions.push((k.to_string(), at));
        }
        let data_columns: Vec<usize> = (0..schema.fields().len())
            .filter(|i| !positions.iter().any(|(_, at)| at == i))
            .collect();
        // Strings are written as plain Parquet strings whatever Arrow type
        // the table reads them as (views), so the files read the same in
        // every engine and every pyarrow.
        let file_schema = Arc::new(Schema::new(
            schema
                .project(&data_columns)?
                .fields()
                .iter()
                .map(|f| match f.data_type() {
                    DataType::Utf8View => f.as_ref().clone().with_data_type(DataType::Utf8),
                    _ => f.as_ref().clone(),
                })
                .collect::<Vec<_>>(),
        ));
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        Ok(HiveWriter {
            root: root.to_path_buf(),
            keys: positions,
            data_columns,
            file_schema,
            properties,
            max_open: max_open.max(1),
            open: HashMap::new(),
            started: HashMap::new(),
            clock: 0,
            rows: 0,
        })
    }

    /// Writes `batch`, each row to its partition.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<(), QueryError> {
        let mut texts = Vec::with_capacity(self.keys.len());
        for (_, at) in &self.keys {
            texts.push(cast(batch.column(*at), &DataType::Utf8)?);
        }
        let mut columns = Vec::with_capacity(self.keys.len());
        for ((name, _), text) in self.keys.iter().zip(&texts) {
            let column = text.as_any().downcast_ref::<StringArray>().ok_or_else(|| {
                QueryError::Execution(format!("partition column {name:?} is not text"))
            })?;
            columns.push(column);
        }
        // Row numbers per partition, in first-seen order.
        let mut groups: Vec<(Vec<String>, Vec<u32>)> = Vec::new();
        let mut where_is: HashMap<Vec<&str>, usize> = HashMap::new();
        for row in 0..batch.num_rows() {
            let key: Vec<&str> = columns
                .iter()
                .map(|c| {
                    if c.is_null(row) {
                        "_none"
                    } else {
                        c.value(row)
                    }
                })
                .collect();
            let slot = match where_is.get(&key) {
                Some(slot) => *slot,
                None => {
                    groups.push((key.iter().map(|s| s.to_string()).collect(), Vec::new()));
                    where_is.insert(key, groups.len() - 1);
                    groups.len() - 1
                }
            };
            groups[slot].1.push(row as u32);
        }
        let data = batch.project(&self.data_columns)?;
        let data = RecordBatch::try_new(
            self.file_schema.clone(),
            data.columns()
                .iter()
                .zip(self.file_schema.fields())
                .map(|(a, f)| cast(a, f.data_type()))
                .collect::<Result<Vec<_>, _>>()?,
        )?;
        for (key, rows) in groups {
            let part = take_record_batch(&data, &UInt32Array::from(rows))?;
            self.writer_for(key)?.write(&part)?;
            self.rows += part.num_rows() as u64;
        }
        Ok(())
    }

    /// Closes every file; returns the rows written.
    pub(crate) fn finish(mut self) -> Result<u64, QueryError> {
        for (_, f) in self.open.drain() {
            close(f)?;
        }
        Ok(self.rows)
    }

    fn writer_for(&mut self, key: Vec<String>) -> Result<&mut ArrowWriter<File>, QueryError> {
        self.clock += 1;
        let now = self.clock;
        if !self.open.contains_key(&key) {
            if self.open.len() >= self.max_open {
                let oldest = self
                    .open
                    .iter()
                    .min_by_key(|(_, f)| f.last_used)
                    .map(|(k, _)| k.clone());
                if let Some(f) = oldest.and_then(|k| self.open.remove(&k)) {
                    close(f)?;
                }
            }
            let mut dir = self.root.clone();
            for ((name, _), value) in self.keys.iter().zip(&key) {
                dir.push(format!("{name}={}", path_value(value)));
            }
            std::fs::create_dir_all(&dir).map_err(|e| {
                QueryError::Execution(format!("cannot create {}: {e}", dir.display()))
            })?;
            let n = self.started.entry(key.clone()).or_insert(0);
            let path = dir.join(format!("part-{n:05}.parquet"));
            *n += 1;
            let file = File::create(&path).map_err(|e| {
                QueryError::Execution(format!("cannot create {}: {e}", path.display()))
            })?;
            let writer = ArrowWriter::try_new(
                file,
                self.file_schema.clone(),
                Some(self.properties.clone()),
            )?;
            self.open.insert(
                key.clone(),
                OpenFile {
                    writer,
                    path,
                    last_used: now,
                },
            );
        }
        let f = self
            .open
            .get_mut(&key)
            .ok_or_else(|| QueryError::Execution("partition writer vanished".into()))?;
        f.last_used = now;
        Ok(&mut f.writer)
    }
}

fn close(f: OpenFile) -> Result<(), QueryError> {
    f.writer
        .close()
        .map_err(|e| QueryError::Execution(format!("cannot finish {}: {e}", f.path.display())))?;
    Ok(())
}

/// A partition value as a path segment: Hive escapes `/`, `=`, `%` and
/// control characters as `%XX` (cluster ids are DNS-like, so this is
/// only a guard).
fn path_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c == '/' || c == '=' || c == '%' || c == '\\' || c.is_control() || c == ':' {
            for b in c.to_string().bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    if out.is_empty() || out == "." || out == ".." {
        out = format!("%2E{}", &out[out.len().min(1)..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_never_escape_their_directory() {
        assert_eq!(path_value("prod-eu1-a"), "prod-eu1-a");
        assert_eq!(path_value("a/b=c"), "a%2Fb%3Dc");
        assert_ne!(path_value(".."), "..");
        assert_ne!(path_value(""), "");
    }
}
