//! Single message transforms and their predicates, as Kafka Connect's `transforms=` and
//! `predicates=` configure them: a chain of steps applied in order to each record, on a source
//! after `poll` and before the converters, on a sink after the converters and before `put`.
//! Each step may be guarded by a predicate (`transforms.a.predicate=p`, `transforms.a.negate`).
//! A step keeps, changes or drops the record; a dropped record is still accounted for (its source
//! offset is stored, a sink commits past it).
//!
//! Each of Connect's transforms has a file of its own, named in `KINDS`, under Connect's class
//! name (with `$Key` and `$Value` variants where Connect has them); `support` holds what they
//! share. The predicates are `TopicNameMatches`, `HasHeaderKey` and `RecordIsTombstone`. A type
//! that is none of Connect's names a transform plugin (`PluginStep`): the worker checks it against
//! its plugins and opens one instance of it per task (`Chain::for_task` gives a task its
//! `TaskChain`, whose plugin steps take the records of a batch in one call, `BatchApply`).
//! Depends on `data`, `model` and `convert` (for the text form of data).
//!
//! `Chain::of_connector` reads a connector's chain, every problem on its key; `Chain::apply` runs
//! it on one `Record` (topic, partition, offset, key, value, headers, timestamp). The files:
//! `basic` (`RegexRouter`, `Filter`, `InsertHeader`, `DropHeaders`), `cast`, `extract`,
//! `flatten`, `header_from`, `hoist`, `insert_field`, `mask`, `metadata`, `replace`,
//! `timestamp` (`TimestampConverter` and `TimestampRouter`, with `date_format`: Java's date
//! patterns) and `value_to_key`, each behind the `Apply` trait; `support` holds the part a variant
//! works on (`Side`), Connect's `Requirements` checks and `SchemaCache` (derived schemas, bounded).
//! Under `errors.tolerance=all` a plugin step that fails a batch is given its records one at a
//! time, so that only the failing ones are skipped. A transform holds no state between records
//! but its schema cache. `connect/tests/conformance.rs` runs every transform beside Connect's own
//! class, with the cases of `connect/tests/probes/transforms/`.

mod basic;
mod cast;
mod date_format;
mod extract;
mod flatten;
mod header_from;
mod hoist;
mod insert_field;
mod mask;
mod metadata;
mod replace;
pub mod support;
mod timestamp;
mod value_to_key;

use std::sync::Arc;

use crate::data::Value;
use crate::model::Part;
use support::Side;

/// A record as transforms see it (Kafka Connect's `ConnectRecord`).
pub use crate::model::ConnectRecord as Record;

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
    /// The failing step's class, as Connect names it.
    pub class: String,
    pub message: String,
}

const TRANSFORMS: &str = "org.apache.kafka.connect.transforms.";
const PREDICATES: &str = "org.apache.kafka.connect.transforms.predicates.";

/// What a transform did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The record goes on, changed or not.
    Keep,
    /// The record goes no further.
    Drop,
}

/// What one configured transform does to a record: changes it in place and keeps it, or drops
/// it, or says why it cannot, in Connect's words where Connect has them (the chain adds the step
/// and the record's topic).
pub trait Apply: Send + Sync + std::fmt::Debug {
    fn apply(&self, record: &mut Record) -> Result<Outcome, String>;
}

/// Makes a transform from its settings; `side` is the variant (`$Key` or `$Value`) for a kind
/// that has them, `Side::Value` otherwise.
type Configure = fn(&Settings, Side) -> Result<Box<dyn Apply>, TransformConfigError>;

/// One of Connect's transforms: its simple class name, whether it comes in `$Key` and `$Value`
/// variants, and how it is made.
struct Kind {
    name: &'static str,
    variants: bool,
    configure: Configure,
}

/// Every transform Wharf has, by Connect's simple class name.
const KINDS: &[Kind] = &[
    Kind { name: "Cast", variants: true, configure: cast::configure },
    Kind { name: "DropHeaders", variants: false, configure: basic::drop_headers },
    Kind { name: "ExtractField", variants: true, configure: extract::configure },
    Kind { name: "Filter", variants: false, configure: basic::filter },
    Kind { name: "Flatten", variants: true, configure: flatten::configure },
    Kind { name: "HeaderFrom", variants: true, configure: header_from::configure },
    Kind { name: "HoistField", variants: true, configure: hoist::configure },
    Kind { name: "InsertField", variants: true, configure: insert_field::configure },
    Kind { name: "InsertHeader", variants: false, configure: basic::insert_header },
    Kind { name: "MaskField", variants: true, configure: mask::configure },
    Kind { name: "RegexRouter", variants: false, configure: basic::regex_router },
    Kind { name: "ReplaceField", variants: true, configure: replace::configure },
    Kind { name: "SetSchemaMetadata", variants: true, configure: metadata::configure },
    Kind { name: "TimestampConverter", variants: true, configure: timestamp::converter },
    Kind { name: "TimestampRouter", variants: false, configure: timestamp::router },
    Kind { name: "ValueToKey", variants: false, configure: value_to_key::configure },
];

const BUILT_PREDICATES: &[&str] = &["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"];

/// The full class name of every transform Wharf has, with each `$Key` and `$Value` variant, as
/// Kafka Connect lists its transforms.
pub fn transform_classes() -> Vec<String> {
    let mut classes = Vec::new();
    for kind in KINDS {
        if kind.variants {
            for side in [Side::Key, Side::Value] {
                classes.push(format!("{TRANSFORMS}{}{}", kind.name, side.variant()));
            }
        } else {
            classes.push(format!("{TRANSFORMS}{}", kind.name));
        }
    }
    classes
}

/// The full class name of every predicate Wharf has.
pub fn predicate_classes() -> Vec<String> {
    BUILT_PREDICATES.iter().map(|p| format!("{PREDICATES}{p}")).collect()
}

/// A full Java regular expression match, as `Matcher.matches()`: the pattern anchored at both
/// ends.
#[derive(Debug, Clone)]
pub struct FullMatch(pub regex::Regex);

/// The most memory one compiled pattern may take: a pattern is a topic name's shape, and
/// `regex`'s own 10 MiB default lets a config of many `\w{4000}` patterns exhaust the worker.
pub const MAX_PATTERN_BYTES: usize = 256 * 1024;

impl FullMatch {
    pub fn new(pattern: &str) -> Result<Self, String> {
        regex::RegexBuilder::new(&format!("^(?:{})$", ascii_classes(pattern)))
            .size_limit(MAX_PATTERN_BYTES)
            .dfa_size_limit(MAX_PATTERN_BYTES)
            .build()
            .map(FullMatch)
            .map_err(|e| {
            format!("\"{pattern}\" is not a regular expression Wharf can use ({e}); Wharf's dialect is Java's without look-around and back-references")
        })
    }
}

/// The pattern with Java's meaning of `\w`, `\d`, `\s` and their negations: ASCII classes, as
/// Java's are unless a pattern asks for Unicode ones. (`regex`'s own are Unicode: `\w` alone
/// compiles to tens of KiB, and a topic name is ASCII anyway.)
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    // Inside `[...]`, a class is written without its own brackets; `]` first in a class is literal.
    let mut depth = 0usize;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let starting = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push(c);
                    break;
                };
                let class = match next {
                    'w' => Some("[:word:]"),
                    'W' => Some("[:^word:]"),
                    'd' => Some("[:digit:]"),
                    'D' => Some("[:^digit:]"),
                    's' => Some("[:space:]"),
                    'S' => Some("[:^space:]"),
                    _ => None,
                };
                match (class, depth) {
                    (Some(class), 0) => {
                        out.push('[');
                        out.push_str(class);
                        out.push(']');
                    }
                    (Some(class), _) => out.push_str(class),
                    (None, _) => {
                        out.push(c);
                        out.push(next);
                    }
                }
            }
            '[' => {
                out.push(c);
                if chars.peek() == Some(&':') && depth > 0 {
                    // A POSIX class `[:name:]` inside a class: copied whole.
                    for p in chars.by_ref() {
                        out.push(p);
                        if p == ']' {
                            break;
                        }
                    }
                    continue;
                }
                depth += 1;
                if chars.peek() == Some(&'^') {
                    out.extend(chars.next());
                }
                class_start = true;
            }
            ']' if depth > 0 && !starting => {
                depth -= 1;
                out.push(c);
            }
            other => out.push(other),
        }
    }
    out
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

/// A step that names a transform plugin: the plugin, the versions that may run it
/// (`transforms.<alias>.version`), and its settings (the keys after `transforms.<alias>.`, but
/// for the chain's own: `type`, `version`, `predicate`, `negate`).
#[derive(Debug, Clone, PartialEq)]
pub struct PluginStep {
    pub name: String,
    pub version: Option<semver::VersionReq>,
    pub settings: Vec<(String, String)>,
}

/// What a step does: one of Connect's transforms, built in, or a transform plugin.
#[derive(Debug, Clone)]
enum Does {
    Native(Arc<dyn Apply>),
    Plugin(PluginStep),
}

/// A transform plugin at work in one task: it takes the records of a batch in one call and says,
/// for each in order, what it became or none when it dropped it; or why it failed them all.
pub trait BatchApply: Send {
    fn apply(&mut self, records: Vec<Record>) -> Result<Vec<Option<Record>>, String>;
}

#[derive(Debug, Clone)]
struct Step {
    alias: String,
    /// Connect's full class name, or the plugin's name, for messages.
    class: String,
    does: Does,
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

/// The settings of one transform or predicate: `transforms.<alias>.<name>`.
pub struct Settings<'a> {
    config: &'a [(String, String)],
    prefix: String,
}

impl Settings<'_> {
    /// The full key of a setting, for messages.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        crate::model::last_value(self.config, &self.key(name))
    }

    /// A problem with a setting: its key and the message, which should name the key.
    pub fn problem(&self, name: &str, message: String) -> TransformConfigError {
        TransformConfigError { key: self.key(name), message }
    }

    /// A setting without a default: present and not blank.
    pub fn required(&self, name: &str, what: &str) -> Result<&str, TransformConfigError> {
        self.get(name).filter(|v| !v.trim().is_empty()).ok_or_else(|| TransformConfigError {
            key: self.key(name),
            message: format!("{} is required: {what}", self.key(name)),
        })
    }

    /// A string setting with a default.
    pub fn string_or<'s>(&'s self, name: &str, default: &'s str) -> &'s str {
        self.get(name).unwrap_or(default)
    }

    /// A list setting (Connect's `LIST`): items separated by commas, trimmed; none or blank is
    /// the empty list.
    pub fn list(&self, name: &str) -> Vec<String> {
        match self.get(name) {
            None => Vec::new(),
            Some(text) if text.trim().is_empty() => Vec::new(),
            Some(text) => text.split(',').map(|item| item.trim().to_string()).collect(),
        }
    }

    /// A boolean setting with a default: `true` or `false`, in any case.
    pub fn boolean(&self, name: &str, default: bool) -> Result<bool, TransformConfigError> {
        match self.get(name).map(str::trim) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(self.problem(name, format!("{}={v} is not valid: expected true or false", self.key(name)))),
        }
    }

    /// A setting that takes one of `choices` (compared without case), with a default; the
    /// choice as written in `choices`.
    pub fn choice(
        &self,
        name: &str,
        choices: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, TransformConfigError> {
        let given = self.get(name).map(str::trim).unwrap_or(default);
        choices.iter().copied().find(|c| c.eq_ignore_ascii_case(given)).ok_or_else(|| {
            self.problem(
                name,
                format!("{}={given} is not valid: expected one of {}", self.key(name), choices.join(", ")),
            )
        })
    }

    pub fn regex(&self, name: &str, what: &str) -> Result<FullMatch, TransformConfigError> {
        let pattern = self.required(name, what)?;
        FullMatch::new(pattern).map_err(|message| TransformConfigError {
            key: self.key(name),
            message: format!("{}: {message}", self.key(name)),
        })
    }
}

/// The most transforms and predicates, together, one connector may name: each compiles at
/// validate and runs per record, and a chain longer than this is a mistake, not a pipeline.
pub const MAX_CHAIN_ENTRIES: usize = 100;

impl Chain {
    /// The chain a connector config names; every problem found, each with its key.
    pub fn of_connector(config: &[(String, String)]) -> Result<Self, Vec<TransformConfigError>> {
        let count = |key: &str| aliases(config, key).map_or(0, |list| list.len());
        let (transforms, predicates) = (count("transforms"), count("predicates"));
        if transforms + predicates > MAX_CHAIN_ENTRIES {
            return Err(vec![TransformConfigError {
                key: "transforms".to_string(),
                message: format!(
                    "transforms names {transforms} transforms and predicates names {predicates} predicates: a connector \
                     may name at most {MAX_CHAIN_ENTRIES} of them together; split the work across connectors"
                ),
            }]);
        }
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

    /// The record after every step, or none when a step dropped it; for a chain of Connect's
    /// transforms only (a task runs its `TaskChain`, which has its plugins' instances).
    pub fn apply(&self, mut record: Record) -> Result<Option<Record>, TransformError> {
        for step in &self.steps {
            match &step.does {
                Does::Native(transform) => {
                    match run_native(&step.alias, &step.class, transform.as_ref(), &step.predicate, &mut record)? {
                        Outcome::Keep => {}
                        Outcome::Drop => return Ok(None),
                    }
                }
                Does::Plugin(_) => {
                    return Err(TransformError {
                        class: step.class.clone(),
                        message: format!(
                            "transforms.{} names the transform plugin {}, which runs in a task's chain only",
                            step.alias, step.class
                        ),
                    })
                }
            }
        }
        Ok(Some(record))
    }

    /// The transform plugins the chain names, with their aliases, for the worker to check.
    pub fn plugin_steps(&self) -> impl Iterator<Item = (&str, &PluginStep)> {
        self.steps.iter().filter_map(|s| match &s.does {
            Does::Plugin(plugin) => Some((s.alias.as_str(), plugin)),
            Does::Native(_) => None,
        })
    }

    /// The chain one task runs: each plugin step opened by `open` (given the step's alias and
    /// what it names); the error names the step.
    pub fn for_task(
        &self,
        mut open: impl FnMut(&str, &PluginStep) -> Result<Box<dyn BatchApply>, String>,
    ) -> Result<TaskChain, String> {
        let mut steps = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            let does = match &step.does {
                Does::Native(transform) => TaskDoes::Native(transform.clone()),
                Does::Plugin(plugin) => TaskDoes::Batch(
                    open(&step.alias, plugin)
                        .map_err(|e| format!("transforms.{} ({}) could not be opened: {e}", step.alias, step.class))?,
                ),
            };
            steps.push(TaskStep {
                alias: step.alias.clone(),
                class: step.class.clone(),
                does,
                predicate: step.predicate.clone(),
            });
        }
        Ok(TaskChain { steps, isolate_failures: false })
    }
}

/// One of Connect's transforms on a record, if its predicate lets it; the failure names the step
/// and the record's topic.
fn run_native(
    alias: &str,
    class: &str,
    transform: &dyn Apply,
    predicate: &Option<(Predicate, bool)>,
    record: &mut Record,
) -> Result<Outcome, TransformError> {
    if let Some((predicate, negate)) = predicate {
        if predicate.test(record) == *negate {
            return Ok(Outcome::Keep);
        }
    }
    transform.apply(record).map_err(|reason| TransformError {
        class: class.to_string(),
        message: format!("transforms.{alias} ({class}) failed on a record for topic {}: {reason}", record.topic),
    })
}

/// What a task's step does: one of Connect's transforms, or a plugin's instance.
enum TaskDoes {
    Native(Arc<dyn Apply>),
    Batch(Box<dyn BatchApply>),
}

struct TaskStep {
    alias: String,
    class: String,
    does: TaskDoes,
    predicate: Option<(Predicate, bool)>,
}

/// A task's transforms, in order, with the task's own instance of each transform plugin.
pub struct TaskChain {
    steps: Vec<TaskStep>,
    /// When a plugin fails a batch, give it the records one at a time, so that only those it
    /// fails on fail (for `errors.tolerance=all`, which skips them).
    isolate_failures: bool,
}

/// Where a record of a batch stands between steps.
enum Slot {
    Live(Record),
    Dropped,
    Failed(TransformError),
    /// Lent to a plugin step for the length of its call.
    Lent,
}

impl TaskChain {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// See `isolate_failures`.
    pub fn isolate_failures(&mut self, isolate: bool) {
        self.isolate_failures = isolate;
    }

    /// The records of a batch after every step, each in the order given: the record it became,
    /// none when a step dropped it, or the failure of the step that failed it.
    pub fn apply(&mut self, records: Vec<Record>) -> Vec<Result<Option<Record>, TransformError>> {
        let mut slots: Vec<Slot> = records.into_iter().map(Slot::Live).collect();
        for step in &mut self.steps {
            let applies = |record: &Record| match &step.predicate {
                Some((predicate, negate)) => predicate.test(record) != *negate,
                None => true,
            };
            match &mut step.does {
                TaskDoes::Native(transform) => {
                    for slot in &mut slots {
                        let Slot::Live(record) = slot else { continue };
                        match run_native(&step.alias, &step.class, transform.as_ref(), &step.predicate, record) {
                            Ok(Outcome::Keep) => {}
                            Ok(Outcome::Drop) => *slot = Slot::Dropped,
                            Err(failure) => *slot = Slot::Failed(failure),
                        }
                    }
                }
                TaskDoes::Batch(plugin) => {
                    let chosen: Vec<usize> = slots
                        .iter()
                        .enumerate()
                        .filter(|(_, slot)| matches!(slot, Slot::Live(r) if applies(r)))
                        .map(|(i, _)| i)
                        .collect();
                    if chosen.is_empty() {
                        continue;
                    }
                    let lent: Vec<Record> = chosen
                        .iter()
                        .filter_map(|&i| match std::mem::replace(&mut slots[i], Slot::Lent) {
                            Slot::Live(record) => Some(record),
                            _ => None,
                        })
                        .collect();
                    let spare = self.isolate_failures.then(|| lent.clone());
                    let failed = |reason: &str, records: usize| TransformError {
                        class: step.class.clone(),
                        message: format!(
                            "transforms.{} ({}) failed on a batch of {records} record(s): {reason}",
                            step.alias, step.class
                        ),
                    };
                    match plugin.apply(lent) {
                        Ok(results) => {
                            for (&i, result) in chosen.iter().zip(results) {
                                slots[i] = match result {
                                    Some(record) => Slot::Live(record),
                                    None => Slot::Dropped,
                                };
                            }
                        }
                        Err(reason) => match spare {
                            // One at a time, so that only what the plugin fails on fails.
                            Some(records) if records.len() > 1 => {
                                for (&i, record) in chosen.iter().zip(records) {
                                    slots[i] = match plugin.apply(vec![record]) {
                                        Ok(mut one) => match one.pop().flatten() {
                                            Some(record) => Slot::Live(record),
                                            None => Slot::Dropped,
                                        },
                                        Err(reason) => Slot::Failed(failed(&reason, 1)),
                                    };
                                }
                            }
                            _ => {
                                for &i in &chosen {
                                    slots[i] = Slot::Failed(failed(&reason, chosen.len()));
                                }
                            }
                        },
                    }
                }
            }
        }
        slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Live(record) => Ok(Some(record)),
                Slot::Dropped => Ok(None),
                Slot::Failed(failure) => Err(failure),
                Slot::Lent => Err(TransformError {
                    class: String::new(),
                    message: "a transform plugin did not give a record back".into(),
                }),
            })
            .collect()
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
    let (base, variant) = match simple.split_once('$') {
        Some((base, variant)) => (base, Some(variant)),
        None => (simple, None),
    };
    let type_problem = |message: String| TransformConfigError { key: settings.key("type"), message };
    let Some(kind) = KINDS.iter().find(|k| k.name == base) else {
        if class.starts_with(TRANSFORMS) || class.contains('.') {
            // A Java class name that is none of Connect's: a typo, or a transform of another
            // project, which Wharf cannot run.
            let known = KINDS.iter().map(|k| format!("{TRANSFORMS}{}", k.name)).collect::<Vec<_>>().join(", ");
            return Err(type_problem(format!(
                "{}={class} is not one of Kafka Connect's transforms, which Wharf has: {known}; a transform of \
                 your own is a transform plugin, named by its plugin name",
                settings.key("type")
            )));
        }
        let step = plugin_step(&settings, class)?;
        let predicate = step_predicate(&settings, predicates)?;
        return Ok(Step { alias: alias.to_string(), class: class.to_string(), does: Does::Plugin(step), predicate });
    };
    let side = match (kind.variants, variant) {
        (false, None) => Side::Value,
        (true, Some("Key")) => Side::Key,
        (true, Some("Value")) => Side::Value,
        (true, _) => {
            return Err(type_problem(format!(
                "{}={class}: {base} comes in a variant for keys and one for values; use {TRANSFORMS}{base}$Key or {TRANSFORMS}{base}$Value",
                settings.key("type")
            )))
        }
        (false, Some(_)) => {
            return Err(type_problem(format!(
                "{}={class}: {base} has no variants; use {TRANSFORMS}{base}",
                settings.key("type")
            )))
        }
    };
    let class = match kind.variants {
        true => format!("{TRANSFORMS}{base}{}", side.variant()),
        false => format!("{TRANSFORMS}{base}"),
    };
    let transform: Arc<dyn Apply> = Arc::from((kind.configure)(&settings, side)?);
    let predicate = step_predicate(&settings, predicates)?;
    Ok(Step { alias: alias.to_string(), class, does: Does::Native(transform), predicate })
}

/// The keys of a step that are the chain's, not the transform's.
const STEP_KEYS: &[&str] = &["type", "version", "predicate", "negate"];

/// A step naming a transform plugin: its version pin and its settings.
fn plugin_step(settings: &Settings, name: &str) -> Result<PluginStep, TransformConfigError> {
    let version = match settings.get("version").map(str::trim).filter(|v| !v.is_empty()) {
        None => None,
        Some(text) => Some(
            crate::model::parse_version_requirement(text)
                .map_err(|e| settings.problem("version", format!("{}={text}: {e}", settings.key("version"))))?,
        ),
    };
    let mut own: Vec<(String, String)> = Vec::new();
    for (key, value) in settings.config {
        let Some(name) = key.strip_prefix(settings.prefix.as_str()) else { continue };
        if STEP_KEYS.contains(&name) {
            continue;
        }
        // The last of a repeated key wins, as everywhere in a config.
        own.retain(|(k, _)| k != name);
        own.push((name.to_string(), value.clone()));
    }
    Ok(PluginStep { name: name.to_string(), version, settings: own })
}

/// The predicate guarding a step, and whether it is negated.
fn step_predicate(
    settings: &Settings,
    predicates: &[(String, Predicate)],
) -> Result<Option<(Predicate, bool)>, TransformConfigError> {
    let Some(name) = settings.get("predicate").map(str::trim).filter(|p| !p.is_empty()) else { return Ok(None) };
    let found = predicates.iter().find(|(a, _)| a == name).map(|(_, p)| p.clone()).ok_or_else(|| {
        settings.problem(
            "predicate",
            format!(
                "{}={name} names no predicate of \"predicates\"; add {name} to predicates and set predicates.{name}.type",
                settings.key("predicate")
            ),
        )
    })?;
    Ok(Some((found, settings.boolean("negate", false)?)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_chain_is_bounded_in_length_and_each_pattern_in_size() {
        let mut config = vec![(
            "transforms".to_string(),
            (0..=MAX_CHAIN_ENTRIES).map(|i| format!("t{i}")).collect::<Vec<_>>().join(","),
        )];
        for i in 0..=MAX_CHAIN_ENTRIES {
            config.push((format!("transforms.t{i}.type"), "org.apache.kafka.connect.transforms.RegexRouter".into()));
            config.push((format!("transforms.t{i}.regex"), "a".into()));
            config.push((format!("transforms.t{i}.replacement"), "b".into()));
        }
        let refused = Chain::of_connector(&config).unwrap_err();
        assert!(refused[0].message.contains("at most 100 of them together"), "{}", refused[0].message);
        let at_bound: Vec<(String, String)> = config
            .iter()
            .filter(|(k, _)| !k.starts_with(&format!("transforms.t{MAX_CHAIN_ENTRIES}.")))
            .map(|(k, v)| match k.as_str() {
                "transforms" => {
                    (k.clone(), (0..MAX_CHAIN_ENTRIES).map(|i| format!("t{i}")).collect::<Vec<_>>().join(","))
                }
                _ => (k.clone(), v.clone()),
            })
            .collect();
        assert!(Chain::of_connector(&at_bound).is_ok());
        let huge = FullMatch::new(r"\w{4000}").unwrap_err();
        assert!(huge.contains("is not a regular expression Wharf can use"), "{huge}");
        assert!(FullMatch::new(r"(.*)-(\w+)-\w{40}").is_ok());
    }

    #[test]
    fn perl_classes_are_javas_ascii_ones() {
        let cases = [
            (r"\w+-\d\s\W\D\S", "[[:word:]]+-[[:digit:]][[:space:]][[:^word:]][[:^digit:]][[:^space:]]"),
            (r"[\w.-]+", "[[:word:].-]+"),
            (r"[^\d]x", "[^[:digit:]]x"),
            (r"[]\w]", "[][:word:]]"),
            (r"[[:alpha:]\w]\\w", r"[[:alpha:][:word:]]\\w"),
            (r"a\.b\Q", r"a\.b\Q"),
        ];
        for (java, ours) in cases {
            assert_eq!(ascii_classes(java), ours, "{java}");
        }
        let word = FullMatch::new(r"\w+").unwrap();
        assert!(word.0.is_match("orders_2") && !word.0.is_match("ördérs"));
    }

    use super::*;
    use crate::data::{Data, Schema, Type};
    use crate::model::PartHeader;
    use std::sync::Arc;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn record(topic: &str) -> Record {
        Record {
            topic: topic.into(),
            partition: None,
            offset: None,
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
        assert_eq!(basic::rust_replacement("$12x", &regex).unwrap(), "${1}2x", "digits past the last group are text");
        assert!(basic::rust_replacement("$3", &regex).unwrap_err().contains("no group"));
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

    /// A stand-in transform plugin: drops records of topic "drop", fails batches holding a record
    /// of topic "fail", and renames the rest; counts its calls.
    struct Fake {
        calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl BatchApply for Fake {
        fn apply(&mut self, records: Vec<Record>) -> Result<Vec<Option<Record>>, String> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if records.iter().any(|r| r.topic == "fail") {
                return Err("refused".into());
            }
            Ok(records
                .into_iter()
                .map(|r| (r.topic != "drop").then(|| Record { topic: format!("{}-seen", r.topic), ..r }))
                .collect())
        }
    }

    #[test]
    fn a_tasks_plugin_steps_take_a_batch_in_one_call_and_failures_can_be_isolated() {
        let chain = Chain::of_connector(&pairs(&[
            ("transforms", "mine,tag"),
            ("transforms.mine.type", "some-plugin"),
            ("transforms.mine.version", "1.x"),
            ("transforms.mine.setting", "a"),
            ("transforms.mine.predicate", "not-skip"),
            ("transforms.mine.negate", "true"),
            ("transforms.tag.type", "InsertHeader"),
            ("transforms.tag.header", "n"),
            ("transforms.tag.value.literal", "1"),
            ("predicates", "not-skip"),
            ("predicates.not-skip.type", "TopicNameMatches"),
            ("predicates.not-skip.pattern", "skip"),
        ]))
        .unwrap();
        let steps: Vec<(&str, &PluginStep)> = chain.plugin_steps().collect();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].0, "mine");
        assert_eq!(steps[0].1.name, "some-plugin");
        assert_eq!(steps[0].1.settings, pairs(&[("setting", "a")]), "the chain's own keys are not the plugin's");
        assert!(steps[0].1.version.as_ref().is_some_and(|v| v.matches(&semver::Version::new(1, 4, 0))));
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let open = |_: &str, _: &PluginStep| -> Result<Box<dyn BatchApply>, String> {
            Ok(Box::new(Fake { calls: calls.clone() }))
        };
        let mut task = chain.for_task(open).unwrap();
        let topics = |results: &[Result<Option<Record>, TransformError>]| -> Vec<String> {
            results
                .iter()
                .map(|r| match r {
                    Ok(Some(r)) => r.topic.clone(),
                    Ok(None) => "dropped".into(),
                    Err(_) => "failed".into(),
                })
                .collect()
        };
        let results = task.apply(vec![record("a"), record("skip"), record("drop"), record("b")]);
        assert_eq!(topics(&results), ["a-seen", "skip", "dropped", "b-seen"]);
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1, "one call for the batch");
        let Ok(Some(kept)) = &results[1] else { panic!() };
        assert_eq!(kept.headers.last().map(|h| h.key.as_str()), Some("n"), "the native step after it ran");
        // A failed batch fails every record it held, or only the failing one when isolated.
        let results = task.apply(vec![record("a"), record("fail")]);
        assert_eq!(topics(&results), ["failed", "failed"]);
        let Err(e) = &results[0] else { panic!() };
        assert!(
            e.message.contains("transforms.mine (some-plugin) failed on a batch of 2 record(s): refused"),
            "{}",
            e.message
        );
        task.isolate_failures(true);
        assert_eq!(topics(&task.apply(vec![record("a"), record("fail"), record("c")])), ["a-seen", "failed", "c-seen"]);
        // A chain with plugin steps runs only in a task.
        assert!(chain.apply(record("a")).unwrap_err().message.contains("runs in a task's chain only"));
        let refused = chain.for_task(|_, _| Err("not there".into())).err().unwrap();
        assert!(refused.contains("transforms.mine (some-plugin) could not be opened: not there"), "{refused}");
    }

    #[test]
    fn a_java_class_that_is_none_of_connects_is_refused_not_taken_for_a_plugin() {
        let problems = Chain::of_connector(&pairs(&[
            ("transforms", "a"),
            ("transforms.a.type", "org.apache.kafka.connect.transforms.Nope"),
        ]))
        .unwrap_err();
        assert!(problems[0].message.contains("not one of Kafka Connect's transforms"), "{}", problems[0].message);
        let problems = Chain::of_connector(&pairs(&[
            ("transforms", "a"),
            ("transforms.a.type", "mine"),
            ("transforms.a.version", "not a version"),
        ]))
        .unwrap_err();
        assert_eq!(problems[0].key, "transforms.a.version");
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
            ("transforms.a.type", "org.apache.kafka.connect.transforms.InsertField"),
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
        assert!(problems[0].message.contains("InsertField$Key or"), "{}", problems[0].message);
        assert!(problems[1].message.contains("RegexRouter"), "{}", problems[1].message);
        assert!(Chain::of_connector(&[]).unwrap().is_empty());
    }
}
