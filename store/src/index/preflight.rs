//! What fjall would abort on, checked before fjall opens.
//!
//! Two kinds of damage to fjall's files end the process instead of
//! returning an error, and one flipped bit in a cache must not take the
//! store down with it:
//!
//! - Its recovery asserts on fields of the per-keyspace manifests
//!   (`keyspaces/<n>/v<id>`, named by `current`) that no checksum covers;
//!   the panic unwinds into one of fjall's destructors, which panics again
//!   on the poisoned lock, and the process aborts.
//! - Manifests and tables are `sfa` archives whose table of contents
//!   starts with an entry count that is read, and allocated for, before
//!   the checksum over it is checked: a damaged count asks for tens of
//!   gigabytes and the allocation failure aborts.
//!
//! Both are read here first, and a file that fails makes the indexes count
//! as not opened (they are rebuilt from the leaves).

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// sfa's trailer: magic, version, checksum type, checksum (16), table of
/// contents position (8) and length (8).
const TRAILER: u64 = 4 + 1 + 1 + 16 + 8 + 8;
/// The smallest table of contents entry: position, length, name length.
const MIN_ENTRY: u64 = 8 + 8 + 2;

/// The sections of a manifest fjall expects, and the bytes it asserts two
/// of them hold (`None`: any value).
const SECTIONS: [(&[u8], Option<&[u8]>); 4] = [
    (b"format_version", None),
    (b"tree_type", None),
    // lsm-tree's level count, fixed at 7.
    (b"level_count", Some(&[7])),
    // Its filter hash, xxh3 (tag 0), the only one it knows.
    (b"filter_hash_type", Some(&[0])),
];

/// Checks every keyspace's current manifest under the index directory
/// `dir`; the reason when one would not decode.
pub(crate) fn manifests(dir: &Path) -> Result<(), String> {
    let keyspaces = dir.join("keyspaces");
    let Ok(entries) = std::fs::read_dir(&keyspaces) else {
        return Ok(()); // a new database: fjall creates it
    };
    for entry in entries {
        let tree = entry
            .map_err(|e| format!("{}: {e}", keyspaces.display()))?
            .path();
        let current = tree.join("current");
        let Ok(bytes) = std::fs::read(&current) else {
            continue; // not a tree, or one fjall has not finished creating
        };
        let id = bytes
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| format!("{}: not a version number", current.display()))?;
        let version = tree.join(format!("v{id}"));
        archive(&version)?;
        // Only the tables the manifest names: a table a compaction was
        // writing when the process ended is not one yet (fjall deletes it).
        for table in manifest(&version)? {
            archive(&tree.join("tables").join(table.to_string()))?;
        }
    }
    Ok(())
}

/// The ids of the tables a manifest names, read as lsm-tree reads its
/// `tables` section: levels (u8), then per level runs (u8), then per run
/// tables (u32), each `id u64 ‖ checksum type u8 ‖ checksum u128 ‖
/// global seqno u64`. The counts only bound loops over a reader limited to
/// the section, so a damaged one ends in an error, not an allocation.
fn tables(path: &Path, reader: &sfa::Reader) -> Result<Vec<u64>, String> {
    let bad = |what: String| format!("{}: {what}", path.display());
    let section = reader
        .toc()
        .section(b"tables")
        .ok_or_else(|| bad("no tables section".into()))?;
    let mut r = section.buf_reader(path).map_err(|e| bad(e.to_string()))?;
    let mut read = |n: usize| -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; n];
        r.read_exact(&mut buf)
            .map_err(|e| bad(format!("tables section: {e}")))?;
        Ok(buf)
    };
    let mut ids = Vec::new();
    for _ in 0..read(1)?[0] {
        for _ in 0..read(1)?[0] {
            let count = read(4)?;
            for _ in 0..u32::from_le_bytes([count[0], count[1], count[2], count[3]]) {
                let table = read(8 + 1 + 16 + 8)?;
                let mut id = [0u8; 8];
                id.copy_from_slice(&table[..8]);
                ids.push(u64::from_le_bytes(id));
            }
        }
    }
    Ok(ids)
}

/// An sfa archive's table of contents fits in the file: its entry count
/// cannot make the reader allocate more than the file holds.
fn archive(path: &Path) -> Result<(), String> {
    let bad = |what: &str| format!("{}: {what}", path.display());
    let file = std::fs::File::open(path).map_err(|e| bad(&e.to_string()))?;
    let len = file.metadata().map_err(|e| bad(&e.to_string()))?.len();
    let end = len
        .checked_sub(TRAILER)
        .ok_or_else(|| bad("shorter than its trailer"))?;
    let mut trailer = [0u8; TRAILER as usize];
    file.read_exact_at(&mut trailer, end)
        .map_err(|e| bad(&e.to_string()))?;
    if &trailer[..4] != b"SFA!" {
        return Err(bad("no archive trailer"));
    }
    let toc = u64::from_le_bytes(trailer[22..30].try_into().unwrap_or_default());
    let mut head = [0u8; 8];
    if toc.checked_add(8).is_none_or(|h| h > end) {
        return Err(bad("its table of contents starts past its end"));
    }
    file.read_exact_at(&mut head, toc)
        .map_err(|e| bad(&e.to_string()))?;
    let entries = u64::from(u32::from_le_bytes(
        head[4..8].try_into().unwrap_or_default(),
    ));
    if &head[..4] != b"TOC!" || toc + 8 + entries * MIN_ENTRY > end {
        return Err(bad("its table of contents does not fit in it"));
    }
    Ok(())
}

/// Checks the sections fjall asserts on; returns the tables the manifest
/// names.
fn manifest(path: &Path) -> Result<Vec<u64>, String> {
    let bad = |what: String| format!("{}: {what}", path.display());
    let reader = sfa::Reader::new(path).map_err(|e| bad(format!("{e:?}")))?;
    for (name, expected) in SECTIONS {
        let section = reader
            .toc()
            .section(name)
            .ok_or_else(|| bad(format!("no {} section", String::from_utf8_lossy(name))))?;
        let Some(expected) = expected else { continue };
        let mut held = Vec::new();
        section
            .reader(path)
            .and_then(|mut r| r.read_to_end(&mut held))
            .map_err(|e| bad(e.to_string()))?;
        if held != expected {
            return Err(bad(format!(
                "section {} holds {held:?}",
                String::from_utf8_lossy(name)
            )));
        }
    }
    tables(path, &reader)
}
