//! Connect's `Flatten`: a struct (with a schema) or a map (without one) whose nested structs or
//! maps are lifted into the top level, each field named by the names on its path joined with
//! the delimiter (`address.city`). Arrays are kept whole. A flattened field of a struct is
//! optional when it or any struct above it is, and takes its default from its own schema or
//! else from the defaults of the structs above it; a map inside a struct with a schema is
//! refused, as Connect refuses it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::data::{Data, Field, Schema, Type, Value};

use super::support::{copy_schema_basics, java_class, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

/// What Connect's `Requirements` messages say the transform was doing.
const PURPOSE: &str = "flattening";

#[derive(Debug)]
struct Flatten {
    side: Side,
    delimiter: String,
    /// The flat schema of each struct schema met.
    schemas: SchemaCache,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    // Connect trims a STRING setting: " _ " is "_", and a blank delimiter is the empty one.
    let delimiter = settings.get("delimiter").map(str::trim).unwrap_or(".").to_string();
    Ok(Box::new(Flatten { side, delimiter, schemas: SchemaCache::new() }))
}

impl Apply for Flatten {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        // A null key or value (with a schema or not) goes on untouched, as in Connect.
        if self.side.is_null(record) {
            return Ok(Outcome::Keep);
        }
        let data = self.side.take(record);
        let flat = match &data.schema {
            None => {
                let entries = into_entries(data.value)?;
                let mut flat = FlatMap::for_entries(&entries);
                self.flatten_map(entries, "", &mut flat)?;
                Data::schemaless(Value::Map(flat.entries))
            }
            Some(schema) => {
                require_struct(&data, PURPOSE)?;
                let flat_schema = self.schemas.get_or_derive(schema, |s| self.flat_schema(s))?;
                let mut values = Vec::with_capacity(flat_schema.fields.len());
                if let Value::Struct(fields) = data.value {
                    flat_values(schema, fields, &mut values);
                }
                Data::new(flat_schema, Value::Struct(values))
            }
        };
        self.side.put(record, flat);
        Ok(Outcome::Keep)
    }
}

impl Flatten {
    /// A field's name under the names of the structs or maps above it (none at the top).
    fn name(&self, prefix: &str, name: &str) -> String {
        if prefix.is_empty() {
            name.to_string()
        } else {
            let mut joined = String::with_capacity(prefix.len() + self.delimiter.len() + name.len());
            joined.push_str(prefix);
            joined.push_str(&self.delimiter);
            joined.push_str(name);
            joined
        }
    }

    /// The flat schema of a struct schema: its basics (not its optionality nor its default)
    /// and its leaf fields in order, depth first.
    fn flat_schema(&self, schema: &Schema) -> Result<Schema, String> {
        let mut fields = Vec::new();
        let mut names = HashSet::new();
        self.flat_fields(schema, "", schema.optional, schema.default.as_ref(), &mut fields, &mut names)?;
        Ok(Schema { fields, ..copy_schema_basics(schema, Type::Struct) })
    }

    /// The leaf fields under `schema`: `optional` when a struct above is, and `inherited` the
    /// default of the struct above, whose fields give a default to a field without its own.
    fn flat_fields(
        &self,
        schema: &Schema,
        prefix: &str,
        optional: bool,
        inherited: Option<&Value>,
        out: &mut Vec<Field>,
        names: &mut HashSet<String>,
    ) -> Result<(), String> {
        for (i, field) in schema.fields.iter().enumerate() {
            let name = self.name(prefix, &field.name);
            let optional = optional || field.schema.optional;
            let default = match &field.schema.default {
                Some(own) if *own != Value::Null => Some(own),
                _ => match inherited {
                    Some(Value::Struct(values)) => values.get(i).filter(|v| **v != Value::Null),
                    _ => None,
                },
            };
            match field.schema.kind {
                Type::Struct => self.flat_fields(&field.schema, &name, optional, default, out, names)?,
                Type::Map => {
                    return Err(format!(
                        "Flatten transformation does not support MAP for record with schemas (for field {name}). \
                         Flatten lifts structs only; turn the map into a struct before this step, or flatten \
                         records without a schema"
                    ))
                }
                _ => {
                    if name.is_empty() {
                        return Err("a flattened field would have an empty name; give every field a name".into());
                    }
                    if names.contains(&name) {
                        return Err(format!(
                            "Cannot create field because of field name duplication {name}: two paths flatten to \
                             the same name; choose a delimiter no field name contains"
                        ));
                    }
                    names.insert(name.clone());
                    out.push(Field { name, schema: Arc::new(leaf_schema(&field.schema, optional, default)) });
                }
            }
        }
        Ok(())
    }

    /// The entries of a schemaless map, nested maps lifted, put into `flat` as a Java
    /// `LinkedHashMap` takes them: a name met again replaces the value in its first place.
    fn flatten_map(&self, entries: Vec<(Value, Value)>, prefix: &str, flat: &mut FlatMap) -> Result<(), String> {
        for (key, value) in entries {
            let Value::String(key) = key else {
                return Err(format!(
                    "Flatten needs string keys in a map without a schema, and {} has a key that is {}",
                    if prefix.is_empty() { "the record's map".to_string() } else { format!("field {prefix}") },
                    key.describe()
                ));
            };
            // A top-level key is its own name: no new string for it.
            let name = if prefix.is_empty() { key } else { self.name(prefix, &key) };
            match value {
                Value::Map(inner) => self.flatten_map(inner, &name, flat)?,
                Value::Struct(_) => {
                    return Err(format!(
                        "Flatten transformation does not support class {} for record without schemas (for field \
                         {name}).",
                        java_class(&value)
                    ))
                }
                Value::Decimal(_) => {
                    return Err(format!(
                        "Flatten transformation was passed a value of type class {} which is not supported by \
                         Connect's data API (for field {name}); a decimal needs a schema",
                        java_class(&value)
                    ))
                }
                // Nulls, primitives and arrays are kept as they are.
                other => flat.put(name, other),
            }
        }
        Ok(())
    }
}

/// A schemaless value's entries, or `Requirements.requireMap`'s refusal.
fn into_entries(value: Value) -> Result<Vec<(Value, Value)>, String> {
    match value {
        Value::Map(entries) => Ok(entries),
        other => Err(require_map(&other, PURPOSE).err().unwrap_or_default()),
    }
}

/// A flattened field's schema (`SchemaUtil.copySchemaBasics` of the original, an array keeping
/// its element schema), optional and with a default as its place in the tree makes it.
fn leaf_schema(original: &Schema, optional: bool, default: Option<&Value>) -> Schema {
    let mut schema = copy_schema_basics(original, original.kind);
    if original.kind == Type::Array {
        schema.value = original.value.clone();
    }
    schema.optional = optional;
    schema.default = default.cloned();
    schema
}

/// The leaf values of a struct, depth first, in the order of the flat schema's fields: a null
/// takes its field's default (as `Struct.get`), and a struct that is still null leaves every
/// field under it null.
fn flat_values(schema: &Schema, values: Vec<Value>, out: &mut Vec<Value>) {
    for (field, value) in schema.fields.iter().zip(values) {
        let value = match (value, &field.schema.default) {
            (Value::Null, Some(default)) => default.clone(),
            (value, _) => value,
        };
        match (field.schema.kind, value) {
            (Type::Struct, Value::Struct(inner)) => flat_values(&field.schema, inner, out),
            (Type::Struct, _) => push_nulls(&field.schema, out),
            (_, value) => out.push(value),
        }
    }
}

/// A null for every leaf field under a struct schema.
fn push_nulls(schema: &Schema, out: &mut Vec<Value>) {
    for field in &schema.fields {
        match field.schema.kind {
            Type::Struct => push_nulls(&field.schema, out),
            _ => out.push(Value::Null),
        }
    }
}

/// A schemaless map being built with Java's map semantics.
struct FlatMap {
    entries: Vec<(Value, Value)>,
    /// Where each name is in `entries`; none when no nested map can make a name twice.
    at: Option<HashMap<String, usize>>,
}

impl FlatMap {
    /// A map for flattening these entries: names are only looked up when there is a nested map
    /// to make new ones.
    fn for_entries(entries: &[(Value, Value)]) -> Self {
        let nested = entries.iter().any(|(_, v)| matches!(v, Value::Map(_)));
        FlatMap { entries: Vec::with_capacity(entries.len()), at: nested.then(HashMap::new) }
    }

    fn put(&mut self, name: String, value: Value) {
        let Some(at) = &mut self.at else {
            self.entries.push((Value::String(name), value));
            return;
        };
        match at.get(&name) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                at.insert(name.clone(), self.entries.len());
                self.entries.push((Value::String(name), value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::transform::support::testing;

    fn settings(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (format!("transforms.f.{k}"), v.to_string())).collect()
    }

    fn flatten(items: &[(&str, &str)], side: Side) -> Box<dyn Apply> {
        let config = settings(items);
        configure(&Settings { config: &config, prefix: "transforms.f.".into() }, side).unwrap()
    }

    fn field(name: &str, schema: Schema) -> Field {
        Field { name: name.into(), schema: Arc::new(schema) }
    }

    fn record(key: Option<Data>, value: Option<Data>) -> Record {
        Record { partition: Some(0), ..testing::record(key, value) }
    }

    fn value_of(record: &Record) -> &Data {
        match &record.value {
            Some(Part::Data(data)) => data,
            other => panic!("not data: {other:?}"),
        }
    }

    fn string(s: &str) -> Value {
        Value::String(s.into())
    }

    fn address() -> Schema {
        Schema::structure(vec![
            field("city", Schema::of(Type::String)),
            field("zip", Schema { default: Some(Value::Int32(1000)), ..Schema::of(Type::Int32) }),
        ])
    }

    #[test]
    fn nested_structs_become_fields_named_by_their_path() {
        let schema = Arc::new(Schema {
            version: Some(3),
            ..Schema::structure(vec![
                field("id", Schema::of(Type::Int64)),
                field("home", address()),
                field("tags", Schema::array(Arc::new(Schema::of(Type::String)))),
            ])
            .named("Customer")
        });
        let value = Value::Struct(vec![
            Value::Int64(7),
            Value::Struct(vec![string("Oslo"), Value::Null]),
            Value::Array(vec![string("a")]),
        ]);
        let mut r = record(None, Some(Data::new(schema, value)));
        flatten(&[], Side::Value).apply(&mut r).unwrap();
        let out = value_of(&r);
        let flat = out.schema.as_ref().unwrap();
        assert_eq!(flat.name.as_deref(), Some("Customer"));
        assert_eq!(flat.version, Some(3));
        let names: Vec<&str> = flat.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["id", "home.city", "home.zip", "tags"]);
        assert_eq!(flat.fields[3].schema.value.as_deref(), Some(&Schema::of(Type::String)), "arrays keep elements");
        assert_eq!(flat.fields[2].schema.default, Some(Value::Int32(1000)));
        assert_eq!(
            out.value,
            Value::Struct(vec![Value::Int64(7), string("Oslo"), Value::Int32(1000), Value::Array(vec![string("a")])]),
            "a null takes its field's default, as Struct.get gives it"
        );
    }

    #[test]
    fn fields_under_an_optional_struct_are_optional_and_null_when_it_is() {
        let schema = Arc::new(Schema::structure(vec![
            field("id", Schema::of(Type::Int32)),
            field("home", Schema { optional: true, ..address() }),
        ]));
        let mut r = record(None, Some(Data::new(schema, Value::Struct(vec![Value::Int32(1), Value::Null]))));
        flatten(&[("delimiter", " _ ")], Side::Value).apply(&mut r).unwrap();
        let out = value_of(&r);
        let flat = out.schema.as_ref().unwrap();
        assert_eq!(flat.fields[1].name, "home_city", "the delimiter is trimmed, as Connect trims a string setting");
        assert!(flat.fields[1].schema.optional && flat.fields[2].schema.optional);
        assert!(!flat.fields[0].schema.optional);
        assert_eq!(out.value, Value::Struct(vec![Value::Int32(1), Value::Null, Value::Null]));
    }

    #[test]
    fn a_struct_default_gives_defaults_to_the_fields_under_it() {
        let inner = address();
        let schema = Arc::new(Schema::structure(vec![field(
            "home",
            Schema {
                optional: true,
                default: Some(Value::Struct(vec![string("Bergen"), Value::Int32(5000)])),
                ..inner
            },
        )]));
        let cache = flatten(&[], Side::Value);
        let mut r = record(None, Some(Data::new(schema.clone(), Value::Struct(vec![Value::Null]))));
        cache.apply(&mut r).unwrap();
        let out = value_of(&r);
        let flat = out.schema.as_ref().unwrap();
        assert_eq!(flat.fields[0].schema.default, Some(string("Bergen")));
        assert_eq!(flat.fields[1].schema.default, Some(Value::Int32(1000)), "a field's own default comes first");
        assert_eq!(
            out.value,
            Value::Struct(vec![string("Bergen"), Value::Int32(5000)]),
            "the null struct is its default"
        );
    }

    #[test]
    fn a_repeated_schema_is_flattened_once() {
        let schema = Arc::new(Schema::structure(vec![field("a", address())]));
        let t = flatten(&[], Side::Key);
        let mut first = record(Some(Data::new(schema.clone(), Value::Struct(vec![Value::Null]))), None);
        let mut second = first.clone();
        t.apply(&mut first).unwrap();
        t.apply(&mut second).unwrap();
        let (Some(Part::Data(a)), Some(Part::Data(b))) = (&first.key, &second.key) else { panic!() };
        assert!(Arc::ptr_eq(a.schema.as_ref().unwrap(), b.schema.as_ref().unwrap()));
        assert_eq!(first.value, None, "the value is not touched by $Key");
    }

    #[test]
    fn maps_in_a_struct_with_a_schema_and_clashing_names_are_refused() {
        let map = Schema::map(Arc::new(Schema::of(Type::String)), Arc::new(Schema::of(Type::Int32)));
        let schema = Arc::new(Schema::structure(vec![field("m", map)]));
        let mut r = record(None, Some(Data::new(schema, Value::Struct(vec![Value::Map(Vec::new())]))));
        let e = flatten(&[], Side::Value).apply(&mut r).unwrap_err();
        assert!(e.contains("does not support MAP") && e.contains("for field m"), "{e}");

        let schema =
            Arc::new(Schema::structure(vec![field("a.city", Schema::of(Type::String)), field("a", address())]));
        let value = Value::Struct(vec![string("x"), Value::Struct(vec![string("y"), Value::Int32(1)])]);
        let mut r = record(None, Some(Data::new(schema, value)));
        let e = flatten(&[], Side::Value).apply(&mut r).unwrap_err();
        assert!(e.contains("field name duplication a.city"), "{e}");
    }

    #[test]
    fn schemaless_maps_flatten_with_a_later_name_replacing_an_earlier_in_place() {
        let value = Value::Map(vec![
            (string("a_b"), Value::Int64(1)),
            (string("a"), Value::Map(vec![(string("b"), Value::Int64(2)), (string("c"), Value::Null)])),
            (string("list"), Value::Array(vec![Value::Map(vec![(string("x"), Value::Int64(3))])])),
        ]);
        let mut r = record(None, Some(Data::schemaless(value)));
        flatten(&[("delimiter", "_")], Side::Value).apply(&mut r).unwrap();
        assert_eq!(
            value_of(&r).value,
            Value::Map(vec![
                (string("a_b"), Value::Int64(2)),
                (string("a_c"), Value::Null),
                (string("list"), Value::Array(vec![Value::Map(vec![(string("x"), Value::Int64(3))])])),
            ])
        );
        assert_eq!(value_of(&r).schema, None);
    }

    #[test]
    fn nulls_go_on_untouched_and_what_is_not_a_map_or_struct_is_refused() {
        let t = flatten(&[], Side::Value);
        let mut tombstone = record(None, None);
        t.apply(&mut tombstone).unwrap();
        assert_eq!(tombstone.value, None);
        let optional = Arc::new(Schema { optional: true, ..address() });
        let mut null = record(None, Some(Data::new(optional.clone(), Value::Null)));
        t.apply(&mut null).unwrap();
        assert_eq!(value_of(&null), &Data::new(optional, Value::Null), "the schema is not flattened either");

        let mut text = record(None, Some(Data::schemaless(string("x"))));
        assert_eq!(
            t.apply(&mut text).unwrap_err(),
            "Only Map objects supported in absence of schema for [flattening], found: java.lang.String"
        );
        let mut typed = record(None, Some(Data::new(Arc::new(Schema::of(Type::String)), string("x"))));
        assert_eq!(
            t.apply(&mut typed).unwrap_err(),
            "Only Struct objects supported for [flattening], found: java.lang.String"
        );
        let mut bytes = record(None, None);
        bytes.value = Some(Part::Bytes(b"raw".to_vec()));
        assert!(t.apply(&mut bytes).unwrap_err().ends_with("found: [B"));
        let mut keyed = record(None, Some(Data::schemaless(Value::Map(vec![(Value::Int64(1), Value::Int64(2))]))));
        assert!(t.apply(&mut keyed).unwrap_err().contains("string keys"));
    }
}
