//! Kafka Connect's `JsonConverter`: data as JSON, with its schema in a `{"schema":…,"payload":…}`
//! envelope (`schemas.enable=true`, the default) or as the bare value. The bytes are Connect's:
//! the same schema JSON (field order included), the same payload encodings (bytes and BASE64
//! decimals as base64 strings, maps with non-string keys as arrays of pairs, logical types as
//! their integers), the same reading of both forms.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;

use super::json_text::{self, Json};
use super::{ConverterConfigError, Settings};
use crate::data::{Data, DataError, Decimal, Field, Logical, Schema, Type, Value};

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// How a decimal's payload is written (`decimal.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalFormat {
    /// Its unscaled integer's bytes, in base64.
    Base64,
    /// A JSON number.
    Numeric,
}

pub struct JsonConverter {
    schemas_enable: bool,
    decimal_format: DecimalFormat,
    replace_null_with_default: bool,
    /// `schemas.cache.size`: the most schemas each direction remembers.
    cache_size: usize,
    /// Schemas written lately, by address, with their JSON: a schema shared by many records (the
    /// same `Arc`) is turned into JSON once. The `Arc` is held, so no other schema can take the
    /// address while the entry stands.
    written: HashMap<usize, (Arc<Schema>, Vec<u8>)>,
    /// Schemas read lately, by their JSON.
    read: HashMap<Json, Arc<Schema>>,
}

impl JsonConverter {
    pub fn new(settings: &Settings) -> Result<Self, ConverterConfigError> {
        let decimal_format = match settings.text("decimal.format").unwrap_or("BASE64").to_ascii_uppercase().as_str() {
            "BASE64" => DecimalFormat::Base64,
            "NUMERIC" => DecimalFormat::Numeric,
            other => {
                return Err(settings.invalid(
                    "decimal.format",
                    other,
                    "expected BASE64 (the unscaled bytes, in base64) or NUMERIC (a JSON number)",
                ))
            }
        };
        Ok(JsonConverter {
            schemas_enable: settings.boolean("schemas.enable", true)?,
            decimal_format,
            replace_null_with_default: settings.boolean("replace.null.with.default", true)?,
            cache_size: settings.count("schemas.cache.size", 1000)?,
            written: HashMap::new(),
            read: HashMap::new(),
        })
    }

    /// Connect's `fromConnectData`: none for no schema and a null value (a tombstone).
    pub fn from_data(&mut self, data: &Data) -> Result<Option<Vec<u8>>, DataError> {
        if data.schema.is_none() && data.value == Value::Null {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(64);
        if self.schemas_enable {
            out.extend_from_slice(b"{\"schema\":");
            match &data.schema {
                None => out.extend_from_slice(b"null"),
                Some(schema) => {
                    let json = self.schema_json(schema)?;
                    out.extend_from_slice(json);
                }
            }
            out.extend_from_slice(b",\"payload\":");
            self.write_value(&mut out, data.schema.as_deref(), &data.value)?;
            out.push(b'}');
        } else {
            self.write_value(&mut out, data.schema.as_deref(), &data.value)?;
        }
        Ok(Some(out))
    }

    /// The schema's JSON, from the cache when this schema was written lately.
    fn schema_json(&mut self, schema: &Arc<Schema>) -> Result<&[u8], DataError> {
        let address = Arc::as_ptr(schema) as usize;
        if !self.written.contains_key(&address) {
            let mut json = Vec::with_capacity(64);
            self.write_schema(&mut json, schema)?;
            if self.written.len() >= self.cache_size.max(1) {
                self.written.clear();
            }
            self.written.insert(address, (schema.clone(), json));
        }
        Ok(self.written.get(&address).map(|(_, json)| json.as_slice()).unwrap_or_default())
    }

    /// Connect's `asJsonSchema`, written straight to bytes in its member order.
    fn write_schema(&self, out: &mut Vec<u8>, schema: &Schema) -> Result<(), DataError> {
        self.write_schema_members(out, schema)?;
        out.push(b'}');
        Ok(())
    }

    /// The schema's members, the closing brace left out (a struct field adds its name).
    fn write_schema_members(&self, out: &mut Vec<u8>, schema: &Schema) -> Result<(), DataError> {
        out.extend_from_slice(b"{\"type\":");
        let name = match schema.kind {
            Type::Float32 => "float",
            Type::Float64 => "double",
            other => other.name(),
        };
        json_text::write_string(out, name);
        match schema.kind {
            Type::Array => {
                out.extend_from_slice(b",\"items\":");
                self.write_schema(out, child(&schema.value, "an array schema", "element")?)?;
            }
            Type::Map => {
                out.extend_from_slice(b",\"keys\":");
                self.write_schema(out, child(&schema.key, "a map schema", "key")?)?;
                out.extend_from_slice(b",\"values\":");
                self.write_schema(out, child(&schema.value, "a map schema", "value")?)?;
            }
            Type::Struct => {
                out.extend_from_slice(b",\"fields\":[");
                for (i, field) in schema.fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.write_schema_members(out, &field.schema)?;
                    out.extend_from_slice(b",\"field\":");
                    json_text::write_string(out, &field.name);
                    out.push(b'}');
                }
                out.push(b']');
            }
            _ => {}
        }
        out.extend_from_slice(if schema.optional { b",\"optional\":true" } else { b",\"optional\":false" });
        if let Some(name) = &schema.name {
            out.extend_from_slice(b",\"name\":");
            json_text::write_string(out, name);
        }
        if let Some(version) = schema.version {
            out.extend_from_slice(b",\"version\":");
            out.extend_from_slice(version.to_string().as_bytes());
        }
        if let Some(doc) = &schema.doc {
            out.extend_from_slice(b",\"doc\":");
            json_text::write_string(out, doc);
        }
        if let Some(parameters) = &schema.parameters {
            out.extend_from_slice(b",\"parameters\":{");
            for (i, (key, value)) in parameters.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_text::write_string(out, key);
                out.push(b':');
                json_text::write_string(out, value);
            }
            out.push(b'}');
        }
        if let Some(default) = &schema.default {
            if *default != Value::Null {
                out.extend_from_slice(b",\"default\":");
                self.write_value(out, Some(schema), default).map_err(|e| e.inside("the schema's default"))?;
            }
        }
        Ok(())
    }

    /// Connect's `convertToJson`.
    fn write_value(&self, out: &mut Vec<u8>, schema: Option<&Schema>, value: &Value) -> Result<(), DataError> {
        let Some(schema) = schema else { return self.write_schemaless(out, value) };
        if *value == Value::Null {
            return match &schema.default {
                Some(default) if self.replace_null_with_default && *default != Value::Null => {
                    self.write_value(out, Some(schema), default)
                }
                _ if schema.optional => {
                    out.extend_from_slice(b"null");
                    Ok(())
                }
                _ => Err(DataError::new(
                    "Conversion error: null value for field that is required and has no default value",
                )),
            };
        }
        if let Some(logical) = schema.logical() {
            return self.write_logical(out, schema, logical, value);
        }
        let mismatch =
            || DataError::new(format!("Invalid type for {}: {}", schema.kind.name().to_uppercase(), value.describe()));
        match (schema.kind, value) {
            (Type::Int8, Value::Int8(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            (Type::Int16, Value::Int16(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            (Type::Int32, Value::Int32(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            (Type::Int64, Value::Int64(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            (Type::Float32, Value::Float32(x)) => json_text::write_float(out, *x),
            (Type::Float64, Value::Float64(x)) => json_text::write_double(out, *x),
            (Type::Boolean, Value::Boolean(b)) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            (Type::String, Value::String(s)) => json_text::write_string(out, s),
            (Type::Bytes, Value::Bytes(b)) => write_base64(out, b),
            (Type::Array, Value::Array(elements)) => {
                let element = child(&schema.value, "an array schema", "element")?;
                out.push(b'[');
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.write_value(out, Some(element), e).map_err(|e| e.inside(&format!("element {i}")))?;
                }
                out.push(b']');
            }
            (Type::Map, Value::Map(entries)) => {
                let key = child(&schema.key, "a map schema", "key")?;
                let value = child(&schema.value, "a map schema", "value")?;
                self.write_map(out, entries, Some(key), Some(value), key.kind == Type::String)?;
            }
            (Type::Struct, Value::Struct(values)) => {
                if values.len() != schema.fields.len() {
                    return Err(DataError::new(format!(
                        "Mismatching schema: the struct has {} values for a schema of {} fields",
                        values.len(),
                        schema.fields.len()
                    )));
                }
                out.push(b'{');
                for (i, (Field { name, schema }, v)) in schema.fields.iter().zip(values).enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    json_text::write_string(out, name);
                    out.push(b':');
                    self.write_value(out, Some(schema), v).map_err(|e| e.inside(&format!("field {name:?}")))?;
                }
                out.push(b'}');
            }
            _ => return Err(mismatch()),
        }
        Ok(())
    }

    fn write_logical(
        &self,
        out: &mut Vec<u8>,
        schema: &Schema,
        logical: Logical,
        value: &Value,
    ) -> Result<(), DataError> {
        match (logical, value) {
            (Logical::Decimal, Value::Decimal(d)) => match self.decimal_format {
                DecimalFormat::Numeric => out.extend_from_slice(d.to_java_string().as_bytes()),
                DecimalFormat::Base64 => {
                    let scale = schema.decimal_scale()?;
                    if d.scale() != scale {
                        return Err(DataError::new(format!(
                            "Decimal value has mismatching scale for given Decimal schema. Schema has scale {scale}, value has scale {}.",
                            d.scale()
                        )));
                    }
                    write_base64(out, d.unscaled_bytes());
                }
            },
            (Logical::Date, Value::Int32(days)) => out.extend_from_slice(days.to_string().as_bytes()),
            (Logical::Time, Value::Int32(millis)) => {
                if !(0..=MILLIS_PER_DAY as i32).contains(millis) {
                    return Err(DataError::new(
                        "Kafka Connect Time type should not have any date fields set to non-zero values.",
                    ));
                }
                out.extend_from_slice(millis.to_string().as_bytes());
            }
            (Logical::Timestamp, Value::Int64(millis)) => out.extend_from_slice(millis.to_string().as_bytes()),
            (logical, value) => {
                return Err(DataError::new(format!(
                    "Invalid type for {logical:?}: {} (a {logical:?} is {})",
                    value.describe(),
                    match logical {
                        Logical::Decimal => "a decimal value",
                        Logical::Date => "an int32 of days since the epoch",
                        Logical::Time => "an int32 of milliseconds of the day",
                        Logical::Timestamp => "an int64 of milliseconds since the epoch",
                    }
                )))
            }
        }
        Ok(())
    }

    fn write_map(
        &self,
        out: &mut Vec<u8>,
        entries: &[(Value, Value)],
        key: Option<&Schema>,
        value: Option<&Schema>,
        object: bool,
    ) -> Result<(), DataError> {
        if object {
            // Keys are written as the text of their JSON (a string's contents).
            out.push(b'{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match k {
                    Value::String(text) => json_text::write_string(out, text),
                    // Another key (a null, under an optional string schema) is named by its JSON.
                    _ => {
                        let mut written = Vec::new();
                        self.write_value(&mut written, key, k).map_err(|e| e.inside("a map key"))?;
                        json_text::write_string(out, &String::from_utf8_lossy(&written));
                    }
                }
                out.push(b':');
                self.write_value(out, value, v).map_err(|e| e.inside("a map value"))?;
            }
            out.push(b'}');
        } else {
            out.push(b'[');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                self.write_value(out, key, k).map_err(|e| e.inside("a map key"))?;
                out.push(b',');
                self.write_value(out, value, v).map_err(|e| e.inside("a map value"))?;
                out.push(b']');
            }
            out.push(b']');
        }
        Ok(())
    }

    /// A value without a schema: its variant says its type, as a Java value's class does.
    fn write_schemaless(&self, out: &mut Vec<u8>, value: &Value) -> Result<(), DataError> {
        match value {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Int8(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::Int16(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::Int32(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::Int64(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Value::Float32(x) => json_text::write_float(out, *x),
            Value::Float64(x) => json_text::write_double(out, *x),
            Value::String(s) => json_text::write_string(out, s),
            Value::Bytes(b) => write_base64(out, b),
            Value::Array(elements) => {
                out.push(b'[');
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.write_schemaless(out, e).map_err(|e| e.inside(&format!("element {i}")))?;
                }
                out.push(b']');
            }
            Value::Map(entries) => {
                let object = entries.iter().all(|(k, _)| matches!(k, Value::String(_)));
                self.write_map(out, entries, None, None, object)?;
            }
            Value::Struct(_) => return Err(DataError::new("a struct needs a schema; this one has none")),
            Value::Decimal(_) => {
                return Err(DataError::new("a decimal without a schema has no JSON form; give it a Decimal schema"))
            }
        }
        Ok(())
    }

    /// Connect's `toConnectData`: null bytes (a tombstone) read as no schema and no value.
    pub fn to_data(&mut self, bytes: Option<&[u8]>) -> Result<Data, DataError> {
        let Some(bytes) = bytes else { return Ok(Data::NULL) };
        let json = json_text::parse(bytes).map_err(|e| {
            DataError::new(format!("Converting byte[] to Kafka Connect data failed due to serialization error: {e}"))
        })?;
        let mut json = json;
        if !self.schemas_enable {
            return Ok(Data::schemaless(self.read_value(None, json.as_mut())?));
        }
        let is_envelope = |members: &[(String, Json)]| {
            members.len() == 2
                && members.iter().any(|(k, _)| k == "schema")
                && members.iter().any(|(k, _)| k == "payload")
        };
        let Some(Json::Object(members)) = json.as_mut().filter(|j| matches!(j, Json::Object(m) if is_envelope(m)))
        else {
            return Err(DataError::new(
                "JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may not contain \
                 additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your \
                 converter configuration.",
            ));
        };
        let schema = match members.iter().find(|(k, _)| k == "schema").map(|(_, v)| v) {
            None | Some(Json::Null) => None,
            Some(schema) => Some(self.read_schema_cached(schema)?),
        };
        let payload = members.iter_mut().find(|(k, _)| k == "payload").map(|(_, v)| v);
        let value = self.read_value(schema.as_ref(), payload)?;
        Ok(Data { schema, value })
    }

    fn read_schema_cached(&mut self, json: &Json) -> Result<Arc<Schema>, DataError> {
        if let Some(schema) = self.read.get(json) {
            return Ok(schema.clone());
        }
        let schema = Arc::new(self.read_schema(json)?);
        if self.read.len() >= self.cache_size.max(1) {
            self.read.clear();
        }
        self.read.insert(json.clone(), schema.clone());
        Ok(schema)
    }

    /// Connect's `asConnectSchema`.
    fn read_schema(&self, json: &Json) -> Result<Schema, DataError> {
        let kind = match json.get("type") {
            Some(Json::String(kind)) => kind.as_str(),
            _ => return Err(DataError::new("Schema must contain 'type' field")),
        };
        let mut schema = match kind {
            "boolean" => Schema::of(Type::Boolean),
            "int8" => Schema::of(Type::Int8),
            "int16" => Schema::of(Type::Int16),
            "int32" => Schema::of(Type::Int32),
            "int64" => Schema::of(Type::Int64),
            "float" => Schema::of(Type::Float32),
            "double" => Schema::of(Type::Float64),
            "bytes" => Schema::of(Type::Bytes),
            "string" => Schema::of(Type::String),
            "array" => match json.get("items") {
                None | Some(Json::Null) => return Err(DataError::new("Array schema did not specify the element type")),
                Some(items) => Schema::array(Arc::new(self.read_schema(items).map_err(|e| e.inside("items"))?)),
            },
            "map" => {
                let key = json.get("keys").ok_or_else(|| DataError::new("Map schema did not specify the key type"))?;
                let value =
                    json.get("values").ok_or_else(|| DataError::new("Map schema did not specify the value type"))?;
                if *key == Json::Null || *value == Json::Null {
                    return Err(DataError::new("Map schema's key and value schemas may not be null"));
                }
                Schema::map(
                    Arc::new(self.read_schema(key).map_err(|e| e.inside("keys"))?),
                    Arc::new(self.read_schema(value).map_err(|e| e.inside("values"))?),
                )
            }
            "struct" => {
                let Some(Json::Array(fields)) = json.get("fields") else {
                    return Err(DataError::new("Struct schema's \"fields\" argument is not an array."));
                };
                let mut read: Vec<Field> = Vec::with_capacity(fields.len());
                let mut names = std::collections::HashSet::with_capacity(fields.len());
                for field in fields {
                    let Some(Json::String(name)) = field.get("field") else {
                        return Err(DataError::new("Struct schema's field name not specified properly"));
                    };
                    if !names.insert(name.as_str()) {
                        return Err(DataError::new(format!(
                            "Cannot create field because of field name duplication {name}"
                        )));
                    }
                    let schema = self.read_schema(field).map_err(|e| e.inside(&format!("field {name:?}")))?;
                    read.push(Field { name: name.clone(), schema: Arc::new(schema) });
                }
                Schema::structure(read)
            }
            other => return Err(DataError::new(format!("Unknown schema type: {other}"))),
        };
        schema.optional = json.get("optional") == Some(&Json::Bool(true));
        if let Some(Json::String(name)) = json.get("name") {
            schema.name = Some(name.clone());
        }
        if let Some(Json::Number { text, integral: true }) = json.get("version") {
            schema.version = Some(int_value(text, true) as i32);
        }
        if let Some(Json::String(doc)) = json.get("doc") {
            schema.doc = Some(doc.clone());
        }
        if let Some(Json::Object(parameters)) = json.get("parameters") {
            let mut read = Vec::with_capacity(parameters.len());
            for (key, value) in parameters {
                let Json::String(value) = value else {
                    return Err(DataError::new("Schema parameters must have string values."));
                };
                read.push((key.clone(), value.clone()));
            }
            schema.parameters = Some(read);
        }
        // Connect builds the default struct with the schema as it was before its default was
        // set, which then does not match: it refuses every struct default in JSON.
        if schema.kind == Type::Struct && json.get("default").is_some_and(|d| *d != Json::Null) {
            return Err(DataError::new(
                "Invalid default value: a struct schema's default cannot be read from JSON (Kafka Connect refuses it too)",
            ));
        }
        if let Some(default) = json.get("default") {
            let value = self
                .read_value(Some(&Arc::new(schema.clone())), Some(&mut default.clone()))
                .map_err(|e| DataError::new(format!("Invalid default value: {}", e.message)))?;
            if value != Value::Null {
                schema.default = Some(value);
            }
        }
        if schema.logical() == Some(Logical::Decimal) {
            schema.decimal_scale()?;
        }
        Ok(schema)
    }

    /// Connect's `convertToConnect`: the payload read with a schema, or without one (numbers
    /// become int64 or float64, objects maps, as in Connect). A payload whose JSON type does not
    /// fit the schema is refused (Connect reads some of those as 0, false or null).
    fn read_value(&self, schema: Option<&Arc<Schema>>, json: Option<&mut Json>) -> Result<Value, DataError> {
        let Some(schema) = schema else { return self.read_schemaless(json) };
        let json = match json {
            None | Some(Json::Null) => {
                return match &schema.default {
                    Some(default) if self.replace_null_with_default => Ok(default.clone()),
                    _ if schema.optional => Ok(Value::Null),
                    _ => Err(DataError::new(format!(
                        "Invalid null value for required {} field",
                        schema.kind.name().to_uppercase()
                    ))),
                };
            }
            Some(json) => json,
        };
        let node_type = json.node_type();
        let mismatch = || {
            DataError::new(format!(
                "a JSON {} cannot be read as {}{}",
                node_type,
                schema.kind.name(),
                schema.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
            ))
        };
        if let Some(logical) = schema.logical() {
            return match (logical, json) {
                (Logical::Decimal, Json::Number { text, .. }) => Ok(Value::Decimal(Decimal::parse(text)?)),
                (Logical::Decimal, Json::String(text)) => {
                    let bytes = BASE64
                        .decode(text)
                        .map_err(|e| DataError::new(format!("Invalid bytes for Decimal field: {e}")))?;
                    Ok(Value::Decimal(Decimal::from_unscaled_bytes(&bytes, schema.decimal_scale()?)?))
                }
                (Logical::Date, Json::Number { text, integral: true }) if fits_int(text) => {
                    Ok(Value::Int32(int_value(text, true) as i32))
                }
                (Logical::Time, Json::Number { text, integral: true }) if fits_int(text) => {
                    let millis = int_value(text, true) as i32;
                    if !(0..=MILLIS_PER_DAY as i32).contains(&millis) {
                        return Err(DataError::new(
                            "Time values must use number of milliseconds greater than 0 and less than 86400000",
                        ));
                    }
                    Ok(Value::Int32(millis))
                }
                (Logical::Timestamp, Json::Number { text, integral: true }) => Ok(Value::Int64(int_value(text, true))),
                (logical, _) => Err(DataError::new(format!(
                    "Invalid type for {logical:?}, underlying representation should be {} but was {}",
                    match logical {
                        Logical::Decimal => "numeric or bytes",
                        Logical::Timestamp => "integral",
                        _ => "integer",
                    },
                    node_type
                ))),
            };
        }
        Ok(match (schema.kind, json) {
            (Type::Boolean, Json::Bool(b)) => Value::Boolean(*b),
            (Type::Int8, Json::Number { text, integral }) => Value::Int8(int_value(text, *integral) as i32 as i8),
            (Type::Int16, Json::Number { text, integral }) => Value::Int16(int_value(text, *integral) as i32 as i16),
            (Type::Int32, Json::Number { text, integral }) => Value::Int32(int_value(text, *integral) as i32),
            (Type::Int64, Json::Number { text, integral }) => Value::Int64(int_value(text, *integral)),
            (Type::Float32, Json::Number { text, .. }) => Value::Float32(unsigned_zero(text.parse().unwrap_or(0.0))),
            (Type::Float64, Json::Number { text, .. }) => Value::Float64(unsigned_zero(text.parse().unwrap_or(0.0))),
            // The tree is read once: its strings move into the value.
            (Type::String, Json::String(s)) => Value::String(std::mem::take(s)),
            (Type::Bytes, Json::String(text)) => {
                Value::Bytes(BASE64.decode(text).map_err(|e| DataError::new(format!("Invalid bytes field: {e}")))?)
            }
            (Type::Array, Json::Array(elements)) => {
                let element = schema.value.as_ref();
                let mut values = Vec::with_capacity(elements.len());
                for (i, e) in elements.iter_mut().enumerate() {
                    values.push(self.read_value(element, Some(e)).map_err(|e| e.inside(&format!("element {i}")))?);
                }
                Value::Array(values)
            }
            (Type::Map, json) => {
                let (key, value) = (schema.key.as_ref(), schema.value.as_ref());
                if key.is_none_or(|k| k.kind == Type::String) {
                    let Json::Object(members) = json else {
                        return Err(DataError::new(format!(
                            "Maps with string fields should be encoded as JSON objects, but found {}",
                            node_type
                        )));
                    };
                    let mut entries = Vec::with_capacity(members.len());
                    for (k, v) in members.iter_mut() {
                        let read =
                            self.read_value(value, Some(v)).map_err(|e| e.inside(&format!("map entry {k:?}")))?;
                        entries.push((Value::String(std::mem::take(k)), read));
                    }
                    Value::Map(entries)
                } else {
                    let Json::Array(pairs) = json else {
                        return Err(DataError::new(format!(
                            "Maps with non-string fields should be encoded as JSON array of tuples, but found {}",
                            node_type
                        )));
                    };
                    let mut entries: Vec<(Value, Value)> = Vec::with_capacity(pairs.len());
                    for pair in pairs.iter_mut() {
                        let Json::Array(pair) = pair else {
                            return Err(DataError::new(format!(
                                "Found invalid map entry instead of array tuple: {}",
                                pair.node_type()
                            )));
                        };
                        let len = pair.len();
                        let [k, v] = pair.as_mut_slice() else {
                            return Err(DataError::new(format!(
                                "Found invalid map entry, expected length 2 but found :{}",
                                len
                            )));
                        };
                        let k = self.read_value(key, Some(k)).map_err(|e| e.inside("a map key"))?;
                        let v = self.read_value(value, Some(v)).map_err(|e| e.inside("a map value"))?;
                        // A repeated key keeps its first place and its last value, as a map does.
                        match entries.iter_mut().find(|(known, _)| *known == k) {
                            Some(entry) => entry.1 = v,
                            None => entries.push((k, v)),
                        }
                    }
                    Value::Map(entries)
                }
            }
            (Type::Struct, Json::Object(members)) => {
                let mut values = Vec::with_capacity(schema.fields.len());
                for field in &schema.fields {
                    let member = members.iter_mut().find(|(k, _)| *k == field.name).map(|(_, v)| v);
                    let read = self
                        .read_value(Some(&field.schema), member)
                        .map_err(|e| e.inside(&format!("field {:?}", field.name)))?;
                    values.push(read);
                }
                Value::Struct(values)
            }
            (Type::Struct, _) => {
                return Err(DataError::new(format!(
                    "Structs should be encoded as JSON objects, but found {}",
                    node_type
                )))
            }
            _ => return Err(mismatch()),
        })
    }

    fn read_schemaless(&self, json: Option<&mut Json>) -> Result<Value, DataError> {
        Ok(match json {
            None | Some(Json::Null) => Value::Null,
            Some(Json::Bool(b)) => Value::Boolean(*b),
            Some(Json::Number { text, integral: true }) => Value::Int64(int_value(text, true)),
            Some(Json::Number { text, integral: false }) => Value::Float64(unsigned_zero(text.parse().unwrap_or(0.0))),
            Some(Json::String(s)) => Value::String(std::mem::take(s)),
            Some(Json::Array(elements)) => {
                Value::Array(elements.iter_mut().map(|e| self.read_schemaless(Some(e))).collect::<Result<_, _>>()?)
            }
            Some(Json::Object(members)) => Value::Map(
                members
                    .iter_mut()
                    .map(|(k, v)| Ok((Value::String(std::mem::take(k)), self.read_schemaless(Some(v))?)))
                    .collect::<Result<_, DataError>>()?,
            ),
        })
    }
}

const MILLIS_PER_DAY: i64 = 24 * 60 * 60 * 1000;

fn child<'a>(schema: &'a Option<Arc<Schema>>, what: &str, part: &str) -> Result<&'a Schema, DataError> {
    schema.as_deref().ok_or_else(|| DataError::new(format!("{what} has no {part} schema")))
}

fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let written = BASE64.encode_slice(bytes, &mut out[start..]).unwrap_or(0);
    out.truncate(start + written);
    out.push(b'"');
}

/// BigDecimal has no negative zero: Jackson reads `-0.0` as zero.
fn unsigned_zero<F: PartialEq + Default>(x: F) -> F {
    if x == F::default() {
        F::default()
    } else {
        x
    }
}

/// Whether an integral JSON number fits in an int (Jackson's `isInt`).
fn fits_int(text: &str) -> bool {
    text.parse::<i32>().is_ok()
}

/// A JSON number as Jackson's `longValue()` reads it: the integer part (truncated toward zero),
/// its low 64 bits in two's complement, as Java's narrowing of a `BigInteger` or `BigDecimal`.
fn int_value(text: &str, integral: bool) -> i64 {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().unwrap_or(if integral { 0 } else { i64::MIN })),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: Vec<u8> = whole.bytes().chain(fraction.bytes()).collect();
    // The value is digits × 10^shift.
    crate::data::decimal::wrapping_long(negative, &digits, exponent.saturating_sub(fraction.len() as i64))
}

#[cfg(test)]
mod tests;
