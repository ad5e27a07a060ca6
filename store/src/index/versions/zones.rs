//! Zone maps over a cluster's rows: for every [`ROWS`] rows, the least and
//! greatest valid time they start at, so a scan bounded on `valid_from`
//! reads only the zones that can hold a match, and the checksum of those
//! rows, so that what it reads is checked without reading the rest.
//!
//! Rows are appended in log order, which follows valid time closely (a
//! late event is late by a reconnect, not by weeks), so a zone spans a
//! short stretch of valid time and a day's scan skips most of them.
//!
//! The [`FILE`] file beside `rows` holds one 24-byte record per complete
//! zone (least, greatest start, CRC-32 of the zone's rows, CRC-32 of the
//! record's first 20 bytes; little endian). Its one invariant: record `k`
//! exists only when rows `k*ROWS..(k+1)*ROWS` are written, and holds their
//! bounds and checksum. The rows of the last, incomplete zone have no
//! record (the mark's [`Sums::tail`] covers them) and are always read. The
//! file is derived: a record past the committed rows is cut, and a missing
//! one (a ledger written before zones or checksums, a crash between the
//! two writes, a lost file) is computed again from the rows, once the rows
//! as a whole match their checksum, so a short or absent file found by an
//! open costs speed, never an answer (found by a read, which cannot check
//! the rows it would skip, it is damage). A record that fails its own
//! checksum is damage.
//!
//! Before checksums the map was `zones`, 16 bytes a record; the next open
//! that owns the ledger computes the new map and removes it.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::files::{crc, damaged, Sums};
use super::row::{VersionRow, WIDTH};
use crate::StoreError;

/// The zone map's file name in a cluster's directory.
pub(crate) const FILE: &str = "zonemap";
/// The map's name before checksums (16-byte records, no sums).
pub(crate) const OLD_FILE: &str = "zones";

/// Rows per zone: 20 KiB of rows, so a skipped zone saves a read worth
/// having and the zone file stays under 0.04 bytes per row.
pub(crate) const ROWS: u64 = 512;

/// Bytes per zone record.
const RECORD: u64 = 24;
/// The bytes of a record its own checksum covers.
const COVERED: usize = 20;

/// The bounds of one zone's starts, and the checksum of its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Zone {
    pub(crate) least: i64,
    pub(crate) greatest: i64,
    /// CRC-32 of the zone's [`ROWS`] rows as stored.
    pub(crate) sum: u32,
}

impl Zone {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.least.to_le_bytes());
        out.extend_from_slice(&self.greatest.to_le_bytes());
        out.extend_from_slice(&self.sum.to_le_bytes());
        let own = crc(0, &out[start..]);
        out.extend_from_slice(&own.to_le_bytes());
    }

    /// A record, `None` when it fails its own checksum.
    fn decode(b: &[u8]) -> Option<Zone> {
        let covered = b.get(..COVERED)?;
        let own = u32::from_le_bytes(b.get(COVERED..COVERED + 4)?.try_into().ok()?);
        if crc(0, covered) != own {
            return None;
        }
        let i64_at = |i: usize| covered[i..i + 8].try_into().ok().map(i64::from_le_bytes);
        Some(Zone {
            least: i64_at(0)?,
            greatest: i64_at(8)?,
            sum: u32::from_le_bytes(covered[16..20].try_into().ok()?),
        })
    }

    /// Whether a row of this zone can start in `[since, until)`.
    fn meets(&self, since: i64, until: i64) -> bool {
        self.greatest >= since && self.least < until
    }
}

/// The zone being filled by a writer: the starts and the checksum of the
/// rows past the last complete zone.
#[derive(Debug, Default)]
pub(crate) struct Filling {
    rows: u64,
    least: i64,
    greatest: i64,
    sum: u32,
}

impl Filling {
    /// Counts a row (its start and stored bytes); returns the zone it
    /// completes, if it does.
    pub(crate) fn add(&mut self, from: i64, bytes: &[u8]) -> Option<Zone> {
        if self.rows == 0 {
            (self.least, self.greatest) = (from, from);
        } else {
            self.least = self.least.min(from);
            self.greatest = self.greatest.max(from);
        }
        self.sum = crc(self.sum, bytes);
        self.rows += 1;
        (self.rows == ROWS).then(|| {
            let zone = Zone {
                least: self.least,
                greatest: self.greatest,
                sum: self.sum,
            };
            *self = Filling::default();
            zone
        })
    }

    /// The checksum of the rows past the last complete zone.
    pub(crate) fn sum(&self) -> u32 {
        self.sum
    }
}

/// How many of the complete zones of the first `rows` rows in `dir` have
/// no record (what [`complete`] would compute).
pub(crate) fn missing(dir: &Path, rows: u64) -> Result<u64, StoreError> {
    let path = dir.join(FILE);
    let len = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    Ok((rows / ROWS).saturating_sub(len / RECORD))
}

/// Brings the [`FILE`] in `dir` to exactly the complete zones of the
/// first `rows` rows: records past them (or a torn record) are cut, and
/// missing ones computed from the rows file, which must first match
/// `sums.rows` as a whole (damaged otherwise: a record is never computed
/// from rows that are not the ones committed). Returns the file's length.
pub(crate) fn complete(dir: &Path, rows: u64, sums: &Sums) -> Result<u64, StoreError> {
    let path = dir.join(FILE);
    let io = |e| StoreError::io(&path, e);
    let file = super::files::open_for_writing(&path)?;
    let complete = rows / ROWS;
    let len = file.metadata().map_err(io)?.len();
    let have = (len / RECORD).min(complete);
    if len != have * RECORD {
        file.set_len(have * RECORD).map_err(io)?;
    }
    if have < complete {
        let computed = compute(dir, rows, have)?;
        if computed.rows != sums.rows {
            return Err(damaged(
                dir,
                "rows do not match their checksum (the zone map is not computed from them)",
            ));
        }
        file.write_all_at(&computed.records, have * RECORD)
            .map_err(io)?;
        file.sync_data().map_err(io)?;
    }
    Ok(complete * RECORD)
}

/// Writes the [`FILE`] in `dir` afresh over the first `rows` rows (the
/// old map, in either format, removed) in one pass over the rows, which
/// also gives their checksums: `(every row, the rows past the last
/// complete zone)`.
pub(crate) fn rebuild(dir: &Path, rows: u64) -> Result<(u32, u32), StoreError> {
    for name in [FILE, OLD_FILE] {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(StoreError::io(&path, e))
            }
            _ => {}
        }
    }
    let computed = compute(dir, rows, 0)?;
    let path = dir.join(FILE);
    let io = |e| StoreError::io(&path, e);
    let file = super::files::open_for_writing(&path)?;
    file.write_all_at(&computed.records, 0).map_err(io)?;
    file.sync_data().map_err(io)?;
    Ok((computed.rows, computed.tail))
}

/// What one pass over a cluster's rows gives.
struct Computed {
    /// The encoded records of the complete zones from the one asked for.
    records: Vec<u8>,
    /// CRC-32 of every row.
    rows: u32,
    /// CRC-32 of the rows past the last complete zone.
    tail: u32,
}

/// Reads the first `rows` rows in `dir` once: the records of the complete
/// zones from zone `first` on, and the rows' checksums.
fn compute(dir: &Path, rows: u64, first: u64) -> Result<Computed, StoreError> {
    let mut records = Vec::new();
    let mut filling = Filling::default();
    let mut whole = 0;
    let from_row = first * ROWS;
    for_each_row(dir, 0..rows, |at, from, bytes| {
        whole = crc(whole, bytes);
        if at >= from_row {
            if let Some(z) = filling.add(from, bytes) {
                z.encode(&mut records);
            }
        }
    })?;
    Ok(Computed {
        records,
        rows: whole,
        tail: filling.sum(),
    })
}

/// The incomplete zone past the complete zones of the first `rows` rows
/// in `dir`: where a writer goes on from. Its rows must match `tail`, the
/// checksum committed for them (damaged otherwise: a writer carries that
/// checksum on, and an open checks it).
pub(crate) fn filling(dir: &Path, rows: u64, tail: u32) -> Result<Filling, StoreError> {
    let mut filling = Filling::default();
    for_each_row(dir, rows / ROWS * ROWS..rows, |_, from, bytes| {
        filling.add(from, bytes);
    })?;
    match filling.sum() == tail {
        true => Ok(filling),
        false => Err(damaged(
            dir,
            "the rows past the last zone do not match their checksum",
        )),
    }
}

/// The row ranges among the first `rows` rows that can hold a row
/// starting in `[since, until)`, given the records `zones` read of them
/// ([`read`]): every zone whose bounds meet the range, every zone without
/// a record, and the incomplete last zone; adjacent ranges merged. Every
/// range starts at a zone's first row.
pub(crate) fn select(zones: &[Zone], rows: u64, since: i64, until: i64) -> Vec<Range<u64>> {
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
    out
}

/// The first `at_most` zone records of `dir` (fewer when the file is
/// short or absent); a record that fails its checksum is damage.
pub(crate) fn read(dir: &Path, at_most: u64) -> Result<Vec<Zone>, StoreError> {
    let path = dir.join(FILE);
    let io = |e| StoreError::io(&path, e);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let records = (file.metadata().map_err(io)?.len() / RECORD).min(at_most);
    let mut bytes = vec![0u8; (records * RECORD) as usize];
    file.read_exact_at(&mut bytes, 0).map_err(io)?;
    bytes
        .chunks_exact(RECORD as usize)
        .enumerate()
        .map(|(k, b)| {
            Zone::decode(b)
                .ok_or_else(|| damaged(dir, &format!("zone record {k} fails its checksum")))
        })
        .collect()
}

/// Calls `f` with the number, start and stored bytes of each row in
/// `range`, read from `dir`'s rows file in bounded pieces.
fn for_each_row(
    dir: &Path,
    range: Range<u64>,
    mut f: impl FnMut(u64, i64, &[u8]),
) -> Result<(), StoreError> {
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
        for (i, c) in buf.chunks_exact(WIDTH).enumerate() {
            let mut b = [0u8; WIDTH];
            b.copy_from_slice(c);
            f(at + i as u64, VersionRow::decode(&b).from, c);
        }
        at += n;
    }
    Ok(())
}
