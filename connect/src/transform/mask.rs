//! Connect's `MaskField`: the named fields of a struct or schemaless map replaced by the empty
//! value of their type (`0`, `false`, `""`, an empty array or map, a zero decimal, the epoch for a
//! date, time or timestamp), or by `replacement`, read as the field's type (numbers and strings
//! only). A null stays null; bytes and structs cannot be masked. The schema is kept. As in
//! Connect, a null key or value is refused, and a schemaless map gains a null entry for each
//! masked field it did not have.

use std::collections::HashSet;

use crate::data::{Data, Decimal, Logical, Schema, Type, Value};

use super::support::{java_class, require_map, require_struct, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

/// What Connect's `Requirements` messages say the transform was doing.
const PURPOSE: &str = "mask fields";

#[derive(Debug)]
struct MaskField {
    side: Side,
    /// The fields to mask, each once, in the order given.
    fields: Vec<String>,
    masked: HashSet<String>,
    replacement: Option<Replacement>,
    replace_null_with_default: bool,
}

/// The `replacement` setting read once as each type it can replace.
#[derive(Debug)]
struct Replacement {
    text: String,
    /// As Java's `new BigDecimal(text)`, for a decimal.
    decimal: Option<Decimal>,
    /// As `BigDecimal.longValue()`, for an integer (narrowed as Java narrows it).
    long: Option<i64>,
    /// As `BigDecimal.doubleValue()`, for a float.
    double: Option<f64>,
}

impl Replacement {
    fn new(text: &str) -> Self {
        let decimal = Decimal::parse(text).ok();
        let long = decimal.as_ref().map(Decimal::long_value);
        let double = decimal.as_ref().map(Decimal::to_f64);
        Replacement { text: text.to_string(), decimal, long, double }
    }
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    if settings.get("fields").is_none() {
        return Err(settings.problem(
            "fields",
            format!(
                "{} is required (Missing required configuration \"fields\" which has no default value): the names \
                 of the fields to mask, separated by commas",
                settings.key("fields")
            ),
        ));
    }
    let given = settings.list("fields");
    if given.is_empty() {
        return Err(settings.problem(
            "fields",
            format!("{} is an empty list: name at least one field to mask", settings.key("fields")),
        ));
    }
    let mut fields: Vec<String> = Vec::with_capacity(given.len());
    for field in given {
        if !fields.contains(&field) {
            fields.push(field);
        }
    }
    let masked = fields.iter().cloned().collect();
    // Connect trims a STRING setting, and refuses one that is then empty.
    let replacement = match settings.get("replacement").map(str::trim) {
        None => None,
        Some("") => {
            return Err(settings.problem(
                "replacement",
                format!(
                    "{} is empty (String must be non-empty): give the value to mask with, or leave the setting \
                     out to mask with each type's empty value",
                    settings.key("replacement")
                ),
            ))
        }
        Some(text) => Some(Replacement::new(text)),
    };
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(MaskField { side, fields, masked, replacement, replace_null_with_default }))
}

impl Apply for MaskField {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let Data { schema, value } = self.side.take(record);
        let masked = match schema {
            None => Data::schemaless(self.mask_map(value)?),
            Some(schema) => {
                let values = match value {
                    Value::Struct(values) if schema.kind == Type::Struct => values,
                    value => return Err(require_struct(&Data::new(schema, value), PURPOSE).err().unwrap_or_default()),
                };
                let values = self.mask_struct(&schema, values)?;
                Data::new(schema, Value::Struct(values))
            }
        };
        self.side.put(record, masked);
        Ok(Outcome::Keep)
    }
}

impl MaskField {
    fn mask_struct(&self, schema: &Schema, mut values: Vec<Value>) -> Result<Vec<Value>, String> {
        for (field, value) in schema.fields.iter().zip(values.iter_mut()) {
            if self.replace_null_with_default && matches!(value, Value::Null) {
                if let Some(default) = &field.schema.default {
                    *value = default.clone();
                }
            }
            if self.masked.contains(&field.name) {
                let original = std::mem::replace(value, Value::Null);
                *value = self.mask(original, Some(&field.schema), &field.name)?;
            }
            if matches!(value, Value::Null) && !field.schema.optional {
                return Err(format!(
                    "Invalid value: null used for required field: \"{}\", schema type: {}",
                    field.name,
                    field.schema.kind.name().to_uppercase()
                ));
            }
        }
        Ok(values)
    }

    fn mask_map(&self, value: Value) -> Result<Value, String> {
        let mut entries = match value {
            Value::Map(entries) => entries,
            other => return Err(require_map(&other, PURPOSE).err().unwrap_or_default()),
        };
        for name in &self.fields {
            let found = entries.iter().rposition(|(k, _)| matches!(k, Value::String(s) if s == name));
            match found {
                Some(i) => {
                    let original = std::mem::replace(&mut entries[i].1, Value::Null);
                    entries[i].1 = self.mask(original, None, name)?;
                }
                // Connect puts the masked value of a missing entry, a null.
                None => entries.push((Value::String(name.clone()), Value::Null)),
            }
        }
        Ok(Value::Map(entries))
    }

    /// A field's masked value; `schema` is the field's, none for a schemaless entry.
    fn mask(&self, value: Value, schema: Option<&Schema>, field: &str) -> Result<Value, String> {
        if matches!(value, Value::Null) {
            return Ok(Value::Null);
        }
        // Connect picks the masked value by the Java class of the value: a date, time or
        // timestamp is a `java.util.Date`.
        let instant =
            matches!(schema.and_then(Schema::logical), Some(Logical::Date | Logical::Time | Logical::Timestamp));
        match &self.replacement {
            None => empty_value(&value, field),
            Some(replacement) => self.replace(replacement, &value, instant, field),
        }
    }

    fn replace(&self, replacement: &Replacement, value: &Value, instant: bool, field: &str) -> Result<Value, String> {
        let not_a_number = |what: &str| {
            format!(
                "Unable to convert {} (class java.lang.String) to {what}: field {field} is {}, and replacement must \
                 be a number to mask it",
                replacement.text,
                value.describe()
            )
        };
        if instant {
            return Err(cannot_replace("java.util.Date", field));
        }
        let long = || replacement.long.ok_or_else(|| not_a_number("a number"));
        let double = || replacement.double.ok_or_else(|| not_a_number("a number"));
        Ok(match value {
            Value::Int8(_) => Value::Int8(long()? as i8),
            Value::Int16(_) => Value::Int16(long()? as i16),
            Value::Int32(_) => Value::Int32(long()? as i32),
            Value::Int64(_) => Value::Int64(long()?),
            Value::Float32(_) => Value::Float32(double()? as f32),
            Value::Float64(_) => Value::Float64(double()?),
            Value::String(_) => Value::String(replacement.text.clone()),
            Value::Decimal(_) => Value::Decimal(replacement.decimal.clone().ok_or_else(|| not_a_number("number"))?),
            other => return Err(cannot_replace(java_class(other), field)),
        })
    }
}

fn cannot_replace(class: &str, field: &str) -> String {
    format!(
        "Cannot mask value of type class {class} with custom replacement. A replacement applies to numbers and \
         strings only; leave field {field} out of fields, or mask without a replacement"
    )
}

/// The empty value of a value's type, as Connect's table of them has it.
fn empty_value(value: &Value, field: &str) -> Result<Value, String> {
    Ok(match value {
        Value::Boolean(_) => Value::Boolean(false),
        Value::Int8(_) => Value::Int8(0),
        Value::Int16(_) => Value::Int16(0),
        // A date, time or timestamp masks to the epoch: its physical value is 0 too.
        Value::Int32(_) => Value::Int32(0),
        Value::Int64(_) => Value::Int64(0),
        Value::Float32(_) => Value::Float32(0.0),
        Value::Float64(_) => Value::Float64(0.0),
        Value::String(_) => Value::String(String::new()),
        // `BigDecimal.ZERO`, whose scale is 0 whatever the schema's.
        Value::Decimal(_) => Value::Decimal(Decimal::from_i64(0, 0)),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Map(_) => Value::Map(Vec::new()),
        Value::Null => Value::Null,
        Value::Bytes(_) | Value::Struct(_) => {
            return Err(format!(
                "Cannot mask value of type: class {}. Bytes and structs have no empty value to mask with; leave \
                 field {field} out of fields",
                java_class(value)
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Field;
    use crate::model::Part;
    use crate::transform::support::testing;
    use std::sync::Arc;

    fn mask(items: &[(&str, &str)], side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
        let config: Vec<(String, String)> =
            items.iter().map(|(k, v)| (format!("transforms.m.{k}"), v.to_string())).collect();
        configure(&Settings { config: &config, prefix: "transforms.m.".into() }, side)
    }

    fn field(name: &str, schema: Schema) -> Field {
        Field { name: name.into(), schema: Arc::new(schema) }
    }

    fn string(s: &str) -> Value {
        Value::String(s.into())
    }

    fn record(value: Option<Data>) -> Record {
        testing::record(None, value)
    }

    fn value_of(record: &Record) -> &Data {
        match &record.value {
            Some(Part::Data(data)) => data,
            other => panic!("not data: {other:?}"),
        }
    }

    fn masked_struct(items: &[(&str, &str)], fields: Vec<Field>, values: Vec<Value>) -> Result<Value, String> {
        let schema = Arc::new(Schema::structure(fields));
        let mut r = record(Some(Data::new(schema.clone(), Value::Struct(values))));
        mask(items, Side::Value).unwrap().apply(&mut r)?;
        assert_eq!(value_of(&r).schema.as_ref(), Some(&schema), "the schema is kept");
        Ok(value_of(&r).value.clone())
    }

    #[test]
    fn each_type_masks_to_its_empty_value() {
        let fields = vec![
            field("b", Schema::of(Type::Boolean)),
            field("i8", Schema::of(Type::Int8)),
            field("i16", Schema::of(Type::Int16)),
            field("i32", Schema::of(Type::Int32)),
            field("i64", Schema::of(Type::Int64)),
            field("f32", Schema::of(Type::Float32)),
            field("f64", Schema::of(Type::Float64)),
            field("s", Schema::of(Type::String)),
            field("d", Schema::decimal(2)),
            field("day", Schema::date()),
            field("at", Schema::timestamp()),
            field("list", Schema::array(Arc::new(Schema::of(Type::Int32)))),
            field("m", Schema::map(Arc::new(Schema::of(Type::String)), Arc::new(Schema::of(Type::Int32)))),
            field("n", Schema::of(Type::String).optional()),
            field("kept", Schema::of(Type::Int32)),
        ];
        let values = vec![
            Value::Boolean(true),
            Value::Int8(1),
            Value::Int16(2),
            Value::Int32(3),
            Value::Int64(4),
            Value::Float32(5.5),
            Value::Float64(6.5),
            string("secret"),
            Value::Decimal(Decimal::from_i64(1234, 2)),
            Value::Int32(19000),
            Value::Int64(1_700_000_000_000),
            Value::Array(vec![Value::Int32(1)]),
            Value::Map(vec![(string("k"), Value::Int32(1))]),
            Value::Null,
            Value::Int32(9),
        ];
        let all = "b,i8,i16,i32,i64,f32,f64,s,d,day,at,list,m,n";
        assert_eq!(
            masked_struct(&[("fields", all)], fields, values).unwrap(),
            Value::Struct(vec![
                Value::Boolean(false),
                Value::Int8(0),
                Value::Int16(0),
                Value::Int32(0),
                Value::Int64(0),
                Value::Float32(0.0),
                Value::Float64(0.0),
                string(""),
                Value::Decimal(Decimal::from_i64(0, 0)),
                Value::Int32(0),
                Value::Int64(0),
                Value::Array(Vec::new()),
                Value::Map(Vec::new()),
                Value::Null,
                Value::Int32(9),
            ])
        );
    }

    #[test]
    fn a_replacement_is_read_as_the_fields_type() {
        let fields = vec![
            field("i8", Schema::of(Type::Int8)),
            field("i32", Schema::of(Type::Int32)),
            field("f32", Schema::of(Type::Float32)),
            field("s", Schema::of(Type::String)),
            field("d", Schema::decimal(1)),
        ];
        let values = vec![
            Value::Int8(1),
            Value::Int32(2),
            Value::Float32(3.0),
            string("x"),
            Value::Decimal(Decimal::from_i64(5, 1)),
        ];
        assert_eq!(
            masked_struct(&[("fields", "i8,i32,f32,s,d"), ("replacement", " 300.7 ")], fields, values).unwrap(),
            Value::Struct(vec![
                Value::Int8(44),
                Value::Int32(300),
                Value::Float32(300.7),
                string("300.7"),
                Value::Decimal(Decimal::parse("300.7").unwrap()),
            ]),
            "a byte keeps the low bits, as Java's (byte) cast does"
        );
    }

    #[test]
    fn a_replacement_that_does_not_fit_the_type_is_refused_on_the_record() {
        let t = mask(&[("fields", "a"), ("replacement", "x")], Side::Value).unwrap();
        let fails = |schema: Schema, value: Value| {
            let schema = Arc::new(Schema::structure(vec![field("a", schema)]));
            let mut r = record(Some(Data::new(schema, Value::Struct(vec![value]))));
            t.apply(&mut r).unwrap_err()
        };
        assert!(fails(Schema::of(Type::Int32), Value::Int32(1)).starts_with("Unable to convert x"));
        assert!(fails(Schema::decimal(0), Value::Decimal(Decimal::from_i64(1, 0))).contains("to number"));
        assert!(fails(Schema::of(Type::Boolean), Value::Boolean(true)).contains("class java.lang.Boolean with custom"));
        assert!(fails(Schema::date(), Value::Int32(1)).contains("class java.util.Date with custom"));
        let schema = Arc::new(Schema::structure(vec![field("a", Schema::of(Type::String).optional())]));
        let mut null = record(Some(Data::new(schema, Value::Struct(vec![Value::Null]))));
        t.apply(&mut null).unwrap();
        assert_eq!(value_of(&null).value, Value::Struct(vec![Value::Null]), "a null is not replaced");
    }

    #[test]
    fn bytes_and_structs_cannot_be_masked() {
        let e =
            masked_struct(&[("fields", "a")], vec![field("a", Schema::of(Type::Bytes))], vec![Value::Bytes(vec![1])])
                .unwrap_err();
        assert!(e.starts_with("Cannot mask value of type: class [B"), "{e}");
    }

    #[test]
    fn defaults_fill_nulls_before_masking_unless_told_not_to() {
        let fields =
            || vec![field("a", Schema { default: Some(Value::Int32(7)), ..Schema::of(Type::Int32).optional() })];
        assert_eq!(
            masked_struct(&[("fields", "a")], fields(), vec![Value::Null]).unwrap(),
            Value::Struct(vec![Value::Int32(0)])
        );
        assert_eq!(
            masked_struct(&[("fields", "a"), ("replace.null.with.default", "false")], fields(), vec![Value::Null])
                .unwrap(),
            Value::Struct(vec![Value::Null])
        );
        let required = vec![field("a", Schema { default: Some(Value::Int32(7)), ..Schema::of(Type::Int32) })];
        let e = masked_struct(&[("fields", "a"), ("replace.null.with.default", "false")], required, vec![Value::Null])
            .unwrap_err();
        assert!(e.contains("null used for required field"), "{e}");
    }

    #[test]
    fn schemaless_maps_mask_by_the_values_class_and_gain_missing_fields() {
        let t = mask(&[("fields", "n, s, list, gone, n")], Side::Key).unwrap();
        let mut r = record(None);
        r.key = Some(Part::Data(Data::schemaless(Value::Map(vec![
            (string("n"), Value::Int64(12)),
            (string("s"), string("secret")),
            (string("list"), Value::Array(vec![Value::Int64(1)])),
            (string("other"), Value::Float64(1.5)),
        ]))));
        t.apply(&mut r).unwrap();
        assert_eq!(
            r.key,
            Some(Part::Data(Data::schemaless(Value::Map(vec![
                (string("n"), Value::Int64(0)),
                (string("s"), string("")),
                (string("list"), Value::Array(Vec::new())),
                (string("other"), Value::Float64(1.5)),
                (string("gone"), Value::Null),
            ]))))
        );
    }

    #[test]
    fn nulls_and_values_that_are_not_maps_or_structs_are_refused() {
        let t = mask(&[("fields", "a")], Side::Value).unwrap();
        assert_eq!(
            t.apply(&mut record(None)).unwrap_err(),
            "Only Map objects supported in absence of schema for [mask fields], found: null"
        );
        let optional = Arc::new(Schema::structure(Vec::new()).optional());
        assert_eq!(
            t.apply(&mut record(Some(Data::new(optional, Value::Null)))).unwrap_err(),
            "Only Struct objects supported for [mask fields], found: null"
        );
    }

    #[test]
    fn bad_settings_name_their_key() {
        for (items, key) in [
            (&[][..], "transforms.m.fields"),
            (&[("fields", " ")][..], "transforms.m.fields"),
            (&[("fields", "a"), ("replacement", "  ")][..], "transforms.m.replacement"),
            (&[("fields", "a"), ("replace.null.with.default", "no")][..], "transforms.m.replace.null.with.default"),
        ] {
            assert_eq!(mask(items, Side::Value).unwrap_err().key, key);
        }
    }

    #[test]
    fn long_value_drops_the_fraction_and_keeps_the_low_bits() {
        for (text, expected) in [
            ("3.99", 3),
            ("-3.99", -3),
            ("0.5", 0),
            ("1e3", 1000),
            ("-1E+2", -100),
            ("9223372036854775808", i64::MIN),
            ("18446744073709551617", 1),
            ("1e64", 0),
            ("1e99999", 0),
        ] {
            assert_eq!(Decimal::parse(text).unwrap().long_value(), expected, "{text}");
        }
    }
}
