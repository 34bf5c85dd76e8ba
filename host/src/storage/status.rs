//! Connector and task states, as `GET /connectors/{name}/status` reports them.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::sync::UnpoisonedRw;
use wharf_connect::model::ConnectorKind;

pub use wharf_connect::model::{ConnectorStatus, State, Status};

/// The view of a connector whose own status has not arrived yet, only its tasks'.
pub fn awaiting_connector(name: &str) -> ConnectorStatus {
    ConnectorStatus {
        name: name.to_string(),
        kind: None,
        connector: Status {
            state: State::Unassigned,
            worker_id: String::new(),
            trace: None,
            records_skipped: 0,
            generation: -1,
            version: None,
            auto_restarts: 0,
            restartable: true,
        },
        tasks: BTreeMap::new(),
    }
}

/// Records a connector's status in a view, keeping its task statuses and its known kind.
pub fn upsert_connector(
    view: &mut BTreeMap<String, ConnectorStatus>,
    name: &str,
    kind: Option<ConnectorKind>,
    status: Status,
) {
    let entry = view.entry(name.to_string()).or_insert_with(|| ConnectorStatus {
        name: name.to_string(),
        kind,
        connector: status.clone(),
        tasks: BTreeMap::new(),
    });
    entry.connector = status;
    if kind.is_some() {
        entry.kind = kind;
    }
}

/// Where statuses are kept: in memory for a standalone worker (later in Kafka for a cluster).
pub trait StatusStore: Send + Sync {
    fn put_connector(&self, name: &str, kind: Option<ConnectorKind>, status: Status);
    fn put_task(&self, name: &str, task: u32, status: Status);
    /// Waits, a few seconds at most, for the statuses put so far to be stored: before a worker
    /// leaves its group, so that the worker taking its tasks over writes after them.
    fn flush(&self) {}
    fn get(&self, name: &str) -> Option<ConnectorStatus>;
    /// Forgets every task status of a connector.
    fn remove_tasks(&self, name: &str);
    /// Forgets one task's status.
    fn remove_task(&self, name: &str, task: u32);
    /// Forgets a deleted connector, and the topics it used.
    fn remove(&self, name: &str);
    /// Records that a task of `connector` used `topic` (Kafka Connect's topic tracking); a topic
    /// already recorded for the connector is not recorded again.
    fn put_topic(&self, connector: &str, topic: &str, task: u32, discovered_ms: i64);
    /// The topics a connector has used, sorted (`GET /connectors/{name}/topics`).
    fn topics(&self, connector: &str) -> Vec<String>;
    /// Forgets the topics a connector has used (`PUT /connectors/{name}/topics/reset`).
    fn reset_topics(&self, connector: &str);
    /// How many times topics were forgotten here or by another worker: a task that sees it
    /// change records its topics again as it uses them.
    fn topic_resets(&self) -> u64;
}

/// The most topics kept for one connector: a source that routes records to a topic per key
/// would otherwise grow the record without bound. Topics beyond it are not tracked.
pub const MAX_TRACKED_TOPICS: usize = 10_000;

/// The topics connectors used, by connector.
pub type TrackedTopics = BTreeMap<String, std::collections::BTreeSet<String>>;

/// Adds `topic` to `connector`'s topics: true when it is new and within `MAX_TRACKED_TOPICS`.
pub fn track_topic(tracked: &mut TrackedTopics, connector: &str, topic: &str) -> bool {
    let topics = tracked.entry(connector.to_string()).or_default();
    if topics.contains(topic) {
        return false;
    }
    if topics.len() >= MAX_TRACKED_TOPICS {
        tracing::warn!(
            "connector {connector} has used more than {MAX_TRACKED_TOPICS} topics; {topic} and later ones are not tracked"
        );
        return false;
    }
    topics.insert(topic.to_string())
}

#[derive(Default)]
pub struct MemoryStatusStore {
    connectors: RwLock<BTreeMap<String, ConnectorStatus>>,
    topics: RwLock<TrackedTopics>,
    resets: std::sync::atomic::AtomicU64,
}

impl StatusStore for MemoryStatusStore {
    fn put_connector(&self, name: &str, kind: Option<ConnectorKind>, status: Status) {
        upsert_connector(&mut self.connectors.write_locked(), name, kind, status);
    }

    /// A task's status may come before its connector's (a standalone worker starts the tasks of
    /// a connector it reconciles in the same round), as in the status topic.
    fn put_task(&self, name: &str, task: u32, status: Status) {
        let mut all = self.connectors.write_locked();
        all.entry(name.to_string()).or_insert_with(|| awaiting_connector(name)).tasks.insert(task, status);
    }

    fn get(&self, name: &str) -> Option<ConnectorStatus> {
        self.connectors.read_locked().get(name).cloned()
    }

    fn remove_tasks(&self, name: &str) {
        if let Some(entry) = self.connectors.write_locked().get_mut(name) {
            entry.tasks.clear();
        }
    }

    fn remove_task(&self, name: &str, task: u32) {
        if let Some(entry) = self.connectors.write_locked().get_mut(name) {
            entry.tasks.remove(&task);
        }
    }

    fn remove(&self, name: &str) {
        self.connectors.write_locked().remove(name);
        self.reset_topics(name);
    }

    fn put_topic(&self, connector: &str, topic: &str, _task: u32, _discovered_ms: i64) {
        track_topic(&mut self.topics.write_locked(), connector, topic);
    }

    fn topics(&self, connector: &str) -> Vec<String> {
        self.topics.read_locked().get(connector).map(|t| t.iter().cloned().collect()).unwrap_or_default()
    }

    fn reset_topics(&self, connector: &str) {
        self.topics.write_locked().remove(connector);
        self.resets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn topic_resets(&self) -> u64 {
        self.resets.load(std::sync::atomic::Ordering::Relaxed)
    }
}
