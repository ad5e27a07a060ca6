//! The writer's side: the chunk being filled by commits, and the thread
//! that writes chunks.
//!
//! Commits add their rows to memory (`Rows`); when a chunk's worth is
//! there, it is handed to one background thread, which encodes it, writes
//! the file and adds its manifest line. Rows a process did not see commit
//! (those before it opened, or a whole range to build or rebuild) are read
//! back from the leaves by the same thread. Rows in memory that no chunk
//! holds yet are simply lost with the process: the next writer reads them
//! from the leaves. Chunks built from memory go first, so memory holds at
//! most about one chunk however far a rebuild is behind; a closing store
//! finishes those and abandons the rest (the next writer resumes it).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;

use super::file;
use super::light;
use super::manifest::{self, ColumnChunk};
use super::row::{self, Rows, Stats};
use crate::leaves::Segments;
use crate::merkle;
use crate::tree::TreeFiles;
use crate::StoreError;

/// Rows read back from the leaves between checks for a close.
const CHECK_EVERY: u64 = 4096;

/// The sealer of one writer.
pub(crate) struct Sealer {
    shared: Arc<Shared>,
    /// The chunk being filled: where it starts, and the rows commits gave
    /// it (from `rows.start`; rows before that are read from the leaves).
    filling: Mutex<Option<(u64, Rows)>>,
    /// Rows per chunk.
    chunk_rows: AtomicU64,
    /// The chain's last chunk when this writer opened (until a reset).
    last: Mutex<Option<(u64, u64)>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    dir: PathBuf,
    segments: Segments,
    tree: TreeFiles,
    queue: Mutex<Queue>,
    /// Signalled when work arrives or the store closes.
    work: Condvar,
    /// Signalled when the queue drains.
    idle: Condvar,
}

#[derive(Default)]
struct Queue {
    /// Chunks with rows in memory (`(start, rows)`).
    sealed: VecDeque<(u64, Rows)>,
    /// Ranges to build from the leaves alone.
    build: VecDeque<(u64, u64)>,
    busy: bool,
    closing: bool,
    /// The first failure since the last wait.
    failed: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Sealer {
    /// A sealer after the chain whose last chunk is `last` (`start..end`);
    /// `damaged` chunks (their files cut or gone) are queued to rebuild.
    pub(crate) fn new(
        dir: PathBuf,
        segments: Segments,
        tree: TreeFiles,
        chunk_rows: u64,
        last: Option<(u64, u64)>,
        damaged: Vec<(u64, u64)>,
    ) -> Sealer {
        let shared = Arc::new(Shared {
            dir,
            segments,
            tree,
            queue: Mutex::new(Queue {
                build: damaged.into(),
                ..Queue::default()
            }),
            work: Condvar::new(),
            idle: Condvar::new(),
        });
        let sealer = Sealer {
            shared,
            filling: Mutex::new(None),
            chunk_rows: AtomicU64::new(chunk_rows.max(1)),
            last: Mutex::new(last),
            thread: Mutex::new(None),
        };
        *sealer.lock_filling() = Some(sealer.resume());
        // Chunks to write again start at once (a writer that closes first
        // leaves the rest to the next one).
        if !sealer.shared.lock().build.is_empty() {
            sealer.wake();
        }
        sealer
    }

    /// Where the next chunk starts: after the last one, or at its start
    /// when it is short (a writer closed mid-chunk), to fill it up.
    fn resume(&self) -> (u64, Rows) {
        let start = match *self.lock_last() {
            Some((start, end)) if end - start < self.chunk_rows() => start,
            Some((_, end)) => end,
            None => 0,
        };
        (start, Rows::new(start))
    }

    /// Sets the rows per chunk (tests use small chunks), before the first
    /// commit.
    pub(crate) fn set_chunk_rows(&self, rows: u64) {
        self.chunk_rows.store(rows.max(1), Ordering::Relaxed);
        let mut filling = self.lock_filling();
        if filling.as_ref().is_some_and(|(_, r)| r.len() == 0) {
            *filling = Some(self.resume());
        }
    }

    fn chunk_rows(&self) -> u64 {
        self.chunk_rows.load(Ordering::Relaxed)
    }

    /// Forgets every chunk: the next ones start at `covered` (the sidecar
    /// was emptied).
    pub(crate) fn reset(&self, covered: u64) {
        self.shared.lock().build.clear();
        *self.lock_last() = None;
        *self.lock_filling() = Some((covered, Rows::new(covered)));
    }

    /// Starts building the chunks a log of `size` entries is missing,
    /// behind what commits add: the whole ones, and the rows past them as
    /// a short chunk when they are at least 1/16 of one (unless that short
    /// chunk is already the last); those rows are read back again when
    /// their chunk fills.
    pub(crate) fn catch_up(&self, size: u64) {
        let mut filling = self.lock_filling();
        let Some((start, rows)) = filling.as_mut() else {
            return;
        };
        if rows.len() > 0 || rows.start >= size {
            return; // already filling from commits, or nothing to do
        }
        let mut queued = self.catch_up_locked(start, rows, size);
        // The part of a chunk past them, as a short chunk (as a writer
        // writes on close), so that scans do not decode it until commits
        // fill the chunk; the chunk then replaces it.
        let written = *self.lock_last() == Some((*start, size));
        if size - *start >= (self.chunk_rows() / 16).max(1) && !written {
            self.shared.lock().build.push_back((*start, size));
            queued = true;
        }
        if queued {
            drop(filling);
            self.wake();
        }
    }

    /// Adds committed rows `first..` (one per item of `facts`).
    pub(crate) fn committed<'a>(
        &self,
        first: u64,
        recorded_at: annal_schemas::Timestamp,
        facts: impl Iterator<Item = &'a crate::index::Facts>,
    ) {
        let mut filling = self.lock_filling();
        let Some((start, rows)) = filling.as_mut() else {
            return;
        };
        let mut queued = false;
        if rows.len() == 0 && rows.start < first {
            // Commits this process did not add (none yet): read back.
            queued = self.catch_up_locked(start, rows, first);
        }
        if rows.next() != first {
            // Out of step (a commit whose rows never arrived): the rows
            // from here are memory's, those before read back.
            *rows = Rows::new(first);
        }
        let mut full = Vec::new();
        for f in facts {
            rows.push(
                recorded_at,
                f.cluster.as_deref(),
                f.event_type,
                f.time,
                &f.row,
            );
            if rows.next() - *start >= self.chunk_rows() {
                let next = rows.next();
                let done = std::mem::replace(rows, Rows::new(next));
                full.push((std::mem::replace(start, next), done));
            }
        }
        drop(filling);
        let sealed = !full.is_empty();
        self.shared.lock().sealed.extend(full);
        if queued || sealed {
            self.wake();
        }
    }

    /// Queues builds of the whole chunks from `start` below `size`; the
    /// chunk being filled then takes memory's rows from `size`. Whether
    /// anything was queued.
    fn catch_up_locked(&self, start: &mut u64, rows: &mut Rows, size: u64) -> bool {
        let mut ranges = Vec::new();
        let n = self.chunk_rows();
        while *start + n <= size {
            ranges.push((*start, *start + n));
            *start += n;
        }
        *rows = Rows::new(size);
        let queued = !ranges.is_empty();
        self.shared.lock().build.extend(ranges);
        queued
    }

    /// Queues the chunk `start..end` to be built again from the leaves (a
    /// read found its file damaged).
    pub(crate) fn rebuild(&self, start: u64, end: u64) {
        let mut q = self.shared.lock();
        if !q.build.contains(&(start, end)) {
            q.build.push_back((start, end));
        }
        drop(q);
        self.wake();
    }

    /// Waits until every queued chunk is written; the first failure since
    /// the last wait, if any.
    pub(crate) fn wait(&self) -> Result<(), StoreError> {
        self.wake();
        let mut q = self.shared.lock();
        while !q.closing && (q.busy || !q.sealed.is_empty() || !q.build.is_empty()) {
            q = self.shared.idle.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        match q.failed.take() {
            Some(reason) => Err(StoreError::Corrupt(format!("column sidecar: {reason}"))),
            None => Ok(()),
        }
    }

    /// Stops the thread as a crash would: chunks not yet written are lost
    /// (tests).
    #[cfg(test)]
    pub(crate) fn abandon(&self) {
        *self.lock_filling() = None;
        let mut q = self.shared.lock();
        q.sealed.clear();
        q.build.clear();
        drop(q);
        self.close();
    }

    /// Writes the chunks whose rows are in memory (the one being filled
    /// too, short, when it holds 1/16 of a chunk) and stops the thread;
    /// builds from the leaves are left to the next writer.
    pub(crate) fn close(&self) {
        let filling = self.lock_filling().take();
        if let Some((start, rows)) = filling {
            if rows.len() > 0 && rows.next() - start >= (self.chunk_rows() / 16).max(1) {
                self.shared.lock().sealed.push_back((start, rows));
                // The thread starts on the first work: a writer that never
                // filled a chunk has none yet.
                self.wake();
            }
        }
        self.shared.lock().closing = true;
        self.shared.work.notify_all();
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        *self.lock_filling() = None;
    }

    fn lock_last(&self) -> MutexGuard<'_, Option<(u64, u64)>> {
        self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_filling(&self) -> MutexGuard<'_, Option<(u64, Rows)>> {
        self.filling.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the thread on the first work.
    fn wake(&self) {
        let mut thread = self.thread.lock().unwrap_or_else(|p| p.into_inner());
        if thread.is_none() && !self.shared.lock().closing {
            let shared = self.shared.clone();
            match std::thread::Builder::new()
                .name("annal-columns".into())
                .spawn(move || shared.run())
            {
                Ok(handle) => *thread = Some(handle),
                // No thread: nothing is written (scans read the leaves),
                // and a wait does not wait for it.
                Err(e) => {
                    let mut q = self.shared.lock();
                    q.sealed.clear();
                    q.build.clear();
                    q.failed
                        .get_or_insert_with(|| format!("no thread to write chunks: {e}"));
                }
            }
        }
        self.shared.work.notify_all();
    }
}

impl Drop for Sealer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn run(&self) {
        loop {
            let mut q = self.lock();
            let job = loop {
                if let Some(s) = q.sealed.pop_front() {
                    break Some(Ok(s));
                }
                if q.closing {
                    break None;
                }
                if let Some(b) = q.build.pop_front() {
                    break Some(Err(b));
                }
                q.busy = false;
                self.idle.notify_all();
                q = self.work.wait(q).unwrap_or_else(|p| p.into_inner());
            };
            let Some(job) = job else {
                q.busy = false;
                self.idle.notify_all();
                return;
            };
            q.busy = true;
            drop(q);
            let result = match job {
                Ok((start, rows)) => self.seal(start, Some(rows)),
                Err((start, end)) => self.build(start, end),
            };
            if let Err(e) = result {
                let mut q = self.lock();
                q.failed.get_or_insert_with(|| e.to_string());
            }
        }
    }

    fn closing(&self) -> bool {
        self.lock().closing
    }

    /// Builds `start..end` from the leaves (unless the store closes first).
    fn build(&self, start: u64, end: u64) -> Result<(), StoreError> {
        self.seal_range(start, end, None)
    }

    /// Writes the chunk from `start` whose rows from `rows.start` on are
    /// in memory.
    fn seal(&self, start: u64, rows: Option<Rows>) -> Result<(), StoreError> {
        let end = rows.as_ref().map_or(start, Rows::next);
        self.seal_range(start, end, rows)
    }

    fn seal_range(&self, start: u64, end: u64, memory: Option<Rows>) -> Result<(), StoreError> {
        let from_leaves = memory.as_ref().map_or(end, |r| r.start);
        let must_finish = memory.is_some();
        let mut parts: Vec<(RecordBatch, Stats)> = Vec::new();
        if from_leaves > start {
            let Some(read) = self.read_back(start, from_leaves, must_finish)? else {
                return Ok(()); // closing: the next writer builds it
            };
            parts.push(read);
        }
        if let Some(rows) = memory {
            if rows.len() > 0 {
                parts.push(rows.finish().map_err(arrow_corrupt)?);
            }
        }
        // One part (the usual case: a chunk of memory's rows) is written
        // as it is, not copied.
        let batch = match &parts[..] {
            [(only, _)] => only.clone(),
            _ => arrow_select::concat::concat_batches(&row::schema(), parts.iter().map(|(b, _)| b))
                .map_err(arrow_corrupt)?,
        };
        if batch.num_rows() as u64 != end - start {
            return Err(StoreError::Corrupt(format!(
                "chunk {start}..{end} has {} rows",
                batch.num_rows()
            )));
        }
        let stats = parts
            .into_iter()
            .map(|(_, s)| s)
            .fold(Stats::default(), Stats::merge);
        let bytes = file::encode(&batch)?;
        let root = merkle::root_at(end, &mut |id| self.tree.read(id))?;
        let chunk = ColumnChunk {
            start,
            rows: end - start,
            bytes: bytes.len() as u64,
            blake3: merkle::to_hex(blake3::hash(&bytes).as_bytes()),
            root: merkle::to_hex(&root),
            time: stats.time,
            recorded: stats.recorded,
            clusters: stats.clusters,
            types: stats.types,
            layout: manifest::LAYOUT,
        };
        let path = chunk.path(&self.dir);
        file::write(&path, &bytes)?;
        manifest::append(&self.dir, &chunk)?;
        // The short chunk this one replaces, if any: a reader that has not
        // opened it yet reads those entries from the leaves.
        let prefix = format!("{start:020}-");
        for entry in std::fs::read_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))? {
            let old = entry.map_err(|e| StoreError::io(&self.dir, e))?.path();
            let replaced = old != path
                && old.extension().is_some_and(|e| e == "parquet")
                && old
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix));
            if replaced {
                let _ = std::fs::remove_file(&old);
            }
        }
        Ok(())
    }

    /// Rows `start..end` read from the leaves; `None` when the store
    /// closes first (unless `must_finish`).
    fn read_back(
        &self,
        start: u64,
        end: u64,
        must_finish: bool,
    ) -> Result<Option<(RecordBatch, Stats)>, StoreError> {
        let pointer = self
            .segments
            .pointer(start)?
            .ok_or_else(|| StoreError::Corrupt(format!("no leaf {start}")))?;
        let mut rows = Rows::new(start);
        for (line, index) in self.segments.stream(Some(pointer))?.zip(start..end) {
            let f = light::fields(&line?)?;
            if f.index != index {
                return Err(StoreError::Corrupt(format!(
                    "leaf {} is where entry {index} should be",
                    f.index
                )));
            }
            rows.push(
                f.recorded_at,
                f.cluster.as_deref(),
                f.event_type,
                f.time,
                &f.row,
            );
            if !must_finish && index % CHECK_EVERY == 0 && self.closing() {
                return Ok(None);
            }
        }
        Ok(Some(rows.finish().map_err(arrow_corrupt)?))
    }
}

fn arrow_corrupt(e: arrow_schema::ArrowError) -> StoreError {
    StoreError::Corrupt(format!("column chunk: {e}"))
}
