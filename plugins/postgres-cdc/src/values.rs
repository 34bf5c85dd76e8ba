//! PostgreSQL's columns as Kafka Connect data, as Debezium's PostgreSQL connector writes them
//! with its default modes (`decimal.handling.mode=precise`, `time.precision.mode=adaptive`,
//! `binary.handling.mode=bytes`, `interval.handling.mode=numeric`, `hstore.handling.mode=json`):
//! each column's schema from its type, and each value from PostgreSQL's text form (pgoutput's and
//! a query's).

use std::sync::Arc;

use wharf_sdk::{Schema, Value};

/// What TOASTed values a change did not touch are written as (`unavailable.value.placeholder`).
pub const UNAVAILABLE: &str = "__debezium_unavailable_value";

/// A column's type, as far as its value's conversion goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Boolean,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    /// `numeric(p, s)`: a decimal of scale `s`.
    Decimal {
        precision: u32,
        scale: u32,
    },
    /// `numeric` without a scale: Debezium's `VariableScaleDecimal`.
    VariableDecimal,
    /// `money`: a decimal of scale 2.
    Money,
    Text,
    /// A text Debezium names (`io.debezium.data.Json`, `Uuid`, `Xml`).
    NamedText(&'static str),
    /// An enum's label, with its labels in order.
    Enum(String),
    Bytes,
    /// `bit(1)`.
    Bit,
    /// `bit(n)`, `bit varying(n)`.
    Bits(u32),
    Date,
    /// `time(p)`, p ≤ 3: milliseconds of the day.
    TimeMillis,
    /// `time(p)`, p > 3: microseconds of the day.
    TimeMicros,
    TimeZoned,
    TimestampMillis,
    TimestampMicros,
    /// `timestamp with time zone(p)`: written with exactly `p` digits of the second's fraction.
    TimestampZoned(u32),
    Interval,
    Array(Box<Kind>),
    /// `decimal.handling.mode=double`.
    DecimalDouble,
    /// `decimal.handling.mode=string`, with the column's scale when it has one.
    DecimalText(Option<u32>),
    /// `time.precision.mode=connect`: Kafka Connect's Date, Time (milliseconds) and Timestamp.
    ConnectDate,
    ConnectTime,
    ConnectTimestamp,
    /// `time.precision.mode=nanoseconds`.
    TimeNanos,
    TimestampNanos,
    /// `time.precision.mode=isostring`.
    IsoDate,
    IsoTime,
    IsoTimestamp,
    /// `binary.handling.mode` other than bytes: the bytes as text.
    BytesText(BinaryMode),
    /// `interval.handling.mode=string`.
    IntervalText,
    /// `hstore.handling.mode=json`: the pairs as a JSON object's text.
    HstoreJson,
    /// `hstore.handling.mode=map`.
    HstoreMap,
}

/// The `Kind` of a column of type `oid` with modifier `modifier`; `type_name` and `labels`
/// describe types outside pg_catalog (enums); none for a type Debezium leaves out.
pub fn kind_of(oid: u32, modifier: i32, type_name: &str, labels: Option<&str>) -> Option<Kind> {
    let precision = |default: i32| if modifier < 0 { default } else { modifier };
    Some(match oid {
        16 => Kind::Boolean,
        17 => Kind::Bytes,
        21 => Kind::Int16,
        23 | 26 => Kind::Int32,
        20 => Kind::Int64,
        700 => Kind::Float32,
        701 => Kind::Float64,
        1700 if modifier >= 4 => {
            let m = (modifier - 4) as u32;
            Kind::Decimal { precision: m >> 16, scale: m & 0xffff }
        }
        1700 => Kind::VariableDecimal,
        790 => Kind::Money,
        18 | 19 | 25 | 1042 | 1043 | 650 | 869 | 829 | 774 | 3614 | 3615 | 600 | 601 | 602 | 603 | 604 | 628 | 718 => {
            Kind::Text
        }
        114 | 3802 => Kind::NamedText("io.debezium.data.Json"),
        2950 => Kind::NamedText("io.debezium.data.Uuid"),
        142 => Kind::NamedText("io.debezium.data.Xml"),
        1560 | 1562 if modifier == 1 => Kind::Bit,
        1560 | 1562 => Kind::Bits(u32::try_from(modifier).unwrap_or(0)),
        1082 => Kind::Date,
        1083 if precision(6) <= 3 => Kind::TimeMillis,
        1083 => Kind::TimeMicros,
        1266 => Kind::TimeZoned,
        1114 if precision(6) <= 3 => Kind::TimestampMillis,
        1114 => Kind::TimestampMicros,
        1184 => Kind::TimestampZoned(u32::try_from(precision(6)).unwrap_or(6).min(6)),
        1186 => Kind::Interval,
        _ => {
            if let Some(labels) = labels {
                return Some(Kind::Enum(labels.to_string()));
            }
            if type_name == "hstore" {
                return Some(Kind::NamedText("io.debezium.data.Json"));
            }
            let element = match oid {
                1000 => 16,
                1001 => 17,
                1005 => 21,
                1007 => 23,
                1016 => 20,
                1021 => 700,
                1022 => 701,
                1231 => 1700,
                1009 | 1014 | 1015 => 25,
                199 => 114,
                3807 => 3802,
                2951 => 2950,
                1182 => 1082,
                1115 => 1114,
                1185 => 1184,
                _ => return None,
            };
            return kind_of(element, -1, "", None).map(|k| Kind::Array(Box::new(k)));
        }
    })
}

/// The column's schema, optional when the column is nullable, with the column's default.
pub fn schema_of(kind: &Kind, optional: bool, default: Option<Value>) -> Arc<Schema> {
    let base = match kind {
        Kind::Boolean | Kind::Bit => Schema::boolean(),
        Kind::Int16 => Schema::int16(),
        Kind::Int32 => Schema::int32(),
        Kind::Int64 => Schema::int64(),
        Kind::Float32 => Schema::float32(),
        Kind::Float64 => Schema::float64(),
        Kind::Decimal { precision, scale } => {
            Schema::decimal(*scale as i32).version(1).parameter("connect.decimal.precision", &precision.to_string())
        }
        Kind::Money => Schema::decimal(2).version(1),
        Kind::VariableDecimal => Schema::structure()
            .named("io.debezium.data.VariableScaleDecimal")
            .version(1)
            .doc("Variable scaled decimal")
            .field("scale", Schema::int32().build())
            .field("value", Schema::bytes().build()),
        Kind::Text => Schema::string(),
        Kind::NamedText(name) => Schema::string().named(name).version(1),
        Kind::Enum(labels) => Schema::string().named("io.debezium.data.Enum").version(1).parameter("allowed", labels),
        Kind::Bytes => Schema::bytes(),
        Kind::Bits(length) => {
            Schema::bytes().named("io.debezium.data.Bits").version(1).parameter("length", &length.to_string())
        }
        Kind::Date => Schema::int32().named("io.debezium.time.Date").version(1),
        Kind::TimeMillis => Schema::int32().named("io.debezium.time.Time").version(1),
        Kind::TimeMicros => Schema::int64().named("io.debezium.time.MicroTime").version(1),
        Kind::TimeZoned => Schema::string().named("io.debezium.time.ZonedTime").version(1),
        Kind::TimestampMillis => Schema::int64().named("io.debezium.time.Timestamp").version(1),
        Kind::TimestampMicros => Schema::int64().named("io.debezium.time.MicroTimestamp").version(1),
        Kind::TimestampZoned(_) => Schema::string().named("io.debezium.time.ZonedTimestamp").version(1),
        Kind::Interval => Schema::int64().named("io.debezium.time.MicroDuration").version(1),
        Kind::Array(element) => Schema::array(schema_of(element, true, None)),
        Kind::DecimalDouble => Schema::float64(),
        Kind::DecimalText(_) | Kind::BytesText(_) => Schema::string(),
        Kind::ConnectDate => Schema::date(),
        Kind::ConnectTime => Schema::time(),
        Kind::ConnectTimestamp => Schema::timestamp(),
        Kind::TimeNanos => Schema::int64().named("io.debezium.time.NanoTime").version(1),
        Kind::TimestampNanos => Schema::int64().named("io.debezium.time.NanoTimestamp").version(1),
        Kind::IsoDate => Schema::string().named("io.debezium.time.IsoDate").version(1),
        Kind::IsoTime => Schema::string().named("io.debezium.time.IsoTime").version(1),
        Kind::IsoTimestamp => Schema::string().named("io.debezium.time.IsoTimestamp").version(1),
        Kind::IntervalText => Schema::string().named("io.debezium.time.Interval").version(1),
        Kind::HstoreJson => Schema::string().named("io.debezium.data.Json").version(1),
        Kind::HstoreMap => Schema::map(Schema::string().build(), Schema::string().optional().build()),
    };
    let base = match default {
        Some(value) => base.default_value(value),
        None => base,
    };
    if optional {
        base.optional().build()
    } else {
        base.build()
    }
}

/// The value of `text` (PostgreSQL's text form) in a column of `kind`.
pub fn value_of(kind: &Kind, text: &str) -> Result<Value, String> {
    let bad = || format!("\"{text}\" is not a value of the column's type ({kind:?})");
    Ok(match kind {
        Kind::Boolean | Kind::Bit => Value::Boolean(matches!(text, "t" | "true" | "1")),
        Kind::Int16 => Value::Int16(text.parse().map_err(|_| bad())?),
        Kind::Int32 => Value::Int32(text.parse().map_err(|_| bad())?),
        Kind::Int64 => Value::Int64(text.parse().map_err(|_| bad())?),
        Kind::Float32 => Value::Float32(float(text).ok_or_else(bad)? as f32),
        Kind::Float64 => Value::Float64(float(text).ok_or_else(bad)?),
        Kind::Decimal { scale, .. } => match decimal(text) {
            Some((unscaled, _)) => Value::Decimal { unscaled, scale: *scale as i32 },
            None => Value::Null,
        },
        Kind::Money => {
            let digits: String = text.chars().filter(|c| c.is_ascii_digit() || matches!(c, '.' | '-')).collect();
            let (unscaled, _) = decimal(&digits).ok_or_else(bad)?;
            Value::Decimal { unscaled, scale: 2 }
        }
        // Trailing zeros of the fraction go, as Java's stripTrailingZeros (never those of the
        // whole number: Debezium turns a negative scale back into 0).
        Kind::VariableDecimal => match decimal(&strip_fraction_zeros(text)) {
            Some((unscaled, scale)) => Value::Struct(vec![Value::Int32(scale), Value::Bytes(unscaled)]),
            None => Value::Null,
        },
        Kind::Text | Kind::NamedText(_) | Kind::Enum(_) => Value::String(text.to_string()),
        Kind::Bytes => Value::Bytes(bytea(text).ok_or_else(bad)?),
        Kind::Bits(_) => Value::Bytes(bits(text).ok_or_else(bad)?),
        Kind::Date => Value::Int32(date(text).ok_or_else(bad)?),
        Kind::TimeMillis => Value::Int32((time_micros(text).ok_or_else(bad)? / 1000) as i32),
        Kind::TimeMicros => Value::Int64(time_micros(text).ok_or_else(bad)?),
        Kind::TimeZoned => Value::String(zoned_time(text).ok_or_else(bad)?),
        Kind::TimestampMillis => Value::Int64(timestamp_micros(text).ok_or_else(bad)?.div_euclid(1000)),
        Kind::TimestampMicros => Value::Int64(timestamp_micros(text).ok_or_else(bad)?),
        Kind::TimestampZoned(digits) => Value::String(zoned_timestamp(text, *digits).ok_or_else(bad)?),
        Kind::Interval => Value::Int64(interval_micros(text).ok_or_else(bad)?),
        Kind::DecimalDouble => {
            Value::Float64(float(text.trim_start_matches('$').replace(',', "").as_str()).ok_or_else(bad)?)
        }
        Kind::DecimalText(_) => Value::String(text.to_string()),
        Kind::ConnectDate => Value::Int32(date(text).ok_or_else(bad)?),
        Kind::ConnectTime => Value::Int32((time_micros(text).ok_or_else(bad)? / 1000) as i32),
        Kind::ConnectTimestamp => Value::Int64(timestamp_micros(text).ok_or_else(bad)?.div_euclid(1000)),
        Kind::TimeNanos => Value::Int64(time_micros(text).ok_or_else(bad)? * 1000),
        Kind::TimestampNanos => Value::Int64(timestamp_micros(text).ok_or_else(bad)?.saturating_mul(1000)),
        Kind::IsoDate => Value::String(iso_date(date(text).ok_or_else(bad)?)),
        Kind::IsoTime => Value::String(iso_time(time_micros(text).ok_or_else(bad)?)),
        Kind::IsoTimestamp => Value::String(iso_timestamp(timestamp_micros(text).ok_or_else(bad)?)),
        Kind::BytesText(mode) => {
            let bytes = bytea(text).ok_or_else(bad)?;
            Value::String(match mode {
                BinaryMode::Hex => bytes.iter().map(|b| format!("{b:02x}")).collect(),
                BinaryMode::Base64UrlSafe => base64(&bytes, true),
                _ => base64(&bytes, false),
            })
        }
        Kind::IntervalText => Value::String(interval_text(text).ok_or_else(bad)?),
        Kind::HstoreJson => Value::String(hstore_json(&hstore(text).ok_or_else(bad)?)),
        Kind::HstoreMap => Value::Map(
            hstore(text)
                .ok_or_else(bad)?
                .into_iter()
                .map(|(k, v)| (Value::String(k), v.map_or(Value::Null, Value::String)))
                .collect(),
        ),
        Kind::Array(element) => {
            let mut values = Vec::new();
            for item in array_items(text).ok_or_else(bad)? {
                values.push(match item {
                    None => Value::Null,
                    Some(item) => value_of(element, &item)?,
                });
            }
            Value::Array(values)
        }
    })
}

/// The placeholder of an unchanged TOASTed value in a column of `kind`.
pub fn unavailable(kind: &Kind) -> Value {
    match kind {
        Kind::Bytes | Kind::Bits(_) => Value::Bytes(UNAVAILABLE.as_bytes().to_vec()),
        Kind::Array(element) => Value::Array(vec![unavailable(element)]),
        _ => Value::String(UNAVAILABLE.to_string()),
    }
}

/// The value Debezium writes for a null in a column that may not be null (a delete's old row
/// holds only the key's columns): the type's zero.
pub fn fallback(kind: &Kind) -> Value {
    match kind {
        Kind::Boolean | Kind::Bit => Value::Boolean(false),
        Kind::Int16 => Value::Int16(0),
        Kind::Int32 | Kind::Date | Kind::TimeMillis => Value::Int32(0),
        Kind::Int64 | Kind::TimeMicros | Kind::TimestampMillis | Kind::TimestampMicros | Kind::Interval => {
            Value::Int64(0)
        }
        Kind::Float32 => Value::Float32(0.0),
        Kind::Float64 => Value::Float64(0.0),
        Kind::Decimal { scale, .. } => Value::Decimal { unscaled: vec![0], scale: *scale as i32 },
        Kind::Money => Value::Decimal { unscaled: vec![0], scale: 2 },
        Kind::VariableDecimal => Value::Struct(vec![Value::Int32(0), Value::Bytes(vec![0])]),
        Kind::Bytes | Kind::Bits(_) => Value::Bytes(Vec::new()),
        Kind::Array(_) => Value::Array(Vec::new()),
        Kind::TimestampZoned(_) => Value::String("1970-01-01T00:00:00Z".into()),
        Kind::DecimalDouble => Value::Float64(0.0),
        Kind::ConnectDate | Kind::ConnectTime => Value::Int32(0),
        Kind::ConnectTimestamp | Kind::TimeNanos | Kind::TimestampNanos => Value::Int64(0),
        Kind::IntervalText => Value::String("P0Y0M0DT0H0M0S".into()),
        Kind::HstoreJson => Value::String("{}".into()),
        Kind::HstoreMap => Value::Map(Vec::new()),
        Kind::DecimalText(_) | Kind::BytesText(_) | Kind::IsoDate | Kind::IsoTime | Kind::IsoTimestamp => {
            Value::String(String::new())
        }
        Kind::Text | Kind::NamedText(_) | Kind::Enum(_) | Kind::TimeZoned => Value::String(String::new()),
    }
}

/// A column's default as Debezium reads it (its `PostgresDefaultValueConverter`): a literal's
/// value; for a function (`nextval(…)`, `now()`, `gen_random_uuid()`, `CURRENT_TIMESTAMP`) the
/// type's zero; none for `NULL::…`, for types Debezium gives no default (arrays, bytea, timetz,
/// money, `numeric` without a scale, …) and for what does not parse.
pub fn default_of(kind: &Kind, oid: u32, expression: Option<&str>) -> Option<Value> {
    let expression = expression?.trim();
    // The zero each type's parser is given for a function.
    let placeholder = match oid {
        21 | 23 | 20 => "0",
        700 | 701 | 1700 => "0.0",
        16 => "false",
        1560 | 1562 => "00",
        25 | 1043 | 1042 | 142 => "",
        114 | 3802 => "{}",
        2950 => "00000000-0000-0000-0000-000000000000",
        1082 | 1114 | 1184 => "1970-01-01",
        1083 => "00:00",
        1186 => "epoch",
        _ if matches!(kind, Kind::Enum(_)) => "",
        _ => return None,
    };
    let function = {
        let lower = expression.to_ascii_lowercase();
        is_function_call(expression)
            || matches!(
                lower.as_str(),
                "current_timestamp" | "current_time" | "current_date" | "localtime" | "localtimestamp"
            )
    };
    if matches!(kind, Kind::Enum(_)) {
        // `'label'::type`; a function gives none.
        if function {
            return None;
        }
        let (label, cast) = expression.strip_prefix('\'')?.split_once('\'')?;
        return cast.starts_with("::").then(|| Value::String(label.to_string()));
    }
    let text: Option<String> = if function {
        Some(placeholder.to_string())
    } else if !expression.contains('\'') {
        (!expression.starts_with("NULL::")).then(|| expression.to_string())
    } else {
        let start = expression.find('\'')? + 1;
        let end = start + expression[start..].find('\'')?;
        Some(expression[start..end].to_string())
    };
    let Some(text) = text else {
        // `NULL::interval` reads as an interval of zero.
        return (*kind == Kind::Interval).then_some(Value::Int64(0));
    };
    let text = text.as_str();
    Some(match kind {
        Kind::Int16 => Value::Int16(text.parse().ok()?),
        Kind::Int32 => Value::Int32(text.parse().ok()?),
        Kind::Int64 => Value::Int64(text.parse().ok()?),
        Kind::Float32 => Value::Float32(text.parse().ok()?),
        Kind::Float64 => Value::Float64(text.parse().ok()?),
        Kind::Decimal { scale, .. } => {
            let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
            let fraction = fraction.trim_end_matches('0');
            if fraction.len() > *scale as usize {
                return None;
            }
            let padded = format!("{whole}.{fraction:0<width$}", width = *scale as usize);
            let (unscaled, _) = decimal(padded.trim_end_matches('.'))?;
            Value::Decimal { unscaled, scale: *scale as i32 }
        }
        Kind::Boolean => Value::Boolean(text.eq_ignore_ascii_case("true")),
        Kind::Bit => Value::Boolean(text == "1"),
        Kind::Bits(_) => Value::Bytes(bits(text)?),
        Kind::Text | Kind::NamedText(_) => {
            if oid == 2950 && !is_uuid(text) {
                return None;
            }
            Value::String(text.to_string())
        }
        Kind::Date => Value::Int32(date(text)?),
        Kind::TimeMillis => Value::Int32((time_micros(text)? / 1000) as i32),
        Kind::TimeMicros => Value::Int64(time_micros(text)?),
        Kind::TimestampMillis => Value::Int64(timestamp_micros(&with_time(text))?.div_euclid(1000)),
        Kind::TimestampMicros => Value::Int64(timestamp_micros(&with_time(text))?),
        Kind::TimestampZoned(digits) => {
            let text = with_time(text);
            let zoned =
                if split_offset(&text).is_some_and(|(t, _)| t.contains(' ')) { text } else { format!("{text}+00") };
            Value::String(zoned_timestamp(&zoned, *digits)?)
        }
        Kind::Interval if text == "epoch" => Value::Int64(0),
        Kind::Interval => Value::Int64(interval_micros(text)?),
        Kind::IntervalText if text == "epoch" => Value::String("P0Y0M0DT0H0M0S".into()),
        Kind::IntervalText => Value::String(interval_text(text)?),
        Kind::DecimalDouble if oid == 1700 && !matches!(kind_of(oid, -1, "", None), Some(Kind::Decimal { .. })) => {
            Value::Float64(text.parse().ok()?)
        }
        Kind::DecimalText(scale) => {
            let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
            match scale {
                Some(scale) if fraction.len() < *scale as usize => {
                    Value::String(format!("{whole}.{fraction:0<width$}", width = *scale as usize))
                }
                _ => Value::String(text.to_string()),
            }
        }
        Kind::ConnectDate => Value::Int32(date(text)?),
        Kind::ConnectTime => Value::Int32((time_micros(text)? / 1000) as i32),
        Kind::ConnectTimestamp => Value::Int64(timestamp_micros(&with_time(text))?.div_euclid(1000)),
        Kind::TimeNanos => Value::Int64(time_micros(text)? * 1000),
        Kind::TimestampNanos => Value::Int64(timestamp_micros(&with_time(text))?.saturating_mul(1000)),
        Kind::IsoDate => Value::String(iso_date(date(text)?)),
        Kind::IsoTime => Value::String(iso_time(time_micros(text)?)),
        Kind::IsoTimestamp => Value::String(iso_timestamp(timestamp_micros(&with_time(text))?)),
        _ => return None,
    })
}

/// Whether an expression starts as a function call does: a name, then parentheses.
fn is_function_call(expression: &str) -> bool {
    let rest = expression.strip_prefix('(').unwrap_or(expression);
    let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(rest.len());
    name_end > 0 && rest[name_end..].starts_with('(') && rest[name_end..].contains(')')
}

/// A date alone as a timestamp at midnight.
fn with_time(text: &str) -> String {
    if text.contains(' ') || text.contains('T') {
        text.replacen('T', " ", 1)
    } else {
        format!("{text} 00:00:00")
    }
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

fn float(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => text.parse().ok(),
    }
}

/// A decimal's unscaled integer (big-endian two's complement, shortest, as Java's BigInteger
/// writes it) and its scale; none for NaN and the infinities, which a decimal cannot hold.
pub fn decimal(text: &str) -> Option<(Vec<u8>, i32)> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() || !whole.chars().chain(fraction.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    // The magnitude, little-endian base 256, built digit by digit.
    let mut magnitude: Vec<u8> = vec![0];
    for digit in whole.bytes().chain(fraction.bytes()) {
        let mut carry = u32::from(digit - b'0');
        for byte in magnitude.iter_mut() {
            let next = u32::from(*byte) * 10 + carry;
            *byte = (next & 0xff) as u8;
            carry = next >> 8;
        }
        while carry > 0 {
            magnitude.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    // One more byte for the sign, then two's complement when negative.
    magnitude.push(0);
    if negative {
        let mut carry = 1u16;
        for byte in magnitude.iter_mut() {
            let next = u16::from(!*byte) + carry;
            *byte = (next & 0xff) as u8;
            carry = next >> 8;
        }
    }
    magnitude.reverse();
    let mut start = 0;
    while start + 1 < magnitude.len() {
        let (b, next) = (magnitude[start], magnitude[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    Some((magnitude[start..].to_vec(), i32::try_from(fraction.len()).ok()?))
}

fn strip_fraction_zeros(text: &str) -> String {
    match text.split_once('.') {
        Some((whole, fraction)) => {
            let fraction = fraction.trim_end_matches('0');
            if fraction.is_empty() {
                whole.to_string()
            } else {
                format!("{whole}.{fraction}")
            }
        }
        None => text.to_string(),
    }
}

fn bytea(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// Bits as Java's `BitSet.toByteArray` gives them: the last bit is bit 0 of the first byte.
fn bits(text: &str) -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; text.len().div_ceil(8)];
    for (i, c) in text.bytes().rev().enumerate() {
        match c {
            b'1' => bytes[i / 8] |= 1 << (i % 8),
            b'0' => {}
            _ => return None,
        }
    }
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    Some(bytes)
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `2024-01-31` (with ` BC` for years before 1) as days from 1970-01-01.
fn date(text: &str) -> Option<i32> {
    let (text, bc) = match text.strip_suffix(" BC") {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    let mut parts = text.splitn(3, '-');
    let mut year: i64 = parts.next()?.parse().ok()?;
    if bc {
        year = 1 - year;
    }
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    i32::try_from(days_from_civil(year, month, day)).ok()
}

/// `13:45:01.123456` as microseconds of the day.
fn time_micros(text: &str) -> Option<i64> {
    let mut parts = text.splitn(3, ':');
    let hours: i64 = parts.next()?.parse().ok()?;
    let minutes: i64 = parts.next()?.parse().ok()?;
    let seconds = parts.next()?;
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let whole: i64 = whole.parse().ok()?;
    let mut micros = 0i64;
    for (i, c) in fraction.chars().take(6).enumerate() {
        micros += i64::from(c.to_digit(10)?) * 10i64.pow(5 - i as u32);
    }
    Some(((hours * 60 + minutes) * 60 + whole) * 1_000_000 + micros)
}

/// A zone offset at the end of a time (`+02`, `-05:30`, `+05:45:10`), as seconds; the text
/// before it.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    let at = text.rfind(['+', '-'])?;
    let (time, offset) = text.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let mut seconds = 0;
    for (i, part) in offset[1..].split(':').enumerate() {
        let n: i64 = part.parse().ok()?;
        seconds += n * [3600, 60, 1].get(i)?;
    }
    Some((time, sign * seconds))
}

/// `2024-01-31 13:45:01.123456` as microseconds from the epoch.
fn timestamp_micros(text: &str) -> Option<i64> {
    let (text, bc) = match text.strip_suffix(" BC") {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    let (day, time) = text.split_once(' ')?;
    let day = if bc { date(&format!("{day} BC"))? } else { date(day)? };
    Some(i64::from(day) * 86_400_000_000 + time_micros(time)?)
}

/// The fraction of a second as Debezium's ISO formats write it: none when zero, else every
/// digit up to the last that is not zero.
fn fraction(micros: i64) -> String {
    if micros == 0 {
        return String::new();
    }
    let digits = format!(".{micros:06}");
    digits.trim_end_matches('0').to_string()
}

/// `2024-01-31 13:45:01.5+02` as Debezium's `ZonedTimestamp` of a column of precision `digits`:
/// `2024-01-31T11:45:01.500000Z` (6), `2024-01-31T11:45:01Z` (0). `infinity` stays as it is.
fn zoned_timestamp(text: &str, digits: u32) -> Option<String> {
    if matches!(text, "infinity" | "-infinity") {
        return Some(text.to_string());
    }
    let (local, offset) = split_offset(text)?;
    let utc = timestamp_micros(local)? - offset * 1_000_000;
    let days = utc.div_euclid(86_400_000_000);
    let of_day = utc.rem_euclid(86_400_000_000);
    let (year, month, day) = civil_from_days(days);
    let seconds = of_day / 1_000_000;
    let fraction = match digits {
        0 => String::new(),
        d => format!(".{:06}", of_day % 1_000_000)[..1 + d as usize].to_string(),
    };
    let year = if year > 9999 { format!("+{year}") } else { format!("{year:04}") };
    Some(format!(
        "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    ))
}

/// `13:45:01.5+02` as Debezium's `ZonedTime`: `11:45:01.5Z`.
fn zoned_time(text: &str) -> Option<String> {
    let (local, offset) = split_offset(text)?;
    let utc = (time_micros(local)? - offset * 1_000_000).rem_euclid(86_400_000_000);
    let seconds = utc / 1_000_000;
    Some(format!("{:02}:{:02}:{:02}{}Z", seconds / 3600, seconds / 60 % 60, seconds % 60, fraction(utc % 1_000_000)))
}

/// An interval in PostgreSQL's default style (`1 year 2 mons -3 days +04:05:06.5`) as
/// microseconds, computed as Debezium's `MicroDuration` does: a month of 365.25 / 12 days, in
/// floating point, truncated.
fn interval_micros(text: &str) -> Option<i64> {
    let (mut years, mut months, mut days, mut hours, mut minutes, mut seconds) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut words = text.split_whitespace();
    while let Some(word) = words.next() {
        if word.contains(':') {
            let (sign, clock) = match word.strip_prefix('-') {
                Some(rest) => (-1.0, rest),
                None => (1.0, word.strip_prefix('+').unwrap_or(word)),
            };
            let mut parts = clock.splitn(3, ':');
            hours = sign * parts.next()?.parse::<f64>().ok()?;
            minutes = sign * parts.next()?.parse::<f64>().ok()?;
            seconds = sign * parts.next().unwrap_or("0").parse::<f64>().ok()?;
            continue;
        }
        let n: f64 = word.parse().ok()?;
        match words.next()?.trim_end_matches('s') {
            "year" => years = n,
            "mon" => months = n,
            "day" => days = n,
            _ => return None,
        }
    }
    let total =
        (((((years * 12.0 + months) * (365.25 / 12.0) + days) * 24.0 + hours) * 60.0 + minutes) * 60.0 + seconds) * 1e6;
    Some(total as i64)
}

/// The items of a one-dimensional array's text form (`{1,2,NULL}`, `{"a b","c\"d"}`); none
/// for NULL.
fn array_items(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    let mut items = Vec::new();
    if inner.is_empty() {
        return Some(items);
    }
    let mut chars = inner.chars().peekable();
    loop {
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next()? {
                    '\\' => item.push(chars.next()?),
                    '"' => break,
                    c => item.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' {
                    return None; // arrays of more than one dimension
                }
                item.push(c);
                chars.next();
            }
        }
        items.push(if !quoted && item == "NULL" { None } else { Some(item) });
        match chars.next() {
            None => return Some(items),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

/// `decimal.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecimalMode {
    #[default]
    Precise,
    Double,
    String,
}

/// `time.precision.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeMode {
    #[default]
    Adaptive,
    AdaptiveTimeMicroseconds,
    Connect,
    IsoString,
    Microseconds,
    Nanoseconds,
}

/// `binary.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BinaryMode {
    #[default]
    Bytes,
    Base64,
    Base64UrlSafe,
    Hex,
}

/// How the config asks for values of the kinds Debezium offers modes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    pub decimal: DecimalMode,
    pub time: TimeMode,
    pub binary: BinaryMode,
    /// `interval.handling.mode=string`: ISO 8601 text in place of microseconds.
    pub interval_text: bool,
    /// `hstore.handling.mode=map`: a map in place of JSON text.
    pub hstore_map: bool,
}

/// The kind of a column of type `oid` under `modes`: `kind_of`'s, with each mode applied.
pub fn kind_with(oid: u32, modifier: i32, type_name: &str, labels: Option<&str>, modes: &Modes) -> Option<Kind> {
    let kind = kind_of(oid, modifier, type_name, labels)?;
    Some(apply(kind, oid, type_name, modes))
}

fn apply(kind: Kind, oid: u32, type_name: &str, modes: &Modes) -> Kind {
    let time = |adaptive: Kind, micros: Kind, nanos: Kind, connect: Kind, iso: Kind| match modes.time {
        TimeMode::Adaptive => adaptive,
        TimeMode::Microseconds => micros,
        TimeMode::Nanoseconds => nanos,
        TimeMode::Connect => connect,
        TimeMode::IsoString => iso,
        TimeMode::AdaptiveTimeMicroseconds => adaptive,
    };
    match kind {
        Kind::Decimal { .. } | Kind::VariableDecimal | Kind::Money => match modes.decimal {
            DecimalMode::Precise => kind,
            DecimalMode::Double => Kind::DecimalDouble,
            DecimalMode::String => Kind::DecimalText(match kind {
                Kind::Decimal { scale, .. } => Some(scale),
                Kind::Money => Some(2),
                _ => None,
            }),
        },
        Kind::Date => time(Kind::Date, Kind::Date, Kind::Date, Kind::ConnectDate, Kind::IsoDate),
        Kind::TimeMillis | Kind::TimeMicros => {
            if modes.time == TimeMode::AdaptiveTimeMicroseconds {
                return Kind::TimeMicros;
            }
            time(kind, Kind::TimeMicros, Kind::TimeNanos, Kind::ConnectTime, Kind::IsoTime)
        }
        Kind::TimestampMillis | Kind::TimestampMicros => {
            time(kind, Kind::TimestampMicros, Kind::TimestampNanos, Kind::ConnectTimestamp, Kind::IsoTimestamp)
        }
        Kind::Bytes if modes.binary != BinaryMode::Bytes => Kind::BytesText(modes.binary),
        Kind::Interval if modes.interval_text => Kind::IntervalText,
        Kind::NamedText(_) if type_name == "hstore" => {
            if modes.hstore_map {
                Kind::HstoreMap
            } else {
                Kind::HstoreJson
            }
        }
        Kind::Array(element) => {
            let element_oid = match oid {
                1182 => 1082,
                1115 => 1114,
                1001 => 17,
                1231 => 1700,
                _ => 0,
            };
            Kind::Array(Box::new(apply(*element, element_oid, "", modes)))
        }
        other => other,
    }
}

/// Text as Debezium's ISO 8601 interval (`io.debezium.time.Interval`): `P1Y2M3DT4H5M6.789S`.
fn interval_text(text: &str) -> Option<String> {
    let (mut years, mut months, mut days, mut hours, mut minutes, mut seconds) = (0i64, 0i64, 0i64, 0i64, 0i64, 0.0f64);
    let mut words = text.split_whitespace();
    while let Some(word) = words.next() {
        if word.contains(':') {
            let (sign, clock) = match word.strip_prefix('-') {
                Some(rest) => (-1, rest),
                None => (1, word.strip_prefix('+').unwrap_or(word)),
            };
            let mut parts = clock.splitn(3, ':');
            hours = sign * parts.next()?.parse::<i64>().ok()?;
            minutes = sign * parts.next()?.parse::<i64>().ok()?;
            seconds = f64::from(sign as i32) * parts.next().unwrap_or("0").parse::<f64>().ok()?;
            continue;
        }
        let n: i64 = word.parse().ok()?;
        match words.next()?.trim_end_matches('s') {
            "year" => years = n,
            "mon" => months = n,
            "day" => days = n,
            _ => return None,
        }
    }
    // Java's BigDecimal.valueOf(seconds).stripTrailingZeros().toPlainString().
    let mut seconds = format!("{seconds}");
    if seconds.contains('.') {
        seconds = seconds.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if seconds == "-0" {
        seconds = "0".into();
    }
    Some(format!("P{years}Y{months}M{days}DT{hours}H{minutes}M{seconds}S"))
}

/// An hstore's text (`"a"=>"1", "b"=>NULL`) as its pairs, in the order a Java `HashMap` iterates
/// them, which is the order Debezium writes them in.
fn hstore(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut pairs: Vec<(String, Option<String>)> = Vec::new();
    let mut chars = text.chars().peekable();
    let quoted = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Option<String> {
        let mut out = String::new();
        loop {
            match chars.next()? {
                '\\' => out.push(chars.next()?),
                '"' => return Some(out),
                c => out.push(c),
            }
        }
    };
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        if chars.next()? != '"' {
            return None;
        }
        let key = quoted(&mut chars)?;
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next()? != '=' || chars.next()? != '>' {
            return None;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let value = if chars.peek() == Some(&'"') {
            chars.next();
            Some(quoted(&mut chars)?)
        } else {
            let word: String = std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_alphabetic())).collect();
            if !word.eq_ignore_ascii_case("null") {
                return None;
            }
            None
        };
        match pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(pair) => pair.1 = value,
            None => pairs.push((key, value)),
        }
    }
    Some(java_hash_map_order(pairs))
}

/// Java's `String.hashCode`, over UTF-16 code units.
fn java_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

/// The order a `java.util.HashMap` (default capacity and load factor) iterates keys inserted in
/// this order: by bucket of the final table, and in insertion order within a bucket.
pub fn java_hash_map_order<V>(pairs: Vec<(String, V)>) -> Vec<(String, V)> {
    let spread = |key: &str| {
        let h = java_hash(key) as u32;
        h ^ (h >> 16)
    };
    let mut capacity: usize = 16;
    let mut buckets: Vec<usize> = Vec::with_capacity(pairs.len());
    // Entries per bin of the table as it is now, kept as entries come and the table grows.
    let mut chains = vec![0u32; capacity];
    for (i, (key, _)) in pairs.iter().enumerate() {
        let hash = spread(key) as usize;
        buckets.push(hash);
        chains[hash & (capacity - 1)] += 1;
        let size = i + 1;
        // A bin of nine entries in a table under 64 makes the table grow instead of a tree.
        if size * 4 > capacity * 3 || (chains[hash & (capacity - 1)] > 8 && capacity < 64) {
            capacity *= 2;
            chains = vec![0u32; capacity];
            for b in &buckets {
                chains[b & (capacity - 1)] += 1;
            }
        }
    }
    let mut indexed: Vec<(usize, usize, (String, V))> =
        pairs.into_iter().enumerate().map(|(i, pair)| (buckets[i] & (capacity - 1), i, pair)).collect();
    indexed.sort_by_key(|(bucket, i, _)| (*bucket, *i));
    indexed.into_iter().map(|(_, _, pair)| pair).collect()
}

/// JSON text of an hstore's pairs, as Jackson writes a map of strings.
fn hstore_json(pairs: &[(String, Option<String>)]) -> String {
    let string = |s: &str| {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    };
    let fields: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", string(k), v.as_deref().map_or("null".to_string(), string)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn base64(bytes: &[u8], url_safe: bool) -> String {
    let alphabet: &[u8; 64] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// ISO 8601 forms of Debezium's `isostring` mode.
fn iso_date(days: i32) -> String {
    let (year, month, day) = civil_from_days(i64::from(days));
    format!("{year:04}-{month:02}-{day:02}Z")
}

fn iso_time(micros: i64) -> String {
    let seconds = micros / 1_000_000;
    format!("{:02}:{:02}:{:02}{}Z", seconds / 3600, seconds / 60 % 60, seconds % 60, fraction(micros % 1_000_000))
}

fn iso_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(86_400_000_000);
    let (year, month, day) = civil_from_days(days);
    let time = iso_time(micros.rem_euclid(86_400_000_000));
    format!("{year:04}-{month:02}-{day:02}T{time}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn decimals_are_java_big_integers() {
        assert_eq!(decimal("123.45"), Some((vec![0x30, 0x39], 2)));
        assert_eq!(decimal("-1"), Some((vec![0xff], 0)));
        assert_eq!(decimal("128"), Some((vec![0x00, 0x80], 0)));
        assert_eq!(decimal("-128"), Some((vec![0x80], 0)));
        assert_eq!(decimal("0.000"), Some((vec![0], 3)));
        assert_eq!(decimal("NaN"), None);
        let (big, _) = decimal("123456789012345678901234567890").unwrap();
        assert_eq!(big, vec![0x01, 0x8E, 0xE9, 0x0F, 0xF6, 0xC3, 0x73, 0xE0, 0xEE, 0x4E, 0x3F, 0x0A, 0xD2]);
    }

    #[test]
    fn times_read_as_debezium_counts_them() {
        assert_eq!(date("1970-01-02"), Some(1));
        assert_eq!(date("2024-02-29"), Some(19782));
        assert_eq!(time_micros("13:45:01.5"), Some(49_501_500_000));
        assert_eq!(timestamp_micros("2024-02-29 00:00:01"), Some(19782 * 86_400_000_000 + 1_000_000));
        assert_eq!(zoned_timestamp("2024-02-29 01:00:00.123+02", 6).unwrap(), "2024-02-28T23:00:00.123000Z");
        assert_eq!(zoned_timestamp("2024-02-29 01:00:00+00", 6).unwrap(), "2024-02-29T01:00:00.000000Z");
        assert_eq!(zoned_timestamp("2024-02-29 01:00:00.9+00", 0).unwrap(), "2024-02-29T01:00:00Z");
        assert_eq!(zoned_time("01:00:00.5-05:30").unwrap(), "06:30:00.5Z");
        assert_eq!(interval_micros("1 day 01:00:00"), Some(90_000_000_000));
        assert_eq!(interval_micros("1 mon -00:00:01"), Some(2_629_800_000_000 - 1_000_000));
    }

    #[test]
    fn arrays_bytes_and_bits_parse() {
        assert_eq!(
            array_items(r#"{1,NULL,"a b","c\"d"}"#).unwrap(),
            vec![Some("1".into()), None, Some("a b".into()), Some("c\"d".into())]
        );
        assert_eq!(array_items("{}").unwrap(), Vec::<Option<String>>::new());
        assert_eq!(bytea("\\x00ff").unwrap(), vec![0, 255]);
        assert_eq!(bits("1000000001").unwrap(), vec![0x01, 0x02]);
    }

    #[test]
    fn modes_write_as_debezium_writes_them() {
        assert_eq!(interval_text("1 year 2 mons 3 days 04:05:06.789").unwrap(), "P1Y2M3DT4H5M6.789S");
        assert_eq!(interval_text("-1 days +02:00:00").unwrap(), "P0Y0M-1DT2H0M0S");
        assert_eq!(interval_text("00:00:00").unwrap(), "P0Y0M0DT0H0M0S");
        assert_eq!(base64(&[0, 255, 16], false), "AP8Q");
        assert_eq!(base64(&[251, 255], true), "-_8=");
        assert_eq!(iso_timestamp(1_000_500), "1970-01-01T00:00:01.0005Z");
        assert_eq!(iso_date(19782), "2024-02-29Z");
        // Java: {"b":"2","a":"1"} has "a" (hash 97) before "b" (98) in a table of 16.
        let pairs = hstore(r#""b"=>"2", "a"=>"1", "c"=>NULL"#).unwrap();
        assert_eq!(hstore_json(&pairs), r#"{"a":"1","b":"2","c":null}"#);
        // "Aa" and "BB" share a hash: insertion order within the bucket.
        let pairs = hstore(r#""BB"=>"x", "Aa"=>"y""#).unwrap();
        assert_eq!(hstore_json(&pairs), r#"{"BB":"x","Aa":"y"}"#);
        assert_eq!(hstore(r#""k\"q"=>"v\\w""#).unwrap(), vec![("k\"q".to_string(), Some("v\\w".to_string()))]);
    }

    #[test]
    fn defaults_read_as_debezium_reads_them() {
        let int = Kind::Int32;
        assert_eq!(default_of(&int, 23, Some("nextval('t_id_seq'::regclass)")), Some(Value::Int32(0)));
        assert_eq!(default_of(&int, 23, Some("'-1'::integer")), Some(Value::Int32(-1)));
        assert_eq!(default_of(&int, 23, Some("(-1)")), None);
        assert_eq!(default_of(&int, 23, Some("NULL::integer")), None);
        assert_eq!(default_of(&Kind::Text, 25, Some("'new'::text")), Some(Value::String("new".into())));
        assert_eq!(default_of(&Kind::Text, 25, Some("CURRENT_USER")), Some(Value::String("CURRENT_USER".into())));
        let money = Kind::Decimal { precision: 10, scale: 2 };
        assert_eq!(default_of(&money, 1700, Some("1.5")), Some(Value::Decimal { unscaled: vec![0, 150], scale: 2 }));
        assert_eq!(default_of(&money, 1700, Some("now()")), Some(Value::Decimal { unscaled: vec![0], scale: 2 }));
        assert_eq!(default_of(&Kind::TimestampMicros, 1114, Some("now()")), Some(Value::Int64(0)));
        assert_eq!(
            default_of(&Kind::TimestampZoned(6), 1184, Some("CURRENT_TIMESTAMP")),
            Some(Value::String("1970-01-01T00:00:00.000000Z".into()))
        );
        assert_eq!(
            default_of(&Kind::TimestampZoned(6), 1184, Some("'2021-03-20 14:44:28+01'::timestamp with time zone")),
            Some(Value::String("2021-03-20T13:44:28.000000Z".into()))
        );
        assert_eq!(default_of(&Kind::Date, 1082, Some("'2024-01-01'::date")), Some(Value::Int32(19723)));
        assert_eq!(default_of(&Kind::Interval, 1186, Some("NULL::interval")), Some(Value::Int64(0)));
        let mood = Kind::Enum("sad,ok".into());
        assert_eq!(default_of(&mood, 16500, Some("'ok'::mood")), Some(Value::String("ok".into())));
        assert_eq!(default_of(&Kind::Bytes, 17, Some("'\\x00'::bytea")), None);
        assert_eq!(
            default_of(&Kind::NamedText("io.debezium.data.Uuid"), 2950, Some("gen_random_uuid()")),
            Some(Value::String("00000000-0000-0000-0000-000000000000".into()))
        );
    }
}
