//! Producers shared by the tasks of a worker: one librdkafka producer (its threads, its
//! connections, its buffers) for every task whose producer settings are the same, instead of one
//! per task. Each task keeps its own account of its records (`Deliveries`): how many are not
//! acknowledged yet and the first that Kafka refused, so that a task waits only for its own
//! records before it stores their offsets, and fails only for its own.
//!
//! A task that needs a producer of its own (other settings, a transactional id) gets one simply
//! because its settings differ: the pool is keyed by the whole client config.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, ProducerContext};
use rdkafka::ClientContext;

use crate::sync::Unpoisoned;

/// What one task's records came to: those still waiting for Kafka's answer, and the first one
/// Kafka refused.
#[derive(Default)]
pub struct Deliveries {
    in_flight: AtomicU64,
    /// Records Kafka acknowledged (shared with the task's metrics).
    acked: Arc<AtomicU64>,
    refused: AtomicU64,
    /// Kafka refused a record because a newer producer under the same transactional id fenced
    /// this one (a transactional task's).
    fenced: std::sync::atomic::AtomicBool,
    failure: Mutex<Option<String>>,
    lock: Mutex<()>,
    settled: Condvar,
}

impl Deliveries {
    fn settle(&self, result: &DeliveryResult<'_>) {
        if let Err((error, message)) = result {
            use rdkafka::Message;
            self.refused.fetch_add(1, Ordering::Relaxed);
            if fenced(error) {
                self.fenced.store(true, Ordering::Relaxed);
            }
            self.fail(format!("Kafka did not accept a record for topic {}: {error}", message.topic()));
        } else {
            self.acked.fetch_add(1, Ordering::Relaxed);
        }
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last one: wake a task waiting in `wait_all`. Taking the lock first means a
            // waiter cannot miss it between reading the count and starting to wait.
            let _held = self.lock.locked();
            self.settled.notify_all();
        }
    }

    /// Keeps `message` unless a failure is kept already.
    pub fn fail(&self, message: String) {
        self.failure.locked().get_or_insert(message);
    }

    /// The first failure kept, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure.locked().clone()
    }

    /// The count of records Kafka acknowledged, to be read elsewhere (the task's metrics).
    pub fn acked_counter(&self) -> Arc<AtomicU64> {
        self.acked.clone()
    }

    /// Whether Kafka refused a record, or a transactional call, because another producer
    /// fenced this one.
    pub fn fenced(&self) -> bool {
        self.fenced.load(Ordering::Relaxed)
    }

    /// Kafka refused a transactional call because another producer fenced this one.
    pub fn mark_fenced(&self) {
        self.fenced.store(true, Ordering::Relaxed);
    }

    /// Records Kafka refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Records handed to the producer and not answered yet.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Waits until Kafka answered every record handed over so far; false when `timeout` passed
    /// first.
    pub fn wait_all(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut held = self.lock.locked();
        while self.in_flight() > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            held = self.settled.wait_timeout(held, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        true
    }
}

/// Whether Kafka refused something because a newer producer under the same transactional id
/// fenced the one that asked.
pub fn fenced(error: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode::{Fenced, InvalidProducerEpoch, ProducerFenced};
    // A transactional call's error too: its code is the transaction error's.
    matches!(error.rdkafka_error_code(), Some(Fenced | InvalidProducerEpoch | ProducerFenced))
}

/// The context of a shared producer: each record carries its task's `Deliveries`; librdkafka's
/// statistics go to the worker's metrics.
pub struct Routed {
    figures: Arc<crate::metrics::clients::ClientFigures>,
}

impl ClientContext for Routed {
    fn stats_raw(&self, statistics: &[u8]) {
        self.figures.update(statistics);
    }
}

impl ProducerContext for Routed {
    type DeliveryOpaque = Arc<Deliveries>;

    fn delivery(&self, result: &DeliveryResult<'_>, deliveries: Arc<Deliveries>) {
        deliveries.settle(result);
    }
}

struct Shared {
    producer: super::polled::PolledProducer<Routed>,
    key: Vec<(String, String)>,
}

/// The worker's producers, one per distinct client config, alive while a task uses it.
#[derive(Default)]
pub struct ProducerPool {
    producers: Mutex<HashMap<wharf_connect::model::Pairs, Weak<Shared>>>,
    made: AtomicU64,
}

/// The most distinct producer configs the pool remembers; past it a producer is not shared
/// (correct, only dearer). Distinct configs come from connectors' `producer.override.*`.
const MAX_SHARED_CONFIGS: usize = 10_000;

impl ProducerPool {
    /// A task's handle on the producer for `config`, made when no task uses one yet. A
    /// `client.id` of `task_client_id`, the id the host gives a task's producer by default, is
    /// left aside, and the shared producer is named `<client_id_prefix>-<n>` instead; one a user
    /// set (`producer.client.id`, `producer.override.client.id`) is kept, and only tasks that give
    /// the same share the producer.
    pub fn producer_for(
        &self,
        config: &ClientConfig,
        task_client_id: &str,
        client_id_prefix: &str,
    ) -> KafkaResult<TaskProducer> {
        let own_id = config.get("client.id").is_some_and(|id| id != task_client_id);
        let key: Vec<(String, String)> = config
            .config_map()
            .into_iter()
            .filter(|(k, _)| own_id || *k != "client.id")
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut producers = self.producers.locked();
        if let Some(shared) = producers.get(&key).and_then(Weak::upgrade) {
            return Ok(TaskProducer { shared, deliveries: Arc::default(), bookkeeping: Arc::default() });
        }
        producers.retain(|_, p| p.strong_count() > 0);
        let n = self.made.fetch_add(1, Ordering::Relaxed) + 1;
        let mut config = config.clone();
        if !own_id {
            config.set("client.id", format!("{client_id_prefix}-{n}"));
        }
        if config.get("statistics.interval.ms").is_none() {
            config.set("statistics.interval.ms", crate::metrics::clients::STATISTICS_INTERVAL_MS);
        }
        let figures = crate::metrics::clients::register(crate::metrics::clients::ClientKind::Producer);
        let producer = super::polled::PolledProducer::create(&config, Routed { figures })?;
        let shared = Arc::new(Shared { producer, key: key.clone() });
        if producers.len() < MAX_SHARED_CONFIGS {
            producers.insert(key, Arc::downgrade(&shared));
        }
        Ok(TaskProducer { shared, deliveries: Arc::default(), bookkeeping: Arc::default() })
    }

    /// A producer for one task alone, never shared: a transactional task's, whose
    /// `transactional.id` is its own (`config` sets it).
    pub fn own(&self, config: &ClientConfig) -> KafkaResult<TaskProducer> {
        let mut config = config.clone();
        if config.get("statistics.interval.ms").is_none() {
            config.set("statistics.interval.ms", crate::metrics::clients::STATISTICS_INTERVAL_MS);
        }
        let figures = crate::metrics::clients::register(crate::metrics::clients::ClientKind::Producer);
        let producer = super::polled::PolledProducer::create(&config, Routed { figures })?;
        self.made.fetch_add(1, Ordering::Relaxed);
        Ok(TaskProducer {
            shared: Arc::new(Shared { producer, key: Vec::new() }),
            deliveries: Arc::default(),
            bookkeeping: Arc::default(),
        })
    }

    /// Producers in use now.
    pub fn live(&self) -> usize {
        self.producers.locked().values().filter(|p| p.strong_count() > 0).count()
    }

    /// No later task gets `producer`'s shared producer: after a refused record it may be in a
    /// state (an idempotent producer's fatal error) that no new task should inherit. The tasks
    /// that use it keep it until they end.
    pub fn retire(&self, producer: &TaskProducer) {
        let mut producers = self.producers.locked();
        if producers.get(&producer.shared.key).is_some_and(|p| p.as_ptr() == Arc::as_ptr(&producer.shared)) {
            producers.remove(&producer.shared.key);
        }
    }
}

/// One task's use of a shared producer.
pub struct TaskProducer {
    shared: Arc<Shared>,
    deliveries: Arc<Deliveries>,
    /// The task's own bookkeeping records (a transactional task's offsets), counted apart from
    /// its records.
    bookkeeping: Arc<Deliveries>,
}

/// A record on its way to the shared producer, carrying its task's account.
pub type Record<'a> = BaseRecord<'a, [u8], [u8], Arc<Deliveries>>;

/// A record the producer did not take, given back with why.
pub type Refused<'a> = (KafkaError, Record<'a>);

impl TaskProducer {
    /// A record for `topic`, counted in this task's deliveries once sent.
    pub fn record<'a>(&self, topic: &'a str) -> Record<'a> {
        BaseRecord::with_opaque_to(topic, self.deliveries.clone())
    }

    /// Hands `record` to the producer; a refusal gives it back (a full queue may take it later).
    /// The record comes back whole, unboxed: a full queue is ordinary under load, and the record
    /// is offered again at once.
    #[allow(clippy::result_large_err)]
    pub fn send<'a>(&self, record: Record<'a>) -> Result<(), Refused<'a>> {
        self.offer(&self.deliveries, record)
    }

    /// Hands `record`, counted in `counted`, to the producer.
    #[allow(clippy::result_large_err)]
    fn offer<'a>(&self, counted: &Deliveries, record: Record<'a>) -> Result<(), Refused<'a>> {
        // Counted first: the answer may come before `send` returns.
        counted.in_flight.fetch_add(1, Ordering::AcqRel);
        self.shared.producer.send(record).inspect_err(|_| {
            counted.in_flight.fetch_sub(1, Ordering::AcqRel);
        })
    }

    pub fn deliveries(&self) -> &Deliveries {
        &self.deliveries
    }

    /// A record of the task's bookkeeping for `topic`, counted apart from its records.
    pub fn bookkeeping_record<'a>(&self, topic: &'a str) -> Record<'a> {
        BaseRecord::with_opaque_to(topic, self.bookkeeping.clone())
    }

    /// Hands a bookkeeping record to the producer, as `send` does a record.
    #[allow(clippy::result_large_err)]
    pub fn send_bookkeeping<'a>(&self, record: Record<'a>) -> Result<(), Refused<'a>> {
        self.offer(&self.bookkeeping, record)
    }

    /// The producer itself, for a transactional task's transactions (`own` made it).
    pub fn transactions(&self) -> &BaseProducer<Routed> {
        &self.shared.producer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A producer config that never reaches a broker: nothing listens on port 9 of loopback, and
    /// a record gives up after 200 ms.
    fn config(client_id: &str, linger: &str) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", "127.0.0.1:9")
            .set("client.id", client_id)
            .set("linger.ms", linger)
            .set("message.timeout.ms", "200");
        config
    }

    /// The producer of task `task` whose client id is the host's default for it.
    fn for_task(pool: &ProducerPool, task: &str, linger: &str) -> TaskProducer {
        pool.producer_for(&config(task, linger), task, "shared").unwrap()
    }

    fn same(a: &TaskProducer, b: &TaskProducer) -> bool {
        Arc::ptr_eq(&a.shared, &b.shared)
    }

    #[test]
    fn tasks_with_the_same_settings_share_one_producer_while_any_uses_it() {
        let pool = ProducerPool::default();
        let a = for_task(&pool, "task-a", "5");
        let b = for_task(&pool, "task-b", "5");
        let other = for_task(&pool, "task-c", "50");
        assert!(same(&a, &b), "the client id alone should not part two tasks");
        assert!(!same(&a, &other), "other settings should get a producer of their own");
        assert_eq!(pool.live(), 2);
        drop((a, b));
        assert_eq!(pool.live(), 1);
        drop(other);
        assert_eq!(pool.live(), 0);
    }

    #[test]
    fn a_client_id_a_user_set_is_kept_and_parts_the_producers() {
        let pool = ProducerPool::default();
        let a = pool.producer_for(&config("billing", "5"), "task-a", "shared").unwrap();
        let b = pool.producer_for(&config("billing", "5"), "task-b", "shared").unwrap();
        let c = for_task(&pool, "task-c", "5");
        assert!(same(&a, &b), "one user-set id, one producer");
        assert!(!same(&a, &c), "a user-set id is not the host's default");
    }

    #[test]
    fn a_retired_producer_is_not_handed_to_later_tasks() {
        let pool = ProducerPool::default();
        let a = for_task(&pool, "task-a", "5");
        pool.retire(&a);
        let b = for_task(&pool, "task-b", "5");
        assert!(!same(&a, &b));
        // Retiring a producer no longer in the pool leaves its successor there.
        pool.retire(&a);
        let c = for_task(&pool, "task-c", "5");
        assert!(same(&b, &c));
    }

    #[test]
    fn each_task_counts_and_waits_for_its_own_records() {
        let pool = ProducerPool::default();
        let a = for_task(&pool, "task-a", "5");
        let b = for_task(&pool, "task-b", "5");
        for _ in 0..3 {
            a.send(a.record("topic-a").payload(&b"x"[..])).map_err(|(e, _)| e).unwrap();
        }
        assert_eq!(a.deliveries().in_flight(), 3);
        assert_eq!(b.deliveries().in_flight(), 0);
        assert!(b.deliveries().wait_all(Duration::ZERO), "b sent nothing, so it has nothing to wait for");
        assert!(!a.deliveries().wait_all(Duration::ZERO));
        // No broker answers: each record is refused when message.timeout.ms runs out.
        assert!(a.deliveries().wait_all(Duration::from_secs(30)));
        assert_eq!(a.deliveries().refused(), 3);
        let failure = a.deliveries().failure().unwrap_or_default();
        assert!(failure.contains("topic-a"), "{failure}");
        assert_eq!(b.deliveries().refused(), 0);
        assert!(b.deliveries().failure().is_none());
    }
}
