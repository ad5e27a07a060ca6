//! Produces the seeded envelope stream to a Kafka topic, round robin over
//! its partitions, for the Kafka consume benchmark.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientConfig, ClientContext};

/// Sends each line written to it as one message.
pub struct Lines {
    producer: BaseProducer<Deliveries>,
    topic: String,
    partitions: i32,
    sent: u64,
    line: Vec<u8>,
    failed: Arc<AtomicU64>,
}

impl Lines {
    /// A producer to `topic`'s `partitions`, compressing its batches with
    /// `compression` (librdkafka's `compression.type`: none, gzip, lz4,
    /// zstd, snappy).
    pub fn new(
        brokers: &str,
        topic: &str,
        partitions: i32,
        compression: &str,
    ) -> anyhow::Result<Lines> {
        let failed = Arc::new(AtomicU64::new(0));
        let producer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("linger.ms", "20")
            .set("batch.size", "1000000")
            .set("compression.type", compression)
            .create_with_context(Deliveries(failed.clone()))?;
        Ok(Lines {
            producer,
            topic: topic.to_string(),
            partitions: partitions.max(1),
            sent: 0,
            line: Vec::new(),
            failed,
        })
    }

    /// Waits for every message to be acknowledged; returns how many were sent.
    pub fn finish(self) -> anyhow::Result<u64> {
        self.producer.flush(Duration::from_secs(300))?;
        let failed = self.failed.load(Ordering::Relaxed);
        anyhow::ensure!(failed == 0, "{failed} deliveries failed");
        Ok(self.sent)
    }

    fn send(&mut self) {
        let partition = (self.sent % self.partitions as u64) as i32;
        let mut record = BaseRecord::<(), [u8]>::to(&self.topic)
            .partition(partition)
            .payload(&self.line[..]);
        loop {
            match self.producer.send(record) {
                Ok(()) => break,
                Err((_, r)) => {
                    record = r; // queue full: let deliveries drain it
                    self.producer.poll(Duration::from_millis(10));
                }
            }
        }
        self.producer.poll(Duration::ZERO);
        self.sent += 1;
    }
}

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for part in buf.split_inclusive(|&b| b == b'\n') {
            match part.strip_suffix(b"\n") {
                Some(end) => {
                    self.line.extend_from_slice(end);
                    self.send();
                    self.line.clear();
                }
                None => self.line.extend_from_slice(part),
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Deliveries(Arc<AtomicU64>);

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if result.is_err() {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}
