//! The sink task: consume from Kafka in group `connect-<connector>` → hand batches to the
//! plugin → every `offset.flush.interval.ms` (and before partitions move away) ask the plugin to
//! flush, then commit the offsets to Kafka.
//!
//! Two threads share the work so that reading from Kafka overlaps the plugin's: the fetch thread
//! polls the consumer and turns messages into records; the task thread owns the plugin and the
//! offsets to commit. The consumer's rebalance callbacks run on the fetch thread, inside its
//! poll; they pass the plugin's part to the task thread through the same queue as the records,
//! so a revocation is handled after every record fetched before it, and the fetch thread waits
//! until it was.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::{BorrowedMessage, Headers};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use super::{TaskFailure, TaskReport};
use crate::kafka::batch::{FetchQueue, RawMessage};
use crate::model::{Part, PartHeader, PartitionOffset, SinkRecord, TopicPartition};
use crate::runtime::{PluginError, SinkInstance};
use crate::sync::Unpoisoned;

/// How long the task thread waits for a batch before it checks whether it should stop or
/// commit.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How long the fetch thread waits for a record when none is there; rebalances wait as long.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// Pause after a retriable error before the same records are delivered again.
const RETRY_BACKOFF: Duration = Duration::from_millis(500);
/// Batches fetched ahead of the plugin. With the consumer's own queue this bounds what a sink
/// holds in memory to this many batches of `max.poll.records`.
const PREFETCH_BATCHES: usize = 2;

/// What the fetch thread hands to the task thread, in the order it happened.
pub enum Fetched {
    /// Records fetched after the `rewinds`-th rewind the task thread asked for.
    Records {
        rewinds: u64,
        batch: Vec<SinkRecord>,
    },
    Assigned(Vec<TopicPartition>),
    /// The partitions move away once `done` is answered (or dropped).
    Revoked {
        partitions: Vec<TopicPartition>,
        done: mpsc::Sender<()>,
    },
    Failed(TaskFailure),
}

pub struct SinkContext {
    label: String,
    to_task: SyncSender<Fetched>,
    /// Where each partition should be read from again, set by the task thread after a
    /// retriable `put` error and carried out by the fetch thread.
    rewind: Mutex<Option<Vec<(TopicPartition, i64)>>>,
    /// Partitions revoked during the fetch thread's last poll: records of theirs in the batch
    /// it is building must not reach the plugin after their `close-partitions`.
    revoked: Mutex<Vec<TopicPartition>>,
    /// Rebalances seen, so that the fetch thread knows when one happened inside a poll.
    rebalances: AtomicU64,
    /// Where assigned partitions' records go; taken (and destroyed) before the consumer is.
    queue: Mutex<Option<Arc<FetchQueue>>>,
}

impl ClientContext for SinkContext {}

impl ConsumerContext for SinkContext {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        self.rebalances.fetch_add(1, Ordering::Relaxed);
        if let Rebalance::Revoke(list) = rebalance {
            let partitions = to_partitions(list);
            tracing::info!(task = self.label.as_str(), "partitions revoked: {}", describe(&partitions));
            self.revoked.locked().extend(partitions.iter().cloned());
            let (done, handled) = mpsc::channel();
            // Without a task thread (it stopped) there is nothing to flush; otherwise wait until it
            // flushed, committed and closed the partitions. An answer that never comes means the
            // task thread dropped the request on its way out.
            if self.to_task.send(Fetched::Revoked { partitions, done }).is_ok() {
                let _ = handled.recv();
            }
        }
    }

    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(list) => {
                let partitions = to_partitions(list);
                tracing::info!(task = self.label.as_str(), "partitions assigned: {}", describe(&partitions));
                if let Some(queue) = self.queue.locked().as_ref() {
                    for p in &partitions {
                        if !queue.take_over(&p.topic, p.partition) {
                            tracing::debug!(
                                task = self.label.as_str(),
                                "{}-{} is read one record a poll",
                                p.topic,
                                p.partition
                            );
                        }
                    }
                }
                let _ = self.to_task.send(Fetched::Assigned(partitions));
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

/// The consumer's context and the task thread's end of the queue it fills.
pub fn context(label: &str) -> (SinkContext, Receiver<Fetched>) {
    let (to_task, from_fetch) = mpsc::sync_channel(PREFETCH_BATCHES);
    let context = SinkContext {
        label: label.to_string(),
        to_task,
        rewind: Mutex::new(None),
        revoked: Mutex::new(Vec::new()),
        rebalances: Default::default(),
        queue: Mutex::new(None),
    };
    (context, from_fetch)
}

pub struct SinkTaskRun {
    pub label: String,
    pub instance: SinkInstance,
    pub consumer: BaseConsumer<SinkContext>,
    pub fetched: Receiver<Fetched>,
    pub topics: Vec<String>,
    pub batch_size: usize,
    pub flush_interval: Duration,
    pub stop: Arc<crate::sync::Stop>,
    pub converters: super::converting::RecordConverters,
    pub transforms: crate::transform::Chain,
}

fn to_record(message: &BorrowedMessage<'_>) -> SinkRecord {
    let headers = message
        .headers()
        .map(|hs| {
            hs.iter()
                .map(|h| PartHeader { key: h.key.to_string(), value: h.value.map(|v| Part::Bytes(v.to_vec())) })
                .collect()
        })
        .unwrap_or_default();
    SinkRecord {
        topic: message.topic().to_string(),
        partition: message.partition(),
        offset: message.offset(),
        key: message.key().map(|k| Part::Bytes(k.to_vec())),
        value: message.payload().map(|v| Part::Bytes(v.to_vec())),
        headers,
        timestamp: message.timestamp().to_millis(),
    }
}

fn raw_to_record(message: RawMessage<'_>) -> SinkRecord {
    SinkRecord {
        topic: message.topic.to_string(),
        partition: message.partition,
        offset: message.offset,
        key: message.key.map(|k| Part::Bytes(k.to_vec())),
        value: message.value.map(|v| Part::Bytes(v.to_vec())),
        headers: message
            .headers()
            .into_iter()
            .map(|(key, value)| PartHeader { key, value: value.map(Part::Bytes) })
            .collect(),
        timestamp: message.timestamp,
    }
}

/// The fetch thread's side: polls batches until told to stop or until nobody takes them.
struct Fetcher {
    label: String,
    consumer: Arc<BaseConsumer<SinkContext>>,
    queue: Arc<FetchQueue>,
    batch_size: usize,
    stop: Arc<crate::sync::Stop>,
}

impl Fetcher {
    fn run(self) {
        let to_task = self.consumer.context().to_task.clone();
        let mut rewinds = 0u64;
        while !self.stop.is_stopped() {
            let rewind = self.consumer.context().rewind.locked().take();
            if let Some(rewind) = rewind {
                for (tp, offset) in rewind {
                    if let Err(e) =
                        self.consumer.seek(&tp.topic, tp.partition, Offset::Offset(offset), Duration::from_secs(5))
                    {
                        let failure =
                            TaskFailure::new(format!("cannot rewind {}-{} to retry: {e}", tp.topic, tp.partition));
                        let _ = to_task.send(Fetched::Failed(failure));
                        return;
                    }
                }
                rewinds += 1;
            }
            let batch = self.next_batch();
            if !batch.is_empty() && to_task.send(Fetched::Records { rewinds, batch }).is_err() {
                return;
            }
        }
    }

    fn next_batch(&self) -> Vec<SinkRecord> {
        let mut batch = Vec::new();
        // The consumer's own queue first: it serves rebalances and errors, and holds records
        // fetched before their partition was taken over by the fetch queue (older than any
        // there). A rebalance ends the poll; the fetch queue waits for the next round.
        let rebalances = self.consumer.context().rebalances.load(Ordering::Relaxed);
        while batch.len() < self.batch_size {
            match self.consumer.poll(Duration::ZERO) {
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
        if self.consumer.context().rebalances.load(Ordering::Relaxed) != rebalances {
            // Every record in the batch was fetched before a revocation.
            let revoked = std::mem::take(&mut *self.consumer.context().revoked.locked());
            batch.retain(|r| !revoked.iter().any(|tp| tp.partition == r.partition && tp.topic == r.topic));
            return batch;
        }
        if batch.len() < self.batch_size {
            let wait = if batch.is_empty() { IDLE_WAIT } else { Duration::ZERO };
            self.queue.read(
                self.batch_size - batch.len(),
                wait,
                |message| batch.push(raw_to_record(message)),
                |e| tracing::warn!(task = self.label.as_str(), "consumer error: {e}"),
            );
        }
        batch
    }
}

/// The task thread's state: the plugin and what it was given since the last commit.
struct Delivery {
    label: String,
    instance: SinkInstance,
    consumer: Arc<BaseConsumer<SinkContext>>,
    /// Next offset to commit per partition, for records handed to the plugin.
    uncommitted: BTreeMap<TopicPartition, i64>,
    /// Rewinds asked of the fetch thread; records fetched before the last one are stale.
    rewinds: u64,
    /// Read keys and values for a plugin that takes data.
    converters: super::converting::RecordConverters,
    transforms: crate::transform::Chain,
}

impl SinkTaskRun {
    pub fn run(self) -> TaskReport {
        let SinkTaskRun {
            label,
            instance,
            consumer,
            fetched,
            topics,
            batch_size,
            flush_interval,
            stop,
            converters,
            transforms,
        } = self;
        let consumer = Arc::new(consumer);
        let mut delivery = Delivery {
            label: label.clone(),
            instance,
            consumer: consumer.clone(),
            uncommitted: BTreeMap::new(),
            rewinds: 0,
            converters,
            transforms,
        };
        let Some(queue) = FetchQueue::new(&consumer).map(Arc::new) else {
            let failure = TaskFailure::new("cannot create a librdkafka queue for the consumer".into());
            return delivery.finish(Err(failure), fetched, None);
        };
        *consumer.context().queue.locked() = Some(queue.clone());
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        if let Err(e) = consumer.subscribe(&names) {
            let failure = TaskFailure::new(format!("cannot subscribe to {}: {e}", topics.join(", ")));
            return delivery.finish(Err(failure), fetched, None);
        }
        let stop_fetching = Arc::new(crate::sync::Stop::default());
        let fetcher = Fetcher { label: label.clone(), consumer, queue, batch_size, stop: stop_fetching.clone() };
        let fetch_thread =
            match crate::sync::Stoppable::spawn_with(format!("{label}-fetch"), stop_fetching, move || fetcher.run()) {
                Ok(handle) => handle,
                Err(e) => {
                    let failure = TaskFailure::new(format!("cannot start the thread that reads from Kafka: {e}"));
                    return delivery.finish(Err(failure), fetched, None);
                }
            };
        let mut last_commit = Instant::now();
        let outcome = loop {
            if stop.is_stopped() {
                break Ok(());
            }
            let handled = match fetched.recv_timeout(POLL_TIMEOUT) {
                Ok(next) => delivery.handle(next),
                Err(RecvTimeoutError::Timeout) => Ok(()),
                Err(RecvTimeoutError::Disconnected) => {
                    Err(TaskFailure::new("the thread that reads from Kafka stopped unexpectedly".into()))
                }
            };
            if let Err(failure) = handled {
                break Err(failure);
            }
            if last_commit.elapsed() >= flush_interval {
                if let Err(failure) = delivery.flush_and_commit() {
                    break Err(failure);
                }
                last_commit = Instant::now();
            }
        };
        delivery.finish(outcome, fetched, Some(fetch_thread))
    }
}

impl Delivery {
    fn handle(&mut self, fetched: Fetched) -> Result<(), TaskFailure> {
        match fetched {
            Fetched::Records { rewinds, batch } if rewinds == self.rewinds => self.deliver(batch),
            // Fetched before the last rewind: these records come again.
            Fetched::Records { .. } => Ok(()),
            Fetched::Assigned(partitions) => {
                self.instance.open_partitions(&partitions).map_err(|e| TaskFailure::from_plugin(&e))
            }
            Fetched::Revoked { partitions, done } => {
                let committed = self.flush_and_commit();
                let closed = self.instance.close_partitions(&partitions).map_err(|e| TaskFailure::from_plugin(&e));
                for partition in &partitions {
                    self.uncommitted.remove(partition);
                }
                let _ = done.send(());
                committed.and(closed)
            }
            Fetched::Failed(failure) => Err(failure),
        }
    }

    fn deliver(&mut self, mut batch: Vec<SinkRecord>) -> Result<(), TaskFailure> {
        if self.instance.takes_data() {
            for record in &mut batch {
                self.converters.sink_record(record).map_err(TaskFailure::new)?;
            }
        }
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
        // The offsets above cover every record fetched: those a transform drops are committed
        // past too. A record a transform fails on fails the task before the batch is put.
        let mut batch = self.transform(batch).map_err(TaskFailure::new)?;
        if !self.transforms.is_empty() && !self.instance.takes_data() {
            for record in &mut batch {
                self.converters.sink_headers_to_bytes(record).map_err(TaskFailure::new)?;
            }
        }
        match self.instance.put(batch) {
            Ok(()) => {
                self.uncommitted.extend(ranges.into_iter().map(|(tp, _, next)| (tp, next)));
                Ok(())
            }
            Err(e @ PluginError::Retriable(_)) => {
                tracing::warn!(task = self.label.as_str(), "put failed, delivering the batch again: {e}");
                let rewind = ranges.into_iter().map(|(tp, first, _)| (tp, first)).collect();
                *self.consumer.context().rewind.locked() = Some(rewind);
                self.rewinds += 1;
                std::thread::sleep(RETRY_BACKOFF);
                Ok(())
            }
            Err(e) => Err(TaskFailure::from_plugin(&e)),
        }
    }

    /// The batch through the connector's transforms (after the converters, as in Kafka Connect);
    /// the error names the record.
    fn transform(&self, batch: Vec<SinkRecord>) -> Result<Vec<SinkRecord>, String> {
        if self.transforms.is_empty() {
            return Ok(batch);
        }
        let mut kept = Vec::with_capacity(batch.len());
        for r in batch {
            let SinkRecord { topic, partition, offset, key, value, headers, timestamp } = r;
            let record = crate::transform::Record { topic, partition: Some(partition), key, value, headers, timestamp };
            match self.transforms.apply(record) {
                Ok(Some(t)) => kept.push(SinkRecord {
                    topic: t.topic,
                    partition: t.partition.unwrap_or(partition),
                    offset,
                    key: t.key,
                    value: t.value,
                    headers: t.headers,
                    timestamp: t.timestamp,
                }),
                Ok(None) => {}
                Err(e) => return Err(format!("{} (partition {partition}, offset {offset})", e.message)),
            }
        }
        Ok(kept)
    }

    /// Asks the plugin to make everything durable, then commits the matching offsets to Kafka.
    fn flush_and_commit(&mut self) -> Result<(), TaskFailure> {
        if self.uncommitted.is_empty() {
            return Ok(());
        }
        let offsets: Vec<PartitionOffset> = self
            .uncommitted
            .iter()
            .map(|(tp, offset)| PartitionOffset { topic: tp.topic.clone(), partition: tp.partition, offset: *offset })
            .collect();
        self.instance.flush(&offsets).map_err(|e| TaskFailure::from_plugin(&e))?;
        let mut list = TopicPartitionList::new();
        for o in &offsets {
            list.add_partition_offset(&o.topic, o.partition, Offset::Offset(o.offset))
                .map_err(|e| TaskFailure::new(format!("cannot build the offset commit: {e}")))?;
        }
        self.consumer
            .commit(&list, CommitMode::Sync)
            .map_err(|e| TaskFailure::new(format!("cannot commit offsets to Kafka after the plugin flushed: {e}")))?;
        tracing::debug!(
            task = self.label.as_str(),
            "committed offsets {}",
            offsets.iter().map(|o| format!("{}-{}@{}", o.topic, o.partition, o.offset)).collect::<Vec<_>>().join(", ")
        );
        self.uncommitted.clear();
        Ok(())
    }

    fn finish(
        mut self,
        outcome: Result<(), TaskFailure>,
        fetched: Receiver<Fetched>,
        fetch_thread: Option<crate::sync::Stoppable>,
    ) -> TaskReport {
        let committed = if outcome.is_ok() { self.flush_and_commit() } else { Ok(()) };
        // The plugin is closed before the consumer leaves the group, so the revocation that
        // leaving causes finds nothing left to flush.
        let Delivery { instance, consumer, .. } = self;
        let closed = instance.close().map_err(|e| TaskFailure::from_plugin(&e));
        // Dropping the queue frees a fetch thread blocked on handing over a batch or waiting
        // for a revocation to be handled; records not handed to the plugin are read again by
        // whoever owns their partitions next.
        drop(fetched);
        if let Some(thread) = fetch_thread {
            thread.stop.stop();
            thread.join();
        }
        // The fetch queue goes before the consumer, as librdkafka requires.
        consumer.context().queue.locked().take();
        drop(consumer);
        TaskReport { outcome: outcome.and(committed).and(closed) }
    }
}
