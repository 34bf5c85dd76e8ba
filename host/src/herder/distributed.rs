//! A distributed worker: every piece of durable state lives in three compacted Kafka topics, so a
//! worker started on an empty disk rebuilds everything from them. Connectors are managed over
//! REST. (One worker per group for now: group membership and assignment come later.)

use std::sync::Arc;

use anyhow::{Context, Result};
use rdkafka::ClientConfig;

use super::serve::{self, Stores};
use crate::config::WorkerConfig;
use crate::kafka::admin::{self, TopicSpec};
use crate::storage::kafka::{KafkaConfigLog, KafkaOffsetStore, KafkaStatusStore};

fn client_config(worker: &WorkerConfig, overrides: &[(String, String)]) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &worker.bootstrap_servers);
    for (key, value) in overrides {
        config.set(key, value);
    }
    config
}

pub async fn run(config: WorkerConfig) -> Result<()> {
    let open_stores: serve::OpenStores = Box::new(|config| Box::pin(open_stores(config)));
    serve::run(config, open_stores, Vec::new(), None).await
}

async fn open_stores(worker: WorkerConfig) -> Result<Stores> {
    let d = worker.distributed.clone().context("a distributed worker needs group.id and the storage topics")?;
    let mut admin_config = client_config(&worker, &worker.admin_overrides);
    // Asking for a missing topic's metadata must not create it with the broker's defaults.
    admin_config.set("allow.auto.create.topics", "false");
    let admin = admin::admin_client(&admin_config)?;
    let specs = [
        TopicSpec {
            name: d.config_topic.clone(),
            property: "config.storage.topic",
            partitions: 1,
            exactly: true,
            replication_factor: d.config_replication,
            replication_property: "config.storage.replication.factor",
            holds: "connector configurations",
        },
        TopicSpec {
            name: d.offset_topic.clone(),
            property: "offset.storage.topic",
            partitions: d.offset_partitions,
            exactly: false,
            replication_factor: d.offset_replication,
            replication_property: "offset.storage.replication.factor",
            holds: "source offsets",
        },
        TopicSpec {
            name: d.status_topic.clone(),
            property: "status.storage.topic",
            partitions: d.status_partitions,
            exactly: false,
            replication_factor: d.status_replication,
            replication_property: "status.storage.replication.factor",
            holds: "connector and task statuses",
        },
    ];
    let mut partitions = Vec::new();
    for spec in &specs {
        partitions.push(admin::ensure_topic(&admin, spec).await?);
    }

    let producer = {
        let mut c = client_config(&worker, &worker.producer_overrides);
        c.set("client.id", format!("wharf-{}-stores", d.group_id));
        c
    };
    let consumer = {
        let mut c = client_config(&worker, &worker.consumer_overrides);
        c.set("client.id", format!("wharf-{}-stores", d.group_id));
        c.set("allow.auto.create.topics", "false");
        c
    };
    tokio::task::spawn_blocking(move || -> Result<Stores> {
        tracing::info!("reading the config topic {}", d.config_topic);
        let config_log = KafkaConfigLog::start(&producer, &consumer, &d.config_topic)?;
        config_log.claim(&d.group_id, &d.config_topic)?;
        tracing::info!("reading the offset topic {} ({} partitions)", d.offset_topic, partitions[1]);
        let offsets = KafkaOffsetStore::start(&producer, &consumer, &d.offset_topic, partitions[1])?;
        tracing::info!("reading the status topic {} ({} partitions)", d.status_topic, partitions[2]);
        let status = KafkaStatusStore::start(&producer, &consumer, &d.status_topic, partitions[2])?;
        Ok(Stores { config: Arc::new(config_log), offsets: Arc::new(offsets), status: Arc::new(status) })
    })
    .await?
}
