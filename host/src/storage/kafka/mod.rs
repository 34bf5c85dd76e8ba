//! The distributed worker's stores, each on a compacted topic, with Kafka Connect's keys and
//! JSON values so that people's tools and habits carry over:
//! - config topic (`config_log`): `connector-<name>` {"properties"}, `task-<name>-<n>`
//!   {"properties"}, `commit-<name>` {"tasks"}, `target-state-<name>` {"state","state.v2"};
//!   tombstones delete.
//! - offset topic (`offset_log`): key `["<connector>",{partition}]`, value the offset map.
//! - status topic (`status_log`): `status-connector-<name>`, `status-task-<name>-<n>` with
//!   {"state","trace","worker_id","generation"}.
//!
//! `writer` holds what writes them: `LogWriter` (acknowledged writes) and the config topic's
//! `FencedWriter` (transactions under the cluster's transactional id).

mod config_log;
mod offset_log;
mod status_log;
mod writer;

pub use config_log::{KafkaConfigLog, OWNER_KEY};
pub use offset_log::KafkaOffsetStore;
pub use status_log::KafkaStatusStore;
pub use writer::{config_transactional_id, LogWriter, WriteTracker, STORE_TIMEOUT};

/// A record value: JSON text.
fn json_bytes(value: serde_json::Value) -> Option<Vec<u8>> {
    Some(value.to_string().into_bytes())
}
