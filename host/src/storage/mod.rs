//! Durable and shared state: source offsets and statuses.
//!
//! Three stores, each with a standalone form and one on a compacted Kafka topic (`kafka`):
//! `ConfigStore` (connector configs, task configs, target states: `MemoryConfigStore`,
//! `KafkaConfigLog`), `OffsetStore` (`FileOffsetStore`, `KafkaOffsetStore`) and `StatusStore`
//! (`MemoryStatusStore`, `KafkaStatusStore`). The status store also keeps the topics each
//! connector used (Connect's `status-topic-<topic>:connector-<connector>` records), forgotten with
//! the connector. Each topic's file under `kafka/` holds its record format, its replay and
//! table-driven tests of the replay. The stores keep state; they never decide what runs.

pub mod config;
pub mod kafka;
pub mod offsets;
pub mod status;

pub use config::{ConfigSnapshot, ConfigStore, MemoryConfigStore, TargetState};
pub use offsets::{FileOffsetStore, OffsetStore};
pub use status::{MemoryStatusStore, State, Status, StatusStore};
