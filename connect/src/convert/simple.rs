//! The converters of one value each: `ByteArrayConverter` (bytes as they are),
//! `StringConverter` (text in an encoding) and the number converters (`LongConverter` and its
//! kin, Kafka's fixed-width big-endian serializers).

use std::sync::{Arc, OnceLock};

use super::{json_text, ConverterConfigError, Settings};
use crate::data::{Data, DataError, Schema, Type, Value};

/// Connect's `Schema.OPTIONAL_…_SCHEMA`, shared by every record a converter reads.
fn optional(kind: Type) -> Arc<Schema> {
    static SCHEMAS: OnceLock<Vec<Arc<Schema>>> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        [Type::Bytes, Type::String, Type::Int64, Type::Int32, Type::Int16, Type::Float64, Type::Float32, Type::Boolean]
            .into_iter()
            .map(|kind| Arc::new(Schema::of(kind).optional()))
            .collect()
    });
    all.iter().find(|s| s.kind == kind).cloned().unwrap_or_else(|| Arc::new(Schema::of(kind).optional()))
}

/// Bytes as they are. Unlike Connect's, it also writes a string as its UTF-8 bytes (Connect
/// refuses a string schema), so that sources that hand over text (the file source) keep working
/// with Wharf's default converter; a value of any other type is refused as in Connect.
pub struct ByteArrayConverter;

impl ByteArrayConverter {
    /// Whether the data goes out as the bytes it holds: bytes under a bytes schema (or none), a
    /// string under a string schema (or none).
    pub fn takes_as_is(data: &Data) -> bool {
        match &data.value {
            Value::String(_) => data.schema.as_ref().is_none_or(|s| s.kind == Type::String),
            Value::Bytes(_) => data.schema.as_ref().is_none_or(|s| s.kind == Type::Bytes),
            _ => false,
        }
    }

    pub fn from_data(&self, data: &Data) -> Result<Option<Vec<u8>>, DataError> {
        if let (Value::String(text), true) = (&data.value, Self::takes_as_is(data)) {
            return Ok(Some(text.as_bytes().to_vec()));
        }
        if let Some(schema) = &data.schema {
            if schema.kind != Type::Bytes {
                return Err(DataError::new(format!(
                    "Invalid schema type for ByteArrayConverter: {}",
                    schema.kind.name().to_uppercase()
                )));
            }
        }
        match &data.value {
            Value::Null => Ok(None),
            Value::Bytes(bytes) => Ok(Some(bytes.clone())),
            other => Err(DataError::new(format!("ByteArrayConverter is not compatible with {}", other.describe()))),
        }
    }

    pub fn to_data(&self, bytes: Option<&[u8]>) -> Data {
        Data::new(optional(Type::Bytes), bytes.map_or(Value::Null, |b| Value::Bytes(b.to_vec())))
    }
}

/// The text encodings `converter.encoding` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Ascii,
    Latin1,
}

pub struct StringConverter {
    encoding: Encoding,
}

impl StringConverter {
    pub fn new(settings: &Settings) -> Result<Self, ConverterConfigError> {
        let encoding = match settings.text("converter.encoding").map(|e| e.to_ascii_uppercase()) {
            None => Encoding::Utf8,
            Some(e) if e == "UTF-8" || e == "UTF8" => Encoding::Utf8,
            Some(e) if e == "US-ASCII" || e == "ASCII" => Encoding::Ascii,
            Some(e) if e == "ISO-8859-1" || e == "ISO8859_1" || e == "LATIN1" => Encoding::Latin1,
            Some(e) => {
                return Err(settings.invalid(
                    "converter.encoding",
                    &e,
                    "Wharf's StringConverter speaks UTF-8, US-ASCII and ISO-8859-1",
                ))
            }
        };
        Ok(StringConverter { encoding })
    }

    /// The value's text (Java's `toString()` of it), encoded. Bytes pass through as they are.
    pub fn from_data(&self, data: &Data) -> Result<Option<Vec<u8>>, DataError> {
        let text = match &data.value {
            Value::Null => return Ok(None),
            Value::Bytes(bytes) => return Ok(Some(bytes.clone())),
            Value::String(text) => return Ok(Some(self.encode(text))),
            other => java_text(data.schema.as_deref(), other),
        };
        Ok(Some(self.encode(&text)))
    }

    /// Whether text is written as UTF-8 (its bytes as they are).
    pub fn is_utf8(&self) -> bool {
        self.encoding == Encoding::Utf8
    }

    fn encode(&self, text: &str) -> Vec<u8> {
        match self.encoding {
            Encoding::Utf8 => text.as_bytes().to_vec(),
            // Java writes '?' for a character the charset lacks.
            Encoding::Ascii => text.chars().map(|c| if c.is_ascii() { c as u8 } else { b'?' }).collect(),
            Encoding::Latin1 => text.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')).collect(),
        }
    }

    pub fn to_data(&self, bytes: Option<&[u8]>) -> Data {
        let value = match bytes {
            None => Value::Null,
            // Java decodes bytes that are not valid in the charset as U+FFFD.
            Some(bytes) => Value::String(match self.encoding {
                Encoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
                Encoding::Ascii => bytes.iter().map(|b| if b.is_ascii() { *b as char } else { '\u{fffd}' }).collect(),
                Encoding::Latin1 => bytes.iter().map(|b| *b as char).collect(),
            }),
        };
        Data::new(optional(Type::String), value)
    }
}

/// A value as Java's `toString()` writes it (what Connect's StringConverter writes).
fn java_text(schema: Option<&Schema>, value: &Value) -> String {
    let float = |write: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        write(&mut out);
        // Java's toString does not quote NaN and the infinities; Jackson does.
        String::from_utf8_lossy(&out).trim_matches('"').to_string()
    };
    match value {
        Value::Null => "null".to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Int8(n) => n.to_string(),
        Value::Int16(n) => n.to_string(),
        Value::Int32(n) => n.to_string(),
        Value::Int64(n) => n.to_string(),
        Value::Float32(x) => float(&|out| json_text::write_float(out, *x)),
        Value::Float64(x) => float(&|out| json_text::write_double(out, *x)),
        Value::String(s) => s.clone(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Decimal(d) => d.to_java_string(),
        Value::Array(elements) => {
            let element = schema.and_then(|s| s.value.as_deref());
            let parts: Vec<String> = elements.iter().map(|e| java_text(element, e)).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Map(entries) => {
            let (k, v) = (schema.and_then(|s| s.key.as_deref()), schema.and_then(|s| s.value.as_deref()));
            let parts: Vec<String> =
                entries.iter().map(|(key, value)| format!("{}={}", java_text(k, key), java_text(v, value))).collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Struct(values) => {
            let fields = schema.map(|s| s.fields.as_slice()).unwrap_or_default();
            let parts: Vec<String> = fields
                .iter()
                .zip(values)
                .filter(|(_, v)| **v != Value::Null)
                .map(|(f, v)| format!("{}={}", f.name, java_text(Some(&f.schema), v)))
                .collect();
            format!("Struct{{{}}}", parts.join(","))
        }
    }
}

/// The number types of Kafka's fixed-width serializers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    Long,
    Integer,
    Short,
    Double,
    Float,
    Boolean,
}

impl NumberKind {
    fn width(self) -> usize {
        match self {
            NumberKind::Long | NumberKind::Double => 8,
            NumberKind::Integer | NumberKind::Float => 4,
            NumberKind::Short => 2,
            NumberKind::Boolean => 1,
        }
    }

    fn schema_type(self) -> Type {
        match self {
            NumberKind::Long => Type::Int64,
            NumberKind::Integer => Type::Int32,
            NumberKind::Short => Type::Int16,
            NumberKind::Double => Type::Float64,
            NumberKind::Float => Type::Float32,
            NumberKind::Boolean => Type::Boolean,
        }
    }

    fn deserializer(self) -> &'static str {
        match self {
            NumberKind::Long => "LongDeserializer",
            NumberKind::Integer => "IntegerDeserializer",
            NumberKind::Short => "ShortDeserializer",
            NumberKind::Double => "DoubleDeserializer",
            NumberKind::Float => "FloatDeserializer",
            NumberKind::Boolean => "BooleanDeserializer",
        }
    }
}

/// `LongConverter`, `IntegerConverter`, `ShortConverter`, `DoubleConverter`, `FloatConverter`
/// and `BooleanConverter`: one value in Kafka's fixed-width big-endian form.
pub struct NumberConverter {
    kind: NumberKind,
}

impl NumberConverter {
    pub fn new(kind: NumberKind) -> Self {
        NumberConverter { kind }
    }

    pub fn from_data(&self, data: &Data) -> Result<Option<Vec<u8>>, DataError> {
        let kind = self.kind;
        if kind == NumberKind::Boolean {
            if let Some(schema) = data.schema.as_deref().filter(|s| s.kind != Type::Boolean) {
                return Err(DataError::new(format!(
                    "Invalid schema type for BooleanConverter: {}",
                    schema.kind.name().to_uppercase()
                )));
            }
        }
        let bytes = match (kind, &data.value) {
            (_, Value::Null) => return Ok(None),
            (NumberKind::Long, Value::Int64(n)) => n.to_be_bytes().to_vec(),
            (NumberKind::Integer, Value::Int32(n)) => n.to_be_bytes().to_vec(),
            (NumberKind::Short, Value::Int16(n)) => n.to_be_bytes().to_vec(),
            // Java's doubleToLongBits: every NaN is written as the one canonical NaN.
            (NumberKind::Double, Value::Float64(x)) => {
                if x.is_nan() { f64::NAN } else { *x }.to_bits().to_be_bytes().to_vec()
            }
            (NumberKind::Float, Value::Float32(x)) => x.to_bits().to_be_bytes().to_vec(),
            (NumberKind::Boolean, Value::Boolean(b)) => vec![u8::from(*b)],
            (_, other) => {
                return Err(DataError::new(format!(
                    "Failed to serialize to {} (was {})",
                    kind.schema_type().name().to_uppercase(),
                    other.describe()
                )))
            }
        };
        Ok(Some(bytes))
    }

    pub fn to_data(&self, bytes: Option<&[u8]>) -> Result<Data, DataError> {
        let kind = self.kind;
        let schema = optional(kind.schema_type());
        let Some(bytes) = bytes else { return Ok(Data::new(schema, Value::Null)) };
        if bytes.len() != kind.width() {
            return Err(DataError::new(format!(
                "Failed to deserialize {}: Size of data received by {} is not {}",
                kind.schema_type().name().to_uppercase(),
                kind.deserializer(),
                kind.width()
            )));
        }
        let mut eight = [0u8; 8];
        eight[8 - bytes.len()..].copy_from_slice(bytes);
        let value = match kind {
            NumberKind::Long => Value::Int64(i64::from_be_bytes(eight)),
            NumberKind::Integer => Value::Int32(i64::from_be_bytes(eight) as i32),
            NumberKind::Short => Value::Int16(i64::from_be_bytes(eight) as i16),
            NumberKind::Double => Value::Float64(f64::from_bits(u64::from_be_bytes(eight))),
            NumberKind::Float => Value::Float32(f32::from_bits(u64::from_be_bytes(eight) as u32)),
            NumberKind::Boolean => match bytes[0] {
                0 => Value::Boolean(false),
                1 => Value::Boolean(true),
                _ => {
                    return Err(DataError::new(
                        "Failed to deserialize BOOLEAN: Unexpected byte received by BooleanDeserializer: the byte must be 0 or 1",
                    ))
                }
            },
        };
        Ok(Data::new(schema, value))
    }
}
