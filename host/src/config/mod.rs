//! Worker and connector configuration.

pub mod ceiling;
pub mod connector;
pub mod converters;
pub mod keys;
pub mod properties;
pub mod reserved;
pub mod worker;

pub use ceiling::GrantCeiling;
pub use connector::{ConnectorConfig, FolderGrant};
pub use converters::{ConverterChoice, ConverterOverrides, Converters};
pub use reserved::ReservedTopics;
pub use worker::{Mode, WasmLimits, WorkerConfig};
