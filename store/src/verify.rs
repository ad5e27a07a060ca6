//! Full verification: recompute every leaf, every tree node and the root.
//!
//! This is the auditor's check and it trusts nothing stored but the leaf
//! bytes and the signed checkpoint: each leaf must decode, be canonical, sit
//! at the index it names, hash to the stored leaf hash, and the recomputed
//! tree must reproduce every stored node and the checkpoint root. Memory is
//! O(log n): leaves stream through a [`Frontier`].

use std::borrow::Cow;

use annal_schemas::Timestamp;

use crate::checkpoint::{Checkpoint, NoteVerifier};
use crate::index::{IdDigest, Indexes};
use crate::leaf_check;
use crate::leaves::{LeafPointer, LinePlace, LineStream};
use crate::merkle::{self, Frontier, Hash, NodeId};
use crate::proof::open_with_any;
use crate::record_file::SequentialRecords;
use crate::tree::NodeSpans;
use crate::{Store, StoreError};
use std::sync::mpsc;

/// The outcome of [`Store::verify`].
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// Leaves read.
    pub leaves: u64,
    /// Bytes of leaf data hashed.
    pub bytes: u64,
    /// Recomputed root over all leaves read.
    pub root: Hash,
    /// The signed checkpoint checked against, if any.
    pub checkpoint: Option<Checkpoint>,
    /// The first problem found, if any.
    pub problem: Option<Problem>,
}

/// The first thing found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The first log index affected, when one can be named.
    pub index: Option<u64>,
    /// What is wrong.
    pub reason: String,
}

impl VerifyReport {
    /// Whether the log is intact.
    pub fn is_intact(&self) -> bool {
        self.problem.is_none()
    }
}

impl Store {
    /// Verifies the whole log against the latest signed checkpoint, using
    /// `verifier` (an auditor's own copy of the public key) or else the
    /// store's.
    pub fn verify(&self, verifier: Option<&NoteVerifier>) -> Result<VerifyReport, StoreError> {
        match verifier {
            Some(v) => self.verify_with(std::slice::from_ref(v)),
            None => self.verify_with(&self.verifiers()),
        }
    }

    /// [`Store::verify`] trusting a checkpoint signed by any of `keys`
    /// (an auditor's key and the keys it rotated to).
    pub fn verify_with(&self, keys: &[NoteVerifier]) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport {
            leaves: 0,
            bytes: 0,
            root: merkle::empty_root(),
            checkpoint: None,
            problem: None,
        };
        let fail = |report: &mut VerifyReport, index: Option<u64>, reason: String| {
            report.problem = Some(Problem { index, reason });
        };

        // The anchor: the signed checkpoint.
        let (stored_size, note) = self.commit_record()?;
        let checkpoint = match (note, keys) {
            (None, _) => None,
            (Some(_), []) => {
                fail(
                    &mut report,
                    None,
                    "no verifier key to check the checkpoint with".into(),
                );
                return Ok(report);
            }
            (Some(note), keys) => match open_with_any(keys, &note) {
                Ok(cp) => Some(cp),
                Err(e) => {
                    fail(&mut report, None, format!("checkpoint: {e}"));
                    return Ok(report);
                }
            },
        };
        report.checkpoint = checkpoint.clone();

        // Lines past the committed size are the tail of an interrupted commit
        // (cut off before the next write); they are not part of the log.
        let expected = stored_size.max(checkpoint.as_ref().map_or(0, |c| c.size));
        let mut frontier = Frontier::new();
        let pointers =
            SequentialRecords::open(self.segments().offsets_path(), LeafPointer::ENCODED_LEN)?;
        let (tree, spans) = if expected > 0 {
            let files = self.tree_files();
            (Some(files.scanner()?), Some(files.spans()?))
        } else {
            (None, None)
        };
        // Stage one checks runs of leaves on their own, on every core:
        // each leaf's canonical form, index, place and hash, and every
        // tree node within the run. Stage two takes the runs strictly in
        // log order and checks only what spans them (the system time
        // across their ends, the nodes above them, the checkpoint root),
        // so the first problem reported is still the one at the lowest
        // index.
        let (work_tx, work_rx) = mpsc::sync_channel::<RawChunk>(4);
        let (done_tx, done_rx) = mpsc::sync_channel::<Result<CheckedChunk, StoreError>>(8);
        let lines = self.segments().stream(None)?;
        // The ids the leaves name, against the id index's (read beside).
        // A view has no id index to check: the writer's verify checks it.
        let mut leaf_ids = IdDigest::default();
        let owned = self.beside_writer().is_none();
        let cut = checkpoint.as_ref().map(|c| c.size);
        let index_ids = std::thread::scope(|scope| {
            let index_ids = owned.then(|| scope.spawn(|| self.key_index().id_digest()));
            let errors = done_tx.clone();
            scope.spawn(move || read_chunks(lines, pointers, expected, cut, work_tx, errors));
            let work_rx = std::sync::Arc::new(std::sync::Mutex::new(work_rx));
            for _ in 0..checkers() {
                let (work_rx, done_tx) = (work_rx.clone(), done_tx.clone());
                let spans = spans.as_ref();
                scope.spawn(move || check_chunks(&work_rx, &done_tx, spans));
            }
            drop(done_tx);
            for chunk in in_log_order(done_rx) {
                let chunk = chunk?;
                leaf_ids.merge(chunk.ids);
                for (subtree, hash) in chunk.subtrees {
                    let last = subtree.first_leaf() + (1u64 << subtree.level) - 1;
                    let mut completed = Vec::new();
                    frontier.push_subtree(subtree.level, hash, |id, h| completed.push((id, *h)));
                    for (node, hash) in completed {
                        let stored = match tree.as_ref().map(|t| t.read(node)).transpose() {
                            Ok(s) => s,
                            Err(StoreError::Corrupt(_)) => None,
                            Err(e) => return Err(e),
                        };
                        if let Err(reason) =
                            check_node(node, &hash, stored.as_ref().map(|h| &h[..]))
                        {
                            report.leaves = last;
                            fail(&mut report, Some(last), reason);
                            return Ok(None);
                        }
                    }
                    if let Some(cp) = &checkpoint {
                        if frontier.size() == cp.size && frontier.root() != cp.root {
                            fail(
                                &mut report,
                                None,
                                format!("the tree of the first {} entries does not match the signed checkpoint root", cp.size),
                            );
                            return Ok(None);
                        }
                    }
                }
                report.leaves += chunk.leaves;
                report.bytes += chunk.bytes;
                if let Some((index, reason)) = chunk.problem {
                    fail(&mut report, Some(index), reason);
                    return Ok(None);
                }
            }
            index_ids
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .transpose()
        })?;
        if report.problem.is_some() {
            return Ok(report);
        }
        if let Some(index_ids) = index_ids {
            if index_ids != leaf_ids {
                let (index, reason) = self.first_id_problem(expected, index_ids, leaf_ids)?;
                fail(&mut report, index, reason);
                return Ok(report);
            }
        }
        report.root = frontier.root();
        let size = frontier.size();
        match &checkpoint {
            Some(cp) if cp.size == 0 && cp.root != merkle::empty_root() => {
                fail(
                    &mut report,
                    None,
                    "empty checkpoint with a non-empty root".into(),
                );
            }
            None if size > 0 => {
                fail(
                    &mut report,
                    None,
                    format!("{size} entries but no signed checkpoint"),
                );
            }
            _ if stored_size < size => {
                fail(
                    &mut report,
                    Some(stored_size),
                    format!("the index records size {stored_size} but the signed checkpoint covers {size}"),
                );
            }
            _ => {}
        }
        Ok(report)
    }
}

/// Leaves per run of stage one: 2^10, so a run that starts at a multiple
/// of it is one subtree, whose nodes its checker can check alone.
const CHUNK: u64 = 1024;

/// Threads checking leaves: one per core (at least two, so reading and
/// checking overlap).
fn checkers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// The lines of leaves `first..`, read into one buffer, with their stored
/// pointers, and what ended the log early, if anything.
struct RawChunk {
    seq: u64,
    first: u64,
    /// The lines back to back, without their newlines.
    bytes: Vec<u8>,
    lines: Vec<LinePlace>,
    /// The stored pointer records of these leaves (fewer when the
    /// offsets file ends early).
    pointers: Vec<u8>,
    end: Option<String>,
}

/// A run checked on its own.
struct CheckedChunk {
    seq: u64,
    first: u64,
    /// Leaves that passed, and their bytes.
    leaves: u64,
    bytes: u64,
    /// The aligned subtrees of the leaves that passed, whose every node
    /// was checked: the roots stage two pushes.
    subtrees: Vec<(NodeId, Hash)>,
    /// The first problem, at the index it names; nothing after it was
    /// checked.
    problem: Option<(u64, String)>,
    /// The (id, index) pairs of its leaves.
    ids: IdDigest,
    first_recorded: Option<Timestamp>,
    last_recorded: Option<Timestamp>,
}

/// Reads the leaf lines and their pointers in order, in runs that end at
/// every multiple of [`CHUNK`] and at `cut` (the checkpoint's size, where
/// stage two compares roots).
fn read_chunks(
    mut lines: LineStream,
    mut pointers: SequentialRecords,
    expected: u64,
    cut: Option<u64>,
    work: mpsc::SyncSender<RawChunk>,
    errors: mpsc::SyncSender<Result<CheckedChunk, StoreError>>,
) {
    let mut index = 0u64;
    let mut seq = 0u64;
    while index < expected {
        let mut end = (index / CHUNK + 1) * CHUNK;
        if let Some(cut) = cut.filter(|c| *c > index) {
            end = end.min(cut);
        }
        let end = end.min(expected);
        let mut chunk = RawChunk {
            seq,
            first: index,
            bytes: Vec::with_capacity(1 << 20),
            lines: Vec::with_capacity((end - index) as usize),
            pointers: Vec::new(),
            end: None,
        };
        while index < end {
            let start = chunk.bytes.len();
            match lines.next_into(&mut chunk.bytes) {
                None => {
                    chunk.end = Some(format!("entry {index} is missing from the leaf files"));
                }
                Some(Err(e)) => {
                    let _ = errors.send(Err(e));
                    return;
                }
                Some(Ok(line)) if !line.terminated => {
                    chunk.bytes.truncate(start);
                    chunk.end = Some(format!("entry {index} is cut short"));
                }
                Some(Ok(line)) => chunk.lines.push(line),
            }
            if chunk.end.is_some() {
                break;
            }
            index += 1;
        }
        match pointers.next_records(chunk.lines.len()) {
            Ok(records) => chunk.pointers = records,
            Err(e) => {
                let _ = errors.send(Err(e));
                return;
            }
        }
        let stop = chunk.end.is_some();
        if work.send(chunk).is_err() || stop {
            return;
        }
        seq += 1;
    }
}

/// Checks runs until there are none.
fn check_chunks(
    work: &std::sync::Mutex<mpsc::Receiver<RawChunk>>,
    done: &mpsc::SyncSender<Result<CheckedChunk, StoreError>>,
    spans: Option<&NodeSpans>,
) {
    loop {
        let next = work.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(chunk) = next else { return };
        if done.send(check_chunk(chunk, spans)).is_err() {
            return;
        }
    }
}

/// Stage one for one run: every leaf in order (canonical, its index, its
/// system time, its place), then every tree node within the run, as the
/// leaf that completes it comes.
fn check_chunk(chunk: RawChunk, spans: Option<&NodeSpans>) -> Result<CheckedChunk, StoreError> {
    let count = chunk.lines.len() as u64;
    let mut out = CheckedChunk {
        seq: chunk.seq,
        first: chunk.first,
        leaves: 0,
        bytes: 0,
        subtrees: Vec::new(),
        problem: None,
        ids: IdDigest::default(),
        first_recorded: None,
        last_recorded: None,
    };
    let stored = match spans {
        Some(spans) if count > 0 => Some(spans.under(chunk.first, count)?),
        _ => None,
    };
    let mut subtrees = merkle::aligned_subtrees(chunk.first, chunk.first + count).into_iter();
    let mut subtree = subtrees.next();
    let mut local = Frontier::new();
    let mut records = chunk.pointers.chunks_exact(LeafPointer::ENCODED_LEN);
    // Leaves of one commit share their system time: its text is parsed
    // once.
    let mut recorded_text: Option<&[u8]> = None;
    let mut at = 0usize;
    for (place, index) in chunk.lines.iter().zip(chunk.first..) {
        let bytes = &chunk.bytes[at..at + place.len];
        at += place.len;
        let id = match check_leaf(index, bytes, &mut recorded_text, &mut out.last_recorded) {
            Ok(id) => id,
            Err(reason) => {
                out.problem = Some((index, reason));
                return Ok(out);
            }
        };
        out.first_recorded = out.first_recorded.or(out.last_recorded);
        out.ids.add(id.as_bytes(), index);
        let pointer = records.next().and_then(LeafPointer::decode);
        let Some(pointer) = pointer else {
            out.problem = Some((index, format!("entry {index} has no leaf pointer")));
            return Ok(out);
        };
        if (pointer.segment, pointer.offset, pointer.len as usize)
            != (place.segment, place.offset, place.len)
        {
            out.problem = Some((
                index,
                format!("entry {index} is not where the index says it is"),
            ));
            return Ok(out);
        }
        // The subtree this leaf is in: node ids within it are relative to
        // its first leaf, a multiple of its size.
        let Some(current) = subtree else {
            break; // cannot happen: the subtrees cover the run
        };
        let base = current.first_leaf();
        let mut problem = None;
        local.push(merkle::leaf_hash(bytes), |id, hash| {
            let id = NodeId {
                level: id.level,
                index: id.index + (base >> id.level),
            };
            if problem.is_none() {
                let found = stored.as_ref().and_then(|s| s.get(id));
                problem = check_node(id, hash, found).err();
            }
        });
        if let Some(reason) = problem {
            out.problem = Some((index, reason));
            return Ok(out);
        }
        out.leaves += 1;
        out.bytes += place.len as u64;
        if local.size() == 1u64 << current.level {
            let root = local.perfect_root().unwrap_or_default();
            out.subtrees.push((current, root));
            local = Frontier::new();
            subtree = subtrees.next();
        }
    }
    if let Some(end) = chunk.end {
        out.problem = Some((chunk.first + count, end));
    }
    Ok(out)
}

/// The checked runs in log order (they finish in any order), with the
/// system time checked across their ends.
fn in_log_order(
    done: mpsc::Receiver<Result<CheckedChunk, StoreError>>,
) -> impl Iterator<Item = Result<CheckedChunk, StoreError>> {
    let mut waiting: std::collections::BTreeMap<u64, CheckedChunk> = Default::default();
    let mut next = 0u64;
    let mut last: Option<Timestamp> = None;
    std::iter::from_fn(move || loop {
        if let Some(mut chunk) = waiting.remove(&next) {
            next += 1;
            if let (Some(prev), Some(first)) = (last, chunk.first_recorded) {
                if first < prev {
                    let index = chunk.first;
                    chunk.leaves = 0;
                    chunk.bytes = 0;
                    chunk.subtrees.clear();
                    chunk.ids = IdDigest::default();
                    chunk.problem = Some((
                        index,
                        format!("entry {index} has recorded_at before its predecessor"),
                    ));
                    return Some(Ok(chunk));
                }
            }
            last = chunk.last_recorded.or(last);
            return Some(Ok(chunk));
        }
        match done.recv() {
            Ok(Ok(chunk)) => {
                waiting.insert(chunk.seq, chunk);
            }
            Ok(Err(e)) => return Some(Err(e)),
            Err(_) => return None,
        }
    })
}

impl Store {
    /// The id index and the leaves disagree (their digests differ): the
    /// first entry whose id the index does not map to it, found by looking
    /// each id up in log order, or else what the index holds beyond the
    /// log's ids.
    fn first_id_problem(
        &self,
        expected: u64,
        index_ids: IdDigest,
        leaf_ids: IdDigest,
    ) -> Result<(Option<u64>, String), StoreError> {
        for leaf in self.leaves(0, expected) {
            let (index, bytes) = leaf?;
            let Ok(facts) = leaf_check::check(&bytes) else {
                continue; // stage one passed it: cannot happen
            };
            if let Err(reason) = check_id_index(self.key_index(), index, &facts.id) {
                return Ok((Some(index), reason));
            }
        }
        Ok((
            None,
            format!(
                "the id index holds {} ids, the log {}: it maps ids the log does not hold; `annal reindex` rebuilds it",
                index_ids.count, leaf_ids.count
            ),
        ))
    }
}

/// Checks one leaf on its own: is canonical (read from the bytes, without
/// decoding it into a tree: see [`crate::leaf_check`]), names its own
/// index, and its system time does not go backwards (`recorded_text` is
/// the previous leaf's, whose parse is `last_recorded`). Returns its id.
fn check_leaf<'a>(
    index: u64,
    bytes: &'a [u8],
    recorded_text: &mut Option<&'a [u8]>,
    last_recorded: &mut Option<Timestamp>,
) -> Result<Cow<'a, str>, String> {
    let facts = leaf_check::check(bytes)
        .map_err(|e| format!("entry {index} is not in canonical (RFC 8785) form: {e}"))?;
    if facts.index != index {
        return Err(format!(
            "entry {index} holds the leaf of index {} (reordered)",
            facts.index
        ));
    }
    if *recorded_text != Some(facts.recorded_at.as_bytes()) {
        let recorded_at: Timestamp = facts
            .recorded_at
            .parse()
            .map_err(|e| format!("entry {index}: recorded_at {:?}: {e}", facts.recorded_at))?;
        if last_recorded.is_some_and(|last| recorded_at < last) {
            return Err(format!(
                "entry {index} has recorded_at before its predecessor"
            ));
        }
        *last_recorded = Some(recorded_at);
        // Borrowed text (no escapes in a timestamp) is kept for the
        // comparison; an owned one is parsed every time.
        *recorded_text = match facts.recorded_at {
            Cow::Borrowed(text) => Some(text.as_bytes()),
            Cow::Owned(_) => None,
        };
    }
    Ok(facts.id)
}

/// The id index must map every stored id to its own entry: a missing or
/// wrong mapping would let a redelivered event be appended a second time.
fn check_id_index(ids: &Indexes, index: u64, id: &str) -> Result<(), String> {
    let mapped = ids.id(id).map_err(|e| e.to_string())?;
    match mapped {
        Some(i) if i == index => Ok(()),
        Some(i) => Err(format!(
            "entry {index}: the id index maps its id {id:?} to entry {i} (a duplicate id?); `annal reindex` rebuilds it"
        )),
        None => Err(format!(
            "entry {index}: its id {id:?} is missing from the id index; `annal reindex` rebuilds it"
        )),
    }
}

fn check_node(id: NodeId, hash: &Hash, stored: Option<&[u8]>) -> Result<(), String> {
    match stored {
        Some(v) if v == hash => Ok(()),
        Some(_) if id.level == 0 => Err(format!("entry {} does not match its stored leaf hash", id.index)),
        Some(_) => Err(format!(
            "stored tree node (level {}, index {}) over entries from {} differs from the recomputed one",
            id.level,
            id.index,
            id.first_leaf()
        )),
        None => Err(format!("tree node (level {}, index {}) is missing", id.level, id.index)),
    }
}
