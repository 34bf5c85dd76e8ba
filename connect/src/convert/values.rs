//! Kafka Connect's text form of data, as its `Values.convertToString` writes it and
//! `Values.parseString` reads it: what `SimpleHeaderConverter` puts in a header's bytes.
//!
//! Writing: numbers and booleans as Java prints them, strings as they are (inside arrays, maps
//! and structs quoted, with `\` and `"` escaped), bytes in base64, `[a,b]`, `{k:v}`, a struct as
//! `{"field":value}`, and `Date`, `Time` and `Timestamp` values in ISO 8601 (`2024-05-01`,
//! `12:30:00.000Z`, `2024-05-01T12:30:00.000Z`, chosen by the instant as Connect chooses).
//!
//! Reading infers a schema: `true`/`false` are booleans; a whole number takes the smallest of
//! int8…int64 it fits; other numbers are float32, float64 or a `Decimal`; ISO dates, times and
//! timestamps are logical values; `[…]` is an array and `{…}` a map whose elements share a
//! schema (numbers widen); anything else, and anything that does not parse, is the string
//! itself. Times are UTC (Connect uses the JVM's zone; run it in UTC to get the same bytes).
//! Like Connect, a lenient date parse rolls over (`2024-02-30` is March 1st). One difference:
//! a date among values of other types in an array or map (`["2024-01-02","x"]`) has no schema
//! to say it is a date, so it reads as its milliseconds since the epoch (an int64). Nesting is
//! bounded (`MAX_TEXT_DEPTH`), where Connect's bound is its thread's stack.

use std::sync::Arc;

use base64::Engine;

use crate::data::{Data, DataError, Decimal, Logical, Schema, Type, Value};

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const MILLIS_PER_DAY: i64 = 86_400_000;

/// How deep arrays and maps may nest in text that is read; deeper text is kept as bytes (as
/// Connect keeps it when its parser runs out of stack).
pub const MAX_TEXT_DEPTH: usize = 200;

/// Writes `value` (of `schema`, if any) in Connect's text form; none for a null value.
pub fn to_text(schema: Option<&Schema>, value: &Value) -> Result<Option<Vec<u8>>, DataError> {
    if *value == Value::Null {
        return Ok(None);
    }
    let mut out = Vec::new();
    append(&mut out, schema, value, false)?;
    Ok(Some(out))
}

fn append(out: &mut Vec<u8>, schema: Option<&Schema>, value: &Value, embedded: bool) -> Result<(), DataError> {
    let logical = schema.and_then(Schema::logical);
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int32(days) if logical == Some(Logical::Date) => write_instant(out, *days as i64 * MILLIS_PER_DAY),
        Value::Int32(millis) if logical == Some(Logical::Time) => write_instant(out, *millis as i64),
        Value::Int64(millis) if logical == Some(Logical::Timestamp) => write_instant(out, *millis),
        Value::Int8(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Int16(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Int32(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Int64(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Float32(x) => super::json_text::write_float(out, *x),
        Value::Float64(x) => super::json_text::write_double(out, *x),
        Value::Decimal(d) => out.extend_from_slice(d.to_java_string().as_bytes()),
        Value::String(s) if embedded => {
            out.push(b'"');
            for b in s.bytes() {
                if b == b'\\' || b == b'"' {
                    out.push(b'\\');
                }
                out.push(b);
            }
            out.push(b'"');
        }
        Value::String(s) => out.extend_from_slice(s.as_bytes()),
        Value::Bytes(bytes) => {
            if embedded {
                out.push(b'"');
            }
            out.extend_from_slice(BASE64.encode(bytes).as_bytes());
            if embedded {
                out.push(b'"');
            }
        }
        Value::Array(elements) => {
            let element = schema.and_then(|s| s.value.as_deref());
            out.push(b'[');
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                append(out, element, e, true)?;
            }
            out.push(b']');
        }
        Value::Map(entries) => {
            let (k, v) = (schema.and_then(|s| s.key.as_deref()), schema.and_then(|s| s.value.as_deref()));
            out.push(b'{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                append(out, k, key, true)?;
                out.push(b':');
                append(out, v, value, true)?;
            }
            out.push(b'}');
        }
        Value::Struct(values) => {
            let Some(schema) = schema.filter(|s| s.kind == Type::Struct && s.fields.len() == values.len()) else {
                return Err(DataError::new("a struct value needs its struct schema to be written as text"));
            };
            out.push(b'{');
            for (i, (field, value)) in schema.fields.iter().zip(values).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                append(out, None, &Value::String(field.name.clone()), true)?;
                out.push(b':');
                append(out, Some(&field.schema), value, true)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// An instant as Connect's `Values.dateFormatFor` picks its form: a time of day before the end
/// of the epoch's first day (every earlier instant too), a date at a midnight, else a timestamp.
fn write_instant(out: &mut Vec<u8>, millis: i64) {
    let days = millis.div_euclid(MILLIS_PER_DAY);
    let of_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (h, m, s, ms) = (of_day / 3_600_000, of_day / 60_000 % 60, of_day / 1000 % 60, of_day % 1000);
    let text = if millis < MILLIS_PER_DAY {
        format!("{h:02}:{m:02}:{s:02}.{ms:03}Z")
    } else {
        let (year, month, day) = civil_from_days(days);
        if of_day == 0 {
            format!("{year:04}-{month:02}-{day:02}")
        } else {
            format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
        }
    };
    out.extend_from_slice(text.as_bytes());
}

/// The proleptic Gregorian date of a day counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Days from 1970-01-01 to the first of a month; the month may be outside 1…12 and rolls over.
fn days_from_civil(year: i64, month: i64) -> i64 {
    let year = year + (month - 1).div_euclid(12);
    let month = (month - 1).rem_euclid(12) + 1;
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Reads text as Connect's `Values.parseString` does. Text nested deeper than
/// `MAX_TEXT_DEPTH` is kept as bytes.
pub fn parse_text(text: &str, schemas: &Schemas) -> Data {
    if text.is_empty() {
        return Data::new(schemas.string.clone(), Value::String(String::new()));
    }
    let mut parser = Parser { tokens: Tokens { text, at: 0, peeked: None }, schemas };
    match parser.parse(false, 0) {
        Ok(Some((schema, parsed))) => {
            let value = parsed.into_value(Some(&schema));
            Data::new(schema, value)
        }
        Ok(None) => Data::NULL,
        Err(_) => Data::new(schemas.bytes.clone(), Value::Bytes(text.as_bytes().to_vec())),
    }
}

/// The schemas parsing hands out, made once per converter.
pub struct Schemas {
    boolean: Arc<Schema>,
    int8: Arc<Schema>,
    int16: Arc<Schema>,
    int32: Arc<Schema>,
    int64: Arc<Schema>,
    float32: Arc<Schema>,
    float64: Arc<Schema>,
    string: Arc<Schema>,
    pub(super) bytes: Arc<Schema>,
    date: Arc<Schema>,
    time: Arc<Schema>,
    timestamp: Arc<Schema>,
}

impl Default for Schemas {
    fn default() -> Self {
        let of = |kind| Arc::new(Schema::of(kind));
        Schemas {
            boolean: of(Type::Boolean),
            int8: of(Type::Int8),
            int16: of(Type::Int16),
            int32: of(Type::Int32),
            int64: of(Type::Int64),
            float32: of(Type::Float32),
            float64: of(Type::Float64),
            string: of(Type::String),
            bytes: of(Type::Bytes),
            date: Arc::new(Schema::date()),
            time: Arc::new(Schema::time()),
            timestamp: Arc::new(Schema::timestamp()),
        }
    }
}

/// A value as parsing holds it before its final schema is known: a date, time or timestamp is an
/// instant (milliseconds since the epoch), as Connect holds a `java.util.Date`.
#[derive(Debug, Clone, PartialEq)]
enum Parsed {
    Null,
    Boolean(bool),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(f32),
    Float64(f64),
    Decimal(Decimal),
    Text(String),
    Instant(i64),
    Array(Vec<Parsed>),
    Map(Vec<(Parsed, Parsed)>),
}

impl Parsed {
    fn into_value(self, schema: Option<&Schema>) -> Value {
        match self {
            Parsed::Null => Value::Null,
            Parsed::Boolean(b) => Value::Boolean(b),
            Parsed::Int8(n) => Value::Int8(n),
            Parsed::Int16(n) => Value::Int16(n),
            Parsed::Int32(n) => Value::Int32(n),
            Parsed::Int64(n) => Value::Int64(n),
            Parsed::Float32(x) => Value::Float32(x),
            Parsed::Float64(x) => Value::Float64(x),
            Parsed::Decimal(d) => Value::Decimal(d),
            Parsed::Text(s) => Value::String(s),
            Parsed::Instant(millis) => match schema.and_then(Schema::logical) {
                Some(Logical::Date) => Value::Int32(millis.div_euclid(MILLIS_PER_DAY) as i32),
                Some(Logical::Time) => Value::Int32(millis as i32),
                _ => Value::Int64(millis),
            },
            Parsed::Array(elements) => {
                let element = schema.and_then(|s| s.value.as_deref());
                Value::Array(elements.into_iter().map(|e| e.into_value(element)).collect())
            }
            Parsed::Map(entries) => {
                let (k, v) = (schema.and_then(|s| s.key.as_deref()), schema.and_then(|s| s.value.as_deref()));
                Value::Map(entries.into_iter().map(|(key, value)| (key.into_value(k), value.into_value(v))).collect())
            }
        }
    }

    /// The number as Java's `Number.longValue()`, for a value that is one.
    fn as_long(&self) -> Option<i64> {
        Some(match self {
            Parsed::Int8(n) => *n as i64,
            Parsed::Int16(n) => *n as i64,
            Parsed::Int32(n) => *n as i64,
            Parsed::Int64(n) => *n,
            Parsed::Float32(x) => *x as i64,
            Parsed::Float64(x) => *x as i64,
            _ => return None,
        })
    }

    fn as_double(&self) -> Option<f64> {
        Some(match self {
            Parsed::Float32(x) => *x as f64,
            Parsed::Float64(x) => *x,
            other => other.as_long()? as f64,
        })
    }
}

/// Why parsing stopped: text that is not what was tried (the caller falls back, as Connect's
/// `DataException` makes it), or nesting beyond `MAX_TEXT_DEPTH`.
#[derive(Debug)]
enum Failed {
    NotThis,
    TooDeep,
}

type Parse = Result<Option<(Arc<Schema>, Parsed)>, Failed>;

/// Java's `String.trim()`: every character up to the space goes.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// The text cut into tokens at the delimiters `:,{}[]"` that no `\` escapes, as Connect's
/// `Values.Parser` cuts it; one token may be looked at before it is taken.
struct Tokens<'a> {
    text: &'a str,
    at: usize,
    peeked: Option<&'a str>,
}

impl<'a> Tokens<'a> {
    fn take_token(&mut self) -> &'a str {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut escaped = false;
        let mut i = start;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => escaped = !escaped,
                b':' | b',' | b'{' | b'}' | b'[' | b']' | b'"' if !escaped => {
                    self.at = if start < i { i } else { i + 1 };
                    return &self.text[start..self.at];
                }
                _ => escaped = false,
            }
            i += 1;
        }
        self.at = bytes.len();
        &self.text[start..]
    }

    fn mark(&self) -> usize {
        self.at - self.peeked.map_or(0, str::len)
    }

    fn rewind(&mut self, to: usize) {
        self.at = to;
        self.peeked = None;
    }

    fn has_next(&self) -> bool {
        self.peeked.is_some() || self.at < self.text.len()
    }

    fn next(&mut self) -> &'a str {
        match self.peeked.take() {
            Some(token) => token,
            None => self.take_token(),
        }
    }

    /// The text of the next `n` tokens, or none (and nothing taken) if there are fewer.
    fn next_n(&mut self, n: usize) -> Option<&'a str> {
        let start = self.mark();
        for _ in 0..n {
            if !self.has_next() {
                self.rewind(start);
                return None;
            }
            self.next();
        }
        Some(&self.text[start..self.at])
    }

    /// Takes the next token if, trimmed, it is `expected`; tokens of blanks before it go.
    fn take_if(&mut self, expected: &str) -> bool {
        let mut token = match self.peeked {
            Some(token) => token,
            None if self.at < self.text.len() => self.take_token(),
            None => return false,
        };
        while java_trim(token).is_empty() && self.at < self.text.len() {
            token = self.take_token();
        }
        if java_trim(token) == expected {
            self.peeked = None;
            true
        } else {
            self.peeked = Some(token);
            false
        }
    }
}

struct Parser<'a, 's> {
    tokens: Tokens<'a>,
    schemas: &'s Schemas,
}

impl Parser<'_, '_> {
    fn parse(&mut self, embedded: bool, depth: usize) -> Parse {
        if depth > MAX_TEXT_DEPTH {
            return Err(Failed::TooDeep);
        }
        if !self.tokens.has_next() {
            return Ok(None);
        }
        if embedded && self.tokens.take_if("\"") {
            return Ok(Some(self.quoted()));
        }
        if self.literal(embedded, "null") {
            return Ok(None);
        }
        for (word, b) in [("true", true), ("false", false)] {
            if self.literal(embedded, word) {
                return Ok(Some((self.schemas.boolean.clone(), Parsed::Boolean(b))));
            }
        }
        let start = self.tokens.mark();
        let nested = if self.tokens.take_if("[") {
            Some(self.array(depth))
        } else if self.tokens.take_if("{") {
            Some(self.map(depth))
        } else {
            None
        };
        match nested {
            Some(Ok(parsed)) => return Ok(Some(parsed)),
            Some(Err(Failed::TooDeep)) => return Err(Failed::TooDeep),
            Some(Err(Failed::NotThis)) => self.tokens.rewind(start),
            None => {}
        }
        let token = self.tokens.next();
        if java_trim(token).is_empty() {
            return Ok(Some((self.schemas.string.clone(), Parsed::Text(token.to_string()))));
        }
        self.token(embedded, java_trim(token)).map(Some)
    }

    /// Whether the next token is the literal `word`, standing alone unless embedded.
    fn literal(&mut self, embedded: bool, word: &str) -> bool {
        let start = self.tokens.mark();
        if self.tokens.take_if(word) && (embedded || !self.tokens.has_next()) {
            return true;
        }
        self.tokens.rewind(start);
        false
    }

    fn token(&mut self, embedded: bool, token: &str) -> Result<(Arc<Schema>, Parsed), Failed> {
        let Some(&first) = token.as_bytes().first() else { return Err(Failed::NotThis) };
        if first.is_ascii_digit() {
            let at = self.tokens.mark();
            if let Some(rest) = self.tokens.next_n(4) {
                if let Some(instant) = self.temporal(&[token, rest]) {
                    return Ok(instant);
                }
            }
            self.tokens.rewind(at);
            if let Some(instant) = self.temporal(&[token]) {
                return Ok(instant);
            }
        }
        if first.is_ascii_digit() || first == b'+' || first == b'-' {
            if let Some(number) = self.number(token) {
                return Ok(number);
            }
        }
        if embedded {
            return Err(Failed::NotThis);
        }
        Ok((self.schemas.string.clone(), Parsed::Text(self.tokens.text.to_string())))
    }

    fn quoted(&mut self) -> (Arc<Schema>, Parsed) {
        let mut content = String::new();
        while self.tokens.has_next() {
            if self.tokens.take_if("\"") {
                break;
            }
            content.push_str(self.tokens.next());
        }
        match self.temporal(&[&content]) {
            Some(instant) => instant,
            None => (self.schemas.string.clone(), Parsed::Text(content)),
        }
    }

    fn array(&mut self, depth: usize) -> Result<(Arc<Schema>, Parsed), Failed> {
        let mut elements = Vec::new();
        let mut common = Merger::default();
        while self.tokens.has_next() {
            if self.tokens.take_if("]") {
                return Ok(match common.schema {
                    Some(element) => {
                        let aligned = elements.into_iter().map(|e| convert(&element, e)).collect::<Result<_, _>>()?;
                        (Arc::new(Schema::array(element)), Parsed::Array(aligned))
                    }
                    None => (Arc::new(Schema::of(Type::Array)), Parsed::Array(elements)),
                });
            }
            if self.tokens.take_if(",") {
                return Err(Failed::NotThis);
            }
            let element = self.parse(true, depth + 1)?;
            common.merge(element.as_ref().map(|(s, _)| s));
            elements.push(element.map_or(Parsed::Null, |(_, v)| v));
            let at = self.tokens.mark();
            if self.tokens.take_if("]") {
                self.tokens.rewind(at);
            } else if !self.tokens.take_if(",") {
                return Err(Failed::NotThis);
            }
        }
        Err(Failed::NotThis)
    }

    fn map(&mut self, depth: usize) -> Result<(Arc<Schema>, Parsed), Failed> {
        let mut entries = Entries::default();
        let (mut keys, mut values) = (Merger::default(), Merger::default());
        while self.tokens.has_next() {
            if self.tokens.take_if("}") {
                let entries = entries.list;
                let mut aligned = Entries::with_capacity(entries.len());
                let schema = match (keys.schema, values.schema) {
                    (Some(k), Some(v)) => {
                        for (key, value) in entries {
                            aligned.put(convert(&k, key)?, convert(&v, value)?);
                        }
                        Schema::map(k, v)
                    }
                    (Some(k), None) => {
                        for (key, value) in entries {
                            aligned.put(convert(&k, key)?, value);
                        }
                        Schema { key: Some(k), ..Schema::of(Type::Map) }
                    }
                    _ => {
                        aligned.list = entries;
                        Schema::of(Type::Map)
                    }
                };
                return Ok((Arc::new(schema), Parsed::Map(aligned.list)));
            }
            if self.tokens.take_if(",") {
                return Err(Failed::NotThis);
            }
            let Some(key) = self.parse(true, depth + 1)? else { return Err(Failed::NotThis) };
            if !self.tokens.take_if(":") {
                return Err(Failed::NotThis);
            }
            let value = self.parse(true, depth + 1)?;
            self.tokens.take_if(",");
            keys.merge(Some(&key.0));
            values.merge(value.as_ref().map(|(s, _)| s));
            entries.put(key.1, value.map_or(Parsed::Null, |(_, v)| v));
        }
        Err(Failed::NotThis)
    }

    /// A date, time or timestamp in Connect's ISO forms (`\:` read as `:`), by its length
    /// (Java's, in UTF-16 units); `parts` are the tokens, concatenated. Nothing is allocated for
    /// text of another length, as most numbers are.
    fn temporal(&self, parts: &[&str]) -> Option<(Arc<Schema>, Parsed)> {
        let length: usize = parts.iter().map(|p| p.encode_utf16().count() - p.matches("\\:").count()).sum();
        let (schema, pattern) = match length {
            13 => (&self.schemas.time, TIME),
            24 => (&self.schemas.timestamp, TIMESTAMP),
            10 => (&self.schemas.date, DATE),
            _ => return None,
        };
        let text = parts.concat().replace("\\:", ":");
        lenient_instant(&text, pattern).map(|millis| (schema.clone(), Parsed::Instant(millis)))
    }

    /// A number as Connect reads one: the smallest integer type a whole number fits, else
    /// float32 or float64 when the text has a fraction or exponent, else a `Decimal`.
    fn number(&self, token: &str) -> Option<(Arc<Schema>, Parsed)> {
        // Longer tokens stay text, as JsonConverter refuses such numbers: digits cost quadratic time.
        if token.len() > super::json_text::MAX_NUMBER_CHARS {
            return None;
        }
        let decimal = Decimal::parse(token).ok()?;
        let s = &self.schemas;
        if let Some(whole) = whole_number(&decimal) {
            return Some(if let Ok(n) = i8::try_from(whole) {
                (s.int8.clone(), Parsed::Int8(n))
            } else if let Ok(n) = i16::try_from(whole) {
                (s.int16.clone(), Parsed::Int16(n))
            } else if let Ok(n) = i32::try_from(whole) {
                (s.int32.clone(), Parsed::Int32(n))
            } else {
                (s.int64.clone(), Parsed::Int64(whole))
            });
        }
        let text = decimal_exponent_text(&decimal);
        if decimal.scale() != 0 {
            let single: f32 = text.parse().ok()?;
            if single.is_finite() {
                return Some((s.float32.clone(), Parsed::Float32(single)));
            }
            let double: f64 = text.parse().ok()?;
            if double.is_finite() {
                return Some((s.float64.clone(), Parsed::Float64(double)));
            }
        }
        Some((Arc::new(Schema::decimal(decimal.scale())), Parsed::Decimal(decimal)))
    }
}

/// `unscaled e -scale`, which Rust's float parsing rounds as Java's `BigDecimal` does.
fn decimal_exponent_text(d: &Decimal) -> String {
    format!("{}e{}", d.unscaled_text(), -(d.scale() as i64))
}

/// The decimal as an `i64` if it is a whole number that fits one.
fn whole_number(d: &Decimal) -> Option<i64> {
    let unscaled = d.unscaled_text();
    let (negative, digits) = match unscaled.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, unscaled.as_str()),
    };
    if digits.bytes().all(|b| b == b'0') {
        return Some(0);
    }
    let scale = d.scale() as i64;
    let integer: String = if scale > 0 {
        let keep = digits.len() as i64 - scale;
        if keep <= 0 || !digits[keep as usize..].bytes().all(|b| b == b'0') {
            return None;
        }
        digits[..keep as usize].to_string()
    } else {
        if digits.len() as i64 - scale > 20 {
            return None;
        }
        format!("{digits}{}", "0".repeat((-scale) as usize))
    };
    let magnitude: i128 = integer.parse().ok()?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// Merges the schemas of an array's elements (or a map's keys or values) as Connect does: the
/// same type keeps the latest schema, numbers widen (int8 → … → float64), anything else has
/// no common schema, for good.
#[derive(Default)]
struct Merger {
    schema: Option<Arc<Schema>>,
    given_up: bool,
}

impl Merger {
    fn merge(&mut self, latest: Option<&Arc<Schema>>) {
        let Some(latest) = latest else { return };
        if self.given_up {
            return;
        }
        self.schema = match self.schema.take() {
            None => Some(latest.clone()),
            Some(previous) if previous.kind == latest.kind => Some(latest.clone()),
            Some(previous) => match (rank(previous.kind), rank(latest.kind)) {
                (Some(p), Some(l)) => Some(if l > p { latest.clone() } else { previous }),
                _ => None,
            },
        };
        self.given_up = self.schema.is_none();
    }
}

fn rank(kind: Type) -> Option<u8> {
    Some(match kind {
        Type::Int8 => 0,
        Type::Int16 => 1,
        Type::Int32 => 2,
        Type::Int64 => 3,
        Type::Float32 => 4,
        Type::Float64 => 5,
        _ => return None,
    })
}

/// Entries put as Java's `LinkedHashMap.put` puts them: an equal key keeps its place and takes
/// the new value. Keys are found through a fingerprint of each, so a map of many entries is
/// built in linear time.
#[derive(Default)]
struct Entries {
    list: Vec<(Parsed, Parsed)>,
    /// Fingerprint → places in `list` of the keys that have it.
    places: std::collections::HashMap<u64, Vec<usize>>,
}

impl Entries {
    fn with_capacity(n: usize) -> Self {
        Entries { list: Vec::with_capacity(n), places: std::collections::HashMap::with_capacity(n) }
    }

    fn put(&mut self, key: Parsed, value: Parsed) {
        let print = fingerprint(&key);
        let places = self.places.entry(print).or_default();
        #[cfg(test)]
        COMPARED.with(|c| c.set(c.get() + places.len()));
        match places.iter().find(|&&at| self.list[at].0 == key) {
            Some(&at) => self.list[at].1 = value,
            None => {
                places.push(self.list.len());
                self.list.push((key, value));
            }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Map keys compared, for tests that count the work of a parse.
    static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A hash of a parsed value that equal values share (`0.0` and `-0.0` included).
fn fingerprint(value: &Parsed) -> u64 {
    use std::hash::{Hash, Hasher};
    fn feed(value: &Parsed, h: &mut std::collections::hash_map::DefaultHasher) {
        std::mem::discriminant(value).hash(h);
        match value {
            Parsed::Null => {}
            Parsed::Boolean(b) => b.hash(h),
            Parsed::Int8(n) => n.hash(h),
            Parsed::Int16(n) => n.hash(h),
            Parsed::Int32(n) => n.hash(h),
            Parsed::Int64(n) | Parsed::Instant(n) => n.hash(h),
            Parsed::Float32(x) => (if *x == 0.0 { 0 } else { x.to_bits() }).hash(h),
            Parsed::Float64(x) => (if *x == 0.0 { 0 } else { x.to_bits() }).hash(h),
            Parsed::Decimal(d) => d.hash(h),
            Parsed::Text(t) => t.hash(h),
            Parsed::Array(items) => items.iter().for_each(|i| feed(i, h)),
            Parsed::Map(entries) => entries.iter().for_each(|(k, v)| {
                feed(k, h);
                feed(v, h)
            }),
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    feed(value, &mut h);
    h.finish()
}

/// A parsed value as the common schema of its array or map has it (Connect's `Values.convertTo`
/// for the schemas parsing makes): numbers narrowed or widened, integers as dates, times or
/// timestamps; a null or anything else fails, and the text is read as a string instead.
fn convert(schema: &Schema, value: Parsed) -> Result<Parsed, Failed> {
    let long = |v: &Parsed| v.as_long().ok_or(Failed::NotThis);
    Ok(match (schema.kind, schema.logical(), value) {
        (_, _, Parsed::Null) => return Err(Failed::NotThis),
        (Type::Int32 | Type::Int64, Some(Logical::Date | Logical::Time | Logical::Timestamp), Parsed::Instant(m)) => {
            Parsed::Instant(m)
        }
        (_, Some(Logical::Date), v) => Parsed::Instant(long(&v)? as i32 as i64 * MILLIS_PER_DAY),
        (_, Some(Logical::Time), v) => {
            let millis = long(&v)? as i32;
            if !(0..=MILLIS_PER_DAY as i32).contains(&millis) {
                return Err(Failed::NotThis);
            }
            Parsed::Instant(millis as i64)
        }
        (_, Some(Logical::Timestamp), v) => Parsed::Instant(long(&v)?),
        (Type::Int8, _, v @ Parsed::Int8(_)) => v,
        (Type::Int8, _, v) => Parsed::Int8(long(&v)? as i8),
        (Type::Int16, _, v @ Parsed::Int16(_)) => v,
        (Type::Int16, _, v) => Parsed::Int16(long(&v)? as i16),
        (Type::Int32, _, v @ Parsed::Int32(_)) => v,
        (Type::Int32, _, v) => Parsed::Int32(long(&v)? as i32),
        (Type::Int64, _, v @ Parsed::Int64(_)) => v,
        (Type::Int64, _, v) => Parsed::Int64(long(&v)?),
        (Type::Float32, _, v @ Parsed::Float32(_)) => v,
        (Type::Float32, _, v) => Parsed::Float32(v.as_double().ok_or(Failed::NotThis)? as f32),
        (Type::Float64, _, v @ Parsed::Float64(_)) => v,
        (Type::Float64, _, v) => Parsed::Float64(v.as_double().ok_or(Failed::NotThis)?),
        (Type::Boolean, _, v @ Parsed::Boolean(_)) => v,
        (Type::String, _, v @ Parsed::Text(_)) => v,
        (Type::Bytes, Some(Logical::Decimal), v @ Parsed::Decimal(_)) => v,
        (Type::Array, _, v @ Parsed::Array(_)) => v,
        (Type::Map, _, v @ Parsed::Map(_)) => v,
        _ => return Err(Failed::NotThis),
    })
}

const DATE: &[Item] = &[
    Item::Number(Unit::Year),
    Item::Literal('-'),
    Item::Number(Unit::Month),
    Item::Literal('-'),
    Item::Number(Unit::Day),
];
const TIME: &[Item] = &[
    Item::Number(Unit::Hour),
    Item::Literal(':'),
    Item::Number(Unit::Minute),
    Item::Literal(':'),
    Item::Number(Unit::Second),
    Item::Literal('.'),
    Item::Number(Unit::Milli),
    Item::Literal('Z'),
];
const TIMESTAMP: &[Item] = &[
    Item::Number(Unit::Year),
    Item::Literal('-'),
    Item::Number(Unit::Month),
    Item::Literal('-'),
    Item::Number(Unit::Day),
    Item::Literal('T'),
    Item::Number(Unit::Hour),
    Item::Literal(':'),
    Item::Number(Unit::Minute),
    Item::Literal(':'),
    Item::Number(Unit::Second),
    Item::Literal('.'),
    Item::Number(Unit::Milli),
    Item::Literal('Z'),
];

/// A part of the ISO patterns Connect parses with `SimpleDateFormat`.
enum Item {
    Number(Unit),
    Literal(char),
}

#[derive(Clone, Copy)]
enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Milli,
}

/// The instant `text` names by `pattern`, read as a lenient `SimpleDateFormat` in UTC reads it:
/// each number as many digits as there are (blanks before it skipped, a `-` taken), fields that
/// overflow roll over, text after the pattern ignored.
fn lenient_instant(text: &str, pattern: &[Item]) -> Option<i64> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let (mut year, mut month, mut day, mut millis) = (1970i64, 1i64, 1i64, 0i64);
    for item in pattern {
        match item {
            Item::Literal(c) => {
                if bytes.get(at) != Some(&(*c as u8)) {
                    return None;
                }
                at += 1;
            }
            Item::Number(unit) => {
                while matches!(bytes.get(at), Some(b' ' | b'\t')) {
                    at += 1;
                }
                let negative = bytes.get(at) == Some(&b'-');
                let digits_from = at + usize::from(negative);
                let digits = bytes[digits_from.min(bytes.len())..].iter().take_while(|b| b.is_ascii_digit()).count();
                if digits == 0 || digits > 9 {
                    return None;
                }
                let n: i64 = text[digits_from..digits_from + digits].parse().ok()?;
                let n = if negative { -n } else { n };
                at = digits_from + digits;
                match unit {
                    Unit::Year => year = n,
                    Unit::Month => month = n,
                    Unit::Day => day = n,
                    Unit::Hour => millis += n * 3_600_000,
                    Unit::Minute => millis += n * 60_000,
                    Unit::Second => millis += n * 1000,
                    Unit::Milli => millis += n,
                }
            }
        }
    }
    Some((days_from_civil(year, month) + day - 1) * MILLIS_PER_DAY + millis)
}

/// `SimpleHeaderConverter`: header values in Connect's text form (`Values`), UTF-8.
#[derive(Default)]
pub struct SimpleHeaderConverter {
    schemas: Schemas,
}

impl SimpleHeaderConverter {
    pub fn from_data(&self, data: &Data) -> Result<Option<Vec<u8>>, DataError> {
        to_text(data.schema.as_deref(), &data.value)
    }

    /// Bytes that are not UTF-8 read as Java reads them (each bad sequence a U+FFFD).
    pub fn to_data(&self, bytes: Option<&[u8]>) -> Data {
        match bytes {
            None => Data::NULL,
            Some(bytes) => parse_text(&String::from_utf8_lossy(bytes), &self.schemas),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Data {
        parse_text(text, &Schemas::default())
    }

    fn round_trip(text: &str) -> String {
        let data = read(text);
        String::from_utf8(to_text(data.schema.as_deref(), &data.value).unwrap().unwrap_or_default()).unwrap()
    }

    #[test]
    fn a_map_of_many_entries_is_read_in_linear_work_and_keeps_javas_order() {
        let entries = 50_000;
        let mut text = String::from("{");
        for i in 0..entries {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k3\":7}");
        COMPARED.with(|c| c.set(0));
        let data = read(&text);
        let compared = COMPARED.with(|c| c.get());
        assert!(compared < 2 * entries, "{compared} keys compared");
        let Value::Map(map) = data.value else { panic!("a map expected, got {:?}", data.schema) };
        assert_eq!(map.len(), entries);
        assert_eq!(map[3], (Value::String("k3".into()), Value::Int32(7)));
    }

    #[test]
    fn a_number_of_more_than_a_thousand_digits_stays_text() {
        let long = "9".repeat(1001);
        assert_eq!(read(&long).value, Value::String(long.clone()));
        assert!(matches!(read(&"9".repeat(1000)).value, Value::Decimal(_) | Value::Int64(_) | Value::Float64(_)));
    }

    #[test]
    fn scalars_take_the_schema_connect_infers() {
        use crate::data::logical;
        assert_eq!(read("true").value, Value::Boolean(true));
        assert_eq!(read("42"), Data::new(Arc::new(Schema::of(Type::Int8)), Value::Int8(42)));
        assert_eq!(read("1000").value, Value::Int16(1000));
        assert_eq!(read("-5000000000").value, Value::Int64(-5_000_000_000));
        assert_eq!(read("1.5").value, Value::Float32(1.5));
        assert_eq!(read("1e300").value, Value::Float64(1e300));
        assert_eq!(read("1.0").value, Value::Int8(1));
        let big = read("92233720368547758070");
        assert_eq!(big.schema.as_ref().unwrap().name.as_deref(), Some(logical::DECIMAL));
        assert_eq!(read("hello world").value, Value::String("hello world".into()));
        assert_eq!(read("null"), Data::NULL);
        assert_eq!(read("true}").value, Value::String("true}".into()));
        assert_eq!(read("").value, Value::String(String::new()));
    }

    #[test]
    fn dates_times_and_timestamps_read_in_utc_and_roll_over() {
        assert_eq!(read("2024-01-02"), Data::new(Arc::new(Schema::date()), Value::Int32(19724)));
        assert_eq!(read("00:00:01.500Z").value, Value::Int32(1500));
        assert_eq!(read("1970-01-02T00:00:00.001Z").value, Value::Int64(MILLIS_PER_DAY + 1));
        assert_eq!(read("2024-02-30").value, read("2024-03-01").value);
        assert_eq!(round_trip("2024-01-02T10:15:30.250Z"), "2024-01-02T10:15:30.250Z");
        assert_eq!(round_trip("2024-01-02"), "2024-01-02");
    }

    #[test]
    fn arrays_and_maps_share_a_widened_schema_or_read_as_text() {
        let data = read("[1, 1000, 3]");
        assert_eq!(data.schema.as_ref().unwrap().value.as_ref().unwrap().kind, Type::Int16);
        assert_eq!(data.value, Value::Array(vec![Value::Int16(1), Value::Int16(1000), Value::Int16(3)]));
        assert_eq!(read("[1,null]").value, Value::String("[1,null]".into()));
        assert_eq!(read("{a:1}").value, Value::String("{a:1}".into()));
        let map = read(r#"{"a":1,"b":2}"#);
        assert_eq!(map.schema.as_ref().unwrap().key.as_ref().unwrap().kind, Type::String);
        assert_eq!(round_trip(r#"{"a":1,"b":[true,false]}"#), r#"{"a":1,"b":[true,false]}"#);
        // The escape that quoted text carries stays in it, as in Connect, and is escaped again.
        assert_eq!(round_trip(r#"["x\"y"]"#), r#"["x\\\"y"]"#);
    }

    #[test]
    fn text_nested_too_deep_is_kept_as_bytes() {
        let unclosed = "[".repeat(MAX_TEXT_DEPTH / 2);
        assert_eq!(read(&unclosed).value, Value::String(unclosed.clone()));
        let deep = format!("{}{}", "[".repeat(MAX_TEXT_DEPTH + 5), "]".repeat(MAX_TEXT_DEPTH + 5));
        assert_eq!(read(&deep).value, Value::Bytes(deep.clone().into_bytes()));
    }
}
