//! Java `.properties` files, as Kafka Connect reads them: `key=value`, `key: value` or
//! `key value`, `#` and `!` comments, backslash line continuations and escapes.

use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PropertiesError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}, line {line}: {message}")]
    Syntax { path: String, line: usize, message: String },
}

/// One `key=value` entry and the line it started on.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub key: String,
    pub value: String,
    pub line: usize,
}

pub fn read_file(path: &Path) -> Result<Vec<Property>, PropertiesError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| PropertiesError::Read { path: path.display().to_string(), source })?;
    parse(&text, &path.display().to_string())
}

/// Parses properties text; `origin` names the source in error messages.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Property>, PropertiesError> {
    let mut properties = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, raw)) = lines.next() {
        let first_line = index + 1;
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines: an odd number of trailing backslashes continues the line.
        let mut logical = trimmed.to_string();
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let syntax = |message: String| PropertiesError::Syntax { path: origin.to_string(), line: first_line, message };
        let (raw_key, raw_value) = split_key_value(&logical);
        let key = unescape(raw_key).map_err(syntax)?;
        let value = unescape(raw_value).map_err(syntax)?;
        if key.is_empty() {
            return Err(syntax(format!("\"{}\" has no key before its separator", logical)));
        }
        properties.push(Property { key, value, line: first_line });
    }
    Ok(properties)
}

fn ends_with_continuation(line: &str) -> bool {
    line.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or whitespace; whitespace around the separator is
/// not part of the key or the value.
fn split_key_value(line: &str) -> (&str, &str) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => break,
            _ => i += 1,
        }
    }
    let i = i.min(bytes.len());
    let key = &line[..i];
    let mut rest = line[i..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(stripped) = rest.strip_prefix(['=', ':']) {
        rest = stripped.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("malformed \\u escape \"\\u{hex}\": expected 4 hex digits"))?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text, "test").unwrap().into_iter().map(|p| (p.key, p.value)).collect()
    }

    #[test]
    fn reads_the_three_separators_and_skips_comments() {
        let got = pairs("# comment\n! other\na=1\nb: 2\nc 3\n  d = four five \n");
        let want = [("a", "1"), ("b", "2"), ("c", "3"), ("d", "four five ")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }

    #[test]
    fn joins_continued_lines_and_unescapes() {
        let got = pairs("list=a,\\\n    b,\\\n    c\npath=C\\:\\\\dir\nu=\\u00e9\n");
        assert_eq!(got[0], ("list".into(), "a,b,c".into()));
        assert_eq!(got[1], ("path".into(), "C:\\dir".into()));
        assert_eq!(got[2], ("u".into(), "é".into()));
    }

    #[test]
    fn a_key_without_value_is_empty() {
        assert_eq!(pairs("flag\n"), vec![("flag".to_string(), String::new())]);
    }

    #[test]
    fn malformed_unicode_escape_names_the_line() {
        let err = parse("a=1\nb=\\u12\n", "worker.properties").unwrap_err().to_string();
        assert!(err.contains("worker.properties, line 2"), "{err}");
        assert!(err.contains("\\u"), "{err}");
    }

    #[test]
    fn missing_key_is_an_error() {
        let err = parse("=value\n", "c.properties").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
