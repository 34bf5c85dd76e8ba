//! The worker's bookkeeping over in-memory stores, with no plugin loaded: what it refuses, what it
//! reports, and what it does for work it does not run.

use std::sync::Arc;

use super::*;
use crate::config::{properties, Mode, WorkerConfig};
use crate::storage::{FileOffsetStore, MemoryStatusStore};

struct Fixture {
    worker: Worker,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let (worker, dir) = worker_without_plugins();
    Fixture { worker, _dir: dir }
}

/// A standalone worker over in-memory statuses, a file offset store and an empty plugin folder,
/// all in the folder handed back with it (which must outlive it).
pub(crate) fn worker_without_plugins() -> (Worker, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let text = format!(
        "bootstrap.servers=localhost:1\nplugin.path={}\noffset.storage.file.filename={}\nwasm.cache.dir={}\n",
        plugins.display(),
        dir.path().join("offsets").display(),
        dir.path().join("cache").display()
    );
    let props = properties::parse(&text, "test").unwrap();
    let config = WorkerConfig::from_properties(&props, "test", Mode::Standalone).unwrap();
    let runtime = Arc::new(Runtime::new(config.compile_cache_dir.clone()).unwrap());
    let registry = PluginRegistry::scan(&runtime, &config.plugin_path, config.compile_threads);
    let offsets = Arc::new(FileOffsetStore::open(&dir.path().join("offsets")).unwrap());
    let worker = Worker::new(config, runtime, registry, offsets, Arc::new(MemoryStatusStore::default()));
    (worker, dir)
}

fn connector(f: &Fixture, pairs: &[(&str, &str)]) -> ConnectorConfig {
    let raw = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    ConnectorConfig::resolving(raw, "test", &f.worker.config.wasm, &f.worker.config.config_providers).unwrap()
}

#[test]
fn a_config_whose_plugin_is_missing_is_refused_naming_the_plugin() {
    let f = fixture();
    let config = connector(&f, &[("name", "c"), ("connector.class", "no-such-plugin")]);
    let Err(refused) = f.worker.validate(&config, super::validation::Types::Checked) else {
        panic!("a config without its plugin passed")
    };
    assert!(matches!(refused, StartError::NoPlugin { ref name, .. } if name == "c"), "{refused}");
    assert!(refused.to_string().contains("no-such-plugin"), "{refused}");
    // Starting tasks checks the same, without a plugin call, and starts nothing.
    let refused = f.worker.start_tasks(config, vec![(0, Vec::new())]).unwrap_err();
    assert!(matches!(refused, StartError::NoPlugin { .. }), "{refused}");
    assert!(f.worker.running_names().is_empty());
    assert!(f.worker.running("c").is_none());
}

#[test]
fn work_this_worker_does_not_run_is_left_alone() {
    let f = fixture();
    assert!(!f.worker.restart_task("c", 0).unwrap());
    assert!(!f.worker.stop_connector("c"));
    f.worker.stop_tasks("c", &[0, 1]);
    f.worker.hand_over_tasks("c", &[0]);
    assert!(f.worker.running_names().is_empty());
}

#[test]
fn statuses_name_this_worker_and_its_generation() {
    let f = fixture();
    f.worker.put_status("c", None, State::Running, None);
    f.worker.set_generation(7);
    f.worker.put_task_status("c", 2, None, State::Paused);
    let status = f.worker.statuses().get("c").unwrap();
    assert_eq!((status.kind, status.connector.version), (None, None));
    assert_eq!(status.connector.state, State::Running);
    assert_eq!(status.connector.worker_id, f.worker.id());
    assert_eq!(status.connector.generation, 0);
    assert_eq!(status.tasks[&2].state, State::Paused);
    assert_eq!(status.tasks[&2].generation, 7);
    f.worker.put_status("c", None, State::Failed, Some("it broke".into()));
    let failed = f.worker.statuses().get("c").unwrap().connector;
    assert_eq!((failed.state, failed.trace.as_deref(), failed.generation), (State::Failed, Some("it broke"), 7));
}

#[test]
fn a_plugin_that_is_not_loaded_has_no_kind_and_no_secrets() {
    let f = fixture();
    assert_eq!(f.worker.kind_of("no-such-plugin"), None);
    let config = vec![("connector.class".to_string(), "no-such-plugin".to_string())];
    assert!(f.worker.secret_keys(&config).is_empty());
    // Masking fails closed: an unknown plugin's secret-looking keys are hidden, and the host's own always.
    let config: Vec<(String, String)> = [
        ("connector.class", "no-such-plugin"),
        ("connection.password", "p"),
        ("topic", "t"),
        ("producer.override.sasl.jaas.config", "j"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(f.worker.secret_keys(&config), vec!["connection.password", "producer.override.sasl.jaas.config"]);
    let config = connector(&f, &[("name", "c"), ("connector.class", "no-such-plugin")]);
    assert!(f.worker.source_offsets(&config).unwrap().is_empty());
    // A standalone worker keeps every connector's offsets in its file, as Kafka Connect's.
    let own = connector(&f, &[("name", "c"), ("connector.class", "x"), ("offsets.storage.topic", "c-offsets")]);
    assert!(f.worker.source_offsets(&own).unwrap().is_empty());
}
