//! {{name}}: a Wharf source plugin. It writes "hello 1", "hello 2", … to `topic` and resumes after
//! the last number stored. Replace the counting with reading your system.

wit_bindgen::generate!({ path: "wit", world: "source" });

use std::cell::RefCell;

use exports::wharf::connector::connector::Guest as Connector;
#[allow(unused_imports)]
use exports::wharf::connector::grants::{Guest as Grants, KeyGrant, Names};
use exports::wharf::connector::source_task::{Guest as SourceTask, GuestTask};
use wharf::connector::host::{committed_offsets, log, Level};
use wharf::connector::types::{
    Config, ConfigKey, ConfigProblem, ConfigType, ConnectorError, ConnectorKind, Importance, PluginInfo, Scalar,
    SourceRecord,
};

struct Plugin;

fn get<'a>(config: &'a Config, key: &str) -> Option<&'a str> {
    config.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

impl Connector for Plugin {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "{{name}}".into(),
            version: "0.1.0".into(),
            description: "Counts (a template to start from)".into(),
            kind: ConnectorKind::Source,
            config: vec![ConfigKey {
                name: "topic".into(),
                type_: ConfigType::String,
                default_value: None,
                required: true,
                importance: Importance::High,
                documentation: "The topic to write to.".into(),
                group: None,
            }],
        }
    }

    fn validate(_config: Config) -> Vec<ConfigProblem> {
        Vec::new()
    }

    fn task_configs(config: Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config])
    }
}

fn partition() -> Vec<(String, Scalar)> {
    vec![("stream".into(), Scalar::Text("counter".into()))]
}

struct Task {
    topic: String,
    next: RefCell<i64>,
}

impl GuestTask for Task {
    fn open(config: Config) -> Result<exports::wharf::connector::source_task::Task, ConnectorError> {
        let topic = get(&config, "topic").unwrap_or_default().to_string();
        let stored = committed_offsets(&[partition()]).pop().flatten();
        let last = stored
            .and_then(|o| o.into_iter().find(|(k, _)| k == "last"))
            .and_then(|(_, v)| if let Scalar::Integer(n) = v { Some(n) } else { None })
            .unwrap_or(0);
        log(Level::Info, &format!("counting from {}", last + 1));
        Ok(exports::wharf::connector::source_task::Task::new(Task { topic, next: RefCell::new(last + 1) }))
    }

    fn poll(&self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        let mut next = self.next.borrow_mut();
        let records = (0..max_records)
            .map(|_| {
                let n = *next;
                *next += 1;
                SourceRecord {
                    source_partition: partition(),
                    source_offset: vec![("last".into(), Scalar::Integer(n))],
                    topic: self.topic.clone(),
                    partition: None,
                    key: None,
                    value: Some(format!("hello {n}").into_bytes()),
                    headers: Vec::new(),
                    timestamp: None,
                }
            })
            .collect();
        Ok(records)
    }

    fn commit(&self) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn close(&self) {}
}

impl SourceTask for Plugin {
    type Task = Task;
}

/// Which config keys name files, folders, `host:port` addresses or URLs: the host grants what
/// their values name, within the worker's wasm.ceiling.* settings. For a key `file` naming a
/// file to read: `vec![KeyGrant { key: "file".into(), names: Names::FileToRead }]`.
impl Grants for Plugin {
    fn declare() -> Vec<KeyGrant> {
        Vec::new()
    }
}

export!(Plugin);
