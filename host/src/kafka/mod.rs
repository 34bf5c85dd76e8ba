//! Kafka clients as the worker configures them.
//!
//! Every client gets the worker's bootstrap servers and security settings first (librdkafka's
//! names), then its family's (`producer.*`, `consumer.*`, `admin.*`), then a connector's overrides;
//! a client whose brokers a connector overrides gets none of the worker's security settings. Here:
//! `producer_config`, `consumer_config`, `client_config`, `sink_consumer_config` (a sink task's
//! consumer as a static member, `StaticMember`), `member_id` (the id the group's coordinator gave a
//! consumer), `cluster_id` (the start-up check, which tells an untrusted certificate from one for
//! another host), `flush` (without rdkafka's 100 ms steps), and `committed_offsets` and
//! `commit_group_offsets` (a sink group's offsets, read and set from outside the group).
//!
//! - `producers`: `ProducerPool`, one producer per distinct client config (the host's default
//!   `client.id` aside), shared by the source tasks and dead-letter queues with those settings
//!   while any uses it; a producer that refused a record is retired, so no later task inherits it.
//! - `polled`: `PolledProducer`, whose delivery reports a thread of its own serves.
//! - `batch`: `FetchQueue`, a sink's partitions read in batches.
//! - `log`: `KafkaLog`, a topic followed and read to its end.
//! - `admin`: internal topics created and checked; a sink's consumer group deleted.
//! - `partitioner`: murmur2, as Kafka's Java producer.

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
    secure(&mut config, worker, connector);
    config
        .set("client.id", client_id)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("partitioner", "murmur2_random");
    for (key, value) in family(&worker.producer_overrides, connector) {
        config.set(key, value);
    }
    config
}

/// Whether a connector's overrides point its client at brokers of their own.
fn redirected(connector: &[(String, String)]) -> bool {
    connector.iter().any(|(key, _)| key == "bootstrap.servers")
}

/// The worker's bootstrap servers and security settings (`security.protocol`, `ssl.*`,
/// `sasl.*`, in librdkafka's names), which every client gets before its family's overrides;
/// a client a connector points at other brokers gets neither, so the worker's credentials never
/// reach a broker the connector chose.
fn secure(config: &mut ClientConfig, worker: &WorkerConfig, connector: &[(String, String)]) {
    if redirected(connector) {
        return;
    }
    config.set("bootstrap.servers", &worker.bootstrap_servers);
    for (key, value) in &worker.kafka_security {
        config.set(key, value);
    }
}

/// The worker's settings of one client family (`producer.*`, …), then the connector's own
/// overrides of it; the worker's security settings are left out of a redirected client.
fn family<'a>(
    worker: &'a [(String, String)],
    connector: &'a [(String, String)],
) -> impl Iterator<Item = &'a (String, String)> {
    let redirected = redirected(connector);
    worker.iter().filter(move |(key, _)| !redirected || !crate::config::security::is_security_key(key)).chain(connector)
}

/// A client's settings: the worker's bootstrap servers and security, the worker's settings of
/// one client family (`admin.*`, `producer.*` or `consumer.*`), then a connector's overrides of
/// that family (empty for the worker's own clients).
pub fn client_config(
    worker: &WorkerConfig,
    overrides: &[(String, String)],
    connector: &[(String, String)],
) -> ClientConfig {
    let mut config = ClientConfig::new();
    secure(&mut config, worker, connector);
    for (key, value) in family(overrides, connector) {
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
    secure(&mut config, worker, overrides);
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
        .set("fetch.queue.backoff.ms", "10")
        // librdkafka prefetches up to 64 MiB per consumer by default, far more than a task puts
        // in a second; Connect's consumer holds a fetch or two. A worker's consumer.* or a
        // connector's consumer.override.* key sets another bound.
        .set("queued.max.messages.kbytes", SINK_PREFETCH_KIB);
    for (key, value) in family(&worker.consumer_overrides, overrides) {
        if !HOST_CONSUMER_KEYS.contains(&key.as_str()) && key != GROUP_INSTANCE_ID {
            config.set(key, value);
        }
    }
    config
}

/// What a sink task's consumer fetches ahead of the task at most, KiB
/// (`queued.max.messages.kbytes`).
pub const SINK_PREFETCH_KIB: &str = "16384";

/// The consumer setting of static group membership (KIP-345). The host sets it for each sink
/// task itself (`sink_consumer_config`); a client that only reads or commits a group's offsets
/// never has it.
pub const GROUP_INSTANCE_ID: &str = "group.instance.id";

/// The longest `group.instance.id` Kafka takes (as for a topic name).
const MAX_INSTANCE_ID_LEN: usize = 249;

/// A sink task's place in its consumer group when it joins as a static member: the task's next
/// run, on whichever worker, takes the place over at once, and the consumer it replaces is
/// fenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticMember {
    pub group: String,
    pub instance: String,
}

/// A sink task's consumer: `consumer_config`, and the task's static identity in its group unless
/// `group.instance.id` is set empty (in the worker's `consumer.*` or the connector's
/// `consumer.override.*`). The identity is `<prefix>-<connector>-<task>`; the prefix is a value
/// given there, or `wharf-` and the cluster's `group.id` (a standalone worker's host name and
/// id), so that two clusters, or standalone workers, that name a connector alike and share its
/// group do not fence each other. Characters
/// Kafka does not take in an id, or an id too long, are replaced and the whole is hashed, so
/// that two ids never meet.
pub fn sink_consumer_config(
    worker: &WorkerConfig,
    connector: &str,
    overrides: &[(String, String)],
    client_id: &str,
    task: u32,
) -> (ClientConfig, Option<StaticMember>) {
    let mut config = consumer_config(worker, connector, overrides, client_id);
    let given = worker.consumer_overrides.iter().chain(overrides).rev().find(|(k, _)| k == GROUP_INSTANCE_ID);
    let prefix = match given {
        Some((_, value)) if value.trim().is_empty() => return (config, None),
        Some((_, value)) => value.trim().to_string(),
        None => match &worker.distributed {
            Some(cluster) => format!("wharf-{}", cluster.group_id),
            // Standalone workers on several machines may all be localhost:8083.
            None => format!("wharf-{}-{}", host_name(), worker.worker_id()),
        },
    };
    let instance = instance_id(&format!("{prefix}-{connector}-{task}"));
    let group = config.get("group.id").unwrap_or_default().to_string();
    config.set(GROUP_INSTANCE_ID, &instance);
    (config, Some(StaticMember { group, instance }))
}

/// This machine's host name; empty when the system gives none.
fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the call writes at most `buffer.len()` bytes into the buffer, which outlives it.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if result != 0 {
        return String::new();
    }
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// `wanted` as a `group.instance.id` Kafka takes: letters, digits, `.`, `_` and `-`, at most
/// 249 characters. Anything else is replaced, and a digest of `wanted` added.
fn instance_id(wanted: &str) -> String {
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if wanted.len() <= MAX_INSTANCE_ID_LEN && wanted.chars().all(legal) {
        return wanted.to_string();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(wanted.as_bytes());
    let tag: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let kept: String = wanted.chars().map(|c| if legal(c) { c } else { '_' }).take(200).collect();
    format!("{kept}-{tag}")
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
    let setting = |key: &str| wharf_connect::model::last_value(&worker.kafka_security, key).map(String::from);
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
    let setting = |key: &str| wharf_connect::model::last_value(&worker.kafka_security, key).map(String::from);
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

/// The member id a consumer's group coordinator gave it; none before it joined.
pub fn member_id<C: rdkafka::consumer::ConsumerContext>(consumer: &BaseConsumer<C>) -> Option<String> {
    let handle = consumer.client().native_ptr();
    // SAFETY: the handle is alive for as long as `consumer` is borrowed; librdkafka answers a
    // copy of the id (or null), which is read here and then freed with its own allocator.
    let id = unsafe {
        let raw = rdkafka::bindings::rd_kafka_memberid(handle);
        if raw.is_null() {
            return None;
        }
        let id = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
        rdkafka::bindings::rd_kafka_mem_free(handle, raw.cast());
        id
    };
    (!id.is_empty()).then_some(id)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{properties, Mode};

    fn worker(text: &str, mode: Mode) -> WorkerConfig {
        let storage = match mode {
            Mode::Standalone => "offset.storage.file.filename=/o",
            Mode::Distributed => {
                "group.id=east\nconfig.storage.topic=c\noffset.storage.topic=o\nstatus.storage.topic=s"
            }
        };
        let text =
            format!("bootstrap.servers=localhost:1\nplugin.path=/p\nlisteners=http://w1:8083\n{storage}\n{text}");
        WorkerConfig::from_properties(&properties::parse(&text, "test").unwrap(), "test", mode).unwrap()
    }

    fn pairs(given: &[(&str, &str)]) -> Vec<(String, String)> {
        given.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn instance_of(worker: &WorkerConfig, connector: &str, overrides: &[(&str, &str)], task: u32) -> Option<String> {
        let (config, member) = sink_consumer_config(worker, connector, &pairs(overrides), "c", task);
        assert_eq!(config.get(GROUP_INSTANCE_ID), member.as_ref().map(|m| m.instance.as_str()));
        member.map(|m| m.instance)
    }

    #[test]
    fn a_sink_task_joins_as_a_static_member_named_after_its_cluster_connector_and_task() {
        let cluster = worker("", Mode::Distributed);
        assert_eq!(instance_of(&cluster, "orders", &[], 2).as_deref(), Some("wharf-east-orders-2"));
        let (_, member) = sink_consumer_config(&cluster, "orders", &[], "c", 0);
        assert_eq!(member.unwrap().group, "connect-orders");
        // The group a connector names is the one its member leaves.
        let (_, member) = sink_consumer_config(&cluster, "orders", &pairs(&[("group.id", "mine")]), "c", 0);
        assert_eq!(member.unwrap().group, "mine");
        // A standalone worker is known by its machine's name and its id.
        let alone = worker("", Mode::Standalone);
        let id = instance_of(&alone, "orders", &[], 0).unwrap();
        assert!(id.starts_with(&format!("wharf-{}-w1_8083-orders-0-", host_name().replace(':', "_"))), "{id}");
        assert!(!host_name().is_empty());
    }

    #[test]
    fn an_empty_group_instance_id_turns_static_membership_off_and_a_given_one_is_the_prefix() {
        let alone = worker("", Mode::Standalone);
        assert_eq!(instance_of(&alone, "orders", &[("group.instance.id", "")], 0), None);
        assert_eq!(
            instance_of(&alone, "orders", &[("group.instance.id", "blue")], 1).as_deref(),
            Some("blue-orders-1")
        );
        let off = worker("consumer.group.instance.id=\n", Mode::Standalone);
        assert_eq!(instance_of(&off, "orders", &[], 0), None);
        // The connector's own setting wins over the worker's.
        assert_eq!(
            instance_of(&off, "orders", &[("group.instance.id", "green")], 0).as_deref(),
            Some("green-orders-0")
        );
        // A client that only reads or commits a group's offsets never joins it as a member.
        let reader = consumer_config(&alone, "orders", &pairs(&[("group.instance.id", "blue")]), "c");
        assert_eq!(reader.get(GROUP_INSTANCE_ID), None);
    }

    #[test]
    fn ids_kafka_would_refuse_are_mended_without_two_meeting() {
        assert_eq!(instance_id("wharf-a.b_c-0"), "wharf-a.b_c-0");
        let spaced = instance_id("wharf-x-my connector-0");
        let slashed = instance_id("wharf-x-my/connector-0");
        for id in [&spaced, &slashed] {
            assert!(
                id.starts_with("wharf-x-my_connector-0-")
                    && id.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{id}"
            );
        }
        assert_ne!(spaced, slashed);
        let long = instance_id(&format!("wharf-x-{}-0", "n".repeat(300)));
        assert!(long.len() <= MAX_INSTANCE_ID_LEN, "{}", long.len());
        assert_ne!(long, instance_id(&format!("wharf-x-{}-1", "n".repeat(300))));
    }
}
