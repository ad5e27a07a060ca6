//! Command-line arguments (clap derive). Values are validated here; the
//! commands turn them into work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::output::OutputFormat;

const ABOUT: &str = "annal: a tamper-evident audit and inventory ledger for multi-cluster GitOps.

Every input (controller events, Kubernetes objects, cluster registrations) is \
normalized into an Envelope v1 event and appended to a BLAKE3 Merkle log with \
signed checkpoints, so you can ask what existed where, who owned it, and prove \
nothing was rewritten.";

const AFTER_HELP: &str = "Getting started:
  annal demo                       create ./annal-data, load the bundled examples, show them
  annal init                       create an empty ledger (and its checkpoint signing key)
  annal ingest events.jsonl        append Envelope v1 events (JSONL or a JSON array; - for stdin)
  annal log --cluster prod-eu1-a   list events
  annal verify                     recompute every leaf and the root, check the signed checkpoint
  annal verify --checkpoint saved.cp --key auditor.vkey
                                   prove the log still extends a checkpoint you saved

Exit codes: 0 ok, 1 failure or tampering, 2 usage or input error, 3 needs approval.";

/// The `annal` command line.
#[derive(Debug, Parser)]
#[command(name = "annal", version, about = ABOUT, after_help = AFTER_HELP, max_term_width = 100, args_override_self = true)]
pub struct Cli {
    /// Ledger data directory.
    #[arg(
        long,
        global = true,
        env = "ANNAL_DATA",
        default_value = "./annal-data",
        value_name = "DIR"
    )]
    pub data: PathBuf,

    /// Output format for what the command prints.
    #[arg(short = 'o', long = "output", global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,

    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a ledger and its Ed25519 checkpoint signing key.
    Init(InitArgs),
    /// Append events from files or stdin (group-committed, idempotent by id).
    Ingest(IngestArgs),
    /// Recompute every leaf hash, tree node and the root; check the signed checkpoint.
    Verify(VerifyArgs),
    /// Show the log size, root, latest checkpoint and quarantine count.
    Status,
    /// Print the latest signed checkpoint (C2SP signed note).
    Checkpoint,
    /// Inclusion and consistency proofs (RFC 6962/9162 over BLAKE3), as JSON with their signed checkpoint.
    #[command(subcommand)]
    Proof(ProofCommand),
    /// The checkpoint signing key: show its public half, rotate it.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Cost and capacity attribution reports (table, CSV, JSON or a self-contained HTML page).
    #[command(subcommand)]
    Report(ReportCommand),
    /// List events, by cluster, type and valid-time window.
    Log(LogArgs),
    /// The objects live at an instant, with owners, claims, conflicts and field managers.
    #[command(alias = "objects")]
    Inventory(InventoryArgs),
    /// What changed between two instants: objects added, removed, changed (with the fields and their managers) or changed owner.
    Diff(DiffArgs),
    /// When each cluster was heard from: events, silences longer than --gap, and whether it is stale at --at.
    Coverage(CoverageArgs),
    /// Every version of one object with who made it (person, manager, app, revision) and what changed; --field gives a field's blame.
    History(HistoryArgs),
    /// Writes to GitOps-owned objects outside Git (kubectl edit, a break-glass user, another operator) and whether the owning controller reverted them (exit 3: any not reverted).
    Drift(DriftArgs),
    /// Rebuild the derived indexes from the log.
    Reindex,
    /// Inspect, re-ingest or drop rejected input.
    #[command(subcommand)]
    Quarantine(QuarantineCommand),
    /// Create ./annal-data if needed, load the bundled example events and show them.
    Demo,
    /// Run a SQL query over the ledger's tables (DataFusion SQL).
    Sql(SqlArgs),
    /// Serve the read API over HTTP (POST /v1/sql, GET /v1/inventory, ...) and the web UI at /ui/.
    Serve(ServeArgs),
    /// Export the tables for external engines.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Which objects a new controller may adopt: ADOPT / CONFLICT / ORPHAN / MISSING (exit 3: needs approval).
    TakeoverPlan(TakeoverArgs),
    /// What pruning an app against rendered manifests would delete, with risk flags (exit 3: needs approval).
    PrunePlan(PruneArgs),
    /// Which clusters a selector places on, and what changes (exit 3: removals or too many additions).
    #[command(subcommand)]
    Placement(PlacementCommand),
    /// Whether a fenced control plane still acted (exit 1: a violation).
    #[command(subcommand)]
    Fence(FenceCommand),
    /// Check an `argocd admin export` against the ledger (exit 3: empty, shrunken, apps missing).
    #[command(subcommand)]
    Backup(BackupCommand),
    /// How far a revision got per cohort, and revisions applied over newer ones.
    #[command(subcommand)]
    Rollout(RolloutCommand),
}

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Per cohort: candidates, started, succeeded, failed, waiting, durations, throttling (exit 3: failures).
    Status(RolloutStatusArgs),
    /// (app, cluster) pairs where a revision was applied after a newer one (exit 1: any).
    Regressions(RolloutRegressionsArgs),
}

#[derive(Debug, Args)]
pub struct RolloutStatusArgs {
    /// The revision.
    #[arg(long, value_name = "R")]
    pub revision: String,
    /// Only this app.
    #[arg(long, value_name = "APP")]
    pub app: Option<String>,
    /// Registry attribute that groups clusters into cohorts.
    #[arg(long, value_name = "KEY", default_value = "wave")]
    pub cohort_attribute: String,
    /// Valid time (default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    #[command(flatten)]
    pub freshness: Freshness,
}

#[derive(Debug, Args)]
pub struct RolloutRegressionsArgs {
    /// Only regressions at or after this valid time.
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub since: Option<annal_schemas::Timestamp>,
    /// Valid time (default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Compare an export's counts and app names with what the ledger knew.
    Check(BackupCheckArgs),
}

#[derive(Debug, Args)]
pub struct BackupCheckArgs {
    /// The export (multi-document YAML from `argocd admin export`).
    #[arg(value_name = "EXPORT.yaml")]
    pub export: PathBuf,
    /// Compare with the ledger at this valid time (the export's time; default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    #[command(flatten)]
    pub freshness: Freshness,
}

#[derive(Debug, Subcommand)]
pub enum FenceCommand {
    /// Writes by the old controller after its fence, unrevoked credentials, use of revoked ones.
    Check(FenceCheckArgs),
}

#[derive(Debug, Args)]
pub struct FenceCheckArgs {
    /// The old controller (as in its controlplane.fenced event and event actors).
    #[arg(long, value_name = "NAME")]
    pub controller: String,
    /// The fence time (default: the controller's latest controlplane.fenced event).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub since: Option<annal_schemas::Timestamp>,
    /// A further principal of the old controller; repeatable.
    #[arg(long = "principal", value_name = "NAME")]
    pub principals: Vec<String>,
    /// Check up to this valid time (default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
}

#[derive(Debug, Subcommand)]
pub enum PlacementCommand {
    /// Candidates, added and removed clusters between two instants or under a proposed selector.
    Diff(PlacementDiffArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("change").required(true).args(["from", "proposed_selector"])))]
pub struct PlacementDiffArgs {
    /// Cluster selector: `key=value` terms, comma-separated, all must hold (`key!=value` negates).
    #[arg(long, value_name = "SELECTOR")]
    pub selector: String,
    /// Drop clusters matching any of these `key=value` terms.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub exclude: String,
    /// Compare the selector at this instant...
    #[arg(long, value_name = "TS", value_parser = parse_time, requires = "to")]
    pub from: Option<annal_schemas::Timestamp>,
    /// ...with the same selector at this one.
    #[arg(long, value_name = "TS", value_parser = parse_time, requires = "from")]
    pub to: Option<annal_schemas::Timestamp>,
    /// Or compare the selector with this one, both at --at.
    #[arg(long, value_name = "SELECTOR", conflicts_with_all = ["from", "to"])]
    pub proposed_selector: Option<String>,
    /// The instant for --proposed-selector (default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    /// Most additions allowed without approval (default: any).
    #[arg(long, value_name = "N")]
    pub max_add: Option<u64>,
    /// Most removals allowed without approval.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_remove: u64,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Every table as Parquet under DIR/<table>/day=YYYY-MM-DD/cluster=ID/ (Hive partitions).
    Parquet {
        /// Target directory (tables already in it are replaced).
        #[arg(long, value_name = "DIR")]
        to: std::path::PathBuf,
        /// Only this table (repeatable; default: events, objects, managed_fields, clusters, revisions).
        #[arg(long = "table", value_name = "TABLE")]
        tables: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (without --tokens, loopback only).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7480")]
    pub listen: std::net::SocketAddr,
    /// Bearer tokens with roles, one `ROLE TOKEN` per line (roles: ingest, read, admin).
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM; needs --tls-key).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Largest ingest request body in bytes (413 above).
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    pub max_body_bytes: usize,
    /// Ingest requests handled at once (429 with Retry-After above).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_in_flight: usize,
    /// Memory one SQL query may reserve (e.g. 512MiB, 2GiB; default an eighth of the machine's memory); over it the query fails with 413.
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, default_value_t = annal_query::sql::limits::default_memory_bytes())]
    pub query_memory: usize,
    /// Cancel a SQL query after this long (408).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub query_timeout: std::time::Duration,
    /// SQL queries run at once (429 with Retry-After above); with --query-memory this bounds the memory of all queries.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_queries: u64,
    /// Rows in a JSON SQL answer; more are cut and the answer says `"truncated": true` (Arrow IPC answers stream every row).
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub sql_max_rows: u64,
    /// First create the ledger if needed, load the bundled examples and print the objects live now.
    #[arg(long)]
    pub demo: bool,
    /// Kafka bootstrap servers (HOST:PORT,...): also consume the --kafka-topic topics into the ledger.
    #[arg(long, value_name = "HOSTS", requires = "kafka_topic")]
    pub kafka_brokers: Option<String>,
    /// A topic to consume, NAME[=FORMAT][,cluster=ID] (repeatable; FORMAT as for ingest --format, default envelope).
    #[arg(long = "kafka-topic", value_name = "TOPIC", requires = "kafka_brokers", value_parser = parse_topic)]
    pub kafka_topic: Vec<annal_ingest::sources::kafka::Topic>,
    /// Kafka consumer group (its offsets are kept in the ledger, and committed to the group too).
    #[arg(long, value_name = "GROUP", default_value = "annal")]
    pub kafka_group: String,
    /// Consumer group members in this process (each its own connection, decoder and committer; at most one per partition is busy).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub kafka_members: u64,
    /// A further librdkafka setting KEY=VALUE (repeatable), e.g. security.protocol=sasl_plaintext.
    #[arg(long = "kafka-option", value_name = "KEY=VALUE", value_parser = parse_setting)]
    pub kafka_option: Vec<(String, String)>,
}

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The query, e.g. "SELECT type, count(*) FROM events GROUP BY type". Queries only: COPY, CREATE, INSERT, SET and the like are refused (exit 2).
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// Memory the query may reserve (e.g. 512MiB, 2GiB; default an eighth of the machine's memory).
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, default_value_t = annal_query::sql::limits::default_memory_bytes())]
    pub query_memory: usize,
    /// Cancel the query after this long (e.g. 30s, 5m; default none).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub query_timeout: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Log origin: the checkpoint's first line and the signing key's name.
    #[arg(long, default_value = annal_store::DEFAULT_ORIGIN)]
    pub origin: String,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Input format: auto (detect each document), envelope, k8s-audit,
    /// k8s-object, argocd, flux, fleet, k8s-event.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    pub format: annal_ingest::Format,

    /// Cluster id for inputs that do not name their cluster (objects,
    /// audit logs, Events, Flux resources).
    #[arg(long, value_name = "ID")]
    pub cluster: Option<String>,

    /// Valid time (RFC 3339) for inputs that carry none; for objects it
    /// wins over their managedFields times.
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub time: Option<annal_schemas::Timestamp>,

    /// Envelopes per group commit.
    #[arg(long, default_value_t = annal_ingest::pipeline::default_batch_size() as u64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_size: u64,

    /// Never show a progress bar.
    #[arg(long)]
    pub no_progress: bool,

    /// Exit 2 when any document was skipped as nothing to record (default: report the skips and exit 0).
    #[arg(long)]
    pub strict: bool,

    /// Bearer token (ingest role) for when `annal serve --tokens` writes
    /// the ledger and the input goes through it; prefer the environment
    /// variable, which other users' `ps` does not show.
    #[arg(
        long,
        env = "ANNAL_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,

    /// Files to read; a directory reads every file under it, in path order
    /// (an AKS storage archive's `y=/m=/d=/h=/PT1H.json` tree); `-` reads
    /// standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<String>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Verifier key file to check checkpoints with (default: the ledger's
    /// own). Keys the log records rotating to from it are trusted too.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// A signed checkpoint saved earlier: prove the current log extends it
    /// (a rewritten or forked history fails, even if re-signed).
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// What each group cost per step: syncs, sync/render seconds, API requests, 429s, applied bytes, object-hours, ledger bytes.
    Cost(CostArgs),
    /// Per cluster and step: fan-out, API and 429 rates, queue age; flags broken budgets (exit 3 when any).
    Capacity(CapacityArgs),
}

#[derive(Debug, Args)]
pub struct CostArgs {
    /// Window start (valid time).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub from: annal_schemas::Timestamp,
    /// Window end (exclusive; default now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub to: Option<annal_schemas::Timestamp>,
    /// The breakdown: cluster, app, tenant, team or environment.
    #[arg(long, value_name = "DIMENSION", default_value = "cluster")]
    pub by: String,
    /// Step (e.g. 1h, 1d; default: the whole window).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// Price table (TOML); without it the report has measures only.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Groups shown in the HTML chart and top table.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
}

#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// Window start (valid time).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub from: annal_schemas::Timestamp,
    /// Window end (exclusive; default now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub to: Option<annal_schemas::Timestamp>,
    /// Step (e.g. 1h, 1d; default: the whole window).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// Budgets (TOML): max_fan_out, max_api_requests_per_second, max_throttled_per_second, release_window_seconds.
    #[arg(long, value_name = "FILE")]
    pub budgets: Option<PathBuf>,
    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Clusters charted in the HTML page (the most flagged first).
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub top: usize,
}

#[derive(Debug, Subcommand)]
pub enum ProofCommand {
    /// The audit path of one entry to the root of a signed checkpoint.
    Inclusion(InclusionArgs),
    /// The hashes proving the log of one size is a prefix of a later one.
    Consistency(ConsistencyArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("leaf").required(true).args(["index", "event_id"])))]
pub struct InclusionArgs {
    /// The entry's log index.
    #[arg(long, value_name = "N")]
    pub index: Option<u64>,
    /// The entry's envelope id.
    #[arg(long, value_name = "ID")]
    pub event_id: Option<String>,
    /// Prove against this saved checkpoint (default: the latest one).
    #[arg(long, value_name = "FILE", conflicts_with = "size")]
    pub checkpoint: Option<PathBuf>,
    /// Prove against the tree of this many entries.
    #[arg(long, value_name = "N")]
    pub size: Option<u64>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("old").required(true).args(["from", "from_checkpoint"])))]
pub struct ConsistencyArgs {
    /// The older tree size.
    #[arg(long, value_name = "SIZE")]
    pub from: Option<u64>,
    /// The older tree as a saved checkpoint.
    #[arg(long, value_name = "FILE")]
    pub from_checkpoint: Option<PathBuf>,
    /// The newer tree size (default: the latest checkpoint's).
    #[arg(long, value_name = "SIZE")]
    pub to: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// The checkpoint verifier key (signed-note form), and the previous one during a rotation.
    Show,
    /// Start a new signing key; checkpoints carry both signatures during the window.
    Rotate(RotateArgs),
}

#[derive(Debug, Args)]
pub struct RotateArgs {
    /// How long the old key keeps co-signing (e.g. 7d, 12h, 30m, 0s).
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_duration)]
    pub window: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only events of this cluster.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Only events of this type (e.g. object.observed).
    #[arg(long = "type", value_parser = parse_event_type)]
    pub event_type: Option<annal_schemas::EventType>,
    /// Valid time at or after (RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub since: Option<annal_schemas::Timestamp>,
    /// Valid time before (RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub until: Option<annal_schemas::Timestamp>,
    /// At most this many events.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Whole events: also `source`, `actor` and `data` (with `-o json`, the
    /// envelopes as stored, to compare two ingests of one source).
    #[arg(long)]
    pub full: bool,
}

#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Valid time: the instant in the world (RFC 3339 or `now-2h`; default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: answer as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    /// Only this cluster.
    #[arg(long, value_name = "ID")]
    pub cluster: Option<String>,
    /// Only objects this app claims (`argocd:guestbook`, `flux:flux-system/apps`, ...).
    #[arg(long, value_name = "APP")]
    pub owner: Option<String>,
    #[command(flatten)]
    pub freshness: Freshness,
}

/// How long a cluster in scope may have been silent before an as-of
/// answer calls its data stale (see `annal coverage`).
#[derive(Debug, Args)]
pub struct Freshness {
    /// A cluster that sent nothing (no event, no heartbeat) for longer than this before the instant asked is stale.
    #[arg(long, value_name = "DURATION", default_value = annal_query::asof::coverage::DEFAULT_GAP, value_parser = parse_gap)]
    pub gap: std::time::Duration,
}

impl Freshness {
    /// The threshold in seconds.
    pub fn seconds(&self) -> i64 {
        i64::try_from(self.gap.as_secs()).unwrap_or(i64::MAX)
    }
}

#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Start of the window (default: each cluster's first event).
    #[arg(long, value_name = "T1", value_parser = parse_time)]
    pub from: Option<annal_schemas::Timestamp>,
    /// End of the window (default: now).
    #[arg(long, value_name = "T2", value_parser = parse_time)]
    pub to: Option<annal_schemas::Timestamp>,
    /// The instant at which staleness is judged (default: the end of the window).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    /// Only this cluster (repeatable).
    #[arg(long = "cluster", value_name = "ID")]
    pub clusters: Vec<String>,
    #[command(flatten)]
    pub freshness: Freshness,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    /// Writes at or after this valid time (default: a day ago).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub since: Option<annal_schemas::Timestamp>,
    /// Writes before this valid time (default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub until: Option<annal_schemas::Timestamp>,
    /// Only this cluster (repeatable).
    #[arg(long = "cluster", value_name = "ID")]
    pub clusters: Vec<String>,
    /// Only objects this app owns.
    #[arg(long, value_name = "APP")]
    pub app: Option<String>,
    /// A further field manager whose writes are never drift (an autoscaler of your own); repeatable.
    #[arg(long = "normal-manager", value_name = "NAME")]
    pub normal_managers: Vec<String>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The cluster.
    #[arg(long, value_name = "ID")]
    pub cluster: String,
    /// Kind (`Deployment`, `ConfigMap`, ...).
    #[arg(long, value_name = "KIND")]
    pub kind: String,
    /// API group (needed only when the kind exists in two groups; "" for core).
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Namespace (omit for cluster-scoped objects).
    #[arg(long, short = 'n', value_name = "NS", default_value = "")]
    pub namespace: String,
    /// Name.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// Blame one field (`spec.replicas`): each value it had, from when to when, set by whom.
    #[arg(long, value_name = "PATH")]
    pub field: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier valid time (RFC 3339 or `now-2h`).
    #[arg(long, value_name = "T1", value_parser = parse_time)]
    pub from: annal_schemas::Timestamp,
    /// The later valid time (default: now).
    #[arg(long, value_name = "T2", value_parser = parse_time)]
    pub to: Option<annal_schemas::Timestamp>,
    /// System time: both sides as the ledger knew them then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    /// Only this cluster (repeatable).
    #[arg(long = "cluster", value_name = "ID")]
    pub clusters: Vec<String>,
    /// Only objects this app owns at either instant.
    #[arg(long, value_name = "APP")]
    pub owner: Option<String>,
    #[command(flatten)]
    pub freshness: Freshness,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("scope").required(true).args(["apps", "apps_from", "clusters"])))]
pub struct TakeoverArgs {
    /// The new controller (its field manager name is not foreign).
    #[arg(long, value_name = "NAME")]
    pub controller: String,
    /// An app to take over, qualified (`argocd:guestbook`, `flux:ns/name`, ...); repeatable.
    #[arg(long = "app", value_name = "APP")]
    pub apps: Vec<String>,
    /// A file of apps to take over, one per line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    pub apps_from: Option<PathBuf>,
    /// Take over every app on this cluster; repeatable.
    #[arg(long = "cluster", value_name = "ID")]
    pub clusters: Vec<String>,
    /// Valid time: the instant in the world (RFC 3339 or `now-2h`; default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: plan as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    /// A further field manager that is not foreign; repeatable.
    #[arg(long = "normal-manager", value_name = "NAME")]
    pub normal_managers: Vec<String>,
    /// Exit 0 even when objects are not ADOPT (the plan is still printed).
    #[arg(long)]
    pub allow_conflicts: bool,
    #[command(flatten)]
    pub freshness: Freshness,
    /// Exit 0 even when a cluster in scope is stale at the instant planned (the plan still lists it).
    #[arg(long)]
    pub allow_stale: bool,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The app (qualified: `argocd:guestbook`, `flux:ns/name`, ...).
    #[arg(long, value_name = "APP")]
    pub app: String,
    /// The cluster.
    #[arg(long, value_name = "ID")]
    pub cluster: String,
    /// Rendered manifests: a file or a directory of YAML/JSON (multi-document, Lists).
    #[arg(long, value_name = "PATH")]
    pub desired: PathBuf,
    /// Namespace of namespaced manifests that name none (the app's destination namespace).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Valid time: the instant in the world (RFC 3339 or `now-2h`; default: now).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub at: Option<annal_schemas::Timestamp>,
    /// System time: plan as the ledger knew it then (default: everything it holds).
    #[arg(long, value_name = "TS", value_parser = parse_time)]
    pub known_at: Option<annal_schemas::Timestamp>,
    /// Most deletions allowed without approval.
    #[arg(long, value_name = "N")]
    pub max_deletions: Option<u64>,
    /// Largest share (0 to 1) of the app's live objects deleted without approval.
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub max_fraction: Option<f64>,
    /// A further field manager that is not foreign; repeatable.
    #[arg(long = "normal-manager", value_name = "NAME")]
    pub normal_managers: Vec<String>,
    #[command(flatten)]
    pub freshness: Freshness,
    /// Exit 0 even when a cluster in scope is stale at the instant planned (the plan still lists it).
    #[arg(long)]
    pub allow_stale: bool,
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("{s:?} is not a fraction between 0 and 1")),
    }
}

#[derive(Debug, Subcommand)]
pub enum QuarantineCommand {
    /// List rejected records.
    List,
    /// Print one record's raw bytes (redirect to a file, fix, `annal ingest` it).
    Show {
        /// Quarantine id (from `list`).
        id: String,
    },
    /// Validate records again and append those that now pass.
    Retry {
        /// Quarantine ids; all records when none are given.
        ids: Vec<String>,
        /// Cluster id for records that do not name one (as for `ingest`).
        #[arg(long, value_name = "ID")]
        cluster: Option<String>,
        /// Valid time for records that carry none (as for `ingest`).
        #[arg(long, value_name = "TS", value_parser = parse_time)]
        time: Option<annal_schemas::Timestamp>,
    },
    /// Delete records.
    Drop {
        /// Quarantine ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

/// `<n>s`, `<n>m`, `<n>h`, `<n>d` or `<n>w`.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    annal_schemas::duration_seconds(s)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| format!("{s:?} is not a duration like 7d, 12h, 30m or 0s"))
}

/// A positive duration (`10m`, `2h`, `90s`).
fn parse_gap(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("{s:?}: the gap must be longer than 0s")),
        d => Ok(d),
    }
}

/// `512MiB`, `2GiB`, or bytes.
fn parse_bytes(s: &str) -> Result<usize, String> {
    annal_query::sql::limits::parse_bytes(s)
}

/// RFC 3339, `now`, or `now-2h`-style offsets.
fn parse_time(s: &str) -> Result<annal_schemas::Timestamp, String> {
    annal_schemas::Timestamp::parse_at(s, annal_schemas::Timestamp::now())
        .map_err(|e| e.to_string())
}

fn parse_format(s: &str) -> Result<annal_ingest::Format, String> {
    s.parse()
        .map_err(|e: annal_ingest::formats::UnknownFormat| e.to_string())
}

fn parse_topic(s: &str) -> Result<annal_ingest::sources::kafka::Topic, String> {
    s.parse()
}

fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?}: expected KEY=VALUE")),
    }
}

fn parse_event_type(s: &str) -> Result<annal_schemas::EventType, String> {
    s.parse()
        .map_err(|e: annal_schemas::UnknownEventType| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("annal").chain(args.iter().copied()))
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn output_flag_short_long_equals_and_last_wins() {
        assert_eq!(
            parse(&["status", "-o", "json"]).unwrap().output,
            OutputFormat::Json
        );
        assert_eq!(
            parse(&["-o", "csv", "status"]).unwrap().output,
            OutputFormat::Csv
        );
        assert_eq!(
            parse(&["status", "--output=json"]).unwrap().output,
            OutputFormat::Json
        );
        assert_eq!(
            parse(&["status", "-o", "json", "-o", "table"])
                .unwrap()
                .output,
            OutputFormat::Table
        );
        assert!(parse(&["status", "-o", "yaml"]).is_err());
    }

    #[test]
    fn data_flag_and_default() {
        let cli = parse(&["--data", "/tmp/x", "status"]).unwrap();
        assert_eq!(cli.data, PathBuf::from("/tmp/x"));
        let cli = parse(&["status", "--data=/tmp/y"]).unwrap();
        assert_eq!(cli.data, PathBuf::from("/tmp/y"));
    }

    #[test]
    fn ingest_requires_a_path_and_checks_format_and_batch_size() {
        assert!(parse(&["ingest"]).is_err());
        let cli = parse(&["ingest", "--format", "envelope", "-"]).unwrap();
        let Command::Ingest(a) = cli.command else {
            panic!()
        };
        assert_eq!(a.paths, ["-"]);
        assert_eq!(a.format, annal_ingest::Format::Envelope);
        assert!(parse(&["ingest", "--format", "xml", "f"]).is_err());
        assert!(parse(&["ingest", "--batch-size", "0", "f"]).is_err());
    }

    #[test]
    fn log_filters_validate_values() {
        assert!(parse(&["log", "--type", "object.observed"]).is_ok());
        assert!(parse(&["log", "--type", "object.created"]).is_err());
        assert!(parse(&["log", "--since", "2026-11-01T00:00:00Z"]).is_ok());
        assert!(parse(&["log", "--since", "yesterday"]).is_err());
    }
}
