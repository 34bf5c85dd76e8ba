//! Source offsets. Keys and values use Kafka Connect's layout — key `["<connector>",{partition}]`,
//! value `{offset}`, both JSON — so that the file here and the offsets topic later hold the same
//! bytes. Sink offsets never come here: they live in Kafka's `__consumer_offsets`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::sync::Unpoisoned;
use wharf_connect::model::OffsetMap;

#[derive(Debug, thiserror::Error)]
pub enum OffsetStoreError {
    #[error("cannot write source offsets to {path}: {source}; check free space and permissions")]
    Write { path: String, source: std::io::Error },
    #[error(
        "cannot write source offsets to topic {topic}: {message}; check that the brokers are reachable and that \
         the worker may write the topic"
    )]
    Kafka { topic: String, message: String },
    #[error("cannot read source offsets from {path}: {message}. Move the file away to start every source from the beginning, or restore it")]
    Read { path: String, message: String },
}

/// Where source offsets are kept. One abstraction; a file-backed and (later) a Kafka-backed
/// implementation.
pub trait OffsetStore: Send + Sync {
    /// The last stored offset of one source partition of a connector.
    fn get(&self, connector: &str, partition: &OffsetMap) -> Option<OffsetMap>;

    /// Stores offsets, all or none.
    fn put(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) -> Result<(), OffsetStoreError>;

    /// Every source partition of a connector with its last stored offset.
    fn list(&self, connector: &str) -> Vec<(OffsetMap, OffsetMap)>;

    /// Stores (`Some`) or forgets (`None`) the offsets of these source partitions, all or none.
    fn change(&self, connector: &str, changes: &[(OffsetMap, Option<OffsetMap>)]) -> Result<(), OffsetStoreError>;

    /// The topic that holds the offsets and its partition count, for a task that writes its
    /// offsets itself, in the transaction of its records; none for a store that is no topic.
    fn topic(&self) -> Option<(String, i32)> {
        None
    }

    /// Offsets a task wrote itself, in a transaction now committed: kept here as `put` keeps
    /// them, without writing them again.
    fn committed(&self, _connector: &str, _offsets: &[(OffsetMap, OffsetMap)]) {}

    /// Stores offsets as a copy that may be lost (a connector's offsets copied to the worker's
    /// store), without waiting for the write; a failure is logged.
    fn copy(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) {
        if let Err(e) = self.put(connector, offsets) {
            tracing::warn!("connector {connector}: could not copy its offsets: {e}");
        }
    }

    /// Waits until everything written to the store so far can be read here: a task that takes
    /// over from another worker then opens on the offsets that one committed last.
    fn catch_up(&self) -> Result<(), OffsetStoreError> {
        Ok(())
    }
}

/// A connector's offsets in a topic of its own (`offsets.storage.topic`) over the worker's, as
/// Kafka Connect's `ConnectorOffsetBackingStore`: a read takes the connector's own first and the
/// worker's where it has none (offsets stored before the connector had a topic of its own); a
/// write goes to the connector's own, then a copy to the worker's, which may fail with a warning.
/// Forgetting goes to the worker's first, where it must succeed, so that no fallback brings a
/// forgotten offset back.
pub struct LayeredOffsetStore {
    own: std::sync::Arc<dyn OffsetStore>,
    global: std::sync::Arc<dyn OffsetStore>,
}

impl LayeredOffsetStore {
    pub fn new(own: std::sync::Arc<dyn OffsetStore>, global: std::sync::Arc<dyn OffsetStore>) -> Self {
        LayeredOffsetStore { own, global }
    }

    /// The copy to the worker's store, whose failure costs only the fallback.
    fn copy_to_worker(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) {
        if let Err(e) = self.global.put(connector, offsets) {
            tracing::warn!(
                "connector {connector}: could not copy its offsets to the worker's offset topic (its own topic has \
                 them): {e}"
            );
        }
    }
}

impl OffsetStore for LayeredOffsetStore {
    fn get(&self, connector: &str, partition: &OffsetMap) -> Option<OffsetMap> {
        self.own.get(connector, partition).or_else(|| self.global.get(connector, partition))
    }

    fn put(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) -> Result<(), OffsetStoreError> {
        self.own.put(connector, offsets)?;
        self.copy_to_worker(connector, offsets);
        Ok(())
    }

    fn list(&self, connector: &str) -> Vec<(OffsetMap, OffsetMap)> {
        let mut merged: BTreeMap<String, (OffsetMap, OffsetMap)> = BTreeMap::new();
        for (partition, offset) in self.global.list(connector).into_iter().chain(self.own.list(connector)) {
            merged.insert(offset_key(connector, &partition), (partition, offset));
        }
        merged.into_values().collect()
    }

    fn change(&self, connector: &str, changes: &[(OffsetMap, Option<OffsetMap>)]) -> Result<(), OffsetStoreError> {
        let forgets: Vec<(OffsetMap, Option<OffsetMap>)> =
            changes.iter().filter(|(_, offset)| offset.is_none()).cloned().collect();
        if !forgets.is_empty() {
            self.global.change(connector, &forgets)?;
        }
        self.own.change(connector, changes)?;
        let stores: Vec<(OffsetMap, OffsetMap)> =
            changes.iter().filter_map(|(partition, offset)| Some((partition.clone(), offset.clone()?))).collect();
        if !stores.is_empty() {
            self.copy_to_worker(connector, &stores);
        }
        Ok(())
    }

    fn topic(&self) -> Option<(String, i32)> {
        self.own.topic()
    }

    fn committed(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) {
        self.own.committed(connector, offsets);
        // After every transaction: the copy is not waited for.
        self.global.copy(connector, offsets);
    }

    fn catch_up(&self) -> Result<(), OffsetStoreError> {
        self.own.catch_up()?;
        self.global.catch_up()
    }
}

/// One offset as a record of the offset topic: the topic's partition for its key (as the Java
/// producer picks it), the key and the value (none forgets the source partition).
pub fn offset_record(
    connector: &str,
    partition: &OffsetMap,
    offset: Option<&OffsetMap>,
    partitions: i32,
) -> (i32, String, Option<Vec<u8>>) {
    let key = offset_key(connector, partition);
    let target = crate::kafka::partitioner::partition_for_key(key.as_bytes(), partitions);
    (target, key, offset.and_then(|o| serde_json::to_vec(&map_to_json(o)).ok()))
}

/// The changes of `put`, as `change` takes them.
pub fn stores<'a>(
    offsets: &'a [(OffsetMap, OffsetMap)],
) -> impl Iterator<Item = (&'a OffsetMap, Option<&'a OffsetMap>)> + Clone + 'a {
    offsets.iter().map(|(partition, offset)| (partition, Some(offset)))
}

/// The changes of `change`, borrowed.
pub fn changes<'a>(
    changes: &'a [(OffsetMap, Option<OffsetMap>)],
) -> impl Iterator<Item = (&'a OffsetMap, Option<&'a OffsetMap>)> + Clone + 'a {
    changes.iter().map(|(partition, offset)| (partition, offset.as_ref()))
}

/// The entries of one connector among stored offsets (offset key JSON → offset value JSON).
pub fn offsets_of(entries: &BTreeMap<String, Value>, connector: &str) -> Vec<(OffsetMap, OffsetMap)> {
    entries
        .iter()
        .filter_map(|(key, value)| {
            let key: Value = serde_json::from_str(key).ok()?;
            (key.get(0)?.as_str()? == connector).then_some(())?;
            Some((map_from_json(key.get(1)?)?, map_from_json(value)?))
        })
        .collect()
}

pub use wharf_connect::model::{map_from_json, map_to_json};

/// Kafka Connect's offset key: `["<connector>",{partition}]`.
pub fn offset_key(connector: &str, partition: &OffsetMap) -> String {
    json!([connector, map_to_json(partition)]).to_string()
}

/// Source offsets in a local file (standalone mode), rewritten whole on every flush through a
/// temporary file and a rename, so a crash at any moment leaves either the old or the new file.
pub struct FileOffsetStore {
    path: PathBuf,
    /// Offset key JSON → offset value JSON.
    entries: Mutex<BTreeMap<String, Value>>,
}

const FILE_FORMAT: &str = "wharf-source-offsets-v1";

impl FileOffsetStore {
    pub fn open(path: &Path) -> Result<Self, OffsetStoreError> {
        let read_error = |message: String| OffsetStoreError::Read { path: path.display().to_string(), message };
        let mut entries = BTreeMap::new();
        match std::fs::read(path) {
            Ok(bytes) => {
                let doc: Value =
                    serde_json::from_slice(&bytes).map_err(|e| read_error(format!("not valid JSON ({e})")))?;
                if doc.get("format").and_then(Value::as_str) != Some(FILE_FORMAT) {
                    return Err(read_error(format!(
                        "not a Wharf offsets file (expected \"format\": \"{FILE_FORMAT}\")"
                    )));
                }
                let listed = doc.get("offsets").and_then(Value::as_array).ok_or_else(|| {
                    read_error(
                        "\"offsets\" is missing or not a list; the file is damaged (restore it, or remove it to \
                         start every source from its beginning)"
                            .into(),
                    )
                })?;
                for entry in listed {
                    match (entry.get("key"), entry.get("value")) {
                        (Some(key), Some(value)) => {
                            entries.insert(key.to_string(), value.clone());
                        }
                        _ => return Err(read_error(format!("entry without key or value: {entry}"))),
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(read_error(e.to_string())),
        }
        Ok(FileOffsetStore { path: path.to_path_buf(), entries: Mutex::new(entries) })
    }

    fn write(&self, entries: &BTreeMap<String, Value>) -> std::io::Result<()> {
        let offsets: Vec<Value> = entries
            .iter()
            .map(|(key, value)| {
                // Keys are JSON this store wrote; one that were not would be kept as text.
                let key: Value = serde_json::from_str(key).unwrap_or_else(|_| Value::String(key.clone()));
                json!({"key": key, "value": value})
            })
            .collect();
        let doc = json!({"format": FILE_FORMAT, "offsets": offsets});
        let dir = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let temp = self.path.with_extension(format!("tmp{}", std::process::id()));
        {
            // A new file, never one planted under the temporary name (a link is not followed).
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::remove_file(&temp);
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
            serde_json::to_writer_pretty(&mut file, &doc)?;
            file.write_all(b"\n")?;
            file.sync_all()?;
        }
        std::fs::rename(&temp, &self.path)?;
        // The rename is durable only once the folder itself is synced.
        std::fs::File::open(dir)?.sync_all()
    }
}

impl FileOffsetStore {
    /// Applies the changes to a copy, writes it, and only then makes it current.
    fn apply<'a>(
        &self,
        connector: &str,
        changes: impl Iterator<Item = (&'a OffsetMap, Option<&'a OffsetMap>)>,
    ) -> Result<(), OffsetStoreError> {
        let mut entries = self.entries.locked();
        let mut updated = entries.clone();
        for (partition, offset) in changes {
            let key = offset_key(connector, partition);
            match offset {
                Some(offset) => updated.insert(key, map_to_json(offset)),
                None => updated.remove(&key),
            };
        }
        self.write(&updated)
            .map_err(|source| OffsetStoreError::Write { path: self.path.display().to_string(), source })?;
        *entries = updated;
        Ok(())
    }
}

impl OffsetStore for FileOffsetStore {
    fn get(&self, connector: &str, partition: &OffsetMap) -> Option<OffsetMap> {
        let entries = self.entries.locked();
        entries.get(&offset_key(connector, partition)).and_then(map_from_json)
    }

    fn put(&self, connector: &str, offsets: &[(OffsetMap, OffsetMap)]) -> Result<(), OffsetStoreError> {
        self.apply(connector, stores(offsets))
    }

    fn list(&self, connector: &str) -> Vec<(OffsetMap, OffsetMap)> {
        offsets_of(&self.entries.locked(), connector)
    }

    fn change(&self, connector: &str, changes: &[(OffsetMap, Option<OffsetMap>)]) -> Result<(), OffsetStoreError> {
        self.apply(connector, self::changes(changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wharf_connect::model::Scalar;

    fn partition(file: &str) -> OffsetMap {
        vec![("filename".into(), Scalar::Text(file.into()))]
    }

    #[test]
    fn key_has_kafka_connects_layout() {
        assert_eq!(offset_key("src", &partition("/a")), r#"["src",{"filename":"/a"}]"#);
    }

    #[test]
    fn offsets_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("offsets.json");
        let store = FileOffsetStore::open(&path).unwrap();
        let offset = vec![("position".to_string(), Scalar::Integer(42))];
        store.put("src", &[(partition("/a"), offset.clone())]).unwrap();
        let reopened = FileOffsetStore::open(&path).unwrap();
        assert_eq!(reopened.get("src", &partition("/a")), Some(offset.clone()));
        assert_eq!(reopened.get("other", &partition("/a")), None);
        assert_eq!(reopened.list("src"), vec![(partition("/a"), offset)]);
        assert_eq!(reopened.list("other"), Vec::new());
        reopened.change("src", &[(partition("/a"), None)]).unwrap();
        assert_eq!(FileOffsetStore::open(&path).unwrap().get("src", &partition("/a")), None);
    }

    #[test]
    fn a_connectors_own_offsets_come_first_and_the_workers_are_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let own = std::sync::Arc::new(FileOffsetStore::open(&dir.path().join("own.json")).unwrap());
        let global = std::sync::Arc::new(FileOffsetStore::open(&dir.path().join("global.json")).unwrap());
        let at = |n: i64| vec![("position".to_string(), Scalar::Integer(n))];
        // Stored before the connector had a topic of its own.
        global.put("src", &[(partition("/a"), at(10)), (partition("/b"), at(20))]).unwrap();
        let layered = LayeredOffsetStore::new(own.clone(), global.clone());
        assert_eq!(layered.get("src", &partition("/a")), Some(at(10)));
        layered.put("src", &[(partition("/a"), at(11))]).unwrap();
        assert_eq!(own.get("src", &partition("/a")), Some(at(11)));
        assert_eq!(global.get("src", &partition("/a")), Some(at(11)), "the copy");
        own.put("src", &[(partition("/a"), at(12))]).unwrap();
        assert_eq!(layered.get("src", &partition("/a")), Some(at(12)), "the connector's own wins");
        assert_eq!(layered.list("src"), vec![(partition("/a"), at(12)), (partition("/b"), at(20))]);
        // Forgotten in both, so that the fallback brings nothing back.
        layered.change("src", &[(partition("/b"), None)]).unwrap();
        assert_eq!(layered.get("src", &partition("/b")), None);
        assert_eq!(global.get("src", &partition("/b")), None);
    }

    #[test]
    fn a_corrupt_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("offsets.json");
        std::fs::write(&path, "{not json").unwrap();
        let err = FileOffsetStore::open(&path).err().unwrap().to_string();
        assert!(err.contains("offsets.json") && err.contains("not valid JSON"), "{err}");
        // Well-formed JSON of the wrong shape is refused too, not read as "no offsets".
        std::fs::write(&path, r#"{"format": "wharf-source-offsets-v1", "offsets": {}}"#).unwrap();
        let err = FileOffsetStore::open(&path).err().unwrap().to_string();
        assert!(err.contains("\"offsets\" is missing or not a list"), "{err}");
    }
}
