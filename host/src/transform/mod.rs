//! Single message transforms and their predicates, as Kafka Connect's `transforms=` and
//! `predicates=` configure them: a chain of steps applied in order to each record, on a source
//! after `poll` and before the converters, on a sink after the converters and before `put`.
//! Each step may be guarded by a predicate (`transforms.a.predicate=p`, `transforms.a.negate`).
//! A step keeps, changes or drops the record; a dropped record is still accounted for (its source
//! offset is stored, a sink commits past it).
//!
//! Built so far, under Connect's class names: `RegexRouter`, `Filter`, `InsertHeader` and
//! `DropHeaders`, and the predicates `TopicNameMatches`, `HasHeaderKey` and `RecordIsTombstone`.
//! A connector naming another of Connect's transforms is refused with the list of these.
//! Depends on `data`, `model` and `convert` (for the text form of `InsertHeader`'s literal).

use crate::convert::values;
use crate::data::Value;
use crate::model::{Part, PartHeader};

/// A record as transforms see it: Kafka Connect's `ConnectRecord` without the parts that belong
/// to a source or a sink (source partition and offset, Kafka offset), which stay outside.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub topic: String,
    pub partition: Option<i32>,
    pub key: Option<Part>,
    pub value: Option<Part>,
    pub headers: Vec<PartHeader>,
    pub timestamp: Option<i64>,
}

/// A transform or a predicate could not be configured: which key and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformConfigError {
    pub key: String,
    pub message: String,
}

/// A transform failed on a record: which step, the record's topic, and why (the caller adds
/// where the record came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformError {
    pub message: String,
}

const TRANSFORMS: &str = "org.apache.kafka.connect.transforms.";
const PREDICATES: &str = "org.apache.kafka.connect.transforms.predicates.";

/// The transforms Wharf has, by Connect's simple class name.
const BUILT_TRANSFORMS: &[&str] = &["DropHeaders", "Filter", "InsertHeader", "RegexRouter"];
/// Connect's other transforms, which a config may name and be told they are not built yet.
const CONNECT_TRANSFORMS: &[&str] = &[
    "Cast",
    "ExtractField",
    "Flatten",
    "HeaderFrom",
    "HoistField",
    "InsertField",
    "MaskField",
    "ReplaceField",
    "SetSchemaMetadata",
    "TimestampConverter",
    "TimestampRouter",
    "ValueToKey",
];
const BUILT_PREDICATES: &[&str] = &["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"];

/// A full Java regular expression match, as `Matcher.matches()`: the pattern anchored at both
/// ends.
#[derive(Debug, Clone)]
struct FullMatch(regex::Regex);

impl FullMatch {
    fn new(pattern: &str) -> Result<Self, String> {
        regex::Regex::new(&format!("^(?:{pattern})$")).map(FullMatch).map_err(|e| {
            format!("\"{pattern}\" is not a regular expression Wharf can use ({e}); Wharf's dialect is Java's without look-around and back-references")
        })
    }
}

#[derive(Debug, Clone)]
enum Transform {
    /// Renames a matching topic: Java's `replaceFirst` on a full match.
    RegexRouter { regex: FullMatch, replacement: String },
    /// Drops every record it is applied to (with a predicate, the matching ones).
    Filter,
    /// Adds a header whose value is a literal read as Connect's `Values.parseString` reads it.
    InsertHeader { header: String, value: crate::data::Data },
    /// Removes every header with one of these keys.
    DropHeaders { headers: Vec<String> },
}

#[derive(Debug, Clone)]
enum Predicate {
    TopicNameMatches(FullMatch),
    HasHeaderKey(String),
    RecordIsTombstone,
}

impl Predicate {
    fn test(&self, record: &Record) -> bool {
        match self {
            Predicate::TopicNameMatches(regex) => regex.0.is_match(&record.topic),
            Predicate::HasHeaderKey(name) => record.headers.iter().any(|h| &h.key == name),
            Predicate::RecordIsTombstone => match &record.value {
                None => true,
                Some(Part::Data(data)) => data.value == Value::Null,
                Some(Part::Bytes(_)) => false,
            },
        }
    }
}

#[derive(Debug, Clone)]
struct Step {
    alias: String,
    class: &'static str,
    transform: Transform,
    /// The predicate that guards the step, and whether its answer is negated.
    predicate: Option<(Predicate, bool)>,
}

/// A connector's transforms, in order; empty when it names none.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    steps: Vec<Step>,
}

/// The aliases of a list key (`transforms=a, b`), or the key's problem.
fn aliases(config: &[(String, String)], key: &str) -> Result<Vec<String>, TransformConfigError> {
    let Some(list) = crate::model::last_value(config, key) else { return Ok(Vec::new()) };
    let mut seen: Vec<String> = Vec::new();
    for alias in list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if seen.iter().any(|s| s == alias) {
            return Err(TransformConfigError {
                key: key.to_string(),
                message: format!("{key}={list} names \"{alias}\" twice; give each an alias of its own"),
            });
        }
        seen.push(alias.to_string());
    }
    Ok(seen)
}

/// The simple class name a `type` setting names, if it is under `package` (or simple already).
fn simple_name<'a>(given: &'a str, package: &str) -> &'a str {
    given.strip_prefix(package).unwrap_or(given)
}

/// A setting of one transform or predicate: `transforms.<alias>.<name>`.
struct Settings<'a> {
    config: &'a [(String, String)],
    prefix: String,
}

impl Settings<'_> {
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn get(&self, name: &str) -> Option<&str> {
        crate::model::last_value(self.config, &self.key(name))
    }

    fn required(&self, name: &str, what: &str) -> Result<&str, TransformConfigError> {
        self.get(name).filter(|v| !v.trim().is_empty()).ok_or_else(|| TransformConfigError {
            key: self.key(name),
            message: format!("{} is required: {what}", self.key(name)),
        })
    }

    fn regex(&self, name: &str, what: &str) -> Result<FullMatch, TransformConfigError> {
        let pattern = self.required(name, what)?;
        FullMatch::new(pattern).map_err(|message| TransformConfigError {
            key: self.key(name),
            message: format!("{}: {message}", self.key(name)),
        })
    }
}

impl Chain {
    /// The chain a connector config names; every problem found, each with its key.
    pub fn of_connector(config: &[(String, String)]) -> Result<Self, Vec<TransformConfigError>> {
        let mut problems = Vec::new();
        let mut predicates: Vec<(String, Predicate)> = Vec::new();
        match aliases(config, "predicates") {
            Err(e) => problems.push(e),
            Ok(list) => {
                for alias in list {
                    match predicate(config, &alias) {
                        Ok(p) => predicates.push((alias, p)),
                        Err(e) => problems.push(e),
                    }
                }
            }
        }
        let mut steps = Vec::new();
        match aliases(config, "transforms") {
            Err(e) => problems.push(e),
            Ok(list) => {
                for alias in list {
                    match step(config, &alias, &predicates) {
                        Ok(s) => steps.push(s),
                        Err(e) => problems.push(e),
                    }
                }
            }
        }
        if problems.is_empty() {
            Ok(Chain { steps })
        } else {
            Err(problems)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The record after every step, or none when a step dropped it.
    pub fn apply(&self, mut record: Record) -> Result<Option<Record>, TransformError> {
        for step in &self.steps {
            if let Some((predicate, negate)) = &step.predicate {
                if predicate.test(&record) == *negate {
                    continue;
                }
            }
            match &step.transform {
                Transform::Filter => return Ok(None),
                Transform::RegexRouter { regex, replacement } => {
                    if regex.0.is_match(&record.topic) {
                        let routed = regex.0.replace(&record.topic, replacement.as_str()).into_owned();
                        if routed.is_empty() {
                            return Err(TransformError {
                                message: format!(
                                    "transforms.{} ({}) made an empty topic name of the record for topic {}",
                                    step.alias, step.class, record.topic
                                ),
                            });
                        }
                        record.topic = routed;
                    }
                }
                Transform::InsertHeader { header, value } => {
                    record.headers.push(PartHeader { key: header.clone(), value: Some(Part::Data(value.clone())) })
                }
                Transform::DropHeaders { headers } => record.headers.retain(|h| !headers.contains(&h.key)),
            }
        }
        Ok(Some(record))
    }
}

fn predicate(config: &[(String, String)], alias: &str) -> Result<Predicate, TransformConfigError> {
    let settings = Settings { config, prefix: format!("predicates.{alias}.") };
    let class = settings.required(
        "type",
        "the predicate's class, e.g. org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    )?;
    match simple_name(class.trim(), PREDICATES) {
        "TopicNameMatches" => {
            Ok(Predicate::TopicNameMatches(settings.regex("pattern", "the regular expression topic names must match")?))
        }
        "HasHeaderKey" => {
            Ok(Predicate::HasHeaderKey(settings.required("name", "the header key to look for")?.to_string()))
        }
        "RecordIsTombstone" => Ok(Predicate::RecordIsTombstone),
        other => Err(TransformConfigError {
            key: settings.key("type"),
            message: format!(
                "{}={other} is not a predicate Wharf has; use one of {}",
                settings.key("type"),
                BUILT_PREDICATES.iter().map(|p| format!("{PREDICATES}{p}")).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

fn step(
    config: &[(String, String)],
    alias: &str,
    predicates: &[(String, Predicate)],
) -> Result<Step, TransformConfigError> {
    let settings = Settings { config, prefix: format!("transforms.{alias}.") };
    let class = settings
        .required("type", "the transform's class, e.g. org.apache.kafka.connect.transforms.RegexRouter")?
        .trim();
    let simple = simple_name(class, TRANSFORMS);
    let (class, transform) = match simple {
        "RegexRouter" => {
            let regex = settings.regex("regex", "the regular expression topic names must match to be renamed")?;
            let given = settings.required("replacement", "the new topic name; $1 and ${name} stand for groups")?;
            let replacement = rust_replacement(given, &regex.0).map_err(|message| TransformConfigError {
                key: settings.key("replacement"),
                message: format!("{}: {message}", settings.key("replacement")),
            })?;
            ("org.apache.kafka.connect.transforms.RegexRouter", Transform::RegexRouter { regex, replacement })
        }
        "Filter" => ("org.apache.kafka.connect.transforms.Filter", Transform::Filter),
        "InsertHeader" => {
            let header = settings.required("header", "the key of the header to add")?.to_string();
            let literal = settings.get("value.literal").ok_or_else(|| TransformConfigError {
                key: settings.key("value.literal"),
                message: format!(
                    "{} is required: the header's value, in Connect's text form",
                    settings.key("value.literal")
                ),
            })?;
            let value = values::parse_text(literal, &values::Schemas::default());
            ("org.apache.kafka.connect.transforms.InsertHeader", Transform::InsertHeader { header, value })
        }
        "DropHeaders" => {
            let list = settings.required("headers", "the keys of the headers to remove, separated by commas")?;
            let headers = list.split(',').map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect();
            ("org.apache.kafka.connect.transforms.DropHeaders", Transform::DropHeaders { headers })
        }
        other => {
            let base = other.split('$').next().unwrap_or(other);
            let built = BUILT_TRANSFORMS.iter().map(|t| format!("{TRANSFORMS}{t}")).collect::<Vec<_>>().join(", ");
            let message = if CONNECT_TRANSFORMS.contains(&base) {
                format!(
                    "{}={class}: Kafka Connect's {base} is not built in Wharf yet; Wharf has {built}",
                    settings.key("type")
                )
            } else {
                format!("{}={class} is not a transform Wharf has; use one of {built}", settings.key("type"))
            };
            return Err(TransformConfigError { key: settings.key("type"), message });
        }
    };
    let predicate = match settings.get("predicate").map(str::trim).filter(|p| !p.is_empty()) {
        None => None,
        Some(name) => {
            let found = predicates.iter().find(|(a, _)| a == name).map(|(_, p)| p.clone()).ok_or_else(|| {
                TransformConfigError {
                    key: settings.key("predicate"),
                    message: format!(
                        "{}={name} names no predicate of \"predicates\"; add {name} to predicates and set predicates.{name}.type",
                        settings.key("predicate")
                    ),
                }
            })?;
            let negate = match settings.get("negate").map(str::trim) {
                None => false,
                Some(v) if v.eq_ignore_ascii_case("true") => true,
                Some(v) if v.eq_ignore_ascii_case("false") => false,
                Some(v) => {
                    return Err(TransformConfigError {
                        key: settings.key("negate"),
                        message: format!("{}={v} is not valid: expected true or false", settings.key("negate")),
                    })
                }
            };
            Some((found, negate))
        }
    };
    Ok(Step { alias: alias.to_string(), class, transform, predicate })
}

/// A Java replacement string (`$1`, `${name}`, `\$` for a dollar sign, `\\` for a backslash) in
/// the `regex` crate's syntax, as Java reads it: after `$`, digits are taken while they still
/// name a group of the pattern.
fn rust_replacement(java: &str, regex: &regex::Regex) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Data, Schema, Type};
    use std::sync::Arc;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn record(topic: &str) -> Record {
        Record {
            topic: topic.into(),
            partition: None,
            key: None,
            value: Some(Part::Bytes(b"v".to_vec())),
            headers: vec![PartHeader { key: "h".into(), value: Some(Part::Bytes(b"1".to_vec())) }],
            timestamp: None,
        }
    }

    #[test]
    fn regex_router_renames_full_matches_with_javas_groups() {
        let chain = Chain::of_connector(&pairs(&[
            ("transforms", "route"),
            ("transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter"),
            ("transforms.route.regex", "(.*)-raw"),
            ("transforms.route.replacement", "$1-clean\\$"),
        ]))
        .unwrap();
        assert_eq!(chain.apply(record("orders-raw")).unwrap().unwrap().topic, "orders-clean$");
        assert_eq!(chain.apply(record("orders-raw-2")).unwrap().unwrap().topic, "orders-raw-2", "only full matches");
        let regex = regex::Regex::new("^(?:(a)(b))$").unwrap();
        assert_eq!(rust_replacement("$12x", &regex).unwrap(), "${1}2x", "digits past the last group are text");
        assert!(rust_replacement("$3", &regex).unwrap_err().contains("no group"));
    }

    #[test]
    fn predicates_guard_steps_and_negate_turns_them_around() {
        let chain = Chain::of_connector(&pairs(&[
            ("transforms", "keep-logs,tag"),
            ("transforms.keep-logs.type", "Filter"),
            ("transforms.keep-logs.predicate", "logs"),
            ("transforms.keep-logs.negate", "true"),
            ("transforms.tag.type", "InsertHeader"),
            ("transforms.tag.header", "n"),
            ("transforms.tag.value.literal", "42"),
            ("predicates", "logs,tomb"),
            ("predicates.logs.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"),
            ("predicates.logs.pattern", "logs-.*"),
            ("predicates.tomb.type", "RecordIsTombstone"),
        ]))
        .unwrap();
        assert_eq!(chain.apply(record("metrics")).unwrap(), None, "what is not a log is dropped");
        let kept = chain.apply(record("logs-1")).unwrap().unwrap();
        assert_eq!(
            kept.headers.last(),
            Some(&PartHeader {
                key: "n".into(),
                value: Some(Part::Data(Data::new(Arc::new(Schema::of(Type::Int8)), Value::Int8(42))))
            })
        );
        let tombstone = Predicate::RecordIsTombstone;
        assert!(tombstone.test(&Record { value: None, ..record("t") }));
        assert!(tombstone.test(&Record { value: Some(Part::Data(Data::NULL)), ..record("t") }));
        assert!(!tombstone.test(&record("t")));
        assert!(Predicate::HasHeaderKey("h".into()).test(&record("t")));
    }

    #[test]
    fn drop_headers_removes_every_header_of_the_keys() {
        let chain = Chain::of_connector(&pairs(&[
            ("transforms", "d"),
            ("transforms.d.type", "DropHeaders"),
            ("transforms.d.headers", "h, other"),
        ]))
        .unwrap();
        let mut r = record("t");
        r.headers.push(PartHeader { key: "keep".into(), value: None });
        r.headers.push(PartHeader { key: "h".into(), value: None });
        let out = chain.apply(r).unwrap().unwrap();
        assert_eq!(out.headers.iter().map(|h| h.key.as_str()).collect::<Vec<_>>(), ["keep"]);
    }

    #[test]
    fn bad_configs_say_which_key_and_what_is_there() {
        let problems = Chain::of_connector(&pairs(&[
            ("transforms", "a,b,c,d,a"),
            ("predicates", "p"),
            ("predicates.p.type", "Nope"),
        ]))
        .unwrap_err();
        assert_eq!(problems[0].key, "predicates.p.type");
        assert_eq!(problems[1].key, "transforms");
        let problems = Chain::of_connector(&pairs(&[
            ("transforms", "a,b,c,d"),
            ("transforms.a.type", "org.apache.kafka.connect.transforms.InsertField$Value"),
            ("transforms.b.type", "com.example.Mine"),
            ("transforms.c.type", "RegexRouter"),
            ("transforms.c.regex", "(?<=x)y"),
            ("transforms.c.replacement", "z"),
            ("transforms.d.type", "Filter"),
            ("transforms.d.predicate", "missing"),
        ]))
        .unwrap_err();
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["transforms.a.type", "transforms.b.type", "transforms.c.regex", "transforms.d.predicate"]);
        assert!(problems[0].message.contains("InsertField is not built in Wharf yet"), "{}", problems[0].message);
        assert!(problems[1].message.contains("RegexRouter"), "{}", problems[1].message);
        assert!(Chain::of_connector(&[]).unwrap().is_empty());
    }
}
