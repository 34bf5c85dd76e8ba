//! A distributed worker: every piece of durable state lives in three compacted Kafka topics, so a
//! worker started on an empty disk rebuilds everything from them. Workers with one `group.id`
//! share the work through group membership (`cluster`); connectors are managed over REST on any
//! of them.

use std::sync::Arc;

use std::time::Duration;

use anyhow::{Context, Result};

use super::{self as serve, JoinGroup, Stores};
use crate::cluster::member::{Member, MemberConfig, Participant};
use crate::cluster::security::WireSecurity;
use crate::cluster::{ClusterView, Work};
use crate::config::keys::worker as W;
use crate::config::WorkerConfig;
use crate::herder::Herder;
use crate::kafka::admin::{self, TopicSpec};
use crate::kafka::client_config;
use crate::storage::kafka::{config_transactional_id, KafkaConfigLog, KafkaOffsetStore, KafkaStatusStore};
use crate::storage::ConfigStore;

pub async fn run(config: WorkerConfig) -> Result<()> {
    let open_stores: serve::OpenStores = Box::new(|config| Box::pin(open_stores(config)));
    serve::run(config, open_stores, Vec::new(), None).await
}

async fn open_stores(worker: WorkerConfig) -> Result<Stores> {
    let d = worker.distributed.clone().context("a distributed worker needs group.id and the storage topics")?;
    // Read first: a mistake in the security settings is reported as it is, not as a failure to
    // reach Kafka.
    let security = WireSecurity::from_settings(&worker.kafka_security)
        .map_err(|e| anyhow::anyhow!("the group membership cannot use the Kafka security settings: {e}"))?;
    let mut admin_config = client_config(&worker, &worker.admin_overrides, &[]);
    // Asking for a missing topic's metadata must not create it with the broker's defaults.
    admin_config.set("allow.auto.create.topics", "false");
    let admin = std::sync::Arc::new(admin::admin_client(&admin_config)?);
    let specs = [
        TopicSpec {
            name: d.config_topic.clone(),
            property: W::CONFIG_STORAGE_TOPIC.name,
            partitions: 1,
            exactly: true,
            replication_factor: d.config_replication,
            replication_property: W::CONFIG_STORAGE_REPLICATION_FACTOR.name,
            holds: "connector configurations",
        },
        TopicSpec {
            name: d.offset_topic.clone(),
            property: W::OFFSET_STORAGE_TOPIC.name,
            partitions: d.offset_partitions,
            exactly: false,
            replication_factor: d.offset_replication,
            replication_property: W::OFFSET_STORAGE_REPLICATION_FACTOR.name,
            holds: "source offsets",
        },
        TopicSpec {
            name: d.status_topic.clone(),
            property: W::STATUS_STORAGE_TOPIC.name,
            partitions: d.status_partitions,
            exactly: false,
            replication_factor: d.status_replication,
            replication_property: W::STATUS_STORAGE_REPLICATION_FACTOR.name,
            holds: "connector and task statuses",
        },
    ];
    let mut partitions = Vec::new();
    for spec in &specs {
        partitions.push(admin::ensure_topic(&admin, spec).await?);
    }

    let producer = {
        let mut c = client_config(&worker, &worker.producer_overrides, &[]);
        c.set("client.id", format!("wharf-{}-stores", d.group_id));
        c
    };
    let consumer = {
        let mut c = client_config(&worker, &worker.consumer_overrides, &[]);
        c.set("client.id", format!("wharf-{}-stores", d.group_id));
        c.set("allow.auto.create.topics", "false");
        c
    };
    // Under exactly-once support, offsets of transactions not committed are never read.
    let offsets_consumer = {
        let mut c = consumer.clone();
        if worker.exactly_once_source.enabled() {
            if let Some(given) = c.get("isolation.level").filter(|given| *given != "read_committed") {
                tracing::warn!(
                    "The value '{given}' for the 'isolation.level' property will be ignored as it cannot be \
                     overridden for the worker's offset consumer when exactly-once source support is enabled. The \
                     value 'read_committed' will be used instead."
                );
            }
            c.set("isolation.level", "read_committed");
        }
        c
    };
    if worker.exactly_once_source.enabled() {
        let (worker, group) = (worker.clone(), d.group_id.clone());
        tokio::task::spawn_blocking(move || probe_transactions(&worker, &group)).await??;
    }
    tokio::task::spawn_blocking(move || -> Result<Stores> {
        tracing::info!("reading the config topic {}", d.config_topic);
        let config_log = Arc::new(KafkaConfigLog::start(
            &producer,
            &consumer,
            &d.config_topic,
            &config_transactional_id(&d.group_id),
        )?);
        config_log.claim(&d.group_id, &d.config_topic)?;
        tracing::info!("reading the offset topic {} ({} partitions)", d.offset_topic, partitions[1]);
        let offsets = KafkaOffsetStore::start(&producer, &offsets_consumer, &d.offset_topic, partitions[1])?;
        tracing::info!("reading the status topic {} ({} partitions)", d.status_topic, partitions[2]);
        let status = KafkaStatusStore::start(&producer, &consumer, &d.status_topic, partitions[2])?;
        let view = Arc::new(ClusterView::default());
        let join: JoinGroup = {
            let (view, log) = (view.clone(), config_log.clone());
            Box::new(move |herder| {
                let member = MemberConfig {
                    group_id: d.group_id.clone(),
                    bootstrap: crate::cluster::client::bootstrap_addresses(&worker.bootstrap_servers),
                    client_id: format!("wharf-{}-member", d.group_id),
                    url: format!("{}://{}", worker.rest_scheme(), worker.advertised),
                    worker_id: worker.worker_id(),
                    session_timeout: d.session_timeout,
                    heartbeat_interval: d.heartbeat_interval,
                    rebalance_timeout: d.rebalance_timeout,
                    max_delay: d.scheduled_rebalance_max_delay,
                    sync_timeout: d.worker_sync_timeout,
                    security: security.clone(),
                };
                let participant = Arc::new(GroupParticipant { herder, log });
                Member::start(member, view, participant)
            })
        };
        Ok(Stores {
            config: config_log,
            offsets: Arc::new(offsets),
            status: Arc::new(status),
            cluster: Some((view, join)),
        })
    })
    .await?
}

/// The transactional id with which a worker that has exactly-once support enabled checks, as it
/// starts, that Kafka lets it use transactions: one per worker, so that workers starting
/// together do not fence each other's. A task's id ends in `-<task number>`; this one ends in
/// the worker's `:<port>`, so it is never a task's.
fn probe_transactional_id(group_id: &str, worker_id: &str) -> String {
    format!("{group_id}-exactly-once-probe-{worker_id}")
}

/// Initialises a transactional producer as the source tasks' will be, so that a worker whose
/// tasks could not run transactionally refuses to start, naming what to change: the ACLs of its
/// principal, or the brokers' transaction settings.
fn probe_transactions(worker: &WorkerConfig, group_id: &str) -> Result<()> {
    use rdkafka::producer::{BaseProducer, Producer};
    use rdkafka::types::RDKafkaErrorCode as Code;
    let id = probe_transactional_id(group_id, &worker.worker_id());
    let mut config = crate::kafka::producer_config(worker, &[], &format!("wharf-{group_id}-exactly-once-probe"));
    config.set("transactional.id", &id).set("enable.idempotence", "true");
    let producer: BaseProducer = config.create().map_err(|e| {
        anyhow::anyhow!("exactly.once.source.support=enabled: cannot create a transactional producer: {e}")
    })?;
    tracing::info!("exactly.once.source.support=enabled: checking that Kafka lets this worker use transactions");
    let timeout = crate::storage::kafka::STORE_TIMEOUT;
    let Err(e) = producer.init_transactions(timeout) else {
        return Ok(());
    };
    let what = match e.rdkafka_error_code() {
        Some(Code::TransactionalIdAuthorizationFailed) => format!(
            "the worker's principal may not use transactional ids: grant it Write and Describe on TransactionalId \
             {group_id}- (a prefixed ACL covers every source task's id, {group_id}-<connector>-<task>)"
        ),
        Some(Code::ClusterAuthorizationFailed) => {
            "the worker's principal may not write idempotently: grant it IdempotentWrite on the Cluster".into()
        }
        Some(Code::InvalidTransactionTimeout) => "producer.transaction.timeout.ms is above the brokers' \
            transaction.max.timeout.ms (15 minutes by default); lower it"
            .into(),
        _ => format!(
            "Kafka's transaction coordinator did not answer within {} s: the brokers' \
             transaction.state.log.replication.factor (3 by default) must be at most the number of brokers, and \
             transaction.state.log.min.isr at most that; check the brokers' logs",
            timeout.as_secs()
        ),
    };
    anyhow::bail!(
        "exactly.once.source.support=enabled, and Kafka refused transactional id {id}: {what} ({e}). Or set \
         exactly.once.source.support=disabled to deliver at least once"
    )
}

/// What the group membership asks of a distributed worker.
struct GroupParticipant {
    herder: Arc<Herder>,
    log: Arc<KafkaConfigLog>,
}

impl Participant for GroupParticipant {
    fn config_offset(&self) -> i64 {
        self.log.position()
    }

    fn lead(&self) -> Result<(i64, Work), String> {
        self.log.lead().map_err(|e| e.to_string())?;
        let work = Work::of(&self.log.snapshot());
        self.herder.set_assigned_work(work.clone());
        Ok((self.log.position(), work))
    }

    fn follow(&self) {
        self.log.follow();
    }

    fn revoke(&self, work: &Work) {
        self.herder.revoke_and_wait(work);
    }

    fn catch_up(&self, offset: i64, timeout: Duration) -> bool {
        self.log.wait_for(offset, timeout)
    }

    fn assigned(&self) {
        self.herder.wake();
    }
}
