//! Merkle tree node storage: one flat file, nodes in in-order position.
//!
//! Node `(l, i)` (the complete subtree of `2^l` leaves starting at leaf
//! `i·2^l`) lives at position `i·2^(l+1) + 2^l − 1`: leaves at even positions,
//! each parent between its children. Appending leaf `n` writes position `2n`
//! and the nodes it completes, all at or below `2n`, so one file and one
//! `fdatasync` per commit hold the whole tree (one file per level cost a sync
//! per level). Complete nodes never change: any past root can be read back.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::merkle::{Hash, NodeId};
use crate::syncer::Syncer;
use crate::StoreError;

const WIDTH: u64 = 32;

/// Byte offset of a node in the tree file.
fn offset(id: NodeId) -> u64 {
    let position = (id.index << (id.level + 1)) + (1u64 << id.level) - 1;
    position * WIDTH
}

/// Length of the tree file for a tree of `size` leaves.
fn len_for(size: u64) -> u64 {
    match size {
        0 => 0,
        n => (2 * n - 1) * WIDTH,
    }
}

/// The node file of one log.
#[derive(Clone, Debug)]
pub(crate) struct TreeFiles {
    path: PathBuf,
}

impl TreeFiles {
    pub(crate) fn new(path: PathBuf) -> Self {
        TreeFiles { path }
    }

    /// A stored node (the caller asks only for nodes complete at the
    /// committed size).
    pub(crate) fn read(&self, id: NodeId) -> Result<Hash, StoreError> {
        let file = File::open(&self.path).map_err(|e| StoreError::io(&self.path, e))?;
        TreeReader {
            file,
            path: &self.path,
            window: None,
        }
        .read(id)
    }

    /// An open handle for many reads.
    pub(crate) fn reader(&self) -> Result<TreeReader<'_>, StoreError> {
        self.open_reader(false)
    }

    /// A handle for reading the nodes of the leaves in log order (see
    /// [`TreeReader`]).
    pub(crate) fn scanner(&self) -> Result<TreeReader<'_>, StoreError> {
        self.open_reader(true)
    }

    fn open_reader(&self, scan: bool) -> Result<TreeReader<'_>, StoreError> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Corrupt("the tree file is missing".into()))
            }
            Err(e) => return Err(StoreError::io(&self.path, e)),
        };
        Ok(TreeReader {
            file,
            path: &self.path,
            window: scan.then(Default::default),
        })
    }

    /// A handle that several threads read runs of nodes through at once
    /// (verify's checkers each read the nodes under their own leaves).
    pub(crate) fn spans(&self) -> Result<NodeSpans, StoreError> {
        let reader = self.open_reader(false)?;
        Ok(NodeSpans {
            file: reader.file,
            path: self.path.clone(),
        })
    }

    /// Number of leaves whose hashes the file can hold.
    pub(crate) fn leaf_capacity(&self) -> Result<u64, StoreError> {
        let len = match std::fs::metadata(&self.path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(StoreError::io(&self.path, e)),
        };
        Ok((len / WIDTH).div_ceil(2))
    }
}

/// Reads nodes through one open file.
///
/// A scan in log order (verify) asks for each leaf's node and the nodes it
/// completes, at positions that only grow but lag behind the leaf by up to
/// `2^level`: so reads are served from a window of the file read in large
/// chunks, keeping [`BACK`] bytes behind the newest position, and only the
/// rare high node behind the window costs a read of its own.
pub(crate) struct TreeReader<'a> {
    file: File,
    path: &'a PathBuf,
    /// Set for a scan in log order ([`TreeFiles::scanner`]).
    window: Option<std::cell::RefCell<Window>>,
}

#[derive(Default)]
struct Window {
    start: u64,
    bytes: Vec<u8>,
}

/// Bytes a window read fetches.
const CHUNK: u64 = 1 << 20;
/// Bytes a refilled window keeps behind the position that refilled it
/// (nodes up to level 12 of a leaf in the window stay in it).
const BACK: u64 = 128 << 10;

impl TreeReader<'_> {
    pub(crate) fn read(&self, id: NodeId) -> Result<Hash, StoreError> {
        let at = offset(id);
        let Some(window) = &self.window else {
            return self.read_one(id, at);
        };
        let mut window = window.borrow_mut();
        let end = window.start + window.bytes.len() as u64;
        if at < window.start || at + WIDTH > end {
            if at < window.start && !window.bytes.is_empty() {
                // Behind the window: a high node, read on its own.
                return self.read_one(id, at);
            }
            self.fill(&mut window, at.saturating_sub(BACK))?;
        }
        let from = (at - window.start) as usize;
        match window.bytes.get(from..from + WIDTH as usize) {
            Some(b) => {
                let mut hash = [0u8; 32];
                hash.copy_from_slice(b);
                Ok(hash)
            }
            None => Err(missing(id)),
        }
    }

    /// Reads the window at `start` (shorter at the end of the file).
    fn fill(&self, window: &mut Window, start: u64) -> Result<(), StoreError> {
        window.start = start;
        window.bytes.resize(CHUNK as usize, 0);
        let mut filled = 0usize;
        while filled < window.bytes.len() {
            match self
                .file
                .read_at(&mut window.bytes[filled..], start + filled as u64)
            {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(StoreError::io(self.path, e)),
            }
        }
        window.bytes.truncate(filled);
        Ok(())
    }

    fn read_one(&self, id: NodeId, at: u64) -> Result<Hash, StoreError> {
        let mut hash = [0u8; 32];
        match self.file.read_exact_at(&mut hash, at) {
            Ok(()) => Ok(hash),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(missing(id)),
            Err(e) => Err(StoreError::io(self.path, e)),
        }
    }
}

/// Reads the nodes under a run of leaves with one `pread`.
pub(crate) struct NodeSpans {
    file: File,
    path: PathBuf,
}

impl NodeSpans {
    /// The stored nodes of every complete subtree within leaves
    /// `first..first + count` (in-order positions `2·first ..= 2·(first +
    /// count) − 2`: a subtree within the run sits between its first and
    /// last leaf). Shorter at the end of the file.
    pub(crate) fn under(&self, first: u64, count: u64) -> Result<NodesUnder, StoreError> {
        let start = 2 * first * WIDTH;
        let want = (2 * count).saturating_sub(1) * WIDTH;
        let mut bytes = vec![0u8; want as usize];
        let mut filled = 0usize;
        while filled < bytes.len() {
            match self
                .file
                .read_at(&mut bytes[filled..], start + filled as u64)
            {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(StoreError::io(&self.path, e)),
            }
        }
        bytes.truncate(filled);
        Ok(NodesUnder { start, bytes })
    }
}

/// What [`NodeSpans::under`] read.
pub(crate) struct NodesUnder {
    /// Byte offset of `bytes` in the tree file.
    start: u64,
    bytes: Vec<u8>,
}

impl NodesUnder {
    /// The stored node `id` (`None`: not in the file, or not in this run).
    pub(crate) fn get(&self, id: NodeId) -> Option<&[u8]> {
        let at = offset(id).checked_sub(self.start)? as usize;
        self.bytes.get(at..at + WIDTH as usize)
    }
}

fn missing(id: NodeId) -> StoreError {
    StoreError::Corrupt(format!(
        "missing tree node level {} index {}",
        id.level, id.index
    ))
}

/// Buffers completed nodes and writes them at commit.
pub(crate) struct TreeWriter {
    path: PathBuf,
    file: Arc<File>,
    /// Syncs `file` on a thread of its own (see [`Syncer`]).
    syncer: Syncer,
    pending: Vec<(u64, Hash)>,
}

impl TreeWriter {
    /// A writer continuing a tree of `size` leaves; cuts off nodes an
    /// interrupted commit wrote past it.
    pub(crate) fn resume(files: TreeFiles, size: u64) -> Result<Self, StoreError> {
        let path = files.path;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
        if len > len_for(size) {
            file.set_len(len_for(size))
                .map_err(|e| StoreError::io(&path, e))?;
        }
        let file = Arc::new(file);
        Ok(TreeWriter {
            path,
            syncer: Syncer::new(Arc::clone(&file), "annal-sync"),
            file,
            pending: Vec::new(),
        })
    }

    /// Buffers a completed node.
    pub(crate) fn push(&mut self, id: NodeId, hash: &Hash) {
        self.pending.push((offset(id), *hash));
    }

    /// Writes the buffered nodes (coalescing runs), then fdatasyncs the
    /// file once on its syncer's thread while `beside` runs on this one
    /// (the commit's leaves): neither sync waits for the other's journal
    /// commit. Both run even if one fails; `beside`'s error comes first.
    pub(crate) fn sync_beside(
        &mut self,
        beside: impl FnOnce() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let started = self
            .write_pending()
            .map(|written| written.then(|| self.syncer.start()));
        let beside = beside();
        let tree = match started {
            Ok(Some(sync)) => sync.wait().map_err(|e| StoreError::io(&self.path, e)),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        beside.and(tree)
    }

    /// Writes the buffered nodes, coalescing runs; whether there were any.
    fn write_pending(&mut self) -> Result<bool, StoreError> {
        if self.pending.is_empty() {
            return Ok(false);
        }
        self.pending.sort_unstable_by_key(|(at, _)| *at);
        let mut run_start = self.pending[0].0;
        let mut run: Vec<u8> = Vec::with_capacity(self.pending.len() * 32);
        for (at, hash) in self.pending.drain(..) {
            if at != run_start + run.len() as u64 {
                self.file
                    .write_all_at(&run, run_start)
                    .map_err(|e| StoreError::io(&self.path, e))?;
                run.clear();
                run_start = at;
            }
            run.extend_from_slice(&hash);
        }
        self.file
            .write_all_at(&run, run_start)
            .map_err(|e| StoreError::io(&self.path, e))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_in_order_and_a_commit_writes_at_or_below_2n() {
        let at = |level, index| offset(NodeId { level, index }) / WIDTH;
        assert_eq!(
            [at(0, 0), at(1, 0), at(0, 1), at(2, 0), at(0, 2)],
            [0, 1, 2, 3, 4]
        );
        assert_eq!(at(1, 1), 5);
        // Every node completed by leaf n sits at or below position 2n.
        for n in 0u64..300 {
            for level in 0..10u8 {
                if (n + 1) % (1 << level) == 0 {
                    assert!(at(level, n >> level) <= 2 * n);
                }
            }
        }
    }
}
