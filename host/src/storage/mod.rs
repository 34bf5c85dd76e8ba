//! Durable and shared state: source offsets and statuses.

pub mod offsets;
pub mod status;

pub use offsets::{FileOffsetStore, OffsetStore};
pub use status::{MemoryStatusStore, State, Status, StatusStore};
