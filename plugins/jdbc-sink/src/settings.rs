//! The two key sets the sink reads, as the connectors people move from define them: Debezium's
//! JDBC sink (3.5) under `io.debezium.connector.jdbc.JdbcSinkConnector` (and the plugin's own
//! name), Confluent's (10.9) under `io.confluent.connect.jdbc.JdbcSinkConnector`. Each key of
//! either set is used, accepted as having no effect here (said once in the log), or refused by
//! name; a config with keys of the other set is refused.

use wharf_jdbc_url::{Driver, JdbcUrl, Tls};
use wharf_sdk::{ConfigKey, ConfigProblem, ConfigType, Importance};

pub const DEBEZIUM_CLASS: &str = "io.debezium.connector.jdbc.JdbcSinkConnector";
pub const CONFLUENT_CLASS: &str = "io.confluent.connect.jdbc.JdbcSinkConnector";

/// Whose key set and defaults a config follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Debezium,
    Confluent,
}

impl Flavor {
    /// By `connector.class`: Confluent's class name, or Debezium's set for anything else (its
    /// own class name and the plugin's name).
    pub fn of(class: Option<&str>) -> Flavor {
        match class.map(str::trim) {
            Some(CONFLUENT_CLASS) => Flavor::Confluent,
            Some(DEBEZIUM_CLASS) | Some(_) | None => Flavor::Debezium,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Flavor::Debezium => "Debezium's JDBC sink",
            Flavor::Confluent => "Confluent's JDBC sink",
        }
    }
}

/// Which key sets a key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sets {
    Both,
    Only(Flavor),
}

/// What the sink does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Read and acted on.
    Used,
    /// Accepted; it changes nothing here, for the reason given.
    Inert(&'static str),
    /// Accepted at its default; any other value is refused, for the reason given.
    DefaultOnly(&'static str),
}

struct KeyDef {
    name: &'static str,
    sets: Sets,
    ty: ConfigType,
    /// Per flavor: Debezium's, Confluent's.
    defaults: (Option<&'static str>, Option<&'static str>),
    importance: Importance,
    effect: Effect,
    doc: &'static str,
}

const DBZ: Sets = Sets::Only(Flavor::Debezium);
const CFL: Sets = Sets::Only(Flavor::Confluent);
const POOL: Effect = Effect::Inert("each task holds one connection, opened again when it is lost");

#[rustfmt::skip]
const KEYS: &[KeyDef] = &[
    KeyDef { name: "connection.url", sets: Sets::Both, ty: ConfigType::String, defaults: (None, None), importance: Importance::High, effect: Effect::Used,
        doc: "The JDBC URL of the database: jdbc:postgresql://host:port/database, jdbc:mariadb://host:port/database or jdbc:mysql://…, as their drivers read them. Its servers (and certificate files) are granted to the plugin within the worker's wasm.ceiling.*. TLS as the driver reads the URL: pgjdbc's sslmode (default prefer) and sslrootcert, MariaDB's sslMode (default disable) and serverSslCert, MySQL's sslMode (default PREFERRED); the worker verifies the certificate." },
    KeyDef { name: "connection.username", sets: DBZ, ty: ConfigType::String, defaults: (None, None), importance: Importance::High, effect: Effect::Used,
        doc: "The database user (Debezium's key; required under Debezium's class)." },
    KeyDef { name: "connection.user", sets: CFL, ty: ConfigType::String, defaults: (None, None), importance: Importance::High, effect: Effect::Used,
        doc: "The database user (Confluent's key)." },
    KeyDef { name: "connection.password", sets: Sets::Both, ty: ConfigType::Password, defaults: (None, None), importance: Importance::High, effect: Effect::Used,
        doc: "The database user's password." },
    KeyDef { name: "insert.mode", sets: Sets::Both, ty: ConfigType::String, defaults: (Some("insert"), Some("insert")), importance: Importance::High, effect: Effect::Used,
        doc: "insert (INSERT; a replayed record fails on its key), upsert (insert or update by primary key: a replay writes the same row) or update (UPDATE by primary key)." },
    KeyDef { name: "delete.enabled", sets: Sets::Both, ty: ConfigType::Boolean, defaults: (Some("false"), Some("false")), importance: Importance::Medium, effect: Effect::Used,
        doc: "A record with a null value (a tombstone), or a Debezium delete event, deletes the row of its key. Needs the primary key from the record key." },
    KeyDef { name: "truncate.enabled", sets: DBZ, ty: ConfigType::Boolean, defaults: (Some("false"), None), importance: Importance::Low, effect: Effect::Used,
        doc: "A Debezium truncate event (op=t) truncates the table." },
    KeyDef { name: "collection.name.format", sets: DBZ, ty: ConfigType::String, defaults: (Some("${topic}"), None), importance: Importance::Medium, effect: Effect::Used,
        doc: "The table a record goes to: ${topic} is the topic with its dots made underscores, ${source.<field>} a text field of a change event's source block (other records are skipped); a dot in the result separates the schema from the table." },
    KeyDef { name: "table.name.format", sets: Sets::Both, ty: ConfigType::String, defaults: (Some("${topic}"), Some("${topic}")), importance: Importance::Medium, effect: Effect::Used,
        doc: "Confluent's key for the table a record goes to (${topic} is the topic as it is, and schema.table names a schema); under Debezium's class the old name of collection.name.format." },
    KeyDef { name: "primary.key.mode", sets: DBZ, ty: ConfigType::String, defaults: (Some("none"), None), importance: Importance::High, effect: Effect::Used,
        doc: "Where the primary key comes from: none, kafka (__connect_topic, __connect_partition, __connect_offset), record_key, record_value or record_header (each header a key column)." },
    KeyDef { name: "primary.key.fields", sets: DBZ, ty: ConfigType::String, defaults: (None, None), importance: Importance::Low, effect: Effect::Used,
        doc: "The fields of the key (or value) that make the primary key, separated by commas; all by default." },
    KeyDef { name: "pk.mode", sets: CFL, ty: ConfigType::String, defaults: (None, Some("none")), importance: Importance::High, effect: Effect::Used,
        doc: "Confluent's primary key mode: none, kafka, record_key or record_value." },
    KeyDef { name: "pk.fields", sets: CFL, ty: ConfigType::List, defaults: (None, Some("")), importance: Importance::Medium, effect: Effect::Used,
        doc: "Confluent's primary key fields: for kafka, three column names (topic, partition, offset); for a primitive record key, its column's name; otherwise the fields that make the key." },
    KeyDef { name: "schema.evolution", sets: DBZ, ty: ConfigType::String, defaults: (Some("none"), None), importance: Importance::Low, effect: Effect::Used,
        doc: "none (the table must exist with every column), or basic (a missing table is created and missing columns are added, from the record's schema)." },
    KeyDef { name: "auto.create", sets: CFL, ty: ConfigType::Boolean, defaults: (None, Some("false")), importance: Importance::Medium, effect: Effect::Used,
        doc: "Create a missing table from the record's schema." },
    KeyDef { name: "auto.evolve", sets: CFL, ty: ConfigType::Boolean, defaults: (None, Some("false")), importance: Importance::Medium, effect: Effect::Used,
        doc: "Add the columns a record has and the table lacks." },
    KeyDef { name: "quote.identifiers", sets: DBZ, ty: ConfigType::Boolean, defaults: (Some("false"), None), importance: Importance::Low, effect: Effect::Used,
        doc: "Quote table and column names and keep their case; otherwise names are lower-cased and quoted only when they must be." },
    KeyDef { name: "quote.sql.identifiers", sets: CFL, ty: ConfigType::String, defaults: (None, Some("always")), importance: Importance::Medium, effect: Effect::Used,
        doc: "always or never quote table and column names." },
    KeyDef { name: "batch.size", sets: Sets::Both, ty: ConfigType::Int, defaults: (Some("500"), Some("3000")), importance: Importance::Medium, effect: Effect::Used,
        doc: "The most rows one statement writes (500 under Debezium's class, 3000 under Confluent's); fewer when the database's limit on parameters is reached first." },
    KeyDef { name: "use.reduction.buffer", sets: DBZ, ty: ConfigType::Boolean, defaults: (Some("false"), None), importance: Importance::Medium, effect: Effect::Used,
        doc: "Within a put, write only the last record of each primary key." },
    KeyDef { name: "field.include.list", sets: DBZ, ty: ConfigType::List, defaults: (None, None), importance: Importance::Medium, effect: Effect::Used,
        doc: "The value fields to write (field or topic:field), separated by commas; all by default." },
    KeyDef { name: "field.exclude.list", sets: DBZ, ty: ConfigType::List, defaults: (None, None), importance: Importance::Medium, effect: Effect::Used,
        doc: "The value fields not to write (field or topic:field), separated by commas." },
    KeyDef { name: "fields.whitelist", sets: CFL, ty: ConfigType::List, defaults: (None, Some("")), importance: Importance::Medium, effect: Effect::Used,
        doc: "The value fields to write besides the key, separated by commas; all when empty." },
    KeyDef { name: "use.time.zone", sets: DBZ, ty: ConfigType::String, defaults: (Some("UTC"), None), importance: Importance::Medium, effect: Effect::Used,
        doc: "A time zone (UTC, +02:00, Europe/Paris); as in Debezium 3.5, timestamps are written as their UTC time whatever it names." },
    KeyDef { name: "database.time_zone", sets: DBZ, ty: ConfigType::String, defaults: (Some("UTC"), None), importance: Importance::Medium, effect: Effect::Used,
        doc: "The old name of use.time.zone." },
    KeyDef { name: "db.timezone", sets: CFL, ty: ConfigType::String, defaults: (None, Some("UTC")), importance: Importance::Medium, effect: Effect::Used,
        doc: "The time zone timestamps are written in: UTC, a fixed offset (+02:00) or a zone of the IANA database (Europe/Paris), with its daylight saving." },
    KeyDef { name: "flush.max.retries", sets: DBZ, ty: ConfigType::Int, defaults: (Some("5"), None), importance: Importance::Low, effect: Effect::Used,
        doc: "How many times in a row a put that failed on the connection or a timeout is retried before the task fails." },
    KeyDef { name: "flush.retry.delay.ms", sets: DBZ, ty: ConfigType::Long, defaults: (Some("1000"), None), importance: Importance::Low, effect: Effect::Used,
        doc: "How long to wait before connecting again after the connection was lost." },
    KeyDef { name: "max.retries", sets: CFL, ty: ConfigType::Int, defaults: (None, Some("10")), importance: Importance::Medium, effect: Effect::Used,
        doc: "How many times in a row a put that failed on the connection or a timeout is retried before the task fails." },
    KeyDef { name: "retry.backoff.ms", sets: CFL, ty: ConfigType::Int, defaults: (None, Some("3000")), importance: Importance::Medium, effect: Effect::Used,
        doc: "How long to wait before connecting again after the connection was lost." },
    KeyDef { name: "connection.attempts", sets: CFL, ty: ConfigType::Int, defaults: (None, Some("3")), importance: Importance::Low, effect: Effect::Used,
        doc: "How many times one connection is tried before the put fails (and is retried)." },
    KeyDef { name: "connection.backoff.ms", sets: CFL, ty: ConfigType::Long, defaults: (None, Some("10000")), importance: Importance::Low, effect: Effect::Used,
        doc: "How long to wait between connection attempts, within the call's deadline." },
    KeyDef { name: "dialect.name", sets: CFL, ty: ConfigType::String, defaults: (None, Some("")), importance: Importance::Low, effect: Effect::Used,
        doc: "The dialect: empty (from the URL), PostgreSqlDatabaseDialect or MySqlDatabaseDialect." },
    KeyDef { name: "replace.null.with.default", sets: CFL, ty: ConfigType::Boolean, defaults: (None, Some("true")), importance: Importance::Low, effect: Effect::Used,
        doc: "A null field whose schema has a default is written as the default." },
    // Accepted, with no effect here.
    KeyDef { name: "connection.provider", sets: DBZ, ty: ConfigType::String, defaults: (Some("org.hibernate.c3p0.internal.C3P0ConnectionProvider"), None), importance: Importance::Low, effect: POOL, doc: "Hibernate's connection provider; no effect here." },
    KeyDef { name: "connection.pool.min_size", sets: DBZ, ty: ConfigType::Int, defaults: (Some("5"), None), importance: Importance::Low, effect: POOL, doc: "No effect here: each task holds one connection." },
    KeyDef { name: "connection.pool.max_size", sets: DBZ, ty: ConfigType::Int, defaults: (Some("32"), None), importance: Importance::Low, effect: POOL, doc: "No effect here: each task holds one connection." },
    KeyDef { name: "connection.pool.acquire_increment", sets: DBZ, ty: ConfigType::Int, defaults: (Some("32"), None), importance: Importance::Low, effect: POOL, doc: "No effect here: each task holds one connection." },
    KeyDef { name: "connection.pool.timeout", sets: DBZ, ty: ConfigType::Long, defaults: (Some("1800"), None), importance: Importance::Low, effect: POOL, doc: "No effect here (nor in Debezium)." },
    KeyDef { name: "connection.restart.on.errors", sets: DBZ, ty: ConfigType::Boolean, defaults: (Some("false"), None), importance: Importance::Low, effect: Effect::Inert("a lost connection is always opened again"), doc: "No effect here: a lost connection is always opened again." },
    KeyDef { name: "collection.table.format", sets: DBZ, ty: ConfigType::String, defaults: (Some("${table}"), None), importance: Importance::Medium, effect: Effect::Inert("Debezium reads it nowhere either"), doc: "No effect (nor in Debezium)." },
    KeyDef { name: "dialect.postgres.postgis.schema", sets: DBZ, ty: ConfigType::String, defaults: (Some("public"), None), importance: Importance::Low, effect: Effect::Inert("geometry types are not written"), doc: "No effect here: geometry types are not written." },
    KeyDef { name: "dialect.postgres.unnest.insert.enabled", sets: DBZ, ty: ConfigType::Boolean, defaults: (Some("false"), None), importance: Importance::Medium, effect: Effect::Inert("rows are always written by multi-row statements"), doc: "No effect here: rows are always written by multi-row statements." },
    KeyDef { name: "dialect.sqlserver.identity.insert", sets: DBZ, ty: ConfigType::Boolean, defaults: (Some("false"), None), importance: Importance::Low, effect: Effect::Inert("SQL Server is not written to"), doc: "No effect here: SQL Server is not written to." },
    KeyDef { name: "mssql.use.merge.holdlock", sets: CFL, ty: ConfigType::Boolean, defaults: (None, Some("true")), importance: Importance::Low, effect: Effect::Inert("SQL Server is not written to"), doc: "No effect here: SQL Server is not written to." },
    KeyDef { name: "trim.sensitive.log", sets: CFL, ty: ConfigType::Boolean, defaults: (None, Some("false")), importance: Importance::Low, effect: Effect::Inert("values and statements are never logged"), doc: "No effect here: values and statements are never logged." },
    KeyDef { name: "table.types", sets: CFL, ty: ConfigType::List, defaults: (None, Some("TABLE")), importance: Importance::Low, effect: Effect::Inert("any table or view of the name is written to"), doc: "No effect here: any table or view of the name is written to." },
    KeyDef { name: "date.calendar.system", sets: CFL, ty: ConfigType::String, defaults: (None, Some("LEGACY")), importance: Importance::Low, effect: Effect::Inert("dates are written in the proleptic Gregorian calendar, which agrees with LEGACY after 1582"), doc: "No effect here: dates are written in the proleptic Gregorian calendar." },
    // Accepted at their defaults only.
    KeyDef { name: "collection.naming.strategy", sets: DBZ, ty: ConfigType::String, defaults: (Some("io.debezium.sink.naming.DefaultCollectionNamingStrategy"), None), importance: Importance::Low, effect: Effect::DefaultOnly("a Java class cannot run here"), doc: "Only the default strategy." },
    KeyDef { name: "table.naming.strategy", sets: DBZ, ty: ConfigType::String, defaults: (Some("io.debezium.sink.naming.DefaultCollectionNamingStrategy"), None), importance: Importance::Low, effect: Effect::DefaultOnly("a Java class cannot run here"), doc: "The old name of collection.naming.strategy; only the default." },
    KeyDef { name: "column.naming.strategy", sets: DBZ, ty: ConfigType::String, defaults: (Some("io.debezium.connector.jdbc.naming.DefaultColumnNamingStrategy"), None), importance: Importance::Low, effect: Effect::DefaultOnly("a Java class cannot run here"), doc: "Only the default strategy (a column is named as its field)." },
    KeyDef { name: "cloud.events.schema.name.pattern", sets: DBZ, ty: ConfigType::String, defaults: (Some(".*CloudEvents\\.Envelope$"), None), importance: Importance::Low, effect: Effect::Inert("CloudEvents envelopes are written as any other record"), doc: "No effect here: CloudEvents envelopes are not unwrapped." },
    KeyDef { name: "jdbc.credentials.provider.class", sets: CFL, ty: ConfigType::String, defaults: (None, Some("io.confluent.connect.jdbc.util.DefaultJdbcCredentialsProvider")), importance: Importance::Low, effect: Effect::DefaultOnly("a Java class cannot run here; use a config provider (${file:…}, ${env:…}) for the password"), doc: "Only the default provider." },
    KeyDef { name: "date.timezone", sets: CFL, ty: ConfigType::String, defaults: (None, Some("DB_TIMEZONE")), importance: Importance::Low, effect: Effect::DefaultOnly("dates are written as they are, in no zone"), doc: "Only DB_TIMEZONE." },
    KeyDef { name: "timestamp.fields.list", sets: CFL, ty: ConfigType::List, defaults: (None, Some("")), importance: Importance::Medium, effect: Effect::Used, doc: "Record value fields of int64 or string written as timestamps: the number (or its text) counts timestamp.precision.mode units since the epoch." },
    KeyDef { name: "timestamp.precision.mode", sets: CFL, ty: ConfigType::String, defaults: (None, Some("MICROSECONDS")), importance: Importance::Low, effect: Effect::Used, doc: "The unit of timestamp.fields.list: microseconds or nanoseconds (written to the microsecond)." },
    KeyDef { name: "string.output.value.column.name", sets: CFL, ty: ConfigType::String, defaults: (None, Some("record_value")), importance: Importance::Low, effect: Effect::Used, doc: "The column of a record whose value is a plain string." },
];

/// Keys the worker reads, which belong to neither set.
fn is_worker_key(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "name",
        "connector.class",
        "tasks.max",
        "topics",
        "topics.regex",
        "connector.version",
        "connector.plugin.version",
        "config.action.reload",
    ];
    const PREFIXES: &[&str] = &[
        "key.converter",
        "value.converter",
        "header.converter",
        "transforms",
        "predicates",
        "errors.",
        "consumer.override.",
        "wasm.",
        "topic.creation.",
    ];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// The keys of both sets, for `describe`: a key whose default differs by set shows none, and its
/// documentation says both.
pub fn definitions() -> Vec<ConfigKey> {
    KEYS.iter()
        .map(|k| {
            let default = match k.sets {
                Sets::Only(Flavor::Debezium) => k.defaults.0,
                Sets::Only(Flavor::Confluent) => k.defaults.1,
                Sets::Both if k.defaults.0 == k.defaults.1 => k.defaults.0,
                Sets::Both => None,
            };
            let set = match k.sets {
                Sets::Both => "both",
                Sets::Only(Flavor::Debezium) => "Debezium",
                Sets::Only(Flavor::Confluent) => "Confluent",
            };
            ConfigKey {
                name: k.name.to_string(),
                type_: k.ty,
                default_value: default.map(str::to_string),
                required: k.name == "connection.url",
                importance: k.importance,
                documentation: k.doc.to_string(),
                group: Some(set.to_string()),
            }
        })
        .collect()
}

/// How records become rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertMode {
    Insert,
    Upsert,
    Update,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PkMode {
    None,
    Kafka,
    RecordKey,
    RecordValue,
    /// Debezium's `record_header`: the headers as the fields of a key struct.
    RecordHeader,
}

/// How table and column names are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quoting {
    /// Always quoted, case kept (Confluent's default, Debezium's `quote.identifiers=true`).
    Always,
    /// Lower-cased, quoted only when a name needs it (Debezium's default).
    Lowered,
    /// As given, never quoted (Confluent's `never`).
    Never,
}

/// A config, read.
#[derive(Debug, Clone)]
pub struct Settings {
    pub flavor: Flavor,
    pub url: JdbcUrl,
    /// What the connections do about TLS, as the URL's driver reads it.
    pub tls: Tls,
    pub user: String,
    pub password: Option<String>,
    pub insert_mode: InsertMode,
    pub pk_mode: PkMode,
    pub pk_fields: Vec<String>,
    pub delete_enabled: bool,
    pub truncate_enabled: bool,
    pub create_tables: bool,
    pub evolve_tables: bool,
    pub table_format: String,
    /// Debezium makes a topic's dots underscores in `${topic}`.
    pub topic_dots_to_underscores: bool,
    pub quoting: Quoting,
    pub batch_size: usize,
    pub reduce: bool,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// Seconds east of UTC.
    pub zone: Zone,
    pub max_retries: u32,
    pub retry_backoff_ms: u64,
    pub connection_attempts: u32,
    pub connection_backoff_ms: u64,
    pub replace_null_with_default: bool,
    pub string_value_column: String,
    /// Confluent's `timestamp.fields.list`: value fields of int64 or string written as timestamps.
    pub timestamp_fields: Vec<String>,
    /// Units a second of those fields (`timestamp.precision.mode`).
    pub timestamp_units: i64,
}

/// The most rows one statement may write, whatever `batch.size` asks.
pub const MAX_BATCH_SIZE: usize = 100_000;

/// A config being read: its pairs, its flavor, and every problem found.
struct Reading<'a> {
    pairs: &'a [(String, String)],
    flavor: Flavor,
    problems: Vec<ConfigProblem>,
}

impl Reading<'_> {
    fn raw(&self, key: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.trim())
    }

    fn def(&self, key: &str) -> Option<&'static KeyDef> {
        KEYS.iter().find(|k| k.name == key)
    }

    /// A key's value, or its default in this flavor.
    fn get(&self, key: &str) -> Option<String> {
        match self.raw(key) {
            Some(v) => Some(v.to_string()),
            None => {
                let def = self.def(key)?;
                match self.flavor {
                    Flavor::Debezium => def.defaults.0,
                    Flavor::Confluent => def.defaults.1,
                }
                .map(str::to_string)
            }
        }
    }

    fn problem(&mut self, key: &str, message: String) {
        self.problems.push(ConfigProblem { name: key.to_string(), message });
    }

    fn flag(&mut self, key: &str) -> bool {
        match self.get(key).as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                self.problem(key, format!("{key}={other} is not a boolean: set it to true or false"));
                false
            }
        }
    }

    fn number(&mut self, key: &str, min: i64, max: i64) -> i64 {
        let value = self.get(key).unwrap_or_default();
        match value.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => n,
            _ => {
                self.problem(key, format!("{key}={value} is not a whole number from {min} to {max}"));
                min
            }
        }
    }

    /// One of `choices` (in any case), or the first with the problem noted.
    fn choice<T: Copy>(&mut self, key: &str, choices: &[(&str, T)]) -> T {
        let value = self.get(key).unwrap_or_default();
        match choices.iter().find(|(name, _)| name.eq_ignore_ascii_case(&value)) {
            Some((_, choice)) => *choice,
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.problem(key, format!("{key}={value} is not one of {}", names.join(", ")));
                choices[0].1
            }
        }
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// Reads a connector (or task) config; the error lists every problem, each naming its key.
pub fn read(pairs: &[(String, String)]) -> Result<Settings, Vec<ConfigProblem>> {
    let flavor = Flavor::of(pairs.iter().rev().find(|(k, _)| k == "connector.class").map(|(_, v)| v.as_str()));
    let mut r = Reading { pairs, flavor, problems: Vec::new() };
    check_keys(&mut r);

    let url = match r.raw("connection.url").filter(|u| !u.is_empty()) {
        None => {
            r.problem("connection.url", "connection.url is required: set it to the database's JDBC URL, for example jdbc:postgresql://db.example.com:5432/inventory".into());
            None
        }
        Some(text) => match JdbcUrl::parse(text) {
            Ok(url) => Some(url),
            Err(e) => {
                r.problem("connection.url", format!("connection.url {e}"));
                None
            }
        },
    };
    if let Some(url) = &url {
        if url.database.is_none() {
            r.problem(
                "connection.url",
                format!(
                    "connection.url ({}) names no database: add it after the host, as in jdbc:{}://host/inventory",
                    url.redacted(),
                    url.driver.subprotocol()
                ),
            );
        }
        if let Err(e) = url.tls() {
            r.problem("connection.url", format!("connection.url: {e}"));
        }
    }
    let user_key = match flavor {
        Flavor::Debezium => "connection.username",
        Flavor::Confluent => "connection.user",
    };
    let user = r
        .get(user_key)
        .filter(|u| !u.is_empty())
        .or_else(|| url.as_ref().and_then(|u| u.property("user")).map(str::to_string));
    let user = match user {
        Some(user) => user,
        None => {
            r.problem(user_key, format!("{user_key} is required: set it to the database user the sink signs in as"));
            String::new()
        }
    };
    let password = r
        .raw("connection.password")
        .map(str::to_string)
        .or_else(|| url.as_ref().and_then(|u| u.property("password")).map(str::to_string));

    let insert_mode = r.choice(
        "insert.mode",
        &[("insert", InsertMode::Insert), ("upsert", InsertMode::Upsert), ("update", InsertMode::Update)],
    );
    let (pk_key, fields_key) = match flavor {
        Flavor::Debezium => ("primary.key.mode", "primary.key.fields"),
        Flavor::Confluent => ("pk.mode", "pk.fields"),
    };
    let pk_modes: &[(&str, PkMode)] = &[
        ("none", PkMode::None),
        ("kafka", PkMode::Kafka),
        ("record_key", PkMode::RecordKey),
        ("record_value", PkMode::RecordValue),
        ("record_header", PkMode::RecordHeader),
    ];
    // Confluent's sink has no record_header.
    let pk_mode = r.choice(pk_key, if flavor == Flavor::Debezium { pk_modes } else { &pk_modes[..4] });
    let pk_fields = r.list(fields_key);
    if flavor == Flavor::Confluent && pk_mode == PkMode::Kafka && !pk_fields.is_empty() && pk_fields.len() != 3 {
        r.problem(
            fields_key,
            format!(
                "{fields_key} with pk.mode=kafka names the three columns of topic, partition and offset; it names {}",
                pk_fields.len()
            ),
        );
    }
    let delete_enabled = r.flag("delete.enabled");
    if delete_enabled && pk_mode != PkMode::RecordKey {
        r.problem(
            "delete.enabled",
            format!("delete.enabled=true needs {pk_key}=record_key: a delete finds its row by the record's key"),
        );
    }
    if matches!(insert_mode, InsertMode::Upsert | InsertMode::Update) && pk_mode == PkMode::None {
        let mode = if insert_mode == InsertMode::Upsert { "upsert" } else { "update" };
        r.problem(
            pk_key,
            format!(
                "insert.mode={mode} finds rows by their primary key: set {pk_key} to record_key, record_value or kafka"
            ),
        );
    }
    let truncate_enabled = flavor == Flavor::Debezium && r.flag("truncate.enabled");
    let (create_tables, evolve_tables) = match flavor {
        Flavor::Debezium => {
            let basic = r.choice("schema.evolution", &[("none", false), ("basic", true)]);
            (basic, basic)
        }
        Flavor::Confluent => (r.flag("auto.create"), r.flag("auto.evolve")),
    };
    let table_format = match flavor {
        Flavor::Debezium => r
            .raw("collection.name.format")
            .or_else(|| r.raw("table.name.format"))
            .map(str::to_string)
            .unwrap_or_else(|| "${topic}".to_string()),
        Flavor::Confluent => r.get("table.name.format").unwrap_or_else(|| "${topic}".to_string()),
    };
    if table_format.trim().is_empty() {
        r.problem(
            "table.name.format",
            "the table name format is empty: leave it out for ${topic}, or name a table".into(),
        );
    }
    if flavor == Flavor::Confluent && table_format.contains("${source.") {
        r.problem(
            "table.name.format",
            "table.name.format: ${source.…} is Debezium's (collection.name.format); Confluent's sink replaces only ${topic}"
                .into(),
        );
    }
    let quoting = match flavor {
        Flavor::Debezium => match r.flag("quote.identifiers") {
            true => Quoting::Always,
            false => Quoting::Lowered,
        },
        Flavor::Confluent => {
            r.choice("quote.sql.identifiers", &[("always", Quoting::Always), ("never", Quoting::Never)])
        }
    };
    let batch_size = r.number("batch.size", 1, MAX_BATCH_SIZE as i64) as usize;
    let reduce = flavor == Flavor::Debezium && r.flag("use.reduction.buffer");
    let (include, exclude) = match flavor {
        Flavor::Debezium => (r.list("field.include.list"), r.list("field.exclude.list")),
        Flavor::Confluent => (r.list("fields.whitelist"), Vec::new()),
    };
    if !include.is_empty() && !exclude.is_empty() {
        r.problem("field.exclude.list", "field.include.list and field.exclude.list are both set; keep one".into());
    }
    let zone_key = match flavor {
        Flavor::Debezium if r.raw("use.time.zone").is_none() && r.raw("database.time_zone").is_some() => {
            "database.time_zone"
        }
        Flavor::Debezium => "use.time.zone",
        Flavor::Confluent => "db.timezone",
    };
    let zone = r.get(zone_key).unwrap_or_else(|| "UTC".into());
    let zone = match Zone::named(&zone) {
        // Debezium 3.5 binds timestamps as their UTC time whatever the zone (jdbc_interop shows
        // it): the zone is checked, and written by Confluent's class only.
        Some(_) if flavor == Flavor::Debezium => Zone::UTC,
        Some(zone) => zone,
        None => {
            r.problem(zone_key, format!("{zone_key}={zone} is not a time zone: name one of the IANA database (Europe/Paris, America/New_York), UTC, or a fixed offset (+02:00, -05:30)"));
            Zone::UTC
        }
    };
    let (max_retries, retry_backoff_ms) = match flavor {
        Flavor::Debezium => {
            (r.number("flush.max.retries", 0, 1_000_000), r.number("flush.retry.delay.ms", 0, 3_600_000))
        }
        Flavor::Confluent => (r.number("max.retries", 0, 1_000_000), r.number("retry.backoff.ms", 0, 3_600_000)),
    };
    let (connection_attempts, connection_backoff_ms) = match flavor {
        Flavor::Debezium => (1, 0),
        Flavor::Confluent => {
            (r.number("connection.attempts", 1, 1000), r.number("connection.backoff.ms", 0, 3_600_000))
        }
    };
    if flavor == Flavor::Confluent {
        let dialect = r.get("dialect.name").unwrap_or_default();
        let of_url = url.as_ref().map(|u| match u.driver {
            Driver::Postgres => "PostgreSqlDatabaseDialect",
            Driver::MariaDb | Driver::MySql => "MySqlDatabaseDialect",
        });
        if !dialect.is_empty() && Some(dialect.as_str()) != of_url {
            r.problem(
                "dialect.name",
                format!(
                    "dialect.name={dialect} does not speak the database connection.url names ({}); leave it empty to \
                     follow the URL",
                    of_url.unwrap_or("none")
                ),
            );
        }
    }
    let replace_null_with_default = flavor == Flavor::Confluent && r.flag("replace.null.with.default");
    let string_value_column = r.get("string.output.value.column.name").unwrap_or_else(|| "record_value".into());
    let (timestamp_fields, timestamp_units) = match flavor {
        Flavor::Confluent => (
            r.list("timestamp.fields.list"),
            r.choice("timestamp.precision.mode", &[("microseconds", 1_000_000), ("nanoseconds", 1_000_000_000)]),
        ),
        Flavor::Debezium => (Vec::new(), 1_000_000),
    };

    if !r.problems.is_empty() {
        return Err(r.problems);
    }
    let Some(url) = url else { return Err(r.problems) };
    let Ok(tls) = url.tls() else { return Err(r.problems) };
    Ok(Settings {
        flavor,
        url,
        tls,
        user,
        password,
        insert_mode,
        pk_mode,
        pk_fields,
        delete_enabled,
        truncate_enabled,
        create_tables,
        evolve_tables,
        topic_dots_to_underscores: flavor == Flavor::Debezium,
        table_format,
        quoting,
        batch_size,
        reduce,
        include,
        exclude,
        zone,
        max_retries: max_retries as u32,
        retry_backoff_ms: retry_backoff_ms as u64,
        connection_attempts: connection_attempts as u32,
        connection_backoff_ms: connection_backoff_ms as u64,
        replace_null_with_default,
        string_value_column,
        timestamp_fields,
        timestamp_units,
    })
}

/// Refuses keys of the other set and keys held at their defaults that are not; notes those that
/// have no effect here, for the task to log.
fn check_keys(r: &mut Reading<'_>) {
    let other = match r.flavor {
        Flavor::Debezium => Flavor::Confluent,
        Flavor::Confluent => Flavor::Debezium,
    };
    let mut seen: Vec<&str> = Vec::new();
    for (key, value) in r.pairs {
        if seen.contains(&key.as_str()) || is_worker_key(key) {
            continue;
        }
        seen.push(key);
        if r.flavor == Flavor::Debezium && key.starts_with("hibernate.") {
            continue; // Hibernate's settings: accepted, no effect (see `no_effect`)
        }
        let Some(def) = r.def(key) else { continue };
        if def.sets == Sets::Only(other) {
            let message = format!(
                "{key} is {}'s key, and connector.class makes this config {}'s; write the config in one set of keys",
                other.name(),
                r.flavor.name()
            );
            r.problem(key, message);
            continue;
        }
        if let Effect::DefaultOnly(why) = def.effect {
            let default = match r.flavor {
                Flavor::Debezium => def.defaults.0,
                Flavor::Confluent => def.defaults.1,
            };
            if !default.is_some_and(|d| d.eq_ignore_ascii_case(value.trim())) {
                let message = format!("{key}={} is not supported: {why}; leave it out", value.trim());
                r.problem(key, message);
            }
        }
    }
}

/// The keys of `pairs` that change nothing here, each with why: those accepted without effect,
/// and those neither set has (a typo, say), for the task to say once in the log.
pub fn no_effect(pairs: &[(String, String)]) -> Vec<String> {
    let flavor = Flavor::of(pairs.iter().rev().find(|(k, _)| k == "connector.class").map(|(_, v)| v.as_str()));
    let mut notes = Vec::new();
    for (key, value) in pairs {
        if flavor == Flavor::Debezium && key.starts_with("hibernate.") {
            notes.push(format!("{key} has no effect: Hibernate is not used"));
        } else if flavor == Flavor::Debezium
            && (key == "use.time.zone" || key == "database.time_zone")
            && zone_offset(value) != Some(0)
        {
            notes.push(format!(
                "{key}={} changes no value written: timestamps are written as their UTC time, as Debezium's JDBC \
                 sink 3.5 writes them whatever the zone",
                value.trim()
            ));
        } else if let Some(KeyDef { effect: Effect::Inert(why), .. }) = KEYS.iter().find(|k| k.name == key) {
            notes.push(format!("{key} has no effect: {why}"));
        } else if !is_worker_key(key) && !KEYS.iter().any(|k| k.name == key) {
            notes.push(format!("{key} is not a key of {}; it is ignored", flavor.name()));
        }
    }
    notes.dedup();
    notes
}

/// The zone timestamps are written in (`use.time.zone`, `db.timezone`): the wall-clock time
/// there of each instant, as the references bind them through JDBC.
#[derive(Debug, Clone)]
pub enum Zone {
    /// A fixed offset from UTC, in seconds.
    Fixed(i32),
    /// A zone of the IANA database (bundled into the plugin), with its daylight saving.
    Named(jiff::tz::TimeZone),
}

impl Zone {
    pub const UTC: Zone = Zone::Fixed(0);

    /// The zone a config names: UTC, a fixed offset, or an IANA zone; none when it names none.
    pub fn named(name: &str) -> Option<Zone> {
        match zone_offset(name) {
            Some(offset) => Some(Zone::Fixed(offset)),
            None => jiff::tz::TimeZone::get(name.trim()).ok().map(Zone::Named),
        }
    }

    /// Seconds from UTC of the zone's clocks at an instant (microseconds since the epoch).
    pub fn offset_at(&self, micros: i64) -> i32 {
        match self {
            Zone::Fixed(offset) => *offset,
            Zone::Named(zone) => {
                jiff::Timestamp::from_microsecond(micros).map_or(0, |instant| zone.to_offset(instant).seconds())
            }
        }
    }
}

/// Seconds east of UTC for `UTC`, `Z`, `GMT`, `Etc/UTC` or a fixed offset (`+02:00`, `-0530`,
/// `UTC+1`).
fn zone_offset(zone: &str) -> Option<i32> {
    let zone = zone.trim();
    if ["UTC", "Z", "GMT", "Etc/UTC", "Etc/GMT", "UT"].iter().any(|z| z.eq_ignore_ascii_case(zone)) {
        return Some(0);
    }
    let offset = zone.strip_prefix("UTC").or_else(|| zone.strip_prefix("GMT")).unwrap_or(zone);
    let (sign, rest) = match offset.as_bytes().first()? {
        b'+' => (1, &offset[1..]),
        b'-' => (-1, &offset[1..]),
        _ => return None,
    };
    let (hours, minutes) = match rest.split_once(':') {
        Some((h, m)) => (h, m),
        None if rest.len() == 4 => rest.split_at(2),
        None => (rest, "0"),
    };
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if !(0..=18).contains(&hours) || !(0..60).contains(&minutes) {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn problems(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        read(&config(pairs)).unwrap_err().into_iter().map(|p| (p.name, p.message)).collect()
    }

    const URL: (&str, &str) = ("connection.url", "jdbc:postgresql://db:5432/shop");

    #[test]
    fn connector_class_chooses_the_key_set_and_its_defaults() {
        let dbz = read(&config(&[("connector.class", DEBEZIUM_CLASS), URL, ("connection.username", "app")])).unwrap();
        assert_eq!((dbz.flavor, dbz.batch_size, dbz.quoting), (Flavor::Debezium, 500, Quoting::Lowered));
        assert!(dbz.topic_dots_to_underscores && !dbz.create_tables);
        let cfl = read(&config(&[("connector.class", CONFLUENT_CLASS), URL, ("connection.user", "app")])).unwrap();
        assert_eq!((cfl.flavor, cfl.batch_size, cfl.quoting), (Flavor::Confluent, 3000, Quoting::Always));
        assert!(!cfl.topic_dots_to_underscores && cfl.replace_null_with_default);
        let own = read(&config(&[("connector.class", "jdbc-sink"), URL, ("connection.username", "app")])).unwrap();
        assert_eq!(own.flavor, Flavor::Debezium);
    }

    #[test]
    fn a_config_that_mixes_the_two_sets_is_refused_naming_each_key() {
        let found = problems(&[
            ("connector.class", DEBEZIUM_CLASS),
            URL,
            ("connection.username", "a"),
            ("pk.mode", "kafka"),
            ("auto.create", "true"),
        ]);
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["pk.mode", "auto.create"]);
        assert!(
            found[0].1.contains(
                "pk.mode is Confluent's JDBC sink's key, and connector.class makes this config Debezium's JDBC sink's"
            ),
            "{}",
            found[0].1
        );
    }

    #[test]
    fn inconsistent_keys_are_refused_with_the_key_named() {
        let found = problems(&[
            ("connector.class", DEBEZIUM_CLASS),
            URL,
            ("connection.username", "a"),
            ("insert.mode", "upsert"),
            ("delete.enabled", "true"),
        ]);
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["delete.enabled", "primary.key.mode"]);
        let found = problems(&[("connector.class", CONFLUENT_CLASS), ("connection.url", "postgres://x/y")]);
        assert!(
            found.iter().any(|(k, m)| k == "connection.url" && m.starts_with("connection.url is not a JDBC URL")),
            "{found:?}"
        );
        assert!(found.iter().any(|(k, _)| k == "connection.user"), "{found:?}");
        let found = problems(&[
            ("connector.class", CONFLUENT_CLASS),
            URL,
            ("connection.user", "a"),
            ("insert.mode", "merge"),
            ("batch.size", "0"),
            ("db.timezone", "Europe/Atlantis"),
            ("timestamp.precision.mode", "millis"),
        ]);
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["insert.mode", "batch.size", "db.timezone", "timestamp.precision.mode"]);
        let maria = [
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:mariadb://db/shop"),
            ("connection.username", "a"),
        ];
        assert!(read(&config(&maria)).is_ok());
        let found = problems(&[
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop?sslmode=verify-full&sslcert=/etc/pg/client.pem"),
            ("connection.username", "a"),
        ]);
        assert!(found[0].1.starts_with("connection.url: sslcert asks for a client certificate"), "{found:?}");
        let verified = [
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop?sslmode=verify-full&sslrootcert=/etc/pg/ca.pem"),
            ("connection.username", "a"),
        ];
        assert_eq!(read(&config(&verified)).map(|s| s.tls.mode).ok(), Some(wharf_jdbc_url::TlsMode::VerifyFull));
        let plain = [
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop?sslmode=disable"),
            ("connection.username", "a"),
        ];
        assert!(read(&config(&plain)).is_ok());
        let found = problems(&[
            ("connector.class", CONFLUENT_CLASS),
            ("connection.url", "jdbc:mariadb://db/shop?sslMode=verify-every-thing"),
            ("connection.user", "a"),
            ("date.timezone", "db_timezone"),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn keys_without_effect_are_accepted_and_named_for_the_log() {
        let pairs = config(&[
            ("connector.class", DEBEZIUM_CLASS),
            URL,
            ("connection.username", "a"),
            ("connection.pool.max_size", "10"),
            ("hibernate.c3p0.idle_test_period", "300"),
        ]);
        assert!(read(&pairs).is_ok());
        let mut pairs = pairs;
        pairs.push(("insert.mdoe".into(), "upsert".into()));
        let notes = no_effect(&pairs);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert_eq!(notes[2], "insert.mdoe is not a key of Debezium's JDBC sink; it is ignored");
        assert!(notes[0].starts_with("connection.pool.max_size has no effect"));
    }

    #[test]
    fn time_zones_are_utc_fixed_offsets_or_iana_zones_with_their_daylight_saving() {
        assert_eq!(zone_offset("UTC"), Some(0));
        assert_eq!(zone_offset("+02:00"), Some(7200));
        assert_eq!(zone_offset("-0530"), Some(-19800));
        assert_eq!(zone_offset("UTC+1"), Some(3600));
        assert_eq!(zone_offset("Europe/Paris"), None);
        assert_eq!(zone_offset("+25:00"), None);
        let paris = Zone::named("Europe/Paris").unwrap();
        // 2024-01-15 and 2024-07-15, noon UTC: winter and summer time.
        assert_eq!(paris.offset_at(1_705_320_000_000_000), 3600);
        assert_eq!(paris.offset_at(1_721_044_800_000_000), 7200);
        // 2024-03-31 00:59:59 and 01:00:00 UTC, either side of the change.
        assert_eq!(paris.offset_at(1_711_846_799_000_000), 3600);
        assert_eq!(paris.offset_at(1_711_846_800_000_000), 7200);
        assert_eq!(Zone::named(" America/New_York ").unwrap().offset_at(1_705_320_000_000_000), -18_000);
        assert!(Zone::named("Mars/Olympus").is_none());
        let problems = read(&config(&[
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop"),
            ("connection.username", "u"),
            ("database.time_zone", "Mars/Olympus"),
        ]))
        .unwrap_err();
        assert!(problems.iter().any(|p| p.name == "database.time_zone" && p.message.contains("IANA")), "{problems:?}");
        // Debezium's class writes UTC whatever the zone, and says so; Confluent's moves into it.
        let debezium = config(&[
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop"),
            ("connection.username", "u"),
            ("use.time.zone", "Europe/Paris"),
        ]);
        assert!(matches!(read(&debezium).unwrap().zone, Zone::Fixed(0)));
        assert!(no_effect(&debezium).iter().any(|n| n.starts_with("use.time.zone=Europe/Paris changes no value")));
        let confluent = config(&[
            ("connector.class", CONFLUENT_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop"),
            ("connection.user", "u"),
            ("db.timezone", "Europe/Paris"),
        ]);
        assert!(matches!(read(&confluent).unwrap().zone, Zone::Named(_)));
        assert!(no_effect(&confluent).is_empty());
    }

    #[test]
    fn the_password_may_come_from_the_url_and_the_user_too() {
        let s = read(&config(&[
            ("connector.class", DEBEZIUM_CLASS),
            ("connection.url", "jdbc:postgresql://db/shop?user=u&password=p"),
        ]))
        .unwrap();
        assert_eq!((s.user.as_str(), s.password.as_deref()), ("u", Some("p")));
    }
}
