//! Plugin instances: a loaded component, the connector calls (describe, validate, task-configs)
//! and running source and sink tasks. Every call into a plugin runs under a deadline and a memory
//! cap, and every failure is turned into a `PluginError` a person can act on.

use std::path::PathBuf;

use wasmtime::component::{Component, ResourceAny};
use wasmtime::Store;

use super::bindings::{self, data_sink, data_source, declared, sink, source, transform, wit};
use super::engine::{block_on_until, Runtime};
use super::plugin_log::error_text;
use super::sandbox::{ErrantReport, Grants, Putting, TaskState};
use crate::config::WasmLimits;
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
}

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
            },
            path,
            pre,
            grants,
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
            let bound = match &self.pre {
                PluginPre::Source(_) => Bound::Source(source::SourceCore::new(&mut store, &instance)?),
                PluginPre::DataSource(_) => Bound::DataSource(data_source::DataSourceCore::new(&mut store, &instance)?),
                PluginPre::Sink(_) => Bound::Sink(sink::SinkCore::new(&mut store, &instance)?),
                PluginPre::DataSink(_) => Bound::DataSink(data_sink::DataSinkCore::new(&mut store, &instance)?),
                PluginPre::Transform(_) => Bound::Transform(transform::TransformCore::new(&mut store, &instance)?),
            };
            Ok::<_, wasmtime::Error>((bound, grants))
        })
        .ok_or_else(|| {
            PluginError::Instantiate(format!(
                "its start-up code ran longer than wasm.call.timeout.ms={}",
                timeout.as_millis()
            ))
        })?
        .map_err(|e| PluginError::Instantiate(format!("{e:#}")))?;
        Ok((store, Instantiated { bound: bound.0, grants: bound.1 }))
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
        Ok(ConnectorInstance { store, bound: instantiated.bound, grants: instantiated.grants, limits: limits.clone() })
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
        Ok(SourceInstance { store, task, limits: limits.clone(), schemas: Vec::new() })
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
    let Some(io) = store.data().io.clone() else {
        return Err(PluginError::Instantiate("the instance has no I/O runtime".into()));
    };
    let deadlines = store.data().call_deadlines;
    if deadlines {
        store.set_epoch_deadline(Runtime::deadline_ticks(limits.call_timeout));
    }
    // Without deadlines (measurements only) the future is still bounded, far away.
    let wait = if deadlines { limits.call_timeout + EPOCH_GRACE } else { UNBOUNDED_CALL };
    let Some(outcome) = block_on_until(&io, wait, f(store)) else {
        store.data_mut().abandoned = Some(name);
        return Err(PluginError::Timeout { call: name, timeout_ms: limits.call_timeout.as_millis() });
    };
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(wit::ConnectorError::Retriable(message))) => Err(PluginError::Retriable(error_text(&message))),
        Ok(Err(wit::ConnectorError::Fatal(message))) => Err(PluginError::Fatal(error_text(&message))),
        Err(error) => Err(explain_trap(store, limits, name, error)),
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
}

/// A short-lived instance for connector calls.
pub struct ConnectorInstance {
    store: Store<TaskState>,
    bound: Bound,
    grants: Option<declared::DeclaredGrants>,
    limits: WasmLimits,
}

impl ConnectorInstance {
    /// Which config keys name what; nothing for a plugin of 0.1.0.
    pub fn declared_grants(&mut self) -> Result<Vec<wharf_connect::model::KeyGrant>, PluginError> {
        let Some(grants) = &self.grants else { return Ok(Vec::new()) };
        let declared = call_infallible(&mut self.store, &self.limits, "declare", async |s| {
            grants.wharf_connector_grants().call_declare(s).await
        })?;
        self.bounded("declare", declared.iter().map(|g| g.key.len()).sum())?;
        Ok(declared.into_iter().map(bindings::key_grant_from_wit).collect())
    }

    pub fn describe(&mut self) -> Result<PluginInfo, PluginError> {
        let info = match &self.bound {
            Bound::Source(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(bindings::plugin_info_from_wit),
            Bound::DataSource(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(bindings::plugin_info_from_wit),
            Bound::Sink(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(bindings::plugin_info_from_wit),
            Bound::DataSink(b) => call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                b.wharf_connector_connector().call_describe(s).await
            })
            .map(bindings::plugin_info_from_wit),
            Bound::Transform(b) => {
                let info = call_infallible(&mut self.store, &self.limits, "describe", async |s| {
                    b.wharf_connector_transformer().call_describe(s).await
                })?;
                Ok(bindings::transform_info_from_wit(info))
            }
        }?;
        let bytes = info.name.len()
            + info.version.len()
            + info.description.len()
            + info
                .config
                .iter()
                .map(|k| {
                    k.name.len()
                        + k.documentation.len()
                        + k.default_value.as_ref().map_or(0, String::len)
                        + k.group.as_ref().map_or(0, String::len)
                })
                .sum::<usize>();
        self.bounded("describe", bytes)?;
        Ok(info)
    }

    pub fn validate(
        &mut self,
        config: &Vec<(String, String)>,
    ) -> Result<Vec<wharf_connect::model::ConfigProblem>, PluginError> {
        let problems = match &self.bound {
            Bound::Source(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::DataSource(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::Sink(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::DataSink(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_connector().call_validate(s, config).await
            }),
            Bound::Transform(b) => call_infallible(&mut self.store, &self.limits, "validate", async |s| {
                b.wharf_connector_transformer().call_validate(s, config).await
            }),
        }?;
        self.bounded("validate", problems.iter().map(|p| p.name.len() + p.message.len()).sum())?;
        Ok(problems.into_iter().map(bindings::config_problem_from_wit).collect())
    }

    pub fn task_configs(
        &mut self,
        config: &Vec<(String, String)>,
        max_tasks: u32,
    ) -> Result<Vec<Vec<(String, String)>>, PluginError> {
        let configs = match &self.bound {
            Bound::Source(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::DataSource(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::Sink(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::DataSink(b) => call(&mut self.store, &self.limits, "task-configs", async |s| {
                b.wharf_connector_connector().call_task_configs(s, config, max_tasks).await
            }),
            Bound::Transform(_) => Err(PluginError::Fatal(
                "a transform plugin has no tasks of its own: it runs in a connector's transforms".into(),
            )),
        }?;
        if configs.len() > max_tasks as usize {
            return Err(PluginError::TooManyTasks { count: configs.len(), max: max_tasks });
        }
        self.bounded("task-configs", configs.iter().flatten().map(|(k, v)| k.len() + v.len()).sum())?;
        Ok(configs)
    }

    /// An answer of `bytes` within `wasm.max.bytes.per.call`.
    fn bounded(&self, call: &'static str, bytes: usize) -> Result<(), PluginError> {
        if bytes > self.limits.max_bytes_per_call {
            return Err(PluginError::TooLarge { call, bytes, max: self.limits.max_bytes_per_call });
        }
        Ok(())
    }
}

pub struct SourceInstance {
    store: Store<TaskState>,
    task: SourceTask,
    limits: WasmLimits,
    /// The schemas of the last data batch, handed out again for equal schemas of the next.
    schemas: Vec<std::sync::Arc<wharf_connect::data::Schema>>,
}

/// A source task's bindings and resource, by what its records carry.
enum SourceTask {
    Bytes(source::SourceCore, ResourceAny),
    Data(data_source::DataSourceCore, ResourceAny),
}

impl SourceInstance {
    /// Bytes of linear memory the instance holds, across all of its memories (memory only
    /// grows: this is the most the plugin has needed so far).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.used_bytes()
    }

    pub fn poll(&mut self) -> Result<Vec<PolledRecord>, PluginError> {
        let max = self.limits.max_records_per_call;
        let max_bytes = self.limits.max_bytes_per_call;
        let too_large = |bytes: usize| PluginError::TooLarge { call: "poll", bytes, max: max_bytes };
        let records = match &self.task {
            SourceTask::Bytes(bindings, task) => {
                let task = *task;
                let records = call(&mut self.store, &self.limits, "poll", async |s| {
                    bindings.wharf_connector_source_task().task().call_poll(s, task, max).await
                })?;
                if records.len() > max as usize {
                    return Err(PluginError::TooMany { call: "poll", count: records.len(), max });
                }
                let bytes: usize = records
                    .iter()
                    .map(|r| {
                        record_bytes(&r.topic, &r.source_partition, &r.source_offset)
                            + r.headers
                                .iter()
                                .map(|h| h.key.len() + h.value.as_ref().map_or(0, Vec::len))
                                .sum::<usize>()
                            + r.key.as_ref().map_or(0, Vec::len)
                            + r.value.as_ref().map_or(0, Vec::len)
                    })
                    .sum();
                if bytes > max_bytes {
                    return Err(too_large(bytes));
                }
                records.into_iter().map(bindings::source_record_from_wit).collect()
            }
            SourceTask::Data(bindings, task) => {
                let task = *task;
                let batch = call(&mut self.store, &self.limits, "poll", async |s| {
                    bindings.wharf_connector_data_source_task().task().call_poll(s, task, max).await
                })?;
                if batch.records.len() > max as usize {
                    return Err(PluginError::TooMany { call: "poll", count: batch.records.len(), max });
                }
                let bytes = bindings::source_batch_bytes(&batch);
                if bytes > max_bytes {
                    return Err(too_large(bytes));
                }
                bindings::source_batch_from_wit(batch, &mut self.schemas, schema_bounds(&self.limits)).map_err(|e| {
                    PluginError::Fatal(format!("the plugin's poll returned a batch that breaks the contract: {e}"))
                })?
            }
        };
        Ok(records)
    }

    pub fn commit(&mut self) -> Result<(), PluginError> {
        match &self.task {
            SourceTask::Bytes(bindings, task) => {
                let task = *task;
                call(&mut self.store, &self.limits, "commit", async |s| {
                    bindings.wharf_connector_source_task().task().call_commit(s, task).await
                })
            }
            SourceTask::Data(bindings, task) => {
                let task = *task;
                call(&mut self.store, &self.limits, "commit", async |s| {
                    bindings.wharf_connector_data_source_task().task().call_commit(s, task).await
                })
            }
        }
    }

    /// Tells the plugin to stop and releases the instance.
    pub fn close(mut self) -> Result<(), PluginError> {
        let (closed, task) = match &self.task {
            SourceTask::Bytes(bindings, task) => {
                let task = *task;
                let closed = call_infallible(&mut self.store, &self.limits, "close", async |s| {
                    bindings.wharf_connector_source_task().task().call_close(s, task).await
                });
                (closed, task)
            }
            SourceTask::Data(bindings, task) => {
                let task = *task;
                let closed = call_infallible(&mut self.store, &self.limits, "close", async |s| {
                    bindings.wharf_connector_data_source_task().task().call_close(s, task).await
                });
                (closed, task)
            }
        };
        if self.store.data().abandoned.is_none() {
            if let Some(io) = self.store.data().io.clone() {
                let _ = block_on_until(&io, self.limits.call_timeout, task.resource_drop_async(&mut self.store));
            }
        }
        closed
    }
}

/// A transform plugin's instance, one per task: it takes a batch and says what became of each
/// record.
pub struct TransformInstance {
    store: Store<TaskState>,
    bindings: transform::TransformCore,
    transform: ResourceAny,
    limits: WasmLimits,
    /// The schemas of the last batch it returned, handed out again for equal schemas of the next.
    schemas: Vec<std::sync::Arc<wharf_connect::data::Schema>>,
}

impl TransformInstance {
    /// Bytes of linear memory the instance holds, across all of its memories (memory only
    /// grows: this is the most the plugin has needed so far).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.used_bytes()
    }

    /// The records through the plugin, in as many calls as `wasm.max.records.per.call` and
    /// `wasm.max.bytes.per.call` need: for each record given, in order, the record it became or
    /// none when dropped. A record larger than the bound alone fails with its topic named.
    pub fn apply(&mut self, records: Vec<ConnectRecord>) -> Result<Vec<Option<ConnectRecord>>, PluginError> {
        let max = self.limits.max_bytes_per_call;
        let max_records = self.limits.max_records_per_call as usize;
        let mut out = Vec::with_capacity(records.len());
        let mut chunk = Vec::new();
        let mut chunk_bytes = 0;
        for record in records {
            let bytes = connect_record_bytes(&record);
            if bytes > max {
                return Err(PluginError::Fatal(format!(
                    "a record for topic {} is {bytes} bytes, more than wasm.max.bytes.per.call={max} lets one call \
                     to the transform carry; raise the limit for this connector (and the worker)",
                    record.topic
                )));
            }
            if chunk_bytes + bytes > max || chunk.len() >= max_records {
                out.extend(self.apply_chunk(std::mem::take(&mut chunk))?);
                chunk_bytes = 0;
            }
            chunk_bytes += bytes;
            chunk.push(record);
        }
        if !chunk.is_empty() {
            out.extend(self.apply_chunk(chunk)?);
        }
        Ok(out)
    }

    fn apply_chunk(&mut self, records: Vec<ConnectRecord>) -> Result<Vec<Option<ConnectRecord>>, PluginError> {
        let given = records.len();
        let offsets: Vec<Option<i64>> = records.iter().map(|r| r.offset).collect();
        let batch = super::batch::BatchWriter::transform_batch(records);
        let (bindings, transform) = (&self.bindings, self.transform);
        let answer = call(&mut self.store, &self.limits, "apply", async |s| {
            bindings.wharf_connector_transformer().transform().call_apply(s, transform, &batch).await
        })?;
        if answer.records.len() != given {
            return Err(PluginError::Fatal(format!(
                "the transform's apply returned {} records for the {given} it was given; it must return one for each \
                 (none for a record it drops)",
                answer.records.len()
            )));
        }
        let bytes = bindings::transformed_batch_bytes(&answer);
        if bytes > self.limits.max_bytes_per_call {
            return Err(PluginError::TooLarge { call: "apply", bytes, max: self.limits.max_bytes_per_call });
        }
        let mut records = bindings::transformed_batch_from_wit(answer, &mut self.schemas, schema_bounds(&self.limits))
            .map_err(|e| {
                PluginError::Fatal(format!("the transform's apply returned a batch that breaks the contract: {e}"))
            })?;
        // A sink record keeps its Kafka offset, which the contract does not carry.
        for (record, offset) in records.iter_mut().zip(offsets) {
            if let Some(record) = record {
                record.offset = offset;
            }
        }
        Ok(records)
    }

    pub fn close(mut self) -> Result<(), PluginError> {
        let (bindings, transform) = (&self.bindings, self.transform);
        let closed = call_infallible(&mut self.store, &self.limits, "close", async |s| {
            bindings.wharf_connector_transformer().transform().call_close(s, transform).await
        });
        if self.store.data().abandoned.is_none() {
            if let Some(io) = self.store.data().io.clone() {
                let _ = block_on_until(&io, self.limits.call_timeout, transform.resource_drop_async(&mut self.store));
            }
        }
        closed
    }
}

/// Bytes a record counts for in `wasm.max.bytes.per.call` on its way to a transform.
fn connect_record_bytes(r: &ConnectRecord) -> usize {
    r.topic.len()
        + r.key.as_ref().map_or(0, super::batch::part_bytes)
        + r.value.as_ref().map_or(0, super::batch::part_bytes)
        + r.headers.iter().map(|h| h.key.len() + h.value.as_ref().map_or(0, super::batch::part_bytes)).sum::<usize>()
}

/// Bytes a sink record counts for in `wasm.max.bytes.per.call`.
fn sink_record_bytes(r: &SinkRecord) -> usize {
    r.topic.len()
        + r.key.as_ref().map_or(0, super::batch::part_bytes)
        + r.value.as_ref().map_or(0, super::batch::part_bytes)
        + r.headers.iter().map(|h| h.key.len() + h.value.as_ref().map_or(0, super::batch::part_bytes)).sum::<usize>()
}

/// Bytes a source partition or offset counts for in `wasm.max.bytes.per.call`: its keys, its
/// text, eight for any other value.
pub(super) fn offset_map_bytes(map: &wit::OffsetMap) -> usize {
    map.iter().map(|(k, v)| k.len() + if let wit::Scalar::Text(t) = v { t.len() } else { 8 }).sum()
}

/// The bytes of a source record other than its key, value and headers.
pub(super) fn record_bytes(topic: &str, partition: &wit::OffsetMap, offset: &wit::OffsetMap) -> usize {
    topic.len() + offset_map_bytes(partition) + offset_map_bytes(offset)
}

pub struct SinkInstance {
    store: Store<TaskState>,
    task: SinkTask,
    limits: WasmLimits,
}

/// A sink task's bindings and resource, by what its records carry.
enum SinkTask {
    Bytes(sink::SinkCore, ResourceAny),
    Data(data_sink::DataSinkCore, ResourceAny),
}

/// Calls one function of the sink task, whichever interface it exports.
macro_rules! sink_call {
    ($self:ident, $name:literal, |$task:ident, $s:ident, $t:ident| $bytes:expr, $data:expr) => {
        match &$self.task {
            SinkTask::Bytes(bindings, task) => {
                let ($task, $t) = (bindings.wharf_connector_sink_task().task(), *task);
                call(&mut $self.store, &$self.limits, $name, async |$s| $bytes.await)
            }
            SinkTask::Data(bindings, task) => {
                let ($task, $t) = (bindings.wharf_connector_data_sink_task().task(), *task);
                call(&mut $self.store, &$self.limits, $name, async |$s| $data.await)
            }
        }
    };
}

/// What a `put` came to: the plugin's answer, and the records it reported as errant.
pub struct Put {
    pub outcome: Result<(), PluginError>,
    pub reported: Vec<ErrantReport>,
}

impl SinkInstance {
    /// Bytes of linear memory the instance holds, across all of its memories (memory only
    /// grows: this is the most the plugin has needed so far).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.used_bytes()
    }

    pub fn max_records_per_call(&self) -> u32 {
        self.limits.max_records_per_call
    }

    /// Whether the plugin takes data (the `data-sink` world): the worker then reads keys and
    /// values with the connector's converters before `put`.
    pub fn takes_data(&self) -> bool {
        matches!(self.task, SinkTask::Data(..))
    }

    pub fn open_partitions(&mut self, partitions: &[TopicPartition]) -> Result<(), PluginError> {
        let wit_partitions: Vec<_> = partitions.iter().map(bindings::topic_partition_to_wit).collect();
        sink_call!(
            self,
            "open-partitions",
            |task, s, t| task.call_open_partitions(s, t, &wit_partitions),
            task.call_open_partitions(s, t, &wit_partitions)
        )
    }

    pub fn close_partitions(&mut self, partitions: &[TopicPartition]) -> Result<(), PluginError> {
        let wit_partitions: Vec<_> = partitions.iter().map(bindings::topic_partition_to_wit).collect();
        sink_call!(
            self,
            "close-partitions",
            |task, s, t| task.call_close_partitions(s, t, &wit_partitions),
            task.call_close_partitions(s, t, &wit_partitions)
        )
    }

    /// Whether records the plugin reports as errant are skipped (`errors.tolerance=all`) or fail
    /// the task: what `errant-records.report` answers the plugin.
    pub fn tolerate_errant(&mut self, tolerate: bool) {
        self.store.data_mut().tolerate_errant = tolerate;
    }

    /// Delivers records in as many `put` calls as `wasm.max.bytes.per.call` needs (one, usually);
    /// a record larger than the bound alone fails with the record named. The answer holds the
    /// records the plugin reported as errant during the put, in the order reported, whether the
    /// put succeeded or not.
    pub fn put(&mut self, records: Vec<SinkRecord>) -> Put {
        self.store.data_mut().putting =
            Some(Putting::of(records.iter().map(|r| (r.topic.as_str(), r.partition, r.offset))));
        let outcome = self.put_chunks(records);
        let reported = self.store.data_mut().putting.take().map(|p| p.reported).unwrap_or_default();
        Put { outcome, reported }
    }

    fn put_chunks(&mut self, records: Vec<SinkRecord>) -> Result<(), PluginError> {
        let max = self.limits.max_bytes_per_call;
        let mut chunk = Vec::with_capacity(records.len());
        let mut chunk_bytes = 0;
        for record in records {
            let bytes = sink_record_bytes(&record);
            if bytes > max {
                return Err(PluginError::RecordTooLarge {
                    topic: record.topic,
                    partition: record.partition,
                    offset: record.offset,
                    bytes,
                    max,
                });
            }
            if chunk_bytes + bytes > max {
                self.put_chunk(std::mem::take(&mut chunk))?;
                chunk_bytes = 0;
            }
            chunk_bytes += bytes;
            chunk.push(record);
        }
        if chunk.is_empty() {
            return Ok(());
        }
        self.put_chunk(chunk)
    }

    fn put_chunk(&mut self, records: Vec<SinkRecord>) -> Result<(), PluginError> {
        match &self.task {
            SinkTask::Bytes(bindings, task) => {
                let task = *task;
                let records = records.into_iter().map(bindings::sink_record_to_wit).collect::<Option<Vec<_>>>();
                let Some(records) = records else {
                    return Err(PluginError::Fatal(
                        "the worker handed data to a sink that takes bytes; restart the task".into(),
                    ));
                };
                call(&mut self.store, &self.limits, "put", async |s| {
                    bindings.wharf_connector_sink_task().task().call_put(s, task, &records).await
                })
            }
            SinkTask::Data(bindings, task) => {
                let task = *task;
                let batch = super::batch::BatchWriter::sink_batch(records);
                call(&mut self.store, &self.limits, "put", async |s| {
                    bindings.wharf_connector_data_sink_task().task().call_put(s, task, &batch).await
                })
            }
        }
    }

    pub fn flush(&mut self, offsets: &[PartitionOffset]) -> Result<(), PluginError> {
        let offsets: Vec<_> = offsets.iter().map(bindings::partition_offset_to_wit).collect();
        sink_call!(self, "flush", |task, s, t| task.call_flush(s, t, &offsets), task.call_flush(s, t, &offsets))
    }

    pub fn close(mut self) -> Result<(), PluginError> {
        let closed = match &self.task {
            SinkTask::Bytes(bindings, task) => {
                let task = *task;
                call_infallible(&mut self.store, &self.limits, "close", async |s| {
                    bindings.wharf_connector_sink_task().task().call_close(s, task).await
                })
            }
            SinkTask::Data(bindings, task) => {
                let task = *task;
                call_infallible(&mut self.store, &self.limits, "close", async |s| {
                    bindings.wharf_connector_data_sink_task().task().call_close(s, task).await
                })
            }
        };
        let task = match &self.task {
            SinkTask::Bytes(_, task) | SinkTask::Data(_, task) => *task,
        };
        if self.store.data().abandoned.is_none() {
            if let Some(io) = self.store.data().io.clone() {
                let _ = block_on_until(&io, self.limits.call_timeout, task.resource_drop_async(&mut self.store));
            }
        }
        closed
    }
}
