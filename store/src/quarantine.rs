//! The quarantine: input that was rejected, kept so nothing is lost.
//!
//! Records are keyed by a hash of their raw bytes, so rejecting the same bad
//! record again (a re-run over the same file) updates one entry instead of
//! piling up copies.

use annal_schemas::Timestamp;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// Raw input kept per record; larger records keep a prefix and say so.
const MAX_RAW_BYTES: usize = 1 << 20;

/// A rejected record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuarantineRecord {
    /// Short content hash, the handle for `show`, `retry` and `drop`.
    pub id: String,
    /// Where it came from: a file path, `-` for stdin, a URL or a topic.
    pub source: String,
    /// 1-based line in `source`, when it has lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Input format it was read as.
    pub format: String,
    /// Why it was rejected.
    pub reason: String,
    /// The raw record (lossy UTF-8).
    pub raw: String,
    /// Whether `raw` was cut at the size limit.
    #[serde(default)]
    pub truncated: bool,
    /// First rejection.
    pub first_seen: Timestamp,
    /// Latest rejection.
    pub last_seen: Timestamp,
}

/// A rejection to record.
#[derive(Clone, Debug)]
pub struct Rejection<'a> {
    /// Where it came from.
    pub source: &'a str,
    /// 1-based line, if any.
    pub line: Option<u64>,
    /// Input format.
    pub format: &'a str,
    /// Why.
    pub reason: &'a str,
    /// The raw bytes.
    pub raw: &'a [u8],
}

/// The quarantine area of one store.
pub struct Quarantine {
    /// `None` in a view beside another process's writer, which holds it.
    pub(crate) tree: Option<sled::Tree>,
}

impl Quarantine {
    fn tree(&self) -> Result<&sled::Tree, StoreError> {
        self.tree.as_ref().ok_or_else(|| {
            StoreError::WritesRefused(
                "the quarantine is in the database of the process that writes this ledger; ask it (its `annal quarantine`), or stop it first".into(),
            )
        })
    }

    /// Records a rejection; returns the record id. Durable at the next commit
    /// or [`crate::Store::flush`].
    pub fn put(&self, r: &Rejection<'_>) -> Result<String, StoreError> {
        let mut hasher = blake3::Hasher::new();
        hasher.update(r.source.as_bytes());
        hasher.update(&[0]);
        hasher.update(r.raw);
        let id = hasher.finalize().to_hex()[..16].to_string();
        let now = Timestamp::now();
        let first_seen = self.get(&id)?.map_or(now, |old| old.first_seen);
        let truncated = r.raw.len() > MAX_RAW_BYTES;
        let raw = &r.raw[..r.raw.len().min(MAX_RAW_BYTES)];
        let record = QuarantineRecord {
            id: id.clone(),
            source: r.source.to_string(),
            line: r.line,
            format: r.format.to_string(),
            reason: r.reason.to_string(),
            raw: String::from_utf8_lossy(raw).into_owned(),
            truncated,
            first_seen,
            last_seen: now,
        };
        let bytes = serde_json::to_vec(&record)
            .map_err(|e| StoreError::Corrupt(format!("cannot encode quarantine record: {e}")))?;
        self.tree()?.insert(id.as_bytes(), bytes)?;
        Ok(id)
    }

    /// Every record, ordered by id.
    pub fn list(&self) -> impl Iterator<Item = Result<QuarantineRecord, StoreError>> + '_ {
        let (tree, missing) = match self.tree() {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(Err(e))),
        };
        missing.into_iter().chain(
            tree.into_iter()
                .flat_map(|t| t.iter())
                .map(|kv| decode(&kv?.1)),
        )
    }

    /// One record.
    pub fn get(&self, id: &str) -> Result<Option<QuarantineRecord>, StoreError> {
        self.tree()?
            .get(id.as_bytes())?
            .map(|v| decode(&v))
            .transpose()
    }

    /// Removes a record; returns whether it existed.
    pub fn remove(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.tree()?.remove(id.as_bytes())?.is_some())
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.tree.as_ref().map_or(0, sled::Tree::len)
    }

    /// Whether the quarantine is empty.
    pub fn is_empty(&self) -> bool {
        self.tree.as_ref().is_none_or(sled::Tree::is_empty)
    }
}

fn decode(bytes: &[u8]) -> Result<QuarantineRecord, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Corrupt(format!("quarantine record: {e}")))
}
