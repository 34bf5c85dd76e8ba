//! Connect's `TimestampConverter` and `TimestampRouter`, with `java.text.SimpleDateFormat`
//! patterns read by `date_format`, in UTC.
//!
//! `TimestampConverter` converts a timestamp (the whole key or value, or one top-level field of a
//! struct or schemaless map) between text in a pattern (`string`), a count since the epoch
//! (`unix`, in `unix.precision`), and Connect's `Date`, `Time` and `Timestamp`. With a schema, the
//! input's kind comes from the schema (a `Date`, `Time` or `Timestamp` logical schema, a string,
//! an int64); without one, from the value (an int64 is `unix`, a string is `string`). Conversions
//! go through milliseconds since the epoch, as Connect's go through a `java.util.Date`: a `Date`
//! is midnight UTC of its day, a `Time` the time of day on 1970-01-01, and sub-millisecond digits
//! of a unix time are dropped (toward zero); seconds, microseconds and nanoseconds that overflow
//! a long are clamped, as `TimeUnit` clamps them.
//!
//! Connect has a schemaless form of `Date`, `Time` and `Timestamp` (a `java.util.Date` in a map
//! or as the whole value); Wharf's data has none. So without a schema, converting to `Date`,
//! `Time` or `Timestamp` gives the instant as an int64 of milliseconds since the epoch (for
//! `Date` midnight UTC of the day, for `Time` the milliseconds into the day), which a later
//! `TimestampConverter` reads back as the same instant (as `unix` in milliseconds, its default),
//! and a converter writes as a number, where Connect's `JsonConverter` refuses a schemaless
//! `java.util.Date`.
//!
//! `TimestampRouter` renames the record's topic from `topic.format`, `${topic}` standing for the
//! topic and `${timestamp}` for the record's timestamp in `timestamp.format` (in that order, as
//! Connect replaces them: a topic name holding `${timestamp}` has it replaced too).

use std::sync::Arc;

use crate::data::{logical, Data, Field, Schema, Type, Value};

use super::date_format::DateFormat;
use super::support::{copy_schema_basics, java_class, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

const PURPOSE: &str = "converting timestamp formats";
const MILLIS_PER_DAY: i64 = 86_400_000;

/// A string setting as Connect's `ConfigDef` reads one: trimmed of spaces and control
/// characters.
fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

/// A string setting that takes one of `choices`, exactly as written (Connect's `ValidString`).
fn exact_choice(
    settings: &Settings,
    name: &str,
    choices: &[&'static str],
    default: Option<&'static str>,
) -> Result<&'static str, TransformConfigError> {
    let key = settings.key(name);
    let given = match (settings.get(name).map(java_trim), default) {
        (Some(given), _) => given,
        (None, Some(default)) => default,
        (None, None) => {
            return Err(
                settings.problem(name, format!("{key} is required: one of {} (written as here)", choices.join(", ")))
            )
        }
    };
    choices.iter().copied().find(|c| *c == given).ok_or_else(|| {
        settings.problem(
            name,
            format!("Invalid value {given} for configuration {key}: String must be one of: {}", choices.join(", ")),
        )
    })
}

/// How a timestamp is represented (Connect's `target.type` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Unix,
    Date,
    Time,
    Timestamp,
}

const KINDS: [(&str, Kind); 5] = [
    ("string", Kind::String),
    ("unix", Kind::Unix),
    ("Date", Kind::Date),
    ("Time", Kind::Time),
    ("Timestamp", Kind::Timestamp),
];

/// The unit of a unix timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

#[derive(Debug)]
struct Converter {
    side: Side,
    /// The field holding the timestamp; empty for the whole key or value.
    field: String,
    target: Kind,
    /// The pattern strings are written in and read with.
    format: Option<DateFormat>,
    /// The key of the `format` setting, for messages.
    format_key: String,
    precision: Precision,
    replace_null_with_default: bool,
    /// The target's schema, required and optional.
    target_schemas: [Arc<Schema>; 2],
    schemas: SchemaCache,
}

pub(super) fn converter(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let field = java_trim(settings.string_or("field", "")).to_string();
    let names: Vec<&'static str> = KINDS.iter().map(|(n, _)| *n).collect();
    let target_name = exact_choice(settings, "target.type", &names, None)?;
    let target = KINDS.iter().find(|(n, _)| *n == target_name).map(|(_, k)| *k).unwrap_or(Kind::String);
    let pattern = java_trim(settings.string_or("format", ""));
    let format = match pattern.is_empty() {
        true if target == Kind::String => {
            return Err(settings.problem(
                "format",
                format!(
                    "TimestampConverter requires format option to be specified when using string timestamps: set {} to a SimpleDateFormat pattern, e.g. yyyy-MM-dd'T'HH:mm:ss.SSSX",
                    settings.key("format")
                ),
            ))
        }
        true => None,
        false => Some(DateFormat::new(pattern).map_err(|e| {
            settings.problem(
                "format",
                format!(
                    "{}: TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: {pattern}: {e}",
                    settings.key("format")
                ),
            )
        })?),
    };
    let precisions = ["nanoseconds", "microseconds", "milliseconds", "seconds"];
    let precision = match exact_choice(settings, "unix.precision", &precisions, Some("milliseconds"))? {
        "seconds" => Precision::Seconds,
        "microseconds" => Precision::Microseconds,
        "nanoseconds" => Precision::Nanoseconds,
        _ => Precision::Milliseconds,
    };
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    let target_schema = |optional: bool| {
        let schema = match target {
            Kind::String => Schema::of(Type::String),
            Kind::Unix => Schema::of(Type::Int64),
            Kind::Date => Schema::date(),
            Kind::Time => Schema::time(),
            Kind::Timestamp => Schema::timestamp(),
        };
        Arc::new(Schema { optional, ..schema })
    };
    Ok(Box::new(Converter {
        side,
        field,
        target,
        format,
        format_key: settings.key("format"),
        precision,
        replace_null_with_default,
        target_schemas: [target_schema(false), target_schema(true)],
        schemas: SchemaCache::new(),
    }))
}

impl Apply for Converter {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let part = match self.side {
            Side::Key => &record.key,
            Side::Value => &record.value,
        };
        if part.is_none() {
            return Ok(Outcome::Keep);
        }
        let data = self.side.take(record);
        let converted = match data.schema {
            Some(schema) => self.with_schema(schema, data.value)?,
            None => Data::schemaless(self.schemaless(data.value)?),
        };
        self.side.put(record, converted);
        Ok(Outcome::Keep)
    }
}

impl Converter {
    fn with_schema(&self, schema: Arc<Schema>, value: Value) -> Result<Data, String> {
        if self.field.is_empty() {
            let kind = kind_of_schema(&schema)?;
            let target = self.target_schemas[usize::from(schema.optional)].clone();
            return Ok(Data::new(target, self.convert(value, kind, true)?));
        }
        let values = match value {
            Value::Null => None,
            Value::Struct(values) if schema.kind == Type::Struct && values.len() == schema.fields.len() => Some(values),
            other => {
                let data = Data { schema: Some(schema), value: other };
                return Err(require_struct(&data, PURPOSE)
                    .err()
                    .unwrap_or_else(|| "the struct's values do not match its schema's fields".to_string()));
            }
        };
        if schema.kind != Type::Struct {
            return Err(format!(
                "TimestampConverter converts field \"{}\" of a struct, and the schema is {}, not a struct's",
                self.field,
                schema_text(&schema)
            ));
        }
        let updated = self.schemas.get_or_derive(&schema, |s| self.derive(s))?;
        let value = match values {
            None => Value::Null,
            Some(values) => Value::Struct(self.convert_fields(&schema, values)?),
        };
        Ok(Data::new(updated, value))
    }

    /// The struct's schema with the field's schema that of the target (Connect's
    /// `applyWithSchema`), its default converted too.
    fn derive(&self, schema: &Schema) -> Result<Schema, String> {
        let mut derived = copy_schema_basics(schema, Type::Struct);
        derived.fields = schema
            .fields
            .iter()
            .map(|field| match field.name == self.field {
                true => Field {
                    name: field.name.clone(),
                    schema: self.target_schemas[usize::from(field.schema.optional)].clone(),
                },
                false => field.clone(),
            })
            .collect();
        derived.optional = schema.optional;
        if let Some(Value::Struct(values)) = &schema.default {
            let converted =
                self.convert_fields(schema, values.clone()).map_err(|e| format!("the schema's default: {e}"))?;
            derived.default = Some(Value::Struct(converted));
        }
        Ok(derived)
    }

    /// A struct's field values with the field converted.
    fn convert_fields(&self, schema: &Schema, values: Vec<Value>) -> Result<Vec<Value>, String> {
        let mut converted = Vec::with_capacity(values.len());
        for (field, value) in schema.fields.iter().zip(values) {
            let value = match (&value, &field.schema.default) {
                (Value::Null, Some(default)) if self.replace_null_with_default => default.clone(),
                _ => value,
            };
            if field.name != self.field {
                converted.push(value);
                continue;
            }
            let value = self.convert(value, kind_of_schema(&field.schema)?, true)?;
            if value == Value::Null && !field.schema.optional {
                return Err(format!(
                    "Invalid value: null used for required field: \"{}\", schema type: {}",
                    field.name,
                    self.target_schemas[0].kind.name().to_uppercase()
                ));
            }
            converted.push(value);
        }
        Ok(converted)
    }

    fn schemaless(&self, value: Value) -> Result<Value, String> {
        if value == Value::Null || self.field.is_empty() {
            return self.convert_inferred(value);
        }
        let mut entries = match value {
            Value::Map(entries) => entries,
            other => return Err(require_map(&other, PURPOSE).err().unwrap_or_default()),
        };
        let found = entries.iter().rposition(|(k, _)| matches!(k, Value::String(s) if *s == self.field));
        match found {
            Some(i) => {
                let value = std::mem::replace(&mut entries[i].1, Value::Null);
                entries[i].1 = self.convert_inferred(value)?;
            }
            // Connect puts the converted null under the field, present or not.
            None => entries.push((Value::String(self.field.clone()), Value::Null)),
        }
        Ok(Value::Map(entries))
    }

    /// A schemaless timestamp converted, its kind told by its value.
    fn convert_inferred(&self, value: Value) -> Result<Value, String> {
        let kind = match &value {
            Value::Null => return Ok(Value::Null),
            Value::Int64(_) => Kind::Unix,
            Value::String(_) => Kind::String,
            other => {
                return Err(format!(
                    "TimestampConverter does not support class {} objects as timestamps; without a schema a timestamp is an int64 (unix) or a string",
                    java_class(other)
                ))
            }
        };
        self.convert(value, kind, false)
    }

    /// A timestamp of `kind` as the target; a `Date`, `Time` or `Timestamp` without a schema
    /// is its milliseconds since the epoch.
    fn convert(&self, value: Value, kind: Kind, with_schema: bool) -> Result<Value, String> {
        if value == Value::Null {
            return Ok(Value::Null);
        }
        let millis = self.millis(value, kind)?;
        Ok(match self.target {
            Kind::String => match &self.format {
                Some(format) => Value::String(format.format(millis)),
                None => return Err(format!("TimestampConverter needs {} to write string timestamps", self.format_key)),
            },
            Kind::Unix => Value::Int64(match self.precision {
                Precision::Seconds => millis / 1000,
                Precision::Milliseconds => millis,
                Precision::Microseconds => millis.saturating_mul(1000),
                Precision::Nanoseconds => millis.saturating_mul(1_000_000),
            }),
            Kind::Date => {
                let midnight = millis - millis.rem_euclid(MILLIS_PER_DAY);
                match with_schema {
                    // Connect's `Date.fromLogical` narrows the day to an int, as this does.
                    true => Value::Int32((midnight / MILLIS_PER_DAY) as i32),
                    false => Value::Int64(midnight),
                }
            }
            Kind::Time => {
                let of_day = millis.rem_euclid(MILLIS_PER_DAY);
                match with_schema {
                    true => Value::Int32(of_day as i32),
                    false => Value::Int64(of_day),
                }
            }
            Kind::Timestamp => Value::Int64(millis),
        })
    }

    /// A timestamp of `kind` in milliseconds since the epoch (Connect's `toRaw`).
    fn millis(&self, value: Value, kind: Kind) -> Result<i64, String> {
        let found =
            |expected: &str, value: &Value| format!("Expected {expected}, but found class {}", java_class(value));
        match (kind, value) {
            (Kind::String, Value::String(text)) => {
                let Some(format) = &self.format else {
                    return Err(format!(
                        "TimestampConverter needs a pattern to read the string timestamp \"{text}\": set {} to a SimpleDateFormat pattern",
                        self.format_key
                    ));
                };
                format.parse(&text).ok_or_else(|| {
                    format!("Could not parse timestamp: value ({text}) does not match pattern ({})", format.pattern())
                })
            }
            (Kind::String, other) => Err(found("string timestamp to be a String", &other)),
            (Kind::Unix, Value::Int64(n)) => Ok(match self.precision {
                Precision::Seconds => n.saturating_mul(1000),
                Precision::Milliseconds => n,
                Precision::Microseconds => n / 1000,
                Precision::Nanoseconds => n / 1_000_000,
            }),
            (Kind::Unix, other) => Err(found("Unix timestamp to be a Long", &other)),
            (Kind::Date, Value::Int32(days)) => Ok(i64::from(days) * MILLIS_PER_DAY),
            (Kind::Date, other) => Err(found("Date to be a java.util.Date", &other)),
            (Kind::Time, Value::Int32(millis)) => Ok(i64::from(millis)),
            (Kind::Time, other) => Err(found("Time to be a java.util.Date", &other)),
            (Kind::Timestamp, Value::Int64(millis)) => Ok(millis),
            (Kind::Timestamp, other) => Err(found("Timestamp to be a java.util.Date", &other)),
        }
    }
}

/// The kind of timestamp a schema holds (Connect's `timestampTypeFromSchema`): a logical type by
/// its name, a string, or an int64 as unix time.
fn kind_of_schema(schema: &Schema) -> Result<Kind, String> {
    Ok(match (schema.name.as_deref(), schema.kind) {
        (Some(logical::TIMESTAMP), _) => Kind::Timestamp,
        (Some(logical::DATE), _) => Kind::Date,
        (Some(logical::TIME), _) => Kind::Time,
        (_, Type::String) => Kind::String,
        (_, Type::Int64) => Kind::Unix,
        _ => {
            return Err(format!(
                "Schema {} does not correspond to a known timestamp type format; a timestamp is a string, an int64, or a Date, Time or Timestamp",
                schema_text(schema)
            ))
        }
    })
}

/// A schema as Connect's `ConnectSchema.toString` writes it: `Schema{INT32}`, or with its name,
/// `Schema{com.example.Id:INT32}`.
fn schema_text(schema: &Schema) -> String {
    let kind = schema.kind.name().to_uppercase();
    match &schema.name {
        Some(name) => format!("Schema{{{name}:{kind}}}"),
        None => format!("Schema{{{kind}}}"),
    }
}

#[derive(Debug)]
struct Router {
    topic_format: String,
    format: DateFormat,
}

pub(super) fn router(settings: &Settings, _: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let topic_format = java_trim(settings.string_or("topic.format", "${topic}-${timestamp}")).to_string();
    let pattern = java_trim(settings.string_or("timestamp.format", "yyyyMMdd"));
    let format = DateFormat::new(pattern).map_err(|e| {
        settings.problem(
            "timestamp.format",
            format!(
                "{}: \"{pattern}\" is not a SimpleDateFormat pattern Wharf can use: {e}",
                settings.key("timestamp.format")
            ),
        )
    })?;
    Ok(Box::new(Router { topic_format, format }))
}

impl Apply for Router {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let Some(timestamp) = record.timestamp else {
            return Err(
                "Timestamp missing on record: TimestampRouter names the topic from the record's timestamp, and this record has none".into(),
            );
        };
        let stamped = self.format.format(timestamp);
        let topic = self.topic_format.replace("${topic}", &record.topic).replace("${timestamp}", &stamped);
        if topic.is_empty() {
            return Err("the topic format made an empty topic name".into());
        }
        record.topic = topic;
        Ok(Outcome::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::transform::support::testing;
    use crate::transform::Chain;

    fn chain(kind: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain(kind, settings)
    }

    fn record(value: Option<Data>) -> Record {
        Record {
            topic: "orders".into(),
            partition: Some(0),
            timestamp: Some(1_714_566_600_123),
            ..testing::record(None, value)
        }
    }

    fn convert(settings: &[(&str, &str)], value: Data) -> Result<Data, String> {
        let chain = chain("TimestampConverter$Value", settings).map_err(|e| e[0].message.clone())?;
        match chain.apply(record(Some(value))).map_err(|e| e.message)?.unwrap().value {
            Some(Part::Data(data)) => Ok(data),
            other => panic!("{other:?}"),
        }
    }

    fn schema(kind: Schema) -> Arc<Schema> {
        Arc::new(kind)
    }

    const NOON_123: i64 = 1_714_566_600_123;

    #[test]
    fn whole_values_convert_between_every_kind() {
        let timestamp = Data::new(schema(Schema::timestamp()), Value::Int64(NOON_123));
        let to = |target: &str, extra: &[(&str, &str)]| {
            let mut settings = vec![("target.type", target)];
            settings.extend_from_slice(extra);
            convert(&settings, timestamp.clone()).unwrap()
        };
        let iso = [("format", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX")];
        assert_eq!(
            to("string", &iso),
            Data::new(schema(Schema::of(Type::String)), Value::String("2024-05-01T12:30:00.123Z".into()))
        );
        assert_eq!(to("unix", &[]), Data::new(schema(Schema::of(Type::Int64)), Value::Int64(NOON_123)));
        assert_eq!(to("unix", &[("unix.precision", "seconds")]).value, Value::Int64(1_714_566_600));
        assert_eq!(to("unix", &[("unix.precision", "nanoseconds")]).value, Value::Int64(NOON_123 * 1_000_000));
        assert_eq!(to("Date", &[]), Data::new(schema(Schema::date()), Value::Int32(19_844)));
        assert_eq!(to("Time", &[]), Data::new(schema(Schema::time()), Value::Int32(45_000_123)));
        assert_eq!(to("Timestamp", &[]), timestamp);

        let text = Data::new(schema(Schema::of(Type::String).optional()), Value::String("01/05/2024 12:30".into()));
        let parsed = convert(&[("target.type", "Timestamp"), ("format", "dd/MM/yyyy HH:mm")], text).unwrap();
        assert_eq!(parsed, Data::new(schema(Schema::timestamp().optional()), Value::Int64(1_714_566_600_000)));
    }

    #[test]
    fn unix_times_drop_digits_toward_zero_and_clamp() {
        let unix = |n: i64| Data::new(schema(Schema::of(Type::Int64)), Value::Int64(n));
        let micros = [("target.type", "Timestamp"), ("unix.precision", "microseconds")];
        assert_eq!(convert(&micros, unix(-1_500)).unwrap().value, Value::Int64(-1));
        let seconds = [("target.type", "Timestamp"), ("unix.precision", "seconds")];
        assert_eq!(convert(&seconds, unix(i64::MAX)).unwrap().value, Value::Int64(i64::MAX));
        let before_epoch = [("target.type", "Date")];
        assert_eq!(convert(&before_epoch, unix(-1)).unwrap().value, Value::Int32(-1), "the day before");
    }

    #[test]
    fn a_struct_field_is_converted_and_its_schema_replaced() {
        let value_schema = schema(Schema {
            name: Some("Event".into()),
            ..Schema::structure(vec![
                Field { name: "id".into(), schema: schema(Schema::of(Type::Int32)) },
                Field { name: "at".into(), schema: schema(Schema::of(Type::Int64).optional()) },
            ])
        });
        let value = Value::Struct(vec![Value::Int32(1), Value::Int64(NOON_123)]);
        let settings = [("field", " at "), ("target.type", "string"), ("format", "yyyy-MM-dd")];
        let out = convert(&settings, Data::new(value_schema.clone(), value)).unwrap();
        let derived = out.schema.unwrap();
        assert_eq!(derived.name.as_deref(), Some("Event"));
        assert_eq!(derived.fields[1].schema.as_ref(), &Schema::of(Type::String).optional());
        assert_eq!(derived.fields[0].schema, value_schema.fields[0].schema);
        assert_eq!(out.value, Value::Struct(vec![Value::Int32(1), Value::String("2024-05-01".into())]));

        let null = convert(&settings, Data::new(value_schema.clone(), Value::Null)).unwrap();
        assert_eq!((null.schema.is_some(), null.value), (true, Value::Null), "a null struct stays null");
        let wrong = Data::new(value_schema, Value::Struct(vec![Value::Int32(1), Value::String("x".into())]));
        assert!(convert(&settings, wrong)
            .unwrap_err()
            .contains("Expected Unix timestamp to be a Long, but found class java.lang.String"));
    }

    #[test]
    fn schemaless_values_are_read_by_their_type() {
        let settings = [("field", "at"), ("target.type", "string"), ("format", "HH:mm")];
        let map = Value::Map(vec![(Value::String("at".into()), Value::Int64(NOON_123))]);
        let out = convert(&settings, Data::schemaless(map)).unwrap();
        assert_eq!(
            out,
            Data::schemaless(Value::Map(vec![(Value::String("at".into()), Value::String("12:30".into()))]))
        );

        let missing = convert(&settings, Data::schemaless(Value::Map(Vec::new()))).unwrap();
        assert_eq!(missing.value, Value::Map(vec![(Value::String("at".into()), Value::Null)]), "added as null");

        let int32 = convert(&[("target.type", "unix")], Data::schemaless(Value::Int32(5))).unwrap_err();
        assert!(int32.contains("does not support class java.lang.Integer objects as timestamps"), "{int32}");
        let not_a_map = convert(&settings, Data::schemaless(Value::Int64(5))).unwrap_err();
        assert!(
            not_a_map.contains("Only Map objects supported in absence of schema for [converting timestamp formats]")
        );
    }

    #[test]
    fn schemaless_dates_times_and_timestamps_are_milliseconds() {
        let noon = || Data::schemaless(Value::Int64(NOON_123));
        assert_eq!(convert(&[("target.type", "Timestamp")], noon()).unwrap().value, Value::Int64(NOON_123));
        assert_eq!(convert(&[("target.type", "Date")], noon()).unwrap().value, Value::Int64(1_714_521_600_000));
        assert_eq!(convert(&[("target.type", "Time")], noon()).unwrap().value, Value::Int64(45_000_123));
    }

    #[test]
    fn what_is_not_a_timestamp_is_refused_in_connects_words() {
        let int32 = Data::new(schema(Schema::of(Type::Int32)), Value::Int32(1));
        let problem = convert(&[("target.type", "unix")], int32).unwrap_err();
        assert!(problem.contains("Schema Schema{INT32} does not correspond to a known timestamp type format"));
        let text = Data::new(schema(Schema::of(Type::String)), Value::String("May 1".into()));
        let problem = convert(&[("target.type", "unix"), ("format", "yyyy-MM-dd")], text.clone()).unwrap_err();
        assert!(problem.contains("Could not parse timestamp: value (May 1) does not match pattern (yyyy-MM-dd)"));
        assert!(convert(&[("target.type", "unix")], text).unwrap_err().contains("transforms.x.format"));
        let bytes = chain("TimestampConverter$Key", &[("target.type", "unix")]).unwrap();
        let raw = Record { key: Some(Part::Bytes(b"1".to_vec())), ..record(None) };
        assert!(bytes.apply(raw).unwrap_err().message.contains("Schema{BYTES}"));
    }

    #[test]
    fn nulls_stay_null_under_the_targets_schema() {
        let optional = Data::new(schema(Schema::timestamp().optional()), Value::Null);
        let out = convert(&[("target.type", "unix")], optional).unwrap();
        assert_eq!(out, Data::new(schema(Schema::of(Type::Int64).optional()), Value::Null));
        let chain = chain("TimestampConverter$Value", &[("target.type", "unix")]).unwrap();
        assert_eq!(chain.apply(record(None)).unwrap().unwrap(), record(None));
    }

    #[test]
    fn converter_settings_are_read_as_connect_reads_them() {
        let problem =
            |settings: &[(&str, &str)]| chain("TimestampConverter$Value", settings).unwrap_err()[0].message.clone();
        assert!(problem(&[]).contains("transforms.x.target.type is required"));
        assert!(problem(&[("target.type", "date")])
            .contains("Invalid value date for configuration transforms.x.target.type"));
        assert!(problem(&[("target.type", "string")]).contains("requires format option"));
        assert!(problem(&[("target.type", "string"), ("format", "   ")]).contains("requires format option"));
        assert!(problem(&[("target.type", "unix"), ("format", "yyyy-ww")]).contains("'w'"));
        assert!(problem(&[("target.type", "unix"), ("unix.precision", "Seconds")]).contains("Invalid value Seconds"));
        assert!(chain("TimestampConverter$Value", &[("target.type", " Date ")]).is_ok(), "settings are trimmed");
    }

    #[test]
    fn the_router_names_the_topic_from_the_records_timestamp() {
        let routed = |settings: &[(&str, &str)], topic: &str| {
            let chain = chain("TimestampRouter", settings).unwrap();
            chain.apply(Record { topic: topic.into(), ..record(None) }).map(|r| r.unwrap().topic)
        };
        assert_eq!(routed(&[], "orders"), Ok("orders-20240501".into()));
        let hourly = [("topic.format", "${timestamp}.${topic}"), ("timestamp.format", "yyyy-MM-dd'T'HH")];
        assert_eq!(routed(&hourly, "orders"), Ok("2024-05-01T12.orders".into()));
        assert_eq!(routed(&[], "a-${timestamp}"), Ok("a-20240501-20240501".into()), "as Connect replaces");
        let chain = chain("TimestampRouter", &[]).unwrap();
        let untimed = Record { timestamp: None, ..record(None) };
        assert!(chain.apply(untimed).unwrap_err().message.contains("Timestamp missing on record"));
        let problem = super::super::Chain::of_connector(&[
            ("transforms".into(), "r".into()),
            ("transforms.r.type".into(), "TimestampRouter".into()),
            ("transforms.r.timestamp.format".into(), "yyyy-'".into()),
        ])
        .unwrap_err();
        assert_eq!(problem[0].key, "transforms.r.timestamp.format");
        assert!(problem[0].message.contains("Unterminated quote"));
    }
}
