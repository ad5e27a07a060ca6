//! Files and standard input.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::IngestError;

/// One input: a named byte stream.
pub struct Input {
    /// Name used in messages and the quarantine (`-` for stdin).
    pub name: String,
    /// Size in bytes, when known (for progress).
    pub len: Option<u64>,
    /// Modification time, when a file: the valid time of last resort.
    pub mtime: Option<annal_schemas::Timestamp>,
    reader: Box<dyn Read + Send>,
}

impl Input {
    /// Opens a file, or standard input for `-`.
    pub fn open(path: &str) -> Result<Input, IngestError> {
        if path == "-" {
            return Ok(Input::reader("-", io::stdin()));
        }
        let file = File::open(path).map_err(|source| IngestError::Io {
            path: Path::new(path).to_path_buf(),
            source,
        })?;
        let meta = file.metadata().ok().filter(|m| m.is_file());
        let len = meta.as_ref().map(|m| m.len());
        let mtime = meta
            .and_then(|m| m.modified().ok())
            .map(|t| annal_schemas::Timestamp::from(chrono::DateTime::<chrono::Utc>::from(t)));
        Ok(Input {
            name: path.to_string(),
            len,
            mtime,
            reader: Box::new(file),
        })
    }

    /// Wraps any reader.
    pub fn reader(name: &str, reader: impl Read + Send + 'static) -> Input {
        Input {
            name: name.to_string(),
            len: None,
            mtime: None,
            reader: Box::new(reader),
        }
    }

    /// A buffered reader that adds every byte read to `counter`.
    pub(crate) fn into_buffered(self, counter: Arc<AtomicU64>) -> impl BufRead + Send {
        BufReader::with_capacity(
            256 << 10,
            Counting {
                inner: self.reader,
                counter,
            },
        )
    }
}

struct Counting<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
