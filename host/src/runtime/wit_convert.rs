//! Conversions between the types generated from `wit/` (`bindings.rs`) and the domain's own
//! (`wharf_connect::model`), and the sizes of the generated records that `wasm.max.bytes.per.call`
//! counts. Above `batch.rs`, which reads and writes the data worlds' batches; below the sandbox
//! and the instances, which call these.

use wharf_connect::model::{self as own};

use super::batch::{BatchReader, SchemaBounds};
use super::bindings::{
    data_source, declared, declared_connections, declared_tls, transform, wit, SourceBatch, TransformedBatch,
};

type WitConnectionGrant = declared_connections::exports::wharf::connector::connection_grants::ConnectionGrant;

pub(super) fn connection_grant_from_wit(g: WitConnectionGrant) -> own::ConnectionGrant {
    match g {
        WitConnectionGrant::JdbcUrl(key) => own::ConnectionGrant::JdbcUrl { key },
        WitConnectionGrant::HostAndPort(h) => own::ConnectionGrant::HostAndPort {
            host_key: h.host_key,
            port_key: h.port_key,
            default_port: h.default_port,
            tls: None,
        },
    }
}

type WitServerTls = declared_tls::exports::wharf::connector::connection_tls::ServerTls;

/// Puts each `connection-tls` declaration on the host-and-port declaration of its host key;
/// one naming no such declaration is refused, as a mistake of the plugin's.
pub(super) fn attach_connection_tls(
    connections: &mut [own::ConnectionGrant],
    declared: Vec<WitServerTls>,
) -> Result<(), String> {
    for server in declared {
        let found = connections.iter_mut().find_map(|c| match c {
            own::ConnectionGrant::HostAndPort { host_key, tls, .. } if *host_key == server.host_key => Some(tls),
            _ => None,
        });
        let Some(tls) = found else {
            return Err(format!(
                "the plugin declares TLS keys for the host key {}, and no host-and-port connection grant of that key",
                server.host_key
            ));
        };
        *tls = Some(own::ServerTlsKeys {
            mode_key: server.mode_key,
            default_mode: server.default_mode,
            root_cert_key: server.root_cert_key,
        });
    }
    Ok(())
}

/// Bytes a TLS declaration counts for in `wasm.max.bytes.per.call`.
pub(super) fn server_tls_bytes(s: &WitServerTls) -> usize {
    s.host_key.len() + s.mode_key.len() + s.default_mode.len() + s.root_cert_key.as_ref().map_or(0, String::len)
}

/// Bytes a declaration counts for in `wasm.max.bytes.per.call`.
pub(super) fn connection_grant_bytes(g: &WitConnectionGrant) -> usize {
    match g {
        WitConnectionGrant::JdbcUrl(key) => key.len(),
        WitConnectionGrant::HostAndPort(h) => h.host_key.len() + h.port_key.len() + 2,
    }
}

pub(super) fn key_grant_from_wit(g: declared::exports::wharf::connector::grants::KeyGrant) -> own::KeyGrant {
    use declared::exports::wharf::connector::grants::Names;
    let names = match g.names {
        Names::FileToRead => own::Names::FileToRead,
        Names::FileToWrite => own::Names::FileToWrite,
        Names::FolderToRead => own::Names::FolderToRead,
        Names::FolderToWrite => own::Names::FolderToWrite,
        Names::HostPort => own::Names::HostPort,
        Names::Url => own::Names::Url,
    };
    own::KeyGrant { key: g.key, names }
}

pub(super) fn scalar_from_wit(s: wit::Scalar) -> own::Scalar {
    match s {
        wit::Scalar::Null => own::Scalar::Null,
        wit::Scalar::Boolean(b) => own::Scalar::Boolean(b),
        wit::Scalar::Integer(i) => own::Scalar::Integer(i),
        wit::Scalar::Float(f) => own::Scalar::Float(f),
        wit::Scalar::Text(t) => own::Scalar::Text(t),
    }
}

pub(super) fn scalar_to_wit(s: own::Scalar) -> wit::Scalar {
    match s {
        own::Scalar::Null => wit::Scalar::Null,
        own::Scalar::Boolean(b) => wit::Scalar::Boolean(b),
        own::Scalar::Integer(i) => wit::Scalar::Integer(i),
        own::Scalar::Float(f) => wit::Scalar::Float(f),
        own::Scalar::Text(t) => wit::Scalar::Text(t),
    }
}

pub(super) fn offset_map_from_wit(map: wit::OffsetMap) -> own::OffsetMap {
    map.into_iter().map(|(k, v)| (k, scalar_from_wit(v))).collect()
}

pub(super) fn offset_map_to_wit(map: own::OffsetMap) -> wit::OffsetMap {
    map.into_iter().map(|(k, v)| (k, scalar_to_wit(v))).collect()
}

fn header_from_wit(h: wit::Header) -> own::PartHeader {
    own::PartHeader { key: h.key, value: h.value.map(own::Part::Bytes) }
}

/// A header for a sink that takes bytes; none if its value is data.
fn header_to_wit(h: own::PartHeader) -> Option<wit::Header> {
    let value = match h.value {
        None => None,
        Some(own::Part::Bytes(bytes)) => Some(bytes),
        Some(own::Part::Data(_)) => return None,
    };
    Some(wit::Header { key: h.key, value })
}

/// A record of a plugin whose keys and values are bytes.
pub(super) fn source_record_from_wit(r: wit::SourceRecord) -> own::PolledRecord {
    own::PolledRecord {
        source_partition: offset_map_from_wit(r.source_partition),
        source_offset: offset_map_from_wit(r.source_offset),
        topic: r.topic,
        partition: r.partition,
        key: r.key.map(own::Part::Bytes),
        value: r.value.map(own::Part::Bytes),
        headers: r.headers.into_iter().map(header_from_wit).collect(),
        timestamp: r.timestamp,
    }
}

/// What `wasm.max.bytes.per.call` counts of a data batch: the text and bytes it carries, and 8
/// bytes for each number.
pub(super) fn source_batch_bytes(batch: &SourceBatch) -> usize {
    let records: usize = batch
        .records
        .iter()
        .map(|r| {
            record_bytes(&r.topic, &r.source_partition, &r.source_offset)
                + r.headers.iter().map(|h| h.key.len() + wit_part_bytes(&h.value)).sum::<usize>()
                + wit_part_bytes(&r.key)
                + wit_part_bytes(&r.value)
        })
        .sum();
    tables_bytes(&batch.schemas, &batch.values) + records
}

/// As `source_batch_bytes`, for what a transform returned.
pub(super) fn transformed_batch_bytes(batch: &TransformedBatch) -> usize {
    let records: usize = batch
        .records
        .iter()
        .flatten()
        .map(|r| {
            r.topic.len()
                + r.headers.iter().map(|h| h.key.len() + wit_part_bytes(&h.value)).sum::<usize>()
                + wit_part_bytes(&r.key)
                + wit_part_bytes(&r.value)
        })
        .sum();
    tables_bytes(&batch.schemas, &batch.values) + records
}

/// The bytes of a batch's schema and value tables.
fn tables_bytes(
    schemas: &[data_source::wharf::connector::data::Schema],
    values: &[data_source::wharf::connector::data::Value],
) -> usize {
    use data_source::wharf::connector::data::Value;
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let schemas: usize = schemas
        .iter()
        .map(|s| {
            text(&s.name)
                + text(&s.doc)
                + s.parameters.as_ref().map_or(0, |p| p.iter().map(|(k, v)| k.len() + v.len()).sum())
                + s.fields.iter().map(|f| f.name.len() + 4).sum::<usize>()
                + 8
        })
        .sum();
    let values: usize = values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.len(),
            Value::Bytes(b) => b.len(),
            Value::Decimal(d) => d.unscaled.len() + 4,
            Value::Array(children) | Value::Struct(children) => children.len() * 4,
            Value::Map(entries) => entries.len() * 8,
            _ => 8,
        })
        .sum();
    schemas + values
}

/// A key, value or header value's bytes; data counts in the tables.
fn wit_part_bytes(part: &Option<data_source::wharf::connector::data::Part>) -> usize {
    use data_source::wharf::connector::data::Part;
    match part {
        Some(Part::Raw(bytes)) => bytes.len(),
        Some(Part::Data(_)) => 8,
        None => 0,
    }
}

/// The records of a batch whose keys and values may be data, or why the batch breaks the
/// contract's rules (`wit/connector.wit`, interface `data`).
/// `known` holds the schemas of the task's last batch, and is given this batch's.
pub(super) fn source_batch_from_wit(
    batch: SourceBatch,
    known: &mut Vec<std::sync::Arc<wharf_connect::data::Schema>>,
    bounds: SchemaBounds,
) -> Result<Vec<own::PolledRecord>, String> {
    let mut reader = BatchReader::new(batch.schemas, batch.values, known, bounds)?;
    if !reader.is_empty() {
        *known = reader.kept_schemas();
    }
    batch
        .records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let (key, value, headers) = reader.record_parts(i, r.key, r.value, r.headers)?;
            Ok(own::PolledRecord {
                source_partition: offset_map_from_wit(r.source_partition),
                source_offset: offset_map_from_wit(r.source_offset),
                topic: r.topic,
                partition: r.partition,
                key,
                value,
                headers,
                timestamp: r.timestamp,
            })
        })
        .collect()
}

/// A record for a sink that takes bytes; none if a key, value or header value is data (which
/// the worker hands only to sinks that take data).
pub(super) fn sink_record_to_wit(r: own::SinkRecord) -> Option<wit::SinkRecord> {
    let bytes = |part: Option<own::Part>| match part {
        None => Some(None),
        Some(own::Part::Bytes(bytes)) => Some(Some(bytes)),
        Some(own::Part::Data(_)) => None,
    };
    Some(wit::SinkRecord {
        topic: r.topic,
        partition: r.partition,
        offset: r.offset,
        key: bytes(r.key)?,
        value: bytes(r.value)?,
        headers: r.headers.into_iter().map(header_to_wit).collect::<Option<_>>()?,
        timestamp: r.timestamp,
    })
}

/// What a transform returned, in the host's terms: for each record given, the record it became
/// or none; or why the batch breaks the contract's rules. `known` holds the schemas of the last
/// batch, and is given this batch's.
pub(super) fn transformed_batch_from_wit(
    batch: TransformedBatch,
    known: &mut Vec<std::sync::Arc<wharf_connect::data::Schema>>,
    bounds: SchemaBounds,
) -> Result<Vec<Option<own::ConnectRecord>>, String> {
    let mut reader = BatchReader::new(batch.schemas, batch.values, known, bounds)?;
    if !reader.is_empty() {
        *known = reader.kept_schemas();
    }
    batch
        .records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let Some(r) = r else { return Ok(None) };
            let (key, value, headers) = reader.record_parts(i, r.key, r.value, r.headers)?;
            if r.topic.is_empty() {
                return Err(format!("record {i} of the batch has an empty topic"));
            }
            Ok(Some(own::ConnectRecord {
                topic: r.topic,
                partition: r.partition,
                offset: None,
                key,
                value,
                headers,
                timestamp: r.timestamp,
            }))
        })
        .collect()
}

pub(super) fn topic_partition_to_wit(tp: &own::TopicPartition) -> wit::TopicPartition {
    wit::TopicPartition { topic: tp.topic.clone(), partition: tp.partition }
}

pub(super) fn partition_offset_to_wit(po: &own::PartitionOffset) -> wit::PartitionOffset {
    wit::PartitionOffset { topic: po.topic.clone(), partition: po.partition, offset: po.offset }
}

pub(super) fn plugin_info_from_wit(info: wit::PluginInfo) -> own::PluginInfo {
    own::PluginInfo {
        name: info.name,
        version: info.version,
        description: info.description,
        kind: match info.kind {
            wit::ConnectorKind::Source => own::PluginKind::Source,
            wit::ConnectorKind::Sink => own::PluginKind::Sink,
        },
        grants: Vec::new(),
        connections: Vec::new(),
        config: info.config.into_iter().map(config_key_from_wit).collect(),
    }
}

/// A transform plugin's description, in the host's terms.
pub(super) fn transform_info_from_wit(
    info: transform::exports::wharf::connector::transformer::TransformInfo,
) -> own::PluginInfo {
    own::PluginInfo {
        name: info.name,
        version: info.version,
        description: info.description,
        kind: own::PluginKind::Transform,
        grants: Vec::new(),
        connections: Vec::new(),
        config: info.config.into_iter().map(config_key_from_wit).collect(),
    }
}

fn config_key_from_wit(k: wit::ConfigKey) -> own::ConfigKey {
    own::ConfigKey {
        name: k.name,
        type_name: match k.type_ {
            wit::ConfigType::Boolean => "BOOLEAN",
            wit::ConfigType::Int => "INT",
            wit::ConfigType::Long => "LONG",
            wit::ConfigType::Double => "DOUBLE",
            wit::ConfigType::String => "STRING",
            wit::ConfigType::List => "LIST",
            wit::ConfigType::Password => "PASSWORD",
        },
        default_value: k.default_value,
        required: k.required,
        importance: match k.importance {
            wit::Importance::High => "HIGH",
            wit::Importance::Medium => "MEDIUM",
            wit::Importance::Low => "LOW",
        },
        documentation: k.documentation,
        group: k.group,
    }
}

pub(super) fn config_problem_from_wit(p: wit::ConfigProblem) -> own::ConfigProblem {
    own::ConfigProblem { name: p.name, message: p.message }
}

/// Bytes a source partition or offset counts for in `wasm.max.bytes.per.call`: its keys, its
/// text, eight for any other value.
pub(super) fn offset_map_bytes(map: &wit::OffsetMap) -> usize {
    map.iter().map(|(k, v)| k.len() + if let wit::Scalar::Text(t) = v { t.len() } else { 8 }).sum()
}

/// The bytes of a source record other than its key, value and headers.
pub(super) fn record_bytes(topic: &str, partition: &wit::OffsetMap, offset: &wit::OffsetMap) -> usize {
    topic.len() + offset_map_bytes(partition) + offset_map_bytes(offset)
}
