//! Connect's `ExtractField`: the record's key or value becomes one of its fields, a top-level one
//! (`field.syntax.version=V1`, the default) or one at a dotted path (`V2`, with backticks around
//! names that hold dots, as Connect's `SingleFieldPath` reads them). A null key or value stays
//! null; with a schema, it takes the field's schema.

use std::sync::Arc;

use crate::data::{Data, Schema, Type, Value};

use super::support::{require_map, require_struct, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

const PURPOSE: &str = "field extraction";
const NESTED: &str = "nested field access";

#[derive(Debug)]
struct ExtractField {
    side: Side,
    /// The path's steps: one for V1, one or more for V2.
    path: Vec<String>,
    /// The `field` setting as given, for messages.
    given: String,
    replace_null_with_default: bool,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let given = settings
        .get("field")
        .map(str::trim)
        .ok_or_else(|| {
            settings.problem(
                "field",
                format!(
                    "{} is required: the name of the field to extract (with field.syntax.version=V2, a dotted path)",
                    settings.key("field")
                ),
            )
        })?
        .to_string();
    let version = settings.choice("field.syntax.version", &["V1", "V2"], "V1")?;
    let path = match version {
        "V2" => parse_path(&given).map_err(|message| {
            settings.problem("field", format!("{}={given} is not a valid V2 path: {message}", settings.key("field")))
        })?,
        _ => vec![given.clone()],
    };
    if path.is_empty() {
        return Err(settings.problem(
            "field",
            format!("{} is empty: with field.syntax.version=V2 it must name at least one field", settings.key("field")),
        ));
    }
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(ExtractField { side, path, given, replace_null_with_default }))
}

/// The steps of a V2 field path, as Connect's `SingleFieldPath` splits it: at dots, except
/// inside a pair of backticks (a closing backtick is one followed by a dot or at the end); a
/// backslash before such a backtick makes it part of the name; a path ending in a dot ends with
/// an empty step.
fn parse_path(path: &str) -> Result<Vec<String>, String> {
    let bytes = path.as_bytes();
    let len = bytes.len();
    let find = |what: u8, from: usize| bytes[from..].iter().position(|b| *b == what).map(|i| i + from);
    let incomplete = |at: usize| {
        format!("incomplete backtick pair at position {at}; put a backslash before that backtick to make it part of the name")
    };
    let mut steps = Vec::new();
    let mut idx = 0;
    while idx < len {
        if bytes[idx] != b'`' {
            match find(b'.', idx) {
                Some(dot) => {
                    steps.push(path[idx..dot].to_string());
                    idx = dot + 1;
                }
                None => {
                    steps.push(path[idx..].to_string());
                    idx = len;
                }
            }
            continue;
        }
        let opened = idx;
        let mut name = String::new();
        idx += 1;
        let mut start = idx;
        loop {
            let Some(tick) = find(b'`', idx) else { return Err(incomplete(opened)) };
            idx = tick;
            let escaped = bytes[idx - 1] == b'\\';
            if idx + 1 >= len {
                if escaped {
                    return Err(incomplete(opened));
                }
                name.push_str(&path[start..idx]);
                steps.push(name);
                idx += 1;
                break;
            }
            if bytes[idx + 1] != b'.' {
                idx += 1;
                continue;
            }
            if escaped {
                name.push_str(&path[start..idx - 1]);
                name.push('`');
                idx += 1;
                start = idx;
                continue;
            }
            name.push_str(&path[start..idx]);
            steps.push(name);
            idx += 2;
            break;
        }
    }
    if path.ends_with('.') {
        steps.push(String::new());
    }
    Ok(steps)
}

impl ExtractField {
    /// The schema of the field at the path, as `SingleFieldPath.fieldFrom` finds it.
    fn field_schema<'a>(&self, schema: &'a Arc<Schema>) -> Result<&'a Arc<Schema>, String> {
        let mut current = schema;
        for step in &self.path {
            if current.kind != Type::Struct {
                return Err("Cannot look up fields on non-struct type".into());
            }
            match current.field(step) {
                Some((_, field)) => current = &field.schema,
                None => return Err(format!("Unknown field: {}", self.given)),
            }
        }
        Ok(current)
    }

    /// The value at the path in a struct: null where a struct on the way is null.
    fn struct_value(&self, schema: &Schema, mut values: Vec<Value>) -> Value {
        let mut schema = schema;
        let last = self.path.len().saturating_sub(1);
        for (i, step) in self.path.iter().enumerate() {
            let Some((index, field)) = schema.field(step) else { return Value::Null };
            let raw = match values.get_mut(index) {
                Some(slot) => std::mem::replace(slot, Value::Null),
                None => Value::Null,
            };
            // Connect reads the structs on the way with their defaults, the last field as set.
            let value = match raw {
                Value::Null if i < last || self.replace_null_with_default => {
                    field.schema.default.clone().unwrap_or(Value::Null)
                }
                other => other,
            };
            if i == last {
                return value;
            }
            match value {
                Value::Struct(inner) => {
                    values = inner;
                    schema = &field.schema;
                }
                _ => return Value::Null,
            }
        }
        Value::Null
    }

    /// The value at the path in a schemaless map: null where a map on the way is missing.
    fn map_value(&self, mut entries: Vec<(Value, Value)>) -> Result<Value, String> {
        let last = self.path.len().saturating_sub(1);
        for (i, step) in self.path.iter().enumerate() {
            let found = entries.iter().rposition(|(k, _)| matches!(k, Value::String(s) if s == step));
            let value = match found {
                Some(at) => entries.swap_remove(at).1,
                None => Value::Null,
            };
            if i == last {
                return Ok(value);
            }
            match value {
                Value::Map(inner) => entries = inner,
                Value::Null => return Ok(Value::Null),
                other => return Err(require_map(&other, NESTED).err().unwrap_or_default()),
            }
        }
        Ok(Value::Null)
    }
}

impl Apply for ExtractField {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let data = self.side.take(record);
        if data.schema.is_some() && !matches!(data.value, Value::Null) {
            require_struct(&data, PURPOSE)?;
        }
        let extracted = match data {
            Data { schema: None, value: Value::Null } => Data::NULL,
            Data { schema: None, value: Value::Map(entries) } => Data::schemaless(self.map_value(entries)?),
            Data { schema: None, value } => return Err(require_map(&value, PURPOSE).err().unwrap_or_default()),
            Data { schema: Some(schema), value } => {
                let field_schema = self.field_schema(&schema)?.clone();
                let value = match value {
                    Value::Struct(values) => self.struct_value(&schema, values),
                    _ => Value::Null,
                };
                Data::new(field_schema, value)
            }
        };
        self.side.put(record, extracted);
        Ok(Outcome::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Field;
    use crate::model::Part;
    use crate::transform::support::testing;
    use crate::transform::{Chain, TransformConfigError};

    fn chain(variant: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain(&format!("ExtractField{variant}"), settings)
    }

    fn record(key: Option<Data>, value: Option<Data>) -> Record {
        Record { partition: Some(0), offset: Some(1), ..testing::record(key, value) }
    }

    fn extract(settings: &[(&str, &str)], value: Data) -> Result<Data, String> {
        let chain = chain("$Value", settings).unwrap();
        match chain.apply(record(None, Some(value))) {
            Ok(Some(Record { value: Some(Part::Data(data)), .. })) => Ok(data),
            Ok(other) => panic!("no value: {other:?}"),
            Err(e) => Err(e.message),
        }
    }

    fn field(name: &str, schema: Schema) -> Field {
        Field { name: name.into(), schema: Arc::new(schema) }
    }

    fn string(s: &str) -> Value {
        Value::String(s.into())
    }

    /// `{inner: {n: int32 optional default 7, s: string}? , top: int64}`
    fn nested() -> Arc<Schema> {
        let n = Schema { default: Some(Value::Int32(7)), ..Schema::of(Type::Int32).optional() };
        let inner = Schema::structure(vec![field("n", n), field("s", Schema::of(Type::String))]).optional();
        Arc::new(Schema::structure(vec![field("inner", inner), field("top", Schema::of(Type::Int64))]))
    }

    #[test]
    fn v2_paths_split_at_dots_outside_backtick_pairs() {
        let cases: &[(&str, &[&str])] = &[
            ("a", &["a"]),
            ("a.b.c", &["a", "b", "c"]),
            ("`a.b`.c", &["a.b", "c"]),
            ("`a.b`", &["a.b"]),
            ("a.`b.c`", &["a", "b.c"]),
            ("a.", &["a", ""]),
            (".a", &["", "a"]),
            ("a`b.c", &["a`b", "c"]),
            ("`a`b`", &["a`b"]),
            ("`a\\`.b`", &["a`.b"]),
            ("`a\\`b`", &["a\\`b"]),
            ("``", &[""]),
            ("", &[]),
        ];
        for (path, steps) in cases {
            assert_eq!(parse_path(path).unwrap(), *steps, "{path}");
        }
        for unpaired in ["`a.b", "a.`b", "`a\\`", "`"] {
            assert!(parse_path(unpaired).unwrap_err().contains("incomplete backtick pair"), "{unpaired}");
        }
    }

    #[test]
    fn v1_takes_a_top_level_field_with_its_schema_even_with_dots_in_its_name() {
        let schema = Arc::new(Schema::structure(vec![
            field("a.b", Schema::of(Type::String)),
            field("d", Schema::date().optional()),
        ]));
        let value = Data::new(schema.clone(), Value::Struct(vec![string("x"), Value::Int32(3)]));
        assert_eq!(
            extract(&[("field", "a.b")], value.clone()).unwrap(),
            Data::new(schema.fields[0].schema.clone(), string("x"))
        );
        let date = extract(&[("field", " d ")], value).unwrap();
        assert_eq!(date, Data::new(Arc::new(Schema::date().optional()), Value::Int32(3)));
    }

    #[test]
    fn v2_walks_nested_structs_and_a_null_struct_on_the_way_gives_null() {
        let schema = nested();
        let inner = Value::Struct(vec![Value::Null, string("deep")]);
        let value = Data::new(schema.clone(), Value::Struct(vec![inner, Value::Int64(1)]));
        let settings = [("field", "inner.s"), ("field.syntax.version", "v2")];
        assert_eq!(extract(&settings, value).unwrap(), Data::new(Arc::new(Schema::of(Type::String)), string("deep")));
        let no_inner = Data::new(schema.clone(), Value::Struct(vec![Value::Null, Value::Int64(1)]));
        assert_eq!(extract(&settings, no_inner).unwrap().value, Value::Null);
    }

    #[test]
    fn a_null_field_takes_its_default_unless_replace_null_with_default_is_false() {
        let schema = nested();
        let value =
            Data::new(schema, Value::Struct(vec![Value::Struct(vec![Value::Null, string("s")]), Value::Int64(1)]));
        let path = [("field", "inner.n"), ("field.syntax.version", "V2")];
        assert_eq!(extract(&path, value.clone()).unwrap().value, Value::Int32(7));
        let kept = [path[0], path[1], ("replace.null.with.default", "false")];
        assert_eq!(extract(&kept, value).unwrap().value, Value::Null);
    }

    #[test]
    fn a_null_struct_with_a_schema_stays_null_under_the_fields_schema() {
        let schema = Arc::new(Schema { optional: true, ..(*nested()).clone() });
        let out = extract(&[("field", "top")], Data::new(schema, Value::Null)).unwrap();
        assert_eq!(out, Data::new(Arc::new(Schema::of(Type::Int64)), Value::Null));
        let chain = chain("$Key", &[("field", "a")]).unwrap();
        let tombstone = chain.apply(record(None, None)).unwrap().unwrap();
        assert_eq!(tombstone.key, Some(Part::Data(Data::NULL)));
    }

    #[test]
    fn unknown_fields_are_refused_with_a_schema_and_null_without() {
        let schema = nested();
        let value = Data::new(schema.clone(), Value::Struct(vec![Value::Null, Value::Int64(1)]));
        assert!(extract(&[("field", "nope")], value.clone()).unwrap_err().ends_with("Unknown field: nope"));
        let v2 = [("field", "inner.nope"), ("field.syntax.version", "V2")];
        assert!(extract(&v2, value.clone()).unwrap_err().ends_with("Unknown field: inner.nope"));
        let through = [("field", "top.x"), ("field.syntax.version", "V2")];
        assert!(extract(&through, value).unwrap_err().ends_with("Cannot look up fields on non-struct type"));
        let map = Data::schemaless(Value::Map(vec![(string("a"), Value::Int32(1))]));
        assert_eq!(extract(&[("field", "nope")], map).unwrap(), Data::schemaless(Value::Null));
    }

    #[test]
    fn maps_are_walked_by_string_keys_and_what_is_not_a_map_on_the_way_is_refused() {
        let map = Data::schemaless(Value::Map(vec![
            (string("a"), Value::Map(vec![(string("b"), Value::Int64(2))])),
            (string("s"), string("text")),
            (string("n"), Value::Null),
        ]));
        let v2 = |path: &'static str| [("field", path), ("field.syntax.version", "V2")];
        assert_eq!(extract(&v2("a.b"), map.clone()).unwrap().value, Value::Int64(2));
        assert_eq!(extract(&v2("n.b"), map.clone()).unwrap().value, Value::Null);
        assert_eq!(extract(&v2("missing.b"), map.clone()).unwrap().value, Value::Null);
        assert!(extract(&v2("s.b"), map).unwrap_err().ends_with(
            "Only Map objects supported in absence of schema for [nested field access], found: java.lang.String"
        ));
    }

    #[test]
    fn what_is_neither_a_struct_nor_a_map_is_refused() {
        let text = Data::new(Arc::new(Schema::of(Type::String)), string("x"));
        assert!(extract(&[("field", "a")], text)
            .unwrap_err()
            .ends_with("Only Struct objects supported for [field extraction], found: java.lang.String"));
        assert!(extract(&[("field", "a")], Data::schemaless(Value::Int32(1))).unwrap_err().ends_with(
            "Only Map objects supported in absence of schema for [field extraction], found: java.lang.Integer"
        ));
    }

    #[test]
    fn bad_settings_are_refused_with_their_key() {
        let refused = |settings: &[(&str, &str)]| chain("$Value", settings).unwrap_err().remove(0);
        assert_eq!(refused(&[]).key, "transforms.x.field");
        assert_eq!(refused(&[("field", "a"), ("field.syntax.version", "V3")]).key, "transforms.x.field.syntax.version");
        let unpaired = refused(&[("field", "`a.b"), ("field.syntax.version", "V2")]);
        assert!(unpaired.message.contains("position 0"), "{}", unpaired.message);
        assert_eq!(refused(&[("field", " "), ("field.syntax.version", "V2")]).key, "transforms.x.field");
        assert_eq!(
            refused(&[("field", "a"), ("replace.null.with.default", "no")]).key,
            "transforms.x.replace.null.with.default"
        );
        assert!(chain("$Value", &[("field", "")]).is_ok(), "V1 takes an empty name, as Connect does");
    }
}
