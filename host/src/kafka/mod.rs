//! Kafka clients as the worker configures them.

pub mod admin;
pub mod batch;
pub mod log;
pub mod partitioner;
pub mod polled;
pub mod producers;

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::producer::{BaseProducer, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};

use crate::config::WorkerConfig;

/// The producer settings a source task relies on: every record acknowledged by all in-sync
/// replicas, written once even when retried, and a keyed record sent to the partition the Java
/// producer would choose (librdkafka's own default hashes keys differently, so a team moving from
/// Kafka Connect would see a key change partitions). Worker `producer.*` keys come last and win.
///
/// `connector` holds the connector's own `producer.override.*` settings, which come after the
/// worker's.
pub fn producer_config(worker: &WorkerConfig, connector: &[(String, String)], client_id: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &worker.bootstrap_servers);
    secure(&mut config, worker);
    config
        .set("client.id", client_id)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("partitioner", "murmur2_random");
    for (key, value) in worker.producer_overrides.iter().chain(connector) {
        config.set(key, value);
    }
    config
}

/// The worker's security settings (`security.protocol`, `ssl.*`, `sasl.*`, in librdkafka's
/// names), which every client gets before its family's overrides.
fn secure(config: &mut ClientConfig, worker: &WorkerConfig) {
    for (key, value) in &worker.kafka_security {
        config.set(key, value);
    }
}

/// A client's settings: the worker's bootstrap servers and one family of overrides (the
/// worker's `admin.*`, `producer.*` or `consumer.*` keys).
pub fn client_config(worker: &WorkerConfig, overrides: &[(String, String)]) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &worker.bootstrap_servers);
    secure(&mut config, worker);
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
///
/// `overrides` holds the connector's own `consumer.override.*` settings, which come after the
/// worker's.
pub fn consumer_config(
    worker: &WorkerConfig,
    connector: &str,
    overrides: &[(String, String)],
    client_id: &str,
) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &worker.bootstrap_servers);
    secure(&mut config, worker);
    config
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
    for (key, value) in worker.consumer_overrides.iter().chain(overrides) {
        if !HOST_CONSUMER_KEYS.contains(&key.as_str()) {
            config.set(key, value);
        }
    }
    config
}

/// The errors librdkafka reported (the first few), so that a failed start says why.
#[derive(Default)]
struct LastError(std::sync::Mutex<Vec<String>>);

/// How many of a client's errors are kept for the message of a failed start.
const ERRORS_KEPT: usize = 16;

impl LastError {
    fn note(&self, message: &str) {
        if let Ok(mut seen) = self.0.lock() {
            if seen.len() < ERRORS_KEPT && !seen.iter().any(|s| s == message) {
                seen.push(message.to_string());
            }
        }
    }

    /// The error that says most: a refused authentication or a failed TLS handshake before
    /// the "all brokers are down" that follows them.
    fn telling(&self) -> Option<String> {
        let seen = self.0.lock().ok()?;
        let find = |needle: &str| seen.iter().find(|s| s.to_ascii_lowercase().contains(needle)).cloned();
        find("authentication failed")
            .or_else(|| find("ssl handshake"))
            .or_else(|| find("certificate"))
            .or_else(|| seen.last().cloned())
    }
}

impl rdkafka::ClientContext for LastError {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, facility: &str, message: &str) {
        use rdkafka::config::RDKafkaLogLevel::*;
        if matches!(level, Emerg | Alert | Critical | Error | Warning) {
            tracing::debug!("Kafka client ({facility}): {message}");
            self.note(message);
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::debug!("Kafka client error: {error}: {reason}");
        self.note(reason);
    }
}

impl ProducerContext for LastError {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: Self::DeliveryOpaque) {}
}

/// Checks that the Kafka cluster answers and returns its cluster id. When it does not, the
/// error says why in words that point at the setting: the broker cannot be reached, refused
/// the credentials, or its certificate could not be trusted.
pub fn cluster_id(worker: &WorkerConfig) -> anyhow::Result<String> {
    let producer: BaseProducer<LastError> = producer_config(worker, &[], "wharf-startup-check")
        .create_with_context(LastError::default())
        .map_err(|e| anyhow::anyhow!("cannot create a Kafka client from the worker's settings: {e}"))?;
    let timeout = worker.bootstrap_timeout;
    if let Err(e) = producer.client().fetch_metadata(None, timeout) {
        // Errors reach the context when the client is polled.
        producer.poll(Duration::from_millis(100));
        let reason = producer.context().telling().unwrap_or_else(|| e.to_string());
        return Err(anyhow::anyhow!("{}", start_failure(worker, &reason, timeout)));
    }
    Ok(producer.client().fetch_cluster_id(Duration::from_secs(5)).unwrap_or_default())
}

/// Why the first bootstrap broker's certificate was refused, found by connecting again with
/// the same trusted authorities and no host name check: if that succeeds, the certificate is
/// trusted but names another host. None when that cannot be found out.
fn tls_diagnosis(worker: &WorkerConfig) -> Option<String> {
    use openssl::ssl::{SslConnector, SslMethod};
    let setting = |key: &str| crate::model::last_value(&worker.kafka_security, key).map(String::from);
    let broker = worker.bootstrap_servers.split(',').map(str::trim).find(|b| !b.is_empty())?.to_string();
    let (host, _) = broker.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let mut builder = SslConnector::builder(SslMethod::tls()).ok()?;
    if let Some(file) = setting("ssl.ca.location") {
        builder.set_ca_file(&file).ok()?;
    } else if let Some(pem) = setting("ssl.ca.pem") {
        for certificate in openssl::x509::X509::stack_from_pem(pem.as_bytes()).ok()? {
            builder.cert_store_mut().add_cert(certificate).ok()?;
        }
    }
    let connector = builder.build();
    let address = std::net::ToSocketAddrs::to_socket_addrs(&broker).ok()?.next()?;
    let tcp = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    tcp.set_write_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut unchecked = connector.configure().ok()?;
    unchecked.set_verify_hostname(false);
    Some(match unchecked.connect(&host, tcp) {
        Ok(_) => format!(
            "the certificate of broker {broker} was issued by a trusted authority but does not name the host {host}; \
             reach the broker by a name its certificate holds, or set ssl.endpoint.identification.algorithm= \
             (empty) to skip the host name check"
        ),
        Err(e) => format!(
            "the certificate of broker {broker} was not issued by an authority this worker trusts ({e}); set \
             ssl.truststore.location to the certificate of the authority that issued it"
        ),
    })
}

/// What a failed first contact with Kafka means, by what librdkafka said.
fn start_failure(worker: &WorkerConfig, reason: &str, timeout: Duration) -> String {
    let setting = |key: &str| crate::model::last_value(&worker.kafka_security, key).map(String::from);
    let protocol = setting("security.protocol").unwrap_or_else(|| "PLAINTEXT".into());
    let lower = reason.to_ascii_lowercase();
    if lower.contains("certificate") || lower.contains("ssl handshake") {
        let why = match tls_diagnosis(worker) {
            Some(why) => why,
            None => "check ssl.truststore.location (the authority that issued the brokers' certificates) and that \
                     the brokers' certificates name the host in bootstrap.servers (ssl.endpoint.identification.algorithm)"
                .to_string(),
        };
        format!(
            "the TLS connection to Kafka at bootstrap.servers={} failed (security.protocol={protocol}): {why} \
             (librdkafka: {reason})",
            worker.bootstrap_servers
        )
    } else if lower.contains("authentication failed") || lower.contains("sasl authentication") {
        let mechanism = setting("sasl.mechanism").unwrap_or_else(|| "(none)".into());
        format!(
            "Kafka at bootstrap.servers={} refused this worker's credentials (security.protocol={protocol}, \
             sasl.mechanism={mechanism}): {reason}. Check the user and password in sasl.jaas.config, and that the \
             brokers enable {mechanism}",
            worker.bootstrap_servers
        )
    } else {
        format!(
            "cannot reach Kafka at bootstrap.servers={} within {} ms (security.protocol={protocol}): {reason}. \
             Check that the broker is running, the address is right and its listener speaks {protocol}; \
             wharf.bootstrap.timeout.ms sets how long to wait",
            worker.bootstrap_servers,
            timeout.as_millis()
        )
    }
}

/// Waits until Kafka answered for every record handed to `producer` and each delivery callback
/// ran. rdkafka's own `flush` sleeps in steps of 100 ms when, as in a `PolledProducer`,
/// another thread serves the delivery reports: every flush then took at least 100 ms.
/// librdkafka's flush waits for the count of outstanding records itself.
pub fn flush<C: ProducerContext>(producer: &BaseProducer<C>, timeout: Duration) -> KafkaResult<()> {
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
    consumer_config(worker, connector, &[], &format!("wharf-{connector}-offsets"))
        .create()
        .map_err(|e| anyhow::anyhow!("cannot create a Kafka consumer (check the worker's consumer.* settings): {e}"))
}

/// The topics of the cluster whose names match a sink's `topics.regex`, sorted, the worker's
/// reserved topics left out.
pub fn topics_matching<C: rdkafka::consumer::ConsumerContext>(
    consumer: &BaseConsumer<C>,
    pattern: &crate::config::connector::TopicPattern,
    reserved: &crate::config::ReservedTopics,
    timeout: Duration,
) -> KafkaResult<Vec<String>> {
    let metadata = consumer.fetch_metadata(None, timeout)?;
    let mut topics: Vec<String> = metadata
        .topics()
        .iter()
        .map(|t| t.name())
        .filter(|name| pattern.matches(name) && reserved.reason(name).is_none())
        .map(String::from)
        .collect();
    topics.sort();
    Ok(topics)
}

/// The offsets a sink connector's consumer group (`connect-<connector>`) committed, per
/// partition of its topics: (topic, partition, next offset to read). Partitions without a
/// committed offset are left out.
///
/// A sink of `topics.regex` (`pattern`) reads the topics that match it now.
pub fn committed_offsets(
    worker: &WorkerConfig,
    connector: &str,
    topics: &[String],
    pattern: Option<&crate::config::connector::TopicPattern>,
) -> anyhow::Result<Vec<(String, i32, i64)>> {
    let timeout = worker.bootstrap_timeout;
    let consumer = group_client(worker, connector)?;
    let matching = match pattern {
        None => Vec::new(),
        Some(pattern) => topics_matching(&consumer, pattern, &crate::config::ReservedTopics::of(worker), timeout)
            .map_err(|e| anyhow::anyhow!("cannot list the topics that topics.regex={} matches: {e}", pattern.text))?,
    };
    let mut partitions = TopicPartitionList::new();
    for topic in topics.iter().chain(&matching) {
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
