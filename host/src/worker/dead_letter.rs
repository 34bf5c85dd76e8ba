//! A sink task's dead-letter queue (`errors.deadletterqueue.topic.name`): records skipped under
//! `errors.tolerance=all` are written to it as they were read from Kafka (key, value, headers and
//! timestamp), with Kafka Connect's `__connect.errors.*` headers when
//! `errors.deadletterqueue.context.headers.enable=true`. The task waits until Kafka has them
//! before it commits offsets past them: a record is in the queue or read again, never lost.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::message::{Header as KafkaHeader, OwnedHeaders};

use super::tolerance::{RecordFailure, Stage};
use super::TaskFailure;
use crate::config::{DeadLetterQueue as Settings, WorkerConfig};
use crate::kafka;
use crate::kafka::producers::{ProducerPool, TaskProducer};
use wharf_connect::model::{Part, SinkRecord, TaskId};

/// Connect's header names, under `__connect.errors.`.
const HEADER_PREFIX: &str = "__connect.errors.";
/// The exception class the headers name for a record a converter or a transform could not
/// handle: what Kafka Connect throws for bad data, so that tools reading the queue see the kind
/// of failure they know; and for a record a plugin reported, Connect's general one.
const DATA_EXCEPTION: &str = "org.apache.kafka.connect.errors.DataException";
const CONNECT_EXCEPTION: &str = "org.apache.kafka.connect.errors.ConnectException";
/// Pause when the producer's queue is full, and how many such pauses a record may wait.
const QUEUE_FULL_BACKOFF: Duration = Duration::from_millis(5);
const QUEUE_FULL_TRIES: u32 = 2_000;
/// How long a commit waits for the queue's records to be acknowledged.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) struct DeadLetterQueue {
    settings: Settings,
    task: TaskId,
    /// The worker's producer for the connector's producer settings, shared with its source
    /// tasks and other queues of the same settings; this queue waits only for its own records.
    producer: TaskProducer,
    producers: Arc<ProducerPool>,
    /// The task's counts: records handed to the queue, and those it could not take.
    counters: Option<Arc<crate::metrics::tasks::TaskCounters>>,
}

impl Drop for DeadLetterQueue {
    fn drop(&mut self) {
        if self.producer.deliveries().refused() > 0 || self.producer.deliveries().failure().is_some() {
            // No later task inherits a producer that may be in a fatal state.
            self.producers.retire(&self.producer);
        }
    }
}

impl DeadLetterQueue {
    /// Creates the topic if it is missing (one partition, the configured replication factor)
    /// and the producer that writes to it.
    /// `overrides` holds the connector's `producer.override.*` and `admin.override.*` settings,
    /// which Kafka Connect gives its dead-letter queue's producer and admin client.
    pub(super) fn open(
        worker: &WorkerConfig,
        overrides: &crate::config::connector::ClientOverrides,
        settings: &Settings,
        task: &TaskId,
        producers: &Arc<ProducerPool>,
    ) -> Result<Self, TaskFailure> {
        kafka::admin::ensure_plain_topic(
            worker,
            &overrides.admin,
            &settings.topic,
            1,
            settings.replication_factor.into(),
            &[],
        )
        .map_err(|e| {
            TaskFailure::new(format!(
                "cannot set up the dead-letter queue (errors.deadletterqueue.topic.name={}): {e}",
                settings.topic
            ))
        })?;
        let task_client_id = format!("wharf-{task}-dlq");
        let config = kafka::producer_config(worker, &overrides.producer, &task_client_id);
        let shared_client_id = format!("wharf-{}-producer", worker.worker_id());
        let producer = producers.producer_for(&config, &task_client_id, &shared_client_id).map_err(|e| {
            TaskFailure::new(format!(
                "cannot create the dead-letter queue's Kafka producer (check the worker's producer.* settings): {e}"
            ))
        })?;
        Ok(DeadLetterQueue {
            settings: settings.clone(),
            task: task.clone(),
            producer,
            producers: producers.clone(),
            counters: None,
        })
    }

    /// Counts what the queue is handed in the task's metrics.
    pub(super) fn counting(mut self, counters: Arc<crate::metrics::tasks::TaskCounters>) -> Self {
        self.counters = Some(counters);
        self
    }

    /// Hands the record, as it was read, to the producer.
    pub(super) fn send(&self, original: &SinkRecord, failure: &RecordFailure) -> Result<(), TaskFailure> {
        use crate::metrics::tasks::TaskCounters;
        if let Some(counters) = &self.counters {
            TaskCounters::add(&counters.dlq_requests, 1);
        }
        let sent = self.hand_over(original, failure);
        if let (Err(_), Some(counters)) = (&sent, &self.counters) {
            TaskCounters::add(&counters.dlq_failures, 1);
        }
        sent
    }

    fn hand_over(&self, original: &SinkRecord, failure: &RecordFailure) -> Result<(), TaskFailure> {
        let bytes = |part: &Option<Part>| -> Option<Vec<u8>> {
            match part {
                Some(Part::Bytes(b)) => Some(b.clone()),
                // The original is kept before any converter read it; data here would be a bug,
                // and is written as nothing rather than guessed at.
                Some(Part::Data(_)) | None => None,
            }
        };
        let key = bytes(&original.key);
        let value = bytes(&original.value);
        let mut headers = OwnedHeaders::new_with_capacity(original.headers.len() + 10);
        for h in &original.headers {
            let value = match &h.value {
                Some(Part::Bytes(b)) => Some(b.as_slice()),
                _ => None,
            };
            headers = headers.insert(KafkaHeader { key: &h.key, value });
        }
        if self.settings.context_headers {
            let exception = if failure.stage == Stage::TaskPut { CONNECT_EXCEPTION } else { DATA_EXCEPTION };
            let mut add = |name: &str, value: &str| {
                let key = format!("{HEADER_PREFIX}{name}");
                headers = std::mem::replace(&mut headers, OwnedHeaders::new())
                    .insert(KafkaHeader { key: &key, value: Some(value.as_bytes()) });
            };
            add("topic", &original.topic);
            add("partition", &original.partition.to_string());
            add("offset", &original.offset.to_string());
            add("connector.name", &self.task.connector);
            add("task.id", &self.task.task.to_string());
            add("stage", failure.stage.name());
            add("class.name", &failure.class);
            add("exception.class.name", exception);
            add("exception.message", &failure.message);
            add(
                "exception.stacktrace",
                &format!("{exception}: {}\n\tat {} ({})\n", failure.message, failure.class, failure.stage.name()),
            );
        }
        let mut record = self.producer.record(&self.settings.topic).headers(headers);
        if let Some(k) = key.as_deref() {
            record = record.key(k);
        }
        if let Some(v) = value.as_deref() {
            record = record.payload(v);
        }
        if let Some(t) = original.timestamp {
            record = record.timestamp(t);
        }
        let mut tries = 0;
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((e, back)) => {
                    let full = matches!(
                        e,
                        rdkafka::error::KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull)
                    );
                    tries += 1;
                    if !full || tries >= QUEUE_FULL_TRIES {
                        return Err(TaskFailure::new(format!(
                            "cannot hand a record to the dead-letter queue topic {}: {e}",
                            self.settings.topic
                        )));
                    }
                    record = back;
                    std::thread::sleep(QUEUE_FULL_BACKOFF);
                }
            }
        }
    }

    /// Waits until Kafka acknowledged every record sent so far; an error if any was refused
    /// (the task then fails before committing past it, and reads it again when restarted).
    pub(super) fn flush(&self) -> Result<(), TaskFailure> {
        let deliveries = self.producer.deliveries();
        if !deliveries.wait_all(FLUSH_TIMEOUT) {
            return Err(TaskFailure::new(format!(
                "the dead-letter queue topic {} did not acknowledge its records within {} s ({} still waiting)",
                self.settings.topic,
                FLUSH_TIMEOUT.as_secs(),
                deliveries.in_flight()
            )));
        }
        let failed = deliveries.refused();
        if failed > 0 {
            let first = deliveries.failure().unwrap_or_default();
            return Err(TaskFailure::new(format!(
                "Kafka refused {failed} record(s) for the dead-letter queue topic {} (first: {first}); the task \
                 stops before committing past them",
                self.settings.topic
            )));
        }
        Ok(())
    }
}
