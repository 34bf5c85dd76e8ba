//! The herder turns desired state (connector configs, task configs, target states in a
//! `ConfigStore`) into running tasks on this worker, and carries out the REST API's requests.
//! Standalone and distributed workers share it; they differ in their stores.

pub mod distributed;
pub mod serve;
pub mod standalone;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::ConnectorConfig;
use crate::runtime::records::ConnectorKind;
use crate::storage::config::{ConnectorEntry, Pairs};
use crate::storage::{ConfigSnapshot, ConfigStore, State, TargetState};
use crate::worker::{StartError, Worker};

#[derive(Debug, thiserror::Error)]
pub enum HerderError {
    #[error("Connector {0} not found")]
    NotFound(String),
    #[error("Connector {0} already exists")]
    Conflict(String),
    #[error("Task {1} of connector {0} not found")]
    TaskNotFound(String, u32),
    #[error("{0}")]
    BadConfig(String),
    #[error("{0}")]
    Store(String),
}

/// The result of creating or replacing a connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Updated,
}

pub struct Herder {
    pub worker: Arc<Worker>,
    pub store: Arc<dyn ConfigStore>,
    /// One reconciliation at a time.
    reconciling: Mutex<()>,
}

/// A config in a canonical order (by key, the last value of a repeated key winning), so that
/// configs compare equal however they were written or read back.
pub fn canonical(pairs: Pairs) -> Pairs {
    let map: std::collections::BTreeMap<String, String> = pairs.into_iter().collect();
    map.into_iter().collect()
}

/// How often the herder reconciles even without a change signal (a safety net).
const RECONCILE_INTERVAL: Duration = Duration::from_secs(5);

impl Herder {
    pub fn new(worker: Arc<Worker>, store: Arc<dyn ConfigStore>) -> Arc<Self> {
        Arc::new(Herder { worker, store, reconciling: Mutex::new(()) })
    }

    /// Reconciles whenever the store changes, until `stop` is set.
    pub fn spawn_loop(self: &Arc<Self>, stop: Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<()> {
        let herder = self.clone();
        std::thread::Builder::new()
            .name("herder".into())
            .spawn(move || {
                let signal = herder.store.changes();
                let mut seen = signal.version();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    herder.reconcile();
                    seen = signal.wait_past(seen, RECONCILE_INTERVAL);
                }
            })
            .expect("the system could not start the herder thread")
    }

    pub fn snapshot(&self) -> ConfigSnapshot {
        self.store.snapshot()
    }

    /// Checks a config the way a start would: host keys, then the plugin's definition and its
    /// own validation.
    pub fn check(&self, name: &str, config: &Pairs) -> Result<ConnectorConfig, HerderError> {
        let parsed = ConnectorConfig::from_pairs(config.clone(), &format!("of {name}"), &self.worker.config.wasm)
            .map_err(|e| HerderError::BadConfig(e.to_string()))?;
        self.worker.validate(&parsed).map_err(|e| HerderError::BadConfig(e.to_string()))?;
        Ok(parsed)
    }

    /// Creates a connector, or replaces its config when `replace` is set.
    pub fn put_connector(&self, name: &str, mut config: Pairs, replace: bool) -> Result<Written, HerderError> {
        match config.iter().find(|(k, _)| k == "name") {
            Some((_, given)) if given != name => {
                return Err(HerderError::BadConfig(format!(
                    "Connector name configuration ({given}) doesn't match connector name in the URL ({name})"
                )))
            }
            Some(_) => {}
            None => config.push(("name".into(), name.into())),
        }
        let config = canonical(config);
        self.check(name, &config)?;
        let exists = self.store.snapshot().connectors.contains_key(name);
        if exists && !replace {
            return Err(HerderError::Conflict(name.to_string()));
        }
        self.store.put_connector(name, &config, None).map_err(|e| HerderError::Store(e.to_string()))?;
        self.reconcile();
        Ok(if exists { Written::Updated } else { Written::Created })
    }

    pub fn delete_connector(&self, name: &str) -> Result<(), HerderError> {
        self.require(name)?;
        self.store.remove_connector(name).map_err(|e| HerderError::Store(e.to_string()))?;
        self.reconcile();
        Ok(())
    }

    pub fn set_target_state(&self, name: &str, state: TargetState) -> Result<(), HerderError> {
        self.require(name)?;
        self.store.put_target_state(name, state).map_err(|e| HerderError::Store(e.to_string()))?;
        self.reconcile();
        Ok(())
    }

    /// Restarts a connector: its tasks stop and start again with fresh task configs.
    pub fn restart_connector(&self, name: &str) -> Result<(), HerderError> {
        self.require(name)?;
        let _guard = self.reconciling.lock().expect("herder lock");
        self.worker.stop_connector(name);
        drop(_guard);
        self.reconcile();
        Ok(())
    }

    pub fn restart_task(&self, name: &str, id: u32) -> Result<(), HerderError> {
        self.require(name)?;
        match self.worker.restart_task(name, id) {
            Ok(true) => Ok(()),
            Ok(false) => Err(HerderError::TaskNotFound(name.to_string(), id)),
            Err(e) => Err(HerderError::BadConfig(e.to_string())),
        }
    }

    fn require(&self, name: &str) -> Result<ConnectorEntry, HerderError> {
        self.store.snapshot().connectors.get(name).cloned().ok_or_else(|| HerderError::NotFound(name.to_string()))
    }

    /// The kind of a connector's plugin, when the plugin is loaded.
    pub fn kind_of(&self, entry: &ConnectorEntry) -> Option<ConnectorKind> {
        let class = entry.config.iter().rev().find(|(k, _)| k == "connector.class")?;
        self.worker.kind_of(&class.1)
    }

    /// Brings the running tasks in line with the desired state.
    pub fn reconcile(&self) {
        let _guard = self.reconciling.lock().expect("herder lock");
        let snapshot = self.store.snapshot();
        for name in self.worker.running_names() {
            if !snapshot.connectors.contains_key(&name) {
                self.worker.stop_connector(&name);
                self.worker.status.remove(&name);
                tracing::info!("connector {name} deleted");
            }
        }
        for (name, entry) in &snapshot.connectors {
            if let Err(e) = self.reconcile_one(name, entry) {
                tracing::error!("connector {name} failed: {e}");
                self.worker.stop_connector(name);
                self.worker.put_status(name, self.kind_of(entry), State::Failed, Some(e.to_string()));
            }
        }
    }

    fn reconcile_one(&self, name: &str, entry: &ConnectorEntry) -> Result<(), StartError> {
        let kind = self.kind_of(entry);
        let running = self.worker.running(name);
        if entry.target == TargetState::Stopped {
            if running.is_some() {
                self.worker.stop_connector(name);
            }
            if entry.tasks.as_ref().is_some_and(|t| !t.is_empty()) {
                self.write_task_configs(name, &[])?;
            }
            self.worker.status.remove_tasks(name);
            self.worker.put_status(name, kind, State::Stopped, None);
            return Ok(());
        }

        // A new or changed connector config gets fresh task configs from its plugin.
        let config_changed = running.as_ref().is_none_or(|(config, _)| *config != entry.config);
        let mut tasks = entry.tasks.clone();
        if config_changed || tasks.is_none() {
            let parsed =
                ConnectorConfig::from_pairs(entry.config.clone(), &format!("of {name}"), &self.worker.config.wasm)
                    .map_err(|e| StartError::Invalid { name: name.to_string(), problems: e.to_string() })?;
            let fresh: Vec<Pairs> = self.worker.task_configs(&parsed)?.into_iter().map(canonical).collect();
            if tasks.as_ref() != Some(&fresh) {
                self.write_task_configs(name, &fresh)?;
            }
            tasks = Some(fresh);
        }
        let tasks = tasks.unwrap_or_default();

        if entry.target == TargetState::Paused {
            if running.is_some() {
                self.worker.stop_connector(name);
            }
            self.worker.put_status(name, kind, State::Paused, None);
            for id in 0..tasks.len() as u32 {
                self.worker.put_task_status(name, id, State::Paused);
            }
            return Ok(());
        }

        let up_to_date =
            running.as_ref().is_some_and(|(config, running_tasks)| *config == entry.config && *running_tasks == tasks);
        if up_to_date {
            return Ok(());
        }
        if running.is_some() {
            self.worker.stop_connector(name);
        }
        let parsed = ConnectorConfig::from_pairs(entry.config.clone(), &format!("of {name}"), &self.worker.config.wasm)
            .map_err(|e| StartError::Invalid { name: name.to_string(), problems: e.to_string() })?;
        self.worker.start_tasks(parsed, tasks)
    }

    fn write_task_configs(&self, name: &str, tasks: &[Pairs]) -> Result<(), StartError> {
        self.store
            .put_task_configs(name, tasks)
            .map_err(|e| StartError::Plugin { name: name.to_string(), message: e.to_string() })
    }
}
