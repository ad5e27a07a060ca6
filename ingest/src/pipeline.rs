//! The ingest pipeline: read and decode on one thread, commit on another.
//!
//! Decoding (JSON parsing, validation) and committing (canonical encoding,
//! hashing, the sled write and its flush) take similar time, so they overlap
//! on two threads joined by a bounded channel. The channel holds at most two
//! batches, which bounds memory whatever the input size.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use annal_store::{AppendOutcome, PreparedEvent, Rejection, Store};

use crate::record::Framed;
use crate::{Format, IngestError, Input, RecordReader, Rejected};

/// Tuning for a run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Envelopes per group commit.
    pub batch_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            batch_size: default_batch_size(),
        }
    }
}

/// 4096 envelopes of ~1 KB is a 4 MB commit: large enough that the flush is
/// amortised, small enough that a crash re-reads little.
pub fn default_batch_size() -> usize {
    4096
}

/// Totals of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records read (valid or not).
    pub records: u64,
    /// Envelopes stored as new leaves.
    pub appended: u64,
    /// Envelopes already stored.
    pub duplicates: u64,
    /// Records rejected (and quarantined).
    pub rejected: u64,
    /// Input bytes read.
    pub bytes: u64,
    /// Group commits made.
    pub batches: u64,
}

/// Hooks for progress and per-record reporting.
pub trait Observer {
    /// Total input bytes read so far.
    fn progress(&mut self, _bytes_read: u64) {}
    /// A record was rejected and stored in quarantine under `quarantine_id`.
    fn rejected(&mut self, _rejected: &Rejected, _quarantine_id: &str) {}
    /// A batch was committed.
    fn committed(&mut self, _outcome: &AppendOutcome) {}
}

impl Observer for () {}

impl<F: FnMut(u64)> Observer for F {
    fn progress(&mut self, bytes_read: u64) {
        self(bytes_read)
    }
}

/// One unit of work from the reader thread.
struct Chunk {
    records: u64,
    events: Vec<PreparedEvent>,
    rejected: Vec<Rejected>,
}

/// Reads every input in order, committing valid envelopes in batches and
/// quarantining the rest.
pub fn run(
    store: &Store,
    inputs: Vec<Input>,
    format: Format,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Summary, IngestError> {
    let batch_size = options.batch_size.max(1);
    let bytes_read = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::sync_channel::<Result<Chunk, IngestError>>(2);
    let mut summary = Summary::default();
    let counter = bytes_read.clone();
    std::thread::scope(|scope| {
        scope.spawn(move || read_all(inputs, format, batch_size, counter, tx));
        for chunk in rx {
            let chunk = chunk?;
            summary.records += chunk.records;
            let quarantine = store.quarantine();
            for r in &chunk.rejected {
                let id = quarantine.put(&Rejection {
                    source: &r.source,
                    line: r.line,
                    format: format.name(),
                    reason: &r.reason,
                    raw: &r.raw,
                })?;
                summary.rejected += 1;
                observer.rejected(r, &id);
            }
            if chunk.events.is_empty() {
                if !chunk.rejected.is_empty() {
                    store.flush()?;
                }
            } else {
                let outcome = store.append_prepared(chunk.events)?;
                summary.appended += outcome.appended;
                summary.duplicates += outcome.duplicates;
                summary.batches += 1;
                observer.committed(&outcome);
            }
            observer.progress(bytes_read.load(Ordering::Relaxed));
        }
        Ok::<(), IngestError>(())
    })?;
    summary.bytes = bytes_read.load(Ordering::Relaxed);
    Ok(summary)
}

/// The reader thread: frame, decode, batch. Stops at the first I/O error
/// (sent to the committer) or when the committer hangs up.
fn read_all(
    inputs: Vec<Input>,
    format: Format,
    batch_size: usize,
    counter: Arc<AtomicU64>,
    tx: mpsc::SyncSender<Result<Chunk, IngestError>>,
) {
    let mut chunk = Chunk {
        records: 0,
        events: Vec::with_capacity(batch_size),
        rejected: Vec::new(),
    };
    for input in inputs {
        let name = input.name.clone();
        for framed in RecordReader::new(input.into_buffered(counter.clone())) {
            let framed = match framed {
                Ok(f) => f,
                Err(source) => {
                    let _ = tx.send(Err(IngestError::Io {
                        path: PathBuf::from(&name),
                        source,
                    }));
                    return;
                }
            };
            chunk.records += 1;
            match framed {
                Framed::Record(record) => match decode_prepared(format, &record) {
                    Ok(events) => chunk.events.extend(events),
                    Err(reason) => chunk.rejected.push(Rejected {
                        source: name.clone(),
                        line: Some(record.line),
                        reason,
                        raw: record.bytes,
                    }),
                },
                Framed::Broken { line, reason, raw } => chunk.rejected.push(Rejected {
                    source: name.clone(),
                    line: Some(line),
                    reason,
                    raw,
                }),
            }
            if chunk.events.len() >= batch_size || chunk.rejected.len() >= batch_size {
                let full = std::mem::replace(
                    &mut chunk,
                    Chunk {
                        records: 0,
                        events: Vec::with_capacity(batch_size),
                        rejected: Vec::new(),
                    },
                );
                if tx.send(Ok(full)).is_err() {
                    return;
                }
            }
        }
    }
    if chunk.records > 0 {
        let _ = tx.send(Ok(chunk));
    }
}

/// Decodes a record and computes each event's canonical bytes, so the
/// committing thread only assembles leaves.
fn decode_prepared(format: Format, record: &crate::Record) -> Result<Vec<PreparedEvent>, String> {
    format
        .decode(record)?
        .into_iter()
        .map(|e| PreparedEvent::new(&e).map_err(|err| format!("cannot encode canonically: {err}")))
        .collect()
}
