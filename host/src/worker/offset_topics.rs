//! Source connectors' topics of their own for their offsets (`offsets.storage.topic`, Kafka
//! Connect's connector-specific offsets topic). Each topic is created like the worker's
//! `offset.storage.topic` when missing, read by a store of its own while a task or a request uses
//! it, and laid over the worker's store (`storage::offsets::LayeredOffsetStore`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::config::{ConnectorConfig, WorkerConfig};
use crate::kafka;
use crate::storage::kafka::KafkaOffsetStore;
use crate::storage::offsets::LayeredOffsetStore;
use crate::storage::OffsetStore;
use crate::sync::Unpoisoned;

/// The most topics of their own that connectors' offsets may be in at once on one worker.
pub const MAX_OFFSET_TOPICS: usize = 1000;
/// How long a topic created a moment ago is looked for in the brokers' metadata, and how often.
const METADATA_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);
const METADATA_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// The worker's stores of connectors' own offset topics, one per topic while anything uses it.
pub struct OffsetTopics {
    worker: WorkerConfig,
    global: Arc<dyn OffsetStore>,
    stores: Mutex<HashMap<String, Weak<KafkaOffsetStore>>>,
}

impl OffsetTopics {
    pub fn new(worker: WorkerConfig, global: Arc<dyn OffsetStore>) -> Self {
        OffsetTopics { worker, global, stores: Mutex::default() }
    }

    /// Where a connector's offsets are: the worker's store, or, for a source of a distributed
    /// worker with an `offsets.storage.topic` other than the worker's, that topic's over the
    /// worker's. Blocking: the topic may be created and is read to its end.
    pub fn store_for(&self, config: &ConnectorConfig) -> Result<Arc<dyn OffsetStore>, String> {
        let (Some(cluster), Some(topic)) = (&self.worker.distributed, &config.offsets_topic) else {
            return Ok(self.global.clone());
        };
        if *topic == cluster.offset_topic {
            return Ok(self.global.clone());
        }
        let own = self.own_store(topic, cluster)?;
        Ok(Arc::new(LayeredOffsetStore::new(own, self.global.clone())))
    }

    fn own_store(
        &self,
        topic: &str,
        cluster: &crate::config::worker::DistributedConfig,
    ) -> Result<Arc<KafkaOffsetStore>, String> {
        {
            let mut stores = self.stores.locked();
            if let Some(store) = stores.get(topic).and_then(Weak::upgrade) {
                return Ok(store);
            }
            stores.retain(|_, store| store.strong_count() > 0);
            if stores.len() >= MAX_OFFSET_TOPICS {
                return Err(format!(
                    "offsets.storage.topic={topic}: this worker reads {MAX_OFFSET_TOPICS} connectors' offset topics \
                     already, the most it may; let connectors share a topic, or leave offsets.storage.topic unset"
                ));
            }
        }
        // Made without the lock (it may take seconds); two made at once for one topic end up as
        // one, the first kept.
        let why = |e: anyhow::Error| format!("offsets.storage.topic={topic}: {e:#}");
        let compact = [("cleanup.policy".to_string(), "compact".to_string())];
        kafka::admin::ensure_plain_topic(
            &self.worker,
            &[],
            topic,
            cluster.offset_partitions,
            cluster.offset_replication,
            &compact,
        )
        .map_err(why)?;
        let partitions = self.partitions(topic).map_err(why)?;
        kafka::admin::refuse_uncompacted(&self.worker, topic, "offsets.storage.topic", "source offsets")
            .map_err(why)?;
        let client_id = format!("wharf-{}-offsets-{topic}", cluster.group_id);
        let mut producer = kafka::client_config(&self.worker, &self.worker.producer_overrides, &[]);
        producer.set("client.id", &client_id);
        let mut consumer = kafka::client_config(&self.worker, &self.worker.consumer_overrides, &[]);
        consumer.set("client.id", &client_id).set("allow.auto.create.topics", "false");
        if self.worker.exactly_once_source.enabled() {
            consumer.set("isolation.level", "read_committed");
        }
        tracing::info!("reading the offset topic {topic} ({partitions} partitions) of the connectors that name it");
        let store = Arc::new(KafkaOffsetStore::start(&producer, &consumer, topic, partitions).map_err(why)?);
        let mut stores = self.stores.locked();
        if let Some(first) = stores.get(topic).and_then(Weak::upgrade) {
            return Ok(first);
        }
        stores.insert(topic.to_string(), Arc::downgrade(&store));
        Ok(store)
    }

    /// A topic's partitions, asked again for a few seconds: a topic created a moment ago may not
    /// be in the brokers' metadata yet.
    fn partitions(&self, topic: &str) -> anyhow::Result<i32> {
        let deadline = std::time::Instant::now() + METADATA_PATIENCE;
        loop {
            match kafka::admin::topic_partitions(&self.worker, topic) {
                Ok(partitions) => return Ok(partitions),
                Err(_) if std::time::Instant::now() < deadline => std::thread::sleep(METADATA_RETRY_PAUSE),
                Err(e) => return Err(e),
            }
        }
    }
}
