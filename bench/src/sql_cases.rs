//! Timed SQL over an open ledger, for `bench/run`: the annal side of the
//! as-of and auditor comparisons.
//!
//! The store is opened once and one DataFusion session is reused, as the
//! peers keep one connection (PostgreSQL) or one in-process database
//! (DuckDB): every timing is planning, execution and collecting the rows,
//! never the store open (timed separately).
//!
//! Rounds are either counted or driven by a peer's driver (`--lockstep`):
//! `bench/compare.py` alternates a round of annal's with a round of
//! DuckDB's, because the shared host's speed drifts by up to 2x within an
//! hour, and two systems timed an hour apart compare the hours, not the
//! systems.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use annal_store::Store;

/// One query to time.
#[derive(Debug, serde::Deserialize)]
pub struct Case {
    pub name: String,
    pub sql: String,
}

/// Its timings, one per run, and the rows each run returned.
#[derive(Debug, serde::Serialize)]
pub struct Timed {
    pub name: String,
    pub seconds: Vec<f64>,
    pub rows: Vec<u64>,
}

/// What `run` measured.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub open_seconds: f64,
    pub log_size: u64,
    pub cases: Vec<Timed>,
}

/// How many rounds to run.
#[derive(Clone, Copy, Debug)]
pub enum Rounds {
    /// This many.
    Count(usize),
    /// One per line read on stdin, each answered with `done` on stdout.
    Stdin,
}

impl Rounds {
    /// Waits for the next round: false when there is none.
    fn next(&self, done: usize) -> anyhow::Result<bool> {
        match self {
            Rounds::Count(n) => Ok(done < *n),
            Rounds::Stdin => {
                let mut line = String::new();
                Ok(std::io::stdin().lock().read_line(&mut line)? > 0)
            }
        }
    }

    /// Says a round is over.
    fn finished(&self, done: &mut usize) -> anyhow::Result<()> {
        *done += 1;
        if let Rounds::Stdin = self {
            let mut out = std::io::stdout().lock();
            writeln!(out, "done")?;
            out.flush()?;
        }
        Ok(())
    }
}

/// Runs every case once per round (case 1..n, then again), so a slow
/// spell of the machine spreads over all cases instead of one.
pub fn run(data: &Path, cases: &[Case], rounds: Rounds) -> anyhow::Result<Report> {
    let started = Instant::now();
    // As `annal sql` opens it: compaction is left to the writers.
    let store = Arc::new(Store::open_with(
        data,
        annal_store::Compaction::Deferred,
        &mut |_| {},
    )?);
    let open_seconds = started.elapsed().as_secs_f64();
    // One process answers every round, as `annal serve` would, and keeps
    // what `serve` keeps.
    store.keep_object_names();
    store.keep_column_chunks();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let ctx = runtime.block_on(annal_query::sql::session(store.clone()))?;
    let mut timed: Vec<Timed> = cases
        .iter()
        .map(|c| Timed {
            name: c.name.clone(),
            seconds: Vec::new(),
            rows: Vec::new(),
        })
        .collect();
    let mut done = 0;
    while rounds.next(done)? {
        for (case, t) in cases.iter().zip(&mut timed) {
            let started = Instant::now();
            let answer = runtime
                .block_on(annal_query::sql::run(&ctx, &case.sql))
                .map_err(|e| anyhow::anyhow!("{}: {e}\n{}", case.name, case.sql))?;
            t.seconds.push(started.elapsed().as_secs_f64());
            t.rows
                .push(answer.batches.iter().map(|b| b.num_rows() as u64).sum());
        }
        rounds.finished(&mut done)?;
    }
    Ok(Report {
        open_seconds,
        log_size: store.size(),
        cases: timed,
    })
}
