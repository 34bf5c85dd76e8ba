//! The distributed worker's stores, each on a compacted topic, with Kafka Connect's keys and
//! JSON values so that people's tools and habits carry over:
//! - config topic: `connector-<name>` {"properties"}, `task-<name>-<n>` {"properties"},
//!   `commit-<name>` {"tasks"}, `target-state-<name>` {"state","state.v2"}; tombstones delete.
//! - offset topic: key `["<connector>",{partition}]`, value the offset map.
//! - status topic: `status-connector-<name>`, `status-task-<name>-<n>` with
//!   {"state","trace","worker_id","generation"}.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientConfig, ClientContext};
use serde_json::{json, Value};

use super::config::{ChangeSignal, ConfigSnapshot, ConfigStore, ConfigStoreError, ConnectorEntry, Pairs, TargetState};
use super::offsets::{self, map_from_json, map_to_json, offset_key, OffsetStore, OffsetStoreError};
use super::status::{upsert_connector, ConnectorStatus, State, Status, StatusStore};
use crate::config::connector::check_name;
use crate::kafka::log::{KafkaLog, LogRecord};
use crate::kafka::partitioner::partition_for_key;
use crate::model::{ConnectorKind, OffsetMap};
use crate::sync::Unpoisoned;

/// How long a write may wait for the broker's acknowledgement, and a read for the log's end.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// Remembers the first failed delivery since the last check, and the highest offset Kafka gave
/// a delivered record.
#[derive(Default)]
pub struct WriteTracker {
    failure: Mutex<Option<String>>,
    last_offset: Mutex<Option<i64>>,
}

impl ClientContext for WriteTracker {}

impl ProducerContext for WriteTracker {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        use rdkafka::Message;
        match result {
            Ok(message) => {
                let mut last = self.last_offset.locked();
                *last = Some(last.map_or(message.offset(), |l| l.max(message.offset())));
            }
            Err((e, message)) => {
                tracing::warn!("Kafka did not accept a write to topic {}: {e}", message.topic());
                self.failure.locked().get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// Writes keyed records to one topic and waits for the broker's acknowledgement.
pub struct LogWriter {
    topic: String,
    producer: ThreadedProducer<WriteTracker>,
}

impl LogWriter {
    pub fn new(producer_config: &ClientConfig, topic: &str) -> anyhow::Result<Self> {
        Self::open(producer_config, topic, true)
    }

    /// A writer for records whose duplicates do no harm. An idempotent producer first needs a
    /// producer id, which a producer that just started waits half a second for.
    pub fn without_idempotence(producer_config: &ClientConfig, topic: &str) -> anyhow::Result<Self> {
        Self::open(producer_config, topic, false)
    }

    fn open(producer_config: &ClientConfig, topic: &str, idempotent: bool) -> anyhow::Result<Self> {
        let mut config = producer_config.clone();
        config.set("enable.idempotence", idempotent.to_string()).set("acks", "all").set("linger.ms", "0");
        let producer = config
            .create_with_context(WriteTracker::default())
            .map_err(|e| anyhow::anyhow!("cannot create a producer for topic {topic}: {e}"))?;
        Ok(LogWriter { topic: topic.to_string(), producer })
    }

    /// Hands a record to the producer without waiting; a failed delivery is logged.
    pub fn send(&self, partition: i32, key: &str, value: Option<&[u8]>) -> Result<(), String> {
        let mut record: BaseRecord<'_, str, [u8], ()> = BaseRecord::to(&self.topic).key(key).partition(partition);
        if let Some(value) = value {
            record = record.payload(value);
        }
        self.producer.send(record).map_err(|(e, _)| format!("cannot write {key} to topic {}: {e}", self.topic))
    }

    /// Writes the records in order and returns once all are acknowledged, with the highest
    /// offset Kafka gave them (none if it did not say).
    pub fn write(&self, records: &[(i32, String, Option<Vec<u8>>)]) -> Result<Option<i64>, String> {
        self.producer.context().last_offset.locked().take();
        for (partition, key, value) in records {
            self.send(*partition, key, value.as_deref())?;
        }
        crate::kafka::flush(&self.producer, STORE_TIMEOUT).map_err(|e| {
            format!("topic {} did not acknowledge a write within {} s: {e}", self.topic, STORE_TIMEOUT.as_secs())
        })?;
        match self.producer.context().failure.locked().take() {
            Some(failure) => Err(format!("topic {} refused a write: {failure}", self.topic)),
            None => Ok(*self.producer.context().last_offset.locked()),
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // Records sent without waiting (statuses) still reach the topic on the way out.
        let _ = crate::kafka::flush(&self.producer, Duration::from_secs(5));
    }
}

/// Writes the config topic in transactions under one transactional id per cluster, so that
/// when a new leader opens its writer, the broker fences the old leader's: a worker that lost
/// leadership cannot write once its successor could.
struct FencedWriter {
    topic: String,
    producer: ThreadedProducer<WriteTracker>,
}

/// The transactional id of a cluster's config writer (Kafka Connect's name for it).
pub fn config_transactional_id(group_id: &str) -> String {
    format!("connect-cluster-{group_id}")
}

impl FencedWriter {
    fn open(producer_config: &ClientConfig, topic: &str, transactional_id: &str) -> anyhow::Result<Self> {
        let mut config = producer_config.clone();
        config
            .set("transactional.id", transactional_id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "0");
        let producer: ThreadedProducer<WriteTracker> = config
            .create_with_context(WriteTracker::default())
            .map_err(|e| anyhow::anyhow!("cannot create the config topic writer: {e}"))?;
        producer.init_transactions(STORE_TIMEOUT).map_err(|e| {
            anyhow::anyhow!(
                "cannot start the config topic writer (transactional.id {transactional_id}) within {} s: {e}",
                STORE_TIMEOUT.as_secs()
            )
        })?;
        Ok(FencedWriter { topic: topic.to_string(), producer })
    }

    /// Writes the records in one transaction and returns the offset of the last one (none if
    /// Kafka did not say). `Err(true)` means this writer was fenced.
    fn write(&self, records: &[(String, Option<Vec<u8>>)]) -> Result<Option<i64>, (bool, String)> {
        let fail = |e: rdkafka::error::KafkaError| {
            let fenced = matches!(&e, rdkafka::error::KafkaError::Transaction(t) if t.is_fatal());
            (fenced, format!("topic {}: {e}", self.topic))
        };
        self.producer.context().last_offset.locked().take();
        self.producer.begin_transaction().map_err(fail)?;
        for (key, value) in records {
            let mut record: BaseRecord<'_, str, [u8], ()> = BaseRecord::to(&self.topic).key(key.as_str()).partition(0);
            if let Some(value) = value {
                record = record.payload(value);
            }
            if let Err((e, _)) = self.producer.send(record) {
                let _ = self.producer.abort_transaction(STORE_TIMEOUT);
                return Err(fail(e));
            }
        }
        // Flushed first: the commit's own flush would then find nothing outstanding (it sleeps in
        // steps of 100 ms otherwise, see `kafka::flush`).
        if let Err(e) = crate::kafka::flush(&self.producer, STORE_TIMEOUT)
            .and_then(|()| self.producer.commit_transaction(STORE_TIMEOUT))
        {
            let failure = fail(e);
            if !failure.0 {
                let _ = self.producer.abort_transaction(STORE_TIMEOUT);
            }
            return Err(failure);
        }
        match self.producer.context().failure.locked().take() {
            Some(failure) => Err((false, format!("topic {} refused a write: {failure}", self.topic))),
            None => Ok(*self.producer.context().last_offset.locked()),
        }
    }
}

fn json_bytes(value: Value) -> Option<Vec<u8>> {
    Some(value.to_string().into_bytes())
}

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
    /// Task configs written but not yet committed.
    pending: BTreeMap<String, BTreeMap<u32, Pairs>>,
    /// The `group.id` of the cluster that owns the topic, from its marker record.
    owner: Option<String>,
}

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
        } else if let Some(name) = key.strip_prefix("connector-") {
            check_name(name)?;
            match parsed {
                None => {
                    self.configs.remove(name);
                    self.targets.remove(name);
                    self.tasks.remove(name);
                    self.pending.remove(name);
                }
                Some(v) => {
                    let pairs = pairs_from_json(&v["properties"]).ok_or("no \"properties\" object of strings")?;
                    // The key names the connector; a config that names another is not its config.
                    if let Some((_, given)) = pairs.iter().rev().find(|(k, _)| k == "name") {
                        if given != name {
                            return Err(format!("its properties name another connector ({given:?})"));
                        }
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
        } else if let Some(rest) = key.strip_prefix("task-") {
            let (name, id) = rest.rsplit_once('-').ok_or("no task number")?;
            let id: u32 = id.parse().map_err(|_| "task number is not a number")?;
            check_name(name)?;
            if let Some(v) = parsed {
                let pairs = pairs_from_json(&v["properties"]).ok_or("no \"properties\" object of strings")?;
                self.pending.entry(name.to_string()).or_default().insert(id, pairs);
            }
        } else if let Some(name) = key.strip_prefix("commit-") {
            check_name(name)?;
            if let Some(v) = parsed {
                let count = v["tasks"].as_u64().ok_or("no \"tasks\" count")? as u32;
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
                };
                (name.clone(), entry)
            })
            .collect();
        ConfigSnapshot { connectors }
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
                Err((true, e)) => {
                    writer.take();
                    return Err(ConfigStoreError::NotLeader(format!(
                        "another worker has become the leader of the group since this one was elected ({e}); retry"
                    )));
                }
                Err((false, e)) => return Err(ConfigStoreError::Write(e)),
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

    fn changes(&self) -> Arc<ChangeSignal> {
        self.signal.clone()
    }
}

/// Source offsets on the offset topic.
pub struct KafkaOffsetStore {
    topic: String,
    partitions: i32,
    /// Offset key JSON → offset value JSON.
    entries: Arc<Mutex<BTreeMap<String, Value>>>,
    writer: LogWriter,
    _log: KafkaLog,
}

impl KafkaOffsetStore {
    /// Reads the whole topic before returning: no source task starts on stale offsets.
    pub fn start(
        producer: &ClientConfig,
        consumer: &ClientConfig,
        topic: &str,
        partitions: i32,
    ) -> anyhow::Result<Self> {
        let entries: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
        let log = {
            let (entries, topic_name) = (entries.clone(), topic.to_string());
            KafkaLog::start(consumer, topic, partitions, move |record: LogRecord<'_>| {
                let Some(key) = record.key.map(|k| String::from_utf8_lossy(k).into_owned()) else { return };
                let mut entries = entries.locked();
                match record.value.map(serde_json::from_slice::<Value>) {
                    None => {
                        entries.remove(&key);
                    }
                    Some(Ok(value)) => {
                        entries.insert(key, value);
                    }
                    Some(Err(e)) => {
                        tracing::warn!("skipping offset record {key} in topic {topic_name}: value is not JSON ({e})")
                    }
                }
            })?
        };
        log.read_to_end(STORE_TIMEOUT)?;
        let writer = LogWriter::new(producer, topic)?;
        Ok(KafkaOffsetStore { topic: topic.to_string(), partitions, entries, writer, _log: log })
    }
}

impl KafkaOffsetStore {
    /// Writes the changes (a tombstone to forget a partition: compaction drops the key and every
    /// reader forgets it), then applies them here.
    fn apply<'a>(
        &self,
        connector: &str,
        changes: impl Iterator<Item = (&'a OffsetMap, Option<&'a OffsetMap>)> + Clone,
    ) -> Result<(), OffsetStoreError> {
        let records: Vec<(i32, String, Option<Vec<u8>>)> = changes
            .clone()
            .map(|(partition, offset)| {
                let key = offset_key(connector, partition);
                let target = partition_for_key(key.as_bytes(), self.partitions);
                (target, key, offset.and_then(|o| json_bytes(map_to_json(o))))
            })
            .collect();
        self.writer
            .write(&records)
            .map_err(|message| OffsetStoreError::Kafka { topic: self.topic.clone(), message })?;
        let mut entries = self.entries.locked();
        for (partition, offset) in changes {
            let key = offset_key(connector, partition);
            match offset {
                Some(offset) => entries.insert(key, map_to_json(offset)),
                None => entries.remove(&key),
            };
        }
        Ok(())
    }
}

impl OffsetStore for KafkaOffsetStore {
    fn get(&self, connector: &str, partition: &OffsetMap) -> Option<OffsetMap> {
        self.entries.locked().get(&offset_key(connector, partition)).and_then(map_from_json)
    }

    fn put(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) -> Result<(), OffsetStoreError> {
        self.apply(connector, offsets::stores(offsets))
    }

    fn list(&self, connector: &str) -> Vec<(OffsetMap, OffsetMap)> {
        offsets::offsets_of(&self.entries.locked(), connector)
    }

    fn change(&self, connector: &str, changes: &[(OffsetMap, Option<OffsetMap>)]) -> Result<(), OffsetStoreError> {
        self.apply(connector, offsets::changes(changes))
    }
}

/// Statuses on the status topic. This worker's statuses enter the view as it writes them; when
/// the topic echoes them back they are skipped (`echoes` counts the writes still to come back per
/// key), so a late echo never undoes a newer state. The topic supplies everything else.
pub struct KafkaStatusStore {
    partitions: i32,
    view: Arc<Mutex<BTreeMap<String, ConnectorStatus>>>,
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
    json_bytes(json!({
        "state": state_name(status.state),
        "trace": status.trace,
        "worker_id": status.worker_id,
        "generation": status.generation,
    }))
}

fn apply_status(view: &mut BTreeMap<String, ConnectorStatus>, key: &str, value: Option<&[u8]>) -> Result<(), String> {
    let status = match value {
        None => None,
        Some(bytes) => {
            let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("value is not JSON ({e})"))?;
            let state = v["state"].as_str().and_then(state_from_name).ok_or("no known \"state\"")?;
            let worker_id = v["worker_id"].as_str().unwrap_or_default().to_string();
            let generation = v["generation"].as_i64().unwrap_or(0) as i32;
            Some(Status { state, worker_id, trace: v["trace"].as_str().map(String::from), generation })
        }
    };
    if let Some(name) = key.strip_prefix("status-connector-") {
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

/// The view of a connector whose own status has not arrived yet, only its tasks'.
fn awaiting_connector(name: &str) -> ConnectorStatus {
    ConnectorStatus {
        name: name.to_string(),
        kind: None,
        connector: Status { state: State::Unassigned, worker_id: String::new(), trace: None, generation: -1 },
        tasks: BTreeMap::new(),
    }
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
        let echoes: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
        let log = {
            let (view, echoes, topic_name) = (view.clone(), echoes.clone(), topic.to_string());
            KafkaLog::start(consumer, topic, partitions, move |record: LogRecord<'_>| {
                let key = record.key.map(String::from_utf8_lossy).unwrap_or_default();
                if take_echo(&echoes, &key) {
                    return;
                }
                let result = apply_status(&mut view.locked(), &key, record.value);
                if let Err(problem) = result {
                    tracing::warn!("skipping status record {key:?} in topic {topic_name}: {problem}");
                }
            })?
        };
        log.read_to_end(STORE_TIMEOUT)?;
        let writer = LogWriter::new(producer, topic)?;
        Ok(KafkaStatusStore { partitions, view, echoes, writer, _log: log })
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any key and value, and values shaped like the topic's own records, replay without a panic.
        #[test]
        fn no_config_record_makes_the_replay_panic(
            prefix in proptest::sample::select(vec!["connector-", "task-", "commit-", "target-state-", "wharf-cluster-owner", ""]),
            rest in "\\PC{0,12}",
            value in proptest::option::of(proptest::prelude::prop_oneof![
                proptest::prelude::any::<Vec<u8>>(),
                "\\{\"(properties|tasks|state|state.v2|group.id)\": ?(\\{\\}|\\[\\]|null|-?[0-9]{1,20}|\"[A-Z]{0,8}\"|\\{\"name\":\"[a-z ]{0,3}\"\\})\\}"
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
