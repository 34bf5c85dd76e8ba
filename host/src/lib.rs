//! Wharf: a connector host in the spirit of Kafka Connect whose connectors are WebAssembly
//! components. See ARCHITECTURE.md for the map.

// An item marked `pub` is part of the crate's API, reachable from outside; the rest say
// `pub(crate)`.
#![warn(unreachable_pub)]

pub mod bench;
pub mod cluster;
pub mod config;
pub mod dev;
pub mod herder;
pub mod kafka;
pub mod logging;
pub mod metrics;
pub mod peer;
pub mod rest;
pub mod runtime;
pub mod scaffold;
pub mod serve;
pub mod storage;
pub mod sync;
pub mod worker;

/// Wharf's own version, which `GET /` reports beside the Kafka Connect version it follows.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
