//! The as-of inventory benchmark: a seeded fleet (clusters × objects, mostly
//! updates, a share arriving late) appended to a fresh ledger with every
//! derived index on, then `inventory_at(T)` at random instants over SQL, for
//! the whole fleet and for one cluster.
//!
//! Events are built in process and appended in 4096-event group commits
//! (no JSONL file: 10M events would be gigabytes of text); the ingest
//! figure therefore covers canonical encoding, the Merkle log, the id index
//! and the derived indexes, not the file decoder.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use annal_schemas::{Envelope, Timestamp};
use annal_store::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// Dataset shape.
#[derive(Clone, Debug)]
pub struct Shape {
    pub clusters: u32,
    pub objects: u64,
    pub events: u64,
    /// Share of events delivered late (after events with later valid times).
    pub late: f64,
    pub seed: u64,
}

/// 2026-10-01T00:00:00Z in µs: the dataset spans 30 days from here.
pub(crate) const START: i64 = 1_790_812_800_000_000;
pub(crate) const SPAN: i64 = 30 * 86_400 * 1_000_000;
const KINDS: [(&str, &str); 3] = [
    ("apps/v1", "Deployment"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
];

/// The valid time of generated event `i` (events are spread evenly).
pub(crate) fn time_of(shape: &Shape, i: u64) -> i64 {
    START + (i as i128 * SPAN as i128 / shape.events.max(1) as i128) as i64
}

/// Event `i`: the first `objects` create every object once, the rest
/// update a random object (1% delete it; the next event on a deleted
/// object recreates it with a new uid).
pub(crate) struct Generator {
    shape: Shape,
    pub(crate) rng: StdRng,
    generation: Vec<u16>,
    deleted: Vec<bool>,
}

impl Generator {
    pub(crate) fn new(shape: &Shape) -> Generator {
        Generator {
            shape: shape.clone(),
            rng: StdRng::seed_from_u64(shape.seed),
            generation: vec![0; shape.objects as usize],
            deleted: vec![false; shape.objects as usize],
        }
    }

    fn event(&mut self, i: u64) -> Value {
        self.object_event(i, i)
    }

    /// Object event number `j` (the first `objects` create), stamped as
    /// event `i` of the stream (its id, valid time and resourceVersion).
    pub(crate) fn object_event(&mut self, j: u64, i: u64) -> Value {
        let s = &self.shape;
        let object = if j < s.objects {
            j
        } else {
            self.rng.random_range(0..s.objects)
        };
        let per_cluster = s.objects.div_ceil(s.clusters as u64);
        let cluster = format!("c{:03}", object / per_cluster);
        let local = object % per_cluster;
        let (api_version, kind) = KINDS[(local % 3) as usize];
        let namespace = format!("ns-{:02}", local % 20);
        let name = format!("obj-{local}");
        let time = Timestamp::from_unix_micros(time_of(s, i)).unwrap_or_else(Timestamp::now);
        let o = object as usize;
        let delete = j >= s.objects && !self.deleted[o] && self.rng.random_bool(0.01);
        if self.deleted[o] && !delete {
            self.deleted[o] = false;
            self.generation[o] += 1;
        }
        let id = format!("bench-{}-{i}", s.seed);
        if delete {
            self.deleted[o] = true;
            return json!({"schema": "annal.event/v1", "id": id, "type": "object.deleted",
                "time": time.to_string(), "cluster": cluster,
                "data": {"apiVersion": api_version, "kind": kind,
                         "metadata": {"name": name, "namespace": namespace}}});
        }
        let app = format!("app-{:02}", local % 50);
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let (labels, annotations) = match local % 10 {
            // Flux-managed.
            0 => (
                json!({"kustomize.toolkit.fluxcd.io/name": app, "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}),
                json!({}),
            ),
            // Helm-installed.
            1 => (
                json!({"app.kubernetes.io/managed-by": "Helm"}),
                json!({"meta.helm.sh/release-name": app, "meta.helm.sh/release-namespace": namespace}),
            ),
            // Argo CD annotation tracking.
            _ => (
                json!({"app.kubernetes.io/name": name}),
                json!({"argocd.argoproj.io/tracking-id": format!("{app}:{group}/{kind}:{namespace}/{name}")}),
            ),
        };
        json!({"schema": "annal.event/v1", "id": id, "type": "object.observed",
            "time": time.to_string(), "cluster": cluster,
            "data": {"apiVersion": api_version, "kind": kind, "metadata": {
                "name": name, "namespace": namespace,
                "uid": format!("{cluster}-{local}-{}", self.generation[o]),
                "resourceVersion": (i + 1).to_string(),
                "labels": labels, "annotations": annotations,
                "managedFields": [
                    {"manager": "argocd-controller", "operation": "Apply"},
                    {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"}]}}})
    }
}

/// Late delivery: from the first event after the creations, a share
/// `late` of events is held back and delivered 1,000–200,000 events after
/// its turn, as from a cluster that reconnects.
pub(crate) struct Late {
    held: std::collections::BTreeMap<u64, Vec<Value>>,
    share: f64,
    from: u64,
    /// Events held back so far.
    pub(crate) count: u64,
}

impl Late {
    pub(crate) fn new(shape: &Shape) -> Late {
        Late {
            held: Default::default(),
            share: shape.late,
            from: shape.objects,
            count: 0,
        }
    }

    /// Event `i` (in generation order) goes to `out` or is held back;
    /// then whatever falls due at `i` follows it.
    pub(crate) fn route(&mut self, i: u64, event: Value, rng: &mut StdRng, out: &mut Vec<Value>) {
        if i >= self.from && rng.random_bool(self.share) {
            let due = i + rng.random_range(1_000..200_000);
            self.held.entry(due).or_default().push(event);
            self.count += 1;
        } else {
            out.push(event);
        }
        if let Some(due) = self.held.remove(&i) {
            out.extend(due);
        }
    }

    /// What is still held at the end, in due order.
    pub(crate) fn rest(self) -> impl Iterator<Item = Value> {
        self.held.into_values().flatten()
    }
}

/// What ingest did.
pub struct Ingested {
    pub events: u64,
    pub late: u64,
    pub seconds: f64,
}

/// Generates and appends the dataset. A late event is held back and
/// delivered 1,000–200,000 events after its turn.
pub fn ingest(store: &Store, shape: &Shape) -> anyhow::Result<Ingested> {
    const BATCH: usize = 4096;
    let mut generator = Generator::new(shape);
    let mut late = Late::new(shape);
    let mut batch = Vec::with_capacity(BATCH);
    let started = Instant::now();
    let flush = |batch: &mut Vec<Value>| -> anyhow::Result<()> {
        let events = batch
            .drain(..)
            .map(Envelope::from_value)
            .collect::<Result<Vec<_>, _>>()?;
        store.append(events)?;
        Ok(())
    };
    for i in 0..shape.events {
        let event = generator.event(i);
        late.route(i, event, &mut generator.rng, &mut batch);
        if batch.len() >= BATCH {
            flush(&mut batch)?;
        }
        if i > 0 && i % 1_000_000 == 0 {
            eprintln!(
                "  {i} events, {:.0} events/s",
                i as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    let held_back = late.count;
    batch.extend(late.rest());
    while !batch.is_empty() {
        let rest = batch.split_off(batch.len().min(BATCH));
        flush(&mut batch)?;
        batch = rest;
    }
    Ok(Ingested {
        events: shape.events,
        late: held_back,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Timings of one question at several instants.
#[derive(Debug, serde::Serialize)]
pub struct Timings {
    pub question: String,
    pub instants: Vec<String>,
    pub seconds: Vec<f64>,
    pub rows: Vec<u64>,
    pub p50: f64,
    pub p95: f64,
}

/// Runs `inventory_at(T)` over SQL at `queries` random instants, for the
/// fleet and for one random cluster each time.
pub fn query(store: Arc<Store>, shape: &Shape, queries: usize) -> anyhow::Result<Vec<Timings>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut rng = StdRng::seed_from_u64(shape.seed ^ 0x5eed);
    let instants: Vec<(Timestamp, String)> = (0..queries)
        .map(|_| {
            let t = START + rng.random_range(0..SPAN);
            let cluster = format!("c{:03}", rng.random_range(0..shape.clusters));
            (
                Timestamp::from_unix_micros(t).unwrap_or_else(Timestamp::now),
                cluster,
            )
        })
        .collect();
    let mut out = Vec::new();
    for fleet in [true, false] {
        let mut t = Timings {
            question: if fleet { "fleet" } else { "one cluster" }.into(),
            instants: Vec::new(),
            seconds: Vec::new(),
            rows: Vec::new(),
            p50: 0.0,
            p95: 0.0,
        };
        for (at, cluster) in &instants {
            let sql = if fleet {
                format!("SELECT * FROM inventory_at('{at}')")
            } else {
                format!("SELECT * FROM inventory_at('{at}') WHERE cluster = '{cluster}'")
            };
            let started = Instant::now();
            let rows = runtime.block_on(async {
                let ctx = annal_query::sql::session(store.clone()).await?;
                let answer = annal_query::sql::run(&ctx, &sql).await?;
                Ok::<_, annal_query::QueryError>(
                    answer
                        .batches
                        .iter()
                        .map(|b| b.num_rows() as u64)
                        .sum::<u64>(),
                )
            })?;
            t.seconds.push(started.elapsed().as_secs_f64());
            t.rows.push(rows);
            t.instants.push(if fleet {
                at.to_string()
            } else {
                format!("{at} {cluster}")
            });
        }
        let mut sorted = t.seconds.clone();
        sorted.sort_by(f64::total_cmp);
        t.p50 = percentile(&sorted, 0.50);
        t.p95 = percentile(&sorted, 0.95);
        out.push(t);
    }
    Ok(out)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Bytes under `dir`.
pub fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        if let Ok(entries) = std::fs::read_dir(&p) {
            for e in entries.flatten() {
                match e.metadata() {
                    Ok(m) if m.is_dir() => stack.push(e.path()),
                    Ok(m) => total += m.len(),
                    Err(_) => {}
                }
            }
        }
    }
    total
}
