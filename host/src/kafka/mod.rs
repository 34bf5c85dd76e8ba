//! Kafka clients as the worker configures them.

pub mod admin;
pub mod batch;
pub mod log;
pub mod partitioner;

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::producer::{BaseProducer, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use crate::config::WorkerConfig;

/// The producer settings a source task relies on: every record acknowledged by all in-sync
/// replicas, written once even when retried. Worker `producer.*` keys come last and win.
pub fn producer_config(worker: &WorkerConfig, client_id: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &worker.bootstrap_servers)
        .set("client.id", client_id)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5");
    for (key, value) in &worker.producer_overrides {
        config.set(key, value);
    }
    config
}

/// A client's settings: the worker's bootstrap servers and one family of overrides (the
/// worker's `admin.*`, `producer.*` or `consumer.*` keys).
pub fn client_config(worker: &WorkerConfig, overrides: &[(String, String)]) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &worker.bootstrap_servers);
    for (key, value) in overrides {
        config.set(key, value);
    }
    config
}

/// Keys of `consumer.*` that Kafka Connect users know but that the host reads itself instead of
/// handing them to librdkafka.
pub const HOST_CONSUMER_KEYS: &[&str] = &["max.poll.records"];

/// A sink task's consumer: group `connect-<connector>`, offsets committed by the task only after
/// the plugin flushed. Worker `consumer.*` keys come last and win.
pub fn consumer_config(worker: &WorkerConfig, connector: &str, client_id: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &worker.bootstrap_servers)
        .set("group.id", format!("connect-{connector}"))
        .set("client.id", client_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false")
        // librdkafka pauses fetching for fetch.queue.backoff.ms (1 s by default) whenever its
        // queue holds queued.min.messages; a sink empties that queue in well under a second, so
        // the default caps it near 130k records/s. Fetch again within 10 ms instead.
        .set("fetch.queue.backoff.ms", "10");
    for (key, value) in &worker.consumer_overrides {
        if !HOST_CONSUMER_KEYS.contains(&key.as_str()) {
            config.set(key, value);
        }
    }
    config
}

/// Checks that the Kafka cluster answers and returns its cluster id.
pub fn cluster_id(worker: &WorkerConfig) -> anyhow::Result<String> {
    let producer: BaseProducer = producer_config(worker, "wharf-startup-check")
        .create()
        .map_err(|e| anyhow::anyhow!("cannot create a Kafka client from the worker's producer.* settings: {e}"))?;
    let timeout = worker.bootstrap_timeout;
    producer.client().fetch_metadata(None, timeout).map_err(|e| {
        anyhow::anyhow!(
            "cannot reach Kafka at bootstrap.servers={} within {} ms ({e}). Check that the broker is \
             running and the address is right; wharf.bootstrap.timeout.ms sets how long to wait",
            worker.bootstrap_servers,
            timeout.as_millis()
        )
    })?;
    Ok(producer.client().fetch_cluster_id(Duration::from_secs(5)).unwrap_or_default())
}

/// Waits until Kafka answered for every record handed to `producer` and each delivery callback
/// ran. rdkafka's own `flush` sleeps in steps of 100 ms when, as in a `ThreadedProducer`,
/// another thread serves the delivery reports: every flush then took at least 100 ms.
/// librdkafka's flush waits for the count of outstanding records itself.
pub fn flush<C: ProducerContext>(producer: &ThreadedProducer<C>, timeout: Duration) -> KafkaResult<()> {
    let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: the handle is alive for as long as `producer` is borrowed, and librdkafka allows
    // flushing from any thread.
    let result = unsafe { rdkafka::bindings::rd_kafka_flush(producer.client().native_ptr(), timeout_ms) };
    match result {
        rdkafka::bindings::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR => Ok(()),
        error => Err(KafkaError::Flush(error.into())),
    }
}

/// A client of a sink connector's group (`connect-<connector>`) that never joins it: for
/// reading and committing the group's offsets from outside.
fn group_client(worker: &WorkerConfig, connector: &str) -> anyhow::Result<BaseConsumer> {
    consumer_config(worker, connector, &format!("wharf-{connector}-offsets"))
        .create()
        .map_err(|e| anyhow::anyhow!("cannot create a Kafka consumer (check the worker's consumer.* settings): {e}"))
}

/// The offsets a sink connector's consumer group (`connect-<connector>`) committed, per
/// partition of its topics: (topic, partition, next offset to read). Partitions without a
/// committed offset are left out.
pub fn committed_offsets(
    worker: &WorkerConfig,
    connector: &str,
    topics: &[String],
) -> anyhow::Result<Vec<(String, i32, i64)>> {
    let timeout = worker.bootstrap_timeout;
    let consumer = group_client(worker, connector)?;
    let mut partitions = TopicPartitionList::new();
    for topic in topics {
        let metadata = consumer
            .fetch_metadata(Some(topic), timeout)
            .map_err(|e| anyhow::anyhow!("cannot read the metadata of topic {topic}: {e}"))?;
        for t in metadata.topics().iter().filter(|t| t.error().is_none()) {
            for p in t.partitions() {
                partitions.add_partition(t.name(), p.id());
            }
        }
    }
    if partitions.count() == 0 {
        return Ok(Vec::new());
    }
    let committed = consumer
        .committed_offsets(partitions, timeout)
        .map_err(|e| anyhow::anyhow!("cannot read the offsets committed by group connect-{connector}: {e}"))?;
    Ok(committed
        .elements()
        .iter()
        .filter_map(|e| e.offset().to_raw().filter(|o| *o >= 0).map(|o| (e.topic().to_string(), e.partition(), o)))
        .collect())
}

/// Commits offsets for a sink connector's group without joining it: the group must have no
/// members (the connector is stopped), or Kafka refuses the commit.
pub fn commit_group_offsets(
    worker: &WorkerConfig,
    connector: &str,
    offsets: &[(String, i32, i64)],
) -> anyhow::Result<()> {
    let consumer = group_client(worker, connector)?;
    let mut list = TopicPartitionList::new();
    for (topic, partition, offset) in offsets {
        list.add_partition_offset(topic, *partition, Offset::Offset(*offset))
            .map_err(|e| anyhow::anyhow!("cannot commit offset {offset} of {topic}-{partition}: {e}"))?;
    }
    consumer.commit(&list, CommitMode::Sync).map_err(|e| {
        anyhow::anyhow!(
            "Kafka refused the offsets for group connect-{connector} ({e}); the group must have no members, \
             which takes a moment after the connector stopped"
        )
    })
}
