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
    /// Which config keys name files, folders, addresses or URLs (`grants`, since 0.1.1).
    pub grants: Vec<KeyGrant>,
}

/// What the value of a config key names; the host derives the connector's grants from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    FileToRead,
    FileToWrite,
    FolderToRead,
    FolderToWrite,
    HostPort,
    Url,
}

impl Names {
    /// As `wharf plugin inspect` and messages show it.
    pub fn describe(self) -> &'static str {
        match self {
            Names::FileToRead => "a file to read",
            Names::FileToWrite => "a file to write",
            Names::FolderToRead => "a folder to read",
            Names::FolderToWrite => "a folder to write",
            Names::HostPort => "host:port addresses to connect to",
            Names::Url => "URLs to fetch",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyGrant {
    pub key: String,
    pub names: Names,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigProblem {
    pub name: String,
    pub message: String,
}
