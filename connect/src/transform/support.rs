//! What Connect's transforms share: the part of a record a `$Key` or `$Value` variant works on,
//! the checks of `Requirements` with their messages, a schema's basics copied into a new one
//! (`SchemaUtil.copySchemaBasics`), a struct field's value with its default, and the bounded
//! cache of schemas a transform derived from the schemas it met.

use std::sync::{Arc, Mutex, OnceLock};

use crate::data::{Data, Field, Schema, Type, Value};
use crate::model::Part;

use super::Record;

/// The part of the record a transform with `$Key` and `$Value` variants works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Key,
    Value,
}

impl Side {
    /// `$Key` or `$Value`, as the class name ends.
    pub fn variant(self) -> &'static str {
        match self {
            Side::Key => "$Key",
            Side::Value => "$Value",
        }
    }

    /// The record's key or value as data: none is a null without a schema, and bytes that no
    /// converter read are bytes with Connect's optional bytes schema (what `ByteArrayConverter`
    /// reads them as).
    pub fn take(self, record: &mut Record) -> Data {
        let part = match self {
            Side::Key => record.key.take(),
            Side::Value => record.value.take(),
        };
        as_data(part)
    }

    /// The record's key or value as data, without taking it.
    pub fn data(self, record: &Record) -> Data {
        let part = match self {
            Side::Key => &record.key,
            Side::Value => &record.value,
        };
        as_data(part.clone())
    }

    /// The record's key or value as it is.
    pub fn part(self, record: &Record) -> &Option<Part> {
        match self {
            Side::Key => &record.key,
            Side::Value => &record.value,
        }
    }

    /// Whether the record's key or value is null (none, or data whose value is null), which
    /// most transforms leave alone as Connect's do.
    pub fn is_null(self, record: &Record) -> bool {
        match self.part(record) {
            None => true,
            Some(Part::Data(data)) => data.value == Value::Null,
            Some(Part::Bytes(_)) => false,
        }
    }

    pub fn put(self, record: &mut Record, data: Data) {
        let part = Some(Part::Data(data));
        match self {
            Side::Key => record.key = part,
            Side::Value => record.value = part,
        }
    }
}

fn as_data(part: Option<Part>) -> Data {
    match part {
        None => Data::NULL,
        Some(Part::Data(data)) => data,
        Some(Part::Bytes(bytes)) => Data { schema: Some(optional_bytes()), value: Value::Bytes(bytes) },
    }
}

/// Connect's `Schema.OPTIONAL_BYTES_SCHEMA`, built once.
pub fn optional_bytes() -> Arc<Schema> {
    static SCHEMA: OnceLock<Arc<Schema>> = OnceLock::new();
    SCHEMA.get_or_init(|| Arc::new(Schema::of(Type::Bytes).optional())).clone()
}

/// What Connect calls a value's class in `Requirements`' messages.
pub fn java_class(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Boolean(_) => "java.lang.Boolean",
        Value::Int8(_) => "java.lang.Byte",
        Value::Int16(_) => "java.lang.Short",
        Value::Int32(_) => "java.lang.Integer",
        Value::Int64(_) => "java.lang.Long",
        Value::Float32(_) => "java.lang.Float",
        Value::Float64(_) => "java.lang.Double",
        Value::String(_) => "java.lang.String",
        Value::Bytes(_) => "[B",
        Value::Array(_) => "java.util.ArrayList",
        Value::Map(_) => "java.util.HashMap",
        Value::Struct(_) => "org.apache.kafka.connect.data.Struct",
        Value::Decimal(_) => "java.math.BigDecimal",
    }
}

/// `Requirements.requireSchema`.
pub fn require_schema<'a>(data: &'a Data, purpose: &str) -> Result<&'a Arc<Schema>, String> {
    data.schema.as_ref().ok_or_else(|| format!("Schema required for [{purpose}]"))
}

/// `Requirements.requireStruct`: the struct's schema and field values.
pub fn require_struct<'a>(data: &'a Data, purpose: &str) -> Result<(&'a Arc<Schema>, &'a [Value]), String> {
    match (&data.schema, &data.value) {
        (Some(schema), Value::Struct(values)) if schema.kind == Type::Struct => Ok((schema, values)),
        (_, other) => Err(format!("Only Struct objects supported for [{purpose}], found: {}", java_class(other))),
    }
}

/// `Requirements.requireMap` for a schemaless value: its entries.
pub fn require_map<'a>(value: &'a Value, purpose: &str) -> Result<&'a [(Value, Value)], String> {
    match value {
        Value::Map(entries) => Ok(entries),
        other => Err(format!(
            "Only Map objects supported in absence of schema for [{purpose}], found: {}",
            java_class(other)
        )),
    }
}

/// The value of a schemaless map's entry with this string key (the last one, as a Java map
/// keeps only one).
pub fn map_get<'a>(entries: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    entries.iter().rev().find(|(k, _)| matches!(k, Value::String(s) if s == key)).map(|(_, v)| v)
}

/// A struct field's value as Connect's `Struct.get` gives it: the field schema's default when
/// the value is null.
pub fn field_value<'a>(field: &'a Field, value: &'a Value) -> &'a Value {
    match (value, &field.schema.default) {
        (Value::Null, Some(default)) => default,
        _ => value,
    }
}

/// `SchemaUtil.copySchemaBasics`: a new schema of `kind` with the source's name, version, doc
/// and parameters (not its optionality, nor its default).
pub fn copy_schema_basics(source: &Schema, kind: Type) -> Schema {
    Schema {
        name: source.name.clone(),
        version: source.version,
        doc: source.doc.clone(),
        parameters: source.parameters.clone(),
        ..Schema::of(kind)
    }
}

/// How many derived schemas a transform keeps (Connect's transforms keep 16 in an LRU cache).
pub const SCHEMA_CACHE_ENTRIES: usize = 16;

/// What a transform derived from the schemas it met (a schema, by default, or a plan of its
/// own), by the schema it derived each from: a schema that comes again (the same `Arc`, as
/// converters and tasks hand out for a repeated schema, or an equal one) is not derived again.
/// Bounded at `SCHEMA_CACHE_ENTRIES`; the least recently used entry goes first.
#[derive(Debug)]
pub struct SchemaCache<T = Schema> {
    entries: Mutex<Vec<(Arc<Schema>, Arc<T>)>>,
}

impl<T> Default for SchemaCache<T> {
    fn default() -> Self {
        SchemaCache { entries: Mutex::new(Vec::new()) }
    }
}

impl<T> SchemaCache<T> {
    pub fn new() -> Self {
        SchemaCache::default()
    }

    /// What was derived from `from`, made by `derive` the first time.
    pub fn get_or_derive(
        &self,
        from: &Arc<Schema>,
        derive: impl FnOnce(&Schema) -> Result<T, String>,
    ) -> Result<Arc<T>, String> {
        {
            let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let found = entries
                .iter()
                .position(|(k, _)| Arc::ptr_eq(k, from))
                .or_else(|| entries.iter().position(|(k, _)| **k == **from));
            if let Some(i) = found {
                let entry = entries.remove(i);
                let derived = entry.1.clone();
                entries.push(entry);
                return Ok(derived);
            }
        }
        let derived = Arc::new(derive(from)?);
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= SCHEMA_CACHE_ENTRIES {
            entries.remove(0);
        }
        entries.push((from.clone(), derived.clone()));
        Ok(derived)
    }
}

/// What the transforms' tests share.
#[cfg(test)]
pub(crate) mod testing {
    use crate::data::Data;
    use crate::model::Part;
    use crate::transform::{Chain, Record, TransformConfigError};

    /// A chain of one of Connect's transforms, by its name after
    /// `org.apache.kafka.connect.transforms.` (`Cast$Value`), with these settings.
    pub(crate) fn chain(name: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        let mut config = vec![
            ("transforms".to_string(), "x".to_string()),
            ("transforms.x.type".to_string(), format!("org.apache.kafka.connect.transforms.{name}")),
        ];
        config.extend(settings.iter().map(|(k, v)| (format!("transforms.x.{k}"), v.to_string())));
        Chain::of_connector(&config)
    }

    /// A record of topic `t` with this key and value, and nothing else.
    pub(crate) fn record(key: Option<Data>, value: Option<Data>) -> Record {
        Record {
            topic: "t".into(),
            partition: None,
            offset: None,
            key: key.map(Part::Data),
            value: value.map(Part::Data),
            headers: Vec::new(),
            timestamp: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_derives_a_schema_once_and_keeps_a_bounded_number() {
        let cache: SchemaCache = SchemaCache::new();
        let mut derived = 0;
        let string = Arc::new(Schema::of(Type::String));
        for _ in 0..3 {
            cache
                .get_or_derive(&string, |_| {
                    derived += 1;
                    Ok(Schema::of(Type::Int32))
                })
                .unwrap();
        }
        let equal = Arc::new(Schema::of(Type::String));
        cache.get_or_derive(&equal, |_| Err("an equal schema is found by value".into())).unwrap();
        assert_eq!(derived, 1);
        for version in 0..(SCHEMA_CACHE_ENTRIES as i32 + 4) {
            let s = Arc::new(Schema { version: Some(version), ..Schema::of(Type::String) });
            cache.get_or_derive(&s, |_| Ok(Schema::of(Type::Int8))).unwrap();
        }
        assert_eq!(cache.entries.lock().unwrap().len(), SCHEMA_CACHE_ENTRIES);
    }

    #[test]
    fn bytes_no_converter_read_are_optional_bytes_and_messages_name_javas_classes() {
        let mut record = Record {
            topic: "t".into(),
            partition: None,
            offset: None,
            key: Some(Part::Bytes(b"k".to_vec())),
            value: None,
            headers: Vec::new(),
            timestamp: None,
        };
        let key = Side::Key.take(&mut record);
        assert_eq!(key.schema.as_deref(), Some(&Schema::of(Type::Bytes).optional()));
        assert_eq!(Side::Value.data(&record), Data::NULL);
        assert_eq!(
            require_struct(&key, "field extraction").unwrap_err(),
            "Only Struct objects supported for [field extraction], found: [B"
        );
        assert_eq!(
            require_map(&Value::Int64(1), "insert").unwrap_err(),
            "Only Map objects supported in absence of schema for [insert], found: java.lang.Long"
        );
    }
}
