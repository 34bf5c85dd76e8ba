//! Kafka Connect's data plane as Wharf runs it, apart from everything that moves the data: no
//! Kafka client, no WebAssembly runtime, no threads. The host (`wharf`) builds its tasks from
//! these parts; nothing here knows the host.
//!
//! - [`data`]: Connect's data model, a `Schema` and a `Value` that matches it (or a value
//!   without one), with the logical types `Decimal`, `Date`, `Time` and `Timestamp`.
//! - [`model`]: the domain's records and names: source partitions and offsets, a record's key,
//!   value and headers as they cross a plugin's boundary, statuses, connector kinds, plugin
//!   descriptions.
//! - [`convert`]: Connect's converters (`JsonConverter`, `StringConverter`,
//!   `ByteArrayConverter`, the number converters, `SimpleHeaderConverter`), byte for byte.
//! - [`transform`]: Connect's single message transforms and predicates, and the chain a
//!   connector's `transforms=` configures, with a seam for transforms that are plugins.
//!
//! Layers, lowest first: `data` and `model` (which uses `data`), then `convert`, then
//! `transform`. `connect/tests/conformance.rs` runs the converters and transforms beside Kafka Connect's
//! own classes.

// An item marked `pub` is part of the crate's API, reachable from outside; the rest say
// `pub(crate)`.
#![warn(unreachable_pub)]

pub mod convert;
pub mod data;
pub mod model;
pub mod transform;
