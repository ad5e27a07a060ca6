//! `annal-bench`: seeded dataset generators for annal's benchmarks.
//!
//! Datasets are generated, never committed: the same seed always produces
//! byte-identical output, so a figure in the README can be reproduced.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod cloud_audit;
mod dataset;
mod http_load;
mod inventory;
mod kafka_produce;
mod sql_cases;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

/// The allocator `annal` ships with: `sql` and `inventory` time the
/// library code as the binary runs it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "Seeded dataset generators for annal benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Envelope v1 JSONL: object.observed updates of Deployments across clusters.
    Envelopes {
        /// Number of envelopes.
        #[arg(long, default_value_t = 1_000_000)]
        count: u64,
        /// Approximate bytes per envelope.
        #[arg(long, default_value_t = 1024)]
        size: usize,
        /// Number of clusters.
        #[arg(long, default_value_t = 100)]
        clusters: u32,
        /// RNG seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Output file (`-` for stdout).
        #[arg(long, default_value = "-")]
        out: PathBuf,
    },
    /// Kubernetes audit-log JSONL: the published audit samples (and
    /// annal's own) repeated with fresh, seeded auditIDs and timestamps.
    Audit {
        /// Number of audit events.
        #[arg(long, default_value_t = 1_000_000)]
        count: u64,
        /// RNG seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Directories or files with audit JSONL to repeat.
        #[arg(long, required = true)]
        from: Vec<PathBuf>,
        /// Write the events as this export shape (one record per line).
        #[arg(long, value_enum, default_value = "native")]
        shape: cloud_audit::Shape,
        /// Output file (`-` for stdout).
        #[arg(long, default_value = "-")]
        out: PathBuf,
    },
    /// As-of inventory: append a seeded fleet to a ledger (unless DATA holds
    /// one already), then time inventory_at(T) at random T over SQL.
    Inventory {
        /// Ledger directory (created and filled when it holds no ledger).
        #[arg(long)]
        data: PathBuf,
        #[command(flatten)]
        shape: ShapeArgs,
        /// Random instants per question.
        #[arg(long, default_value_t = 20)]
        queries: usize,
        /// Results (JSON).
        #[arg(long)]
        out: PathBuf,
    },
    /// Concurrent HTTP clients posting envelope batches to a running `annal serve`.
    HttpLoad {
        /// Server address (host:port).
        #[arg(long)]
        addr: String,
        /// Bearer token with the ingest role.
        #[arg(long)]
        token: String,
        #[arg(long, default_value_t = 64)]
        clients: usize,
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Envelopes per request.
        #[arg(long, default_value_t = 100)]
        batch: usize,
        /// Results (JSON).
        #[arg(long)]
        out: PathBuf,
        /// Also write every answered request as `start_s,latency_ms` (CSV,
        /// seconds from the start of the run): where in time the tail falls.
        #[arg(long)]
        latencies: Option<PathBuf>,
    },
    /// The `envelopes` stream produced to a Kafka topic, round robin over its partitions.
    KafkaProduce {
        /// Bootstrap servers.
        #[arg(long)]
        brokers: String,
        #[arg(long)]
        topic: String,
        #[arg(long, default_value_t = 3)]
        partitions: i32,
        #[arg(long, default_value_t = 1_000_000)]
        count: u64,
        #[arg(long, default_value_t = 1024)]
        size: usize,
        #[arg(long, default_value_t = 100)]
        clusters: u32,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// How the producer compresses its batches (librdkafka's
        /// `compression.type`): none, gzip, lz4, zstd or snappy.
        #[arg(long, default_value = "none")]
        compression: String,
    },
    /// The standard comparison dataset of `bench/run` as Envelope JSONL,
    /// with the parameters its queries use (see `dataset.rs`).
    Dataset {
        #[command(flatten)]
        shape: ShapeArgs,
        /// Random instants for the as-of questions.
        #[arg(long, default_value_t = 10)]
        instants: usize,
        /// Output file (`-` for stdout).
        #[arg(long, default_value = "-")]
        out: PathBuf,
        /// Where to write the query parameters (JSON).
        #[arg(long)]
        params: PathBuf,
    },
    /// Times SQL cases (a JSON array of {name, sql}) on a ledger, RUNS times each.
    Sql {
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        cases: PathBuf,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Run a round (every case once) for each line read on stdin and
        /// print `done` after it, until stdin closes (RUNS is ignored): a
        /// driver alternates rounds with a peer's, so that both systems
        /// meet the same hours of a shared host.
        #[arg(long)]
        lockstep: bool,
        /// Results (JSON).
        #[arg(long)]
        out: PathBuf,
    },
    /// Per-stage CPU cost of ingest on a JSONL file of envelopes (µs/event).
    Stages {
        /// Envelope JSONL file.
        input: PathBuf,
    },
}

/// A seeded fleet's shape (`inventory` and `dataset`).
#[derive(clap::Args)]
struct ShapeArgs {
    /// Clusters.
    #[arg(long, default_value_t = 100)]
    clusters: u32,
    /// Distinct objects.
    #[arg(long, default_value_t = 1_000_000)]
    objects: u64,
    /// Events (the first OBJECTS create, the rest update or delete).
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Share of events delivered late.
    #[arg(long, default_value_t = 0.05)]
    late: f64,
    /// RNG seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

impl ShapeArgs {
    /// The shape, with at least one cluster and object and enough events
    /// to create every object after `before_objects` other events.
    fn shape(&self, before_objects: u64) -> inventory::Shape {
        let objects = self.objects.max(1);
        inventory::Shape {
            clusters: self.clusters.max(1),
            objects,
            events: self.events.max(objects + before_objects),
            late: self.late,
            seed: self.seed,
        }
    }
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Envelopes {
            count,
            size,
            clusters,
            seed,
            out,
        } => {
            let mut w = sink(&out)?;
            envelopes(&mut w, count, size, clusters.max(1), seed)?;
            w.flush()?;
        }
        Command::Audit {
            count,
            seed,
            from,
            shape,
            out,
        } => {
            let mut w = sink(&out)?;
            audit(&mut w, count, seed, &from, shape)?;
            w.flush()?;
        }
        Command::Stages { input } => stages(&input)?,
        Command::Dataset {
            shape,
            instants,
            out,
            params,
        } => {
            // One registration per cluster comes before the objects.
            let shape = shape.shape(u64::from(shape.clusters.max(1)));
            let mut w = sink(&out)?;
            let chosen = dataset::write(&mut w, &shape, instants)?;
            w.flush()?;
            std::fs::write(&params, serde_json::to_vec_pretty(&chosen)?)?;
        }
        Command::Sql {
            data,
            cases,
            runs,
            lockstep,
            out,
        } => {
            let cases: Vec<sql_cases::Case> = serde_json::from_slice(&std::fs::read(&cases)?)?;
            let rounds = match lockstep {
                true => sql_cases::Rounds::Stdin,
                false => sql_cases::Rounds::Count(runs.max(1)),
            };
            let report = sql_cases::run(&data, &cases, rounds)?;
            std::fs::write(&out, serde_json::to_vec_pretty(&report)?)?;
        }
        Command::KafkaProduce {
            brokers,
            topic,
            partitions,
            count,
            size,
            clusters,
            seed,
            compression,
        } => {
            let started = std::time::Instant::now();
            let mut lines = kafka_produce::Lines::new(&brokers, &topic, partitions, &compression)?;
            envelopes(&mut lines, count, size, clusters.max(1), seed)?;
            let sent = lines.finish()?;
            eprintln!(
                "produced {sent} envelopes to {topic} in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        Command::HttpLoad {
            addr,
            token,
            clients,
            seconds,
            batch,
            out,
            latencies,
        } => {
            let load = http_load::run(
                &addr,
                &token,
                clients.max(1),
                seconds,
                batch.max(1),
                latencies.as_deref(),
            )?;
            eprintln!(
                "{} clients, {:.1}s: {} requests, {} events acknowledged ({:.0} events/s), p50 {:.1} ms, p99 {:.1} ms, {} refused (429), {} errors",
                load.clients, load.seconds, load.requests, load.acknowledged_events, load.events_per_second,
                load.p50_ms, load.p99_ms, load.refused_429, load.errors
            );
            std::fs::write(&out, serde_json::to_string_pretty(&load)?)?;
        }
        Command::Inventory {
            data,
            shape,
            queries,
            out,
        } => {
            let shape = shape.shape(0);
            inventory_bench(&data, &shape, queries, &out)?;
        }
    }
    Ok(())
}

fn inventory_bench(
    data: &std::path::Path,
    shape: &inventory::Shape,
    queries: usize,
    out: &std::path::Path,
) -> anyhow::Result<()> {
    let mut ingest = serde_json::Value::Null;
    if !data.join("ledger").exists() {
        annal_store::Store::init(data, "annal.bench/inventory")?;
        let store = annal_store::Store::open(data)?;
        eprintln!("== ingest {shape:?}");
        let done = inventory::ingest(&store, shape)?;
        let bytes = inventory::disk_bytes(data);
        eprintln!(
            "ingested {} events ({} late) in {:.1}s: {:.0} events/s, {:.0} bytes/event on disk",
            done.events,
            done.late,
            done.seconds,
            done.events as f64 / done.seconds,
            bytes as f64 / done.events as f64
        );
        ingest = json!({"events": done.events, "late": done.late, "seconds": done.seconds,
            "events_per_second": done.events as f64 / done.seconds, "disk_bytes": bytes,
            "versions_bytes": inventory::disk_bytes(&data.join("versions"))});
    }
    let store = std::sync::Arc::new(annal_store::Store::open(data)?);
    eprintln!(
        "== inventory_at, {queries} random instants, log size {}",
        store.size()
    );
    let timings = inventory::query(store, shape, queries)?;
    for t in &timings {
        eprintln!(
            "{:<12} p50 {:.3}s  p95 {:.3}s  rows {}–{}",
            t.question,
            t.p50,
            t.p95,
            t.rows.iter().min().unwrap_or(&0),
            t.rows.iter().max().unwrap_or(&0)
        );
    }
    let doc = json!({"shape": {"clusters": shape.clusters, "objects": shape.objects,
        "events": shape.events, "late": shape.late, "seed": shape.seed},
        "ingest": ingest, "inventory_at": timings});
    std::fs::write(out, serde_json::to_vec_pretty(&doc)?)?;
    Ok(())
}

/// A buffered writer to `out`, or to stdout for `-`.
fn sink(out: &std::path::Path) -> anyhow::Result<BufWriter<Box<dyn Write>>> {
    let sink: Box<dyn Write> = if out.as_os_str() == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(File::create(out)?)
    };
    Ok(BufWriter::with_capacity(1 << 20, sink))
}

/// Audit events to repeat: every line of every `*.jsonl` under `from`
/// that is an audit event (has `auditID`), in path order.
fn audit_templates(from: &[PathBuf]) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = from.to_vec();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p)? {
                stack.push(e?.path());
            }
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            files.push(p);
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        for line in std::fs::read_to_string(&f)?.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                if v.get("auditID").is_some() && v.get("verb").is_some() {
                    out.push(v);
                }
            }
        }
    }
    anyhow::ensure!(!out.is_empty(), "no audit events found under {from:?}");
    Ok(out)
}

/// Writes `count` audit events cycling through the templates, each with a
/// fresh auditID (seeded) and a timestamp one millisecond after the last.
fn audit(
    w: &mut impl Write,
    count: u64,
    seed: u64,
    from: &[PathBuf],
    shape: cloud_audit::Shape,
) -> anyhow::Result<()> {
    let templates = audit_templates(from)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let start = 1_793_520_000_000i64; // 2026-11-01T08:00:00Z in ms
    for i in 0..count {
        let mut ev = templates[(i as usize) % templates.len()].clone();
        let id: u128 = rng.random();
        let hex = format!("{id:032x}");
        ev["auditID"] = format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
        .into();
        let ts = chrono::DateTime::from_timestamp_millis(start + i as i64)
            .unwrap_or_default()
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string();
        for key in ["stageTimestamp", "requestReceivedTimestamp", "timestamp"] {
            if ev.get(key).is_some() {
                ev[key] = ts.clone().into();
            }
        }
        serde_json::to_writer(&mut *w, &cloud_audit::wrap(shape, ev, "bench"))?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// One way of writing per-event keys to sled, timed by `stages`. These
/// figures are why annal keeps leaves and tree nodes in flat files and only
/// the id index in sled (docs/operations.md, "Why the leaves are not sled values").
struct SledCase {
    name: &'static str,
    /// Also check and insert the envelope id (the idempotency index).
    ids: bool,
    /// Flush after every 4096-event batch.
    flush: bool,
    /// Also insert a cluster/time key into a second tree.
    derived: bool,
}

const SLED_CASES: [SledCase; 4] = [
    SledCase {
        name: "52-byte values, sequential keys",
        ids: false,
        flush: false,
        derived: false,
    },
    SledCase {
        name: "+ id index",
        ids: true,
        flush: false,
        derived: false,
    },
    SledCase {
        name: "+ id index + flush per batch",
        ids: true,
        flush: true,
        derived: false,
    },
    SledCase {
        name: "+ id index + flush + derived key",
        ids: true,
        flush: true,
        derived: true,
    },
];

/// Seconds to write every event's keys in 4096-event batches.
fn sled_case(case: &SledCase, envs: &[annal_schemas::Envelope]) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir()?;
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity(8 << 20)
        .open()?;
    let log = db.open_tree("log")?;
    let idx = db.open_tree("idx")?;
    let started = std::time::Instant::now();
    for (b, chunk) in envs.chunks(4096).enumerate() {
        let mut batch = sled::Batch::default();
        let mut derived = sled::Batch::default();
        for (i, e) in chunk.iter().enumerate() {
            let index = (b * 4096 + i) as u64;
            let mut key = vec![b'L'];
            key.extend_from_slice(&index.to_be_bytes());
            batch.insert(key, &[0u8; 52][..]);
            if case.ids {
                let id = format!("I{}", e.id);
                anyhow::ensure!(!log.contains_key(&id)?, "duplicate id {}", e.id);
                batch.insert(id.as_bytes(), &index.to_be_bytes()[..]);
            }
            if case.derived {
                let mut key = e.cluster.clone().unwrap_or_default().into_bytes();
                key.extend_from_slice(&e.time.unix_micros().to_be_bytes());
                key.extend_from_slice(&index.to_be_bytes());
                derived.insert(key, &[][..]);
            }
        }
        log.apply_batch(batch)?;
        idx.apply_batch(derived)?;
        if case.flush {
            db.flush()?;
        }
    }
    db.flush()?;
    Ok(started.elapsed().as_secs_f64())
}

/// Times each ingest stage on its own, single-threaded.
fn stages(input: &std::path::Path) -> anyhow::Result<()> {
    use std::time::Instant;
    let text = std::fs::read(input)?;
    let lines: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let n = lines.len() as f64;
    let t = Instant::now();
    let values: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_slice(l))
        .collect::<Result<_, _>>()?;
    println!(
        "serde_json::Value parse   {:8.2} µs/event",
        t.elapsed().as_secs_f64() * 1e6 / n
    );
    drop(values);
    let t = Instant::now();
    let envs: Vec<annal_schemas::Envelope> = lines
        .iter()
        .map(|l| annal_schemas::Envelope::parse(l))
        .collect::<Result<_, _>>()?;
    println!(
        "Envelope::parse (validate) {:8.2} µs/event",
        t.elapsed().as_secs_f64() * 1e6 / n
    );
    let t = Instant::now();
    let mut bytes = 0usize;
    for e in &envs {
        bytes += serde_json_canonicalizer::to_vec(e)?.len();
    }
    println!(
        "JCS (serde_json_canonicalizer) {:8.2} µs/event",
        t.elapsed().as_secs_f64() * 1e6 / n
    );
    let t = Instant::now();
    let mut bytes2 = 0usize;
    for e in &envs {
        bytes2 += annal_store::canonical::to_vec(e)?.len();
    }
    println!(
        "JCS (annal canonical)      {:8.2} µs/event ({} vs {} bytes)",
        t.elapsed().as_secs_f64() * 1e6 / n,
        bytes2,
        bytes
    );
    let t = Instant::now();
    for l in &lines {
        std::hint::black_box(annal_store::merkle::leaf_hash(l));
    }
    println!(
        "BLAKE3 leaf hash           {:8.2} µs/event",
        t.elapsed().as_secs_f64() * 1e6 / n
    );
    for case in &SLED_CASES {
        println!(
            "sled: {:<34} {:8.2} µs/event",
            case.name,
            sled_case(case, &envs)? * 1e6 / n
        );
    }
    Ok(())
}

fn envelopes(
    w: &mut impl Write,
    count: u64,
    size: usize,
    clusters: u32,
    seed: u64,
) -> anyhow::Result<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    let base = 1_793_491_200i64; // 2026-11-01T00:00:00Z
    for i in 0..count {
        let cluster = rng.random_range(0..clusters);
        let app = rng.random_range(0..50u32);
        let object = rng.random_range(0..10_000u32);
        let t = base + (i as i64) / 10;
        let time = chrono_like(t);
        let mut env = json!({
            "schema": "annal.event/v1",
            "id": format!("bench-{seed}-{i}"),
            "type": "object.observed",
            "time": time,
            "cluster": format!("cluster-{cluster:03}"),
            "source": "annal-bench",
            "actor": {"principal": "system:serviceaccount:argocd:argocd-application-controller"},
            "data": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": format!("svc-{object:05}"),
                    "namespace": format!("team-{}", object % 40),
                    "uid": format!("{:08x}-0000-4000-8000-{:012x}", object, cluster),
                    "resourceVersion": (i + 1000).to_string(),
                    "labels": {"app.kubernetes.io/instance": format!("app-{app}"), "tier": "backend"},
                    "annotations": {"argocd.argoproj.io/tracking-id":
                        format!("app-{app}:apps/Deployment:team-{}/svc-{object:05}", object % 40)},
                    "managedFields": [{"manager": "argocd-controller", "operation": "Apply",
                        "apiVersion": "apps/v1", "time": time, "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}}]
                },
                "spec": {"replicas": rng.random_range(1..10u32)}
            }
        });
        let len = serde_json::to_vec(&env)?.len();
        if len + 20 < size {
            let pad: String = (0..size - len - 20)
                .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
                .collect();
            env["data"]["spec"]["image"] = json!(pad);
        }
        serde_json::to_writer(&mut *w, &env)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// RFC 3339 from Unix seconds, without pulling chrono into the generator.
fn chrono_like(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_correct() {
        assert_eq!(chrono_like(1_793_491_200), "2026-11-01T00:00:00Z");
        assert_eq!(chrono_like(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn same_seed_same_bytes_and_sizes_near_target() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        envelopes(&mut a, 50, 1024, 5, 7).unwrap();
        envelopes(&mut b, 50, 1024, 5, 7).unwrap();
        assert_eq!(a, b);
        for line in a.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
            assert!((1000..=1030).contains(&line.len()), "{}", line.len());
            annal_line_is_json(line);
        }
    }

    fn annal_line_is_json(line: &[u8]) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        assert_eq!(v["schema"], "annal.event/v1");
    }
}
