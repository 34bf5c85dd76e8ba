//! Runs connectors: checks a connector config against its plugin, splits it into tasks, and runs
//! each task on a thread of its own, reporting states to the status store.
//!
//! A connector config passes one check, whether it is created or only validated: the host's rules,
//! each problem on its key (`host_problems`, `validation`), the transform plugins its chain names
//! (`check_transform_plugins`), then the plugin's own `validate`. Starting tasks checks the host's
//! rules again without calling the plugin. Each task runs on two threads: a source's task thread
//! polls and its send thread produces (`source`); a sink's fetch thread consumes and its task
//! thread puts, flushes and commits (`sink`). Each task has its own converters (`converting`) and
//! its own `TaskChain` of transforms, whose transform plugins the `Opener` opens for the task, as
//! it opens the task's own instance.
//!
//! - `sink`: `Subscription` is `topics`, or the topics matching `topics.regex`, looked for again
//!   every `TOPICS_REGEX_REFRESH`. A consumer fenced by the task's next run (`SinkContext::fenced`)
//!   ends the task without a flush, a commit or a plugin close: a `TaskFailure::superseded`, which
//!   a distributed worker does not write as the task's status (the run that took over reports it).
//! - `membership`: `ParkedMembers`, a sink task's static member kept after its task stopped,
//!   until the task is gone for good (`Worker::release_members`, which the herder calls) or runs
//!   again under another identity; the member is then removed from its group by the member id it
//!   had.
//! - `tolerance`, `dead_letter`: `errors.tolerance`, the count of skipped records in the task's
//!   status, retries of a plugin's retriable failures, and a sink's dead-letter queue.
//! - `topic_creation` (`TopicCreator`), `topics` (`TopicTracker`), `recycle` (`Recycler`),
//!   `offsets` (a connector's offsets as the REST API reads and changes them).
//!
//! What must survive a restart (offsets, statuses) the worker writes to the stores; it keeps none
//! of it itself.

mod converting;
mod dead_letter;
pub mod fencing;
mod membership;
pub mod offset_topics;
pub mod offsets;
mod recycle;
mod running;
mod sink;
mod source;
mod tolerance;
mod topic_creation;
mod topics;
pub mod validation;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};

use crate::metrics::tasks::TaskCounters;
use crate::runtime::CallOutcome;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;

use crate::config::connector::ConnectorConfigError;
use crate::config::keys::connector as C;
use crate::config::{ConnectorConfig, ReservedTopics, WorkerConfig};
use crate::kafka;
use crate::runtime::registry::FindError;
use crate::runtime::{Grants, OffsetLookup, Plugin, PluginError, PluginRegistry, Runtime};
use crate::storage::{OffsetStore, State, Status, StatusStore};
use crate::sync::Unpoisoned;
use wharf_connect::model::{ConfigProblem, ConnectorKind, PluginKind, TaskId};

/// How long a transactional task asks the leader to fence its connector's earlier tasks (a
/// rebalance may leave the cluster without a leader for a while), and the pause between asks.
const FENCE_PATIENCE: Duration = Duration::from_secs(60);
const FENCE_RETRY_PAUSE: Duration = Duration::from_secs(1);

/// Why a task stopped working, as its status trace shows it.
#[derive(Debug, Clone)]
pub struct TaskFailure {
    pub message: String,
    pub trace: String,
    /// Another run of the task took its place (its consumer was fenced): in a cluster that run
    /// reports the task's state, not this one.
    pub superseded: bool,
    /// Whether an automatic restart may mend it (`auto.restart.*`): not a plugin's fatal refusal
    /// to open the task.
    pub restartable: bool,
}

impl TaskFailure {
    pub fn new(message: String) -> Self {
        TaskFailure { trace: message.clone(), message, superseded: false, restartable: true }
    }

    pub fn from_plugin(e: &PluginError) -> Self {
        TaskFailure { message: e.to_string(), trace: e.trace(), superseded: false, restartable: true }
    }

    /// The plugin's `open` failed: retriable errors, traps and timeouts may pass with a restart;
    /// a fatal error is the plugin saying that the task cannot run as configured.
    pub fn from_open(e: &PluginError) -> Self {
        TaskFailure { restartable: !matches!(e, PluginError::Fatal(_)), ..TaskFailure::from_plugin(e) }
    }

    /// The task stopped because another run of it took its place.
    pub fn superseded(message: String) -> Self {
        TaskFailure { superseded: true, ..TaskFailure::new(message) }
    }
}

pub struct TaskReport {
    pub outcome: Result<(), TaskFailure>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("connector {name}: {source}")]
    NoPlugin { name: String, source: crate::runtime::registry::FindError },
    #[error("connector {name}: invalid config: {problems}")]
    Invalid { name: String, problems: String },
    #[error("connector {name}: {message}")]
    Plugin { name: String, message: String },
    /// The herder asked for something the worker's bookkeeping does not allow (a bug, reported
    /// rather than asserted, so that it fails one connector and not the worker).
    #[error("connector {name}: {message}")]
    Conflict { name: String, message: String },
    /// The config store refused to keep what the connector's start produced (its task configs).
    #[error("connector {name}: the config store refused its task configs: {message}")]
    Store { name: String, message: String },
    /// The host failed on a bug while starting the connector (caught, so that it fails this
    /// connector only).
    #[error("connector {name}: {message}")]
    Bug { name: String, message: String },
}

impl StartError {
    /// Whether the connector waits for its plugin (or a transform plugin) to finish compiling,
    /// rather than failed.
    pub fn waits_for_compile(&self) -> bool {
        matches!(self, StartError::NoPlugin { source: FindError::Compiling { .. }, .. })
    }
}

/// A task's thread.
type TaskHandle = crate::sync::Stoppable;

/// A task's automatic restarts in a row: counted by the worker, written by the task's thread into
/// each of its statuses (only that thread writes them while it runs, so a status written here can
/// never overwrite a FAILED it writes at the same moment).
#[derive(Default)]
struct RestartCount {
    count: AtomicU32,
    /// Set to 0 by the herder and not yet in a status: the task's loop writes its RUNNING status
    /// again (`RunningStatus::show`).
    reset_unwritten: AtomicBool,
}

impl RestartCount {
    fn new(count: u32) -> Self {
        RestartCount { count: AtomicU32::new(count), reset_unwritten: AtomicBool::new(false) }
    }

    fn get(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }

    fn set(&self, count: u32) {
        self.count.store(count, Ordering::Relaxed);
    }

    fn reset(&self) {
        if self.count.swap(0, Ordering::Relaxed) > 0 {
            self.reset_unwritten.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a reset waits to be written; taken by the one who writes it.
    fn take_reset(&self) -> bool {
        self.reset_unwritten.load(Ordering::Relaxed) && self.reset_unwritten.swap(false, Ordering::Relaxed)
    }
}

struct RunningTask {
    config: Vec<(String, String)>,
    /// Empty while the task restarts.
    handle: Option<TaskHandle>,
    /// Automatic restarts in a row, written in every status of the task (`auto.restart.*`).
    auto_restarts: Arc<RestartCount>,
}

struct RunningConnector {
    config: ConnectorConfig,
    tasks: BTreeMap<u32, RunningTask>,
}

pub struct Worker {
    config: WorkerConfig,
    worker_id: String,
    runtime: Arc<Runtime>,
    registry: Arc<PluginRegistry>,
    offsets: Arc<dyn OffsetStore>,
    status: Arc<dyn StatusStore>,
    /// Topics no task may write or read.
    reserved: Arc<ReservedTopics>,
    /// Who statuses are written by: this worker, in its group generation (0 outside a group).
    reporter: Reporter,
    connectors: Mutex<BTreeMap<String, RunningConnector>>,
    /// Task threads alive on this worker, bounded by `wharf.tasks.max.per.worker`.
    task_threads: Arc<AtomicUsize>,
    /// The producers of source tasks, one per distinct producer config.
    producers: Arc<kafka::producers::ProducerPool>,
    /// Static members of sink tasks that stopped here, kept until the task is known to be gone
    /// for good (or a later run of it here stops and takes the entry over).
    members: Arc<membership::ParkedMembers>,
    /// The counts of the tasks this worker runs, for its metrics.
    task_metrics: Arc<crate::metrics::tasks::TaskRegistry>,
    /// How transactional tasks ask the leader to fence their connector's earlier tasks.
    fencer: std::sync::OnceLock<fencing::Fencer>,
    /// Connectors' offset topics of their own (`offsets.storage.topic`).
    offset_topics: Arc<offset_topics::OffsetTopics>,
}

/// One of the worker's task threads, counted while it lives (given back when dropped: when the
/// thread ends, or when it could not be started).
struct TaskThreadSlot(Arc<AtomicUsize>);

impl TaskThreadSlot {
    fn take(count: &Arc<AtomicUsize>, ceiling: usize) -> Option<Self> {
        count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < ceiling).then_some(n + 1)).ok()?;
        Some(TaskThreadSlot(count.clone()))
    }
}

impl Drop for TaskThreadSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Worker {
    pub fn new(
        config: WorkerConfig,
        runtime: Arc<Runtime>,
        registry: Arc<PluginRegistry>,
        offsets: Arc<dyn OffsetStore>,
        status: Arc<dyn StatusStore>,
    ) -> Self {
        let metrics_window = config.metrics_window;
        Worker {
            worker_id: config.worker_id(),
            reporter: Reporter {
                worker_id: config.worker_id(),
                generation: Arc::new(AtomicI32::new(0)),
                version: None,
                auto_restarts: Arc::default(),
            },
            reserved: Arc::new(ReservedTopics::of(&config)),
            offset_topics: Arc::new(offset_topics::OffsetTopics::new(config.clone(), offsets.clone())),
            config,
            runtime,
            registry,
            offsets,
            status,
            connectors: Mutex::new(BTreeMap::new()),
            task_threads: Arc::default(),
            producers: Arc::default(),
            members: Arc::default(),
            task_metrics: Arc::new(crate::metrics::tasks::TaskRegistry::with_window(metrics_window)),
            fencer: std::sync::OnceLock::new(),
        }
    }

    /// The counts of the tasks this worker runs.
    pub fn task_metrics(&self) -> &crate::metrics::tasks::TaskRegistry {
        &self.task_metrics
    }

    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// What other workers and statuses know this worker by.
    pub fn id(&self) -> &str {
        &self.worker_id
    }

    /// The plugins of `plugin.path`.
    pub fn registry(&self) -> &PluginRegistry {
        &self.registry
    }

    /// Where the states of connectors and tasks are kept (this worker's and the others').
    pub fn statuses(&self) -> &dyn StatusStore {
        self.status.as_ref()
    }

    pub fn set_generation(&self, generation: i32) {
        self.reporter.generation.store(generation, Ordering::Relaxed);
    }

    /// Checks a connector config against the plugin's definition and its own validation. Calls
    /// plugins (the connector's and its transforms' `validate`), so never on the herder's thread.
    pub fn validate(&self, config: &ConnectorConfig, types: validation::Types) -> Result<Arc<Plugin>, StartError> {
        let (plugin, mut problems) = self.host_problems(config, types)?;
        problems.extend(self.check_transform_plugins(config));
        if problems.is_empty() {
            let plugin_error = |e: PluginError| StartError::Plugin {
                name: config.name.clone(),
                message: config.secrets.scrub(&e.to_string()),
            };
            let mut instance =
                plugin.connector(&self.runtime, &config.name, &config.limits, &config.secrets).map_err(plugin_error)?;
            let found = instance.validate(&config.resolved).map_err(plugin_error)?;
            problems.extend(
                found.into_iter().map(|p| ConfigProblem { message: format!("\"{}\": {}", p.name, p.message), ..p }),
            );
            if plugin.info.kind == PluginKind::Source {
                problems.extend(exactly_once_answers(&mut instance, &plugin, &config.resolved));
            }
        }
        refuse_problems(config, problems)?;
        Ok(plugin)
    }

    /// The plugin a connector's tasks start with, checked against the host's rules without any
    /// plugin call: the config passed `validate` when its task configs were generated, and the
    /// host's rules (the ceilings, reserved topics, grants) may have changed since.
    fn plugin_to_start(&self, config: &ConnectorConfig) -> Result<Arc<Plugin>, StartError> {
        let (plugin, problems) = self.host_problems(config, validation::Types::Unchecked)?;
        refuse_problems(config, problems)?;
        Ok(plugin)
    }

    /// The connector's plugin, and what the host's own rules find wrong with the config, each on
    /// its key (`validation` answers them key by key; a create refuses them all).
    pub(super) fn host_problems(
        &self,
        config: &ConnectorConfig,
        types: validation::Types,
    ) -> Result<(Arc<Plugin>, Vec<ConfigProblem>), StartError> {
        let plugin = self
            .registry
            .find_connector(&config.class, config.version.as_ref())
            .map_err(|source| StartError::NoPlugin { name: config.name.clone(), source })?;
        // A transform plugin still compiling is waited for like the connector's own.
        for (_, step) in config.transforms.plugin_steps() {
            if let Err(source @ FindError::Compiling { .. }) = self.registry.find(&step.name, step.version.as_ref()) {
                return Err(StartError::NoPlugin { name: config.name.clone(), source });
            }
        }
        let on = |name: &str, message: String| ConfigProblem { name: name.to_string(), message };
        let mut problems = validation::definition_problems(&plugin, &config.resolved, types);
        let sink = plugin.info.kind == PluginKind::Sink;
        let ceiling = self.config.tasks_max_per_connector;
        if config.tasks_max > ceiling {
            problems.push(on(
                C::TASKS_MAX.name,
                format!(
                    "tasks.max={} is above this worker's ceiling wharf.tasks.max.per.connector={ceiling}; lower \
                     tasks.max or raise the ceiling in the worker config",
                    config.tasks_max
                ),
            ));
        }
        if sink {
            problems.extend(config.topics.iter().filter_map(|topic| {
                self.reserved.reason(topic).map(|why| {
                    on(
                        C::TOPICS.name,
                        format!("\"topics\" names \"{topic}\", {why}; a sink may not read Kafka's or the worker's internal topics"),
                    )
                })
            }));
        }
        if plugin.info.kind == PluginKind::Source {
            problems.extend(self.exactly_once_problems(config));
            let workers = self.config.distributed.as_ref().map(|d| d.offset_topic.as_str());
            if let Some(topic) = config.offsets_topic.as_deref().filter(|topic| Some(*topic) != workers) {
                if let Some(why) = self.reserved.reason(topic) {
                    problems.push(on(
                        C::OFFSETS_STORAGE_TOPIC.name,
                        format!(
                            "offsets.storage.topic names \"{topic}\", {why}; name a topic of the connector's own, or \
                             leave the key unset to keep its offsets in the worker's offset.storage.topic"
                        ),
                    ));
                }
            }
        }
        if let Some(queue) = &config.errors.dead_letter_queue {
            if let Some(why) = self.reserved.dead_letter_reason(&queue.topic) {
                problems.push(on(C::ERRORS_DEADLETTERQUEUE_TOPIC_NAME.name, dead_letter_refusal(&queue.topic, why)));
            }
        }
        if let Err(e) = config.clone().with_declared(&plugin.info.grants, &plugin.info.connections) {
            problems.extend(e.problems().into_iter().map(|problem| match problem {
                ConnectorConfigError::Invalid { key, message, .. } => {
                    on(key.as_deref().unwrap_or(validation::WHOLE_CONFIG_KEY), message.clone())
                }
                other => on(validation::WHOLE_CONFIG_KEY, other.to_string()),
            }));
        }
        Ok((plugin, problems))
    }

    /// What a source connector's exactly-once settings ask that this worker cannot give, on the
    /// key Kafka Connect puts it on, in its words; the plugin's own answers are asked with its
    /// `validate` (`exactly_once_answers`).
    fn exactly_once_problems(&self, config: &ConnectorConfig) -> Vec<ConfigProblem> {
        if !config.exactly_once.required || self.config.exactly_once_source.enabled() {
            return Vec::new();
        }
        vec![ConfigProblem {
            name: C::EXACTLY_ONCE_SUPPORT.name.into(),
            message: "This worker does not have exactly-once source support enabled. Set \
                      exactly.once.source.support=enabled in the config of every worker of the cluster (a distributed \
                      worker), or exactly.once.support=requested here"
                .into(),
        }]
    }

    /// Problems with the transform plugins a connector's chain names: each must be a transform
    /// plugin in `plugin.path` (of a version `transforms.<alias>.version` allows), given every
    /// setting its definition requires, and pass its own `validate`.
    fn check_transform_plugins(&self, config: &ConnectorConfig) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let on = |name: String, message: String| ConfigProblem { name, message };
        for (alias, step) in config.transforms.plugin_steps() {
            let key = format!("transforms.{alias}.type");
            let plugin = match self.registry.find(&step.name, step.version.as_ref()) {
                Ok(plugin) if plugin.info.kind == PluginKind::Transform => plugin,
                Ok(plugin) => {
                    let message = format!(
                        "{key}={}: the plugin is a {} connector, not a transform",
                        step.name,
                        plugin.info.kind.name()
                    );
                    problems.push(on(key, message));
                    continue;
                }
                Err(crate::runtime::registry::FindError::Unknown { found, .. }) => {
                    let message = format!(
                        "{key}={} is neither one of Kafka Connect's transforms nor a transform plugin in plugin.path \
                         (plugins found: {found})",
                        step.name
                    );
                    problems.push(on(key, message));
                    continue;
                }
                Err(e) => {
                    problems.push(on(key.clone(), format!("{key}={}: {e}", step.name)));
                    continue;
                }
            };
            for required in plugin.info.config.iter().filter(|k| k.required) {
                let given = step.settings.iter().rev().find(|(k, _)| *k == required.name);
                if given.is_none_or(|(_, v)| v.trim().is_empty()) {
                    let name = format!("transforms.{alias}.{}", required.name);
                    let message = format!(
                        "{name} is required by the transform plugin {} ({})",
                        step.name, required.documentation
                    );
                    problems.push(on(name, message));
                }
            }
            let settings = with_defaults(&plugin, &step.settings);
            match self.plugin_validate(&plugin, &format!("{}-{alias}", config.name), &settings, &config.secrets) {
                Ok(found) => problems.extend(found.into_iter().map(|p| {
                    let name = format!("transforms.{alias}.{}", p.name);
                    on(name.clone(), format!("{name}: {}", p.message))
                })),
                Err(e) => problems.push(on(key.clone(), format!("{key}={}: its validate failed: {e}", step.name))),
            }
        }
        problems
    }

    /// The plugin's own `validate` of a config, within `wasm.call.timeout.ms`; a source's also
    /// with its answers to the exactly-once settings the config asks for (`exactly_once_answers`).
    pub fn plugin_validate(
        &self,
        plugin: &Plugin,
        label: &str,
        config: &Vec<(String, String)>,
        secrets: &crate::config::providers::Secrets,
    ) -> Result<Vec<wharf_connect::model::ConfigProblem>, crate::runtime::PluginError> {
        let mut instance = plugin.connector(&self.runtime, label, &self.config.wasm, secrets)?;
        let mut problems = instance.validate(config)?;
        if plugin.info.kind == PluginKind::Source {
            problems.extend(exactly_once_answers(&mut instance, plugin, config));
        }
        Ok(problems)
    }

    /// Validates a connector and asks its plugin to split it into at most `tasks.max` task configs.
    pub fn task_configs(&self, config: &ConnectorConfig) -> Result<Vec<Vec<(String, String)>>, StartError> {
        let plugin = self.validate(config, validation::Types::Unchecked)?;
        let configs = plugin
            .connector(&self.runtime, &config.name, &config.limits, &config.secrets)
            .and_then(|mut c| c.task_configs(&config.resolved, config.tasks_max))
            .map_err(|e| StartError::Plugin {
                name: config.name.clone(),
                message: config.secrets.scrub(&e.to_string()),
            })?;
        // Values that came from references go back to being references: the task configs are
        // stored, and each task resolves them again when it starts.
        configs
            .into_iter()
            .map(|task| {
                crate::config::ConfigProviders::unresolve(&config.raw, &config.resolved, &config.secrets, task)
                    .map_err(|message| StartError::Plugin { name: config.name.clone(), message })
            })
            .collect()
    }

    /// The kind of the plugin a connector config names, if the plugin is loaded.
    pub fn kind_of(&self, class: &str) -> Option<ConnectorKind> {
        self.registry.find(class, None).ok().and_then(|p| p.info.kind.connector())
    }

    /// The plugin a connector config names (of the version it asks for), if it is loaded.
    pub fn plugin_of(&self, config: &[(String, String)]) -> Option<Arc<Plugin>> {
        let class = wharf_connect::model::last_value(config, C::CONNECTOR_CLASS.name).map(str::trim)?;
        let version = wharf_connect::model::requested_version(config)
            .and_then(|v| wharf_connect::model::parse_version_requirement(v).ok());
        self.registry.find(class, version.as_ref()).ok()
    }

    /// The keys of a connector config never shown over REST: those its plugin declares
    /// PASSWORD, the JDBC URLs it declares that hold a password, and the host's own secret settings (`crate::config::keys::is_host_secret`).
    /// Masking fails closed: while the plugin is unknown (compiling, removed, or not of the
    /// version the config asks for), every key that looks like a secret
    /// (`crate::config::keys::looks_secret`) is hidden.
    pub fn secret_keys(&self, config: &[(String, String)]) -> Vec<String> {
        let declared: Vec<String> = match self.plugin_of(config) {
            Some(plugin) => plugin
                .info
                .config
                .iter()
                .filter(|k| k.type_name == "PASSWORD")
                .map(|k| k.name.clone())
                .chain(crate::config::connector::urls_with_passwords(&plugin.info, config))
                .collect(),
            None => config
                .iter()
                .filter(|(k, v)| {
                    crate::config::keys::looks_secret(k)
                        || (v.trim_start().starts_with("jdbc:") && wharf_jdbc_url::holds_password(v))
                })
                .map(|(k, _)| k.clone())
                .collect(),
        };
        let host = config.iter().filter(|(k, _)| crate::config::keys::is_host_secret(k)).map(|(k, _)| k.clone());
        let mut keys: Vec<String> = declared.into_iter().chain(host).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// The connector config this worker runs a connector's tasks with, and each running task's config.
    #[allow(clippy::type_complexity)]
    pub fn running(&self, name: &str) -> Option<(Vec<(String, String)>, BTreeMap<u32, Vec<(String, String)>>)> {
        let connectors = self.connectors.locked();
        connectors
            .get(name)
            .map(|c| (c.config.raw.clone(), c.tasks.iter().map(|(id, t)| (*id, t.config.clone())).collect()))
    }

    /// `auto.restart.*` of a connector whose tasks run here, as they were started.
    pub fn auto_restart_of(&self, name: &str) -> Option<crate::config::connector::AutoRestart> {
        self.connectors.locked().get(name).map(|c| c.config.auto_restart.clone())
    }

    pub fn running_names(&self) -> Vec<String> {
        self.connectors.locked().keys().cloned().collect()
    }

    /// Starts some of a connector's tasks. A task must not be running already, and tasks already
    /// running for the connector must have been started with the same connector config.
    pub fn start_tasks(
        &self,
        config: ConnectorConfig,
        tasks: Vec<(u32, Vec<(String, String)>)>,
    ) -> Result<(), StartError> {
        let name = config.name.clone();
        if let Some(running) = self.connectors.locked().get(&name) {
            let conflict = |message: String| StartError::Conflict { name: name.clone(), message };
            if running.config.raw != config.raw {
                return Err(conflict(
                    "its tasks were asked to start with a config other than the one they run with".into(),
                ));
            }
            if let Some((id, _)) = tasks.iter().find(|(id, _)| running.tasks.contains_key(id)) {
                return Err(conflict(format!(
                    "task {id} was asked to start, but it is running on this worker already"
                )));
            }
        }
        let plugin = self.plugin_to_start(&config)?;
        let ids: Vec<String> = tasks.iter().map(|(id, _)| id.to_string()).collect();
        tracing::info!(
            "starting task(s) {} of connector {name} ({} {})",
            ids.join(", "),
            plugin.info.name,
            plugin.info.version
        );
        // A task's automatic restarts in a row go on from its last status, wherever it ran.
        let stored = self.status.get(&name);
        let started: Vec<(u32, RunningTask)> = tasks
            .into_iter()
            .map(|(id, task_config)| {
                let carried = stored.as_ref().and_then(|s| s.tasks.get(&id)).map_or(0, |s| s.auto_restarts);
                let auto_restarts = Arc::new(RestartCount::new(carried));
                let unassigned = Status { auto_restarts: carried, ..self.status_of(State::Unassigned, None) };
                self.status.put_task(&name, id, unassigned);
                let handle = self.spawn_task(&plugin, &config, id, task_config.clone(), &auto_restarts);
                (id, RunningTask { config: task_config, handle, auto_restarts })
            })
            .collect();
        let mut connectors = self.connectors.locked();
        let entry = connectors.entry(name).or_insert_with(|| RunningConnector { config, tasks: BTreeMap::new() });
        entry.tasks.extend(started);
        Ok(())
    }

    /// Stops some of a connector's tasks and waits for them (at most
    /// `task.shutdown.graceful.timeout.ms`).
    pub fn stop_tasks(&self, name: &str, ids: &[u32]) {
        let handles = self.take_handles(name, ids);
        self.join(handles);
    }

    /// Removes tasks from the running set and returns their handles.
    fn take_handles(&self, name: &str, ids: &[u32]) -> Vec<(TaskId, TaskHandle)> {
        let handles: Vec<(TaskId, TaskHandle)> = {
            let mut connectors = self.connectors.locked();
            let Some(connector) = connectors.get_mut(name) else { return Vec::new() };
            let handles = ids
                .iter()
                .filter_map(|id| connector.tasks.remove(id).and_then(|t| t.handle).map(|h| (TaskId::new(name, *id), h)))
                .collect();
            for id in ids {
                self.task_metrics.remove(name, *id);
            }
            if connector.tasks.is_empty() {
                connectors.remove(name);
            }
            handles
        };
        if !handles.is_empty() {
            tracing::info!(
                "stopping task(s) {} of connector {name}",
                handles.iter().map(|(task, _)| task.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        handles
    }

    /// Stops every task of a connector this worker runs.
    pub fn stop_connector(&self, name: &str) -> bool {
        let Some(connector) = self.connectors.locked().remove(name) else {
            return false;
        };
        tracing::info!("stopping connector {name}");
        self.task_metrics.remove_connector(name);
        let handles =
            connector.tasks.into_iter().filter_map(|(i, t)| t.handle.map(|h| (TaskId::new(name, i), h))).collect();
        self.join(handles);
        true
    }

    /// Stops one task and starts it again with the same config (a sink's consumer keeps its
    /// place in the group).
    /// A restart asked for (through the REST API) starts the task's count of automatic restarts
    /// over.
    pub fn restart_task(&self, name: &str, id: u32) -> Result<bool, StartError> {
        self.restart(name, id, |_| 0)
    }

    /// Restarts a FAILED task by itself (`auto.restart.*`), one more automatic restart in a row;
    /// the count goes into the task's statuses. False when the task does not run here.
    pub fn restart_task_automatically(&self, name: &str, id: u32) -> Result<bool, StartError> {
        self.restart(name, id, |restarts| restarts.saturating_add(1))
    }

    /// Starts a task's count of automatic restarts over once it has run long enough: the task's
    /// next status says 0 (its thread writes its statuses; writing one here could overwrite a
    /// FAILED it writes at the same moment).
    pub fn reset_auto_restarts(&self, name: &str, id: u32) {
        let connectors = self.connectors.locked();
        if let Some(task) = connectors.get(name).and_then(|c| c.tasks.get(&id)) {
            task.auto_restarts.reset();
        }
    }

    /// Stops one task and starts it again with the same config, its count of automatic restarts
    /// made `count(the count so far)`.
    fn restart(&self, name: &str, id: u32, count: impl FnOnce(u32) -> u32) -> Result<bool, StartError> {
        let (config, task_config, handle, auto_restarts) = {
            let mut connectors = self.connectors.locked();
            let Some(connector) = connectors.get_mut(name) else { return Ok(false) };
            let connector_config = connector.config.clone();
            let Some(task) = connector.tasks.get_mut(&id) else { return Ok(false) };
            let restarts = count(task.auto_restarts.get());
            task.auto_restarts.set(restarts);
            (connector_config, task.config.clone(), task.handle.take(), task.auto_restarts.clone())
        };
        let restarts = auto_restarts.get();
        // RESTARTING with the new count even when no thread runs (its start failed): a FAILED
        // left standing would look like a new failure.
        let restarting = Status { auto_restarts: restarts, ..self.status_of(State::Restarting, None) };
        self.status.put_task(name, id, restarting);
        if let Some(handle) = handle {
            self.join(vec![(TaskId::new(name, id), handle)]);
        }
        let plugin = match self.plugin_to_start(&config) {
            Ok(plugin) => plugin,
            Err(e) => {
                // Not left RESTARTING with no thread: FAILED, for a later restart.
                let failed = Status { auto_restarts: restarts, ..self.status_of(State::Failed, Some(e.to_string())) };
                self.status.put_task(name, id, failed);
                return Err(e);
            }
        };
        let Some(handle) = self.spawn_task(&plugin, &config, id, task_config, &auto_restarts) else { return Ok(true) };
        let mut connectors = self.connectors.locked();
        match connectors.get_mut(name).and_then(|c| c.tasks.get_mut(&id)) {
            Some(task) => task.handle = Some(handle),
            None => {
                // The task was stopped meanwhile: stop the new one too.
                drop(connectors);
                self.join(vec![(TaskId::new(name, id), handle)]);
            }
        }
        Ok(true)
    }

    pub fn status_of(&self, state: State, trace: Option<String>) -> Status {
        self.reporter.status(state, trace)
    }

    /// Records a connector's state unless it is already recorded so, in whichever generation
    /// (reconciling repeats itself), with the kind and version of its plugin when that is loaded.
    pub fn put_status(&self, name: &str, plugin: Option<&Plugin>, state: State, trace: Option<String>) {
        let kind = plugin.and_then(|p| p.info.kind.connector());
        let status = Status { version: plugin.map(|p| p.info.version.clone()), ..self.status_of(state, trace) };
        if self
            .status
            .get(name)
            .is_some_and(|s| s.connector.says_the_same(&status) && (kind.is_none() || s.kind == kind))
        {
            return;
        }
        self.status.put_connector(name, kind, status);
    }

    /// Records a task's state unless it is already recorded so, in whichever generation.
    pub fn put_task_status(&self, name: &str, id: u32, plugin: Option<&Plugin>, state: State) {
        let status = Status { version: plugin.map(|p| p.info.version.clone()), ..self.status_of(state, None) };
        if self.status.get(name).is_some_and(|s| s.tasks.get(&id).is_some_and(|known| known.says_the_same(&status))) {
            return;
        }
        self.status.put_task(name, id, status);
    }

    /// Starts a task's thread. When this worker has `wharf.tasks.max.per.worker` task threads
    /// already (stuck ones left behind count too), or the system refuses a thread, the task is
    /// FAILED with the reason and `None` comes back (a restart tries again).
    fn spawn_task(
        &self,
        plugin: &Arc<Plugin>,
        config: &ConnectorConfig,
        id: u32,
        task_config: Vec<(String, String)>,
        auto_restarts: &Arc<RestartCount>,
    ) -> Option<TaskHandle> {
        let task = TaskId::new(&config.name, id);
        let reporter = Reporter {
            version: Some(plugin.info.version.clone()),
            auto_restarts: auto_restarts.clone(),
            ..self.reporter.clone()
        };
        // Failures of the config's checks are not restarted automatically: a restart cannot mend
        // them.
        let fail_as = |message: String, restartable: bool| {
            let message = config.secrets.scrub(&message);
            tracing::error!("task {task} not started: {message}");
            let failed = Status { restartable, ..reporter.status(State::Failed, Some(message)) };
            self.status.put_task(&config.name, id, failed);
            TaskCounters::add(&self.task_metrics.startups.task_failure, 1);
            None
        };
        let fail = |message: String| fail_as(message, true);
        let refuse = |message: String| fail_as(message, false);
        let ceiling = self.config.tasks_max_per_worker as usize;
        let Some(thread_slot) = TaskThreadSlot::take(&self.task_threads, ceiling) else {
            return fail(format!(
                "this worker runs wharf.tasks.max.per.worker={ceiling} task threads already (stuck ones included); \
                 add workers, lower tasks.max of some connectors or raise the ceiling, then restart the task"
            ));
        };
        // The grants the plugin's declared keys derive, from the connector config (checked again
        // at every start: the ceiling or a symbolic link may have changed since).
        let connector = match config.clone().with_declared(&plugin.info.grants, &plugin.info.connections) {
            Ok(connector) => connector,
            Err(e) => return refuse(e.to_string()),
        };
        // The task's own references, resolved here, by the worker that runs it.
        let task_config = match self.config.config_providers.resolve_task(&config.raw, &task_config) {
            Ok(resolved) => resolved,
            Err(message) => return fail(message),
        };
        let mut transform_plugins = Vec::new();
        for (alias, step) in connector.transforms.plugin_steps() {
            match self.registry.find(&step.name, step.version.as_ref()) {
                Ok(found) if found.info.kind == PluginKind::Transform => transform_plugins.push(TransformPlugin {
                    alias: alias.to_string(),
                    settings: with_defaults(&found, &step.settings),
                    plugin: found,
                }),
                Ok(_) => {
                    return refuse(format!("transforms.{alias}.type={}: the plugin is not a transform", step.name))
                }
                Err(e) => return refuse(format!("transforms.{alias}.type={}: {e}", step.name)),
            }
        }
        let stop = Arc::new(crate::sync::Stop::default());
        let kind = match plugin.info.kind {
            PluginKind::Sink => ConnectorKind::Sink,
            PluginKind::Source | PluginKind::Transform => ConnectorKind::Source,
        };
        let counters = self.task_metrics.register(&config.name, id, kind);
        let opener = Opener {
            runtime: self.runtime.clone(),
            plugin: plugin.clone(),
            transform_plugins,
            connector: connector.clone(),
            task: task.clone(),
            task_config,
            offsets: self.offsets.clone(),
            max_sockets: self.config.max_sockets_per_worker,
            counters: counters.clone(),
            defines_transactions: self.config.exactly_once_source.enabled()
                && plugin.info.kind == PluginKind::Source
                && connector.exactly_once.boundary == crate::config::connector::TransactionBoundary::Connector,
        };
        let setup = TaskSetup {
            opener,
            worker: self.config.clone(),
            connector,
            task: task.clone(),
            status: self.status.clone(),
            reporter: reporter.clone(),
            reserved: self.reserved.clone(),
            stop: stop.clone(),
            producers: self.producers.clone(),
            members: self.members.clone(),
            counters,
            fencer: self.fencer.get().cloned(),
            offset_topics: self.offset_topics.clone(),
        };
        let (connector_name, task_number) = (config.name.clone(), id);
        let spawned = crate::sync::Stoppable::spawn_with(format!("task-{task}"), stop, move || {
            let _slot = thread_slot;
            // Every line of the task's thread says `[<connector>|task-<n>]` (at the error level, the
            // span stays whatever levels /admin/loggers sets).
            let _context =
                tracing::error_span!("task", connector = connector_name.as_str(), task = task_number).entered();
            setup.run()
        });
        match spawned {
            Ok(thread) => {
                TaskCounters::add(&self.task_metrics.startups.task_success, 1);
                Some(thread)
            }
            Err(e) => fail(format!("the system refused a thread for the task ({e}); restart the task to try again")),
        }
    }

    /// Stops every task, waiting at most `task.shutdown.graceful.timeout.ms` for them together.
    ///
    /// Each task that stopped is then UNASSIGNED in the status topic, as Kafka Connect records a
    /// task's shutdown: the worker that takes it over once this one left its group starts it
    /// after that record, so the topic never shows the task RUNNING on both. The stop waits as a
    /// hand-over does, for a task's last call and flush.
    pub fn stop_all(&self) {
        let connectors = std::mem::take(&mut *self.connectors.locked());
        self.task_metrics.clear();
        let handles = connectors
            .into_iter()
            .flat_map(|(name, c)| {
                c.tasks.into_iter().filter_map(move |(i, t)| t.handle.map(|h| (TaskId::new(&name, i), h)))
            })
            .collect();
        let patience = self.config.offset_flush_timeout + self.config.wasm.call_timeout;
        for task in self.join_within(handles, patience) {
            self.status.put_task(&task.connector, task.task, self.status_of(State::Unassigned, None));
        }
        self.status.flush();
    }

    /// Signals every task of `handles` to stop, then waits for them together, at most
    /// `task.shutdown.graceful.timeout.ms`.
    fn join(&self, handles: Vec<(TaskId, TaskHandle)>) {
        self.join_within(handles, Duration::ZERO);
    }

    /// As `join`, then waits up to `patience` more for tasks still finishing (their last flush):
    /// work that moves to another worker must have stopped here first. The tasks that stopped.
    fn join_within(&self, handles: Vec<(TaskId, TaskHandle)>, patience: Duration) -> Vec<TaskId> {
        for (_, handle) in &handles {
            handle.stop.stop();
        }
        let timeout = self.config.task_shutdown_graceful_timeout;
        let graceful = Instant::now() + timeout;
        let deadline = graceful + patience;
        let mut stopped = Vec::new();
        for (task, handle) in handles {
            let Err(handle) = handle.ended_by(graceful) else {
                stopped.push(task);
                continue;
            };
            self.task_metrics.startups.past_stop_deadline.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if patience.is_zero() {
                tracing::warn!("task {task} did not stop within {} ms; leaving it behind", timeout.as_millis());
                continue;
            }
            tracing::info!(
                "task {task} is still stopping after task.shutdown.graceful.timeout.ms={}; its work moves only \
                 once it stopped (waiting up to {} ms more)",
                timeout.as_millis(),
                patience.as_millis()
            );
            if handle.ended_by(deadline).is_err() {
                tracing::warn!(
                    "task {task} did not stop within {} ms; leaving it behind",
                    (timeout + patience).as_millis()
                );
            } else {
                stopped.push(task);
            }
        }
        stopped
    }

    /// Removes from their groups the static members of sink tasks that stopped here and that
    /// `gone` says will not run again (their connector deleted or stopped, their task count
    /// lowered), so that their partitions go to the group's other members at once. The removals
    /// run on a thread of their own.
    pub fn release_members(&self, gone: impl Fn(&str, u32) -> bool) {
        self.members.release(gone);
    }

    /// Stops tasks that are to run elsewhere: as `stop_tasks`, but waits for a task's last call
    /// and flush too (bounded by the call and flush timeouts), so it never overlaps its next run.
    pub fn hand_over_tasks(&self, name: &str, ids: &[u32]) {
        let handles = self.take_handles(name, ids);
        let patience = self.config.offset_flush_timeout + self.config.wasm.call_timeout;
        self.join_within(handles, patience);
    }
}

/// Writes statuses as this worker, in its current group generation: the one way a `Status` is
/// made on a worker.
#[derive(Clone)]
struct Reporter {
    worker_id: String,
    generation: Arc<AtomicI32>,
    /// The version of the plugin a task's statuses are about; none for the worker's own.
    version: Option<String>,
    /// A task's automatic restarts in a row; always 0 for the worker's own.
    auto_restarts: Arc<RestartCount>,
}

impl Reporter {
    fn status(&self, state: State, trace: Option<String>) -> Status {
        Status {
            state,
            worker_id: self.worker_id.clone(),
            trace,
            records_skipped: 0,
            generation: self.generation.load(Ordering::Relaxed),
            version: self.version.clone(),
            auto_restarts: self.auto_restarts.get(),
            restartable: true,
        }
    }
}

/// A config with problems is invalid, with every problem said.
fn refuse_problems(config: &ConnectorConfig, problems: Vec<ConfigProblem>) -> Result<(), StartError> {
    if problems.is_empty() {
        return Ok(());
    }
    let messages: Vec<String> = problems.into_iter().map(|p| config.secrets.scrub(&p.message)).collect();
    Err(StartError::Invalid { name: config.name.clone(), problems: messages.join("; ") })
}

/// A transform plugin a connector's chain names, found for a task: the step's alias, the plugin,
/// and its settings with the definition's defaults filled in.
#[derive(Clone)]
struct TransformPlugin {
    alias: String,
    plugin: Arc<Plugin>,
    settings: Vec<(String, String)>,
}

/// A transform plugin's instance in a task's chain; closed when the chain goes.
struct PluginTransform(Option<crate::runtime::instance::TransformInstance>);

impl wharf_connect::transform::BatchApply for PluginTransform {
    fn apply(
        &mut self,
        records: Vec<wharf_connect::transform::Record>,
    ) -> Result<Vec<Option<wharf_connect::transform::Record>>, String> {
        match &mut self.0 {
            Some(instance) => instance.apply(records).map_err(|e| e.to_string()),
            None => Err("the transform plugin's instance is closed".into()),
        }
    }
}

impl Drop for PluginTransform {
    fn drop(&mut self) {
        if let Some(instance) = self.0.take() {
            if let Err(e) = instance.close() {
                tracing::warn!("a transform plugin's close failed: {e}");
            }
        }
    }
}

/// What a source plugin answers to the exactly-once settings of `config` (its `exactly-once`
/// export, 0.1.8), checked as Kafka Connect checks a connector's `exactlyOnceSupport` and
/// `canDefineTransactionBoundaries`, on the same keys and in its words: asked only under
/// `exactly.once.support=required` and `transaction.boundary=connector`.
fn exactly_once_answers(
    instance: &mut crate::runtime::instance::ConnectorInstance,
    plugin: &Plugin,
    config: &Vec<(String, String)>,
) -> Vec<ConfigProblem> {
    let asks = |key: &str, value: &str| {
        config.iter().rev().find(|(k, _)| k == key).is_some_and(|(_, v)| v.trim().eq_ignore_ascii_case(value))
    };
    let unexpected = |e: crate::runtime::PluginError| format!("An unexpected error occurred during validation: {e}");
    let plugin_name = format!("{} {}", plugin.info.name, plugin.info.version);
    let mut problems = Vec::new();
    if asks(C::EXACTLY_ONCE_SUPPORT.name, "required") {
        let refusal = match instance.exactly_once_support(config) {
            Ok(Some(true)) => None,
            Ok(Some(false)) => {
                Some("The connector does not support exactly-once semantics with the provided configuration.".into())
            }
            Ok(None) => Some(format!(
                "The connector does not implement the API required for preflight validation of exactly-once source \
                 support. Please consult the documentation for the connector to determine whether it supports \
                 exactly-once semantics, and then consider reconfiguring the connector to use the value \"requested\" \
                 for this property (which will disable this preflight check and allow the connector to be created). \
                 Plugin {plugin_name} does not say whether it gives exactly-once delivery (plugins say so from \
                 wharf:connector 0.1.8 on); under requested its tasks still run in transactions."
            )),
            Err(e) => Some(unexpected(e)),
        };
        problems.extend(refusal.map(|message| ConfigProblem { name: C::EXACTLY_ONCE_SUPPORT.name.into(), message }));
    }
    if asks(C::TRANSACTION_BOUNDARY.name, "connector") {
        let refusal = match instance.can_define_transaction_boundaries(config) {
            Ok(true) => None,
            Ok(false) => Some(format!(
                "The connector does not support connector-defined transaction boundaries with the given \
                 configuration. Please reconfigure it to use a different transaction boundary definition. Plugin \
                 {plugin_name} says its tasks cannot define them: set transaction.boundary to poll or interval."
            )),
            Err(e) => Some(unexpected(e)),
        };
        problems.extend(refusal.map(|message| ConfigProblem { name: C::TRANSACTION_BOUNDARY.name.into(), message }));
    }
    problems
}

/// The settings a transform plugin is opened with: the step's, then the defaults of the keys
/// the plugin defines that the step does not set.
fn with_defaults(plugin: &Plugin, given: &[(String, String)]) -> Vec<(String, String)> {
    let mut settings = given.to_vec();
    for key in &plugin.info.config {
        if let Some(default) = &key.default_value {
            if !settings.iter().any(|(k, _)| *k == key.name) {
                settings.push((key.name.clone(), default.clone()));
            }
        }
    }
    settings
}

/// Opens a task's plugin instance and the transform plugins of its chain, each with the task's
/// grants and limits.
#[derive(Clone)]
struct Opener {
    runtime: Arc<Runtime>,
    plugin: Arc<Plugin>,
    transform_plugins: Vec<TransformPlugin>,
    connector: ConnectorConfig,
    task: TaskId,
    task_config: Vec<(String, String)>,
    offsets: Arc<dyn OffsetStore>,
    max_sockets: usize,
    /// The task's counts, which its instances' calls go into.
    counters: Arc<crate::metrics::tasks::TaskCounters>,
    /// The task's plugin says where its transactions end (`transaction.boundary=connector` on a
    /// distributed worker with exactly-once source support).
    defines_transactions: bool,
}

/// Counts each call into a task's plugin in the task's metrics, and keeps the metrics the plugin
/// registers there, at most `limit` (`wasm.max.plugin.metrics`).
struct TaskMetrics {
    counters: Arc<crate::metrics::tasks::TaskCounters>,
    limit: usize,
}

impl crate::runtime::TaskObserver for TaskMetrics {
    fn call_ended(&self, call: &'static str, took: std::time::Duration, outcome: CallOutcome, memory_bytes: usize) {
        use crate::metrics::plugin_calls::Ending;
        let ending = match outcome {
            CallOutcome::Returned => Ending::Returned,
            CallOutcome::DeadlineHit => Ending::DeadlineHit,
            CallOutcome::Trapped => Ending::Trapped,
        };
        self.counters.plugin.record(call, took, ending, memory_bytes);
    }

    fn register_metric(&self, metric: crate::runtime::PluginMetric) -> Result<u32, String> {
        use crate::metrics::plugin_metrics::{MetricKind, MetricSpec};
        use crate::runtime::PluginMetricKind;
        let kind = match metric.kind {
            PluginMetricKind::Counter => MetricKind::Counter,
            PluginMetricKind::Gauge => MetricKind::Gauge,
            PluginMetricKind::Histogram => MetricKind::Histogram,
        };
        let spec = MetricSpec {
            name: metric.name,
            description: metric.description,
            kind,
            tags: metric.tags,
            buckets: metric.buckets,
        };
        self.counters.plugin_metrics.register(spec, self.limit)
    }

    fn record_metrics(&self, values: &[(u32, f64)]) {
        self.counters.plugin_metrics.record(values);
    }

    fn crossed(&self, records: usize, bytes: usize) {
        self.counters.plugin.crossed(records, bytes);
    }

    fn refused(&self) {
        self.counters.plugin.refused();
    }
}

impl Opener {
    fn grants(&self) -> Grants {
        let offsets = self.offsets.clone();
        let connector = self.connector.name.clone();
        let lookup: OffsetLookup = Arc::new(move |partition| offsets.get(&connector, partition));
        Grants {
            label: self.task.to_string(),
            folders: self.connector.folders.clone(),
            connect: self.connector.connect.clone(),
            http: self.connector.http.clone(),
            memory_max_bytes: self.connector.limits.memory_max_bytes,
            max_host_handles: self.connector.limits.max_host_handles,
            log_line_max_bytes: self.connector.limits.log_line_max_bytes,
            log_lines_per_second: self.connector.limits.log_lines_per_second,
            fs_inline: self.connector.limits.fs_inline,
            offsets: Some(lookup),
            secrets: self.connector.secrets.clone(),
            max_sockets: self.max_sockets,
            tls: self.connector.tls.clone(),
            observer: Some(Arc::new(TaskMetrics {
                counters: self.counters.clone(),
                limit: self.connector.limits.max_plugin_metrics,
            })),
            defines_transactions: self.defines_transactions,
        }
    }

    /// The connector's transforms for this task, each transform plugin opened with the task's
    /// grants and limits; with errors.tolerance=all a plugin that fails a batch is given its
    /// records one at a time.
    fn task_chain(&self) -> Result<wharf_connect::transform::TaskChain, TaskFailure> {
        let mut chain = self
            .connector
            .transforms
            .for_task(|alias, _| {
                let Some(found) = self.transform_plugins.iter().find(|t| t.alias == alias) else {
                    return Err("the worker found no transform plugin for it".into());
                };
                let instance = found
                    .plugin
                    // A transform plugin's calls are not the task's plugin's.
                    .open_transform(
                        &self.runtime,
                        Grants { observer: None, ..self.grants() },
                        &found.settings,
                        &self.connector.limits,
                    )
                    .map_err(|e| e.to_string())?;
                Ok(Box::new(PluginTransform(Some(instance))) as Box<dyn wharf_connect::transform::BatchApply>)
            })
            .map_err(TaskFailure::new)?;
        chain.isolate_failures(self.connector.errors.tolerate_all);
        Ok(chain)
    }

    fn open_source(&self) -> Result<crate::runtime::SourceInstance, TaskFailure> {
        self.plugin
            .open_source(&self.runtime, self.grants(), &self.task_config, &self.connector.limits)
            .map_err(|e| TaskFailure::from_open(&e))
    }

    fn open_sink(&self) -> Result<crate::runtime::SinkInstance, TaskFailure> {
        let mut instance = self
            .plugin
            .open_sink(&self.runtime, self.grants(), &self.task_config, &self.connector.limits)
            .map_err(|e| TaskFailure::from_open(&e))?;
        instance.tolerate_errant(self.connector.errors.tolerate_all);
        Ok(instance)
    }

    /// The instance and its chain again, for `wasm.instance.recycle.records`: none when it is
    /// off.
    fn recycler<T: 'static>(
        &self,
        open: fn(&Opener) -> Result<T, TaskFailure>,
    ) -> Option<recycle::Recycler<(T, wharf_connect::transform::TaskChain)>> {
        let opener = self.clone();
        recycle::Recycler::new(
            self.connector.limits.recycle_records,
            &self.task.to_string(),
            Box::new(move || {
                let instance = open(&opener)?;
                let chain = opener.task_chain()?;
                Ok((instance, chain))
            }),
        )
    }
}

/// Everything a task thread needs, moved into it.
struct TaskSetup {
    /// Opens the task's plugin instance and chain; it holds the plugin, the task's config and
    /// the offset store.
    opener: Opener,
    worker: WorkerConfig,
    connector: ConnectorConfig,
    task: TaskId,
    status: Arc<dyn StatusStore>,
    reporter: Reporter,
    reserved: Arc<ReservedTopics>,
    stop: Arc<crate::sync::Stop>,
    producers: Arc<kafka::producers::ProducerPool>,
    /// Where a sink task's static member waits when the task stops.
    members: Arc<membership::ParkedMembers>,
    /// The task's counts, for the worker's metrics.
    counters: Arc<crate::metrics::tasks::TaskCounters>,
    /// Asks the leader to fence the connector's earlier tasks (exactly-once sources).
    fencer: Option<fencing::Fencer>,
    /// Where a source connector with a topic of its own for its offsets finds them.
    offset_topics: Arc<offset_topics::OffsetTopics>,
}

impl TaskSetup {
    fn status(&self, state: State, trace: Option<String>) -> Status {
        self.reporter.status(state, trace)
    }

    fn run(self) {
        let name = self.connector.name.clone();
        let (task, status) = (self.task.clone(), self.status.clone());
        let reporter = self.reporter.clone();
        let secrets = self.connector.secrets.clone();
        let distributed = self.worker.distributed.is_some();
        let counters = self.counters.clone();
        // A bug that panics fails this task, reported as any failure, and nothing else.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match self.opener.plugin.info.kind {
            PluginKind::Source => self.run_source(),
            PluginKind::Sink => self.run_sink(),
            // Refused by `validate`; reported rather than asserted should it ever get here.
            PluginKind::Transform => TaskReport {
                outcome: Err(TaskFailure::new(format!(
                    "{} is a transform plugin and cannot run as a connector's task",
                    self.opener.plugin.info.name
                ))),
            },
        }));
        let report = ran.unwrap_or_else(|panic| TaskReport {
            outcome: Err(TaskFailure::new(format!(
                "the worker failed while running this task, on a bug ({}); restart the task to try again",
                crate::sync::panic_message(&*panic)
            ))),
        });
        counters.ended();
        // What a failure says goes to the log and the status topic: never a secret.
        let outcome = report.outcome.map_err(|failure| TaskFailure {
            message: secrets.scrub(&failure.message),
            trace: secrets.scrub(&failure.trace),
            ..failure
        });
        match outcome {
            Ok(()) => tracing::info!(task = task.to_string(), "task stopped"),
            // In a cluster the run that took this one's place reports the task; a standalone
            // worker's task was taken over from outside, which its status says.
            Err(failure) if failure.superseded && distributed => {
                tracing::error!(task = task.to_string(), "task stopped: {}", failure.message)
            }
            Err(failure) => {
                tracing::error!(task = task.to_string(), "task failed: {}", failure.message);
                let failed =
                    Status { restartable: failure.restartable, ..reporter.status(State::Failed, Some(failure.trace)) };
                status.put_task(&name, task.task, failed);
            }
        }
    }

    /// The task's RUNNING status as it changes: its plugin's progress line and its count of
    /// skipped records.
    fn running_status(&self) -> Arc<running::RunningStatus> {
        running::RunningStatus::new(
            self.status.clone(),
            self.reporter.clone(),
            &self.connector.name,
            self.task.task,
            self.stop.clone(),
        )
    }

    /// The task's tolerance of failed records, publishing its count of skipped ones in the
    /// task's status (as RUNNING: it is only published while the task runs).
    fn tolerance(&self, running: &Arc<running::RunningStatus>) -> tolerance::Tolerance {
        let running = running.clone();
        tolerance::Tolerance::new(self.connector.errors.clone(), &self.task.to_string())
            .publishing(Box::new(move |skipped| running.skipped(skipped)))
            .counting(self.counters.clone())
    }

    fn running(&self) {
        self.status.put_task(&self.connector.name, self.task.task, self.status(State::Running, None));
        tracing::info!(task = self.task.to_string(), "task running");
    }

    fn run_source(mut self) -> TaskReport {
        let failed = |failure: TaskFailure| TaskReport { outcome: Err(failure) };
        // A connector's own offset topic (`offsets.storage.topic`), read to its end here, off the
        // herder's thread.
        match self.offset_topics.store_for(&self.connector) {
            Ok(store) => self.opener.offsets = store,
            Err(why) => return failed(TaskFailure::new(why)),
        }
        let task_client_id = format!("wharf-{}", self.task);
        let config = kafka::producer_config(&self.worker, &self.connector.client_overrides.producer, &task_client_id);
        let shared_client_id = format!("wharf-{}-producer", self.worker.worker_id());
        let transactional = self.transactional();
        let producer = match &transactional {
            Some(settings) => match self.transactional_producer(config, &settings.id) {
                Ok(p) => p,
                Err(failure) => return failed(failure),
            },
            None => match self.producers.producer_for(&config, &task_client_id, &shared_client_id) {
                Ok(p) => p,
                Err(e) => {
                    return failed(TaskFailure::new(format!(
                        "cannot create the Kafka producer (check the worker's producer.* settings): {e}"
                    )))
                }
            },
        };
        let opener = &self.opener;
        if transactional.is_some() {
            // The offsets the task's previous run committed, wherever it ran: its producer, just
            // fenced, can commit nothing more.
            if let Err(e) = opener.offsets.catch_up() {
                return failed(TaskFailure::new(e.to_string()));
            }
        }
        let instance = match opener.open_source() {
            Ok(i) => i,
            Err(failure) => return failed(failure),
        };
        let transforms = match opener.task_chain() {
            Ok(chain) => chain,
            Err(failure) => {
                let _ = instance.close();
                return failed(failure);
            }
        };
        self.running();
        let running = self.running_status();
        source::SourceTaskRun {
            connector: self.connector.name.clone(),
            label: self.task.to_string(),
            instance,
            producer,
            producers: self.producers.clone(),
            offsets: opener.offsets.clone(),
            reserved: self.reserved.clone(),
            flush_interval: self.worker.offset_flush_interval,
            flush_timeout: self.worker.offset_flush_timeout,
            stop: self.stop.clone(),
            converters: converting::RecordConverters::new(&self.connector.converters.over(&self.worker.converters)),
            transforms,
            recycle: opener.recycler(Opener::open_source),
            tolerance: self.tolerance(&running),
            running,
            counters: self.counters.clone(),
            tracked: self.topic_tracker(),
            creator: topic_creation::TopicCreator::new(
                self.connector.topic_creation.as_ref(),
                &self.worker,
                &self.connector.client_overrides.admin,
            ),
            transactional,
        }
        .run()
    }

    /// A source task's transactional settings when the worker has exactly-once support enabled
    /// (a distributed worker whose offsets are on a topic); none otherwise.
    fn transactional(&self) -> Option<source::Transactional> {
        use crate::config::connector::TransactionBoundary;
        let cluster = self.worker.distributed.as_ref()?;
        if !self.worker.exactly_once_source.enabled() {
            return None;
        }
        let (offsets_topic, offsets_partitions) = self.opener.offsets.topic()?;
        let settings = &self.connector.exactly_once;
        let boundary = match settings.boundary {
            TransactionBoundary::Poll => source::Boundary::Poll,
            TransactionBoundary::Interval => {
                source::Boundary::Interval(settings.interval.unwrap_or(self.worker.offset_flush_interval))
            }
            TransactionBoundary::Connector => source::Boundary::Connector,
        };
        Some(source::Transactional {
            id: fencing::task_transactional_id(&cluster.group_id, &self.connector.name, self.task.task),
            boundary,
            offsets_topic,
            offsets_partitions,
        })
    }

    /// Asks the leader to fence the connector's earlier tasks before this one writes, again while
    /// the cluster has no leader or cannot fence yet, for up to `FENCE_PATIENCE`.
    fn fence_earlier_tasks(&self) -> Result<(), TaskFailure> {
        let Some(fencer) = &self.fencer else { return Ok(()) };
        let deadline = Instant::now() + FENCE_PATIENCE;
        loop {
            let why = match fencer(&self.connector.name) {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            if Instant::now() >= deadline || self.stop.is_stopped() {
                return Err(TaskFailure::new(format!(
                    "Cannot start source task {} with exactly-once support: the cluster's leader did not fence the \
                     transactional producers of the connector's earlier tasks within {} s ({why}); restart the task \
                     once the cluster has a leader",
                    self.task,
                    FENCE_PATIENCE.as_secs()
                )));
            }
            tracing::info!(task = self.task.to_string(), "asking the leader again to fence earlier tasks ({why})");
            self.stop.sleep(FENCE_RETRY_PAUSE);
        }
    }

    /// The task's own transactional producer, its transactions initialised: Kafka fences every
    /// earlier producer under the same id (the task's previous run, here or on another worker)
    /// and aborts its open transaction. A connector's own `transactional.id` or
    /// `enable.idempotence` is overwritten, as Kafka Connect overwrites them.
    fn transactional_producer(
        &self,
        mut config: rdkafka::ClientConfig,
        id: &str,
    ) -> Result<kafka::producers::TaskProducer, TaskFailure> {
        use rdkafka::producer::Producer;
        self.fence_earlier_tasks()?;
        for (key, forced) in [("transactional.id", id), ("enable.idempotence", "true")] {
            if let Some(given) = config.get(key).filter(|given| *given != forced) {
                tracing::warn!(
                    task = self.task.to_string(),
                    "The value '{given}' for the '{key}' property will be ignored as it cannot be overridden for \
                     connectors when exactly-once source support is enabled. The value '{forced}' will be used instead."
                );
            }
            config.set(key, forced);
        }
        // A run the worker gave up meanwhile (its task moved) must not fence the run that took
        // its place.
        let given_up = || TaskFailure::superseded("the task was stopped before it began writing".into());
        if self.stop.is_stopped() {
            return Err(given_up());
        }
        let producer = self.producers.own(&config).map_err(|e| {
            TaskFailure::new(format!(
                "cannot create the task's transactional producer (transactional.id {id}; check the worker's \
                 producer.* settings): {e}"
            ))
        })?;
        producer.transactions().init_transactions(crate::storage::kafka::STORE_TIMEOUT).map_err(|e| {
            TaskFailure::new(format!(
                "cannot start the task's transactions: Kafka did not initialise transactional.id {id} within {} s \
                 ({e}); the worker's principal needs Write and Describe on that TransactionalId and IdempotentWrite \
                 on the cluster",
                crate::storage::kafka::STORE_TIMEOUT.as_secs()
            ))
        })?;
        if self.stop.is_stopped() {
            return Err(given_up());
        }
        Ok(producer)
    }

    /// Records the topics the task uses, when the worker tracks them.
    fn topic_tracker(&self) -> topics::TopicTracker {
        topics::TopicTracker::new(self.status.clone(), self.worker.topic_tracking, &self.connector.name, self.task.task)
    }

    fn run_sink(self) -> TaskReport {
        let failed = |failure: TaskFailure| TaskReport { outcome: Err(failure) };
        let opener = &self.opener;
        let instance = match opener.open_sink() {
            Ok(i) => i,
            Err(failure) => return failed(failure),
        };
        let transforms = match opener.task_chain() {
            Ok(chain) => chain,
            Err(failure) => {
                let _ = instance.close();
                return failed(failure);
            }
        };
        let batch_size = self
            .worker
            .consumer_overrides
            .iter()
            .chain(&self.connector.client_overrides.consumer)
            .rev()
            .find(|(k, _)| k == "max.poll.records")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(usize::MAX)
            .clamp(1, instance.max_records_per_call() as usize);
        let (mut consumer_config, member) = kafka::sink_consumer_config(
            &self.worker,
            &self.connector.name,
            &self.connector.client_overrides.consumer,
            &format!("wharf-{}", self.task),
            self.task.task,
        );
        let departure = member.and_then(|member| self.departure(&mut consumer_config, member));
        if consumer_config.get("statistics.interval.ms").is_none() {
            consumer_config.set("statistics.interval.ms", crate::metrics::clients::STATISTICS_INTERVAL_MS);
        }
        let (context, fetched) = sink::context(&self.task.to_string(), departure.as_ref().map(|d| d.member.clone()));
        let consumer: BaseConsumer<sink::SinkContext> = match consumer_config.create_with_context(context) {
            Ok(c) => c,
            Err(e) => {
                return failed(TaskFailure::new(format!(
                    "cannot create the Kafka consumer (check the worker's consumer.* settings): {e}"
                )))
            }
        };
        let dead_letter = match &self.connector.errors.dead_letter_queue {
            None => None,
            Some(settings) if self.reserved.dead_letter_reason(&settings.topic).is_some() => {
                let why = self.reserved.dead_letter_reason(&settings.topic).unwrap_or_default();
                let _ = instance.close();
                return failed(TaskFailure::new(dead_letter_refusal(&settings.topic, why)));
            }
            Some(settings) => match dead_letter::DeadLetterQueue::open(
                &self.worker,
                &self.connector.client_overrides,
                settings,
                &self.task,
                &self.producers,
            ) {
                Ok(queue) => Some(queue.counting(self.counters.clone())),
                Err(failure) => return failed(failure),
            },
        };
        self.running();
        let running = self.running_status();
        let chosen = self.connector.converters.over(&self.worker.converters);
        // The fetch thread reads records for a plugin that takes data, and for transforms.
        let reading = sink::Reading {
            converters: (instance.takes_data() || !transforms.is_empty())
                .then(|| converting::RecordConverters::new(&chosen)),
            keep_originals: dead_letter.is_some(),
        };
        sink::SinkTaskRun {
            label: self.task.to_string(),
            instance,
            consumer,
            fetched,
            topics: match &self.connector.topics_regex {
                Some(pattern) => {
                    sink::Subscription::Matching { pattern: pattern.clone(), reserved: self.reserved.clone() }
                }
                None => sink::Subscription::Listed(self.connector.topics.clone()),
            },
            batch_size,
            flush_interval: self.worker.offset_flush_interval,
            stop: self.stop.clone(),
            converters: converting::RecordConverters::new(&chosen),
            reading,
            transforms,
            recycle: opener.recycler(Opener::open_sink),
            tolerance: self.tolerance(&running),
            running,
            counters: self.counters.clone(),
            dead_letter,
            class: self.connector.class.clone(),
            tracked: self.topic_tracker(),
            departure,
        }
        .run()
    }

    /// How the sink task's static member leaves its group for good, over the wire protocol with
    /// the consumer's own security settings. When those are ones the wire client cannot speak,
    /// the task joins as a dynamic member instead, which leaves on close.
    fn departure(
        &self,
        config: &mut rdkafka::ClientConfig,
        member: kafka::StaticMember,
    ) -> Option<membership::Departure> {
        let settings: Vec<(String, String)> =
            config.config_map().into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        match crate::cluster::security::WireSecurity::from_settings(&settings) {
            Ok(security) => {
                tracing::info!(
                    task = self.task.to_string(),
                    "joins group {} as static member {}",
                    member.group,
                    member.instance
                );
                self.members.release_if_changed(&self.connector.name, self.task.task, &member);
                Some(membership::Departure {
                    connector: self.connector.name.clone(),
                    task: self.task.task,
                    run: self.members.next_run(),
                    parked: self.members.clone(),
                    coordinators: crate::cluster::coordinator::WireDiscovery {
                        bootstrap: crate::cluster::client::bootstrap_addresses(
                            config.get("bootstrap.servers").unwrap_or(&self.worker.bootstrap_servers),
                        ),
                        client_id: format!("wharf-{}-leave", self.task),
                        security,
                    },
                    member,
                })
            }
            Err(e) => {
                tracing::info!(
                    task = self.task.to_string(),
                    "joins group {} as a dynamic member, not as static member {}: leaving the group for good \
                     would need the consumer's security settings, and {e}",
                    member.group,
                    member.instance
                );
                config.remove(kafka::GROUP_INSTANCE_ID);
                None
            }
        }
    }
}

/// Why a dead-letter queue may not write `topic`, which is `why`.
fn dead_letter_refusal(topic: &str, why: &str) -> String {
    format!(
        "errors.deadletterqueue.topic.name={topic} is {why}; a dead-letter queue copies records as they came, and \
         never writes Kafka's or the worker's internal topics: choose another topic"
    )
}

#[cfg(test)]
pub(crate) mod tests;
