//! The herder's thread: `HerderLoop` owns the state of the rounds as `self` and nothing else
//! touches it. It waits for an event (a request, a store change) or `RECONCILE_INTERVAL`, carries
//! out every event waiting, then runs a round that brings the running work in line with the
//! store, in phases: connectors (statuses, task configs to generate), deletions, stale tasks,
//! missing tasks, sink group members given up, and on the leader the rebalance a changed config
//! calls for. Plugin calls and Kafka round trips of task configs run on threads of their own
//! (`generate.rs`), whose answers come back as requests.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::place::{self, Place};
use super::request::{Delivery, Event, Forward, Request};
use super::{Herder, HerderError, MAX_QUEUED_EVENTS};
use crate::cluster::Work;
use crate::storage::config::ConnectorEntry;
use crate::storage::{ConfigSnapshot, ConfigStore};
use crate::worker::{StartError, Worker};
use wharf_connect::model::{Pairs, State, TargetState};

/// How often the herder reconciles even without an event (a safety net, and the retry of task
/// configs that could not reach the leader).
pub(super) const RECONCILE_INTERVAL: Duration = Duration::from_secs(5);

/// Connectors whose task configs are generated (the plugin's validate and task-configs calls,
/// each within `wasm.call.timeout.ms`) or delivered (written to the config store within its
/// timeouts, or sent to the leader within the peer timeout) at once, each on a thread of its
/// own; the rest wait for a later round.
pub(super) const MAX_GENERATING: usize = 4;

/// Why task configs wait when the group has no leader.
pub(super) const NO_LEADER: &str = "a rebalance is in progress";

/// The herder's thread and the state only it touches. Made by `Herder::new`; `spawn` starts it.
pub struct HerderLoop {
    pub(super) herder: Arc<Herder>,
    events: Receiver<Event>,
    /// Set while a store change waits in the channel (`Herder::new` coalesces them).
    change_queued: Arc<AtomicBool>,
    /// A new session key is being written, off the herder's thread.
    pub(super) writing_session_key: Arc<AtomicBool>,
    /// The connector config that each connector's task configs were last generated from, on
    /// the worker that runs the connector.
    pub(super) generated_from: BTreeMap<String, Pairs>,
    /// On the leader: the work the last assignment covered; a config that names other work
    /// calls for a rebalance.
    assigned_work: Work,
    /// Connectors whose restart was asked for and not yet carried out by a reconciliation.
    restarts: BTreeSet<String>,
    /// What the automatic restarts of this worker's FAILED tasks have seen.
    auto_restarts: super::auto_restart::AutoRestarts,
    /// Connectors whose task configs are being generated now, or sent to the leader; at most
    /// `MAX_GENERATING` together.
    pub(super) generating: BTreeSet<String>,
    /// Connectors whose task configs are being sent to the leader now.
    pub(super) forwarding: BTreeSet<String>,
    /// Connectors whose last generation failed, with the config it failed on and when; a
    /// standalone worker runs no tasks for them, and the same config is tried again only after
    /// `RECONCILE_INTERVAL` (or a restart).
    pub(super) failed: BTreeMap<String, (Pairs, Instant)>,
    /// Connectors among `failed` that wait for a plugin still compiling: tried again as soon as
    /// a compiled plugin arrives (`Request::PluginsChanged`).
    awaiting_compile: BTreeSet<String>,
    /// Connectors this worker has reported a status for, so that a deleted one loses it even
    /// if it never ran.
    reported: BTreeSet<String>,
}

/// The tasks this worker should run, per connector: its entry, and its task configs by id.
type Wanted<'a> = BTreeMap<&'a str, (&'a ConnectorEntry, BTreeMap<u32, Pairs>)>;

impl HerderLoop {
    pub(super) fn new(herder: Arc<Herder>, events: Receiver<Event>, change_queued: Arc<AtomicBool>) -> Self {
        HerderLoop {
            herder,
            events,
            change_queued,
            writing_session_key: Arc::default(),
            generated_from: BTreeMap::new(),
            assigned_work: Work::default(),
            restarts: BTreeSet::new(),
            auto_restarts: Default::default(),
            generating: BTreeSet::new(),
            forwarding: BTreeSet::new(),
            failed: BTreeMap::new(),
            awaiting_compile: BTreeSet::new(),
            reported: BTreeSet::new(),
        }
    }

    /// Starts the herder's thread, which runs rounds until `stop` is set (and the thread woken,
    /// `Herder::wake`); fails only when the system cannot start a thread.
    pub fn spawn(self, stop: Arc<crate::sync::Stop>) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new().name("herder".into()).spawn(move || self.run(&stop))
    }

    fn run(mut self, stop: &crate::sync::Stop) {
        let mut first = None;
        while !stop.is_stopped() {
            // A bug that panics in one round must not end the loop: the next event, or the
            // interval, tries again (locks are taken unpoisoned).
            let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.round(first.take())));
            if let Err(panic) = round {
                tracing::error!(
                    "a reconciliation failed on a bug ({}); the herder carries on and tries again",
                    crate::sync::panic_message(&*panic)
                );
            }
            first = match self.events.recv_timeout(RECONCILE_INTERVAL) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                // Nothing can ask anything any more: the worker is gone.
                Err(RecvTimeoutError::Disconnected) => return,
            };
        }
    }

    fn worker(&self) -> &Worker {
        &self.herder.worker
    }

    fn store(&self) -> &dyn ConfigStore {
        self.herder.store.as_ref()
    }

    /// One round: every event waiting (`first` and those after it, in order), the cluster's log
    /// levels, then the reconciliation.
    fn round(&mut self, first: Option<Event>) {
        let events: Vec<Event> = first.into_iter().chain(self.events.try_iter().take(MAX_QUEUED_EVENTS)).collect();
        let mut forwards = Vec::new();
        for event in events {
            match event {
                Event::Request(request) => {
                    // A bug that panics on one request loses that one alone, never the events
                    // after it (an answer of a generation among them would leave its connector
                    // waiting for good).
                    let carried = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.carry_out(request, &mut forwards)
                    }));
                    if let Err(panic) = carried {
                        tracing::error!(
                            "the herder failed on a bug carrying out a request ({}); it carries on",
                            crate::sync::panic_message(&*panic)
                        );
                    }
                }
                // The round below reads the store as it is now.
                Event::StoreChanged => self.change_queued.store(false, Ordering::Release),
                Event::Wake => {}
            }
        }
        self.apply_cluster_logger_levels();
        self.reconcile(forwards);
    }

    /// One request. A requester that gave up waiting finds its answer dropped.
    fn carry_out(&mut self, request: Request, forwards: &mut Vec<Forward>) {
        match request {
            Request::RestartConnector(name) => {
                self.restarts.insert(name);
            }
            Request::RestartTask { name, id, answer } => {
                let restarted = match self.worker().restart_task(&name, id) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(HerderError::TaskNotFound(name, id)),
                    Err(e) => Err(HerderError::from(e)),
                };
                let _ = answer.try_send(restarted);
            }
            Request::Revoke { work, answer } => {
                self.revoke(&work);
                let _ = answer.try_send(());
            }
            Request::AssignedWork(work) => self.assigned_work = work,
            Request::Generated { name, from, configs } => {
                self.generating.remove(&name);
                // A connector's start, as Connect counts one: its plugin gave task configs, or not.
                let startups = &self.worker().task_metrics().startups;
                let outcome = if configs.is_ok() { &startups.connector_success } else { &startups.connector_failure };
                crate::metrics::tasks::TaskCounters::add(outcome, 1);
                self.take_generated(&name, from, configs, forwards);
            }
            Request::Health(answer) => {
                let _ = answer.try_send(());
            }
            Request::PluginsChanged => {
                for name in std::mem::take(&mut self.awaiting_compile) {
                    self.failed.remove(&name);
                }
            }
            Request::Forwarded { name, from, delivery } => {
                self.forwarding.remove(&name);
                match delivery {
                    Delivery::Accepted => {
                        if let Some(from) = from {
                            self.generated_from.insert(name, from);
                        }
                    }
                    Delivery::Later => {}
                    Delivery::Failed(e) => {
                        let entry = self.store().snapshot().connectors.get(&name).cloned();
                        if let Some(entry) = entry {
                            self.fail_connector(&name, &entry, &e);
                            self.failed.insert(name, (from.unwrap_or(entry.config), Instant::now()));
                        }
                    }
                }
            }
        }
    }

    /// Applies the cluster-wide log levels read since the last round.
    fn apply_cluster_logger_levels(&self) {
        for (namespace, level) in self.store().take_logger_levels() {
            let Some(loggers) = crate::logging::global() else { continue };
            if let Err(e) = loggers.set(&namespace, &level, wharf_connect::model::now_ms()) {
                tracing::warn!("the cluster-wide log level {level} of {namespace} was not applied: {e}");
            }
        }
    }

    /// Records that a connector failed, with why; one whose plugin is still compiling is
    /// UNASSIGNED until it is, and says so.
    pub(super) fn fail_connector(&mut self, name: &str, entry: &ConnectorEntry, e: &StartError) {
        let plugin = self.worker().plugin_of(&entry.config);
        if e.waits_for_compile() {
            tracing::info!("{e}; the connector waits");
            self.awaiting_compile.insert(name.to_string());
            self.worker().put_status(name, plugin.as_deref(), State::Unassigned, Some(e.to_string()));
            return;
        }
        tracing::error!("connector {name} failed: {e}");
        self.worker().put_status(name, plugin.as_deref(), State::Failed, Some(e.to_string()));
    }

    /// Stops the work the group took away from this worker. Tasks of connectors that still
    /// exist are left UNASSIGNED until their new owner starts them.
    fn revoke(&mut self, work: &Work) {
        let mut by_connector: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for task in &work.tasks {
            by_connector.entry(task.connector.as_str()).or_default().push(task.task);
        }
        let snapshot = self.store().snapshot();
        for (name, ids) in by_connector {
            self.worker().hand_over_tasks(name, &ids);
            if let Some(entry) = snapshot.connectors.get(name) {
                let plugin = self.worker().plugin_of(&entry.config);
                for id in ids {
                    self.worker().put_task_status(name, id, plugin.as_deref(), State::Unassigned);
                }
            }
        }
        for name in &work.connectors {
            self.generated_from.remove(name);
        }
    }

    /// Brings the running work in line with the desired state and this worker's place, then
    /// delivers the task configs that go to the store or the leader (`forwards`, taken from
    /// generations, and those of this round).
    fn reconcile(&mut self, forwards: Vec<Forward>) {
        // Those taken from generations first: their connectors are then on their way (and their
        // generations' slots, freed by the answers, go to them), so this round does not
        // generate them again.
        for forward in forwards {
            self.deliver(forward);
        }
        let place = self.herder.place();
        if let Some(generation) = place.generation() {
            self.worker().set_generation(generation);
        }
        let snapshot = self.store().snapshot();
        if place.leads() {
            self.renew_session_key(&snapshot);
        }
        let mut forwards = Vec::new();
        let failed = self.reconcile_connectors(&snapshot, place.as_ref(), &mut forwards);
        self.forget_deleted(&snapshot, place.as_ref());

        // Tasks: the config may have changed meanwhile.
        let snapshot = self.store().snapshot();
        let wanted = wanted_tasks(&snapshot, place.as_ref(), &failed);
        self.stop_stale_tasks(&snapshot, &wanted);
        self.start_missing_tasks(wanted);
        self.auto_restarts.run(&self.herder.worker, &snapshot);
        // Sink tasks that stopped here (this round's revocations included: they run first) and
        // will not run again give their place in their consumer group up.
        self.worker().release_members(|name, id| gone_for_good(&snapshot, name, id));
        if place.leads() {
            self.rebalance_if_the_work_changed(&snapshot);
        }
        for forward in forwards {
            self.deliver(forward);
        }
    }

    /// The connectors this worker runs: their statuses, and fresh task configs when their config
    /// changed. Returns the connectors that have failed.
    fn reconcile_connectors(
        &mut self,
        snapshot: &ConfigSnapshot,
        place: &dyn Place,
        forwards: &mut Vec<Forward>,
    ) -> Vec<String> {
        self.failed.retain(|name, _| snapshot.connectors.contains_key(name));
        let mut failed: Vec<String> = self.failed.keys().cloned().collect();
        for (name, entry) in &snapshot.connectors {
            if !place.owns_connector(name) {
                continue;
            }
            self.reported.insert(name.clone());
            let _context = tracing::error_span!("connector", connector = name.as_str()).entered();
            if let Err(e) = self.reconcile_connector(name, entry, place, forwards) {
                self.fail_connector(name, entry, &e);
                failed.push(name.clone());
            }
        }
        failed
    }

    /// The part of reconciling that falls to the worker running a connector: its status, and
    /// its task configs.
    fn reconcile_connector(
        &mut self,
        name: &str,
        entry: &ConnectorEntry,
        place: &dyn Place,
        forwards: &mut Vec<Forward>,
    ) -> Result<(), StartError> {
        let plugin = self.worker().plugin_of(&entry.config);
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
                self.generated_from.remove(name);
                return Ok(());
            }
            self.worker().statuses().remove_tasks(name);
            self.worker().put_status(name, plugin.as_deref(), State::Stopped, None);
            // Resumed, the connector generates its task configs again (they were emptied here).
            self.generated_from.remove(name);
            return Ok(());
        }

        // A restart asked for since: generate again (taken here, so a restart asked for while
        // this runs is seen by the next reconciliation).
        if self.restarts.remove(name) {
            self.generated_from.remove(name);
            self.failed.remove(name);
        }
        let failed_lately = self
            .failed
            .get(name)
            .is_some_and(|(config, when)| *config == entry.config && when.elapsed() < RECONCILE_INTERVAL);
        if failed_lately {
            return Ok(());
        }
        // Task configs not committed since the config last changed are generated again, even from
        // a config they were generated from before (changed away and back meanwhile).
        let stale = !entry.tasks_current;
        if self.generated_from.get(name) != Some(&entry.config) || entry.tasks.is_none() || stale {
            // The plugin's calls run elsewhere; their answer comes back as a request.
            let parsed = self.herder.parse(name, &entry.config)?;
            self.generate(name, parsed, &entry.config);
            return Ok(());
        }
        // Statuses of tasks the connector no longer has.
        if let (Some(tasks), Some(status)) = (&entry.tasks, self.worker().statuses().get(name)) {
            for id in status.tasks.keys().filter(|id| **id as usize >= tasks.len()) {
                self.worker().statuses().remove_task(name, *id);
            }
        }
        let state = if entry.target == TargetState::Paused { State::Paused } else { State::Running };
        self.worker().put_status(name, plugin.as_deref(), state, None);
        Ok(())
    }

    /// Deleted connectors lose their statuses (and, on a standalone worker, stop).
    fn forget_deleted(&mut self, snapshot: &ConfigSnapshot, place: &dyn Place) {
        match place.owned_connectors() {
            None => {
                for name in self.worker().running_names() {
                    if !snapshot.connectors.contains_key(&name) {
                        self.worker().stop_connector(&name);
                        self.worker().statuses().remove(&name);
                        self.reported.remove(&name);
                        tracing::info!("connector {name} deleted");
                    }
                }
                // Those that never ran (their plugin failed, say).
                let gone: Vec<String> =
                    self.reported.iter().filter(|name| !snapshot.connectors.contains_key(*name)).cloned().collect();
                for name in gone {
                    self.worker().statuses().remove(&name);
                    self.reported.remove(&name);
                    tracing::info!("connector {name} deleted");
                }
            }
            Some(connectors) => {
                for name in &connectors {
                    if !snapshot.connectors.contains_key(name) && self.worker().statuses().get(name).is_some() {
                        self.worker().statuses().remove(name);
                        tracing::info!("connector {name} deleted");
                    }
                }
                self.reported.retain(|name| snapshot.connectors.contains_key(name));
            }
        }
    }

    /// Stops the running tasks the desired state no longer has as they run: deleted, stopped or
    /// paused away, moved, or with another task config. A task whose connector's config changed
    /// goes on until the task configs generated from the new config are committed, and then
    /// restarts once (as in Kafka Connect), not once for the config and again for its tasks.
    fn stop_stale_tasks(&self, snapshot: &ConfigSnapshot, wanted: &Wanted<'_>) {
        for name in self.worker().running_names() {
            let Some((config, running)) = self.worker().running(&name) else { continue };
            let want = wanted.get(name.as_str()).filter(|(entry, _)| entry.target == TargetState::Started);
            let stale: Vec<u32> = running
                .iter()
                .filter(|(id, task_config)| match want {
                    None => true,
                    Some((entry, tasks)) => {
                        tasks.get(id) != Some(task_config) || (entry.config != config && entry.tasks_current)
                    }
                })
                .map(|(id, _)| *id)
                .collect();
            self.worker().stop_tasks(&name, &stale);
            if !snapshot.connectors.contains_key(&name) {
                for id in stale {
                    self.worker().statuses().remove_task(&name, id);
                }
            }
        }
    }

    /// Starts the wanted tasks that do not run; a start that fails is tried again each round.
    fn start_missing_tasks(&self, wanted: Wanted<'_>) {
        for (name, (entry, tasks)) in wanted {
            match entry.target {
                TargetState::Stopped => {}
                TargetState::Paused => {
                    let plugin = self.worker().plugin_of(&entry.config);
                    for id in tasks.keys() {
                        self.worker().put_task_status(name, *id, plugin.as_deref(), State::Paused);
                    }
                }
                // Tasks whose configs are being generated again wait for them (those running
                // with unchanged configs go on).
                TargetState::Started if self.generating.contains(name) => {}
                TargetState::Started => {
                    let _context = tracing::error_span!("connector", connector = name).entered();
                    self.start_tasks(name, entry, tasks)
                }
            }
        }
    }

    fn start_tasks(&self, name: &str, entry: &ConnectorEntry, tasks: BTreeMap<u32, Pairs>) {
        let (running_config, running) = self.worker().running(name).unwrap_or_default();
        let missing: Vec<(u32, Pairs)> = tasks.into_iter().filter(|(id, _)| !running.contains_key(id)).collect();
        if missing.is_empty() {
            return;
        }
        // While the task configs of a changed config are not committed, the tasks running here
        // go on under the config they started with (`stop_stale_tasks`), and a missing one joins
        // them under it: the worker runs a connector's tasks under one config.
        let config = match running.is_empty() || entry.tasks_current {
            true => &entry.config,
            false => &running_config,
        };
        let ids: Vec<u32> = missing.iter().map(|(id, _)| *id).collect();
        let started = self.herder.parse(name, config).and_then(|parsed| self.worker().start_tasks(parsed, missing));
        if let Err(e) = started {
            // Tried again at every reconciliation; one that waits for its plugin's compilation
            // says so, UNASSIGNED.
            let state = if e.waits_for_compile() {
                tracing::info!("{e}; its task(s) wait");
                State::Unassigned
            } else {
                tracing::error!("cannot start task(s) of connector {name}: {e}");
                State::Failed
            };
            for id in ids {
                let status = self.worker().status_of(state, Some(e.to_string()));
                self.worker().statuses().put_task(name, id, status);
            }
        }
    }

    /// The leader rebalances when the config names other work than it assigned.
    fn rebalance_if_the_work_changed(&mut self, snapshot: &ConfigSnapshot) {
        let work = Work::of(snapshot);
        if self.assigned_work == work {
            return;
        }
        let added = work.minus(&self.assigned_work);
        let removed = self.assigned_work.minus(&work);
        self.assigned_work = work;
        self.herder.standing.request_rejoin(format!(
            "the config changed (new: {}; gone: {})",
            added.describe(),
            removed.describe()
        ));
    }
}

/// The tasks this worker should run: those of every connector its place gives it (a standalone
/// worker runs none for a connector that failed).
fn wanted_tasks<'a>(snapshot: &'a ConfigSnapshot, place: &dyn Place, failed: &[String]) -> Wanted<'a> {
    let mut wanted = Wanted::new();
    for (name, entry) in &snapshot.connectors {
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
    wanted
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
