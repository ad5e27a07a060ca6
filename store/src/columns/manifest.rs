//! `DATA/columns/manifest`: one line per chunk written, the chunks' index.
//!
//! Each line is `<check> <json>`, where `check` is the first 16 bytes of
//! the BLAKE3 of the JSON (hex): a torn or damaged line fails it, and it
//! and every line after it are ignored (their chunks are written again).
//! A later line for the same start replaces an earlier one (a chunk
//! rebuilt after damage). Readers take the chain of chunks from index 0,
//! each starting where the previous one ends.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::StoreError;

/// The manifest's file name.
pub(crate) const FILE: &str = "manifest";

/// One chunk of the sidecar: `rows` entries from `start`, in one Parquet
/// file, with what a scan needs to skip it unread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnChunk {
    /// Log index of its first row.
    pub start: u64,
    /// Rows (entries) it holds.
    pub rows: u64,
    /// Length of its file.
    pub bytes: u64,
    /// BLAKE3 of its file (hex): a file that does not match is never read.
    pub blake3: String,
    /// Merkle root of the log at `start + rows` (hex): chunks of another
    /// history are never trusted.
    pub root: String,
    /// Valid time of its rows, min and max (Unix microseconds).
    pub time: Option<(i64, i64)>,
    /// System time (`recorded_at`) of its rows, min and max.
    pub recorded: Option<(i64, i64)>,
    /// Rows per cluster.
    pub clusters: BTreeMap<String, u64>,
    /// Rows per event type.
    pub types: BTreeMap<String, u64>,
    /// The columns its file holds ([`LAYOUT`]); a line without one is
    /// layout 1 (the envelope's fields only).
    #[serde(default = "layout_1")]
    pub layout: u32,
}

/// The sidecar's layout: 2 added the `app.sync` fields, 3 the hash of the
/// object's name, 4 grouped each file's rows by type and cluster. A chunk
/// of another layout is read from the leaves until the writer writes it
/// again.
pub const LAYOUT: u32 = 4;

fn layout_1() -> u32 {
    1
}

impl ColumnChunk {
    /// Log index just past its last row.
    pub fn end(&self) -> u64 {
        self.start + self.rows
    }

    /// Its file in the sidecar directory `dir`: named by its range, so
    /// that a short chunk written again whole never overwrites the file a
    /// reader may be reading.
    pub(crate) fn path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{:020}-{:020}.parquet", self.start, self.end()))
    }
}

fn check(json: &[u8]) -> String {
    crate::merkle::to_hex(blake3::hash(json).as_bytes())[..32].to_string()
}

/// What a manifest holds.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The chain from index 0.
    pub(crate) chain: Vec<ColumnChunk>,
    /// Whether the file holds anything besides the chain (damaged or
    /// replaced lines, chunks past a gap): the writer rewrites it.
    pub(crate) untidy: bool,
}

/// Reads the manifest in `dir` (an absent one is empty).
pub(crate) fn load(dir: &Path) -> Result<Loaded, StoreError> {
    Ok(parse(&read(dir)?))
}

/// The manifest's bytes in `dir` (an absent one is empty).
pub(crate) fn read(dir: &Path) -> Result<Vec<u8>, StoreError> {
    let path = dir.join(FILE);
    match fs::read(&path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// One state of the manifest file, told without reading it.
///
/// The file is only ever appended to (its length grows) or replaced by a
/// rename (another inode, another modification time), so an equal state
/// is equal bytes, and a scan plans from the chain parsed last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    len: u64,
    inode: u64,
    modified: Option<std::time::SystemTime>,
}

/// The manifest's [`State`] in `dir`; `None` when there is none.
pub(crate) fn state(dir: &Path) -> Result<Option<State>, StoreError> {
    let path = dir.join(FILE);
    match fs::metadata(&path) {
        Ok(m) => Ok(Some(State {
            len: m.len(),
            inode: inode(&m),
            modified: m.modified().ok(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

#[cfg(unix)]
fn inode(m: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_: &fs::Metadata) -> u64 {
    0
}

/// What the manifest bytes `text` hold.
pub(crate) fn parse(text: &[u8]) -> Loaded {
    let mut by_start: HashMap<u64, ColumnChunk> = HashMap::new();
    let mut lines = 0usize;
    let mut untidy = false;
    // Only newline-terminated lines: the last may be half written.
    let mut rest = text;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        let parsed = line
            .iter()
            .position(|&b| b == b' ')
            .filter(|&sp| line[..sp] == *check(&line[sp + 1..]).as_bytes())
            .and_then(|sp| serde_json::from_slice::<ColumnChunk>(&line[sp + 1..]).ok());
        let Some(chunk) = parsed.filter(|c| c.rows > 0) else {
            untidy = true;
            break;
        };
        lines += 1;
        by_start.insert(chunk.start, chunk);
    }
    untidy |= !rest.is_empty();
    let mut chain = Vec::with_capacity(by_start.len());
    let mut next = 0;
    while let Some(chunk) = by_start.remove(&next) {
        next = chunk.end();
        chain.push(chunk);
    }
    untidy |= !by_start.is_empty() || lines != chain.len();
    Loaded { chain, untidy }
}

fn line(chunk: &ColumnChunk) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_vec(chunk)
        .map_err(|e| StoreError::Corrupt(format!("column manifest: {e}")))?;
    let mut line = check(&json).into_bytes();
    line.push(b' ');
    line.extend_from_slice(&json);
    line.push(b'\n');
    Ok(line)
}

/// Adds `chunk` to the manifest in `dir`, durably.
pub(crate) fn append(dir: &Path, chunk: &ColumnChunk) -> Result<(), StoreError> {
    let path = dir.join(FILE);
    let io = |e| StoreError::io(&path, e);
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io)?;
    file.write_all(&line(chunk)?).map_err(io)?;
    file.sync_data().map_err(io)
}

/// Replaces the manifest in `dir` with exactly `chain` (by rename).
pub(crate) fn rewrite(dir: &Path, chain: &[ColumnChunk]) -> Result<(), StoreError> {
    let path = dir.join(FILE);
    let tmp = dir.join("manifest.tmp");
    let mut bytes = Vec::new();
    for c in chain {
        bytes.extend(line(c)?);
    }
    let io = |e| StoreError::io(&path, e);
    let mut file = fs::File::create(&tmp).map_err(io)?;
    file.write_all(&bytes).map_err(io)?;
    file.sync_data().map_err(io)?;
    fs::rename(&tmp, &path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(start: u64, rows: u64) -> ColumnChunk {
        ColumnChunk {
            start,
            rows,
            bytes: 10,
            blake3: "00".into(),
            root: "11".into(),
            time: Some((1, 2)),
            recorded: None,
            clusters: BTreeMap::from([("c".to_string(), rows)]),
            types: BTreeMap::new(),
            layout: LAYOUT,
        }
    }

    #[test]
    fn the_chain_stops_at_damage_and_later_lines_replace_earlier_ones() {
        let dir = tempfile::tempdir().unwrap();
        for c in [chunk(0, 4), chunk(4, 4), chunk(0, 4), chunk(8, 2)] {
            append(dir.path(), &c).unwrap();
        }
        let loaded = load(dir.path()).unwrap();
        assert_eq!(loaded.chain, vec![chunk(0, 4), chunk(4, 4), chunk(8, 2)]);
        assert!(loaded.untidy, "a replaced line is untidy");

        rewrite(dir.path(), &loaded.chain).unwrap();
        let tidy = load(dir.path()).unwrap();
        assert_eq!(tidy.chain, loaded.chain);
        assert!(!tidy.untidy);

        // One flipped byte in the second line: only the first chunk is left.
        let path = dir.path().join(FILE);
        let mut bytes = fs::read(&path).unwrap();
        let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 40;
        bytes[second] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let damaged = load(dir.path()).unwrap();
        assert_eq!(damaged.chain, vec![chunk(0, 4)]);
        assert!(damaged.untidy);

        // A half-written last line is ignored.
        fs::write(&path, &line(&chunk(0, 4)).unwrap()[..30]).unwrap();
        assert!(load(dir.path()).unwrap().chain.is_empty());
    }

    /// Every way the writer changes the file changes its state: an
    /// append, and a rewrite to the very same bytes.
    #[test]
    fn appends_and_rewrites_change_the_state() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(state(dir.path()).unwrap(), None);
        append(dir.path(), &chunk(0, 4)).unwrap();
        let first = state(dir.path()).unwrap();
        assert!(first.is_some());
        assert_eq!(state(dir.path()).unwrap(), first, "unchanged, the same");
        append(dir.path(), &chunk(4, 4)).unwrap();
        let second = state(dir.path()).unwrap();
        assert_ne!(second, first);
        rewrite(dir.path(), &[chunk(0, 4), chunk(4, 4)]).unwrap();
        let rewritten = state(dir.path()).unwrap();
        assert_ne!(rewritten, second, "same bytes, another file");
    }

    #[test]
    fn a_line_written_before_layouts_is_layout_1() {
        let dir = tempfile::tempdir().unwrap();
        let mut json = serde_json::to_value(chunk(0, 4)).unwrap();
        json.as_object_mut().unwrap().remove("layout");
        let json = serde_json::to_vec(&json).unwrap();
        let mut line = check(&json).into_bytes();
        line.push(b' ');
        line.extend_from_slice(&json);
        line.push(b'\n');
        fs::write(dir.path().join(FILE), line).unwrap();
        let chain = load(dir.path()).unwrap().chain;
        assert_eq!(chain.len(), 1);
        assert_eq!(chain[0].layout, 1);
        assert_ne!(LAYOUT, 1);
    }
}
