//! Zone maps over a cluster's rows: for every [`ROWS`] rows, the least and
//! greatest valid time they start at, so a scan bounded on `valid_from`
//! reads only the zones that can hold a match.
//!
//! Rows are appended in log order, which follows valid time closely (a
//! late event is late by a reconnect, not by weeks), so a zone spans a
//! short stretch of valid time and a day's scan skips most of them.
//!
//! The `zones` file beside `rows` holds one 16-byte record per complete
//! zone (least, greatest start, little endian). Its one invariant: record
//! `k` exists only when rows `k*ROWS..(k+1)*ROWS` are written, and holds
//! their bounds. The rows of the last, incomplete zone have no record and
//! are always read. The file is derived: a record past the committed rows
//! is cut, and a missing one (a ledger written before zones, a crash
//! between the two writes) is computed again from the rows, so a short
//! or absent file costs speed, never an answer.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::row::{VersionRow, WIDTH};
use crate::StoreError;

/// Rows per zone: 20 KiB of rows, so a skipped zone saves a read worth
/// having and the zone file stays under 0.04 bytes per row.
pub(crate) const ROWS: u64 = 512;

/// Bytes per zone record.
const RECORD: u64 = 16;

/// The bounds of one zone's starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Zone {
    pub(crate) least: i64,
    pub(crate) greatest: i64,
}

impl Zone {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.least.to_le_bytes());
        out.extend_from_slice(&self.greatest.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Zone {
        let at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            i64::from_le_bytes(x)
        };
        Zone {
            least: at(0),
            greatest: at(8),
        }
    }

    /// Whether a row of this zone can start in `[since, until)`.
    fn meets(&self, since: i64, until: i64) -> bool {
        self.greatest >= since && self.least < until
    }
}

/// The zone being filled by a writer: the starts of the rows past the
/// last complete zone.
#[derive(Debug, Default)]
pub(crate) struct Filling {
    rows: u64,
    least: i64,
    greatest: i64,
}

impl Filling {
    /// Counts a row; returns the zone it completes, if it does.
    pub(crate) fn add(&mut self, from: i64) -> Option<Zone> {
        if self.rows == 0 {
            (self.least, self.greatest) = (from, from);
        } else {
            self.least = self.least.min(from);
            self.greatest = self.greatest.max(from);
        }
        self.rows += 1;
        (self.rows == ROWS).then(|| {
            self.rows = 0;
            Zone {
                least: self.least,
                greatest: self.greatest,
            }
        })
    }
}

/// How many of the complete zones of the first `rows` rows in `dir` have
/// no record (what [`complete`] would compute).
pub(crate) fn missing(dir: &Path, rows: u64) -> Result<u64, StoreError> {
    let path = dir.join("zones");
    let len = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    Ok((rows / ROWS).saturating_sub(len / RECORD))
}

/// Brings the `zones` file in `dir` to exactly the complete zones of the
/// first `rows` rows: records past them (or a torn record) are cut, and
/// missing ones computed from the rows file. Returns the file's length.
pub(crate) fn complete(dir: &Path, rows: u64) -> Result<u64, StoreError> {
    let path = dir.join("zones");
    let io = |e| StoreError::io(&path, e);
    let file = super::files::open_for_writing(&path)?;
    let complete = rows / ROWS;
    let len = file.metadata().map_err(io)?.len();
    let have = (len / RECORD).min(complete);
    if len != have * RECORD {
        file.set_len(have * RECORD).map_err(io)?;
    }
    if have < complete {
        let mut out = Vec::with_capacity(((complete - have) * RECORD) as usize);
        let mut filling = Filling::default();
        for_each_start(dir, have * ROWS..complete * ROWS, |from| {
            if let Some(z) = filling.add(from) {
                z.encode(&mut out);
            }
        })?;
        file.write_all_at(&out, have * RECORD).map_err(io)?;
        file.sync_data().map_err(io)?;
    }
    Ok(complete * RECORD)
}

/// The incomplete zone past the complete zones of the first `rows` rows
/// in `dir`: where a writer goes on from.
pub(crate) fn filling(dir: &Path, rows: u64) -> Result<Filling, StoreError> {
    let mut filling = Filling::default();
    for_each_start(dir, rows / ROWS * ROWS..rows, |from| {
        filling.add(from);
    })?;
    Ok(filling)
}

/// The row ranges among the first `rows` rows in `dir` that can hold a
/// row starting in `[since, until)`: every zone whose bounds meet the
/// range, every zone the file has no record for, and the incomplete last
/// zone; adjacent ranges merged.
pub(crate) fn select(
    dir: &Path,
    rows: u64,
    since: i64,
    until: i64,
) -> Result<Vec<Range<u64>>, StoreError> {
    let complete = rows / ROWS;
    let zones = read(dir, complete)?;
    let mut out: Vec<Range<u64>> = Vec::new();
    let mut push = |r: Range<u64>| match out.last_mut() {
        Some(last) if last.end == r.start => last.end = r.end,
        _ => out.push(r),
    };
    for (k, zone) in zones.iter().enumerate() {
        if zone.meets(since, until) {
            let start = k as u64 * ROWS;
            push(start..start + ROWS);
        }
    }
    let unmapped = zones.len() as u64 * ROWS;
    if unmapped < rows {
        push(unmapped..rows);
    }
    Ok(out)
}

/// The first `at_most` zone records of `dir` (fewer when the file is
/// short or absent).
fn read(dir: &Path, at_most: u64) -> Result<Vec<Zone>, StoreError> {
    let path = dir.join("zones");
    let io = |e| StoreError::io(&path, e);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let records = (file.metadata().map_err(io)?.len() / RECORD).min(at_most);
    let mut bytes = vec![0u8; (records * RECORD) as usize];
    file.read_exact_at(&mut bytes, 0).map_err(io)?;
    Ok(bytes
        .chunks_exact(RECORD as usize)
        .map(Zone::decode)
        .collect())
}

/// Calls `f` with the start of each row in `range`, read from `dir`'s
/// rows file in bounded pieces.
fn for_each_start(dir: &Path, range: Range<u64>, mut f: impl FnMut(i64)) -> Result<(), StoreError> {
    const PIECE: u64 = 64 * ROWS;
    let path = dir.join("rows");
    if range.is_empty() {
        return Ok(());
    }
    let io = |e| StoreError::io(&path, e);
    let file = File::open(&path).map_err(io)?;
    let mut buf = Vec::new();
    let mut at = range.start;
    while at < range.end {
        let n = (range.end - at).min(PIECE);
        buf.resize((n * WIDTH as u64) as usize, 0);
        file.read_exact_at(&mut buf, at * WIDTH as u64)
            .map_err(io)?;
        for c in buf.chunks_exact(WIDTH) {
            let mut b = [0u8; WIDTH];
            b.copy_from_slice(c);
            f(VersionRow::decode(&b).from);
        }
        at += n;
    }
    Ok(())
}
