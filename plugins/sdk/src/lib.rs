//! Write Wharf connector plugins in Rust.
//!
//! A plugin is a WebAssembly component that the Wharf host loads from its `plugin.path`. You
//! implement [`SourceConnector`] (records flow from an outside system into Kafka) or
//! [`SinkConnector`] (records flow from Kafka to an outside system), invoke
//! [`source_connector!`] or [`sink_connector!`] once, and build with
//! `cargo build --release --target wasm32-wasip2`. The `.wasm` file in
//! `target/wasm32-wasip2/release/` is the plugin.
//!
//! The crate must be a `cdylib`:
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib"]
//! ```
//!
//! A complete source that counts upwards, resuming where it stopped:
//!
//! ```no_run
//! use wharf_sdk::*;
//!
//! struct Counter;
//!
//! impl Connector for Counter {
//!     fn describe() -> PluginInfo {
//!         PluginInfo {
//!             name: "counter".into(),
//!             version: "1.0.0".into(),
//!             description: "Counts upwards, one record a number".into(),
//!             kind: ConnectorKind::Source,
//!             config: vec![required_key("topic", ConfigType::String, "Where to write")],
//!         }
//!     }
//!
//!     fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
//!         Ok(vec![config.clone()]) // one task is enough
//!     }
//! }
//!
//! struct CounterTask { topic: String, next: i64, schema: std::sync::Arc<Schema> }
//!
//! fn partition() -> OffsetMap { vec![("counter".into(), Scalar::Text("main".into()))] }
//!
//! impl SourceTask for CounterTask {
//!     fn open(config: Config) -> Result<Self, ConnectorError> {
//!         let topic = config.require("topic")?.to_string();
//!         let next = committed_offset(&partition())
//!             .and_then(|offset| offset_integer(&offset, "next"))
//!             .unwrap_or(0);
//!         // The worker's value.converter decides the bytes (JSON, a long, …).
//!         Ok(CounterTask { topic, next, schema: Schema::int64().build() })
//!     }
//!
//!     fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
//!         let records = (0..max_records.min(100))
//!             .map(|_| {
//!                 self.next += 1;
//!                 source_record(
//!                     partition(),
//!                     vec![("next".into(), Scalar::Integer(self.next))],
//!                     &self.topic,
//!                     Part::data(&self.schema, self.next),
//!                 )
//!             })
//!             .collect();
//!         Ok(records)
//!     }
//! }
//!
//! impl SourceConnector for Counter {
//!     type Task = CounterTask;
//! }
//!
//! source_connector!(Counter);
//! ```
//!
//! [`source_connector!`] and [`sink_connector!`] export the `data-source-with-connection-tls` and
//! `data-sink-with-connection-tls` worlds (the `data-source` and `data-sink` worlds, with
//! [`Connector::connection_grants`] and the TLS keys of [`ConnectionGrant::HostAndPortWithTls`]).
//! Also here: [`report_errant`] (a sink's record it could not write), the [`transform`] module (a
//! transform of one's own: [`Transform`] and `transform_plugin!`), the [`data`] module (the
//! [`Schema`] builder, [`Value`] and [`Part`]; data travels as the contract's batch tables) and
//! `to_value` (feature `serde`: a `serde::Serialize` type as schemaless data). Each world's
//! generated bindings are a crate of their own under `plugins/sdk/worlds/`, because wit-bindgen's
//! export macros are crate-global.

#![deny(missing_docs)]

use std::cell::RefCell;
use std::marker::PhantomData;

/// Bindings generated from the WIT contract in `wit/`. Plugin authors rarely need these
/// directly: the traits of this crate and the macros wrap them.
#[doc(hidden)]
pub mod bindings {
    pub use wharf_sdk_data_sink_world as data_sink;
    pub use wharf_sdk_data_source_world as data_source;
    pub use wharf_sdk_sink_world as sink;
    pub use wharf_sdk_source_world as source;
    pub use wharf_sdk_transform_world as transform;
}

pub mod data;
pub mod metrics;
pub mod net;
#[cfg(feature = "serde")]
mod serde_value;
pub mod transactions;
pub mod transform;

pub use data::{Part, Schema, Value};
#[cfg(feature = "serde")]
pub use serde_value::{to_value, Error as ToValueError};
pub use transform::{Transform, TransformInfo, TransformRecord};

use bindings::data_sink::exports::wharf::connector as sink_exports;
use bindings::data_source::exports::wharf::connector as source_exports;
use bindings::source::wharf::connector::host;

pub use bindings::source::wharf::connector::host::Level;
pub use bindings::source::wharf::connector::types::{
    ConfigKey, ConfigProblem, ConfigType, ConnectorError, ConnectorKind, Importance, OffsetMap, PartitionOffset,
    PluginInfo, Scalar, TopicPartition,
};

/// A Kafka record header. Its value is bytes as they are, or data that the connector's
/// `header.converter` (Kafka Connect's `SimpleHeaderConverter` unless set) turns into bytes
/// and, for a sink, reads back; none for a null header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The header's key.
    pub key: String,
    /// Its value; none for a null header.
    pub value: Option<Part>,
}

impl Header {
    /// A header whose value is `value` (bytes, or data: see [`Part`]).
    pub fn new(key: &str, value: impl Into<Part>) -> Self {
        Header { key: key.to_string(), value: Some(value.into()) }
    }
}

/// A record read from Kafka and delivered to a sink task.
#[derive(Debug, Clone)]
pub struct SinkRecord {
    /// The topic it was read from.
    pub topic: String,
    /// Its partition.
    pub partition: i32,
    /// Its offset in the partition.
    pub offset: i64,
    /// None for a null key; data when the connector's `key.converter` read it, bytes with
    /// `ByteArrayConverter`.
    pub key: Option<Part>,
    /// None for a null value (a tombstone); as the key, through `value.converter`.
    pub value: Option<Part>,
    /// Headers; each value as `header.converter` read it (bytes with `ByteArrayConverter`).
    pub headers: Vec<Header>,
    /// Milliseconds since the Unix epoch, if the record carries a timestamp.
    pub timestamp: Option<i64>,
}

/// A record produced by a source task.
#[derive(Debug, Clone)]
pub struct SourceRecord {
    /// The stream this record came from; the host stores `source_offset` under it.
    pub source_partition: OffsetMap,
    /// The position to resume from once this record is safely in Kafka.
    pub source_offset: OffsetMap,
    /// The Kafka topic to write to.
    pub topic: String,
    /// A fixed Kafka partition, or none to let the key choose.
    pub partition: Option<i32>,
    /// None for a null key.
    pub key: Option<Part>,
    /// None for a null value (a tombstone).
    pub value: Option<Part>,
    /// Headers; a value that is data goes through `header.converter`.
    pub headers: Vec<Header>,
    /// Milliseconds since the Unix epoch, or none for the time of sending.
    pub timestamp: Option<i64>,
}
/// What a config key's value names ([`Connector::grants`]).
pub use source_exports::exactly_once::Capability;
pub use source_exports::grants::{KeyGrant, Names};

/// A connector or task configuration: the key/value pairs a user wrote, in their order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pairs: Vec<(String, String)>,
}

impl Config {
    /// A config from key/value pairs.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Config { pairs }
    }

    /// The value of `key`, if set. A key set twice yields its last value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or a fatal error that names the missing key.
    pub fn require(&self, key: &str) -> Result<&str, ConnectorError> {
        match self.get(key) {
            Some(value) if !value.trim().is_empty() => Ok(value),
            _ => Err(ConnectorError::Fatal(format!(
                "missing required configuration \"{key}\": set it in the connector config"
            ))),
        }
    }

    /// The value of `key` parsed as `T`, or `default` when unset; a fatal error names the key and
    /// the value when it does not parse.
    pub fn parse_or<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, ConnectorError> {
        match self.get(key) {
            None => Ok(default),
            Some(raw) => raw.trim().parse().map_err(|_| {
                ConnectorError::Fatal(format!(
                    "invalid value \"{raw}\" for configuration \"{key}\": expected a {}",
                    std::any::type_name::<T>()
                ))
            }),
        }
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.pairs.retain(|(k, _)| k != key);
        self.pairs.push((key.to_string(), value.into()));
    }

    /// The key/value pairs.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// Takes the key/value pairs.
    pub fn into_pairs(self) -> Vec<(String, String)> {
        self.pairs
    }
}

/// A configuration key that has no default and must be set.
pub fn required_key(name: &str, ty: ConfigType, documentation: &str) -> ConfigKey {
    ConfigKey {
        name: name.to_string(),
        type_: ty,
        default_value: None,
        required: true,
        importance: Importance::High,
        documentation: documentation.to_string(),
        group: None,
    }
}

/// A configuration key that may be left out, in which case `default` applies.
pub fn optional_key(name: &str, ty: ConfigType, default: &str, documentation: &str) -> ConfigKey {
    ConfigKey {
        name: name.to_string(),
        type_: ty,
        default_value: Some(default.to_string()),
        required: false,
        importance: Importance::Medium,
        documentation: documentation.to_string(),
        group: None,
    }
}

/// A source record with a value (bytes, or data: see [`Part`]), no key, no headers, no fixed
/// partition, timestamped on sending.
pub fn source_record(
    source_partition: OffsetMap,
    source_offset: OffsetMap,
    topic: &str,
    value: impl Into<Part>,
) -> SourceRecord {
    SourceRecord {
        source_partition,
        source_offset,
        topic: topic.to_string(),
        partition: None,
        key: None,
        value: Some(value.into()),
        headers: Vec::new(),
        timestamp: None,
    }
}

/// The integer under `key` in an offset map, if there is one.
pub fn offset_integer(map: &OffsetMap, key: &str) -> Option<i64> {
    map.iter().find(|(k, _)| k == key).and_then(|(_, v)| match v {
        Scalar::Integer(i) => Some(*i),
        _ => None,
    })
}

/// Writes a line to the worker's log, tagged with this connector and task.
pub fn log(level: Level, message: &str) {
    host::log(level, message);
}

/// The last committed offset of one source partition of this connector, if any.
pub fn committed_offset(partition: &OffsetMap) -> Option<OffsetMap> {
    host::committed_offsets(std::slice::from_ref(partition)).pop().flatten()
}

/// The last committed offsets of several source partitions, in the same order.
pub fn committed_offsets(partitions: &[OffsetMap]) -> Vec<Option<OffsetMap>> {
    host::committed_offsets(partitions)
}

/// Reports a record of the batch being put that the task could not write, and why (Kafka
/// Connect's errant record reporter). With `errors.tolerance=all` the host skips it (to the
/// dead-letter queue, if the connector has one) and the task may go on with the rest of the
/// batch; with `errors.tolerance=none` the task fails once `put` returns, and this returns the
/// error saying so, which `put` may pass on. Only for sinks, during `put`.
pub fn report_errant(topic: &str, partition: i32, offset: i64, reason: &str) -> Result<(), ConnectorError> {
    bindings::sink::wharf::connector::errant_records::report(topic, partition, offset, reason)
        .map_err(ConnectorError::Fatal)
}

/// Says where the task stands, in one line a person reads (`snapshot: 120000 of 1000000 rows
/// of public.orders`); the host shows the latest line as the `trace` of the task's RUNNING
/// status, written at most every 30 s while it changes, cut at 1024 bytes. Cheap to call often.
pub fn report_progress(line: &str) {
    bindings::source::wharf::connector::progress::report(line);
}

/// Asks the host to call [`Connector::task_configs`] again. Hosts of this version log the
/// request; restarting the connector re-splits it.
pub fn request_task_reconfiguration() {
    host::request_task_reconfiguration();
}

/// What every connector plugin says about itself and how it splits work into tasks.
pub trait Connector: 'static {
    /// Name, version, kind and configuration definition.
    fn describe() -> PluginInfo;

    /// Problems with a connector config beyond what the definition checks. None by default.
    fn validate(_config: &Config) -> Vec<ConfigProblem> {
        Vec::new()
    }

    /// Splits a connector config into at most `max_tasks` task configs.
    fn task_configs(config: &Config, max_tasks: u32) -> Result<Vec<Config>, ConnectorError>;

    /// Which config keys name files, folders, `host:port` addresses or URLs. The host grants
    /// what their values name (within what the worker's operator allows), so a connector config
    /// needs no `wasm.*` keys for them. None by default.
    fn grants() -> Vec<KeyGrant> {
        Vec::new()
    }

    /// Which config keys name servers the way database drivers do: a JDBC URL, or a host key
    /// with a port key. The host grants TCP connections to those servers, and reading the
    /// certificate files a JDBC URL names (within what the worker's operator allows). None by
    /// default.
    fn connection_grants() -> Vec<ConnectionGrant> {
        Vec::new()
    }
}

/// A declaration of [`Connector::connection_grants`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionGrant {
    /// The key's value is a JDBC URL (`jdbc:postgresql:`, `jdbc:mariadb:`, `jdbc:mysql:`): its
    /// hosts and ports, and the certificate files its TLS parameters name.
    JdbcUrl(String),
    /// A host key and a port key name one server.
    HostAndPort {
        /// The key whose value is a host name or an IP address.
        host_key: String,
        /// The key whose value is the port.
        port_key: String,
        /// The port when the config leaves `port_key` out.
        default_port: u16,
    },
    /// A host key and a port key name one server, and more keys say how to reach it over TLS,
    /// read as libpq reads `sslmode` and `sslrootcert` (as Debezium's `database.sslmode` and
    /// `database.sslrootcert`): the host checks the server's certificate as they say.
    HostAndPortWithTls {
        /// The key whose value is a host name or an IP address.
        host_key: String,
        /// The key whose value is the port.
        port_key: String,
        /// The port when the config leaves `port_key` out.
        default_port: u16,
        /// The key whose value is the mode: `disable`, `allow`, `prefer`, `require`, `verify-ca`
        /// or `verify-full`.
        mode_key: String,
        /// The mode when the config leaves `mode_key` out.
        default_mode: String,
        /// The key whose value names a PEM file of the authorities to trust (the public ones
        /// when unset).
        root_cert_key: Option<String>,
    },
}

/// A [`KeyGrant`]: `key`'s value names `names`.
pub fn key_grant(key: &str, names: Names) -> KeyGrant {
    KeyGrant { key: key.to_string(), names }
}

/// A source connector: its tasks read from an outside system.
pub trait SourceConnector: Connector {
    /// The task type this connector runs.
    type Task: SourceTask;

    /// Whether the connector's tasks, run in transactions with `config` (a worker with
    /// `exactly.once.source.support=enabled`), deliver every record exactly once: they resume
    /// exactly from the offsets the host commits with their records, and give each record an
    /// offset of its own. Kafka Connect's `exactlyOnceSupport`: a connector whose config has
    /// `exactly.once.support=required` is refused unless this says `Supported`. `None`, the
    /// default, says nothing.
    fn exactly_once_support(_config: &Config) -> Option<Capability> {
        None
    }

    /// Whether the connector's tasks can say where their transactions end with `config`
    /// (`transaction.boundary=connector`), through [`transactions`]. Kafka Connect's
    /// `canDefineTransactionBoundaries`; `Unsupported` by default.
    fn can_define_transaction_boundaries(_config: &Config) -> Capability {
        Capability::Unsupported
    }
}

/// A running source task.
pub trait SourceTask: Sized + 'static {
    /// Starts with one of the configs that [`Connector::task_configs`] returned.
    fn open(config: Config) -> Result<Self, ConnectorError>;

    /// Returns at most `max_records` records, or none if nothing is ready now. Must return
    /// promptly: the host pauses between empty polls, and bounds each call with a deadline.
    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError>;

    /// The host holds records back (Kafka is slow or away) and calls this about once a second
    /// instead of `poll`, until it takes records again: read nothing, but keep connections
    /// alive (answer a server's keepalives, send it status), so that a server does not drop a
    /// task that is only waiting. Nothing to do by default.
    fn keep_alive(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// The offsets of every record returned so far are stored. Nothing to do by default.
    fn commit(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// The task stops. Nothing to do by default.
    fn close(&mut self) {}
}

/// A sink connector: its tasks write to an outside system.
pub trait SinkConnector: Connector {
    /// The task type this connector runs.
    type Task: SinkTask;
}

/// A running sink task.
pub trait SinkTask: Sized + 'static {
    /// Starts with one of the configs that [`Connector::task_configs`] returned.
    fn open(config: Config) -> Result<Self, ConnectorError>;

    /// The host now reads these partitions for this task. Nothing to do by default.
    fn open_partitions(&mut self, _partitions: Vec<TopicPartition>) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// A batch of records; may be buffered until [`SinkTask::flush`].
    fn put(&mut self, records: Vec<SinkRecord>) -> Result<(), ConnectorError>;

    /// Makes everything put so far durable; on success the host commits `offsets` to Kafka.
    fn flush(&mut self, offsets: Vec<PartitionOffset>) -> Result<(), ConnectorError>;

    /// The host stops reading these partitions for this task. Nothing to do by default.
    fn close_partitions(&mut self, _partitions: Vec<TopicPartition>) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// The task stops. Nothing to do by default.
    fn close(&mut self) {}
}

#[doc(hidden)]
pub struct SourceExports<C>(PhantomData<C>);

#[doc(hidden)]
pub struct SinkExports<C>(PhantomData<C>);

#[doc(hidden)]
pub struct TaskCell<T>(RefCell<T>);

impl<C: SourceConnector> source_exports::connector::Guest for SourceExports<C> {
    fn describe() -> PluginInfo {
        C::describe()
    }

    fn validate(config: Vec<(String, String)>) -> Vec<ConfigProblem> {
        C::validate(&Config::new(config))
    }

    fn task_configs(
        config: Vec<(String, String)>,
        max_tasks: u32,
    ) -> Result<Vec<Vec<(String, String)>>, ConnectorError> {
        let configs = C::task_configs(&Config::new(config), max_tasks)?;
        Ok(configs.into_iter().map(Config::into_pairs).collect())
    }
}

impl<C: SourceConnector> source_exports::exactly_once::Guest for SourceExports<C> {
    fn exactly_once_support(config: Vec<(String, String)>) -> Option<Capability> {
        C::exactly_once_support(&Config::new(config))
    }

    fn can_define_transaction_boundaries(config: Vec<(String, String)>) -> Capability {
        C::can_define_transaction_boundaries(&Config::new(config))
    }
}

impl<C: SourceConnector> source_exports::grants::Guest for SourceExports<C> {
    fn declare() -> Vec<KeyGrant> {
        C::grants()
    }
}

impl<C: SinkConnector> sink_exports::grants::Guest for SinkExports<C> {
    fn declare() -> Vec<sink_exports::grants::KeyGrant> {
        use sink_exports::grants::Names as SinkNames;
        C::grants()
            .into_iter()
            .map(|g| sink_exports::grants::KeyGrant {
                key: g.key,
                names: match g.names {
                    Names::FileToRead => SinkNames::FileToRead,
                    Names::FileToWrite => SinkNames::FileToWrite,
                    Names::FolderToRead => SinkNames::FolderToRead,
                    Names::FolderToWrite => SinkNames::FolderToWrite,
                    Names::HostPort => SinkNames::HostPort,
                    Names::Url => SinkNames::Url,
                },
            })
            .collect()
    }
}

impl<C: SourceConnector> source_exports::connection_grants::Guest for SourceExports<C> {
    fn declare() -> Vec<source_exports::connection_grants::ConnectionGrant> {
        use source_exports::connection_grants::{ConnectionGrant as Wit, HostAndPort};
        C::connection_grants()
            .into_iter()
            .map(|g| match g {
                ConnectionGrant::JdbcUrl(key) => Wit::JdbcUrl(key),
                ConnectionGrant::HostAndPort { host_key, port_key, default_port }
                | ConnectionGrant::HostAndPortWithTls { host_key, port_key, default_port, .. } => {
                    Wit::HostAndPort(HostAndPort { host_key, port_key, default_port })
                }
            })
            .collect()
    }
}

impl<C: SourceConnector> source_exports::connection_tls::Guest for SourceExports<C> {
    fn declare() -> Vec<source_exports::connection_tls::ServerTls> {
        C::connection_grants()
            .into_iter()
            .filter_map(|g| match g {
                ConnectionGrant::HostAndPortWithTls { host_key, mode_key, default_mode, root_cert_key, .. } => {
                    Some(source_exports::connection_tls::ServerTls { host_key, mode_key, default_mode, root_cert_key })
                }
                _ => None,
            })
            .collect()
    }
}

impl<C: SinkConnector> sink_exports::connection_grants::Guest for SinkExports<C> {
    fn declare() -> Vec<sink_exports::connection_grants::ConnectionGrant> {
        use sink_exports::connection_grants::{ConnectionGrant as Wit, HostAndPort};
        C::connection_grants()
            .into_iter()
            .map(|g| match g {
                ConnectionGrant::JdbcUrl(key) => Wit::JdbcUrl(key),
                ConnectionGrant::HostAndPort { host_key, port_key, default_port }
                | ConnectionGrant::HostAndPortWithTls { host_key, port_key, default_port, .. } => {
                    Wit::HostAndPort(HostAndPort { host_key, port_key, default_port })
                }
            })
            .collect()
    }
}

impl<C: SinkConnector> sink_exports::connection_tls::Guest for SinkExports<C> {
    fn declare() -> Vec<sink_exports::connection_tls::ServerTls> {
        C::connection_grants()
            .into_iter()
            .filter_map(|g| match g {
                ConnectionGrant::HostAndPortWithTls { host_key, mode_key, default_mode, root_cert_key, .. } => {
                    Some(sink_exports::connection_tls::ServerTls { host_key, mode_key, default_mode, root_cert_key })
                }
                _ => None,
            })
            .collect()
    }
}

impl<C: SourceConnector> source_exports::data_source_task::Guest for SourceExports<C> {
    type Task = TaskCell<C::Task>;
}

impl<T: SourceTask> source_exports::data_source_task::GuestTask for TaskCell<T> {
    fn open(config: Vec<(String, String)>) -> Result<source_exports::data_source_task::Task, ConnectorError> {
        let task = T::open(Config::new(config))?;
        Ok(source_exports::data_source_task::Task::new(TaskCell(RefCell::new(task))))
    }

    fn poll(&self, max_records: u32) -> Result<source_exports::data_source_task::SourceBatch, ConnectorError> {
        if max_records == 0 {
            // The host holds records back: nothing is read, connections are kept alive.
            self.0.borrow_mut().keep_alive()?;
            return Ok(data::BatchWriter::source_batch(Vec::new()));
        }
        let records = self.0.borrow_mut().poll(max_records)?;
        Ok(data::BatchWriter::source_batch(records))
    }

    fn commit(&self) -> Result<(), ConnectorError> {
        self.0.borrow_mut().commit()
    }

    fn close(&self) {
        self.0.borrow_mut().close()
    }
}

impl<C: SinkConnector> sink_exports::connector::Guest for SinkExports<C> {
    fn describe() -> PluginInfo {
        C::describe()
    }

    fn validate(config: Vec<(String, String)>) -> Vec<ConfigProblem> {
        C::validate(&Config::new(config))
    }

    fn task_configs(
        config: Vec<(String, String)>,
        max_tasks: u32,
    ) -> Result<Vec<Vec<(String, String)>>, ConnectorError> {
        let configs = C::task_configs(&Config::new(config), max_tasks)?;
        Ok(configs.into_iter().map(Config::into_pairs).collect())
    }
}

impl<C: SinkConnector> sink_exports::data_sink_task::Guest for SinkExports<C> {
    type Task = TaskCell<C::Task>;
}

impl<T: SinkTask> sink_exports::data_sink_task::GuestTask for TaskCell<T> {
    fn open(config: Vec<(String, String)>) -> Result<sink_exports::data_sink_task::Task, ConnectorError> {
        let task = T::open(Config::new(config))?;
        Ok(sink_exports::data_sink_task::Task::new(TaskCell(RefCell::new(task))))
    }

    fn open_partitions(&self, partitions: Vec<TopicPartition>) -> Result<(), ConnectorError> {
        self.0.borrow_mut().open_partitions(partitions)
    }

    fn put(&self, batch: sink_exports::data_sink_task::SinkBatch) -> Result<(), ConnectorError> {
        let broken = |e: String| ConnectorError::Fatal(format!("the host sent a batch this SDK cannot read: {e}"));
        let mut reader = data::BatchReader::new(batch.schemas, batch.values).map_err(broken)?;
        let mut records = Vec::with_capacity(batch.records.len());
        for r in batch.records {
            let (key, value, headers) = reader.record_parts(r.key, r.value, r.headers).map_err(broken)?;
            records.push(SinkRecord {
                topic: r.topic,
                partition: r.partition,
                offset: r.offset,
                key,
                value,
                headers,
                timestamp: r.timestamp,
            });
        }
        self.0.borrow_mut().put(records)
    }

    fn flush(&self, offsets: Vec<PartitionOffset>) -> Result<(), ConnectorError> {
        self.0.borrow_mut().flush(offsets)
    }

    fn close_partitions(&self, partitions: Vec<TopicPartition>) -> Result<(), ConnectorError> {
        self.0.borrow_mut().close_partitions(partitions)
    }

    fn close(&self) {
        self.0.borrow_mut().close()
    }
}

/// Exports a [`SourceConnector`] as this component's plugin. Invoke it once, at the crate root.
#[macro_export]
macro_rules! source_connector {
    ($connector:ty) => {
        type __WharfSourceExports = $crate::SourceExports<$connector>;
        $crate::bindings::data_source::export_data_source_with_connections_world!(
            __WharfSourceExports with_types_in $crate::bindings::data_source
        );
    };
}

/// Exports a [`SinkConnector`] as this component's plugin. Invoke it once, at the crate root.
#[macro_export]
macro_rules! sink_connector {
    ($connector:ty) => {
        type __WharfSinkExports = $crate::SinkExports<$connector>;
        $crate::bindings::data_sink::export_data_sink_with_connections_world!(
            __WharfSinkExports with_types_in $crate::bindings::data_sink
        );
    };
}
