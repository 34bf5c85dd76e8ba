//! The REST API's answers, typed, in Kafka Connect's shapes and under its entity names
//! (`org.apache.kafka.connect.runtime.rest.entities`). Handlers build these; serde writes the
//! JSON, so a shape is defined once.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::herder::HIDDEN;
use wharf_connect::model::ConnectorKind;
use wharf_connect::model::{ConnectorStatus, Pairs, State, Status, TargetState};

/// Every error: `{"error_code": 404, "message": "…"}`.
#[derive(Serialize)]
pub(super) struct ErrorMessage {
    pub error_code: u16,
    pub message: String,
}

/// `GET /`: Connect's three fields, `version` being the Kafka Connect version whose REST API
/// this worker answers (clients gate features on it), and Wharf's own version beside them.
#[derive(Serialize)]
pub(super) struct ServerInfo {
    pub version: &'static str,
    pub commit: &'static str,
    pub kafka_cluster_id: String,
    pub wharf_version: &'static str,
}

/// The Kafka Connect release whose REST API and config surface Wharf follows.
pub(super) const KAFKA_CONNECT_VERSION: &str = "4.1.1";

/// A connector's config as REST shows it: values of its plugin's PASSWORD keys hidden.
pub(super) type ConfigMap = BTreeMap<String, String>;

pub(super) fn shown_config(pairs: &[(String, String)], secrets: &[String]) -> ConfigMap {
    pairs.iter().map(|(k, v)| (k.clone(), if secrets.contains(k) { HIDDEN.to_string() } else { v.clone() })).collect()
}

/// `{"connector": "…", "task": 0}`, Connect's `ConnectorTaskId`.
pub(super) use wharf_connect::model::TaskId as ConnectorTaskId;

/// `GET /connectors/{name}`, and the answer to a create or a config change.
#[derive(Serialize)]
pub(super) struct ConnectorInfo {
    pub name: String,
    pub config: ConfigMap,
    pub tasks: Vec<ConnectorTaskId>,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// One entry of `GET /connectors/{name}/tasks`.
#[derive(Serialize)]
pub(super) struct TaskInfo {
    pub id: ConnectorTaskId,
    pub config: ConfigMap,
}

/// The state of a connector or a task; `trace` only when it failed with one (or, Wharf's own:
/// UNASSIGNED, waits for its plugin to finish compiling; RUNNING, its plugin's progress line),
/// and
/// `records_skipped` (Wharf's own field) only when a task skipped records under
/// `errors.tolerance=all`.
#[derive(Serialize)]
pub(super) struct StateInfo {
    pub state: State,
    pub worker_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub records_skipped: u64,
    /// Automatic restarts in a row of a task (`auto.restart.*`), Wharf's own.
    #[serde(skip_serializing_if = "is_zero")]
    pub auto_restarts: u32,
    /// The plugin's version (Connect 4.1), when the worker that wrote the state had it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

/// The trace, with a last line saying how often the task was restarted automatically in a row.
fn with_auto_restarts(status: &Status) -> Option<String> {
    if status.auto_restarts == 0 {
        return status.trace.clone();
    }
    let line = format!("Restarted automatically {} time(s) in a row (auto.restart.*).", status.auto_restarts);
    Some(match &status.trace {
        Some(trace) => format!("{trace}\n{line}"),
        None => line,
    })
}

impl From<&Status> for StateInfo {
    fn from(status: &Status) -> Self {
        StateInfo {
            state: status.state,
            worker_id: status.worker_id.clone(),
            trace: with_auto_restarts(status),
            records_skipped: status.records_skipped,
            auto_restarts: status.auto_restarts,
            version: status.version.clone(),
        }
    }
}

#[derive(Serialize)]
pub(super) struct TaskState {
    pub id: u32,
    #[serde(flatten)]
    pub state: StateInfo,
}

/// `GET /connectors/{name}/status`.
#[derive(Serialize)]
pub(super) struct ConnectorStateInfo {
    pub name: String,
    pub connector: StateInfo,
    pub tasks: Vec<TaskState>,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

impl From<ConnectorStatus> for ConnectorStateInfo {
    fn from(status: ConnectorStatus) -> Self {
        ConnectorStateInfo {
            name: status.name,
            connector: StateInfo::from(&status.connector),
            tasks: status.tasks.iter().map(|(id, task)| TaskState { id: *id, state: StateInfo::from(task) }).collect(),
            kind: kind_name(status.kind),
        }
    }
}

/// One connector of `GET /connectors?expand=status&expand=info`: what was asked for.
#[derive(Serialize, Default)]
pub(super) struct ConnectorExpansions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ConnectorStateInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<ConnectorInfo>,
}

/// `GET /health`: `healthy`, `starting` or `unhealthy`, with what that means.
#[derive(Serialize)]
pub(super) struct WorkerStatus {
    pub status: &'static str,
    pub message: String,
}

/// `source`, `sink`, or `unknown` when the plugin is not loaded here.
pub(super) fn kind_name(kind: Option<ConnectorKind>) -> &'static str {
    kind.map_or("unknown", ConnectorKind::name)
}

/// `{"message": "…"}`: the answer to an offsets change.
#[derive(Serialize)]
pub(super) struct Message {
    pub message: String,
}

/// `GET /connectors/{name}/offsets`.
#[derive(Serialize)]
pub(super) struct ConnectorOffsets {
    pub offsets: Vec<ConnectorOffset>,
}

/// One source partition, or one sink topic partition, with its offset.
#[derive(Serialize)]
pub(super) struct ConnectorOffset {
    pub partition: serde_json::Value,
    pub offset: serde_json::Value,
}

impl ConnectorOffset {
    /// A sink's offset in Kafka Connect's shape: the partition as `kafka_topic` and
    /// `kafka_partition`, the offset as `kafka_offset`.
    pub(super) fn of_sink(topic: String, partition: i32, offset: i64) -> Self {
        ConnectorOffset {
            partition: serde_json::json!({"kafka_topic": topic, "kafka_partition": partition}),
            offset: serde_json::json!({"kafka_offset": offset}),
        }
    }
}

/// One entry of `GET /connector-plugins`; a file that failed to load (with
/// `connectorsOnly=false`) has type `invalid`, no version and its `error`.
#[derive(Serialize)]
pub(super) struct PluginInfo {
    pub class: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The definition of one config key, as `GET /connector-plugins/{plugin}/config` and the
/// validate answer show it.
#[derive(Serialize)]
pub(super) struct ConfigKeyInfo {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub required: bool,
    pub default_value: Option<String>,
    pub importance: &'static str,
    pub documentation: String,
    pub group: Option<String>,
    pub width: &'static str,
    pub display_name: String,
    pub dependents: Vec<String>,
    pub order: usize,
}

impl ConfigKeyInfo {
    /// `key` as the `order`-th (from 1) of its list.
    pub(super) fn of(key: &wharf_connect::model::ConfigKey, order: usize) -> Self {
        ConfigKeyInfo {
            name: key.name.clone(),
            kind: key.type_name,
            required: key.required,
            default_value: key.default_value.clone(),
            importance: key.importance,
            documentation: key.documentation.clone(),
            group: key.group.clone(),
            width: "NONE",
            display_name: key.name.clone(),
            dependents: Vec::new(),
            order,
        }
    }
}

/// A key's value in a validate answer, with what is wrong with it.
#[derive(Serialize)]
pub(super) struct ConfigValueInfo {
    pub name: String,
    pub value: Option<String>,
    pub recommended_values: Vec<String>,
    pub errors: Vec<String>,
    pub visible: bool,
}

#[derive(Serialize)]
pub(super) struct ConfigInfo {
    pub definition: ConfigKeyInfo,
    pub value: ConfigValueInfo,
}

/// `PUT /connector-plugins/{plugin}/config/validate`.
#[derive(Serialize)]
pub(super) struct ConfigInfos {
    pub name: String,
    pub error_count: usize,
    pub groups: Vec<String>,
    pub configs: Vec<ConfigInfo>,
}

// ---- Requests: each endpoint's body, read and checked in one place. ----

/// A request body without the shape its endpoint takes; the message says the shape.
#[derive(Debug, PartialEq)]
pub struct BadRequest(pub String);

fn json_of(body: &[u8]) -> Result<serde_json::Value, BadRequest> {
    serde_json::from_slice(body).map_err(|e| BadRequest(format!("request body is not valid JSON: {e}")))
}

/// A connector config as requests carry it (`PUT /connectors/{name}/config`, `validate`, a
/// create's `config`): a JSON object whose values are strings, numbers or booleans, each taken
/// as its text.
#[derive(Debug, PartialEq)]
pub(super) struct ConfigBody(pub Pairs);

impl ConfigBody {
    pub(super) fn parse(body: &[u8]) -> Result<Self, BadRequest> {
        Self::from_json(&json_of(body)?)
    }

    pub(super) fn from_json(value: &serde_json::Value) -> Result<Self, BadRequest> {
        let object = value
            .as_object()
            .ok_or_else(|| BadRequest("the connector config must be a JSON object of strings".into()))?;
        object
            .iter()
            .map(|(k, v)| Self::value_text(k, v).map(|text| (k.clone(), text)))
            .collect::<Result<Pairs, BadRequest>>()
            .map(ConfigBody)
    }

    /// A config value as its text: a string as it is, a number or boolean as written.
    fn value_text(key: &str, value: &serde_json::Value) -> Result<String, BadRequest> {
        use serde_json::Value;
        match value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            _ => Err(BadRequest(format!("config value of \"{key}\" must be a string, number or boolean"))),
        }
    }
}

/// `POST /connectors`: `{"name": "…", "config": {…}, "initial_state": "RUNNING" | "PAUSED" |
/// "STOPPED"}`, the state optional (KIP-980).
#[derive(Debug, PartialEq)]
pub(super) struct CreateConnector {
    pub name: String,
    pub config: Pairs,
    pub initial_state: Option<TargetState>,
}

impl CreateConnector {
    pub(super) fn parse(body: &[u8]) -> Result<Self, BadRequest> {
        let request = json_of(body)?;
        let name = request["name"]
            .as_str()
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| BadRequest("the request needs a \"name\": {\"name\": \"...\", \"config\": {...}}".into()))?
            .to_string();
        let Some(config) = request.get("config") else {
            return Err(BadRequest(
                "the request needs a \"config\" object: {\"name\": \"...\", \"config\": {...}}".into(),
            ));
        };
        let initial_state = match &request["initial_state"] {
            serde_json::Value::Null => None,
            given => Some(match given.as_str().map(str::to_ascii_uppercase).as_deref() {
                Some("RUNNING") => TargetState::Started,
                Some("PAUSED") => TargetState::Paused,
                Some("STOPPED") => TargetState::Stopped,
                _ => {
                    return Err(BadRequest(format!(
                        "\"initial_state\" is {given}; it takes \"RUNNING\", \"PAUSED\" or \"STOPPED\""
                    )))
                }
            }),
        };
        Ok(CreateConnector { name, config: ConfigBody::from_json(config)?.0, initial_state })
    }
}

/// `PATCH /connectors/{name}/config` (KIP-477): `{k: v | null}`, a null removing the key.
#[derive(Debug, PartialEq)]
pub(super) struct ConfigPatch(pub Vec<(String, Option<String>)>);

impl ConfigPatch {
    pub(super) fn parse(body: &[u8]) -> Result<Self, BadRequest> {
        let request = json_of(body)?;
        let object = request
            .as_object()
            .ok_or_else(|| BadRequest("the config patch must be a JSON object of strings and nulls".into()))?;
        object
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::Null => Ok((k.clone(), None)),
                other => ConfigBody::value_text(k, other).map(|text| (k.clone(), Some(text))),
            })
            .collect::<Result<_, _>>()
            .map(ConfigPatch)
    }
}

/// `POST /connectors/{name}/tasks`, between the workers of a group: the task configs a
/// connector generated, a JSON array of configs.
#[derive(Debug, PartialEq)]
pub(super) struct TaskConfigs(pub Vec<Pairs>);

impl TaskConfigs {
    pub(super) fn parse(body: &[u8]) -> Result<Self, BadRequest> {
        let request = json_of(body)?;
        let list =
            request.as_array().ok_or_else(|| BadRequest("task configs must be a JSON array of objects".into()))?;
        list.iter().map(|c| ConfigBody::from_json(c).map(|c| c.0)).collect::<Result<_, _>>().map(TaskConfigs)
    }
}

/// One entry of `PATCH /connectors/{name}/offsets`: a partition object and its offset, none to
/// forget it; their insides depend on the connector's kind.
#[derive(Debug, PartialEq)]
pub(super) struct OffsetEntry {
    pub partition: serde_json::Value,
    pub offset: Option<serde_json::Value>,
}

/// `PATCH /connectors/{name}/offsets`: `{"offsets": [{"partition": {…}, "offset": {…} | null}]}`.
#[derive(Debug, PartialEq)]
pub(super) struct AlterOffsets(pub Vec<OffsetEntry>);

impl AlterOffsets {
    const SHAPE: &'static str = "the body must look like {\"offsets\": [{\"partition\": {...}, \"offset\": {...}}]}";

    pub(super) fn parse(body: &[u8]) -> Result<Self, BadRequest> {
        let doc: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| BadRequest(format!("{}: {e}", Self::SHAPE)))?;
        let Some(list) = doc.get("offsets").and_then(serde_json::Value::as_array) else {
            return Err(BadRequest(Self::SHAPE.into()));
        };
        list.iter()
            .map(|entry| {
                let Some(partition) = entry.get("partition").filter(|p| p.is_object()) else {
                    return Err(BadRequest(format!("{}; this entry has no partition object: {entry}", Self::SHAPE)));
                };
                Ok(OffsetEntry {
                    partition: partition.clone(),
                    offset: entry.get("offset").filter(|o| !o.is_null()).cloned(),
                })
            })
            .collect::<Result<_, _>>()
            .map(AlterOffsets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Pairs {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn request_bodies_read_into_their_types_or_say_the_shape() {
        let created = CreateConnector::parse(br#"{"name": "a", "config": {"tasks.max": 2, "x": true, "y": "z"}}"#);
        assert_eq!(
            created,
            Ok(CreateConnector {
                name: "a".into(),
                config: pairs(&[("tasks.max", "2"), ("x", "true"), ("y", "z")]),
                initial_state: None
            })
        );
        let paused = CreateConnector::parse(br#"{"name": "a", "config": {}, "initial_state": "paused"}"#).unwrap();
        assert_eq!((paused.name.as_str(), paused.initial_state), ("a", Some(TargetState::Paused)));
        let wrong = CreateConnector::parse(br#"{"name": "a", "config": {}, "initial_state": "GONE"}"#).unwrap_err();
        assert!(wrong.0.contains("takes \"RUNNING\", \"PAUSED\" or \"STOPPED\""), "{}", wrong.0);
        assert_eq!(
            ConfigPatch::parse(br#"{"a": "1", "b": null, "c": 2}"#),
            Ok(ConfigPatch(vec![("a".into(), Some("1".into())), ("b".into(), None), ("c".into(), Some("2".into()))]))
        );
        assert!(ConfigPatch::parse(br#"["a"]"#).unwrap_err().0.contains("JSON object"));
        assert!(CreateConnector::parse(br#"{"config": {}}"#).unwrap_err().0.contains("needs a \"name\""));
        assert!(CreateConnector::parse(br#"{"name": "a"}"#).unwrap_err().0.contains("needs a \"config\""));
        assert!(ConfigBody::parse(br#"{"a": [1]}"#).unwrap_err().0.contains("\"a\" must be a string"));
        assert!(ConfigBody::parse(b"not json").unwrap_err().0.starts_with("request body is not valid JSON"));
        assert_eq!(TaskConfigs::parse(br#"[{"a": "1"}, {}]"#), Ok(TaskConfigs(vec![pairs(&[("a", "1")]), vec![]])));
        assert!(TaskConfigs::parse(br#"{"a": "1"}"#).unwrap_err().0.contains("JSON array"));
        let offsets = AlterOffsets::parse(br#"{"offsets": [{"partition": {"f": "x"}, "offset": null}]}"#).unwrap();
        assert_eq!(offsets.0, vec![OffsetEntry { partition: serde_json::json!({"f": "x"}), offset: None }]);
        assert!(AlterOffsets::parse(br#"{"offsets": [{"offset": {}}]}"#)
            .unwrap_err()
            .0
            .contains("no partition object"));
    }
}

/// `GET /connectors/{name}/topics`: `{"<name>": {"topics": [...]}}`, Connect's
/// `ActiveTopicsInfo` by connector.
#[derive(Serialize)]
pub(super) struct ActiveTopicsInfo {
    pub topics: Vec<String>,
}
