//! The source task loop: poll the plugin → produce to Kafka → once the broker acknowledged,
//! store source offsets every `offset.flush.interval.ms` → tell the plugin to commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header as KafkaHeader, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

use super::{TaskFailure, TaskReport};
use crate::runtime::records::{OffsetMap, SourceRecord};
use crate::runtime::SourceInstance;
use crate::storage::OffsetStore;

/// Pauses between empty polls grow from the first to the last value.
const IDLE_BACKOFF_MIN: Duration = Duration::from_millis(1);
const IDLE_BACKOFF_MAX: Duration = Duration::from_millis(250);
/// Pause after a retriable error before polling again.
const RETRY_BACKOFF: Duration = Duration::from_millis(500);
/// Pause when the producer's queue is full, before offering the record again.
const QUEUE_FULL_BACKOFF: Duration = Duration::from_millis(2);

/// Remembers the first failed delivery; later records are not trusted past it.
#[derive(Default)]
pub struct DeliveryTracker {
    failure: Mutex<Option<String>>,
}

impl ClientContext for DeliveryTracker {}

impl ProducerContext for DeliveryTracker {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((error, message)) = result {
            let mut failure = self.failure.lock().expect("delivery lock");
            if failure.is_none() {
                use rdkafka::Message;
                *failure = Some(format!("Kafka did not accept a record for topic {}: {error}", message.topic()));
            }
        }
    }
}

impl DeliveryTracker {
    fn failure(&self) -> Option<String> {
        self.failure.lock().expect("delivery lock").clone()
    }
}

pub struct SourceTaskRun {
    pub connector: String,
    pub label: String,
    pub instance: SourceInstance,
    pub producer: ThreadedProducer<DeliveryTracker>,
    pub offsets: Arc<dyn OffsetStore>,
    pub flush_interval: Duration,
    pub flush_timeout: Duration,
    pub stop: Arc<AtomicBool>,
}

/// Latest offset of each source partition since the last flush. Tasks have few partitions, and
/// consecutive records usually share one, so a short list beats a map.
#[derive(Default)]
struct PendingOffsets {
    latest: Vec<(OffsetMap, OffsetMap)>,
}

impl PendingOffsets {
    fn record(&mut self, partition: OffsetMap, offset: OffsetMap) {
        if partition.is_empty() && offset.is_empty() {
            return;
        }
        if let Some(entry) = self.latest.iter_mut().rev().find(|(p, _)| *p == partition) {
            entry.1 = offset;
        } else {
            self.latest.push((partition, offset));
        }
    }
}

impl SourceTaskRun {
    pub fn run(mut self) -> TaskReport {
        let mut pending = PendingOffsets::default();
        let mut sent_since_flush = 0u64;
        let mut last_flush = Instant::now();
        let mut idle = IDLE_BACKOFF_MIN;
        let outcome = loop {
            if self.stop.load(Ordering::Relaxed) {
                break Ok(());
            }
            if let Some(failure) = self.producer.context().failure() {
                break Err(TaskFailure::new(failure));
            }
            if last_flush.elapsed() >= self.flush_interval {
                if let Err(failure) = self.flush(&mut pending, &mut sent_since_flush) {
                    break Err(failure);
                }
                last_flush = Instant::now();
            }
            let records = match self.instance.poll() {
                Ok(records) => records,
                Err(e) if e.is_retriable() => {
                    tracing::warn!(task = self.label.as_str(), "poll failed, retrying: {e}");
                    self.pause(RETRY_BACKOFF);
                    continue;
                }
                Err(e) => break Err(TaskFailure::from_plugin(&e)),
            };
            if records.is_empty() {
                let until_flush = self.flush_interval.saturating_sub(last_flush.elapsed());
                self.pause(idle.min(until_flush));
                idle = (idle * 2).min(IDLE_BACKOFF_MAX);
                continue;
            }
            idle = IDLE_BACKOFF_MIN;
            sent_since_flush += records.len() as u64;
            for record in records {
                if let Err(failure) = self.send(record, &mut pending) {
                    return self.finish(Err(failure), &mut pending, &mut sent_since_flush);
                }
            }
        };
        self.finish(outcome, &mut pending, &mut sent_since_flush)
    }

    fn finish(
        mut self,
        outcome: Result<(), TaskFailure>,
        pending: &mut PendingOffsets,
        sent_since_flush: &mut u64,
    ) -> TaskReport {
        // Records handed to Kafka before a failure are still safe to commit once acknowledged.
        let flushed = self.flush(pending, sent_since_flush);
        let closed = self.instance.close();
        let outcome = outcome.and(flushed).and(closed.map_err(|e| TaskFailure::from_plugin(&e)));
        TaskReport { outcome }
    }

    fn pause(&self, duration: Duration) {
        let deadline = Instant::now() + duration;
        while !self.stop.load(Ordering::Relaxed) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    fn send(&self, record: SourceRecord, pending: &mut PendingOffsets) -> Result<(), TaskFailure> {
        let headers = (!record.headers.is_empty()).then(|| {
            record.headers.iter().fold(OwnedHeaders::new_with_capacity(record.headers.len()), |h, header| {
                h.insert(KafkaHeader { key: &header.key, value: header.value.as_deref() })
            })
        });
        let mut message: BaseRecord<'_, [u8], [u8], ()> = BaseRecord::to(&record.topic);
        if let Some(key) = record.key.as_deref() {
            message = message.key(key);
        }
        if let Some(value) = record.value.as_deref() {
            message = message.payload(value);
        }
        if let Some(partition) = record.partition {
            message = message.partition(partition);
        }
        if let Some(timestamp) = record.timestamp {
            message = message.timestamp(timestamp);
        }
        if let Some(headers) = headers {
            message = message.headers(headers);
        }
        loop {
            match self.producer.send(message) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    // Back-pressure: the producer holds as much as it may; wait for deliveries.
                    message = returned;
                    std::thread::sleep(QUEUE_FULL_BACKOFF);
                }
                Err((error, _)) => {
                    return Err(TaskFailure::new(format!("cannot send a record to topic {}: {error}", record.topic)))
                }
            }
        }
        pending.record(record.source_partition, record.source_offset);
        Ok(())
    }

    /// Waits until Kafka acknowledged every record sent so far, then stores their offsets and
    /// tells the plugin. If Kafka is slow the offsets stay pending for the next flush.
    fn flush(&mut self, pending: &mut PendingOffsets, sent_since_flush: &mut u64) -> Result<(), TaskFailure> {
        if *sent_since_flush == 0 && pending.latest.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.producer.flush(self.flush_timeout) {
            tracing::warn!(
                task = self.label.as_str(),
                "Kafka did not acknowledge every record within offset.flush.timeout.ms={} ({e}); \
                 offsets are kept for the next flush",
                self.flush_timeout.as_millis()
            );
            return Ok(());
        }
        if let Some(failure) = self.producer.context().failure() {
            return Err(TaskFailure::new(failure));
        }
        if !pending.latest.is_empty() {
            self.offsets.put(&self.connector, &pending.latest).map_err(|e| TaskFailure::new(e.to_string()))?;
            tracing::debug!(
                task = self.label.as_str(),
                "stored offsets of {} source partition(s) after {} record(s)",
                pending.latest.len(),
                sent_since_flush
            );
            pending.latest.clear();
        }
        *sent_since_flush = 0;
        self.instance.commit().map_err(|e| TaskFailure::from_plugin(&e))
    }
}
