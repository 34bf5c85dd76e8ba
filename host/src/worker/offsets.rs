//! A connector's offsets as KIP-875's `GET`, `PATCH` and `DELETE /connectors/{name}/offsets`
//! read and change them: a source's in the offset store, a sink's in its consumer group
//! (`connect-<name>`), as Kafka Connect's `Worker` keeps them. The herder decides when a change
//! is allowed (the connector STOPPED, its tasks gone); this says what is there and changes it.
//! Everything here blocks on Kafka or on the offset store: callers are request threads, never
//! the herder's.

use wharf_connect::model::{ConnectorKind, OffsetMap};

use super::Worker;
use crate::config::ConnectorConfig;
use crate::storage::offsets::OffsetStoreError;

/// A connector's offsets as `GET /connectors/{name}/offsets` reports them.
pub enum ConnectorOffsets {
    /// Per source partition, the last stored source offset.
    Source(Vec<(OffsetMap, OffsetMap)>),
    /// Per topic partition, the next offset to read, as committed by the connector's group.
    Sink(Vec<(String, i32, i64)>),
}

/// What `PATCH` and `DELETE /connectors/{name}/offsets` ask for.
pub enum OffsetsChange {
    /// A source's partitions with their new offsets, none to forget one.
    Source(Vec<(OffsetMap, Option<OffsetMap>)>),
    /// A sink's topic partitions with the next offset to read.
    Sink(Vec<(String, i32, i64)>),
    /// Forget every offset.
    Reset,
}

/// Why offsets could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum OffsetsError {
    /// The offset store refused.
    #[error("{0}")]
    Store(String),
    /// Kafka did not answer, or refused (the consumer group's offsets).
    #[error("{0}")]
    Kafka(String),
    /// The change is shaped for the other kind of connector.
    #[error("connector {name} is a {} connector; the offsets given are shaped for the other kind", kind.name())]
    WrongKind { name: String, kind: ConnectorKind },
}

/// Said after a change: Wharf changed only what it keeps.
const ELSEWHERE: &str = "A plugin that keeps offsets elsewhere as well must have those changed there";

impl Worker {
    /// A source connector's stored offsets, per source partition (in its own offset topic
    /// first, then the worker's).
    pub fn source_offsets(&self, config: &ConnectorConfig) -> Result<Vec<(OffsetMap, OffsetMap)>, OffsetsError> {
        Ok(self.offset_topics.store_for(config).map_err(OffsetsError::Store)?.list(&config.name))
    }

    /// A sink connector's offsets: per topic partition of its topics, the next offset its
    /// consumer group reads.
    pub fn sink_offsets(&self, config: &ConnectorConfig) -> Result<Vec<(String, i32, i64)>, OffsetsError> {
        crate::kafka::committed_offsets(self.config(), &config.name, &config.topics, config.topics_regex.as_ref())
            .map_err(|e| OffsetsError::Kafka(format!("{e:#}")))
    }

    /// Alters or resets a connector's offsets (the caller made sure it is stopped); returns what
    /// to tell the user.
    pub fn change_offsets(
        &self,
        kind: ConnectorKind,
        config: &ConnectorConfig,
        change: OffsetsChange,
    ) -> Result<String, OffsetsError> {
        let name = config.name.as_str();
        let store_error = |e: OffsetStoreError| OffsetsError::Store(e.to_string());
        let kafka_error = |e: anyhow::Error| OffsetsError::Kafka(format!("{e:#}"));
        match (kind, change) {
            (ConnectorKind::Source, OffsetsChange::Reset) => {
                let store = self.offset_topics.store_for(config).map_err(OffsetsError::Store)?;
                let forget: Vec<_> = store.list(name).into_iter().map(|(p, _)| (p, None)).collect();
                store.change(name, &forget).map_err(store_error)?;
                Ok(format!("The offsets Wharf keeps for connector {name} were reset. {ELSEWHERE}"))
            }
            (ConnectorKind::Source, OffsetsChange::Source(changes)) => {
                let store = self.offset_topics.store_for(config).map_err(OffsetsError::Store)?;
                store.change(name, &changes).map_err(store_error)?;
                Ok(format!("The offsets Wharf keeps for connector {name} were altered. {ELSEWHERE}"))
            }
            (ConnectorKind::Sink, OffsetsChange::Reset) => {
                let config = self.config();
                let admin = crate::kafka::admin::admin_client(&crate::kafka::client_config(
                    config,
                    &config.admin_overrides,
                    &[],
                ))
                .map_err(kafka_error)?;
                crate::kafka::admin::delete_group_blocking(&admin, &format!("connect-{name}")).map_err(kafka_error)?;
                Ok(format!("The offsets of connector {name} were reset (its consumer group connect-{name} is deleted)"))
            }
            (ConnectorKind::Sink, OffsetsChange::Sink(offsets)) => {
                crate::kafka::commit_group_offsets(self.config(), name, &offsets).map_err(kafka_error)?;
                Ok(format!("The offsets of connector {name} were altered"))
            }
            (kind, _) => Err(OffsetsError::WrongKind { name: name.to_string(), kind }),
        }
    }
}
