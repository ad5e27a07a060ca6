//! The columnar sidecar under `DATA/columns/`: the envelope's top-level
//! fields (index, times, type, cluster, source, actor, app) of every entry
//! and a hash of its object's name, in Parquet chunks of [`CHUNK_ROWS`]
//! entries, so that a full scan of the `events` table reads a few
//! compressed columns instead of parsing every leaf's JSON, skips chunks
//! by their time ranges and counts, and finds one object's entries
//! without reading the others' leaves.
//!
//! Like every index it is a cache of the leaves, with one invariant:
//! **a chunk is read only if its file's BLAKE3 is the one its manifest
//! line names, and the manifest's chain ends at a size whose root is the
//! log's root.** Files are written whole and renamed into place before
//! their line is added ([`manifest`]); the writer ([`seal`]) builds them
//! in the background, from the rows commits hand it, or from the leaves
//! for rows it did not see commit. Entries past the last chunk, and any
//! chunk whose file does not match, are read from the leaves instead.

mod file;
mod held;
mod keep;
mod light;
pub(crate) mod manifest;
pub mod name;
mod row;
mod seal;
mod sync;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::RecordBatch;

pub use keep::{Keep, Prefix, Within};
pub use manifest::{ColumnChunk, LAYOUT};
pub(crate) use row::Row;
pub use row::{
    app_of, app_of_data, has_app, read_schema, schema, COLUMNS, NAME_HASH, SYNC_START, TEXT,
};
use seal::Sealer;

use crate::leaves::Segments;
use crate::merkle;
use crate::tree::TreeFiles;
use crate::StoreError;

/// Entries per chunk: about 1 MB of Parquet, small enough to skip by time
/// at a fleet's daily volume, large enough that 10M entries are 153 files.
/// A writer that closes with at least 1/16 of a chunk in memory writes it
/// as a short chunk (which the next writer fills up and writes again), so
/// that scans decode at most that much of the tail.
pub const CHUNK_ROWS: u64 = 65_536;

/// Footers a store keeps parsed: a few tens of KB each (with the offset
/// index), so at most a few MB, and the chunks of 16M entries.
const FOOTERS: usize = 256;

/// Batches of one chunk, projected.
pub type ChunkBatches = Box<dyn Iterator<Item = Result<RecordBatch, StoreError>> + Send>;

/// Rows per batch built from the leaves.
const LEAF_BATCH_ROWS: u64 = 8192;

/// The rows `keep` keeps of entries `from..to` as sidecar batches (every
/// column, as [`read_schema`]), built from the leaves' top-level fields
/// ([`light`]): what scans read past the last chunk, and for a chunk whose
/// file is damaged.
pub(crate) fn from_leaves(
    segments: &Segments,
    from: u64,
    to: u64,
    keep: &Keep,
) -> Result<ChunkBatches, StoreError> {
    if from >= to {
        return Ok(Box::new(std::iter::empty()));
    }
    let pointer = segments
        .pointer(from)?
        .ok_or_else(|| StoreError::Corrupt(format!("no leaf {from}")))?;
    let mut lines = segments.stream(Some(pointer))?;
    let mut next = from;
    let keep = keep.clone();
    Ok(Box::new(std::iter::from_fn(move || {
        if next >= to {
            return None;
        }
        let mut rows = row::Rows::new(next);
        while rows.len() < LEAF_BATCH_ROWS && next < to {
            let fields = match lines.next() {
                Some(Ok(line)) => light::fields(&line),
                Some(Err(e)) => Err(e),
                None => Err(StoreError::Corrupt(format!("the leaves end before {next}"))),
            };
            match fields {
                Ok(f) if f.index == next => rows.push(
                    f.recorded_at,
                    f.cluster.as_deref(),
                    f.event_type,
                    f.time,
                    &f.row,
                ),
                Ok(f) => {
                    next = to;
                    return Some(Err(StoreError::Corrupt(format!(
                        "leaf {} is where entry {} should be",
                        f.index,
                        rows.next()
                    ))));
                }
                Err(e) => {
                    next = to;
                    return Some(Err(e));
                }
            }
            next += 1;
        }
        Some(
            rows.finish()
                .and_then(|(b, _)| file::views(&keep.apply(&b)?))
                .map_err(|e| StoreError::Corrupt(format!("column rows: {e}"))),
        )
    })))
}

/// The sidecar of one open store.
pub(crate) struct Columns {
    dir: PathBuf,
    /// Files whose hash this process has checked: `(start, blake3)`.
    verified: Mutex<HashSet<(u64, String)>>,
    /// The manifest's state when last read, and its chain: every scan
    /// plans from the chain, and parsing it again (a line per chunk, with
    /// counts of a hundred clusters each) was 6% of a one-cluster query
    /// at 1M. Reused while the file's state is the same: reading and
    /// comparing the bytes instead (220 KB at 10M events) still cost each
    /// query time that grew with the ledger.
    parsed: Mutex<(Option<manifest::State>, Vec<Arc<ColumnChunk>>)>,
    /// The footers of files read (by `(start, blake3)`), at most
    /// [`FOOTERS`] of them.
    footers: Mutex<HashMap<(u64, String), file::Footer>>,
    /// Files kept in memory as checked (none unless a budget is set).
    held: held::Held,
    /// The writer's side, once the open-time check passed.
    sealer: OnceLock<Sealer>,
}

impl Columns {
    pub(crate) fn new(dir: PathBuf) -> Columns {
        Columns {
            dir,
            verified: Mutex::new(HashSet::new()),
            parsed: Mutex::new((None, Vec::new())),
            footers: Mutex::new(HashMap::new()),
            held: held::Held::default(),
            sealer: OnceLock::new(),
        }
    }

    /// Keeps the files read from now on in memory, within
    /// [`held::HELD_BUDGET`] bytes ([`held`]).
    pub(crate) fn hold_files(&self) {
        self.held.set_budget(held::HELD_BUDGET);
    }

    /// Takes the writer's side for a log of `size` entries: a chain that
    /// passes the log or ends at another root is dropped, files cut short
    /// and chunks of an older layout are queued to rebuild, files no line
    /// names are removed. Returns how many chunks were of an older layout.
    pub(crate) fn start_writer(
        &self,
        segments: Segments,
        tree: TreeFiles,
        size: u64,
    ) -> Result<u64, StoreError> {
        fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        let loaded = manifest::load(&self.dir)?;
        let mut chain = loaded.chain;
        let mut untidy = loaded.untidy;
        if let Some(last) = chain.last() {
            let ours = last.end() <= size
                && merkle::to_hex(&merkle::root_at(last.end(), &mut |id| tree.read(id))?)
                    == last.root;
            if !ours {
                chain.clear();
                untidy = true;
            }
        }
        let named: HashSet<PathBuf> = chain.iter().map(|c| c.path(&self.dir)).collect();
        for entry in fs::read_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))? {
            let path = entry.map_err(|e| StoreError::io(&self.dir, e))?.path();
            let chunk_file = matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("parquet" | "tmp")
            );
            if chunk_file && !named.contains(&path) {
                fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
            }
        }
        if untidy {
            manifest::rewrite(&self.dir, &chain)?;
        }
        let older = chain.iter().filter(|c| c.layout != LAYOUT).count() as u64;
        let damaged = chain
            .iter()
            .filter(|c| c.layout != LAYOUT || file_len(&c.path(&self.dir)) != Some(c.bytes))
            .map(|c| (c.start, c.end()))
            .collect();
        let last = chain.last().map(|c| (c.start, c.end()));
        let sealer = Sealer::new(self.dir.clone(), segments, tree, CHUNK_ROWS, last, damaged);
        let _ = self.sealer.set(sealer);
        Ok(older)
    }

    /// The writer's side, if this process writes.
    pub(crate) fn sealer(&self) -> Option<&Sealer> {
        self.sealer.get()
    }

    /// The chain of chunks within the first `size` entries.
    pub(crate) fn chunks(&self, size: u64) -> Result<Vec<Arc<ColumnChunk>>, StoreError> {
        // The state before the bytes: a change in between is read now,
        // and read again next time.
        let state = manifest::state(&self.dir)?;
        let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        if parsed.0 != state {
            let chain = manifest::parse(&manifest::read(&self.dir)?).chain;
            *parsed = (state, chain.into_iter().map(Arc::new).collect());
        }
        Ok(parsed
            .1
            .iter()
            .filter(|c| c.end() <= size)
            .cloned()
            .collect())
    }

    /// The batches of `chunk` with `columns` (positions in [`COLUMNS`]),
    /// the rows `keep` keeps; `None` when its file is not the one the
    /// manifest names (the writer then builds it again).
    ///
    /// The first read of a file in a process hashes it whole; later reads
    /// of the same file (same name, length and manifest hash) read only
    /// its footer and the projected columns.
    pub(crate) fn read(
        &self,
        chunk: &ColumnChunk,
        columns: &[usize],
        keep: &Keep,
    ) -> Result<Option<ChunkBatches>, StoreError> {
        if chunk.layout != LAYOUT {
            if let Some(s) = self.sealer() {
                s.rebuild(chunk.start, chunk.end());
            }
            return Ok(None);
        }
        let path = chunk.path(&self.dir);
        let key = (chunk.start, chunk.blake3.clone());
        if let Some(bytes) = self.held.get(&key) {
            let footer = self.footer(&key, &bytes)?;
            return Ok(Some(file::decode(bytes, &footer, columns, keep)?));
        }
        // A file checked earlier is read by pages, unless it is to be held.
        let known = self.lock_verified().contains(&key) && !self.held.holding();
        if known {
            let opened = fs::File::open(&path)
                .ok()
                .filter(|f| f.metadata().is_ok_and(|m| m.len() == chunk.bytes));
            if let Some(f) = opened {
                let f = file::Pread::new(f, chunk.bytes);
                let footer = self.footer(&key, &f)?;
                return Ok(Some(file::decode(f, &footer, columns, keep)?));
            }
        }
        let bytes = file::read_checked(&path, &chunk.blake3);
        let Some(bytes) = bytes.filter(|b| b.len() as u64 == chunk.bytes) else {
            self.lock_verified().remove(&key);
            // Rebuilt only if the manifest still names it: a short chunk
            // just replaced by a whole one is gone, not damaged.
            let current = manifest::load(&self.dir)?.chain.contains(chunk);
            if let (Some(s), true) = (self.sealer(), current) {
                s.rebuild(chunk.start, chunk.end());
            }
            return Ok(None);
        };
        let footer = self.footer(&key, &bytes)?;
        self.lock_verified().insert(key.clone());
        if self.held.holding() {
            self.held.put(key, bytes.clone());
        }
        Ok(Some(file::decode(bytes, &footer, columns, keep)?))
    }

    /// The footer of the checked file `key` (`(start, blake3)`), read
    /// from `source` unless kept from an earlier read.
    fn footer<R: parquet::file::reader::ChunkReader>(
        &self,
        key: &(u64, String),
        source: &R,
    ) -> Result<file::Footer, StoreError> {
        let lock = || self.footers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = lock().get(key) {
            return Ok(f.clone());
        }
        let footer = file::Footer::load(source)?;
        let mut footers = lock();
        if footers.len() >= FOOTERS {
            footers.clear();
        }
        footers.insert(key.clone(), footer.clone());
        Ok(footer)
    }

    fn lock_verified(&self) -> std::sync::MutexGuard<'_, HashSet<(u64, String)>> {
        self.verified.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Empties the sidecar (a rebuild of every index).
    pub(crate) fn clear(&self) -> Result<(), StoreError> {
        if let Some(s) = self.sealer() {
            s.reset(0);
        }
        manifest::rewrite(&self.dir, &[])?;
        for entry in fs::read_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))? {
            let path = entry.map_err(|e| StoreError::io(&self.dir, e))?.path();
            if path.extension().and_then(|e| e.to_str()) == Some("parquet") {
                fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
            }
        }
        self.lock_verified().clear();
        self.held.clear();
        self.footers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests;

fn file_len(path: &Path) -> Option<u64> {
    fs::metadata(path).ok().map(|m| m.len())
}
