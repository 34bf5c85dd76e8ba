//! Connect's `HeaderFrom`: fields of the record's key or value become headers, the field's value
//! under the field's schema (none without a schema); `operation=move` also removes the fields
//! (from the struct and its schema, or from the map), `copy` leaves them.

use crate::data::{Data, Field, Schema, Type, Value};
use crate::model::{Part, PartHeader};

use super::support::{copy_schema_basics, optional_bytes, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Move,
    Copy,
}

/// A field and the header it goes to.
#[derive(Debug)]
struct Pair {
    field: String,
    header: String,
    /// Whether a later pair names the same field (whose value a move must then not take yet).
    named_again: bool,
}

#[derive(Debug)]
struct HeaderFrom {
    side: Side,
    /// In the order given.
    pairs: Vec<Pair>,
    operation: Operation,
    replace_null_with_default: bool,
    /// `Requirements`' purpose: `header move` or `header copy`.
    purpose: &'static str,
    cache: SchemaCache,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let list = |name: &str, what: &str| -> Result<Vec<String>, TransformConfigError> {
        if settings.get(name).is_none() {
            return Err(settings.problem(name, format!("{} is required: {what}", settings.key(name))));
        }
        let items = settings.list(name);
        if items.is_empty() {
            return Err(settings.problem(name, format!("{} is an empty list: {what}", settings.key(name))));
        }
        Ok(items)
    };
    let fields = list("fields", "the names of the fields to move or copy to headers, separated by commas")?;
    let headers = list("headers", "the names of the headers, one for each of fields, in the same order")?;
    if fields.len() != headers.len() {
        return Err(settings.problem(
            "headers",
            format!(
                "{} names {} headers and {} names {} fields; they must have the same number of elements",
                settings.key("headers"),
                headers.len(),
                settings.key("fields"),
                fields.len()
            ),
        ));
    }
    // Connect's choice here is case-sensitive.
    let operation = match settings.get("operation").map(str::trim) {
        Some("move") => Operation::Move,
        Some("copy") => Operation::Copy,
        Some(other) => {
            return Err(settings.problem(
                "operation",
                format!("{}={other} is not valid: expected move or copy", settings.key("operation")),
            ))
        }
        None => {
            return Err(settings.problem(
                "operation",
                format!("{} is required: move (remove the fields) or copy (keep them)", settings.key("operation")),
            ))
        }
    };
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    let purpose = match operation {
        Operation::Move => "header move",
        Operation::Copy => "header copy",
    };
    let pairs = fields
        .iter()
        .zip(headers)
        .enumerate()
        .map(|(i, (field, header))| Pair { field: field.clone(), header, named_again: fields[i + 1..].contains(field) })
        .collect();
    Ok(Box::new(HeaderFrom { side, pairs, operation, replace_null_with_default, purpose, cache: SchemaCache::new() }))
}

fn required_null(name: &str, schema: &Schema) -> String {
    format!(
        "Invalid value: null used for required field: \"{name}\", schema type: {}",
        schema.kind.name().to_uppercase()
    )
}

/// The key or value part of the record a side names, and the record's headers.
fn part_and_headers(side: Side, record: &mut Record) -> (&mut Option<Part>, &mut Vec<PartHeader>) {
    let Record { key, value, headers, .. } = record;
    match side {
        Side::Key => (key, headers),
        Side::Value => (value, headers),
    }
}

impl HeaderFrom {
    fn moves(&self, name: &str) -> bool {
        self.pairs.iter().any(|pair| pair.field == name)
    }

    /// The struct schema without the moved fields.
    fn moved_schema(&self, schema: &Schema) -> Result<Schema, String> {
        let mut updated = copy_schema_basics(schema, Type::Struct);
        updated.fields = schema.fields.iter().filter(|f| !self.moves(&f.name)).cloned().collect();
        Ok(updated)
    }

    /// A struct field's value as Connect reads it here: with its default, or as set.
    fn with_default(&self, schema: &Schema, value: Value) -> Value {
        match (value, &schema.default) {
            (Value::Null, Some(default)) if self.replace_null_with_default => default.clone(),
            (value, _) => value,
        }
    }

    /// The struct field a pair names, with its position.
    fn field<'a>(&self, pair: &Pair, schema: &'a Schema) -> Result<(usize, &'a Field), String> {
        schema.field(&pair.field).ok_or_else(|| {
            format!(
                "the {} has no field \"{}\" to make header \"{}\" from; name fields of the struct in fields",
                if self.side == Side::Key { "key" } else { "value" },
                pair.field,
                pair.header
            )
        })
    }

    /// The header a struct field's value makes, under the field's schema.
    fn header(&self, pair: &Pair, field: &Field, value: Value) -> Result<PartHeader, String> {
        let value = self.with_default(&field.schema, value);
        if value == Value::Null && !field.schema.optional {
            return Err(format!(
                "A null value requires an optional schema: field \"{}\" is null and its schema is required, so it cannot make header \"{}\"",
                pair.field, pair.header
            ));
        }
        Ok(PartHeader { key: pair.header.clone(), value: Some(Part::Data(Data::new(field.schema.clone(), value))) })
    }

    fn copy_with_schema(&self, data: &Data, headers: &mut Vec<PartHeader>) -> Result<(), String> {
        let (schema, values) = require_struct(data, self.purpose)?;
        for pair in &self.pairs {
            let (index, field) = self.field(pair, schema)?;
            let value = values.get(index).cloned().unwrap_or(Value::Null);
            headers.push(self.header(pair, field, value)?);
        }
        Ok(())
    }

    fn move_with_schema(&self, data: Data, headers: &mut Vec<PartHeader>) -> Result<Data, String> {
        require_struct(&data, self.purpose)?;
        let Data { schema: Some(schema), value: Value::Struct(mut values) } = data else {
            return Err(format!("Only Struct objects supported for [{}]", self.purpose));
        };
        let moved = self.cache.get_or_derive(&schema, |s| self.moved_schema(s))?;
        for pair in &self.pairs {
            let (index, field) = self.field(pair, &schema)?;
            let value = match values.get_mut(index) {
                Some(slot) if pair.named_again => slot.clone(),
                Some(slot) => std::mem::replace(slot, Value::Null),
                None => Value::Null,
            };
            headers.push(self.header(pair, field, value)?);
        }
        let mut kept = Vec::with_capacity(moved.fields.len());
        for (field, value) in schema.fields.iter().zip(values) {
            if self.moves(&field.name) {
                continue;
            }
            let value = self.with_default(&field.schema, value);
            if value == Value::Null && !field.schema.optional {
                return Err(required_null(&field.name, &field.schema));
            }
            kept.push(value);
        }
        Ok(Data::new(moved, Value::Struct(kept)))
    }

    /// Headers without a schema from a map's entries (a null one for a missing entry).
    fn schemaless(&self, entries: &mut Vec<(Value, Value)>, headers: &mut Vec<PartHeader>) {
        for pair in &self.pairs {
            let found = entries.iter_mut().rev().find(|(k, _)| matches!(k, Value::String(s) if *s == pair.field));
            let value = match found {
                None => Value::Null,
                Some((_, value)) if self.operation == Operation::Move && !pair.named_again => {
                    std::mem::replace(value, Value::Null)
                }
                Some((_, value)) => value.clone(),
            };
            let value = match value {
                Value::Null => None,
                value => Some(Part::Data(Data::schemaless(value))),
            };
            headers.push(PartHeader { key: pair.header.clone(), value });
        }
        if self.operation == Operation::Move {
            entries.retain(|(k, _)| !matches!(k, Value::String(s) if self.moves(s)));
        }
    }
}

impl Apply for HeaderFrom {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let (part, headers) = part_and_headers(self.side, record);
        match part {
            None => return require_map(&Value::Null, self.purpose).map(|_| Outcome::Keep),
            Some(Part::Data(Data { schema: None, value: Value::Map(entries) })) => self.schemaless(entries, headers),
            Some(Part::Data(Data { schema: None, value })) => {
                return require_map(value, self.purpose).map(|_| Outcome::Keep)
            }
            // What no converter read is optional bytes to Connect: not a struct.
            Some(Part::Bytes(_)) => {
                let bytes = Data::new(optional_bytes(), Value::Bytes(Vec::new()));
                return require_struct(&bytes, self.purpose).map(|_| Outcome::Keep);
            }
            Some(Part::Data(data)) if self.operation == Operation::Copy => self.copy_with_schema(data, headers)?,
            Some(Part::Data(_)) => {
                if let Some(Part::Data(data)) = part.take() {
                    *part = Some(Part::Data(self.move_with_schema(data, headers)?));
                }
            }
        }
        Ok(Outcome::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::support::testing;
    use crate::transform::{Chain, TransformConfigError};
    use std::sync::Arc;

    fn chain(variant: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain(&format!("HeaderFrom{variant}"), settings)
    }

    fn record(key: Option<Data>, value: Option<Data>) -> Record {
        Record { headers: vec![PartHeader { key: "old".into(), value: None }], ..testing::record(key, value) }
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
        ]);
        Arc::new(Schema { version: Some(3), ..schema.named("com.example.Person").optional() })
    }

    fn ada() -> Data {
        Data::new(person(), Value::Struct(vec![Value::Int64(7), s("Ada"), Value::Null]))
    }

    fn header(key: &str, schema: &Arc<Schema>, value: Value) -> PartHeader {
        PartHeader { key: key.into(), value: Some(Part::Data(Data::new(schema.clone(), value))) }
    }

    fn settings<'a>(fields: &'a str, headers: &'a str, operation: &'a str) -> [(&'a str, &'a str); 3] {
        [("fields", fields), ("headers", headers), ("operation", operation)]
    }

    #[test]
    fn copy_adds_headers_under_the_fields_schemas_after_the_records_own() {
        let chain = chain("$Value", &settings("id,score", "h-id,h-score", "copy")).unwrap();
        let out = chain.apply(record(None, Some(ada()))).unwrap().unwrap();
        let schema = person();
        assert_eq!(
            out.headers,
            [
                PartHeader { key: "old".into(), value: None },
                header("h-id", &schema.fields[0].schema, Value::Int64(7)),
                header("h-score", &schema.fields[2].schema, Value::Int32(5)),
            ]
        );
        assert_eq!(out.value, Some(Part::Data(ada())), "copy leaves the value");
    }

    #[test]
    fn move_removes_the_fields_from_the_struct_and_its_schema() {
        let chain = chain("$Value", &settings("name,name", "a,b", "move")).unwrap();
        let out = chain.apply(record(None, Some(ada()))).unwrap().unwrap();
        let schema = person();
        assert_eq!(
            out.headers[1..],
            [header("a", &schema.fields[1].schema, s("Ada")), header("b", &schema.fields[1].schema, s("Ada"))]
        );
        let Some(Part::Data(Data { schema: Some(moved), value })) = out.value else { panic!("no value") };
        assert_eq!(moved.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["id", "score"]);
        assert_eq!(
            (moved.name.as_deref(), moved.version, moved.optional),
            (Some("com.example.Person"), Some(3), false)
        );
        assert_eq!(value, Value::Struct(vec![Value::Int64(7), Value::Int32(5)]), "kept fields take their defaults");
    }

    #[test]
    fn replace_null_with_default_false_keeps_nulls_in_headers_and_kept_fields() {
        let mut given = settings("score", "s", "copy").to_vec();
        given.push(("replace.null.with.default", "false"));
        let out = chain("$Value", &given).unwrap().apply(record(None, Some(ada()))).unwrap().unwrap();
        assert_eq!(out.headers[1], header("s", &person().fields[2].schema, Value::Null));
        given[0] = ("fields", "id");
        given[2] = ("operation", "move");
        let out = chain("$Value", &given).unwrap().apply(record(None, Some(ada()))).unwrap().unwrap();
        let Some(Part::Data(moved)) = out.value else { panic!("no value") };
        assert_eq!(moved.value, Value::Struct(vec![s("Ada"), Value::Null]));
    }

    #[test]
    fn the_moved_schema_is_derived_once_for_a_repeated_schema() {
        let chain = chain("$Value", &settings("id", "h", "move")).unwrap();
        let run = || match chain.apply(record(None, Some(ada()))).unwrap().unwrap().value {
            Some(Part::Data(Data { schema: Some(schema), .. })) => schema,
            other => panic!("{other:?}"),
        };
        assert!(Arc::ptr_eq(&run(), &run()));
    }

    #[test]
    fn schemaless_maps_make_headers_without_a_schema_and_a_missing_entry_a_null_header() {
        let map = Data::schemaless(Value::Map(vec![(s("a"), Value::Int32(1)), (s("b"), s("x"))]));
        let chain = chain("$Key", &settings("a,missing", "ha,hm", "move")).unwrap();
        let out = chain.apply(record(Some(map), None)).unwrap().unwrap();
        assert_eq!(
            out.headers[1..],
            [
                PartHeader { key: "ha".into(), value: Some(Part::Data(Data::schemaless(Value::Int32(1)))) },
                PartHeader { key: "hm".into(), value: None },
            ]
        );
        assert_eq!(out.key, Some(Part::Data(Data::schemaless(Value::Map(vec![(s("b"), s("x"))])))));
    }

    #[test]
    fn a_missing_field_or_a_value_that_is_neither_a_struct_nor_a_map_is_refused() {
        let refused = |operation: &str, value: Option<Data>| {
            chain("$Value", &settings("nope", "h", operation)).unwrap().apply(record(None, value)).unwrap_err().message
        };
        assert!(refused("copy", Some(ada())).contains("no field \"nope\""));
        assert!(refused("move", Some(ada())).contains("no field \"nope\""));
        assert!(refused("copy", None)
            .ends_with("Only Map objects supported in absence of schema for [header copy], found: null"));
        assert!(refused("move", Some(Data::new(person(), Value::Null)))
            .ends_with("Only Struct objects supported for [header move], found: null"));
        assert!(refused("move", Some(Data::schemaless(s("x")))).ends_with("found: java.lang.String"));
    }

    #[test]
    fn a_null_in_a_required_field_cannot_be_a_header() {
        let required_null = Data::new(person(), Value::Struct(vec![Value::Null, Value::Null, Value::Null]));
        let chain = chain("$Value", &settings("id", "h", "copy")).unwrap();
        assert!(chain
            .apply(record(None, Some(required_null)))
            .unwrap_err()
            .message
            .contains("requires an optional schema"));
    }

    #[test]
    fn bad_settings_are_refused_with_their_key() {
        let refused = |given: &[(&str, &str)]| chain("$Value", given).unwrap_err().remove(0);
        assert_eq!(refused(&settings("a,b", "h", "copy")).key, "transforms.x.headers");
        assert_eq!(refused(&[("headers", "h"), ("operation", "copy")]).key, "transforms.x.fields");
        assert_eq!(refused(&settings("a", "", "copy")).key, "transforms.x.headers");
        assert_eq!(refused(&[("fields", "a"), ("headers", "h")]).key, "transforms.x.operation");
        assert_eq!(refused(&settings("a", "h", "MOVE")).key, "transforms.x.operation", "the choice is case-sensitive");
        assert!(chain("$Value", &settings(" a ", " h ", " copy ")).is_ok());
    }
}
