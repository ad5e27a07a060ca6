//! A chunk's file: one Parquet file (one row group), written whole and
//! named in the manifest with its BLAKE3, so that a file that was cut or
//! changed is never decoded. Its rows are grouped by type and cluster
//! ([`grouped`]); the `index` column says where each came from.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use arrow_array::new_empty_array;
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, DictionaryArray, RecordBatch, RecordBatchOptions, RecordBatchReader, StringArray,
    UInt32Array,
};
use arrow_cast::cast;
use arrow_schema::{ArrowError, DataType, Field, Schema};
use arrow_select::concat::concat;
use arrow_select::filter::{filter, prep_null_mask_filter};
use arrow_select::take::take_record_batch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowFilter,
    RowSelection, RowSelector,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::{KeyValue, PageIndexPolicy, ParquetMetaData};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::ColumnPath;
use serde::{Deserialize, Serialize};

use super::keep::{Answered, Keep};
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
    let (batch, groups) = grouped(batch)?;
    let batch = &batch;
    let groups = serde_json::to_string(&groups).map_err(corrupt)?;
    let mut props = WriterProperties::builder()
        .set_key_value_metadata(Some(vec![KeyValue::new(GROUPS.to_string(), groups)]))
        // Small pages, located by the offset index and without min/max
        // statistics (the groups say more): a read of one group's rows
        // reads the pages that hold them, not the column.
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_statistics_enabled(EnabledStatistics::Chunk)
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
/// principal (none first), then log index: each (type, cluster,
/// principal) triple's rows are one run.
///
/// Why: a scan of one cluster, or of one type, keeps 1% of a chunk's rows
/// (a cluster of a hundred) or less. In log order those rows are spread
/// over the whole chunk, and the reader paid for every gap: building a
/// selection of a thousand runs from the row filter, and skipping through
/// each projected column a thousand times (credentials-after-t at 10M
/// spent most of its time there). Grouped, one cluster's rows of a type
/// are one run, and the projected columns are decoded in one stretch.
/// Nothing reads a chunk's rows in log order: the `events` table promises
/// no order, and a read by object name sorts the indexes it kept.
///
/// The groups are also written in the footer ([`Groups`]), so that a read
/// of one cluster or type selects its runs without reading `type` or
/// `cluster` at all, and a test of the principal (`principal NOT LIKE
/// 'system:%'`: what people did, not controllers) is one test per run,
/// not a decode of every row's principal (a third of
/// human-writes-per-day at 10M). A chunk whose rows have more than
/// [`PRINCIPAL_RUNS`] triples (an audit log of many nodes, each its own
/// principal) is grouped by type and cluster only, so that its footer
/// stays small.
fn grouped(batch: &RecordBatch) -> Result<(RecordBatch, Groups), StoreError> {
    let rank = |at: usize| -> Result<(Vec<u32>, Vec<Option<String>>), StoreError> {
        let strings = batch
            .column(at)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| corrupt(format!("{} is not text", COLUMNS[at])))?;
        let mut distinct: Vec<Option<&str>> =
            strings.iter().collect::<HashSet<_>>().into_iter().collect();
        distinct.sort_unstable();
        let ranks: HashMap<Option<&str>, u32> = distinct
            .iter()
            .enumerate()
            .map(|(i, v)| (*v, i as u32))
            .collect();
        let ranked = strings
            .iter()
            .map(|v| ranks.get(&v).copied().unwrap_or(0))
            .collect();
        Ok((
            ranked,
            distinct
                .into_iter()
                .map(|v| v.map(str::to_string))
                .collect(),
        ))
    };
    let (types, type_names) = rank(TYPE)?;
    let (clusters, cluster_names) = rank(CLUSTER)?;
    let (principals, principal_names) = rank(PRINCIPAL)?;
    let key = |i: u32| {
        let i = i as usize;
        (types[i], clusters[i], principals[i])
    };
    let triples: HashSet<(u32, u32, u32)> = (0..batch.num_rows() as u32).map(key).collect();
    let by_principal = triples.len() <= PRINCIPAL_RUNS;
    let key = |i: u32| {
        let (t, c, p) = key(i);
        (t, c, if by_principal { p } else { 0 })
    };
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // Stable: log order within a group.
    order.sort_by_key(|&i| key(i));
    let mut runs: Vec<u32> = Vec::new();
    let mut run_principals: Vec<u32> = Vec::new();
    let mut last = None;
    for &i in &order {
        match runs.last_mut() {
            Some(rows) if last == Some(key(i)) => *rows += 1,
            _ => {
                let (t, c, p) = key(i);
                runs.extend([t, c, 1]);
                if by_principal {
                    run_principals.push(p);
                }
                last = Some((t, c, p));
            }
        }
    }
    let groups = Groups {
        types: type_names
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect(),
        clusters: cluster_names,
        runs,
        principals: match by_principal {
            true => principal_names,
            false => Vec::new(),
        },
        run_principals,
    };
    let batch = take_record_batch(batch, &UInt32Array::from(order)).map_err(corrupt)?;
    Ok((batch, groups))
}

/// Runs of (type, cluster, principal) a chunk's file may have at most
/// (see [`grouped`]): the bench fleet's chunks have about 1,200 (a
/// hundred clusters, three controllers and four people).
const PRINCIPAL_RUNS: usize = 4096;

/// Rows per data page.
///
/// A group of one cluster and type in a chunk of a hundred clusters is a
/// few hundred rows: in pages of 20,000 (the writer's default) a read of
/// it read and skipped through a third of every projected column (a
/// third of credentials-after-t at 10M was that copying and skipping).
/// Smaller pages cost a page header each (about 1% of a file).
const PAGE_ROWS: usize = 4096;

/// The footer key of a file's [`Groups`].
const GROUPS: &str = "annal.groups";

/// A file's groups of rows, in file order: `runs` holds, for each group,
/// its type (a position in `types`), its cluster (in `clusters`) and its
/// row count; `run_principals`, when not empty, each group's principal
/// (in `principals`). Small: a chunk of the bench fleet (a hundred
/// clusters) has about 1,200 groups, 15 KB of footer.
///
/// Files written before the principal was a group's have neither
/// `principals` nor `run_principals` (their groups are of type and
/// cluster); a binary that predates them reads a newer file's groups as
/// groups of type and cluster, which they still are.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Groups {
    pub(crate) types: Vec<String>,
    pub(crate) clusters: Vec<Option<String>>,
    pub(crate) runs: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) principals: Vec<Option<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) run_principals: Vec<u32>,
}

/// The groups a read keeps: which rows, and which of its bounds they
/// answered.
struct Selected {
    selection: RowSelection,
    answered: Answered,
    /// Each kept group (a position in [`Groups::runs`] / 3) and its rows,
    /// in file order.
    kept: Vec<(usize, usize)>,
}

impl Groups {
    /// Whether each run is of one principal too.
    fn by_principal(&self) -> bool {
        !self.run_principals.is_empty() && self.run_principals.len() * 3 == self.runs.len()
    }

    /// The rows of the groups whose type, cluster and (where the groups
    /// name it) principal `keep` keeps, as a selection; `None` when the
    /// groups do not describe `rows` rows (a run naming no type, cluster
    /// or principal, or a sum that differs): then the row filter decides,
    /// never the groups.
    fn select(&self, keep: &Keep, rows: usize) -> Option<Selected> {
        let principal = self.by_principal() && keep.bounds_principal();
        // Each distinct type, cluster and principal tested once; a run is
        // then three lookups (a file has about a thousand runs over a
        // few dozen values: testing each run's strings was a tenth of a
        // one-cluster read at 10M).
        let types: Vec<bool> = self.types.iter().map(|t| keep.keeps_type(t)).collect();
        let clusters: Vec<bool> = self
            .clusters
            .iter()
            .map(|c| keep.keeps_cluster(c.as_deref()))
            .collect();
        let principals: Vec<bool> = match principal {
            true => self
                .principals
                .iter()
                .map(|p| keep.keeps_principal(p.as_deref()))
                .collect(),
            false => Vec::new(),
        };
        let mut selectors: Vec<RowSelector> = Vec::new();
        let mut kept = Vec::new();
        let mut total = 0usize;
        for (i, run) in self.runs.chunks_exact(3).enumerate() {
            let wanted = *types.get(run[0] as usize)?
                && *clusters.get(run[1] as usize)?
                && match principal {
                    true => *principals.get(*self.run_principals.get(i)? as usize)?,
                    false => true,
                };
            let n = run[2] as usize;
            total += n;
            let selector = match wanted {
                true => {
                    kept.push((i, n));
                    RowSelector::select(n)
                }
                false => RowSelector::skip(n),
            };
            match selectors.last_mut() {
                Some(last) if last.skip == selector.skip => last.row_count += n,
                _ => selectors.push(selector),
            }
        }
        (total == rows).then(|| Selected {
            selection: selectors.into(),
            answered: Answered {
                groups: true,
                principal,
            },
            kept,
        })
    }

    /// Column `column` (a position in [`COLUMNS`]) of the rows of the
    /// groups `kept`, from the groups alone: `type` and `cluster` always,
    /// `principal` when each group is of one. As a dictionary whose keys
    /// are null where the value is.
    fn column(&self, column: usize, kept: &[(usize, usize)]) -> Option<Arc<dyn Array>> {
        // The column's values, and each run's (a position in them).
        let (names, of): (Vec<Option<&str>>, Vec<u32>) = match column {
            TYPE => (
                self.types.iter().map(|t| Some(t.as_str())).collect(),
                self.runs.iter().step_by(3).copied().collect(),
            ),
            CLUSTER => (
                self.clusters.iter().map(|c| c.as_deref()).collect(),
                self.runs.iter().skip(1).step_by(3).copied().collect(),
            ),
            PRINCIPAL if self.by_principal() => (
                self.principals.iter().map(|p| p.as_deref()).collect(),
                self.run_principals.clone(),
            ),
            _ => return None,
        };
        let mut keys: Vec<Option<i32>> = Vec::with_capacity(kept.iter().map(|k| k.1).sum());
        for &(i, n) in kept {
            let at = *of.get(i)? as usize;
            let key = names.get(at)?.map(|_| at as i32);
            keys.extend(std::iter::repeat_n(key, n));
        }
        let values = StringArray::from_iter_values(names.iter().map(|v| v.unwrap_or_default()));
        let keys = arrow_array::Int32Array::from(keys);
        let dictionary = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).ok()?;
        Some(Arc::new(dictionary))
    }
}

/// Where `type`, `cluster` and `principal` are in [`COLUMNS`].
const TYPE: usize = 3;
const CLUSTER: usize = 4;
const PRINCIPAL: usize = 6;

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
pub(crate) fn decode<R: ChunkReader + Clone + 'static>(
    source: R,
    footer: &Footer,
    columns: &[usize],
    keep: &Keep,
) -> Result<ChunkBatches, StoreError> {
    let metadata = footer.read_as(keep)?;
    // A grouped file's runs answer the cluster and type bounds; the row
    // filter tests the rest.
    let rows = metadata.metadata().file_metadata().num_rows() as usize;
    let selected = footer.groups.as_ref().and_then(|g| g.select(keep, rows));
    let answered = selected.as_ref().map(|s| s.answered).unwrap_or_default();
    let mut tests = keep.tests(answered);
    if let (true, Some(groups), Some(s)) = (tests.is_empty(), &footer.groups, &selected) {
        let given: Vec<(usize, Arc<dyn Array>)> = columns
            .iter()
            .filter_map(|&c| groups.column(c, &s.kept).map(|a| (c, a)))
            .collect();
        if !given.is_empty() {
            let selection = s.selection.clone();
            return given_by_groups(source, metadata, selection, columns, given);
        }
    }
    let selection = selected.map(|s| s.selection);
    if let [(tested, _)] = tests[..] {
        if columns.contains(&tested) {
            let test = tests.pop().map(|(_, t)| t);
            let read = TestedOnce {
                source,
                metadata,
                selection,
            };
            return match test {
                Some(test) => read.batches(columns, tested, test),
                None => Err(corrupt("a test went missing")),
            };
        }
    }
    let filter = keep.row_filter(metadata.parquet_schema(), answered);
    let reader = projected(source, metadata, columns.iter().copied(), selection, filter)?;
    Ok(Box::new(reader.map(|b| {
        b.map_err(corrupt).and_then(|b| views(&b).map_err(corrupt))
    })))
}

/// A read whose every bound the groups answered: the columns the groups
/// say (`given`: `type`, `cluster`, and `principal` where each group is of
/// one) are built from them, and only the others are decoded, for the
/// rows `selection` keeps.
///
/// Why: `principal NOT LIKE 'system:%'` over `type IN (...)` (what people
/// did) keeps a few rows of each group, and the principal of each of them
/// is its group's; decoding the column to return it read every key of
/// the pages those rows are in.
fn given_by_groups<R: ChunkReader + Clone + 'static>(
    source: R,
    metadata: ArrowReaderMetadata,
    selection: RowSelection,
    columns: &[usize],
    given: Vec<(usize, Arc<dyn Array>)>,
) -> Result<ChunkBatches, StoreError> {
    let mut order: Vec<usize> = columns.to_vec();
    order.sort_unstable();
    order.dedup();
    let rows = given.first().map_or(0, |(_, a)| a.len());
    if rows == 0 {
        return Ok(Box::new(std::iter::empty()));
    }
    let file = metadata.schema().clone();
    let field = |c: usize| {
        file.fields()
            .get(c)
            .ok_or_else(|| corrupt("a column missing"))
    };
    let others: Vec<usize> = order
        .iter()
        .copied()
        .filter(|c| given.iter().all(|(g, _)| g != c))
        .collect();
    // Each output column: given (an array of every kept row) or read (its
    // place in the batches read).
    let (mut fields, mut parts) = (Vec::new(), Vec::new());
    for &c in &order {
        match given.iter().find(|(g, _)| *g == c) {
            Some((_, a)) => {
                let f = field(c)?;
                fields.push(Field::new(f.name(), a.data_type().clone(), f.is_nullable()));
                parts.push(Ok(a.clone()));
            }
            None => {
                fields.push(field(c)?.as_ref().clone());
                parts.push(Err(others.iter().position(|o| *o == c).unwrap_or(0)));
            }
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = move |from: usize, read: Option<RecordBatch>| -> Result<RecordBatch, StoreError> {
        let n = read
            .as_ref()
            .map_or(BATCH_ROWS.min(rows - from), |b| b.num_rows());
        if from + n > rows {
            return Err(corrupt("more rows than the groups keep"));
        }
        let arrays = parts
            .iter()
            .map(|p| match (p, &read) {
                (Ok(a), _) => Ok(a.slice(from, n)),
                (Err(at), Some(b)) => Ok(b.column(*at).clone()),
                (Err(_), None) => Err(corrupt("a column not read")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        let b =
            RecordBatch::try_new_with_options(schema.clone(), arrays, &options).map_err(corrupt)?;
        views(&b).map_err(corrupt)
    };
    if others.is_empty() {
        let batches: Vec<_> = (0..rows)
            .step_by(BATCH_ROWS)
            .map(|from| batch(from, None))
            .collect();
        return Ok(Box::new(batches.into_iter()));
    }
    let read = projected(source, metadata, others, Some(selection), None)?;
    let mut from = 0;
    Ok(Box::new(read.map(move |b| {
        let b = b.map_err(corrupt)?;
        let n = b.num_rows();
        let out = batch(from, Some(b));
        from += n;
        out
    })))
}

/// A reader of `columns` (positions in the file) of the rows `selection`
/// keeps (all, when `None`) and `filter` passes (all, when `None`).
fn projected<R: ChunkReader + Clone + 'static>(
    source: R,
    metadata: ArrowReaderMetadata,
    columns: impl IntoIterator<Item = usize>,
    selection: Option<RowSelection>,
    filter: Option<RowFilter>,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, StoreError> {
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(source, metadata);
    let mask = ProjectionMask::roots(builder.parquet_schema(), columns);
    let builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
    let builder = match selection {
        Some(s) => builder.with_row_selection(s),
        None => builder,
    };
    match filter {
        Some(f) => builder.with_row_filter(f),
        None => builder,
    }
    .build()
    .map_err(corrupt)
}

/// A chunk read whose row filter tests one column that the read also
/// returns: that column is decoded once, for the test and the rows that
/// pass it, and the other columns then for those rows only.
///
/// Why: Parquet's row filter decodes its column for the test, and the
/// projection decodes it again for the rows kept (the reader's cache of
/// predicate columns is for its async reader only). `principal NOT LIKE
/// 'system:%'` keeps 2% of the rows but decoded `principal` twice: a fifth
/// of human-writes-per-day at 10M was the second decode.
struct TestedOnce<R> {
    source: R,
    metadata: ArrowReaderMetadata,
    /// The rows the groups select (all, when `None`).
    selection: Option<RowSelection>,
}

impl<R: ChunkReader + Clone + 'static> TestedOnce<R> {
    fn reader(
        &self,
        columns: impl IntoIterator<Item = usize>,
        selection: Option<RowSelection>,
    ) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, StoreError> {
        projected(
            self.source.clone(),
            self.metadata.clone(),
            columns,
            selection,
            None,
        )
    }

    /// The rows of `columns` (positions in the file, any order) whose
    /// column `tested` passes `test`, in batches of the file's column order.
    fn batches(
        self,
        columns: &[usize],
        tested: usize,
        test: super::keep::Test,
    ) -> Result<ChunkBatches, StoreError> {
        let mut kept: Vec<Arc<dyn Array>> = Vec::new();
        let mut masks = Vec::new();
        let first = self.reader([tested], self.selection.clone())?;
        let field = first.schema().field(0).clone();
        for batch in first {
            let batch = batch.map_err(corrupt)?;
            let hit = test(batch.column(0)).map_err(corrupt)?;
            // A null (no value) is not kept.
            let hit = match hit.nulls() {
                Some(_) => prep_null_mask_filter(&hit),
                None => hit,
            };
            kept.push(filter(batch.column(0), &hit).map_err(corrupt)?);
            masks.push(hit);
        }
        let kept = match kept.is_empty() {
            true => new_empty_array(field.data_type()),
            false => {
                concat(&kept.iter().map(|a| a.as_ref()).collect::<Vec<_>>()).map_err(corrupt)?
            }
        };
        let mut order: Vec<usize> = columns.to_vec();
        order.sort_unstable();
        order.dedup();
        let at = order.iter().position(|c| *c == tested).unwrap_or(0);
        let others: Vec<usize> = order.iter().copied().filter(|c| *c != tested).collect();
        if kept.is_empty() {
            return Ok(Box::new(std::iter::empty()));
        }
        if others.is_empty() {
            // The tested column alone: no second read.
            let schema = Arc::new(Schema::new(vec![field]));
            let batches: Vec<_> = (0..kept.len())
                .step_by(BATCH_ROWS)
                .map(|from| kept.slice(from, BATCH_ROWS.min(kept.len() - from)))
                .collect();
            return Ok(Box::new(batches.into_iter().map(move |a| {
                let b = RecordBatch::try_new(schema.clone(), vec![a]).map_err(corrupt)?;
                views(&b).map_err(corrupt)
            })));
        }
        // The rows kept, as a selection of the whole file.
        let relative = RowSelection::from_filters(&masks);
        let absolute = match &self.selection {
            Some(s) if s.row_count() != relative.row_count() + relative.skipped_row_count() => {
                return Err(corrupt("a selection of another length"));
            }
            Some(s) => s.and_then(&relative),
            None => relative,
        };
        let rest = self.reader(others, Some(absolute))?;
        let mut fields: Vec<Field> = rest
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.insert(at, field);
        let schema = Arc::new(Schema::new(fields));
        let mut offset = 0;
        Ok(Box::new(rest.map(move |b| {
            let b = b.map_err(corrupt)?;
            let n = b.num_rows();
            if offset + n > kept.len() {
                return Err(corrupt("more rows than the test kept"));
            }
            let mut arrays = b.columns().to_vec();
            arrays.insert(at, kept.slice(offset, n));
            offset += n;
            let b = RecordBatch::try_new(schema.clone(), arrays).map_err(corrupt)?;
            views(&b).map_err(corrupt)
        })))
    }
}

/// A chunk's file read by position (`pread`): the reader fetches the
/// footer, the offset index and then each page it needs, and the
/// standard library's reader for a `File` duplicated the descriptor,
/// seeked and closed it again for every one of them.
pub(crate) struct Pread {
    file: Arc<fs::File>,
    len: u64,
    /// Held while [`ChunkReader::get_bytes`] seeks and reads: shared by
    /// every clone, as the file (and its position) is.
    seek: Arc<std::sync::Mutex<()>>,
}

impl Clone for Pread {
    fn clone(&self) -> Pread {
        Pread {
            file: self.file.clone(),
            len: self.len,
            seek: self.seek.clone(),
        }
    }
}

impl Pread {
    /// `file`, of `len` bytes.
    pub(crate) fn new(file: fs::File, len: u64) -> Pread {
        Pread {
            file: Arc::new(file),
            len,
            seek: Arc::new(std::sync::Mutex::new(())),
        }
    }
}

impl Length for Pread {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Pread {
    type T = BufReader<At>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(BufReader::with_capacity(
            4096,
            At {
                file: self.file.clone(),
                at: start,
            },
        ))
    }

    /// Read into spare capacity, not a zeroed buffer: zeroing each page's
    /// buffer before reading into it was 4% of a full scan at 10M. (A
    /// `File` reads into uninitialised memory itself; a positional read
    /// needs an initialised slice, so this one seeks, under a lock should
    /// two threads ever share the file.)
    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let mut buffer = Vec::with_capacity(length);
        {
            let _one_at_a_time = self.seek.lock().unwrap_or_else(|p| p.into_inner());
            let mut file = &*self.file;
            file.seek(SeekFrom::Start(start))?;
            file.take(length as u64).read_to_end(&mut buffer)?;
        }
        if buffer.len() != length {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{length} bytes at {start}: the file ends after {}",
                buffer.len()
            )));
        }
        Ok(buffer.into())
    }
}

/// A [`Pread`] file from a position on.
pub(crate) struct At {
    file: Arc<fs::File>,
    at: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// What a chunk file's footer says: its Parquet metadata (with the
/// offset index) and its groups. Parsed once per file and process
/// ([`super::Columns`] keeps them): parsing them again on every read was a
/// fifth of a one-cluster query at 10M.
#[derive(Clone)]
pub(crate) struct Footer {
    metadata: ArrowReaderMetadata,
    groups: Option<Arc<Groups>>,
    /// The metadata with the Arrow schema a read decodes to, for each set
    /// of string columns read as dictionaries (a bit per column) asked
    /// for so far: building it for every read of every file was a tenth
    /// of a one-cluster read at 10M. Reads ask for a handful of sets.
    read_as: Arc<Mutex<Vec<(u64, ArrowReaderMetadata)>>>,
}

impl Footer {
    /// The footer of the file `source`.
    pub(crate) fn load<R: ChunkReader>(source: &R) -> Result<Footer, StoreError> {
        let located = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        let metadata = ArrowReaderMetadata::load(source, located).map_err(corrupt)?;
        let groups = groups(metadata.metadata()).map(Arc::new);
        Ok(Footer {
            metadata,
            groups,
            read_as: Arc::default(),
        })
    }

    /// The metadata for a read by `keep`: string columns come out as
    /// `Utf8View`, except [`DICTIONARY_READ`]'s and those `keep` tests,
    /// which come out as dictionaries (see [`decode`]).
    fn read_as(&self, keep: &Keep) -> Result<ArrowReaderMetadata, StoreError> {
        let plain = self.metadata.schema();
        let dictionary = |f: &Field| {
            f.data_type() == &DataType::Utf8
                && (DICTIONARY_READ.contains(&f.name().as_str()) || keep.tests_text(f.name()))
        };
        let set = plain
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| dictionary(f))
            .fold(0u64, |set, (i, _)| {
                set | 1u64.checked_shl(i as u32).unwrap_or(0)
            });
        let lock = || self.read_as.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, m)) = lock().iter().find(|(s, _)| *s == set) {
            return Ok(m.clone());
        }
        let fields: Vec<Field> = plain
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 if dictionary(f) => Field::new(
                    f.name(),
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                    f.is_nullable(),
                ),
                DataType::Utf8 => Field::new(f.name(), DataType::Utf8View, f.is_nullable()),
                _ => f.as_ref().clone(),
            })
            .collect();
        let options = ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields)));
        let metadata = ArrowReaderMetadata::try_new(self.metadata.metadata().clone(), options)
            .map_err(corrupt)?;
        let mut held = lock();
        if held.len() < READ_AS {
            held.push((set, metadata.clone()));
        }
        Ok(metadata)
    }
}

/// Read schemas a footer keeps (see [`Footer::read_as`]).
const READ_AS: usize = 16;

/// The groups a file's footer names (`None`: a file written before
/// them, or a footer that does not parse).
pub(crate) fn groups(metadata: &ParquetMetaData) -> Option<Groups> {
    let value = metadata
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == GROUPS)?
        .value
        .as_ref()?;
    serde_json::from_str(value).ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(runs: Vec<u32>) -> Groups {
        Groups {
            types: vec!["a".into(), "b".into()],
            clusters: vec![None, Some("c1".into())],
            runs,
            ..Groups::default()
        }
    }

    fn keep(cluster: Option<&str>, types: Option<&[&str]>) -> Keep {
        Keep {
            cluster: cluster.map(str::to_string),
            types: types.map(|t| t.iter().map(|s| s.to_string()).collect()),
            ..Keep::default()
        }
    }

    /// The runs a bound keeps are selected, the others skipped (a read
    /// with no cluster or type bound keeps them all); groups that do not
    /// describe the file select nothing (the row filter decides).
    #[test]
    fn groups_select_their_runs_only_when_they_describe_the_file() {
        let g = groups(vec![0, 0, 2, 0, 1, 3, 1, 1, 4]);
        let rows = |s: Selected| {
            s.selection
                .iter()
                .map(|r| (r.skip, r.row_count))
                .collect::<Vec<_>>()
        };
        let by_cluster = g.select(&keep(Some("c1"), None), 9).unwrap();
        assert_eq!(rows(by_cluster), vec![(true, 2), (false, 7)]);
        let by_type = g.select(&keep(None, Some(&["a"])), 9).unwrap();
        assert_eq!(rows(by_type), vec![(false, 5), (true, 4)]);
        let both = g.select(&keep(Some("c1"), Some(&["b"])), 9).unwrap();
        assert_eq!(rows(both), vec![(true, 5), (false, 4)]);
        assert_eq!(
            rows(g.select(&keep(None, None), 9).unwrap()),
            vec![(false, 9)]
        );
        assert!(
            g.select(&keep(Some("c1"), None), 8).is_none(),
            "sum differs"
        );
        // What a join allows: a set of clusters (never the null one), a
        // range of types.
        let within = |column: &str, values: Option<&[&str]>, min: Option<&str>| Keep {
            within: vec![super::super::Within {
                column: column.into(),
                values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
                min: min.map(str::to_string),
                max: None,
            }],
            ..Keep::default()
        };
        let among = g.select(&within("cluster", Some(&["c0", "c1"]), None), 9);
        assert_eq!(rows(among.unwrap()), vec![(true, 2), (false, 7)]);
        let above = g.select(&within("cluster", None, Some("c2")), 9);
        assert_eq!(rows(above.unwrap()), vec![(true, 9)]);
        let types = g.select(&within("type", None, Some("b")), 9);
        assert_eq!(rows(types.unwrap()), vec![(true, 5), (false, 4)]);
        let other = g.select(&within("credential", Some(&["x"]), None), 9);
        assert_eq!(rows(other.unwrap()), vec![(false, 9)]);
        let unnamed = groups(vec![0, 0, 2, 2, 1, 7]);
        assert!(unnamed.select(&keep(Some("c1"), None), 9).is_none());
    }
}
