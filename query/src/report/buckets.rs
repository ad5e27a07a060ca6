//! Report windows cut into steps, and intervals spread over them.

use annal_schemas::Timestamp;

use crate::QueryError;

/// `[from, to)` cut into steps of `step` microseconds aligned to `from`
/// (the last one may be shorter); one step when no step is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buckets {
    from: i64,
    to: i64,
    step: i64,
}

/// Most steps a report may have (a typo like `--step 1s` over a year would
/// otherwise allocate millions of rows per group).
const MAX_STEPS: i64 = 100_000;

impl Buckets {
    /// The steps of `[from, to)`.
    pub fn new(
        from: Timestamp,
        to: Timestamp,
        step_seconds: Option<u64>,
    ) -> Result<Self, QueryError> {
        let (from, to) = (from.unix_micros(), to.unix_micros());
        if to <= from {
            return Err(QueryError::BadInput(format!(
                "the report window is empty: --to ({}) is not after --from ({})",
                show(to),
                show(from)
            )));
        }
        let step = match step_seconds {
            Some(0) => return Err(QueryError::BadInput("--step must be positive".into())),
            Some(s) => i64::try_from(s)
                .ok()
                .and_then(|s| s.checked_mul(1_000_000))
                .ok_or_else(|| QueryError::BadInput("--step is too large".into()))?,
            None => to - from,
        };
        let buckets = Buckets { from, to, step };
        if buckets.len() as i64 > MAX_STEPS {
            return Err(QueryError::BadInput(format!(
                "{} steps: a report has at most {MAX_STEPS} (use a larger --step)",
                buckets.len()
            )));
        }
        Ok(buckets)
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        ((self.to - self.from + self.step - 1) / self.step) as usize
    }

    /// The window start and end (Unix microseconds).
    pub fn window(&self) -> (i64, i64) {
        (self.from, self.to)
    }

    /// Step `i` as `[start, end)` (Unix microseconds).
    pub fn bounds(&self, i: usize) -> (i64, i64) {
        let start = self.from + self.step * i as i64;
        (start, (start + self.step).min(self.to))
    }

    /// The step holding instant `t`, if it is in the window.
    pub fn of(&self, t: i64) -> Option<usize> {
        (self.from..self.to)
            .contains(&t)
            .then(|| ((t - self.from) / self.step) as usize)
    }

    /// The parts of `[start, end)` inside each step, as (step, microseconds).
    pub fn spread(&self, start: i64, end: i64) -> impl Iterator<Item = (usize, i64)> + '_ {
        let (start, end) = (start.max(self.from), end.min(self.to));
        let first = if start < end { self.of(start) } else { None };
        let steps = first.map_or(0..0, |f| f..self.len());
        steps.map_while(move |i| {
            let (a, b) = self.bounds(i);
            (a < end).then(|| (i, b.min(end) - a.max(start)))
        })
    }
}

/// A microsecond instant inside a report window (which came from
/// timestamps, so it is always representable).
pub fn instant(micros: i64) -> Timestamp {
    Timestamp::from_unix_micros(micros).unwrap_or_else(Timestamp::now)
}

/// A microsecond instant as RFC 3339.
pub fn show(micros: i64) -> String {
    Timestamp::from_unix_micros(micros).map_or_else(|| micros.to_string(), |t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn steps_align_to_the_start_and_intervals_spread_over_them() {
        let b = Buckets::new(
            at("2026-11-01T00:00:00Z"),
            at("2026-11-01T02:30:00Z"),
            Some(3600),
        )
        .unwrap();
        assert_eq!(b.len(), 3);
        let h = 3_600_000_000;
        let (from, _) = b.window();
        assert_eq!(b.bounds(2), (from + 2 * h, from + 2 * h + h / 2));
        assert_eq!(b.of(from + h), Some(1));
        assert_eq!(b.of(from + 3 * h), None);
        // 00:30 to 02:00 spreads as half an hour, then a full hour.
        let parts: Vec<_> = b.spread(from + h / 2, from + 2 * h).collect();
        assert_eq!(parts, vec![(0, h / 2), (1, h)]);
        // Clipped to the window on both sides.
        let parts: Vec<_> = b.spread(from - h, i64::MAX).collect();
        assert_eq!(parts, vec![(0, h), (1, h), (2, h / 2)]);
        assert_eq!(b.spread(from - 2 * h, from).count(), 0);
        assert!(
            Buckets::new(at("2026-11-01T00:00:00Z"), at("2026-11-01T00:00:00Z"), None).is_err()
        );
        assert!(Buckets::new(
            at("2026-11-01T00:00:00Z"),
            at("2027-11-01T00:00:00Z"),
            Some(1)
        )
        .is_err());
    }
}
