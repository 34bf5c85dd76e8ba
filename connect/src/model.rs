//! The domain's own types: records, source partitions and offsets, connector kinds, plugin
//! descriptions. Every layer uses these (the generated WIT types stay inside `runtime/`), and
//! this module depends on no other of the crate but `data` (Connect's data model, in records).
//!
//! - Source partitions and offsets: `OffsetMap` of `Scalar`s, with their JSON form (`map_to_json`,
//!   `map_from_json`).
//! - Records as they cross a plugin's boundary: `PolledRecord`, `SourceRecord`, `SinkRecord`,
//!   `ConnectRecord` (what transforms work on), with a key or value that is a `Part`.
//! - Names and descriptions: `TaskId`, `ConnectorKind`, `PluginKind`, `PluginInfo`, `ConfigKey`,
//!   `KeyGrant`, `KeyReport` (a key of the validate answer), `SessionKey`.
//! - Configs as `Pairs`, in which the last value of a key wins (`last_value`); the version a config
//!   asks for (`requested_version`: `connector.version` or `connector.plugin.version`).
//! - States: `State`, `Status` and `ConnectorStatus`, and what a user asked a connector to be
//!   (`TargetState`); the host's stores keep and re-export them.

use semver::{Version, VersionReq};

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

fn scalar_to_json(s: &Scalar) -> serde_json::Value {
    use serde_json::Value;
    match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::from(*i),
        // A float JSON cannot hold (NaN, infinity) is written as null, as serde_json does.
        Scalar::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Scalar::Text(t) => Value::String(t.clone()),
    }
}

fn scalar_from_json(v: &serde_json::Value) -> Option<Scalar> {
    use serde_json::Value;
    Some(match v {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Scalar::Integer(i),
            None => Scalar::Float(n.as_f64()?),
        },
        Value::String(s) => Scalar::Text(s.clone()),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// An offset map as a JSON object, Kafka Connect's form of a source partition or offset (keys
/// sorted, so equal maps give equal bytes).
pub fn map_to_json(map: &OffsetMap) -> serde_json::Value {
    serde_json::Value::Object(map.iter().map(|(k, v)| (k.clone(), scalar_to_json(v))).collect())
}

/// A JSON object of scalars as an offset map; none for anything else.
pub fn map_from_json(value: &serde_json::Value) -> Option<OffsetMap> {
    value.as_object()?.iter().map(|(k, v)| Some((k.clone(), scalar_from_json(v)?))).collect()
}

/// A Kafka record header: its value's bytes, none for a null header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub key: String,
    pub value: Option<Vec<u8>>,
}

/// A header as a plugin gives or takes it: its value bytes as they are, or data for the
/// connector's `header.converter`; none for a null header.
#[derive(Debug, Clone, PartialEq)]
pub struct PartHeader {
    pub key: String,
    pub value: Option<Part>,
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

/// A record's key or value as a plugin hands it over: bytes as they go to Kafka, or Connect data
/// for the connector's converter.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Bytes(Vec<u8>),
    Data(crate::data::Data),
}

/// A record as a source task's `poll` returns it, before the converters: a `SourceRecord` once
/// its key and value are bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PolledRecord {
    pub source_partition: OffsetMap,
    pub source_offset: OffsetMap,
    pub topic: String,
    pub partition: Option<i32>,
    pub key: Option<Part>,
    pub value: Option<Part>,
    pub headers: Vec<PartHeader>,
    pub timestamp: Option<i64>,
}

/// A polled record as a transform sees it, without its source partition and offset.
impl From<PolledRecord> for ConnectRecord {
    fn from(r: PolledRecord) -> Self {
        ConnectRecord {
            topic: r.topic,
            partition: r.partition,
            offset: None,
            key: r.key,
            value: r.value,
            headers: r.headers,
            timestamp: r.timestamp,
        }
    }
}

/// A record read from Kafka for a sink task: its key, value and header values are bytes, and
/// become data when the task's plugin takes data and the connector's converters read them.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Part>,
    pub value: Option<Part>,
    pub headers: Vec<PartHeader>,
    pub timestamp: Option<i64>,
}

/// A record as transforms see it (Kafka Connect's `ConnectRecord`): a source's before its
/// converters, a sink's after them, without what belongs to the source or the sink alone (source
/// partition and offset stay outside; a sink record's Kafka offset is here for `InsertField`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectRecord {
    pub topic: String,
    pub partition: Option<i32>,
    /// The record's offset in its Kafka partition: a sink record's, none on a source.
    pub offset: Option<i64>,
    pub key: Option<Part>,
    pub value: Option<Part>,
    pub headers: Vec<PartHeader>,
    pub timestamp: Option<i64>,
}

/// A task: its connector and its number; shown as `name-3`, as Kafka Connect names tasks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct TaskId {
    pub connector: String,
    pub task: u32,
}

impl TaskId {
    pub fn new(connector: &str, task: u32) -> Self {
        TaskId { connector: connector.to_string(), task }
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.connector, self.task)
    }
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

impl ConnectorKind {
    /// `source` or `sink`, as Kafka Connect's REST API and messages say it.
    pub fn name(self) -> &'static str {
        match self {
            ConnectorKind::Source => "source",
            ConnectorKind::Sink => "sink",
        }
    }
}

/// What a plugin is: a connector of one kind, or (since `wharf:connector@0.1.3`) a transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginKind {
    Source,
    Sink,
    Transform,
}

impl PluginKind {
    /// The type Kafka Connect's plugin list gives it: `source`, `sink` or `transformation`.
    pub fn name(self) -> &'static str {
        match self {
            PluginKind::Source => "source",
            PluginKind::Sink => "sink",
            PluginKind::Transform => "transformation",
        }
    }

    /// The kind of connector it runs, none for a transform.
    pub fn connector(self) -> Option<ConnectorKind> {
        match self {
            PluginKind::Source => Some(ConnectorKind::Source),
            PluginKind::Sink => Some(ConnectorKind::Sink),
            PluginKind::Transform => None,
        }
    }
}

impl From<ConnectorKind> for PluginKind {
    fn from(kind: ConnectorKind) -> Self {
        match kind {
            ConnectorKind::Source => PluginKind::Source,
            ConnectorKind::Sink => PluginKind::Sink,
        }
    }
}

/// The value of `key` in a config of key-value pairs, the last one when the key repeats (as a
/// properties file that sets a key twice means it).
pub fn last_value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The plugin versions a connector config asks for, as written: `connector.version`, or Kafka
/// Connect 4.1's name of it, `connector.plugin.version`; none when neither is given.
pub fn requested_version(pairs: &[(String, String)]) -> Option<&str> {
    let given = |key: &str| last_value(pairs, key).map(str::trim).filter(|v| !v.is_empty());
    given("connector.version").or_else(|| given("connector.plugin.version"))
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
    pub kind: PluginKind,
    pub config: Vec<ConfigKey>,
    /// Which config keys name files, folders, addresses or URLs (`grants`, since 0.1.1).
    pub grants: Vec<KeyGrant>,
    /// Which config keys name servers the way database drivers do (`connection-grants`, since
    /// 0.1.4).
    pub connections: Vec<ConnectionGrant>,
}

/// A config key (or two) naming servers the way database drivers and Kafka Connect's database
/// connectors do; the host derives TCP grants (and, from a JDBC URL, certificate files to read)
/// from their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionGrant {
    /// The key's value is a JDBC URL.
    JdbcUrl { key: String },
    /// `host_key` names a host and `port_key` its port, `default_port` when unset; `tls` says
    /// which keys set how it is reached over TLS (`connection-tls`, since 0.1.5).
    HostAndPort { host_key: String, port_key: String, default_port: u16, tls: Option<ServerTlsKeys> },
}

/// The keys that say how a host-and-port server is reached over TLS, read as libpq reads
/// `sslmode` and `sslrootcert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTlsKeys {
    pub mode_key: String,
    /// The mode when the config leaves `mode_key` out.
    pub default_mode: String,
    /// The key naming a PEM file of the authorities to trust.
    pub root_cert_key: Option<String>,
}

impl ConnectionGrant {
    /// As `wharf plugin inspect` shows it.
    pub fn describe(&self) -> String {
        match self {
            ConnectionGrant::JdbcUrl { key } => {
                format!("{key}: a JDBC URL (its hosts and ports to connect to, its certificate files to read)")
            }
            ConnectionGrant::HostAndPort { host_key, port_key, default_port, tls } => {
                let mut text = format!(
                    "{host_key} and {port_key}: a host and its port to connect to (port {default_port} when unset)"
                );
                if let Some(tls) = tls {
                    text.push_str(&format!(", over TLS as {} says ({} when unset)", tls.mode_key, tls.default_mode));
                    if let Some(roots) = &tls.root_cert_key {
                        text.push_str(&format!(", trusting the authorities {roots} names (a file to read)"));
                    }
                }
                text
            }
        }
    }
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

/// One key of the validate answer: its definition, the value it takes (given, or its default),
/// and every problem found on it, by the host's rules and by the plugin's own `validate`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyReport {
    pub definition: ConfigKey,
    pub value: Option<String>,
    pub errors: Vec<String>,
}

/// A plugin's version as a semantic version; `1` and `1.2` are read as `1.0.0` and `1.2.0`.
pub fn parse_version(text: &str) -> Result<Version, String> {
    let text = text.trim();
    let padded = match text.split('.').count() {
        1 if text.chars().all(|c| c.is_ascii_digit()) => format!("{text}.0.0"),
        2 if text.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) => format!("{text}.0"),
        _ => text.to_string(),
    };
    Version::parse(&padded).map_err(|e| format!("\"{text}\" is not a semantic version like 1.2.0 ({e})"))
}

/// `connector.version`: an exact version (`1.2.0`), a range in Kafka Connect's Maven syntax
/// (`[1.0,2.0)`), or a semver requirement (`>=1.1, <2`).
pub fn parse_version_requirement(text: &str) -> Result<VersionReq, String> {
    let text = text.trim();
    if let (Some(open), Some(close)) = (text.chars().next(), text.chars().last()) {
        if matches!(open, '[' | '(') && matches!(close, ']' | ')') {
            let inner = &text[1..text.len() - 1];
            let (low, high) = inner.split_once(',').unwrap_or((inner, inner));
            let mut parts = Vec::new();
            if !low.trim().is_empty() {
                let v = parse_version(low)?;
                parts.push(format!("{}{v}", if open == '[' { ">=" } else { ">" }));
            }
            if !high.trim().is_empty() {
                let v = parse_version(high)?;
                parts.push(format!("{}{v}", if close == ']' { "<=" } else { "<" }));
            }
            return VersionReq::parse(&parts.join(", ")).map_err(|e| format!("\"{text}\" is not a version range: {e}"));
        }
    }
    if let Ok(exact) = parse_version(text) {
        return VersionReq::parse(&format!("={exact}")).map_err(|e| e.to_string());
    }
    VersionReq::parse(text).map_err(|e| {
        format!("\"{text}\" is neither a version (1.2.0), a range ([1.0,2.0)) nor a requirement (>=1.1, <2): {e}")
    })
}

/// A cluster's key for signing requests between its workers.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey {
    pub key: Vec<u8>,
    /// The key's algorithm, by its Java name (`HmacSHA256`).
    pub algorithm: String,
    /// When the leader made it, in milliseconds since the epoch.
    pub created_ms: i64,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKey({}, {} bytes, made at {})", self.algorithm, self.key.len(), self.created_ms)
    }
}

/// Now, in milliseconds since the epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

// The states of connectors and tasks, what a user asked them to be, and configs as pairs: kept
// by the stores, reported by REST, decided on by the herder.

/// A config as written: keys and values in order, the last value of a key winning.
pub type Pairs = Vec<(String, String)>;

/// What a user asked a connector to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    Started,
    Paused,
    Stopped,
}

impl TargetState {
    pub fn name(self) -> &'static str {
        match self {
            TargetState::Started => "STARTED",
            TargetState::Paused => "PAUSED",
            TargetState::Stopped => "STOPPED",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "STARTED" => Some(TargetState::Started),
            "PAUSED" => Some(TargetState::Paused),
            "STOPPED" => Some(TargetState::Stopped),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum State {
    Unassigned,
    Running,
    Paused,
    Stopped,
    Failed,
    Restarting,
}

/// A connector's or a task's state as a worker wrote it; REST shows it as `StateInfo`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub state: State,
    pub worker_id: String,
    pub trace: Option<String>,
    /// Records a running task skipped under `errors.tolerance=all`, as last published.
    pub records_skipped: u64,
    /// The group generation the writer was in; a lower one from another worker is stale.
    pub generation: i32,
    /// The version of the connector's plugin, when the writer had it loaded (Connect 4.1's
    /// `version`).
    pub version: Option<String>,
    /// Automatic restarts in a row of a task (`auto.restart.*`), carried from one status of the
    /// task to the next so that it survives a move to another worker.
    pub auto_restarts: u32,
    /// Whether a FAILED task may be restarted automatically: not when its config's checks
    /// failed, or its plugin refused to open it as fatal.
    pub restartable: bool,
}

impl Status {
    /// Whether `other` says what this says, whatever generation each was written in: a state
    /// is written when it changes, as Kafka Connect writes it, not again in every generation
    /// (each rebalance would then rewrite every status of the cluster).
    pub fn says_the_same(&self, other: &Status) -> bool {
        let Status { state, worker_id, trace, records_skipped, generation: _, version, auto_restarts, restartable } =
            self;
        *state == other.state
            && *worker_id == other.worker_id
            && *trace == other.trace
            && *records_skipped == other.records_skipped
            && *version == other.version
            && *auto_restarts == other.auto_restarts
            && *restartable == other.restartable
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorStatus {
    pub name: String,
    pub kind: Option<ConnectorKind>,
    pub connector: Status,
    pub tasks: std::collections::BTreeMap<u32, Status>,
}

/// Puts `c` into `out` as a log line shows it: a newline or carriage return as `\n` or `\r`, any
/// other control character or bidirectional-text mark as `\u{..}`, a tab and the rest as they are;
/// so that text from outside cannot start a line of its own or hide what it says.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push('\t'),
        c if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') => {
            out.push_str(&c.escape_unicode().to_string())
        }
        c => out.push(c),
    }
}

/// `text` with every character as `push_escaped` shows it.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    text.chars().for_each(|c| push_escaped(&mut out, c));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_says_the_same_in_another_generation_only() {
        let running = Status {
            state: State::Running,
            worker_id: "w:8083".into(),
            trace: None,
            records_skipped: 0,
            generation: 3,
            version: Some("1.0".into()),
            auto_restarts: 0,
            restartable: true,
        };
        assert!(running.says_the_same(&Status { generation: 40, ..running.clone() }));
        for changed in [
            Status { state: State::Paused, ..running.clone() },
            Status { worker_id: "v:8083".into(), ..running.clone() },
            Status { trace: Some("boom".into()), ..running.clone() },
            Status { records_skipped: 1, ..running.clone() },
            Status { version: None, ..running.clone() },
            Status { auto_restarts: 1, ..running.clone() },
            Status { restartable: false, ..running.clone() },
        ] {
            assert!(!running.says_the_same(&changed), "{changed:?}");
        }
    }
}
