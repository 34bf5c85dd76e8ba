//! The WebAssembly side: engine, plugin registry, sandbox, and instances of plugins.

mod batch;
mod bindings;
mod described;
pub mod engine;
mod http_out;
pub mod instance;
pub mod plugin_log;

pub mod registry;
pub mod sandbox;
mod stderr;

pub use engine::{LoadedFrom, Runtime};
pub use instance::{Plugin, PluginError, Put, SinkInstance, SourceInstance};
pub use registry::PluginRegistry;
pub use sandbox::{ErrantReport, Grants, OffsetLookup};
