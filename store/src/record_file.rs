//! Append-only files of fixed-width records, read by position.
//!
//! Leaf offsets and Merkle tree levels are dense arrays indexed by position,
//! so they are stored as flat files rather than as one sled key per record:
//! sled costs several microseconds per insert, a file append costs a memcpy.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// A file of `width`-byte records.
pub(crate) struct RecordFile {
    path: PathBuf,
    width: u64,
    file: File,
    dirty: bool,
}

impl RecordFile {
    /// Opens (creating) the file for appending and reading.
    pub(crate) fn open(path: PathBuf, width: usize) -> Result<Self, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(RecordFile {
            path,
            width: width as u64,
            file,
            dirty: false,
        })
    }

    /// Number of whole records in the file.
    pub(crate) fn count(&self) -> Result<u64, StoreError> {
        let len = self
            .file
            .metadata()
            .map_err(|e| StoreError::io(&self.path, e))?
            .len();
        Ok(len / self.width)
    }

    /// Appends records (a multiple of the width).
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        debug_assert_eq!(bytes.len() as u64 % self.width, 0);
        self.file
            .write_all(bytes)
            .map_err(|e| StoreError::io(&self.path, e))?;
        self.dirty = true;
        Ok(())
    }

    /// Cuts the file to `count` records (only ever shrinks).
    pub(crate) fn truncate(&mut self, count: u64) -> Result<(), StoreError> {
        if self.count()? > count || self.len()? % self.width != 0 {
            self.file
                .set_len(count * self.width)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.dirty = true;
        }
        Ok(())
    }

    fn len(&self) -> Result<u64, StoreError> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| StoreError::io(&self.path, e))?
            .len())
    }

    /// fdatasync if anything changed.
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        if std::mem::take(&mut self.dirty) {
            self.file
                .sync_data()
                .map_err(|e| StoreError::io(&self.path, e))?;
        }
        Ok(())
    }
}

/// Number of whole records in a file (0 when missing).
pub(crate) fn record_count(path: &Path, width: usize) -> Result<u64, StoreError> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.len() / width as u64),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Reads a record file front to back (verification streams every file once).
pub(crate) struct SequentialRecords {
    path: PathBuf,
    width: usize,
    reader: Option<std::io::BufReader<File>>,
}

impl SequentialRecords {
    /// A reader from the first record; a missing file reads as empty.
    pub(crate) fn open(path: PathBuf, width: usize) -> Result<Self, StoreError> {
        let reader = match File::open(&path) {
            Ok(f) => Some(std::io::BufReader::with_capacity(1 << 20, f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        Ok(SequentialRecords {
            path,
            width,
            reader,
        })
    }

    /// The next `count` records back to back (fewer at the end).
    pub(crate) fn next_records(&mut self, count: usize) -> Result<Vec<u8>, StoreError> {
        use std::io::Read;
        let Some(reader) = self.reader.as_mut() else {
            return Ok(Vec::new());
        };
        let mut buf = Vec::with_capacity(count * self.width);
        reader
            .take((count * self.width) as u64)
            .read_to_end(&mut buf)
            .map_err(|e| StoreError::io(&self.path, e))?;
        buf.truncate(buf.len() / self.width * self.width);
        Ok(buf)
    }
}
