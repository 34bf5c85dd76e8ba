//! Connect's transforms that touch a record's topic and headers only: `RegexRouter`, `Filter`,
//! `InsertHeader` and `DropHeaders`.

use crate::convert::values;
use crate::data::Data;
use crate::model::{Part, PartHeader};

use super::support::Side;
use super::{Apply, FullMatch, Outcome, Record, Settings, TransformConfigError};

/// Renames a matching topic: Java's `replaceFirst` on a full match.
#[derive(Debug)]
struct RegexRouter {
    regex: FullMatch,
    replacement: String,
}

pub(super) fn regex_router(settings: &Settings, _: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let regex = settings.regex("regex", "the regular expression topic names must match to be renamed")?;
    let given = settings.required("replacement", "the new topic name; $1 and ${name} stand for groups")?;
    let replacement = rust_replacement(given, &regex.0)
        .map_err(|message| settings.problem("replacement", format!("{}: {message}", settings.key("replacement"))))?;
    Ok(Box::new(RegexRouter { regex, replacement }))
}

impl Apply for RegexRouter {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        if self.regex.0.is_match(&record.topic) {
            let routed = self.regex.0.replace(&record.topic, self.replacement.as_str()).into_owned();
            if routed.is_empty() {
                return Err("the replacement made an empty topic name".into());
            }
            record.topic = routed;
        }
        Ok(Outcome::Keep)
    }
}

/// Drops every record it is applied to (with a predicate, the matching ones).
#[derive(Debug)]
struct Filter;

pub(super) fn filter(_: &Settings, _: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    Ok(Box::new(Filter))
}

impl Apply for Filter {
    fn apply(&self, _: &mut Record) -> Result<Outcome, String> {
        Ok(Outcome::Drop)
    }
}

/// Adds a header whose value is a literal read as Connect's `Values.parseString` reads it.
#[derive(Debug)]
struct InsertHeader {
    header: String,
    value: Data,
}

pub(super) fn insert_header(settings: &Settings, _: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let header = settings.required("header", "the key of the header to add")?.to_string();
    let literal = settings.get("value.literal").ok_or_else(|| {
        settings.problem(
            "value.literal",
            format!("{} is required: the header's value, in Connect's text form", settings.key("value.literal")),
        )
    })?;
    let value = values::parse_text(literal, &values::Schemas::default());
    Ok(Box::new(InsertHeader { header, value }))
}

impl Apply for InsertHeader {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        record.headers.push(PartHeader { key: self.header.clone(), value: Some(Part::Data(self.value.clone())) });
        Ok(Outcome::Keep)
    }
}

/// Removes every header with one of these keys.
#[derive(Debug)]
struct DropHeaders {
    headers: Vec<String>,
}

pub(super) fn drop_headers(settings: &Settings, _: Side) -> Result<Box<dyn Apply>, TransformConfigError> {
    let list = settings.required("headers", "the keys of the headers to remove, separated by commas")?;
    let headers = list.split(',').map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect();
    Ok(Box::new(DropHeaders { headers }))
}

impl Apply for DropHeaders {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String> {
        record.headers.retain(|h| !self.headers.contains(&h.key));
        Ok(Outcome::Keep)
    }
}

/// A Java replacement string (`$1`, `${name}`, `\$` for a dollar sign, `\\` for a backslash) in
/// the `regex` crate's syntax, as Java reads it: after `$`, digits are taken while they still
/// name a group of the pattern.
pub(super) fn rust_replacement(java: &str, regex: &regex::Regex) -> Result<String, String> {
    let groups = regex.captures_len() - 1; // the anchoring group is not capturing
    let names: Vec<&str> = regex.capture_names().flatten().collect();
    let mut out = String::with_capacity(java.len() + 8);
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => return Err("ends with a lone backslash".into()),
            },
            '$' => match chars.peek() {
                Some('{') => {
                    chars.next();
                    let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                    if !names.contains(&name.as_str()) {
                        return Err(format!("${{{name}}} names no group of the regex"));
                    }
                    out.push_str(&format!("${{{name}}}"));
                }
                Some(d) if d.is_ascii_digit() => {
                    let mut number = 0usize;
                    let mut taken = false;
                    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                        let next = number * 10 + d as usize;
                        if taken && next > groups {
                            break;
                        }
                        number = next;
                        taken = true;
                        chars.next();
                    }
                    if number > groups {
                        return Err(format!("${number} names no group of the regex (it has {groups})"));
                    }
                    out.push_str(&format!("${{{number}}}"));
                }
                _ => return Err("has a $ that names no group; write \\$ for a dollar sign".into()),
            },
            other => out.push(other),
        }
    }
    Ok(out)
}
