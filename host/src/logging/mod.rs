//! The process's log levels, changed while it runs: Kafka Connect's `/admin/loggers`. Loggers
//! are `tracing` targets: `root` (every target not set otherwise), the host's modules
//! (`wharf`, `wharf::worker`, …, also written with dots: `wharf.worker`), `plugin` (what
//! plugins log) and `librdkafka`. Setting a logger sets its descendants too, as Connect's
//! `Configurator.setAllLevels` does.
//!
//! `install` sets the process's subscriber up, filtered by `RUST_LOG` or `DEFAULT_FILTER`, behind
//! a reload handle; `Loggers` changes the filter through it, at most `MAX_LOGGERS` loggers.

mod format;

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

pub use format::{set_format, LogContext, LogFormat};

use tracing_subscriber::{reload, EnvFilter, Registry};

/// The filter a worker starts with when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "info,librdkafka=warn,rdkafka=warn";

/// Log4j's level names, which Kafka Connect's API takes, and the `tracing` level each filters at.
const LEVELS: &[(&str, &str)] = &[
    ("OFF", "off"),
    ("FATAL", "error"),
    ("ERROR", "error"),
    ("WARN", "warn"),
    ("INFO", "info"),
    ("DEBUG", "debug"),
    ("TRACE", "trace"),
    ("ALL", "trace"),
];

/// The most loggers that may be set: each is a directive every log line's filter checks.
pub const MAX_LOGGERS: usize = 256;

/// One logger's level, as `GET /admin/loggers` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggerLevel {
    /// Log4j's name of the level.
    pub level: String,
    /// When it was last set over REST (ms since the epoch); none when it is the start's.
    pub last_modified: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LevelError {
    /// Not a level name: Kafka Connect answers 404 to this.
    UnknownLevel(String),
    TooMany,
    /// The filter could not be changed.
    Filter(String),
}

impl std::fmt::Display for LevelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LevelError::UnknownLevel(level) => write!(f, "invalid log level '{level}'."),
            LevelError::TooMany => write!(f, "at most {MAX_LOGGERS} loggers may be set; set a common ancestor instead"),
            LevelError::Filter(why) => write!(f, "the log filter could not be changed: {why}"),
        }
    }
}

struct State {
    root: LoggerLevel,
    /// Loggers set at start (`RUST_LOG`'s `target=level`) or over REST, by name as given.
    set: BTreeMap<String, LoggerLevel>,
    /// `RUST_LOG` directives that are not a plain `target=level` (span or field filters), kept as
    /// they are.
    other: Vec<String>,
}

pub struct Loggers {
    state: Mutex<State>,
    handle: Option<reload::Handle<EnvFilter, Registry>>,
}

static GLOBAL: OnceLock<Loggers> = OnceLock::new();

/// The process's loggers, once `install` has run (a worker's `main`); none in tests and tools.
pub fn global() -> Option<&'static Loggers> {
    GLOBAL.get()
}

/// Colours only for a person at a terminal: a log redirected to a file or a collector gets plain
/// text, as does anyone who sets `NO_COLOR`.
fn colours() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the process's log subscriber: lines to stderr, filtered by `RUST_LOG` (or
/// `DEFAULT_FILTER`), with levels `/admin/loggers` may change.
pub fn install() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let set = std::env::var("RUST_LOG").ok();
    let refused = set.as_deref().and_then(|f| EnvFilter::try_new(f).err().map(|e| (f.to_string(), e)));
    let given = set.filter(|_| refused.is_none());
    let directives = given.as_deref().unwrap_or(DEFAULT_FILTER);
    let (filter, handle) = reload::Layer::new(EnvFilter::new(directives));
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(format::ContextLayer)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(colours())
                .event_format(format::LineFormat { ansi: colours() }),
        )
        .try_init()
        .is_ok();
    let loggers = Loggers::parse(directives, installed.then_some(handle));
    let _ = GLOBAL.set(loggers);
    if let Some((filter, e)) = refused {
        tracing::warn!(
            "RUST_LOG={filter} is not a filter this worker can read ({e}); logging with {DEFAULT_FILTER} instead"
        );
    }
}

/// Whether `level` is one of Log4j's level names, which Kafka Connect's API takes.
pub fn check_level(level: &str) -> Result<(), LevelError> {
    log4j_name(level).map(|_| ())
}

/// Log4j's name of `level`, given in any case.
fn log4j_name(level: &str) -> Result<&'static str, LevelError> {
    LEVELS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(level.trim()))
        .map(|(name, _)| *name)
        .ok_or_else(|| LevelError::UnknownLevel(level.to_string()))
}

/// A logger name as a `tracing` target: `wharf.worker` is `wharf::worker`.
fn target(name: &str) -> String {
    if name.starts_with("wharf.") {
        name.replace('.', "::")
    } else {
        name.to_string()
    }
}

/// Whether `name` is `namespace` or below it (`wharf::worker` is below `wharf`).
fn within(name: &str, namespace: &str) -> bool {
    let (name, namespace) = (target(name), target(namespace));
    name == namespace || name.strip_prefix(&namespace).is_some_and(|rest| rest.starts_with("::"))
}

fn level_name(tracing_level: &str) -> String {
    match tracing_level.to_ascii_lowercase().as_str() {
        "off" => "OFF",
        "error" => "ERROR",
        "warn" => "WARN",
        "debug" => "DEBUG",
        "trace" => "TRACE",
        _ => "INFO",
    }
    .to_string()
}

impl Loggers {
    fn parse(directives: &str, handle: Option<reload::Handle<EnvFilter, Registry>>) -> Self {
        let mut root = LoggerLevel { level: "ERROR".into(), last_modified: None };
        let mut set = BTreeMap::new();
        let mut other = Vec::new();
        for directive in directives.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            let plain = |text: &str| text.chars().all(|c| c.is_ascii_alphanumeric() || "_:-".contains(c));
            match directive.split_once('=') {
                None if LEVELS.iter().any(|(_, t)| t.eq_ignore_ascii_case(directive)) => {
                    root = LoggerLevel { level: level_name(directive), last_modified: None }
                }
                Some((name, level)) if plain(name) && LEVELS.iter().any(|(_, t)| t.eq_ignore_ascii_case(level)) => {
                    set.insert(name.to_string(), LoggerLevel { level: level_name(level), last_modified: None });
                }
                _ => other.push(directive.to_string()),
            }
        }
        Loggers { state: Mutex::new(State { root, set, other }), handle }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every logger with a level of its own, and `root`; those set OFF left out, as Connect does.
    pub fn all(&self) -> BTreeMap<String, LoggerLevel> {
        let state = self.locked();
        let mut all: BTreeMap<String, LoggerLevel> =
            state.set.iter().filter(|(_, l)| l.level != "OFF").map(|(n, l)| (n.clone(), l.clone())).collect();
        all.insert("root".into(), state.root.clone());
        all
    }

    /// A logger's level: its own, or for the host's modules and `plugin`, the nearest
    /// ancestor's (`root` last). Other names are loggers no one logs to: none.
    pub fn level(&self, name: &str) -> Option<LoggerLevel> {
        let state = self.locked();
        if name == "root" {
            return Some(state.root.clone());
        }
        if let Some(level) = state.set.get(name) {
            return Some(level.clone());
        }
        let t = target(name);
        if !(t == "wharf" || t.starts_with("wharf::") || t == "plugin") {
            return None;
        }
        let nearest = state.set.iter().filter(|(n, _)| within(name, n)).max_by_key(|(n, _)| target(n).len());
        Some(
            nearest
                .map_or_else(|| state.root.clone(), |(_, level)| LoggerLevel { last_modified: None, ..level.clone() }),
        )
    }

    /// Sets `namespace` and every logger below it to `level` (Log4j's names, any case); the names
    /// of the loggers whose level changed, sorted.
    pub fn set(&self, namespace: &str, level: &str, now_ms: i64) -> Result<Vec<String>, LevelError> {
        let name = log4j_name(level)?;
        let new = LoggerLevel { level: name.to_string(), last_modified: Some(now_ms) };
        let mut state = self.locked();
        let mut changed = Vec::new();
        if namespace == "root" {
            if state.root.level != new.level {
                changed.push("root".to_string());
            }
            state.root = new.clone();
            for (logger, current) in state.set.iter_mut() {
                if current.level != new.level {
                    changed.push(logger.clone());
                }
                *current = new.clone();
            }
        } else {
            if !state.set.contains_key(namespace) && state.set.len() >= MAX_LOGGERS {
                return Err(LevelError::TooMany);
            }
            let before = state.set.get(namespace).map(|l| l.level.clone());
            if before.as_deref() != Some(new.level.as_str()) {
                changed.push(namespace.to_string());
            }
            state.set.insert(namespace.to_string(), new.clone());
            for (logger, current) in state.set.iter_mut().filter(|(n, _)| n.as_str() != namespace) {
                if within(logger, namespace) {
                    if current.level != new.level {
                        changed.push(logger.clone());
                    }
                    *current = new.clone();
                }
            }
        }
        changed.sort();
        self.apply(&state)?;
        tracing::info!("log level of {namespace} and the loggers below it set to {}", new.level);
        Ok(changed)
    }

    /// The filter of the levels set: the root's, then each logger's, then the rest of `RUST_LOG`.
    fn directives(state: &State) -> String {
        let tracing_level =
            |level: &LoggerLevel| LEVELS.iter().find(|(name, _)| *name == level.level).map_or("info", |(_, t)| t);
        let mut directives = vec![tracing_level(&state.root).to_string()];
        directives.extend(state.set.iter().map(|(name, level)| format!("{}={}", target(name), tracing_level(level))));
        directives.extend(state.other.iter().cloned());
        directives.join(",")
    }

    fn apply(&self, state: &State) -> Result<(), LevelError> {
        let Some(handle) = &self.handle else { return Ok(()) };
        let filter = EnvFilter::try_new(Self::directives(state)).map_err(|e| LevelError::Filter(e.to_string()))?;
        handle.reload(filter).map_err(|e| LevelError::Filter(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_is_read_into_loggers_and_written_back_as_a_filter() {
        let loggers = Loggers::parse("info,librdkafka=warn,wharf::herder=debug,wharf[span]=trace", None);
        let all = loggers.all();
        assert_eq!(all["root"].level, "INFO");
        assert_eq!(all["librdkafka"].level, "WARN");
        assert_eq!(all["wharf::herder"].level, "DEBUG");
        assert_eq!(
            Loggers::directives(&loggers.locked()),
            "info,librdkafka=warn,wharf::herder=debug,wharf[span]=trace"
        );
    }

    #[test]
    fn a_namespace_sets_its_descendants_and_says_which_changed() {
        let loggers = Loggers::parse("info,wharf::herder=debug,wharf::worker::sink=warn,plugin=info", None);
        let changed = loggers.set("wharf", "trace", 7).unwrap();
        assert_eq!(changed, ["wharf", "wharf::herder", "wharf::worker::sink"]);
        assert_eq!(loggers.level("wharf.worker").map(|l| l.level), Some("TRACE".into()));
        assert_eq!(loggers.level("wharf::herder"), Some(LoggerLevel { level: "TRACE".into(), last_modified: Some(7) }));
        assert_eq!(loggers.level("plugin").map(|l| l.level), Some("INFO".into()));
        assert_eq!(loggers.level("org.apache.kafka.connect.runtime.Worker"), None);
        assert_eq!(
            loggers.set("root", "warn", 8).unwrap(),
            ["plugin", "root", "wharf", "wharf::herder", "wharf::worker::sink"]
        );
        assert_eq!(loggers.set("root", "WARN", 9).unwrap(), Vec::<String>::new());
        assert_eq!(loggers.set("wharf", "LOUD", 9), Err(LevelError::UnknownLevel("LOUD".into())));
    }
}
