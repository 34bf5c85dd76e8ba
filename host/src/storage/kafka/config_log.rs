//! The config topic: its records replayed into connectors (`ConfigReplay`), and the store on it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::ClientConfig;
use serde_json::{json, Value};

use crate::config::connector::check_name;
use crate::kafka::log::{KafkaLog, LogRecord};
use crate::storage::config::{
    ChangeSignal, ConfigSnapshot, ConfigStore, ConfigStoreError, ConnectorEntry, Fencing, Pairs, SessionKey,
    TargetState,
};
use crate::sync::Unpoisoned;

use super::json_bytes;
use super::writer::{FencedWriter, LogWriter, WriteError, STORE_TIMEOUT};

fn pairs_to_json(pairs: &Pairs) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

fn pairs_from_json(value: &Value) -> Option<Pairs> {
    value.as_object()?.iter().map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
}

/// The config topic replayed into connectors, as every worker sees it.
#[derive(Default)]
struct ConfigReplay {
    configs: BTreeMap<String, Pairs>,
    targets: BTreeMap<String, TargetState>,
    tasks: BTreeMap<String, Vec<Pairs>>,
    /// Connectors whose task configs were committed after their config last changed.
    tasks_current: std::collections::BTreeSet<String>,
    /// Task configs written but not yet committed.
    pending: BTreeMap<String, BTreeMap<u32, Pairs>>,
    /// Zombie fencing, per connector (`tasks-fencing-<connector>` and commits since).
    fencing: BTreeMap<String, Fencing>,
    /// The `group.id` of the cluster that owns the topic, from its marker record.
    owner: Option<String>,
    session_key: Option<SessionKey>,
    /// Set once the topic has been read to its end at start: log levels read after that are
    /// applied, earlier ones are history.
    started: bool,
    /// Cluster-wide log levels read since the start, for the herder to apply.
    logger_levels: std::collections::VecDeque<(String, String)>,
}

/// Kafka Connect's record of a cluster-wide log level: `logger-cluster-<namespace>`,
/// `{"level": "DEBUG"}`.
const LOGGER_CLUSTER_PREFIX: &str = "logger-cluster-";

/// Kafka Connect's record of the session key: `{"key": base64, "algorithm", "creation-timestamp"}`.
const SESSION_KEY: &str = "session-key";

/// Kafka Connect's record of a connector's task count after its zombies were fenced:
/// `tasks-fencing-<connector>`, `{"task-count": N}`.
const TASK_COUNT_PREFIX: &str = "tasks-fencing-";

/// The record that marks which cluster (`group.id`) a config topic belongs to.
pub const OWNER_KEY: &str = "wharf-cluster-owner";

impl ConfigReplay {
    fn apply(&mut self, key: &str, value: Option<&[u8]>) -> Result<(), String> {
        let parsed: Option<Value> = match value {
            None => None,
            Some(bytes) => Some(serde_json::from_slice(bytes).map_err(|e| format!("value is not JSON ({e})"))?),
        };
        if key == OWNER_KEY {
            self.owner = parsed.and_then(|v| v["group.id"].as_str().map(String::from));
        } else if key == SESSION_KEY {
            use base64::Engine;
            let Some(v) = parsed else { return Ok(()) };
            let encoded = v["key"].as_str().ok_or("no \"key\" string")?;
            let key = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|_| "a \"key\" that is not base64")?;
            let algorithm = v["algorithm"].as_str().ok_or("no \"algorithm\" string")?.to_string();
            let created_ms = v["creation-timestamp"].as_i64().ok_or("no \"creation-timestamp\" number")?;
            self.session_key = Some(SessionKey { key, algorithm, created_ms });
        } else if let Some(name) = key.strip_prefix("connector-") {
            check_name(name)?;
            match parsed {
                None => {
                    self.configs.remove(name);
                    self.targets.remove(name);
                    self.tasks.remove(name);
                    self.tasks_current.remove(name);
                    self.pending.remove(name);
                    self.fencing.remove(name);
                }
                Some(v) => {
                    let pairs = pairs_from_json(&v["properties"]).ok_or("no \"properties\" object of strings")?;
                    // The key names the connector; a config that names another is not its config.
                    if let Some(given) =
                        wharf_connect::model::last_value(&pairs, crate::config::keys::connector::NAME.name)
                    {
                        if given != name {
                            return Err(format!("its properties name another connector ({given:?})"));
                        }
                    }
                    if self.configs.get(name) != Some(&pairs) {
                        self.tasks_current.remove(name);
                    }
                    self.configs.insert(name.to_string(), pairs);
                }
            }
        } else if let Some(name) = key.strip_prefix("target-state-") {
            check_name(name)?;
            match parsed {
                None => {
                    self.targets.remove(name);
                }
                Some(v) => {
                    let state = v["state.v2"].as_str().or(v["state"].as_str()).ok_or("no \"state\"")?;
                    let state = TargetState::parse(state).ok_or_else(|| format!("unknown state {state}"))?;
                    self.targets.insert(name.to_string(), state);
                }
            }
        } else if let Some(name) = key.strip_prefix(TASK_COUNT_PREFIX) {
            // Kafka Connect's record of the task count a connector's zombies were fenced for
            // (exactly-once sources): it ends the fencing the last commit made pending.
            check_name(name)?;
            if let Some(v) = parsed {
                let count = v["task-count"].as_u64().ok_or("no \"task-count\" number")?;
                let count = u32::try_from(count).map_err(|_| format!("a task count of {count} is out of range"))?;
                self.fencing.insert(name.to_string(), Fencing { task_count: Some(count), pending: false });
            }
        } else if let Some(rest) = key.strip_prefix("task-") {
            let (name, id) = rest.rsplit_once('-').ok_or("no task number")?;
            let id: u32 = id.parse().map_err(|_| "task number is not a number")?;
            check_name(name)?;
            if let Some(v) = parsed {
                let pairs = pairs_from_json(&v["properties"]).ok_or("no \"properties\" object of strings")?;
                self.pending.entry(name.to_string()).or_default().insert(id, pairs);
            }
        } else if let Some(namespace) = key.strip_prefix(LOGGER_CLUSTER_PREFIX) {
            let Some(v) = parsed else { return Ok(()) };
            let level = v["level"].as_str().ok_or("no \"level\"")?;
            if self.started {
                crate::storage::config::queue_logger_level(&mut self.logger_levels, namespace, level);
            }
        } else if let Some(name) = key.strip_prefix("commit-") {
            check_name(name)?;
            if let Some(v) = parsed {
                let count = v["tasks"].as_u64().ok_or("no \"tasks\" count")?;
                let count = u32::try_from(count).map_err(|_| format!("a task count of {count} is out of range"))?;
                let pending = self.pending.remove(name).unwrap_or_default();
                let tasks: Option<Vec<Pairs>> = (0..count)
                    .map(|id| {
                        pending
                            .get(&id)
                            .cloned()
                            .or_else(|| self.tasks.get(name).and_then(|t| t.get(id as usize).cloned()))
                    })
                    .collect();
                match tasks {
                    Some(tasks) => {
                        self.tasks.insert(name.to_string(), tasks);
                        self.tasks_current.insert(name.to_string());
                        self.fencing.entry(name.to_string()).or_default().pending = true;
                    }
                    None => return Err(format!("commit of {count} tasks without all their configs")),
                }
            }
        } else {
            return Err("unknown key".into());
        }
        Ok(())
    }

    fn snapshot(&self) -> ConfigSnapshot {
        let connectors = self
            .configs
            .iter()
            .map(|(name, config)| {
                let entry = ConnectorEntry {
                    config: config.clone(),
                    target: self.targets.get(name).copied().unwrap_or(TargetState::Started),
                    tasks: self.tasks.get(name).cloned(),
                    tasks_current: self.tasks_current.contains(name),
                    fencing: self.fencing.get(name).cloned().unwrap_or_default(),
                };
                (name.clone(), entry)
            })
            .collect();
        ConfigSnapshot { connectors, session_key: self.session_key.clone() }
    }
}

/// The config store on the config topic (one partition: one total order for every worker).
pub struct KafkaConfigLog {
    topic: String,
    replay: Arc<Mutex<ConfigReplay>>,
    signal: Arc<ChangeSignal>,
    producer_config: ClientConfig,
    transactional_id: String,
    /// Set while this worker leads its group; only the leader writes.
    writer: Mutex<Option<FencedWriter>>,
    log: KafkaLog,
}

impl KafkaConfigLog {
    /// Reads the config topic to its end and follows it. Writing needs `lead` first.
    pub fn start(
        producer: &ClientConfig,
        consumer: &ClientConfig,
        topic: &str,
        transactional_id: &str,
    ) -> anyhow::Result<Self> {
        let mut consumer = consumer.clone();
        // Writes of a leader that was fenced mid-transaction are aborted: never read them.
        consumer.set("isolation.level", "read_committed");
        let consumer = &consumer;
        let replay: Arc<Mutex<ConfigReplay>> = Arc::default();
        let signal: Arc<ChangeSignal> = Arc::default();
        let log = {
            let (replay, signal, topic_name) = (replay.clone(), signal.clone(), topic.to_string());
            KafkaLog::start(consumer, topic, 1, move |record: LogRecord<'_>| {
                let key = record.key.map(String::from_utf8_lossy).unwrap_or_default();
                let result = replay.locked().apply(&key, record.value);
                match result {
                    Ok(()) => signal.notify(),
                    Err(problem) => tracing::warn!(
                        "skipping record at offset {} of config topic {topic_name} with key {key:?}: {problem}",
                        record.offset
                    ),
                }
            })?
        };
        let store = KafkaConfigLog {
            topic: topic.to_string(),
            replay,
            signal,
            producer_config: producer.clone(),
            transactional_id: transactional_id.to_string(),
            writer: Mutex::new(None),
            log,
        };
        store.log.read_to_end(STORE_TIMEOUT)?;
        store.replay.locked().started = true;
        Ok(store)
    }

    /// Becomes the writer of the config topic: fences any earlier leader's writer, then reads
    /// the topic to its end so that nothing the old leader wrote is missed.
    pub fn lead(&self) -> anyhow::Result<()> {
        {
            // Under the lock, so that no write of this worker is in flight when its own new
            // writer fences the old one. A writer still held was not fenced (a fenced write
            // drops it), so it is kept.
            let mut writer = self.writer.locked();
            if writer.is_none() {
                *writer = Some(FencedWriter::open(&self.producer_config, &self.topic, &self.transactional_id)?);
            }
        }
        self.log.read_to_end(STORE_TIMEOUT)
    }

    /// Gives up writing (another worker leads now).
    pub fn follow(&self) {
        self.writer.locked().take();
    }

    /// The next offset of the config topic this worker will read.
    pub fn position(&self) -> i64 {
        self.log.position(0)
    }

    /// Waits until this worker has read the config topic up to `offset`; false on timeout.
    pub fn wait_for(&self, offset: i64, timeout: Duration) -> bool {
        self.log.wait_for(0, offset, timeout)
    }

    /// Refuses a config topic that another cluster already uses, and marks an unclaimed one as
    /// ours. The mark is the one record not written by a leader: it is written once, when the
    /// first worker of a cluster starts, before the worker joins its group.
    pub fn claim(&self, group_id: &str, topic: &str) -> anyhow::Result<()> {
        let owner = self.replay.locked().owner.clone();
        match owner {
            Some(owner) if owner == group_id => Ok(()),
            Some(owner) => anyhow::bail!(
                "config topic '{topic}' (config.storage.topic) belongs to the cluster with group.id={owner}, \
                 but this worker has group.id={group_id}. Two clusters on the same internal topics corrupt \
                 each other's state: give this cluster its own config.storage.topic, offset.storage.topic \
                 and status.storage.topic, or set group.id={owner} to join that cluster"
            ),
            None => {
                // Written twice by a retry, the mark says the same thing twice.
                let writer = LogWriter::without_idempotence(&self.producer_config, topic)?;
                let mark = json_bytes(json!({"group.id": group_id}));
                let written = writer.write(&[(0, OWNER_KEY.to_string(), mark)]).map_err(|e| anyhow::anyhow!("{e}"))?;
                self.read_back(written)
            }
        }
    }

    /// Waits until this worker has read its own write back (`last_offset`, from Kafka's
    /// acknowledgement). The topic has one partition, so everything written before it is read by
    /// then too; without the offset, reads the topic to its end.
    fn read_back(&self, last_offset: Option<i64>) -> anyhow::Result<()> {
        match last_offset {
            Some(offset) if self.log.wait_for(0, offset + 1, STORE_TIMEOUT) => Ok(()),
            Some(offset) => anyhow::bail!(
                "the config topic {} was written (up to offset {offset}) but not read back within {} s",
                self.topic,
                STORE_TIMEOUT.as_secs()
            ),
            None => self.log.read_to_end(STORE_TIMEOUT),
        }
    }

    fn write(&self, records: &[(String, Option<Vec<u8>>)]) -> Result<(), ConfigStoreError> {
        let last_offset = {
            let mut writer = self.writer.locked();
            let Some(active) = writer.as_ref() else {
                return Err(ConfigStoreError::NotLeader(
                    "this worker does not lead its group, and only the leader writes connector configs; \
                     send the request to the leader, or retry once the group has one"
                        .into(),
                ));
            };
            match active.write(records) {
                Ok(last_offset) => last_offset,
                Err(WriteError::Fenced(e)) => {
                    writer.take();
                    return Err(ConfigStoreError::NotLeader(format!(
                        "another worker has become the leader of the group since this one was elected ({e}); retry"
                    )));
                }
                Err(WriteError::Failed(e)) => return Err(ConfigStoreError::Write(e)),
            }
        };
        // Read back, so that the caller sees its write in the next snapshot.
        self.read_back(last_offset).map_err(|e| ConfigStoreError::Write(e.to_string()))
    }
}

fn target_state_value(state: TargetState) -> Option<Vec<u8>> {
    // Readers that predate STOPPED know only STARTED and PAUSED in "state".
    let legacy = if state == TargetState::Stopped { TargetState::Paused } else { state };
    json_bytes(json!({"state": legacy.name(), "state.v2": state.name()}))
}

impl ConfigStore for KafkaConfigLog {
    fn snapshot(&self) -> ConfigSnapshot {
        self.replay.locked().snapshot()
    }

    fn put_connector(&self, name: &str, config: &Pairs, target: Option<TargetState>) -> Result<(), ConfigStoreError> {
        let mut records = Vec::new();
        if let Some(target) = target {
            records.push((format!("target-state-{name}"), target_state_value(target)));
        }
        records.push((format!("connector-{name}"), json_bytes(json!({"properties": pairs_to_json(config)}))));
        self.write(&records)
    }

    fn remove_connector(&self, name: &str) -> Result<(), ConfigStoreError> {
        self.write(&[(format!("connector-{name}"), None), (format!("target-state-{name}"), None)])
    }

    fn put_task_configs(&self, name: &str, tasks: &[Pairs]) -> Result<(), ConfigStoreError> {
        let mut records: Vec<(String, Option<Vec<u8>>)> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("task-{name}-{i}"), json_bytes(json!({"properties": pairs_to_json(t)}))))
            .collect();
        records.push((format!("commit-{name}"), json_bytes(json!({"tasks": tasks.len()}))));
        self.write(&records)
    }

    fn put_target_state(&self, name: &str, state: TargetState) -> Result<(), ConfigStoreError> {
        self.write(&[(format!("target-state-{name}"), target_state_value(state))])
    }

    fn put_task_count(&self, name: &str, count: u32) -> Result<(), ConfigStoreError> {
        self.write(&[(format!("{TASK_COUNT_PREFIX}{name}"), json_bytes(json!({"task-count": count})))])
    }

    fn put_session_key(&self, key: &SessionKey) -> Result<(), ConfigStoreError> {
        use base64::Engine;
        let value = json!({
            "key": base64::engine::general_purpose::STANDARD.encode(&key.key),
            "algorithm": key.algorithm,
            "creation-timestamp": key.created_ms,
        });
        self.write(&[(SESSION_KEY.to_string(), json_bytes(value))])
    }

    fn put_logger_level(&self, namespace: &str, level: &str) -> Result<(), ConfigStoreError> {
        // Any worker writes it, as in Kafka Connect: it is not part of the leader's ordered
        // writes, and written twice by a retry it says the same thing twice.
        let writer = LogWriter::without_idempotence(&self.producer_config, &self.topic)
            .map_err(|e| ConfigStoreError::Write(e.to_string()))?;
        let record = (0, format!("{LOGGER_CLUSTER_PREFIX}{namespace}"), json_bytes(json!({"level": level})));
        let written = writer.write(&[record]).map_err(|e| ConfigStoreError::Write(e.to_string()))?;
        self.read_back(written).map_err(|e| ConfigStoreError::Write(e.to_string()))
    }

    fn take_logger_levels(&self) -> Vec<(String, String)> {
        self.replay.locked().logger_levels.drain(..).collect()
    }

    fn changes(&self) -> Arc<ChangeSignal> {
        self.signal.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn apply(replay: &mut ConfigReplay, key: &str, value: &str) -> Result<(), String> {
        replay.apply(key, Some(value.as_bytes()))
    }

    #[test]
    fn replayed_names_follow_the_rule_for_names() {
        let mut replay = ConfigReplay::default();
        let config = r#"{"properties":{"connector.class":"datagen","topic":"t"}}"#;
        assert_eq!(apply(&mut replay, "connector-x", config), Ok(()));
        for key in ["connector-x ", "connector-a\nb", "target-state-x ", "task-x -0", "commit-x\t"] {
            let problem = apply(&mut replay, key, config).unwrap_err();
            assert!(problem.starts_with("connector name"), "{key:?}: {problem}");
        }
        assert_eq!(replay.snapshot().connectors.keys().collect::<Vec<_>>(), ["x"]);
    }

    #[test]
    fn connects_task_count_records_of_fenced_connectors_are_read() {
        let mut replay = ConfigReplay::default();
        let config = r#"{"properties":{"connector.class":"datagen","topic":"t"}}"#;
        assert_eq!(apply(&mut replay, "connector-orders", config), Ok(()));
        let fencing = |replay: &ConfigReplay| replay.snapshot().connectors["orders"].fencing.clone();
        assert_eq!(fencing(&replay), Fencing::default());
        assert_eq!(apply(&mut replay, "task-orders-0", config), Ok(()));
        assert_eq!(apply(&mut replay, "commit-orders", r#"{"tasks":1}"#), Ok(()));
        assert_eq!(fencing(&replay), Fencing { task_count: None, pending: true });
        assert_eq!(apply(&mut replay, "tasks-fencing-orders", r#"{"task-count":3}"#), Ok(()));
        assert_eq!(fencing(&replay), Fencing { task_count: Some(3), pending: false });
        assert_eq!(apply(&mut replay, "commit-orders", r#"{"tasks":1}"#), Ok(()));
        assert_eq!(fencing(&replay), Fencing { task_count: Some(3), pending: true });
        assert_eq!(replay.apply("tasks-fencing-orders", None), Ok(()));
        let problem = apply(&mut replay, "tasks-fencing-orders", r#"{"tasks":3}"#).unwrap_err();
        assert!(problem.contains("task-count"), "{problem}");
        // Not taken for a task config of a connector named "s-fencing".
        assert_eq!(apply(&mut replay, "task-orders-0", config), Ok(()));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any key and value, and values shaped like the topic's own records, replay without a panic.
        #[test]
        fn no_config_record_makes_the_replay_panic(
            prefix in proptest::sample::select(vec!["connector-", "task-", "commit-", "target-state-", "tasks-fencing-", "wharf-cluster-owner", ""]),
            rest in "\\PC{0,12}",
            value in proptest::option::of(proptest::prelude::prop_oneof![
                proptest::prelude::any::<Vec<u8>>(),
                "\\{\"(properties|tasks|task-count|state|state.v2|group.id)\": ?(\\{\\}|\\[\\]|null|-?[0-9]{1,20}|\"[A-Z]{0,8}\"|\\{\"name\":\"[a-z ]{0,3}\"\\})\\}"
                    .prop_map(String::into_bytes),
            ]),
        ) {
            let mut replay = ConfigReplay::default();
            let key = format!("{prefix}{rest}");
            let _ = replay.apply(&key, value.as_deref());
            let _ = replay.apply("commit-a", Some(br#"{"tasks":4294967296}"#));
            let _ = replay.snapshot();
        }
    }

    #[test]
    fn cluster_log_levels_written_before_the_start_are_history_and_later_ones_are_applied() {
        let mut replay = ConfigReplay::default();
        apply(&mut replay, "logger-cluster-wharf::herder", r#"{"level":"DEBUG"}"#).unwrap();
        assert!(replay.logger_levels.is_empty(), "a level from before the start is applied again");
        replay.started = true;
        apply(&mut replay, "logger-cluster-wharf", r#"{"level":"TRACE"}"#).unwrap();
        assert_eq!(replay.logger_levels.drain(..).collect::<Vec<_>>(), [("wharf".to_string(), "TRACE".to_string())]);
        assert!(apply(&mut replay, "logger-cluster-wharf", "{}").unwrap_err().contains("no \"level\""));
        for i in 0..crate::storage::config::MAX_PENDING_LOGGER_LEVELS + 10 {
            apply(&mut replay, &format!("logger-cluster-l{i}"), r#"{"level":"INFO"}"#).unwrap();
        }
        assert_eq!(replay.logger_levels.len(), crate::storage::config::MAX_PENDING_LOGGER_LEVELS);
    }

    #[test]
    fn config_records_replay_into_connectors_and_committed_tasks() {
        let config = r#"{"properties":{"name":"a","connector.class":"datagen","tasks.max":"2"}}"#;
        let task = |n: u32| format!(r#"{{"properties":{{"task":"{n}"}}}}"#);
        // (key, value, the record's problem, then: is `a` there, its task count, its target state)
        #[allow(clippy::type_complexity)] // a table of cases, a tuple a row
        let cases: Vec<(&str, Option<String>, Option<&str>, bool, Option<usize>, TargetState)> = vec![
            ("connector-a", Some(config.into()), None, true, None, TargetState::Started),
            ("task-a-0", Some(task(0)), None, true, None, TargetState::Started),
            (
                "commit-a",
                Some(r#"{"tasks":2}"#.into()),
                Some("commit of 2 tasks without all their configs"),
                true,
                None,
                TargetState::Started,
            ),
            ("task-a-1", Some(task(1)), None, true, None, TargetState::Started),
            ("task-a-0", Some(task(0)), None, true, None, TargetState::Started),
            ("commit-a", Some(r#"{"tasks":2}"#.into()), None, true, Some(2), TargetState::Started),
            // A smaller commit keeps the tasks it names, from those committed before.
            ("commit-a", Some(r#"{"tasks":1}"#.into()), None, true, Some(1), TargetState::Started),
            (
                "target-state-a",
                Some(r#"{"state":"PAUSED","state.v2":"STOPPED"}"#.into()),
                None,
                true,
                Some(1),
                TargetState::Stopped,
            ),
            ("target-state-a", Some(r#"{"state":"PAUSED"}"#.into()), None, true, Some(1), TargetState::Paused),
            (
                "target-state-a",
                Some(r#"{"state":"ASLEEP"}"#.into()),
                Some("unknown state ASLEEP"),
                true,
                Some(1),
                TargetState::Paused,
            ),
            ("task-a-one", Some(task(0)), Some("task number is not a number"), true, Some(1), TargetState::Paused),
            ("commit-a", Some(r#"{"count":1}"#.into()), Some("no \"tasks\" count"), true, Some(1), TargetState::Paused),
            (
                "commit-a",
                Some(r#"{"tasks":4294967297}"#.into()),
                Some("a task count of 4294967297 is out of range"),
                true,
                Some(1),
                TargetState::Paused,
            ),
            (
                "connector-a",
                Some(r#"{"config":{}}"#.into()),
                Some("no \"properties\" object of strings"),
                true,
                Some(1),
                TargetState::Paused,
            ),
            ("connector-a", Some("{".into()), Some("value is not JSON"), true, Some(1), TargetState::Paused),
            ("something-else", Some("{}".into()), Some("unknown key"), true, Some(1), TargetState::Paused),
            ("session-key", Some("{}".into()), Some("no \"key\" string"), true, Some(1), TargetState::Paused),
            (
                "session-key",
                Some(r#"{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1700000000000}"#.into()),
                None,
                true,
                Some(1),
                TargetState::Paused,
            ),
            ("connector-a", None, None, false, None, TargetState::Started),
        ];
        let mut replay = ConfigReplay::default();
        for (i, (key, value, problem, present, tasks, target)) in cases.iter().enumerate() {
            let replayed = replay.apply(key, value.as_deref().map(str::as_bytes));
            match problem {
                None => assert_eq!(replayed, Ok(()), "record {i}"),
                Some(problem) => {
                    assert!(replayed.as_ref().is_err_and(|p| p.starts_with(problem)), "record {i}: {replayed:?}")
                }
            }
            let snapshot = replay.snapshot();
            let entry = snapshot.connectors.get("a");
            assert_eq!(entry.is_some(), *present, "record {i}");
            if let Some(entry) = entry {
                assert_eq!(entry.tasks.as_ref().map(Vec::len), *tasks, "record {i}");
                assert_eq!(entry.target, *target, "record {i}");
            }
        }
        replay.apply(OWNER_KEY, Some(br#"{"group.id":"cluster-1"}"#)).unwrap();
        assert_eq!(replay.owner.as_deref(), Some("cluster-1"));
        let key = replay.snapshot().session_key.unwrap();
        assert_eq!(
            (key.key.as_slice(), key.algorithm.as_str(), key.created_ms),
            (&b"secret"[..], "HmacSHA256", 1_700_000_000_000)
        );
    }

    #[test]
    fn a_replayed_config_that_names_another_connector_is_skipped() {
        let mut replay = ConfigReplay::default();
        let problem = apply(&mut replay, "connector-y", r#"{"properties":{"name":"x","connector.class":"datagen"}}"#)
            .unwrap_err();
        assert!(problem.contains("name another connector (\"x\")"), "{problem}");
        assert!(replay.snapshot().connectors.is_empty());
        let own = r#"{"properties":{"name":"y","connector.class":"datagen"}}"#;
        assert_eq!(apply(&mut replay, "connector-y", own), Ok(()));
    }
}
