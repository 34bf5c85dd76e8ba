//! The source task loop: poll the plugin → produce to Kafka → once the broker acknowledged,
//! store source offsets every `offset.flush.interval.ms` → tell the plugin to commit.
//!
//! Two threads share the work so that the plugin's `poll` overlaps handing records to the
//! producer: the task thread owns the plugin and the offset store; the send thread owns the
//! sending, and knows which records reached the producer, so only their offsets are stored.
//! The producer is the worker's, shared with every task of the same producer settings
//! (`kafka::producers`); the task counts its own records and waits only for them.
//!
//! Under `exactly.once.source.support=enabled` a task is transactional (`Transactional`): it has
//! a producer of its own under `transactional.id` `<group.id>-<connector>-<task>`, and the send
//! thread writes its records and then their source offsets (to the offset topic) in one
//! transaction, committed at the connector's `transaction.boundary`: after every batch, or every
//! interval, or where the plugin asks (`transaction.boundary=connector`: the batch is handed over
//! in pieces, each ended by the commit or abort the plugin asked for after its last record). A
//! record or an offset of a transaction that is not committed is never visible to a
//! `read_committed` consumer, and a task that takes over reads the offsets of the last commit.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header as KafkaHeader, OwnedHeaders};
use rdkafka::producer::Producer;

use super::recycle::Recycler;
use super::tolerance::{RecordFailure, Retry, Stage};
use super::{TaskFailure, TaskReport};
use crate::config::ReservedTopics;
use crate::kafka::producers::{Deliveries, ProducerPool, TaskProducer};
use crate::runtime::{End, SourceInstance, TransactionEnds};
use crate::storage::OffsetStore;
use wharf_connect::model::{OffsetMap, PolledRecord, Scalar, SourceRecord};

/// Pauses between empty polls grow, doubling, from the first to the last value; a batch with
/// records starts them again from the first. An idle task is polled once a second, as Kafka
/// Connect's FileStreamSource waits a second when it finds nothing: a thousand idle tasks cost
/// a thousand calls a second, and a new record waits at most a second.
const IDLE_BACKOFF_MIN: Duration = Duration::from_millis(1);
const IDLE_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Pause after a retriable error that errors.tolerance=all went past, before polling again.
const TOLERATED_RETRY_PAUSE: Duration = Duration::from_millis(300);
/// Pause when the producer's queue is full, before offering the record again.
const QUEUE_FULL_BACKOFF: Duration = Duration::from_millis(2);
/// Batches polled ahead of the send thread; with the producer's own queue
/// (`queue.buffering.max.messages`) this bounds what a source task holds in memory.
const SEND_AHEAD_BATCHES: usize = 2;
/// How often, while the send thread holds as many batches as it may, the plugin is asked to
/// keep its connections alive (`poll(0)`, plugins of 0.1.6 and later).
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(1);
/// The step in which the task waits for room in the send thread's queue.
const HAND_OVER_STEP: Duration = Duration::from_millis(1);
/// How long a transactional task's commit (or abort) may wait for Kafka: the producer's default
/// `transaction.timeout.ms`, after which the broker aborts the transaction by itself.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// The pause before a commit Kafka answered "try again" is asked again.
const COMMIT_RETRY_PAUSE: Duration = Duration::from_millis(100);
/// The most source partitions a batch may name for its offsets to be written ahead of its
/// records (`Sender::write_ahead`); a batch of more has them written at the commit.
const WRITE_AHEAD_PARTITIONS: usize = 64;

/// A transactional task's settings (`exactly.once.source.support=enabled`).
pub(super) struct Transactional {
    /// The producer's `transactional.id`, for messages.
    pub id: String,
    /// Where its transactions end (`transaction.boundary`).
    pub boundary: Boundary,
    /// The offset topic and its partition count: the task writes its offsets there itself.
    pub offsets_topic: String,
    pub offsets_partitions: i32,
}

/// Where a transactional task's transactions end (`transaction.boundary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Boundary {
    /// After every batch the plugin returns.
    Poll,
    /// Every so often (`transaction.boundary.interval.ms`).
    Interval(Duration),
    /// Where the plugin asks (`transaction-context`); the host commits nothing by itself.
    Connector,
}

/// The flush interval of a task whose plugin ends its transactions: none comes.
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

pub(super) struct SourceTaskRun {
    pub connector: String,
    pub label: String,
    pub instance: SourceInstance,
    pub producer: TaskProducer,
    /// The pool `producer` came from, told when Kafka refused one of the task's records.
    pub producers: Arc<ProducerPool>,
    pub offsets: Arc<dyn OffsetStore>,
    pub reserved: Arc<ReservedTopics>,
    pub flush_interval: Duration,
    pub flush_timeout: Duration,
    pub stop: Arc<crate::sync::Stop>,
    pub converters: super::converting::RecordConverters,
    pub transforms: wharf_connect::transform::TaskChain,
    /// Replaces the instance and its chain after `wasm.instance.recycle.records`.
    pub recycle: Option<Recycler<(SourceInstance, wharf_connect::transform::TaskChain)>>,
    pub tolerance: super::tolerance::Tolerance,
    /// The task's RUNNING status: the plugin's progress line, the count of skipped records.
    pub running: Arc<super::running::RunningStatus>,
    pub counters: Arc<crate::metrics::tasks::TaskCounters>,
    /// Records each topic the task writes to (`topic.tracking.enable`).
    pub tracked: super::topics::TopicTracker,
    /// Creates each topic the task writes to before its first record (`topic.creation.*`).
    pub creator: super::topic_creation::TopicCreator,
    /// Set when the task writes in transactions (`producer` is then its own).
    pub transactional: Option<Transactional>,
}

/// Latest offset of each source partition since the last flush, in the order partitions were
/// first seen. Consecutive records usually share a partition, so the last one is tried first;
/// otherwise an index finds it, so a task with many partitions costs O(1) per record.
#[derive(Default)]
struct PendingOffsets {
    latest: Vec<(OffsetMap, OffsetMap)>,
    index: HashMap<PartitionKey, usize>,
    last: Option<usize>,
    /// Bytes of every partition and offset held, bounded by `MAX_PENDING_OFFSET_BYTES`.
    bytes: usize,
}

/// What the partitions and offsets awaiting one flush may take: a plugin that names a new
/// partition with every record would otherwise grow host memory until the flush.
pub(super) const MAX_PENDING_OFFSET_BYTES: usize = 64 << 20;

/// A source partition as a map key: floats compare by their bits, so equal keys hash alike.
#[derive(Clone)]
struct PartitionKey(OffsetMap);

impl PartialEq for PartitionKey {
    fn eq(&self, other: &Self) -> bool {
        same_map(&self.0, &other.0)
    }
}

fn same_map(a: &OffsetMap, b: &OffsetMap) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|((k1, v1), (k2, v2))| k1 == k2 && same_scalar(v1, v2))
}

impl Eq for PartitionKey {}

impl std::hash::Hash for PartitionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for (key, value) in &self.0 {
            key.hash(state);
            match value {
                Scalar::Null => 0u8.hash(state),
                Scalar::Boolean(b) => (1u8, b).hash(state),
                Scalar::Integer(i) => (2u8, i).hash(state),
                Scalar::Float(f) => (3u8, f.to_bits()).hash(state),
                Scalar::Text(t) => (4u8, t).hash(state),
            }
        }
    }
}

fn same_scalar(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Float(x), Scalar::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn map_bytes(map: &OffsetMap) -> usize {
    map.iter().map(|(k, v)| k.len() + if let Scalar::Text(t) = v { t.len() } else { 8 }).sum()
}

impl PendingOffsets {
    /// Remembers `offset` as the latest of `partition`; `Err` with the bytes held when that
    /// would pass `MAX_PENDING_OFFSET_BYTES`.
    fn record(&mut self, partition: OffsetMap, offset: OffsetMap) -> Result<(), usize> {
        if partition.is_empty() && offset.is_empty() {
            return Ok(());
        }
        let key = PartitionKey(partition);
        let at = match self.last.filter(|&i| same_map(&self.latest[i].0, &key.0)) {
            Some(i) => Some(i),
            None => self.index.get(&key).copied(),
        };
        match at {
            Some(i) => {
                let entry = &mut self.latest[i];
                self.bytes = self.bytes - map_bytes(&entry.1) + map_bytes(&offset);
                entry.1 = offset;
                self.last = Some(i);
            }
            None => {
                self.bytes += map_bytes(&key.0) + map_bytes(&offset);
                self.index.insert(key.clone(), self.latest.len());
                self.last = Some(self.latest.len());
                self.latest.push((key.0, offset));
            }
        }
        if self.bytes > MAX_PENDING_OFFSET_BYTES {
            return Err(self.bytes);
        }
        Ok(())
    }

    fn take(&mut self) -> Vec<(OffsetMap, OffsetMap)> {
        self.index.clear();
        self.last = None;
        self.bytes = 0;
        std::mem::take(&mut self.latest)
    }
}

/// What the task thread asks of the send thread, in order.
enum ToSend {
    Records(Vec<Outgoing>),
    /// Wait until Kafka acknowledged everything sent so far, then answer; a transactional
    /// task's transaction ends as asked (a plain task's flush always commits).
    Flush(mpsc::Sender<Flushed>, End),
}

/// A polled record after the transforms: kept (changed or not), or dropped with its source
/// partition and offset.
enum Transformed {
    Kept(PolledRecord),
    Dropped(OffsetMap, OffsetMap),
}

/// One polled record on its way: sent to Kafka, or dropped by a transform, whose source offset
/// still counts once everything before it is acknowledged.
enum Outgoing {
    Send(SourceRecord),
    Dropped { source_partition: OffsetMap, source_offset: OffsetMap },
}

/// The send thread's answer to a flush.
struct Flushed {
    /// Records handed to the producer since the last flush Kafka acknowledged in full.
    sent: u64,
    /// The latest offset of each source partition among them; empty when Kafka did not
    /// acknowledge everything in time (they are kept for the next flush).
    offsets: Vec<(OffsetMap, OffsetMap)>,
    /// Kafka did not acknowledge within `offset.flush.timeout.ms` (the send thread said so).
    timed_out: bool,
}

/// The send thread: hands records to the producer, oldest first.
struct Sender {
    label: String,
    producer: Arc<TaskProducer>,
    flush_timeout: Duration,
    stop: Arc<crate::sync::Stop>,
    pending: PendingOffsets,
    sent: u64,
    /// Set when a record could not be handed over; every later record is dropped too, so that
    /// no offset past a lost record is ever stored. The task then fails or stops, and its
    /// records are polled again from the last stored offsets.
    given_up: bool,
    tracked: super::topics::TopicTracker,
    creator: super::topic_creation::TopicCreator,
    /// A transactional task's transaction.
    transaction: Option<Transaction>,
}

/// The send thread's side of a transactional task.
struct Transaction {
    settings: Transactional,
    connector: String,
    /// A transaction is open: something was sent since the last commit.
    open: bool,
    /// The source offsets written in the open transaction ahead of its records
    /// (`Sender::write_ahead`), which its commit need not write again.
    written: Vec<(OffsetMap, OffsetMap)>,
    /// Where committed transactions are counted by their records (the task's metrics).
    sizes: Arc<crate::metrics::tasks::TaskCounters>,
}

impl Sender {
    fn run(mut self, requests: Receiver<ToSend>) {
        for request in requests {
            match request {
                ToSend::Records(records) => {
                    self.tracked.refresh();
                    self.write_ahead(&records);
                    for record in records {
                        if self.given_up {
                            break;
                        }
                        match record {
                            Outgoing::Send(record) => self.send(record),
                            Outgoing::Dropped { source_partition, source_offset } => {
                                self.remember(source_partition, source_offset)
                            }
                        }
                    }
                }
                ToSend::Flush(answer, End::Commit) => {
                    let _ = answer.send(self.flush());
                }
                ToSend::Flush(answer, End::Abort) => {
                    let _ = answer.send(self.abort_as_asked());
                }
            }
        }
        // A transaction still open when the task ends (it failed, or was stopped without its
        // last commit) is aborted: nothing of it is ever visible to read_committed consumers.
        self.abort();
    }

    /// Opens a transaction unless one is open (or the task is not transactional); false when
    /// Kafka refused, which fails the task.
    fn begin(&mut self) -> bool {
        let Some(transaction) = &mut self.transaction else { return true };
        if transaction.open {
            return true;
        }
        match self.producer.transactions().begin_transaction() {
            Ok(()) => {
                transaction.open = true;
                true
            }
            Err(e) => {
                let message = transaction.refusal(self.producer.deliveries(), "begin a transaction", &e, true);
                self.producer.deliveries().fail(message);
                self.given_up = true;
                false
            }
        }
    }

    fn abort(&mut self) {
        let Some(transaction) = &mut self.transaction else { return };
        if !transaction.open {
            return;
        }
        transaction.open = false;
        transaction.written.clear();
        if let Err(e) = self.producer.transactions().abort_transaction(TRANSACTION_TIMEOUT) {
            // A fenced producer's transaction is aborted by its successor; otherwise the broker
            // aborts it after transaction.timeout.ms.
            tracing::warn!(
                task = self.label.as_str(),
                "could not abort the open transaction of transactional.id {} (Kafka aborts it by itself after the \
                 producer's transaction.timeout.ms); nothing of it is visible to read_committed consumers: {e}",
                transaction.settings.id
            );
        }
    }

    /// A transactional task writes a batch's source offsets (the last of each source partition)
    /// ahead of its records, in the same transaction: the first record and the offsets then
    /// bring the transaction its partitions together (librdkafka adds the partitions of a
    /// transaction in one request for those it meets within a millisecond, and each request
    /// costs the broker a write to its transaction log), where offsets written at the commit
    /// would cost one more. Nothing of either is visible before the commit, so their order
    /// does not matter. A batch of more than `WRITE_AHEAD_PARTITIONS` source partitions has its
    /// offsets written at the commit instead.
    fn write_ahead(&mut self, records: &[Outgoing]) {
        if self.given_up || self.transaction.is_none() {
            return;
        }
        let mut latest: Vec<(&OffsetMap, &OffsetMap)> = Vec::new();
        for record in records.iter().rev() {
            let (partition, offset) = match record {
                Outgoing::Send(r) => (&r.source_partition, &r.source_offset),
                Outgoing::Dropped { source_partition, source_offset } => (source_partition, source_offset),
            };
            if (partition.is_empty() && offset.is_empty()) || latest.iter().any(|(p, _)| same_map(p, partition)) {
                continue;
            }
            if latest.len() == WRITE_AHEAD_PARTITIONS {
                return;
            }
            latest.push((partition, offset));
        }
        if latest.is_empty() || !self.begin() {
            return;
        }
        let owned: Vec<(OffsetMap, OffsetMap)> =
            latest.into_iter().rev().map(|(p, o)| (p.clone(), o.clone())).collect();
        if self.write_offsets(&owned) {
            if let Some(transaction) = &mut self.transaction {
                for (partition, offset) in owned {
                    match transaction.written.iter_mut().find(|(p, _)| same_map(p, &partition)) {
                        Some(entry) => entry.1 = offset,
                        None => transaction.written.push((partition, offset)),
                    }
                }
            }
        }
    }

    /// Writes source offsets to the offset topic in the open transaction; false when the
    /// producer refused, which fails the task.
    fn write_offsets(&mut self, offsets: &[(OffsetMap, OffsetMap)]) -> bool {
        let Some(transaction) = &self.transaction else { return false };
        let (topic, partitions) = (&transaction.settings.offsets_topic, transaction.settings.offsets_partitions);
        for (partition, offset) in offsets {
            let (target, key, value) =
                crate::storage::offsets::offset_record(&transaction.connector, partition, Some(offset), partitions);
            let mut record = self.producer.bookkeeping_record(topic).key(key.as_bytes()).partition(target);
            if let Some(value) = value.as_deref() {
                record = record.payload(value);
            }
            loop {
                match self.producer.send_bookkeeping(record) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                        record = returned;
                        std::thread::sleep(QUEUE_FULL_BACKOFF);
                    }
                    Err((error, _)) => {
                        let message = transaction.refusal(
                            self.producer.deliveries(),
                            "write the source offsets to the offset topic",
                            &error,
                            true,
                        );
                        self.producer.deliveries().fail(message);
                        self.given_up = true;
                        return false;
                    }
                }
            }
        }
        true
    }

    fn send(&mut self, record: SourceRecord) {
        if let Err(why) = self.creator.ensure(&record.topic) {
            self.producer.deliveries().fail(why);
            self.given_up = true;
            return;
        }
        if !self.begin() {
            return;
        }
        self.tracked.used(&record.topic);
        let headers = (!record.headers.is_empty()).then(|| {
            record.headers.iter().fold(OwnedHeaders::new_with_capacity(record.headers.len()), |h, header| {
                h.insert(KafkaHeader { key: &header.key, value: header.value.as_deref() })
            })
        });
        let mut message = self.producer.record(&record.topic);
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
                    // Back-pressure: the producer holds as much as it may; wait for deliveries,
                    // unless the task is being stopped (Kafka may be gone).
                    if self.stop.is_stopped() {
                        self.given_up = true;
                        return;
                    }
                    message = returned;
                    std::thread::sleep(QUEUE_FULL_BACKOFF);
                }
                Err((error, _)) => {
                    self.producer.deliveries().fail(format!("cannot send a record to topic {}: {error}", record.topic));
                    self.given_up = true;
                    return;
                }
            }
        }
        self.sent += 1;
        self.remember(record.source_partition, record.source_offset);
    }

    /// Holds a record's source offset for the next flush.
    fn remember(&mut self, source_partition: OffsetMap, source_offset: OffsetMap) {
        if let Err(bytes) = self.pending.record(source_partition, source_offset) {
            self.producer.deliveries().fail(format!(
                "the plugin's source partitions and offsets since the last offset flush take {bytes} bytes, more than \
                 the {MAX_PENDING_OFFSET_BYTES} a task may hold ({} distinct source partitions); a source should name \
                 few partitions (a file, a table) and small offsets",
                self.pending.latest.len()
            ));
            self.given_up = true;
        }
    }

    fn flush(&mut self) -> Flushed {
        if self.transaction.is_some() {
            return self.commit();
        }
        if !self.producer.deliveries().wait_all(self.flush_timeout) {
            tracing::warn!(
                task = self.label.as_str(),
                "Kafka did not acknowledge every record within offset.flush.timeout.ms={} ({} still waiting); \
                 offsets are kept for the next flush",
                self.flush_timeout.as_millis(),
                self.producer.deliveries().in_flight()
            );
            return Flushed { sent: self.sent, offsets: Vec::new(), timed_out: true };
        }
        let flushed = Flushed { sent: self.sent, offsets: self.pending.take(), timed_out: false };
        self.sent = 0;
        flushed
    }

    /// A transactional task's flush: the source offsets of the records sent since the last
    /// commit go to the offset topic in the same transaction, which is then committed. Offsets
    /// are answered only once Kafka committed them; a commit Kafka refuses is aborted and fails
    /// the task (its failure is kept in the deliveries), and nothing of it is visible.
    fn commit(&mut self) -> Flushed {
        self.commit_counted(true)
    }

    /// `commit`, its transaction counted in the task's transaction sizes unless it only holds
    /// the offsets of an aborted one (`counted` false).
    fn commit_counted(&mut self, counted: bool) -> Flushed {
        let sent = std::mem::take(&mut self.sent);
        // Nothing committed: the task thread then tells the plugin nothing either.
        let nothing = Flushed { sent: 0, offsets: Vec::new(), timed_out: false };
        if self.given_up {
            // The failure is kept; the open transaction is aborted when the thread ends.
            return nothing;
        }
        let offsets = self.pending.take();
        let open = self.transaction.as_ref().is_some_and(|t| t.open);
        if !open && offsets.is_empty() {
            return nothing;
        }
        if !self.begin() {
            return nothing;
        }
        // Only what the transaction does not hold yet: the offsets written ahead of the batches
        // are usually all of them.
        let written = self.transaction.as_mut().map(|t| std::mem::take(&mut t.written)).unwrap_or_default();
        let missing: Vec<(OffsetMap, OffsetMap)> = offsets
            .iter()
            .filter(|(partition, offset)| !written.iter().any(|(p, o)| same_map(p, partition) && same_map(o, offset)))
            .cloned()
            .collect();
        if !self.write_offsets(&missing) {
            return nothing;
        }
        // Flushed first: the commit's own wait for outstanding records sleeps in steps of 100 ms
        // (see `kafka::flush`). Nothing is committing yet if that fails, so it may be aborted.
        let committed = match crate::kafka::flush(self.producer.transactions(), TRANSACTION_TIMEOUT) {
            Err(e) => Err((e, true)),
            Ok(()) => self.commit_retrying().map_err(|e| {
                let abortable = matches!(&e, KafkaError::Transaction(t) if t.txn_requires_abort());
                (e, abortable)
            }),
        };
        let Some(transaction) = &mut self.transaction else { return nothing };
        transaction.open = false;
        match committed {
            Ok(()) => {
                // Every record sent since the last commit is in this transaction.
                if let Some(sizes) = transaction.sizes.transactions.get().filter(|_| counted) {
                    sizes.committed(sent);
                }
                Flushed { sent, offsets, timed_out: false }
            }
            Err((e, abortable)) => {
                let message = transaction.refusal(self.producer.deliveries(), "commit its transaction", &e, abortable);
                if abortable && !self.producer.deliveries().fenced() {
                    let _ = self.producer.transactions().abort_transaction(TRANSACTION_TIMEOUT);
                }
                self.producer.deliveries().fail(message);
                self.given_up = true;
                nothing
            }
        }
    }

    /// The plugin asked to abort the open transaction (`transaction-context`): once Kafka
    /// answered every record sent (an abort would purge those still queued, which then count
    /// as refused), it is aborted, and then, as Kafka Connect does, the source offsets of its
    /// records are committed in a transaction of their own, so that the plugin is not handed
    /// them again: an aborted record is skipped for good.
    fn abort_as_asked(&mut self) -> Flushed {
        let nothing = Flushed { sent: 0, offsets: Vec::new(), timed_out: false };
        if self.given_up {
            return nothing;
        }
        let Some(transaction) = &mut self.transaction else { return self.flush() };
        if transaction.open {
            let aborted = crate::kafka::flush(self.producer.transactions(), TRANSACTION_TIMEOUT)
                .and_then(|()| self.producer.transactions().abort_transaction(TRANSACTION_TIMEOUT));
            if let Err(e) = aborted {
                let deliveries = self.producer.deliveries();
                let message = match crate::kafka::producers::fenced(&e) {
                    true => transaction.refusal(deliveries, "abort its transaction as its plugin asked", &e, true),
                    false => format!(
                        "the task could not abort its transaction as its plugin asked (transactional.id {}): {e}; \
                         nothing of it is visible to read_committed consumers (Kafka aborts it by itself after the \
                         producer's transaction.timeout.ms), and the task, restarted, polls its records again from \
                         the offsets last committed",
                        transaction.settings.id
                    ),
                };
                deliveries.fail(message);
                self.given_up = true;
                // Still open: the send thread's end tries the abort again.
                return nothing;
            }
            transaction.open = false;
            transaction.written.clear();
            tracing::debug!(
                task = self.label.as_str(),
                "aborted a transaction of {} record(s) as the plugin asked; their offsets are committed next",
                self.sent
            );
            self.sent = 0;
        }
        self.commit_counted(false)
    }

    /// Commits the open transaction, asking again while Kafka answers that it may (a
    /// coordinator that moved, a commit that timed out) until `TRANSACTION_TIMEOUT`; a commit
    /// still unconfirmed then may yet end either way, records and offsets together.
    fn commit_retrying(&self) -> rdkafka::error::KafkaResult<()> {
        let deadline = Instant::now() + TRANSACTION_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.producer.transactions().commit_transaction(left) {
                Err(KafkaError::Transaction(t)) if t.is_retriable() && Instant::now() < deadline => {
                    tracing::debug!(task = self.label.as_str(), "asking Kafka again to commit the transaction ({t})");
                    std::thread::sleep(COMMIT_RETRY_PAUSE);
                }
                other => return other,
            }
        }
    }
}

impl Transaction {
    /// What a refused transactional step says, noting when Kafka fenced the producer, and
    /// whether the transaction is aborted or its end unconfirmed.
    fn refusal(&self, deliveries: &Deliveries, step: &str, e: &KafkaError, aborted: bool) -> String {
        if crate::kafka::producers::fenced(e) {
            deliveries.mark_fenced();
            format!("the task could not {step}: {} ({e})", fenced_message(&self.settings.id))
        } else if !aborted {
            format!(
                "the task could not {step} (transactional.id {}): Kafka did not confirm its end within {} s, and it \
                 ends whole either way, its records with their offsets; the task, restarted, goes on from the \
                 offsets last committed ({e})",
                self.settings.id,
                TRANSACTION_TIMEOUT.as_secs()
            )
        } else {
            format!(
                "the task could not {step} (transactional.id {}); the transaction is aborted, so nothing of it is \
                 visible to read_committed consumers, and the task, restarted, polls its records again from the \
                 offsets last committed ({e})",
                self.settings.id
            )
        }
    }
}

impl SourceTaskRun {
    pub(super) fn run(self) -> TaskReport {
        let SourceTaskRun {
            connector,
            label,
            instance,
            producer,
            producers,
            offsets,
            reserved,
            flush_interval,
            flush_timeout,
            stop,
            converters,
            transforms,
            recycle,
            tolerance,
            running,
            counters,
            tracked,
            creator,
            transactional,
        } = self;
        counters.count_acked(producer.deliveries().acked_counter());
        // Under transaction.boundary=interval the interval takes the place of the flush interval;
        // under transaction.boundary=connector no flush comes but the ones the plugin asks for.
        let boundary = transactional.as_ref().map(|t| t.boundary);
        let flush_interval = match boundary {
            Some(Boundary::Interval(interval)) => interval,
            Some(Boundary::Connector) => NEVER,
            Some(Boundary::Poll) | None => flush_interval,
        };
        let transaction = transactional.map(|settings| Transaction {
            settings,
            connector: connector.clone(),
            open: false,
            written: Vec::new(),
            sizes: {
                let _ = counters.transactions.set(crate::metrics::tasks::TransactionSizes::new());
                counters.clone()
            },
        });
        let transactional_id = transaction.as_ref().map(|t| t.settings.id.clone());
        let producer = Arc::new(producer);
        let (to_send, requests) = mpsc::sync_channel(SEND_AHEAD_BATCHES);
        let sender = Sender {
            label: label.clone(),
            producer: producer.clone(),
            flush_timeout,
            stop: stop.clone(),
            pending: PendingOffsets::default(),
            sent: 0,
            given_up: false,
            tracked,
            creator,
            transaction,
        };
        let send_thread =
            match std::thread::Builder::new().name(format!("{label}-send")).spawn(move || sender.run(requests)) {
                Ok(handle) => handle,
                Err(e) => {
                    let failure = TaskFailure::new(format!("cannot start the thread that writes to Kafka: {e}"));
                    let _ = instance.close();
                    return TaskReport { outcome: Err(failure) };
                }
            };
        let mut task = Polling {
            connector,
            label,
            instance,
            producer,
            offsets,
            reserved,
            to_send,
            stop,
            converters,
            transforms,
            recycle,
            tolerance,
            running,
            counters,
            unflushed: false,
            transactional_id,
            boundary,
        };
        let outcome = task.poll_until_stopped(flush_interval);
        // Records handed to Kafka before a failure are still safe to commit once acknowledged.
        // A transactional task that failed commits nothing more, as Kafka Connect's: its open
        // transaction is aborted as the send thread ends.
        // A plugin that ends its own transactions has its open one aborted, as Kafka Connect
        // does: the host commits nothing it did not ask for.
        let flushed = match (task.transactional_id.is_some() && outcome.is_err()) || task.plugin_ends_transactions() {
            true => Ok(()),
            false => task.flush(),
        };
        let Polling { instance, to_send, producer, .. } = task;
        drop(to_send);
        let _ = send_thread.join();
        if producer.deliveries().refused() > 0 || producer.deliveries().failure().is_some() {
            // A refusal, or a send the producer did not take, may have left the shared producer
            // unusable (an idempotent producer's fatal error): the next task, this one restarted
            // included, gets a new one (a failure of another kind only costs a new producer).
            producers.retire(&producer);
        }
        let closed = instance.close().map_err(|e| TaskFailure::from_plugin(&e));
        TaskReport { outcome: outcome.and(flushed).and(closed) }
    }
}

/// The task thread's side: the plugin and the offset store.
struct Polling {
    connector: String,
    label: String,
    instance: SourceInstance,
    producer: Arc<TaskProducer>,
    offsets: Arc<dyn OffsetStore>,
    reserved: Arc<ReservedTopics>,
    to_send: SyncSender<ToSend>,
    stop: Arc<crate::sync::Stop>,
    converters: super::converting::RecordConverters,
    transforms: wharf_connect::transform::TaskChain,
    /// Replaces the instance and its chain after `wasm.instance.recycle.records`.
    recycle: Option<Recycler<(SourceInstance, wharf_connect::transform::TaskChain)>>,
    /// What a record that a transform or a converter fails on does (errors.*).
    tolerance: super::tolerance::Tolerance,
    running: Arc<super::running::RunningStatus>,
    counters: Arc<crate::metrics::tasks::TaskCounters>,
    /// Records (or dropped records' offsets) went to the send thread since the last flush that
    /// Kafka acknowledged in full.
    unflushed: bool,
    /// A transactional task's producer's transactional id: the send thread writes the offsets
    /// it commits.
    transactional_id: Option<String>,
    /// A transactional task's `transaction.boundary`; none for a plain task.
    boundary: Option<Boundary>,
}

impl Polling {
    fn poll_until_stopped(&mut self, flush_interval: Duration) -> Result<(), TaskFailure> {
        let mut last_flush = Instant::now();
        let mut idle = IDLE_BACKOFF_MIN;
        loop {
            if self.stop.is_stopped() {
                return Ok(());
            }
            if let Some(failure) = self.producer.deliveries().failure() {
                return Err(self.failure(failure));
            }
            if last_flush.elapsed() >= flush_interval {
                self.flush()?;
                last_flush = Instant::now();
                if let Some(recycler) = &mut self.recycle {
                    recycler.flushed();
                }
            }
            if self.recycle.as_ref().is_some_and(Recycler::due) {
                self.recycle()?;
            }
            let asked = Instant::now();
            let polled = self.instance.poll();
            let took = asked.elapsed();
            self.show_progress();
            let records = match polled {
                Ok(records) => {
                    self.tolerance.succeeded();
                    records
                }
                Err(e) if e.is_retriable() => {
                    // As Kafka Connect does after a poll that gave nothing: a commit or an abort
                    // the plugin asked of the batch ends what is open now.
                    if self.plugin_ends_transactions() {
                        if let Some(end) = self.instance.batch_end_asked() {
                            self.end_transaction(end)?;
                        }
                    }
                    match self.tolerance.retry() {
                        Retry::After(pause) => {
                            tracing::warn!(
                                task = self.label.as_str(),
                                "poll failed with a retriable error, polling again in {} ms: {e}",
                                pause.as_millis()
                            );
                            self.pause(pause);
                        }
                        Retry::Spent(elapsed) => {
                            let retried = self.tolerance.retried_for(elapsed);
                            if !self.tolerance.policy().tolerate_all {
                                return Err(TaskFailure::new(format!(
                                    "poll failed with a retriable error ({retried}): {e}"
                                )));
                            }
                            // errors.tolerance=all: a poll gives no record to skip; the task
                            // goes on polling.
                            tracing::warn!(
                                task = self.label.as_str(),
                                "poll failed with a retriable error ({retried}); errors.tolerance=all, so the task \
                                 goes on polling: {e}"
                            );
                            self.pause(TOLERATED_RETRY_PAUSE);
                        }
                    }
                    continue;
                }
                Err(e) => return Err(TaskFailure::from_plugin(&e)),
            };
            // Taken with every batch, an empty one too: a commit or an abort asked of the batch
            // ends what is open.
            let ends = match self.plugin_ends_transactions() {
                true => self.instance.transaction_ends(records.len()).map_err(|e| TaskFailure::from_plugin(&e))?,
                false => TransactionEnds::default(),
            };
            if records.is_empty() {
                if let Some(end) = ends.batch {
                    self.end_transaction(end)?;
                }
                let until_flush = flush_interval.saturating_sub(last_flush.elapsed());
                self.pause(idle.min(until_flush));
                idle = (idle * 2).min(IDLE_BACKOFF_MAX);
                continue;
            }
            idle = IDLE_BACKOFF_MIN;
            let polled = records.len();
            // As Connect times a poll that returned records.
            self.counters.batch_time.record_time(took);
            self.counters.batch_size.record(records.len() as u64);
            crate::metrics::tasks::TaskCounters::add(&self.counters.read, records.len());
            if let Some(recycler) = &mut self.recycle {
                recycler.count(records.len());
            }
            // Kafka Connect's order: transforms, then the converters. A record that a transform
            // or a converter fails on fails the task before anything of its batch is sent
            // (nothing after it may be committed; the batch is polled again on restart), unless
            // errors.tolerance=all skips it (its offset is then stored in turn).
            let transformed = self.transform(records)?;
            let kept = transformed.iter().filter_map(|r| match r {
                Transformed::Kept(record) => Some(record.topic.as_str()),
                Transformed::Dropped(..) => None,
            });
            if let Some(refusal) = self.reserved.refuse_any(kept) {
                // Nothing of the batch is sent: the task fails before its first record leaves.
                return Err(TaskFailure::new(format!(
                    "the plugin returned a record for a topic it may not write: {refusal}"
                )));
            }
            let records = self.convert(transformed)?;
            if self.plugin_ends_transactions() {
                self.hand_over_as_asked(records, polled, ends)?;
                continue;
            }
            if !self.hand_over(ToSend::Records(records))? {
                // Stopped: the loop ends, and nothing of the batch counts.
                continue;
            }
            self.unflushed = true;
            if self.boundary == Some(Boundary::Poll) {
                self.flush()?;
                last_flush = Instant::now();
            }
        }
    }

    /// Whether the plugin says where the task's transactions end (`transaction.boundary=connector`).
    fn plugin_ends_transactions(&self) -> bool {
        self.boundary == Some(Boundary::Connector)
    }

    /// Hands a batch over in the pieces the plugin's requests cut it into, each ended by the
    /// commit or abort asked after its last record; what follows the last request waits for a
    /// later one. `polled` is the records the plugin returned: the transforms and converters
    /// leave one outgoing entry each, sent or dropped, so that an index names the same record
    /// here. A stop ends the handing over at a piece's edge, and a piece dropped by a stop ends
    /// it too: nothing after it may be committed, and what is open is aborted as the task ends.
    fn hand_over_as_asked(
        &mut self,
        records: Vec<Outgoing>,
        polled: usize,
        ends: TransactionEnds,
    ) -> Result<(), TaskFailure> {
        if records.len() != polled {
            return Err(TaskFailure::new(format!(
                "the task's {polled} polled record(s) came out of its transforms and converters as {} entries, so \
                 the records its plugin named to end transactions cannot be found; nothing of the batch is sent",
                records.len()
            )));
        }
        let mut rest = records;
        let mut handed = 0;
        for (index, end) in ends.after {
            if self.stop.is_stopped() {
                return Ok(());
            }
            let tail = rest.split_off((index + 1 - handed).min(rest.len()));
            let piece = std::mem::replace(&mut rest, tail);
            handed = index + 1;
            if !self.hand_over(ToSend::Records(piece))? {
                return Ok(());
            }
            self.unflushed = true;
            self.end_transaction(end)?;
        }
        if !rest.is_empty() {
            if !self.hand_over(ToSend::Records(rest))? {
                return Ok(());
            }
            self.unflushed = true;
        }
        if let Some(end) = ends.batch.filter(|_| !self.stop.is_stopped()) {
            self.end_transaction(end)?;
        }
        Ok(())
    }

    /// Ends the open transaction as the plugin asked.
    fn end_transaction(&mut self, end: End) -> Result<(), TaskFailure> {
        self.finish(end)?;
        if let Some(recycler) = &mut self.recycle {
            recycler.flushed();
        }
        Ok(())
    }

    /// A failure the send thread kept; a task whose producer another run of it fenced was
    /// superseded (that run reports the task), which its message says first.
    fn failure(&self, message: String) -> TaskFailure {
        match (&self.transactional_id, self.producer.deliveries().fenced()) {
            // Stopped too: the worker gave the task up, and the run that took its place reports
            // it. A task fenced while this worker still runs it (by a transaction that outlived
            // transaction.timeout.ms, say) fails, and says so.
            (Some(id), true) if self.stop.is_stopped() => {
                TaskFailure::superseded(format!("{} ({message})", fenced_message(id)))
            }
            (Some(id), true) => TaskFailure::new(format!("{} ({message})", fenced_message(id))),
            _ => TaskFailure::new(message),
        }
    }

    /// The plugin's latest progress line, into the task's status when due.
    fn show_progress(&mut self) {
        self.running.show(self.instance.take_progress());
    }

    /// Hands a request to the send thread. While the thread holds as many as it may (Kafka is
    /// slow or away), the plugin is asked every `KEEP_ALIVE_INTERVAL` to keep its connections
    /// alive, so that a server it streams from does not give up on it meanwhile. A batch is
    /// dropped when the task stops meanwhile (neither sent nor its offsets stored), and the
    /// answer is false; a flush is always handed over (a stopping send thread skips what it
    /// holds).
    fn hand_over(&mut self, request: ToSend) -> Result<bool, TaskFailure> {
        let droppable = matches!(request, ToSend::Records(_));
        let mut request = request;
        let mut kept_alive = Instant::now();
        loop {
            match self.to_send.try_send(request) {
                Ok(()) => return Ok(true),
                Err(TrySendError::Disconnected(_)) => return Err(send_thread_gone()),
                Err(TrySendError::Full(back)) => request = back,
            }
            if self.stop.is_stopped() {
                if droppable {
                    return Ok(false);
                }
            } else if kept_alive.elapsed() >= KEEP_ALIVE_INTERVAL {
                self.keep_alive()?;
                kept_alive = Instant::now();
            }
            std::thread::sleep(HAND_OVER_STEP);
        }
    }

    /// The send thread's answer to a flush, keeping the plugin's connections alive while it
    /// waits for Kafka.
    fn flushed(&mut self, answered: Receiver<Flushed>) -> Result<Flushed, TaskFailure> {
        loop {
            match answered.recv_timeout(KEEP_ALIVE_INTERVAL) {
                Ok(flushed) => return Ok(flushed),
                Err(RecvTimeoutError::Disconnected) => return Err(send_thread_gone()),
                Err(RecvTimeoutError::Timeout) if !self.stop.is_stopped() => self.keep_alive()?,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// `poll(0)`: the plugin keeps its connections alive, reading nothing.
    fn keep_alive(&mut self) -> Result<(), TaskFailure> {
        match self.instance.keep_alive() {
            Ok(()) => {}
            Err(e) if e.is_retriable() => tracing::warn!(
                task = self.label.as_str(),
                "the plugin could not keep its connections alive while Kafka takes no records (a retriable error); it \
                 is asked again in {} ms: {e}",
                KEEP_ALIVE_INTERVAL.as_millis()
            ),
            Err(e) => return Err(TaskFailure::from_plugin(&e)),
        }
        self.show_progress();
        Ok(())
    }

    fn pause(&self, duration: Duration) {
        self.stop.sleep(duration);
    }

    /// The batch through the connector's transforms: each record kept (changed or not), or
    /// dropped with its source partition and offset (by a transform, or skipped under
    /// errors.tolerance=all when a transform fails on it); otherwise the failure names the record.
    fn transform(&mut self, records: Vec<PolledRecord>) -> Result<Vec<Transformed>, TaskFailure> {
        if self.transforms.is_empty() {
            return Ok(records.into_iter().map(Transformed::Kept).collect());
        }
        let mut offsets = Vec::with_capacity(records.len());
        let mut given = Vec::with_capacity(records.len());
        for polled in records {
            let PolledRecord { source_partition, source_offset, topic, partition, key, value, headers, timestamp } =
                polled;
            offsets.push((source_partition, source_offset));
            given.push(wharf_connect::transform::Record {
                topic,
                partition,
                offset: None,
                key,
                value,
                headers,
                timestamp,
            });
        }
        let results = self.transforms.apply(given);
        let mut out = Vec::with_capacity(results.len());
        for ((source_partition, source_offset), result) in offsets.into_iter().zip(results) {
            match result {
                Ok(Some(r)) => out.push(Transformed::Kept(PolledRecord {
                    source_partition,
                    source_offset,
                    topic: r.topic,
                    partition: r.partition,
                    key: r.key,
                    value: r.value,
                    headers: r.headers,
                    timestamp: r.timestamp,
                })),
                Ok(None) => out.push(Transformed::Dropped(source_partition, source_offset)),
                Err(e) => {
                    let failure = RecordFailure {
                        stage: Stage::Transformation,
                        class: e.class,
                        message: format!("{} (source offset {source_offset:?})", e.message),
                    };
                    let about = || format!("the source record with offset {source_offset:?}");
                    self.tolerance.skip(failure, about)?;
                    out.push(Transformed::Dropped(source_partition, source_offset));
                }
            }
        }
        Ok(out)
    }

    /// The kept records through the converters; a record a converter fails on fails the task,
    /// or is skipped under errors.tolerance=all (its offset is stored in turn).
    fn convert(&mut self, transformed: Vec<Transformed>) -> Result<Vec<Outgoing>, TaskFailure> {
        let tolerate = self.tolerance.policy().tolerate_all;
        let mut out = Vec::with_capacity(transformed.len());
        for r in transformed {
            match r {
                Transformed::Kept(record) => {
                    // The offsets of a record that may be skipped outlive its conversion.
                    let offsets = tolerate.then(|| (record.source_partition.clone(), record.source_offset.clone()));
                    match self.converters.source_record(record) {
                        Ok(converted) => out.push(Outgoing::Send(converted)),
                        Err(failure) => {
                            let about = || match &offsets {
                                Some((_, offset)) => format!("the source record with offset {offset:?}"),
                                None => "a source record".to_string(),
                            };
                            self.tolerance.skip(failure, about)?;
                            if let Some((source_partition, source_offset)) = offsets {
                                out.push(Outgoing::Dropped { source_partition, source_offset });
                            }
                        }
                    }
                }
                Transformed::Dropped(source_partition, source_offset) => {
                    out.push(Outgoing::Dropped { source_partition, source_offset })
                }
            }
        }
        self.tolerance.report();
        Ok(out)
    }

    /// Waits until Kafka acknowledged every record sent so far, then stores their offsets and
    /// tells the plugin. If Kafka is slow the offsets stay pending for the next flush.
    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.finish(End::Commit)
    }

    /// A flush whose transaction, for a transactional task, ends as `end` says: committed, or
    /// aborted with its records' offsets committed after it.
    fn finish(&mut self, end: End) -> Result<(), TaskFailure> {
        if !self.unflushed {
            // Nothing was handed over since the last flush that Kafka acknowledged in full: an
            // idle task asks nothing of its send thread.
            return Ok(());
        }
        crate::metrics::tasks::TaskCounters::add(&self.counters.commits_started, 1);
        let started = Instant::now();
        let (answer, answered) = mpsc::channel();
        // A flush is always handed over.
        let _ = self.hand_over(ToSend::Flush(answer, end))?;
        let flushed = self.flushed(answered)?;
        if flushed.timed_out {
            return Ok(());
        }
        self.unflushed = false;
        if let Some(failure) = self.producer.deliveries().failure() {
            return Err(self.failure(failure));
        }
        if flushed.sent == 0 && flushed.offsets.is_empty() {
            self.counters.commit_time.record_time(started.elapsed());
            return Ok(());
        }
        if self.transactional_id.is_some() {
            // Written by the send thread, in the transaction it committed.
            self.offsets.committed(&self.connector, &flushed.offsets);
        } else if !flushed.offsets.is_empty() {
            self.offsets.put(&self.connector, &flushed.offsets).map_err(|e| TaskFailure::new(e.to_string()))?;
            tracing::debug!(
                task = self.label.as_str(),
                "stored offsets of {} source partition(s) after {} record(s)",
                flushed.offsets.len(),
                flushed.sent
            );
        }
        self.instance.commit().map_err(|e| TaskFailure::from_plugin(&e))?;
        self.counters.commit_time.record_time(started.elapsed());
        Ok(())
    }
}

impl Polling {
    /// Replaces the plugin's instance and its chain with fresh ones once every record the old
    /// one returned is acknowledged and its offset stored (the new instance reads those offsets
    /// when it opens). While Kafka has not acknowledged them all, the old instance goes on until
    /// the next regular flush, and the replacement is tried again then.
    fn recycle(&mut self) -> Result<(), TaskFailure> {
        // A plugin that ends its own transactions is replaced only between them.
        if !self.plugin_ends_transactions() {
            self.flush()?;
        }
        let Some(recycler) = &mut self.recycle else {
            return Ok(());
        };
        if self.unflushed {
            recycler.wait_for_flush();
            return Ok(());
        }
        let (instance, transforms) = recycler.reopen()?;
        let old = std::mem::replace(&mut self.instance, instance);
        // The old chain's transform plugins close as it goes.
        self.transforms = transforms;
        if let Err(e) = old.close() {
            tracing::warn!(task = self.label.as_str(), "the replaced instance's close failed: {e}");
        }
        Ok(())
    }
}

/// What a task whose transactional producer another run of it fenced says.
fn fenced_message(id: &str) -> String {
    format!(
        "Kafka fenced the task's transactional producer (transactional.id {id}): another run of the task opened the \
         same transactional id (on another worker, or after a restart) and took its place; nothing this run sent \
         since its last commit is visible to read_committed consumers, and the other run goes on from the offsets \
         last committed"
    )
}

fn send_thread_gone() -> TaskFailure {
    TaskFailure::new("the thread that writes to Kafka stopped unexpectedly".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(key: &str, value: Scalar) -> OffsetMap {
        vec![(key.to_string(), value)]
    }

    #[test]
    fn pending_offsets_keep_the_latest_per_partition_in_first_seen_order() {
        let mut pending = PendingOffsets::default();
        for (p, o) in [(1, 10), (2, 20), (1, 11), (3, 30), (2, 21), (2, 22)] {
            pending.record(map("p", Scalar::Integer(p)), map("o", Scalar::Integer(o))).unwrap();
        }
        pending.record(map("f", Scalar::Float(0.5)), map("o", Scalar::Integer(1))).unwrap();
        pending.record(map("f", Scalar::Float(0.5)), map("o", Scalar::Integer(2))).unwrap();
        let offsets: Vec<(OffsetMap, OffsetMap)> = pending.take();
        let expected: Vec<(OffsetMap, OffsetMap)> = [(1, 11), (2, 22), (3, 30)]
            .iter()
            .map(|&(p, o)| (map("p", Scalar::Integer(p)), map("o", Scalar::Integer(o))))
            .chain([(map("f", Scalar::Float(0.5)), map("o", Scalar::Integer(2)))])
            .collect();
        assert_eq!(offsets, expected);
        assert!(pending.take().is_empty());
    }

    #[test]
    fn pending_offsets_are_bounded_in_bytes() {
        let mut pending = PendingOffsets::default();
        let big = "x".repeat(1 << 20);
        let mut refused = None;
        for i in 0..100 {
            if let Err(bytes) = pending.record(map("p", Scalar::Integer(i)), map("o", Scalar::Text(big.clone()))) {
                refused = Some((i, bytes));
                break;
            }
        }
        let (at, bytes) = refused.expect("the bound held nothing back");
        // Each holds a little more than 1 MiB, so the 64th passes the bound.
        assert_eq!(at, 63, "refused at partition {at}");
        assert!(bytes > MAX_PENDING_OFFSET_BYTES);
    }
}
