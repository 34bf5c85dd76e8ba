//! The WebAssembly side: engine, plugin registry, sandbox, and instances of plugins.
//!
//! - `engine`: `Runtime`, the wasmtime engine every plugin shares: the linker, the epoch thread
//!   behind call deadlines, the compile cache, and compilation in a process of its own.
//! - `registry`: `PluginRegistry`, every version of every plugin under `plugin.path`, compiled in
//!   the background; `compile_into_cache` is what `wharf plugin compile` runs.
//! - `described`: what a plugin said of itself, kept beside its compiled code.
//! - `instance`: `Plugin` (a connector or a transform, by its `PluginKind`), `SourceInstance` (a
//!   source of bytes or of data), `SinkInstance` (whose `put` also answers the records the plugin
//!   reported as errant), `TransformInstance` (a transform plugin, a batch a call) and
//!   `PluginError`.
//! - `batch`: `BatchReader` reads a data source's or a transform's batch into `data::Data`, and
//!   hands out the last batch's `Arc` for a schema that comes again, so that converters' caches
//!   hit; `BatchWriter` lays out a data sink's or a transform's batch, each schema once.
//! - `sandbox`: `TaskState`, what an instance's store holds (the WASI context, the memory cap,
//!   the `host` and `errant-records` imports, the `put` under way), and the grants it is given.
//! - `transactions`: what a source task asks of its transactions (`transaction-context`),
//!   kept in its store until the source loop reads it with the batch.
//! - `bindings`: the code generated from `wit/`, and nothing else; `wit_convert`: its types to the
//!   domain's and back, and the sizes the per-call byte bound counts; `plugin_log` and `stderr`:
//!   what a plugin writes to the worker's log; `http_out`: wasi:http requests to granted
//!   authorities, at the addresses `network` pinned when the task started, within the
//!   worker-wide socket budget.
//!
//! The generated WIT types stay inside this module: every other layer sees the domain's types
//! (`wharf_connect::model`). `docs/sandbox.md` says what an instance may touch and what bounds it.

mod batch;
mod bindings;
mod described;
pub mod engine;
mod http_out;
pub mod instance;
mod network;
pub mod plugin_log;

pub mod registry;
pub mod sandbox;
mod stderr;
pub mod tls;
pub mod transactions;
mod wit_convert;

pub use engine::{LoadedFrom, Runtime};
pub use instance::{Plugin, PluginError, Put, SinkInstance, SourceInstance};
pub use registry::PluginRegistry;
pub use sandbox::{CallOutcome, ErrantReport, Grants, OffsetLookup, PluginMetric, PluginMetricKind, TaskObserver};
pub use transactions::{End, TransactionEnds};
