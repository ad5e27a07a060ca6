//! Leaf files: the canonical leaf bytes, one per line, in append-only segments.
//!
//! A segment is `DATA/log/<first index>.jsonl`: each line is one leaf's JCS
//! bytes (JCS never emits a raw newline), so an auditor can read the log with
//! any JSON Lines tool. `DATA/log/offsets` holds a fixed 20-byte
//! [`LeafPointer`] per leaf for random access.
//!
//! Commit order: leaf lines, pointers and tree hashes are written and
//! `fdatasync`ed first, then the sled batch that records the new size is
//! flushed. A crash in between leaves bytes past the committed size; they are
//! cut off before the next write.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::merkle::{self, Hash};
use crate::StoreError;

use crate::record_file::{self, RecordFile};

/// Default segment size before a new file is started.
pub const DEFAULT_SEGMENT_BYTES: u64 = 256 << 20;

/// Where one leaf's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafPointer {
    /// First log index of the segment file (its name).
    pub segment: u64,
    /// Byte offset of the leaf in the file.
    pub offset: u64,
    /// Length of the leaf bytes (without the newline).
    pub len: u32,
}

impl LeafPointer {
    pub(crate) const ENCODED_LEN: usize = 20;

    pub(crate) fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[..8].copy_from_slice(&self.segment.to_be_bytes());
        b[8..16].copy_from_slice(&self.offset.to_be_bytes());
        b[16..].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<LeafPointer> {
        Some(LeafPointer {
            segment: u64::from_be_bytes(b.get(..8)?.try_into().ok()?),
            offset: u64::from_be_bytes(b.get(8..16)?.try_into().ok()?),
            len: u32::from_be_bytes(b.get(16..20)?.try_into().ok()?),
        })
    }

    /// Offset just past this leaf's newline.
    pub(crate) fn end(&self) -> u64 {
        self.offset + u64::from(self.len) + 1
    }
}

/// The directory of segment files.
///
/// Random reads keep their files open: a query that reads ten thousand
/// leaves through an index used to open and close the offsets file and a
/// segment for each (two thirds of its time in `open` and `close`). The
/// files only grow (a segment that ever held a committed leaf is never
/// removed or replaced), so a handle stays good; the cache is emptied when
/// uncommitted segments are cut off.
#[derive(Clone, Debug)]
pub(crate) struct Segments {
    dir: PathBuf,
    open: Arc<Mutex<OpenFiles>>,
}

/// Files held open for random reads (shared by the clones of a
/// [`Segments`]).
#[derive(Debug, Default)]
struct OpenFiles {
    offsets: Option<Arc<File>>,
    segments: HashMap<u64, Arc<File>>,
}

impl Segments {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Segments {
            dir,
            open: Arc::default(),
        }
    }

    fn lock_open(&self) -> MutexGuard<'_, OpenFiles> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The offsets file, opened once (`None` while it does not exist).
    fn offsets_file(&self) -> Result<Option<Arc<File>>, StoreError> {
        if let Some(f) = &self.lock_open().offsets {
            return Ok(Some(f.clone()));
        }
        let path = self.offsets_path();
        match File::open(&path) {
            Ok(f) => Ok(Some(
                self.lock_open().offsets.get_or_insert(Arc::new(f)).clone(),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    /// Segment `segment`'s file, opened once.
    fn segment_file(&self, segment: u64) -> Result<Arc<File>, StoreError> {
        if let Some(f) = self.lock_open().segments.get(&segment) {
            return Ok(f.clone());
        }
        let path = self.path(segment);
        let file = Arc::new(File::open(&path).map_err(|e| StoreError::io(&path, e))?);
        Ok(self
            .lock_open()
            .segments
            .entry(segment)
            .or_insert(file)
            .clone())
    }

    pub(crate) fn path(&self, segment: u64) -> PathBuf {
        self.dir.join(format!("{segment:020}.jsonl"))
    }

    pub(crate) fn offsets_path(&self) -> PathBuf {
        self.dir.join("offsets")
    }

    /// Where leaf `index` is, if the offsets file has it.
    pub(crate) fn pointer(&self, index: u64) -> Result<Option<LeafPointer>, StoreError> {
        let Some(file) = self.offsets_file()? else {
            return Ok(None);
        };
        let mut buf = [0u8; LeafPointer::ENCODED_LEN];
        let at = index * LeafPointer::ENCODED_LEN as u64;
        match file.read_exact_at(&mut buf, at) {
            Ok(()) => Ok(LeafPointer::decode(&buf)),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(StoreError::io(self.offsets_path(), e)),
        }
    }

    /// Number of pointers in the offsets file.
    pub(crate) fn pointer_count(&self) -> Result<u64, StoreError> {
        record_file::record_count(&self.offsets_path(), LeafPointer::ENCODED_LEN)
    }

    /// First indexes of the segment files present, ascending.
    pub(crate) fn list(&self) -> Result<Vec<u64>, StoreError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&self.dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            if let Ok(id) = stem.parse::<u64>() {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// Reads one leaf.
    pub(crate) fn read(&self, p: LeafPointer) -> Result<Vec<u8>, StoreError> {
        let file = self.segment_file(p.segment)?;
        let mut buf = vec![0u8; p.len as usize];
        file.read_exact_at(&mut buf, p.offset)
            .map_err(|e| StoreError::io(self.path(p.segment), e))?;
        Ok(buf)
    }

    /// Streams leaves line by line from `start` (a pointer to the first one),
    /// continuing into later segments.
    pub(crate) fn stream(&self, start: Option<LeafPointer>) -> Result<LineStream, StoreError> {
        let all = self.list()?;
        let (segments, offset) = match start {
            Some(p) => (
                all.into_iter().filter(|s| *s >= p.segment).collect(),
                p.offset,
            ),
            None => (all, 0),
        };
        Ok(LineStream {
            segments: self.clone(),
            pending: segments.into_iter().rev().collect(),
            current: None,
            first_offset: offset,
            scratch: Vec::with_capacity(4096),
        })
    }

    /// Cuts segment `segment` to `len` bytes and deletes later segments:
    /// removes what an interrupted commit wrote past the committed log.
    pub(crate) fn truncate_after(&self, segment: Option<u64>, len: u64) -> Result<(), StoreError> {
        *self.lock_open() = OpenFiles::default();
        for s in self.list()? {
            let path = self.path(s);
            match segment {
                Some(keep) if s == keep => {
                    let file = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(|e| StoreError::io(&path, e))?;
                    let actual = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
                    if actual > len {
                        file.set_len(len).map_err(|e| StoreError::io(&path, e))?;
                        file.sync_all().map_err(|e| StoreError::io(&path, e))?;
                    }
                }
                Some(keep) if s < keep => {}
                _ => fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?,
            }
        }
        Ok(())
    }

    /// Length of a segment file, if it exists.
    pub(crate) fn len_of(&self, segment: u64) -> Result<Option<u64>, StoreError> {
        let path = self.path(segment);
        match fs::metadata(&path) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }
}

/// Sequential reader over segment files.
pub(crate) struct LineStream {
    segments: Segments,
    /// Segments still to open, last first.
    pending: Vec<u64>,
    current: Option<(u64, u64, BufReader<File>)>,
    first_offset: u64,
    /// Where a line is read before it is copied out at its exact size
    /// (read straight into a new vector, a line grew it eight times).
    scratch: Vec<u8>,
}

/// Where [`LineStream::next_into`] read a line from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinePlace {
    pub segment: u64,
    pub offset: u64,
    /// Length without the newline.
    pub len: usize,
    /// Whether the line ended with a newline (a torn last line does not).
    pub terminated: bool,
}

impl LineStream {
    /// The next line, its bytes (without the newline) appended to `into`:
    /// verify reads a thousand lines into one buffer instead of a vector
    /// per line.
    pub(crate) fn next_into(
        &mut self,
        into: &mut Vec<u8>,
    ) -> Option<Result<LinePlace, StoreError>> {
        loop {
            if self.current.is_none() {
                let segment = self.pending.pop()?;
                let path = self.segments.path(segment);
                let mut file = match File::open(&path) {
                    Ok(f) => f,
                    Err(e) => return Some(Err(StoreError::io(&path, e))),
                };
                let offset = std::mem::take(&mut self.first_offset);
                if let Err(e) = file.seek(SeekFrom::Start(offset)) {
                    return Some(Err(StoreError::io(&path, e)));
                }
                self.current = Some((segment, offset, BufReader::with_capacity(1 << 20, file)));
            }
            let (segment, offset, reader) = self.current.as_mut()?;
            let start = into.len();
            match reader.read_until(b'\n', into) {
                Ok(0) => {
                    self.current = None;
                }
                Ok(n) => {
                    let at = *offset;
                    *offset += n as u64;
                    let terminated = into.last() == Some(&b'\n');
                    if terminated {
                        into.pop();
                    }
                    return Some(Ok(LinePlace {
                        segment: *segment,
                        offset: at,
                        len: into.len() - start,
                        terminated,
                    }));
                }
                Err(e) => {
                    into.truncate(start);
                    return Some(Err(StoreError::io(self.segments.path(*segment), e)));
                }
            }
        }
    }
}

/// The lines' bytes, each copied out at its exact size.
impl Iterator for LineStream {
    type Item = Result<Vec<u8>, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let next = self
            .next_into(&mut scratch)
            .map(|place| place.map(|_| scratch.clone()));
        self.scratch = scratch;
        next
    }
}

/// A log entry's bytes, written by [`SegmentWriter::append`] given its
/// index.
pub(crate) trait Leaf {
    /// Appends the leaf's bytes (no newline) to `out`.
    fn write(&self, index: u64, out: &mut Vec<u8>);
}

/// Bytes already made (the tests' leaves).
#[cfg(test)]
impl Leaf for Vec<u8> {
    fn write(&self, _index: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

/// Appends leaves to the newest segment, starting a new one past the size limit.
pub(crate) struct SegmentWriter {
    segments: Segments,
    offsets: RecordFile,
    limit: u64,
    /// Open segment: (first index, file, length).
    open: Option<(u64, File, u64)>,
    /// Files written since the last sync, and the bytes written to each.
    dirty: Vec<Dirty>,
    dir_dirty: bool,
    /// The bytes of one commit, kept between commits: a new buffer of a few
    /// MB each time is fresh memory the kernel zeroes and faults in again
    /// (a tenth of ingest's time in a profile).
    buf: Vec<u8>,
}

impl SegmentWriter {
    /// A writer continuing a log of `size` committed leaves, the last at
    /// `last`; cuts off anything an interrupted commit left behind.
    pub(crate) fn resume(
        segments: Segments,
        limit: u64,
        size: u64,
        last: Option<LeafPointer>,
    ) -> Result<Self, StoreError> {
        fs::create_dir_all(&segments.dir).map_err(|e| StoreError::io(&segments.dir, e))?;
        segments.truncate_after(last.map(|p| p.segment), last.map_or(0, |p| p.end()))?;
        let mut offsets = RecordFile::open(segments.offsets_path(), LeafPointer::ENCODED_LEN)?;
        offsets.truncate(size)?;
        let open = match last {
            Some(p) => {
                let path = segments.path(p.segment);
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| StoreError::io(&path, e))?;
                Some((p.segment, file, p.end()))
            }
            None => None,
        };
        Ok(SegmentWriter {
            segments,
            offsets,
            limit,
            open,
            dirty: Vec::new(),
            dir_dirty: false,
            buf: Vec::new(),
        })
    }

    /// Writes `leaves` as log entries `first_index..`; returns their
    /// pointers and their leaf hashes.
    ///
    /// Each leaf is written straight into the write buffer and hashed
    /// there, while its bytes are in cache: a commit's leaves are not
    /// first built as vectors of their own (an allocation and a copy of
    /// every event, 4% of the commit thread).
    pub(crate) fn append<L: Leaf>(
        &mut self,
        first_index: u64,
        leaves: &[L],
    ) -> Result<(Vec<LeafPointer>, Vec<Hash>), StoreError> {
        let mut pointers = Vec::with_capacity(leaves.len());
        let mut hashes = Vec::with_capacity(leaves.len());
        // Empty: `write_buffer` clears it after each write.
        let mut buf = std::mem::take(&mut self.buf);
        for (i, leaf) in leaves.iter().enumerate() {
            let index = first_index + i as u64;
            let rotate = match &self.open {
                None => true,
                Some((_, _, len)) => *len + buf.len() as u64 >= self.limit,
            };
            if rotate {
                self.write_buffer(&mut buf)?;
                self.start_segment(index)?;
            }
            let (segment, _, len) = self
                .open
                .as_ref()
                .ok_or_else(|| StoreError::Corrupt("no open segment".into()))?;
            let (segment, offset) = (*segment, *len + buf.len() as u64);
            let start = buf.len();
            leaf.write(index, &mut buf);
            let len_u32 = u32::try_from(buf.len() - start)
                .map_err(|_| StoreError::Corrupt(format!("leaf {index} is larger than 4 GiB")))?;
            hashes.push(merkle::leaf_hash(&buf[start..]));
            pointers.push(LeafPointer {
                segment,
                offset,
                len: len_u32,
            });
            buf.push(b'\n');
        }
        self.write_buffer(&mut buf)?;
        self.buf = buf;
        let mut encoded = Vec::with_capacity(pointers.len() * LeafPointer::ENCODED_LEN);
        for p in &pointers {
            encoded.extend_from_slice(&p.encode());
        }
        self.offsets.append(&encoded)?;
        Ok((pointers, hashes))
    }

    fn write_buffer(&mut self, buf: &mut Vec<u8>) -> Result<(), StoreError> {
        if buf.is_empty() {
            return Ok(());
        }
        let Some((segment, file, len)) = self.open.as_mut() else {
            return Err(StoreError::Corrupt("no open segment".into()));
        };
        file.write_all(buf)
            .map_err(|e| StoreError::io(self.segments.path(*segment), e))?;
        let from = *len;
        *len += buf.len() as u64;
        match self.dirty.iter_mut().find(|d| d.segment == *segment) {
            Some(d) => d.to = *len,
            None => {
                let file = file
                    .try_clone()
                    .map_err(|e| StoreError::io(self.segments.path(*segment), e))?;
                self.dirty.push(Dirty {
                    segment: *segment,
                    file,
                    from,
                    to: *len,
                });
            }
        }
        buf.clear();
        Ok(())
    }

    fn start_segment(&mut self, index: u64) -> Result<(), StoreError> {
        let path = self.segments.path(index);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        self.open = Some((index, file, 0));
        self.dir_dirty = true;
        Ok(())
    }

    /// Makes everything written since the last call durable, then lets
    /// the kernel drop those bytes from its page cache.
    ///
    /// Why drop them: leaves are written once and read back rarely (a
    /// proof, `verify`, a reindex), and a writer that keeps every page it
    /// wrote takes fresh memory for each new one. On this machine (a VM
    /// whose free memory goes back to its host) a fresh page costs a host
    /// fault on first write: 95% of `dd`'s time, buffered writes at
    /// 95–106 MB/s against 1.1 GB/s for the same 4 MB `write` +
    /// `fdatasync` loop that drops what it synced, and a third of the
    /// Kafka committer's samples (docs/storage-experiments.md "Storage: leaves leave the page
    /// cache"). Dropped pages go back to the free lists, and the next
    /// commit's bytes land in them. PostgreSQL drops its WAL segments'
    /// pages the same way. The last, partial page stays (the kernel keeps
    /// pages the range only partly covers): the next commit appends to it.
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        for d in self.dirty.drain(..) {
            d.file
                .sync_data()
                .map_err(|e| StoreError::io(self.segments.path(d.segment), e))?;
            // Advice only: a kernel that ignores it loses nothing.
            let _ = rustix::fs::fadvise(
                &d.file,
                d.from,
                std::num::NonZeroU64::new(d.to - d.from),
                rustix::fs::Advice::DontNeed,
            );
        }
        self.offsets.sync()?;
        if std::mem::take(&mut self.dir_dirty) {
            sync_dir(&self.segments.dir)?;
        }
        Ok(())
    }
}

/// A segment written since the last sync: the bytes `from..to`.
struct Dirty {
    segment: u64,
    file: File,
    from: u64,
    to: u64,
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::{preadv2, Errno, ReadWriteFlags};
    use std::io::IoSliceMut;

    /// Whether the file's first page is in the page cache: a read that may
    /// not wait for the disk (`RWF_NOWAIT`) fails with `EAGAIN` when not.
    fn first_page_cached(path: &Path) -> bool {
        let file = File::open(path).unwrap();
        let mut page = [0u8; 4096];
        match preadv2(
            &file,
            &mut [IoSliceMut::new(&mut page)],
            0,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(_) => true,
            Err(Errno::AGAIN) => false,
            Err(e) => panic!("preadv2: {e}"),
        }
    }

    #[test]
    fn synced_leaves_leave_the_page_cache_and_read_back_intact() {
        let dir = tempfile::tempdir().unwrap();
        // tmpfs keeps its pages whatever the advice: nothing to check there.
        let tmpfs = rustix::fs::statfs(dir.path()).unwrap().f_type == 0x0102_1994;
        let segments = Segments::new(dir.path().join("leaves"));
        let mut writer = SegmentWriter::resume(segments.clone(), 1 << 30, 0, None).unwrap();
        let leaves: Vec<Vec<u8>> = (0..64u8).map(|i| vec![b'a' + i % 26; 1000]).collect();
        let (pointers, hashes) = writer.append(0, &leaves).unwrap();
        assert_eq!(hashes[5], merkle::leaf_hash(&leaves[5]));
        let path = segments.path(0);
        // Written, not yet synced: the pages are the only copy.
        assert!(first_page_cached(&path));
        writer.sync().unwrap();
        if !tmpfs {
            assert!(!first_page_cached(&path), "synced leaves stay cached");
        }
        // Read back from the disk, byte for byte.
        let file = File::open(&path).unwrap();
        for (p, leaf) in pointers.iter().zip(&leaves) {
            let mut got = vec![0u8; p.len as usize];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut got, p.offset).unwrap();
            assert_eq!(&got, leaf);
        }
        assert!(first_page_cached(&path));
        // The next commit appends after the partial last page, as before.
        let (more, _) = writer.append(64, &leaves[..2]).unwrap();
        writer.sync().unwrap();
        assert_eq!(more[0].offset, pointers[63].end());
    }
}
