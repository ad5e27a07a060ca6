//! The ingest pipeline: read and decode on one thread, commit on another.
//!
//! Decoding (JSON parsing, validation) and committing (canonical encoding,
//! hashing, the sled write and its flush) take similar time, so they overlap
//! on two threads joined by a bounded channel. The channel holds at most two
//! batches, which bounds memory whatever the input size. An HTTP request's
//! body, in memory and bounded, is decoded on the caller's thread and its
//! batches handed to the shared committer without waiting ([`submit`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use std::collections::BTreeMap;

use annal_schemas::Timestamp;
use annal_store::{AppendOutcome, PreparedEvent, Rejection, Store};

use crate::document::{self, Syntax};
use crate::formats::{Context, Output, TimeCounts};
use crate::group_commit::{GroupCommit, Receipt};
use crate::record::Framed;
use crate::yaml::YamlReader;
use crate::{redact, Format, IngestError, Input, RecordReader, Rejected};

/// Tuning and defaults for a run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Envelopes per group commit.
    pub batch_size: usize,
    /// `--cluster`: the cluster of inputs that do not name one.
    pub cluster: Option<String>,
    /// `--time`: valid time for inputs that carry none.
    pub time: Option<Timestamp>,
    /// A top-level list larger than this is streamed item by item
    /// ([`crate::STREAM_LIST_BYTES`]; tests and fuzzing lower it).
    pub stream_lists_over: usize,
    /// Commit through this shared committer (HTTP requests share commits)
    /// instead of appending to the store directly.
    pub group_commit: Option<GroupCommit>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            batch_size: default_batch_size(),
            cluster: None,
            time: None,
            stream_lists_over: crate::STREAM_LIST_BYTES,
            group_commit: None,
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
    /// Records (or list items) rejected, and quarantined.
    pub rejected: u64,
    /// Documents with nothing to record, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Where the first [`MAX_LISTED_SKIPS`] skipped documents are.
    pub skips: Vec<Skip>,
    /// What each input gave, in order.
    pub inputs: Vec<InputTally>,
    /// How each decoded event's valid time was chosen.
    pub times: TimeCounts,
    /// Input bytes read.
    pub bytes: u64,
    /// Group commits made.
    pub batches: u64,
}

/// Skipped documents listed by position in a summary; the rest are counted
/// by reason only (an export of a million unrelated records must not make
/// a summary of a million lines).
pub const MAX_LISTED_SKIPS: usize = 1000;

/// A skipped document: where it is and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skip {
    /// Input name (file path or `-`).
    pub input: String,
    /// Line where the document (or the list holding it) starts.
    pub line: u64,
    /// Why nothing was recorded.
    pub reason: String,
}

/// What one input gave: the check that no file's data is lost unnoticed
/// (an input that gave no event but skipped documents is named).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct InputTally {
    /// Input name (file path or `-`).
    pub input: String,
    /// Records framed.
    pub records: u64,
    /// Events decoded (stored, or found stored already).
    pub events: u64,
    /// Records or items rejected.
    pub rejected: u64,
    /// Documents skipped.
    pub skipped: u64,
}

impl InputTally {
    /// Whether the input was all skips: nothing recorded, nothing
    /// rejected, something skipped.
    pub fn all_skipped(&self) -> bool {
        self.events == 0 && self.rejected == 0 && self.skipped > 0
    }
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
#[derive(Default)]
struct Chunk {
    records: u64,
    events: Vec<PreparedEvent>,
    rejected: Vec<Rejected>,
    skipped: BTreeMap<String, u64>,
    skips: Vec<Skip>,
    inputs: Vec<InputTally>,
    times: TimeCounts,
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
    // Committed events go back to the reader, which allocated them, to be
    // freed there (see `Store::append_consumed`).
    let (spent, spent_rx) = mpsc::channel::<Vec<PreparedEvent>>();
    let reader = Reader::new(format, options, Some(spent_rx));
    let commits = match &options.group_commit {
        Some(shared) => Commits::Shared(shared),
        None => Commits::Store { spent },
    };
    let mut committer = Committer::new(store, format, commits, observer);
    let (tx, rx) = mpsc::sync_channel::<Result<Chunk, IngestError>>(2);
    let counter = Arc::clone(&committer.bytes_read);
    std::thread::scope(|scope| {
        scope.spawn(move || reader.read_all(inputs, counter, |chunk| tx.send(chunk).is_ok()));
        rx.into_iter()
            .try_for_each(|chunk| chunk.and_then(|c| committer.take(c)))
    })?;
    Ok(committer.finish().0)
}

/// Decodes every input on this thread and hands each batch to `commits`
/// without waiting for its commit; [`Submitted::committed`] waits.
///
/// For an input already in memory and bounded (an HTTP request's body):
/// [`run`]'s reader thread overlaps decoding with commits, but a request
/// is one batch, so nothing overlapped, and a thread started and ended per
/// request (800 a second under load) cost more than the decoding. Here the
/// caller's thread is free for the next request's decoding as soon as this
/// one's batches are submitted. Rejections are quarantined before this
/// returns; `observer` hears of no commit.
pub fn submit(
    store: &Store,
    commits: &GroupCommit,
    inputs: Vec<Input>,
    format: Format,
    options: &Options,
    observer: &mut dyn Observer,
) -> Result<Submitted, IngestError> {
    let reader = Reader::new(format, options, None);
    let mut committer = Committer::new(
        store,
        format,
        Commits::Submitted(commits, Vec::new()),
        observer,
    );
    let mut failed = None;
    let counter = Arc::clone(&committer.bytes_read);
    reader.read_all(inputs, counter, |chunk| {
        match chunk.and_then(|c| committer.take(c)) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    });
    let (summary, commits) = committer.finish();
    let receipts = match commits {
        Commits::Submitted(_, receipts) => receipts,
        Commits::Store { .. } | Commits::Shared(_) => Vec::new(),
    };
    match failed {
        // Batches already submitted are committed all the same (a retry
        // finds them as duplicates).
        Some(e) => Err(e),
        None => Ok(Submitted { summary, receipts }),
    }
}

/// Batches handed to the committer, and the totals so far.
#[must_use = "the events are committed only when `committed` answers"]
pub struct Submitted {
    summary: Summary,
    receipts: Vec<Receipt>,
}

impl Submitted {
    /// The run's summary, once every batch's commit is durable.
    pub async fn committed(self) -> Result<Summary, IngestError> {
        let mut summary = self.summary;
        for receipt in self.receipts {
            let outcome = receipt.outcome().await?;
            summary.appended += outcome.appended;
            summary.duplicates += outcome.duplicates;
            summary.batches += 1;
        }
        Ok(summary)
    }
}

/// The committing side: quarantines a chunk's rejections, commits its
/// events, keeps the totals.
struct Committer<'a> {
    store: &'a Store,
    format: Format,
    commits: Commits<'a>,
    observer: &'a mut dyn Observer,
    /// Counted by the reader.
    bytes_read: Arc<AtomicU64>,
    summary: Summary,
}

/// Where a chunk's events are committed.
enum Commits<'a> {
    /// To the store, on this thread; the events then go back to their
    /// reader thread to be freed there (see `Store::append_consumed`).
    Store {
        spent: mpsc::Sender<Vec<PreparedEvent>>,
    },
    /// Through the shared committer, each commit waited for in turn.
    Shared(&'a GroupCommit),
    /// Through the shared committer, the receipts kept for the caller to
    /// wait on later ([`submit`]).
    Submitted(&'a GroupCommit, Vec<Receipt>),
}

impl<'a> Committer<'a> {
    fn new(
        store: &'a Store,
        format: Format,
        commits: Commits<'a>,
        observer: &'a mut dyn Observer,
    ) -> Committer<'a> {
        Committer {
            store,
            format,
            commits,
            observer,
            bytes_read: Arc::default(),
            summary: Summary::default(),
        }
    }

    /// The totals, with the bytes the reader counted, and where the
    /// events went.
    fn finish(self) -> (Summary, Commits<'a>) {
        let mut summary = self.summary;
        summary.bytes = self.bytes_read.load(Ordering::Relaxed);
        (summary, self.commits)
    }

    fn take(&mut self, chunk: Chunk) -> Result<(), IngestError> {
        let summary = &mut self.summary;
        summary.records += chunk.records;
        summary.times.add(&chunk.times);
        for (reason, n) in chunk.skipped {
            *summary.skipped.entry(reason).or_default() += n;
        }
        let room = MAX_LISTED_SKIPS.saturating_sub(summary.skips.len());
        summary.skips.extend(chunk.skips.into_iter().take(room));
        summary.inputs.extend(chunk.inputs);
        let quarantine = self.store.quarantine();
        for r in &chunk.rejected {
            let id = quarantine.put(&Rejection {
                source: &r.source,
                line: r.line,
                format: self.format.name(),
                reason: &r.reason,
                raw: &r.raw,
            })?;
            summary.rejected += 1;
            self.observer.rejected(r, &id);
        }
        if chunk.events.is_empty() {
            if !chunk.rejected.is_empty() {
                self.store.flush()?;
            }
        } else {
            let outcome = match &mut self.commits {
                Commits::Store { spent } => {
                    let outcome = self.store.append_consumed(&chunk.events, &[])?;
                    let _ = spent.send(chunk.events);
                    Some(outcome)
                }
                Commits::Shared(shared) => Some(shared.append(chunk.events)?),
                Commits::Submitted(shared, receipts) => {
                    receipts.push(shared.submit(chunk.events));
                    None
                }
            };
            if let Some(outcome) = outcome {
                summary.appended += outcome.appended;
                summary.duplicates += outcome.duplicates;
                summary.batches += 1;
                self.observer.committed(&outcome);
            }
        }
        self.observer
            .progress(self.bytes_read.load(Ordering::Relaxed));
        Ok(())
    }
}

/// The reader thread's settings.
struct Reader {
    format: Format,
    batch_size: usize,
    options: Options,
    /// Stands in for the file time of stdin.
    started: Timestamp,
    /// Events committed since, to free here: drained at every record, so
    /// that their memory is free before the next batch is decoded into it.
    spent: Option<mpsc::Receiver<Vec<PreparedEvent>>>,
}

impl Reader {
    fn new(
        format: Format,
        options: &Options,
        spent: Option<mpsc::Receiver<Vec<PreparedEvent>>>,
    ) -> Reader {
        Reader {
            format,
            batch_size: options.batch_size.max(1),
            options: options.clone(),
            started: Timestamp::now(),
            spent,
        }
    }

    /// Frames, decodes and batches every input, handing each chunk to
    /// `send`. Stops at the first I/O error (handed on too) or when `send`
    /// says the committer is done.
    fn read_all(
        &self,
        inputs: Vec<Input>,
        counter: Arc<AtomicU64>,
        mut send: impl FnMut(Result<Chunk, IngestError>) -> bool,
    ) {
        let mut chunk = Chunk::default();
        for input in inputs {
            let name = input.name.clone();
            let file_time = input.mtime.unwrap_or(self.started);
            let buffered = input.into_buffered(counter.clone());
            let io_error = |source| IngestError::Io {
                path: PathBuf::from(&name),
                source,
            };
            let (syntax, framer) =
                match frame(self.format, buffered, self.options.stream_lists_over) {
                    Ok(f) => f,
                    Err(e) => {
                        send(Err(io_error(e)));
                        return;
                    }
                };
            let mut ctx = self.options.context(&name, file_time);
            let mut tally = InputTally {
                input: name.clone(),
                ..InputTally::default()
            };
            for framed in framer {
                let framed = match framed {
                    Ok(f) => f,
                    Err(e) => {
                        send(Err(io_error(e)));
                        return;
                    }
                };
                if let Some(spent) = &self.spent {
                    spent.try_iter().for_each(drop);
                }
                chunk.records += 1;
                let mut decoded = Decoded::for_store();
                decode_framed(self.format, framed, syntax, &mut ctx, &mut decoded);
                tally.records += 1;
                tally.events += decoded.prepared.len() as u64;
                tally.rejected += decoded.rejected.len() as u64;
                tally.skipped += decoded.skipped.values().sum::<u64>();
                chunk.add(decoded);
                if chunk.events.len() >= self.batch_size || chunk.rejected.len() >= self.batch_size
                {
                    let full = std::mem::take(&mut chunk);
                    if !send(Ok(full)) {
                        return;
                    }
                }
            }
            chunk.inputs.push(tally);
        }
        if chunk.records > 0 || !chunk.inputs.is_empty() {
            send(Ok(chunk));
        }
    }
}

impl Chunk {
    /// Takes in what one record decoded to (its events encoded already,
    /// on this thread rather than the committing one).
    fn add(&mut self, decoded: Decoded) {
        self.rejected.extend(decoded.rejected);
        for (reason, n) in decoded.skipped {
            *self.skipped.entry(reason).or_default() += n;
        }
        let room = MAX_LISTED_SKIPS.saturating_sub(self.skips.len());
        self.skips.extend(decoded.skips.into_iter().take(room));
        self.times.add(&decoded.times);
        self.events.extend(decoded.prepared);
    }
}

impl Options {
    /// The decoding context for input `name`.
    fn context<'a>(&'a self, name: &'a str, file_time: Timestamp) -> Context<'a> {
        let mut ctx = Context::new(name, file_time);
        ctx.cluster = self.cluster.as_deref();
        ctx.time = self.time;
        ctx
    }
}

/// Decodes one framed record into `out`: events, rejections (with
/// redacted raw bytes, naming the line) and skips.
fn decode_framed(
    format: Format,
    framed: Framed,
    syntax: Syntax,
    ctx: &mut Context<'_>,
    out: &mut Decoded,
) {
    let reject = |line: u64, reason: String, raw: Vec<u8>| Rejected {
        source: ctx.input.to_string(),
        line: Some(line),
        reason,
        raw,
    };
    let record = match framed {
        Framed::Record(record) => record,
        Framed::Broken { line, reason, raw } => {
            out.rejected
                .push(reject(line, reason, redact::scrub_text(&raw)));
            return;
        }
    };
    ctx.line = record.line;
    if out.prepare {
        if let Some(event) = format.prepare_envelope(&record, syntax) {
            out.prepared.push(event);
            return;
        }
    }
    let mut decoded = Output::default();
    if let Err(e) = format.decode(&record, syntax, ctx, &mut decoded) {
        out.rejected.push(reject(
            e.line.unwrap_or(record.line),
            e.reason,
            redacted_raw(&record.bytes, syntax),
        ));
        return;
    }
    if out.prepare {
        for event in decoded.events {
            match PreparedEvent::new(&event) {
                Ok(p) => out.prepared.push(p),
                Err(err) => out.rejected.push(reject(
                    record.line,
                    format!("cannot encode canonically: {err}"),
                    serde_json::to_vec(&event).unwrap_or_default(),
                )),
            }
        }
    } else {
        out.events.extend(decoded.events);
    }
    for (reason, item) in decoded.rejected {
        out.rejected.push(reject(
            record.line,
            reason,
            document::to_bytes(&item, syntax),
        ));
    }
    for reason in decoded.skipped {
        if out.skips.len() < MAX_LISTED_SKIPS {
            out.skips.push(Skip {
                input: ctx.input.to_string(),
                line: record.line,
                reason: reason.clone(),
            });
        }
        *out.skipped.entry(reason).or_default() += 1;
    }
    out.times.add(&decoded.times);
}

/// Records out of one input, whatever its syntax.
type Framer<'a> = Box<dyn Iterator<Item = std::io::Result<Framed>> + 'a>;

/// The framer for an input: JSON or YAML as sniffed (envelopes: JSON).
fn frame<'a, R: std::io::BufRead + Send + 'a>(
    format: Format,
    mut input: R,
    stream_lists_over: usize,
) -> std::io::Result<(Syntax, Framer<'a>)> {
    let syntax = if format.reads_yaml() {
        Syntax::sniff(&mut input)?
    } else {
        Syntax::Json
    };
    let framer: Framer<'a> = match syntax {
        Syntax::Json => Box::new(RecordReader::with_list_threshold(input, stream_lists_over)),
        Syntax::Yaml => Box::new(YamlReader::with_list_threshold(input, stream_lists_over)),
    };
    Ok((syntax, framer))
}

/// Everything an in-memory input decodes to: envelopes for `--dry-run`-style
/// checks, tests and the fuzz targets ([`decode_input`]), or events encoded
/// for a store (the pipelines and the Kafka source, [`decode_prepared`]).
#[derive(Debug, Default)]
pub struct Decoded {
    /// Envelopes, redacted and validated.
    pub events: Vec<annal_schemas::Envelope>,
    /// The same, encoded for the log as they were decoded, when decoding
    /// for a store ([`decode_prepared`]); `events` then stays empty.
    pub prepared: Vec<PreparedEvent>,
    /// Whether to fill `prepared` rather than `events`.
    prepare: bool,
    /// Rejections, with redacted raw bytes.
    pub rejected: Vec<Rejected>,
    /// Documents with nothing to record, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Where the first [`MAX_LISTED_SKIPS`] of them are.
    pub skips: Vec<Skip>,
    /// How each event's valid time was chosen.
    pub times: TimeCounts,
}

/// Frames and decodes `bytes` as `format` would be ingested.
pub fn decode_bytes(format: Format, name: &str, bytes: &[u8], options: &Options) -> Decoded {
    decode_input(
        format,
        name,
        bytes,
        options.time.unwrap_or_else(Timestamp::now),
        options,
    )
}

/// [`decode_bytes`] for an input whose own time (a Kafka message's
/// timestamp) is the valid time of last resort, as a file's mtime is.
pub fn decode_input(
    format: Format,
    name: &str,
    bytes: &[u8],
    input_time: Timestamp,
    options: &Options,
) -> Decoded {
    decode_into(Decoded::default(), format, name, bytes, input_time, options)
}

/// [`decode_input`] for a store: each event is encoded as it is decoded
/// (into [`Decoded::prepared`]), most envelopes straight from their bytes.
pub fn decode_prepared(
    format: Format,
    name: &str,
    bytes: &[u8],
    input_time: Timestamp,
    options: &Options,
) -> Decoded {
    decode_into(
        Decoded::for_store(),
        format,
        name,
        bytes,
        input_time,
        options,
    )
}

impl Decoded {
    /// An empty result that encodes events as they come
    /// ([`Decoded::prepared`]).
    fn for_store() -> Decoded {
        Decoded {
            prepare: true,
            ..Decoded::default()
        }
    }
}

fn decode_into(
    mut out: Decoded,
    format: Format,
    name: &str,
    bytes: &[u8],
    input_time: Timestamp,
    options: &Options,
) -> Decoded {
    let mut ctx = options.context(name, input_time);
    // (Bytes that start with `{` are JSON to every format.)
    if let Some(one) = crate::record::single_line(bytes, options.stream_lists_over) {
        decode_framed(format, one, Syntax::Json, &mut ctx, &mut out);
        return out;
    }
    let Ok((syntax, framer)) = frame(format, bytes, options.stream_lists_over) else {
        return out;
    };
    for framed in framer.map_while(Result::ok) {
        decode_framed(format, framed, syntax, &mut ctx, &mut out);
    }
    out
}

/// Decodes one stand-alone record (a quarantined one, on retry): all of it
/// or nothing. The syntax is sniffed from the bytes.
pub fn decode_record(
    format: Format,
    source: &str,
    line: u64,
    bytes: &[u8],
    options: &Options,
) -> Result<Vec<annal_schemas::Envelope>, String> {
    let syntax = if format.reads_yaml() {
        Syntax::sniff(&mut &bytes[..]).map_err(|e| e.to_string())?
    } else {
        Syntax::Json
    };
    let record = crate::Record::new(line, bytes.to_vec());
    let mut ctx = options.context(source, options.time.unwrap_or_else(Timestamp::now));
    ctx.line = line;
    let mut out = Output::default();
    format
        .decode(&record, syntax, &ctx, &mut out)
        .map_err(|e| e.reason)?;
    if let Some((reason, _)) = out.rejected.into_iter().next() {
        return Err(reason);
    }
    Ok(out.events)
}

/// A rejected record's bytes for the quarantine, with secrets redacted:
/// structurally when it parses, textually when it does not. Bytes with
/// nothing to redact are kept as they came.
fn redacted_raw(bytes: &[u8], syntax: Syntax) -> Vec<u8> {
    let parsed = match syntax {
        Syntax::Json => serde_json::from_slice::<serde_json::Value>(bytes).ok(),
        Syntax::Yaml => serde_norway::from_slice::<serde_json::Value>(bytes).ok(),
    };
    match parsed {
        Some(original) => {
            let mut v = original.clone();
            redact::value(&mut v);
            if v == original {
                bytes.to_vec()
            } else {
                document::to_bytes(&v, syntax)
            }
        }
        None => redact::scrub_text(bytes),
    }
}
