//! Every key the host itself reads, defined once: the worker's (`WORKER_KEYS`) and the
//! host-level keys of every connector (`CONNECTOR_KEYS`). One definition drives the parsers'
//! defaults, their list of known keys and their checks of values (`Check`: `config/worker.rs`,
//! `config/connector.rs`, `config/tolerance.rs`, `config/topic_creation.rs`), the validate
//! answer's common keys (`worker/validation.rs`), and the reference page `docs/configuration.md`
//! (`reference`, kept current by a test).

use wharf_connect::model::ConfigKey;

/// The HMAC algorithms workers may sign their requests to each other with, by Java's names.
pub const SIGNATURE_ALGORITHMS: [&str; 3] = ["HmacSHA256", "HmacSHA384", "HmacSHA512"];

/// Kafka Connect's `ConfigDef.Type` of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    Int,
    Long,
    Short,
    String,
    List,
    Class,
    Password,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Boolean => "BOOLEAN",
            Kind::Int => "INT",
            Kind::Long => "LONG",
            Kind::Short => "SHORT",
            Kind::String => "STRING",
            Kind::List => "LIST",
            Kind::Class => "CLASS",
            Kind::Password => "PASSWORD",
        }
    }
}

/// What a key is when it is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// It must be given.
    Required,
    /// It may be left out; nothing takes its place.
    Unset,
    /// Whatever the worker sets (a connector's sandbox limits), at most which it may ask for.
    Worker,
    Number(u64),
    /// A replication factor or partition count; -1 is the broker's default.
    Signed(i64),
    Text(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Importance {
    High,
    Medium,
    Low,
}

impl Importance {
    pub fn name(self) -> &'static str {
        match self {
            Importance::High => "HIGH",
            Importance::Medium => "MEDIUM",
            Importance::Low => "LOW",
        }
    }
}

/// Which workers, or which connectors, a key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Every,
    /// Standalone workers only.
    Standalone,
    /// Distributed workers only.
    Distributed,
    /// Source connectors only.
    Source,
    /// Sink connectors only.
    Sink,
}

/// What a key's value must be beyond its type: the one check that the parsers of worker and
/// connector configs and the validate answer all apply (`Key::check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Whatever the key's type takes.
    Any,
    /// A whole number of at least this.
    AtLeast(i64),
    /// A whole number from the first to the second.
    Between(i64, i64),
    /// Milliseconds, from 0 to `MAX_MILLIS` (Kafka's int range: larger values would overflow
    /// deadlines and the group protocol's 32-bit fields).
    Millis,
    /// -1 (the broker's default) or a whole number of at least 1.
    BrokerDefaultOrPositive,
    /// One of these words, in any case.
    OneOf(&'static [&'static str]),
}

impl Check {
    /// The values the check takes, as the reference page shows them; empty for `Any`.
    pub fn describe(self) -> String {
        match self {
            Check::Any => String::new(),
            Check::AtLeast(min) => format!("at least {min}"),
            Check::Between(min, max) => format!("{min} to {max}"),
            Check::Millis => format!("0 to {MAX_MILLIS}"),
            Check::BrokerDefaultOrPositive => "-1, or at least 1".into(),
            Check::OneOf(words) => words.join(", "),
        }
    }
}

/// The longest duration a key in milliseconds may give: Kafka's int range, about 24 days.
pub const MAX_MILLIS: u64 = i32::MAX as u64;

/// One key.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    pub importance: Importance,
    pub group: &'static str,
    pub scope: Scope,
    pub doc: &'static str,
    pub check: Check,
}

impl Key {
    /// The key with `check` in place of `Check::Any`.
    const fn checked(self, check: Check) -> Key {
        Key { check, ..self }
    }

    /// Whether `value` is a value of this key: its type and its `check`. The refusal names the
    /// key and the value and says what the key takes.
    pub fn check(&self, value: &str) -> Result<(), String> {
        self.number_or_word(value).map(|_| ())
    }

    /// A number key's value, checked.
    pub fn number(&self, value: &str) -> Result<i64, String> {
        self.number_as(self.name, value)
    }

    /// The value of a key of the family this key defines (`topic.creation.<group>.partitions` by
    /// `topic.creation.default.partitions`), checked as this key's and refused under `name`.
    pub fn number_as(&self, name: &str, value: &str) -> Result<i64, String> {
        match self.number_or_word_as(name, value)? {
            Checked::Number(n) => Ok(n),
            _ => Err(format!("{}={value}: the key is not a number (a bug in the host's key table)", self.name)),
        }
    }

    /// A boolean key's value, checked.
    pub fn flag(&self, value: &str) -> Result<bool, String> {
        match self.number_or_word(value)? {
            Checked::Flag(b) => Ok(b),
            _ => Err(format!("{}={value}: the key is not a boolean (a bug in the host's key table)", self.name)),
        }
    }

    /// A `Check::OneOf` key's value, as the table spells it.
    pub fn word(&self, value: &str) -> Result<&'static str, String> {
        match self.number_or_word(value)? {
            Checked::Word(w) => Ok(w),
            _ => Err(format!("{}={value}: the key takes no list of words (a bug in the host's key table)", self.name)),
        }
    }

    fn number_or_word(&self, value: &str) -> Result<Checked, String> {
        self.number_or_word_as(self.name, value)
    }

    fn number_or_word_as(&self, name: &str, value: &str) -> Result<Checked, String> {
        let value = value.trim();
        let range = match self.kind {
            Kind::Int => (i32::MIN as i64, i32::MAX as i64),
            Kind::Long => (i64::MIN, i64::MAX),
            Kind::Short => (i16::MIN as i64, i16::MAX as i64),
            Kind::Boolean => {
                return match value.to_ascii_lowercase().as_str() {
                    "true" => Ok(Checked::Flag(true)),
                    "false" => Ok(Checked::Flag(false)),
                    _ => Err(format!("{name}={value} is not valid: use true or false")),
                }
            }
            Kind::String | Kind::List | Kind::Class | Kind::Password => {
                return match self.check {
                    Check::OneOf(words) => match words.iter().find(|w| w.eq_ignore_ascii_case(value)) {
                        Some(word) => Ok(Checked::Word(word)),
                        None => Err(format!("{name}={value} is not valid: use {}", one_of(words))),
                    },
                    _ => Ok(Checked::Text),
                }
            }
        };
        let (min, max) = match self.check {
            Check::AtLeast(min) => (min.max(range.0), range.1),
            Check::Between(min, max) => (min.max(range.0), max.min(range.1)),
            Check::Millis => (0, MAX_MILLIS as i64),
            Check::BrokerDefaultOrPositive => (-1, range.1),
            Check::Any | Check::OneOf(_) => range,
        };
        let expected = match self.check {
            Check::AtLeast(_) => format!("expected a whole number of at least {min}"),
            Check::Millis => format!("expected milliseconds, a whole number from 0 to {max}"),
            Check::BrokerDefaultOrPositive => "expected -1 (the broker's default) or a number of at least 1".into(),
            _ => format!("expected a whole number from {min} to {max}"),
        };
        let invalid = || Err(format!("{name}={value} is not valid: {expected}"));
        let digits = value.strip_prefix('-').unwrap_or(value);
        let n: i128 = match value.parse::<i128>() {
            Ok(n) => n,
            // More digits than any integer holds: too large (or too small) rather than no number.
            Err(_) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                match value.starts_with('-') {
                    true => i128::MIN,
                    false => i128::MAX,
                }
            }
            Err(_) => return invalid(),
        };
        if n > max as i128 {
            let unit = if self.check == Check::Millis { " ms (about 24 days)" } else { "" };
            return Err(format!("{name}={value} is too large: at most {max}{unit}"));
        }
        if n < min as i128 || (self.check == Check::BrokerDefaultOrPositive && n == 0) {
            return invalid();
        }
        Ok(Checked::Number(n as i64))
    }

    /// The default as a properties file would write it; none when there is none to write.
    pub fn default_text(&self) -> Option<String> {
        match self.default {
            DefaultValue::Required | DefaultValue::Unset | DefaultValue::Worker => None,
            DefaultValue::Number(n) => Some(n.to_string()),
            DefaultValue::Signed(n) => Some(n.to_string()),
            DefaultValue::Text(text) => Some(text.to_string()),
        }
    }

    /// The key as the REST API's definitions show it.
    pub fn config_key(&self) -> ConfigKey {
        ConfigKey {
            name: self.name.to_string(),
            type_name: self.kind.name(),
            default_value: self.default_text(),
            required: self.default == DefaultValue::Required,
            importance: self.importance.name(),
            documentation: self.doc.to_string(),
            group: Some(self.group.to_string()),
        }
    }
}

const fn key(
    name: &'static str,
    kind: Kind,
    default: DefaultValue,
    importance: Importance,
    group: &'static str,
    scope: Scope,
    doc: &'static str,
) -> Key {
    Key { name, kind, default, importance, group, scope, doc, check: Check::Any }
}

/// A value that passed `Key::check`, as its type reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    Number(i64),
    Flag(bool),
    Word(&'static str),
    Text,
}

/// "a, b or c".
fn one_of(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

use self::Check::{AtLeast, Between, BrokerDefaultOrPositive, Millis, OneOf};
use self::DefaultValue::{Number, Required, Signed, Text, Unset, Worker};
use Importance::{High, Low, Medium};
use Kind::{Boolean, Class, Int, List, Long, Short, String as Str};
use Scope::{Distributed, Every, Sink, Source, Standalone};

/// Key prefixes of a worker config whose keys are handed on: to the Kafka clients (without the
/// prefix) or to a converter.
pub const WORKER_PREFIXES: &[(&str, &str)] = &[
    ("producer.", "Settings of the producers of source tasks, handed to librdkafka without the prefix."),
    ("consumer.", "Settings of the consumers of sink tasks, handed to librdkafka without the prefix. A sink task's consumer fetches at most 16 MiB ahead unless queued.max.messages.kbytes says otherwise."),
    ("admin.", "Settings of the admin client that creates topics, handed to librdkafka without the prefix."),
    ("key.converter.", "Settings of the worker's key converter."),
    ("value.converter.", "Settings of the worker's value converter."),
    ("header.converter.", "Settings of the worker's header converter."),
    ("ssl.", "Kafka's TLS settings (ssl.truststore.*, ssl.keystore.*, ssl.key.password, ssl.endpoint.identification.algorithm), for every Kafka client of the worker; see docs/security.md."),
    ("sasl.", "Kafka's SASL settings (sasl.mechanism, sasl.jaas.config), for every Kafka client of the worker; see docs/security.md."),
    ("listeners.https.", "The https listener's TLS settings with Kafka Connect's names: ssl.keystore.location, ssl.keystore.type (PEM or PKCS12), ssl.keystore.password, ssl.key.password, ssl.truststore.location, ssl.truststore.type, ssl.truststore.password, ssl.client.auth (none, requested, required); without any, the worker's ssl.* are used."),
    ("config.providers.", "Each config provider's class (`config.providers.<name>.class`) and settings (`config.providers.<name>.param.*`)."),
];

/// The keys of a worker config.
#[rustfmt::skip]
pub const WORKER_KEYS: &[Key] = &[
    worker::BOOTSTRAP_SERVERS,
    worker::PLUGIN_PATH,
    worker::PLUGIN_SCAN_INTERVAL_MS,
    worker::LISTENERS,
    worker::REST_ADVERTISED_HOST_NAME,
    worker::REST_ADVERTISED_PORT,
    worker::REST_ADVERTISED_LISTENER,
    worker::CONFIG_PROVIDERS,
    worker::REST_EXTENSION_CLASSES,
    worker::WHARF_REST_BASIC_AUTH_CREDENTIALS_FILE,
    worker::ACCESS_CONTROL_ALLOW_ORIGIN,
    worker::ACCESS_CONTROL_ALLOW_METHODS,
    worker::OFFSET_STORAGE_FILE_FILENAME,
    worker::OFFSET_FLUSH_INTERVAL_MS,
    worker::OFFSET_FLUSH_TIMEOUT_MS,
    worker::EXACTLY_ONCE_SOURCE_SUPPORT,
    worker::TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS,
    worker::KEY_CONVERTER,
    worker::VALUE_CONVERTER,
    worker::HEADER_CONVERTER,
    worker::WASM_MEMORY_MAX_BYTES,
    worker::WASM_CALL_TIMEOUT_MS,
    worker::WASM_MAX_RECORDS_PER_CALL,
    worker::WASM_MAX_BYTES_PER_CALL,
    worker::WASM_MAX_HOST_HANDLES,
    worker::WASM_MAX_SOCKETS_PER_WORKER,
    worker::WASM_MAX_SCHEMA_DEPTH,
    worker::WASM_MAX_SCHEMA_NODES,
    worker::WASM_INSTANCE_RECYCLE_RECORDS,
    worker::WASM_LOG_LINE_MAX_BYTES,
    worker::WASM_LOG_LINES_PER_SECOND,
    worker::WASM_MAX_PLUGIN_METRICS,
    worker::WASM_COMPILE_THREADS,
    worker::WASM_FS_INLINE,
    worker::WASM_CACHE_DIR,
    worker::WASM_CEILING_FS_READ,
    worker::WASM_CEILING_FS_WRITE,
    worker::WASM_CEILING_NET_CONNECT,
    worker::WASM_CEILING_HTTP_ALLOW,
    worker::WHARF_BOOTSTRAP_TIMEOUT_MS,
    worker::WHARF_TASKS_MAX_PER_CONNECTOR,
    worker::WHARF_TASKS_MAX_PER_WORKER,
    worker::WHARF_AUTO_RESTART_ENABLE,
    worker::METRICS_SAMPLE_WINDOW_MS,
    worker::METRICS_NUM_SAMPLES,
    worker::METRICS_RECORDING_LEVEL,
    worker::METRICS_LISTENERS,
    worker::WHARF_LOG_FORMAT,
    worker::WHARF_REST_MAX_CONCURRENT_PASSWORD_CHECKS,
    worker::WHARF_REST_MAX_CONCURRENT_EXPENSIVE,
    worker::GROUP_ID,
    worker::CONFIG_STORAGE_TOPIC,
    worker::OFFSET_STORAGE_TOPIC,
    worker::STATUS_STORAGE_TOPIC,
    worker::CONFIG_STORAGE_REPLICATION_FACTOR,
    worker::OFFSET_STORAGE_REPLICATION_FACTOR,
    worker::STATUS_STORAGE_REPLICATION_FACTOR,
    worker::OFFSET_STORAGE_PARTITIONS,
    worker::STATUS_STORAGE_PARTITIONS,
    worker::SESSION_TIMEOUT_MS,
    worker::HEARTBEAT_INTERVAL_MS,
    worker::REBALANCE_TIMEOUT_MS,
    worker::SCHEDULED_REBALANCE_MAX_DELAY_MS,
    worker::INTER_WORKER_KEY_TTL_MS,
    worker::INTER_WORKER_KEY_GENERATION_ALGORITHM,
    worker::INTER_WORKER_SIGNATURE_ALGORITHM,
    worker::INTER_WORKER_VERIFICATION_ALGORITHMS,
    worker::WHARF_REST_FORWARD_ALLOWED_URLS,
    worker::WHARF_INTER_WORKER_SIGNATURE_MAX_SKEW_MS,
    worker::WHARF_INTER_WORKER_LEGACY_SIGNATURES,
    worker::WORKER_SYNC_TIMEOUT_MS,
    worker::TOPIC_CREATION_ENABLE,
    worker::TOPIC_TRACKING_ENABLE,
    worker::TOPIC_TRACKING_ALLOW_RESET,
    worker::CONNECTOR_CLIENT_CONFIG_OVERRIDE_POLICY,
    worker::CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWLIST,
    worker::CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWED_PATHS,
    worker::WHARF_RESERVED_TOPICS,
    worker::SECURITY_PROTOCOL,
];

/// Kafka Connect 4.1 worker keys that Wharf accepts from a Connect worker file and does not act
/// on, each with what it does in Connect and why it does nothing here: a worker logs one line for
/// each it is given, once, at start. (`response.http.headers.config` and `admin.listeners` are
/// refused when set to something Wharf would silently not do.)
#[rustfmt::skip]
pub const CONNECT_ONLY_WORKER_KEYS: &[(&str, &str)] = &[
    ("plugin.discovery", "chooses how Connect finds plugin classes in plugin.path (service loading or class scanning); Wharf finds plugins by their .wasm files and needs no discovery mode"),
    ("metric.reporters", "names Java classes that receive Connect's metrics; Wharf runs no Java classes, and serves its metrics at GET /metrics"),
    ("client.dns.lookup", "chooses how Connect's Java clients resolve broker names; Wharf's clients resolve them as librdkafka does (set producer.client.dns.lookup and consumer.client.dns.lookup to change it)"),
    ("key.converter.plugin.version", "chooses the version of the key converter's plugin; Wharf's converters are built in and have one version"),
    ("value.converter.plugin.version", "chooses the version of the value converter's plugin; Wharf's converters are built in and have one version"),
    ("header.converter.plugin.version", "chooses the version of the header converter's plugin; Wharf's converters are built in and have one version"),
    ("admin.listeners", "serves the /admin endpoints on listeners of their own, or, empty, turns them off; Wharf serves /admin/loggers on its one listener, and turns it off when admin.listeners is empty"),
    ("response.http.headers.config", "adds headers to every REST response; Wharf adds none, and an empty value asks for none"),
    ("client.id", "names the Java clients of Connect's worker (its group member and its internal topics' clients); Wharf names its clients after the worker and task"),
    ("metadata.max.age.ms", "sets how often the worker's own Java clients refresh metadata; Wharf's internal clients keep librdkafka's setting"),
    ("send.buffer.bytes", "sets the socket send buffer of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("receive.buffer.bytes", "sets the socket receive buffer of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("reconnect.backoff.ms", "sets the reconnect backoff of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("reconnect.backoff.max.ms", "sets the longest reconnect backoff of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("socket.connection.setup.timeout.ms", "sets how long the worker's own Java clients wait for a connection; Wharf's internal clients keep librdkafka's setting"),
    ("socket.connection.setup.timeout.max.ms", "sets the longest connection wait of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("retry.backoff.ms", "sets the retry backoff of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("retry.backoff.max.ms", "sets the longest retry backoff of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("request.timeout.ms", "sets the request timeout of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("connections.max.idle.ms", "closes idle connections of the worker's own Java clients; Wharf's internal clients keep librdkafka's setting"),
    ("metadata.recovery.strategy", "lets the worker's own Java clients rebootstrap when every broker they know is gone; Wharf's internal clients keep librdkafka's behaviour"),
    ("metadata.recovery.rebootstrap.trigger.ms", "sets when the worker's own Java clients rebootstrap; Wharf's internal clients keep librdkafka's behaviour"),
    ("worker.unsync.backoff.ms", "sets how long a worker that could not catch up with the config topic waits before it rejoins; Wharf rejoins at once, after worker.sync.timeout.ms"),
    ("connect.protocol", "chooses the rebalance protocol among Java workers (eager, compatible, sessioned); Wharf's workers always rebalance cooperatively and sign their requests"),
    ("inter.worker.key.size", "sets the session key's size in bits; Wharf makes the key as long as Java's KeyGenerator does for inter.worker.key.generation.algorithm (32, 48 or 64 bytes)"),
];

/// Whether a connector config key is one of the host's own secret settings, hidden over REST
/// whatever the plugin declares: a client override's JAAS config, a key store's password or key.
pub fn is_host_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("sasl.jaas.config")
        || (key.contains("ssl.") && (key.ends_with("password") || key.ends_with("keystore.key")))
}

/// Whether a key looks like it holds a secret, by its name: its last segment is or ends with
/// `password`, `passwd`, `secret`, `token`, `credentials` or `apikey`; it ends with `api.key` or
/// `private.key`; or it contains `jaas.config` or `keystore.key`. Used where the plugin's own
/// declaration is not at hand, so that masking fails closed.
pub fn looks_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let last = key.rsplit('.').next().unwrap_or(&key);
    ["password", "passwd", "secret", "token", "credentials", "apikey"].iter().any(|word| last.ends_with(word))
        || key.ends_with("api.key")
        || key.ends_with("private.key")
        || key.contains("jaas.config")
        || key.contains("keystore.key")
}

/// Whether a Connect-only key's value asks for something Wharf would silently not do: the
/// refusal, saying what to write instead.
pub fn connect_only_refusal(name: &str, value: &str) -> Option<String> {
    let value = value.trim();
    match name {
        "response.http.headers.config" if !value.is_empty() => Some(format!(
            "response.http.headers.config={value}: Wharf does not add headers to REST responses; remove the key, or \
             put the headers in a proxy in front of the worker"
        )),
        "admin.listeners" if !value.is_empty() => Some(format!(
            "admin.listeners={value}: Wharf serves the /admin endpoints on its one listener (listeners), not on \
             listeners of their own; remove the key to serve them there, or leave it empty to turn them off"
        )),
        _ => None,
    }
}

pub fn connect_only_worker_key(name: &str) -> Option<&'static str> {
    CONNECT_ONLY_WORKER_KEYS.iter().find(|(key, _)| *key == name).map(|(_, what)| *what)
}

/// The host-level keys of a connector config (the plugin's own come from its `describe`). Every
/// key, these included, is handed to the plugin too, as Kafka Connect does.
#[rustfmt::skip]
pub const CONNECTOR_KEYS: &[Key] = &[
    connector::NAME,
    connector::CONNECTOR_CLASS,
    connector::CONNECTOR_VERSION,
    connector::TASKS_MAX,
    connector::CONNECTOR_PLUGIN_VERSION,
    connector::TASKS_MAX_ENFORCE,
    connector::CONFIG_ACTION_RELOAD,
    connector::TRANSFORMS,
    connector::PREDICATES,
    connector::KEY_CONVERTER,
    connector::VALUE_CONVERTER,
    connector::HEADER_CONVERTER,
    connector::TOPICS,
    connector::TOPICS_REGEX,
    connector::TOPIC_CREATION_GROUPS,
    connector::TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR,
    connector::TOPIC_CREATION_DEFAULT_PARTITIONS,
    connector::ERRORS_TOLERANCE,
    connector::ERRORS_RETRY_TIMEOUT,
    connector::ERRORS_RETRY_DELAY_MAX_MS,
    connector::ERRORS_LOG_ENABLE,
    connector::ERRORS_LOG_INCLUDE_MESSAGES,
    connector::ERRORS_DEADLETTERQUEUE_TOPIC_NAME,
    connector::ERRORS_DEADLETTERQUEUE_TOPIC_REPLICATION_FACTOR,
    connector::ERRORS_DEADLETTERQUEUE_CONTEXT_HEADERS_ENABLE,
    connector::EXACTLY_ONCE_SUPPORT,
    connector::TRANSACTION_BOUNDARY,
    connector::TRANSACTION_BOUNDARY_INTERVAL_MS,
    connector::OFFSETS_STORAGE_TOPIC,
    connector::AUTO_RESTART_ENABLE,
    connector::AUTO_RESTART_MAX_RESTARTS,
    connector::AUTO_RESTART_BACKOFF_UNIT_MS,
    connector::WASM_FS_READ,
    connector::WASM_FS_WRITE,
    connector::WASM_NET_CONNECT,
    connector::WASM_HTTP_ALLOW,
    connector::WASM_TLS_TRUST,
    connector::WASM_MEMORY_MAX_BYTES,
    connector::WASM_CALL_TIMEOUT_MS,
    connector::WASM_MAX_RECORDS_PER_CALL,
    connector::WASM_MAX_BYTES_PER_CALL,
    connector::WASM_MAX_HOST_HANDLES,
    connector::WASM_MAX_SCHEMA_DEPTH,
    connector::WASM_MAX_SCHEMA_NODES,
    connector::WASM_INSTANCE_RECYCLE_RECORDS,
    connector::WASM_LOG_LINE_MAX_BYTES,
    connector::WASM_LOG_LINES_PER_SECOND,
    connector::WASM_MAX_PLUGIN_METRICS,
];

pub fn worker_key(name: &str) -> Option<&'static Key> {
    WORKER_KEYS.iter().find(|k| k.name == name)
}

pub fn connector_key(name: &str) -> Option<&'static Key> {
    CONNECTOR_KEYS.iter().find(|k| k.name == name)
}

/// The value a connector config gives a host key (its last), read and checked by the key's
/// definition; none when the config does not give it (or the key has no definition).
pub fn connector_value(config: &[(String, String)], name: &str) -> Option<Result<Checked, String>> {
    let value = wharf_connect::model::last_value(config, name)?;
    Some(connector_key(name)?.number_or_word(value))
}

/// A numeric key's default, as the table gives it.
pub fn number_default(key: Option<&Key>) -> Option<u64> {
    match key?.default {
        DefaultValue::Number(n) => Some(n),
        _ => None,
    }
}

/// The host-level keys of a connector of this kind, as the REST API's definitions show them.
pub fn connector_keys(sink: bool) -> Vec<ConfigKey> {
    CONNECTOR_KEYS
        .iter()
        .filter(|k| match k.scope {
            Scope::Sink => sink,
            Scope::Source => !sink,
            _ => true,
        })
        .map(Key::config_key)
        .collect()
}

/// `docs/configuration.md`: every key of both tables.
pub fn reference() -> String {
    let mut page = String::from(
        "# Configuration reference\n\n\
         Generated from `host/src/config/keys.rs` (a test fails when this page falls behind it).\n\n\
         Worker keys go in the properties file given to `wharf standalone` or `wharf distributed`;\n\
         connector keys go in a connector's config, beside the plugin's own keys\n\
         (`GET /connector-plugins/{plugin}/config` lists those).\n\n## Worker\n\n",
    );
    table(&mut page, WORKER_KEYS);
    page.push_str("\nKeys starting with these prefixes are handed on:\n\n");
    for (prefix, doc) in WORKER_PREFIXES {
        page.push_str(&format!("- `{prefix}*`: {doc}\n"));
    }
    page.push_str(
        "\nKafka Connect's worker keys that Wharf accepts and does not act on (a worker logs each one \
         it is given, once, at start; a key that neither knows is logged as unused):\n\n",
    );
    for (name, what) in CONNECT_ONLY_WORKER_KEYS {
        page.push_str(&format!("- `{name}`: in Kafka Connect, {what}.\n"));
    }
    page.push_str(
        "\nSettings under `producer.`, `consumer.` and `admin.` (and `security.protocol`, `ssl.*` and \
         `sasl.*`, see docs/security.md) may use the Java client's names, as a Kafka Connect worker file \
         does. Names that both clients share, and librdkafka's own names, pass unchanged; these differ:\n\n",
    );
    page.push_str(&super::clients::reference());
    page.push_str("\n## Connector\n\n");
    table(&mut page, CONNECTOR_KEYS);
    page
}

fn table(page: &mut String, keys: &[Key]) {
    page.push_str("| Key | Type | Default | Valid values | Importance | Where | Description |\n");
    page.push_str("|---|---|---|---|---|---|---|\n");
    for k in keys {
        let default = match k.default {
            DefaultValue::Required => "required".to_string(),
            DefaultValue::Unset => "(none)".to_string(),
            DefaultValue::Worker => "the worker's".to_string(),
            _ => match k.default_text().as_deref() {
                Some("") => "(empty)".to_string(),
                Some(text) => format!("`{text}`"),
                None => "(none)".to_string(),
            },
        };
        let scope = match k.scope {
            Scope::Every => "all",
            Scope::Standalone => "standalone",
            Scope::Distributed => "distributed",
            Scope::Source => "sources",
            Scope::Sink => "sinks",
        };
        let valid = match (k.check, k.kind) {
            (Check::Any, Kind::Boolean) => "true, false".to_string(),
            (check, _) => check.describe(),
        };
        page.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            k.name,
            k.kind.name(),
            default,
            valid,
            k.importance.name(),
            scope,
            k.doc.replace('|', "\\|")
        ));
    }
}

/// The worker keys by their Rust names: a reader takes one of these, so a misspelled key does not
/// compile. `WORKER_KEYS` lists them all, in the reference page's order.
#[rustfmt::skip]
pub mod worker {
    use super::*;

    pub const BOOTSTRAP_SERVERS: Key = key("bootstrap.servers", List, Required, High, "Kafka", Every, "The Kafka brokers to connect to, host:port separated by commas.");
    pub const PLUGIN_PATH: Key = key("plugin.path", List, Required, High, "Plugins", Every, "Folders that hold .wasm plugins, separated by commas.");
    pub const PLUGIN_SCAN_INTERVAL_MS: Key = key("plugin.scan.interval.ms", Long, Number(2_000), Low, "Plugins", Every, "How often plugin.path is checked for added, replaced or removed plugins.").checked(Between(100, MAX_MILLIS as i64));
    pub const LISTENERS: Key = key("listeners", List, Text("http://localhost:8083"), High, "REST", Every, "The REST API's listener: one http://HOST:PORT or https://HOST:PORT (with listeners.https.ssl.*).");
    pub const REST_ADVERTISED_HOST_NAME: Key = key("rest.advertised.host.name", Str, Unset, Low, "REST", Every, "The host other workers and statuses know this worker by (the listener's otherwise).");
    pub const REST_ADVERTISED_PORT: Key = key("rest.advertised.port", Int, Unset, Low, "REST", Every, "The port other workers and statuses know this worker by (the listener's otherwise).").checked(Between(1, 65535));
    pub const REST_ADVERTISED_LISTENER: Key = key("rest.advertised.listener", Str, Unset, Low, "REST", Every, "Accepted for Kafka Connect's configs; only http is served.");
    pub const CONFIG_PROVIDERS: Key = key("config.providers", List, Text(""), Low, "Secrets", Every, "Names of config providers (FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider) that ${name:path:key} references in connector configs are resolved with, separated by commas.");
    pub const REST_EXTENSION_CLASSES: Key = key("rest.extension.classes", List, Text(""), Low, "REST", Every, "REST extensions: org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension (HTTP Basic authentication, with wharf.rest.basic.auth.credentials.file) is the one Wharf has.");
    pub const WHARF_REST_BASIC_AUTH_CREDENTIALS_FILE: Key = key("wharf.rest.basic.auth.credentials.file", Str, Text(""), Medium, "REST", Every, "A file of name=hash lines (made by `wharf rest-credential NAME`); when set, every REST request must carry HTTP Basic credentials of one of its users.");
    pub const ACCESS_CONTROL_ALLOW_ORIGIN: Key = key("access.control.allow.origin", Str, Text(""), Low, "REST", Every, "Web origins whose pages may call the REST API, separated by commas (* for any); none by default.");
    pub const ACCESS_CONTROL_ALLOW_METHODS: Key = key("access.control.allow.methods", Str, Text(""), Low, "REST", Every, "Methods a CORS preflight answer allows (GET,POST,HEAD when empty).");
    pub const OFFSET_STORAGE_FILE_FILENAME: Key = key("offset.storage.file.filename", Str, Required, High, "Offsets", Standalone, "The file a standalone worker keeps source offsets in.");
    pub const OFFSET_FLUSH_INTERVAL_MS: Key = key("offset.flush.interval.ms", Long, Number(60_000), Low, "Offsets", Every, "How often tasks commit their offsets.").checked(Millis);
    pub const OFFSET_FLUSH_TIMEOUT_MS: Key = key("offset.flush.timeout.ms", Long, Number(5_000), Low, "Offsets", Every, "How long a commit waits for outstanding records to be delivered.").checked(Millis);
    pub const TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS: Key = key("task.shutdown.graceful.timeout.ms", Long, Number(5_000), Low, "Tasks", Every, "How long a stopping task is given to finish.").checked(Millis);
    pub const KEY_CONVERTER: Key = key("key.converter", Class, Text("org.apache.kafka.connect.converters.ByteArrayConverter"), High, "Converters", Every, "Converter of record keys, by Kafka Connect's class name: JsonConverter, StringConverter, ByteArrayConverter, LongConverter, IntegerConverter, ShortConverter, DoubleConverter, FloatConverter or BooleanConverter; its settings take the prefix key.converter. (Bytes a plugin hands over as bytes pass through unchanged.)");
    pub const VALUE_CONVERTER: Key = key("value.converter", Class, Text("org.apache.kafka.connect.converters.ByteArrayConverter"), High, "Converters", Every, "Converter of record values, as key.converter; its settings take the prefix value.converter.");
    pub const HEADER_CONVERTER: Key = key("header.converter", Class, Text("org.apache.kafka.connect.storage.SimpleHeaderConverter"), Low, "Converters", Every, "Converter of header values that plugins give or take as data (SimpleHeaderConverter: Connect's text form; any of the converters above also works; ByteArrayConverter passes bytes as they are).");
    pub const WASM_MEMORY_MAX_BYTES: Key = key("wasm.memory.max.bytes", Long, Number(256 * 1024 * 1024), Medium, "Sandbox", Every, "Linear memory one plugin instance may grow to, across all its memories.").checked(AtLeast(1 << 20));
    pub const WASM_CALL_TIMEOUT_MS: Key = key("wasm.call.timeout.ms", Long, Number(5_000), Medium, "Sandbox", Every, "How long one call into a plugin may take, waits inside WASI included.").checked(Millis);
    pub const WASM_MAX_RECORDS_PER_CALL: Key = key("wasm.max.records.per.call", Int, Number(2_000), Medium, "Sandbox", Every, "The most records one poll may return and one put receives.").checked(Between(1, 1_000_000));
    pub const WASM_MAX_BYTES_PER_CALL: Key = key("wasm.max.bytes.per.call", Long, Number(64 * 1024 * 1024), Medium, "Sandbox", Every, "The most bytes one plugin answer may hold: topics, keys, values, headers, source partitions and offsets.").checked(AtLeast(1024));
    pub const WASM_MAX_HOST_HANDLES: Key = key("wasm.max.host.handles", Int, Number(1024), Low, "Sandbox", Every, "Host resources (sockets, streams, pollables, files) one instance may hold at once.").checked(Between(16, 1 << 20));
    pub const WASM_MAX_SOCKETS_PER_WORKER: Key = key("wasm.max.sockets.per.worker", Int, Number(4096), Low, "Sandbox", Every, "Sockets all of this worker's plugin instances may hold at once (TCP and HTTP); a connect beyond it is refused to the plugin.").checked(Between(1, 1 << 20));
    pub const WASM_MAX_SCHEMA_DEPTH: Key = key("wasm.max.schema.depth", Int, Number(64), Low, "Sandbox", Every, "Levels one schema of a plugin's data batch may nest (a struct in an array in a map…); a deeper one fails the call.").checked(Between(1, 1024));
    pub const WASM_MAX_SCHEMA_NODES: Key = key("wasm.max.schema.nodes", Long, Number(100_000), Low, "Sandbox", Every, "Schema nodes one data batch of a plugin's may hold, a shared schema counted at each use; more fail the call.").checked(Between(1, 100_000_000));
    pub const WASM_INSTANCE_RECYCLE_RECORDS: Key = key("wasm.instance.recycle.records", Long, Number(0), Low, "Sandbox", Every, "Records after which a task's plugin instance (and the transform plugins of its chain) is replaced by a fresh one, at a flush boundary: what the old one handled is stored first, a source's offsets and a sink's flush. For a plugin whose language runtime keeps something of every call; state the plugin holds only in its own memory is not carried over. 0 never replaces it.").checked(AtLeast(0));
    pub const WASM_LOG_LINE_MAX_BYTES: Key = key("wasm.log.line.max.bytes", Int, Number(8192), Low, "Sandbox", Every, "The longest line a plugin may log; longer ones are cut.").checked(Between(256, 1 << 20));
    pub const WASM_LOG_LINES_PER_SECOND: Key = key("wasm.log.lines.per.second", Int, Number(500), Low, "Sandbox", Every, "Lines one instance may log in a second; more are counted and dropped.").checked(AtLeast(1));
    pub const WASM_MAX_PLUGIN_METRICS: Key = key("wasm.max.plugin.metrics", Int, Number(100), Low, "Sandbox", Every, "Metrics one task's plugin may register of its own (contract 0.1.7 metrics, served as kafka_connect_plugins_*); a registration beyond it is refused to the plugin. 0 refuses every one.").checked(Between(0, 10_000));
    pub const WASM_COMPILE_THREADS: Key = key("wasm.compile.threads", Int, Number(2), Low, "Sandbox", Every, "Plugin files compiled at once, each on a thread of its own beside the worker's work (a component not in wasm.cache.dir takes seconds to compile); plugins already loaded and their connectors go on meanwhile, and a connector whose plugin is still compiling waits for it.").checked(Between(1, 64));
    pub const WASM_FS_INLINE: Key = key("wasm.fs.inline", Boolean, Text("true"), Low, "Sandbox", Every, "Whether a plugin's file system calls (open, stat, reads and writes at an offset, directory listings) run on its task's own thread; streamed reads and writes always run on the plugin I/O pool. true spares each call two hand-offs between threads (an idle file source costs half as much); a call on a file system that stops answering (a hung network mount) then holds its task past wasm.call.timeout.ms until the system answers. Set false when granted folders live on network file systems, so that such a call still ends at its deadline.");
    pub const WASM_CACHE_DIR: Key = key("wasm.cache.dir", Str, Unset, Low, "Sandbox", Every, "A private folder for compiled plugins ($WHARF_CACHE/compiled, or ~/.cache/wharf/compiled, when unset).");
    pub const WASM_CEILING_FS_READ: Key = key("wasm.ceiling.fs.read", List, Text(""), High, "Sandbox", Every, "Folders whose contents connector grants may read, separated by commas; none by default.");
    pub const WASM_CEILING_FS_WRITE: Key = key("wasm.ceiling.fs.write", List, Text(""), High, "Sandbox", Every, "Folders whose contents connector grants may write (and read); none by default.");
    pub const WASM_CEILING_NET_CONNECT: Key = key("wasm.ceiling.net.connect", List, Text(""), High, "Sandbox", Every, "host:port patterns (* for any port) connector grants may connect to; none by default.");
    pub const WASM_CEILING_HTTP_ALLOW: Key = key("wasm.ceiling.http.allow", List, Text(""), High, "Sandbox", Every, "host:port patterns connector grants may send HTTP requests to; none by default.");
    pub const WHARF_BOOTSTRAP_TIMEOUT_MS: Key = key("wharf.bootstrap.timeout.ms", Long, Number(15_000), Low, "Wharf", Every, "How long to wait for the Kafka cluster to answer at start.").checked(Millis);
    pub const WHARF_TASKS_MAX_PER_CONNECTOR: Key = key("wharf.tasks.max.per.connector", Int, Number(256), Medium, "Wharf", Every, "The highest tasks.max a connector may ask for.").checked(AtLeast(1));
    pub const WHARF_TASKS_MAX_PER_WORKER: Key = key("wharf.tasks.max.per.worker", Int, Number(1024), Medium, "Wharf", Every, "Tasks this worker runs at once; tasks beyond it fail.").checked(AtLeast(1));
    pub const EXACTLY_ONCE_SOURCE_SUPPORT: Key = key("exactly.once.source.support", Str, Text("disabled"), High, "Exactly Once", Every, "Whether source tasks write their records and source offsets in one Kafka transaction each (KIP-618): disabled delivers at least once; preparing is the middle step of a rolling upgrade (the config topic is written in transactions, as Wharf always writes it; tasks deliver at least once); enabled runs every source task in transactions under transactional.id <group.id>-<connector>-<task>, reads offsets read_committed, and refuses to start when Kafka refuses transactions. Distributed workers only: a standalone worker takes disabled alone.").checked(OneOf(&["disabled", "preparing", "enabled"]));
    pub const WHARF_AUTO_RESTART_ENABLE: Key = key("wharf.auto.restart.enable", Boolean, Text("false"), Medium, "Wharf", Every, "Whether the FAILED tasks of connectors that do not set auto.restart.enable are restarted automatically: at once, then after 2, 6, 12, 20, 30, 42 and 56 back-off units, then every 60.");
    pub const METRICS_SAMPLE_WINDOW_MS: Key = key("metrics.sample.window.ms", Long, Number(30_000), Low, "Metrics", Every, "One sample of the rates, averages and maxima GET /metrics serves, in milliseconds: they cover metrics.num.samples of them.").checked(AtLeast(1));
    pub const METRICS_NUM_SAMPLES: Key = key("metrics.num.samples", Int, Number(2), Low, "Metrics", Every, "How many samples of metrics.sample.window.ms the rates, averages and maxima GET /metrics serves cover.").checked(Between(1, 1000));
    pub const METRICS_RECORDING_LEVEL: Key = key("metrics.recording.level", Str, Text("INFO"), Low, "Metrics", Every, "The detail of the metrics recorded: Wharf records every series it serves at INFO, so DEBUG and TRACE add none.").checked(OneOf(&["INFO", "DEBUG", "TRACE"]));
    pub const METRICS_LISTENERS: Key = key("metrics.listeners", Str, Unset, Low, "Metrics", Every, "A listener of its own for GET /metrics, http://HOST:PORT or https://HOST:PORT (with the REST API's listeners.https.* or ssl.* keys), behind the REST API's authentication; /metrics stays on the REST API's listener too.");
    pub const WHARF_LOG_FORMAT: Key = key("wharf.log.format", Str, Text("text"), Low, "Wharf", Every, "How the worker's log lines read: text (each line a connector or task causes says [<connector>|task-<n>] or [<connector>|worker] after its level, as Kafka Connect's do) or json (one object a line, with the fields timestamp, level, target, message, connector and task).").checked(OneOf(&["text", "json"]));
    pub const WHARF_REST_MAX_CONCURRENT_PASSWORD_CHECKS: Key = key("wharf.rest.max.concurrent.password.checks", Int, Number(2), Low, "Wharf", Every, "REST password checks (a PBKDF2 of a quarter second each) run at once, on threads of their own; more are answered 429, and a client address that keeps failing waits longer and longer.").checked(Between(1, 64));
    pub const WHARF_REST_MAX_CONCURRENT_EXPENSIVE: Key = key("wharf.rest.max.concurrent.expensive", Int, Number(8), Low, "Wharf", Every, "REST calls that run a plugin or ask Kafka answered at once; more wait up to 10 s, then get a 429.").checked(Between(1, 1024));
    pub const GROUP_ID: Key = key("group.id", Str, Required, High, "Cluster", Distributed, "The cluster this worker joins: workers with one group.id share their connectors.");
    pub const CONFIG_STORAGE_TOPIC: Key = key("config.storage.topic", Str, Required, High, "Cluster", Distributed, "The topic that holds connector and task configs.");
    pub const OFFSET_STORAGE_TOPIC: Key = key("offset.storage.topic", Str, Required, High, "Cluster", Distributed, "The topic that holds source offsets.");
    pub const STATUS_STORAGE_TOPIC: Key = key("status.storage.topic", Str, Required, High, "Cluster", Distributed, "The topic that holds connector and task statuses.");
    pub const CONFIG_STORAGE_REPLICATION_FACTOR: Key = key("config.storage.replication.factor", Short, Signed(3), Low, "Cluster", Distributed, "Replication factor of the config topic when it is created (-1: the broker's default).").checked(BrokerDefaultOrPositive);
    pub const OFFSET_STORAGE_REPLICATION_FACTOR: Key = key("offset.storage.replication.factor", Short, Signed(3), Low, "Cluster", Distributed, "Replication factor of the offset topic when it is created (-1: the broker's default).").checked(BrokerDefaultOrPositive);
    pub const STATUS_STORAGE_REPLICATION_FACTOR: Key = key("status.storage.replication.factor", Short, Signed(3), Low, "Cluster", Distributed, "Replication factor of the status topic when it is created (-1: the broker's default).").checked(BrokerDefaultOrPositive);
    pub const OFFSET_STORAGE_PARTITIONS: Key = key("offset.storage.partitions", Int, Number(25), Low, "Cluster", Distributed, "Partitions of the offset topic when it is created.").checked(AtLeast(1));
    pub const STATUS_STORAGE_PARTITIONS: Key = key("status.storage.partitions", Int, Number(5), Low, "Cluster", Distributed, "Partitions of the status topic when it is created.").checked(AtLeast(1));
    pub const SESSION_TIMEOUT_MS: Key = key("session.timeout.ms", Int, Number(10_000), Low, "Cluster", Distributed, "A worker not heard from for this long leaves the group.").checked(Millis);
    pub const HEARTBEAT_INTERVAL_MS: Key = key("heartbeat.interval.ms", Int, Number(3_000), Low, "Cluster", Distributed, "How often a worker tells the group coordinator it is alive (below session.timeout.ms).").checked(Millis);
    pub const REBALANCE_TIMEOUT_MS: Key = key("rebalance.timeout.ms", Int, Number(60_000), Low, "Cluster", Distributed, "How long every worker has to rejoin once a rebalance starts.").checked(Millis);
    pub const SCHEDULED_REBALANCE_MAX_DELAY_MS: Key = key("scheduled.rebalance.max.delay.ms", Int, Number(300_000), Low, "Cluster", Distributed, "How long a departed worker's work waits for it to come back before it moves to the others.").checked(Millis);
    pub const INTER_WORKER_KEY_TTL_MS: Key = key("inter.worker.key.ttl.ms", Int, Number(3_600_000), Low, "Cluster", Distributed, "How long the leader's session key, with which workers sign their requests to each other, is used before the leader makes a new one.").checked(Millis);
    pub const INTER_WORKER_KEY_GENERATION_ALGORITHM: Key = key("inter.worker.key.generation.algorithm", Str, Text("HmacSHA256"), Low, "Cluster", Distributed, "The algorithm of the session key: HmacSHA256, HmacSHA384 or HmacSHA512.").checked(OneOf(&SIGNATURE_ALGORITHMS));
    pub const INTER_WORKER_SIGNATURE_ALGORITHM: Key = key("inter.worker.signature.algorithm", Str, Text("HmacSHA256"), Low, "Cluster", Distributed, "How a worker signs its requests to the others: HmacSHA256, HmacSHA384 or HmacSHA512.").checked(OneOf(&SIGNATURE_ALGORITHMS));
    pub const INTER_WORKER_VERIFICATION_ALGORITHMS: Key = key("inter.worker.verification.algorithms", List, Text("HmacSHA256"), Low, "Cluster", Distributed, "The signature algorithms a worker accepts on requests of the others, separated by commas.");
    pub const WHARF_REST_FORWARD_ALLOWED_URLS: Key = key("wharf.rest.forward.allowed.urls", List, Text(""), Medium, "Cluster", Distributed, "scheme://host:port patterns (* for any host or port) of the member URLs this worker forwards REST requests to; empty allows its own scheme and port on any host. A member whose URL matches none gets nothing forwarded.");
    pub const WHARF_INTER_WORKER_SIGNATURE_MAX_SKEW_MS: Key = key("wharf.inter.worker.signature.max.skew.ms", Long, Number(60_000), Low, "Cluster", Distributed, "How far the timestamp of a request one worker signs for another may be from the receiver's clock.").checked(Millis);
    pub const WHARF_INTER_WORKER_LEGACY_SIGNATURES: Key = key("wharf.inter.worker.legacy.signatures", Boolean, Text("false"), Low, "Cluster", Distributed, "Whether the leader also accepts requests signed over their body alone, as workers of earlier releases sign them; for a rolling upgrade only.");
    pub const WORKER_SYNC_TIMEOUT_MS: Key = key("worker.sync.timeout.ms", Int, Number(3_000), Low, "Cluster", Distributed, "How long a worker waits to catch up with the config topic before it rejoins.").checked(Millis);
    pub const TOPIC_CREATION_ENABLE: Key = key("topic.creation.enable", Boolean, Text("true"), Low, "Topics", Every, "Whether source connectors that set topic.creation.default.replication.factor and topic.creation.default.partitions have their topics created with their topic.creation.* settings; false leaves topics to the broker's auto.create.topics.enable.");
    pub const TOPIC_TRACKING_ENABLE: Key = key("topic.tracking.enable", Boolean, Text("true"), Low, "Topics", Every, "Whether tasks record the topics they write to or read from, for GET /connectors/{name}/topics (in the status topic, as Kafka Connect records them).");
    pub const TOPIC_TRACKING_ALLOW_RESET: Key = key("topic.tracking.allow.reset", Boolean, Text("true"), Low, "Topics", Every, "Whether PUT /connectors/{name}/topics/reset may forget a connector's topics.");
    pub const CONNECTOR_CLIENT_CONFIG_OVERRIDE_POLICY: Key = key("connector.client.config.override.policy", Class, Text("All"), Medium, "Kafka", Every, "Which of a connector's producer.override.*, consumer.override.* and admin.override.* settings are applied: None, Principal (security.protocol, sasl.mechanism, sasl.jaas.config), Allowlist (those connector.client.config.override.allowlist names) or All, or Kafka Connect's class names of these; a connector that gives one the policy does not allow is refused. Under every policy, settings that load code or run commands, librdkafka-only settings and files outside connector.client.config.override.allowed.paths are refused (docs/security.md).");
    pub const CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWLIST: Key = key("connector.client.config.override.allowlist", List, Text(""), Medium, "Kafka", Every, "The client settings (without the producer., consumer. or admin. prefix) connectors may override under the Allowlist policy; none by default.");
    pub const CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWED_PATHS: Key = key("connector.client.config.override.allowed.paths", List, Text(""), Medium, "Kafka", Every, "Folders in which a connector's client overrides may name a file (ssl.truststore.location, ssl.keystore.location); none by default, and never a wasm.ceiling.fs.* folder.");
    pub const WHARF_RESERVED_TOPICS: Key = key("wharf.reserved.topics", Str, Text(""), Medium, "Wharf", Every, "A pattern (Java regular expression, matched against the whole name) of topics no plugin's records and no dead-letter queue may reach, besides Kafka's and the worker's own: another cluster's internal topics, say.");
    pub const SECURITY_PROTOCOL: Key = key("security.protocol", Str, Text("PLAINTEXT"), Medium, "Kafka", Every, "How every client of the worker talks to Kafka: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (with ssl.* and sasl.*, Kafka's names).");
}

/// The host-level connector keys by their Rust names, as `worker` has the worker's.
/// `CONNECTOR_KEYS` lists them all, in the reference page's order.
#[rustfmt::skip]
pub mod connector {
    use super::*;

    pub const NAME: Key = key("name", Str, Required, High, "Common", Every, "The connector's unique name.");
    pub const CONNECTOR_CLASS: Key = key("connector.class", Str, Required, High, "Common", Every, "The plugin that runs the connector (its name, or a Kafka Connect class name it stands for).");
    pub const CONNECTOR_VERSION: Key = key("connector.version", Str, Unset, Medium, "Common", Every, "Which plugin versions may run it: a version or a range; the newest otherwise.");
    pub const TASKS_MAX: Key = key("tasks.max", Int, Number(1), High, "Common", Every, "The most tasks to split the connector into.").checked(AtLeast(1));
    pub const CONNECTOR_PLUGIN_VERSION: Key = key("connector.plugin.version", Str, Unset, Medium, "Common", Every, "Kafka Connect 4.1's name of connector.version; connector.version wins when both are given.");
    pub const TASKS_MAX_ENFORCE: Key = key("tasks.max.enforce", Boolean, Text("true"), Low, "Common", Every, "Whether a connector is held to tasks.max; Wharf always holds it, and refuses false.");
    pub const CONFIG_ACTION_RELOAD: Key = key("config.action.reload", Str, Text("restart"), Low, "Common", Every, "What a config provider's expired value does: restart or none. Wharf's providers give no expiry (as Kafka Connect's own), so both behave alike.").checked(OneOf(&["restart", "none"]));
    pub const TRANSFORMS: Key = key("transforms", List, Text(""), Low, "Transforms", Every, "Aliases of the transforms each record goes through, in order; each is set with transforms.<alias>.type and its settings (docs/transforms.md).");
    pub const PREDICATES: Key = key("predicates", List, Text(""), Low, "Predicates", Every, "Aliases of the predicates transforms may name with transforms.<alias>.predicate; each is set with predicates.<alias>.type.");
    pub const KEY_CONVERTER: Key = key("key.converter", Class, Unset, Low, "Common", Every, "Converter of record keys (the worker's otherwise, with the worker's settings); a connector that names one gives its settings with the prefix key.converter.");
    pub const VALUE_CONVERTER: Key = key("value.converter", Class, Unset, Low, "Common", Every, "Converter of record values (the worker's otherwise), as key.converter.");
    pub const HEADER_CONVERTER: Key = key("header.converter", Class, Unset, Low, "Common", Every, "Converter of header values (the worker's otherwise).");
    pub const TOPICS: Key = key("topics", List, Text(""), High, "Common", Sink, "The topics to read, separated by commas.");
    pub const TOPICS_REGEX: Key = key("topics.regex", Str, Text(""), High, "Common", Sink, "A pattern of the names of the topics to read, in place of topics: every topic whose whole name matches (Kafka's internal ones and the worker's aside), looked for again every 10 s. Java's syntax, less look-around and back-references.");
    pub const TOPIC_CREATION_GROUPS: Key = key("topic.creation.groups", List, Text(""), Low, "Topic Creation", Source, "Groups of topic creation settings besides default, in the order they are tried: each takes the topics its topic.creation.<group>.include patterns match and its exclude patterns do not, with its partitions, replication.factor and topic configs (topic.creation.<group>.<config>).");
    pub const TOPIC_CREATION_DEFAULT_REPLICATION_FACTOR: Key = key("topic.creation.default.replication.factor", Short, Unset, Low, "Topic Creation", Source, "With topic.creation.default.partitions, turns topic creation on: the replication factor of the topics the connector writes to, created before their first record (-1: the broker's default).").checked(BrokerDefaultOrPositive);
    pub const TOPIC_CREATION_DEFAULT_PARTITIONS: Key = key("topic.creation.default.partitions", Int, Unset, Low, "Topic Creation", Source, "The partitions of the topics the connector creates (-1: the broker's default).").checked(BrokerDefaultOrPositive);
    pub const ERRORS_TOLERANCE: Key = key("errors.tolerance", Str, Text("none"), Medium, "Error Handling", Every, "What a record that a converter or a transform fails on does: none fails the task, all skips the record (and sends it to the dead-letter queue, if there is one).").checked(OneOf(&["none", "all"]));
    pub const ERRORS_RETRY_TIMEOUT: Key = key("errors.retry.timeout", Long, Signed(0), Medium, "Error Handling", Every, "How long, in milliseconds, a plugin's retriable put or poll failure is retried before errors.tolerance decides; -1 retries for ever. Not set, it is retried until it succeeds, as Kafka Connect retries a task's RetriableException.").checked(AtLeast(-1));
    pub const ERRORS_RETRY_DELAY_MAX_MS: Key = key("errors.retry.delay.max.ms", Long, Number(60_000), Medium, "Error Handling", Every, "The longest wait between two retries, in milliseconds.").checked(AtLeast(1));
    pub const ERRORS_LOG_ENABLE: Key = key("errors.log.enable", Boolean, Text("false"), Medium, "Error Handling", Every, "Whether each skipped record's failure is logged.");
    pub const ERRORS_LOG_INCLUDE_MESSAGES: Key = key("errors.log.include.messages", Boolean, Text("false"), Medium, "Error Handling", Every, "Whether the log names the record that failed (its topic, partition, offset and timestamp).");
    pub const ERRORS_DEADLETTERQUEUE_TOPIC_NAME: Key = key("errors.deadletterqueue.topic.name", Str, Text(""), Medium, "Error Handling", Sink, "The topic a sink writes skipped records to, as they were read; none when empty.");
    pub const ERRORS_DEADLETTERQUEUE_TOPIC_REPLICATION_FACTOR: Key = key("errors.deadletterqueue.topic.replication.factor", Short, Signed(3), Medium, "Error Handling", Sink, "The replication factor of the dead-letter queue topic when the worker creates it.").checked(BrokerDefaultOrPositive);
    pub const ERRORS_DEADLETTERQUEUE_CONTEXT_HEADERS_ENABLE: Key = key("errors.deadletterqueue.context.headers.enable", Boolean, Text("false"), Medium, "Error Handling", Sink, "Whether records in the dead-letter queue carry __connect.errors.* headers saying where and why they failed.");
    pub const EXACTLY_ONCE_SUPPORT: Key = key("exactly.once.support", Str, Text("requested"), Medium, "Exactly Once Support", Source, "requested or required. With required, the connector is refused unless the worker has exactly.once.source.support=enabled and the plugin says it gives exactly-once delivery with this config; with requested it is not checked. Either way, a worker with exactly-once support enabled runs every source task in transactions.").checked(OneOf(&["requested", "required"]));
    pub const TRANSACTION_BOUNDARY: Key = key("transaction.boundary", Str, Text("poll"), Medium, "Exactly Once Support", Source, "Where a task's transactions end when the worker has exactly-once support enabled: poll commits after every batch the plugin returns; interval every transaction.boundary.interval.ms; connector when the plugin asks (only for a plugin that says it can define transaction boundaries).").checked(OneOf(&["poll", "interval", "connector"]));
    pub const TRANSACTION_BOUNDARY_INTERVAL_MS: Key = key("transaction.boundary.interval.ms", Long, Unset, Low, "Exactly Once Support", Source, "With transaction.boundary=interval, how often a task commits its transaction, in milliseconds (the worker's offset.flush.interval.ms when unset); ignored under the other boundaries.").checked(Millis);
    pub const OFFSETS_STORAGE_TOPIC: Key = key("offsets.storage.topic", Str, Unset, Low, "Offsets Topic", Source, "A topic of the connector's own for its source offsets (distributed workers only), created like the worker's offset.storage.topic when missing; offsets are read from it first and from the worker's topic where it has none, and each write is copied to the worker's topic. Unset, the worker's offset.storage.topic is used.");
    pub const AUTO_RESTART_ENABLE: Key = key("auto.restart.enable", Boolean, Worker, Medium, "Automatic Restart", Every, "Whether the worker restarts the connector's FAILED tasks by itself (the worker's wharf.auto.restart.enable when unset): at once, then after n²+n back-off units (2, 6, 12, ...), at most 60 apart. Failures of the config's checks and a plugin's fatal refusal to open are not restarted.");
    pub const AUTO_RESTART_MAX_RESTARTS: Key = key("auto.restart.max.restarts", Int, Signed(-1), Medium, "Automatic Restart", Every, "How many automatic restarts in a row a task gets before it stays FAILED; -1 has no limit. The count starts over once a task has run for one back-off unit, or is restarted through the REST API.").checked(AtLeast(-1));
    pub const AUTO_RESTART_BACKOFF_UNIT_MS: Key = key("auto.restart.backoff.unit.ms", Long, Number(60_000), Low, "Automatic Restart", Every, "The back-off unit of automatic restarts, in milliseconds: the n-th restart in a row waits n²-n units, at most 60.").checked(AtLeast(1));
    pub const WASM_FS_READ: Key = key("wasm.fs.read", List, Text(""), Medium, "Sandbox", Every, "Folders the plugin may read, inside wasm.ceiling.fs.read or wasm.ceiling.fs.write.");
    pub const WASM_FS_WRITE: Key = key("wasm.fs.write", List, Text(""), Medium, "Sandbox", Every, "Folders the plugin may read and write, inside wasm.ceiling.fs.write.");
    pub const WASM_NET_CONNECT: Key = key("wasm.net.connect", List, Text(""), Medium, "Sandbox", Every, "host:port addresses the plugin may open TCP connections to, inside wasm.ceiling.net.connect.");
    pub const WASM_HTTP_ALLOW: Key = key("wasm.http.allow", List, Text(""), Medium, "Sandbox", Every, "host:port authorities the plugin may send HTTP requests to, inside wasm.ceiling.http.allow.");
    pub const WASM_TLS_TRUST: Key = key("wasm.tls.trust", Str, Text(""), Medium, "Sandbox", Every, "A PEM file of certificate authorities, inside wasm.ceiling.fs.read, that the plugin's TLS connections trust in place of the public ones, for servers no declared connection setting (a JDBC URL's sslmode) describes; the server's name is still verified.");
    pub const WASM_MEMORY_MAX_BYTES: Key = key("wasm.memory.max.bytes", Long, Worker, Low, "Sandbox", Every, "Memory cap of each task (at most the worker's).").checked(AtLeast(1));
    pub const WASM_CALL_TIMEOUT_MS: Key = key("wasm.call.timeout.ms", Long, Worker, Low, "Sandbox", Every, "Deadline of each plugin call (at most the worker's).").checked(AtLeast(1));
    pub const WASM_MAX_RECORDS_PER_CALL: Key = key("wasm.max.records.per.call", Int, Worker, Low, "Sandbox", Every, "Most records per call (at most the worker's).").checked(AtLeast(1));
    pub const WASM_MAX_BYTES_PER_CALL: Key = key("wasm.max.bytes.per.call", Long, Worker, Low, "Sandbox", Every, "Most bytes per call (at most the worker's).").checked(AtLeast(1));
    pub const WASM_MAX_HOST_HANDLES: Key = key("wasm.max.host.handles", Int, Worker, Low, "Sandbox", Every, "Most host handles at once (at most the worker's).").checked(AtLeast(1));
    pub const WASM_MAX_SCHEMA_DEPTH: Key = key("wasm.max.schema.depth", Int, Worker, Low, "Sandbox", Every, "Levels a schema of a data batch may nest (at most the worker's).").checked(AtLeast(1));
    pub const WASM_MAX_SCHEMA_NODES: Key = key("wasm.max.schema.nodes", Long, Worker, Low, "Sandbox", Every, "Schema nodes a data batch may hold (at most the worker's).").checked(AtLeast(1));
    pub const WASM_INSTANCE_RECYCLE_RECORDS: Key = key("wasm.instance.recycle.records", Long, Worker, Low, "Sandbox", Every, "Records after which each task's plugin instance is replaced by a fresh one at a flush boundary (the worker's when unset; 0 never).").checked(AtLeast(0));
    pub const WASM_LOG_LINE_MAX_BYTES: Key = key("wasm.log.line.max.bytes", Int, Worker, Low, "Sandbox", Every, "Longest log line (at most the worker's).").checked(AtLeast(1));
    pub const WASM_LOG_LINES_PER_SECOND: Key = key("wasm.log.lines.per.second", Int, Worker, Low, "Sandbox", Every, "Most log lines a second (at most the worker's).").checked(AtLeast(1));
    pub const WASM_MAX_PLUGIN_METRICS: Key = key("wasm.max.plugin.metrics", Int, Worker, Low, "Sandbox", Every, "Metrics each task's plugin may register of its own (at most the worker's).").checked(AtLeast(0));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_defined_once() {
        for keys in [WORKER_KEYS, CONNECTOR_KEYS] {
            for (i, k) in keys.iter().enumerate() {
                assert!(keys[i + 1..].iter().all(|other| other.name != k.name), "{} twice", k.name);
            }
        }
    }

    #[test]
    fn a_connect_only_key_is_not_also_a_wharf_key() {
        for (i, (name, _)) in CONNECT_ONLY_WORKER_KEYS.iter().enumerate() {
            assert!(worker_key(name).is_none(), "{name} is a Wharf key too");
            assert!(CONNECT_ONLY_WORKER_KEYS[i + 1..].iter().all(|(other, _)| other != name), "{name} twice");
        }
    }

    #[test]
    fn numeric_keys_have_numeric_defaults() {
        for k in WORKER_KEYS.iter().chain(CONNECTOR_KEYS) {
            if matches!(k.kind, Kind::Int | Kind::Long | Kind::Short) {
                assert!(!matches!(k.default, DefaultValue::Text(_)), "{} has a text default", k.name);
            }
        }
    }

    /// Regenerates the page when it is behind, and fails so that the change is seen and kept.
    #[test]
    fn secret_looking_keys_are_known_by_name() {
        for secret in [
            "password",
            "connection.password",
            "db.passwd",
            "aws.secret",
            "client_secret",
            "oauth.token",
            "gcp.credentials",
            "datadog.apikey",
            "cloud.api.key",
            "ssl.private.key",
            "producer.override.sasl.jaas.config",
            "ssl.keystore.key",
            "Connection.PASSWORD",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in ["topic", "password.policy.enabled", "tokens.count", "key.converter", "secretary.name"] {
            assert!(!looks_secret(plain), "{plain}");
        }
        for host in [
            "consumer.override.sasl.jaas.config",
            "producer.override.ssl.keystore.password",
            "admin.override.ssl.keystore.key",
        ] {
            assert!(is_host_secret(host), "{host}");
        }
        assert!(!is_host_secret("connection.password"));
    }

    #[test]
    fn the_reference_page_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        let wanted = reference();
        if written != wanted {
            std::fs::write(&path, &wanted).unwrap();
            panic!("{} was behind config/keys.rs and has been regenerated: commit it", path.display());
        }
    }

    /// README.md and the pages of `docs/` name Wharf's own keys as the table has them: every
    /// backticked name in the `wasm.` and `wharf.` namespaces there is a key of the table, or of
    /// one of its families. A key renamed in the table, and not in the docs, fails here.
    #[test]
    fn the_docs_name_wharfs_keys_as_the_table_has_them() {
        // Names in those namespaces that are not keys: log targets.
        const NOT_KEYS: [&str; 1] = ["wharf.worker"];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut pages = vec![root.join("README.md")];
        for folder in ["docs", "docs/plugins"] {
            for entry in std::fs::read_dir(root.join(folder)).unwrap().flatten() {
                if entry.path().extension().is_some_and(|e| e == "md") {
                    pages.push(entry.path());
                }
            }
        }
        let families = ["wasm.ceiling."];
        let mut unknown = Vec::new();
        let mut named = 0;
        for page in &pages {
            let text = std::fs::read_to_string(page).unwrap();
            for quoted in text.split('`').skip(1).step_by(2) {
                let name = quoted.split_once('=').map_or(quoted, |(name, _)| name).trim();
                let ours = (name.starts_with("wasm.") || name.starts_with("wharf."))
                    && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '*');
                // The C SDK's files (`wharf.h`, `wharf.c`) are not keys.
                if !ours || NOT_KEYS.contains(&name) || name.ends_with(".h") || name.ends_with(".c") {
                    continue;
                }
                named += 1;
                let table = || WORKER_KEYS.iter().chain(CONNECTOR_KEYS);
                let known = match name.strip_suffix('*') {
                    // A family written as `wasm.fs.*`: some key of the table is in it.
                    Some(prefix) => table().any(|k| k.name.starts_with(prefix)),
                    None => table().any(|k| k.name == name) || families.iter().any(|f| name.starts_with(f)),
                };
                if !known {
                    unknown.push(format!("{}: `{quoted}`", page.display()));
                }
            }
        }
        assert!(named > 20, "only {named} keys found in the docs: is the scan looking in the right place?");
        assert!(unknown.is_empty(), "the docs name keys the key table does not have:\n{}", unknown.join("\n"));
    }

    /// Code reads a key of the table through its Rust name (`keys::connector::NAME.name`), never
    /// by spelling it again: a misspelled string would silently read nothing.
    #[test]
    fn no_key_of_the_table_is_read_by_its_spelling() {
        fn sources(folder: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(folder).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        sources(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        assert!(files.len() > 50, "the scan found {} files", files.len());
        let names: Vec<&str> = WORKER_KEYS.iter().chain(CONNECTOR_KEYS).map(|k| k.name).collect();
        let mut spelled = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
            for (at, _) in code.match_indices("last_value(") {
                let call = &code[at..code[at..].find(')').map_or(code.len(), |end| at + end)];
                let literal = call.split('"').nth(1);
                if let Some(name) = literal.filter(|name| names.contains(name)) {
                    spelled.push(format!("{}: last_value(…, \"{name}\")", file.display()));
                }
            }
        }
        assert!(spelled.is_empty(), "keys read by their spelling:\n{}", spelled.join("\n"));
    }
}
