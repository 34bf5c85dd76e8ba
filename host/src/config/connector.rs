//! Connector configs: the keys the host acts on, checked against the plugin's own definition.
//! Every key, the host's included, is also handed to the plugin, as Kafka Connect does.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

use super::ceiling::GrantCeiling;
use super::keys::Checked::{Flag, Number};
use super::keys::{connector as C, Checked, Key};
use super::properties::{self, PropertiesError};
use super::worker::WasmLimits;
use wharf_connect::model::{last_value, ConnectionGrant, KeyGrant, Names};
use wharf_jdbc_url::{JdbcUrl, Roots, TlsMode};

#[derive(Debug, Error)]
pub enum ConnectorConfigError {
    #[error(transparent)]
    Properties(#[from] PropertiesError),
    /// `key` is the key the problem is with, where there is one.
    #[error("connector config {origin}: {message}")]
    Invalid { origin: String, key: Option<String>, message: String },
    /// More than one key is wrong; each is an `Invalid`.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<ConnectorConfigError>),
}

impl ConnectorConfigError {
    /// The key the problem is with, if it is about one key (the first one's, for several).
    pub fn key(&self) -> Option<&str> {
        match self {
            ConnectorConfigError::Invalid { key, .. } => key.as_deref(),
            ConnectorConfigError::Several(problems) => problems.first().and_then(|p| p.key()),
            ConnectorConfigError::Properties(_) => None,
        }
    }

    /// The error with every secret in its messages replaced by its reference.
    pub fn scrubbed(self, secrets: &super::providers::Secrets) -> Self {
        if secrets.is_empty() {
            return self;
        }
        match self {
            ConnectorConfigError::Invalid { origin, key, message } => {
                ConnectorConfigError::Invalid { origin, key, message: secrets.scrub(&message) }
            }
            ConnectorConfigError::Several(problems) => {
                ConnectorConfigError::Several(problems.into_iter().map(|p| p.scrubbed(secrets)).collect())
            }
            other => other,
        }
    }

    /// Each problem on its own, with its key: one for most errors, every one for `Several`.
    pub fn problems(&self) -> Vec<&ConnectorConfigError> {
        match self {
            ConnectorConfigError::Several(problems) => problems.iter().collect(),
            single => vec![single],
        }
    }
}

/// A folder of the worker's file system that a connector's tasks may use, mapped at the path the
/// connector names it by inside the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct FolderGrant {
    /// The folder, in canonical form (checked against the worker's `GrantCeiling`).
    pub path: PathBuf,
    /// The path as the connector config wrote it, where the plugin finds the folder.
    pub guest: PathBuf,
    pub writable: bool,
}

/// What a server's certificate must prove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Nothing: the connection is encrypted, and whoever answers is trusted (pgjdbc `prefer`
    /// and `require`, MariaDB `trust`).
    Nothing,
    /// A chain to a trusted authority, for any host name (`verify-ca`).
    Chain,
    /// A chain to a trusted authority, for the host connected to (`verify-full`).
    ChainAndName,
}

impl Verify {
    /// The check a driver's mode asks for.
    pub fn of(mode: TlsMode) -> Verify {
        match mode {
            TlsMode::VerifyFull => Verify::ChainAndName,
            TlsMode::VerifyCa => Verify::Chain,
            TlsMode::Disable | TlsMode::Allow | TlsMode::Prefer | TlsMode::Require => Verify::Nothing,
        }
    }
}

/// The TLS policy of one server a connector's config names.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerTls {
    /// A host name or an IP address, as the config gives it; `None` for every server no other
    /// policy names (`wasm.tls.trust`).
    pub host: Option<String>,
    pub verify: Verify,
    /// The trusted certificates; the public authorities when `None`.
    pub roots: Option<Roots>,
    /// Where the policy comes from, for messages: `connection.url (sslmode=verify-full)`.
    pub origin: String,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // PEM text inside a URL is not a secret, but it is long.
        let roots = match &self.roots {
            None => "public authorities".to_string(),
            Some(Roots::File(path)) => path.clone(),
            Some(Roots::Pem(_)) => "PEM text".to_string(),
        };
        let host = self.host.as_deref().unwrap_or("every other server");
        write!(f, "{host} {:?} ({roots}, from {})", self.verify, self.origin)
    }
}

#[derive(Debug, Clone)]
pub struct ConnectorConfig {
    pub name: String,
    /// `connector.class`: the plugin's name (or a Kafka Connect class name it stands for).
    pub class: String,
    /// `connector.version`: which versions of the plugin may run it; the newest otherwise.
    pub version: Option<semver::VersionReq>,
    pub tasks_max: u32,
    /// Sinks: the topics to read (`topics`).
    pub topics: Vec<String>,
    /// Sinks: every topic whose whole name matches (`topics.regex`), in place of `topics`.
    pub topics_regex: Option<TopicPattern>,
    /// Sources: the topics to create before their first record (`topic.creation.*`).
    pub topic_creation: Option<super::topic_creation::TopicCreation>,
    pub folders: Vec<FolderGrant>,
    /// `wasm.net.connect`: `host:port` addresses the tasks may open TCP connections to.
    pub connect: Vec<String>,
    /// `wasm.http.allow`: `host:port` authorities the tasks may send HTTP requests to.
    pub http: Vec<String>,
    /// The TLS policies of the servers a declared JDBC URL names (`runtime::tls`).
    pub tls: Vec<ServerTls>,
    pub limits: WasmLimits,
    /// The converters the connector names; the worker's stand in for the others.
    pub converters: super::ConverterOverrides,
    /// `transforms` and `predicates`: the steps each record goes through.
    pub transforms: wharf_connect::transform::Chain,
    /// `errors.*`: what a record that fails conversion or a transform does to the task.
    pub errors: super::tolerance::ErrorPolicy,
    /// `producer.override.*`, `consumer.override.*`, `admin.override.*`: the connector's own
    /// settings of its Kafka clients, applied after the worker's.
    pub client_overrides: ClientOverrides,
    /// `auto.restart.*`: whether and how often the worker restarts FAILED tasks by itself.
    pub auto_restart: AutoRestart,
    /// Sources: `exactly.once.support` and `transaction.boundary*` (KIP-618).
    pub exactly_once: ExactlyOnce,
    /// Sources: `offsets.storage.topic`, a topic of the connector's own for its offsets.
    pub offsets_topic: Option<String>,
    /// Every key as given (and stored), in order, `${provider:path:key}` references and all.
    pub raw: Vec<(String, String)>,
    /// The keys as the plugin is given them: `raw` with its references resolved.
    pub resolved: Vec<(String, String)>,
    /// What `raw`'s references resolved to, kept out of every message, status and log line.
    pub secrets: super::providers::Secrets,
}

/// `auto.restart.*`: Strimzi's `autoRestart`, kept by the worker. The `n`-th restart in a row of a
/// FAILED task waits `n² - n` back-off units (at once, then 2, 6, 12, ...), at most
/// `MAX_BACKOFF_UNITS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoRestart {
    /// `auto.restart.enable`; none leaves it to the worker's `wharf.auto.restart.enable`.
    pub enable: Option<bool>,
    /// `auto.restart.max.restarts`: restarts in a row before the task stays FAILED; none for no
    /// limit.
    pub max_restarts: Option<u32>,
    /// `auto.restart.backoff.unit.ms`.
    pub backoff_unit: Duration,
}

impl AutoRestart {
    /// The longest wait between two automatic restarts, in back-off units (Strimzi's hour).
    pub const MAX_BACKOFF_UNITS: u64 = 60;

    /// How long a task that has been restarted `restarts` times in a row waits, once FAILED,
    /// for its next restart.
    pub fn backoff(&self, restarts: u32) -> Duration {
        let n = u64::from(restarts);
        let units = n.saturating_mul(n).saturating_add(n).min(Self::MAX_BACKOFF_UNITS);
        self.backoff_unit.saturating_mul(units as u32)
    }
}

/// A source connector's exactly-once settings (KIP-618). They act only on a worker with
/// `exactly.once.source.support=enabled`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactlyOnce {
    /// `exactly.once.support=required`: refuse the connector unless the worker and the plugin
    /// can give exactly-once delivery.
    pub required: bool,
    /// `transaction.boundary`.
    pub boundary: TransactionBoundary,
    /// `transaction.boundary.interval.ms`; none takes the worker's `offset.flush.interval.ms`.
    pub interval: Option<Duration>,
}

impl Default for ExactlyOnce {
    fn default() -> Self {
        ExactlyOnce { required: false, boundary: TransactionBoundary::Poll, interval: None }
    }
}

/// Where a transactional source task's transactions end (`transaction.boundary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionBoundary {
    /// After every batch the plugin's `poll` returns.
    Poll,
    /// Every `transaction.boundary.interval.ms`.
    Interval,
    /// When the plugin asks.
    Connector,
}

impl Default for AutoRestart {
    fn default() -> Self {
        AutoRestart { enable: None, max_restarts: None, backoff_unit: Duration::from_millis(60_000) }
    }
}

/// `topics.regex`: a sink reads every topic whose whole name matches, as Kafka Connect's
/// `Pattern.matches` decides. Written in Java's syntax, it is compiled by the `regex` crate, which
/// has the same syntax for what topic patterns use (classes, alternation, repetition) and refuses
/// what it lacks (look-around, back-references) with its reason.
#[derive(Debug, Clone)]
pub struct TopicPattern {
    pub text: String,
    whole: wharf_connect::transform::FullMatch,
}

impl TopicPattern {
    pub fn new(text: &str) -> Result<Self, String> {
        wharf_connect::transform::FullMatch::new(text)
            .map(|whole| TopicPattern { text: text.to_string(), whole })
            .map_err(|e| format!("topics.regex={text} is not a pattern Wharf can read: {e}"))
    }

    /// Whether a sink of this pattern reads `topic`. Kafka's internal topics (`__…`) are left out,
    /// as the Java consumer leaves them out.
    pub fn matches(&self, topic: &str) -> bool {
        !topic.starts_with("__") && self.whole.0.is_match(topic)
    }
}

/// A connector's own Kafka client settings (`producer.override.*`, `consumer.override.*`,
/// `admin.override.*`), in librdkafka's names (`config::security`, `config::clients`), applied
/// after the worker's `producer.*`, `consumer.*` and `admin.*` when the worker's
/// `connector.client.config.override.policy` allows them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientOverrides {
    pub producer: Vec<(String, String)>,
    pub consumer: Vec<(String, String)>,
    pub admin: Vec<(String, String)>,
    /// The keys as the connector wrote them, prefix and all, for the worker's policy.
    pub given: Vec<String>,
}

/// The prefixes of a connector's client overrides, Kafka Connect's.
pub const OVERRIDE_PREFIXES: [&str; 3] = ["producer.override.", "consumer.override.", "admin.override."];

impl ClientOverrides {
    /// The connector's overrides, each checked against the worker's `rules` before anything is
    /// made of it (a refused key store is never opened).
    fn of_connector(
        raw: &[(String, String)],
        rules: &super::clients::OverrideRules,
    ) -> Result<Self, Vec<(String, String)>> {
        let mut overrides = ClientOverrides::default();
        let mut problems = Vec::new();
        for prefix in OVERRIDE_PREFIXES {
            let given: Vec<(String, String)> =
                raw.iter().filter_map(|(k, v)| k.strip_prefix(prefix).map(|k| (k.to_string(), v.clone()))).collect();
            if given.is_empty() {
                continue;
            }
            overrides.given.extend(given.iter().map(|(k, _)| format!("{prefix}{k}")));
            let keeps_credentials = !given.iter().any(|(k, _)| k == "bootstrap.servers" || k == "sasl.jaas.config");
            let refused: Vec<(String, String)> = given
                .iter()
                .filter_map(|(k, v)| {
                    rules.refusal(prefix, k, v, keeps_credentials).map(|m| (format!("{prefix}{k}"), m))
                })
                .collect();
            if !refused.is_empty() {
                problems.extend(refused);
                continue;
            }
            // A file is handed on by the path that was checked, not one a link could move since.
            let given: Vec<(String, String)> = given
                .into_iter()
                .map(|(k, v)| match super::clients::names_a_file(&k).then(|| std::fs::canonicalize(v.trim())) {
                    Some(Ok(real)) => (k, real.display().to_string()),
                    _ => (k, v),
                })
                .collect();
            let translated = super::clients::for_librdkafka(&given, prefix).map_err(|p| (p.key, p.message));
            match translated {
                Ok(settings) => match prefix {
                    "producer.override." => overrides.producer = settings,
                    "consumer.override." => overrides.consumer = settings,
                    _ => overrides.admin = settings,
                },
                Err(problem) => problems.push(problem),
            }
        }
        if problems.is_empty() {
            Ok(overrides)
        } else {
            Err(problems)
        }
    }
}

/// The longest connector name, in characters: a name becomes part of keys, group ids and URLs.
pub const MAX_NAME_CHARS: usize = 249;

/// The one rule for connector names, wherever a name comes from: a REST request, a properties
/// file or a record replayed from the config topic. Kafka Connect's names are allowed, except
/// those that would read as another name (whitespace around it, control or bidirectional-text
/// characters), break a URL path (`/`, `.`, `..`), or grow without bound. The error says what is
/// wrong, with the name quoted and escaped.
pub fn check_name(name: &str) -> Result<(), String> {
    let quoted = format!("{name:?}");
    let problem = if name.is_empty() {
        "is empty"
    } else if name.trim() != name {
        "has whitespace before or after it"
    } else if name.chars().any(|c| c.is_control() || is_bidi_control(c)) {
        "contains control characters"
    } else if name.contains('/') {
        "contains '/'"
    } else if name == "." || name == ".." {
        "is a path segment ('.' or '..')"
    } else if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "connector name {}… is longer than {MAX_NAME_CHARS} characters",
            quoted.chars().take(40).collect::<String>()
        ));
    } else {
        return Ok(());
    };
    Err(format!("connector name {quoted} {problem}; choose a name without it"))
}

/// Keys whose values name the connector or the code it runs: shown in ids, logs and every failed
/// lookup, so they may not hold a config provider reference.
fn names_code_or_identity(key: &str) -> bool {
    matches!(
        key,
        "name"
            | "connector.class"
            | "connector.version"
            | "connector.plugin.version"
            | "key.converter"
            | "value.converter"
            | "header.converter"
    ) || ((key.starts_with("transforms.") || key.starts_with("predicates."))
        && (key.ends_with(".type") || key.ends_with(".version")))
}

/// Characters that reorder how text is shown, so that a name could read as another.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl ConnectorConfig {
    pub fn from_file(
        path: &Path,
        worker_limits: &WasmLimits,
        providers: &super::ConfigProviders,
    ) -> Result<Self, ConnectorConfigError> {
        let props = properties::read_file(path)?;
        let raw = props.into_iter().map(|p| (p.key, p.value)).collect();
        Self::resolving(raw, &path.display().to_string(), worker_limits, providers)
    }

    /// As `from_pairs`, with the config's `${provider:path:key}` references resolved first: the
    /// host's keys are read, and the plugin is given, the values; `raw` keeps the references. A
    /// reference that cannot be resolved is an error naming its key and the reference.
    pub fn resolving(
        raw: Vec<(String, String)>,
        origin: &str,
        worker_limits: &WasmLimits,
        providers: &super::ConfigProviders,
    ) -> Result<Self, ConnectorConfigError> {
        if !super::ConfigProviders::refers(&raw) {
            return Self::from_pairs(raw, origin, worker_limits);
        }
        // The name becomes task ids, client ids, group ids and log lines, and the keys that name
        // code are quoted by every lookup that fails: never a secret.
        for (key, value) in &raw {
            if names_code_or_identity(key) && super::ConfigProviders::refers(&[(key.clone(), value.clone())]) {
                return Err(ConnectorConfigError::Invalid {
                    origin: origin.to_string(),
                    key: Some(key.clone()),
                    message: format!(
                        "\"{key}\" is {value}, a config provider reference; a connector's name and the plugins, \
                         versions and classes it names are shown everywhere, so they may not come from a provider: \
                         write them out"
                    ),
                });
            }
        }
        let (resolved, secrets) = providers.resolve_recording(&raw).map_err(|problems| {
            let mut problems: Vec<ConnectorConfigError> = problems
                .into_iter()
                .map(|(key, message)| ConnectorConfigError::Invalid {
                    origin: origin.to_string(),
                    key: Some(key),
                    message,
                })
                .collect();
            match problems.len() {
                1 => problems.remove(0),
                _ => ConnectorConfigError::Several(problems),
            }
        })?;
        let mut config = Self::from_pairs(resolved, origin, worker_limits).map_err(|e| e.scrubbed(&secrets))?;
        config.raw = raw;
        config.secrets = secrets;
        Ok(config)
    }

    /// Checks the host's keys. `worker_limits` caps what the connector may ask for. Every key is
    /// checked, so that one answer names every problem, a group of the key table at a time.
    pub fn from_pairs(
        raw: Vec<(String, String)>,
        origin: &str,
        worker_limits: &WasmLimits,
    ) -> Result<Self, ConnectorConfigError> {
        let mut r = Reading { raw: &raw, origin, problems: Vec::new() };
        let (name, class, version, tasks_max) = r.common();
        let converters = super::ConverterOverrides::of_connector(&raw).map_err(|e| {
            let key = e.key.clone().unwrap_or_else(|| C::VALUE_CONVERTER.name.to_string());
            r.invalid(&key, e.message)
        });
        let converters = r.note(converters, super::ConverterOverrides::default());
        let transforms = match wharf_connect::transform::Chain::of_connector(&raw) {
            Ok(chain) => chain,
            Err(found) => {
                let found: Vec<_> = found.into_iter().map(|e| r.invalid(&e.key, e.message)).collect();
                r.problems.extend(found);
                wharf_connect::transform::Chain::default()
            }
        };
        let (topics, topics_regex) = r.topics();
        let topic_creation = match super::topic_creation::TopicCreation::of_connector(&raw) {
            Ok(creation) => creation,
            Err(found) => {
                let found: Vec<_> = found.into_iter().map(|(key, message)| r.invalid(&key, message)).collect();
                r.problems.extend(found);
                None
            }
        };
        let errors = match super::tolerance::ErrorPolicy::of_connector(&raw, &topics) {
            Ok(policy) => policy,
            Err(found) => {
                let found: Vec<_> = found.into_iter().map(|e| r.invalid(e.key, e.message)).collect();
                r.problems.extend(found);
                super::tolerance::ErrorPolicy::default()
            }
        };
        let client_overrides = match ClientOverrides::of_connector(&raw, &worker_limits.client_overrides) {
            Ok(overrides) => overrides,
            Err(found) => {
                let found: Vec<_> = found.into_iter().map(|(key, message)| r.invalid(&key, message)).collect();
                r.problems.extend(found);
                ClientOverrides::default()
            }
        };
        let (folders, connect, http) = r.grants(&worker_limits.ceiling);
        let trust = r.tls_trust(&worker_limits.ceiling);
        let limits = r.limits(worker_limits);
        let auto_restart = r.auto_restart();
        let exactly_once = r.exactly_once();
        let offsets_topic = r.offsets_topic();
        let mut problems = r.problems;
        match problems.len() {
            0 => {}
            1 => return Err(problems.remove(0)),
            _ => return Err(ConnectorConfigError::Several(problems)),
        }

        Ok(ConnectorConfig {
            name: name.to_string(),
            class: class.to_string(),
            version,
            tasks_max,
            topics,
            topics_regex,
            topic_creation,
            folders,
            connect,
            http,
            tls: trust.into_iter().collect(),
            limits,
            converters,
            transforms,
            errors,
            client_overrides,
            auto_restart,
            exactly_once,
            offsets_topic,
            resolved: raw.clone(),
            secrets: super::providers::Secrets::default(),
            raw,
        })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        last_value(&self.resolved, key)
    }

    /// Adds the grants that the plugin's declarations (which keys name files, folders, addresses
    /// or URLs) derive from this config's values, each inside the worker's ceiling; the error
    /// names the key, its value and the worker setting. Only the connector config counts: task
    /// configs come from the plugin and grant nothing.
    pub fn with_declared(
        mut self,
        declared: &[KeyGrant],
        connections: &[ConnectionGrant],
    ) -> Result<Self, ConnectorConfigError> {
        let origin = format!("of {}", self.name);
        let ceiling = self.limits.ceiling.clone();
        for grant in declared {
            let Some(value) = self.get(&grant.key).map(str::trim).filter(|v| !v.is_empty()).map(String::from) else {
                continue;
            };
            let key = grant.key.as_str();
            let why = |message: String| ConnectorConfigError::Invalid {
                origin: origin.clone(),
                key: Some(key.to_string()),
                message: format!("{message} (the plugin declares that \"{key}\" names {})", grant.names.describe()),
            };
            match grant.names {
                Names::FileToRead | Names::FileToWrite => {
                    let writable = grant.names == Names::FileToWrite;
                    let folder = Path::new(&value).parent().map(|p| p.display().to_string()).unwrap_or_default();
                    let folder = if folder.is_empty() { value.clone() } else { folder };
                    let path = ceiling.folder_for(key, &value, &folder, writable).map_err(why)?;
                    self.folders.push(FolderGrant { path, guest: PathBuf::from(folder), writable });
                }
                Names::FolderToRead | Names::FolderToWrite => {
                    let writable = grant.names == Names::FolderToWrite;
                    let path = ceiling.folder(key, &value, writable).map_err(why)?;
                    self.folders.push(FolderGrant { path, guest: PathBuf::from(&value), writable });
                }
                Names::HostPort => {
                    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                        if !is_host_port(entry) {
                            return Err(why(format!("{key}: \"{entry}\" is not HOST:PORT, e.g. db.example.com:5432")));
                        }
                        ceiling.address(key, entry, false).map_err(why)?;
                        self.connect.push(entry.to_string());
                    }
                }
                Names::Url => {
                    for url in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                        let authority = url_authority(url).ok_or_else(|| {
                            why(format!("{key}: \"{url}\" is not an http:// or https:// URL with a host"))
                        })?;
                        ceiling.address(key, &authority, true).map_err(why)?;
                        self.http.push(authority);
                    }
                }
            }
        }
        for connection in connections {
            self.grant_connection(connection, &origin)?;
        }
        Ok(self)
    }

    /// The grants one `connection-grants` declaration derives from this config: the servers a
    /// JDBC URL names (and the certificate files it names, to read), or a host key's host at its
    /// port key's port; each inside the worker's ceiling. An error never shows the URL itself,
    /// which may hold a password.
    fn grant_connection(&mut self, connection: &ConnectionGrant, origin: &str) -> Result<(), ConnectorConfigError> {
        let ceiling = self.limits.ceiling.clone();
        let invalid = |key: &str, message: String, names: &str| ConnectorConfigError::Invalid {
            origin: origin.to_string(),
            key: Some(key.to_string()),
            message: format!("{message} (the plugin declares that \"{key}\" names {names})"),
        };
        match connection {
            ConnectionGrant::JdbcUrl { key } => {
                let Some(value) = self.get(key).map(str::trim).filter(|v| !v.is_empty()).map(String::from) else {
                    return Ok(());
                };
                let why = |message: String| invalid(key, message, "a JDBC URL");
                let url = JdbcUrl::parse(&value).map_err(|e| why(format!("{key} {e}")))?;
                let tls = url.tls().map_err(|e| why(format!("{key}: {e}")))?;
                for server in &url.servers {
                    let entry = server.address();
                    ceiling.address(key, &entry, false).map_err(why)?;
                    self.connect.push(entry);
                    self.tls.push(ServerTls {
                        host: Some(server.host.clone()),
                        verify: Verify::of(tls.mode),
                        roots: tls.roots.clone(),
                        origin: format!("{key} ({})", tls.setting),
                    });
                }
                for file in url.files().map_err(|e| why(format!("{key}: {e}")))? {
                    let folder = Path::new(&file.path).parent().map(|p| p.display().to_string()).unwrap_or_default();
                    let what = format!("{key} ({})", file.property);
                    let path = ceiling.folder_for(&what, &file.path, &folder, false).map_err(why)?;
                    self.folders.push(FolderGrant { path, guest: PathBuf::from(folder), writable: false });
                }
            }
            ConnectionGrant::HostAndPort { host_key, port_key, default_port, tls } => {
                let Some(host) = self.get(host_key).map(str::trim).filter(|v| !v.is_empty()).map(String::from) else {
                    return Ok(());
                };
                let names = format!("a host, at the port {port_key} names");
                let host = host.trim_start_matches('[').trim_end_matches(']');
                if host.is_empty()
                    || !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
                {
                    return Err(invalid(
                        host_key,
                        format!("{host_key}=\"{host}\" is not a host name or an IP address"),
                        &names,
                    ));
                }
                let port = match self.get(port_key).map(str::trim).filter(|v| !v.is_empty()) {
                    None => *default_port,
                    Some(given) => match given.parse::<u16>() {
                        Ok(port) if port > 0 => port,
                        _ => {
                            return Err(invalid(
                                port_key,
                                format!("{port_key}=\"{given}\" is not a port: expected a number from 1 to 65535"),
                                &format!("the port of the host {host_key} names"),
                            ))
                        }
                    },
                };
                let entry = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
                ceiling.address(host_key, &entry, false).map_err(|m| invalid(host_key, m, &names))?;
                self.connect.push(entry);
                if let Some(keys) = tls {
                    let host = host.to_string();
                    self.grant_server_tls(&host, keys, &ceiling, &invalid)?;
                }
            }
        }
        Ok(())
    }
}

impl ConnectorConfig {
    /// The TLS policy of a host-and-port server from the keys its `connection-tls` declaration
    /// names: the mode as libpq reads `sslmode`, and the authorities of the root certificate
    /// file (granted for reading, inside the ceiling).
    fn grant_server_tls(
        &mut self,
        host: &str,
        keys: &wharf_connect::model::ServerTlsKeys,
        ceiling: &GrantCeiling,
        invalid: &dyn Fn(&str, String, &str) -> ConnectorConfigError,
    ) -> Result<(), ConnectorConfigError> {
        let given = self.get(&keys.mode_key).map(str::trim).filter(|v| !v.is_empty()).map(String::from);
        let text = given.clone().unwrap_or_else(|| keys.default_mode.clone());
        let mode = TlsMode::from_sslmode(&text).ok_or_else(|| {
            invalid(
                &keys.mode_key,
                format!(
                    "{}=\"{text}\" is not one of disable, allow, prefer, require, verify-ca, verify-full",
                    keys.mode_key
                ),
                "how its server is reached over TLS",
            )
        })?;
        let mut roots = None;
        if let Some(root_key) = &keys.root_cert_key {
            if let Some(file) = self.get(root_key).map(str::trim).filter(|v| !v.is_empty()).map(String::from) {
                let names = "a file of certificate authorities to trust";
                if !Path::new(&file).is_absolute() {
                    return Err(invalid(root_key, format!("{root_key}={file} is not an absolute path"), names));
                }
                let folder = Path::new(&file).parent().map(|p| p.display().to_string()).unwrap_or_default();
                let path =
                    ceiling.folder_for(root_key, &file, &folder, false).map_err(|m| invalid(root_key, m, names))?;
                self.folders.push(FolderGrant { path, guest: PathBuf::from(folder), writable: false });
                roots = Some(Roots::File(file));
            }
        }
        let setting = match given {
            Some(_) => format!("{}={text}", keys.mode_key),
            None => format!("{} unset: {text}", keys.mode_key),
        };
        self.tls.push(ServerTls { host: Some(host.to_string()), verify: Verify::of(mode), roots, origin: setting });
        Ok(())
    }
}

/// The keys of `config` that `info` declares JDBC URLs (`connection-grants`) and whose value
/// holds a password: secrets, shown as `[hidden]` as PASSWORD keys are.
pub fn urls_with_passwords(info: &wharf_connect::model::PluginInfo, config: &[(String, String)]) -> Vec<String> {
    info.connections
        .iter()
        .filter_map(|c| match c {
            ConnectionGrant::JdbcUrl { key } => Some(key),
            ConnectionGrant::HostAndPort { .. } => None,
        })
        .filter(|key| last_value(config, key).is_some_and(wharf_jdbc_url::holds_password))
        .cloned()
        .collect()
}

/// A connector config being read: its pairs, where they came from, and every problem found so
/// far (a refused key's default stands in for it until the end, so that one answer names every
/// problem). Each method reads one group of the key table.
struct Reading<'a> {
    raw: &'a [(String, String)],
    origin: &'a str,
    problems: Vec<ConnectorConfigError>,
}

impl<'a> Reading<'a> {
    /// A key of the table, by its name in `keys::connector`, trimmed.
    fn get(&self, key: &Key) -> Option<&'a str> {
        last_value(self.raw, key.name).map(str::trim)
    }

    fn invalid(&self, key: &str, message: String) -> ConnectorConfigError {
        ConnectorConfigError::Invalid { origin: self.origin.to_string(), key: Some(key.to_string()), message }
    }

    /// The value read, or `default` with the problem noted.
    fn note<T>(&mut self, read: Result<T, ConnectorConfigError>, default: T) -> T {
        match read {
            Ok(value) => value,
            Err(e) => {
                self.problems.push(e);
                default
            }
        }
    }

    /// A host key's value, checked by its definition in `config::keys`; none when not given.
    fn checked(&self, key: &Key) -> Option<Result<Checked, ConnectorConfigError>> {
        super::keys::connector_value(self.raw, key.name)
            .map(|read| read.map_err(|message| self.invalid(key.name, message)))
    }

    /// Group "Common": the name, the plugin and its version, and how many tasks.
    fn common(&mut self) -> (&'a str, &'a str, Option<semver::VersionReq>, u32) {
        // The name as given, untrimmed: "x " is not "x".
        let name = last_value(self.raw, C::NAME.name).filter(|n| !n.is_empty());
        let name = name
            .ok_or_else(|| {
                self.invalid(
                    C::NAME.name,
                    "\"name\" is not set: every connector needs a unique name (e.g. name=my-file-source)".into(),
                )
            })
            .and_then(|name| check_name(name).map(|()| name).map_err(|m| self.invalid(C::NAME.name, m)));
        let name = self.note(name, "");
        let class = self.get(&C::CONNECTOR_CLASS).filter(|c| !c.is_empty()).ok_or_else(|| {
            self.invalid(
                C::CONNECTOR_CLASS.name,
                "\"connector.class\" is not set: name the plugin to run (e.g. connector.class=file-source)".into(),
            )
        });
        let class = self.note(class, "");
        // `connector.plugin.version` is Kafka Connect 4.1's name of the key.
        let version = match wharf_connect::model::requested_version(self.raw) {
            None => None,
            Some(text) => {
                let parsed = wharf_connect::model::parse_version_requirement(text)
                    .map(Some)
                    .map_err(|e| self.invalid(C::CONNECTOR_VERSION.name, format!("connector.version: {e}")));
                self.note(parsed, None)
            }
        };
        let default_tasks = super::keys::number_default(Some(&C::TASKS_MAX)).unwrap_or(1) as u32;
        let tasks_max = match self.checked(&C::TASKS_MAX) {
            None => default_tasks,
            Some(read) => {
                let read = read.map(|value| match value {
                    Number(n) => n.clamp(1, u32::MAX as i64) as u32,
                    _ => default_tasks,
                });
                self.note(read, default_tasks)
            }
        };
        match self.checked(&C::TASKS_MAX_ENFORCE) {
            None | Some(Ok(Flag(true))) => {}
            Some(Ok(_)) => {
                let refused = self.invalid(
                    C::TASKS_MAX_ENFORCE.name,
                    "tasks.max.enforce=false (deprecated in Kafka Connect) lets a connector run more tasks than \
                     tasks.max; Wharf always holds a connector to tasks.max: raise tasks.max instead"
                        .into(),
                );
                self.problems.push(refused);
            }
            Some(Err(e)) => self.problems.push(e),
        }
        // Kafka Connect restarts a connector when a config provider's value expires; Wharf's
        // providers (file, directory, environment) give no expiry, as Connect's own do not, so
        // both values behave alike.
        if let Some(Err(e)) = self.checked(&C::CONFIG_ACTION_RELOAD) {
            self.problems.push(e);
        }
        (name, class, version, tasks_max)
    }

    /// Group "Common", for sinks: the topics to read, by list or by pattern.
    fn topics(&mut self) -> (Vec<String>, Option<TopicPattern>) {
        let topics: Vec<String> = self
            .get(&C::TOPICS)
            .map(|t| t.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        let topics_regex = match self.get(&C::TOPICS_REGEX).map(str::trim).filter(|r| !r.is_empty()) {
            None => None,
            Some(_) if !topics.is_empty() => {
                self.problems.push(self.invalid(
                    C::TOPICS_REGEX.name,
                    "topics.regex and topics are mutually exclusive options, but both are set: keep one".into(),
                ));
                None
            }
            Some(text) => match TopicPattern::new(text) {
                Ok(pattern) => Some(pattern),
                Err(message) => {
                    self.problems.push(self.invalid(C::TOPICS_REGEX.name, message));
                    None
                }
            },
        };
        if let (Some(pattern), Some(dlq)) =
            (&topics_regex, self.get(&C::ERRORS_DEADLETTERQUEUE_TOPIC_NAME).map(str::trim))
        {
            if !dlq.is_empty() && pattern.matches(dlq) {
                self.problems.push(self.invalid(
                    C::ERRORS_DEADLETTERQUEUE_TOPIC_NAME.name,
                    format!(
                        "the dead-letter queue topic '{dlq}' matches topics.regex={}, so a failed record would be \
                         read again: choose a topic the pattern does not match",
                        pattern.text
                    ),
                ));
            }
        }
        (topics, topics_regex)
    }

    /// Group "Sandbox", its grants: the folders, addresses and HTTP authorities the connector
    /// gives its plugin, each within the worker's `ceiling`.
    fn grants(&mut self, ceiling: &GrantCeiling) -> (Vec<FolderGrant>, Vec<String>, Vec<String>) {
        let mut folders = Vec::new();
        for (key, writable) in [(&C::WASM_FS_READ, false), (&C::WASM_FS_WRITE, true)] {
            for given in self.get(key).unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
                match ceiling.folder(key.name, given, writable) {
                    Ok(path) => folders.push(FolderGrant { path, guest: PathBuf::from(given), writable }),
                    Err(m) => self.problems.push(self.invalid(key.name, m)),
                }
            }
        }

        let host_ports = |key: &Key, example: &str| -> Result<Vec<String>, ConnectorConfigError> {
            let mut entries = Vec::new();
            let name = key.name;
            for entry in self.get(key).unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !is_host_port(entry) {
                    return Err(
                        self.invalid(name, format!("{name}: \"{entry}\" is not HOST:PORT, e.g. {name}={example}"))
                    );
                }
                let http = name == C::WASM_HTTP_ALLOW.name;
                ceiling.address(name, entry, http).map_err(|m| self.invalid(name, m))?;
                entries.push(entry.to_string());
            }
            Ok(entries)
        };
        let connect = host_ports(&C::WASM_NET_CONNECT, "db.example.com:5432");
        let http = host_ports(&C::WASM_HTTP_ALLOW, "api.example.com:443");
        let connect = self.note(connect, Vec::new());
        let http = self.note(http, Vec::new());

        (folders, connect, http)
    }

    /// `wasm.tls.trust`: the authorities the plugin's TLS connections trust for every server no
    /// declared connection setting describes. The host reads the file, so it must lie inside
    /// what the worker lets connectors read.
    fn tls_trust(&mut self, ceiling: &GrantCeiling) -> Option<ServerTls> {
        let key = C::WASM_TLS_TRUST.name;
        let path = self.get(&C::WASM_TLS_TRUST).map(str::trim).filter(|v| !v.is_empty())?.to_string();
        // The host reads this one file; its folder is not granted, so only the file itself must
        // lie inside the ceiling and outside the worker's own files.
        match ceiling.folder_for(key, &path, &path, false) {
            Ok(_) => Some(ServerTls {
                host: None,
                verify: Verify::ChainAndName,
                roots: Some(Roots::File(path)),
                origin: key.to_string(),
            }),
            Err(message) => {
                self.problems.push(self.invalid(key, message));
                None
            }
        }
    }

    /// `offsets.storage.topic`: a topic name, not empty when given (Kafka Connect's words).
    fn offsets_topic(&mut self) -> Option<String> {
        let topic = self.get(&C::OFFSETS_STORAGE_TOPIC)?;
        if topic.is_empty() {
            let message = "offsets.storage.topic: String must be non-empty; remove the key to keep the connector's \
                           offsets in the worker's offset.storage.topic"
                .to_string();
            self.problems.push(self.invalid(C::OFFSETS_STORAGE_TOPIC.name, message));
            return None;
        }
        Some(topic.to_string())
    }

    /// Group "Exactly Once Support".
    fn exactly_once(&mut self) -> ExactlyOnce {
        let default = ExactlyOnce::default();
        let required = match self.checked(&C::EXACTLY_ONCE_SUPPORT) {
            None => false,
            Some(read) => self.note(read.map(|read| read == Checked::Word("required")), false),
        };
        let boundary = match self.checked(&C::TRANSACTION_BOUNDARY) {
            None => default.boundary,
            Some(read) => {
                let read = read.map(|read| match read {
                    Checked::Word("interval") => TransactionBoundary::Interval,
                    Checked::Word("connector") => TransactionBoundary::Connector,
                    _ => TransactionBoundary::Poll,
                });
                self.note(read, default.boundary)
            }
        };
        let interval = match self.checked(&C::TRANSACTION_BOUNDARY_INTERVAL_MS) {
            None => None,
            Some(read) => {
                let read = read.map(|read| match read {
                    Number(ms) => Some(Duration::from_millis(ms.max(0) as u64)),
                    _ => None,
                });
                self.note(read, None)
            }
        };
        ExactlyOnce { required, boundary, interval }
    }

    /// Group "Automatic Restart".
    fn auto_restart(&mut self) -> AutoRestart {
        let default = AutoRestart::default();
        let enable = match self.checked(&C::AUTO_RESTART_ENABLE) {
            None => None,
            Some(read) => self.note(read.map(|read| matches!(read, Checked::Flag(true))).map(Some), None),
        };
        let max_restarts = match self.checked(&C::AUTO_RESTART_MAX_RESTARTS) {
            None => None,
            Some(read) => {
                let read = read.map(|read| match read {
                    Number(n) if n >= 0 => Some(n.min(i64::from(u32::MAX)) as u32),
                    _ => None,
                });
                self.note(read, None)
            }
        };
        let backoff_unit = match self.checked(&C::AUTO_RESTART_BACKOFF_UNIT_MS) {
            None => default.backoff_unit,
            Some(read) => {
                let read = read.map(|read| match read {
                    Number(ms) => Duration::from_millis(ms.max(1) as u64),
                    _ => default.backoff_unit,
                });
                self.note(read, default.backoff_unit)
            }
        };
        AutoRestart { enable, max_restarts, backoff_unit }
    }

    /// Group "Sandbox", its limits: what the connector asks for, at most the worker's.
    fn limits(&mut self, worker_limits: &WasmLimits) -> WasmLimits {
        // Not a bound of the sandbox: a connector may recycle its tasks' instances more often
        // than the worker does, or less.
        let recycle_records = match self.checked(&C::WASM_INSTANCE_RECYCLE_RECORDS) {
            None => Ok(worker_limits.recycle_records),
            Some(read) => read.map(|read| match read {
                Number(n) => n.max(0) as u64,
                _ => worker_limits.recycle_records,
            }),
        };
        let recycle_records = self.note(recycle_records, worker_limits.recycle_records);
        WasmLimits {
            memory_max_bytes: self.limit(&C::WASM_MEMORY_MAX_BYTES, worker_limits.memory_max_bytes as u64) as usize,
            call_timeout: Duration::from_millis(
                self.limit(&C::WASM_CALL_TIMEOUT_MS, worker_limits.call_timeout.as_millis() as u64),
            ),
            max_records_per_call: self.limit(&C::WASM_MAX_RECORDS_PER_CALL, worker_limits.max_records_per_call as u64)
                as u32,
            max_bytes_per_call: self.limit(&C::WASM_MAX_BYTES_PER_CALL, worker_limits.max_bytes_per_call as u64)
                as usize,
            max_host_handles: self.limit(&C::WASM_MAX_HOST_HANDLES, worker_limits.max_host_handles as u64) as usize,
            ceiling: worker_limits.ceiling.clone(),
            log_line_max_bytes: self.limit(&C::WASM_LOG_LINE_MAX_BYTES, worker_limits.log_line_max_bytes as u64)
                as usize,
            log_lines_per_second: self.limit(&C::WASM_LOG_LINES_PER_SECOND, worker_limits.log_lines_per_second as u64)
                as u32,
            max_plugin_metrics: self.limit(&C::WASM_MAX_PLUGIN_METRICS, worker_limits.max_plugin_metrics as u64)
                as usize,
            fs_inline: worker_limits.fs_inline,
            max_schema_depth: self.limit(&C::WASM_MAX_SCHEMA_DEPTH, worker_limits.max_schema_depth as u64) as usize,
            max_schema_nodes: self.limit(&C::WASM_MAX_SCHEMA_NODES, worker_limits.max_schema_nodes),
            recycle_records,
            client_overrides: worker_limits.client_overrides.clone(),
        }
    }

    /// A sandbox limit the connector asks for, at most the worker's `max`.
    fn capped(&self, key: &Key, max: u64) -> Result<u64, ConnectorConfigError> {
        match self.checked(key) {
            None => Ok(max),
            Some(read) => match read? {
                Number(n) if n as u64 <= max => Ok(n as u64),
                Number(n) => Err(self.invalid(
                    key.name,
                    format!(
                        "{}={n} is not valid: expected a whole number from 1 to {max} (the worker's limit)",
                        key.name
                    ),
                )),
                // The sandbox limits are numbers in the key table: nothing else passes the check.
                _ => Ok(max),
            },
        }
    }

    /// `capped`, or the worker's `max` with the problem noted.
    fn limit(&mut self, key: &Key, max: u64) -> u64 {
        let read = self.capped(key, max);
        self.note(read, max)
    }
}

/// A grant's `host:port`: a host (not a pattern) and a port number.
fn is_host_port(entry: &str) -> bool {
    entry.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && host != "*" && port.parse::<u16>().is_ok())
}

/// `host:port` of an `http://` or `https://` URL, the port defaulting to the scheme's.
fn url_authority(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    // A backslash ends the host for some clients (WHATWG URLs) and not for others: refused.
    if authority.contains('\\') {
        return None;
    }
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host).to_ascii_lowercase();
    let authority = authority.as_str();
    if authority.is_empty() {
        return None;
    }
    let bracketed_end = authority.rfind(']');
    match authority.rsplit_once(':') {
        Some((host, port)) if bracketed_end.is_none_or(|end| end < host.len()) => {
            let port: u16 = port.parse().ok()?;
            (!host.is_empty()).then(|| format!("{host}:{port}"))
        }
        _ => Some(format!("{authority}:{default_port}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn parse(items: &[(&str, &str)]) -> Result<ConnectorConfig, ConnectorConfigError> {
        let mut limits = WasmLimits::default();
        limits.ceiling.read = vec!["/data".into(), "/more".into()];
        limits.ceiling.write = vec!["/out".into()];
        limits.ceiling.connect = vec!["db.example.com:5432".into()];
        ConnectorConfig::from_pairs(pairs(items), "c.properties", &limits)
    }

    #[test]
    fn reads_name_class_tasks_and_grants() {
        let c = parse(&[
            ("name", "in"),
            ("connector.class", "file-source"),
            ("tasks.max", "3"),
            ("wasm.fs.read", "/data, /more"),
            ("wasm.fs.write", "/out"),
        ])
        .unwrap();
        assert_eq!((c.name.as_str(), c.class.as_str(), c.tasks_max), ("in", "file-source", 3));
        assert_eq!(c.folders.len(), 3);
        assert!(c.folders[2].writable && !c.folders[0].writable);
        assert_eq!(c.folders[1].guest, PathBuf::from("/more"));
    }

    #[test]
    fn grants_outside_the_workers_ceiling_are_refused_naming_key_value_and_setting() {
        let err = parse(&[("name", "a"), ("connector.class", "x"), ("wasm.fs.read", "/etc")]).unwrap_err().to_string();
        assert!(
            err.contains(
                "wasm.fs.read=/etc is outside what this worker allows: wasm.ceiling.fs.read is /data, /more (and \
                 wasm.ceiling.fs.write, which allows reading too, is /out)"
            ),
            "{err}"
        );
        let err =
            parse(&[("name", "a"), ("connector.class", "x"), ("wasm.net.connect", "evil:80")]).unwrap_err().to_string();
        assert!(err.contains("wasm.net.connect=evil:80 is outside what this worker allows: wasm.ceiling.net.connect"));
        let err = parse(&[("name", "a"), ("connector.class", "x"), ("wasm.http.allow", "db.example.com:5432")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("wasm.ceiling.http.allow is empty"), "{err}");
    }

    #[test]
    fn declared_keys_grant_what_their_values_name_inside_the_ceiling() {
        let declared = [
            KeyGrant { key: "file".into(), names: Names::FileToRead },
            KeyGrant { key: "out".into(), names: Names::FolderToWrite },
            KeyGrant { key: "db".into(), names: Names::HostPort },
            KeyGrant { key: "api".into(), names: Names::Url },
            KeyGrant { key: "unset".into(), names: Names::FileToWrite },
        ];
        let mut limits = WasmLimits::default();
        limits.ceiling.read = vec!["/data".into()];
        limits.ceiling.write = vec!["/out".into()];
        limits.ceiling.connect = vec!["db.example.com:*".into()];
        limits.ceiling.http = vec!["api.example.com:443".into()];
        let config = |extra: &[(&str, &str)]| {
            let mut items = vec![("name", "a"), ("connector.class", "x")];
            items.extend_from_slice(extra);
            ConnectorConfig::from_pairs(pairs(&items), "c.properties", &limits).unwrap()
        };
        let c = config(&[
            ("file", "/data/in/test.txt"),
            ("out", "/out/here"),
            ("db", "db.example.com:5432, db.example.com:5433"),
            ("api", "https://api.example.com/v1/items?x=1"),
        ])
        .with_declared(&declared, &[])
        .unwrap();
        let folders: Vec<(String, String, bool)> = c
            .folders
            .iter()
            .map(|f| (f.path.display().to_string(), f.guest.display().to_string(), f.writable))
            .collect();
        assert_eq!(
            folders,
            [("/data/in".into(), "/data/in".into(), false), ("/out/here".into(), "/out/here".into(), true)]
        );
        assert_eq!(c.connect, ["db.example.com:5432", "db.example.com:5433"]);
        assert_eq!(c.http, ["api.example.com:443"]);

        let err = config(&[("file", "/etc/passwd")]).with_declared(&declared, &[]).unwrap_err().to_string();
        assert!(
            err.contains(
                "file=/etc/passwd (its folder /etc) is outside what this worker allows: wasm.ceiling.fs.read is /data \
                 (and wasm.ceiling.fs.write, which allows reading too, is /out)"
            ) && err.contains("(the plugin declares that \"file\" names a file to read)"),
            "{err}"
        );
        let err = config(&[("api", "ftp://api.example.com/")]).with_declared(&declared, &[]).unwrap_err().to_string();
        assert!(err.contains("is not an http:// or https:// URL"), "{err}");
        let err = config(&[("db", "evil:1")]).with_declared(&declared, &[]).unwrap_err().to_string();
        assert!(err.contains("db=evil:1 is outside what this worker allows: wasm.ceiling.net.connect"), "{err}");
    }

    #[test]
    fn a_jdbc_url_and_a_host_with_its_port_grant_their_servers_and_certificate_files_inside_the_ceiling() {
        let declared = [
            ConnectionGrant::JdbcUrl { key: "connection.url".into() },
            ConnectionGrant::HostAndPort {
                host_key: "database.hostname".into(),
                port_key: "database.port".into(),
                default_port: 5432,
                tls: Some(wharf_connect::model::ServerTlsKeys {
                    mode_key: "database.sslmode".into(),
                    default_mode: "prefer".into(),
                    root_cert_key: Some("database.sslrootcert".into()),
                }),
            },
        ];
        let mut limits = WasmLimits::default();
        limits.ceiling.read = vec!["/etc/pg".into()];
        limits.ceiling.connect = vec!["db.example.com:*".into(), "replica.example.com:5433".into()];
        let config = |extra: &[(&str, &str)]| {
            let mut items = vec![("name", "a"), ("connector.class", "x")];
            items.extend_from_slice(extra);
            ConnectorConfig::from_pairs(pairs(&items), "c.properties", &limits).unwrap()
        };
        let c = config(&[
            (
                "connection.url",
                "jdbc:postgresql://db.example.com,replica.example.com:5433/shop?sslmode=verify-full&sslrootcert=/etc/pg/ca.pem&password=hunter2",
            ),
            ("database.hostname", "db.example.com"),
        ])
        .with_declared(&[], &declared)
        .unwrap();
        assert_eq!(c.connect, ["db.example.com:5432", "replica.example.com:5433", "db.example.com:5432"]);
        let folders: Vec<(String, bool)> =
            c.folders.iter().map(|f| (f.guest.display().to_string(), f.writable)).collect();
        assert_eq!(folders, [("/etc/pg".to_string(), false)]);
        let c = config(&[("database.hostname", "db.example.com"), ("database.port", "6000")])
            .with_declared(&[], &declared)
            .unwrap();
        assert_eq!(c.connect, ["db.example.com:6000"]);
        // The host-and-port server's TLS policy, from the keys the plugin names.
        let policy = |c: &ConnectorConfig| {
            let p = c.tls.iter().find(|t| t.host.as_deref() == Some("db.example.com")).unwrap();
            (p.verify, p.roots.clone(), p.origin.clone())
        };
        assert_eq!(policy(&c), (Verify::Nothing, None, "database.sslmode unset: prefer".to_string()));
        let c = config(&[
            ("database.hostname", "db.example.com"),
            ("database.sslmode", "verify-ca"),
            ("database.sslrootcert", "/etc/pg/ca.pem"),
        ])
        .with_declared(&[], &declared)
        .unwrap();
        assert_eq!(
            policy(&c),
            (Verify::Chain, Some(Roots::File("/etc/pg/ca.pem".into())), "database.sslmode=verify-ca".to_string())
        );
        assert_eq!(c.folders.iter().map(|f| f.guest.display().to_string()).collect::<Vec<_>>(), ["/etc/pg"]);

        let refused = |extra: &[(&str, &str)]| {
            let err = config(extra).with_declared(&[], &declared).unwrap_err();
            let key = err.problems().first().and_then(|p| p.key()).unwrap_or_default().to_string();
            (key, err.to_string())
        };
        let (key, err) = refused(&[("connection.url", "jdbc:postgresql://evil.example.com/x?password=hunter2")]);
        assert_eq!(key, "connection.url");
        assert!(
            err.contains("connection.url=evil.example.com:5432 is outside what this worker allows")
                && err.contains("(the plugin declares that \"connection.url\" names a JDBC URL)")
                && !err.contains("hunter2"),
            "{err}"
        );
        let (_, err) = refused(&[("connection.url", "postgres://db.example.com/x")]);
        assert!(err.contains("connection.url is not a JDBC URL"), "{err}");
        let (_, err) = refused(&[("connection.url", "jdbc:postgresql://db.example.com/x?sslrootcert=/root/ca.pem")]);
        assert!(err.contains("connection.url (sslrootcert)=/root/ca.pem (its folder /root) is outside"), "{err}");
        let (key, err) = refused(&[("database.hostname", "db.example.com"), ("database.port", "five")]);
        assert_eq!(key, "database.port");
        assert!(err.contains("database.port=\"five\" is not a port"), "{err}");
        let (key, err) = refused(&[("database.hostname", "db.example.com"), ("database.sslmode", "sometimes")]);
        assert_eq!(key, "database.sslmode");
        assert!(err.contains("database.sslmode=\"sometimes\" is not one of disable"), "{err}");
        let (key, err) = refused(&[("database.hostname", "db.example.com"), ("database.sslrootcert", "/root/ca.pem")]);
        assert_eq!(key, "database.sslrootcert");
        assert!(err.contains("/root/ca.pem (its folder /root) is outside"), "{err}");
        let (key, err) = refused(&[("database.hostname", "evil.example.com")]);
        assert_eq!(key, "database.hostname");
        assert!(err.contains("database.hostname=evil.example.com:5432 is outside"), "{err}");
    }

    #[test]
    fn a_declared_jdbc_url_holding_a_password_is_a_secret() {
        let info = wharf_connect::model::PluginInfo {
            name: "p".into(),
            version: "1".into(),
            description: String::new(),
            kind: wharf_connect::model::PluginKind::Sink,
            config: Vec::new(),
            grants: Vec::new(),
            connections: vec![ConnectionGrant::JdbcUrl { key: "connection.url".into() }],
        };
        let with = pairs(&[
            ("connection.url", "jdbc:postgresql://h/d?password=x"),
            ("other.url", "jdbc:postgresql://h/d?password=x"),
        ]);
        assert_eq!(urls_with_passwords(&info, &with), ["connection.url"]);
        let without = pairs(&[("connection.url", "jdbc:postgresql://h/d?user=u")]);
        assert!(urls_with_passwords(&info, &without).is_empty());
    }

    #[test]
    fn every_wrong_key_is_named_at_once() {
        let err = parse(&[("name", "a"), ("tasks.max", "0"), ("wasm.call.timeout.ms", "soon"), ("transforms", "t")])
            .unwrap_err();
        let keys: Vec<Option<&str>> = err.problems().iter().map(|p| p.key()).collect();
        assert_eq!(
            keys,
            [Some("connector.class"), Some("tasks.max"), Some("transforms.t.type"), Some("wasm.call.timeout.ms")]
        );
        let text = err.to_string();
        assert!(text.contains("tasks.max=0") && text.contains("wasm.call.timeout.ms=soon"), "{text}");
        // One problem alone is that problem.
        let one = parse(&[("name", "a"), ("connector.class", "x"), ("tasks.max", "0")]).unwrap_err();
        assert!(matches!(one, ConnectorConfigError::Invalid { .. }));
    }

    #[test]
    fn url_authorities_default_to_the_schemes_port() {
        assert_eq!(url_authority("http://h/x").as_deref(), Some("h:80"));
        assert_eq!(url_authority("https://user:pw@h:8443/x").as_deref(), Some("h:8443"));
        assert_eq!(url_authority("https://[::1]/").as_deref(), Some("[::1]:443"));
        assert_eq!(url_authority("https://[::1]:9/").as_deref(), Some("[::1]:9"));
        assert_eq!(url_authority("h:80"), None);
        assert_eq!(url_authority("https://"), None);
        assert_eq!(url_authority("https://API.Example.com/").as_deref(), Some("api.example.com:443"));
        assert_eq!(url_authority("https://evil\\@api.example.com/"), None);
    }

    #[test]
    fn missing_name_says_what_to_add() {
        let err = parse(&[("connector.class", "x")]).unwrap_err().to_string();
        assert!(err.contains("\"name\" is not set"), "{err}");
    }

    #[test]
    fn names_that_read_as_other_names_are_refused() {
        for bad in ["x ", " x", "x\t", "a\r\nb", "a/b", ".", "..", "a\u{202e}b", ""] {
            assert!(check_name(bad).is_err(), "{bad:?} was accepted");
        }
        for good in ["x", "my connector", "orders.v2", "ünïcode-名前", &"n".repeat(MAX_NAME_CHARS)] {
            assert_eq!(check_name(good), Ok(()), "{good:?}");
        }
        let long = check_name(&"n".repeat(MAX_NAME_CHARS + 1)).unwrap_err();
        assert!(long.contains("longer than 249 characters"), "{long}");
        let spaced = check_name("x ").unwrap_err();
        assert_eq!(spaced, "connector name \"x \" has whitespace before or after it; choose a name without it");
    }

    #[test]
    fn a_config_name_with_a_trailing_space_is_refused() {
        let err = parse(&[("name", "x "), ("connector.class", "datagen")]).unwrap_err().to_string();
        assert!(err.contains("whitespace"), "{err}");
    }

    #[test]
    fn limits_cannot_exceed_the_workers() {
        let err = parse(&[("name", "a"), ("connector.class", "x"), ("wasm.call.timeout.ms", "999999")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("wasm.call.timeout.ms=999999") && err.contains("5000"), "{err}");
        let c = parse(&[("name", "a"), ("connector.class", "x"), ("wasm.call.timeout.ms", "100")]).unwrap();
        assert_eq!(c.limits.call_timeout, Duration::from_millis(100));
    }

    #[test]
    fn tls_trust_is_a_file_inside_the_read_ceiling_trusted_for_every_undescribed_server() {
        let c = parse(&[("name", "a"), ("connector.class", "x"), ("wasm.tls.trust", "/data/ca.pem")]).unwrap();
        assert_eq!(c.tls.len(), 1);
        assert_eq!(
            (c.tls[0].host.as_deref(), c.tls[0].verify, &c.tls[0].roots),
            (None, Verify::ChainAndName, &Some(Roots::File("/data/ca.pem".into())))
        );
        assert!(c.folders.is_empty(), "the host reads the file; the plugin is not given its folder");
        let err = parse(&[("name", "a"), ("connector.class", "x"), ("wasm.tls.trust", "/etc/ssl/ca.pem")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("wasm.tls.trust=/etc/ssl/ca.pem") && err.contains("wasm.ceiling.fs.read"), "{err}");
        let unset = parse(&[("name", "a"), ("connector.class", "x")]).unwrap();
        assert!(unset.tls.is_empty());
    }

    #[test]
    fn relative_grant_is_refused() {
        assert!(parse(&[("name", "a"), ("connector.class", "x"), ("wasm.fs.read", "data")]).is_err());
    }

    #[test]
    fn topics_regex_matches_whole_names_and_excludes_topics_and_its_dead_letter_queue() {
        let c = parse(&[("name", "s"), ("connector.class", "x"), ("topics.regex", "orders-.*|users")]).unwrap();
        let pattern = c.topics_regex.unwrap();
        assert!(pattern.matches("orders-eu") && pattern.matches("users"));
        assert!(!pattern.matches("all-users") && !pattern.matches("users-old") && !pattern.matches("__orders-x"));
        let both = parse(&[("name", "s"), ("connector.class", "x"), ("topics", "a"), ("topics.regex", "a.*")]);
        assert!(both.unwrap_err().to_string().contains("mutually exclusive"));
        let unreadable = parse(&[("name", "s"), ("connector.class", "x"), ("topics.regex", "(?<=a)b")]);
        assert!(unreadable.unwrap_err().to_string().contains("not a pattern Wharf can read"));
        let dlq = parse(&[
            ("name", "s"),
            ("connector.class", "x"),
            ("topics.regex", "orders.*"),
            ("errors.deadletterqueue.topic.name", "orders-dlq"),
        ]);
        assert!(dlq.unwrap_err().to_string().contains("matches topics.regex=orders.*"));
    }

    #[test]
    fn a_transform_without_its_type_is_refused_with_the_key() {
        let err = parse(&[("name", "a"), ("connector.class", "x"), ("transforms", "t")]).unwrap_err();
        assert_eq!(err.key(), Some("transforms.t.type"));
        assert!(err.to_string().contains("transforms.t.type is required"), "{err}");
    }

    #[test]
    fn exactly_once_settings_and_a_connectors_own_offsets_topic_are_read() {
        let base = [("name", "a"), ("connector.class", "x")];
        assert_eq!(parse(&base).unwrap().exactly_once, ExactlyOnce::default());
        let given = parse(&[
            base[0],
            base[1],
            ("exactly.once.support", "REQUIRED"),
            ("transaction.boundary", "interval"),
            ("transaction.boundary.interval.ms", "2500"),
        ])
        .unwrap();
        let want = ExactlyOnce {
            required: true,
            boundary: TransactionBoundary::Interval,
            interval: Some(Duration::from_millis(2500)),
        };
        assert_eq!(given.exactly_once, want);
        let own = parse(&[base[0], base[1], ("offsets.storage.topic", "a-offsets")]).unwrap();
        assert_eq!(own.offsets_topic.as_deref(), Some("a-offsets"));
        let err = parse(&[base[0], base[1], ("offsets.storage.topic", " ")]).unwrap_err();
        assert_eq!(err.key(), Some("offsets.storage.topic"));
        assert!(err.to_string().contains("String must be non-empty"), "{err}");
        let err = parse(&[base[0], base[1], ("transaction.boundary", "batch")]).unwrap_err();
        assert!(err.to_string().contains("use poll, interval or connector"), "{err}");
    }

    /// The key table drives the parser: a value that a host key's definition refuses is refused
    /// on that key, in the definition's own words.
    #[test]
    fn every_checked_host_key_is_refused_in_the_words_of_its_definition() {
        let mut checked = 0;
        for key in super::super::keys::CONNECTOR_KEYS {
            for bad in ["x", "-2", "99999999999999999999"] {
                let Err(expected) = key.check(bad) else { continue };
                let refused = match parse(&[("name", "a"), ("connector.class", "x"), (key.name, bad)]) {
                    Ok(_) => panic!("{}={bad} was accepted, and its definition refuses it: {expected}", key.name),
                    Err(e) => e,
                };
                let on_key: Vec<String> =
                    refused.problems().iter().filter(|p| p.key() == Some(key.name)).map(|p| p.to_string()).collect();
                assert!(
                    on_key.iter().any(|m| m.contains(&expected)),
                    "{}={bad}: {refused}\nshould say on the key: {expected}",
                    key.name
                );
                checked += 1;
            }
        }
        assert!(checked > 20, "only {checked} refusals checked");
    }
}
