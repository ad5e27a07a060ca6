//! The standard comparison dataset (`bench/run`): one seeded stream of
//! Envelope v1 events written as JSON Lines, so that annal, PostgreSQL and
//! DuckDB load byte-identical input.
//!
//! The fleet is the as-of benchmark's ([`crate::inventory`]): `objects`
//! Deployments, Services and ConfigMaps spread over `clusters`, created
//! once and then updated (1% deleted, recreated with a new uid), owned by
//! Argo CD, Flux or Helm. Around them is what an auditor asks about:
//! - every write carries an actor (controller service account or a person)
//!   and the fingerprint of the credential it used;
//! - `cluster.registered` for each cluster first, then `app.sync` (4%, 30%
//!   of them pruning, 10% failing) and `app.health` (1%);
//! - every `events / 40` events one cluster's Argo CD credential is
//!   revoked (`cluster.credential.revoked`; the controller moves to the
//!   next one), and 0.1% of that controller's later writes still use the
//!   revoked one: the finding the auditor query "revoked credential used
//!   again" must surface.
//!
//! A share `late` of events (after the creations) is held back and
//! delivered 1,000–200,000 events after its turn, as from a cluster that
//! reconnects. Alongside the stream, [`Params`] names the instants,
//! clusters and objects the benchmark's queries ask about, drawn from the
//! same seed.

use std::io::Write;

use annal_schemas::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::inventory::{time_of, Generator, Late, Shape, SPAN, START};

/// People who write by hand (with their own credential), besides controllers.
const PEOPLE: [&str; 4] = [
    "user:alice@example.com",
    "user:bob@example.com",
    "user:carol@example.com",
    "oidc:ci-deployer",
];

/// What the queries of one run ask about (written beside the dataset).
#[derive(Debug, serde::Serialize)]
pub struct Params {
    /// Random valid times for the as-of questions, each with a cluster.
    pub instants: Vec<(String, String)>,
    /// An object with history: cluster, group, kind, namespace, name.
    pub object: [String; 5],
    /// A cluster and a time for "which credentials wrote to X after T".
    pub cluster: String,
    pub after: String,
    /// A day (UTC, `YYYY-MM-DD`) for the per-day questions.
    pub day: String,
    pub events: u64,
    pub late: u64,
}

/// Writes `shape.events` JSON lines to `out` and returns the parameters.
pub fn write(out: &mut impl Write, shape: &Shape, instants: usize) -> anyhow::Result<Params> {
    let mut stream = Stream::new(shape);
    let mut late = Late::new(shape);
    let mut ready = Vec::new();
    for i in 0..shape.events {
        let event = stream.event(i);
        late.route(i, event, &mut stream.rng, &mut ready);
        for event in ready.drain(..) {
            line(out, &event)?;
        }
    }
    let held_back = late.count;
    for event in late.rest() {
        line(out, &event)?;
    }
    Ok(stream.params(instants, held_back))
}

fn line(out: &mut impl Write, event: &Value) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The event stream in generation order (before late delivery).
struct Stream {
    shape: Shape,
    objects: Generator,
    rng: StdRng,
    /// Object events generated so far (the first `objects` create).
    object_events: u64,
    /// Per cluster: the controller credential's generation.
    rotation: Vec<u32>,
}

impl Stream {
    fn new(shape: &Shape) -> Stream {
        Stream {
            shape: shape.clone(),
            objects: Generator::new(shape),
            rng: StdRng::seed_from_u64(shape.seed ^ 0xa0d1_7000),
            object_events: 0,
            rotation: vec![0; shape.clusters as usize],
        }
    }

    fn event(&mut self, i: u64) -> Value {
        let clusters = u64::from(self.shape.clusters);
        let micros = time_of(&self.shape, i);
        let time = stamp(micros);
        let id = format!("std-{}-{i}", self.shape.seed);
        if i < clusters {
            return registered(&id, &time, i as u32);
        }
        let every = (self.shape.events / 40).max(1);
        if i % every == 0 {
            let c = self.rng.random_range(0..self.shape.clusters);
            return self.rotate(&id, &time, c);
        }
        // Syncs and health checks only once the fleet exists.
        let roll: f64 = if self.object_events >= self.shape.objects {
            self.rng.random()
        } else {
            1.0
        };
        if roll < 0.04 {
            return self.sync(&id, micros);
        }
        if roll < 0.05 {
            let c = self.rng.random_range(0..self.shape.clusters);
            let app = format!("argocd:app-{:02}", self.rng.random_range(0..50));
            let status = ["Healthy", "Healthy", "Healthy", "Progressing", "Degraded"]
                [self.rng.random_range(0..5)];
            return json!({"schema": "annal.event/v1", "id": id, "type": "app.health",
                "time": time, "cluster": cluster_id(c),
                "actor": self.controller_actor(c, "argocd"),
                "data": {"app": app, "status": status, "revision": revision(&mut self.rng)}});
        }
        let mut event = self.objects.object_event(self.object_events, i);
        self.object_events += 1;
        let actor = self.object_actor(&event);
        if let Some(map) = event.as_object_mut() {
            map.insert("actor".into(), actor);
        }
        event
    }

    /// Who wrote an object: its owning controller, or 2% of the time a
    /// person; 0.1% of controller writes after a rotation use the revoked
    /// credential.
    fn object_actor(&mut self, event: &Value) -> Value {
        let c = event["cluster"]
            .as_str()
            .and_then(|c| c.trim_start_matches('c').parse::<u32>().ok())
            .unwrap_or(0);
        if self.rng.random_bool(0.02) {
            let person = PEOPLE[self.rng.random_range(0..PEOPLE.len())];
            return json!({"principal": person, "credential": fingerprint(person, 0)});
        }
        let labels = &event["data"]["metadata"]["labels"];
        let controller = if labels.get("kustomize.toolkit.fluxcd.io/name").is_some() {
            "flux"
        } else if labels.get("app.kubernetes.io/managed-by").is_some() {
            "helm"
        } else {
            "argocd"
        };
        self.controller_actor(c, controller)
    }

    fn controller_actor(&mut self, c: u32, controller: &str) -> Value {
        let principal = match controller {
            "flux" => "system:serviceaccount:flux-system:kustomize-controller",
            "helm" => "system:serviceaccount:flux-system:helm-controller",
            _ => "system:serviceaccount:argocd:argocd-application-controller",
        };
        let mut generation = self.rotation[c as usize];
        if controller == "argocd" && generation > 0 && self.rng.random_bool(0.001) {
            generation -= 1;
        }
        let owner = format!("{}/{controller}", cluster_id(c));
        json!({"principal": principal, "controller": controller,
               "credential": fingerprint(&owner, generation)})
    }

    /// Revokes cluster `c`'s Argo CD credential; its later writes use the
    /// next generation (one event: the issue is not recorded).
    fn rotate(&mut self, id: &str, time: &str, c: u32) -> Value {
        let owner = format!("{}/argocd", cluster_id(c));
        let old = fingerprint(&owner, self.rotation[c as usize]);
        self.rotation[c as usize] += 1;
        json!({"schema": "annal.event/v1", "id": id, "type": "cluster.credential.revoked",
            "time": time, "cluster": cluster_id(c),
            "actor": {"principal": "user:alice@example.com",
                      "credential": fingerprint(PEOPLE[0], 0)},
            "data": {"principal": "system:serviceaccount:argocd:argocd-application-controller",
                     "fingerprint": old}})
    }

    fn sync(&mut self, id: &str, micros: i64) -> Value {
        let time = stamp(micros);
        let c = self.rng.random_range(0..self.shape.clusters);
        let app = format!("argocd:app-{:02}", self.rng.random_range(0..50));
        let phase = if self.rng.random_bool(0.1) {
            "Failed"
        } else {
            "Succeeded"
        };
        let prune = self.rng.random_bool(0.3);
        let seconds = self.rng.random_range(1..120);
        let started = stamp(micros - seconds * 1_000_000);
        let resources: Vec<Value> = (0..self.rng.random_range(1..4))
            .map(|r| {
                json!({"group": "apps", "version": "v1", "kind": "Deployment",
                       "namespace": format!("ns-{:02}", r), "name": format!("obj-{r}"),
                       "action": if prune && r == 0 { "prune" } else { "apply" },
                       "status": "Synced"})
            })
            .collect();
        let requests = self.rng.random_range(20..400);
        json!({"schema": "annal.event/v1", "id": id, "type": "app.sync",
            "time": time, "cluster": cluster_id(c),
            "actor": self.controller_actor(c, "argocd"),
            "data": {"app": app, "controller": "argocd", "revision": revision(&mut self.rng),
                     "phase": phase, "started_at": started, "finished_at": time,
                     "prune": prune, "dry_run": false, "resources": resources,
                     "metrics": {"render_seconds": self.rng.random_range(0.1..8.0),
                                 "api_requests": requests,
                                 "api_throttled": self.rng.random_range(0..requests / 10 + 1),
                                 "applied_bytes": self.rng.random_range(1_000..500_000)}}})
    }

    fn params(&mut self, instants: usize, late: u64) -> Params {
        let mut rng = StdRng::seed_from_u64(self.shape.seed ^ 0x5eed);
        let at = |rng: &mut StdRng| stamp(START + rng.random_range(0..SPAN));
        let cluster = |rng: &mut StdRng, clusters: u32| cluster_id(rng.random_range(0..clusters));
        let instants = (0..instants)
            .map(|_| (at(&mut rng), cluster(&mut rng, self.shape.clusters)))
            .collect();
        // An Argo CD-tracked Deployment (local index 3 of its cluster).
        let c = rng.random_range(0..self.shape.clusters);
        let object = [
            cluster_id(c),
            "apps".into(),
            "Deployment".into(),
            "ns-03".into(),
            "obj-3".into(),
        ];
        let day_offset = rng.random_range(0..30);
        let day = stamp(START + day_offset * 86_400_000_000)[..10].to_string();
        Params {
            instants,
            object,
            cluster: cluster(&mut rng, self.shape.clusters),
            after: stamp(START + SPAN * 3 / 4),
            day,
            events: self.shape.events,
            late,
        }
    }
}

fn registered(id: &str, time: &str, c: u32) -> Value {
    let environment = ["production", "staging", "development"][(c % 3) as usize];
    let region = ["eu-west-1", "us-east-1", "ap-south-1", "eu-central-1"][(c % 4) as usize];
    json!({"schema": "annal.event/v1", "id": id, "type": "cluster.registered",
        "time": time, "cluster": cluster_id(c),
        "actor": {"principal": "user:alice@example.com", "credential": fingerprint(PEOPLE[0], 0)},
        "data": {"display_name": format!("{environment}-{region}-{c}"), "environment": environment,
                 "region": region, "tenant": format!("tenant-{}", c % 10),
                 "owner": format!("team-{}", c % 7), "lifecycle": "active",
                 "api_server": format!("https://c{c:03}.k8s.example.com:6443")}})
}

/// RFC 3339 in UTC, as annal prints valid times.
fn stamp(micros: i64) -> String {
    Timestamp::from_unix_micros(micros)
        .unwrap_or_else(Timestamp::now)
        .to_string()
}

fn cluster_id(c: u32) -> String {
    format!("c{c:03}")
}

/// A stable, credential-shaped fingerprint of `owner`'s `generation`th
/// credential (FNV-1a, twice, as 32 hex digits: a fixture, not a secret).
fn fingerprint(owner: &str, generation: u32) -> String {
    let fnv = |seed: u64| {
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
        for b in owner.bytes().chain(generation.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    };
    format!("sha256:{:016x}{:016x}", fnv(1), fnv(2))
}

fn revision(rng: &mut StdRng) -> String {
    format!("{:016x}{:08x}", rng.random::<u64>(), rng.random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            clusters: 5,
            objects: 200,
            events: 4_000,
            late: 0.05,
            seed: 7,
        }
    }

    #[test]
    fn same_seed_same_bytes_and_every_line_is_a_valid_envelope() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let params = write(&mut a, &shape(), 3).unwrap();
        write(&mut b, &shape(), 3).unwrap();
        assert_eq!(a, b);
        let lines: Vec<&[u8]> = a.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len() as u64, shape().events);
        let mut types = std::collections::BTreeSet::new();
        for l in &lines {
            let text = std::str::from_utf8(l).unwrap();
            let envelope =
                annal_schemas::Envelope::parse(l).unwrap_or_else(|e| panic!("{e}: {text}"));
            types.insert(envelope.event_type.as_str().to_string());
        }
        for t in [
            "cluster.registered",
            "cluster.credential.revoked",
            "app.sync",
            "app.health",
            "object.observed",
            "object.deleted",
        ] {
            assert!(types.contains(t), "no {t} in {types:?}");
        }
        assert!(params.late > 100, "late {}", params.late);
        assert_eq!(params.instants.len(), 3);
    }
}
