//! Connect's `InsertField`: adds fields to the record's key or value from the record itself (its
//! topic, partition, offset on a sink, timestamp) or a static string. A field name ending in `!`
//! makes a required field of a struct schema, `?` (or no suffix) an optional one. A null key or
//! value (a tombstone) is left as it is.

use std::sync::Arc;

use crate::data::{Data, Field, Schema, Type, Value};

use super::support::{copy_schema_basics, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

const PURPOSE: &str = "field insertion";

/// A field to insert: its name, and whether its schema is optional.
#[derive(Debug, Clone)]
struct Insertion {
    name: String,
    optional: bool,
}

impl Insertion {
    /// A setting's field name with its optionality suffix, as Connect's `InsertionSpec` reads it.
    fn parse(given: &str) -> Self {
        if let Some(name) = given.strip_suffix('?') {
            Insertion { name: name.to_string(), optional: true }
        } else if let Some(name) = given.strip_suffix('!') {
            Insertion { name: name.to_string(), optional: false }
        } else {
            Insertion { name: given.to_string(), optional: true }
        }
    }
}

#[derive(Debug)]
struct InsertField {
    side: Side,
    topic: Option<Insertion>,
    partition: Option<Insertion>,
    offset: Option<Insertion>,
    timestamp: Option<Insertion>,
    /// The static field and its value.
    fixed: Option<(Insertion, String)>,
    replace_null_with_default: bool,
    cache: SchemaCache,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let insertion = |name: &str| settings.get(name).map(|given| Insertion::parse(given.trim()));
    let topic = insertion("topic.field");
    let partition = insertion("partition.field");
    let offset = insertion("offset.field");
    let timestamp = insertion("timestamp.field");
    let fixed = match (insertion("static.field"), settings.get("static.value")) {
        (None, _) => None,
        (Some(field), Some(value)) => Some((field, value.trim().to_string())),
        (Some(field), None) => {
            return Err(settings.problem(
                "static.value",
                format!(
                    "{} is required with static.field: the value of the static field \"{}\"",
                    settings.key("static.value"),
                    field.name
                ),
            ))
        }
    };
    if topic.is_none() && partition.is_none() && offset.is_none() && timestamp.is_none() && fixed.is_none() {
        return Err(settings.problem(
            "topic.field",
            format!(
                "No field insertion configured: set at least one of {0}topic.field, {0}partition.field, {0}offset.field, {0}timestamp.field or {0}static.field",
                settings.key("")
            ),
        ));
    }
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(InsertField {
        side,
        topic,
        partition,
        offset,
        timestamp,
        fixed,
        replace_null_with_default,
        cache: SchemaCache::new(),
    }))
}

/// A record's Kafka offset, which only a sink record has.
fn sink_offset(record: &Record) -> Result<i64, String> {
    record.offset.ok_or_else(|| {
        format!("Only SinkRecord supported for [{PURPOSE}], found: org.apache.kafka.connect.source.SourceRecord")
    })
}

/// Sets a schemaless map's entry, as `Map.put` does.
fn put(entries: &mut Vec<(Value, Value)>, key: &str, value: Value) {
    match entries.iter_mut().find(|(k, _)| matches!(k, Value::String(s) if s == key)) {
        Some(entry) => entry.1 = value,
        None => entries.push((Value::String(key.to_string()), value)),
    }
}

impl InsertField {
    /// The schema with the inserted fields after the given ones (`makeUpdatedSchema`).
    fn updated_schema(&self, schema: &Schema) -> Result<Schema, String> {
        let mut updated = copy_schema_basics(schema, Type::Struct);
        updated.fields = schema.fields.clone();
        let mut add = |insertion: &Option<Insertion>, of: fn() -> Schema| -> Result<(), String> {
            let Some(insertion) = insertion else { return Ok(()) };
            if insertion.name.is_empty() {
                return Err("fieldName cannot be null.".into());
            }
            if updated.fields.iter().any(|f| f.name == insertion.name) {
                return Err(format!("Cannot create field because of field name duplication {}", insertion.name));
            }
            let field_schema = Schema { optional: insertion.optional, ..of() };
            updated.fields.push(Field { name: insertion.name.clone(), schema: Arc::new(field_schema) });
            Ok(())
        };
        add(&self.topic, || Schema::of(Type::String))?;
        add(&self.partition, || Schema::of(Type::Int32))?;
        add(&self.offset, || Schema::of(Type::Int64))?;
        add(&self.timestamp, Schema::timestamp)?;
        add(&self.fixed.as_ref().map(|(field, _)| field.clone()), || Schema::of(Type::String))?;
        Ok(updated)
    }

    fn with_schema(&self, record: &Record, data: Data) -> Result<Data, String> {
        require_struct(&data, PURPOSE)?;
        let Data { schema: Some(schema), value: Value::Struct(values) } = data else {
            return Err(format!("Only Struct objects supported for [{PURPOSE}]"));
        };
        let updated = self.cache.get_or_derive(&schema, |s| self.updated_schema(s))?;
        let mut out = Vec::with_capacity(updated.fields.len());
        for (field, value) in schema.fields.iter().zip(values) {
            let value = match value {
                Value::Null if self.replace_null_with_default => field.schema.default.clone().unwrap_or(Value::Null),
                other => other,
            };
            if value == Value::Null && !field.schema.optional {
                return Err(format!(
                    "Invalid value: null used for required field: \"{}\", schema type: {}",
                    field.name,
                    field.schema.kind.name().to_uppercase()
                ));
            }
            out.push(value);
        }
        if out.len() != schema.fields.len() {
            return Err(format!(
                "the struct has {} values for the {} fields of its schema",
                out.len(),
                schema.fields.len()
            ));
        }
        if self.topic.is_some() {
            out.push(Value::String(record.topic.clone()));
        }
        if self.partition.is_some() {
            out.push(record.partition.map_or(Value::Null, Value::Int32));
        }
        if self.offset.is_some() {
            out.push(Value::Int64(sink_offset(record)?));
        }
        if self.timestamp.is_some() {
            out.push(record.timestamp.map_or(Value::Null, Value::Int64));
        }
        if let Some((_, value)) = &self.fixed {
            out.push(Value::String(value.clone()));
        }
        Ok(Data::new(updated, Value::Struct(out)))
    }

    fn schemaless(&self, record: &Record, value: Value) -> Result<Data, String> {
        let mut entries = match value {
            Value::Map(entries) => entries,
            other => return Err(require_map(&other, PURPOSE).err().unwrap_or_default()),
        };
        if let Some(field) = &self.topic {
            put(&mut entries, &field.name, Value::String(record.topic.clone()));
        }
        if let (Some(field), Some(partition)) = (&self.partition, record.partition) {
            put(&mut entries, &field.name, Value::Int32(partition));
        }
        if let Some(field) = &self.offset {
            put(&mut entries, &field.name, Value::Int64(sink_offset(record)?));
        }
        if let (Some(field), Some(timestamp)) = (&self.timestamp, record.timestamp) {
            put(&mut entries, &field.name, Value::Int64(timestamp));
        }
        if let Some((field, value)) = &self.fixed {
            put(&mut entries, &field.name, Value::String(value.clone()));
        }
        Ok(Data::schemaless(Value::Map(entries)))
    }
}

impl Apply for InsertField {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        if self.side.is_null(record) {
            return Ok(Outcome::Keep);
        }
        let data = self.side.take(record);
        let updated = match data.schema {
            None => self.schemaless(record, data.value)?,
            Some(_) => self.with_schema(record, data)?,
        };
        self.side.put(record, updated);
        Ok(Outcome::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::model::PartHeader;
    use crate::transform::support::testing;
    use crate::transform::{Chain, TransformConfigError};

    fn chain(variant: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain(&format!("InsertField{variant}"), settings)
    }

    fn sink(value: Option<Data>) -> Record {
        Record {
            topic: "orders".into(),
            partition: Some(3),
            offset: Some(17),
            key: None,
            value: value.map(Part::Data),
            headers: vec![PartHeader { key: "h".into(), value: None }],
            timestamp: Some(1_700_000_000_000),
        }
    }

    fn source(value: Option<Data>) -> Record {
        Record { partition: None, offset: None, timestamp: None, ..sink(value) }
    }

    fn value_of(record: Record) -> Data {
        match record.value {
            Some(Part::Data(data)) => data,
            other => panic!("no value: {other:?}"),
        }
    }

    fn s(text: &str) -> Value {
        Value::String(text.into())
    }

    fn person() -> Arc<Schema> {
        let score = Schema { default: Some(Value::Int32(5)), ..Schema::of(Type::Int32).optional() };
        let mut schema = Schema::structure(vec![
            Field { name: "id".into(), schema: Arc::new(Schema::of(Type::Int64)) },
            Field { name: "score".into(), schema: Arc::new(score) },
        ]);
        schema.name = Some("com.example.Person".into());
        schema.version = Some(2);
        schema.doc = Some("a person".into());
        Arc::new(schema.parameter("p", "q").optional())
    }

    const ALL: &[(&str, &str)] = &[
        ("topic.field", "t"),
        ("partition.field", "p!"),
        ("offset.field", "o?"),
        ("timestamp.field", "ts!"),
        ("static.field", "s"),
        ("static.value", "fixed"),
    ];

    #[test]
    fn every_insertion_adds_a_field_after_the_structs_own_with_its_schema() {
        let value = Data::new(person(), Value::Struct(vec![Value::Int64(7), Value::Int32(1)]));
        let out = value_of(chain("$Value", ALL).unwrap().apply(sink(Some(value))).unwrap().unwrap());
        let schema = out.schema.unwrap();
        let added: Vec<(&str, &Schema)> =
            schema.fields[2..].iter().map(|f| (f.name.as_str(), f.schema.as_ref())).collect();
        assert_eq!(
            added,
            [
                ("t", &Schema::of(Type::String).optional()),
                ("p", &Schema::of(Type::Int32)),
                ("o", &Schema::of(Type::Int64).optional()),
                ("ts", &Schema::timestamp()),
                ("s", &Schema::of(Type::String).optional()),
            ]
        );
        assert_eq!(
            (schema.name.as_deref(), schema.version, schema.doc.as_deref()),
            (Some("com.example.Person"), Some(2), Some("a person"))
        );
        assert_eq!(schema.parameter_value("p"), Some("q"));
        assert!(!schema.optional, "Connect's copySchemaBasics does not copy optionality");
        assert_eq!(
            out.value,
            Value::Struct(vec![
                Value::Int64(7),
                Value::Int32(1),
                s("orders"),
                Value::Int32(3),
                Value::Int64(17),
                Value::Int64(1_700_000_000_000),
                s("fixed"),
            ])
        );
    }

    #[test]
    fn schemaless_maps_get_entries_and_an_existing_entry_is_replaced() {
        let value = Data::schemaless(Value::Map(vec![(s("t"), Value::Int32(1)), (s("a"), Value::Boolean(true))]));
        let out = value_of(chain("$Value", ALL).unwrap().apply(sink(Some(value))).unwrap().unwrap());
        assert_eq!(
            out,
            Data::schemaless(Value::Map(vec![
                (s("t"), s("orders")),
                (s("a"), Value::Boolean(true)),
                (s("p"), Value::Int32(3)),
                (s("o"), Value::Int64(17)),
                (s("ts"), Value::Int64(1_700_000_000_000)),
                (s("s"), s("fixed")),
            ]))
        );
    }

    #[test]
    fn a_record_without_partition_or_timestamp_leaves_those_out() {
        let settings = [("partition.field", "p"), ("timestamp.field", "ts")];
        let map = Data::schemaless(Value::Map(Vec::new()));
        let out = value_of(chain("$Value", &settings).unwrap().apply(source(Some(map))).unwrap().unwrap());
        assert_eq!(out.value, Value::Map(Vec::new()));
        let value = Data::new(person(), Value::Struct(vec![Value::Int64(7), Value::Int32(1)]));
        let out = value_of(chain("$Value", &settings).unwrap().apply(source(Some(value))).unwrap().unwrap());
        assert_eq!(out.value, Value::Struct(vec![Value::Int64(7), Value::Int32(1), Value::Null, Value::Null]));
    }

    #[test]
    fn the_offset_is_a_sink_records_only() {
        let chain = chain("$Value", &[("offset.field", "o")]).unwrap();
        let map = Data::schemaless(Value::Map(Vec::new()));
        let refused = chain.apply(source(Some(map))).unwrap_err().message;
        assert!(refused.ends_with(
            "Only SinkRecord supported for [field insertion], found: org.apache.kafka.connect.source.SourceRecord"
        ));
        assert!(chain.apply(source(None)).is_ok(), "a tombstone is not looked at");
    }

    #[test]
    fn tombstones_pass_through_with_or_without_a_schema() {
        let chain = chain("$Value", ALL).unwrap();
        assert_eq!(chain.apply(sink(None)).unwrap().unwrap(), sink(None));
        let typed_null = Some(Data::new(person(), Value::Null));
        assert_eq!(chain.apply(sink(typed_null.clone())).unwrap().unwrap(), sink(typed_null));
    }

    #[test]
    fn keys_get_the_fields_and_values_are_left_alone() {
        let key = Data::schemaless(Value::Map(vec![(s("id"), Value::Int32(1))]));
        let mut record = sink(Some(Data::schemaless(s("v"))));
        record.key = Some(Part::Data(key));
        let out = chain("$Key", &[("topic.field", "t")]).unwrap().apply(record).unwrap().unwrap();
        assert_eq!(
            out.key,
            Some(Part::Data(Data::schemaless(Value::Map(vec![(s("id"), Value::Int32(1)), (s("t"), s("orders"))]))))
        );
        assert_eq!(out.value, Some(Part::Data(Data::schemaless(s("v")))));
    }

    #[test]
    fn a_null_field_takes_its_default_unless_replace_null_with_default_is_false() {
        let value = Data::new(person(), Value::Struct(vec![Value::Int64(7), Value::Null]));
        let with = chain("$Value", &[("topic.field", "t")]).unwrap();
        let out = value_of(with.apply(sink(Some(value.clone()))).unwrap().unwrap());
        assert_eq!(out.value, Value::Struct(vec![Value::Int64(7), Value::Int32(5), s("orders")]));
        let without = chain("$Value", &[("topic.field", "t"), ("replace.null.with.default", "false")]).unwrap();
        let out = value_of(without.apply(sink(Some(value))).unwrap().unwrap());
        assert_eq!(out.value, Value::Struct(vec![Value::Int64(7), Value::Null, s("orders")]));
    }

    #[test]
    fn the_updated_schema_is_derived_once_for_a_repeated_schema() {
        let chain = chain("$Value", &[("topic.field", "t")]).unwrap();
        let schema = person();
        let run = || {
            let value = Data::new(schema.clone(), Value::Struct(vec![Value::Int64(7), Value::Int32(1)]));
            value_of(chain.apply(sink(Some(value))).unwrap().unwrap()).schema.unwrap()
        };
        assert!(Arc::ptr_eq(&run(), &run()));
    }

    #[test]
    fn a_struct_refuses_a_field_it_has_or_an_empty_name_and_other_values_are_refused() {
        let value = Data::new(person(), Value::Struct(vec![Value::Int64(7), Value::Int32(1)]));
        let refused = |settings: &[(&str, &str)], value: Data| {
            chain("$Value", settings).unwrap().apply(sink(Some(value))).unwrap_err().message
        };
        assert!(refused(&[("topic.field", "id")], value.clone()).ends_with("field name duplication id"));
        assert!(refused(&[("topic.field", "x"), ("static.field", "x!"), ("static.value", "v")], value.clone())
            .ends_with("field name duplication x"));
        assert!(refused(&[("topic.field", "")], value).ends_with("fieldName cannot be null."));
        let text = Data::new(Arc::new(Schema::of(Type::String)), s("x"));
        assert!(refused(&[("topic.field", "t")], text)
            .ends_with("Only Struct objects supported for [field insertion], found: java.lang.String"));
        assert!(refused(&[("topic.field", "t")], Data::schemaless(Value::Array(Vec::new()))).ends_with(
            "Only Map objects supported in absence of schema for [field insertion], found: java.util.ArrayList"
        ));
    }

    #[test]
    fn settings_are_trimmed_and_suffixes_read_as_connect_reads_them() {
        let parsed = |given: &str| {
            let i = Insertion::parse(given);
            (i.name, i.optional)
        };
        assert_eq!(parsed("a"), ("a".to_string(), true));
        assert_eq!(parsed("a?"), ("a".to_string(), true));
        assert_eq!(parsed("a!"), ("a".to_string(), false));
        assert_eq!(parsed("a!?"), ("a!".to_string(), true));
        let settings = [("static.field", " s "), ("static.value", "  v  ")];
        let map = Data::schemaless(Value::Map(Vec::new()));
        let out = value_of(chain("$Value", &settings).unwrap().apply(sink(Some(map))).unwrap().unwrap());
        assert_eq!(out.value, Value::Map(vec![(s("s"), s("v"))]));
    }

    #[test]
    fn a_config_that_inserts_nothing_or_a_static_field_without_a_value_is_refused() {
        let refused = |settings: &[(&str, &str)]| chain("$Value", settings).unwrap_err().remove(0);
        assert!(refused(&[]).message.starts_with("No field insertion configured"));
        assert!(refused(&[("static.value", "v")]).message.starts_with("No field insertion configured"));
        assert_eq!(refused(&[("static.field", "s")]).key, "transforms.x.static.value");
        assert_eq!(
            refused(&[("topic.field", "t"), ("replace.null.with.default", "x")]).key,
            "transforms.x.replace.null.with.default"
        );
    }
}
