//! A source built straight against `wharf:connector@0.1.0` (a frozen copy in `wit/`), without
//! the SDK, which follows the newest contract. It writes `count` records `legacy-0`,
//! `legacy-1`, … to `topic` and declares no grants, as plugins of 0.1.0 cannot.

wit_bindgen::generate!({
    path: "wit",
    world: "source",
});

use exports::wharf::connector::connector::Guest as ConnectorGuest;
use exports::wharf::connector::source_task::{Guest as TaskGuest, GuestTask, Task};
use wharf::connector::types::{
    ConfigKey, ConfigProblem, ConfigType, ConnectorError, ConnectorKind, Importance, PluginInfo, SourceRecord,
};

struct Legacy;

fn get<'a>(config: &'a [(String, String)], key: &str) -> Option<&'a str> {
    config.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

impl ConnectorGuest for Legacy {
    fn describe() -> PluginInfo {
        let key = |name: &str, required: bool, documentation: &str| ConfigKey {
            name: name.into(),
            type_: ConfigType::String,
            default_value: None,
            required,
            importance: Importance::High,
            documentation: documentation.into(),
            group: None,
        };
        PluginInfo {
            name: "test-legacy".into(),
            version: "0.1.0".into(),
            description: "Built against wharf:connector@0.1.0 (for tests)".into(),
            kind: ConnectorKind::Source,
            config: vec![key("topic", true, "Where records go"), key("count", false, "How many records (10)")],
        }
    }

    fn validate(_config: Vec<(String, String)>) -> Vec<ConfigProblem> {
        Vec::new()
    }

    fn task_configs(
        config: Vec<(String, String)>,
        _max_tasks: u32,
    ) -> Result<Vec<Vec<(String, String)>>, ConnectorError> {
        Ok(vec![config])
    }
}

struct LegacyTask {
    topic: String,
    count: u64,
    next: std::cell::Cell<u64>,
}

impl TaskGuest for Legacy {
    type Task = LegacyTask;
}

impl GuestTask for LegacyTask {
    fn open(config: Vec<(String, String)>) -> Result<Task, ConnectorError> {
        let topic = get(&config, "topic").ok_or_else(|| ConnectorError::Fatal("topic is not set".into()))?.to_string();
        let count = get(&config, "count").and_then(|c| c.parse().ok()).unwrap_or(10);
        Ok(Task::new(LegacyTask { topic, count, next: std::cell::Cell::new(0) }))
    }

    fn poll(&self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        let start = self.next.get();
        let end = self.count.min(start + u64::from(max_records));
        self.next.set(end);
        Ok((start..end)
            .map(|i| SourceRecord {
                source_partition: Vec::new(),
                source_offset: Vec::new(),
                topic: self.topic.clone(),
                partition: None,
                key: None,
                value: Some(format!("legacy-{i}").into_bytes()),
                headers: Vec::new(),
                timestamp: None,
            })
            .collect())
    }

    fn commit(&self) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn close(&self) {}
}

export!(Legacy);
