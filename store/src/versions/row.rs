//! The fixed-width version row: what an as-of scan reads for every version.

/// Bit of [`VersionRow::flags`]: the version is a deletion.
pub(crate) const DELETED: u32 = 1;

/// Bit of [`VersionRow::flags`]: the resourceVersion is the decimal text of
/// `rv` (so the details need not repeat it).
pub(crate) const RV_DECIMAL: u32 = 2;

/// Bytes per encoded row.
pub(crate) const WIDTH: usize = 64;

/// `prev` of a row with no earlier version.
pub(crate) const NONE: u64 = u64::MAX;

/// One version of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionRow {
    /// Object id within the cluster (see [`super::ClusterVersions::object`]).
    pub object: u32,
    /// Bit flags (deleted).
    pub flags: u32,
    /// Valid time the version starts (Unix microseconds).
    pub from: i64,
    /// Valid time the next version starts (`i64::MAX`: still current).
    pub to: i64,
    /// Log index of the version that set `to` (`u64::MAX`: none), so an
    /// as-of-system-time read knows whether that end was known yet.
    pub to_index: u64,
    /// Log index of this version.
    pub index: u64,
    /// resourceVersion as an integer (0 when it does not parse).
    pub rv: u64,
    /// Offset of the version's details.
    pub details: u64,
    /// Row number of the object's previous version in version order
    /// ([`NONE`] for the first): the chain a late version walks back along
    /// to find where it belongs.
    pub prev: u64,
}

impl VersionRow {
    /// Whether the version is a deletion.
    pub fn deleted(&self) -> bool {
        self.flags & DELETED != 0
    }

    /// The version order: (valid time, resourceVersion, log index).
    pub fn order(&self) -> (i64, u64, u64) {
        (self.from, self.rv, self.index)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.object.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.from.to_le_bytes());
        out.extend_from_slice(&self.to.to_le_bytes());
        out.extend_from_slice(&self.to_index.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&self.rv.to_le_bytes());
        out.extend_from_slice(&self.details.to_le_bytes());
        out.extend_from_slice(&self.prev.to_le_bytes());
    }

    /// Decodes one row from exactly [`WIDTH`] bytes.
    pub(crate) fn decode(b: &[u8; WIDTH]) -> VersionRow {
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let u64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(x)
        };
        VersionRow {
            object: u32_at(0),
            flags: u32_at(4),
            from: u64_at(8) as i64,
            to: u64_at(16) as i64,
            to_index: u64_at(24),
            index: u64_at(32),
            rv: u64_at(40),
            details: u64_at(48),
            prev: u64_at(56),
        }
    }
}

/// Byte offset of `to` within a row (`to_index` follows it).
pub(crate) const END_OFFSET: usize = 16;

/// Byte offset of `prev` within a row.
pub(crate) const PREV_OFFSET: usize = 56;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let row = VersionRow {
            object: 7,
            flags: DELETED,
            from: -5,
            to: i64::MAX,
            to_index: u64::MAX,
            index: 42,
            rv: 9,
            details: 1 << 40,
            prev: NONE,
        };
        let mut out = Vec::new();
        row.encode(&mut out);
        assert_eq!(out.len(), WIDTH);
        let back = VersionRow::decode(out.as_slice().try_into().unwrap());
        assert_eq!(back, row);
        assert!(back.deleted());
    }
}
