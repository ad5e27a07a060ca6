//! Full verification: recompute every leaf, every tree node and the root.
//!
//! This is the auditor's check and it trusts nothing stored but the leaf
//! bytes and the signed checkpoint: each leaf must decode, be canonical, sit
//! at the index it names, hash to the stored leaf hash, and the recomputed
//! tree must reproduce every stored node and the checkpoint root. Memory is
//! O(log n): leaves stream through a [`Frontier`].

use annal_schemas::Timestamp;

use crate::checkpoint::{Checkpoint, NoteVerifier};
use crate::index::{IdDigest, Indexes};
use crate::leaf_check;
use crate::leaves::LeafPointer;
use crate::leaves::{Line, LineStream};
use crate::merkle::{self, Frontier, Hash, NodeId};
use crate::proof::open_with_any;
use crate::record_file::SequentialRecords;
use crate::tree::TreeReader;
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
        let mut pointers =
            SequentialRecords::open(self.segments().offsets_path(), LeafPointer::ENCODED_LEN)?;
        let tree = if expected > 0 {
            Some(self.tree_files().scanner()?)
        } else {
            None
        };
        // Stage one checks each leaf on its own (canonical form, its index,
        // its hash: the costly part) on every core, chunk by chunk; stage
        // two consumes the chunks strictly in log order (placement, tree
        // nodes, ids), so the first problem reported is still the one at
        // the lowest index.
        let (work_tx, work_rx) = mpsc::sync_channel::<RawChunk>(4);
        let (done_tx, done_rx) = mpsc::sync_channel::<Result<CheckedChunk, StoreError>>(8);
        let lines = self.segments().stream(None)?;
        // The ids the leaves name, against the id index's (read beside).
        // A view has no id index to check: the writer's verify checks it.
        let mut leaf_ids = IdDigest::default();
        let owned = self.beside_writer().is_none();
        let index_ids = std::thread::scope(|scope| {
            let index_ids = owned.then(|| scope.spawn(|| self.key_index().id_digest()));
            let errors = done_tx.clone();
            scope.spawn(move || read_chunks(lines, expected, work_tx, errors));
            let work_rx = std::sync::Arc::new(std::sync::Mutex::new(work_rx));
            for _ in 0..checkers() {
                let (work_rx, done_tx) = (work_rx.clone(), done_tx.clone());
                scope.spawn(move || check_chunks(&work_rx, &done_tx));
            }
            drop(done_tx);
            for chunk in in_log_order(done_rx) {
                let (items, ids) = chunk?;
                leaf_ids.merge(ids);
                for item in items {
                    let index = frontier.size();
                    let leaf = match item {
                        Checked::Leaf(leaf) => leaf,
                        Checked::Problem(reason) => {
                            fail(&mut report, Some(index), reason);
                            return Ok(None);
                        }
                    };
                    if let Err(reason) =
                        self.check_placed(index, &leaf, &mut pointers, &mut frontier, tree.as_ref())
                    {
                        fail(&mut report, Some(index), reason?);
                        return Ok(None);
                    }
                    report.leaves += 1;
                    report.bytes += leaf.line.bytes.len() as u64;
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

/// A leaf that passed stage one, with its leaf hash (computed
/// in that stage, so the two stages share the hashing between two cores).
struct CheckedLeaf {
    line: Line,
    hash: Hash,
}

/// What the decoding stage hands on, in log order.
enum Checked {
    /// A leaf that is canonical and names its own index.
    Leaf(CheckedLeaf),
    /// The first leaf that does not; nothing follows it.
    Problem(String),
}

/// Leaves per chunk of stage one.
const CHUNK: usize = 1024;

/// Threads checking leaves: one per core (at least two, so reading and
/// checking overlap).
fn checkers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// Lines of leaves `first..`, and what ended the log early, if anything.
struct RawChunk {
    seq: u64,
    first: u64,
    lines: Vec<Line>,
    end: Option<String>,
}

/// A chunk checked on its own, with the system times at its ends (the
/// order across chunks is checked in log order).
struct CheckedChunk {
    seq: u64,
    items: Vec<Checked>,
    /// The (id, index) pairs of its leaves.
    ids: IdDigest,
    first_recorded: Option<Timestamp>,
    last_recorded: Option<Timestamp>,
}

/// Reads the leaf lines in order, in chunks.
fn read_chunks(
    mut lines: LineStream,
    expected: u64,
    work: mpsc::SyncSender<RawChunk>,
    errors: mpsc::SyncSender<Result<CheckedChunk, StoreError>>,
) {
    let mut index = 0u64;
    let mut seq = 0u64;
    while index < expected {
        let mut chunk = RawChunk {
            seq,
            first: index,
            lines: Vec::with_capacity(CHUNK),
            end: None,
        };
        while chunk.lines.len() < CHUNK && index < expected {
            match lines.next() {
                None => {
                    chunk.end = Some(format!("entry {index} is missing from the leaf files"));
                }
                Some(Err(e)) => {
                    let _ = errors.send(Err(e));
                    return;
                }
                Some(Ok(line)) if !line.terminated => {
                    chunk.end = Some(format!("entry {index} is cut short"));
                }
                Some(Ok(line)) => chunk.lines.push(line),
            }
            if chunk.end.is_some() {
                break;
            }
            index += 1;
        }
        let stop = chunk.end.is_some();
        if work.send(chunk).is_err() || stop {
            return;
        }
        seq += 1;
    }
}

/// Checks chunks until there are none.
fn check_chunks(
    work: &std::sync::Mutex<mpsc::Receiver<RawChunk>>,
    done: &mpsc::SyncSender<Result<CheckedChunk, StoreError>>,
) {
    loop {
        let next = work.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(chunk) = next else { return };
        let mut out = CheckedChunk {
            seq: chunk.seq,
            items: Vec::with_capacity(chunk.lines.len() + 1),
            ids: IdDigest::default(),
            first_recorded: None,
            last_recorded: None,
        };
        for (line, index) in chunk.lines.into_iter().zip(chunk.first..) {
            match check_leaf(index, &line.bytes, &mut out.last_recorded) {
                Ok(id) => {
                    out.first_recorded = out.first_recorded.or(out.last_recorded);
                    out.ids.add(id.as_bytes(), index);
                    let hash = merkle::leaf_hash(&line.bytes);
                    out.items.push(Checked::Leaf(CheckedLeaf { line, hash }));
                }
                Err(reason) => {
                    out.items.push(Checked::Problem(reason));
                    break;
                }
            }
        }
        if let Some(end) = chunk.end {
            if !matches!(out.items.last(), Some(Checked::Problem(_))) {
                out.items.push(Checked::Problem(end));
            }
        }
        if done.send(Ok(out)).is_err() {
            return;
        }
    }
}

/// The checked chunks in log order (they finish in any order), with the
/// system time checked across their boundaries.
fn in_log_order(
    done: mpsc::Receiver<Result<CheckedChunk, StoreError>>,
) -> impl Iterator<Item = Result<(Vec<Checked>, IdDigest), StoreError>> {
    let mut waiting: std::collections::BTreeMap<u64, CheckedChunk> = Default::default();
    let mut next = 0u64;
    let mut last: Option<Timestamp> = None;
    let mut first_index = 0u64;
    std::iter::from_fn(move || loop {
        if let Some(mut chunk) = waiting.remove(&next) {
            next += 1;
            if let (Some(prev), Some(first)) = (last, chunk.first_recorded) {
                if first < prev {
                    return Some(Ok((
                        vec![Checked::Problem(format!(
                            "entry {first_index} has recorded_at before its predecessor"
                        ))],
                        IdDigest::default(),
                    )));
                }
            }
            last = chunk.last_recorded.or(last);
            first_index += chunk.items.len() as u64;
            return Some(Ok((std::mem::take(&mut chunk.items), chunk.ids)));
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
    /// Stage two for one leaf: where the index says it is, its hash and the
    /// tree nodes it completes match the stored ones. `Err(Ok(reason))` is
    /// a problem, `Err(Err(e))` a failure.
    fn check_placed(
        &self,
        index: u64,
        leaf: &CheckedLeaf,
        pointers: &mut SequentialRecords,
        frontier: &mut Frontier,
        tree: Option<&TreeReader<'_>>,
    ) -> Result<(), Result<String, StoreError>> {
        let pointer = pointers
            .next_record()
            .map_err(Err)?
            .and_then(|b| LeafPointer::decode(&b));
        let Some(pointer) = pointer else {
            return Err(Ok(format!("entry {index} has no leaf pointer")));
        };
        if (pointer.segment, pointer.offset, u64::from(pointer.len))
            != (
                leaf.line.segment,
                leaf.line.offset,
                leaf.line.bytes.len() as u64,
            )
        {
            return Err(Ok(format!(
                "entry {index} is not where the index says it is"
            )));
        }
        let mut completed = Vec::new();
        frontier.push(leaf.hash, |id, hash| completed.push((id, *hash)));
        for (node, hash) in completed {
            let stored = match tree.map(|t| t.read(node)).transpose() {
                Ok(s) => s,
                Err(StoreError::Corrupt(_)) => None,
                Err(e) => return Err(Err(e)),
            };
            check_node(node, &hash, stored.as_ref().map(|h| &h[..])).map_err(Ok)?;
        }
        Ok(())
    }

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
/// index, and its system time does not go backwards.
fn check_leaf(
    index: u64,
    bytes: &[u8],
    last_recorded: &mut Option<Timestamp>,
) -> Result<String, String> {
    let facts = leaf_check::check(bytes)
        .map_err(|e| format!("entry {index} is not in canonical (RFC 8785) form: {e}"))?;
    if facts.index != index {
        return Err(format!(
            "entry {index} holds the leaf of index {} (reordered)",
            facts.index
        ));
    }
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
