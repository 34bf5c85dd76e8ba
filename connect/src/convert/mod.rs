//! Converters: between Connect's data (`data::Data`) and the bytes of a Kafka record's key, value
//! or header, under Kafka Connect's class names and settings (`key.converter=…JsonConverter`,
//! `key.converter.schemas.enable=false`). Each task has converters of its own (`&mut self`: a
//! converter's caches need no lock). Depends on `data` only.
//!
//! `Converter::new(role, class, settings)` makes one. The files: `json` (`JsonConverter`:
//! envelopes or bare values, `decimal.format`, `replace.null.with.default`, schema caches of
//! `schemas.cache.size`), `json_text` (JSON as Jackson reads and writes it), `simple`
//! (`ByteArrayConverter`, `StringConverter`, `LongConverter` and the other number converters) and
//! `values` (`SimpleHeaderConverter`, the default `header.converter`). The host's worker runs them
//! in the record path of sources and of sinks; `connect/tests/conformance.rs` runs them beside
//! Connect's own classes.

pub mod json;
pub mod json_text;
mod simple;
pub mod values;

use crate::data::{Data, DataError, Value};

pub use json::JsonConverter;
pub use simple::{ByteArrayConverter, NumberConverter, NumberKind, StringConverter};
pub use values::SimpleHeaderConverter;

/// Which part of a record a converter is for (Connect's `ConverterType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Key,
    Value,
    Header,
}

impl Role {
    /// The prefix of the role's class key and settings: `key.converter` and `key.converter.…`.
    pub fn key(self) -> &'static str {
        match self {
            Role::Key => "key.converter",
            Role::Value => "value.converter",
            Role::Header => "header.converter",
        }
    }
}

/// A converter's settings could not be used: which setting, its value, and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConverterConfigError {
    /// The key as the user wrote it (with its prefix), where one key is at fault.
    pub key: Option<String>,
    pub message: String,
}

/// The settings of one converter: the keys under its prefix, the prefix taken off (`schemas.enable`
/// for `value.converter.schemas.enable`), last value winning.
pub struct Settings {
    prefix: String,
    pairs: Vec<(String, String)>,
}

impl Settings {
    /// The settings under `prefix.` among `config`'s pairs.
    pub fn under(prefix: &str, config: &[(String, String)]) -> Self {
        let dotted = format!("{prefix}.");
        let pairs = config
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&dotted).map(|rest| (rest.to_string(), v.clone())))
            .collect();
        Settings { prefix: prefix.to_string(), pairs }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.trim())
    }

    pub(crate) fn invalid(&self, key: &str, value: &str, expected: &str) -> ConverterConfigError {
        let full = format!("{}.{key}", self.prefix);
        ConverterConfigError { message: format!("{full}={value} is not valid: {expected}"), key: Some(full) }
    }

    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.get(key)
    }

    /// A boolean as Kafka's `ConfigDef` reads one: `true` or `false`, in any case.
    pub(crate) fn boolean(&self, key: &str, default: bool) -> Result<bool, ConverterConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(self.invalid(key, v, "expected true or false")),
        }
    }

    /// A count of at least 1, at most `MAX_CACHE_ENTRIES`.
    pub(crate) fn count(&self, key: &str, default: usize) -> Result<usize, ConverterConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => {
                v.parse::<usize>().ok().filter(|n| (1..=MAX_CACHE_ENTRIES).contains(n)).ok_or_else(|| {
                    self.invalid(key, v, &format!("expected a whole number from 1 to {MAX_CACHE_ENTRIES}"))
                })
            }
        }
    }
}

/// The most entries a converter's cache (`schemas.cache.size`) may hold.
pub const MAX_CACHE_ENTRIES: usize = 100_000;

/// One of the converters Wharf has, configured.
pub enum Converter {
    ByteArray(ByteArrayConverter),
    String(StringConverter),
    Number(NumberConverter),
    Json(Box<JsonConverter>),
    /// Header values only, as in Connect.
    SimpleHeader(Box<SimpleHeaderConverter>),
}

/// The converters, by Kafka Connect's class name (also accepted: the simple class name, and the
/// simple name without `Converter`, as Connect's plugin aliases allow).
const CLASSES: &[(&str, &str)] = &[
    ("org.apache.kafka.connect.converters.ByteArrayConverter", "ByteArray"),
    ("org.apache.kafka.connect.storage.StringConverter", "String"),
    ("org.apache.kafka.connect.json.JsonConverter", "Json"),
    ("org.apache.kafka.connect.converters.LongConverter", "Long"),
    ("org.apache.kafka.connect.converters.IntegerConverter", "Integer"),
    ("org.apache.kafka.connect.converters.ShortConverter", "Short"),
    ("org.apache.kafka.connect.converters.DoubleConverter", "Double"),
    ("org.apache.kafka.connect.converters.FloatConverter", "Float"),
    ("org.apache.kafka.connect.converters.BooleanConverter", "Boolean"),
    (SIMPLE_HEADER_CONVERTER, "SimpleHeader"),
];

/// Every converter class Wharf has, with whether it converts a record's keys and values (a
/// `converter`, in the plugin list's words) and not header values only.
pub fn classes() -> impl Iterator<Item = (&'static str, bool)> {
    CLASSES.iter().map(|(class, _)| (*class, *class != SIMPLE_HEADER_CONVERTER))
}

/// Connect's default header converter, which converts header values only.
pub const SIMPLE_HEADER_CONVERTER: &str = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

/// The full class name a converter class setting names, if Wharf has it.
pub fn class_name(given: &str) -> Option<&'static str> {
    let given = given.trim();
    CLASSES.iter().find_map(|(class, alias)| {
        let simple = &class[class.rfind('.').map_or(0, |i| i + 1)..];
        (given == *class || given == simple || given == *alias).then_some(*class)
    })
}

impl Converter {
    /// The converter `class` names, configured from `settings`; the error says what is
    /// available when the class is not.
    pub fn new(role: Role, class: &str, settings: &Settings) -> Result<Self, ConverterConfigError> {
        let Some(full) = class_name(class) else {
            let known: Vec<&str> = CLASSES.iter().map(|(c, _)| *c).collect();
            return Err(ConverterConfigError {
                key: Some(role.key().to_string()),
                message: format!(
                    "{}={} is not a converter Wharf has; use one of {}",
                    role.key(),
                    class.trim(),
                    known.join(", ")
                ),
            });
        };
        let simple = &full[full.rfind('.').map_or(0, |i| i + 1)..];
        if full == SIMPLE_HEADER_CONVERTER && role != Role::Header {
            return Err(ConverterConfigError {
                key: Some(role.key().to_string()),
                message: format!(
                    "{}={} converts header values only; for a record's {} use one of the others, such as \
                     org.apache.kafka.connect.storage.StringConverter",
                    role.key(),
                    class.trim(),
                    if role == Role::Key { "key" } else { "value" }
                ),
            });
        }
        Ok(match simple {
            "ByteArrayConverter" => Converter::ByteArray(ByteArrayConverter),
            "StringConverter" => Converter::String(StringConverter::new(settings)?),
            "JsonConverter" => Converter::Json(Box::new(JsonConverter::new(settings)?)),
            "LongConverter" => Converter::Number(NumberConverter::new(NumberKind::Long)),
            "IntegerConverter" => Converter::Number(NumberConverter::new(NumberKind::Integer)),
            "ShortConverter" => Converter::Number(NumberConverter::new(NumberKind::Short)),
            "DoubleConverter" => Converter::Number(NumberConverter::new(NumberKind::Double)),
            "FloatConverter" => Converter::Number(NumberConverter::new(NumberKind::Float)),
            "SimpleHeaderConverter" => Converter::SimpleHeader(Box::default()),
            _ => Converter::Number(NumberConverter::new(NumberKind::Boolean)),
        })
    }

    /// Data to bytes (Connect's `fromConnectData`); none for a null key, value or header.
    pub fn from_data(&mut self, data: &Data) -> Result<Option<Vec<u8>>, DataError> {
        match self {
            Converter::ByteArray(c) => c.from_data(data),
            Converter::String(c) => c.from_data(data),
            Converter::Number(c) => c.from_data(data),
            Converter::Json(c) => c.from_data(data),
            Converter::SimpleHeader(c) => c.from_data(data),
        }
    }

    /// As `from_data`, taking the data: a string or bytes that go out as they are (through
    /// `ByteArrayConverter`, or a UTF-8 `StringConverter`) give their buffer instead of a copy.
    pub fn from_owned_data(&mut self, data: Data) -> Result<Option<Vec<u8>>, DataError> {
        let passes = match (&*self, &data.value) {
            (Converter::ByteArray(_), _) => ByteArrayConverter::takes_as_is(&data),
            (Converter::String(c), Value::String(_)) => c.is_utf8(),
            (Converter::String(_), Value::Bytes(_)) => true,
            _ => false,
        };
        match data.value {
            Value::String(text) if passes => Ok(Some(text.into_bytes())),
            Value::Bytes(bytes) if passes => Ok(Some(bytes)),
            value => self.from_data(&Data { schema: data.schema, value }),
        }
    }

    /// Bytes to data (Connect's `toConnectData`); null bytes read as `Data::NULL`.
    pub fn to_data(&mut self, bytes: Option<&[u8]>) -> Result<Data, DataError> {
        match self {
            Converter::ByteArray(c) => Ok(c.to_data(bytes)),
            Converter::String(c) => Ok(c.to_data(bytes)),
            Converter::Number(c) => c.to_data(bytes),
            Converter::Json(c) => c.to_data(bytes),
            Converter::SimpleHeader(c) => Ok(c.to_data(bytes)),
        }
    }

    /// Whether bytes pass through unchanged both ways (a record part that needs no conversion).
    pub fn passes_bytes_through(&self) -> bool {
        matches!(self, Converter::ByteArray(_))
    }
}
