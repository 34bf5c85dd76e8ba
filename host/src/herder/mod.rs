//! The herder turns desired state (connector configs, task configs, target states in a
//! `ConfigStore`) into running tasks on this worker, and carries out the REST API's requests.
//! Standalone and distributed workers share it; they differ in their stores and their `place`.
//!
//! It is two types along its thread boundary, as Kafka Connect's `DistributedHerder` is one
//! thread fed by a request queue:
//! - `Herder` (here), the handle any thread holds: reads, connector writes, and `ask`, which
//!   puts a `request::Event` in the loop's channel;
//! - `round::HerderLoop`, which alone owns the state of the rounds (what task configs came from,
//!   the restarts asked for, the generations under way) as `self`, and runs on the herder's
//!   thread: each event, or each `round::RECONCILE_INTERVAL` without one, is followed by a round
//!   that brings the running work in line with the store (`reconcile`).
//!
//! Connector writes (create, replace, patch, delete, pause, stop) run on the caller's thread, not
//! on the loop: they validate with plugin calls (up to `wasm.call.timeout.ms`) and wait for a
//! config-topic transaction, and a round may wait minutes for tasks to stop; neither waits for
//! the other. `writing` makes a check-then-write atomic per name; the loop sees the write as a
//! store change. Offsets are read and changed by the worker (`worker::offsets`), as Connect's
//! `Worker` does; the herder only checks that the connector is stopped.

mod auto_restart;
mod error;
mod generate;
mod place;
mod request;
mod round;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cluster::{ClusterView, Membership, Work};
use crate::config::keys::connector as C;
use crate::config::ConnectorConfig;
use crate::runtime::registry::COMPILE_WAIT;
use crate::storage::config::{ConfigStoreError, ConnectorEntry};
use crate::storage::{ConfigSnapshot, ConfigStore};
use crate::sync::Unpoisoned;
use crate::worker::{StartError, Worker};
use wharf_connect::model::{ConnectorKind, Pairs, State, Status, TargetState};

pub use crate::worker::offsets::{ConnectorOffsets, OffsetsChange};
pub use error::HerderError;
use request::{Answer, Event, Request};
pub use round::HerderLoop;

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

/// The instances a restart covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPlan {
    pub connector: bool,
    pub tasks: Vec<u32>,
}

/// The herder as any thread holds it: what it reads, the connector writes, and the requests it
/// hands to the herder's thread (`HerderLoop`), which alone starts, stops and restarts work.
/// Reconciliations, revocations and task restarts therefore never overlap, by construction
/// rather than by a lock.
pub struct Herder {
    worker: Arc<Worker>,
    store: Arc<dyn ConfigStore>,
    /// Alone, or this worker's place in its group.
    standing: Arc<dyn place::Standing>,
    /// One connector write at a time, from the existence check to the store, so that two
    /// creates of one name cannot both succeed. Plugin calls (validation) happen before it.
    writing: Mutex<()>,
    /// The herder's thread's channel, at most `MAX_QUEUED_EVENTS` waiting.
    events: SyncSender<Event>,
    /// Task-config generations started so far (a count for measurements and tests).
    generations: AtomicU64,
    /// One fencing at a time on the leader, and no task configs written during one: a second
    /// request for a connector waits, then finds the first one's task-count record and has
    /// nothing to fence, and a generation cannot begin between a fencing's check and its record.
    fencing: Mutex<()>,
}

/// Events that may wait for the herder's thread at once; more requests are refused as busy.
const MAX_QUEUED_EVENTS: usize = 1024;

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

impl Herder {
    /// The handle, and the loop that runs on the herder's thread once spawned
    /// (`HerderLoop::spawn`). The store's changes become events of the loop from here on.
    pub fn new(
        worker: Arc<Worker>,
        store: Arc<dyn ConfigStore>,
        cluster: Option<Arc<ClusterView>>,
    ) -> (Arc<Self>, HerderLoop) {
        let (events, received) = std::sync::mpsc::sync_channel(MAX_QUEUED_EVENTS);
        // At most one store change waits in the channel: the round after it reads the store as
        // it is then, which covers every change before it.
        let change_queued = Arc::new(AtomicBool::new(false));
        {
            let (events, queued) = (events.clone(), change_queued.clone());
            store.changes().subscribe(Box::new(move || {
                if !queued.swap(true, Ordering::AcqRel) && events.try_send(Event::StoreChanged).is_err() {
                    // Full: the loop has events to see to, and a round after them.
                    queued.store(false, Ordering::Release);
                }
            }));
        }
        let herder = Arc::new(Herder {
            worker,
            store,
            standing: match cluster {
                None => Arc::new(place::Alone) as Arc<dyn place::Standing>,
                Some(view) => view,
            },
            writing: Mutex::new(()),
            events,
            generations: AtomicU64::new(0),
            fencing: Mutex::new(()),
        });
        {
            // Weak: the worker the herder holds must not keep the herder alive.
            let weak = Arc::downgrade(&herder);
            herder.worker.set_fencer(Arc::new(move |name: &str| match weak.upgrade() {
                Some(herder) => herder.fence_zombies(name).map_err(|e| e.to_string()),
                None => Err("the worker is shutting down".into()),
            }));
        }
        let herder_loop = HerderLoop::new(herder.clone(), received, change_queued);
        (herder, herder_loop)
    }

    /// Hands a request to the herder's thread. Answers of its own generations and deliveries
    /// always arrive (waiting for room); others are refused as busy when the channel is full.
    fn ask(&self, request: Request) -> Result<(), HerderError> {
        let stopped = || HerderError::Busy("the herder has stopped; the worker is shutting down".into());
        if request.must_arrive() {
            return self.events.send(Event::Request(request)).map_err(|_| stopped());
        }
        self.events.try_send(Event::Request(request)).map_err(|e| match e {
            TrySendError::Full(_) => HerderError::Busy(format!(
                "the herder has {MAX_QUEUED_EVENTS} requests waiting already; try again shortly"
            )),
            TrySendError::Disconnected(_) => stopped(),
        })
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

    /// Wakes the herder's thread for a round (the group assigned work, the worker stops). When
    /// the channel is full, a round is coming anyway.
    pub fn wake(&self) {
        let _ = self.events.try_send(Event::Wake);
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

    /// A connector's status as the status store has it, as it is (one lookup, for scrapes).
    pub fn stored_status(&self, name: &str) -> Option<wharf_connect::model::ConnectorStatus> {
        self.worker.statuses().get(name)
    }

    /// The worker's starts of connectors and tasks, for its metrics.
    pub fn startups(&self) -> Arc<crate::metrics::tasks::WorkerCounts> {
        self.worker.task_metrics().startups.clone()
    }

    /// The plugin files this worker loaded, for its metrics.
    pub fn plugin_loads(&self) -> crate::metrics::PluginLoads {
        use std::sync::atomic::Ordering::Relaxed;
        let loads = &self.worker.registry().loads;
        crate::metrics::PluginLoads {
            from_cache: loads.from_cache.load(Relaxed),
            compiled: loads.compiled.load(Relaxed),
            failed: loads.failed.load(Relaxed),
            compile_seconds: loads.compile_us.load(Relaxed) as f64 / 1e6,
        }
    }

    /// The counts of the tasks this worker runs, for its metrics.
    pub fn task_metrics(&self) -> Vec<((String, u32), Arc<crate::metrics::tasks::TaskCounters>)> {
        self.worker.task_metrics().all()
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
        match wharf_connect::model::last_value(&config, C::CONNECTOR_CLASS.name).map(String::from) {
            None => config.push((C::CONNECTOR_CLASS.name.into(), requested.to_string())),
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
        match wharf_connect::model::last_value(&config, C::NAME.name) {
            Some(given) if given != name => {
                return Err(HerderError::BadConfig(format!(
                    "Connector name configuration ({given}) doesn't match connector name in the URL ({name})"
                )))
            }
            Some(_) => {}
            None => config.push((C::NAME.name.into(), name.into())),
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
        if entry.tasks.as_ref() != Some(&tasks) || !entry.tasks_current {
            self.write_task_configs(name, &tasks).map_err(|e| self.store_failed(e))?;
        }
        // The herder loop picks the change up; reconciling here could wait on a reconcile that
        // is itself sending task configs to this worker.
        self.store.changes().notify();
        Ok(())
    }

    /// Fences the transactional producers of a source connector's earlier tasks, if its task
    /// configs changed since the last fencing, then records the task count (Kafka Connect's
    /// `PUT /connectors/{name}/fence`). A follower asks the leader. Blocking: fencing initialises
    /// a producer per earlier task, and the record is a config-topic transaction.
    pub fn fence_zombies(&self, name: &str) -> Result<(), HerderError> {
        if self.connector_kind(name)? != ConnectorKind::Source {
            return Err(HerderError::BadConfig(format!("Connector {name} is not a source connector")));
        }
        match self.standing.place().task_configs_go() {
            place::Destination::StoreAsLeader => {}
            place::Destination::Leader(url) => return self.fence_on_leader(name, &url),
            place::Destination::NoLeader => {
                return Err(HerderError::NotLeader(format!(
                    "the cluster has no leader to fence connector {name}'s earlier tasks yet (a rebalance is under \
                     way); retry shortly"
                )))
            }
            place::Destination::Store => {
                return Err(HerderError::BadConfig(
                    "Kafka Connect in standalone mode does not support exactly-once source connectors.".into(),
                ))
            }
        }
        let _one_at_a_time = self.fencing.locked();
        let entry = self.require(name)?;
        if !entry.fencing.pending {
            return Ok(());
        }
        // A task of the new generation fences its predecessor of the same number itself, as it
        // initialises its transactional id, before it writes; a task whose config did not change
        // runs on unfenced. The leader fences the numbers the new generation no longer has.
        let current = entry.tasks.as_ref().map_or(0, Vec::len) as u32;
        if let Some(previous) = entry.fencing.task_count.filter(|previous| *previous > current) {
            let config = self.parse(name, &entry.config).map_err(|e| HerderError::BadConfig(e.to_string()))?;
            self.worker.fence_producers(&config, current..previous).map_err(HerderError::Kafka)?;
        }
        if self.require(name)?.tasks != entry.tasks {
            return Err(HerderError::NotLeader(
                "Fencing failed because new task configurations were generated for the connector; retry".into(),
            ));
        }
        self.store.put_task_count(name, current)?;
        tracing::info!("connector {name}: earlier tasks fenced; {current} task(s) may now write in transactions");
        Ok(())
    }

    /// Writes a connector's task configs (and their commit record), never during a fencing.
    fn write_task_configs(&self, name: &str, tasks: &[Pairs]) -> Result<(), ConfigStoreError> {
        let _fencing = self.fencing.locked();
        self.store.put_task_configs(name, tasks)
    }

    /// Asks the leader at `leader_url` to fence a connector's earlier tasks, signed with the
    /// cluster's session key as every request between workers is.
    fn fence_on_leader(&self, name: &str, leader_url: &str) -> Result<(), HerderError> {
        let config = self.worker.config();
        let Some(d) = &config.distributed else {
            return Err(HerderError::Bug("a worker outside a cluster has a leader".into()));
        };
        crate::peer::ForwardRules::new(config.rest_scheme(), &config.advertised, &d.forward_allowed_urls)
            .check(leader_url)
            .map_err(HerderError::BadConfig)?;
        let path = format!("/connectors/{}/fence", crate::peer::path_segment(name));
        let headers = match self.store.snapshot().session_key {
            Some(key) => {
                crate::peer::sign_request(&key, &d.signature_algorithm, "PUT", &path, b"").map_err(HerderError::Bug)?
            }
            None => {
                return Err(HerderError::NotLeader(
                    "the cluster has no session key yet to sign the request to fence with; retry shortly".into(),
                ))
            }
        };
        let url = format!("{leader_url}{path}");
        match crate::peer::send("PUT", &url, None, self.worker.id(), &headers) {
            Ok((status, _)) if (200..300).contains(&status) => Ok(()),
            Ok((status, body)) => Err(HerderError::NotLeader(format!(
                "the leader at {leader_url} answered {status} to fencing connector {name}'s earlier tasks: {}",
                String::from_utf8_lossy(&body)
            ))),
            Err(e) => Err(HerderError::NotLeader(format!("cannot ask the leader to fence: {e}"))),
        }
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
            ConnectorKind::Source => {
                let entry = self.require(name)?;
                let config = self.parse(name, &entry.config).map_err(|e| HerderError::BadConfig(e.to_string()))?;
                Ok(ConnectorOffsets::Source(self.worker.source_offsets(&config)?))
            }
            ConnectorKind::Sink => {
                let entry = self.require(name)?;
                let config = self.parse(name, &entry.config).map_err(|e| HerderError::BadConfig(e.to_string()))?;
                Ok(ConnectorOffsets::Sink(self.worker.sink_offsets(&config)?))
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
        let kind = self.connector_kind(name)?;
        let config = self.parse(name, &entry.config).map_err(|e| HerderError::BadConfig(e.to_string()))?;
        Ok(self.worker.change_offsets(kind, &config, change)?)
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

    /// The kind of a connector's plugin, when the plugin is loaded.
    pub fn kind_of(&self, entry: &ConnectorEntry) -> Option<ConnectorKind> {
        let class = wharf_connect::model::last_value(&entry.config, C::CONNECTOR_CLASS.name)?;
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

    /// Called on the leader before it assigns: remembers the work the assignment covers.
    pub fn set_assigned_work(&self, work: Work) {
        if let Err(e) = self.ask(Request::AssignedWork(work)) {
            tracing::error!("noting the work the leader assigns: {e}");
        }
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
