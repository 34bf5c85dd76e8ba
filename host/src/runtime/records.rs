//! The host's own types for what crosses the plugin boundary. The generated WIT types stay
//! inside `runtime/`; everything else sees these.

/// One value of a source partition or offset.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Boolean(bool),
    Integer(i64),
    Float(f64),
    Text(String),
}

/// A source partition or a source offset: string keys to scalars.
pub type OffsetMap = Vec<(String, Scalar)>;

#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub key: String,
    pub value: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SourceRecord {
    pub source_partition: OffsetMap,
    pub source_offset: OffsetMap,
    pub topic: String,
    pub partition: Option<i32>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<Header>,
    pub timestamp: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SinkRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<Header>,
    pub timestamp: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

/// The next offset to read in a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectorKind {
    Source,
    Sink,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigKey {
    pub name: String,
    /// Kafka Connect's type name: BOOLEAN, INT, LONG, DOUBLE, STRING, LIST, PASSWORD.
    pub type_name: &'static str,
    pub default_value: Option<String>,
    pub required: bool,
    /// HIGH, MEDIUM, LOW.
    pub importance: &'static str,
    pub documentation: String,
    pub group: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    pub kind: ConnectorKind,
    pub config: Vec<ConfigKey>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigProblem {
    pub name: String,
    pub message: String,
}
