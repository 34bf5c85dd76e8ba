//! Durable and shared state: source offsets and statuses.

pub mod config;
pub mod kafka;
pub mod offsets;
pub mod status;

pub use config::{ConfigSnapshot, ConfigStore, MemoryConfigStore, TargetState};
pub use offsets::{FileOffsetStore, OffsetStore};
pub use status::{MemoryStatusStore, State, Status, StatusStore};
