//! Connect's `ReplaceField`: keeps some of a struct's or schemaless map's fields (`exclude`,
//! `include`, exclusion winning) and renames some (`renames=old:new,…`), keeping the order of the
//! fields that stay. Kafka Connect 4.0 removed the old `blacklist` and `whitelist` names of
//! `exclude` and `include`; like Connect 4.1, Wharf reads them as unknown settings, which do
//! nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::data::{Data, Field, Schema, Type, Value};

use super::support::{copy_schema_basics, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

/// What Connect's `Requirements` messages say the transform was doing.
const PURPOSE: &str = "field replacement";

#[derive(Debug)]
struct ReplaceField {
    side: Side,
    exclude: HashSet<String>,
    include: HashSet<String>,
    /// Old name to new.
    renames: HashMap<String, String>,
    /// New name to old: where a field of the new struct takes its value from.
    sources: HashMap<String, String>,
    replace_null_with_default: bool,
    plans: SchemaCache<Plan>,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let exclude = settings.list("exclude").into_iter().collect();
    let include = settings.list("include").into_iter().collect();
    // In the order given, a later rename of a name replacing an earlier one.
    let mut ordered: Vec<(String, String)> = Vec::new();
    for mapping in settings.list("renames") {
        let parts = java_split_on_colon(&mapping);
        let [old, new] = parts.as_slice() else {
            return Err(settings.problem(
                "renames",
                format!(
                    "{}={}: \"{mapping}\" is not a rename (Invalid rename mapping: {mapping}); write old:new pairs \
                     separated by commas, e.g. foo:bar,abc:xyz",
                    settings.key("renames"),
                    settings.get("renames").unwrap_or_default()
                ),
            ));
        };
        match ordered.iter_mut().find(|(o, _)| o == old) {
            Some(earlier) => earlier.1 = new.to_string(),
            None => ordered.push((old.to_string(), new.to_string())),
        }
    }
    // Two names renamed to one: Connect's choice of source follows its hash map's order; Wharf
    // takes the later rename.
    let sources = ordered.iter().map(|(old, new)| (new.clone(), old.clone())).collect();
    let renames = ordered.into_iter().collect();
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(ReplaceField {
        side,
        exclude,
        include,
        renames,
        sources,
        replace_null_with_default,
        plans: SchemaCache::new(),
    }))
}

/// Java's `String.split(":")`: no colon is the text itself; otherwise the pieces with the
/// trailing empty ones dropped (`a:b:` is `a`, `b`; `::` is nothing).
fn java_split_on_colon(text: &str) -> Vec<&str> {
    if !text.contains(':') {
        return vec![text];
    }
    let mut parts: Vec<&str> = text.split(':').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

impl Apply for ReplaceField {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        // A null key or value (with a schema or not) goes on untouched, as in Connect.
        if self.side.is_null(record) {
            return Ok(Outcome::Keep);
        }
        let Data { schema, value } = self.side.take(record);
        let replaced = match schema {
            None => Data::schemaless(self.replace_map(value)?),
            Some(schema) => {
                let values = match value {
                    Value::Struct(values) if schema.kind == Type::Struct => values,
                    value => return Err(require_struct(&Data::new(schema, value), PURPOSE).err().unwrap_or_default()),
                };
                self.replace_struct(&schema, values)?
            }
        };
        self.side.put(record, replaced);
        Ok(Outcome::Keep)
    }
}

impl ReplaceField {
    fn keeps(&self, name: &str) -> bool {
        !self.exclude.contains(name) && (self.include.is_empty() || self.include.contains(name))
    }

    fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.renames.get(name).map_or(name, String::as_str)
    }

    /// The new struct schema and where each of its fields takes its value from. As in Connect,
    /// a field takes the value of the field its name was renamed from, if any renames to that
    /// name, and otherwise of the field of its own name: with `renames=a:b` and `exclude=a`, a
    /// field `b` takes `a`'s value.
    fn plan(&self, schema: &Schema) -> Result<Plan, String> {
        let mut fields: Vec<Field> = Vec::new();
        let mut names = HashSet::new();
        for field in schema.fields.iter().filter(|f| self.keeps(&f.name)) {
            let name = self.renamed(&field.name);
            if name.is_empty() {
                return Err(format!("field {} would be renamed to an empty name", field.name));
            }
            if !names.insert(name) {
                return Err(format!(
                    "Cannot create field because of field name duplication {name}: renames gives two fields that \
                     name; rename or exclude one of them"
                ));
            }
            fields.push(Field { name: name.to_string(), schema: field.schema.clone() });
        }
        let sources = fields
            .iter()
            .map(|f| {
                let from = self.sources.get(&f.name).unwrap_or(&f.name);
                match schema.field(from) {
                    Some((at, source)) => Source::Field { at, default: source.schema.default.clone() },
                    None => Source::Missing(from.clone()),
                }
            })
            .collect();
        Ok(Plan { schema: Arc::new(Schema { fields, ..copy_schema_basics(schema, Type::Struct) }), sources })
    }

    /// A struct's kept fields, renamed, under the new schema.
    fn replace_struct(&self, schema: &Arc<Schema>, mut values: Vec<Value>) -> Result<Data, String> {
        let plan = self.plans.get_or_derive(schema, |s| self.plan(s))?;
        let mut replaced = Vec::with_capacity(plan.sources.len());
        for (field, source) in plan.schema.fields.iter().zip(&plan.sources) {
            let value = match source {
                // No two fields of the new struct take their value from the same field.
                Source::Field { at, default } => {
                    let taken = values.get_mut(*at).map_or(Value::Null, |v| std::mem::replace(v, Value::Null));
                    match (taken, default) {
                        (Value::Null, Some(default)) if self.replace_null_with_default => default.clone(),
                        (taken, _) => taken,
                    }
                }
                Source::Missing(name) => {
                    return Err(format!(
                        "{name} is not a valid field name: field {} takes its value from {name} (renames maps \
                         {name} to it), and the struct has no {name}",
                        field.name
                    ))
                }
            };
            if matches!(value, Value::Null) && !field.schema.optional {
                return Err(format!(
                    "Invalid value: null used for required field: \"{}\", schema type: {}",
                    field.name,
                    field.schema.kind.name().to_uppercase()
                ));
            }
            replaced.push(value);
        }
        Ok(Data::new(plan.schema.clone(), Value::Struct(replaced)))
    }

    /// A schemaless map's kept entries, renamed; a name met again replaces the earlier value, as
    /// a Java map's `put` does.
    fn replace_map(&self, value: Value) -> Result<Value, String> {
        let entries = match value {
            Value::Map(entries) => entries,
            other => return Err(require_map(&other, PURPOSE).err().unwrap_or_default()),
        };
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
        // Only a rename can make a name that is there already.
        let mut at: Option<HashMap<String, usize>> = (!self.renames.is_empty()).then(HashMap::new);
        for (key, value) in entries {
            let Value::String(name) = key else {
                return Err(format!(
                    "ReplaceField needs string keys in a map without a schema, and this map has a key that is {}",
                    key.describe()
                ));
            };
            if !self.keeps(&name) {
                continue;
            }
            let name = match self.renames.get(&name) {
                Some(new) => new.clone(),
                None => name,
            };
            match at.as_mut() {
                None => out.push((Value::String(name), value)),
                Some(at) => match at.get(&name) {
                    Some(&i) => out[i].1 = value,
                    None => {
                        at.insert(name.clone(), out.len());
                        out.push((Value::String(name), value));
                    }
                },
            }
        }
        Ok(Value::Map(out))
    }
}

/// Where a field of the new struct takes its value from.
#[derive(Debug)]
enum Source {
    /// The input struct's field at this position, and its default.
    Field { at: usize, default: Option<Value> },
    /// A field the input struct does not have: a record of this schema is refused.
    Missing(String),
}

/// What the transform derived from one input schema.
#[derive(Debug)]
struct Plan {
    schema: Arc<Schema>,
    /// One for each field of `schema`.
    sources: Vec<Source>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::transform::support::testing;

    fn replace(items: &[(&str, &str)], side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
        let config: Vec<(String, String)> =
            items.iter().map(|(k, v)| (format!("transforms.r.{k}"), v.to_string())).collect();
        configure(&Settings { config: &config, prefix: "transforms.r.".into() }, side)
    }

    fn field(name: &str, schema: Schema) -> Field {
        Field { name: name.into(), schema: Arc::new(schema) }
    }

    fn string(s: &str) -> Value {
        Value::String(s.into())
    }

    fn record(value: Data) -> Record {
        testing::record(None, Some(value))
    }

    fn value_of(record: &Record) -> &Data {
        match &record.value {
            Some(Part::Data(data)) => data,
            other => panic!("not data: {other:?}"),
        }
    }

    fn abc() -> Arc<Schema> {
        Arc::new(
            Schema::structure(vec![
                field("a", Schema::of(Type::Int32)),
                field("b", Schema { default: Some(string("B")), ..Schema::of(Type::String).optional() }),
                field("c", Schema::of(Type::Boolean)),
            ])
            .named("Row"),
        )
    }

    fn names(data: &Data) -> Vec<&str> {
        data.schema.as_ref().unwrap().fields.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn exclusion_wins_over_inclusion_and_order_is_kept() {
        let t = replace(&[("include", "c, a, b"), ("exclude", "b"), ("renames", "c:see")], Side::Value).unwrap();
        let mut r = record(Data::new(abc(), Value::Struct(vec![Value::Int32(1), Value::Null, Value::Boolean(true)])));
        t.apply(&mut r).unwrap();
        let out = value_of(&r);
        assert_eq!(names(out), ["a", "see"]);
        assert_eq!(out.schema.as_ref().unwrap().name.as_deref(), Some("Row"));
        assert_eq!(out.value, Value::Struct(vec![Value::Int32(1), Value::Boolean(true)]));
    }

    #[test]
    fn a_null_takes_its_default_unless_told_not_to() {
        let value = || Data::new(abc(), Value::Struct(vec![Value::Int32(1), Value::Null, Value::Boolean(false)]));
        let mut r = record(value());
        replace(&[], Side::Value).unwrap().apply(&mut r).unwrap();
        assert_eq!(value_of(&r).value, Value::Struct(vec![Value::Int32(1), string("B"), Value::Boolean(false)]));
        let mut r = record(value());
        replace(&[("replace.null.with.default", "false")], Side::Value).unwrap().apply(&mut r).unwrap();
        assert_eq!(value_of(&r).value, Value::Struct(vec![Value::Int32(1), Value::Null, Value::Boolean(false)]));
    }

    #[test]
    fn a_field_takes_the_value_of_the_field_renamed_to_its_name() {
        let schema =
            Arc::new(Schema::structure(vec![field("a", Schema::of(Type::Int32)), field("b", Schema::of(Type::Int32))]));
        let t = replace(&[("renames", "a:b"), ("exclude", "a")], Side::Value).unwrap();
        let mut r = record(Data::new(schema.clone(), Value::Struct(vec![Value::Int32(1), Value::Int32(2)])));
        t.apply(&mut r).unwrap();
        assert_eq!(value_of(&r).value, Value::Struct(vec![Value::Int32(1)]), "Connect reads b from a");

        let t = replace(&[("renames", "x:b")], Side::Value).unwrap();
        let mut r = record(Data::new(schema.clone(), Value::Struct(vec![Value::Int32(1), Value::Int32(2)])));
        assert!(t.apply(&mut r).unwrap_err().starts_with("x is not a valid field name"));

        let t = replace(&[("renames", "a:b")], Side::Value).unwrap();
        let mut r = record(Data::new(schema, Value::Struct(vec![Value::Int32(1), Value::Int32(2)])));
        assert!(t.apply(&mut r).unwrap_err().contains("field name duplication b"));
    }

    #[test]
    fn schemaless_maps_keep_and_rename_entries() {
        let t = replace(&[("exclude", "drop"), ("renames", "old:new,x:y")], Side::Key).unwrap();
        let mut r = record(Data::NULL);
        r.key = Some(Part::Data(Data::schemaless(Value::Map(vec![
            (string("old"), Value::Int64(1)),
            (string("drop"), Value::Int64(2)),
            (string("keep"), Value::Null),
        ]))));
        t.apply(&mut r).unwrap();
        assert_eq!(
            r.key,
            Some(Part::Data(Data::schemaless(Value::Map(vec![
                (string("new"), Value::Int64(1)),
                (string("keep"), Value::Null)
            ]))))
        );
        let mut clash = record(Data::schemaless(Value::Map(vec![
            (string("old"), Value::Int64(1)),
            (string("new"), Value::Int64(2)),
        ])));
        replace(&[("renames", "old:new")], Side::Value).unwrap().apply(&mut clash).unwrap();
        assert_eq!(value_of(&clash).value, Value::Map(vec![(string("new"), Value::Int64(2))]));
    }

    #[test]
    fn renames_are_read_as_javas_split_reads_them() {
        assert_eq!(java_split_on_colon("a:b:"), ["a", "b"]);
        assert_eq!(java_split_on_colon(":b"), ["", "b"]);
        assert_eq!(java_split_on_colon("ab"), ["ab"]);
        assert!(java_split_on_colon("::").is_empty());
        assert!(replace(&[("renames", "a:b:")], Side::Value).is_ok());
        for bad in ["a", "a:b:c", "a:", "a:b,", "::"] {
            let e = replace(&[("renames", bad)], Side::Value).unwrap_err();
            assert_eq!(e.key, "transforms.r.renames");
            assert!(e.message.contains("old:new"), "{}", e.message);
        }
        let e = replace(&[("replace.null.with.default", "maybe")], Side::Value).unwrap_err();
        assert_eq!(e.key, "transforms.r.replace.null.with.default");
    }

    #[test]
    fn nulls_go_on_and_other_values_are_refused() {
        let t = replace(&[("exclude", "a")], Side::Value).unwrap();
        let mut tombstone = record(Data::NULL);
        tombstone.value = None;
        t.apply(&mut tombstone).unwrap();
        assert_eq!(tombstone.value, None);
        let mut text = record(Data::new(Arc::new(Schema::of(Type::String)), string("x")));
        assert_eq!(
            t.apply(&mut text).unwrap_err(),
            "Only Struct objects supported for [field replacement], found: java.lang.String"
        );
        let mut list = record(Data::schemaless(Value::Array(Vec::new())));
        assert_eq!(
            t.apply(&mut list).unwrap_err(),
            "Only Map objects supported in absence of schema for [field replacement], found: java.util.ArrayList"
        );
    }

    #[test]
    fn a_required_field_left_null_is_refused() {
        let schema = Arc::new(Schema::structure(vec![field(
            "a",
            Schema { default: Some(Value::Int32(5)), ..Schema::of(Type::Int32) },
        )]));
        let t = replace(&[("replace.null.with.default", "false")], Side::Value).unwrap();
        let mut r = record(Data::new(schema, Value::Struct(vec![Value::Null])));
        assert!(t.apply(&mut r).unwrap_err().contains("null used for required field: \"a\""));
    }

    #[test]
    fn plans_are_made_once_per_schema() {
        let t = replace(&[("renames", "a:z")], Side::Value).unwrap();
        let mut first =
            record(Data::new(abc(), Value::Struct(vec![Value::Int32(1), Value::Null, Value::Boolean(true)])));
        let mut second = first.clone();
        t.apply(&mut first).unwrap();
        t.apply(&mut second).unwrap();
        assert!(Arc::ptr_eq(value_of(&first).schema.as_ref().unwrap(), value_of(&second).schema.as_ref().unwrap()));
    }
}
