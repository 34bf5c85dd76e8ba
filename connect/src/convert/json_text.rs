//! JSON text as Kafka Connect's `JsonConverter` reads and writes it (through Jackson): a tree with
//! each number kept as written, a strict parser with Jackson's default bounds, and writers that
//! produce Jackson's bytes (its string escapes, Java's `Double.toString` and `Float.toString`,
//! base64 with padding for bytes).

/// Jackson's default bounds on what it reads (`StreamReadConstraints`).
pub const MAX_NESTING_DEPTH: usize = 1000;
pub const MAX_NUMBER_CHARS: usize = 1000;

/// Members an object is searched through one by one before it gets an index of its names.
const INDEXED_MEMBERS: usize = 16;

#[cfg(test)]
thread_local! {
    /// Member names compared one by one, for tests that count the work of a parse.
    static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A JSON value. Object members keep their order; a repeated name keeps its first place and its
/// last value, as Jackson's `ObjectNode` does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number as written. `integral` when it has neither a fraction nor an exponent (Jackson
    /// reads those as integers, the others as `BigDecimal`).
    Number {
        text: String,
        integral: bool,
    },
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Jackson's name for the node's type, as Connect's messages say it.
    pub fn node_type(&self) -> &'static str {
        match self {
            Json::Null => "NULL",
            Json::Bool(_) => "BOOLEAN",
            Json::Number { .. } => "NUMBER",
            Json::String(_) => "STRING",
            Json::Array(_) => "ARRAY",
            Json::Object(_) => "OBJECT",
        }
    }
}

/// Where and why JSON text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

/// Reads one JSON value; whitespace may surround it, nothing else. Empty input (only
/// whitespace) reads as `None`, as Jackson's `readTree` gives a missing node for it.
pub fn parse(bytes: &[u8]) -> Result<Option<Json>, SyntaxError> {
    let mut parser = Parser { bytes, at: 0 };
    parser.skip_whitespace();
    if parser.at == bytes.len() {
        return Ok(None);
    }
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.at != bytes.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(Some(value))
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError { offset: self.at, message: message.to_string() }
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json, SyntaxError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("unrecognized token"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, SyntaxError> {
        match self.peek() {
            None => Err(self.error("unexpected end of the JSON text")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("unexpected character")),
        }
    }

    fn nested(&self, depth: usize) -> Result<(), SyntaxError> {
        if depth > MAX_NESTING_DEPTH {
            return Err(self.error(&format!("JSON nested deeper than {MAX_NESTING_DEPTH} levels")));
        }
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<Json, SyntaxError> {
        self.nested(depth)?;
        self.at += 1;
        let mut members: Vec<(String, Json)> = Vec::new();
        // Past a few members, names are found through an index, so that an object of many
        // members is read in linear time.
        let mut index: Option<std::collections::HashMap<String, usize>> = None;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a field name in double quotes"));
            }
            let name = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after a field name"));
            }
            self.at += 1;
            self.skip_whitespace();
            let value = self.value(depth)?;
            let found = match &index {
                Some(index) => index.get(&name).copied(),
                None => {
                    #[cfg(test)]
                    COMPARED.with(|c| c.set(c.get() + members.len()));
                    members.iter().position(|(k, _)| *k == name)
                }
            };
            match found {
                Some(at) => members[at].1 = value,
                None => {
                    if let Some(index) = &mut index {
                        index.insert(name.clone(), members.len());
                    }
                    members.push((name, value));
                    if index.is_none() && members.len() > INDEXED_MEMBERS {
                        index = Some(members.iter().enumerate().map(|(at, (k, _))| (k.clone(), at)).collect());
                    }
                }
            }
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}' in an object")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, SyntaxError> {
        self.nested(depth)?;
        self.at += 1;
        let mut elements = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Json::Array(elements));
        }
        loop {
            self.skip_whitespace();
            elements.push(self.value(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Json::Array(elements));
                }
                _ => return Err(self.error("expected ',' or ']' in an array")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }

    fn number(&mut self) -> Result<Json, SyntaxError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let first = self.at;
        match self.digits() {
            0 => return Err(self.error("expected a digit")),
            n if n > 1 && self.bytes[first] == b'0' => return Err(self.error("leading zeros are not allowed")),
            _ => {}
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            self.at += 1;
            integral = false;
            if self.digits() == 0 {
                return Err(self.error("expected a digit after the decimal point"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            integral = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        if self.at - start > MAX_NUMBER_CHARS {
            return Err(self.error(&format!("a number longer than {MAX_NUMBER_CHARS} characters")));
        }
        // Only ASCII was consumed.
        let text = String::from_utf8_lossy(&self.bytes[start..self.at]).into_owned();
        Ok(Json::Number { text, integral })
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or_else(|| self.error("a short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("a bad \\u escape"))?;
        let code = u32::from_str_radix(text, 16).map_err(|_| self.error("a bad \\u escape"))?;
        self.at += 4;
        Ok(code)
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.at += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let run = self.at;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.extend_from_slice(&self.bytes[run..self.at]);
            match self.peek() {
                None => return Err(self.error("a string without its closing quote")),
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') => {
                    self.at += 1;
                    let escape = self.peek().ok_or_else(|| self.error("a string without its closing quote"))?;
                    self.at += 1;
                    let simple = match escape {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return Err(self.error("an unknown escape in a string")),
                    };
                    if let Some(b) = simple {
                        out.push(b);
                        continue;
                    }
                    let mut code = self.hex4()?;
                    if (0xd800..0xdc00).contains(&code) && self.bytes[self.at..].starts_with(b"\\u") {
                        let back = self.at;
                        self.at += 2;
                        let low = self.hex4()?;
                        if (0xdc00..0xe000).contains(&low) {
                            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                        } else {
                            self.at = back;
                        }
                    }
                    // A lone surrogate cannot be held in UTF-8; Java would keep it, Wharf
                    // writes the replacement character.
                    let c = char::from_u32(code).unwrap_or('\u{fffd}');
                    let mut buffer = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
                }
                Some(_) => return Err(self.error("a control character inside a string")),
            }
        }
        String::from_utf8(out).map_err(|_| self.error("a string that is not UTF-8"))
    }
}

/// Writes a string as Jackson does: `"` and `\` escaped, control characters as `\n`-style
/// escapes where JSON has one and `\u00XX` (upper-case hex) otherwise, characters beyond the
/// Basic Multilingual Plane as their two escaped UTF-16 surrogates, everything else as UTF-8.
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0xf0 {
            // The first byte of a four-byte character.
            out.extend_from_slice(&bytes[run..i]);
            let c = text[i..].chars().next().unwrap_or('\u{fffd}');
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                escape_unit(out, *unit);
            }
            run = i + c.len_utf8();
            continue;
        }
        if i < run {
            continue;
        }
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => escape_unit(out, u16::from(b)),
        }
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// `\uXXXX`, upper-case hex.
fn escape_unit(out: &mut Vec<u8>, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[usize::from((unit >> shift) & 15)]);
    }
}

/// Java's `Double.toString`: `1.0`, `0.001`, `1.0E7`, `1.234E-5`, with the fewest digits that
/// read back as the same double. NaN and the infinities are written as Jackson writes them, as
/// strings.
pub fn write_double(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        java_layout(out, x == 0.0, x.is_sign_negative(), &format!("{:e}", x.abs()), x.abs() >= 1e-3 && x.abs() < 1e7);
    } else {
        write_string(out, non_finite(x.is_nan(), x > 0.0));
    }
}

/// Java's `Float.toString`, as `write_double` for a float's own shortest digits.
pub fn write_float(out: &mut Vec<u8>, x: f32) {
    if x.is_finite() {
        java_layout(out, x == 0.0, x.is_sign_negative(), &format!("{:e}", x.abs()), x.abs() >= 1e-3 && x.abs() < 1e7);
    } else {
        write_string(out, non_finite(x.is_nan(), x > 0.0));
    }
}

fn non_finite(nan: bool, positive: bool) -> &'static str {
    match (nan, positive) {
        (true, _) => "NaN",
        (false, true) => "Infinity",
        (false, false) => "-Infinity",
    }
}

/// Lays out Rust's shortest scientific form (`1.2345e3`) as Java does.
fn java_layout(out: &mut Vec<u8>, zero: bool, negative: bool, scientific: &str, plain: bool) {
    if negative {
        out.push(b'-');
    }
    if zero {
        out.extend_from_slice(b"0.0");
        return;
    }
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if plain {
        if exponent >= 0 {
            let whole = exponent as usize + 1;
            for i in 0..whole {
                out.push(*digits.get(i).unwrap_or(&b'0'));
            }
            out.push(b'.');
            if digits.len() > whole {
                out.extend_from_slice(&digits[whole..]);
            } else {
                out.push(b'0');
            }
        } else {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(&digits);
        }
    } else {
        out.push(digits[0]);
        out.push(b'.');
        if digits.len() > 1 {
            out.extend_from_slice(&digits[1..]);
        } else {
            out.push(b'0');
        }
        out.push(b'E');
        out.extend_from_slice(exponent.to_string().as_bytes());
    }
}

/// Writes a JSON tree compactly, as Jackson does.
pub fn write(out: &mut Vec<u8>, json: &Json) {
    match json {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(true) => out.extend_from_slice(b"true"),
        Json::Bool(false) => out.extend_from_slice(b"false"),
        Json::Number { text, .. } => out.extend_from_slice(text.as_bytes()),
        Json::String(text) => write_string(out, text),
        Json::Array(elements) => {
            out.push(b'[');
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, element);
            }
            out.push(b']');
        }
        Json::Object(members) => {
            out.push(b'{');
            for (i, (name, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, name);
                out.push(b':');
                write(out, value);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_of_many_members_is_read_in_linear_work() {
        let members = 100_000;
        let mut text = String::from("{");
        for i in 0..members {
            text.push_str(&format!("\"a{i}\":0,"));
        }
        text.push_str("\"a7\":1}");
        COMPARED.with(|c| c.set(0));
        let Some(Json::Object(read)) = parse(text.as_bytes()).unwrap() else { panic!("an object expected") };
        let compared = COMPARED.with(|c| c.get());
        assert_eq!(read.len(), members);
        assert!(matches!(&read[7], (name, Json::Number { text, .. }) if name == "a7" && text == "1"));
        assert!(compared <= INDEXED_MEMBERS * INDEXED_MEMBERS, "{compared} names compared one by one");
    }

    fn double(x: f64) -> String {
        let mut out = Vec::new();
        write_double(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    fn float(x: f32) -> String {
        let mut out = Vec::new();
        write_float(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn doubles_and_floats_are_written_as_java_writes_them() {
        for (x, java) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-1.5, "-1.5"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (0.000999, "9.99E-4"),
            (1234567.0, "1234567.0"),
            (1e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (f64::NAN, "\"NaN\""),
            (f64::NEG_INFINITY, "\"-Infinity\""),
        ] {
            assert_eq!(double(x), java, "{x}");
        }
        for (x, java) in
            [(1.1f32, "1.1"), (3.4028235e38, "3.4028235E38"), (1e-5, "1.0E-5"), (16777216.0, "1.6777216E7")]
        {
            assert_eq!(float(x), java, "{x}");
        }
    }

    #[test]
    fn strings_are_escaped_as_jackson_escapes_them() {
        let mut out = Vec::new();
        write_string(&mut out, "a\"b\\c\nd\u{1}\u{1f}é/\u{7f}😀z");
        assert_eq!(String::from_utf8(out).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001\\u001Fé/\u{7f}\\uD83D\\uDE00z\"");
    }

    #[test]
    fn parsing_keeps_numbers_as_written_and_the_last_of_repeated_names() {
        let json = parse(br#" {"a": 1.50, "b": [true, null, -0, 1e3], "a": "x\u00e9\ud83d\ude00"} "#).unwrap().unwrap();
        assert_eq!(
            json,
            Json::Object(vec![
                ("a".into(), Json::String("xé😀".into())),
                (
                    "b".into(),
                    Json::Array(vec![
                        Json::Bool(true),
                        Json::Null,
                        Json::Number { text: "-0".into(), integral: true },
                        Json::Number { text: "1e3".into(), integral: false },
                    ])
                ),
            ])
        );
        assert_eq!(parse(b"  ").unwrap(), None);
    }

    #[test]
    fn malformed_json_is_refused_with_where() {
        for text in
            ["{", "[1,]", "01", "1.", "-", "{\"a\" 1}", "tru", "\"\u{1}\"", "'a'", "{} x", "NaN", "\"\\x\"", "[1 2]"]
        {
            assert!(parse(text.as_bytes()).is_err(), "{text}");
        }
        let deep = "[".repeat(MAX_NESTING_DEPTH + 1);
        assert!(parse(deep.as_bytes()).unwrap_err().message.contains("nested deeper"));
        let long = "1".repeat(MAX_NUMBER_CHARS + 1);
        assert!(parse(long.as_bytes()).unwrap_err().message.contains("longer than"));
    }
}
