//! Writers of the internal topics: acknowledged writes, and the config topic's transactions.

use std::sync::Mutex;
use std::time::Duration;

use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientConfig, ClientContext};

use crate::kafka::polled::PolledProducer;
use crate::sync::Unpoisoned;

/// How long a write may wait for the broker's acknowledgement, and a read for the log's end.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// Remembers the first failed delivery since the last check, and the highest offset Kafka gave
/// a delivered record.
#[derive(Default)]
pub struct WriteTracker {
    failure: Mutex<Option<String>>,
    last_offset: Mutex<Option<i64>>,
}

impl ClientContext for WriteTracker {}

impl ProducerContext for WriteTracker {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        use rdkafka::Message;
        match result {
            Ok(message) => {
                let mut last = self.last_offset.locked();
                *last = Some(last.map_or(message.offset(), |l| l.max(message.offset())));
            }
            Err((e, message)) => {
                tracing::warn!("Kafka did not accept a write to topic {}: {e}", message.topic());
                self.failure.locked().get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// Writes keyed records to one topic and waits for the broker's acknowledgement.
pub struct LogWriter {
    topic: String,
    producer: PolledProducer<WriteTracker>,
}

impl LogWriter {
    pub fn new(producer_config: &ClientConfig, topic: &str) -> anyhow::Result<Self> {
        Self::open(producer_config, topic, true)
    }

    /// A writer for records whose duplicates do no harm. An idempotent producer first needs a
    /// producer id, which a producer that just started waits half a second for.
    pub fn without_idempotence(producer_config: &ClientConfig, topic: &str) -> anyhow::Result<Self> {
        Self::open(producer_config, topic, false)
    }

    fn open(producer_config: &ClientConfig, topic: &str, idempotent: bool) -> anyhow::Result<Self> {
        let mut config = producer_config.clone();
        config.set("enable.idempotence", idempotent.to_string()).set("acks", "all").set("linger.ms", "0");
        let producer = PolledProducer::create(&config, WriteTracker::default())
            .map_err(|e| anyhow::anyhow!("cannot create a producer for topic {topic}: {e}"))?;
        Ok(LogWriter { topic: topic.to_string(), producer })
    }

    /// Hands a record to the producer without waiting; a failed delivery is logged.
    pub fn send(&self, partition: i32, key: &str, value: Option<&[u8]>) -> Result<(), String> {
        let mut record: BaseRecord<'_, str, [u8], ()> = BaseRecord::to(&self.topic).key(key).partition(partition);
        if let Some(value) = value {
            record = record.payload(value);
        }
        self.producer.send(record).map_err(|(e, _)| format!("cannot write {key} to topic {}: {e}", self.topic))
    }

    /// Waits up to `timeout` for the records handed over so far to be acknowledged.
    pub fn flush(&self, timeout: Duration) -> Result<(), String> {
        crate::kafka::flush(&self.producer, timeout)
            .map_err(|e| format!("topic {} did not acknowledge writes within {} s: {e}", self.topic, timeout.as_secs()))
    }

    /// Writes the records in order and returns once all are acknowledged, with the highest
    /// offset Kafka gave them (none if it did not say).
    pub fn write(&self, records: &[(i32, String, Option<Vec<u8>>)]) -> Result<Option<i64>, String> {
        self.producer.context().last_offset.locked().take();
        for (partition, key, value) in records {
            self.send(*partition, key, value.as_deref())?;
        }
        crate::kafka::flush(&self.producer, STORE_TIMEOUT).map_err(|e| {
            format!("topic {} did not acknowledge a write within {} s: {e}", self.topic, STORE_TIMEOUT.as_secs())
        })?;
        match self.producer.context().failure.locked().take() {
            Some(failure) => Err(format!("topic {} refused a write: {failure}", self.topic)),
            None => Ok(*self.producer.context().last_offset.locked()),
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // Records sent without waiting (statuses) still reach the topic on the way out.
        let _ = crate::kafka::flush(&self.producer, Duration::from_secs(5));
    }
}

/// Why a transactional write did not happen.
#[derive(Debug)]
pub(super) enum WriteError {
    /// A newer writer under the same transactional id fenced this one: this worker no longer
    /// leads, and never writes with it again.
    Fenced(String),
    /// Kafka refused or did not answer; the writer may try again.
    Failed(String),
}

/// Writes the config topic in transactions under one transactional id per cluster, so that
/// when a new leader opens its writer, the broker fences the old leader's: a worker that lost
/// leadership cannot write once its successor could.
pub(super) struct FencedWriter {
    topic: String,
    producer: PolledProducer<WriteTracker>,
}

/// The transactional id of a cluster's config writer (Kafka Connect's name for it).
pub fn config_transactional_id(group_id: &str) -> String {
    format!("connect-cluster-{group_id}")
}

impl FencedWriter {
    pub(super) fn open(producer_config: &ClientConfig, topic: &str, transactional_id: &str) -> anyhow::Result<Self> {
        let mut config = producer_config.clone();
        config
            .set("transactional.id", transactional_id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "0");
        let producer = PolledProducer::create(&config, WriteTracker::default())
            .map_err(|e| anyhow::anyhow!("cannot create the config topic writer: {e}"))?;
        producer.init_transactions(STORE_TIMEOUT).map_err(|e| {
            anyhow::anyhow!(
                "cannot start the config topic writer (transactional.id {transactional_id}) within {} s: {e}",
                STORE_TIMEOUT.as_secs()
            )
        })?;
        Ok(FencedWriter { topic: topic.to_string(), producer })
    }

    /// Writes the records in one transaction and returns the offset of the last one (none if
    /// Kafka did not say).
    pub(super) fn write(&self, records: &[(String, Option<Vec<u8>>)]) -> Result<Option<i64>, WriteError> {
        let fail = |e: rdkafka::error::KafkaError| {
            let message = format!("topic {}: {e}", self.topic);
            match matches!(&e, rdkafka::error::KafkaError::Transaction(t) if t.is_fatal()) {
                true => WriteError::Fenced(message),
                false => WriteError::Failed(message),
            }
        };
        self.producer.context().last_offset.locked().take();
        self.producer.begin_transaction().map_err(fail)?;
        for (key, value) in records {
            let mut record: BaseRecord<'_, str, [u8], ()> = BaseRecord::to(&self.topic).key(key.as_str()).partition(0);
            if let Some(value) = value {
                record = record.payload(value);
            }
            if let Err((e, _)) = self.producer.send(record) {
                let _ = self.producer.abort_transaction(STORE_TIMEOUT);
                return Err(fail(e));
            }
        }
        // Flushed first: the commit's own flush would then find nothing outstanding (it sleeps in
        // steps of 100 ms otherwise, see `kafka::flush`).
        if let Err(e) = crate::kafka::flush(&self.producer, STORE_TIMEOUT)
            .and_then(|()| self.producer.commit_transaction(STORE_TIMEOUT))
        {
            let failure = fail(e);
            if let WriteError::Failed(_) = failure {
                let _ = self.producer.abort_transaction(STORE_TIMEOUT);
            }
            return Err(failure);
        }
        match self.producer.context().failure.locked().take() {
            Some(failure) => Err(WriteError::Failed(format!("topic {} refused a write: {failure}", self.topic))),
            None => Ok(*self.producer.context().last_offset.locked()),
        }
    }
}
