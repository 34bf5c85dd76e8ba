//! The SQL of each database as each reference writes it: column types for Connect's schemas
//! (and, under Debezium's class, Debezium's semantic types), values as literals or parameters
//! the database reads, names quoted as the config asks, and the statements (CREATE, ALTER,
//! INSERT, upsert, UPDATE, DELETE, TRUNCATE). PostgreSQL takes values as `$n` parameters;
//! MariaDB as literals in the statement, strings in hexadecimal, so that no value is read as
//! SQL.

use wharf_jdbc_url::Driver;
use wharf_sdk::data::{Schema, Type, Value};

use crate::db::{Param, Sql};
use crate::rows::{Cell, TableId};
use crate::settings::{Flavor, Quoting, Zone};

/// Names Debezium's types go by.
pub(crate) mod names {
    pub const DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";
    pub const DATE: &str = "org.apache.kafka.connect.data.Date";
    pub const TIME: &str = "org.apache.kafka.connect.data.Time";
    pub const TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";
    pub const DBZ_DATE: &str = "io.debezium.time.Date";
    pub const DBZ_TIME: &str = "io.debezium.time.Time";
    pub const DBZ_MICRO_TIME: &str = "io.debezium.time.MicroTime";
    pub const DBZ_NANO_TIME: &str = "io.debezium.time.NanoTime";
    pub const DBZ_TIMESTAMP: &str = "io.debezium.time.Timestamp";
    pub const DBZ_MICRO_TIMESTAMP: &str = "io.debezium.time.MicroTimestamp";
    pub const DBZ_NANO_TIMESTAMP: &str = "io.debezium.time.NanoTimestamp";
    pub const DBZ_ZONED_TIMESTAMP: &str = "io.debezium.time.ZonedTimestamp";
    pub const DBZ_ZONED_TIME: &str = "io.debezium.time.ZonedTime";
    pub const DBZ_MICRO_DURATION: &str = "io.debezium.time.MicroDuration";
    pub const DBZ_YEAR: &str = "io.debezium.time.Year";
    pub const DBZ_JSON: &str = "io.debezium.data.Json";
    pub const DBZ_UUID: &str = "io.debezium.data.Uuid";
    pub const DBZ_ENUM: &str = "io.debezium.data.Enum";
    pub const DBZ_XML: &str = "io.debezium.data.Xml";
    pub const DBZ_VARIABLE_DECIMAL: &str = "io.debezium.data.VariableScaleDecimal";
    pub const DBZ_BITS: &str = "io.debezium.data.Bits";
    /// Wharf's own names for Confluent's `timestamp.fields.list` fields, as `rows` marks them:
    /// int64 microseconds or nanoseconds since the epoch.
    pub const EPOCH_MICROS: &str = "wharf.jdbc.EpochMicros";
    pub const EPOCH_NANOS: &str = "wharf.jdbc.EpochNanos";
}

/// What a schema is, for its column type and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Boolean,
    Text,
    Bytes,
    Decimal,
    /// Days since the epoch.
    Date,
    /// Time of day in this many units a second.
    Time(i64),
    /// An instant in this many units a second since the epoch.
    Timestamp(i64),
    /// Debezium's instant as ISO-8601 text with its offset.
    ZonedTimestamp,
    /// Debezium's time of day as text with its offset.
    ZonedTime,
    Json,
    Uuid,
    Xml,
    /// Debezium's enum: text, with the allowed values in the `allowed` parameter.
    Enum,
    Year,
    /// A `{scale, value}` struct.
    VariableDecimal,
    /// Microseconds.
    Interval,
    /// Under Debezium's class, an array of single values: PostgreSQL's `type[]`.
    Array,
    /// Under Debezium's class, a map of single values: PostgreSQL's `hstore`, MariaDB's `json`.
    Map,
    /// Debezium's bit string of `length` bits (`i32::MAX`: of any length).
    Bits(i32),
}

/// The kind of a schema: Connect's logical types for both references, and Debezium's semantic
/// types under Debezium's class (Confluent's sink reads them as their physical type).
fn kind(flavor: Flavor, schema: &Schema) -> Result<Kind, String> {
    use names::*;
    let name = schema.name.as_deref().unwrap_or("");
    let logical = match name {
        DECIMAL => Some(Kind::Decimal),
        DATE => Some(Kind::Date),
        TIME => Some(Kind::Time(1_000)),
        TIMESTAMP => Some(Kind::Timestamp(1_000)),
        EPOCH_MICROS => Some(Kind::Timestamp(1_000_000)),
        EPOCH_NANOS => Some(Kind::Timestamp(1_000_000_000)),
        _ => None,
    };
    let semantic = match (flavor, name) {
        (Flavor::Debezium, DBZ_DATE) => Some(Kind::Date),
        (Flavor::Debezium, DBZ_TIME) => Some(Kind::Time(1_000)),
        (Flavor::Debezium, DBZ_MICRO_TIME) => Some(Kind::Time(1_000_000)),
        (Flavor::Debezium, DBZ_NANO_TIME) => Some(Kind::Time(1_000_000_000)),
        (Flavor::Debezium, DBZ_TIMESTAMP) => Some(Kind::Timestamp(1_000)),
        (Flavor::Debezium, DBZ_MICRO_TIMESTAMP) => Some(Kind::Timestamp(1_000_000)),
        (Flavor::Debezium, DBZ_NANO_TIMESTAMP) => Some(Kind::Timestamp(1_000_000_000)),
        (Flavor::Debezium, DBZ_ZONED_TIMESTAMP) => Some(Kind::ZonedTimestamp),
        (Flavor::Debezium, DBZ_ZONED_TIME) => Some(Kind::ZonedTime),
        (Flavor::Debezium, DBZ_MICRO_DURATION) => Some(Kind::Interval),
        (Flavor::Debezium, DBZ_YEAR) => Some(Kind::Year),
        (Flavor::Debezium, DBZ_JSON) => Some(Kind::Json),
        (Flavor::Debezium, DBZ_UUID) => Some(Kind::Uuid),
        (Flavor::Debezium, DBZ_XML) => Some(Kind::Xml),
        (Flavor::Debezium, DBZ_ENUM) => Some(Kind::Enum),
        (Flavor::Debezium, DBZ_VARIABLE_DECIMAL) => Some(Kind::VariableDecimal),
        (Flavor::Debezium, DBZ_BITS) if schema.kind == Type::Bytes => Some(Kind::Bits(bit_length(schema)?)),
        _ => None,
    };
    if let Some(kind) = logical.or(semantic) {
        return Ok(kind);
    }
    Ok(match schema.kind {
        Type::Int8 => Kind::Int8,
        Type::Int16 => Kind::Int16,
        Type::Int32 => Kind::Int32,
        Type::Int64 => Kind::Int64,
        Type::Float32 => Kind::Float32,
        Type::Float64 => Kind::Float64,
        Type::Boolean => Kind::Boolean,
        Type::String => Kind::Text,
        Type::Bytes => Kind::Bytes,
        Type::Array if flavor == Flavor::Debezium => Kind::Array,
        Type::Map if flavor == Flavor::Debezium => Kind::Map,
        Type::Array | Type::Map | Type::Struct => {
            let what = match schema.kind {
                Type::Array => "an array",
                Type::Map => "a map",
                _ => "a struct",
            };
            let named = if name.is_empty() { String::new() } else { format!(" ({name})") };
            let why = match schema.kind {
                Type::Array => {
                    "Confluent's JDBC sink writes no arrays either; under Debezium's class arrays go to \
                                PostgreSQL's array types"
                }
                Type::Map => {
                    "Confluent's JDBC sink writes no maps either; under Debezium's class maps go to PostgreSQL's \
                     hstore and MariaDB's json"
                }
                _ => "a struct is not a column",
            };
            return Err(format!(
                "is {what}{named}, and jdbc-sink writes columns of single values ({why}); flatten it with the \
                 Flatten transform or leave it out with field.exclude.list"
            ));
        }
    })
}

fn parameter(schema: &Schema, name: &str) -> Option<String> {
    schema.parameters.as_ref().and_then(|p| p.iter().find(|(k, _)| k == name)).map(|(_, v)| v.clone())
}

/// The database a connection URL names, for its SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    /// MariaDB, and MySQL through the same protocol.
    MariaDb,
}

impl Dialect {
    pub fn of(driver: Driver) -> Dialect {
        match driver {
            Driver::Postgres => Dialect::Postgres,
            Driver::MariaDb | Driver::MySql => Dialect::MariaDb,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::MariaDb => "MariaDB",
        }
    }

    /// Bind parameters one statement may carry (MariaDB's values are literals: no limit but the
    /// statement's size).
    pub fn max_parameters(self) -> usize {
        match self {
            Dialect::Postgres => 65_535,
            Dialect::MariaDb => usize::MAX,
        }
    }

    /// The column type a schema gets, as the reference the config follows makes it.
    pub fn column_type(self, flavor: Flavor, schema: &Schema, key: bool) -> Result<String, String> {
        let kind = kind(flavor, schema)?;
        let debezium = flavor == Flavor::Debezium;
        let cased = |lower: &str, upper: &str| if debezium { lower.to_string() } else { upper.to_string() };
        let decimal = || {
            let scale = parameter(schema, "scale").and_then(|s| s.parse::<i64>().ok()).unwrap_or(0).max(0);
            let precision = parameter(schema, "connect.decimal.precision")
                .and_then(|p| p.parse::<i64>().ok())
                .unwrap_or(38)
                .clamp(1, 38)
                .max(scale);
            format!("decimal({precision},{scale})")
        };
        Ok(match self {
            Dialect::Postgres => match kind {
                Kind::Int8 | Kind::Int16 => cased("smallint", "SMALLINT"),
                Kind::Int32 | Kind::Year => cased("integer", "INT"),
                Kind::Int64 => cased("bigint", "BIGINT"),
                Kind::Float32 => cased("float4", "REAL"),
                Kind::Float64 | Kind::VariableDecimal => cased("double precision", "DOUBLE PRECISION"),
                Kind::Boolean => cased("boolean", "BOOLEAN"),
                Kind::Text | Kind::Enum => cased("text", "TEXT"),
                Kind::Bytes => cased("bytea", "BYTEA"),
                Kind::Bits(i32::MAX) => "bit varying".into(),
                Kind::Bits(length) => format!("bit({length})"),
                Kind::Decimal if !debezium => "DECIMAL".into(),
                Kind::Decimal => decimal(),
                Kind::Date => cased("date", "DATE"),
                Kind::Time(_) => cased("time(6)", "TIME"),
                Kind::Timestamp(_) => cased("timestamp(6)", "TIMESTAMP"),
                Kind::ZonedTimestamp => "timestamp(6) with time zone".into(),
                Kind::ZonedTime => "time(6) with time zone".into(),
                Kind::Json => "json".into(),
                Kind::Uuid => "uuid".into(),
                Kind::Xml => "xml".into(),
                Kind::Interval => "interval".into(),
                Kind::Array => format!("{}[]", self.element_type(flavor, schema)?),
                Kind::Map => {
                    map_entries_checked(schema)?;
                    "hstore".into()
                }
            },
            Dialect::MariaDb => match kind {
                Kind::Int8 => cased("tinyint", "TINYINT"),
                Kind::Int16 => cased("smallint", "SMALLINT"),
                Kind::Int32 => cased("integer", "INT"),
                Kind::Int64 | Kind::Interval => cased("bigint", "BIGINT"),
                Kind::Float32 => cased("float", "FLOAT"),
                Kind::Float64 | Kind::VariableDecimal => cased("double precision", "DOUBLE"),
                Kind::Boolean => cased("boolean", "TINYINT"),
                // A key column must have a length to be indexed.
                Kind::Text | Kind::Uuid | Kind::Xml if key => cased("varchar(255)", "VARCHAR(256)"),
                Kind::Text | Kind::Uuid | Kind::Xml => cased("longtext", "TEXT"),
                Kind::Bytes if key => cased("varbinary(255)", "VARBINARY(256)"),
                Kind::Bytes => cased("longblob", "VARBINARY(1024)"),
                Kind::Bits(length) if length > 64 => {
                    return Err(format!(
                        "is io.debezium.data.Bits of {length} bits, more than MariaDB's bit columns hold (64); convert \
                         it with a transform or leave it out with field.exclude.list"
                    ))
                }
                Kind::Bits(length) => format!("bit({length})"),
                Kind::Decimal if !debezium => {
                    let scale = parameter(schema, "scale").and_then(|s| s.parse::<i64>().ok()).unwrap_or(0).max(0);
                    format!("DECIMAL(65,{scale})")
                }
                Kind::Decimal => decimal(),
                Kind::Date => cased("date", "DATE"),
                Kind::Time(_) => cased("time(6)", "TIME(3)"),
                // Confluent's timestamp.fields.list columns are DATETIME(6), its Timestamps DATETIME(3).
                Kind::Timestamp(1_000) => cased("datetime(6)", "DATETIME(3)"),
                Kind::Timestamp(_) => cased("datetime(6)", "DATETIME(6)"),
                Kind::ZonedTimestamp => "timestamp(6)".into(),
                Kind::ZonedTime => {
                    return Err("is io.debezium.time.ZonedTime, a time with an offset, which MariaDB has no type for; \
                                convert it with a transform or leave it out with field.exclude.list"
                        .into())
                }
                Kind::Json => "json".into(),
                Kind::Enum => match parameter(schema, "allowed") {
                    Some(allowed) if !allowed.is_empty() => {
                        let values: Vec<String> = allowed
                            .split(',')
                            .map(|v| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "''")))
                            .collect();
                        format!("enum({})", values.join(","))
                    }
                    _ => "longtext".into(),
                },
                Kind::Year => "year".into(),
                Kind::Array => {
                    return Err("is an array, which MariaDB has no column type for (Debezium writes arrays to \
                                PostgreSQL only); flatten it with a transform or leave it out with field.exclude.list"
                        .into())
                }
                Kind::Map => {
                    map_entries_checked(schema)?;
                    "json".into()
                }
            },
        })
    }

    /// The column type of an array's elements: a single value's, as Debezium names it.
    fn element_type(self, flavor: Flavor, schema: &Schema) -> Result<String, String> {
        let Some(element) = schema.value.as_deref() else {
            return Err("is an array whose schema names no element type".into());
        };
        if matches!(element.kind, Type::Array | Type::Map | Type::Struct) {
            return Err(format!(
                "is an array of {}, and PostgreSQL's arrays written here hold single values; flatten it with a \
                 transform or leave it out with field.exclude.list",
                match element.kind {
                    Type::Array => "arrays",
                    Type::Map => "maps",
                    _ => "structs",
                }
            ));
        }
        self.column_type(flavor, element, false).map_err(|e| format!("is an array whose element {e}"))
    }

    /// An array as PostgreSQL's array input reads it: `{"a","b",NULL}`, each element the text
    /// its own column type reads, quoted and escaped.
    fn array_literal(self, flavor: Flavor, schema: &Schema, items: &[Value], zone: &Zone) -> Result<String, String> {
        use std::fmt::Write;
        let element = schema.value.as_deref().ok_or("is an array whose schema names no element type")?;
        let mut literal = String::from("{");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                literal.push(',');
            }
            let text = match self.param(flavor, element, item, zone).map_err(|e| format!("has an element that {e}"))? {
                Param::Null => {
                    literal.push_str("NULL");
                    continue;
                }
                Param::Number(n) => n,
                Param::Text(t) => t,
                Param::Bytes(bytes) => {
                    let mut hex = String::with_capacity(2 + bytes.len() * 2);
                    hex.push_str("\\x");
                    for b in &bytes {
                        let _ = write!(hex, "{b:02x}");
                    }
                    hex
                }
            };
            literal.push('"');
            for c in text.chars() {
                if c == '"' || c == '\\' {
                    literal.push('\\');
                }
                literal.push(c);
            }
            literal.push('"');
        }
        literal.push('}');
        Ok(literal)
    }

    /// A value as the parameter (PostgreSQL) or literal (MariaDB) its column reads.
    /// `zone` moves instants to the wall-clock time of the configured zone.
    pub fn param(self, flavor: Flavor, schema: &Schema, value: &Value, zone: &Zone) -> Result<Param, String> {
        if matches!(value, Value::Null) {
            return Ok(Param::Null);
        }
        let kind = kind(flavor, schema)?;
        let mismatch = || format!("holds a value that does not match its schema ({:?})", schema.kind);
        let maria = self == Dialect::MariaDb;
        Ok(match (kind, value) {
            (Kind::Date, Value::Int32(days)) => Param::Text(date(i64::from(*days), maria)?),
            (Kind::Time(per_second), Value::Int32(n)) => Param::Text(time_of_day(i64::from(*n), per_second)),
            (Kind::Time(per_second), Value::Int64(n)) => Param::Text(time_of_day(*n, per_second)),
            (Kind::Timestamp(per_second), Value::Int64(n)) => Param::Text(timestamp(*n, per_second, zone, maria)?),
            (Kind::Interval, Value::Int64(micros)) if !maria => Param::Text(format!("{micros} microseconds")),
            (Kind::ZonedTimestamp, Value::String(s)) if maria => Param::Text(zoned_for_mariadb(s)?),
            (Kind::Array, Value::Array(items)) if !maria => {
                Param::Text(self.array_literal(flavor, schema, items, zone)?)
            }
            (Kind::Map, Value::Map(entries)) if maria => Param::Text(map_as_json(entries)?),
            (Kind::Bits(length), Value::Bytes(bytes)) if !maria => Param::Text(bit_string(bytes, length)?),
            (Kind::Map, Value::Map(entries)) => Param::Text(map_as_hstore(entries)?),
            (_, Value::Int8(n)) => Param::Number(n.to_string()),
            (_, Value::Int16(n)) => Param::Number(n.to_string()),
            (_, Value::Int32(n)) => Param::Number(n.to_string()),
            (_, Value::Int64(n)) => Param::Number(n.to_string()),
            (_, Value::Float32(f)) => Param::Number(float(f64::from(*f), maria)?),
            (_, Value::Float64(f)) => Param::Number(float(*f, maria)?),
            (_, Value::Boolean(b)) if maria => Param::Number(if *b { "1" } else { "0" }.into()),
            (_, Value::Boolean(b)) => Param::Text(b.to_string()),
            (_, Value::String(s)) => {
                if s.contains('\0') && !maria {
                    return Err("holds text with a NUL character, which PostgreSQL's text cannot store".into());
                }
                Param::Text(s.clone())
            }
            (Kind::Decimal, Value::Bytes(unscaled)) => {
                let scale = parameter(schema, "scale").and_then(|s| s.parse().ok()).unwrap_or(0);
                Param::Number(decimal(unscaled, scale))
            }
            (_, Value::Decimal { unscaled, scale }) => Param::Number(decimal(unscaled, *scale)),
            (Kind::VariableDecimal, Value::Struct(fields)) => {
                let index = |name: &str| schema.fields.iter().position(|f| f.name == name);
                let scale = index("scale").and_then(|i| fields.get(i));
                let unscaled = index("value").and_then(|i| fields.get(i));
                match (scale, unscaled) {
                    (Some(Value::Int32(scale)), Some(Value::Bytes(unscaled))) => {
                        Param::Number(decimal(unscaled, *scale))
                    }
                    _ => return Err(mismatch()),
                }
            }
            (_, Value::Bytes(bytes)) => Param::Bytes(bytes.clone()),
            _ => return Err(mismatch()),
        })
    }

    /// A name as the config's quoting writes it.
    pub fn quote(self, quoting: Quoting, name: &str) -> String {
        let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
            && !RESERVED.contains(&name)
            && !MARIADB_RESERVED.contains(&name);
        let (open, close) = match self {
            Dialect::Postgres => ('"', "\"\""),
            Dialect::MariaDb => ('`', "``"),
        };
        match quoting {
            Quoting::Never => name.to_string(),
            Quoting::Lowered if plain => name.to_string(),
            _ => format!("{open}{}{open}", name.replace(open, close)),
        }
    }

    pub fn table(self, quoting: Quoting, table: &TableId) -> String {
        match &table.schema {
            Some(schema) => format!("{}.{}", self.quote(quoting, schema), self.quote(quoting, &table.name)),
            None => self.quote(quoting, &table.name),
        }
    }

    fn column_def(self, flavor: Flavor, quoting: Quoting, column: &ColumnDef<'_>) -> Result<String, String> {
        let schema = &column.cell.schema;
        let ty =
            self.column_type(flavor, schema, column.key).map_err(|e| format!("the field {} {e}", column.cell.name))?;
        let default = match &schema.default {
            Some(value) if !column.key => self.default_literal(flavor, schema, value, &ty),
            _ => None,
        };
        let nullable = match column.key || !schema.optional {
            true => "NOT NULL",
            false => "NULL",
        };
        Ok(match default {
            Some(d) => format!("{} {ty} DEFAULT {d} {nullable}", self.quote(quoting, &column.cell.name)),
            None => format!("{} {ty} {nullable}", self.quote(quoting, &column.cell.name)),
        })
    }

    fn default_literal(self, flavor: Flavor, schema: &Schema, value: &Value, ty: &str) -> Option<String> {
        // MariaDB takes no default for text and blob columns.
        if self == Dialect::MariaDb && (ty.contains("text") || ty.contains("TEXT") || ty.contains("blob")) {
            return None;
        }
        match self.param(flavor, schema, value, &Zone::UTC).ok()? {
            Param::Null => None,
            Param::Number(n) => Some(n),
            Param::Text(t) if !t.contains('\0') => Some(format!("'{}'", t.replace('\\', "\\\\").replace('\'', "''"))),
            _ => None,
        }
    }

    /// `CREATE TABLE` with the key columns first and the primary key.
    pub fn create_table(
        self,
        flavor: Flavor,
        quoting: Quoting,
        id: &TableId,
        columns: &[ColumnDef<'_>],
    ) -> Result<String, String> {
        let mut parts = columns.iter().map(|c| self.column_def(flavor, quoting, c)).collect::<Result<Vec<_>, _>>()?;
        let keys: Vec<String> = columns.iter().filter(|c| c.key).map(|c| self.quote(quoting, &c.cell.name)).collect();
        if !keys.is_empty() {
            parts.push(format!("PRIMARY KEY({})", keys.join(", ")));
        }
        Ok(format!("CREATE TABLE {} ({})", self.table(quoting, id), parts.join(", ")))
    }

    /// `ALTER TABLE … ADD COLUMN` for columns a record has and the table lacks; each must be
    /// optional or have a default, as both references ask.
    pub fn add_columns(
        self,
        flavor: Flavor,
        quoting: Quoting,
        id: &TableId,
        columns: &[ColumnDef<'_>],
    ) -> Result<String, String> {
        let mut parts = Vec::new();
        for column in columns {
            if !column.cell.schema.optional && column.cell.schema.default.is_none() {
                return Err(format!(
                    "the table {id} lacks the column {}, whose field is required and has no default, so it cannot be \
                     added to rows already there; add the column by hand, or make the field optional",
                    column.cell.name
                ));
            }
            parts.push(format!("ADD COLUMN {}", self.column_def(flavor, quoting, column)?));
        }
        Ok(format!("ALTER TABLE {} {}", self.table(quoting, id), parts.join(", ")))
    }

    fn names(self, quoting: Quoting, columns: &[&str], separator: &str) -> String {
        columns.iter().map(|c| self.quote(quoting, c)).collect::<Vec<_>>().join(separator)
    }

    /// `INSERT` of `rows`, as upsert when `upsert` names the key columns and those to update.
    pub fn insert(
        self,
        quoting: Quoting,
        id: &TableId,
        columns: &[&str],
        rows: Vec<Vec<Param>>,
        upsert: Option<(&[&str], &[&str])>,
    ) -> Sql {
        let mut sql = Sql::new(self);
        sql.push(&format!("INSERT INTO {} ({}) VALUES ", self.table(quoting, id), self.names(quoting, columns, ",")));
        for (i, row) in rows.into_iter().enumerate() {
            sql.push(if i == 0 { "(" } else { ",(" });
            for (j, param) in row.into_iter().enumerate() {
                if j > 0 {
                    sql.push(",");
                }
                sql.param(param);
            }
            sql.push(")");
        }
        if let Some((key, updated)) = upsert {
            match self {
                Dialect::Postgres => {
                    sql.push(&format!(" ON CONFLICT ({}) ", self.names(quoting, key, ",")));
                    if updated.is_empty() {
                        sql.push("DO NOTHING");
                    } else {
                        let sets: Vec<String> =
                            updated.iter().map(|c| format!("{0}=EXCLUDED.{0}", self.quote(quoting, c))).collect();
                        sql.push(&format!("DO UPDATE SET {}", sets.join(",")));
                    }
                }
                Dialect::MariaDb => {
                    let targets = if updated.is_empty() { key } else { updated };
                    let sets: Vec<String> =
                        targets.iter().map(|c| format!("{0}=VALUES({0})", self.quote(quoting, c))).collect();
                    sql.push(&format!(" ON DUPLICATE KEY UPDATE {}", sets.join(",")));
                }
            }
        }
        sql
    }

    /// `UPDATE` of one row by its key.
    pub fn update(self, quoting: Quoting, id: &TableId, set: Vec<(&str, Param)>, key: Vec<(&str, Param)>) -> Sql {
        let mut sql = Sql::new(self);
        sql.push(&format!("UPDATE {} SET ", self.table(quoting, id)));
        for (i, (column, param)) in set.into_iter().enumerate() {
            sql.push(&format!("{}{}=", if i > 0 { ", " } else { "" }, self.quote(quoting, column)));
            sql.param(param);
        }
        sql.push(" WHERE ");
        for (i, (column, param)) in key.into_iter().enumerate() {
            sql.push(&format!("{}{}=", if i > 0 { " AND " } else { "" }, self.quote(quoting, column)));
            sql.param(param);
        }
        sql
    }

    /// `DELETE` of rows by their keys.
    pub fn delete(self, quoting: Quoting, id: &TableId, key: &[&str], rows: Vec<Vec<Param>>) -> Sql {
        let mut sql = Sql::new(self);
        sql.push(&format!("DELETE FROM {} WHERE ({}) IN (", self.table(quoting, id), self.names(quoting, key, ",")));
        for (i, row) in rows.into_iter().enumerate() {
            sql.push(if i == 0 { "(" } else { ",(" });
            for (j, param) in row.into_iter().enumerate() {
                if j > 0 {
                    sql.push(",");
                }
                sql.param(param);
            }
            sql.push(")");
        }
        sql.push(")");
        sql
    }

    pub fn truncate(self, quoting: Quoting, id: &TableId) -> String {
        format!("TRUNCATE TABLE {}", self.table(quoting, id))
    }

    /// The columns of a table: name and type, by `information_schema`.
    pub fn columns(self, table: &TableId) -> Sql {
        let mut sql = Sql::new(self);
        let current = match self {
            Dialect::Postgres => "current_schema()",
            Dialect::MariaDb => "DATABASE()",
        };
        sql.push("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = COALESCE(");
        sql.param(table.schema.clone().map_or(Param::Null, Param::Text));
        sql.push(&format!(", {current}) AND table_name = "));
        sql.param(Param::Text(table.name.clone()));
        sql.push(" ORDER BY ordinal_position");
        sql
    }

    pub fn begin(self) -> &'static str {
        match self {
            Dialect::Postgres => "BEGIN",
            Dialect::MariaDb => "START TRANSACTION",
        }
    }

    /// What a session sets first: deadlines below the call's, UTC, and the character set.
    pub fn session_setup(self, statement_timeout_ms: u64) -> String {
        match self {
            Dialect::Postgres => format!(
                "SET statement_timeout = {statement_timeout_ms}; SET lock_timeout = {}; \
                 SET idle_in_transaction_session_timeout = {}",
                statement_timeout_ms / 2,
                statement_timeout_ms * 20
            ),
            Dialect::MariaDb => format!(
                "SET NAMES utf8mb4, time_zone = '+00:00', SESSION max_statement_time = {:.3}, \
                 SESSION innodb_lock_wait_timeout = {}",
                statement_timeout_ms as f64 / 1000.0,
                (statement_timeout_ms / 2000).max(1)
            ),
        }
    }

    /// Whether a refusal says the table (or column) is there already: another task made it.
    pub fn already_there(self, code: &str) -> bool {
        match self {
            Dialect::Postgres => code == "42P07" || code == "42701",
            Dialect::MariaDb => code == "1050" || code == "1060",
        }
    }

    /// How a name the config writes unquoted is stored.
    pub fn stored_name(self, quoting: Quoting, name: &str) -> String {
        match (self, quoting) {
            // PostgreSQL folds unquoted names to lower case.
            (Dialect::Postgres, Quoting::Never) => name.to_lowercase(),
            _ => name.to_string(),
        }
    }
}

/// A column of a table to create or extend.
pub struct ColumnDef<'a> {
    pub cell: &'a Cell,
    pub key: bool,
}

/// A double as both databases read it; MariaDB stores no NaN or infinity.
fn float(f: f64, maria: bool) -> Result<String, String> {
    if f.is_finite() {
        return Ok(format!("{f:?}"));
    }
    if maria {
        return Err(format!("holds {f}, which MariaDB cannot store"));
    }
    Ok(if f.is_nan() {
        "NaN".into()
    } else if f > 0.0 {
        "Infinity".into()
    } else {
        "-Infinity".into()
    })
}

/// Debezium's ZonedTimestamp (`2024-01-01T10:15:30.123+02:00`, or `…Z`) as the UTC text
/// MariaDB's `timestamp` reads in a session at `+00:00`.
fn zoned_for_mariadb(text: &str) -> Result<String, String> {
    let bad = || format!("holds \"{text}\", which is not an ISO-8601 instant");
    let (stamp, offset) = match text.strip_suffix('Z') {
        Some(stamp) => (stamp, 0i64),
        None => {
            let at = text.rfind(['+', '-']).filter(|i| *i > 10).ok_or_else(bad)?;
            let (stamp, offset) = text.split_at(at);
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            let (h, m) = offset[1..].split_once(':').ok_or_else(bad)?;
            let (h, m): (i64, i64) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
            (stamp, sign * (h * 3600 + m * 60))
        }
    };
    let (day, time) = stamp.split_once('T').ok_or_else(bad)?;
    let mut parts = day.splitn(3, '-');
    let (y, mo, d): (i64, i64, i64) = match (parts.next(), parts.next(), parts.next()) {
        (Some(y), Some(mo), Some(d)) => {
            (y.parse().map_err(|_| bad())?, mo.parse().map_err(|_| bad())?, d.parse().map_err(|_| bad())?)
        }
        _ => return Err(bad()),
    };
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = clock.splitn(3, ':');
    let (h, mi, s): (i64, i64, i64) = match (hms.next(), hms.next(), hms.next()) {
        (Some(h), Some(mi), Some(s)) => {
            (h.parse().map_err(|_| bad())?, mi.parse().map_err(|_| bad())?, s.parse().map_err(|_| bad())?)
        }
        _ => return Err(bad()),
    };
    let micros: i64 = format!("{:0<6}", &fraction[..fraction.len().min(6)]).parse().map_err(|_| bad())?;
    let days = days_from_civil(y, mo, d);
    let seconds = days * 86_400 + h * 3600 + mi * 60 + s - offset;
    timestamp(seconds * 1_000_000 + micros, 1_000_000, &Zone::UTC, true)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A big-endian two's complement integer scaled by `10^-scale`, in decimal.
pub fn decimal(unscaled: &[u8], scale: i32) -> String {
    let negative = unscaled.first().is_some_and(|b| b & 0x80 != 0);
    // The magnitude, big-endian.
    let mut magnitude: Vec<u8> = match negative {
        false => unscaled.to_vec(),
        true => {
            let mut m: Vec<u8> = unscaled.iter().map(|b| !b).collect();
            for byte in m.iter_mut().rev() {
                let (sum, carry) = byte.overflowing_add(1);
                *byte = sum;
                if !carry {
                    break;
                }
            }
            m
        }
    };
    let mut digits = Vec::new();
    while magnitude.iter().any(|b| *b != 0) {
        let mut remainder = 0u32;
        for byte in magnitude.iter_mut() {
            let current = (remainder << 8) | u32::from(*byte);
            *byte = (current / 10) as u8;
            remainder = current % 10;
        }
        digits.push(b'0' + remainder as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    let mut text = String::from_utf8(digits).unwrap_or_default();
    if scale > 0 {
        let scale = scale as usize;
        if text.len() <= scale {
            text = format!("{}{text}", "0".repeat(scale - text.len() + 1));
        }
        text.insert(text.len() - scale, '.');
    } else if scale < 0 {
        text.push_str(&"0".repeat(scale.unsigned_abs() as usize));
    }
    if negative {
        text.insert(0, '-');
    }
    text
}

/// Days since 1970-01-01 as a proleptic Gregorian date (Howard Hinnant's civil-from-days);
/// MariaDB keeps years 1000 to 9999 only.
fn date(days: i64, maria: bool) -> Result<String, String> {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if maria && !(1000..=9999).contains(&year) {
        return Err(format!("holds a date in the year {year}, outside the years 1000 to 9999 MariaDB keeps"));
    }
    Ok(match year {
        y if y <= 0 => format!("{:04}-{month:02}-{day:02} BC", 1 - y),
        y => format!("{y:04}-{month:02}-{day:02}"),
    })
}

/// `units` of a second `per_second` since midnight, to the microsecond.
fn time_of_day(units: i64, per_second: i64) -> String {
    let micros = scale_to_micros(units, per_second).rem_euclid(86_400_000_000);
    let seconds = micros / 1_000_000;
    format!("{:02}:{:02}:{:02}.{:06}", seconds / 3600, seconds / 60 % 60, seconds % 60, micros % 1_000_000)
}

fn timestamp(units: i64, per_second: i64, zone: &Zone, maria: bool) -> Result<String, String> {
    let utc = scale_to_micros(units, per_second);
    let micros = utc.saturating_add(i64::from(zone.offset_at(utc)) * 1_000_000);
    let days = micros.div_euclid(86_400_000_000);
    let day_micros = micros.rem_euclid(86_400_000_000);
    let date = date(days, maria)?;
    let time = time_of_day(day_micros, 1_000_000);
    Ok(match date.strip_suffix(" BC") {
        Some(date) => format!("{date} {time} BC"),
        None => format!("{date} {time}"),
    })
}

fn scale_to_micros(units: i64, per_second: i64) -> i64 {
    match per_second {
        1_000 => units.saturating_mul(1_000),
        1_000_000_000 => units.div_euclid(1_000),
        _ => units,
    }
}

/// Reserved words (PostgreSQL's, which cover MariaDB's common ones) a name must be quoted to use,
/// beside names of other shapes.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// MariaDB's reserved words beyond PostgreSQL's; quoting one in PostgreSQL too changes nothing,
/// since the name is in lower case already.
const MARIADB_RESERVED: &[&str] = &[
    "accessible",
    "add",
    "alter",
    "before",
    "between",
    "bigint",
    "binary",
    "blob",
    "by",
    "call",
    "cascade",
    "change",
    "char",
    "character",
    "condition",
    "continue",
    "convert",
    "cross",
    "current_user",
    "cursor",
    "database",
    "databases",
    "dec",
    "decimal",
    "declare",
    "delayed",
    "delete",
    "describe",
    "div",
    "double",
    "drop",
    "each",
    "elseif",
    "enclosed",
    "escaped",
    "exists",
    "exit",
    "explain",
    "float",
    "force",
    "full",
    "fulltext",
    "general",
    "high_priority",
    "if",
    "ignore",
    "index",
    "infile",
    "inner",
    "inout",
    "insert",
    "int",
    "integer",
    "interval",
    "is",
    "iterate",
    "join",
    "key",
    "keys",
    "kill",
    "leave",
    "left",
    "like",
    "linear",
    "lines",
    "load",
    "lock",
    "long",
    "loop",
    "match",
    "mod",
    "modifies",
    "natural",
    "option",
    "optionally",
    "out",
    "outer",
    "outfile",
    "over",
    "partition",
    "precision",
    "procedure",
    "purge",
    "range",
    "rank",
    "read",
    "reads",
    "real",
    "recursive",
    "regexp",
    "release",
    "rename",
    "repeat",
    "replace",
    "require",
    "restrict",
    "return",
    "revoke",
    "right",
    "rlike",
    "row_number",
    "rows",
    "schema",
    "schemas",
    "sensitive",
    "separator",
    "set",
    "show",
    "signal",
    "smallint",
    "spatial",
    "specific",
    "sql",
    "ssl",
    "starting",
    "straight_join",
    "terminated",
    "tinyint",
    "trigger",
    "undo",
    "unlock",
    "unsigned",
    "update",
    "usage",
    "use",
    "values",
    "varchar",
    "varying",
    "while",
    "write",
    "xor",
    "year_month",
    "zerofill",
];

/// The bits of an `io.debezium.data.Bits` schema (its `length` parameter).
fn bit_length(schema: &Schema) -> Result<i32, String> {
    match parameter(schema, "length").map(|l| l.trim().parse::<i32>()) {
        Some(Ok(length)) if length > 0 => Ok(length),
        _ => Err("is io.debezium.data.Bits without a length parameter of a positive whole number".into()),
    }
}

/// Bits as PostgreSQL's bit string input reads them, as Debezium's sink writes them: the bytes as
/// one big-endian number in binary, padded with zeros on the left to the column's length (a
/// number with its top bit set is taken as unsigned, where Debezium's sink would write a minus
/// sign the server refuses).
fn bit_string(bytes: &[u8], length: i32) -> Result<String, String> {
    let mut text: String = bytes.iter().map(|b| format!("{b:08b}")).collect::<String>().trim_start_matches('0').into();
    if text.is_empty() {
        text.push('0');
    }
    if length == i32::MAX {
        return Ok(text);
    }
    let length = usize::try_from(length).unwrap_or(0);
    if text.len() > length {
        return Err(format!("holds a number of {} bits, more than its bit({length}) column holds", text.len()));
    }
    Ok(format!("{text:0>length$}"))
}

/// A map's keys and values must be single values (Debezium writes each as its text).
fn map_entries_checked(schema: &Schema) -> Result<(), String> {
    for (what, part) in [("keys", schema.key.as_deref()), ("values", schema.value.as_deref())] {
        match part {
            None => return Err(format!("is a map whose schema names no type for its {what}")),
            Some(part) if matches!(part.kind, Type::Array | Type::Map | Type::Struct | Type::Bytes) => {
                return Err(format!(
                    "is a map whose {what} are {:?}, and a map is written here with keys and values of single \
                     values (text, numbers, booleans); flatten it with a transform or leave it out with \
                     field.exclude.list",
                    part.kind
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A map's key or value as its text, as Java's `toString` writes it (which Debezium's sink
/// uses); `None` for a null.
fn entry_text(value: &Value) -> Result<Option<String>, String> {
    Ok(Some(match value {
        Value::Null => return Ok(None),
        Value::String(s) => s.clone(),
        Value::Boolean(b) => b.to_string(),
        Value::Int8(n) => n.to_string(),
        Value::Int16(n) => n.to_string(),
        Value::Int32(n) => n.to_string(),
        Value::Int64(n) => n.to_string(),
        Value::Float32(f) => java_double(f64::from(*f)),
        Value::Float64(f) => java_double(*f),
        _ => return Err("is a map holding a key or value that is not a single value".into()),
    }))
}

/// A float as Java prints a double in plain notation: `1.0`, `0.5`, `NaN`, `Infinity`.
fn java_double(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let text = f.to_string();
    match text.contains('.') {
        true => text,
        false => format!("{text}.0"),
    }
}

/// A map as PostgreSQL's hstore input reads it: `"key"=>"value", "other"=>NULL`, quotes and
/// backslashes escaped.
fn map_as_hstore(entries: &[(Value, Value)]) -> Result<String, String> {
    let quoted = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    let mut pairs = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let key = entry_text(key)?.ok_or("is a map with a null key, which hstore cannot hold")?;
        if key.contains('\0') {
            return Err("is a map with a NUL character in a key, which PostgreSQL's text cannot store".into());
        }
        let value = match entry_text(value)? {
            Some(v) if v.contains('\0') => {
                return Err("is a map with a NUL character in a value, which PostgreSQL's text cannot store".into())
            }
            Some(v) => quoted(&v),
            None => "NULL".into(),
        };
        pairs.push(format!("{}=>{value}", quoted(&key)));
    }
    Ok(pairs.join(", "))
}

/// A map as a JSON object: keys as text, values as JSON numbers, booleans, strings or null.
fn map_as_json(entries: &[(Value, Value)]) -> Result<String, String> {
    let mut object = String::from("{");
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            object.push(',');
        }
        let key = entry_text(key)?.ok_or("is a map with a null key, which a JSON object cannot hold")?;
        json_string(&mut object, &key);
        object.push(':');
        match value {
            Value::String(s) => json_string(&mut object, s),
            Value::Float32(f) if !f.is_finite() => json_string(&mut object, &java_double(f64::from(*f))),
            Value::Float64(f) if !f.is_finite() => json_string(&mut object, &java_double(*f)),
            other => object.push_str(&entry_text(other)?.unwrap_or_else(|| "null".into())),
        }
    }
    object.push('}');
    Ok(object)
}

/// `text` as a JSON string.
fn json_string(out: &mut String, text: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

    use super::*;

    const PG: Dialect = Dialect::Postgres;
    const MARIA: Dialect = Dialect::MariaDb;

    #[test]
    fn decimals_are_written_from_their_unscaled_twos_complement() {
        assert_eq!(decimal(&[0x30, 0x39], 2), "123.45");
        assert_eq!(decimal(&[0xcf, 0xc7], 2), "-123.45");
        assert_eq!(decimal(&[0x05], 3), "0.005");
        assert_eq!(decimal(&[0xfb], 3), "-0.005");
        assert_eq!(decimal(&[0x00], 0), "0");
        assert_eq!(decimal(&[0x07], -2), "700");
        // 2^64, past any machine integer.
        assert_eq!(decimal(&[0x01, 0, 0, 0, 0, 0, 0, 0, 0], 0), "18446744073709551616");
    }

    #[test]
    fn dates_times_and_timestamps_are_written_as_the_databases_read_them() {
        assert_eq!(date(0, false).unwrap(), "1970-01-01");
        assert_eq!(date(19_723, true).unwrap(), "2024-01-01");
        assert_eq!(date(-719_528, false).unwrap(), "0001-01-01 BC");
        assert!(date(-719_528, true).unwrap_err().contains("outside the years 1000 to 9999"));
        assert_eq!(time_of_day(3_723_004, 1_000), "01:02:03.004000");
        assert_eq!(time_of_day(3_723_000_005, 1_000_000), "01:02:03.000005");
        assert_eq!(timestamp(1_704_067_200_123, 1_000, &Zone::UTC, false).unwrap(), "2024-01-01 00:00:00.123000");
        assert_eq!(
            timestamp(1_704_067_200_123_456, 1_000_000, &Zone::Fixed(3600), false).unwrap(),
            "2024-01-01 01:00:00.123456"
        );
        // A named zone moves each instant by the offset its clocks had then: winter, then summer time.
        let paris = Zone::named("Europe/Paris").unwrap();
        assert_eq!(timestamp(1_705_320_000_000, 1_000, &paris, false).unwrap(), "2024-01-15 13:00:00.000000");
        assert_eq!(timestamp(1_721_044_800_000, 1_000, &paris, true).unwrap(), "2024-07-15 14:00:00.000000");
        assert_eq!(timestamp(-1, 1_000, &Zone::UTC, false).unwrap(), "1969-12-31 23:59:59.999000");
        assert_eq!(zoned_for_mariadb("2024-01-01T10:15:30.5+02:00").unwrap(), "2024-01-01 08:15:30.500000");
        assert_eq!(zoned_for_mariadb("2024-01-01T00:00:00Z").unwrap(), "2024-01-01 00:00:00.000000");
        assert!(zoned_for_mariadb("yesterday").is_err());
        assert_eq!(days_from_civil(2024, 1, 1), 19_723);
    }

    #[test]
    fn names_are_quoted_as_the_config_asks_with_each_databases_quote() {
        assert_eq!(PG.quote(Quoting::Lowered, "orders"), "orders");
        assert_eq!(PG.quote(Quoting::Lowered, "order"), "\"order\"");
        assert_eq!(PG.quote(Quoting::Lowered, "has space"), "\"has space\"");
        assert_eq!(PG.quote(Quoting::Always, "Orders"), "\"Orders\"");
        assert_eq!(PG.quote(Quoting::Always, "a\"b"), "\"a\"\"b\"");
        assert_eq!(PG.quote(Quoting::Never, "Orders"), "Orders");
        assert_eq!(MARIA.quote(Quoting::Always, "a`b"), "`a``b`");
        assert_eq!(MARIA.quote(Quoting::Lowered, "key"), "`key`");
        assert_eq!(PG.quote(Quoting::Lowered, "key"), "\"key\"");
    }

    fn numbers(row: &[i64]) -> Vec<Param> {
        row.iter().map(|n| Param::Number(n.to_string())).collect()
    }

    #[test]
    fn statements_take_numbered_parameters_in_postgresql_and_literals_in_mariadb() {
        let id = TableId { schema: None, name: "t".into() };
        let rows = vec![numbers(&[1, 2]), numbers(&[3, 4])];
        let sql = PG.insert(Quoting::Lowered, &id, &["k", "v"], rows.clone(), Some((&["k"], &["v"])));
        assert_eq!(sql.text, "INSERT INTO t (k,v) VALUES ($1,$2),($3,$4) ON CONFLICT (k) DO UPDATE SET v=EXCLUDED.v");
        assert_eq!(sql.params.len(), 4);
        let sql = MARIA.insert(Quoting::Lowered, &id, &["k", "v"], rows, Some((&["k"], &["v"])));
        assert_eq!(sql.text, "INSERT INTO t (k,v) VALUES (1,2),(3,4) ON DUPLICATE KEY UPDATE v=VALUES(v)");
        assert!(sql.params.is_empty());
        let sql = PG.insert(Quoting::Always, &id, &["k"], vec![numbers(&[1])], Some((&["k"], &[])));
        assert_eq!(sql.text, "INSERT INTO \"t\" (\"k\") VALUES ($1) ON CONFLICT (\"k\") DO NOTHING");
        let sql =
            PG.update(Quoting::Lowered, &id, vec![("a", Param::Null), ("b", Param::Null)], vec![("k", Param::Null)]);
        assert_eq!(sql.text, "UPDATE t SET a=$1, b=$2 WHERE k=$3");
        let sql = PG.delete(Quoting::Lowered, &id, &["k", "j"], vec![numbers(&[1, 2]), numbers(&[3, 4])]);
        assert_eq!(sql.text, "DELETE FROM t WHERE (k,j) IN (($1,$2),($3,$4))");
        let sql = MARIA.insert(
            Quoting::Lowered,
            &id,
            &["s", "b"],
            vec![vec![Param::Text("it's".into()), Param::Bytes(vec![0, 255])]],
            None,
        );
        assert_eq!(sql.text, "INSERT INTO t (s,b) VALUES (_utf8mb4 X'69742773',X'00ff')");
    }

    #[test]
    fn column_types_follow_each_reference_and_database() {
        let decimal = Schema::decimal(2).parameter("connect.decimal.precision", "10").build();
        assert_eq!(PG.column_type(Flavor::Debezium, &decimal, false).unwrap(), "decimal(10,2)");
        assert_eq!(PG.column_type(Flavor::Confluent, &decimal, false).unwrap(), "DECIMAL");
        assert_eq!(MARIA.column_type(Flavor::Confluent, &decimal, false).unwrap(), "DECIMAL(65,2)");
        let micro = Schema::int64().named("io.debezium.time.MicroTimestamp").build();
        assert_eq!(PG.column_type(Flavor::Debezium, &micro, false).unwrap(), "timestamp(6)");
        assert_eq!(MARIA.column_type(Flavor::Debezium, &micro, false).unwrap(), "datetime(6)");
        assert_eq!(PG.column_type(Flavor::Confluent, &micro, false).unwrap(), "BIGINT");
        assert_eq!(
            PG.param(Flavor::Confluent, &micro, &Value::Int64(5), &Zone::UTC).unwrap(),
            Param::Number("5".into())
        );
        let text = Schema::string().build();
        assert_eq!(MARIA.column_type(Flavor::Debezium, &text, true).unwrap(), "varchar(255)");
        assert_eq!(MARIA.column_type(Flavor::Debezium, &text, false).unwrap(), "longtext");
        let ints = Schema::array(Schema::int32().build()).build();
        assert_eq!(PG.column_type(Flavor::Debezium, &ints, false).unwrap(), "integer[]");
        assert!(PG.column_type(Flavor::Confluent, &ints, false).unwrap_err().contains("writes no arrays"));
        assert!(MARIA.column_type(Flavor::Debezium, &ints, false).unwrap_err().contains("MariaDB has no column type"));
        let nested = Schema::array(ints.clone()).build();
        assert!(PG.column_type(Flavor::Debezium, &nested, false).unwrap_err().contains("an array of arrays"));
        assert_eq!(
            PG.param(Flavor::Debezium, &Schema::boolean().build(), &Value::Boolean(true), &Zone::UTC).unwrap(),
            Param::Text("true".into())
        );
        assert_eq!(
            MARIA.param(Flavor::Debezium, &Schema::boolean().build(), &Value::Boolean(true), &Zone::UTC).unwrap(),
            Param::Number("1".into())
        );
        assert!(MARIA
            .param(Flavor::Debezium, &Schema::float64().build(), &Value::Float64(f64::NAN), &Zone::UTC)
            .is_err());
    }

    #[test]
    fn arrays_are_postgresql_array_literals_of_their_elements_text() {
        let texts = Schema::array(Schema::string().optional().build()).build();
        assert_eq!(PG.column_type(Flavor::Debezium, &texts, false).unwrap(), "text[]");
        let value = Value::Array(vec![
            Value::String("plain".into()),
            Value::String("a \"quoted\", {braced} \\ one".into()),
            Value::Null,
            Value::String("NULL".into()),
            Value::String(String::new()),
        ]);
        assert_eq!(
            PG.param(Flavor::Debezium, &texts, &value, &Zone::UTC).unwrap(),
            Param::Text(r#"{"plain","a \"quoted\", {braced} \\ one",NULL,"NULL",""}"#.into())
        );
        assert_eq!(
            PG.param(Flavor::Debezium, &texts, &Value::Array(Vec::new()), &Zone::Fixed(0)).unwrap(),
            Param::Text("{}".into())
        );
        let blobs = Schema::array(Schema::bytes().build()).build();
        assert_eq!(PG.column_type(Flavor::Debezium, &blobs, false).unwrap(), "bytea[]");
        assert_eq!(
            PG.param(Flavor::Debezium, &blobs, &Value::Array(vec![Value::Bytes(vec![0, 0xff])]), &Zone::Fixed(0))
                .unwrap(),
            Param::Text(r#"{"\\x00ff"}"#.into())
        );
        let dates = Schema::array(Schema::int32().named("org.apache.kafka.connect.data.Date").build()).build();
        assert_eq!(PG.column_type(Flavor::Debezium, &dates, false).unwrap(), "date[]");
        assert_eq!(
            PG.param(Flavor::Debezium, &dates, &Value::Array(vec![Value::Int32(0)]), &Zone::Fixed(0)).unwrap(),
            Param::Text(r#"{"1970-01-01"}"#.into())
        );
        let ints = Schema::array(Schema::int64().build()).build();
        let mismatch = PG.param(Flavor::Debezium, &ints, &Value::Array(vec![Value::Struct(Vec::new())]), &Zone::UTC);
        assert!(mismatch.unwrap_err().contains("has an element that"));
    }

    #[test]
    fn maps_are_hstore_text_in_postgresql_and_json_objects_in_mariadb() {
        let entries = vec![
            (Value::String("plain".into()), Value::String("x".into())),
            (Value::String("q\"uote".into()), Value::String("back\\slash".into())),
            (Value::String("none".into()), Value::Null),
        ];
        assert_eq!(map_as_hstore(&entries).unwrap(), r#""plain"=>"x", "q\"uote"=>"back\\slash", "none"=>NULL"#);
        assert_eq!(map_as_json(&entries).unwrap(), r#"{"plain":"x","q\"uote":"back\\slash","none":null}"#);
        let numbers = vec![
            (Value::Int32(1), Value::Float64(2.0)),
            (Value::Int32(2), Value::Float64(f64::NAN)),
            (Value::Int32(3), Value::Boolean(true)),
        ];
        assert_eq!(map_as_hstore(&numbers).unwrap(), r#""1"=>"2.0", "2"=>"NaN", "3"=>"true""#);
        assert_eq!(map_as_json(&numbers).unwrap(), r#"{"1":2.0,"2":"NaN","3":true}"#);
        assert!(map_as_hstore(&[(Value::Null, Value::Null)]).unwrap_err().contains("null key"));
        assert!(map_as_hstore(&[(Value::String("k".into()), Value::String("a\0b".into()))])
            .unwrap_err()
            .contains("NUL"));
        assert_eq!(map_as_hstore(&[]).unwrap(), "");
        assert_eq!(map_as_json(&[]).unwrap(), "{}");
    }

    #[test]
    fn map_columns_are_hstore_and_json_under_debeziums_class_only() {
        let map = Schema::map(Schema::string().build(), Schema::int32().build()).build();
        assert_eq!(PG.column_type(Flavor::Debezium, &map, false).unwrap(), "hstore");
        assert_eq!(MARIA.column_type(Flavor::Debezium, &map, false).unwrap(), "json");
        assert!(PG
            .column_type(Flavor::Confluent, &map, false)
            .unwrap_err()
            .contains("Confluent's JDBC sink writes no maps"));
        let nested = Schema::map(Schema::string().build(), Schema::array(Schema::int32().build()).build()).build();
        assert!(PG.column_type(Flavor::Debezium, &nested, false).unwrap_err().contains("values are Array"));
    }

    #[test]
    fn bits_are_bit_columns_of_their_length_written_as_debeziums_sink_writes_them() {
        let bits = |length: &str| Schema::bytes().named("io.debezium.data.Bits").parameter("length", length).build();
        assert_eq!(PG.column_type(Flavor::Debezium, &bits("8"), false).unwrap(), "bit(8)");
        assert_eq!(PG.column_type(Flavor::Debezium, &bits("2147483647"), false).unwrap(), "bit varying");
        assert_eq!(MARIA.column_type(Flavor::Debezium, &bits("12"), false).unwrap(), "bit(12)");
        assert!(MARIA.column_type(Flavor::Debezium, &bits("65"), false).unwrap_err().contains("64"));
        assert_eq!(PG.column_type(Flavor::Confluent, &bits("8"), false).unwrap(), "BYTEA");
        let unnamed = Schema::bytes().named("io.debezium.data.Bits").build();
        assert!(PG.column_type(Flavor::Debezium, &unnamed, false).unwrap_err().contains("length"));
        let written = |length: &str, bytes: &[u8]| {
            PG.param(Flavor::Debezium, &bits(length), &Value::Bytes(bytes.to_vec()), &Zone::UTC)
        };
        assert_eq!(written("8", &[0x05]).unwrap(), Param::Text("00000101".into()));
        assert_eq!(written("12", &[0x01, 0x02]).unwrap(), Param::Text("000100000010".into()));
        assert_eq!(written("3", &[0x00]).unwrap(), Param::Text("000".into()));
        assert_eq!(written("2147483647", &[0x00, 0x06]).unwrap(), Param::Text("110".into()));
        assert_eq!(written("8", &[0x80]).unwrap(), Param::Text("10000000".into()));
        assert!(written("4", &[0x1f]).unwrap_err().contains("5 bits"));
        assert_eq!(
            MARIA.param(Flavor::Debezium, &bits("8"), &Value::Bytes(vec![5]), &Zone::UTC).unwrap(),
            Param::Bytes(vec![5])
        );
    }
}
