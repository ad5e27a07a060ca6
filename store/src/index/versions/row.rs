//! The fixed-width version row: what an as-of scan reads for every version.
//!
//! A row is written once and never changed: what it stores is known when
//! the version arrives. When a version ends (the valid time of the next
//! version of the object) is not: a late event can land between two known
//! versions. So the end is computed when a cluster's rows are read
//! ([`fill_ends`]), and no write ever patches a committed row.

/// Bit of [`VersionRow::flags`]: the version is a deletion.
pub(crate) const DELETED: u32 = 1;

/// Bit of [`VersionRow::flags`]: the resourceVersion is the decimal text of
/// `rv` (so the details need not repeat it).
pub(crate) const RV_DECIMAL: u32 = 2;

/// Bytes per stored row: object, flags, from, index, rv, details.
pub(crate) const WIDTH: usize = 40;

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

    /// Appends the stored fields (the end is not stored).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.object.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.from.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&self.rv.to_le_bytes());
        out.extend_from_slice(&self.details.to_le_bytes());
    }

    /// The start of the row stored in `b` (at least [`WIDTH`] bytes), read
    /// without decoding the rest: a scan bounded on it drops most of a
    /// zone's rows before they are decoded.
    pub(crate) fn stored_from(b: &[u8]) -> Option<i64> {
        b.get(8..16)?.try_into().ok().map(i64::from_le_bytes)
    }

    /// Decodes one row from exactly [`WIDTH`] bytes, its end still open.
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
            to: i64::MAX,
            to_index: u64::MAX,
            index: u64_at(16),
            rv: u64_at(24),
            details: u64_at(32),
        }
    }
}

/// Sets each row's end to the start of the next version of its object in
/// version order: the interval a late version splits is split here.
///
/// Every query reads a cluster's rows through this, so it is linear in the
/// usual case: versions of an object mostly arrive in version order, and
/// one pass in log order links each to the next. Only the objects that
/// had a version arrive late are sorted ([`fill_ends_sorted`], the
/// reference the tests compare with).
pub(crate) fn fill_ends(rows: &mut [VersionRow]) {
    let objects = rows
        .iter()
        .map(|r| r.object as usize + 1)
        .max()
        .unwrap_or(0);
    // The object's newest row so far, in version order (`u32::MAX`: none).
    let mut newest = vec![u32::MAX; objects];
    let mut late = vec![false; objects];
    let mut any_late = false;
    for i in 0..rows.len() {
        let o = rows[i].object as usize;
        let prev = newest[o];
        if prev == u32::MAX {
            newest[o] = i as u32;
            continue;
        }
        let p = prev as usize;
        if rows[p].order() < rows[i].order() {
            rows[p].to = rows[i].from;
            rows[p].to_index = rows[i].index;
            newest[o] = i as u32;
        } else {
            late[o] = true;
            any_late = true;
        }
    }
    if !any_late {
        return;
    }
    let mut subset: Vec<VersionRow> = Vec::new();
    let mut at: Vec<usize> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if late[r.object as usize] {
            let mut r = *r;
            r.to = i64::MAX;
            r.to_index = u64::MAX;
            subset.push(r);
            at.push(i);
        }
    }
    fill_ends_sorted(&mut subset);
    for (r, i) in subset.into_iter().zip(at) {
        rows[i] = r;
    }
}

/// [`fill_ends`] by sorting every row by (object, version order).
fn fill_ends_sorted(rows: &mut [VersionRow]) {
    let mut order: Vec<u32> = (0..rows.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let r = &rows[i as usize];
        (r.object, r.order())
    });
    for pair in order.windows(2) {
        let (a, b) = (pair[0] as usize, pair[1] as usize);
        if rows[a].object == rows[b].object {
            rows[a].to = rows[b].from;
            rows[a].to_index = rows[b].index;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The linear pass gives the sorted reference's ends, whatever
        /// the arrival order (few objects and times, so ties, late
        /// versions and equal orders but for the index are common).
        #[test]
        fn linear_ends_equal_the_sorted_ends(
            arrivals in proptest::collection::vec((0u32..4, 0i64..6, 0u64..3), 0..40)
        ) {
            let mut rows: Vec<VersionRow> = arrivals
                .iter()
                .enumerate()
                .map(|(i, &(object, from, rv))| {
                    let mut r = row(object, from, i as u64);
                    r.rv = rv;
                    r
                })
                .collect();
            let mut reference = rows.clone();
            fill_ends_sorted(&mut reference);
            fill_ends(&mut rows);
            prop_assert_eq!(rows, reference);
        }
    }

    fn row(object: u32, from: i64, index: u64) -> VersionRow {
        VersionRow {
            object,
            flags: 0,
            from,
            to: i64::MAX,
            to_index: u64::MAX,
            index,
            rv: 0,
            details: 0,
        }
    }

    #[test]
    fn rows_round_trip_without_their_end() {
        let mut r = row(7, -5, 42);
        r.flags = DELETED;
        r.rv = 9;
        r.details = 1 << 40;
        let mut out = Vec::new();
        r.encode(&mut out);
        assert_eq!(out.len(), WIDTH);
        let back = VersionRow::decode(out.as_slice().try_into().unwrap());
        assert_eq!(back, r);
        assert!(back.deleted());
    }

    #[test]
    fn ends_follow_version_order_not_arrival_order() {
        // Object 0 arrives at 10, 30, then late at 20; object 1 once.
        let mut rows = vec![row(0, 10, 0), row(1, 15, 1), row(0, 30, 2), row(0, 20, 3)];
        fill_ends(&mut rows);
        let ends: Vec<(i64, u64)> = rows.iter().map(|r| (r.to, r.to_index)).collect();
        assert_eq!(
            ends,
            [(20, 3), (i64::MAX, u64::MAX), (i64::MAX, u64::MAX), (30, 2)]
        );
    }
}
