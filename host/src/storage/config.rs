//! Connector configs, task configs and target states: the desired state that the herder turns
//! into running tasks. A standalone worker keeps it in memory; a distributed one in the config
//! topic (`KafkaConfigLog`).

use crate::sync::Unpoisoned;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub use wharf_connect::model::{Pairs, TargetState};

#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorEntry {
    pub config: Pairs,
    pub target: TargetState,
    /// Task configs made visible by a commit record; none before the first commit.
    pub tasks: Option<Vec<Pairs>>,
    /// Whether `tasks` were committed after `config` last changed (Kafka Connect's applied
    /// connector config): until they are, tasks running under the old config go on, and they
    /// restart once, when the task configs generated from the new config arrive.
    pub tasks_current: bool,
    /// Where the fencing of the connector's earlier tasks stands (exactly-once sources).
    pub fencing: Fencing,
}

/// Kafka Connect's bookkeeping of zombie fencing, from the config topic: the task count of the
/// last `tasks-fencing-<connector>` record, and whether task configs were committed since.
/// Before the first tasks of a new generation write in transactions, the leader fences every
/// transactional producer of the `task_count` tasks before them, then records the new count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fencing {
    pub task_count: Option<u32>,
    pub pending: bool,
}

/// The replayed view of every connector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigSnapshot {
    pub connectors: BTreeMap<String, ConnectorEntry>,
    /// The key workers of a cluster sign their requests to each other with, as the leader last
    /// wrote it (Kafka Connect's `session-key` record).
    pub session_key: Option<SessionKey>,
}

pub use wharf_connect::model::SessionKey;

#[derive(Debug, thiserror::Error)]
pub enum ConfigStoreError {
    #[error("cannot write to the config log: {0}")]
    Write(String),
    /// Only the leader of the group writes the config log.
    #[error("{0}")]
    NotLeader(String),
}

/// Where desired state lives. Every write returns once the change is visible in `snapshot`.
pub trait ConfigStore: Send + Sync {
    fn snapshot(&self) -> ConfigSnapshot;
    /// Creates or replaces a connector's config; `target`, if given, is written first.
    fn put_connector(&self, name: &str, config: &Pairs, target: Option<TargetState>) -> Result<(), ConfigStoreError>;
    fn remove_connector(&self, name: &str) -> Result<(), ConfigStoreError>;
    /// Writes task configs and the commit record that makes them visible together.
    fn put_task_configs(&self, name: &str, tasks: &[Pairs]) -> Result<(), ConfigStoreError>;
    fn put_target_state(&self, name: &str, state: TargetState) -> Result<(), ConfigStoreError>;
    /// Records the task count a connector's zombies were fenced for, which ends its pending
    /// fencing (the leader only): Kafka Connect's `tasks-fencing-<connector>` record.
    fn put_task_count(&self, name: &str, count: u32) -> Result<(), ConfigStoreError>;
    /// Distributes a new session key (the leader only).
    fn put_session_key(&self, key: &SessionKey) -> Result<(), ConfigStoreError>;
    /// Sets a log level on every worker of the cluster (`PUT /admin/loggers/{logger}?scope=cluster`):
    /// Kafka Connect's `logger-cluster-<namespace>` record, which any worker may write.
    fn put_logger_level(&self, namespace: &str, level: &str) -> Result<(), ConfigStoreError>;
    /// The cluster-wide log levels written since this worker started, in order, each given out
    /// once (levels written before it started are not applied again, as in Kafka Connect).
    fn take_logger_levels(&self) -> Vec<(String, String)>;
    /// A counter that grows with every change, and a way to wait for the next one.
    fn changes(&self) -> Arc<ChangeSignal>;
}

/// The most cluster-wide log levels held until the herder applies them; older ones are dropped
/// first (a later level of the same logger overrides them anyway).
pub const MAX_PENDING_LOGGER_LEVELS: usize = 256;

/// Adds a level for the herder to apply, within `MAX_PENDING_LOGGER_LEVELS`.
pub fn queue_logger_level(queue: &mut std::collections::VecDeque<(String, String)>, namespace: &str, level: &str) {
    if queue.len() >= MAX_PENDING_LOGGER_LEVELS {
        queue.pop_front();
    }
    queue.push_back((namespace.to_string(), level.to_string()));
}

/// Tells the herder when desired state changed.
#[derive(Default)]
pub struct ChangeSignal {
    listeners: Mutex<Vec<Listener>>,
}

/// Called on every change, on the thread that made it: it must not block (the herder's puts an
/// event in its channel, or finds one there already).
pub type Listener = Box<dyn Fn() + Send + Sync>;

impl ChangeSignal {
    /// The store changed: tells every listener.
    pub fn notify(&self) {
        for listener in self.listeners.locked().iter() {
            listener();
        }
    }

    /// Calls `listener` on every change from now on.
    pub fn subscribe(&self, listener: Listener) {
        self.listeners.locked().push(listener);
    }
}

/// The standalone worker's config store: in memory, gone when the process stops.
#[derive(Default)]
pub struct MemoryConfigStore {
    state: Mutex<ConfigSnapshot>,
    signal: Arc<ChangeSignal>,
    logger_levels: Mutex<std::collections::VecDeque<(String, String)>>,
}

impl MemoryConfigStore {
    fn update(&self, f: impl FnOnce(&mut ConfigSnapshot)) {
        f(&mut self.state.locked());
        self.signal.notify();
    }
}

impl ConfigStore for MemoryConfigStore {
    fn snapshot(&self) -> ConfigSnapshot {
        self.state.locked().clone()
    }

    fn put_connector(&self, name: &str, config: &Pairs, target: Option<TargetState>) -> Result<(), ConfigStoreError> {
        self.update(|s| {
            let entry = s.connectors.entry(name.to_string()).or_insert_with(|| ConnectorEntry {
                config: Vec::new(),
                target: TargetState::Started,
                tasks: None,
                tasks_current: false,
                fencing: Fencing::default(),
            });
            if entry.config != *config {
                entry.tasks_current = false;
            }
            entry.config = config.clone();
            if let Some(target) = target {
                entry.target = target;
            }
        });
        Ok(())
    }

    fn remove_connector(&self, name: &str) -> Result<(), ConfigStoreError> {
        self.update(|s| {
            s.connectors.remove(name);
        });
        Ok(())
    }

    fn put_task_configs(&self, name: &str, tasks: &[Pairs]) -> Result<(), ConfigStoreError> {
        self.update(|s| {
            if let Some(entry) = s.connectors.get_mut(name) {
                entry.tasks = Some(tasks.to_vec());
                entry.tasks_current = true;
                entry.fencing.pending = true;
            }
        });
        Ok(())
    }

    fn put_target_state(&self, name: &str, state: TargetState) -> Result<(), ConfigStoreError> {
        self.update(|s| {
            if let Some(entry) = s.connectors.get_mut(name) {
                entry.target = state;
            }
        });
        Ok(())
    }

    fn put_task_count(&self, name: &str, count: u32) -> Result<(), ConfigStoreError> {
        self.update(|s| {
            if let Some(entry) = s.connectors.get_mut(name) {
                entry.fencing = Fencing { task_count: Some(count), pending: false };
            }
        });
        Ok(())
    }

    fn put_session_key(&self, key: &SessionKey) -> Result<(), ConfigStoreError> {
        self.update(|s| s.session_key = Some(key.clone()));
        Ok(())
    }

    fn put_logger_level(&self, namespace: &str, level: &str) -> Result<(), ConfigStoreError> {
        queue_logger_level(&mut self.logger_levels.locked(), namespace, level);
        self.signal.notify();
        Ok(())
    }

    fn take_logger_levels(&self) -> Vec<(String, String)> {
        self.logger_levels.locked().drain(..).collect()
    }

    fn changes(&self) -> Arc<ChangeSignal> {
        self.signal.clone()
    }
}
