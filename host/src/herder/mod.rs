//! The herder turns desired state (connector configs, task configs, target states in a
//! `ConfigStore`) into running tasks on this worker, and carries out the REST API's requests.
//! Standalone and distributed workers share it; they differ in their stores.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cluster::{ClusterView, Membership, Work};
use crate::config::ConnectorConfig;
use crate::runtime::registry::COMPILE_WAIT;
use crate::storage::config::{ConfigStoreError, ConnectorEntry};
use crate::storage::{ConfigSnapshot, ConfigStore};
use crate::sync::Unpoisoned;
use crate::worker::{StartError, Worker};
use wharf_connect::model::{ConnectorKind, OffsetMap};
use wharf_connect::model::{Pairs, State, Status, TargetState};

#[derive(Debug, thiserror::Error)]
pub enum HerderError {
    #[error("Connector {0} not found")]
    NotFound(String),
    #[error("Connector {0} already exists")]
    Conflict(String),
    #[error("Task {1} of connector {0} not found")]
    TaskNotFound(String, u32),
    /// No plugin of `plugin.path` answers to the name (and version) asked for.
    #[error("{0}")]
    PluginNotFound(String),
    #[error("{0}")]
    BadConfig(String),
    #[error("{0}")]
    Store(String),
    /// Kafka did not answer, or refused: not the user's input.
    #[error("{0}")]
    Kafka(String),
    /// The plugin failed while it was asked (validate): not the user's input either.
    #[error("{0}")]
    Plugin(String),
    /// Only the leader writes; the caller retries (or the request is forwarded).
    #[error("{0}")]
    NotLeader(String),
    /// The herder's thread did not answer in time, or too much waits for it.
    #[error("{0}")]
    Busy(String),
    /// The host failed on a bug (caught): neither the user's input nor an outside failure.
    #[error("{0}")]
    Bug(String),
}

impl From<ConfigStoreError> for HerderError {
    fn from(e: ConfigStoreError) -> Self {
        match e {
            ConfigStoreError::NotLeader(why) => HerderError::NotLeader(why),
            other => HerderError::Store(other.to_string()),
        }
    }
}

impl HerderError {
    /// The error with every resolved secret in its message put back as its reference.
    fn scrubbed(self, secrets: &crate::config::providers::Secrets) -> Self {
        use HerderError::*;
        let scrub = |text: String| secrets.scrub(&text);
        match self {
            PluginNotFound(m) => PluginNotFound(scrub(m)),
            BadConfig(m) => BadConfig(scrub(m)),
            Store(m) => Store(scrub(m)),
            Kafka(m) => Kafka(scrub(m)),
            Plugin(m) => Plugin(scrub(m)),
            NotLeader(m) => NotLeader(scrub(m)),
            Busy(m) => Busy(scrub(m)),
            Bug(m) => Bug(scrub(m)),
            other => other,
        }
    }
}

/// A start's failure by its kind: the plugin's or the store's is not the user's input.
impl From<StartError> for HerderError {
    fn from(e: StartError) -> Self {
        if e.waits_for_compile() {
            return HerderError::Busy(format!(
                "{e} (waited {} s); try again once they are compiled",
                COMPILE_WAIT.as_secs()
            ));
        }
        match e {
            StartError::Plugin { .. } => HerderError::Plugin(e.to_string()),
            StartError::Store { .. } => HerderError::Store(e.to_string()),
            StartError::Bug { .. } | StartError::Conflict { .. } => HerderError::Bug(e.to_string()),
            StartError::NoPlugin { .. } | StartError::Invalid { .. } => HerderError::BadConfig(e.to_string()),
        }
    }
}

/// What `GET /health` answers (KIP-1017).
#[derive(Debug, PartialEq)]
pub enum Health {
    /// The herder's thread answers: the worker takes requests.
    Healthy,
    /// The worker has not joined its group yet; what it waits for.
    Starting(String),
    /// The herder's thread did not answer in time; why.
    Unhealthy(String),
}

/// The result of creating or replacing a connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Updated,
}

/// What `POST /connectors/{name}/restart` asks for, with Kafka Connect's query parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestartRequest {
    /// `includeTasks`: restart the tasks too.
    pub include_tasks: bool,
    /// `onlyFailed`: restart only the instances that are FAILED.
    pub only_failed: bool,
}

/// A connector's offsets as `GET /connectors/{name}/offsets` reports them.
pub enum ConnectorOffsets {
    /// Per source partition, the last stored source offset.
    Source(Vec<(OffsetMap, OffsetMap)>),
    /// Per topic partition, the next offset to read, as committed by the connector's group.
    Sink(Vec<(String, i32, i64)>),
}

/// What `PATCH` and `DELETE /connectors/{name}/offsets` ask for.
pub enum OffsetsChange {
    /// A source's partitions with their new offsets, none to forget one.
    Source(Vec<(OffsetMap, Option<OffsetMap>)>),
    /// A sink's topic partitions with the next offset to read.
    Sink(Vec<(String, i32, i64)>),
    /// Forget every offset.
    Reset,
}

/// The instances a restart covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPlan {
    pub connector: bool,
    pub tasks: Vec<u32>,
}

/// The herder: what any thread may ask (connector writes go to the store; everything that
/// starts, stops or restarts work is a `Request` to the herder's thread), and the state that
/// thread alone owns (`Owned`, in `spawn_loop`). Reconciliations, revocations and task restarts
/// therefore never overlap, by construction rather than by a lock.
pub struct Herder {
    worker: Arc<Worker>,
    store: Arc<dyn ConfigStore>,
    /// Alone, or this worker's place in its group.
    standing: Arc<dyn place::Standing>,
    /// One connector write at a time, from the existence check to the store, so that two
    /// creates of one name cannot both succeed. Plugin calls (validation) happen before it.
    writing: Mutex<()>,
    /// Requests waiting for the herder's thread, at most `MAX_QUEUED_REQUESTS`.
    requests: Mutex<std::collections::VecDeque<Request>>,
    /// Task-config generations started so far (a count for measurements and tests).
    generations: std::sync::atomic::AtomicU64,
    /// A new session key is being written, off the herder's thread.
    writing_session_key: Arc<std::sync::atomic::AtomicBool>,
}

/// What other threads ask of the herder's thread. Those that wait for the answer carry where to
/// send it.
enum Request {
    /// Generate the connector's task configs again at the next reconciliation.
    RestartConnector(String),
    RestartTask {
        name: String,
        id: u32,
        answer: Answer<Result<(), HerderError>>,
    },
    /// Stop the work the group took away (the group member waits for it before rejoining).
    Revoke {
        work: Work,
        answer: Answer<()>,
    },
    /// On the leader, before it assigns: the work the assignment covers. Not waited for: the
    /// next round takes it before it reconciles.
    AssignedWork(Work),
    /// A connector's task configs, generated off the herder's thread from `from` (its config).
    Generated {
        name: String,
        from: Pairs,
        configs: Result<Vec<Pairs>, StartError>,
    },
    /// A health check: answered as soon as the herder's thread gets to it.
    Health(Answer<()>),
    /// A plugin finished compiling: connectors that waited for one try again now.
    PluginsChanged,
    /// What became of task configs delivered off the herder's thread, to the config store or
    /// to the leader.
    Forwarded {
        name: String,
        from: Option<Pairs>,
        delivery: Delivery,
    },
}

type Answer<T> = std::sync::mpsc::SyncSender<T>;

/// The state only the herder's thread touches.
#[derive(Default)]
struct Owned {
    /// The connector config that each connector's task configs were last generated from, on
    /// the worker that runs the connector.
    generated_from: BTreeMap<String, Pairs>,
    /// On the leader: the work the last assignment covered; a config that names other work
    /// calls for a rebalance.
    assigned_work: Work,
    /// Connectors whose restart was asked for and not yet carried out by a reconciliation.
    restarts: std::collections::BTreeSet<String>,
    /// Connectors whose task configs are being generated now, or sent to the leader; at most
    /// `MAX_GENERATING` together.
    generating: std::collections::BTreeSet<String>,
    /// Connectors whose task configs are being sent to the leader now.
    forwarding: std::collections::BTreeSet<String>,
    /// Connectors whose last generation failed, with the config it failed on and when; a
    /// standalone worker runs no tasks for them, and the same config is tried again only after
    /// `RECONCILE_INTERVAL` (or a restart).
    failed: BTreeMap<String, (Pairs, std::time::Instant)>,
    /// Connectors among `failed` that wait for a plugin still compiling: tried again as soon as
    /// a compiled plugin arrives (`Request::PluginsChanged`).
    awaiting_compile: std::collections::BTreeSet<String>,
    /// Connectors this worker has reported a status for, so that a deleted one loses it even
    /// if it never ran.
    reported: std::collections::BTreeSet<String>,
}

impl Owned {
    /// Whether a connector's task configs are on their way to the leader, or `MAX_GENERATING`
    /// threads generate or send task configs already.
    fn busy_with(&self, name: &str) -> bool {
        self.forwarding.contains(name) || self.generating.len() + self.forwarding.len() >= MAX_GENERATING
    }
}

/// Connectors whose task configs are generated (the plugin's validate and task-configs calls,
/// each within `wasm.call.timeout.ms`) or delivered (written to the config store within its
/// timeouts, or sent to the leader within the peer timeout) at once, each on a thread of its
/// own; the rest wait for a later round.
const MAX_GENERATING: usize = 4;

/// Requests that may wait for the herder's thread at once; more are refused as busy.
const MAX_QUEUED_REQUESTS: usize = 1024;

/// How long a REST request waits for the herder's thread to answer (it may be in the middle of
/// a reconciliation that waits for plugin calls and task stops).
const ANSWER_DEADLINE: Duration = Duration::from_secs(60);

/// How long a health check waits for the herder's thread (Kafka Connect's 10 s).
const HEALTH_DEADLINE: Duration = Duration::from_secs(10);

/// How long the group member waits for a revocation: the tasks stop (each within its flush and
/// call timeouts) before the member rejoins, so that no task runs on two workers.
const REVOKE_DEADLINE: Duration = Duration::from_secs(600);

/// What REST answers show for a value of a PASSWORD key, as Kafka Connect does.
pub const HIDDEN: &str = "[hidden]";

/// A config in a canonical order (by key, the last value of a repeated key winning), so that
/// configs compare equal however they were written or read back.
pub fn canonical(pairs: Pairs) -> Pairs {
    let map: BTreeMap<String, String> = pairs.into_iter().collect();
    map.into_iter().collect()
}

/// Whether a task will not run again under the config as it stands: its connector is deleted or
/// stopped, or the task is past its connector's task count.
fn gone_for_good(snapshot: &ConfigSnapshot, name: &str, id: u32) -> bool {
    match snapshot.connectors.get(name) {
        None => true,
        Some(entry) => {
            entry.target == TargetState::Stopped || entry.tasks.as_ref().is_some_and(|t| id as usize >= t.len())
        }
    }
}

/// How often the herder reconciles even without a change signal (a safety net, and the retry
/// of task configs that could not reach the leader).
const RECONCILE_INTERVAL: Duration = Duration::from_secs(5);

/// Task configs on their way to the config store or to the leader.
struct Forward {
    name: String,
    /// The connector config they were generated from; none for the empty task list of a
    /// stopped connector, which a resume must generate anew.
    from: Option<Pairs>,
    tasks: Vec<Pairs>,
    /// Never `NoLeader`: a round without a leader leaves task configs to a later one.
    to: place::Destination,
}

/// What became of task configs delivered off the herder's thread.
enum Delivery {
    /// Written to the config store (by this worker or by the leader).
    Accepted,
    /// Not taken this time (no leader, a fenced writer, a leader that did not answer); a later
    /// round tries again.
    Later,
    /// The config store refused them: the connector fails.
    Failed(StartError),
}

impl Herder {
    pub fn new(worker: Arc<Worker>, store: Arc<dyn ConfigStore>, cluster: Option<Arc<ClusterView>>) -> Arc<Self> {
        Arc::new(Herder {
            worker,
            store,
            standing: match cluster {
                None => Arc::new(place::Alone) as Arc<dyn place::Standing>,
                Some(view) => view,
            },
            writing: Mutex::new(()),
            requests: Mutex::default(),
            generations: std::sync::atomic::AtomicU64::new(0),
            writing_session_key: Arc::default(),
        })
    }

    /// Hands a request to the herder's thread and wakes it.
    fn ask(&self, request: Request) -> Result<(), HerderError> {
        {
            let mut queue = self.requests.locked();
            // Answers of generations and forwards are bounded by `MAX_GENERATING` and must never
            // be lost.
            let answer = matches!(request, Request::Generated { .. } | Request::Forwarded { .. });
            if queue.len() >= MAX_QUEUED_REQUESTS && !answer {
                return Err(HerderError::Busy(format!(
                    "the herder has {MAX_QUEUED_REQUESTS} requests waiting already; try again shortly"
                )));
            }
            queue.push_back(request);
        }
        self.store.changes().notify();
        Ok(())
    }

    /// Asks and waits, up to `deadline`, for the answer.
    fn ask_and_wait<T>(
        &self,
        what: &str,
        deadline: Duration,
        request: impl FnOnce(Answer<T>) -> Request,
    ) -> Result<T, HerderError> {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        self.ask(request(answer))?;
        answered.recv_timeout(deadline).map_err(|e| match e {
            std::sync::mpsc::RecvTimeoutError::Timeout => HerderError::Busy(format!(
                "the herder did not get to {what} within {} s (it is busy starting or stopping work); try again",
                deadline.as_secs()
            )),
            std::sync::mpsc::RecvTimeoutError::Disconnected => {
                HerderError::Busy(format!("the herder stopped before it could {what}"))
            }
        })
    }

    /// The herder's thread: carries out requests, and reconciles whenever the store changes (or
    /// `RECONCILE_INTERVAL` passes), until `stop` is set. It alone owns `Owned`.
    pub fn spawn_loop(self: &Arc<Self>, stop: Arc<crate::sync::Stop>) -> std::io::Result<std::thread::JoinHandle<()>> {
        let herder = self.clone();
        std::thread::Builder::new().name("herder".into()).spawn(move || {
            let signal = herder.store.changes();
            let mut owned = Owned::default();
            let mut seen = signal.version();
            while !stop.is_stopped() {
                // A bug that panics in one round must not end the loop: the next change, or
                // the interval, tries again (locks are taken unpoisoned).
                let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let forwards = herder.carry_out_requests(&mut owned);
                    herder.apply_cluster_logger_levels();
                    herder.reconcile(&mut owned, forwards);
                }));
                if let Err(panic) = round {
                    tracing::error!(
                        "a reconciliation failed on a bug ({}); the herder carries on and tries again",
                        crate::sync::panic_message(&*panic)
                    );
                }
                seen = signal.wait_past(seen, RECONCILE_INTERVAL);
            }
        })
    }

    /// Everything asked since the last round, in order. A requester that gave up waiting finds
    /// its answer dropped.
    fn carry_out_requests(&self, owned: &mut Owned) -> Vec<Forward> {
        let mut forwards = Vec::new();
        loop {
            let Some(request) = self.requests.locked().pop_front() else { return forwards };
            match request {
                Request::RestartConnector(name) => {
                    owned.restarts.insert(name);
                }
                Request::RestartTask { name, id, answer } => {
                    let restarted = match self.worker.restart_task(&name, id) {
                        Ok(true) => Ok(()),
                        Ok(false) => Err(HerderError::TaskNotFound(name, id)),
                        Err(e) => Err(HerderError::from(e)),
                    };
                    let _ = answer.try_send(restarted);
                }
                Request::Revoke { work, answer } => {
                    self.revoke(owned, &work);
                    let _ = answer.try_send(());
                }
                Request::AssignedWork(work) => owned.assigned_work = work,
                Request::Generated { name, from, configs } => {
                    owned.generating.remove(&name);
                    self.take_generated(owned, &name, from, configs, &mut forwards);
                }
                Request::Health(answer) => {
                    let _ = answer.try_send(());
                }
                Request::PluginsChanged => {
                    for name in std::mem::take(&mut owned.awaiting_compile) {
                        owned.failed.remove(&name);
                    }
                }
                Request::Forwarded { name, from, delivery } => {
                    owned.forwarding.remove(&name);
                    match delivery {
                        Delivery::Accepted => {
                            if let Some(from) = from {
                                owned.generated_from.insert(name, from);
                            }
                        }
                        Delivery::Later => {}
                        Delivery::Failed(e) => {
                            let entry = self.store.snapshot().connectors.get(&name).cloned();
                            if let Some(entry) = entry {
                                self.fail_connector(owned, &name, &entry, &e);
                                owned.failed.insert(name, (from.unwrap_or(entry.config), std::time::Instant::now()));
                            }
                        }
                    }
                }
            }
        }
    }

    pub fn snapshot(&self) -> ConfigSnapshot {
        self.store.snapshot()
    }

    /// Whether the worker is ready, and its herder's thread answers within `HEALTH_DEADLINE`.
    /// A member of a cluster is ready once it has joined its group (the first assignment).
    pub fn health(&self) -> Health {
        let joined = self.membership().is_none_or(|m| m.generation > 0);
        if !joined {
            return Health::Starting("It has not joined its group yet (the first rebalance is under way)".into());
        }
        match self.ask_and_wait("answer a health check", HEALTH_DEADLINE, Request::Health) {
            Ok(()) => Health::Healthy,
            Err(e) => Health::Unhealthy(e.to_string()),
        }
    }

    /// Wakes the herder's thread for a round (the group assigned work, the worker stops).
    pub fn wake(&self) {
        self.store.changes().notify();
    }

    /// A plugin finished compiling: connectors waiting for one try again at once (at worst, when
    /// the request queue is full, after `RECONCILE_INTERVAL`).
    pub fn plugins_changed(&self) {
        let _ = self.ask(Request::PluginsChanged);
    }

    /// What other workers and statuses know this worker by.
    pub fn worker_id(&self) -> &str {
        self.worker.id()
    }

    pub fn worker_config(&self) -> &crate::config::WorkerConfig {
        self.worker.config()
    }

    /// The keys of a config whose values are secrets (PASSWORD keys of its plugin).
    pub fn secret_keys(&self, config: &[(String, String)]) -> Vec<String> {
        self.worker.secret_keys(config)
    }

    /// A connector's status as the status store has it, its kind filled in from the plugin
    /// when the status does not say (statuses other workers wrote).
    /// The topics a connector's tasks have used (topic tracking), sorted.
    pub fn connector_topics(&self, name: &str) -> Vec<String> {
        self.worker.statuses().topics(name)
    }

    /// Forgets the topics a connector's tasks have used; they are recorded again as they are used.
    pub fn reset_connector_topics(&self, name: &str) {
        self.worker.statuses().reset_topics(name);
        tracing::info!("the topics connector {name} used were reset");
    }

    pub fn connector_status(&self, name: &str) -> Option<wharf_connect::model::ConnectorStatus> {
        let kind = self.store.snapshot().connectors.get(name).and_then(|entry| self.kind_of(entry));
        self.worker.statuses().get(name).map(|mut status| {
            status.kind = status.kind.or(kind);
            status
        })
    }

    /// The plugins this worker has loaded, every version.
    pub fn plugins(&self) -> Vec<Arc<crate::runtime::Plugin>> {
        self.worker.registry().plugins()
    }

    /// The converters, transforms and predicates built into the worker, by Kafka Connect's
    /// class names, with their kind.
    pub fn built_in_plugins(&self) -> Vec<(String, &'static str)> {
        crate::config::built_in_plugins()
    }

    /// Files of `plugin.path` that failed to load, with why.
    pub fn plugin_problems(&self) -> Vec<(std::path::PathBuf, String)> {
        self.worker.registry().problems()
    }

    /// The newest plugin of that name (or Kafka Connect class name) whose version meets `version`.
    pub fn find_plugin(
        &self,
        name: &str,
        version: Option<&semver::VersionReq>,
    ) -> Result<Arc<crate::runtime::Plugin>, crate::runtime::registry::FindError> {
        self.worker.registry().find(name, version)
    }

    /// The validate answer for a config of the plugin `requested` (its name, or a Kafka Connect
    /// class name it stands for): the plugin validated with, and every key with its problems,
    /// found by the same check a create makes (`Worker::validation`). Blocking: grants read the
    /// file system and the plugin's `validate` runs.
    pub fn validate_connector(
        &self,
        requested: &str,
        mut config: Pairs,
    ) -> Result<(Arc<crate::runtime::Plugin>, Vec<wharf_connect::model::KeyReport>), HerderError> {
        let registry = self.worker.registry();
        // A plugin still compiling is waited for (up to `COMPILE_WAIT`) before names are compared.
        let _ = registry.find_waiting(requested, None, COMPILE_WAIT);
        match wharf_connect::model::last_value(&config, "connector.class").map(String::from) {
            None => config.push(("connector.class".into(), requested.to_string())),
            // A short name, a Kafka Connect class name and the plugin's own name are one plugin.
            Some(class) if class != requested => {
                let plugin_name = |given: &str| registry.find(given, None).ok().map(|p| p.info.name.clone());
                let named = plugin_name(&class);
                if named.is_none() || named != plugin_name(requested) {
                    return Err(HerderError::BadConfig(format!(
                        "Included connector type {class} does not match request type {requested}: connector.class in \
                         the body names another plugin than the URL"
                    )));
                }
            }
            Some(_) => {}
        }
        let version = wharf_connect::model::requested_version(&config)
            .map(wharf_connect::model::parse_version_requirement)
            .transpose()
            .map_err(HerderError::BadConfig)?;
        let plugin = registry
            .find_waiting(requested, version.as_ref(), COMPILE_WAIT)
            .map_err(|e| HerderError::PluginNotFound(e.to_string()))?;
        if plugin.info.kind.connector().is_none() {
            return Err(HerderError::BadConfig(format!(
                "{requested} is a transform plugin: validate the config of a connector that uses it \
                 (transforms.<alias>.type={requested}) with PUT /connector-plugins/<the connector's plugin>/config/validate"
            )));
        }
        let reports = self.worker.validation(&plugin, config)?;
        Ok((plugin, reports))
    }

    /// The group's view now; none for a standalone worker.
    pub fn membership(&self) -> Option<Membership> {
        self.standing.membership()
    }

    /// Where this worker stands now: alone, or as its group last assigned it.
    fn place(&self) -> Box<dyn place::Place> {
        self.standing.place()
    }

    /// A stored connector config, read as the host reads it.
    fn parse(&self, name: &str, config: &Pairs) -> Result<ConnectorConfig, StartError> {
        ConnectorConfig::resolving(
            config.clone(),
            &format!("of {name}"),
            &self.worker.config().wasm,
            &self.worker.config().config_providers,
        )
        .map_err(|e| StartError::Invalid { name: name.to_string(), problems: e.to_string() })
    }

    /// Checks a config the way a start would: host keys, then the plugin's definition and its
    /// own validation. A plugin still compiling is waited for (up to `COMPILE_WAIT`), or, with
    /// `Compiling::Accept`, the config is taken as it is and checked when the plugin is there.
    fn check(&self, name: &str, config: &Pairs, compiling: Compiling) -> Result<ConnectorConfig, HerderError> {
        let parsed = ConnectorConfig::resolving(
            config.clone(),
            &format!("of {name}"),
            &self.worker.config().wasm,
            &self.worker.config().config_providers,
        )
        .map_err(|e| HerderError::BadConfig(e.to_string()))?;
        if compiling == Compiling::Wait {
            let registry = self.worker.registry();
            let _ = registry.find_waiting(&parsed.class, parsed.version.as_ref(), COMPILE_WAIT);
            for (_, step) in parsed.transforms.plugin_steps() {
                let _ = registry.find_waiting(&step.name, step.version.as_ref(), COMPILE_WAIT);
            }
        }
        match self.worker.validate(&parsed, crate::worker::validation::Types::Checked) {
            Err(e) if compiling == Compiling::Accept && e.waits_for_compile() => {
                tracing::info!("{e}; its config is taken now and checked when the plugin is compiled");
                Ok(parsed)
            }
            // Whatever a failed check says may quote a resolved value: the references go back.
            Err(e) => Err(HerderError::from(e).scrubbed(&parsed.secrets)),
            Ok(_) => Ok(parsed),
        }
    }

    /// Creates a connector, or replaces its config when `replace` is set.
    pub fn put_connector(&self, name: &str, config: Pairs, replace: bool) -> Result<Written, HerderError> {
        self.write_connector(name, config, replace, None, Compiling::Wait)
    }

    /// A connector given at start (a standalone worker's connector files): its plugin may still
    /// be compiling, and the worker does not wait for it before it serves.
    pub fn put_connector_at_start(&self, name: &str, config: Pairs) -> Result<Written, HerderError> {
        self.write_connector(name, config, false, None, Compiling::Accept)
    }

    /// Creates a connector in the state asked for (`initial_state`); RUNNING when none is.
    pub fn create_connector(&self, name: &str, config: Pairs, initial: Option<TargetState>) -> Result<(), HerderError> {
        self.write_connector(name, config, false, initial, Compiling::Wait).map(|_| ())
    }

    /// Changes some keys of a connector's config (KIP-477): `Some` sets a key, `None` removes
    /// it; the result is checked as a new config is.
    pub fn patch_connector(&self, name: &str, patch: Vec<(String, Option<String>)>) -> Result<(), HerderError> {
        let mut config: BTreeMap<String, String> = self.require(name)?.config.into_iter().collect();
        for (key, value) in patch {
            match value {
                Some(value) => config.insert(key, value),
                None => config.remove(&key),
            };
        }
        self.write_connector(name, config.into_iter().collect(), true, None, Compiling::Wait).map(|_| ())
    }

    fn write_connector(
        &self,
        name: &str,
        mut config: Pairs,
        replace: bool,
        initial: Option<TargetState>,
        compiling: Compiling,
    ) -> Result<Written, HerderError> {
        // The last `name` counts, as everywhere a config is read.
        match wharf_connect::model::last_value(&config, "name") {
            Some(given) if given != name => {
                return Err(HerderError::BadConfig(format!(
                    "Connector name configuration ({given}) doesn't match connector name in the URL ({name})"
                )))
            }
            Some(_) => {}
            None => config.push(("name".into(), name.into())),
        }
        let snapshot = self.store.snapshot();
        let stored = snapshot.connectors.get(name);
        // A config read over REST shows secrets as "[hidden]"; sent back so, they keep their value.
        if let Some(stored) = stored {
            let secrets = self.worker.secret_keys(&config);
            for (key, value) in config.iter_mut() {
                if value == HIDDEN && secrets.contains(key) {
                    if let Some(kept) = wharf_connect::model::last_value(&stored.config, key) {
                        *value = kept.to_string();
                    }
                }
            }
        }
        let config = canonical(config);
        if stored.is_some() && !replace {
            return Err(HerderError::Conflict(name.to_string()));
        }
        self.check(name, &config, compiling)?;
        let written = self.writing.locked();
        let exists = self.store.snapshot().connectors.contains_key(name);
        if exists && !replace {
            return Err(HerderError::Conflict(name.to_string()));
        }
        self.store.put_connector(name, &config, initial).map_err(|e| self.store_failed(e))?;
        drop(written);
        // The herder's loop wakes on the store's change and starts the work: the request does
        // not wait for plugin calls (task configs) under the reconciliation lock.
        Ok(if exists { Written::Updated } else { Written::Created })
    }

    pub fn delete_connector(&self, name: &str) -> Result<(), HerderError> {
        self.require(name)?;
        self.store.remove_connector(name).map_err(|e| self.store_failed(e))?;
        Ok(())
    }

    pub fn set_target_state(&self, name: &str, state: TargetState) -> Result<(), HerderError> {
        self.require(name)?;
        self.store.put_target_state(name, state).map_err(|e| self.store_failed(e))?;
        Ok(())
    }

    /// Sets a log level on every worker of the cluster: written to the config store, and applied
    /// by each worker's herder (this one's too) when it reads it back.
    pub fn set_cluster_logger_level(&self, namespace: &str, level: &str) -> Result<(), HerderError> {
        self.store.put_logger_level(namespace, level)?;
        tracing::info!("log level of {namespace} set to {level} for the whole cluster");
        Ok(())
    }

    /// Applies the cluster-wide log levels read since the last round.
    fn apply_cluster_logger_levels(&self) {
        for (namespace, level) in self.store.take_logger_levels() {
            let Some(loggers) = crate::logging::global() else { continue };
            if let Err(e) = loggers.set(&namespace, &level, wharf_connect::model::now_ms()) {
                tracing::warn!("the cluster-wide log level {level} of {namespace} was not applied: {e}");
            }
        }
    }

    /// Writes task configs that the worker running a connector generated (the leader's part).
    pub fn put_task_configs(&self, name: &str, tasks: Vec<Pairs>) -> Result<(), HerderError> {
        let entry = self.require(name)?;
        let tasks_max = self.parse(name, &entry.config).map_err(|e| HerderError::BadConfig(e.to_string()))?.tasks_max;
        if tasks.len() > tasks_max as usize {
            return Err(HerderError::BadConfig(format!(
                "connector {name} has tasks.max={tasks_max}, but {} task configs were sent for it",
                tasks.len()
            )));
        }
        let tasks: Vec<Pairs> = tasks.into_iter().map(canonical).collect();
        if entry.tasks.as_ref() != Some(&tasks) {
            self.store.put_task_configs(name, &tasks).map_err(|e| self.store_failed(e))?;
        }
        // The herder loop picks the change up; reconciling here could wait on a reconcile that
        // is itself sending task configs to this worker.
        self.store.changes().notify();
        Ok(())
    }

    /// Whether a connector is a source or a sink, which its plugin says.
    pub fn connector_kind(&self, name: &str) -> Result<ConnectorKind, HerderError> {
        let entry = self.require(name)?;
        self.kind_of(&entry).ok_or_else(|| {
            HerderError::BadConfig(format!(
                "the plugin of connector {name} is not loaded on this worker, so whether it is a source or a sink \
                 (and where its offsets are) is unknown"
            ))
        })
    }

    /// A connector's offsets: a source's from the offset store, a sink's from its consumer group.
    pub fn connector_offsets(&self, name: &str) -> Result<ConnectorOffsets, HerderError> {
        match self.connector_kind(name)? {
            ConnectorKind::Source => Ok(ConnectorOffsets::Source(self.worker.source_offsets(name))),
            ConnectorKind::Sink => {
                let entry = self.require(name)?;
                let config = self.parse(name, &entry.config).map_err(|e| HerderError::BadConfig(e.to_string()))?;
                crate::kafka::committed_offsets(
                    self.worker.config(),
                    name,
                    &config.topics,
                    config.topics_regex.as_ref(),
                )
                .map(ConnectorOffsets::Sink)
                .map_err(|e| HerderError::Kafka(format!("{e:#}")))
            }
        }
    }

    /// Alters or resets a stopped connector's offsets; returns what to tell the user.
    pub fn change_offsets(&self, name: &str, change: OffsetsChange) -> Result<String, HerderError> {
        let entry = self.require(name)?;
        if entry.target != TargetState::Stopped {
            return Err(HerderError::BadConfig(format!(
                "Connectors must be in the STOPPED state before their offsets can be changed: stop {name} with \
                 PUT /connectors/{name}/stop first"
            )));
        }
        if entry.tasks.as_ref().is_some_and(|t| !t.is_empty()) {
            return Err(HerderError::BadConfig(format!(
                "connector {name} is stopping but its tasks are not all stopped yet; retry in a moment"
            )));
        }
        let store_error = |e: crate::storage::offsets::OffsetStoreError| HerderError::Store(e.to_string());
        let kafka_error = |e: anyhow::Error| HerderError::Kafka(format!("{e:#}"));
        let elsewhere = "A plugin that keeps offsets elsewhere as well must have those changed there";
        match (self.connector_kind(name)?, change) {
            (ConnectorKind::Source, OffsetsChange::Reset) => {
                let forget: Vec<_> = self.worker.source_offsets(name).into_iter().map(|(p, _)| (p, None)).collect();
                self.worker.change_source_offsets(name, &forget).map_err(store_error)?;
                Ok(format!("The offsets Wharf keeps for connector {name} were reset. {elsewhere}"))
            }
            (ConnectorKind::Source, OffsetsChange::Source(changes)) => {
                self.worker.change_source_offsets(name, &changes).map_err(store_error)?;
                Ok(format!("The offsets Wharf keeps for connector {name} were altered. {elsewhere}"))
            }
            (ConnectorKind::Sink, OffsetsChange::Reset) => {
                let admin = crate::kafka::admin::admin_client(&crate::kafka::client_config(
                    self.worker.config(),
                    &self.worker.config().admin_overrides,
                    &[],
                ))
                .map_err(kafka_error)?;
                // Called from a blocking task of the REST server's runtime.
                tokio::runtime::Handle::current()
                    .block_on(crate::kafka::admin::delete_group(&admin, &format!("connect-{name}")))
                    .map_err(kafka_error)?;
                Ok(format!("The offsets of connector {name} were reset (its consumer group connect-{name} is deleted)"))
            }
            (ConnectorKind::Sink, OffsetsChange::Sink(offsets)) => {
                crate::kafka::commit_group_offsets(self.worker.config(), name, &offsets).map_err(kafka_error)?;
                Ok(format!("The offsets of connector {name} were altered"))
            }
            (kind, _) => Err(HerderError::BadConfig(format!(
                "connector {name} is a {} connector; the offsets given are shaped for the other kind",
                kind.name()
            ))),
        }
    }

    /// The instances of a connector that `POST /connectors/{name}/restart` covers, from their
    /// statuses now (Kafka Connect's `includeTasks` and `onlyFailed`).
    pub fn restart_plan(&self, name: &str, request: RestartRequest) -> Result<RestartPlan, HerderError> {
        let entry = self.require(name)?;
        let status = self.worker.statuses().get(name);
        let failed = |s: Option<&Status>| s.is_some_and(|s| s.state == State::Failed);
        let connector = !request.only_failed || failed(status.as_ref().map(|s| &s.connector));
        let task_count = entry.tasks.as_ref().map_or(0, Vec::len) as u32;
        let tasks = if request.include_tasks {
            (0..task_count)
                .filter(|id| !request.only_failed || failed(status.as_ref().and_then(|s| s.tasks.get(id))))
                .collect()
        } else {
            Vec::new()
        };
        Ok(RestartPlan { connector, tasks })
    }

    /// Restarts the connector itself, as Kafka Connect restarts a `Connector` instance: its task
    /// configs are generated again from its config (tasks whose configs stay the same keep
    /// running). Its tasks restart with `restart_task`.
    pub fn restart_connector(&self, name: &str) -> Result<(), HerderError> {
        self.require(name)?;
        // The next reconciliation generates its task configs again; the herder's thread does
        // that, so the request waits for no plugin call.
        self.ask(Request::RestartConnector(name.to_string()))
    }

    pub fn restart_task(&self, name: &str, id: u32) -> Result<(), HerderError> {
        self.require(name)?;
        // On the herder's thread: never while a reconciliation or a revocation stops or starts
        // tasks.
        let name = name.to_string();
        self.ask_and_wait("restart the task", ANSWER_DEADLINE, |answer| Request::RestartTask { name, id, answer })?
    }

    /// A config topic write failed. A leader whose writer was fenced is no longer the leader,
    /// whatever its view says: rejoin so that the group sorts it out.
    fn store_failed(&self, e: ConfigStoreError) -> HerderError {
        if let ConfigStoreError::NotLeader(why) = &e {
            if self.place().leads() {
                self.standing.request_rejoin(format!("the config topic refused a write of the leader ({why})"));
            }
        }
        HerderError::from(e)
    }

    fn require(&self, name: &str) -> Result<ConnectorEntry, HerderError> {
        self.store.snapshot().connectors.get(name).cloned().ok_or_else(|| HerderError::NotFound(name.to_string()))
    }

    /// Records that a connector failed, with why; one whose plugin is still compiling is
    /// UNASSIGNED until it is, and says so.
    fn fail_connector(&self, owned: &mut Owned, name: &str, entry: &ConnectorEntry, e: &StartError) {
        let plugin = self.worker.plugin_of(&entry.config);
        if e.waits_for_compile() {
            tracing::info!("{e}; the connector waits");
            owned.awaiting_compile.insert(name.to_string());
            self.worker.put_status(name, plugin.as_deref(), State::Unassigned, Some(e.to_string()));
            return;
        }
        tracing::error!("connector {name} failed: {e}");
        self.worker.put_status(name, plugin.as_deref(), State::Failed, Some(e.to_string()));
    }

    /// The kind of a connector's plugin, when the plugin is loaded.
    pub fn kind_of(&self, entry: &ConnectorEntry) -> Option<ConnectorKind> {
        let class = wharf_connect::model::last_value(&entry.config, "connector.class")?;
        self.worker.kind_of(class)
    }

    /// Stops work the group took away from this worker, on the herder's thread; returns once it
    /// is stopped. Tasks of connectors that still exist are left UNASSIGNED until their new owner
    /// starts them.
    pub fn revoke_and_wait(&self, work: &Work) {
        let work = work.clone();
        if let Err(e) =
            self.ask_and_wait("stop the revoked work", REVOKE_DEADLINE, |answer| Request::Revoke { work, answer })
        {
            tracing::error!("revoking work from this worker: {e}");
        }
    }

    fn revoke(&self, owned: &mut Owned, work: &Work) {
        let mut by_connector: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for task in &work.tasks {
            by_connector.entry(task.connector.as_str()).or_default().push(task.task);
        }
        let snapshot = self.store.snapshot();
        for (name, ids) in by_connector {
            self.worker.hand_over_tasks(name, &ids);
            if let Some(entry) = snapshot.connectors.get(name) {
                let plugin = self.worker.plugin_of(&entry.config);
                for id in ids {
                    self.worker.put_task_status(name, id, plugin.as_deref(), State::Unassigned);
                }
            }
        }
        for name in &work.connectors {
            owned.generated_from.remove(name);
        }
    }

    /// Called on the leader before it assigns: remembers the work the assignment covers.
    pub fn set_assigned_work(&self, work: Work) {
        if let Err(e) = self.ask(Request::AssignedWork(work)) {
            tracing::error!("noting the work the leader assigns: {e}");
        }
    }

    /// Brings the running tasks in line with the desired state and this worker's assignment,
    /// then sends the task configs that go to the leader (`forwards`, with those of this round).
    fn reconcile(self: &Arc<Self>, owned: &mut Owned, forwards: Vec<Forward>) {
        // Those taken from generations first: their connectors are then on their way (and their
        // generations' slots, freed by the answers, go to them), so this round does not
        // generate them again.
        for forward in forwards {
            self.forward_task_configs(owned, forward);
        }
        for forward in self.reconcile_work(owned) {
            self.forward_task_configs(owned, forward);
        }
    }

    /// Starts generating a connector's task configs off the herder's thread, unless that is
    /// under way already or `MAX_GENERATING` generations are; the answer comes back as a
    /// `Generated` request.
    fn generate(self: &Arc<Self>, owned: &mut Owned, name: &str, config: ConnectorConfig, from: &Pairs) {
        if owned.busy_with(name) || owned.generating.contains(name) {
            return;
        }
        let (herder, label, from) = (self.clone(), name.to_string(), from.clone());
        let spawned = std::thread::Builder::new().name(format!("generate-{name}")).spawn(move || {
            let generated =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| herder.worker.task_configs(&config)));
            let configs = generated
                .unwrap_or_else(|panic| {
                    Err(StartError::Bug {
                        name: label.clone(),
                        message: format!(
                            "generating task configs failed on a bug ({})",
                            crate::sync::panic_message(&*panic)
                        ),
                    })
                })
                .map(|configs| configs.into_iter().map(canonical).collect());
            let _ = herder.ask(Request::Generated { name: label, from, configs });
        });
        match spawned {
            Ok(_) => {
                owned.generating.insert(name.to_string());
                self.generations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => tracing::error!(
                "connector {name}: cannot start a thread to generate its task configs ({e}); trying again shortly"
            ),
        }
    }

    /// Takes task configs generated for a connector: written (or sent to the leader) if the
    /// connector still has the config they came from and still runs here.
    fn take_generated(
        &self,
        owned: &mut Owned,
        name: &str,
        from: Pairs,
        configs: Result<Vec<Pairs>, StartError>,
        forwards: &mut Vec<Forward>,
    ) {
        let snapshot = self.store.snapshot();
        let Some(entry) = snapshot.connectors.get(name) else { return };
        let place = self.place();
        let owned_here = place.owns_connector(name);
        if entry.config != from || !owned_here || entry.target == TargetState::Stopped {
            // Changed, moved or stopped meanwhile: the next round sees to it.
            return;
        }
        let taken = configs.map(|fresh| {
            if entry.tasks.as_ref() == Some(&fresh) {
                owned.generated_from.insert(name.to_string(), from.clone());
                return;
            }
            match place.task_configs_go() {
                place::Destination::NoLeader => {
                    tracing::info!("connector {name}: task configs wait for a leader ({NO_LEADER})")
                }
                to => forwards.push(Forward { name: name.to_string(), from: Some(from.clone()), tasks: fresh, to }),
            }
        });
        match taken {
            Ok(()) => {
                owned.failed.remove(name);
            }
            Err(e) => {
                self.fail_connector(owned, name, entry, &e);
                owned.failed.insert(name.to_string(), (from, std::time::Instant::now()));
            }
        }
    }

    /// The leader makes a session key when there is none, or the last one is older than
    /// `inter.worker.key.ttl.ms`, and distributes it through the config topic.
    fn renew_session_key(self: &Arc<Self>, snapshot: &ConfigSnapshot) {
        let Some(d) = &self.worker.config().distributed else { return };
        let writing = &self.writing_session_key;
        if writing.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let ttl_ms = i64::try_from(d.key_ttl.as_millis()).unwrap_or(i64::MAX);
        let current = snapshot.session_key.as_ref().filter(|k| k.algorithm == d.key_algorithm);
        if current.is_some_and(|k| now_ms.saturating_sub(k.created_ms) < ttl_ms) {
            return;
        }
        let key = match crate::peer::new_session_key(&d.key_algorithm, now_ms) {
            Ok(key) => key,
            Err(e) => {
                tracing::error!("cannot make a session key for the workers' requests: {e}");
                return;
            }
        };
        // Written on a thread of its own: a config-topic write is a Kafka round trip, which never
        // holds up the herder's thread; the next round after it sees the key in the snapshot.
        writing.store(true, std::sync::atomic::Ordering::Release);
        let herder = self.clone();
        let spawned = std::thread::Builder::new().name("session-key".into()).spawn(move || {
            match herder.store.put_session_key(&key) {
                Ok(()) => tracing::info!(
                    "distributed a new {} session key; workers sign their requests to each other with it",
                    key.algorithm
                ),
                Err(e) => tracing::warn!("cannot distribute a new session key: {e}; trying again shortly"),
            }
            herder.writing_session_key.store(false, std::sync::atomic::Ordering::Release);
            herder.wake();
        });
        if let Err(e) = spawned {
            writing.store(false, std::sync::atomic::Ordering::Release);
            tracing::error!("cannot start a thread to distribute a new session key ({e}); trying again shortly");
        }
    }

    /// Delivers task configs this worker generated, on a thread of its own: into the config
    /// store (a transactional write read back from the config topic, which Kafka may be slow to
    /// answer) or to the leader, which writes them (it may be slow to answer, or gone). What
    /// became of them comes back as a `Forwarded` request. Left to a later round when the
    /// connector's configs are on their way already or `MAX_GENERATING` threads are busy.
    fn forward_task_configs(self: &Arc<Self>, owned: &mut Owned, forward: Forward) {
        if owned.busy_with(&forward.name) {
            return;
        }
        let Forward { name, from, tasks, to } = forward;
        let herder = self.clone();
        let label = name.clone();
        // The leader's writer may have been fenced by a newer leader's: then the configs wait.
        let as_leader = matches!(to, place::Destination::StoreAsLeader);
        let deliver: Box<dyn FnOnce() -> Delivery + Send> = match to {
            place::Destination::NoLeader => return,
            place::Destination::Store | place::Destination::StoreAsLeader => {
                Box::new(move || match herder.store.put_task_configs(&name, &tasks) {
                    Ok(()) => Delivery::Accepted,
                    Err(e @ ConfigStoreError::NotLeader(_)) if as_leader => {
                        tracing::info!("connector {name}: task configs wait for a leader ({})", herder.store_failed(e));
                        Delivery::Later
                    }
                    Err(e) => Delivery::Failed(StartError::Store { name: name.clone(), message: e.to_string() }),
                })
            }
            place::Destination::Leader(leader_url) => {
                let segment = crate::peer::path_segment(&name);
                let path = format!("/connectors/{segment}/tasks");
                let url = format!("{leader_url}{path}");
                let body = match crate::peer::task_configs_body(&tasks) {
                    Ok(body) => body,
                    Err(e) => {
                        tracing::error!("connector {name}: cannot write its task configs as JSON ({e})");
                        return;
                    }
                };
                let config = self.worker.config();
                if let Some(d) = &config.distributed {
                    let rules = crate::peer::ForwardRules::new(
                        config.rest_scheme(),
                        &config.advertised,
                        &d.forward_allowed_urls,
                    );
                    if let Err(e) = rules.check(&leader_url) {
                        tracing::error!("connector {name}: its task configs are not sent to the leader: {e}");
                        return;
                    }
                }
                // Signed with the cluster's session key over the method, path, time and body,
                // which the leader checks.
                let headers = match (self.store.snapshot().session_key, &config.distributed) {
                    (Some(key), Some(d)) => {
                        crate::peer::sign_request(&key, &d.signature_algorithm, "POST", &path, &body)
                            .unwrap_or_default()
                    }
                    _ => Vec::new(),
                };
                Box::new(move || match crate::peer::send("POST", &url, Some(body), herder.worker.id(), &headers) {
                    Ok((status, _)) if (200..300).contains(&status) => Delivery::Accepted,
                    Ok((status, body)) => {
                        tracing::info!(
                            "connector {name}: the leader at {leader_url} answered {status} to its task configs \
                             ({}); trying again shortly",
                            String::from_utf8_lossy(&body)
                        );
                        Delivery::Later
                    }
                    Err(e) => {
                        tracing::info!("connector {name}: task configs wait for the leader ({e})");
                        Delivery::Later
                    }
                })
            }
        };
        let (herder, name) = (self.clone(), label.clone());
        let spawned = std::thread::Builder::new().name(format!("deliver-{label}")).spawn(move || {
            let delivery = deliver();
            if let Err(e) = herder.ask(Request::Forwarded { name: name.clone(), from, delivery }) {
                tracing::warn!("connector {name}: the herder did not take what became of its task configs ({e})");
            }
        });
        match spawned {
            Ok(_) => {
                owned.forwarding.insert(label);
            }
            Err(e) => tracing::error!(
                "connector {label}: cannot start a thread to deliver its task configs ({e}); trying again shortly"
            ),
        }
    }

    fn reconcile_work(self: &Arc<Self>, owned: &mut Owned) -> Vec<Forward> {
        let mut forwards = Vec::new();
        let place = self.place();
        if let Some(generation) = place.generation() {
            self.worker.set_generation(generation);
        }

        // Connectors: their statuses, and fresh task configs when their config changed.
        let snapshot = self.store.snapshot();
        if place.leads() {
            self.renew_session_key(&snapshot);
        }
        owned.failed.retain(|name, _| snapshot.connectors.contains_key(name));
        let mut failed: Vec<String> = owned.failed.keys().cloned().collect();
        for (name, entry) in &snapshot.connectors {
            if !place.owns_connector(name) {
                continue;
            }
            owned.reported.insert(name.clone());
            if let Err(e) = self.reconcile_connector(owned, name, entry, place.as_ref(), &mut forwards) {
                self.fail_connector(owned, name, entry, &e);
                failed.push(name.clone());
            }
        }
        match place.owned_connectors() {
            None => {
                for name in self.worker.running_names() {
                    if !snapshot.connectors.contains_key(&name) {
                        self.worker.stop_connector(&name);
                        self.worker.statuses().remove(&name);
                        owned.reported.remove(&name);
                        tracing::info!("connector {name} deleted");
                    }
                }
                // Those that never ran (their plugin failed, say).
                let gone: Vec<String> =
                    owned.reported.iter().filter(|name| !snapshot.connectors.contains_key(*name)).cloned().collect();
                for name in gone {
                    self.worker.statuses().remove(&name);
                    owned.reported.remove(&name);
                    tracing::info!("connector {name} deleted");
                }
            }
            Some(connectors) => {
                for name in &connectors {
                    if !snapshot.connectors.contains_key(name) && self.worker.statuses().get(name).is_some() {
                        self.worker.statuses().remove(name);
                        tracing::info!("connector {name} deleted");
                    }
                }
                owned.reported.retain(|name| snapshot.connectors.contains_key(name));
            }
        }

        // Tasks: the config may have changed above.
        let snapshot = self.store.snapshot();
        let mut wanted: BTreeMap<&str, (&ConnectorEntry, BTreeMap<u32, Pairs>)> = BTreeMap::new();
        for (name, entry) in &snapshot.connectors {
            // A standalone worker runs no tasks for a connector that failed.
            if !place.runs_tasks_of_failed_connectors() && failed.contains(name) {
                continue;
            }
            let tasks: BTreeMap<u32, Pairs> = entry
                .tasks
                .iter()
                .flatten()
                .enumerate()
                .map(|(id, config)| (id as u32, config.clone()))
                .filter(|(id, _)| place.owns_task(name, *id))
                .collect();
            wanted.insert(name, (entry, tasks));
        }
        for name in self.worker.running_names() {
            let Some((config, running)) = self.worker.running(&name) else { continue };
            let want = wanted.get(name.as_str()).filter(|(entry, _)| entry.target == TargetState::Started);
            let stale: Vec<u32> = running
                .iter()
                .filter(|(id, task_config)| match want {
                    None => true,
                    Some((entry, tasks)) => entry.config != config || tasks.get(id) != Some(task_config),
                })
                .map(|(id, _)| *id)
                .collect();
            self.worker.stop_tasks(&name, &stale);
            if !snapshot.connectors.contains_key(&name) {
                for id in stale {
                    self.worker.statuses().remove_task(&name, id);
                }
            }
        }
        for (name, (entry, tasks)) in wanted {
            match entry.target {
                TargetState::Stopped => {}
                TargetState::Paused => {
                    let plugin = self.worker.plugin_of(&entry.config);
                    for id in tasks.keys() {
                        self.worker.put_task_status(name, *id, plugin.as_deref(), State::Paused);
                    }
                }
                // Tasks whose configs are being generated again wait for them (those running
                // with unchanged configs go on).
                TargetState::Started if owned.generating.contains(name) => {}
                TargetState::Started => {
                    let running = self.worker.running(name).map(|(_, r)| r).unwrap_or_default();
                    let missing: Vec<(u32, Pairs)> =
                        tasks.into_iter().filter(|(id, _)| !running.contains_key(id)).collect();
                    if missing.is_empty() {
                        continue;
                    }
                    let ids: Vec<u32> = missing.iter().map(|(id, _)| *id).collect();
                    let started =
                        self.parse(name, &entry.config).and_then(|parsed| self.worker.start_tasks(parsed, missing));
                    if let Err(e) = started {
                        // Tried again at every reconciliation; one that waits for its plugin's
                        // compilation says so, UNASSIGNED.
                        let state = if e.waits_for_compile() {
                            tracing::info!("{e}; its task(s) wait");
                            State::Unassigned
                        } else {
                            tracing::error!("cannot start task(s) of connector {name}: {e}");
                            State::Failed
                        };
                        for id in ids {
                            let status = self.worker.status_of(state, Some(e.to_string()));
                            self.worker.statuses().put_task(name, id, status);
                        }
                    }
                }
            }
        }

        // Sink tasks that stopped here (this round's revocations included: they run first) and
        // will not run again give their place in their consumer group up.
        self.worker.release_members(|name, id| gone_for_good(&snapshot, name, id));

        // The leader rebalances when the config names other work than it assigned.
        if place.leads() {
            let work = Work::of(&snapshot);
            let assigned = &mut owned.assigned_work;
            if *assigned != work {
                let added = work.minus(assigned);
                let removed = assigned.minus(&work);
                *assigned = work;
                self.standing.request_rejoin(format!(
                    "the config changed (new: {}; gone: {})",
                    added.describe(),
                    removed.describe()
                ));
            }
        }
        forwards
    }

    /// The part of reconciling that falls to the worker running a connector: its status, and
    /// its task configs.
    fn reconcile_connector(
        self: &Arc<Self>,
        owned: &mut Owned,
        name: &str,
        entry: &ConnectorEntry,
        place: &dyn place::Place,
        forwards: &mut Vec<Forward>,
    ) -> Result<(), StartError> {
        let plugin = self.worker.plugin_of(&entry.config);
        if entry.target == TargetState::Stopped {
            if entry.tasks.as_ref().is_some_and(|t| !t.is_empty()) {
                match place.task_configs_go() {
                    place::Destination::NoLeader => {
                        tracing::info!("connector {name}: the empty task list waits for a leader ({NO_LEADER})")
                    }
                    to => forwards.push(Forward { name: name.to_string(), from: None, tasks: Vec::new(), to }),
                }
                // STOPPED is reported in a later round, once the empty task list is in the config
                // topic, as Kafka Connect reports it: an offsets change asked for once the
                // connector is STOPPED finds no task configs left.
                owned.generated_from.remove(name);
                return Ok(());
            }
            self.worker.statuses().remove_tasks(name);
            self.worker.put_status(name, plugin.as_deref(), State::Stopped, None);
            // Resumed, the connector generates its task configs again (they were emptied here).
            owned.generated_from.remove(name);
            return Ok(());
        }

        // A restart asked for since: generate again (taken here, so a restart asked for while
        // this runs is seen by the next reconciliation).
        if owned.restarts.remove(name) {
            owned.generated_from.remove(name);
            owned.failed.remove(name);
        }
        let failed_lately = owned
            .failed
            .get(name)
            .is_some_and(|(config, when)| *config == entry.config && when.elapsed() < RECONCILE_INTERVAL);
        if failed_lately {
            return Ok(());
        }
        let generated_from = owned.generated_from.get(name).cloned();
        if generated_from.as_ref() != Some(&entry.config) || entry.tasks.is_none() {
            // The plugin's calls run elsewhere; their answer comes back as a request.
            let parsed = self.parse(name, &entry.config)?;
            self.generate(owned, name, parsed, &entry.config);
            return Ok(());
        }
        // Statuses of tasks the connector no longer has.
        if let (Some(tasks), Some(status)) = (&entry.tasks, self.worker.statuses().get(name)) {
            for id in status.tasks.keys().filter(|id| **id as usize >= tasks.len()) {
                self.worker.statuses().remove_task(name, *id);
            }
        }
        let state = if entry.target == TargetState::Paused { State::Paused } else { State::Running };
        self.worker.put_status(name, plugin.as_deref(), state, None);
        Ok(())
    }
}

/// What a config check does when the plugin it names is still compiling.
#[derive(Clone, Copy, PartialEq)]
enum Compiling {
    /// Wait for it, up to `COMPILE_WAIT` (REST calls).
    Wait,
    /// Take the config unchecked; the connector waits, UNASSIGNED, and is checked once the
    /// plugin is compiled.
    Accept,
}

/// Why task configs wait when the group has no leader.
const NO_LEADER: &str = "a rebalance is in progress";

mod place;

#[cfg(test)]
mod tests;
