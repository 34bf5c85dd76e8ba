//! Plugin instances: a loaded component, the connector calls (describe, validate, task-configs)
//! and running source and sink tasks. Every call into a plugin runs under a deadline and a memory
//! cap, and every failure is turned into a `PluginError` a person can act on.

use std::path::PathBuf;

use wasmtime::component::{Component, ResourceAny};
use wasmtime::Store;

use super::bindings::{
    data_sink, data_source, declared, declared_connections, declared_tls, exactly_once, sink, source, transform, wit,
    WitCapability,
};
use super::engine::{block_on_until, Runtime};
use super::plugin_log::error_text;
use super::sandbox::{ErrantReport, Grants, Putting, TaskState};
use super::wit_convert::{self, record_bytes};
use crate::config::WasmLimits;

use super::sandbox::CallOutcome;

mod connector_instance;
mod sink_instance;
mod source_instance;
mod transform_instance;

pub use connector_instance::ConnectorInstance;
use sink_instance::SinkTask;
pub use sink_instance::{Put, SinkInstance};
pub use source_instance::SourceInstance;
use source_instance::SourceTask;
pub use transform_instance::TransformInstance;

use wharf_connect::model::{
    ConnectRecord, PartitionOffset, PluginInfo, PluginKind, PolledRecord, SinkRecord, TopicPartition,
};

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The plugin reported a passing problem; the call may be retried.
    #[error("{0}")]
    Retriable(String),
    /// The plugin reported that it cannot go on.
    #[error("{0}")]
    Fatal(String),
    #[error("exceeded wasm.call.timeout.ms={timeout_ms} in {call}")]
    Timeout { call: &'static str, timeout_ms: u128 },
    #[error("exceeded wasm.memory.max.bytes={max} in {call} (it asked to grow to {asked} bytes)")]
    Memory { call: &'static str, max: usize, asked: usize },
    #[error("plugin trapped in {call}: {message}")]
    Trap { call: &'static str, message: String, details: String },
    #[error("plugin returned {count} records from one {call}, more than wasm.max.records.per.call={max}")]
    TooMany { call: &'static str, count: usize, max: u32 },
    #[error("plugin returned {bytes} bytes from one {call}, more than wasm.max.bytes.per.call={max}")]
    TooLarge { call: &'static str, bytes: usize, max: usize },
    /// The copy out of the plugin ran past `lift_budget` while it was being made.
    #[error(
        "plugin passed more data out in one {call} than the host copies for one call: more than \
         wasm.max.bytes.per.call={max} (plus room for the bookkeeping of {records} records, {budget} bytes in all, \
         where bytes the answer names twice count twice); the host stopped copying"
    )]
    CopyTooLarge { call: &'static str, max: usize, records: u32, budget: usize },
    #[error(
        "the connector generated {count} task configurations, more than tasks.max={max}, the most it is \
         configured to create; raise tasks.max or fix the plugin"
    )]
    TooManyTasks { count: usize, max: u32 },
    #[error(
        "the record at {topic}-{partition} offset {offset} is {bytes} bytes, more than wasm.max.bytes.per.call={max} \
         lets one put carry; raise the limit for this connector (and the worker), or skip the record by moving the \
         connector's offsets past it"
    )]
    RecordTooLarge { topic: String, partition: i32, offset: i64, bytes: usize, max: usize },
    #[error("cannot start the plugin: {0}")]
    Instantiate(String),
    /// An earlier call ran out of time and was abandoned half-way; the instance is not entered
    /// again.
    #[error("not calling {call}: the plugin's instance was given up after {earlier} exceeded wasm.call.timeout.ms")]
    Abandoned { call: &'static str, earlier: &'static str },
    /// An earlier call trapped: WebAssembly does not enter an instance again after a trap.
    #[error("not calling {call}: the plugin's instance trapped in {earlier} and is not entered again")]
    Poisoned { call: &'static str, earlier: &'static str },
}

impl PluginError {
    pub fn is_retriable(&self) -> bool {
        matches!(self, PluginError::Retriable(_))
    }

    /// The message plus whatever helps a person dig further (the wasm backtrace).
    pub fn trace(&self) -> String {
        match self {
            PluginError::Trap { details, .. } if !details.is_empty() => {
                format!("{self}\n{details}")
            }
            _ => self.to_string(),
        }
    }
}

/// The bounds of a data batch's schemas, from the task's limits.
fn schema_bounds(limits: &WasmLimits) -> super::batch::SchemaBounds {
    super::batch::SchemaBounds { max_depth: limits.max_schema_depth, max_nodes: limits.max_schema_nodes }
}

/// A component that passed inspection, ready to instantiate.
pub struct Plugin {
    pub info: PluginInfo,
    pub path: PathBuf,
    pre: PluginPre,
    /// Where the `grants` export is, for plugins that have it (0.1.1 and later).
    grants: Option<declared::DeclaredGrantsIndices>,
    /// Where the `connection-grants` export is, for plugins that have it (0.1.4 and later).
    connections: Option<declared_connections::DeclaredConnectionGrantsIndices>,
    /// Where the `connection-tls` export is, for plugins that have it (0.1.5 and later).
    tls: Option<declared_tls::DeclaredConnectionTlsIndices>,
    /// Where the `exactly-once` export is, for sources that have it (0.1.8 and later).
    exactly_once: Option<exactly_once::ExactlyOnceSourceIndices>,
    /// The patch of the 0.1 contract the plugin was built for (`N` of its task export's
    /// `@0.1.N`): what it understands of calls whose meaning later patches added.
    contract_patch: u32,
}

/// The first patch whose sources understand `poll(0)` as "keep your connections alive".
const KEEP_ALIVE_PATCH: u32 = 6;

impl Plugin {
    /// The compiled component.
    pub fn component(&self) -> &Component {
        match &self.pre {
            PluginPre::Source(pre) => pre.instance_pre().component(),
            PluginPre::DataSource(pre) => pre.instance_pre().component(),
            PluginPre::Sink(pre) => pre.instance_pre().component(),
            PluginPre::DataSink(pre) => pre.instance_pre().component(),
            PluginPre::Transform(pre) => pre.instance_pre().component(),
        }
    }
}

enum PluginPre {
    Source(source::SourceCorePre<TaskState>),
    /// A source whose records carry data (0.1.2 and later).
    DataSource(data_source::DataSourceCorePre<TaskState>),
    Sink(sink::SinkCorePre<TaskState>),
    /// A sink whose records carry data (0.1.2 and later).
    DataSink(data_sink::DataSinkCorePre<TaskState>),
    /// A transform (0.1.3 and later).
    Transform(transform::TransformCorePre<TaskState>),
}

enum Bound {
    Source(source::SourceCore),
    DataSource(data_source::DataSourceCore),
    Sink(sink::SinkCore),
    DataSink(data_sink::DataSinkCore),
    Transform(transform::TransformCore),
}

/// The task exports, by the version track this host speaks (0.1.x, any patch).
const SOURCE_TASK_EXPORT: &str = "wharf:connector/source-task@0.1.";
const DATA_SOURCE_TASK_EXPORT: &str = "wharf:connector/data-source-task@0.1.";
const DATA_SINK_TASK_EXPORT: &str = "wharf:connector/data-sink-task@0.1.";
const SINK_TASK_EXPORT: &str = "wharf:connector/sink-task@0.1.";
const TRANSFORMER_EXPORT: &str = "wharf:connector/transformer@0.1.";

impl Plugin {
    /// Checks that `component` is a Wharf plugin and links it; its `info` is still empty.
    fn link(runtime: &Runtime, component: Component, path: PathBuf) -> anyhow::Result<Plugin> {
        let exports: Vec<String> =
            component.component_type().exports(&runtime.engine).map(|(name, _)| name.to_string()).collect();
        let pre = runtime.linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!(
                "cannot link {}: {e:#}. The plugin imports something this host does not provide",
                path.display()
            )
        })?;
        let grants = declared::DeclaredGrantsIndices::new(&pre).ok();
        let connections = declared_connections::DeclaredConnectionGrantsIndices::new(&pre).ok();
        let tls = declared_tls::DeclaredConnectionTlsIndices::new(&pre).ok();
        let exactly_once = exactly_once::ExactlyOnceSourceIndices::new(&pre).ok();
        let contract_patch = exports
            .iter()
            .filter_map(|e| {
                [
                    SOURCE_TASK_EXPORT,
                    DATA_SOURCE_TASK_EXPORT,
                    SINK_TASK_EXPORT,
                    DATA_SINK_TASK_EXPORT,
                    TRANSFORMER_EXPORT,
                ]
                .iter()
                .find_map(|prefix| e.strip_prefix(prefix))
                .and_then(|patch| patch.parse::<u32>().ok())
            })
            .max()
            .unwrap_or(0);
        let pre = if exports.iter().any(|e| e.starts_with(DATA_SOURCE_TASK_EXPORT)) {
            PluginPre::DataSource(
                data_source::DataSourceCorePre::new(pre).map_err(|e| not_a_plugin(&path, &exports, e.into()))?,
            )
        } else if exports.iter().any(|e| e.starts_with(SOURCE_TASK_EXPORT)) {
            PluginPre::Source(source::SourceCorePre::new(pre).map_err(|e| not_a_plugin(&path, &exports, e.into()))?)
        } else if exports.iter().any(|e| e.starts_with(DATA_SINK_TASK_EXPORT)) {
            PluginPre::DataSink(
                data_sink::DataSinkCorePre::new(pre).map_err(|e| not_a_plugin(&path, &exports, e.into()))?,
            )
        } else if exports.iter().any(|e| e.starts_with(SINK_TASK_EXPORT)) {
            PluginPre::Sink(sink::SinkCorePre::new(pre).map_err(|e| not_a_plugin(&path, &exports, e.into()))?)
        } else if exports.iter().any(|e| e.starts_with(TRANSFORMER_EXPORT)) {
            PluginPre::Transform(
                transform::TransformCorePre::new(pre).map_err(|e| not_a_plugin(&path, &exports, e.into()))?,
            )
        } else {
            return Err(not_a_plugin(&path, &exports, anyhow::anyhow!("no task export")));
        };
        Ok(Plugin {
            info: PluginInfo {
                name: String::new(),
                version: String::new(),
                description: String::new(),
                kind: PluginKind::Source,
                config: Vec::new(),
                grants: Vec::new(),
                connections: Vec::new(),
            },
            path,
            pre,
            grants,
            connections,
            tls,
            exactly_once,
            contract_patch,
        })
    }

    /// Checks that `component` is a Wharf plugin, links it, and asks it to describe itself.
    pub fn inspect(runtime: &Runtime, component: Component, path: PathBuf) -> anyhow::Result<Plugin> {
        let mut plugin = Plugin::link(runtime, component, path)?;
        let limits = WasmLimits::default();
        let mut connector =
            plugin.connector(runtime, "inspect", &limits, &Default::default()).map_err(anyhow::Error::msg)?;
        let mut info = connector.describe().map_err(anyhow::Error::msg)?;
        info.grants = connector.declared_grants().map_err(anyhow::Error::msg)?;
        info.connections = connector.declared_connections().map_err(anyhow::Error::msg)?;
        connector.declared_connection_tls(&mut info.connections).map_err(anyhow::Error::msg)?;
        plugin.accept(info)?;
        Ok(plugin)
    }

    /// Checks that `component` is a Wharf plugin and links it, taking what it said of itself
    /// when it was inspected before (`described`) instead of running it.
    pub fn described(
        runtime: &Runtime,
        component: Component,
        path: PathBuf,
        info: PluginInfo,
    ) -> anyhow::Result<Plugin> {
        let mut plugin = Plugin::link(runtime, component, path)?;
        plugin.accept(info)?;
        Ok(plugin)
    }

    /// Takes the plugin's description if it fits the world the plugin implements.
    fn accept(&mut self, info: PluginInfo) -> anyhow::Result<()> {
        let world_kind = match self.pre {
            PluginPre::Source(_) | PluginPre::DataSource(_) => PluginKind::Source,
            PluginPre::Sink(_) | PluginPre::DataSink(_) => PluginKind::Sink,
            PluginPre::Transform(_) => PluginKind::Transform,
        };
        if info.kind != world_kind {
            anyhow::bail!(
                "{} describes itself as a {:?} plugin but implements the {:?} world",
                self.path.display(),
                info.kind,
                world_kind
            );
        }
        if info.name.trim().is_empty() {
            anyhow::bail!("{} describes itself with an empty name", self.path.display());
        }
        self.info = info;
        Ok(())
    }

    fn instantiate(
        &self,
        runtime: &Runtime,
        grants: Grants,
        limits: &WasmLimits,
    ) -> Result<(Store<TaskState>, Instantiated), PluginError> {
        let mut state = set_up(runtime, grants, limits)?;
        state.call_deadlines = runtime.call_deadlines;
        state.io = Some(runtime.io.handle());
        let capped = state.memory.max_bytes != usize::MAX;
        let mut store = Store::new(&runtime.engine, state);
        store.set_hostcall_fuel(lift_budget(limits));
        if capped {
            store.limiter(|state| &mut state.memory);
        }
        if runtime.call_deadlines {
            store.epoch_deadline_trap();
            store.set_epoch_deadline(Runtime::deadline_ticks(limits.call_timeout));
        }
        let timeout = limits.call_timeout;
        let io = runtime.io.handle();
        let bound = block_on_until(&io, timeout, async {
            let instance = match &self.pre {
                PluginPre::Source(pre) => pre.instance_pre().instantiate_async(&mut store).await?,
                PluginPre::DataSource(pre) => pre.instance_pre().instantiate_async(&mut store).await?,
                PluginPre::Sink(pre) => pre.instance_pre().instantiate_async(&mut store).await?,
                PluginPre::DataSink(pre) => pre.instance_pre().instantiate_async(&mut store).await?,
                PluginPre::Transform(pre) => pre.instance_pre().instantiate_async(&mut store).await?,
            };
            let grants = match &self.grants {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            let connections = match &self.connections {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            let tls = match &self.tls {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            let exactly_once = match &self.exactly_once {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            let bound = match &self.pre {
                PluginPre::Source(_) => Bound::Source(source::SourceCore::new(&mut store, &instance)?),
                PluginPre::DataSource(_) => Bound::DataSource(data_source::DataSourceCore::new(&mut store, &instance)?),
                PluginPre::Sink(_) => Bound::Sink(sink::SinkCore::new(&mut store, &instance)?),
                PluginPre::DataSink(_) => Bound::DataSink(data_sink::DataSinkCore::new(&mut store, &instance)?),
                PluginPre::Transform(_) => Bound::Transform(transform::TransformCore::new(&mut store, &instance)?),
            };
            Ok::<_, wasmtime::Error>(Instantiated { bound, grants, connections, tls, exactly_once })
        })
        .ok_or_else(|| {
            PluginError::Instantiate(format!(
                "its start-up code ran longer than wasm.call.timeout.ms={}",
                timeout.as_millis()
            ))
        })?
        .map_err(|e| PluginError::Instantiate(format!("{e:#}")))?;
        Ok((store, bound))
    }

    /// An instance for connector-level calls; it gets no folders and no offsets.
    /// A connector instance, for `validate` and `task-configs`; `secrets` are the resolved values
    /// of the config it will be given, kept out of its log lines.
    pub fn connector(
        &self,
        runtime: &Runtime,
        label: &str,
        limits: &WasmLimits,
        secrets: &crate::config::providers::Secrets,
    ) -> Result<ConnectorInstance, PluginError> {
        let grants = Grants { secrets: secrets.clone(), ..Grants::none(label, limits) };
        let (store, instantiated) = self.instantiate(runtime, grants, limits)?;
        Ok(ConnectorInstance {
            store,
            bound: instantiated.bound,
            grants: instantiated.grants,
            connections: instantiated.connections,
            tls: instantiated.tls,
            exactly_once: instantiated.exactly_once,
            limits: limits.clone(),
        })
    }

    pub fn open_source(
        &self,
        runtime: &Runtime,
        grants: Grants,
        config: &Vec<(String, String)>,
        limits: &WasmLimits,
    ) -> Result<SourceInstance, PluginError> {
        let (mut store, instantiated) = self.instantiate(runtime, grants, limits)?;
        let task = match instantiated.bound {
            Bound::Source(bindings) => {
                let task = call(&mut store, limits, "open", async |s| {
                    bindings.wharf_connector_source_task().task().call_open(s, config).await
                })?;
                SourceTask::Bytes(bindings, task)
            }
            Bound::DataSource(bindings) => {
                let task = call(&mut store, limits, "open", async |s| {
                    bindings.wharf_connector_data_source_task().task().call_open(s, config).await
                })?;
                SourceTask::Data(bindings, task)
            }
            Bound::Sink(_) | Bound::DataSink(_) | Bound::Transform(_) => {
                return Err(PluginError::Instantiate(format!("{} is not a source plugin", self.info.name)))
            }
        };
        Ok(SourceInstance {
            store,
            task,
            limits: limits.clone(),
            schemas: Vec::new(),
            keeps_alive: self.contract_patch >= KEEP_ALIVE_PATCH,
        })
    }

    pub fn open_sink(
        &self,
        runtime: &Runtime,
        grants: Grants,
        config: &Vec<(String, String)>,
        limits: &WasmLimits,
    ) -> Result<SinkInstance, PluginError> {
        let (mut store, instantiated) = self.instantiate(runtime, grants, limits)?;
        let task = match instantiated.bound {
            Bound::Sink(bindings) => {
                let task = call(&mut store, limits, "open", async |s| {
                    bindings.wharf_connector_sink_task().task().call_open(s, config).await
                })?;
                SinkTask::Bytes(bindings, task)
            }
            Bound::DataSink(bindings) => {
                let task = call(&mut store, limits, "open", async |s| {
                    bindings.wharf_connector_data_sink_task().task().call_open(s, config).await
                })?;
                SinkTask::Data(bindings, task)
            }
            Bound::Source(_) | Bound::DataSource(_) | Bound::Transform(_) => {
                return Err(PluginError::Instantiate(format!("{} is not a sink plugin", self.info.name)))
            }
        };
        Ok(SinkInstance { store, task, limits: limits.clone() })
    }

    /// A transform plugin's instance for one task, opened with the transform's settings.
    pub fn open_transform(
        &self,
        runtime: &Runtime,
        grants: Grants,
        config: &Vec<(String, String)>,
        limits: &WasmLimits,
    ) -> Result<TransformInstance, PluginError> {
        let (mut store, instantiated) = self.instantiate(runtime, grants, limits)?;
        let Bound::Transform(bindings) = instantiated.bound else {
            return Err(PluginError::Instantiate(format!("{} is not a transform plugin", self.info.name)));
        };
        let transform = call(&mut store, limits, "open", async |s| {
            bindings.wharf_connector_transformer().transform().call_open(s, config).await
        })?;
        Ok(TransformInstance { store, bindings, transform, limits: limits.clone(), schemas: Vec::new() })
    }
}

/// The instance's sandbox, made under `wasm.call.timeout.ms` like the calls that follow: it
/// looks up the names of the network grants and opens the granted folders, either of which can
/// hang (a silent DNS server, a stale network mount). Given up on time, the set-up's blocking
/// thread (one of `WASI_BLOCKING_THREADS`) finishes on its own.
fn set_up(runtime: &Runtime, grants: Grants, limits: &WasmLimits) -> Result<TaskState, PluginError> {
    let wait = if runtime.call_deadlines { limits.call_timeout } else { UNBOUNDED_CALL };
    let io = runtime.io.handle();
    let made = block_on_until(&io, wait, io.spawn_blocking(move || TaskState::new(grants)));
    match made {
        None => Err(PluginError::Instantiate(format!(
            "setting up its sandbox (looking up the names of its network grants, opening its granted folders) \
             took longer than wasm.call.timeout.ms={}",
            limits.call_timeout.as_millis()
        ))),
        Some(Err(failed)) => Err(PluginError::Instantiate(format!("setting up its sandbox failed: {failed}"))),
        Some(Ok(made)) => made.map_err(|e| PluginError::Instantiate(format!("{e:#}"))),
    }
}

fn not_a_plugin(path: &std::path::Path, exports: &[String], cause: anyhow::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is not a Wharf plugin: it must target the wharf:connector@0.1.x source or sink world \
         (it exports {}): {cause:#}",
        path.display(),
        if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") }
    )
}

/// Runs one call into the plugin under the call deadline and explains any failure.
///
/// The deadline holds twice over: the epoch traps WebAssembly that computes past it, and the
/// call's future is given up when it is still waiting inside the host (a clock, a pollable, a
/// socket, wasi:http) at the deadline. A call given up so leaves the instance abandoned.
fn call<T>(
    store: &mut Store<TaskState>,
    limits: &WasmLimits,
    name: &'static str,
    f: impl AsyncFnOnce(&mut Store<TaskState>) -> wasmtime::Result<Result<T, wit::ConnectorError>>,
) -> Result<T, PluginError> {
    if let Some(earlier) = store.data().abandoned {
        return Err(PluginError::Abandoned { call: name, earlier });
    }
    if let Some(earlier) = store.data().trapped {
        return Err(PluginError::Poisoned { call: name, earlier });
    }
    let Some(io) = store.data().io.clone() else {
        return Err(PluginError::Instantiate("the instance has no I/O runtime".into()));
    };
    let deadlines = store.data().call_deadlines;
    if deadlines {
        store.set_epoch_deadline(Runtime::deadline_ticks(limits.call_timeout));
    }
    let started = std::time::Instant::now();
    // Without deadlines (measurements only) the future is still bounded, far away.
    let wait = if deadlines { limits.call_timeout + EPOCH_GRACE } else { UNBOUNDED_CALL };
    let Some(outcome) = block_on_until(&io, wait, f(store)) else {
        store.data_mut().abandoned = Some(name);
        observe(store, name, started, CallOutcome::DeadlineHit);
        return Err(PluginError::Timeout { call: name, timeout_ms: limits.call_timeout.as_millis() });
    };
    let ended = match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(wit::ConnectorError::Retriable(message))) => Err(PluginError::Retriable(error_text(&message))),
        Ok(Err(wit::ConnectorError::Fatal(message))) => Err(PluginError::Fatal(error_text(&message))),
        Err(error) => {
            let explained = explain_trap(store, limits, name, error);
            // Either way the instance is not entered again; the error says why.
            match explained {
                PluginError::Timeout { .. } => store.data_mut().abandoned = Some(name),
                _ => store.data_mut().trapped = Some(name),
            }
            Err(explained)
        }
    };
    let outcome = match &ended {
        Err(PluginError::Timeout { .. }) => CallOutcome::DeadlineHit,
        Err(PluginError::Retriable(_) | PluginError::Fatal(_)) | Ok(_) => CallOutcome::Returned,
        Err(_) => CallOutcome::Trapped,
    };
    observe(store, name, started, outcome);
    ended
}

/// Tells the instance's observer, if it has one, that records crossed the boundary.
fn crossed(store: &Store<TaskState>, records: usize, bytes: usize) {
    if let Some(observer) = &store.data().observer {
        observer.crossed(records, bytes);
    }
}

/// Tells the instance's observer, if it has one, that a call ended.
fn observe(store: &Store<TaskState>, name: &'static str, started: std::time::Instant, outcome: CallOutcome) {
    if let Some(observer) = &store.data().observer {
        observer.call_ended(name, started.elapsed(), outcome, store.data().memory.used_bytes());
    }
}

/// How long past `wasm.call.timeout.ms` a waiting call is given, so that WebAssembly that
/// computes past the deadline is stopped by the epoch (a clean trap) rather than given up.
const EPOCH_GRACE: std::time::Duration = super::engine::EPOCH_TICK.saturating_mul(2);

/// The bound on a call of a runtime without deadlines, which only measurements use.
const UNBOUNDED_CALL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Like `call`, for functions that cannot report an error of their own.
fn call_infallible<T>(
    store: &mut Store<TaskState>,
    limits: &WasmLimits,
    name: &'static str,
    f: impl AsyncFnOnce(&mut Store<TaskState>) -> wasmtime::Result<T>,
) -> Result<T, PluginError> {
    call(store, limits, name, async |s| f(s).await.map(Ok))
}

/// What one call may copy out of the plugin, its answer or the arguments of one host call it
/// makes: `wasm.max.bytes.per.call`, plus room for the host's bookkeeping of each record (its
/// struct, the entries of its maps and headers) and of a call's small values.
///
/// wasmtime counts this while it copies (its "hostcall fuel"), so an answer that names the same
/// bytes many times (a thousand records whose values all point at one buffer) is stopped when
/// the copies add up, not once they are made. The per-call counts (`TooLarge`, `TooMany`) are
/// checked after, on what was copied.
fn lift_budget(limits: &WasmLimits) -> usize {
    limits
        .max_bytes_per_call
        .saturating_add((limits.max_records_per_call as usize).saturating_mul(LIFT_ROOM_PER_RECORD))
        .saturating_add(LIFT_ROOM_PER_CALL)
}

const LIFT_ROOM_PER_RECORD: usize = 1024;
const LIFT_ROOM_PER_CALL: usize = 1024 * 1024;

/// How wasmtime says that a copy ran past `lift_budget` (its error type is private).
const LIFT_BUDGET_SPENT: &str = "fuel allocated for hostcalls has been exhausted";

fn explain_trap(
    store: &mut Store<TaskState>,
    limits: &WasmLimits,
    call: &'static str,
    error: wasmtime::Error,
) -> PluginError {
    if error.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt) {
        return PluginError::Timeout { call, timeout_ms: limits.call_timeout.as_millis() };
    }
    if error.chain().any(|cause| cause.to_string().contains(LIFT_BUDGET_SPENT)) {
        return PluginError::CopyTooLarge {
            call,
            max: limits.max_bytes_per_call,
            records: limits.max_records_per_call,
            budget: lift_budget(limits),
        };
    }
    if let Some(asked) = store.data_mut().memory.refused.take() {
        return PluginError::Memory { call, max: store.data().memory.max_bytes, asked };
    }
    let cause = match error.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None if error.downcast_ref::<wasmtime::component::ResourceTableError>().is_some() => format!(
            "{}: the plugin holds wasm.max.host.handles={} host handles (sockets, streams, pollables, files) \
             already",
            error.root_cause(),
            limits.max_host_handles
        ),
        None => error.root_cause().to_string(),
    };
    let stderr = store.data().stderr_text();
    let message = match last_meaningful_lines(&stderr) {
        Some(said) => format!("{said} ({cause})"),
        None => cause,
    };
    PluginError::Trap { call, message, details: format!("{error:?}") }
}

/// The end of what a plugin printed before it died: for a Rust panic, the panic message.
fn last_meaningful_lines(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(lines[lines.len().saturating_sub(3)..].join(" "))
}

/// A fresh instance's bindings.
struct Instantiated {
    bound: Bound,
    grants: Option<declared::DeclaredGrants>,
    connections: Option<declared_connections::DeclaredConnectionGrants>,
    tls: Option<declared_tls::DeclaredConnectionTls>,
    exactly_once: Option<exactly_once::ExactlyOnceSource>,
}
