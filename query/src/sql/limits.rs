//! How much one query may take: memory, time and rows.
//!
//! A query's memory is bounded by a DataFusion memory pool of its own
//! ([`Limits::memory_bytes`]): sorts, aggregates, joins and repartition
//! buffers reserve from it, and a query that needs more fails with
//! [`crate::QueryError::MemoryLimit`] instead of taking the machine. Spilling to
//! disk is off, so the limit is hard and a reader never writes temporary
//! files on the ledger host. The server adds a wall-clock limit and a cap on
//! concurrent queries, so that the worst case is `max_queries ×
//! memory_bytes` and every query ends.
//!
//! [`Usage`] counts what the pools hold across all queries, for `/metrics`
//! and for tests that check a cancelled query gave its memory back.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use datafusion::error::Result;
use datafusion::execution::memory_pool::{
    GreedyMemoryPool, MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
    TrackConsumersPool,
};

/// Bounds on one query.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Memory one query's operators may reserve.
    pub memory_bytes: usize,
    /// Wall-clock time from planning to the last row (none: unbounded, as
    /// for `annal sql` at a terminal).
    pub timeout: Option<Duration>,
    /// Rows in a JSON answer; more are cut and the answer says so.
    pub max_json_rows: usize,
    /// Where the pools' reservations are counted.
    pub usage: Arc<Usage>,
}

impl Default for Limits {
    /// An eighth of the machine's memory (at least 256 MiB), no time limit,
    /// 100,000 JSON rows.
    fn default() -> Self {
        Limits {
            memory_bytes: default_memory_bytes(),
            timeout: None,
            max_json_rows: 100_000,
            usage: Arc::new(Usage::default()),
        }
    }
}

impl Limits {
    /// When a query started now must end (none without a time limit).
    pub fn deadline(&self) -> Option<tokio::time::Instant> {
        self.timeout.map(|t| tokio::time::Instant::now() + t)
    }
}

/// The default per-query memory: an eighth of physical memory, at least
/// 256 MiB (1 GiB when it cannot be read).
pub fn default_memory_bytes() -> usize {
    let total = physical_memory().unwrap_or(8 << 30);
    (total / 8).max(256 << 20)
}

/// `MemTotal` from /proc/meminfo, in bytes.
fn physical_memory() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// What all queries hold now, and how many were stopped by a limit.
#[derive(Debug, Default)]
pub struct Usage {
    reserved: AtomicUsize,
    running: AtomicU64,
    memory_refused: AtomicU64,
    timed_out: AtomicU64,
    not_allowed: AtomicU64,
    busy: AtomicU64,
}

/// A limit a query ran into, for [`Usage::count`].
#[derive(Clone, Copy, Debug)]
pub enum Stopped {
    /// Over its memory.
    Memory,
    /// Over its time.
    Timeout,
    /// Not a query.
    NotAllowed,
    /// Too many queries at once.
    Busy,
}

impl Usage {
    /// Bytes reserved by running queries' operators.
    pub fn reserved_bytes(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Queries running now.
    pub fn running(&self) -> u64 {
        self.running.load(Ordering::Relaxed)
    }

    /// Counts a query stopped by `limit`.
    pub fn count(&self, limit: Stopped) {
        let counter = match limit {
            Stopped::Memory => &self.memory_refused,
            Stopped::Timeout => &self.timed_out,
            Stopped::NotAllowed => &self.not_allowed,
            Stopped::Busy => &self.busy,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks a query running until the guard drops.
    pub fn start(self: &Arc<Self>) -> Running {
        self.running.fetch_add(1, Ordering::Relaxed);
        Running(self.clone())
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        };
        metric(
            "annal_sql_queries_running",
            "gauge",
            "SQL queries running now.",
            self.running().to_string(),
        );
        metric(
            "annal_sql_memory_reserved_bytes",
            "gauge",
            "Bytes reserved by running SQL queries.",
            self.reserved_bytes().to_string(),
        );
        out.push_str(
            "# HELP annal_sql_refused_total SQL queries refused or stopped, by limit.\n\
             # TYPE annal_sql_refused_total counter\n",
        );
        for (limit, counter) in [
            ("memory", &self.memory_refused),
            ("timeout", &self.timed_out),
            ("not_allowed", &self.not_allowed),
            ("busy", &self.busy),
        ] {
            out.push_str(&format!(
                "annal_sql_refused_total{{limit=\"{limit}\"}} {}\n",
                counter.load(Ordering::Relaxed)
            ));
        }
        out
    }
}

/// A running query; counted until dropped.
#[derive(Debug)]
pub struct Running(Arc<Usage>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The pool of one query: a greedy pool of `limit` bytes that names its
/// top consumers when it refuses, counted into a shared [`Usage`].
pub(crate) fn pool(limit: usize, usage: Arc<Usage>) -> Arc<dyn MemoryPool> {
    let top = NonZeroUsize::new(3).unwrap_or(NonZeroUsize::MIN);
    Arc::new(Counted {
        inner: TrackConsumersPool::new(GreedyMemoryPool::new(limit), top),
        usage,
    })
}

/// A pool that reports every reservation to [`Usage`].
#[derive(Debug)]
struct Counted<P> {
    inner: P,
    usage: Arc<Usage>,
}

impl<P: MemoryPool> fmt::Display for Counted<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "annal({})", self.inner)
    }
}

impl<P: MemoryPool> MemoryPool for Counted<P> {
    fn name(&self) -> &str {
        "annal"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.inner.grow(reservation, additional);
        self.usage.reserved.fetch_add(additional, Ordering::Relaxed);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.inner.shrink(reservation, shrink);
        self.usage.reserved.fetch_sub(shrink, Ordering::Relaxed);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        self.inner.try_grow(reservation, additional)?;
        self.usage.reserved.fetch_add(additional, Ordering::Relaxed);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.inner.reserved()
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.inner.memory_limit()
    }
}

/// `1.5 GiB`, `256 MiB`: a size for messages.
pub fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Parses `512MiB`, `2GiB`, `1g`, `300000000`: a size on the command line.
pub fn parse_bytes(text: &str) -> std::result::Result<usize, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a size such as 512MiB or 2GiB"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?} (B, KiB, MiB, GiB)"
            ))
        }
    };
    let bytes = number * scale;
    if !(1.0..=(usize::MAX as f64)).contains(&bytes) {
        return Err(format!("{text:?}: out of range"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2g"), Ok(2 << 30));
        assert_eq!(parse_bytes("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3 TB").is_err());
        assert!(parse_bytes("0").is_err());
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }

    #[test]
    fn the_pool_refuses_past_its_limit_and_counts_what_it_holds() {
        let usage = Arc::new(Usage::default());
        let pool = pool(1000, usage.clone());
        let a = MemoryConsumer::new("a").register(&pool);
        a.try_grow(600).unwrap();
        assert_eq!(usage.reserved_bytes(), 600);
        let b = MemoryConsumer::new("b").register(&pool);
        assert!(b.try_grow(500).is_err(), "over the limit");
        assert_eq!(usage.reserved_bytes(), 600);
        b.try_grow(400).unwrap();
        drop(a);
        drop(b);
        assert_eq!(usage.reserved_bytes(), 0, "everything given back");
    }
}
