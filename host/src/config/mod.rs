//! Worker and connector configuration.

pub mod connector;
pub mod properties;
pub mod worker;

pub use connector::{ConnectorConfig, FolderGrant};
pub use worker::{Mode, WasmLimits, WorkerConfig};
