//! Statuses on the status topic.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rdkafka::ClientConfig;
use serde_json::{json, Value};

use crate::config::connector::check_name;
use crate::kafka::log::{KafkaLog, LogRecord};
use crate::kafka::partitioner::partition_for_key;
use crate::storage::status::{
    awaiting_connector, track_topic, upsert_connector, ConnectorStatus, State, Status, StatusStore, TrackedTopics,
};
use crate::sync::Unpoisoned;
use wharf_connect::model::ConnectorKind;

use super::json_bytes;
use super::writer::{LogWriter, STORE_TIMEOUT};

/// Statuses on the status topic. This worker's statuses enter the view as it writes them; when
/// the topic echoes them back they are skipped (`echoes` counts the writes still to come back per
/// key), so a late echo never undoes a newer state. The topic supplies everything else.
pub struct KafkaStatusStore {
    partitions: i32,
    view: Arc<Mutex<BTreeMap<String, ConnectorStatus>>>,
    /// The topics each connector used, from `status-topic-<topic>:connector-<connector>`.
    topics: Arc<Mutex<TrackedTopics>>,
    /// Topics forgotten, by this worker or (read from the topic) another.
    resets: Arc<std::sync::atomic::AtomicU64>,
    echoes: Arc<Mutex<BTreeMap<String, u32>>>,
    writer: LogWriter,
    _log: KafkaLog,
}

fn state_from_name(name: &str) -> Option<State> {
    Some(match name {
        "UNASSIGNED" => State::Unassigned,
        "RUNNING" => State::Running,
        "PAUSED" => State::Paused,
        "STOPPED" => State::Stopped,
        "FAILED" => State::Failed,
        "RESTARTING" => State::Restarting,
        _ => return None,
    })
}

fn state_name(state: State) -> &'static str {
    match state {
        State::Unassigned => "UNASSIGNED",
        State::Running => "RUNNING",
        State::Paused => "PAUSED",
        State::Stopped => "STOPPED",
        State::Failed => "FAILED",
        State::Restarting => "RESTARTING",
    }
}

fn status_value(status: &Status) -> Option<Vec<u8>> {
    let mut value = json!({
        "state": state_name(status.state),
        "trace": status.trace,
        "worker_id": status.worker_id,
        "generation": status.generation,
        "version": status.version,
    });
    // Wharf's own key, beside Connect's (whose readers pass over keys they do not know).
    if status.records_skipped > 0 {
        value["records_skipped"] = json!(status.records_skipped);
    }
    if status.auto_restarts > 0 {
        value["auto_restarts"] = json!(status.auto_restarts);
    }
    if !status.restartable {
        value["restartable"] = json!(false);
    }
    json_bytes(value)
}

fn apply_status(view: &mut BTreeMap<String, ConnectorStatus>, key: &str, value: Option<&[u8]>) -> Result<(), String> {
    let status = match value {
        None => None,
        Some(bytes) => {
            let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("value is not JSON ({e})"))?;
            let state = v["state"].as_str().and_then(state_from_name).ok_or("no known \"state\"")?;
            let worker_id = v["worker_id"].as_str().unwrap_or_default().to_string();
            let generation = v["generation"].as_i64().unwrap_or(0) as i32;
            let records_skipped = v["records_skipped"].as_u64().unwrap_or(0);
            let auto_restarts = v["auto_restarts"].as_u64().unwrap_or(0).min(u64::from(u32::MAX)) as u32;
            let restartable = v["restartable"].as_bool().unwrap_or(true);
            let (trace, version) = (v["trace"].as_str().map(String::from), v["version"].as_str().map(String::from));
            Some(Status { state, worker_id, trace, records_skipped, generation, version, auto_restarts, restartable })
        }
    };
    if let Some(name) = key.strip_prefix("status-connector-") {
        check_name(name)?;
        match status {
            None => {
                view.remove(name);
            }
            Some(status) if view.get(name).is_some_and(|known| stale(&known.connector, &status)) => {}
            Some(status) => {
                let entry = view.entry(name.to_string()).or_insert_with(|| ConnectorStatus {
                    name: name.to_string(),
                    kind: None,
                    connector: status.clone(),
                    tasks: BTreeMap::new(),
                });
                entry.connector = status;
            }
        }
    } else if let Some(rest) = key.strip_prefix("status-task-") {
        let (name, id) = rest.rsplit_once('-').ok_or("no task number")?;
        let id: u32 = id.parse().map_err(|_| "task number is not a number")?;
        check_name(name)?;
        match status {
            None => {
                if let Some(entry) = view.get_mut(name) {
                    entry.tasks.remove(&id);
                }
            }
            Some(status) => {
                // Task and connector records live in different partitions: a task's may come first.
                let entry = view.entry(name.to_string()).or_insert_with(|| awaiting_connector(name));
                if !entry.tasks.get(&id).is_some_and(|known| stale(known, &status)) {
                    entry.tasks.insert(id, status);
                }
            }
        }
    } else {
        return Err("unknown key".into());
    }
    Ok(())
}

/// Kafka Connect's record of a topic a connector used: key
/// `status-topic-<topic>:connector-<connector>`, value
/// `{"topic": {"name", "connector", "task", "discoverTimestamp"}}`; a tombstone forgets it.
const TOPIC_PREFIX: &str = "status-topic-";
const TOPIC_SEPARATOR: &str = ":connector-";

fn topic_key(connector: &str, topic: &str) -> String {
    format!("{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}")
}

/// Applies a topic record to the topics each connector used.
fn apply_topic(topics: &mut TrackedTopics, key: &str, value: Option<&[u8]>) -> Result<(), String> {
    let rest = key.strip_prefix(TOPIC_PREFIX).ok_or("not a topic record")?;
    // Topic names hold no ':', connector names may: the first separator ends the topic.
    let (topic, connector) = rest.split_once(TOPIC_SEPARATOR).ok_or("no \":connector-\" in the key")?;
    if topic.is_empty() || connector.is_empty() {
        return Err("an empty topic or connector in the key".into());
    }
    check_name(connector)?;
    match value {
        None => {
            if let Some(used) = topics.get_mut(connector) {
                used.remove(topic);
                if used.is_empty() {
                    topics.remove(connector);
                }
            }
        }
        Some(bytes) => {
            let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("value is not JSON ({e})"))?;
            v["topic"]["name"].as_str().ok_or("no \"topic\" with a \"name\"")?;
            track_topic(topics, connector, topic);
        }
    }
    Ok(())
}

/// A status from another worker of an older generation than the one known: a worker that lost
/// its work without knowing it yet wrote it, and the newer owner's word stands.
fn stale(known: &Status, incoming: &Status) -> bool {
    incoming.worker_id != known.worker_id && incoming.generation < known.generation
}

/// Counts off one expected echo of `key`; false if none was expected.
fn take_echo(echoes: &Mutex<BTreeMap<String, u32>>, key: &str) -> bool {
    let mut echoes = echoes.locked();
    let Some(pending) = echoes.get_mut(key) else { return false };
    *pending -= 1;
    if *pending == 0 {
        echoes.remove(key);
    }
    true
}

impl KafkaStatusStore {
    pub fn start(
        producer: &ClientConfig,
        consumer: &ClientConfig,
        topic: &str,
        partitions: i32,
    ) -> anyhow::Result<Self> {
        let view: Arc<Mutex<BTreeMap<String, ConnectorStatus>>> = Arc::default();
        let topics: Arc<Mutex<TrackedTopics>> = Arc::default();
        let resets: Arc<std::sync::atomic::AtomicU64> = Arc::default();
        let echoes: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
        let log = {
            let (view, echoes, topic_name) = (view.clone(), echoes.clone(), topic.to_string());
            let (tracked, forgotten) = (topics.clone(), resets.clone());
            KafkaLog::start(consumer, topic, partitions, move |record: LogRecord<'_>| {
                let key = record.key.map(String::from_utf8_lossy).unwrap_or_default();
                if take_echo(&echoes, &key) {
                    return;
                }
                let result = match key.starts_with(TOPIC_PREFIX) {
                    true => {
                        if record.value.is_none() {
                            forgotten.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        apply_topic(&mut tracked.locked(), &key, record.value)
                    }
                    false => apply_status(&mut view.locked(), &key, record.value),
                };
                if let Err(problem) = result {
                    tracing::warn!("skipping status record {key:?} in topic {topic_name}: {problem}");
                }
            })?
        };
        log.read_to_end(STORE_TIMEOUT)?;
        let writer = LogWriter::new(producer, topic)?;
        Ok(KafkaStatusStore { partitions, view, topics, resets, echoes, writer, _log: log })
    }

    /// Statuses are written without waiting: a task never blocks on reporting its state.
    fn send(&self, key: String, value: Option<Vec<u8>>) {
        let partition = partition_for_key(key.as_bytes(), self.partitions);
        *self.echoes.locked().entry(key.clone()).or_insert(0) += 1;
        if let Err(e) = self.writer.send(partition, &key, value.as_deref()) {
            tracing::warn!("cannot record a status: {e}");
            take_echo(&self.echoes, &key);
        }
    }
}

impl StatusStore for KafkaStatusStore {
    fn put_connector(&self, name: &str, kind: Option<ConnectorKind>, status: Status) {
        let value = status_value(&status);
        upsert_connector(&mut self.view.locked(), name, kind, status);
        self.send(format!("status-connector-{name}"), value);
    }

    fn put_task(&self, name: &str, task: u32, status: Status) {
        let value = status_value(&status);
        let mut view = self.view.locked();
        view.entry(name.to_string()).or_insert_with(|| awaiting_connector(name)).tasks.insert(task, status);
        drop(view);
        self.send(format!("status-task-{name}-{task}"), value);
    }

    fn flush(&self) {
        if let Err(e) = self.writer.flush(std::time::Duration::from_secs(5)) {
            tracing::warn!("statuses may not all be stored: {e}");
        }
    }

    fn get(&self, name: &str) -> Option<ConnectorStatus> {
        self.view.locked().get(name).cloned()
    }

    fn remove_tasks(&self, name: &str) {
        let ids: Vec<u32> = {
            let mut view = self.view.locked();
            let Some(entry) = view.get_mut(name) else { return };
            std::mem::take(&mut entry.tasks).into_keys().collect()
        };
        for id in ids {
            self.send(format!("status-task-{name}-{id}"), None);
        }
    }

    fn remove_task(&self, name: &str, task: u32) {
        if let Some(entry) = self.view.locked().get_mut(name) {
            entry.tasks.remove(&task);
        }
        self.send(format!("status-task-{name}-{task}"), None);
    }

    fn remove(&self, name: &str) {
        self.remove_tasks(name);
        self.view.locked().remove(name);
        self.send(format!("status-connector-{name}"), None);
        self.reset_topics(name);
    }

    fn put_topic(&self, connector: &str, topic: &str, task: u32, discovered_ms: i64) {
        if !track_topic(&mut self.topics.locked(), connector, topic) {
            return;
        }
        let value =
            json!({"topic": {"name": topic, "connector": connector, "task": task, "discoverTimestamp": discovered_ms}});
        self.send(topic_key(connector, topic), json_bytes(value));
    }

    fn topics(&self, connector: &str) -> Vec<String> {
        self.topics.locked().get(connector).map(|t| t.iter().cloned().collect()).unwrap_or_default()
    }

    fn reset_topics(&self, connector: &str) {
        let used = self.topics.locked().remove(connector).unwrap_or_default();
        for topic in used {
            self.send(topic_key(connector, &topic), None);
        }
        self.resets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn topic_resets(&self) -> u64 {
        self.resets.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: &str, worker: &str, generation: i32) -> String {
        format!(r#"{{"state":"{state}","trace":null,"worker_id":"{worker}","generation":{generation}}}"#)
    }

    #[test]
    fn status_records_replay_as_kafka_connect_writes_them() {
        // (key, value, the record's problem, then the connector's state and its task 0's)
        #[allow(clippy::type_complexity)] // a table of cases, a tuple a row
        let cases: Vec<(&str, Option<String>, Option<&str>, Option<&str>, Option<&str>)> = vec![
            ("status-task-a-0", Some(status("RUNNING", "w1:8083", 1)), None, Some("UNASSIGNED"), Some("RUNNING")),
            ("status-connector-a", Some(status("RUNNING", "w1:8083", 1)), None, Some("RUNNING"), Some("RUNNING")),
            // Another worker of an older generation lost its work without knowing: not taken.
            ("status-task-a-0", Some(status("FAILED", "w2:8083", 0)), None, Some("RUNNING"), Some("RUNNING")),
            ("status-task-a-0", Some(status("FAILED", "w2:8083", 2)), None, Some("RUNNING"), Some("FAILED")),
            (
                "status-task-a-x",
                Some(status("RUNNING", "w1:8083", 3)),
                Some("task number is not a number"),
                Some("RUNNING"),
                Some("FAILED"),
            ),
            (
                "status-task-a",
                Some(status("RUNNING", "w1:8083", 3)),
                Some("no task number"),
                Some("RUNNING"),
                Some("FAILED"),
            ),
            ("status-connector-a", Some("not json".into()), Some("value is not JSON"), Some("RUNNING"), Some("FAILED")),
            (
                "status-connector-a",
                Some(r#"{"state":"DANCING"}"#.into()),
                Some("no known \"state\""),
                Some("RUNNING"),
                Some("FAILED"),
            ),
            (
                "status-other-a",
                Some(status("RUNNING", "w1:8083", 3)),
                Some("unknown key"),
                Some("RUNNING"),
                Some("FAILED"),
            ),
            // Names follow the one rule for names, here as in the config topic.
            (
                "status-connector-a ",
                Some(status("RUNNING", "w1:8083", 3)),
                Some("connector name"),
                Some("RUNNING"),
                Some("FAILED"),
            ),
            (
                "status-task-a\n-0",
                Some(status("RUNNING", "w1:8083", 3)),
                Some("connector name"),
                Some("RUNNING"),
                Some("FAILED"),
            ),
            ("status-task-a-0", None, None, Some("RUNNING"), None),
            ("status-connector-a", None, None, None, None),
        ];
        let mut view = BTreeMap::new();
        for (i, (key, value, problem, connector, task)) in cases.iter().enumerate() {
            let replayed = apply_status(&mut view, key, value.as_deref().map(str::as_bytes));
            match problem {
                None => assert_eq!(replayed, Ok(()), "record {i}"),
                Some(problem) => {
                    assert!(replayed.as_ref().is_err_and(|p| p.starts_with(problem)), "record {i}: {replayed:?}")
                }
            }
            let entry = view.get("a");
            assert_eq!(entry.map(|e| state_name(e.connector.state)), *connector, "record {i}");
            assert_eq!(entry.and_then(|e| e.tasks.get(&0)).map(|t| state_name(t.state)), *task, "record {i}");
        }
    }

    #[test]
    fn a_written_status_reads_back_the_same() {
        let written = Status {
            state: State::Failed,
            worker_id: "w1:8083".into(),
            trace: Some("boom".into()),
            records_skipped: 0,
            generation: 7,
            version: Some("1.2.0".into()),
            auto_restarts: 0,
            restartable: true,
        };
        let mut view = BTreeMap::new();
        let bytes = status_value(&written).unwrap();
        apply_status(&mut view, "status-task-orders-3", Some(&bytes)).unwrap();
        assert_eq!(view["orders"].tasks[&3], written);
        // Connect's keys only, unless the task skipped records.
        for wharfs_own in ["records_skipped", "auto_restarts", "restartable"] {
            assert!(!String::from_utf8_lossy(&bytes).contains(wharfs_own), "{wharfs_own}");
        }
        // Connect 4.1's `version`, read back as written.
        assert!(String::from_utf8_lossy(&bytes).contains(r#""version":"1.2.0""#));
        let skipping =
            Status { state: State::Running, trace: None, records_skipped: 12, version: None, ..written.clone() };
        let bytes = status_value(&skipping).unwrap();
        apply_status(&mut view, "status-task-orders-3", Some(&bytes)).unwrap();
        assert_eq!(view["orders"].tasks[&3], skipping);
        // A task restarted automatically twice, which failed in a way no restart mends.
        let given_up = Status { auto_restarts: 2, restartable: false, ..written.clone() };
        let bytes = status_value(&given_up).unwrap();
        assert!(String::from_utf8_lossy(&bytes).contains(r#""auto_restarts":2"#));
        apply_status(&mut view, "status-task-orders-3", Some(&bytes)).unwrap();
        assert_eq!(view["orders"].tasks[&3], given_up);
        for name in ["UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING"] {
            assert_eq!(state_from_name(name).map(state_name), Some(name));
        }
    }
}

#[cfg(test)]
mod topic_tests {
    use super::*;

    #[test]
    fn topic_records_replay_into_each_connectors_topics() {
        let mut topics = TrackedTopics::new();
        let value = |topic: &str, connector: &str| {
            json!({"topic": {"name": topic, "connector": connector, "task": 0, "discoverTimestamp": 1}}).to_string()
        };
        apply_topic(&mut topics, &topic_key("src", "orders"), Some(value("orders", "src").as_bytes())).unwrap();
        apply_topic(&mut topics, &topic_key("src", "users"), Some(value("users", "src").as_bytes())).unwrap();
        // A connector name may hold ':'; the topic ends at the first separator.
        apply_topic(&mut topics, &topic_key("a:connector-b", "t"), Some(value("t", "a:connector-b").as_bytes()))
            .unwrap();
        assert_eq!(topics["src"].iter().collect::<Vec<_>>(), ["orders", "users"]);
        assert_eq!(topics["a:connector-b"].iter().collect::<Vec<_>>(), ["t"]);
        apply_topic(&mut topics, &topic_key("src", "orders"), None).unwrap();
        apply_topic(&mut topics, &topic_key("src", "users"), None).unwrap();
        assert!(!topics.contains_key("src"), "{topics:?}");
        for bad in ["status-topic-orders", "status-topic-:connector-src", "status-topic-orders:connector-"] {
            assert!(apply_topic(&mut topics, bad, Some(b"{}")).is_err(), "{bad}");
        }
        assert!(apply_topic(&mut topics, &topic_key("src", "x"), Some(b"{\"topic\":{}}")).is_err());
    }
}
