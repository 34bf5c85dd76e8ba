//! Kafka Connect's data model: a schema (`Schema`) and a value that matches it (`Value`), or a
//! value without a schema. Converters (`convert/`) turn these into the bytes of a Kafka record and
//! back; connectors produce and consume them. Like `model`, this module depends on no other of
//! the crate.
//!
//! The model is Connect's `org.apache.kafka.connect.data`: the types `int8` to `struct`, optional
//! schemas, defaults, names, versions, docs and parameters, and the logical types `Decimal`,
//! `Date`, `Time` and `Timestamp`, which are named schemas over a physical type. A `Date`, `Time`
//! or `Timestamp` value is held as its physical integer (days, milliseconds of the day,
//! milliseconds since the epoch); a `Decimal` value has a variant of its own (`Value::Decimal`),
//! because its scale travels with it, as a Java `BigDecimal`'s does.
//!
//! A `Schema` is shared as an `Arc` by every value that has it; a `Struct` value holds its fields'
//! values in the schema's field order. `Data` is a schema (or none) and a value together,
//! Connect's `SchemaAndValue`; `DataError` says what does not fit, and where. `decimal` holds a
//! `Decimal` as Connect writes a `BigDecimal`.

pub mod decimal;

use std::fmt;
use std::sync::Arc;

pub use decimal::Decimal;

/// The physical type of a schema (Connect's `Schema.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Boolean,
    String,
    Bytes,
    Array,
    Map,
    Struct,
}

impl Type {
    /// The name Connect gives the type (`Schema.Type.getName()`): `int8`, `float64`, `struct`…
    pub fn name(self) -> &'static str {
        match self {
            Type::Int8 => "int8",
            Type::Int16 => "int16",
            Type::Int32 => "int32",
            Type::Int64 => "int64",
            Type::Float32 => "float32",
            Type::Float64 => "float64",
            Type::Boolean => "boolean",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Array => "array",
            Type::Map => "map",
            Type::Struct => "struct",
        }
    }

    pub fn is_primitive(self) -> bool {
        !matches!(self, Type::Array | Type::Map | Type::Struct)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The schema names of Connect's logical types, and the parameter that holds a decimal's scale.
pub mod logical {
    pub const DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";
    pub const DATE: &str = "org.apache.kafka.connect.data.Date";
    pub const TIME: &str = "org.apache.kafka.connect.data.Time";
    pub const TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";
    pub const SCALE: &str = "scale";
}

/// A field of a struct schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub schema: Arc<Schema>,
}

/// A schema, shared by every value that has it (`Arc`): a schema that repeats across records is
/// built once.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub kind: Type,
    pub optional: bool,
    /// The value taken for a missing or null one, where the converter is told to.
    pub default: Option<Value>,
    pub name: Option<String>,
    pub version: Option<i32>,
    pub doc: Option<String>,
    /// In the order given (Connect keeps them in a `LinkedHashMap`); none is not the same as an
    /// empty set, as in Connect.
    pub parameters: Option<Vec<(String, String)>>,
    /// A struct's fields, in order.
    pub fields: Vec<Field>,
    /// A map's key schema.
    pub key: Option<Arc<Schema>>,
    /// A map's value schema, or an array's element schema.
    pub value: Option<Arc<Schema>>,
}

impl Schema {
    /// A required schema of a type, with nothing else set.
    pub fn of(kind: Type) -> Self {
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

    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    pub fn parameter(mut self, key: &str, value: &str) -> Self {
        let parameters = self.parameters.get_or_insert_with(Vec::new);
        match parameters.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_string(),
            None => parameters.push((key.to_string(), value.to_string())),
        }
        self
    }

    pub fn array(element: Arc<Schema>) -> Self {
        Schema { value: Some(element), ..Schema::of(Type::Array) }
    }

    pub fn map(key: Arc<Schema>, value: Arc<Schema>) -> Self {
        Schema { key: Some(key), value: Some(value), ..Schema::of(Type::Map) }
    }

    pub fn structure(fields: Vec<Field>) -> Self {
        Schema { fields, ..Schema::of(Type::Struct) }
    }

    /// Connect's `Decimal.schema(scale)`: bytes named `…data.Decimal` with the scale parameter.
    pub fn decimal(scale: i32) -> Self {
        let schema = Schema::of(Type::Bytes).named(logical::DECIMAL).parameter(logical::SCALE, &scale.to_string());
        Schema { version: Some(1), ..schema }
    }

    pub fn date() -> Self {
        Schema { version: Some(1), ..Schema::of(Type::Int32).named(logical::DATE) }
    }

    pub fn time() -> Self {
        Schema { version: Some(1), ..Schema::of(Type::Int32).named(logical::TIME) }
    }

    pub fn timestamp() -> Self {
        Schema { version: Some(1), ..Schema::of(Type::Int64).named(logical::TIMESTAMP) }
    }

    pub fn parameter_value(&self, key: &str) -> Option<&str> {
        self.parameters.as_ref()?.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The logical type this schema names, if it is one Connect defines.
    pub fn logical(&self) -> Option<Logical> {
        match (self.name.as_deref()?, self.kind) {
            (logical::DECIMAL, Type::Bytes) => Some(Logical::Decimal),
            (logical::DATE, Type::Int32) => Some(Logical::Date),
            (logical::TIME, Type::Int32) => Some(Logical::Time),
            (logical::TIMESTAMP, Type::Int64) => Some(Logical::Timestamp),
            _ => None,
        }
    }

    /// A decimal schema's scale (its `scale` parameter), or why it has none.
    pub fn decimal_scale(&self) -> Result<i32, DataError> {
        let text = self.parameter_value(logical::SCALE).ok_or_else(|| {
            DataError::new("the Decimal schema has no \"scale\" parameter; a Decimal schema must say its scale")
        })?;
        text.parse().map_err(|_| {
            DataError::new(format!("the Decimal schema's \"scale\" parameter {text:?} is not a whole number"))
        })
    }

    /// The field of a struct schema with this name, with its position.
    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }
}

/// Connect's logical types, by the schema that names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logical {
    Decimal,
    Date,
    Time,
    Timestamp,
}

/// A value of Connect's data model. With a schema, the schema says what the value is (a struct's
/// fields are in the schema's order; a `Date` is an `Int32`); without one, the variant does, as
/// the Java class of a schemaless value does in Connect.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Boolean(bool),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(f32),
    Float64(f64),
    String(String),
    Bytes(Vec<u8>),
    Array(Vec<Value>),
    /// Entries in order; keys are values of any type, as in Connect.
    Map(Vec<(Value, Value)>),
    /// The field values, in the order of the struct schema's fields.
    Struct(Vec<Value>),
    /// A value of the `Decimal` logical type.
    Decimal(Decimal),
}

impl Value {
    /// The type a schemaless value of this variant has (Connect's `ConnectSchema.schemaType` of
    /// its class); none for null and for a decimal, which Connect has no schemaless type for.
    pub fn schemaless_type(&self) -> Option<Type> {
        Some(match self {
            Value::Null | Value::Decimal(_) => return None,
            Value::Boolean(_) => Type::Boolean,
            Value::Int8(_) => Type::Int8,
            Value::Int16(_) => Type::Int16,
            Value::Int32(_) => Type::Int32,
            Value::Int64(_) => Type::Int64,
            Value::Float32(_) => Type::Float32,
            Value::Float64(_) => Type::Float64,
            Value::String(_) => Type::String,
            Value::Bytes(_) => Type::Bytes,
            Value::Array(_) => Type::Array,
            Value::Map(_) => Type::Map,
            Value::Struct(_) => Type::Struct,
        })
    }

    /// What the value is, for messages: `a string`, `an int32`…
    pub fn describe(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Boolean(_) => "a boolean",
            Value::Int8(_) => "an int8",
            Value::Int16(_) => "an int16",
            Value::Int32(_) => "an int32",
            Value::Int64(_) => "an int64",
            Value::Float32(_) => "a float32",
            Value::Float64(_) => "a float64",
            Value::String(_) => "a string",
            Value::Bytes(_) => "bytes",
            Value::Array(_) => "an array",
            Value::Map(_) => "a map",
            Value::Struct(_) => "a struct",
            Value::Decimal(_) => "a decimal",
        }
    }
}

/// A schema (none for a schemaless value) and a value: what a converter reads from bytes and
/// writes to bytes (Connect's `SchemaAndValue`).
#[derive(Debug, Clone, PartialEq)]
pub struct Data {
    pub schema: Option<Arc<Schema>>,
    pub value: Value,
}

impl Data {
    /// No schema and no value: what a null record key or value (a tombstone) reads as.
    pub const NULL: Data = Data { schema: None, value: Value::Null };

    pub fn new(schema: Arc<Schema>, value: Value) -> Self {
        Data { schema: Some(schema), value }
    }

    pub fn schemaless(value: Value) -> Self {
        Data { schema: None, value }
    }
}

/// A value that does not fit its schema, or data a converter cannot represent; the message says
/// which and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DataError {
    pub message: String,
}

impl DataError {
    pub fn new(message: impl Into<String>) -> Self {
        DataError { message: message.into() }
    }

    /// The same problem, said to be inside `place` (a field, an element, a map key).
    pub fn inside(self, place: &str) -> Self {
        DataError { message: format!("{place}: {}", self.message) }
    }
}
