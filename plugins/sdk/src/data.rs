//! Kafka Connect's data model: a [`Schema`] and a [`Value`] that matches it, or a value without
//! a schema. A source record's key and value are a [`Part`]: bytes that go to Kafka as they are,
//! or data that the worker's converter (`value.converter=…JsonConverter`, say) turns into bytes.
//!
//! ```
//! use wharf_sdk::data::{Part, Schema, Value};
//!
//! // Built once, shared by every record (an `Arc`): a batch carries each schema once.
//! let person = Schema::structure()
//!     .named("com.example.Person")
//!     .field("name", Schema::string())
//!     .field("age", Schema::int32().optional())
//!     .build();
//! let value = Part::data(&person, Value::structure([Value::from("Ada"), Value::from(36)]));
//! let key = Part::data(&Schema::string().build(), "ada");
//! let raw = Part::from(b"bytes as they are".to_vec());
//! # let _ = (value, key, raw);
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use wharf_sdk_data_source_world::exports::wharf::connector::data_source_task as wit_task;
use wharf_sdk_data_source_world::wharf::connector::data as wit;

/// The physical type of a schema, as Kafka Connect's `Schema.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    /// 8-bit signed integer.
    Int8,
    /// 16-bit signed integer.
    Int16,
    /// 32-bit signed integer.
    Int32,
    /// 64-bit signed integer.
    Int64,
    /// 32-bit float.
    Float32,
    /// 64-bit float.
    Float64,
    /// `true` or `false`.
    Boolean,
    /// UTF-8 text.
    String,
    /// Bytes.
    Bytes,
    /// Elements of one schema.
    Array,
    /// Keys of one schema to values of another.
    Map,
    /// Named fields, each with its schema.
    Struct,
}

/// The schema names of Kafka Connect's logical types.
pub mod logical {
    /// A decimal (bytes of the unscaled integer; parameter `scale`).
    pub const DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";
    /// A date (int32: days since the epoch).
    pub const DATE: &str = "org.apache.kafka.connect.data.Date";
    /// A time of day (int32: milliseconds since midnight).
    pub const TIME: &str = "org.apache.kafka.connect.data.Time";
    /// An instant (int64: milliseconds since the epoch).
    pub const TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";
}

/// A field of a struct schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// The field's schema.
    pub schema: Arc<Schema>,
}

/// A schema, as Kafka Connect's `Schema`. Build one with the constructors and methods below and
/// finish with [`Schema::build`].
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// The physical type.
    pub kind: Type,
    /// Whether a value may be null.
    pub optional: bool,
    /// The value a converter writes for a null one (Connect's `replace.null.with.default`).
    pub default: Option<Value>,
    /// A name (logical types are named schemas).
    pub name: Option<String>,
    /// A version of the named schema.
    pub version: Option<i32>,
    /// Documentation.
    pub doc: Option<String>,
    /// Parameters, in order (a decimal's `scale`).
    pub parameters: Option<Vec<(String, String)>>,
    /// A struct's fields, in order.
    pub fields: Vec<Field>,
    /// A map's key schema.
    pub key: Option<Arc<Schema>>,
    /// A map's value schema or an array's element schema.
    pub value: Option<Arc<Schema>>,
}

impl Schema {
    fn of(kind: Type) -> Self {
        Schema {
            kind,
            optional: false,
            default: None,
            name: None,
            version: None,
            doc: None,
            parameters: None,
            fields: Vec::new(),
            key: None,
            value: None,
        }
    }

    /// An `int8` schema.
    pub fn int8() -> Self {
        Self::of(Type::Int8)
    }
    /// An `int16` schema.
    pub fn int16() -> Self {
        Self::of(Type::Int16)
    }
    /// An `int32` schema.
    pub fn int32() -> Self {
        Self::of(Type::Int32)
    }
    /// An `int64` schema.
    pub fn int64() -> Self {
        Self::of(Type::Int64)
    }
    /// A `float32` schema.
    pub fn float32() -> Self {
        Self::of(Type::Float32)
    }
    /// A `float64` schema.
    pub fn float64() -> Self {
        Self::of(Type::Float64)
    }
    /// A `boolean` schema.
    pub fn boolean() -> Self {
        Self::of(Type::Boolean)
    }
    /// A `string` schema.
    pub fn string() -> Self {
        Self::of(Type::String)
    }
    /// A `bytes` schema.
    pub fn bytes() -> Self {
        Self::of(Type::Bytes)
    }
    /// An array of `element`.
    pub fn array(element: Arc<Schema>) -> Self {
        Schema { value: Some(element), ..Self::of(Type::Array) }
    }
    /// A map of `key` to `value`.
    pub fn map(key: Arc<Schema>, value: Arc<Schema>) -> Self {
        Schema { key: Some(key), value: Some(value), ..Self::of(Type::Map) }
    }
    /// A struct with no fields yet: add them with [`Schema::field`].
    pub fn structure() -> Self {
        Self::of(Type::Struct)
    }
    /// Connect's `Decimal.schema(scale)`: values are [`Value::Decimal`].
    pub fn decimal(scale: i32) -> Self {
        Schema { version: Some(1), ..Self::bytes().named(logical::DECIMAL).parameter("scale", &scale.to_string()) }
    }
    /// Connect's `Date.SCHEMA`: values are `Value::Int32` days since the epoch.
    pub fn date() -> Self {
        Schema { version: Some(1), ..Self::int32().named(logical::DATE) }
    }
    /// Connect's `Time.SCHEMA`: values are `Value::Int32` milliseconds since midnight.
    pub fn time() -> Self {
        Schema { version: Some(1), ..Self::int32().named(logical::TIME) }
    }
    /// Connect's `Timestamp.SCHEMA`: values are `Value::Int64` milliseconds since the epoch.
    pub fn timestamp() -> Self {
        Schema { version: Some(1), ..Self::int64().named(logical::TIMESTAMP) }
    }

    /// Adds a field to a struct schema.
    pub fn field(mut self, name: &str, schema: impl Into<Arc<Schema>>) -> Self {
        self.fields.push(Field { name: name.to_string(), schema: schema.into() });
        self
    }
    /// Values may be null.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
    /// Names the schema.
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
    /// Versions the named schema.
    pub fn version(mut self, version: i32) -> Self {
        self.version = Some(version);
        self
    }
    /// Documents the schema.
    pub fn doc(mut self, doc: &str) -> Self {
        self.doc = Some(doc.to_string());
        self
    }
    /// Sets a parameter (replacing an earlier value of it).
    pub fn parameter(mut self, key: &str, value: &str) -> Self {
        let parameters = self.parameters.get_or_insert_with(Vec::new);
        parameters.retain(|(k, _)| k != key);
        parameters.push((key.to_string(), value.to_string()));
        self
    }
    /// The value a converter writes for a null one.
    pub fn default_value(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self
    }
    /// The finished schema, to share among records.
    pub fn build(self) -> Arc<Schema> {
        Arc::new(self)
    }
}

/// A value. With a schema, the schema says what it is; without one, the variant does.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value.
    Null,
    /// A boolean.
    Boolean(bool),
    /// An int8.
    Int8(i8),
    /// An int16.
    Int16(i16),
    /// An int32 (also a `Date` or a `Time`).
    Int32(i32),
    /// An int64 (also a `Timestamp`).
    Int64(i64),
    /// A float32.
    Float32(f32),
    /// A float64.
    Float64(f64),
    /// Text.
    String(String),
    /// Bytes.
    Bytes(Vec<u8>),
    /// An array's elements.
    Array(Vec<Value>),
    /// A map's entries, in order.
    Map(Vec<(Value, Value)>),
    /// A struct's field values, in the order of its schema's fields.
    Struct(Vec<Value>),
    /// A decimal: `unscaled × 10^-scale`, `unscaled` in big-endian two's complement.
    Decimal {
        /// The unscaled integer.
        unscaled: Vec<u8>,
        /// The scale (the decimal schema's `scale`).
        scale: i32,
    },
}

impl Value {
    /// A struct's value from its field values, in the schema's order.
    pub fn structure(values: impl IntoIterator<Item = Value>) -> Self {
        Value::Struct(values.into_iter().collect())
    }

    /// A decimal from an integer number of `10^-scale`: `Value::decimal(12345, 2)` is 123.45.
    pub fn decimal(unscaled: i64, scale: i32) -> Self {
        let bytes = unscaled.to_be_bytes();
        // The shortest two's complement form, as Java's BigInteger writes it.
        let mut start = 0;
        while start < 7 {
            let (b, next) = (bytes[start], bytes[start + 1]);
            if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
                start += 1;
            } else {
                break;
            }
        }
        Value::Decimal { unscaled: bytes[start..].to_vec(), scale }
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),*) => {
        $(impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Value::$variant(v)
            }
        })*
    };
}
value_from!(bool => Boolean, i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64, f32 => Float32,
    f64 => Float64, String => String, Vec<u8> => Bytes);

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_string())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// A record's key or value: bytes as they go to Kafka, or data for the worker's converter.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Bytes as they go to Kafka: no converter touches them.
    Bytes(Vec<u8>),
    /// Data: a schema (none for a schemaless value) and a value.
    Data {
        /// The schema, shared by the records that have it.
        schema: Option<Arc<Schema>>,
        /// The value.
        value: Value,
    },
}

impl Part {
    /// Data with a schema.
    pub fn data(schema: &Arc<Schema>, value: impl Into<Value>) -> Self {
        Part::Data { schema: Some(schema.clone()), value: value.into() }
    }

    /// Data without a schema (JSON without a schema, say).
    pub fn schemaless(value: impl Into<Value>) -> Self {
        Part::Data { schema: None, value: value.into() }
    }
}

impl Part {
    /// The part as text: bytes (as UTF-8, invalid sequences replaced), or a string value; none
    /// for other data.
    pub fn text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Part::Bytes(bytes) => Some(String::from_utf8_lossy(bytes)),
            Part::Data { value: Value::String(s), .. } => Some(std::borrow::Cow::Borrowed(s)),
            Part::Data { .. } => None,
        }
    }

    /// The part's bytes: bytes as they are, a string's UTF-8, a bytes value; none for other data.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Part::Bytes(bytes) | Part::Data { value: Value::Bytes(bytes), .. } => Some(bytes),
            Part::Data { value: Value::String(s), .. } => Some(s.as_bytes()),
            Part::Data { .. } => None,
        }
    }

    /// What the part holds, for messages: `bytes`, `a struct value`…
    pub fn describe(&self) -> &'static str {
        match self {
            Part::Bytes(_) => "bytes",
            Part::Data { value, .. } => match value {
                Value::Null => "a null value",
                Value::Boolean(_) => "a boolean value",
                Value::Int8(_) | Value::Int16(_) | Value::Int32(_) | Value::Int64(_) => "an integer value",
                Value::Float32(_) | Value::Float64(_) => "a floating-point value",
                Value::String(_) => "a string value",
                Value::Bytes(_) => "a bytes value",
                Value::Array(_) => "an array value",
                Value::Map(_) => "a map value",
                Value::Struct(_) => "a struct value",
                Value::Decimal { .. } => "a decimal value",
            },
        }
    }
}

impl From<Vec<u8>> for Part {
    fn from(bytes: Vec<u8>) -> Self {
        Part::Bytes(bytes)
    }
}

/// Turns records into the batch the contract carries: each schema once (by `Arc`), every value
/// in one table.
#[derive(Default)]
pub(crate) struct BatchWriter {
    schemas: Vec<wit::Schema>,
    /// Each schema written, by address; the `Arc` is held so that no other schema can take
    /// its address while the batch is written.
    known: HashMap<*const Schema, (u32, Arc<Schema>)>,
    values: Vec<wit::Value>,
}

impl BatchWriter {
    fn schema(&mut self, schema: &Arc<Schema>) -> u32 {
        if let Some((index, _)) = self.known.get(&Arc::as_ptr(schema)) {
            return *index;
        }
        // Children first: a schema refers only to schemas before it.
        let fields: Vec<wit::Field> =
            schema.fields.iter().map(|f| wit::Field { name: f.name.clone(), schema: self.schema(&f.schema) }).collect();
        let key_schema = schema.key.as_ref().map(|k| self.schema(k));
        let value_schema = schema.value.as_ref().map(|v| self.schema(v));
        let default_value = schema.default.as_ref().map(|d| self.value(d));
        self.schemas.push(wit::Schema {
            type_: kind_to_wit(schema.kind),
            optional: schema.optional,
            default_value,
            name: schema.name.clone(),
            version: schema.version,
            doc: schema.doc.clone(),
            parameters: schema.parameters.clone(),
            fields,
            key_schema,
            value_schema,
        });
        let index = (self.schemas.len() - 1) as u32;
        self.known.insert(Arc::as_ptr(schema), (index, schema.clone()));
        index
    }

    fn value(&mut self, value: &Value) -> u32 {
        let node = match value {
            Value::Null => wit::Value::Null,
            Value::Boolean(b) => wit::Value::Boolean(*b),
            Value::Int8(n) => wit::Value::Int8(*n),
            Value::Int16(n) => wit::Value::Int16(*n),
            Value::Int32(n) => wit::Value::Int32(*n),
            Value::Int64(n) => wit::Value::Int64(*n),
            Value::Float32(x) => wit::Value::Float32(*x),
            Value::Float64(x) => wit::Value::Float64(*x),
            Value::String(s) => wit::Value::String(s.clone()),
            Value::Bytes(b) => wit::Value::Bytes(b.clone()),
            Value::Array(elements) => wit::Value::Array(elements.iter().map(|e| self.value(e)).collect()),
            Value::Map(entries) => {
                wit::Value::Map(entries.iter().map(|(k, v)| (self.value(k), self.value(v))).collect())
            }
            Value::Struct(values) => wit::Value::Struct(values.iter().map(|v| self.value(v)).collect()),
            Value::Decimal { unscaled, scale } => {
                wit::Value::Decimal(wit::Decimal { unscaled: unscaled.clone(), scale: *scale })
            }
        };
        self.values.push(node);
        (self.values.len() - 1) as u32
    }

    pub(crate) fn part(&mut self, part: Part) -> wit::Part {
        match part {
            Part::Bytes(bytes) => wit::Part::Raw(bytes),
            Part::Data { schema, value } => {
                let schema = schema.as_ref().map(|s| self.schema(s));
                wit::Part::Data(wit::Datum { schema, value: self.value(&value) })
            }
        }
    }

    /// A record's headers, their values into the tables.
    pub(crate) fn headers(&mut self, headers: Vec<crate::Header>) -> Vec<wit::Header> {
        headers.into_iter().map(|h| wit::Header { key: h.key, value: h.value.map(|v| self.part(v)) }).collect()
    }

    /// The tables written so far, for a batch that refers to them.
    pub(crate) fn into_tables(self) -> (Vec<wit::Schema>, Vec<wit::Value>) {
        (self.schemas, self.values)
    }

    /// The batch of `records`.
    pub(crate) fn source_batch(records: Vec<crate::SourceRecord>) -> wit_task::SourceBatch {
        let mut writer = BatchWriter::default();
        let records = records
            .into_iter()
            .map(|r| wit_task::SourceRecord {
                source_partition: r.source_partition,
                source_offset: r.source_offset,
                topic: r.topic,
                partition: r.partition,
                key: r.key.map(|k| writer.part(k)),
                value: r.value.map(|v| writer.part(v)),
                headers: writer.headers(r.headers),
                timestamp: r.timestamp,
            })
            .collect();
        wit_task::SourceBatch { schemas: writer.schemas, values: writer.values, records }
    }
}

/// Reads the tables of a batch the host sent (a sink's `put`) into records' parts.
pub(crate) struct BatchReader {
    schemas: Vec<Arc<Schema>>,
    values: Vec<Option<wit::Value>>,
}

impl BatchReader {
    pub(crate) fn new(schemas: Vec<wit::Schema>, values: Vec<wit::Value>) -> Result<Self, String> {
        let mut reader =
            BatchReader { schemas: Vec::with_capacity(schemas.len()), values: values.into_iter().map(Some).collect() };
        for (index, s) in schemas.into_iter().enumerate() {
            let earlier = |reader: &Self, child: u32| -> Result<Arc<Schema>, String> {
                reader
                    .schemas
                    .get(child as usize)
                    .filter(|_| (child as usize) < index)
                    .cloned()
                    .ok_or_else(|| format!("schema {index} refers to schema {child}, not listed before it"))
            };
            let mut fields = Vec::with_capacity(s.fields.len());
            for f in s.fields {
                fields.push(Field { name: f.name, schema: earlier(&reader, f.schema)? });
            }
            let key = s.key_schema.map(|k| earlier(&reader, k)).transpose()?;
            let value = s.value_schema.map(|v| earlier(&reader, v)).transpose()?;
            let default = match s.default_value {
                Some(d) => Some(reader.value(d, 0)?).filter(|v| *v != Value::Null),
                None => None,
            };
            reader.schemas.push(Arc::new(Schema {
                kind: kind_from_wit(s.type_),
                optional: s.optional,
                default,
                name: s.name,
                version: s.version,
                doc: s.doc,
                parameters: s.parameters,
                fields,
                key,
                value,
            }));
        }
        Ok(reader)
    }

    fn value(&mut self, index: u32, depth: usize) -> Result<Value, String> {
        if depth > 256 {
            return Err("values nest deeper than 256 levels".into());
        }
        let node = self
            .values
            .get_mut(index as usize)
            .and_then(Option::take)
            .ok_or_else(|| format!("value {index} is missing or used twice"))?;
        let children = |reader: &mut Self, indices: Vec<u32>| -> Result<Vec<Value>, String> {
            indices.into_iter().map(|i| reader.value(i, depth + 1)).collect()
        };
        Ok(match node {
            wit::Value::Null => Value::Null,
            wit::Value::Boolean(b) => Value::Boolean(b),
            wit::Value::Int8(n) => Value::Int8(n),
            wit::Value::Int16(n) => Value::Int16(n),
            wit::Value::Int32(n) => Value::Int32(n),
            wit::Value::Int64(n) => Value::Int64(n),
            wit::Value::Float32(x) => Value::Float32(x),
            wit::Value::Float64(x) => Value::Float64(x),
            wit::Value::String(s) => Value::String(s),
            wit::Value::Bytes(b) => Value::Bytes(b),
            wit::Value::Array(elements) => Value::Array(children(self, elements)?),
            wit::Value::Map(entries) => {
                let mut read = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    read.push((self.value(k, depth + 1)?, self.value(v, depth + 1)?));
                }
                Value::Map(read)
            }
            wit::Value::Struct(fields) => Value::Struct(children(self, fields)?),
            wit::Value::Decimal(d) => Value::Decimal { unscaled: d.unscaled, scale: d.scale },
        })
    }

    /// A record's key, value and headers.
    #[allow(clippy::type_complexity)]
    pub(crate) fn record_parts(
        &mut self,
        key: Option<wit::Part>,
        value: Option<wit::Part>,
        headers: Vec<wit::Header>,
    ) -> Result<(Option<Part>, Option<Part>, Vec<crate::Header>), String> {
        let key = key.map(|k| self.part(k)).transpose()?;
        let value = value.map(|v| self.part(v)).transpose()?;
        let headers = headers
            .into_iter()
            .map(|h| Ok(crate::Header { value: h.value.map(|v| self.part(v)).transpose()?, key: h.key }))
            .collect::<Result<_, String>>()?;
        Ok((key, value, headers))
    }

    pub(crate) fn part(&mut self, part: wit::Part) -> Result<Part, String> {
        match part {
            wit::Part::Raw(bytes) => Ok(Part::Bytes(bytes)),
            wit::Part::Data(datum) => {
                let schema = match datum.schema {
                    None => None,
                    Some(i) => Some(self.schemas.get(i as usize).cloned().ok_or_else(|| format!("no schema {i}"))?),
                };
                Ok(Part::Data { schema, value: self.value(datum.value, 0)? })
            }
        }
    }
}

/// The contract's types and this crate's, one to one.
const KINDS: [(Type, wit::SchemaType); 12] = [
    (Type::Int8, wit::SchemaType::Int8),
    (Type::Int16, wit::SchemaType::Int16),
    (Type::Int32, wit::SchemaType::Int32),
    (Type::Int64, wit::SchemaType::Int64),
    (Type::Float32, wit::SchemaType::Float32),
    (Type::Float64, wit::SchemaType::Float64),
    (Type::Boolean, wit::SchemaType::Boolean),
    (Type::String, wit::SchemaType::String),
    (Type::Bytes, wit::SchemaType::Bytes),
    (Type::Array, wit::SchemaType::Array),
    (Type::Map, wit::SchemaType::Map),
    (Type::Struct, wit::SchemaType::Struct),
];

fn kind_to_wit(kind: Type) -> wit::SchemaType {
    KINDS.iter().find(|(k, _)| *k == kind).map_or(wit::SchemaType::Bytes, |(_, w)| *w)
}

fn kind_from_wit(kind: wit::SchemaType) -> Type {
    KINDS.iter().find(|(_, w)| *w == kind).map_or(Type::Bytes, |(k, _)| *k)
}
