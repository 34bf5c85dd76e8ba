//! {{name}}: a Wharf sink plugin. It counts the records it receives and logs the count on every
//! flush. Replace the counting with writing to your system (durably, by the end of `flush`).

wit_bindgen::generate!({ path: "wit", world: "sink" });

use std::cell::Cell;

use exports::wharf::connector::connector::Guest as Connector;
#[allow(unused_imports)]
use exports::wharf::connector::grants::{Guest as Grants, KeyGrant, Names};
use exports::wharf::connector::sink_task::{Guest as SinkTask, GuestTask};
use wharf::connector::host::{log, Level};
use wharf::connector::types::{
    Config, ConfigProblem, ConnectorError, ConnectorKind, PartitionOffset, PluginInfo, SinkRecord, TopicPartition,
};

struct Plugin;

impl Connector for Plugin {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "{{name}}".into(),
            version: "0.1.0".into(),
            description: "Counts records (a template to start from)".into(),
            kind: ConnectorKind::Sink,
            config: Vec::new(),
        }
    }

    fn validate(_config: Config) -> Vec<ConfigProblem> {
        Vec::new()
    }

    fn task_configs(config: Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config])
    }
}

struct Task {
    seen: Cell<u64>,
}

impl GuestTask for Task {
    fn open(_config: Config) -> Result<exports::wharf::connector::sink_task::Task, ConnectorError> {
        Ok(exports::wharf::connector::sink_task::Task::new(Task { seen: Cell::new(0) }))
    }

    fn open_partitions(&self, _partitions: Vec<TopicPartition>) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn put(&self, records: Vec<SinkRecord>) -> Result<(), ConnectorError> {
        self.seen.set(self.seen.get() + records.len() as u64);
        Ok(())
    }

    fn flush(&self, _offsets: Vec<PartitionOffset>) -> Result<(), ConnectorError> {
        log(Level::Info, &format!("{} records so far", self.seen.get()));
        Ok(())
    }

    fn close_partitions(&self, _partitions: Vec<TopicPartition>) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn close(&self) {}
}

impl SinkTask for Plugin {
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
