//! A cluster's object names, parsed once and shared by the reads that
//! follow, within a byte budget.
//!
//! Every read of a cluster's versions needs the names of its objects (a
//! version row names its object by ordinal), and the `objects` file holds
//! them all: at 10M events, 1M names, about 50 MB over 100 clusters, which
//! every scan of `objects` read, checked and walked again (two fifths of
//! objects-changed-on-day). The file is only ever appended, so a parsed
//! prefix stays true: a read takes the cached names when the file's
//! committed length and checksum are the ones they were parsed at, or
//! parses just the bytes appended since, carrying the checksum on. One
//! invariant: **cached names are used only when the CRC-32 of what they
//! were parsed from (carried over the appended bytes) is the one the
//! mark records for the file's committed length**; anything else reads
//! the file again, as a read without a cache does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::builder::StringViewBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, StringViewArray};

use super::files::{self, ClusterMeta};
use crate::StoreError;

/// Bytes of parsed names a long-running process keeps (see
/// [`crate::Store::keep_object_names`]): the names of about 1.5M objects
/// (names take about 45 bytes here, and 12 more for where they are).
/// Past it the clusters read longest ago are dropped whole; a cluster
/// larger than the budget is parsed for each read and not kept. A store
/// keeps none until told: a command that asks one question reads each
/// cluster once, and would only hold the names past their use (a fleet
/// inventory at 10M peaked at 155 MB with them, 89 MB without).
pub(crate) const BUDGET: usize = 96 << 20;

/// One cluster's object names, in ordinal order.
#[derive(Debug, Default)]
pub struct Names {
    /// Every name, `group\0kind\0namespace\0name`, one after another.
    text: String,
    /// Where each name is in `text`, and whether it was valid UTF-8
    /// (an invalid one is kept lossily, for ordering only).
    at: Vec<Span>,
    /// Length of the file these were parsed from, and its CRC-32.
    file_len: u64,
    crc: u32,
    /// The `name` part of every name, by ordinal, as one column (see
    /// [`Names::name_column`]); built on first use.
    name_column: OnceLock<StringViewArray>,
}

#[derive(Clone, Copy, Debug)]
struct Span {
    start: u32,
    len: u32,
    valid: bool,
    /// Where in the name its first three NULs are (those that end group,
    /// kind and namespace), [`NO_NUL`] for one missing or past `u16`:
    /// found once here, not on every read of the object (scanning for
    /// them was a tenth of objects-changed-on-day at 10M).
    nuls: [u16; 3],
}

/// A NUL not found (or too far into the name for a `u16`).
const NO_NUL: u16 = u16::MAX;

impl Names {
    /// Object `id`'s stored name, `None` for an unknown id or one that
    /// was not UTF-8.
    pub(crate) fn text(&self, id: u32) -> Option<&str> {
        let s = self.at.get(id as usize)?;
        if !s.valid {
            return None;
        }
        self.text.get(s.start as usize..(s.start + s.len) as usize)
    }

    /// Object `id`'s stored name split at its first three NULs (group,
    /// kind, namespace, name), `None` for an unknown id, one that was not
    /// UTF-8, or one with fewer than three NULs.
    pub(crate) fn parts(&self, id: u32) -> Option<[&str; 4]> {
        let s = self.at.get(id as usize)?;
        let text = self.text(id)?;
        let [a, b, c] = match s.nuls.contains(&NO_NUL) {
            false => s.nuls.map(usize::from),
            // A name too long for the offsets kept (or short of NULs).
            true => {
                let mut at = text.bytes().enumerate().filter(|(_, b)| *b == 0);
                let mut next = || at.next().map(|(i, _)| i);
                [next()?, next()?, next()?]
            }
        };
        Some([
            text.get(..a)?,
            text.get(a + 1..b)?,
            text.get(b + 1..c)?,
            text.get(c + 1..)?,
        ])
    }

    /// The `name` part of every object's name, by ordinal, as one column
    /// of string views (null where [`Names::parts`] gives `None`), when
    /// these names have one: the names a [`NameCache`] keeps do.
    ///
    /// Why: a scan that returns only `name` takes it from here by ordinal
    /// (Arrow's `take`) instead of splitting each version's name, which
    /// missed the cache on nearly every version of a day's scan (the
    /// column holds a fifth of the bytes); as views, taking copies 16
    /// bytes per row and shares the strings (copying each string was an
    /// eighth of objects-changed-on-day at 10M). Building it is one more pass
    /// over the names (about 20 ms for 1M objects): worth it for names
    /// kept between reads, not for a read that parses them once.
    pub(crate) fn name_column(&self) -> Option<&StringViewArray> {
        self.name_column.get()
    }

    /// The name column, built now if these names have none. Only before
    /// a [`NameCache`] takes the names: it counts their bytes when it
    /// takes them, and subtracts the same count when it drops them.
    pub(crate) fn with_name_column(&self) -> &StringViewArray {
        self.name_column.get_or_init(|| self.name_parts(0))
    }

    /// The `name` parts of the objects from ordinal `from` on.
    fn name_parts(&self, from: usize) -> StringViewArray {
        let mut column = StringViewBuilder::with_capacity(self.at.len().saturating_sub(from));
        for id in from..self.at.len() {
            match u32::try_from(id).ok().and_then(|id| self.parts(id)) {
                Some([_, _, _, name]) => column.append_value(name),
                None => column.append_null(),
            }
        }
        column.finish()
    }

    /// Object `id`'s stored name as bytes (empty for an unknown id).
    pub(crate) fn key(&self, id: u32) -> &[u8] {
        self.at
            .get(id as usize)
            .and_then(|s| {
                self.text
                    .as_bytes()
                    .get(s.start as usize..(s.start + s.len) as usize)
            })
            .unwrap_or_default()
    }

    /// How many objects.
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// Bytes held, as the budget counts them.
    fn bytes(&self) -> usize {
        self.text.capacity()
            + self.at.capacity() * std::mem::size_of::<Span>()
            + self
                .name_column
                .get()
                .map_or(0, |c| c.get_array_memory_size())
    }

    /// `self` with the names of `appended` (the file's bytes past
    /// `file_len`, whose CRC-32 carried on from `self.crc` is `crc`)
    /// after its own.
    fn extended(&self, appended: &[u8], crc: u32) -> Result<Names, StoreError> {
        let mut next = Names {
            text: String::with_capacity(self.text.len() + appended.len()),
            at: Vec::with_capacity(self.at.len() + appended.len() / 32),
            file_len: self.file_len + appended.len() as u64,
            crc,
            name_column: OnceLock::new(),
        };
        next.text.push_str(&self.text);
        next.at.extend_from_slice(&self.at);
        next.parse(appended)?;
        if let Some(column) = self.name_column() {
            // The column carried on as the names are: the appended
            // objects' parts after a copy of the old ones.
            let appended = next.name_parts(self.at.len());
            let joined = arrow_select::concat::concat(&[column, &appended])
                .map_err(|e| StoreError::Corrupt(format!("name column: {e}")))?;
            let _ = next.name_column.set(joined.as_string_view().clone());
        }
        Ok(next)
    }

    /// Appends the length-prefixed names of `bytes`.
    fn parse(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        let short = || StoreError::Corrupt("version index objects file is short".into());
        let mut at = 0usize;
        while at < bytes.len() {
            let len_bytes = bytes.get(at..at + 4).ok_or_else(short)?;
            let len = u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]])
                as usize;
            let name = bytes.get(at + 4..at + 4 + len).ok_or_else(short)?;
            let start = self.text.len();
            let valid = match std::str::from_utf8(name) {
                Ok(s) => {
                    self.text.push_str(s);
                    true
                }
                Err(_) => {
                    self.text.push_str(&String::from_utf8_lossy(name));
                    false
                }
            };
            let span_of = |n: usize| {
                u32::try_from(n).map_err(|_| {
                    StoreError::Corrupt("version index objects file is over 4 GiB".into())
                })
            };
            let mut nuls = [NO_NUL; 3];
            let found = name.iter().enumerate().filter(|(_, b)| **b == 0);
            for (slot, (at, _)) in nuls.iter_mut().zip(found) {
                *slot = u16::try_from(at).unwrap_or(NO_NUL);
            }
            self.at.push(Span {
                start: span_of(start)?,
                len: span_of(self.text.len() - start)?,
                valid,
                nuls,
            });
            at += 4 + len;
        }
        Ok(())
    }
}

/// The names of the clusters read lately, by directory.
pub(crate) struct NameCache {
    held: Mutex<Held>,
    budget: AtomicUsize,
}

impl Default for NameCache {
    /// A cache that keeps nothing (see [`BUDGET`]).
    fn default() -> Self {
        NameCache::with_budget(0)
    }
}

#[derive(Default)]
struct Held {
    by_dir: HashMap<PathBuf, (Arc<Names>, u64)>,
    bytes: usize,
    clock: u64,
}

impl NameCache {
    /// A cache that holds at most `budget` bytes of names.
    pub(crate) fn with_budget(budget: usize) -> NameCache {
        NameCache {
            held: Mutex::default(),
            budget: AtomicUsize::new(budget),
        }
    }

    /// Keeps at most `budget` bytes from now on (dropping what is over).
    pub(crate) fn set_budget(&self, budget: usize) {
        self.budget.store(budget, Ordering::Relaxed);
        let mut held = self.held();
        self.shrink(&mut held);
    }

    /// The names in the `objects` file of the cluster in `dir` up to the
    /// length `meta` commits, checked against its checksum.
    pub(crate) fn names(&self, dir: &Path, meta: &ClusterMeta) -> Result<Arc<Names>, StoreError> {
        let Some(sums) = meta.sums else {
            // A mark from before checksums: nothing to prove a cached
            // copy current with.
            return Ok(Arc::new(read(dir, meta.objects_bytes, None)?));
        };
        let cached = {
            let mut held = self.held();
            held.clock += 1;
            let now = held.clock;
            held.by_dir.get_mut(dir).map(|(n, used)| {
                *used = now;
                n.clone()
            })
        };
        let names = match cached {
            Some(n) if n.file_len == meta.objects_bytes && n.crc == sums.objects => return Ok(n),
            Some(n) if n.file_len < meta.objects_bytes => {
                // Checked before it is parsed: a flipped length is damage,
                // found by the full read, not a short file.
                let appended =
                    files::read_range(&dir.join("objects"), n.file_len, meta.objects_bytes)?;
                let crc = files::crc(n.crc, &appended);
                if crc == sums.objects {
                    n.extended(&appended, crc)?
                } else {
                    read(dir, meta.objects_bytes, Some(sums.objects))?
                }
            }
            // None yet, or a file cut or rebuilt since, or a reader whose
            // mark is older than the cached names (which stay).
            _ => read(dir, meta.objects_bytes, Some(sums.objects))?,
        };
        // Names to be kept get their name column (see
        // `Names::name_column`) before the budget counts them.
        if self.budget.load(Ordering::Relaxed) > 0 {
            names.with_name_column();
        }
        let names = Arc::new(names);
        self.keep(dir, names.clone());
        Ok(names)
    }

    fn keep(&self, dir: &Path, names: Arc<Names>) {
        let mut held = self.held();
        let held = &mut *held;
        if names.bytes() > self.budget.load(Ordering::Relaxed)
            || held
                .by_dir
                .get(dir)
                .is_some_and(|(kept, _)| kept.file_len > names.file_len)
        {
            return;
        }
        if let Some((old, _)) = held.by_dir.remove(dir) {
            held.bytes -= old.bytes();
        }
        held.clock += 1;
        held.bytes += names.bytes();
        held.by_dir.insert(dir.to_path_buf(), (names, held.clock));
        self.shrink(held);
    }

    /// Drops the clusters read longest ago until `held` fits the budget.
    fn shrink(&self, held: &mut Held) {
        while held.bytes > self.budget.load(Ordering::Relaxed) {
            let Some(oldest) = held
                .by_dir
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(d, _)| d.clone())
            else {
                break;
            };
            if let Some((gone, _)) = held.by_dir.remove(&oldest) {
                held.bytes -= gone.bytes();
            }
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The names of the file's first `len` bytes, checked against `want`.
fn read(dir: &Path, len: u64, want: Option<u32>) -> Result<Names, StoreError> {
    let bytes = files::read_range(&dir.join("objects"), 0, len)?;
    let mut names = Names {
        file_len: len,
        crc: files::crc(0, &bytes),
        ..Names::default()
    };
    if want.is_some_and(|w| w != names.crc) {
        return Err(files::damaged(dir, "objects does not match its checksum"));
    }
    names.parse(&bytes)?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::super::files::ClusterFiles;
    use super::super::ObjectName;
    use super::*;
    use proptest::prelude::*;

    fn texts(names: &Names) -> Vec<Option<String>> {
        (0..names.len() as u32)
            .map(|id| names.text(id).map(str::to_string))
            .collect()
    }

    /// A name whose NULs lie past what the offsets hold is split by a
    /// scan, and one with fewer than three NULs is not an object's name.
    #[test]
    fn long_and_short_names_split_as_their_text_says() {
        let long = "n".repeat(70_000);
        let mut bytes = Vec::new();
        for name in [
            format!("apps\0Deployment\0{long}\0web"),
            "apps\0Deployment".to_string(),
        ] {
            bytes.extend_from_slice(&(name.len() as u32).to_le_bytes());
            bytes.extend_from_slice(name.as_bytes());
        }
        let mut names = Names::default();
        names.parse(&bytes).unwrap();
        assert_eq!(
            names.parts(0),
            Some(["apps", "Deployment", long.as_str(), "web"])
        );
        assert_eq!(names.parts(1), None);
        assert_eq!(names.parts(2), None);
    }

    /// The name column holds each object's last part, null where the
    /// parts are not there (too few NULs, not UTF-8); names without one
    /// get none until asked, and names extended by an append carry it on.
    #[test]
    fn the_name_column_is_the_last_part_by_ordinal() {
        let long = "n".repeat(70_000);
        let encode = |names: &[&[u8]]| {
            let mut bytes = Vec::new();
            for name in names {
                bytes.extend_from_slice(&(name.len() as u32).to_le_bytes());
                bytes.extend_from_slice(name);
            }
            bytes
        };
        let first = format!("apps\0Deployment\0{long}\0web");
        let mut names = Names::default();
        names
            .parse(&encode(&[
                first.as_bytes(),
                b"apps\0Deployment",
                b"\0ConfigMap\0default\0\xff",
                b"\0Pod\0kube-system\0dns-0",
            ]))
            .unwrap();
        assert!(names.name_column().is_none());
        let column = names.with_name_column();
        let got: Vec<Option<&str>> = column.iter().collect();
        assert_eq!(got, [Some("web"), None, None, Some("dns-0")]);
        for id in 0..4u32 {
            assert_eq!(
                got[id as usize],
                names.parts(id).map(|p| p[3]),
                "object {id}"
            );
        }
        let more = encode(&[b"\0Service\0default\0api"]);
        let grown = names.extended(&more, 0).unwrap();
        let got: Vec<Option<&str>> = grown.name_column().unwrap().iter().collect();
        assert_eq!(got, [Some("web"), None, None, Some("dns-0"), Some("api")]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Over appends to two clusters, a shared cache (within any
        /// budget) gives each read exactly the names written so far, as a
        /// fresh read does; a flipped byte among the bytes appended since
        /// it last read them is found (never read as a name), and the
        /// cache holds no more than its budget.
        #[test]
        fn cached_names_are_the_files_names(
            batches in proptest::collection::vec(
                (0usize..2, proptest::collection::vec("[a-z\u{e9}\u{4e2d}]{0,12}", 0..24)),
                1..8,
            ),
            flip in proptest::option::of((0usize..8, any::<u64>(), 0u8..8)),
            budget in prop_oneof![Just(0usize), Just(2_000), Just(1 << 20)],
        ) {
            let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
            let mut files = [
                ClusterFiles::open(dirs[0].path(), ClusterMeta::default()).unwrap(),
                ClusterFiles::open(dirs[1].path(), ClusterMeta::default()).unwrap(),
            ];
            let mut model: [Vec<Option<String>>; 2] = Default::default();
            let cache = NameCache::with_budget(budget);
            for (i, (c, batch)) in batches.iter().enumerate() {
                let (c, dir) = (*c, dirs[*c].path());
                let before = std::fs::metadata(dir.join("objects")).map(|m| m.len()).unwrap_or(0);
                for name in batch {
                    let n = model[c].len();
                    files[c].add_object(&ObjectName {
                        group: "apps".into(),
                        kind: "Deployment".into(),
                        namespace: format!("ns{n}"),
                        name: name.clone(),
                    }).unwrap();
                    model[c].push(Some(format!("apps\0Deployment\0ns{n}\0{name}")));
                }
                let meta = files[c].write().unwrap();
                files[c].sync().unwrap();
                if let Some((_, at, bit)) = flip.filter(|f| f.0 == i && meta.objects_bytes > before) {
                    let path = dir.join("objects");
                    let mut bytes = std::fs::read(&path).unwrap();
                    let at = before as usize + (at % (meta.objects_bytes - before)) as usize;
                    bytes[at] ^= 1 << bit;
                    std::fs::write(&path, &bytes).unwrap();
                    let read = cache.names(dir, &meta);
                    prop_assert!(matches!(read, Err(StoreError::IndexDamaged { .. })), "{:?}", read.map(|n| texts(&n)));
                    bytes[at] ^= 1 << bit;
                    std::fs::write(&path, &bytes).unwrap();
                }
                let got = cache.names(dir, &meta).unwrap();
                prop_assert_eq!(&texts(&got), &model[c]);
                for (id, text) in model[c].iter().enumerate() {
                    let split: Option<Vec<&str>> = text.as_deref().map(|t| t.splitn(4, '\0').collect());
                    let parts = got.parts(id as u32).map(|p| p.to_vec());
                    prop_assert_eq!(parts, split);
                }
                let fresh = NameCache::default().names(dir, &meta).unwrap();
                prop_assert_eq!(texts(&fresh), texts(&got));
                prop_assert!(cache.held().bytes <= budget);
            }
        }
    }
}
