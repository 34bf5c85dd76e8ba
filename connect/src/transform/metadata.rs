//! Connect's `SetSchemaMetadata`: the key's or value's schema given a new name, a new version or
//! both, everything else about it kept, and a struct rebuilt under the new schema. A record
//! without a schema is refused (a null without one goes on). Kafka Connect 4.1 lists the
//! schema's fields whatever its type, so it refuses every schema that is not a struct's; Wharf
//! does the same, so that a connector behaves as it does on Connect.

use crate::data::{Data, Schema, Type, Value};
use crate::model::Part;

use super::support::{require_schema, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

#[derive(Debug)]
struct SetSchemaMetadata {
    side: Side,
    name: Option<String>,
    version: Option<i32>,
    replace_null_with_default: bool,
    /// The renamed schema of each schema met.
    schemas: SchemaCache,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    // Connect trims a STRING setting; an empty name is a name (the empty one).
    let name = settings.get("schema.name").map(|n| n.trim().to_string());
    let version = match settings.get("schema.version").map(str::trim) {
        None => None,
        Some(text) => Some(text.parse::<i32>().map_err(|_| {
            settings.problem(
                "schema.version",
                format!(
                    "{}={text} is not valid: expected a whole number from {} to {}",
                    settings.key("schema.version"),
                    i32::MIN,
                    i32::MAX
                ),
            )
        })?),
    };
    if name.is_none() && version.is_none() {
        return Err(settings.problem(
            "schema.name",
            format!(
                "Neither schema name nor version configured: set {} or {} (or both)",
                settings.key("schema.name"),
                settings.key("schema.version")
            ),
        ));
    }
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(SetSchemaMetadata { side, name, version, replace_null_with_default, schemas: SchemaCache::new() }))
}

impl Apply for SetSchemaMetadata {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        if is_null_without_schema(self.side, record) {
            return Ok(Outcome::Keep);
        }
        let data = self.side.take(record);
        let schema = require_schema(&data, "updating schema metadata")?;
        if schema.kind != Type::Struct {
            return Err(format!(
                "Cannot list fields on non-struct type: Kafka Connect 4.1's SetSchemaMetadata works on struct \
                 schemas only, and this {} is {}",
                match self.side {
                    Side::Key => "key's schema",
                    Side::Value => "value's schema",
                },
                schema.kind
            ));
        }
        let renamed = self.schemas.get_or_derive(schema, |s| Ok(self.renamed(s)))?;
        let value = match data.value {
            Value::Struct(values) => Value::Struct(self.rebuilt(&renamed, values)?),
            other => other,
        };
        self.side.put(record, Data::new(renamed, value));
        Ok(Outcome::Keep)
    }
}

impl SetSchemaMetadata {
    fn renamed(&self, schema: &Schema) -> Schema {
        Schema {
            name: self.name.clone().or_else(|| schema.name.clone()),
            version: self.version.or(schema.version),
            ..schema.clone()
        }
    }

    /// A struct's field values as a struct of the new schema holds them: each null taking its
    /// field's default when `replace.null.with.default` says so, and a null refused in a
    /// required field, as Connect's `Struct.put` refuses it.
    fn rebuilt(&self, schema: &Schema, mut values: Vec<Value>) -> Result<Vec<Value>, String> {
        for (field, value) in schema.fields.iter().zip(values.iter_mut()) {
            if !matches!(value, Value::Null) {
                continue;
            }
            match &field.schema.default {
                Some(default) if self.replace_null_with_default => *value = default.clone(),
                _ if field.schema.optional => {}
                _ => {
                    return Err(format!(
                        "Invalid value: null used for required field: \"{}\", schema type: {}",
                        field.name,
                        field.schema.kind.name().to_uppercase()
                    ))
                }
            }
        }
        Ok(values)
    }
}

/// Whether the record's key or value is a null without a schema, which goes on untouched.
fn is_null_without_schema(side: Side, record: &Record) -> bool {
    let part = match side {
        Side::Key => &record.key,
        Side::Value => &record.value,
    };
    match part {
        None => true,
        Some(Part::Data(data)) => data.schema.is_none() && matches!(data.value, Value::Null),
        Some(Part::Bytes(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Field;
    use crate::transform::support::testing;
    use std::sync::Arc;

    fn metadata(items: &[(&str, &str)], side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
        let config: Vec<(String, String)> =
            items.iter().map(|(k, v)| (format!("transforms.s.{k}"), v.to_string())).collect();
        configure(&Settings { config: &config, prefix: "transforms.s.".into() }, side)
    }

    fn record(key: Option<Data>, value: Option<Data>) -> Record {
        testing::record(key, value)
    }

    fn data(part: &Option<Part>) -> &Data {
        match part {
            Some(Part::Data(data)) => data,
            other => panic!("not data: {other:?}"),
        }
    }

    fn row() -> Arc<Schema> {
        Arc::new(Schema {
            version: Some(1),
            doc: Some("a row".into()),
            ..Schema::structure(vec![
                Field { name: "id".into(), schema: Arc::new(Schema::of(Type::Int64)) },
                Field {
                    name: "note".into(),
                    schema: Arc::new(Schema {
                        default: Some(Value::String("-".into())),
                        ..Schema::of(Type::String).optional()
                    }),
                },
            ])
            .named("Old")
            .parameter("p", "q")
        })
    }

    #[test]
    fn the_name_and_version_change_and_the_rest_is_kept() {
        let t = metadata(&[("schema.name", " New "), ("schema.version", " 7 ")], Side::Value).unwrap();
        let mut r = record(None, Some(Data::new(row(), Value::Struct(vec![Value::Int64(1), Value::Null]))));
        t.apply(&mut r).unwrap();
        let out = data(&r.value);
        let schema = out.schema.as_ref().unwrap();
        assert_eq!(schema.name.as_deref(), Some("New"));
        assert_eq!(schema.version, Some(7));
        assert_eq!(**schema, Schema { name: Some("New".into()), version: Some(7), ..(*row()).clone() });
        assert_eq!(out.value, Value::Struct(vec![Value::Int64(1), Value::String("-".into())]), "defaults fill nulls");
    }

    #[test]
    fn only_what_is_set_changes_and_nulls_can_stay_null() {
        let t = metadata(&[("schema.version", "2"), ("replace.null.with.default", "false")], Side::Key).unwrap();
        let mut r = record(Some(Data::new(row(), Value::Struct(vec![Value::Int64(1), Value::Null]))), None);
        t.apply(&mut r).unwrap();
        let out = data(&r.key);
        assert_eq!(out.schema.as_ref().unwrap().name.as_deref(), Some("Old"));
        assert_eq!(out.schema.as_ref().unwrap().version, Some(2));
        assert_eq!(out.value, Value::Struct(vec![Value::Int64(1), Value::Null]));
        assert_eq!(r.value, None, "$Key leaves the value alone");
    }

    #[test]
    fn a_null_struct_gets_the_new_schema_and_a_null_without_one_goes_on() {
        let t = metadata(&[("schema.name", "N")], Side::Value).unwrap();
        let optional = Arc::new(Schema { optional: true, ..(*row()).clone() });
        let mut r = record(None, Some(Data::new(optional, Value::Null)));
        t.apply(&mut r).unwrap();
        assert_eq!(data(&r.value).schema.as_ref().unwrap().name.as_deref(), Some("N"));
        let mut tombstone = record(None, None);
        t.apply(&mut tombstone).unwrap();
        assert_eq!(tombstone.value, None);
    }

    #[test]
    fn records_without_a_schema_or_with_one_not_a_structs_are_refused() {
        let t = metadata(&[("schema.name", "N")], Side::Value).unwrap();
        let mut schemaless = record(None, Some(Data::schemaless(Value::Int64(1))));
        assert_eq!(t.apply(&mut schemaless).unwrap_err(), "Schema required for [updating schema metadata]");
        let mut text = record(None, Some(Data::new(Arc::new(Schema::of(Type::String)), Value::String("x".into()))));
        assert!(t.apply(&mut text).unwrap_err().starts_with("Cannot list fields on non-struct type"));
    }

    #[test]
    fn a_repeated_schema_is_renamed_once() {
        let t = metadata(&[("schema.name", "N")], Side::Value).unwrap();
        let schema = row();
        let mut first =
            record(None, Some(Data::new(schema.clone(), Value::Struct(vec![Value::Int64(1), Value::Null]))));
        let mut second = first.clone();
        t.apply(&mut first).unwrap();
        t.apply(&mut second).unwrap();
        assert!(Arc::ptr_eq(data(&first.value).schema.as_ref().unwrap(), data(&second.value).schema.as_ref().unwrap()));
    }

    #[test]
    fn settings_need_a_name_or_a_version_and_a_whole_version() {
        assert_eq!(metadata(&[], Side::Value).unwrap_err().key, "transforms.s.schema.name");
        assert_eq!(metadata(&[("schema.version", "1.5")], Side::Value).unwrap_err().key, "transforms.s.schema.version");
        assert_eq!(metadata(&[("schema.version", "")], Side::Value).unwrap_err().key, "transforms.s.schema.version");
        assert!(metadata(&[("schema.name", "")], Side::Value).is_ok(), "an empty name is a name");
        assert!(metadata(&[("schema.version", "+3")], Side::Value).is_ok());
    }
}
