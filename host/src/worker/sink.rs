//! The sink task loop: consume from Kafka in group `connect-<connector>` → hand batches to the
//! plugin → every `offset.flush.interval.ms` (and before partitions move away) ask the plugin to
//! flush, then commit the offsets to Kafka.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::{BorrowedMessage, Headers};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use super::{TaskFailure, TaskReport};
use crate::runtime::records::{Header, PartitionOffset, SinkRecord, TopicPartition};
use crate::runtime::{PluginError, SinkInstance};

/// How long one consumer poll waits for the first record of a batch.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// Pause after a retriable error before the same records are delivered again.
const RETRY_BACKOFF: Duration = Duration::from_millis(500);

/// State shared between the loop and the rebalance callbacks, which librdkafka runs on the
/// loop's own thread while it polls.
pub struct SinkShared {
    instance: Option<SinkInstance>,
    /// Next offset to commit per partition, for records handed to the plugin.
    uncommitted: BTreeMap<TopicPartition, i64>,
    failure: Option<TaskFailure>,
}

pub struct SinkContext {
    label: String,
    shared: Mutex<SinkShared>,
}

impl ClientContext for SinkContext {}

impl ConsumerContext for SinkContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            let partitions = to_partitions(list);
            tracing::info!(task = self.label.as_str(), "partitions revoked: {}", describe(&partitions));
            let mut shared = self.shared.lock().expect("sink lock");
            if let Err(failure) = flush_and_commit(&mut shared, consumer, &self.label) {
                shared.failure.get_or_insert(failure);
            }
            if let Some(instance) = shared.instance.as_mut() {
                if let Err(e) = instance.close_partitions(&partitions) {
                    shared.failure.get_or_insert(TaskFailure::from_plugin(&e));
                }
            }
            for partition in &partitions {
                shared.uncommitted.remove(partition);
            }
        }
    }

    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(list) => {
                let partitions = to_partitions(list);
                tracing::info!(task = self.label.as_str(), "partitions assigned: {}", describe(&partitions));
                let mut shared = self.shared.lock().expect("sink lock");
                if let Some(instance) = shared.instance.as_mut() {
                    if let Err(e) = instance.open_partitions(&partitions) {
                        shared.failure.get_or_insert(TaskFailure::from_plugin(&e));
                    }
                }
            }
            Rebalance::Error(e) => {
                tracing::warn!(task = self.label.as_str(), "rebalance failed: {e}")
            }
            Rebalance::Revoke(_) => {}
        }
    }
}

fn to_partitions(list: &TopicPartitionList) -> Vec<TopicPartition> {
    list.elements().iter().map(|e| TopicPartition { topic: e.topic().to_string(), partition: e.partition() }).collect()
}

fn describe(partitions: &[TopicPartition]) -> String {
    if partitions.is_empty() {
        return "none".into();
    }
    partitions.iter().map(|p| format!("{}-{}", p.topic, p.partition)).collect::<Vec<_>>().join(", ")
}

/// Asks the plugin to make everything durable, then commits the matching offsets to Kafka.
fn flush_and_commit(
    shared: &mut SinkShared,
    consumer: &BaseConsumer<SinkContext>,
    label: &str,
) -> Result<(), TaskFailure> {
    if shared.uncommitted.is_empty() {
        return Ok(());
    }
    let offsets: Vec<PartitionOffset> = shared
        .uncommitted
        .iter()
        .map(|(tp, offset)| PartitionOffset { topic: tp.topic.clone(), partition: tp.partition, offset: *offset })
        .collect();
    let Some(instance) = shared.instance.as_mut() else {
        return Ok(());
    };
    instance.flush(&offsets).map_err(|e| TaskFailure::from_plugin(&e))?;
    let mut list = TopicPartitionList::new();
    for o in &offsets {
        list.add_partition_offset(&o.topic, o.partition, Offset::Offset(o.offset))
            .map_err(|e| TaskFailure::new(format!("cannot build the offset commit: {e}")))?;
    }
    consumer
        .commit(&list, CommitMode::Sync)
        .map_err(|e| TaskFailure::new(format!("cannot commit offsets to Kafka after the plugin flushed: {e}")))?;
    tracing::debug!(
        task = label,
        "committed offsets {}",
        offsets.iter().map(|o| format!("{}-{}@{}", o.topic, o.partition, o.offset)).collect::<Vec<_>>().join(", ")
    );
    shared.uncommitted.clear();
    Ok(())
}

pub fn context(label: &str, instance: SinkInstance) -> SinkContext {
    SinkContext {
        label: label.to_string(),
        shared: Mutex::new(SinkShared { instance: Some(instance), uncommitted: BTreeMap::new(), failure: None }),
    }
}

pub struct SinkTaskRun {
    pub label: String,
    pub consumer: BaseConsumer<SinkContext>,
    pub topics: Vec<String>,
    pub batch_size: usize,
    pub flush_interval: Duration,
    pub stop: Arc<AtomicBool>,
}

fn to_record(message: &BorrowedMessage<'_>) -> SinkRecord {
    let headers = message
        .headers()
        .map(|hs| hs.iter().map(|h| Header { key: h.key.to_string(), value: h.value.map(<[u8]>::to_vec) }).collect())
        .unwrap_or_default();
    SinkRecord {
        topic: message.topic().to_string(),
        partition: message.partition(),
        offset: message.offset(),
        key: message.key().map(<[u8]>::to_vec),
        value: message.payload().map(<[u8]>::to_vec),
        headers,
        timestamp: message.timestamp().to_millis(),
    }
}

impl SinkTaskRun {
    pub fn run(self) -> TaskReport {
        let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
        if let Err(e) = self.consumer.subscribe(&topics) {
            let failure = TaskFailure::new(format!("cannot subscribe to {}: {e}", self.topics.join(", ")));
            return self.finish(Err(failure));
        }
        let mut last_commit = Instant::now();
        let outcome = loop {
            if self.stop.load(Ordering::Relaxed) {
                break Ok(());
            }
            if let Some(failure) = self.shared().failure.take() {
                break Err(failure);
            }
            let batch = match self.next_batch() {
                Ok(batch) => batch,
                Err(failure) => break Err(failure),
            };
            if !batch.is_empty() {
                if let Err(failure) = self.deliver(batch) {
                    break Err(failure);
                }
            }
            if last_commit.elapsed() >= self.flush_interval {
                let result = {
                    let mut shared = self.shared();
                    flush_and_commit(&mut shared, &self.consumer, &self.label)
                };
                if let Err(failure) = result {
                    break Err(failure);
                }
                last_commit = Instant::now();
            }
        };
        self.finish(outcome)
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, SinkShared> {
        self.consumer.context().shared.lock().expect("sink lock")
    }

    fn next_batch(&self) -> Result<Vec<SinkRecord>, TaskFailure> {
        let mut batch = Vec::new();
        while batch.len() < self.batch_size {
            let wait = if batch.is_empty() { POLL_TIMEOUT } else { Duration::ZERO };
            match self.consumer.poll(wait) {
                None => break,
                Some(Ok(message)) => batch.push(to_record(&message)),
                Some(Err(e)) => {
                    if e.rdkafka_error_code()
                        .is_some_and(|c| c == rdkafka::types::RDKafkaErrorCode::UnknownTopicOrPartition)
                    {
                        tracing::warn!(task = self.label.as_str(), "{e}; waiting for the topic to exist");
                    } else {
                        tracing::warn!(task = self.label.as_str(), "consumer error: {e}");
                    }
                    break;
                }
            }
        }
        Ok(batch)
    }

    fn deliver(&self, batch: Vec<SinkRecord>) -> Result<(), TaskFailure> {
        // (partition, first offset, next offset) of the batch; records of one partition
        // usually come together, so the last entry is checked first.
        let mut ranges: Vec<(TopicPartition, i64, i64)> = Vec::new();
        for r in &batch {
            let same = |tp: &TopicPartition| tp.partition == r.partition && tp.topic == r.topic;
            match ranges.last_mut() {
                Some((tp, _, next)) if same(tp) => *next = r.offset + 1,
                _ => match ranges.iter_mut().find(|(tp, _, _)| same(tp)) {
                    Some((_, _, next)) => *next = r.offset + 1,
                    None => ranges.push((
                        TopicPartition { topic: r.topic.clone(), partition: r.partition },
                        r.offset,
                        r.offset + 1,
                    )),
                },
            }
        }
        let mut shared = self.shared();
        let result = match shared.instance.as_mut() {
            Some(instance) => instance.put(batch),
            None => return Ok(()),
        };
        match result {
            Ok(()) => {
                shared.uncommitted.extend(ranges.into_iter().map(|(tp, _, next)| (tp, next)));
                Ok(())
            }
            Err(e @ PluginError::Retriable(_)) => {
                drop(shared);
                tracing::warn!(task = self.label.as_str(), "put failed, delivering the batch again: {e}");
                for (tp, offset, _) in ranges {
                    if let Err(seek) =
                        self.consumer.seek(&tp.topic, tp.partition, Offset::Offset(offset), Duration::from_secs(5))
                    {
                        return Err(TaskFailure::new(format!(
                            "cannot rewind {}-{} to retry: {seek}",
                            tp.topic, tp.partition
                        )));
                    }
                }
                std::thread::sleep(RETRY_BACKOFF);
                Ok(())
            }
            Err(e) => Err(TaskFailure::from_plugin(&e)),
        }
    }

    fn finish(self, outcome: Result<(), TaskFailure>) -> TaskReport {
        let committed = if outcome.is_ok() {
            let mut shared = self.shared();
            flush_and_commit(&mut shared, &self.consumer, &self.label)
        } else {
            Ok(())
        };
        // The plugin is closed before the consumer leaves the group, so the revocation that
        // leaving causes finds nothing left to flush.
        let instance = self.shared().instance.take();
        let closed = instance.map_or(Ok(()), |i| i.close().map_err(|e| TaskFailure::from_plugin(&e)));
        drop(self.consumer);
        TaskReport { outcome: outcome.and(committed).and(closed) }
    }
}
