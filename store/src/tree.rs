//! Merkle tree node files: one flat file of 32-byte hashes per level.
//!
//! Level `l` holds the complete nodes `(l, 0), (l, 1), ...` in order, so node
//! `(l, i)` is at byte `32·i` of `DATA/log/tree/<l>`. Complete nodes never
//! change, which keeps every file append-only and any past root readable.

use std::fs;
use std::path::PathBuf;

use crate::merkle::{Hash, NodeId};
use crate::record_file::{self, RecordFile};
use crate::StoreError;

/// The node files of one log.
#[derive(Clone, Debug)]
pub(crate) struct TreeFiles {
    dir: PathBuf,
}

impl TreeFiles {
    pub(crate) fn new(dir: PathBuf) -> Self {
        TreeFiles { dir }
    }

    pub(crate) fn level_path(&self, level: u8) -> PathBuf {
        self.path(level)
    }

    fn path(&self, level: u8) -> PathBuf {
        self.dir.join(format!("{level:02}"))
    }

    /// A stored node.
    pub(crate) fn read(&self, id: NodeId) -> Result<Hash, StoreError> {
        record_file::read_record(&self.path(id.level), 32, id.index)?
            .and_then(|b| <Hash>::try_from(b.as_slice()).ok())
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "missing tree node level {} index {}",
                    id.level, id.index
                ))
            })
    }

    /// Number of nodes stored at `level`.
    pub(crate) fn count(&self, level: u8) -> Result<u64, StoreError> {
        record_file::record_count(&self.path(level), 32)
    }
}

/// Appends completed nodes, level by level.
pub(crate) struct TreeWriter {
    files: TreeFiles,
    levels: Vec<RecordFile>,
    pending: Vec<Vec<u8>>,
    /// Nodes per level already in the files (or pending).
    next: Vec<u64>,
}

impl TreeWriter {
    /// A writer continuing a tree of `size` leaves; cuts off nodes an
    /// interrupted commit left past it.
    pub(crate) fn resume(files: TreeFiles, size: u64) -> Result<Self, StoreError> {
        fs::create_dir_all(&files.dir).map_err(|e| StoreError::io(&files.dir, e))?;
        let mut w = TreeWriter {
            files,
            levels: Vec::new(),
            pending: Vec::new(),
            next: Vec::new(),
        };
        for level in 0..64u8 {
            let keep = size >> level;
            let path = w.files.path(level);
            if keep == 0 && !path.exists() {
                break;
            }
            let mut file = RecordFile::open(path, 32)?;
            file.truncate(keep)?;
            w.levels.push(file);
            w.pending.push(Vec::new());
            w.next.push(keep);
        }
        Ok(w)
    }

    /// Buffers a completed node. Nodes of one level arrive in index order.
    pub(crate) fn push(&mut self, id: NodeId, hash: &Hash) -> Result<(), StoreError> {
        let level = id.level as usize;
        while self.levels.len() <= level {
            let l = self.levels.len() as u8;
            self.levels.push(RecordFile::open(self.files.path(l), 32)?);
            self.pending.push(Vec::new());
            self.next.push(0);
        }
        if self.next[level] != id.index {
            return Err(StoreError::Corrupt(format!(
                "tree level {level}: expected node {}, got {}",
                self.next[level], id.index
            )));
        }
        self.next[level] += 1;
        self.pending[level].extend_from_slice(hash);
        Ok(())
    }

    /// Writes the buffered nodes and fdatasyncs them.
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        for (file, pending) in self.levels.iter_mut().zip(&mut self.pending) {
            if !pending.is_empty() {
                file.append(pending)?;
                pending.clear();
            }
            file.sync()?;
        }
        Ok(())
    }
}
