//! Connect's `ValueToKey`: the record's key becomes a struct (with a schema) or a map (without)
//! of some of its value's fields; the value stays as it is.

use std::sync::Arc;

use crate::data::{Data, Field, Schema, Value};
use crate::model::Part;

use super::support::{field_value, map_get, optional_bytes, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

const PURPOSE: &str = "copying fields from value to key";

#[derive(Debug)]
struct ValueToKey {
    fields: Vec<String>,
    replace_null_with_default: bool,
    cache: SchemaCache,
}

pub(super) fn configure(settings: &Settings, _: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    if settings.get("fields").is_none() {
        return Err(settings.problem(
            "fields",
            format!(
                "{} is required: the names of the value's fields that make the key, separated by commas",
                settings.key("fields")
            ),
        ));
    }
    let fields = settings.list("fields");
    if fields.is_empty() {
        return Err(settings.problem(
            "fields",
            format!("{} is an empty list: name at least one of the value's fields", settings.key("fields")),
        ));
    }
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(ValueToKey { fields, replace_null_with_default, cache: SchemaCache::new() }))
}

impl ValueToKey {
    /// The key's schema: a struct of the named fields with their schemas in the value.
    fn key_schema(&self, value_schema: &Schema) -> Result<Schema, String> {
        let mut fields: Vec<Field> = Vec::with_capacity(self.fields.len());
        for name in &self.fields {
            let Some((_, field)) = value_schema.field(name) else {
                return Err(format!("Field does not exist: {name}"));
            };
            if fields.iter().any(|f| &f.name == name) {
                return Err(format!("Cannot create field because of field name duplication {name}"));
            }
            fields.push(field.clone());
        }
        Ok(Schema::structure(fields))
    }

    fn with_schema(&self, value: &Data) -> Result<Data, String> {
        let (schema, values) = require_struct(value, PURPOSE)?;
        let key_schema: Arc<Schema> = self.cache.get_or_derive(schema, |s| self.key_schema(s))?;
        let mut key = Vec::with_capacity(self.fields.len());
        for name in &self.fields {
            let Some((index, field)) = schema.field(name) else {
                return Err(format!("Field does not exist: {name}"));
            };
            let raw = values.get(index).unwrap_or(&Value::Null);
            let taken = if self.replace_null_with_default { field_value(field, raw) } else { raw };
            if *taken == Value::Null && !field.schema.optional {
                return Err(format!(
                    "Invalid value: null used for required field: \"{name}\", schema type: {}",
                    field.schema.kind.name().to_uppercase()
                ));
            }
            key.push(taken.clone());
        }
        Ok(Data::new(key_schema, Value::Struct(key)))
    }

    fn schemaless(&self, value: &Value) -> Result<Data, String> {
        let entries = require_map(value, PURPOSE)?;
        let mut key: Vec<(Value, Value)> = Vec::with_capacity(self.fields.len());
        for name in &self.fields {
            if key.iter().any(|(k, _)| matches!(k, Value::String(s) if s == name)) {
                continue;
            }
            let found = map_get(entries, name).cloned().unwrap_or(Value::Null);
            key.push((Value::String(name.clone()), found));
        }
        Ok(Data::schemaless(Value::Map(key)))
    }
}

impl Apply for ValueToKey {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let bytes;
        let value = match &record.value {
            None => &Data::NULL,
            Some(Part::Data(data)) => data,
            // What no converter read is bytes: no struct, no map.
            Some(Part::Bytes(_)) => {
                bytes = Data::new(optional_bytes(), Value::Bytes(Vec::new()));
                &bytes
            }
        };
        let key = match value.schema {
            None => self.schemaless(&value.value)?,
            Some(_) => self.with_schema(value)?,
        };
        record.key = Some(Part::Data(key));
        Ok(Outcome::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Type;
    use crate::transform::support::testing;
    use crate::transform::{Chain, TransformConfigError};

    fn chain(settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain("ValueToKey", settings)
    }

    fn record(value: Option<Part>) -> Record {
        Record {
            topic: "t".into(),
            partition: Some(1),
            offset: None,
            key: Some(Part::Bytes(b"old".to_vec())),
            value,
            headers: Vec::new(),
            timestamp: Some(5),
        }
    }

    fn key_of(settings: &[(&str, &str)], value: Data) -> Result<Data, String> {
        let out = chain(settings).unwrap().apply(record(Some(Part::Data(value.clone())))).map_err(|e| e.message)?;
        let out = out.unwrap();
        assert_eq!(out.value, Some(Part::Data(value)), "the value is left alone");
        match out.key {
            Some(Part::Data(key)) => Ok(key),
            other => panic!("{other:?}"),
        }
    }

    fn s(text: &str) -> Value {
        Value::String(text.into())
    }

    fn field(name: &str, schema: Schema) -> Field {
        Field { name: name.into(), schema: Arc::new(schema) }
    }

    fn person() -> Arc<Schema> {
        let score = Schema { default: Some(Value::Int32(5)), ..Schema::of(Type::Int32).optional() };
        let schema = Schema::structure(vec![
            field("id", Schema::of(Type::Int64)),
            field("name", Schema::of(Type::String).optional()),
            field("score", score),
            field("born", Schema::date()),
        ]);
        Arc::new(schema.named("com.example.Person"))
    }

    #[test]
    fn with_a_schema_the_key_is_a_struct_of_the_fields_in_the_order_named() {
        let value =
            Data::new(person(), Value::Struct(vec![Value::Int64(7), s("Ada"), Value::Int32(1), Value::Int32(9)]));
        let key = key_of(&[("fields", "born, id")], value).unwrap();
        let schema = person();
        let expected = Schema::structure(vec![schema.fields[3].clone(), schema.fields[0].clone()]);
        assert_eq!(key, Data::new(Arc::new(expected), Value::Struct(vec![Value::Int32(9), Value::Int64(7)])));
    }

    #[test]
    fn a_null_field_takes_its_default_unless_replace_null_with_default_is_false() {
        let value =
            Data::new(person(), Value::Struct(vec![Value::Int64(7), Value::Null, Value::Null, Value::Int32(9)]));
        let key = key_of(&[("fields", "score,name")], value.clone()).unwrap();
        assert_eq!(key.value, Value::Struct(vec![Value::Int32(5), Value::Null]));
        let key = key_of(&[("fields", "score"), ("replace.null.with.default", "false")], value).unwrap();
        assert_eq!(key.value, Value::Struct(vec![Value::Null]));
    }

    #[test]
    fn without_a_schema_the_key_is_a_map_with_null_for_a_missing_entry() {
        let value = Data::schemaless(Value::Map(vec![(s("a"), Value::Int32(1)), (s("b"), Value::Int32(2))]));
        let key = key_of(&[("fields", "a,missing,a")], value).unwrap();
        assert_eq!(key, Data::schemaless(Value::Map(vec![(s("a"), Value::Int32(1)), (s("missing"), Value::Null)])));
    }

    #[test]
    fn a_field_the_schema_lacks_or_names_twice_is_refused() {
        let value =
            Data::new(person(), Value::Struct(vec![Value::Int64(7), Value::Null, Value::Null, Value::Int32(9)]));
        assert!(key_of(&[("fields", "id,nope")], value.clone()).unwrap_err().ends_with("Field does not exist: nope"));
        assert!(key_of(&[("fields", "id,id")], value).unwrap_err().ends_with("field name duplication id"));
    }

    #[test]
    fn a_value_that_is_neither_a_struct_nor_a_map_is_refused() {
        let chain = chain(&[("fields", "id")]).unwrap();
        let refused = |value: Option<Part>| chain.apply(record(value)).unwrap_err().message;
        assert!(refused(None).ends_with(
            "Only Map objects supported in absence of schema for [copying fields from value to key], found: null"
        ));
        assert!(refused(Some(Part::Data(Data::new(person(), Value::Null))))
            .ends_with("Only Struct objects supported for [copying fields from value to key], found: null"));
        assert!(refused(Some(Part::Bytes(vec![1]))).ends_with("found: [B"));
    }

    #[test]
    fn the_key_schema_is_derived_once_for_a_repeated_value_schema() {
        let chain = chain(&[("fields", "id")]).unwrap();
        let schema = person();
        let run = || {
            let value = Data::new(
                schema.clone(),
                Value::Struct(vec![Value::Int64(7), Value::Null, Value::Null, Value::Int32(9)]),
            );
            match chain.apply(record(Some(Part::Data(value)))).unwrap().unwrap().key {
                Some(Part::Data(Data { schema: Some(schema), .. })) => schema,
                other => panic!("{other:?}"),
            }
        };
        assert!(Arc::ptr_eq(&run(), &run()));
    }

    #[test]
    fn fields_is_a_required_list_that_is_not_empty() {
        assert_eq!(chain(&[]).unwrap_err()[0].key, "transforms.x.fields");
        assert!(chain(&[("fields", " ")]).unwrap_err()[0].message.contains("empty list"));
        assert_eq!(
            chain(&[("fields", "a"), ("replace.null.with.default", "yes")]).unwrap_err()[0].key,
            "transforms.x.replace.null.with.default"
        );
    }
}
