//! Connect's `Cast`: casts fields of a struct (or of a schemaless map), or the whole key or
//! value, to another primitive type.
//!
//! `spec` is a list of `field:type`, or a single `type` for the whole value; the types are
//! `int8`, `int16`, `int32`, `int64`, `float32`, `float64`, `boolean` and `string`, written in
//! any case. What can be cast is a number, a boolean, a string, or bytes (to a string only, as
//! base64). The casts are Java's: numbers narrow as Java narrows them (an int64 of 300 is an int8
//! of 44; a float is rounded toward zero and clamped to an int, then narrowed), a number is true
//! when its whole part is not 0, text is read as `Integer.parseInt`, `Double.parseDouble` and
//! `Boolean.parseBoolean` read it, and a value is written as Java's `toString` writes it (a
//! `Date`, `Time` or `Timestamp` in ISO 8601, as Connect's `Values` writes them; a `Decimal` as
//! `BigDecimal.toString`). A `Decimal` casts to a number through its whole part, as
//! `BigDecimal.intValue()` and the like do.
//!
//! With a schema, the new schema is derived once for each schema met: a cast field gets a plain
//! schema of its new type, optional if the field was, with its default cast too; the other
//! fields keep theirs; the struct keeps its name, version, doc and parameters. A whole-value cast
//! keeps the schema's name and parameters too, as Connect does, so that a logical type cast as a
//! whole (a `Timestamp` to `string`) keeps its logical name on the new type; Connect's
//! `JsonConverter` then refuses to write it, while Wharf's writes it as the plain type. Without a
//! schema, a field the spec names but the map lacks is added as null, as Connect adds it. A null
//! key or value is left as it is.

use std::sync::Arc;

use base64::Engine;

use crate::convert::{json_text, values};
use crate::data::{Data, Field, Logical, Schema, Type, Value};
use crate::model::Part;

use super::support::{copy_schema_basics, java_class, require_map, require_struct, SchemaCache, Side};
use super::{Apply, Outcome, Record, Settings, TransformConfigError};

const PURPOSE: &str = "cast types";

const TARGETS: [(&str, Type); 8] = [
    ("INT8", Type::Int8),
    ("INT16", Type::Int16),
    ("INT32", Type::Int32),
    ("INT64", Type::Int64),
    ("FLOAT32", Type::Float32),
    ("FLOAT64", Type::Float64),
    ("BOOLEAN", Type::Boolean),
    ("STRING", Type::String),
];
/// Connect's `Schema.Type` names that are not cast targets.
const NOT_TARGETS: [&str; 4] = ["BYTES", "ARRAY", "MAP", "STRUCT"];
const SUPPORTED_INPUT: &str = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]";
const SUPPORTED_OUTPUT: &str = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]";

/// What the spec casts.
#[derive(Debug, Clone, PartialEq)]
enum Casts {
    /// The whole key or value, to one type.
    Whole(Type),
    /// Top-level fields, each to its type (a field named twice takes the last).
    Fields(Vec<(String, Type)>),
}

impl Casts {
    fn of_field(&self, name: &str) -> Option<Type> {
        match self {
            Casts::Whole(_) => None,
            Casts::Fields(fields) => fields.iter().find(|(f, _)| f == name).map(|(_, t)| *t),
        }
    }
}

#[derive(Debug)]
struct Cast {
    side: Side,
    casts: Casts,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(super) fn configure(settings: &Settings, side: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let casts = spec(settings)?;
    let replace_null_with_default = settings.boolean("replace.null.with.default", true)?;
    Ok(Box::new(Cast { side, casts, replace_null_with_default, schemas: SchemaCache::new() }))
}

/// The casts `spec` names, read as Connect reads them.
fn spec(settings: &Settings) -> Result<Casts, TransformConfigError> {
    let key = settings.key("spec");
    let problem = |message: String| settings.problem("spec", format!("{key}: {message}"));
    if settings.get("spec").is_none() {
        return Err(settings.problem(
            "spec",
            format!("{key} is required: the fields to cast and their types, e.g. price:float64,id:string, or one type for the whole value"),
        ));
    }
    let items = settings.list("spec");
    if items.is_empty() {
        return Err(problem("Must specify at least one field to cast, e.g. price:float64".into()));
    }
    let mut whole = None;
    let mut fields: Vec<(String, Type)> = Vec::new();
    for item in &items {
        let parts = java_split_colons(item);
        match parts.as_slice() {
            // Java's split of ":" is empty: Connect skips such an item.
            [] => {}
            [type_name] => whole = Some(target_type(type_name.trim()).map_err(problem)?),
            [field, type_name] => {
                let cast = target_type(type_name.trim()).map_err(problem)?;
                let field = field.trim();
                match fields.iter_mut().find(|(f, _)| f == field) {
                    Some(entry) => entry.1 = cast,
                    None => fields.push((field.to_string(), cast)),
                }
            }
            _ => {
                return Err(problem(format!(
                    "Invalid cast mapping: {item}; write field:type, with one colon, e.g. price:float64"
                )))
            }
        }
    }
    match whole {
        Some(_) if items.len() > 1 => Err(problem(format!(
            "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec; {} names {} casts",
            key,
            items.len()
        ))),
        Some(cast) => Ok(Casts::Whole(cast)),
        None => Ok(Casts::Fields(fields)),
    }
}

/// Java's `String.split(":")`: the pieces between colons, without the empty ones at the end
/// (so `":"` has none, and `"a:"` is just `a`).
fn java_split_colons(text: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 1 {
        while parts.last() == Some(&"") {
            parts.pop();
        }
    }
    parts
}

fn target_type(name: &str) -> Result<Type, String> {
    let upper = name.to_uppercase();
    if let Some((_, cast)) = TARGETS.iter().find(|(n, _)| *n == upper) {
        return Ok(*cast);
    }
    if NOT_TARGETS.contains(&upper.as_str()) {
        return Err(format!(
            "Cast transformation does not support casting to {upper}; supported types are {SUPPORTED_OUTPUT}"
        ));
    }
    Err(format!(
        "Invalid type found in casting spec: {name}; the types are int8, int16, int32, int64, float32, float64, boolean and string"
    ))
}

impl Apply for Cast {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        let part = match self.side {
            Side::Key => &record.key,
            Side::Value => &record.value,
        };
        let null = match part {
            None => true,
            Some(Part::Data(data)) => data.value == Value::Null,
            Some(Part::Bytes(_)) => false,
        };
        if null {
            return Ok(Outcome::Keep);
        }
        let data = self.side.take(record);
        let cast = match data.schema {
            None => self.schemaless(data.value)?,
            Some(schema) => self.with_schema(schema, data.value)?,
        };
        self.side.put(record, cast);
        Ok(Outcome::Keep)
    }
}

impl Cast {
    fn schemaless(&self, value: Value) -> Result<Data, String> {
        let fields = match &self.casts {
            Casts::Whole(target) => return Ok(Data::schemaless(cast_value(None, value, *target)?)),
            Casts::Fields(fields) => fields,
        };
        let mut entries = match value {
            Value::Map(entries) => entries,
            other => return Err(require_map(&other, PURPOSE).err().unwrap_or_default()),
        };
        for (field, target) in fields {
            let found = entries.iter().rposition(|(k, _)| matches!(k, Value::String(s) if s == field));
            match found {
                Some(i) => {
                    let value = std::mem::replace(&mut entries[i].1, Value::Null);
                    entries[i].1 = cast_value(None, value, *target)?;
                }
                None => entries.push((Value::String(field.clone()), Value::Null)),
            }
        }
        Ok(Data::schemaless(Value::Map(entries)))
    }

    fn with_schema(&self, schema: Arc<Schema>, value: Value) -> Result<Data, String> {
        if let Casts::Whole(target) = self.casts {
            let updated = self.schemas.get_or_derive(&schema, |s| self.derive(s))?;
            return Ok(Data::new(updated, cast_value(Some(&schema), value, target)?));
        }
        let values = match value {
            Value::Struct(values) if schema.kind == Type::Struct && values.len() == schema.fields.len() => values,
            other => {
                let data = Data { schema: Some(schema), value: other };
                return Err(require_struct(&data, PURPOSE)
                    .err()
                    .unwrap_or_else(|| "the struct's values do not match its schema's fields".to_string()));
            }
        };
        let updated = self.schemas.get_or_derive(&schema, |s| self.derive(s))?;
        let mut cast = Vec::with_capacity(values.len());
        for (field, value) in schema.fields.iter().zip(values) {
            let value = match (&value, &field.schema.default) {
                (Value::Null, Some(default)) if self.replace_null_with_default => default.clone(),
                _ => value,
            };
            cast.push(match self.casts.of_field(&field.name) {
                Some(target) => cast_value(Some(&field.schema), value, target)?,
                None => value,
            });
        }
        Ok(Data::new(updated, Value::Struct(cast)))
    }

    /// The schema a cast value has, from the schema it had (Connect's `getOrBuildSchema`).
    fn derive(&self, schema: &Schema) -> Result<Schema, String> {
        let mut derived = match &self.casts {
            Casts::Whole(target) => copy_schema_basics(schema, *target),
            Casts::Fields(_) => {
                let mut derived = copy_schema_basics(schema, Type::Struct);
                derived.fields = schema
                    .fields
                    .iter()
                    .map(|field| match self.casts.of_field(&field.name) {
                        None => Ok(field.clone()),
                        Some(target) => {
                            let mut cast = Schema::of(target);
                            cast.optional = field.schema.optional;
                            cast.default = match &field.schema.default {
                                None | Some(Value::Null) => None,
                                Some(default) => Some(
                                    cast_value(Some(&field.schema), default.clone(), target)
                                        .map_err(|e| format!("the default of field \"{}\": {e}", field.name))?,
                                ),
                            };
                            Ok(Field { name: field.name.clone(), schema: Arc::new(cast) })
                        }
                    })
                    .collect::<Result<_, String>>()?;
                derived
            }
        };
        derived.optional = schema.optional;
        if let Some(default) = schema.default.as_ref().filter(|d| **d != Value::Null) {
            derived.default = Some(cast_value(Some(schema), default.clone(), derived.kind)?);
        }
        Ok(derived)
    }
}

/// A value cast to `target`, as Connect's `castValueToType`: its type is its schema's, or its
/// own without one.
fn cast_value(schema: Option<&Schema>, value: Value, target: Type) -> Result<Value, String> {
    if value == Value::Null {
        return Ok(Value::Null);
    }
    let Some(from) = schema.map(|s| s.kind).or_else(|| value.schemaless_type()) else {
        return Err(format!(
            "Cast transformation was passed a value of type class {} which is not supported by Connect's data API",
            java_class(&value)
        ));
    };
    if !from.is_primitive() {
        return Err(format!(
            "Cast transformation does not support casting from {}; supported types are {SUPPORTED_INPUT}",
            from.name().to_uppercase()
        ));
    }
    let out_of_range = |text: &str| format!("Value ({text}) was out of range for requested data type");
    Ok(match (target, value) {
        (Type::String, value) => Value::String(to_text(schema, value)?),
        (Type::Boolean, Value::String(s)) => Value::Boolean(s.eq_ignore_ascii_case("true")),
        (Type::Boolean, value) => Value::Boolean(whole_number(&value, Type::Int64)? != 0),
        (Type::Float32, Value::String(s)) => Value::Float32(java_float(&s).ok_or_else(|| out_of_range(&s))?),
        (Type::Float64, Value::String(s)) => Value::Float64(java_double(&s).ok_or_else(|| out_of_range(&s))?),
        (Type::Float32, value) => Value::Float32(match value {
            Value::Float32(x) => x,
            Value::Float64(x) => x as f32,
            Value::Decimal(d) => d.to_java_string().parse().unwrap_or(f32::NAN),
            other => whole_number(&other, Type::Int64)? as f32,
        }),
        (Type::Float64, value) => Value::Float64(match value {
            Value::Float32(x) => f64::from(x),
            Value::Float64(x) => x,
            Value::Decimal(d) => d.to_f64(),
            other => whole_number(&other, Type::Int64)? as f64,
        }),
        (Type::Int8, Value::String(s)) => Value::Int8(s.parse().map_err(|_| out_of_range(&s))?),
        (Type::Int16, Value::String(s)) => Value::Int16(s.parse().map_err(|_| out_of_range(&s))?),
        (Type::Int32, Value::String(s)) => Value::Int32(s.parse().map_err(|_| out_of_range(&s))?),
        (Type::Int64, Value::String(s)) => Value::Int64(s.parse().map_err(|_| out_of_range(&s))?),
        (Type::Int8, value) => Value::Int8(whole_number(&value, Type::Int8)? as i8),
        (Type::Int16, value) => Value::Int16(whole_number(&value, Type::Int16)? as i16),
        (Type::Int32, value) => Value::Int32(whole_number(&value, Type::Int32)? as i32),
        (_, value) => Value::Int64(whole_number(&value, Type::Int64)?),
    })
}

/// A number or boolean as Java's `byteValue()` … `longValue()` give it (for `target`), widened to
/// an i64 to be narrowed by the caller: an integer as it is, a float rounded toward zero and
/// clamped to an int (a long for int64), a decimal's whole part in its low 64 bits, a boolean
/// as 1 or 0.
fn whole_number(value: &Value, target: Type) -> Result<i64, String> {
    let float = |x: f64| if target == Type::Int64 { x as i64 } else { i64::from(x as i32) };
    Ok(match value {
        Value::Int8(n) => i64::from(*n),
        Value::Int16(n) => i64::from(*n),
        Value::Int32(n) => i64::from(*n),
        Value::Int64(n) => *n,
        Value::Float32(x) => float(f64::from(*x)),
        Value::Float64(x) => float(*x),
        Value::Decimal(d) => d.long_value(),
        Value::Boolean(b) => i64::from(*b),
        other => return Err(format!("Unexpected type in Cast transformation: class {}", java_class(other))),
    })
}

/// A value written as Java's `toString` writes it, as Connect's `castToString`.
fn to_text(schema: Option<&Schema>, value: Value) -> Result<String, String> {
    let logical = schema.filter(|s| s.logical().is_some_and(|l| l != Logical::Decimal));
    Ok(match value {
        Value::String(s) => s,
        Value::Boolean(b) => b.to_string(),
        Value::Int32(_) | Value::Int64(_) if logical.is_some() => {
            let text = values::to_text(logical, &value).map_err(|e| e.message)?.unwrap_or_default();
            String::from_utf8_lossy(&text).into_owned()
        }
        Value::Int8(n) => n.to_string(),
        Value::Int16(n) => n.to_string(),
        Value::Int32(n) => n.to_string(),
        Value::Int64(n) => n.to_string(),
        Value::Float32(x) => java_float_text(f64::from(x), x.is_finite(), |out| json_text::write_float(out, x)),
        Value::Float64(x) => java_float_text(x, x.is_finite(), |out| json_text::write_double(out, x)),
        Value::Decimal(d) => d.to_java_string(),
        Value::Bytes(bytes) => base64::engine::general_purpose::STANDARD.encode(bytes),
        other => return Err(format!("Unexpected type in Cast transformation: class {}", java_class(&other))),
    })
}

/// `Float.toString` or `Double.toString`: `NaN`, `Infinity` and `-Infinity` as Java writes
/// them, the rest as `write` does.
fn java_float_text(x: f64, finite: bool, write: impl FnOnce(&mut Vec<u8>)) -> String {
    if !finite {
        return match (x.is_nan(), x > 0.0) {
            (true, _) => "NaN",
            (false, true) => "Infinity",
            (false, false) => "-Infinity",
        }
        .to_string();
    }
    let mut out = Vec::with_capacity(24);
    write(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// What Java's `Float.parseFloat` and `Double.parseDouble` accept, read.
enum JavaNumber {
    /// Decimal text Rust's float parsing reads to the same value.
    Decimal(String),
    /// `0x…p…`: the hex digits (without the point), how many followed the point, the binary
    /// exponent.
    Hex {
        negative: bool,
        digits: Vec<u8>,
        fraction_digits: i64,
        exponent: i64,
    },
    NaN,
    Infinity {
        negative: bool,
    },
}

/// Reads text as Java's `FloatingDecimal` does: trimmed of spaces and control characters, an
/// optional sign, then `NaN`, `Infinity`, hex (`0x1.8p1`) or decimal digits with an optional
/// point and exponent, and an optional `f`, `F`, `d` or `D` at the end.
fn java_number(text: &str) -> Option<JavaNumber> {
    let text = text.trim_matches(|c: char| c <= ' ');
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    match rest {
        "NaN" => return Some(JavaNumber::NaN),
        "Infinity" => return Some(JavaNumber::Infinity { negative }),
        _ => {}
    }
    let rest = rest.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(rest);
    if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
        let (mantissa, exponent) = hex.split_once(['p', 'P'])?;
        let exponent_digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if exponent_digits.is_empty() || !exponent_digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let exponent = exponent.parse::<i64>().unwrap_or(if exponent.starts_with('-') { i64::MIN } else { i64::MAX });
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let mut digits = Vec::with_capacity(whole.len() + fraction.len());
        for c in whole.chars().chain(fraction.chars()) {
            digits.push(c.to_digit(16)? as u8);
        }
        return Some(JavaNumber::Hex { negative, digits, fraction_digits: fraction.len() as i64, exponent });
    }
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    if let Some(exponent) = exponent {
        let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if digits.is_empty() || !all_digits(digits) {
            return None;
        }
    }
    let sign = if negative { "-" } else { "" };
    let exponent = exponent.map(|e| format!("e{e}")).unwrap_or_default();
    Some(JavaNumber::Decimal(format!("{sign}{whole}.{fraction}0{exponent}")))
}

fn java_double(text: &str) -> Option<f64> {
    Some(match java_number(text)? {
        JavaNumber::Decimal(text) => text.parse().ok()?,
        JavaNumber::NaN => f64::NAN,
        JavaNumber::Infinity { negative } => {
            if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        JavaNumber::Hex { negative, digits, fraction_digits, exponent } => {
            f64::from_bits(hex_float(negative, &digits, fraction_digits, exponent, BINARY64))
        }
    })
}

fn java_float(text: &str) -> Option<f32> {
    Some(match java_number(text)? {
        JavaNumber::Decimal(text) => text.parse().ok()?,
        JavaNumber::NaN => f32::NAN,
        JavaNumber::Infinity { negative } => {
            if negative {
                f32::NEG_INFINITY
            } else {
                f32::INFINITY
            }
        }
        JavaNumber::Hex { negative, digits, fraction_digits, exponent } => {
            f32::from_bits(hex_float(negative, &digits, fraction_digits, exponent, BINARY32) as u32)
        }
    })
}

/// An IEEE 754 binary format: significand bits (with the hidden one), the least normal
/// exponent, the exponent bias, and where the sign bit is.
struct Binary {
    precision: i64,
    min_exponent: i64,
    bias: i64,
    sign_bit: u32,
}

const BINARY64: Binary = Binary { precision: 53, min_exponent: -1022, bias: 1023, sign_bit: 63 };
const BINARY32: Binary = Binary { precision: 24, min_exponent: -126, bias: 127, sign_bit: 31 };

/// The bits of `±0x<digits>p<exponent>` (the last `fraction_digits` digits after the point),
/// rounded to the nearest value of the format, ties to even, as Java rounds.
fn hex_float(negative: bool, digits: &[u8], fraction_digits: i64, exponent: i64, format: Binary) -> u64 {
    let sign = u64::from(negative) << format.sign_bit;
    // The first 64 significant bits; how many came after them, and whether any of those is set.
    let mut significand: u64 = 0;
    let mut bits: i64 = 0;
    let mut later: i64 = 0;
    let mut sticky = false;
    for d in digits {
        for shift in (0..4).rev() {
            let bit = u64::from(d >> shift & 1);
            if bits == 0 && bit == 0 {
                continue;
            }
            if bits < 64 {
                significand = significand << 1 | bit;
                bits += 1;
            } else {
                later += 1;
                sticky |= bit == 1;
            }
        }
    }
    if bits == 0 {
        return sign;
    }
    // The value is (significand and the later bits) × 2^scale.
    let scale = exponent.saturating_sub(fraction_digits.saturating_mul(4)).saturating_add(later);
    let top = scale.saturating_add(bits - 1);
    // The exponent of the lowest bit the result keeps: lower for a subnormal.
    let mut lowest = top.max(format.min_exponent) - (format.precision - 1);
    let cut = lowest.saturating_sub(scale);
    let mut kept = if cut <= 0 {
        significand << -cut
    } else if cut > bits {
        0
    } else {
        let kept = if cut >= 64 { 0 } else { significand >> cut };
        let half = 1u64 << (cut - 1);
        let rest = significand & if cut >= 64 { u64::MAX } else { (1u64 << cut) - 1 };
        let round_up = rest > half || (rest == half && (sticky || kept & 1 == 1));
        kept + u64::from(round_up)
    };
    if kept >> format.precision != 0 {
        kept >>= 1;
        lowest += 1;
    }
    let fraction_bits = format.precision - 1;
    if kept >> fraction_bits == 0 {
        // Zero, or subnormal: the exponent field is 0.
        return sign | kept;
    }
    let top = lowest + fraction_bits;
    if top > format.bias {
        return sign | ((2 * format.bias + 1) as u64) << fraction_bits;
    }
    sign | ((top + format.bias) as u64) << fraction_bits | (kept & ((1u64 << fraction_bits) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Decimal;
    use crate::transform::support::testing;
    use crate::transform::Chain;

    fn chain(side: &str, settings: &[(&str, &str)]) -> Result<Chain, Vec<TransformConfigError>> {
        testing::chain(&format!("Cast${side}"), settings)
    }

    fn record(value: Data) -> Record {
        Record { partition: Some(0), timestamp: Some(1), ..testing::record(None, Some(value)) }
    }

    fn cast(spec: &str, value: Data) -> Result<Data, String> {
        let chain = chain("Value", &[("spec", spec)]).map_err(|e| e[0].message.clone())?;
        let out = chain.apply(record(value)).map_err(|e| e.message)?.unwrap();
        match out.value {
            Some(Part::Data(data)) => Ok(data),
            other => panic!("{other:?}"),
        }
    }

    fn whole(spec: &str, schema: Schema, value: Value) -> Result<Value, String> {
        cast(spec, Data::new(Arc::new(schema), value)).map(|d| d.value)
    }

    fn field(name: &str, schema: Schema) -> Field {
        Field { name: name.into(), schema: Arc::new(schema) }
    }

    #[test]
    fn numbers_narrow_and_round_as_java_does() {
        let int64 = || Schema::of(Type::Int64);
        assert_eq!(whole("int8", int64(), Value::Int64(300)), Ok(Value::Int8(44)));
        assert_eq!(whole("int16", int64(), Value::Int64(-70_000)), Ok(Value::Int16(-4464)));
        assert_eq!(whole("float32", int64(), Value::Int64(16_777_217)), Ok(Value::Float32(16_777_216.0)));
        assert_eq!(whole("int8", Schema::of(Type::Float64), Value::Float64(3e9)), Ok(Value::Int8(-1)));
        assert_eq!(whole("int64", Schema::of(Type::Float64), Value::Float64(-2.9)), Ok(Value::Int64(-2)));
        assert_eq!(whole("int32", Schema::of(Type::Float32), Value::Float32(f32::NAN)), Ok(Value::Int32(0)));
        assert_eq!(whole("boolean", Schema::of(Type::Float64), Value::Float64(0.5)), Ok(Value::Boolean(false)));
        assert_eq!(whole("float64", Schema::of(Type::Boolean), Value::Boolean(true)), Ok(Value::Float64(1.0)));
        assert_eq!(whole("string", Schema::of(Type::Float64), Value::Float64(1e7)), Ok(Value::String("1.0E7".into())));
        assert_eq!(
            whole("string", Schema::of(Type::Float32), Value::Float32(f32::NEG_INFINITY)),
            Ok(Value::String("-Infinity".into()))
        );
    }

    #[test]
    fn text_is_read_as_javas_parsers_read_it() {
        let string = || Schema::of(Type::String);
        let text = |s: &str| Value::String(s.into());
        assert_eq!(whole("int8", string(), text("+12")), Ok(Value::Int8(12)));
        assert!(whole("int8", string(), text("128")).unwrap_err().contains("Value (128) was out of range"));
        assert!(whole("int32", string(), text(" 1")).is_err(), "parseInt does not trim");
        assert_eq!(whole("float64", string(), text(" 1.5d ")), Ok(Value::Float64(1.5)));
        assert_eq!(whole("float64", string(), text("-Infinity")), Ok(Value::Float64(f64::NEG_INFINITY)));
        assert_eq!(whole("float64", string(), text("0x1.8p1")), Ok(Value::Float64(3.0)));
        assert_eq!(whole("float32", string(), text("0x1p-149")), Ok(Value::Float32(f32::from_bits(1))));
        assert_eq!(whole("float64", string(), text(".5e1")), Ok(Value::Float64(5.0)));
        assert!(whole("float64", string(), text("inf")).is_err(), "Rust's spelling is not Java's");
        assert!(whole("float64", string(), text("1e")).is_err());
        assert_eq!(whole("boolean", string(), text("TRUE")), Ok(Value::Boolean(true)));
        assert_eq!(whole("boolean", string(), text("yes")), Ok(Value::Boolean(false)));
    }

    #[test]
    fn hex_floats_round_to_nearest_even() {
        assert_eq!(java_double("0x1.0000000000000800p0"), Some(1.0), "a tie rounds to even");
        assert_eq!(java_double("0x1.0000000000000801p0"), Some(1.0 + f64::EPSILON));
        assert_eq!(java_double("0x1.fffffffffffff8p1023"), Some(f64::INFINITY));
        assert_eq!(java_double("0x1p-1075"), Some(0.0));
        assert_eq!(java_double("0x1.8p-1074"), Some(f64::from_bits(2)));
        assert_eq!(java_double("-0x0.0p0").map(f64::to_bits), Some((-0.0f64).to_bits()));
        assert_eq!(java_float("0x1.fffffep127"), Some(f32::MAX));
        assert_eq!(java_double("0xAp0"), Some(10.0));
    }

    #[test]
    fn decimals_cast_through_their_whole_part() {
        let decimal = |text: &str| Value::Decimal(Decimal::parse(text).unwrap());
        let schema = || Schema::decimal(2);
        assert_eq!(whole("int32", schema(), decimal("-12.99")), Ok(Value::Int32(-12)));
        assert_eq!(whole("int8", schema(), decimal("300.50")), Ok(Value::Int8(44)));
        assert_eq!(whole("int64", schema(), decimal("18446744073709551617.00")), Ok(Value::Int64(1)));
        assert_eq!(whole("boolean", schema(), decimal("0.50")), Ok(Value::Boolean(false)));
        assert_eq!(whole("float64", schema(), decimal("1.25")), Ok(Value::Float64(1.25)));
        assert_eq!(whole("string", schema(), decimal("1.20")), Ok(Value::String("1.20".into())));
        assert_eq!(Decimal::parse("1E+3").unwrap().long_value(), 1000);
    }

    #[test]
    fn logical_values_cast_as_their_number_or_their_iso_text() {
        assert_eq!(whole("int64", Schema::date(), Value::Int32(19_844)), Ok(Value::Int64(19_844)));
        assert_eq!(whole("string", Schema::date(), Value::Int32(19_844)), Ok(Value::String("2024-05-01".into())));
        assert_eq!(
            whole("string", Schema::timestamp(), Value::Int64(1_714_566_600_123)),
            Ok(Value::String("2024-05-01T12:30:00.123Z".into()))
        );
        let out = cast("string", Data::new(Arc::new(Schema::timestamp()), Value::Int64(0))).unwrap();
        assert_eq!(out.schema.unwrap().name.as_deref(), Some(crate::data::logical::TIMESTAMP), "the name is kept");
    }

    #[test]
    fn bytes_cast_to_base64_text_only() {
        let bytes = || Data::new(Arc::new(Schema::of(Type::Bytes)), Value::Bytes(vec![0, 1, 2]));
        assert_eq!(cast("string", bytes()).unwrap().value, Value::String("AAEC".into()));
        assert!(cast("int8", bytes()).unwrap_err().ends_with("Unexpected type in Cast transformation: class [B"));
        let chain = chain("Key", &[("spec", "string")]).unwrap();
        let raw = Record { key: Some(Part::Bytes(b"k".to_vec())), ..record(Data::NULL) };
        let out = chain.apply(raw).unwrap().unwrap();
        assert_eq!(
            out.key,
            Some(Part::Data(Data::new(Arc::new(Schema::of(Type::String).optional()), Value::String("aw==".into()))))
        );
    }

    #[test]
    fn struct_fields_are_cast_with_their_defaults_and_the_rest_kept() {
        let schema = Arc::new(Schema {
            name: Some("Order".into()),
            version: Some(3),
            ..Schema::structure(vec![
                field("id", Schema::of(Type::Int64)),
                field(
                    "price",
                    Schema { default: Some(Value::String("1.5".into())), ..Schema::of(Type::String).optional() },
                ),
                field("note", Schema::of(Type::String).optional()),
            ])
        });
        let value = Value::Struct(vec![Value::Int64(7), Value::Null, Value::Null]);
        let out = cast("price:float64,id:string,missing:int8", Data::new(schema.clone(), value.clone())).unwrap();
        let derived = out.schema.unwrap();
        assert_eq!((derived.name.as_deref(), derived.version), (Some("Order"), Some(3)));
        assert_eq!(
            derived.fields[1].schema.as_ref(),
            &Schema { default: Some(Value::Float64(1.5)), ..Schema::of(Type::Float64).optional() }
        );
        assert_eq!(derived.fields[0].schema.as_ref(), &Schema::of(Type::String));
        assert_eq!(derived.fields[2].schema, schema.fields[2].schema, "an uncast field keeps its schema");
        assert_eq!(out.value, Value::Struct(vec![Value::String("7".into()), Value::Float64(1.5), Value::Null]));

        let keep_nulls = chain("Value", &[("spec", "price:float64"), ("replace.null.with.default", "false")]).unwrap();
        let out = keep_nulls.apply(record(Data::new(schema, value))).unwrap().unwrap();
        assert!(
            matches!(out.value, Some(Part::Data(d)) if d.value == Value::Struct(vec![Value::Int64(7), Value::Null, Value::Null]))
        );
    }

    #[test]
    fn a_schema_met_again_is_derived_once() {
        let chain = chain("Value", &[("spec", "a:string")]).unwrap();
        let schema = Arc::new(Schema::structure(vec![field("a", Schema::of(Type::Int32))]));
        let first =
            chain.apply(record(Data::new(schema.clone(), Value::Struct(vec![Value::Int32(1)])))).unwrap().unwrap();
        let again = chain.apply(record(Data::new(schema, Value::Struct(vec![Value::Int32(2)])))).unwrap().unwrap();
        let schema_of = |r: &Record| match &r.value {
            Some(Part::Data(d)) => d.schema.clone().unwrap(),
            _ => panic!(),
        };
        assert!(Arc::ptr_eq(&schema_of(&first), &schema_of(&again)));
    }

    #[test]
    fn schemaless_maps_get_their_fields_cast_and_missing_ones_added_as_null() {
        let map = Value::Map(vec![
            (Value::String("a".into()), Value::Int64(300)),
            (Value::String("b".into()), Value::String("x".into())),
        ]);
        let out = cast("a:int8,c:string", Data::schemaless(map)).unwrap();
        assert_eq!(out.schema, None);
        assert_eq!(
            out.value,
            Value::Map(vec![
                (Value::String("a".into()), Value::Int8(44)),
                (Value::String("b".into()), Value::String("x".into())),
                (Value::String("c".into()), Value::Null),
            ])
        );
        assert_eq!(cast("int32", Data::schemaless(Value::Int64(5))).unwrap(), Data::schemaless(Value::Int32(5)));
    }

    #[test]
    fn what_cannot_be_cast_is_refused_in_connects_words() {
        let reason = |spec: &str, data: Data| cast(spec, data).unwrap_err();
        let map = Data::schemaless(Value::Map(Vec::new()));
        assert!(reason("int8", map).contains("does not support casting from MAP; supported types are [INT8"));
        let nested = Schema::structure(vec![field("s", Schema::structure(Vec::new()))]);
        let value = Value::Struct(vec![Value::Struct(Vec::new())]);
        assert!(reason("s:string", Data::new(Arc::new(nested), value)).contains("casting from STRUCT"));
        assert!(reason("a:int8", Data::schemaless(Value::Int32(1)))
            .contains("Only Map objects supported in absence of schema for [cast types], found: java.lang.Integer"));
        assert!(reason("a:int8", Data::new(Arc::new(Schema::of(Type::Int32)), Value::Int32(1)))
            .contains("Only Struct objects supported for [cast types]"));
        let decimal = Data::schemaless(Value::Decimal(Decimal::from_i64(1, 0)));
        assert!(reason("string", decimal).contains("class java.math.BigDecimal which is not supported"));
        let with_default = Schema { default: Some(Value::Struct(Vec::new())), ..Schema::structure(Vec::new()) };
        assert!(
            reason(":", Data::new(Arc::new(with_default), Value::Struct(Vec::new()))).contains("casting from STRUCT")
        );
    }

    #[test]
    fn nulls_pass_untouched() {
        let chain = chain("Value", &[("spec", "int8")]).unwrap();
        let tombstone = Record { value: None, ..record(Data::NULL) };
        assert_eq!(chain.apply(tombstone.clone()).unwrap().unwrap(), tombstone);
        let typed_null = record(Data::new(Arc::new(Schema::of(Type::Int64).optional()), Value::Null));
        assert_eq!(chain.apply(typed_null.clone()).unwrap().unwrap(), typed_null);
    }

    #[test]
    fn specs_are_read_as_connect_reads_them() {
        let problem = |settings: &[(&str, &str)]| chain("Value", settings).unwrap_err()[0].message.clone();
        assert!(problem(&[]).contains("transforms.x.spec is required"));
        assert!(problem(&[("spec", "")]).contains("Must specify at least one field"));
        assert!(problem(&[("spec", "a:b:c")]).contains("Invalid cast mapping: a:b:c"));
        assert!(problem(&[("spec", "a:bytes")]).contains("does not support casting to BYTES"));
        assert!(problem(&[("spec", "a:number")]).contains("Invalid type found in casting spec: number"));
        assert!(problem(&[("spec", "int8,a:int16")]).contains("may only specify a single cast"));
        assert!(problem(&[("spec", "a:int8,")]).contains("Invalid type found in casting spec: ;"));
        assert!(problem(&[("spec", "int8"), ("replace.null.with.default", "maybe")]).contains("true or false"));
        let read = |spec: &str| spec_of(spec);
        assert_eq!(read("Int8"), Casts::Whole(Type::Int8));
        assert_eq!(read("int8:"), Casts::Whole(Type::Int8), "Java's split drops the empty end");
        assert_eq!(read(":"), Casts::Fields(Vec::new()), "Java's split of a lone colon is empty");
        assert_eq!(
            read(" a : STRING , b:float32, a:int64"),
            Casts::Fields(vec![("a".into(), Type::Int64), ("b".into(), Type::Float32)])
        );
        assert_eq!(read(":int8"), Casts::Fields(vec![(String::new(), Type::Int8)]));
    }

    fn spec_of(text: &str) -> Casts {
        let config = vec![("transforms.x.spec".to_string(), text.to_string())];
        let settings = Settings { config: &config, prefix: "transforms.x.".into() };
        spec(&settings).unwrap()
    }
}
