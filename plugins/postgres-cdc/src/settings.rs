//! Debezium's PostgreSQL connector config (3.6), read under
//! `io.debezium.connector.postgresql.PostgresConnector` or the plugin's own name. Each key is used,
//! accepted as having no effect here (said once in the log), accepted at its default only (any
//! other value refused by name, saying why), or, for keys no version of Debezium has, noted in
//! the log as ignored.

use regex_lite::{Regex, RegexBuilder};
use wharf_jdbc_url::TlsMode;

use crate::values::{BinaryMode, DecimalMode, Modes, TimeMode};
use wharf_sdk::{ConfigKey, ConfigProblem, ConfigType, Importance};

/// What the plugin does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Used,
    /// Accepted; it changes nothing here, for the reason given.
    Inert(&'static str),
    /// Accepted at its default; any other value is refused, for the reason given.
    DefaultOnly(&'static str),
}

struct KeyDef {
    name: &'static str,
    ty: ConfigType,
    default: Option<&'static str>,
    effect: Effect,
    doc: &'static str,
}

const QUEUE: Effect = Effect::Inert(
    "changes go from the replication stream to the worker without a queue between; the worker's batch bounds apply",
);
const NOT_YET: &str = "postgres-cdc does not build it yet";

#[rustfmt::skip]
const KEYS: &[KeyDef] = &[
    KeyDef { name: "database.hostname", ty: ConfigType::String, default: None, effect: Effect::Used,
        doc: "The PostgreSQL server's host name or IP address; with database.port, the one server the plugin may connect to (within the worker's wasm.ceiling.net)." },
    KeyDef { name: "database.port", ty: ConfigType::Int, default: Some("5432"), effect: Effect::Used, doc: "The server's port." },
    KeyDef { name: "database.user", ty: ConfigType::String, default: None, effect: Effect::Used,
        doc: "The user: it needs the REPLICATION attribute (or superuser), SELECT on the captured tables, and, for publication.autocreate.mode, CREATE on the database or ownership of the tables." },
    KeyDef { name: "database.password", ty: ConfigType::Password, default: None, effect: Effect::Used, doc: "The user's password." },
    KeyDef { name: "database.dbname", ty: ConfigType::String, default: None, effect: Effect::Used, doc: "The database whose changes are captured." },
    KeyDef { name: "database.sslmode", ty: ConfigType::String, default: Some("prefer"), effect: Effect::Used,
        doc: "disable, allow, prefer, require, verify-ca or verify-full, as libpq reads them: prefer and require encrypt without checking the certificate, verify-ca checks its chain up to database.sslrootcert's authorities, verify-full also that it names database.hostname. The worker runs the handshake." },
    KeyDef { name: "database.sslrootcert", ty: ConfigType::String, default: None, effect: Effect::Used,
        doc: "A PEM file of the certificate authorities to trust (an absolute path, granted for reading within the worker's wasm.ceiling.fs.read); the public authorities when unset. Checked for verify-ca and verify-full, as pgjdbc checks it." },
    KeyDef { name: "database.sslcert", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly("client certificates are not built yet"), doc: "Not built yet." },
    KeyDef { name: "database.sslkey", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly("client certificates are not built yet"), doc: "Not built yet." },
    KeyDef { name: "database.sslpassword", ty: ConfigType::Password, default: None, effect: Effect::DefaultOnly("client certificates are not built yet"), doc: "Not built yet." },
    KeyDef { name: "database.sslfactory", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly("the worker runs TLS; there is no Java socket factory"), doc: "Refused: the worker runs TLS." },
    KeyDef { name: "database.initial.statements", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly(NOT_YET), doc: "Not built yet." },
    KeyDef { name: "database.tcpKeepAlive", ty: ConfigType::Boolean, default: Some("true"), effect: Effect::Inert("the sandbox's sockets keep no TCP keep-alive; status updates keep the connection busy"), doc: "No effect." },
    KeyDef { name: "database.query.timeout.ms", ty: ConfigType::Int, default: Some("600000"), effect: Effect::Inert("each query ends within the worker's call deadline (wasm.call.timeout.ms)"), doc: "No effect." },
    KeyDef { name: "topic.prefix", ty: ConfigType::String, default: None, effect: Effect::Used,
        doc: "The prefix of every topic: changes of schema.table go to <topic.prefix>.<schema>.<table>; also the name of the offsets' partition." },
    KeyDef { name: "schema.include.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of the schemas whose tables are captured (each matching the whole name); every schema but PostgreSQL's own when unset." },
    KeyDef { name: "schema.exclude.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of schemas not captured." },
    KeyDef { name: "table.include.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of tables captured, as schema.table." },
    KeyDef { name: "table.exclude.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of tables not captured, as schema.table." },
    KeyDef { name: "column.include.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of columns written, as schema.table.column." },
    KeyDef { name: "column.exclude.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of columns left out, as schema.table.column." },
    KeyDef { name: "message.key.columns", ty: ConfigType::String, default: None, effect: Effect::Used,
        doc: "Keys of one's own: <table regex>:<column>,<column>;… (as inventory.orders:customer_id), in place of the primary key." },
    KeyDef { name: "plugin.name", ty: ConfigType::String, default: Some("pgoutput"), effect: Effect::DefaultOnly("pgoutput, PostgreSQL's built-in output plugin, is the one read (decoderbufs needs a server extension)"), doc: "pgoutput." },
    KeyDef { name: "slot.name", ty: ConfigType::String, default: Some("debezium"), effect: Effect::Used, doc: "The logical replication slot; made on first start when missing." },
    KeyDef { name: "slot.drop.on.stop", ty: ConfigType::Boolean, default: Some("false"), effect: Effect::Used, doc: "Drop the slot when the task stops (tests and trials: changes made while stopped are lost)." },
    KeyDef { name: "slot.stream.params", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly(NOT_YET), doc: "Not built yet." },
    KeyDef { name: "slot.max.retries", ty: ConfigType::Int, default: Some("6"), effect: Effect::Inert("a task that cannot take its slot fails retriably and the worker starts it again"), doc: "No effect." },
    KeyDef { name: "slot.retry.delay.ms", ty: ConfigType::Long, default: Some("10000"), effect: Effect::Inert("a task that cannot take its slot fails retriably and the worker starts it again"), doc: "No effect." },
    KeyDef { name: "publication.name", ty: ConfigType::String, default: Some("dbz_publication"), effect: Effect::Used, doc: "The publication the slot streams." },
    KeyDef { name: "publication.autocreate.mode", ty: ConfigType::String, default: Some("all_tables"), effect: Effect::Used,
        doc: "all_tables (CREATE PUBLICATION … FOR ALL TABLES when missing), filtered (for the captured tables, kept in step with them), no_tables, or disabled (it must exist)." },
    KeyDef { name: "snapshot.mode", ty: ConfigType::String, default: Some("initial"), effect: Effect::Used,
        doc: "initial (snapshot once, then stream), initial_only (snapshot, then stop streaming), no_data (stream only), when_needed (snapshot again when the stored position is gone), always (snapshot at every start)." },
    KeyDef { name: "snapshot.fetch.size", ty: ConfigType::Int, default: Some("10240"), effect: Effect::Used, doc: "Rows read from a table at a time during the snapshot." },
    KeyDef { name: "snapshot.include.collection.list", ty: ConfigType::List, default: None, effect: Effect::Used, doc: "Regular expressions of the captured tables the snapshot reads (schema.table); all when unset." },
    KeyDef { name: "snapshot.select.statement.overrides", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly(NOT_YET), doc: "Not built yet." },
    KeyDef { name: "snapshot.lock.timeout.ms", ty: ConfigType::Long, default: Some("10000"), effect: Effect::Inert("the snapshot reads the slot's exported snapshot and takes no table locks"), doc: "No effect." },
    KeyDef { name: "snapshot.locking.mode", ty: ConfigType::String, default: Some("none"), effect: Effect::Inert("the snapshot reads the slot's exported snapshot and takes no table locks"), doc: "No effect." },
    KeyDef { name: "snapshot.isolation.mode", ty: ConfigType::String, default: Some("serializable"), effect: Effect::Inert("the snapshot runs in REPEATABLE READ on the slot's exported snapshot"), doc: "No effect." },
    KeyDef { name: "snapshot.delay.ms", ty: ConfigType::Long, default: Some("0"), effect: Effect::DefaultOnly(NOT_YET), doc: "Not built yet." },
    KeyDef { name: "snapshot.max.threads", ty: ConfigType::Int, default: Some("1"), effect: Effect::Inert("a task reads one table at a time"), doc: "No effect." },
    KeyDef { name: "skipped.operations", ty: ConfigType::List, default: Some("t"), effect: Effect::Used, doc: "Operations not written: c, u, d, t (truncate), or none." },
    KeyDef { name: "provide.transaction.metadata", ty: ConfigType::Boolean, default: Some("false"), effect: Effect::Used, doc: "A BEGIN and an END record for each transaction to <topic.prefix>.<topic.transaction>, and a transaction block (id, total_order, data_collection_order) in each change event." },
    KeyDef { name: "topic.transaction", ty: ConfigType::String, default: Some("transaction"), effect: Effect::Used, doc: "The suffix of the transaction metadata topic." },
    KeyDef { name: "heartbeat.interval.ms", ty: ConfigType::Int, default: Some("0"), effect: Effect::Used, doc: "When above 0, a heartbeat record to <topic.heartbeat.prefix>.<topic.prefix> at most this often, carrying the stream's position so that the slot advances on an idle database." },
    KeyDef { name: "topic.heartbeat.prefix", ty: ConfigType::String, default: Some("__debezium-heartbeat"), effect: Effect::Used, doc: "The heartbeat topic's prefix." },
    KeyDef { name: "heartbeat.action.query", ty: ConfigType::String, default: None, effect: Effect::Used, doc: "A statement run on the database at each heartbeat (as an INSERT into a table of the publication, so that a database with no other change still moves the stream); a failure is logged and the task goes on." },
    KeyDef { name: "status.update.interval.ms", ty: ConfigType::Int, default: Some("10000"), effect: Effect::Used, doc: "How often the stream's position is reported to the server." },
    KeyDef { name: "tombstones.on.delete", ty: ConfigType::Boolean, default: Some("true"), effect: Effect::Used, doc: "A delete is followed by a record with the same key and a null value, for log compaction." },
    KeyDef { name: "decimal.handling.mode", ty: ConfigType::String, default: Some("precise"), effect: Effect::Used, doc: "precise (Kafka Connect's Decimal; numeric without a scale as io.debezium.data.VariableScaleDecimal), double (float64) or string." },
    KeyDef { name: "time.precision.mode", ty: ConfigType::String, default: Some("adaptive"), effect: Effect::Used, doc: "adaptive (by each column's precision: io.debezium.time.Time, MicroTime, Timestamp, MicroTimestamp), adaptive_time_microseconds, connect (Kafka Connect's Date, Time, Timestamp in milliseconds), isostring, microseconds or nanoseconds." },
    KeyDef { name: "binary.handling.mode", ty: ConfigType::String, default: Some("bytes"), effect: Effect::Used, doc: "bytes, base64, base64-url-safe or hex." },
    KeyDef { name: "interval.handling.mode", ty: ConfigType::String, default: Some("numeric"), effect: Effect::Used, doc: "numeric (io.debezium.time.MicroDuration: microseconds, a month counted as 30.4375 days) or string (io.debezium.time.Interval, ISO 8601)." },
    KeyDef { name: "hstore.handling.mode", ty: ConfigType::String, default: Some("json"), effect: Effect::Used, doc: "json (a JSON object's text, io.debezium.data.Json) or map." },
    KeyDef { name: "include.unknown.datatypes", ty: ConfigType::Boolean, default: Some("false"), effect: Effect::DefaultOnly(NOT_YET), doc: "false: columns of types without a mapping are left out." },
    KeyDef { name: "unavailable.value.placeholder", ty: ConfigType::String, default: Some("__debezium_unavailable_value"), effect: Effect::DefaultOnly(NOT_YET), doc: "What an unchanged TOASTed value is written as." },
    KeyDef { name: "poll.interval.ms", ty: ConfigType::Long, default: Some("500"), effect: Effect::Used, doc: "How long a poll waits for changes at most (and always within wasm.call.timeout.ms)." },
    KeyDef { name: "max.batch.size", ty: ConfigType::Int, default: Some("2048"), effect: QUEUE, doc: "No effect." },
    KeyDef { name: "max.queue.size", ty: ConfigType::Int, default: Some("8192"), effect: QUEUE, doc: "No effect." },
    KeyDef { name: "max.queue.size.in.bytes", ty: ConfigType::Long, default: Some("0"), effect: QUEUE, doc: "No effect." },
    KeyDef { name: "retriable.restart.connector.wait.ms", ty: ConfigType::Long, default: Some("10000"), effect: Effect::Inert("a retriable failure is retried by the worker"), doc: "No effect." },
    KeyDef { name: "errors.max.retries", ty: ConfigType::Int, default: Some("-1"), effect: Effect::Inert("a retriable failure is retried by the worker"), doc: "No effect." },
    KeyDef { name: "include.schema.changes", ty: ConfigType::Boolean, default: Some("false"), effect: Effect::Inert("the PostgreSQL connector writes no schema change topic"), doc: "No effect." },
    KeyDef { name: "schema.name.adjustment.mode", ty: ConfigType::String, default: Some("none"), effect: Effect::DefaultOnly(NOT_YET), doc: "none." },
    KeyDef { name: "field.name.adjustment.mode", ty: ConfigType::String, default: Some("none"), effect: Effect::DefaultOnly(NOT_YET), doc: "none." },
    KeyDef { name: "event.processing.failure.handling.mode", ty: ConfigType::String, default: Some("fail"), effect: Effect::DefaultOnly(NOT_YET), doc: "fail: a change that cannot be read fails the task." },
    KeyDef { name: "signal.data.collection", ty: ConfigType::String, default: None, effect: Effect::DefaultOnly(NOT_YET), doc: "Signals (incremental snapshots) are not built yet." },
    KeyDef { name: "signal.enabled.channels", ty: ConfigType::List, default: Some("source"), effect: Effect::Inert("signals are not built yet"), doc: "No effect." },
    KeyDef { name: "incremental.snapshot.chunk.size", ty: ConfigType::Int, default: Some("1024"), effect: Effect::Inert("incremental snapshots are not built yet"), doc: "No effect." },
    KeyDef { name: "column.propagate.source.type", ty: ConfigType::List, default: None, effect: Effect::DefaultOnly(NOT_YET), doc: "Not built yet." },
    KeyDef { name: "datatype.propagate.source.type", ty: ConfigType::List, default: None, effect: Effect::DefaultOnly(NOT_YET), doc: "Not built yet." },
    KeyDef { name: "converters", ty: ConfigType::List, default: None, effect: Effect::DefaultOnly("custom converters are Java classes"), doc: "Refused: Java classes." },
    KeyDef { name: "tasks.max", ty: ConfigType::Int, default: Some("1"), effect: Effect::Inert("one task reads the slot, as Debezium's"), doc: "One task, whatever the value." },
];

/// Keys of the worker (Kafka Connect's and Wharf's own), which this plugin does not read.
fn is_worker_key(key: &str) -> bool {
    const EXACT: &[&str] =
        &["name", "connector.class", "connector.version", "connector.plugin.version", "config.action.reload"];
    const PREFIXES: &[&str] = &[
        "key.converter",
        "value.converter",
        "header.converter",
        "transforms",
        "predicates",
        "errors.",
        "producer.override.",
        "wasm.",
        "topic.creation.",
        "offsets.storage.topic",
        "exactly.once.support",
        "transaction.boundary",
    ];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// The plugin's keys, for describe.
pub fn definitions() -> Vec<ConfigKey> {
    KEYS.iter()
        .map(|k| ConfigKey {
            name: k.name.to_string(),
            type_: k.ty,
            default_value: k.default.map(str::to_string),
            required: matches!(k.name, "database.hostname" | "database.user" | "database.dbname" | "topic.prefix"),
            importance: if k.effect == Effect::Used { Importance::High } else { Importance::Low },
            documentation: k.doc.to_string(),
            group: None,
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    Initial,
    InitialOnly,
    NoData,
    WhenNeeded,
    Always,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autocreate {
    AllTables,
    Filtered,
    NoTables,
    Disabled,
}

/// Regular expressions of include and exclude lists, each matching a whole name, ignoring case
/// as Debezium's do.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

fn matches_whole(regex: &Regex, name: &str) -> bool {
    regex.find(name).is_some_and(|m| m.start() == 0 && m.end() == name.len())
}

impl Filter {
    pub fn allows(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| matches_whole(r, name)))
            && !self.exclude.iter().any(|r| matches_whole(r, name))
    }

    /// The place of the first include expression that matches `name`: Debezium snapshots tables
    /// in the order of `table.include.list`.
    pub fn rank(&self, name: &str) -> usize {
        self.include.iter().position(|r| matches_whole(r, name)).unwrap_or(0)
    }
}

/// `message.key.columns`: tables (a regular expression of schema.table) and their key columns.
#[derive(Debug, Clone, Default)]
pub struct KeyColumns(Vec<(Regex, Vec<String>)>);

impl KeyColumns {
    pub fn of(&self, table: &str) -> Option<&[String]> {
        self.0
            .iter()
            .find(|(r, _)| r.find(table).is_some_and(|m| m.start() == 0 && m.end() == table.len()))
            .map(|(_, columns)| columns.as_slice())
    }
}

/// A config, read.
#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub database: String,
    pub tls: TlsMode,
    /// `database.sslmode=…`, for messages.
    pub tls_setting: String,
    pub prefix: String,
    pub schemas: Filter,
    pub tables: Filter,
    pub columns: Filter,
    pub snapshot_tables: Filter,
    pub key_columns: KeyColumns,
    pub slot: String,
    pub drop_slot: bool,
    pub publication: String,
    pub autocreate: Autocreate,
    pub snapshot: SnapshotMode,
    pub fetch_size: u32,
    /// Which of c, u, d, t are not written.
    pub skipped: Vec<char>,
    pub heartbeat_ms: u64,
    pub heartbeat_topic: String,
    pub heartbeat_query: Option<String>,
    /// `provide.transaction.metadata`: the topic of BEGIN and END records.
    pub transaction_topic: Option<String>,
    pub status_interval_ms: u64,
    pub tombstones: bool,
    pub poll_interval_ms: u64,
    pub modes: Modes,
}

fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.trim())
}

/// Reads a config: the settings, or every problem found.
pub fn read(pairs: &[(String, String)]) -> Result<Settings, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let mut problem = |key: &str, message: String| problems.push(ConfigProblem { name: key.to_string(), message });
    let value = |key: &str| -> Option<&str> {
        last(pairs, key)
            .filter(|v| !v.is_empty())
            .or_else(|| KEYS.iter().find(|k| k.name == key).and_then(|k| k.default))
    };
    for def in KEYS {
        if let Effect::DefaultOnly(why) = def.effect {
            if let Some(given) = last(pairs, def.name).filter(|v| !v.is_empty()) {
                if Some(given) != def.default {
                    let default = def.default.map_or("unset".to_string(), |d| format!("\"{d}\""));
                    problem(def.name, format!("{}=\"{given}\" is refused: {why}; leave it {default}", def.name));
                }
            }
        }
    }
    let mut required = |key: &str, what: &str| -> String {
        match value(key) {
            Some(v) => v.to_string(),
            None => {
                problem(key, format!("{key} is not set: name {what}"));
                String::new()
            }
        }
    };
    let host = required("database.hostname", "the PostgreSQL server's host");
    let user = required("database.user", "the user to sign in as (it needs the REPLICATION attribute)");
    let database = required("database.dbname", "the database to capture");
    let prefix = required("topic.prefix", "the prefix of the topics changes go to (e.g. topic.prefix=shop)");
    if !prefix.is_empty() && !prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        problem(
            "topic.prefix",
            format!(
                "topic.prefix=\"{prefix}\" holds characters a topic name cannot: use letters, digits, '.', '_' and '-'"
            ),
        );
    }
    let number = |problem: &mut dyn FnMut(&str, String), key: &str| -> u64 {
        let text = value(key).unwrap_or("0");
        text.parse::<u64>().unwrap_or_else(|_| {
            problem(key, format!("{key}=\"{text}\" is not a whole number of 0 or more"));
            0
        })
    };
    let port = number(&mut problem, "database.port");
    let port = u16::try_from(port).ok().filter(|p| *p > 0).unwrap_or_else(|| {
        problem("database.port", format!("database.port={port} is not a port (1 to 65535)"));
        5432
    });
    let tls = match TlsMode::from_sslmode(value("database.sslmode").unwrap_or("prefer")) {
        Some(mode) => mode,
        None => {
            let other = value("database.sslmode").unwrap_or_default();
            problem("database.sslmode", format!("database.sslmode=\"{other}\" is not one of disable, allow, prefer, require, verify-ca, verify-full"));
            TlsMode::Prefer
        }
    };
    let tls_setting = format!("database.sslmode={}", value("database.sslmode").unwrap_or("prefer"));
    let regexes = |problem: &mut dyn FnMut(&str, String), key: &str| -> Vec<Regex> {
        let Some(list) = value(key) else { return Vec::new() };
        list.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .filter_map(|r| match RegexBuilder::new(r).case_insensitive(true).build() {
                Ok(regex) => Some(regex),
                Err(e) => {
                    problem(key, format!("{key}: \"{r}\" is not a regular expression: {e}"));
                    None
                }
            })
            .collect()
    };
    let schemas = Filter {
        include: regexes(&mut problem, "schema.include.list"),
        exclude: regexes(&mut problem, "schema.exclude.list"),
    };
    let tables = Filter {
        include: regexes(&mut problem, "table.include.list"),
        exclude: regexes(&mut problem, "table.exclude.list"),
    };
    let columns = Filter {
        include: regexes(&mut problem, "column.include.list"),
        exclude: regexes(&mut problem, "column.exclude.list"),
    };
    let snapshot_tables =
        Filter { include: regexes(&mut problem, "snapshot.include.collection.list"), exclude: Vec::new() };
    for (include, exclude) in [
        ("schema.include.list", "schema.exclude.list"),
        ("table.include.list", "table.exclude.list"),
        ("column.include.list", "column.exclude.list"),
    ] {
        if value(include).is_some() && value(exclude).is_some() {
            problem(exclude, format!("{include} and {exclude} are both set; Debezium allows one of the two"));
        }
    }
    let mut key_columns = Vec::new();
    if let Some(text) = value("message.key.columns") {
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((table, names)) = entry.rsplit_once(':') else {
                problem(
                    "message.key.columns",
                    format!("message.key.columns: \"{entry}\" is not <table regex>:<column>,<column>"),
                );
                continue;
            };
            let names: Vec<String> = names.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
            match RegexBuilder::new(table.trim()).case_insensitive(true).build() {
                Ok(regex) if !names.is_empty() => key_columns.push((regex, names)),
                Ok(_) => problem("message.key.columns", format!("message.key.columns: \"{entry}\" names no column")),
                Err(e) => problem(
                    "message.key.columns",
                    format!("message.key.columns: \"{table}\" is not a regular expression: {e}"),
                ),
            }
        }
    }
    let name_ok =
        |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let slot = value("slot.name").unwrap_or("debezium").to_string();
    if !name_ok(&slot) {
        problem(
            "slot.name",
            format!("slot.name=\"{slot}\" is not a replication slot name: use lower-case letters, digits and '_'"),
        );
    }
    let publication = value("publication.name").unwrap_or("dbz_publication").to_string();
    if !publication.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || publication.is_empty() {
        problem(
            "publication.name",
            format!("publication.name=\"{publication}\" is not a plain identifier: use letters, digits and '_'"),
        );
    }
    let boolean = |problem: &mut dyn FnMut(&str, String), key: &str| -> bool {
        match value(key).map(str::to_ascii_lowercase).as_deref() {
            Some("true") => true,
            Some("false") | None => false,
            Some(other) => {
                problem(key, format!("{key}=\"{other}\" is neither true nor false"));
                false
            }
        }
    };
    let drop_slot = boolean(&mut problem, "slot.drop.on.stop");
    let transaction_topic = boolean(&mut problem, "provide.transaction.metadata")
        .then(|| format!("{prefix}.{}", value("topic.transaction").unwrap_or("transaction")));
    let tombstones = boolean(&mut problem, "tombstones.on.delete");
    let autocreate = match value("publication.autocreate.mode").unwrap_or("all_tables") {
        "all_tables" => Autocreate::AllTables,
        "filtered" => Autocreate::Filtered,
        "no_tables" => Autocreate::NoTables,
        "disabled" => Autocreate::Disabled,
        other => {
            problem(
                "publication.autocreate.mode",
                format!(
                    "publication.autocreate.mode=\"{other}\" is not one of all_tables, filtered, no_tables, disabled"
                ),
            );
            Autocreate::AllTables
        }
    };
    let snapshot = match value("snapshot.mode").unwrap_or("initial") {
        "initial" => SnapshotMode::Initial,
        "initial_only" => SnapshotMode::InitialOnly,
        "no_data" => SnapshotMode::NoData,
        "when_needed" => SnapshotMode::WhenNeeded,
        "always" => SnapshotMode::Always,
        other @ ("configuration_based" | "custom" | "recovery") => {
            problem("snapshot.mode", format!("snapshot.mode=\"{other}\" is refused: {NOT_YET}; use initial, initial_only, no_data, when_needed or always"));
            SnapshotMode::Initial
        }
        other => {
            problem(
                "snapshot.mode",
                format!("snapshot.mode=\"{other}\" is not one of initial, initial_only, no_data, when_needed, always"),
            );
            SnapshotMode::Initial
        }
    };
    let fetch_size = number(&mut problem, "snapshot.fetch.size");
    let fetch_size = u32::try_from(fetch_size).ok().filter(|n| (1..=100_000).contains(n)).unwrap_or_else(|| {
        problem("snapshot.fetch.size", format!("snapshot.fetch.size={fetch_size} is outside 1 to 100000"));
        10_240
    });
    let mut skipped = Vec::new();
    for op in value("skipped.operations").unwrap_or("t").split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match op {
            "none" => skipped.clear(),
            "c" | "u" | "d" | "t" => skipped.extend(op.chars()),
            other => {
                problem("skipped.operations", format!("skipped.operations: \"{other}\" is not one of c, u, d, t, none"))
            }
        }
    }
    let heartbeat_ms = number(&mut problem, "heartbeat.interval.ms");
    let heartbeat_topic = format!("{}.{prefix}", value("topic.heartbeat.prefix").unwrap_or("__debezium-heartbeat"));
    let status_interval_ms = number(&mut problem, "status.update.interval.ms").max(100);
    let poll_interval_ms = number(&mut problem, "poll.interval.ms").max(1);
    let mut choice = |key: &str, choices: &[&str]| -> usize {
        let given = value(key).unwrap_or(choices[0]);
        choices.iter().position(|c| c.eq_ignore_ascii_case(given)).unwrap_or_else(|| {
            problem(key, format!("{key}=\"{given}\" is not one of {}", choices.join(", ")));
            0
        })
    };
    let modes = Modes {
        decimal: [DecimalMode::Precise, DecimalMode::Double, DecimalMode::String]
            [choice("decimal.handling.mode", &["precise", "double", "string"])],
        time: [
            TimeMode::Adaptive,
            TimeMode::AdaptiveTimeMicroseconds,
            TimeMode::Connect,
            TimeMode::IsoString,
            TimeMode::Microseconds,
            TimeMode::Nanoseconds,
        ][choice(
            "time.precision.mode",
            &["adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"],
        )],
        binary: [BinaryMode::Bytes, BinaryMode::Base64, BinaryMode::Base64UrlSafe, BinaryMode::Hex]
            [choice("binary.handling.mode", &["bytes", "base64", "base64-url-safe", "hex"])],
        interval_text: choice("interval.handling.mode", &["numeric", "string"]) == 1,
        hstore_map: choice("hstore.handling.mode", &["json", "map"]) == 1,
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Settings {
        host,
        port,
        user,
        password: last(pairs, "database.password").map(str::to_string),
        database,
        tls,
        tls_setting,
        prefix,
        schemas,
        tables,
        columns,
        snapshot_tables,
        key_columns: KeyColumns(key_columns),
        slot,
        drop_slot,
        publication,
        autocreate,
        snapshot,
        fetch_size,
        skipped,
        heartbeat_ms,
        heartbeat_topic,
        transaction_topic,
        heartbeat_query: last(pairs, "heartbeat.action.query").filter(|q| !q.is_empty()).map(str::to_string),
        status_interval_ms,
        tombstones,
        poll_interval_ms,
        modes,
    })
}

/// What the log says once about keys that change nothing, and keys Debezium does not have.
pub fn no_effect(pairs: &[(String, String)]) -> Vec<String> {
    let mut notes = Vec::new();
    for (key, _) in pairs {
        match KEYS.iter().find(|k| k.name == key) {
            Some(KeyDef { effect: Effect::Inert(why), .. }) => notes.push(format!("{key} has no effect: {why}")),
            Some(_) => {}
            None if is_worker_key(key) => {}
            None if key.starts_with("database.") || key.starts_with("driver.") => {
                notes.push(format!("{key} is passed to the JDBC driver by Debezium; it has no effect here"))
            }
            None => notes.push(format!("{key} is not a key of Debezium's PostgreSQL connector; it is ignored")),
        }
    }
    notes.dedup();
    notes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pairs(extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = [
            ("connector.class", "io.debezium.connector.postgresql.PostgresConnector"),
            ("database.hostname", "db"),
            ("database.user", "cdc"),
            ("database.dbname", "shop"),
            ("topic.prefix", "shop"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        p.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        p
    }

    #[test]
    fn debezium_defaults_apply() {
        let s = read(&pairs(&[])).unwrap();
        assert_eq!((s.port, s.slot.as_str(), s.publication.as_str()), (5432, "debezium", "dbz_publication"));
        assert_eq!(
            (s.snapshot, s.autocreate, s.skipped.clone()),
            (SnapshotMode::Initial, Autocreate::AllTables, vec!['t'])
        );
        assert_eq!(s.heartbeat_topic, "__debezium-heartbeat.shop");
        assert!(s.tombstones && !s.drop_slot);
    }

    #[test]
    fn filters_match_whole_names_ignoring_case() {
        let s = read(&pairs(&[("table.include.list", "public.orders,inventory\\..*")])).unwrap();
        assert!(s.tables.allows("public.orders") && s.tables.allows("Inventory.parts"));
        assert!(!s.tables.allows("public.orders_archive"));
        let s = read(&pairs(&[("message.key.columns", "public.orders:customer_id,at")])).unwrap();
        assert_eq!(s.key_columns.of("public.orders").unwrap(), ["customer_id", "at"]);
    }

    #[test]
    fn keys_not_built_and_bad_values_are_refused_by_name() {
        let problems = read(&pairs(&[
            ("unavailable.value.placeholder", "x"),
            ("snapshot.mode", "sometimes"),
            ("plugin.name", "decoderbufs"),
        ]))
        .unwrap_err();
        let keys: Vec<_> = problems.iter().map(|p| p.name.clone()).collect();
        assert_eq!(keys, ["plugin.name", "unavailable.value.placeholder", "snapshot.mode"]);
        assert!(problems[1].message.contains("not build it yet"), "{}", problems[1].message);
        let missing = read(&[]).unwrap_err();
        assert!(missing.iter().any(|p| p.name == "database.hostname"));
    }
}
