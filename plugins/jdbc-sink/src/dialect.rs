//! PostgreSQL's SQL as each reference writes it: column types for Connect's schemas (and, under
//! Debezium's class, Debezium's semantic types), values as the text PostgreSQL reads, names
//! quoted as the config asks, and the statements (CREATE, ALTER, INSERT, upsert, UPDATE, DELETE,
//! TRUNCATE) with `$n` parameters. MariaDB's is the next dialect.

use wharf_sdk::data::{Schema, Type, Value};

use crate::rows::{Cell, TableId};
use crate::settings::{Flavor, Quoting};

/// PostgreSQL's bind parameters per statement.
pub const MAX_PARAMETERS: usize = 65_535;

/// Names Debezium's types go by.
mod names {
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
}

/// What a schema is, for its column type and its value's text.
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
    /// Text PostgreSQL reads as it is, in a column of the type named.
    Typed(&'static str),
    /// A `{scale, value}` struct.
    VariableDecimal,
    /// Microseconds.
    Interval,
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
        (Flavor::Debezium, DBZ_ZONED_TIMESTAMP) => Some(Kind::Typed("timestamp(6) with time zone")),
        (Flavor::Debezium, DBZ_ZONED_TIME) => Some(Kind::Typed("time(6) with time zone")),
        (Flavor::Debezium, DBZ_MICRO_DURATION) => Some(Kind::Interval),
        (Flavor::Debezium, DBZ_YEAR) => Some(Kind::Int32),
        (Flavor::Debezium, DBZ_JSON) => Some(Kind::Typed("json")),
        (Flavor::Debezium, DBZ_UUID) => Some(Kind::Typed("uuid")),
        (Flavor::Debezium, DBZ_XML) => Some(Kind::Typed("xml")),
        (Flavor::Debezium, DBZ_ENUM) => Some(Kind::Text),
        (Flavor::Debezium, DBZ_VARIABLE_DECIMAL) => Some(Kind::VariableDecimal),
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
        Type::Array | Type::Map | Type::Struct => {
            let what = match schema.kind {
                Type::Array => "an array",
                Type::Map => "a map",
                _ => "a struct",
            };
            let named = if name.is_empty() { String::new() } else { format!(" ({name})") };
            return Err(format!(
                "is {what}{named}, and jdbc-sink writes columns of single values only (arrays and maps are not built \
                 yet); flatten it with the Flatten transform or leave it out with field.exclude.list"
            ));
        }
    })
}

/// The column type PostgreSQL gets for a schema, as the reference the config follows makes it.
pub fn column_type(flavor: Flavor, schema: &Schema) -> Result<String, String> {
    let kind = kind(flavor, schema)?;
    let debezium = flavor == Flavor::Debezium;
    Ok(match kind {
        Kind::Int8 | Kind::Int16 => if debezium { "smallint" } else { "SMALLINT" }.into(),
        Kind::Int32 => if debezium { "integer" } else { "INT" }.into(),
        Kind::Int64 => if debezium { "bigint" } else { "BIGINT" }.into(),
        Kind::Float32 => if debezium { "float4" } else { "REAL" }.into(),
        Kind::Float64 | Kind::VariableDecimal => if debezium { "double precision" } else { "DOUBLE PRECISION" }.into(),
        Kind::Boolean => if debezium { "boolean" } else { "BOOLEAN" }.into(),
        Kind::Text => if debezium { "text" } else { "TEXT" }.into(),
        Kind::Bytes => if debezium { "bytea" } else { "BYTEA" }.into(),
        Kind::Decimal if !debezium => "DECIMAL".into(),
        Kind::Decimal => {
            let parameter = |name: &str| {
                schema
                    .parameters
                    .as_ref()
                    .and_then(|p| p.iter().find(|(k, _)| k == name))
                    .and_then(|(_, v)| v.parse::<i64>().ok())
            };
            let scale = parameter("scale").unwrap_or(0).max(0);
            let precision = parameter("connect.decimal.precision").unwrap_or(38).clamp(1, 38).max(scale);
            format!("decimal({precision},{scale})")
        }
        Kind::Date => if debezium { "date" } else { "DATE" }.into(),
        Kind::Time(_) => if debezium { "time(6)" } else { "TIME" }.into(),
        Kind::Timestamp(_) => if debezium { "timestamp(6)" } else { "TIMESTAMP" }.into(),
        Kind::Typed(name) => name.into(),
        Kind::Interval => "interval".into(),
    })
}

/// A value as the text PostgreSQL reads for its column; none for NULL. `offset_seconds` moves
/// instants into the configured zone (PostgreSQL's `timestamp` has none).
pub fn text(flavor: Flavor, schema: &Schema, value: &Value, offset_seconds: i32) -> Result<Option<String>, String> {
    if matches!(value, Value::Null) {
        return Ok(None);
    }
    let kind = kind(flavor, schema)?;
    let mismatch = || format!("holds a value that does not match its schema ({:?})", schema.kind);
    let text = match (kind, value) {
        (_, Value::Int8(n)) if !matches!(kind, Kind::Date | Kind::Time(_) | Kind::Timestamp(_)) => n.to_string(),
        (_, Value::Int16(n)) if !matches!(kind, Kind::Date | Kind::Time(_) | Kind::Timestamp(_)) => n.to_string(),
        (Kind::Date, Value::Int32(days)) => date(i64::from(*days)),
        (Kind::Time(per_second), Value::Int32(n)) => time_of_day(i64::from(*n), per_second),
        (Kind::Time(per_second), Value::Int64(n)) => time_of_day(*n, per_second),
        (Kind::Timestamp(per_second), Value::Int64(n)) => timestamp(*n, per_second, offset_seconds),
        (Kind::Interval, Value::Int64(micros)) => format!("{micros} microseconds"),
        (_, Value::Int32(n)) => n.to_string(),
        (_, Value::Int64(n)) => n.to_string(),
        (_, Value::Float32(f)) => float(f64::from(*f)),
        (_, Value::Float64(f)) => float(*f),
        (_, Value::Boolean(b)) => b.to_string(),
        (_, Value::String(s)) => {
            if s.contains('\0') {
                return Err("holds text with a NUL character, which PostgreSQL's text cannot store".into());
            }
            s.clone()
        }
        (Kind::Decimal, Value::Decimal { unscaled, scale }) => decimal(unscaled, *scale),
        (Kind::Decimal, Value::Bytes(unscaled)) => {
            let scale = schema
                .parameters
                .as_ref()
                .and_then(|p| p.iter().find(|(k, _)| k == "scale"))
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            decimal(unscaled, scale)
        }
        (_, Value::Decimal { unscaled, scale }) => decimal(unscaled, *scale),
        (Kind::VariableDecimal, Value::Struct(fields)) => {
            let index = |name: &str| schema.fields.iter().position(|f| f.name == name);
            let scale = index("scale").and_then(|i| fields.get(i));
            let unscaled = index("value").and_then(|i| fields.get(i));
            match (scale, unscaled) {
                (Some(Value::Int32(scale)), Some(Value::Bytes(unscaled))) => decimal(unscaled, *scale),
                _ => return Err(mismatch()),
            }
        }
        (_, Value::Bytes(bytes)) => {
            let mut text = String::with_capacity(2 + bytes.len() * 2);
            text.push_str("\\x");
            for b in bytes {
                text.push_str(&format!("{b:02x}"));
            }
            text
        }
        _ => return Err(mismatch()),
    };
    Ok(Some(text))
}

fn float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{f:?}")
    }
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

/// Days since 1970-01-01 as a proleptic Gregorian date (Howard Hinnant's civil-from-days).
fn date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    match year {
        y if y <= 0 => format!("{:04}-{month:02}-{day:02} BC", 1 - y),
        y => format!("{y:04}-{month:02}-{day:02}"),
    }
}

/// `units` of a second `per_second` since midnight, to the microsecond.
fn time_of_day(units: i64, per_second: i64) -> String {
    let micros = scale_to_micros(units, per_second).rem_euclid(86_400_000_000);
    let seconds = micros / 1_000_000;
    format!("{:02}:{:02}:{:02}.{:06}", seconds / 3600, seconds / 60 % 60, seconds % 60, micros % 1_000_000)
}

fn timestamp(units: i64, per_second: i64, offset_seconds: i32) -> String {
    let micros = scale_to_micros(units, per_second) + i64::from(offset_seconds) * 1_000_000;
    let days = micros.div_euclid(86_400_000_000);
    let day_micros = micros.rem_euclid(86_400_000_000);
    let date = date(days);
    let time = time_of_day(day_micros, 1_000_000);
    match date.strip_suffix(" BC") {
        Some(date) => format!("{date} {time} BC"),
        None => format!("{date} {time}"),
    }
}

fn scale_to_micros(units: i64, per_second: i64) -> i64 {
    match per_second {
        1_000 => units.saturating_mul(1_000),
        1_000_000_000 => units.div_euclid(1_000),
        _ => units,
    }
}

/// PostgreSQL's reserved words a name must be quoted to use, beside those of other shapes.
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

/// A name as the config's quoting writes it.
pub fn quote(quoting: Quoting, name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !RESERVED.contains(&name);
    match quoting {
        Quoting::Never => name.to_string(),
        Quoting::Lowered if plain => name.to_string(),
        _ => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

pub fn table(quoting: Quoting, table: &TableId) -> String {
    match &table.schema {
        Some(schema) => format!("{}.{}", quote(quoting, schema), quote(quoting, &table.name)),
        None => quote(quoting, &table.name),
    }
}

/// A column of a table to create or extend.
pub struct ColumnDef<'a> {
    pub cell: &'a Cell,
    pub key: bool,
}

fn column_def(flavor: Flavor, quoting: Quoting, column: &ColumnDef<'_>) -> Result<String, String> {
    let schema = &column.cell.schema;
    let ty = column_type(flavor, schema).map_err(|e| format!("the field {} {e}", column.cell.name))?;
    let default = match &schema.default {
        Some(value) if !column.key => default_literal(flavor, schema, value),
        _ => None,
    };
    let nullable = match column.key || !schema.optional {
        true => "NOT NULL",
        false => "NULL",
    };
    Ok(match default {
        Some(d) => format!("{} {ty} DEFAULT {d} {nullable}", quote(quoting, &column.cell.name)),
        None => format!("{} {ty} {nullable}", quote(quoting, &column.cell.name)),
    })
}

fn default_literal(flavor: Flavor, schema: &Schema, value: &Value) -> Option<String> {
    let text = text(flavor, schema, value, 0).ok()??;
    Some(match value {
        Value::Int8(_)
        | Value::Int16(_)
        | Value::Int32(_)
        | Value::Int64(_)
        | Value::Float32(_)
        | Value::Float64(_)
            if schema.name.is_none() =>
        {
            text
        }
        Value::Boolean(_) => text,
        _ => format!("'{}'", text.replace('\'', "''")),
    })
}

/// `CREATE TABLE` with the key columns first and the primary key.
pub fn create_table(
    flavor: Flavor,
    quoting: Quoting,
    id: &TableId,
    columns: &[ColumnDef<'_>],
) -> Result<String, String> {
    let mut parts = columns.iter().map(|c| column_def(flavor, quoting, c)).collect::<Result<Vec<_>, _>>()?;
    let keys: Vec<String> = columns.iter().filter(|c| c.key).map(|c| quote(quoting, &c.cell.name)).collect();
    if !keys.is_empty() {
        parts.push(format!("PRIMARY KEY({})", keys.join(", ")));
    }
    Ok(format!("CREATE TABLE {} ({})", table(quoting, id), parts.join(", ")))
}

/// `ALTER TABLE … ADD COLUMN` for columns a record has and the table lacks; each must be
/// optional or have a default, as both references ask.
pub fn add_columns(
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
        parts.push(format!("ADD COLUMN {}", column_def(flavor, quoting, column)?));
    }
    Ok(format!("ALTER TABLE {} {}", table(quoting, id), parts.join(", ")))
}

/// `INSERT` of `rows` rows of `columns`, as upsert when `conflict` names the key (and updates
/// `updated`, or does nothing when there is none).
pub fn insert(
    quoting: Quoting,
    id: &TableId,
    columns: &[&str],
    rows: usize,
    upsert: Option<(&[&str], &[&str])>,
) -> String {
    let names: Vec<String> = columns.iter().map(|c| quote(quoting, c)).collect();
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", table(quoting, id), names.join(","));
    let width = columns.len();
    for row in 0..rows {
        if row > 0 {
            sql.push(',');
        }
        sql.push('(');
        for column in 0..width {
            if column > 0 {
                sql.push(',');
            }
            sql.push_str(&format!("${}", row * width + column + 1));
        }
        sql.push(')');
    }
    if let Some((key, updated)) = upsert {
        let key: Vec<String> = key.iter().map(|c| quote(quoting, c)).collect();
        sql.push_str(&format!(" ON CONFLICT ({}) ", key.join(",")));
        if updated.is_empty() {
            sql.push_str("DO NOTHING");
        } else {
            let sets: Vec<String> = updated.iter().map(|c| format!("{0}=EXCLUDED.{0}", quote(quoting, c))).collect();
            sql.push_str(&format!("DO UPDATE SET {}", sets.join(",")));
        }
    }
    sql
}

/// `UPDATE` of one row by its key.
pub fn update(quoting: Quoting, id: &TableId, set: &[&str], key: &[&str]) -> String {
    let sets: Vec<String> = set.iter().enumerate().map(|(i, c)| format!("{}=${}", quote(quoting, c), i + 1)).collect();
    let wheres: Vec<String> =
        key.iter().enumerate().map(|(i, c)| format!("{}=${}", quote(quoting, c), set.len() + i + 1)).collect();
    format!("UPDATE {} SET {} WHERE {}", table(quoting, id), sets.join(", "), wheres.join(" AND "))
}

/// `DELETE` of `rows` rows by their keys.
pub fn delete(quoting: Quoting, id: &TableId, key: &[&str], rows: usize) -> String {
    let names: Vec<String> = key.iter().map(|c| quote(quoting, c)).collect();
    let tuples: Vec<String> = (0..rows)
        .map(|row| {
            let params: Vec<String> = (0..key.len()).map(|c| format!("${}", row * key.len() + c + 1)).collect();
            format!("({})", params.join(","))
        })
        .collect();
    format!("DELETE FROM {} WHERE ({}) IN ({})", table(quoting, id), names.join(","), tuples.join(","))
}

pub fn truncate(quoting: Quoting, id: &TableId) -> String {
    format!("TRUNCATE TABLE {}", table(quoting, id))
}

/// The columns of a table: name and type, by `information_schema`.
pub fn columns_query() -> &'static str {
    "SELECT column_name, data_type FROM information_schema.columns \
     WHERE table_schema = COALESCE($1, current_schema()) AND table_name = $2 ORDER BY ordinal_position"
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

    use super::*;

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
    fn dates_times_and_timestamps_are_written_as_postgresql_reads_them() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(19_723), "2024-01-01");
        assert_eq!(date(-719_528), "0000-01-01".replace("0000", "0001") + " BC");
        assert_eq!(time_of_day(3_723_004, 1_000), "01:02:03.004000");
        assert_eq!(time_of_day(3_723_000_005, 1_000_000), "01:02:03.000005");
        assert_eq!(timestamp(1_704_067_200_123, 1_000, 0), "2024-01-01 00:00:00.123000");
        assert_eq!(timestamp(1_704_067_200_123_456, 1_000_000, 3600), "2024-01-01 01:00:00.123456");
        assert_eq!(timestamp(-1, 1_000, 0), "1969-12-31 23:59:59.999000");
    }

    #[test]
    fn names_are_quoted_as_the_config_asks() {
        assert_eq!(quote(Quoting::Lowered, "orders"), "orders");
        assert_eq!(quote(Quoting::Lowered, "order"), "\"order\"");
        assert_eq!(quote(Quoting::Lowered, "has space"), "\"has space\"");
        assert_eq!(quote(Quoting::Always, "Orders"), "\"Orders\"");
        assert_eq!(quote(Quoting::Always, "a\"b"), "\"a\"\"b\"");
        assert_eq!(quote(Quoting::Never, "Orders"), "Orders");
    }

    #[test]
    fn statements_take_numbered_parameters() {
        let id = TableId { schema: None, name: "t".into() };
        assert_eq!(
            insert(Quoting::Lowered, &id, &["k", "v"], 2, Some((&["k"], &["v"]))),
            "INSERT INTO t (k,v) VALUES ($1,$2),($3,$4) ON CONFLICT (k) DO UPDATE SET v=EXCLUDED.v"
        );
        assert_eq!(
            insert(Quoting::Always, &id, &["k"], 1, Some((&["k"], &[]))),
            "INSERT INTO \"t\" (\"k\") VALUES ($1) ON CONFLICT (\"k\") DO NOTHING"
        );
        assert_eq!(update(Quoting::Lowered, &id, &["a", "b"], &["k"]), "UPDATE t SET a=$1, b=$2 WHERE k=$3");
        assert_eq!(delete(Quoting::Lowered, &id, &["k", "j"], 2), "DELETE FROM t WHERE (k,j) IN (($1,$2),($3,$4))");
    }

    #[test]
    fn column_types_follow_each_reference() {
        let decimal = Schema::decimal(2).parameter("connect.decimal.precision", "10").build();
        assert_eq!(column_type(Flavor::Debezium, &decimal).unwrap(), "decimal(10,2)");
        assert_eq!(column_type(Flavor::Confluent, &decimal).unwrap(), "DECIMAL");
        let micro = Schema::int64().named("io.debezium.time.MicroTimestamp").build();
        assert_eq!(column_type(Flavor::Debezium, &micro).unwrap(), "timestamp(6)");
        assert_eq!(column_type(Flavor::Confluent, &micro).unwrap(), "BIGINT");
        assert_eq!(text(Flavor::Confluent, &micro, &Value::Int64(5), 0).unwrap().as_deref(), Some("5"));
        assert!(column_type(Flavor::Debezium, &Schema::array(Schema::int32().build()).build())
            .unwrap_err()
            .contains("an array"));
        assert_eq!(
            text(Flavor::Debezium, &Schema::bytes().build(), &Value::Bytes(vec![0, 255]), 0).unwrap().as_deref(),
            Some("\\x00ff")
        );
    }
}
