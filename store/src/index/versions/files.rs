//! One cluster's files: rows, details, object names and the rows' zone
//! map, only ever appended (in batches), and cut back to the committed
//! lengths when reopened for writing.
//!
//! Each file's bytes up to its committed length carry a CRC-32 in the
//! mark ([`Sums`]), and the zone map carries one per zone of rows: a read
//! checks everything it reads before it decodes it, so a flipped byte is
//! found before an answer uses it, and the indexes are rebuilt from the
//! log ([`StoreError::IndexDamaged`]). The checksums guard against damage
//! (a disk, a copy, an editor), not against an adversary: what auditors
//! check is the leaves and the Merkle tree.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::row::{self, VersionRow, WIDTH};
use super::zones::{self, Filling};
use super::{ObjectName, Span};
use crate::StoreError;

/// The committed lengths of a cluster's files, recorded with each mark:
/// bytes past a mark's lengths belong to entries the next open replays,
/// and are cut off when the files are next opened for writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ClusterMeta {
    pub(crate) rows: u64,
    pub(crate) objects: u32,
    pub(crate) objects_bytes: u64,
    pub(crate) details_bytes: u64,
    /// The files' checksums at these lengths (`None`: a mark written
    /// before checksums; the next open that owns the ledger computes
    /// them, once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sums: Option<Sums>,
}

impl Default for ClusterMeta {
    /// A cluster with no files yet: empty, and checksummed from the start.
    fn default() -> Self {
        ClusterMeta {
            rows: 0,
            objects: 0,
            objects_bytes: 0,
            details_bytes: 0,
            sums: Some(Sums::default()),
        }
    }
}

/// CRC-32 of a cluster's files at their committed lengths (0 for none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Sums {
    /// Every row.
    pub(crate) rows: u32,
    /// The rows past the last complete zone (each complete zone's record
    /// in the zone map has its own).
    pub(crate) tail: u32,
    pub(crate) details: u32,
    pub(crate) objects: u32,
}

/// `crc` (a CRC-32 so far) carried on over `bytes`.
pub(crate) fn crc(crc: u32, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(bytes);
    h.finalize()
}

/// Damage to the files of the cluster in `dir`: the indexes are rebuilt.
pub(crate) fn damaged(dir: &Path, reason: &str) -> StoreError {
    StoreError::IndexDamaged {
        path: dir.to_path_buf(),
        reason: format!("version files: {reason}"),
    }
}

/// Checks `bytes`, read from `dir`'s file `name`, against `want`.
fn check(dir: &Path, name: &str, bytes: &[u8], want: u32) -> Result<(), StoreError> {
    match crc(0, bytes) == want {
        true => Ok(()),
        false => Err(damaged(dir, &format!("{name} does not match its checksum"))),
    }
}

/// The lengths of `meta` with the checksums of the files in `dir` at
/// those lengths, computed from the files (a mark written before
/// checksums, trusted as the length checks trusted it then); the zone map
/// is computed again in the new format and the old one removed.
pub(crate) fn with_sums(dir: &Path, meta: &ClusterMeta) -> Result<ClusterMeta, StoreError> {
    let (rows, tail) = zones::rebuild(dir, meta.rows)?;
    let sums = Sums {
        rows,
        tail,
        details: crc_of_range(&dir.join("details"), 0..meta.details_bytes)?,
        objects: crc_of_range(&dir.join("objects"), 0..meta.objects_bytes)?,
    };
    Ok(ClusterMeta {
        sums: Some(sums),
        ..*meta
    })
}

/// Capacity a cluster's write buffers keep between batches. Every cluster
/// the writer has seen keeps its buffers, so whatever they keep is paid
/// per cluster: a batch that fell on one cluster (a fleet's first
/// inventory comes cluster by cluster) grew them to megabytes, and kept
/// capacity was a third of ingest's peak heap at 3M events of a 100-cluster
/// fleet (heaptrack). At 64 KiB, 100 clusters held 6.6 MB at ingest's
/// peak over 1M events of such a fleet and 19.7 MB over its first 6M (a
/// first inventory writes every object's name and details); at this,
/// under 2 MiB. A batch that needs more grows them again.
const KEPT_BUFFER_BYTES: usize = 4 << 10;

/// A file that names itself in its errors.
struct NamedFile {
    file: File,
    path: PathBuf,
}

impl NamedFile {
    fn open(path: PathBuf, len: u64) -> Result<NamedFile, StoreError> {
        let file = open_for_writing(&path)?;
        file.set_len(len).map_err(|e| StoreError::io(&path, e))?;
        Ok(NamedFile { file, path })
    }

    fn write_at(&self, bytes: &[u8], at: u64) -> Result<(), StoreError> {
        self.file
            .write_all_at(bytes, at)
            .map_err(|e| StoreError::io(&self.path, e))
    }

    fn sync(&self) -> Result<(), StoreError> {
        self.file
            .sync_data()
            .map_err(|e| StoreError::io(&self.path, e))
    }
}

/// Opens (creating) one of a cluster's files to read and append; what
/// it already holds stays.
pub(super) fn open_for_writing(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::io(path, e))
}

/// Open files of one cluster and what an apply added but did not flush.
pub(crate) struct ClusterFiles {
    rows: NamedFile,
    details: NamedFile,
    objects: NamedFile,
    zones: NamedFile,
    committed: ClusterMeta,
    /// Bytes of the zones file written.
    zones_len: u64,
    /// The zone the next rows fall in.
    filling: Filling,
    new_rows: Vec<u8>,
    new_details: Vec<u8>,
    new_objects: Vec<u8>,
    new_zones: Vec<u8>,
    new_object_count: u32,
    /// Written since the last sync.
    unsynced: bool,
}

impl ClusterFiles {
    pub(crate) fn open(dir: &Path, committed: ClusterMeta) -> Result<ClusterFiles, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let open = |name: &str, len: u64| NamedFile::open(dir.join(name), len);
        let rows = open("rows", committed.rows * WIDTH as u64)?;
        let committed = match committed.sums {
            Some(_) => committed,
            None => with_sums(dir, &committed)?,
        };
        let sums = committed.sums.unwrap_or_default();
        let zones_len = zones::complete(dir, committed.rows, &sums)?;
        // The writer carries the tail's checksum on from what is on disk.
        let filling = zones::filling(dir, committed.rows, sums.tail)?;
        Ok(ClusterFiles {
            rows,
            details: open("details", committed.details_bytes)?,
            objects: open("objects", committed.objects_bytes)?,
            zones: open(zones::FILE, zones_len)?,
            committed,
            zones_len,
            filling,
            new_rows: Vec::new(),
            new_details: Vec::new(),
            new_objects: Vec::new(),
            new_zones: Vec::new(),
            new_object_count: 0,
            unsynced: false,
        })
    }

    /// Adds an object name; returns its id.
    pub(crate) fn add_object(&mut self, name: &ObjectName) -> Result<u32, StoreError> {
        let id = self
            .committed
            .objects
            .checked_add(self.new_object_count)
            .ok_or_else(|| StoreError::Corrupt("more than 2^32 objects in a cluster".into()))?;
        let text = [&name.group, &name.kind, &name.namespace, &name.name]
            .map(String::as_str)
            .join("\0");
        self.new_objects
            .extend_from_slice(&(text.len() as u32).to_le_bytes());
        self.new_objects.extend_from_slice(text.as_bytes());
        self.new_object_count += 1;
        Ok(id)
    }

    /// Adds an encoded details record; returns its offset.
    pub(crate) fn add_details(&mut self, encoded: &[u8]) -> u64 {
        let at = self.committed.details_bytes + self.new_details.len() as u64;
        self.new_details.extend_from_slice(encoded);
        at
    }

    /// Adds a row.
    pub(crate) fn add_row(&mut self, r: &VersionRow) {
        let start = self.new_rows.len();
        r.encode(&mut self.new_rows);
        if let Some(zone) = self.filling.add(r.from, &self.new_rows[start..]) {
            zone.encode(&mut self.new_zones);
        }
    }

    /// Writes what was added past the committed lengths (no sync: see
    /// [`ClusterFiles::sync`]); returns the new committed lengths, which
    /// the next mark records.
    pub(crate) fn write(&mut self) -> Result<ClusterMeta, StoreError> {
        let c = &mut self.committed;
        if self.new_rows.is_empty() && self.new_details.is_empty() && self.new_objects.is_empty() {
            return Ok(*c);
        }
        self.rows.write_at(&self.new_rows, c.rows * WIDTH as u64)?;
        self.details.write_at(&self.new_details, c.details_bytes)?;
        self.objects.write_at(&self.new_objects, c.objects_bytes)?;
        // After the rows: a zone's record never precedes its rows.
        self.zones.write_at(&self.new_zones, self.zones_len)?;
        self.zones_len += self.new_zones.len() as u64;
        if let Some(s) = &mut c.sums {
            s.rows = crc(s.rows, &self.new_rows);
            s.tail = self.filling.sum();
            s.details = crc(s.details, &self.new_details);
            s.objects = crc(s.objects, &self.new_objects);
        }
        c.rows += (self.new_rows.len() / WIDTH) as u64;
        c.details_bytes += self.new_details.len() as u64;
        c.objects_bytes += self.new_objects.len() as u64;
        c.objects += self.new_object_count;
        for buffer in [
            &mut self.new_rows,
            &mut self.new_details,
            &mut self.new_objects,
            &mut self.new_zones,
        ] {
            buffer.clear();
            buffer.shrink_to(KEPT_BUFFER_BYTES);
        }
        self.new_object_count = 0;
        self.unsynced = true;
        Ok(*c)
    }

    /// Syncs what [`ClusterFiles::write`] wrote; returns the lengths now
    /// durable when there was anything to sync.
    pub(crate) fn sync(&mut self) -> Result<Option<ClusterMeta>, StoreError> {
        if !std::mem::take(&mut self.unsynced) {
            return Ok(None);
        }
        for f in [&self.rows, &self.details, &self.objects, &self.zones] {
            f.sync()?;
        }
        Ok(Some(self.committed))
    }

    /// The lengths written so far.
    pub(crate) fn committed(&self) -> ClusterMeta {
        self.committed
    }
}

/// A cluster's committed rows and details, decoded (its object names
/// are read through a [`super::names::NameCache`]).
pub(crate) struct Contents {
    pub(crate) rows: Vec<VersionRow>,
    pub(crate) details: Vec<u8>,
}

/// Reads the rows and details of a cluster `span` asks for, each checked
/// against its checksum (when the mark has them).
pub(crate) fn read(dir: &Path, meta: &ClusterMeta, span: Span) -> Result<Contents, StoreError> {
    let checked = |name: &str, bytes: &[u8], want: Option<u32>| match want {
        Some(want) => check(dir, name, bytes, want),
        None => Ok(()),
    };
    let sums = meta.sums;
    let mut rows = Vec::new();
    match span {
        Span::All => {
            let bytes = read_prefix(&dir.join("rows"), meta.rows * WIDTH as u64)?;
            checked("rows", &bytes, sums.map(|s| s.rows))?;
            rows.reserve_exact(meta.rows as usize);
            decode(&bytes, &mut rows, |_| true);
            row::fill_ends(&mut rows);
        }
        Span::Live { at } => read_zoned(dir, meta, i64::MIN, at.saturating_add(1), &mut rows)?,
        Span::Starting { since, until } => read_zoned(dir, meta, since, until, &mut rows)?,
    }
    let details = match span {
        Span::Starting { .. } => Vec::new(),
        Span::All | Span::Live { .. } => {
            let details = read_prefix(&dir.join("details"), meta.details_bytes)?;
            checked("details", &details, sums.map(|s| s.details))?;
            details
        }
    };
    Ok(Contents { rows, details })
}

/// Appends the rows of `bytes` (whole rows) whose stored bytes `keep`
/// keeps (a row outside a scan's range is not decoded).
fn decode(bytes: &[u8], rows: &mut Vec<VersionRow>, keep: impl Fn(&[u8]) -> bool) {
    rows.extend(
        bytes
            .chunks_exact(WIDTH)
            .filter(|c| keep(c))
            .filter_map(|c| <&[u8; WIDTH]>::try_from(c).ok().map(VersionRow::decode)),
    )
}

/// Appends the rows that start in `[since, until)`, read from the zones
/// that can hold such a start and the rows past the last zone, each zone
/// checked against its record and the tail against the mark's checksum.
fn read_zoned(
    dir: &Path,
    meta: &ClusterMeta,
    since: i64,
    until: i64,
    rows: &mut Vec<VersionRow>,
) -> Result<(), StoreError> {
    let path = dir.join("rows");
    let io = |e| StoreError::io(&path, e);
    let sums = meta.sums;
    let complete = meta.rows / zones::ROWS;
    let zones = zones::read(dir, complete)?;
    if sums.is_some() && (zones.len() as u64) < complete {
        // A writer completes the map before its mark names the
        // rows: a short one was cut since.
        return Err(damaged(
            dir,
            &format!("the zone map holds {} of {complete} zones", zones.len()),
        ));
    }
    let ranges = zones::select(&zones, meta.rows, since, until);
    if ranges.is_empty() {
        return Ok(());
    }
    let file = File::open(&path).map_err(io)?;
    // At most every row of the ranges is kept: one allocation, where
    // growing by doubling copied the rows kept so far (a sixteenth of a
    // day's count at 10M).
    rows.reserve(ranges.iter().map(|r| (r.end - r.start) as usize).sum());
    // One buffer, zeroed once, for every range (resizing it per range
    // zeroed each range's bytes again before reading over them).
    let longest = ranges.iter().map(|r| r.end - r.start).max().unwrap_or(0);
    let mut buffer = vec![0u8; (longest * WIDTH as u64) as usize];
    for r in ranges {
        let bytes = &mut buffer[..((r.end - r.start) * WIDTH as u64) as usize];
        file.read_exact_at(bytes, r.start * WIDTH as u64)
            .map_err(io)?;
        let bytes = &*bytes;
        // Ranges start at a zone's first row: each piece is one zone,
        // checked against its record, or the tail.
        let zone_bytes = zones::ROWS as usize * WIDTH;
        for (i, piece) in bytes.chunks(zone_bytes).enumerate() {
            let k = (r.start / zones::ROWS) as usize + i;
            let want = match zones.get(k) {
                Some(z) => Some(z.sum),
                None => sums.map(|s| s.tail),
            };
            if let Some(want) = want {
                check(dir, "rows", piece, want)?;
            }
        }
        // A zone's rows that start outside the range are dropped here
        // (late events put rows of many days in one zone): every reader
        // of these rows skips them anyway.
        let starts_in =
            |c: &[u8]| VersionRow::stored_from(c).is_some_and(|from| since <= from && from < until);
        decode(bytes, rows, starts_in);
    }
    Ok(())
}

/// The CRC-32 of the bytes `range` of a file, read in bounded pieces (an
/// error when the file is shorter).
fn crc_of_range(path: &Path, range: std::ops::Range<u64>) -> Result<u32, StoreError> {
    const PIECE: u64 = 1 << 20;
    if range.is_empty() {
        return Ok(0);
    }
    let io = |e| StoreError::io(path, e);
    let f = File::open(path).map_err(io)?;
    let mut buf = Vec::new();
    let (mut at, mut sum) = (range.start, 0);
    while at < range.end {
        let n = (range.end - at).min(PIECE);
        buf.resize(n as usize, 0);
        f.read_exact_at(&mut buf, at).map_err(io)?;
        sum = crc(sum, &buf);
        at += n;
    }
    Ok(sum)
}

/// The first `len` bytes of a file (an error when it is shorter).
fn read_prefix(path: &Path, len: u64) -> Result<Vec<u8>, StoreError> {
    read_range(path, 0, len)
}

/// The bytes `from..to` of the file at `path` (an error when it is
/// shorter).
pub(crate) fn read_range(path: &Path, from: u64, to: u64) -> Result<Vec<u8>, StoreError> {
    if from >= to {
        return Ok(Vec::new());
    }
    let io = |e| StoreError::io(path, e);
    let f = File::open(path).map_err(io)?;
    let mut buf = vec![0u8; (to - from) as usize];
    f.read_exact_at(&mut buf, from).map_err(io)?;
    Ok(buf)
}

/// Which of a cluster's files is shorter than `meta` records (the name and
/// both lengths), if one is: such files lost committed bytes and cannot be
/// trusted.
pub(crate) fn short_file(dir: &Path, meta: &ClusterMeta) -> Option<String> {
    // The zones file is not here: it is derived, and a short one is
    // completed, not a reason to distrust the others.
    let wanted = [
        ("rows", meta.rows * WIDTH as u64),
        ("details", meta.details_bytes),
        ("objects", meta.objects_bytes),
    ];
    wanted.into_iter().find_map(|(name, len)| {
        let path = dir.join(name);
        let on_disk = std::fs::metadata(&path).map_or(0, |m| m.len());
        (on_disk < len).then(|| {
            format!(
                "{} holds {on_disk} bytes, the index records {len}",
                path.display()
            )
        })
    })
}

/// Syncs a cluster's files by path (files this process has not opened).
pub(crate) fn sync_paths(dir: &Path) -> Result<(), StoreError> {
    for name in ["rows", "details", "objects", zones::FILE] {
        let path = dir.join(name);
        match File::open(&path) {
            Ok(f) => f.sync_data().map_err(|e| StoreError::io(&path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(&path, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every name of the `objects` file, read afresh, as text (or the
    /// error the read met).
    fn names_of(dir: &Path, meta: &ClusterMeta) -> Result<Vec<Option<String>>, StoreError> {
        let names = super::super::names::NameCache::default().names(dir, meta)?;
        Ok((0..names.len() as u32)
            .map(|id| names.text(id).map(str::to_string))
            .collect())
    }

    fn part() -> impl Strategy<Value = String> {
        // Short parts over few letters, so prefixes and ties are common.
        "[ab]{0,3}"
    }

    /// A batch that fell on one cluster leaves its buffers no larger than
    /// [`KEPT_BUFFER_BYTES`], and what it wrote reads back whole.
    #[test]
    fn a_large_batch_does_not_stay_in_the_buffers() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = ClusterFiles::open(dir.path(), ClusterMeta::default()).unwrap();
        let big = "x".repeat(300);
        for i in 0..4096u32 {
            let name = ObjectName {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: "default".into(),
                name: format!("{big}-{i}"),
            };
            let id = files.add_object(&name).unwrap();
            let details = files.add_details(big.as_bytes());
            files.add_row(&VersionRow {
                object: id,
                flags: 0,
                from: i64::from(i),
                to: i64::MAX,
                to_index: u64::MAX,
                index: u64::from(i),
                rv: 0,
                details,
            });
        }
        assert!(
            files.new_objects.len() > KEPT_BUFFER_BYTES,
            "the batch is large"
        );
        let meta = files.write().unwrap();
        for buffer in [&files.new_rows, &files.new_details, &files.new_objects] {
            assert!(buffer.is_empty());
            assert!(
                buffer.capacity() <= KEPT_BUFFER_BYTES,
                "{}",
                buffer.capacity()
            );
        }
        assert_eq!((meta.rows, meta.objects), (4096, 4096));
        assert_eq!(meta.details_bytes, 4096 * 300);
        let versions =
            super::super::read_cluster(dir.path(), "c", &meta, Span::All, &Default::default())
                .unwrap();
        assert_eq!(versions.rows().len(), 4096);
        assert_eq!(versions.object(4095).unwrap().name, format!("{big}-4095"));
    }

    /// What happens to a cluster's files between two batches.
    #[derive(Clone, Debug)]
    enum Between {
        /// Nothing: the writer goes on.
        Continue,
        /// The process stops and the files are reopened at the committed
        /// lengths.
        Reopen,
        /// The batch was written but the process died before its mark:
        /// reopened at the lengths before it (rows and zones past them
        /// are on disk).
        CrashBeforeMark,
        /// The zones file is cut to this many bytes (or removed), then
        /// reopened.
        CutZones(Option<u64>),
    }

    fn between() -> impl Strategy<Value = Between> {
        prop_oneof![
            3 => Just(Between::Continue),
            1 => Just(Between::Reopen),
            1 => Just(Between::CrashBeforeMark),
            1 => proptest::option::of(0u64..200).prop_map(Between::CutZones),
        ]
    }

    /// Rows whose starts drift upwards with some noise, and some late by
    /// far: zone maps must hold whatever the order.
    fn batch() -> impl Strategy<Value = Vec<(u32, i64)>> {
        proptest::collection::vec(
            (0u32..40, -300i64..300, proptest::bool::weighted(0.02)),
            0..700,
        )
        .prop_map(|rows| {
            rows.into_iter()
                .map(|(object, noise, far)| (object, if far { -100_000 } else { noise }))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        /// A read of the rows starting in a range, through the zone map,
        /// holds every committed row that starts in it, in log order,
        /// whatever crashes, reopenings and damage to the zones file came
        /// between the batches; and it skips zones: a range no row meets
        /// reads no more than the incomplete last zone.
        #[test]
        fn starting_reads_hold_every_row_in_range(
            steps in proptest::collection::vec((batch(), between()), 1..8),
            ranges in proptest::collection::vec((-2_000i64..12_000, 0i64..3_000), 1..6),
            points in proptest::collection::vec(0.0f64..1.0, 4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut meta = ClusterMeta::default();
            let mut files = ClusterFiles::open(dir.path(), meta).unwrap();
            // The committed rows: (object, start, index).
            let mut model: Vec<(u32, i64, u64)> = Vec::new();
            let mut objects = 0u32;
            for (rows, then) in steps {
                let before = (meta, model.len(), objects);
                for (object, from) in rows {
                    while objects <= object {
                        files.add_object(&ObjectName {
                            group: String::new(),
                            kind: "ConfigMap".into(),
                            namespace: "ns".into(),
                            name: format!("o{objects}"),
                        }).unwrap();
                        objects += 1;
                    }
                    let index = model.len() as u64;
                    let from = index as i64 * 10 + from;
                    files.add_row(&VersionRow {
                        object, flags: 0, from, to: i64::MAX, to_index: u64::MAX,
                        index, rv: 0, details: 0,
                    });
                    model.push((object, from, index));
                }
                meta = files.write().unwrap();
                files.sync().unwrap();
                match then {
                    Between::Continue => {}
                    Between::Reopen => files = ClusterFiles::open(dir.path(), meta).unwrap(),
                    Between::CrashBeforeMark => {
                        (meta, objects) = (before.0, before.2);
                        model.truncate(before.1);
                        drop(files);
                        files = ClusterFiles::open(dir.path(), meta).unwrap();
                    }
                    Between::CutZones(len) => {
                        drop(files);
                        let zones = dir.path().join(zones::FILE);
                        match len {
                            Some(len) => {
                                let f = OpenOptions::new().write(true).open(&zones).unwrap();
                                let on_disk = f.metadata().unwrap().len();
                                f.set_len(len.min(on_disk)).unwrap();
                            }
                            None => std::fs::remove_file(&zones).unwrap(),
                        }
                        files = ClusterFiles::open(dir.path(), meta).unwrap();
                    }
                }
            }
            let all = read(dir.path(), &meta, Span::All).unwrap();
            let all: Vec<(u32, i64, u64)> = all.rows.iter().map(|r| (r.object, r.from, r.index)).collect();
            prop_assert_eq!(&all, &model);
            // The zone map is exactly the model's complete zones, each
            // with the checksum of its rows as stored.
            let stored_rows = std::fs::read(dir.path().join("rows")).unwrap();
            let mut want = Vec::new();
            for (k, zone) in model.chunks_exact(zones::ROWS as usize).enumerate() {
                let starts = zone.iter().map(|r| r.1);
                let bytes = zones::ROWS as usize * WIDTH;
                zones::Zone {
                    least: starts.clone().min().unwrap(),
                    greatest: starts.max().unwrap(),
                    sum: crc(0, &stored_rows[k * bytes..(k + 1) * bytes]),
                }
                .encode(&mut want);
            }
            prop_assert_eq!(std::fs::read(dir.path().join(zones::FILE)).unwrap(), want);
            // Ranges that begin or end exactly at a stored start, where a
            // bound compared the wrong way shows.
            let at_rows = points.iter().filter_map(|p| {
                let r = model.get((p * model.len() as f64) as usize)?;
                Some([(r.1, 1), (r.1 - 50, 51), (r.1 - 50, 50)])
            });
            let at_zone_ends = model
                .chunks(zones::ROWS as usize)
                .filter_map(|zone| zone.iter().map(|r| r.1).max())
                .map(|greatest| (greatest, 1));
            for (since, width) in ranges.into_iter().chain(at_rows.flatten()).chain(at_zone_ends) {
                let until = since + width;
                let got = read(dir.path(), &meta, Span::Starting { since, until }).unwrap();
                let got: Vec<(u32, i64, u64)> = got.rows.iter().map(|r| (r.object, r.from, r.index)).collect();
                prop_assert!(got.windows(2).all(|w| w[0].2 < w[1].2), "log order");
                prop_assert!(got.iter().all(|r| model.get(r.2 as usize) == Some(r)));
                let in_range = |r: &&(u32, i64, u64)| r.1 >= since && r.1 < until;
                let got_in: Vec<_> = got.iter().filter(in_range).collect();
                let want_in: Vec<_> = model.iter().filter(in_range).collect();
                prop_assert_eq!(got_in, want_in);
            }
            // An as-of read through the zone map, ends left open, answers
            // as a read of every row with its end: at each stored start
            // tried above (and just before it), as known at the end and
            // part-way.
            let every = super::super::read_cluster(dir.path(), "c", &meta, Span::All, &Default::default()).unwrap();
            let known = [model.len() as u64, model.len() as u64 / 2, model.len() as u64 / 5];
            let live = |v: &super::super::ClusterVersions, at: i64, below: u64| -> Vec<u64> {
                v.live_at(at, below).iter().map(|r| r.index).collect()
            };
            for at in model.iter().map(|r| r.1).step_by(7).flat_map(|t| [t, t - 1]) {
                let through_zones =
                    super::super::read_cluster(dir.path(), "c", &meta, Span::Live { at }, &Default::default()).unwrap();
                for below in known {
                    prop_assert_eq!(live(&through_zones, at, below), live(&every, at, below), "at {} below {}", at, below);
                }
            }
            for (since, until) in [(i64::MAX - 1, i64::MAX), (i64::MIN, i64::MIN + 1)] {
                let nothing = read(dir.path(), &meta, Span::Starting { since, until }).unwrap();
                prop_assert!((nothing.rows.len() as u64) < zones::ROWS, "{} rows read", nothing.rows.len());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// One flipped byte anywhere in a cluster's committed files is
        /// never read as data: a read of every row fails on a flip in the
        /// rows, details or names; a read of the rows starting in a range
        /// fails on a flip in the zone map, the names or a zone it reads,
        /// and whatever a read returns is exactly what was written.
        #[test]
        fn a_flipped_byte_is_never_read_as_data(
            starts in proptest::collection::vec(0i64..5_000, 1..1_300),
            file in 0usize..4,
            at in any::<u64>(),
            bit in 0u8..8,
            (since, width) in (0i64..5_000, 1i64..2_000),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut files = ClusterFiles::open(dir.path(), ClusterMeta::default()).unwrap();
            for (i, from) in starts.iter().enumerate() {
                let id = files.add_object(&ObjectName {
                    group: String::new(),
                    kind: "ConfigMap".into(),
                    namespace: "ns".into(),
                    name: format!("o{i}"),
                }).unwrap();
                let details = files.add_details(format!("details of {i}").as_bytes());
                files.add_row(&VersionRow {
                    object: id, flags: 0, from: *from, to: i64::MAX, to_index: u64::MAX,
                    index: i as u64, rv: 0, details,
                });
            }
            let meta = files.write().unwrap();
            files.sync().unwrap();
            drop(files);
            let written = read(dir.path(), &meta, Span::All).unwrap();
            let written_names = names_of(dir.path(), &meta).unwrap();
            let name = ["rows", "details", "objects", zones::FILE][file];
            let path = dir.path().join(name);
            let mut bytes = std::fs::read(&path).unwrap();
            prop_assume!(!bytes.is_empty());
            let at = (at % bytes.len() as u64) as usize;
            bytes[at] ^= 1 << bit;
            std::fs::write(&path, &bytes).unwrap();
            let damaged = |r: &Result<Contents, StoreError>| {
                matches!(r, Err(StoreError::IndexDamaged { .. }))
            };
            let all = read(dir.path(), &meta, Span::All);
            let names = names_of(dir.path(), &meta);
            prop_assert_eq!(
                damaged(&all) || names.is_err(),
                name != zones::FILE,
                "{}", name
            );
            prop_assert_eq!(names.is_err(), name == "objects", "{}", name);
            if let Ok(all) = &all {
                prop_assert_eq!(&all.rows, &written.rows);
                prop_assert_eq!(&all.details, &written.details);
            }
            if let Ok(names) = &names {
                prop_assert_eq!(names, &written_names);
            }
            let until = since + width;
            let some = read(dir.path(), &meta, Span::Starting { since, until });
            match &some {
                Ok(got) => {
                    prop_assert!(name != zones::FILE, "{}", name);
                    for r in &got.rows {
                        let mut want = written.rows[r.index as usize];
                        want.to = i64::MAX;
                        want.to_index = u64::MAX;
                        prop_assert_eq!(r, &want);
                    }
                    let in_range = |r: &&VersionRow| r.from >= since && r.from < until;
                    prop_assert_eq!(
                        got.rows.iter().filter(in_range).count(),
                        written.rows.iter().filter(in_range).count()
                    );
                }
                Err(e) => prop_assert!(damaged(&some), "{}", e),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The stored name orders objects as their (group, kind,
        /// namespace, name) tuples do: inventory sorts on it.
        #[test]
        fn stored_names_sort_as_the_tuples(
            names in proptest::collection::btree_set((part(), part(), part(), part()), 1..30)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut files = ClusterFiles::open(dir.path(), ClusterMeta::default()).unwrap();
            let names: Vec<ObjectName> = names
                .into_iter()
                .rev()
                .map(|(group, kind, namespace, name)| ObjectName { group, kind, namespace, name })
                .collect();
            for n in &names {
                files.add_object(n).unwrap();
            }
            let meta = files.write().unwrap();
            let versions = super::super::read_cluster(dir.path(), "c", &meta, Span::All, &Default::default()).unwrap();
            let back: Vec<ObjectName> = (0..names.len() as u32)
                .map(|id| versions.object(id).unwrap().to_name())
                .collect();
            prop_assert_eq!(&back, &names);
            let key = |i: usize| versions.name_key(i as u32);
            let mut by_key: Vec<usize> = (0..names.len()).collect();
            by_key.sort_by(|a, b| key(*a).cmp(key(*b)));
            let mut by_tuple: Vec<usize> = (0..names.len()).collect();
            by_tuple.sort_by(|a, b| names[*a].cmp(&names[*b]));
            prop_assert_eq!(by_key, by_tuple);
        }
    }
}
