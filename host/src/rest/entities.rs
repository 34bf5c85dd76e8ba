//! The REST API's answers, typed, in Kafka Connect's shapes and under its entity names
//! (`org.apache.kafka.connect.runtime.rest.entities`). Handlers build these; serde writes the
//! JSON, so a shape is defined once.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::herder::HIDDEN;
use crate::model::ConnectorKind;
use crate::storage::status::{ConnectorStatus, Status};
use crate::storage::State;

/// Every error: `{"error_code": 404, "message": "…"}`.
#[derive(Serialize)]
pub struct ErrorMessage {
    pub error_code: u16,
    pub message: String,
}

/// `GET /`.
#[derive(Serialize)]
pub struct ServerInfo {
    pub version: &'static str,
    pub commit: &'static str,
    pub kafka_cluster_id: String,
}

/// A connector's config as REST shows it: values of its plugin's PASSWORD keys hidden.
pub type ConfigMap = BTreeMap<String, String>;

pub fn shown_config(pairs: &[(String, String)], secrets: &[String]) -> ConfigMap {
    pairs.iter().map(|(k, v)| (k.clone(), if secrets.contains(k) { HIDDEN.to_string() } else { v.clone() })).collect()
}

#[derive(Serialize, Clone)]
pub struct ConnectorTaskId {
    pub connector: String,
    pub task: u32,
}

/// `GET /connectors/{name}`, and the answer to a create or a config change.
#[derive(Serialize)]
pub struct ConnectorInfo {
    pub name: String,
    pub config: ConfigMap,
    pub tasks: Vec<ConnectorTaskId>,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// One entry of `GET /connectors/{name}/tasks`.
#[derive(Serialize)]
pub struct TaskInfo {
    pub id: ConnectorTaskId,
    pub config: ConfigMap,
}

/// The state of a connector or a task; `trace` only when it failed with one.
#[derive(Serialize)]
pub struct StateInfo {
    pub state: State,
    pub worker_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl From<&Status> for StateInfo {
    fn from(status: &Status) -> Self {
        StateInfo { state: status.state, worker_id: status.worker_id.clone(), trace: status.trace.clone() }
    }
}

#[derive(Serialize)]
pub struct TaskState {
    pub id: u32,
    #[serde(flatten)]
    pub state: StateInfo,
}

/// `GET /connectors/{name}/status`.
#[derive(Serialize)]
pub struct ConnectorStateInfo {
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

/// `source`, `sink`, or `unknown` when the plugin is not loaded here.
pub fn kind_name(kind: Option<ConnectorKind>) -> &'static str {
    kind.map_or("unknown", ConnectorKind::name)
}

/// `{"message": "…"}`: the answer to an offsets change.
#[derive(Serialize)]
pub struct Message {
    pub message: String,
}

/// `GET /connectors/{name}/offsets`.
#[derive(Serialize)]
pub struct ConnectorOffsets {
    pub offsets: Vec<ConnectorOffset>,
}

/// One source partition, or one sink topic partition, with its offset.
#[derive(Serialize)]
pub struct ConnectorOffset {
    pub partition: serde_json::Value,
    pub offset: serde_json::Value,
}

/// One entry of `GET /connector-plugins`; a file that failed to load (with
/// `connectorsOnly=false`) has type `invalid`, no version and its `error`.
#[derive(Serialize)]
pub struct PluginInfo {
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
pub struct ConfigKeyInfo {
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
    pub fn of(key: &crate::model::ConfigKey, order: usize) -> Self {
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
pub struct ConfigValueInfo {
    pub name: String,
    pub value: Option<String>,
    pub recommended_values: Vec<String>,
    pub errors: Vec<String>,
    pub visible: bool,
}

#[derive(Serialize)]
pub struct ConfigInfo {
    pub definition: ConfigKeyInfo,
    pub value: ConfigValueInfo,
}

/// `PUT /connector-plugins/{plugin}/config/validate`.
#[derive(Serialize)]
pub struct ConfigInfos {
    pub name: String,
    pub error_count: usize,
    pub groups: Vec<String>,
    pub configs: Vec<ConfigInfo>,
}
