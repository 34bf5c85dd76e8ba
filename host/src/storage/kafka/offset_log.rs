//! Source offsets on the offset topic.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rdkafka::ClientConfig;
use serde_json::Value;

use crate::kafka::log::{KafkaLog, LogRecord};
use crate::storage::offsets::{self, map_from_json, map_to_json, offset_key, OffsetStore, OffsetStoreError};
use crate::sync::Unpoisoned;
use wharf_connect::model::OffsetMap;

use super::writer::{LogWriter, STORE_TIMEOUT};

/// Source offsets on the offset topic.
pub struct KafkaOffsetStore {
    topic: String,
    partitions: i32,
    /// Offset key JSON → offset value JSON.
    entries: Arc<Mutex<BTreeMap<String, Value>>>,
    writer: LogWriter,
    log: KafkaLog,
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
                if let Err(problem) = replay_offset(&mut entries.locked(), &key, record.value) {
                    tracing::warn!("skipping offset record {key} in topic {topic_name}: {problem}")
                }
            })?
        };
        log.read_to_end(STORE_TIMEOUT)?;
        let writer = LogWriter::new(producer, topic)?;
        Ok(KafkaOffsetStore { topic: topic.to_string(), partitions, entries, writer, log })
    }
}

/// One record of the offset topic: a value stores the offset under its key, a tombstone forgets
/// it; a value that is not JSON is refused and changes nothing.
fn replay_offset(entries: &mut BTreeMap<String, Value>, key: &str, value: Option<&[u8]>) -> Result<(), String> {
    match value.map(serde_json::from_slice::<Value>) {
        None => {
            entries.remove(key);
        }
        Some(Ok(value)) => {
            entries.insert(key.to_string(), value);
        }
        Some(Err(e)) => return Err(format!("value is not JSON ({e})")),
    }
    Ok(())
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
            .map(|(partition, offset)| offsets::offset_record(connector, partition, offset, self.partitions))
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

    fn topic(&self) -> Option<(String, i32)> {
        Some((self.topic.clone(), self.partitions))
    }

    fn committed(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) {
        let mut entries = self.entries.locked();
        for (partition, offset) in offsets {
            entries.insert(offset_key(connector, partition), map_to_json(offset));
        }
    }

    fn copy(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) {
        for (partition, offset) in offsets {
            let (target, key, value) = offsets::offset_record(connector, partition, Some(offset), self.partitions);
            if let Err(e) = self.writer.send(target, &key, value.as_deref()) {
                tracing::warn!("connector {connector}: could not copy an offset to topic {}: {e}", self.topic);
                return;
            }
        }
        self.committed(connector, offsets);
    }

    fn catch_up(&self) -> Result<(), OffsetStoreError> {
        self.log.read_to_end(STORE_TIMEOUT).map_err(|e| OffsetStoreError::Kafka {
            topic: self.topic.clone(),
            message: format!("cannot read the offsets committed so far: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_records_replay_in_order() {
        let key = r#"["orders",{"filename":"/data/in.txt"}]"#;
        // (value, what is stored under the key afterwards, the record's problem)
        let cases: &[(Option<&str>, Option<&str>, Option<&str>)] = &[
            (Some(r#"{"position":10}"#), Some(r#"{"position":10}"#), None),
            (Some(r#"{"position":20}"#), Some(r#"{"position":20}"#), None),
            (Some("not json"), Some(r#"{"position":20}"#), Some("value is not JSON")),
            (None, None, None),
            (Some(r#"{"position":5}"#), Some(r#"{"position":5}"#), None),
        ];
        let mut entries = BTreeMap::new();
        for (i, (value, stored, problem)) in cases.iter().enumerate() {
            let replayed = replay_offset(&mut entries, key, value.map(str::as_bytes));
            match problem {
                None => assert_eq!(replayed, Ok(()), "record {i}"),
                Some(problem) => assert!(replayed.is_err_and(|p| p.starts_with(problem)), "record {i}"),
            }
            let wanted: Option<Value> = stored.map(|s| serde_json::from_str(s).unwrap());
            assert_eq!(entries.get(key), wanted.as_ref(), "record {i}");
        }
    }
}
