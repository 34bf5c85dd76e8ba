//! Worker properties: Kafka Connect's names and defaults where Wharf shares the behaviour, and
//! `wasm.*` keys for the sandbox.

use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

use super::ceiling::{self, GrantCeiling};
use super::keys::{self, worker as W, Key, Scope, WORKER_PREFIXES};
use super::properties::{self, PropertiesError, Property};

#[derive(Debug, Error)]
pub enum WorkerConfigError {
    #[error(transparent)]
    Properties(#[from] PropertiesError),
    /// A key's value (or a key missing, or two keys that do not fit together): `key` names the
    /// key the message is about.
    #[error("{origin}: {message}")]
    Invalid { origin: String, key: String, message: String },
}

/// Which kind of worker reads the properties; some keys belong to one mode only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Standalone,
    Distributed,
}

/// `exactly.once.source.support` (KIP-618), with Kafka Connect's rolling-upgrade steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExactlyOnceSource {
    /// Source tasks deliver at least once.
    Disabled,
    /// The step between: the leader writes the config topic in transactions (as a Wharf leader
    /// always does), and tasks deliver at least once.
    Preparing,
    /// Every source task writes its records and offsets in transactions of its own.
    Enabled,
}

impl ExactlyOnceSource {
    /// Whether source tasks run in transactions (`enabled`; only a distributed worker may be).
    pub fn enabled(self) -> bool {
        self == ExactlyOnceSource::Enabled
    }
}

/// Where a distributed worker keeps its state, and the cluster it joins.
#[derive(Debug, Clone, PartialEq)]
pub struct DistributedConfig {
    pub group_id: String,
    pub config_topic: String,
    pub offset_topic: String,
    pub status_topic: String,
    /// Replication factors; -1 takes the broker's default.
    pub config_replication: i32,
    pub offset_replication: i32,
    pub status_replication: i32,
    pub offset_partitions: i32,
    pub status_partitions: i32,
    /// `session.timeout.ms`: a worker not heard from for this long leaves the group.
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms`: how often a worker tells the group coordinator it is alive.
    pub heartbeat_interval: Duration,
    /// `rebalance.timeout.ms`: how long every worker has to rejoin once a rebalance starts.
    pub rebalance_timeout: Duration,
    /// `scheduled.rebalance.max.delay.ms`: how long a departed worker's work waits for it to
    /// come back before it moves to the others.
    pub scheduled_rebalance_max_delay: Duration,
    /// `worker.sync.timeout.ms`: how long a worker waits to catch up with the config topic
    /// before it gives up its assignment and rejoins.
    pub worker_sync_timeout: Duration,
    /// `inter.worker.key.ttl.ms`: how long a session key is used before the leader makes another.
    pub key_ttl: Duration,
    /// `inter.worker.key.generation.algorithm`, `inter.worker.signature.algorithm` and
    /// `inter.worker.verification.algorithms`, by their Java names.
    pub key_algorithm: String,
    pub signature_algorithm: String,
    pub verification_algorithms: Vec<String>,
    /// `wharf.rest.forward.allowed.urls`: `scheme://host:port` patterns (`*` for any host or
    /// port) of the member URLs this worker forwards requests to; empty, as by default, allows
    /// this worker's own scheme and port on any host.
    pub forward_allowed_urls: Vec<String>,
    /// `wharf.inter.worker.signature.max.skew.ms`: how far a signed request's timestamp may be
    /// from this worker's clock.
    pub signature_max_skew: Duration,
    /// `wharf.inter.worker.legacy.signatures`: whether the leader also accepts a signature of
    /// the body alone (a worker of an earlier release, during a rolling upgrade).
    pub legacy_signatures: bool,
}

pub use super::keys::SIGNATURE_ALGORITHMS;

/// Limits applied to every plugin instance unless a connector asks for less.
#[derive(Debug, Clone, PartialEq)]
pub struct WasmLimits {
    /// `wasm.memory.max.bytes`: linear memory a task's instance may grow to.
    pub memory_max_bytes: usize,
    /// `wasm.call.timeout.ms`: how long one call into a plugin may run.
    pub call_timeout: Duration,
    /// `wasm.max.records.per.call`: the most records one poll may return (and one put receives).
    pub max_records_per_call: u32,
    /// `wasm.max.bytes.per.call`: the most bytes (topics, keys, values, headers, source
    /// partitions and offsets) one poll may return, and the most one describe, validate or
    /// task-configs answer may hold.
    pub max_bytes_per_call: usize,
    /// `wasm.max.host.handles`: host resources (sockets, streams, pollables, files) an instance
    /// may hold at once.
    pub max_host_handles: usize,
    /// What connectors may grant (`wasm.ceiling.*`), and the worker's own files no grant may
    /// cover.
    pub ceiling: GrantCeiling,
    /// `wasm.log.line.max.bytes`: the longest line a plugin may log; longer ones are cut.
    pub log_line_max_bytes: usize,
    /// `wasm.log.lines.per.second`: lines one instance may log in a second; more are counted and
    /// dropped.
    pub log_lines_per_second: u32,
    /// `wasm.max.plugin.metrics`: metrics one task's plugin may register of its own.
    pub max_plugin_metrics: usize,
    /// `wasm.fs.inline`: file system calls run on the task's thread rather than the I/O pool.
    pub fs_inline: bool,
    /// `wasm.max.schema.depth`: levels one schema of a plugin's data batch may nest.
    pub max_schema_depth: usize,
    /// `wasm.max.schema.nodes`: schema nodes one data batch may hold, each use of a shared
    /// schema counted.
    pub max_schema_nodes: u64,
    /// `wasm.instance.recycle.records`: records after which a task's plugin instance is replaced
    /// by a fresh one at a flush boundary; 0 never.
    pub recycle_records: u64,
    /// What connectors' `producer.override.*`, `consumer.override.*` and `admin.override.*`
    /// settings may reach (`connector.client.config.override.*`).
    pub client_overrides: super::clients::OverrideRules,
}

impl Default for WasmLimits {
    fn default() -> Self {
        WasmLimits {
            memory_max_bytes: 256 * 1024 * 1024,
            call_timeout: Duration::from_millis(5000),
            max_records_per_call: 2000,
            max_bytes_per_call: 64 * 1024 * 1024,
            max_host_handles: 1024,
            ceiling: GrantCeiling::default(),
            log_line_max_bytes: 8192,
            log_lines_per_second: 500,
            max_plugin_metrics: 100,
            fs_inline: true,
            max_schema_depth: 64,
            max_schema_nodes: 100_000,
            recycle_records: 0,
            client_overrides: super::clients::OverrideRules::default(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Kafka Connect keys the file gives that Wharf accepts and does not act on, each a line to
    /// log at start saying what it does in Connect.
    pub unacted: Vec<String>,
    /// Keys the file gives that neither Wharf nor Kafka Connect knows, each a line to log.
    pub unused: Vec<String>,
    pub bootstrap_servers: String,
    /// Folders searched for `.wasm` plugins.
    pub plugin_path: Vec<PathBuf>,
    /// `plugin.scan.interval.ms`: how often `plugin.path` is checked for added, replaced or
    /// removed plugins.
    pub plugin_scan_interval: Duration,
    /// `wasm.compile.threads`: plugin files compiled at once, off the worker's other work.
    pub compile_threads: usize,
    /// `host:port` the REST API binds to, from `listeners` (`http://` only).
    pub rest_bind: String,
    /// `offset.storage.file.filename` (standalone).
    pub offset_storage_file: Option<PathBuf>,
    pub offset_flush_interval: Duration,
    pub offset_flush_timeout: Duration,
    pub task_shutdown_graceful_timeout: Duration,
    /// How long to wait for the Kafka cluster to answer at start.
    pub bootstrap_timeout: Duration,
    /// `security.protocol`, `ssl.*` and `sasl.*`, translated to librdkafka's names
    /// (`config::security`): given to every Kafka client of the worker, the group membership
    /// client included, before the `producer.`, `consumer.` and `admin.` overrides.
    pub kafka_security: Vec<(String, String)>,
    /// `producer.*` keys, without the prefix, handed to librdkafka.
    pub producer_overrides: Vec<(String, String)>,
    /// `consumer.*` keys, without the prefix, handed to librdkafka.
    pub consumer_overrides: Vec<(String, String)>,
    /// Where compiled plugins are cached (`wasm.cache.dir`).
    pub compile_cache_dir: PathBuf,
    pub wasm: WasmLimits,
    /// `admin.*` keys, without the prefix, for the client that creates topics.
    pub admin_overrides: Vec<(String, String)>,
    /// `host:port` other workers and statuses know this worker by.
    pub advertised: String,
    /// Set for a distributed worker.
    pub distributed: Option<DistributedConfig>,
    /// `key.converter`, `value.converter`, `header.converter` and their settings.
    pub converters: super::Converters,
    /// `config.providers`: where `${provider:path:key}` references in connector configs are
    /// resolved.
    pub config_providers: super::ConfigProviders,
    /// Set when `listeners` is `https://`.
    pub rest_tls: Option<RestTls>,
    /// `wharf.rest.basic.auth.credentials.file`: when set, REST requests must carry HTTP Basic
    /// credentials of its users.
    pub rest_credentials_file: Option<PathBuf>,
    /// `access.control.allow.origin`: web origins whose pages may call the REST API (`*`: any);
    /// empty, as by default, allows none.
    pub rest_allowed_origins: Vec<String>,
    /// `access.control.allow.methods`: the methods a CORS preflight answer allows.
    pub rest_allowed_methods: String,
    /// `wharf.tasks.max.per.connector`: the highest `tasks.max` a connector may ask for.
    pub tasks_max_per_connector: u32,
    /// `wharf.tasks.max.per.worker`: tasks this worker runs at once; tasks beyond it fail.
    pub tasks_max_per_worker: u32,
    /// `wharf.auto.restart.enable`: whether connectors that do not set `auto.restart.enable`
    /// have their FAILED tasks restarted automatically.
    pub auto_restart_enable: bool,
    /// `exactly.once.source.support`: whether source tasks run in transactions.
    pub exactly_once_source: ExactlyOnceSource,
    /// `metrics.sample.window.ms` × `metrics.num.samples`: the span the rates, averages and maxima
    /// of `GET /metrics` cover.
    pub metrics_window: Duration,
    /// `metrics.listeners`: where a listener of its own serves `GET /metrics` (host:port), and
    /// its TLS settings when it is `https://`.
    pub metrics_listener: Option<(String, Option<RestTls>)>,
    /// `wharf.log.format=json`: one JSON object a log line, in place of text.
    pub log_json: bool,
    /// `topic.creation.enable`: whether source connectors' `topic.creation.*` settings create
    /// their topics.
    pub topic_creation: bool,
    /// `topic.tracking.enable`: whether tasks record the topics they use.
    pub topic_tracking: bool,
    /// `topic.tracking.allow.reset`: whether `PUT /connectors/{name}/topics/reset` may forget them.
    pub topic_tracking_allow_reset: bool,
    /// Whether the `/admin` endpoints are served: `admin.listeners` empty turns them off, as in
    /// Kafka Connect.
    pub admin_endpoints: bool,
    /// `wharf.reserved.topics`: topics, besides Kafka's and the worker's own, that no plugin's
    /// records and no dead-letter queue may reach (another cluster's internal topics).
    pub reserved_topics: Option<wharf_connect::transform::FullMatch>,
    /// `wharf.rest.max.concurrent.expensive`: REST calls that run a plugin or ask Kafka (validate,
    /// connector writes, offsets) answered at once; more wait briefly, then get a 429.
    pub rest_max_concurrent_expensive: usize,
    /// `wharf.rest.max.concurrent.password.checks`: REST password checks (a PBKDF2 each) run at
    /// once; more are answered 429.
    pub rest_max_concurrent_password_checks: usize,
    /// `wasm.max.sockets.per.worker`: sockets all of this worker's plugin instances may hold at
    /// once, TCP and HTTP together.
    pub max_sockets_per_worker: usize,
}

impl WorkerConfig {
    pub fn from_file(path: &Path, mode: Mode) -> Result<Self, WorkerConfigError> {
        let props = properties::read_file(path)?;
        let mut config = Self::from_properties(&props, &path.display().to_string(), mode)?;
        for line in &config.unacted {
            tracing::info!("{line}");
        }
        for line in &config.unused {
            tracing::warn!("{line}");
        }
        config.wasm.ceiling.protect(path, "config file");
        Ok(config)
    }

    pub fn from_properties(props: &[Property], origin: &str, mode: Mode) -> Result<Self, WorkerConfigError> {
        // The worker file's own `${provider:path:key}` references are resolved with the
        // providers it names, as Kafka Connect resolves them, before anything is read.
        let pairs: Vec<(String, String)> = props.iter().map(|p| (p.key.clone(), p.value.clone())).collect();
        let resolved;
        let props = if super::ConfigProviders::refers(&pairs) {
            let early = Reader { props, origin };
            let providers =
                super::ConfigProviders::of_worker(&pairs).map_err(|(key, message)| early.invalid(&key, message))?;
            let values = providers.resolve(&pairs).map_err(|problems| {
                let (key, message) = problems.into_iter().next().unwrap_or_default();
                early.invalid(&key, message)
            })?;
            resolved = props
                .iter()
                .zip(values)
                .map(|(p, (_, value))| Property { value, ..p.clone() })
                .collect::<Vec<Property>>();
            &resolved[..]
        } else {
            props
        };
        let reader = Reader { props, origin };
        let (unacted, unused) = reader.unread_keys(mode)?;
        let pairs: Vec<(String, String)> = props.iter().map(|p| (p.key.clone(), p.value.clone())).collect();
        let converters = super::Converters::of_worker(&pairs).map_err(|e| {
            let key = e.key.clone().unwrap_or_else(|| W::VALUE_CONVERTER.name.to_string());
            reader.invalid(&key, e.message)
        })?;

        let config_providers =
            super::ConfigProviders::of_worker(&pairs).map_err(|(key, message)| reader.invalid(&key, message))?;

        let bootstrap_servers = reader.require(&W::BOOTSTRAP_SERVERS, "e.g. bootstrap.servers=localhost:9092")?;
        let plugin_path: Vec<PathBuf> = reader
            .get(&W::PLUGIN_PATH)
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(PathBuf::from).collect())
            .unwrap_or_default();
        if plugin_path.is_empty() {
            return Err(reader.invalid(
                W::PLUGIN_PATH.name,
                "plugin.path is not set: name the folders that hold .wasm plugins, separated \
                 by commas (e.g. plugin.path=/opt/wharf/plugins)"
                    .into(),
            ));
        }
        let Listener { host: bind_host, port: bind_port, https } =
            parse_listener(reader.text(&W::LISTENERS)).map_err(|message| reader.invalid(W::LISTENERS.name, message))?;
        let rest_bind = format!("{bind_host}:{bind_port}");
        let rest_tls = reader.rest_tls(https, &pairs)?;
        let metrics_listener = match reader.get(&W::METRICS_LISTENERS).filter(|v| !v.is_empty()) {
            None => None,
            Some(value) => {
                let Listener { host, port, https } = parse_listener(value).map_err(|message| {
                    reader.invalid(W::METRICS_LISTENERS.name, message.replacen("listeners=", "metrics.listeners=", 1))
                })?;
                let bind = format!("{host}:{port}");
                if bind == rest_bind {
                    return Err(reader.invalid(
                        W::METRICS_LISTENERS.name,
                        format!("metrics.listeners={value} is the REST API's own listener: /metrics is served there already; give another port or leave metrics.listeners out"),
                    ));
                }
                Some((bind, reader.rest_tls(https, &pairs)?))
            }
        };
        let offset_storage_file = reader.get(&W::OFFSET_STORAGE_FILE_FILENAME).map(PathBuf::from);
        if mode == Mode::Standalone && offset_storage_file.is_none() {
            return Err(reader.invalid(
                W::OFFSET_STORAGE_FILE_FILENAME.name,
                "offset.storage.file.filename is not set: a standalone worker keeps source \
                 offsets in that file (e.g. offset.storage.file.filename=/tmp/connect.offsets)"
                    .into(),
            ));
        }

        let mut wasm = reader.sandbox()?;
        let reserved_topics = match reader.text(&W::WHARF_RESERVED_TOPICS) {
            "" => None,
            pattern => Some(wharf_connect::transform::FullMatch::new(pattern).map_err(|e| {
                reader.invalid(
                    W::WHARF_RESERVED_TOPICS.name,
                    format!("wharf.reserved.topics={pattern} is not a pattern Wharf can read: {e}"),
                )
            })?),
        };
        let compile_cache_dir = reader.get(&W::WASM_CACHE_DIR).map(PathBuf::from).unwrap_or_else(default_cache_dir);
        for folder in &plugin_path {
            wasm.ceiling.protect(folder, W::PLUGIN_PATH.name);
        }
        wasm.ceiling.protect(&compile_cache_dir, W::WASM_CACHE_DIR.name);
        if let Some(file) = &offset_storage_file {
            wasm.ceiling.protect(file, W::OFFSET_STORAGE_FILE_FILENAME.name);
        }
        for (path, key) in named_paths(props) {
            wasm.ceiling.protect(&path, &key);
        }

        let distributed = reader.distributed(mode)?;
        let advertised = {
            let host = reader.get(&W::REST_ADVERTISED_HOST_NAME).unwrap_or(&bind_host);
            let port = match reader.get(&W::REST_ADVERTISED_PORT) {
                None => bind_port.to_string(),
                Some(_) => reader.number(&W::REST_ADVERTISED_PORT)?.to_string(),
            };
            format!("{host}:{port}")
        };

        let translated = |settings: Vec<(String, String)>, prefix: &str| {
            super::clients::for_librdkafka(&settings, prefix).map_err(|p| reader.invalid(&p.key, p.message))
        };
        let top_level: Vec<(String, String)> =
            pairs.iter().filter(|(k, _)| super::security::is_security_key(k)).cloned().collect();
        let kafka_security = translated(top_level, "")?;
        // `admin.listeners` is Kafka Connect's REST setting, not an admin client's.
        let admin_settings = reader
            .prefixed("admin.")
            .into_iter()
            .filter(|(k, _)| keys::connect_only_worker_key(&format!("admin.{k}")).is_none());
        let admin_overrides = translated(admin_settings.collect(), "admin.")?;
        let producer_overrides = translated(reader.prefixed("producer."), "producer.")?;
        let consumer_overrides = translated(reader.prefixed("consumer."), "consumer.")?;

        let rest_credentials_file = reader.rest_credentials_file()?;

        Ok(WorkerConfig {
            topic_creation: reader.boolean(&W::TOPIC_CREATION_ENABLE)?,
            topic_tracking: reader.boolean(&W::TOPIC_TRACKING_ENABLE)?,
            topic_tracking_allow_reset: reader.boolean(&W::TOPIC_TRACKING_ALLOW_RESET)?,
            admin_endpoints: reader.given("admin.listeners").is_none(),
            reserved_topics,
            unacted,
            unused,
            rest_tls,
            metrics_listener,
            rest_credentials_file,
            admin_overrides,
            kafka_security,
            config_providers,
            converters,
            advertised,
            distributed,
            bootstrap_servers: bootstrap_servers.to_string(),
            plugin_path,
            plugin_scan_interval: reader.millis(&W::PLUGIN_SCAN_INTERVAL_MS)?,
            compile_threads: reader.number(&W::WASM_COMPILE_THREADS)? as usize,
            rest_bind,
            offset_storage_file,
            offset_flush_interval: reader.millis(&W::OFFSET_FLUSH_INTERVAL_MS)?,
            offset_flush_timeout: reader.millis(&W::OFFSET_FLUSH_TIMEOUT_MS)?,
            task_shutdown_graceful_timeout: reader.millis(&W::TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS)?,
            bootstrap_timeout: reader.millis(&W::WHARF_BOOTSTRAP_TIMEOUT_MS)?,
            producer_overrides,
            consumer_overrides,
            compile_cache_dir,
            wasm,
            rest_allowed_origins: reader
                .get(&W::ACCESS_CONTROL_ALLOW_ORIGIN)
                .unwrap_or("")
                .split(',')
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
            // Jetty's default, which Kafka Connect's empty default stands for.
            rest_allowed_methods: reader
                .get(&W::ACCESS_CONTROL_ALLOW_METHODS)
                .filter(|m| !m.trim().is_empty())
                .unwrap_or("GET,POST,HEAD")
                .to_string(),
            tasks_max_per_connector: reader.number(&W::WHARF_TASKS_MAX_PER_CONNECTOR)?.min(u32::MAX as u64) as u32,
            tasks_max_per_worker: reader.number(&W::WHARF_TASKS_MAX_PER_WORKER)?.min(u32::MAX as u64) as u32,
            auto_restart_enable: reader.boolean(&W::WHARF_AUTO_RESTART_ENABLE)?,
            exactly_once_source: reader.exactly_once_source(mode)?,
            log_json: reader.word(&W::WHARF_LOG_FORMAT)? == "json",
            metrics_window: {
                // The recording level is checked; every series is recorded at INFO.
                reader.word(&W::METRICS_RECORDING_LEVEL)?;
                let sample = reader.number(&W::METRICS_SAMPLE_WINDOW_MS)?;
                Duration::from_millis(sample.saturating_mul(reader.number(&W::METRICS_NUM_SAMPLES)?))
            },
            rest_max_concurrent_expensive: reader.number(&W::WHARF_REST_MAX_CONCURRENT_EXPENSIVE)? as usize,
            rest_max_concurrent_password_checks: reader.number(&W::WHARF_REST_MAX_CONCURRENT_PASSWORD_CHECKS)? as usize,
            max_sockets_per_worker: reader.number(&W::WASM_MAX_SOCKETS_PER_WORKER)? as usize,
        })
    }

    /// The worker's id in statuses: its REST address, as Kafka Connect reports it.
    /// `https` for an https listener, `http` otherwise.
    pub fn rest_scheme(&self) -> &'static str {
        if self.rest_tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    pub fn worker_id(&self) -> String {
        self.advertised.clone()
    }
}

/// `wasm.cache.dir` when not set: `$WHARF_CACHE/compiled` or `~/.cache/wharf/compiled`.
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("WHARF_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/wharf")))
        .unwrap_or_else(|| std::env::temp_dir().join("wharf-cache"));
    base.join("compiled")
}

/// `http://host:port` → `host:port`. Only one plain-HTTP listener is supported.
/// The listener's `host:port`, and whether it is `https://`.
/// The REST listener `listeners` names.
struct Listener {
    host: String,
    port: u16,
    https: bool,
}

fn parse_listener(value: &str) -> Result<Listener, String> {
    let listeners: Vec<&str> = value.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let [listener] = listeners.as_slice() else {
        return Err(format!("listeners={value}: give exactly one listener, e.g. listeners=http://localhost:8083"));
    };
    let (address, https) = match (listener.strip_prefix("http://"), listener.strip_prefix("https://")) {
        (Some(address), _) => (address, false),
        (_, Some(address)) => (address, true),
        _ => {
            return Err(format!("listeners={value}: give an http:// or https:// listener, e.g. http://localhost:8083"))
        }
    };
    let address = address.trim_end_matches('/');
    match address.rsplit_once(':').map(|(host, port)| (host, port.parse::<u16>())) {
        Some((host, Ok(port))) if !host.is_empty() => Ok(Listener { host: host.to_string(), port, https }),
        _ => Err(format!("listeners={value}: expected http://HOST:PORT, e.g. http://0.0.0.0:8083")),
    }
}

/// An `https://` listener's TLS settings (`listeners.https.ssl.*`, or the worker's `ssl.*` when
/// none of those is given, as in Kafka Connect), read when the listener opens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RestTls {
    pub keystore_location: Option<PathBuf>,
    pub keystore_type: Option<String>,
    pub keystore_password: Option<String>,
    pub key_password: Option<String>,
    pub truststore_location: Option<PathBuf>,
    pub truststore_type: Option<String>,
    pub truststore_password: Option<String>,
    /// `ssl.client.auth`: `none` (default), `requested` or `required`.
    pub client_auth: String,
    /// How the keys were written (`listeners.https.` or none), for messages.
    pub prefix: String,
}

/// Every file or folder the worker config names by a key of a path's shape (key and trust
/// stores of every client family and of the REST listener, the credentials file, config
/// providers' `allowed.paths`, …), with the key: no grant may cover them. The ceiling's own
/// folders are what grants may cover, and are left out.
fn named_paths(props: &[Property]) -> Vec<(PathBuf, String)> {
    const PATH_SUFFIXES: [&str; 8] =
        [".location", ".file", ".filename", ".files", ".path", ".paths", ".dir", ".directory"];
    props
        .iter()
        .filter(|p| !p.key.starts_with("wasm.ceiling.") && PATH_SUFFIXES.iter().any(|s| p.key.ends_with(s)))
        .flat_map(|p| {
            p.value
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty() && !v.contains("://"))
                .map(|v| (PathBuf::from(v), p.key.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

struct Reader<'a> {
    props: &'a [Property],
    origin: &'a str,
}

impl Reader<'_> {
    /// The value given for a key (the last one given counts), trimmed.
    fn get(&self, key: &Key) -> Option<&str> {
        self.given(key.name)
    }

    /// The value given for a key outside the table (one of Kafka Connect's that Wharf only
    /// notes), trimmed.
    fn given(&self, name: &str) -> Option<&str> {
        self.props.iter().rev().find(|p| p.key == name).map(|p| p.value.trim())
    }

    /// The value given, or the key's default text.
    fn text(&self, key: &Key) -> &str {
        self.get(key).unwrap_or(match key.default {
            keys::DefaultValue::Text(text) => text,
            _ => "",
        })
    }

    /// The worker config is invalid because of `key` (which may be one of a family, such as a
    /// `producer.*` setting).
    fn invalid(&self, key: &str, message: String) -> WorkerConfigError {
        WorkerConfigError::Invalid { origin: self.origin.to_string(), key: key.to_string(), message }
    }

    fn require(&self, key: &Key, example: &str) -> Result<&str, WorkerConfigError> {
        match self.get(key) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(self.invalid(key.name, format!("{} is not set ({example})", key.name))),
        }
    }

    /// A number key's value, or its default from the table, within the table's check.
    fn signed(&self, key: &Key) -> Result<i64, WorkerConfigError> {
        match self.get(key) {
            Some(raw) => key.number(raw).map_err(|m| self.invalid(key.name, m)),
            None => match key.default {
                keys::DefaultValue::Number(n) => Ok(n as i64),
                keys::DefaultValue::Signed(n) => Ok(n),
                _ => Err(self
                    .invalid(key.name, format!("{} has no numeric default in the host's key table (a bug)", key.name))),
            },
        }
    }

    /// A number key whose check keeps it at 0 or more.
    fn number(&self, key: &Key) -> Result<u64, WorkerConfigError> {
        let n = self.signed(key)?;
        u64::try_from(n)
            .map_err(|_| self.invalid(key.name, format!("{}={n} is below 0 (a bug in the host's key table)", key.name)))
    }

    /// A replication factor: -1 (the broker's default) or at least 1.
    fn replication(&self, key: &Key) -> Result<i32, WorkerConfigError> {
        Ok(self.signed(key)?.clamp(-1, i32::MAX as i64) as i32)
    }

    /// A duration in milliseconds, at most `keys::MAX_MILLIS` (the table's `Check::Millis`).
    fn millis(&self, key: &Key) -> Result<Duration, WorkerConfigError> {
        Ok(Duration::from_millis(self.number(key)?))
    }

    /// One of the words the key's definition allows.
    fn word(&self, key: &Key) -> Result<&'static str, WorkerConfigError> {
        key.word(self.text(key)).map_err(|m| self.invalid(key.name, m))
    }

    /// One of `SIGNATURE_ALGORITHMS`, by its Java name.
    fn algorithm(&self, key: &Key) -> Result<String, WorkerConfigError> {
        key.word(self.text(key)).map(String::from).map_err(|m| self.invalid(key.name, m))
    }

    /// `exactly.once.source.support`; a standalone worker takes `disabled` alone, as Kafka
    /// Connect's standalone mode has no exactly-once sources.
    fn exactly_once_source(&self, mode: Mode) -> Result<ExactlyOnceSource, WorkerConfigError> {
        let key = &W::EXACTLY_ONCE_SOURCE_SUPPORT;
        let support = match self.word(key)? {
            "preparing" => ExactlyOnceSource::Preparing,
            "enabled" => ExactlyOnceSource::Enabled,
            _ => ExactlyOnceSource::Disabled,
        };
        if mode == Mode::Standalone && support != ExactlyOnceSource::Disabled {
            return Err(self.invalid(
                key.name,
                format!(
                    "exactly.once.source.support={}: standalone mode does not support exactly-once source \
                     connectors, as in Kafka Connect (its offsets live in a file, outside Kafka's transactions); run \
                     `wharf distributed` for exactly-once delivery, or set it to disabled",
                    self.text(key)
                ),
            ));
        }
        Ok(support)
    }

    /// A boolean key (`true` or `false`, any case), or its default.
    fn boolean(&self, key: &Key) -> Result<bool, WorkerConfigError> {
        key.flag(self.text(key)).map_err(|m| self.invalid(key.name, m))
    }

    /// The keys a worker file gives that Wharf does not act on (Kafka Connect's, noted), and those
    /// nobody knows (likely misspelled), each as a line for the log; a key of the other mode is
    /// refused.
    fn unread_keys(&self, mode: Mode) -> Result<(Vec<String>, Vec<String>), WorkerConfigError> {
        let mut unacted = Vec::new();
        let mut unused = Vec::new();
        for p in self.props {
            let defined = keys::worker_key(&p.key);
            let mode_key = match (mode, defined.map(|k| k.scope)) {
                (Mode::Distributed, Some(Scope::Standalone)) => Some("standalone"),
                (Mode::Standalone, Some(Scope::Distributed)) => Some("distributed"),
                _ => None,
            };
            if let Some(other) = mode_key {
                return Err(self.invalid(
                    &p.key,
                    format!(
                        "\"{}\" (line {}) belongs to {other} mode; remove it, or run `wharf {other}`",
                        p.key, p.line
                    ),
                ));
            }
            if defined.is_some() {
                continue;
            }
            // Exact Connect names first: `admin.listeners` is not an admin client setting.
            if let Some(what) = keys::connect_only_worker_key(&p.key) {
                if let Some(refusal) = keys::connect_only_refusal(&p.key, &p.value) {
                    return Err(self.invalid(&p.key, format!("{refusal} (line {})", p.line)));
                }
                // An empty admin.listeners does something here: it turns /admin off.
                if p.key == "admin.listeners" {
                    continue;
                }
                unacted.push(format!(
                    "worker property \"{}\" (line {}) is accepted and does nothing here: in Kafka Connect it {what}",
                    p.key, p.line
                ));
                continue;
            }
            if !WORKER_PREFIXES.iter().any(|(prefix, _)| p.key.starts_with(prefix)) {
                unused.push(format!(
                    "worker property \"{}\" (line {}) is unused: neither Wharf nor Kafka Connect knows it; check its \
                     spelling (docs/configuration.md lists every key)",
                    p.key, p.line
                ));
            }
        }
        Ok((unacted, unused))
    }

    /// An https listener's TLS settings (group "REST"): `listeners.https.ssl.*`, or the worker's
    /// `ssl.*` when none of those is given, as in Kafka Connect.
    fn rest_tls(&self, https: bool, pairs: &[(String, String)]) -> Result<Option<RestTls>, WorkerConfigError> {
        Ok(match https {
            false => None,
            true => {
                let prefixed = self.prefixed("listeners.https.");
                let (settings, prefix) = match prefixed.is_empty() {
                    false => (prefixed, "listeners.https."),
                    true => (pairs.iter().filter(|(k, _)| k.starts_with("ssl.")).cloned().collect(), ""),
                };
                let get = |key: &str| {
                    settings
                        .iter()
                        .rev()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.trim().to_string())
                        .filter(|v| !v.is_empty())
                };
                let tls = RestTls {
                    keystore_location: get("ssl.keystore.location").map(PathBuf::from),
                    keystore_type: get("ssl.keystore.type"),
                    keystore_password: get("ssl.keystore.password"),
                    key_password: get("ssl.key.password"),
                    truststore_location: get("ssl.truststore.location").map(PathBuf::from),
                    truststore_type: get("ssl.truststore.type"),
                    truststore_password: get("ssl.truststore.password"),
                    client_auth: get("ssl.client.auth").unwrap_or_else(|| "none".into()).to_ascii_lowercase(),
                    prefix: prefix.to_string(),
                };
                if tls.keystore_location.is_none() {
                    return Err(self.invalid(
                        &format!("{prefix}ssl.keystore.location"),
                        format!(
                            "listeners={} is https: set listeners.https.ssl.keystore.location to the REST API's key and \
                             certificate (PEM, or PKCS12 with listeners.https.ssl.keystore.password)",
                            self.text(&W::LISTENERS)
                        ),
                    ));
                }
                if !["none", "requested", "required"].contains(&tls.client_auth.as_str()) {
                    return Err(self.invalid(
                        &format!("{prefix}ssl.client.auth"),
                        format!("{prefix}ssl.client.auth={}: use none, requested or required", tls.client_auth),
                    ));
                }
                if tls.client_auth != "none" && tls.truststore_location.is_none() {
                    return Err(self.invalid(
                        &format!("{prefix}ssl.truststore.location"),
                        format!(
                            "{prefix}ssl.client.auth={} needs {prefix}ssl.truststore.location: the authorities whose client \
                             certificates the REST API accepts",
                            tls.client_auth
                        ),
                    ));
                }
                Some(tls)
            }
        })
    }

    /// The sandbox's limits and grant ceilings, and what connectors may override of the Kafka
    /// clients (groups "Sandbox" and "Clients").
    fn sandbox(&self) -> Result<WasmLimits, WorkerConfigError> {
        let mut wasm = WasmLimits {
            memory_max_bytes: self.number(&W::WASM_MEMORY_MAX_BYTES)? as usize,
            call_timeout: self.millis(&W::WASM_CALL_TIMEOUT_MS)?,
            // At most a million (the table's check): beyond, a batch's bookkeeping alone is gigabytes.
            max_records_per_call: self.number(&W::WASM_MAX_RECORDS_PER_CALL)? as u32,
            max_bytes_per_call: self.number(&W::WASM_MAX_BYTES_PER_CALL)? as usize,
            max_host_handles: self.number(&W::WASM_MAX_HOST_HANDLES)? as usize,
            ceiling: GrantCeiling {
                read: ceiling::parse_folders(ceiling::FS_READ, self.get(&W::WASM_CEILING_FS_READ))
                    .map_err(|m| self.invalid(W::WASM_CEILING_FS_READ.name, m))?,
                write: ceiling::parse_folders(ceiling::FS_WRITE, self.get(&W::WASM_CEILING_FS_WRITE))
                    .map_err(|m| self.invalid(W::WASM_CEILING_FS_WRITE.name, m))?,
                connect: ceiling::parse_addresses(ceiling::NET_CONNECT, self.get(&W::WASM_CEILING_NET_CONNECT))
                    .map_err(|m| self.invalid(W::WASM_CEILING_NET_CONNECT.name, m))?,
                http: ceiling::parse_addresses(ceiling::HTTP_ALLOW, self.get(&W::WASM_CEILING_HTTP_ALLOW))
                    .map_err(|m| self.invalid(W::WASM_CEILING_HTTP_ALLOW.name, m))?,
                protected: Vec::new(),
            },
            log_line_max_bytes: self.number(&W::WASM_LOG_LINE_MAX_BYTES)? as usize,
            log_lines_per_second: self.number(&W::WASM_LOG_LINES_PER_SECOND)?.min(u32::MAX as u64) as u32,
            max_plugin_metrics: self.number(&W::WASM_MAX_PLUGIN_METRICS)? as usize,
            fs_inline: self.boolean(&W::WASM_FS_INLINE)?,
            max_schema_depth: self.number(&W::WASM_MAX_SCHEMA_DEPTH)? as usize,
            max_schema_nodes: self.number(&W::WASM_MAX_SCHEMA_NODES)?,
            recycle_records: self.number(&W::WASM_INSTANCE_RECYCLE_RECORDS)?,
            client_overrides: super::clients::OverrideRules::default(),
        };
        wasm.client_overrides = super::clients::OverrideRules {
            policy: super::clients::OverridePolicy::parse(self.text(&W::CONNECTOR_CLIENT_CONFIG_OVERRIDE_POLICY))
                .map_err(|m| self.invalid(W::CONNECTOR_CLIENT_CONFIG_OVERRIDE_POLICY.name, m))?,
            allowlist: self
                .text(&W::CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWLIST)
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            allowed_paths: ceiling::parse_folders(
                W::CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWED_PATHS.name,
                self.get(&W::CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWED_PATHS),
            )
            .map_err(|m| self.invalid(W::CONNECTOR_CLIENT_CONFIG_OVERRIDE_ALLOWED_PATHS.name, m))?,
            granted_folders: wasm.ceiling.read.iter().chain(&wasm.ceiling.write).cloned().collect(),
        };
        Ok(wasm)
    }

    /// A distributed worker's group and internal topics, its rebalance timing and the signatures
    /// of its requests to other workers (group "Distributed"); none for a standalone worker.
    fn distributed(&self, mode: Mode) -> Result<Option<DistributedConfig>, WorkerConfigError> {
        let distributed = match mode {
            Mode::Standalone => None,
            Mode::Distributed => Some(DistributedConfig {
                group_id: self
                    .require(&W::GROUP_ID, "e.g. group.id=connect-cluster; workers with one group.id form a cluster")?
                    .to_string(),
                config_topic: self
                    .require(&W::CONFIG_STORAGE_TOPIC, "e.g. config.storage.topic=connect-configs")?
                    .to_string(),
                offset_topic: self
                    .require(&W::OFFSET_STORAGE_TOPIC, "e.g. offset.storage.topic=connect-offsets")?
                    .to_string(),
                status_topic: self
                    .require(&W::STATUS_STORAGE_TOPIC, "e.g. status.storage.topic=connect-status")?
                    .to_string(),
                config_replication: self.replication(&W::CONFIG_STORAGE_REPLICATION_FACTOR)?,
                offset_replication: self.replication(&W::OFFSET_STORAGE_REPLICATION_FACTOR)?,
                status_replication: self.replication(&W::STATUS_STORAGE_REPLICATION_FACTOR)?,
                offset_partitions: self.number(&W::OFFSET_STORAGE_PARTITIONS)?.min(i32::MAX as u64) as i32,
                status_partitions: self.number(&W::STATUS_STORAGE_PARTITIONS)?.min(i32::MAX as u64) as i32,
                session_timeout: self.millis(&W::SESSION_TIMEOUT_MS)?,
                heartbeat_interval: self.millis(&W::HEARTBEAT_INTERVAL_MS)?,
                rebalance_timeout: self.millis(&W::REBALANCE_TIMEOUT_MS)?,
                scheduled_rebalance_max_delay: self.millis(&W::SCHEDULED_REBALANCE_MAX_DELAY_MS)?,
                worker_sync_timeout: self.millis(&W::WORKER_SYNC_TIMEOUT_MS)?,
                key_ttl: self.millis(&W::INTER_WORKER_KEY_TTL_MS)?.max(Duration::from_secs(1)),
                key_algorithm: self.algorithm(&W::INTER_WORKER_KEY_GENERATION_ALGORITHM)?,
                signature_algorithm: self.algorithm(&W::INTER_WORKER_SIGNATURE_ALGORITHM)?,
                verification_algorithms: {
                    let list = self.text(&W::INTER_WORKER_VERIFICATION_ALGORITHMS);
                    let mut algorithms = Vec::new();
                    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                        let Some(known) = SIGNATURE_ALGORITHMS.iter().find(|a| a.eq_ignore_ascii_case(name)) else {
                            return Err(self.invalid(
                                W::INTER_WORKER_VERIFICATION_ALGORITHMS.name,
                                format!(
                                    "inter.worker.verification.algorithms names {name}; use {}",
                                    SIGNATURE_ALGORITHMS.join(", ")
                                ),
                            ));
                        };
                        algorithms.push(known.to_string());
                    }
                    algorithms
                },
                forward_allowed_urls: {
                    let mut patterns = Vec::new();
                    for pattern in self.text(&W::WHARF_REST_FORWARD_ALLOWED_URLS).split(',').map(str::trim) {
                        if pattern.is_empty() {
                            continue;
                        }
                        let shaped = pattern
                            .split_once("://")
                            .filter(|(scheme, _)| ["http", "https"].contains(&scheme.to_ascii_lowercase().as_str()))
                            .and_then(|(_, authority)| authority.rsplit_once(':'))
                            .is_some_and(|(host, port)| {
                                !host.is_empty() && !host.contains('/') && (port == "*" || port.parse::<u16>().is_ok())
                            });
                        if !shaped {
                            return Err(self.invalid(
                                W::WHARF_REST_FORWARD_ALLOWED_URLS.name,
                                format!(
                                    "wharf.rest.forward.allowed.urls: \"{pattern}\" is not scheme://host:port (http or \
                                     https; * for any host or port), e.g. https://*.workers.example.com:8443"
                                ),
                            ));
                        }
                        patterns.push(pattern.to_string());
                    }
                    patterns
                },
                signature_max_skew: self.millis(&W::WHARF_INTER_WORKER_SIGNATURE_MAX_SKEW_MS)?,
                legacy_signatures: self.boolean(&W::WHARF_INTER_WORKER_LEGACY_SIGNATURES)?,
            }),
        };
        if let Some(d) = &distributed {
            if d.heartbeat_interval >= d.session_timeout {
                return Err(self.invalid(
                    W::HEARTBEAT_INTERVAL_MS.name,
                    format!(
                        "heartbeat.interval.ms={} must be below session.timeout.ms={} (a third of it is usual), \
                         or the group coordinator drops this worker between two heartbeats",
                        d.heartbeat_interval.as_millis(),
                        d.session_timeout.as_millis()
                    ),
                ));
            }
            let topics = [(&d.config_topic, "config"), (&d.offset_topic, "offset"), (&d.status_topic, "status")];
            for (i, (a, an)) in topics.iter().enumerate() {
                for (b, bn) in &topics[i + 1..] {
                    if a == b {
                        return Err(self.invalid(
                            "storage topics",
                            format!("{an}.storage.topic and {bn}.storage.topic are both \"{a}\"; each needs a topic of its own"),
                        ));
                    }
                }
            }
        }
        Ok(distributed)
    }

    /// The file of the REST API's users, when `rest.extension.classes` asks for HTTP Basic
    /// authentication (group "REST").
    fn rest_credentials_file(&self) -> Result<Option<PathBuf>, WorkerConfigError> {
        const BASIC_AUTH: &str = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension";
        let mut basic_auth = false;
        for class in
            self.get(&W::REST_EXTENSION_CLASSES).unwrap_or("").split(',').map(str::trim).filter(|c| !c.is_empty())
        {
            if class == BASIC_AUTH || class == "BasicAuthSecurityRestExtension" {
                basic_auth = true;
            } else {
                return Err(self.invalid(
                    W::REST_EXTENSION_CLASSES.name,
                    format!("rest.extension.classes names {class}, which Wharf does not have; the one it has is {BASIC_AUTH}"),
                ));
            }
        }
        let rest_credentials_file = self
            .get(&W::WHARF_REST_BASIC_AUTH_CREDENTIALS_FILE)
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(PathBuf::from);
        if basic_auth && rest_credentials_file.is_none() {
            return Err(self.invalid(
                W::WHARF_REST_BASIC_AUTH_CREDENTIALS_FILE.name,
                format!(
                    "rest.extension.classes names {BASIC_AUTH}: set wharf.rest.basic.auth.credentials.file to a file of \
                     its users (lines made by `wharf rest-credential NAME`), which takes the place of its JAAS file"
                ),
            ));
        }
        Ok(rest_credentials_file)
    }

    fn prefixed(&self, prefix: &str) -> Vec<(String, String)> {
        self.props.iter().filter_map(|p| p.key.strip_prefix(prefix).map(|k| (k.to_string(), p.value.clone()))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<WorkerConfig, WorkerConfigError> {
        let props = properties::parse(text, "worker.properties").unwrap();
        WorkerConfig::from_properties(&props, "worker.properties", Mode::Standalone)
    }

    #[test]
    fn durations_and_batch_sizes_that_would_overflow_are_refused() {
        let base = "bootstrap.servers=k:9092\nplugin.path=/p\noffset.storage.file.filename=/tmp/o\n";
        let err = config(&format!("{base}task.shutdown.graceful.timeout.ms=18446744073709551615\n")).unwrap_err();
        assert!(err.to_string().contains("is too large: at most 2147483647 ms"), "{err}");
        let err = config(&format!("{base}wasm.max.records.per.call=4294967295\n")).unwrap_err();
        assert!(err.to_string().contains("at most 1000000"), "{err}");
        assert!(config(&format!("{base}task.shutdown.graceful.timeout.ms=2147483647\n")).is_ok());
    }

    const MINIMAL: &str = "bootstrap.servers=localhost:9092\nplugin.path=/p\n\
                           offset.storage.file.filename=/tmp/o\n";

    #[test]
    fn defaults_follow_kafka_connect() {
        let c = config(MINIMAL).unwrap();
        assert_eq!(c.rest_bind, "localhost:8083");
        assert_eq!(c.offset_flush_interval, Duration::from_secs(60));
        assert_eq!(c.task_shutdown_graceful_timeout, Duration::from_secs(5));
    }

    #[test]
    fn the_sandbox_defaults_are_the_key_tables() {
        let parsed = config(MINIMAL).unwrap().wasm;
        let defaults = WasmLimits::default();
        assert_eq!(
            (parsed.memory_max_bytes, parsed.call_timeout, parsed.max_records_per_call, parsed.max_bytes_per_call),
            (
                defaults.memory_max_bytes,
                defaults.call_timeout,
                defaults.max_records_per_call,
                defaults.max_bytes_per_call
            )
        );
        assert_eq!(
            (parsed.max_host_handles, parsed.log_line_max_bytes, parsed.log_lines_per_second, parsed.fs_inline),
            (defaults.max_host_handles, defaults.log_line_max_bytes, defaults.log_lines_per_second, defaults.fs_inline)
        );
    }

    #[test]
    fn file_system_calls_leave_the_task_thread_when_asked() {
        assert!(config(MINIMAL).unwrap().wasm.fs_inline);
        assert!(!config(&format!("{MINIMAL}wasm.fs.inline=false\n")).unwrap().wasm.fs_inline);
        let err = config(&format!("{MINIMAL}wasm.fs.inline=sometimes\n")).unwrap_err();
        assert!(err.to_string().contains("wasm.fs.inline"), "{err}");
    }

    #[test]
    fn security_settings_reach_every_client_in_librdkafkas_names_with_the_files_references_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("kafka.properties");
        std::fs::write(&secrets, "password=s3cret\n").unwrap();
        let text = format!(
            "{MINIMAL}config.providers=file\n\
             config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n\
             security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" \
             password=\"${{file:{}:password}}\";\n\
             producer.ssl.endpoint.identification.algorithm=\n",
            secrets.display()
        );
        let c = config(&text).unwrap();
        let get = |key: &str| c.kafka_security.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        assert_eq!(get("security.protocol"), Some("SASL_SSL"));
        assert_eq!((get("sasl.username"), get("sasl.password")), (Some("u"), Some("s3cret")));
        assert_eq!(c.producer_overrides, vec![("ssl.endpoint.identification.algorithm".into(), "none".into())]);
        let refused = config(&format!("{MINIMAL}security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")).unwrap_err();
        assert!(refused.to_string().contains("GSSAPI"), "{refused}");
    }

    #[test]
    fn producer_and_consumer_overrides_lose_their_prefix() {
        let c = config(&format!("{MINIMAL}producer.linger.ms=5\nconsumer.fetch.min.bytes=1\n")).unwrap();
        assert_eq!(c.producer_overrides, vec![("linger.ms".into(), "5".into())]);
        assert_eq!(c.consumer_overrides, vec![("fetch.min.bytes".into(), "1".into())]);
    }

    #[test]
    fn an_unknown_key_is_unused_and_named_with_its_line() {
        let c = config(&format!("{MINIMAL}offset.flush.intervall.ms=5\n")).unwrap();
        assert_eq!(c.unused.len(), 1, "{:?}", c.unused);
        assert!(c.unused[0].contains("\"offset.flush.intervall.ms\" (line 4) is unused"), "{:?}", c.unused);
        assert!(c.unacted.is_empty(), "{:?}", c.unacted);
    }

    #[test]
    fn connect_keys_without_effect_are_accepted_and_said_so() {
        let c = config(&format!("{MINIMAL}plugin.discovery=hybrid_warn\nadmin.listeners=\n")).unwrap();
        assert!(c.unused.is_empty(), "{:?}", c.unused);
        assert_eq!(c.unacted.len(), 1, "{:?}", c.unacted);
        assert!(
            c.unacted[0].contains("\"plugin.discovery\" (line 4) is accepted and does nothing here"),
            "{:?}",
            c.unacted
        );
        // An exact Connect name is not taken for an admin client setting.
        assert!(c.admin_overrides.is_empty(), "{:?}", c.admin_overrides);
        assert!(!c.admin_endpoints, "an empty admin.listeners turns /admin off");
        assert!(config(MINIMAL).unwrap().admin_endpoints);
        let err = config(&format!("{MINIMAL}admin.listeners=http://:9093\n")).unwrap_err().to_string();
        assert!(err.contains("on its one listener"), "{err}");
        assert!(config(&format!("{MINIMAL}exactly.once.source.support=disabled\n")).is_ok());
    }

    /// The settings of Apache Kafka's own `config/connect-distributed.properties` and
    /// `config/connect-standalone.properties` (an older one, with the `internal.*` converters that
    /// Connect 3.0 dropped), with `plugin.path` added.
    #[test]
    fn kafkas_stock_worker_files_are_read_with_plugin_path_added() {
        let distributed_file = "bootstrap.servers=localhost:9092\ngroup.id=connect-cluster\n\
            key.converter=org.apache.kafka.connect.json.JsonConverter\n\
            value.converter=org.apache.kafka.connect.json.JsonConverter\n\
            key.converter.schemas.enable=true\nvalue.converter.schemas.enable=true\n\
            offset.storage.topic=connect-offsets\noffset.storage.replication.factor=1\n\
            config.storage.topic=connect-configs\nconfig.storage.replication.factor=1\n\
            status.storage.topic=connect-status\nstatus.storage.replication.factor=1\n\
            offset.flush.interval.ms=10000\nplugin.path=/opt/wharf/plugins\n";
        let c = distributed(distributed_file).unwrap();
        assert!(c.unused.is_empty() && c.unacted.is_empty(), "{:?} {:?}", c.unused, c.unacted);
        assert_eq!(c.distributed.as_ref().map(|d| d.group_id.as_str()), Some("connect-cluster"));
        assert_eq!(c.offset_flush_interval, Duration::from_secs(10));
        let standalone_file = "bootstrap.servers=localhost:9092\n\
            key.converter=org.apache.kafka.connect.json.JsonConverter\n\
            value.converter=org.apache.kafka.connect.json.JsonConverter\n\
            key.converter.schemas.enable=true\nvalue.converter.schemas.enable=true\n\
            internal.key.converter=org.apache.kafka.connect.json.JsonConverter\n\
            internal.value.converter=org.apache.kafka.connect.json.JsonConverter\n\
            internal.key.converter.schemas.enable=false\ninternal.value.converter.schemas.enable=false\n\
            offset.storage.file.filename=/tmp/connect.offsets\noffset.flush.interval.ms=10000\n\
            plugin.path=/opt/wharf/plugins\n";
        let c = config(standalone_file).unwrap();
        assert_eq!(c.unused.len(), 4, "{:?}", c.unused);
        assert!(c.unused[0].contains("\"internal.key.converter\" (line 6) is unused"), "{:?}", c.unused);
        // The keys of Connect 4.1's worker that the stock files leave at their defaults.
        let mut more = String::from(distributed_file);
        for (name, value) in [
            ("plugin.discovery", "hybrid_warn"),
            ("exactly.once.source.support", "disabled"),
            ("metrics.num.samples", "2"),
            ("client.id", "connect-1"),
            ("metrics.recording.level", "INFO"),
            ("worker.unsync.backoff.ms", "5000"),
            ("connect.protocol", "sessioned"),
        ] {
            more.push_str(&format!("{name}={value}\n"));
        }
        let c = distributed(&more).unwrap();
        assert!(c.unused.is_empty(), "{:?}", c.unused);
        // The metrics keys are Wharf's too: they set the window of GET /metrics.
        assert_eq!(c.unacted.len(), 4, "{:?}", c.unacted);
        assert_eq!(c.exactly_once_source, ExactlyOnceSource::Disabled);
        assert_eq!(c.metrics_window, Duration::from_secs(60));
        let principal = distributed(&format!("{distributed_file}connector.client.config.override.policy=Principal\n"));
        assert_eq!(principal.unwrap().wasm.client_overrides.policy, crate::config::clients::OverridePolicy::Principal);
    }

    #[test]
    fn exactly_once_source_support_takes_connects_three_steps_in_distributed_mode() {
        for (value, want) in [
            ("disabled", ExactlyOnceSource::Disabled),
            ("Preparing", ExactlyOnceSource::Preparing),
            ("enabled", ExactlyOnceSource::Enabled),
        ] {
            let c = distributed(&format!("{DISTRIBUTED}exactly.once.source.support={value}\n")).unwrap();
            assert_eq!(c.exactly_once_source, want, "{value}");
        }
        assert_eq!(distributed(DISTRIBUTED).unwrap().exactly_once_source, ExactlyOnceSource::Disabled);
        let err = distributed(&format!("{DISTRIBUTED}exactly.once.source.support=on\n")).unwrap_err().to_string();
        assert!(err.contains("use disabled, preparing or enabled"), "{err}");
    }

    #[test]
    fn connect_settings_wharf_would_silently_not_honour_are_refused() {
        for value in ["enabled", "preparing"] {
            let err = config(&format!("{MINIMAL}exactly.once.source.support={value}\n")).unwrap_err().to_string();
            assert!(
                err.contains(&format!("exactly.once.source.support={value}: standalone mode does not support"))
                    && err.contains("set it to disabled"),
                "{err}"
            );
        }
        let err = config(&format!("{MINIMAL}response.http.headers.config=add X-Frame-Options: DENY\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not add headers"), "{err}");
    }

    #[test]
    fn missing_offsets_file_in_standalone_says_how_to_fix() {
        let err = config("bootstrap.servers=x:1\nplugin.path=/p\n").unwrap_err().to_string();
        assert!(err.contains("offset.storage.file.filename="), "{err}");
    }

    #[test]
    fn bad_number_names_key_and_value() {
        let err = config(&format!("{MINIMAL}offset.flush.interval.ms=soon\n")).unwrap_err().to_string();
        assert!(err.contains("offset.flush.interval.ms=soon"), "{err}");
    }

    #[test]
    fn kafkas_converters_are_accepted_and_an_unknown_one_is_refused_with_the_choices() {
        let json = "org.apache.kafka.connect.json.JsonConverter";
        let chosen =
            config(&format!("{MINIMAL}value.converter={json}\nvalue.converter.schemas.enable=false\n")).unwrap();
        assert_eq!(chosen.converters.value.class, json);
        let err = config(&format!("{MINIMAL}value.converter=com.example.AvroConverter\n")).unwrap_err().to_string();
        assert!(err.contains("com.example.AvroConverter") && err.contains(json), "{err}");
        let err = config(&format!("{MINIMAL}value.converter={json}\nvalue.converter.schemas.enable=maybe\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("value.converter.schemas.enable=maybe"), "{err}");
    }

    fn distributed(text: &str) -> Result<WorkerConfig, WorkerConfigError> {
        let props = properties::parse(text, "worker.properties").unwrap();
        WorkerConfig::from_properties(&props, "worker.properties", Mode::Distributed)
    }

    const DISTRIBUTED: &str = "bootstrap.servers=localhost:9092\nplugin.path=/p\ngroup.id=g\n\
                               config.storage.topic=c\noffset.storage.topic=o\nstatus.storage.topic=s\n";

    #[test]
    fn distributed_defaults_follow_kafka_connect() {
        let d = distributed(DISTRIBUTED).unwrap().distributed.unwrap();
        assert_eq!((d.offset_partitions, d.status_partitions), (25, 5));
        assert_eq!((d.config_replication, d.offset_replication, d.status_replication), (3, 3, 3));
    }

    #[test]
    fn distributed_needs_the_three_topics() {
        let err = distributed("bootstrap.servers=x:1\nplugin.path=/p\ngroup.id=g\n").unwrap_err().to_string();
        assert!(err.contains("config.storage.topic is not set"), "{err}");
    }

    #[test]
    fn keys_of_the_other_mode_are_named() {
        let err = distributed(&format!("{DISTRIBUTED}offset.storage.file.filename=/x\n")).unwrap_err().to_string();
        assert!(err.contains("belongs to standalone mode"), "{err}");
        let err = config(&format!("{MINIMAL}group.id=g\n")).unwrap_err().to_string();
        assert!(err.contains("belongs to distributed mode"), "{err}");
    }

    #[test]
    fn replication_factor_minus_one_means_broker_default() {
        let c = distributed(&format!("{DISTRIBUTED}config.storage.replication.factor=-1\n")).unwrap();
        assert_eq!(c.distributed.unwrap().config_replication, -1);
        assert!(distributed(&format!("{DISTRIBUTED}status.storage.replication.factor=0\n")).is_err());
    }

    #[test]
    fn one_topic_cannot_hold_two_stores() {
        let err = distributed(&DISTRIBUTED.replace("offset.storage.topic=o", "offset.storage.topic=c"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("each needs a topic of its own"), "{err}");
    }

    #[test]
    fn worker_id_is_the_advertised_address() {
        let c = config(&format!("{MINIMAL}listeners=http://0.0.0.0:8083\nrest.advertised.host.name=w1\n")).unwrap();
        assert_eq!(c.worker_id(), "w1:8083");
    }

    #[test]
    fn listener_must_be_http_host_port() {
        assert!(config(&format!("{MINIMAL}listeners=https://x:1\n")).is_err());
        assert!(config(&format!("{MINIMAL}listeners=http://x\n")).is_err());
        assert_eq!(config(&format!("{MINIMAL}listeners=http://0.0.0.0:9000\n")).unwrap().rest_bind, "0.0.0.0:9000");
    }

    /// The key table drives the parser: a value that a key's definition refuses is refused by
    /// the worker with the definition's own words, for every checked key.
    #[test]
    fn every_checked_key_is_refused_in_the_words_of_its_definition() {
        let mut checked = 0;
        for key in keys::WORKER_KEYS {
            for bad in ["x", "-2", "99999999999999999999"] {
                let Err(expected) = key.check(bad) else { continue };
                let (base, mode) = match key.scope {
                    Scope::Distributed => (DISTRIBUTED, Mode::Distributed),
                    _ => (MINIMAL, Mode::Standalone),
                };
                let text = format!("{base}{}={bad}\n", key.name);
                let props = properties::parse(&text, "worker.properties").unwrap();
                let refused = match WorkerConfig::from_properties(&props, "worker.properties", mode) {
                    Ok(_) => panic!("{}={bad} was accepted, and its definition refuses it: {expected}", key.name),
                    Err(e) => e.to_string(),
                };
                assert!(refused.contains(&expected), "{}={bad}: {refused}\nshould say: {expected}", key.name);
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} refusals checked");
    }
}
