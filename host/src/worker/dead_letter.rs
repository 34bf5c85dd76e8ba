//! A sink task's dead-letter queue (`errors.deadletterqueue.topic.name`): records skipped under
//! `errors.tolerance=all` are written to it as they were read from Kafka (key, value, headers and
//! timestamp), with Kafka Connect's `__connect.errors.*` headers when
//! `errors.deadletterqueue.context.headers.enable=true`. The task waits until Kafka has them
//! before it commits offsets past them: a record is in the queue or read again, never lost.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rdkafka::message::{Header as KafkaHeader, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

use super::tolerance::{RecordFailure, Stage};
use super::TaskFailure;
use crate::config::{DeadLetterQueue as Settings, WorkerConfig};
use crate::kafka;
use crate::model::{Part, SinkRecord, TaskId};
use crate::sync::Unpoisoned;

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

/// Counts deliveries Kafka refused and keeps the first reason.
#[derive(Default)]
struct Deliveries {
    failed: AtomicU64,
    first: Mutex<Option<String>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((error, _)) = result {
            self.failed.fetch_add(1, Ordering::Relaxed);
            let mut first = self.first.locked();
            if first.is_none() {
                *first = Some(error.to_string());
            }
        }
    }
}

pub struct DeadLetterQueue {
    settings: Settings,
    task: TaskId,
    producer: ThreadedProducer<Deliveries>,
}

impl DeadLetterQueue {
    /// Creates the topic if it is missing (one partition, the configured replication factor)
    /// and the producer that writes to it.
    /// `overrides` holds the connector's `producer.override.*` and `admin.override.*` settings,
    /// which Kafka Connect gives its dead-letter queue's producer and admin client.
    pub fn open(
        worker: &WorkerConfig,
        overrides: &crate::config::connector::ClientOverrides,
        settings: &Settings,
        task: &TaskId,
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
        let producer = kafka::producer_config(worker, &overrides.producer, &format!("wharf-{task}-dlq"))
            .create_with_context(Deliveries::default())
            .map_err(|e| {
                TaskFailure::new(format!(
                    "cannot create the dead-letter queue's Kafka producer (check the worker's producer.* settings): {e}"
                ))
            })?;
        Ok(DeadLetterQueue { settings: settings.clone(), task: task.clone(), producer })
    }

    /// Hands the record, as it was read, to the producer.
    pub fn send(&self, original: &SinkRecord, failure: &RecordFailure) -> Result<(), TaskFailure> {
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
        let mut record = BaseRecord::to(&self.settings.topic).headers(headers);
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
    pub fn flush(&self) -> Result<(), TaskFailure> {
        kafka::flush(&self.producer, FLUSH_TIMEOUT).map_err(|e| {
            TaskFailure::new(format!(
                "the dead-letter queue topic {} did not acknowledge its records within {} s: {e}",
                self.settings.topic,
                FLUSH_TIMEOUT.as_secs()
            ))
        })?;
        let failed = self.producer.context().failed.load(Ordering::Relaxed);
        if failed > 0 {
            let first = self.producer.context().first.locked().clone().unwrap_or_default();
            return Err(TaskFailure::new(format!(
                "Kafka refused {failed} record(s) for the dead-letter queue topic {} (first: {first}); the task \
                 stops before committing past them",
                self.settings.topic
            )));
        }
        Ok(())
    }
}
