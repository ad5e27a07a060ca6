//! Input formats: each turns one parsed document into envelopes.
//!
//! A record is parsed once (JSON or YAML, see [`crate::document`]) and
//! classified by its content ([`Kind`]): an audit event, an Argo CD
//! Application, a Flux Kustomization, a plain object... `--format auto`
//! decodes every kind; a named format accepts its own kinds (plus plain
//! objects in GitOps dumps) and rejects the rest with a hint.
//!
//! Every envelope leaves here redacted ([`crate::redact`]) and validated, with
//! a deterministic id (see the `ids` module) so that re-ingesting a file
//! appends nothing.

use std::fmt;
use std::str::FromStr;

use annal_schemas::{Actor, Envelope, EventType, Timestamp, SCHEMA_V1};
use serde_json::Value;

use crate::document::{self, Syntax};
use crate::{redact, ListItem, Record};

mod argocd;
mod cli_output;
mod cloud_audit;
mod envelope;
mod fleet;
mod flux;
mod ids;
mod k8s_audit;
mod k8s_event;
mod k8s_object;
mod kind;
mod time;

pub use kind::Kind;
pub use time::TimeSource;

/// An input format, named by `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Detect each document's kind from its content.
    Auto,
    /// Envelope v1 records (JSON Lines or a JSON array).
    Envelope,
    /// Kubernetes audit events (`audit.k8s.io` v1/v1beta1, JSONL or
    /// EventList) and admission request captures.
    K8sAudit,
    /// GKE audit logs from Cloud Logging (`gcloud logging read --format
    /// json`, Pub/Sub, storage or BigQuery sinks).
    GkeAudit,
    /// AKS `kube-audit`/`kube-audit-admin` diagnostic records (Event Hub
    /// batches, storage-account lines, Log Analytics rows).
    AksAudit,
    /// EKS audit logs from CloudWatch Logs (`aws logs filter-log-events`,
    /// subscription payloads).
    EksAudit,
    /// Kubernetes objects (single, `*List`, multi-document YAML, watch events).
    K8sObject,
    /// Argo CD Applications, AppProjects and cluster Secrets.
    ArgoCd,
    /// Flux Kustomizations, HelmReleases and notification-controller events.
    Flux,
    /// Rancher Fleet BundleDeployments.
    Fleet,
    /// core/v1 and events.k8s.io/v1 Events.
    K8sEvent,
}

impl Format {
    /// Every format, for help texts.
    pub const ALL: [Format; 11] = [
        Format::Auto,
        Format::Envelope,
        Format::K8sAudit,
        Format::GkeAudit,
        Format::AksAudit,
        Format::EksAudit,
        Format::K8sObject,
        Format::ArgoCd,
        Format::Flux,
        Format::Fleet,
        Format::K8sEvent,
    ];

    /// The `--format` name.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Envelope => "envelope",
            Format::K8sAudit => "k8s-audit",
            Format::GkeAudit => "gke-audit",
            Format::AksAudit => "aks-audit",
            Format::EksAudit => "eks-audit",
            Format::K8sObject => "k8s-object",
            Format::ArgoCd => "argocd",
            Format::Flux => "flux",
            Format::Fleet => "fleet",
            Format::K8sEvent => "k8s-event",
        }
    }

    /// Whether this format reads YAML (envelopes are JSON only).
    pub fn reads_yaml(&self) -> bool {
        *self != Format::Envelope
    }

    /// One record that is a valid envelope, encoded for the log straight
    /// from its bytes (see [`envelope::prepare`]), when this format would
    /// take it as it is; `None` sends it to [`Format::decode`].
    pub(crate) fn prepare_envelope(
        &self,
        record: &Record,
        syntax: Syntax,
    ) -> Option<annal_store::PreparedEvent> {
        let takes = matches!(self, Format::Envelope | Format::Auto);
        if takes && syntax == Syntax::Json && record.item.is_none() {
            envelope::prepare(record)
        } else {
            None
        }
    }

    /// Decodes one framed record into `out`. A record-level error (it does
    /// not parse, or is not this format) is returned; errors in one item of
    /// a list are recorded in `out` and the other items still decode.
    pub fn decode(
        &self,
        record: &Record,
        syntax: Syntax,
        ctx: &Context<'_>,
        out: &mut Output,
    ) -> Result<(), DecodeError> {
        // Most records of a mixed file are envelopes already (the bench
        // datasets are nothing else): `auto` tries one parse straight into
        // the type, which skips building a JSON tree and moving it into
        // one, so it reads them as fast as `--format envelope`. Anything
        // else fails at its first unknown key and takes the general path,
        // which also explains a bad envelope's error.
        let typed = match self {
            Format::Envelope => Some(envelope::decode(record).map_err(DecodeError::reason)?),
            Format::Auto if syntax == Syntax::Json && record.item.is_none() => {
                envelope::try_parse(record)
            }
            _ => None,
        };
        if let Some(mut env) = typed {
            redact::value(&mut env.data);
            out.events.push(env);
            return Ok(());
        }
        let mut doc = document::parse(record, syntax).map_err(|e| DecodeError {
            line: Some(e.line),
            // A CLI's text view says which command printed it.
            reason: cli_output::explain_text(&record.bytes).unwrap_or(e.message),
        })?;
        if !(doc.is_object() || doc.is_array()) {
            // YAML reads a text table as one folded string.
            if let Some(view) = cli_output::explain_text(&record.bytes) {
                return Err(DecodeError::reason(view));
            }
        }
        let before = out.events.len();
        let result = match &record.item {
            None => self.document(doc, ctx, out, ""),
            Some(item) => {
                // One item of a streamed list: typed lists leave the kind to
                // the list.
                item.fill(&mut doc);
                let mut item_ctx = *ctx;
                item_ctx.item = Some(item.index);
                self.document(
                    doc,
                    &item_ctx,
                    out,
                    &format!("{}[{}].", item.key, item.index),
                )
            }
        };
        if result.is_err() {
            out.events.truncate(before);
        }
        result.map_err(DecodeError::reason)
    }

    /// Decodes one document (or list item, `path` naming where it sits).
    fn document(
        &self,
        mut doc: Value,
        ctx: &Context<'_>,
        out: &mut Output,
        path: &str,
    ) -> Result<(), String> {
        if let Value::Array(items) = doc {
            // A YAML sequence of documents (`argocd app list -o yaml`).
            self.elements(items, "", None, ctx, out, path);
            return Ok(());
        }
        cli_output::complete(&mut doc);
        if let Some(view) = cli_output::explain_document(&doc) {
            return Err(at(path, &view));
        }
        let kind = Kind::of(&doc).map_err(|e| at(path, &e))?;
        if !self.accepts(kind) {
            return Err(at(
                path,
                &format!(
                    "not {} input: this is {} (try --format {})",
                    self.name(),
                    kind.describe(),
                    kind.format().name()
                ),
            ));
        }
        let mut emit = Emitter { ctx, out, path };
        let result = match kind {
            Kind::Envelope => envelope::from_value(doc, &mut emit),
            Kind::List | Kind::AuditList => {
                let Value::Object(mut map) = doc else {
                    unreachable!("Kind::of checked the list shape")
                };
                let items = match map.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                // Typed lists (`ApplicationList`, an audit `EventList`)
                // leave each item's kind and apiVersion to the list.
                let head = Value::Object(map);
                self.elements(items, "items", Some(&head), ctx, out, path);
                Ok(())
            }
            Kind::AuditEvent => k8s_audit::event(doc, &mut emit),
            Kind::Admission => k8s_audit::admission(doc, &mut emit),
            Kind::Watch => k8s_object::watch(doc, &mut emit),
            Kind::Object => k8s_object::observed(doc, &mut emit),
            Kind::KubeEvent => k8s_event::event(doc, &mut emit),
            Kind::OtelEvent => k8s_event::otel(doc, &mut emit),
            Kind::Application => argocd::application(doc, &mut emit, *self != Format::K8sObject),
            Kind::AppProject => argocd::project(doc, &mut emit),
            Kind::ClusterSecret => {
                argocd::cluster_secret(doc, &mut emit, *self != Format::K8sObject)
            }
            Kind::Kustomization | Kind::HelmRelease => {
                flux::resource(doc, kind, &mut emit, *self != Format::K8sObject)
            }
            Kind::FluxEvent => flux::notification(doc, &mut emit),
            Kind::BundleDeployment => {
                fleet::bundle_deployment(doc, &mut emit, *self != Format::K8sObject)
            }
            Kind::GkeAudit => cloud_audit::gke::entry(doc, &mut emit),
            Kind::AksRecord => cloud_audit::aks::record(doc, &mut emit),
            Kind::AksRecords => cloud_audit::aks::records(doc, &mut emit),
            Kind::CloudWatchEvent => cloud_audit::eks::event(doc, &mut emit),
            Kind::CloudWatchBatch => cloud_audit::eks::batch(doc, &mut emit),
            Kind::ConversionReview | Kind::Fragment | Kind::Unnamed => {
                out.skip(kind.describe());
                Ok(())
            }
        };
        result.map_err(|e| at(path, &e))
    }

    /// Decodes each element of an array (under `key` of the document at
    /// `path`; a typed list's items take their kind from its `head`) as a
    /// document of its own: an element that fails is rejected alone.
    fn elements(
        &self,
        items: Vec<Value>,
        key: &str,
        head: Option<&Value>,
        ctx: &Context<'_>,
        out: &mut Output,
        path: &str,
    ) {
        for (i, mut item) in items.into_iter().enumerate() {
            if let Some(head) = head {
                ListItem::of_list(head, i).fill(&mut item);
            }
            let item_path = format!("{path}{key}[{i}].");
            let mut item_ctx = *ctx;
            item_ctx.item = Some(i);
            let kept = item.clone();
            let before = out.events.len();
            if let Err(reason) = self.document(item, &item_ctx, out, &item_path) {
                out.events.truncate(before);
                out.reject(reason, kept);
            }
        }
    }

    fn accepts(&self, kind: Kind) -> bool {
        use Kind::*;
        match self {
            Format::Auto => true,
            Format::Envelope => kind == Envelope,
            Format::K8sAudit => matches!(
                kind,
                AuditEvent
                    | AuditList
                    | Admission
                    | GkeAudit
                    | AksRecord
                    | AksRecords
                    | CloudWatchEvent
                    | CloudWatchBatch
            ),
            Format::GkeAudit => kind == GkeAudit,
            Format::AksAudit => matches!(kind, AksRecord | AksRecords),
            Format::EksAudit => matches!(kind, CloudWatchEvent | CloudWatchBatch),
            Format::K8sObject => !matches!(
                kind,
                Envelope
                    | AuditEvent
                    | AuditList
                    | Admission
                    | FluxEvent
                    | Fragment
                    | GkeAudit
                    | AksRecord
                    | AksRecords
                    | CloudWatchEvent
                    | CloudWatchBatch
            ),
            Format::ArgoCd => matches!(
                kind,
                Application | AppProject | ClusterSecret | List | Object | Unnamed
            ),
            Format::Flux => matches!(
                kind,
                Kustomization | HelmRelease | FluxEvent | List | Object | KubeEvent | Unnamed
            ),
            Format::Fleet => matches!(kind, BundleDeployment | List | Object | Unnamed),
            Format::K8sEvent => matches!(kind, KubeEvent | OtelEvent | List),
        }
    }
}

fn at(path: &str, reason: &str) -> String {
    if path.is_empty() || reason.starts_with(path) {
        reason.to_string()
    } else {
        format!("{}: {reason}", path.trim_end_matches('.'))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--format` value that names no format.
#[derive(Debug, thiserror::Error)]
#[error("unknown format {0:?} (known: auto, envelope, k8s-audit, gke-audit, aks-audit, eks-audit, k8s-object, argocd, flux, fleet, k8s-event)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// A record that was rejected as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The line at fault when it is not the record's first (parse errors).
    pub line: Option<u64>,
    /// Why, naming the field at fault.
    pub reason: String,
}

impl DecodeError {
    fn reason(reason: String) -> Self {
        DecodeError { line: None, reason }
    }
}

/// What the caller knows about where records come from.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// Input name (file path or `-`), for `source` and messages.
    pub input: &'a str,
    /// Line where the record starts.
    pub line: u64,
    /// Index within a list, when decoding a list item.
    pub item: Option<usize>,
    /// `--cluster`: the cluster of inputs that do not name one.
    pub cluster: Option<&'a str>,
    /// `--time`: valid time for inputs that carry none (objects: always).
    pub time: Option<Timestamp>,
    /// The input file's modification time (or the start of ingest for
    /// stdin): the last resort for valid time.
    pub file_time: Timestamp,
}

impl<'a> Context<'a> {
    /// A context for `input` with no flags.
    pub fn new(input: &'a str, file_time: Timestamp) -> Self {
        Context {
            input,
            line: 1,
            item: None,
            cluster: None,
            time: None,
            file_time,
        }
    }
}

/// What decoding produced.
#[derive(Debug, Default)]
pub struct Output {
    /// Envelopes, redacted and validated.
    pub events: Vec<Envelope>,
    /// Items of a list that were rejected: reason and the (redacted) item.
    pub rejected: Vec<(String, Value)>,
    /// Documents that carry nothing to record, with the reason.
    pub skipped: Vec<String>,
    /// How the valid time of each event was chosen.
    pub times: TimeCounts,
}

impl Output {
    fn reject(&mut self, reason: String, mut item: Value) {
        redact::value(&mut item);
        self.rejected.push((reason, item));
    }

    fn skip(&mut self, reason: &str) {
        self.skipped.push(reason.to_string());
    }
}

/// Counts of events by [`TimeSource`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeCounts(pub [u64; TimeSource::COUNT]);

impl TimeCounts {
    /// Adds another count.
    pub fn add(&mut self, other: &TimeCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// Non-zero counts with their source.
    pub fn iter(&self) -> impl Iterator<Item = (TimeSource, u64)> + '_ {
        TimeSource::ALL
            .into_iter()
            .zip(self.0)
            .filter(|(_, n)| *n > 0)
    }
}

/// The decoders' handle: builds, redacts, validates and collects envelopes.
struct Emitter<'c, 'a> {
    ctx: &'c Context<'a>,
    out: &'c mut Output,
    path: &'c str,
}

/// How an event's id is made (see [`ids`]).
enum Id {
    /// The source's own unique id.
    Fixed(String),
    /// Content-addressed: `<prefix>:<hash>` of the redacted event, with the
    /// valid time when `time` is set.
    Content { prefix: &'static str, time: bool },
}

impl Id {
    fn content(prefix: &'static str, time: bool) -> Id {
        Id::Content { prefix, time }
    }
}

/// An event under construction.
struct Event {
    event_type: EventType,
    id: Id,
    time: (Timestamp, TimeSource),
    cluster: Option<String>,
    actor: Option<Actor>,
    data: Value,
}

impl Event {
    /// An event on `cluster` with no actor.
    fn new(
        event_type: EventType,
        id: Id,
        time: (Timestamp, TimeSource),
        cluster: String,
        data: Value,
    ) -> Event {
        Event {
            event_type,
            id,
            time,
            cluster: Some(cluster),
            actor: None,
            data,
        }
    }

    /// The same event, caused by `actor`.
    fn by(mut self, actor: Option<Actor>) -> Event {
        self.actor = actor;
        self
    }
}

impl Emitter<'_, '_> {
    /// The cluster from `--cluster`, or an error that says to pass it.
    fn cluster(&self, what: &str) -> Result<String, String> {
        self.ctx
            .cluster
            .map(str::to_string)
            .ok_or_else(|| format!("{what} names no cluster: pass --cluster ID"))
    }

    /// Valid time: the record's own, else `--time`, else the file's.
    fn time(&self, own: Option<Timestamp>) -> (Timestamp, TimeSource) {
        match (own, self.ctx.time) {
            (Some(t), _) => (t, TimeSource::Record),
            (None, Some(t)) => (t, TimeSource::Flag),
            (None, None) => (self.ctx.file_time, TimeSource::File),
        }
    }

    fn skip(&mut self, reason: &str) {
        self.out.skip(reason);
    }

    /// Redacts, names, validates and keeps an event.
    fn emit(&mut self, mut event: Event) -> Result<(), String> {
        redact::value(&mut event.data);
        let cluster = event.cluster.as_deref().unwrap_or("");
        let id = match event.id {
            Id::Fixed(id) => id,
            Id::Content { prefix, time } => ids::content(
                prefix,
                event.event_type,
                cluster,
                time.then_some(&event.time),
                &event.data,
            ),
        };
        let (time, time_source) = event.time;
        let mut source = format!("{}:{}", self.ctx.input, self.ctx.line);
        if !self.path.is_empty() {
            source.push(' ');
            source.push_str(self.path.trim_end_matches('.'));
        }
        source.push_str(" time=");
        source.push_str(time_source.as_str());
        let env = Envelope {
            schema: SCHEMA_V1.to_string(),
            id,
            event_type: event.event_type,
            time,
            cluster: event.cluster,
            source: Some(source),
            actor: event.actor,
            data: event.data,
        };
        env.validate().map_err(|e| e.to_string())?;
        self.out.times.0[time_source as usize] += 1;
        self.out.events.push(env);
        Ok(())
    }
}
