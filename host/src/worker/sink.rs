//! The sink task: consume from Kafka in group `connect-<connector>` → hand batches to the
//! plugin → every `offset.flush.interval.ms` (and before partitions move away) ask the plugin to
//! flush, then commit the offsets to Kafka.
//!
//! Two threads share the work so that reading from Kafka overlaps the plugin's: the fetch thread
//! polls the consumer and turns messages into records; the task thread owns the plugin and the
//! offsets to commit. The consumer's rebalance callbacks run on the fetch thread, inside its
//! poll; they pass the plugin's part to the task thread through the same queue as the records,
//! so a revocation is handled after every record fetched before it, and the fetch thread waits
//! until it was. When the plugin takes data or the connector has transforms, the fetch thread
//! also reads each record with the converters, so that the next batch is read while the plugin
//! writes the last one; what a converter fails on is handed over beside the batch and dealt
//! with on the task thread, as every other record failure is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::{BorrowedMessage, Headers};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use super::dead_letter::DeadLetterQueue;
use super::recycle::Recycler;
use super::tolerance::{RecordFailure, Retry, Stage, Tolerance};
use super::{TaskFailure, TaskReport};
use crate::config::RetryTimeout;
use crate::kafka::batch::{FetchQueue, RawMessage};
use crate::kafka::StaticMember;
use crate::runtime::{ErrantReport, PluginError, Put, SinkInstance};
use crate::sync::Unpoisoned;
use wharf_connect::model::{Part, PartHeader, PartitionOffset, SinkRecord, TopicPartition};

/// How long the task thread waits for a batch before it checks whether it should stop or
/// commit.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How long the fetch thread waits for a record when none is there; rebalances wait as long.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// Batches fetched ahead of the plugin. With the consumer's own queue this bounds what a sink
/// holds in memory to this many batches of `max.poll.records`.
const PREFETCH_BATCHES: usize = 2;

/// What the fetch thread hands to the task thread, in the order it happened.
pub(super) enum Fetched {
    /// Records fetched after the `rewinds`-th rewind the task thread asked for.
    Records {
        rewinds: u64,
        batch: ReadBatch,
    },
    Assigned(Vec<TopicPartition>),
    /// The partitions move away once `done` is answered (or dropped).
    Revoked {
        partitions: Vec<TopicPartition>,
        done: mpsc::Sender<()>,
    },
    Failed(TaskFailure),
}

/// A batch as the fetch thread hands it over.
pub(super) struct ReadBatch {
    /// Every record fetched, in order; read by the converters when `read` (a record a converter
    /// failed on may be half read).
    records: Vec<SinkRecord>,
    read: bool,
    /// The records a converter failed on, by their place in `records`, in order.
    unreadable: Vec<(usize, RecordFailure)>,
    /// The records as they were consumed, for the dead-letter queue, when there is one.
    originals: Option<Vec<SinkRecord>>,
}

/// What the fetch thread does to a batch before handing it over.
pub(super) struct Reading {
    /// The fetch thread's own converters, when the plugin takes data or the connector has
    /// transforms.
    pub converters: Option<super::converting::RecordConverters>,
    /// Whether to keep each record as it was consumed (there is a dead-letter queue).
    pub keep_originals: bool,
}

impl Reading {
    fn read(&mut self, records: Vec<SinkRecord>) -> ReadBatch {
        let originals = self.keep_originals.then(|| records.clone());
        let Some(converters) = &mut self.converters else {
            return ReadBatch { records, read: false, unreadable: Vec::new(), originals };
        };
        let mut records = records;
        let mut unreadable = Vec::new();
        for (i, record) in records.iter_mut().enumerate() {
            if let Err(failure) = converters.sink_record(record) {
                unreadable.push((i, failure));
            }
        }
        ReadBatch { records, read: true, unreadable, originals }
    }
}

pub(super) struct SinkContext {
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
    /// The task's static identity in its group, if it has one.
    member: Option<StaticMember>,
    /// The consumer's bytes and connections, from librdkafka's statistics, for the metrics.
    figures: Arc<crate::metrics::clients::ClientFigures>,
}

impl SinkContext {
    /// The task's failure when its consumer can no longer take part in the group: for a static
    /// member, because another consumer joined with its `group.instance.id` (the task's next
    /// run), which fenced this one.
    fn fenced(&self, consumer: &BaseConsumer<SinkContext>) -> Option<TaskFailure> {
        let (code, reason) = consumer.client().fatal_error()?;
        if code != rdkafka::types::RDKafkaErrorCode::FencedInstanceId {
            return Some(TaskFailure::new(format!("the task's Kafka consumer failed for good: {reason}")));
        }
        let (group, instance) =
            self.member.as_ref().map_or(("its group", "its id"), |m| (m.group.as_str(), m.instance.as_str()));
        Some(TaskFailure::superseded(format!(
            "the task's consumer was fenced: another consumer joined group {group} as group.instance.id={instance}, \
             so another run of this task took its place (the worker group moved the task while this worker was \
             out of touch, or another worker runs a connector of this name in the same group); it stopped without \
             delivering or committing more"
        )))
    }
}

impl ClientContext for SinkContext {
    fn stats_raw(&self, statistics: &[u8]) {
        self.figures.update(statistics);
    }
}

impl ConsumerContext for SinkContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        self.rebalances.fetch_add(1, Ordering::Relaxed);
        if let Rebalance::Revoke(list) = rebalance {
            let partitions = to_partitions(list);
            if self.fenced(consumer).is_some() {
                // Lost, not handed back: another consumer reads them now, so nothing of theirs is
                // flushed or committed here, and the task thread stops at its next step.
                tracing::warn!(
                    task = self.label.as_str(),
                    "partitions lost to another consumer: {}",
                    describe(&partitions)
                );
                self.revoked.locked().extend(partitions);
                return;
            }
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
pub(super) fn context(label: &str, member: Option<StaticMember>) -> (SinkContext, Receiver<Fetched>) {
    let (to_task, from_fetch) = mpsc::sync_channel(PREFETCH_BATCHES);
    let context = SinkContext {
        label: label.to_string(),
        to_task,
        rewind: Mutex::new(None),
        revoked: Mutex::new(Vec::new()),
        rebalances: Default::default(),
        queue: Mutex::new(None),
        member,
        figures: crate::metrics::clients::register(crate::metrics::clients::ClientKind::Consumer),
    };
    (context, from_fetch)
}

/// How often a sink of `topics.regex` looks for topics that began or ceased to match (the
/// Java consumer looks every `metadata.max.age.ms`, five minutes by default).
pub(super) const TOPICS_REGEX_REFRESH: Duration = Duration::from_secs(10);

/// How long listing the cluster's topics for `topics.regex` may take.
const TOPICS_REGEX_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// What a sink task reads: the topics of `topics`, or those whose names match `topics.regex`,
/// looked for again every `TOPICS_REGEX_REFRESH`.
pub(super) enum Subscription {
    Listed(Vec<String>),
    Matching { pattern: crate::config::connector::TopicPattern, reserved: Arc<crate::config::ReservedTopics> },
}

impl Subscription {
    /// The topics to subscribe to now.
    fn topics(&self, consumer: &BaseConsumer<SinkContext>) -> Result<Vec<String>, String> {
        match self {
            Subscription::Listed(topics) => Ok(topics.clone()),
            Subscription::Matching { pattern, reserved } => {
                crate::kafka::topics_matching(consumer, pattern, reserved, TOPICS_REGEX_LIST_TIMEOUT)
                    .map_err(|e| format!("cannot list the topics that topics.regex={} may match: {e}", pattern.text))
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Subscription::Listed(topics) => topics.join(", "),
            Subscription::Matching { pattern, .. } => format!("the topics matching topics.regex={}", pattern.text),
        }
    }
}

/// Subscribes to `topics`; none unsubscribes.
fn subscribe(consumer: &BaseConsumer<SinkContext>, topics: &[String]) -> rdkafka::error::KafkaResult<()> {
    if topics.is_empty() {
        consumer.unsubscribe();
        return Ok(());
    }
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    consumer.subscribe(&names)
}

pub(super) struct SinkTaskRun {
    pub label: String,
    pub instance: SinkInstance,
    pub consumer: BaseConsumer<SinkContext>,
    pub fetched: Receiver<Fetched>,
    pub topics: Subscription,
    pub batch_size: usize,
    pub flush_interval: Duration,
    pub stop: Arc<crate::sync::Stop>,
    /// Writes records back to bytes for a plugin that takes bytes after transforms.
    pub converters: super::converting::RecordConverters,
    /// Reads records on the fetch thread (its converters are built like `converters`).
    pub reading: Reading,
    pub transforms: wharf_connect::transform::TaskChain,
    /// Replaces the instance and its chain after `wasm.instance.recycle.records`.
    pub recycle: Option<Recycler<(SinkInstance, wharf_connect::transform::TaskChain)>>,
    pub tolerance: Tolerance,
    /// The task's RUNNING status: the plugin's progress line, the count of skipped records.
    pub running: Arc<super::running::RunningStatus>,
    pub counters: Arc<crate::metrics::tasks::TaskCounters>,
    pub dead_letter: Option<DeadLetterQueue>,
    /// The connector's class (its plugin), as the dead-letter queue names it for reported
    /// records.
    pub class: String,
    /// Records each topic the task reads from (`topic.tracking.enable`).
    pub tracked: super::topics::TopicTracker,
    /// Where the task's static member waits once the task stopped, if it joined as one.
    pub departure: Option<super::membership::Departure>,
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

/// Where a consumed record came from, as the log names a skipped one (errors.log.include.messages).
struct About {
    topic: String,
    partition: i32,
    offset: i64,
    timestamp: Option<i64>,
}

impl About {
    fn of(record: &SinkRecord) -> Self {
        About {
            topic: record.topic.clone(),
            partition: record.partition,
            offset: record.offset,
            timestamp: record.timestamp,
        }
    }
}

impl std::fmt::Display for About {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let About { topic, partition, offset, timestamp } = self;
        write!(f, "the consumed record {{topic='{topic}', partition={partition}, offset={offset}")?;
        if let Some(timestamp) = timestamp {
            write!(f, ", timestamp={timestamp}")?;
        }
        f.write_str("}")
    }
}

/// A `topics.regex` subscription: the topics it holds, and when the cluster was last looked at.
struct Matching {
    subscription: Subscription,
    subscribed: Vec<String>,
    checked: Instant,
}

/// The fetch thread's side: polls batches until told to stop or until nobody takes them.
struct Fetcher {
    label: String,
    consumer: Arc<BaseConsumer<SinkContext>>,
    queue: Arc<FetchQueue>,
    batch_size: usize,
    stop: Arc<crate::sync::Stop>,
    matching: Option<Matching>,
    reading: Reading,
}

impl Fetcher {
    /// Subscribes again when the topics `topics.regex` matches changed (a topic was created or
    /// deleted); a failed look is tried again at the next refresh.
    fn refresh_matching(&mut self) {
        let Some(matching) = &mut self.matching else { return };
        if matching.checked.elapsed() < TOPICS_REGEX_REFRESH {
            return;
        }
        matching.checked = Instant::now();
        match matching.subscription.topics(&self.consumer) {
            Ok(topics) if topics == matching.subscribed => {}
            Ok(topics) => match subscribe(&self.consumer, &topics) {
                Ok(()) => {
                    tracing::info!(
                        task = self.label.as_str(),
                        "{} now: {}",
                        matching.subscription.describe(),
                        if topics.is_empty() { "none".to_string() } else { topics.join(", ") }
                    );
                    matching.subscribed = topics;
                }
                Err(e) => tracing::warn!(task = self.label.as_str(), "cannot subscribe to {}: {e}", topics.join(", ")),
            },
            Err(message) => tracing::warn!(task = self.label.as_str(), "{message}; trying again"),
        }
    }

    fn run(mut self) {
        let to_task = self.consumer.context().to_task.clone();
        let mut rewinds = 0u64;
        while !self.stop.is_stopped() {
            self.refresh_matching();
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
            if batch.is_empty() {
                continue;
            }
            let batch = self.reading.read(batch);
            if to_task.send(Fetched::Records { rewinds, batch }).is_err() {
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
                    if let Some(failure) = self.consumer.context().fenced(&self.consumer) {
                        let _ = self.consumer.context().to_task.send(Fetched::Failed(failure));
                        self.stop.stop();
                        break;
                    }
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
    /// Write records back to bytes for a plugin that takes bytes after transforms.
    converters: super::converting::RecordConverters,
    transforms: wharf_connect::transform::TaskChain,
    /// Replaces the instance and its chain after `wasm.instance.recycle.records`.
    recycle: Option<Recycler<(SinkInstance, wharf_connect::transform::TaskChain)>>,
    /// The partitions the task holds, given again to a replacing instance.
    assigned: std::collections::BTreeSet<TopicPartition>,
    /// What a record that a converter or a transform fails on does (errors.*).
    tolerance: Tolerance,
    running: Arc<super::running::RunningStatus>,
    counters: Arc<crate::metrics::tasks::TaskCounters>,
    dead_letter: Option<DeadLetterQueue>,
    class: String,
    /// Asked of the task: ends the pause between retries early.
    stop: Arc<crate::sync::Stop>,
    tracked: super::topics::TopicTracker,
    departure: Option<super::membership::Departure>,
}

impl SinkTaskRun {
    pub(super) fn run(self) -> TaskReport {
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
            reading,
            transforms,
            recycle,
            tolerance,
            running,
            counters,
            dead_letter,
            class,
            tracked,
            departure,
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
            recycle,
            assigned: Default::default(),
            tolerance,
            running,
            counters,
            dead_letter,
            class,
            stop: stop.clone(),
            tracked,
            departure,
        };
        let Some(queue) = FetchQueue::new(&consumer).map(Arc::new) else {
            let failure = TaskFailure::new("cannot create a librdkafka queue for the consumer".into());
            return delivery.finish(Err(failure), fetched, None);
        };
        *consumer.context().queue.locked() = Some(queue.clone());
        let subscribed = match topics.topics(&consumer) {
            Ok(subscribed) => subscribed,
            Err(message) => return delivery.finish(Err(TaskFailure::new(message)), fetched, None),
        };
        if let Err(e) = subscribe(&consumer, &subscribed) {
            let failure = TaskFailure::new(format!("cannot subscribe to {}: {e}", topics.describe()));
            return delivery.finish(Err(failure), fetched, None);
        }
        if let Subscription::Matching { pattern, .. } = &topics {
            tracing::info!(
                task = label.as_str(),
                "topics.regex={} matches {}",
                pattern.text,
                if subscribed.is_empty() { "no topic yet".to_string() } else { subscribed.join(", ") }
            );
        }
        let matching = match topics {
            Subscription::Matching { .. } => {
                Some(Matching { subscription: topics, subscribed, checked: Instant::now() })
            }
            Subscription::Listed(_) => None,
        };
        let stop_fetching = Arc::new(crate::sync::Stop::default());
        let fetcher = Fetcher {
            label: label.clone(),
            consumer,
            queue,
            batch_size,
            stop: stop_fetching.clone(),
            matching,
            reading,
        };
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
                // A quiet task learns it was fenced too.
                Err(RecvTimeoutError::Timeout) => match delivery.consumer.context().fenced(&delivery.consumer) {
                    Some(failure) => Err(failure),
                    None => Ok(()),
                },
                Err(RecvTimeoutError::Disconnected) => {
                    Err(TaskFailure::new("the thread that reads from Kafka stopped unexpectedly".into()))
                }
            };
            if let Err(failure) = handled {
                break Err(failure);
            }
            delivery.running.show(delivery.instance.take_progress());
            if last_commit.elapsed() >= flush_interval {
                if let Err(failure) = delivery.flush_and_commit() {
                    break Err(failure);
                }
                last_commit = Instant::now();
            }
            if delivery.recycle.as_ref().is_some_and(Recycler::due) {
                if let Err(failure) = delivery.recycle() {
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
            Fetched::Records { rewinds, batch } if rewinds == self.rewinds => {
                crate::metrics::tasks::TaskCounters::add(&self.counters.read, batch.records.len());
                if let Some(recycler) = &mut self.recycle {
                    recycler.count(batch.records.len());
                }
                self.deliver(batch)?;
                self.tolerance.report();
                Ok(())
            }
            // Fetched before the last rewind: these records come again.
            Fetched::Records { .. } => Ok(()),
            Fetched::Assigned(partitions) => {
                self.assigned.extend(partitions.iter().cloned());
                self.counters.partitions.store(self.assigned.len() as u64, std::sync::atomic::Ordering::Relaxed);
                self.instance.open_partitions(&partitions).map_err(|e| TaskFailure::from_plugin(&e))
            }
            Fetched::Revoked { partitions, done } => {
                let committed = self.flush_and_commit();
                // Fenced meanwhile: the partitions are another run's, and the plugin writes nothing
                // more of theirs.
                let closed = match committed.as_ref().is_err_and(|f| f.superseded) {
                    true => Ok(()),
                    false => self.instance.close_partitions(&partitions).map_err(|e| TaskFailure::from_plugin(&e)),
                };
                for partition in &partitions {
                    self.uncommitted.remove(partition);
                    self.assigned.remove(partition);
                }
                self.counters.partitions.store(self.assigned.len() as u64, std::sync::atomic::Ordering::Relaxed);
                let _ = done.send(());
                committed.and(closed)
            }
            Fetched::Failed(failure) => Err(failure),
        }
    }

    fn deliver(&mut self, batch: ReadBatch) -> Result<(), TaskFailure> {
        let ReadBatch { records: batch, read, unreadable, originals } = batch;
        // One load of librdkafka's fatal error state per batch: a fenced task delivers no more.
        if let Some(failure) = self.consumer.context().fenced(&self.consumer) {
            return Err(failure);
        }
        // (partition, first offset, next offset) of the batch; records of one partition
        // usually come together, so the last entry is checked first. The offsets cover every
        // record fetched: those a transform drops, or that are skipped under
        // errors.tolerance=all, are committed past too.
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
        self.tracked.refresh();
        for (tp, _, _) in &ranges {
            self.tracked.used(&tp.topic);
        }
        let batch = self.prepare(batch, read, unreadable, originals.as_deref())?;
        if batch.is_empty() {
            // Every record was dropped or skipped: nothing to put, and all of it is done with.
            self.uncommitted.extend(ranges.into_iter().map(|(tp, _, next)| (tp, next)));
            return Ok(());
        }
        // Where each record put came from, kept only when a spent retry timeout may skip them.
        let policy = self.tolerance.policy();
        let skippable = policy.tolerate_all && matches!(policy.retry_timeout, RetryTimeout::Within(_));
        let put: Vec<(String, i32, i64)> = match skippable {
            true => batch.iter().map(|r| (r.topic.clone(), r.partition, r.offset)).collect(),
            false => Vec::new(),
        };
        crate::metrics::tasks::TaskCounters::add(&self.counters.put, batch.len());
        self.counters.batch_size.record(batch.len() as u64);
        let asked = std::time::Instant::now();
        let Put { outcome, reported } = self.instance.put(batch);
        self.counters.batch_time.record_time(asked.elapsed());
        let reported_places: Vec<(String, i32, i64)> =
            reported.iter().map(|r| (r.topic.clone(), r.partition, r.offset)).collect();
        // Reported records are dealt with first: without tolerance the first fails the task with
        // the plugin's reason, even when the plugin then failed the put because of it.
        self.errant(reported, originals.as_deref())?;
        match outcome {
            Ok(()) => {
                self.tolerance.succeeded();
                self.uncommitted.extend(ranges.into_iter().map(|(tp, _, next)| (tp, next)));
                Ok(())
            }
            Err(e @ PluginError::Retriable(_)) => match self.tolerance.retry() {
                Retry::After(pause) => {
                    tracing::warn!(
                        task = self.label.as_str(),
                        "put failed with a retriable error, delivering the batch again in {} ms: {e}",
                        pause.as_millis()
                    );
                    let rewind = ranges.into_iter().map(|(tp, first, _)| (tp, first)).collect();
                    *self.consumer.context().rewind.locked() = Some(rewind);
                    self.rewinds += 1;
                    self.stop.sleep(pause);
                    Ok(())
                }
                Retry::Spent(elapsed) => {
                    let message = format!(
                        "the plugin {} could not write the batch: its put failed with a retriable error ({}): {e}",
                        self.class,
                        self.tolerance.retried_for(elapsed)
                    );
                    if !self.tolerance.policy().tolerate_all {
                        return Err(TaskFailure::new(message));
                    }
                    // errors.tolerance=all: every record of the batch the plugin did not report
                    // itself is skipped, and the task goes on past them.
                    for (topic, partition, offset) in put {
                        if reported_places.iter().any(|p| p.2 == offset && p.1 == partition && p.0 == topic) {
                            continue;
                        }
                        let failure = RecordFailure {
                            stage: Stage::TaskPut,
                            class: self.class.clone(),
                            message: format!("{message} (record {topic}-{partition} offset {offset})"),
                        };
                        let original = originals.as_deref().and_then(|o| {
                            o.iter().find(|r| r.offset == offset && r.partition == partition && r.topic == topic)
                        });
                        let about = || {
                            format!("the consumed record {{topic='{topic}', partition={partition}, offset={offset}}}")
                        };
                        if let (Some(queue), Some(original)) = (&self.dead_letter, original) {
                            queue.send(original, &failure)?;
                        }
                        self.tolerance.skip(failure, about)?;
                    }
                    self.uncommitted.extend(ranges.into_iter().map(|(tp, _, next)| (tp, next)));
                    Ok(())
                }
            },
            Err(e) => Err(TaskFailure::from_plugin(&e)),
        }
    }

    /// The batch as the plugin takes it: read by the converters (on the fetch thread) when the
    /// plugin takes data or the connector has transforms (transforms work on data, as in
    /// Connect), through the transforms, and written back to bytes for a plugin that takes
    /// bytes. A record that a converter or a transform fails on fails the task, or is skipped
    /// under errors.tolerance=all (and sent to the dead-letter queue as it was read, if there is
    /// one).
    fn prepare(
        &mut self,
        batch: Vec<SinkRecord>,
        was_read: bool,
        unreadable: Vec<(usize, RecordFailure)>,
        originals: Option<&[SinkRecord]>,
    ) -> Result<Vec<SinkRecord>, TaskFailure> {
        if !was_read {
            return Ok(batch);
        }
        let takes_data = self.instance.takes_data();
        let log_records = self.tolerance.policy().log_messages;
        // Each record with its place in the batch (for its original) and, under
        // errors.log.include.messages, what the log says of it should it be skipped.
        let mut read = Vec::with_capacity(batch.len());
        let mut unreadable = unreadable.into_iter().peekable();
        for (i, record) in batch.into_iter().enumerate() {
            let about = log_records.then(|| About::of(&record));
            match unreadable.next_if(|(at, _)| *at == i) {
                None => read.push((i, about, record)),
                Some((_, failure)) => self.skip(failure, originals.and_then(|o| o.get(i)), about)?,
            }
        }
        let transformed: Vec<(usize, Option<About>, Transformed)> = if self.transforms.is_empty() {
            read.into_iter().map(|(i, about, record)| (i, about, Ok(Some(record)))).collect()
        } else {
            let mut places = Vec::with_capacity(read.len());
            let mut records = Vec::with_capacity(read.len());
            for (i, about, r) in read {
                places.push((i, about, r.partition, r.offset));
                let SinkRecord { topic, partition, offset, key, value, headers, timestamp } = r;
                records.push(wharf_connect::transform::Record {
                    topic,
                    partition: Some(partition),
                    offset: Some(offset),
                    key,
                    value,
                    headers,
                    timestamp,
                });
            }
            let results = self.transforms.apply(records);
            places
                .into_iter()
                .zip(results)
                .map(|((i, about, partition, offset), result)| {
                    let result = match result {
                        Ok(Some(t)) => Ok(Some(SinkRecord {
                            topic: t.topic,
                            partition: t.partition.unwrap_or(partition),
                            offset,
                            key: t.key,
                            value: t.value,
                            headers: t.headers,
                            timestamp: t.timestamp,
                        })),
                        Ok(None) => Ok(None),
                        Err(e) => Err(RecordFailure {
                            stage: Stage::Transformation,
                            class: e.class,
                            message: format!("{} (partition {partition}, offset {offset})", e.message),
                        }),
                    };
                    (i, about, result)
                })
                .collect()
        };
        let mut kept = Vec::with_capacity(transformed.len());
        for (i, about, result) in transformed {
            let result = match result {
                Ok(Some(mut record)) if !takes_data => {
                    self.converters.sink_record_to_bytes(&mut record).map(|()| Some(record))
                }
                other => other,
            };
            match result {
                Ok(Some(record)) => kept.push(record),
                Ok(None) => {}
                Err(failure) => self.skip(failure, originals.and_then(|o| o.get(i)), about)?,
            }
        }
        Ok(kept)
    }

    /// A record a converter or a transform failed on: the task fails, or under
    /// errors.tolerance=all the record is skipped, to the dead-letter queue as it was read if
    /// there is one.
    fn skip(
        &mut self,
        failure: RecordFailure,
        original: Option<&SinkRecord>,
        about: Option<About>,
    ) -> Result<(), TaskFailure> {
        if let (Some(queue), Some(original), true) = (&self.dead_letter, original, self.tolerance.policy().tolerate_all)
        {
            queue.send(original, &failure)?;
        }
        self.tolerance.skip(failure, || about.map_or_else(|| "a record".to_string(), |a| a.to_string()))
    }

    /// The records the plugin reported as errant during a put (Kafka Connect's errant record
    /// reporter): each fails the task, or is skipped under errors.tolerance=all and written as
    /// it was read to the dead-letter queue, if there is one.
    fn errant(&mut self, reported: Vec<ErrantReport>, originals: Option<&[SinkRecord]>) -> Result<(), TaskFailure> {
        for report in reported {
            let ErrantReport { topic, partition, offset, reason } = report;
            let failure = RecordFailure {
                stage: Stage::TaskPut,
                class: self.class.clone(),
                message: format!(
                    "the plugin {} could not write the record at {topic}-{partition} offset {offset}: {reason}",
                    self.class
                ),
            };
            if let (Some(queue), Some(originals), true) =
                (&self.dead_letter, originals, self.tolerance.policy().tolerate_all)
            {
                let original =
                    originals.iter().find(|r| r.offset == offset && r.partition == partition && r.topic == topic);
                if let Some(original) = original {
                    queue.send(original, &failure)?;
                }
            }
            self.tolerance.skip(failure, || {
                format!("the consumed record {{topic='{topic}', partition={partition}, offset={offset}}}")
            })?;
        }
        Ok(())
    }

    /// Asks the plugin to make everything durable, then commits the matching offsets to Kafka.
    fn flush_and_commit(&mut self) -> Result<(), TaskFailure> {
        if self.uncommitted.is_empty() {
            return Ok(());
        }
        if let Some(failure) = self.consumer.context().fenced(&self.consumer) {
            return Err(failure);
        }
        crate::metrics::tasks::TaskCounters::add(&self.counters.commits_started, 1);
        let started = std::time::Instant::now();
        // Skipped records reach their dead-letter queue before anything past them is committed.
        if let Some(queue) = &self.dead_letter {
            queue.flush()?;
        }
        self.tolerance.report();
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
        self.consumer.commit(&list, CommitMode::Sync).map_err(|e| {
            self.consumer.context().fenced(&self.consumer).unwrap_or_else(|| {
                TaskFailure::new(format!("cannot commit offsets to Kafka after the plugin flushed: {e}"))
            })
        })?;
        tracing::debug!(
            task = self.label.as_str(),
            "committed offsets {}",
            offsets.iter().map(|o| format!("{}-{}@{}", o.topic, o.partition, o.offset)).collect::<Vec<_>>().join(", ")
        );
        self.uncommitted.clear();
        self.counters.commit_time.record_time(started.elapsed());
        Ok(())
    }

    /// Replaces the plugin's instance and its chain with fresh ones once the old one flushed
    /// and its offsets are committed: the old one's partitions are closed, then opened on the
    /// new one.
    fn recycle(&mut self) -> Result<(), TaskFailure> {
        // Fenced meanwhile, the partitions are another run's: nothing of theirs is reopened.
        if let Some(failure) = self.consumer.context().fenced(&self.consumer) {
            return Err(failure);
        }
        self.flush_and_commit()?;
        let Some(recycler) = &mut self.recycle else {
            return Ok(());
        };
        let (instance, transforms) = recycler.reopen()?;
        let mut old = std::mem::replace(&mut self.instance, instance);
        // The old chain's transform plugins close as it goes.
        self.transforms = transforms;
        let partitions: Vec<TopicPartition> = self.assigned.iter().cloned().collect();
        let closed = match partitions.is_empty() {
            true => Ok(()),
            false => old.close_partitions(&partitions),
        };
        // As when partitions are revoked, a plugin that cannot close them fails the task.
        closed.map_err(|e| TaskFailure::from_plugin(&e))?;
        if let Err(e) = old.close() {
            tracing::warn!(task = self.label.as_str(), "the replaced instance's close failed: {e}");
        }
        match partitions.is_empty() {
            true => Ok(()),
            false => self.instance.open_partitions(&partitions).map_err(|e| TaskFailure::from_plugin(&e)),
        }
    }

    fn finish(
        mut self,
        outcome: Result<(), TaskFailure>,
        fetched: Receiver<Fetched>,
        fetch_thread: Option<crate::sync::Stoppable>,
    ) -> TaskReport {
        // A task fenced by now ends as superseded, whatever else stopped it.
        let outcome = match self.consumer.context().fenced(&self.consumer).filter(|f| f.superseded) {
            Some(fenced) => Err(fenced),
            None => outcome,
        };
        let committed = if outcome.is_ok() { self.flush_and_commit() } else { Ok(()) };
        let superseded = [&outcome, &committed].iter().any(|r| r.as_ref().is_err_and(|f| f.superseded));
        // The plugin is closed before the consumer leaves the group, so the revocation that
        // leaving causes finds nothing left to flush. A superseded task's plugin is not asked to
        // close: closing may write what it holds, and another run owns those records now.
        let Delivery { instance, consumer, departure, .. } = self;
        let closed = match superseded {
            true => Ok(()),
            false => instance.close().map_err(|e| TaskFailure::from_plugin(&e)),
        };
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
        let member_id = crate::kafka::member_id(&consumer);
        drop(consumer);
        // A superseded member's place is another run's now: there is nothing of its own to leave.
        if let (Some(departure), Some(member_id), false) = (departure, member_id, superseded) {
            departure.park(member_id);
        }
        TaskReport { outcome: outcome.and(committed).and(closed) }
    }
}

/// What the transform chain made of one record read for a sink: kept (changed or not), dropped
/// (`None`), or failed.
type Transformed = Result<Option<SinkRecord>, RecordFailure>;
