//! Connect's `HoistField`: the record's key or value becomes the one field of a new struct (with
//! a schema: a struct schema with that one field, of the old schema) or of a new map (without).

use std::sync::Arc;

use crate::data::{Data, Field, Schema, Value};

use super::support::{SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

#[derive(Debug)]
struct HoistField {
    side: Side,
    field: String,
    cache: SchemaCache,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let field = settings.get("field").map(str::trim).ok_or_else(|| {
        settings.problem(
            "field",
            format!("{} is required: the name of the field that will hold the key or value", settings.key("field")),
        )
    })?;
    Ok(Box::new(HoistField { side, field: field.to_string(), cache: SchemaCache::new() }))
}

impl HoistField {
    fn wrapping_schema(&self, schema: &Arc<Schema>) -> Result<Arc<Schema>, String> {
        self.cache.get_or_derive(schema, |_| {
            if self.field.is_empty() {
                return Err("fieldName cannot be null.".into());
            }
            Ok(Schema::structure(vec![Field { name: self.field.clone(), schema: schema.clone() }]))
        })
    }
}

impl Apply for HoistField {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let Data { schema, value } = self.side.take(record);
        let hoisted = match schema {
            None => Data::schemaless(Value::Map(vec![(Value::String(self.field.clone()), value)])),
            Some(schema) => {
                let wrapping = self.wrapping_schema(&schema)?;
                if value == Value::Null && !schema.optional {
                    return Err(format!(
                        "Invalid value: null used for required field: \"{}\", schema type: {}",
                        self.field,
                        schema.kind.name().to_uppercase()
                    ));
                }
                Data::new(wrapping, Value::Struct(vec![value]))
            }
        };
        self.side.put(record, hoisted);
        Ok(Outcome::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Type;
    use crate::model::Part;
    use crate::transform::support::testing;
    use crate::transform::{Chain, TransformConfigError};

    fn chain(variant: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain(&format!("HoistField{variant}"), settings)
    }

    fn record(key: Option<Part>, value: Option<Part>) -> Record {
        Record { topic: "t".into(), partition: None, offset: None, key, value, headers: Vec::new(), timestamp: None }
    }

    fn hoisted_value(field: &str, value: Option<Part>) -> Result<Data, String> {
        let out = chain("$Value", &[("field", field)]).unwrap().apply(record(None, value)).map_err(|e| e.message)?;
        match out.and_then(|r| r.value) {
            Some(Part::Data(data)) => Ok(data),
            other => panic!("no value: {other:?}"),
        }
    }

    #[test]
    fn with_a_schema_the_value_becomes_the_one_field_of_a_struct() {
        let date = Arc::new(Schema::date().optional());
        let out = hoisted_value("d", Some(Part::Data(Data::new(date.clone(), Value::Int32(3))))).unwrap();
        let expected = Schema::structure(vec![Field { name: "d".into(), schema: date }]);
        assert_eq!(out, Data::new(Arc::new(expected), Value::Struct(vec![Value::Int32(3)])));
    }

    #[test]
    fn without_a_schema_the_value_becomes_the_one_entry_of_a_map() {
        let out = hoisted_value(" v ", Some(Part::Data(Data::schemaless(Value::Int64(1))))).unwrap();
        assert_eq!(out, Data::schemaless(Value::Map(vec![(Value::String("v".into()), Value::Int64(1))])));
        let tombstone = hoisted_value("v", None).unwrap();
        assert_eq!(tombstone, Data::schemaless(Value::Map(vec![(Value::String("v".into()), Value::Null)])));
    }

    #[test]
    fn keys_are_hoisted_and_bytes_no_converter_read_are_optional_bytes() {
        let chain = chain("$Key", &[("field", "k")]).unwrap();
        let out = chain.apply(record(Some(Part::Bytes(vec![1, 2])), None)).unwrap().unwrap();
        let Some(Part::Data(key)) = out.key else { panic!("no key") };
        assert_eq!(key.schema.unwrap().fields[0].schema.as_ref(), &Schema::of(Type::Bytes).optional());
        assert_eq!(key.value, Value::Struct(vec![Value::Bytes(vec![1, 2])]));
        assert_eq!(out.value, None, "the value is left alone");
    }

    #[test]
    fn the_wrapping_schema_is_derived_once_for_a_repeated_schema() {
        let chain = chain("$Value", &[("field", "v")]).unwrap();
        let schema = Arc::new(Schema::of(Type::String));
        let run = |text: &str| {
            let value = Some(Part::Data(Data::new(schema.clone(), Value::String(text.into()))));
            match chain.apply(record(None, value)).unwrap().unwrap().value {
                Some(Part::Data(Data { schema: Some(schema), .. })) => schema,
                other => panic!("{other:?}"),
            }
        };
        assert!(Arc::ptr_eq(&run("a"), &run("b")));
    }

    #[test]
    fn a_null_under_a_required_schema_and_an_empty_name_with_a_schema_are_refused() {
        let required = Some(Part::Data(Data::new(Arc::new(Schema::of(Type::Int32)), Value::Null)));
        assert!(hoisted_value("v", required)
            .unwrap_err()
            .contains("null used for required field: \"v\", schema type: INT32"));
        let some = Some(Part::Data(Data::new(Arc::new(Schema::of(Type::Int32)), Value::Int32(1))));
        assert!(hoisted_value("", some).unwrap_err().contains("fieldName cannot be null."));
        let schemaless = hoisted_value("", Some(Part::Data(Data::schemaless(Value::Int32(1))))).unwrap();
        assert_eq!(schemaless.value, Value::Map(vec![(Value::String(String::new()), Value::Int32(1))]));
    }

    #[test]
    fn the_field_setting_is_required() {
        let problems = chain("$Value", &[]).unwrap_err();
        assert_eq!(problems[0].key, "transforms.x.field");
        assert!(problems[0].message.contains("is required"), "{}", problems[0].message);
    }
}
