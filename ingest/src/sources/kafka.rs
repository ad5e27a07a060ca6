//! Kafka: a consumer-group source whose offsets live in the ledger.
//!
//! Each group commit on the store carries, in the same atomic sled batch
//! as its leaves, the next offset of every partition it consumed
//! ([`Store::append_consumed`]). The ledger, not the broker, is the truth
//! about how far a partition was read: on assignment the consumer starts at
//! the offset the ledger recorded, so a crash between reading and
//! committing re-reads exactly the uncommitted messages, and a crash after
//! committing re-reads none. Nothing is lost and nothing is read twice.
//!
//! The offsets are also committed to the group on the broker, after the
//! ledger commit, for two readers: other instances of the group (each with
//! its own ledger) that take over a partition, and operators watching the
//! group's lag with Kafka's own tools. On assignment the consumer starts at
//! the later of the two, so a partition moved between instances by a
//! rebalance is continued, not restarted. Before a partition is revoked the
//! pending batch is committed (ledger, then broker, synchronously), so the
//! next owner starts exactly where this one stopped.
//!
//! Decoding and committing overlap, as in the file pipeline: the poll loop
//! decodes into the pending batch and hands each full batch to a committer
//! thread, which writes batches one at a time, in order, while the next one
//! fills. A batch that fails stops every later one (the ledger's offsets
//! stay at the last batch written), and before partitions are revoked, or
//! the consumer stops, the batches handed off are waited for.
//!
//! A process may run several members of the group ([`Config::members`]),
//! each with its own connection, poll loop and committer, all writing the
//! one ledger; they begin reading once all of them have joined (see
//! `Gate`).
//!
//! A message is one input, framed and decoded like a file by the topic's
//! format; its timestamp is the valid time of last resort. Records that do
//! not decode are quarantined under the source name
//! `kafka:TOPIC[PARTITION]@OFFSET` and the partition goes on.

/// A line on stderr that never panics (see `sources::http`).
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use annal_schemas::Timestamp;
use annal_store::{PreparedEvent, Rejection, SourceOffset, Store, StoreError};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientConfig, ClientContext, Offset, TopicPartitionList};

use crate::pipeline::{self, Options};
use crate::Format;

/// What to consume and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// `bootstrap.servers`.
    pub brokers: String,
    /// The consumer group.
    pub group: String,
    /// Topics, each with its format.
    pub topics: Vec<Topic>,
    /// Further librdkafka settings (`security.protocol`, `sasl.*`, ...).
    pub settings: Vec<(String, String)>,
    /// Envelopes per group commit.
    pub batch_size: usize,
    /// How long a message may wait for its batch to fill.
    pub linger: Duration,
    /// Group members in this process, each with its own connection, poll
    /// thread and committer: the partitions are spread over them, so that
    /// several fetches are in flight at once and decoding runs on several
    /// cores. (A broker answers one fetch per connection at a time.)
    pub members: usize,
}

impl Config {
    /// A configuration with the default batch size and linger.
    pub fn new(brokers: &str, group: &str, topics: Vec<Topic>) -> Config {
        Config {
            brokers: brokers.to_string(),
            group: group.to_string(),
            topics,
            settings: Vec::new(),
            batch_size: pipeline::default_batch_size(),
            linger: Duration::from_millis(100),
            members: 1,
        }
    }
}

/// One topic: `NAME[=FORMAT][,cluster=ID]` on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topic {
    /// Topic name.
    pub name: String,
    /// How its messages decode (default: envelopes).
    pub format: Format,
    /// Cluster of messages that do not name one (audit events, objects).
    pub cluster: Option<String>,
}

impl FromStr for Topic {
    type Err = String;

    fn from_str(s: &str) -> Result<Topic, String> {
        let (head, cluster) = match s.split_once(",cluster=") {
            Some((head, id)) if !id.is_empty() => (head, Some(id.to_string())),
            Some(_) => return Err(format!("{s:?}: cluster= needs an id")),
            None => (s, None),
        };
        let (name, format) = match head.split_once('=') {
            Some((name, format)) => (name, format.parse::<Format>().map_err(|e| e.to_string())?),
            None => (head, Format::Envelope),
        };
        let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if name.is_empty() || name.len() > 249 || !name.chars().all(legal) {
            return Err(format!(
                "{name:?} is not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249)"
            ));
        }
        Ok(Topic {
            name: name.to_string(),
            format,
            cluster,
        })
    }
}

/// Errors that stop the consumer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Kafka client could not be created or subscribe.
    #[error("kafka: {0}")]
    Client(#[from] KafkaError),
    /// The store failed or refused a batch.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The consumer thread could not start.
    #[error("kafka: cannot start the consumer thread: {0}")]
    Thread(std::io::Error),
    /// The consumer thread panicked.
    #[error("kafka: the consumer thread panicked")]
    Panicked,
    /// An earlier batch failed to commit, so no later one may (its offsets
    /// would pass the failed batch's messages).
    #[error("kafka: an earlier batch failed to commit; nothing read after it was committed")]
    EarlierBatchFailed,
}

/// Counters of the Kafka source, for `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    messages: AtomicU64,
    appended: AtomicU64,
    duplicates: AtomicU64,
    rejected: AtomicU64,
    batches: AtomicU64,
    skipped_offsets: AtomicU64,
    /// Per (topic, partition): the broker's high watermark (from the
    /// client's statistics) and the next offset the ledger holds.
    partitions: Mutex<BTreeMap<(String, i32), Position>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Position {
    high: Option<i64>,
    next: Option<i64>,
    assigned: bool,
}

impl Metrics {
    /// Messages consumed (each one committed to the ledger).
    pub fn messages(&self) -> u64 {
        self.messages.load(Ordering::Relaxed)
    }

    /// Consumer lag per assigned partition: the broker's high watermark
    /// minus the next offset the ledger holds (or the whole partition when
    /// nothing was committed yet).
    pub fn lag(&self) -> BTreeMap<(String, i32), u64> {
        lock(&self.partitions)
            .iter()
            .filter(|(_, p)| p.assigned)
            .filter_map(|(k, p)| {
                let high = p.high?;
                Some((k.clone(), (high - p.next.unwrap_or(0)).max(0) as u64))
            })
            .collect()
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        for (name, help, value) in [
            (
                "annal_kafka_messages_total",
                "Kafka messages consumed and committed to the ledger.",
                get(&self.messages),
            ),
            (
                "annal_kafka_appended_total",
                "Envelopes appended from Kafka.",
                get(&self.appended),
            ),
            (
                "annal_kafka_duplicates_total",
                "Envelopes from Kafka already stored.",
                get(&self.duplicates),
            ),
            (
                "annal_kafka_rejected_total",
                "Kafka records rejected and quarantined.",
                get(&self.rejected),
            ),
            (
                "annal_kafka_batches_total",
                "Group commits of Kafka input.",
                get(&self.batches),
            ),
            (
                "annal_kafka_skipped_offsets_total",
                "Offsets the broker did not deliver (compaction, transaction markers, or lost by the broker).",
                get(&self.skipped_offsets),
            ),
        ] {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
            ));
        }
        out.push_str("# HELP annal_kafka_consumer_lag Messages on the broker not yet in the ledger, per assigned partition.\n");
        out.push_str("# TYPE annal_kafka_consumer_lag gauge\n");
        for ((topic, partition), lag) in self.lag() {
            out.push_str(&format!(
                "annal_kafka_consumer_lag{{topic=\"{topic}\",partition=\"{partition}\"}} {lag}\n"
            ));
        }
        out
    }

    fn position(&self, topic: &str, partition: i32, f: impl FnOnce(&mut Position)) {
        f(lock(&self.partitions)
            .entry((topic.to_string(), partition))
            .or_default());
    }
}

/// A running consumer: its group members in this process.
pub struct Running {
    stop: Arc<AtomicBool>,
    members: Vec<JoinHandle<Result<(), Error>>>,
}

impl Running {
    /// Whether a member stopped (on an error: see [`Running::stop`]).
    pub fn finished(&self) -> bool {
        self.members.iter().any(|m| m.is_finished())
    }

    /// Commits what was read, leaves the group, and returns how the
    /// consumer ended (the first member's error, if any).
    pub fn stop(self) -> Result<(), Error> {
        self.stop.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        for member in self.members {
            let ended = member.join().unwrap_or(Err(Error::Panicked));
            if result.is_ok() {
                result = ended;
            }
        }
        result
    }
}

/// Subscribes `config.members` group members and consumes on threads of
/// their own until stopped. Calls `on_exit` when a member ends by itself
/// (a store or client error).
pub fn start(
    store: Arc<Store>,
    config: Config,
    metrics: Arc<Metrics>,
    on_exit: impl FnOnce() + Send + 'static,
) -> Result<Running, Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let on_exit: Arc<Mutex<Option<OnExit>>> = Arc::new(Mutex::new(Some(Box::new(on_exit))));
    let mut running = Running {
        stop: stop.clone(),
        members: Vec::new(),
    };
    let count = config.members.max(1);
    let gate = Arc::new(Gate::new(count, rebalance_timeout(&config.settings)));
    for i in 0..count {
        let member = consumer(store.clone(), &config, metrics.clone(), gate.clone(), i)
            .and_then(|consumer| spawn_member(consumer, i, &config, &stop, &on_exit));
        match member {
            Ok(thread) => running.members.push(thread),
            Err(e) => {
                // The members started leave the group again.
                let _ = running.stop();
                return Err(e);
            }
        }
    }
    Ok(running)
}

/// What [`start`] calls when a member ends by itself (once, whichever
/// member ends first).
type OnExit = Box<dyn FnOnce() + Send>;

/// Runs member `i` on a thread of its own (`kafka`, or `kafka-I` when
/// there are several) until `stop` is set or it fails.
fn spawn_member(
    consumer: BaseConsumer<Source>,
    i: usize,
    config: &Config,
    stop: &Arc<AtomicBool>,
    on_exit: &Arc<Mutex<Option<OnExit>>>,
) -> Result<JoinHandle<Result<(), Error>>, Error> {
    let (flag, config, on_exit) = (stop.clone(), config.clone(), on_exit.clone());
    let name = if config.members.max(1) == 1 {
        "kafka".to_string()
    } else {
        format!("kafka-{i}")
    };
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let result = consume(&consumer, &config, &flag);
            if let Err(e) = &result {
                log!("annal: kafka consumer stopped: {e}");
            }
            // Dropping the consumer leaves the group; the revocation it
            // triggers commits anything still pending.
            drop(consumer);
            if !flag.load(Ordering::Relaxed) {
                if let Some(f) = lock(&on_exit).take() {
                    f();
                }
            }
            result
        })
        .map_err(Error::Thread)
}

/// The source name of a topic's offsets in the ledger.
pub fn offsets_source(group: &str, topic: &str) -> String {
    format!("kafka:{group}:{topic}")
}

/// The members of one process start reading together.
///
/// Members join the group one after another, and a broker may settle the
/// group with the first one before the others join: it would read every
/// partition for a moment and hand most of them over at the next
/// rebalance. A hand-over re-fetches from the ledger's offset, which is
/// exact but wasted work, and a broker that serves an offset inside a
/// stored batch badly loses records there (Tansu 0.6.0 skips the rest of
/// the batch). So a member's partitions stay paused until every member of
/// the process has had an assignment (or the rebalance timeout passed);
/// later rebalances, other processes joining or leaving, are the group's
/// usual business.
struct Gate {
    members: usize,
    joined: AtomicUsize,
    open: AtomicBool,
    since: Instant,
    /// How long members wait for each other before reading anyway (a
    /// member that cannot join must not hold the others back for good).
    wait: Duration,
}

/// The group's rebalance timeout: librdkafka sends `max.poll.interval.ms`
/// (300 s by default) as the time the broker waits for every member to
/// join a rebalance, so members that join one after the other under load
/// can legitimately take that long to all have an assignment. A fixed
/// 10 s here opened the gate early on a loaded 2-core CI machine, and a
/// partition was handed over mid-stream.
fn rebalance_timeout(settings: &[(String, String)]) -> Duration {
    let ms = settings
        .iter()
        .rev()
        .find(|(key, _)| key == "max.poll.interval.ms")
        .and_then(|(_, value)| value.trim().parse::<u64>().ok())
        .unwrap_or(300_000);
    Duration::from_millis(ms)
}

impl Gate {
    fn new(members: usize, wait: Duration) -> Gate {
        Gate {
            members,
            joined: AtomicUsize::new(0),
            open: AtomicBool::new(members <= 1),
            since: Instant::now(),
            wait,
        }
    }

    /// A member's first assignment.
    fn join(&self) {
        if self.joined.fetch_add(1, Ordering::AcqRel) + 1 >= self.members {
            self.open.store(true, Ordering::Release);
        }
    }

    fn is_open(&self) -> bool {
        if self.open.load(Ordering::Acquire) {
            return true;
        }
        if self.since.elapsed() >= self.wait {
            log!(
                "annal: kafka: {} of {} members joined within the rebalance timeout ({:?}); reading anyway",
                self.joined.load(Ordering::Acquire),
                self.members,
                self.wait
            );
            self.open.store(true, Ordering::Release);
            return true;
        }
        false
    }
}

/// Messages a process's members fetch ahead of decoding, together, in KiB.
const PREFETCH_KB: usize = 16_384;

fn consumer(
    store: Arc<Store>,
    config: &Config,
    metrics: Arc<Metrics>,
    gate: Arc<Gate>,
    member: usize,
) -> Result<BaseConsumer<Source>, Error> {
    let mut client = ClientConfig::new();
    client
        .set("bootstrap.servers", &config.brokers)
        .set("group.id", &config.group)
        .set("client.id", "annal")
        // The ledger decides what was consumed; the broker is told after.
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        // A member that died is replaced after 10 s rather than Kafka's
        // 45 s default: a supervisor restarts annal well within that.
        .set("session.timeout.ms", "10000")
        // A fetch waits at most 10 ms for data (librdkafka's default is
        // 500), and a partition whose prefetch queue was full is fetched
        // again 10 ms later (`fetch.queue.backoff.ms`, 1000 by default). A
        // broker that holds every fetch for the whole wait (Tansu does)
        // sets the rate by the wait: 100 ms read 48k, 50 ms 82-91k
        // messages/s (bench/kafka.sh, 1M messages). Shorter waits alone
        // were slower (10 ms: 71k): fast fetches fill the prefetch queue,
        // and a full queue stopped fetching for the whole second. With
        // both at 10 ms one member is CPU-bound instead (docs/performance.md "Kafka
        // consume"). An idle partition costs about 100 fetches/s, which
        // the broker answers after the wait.
        .set("fetch.wait.max.ms", "10")
        .set("fetch.queue.backoff.ms", "10")
        .set("statistics.interval.ms", "1000")
        // What the members prefetch together stays what one member would:
        // three members with librdkafka's default 64 MiB each peaked at
        // 650-670 MB in bench/kafka.sh, one at 295 MB. With the fetches
        // above refilling it every 10 ms, 16 MiB keeps one member busy
        // (the 64 MiB default only added peak RSS: 372-390 MB against 290).
        .set(
            "queued.max.messages.kbytes",
            (PREFETCH_KB / gate.members).max(1024).to_string(),
        );
    for (key, value) in &config.settings {
        client.set(key, value);
    }
    let source = Source {
        store,
        group: config.group.clone(),
        batch_size: config.batch_size.max(1),
        topics: config.topics.clone(),
        metrics,
        pending: Mutex::new(Pending::default()),
        read_to: Mutex::new(BTreeMap::new()),
        failed: Mutex::new(None),
        handoff: Mutex::new(None),
        in_flight: Mutex::new(0),
        landed: Condvar::new(),
        broken: AtomicBool::new(false),
        spent: Mutex::default(),
        member: match gate.members {
            1 => String::new(),
            n => format!(" to member {} of {n}", member + 1),
        },
        gate,
        joined: AtomicBool::new(false),
        paused: AtomicBool::new(false),
    };
    let consumer: BaseConsumer<Source> = client.create_with_context(source)?;
    let names: Vec<&str> = config.topics.iter().map(|t| t.name.as_str()).collect();
    consumer.subscribe(&names)?;
    Ok(consumer)
}

/// The poll loop: decode each message into the pending batch, hand it to
/// the committer when it is full, when it is older than the linger, or
/// when the stream pauses; at the end, wait for the committer and commit
/// what is left.
fn consume(
    consumer: &BaseConsumer<Source>,
    config: &Config,
    stop: &AtomicBool,
) -> Result<(), Error> {
    let source = consumer.context();
    // One batch queued while one commits: decoding runs at most a batch
    // ahead of the ledger.
    let (tx, rx) = sync_channel::<Pending>(1);
    *lock(&source.handoff) = Some(tx);
    std::thread::scope(|scope| {
        let committer = std::thread::Builder::new()
            .name("kafka-commit".into())
            .spawn_scoped(scope, || source.commit_handed_off(consumer, rx));
        let polled = match committer {
            Ok(_) => poll(consumer, config, stop),
            Err(e) => Err(Error::Thread(e)),
        };
        // The committer ends once the batches queued are written.
        drop(lock(&source.handoff).take());
        polled
    })?;
    source.commit(consumer, CommitMode::Sync)
}

fn poll(consumer: &BaseConsumer<Source>, config: &Config, stop: &AtomicBool) -> Result<(), Error> {
    let source = consumer.context();
    let batch_size = config.batch_size.max(1);
    while !stop.load(Ordering::Relaxed) {
        let polled = consumer.poll(Duration::from_millis(50));
        let idle = polled.is_none();
        if source.paused.load(Ordering::Relaxed) && source.gate.is_open() {
            source.paused.store(false, Ordering::Relaxed);
            let resumed = consumer.assignment().and_then(|tpl| consumer.resume(&tpl));
            if let Err(e) = resumed {
                log!("annal: kafka: cannot resume reading: {e}");
            }
        }
        source.check()?;
        match polled {
            Some(Ok(message)) => source.take(&message)?,
            Some(Err(e)) => log!("annal: kafka: {e}"),
            None => {}
        }
        let due = {
            let p = lock(&source.pending);
            p.messages > 0
                && (idle
                    || p.events.len() >= batch_size
                    || p.started.is_some_and(|t| t.elapsed() >= config.linger))
        };
        if due {
            source.hand_off(consumer)?;
        }
    }
    Ok(())
}

/// The consumer's context: decoding, the pending batch, and the rebalance
/// protocol that keeps the ledger's offsets authoritative.
struct Source {
    store: Arc<Store>,
    group: String,
    /// Events per batch (the configured size).
    batch_size: usize,
    topics: Vec<Topic>,
    metrics: Arc<Metrics>,
    pending: Mutex<Pending>,
    /// Next offset to read per assigned partition: a message below it was
    /// read already (the broker re-delivers after a fetch reset).
    read_to: Mutex<BTreeMap<(String, i32), i64>>,
    /// A store error met inside a rebalance callback or by the committer,
    /// which cannot return it; the poll loop does.
    failed: Mutex<Option<StoreError>>,
    /// Where full batches go while the poll loop runs (`None`: committed
    /// where they are taken).
    handoff: Mutex<Option<SyncSender<Pending>>>,
    /// Batches handed off and not yet written (or failed).
    in_flight: Mutex<usize>,
    landed: Condvar,
    /// Set when a batch failed: no later batch is committed.
    broken: AtomicBool,
    /// Committed events, for the poll thread to free.
    spent: Mutex<Vec<Vec<PreparedEvent>>>,
    /// The process's members start reading together.
    gate: Arc<Gate>,
    /// Which member this is, for the log (empty when it is the only one).
    member: String,
    /// Whether this member had an assignment yet.
    joined: AtomicBool,
    /// Whether its partitions are paused at the gate.
    paused: AtomicBool,
}

/// Read but not yet committed.
#[derive(Default)]
struct Pending {
    events: Vec<PreparedEvent>,
    /// Next offset per (topic, partition).
    next: BTreeMap<(String, i32), i64>,
    messages: u64,
    rejected: u64,
    started: Option<Instant>,
}

impl Source {
    fn check(&self) -> Result<(), Error> {
        match lock(&self.failed).take() {
            Some(e) => Err(Error::Store(e)),
            None => Ok(()),
        }
    }

    fn topic(&self, name: &str) -> Option<&Topic> {
        self.topics.iter().find(|t| t.name == name)
    }

    /// Decodes one message into the pending batch; its rejections go to
    /// the quarantine (durable with the batch that records its offset).
    fn take(&self, message: &rdkafka::message::BorrowedMessage<'_>) -> Result<(), Error> {
        let (topic, partition, offset) = (message.topic(), message.partition(), message.offset());
        let key = (topic.to_string(), partition);
        {
            let mut read_to = lock(&self.read_to);
            match read_to.get(&key) {
                Some(&next) if offset < next => return Ok(()), // read already
                Some(&next) if offset > next => {
                    // Compaction and transaction markers leave gaps; so does
                    // a broker that loses records. Either way an auditor
                    // must be able to see it.
                    log!(
                        "annal: kafka: {topic}[{partition}]: offsets {next}..{} were not delivered",
                        offset - 1
                    );
                    self.metrics
                        .skipped_offsets
                        .fetch_add((offset - next) as u64, Ordering::Relaxed);
                }
                _ => {}
            }
            read_to.insert(key.clone(), offset + 1);
        }
        let mut pending = lock(&self.pending);
        pending.started.get_or_insert_with(Instant::now);
        pending.messages += 1;
        pending.next.insert(key, offset + 1);
        let (Some(payload), Some(spec)) = (message.payload(), self.topic(topic)) else {
            return Ok(()); // a tombstone: nothing to record
        };
        // `kafka:TOPIC[PARTITION]@OFFSET`, without the formatting
        // machinery (once per message).
        let mut name = String::with_capacity(topic.len() + 32);
        name.push_str("kafka:");
        name.push_str(topic);
        name.push('[');
        name.push_str(itoa::Buffer::new().format(partition));
        name.push_str("]@");
        name.push_str(itoa::Buffer::new().format(offset));
        let time = message
            .timestamp()
            .to_millis()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(Timestamp::from)
            .unwrap_or_else(Timestamp::now);
        let options = Options {
            cluster: spec.cluster.clone(),
            ..Options::default()
        };
        let decoded = pipeline::decode_prepared(spec.format, &name, payload, time, &options);
        if pending.events.capacity() == 0 {
            // A batch's events in one allocation, not grown by doubling.
            pending.events.reserve(self.batch_size);
        }
        for r in &decoded.rejected {
            self.store.quarantine().put(&Rejection {
                source: &r.source,
                line: r.line,
                format: spec.format.name(),
                reason: &r.reason,
                raw: &r.raw,
            })?;
            log!("annal: kafka: rejected {r}");
            pending.rejected += 1;
        }
        pending.events.extend(decoded.prepared);
        Ok(())
    }

    /// Hands the pending batch to the committer (waiting while one is
    /// already queued), or commits it here when there is no committer.
    fn hand_off(&self, consumer: &BaseConsumer<Source>) -> Result<(), Error> {
        // The batches committed since the last hand-off are freed here, on
        // the poll thread that decoded them.
        drop(std::mem::take(&mut *lock(&self.spent)));
        let batch = std::mem::take(&mut *lock(&self.pending));
        if batch.messages == 0 {
            return Ok(());
        }
        let Some(tx) = lock(&self.handoff).clone() else {
            return self.write(consumer, batch, CommitMode::Async);
        };
        *lock(&self.in_flight) += 1;
        match tx.send(batch) {
            Ok(()) => Ok(()),
            Err(unsent) => {
                self.land();
                self.write(consumer, unsent.0, CommitMode::Async)
            }
        }
    }

    /// The committer: writes the batches handed off, in order, until the
    /// poll loop drops its end; after a failure only counts them landed.
    fn commit_handed_off(&self, consumer: &BaseConsumer<Source>, rx: Receiver<Pending>) {
        for batch in rx {
            if !self.broken.load(Ordering::Acquire) {
                match self.write(consumer, batch, CommitMode::Async) {
                    Ok(()) => {}
                    Err(Error::Store(e)) => {
                        lock(&self.failed).get_or_insert(e);
                    }
                    Err(e) => log!("annal: kafka: {e}"),
                }
            }
            self.land();
        }
    }

    fn land(&self) {
        let mut n = lock(&self.in_flight);
        *n = n.saturating_sub(1);
        self.landed.notify_all();
    }

    /// Waits until every batch handed off is written or has failed.
    fn drain(&self) {
        let mut n = lock(&self.in_flight);
        while *n > 0 {
            n = self.landed.wait(n).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Commits everything read: the batches handed off, then the pending
    /// one (unless an earlier batch failed).
    fn commit(&self, consumer: &BaseConsumer<Source>, mode: CommitMode) -> Result<(), Error> {
        self.drain();
        self.check()?;
        let batch = std::mem::take(&mut *lock(&self.pending));
        self.write(consumer, batch, mode)
    }

    /// Commits `batch` with its offsets to the ledger, then tells the
    /// broker. A broker commit that fails is only logged: the ledger holds
    /// the offsets, and the next commit carries newer ones.
    fn write(
        &self,
        consumer: &BaseConsumer<Source>,
        batch: Pending,
        mode: CommitMode,
    ) -> Result<(), Error> {
        if batch.messages == 0 {
            return Ok(());
        }
        if self.broken.load(Ordering::Acquire) {
            return Err(Error::EarlierBatchFailed);
        }
        let offsets: Vec<SourceOffset> = batch
            .next
            .iter()
            .map(|((topic, partition), next)| SourceOffset {
                source: offsets_source(&self.group, topic),
                partition: *partition,
                next: *next as u64,
            })
            .collect();
        let outcome = match self.store.append_consumed(&batch.events, &offsets) {
            Ok(o) => o,
            Err(e) => {
                self.broken.store(true, Ordering::Release);
                return Err(e.into());
            }
        };
        // Freed by the poll thread, which allocated them (see
        // `Store::append_consumed`).
        lock(&self.spent).push(batch.events);
        let m = &self.metrics;
        m.messages.fetch_add(batch.messages, Ordering::Relaxed);
        m.appended.fetch_add(outcome.appended, Ordering::Relaxed);
        m.duplicates
            .fetch_add(outcome.duplicates, Ordering::Relaxed);
        m.rejected.fetch_add(batch.rejected, Ordering::Relaxed);
        m.batches.fetch_add(1, Ordering::Relaxed);
        let mut tpl = TopicPartitionList::new();
        for ((topic, partition), next) in &batch.next {
            m.position(topic, *partition, |p| p.next = Some(*next));
            let _ = tpl.add_partition_offset(topic, *partition, Offset::Offset(*next));
        }
        if let Err(e) = consumer.commit(&tpl, mode) {
            log!("annal: kafka: offsets committed to the ledger but not to the group: {e}");
        }
        Ok(())
    }

    /// Where each newly assigned partition starts: the later of the
    /// ledger's offset and the group's, or the beginning.
    ///
    /// This runs inside the rebalance callback, where the consumer sends no
    /// heartbeat: a wait longer than the group's session timeout gets the
    /// member evicted and the group rebalances again, so the group's
    /// offsets (a hint: the ledger's are the exactly-once record) are
    /// asked for briefly, and a broker slow to answer is said and skipped.
    fn starts(&self, consumer: &BaseConsumer<Source>, tpl: &mut TopicPartitionList) {
        let group = match consumer.committed_offsets(tpl.clone(), GROUP_OFFSETS_WAIT) {
            Ok(c) => c.to_topic_map(),
            Err(e) => {
                log!("annal: kafka: the group's committed offsets did not come ({e}); starting from the ledger's");
                Default::default()
            }
        };
        let mut ledger: BTreeMap<String, BTreeMap<i32, u64>> = BTreeMap::new();
        for elem in tpl.elements() {
            let topic = elem.topic().to_string();
            if !ledger.contains_key(&topic) {
                let offsets = self
                    .store
                    .source_offsets(&offsets_source(&self.group, &topic))
                    .unwrap_or_default();
                ledger.insert(topic.clone(), offsets);
            }
        }
        let mut starts = Vec::new();
        for elem in tpl.elements() {
            let (topic, partition) = (elem.topic().to_string(), elem.partition());
            let from_ledger = ledger
                .get(&topic)
                .and_then(|o| o.get(&partition))
                .map(|&n| n as i64);
            let from_group = match group.get(&(topic.clone(), partition)) {
                Some(Offset::Offset(n)) => Some(*n),
                _ => None,
            };
            let start = from_ledger.max(from_group);
            let said = match (start, from_ledger == start) {
                (None, _) => "the beginning".to_string(),
                (Some(n), true) => format!("offset {n} (ledger)"),
                (Some(n), false) => format!("offset {n} (group)"),
            };
            log!(
                "annal: kafka: assigned {topic}[{partition}]{}, from {said}",
                self.member
            );
            starts.push((topic, partition, start));
        }
        let mut read_to = lock(&self.read_to);
        for (topic, partition, start) in starts {
            if let Some(n) = start {
                let _ = tpl.set_partition_offset(&topic, partition, Offset::Offset(n));
                read_to.insert((topic.clone(), partition), n);
            }
            self.metrics.position(&topic, partition, |p| {
                p.assigned = true;
                p.next = start;
            });
        }
    }
}

/// How long an assignment waits for the group's committed offsets.
const GROUP_OFFSETS_WAIT: Duration = Duration::from_secs(1);

impl ClientContext for Source {
    fn stats_raw(&self, statistics: &[u8]) {
        let Ok(stats) = serde_json::from_slice::<serde_json::Value>(statistics) else {
            return;
        };
        let Some(topics) = stats.get("topics").and_then(|t| t.as_object()) else {
            return;
        };
        for (topic, t) in topics {
            let Some(partitions) = t.get("partitions").and_then(|p| p.as_object()) else {
                continue;
            };
            for p in partitions.values() {
                let partition = p.get("partition").and_then(|v| v.as_i64()).unwrap_or(-1);
                let high = p.get("hi_offset").and_then(|v| v.as_i64()).unwrap_or(-1);
                if partition >= 0 && high >= 0 {
                    self.metrics
                        .position(topic, partition as i32, |pos| pos.high = Some(high));
                }
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        log!("annal: kafka: {error}: {reason}");
    }
}

impl ConsumerContext for Source {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let cooperative = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        let result = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                self.starts(consumer, tpl);
                let assigned = if cooperative {
                    consumer.incremental_assign(tpl)
                } else {
                    consumer.assign(tpl)
                };
                if !self.joined.swap(true, Ordering::Relaxed) {
                    self.gate.join();
                }
                match assigned {
                    Err(e) => Err(e),
                    Ok(()) if !self.gate.is_open() => {
                        // Read from once the other members have joined
                        // (the poll loop resumes them).
                        self.paused.store(true, Ordering::Relaxed);
                        consumer.pause(tpl)
                    }
                    // A partition paused at the gate in an earlier
                    // assignment stays paused when it comes back (the
                    // client keeps an application's pause across
                    // assignments), so it is resumed here.
                    Ok(()) if self.gate.members > 1 => consumer.resume(tpl),
                    Ok(()) => Ok(()),
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                // Whatever was read from these partitions is committed to
                // the ledger (with its offsets: the exactly-once record)
                // before another member may take them. The group's copy of
                // the offsets is a hint, sent without waiting: a
                // synchronous commit inside the callback, during a
                // rebalance, was seen to block until the member was
                // evicted, and then for good.
                if let Err(Error::Store(e)) = self.commit(consumer, CommitMode::Async) {
                    *lock(&self.failed) = Some(e);
                }
                for elem in tpl.elements() {
                    self.metrics
                        .position(elem.topic(), elem.partition(), |p| p.assigned = false);
                    lock(&self.read_to).remove(&(elem.topic().to_string(), elem.partition()));
                }
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
            other => {
                log!("annal: kafka: rebalance failed: {other:?}");
                consumer.unassign()
            }
        };
        if let Err(e) = result {
            log!("annal: kafka: rebalance: {e}");
        }
    }
}

/// Locks a mutex whose holder may have panicked: the counters and the
/// pending batch stay usable (a panic mid-update loses at most the batch,
/// which the ledger's offsets make the broker deliver again).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_waits_for_the_rebalance_timeout_the_client_sends() {
        let set = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(rebalance_timeout(&[]), Duration::from_secs(300));
        // The last setting wins, as it does in the client's configuration.
        let settings = set(&[
            ("max.poll.interval.ms", "20000"),
            ("session.timeout.ms", "6000"),
            ("max.poll.interval.ms", "60000"),
        ]);
        assert_eq!(rebalance_timeout(&settings), Duration::from_secs(60));
        let gate = Gate::new(3, Duration::from_secs(60));
        assert!(!gate.is_open());
        gate.join();
        gate.join();
        assert!(!gate.is_open());
        gate.join();
        assert!(gate.is_open());
        // A gate whose wait has passed opens without every member.
        let gate = Gate::new(3, Duration::ZERO);
        assert!(gate.is_open());
        assert!(Gate::new(1, Duration::from_secs(60)).is_open());
    }

    #[test]
    fn topics_parse_with_format_and_cluster() {
        let t: Topic = "gitops.events".parse().unwrap();
        assert_eq!(
            (t.name.as_str(), t.format, t.cluster),
            ("gitops.events", Format::Envelope, None)
        );
        let t: Topic = "audit=k8s-audit,cluster=prod-eu".parse().unwrap();
        assert_eq!(t.format, Format::K8sAudit);
        assert_eq!(t.cluster.as_deref(), Some("prod-eu"));
        assert!("audit=nope".parse::<Topic>().is_err());
        assert!("a/b".parse::<Topic>().is_err());
        assert!("".parse::<Topic>().is_err());
        assert!("t,cluster=".parse::<Topic>().is_err());
    }

    #[test]
    fn lag_is_high_watermark_minus_the_ledgers_next_offset() {
        let m = Metrics::default();
        m.position("t", 0, |p| {
            p.assigned = true;
            p.high = Some(100);
            p.next = Some(40);
        });
        m.position("t", 1, |p| {
            p.assigned = true;
            p.high = Some(7);
        });
        m.position("t", 2, |p| p.high = Some(9)); // not ours
        let lag = m.lag();
        assert_eq!(lag.get(&("t".into(), 0)), Some(&60));
        assert_eq!(lag.get(&("t".into(), 1)), Some(&7));
        assert_eq!(lag.get(&("t".into(), 2)), None);
        assert!(m
            .render()
            .contains("annal_kafka_consumer_lag{topic=\"t\",partition=\"0\"} 60\n"));
    }
}
