//! Wharf's `jdbc-sink` beside Debezium's JDBC sink 3.5 running in a real Kafka Connect 4.1
//! worker: the same records, the same connector config (but the table name), the same database:
//! PostgreSQL, and MariaDB (which Debezium's sink reaches through its MySQL dialect and the
//! MariaDB driver it ships). The tables each makes (column names, types, nullability, primary
//! key) and the rows each writes must be the same; where the two differ on purpose,
//! docs/connectors/jdbc-sink.md says so and this test does not compare that part.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::databases::{mariadb, postgres, try_maria, try_sql, Bytes};
use wharf_e2e::*;

/// MariaDB's answer with bytes as hexadecimal, to compare as text.
fn try_maria_hex(statement: &str) -> Result<Vec<String>, String> {
    try_maria(statement, Bytes::AsHex)
}

/// The database both sinks write into.
#[derive(Clone, Copy, PartialEq)]
enum Db {
    Postgres,
    MariaDb,
}

impl Db {
    fn url(self) -> String {
        match self {
            Db::Postgres => format!("jdbc:postgresql://{}/wharf", postgres()),
            Db::MariaDb => format!("jdbc:mariadb://{}/wharf", mariadb()),
        }
    }

    fn shape(self, table: &str) -> Vec<String> {
        match self {
            Db::Postgres => shape(table),
            Db::MariaDb => try_maria_hex(&format!(
                "SELECT column_name, column_type, is_nullable, column_key FROM information_schema.columns \
                 WHERE table_schema = 'wharf' AND table_name = '{table}' ORDER BY ordinal_position"
            ))
            .unwrap(),
        }
    }

    fn rows(self, table: &str) -> Result<Vec<String>, String> {
        match self {
            Db::Postgres => rows(table),
            Db::MariaDb => try_maria_hex(&format!("SELECT * FROM {table} ORDER BY 1")),
        }
    }
}

fn debezium_plugins() -> String {
    std::env::var("DEBEZIUM_JDBC_PLUGINS").unwrap_or_else(|_| {
        panic!("DEBEZIUM_JDBC_PLUGINS is not set: run the suite with ./run test, which fetches Debezium's JDBC sink")
    })
}

/// A table as PostgreSQL describes it: each column's name, type, nullability, and whether it is
/// in the primary key.
fn shape(table: &str) -> Vec<String> {
    try_sql(&format!(
        "SELECT c.column_name, format_type(a.atttypid, a.atttypmod), c.is_nullable, \
         coalesce((SELECT 'key' FROM pg_index i WHERE i.indrelid = '{table}'::regclass AND i.indisprimary \
                   AND a.attnum = ANY(i.indkey)), '') \
         FROM information_schema.columns c JOIN pg_attribute a \
           ON a.attrelid = '{table}'::regclass AND a.attname = c.column_name \
         WHERE c.table_name = '{table}' ORDER BY c.ordinal_position"
    ))
    .unwrap()
}

/// Every row of a table as text, in the order of its first column.
fn rows(table: &str) -> Result<Vec<String>, String> {
    try_sql(&format!("SELECT t::text FROM {table} t ORDER BY 1"))
}

fn struct_schema(name: &str, fields: Value) -> Value {
    json!({"type": "struct", "name": name, "optional": false, "fields": fields})
}

/// Fields of every Connect type and logical type, optional ones among them.
fn row_fields() -> Value {
    json!([
        {"field": "id", "type": "int32", "optional": false},
        {"field": "tiny", "type": "int8", "optional": false},
        {"field": "small", "type": "int16", "optional": true},
        {"field": "big", "type": "int64", "optional": false},
        {"field": "ratio", "type": "float", "optional": true},
        {"field": "precise", "type": "double", "optional": false},
        {"field": "flag", "type": "boolean", "optional": false},
        {"field": "label", "type": "string", "optional": true},
        {"field": "blob", "type": "bytes", "optional": true},
        {"field": "amount", "type": "bytes", "optional": false, "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "3", "connect.decimal.precision": "12"}},
        {"field": "day", "type": "int32", "optional": false, "name": "org.apache.kafka.connect.data.Date"},
        {"field": "moment", "type": "int32", "optional": true, "name": "org.apache.kafka.connect.data.Time"},
        {"field": "stamp", "type": "int64", "optional": false, "name": "org.apache.kafka.connect.data.Timestamp"}
    ])
}

/// A row's values; `n` varies every field.
fn row_payload(id: i32, n: i64, label: Option<&str>) -> Value {
    // 12345 thousandths and friends, as big-endian two's complement.
    let amount = n.abs() * 1_000 + 345;
    let bytes = amount.to_be_bytes();
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(7);
    let start = if bytes[start] & 0x80 != 0 { start - 1 } else { start };
    json!({
        "id": id,
        "tiny": (n % 100) as i8,
        "small": if n % 2 == 0 { Value::Null } else { json!(n * 7) },
        "big": n * 1_000_000_007,
        "ratio": if n % 3 == 0 { Value::Null } else { json!(n as f64 / 4.0) },
        "precise": n as f64 / 3.0,
        "flag": n % 2 == 1,
        "label": label,
        "blob": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [n as u8, 0, 255]),
        "amount": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes[start..]),
        "day": 19_000 + n,
        "moment": if n % 2 == 0 { json!(n.abs() * 1_001) } else { Value::Null },
        "stamp": 1_700_000_000_000i64 + n * 86_400_123
    })
}

fn key_bytes(id: i32) -> Vec<u8> {
    json!({"schema": struct_schema("Key", json!([{"field": "id", "type": "int32", "optional": false}])), "payload": {"id": id}})
        .to_string()
        .into_bytes()
}

fn value_bytes(id: i32, n: i64, label: Option<&str>) -> Vec<u8> {
    json!({"schema": struct_schema("Row", row_fields()), "payload": row_payload(id, n, label)}).to_string().into_bytes()
}

/// The fields of a change event's row: every Connect type, and Debezium's semantic types as its
/// PostgreSQL connector writes them.
fn event_fields() -> Value {
    let mut fields = row_fields().as_array().unwrap().clone();
    let semantic = json!([
        {"field": "created", "type": "int64", "optional": false, "name": "io.debezium.time.MicroTimestamp"},
        {"field": "updated", "type": "string", "optional": true, "name": "io.debezium.time.ZonedTimestamp"},
        {"field": "opened", "type": "int64", "optional": true, "name": "io.debezium.time.MicroTime"},
        {"field": "born", "type": "int32", "optional": true, "name": "io.debezium.time.Date"},
        {"field": "doc", "type": "string", "optional": true, "name": "io.debezium.data.Json"},
        {"field": "ref", "type": "string", "optional": true, "name": "io.debezium.data.Uuid"},
        {"field": "mood", "type": "string", "optional": true, "name": "io.debezium.data.Enum", "parameters": {"allowed": "happy,sad"}},
        {"field": "odd", "type": "struct", "optional": true, "name": "io.debezium.data.VariableScaleDecimal",
         "fields": [{"field": "scale", "type": "int32", "optional": false}, {"field": "value", "type": "bytes", "optional": false}]}
    ]);
    fields.extend(semantic.as_array().unwrap().iter().cloned());
    Value::Array(fields)
}

fn event_payload(id: i32, n: i64) -> Value {
    let mut row = row_payload(id, n, Some("event"));
    let extra = json!({
        "created": 1_700_000_000_123_456i64 + n,
        "updated": format!("2024-03-0{}T10:15:30.25+02:00", n % 9 + 1),
        "opened": 3_723_000_005i64 + n,
        "born": 10_000 + n,
        "doc": format!("{{\"n\": {n}}}"),
        "ref": format!("9b2a3c4d-0000-4000-8000-00000000000{}", n % 10),
        "mood": if n % 2 == 0 { "happy" } else { "sad" },
        "odd": {"scale": 2, "value": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [0x30, 0x39])}
    });
    for (k, v) in extra.as_object().unwrap() {
        row[k] = v.clone();
    }
    row
}

/// A Debezium change event for the row: `op`, with `after` (none for a delete).
fn event_bytes(id: i32, n: i64, op: &str) -> Vec<u8> {
    let row =
        json!({"type": "struct", "name": "server.inventory.items.Value", "optional": true, "fields": event_fields()});
    let mut before = row.clone();
    before["field"] = json!("before");
    let mut after = row;
    after["field"] = json!("after");
    let source = json!({"type": "struct", "field": "source", "optional": false, "name": "io.debezium.connector.postgresql.Source",
        "fields": [{"field": "connector", "type": "string", "optional": false}, {"field": "table", "type": "string", "optional": false}]});
    let schema = json!({"type": "struct", "name": "server.inventory.items.Envelope", "optional": false, "fields": [
        before, after, source, {"field": "op", "type": "string", "optional": false}, {"field": "ts_ms", "type": "int64", "optional": true}
    ]});
    let payload = json!({
        // As PostgreSQL's connector sends a delete: the row as it was (REPLICA IDENTITY FULL).
        "before": if op == "d" { event_payload(id, n) } else { Value::Null },
        "after": if op == "d" { Value::Null } else { event_payload(id, n) },
        "source": {"connector": "postgresql", "table": "items"},
        "op": op,
        "ts_ms": 1_700_000_000_000i64
    });
    json!({"schema": schema, "payload": payload}).to_string().into_bytes()
}

/// A row with arrays (PostgreSQL only: Debezium writes arrays as PostgreSQL's `type[]`):
/// strings that need quoting and nulls among them, and numbers.
fn array_bytes(id: i32, tags: Value, scores: Value) -> Vec<u8> {
    let fields = json!([
        {"field": "id", "type": "int32", "optional": false},
        {"field": "tags", "type": "array", "optional": true, "items": {"type": "string", "optional": true}},
        {"field": "scores", "type": "array", "optional": false, "items": {"type": "int64", "optional": false}}
    ]);
    json!({"schema": struct_schema("Tagged", fields), "payload": {"id": id, "tags": tags, "scores": scores}})
        .to_string()
        .into_bytes()
}

/// A row with maps: Debezium writes them as PostgreSQL's hstore and MariaDB's json. The keys
/// keep the order Java's HashMap gives them, so that MariaDB's json text compares.
fn map_bytes(id: i32, attributes: Value, counts: Value) -> Vec<u8> {
    let fields = json!([
        {"field": "id", "type": "int32", "optional": false},
        {"field": "attributes", "type": "map", "optional": true,
         "keys": {"type": "string", "optional": false}, "values": {"type": "string", "optional": true}},
        {"field": "counts", "type": "map", "optional": false,
         "keys": {"type": "string", "optional": false}, "values": {"type": "int32", "optional": false}}
    ]);
    json!({"schema": struct_schema("Mapped", fields), "payload": {"id": id, "attributes": attributes, "counts": counts}})
        .to_string()
        .into_bytes()
}

/// A row with Debezium's bit strings (`io.debezium.data.Bits`: bytes, `length` bits): Debezium
/// makes `bit(n)` columns of them.
fn bits_bytes(id: i32, flags: &[u8], wide: Option<&[u8]>) -> Vec<u8> {
    let b64 = |b: &[u8]| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, b);
    let fields = json!([
        {"field": "id", "type": "int32", "optional": false},
        {"field": "flags", "type": "bytes", "optional": false, "name": "io.debezium.data.Bits", "version": 1,
         "parameters": {"length": "8"}},
        {"field": "wide", "type": "bytes", "optional": true, "name": "io.debezium.data.Bits", "version": 1,
         "parameters": {"length": "12"}}
    ]);
    let payload = json!({"id": id, "flags": b64(flags), "wide": wide.map(b64)});
    json!({"schema": struct_schema("Flagged", fields), "payload": payload}).to_string().into_bytes()
}

fn produce_all(topic: &str, records: &[(Vec<u8>, Option<Vec<u8>>)], headers: &[Vec<(&str, String)>]) {
    use rdkafka::message::{Header, OwnedHeaders};
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let producer: BaseProducer = rdkafka::ClientConfig::new().set("bootstrap.servers", bootstrap()).create().unwrap();
    for (i, (key, value)) in records.iter().enumerate() {
        let mut record = BaseRecord::<[u8], [u8]>::to(topic).key(key).partition(0);
        if let Some(value) = value {
            record = record.payload(value);
        }
        if let Some(these) = headers.get(i).filter(|h| !h.is_empty()) {
            let mut owned = OwnedHeaders::new();
            for (k, v) in these {
                owned = owned.insert(Header { key: k, value: Some(v.as_bytes()) });
            }
            record = record.headers(owned);
        }
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
}

/// One comparison: a config both run (each with its own table), and the records both read.
struct Case {
    name: &'static str,
    config: Vec<(&'static str, String)>,
    records: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Each record's headers, in order (none past the end).
    headers: Vec<Vec<(&'static str, String)>>,
    /// Rows each table ends with.
    rows: usize,
    /// Names the tables after the change events' source block (`${source.table}`, which is
    /// `items`) ahead of each sink's own name.
    by_source: bool,
}

fn cases(db: Db) -> Vec<Case> {
    let common = |extra: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        let mut config = vec![
            ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
            ("connection.url", db.url()),
            ("connection.username", "wharf".into()),
            ("connection.password", "wharf".into()),
            ("schema.evolution", "basic".into()),
        ];
        if db == Db::MariaDb {
            // Debezium quotes no name by default, and MariaDB refuses the reserved word `blob`
            // unquoted (Wharf quotes reserved words; docs/connectors/jdbc-sink.md).
            config.push(("quote.identifiers", "true".into()));
        }
        config.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        config
    };
    let plain: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
        (key_bytes(1), Some(value_bytes(1, 1, Some("one")))),
        (key_bytes(2), Some(value_bytes(2, 2, None))),
        (key_bytes(3), Some(value_bytes(3, 3, Some("three, with 'quotes' and é")))),
        (key_bytes(2), Some(value_bytes(2, 4, Some("two again")))),
        (key_bytes(3), None),
    ];
    let mut cases = vec![
        Case {
            name: "upsert_key",
            config: common(&[
                ("insert.mode", "upsert"),
                ("primary.key.mode", "record_key"),
                ("delete.enabled", "true"),
            ]),
            records: plain.clone(),
            rows: 2,
            headers: Vec::new(),
            by_source: false,
        },
        Case {
            name: "upsert_value",
            config: common(&[
                ("insert.mode", "upsert"),
                ("primary.key.mode", "record_value"),
                ("primary.key.fields", "id"),
            ]),
            records: plain.iter().filter(|(_, v)| v.is_some()).cloned().collect(),
            rows: 3,
            headers: Vec::new(),
            by_source: false,
        },
        Case {
            name: "insert_kafka",
            config: common(&[("insert.mode", "insert"), ("primary.key.mode", "kafka")]),
            records: plain.iter().filter(|(_, v)| v.is_some()).cloned().collect(),
            rows: 4,
            headers: Vec::new(),
            by_source: false,
        },
        Case {
            name: "insert_none",
            config: common(&[("insert.mode", "insert")]),
            records: plain.iter().filter(|(_, v)| v.is_some()).cloned().collect(),
            rows: 4,
            headers: Vec::new(),
            by_source: false,
        },
        Case {
            name: "events",
            config: common(&[
                ("insert.mode", "upsert"),
                ("primary.key.mode", "record_key"),
                ("delete.enabled", "true"),
            ]),
            records: vec![
                (key_bytes(1), Some(event_bytes(1, 5, "r"))),
                (key_bytes(2), Some(event_bytes(2, 6, "c"))),
                (key_bytes(1), Some(event_bytes(1, 7, "u"))),
                (key_bytes(2), Some(event_bytes(2, 6, "d"))),
                (key_bytes(2), None),
                (key_bytes(4), Some(event_bytes(4, 8, "c"))),
            ],
            rows: 2,
            headers: Vec::new(),
            by_source: false,
        },
    ];
    if db == Db::Postgres {
        cases.push(Case {
            name: "arrays",
            config: common(&[("insert.mode", "upsert"), ("primary.key.mode", "record_key")]),
            records: vec![
                (
                    key_bytes(1),
                    Some(array_bytes(1, json!(["a", "b, \"c\"", null, "{x}", "back\\slash"]), json!([1, 2, 3]))),
                ),
                (key_bytes(2), Some(array_bytes(2, Value::Null, json!([])))),
                (key_bytes(3), Some(array_bytes(3, json!([]), json!([-9_007_199_254_740_993i64])))),
                (key_bytes(1), Some(array_bytes(1, json!(["again", "NULL"]), json!([7])))),
            ],
            rows: 3,
            headers: Vec::new(),
            by_source: false,
        });
    }
    let events = vec![
        (key_bytes(1), Some(event_bytes(1, 5, "r"))),
        (key_bytes(2), Some(event_bytes(2, 6, "c"))),
        (key_bytes(1), Some(event_bytes(1, 7, "u"))),
    ];
    cases.push(Case {
        name: "by_source",
        config: common(&[("insert.mode", "upsert"), ("primary.key.mode", "record_key")]),
        records: events,
        headers: Vec::new(),
        rows: 2,
        by_source: true,
    });
    // Timestamps in a named zone, either side of Paris's change from summer time (2023-10-29):
    // stamps of 2023-10-15, 2023-10-28 and 2023-11-15.
    cases.push(Case {
        name: "paris",
        config: common(&[
            ("insert.mode", "upsert"),
            ("primary.key.mode", "record_key"),
            ("use.time.zone", "Europe/Paris"),
        ]),
        records: vec![
            (key_bytes(1), Some(value_bytes(1, -30, Some("summer")))),
            (key_bytes(2), Some(value_bytes(2, -17, Some("last day of summer time")))),
            (key_bytes(3), Some(value_bytes(3, 1, Some("winter")))),
        ],
        headers: Vec::new(),
        rows: 3,
        by_source: false,
    });
    // Numbers with their top bit set are left out: Debezium's sink writes them with a minus sign,
    // which PostgreSQL refuses (docs/connectors/jdbc-sink.md).
    cases.push(Case {
        name: "bits",
        config: common(&[("insert.mode", "upsert"), ("primary.key.mode", "record_key")]),
        records: vec![
            (key_bytes(1), Some(bits_bytes(1, &[0x05], Some(&[0x01, 0x02])))),
            (key_bytes(2), Some(bits_bytes(2, &[0x00], None))),
            (key_bytes(3), Some(bits_bytes(3, &[0x7f], Some(&[0x00])))),
        ],
        headers: Vec::new(),
        rows: 3,
        by_source: false,
    });
    // The primary key from the headers (as SimpleHeaderConverter reads them: text, and a number
    // as its smallest integer type).
    let tenant = |t: &str, id: i32| vec![("tenant", t.to_string()), ("id", id.to_string())];
    cases.push(Case {
        name: "header_key",
        config: common(&[("insert.mode", "upsert"), ("primary.key.mode", "record_header")]),
        records: vec![
            (key_bytes(1), Some(value_bytes(1, 1, Some("one")))),
            (key_bytes(1), Some(value_bytes(1, 2, Some("one, elsewhere")))),
            (key_bytes(2), Some(value_bytes(2, 3, None))),
            (key_bytes(1), Some(value_bytes(1, 4, Some("one again")))),
        ],
        headers: vec![tenant("acme", 1), tenant("globex", 1), tenant("acme", 2), tenant("acme", 1)],
        rows: 3,
        by_source: false,
    });
    // Debezium's MySQL dialect binds a map as `cast(? as json)`, which MariaDB does not know, so
    // its task fails there: Wharf's json maps in MariaDB are checked in jdbc_sink.rs instead.
    if db == Db::Postgres {
        cases.push(Case {
            name: "maps",
            config: common(&[("insert.mode", "upsert"), ("primary.key.mode", "record_key")]),
            records: vec![
                (
                    key_bytes(1),
                    Some(map_bytes(1, json!({"a": "x", "b": "with space, and é"}), json!({"a": 1, "b": -2}))),
                ),
                (key_bytes(2), Some(map_bytes(2, Value::Null, json!({})))),
                (key_bytes(1), Some(map_bytes(1, json!({"c": "again"}), json!({"c": 3})))),
            ],
            headers: Vec::new(),
            rows: 2,
            by_source: false,
        });
    }
    cases
}

#[test]
fn tables_and_rows_are_those_debeziums_jdbc_sink_makes_from_the_same_records_and_config() {
    compare(Db::Postgres);
}

#[test]
fn in_mariadb_tables_and_rows_are_those_debeziums_jdbc_sink_makes_through_its_mysql_dialect() {
    compare(Db::MariaDb);
}

fn compare(db: Db) {
    let run = unique(if db == Db::Postgres { "cmp" } else { "cmpm" }).replace('-', "_");
    if db == Db::Postgres {
        // Maps go to hstore columns, as Debezium writes them; the extension is a trusted one, which
        // the database's owner may create.
        try_sql("CREATE EXTENSION IF NOT EXISTS hstore").unwrap();
    }
    let cases = cases(db);
    let mut connect_connectors = Vec::new();
    let mut wharf = Standalone::new(&[]);
    let mut tables = Vec::new();
    for case in &cases {
        let topic = format!("{run}_{}", case.name);
        create_topic(&topic, 1, "delete");
        produce_all(&topic, &case.records, &case.headers);
        let (theirs, ours) = (format!("connect_{topic}"), format!("wharf_{topic}"));
        let format = |table: &str| match case.by_source {
            true => format!("${{source.table}}_{table}"),
            false => table.to_string(),
        };
        let mut connect_config = case.config.clone();
        connect_config.push(("topics", topic.clone()));
        connect_config.push(("collection.name.format", format(&theirs)));
        connect_connectors.push((format!("connect-{topic}"), connect_config));
        let mut wharf_config = case.config.clone();
        wharf_config.push(("topics", topic.clone()));
        wharf_config.push(("collection.name.format", format(&ours)));
        wharf_config.push(("key.converter", "org.apache.kafka.connect.json.JsonConverter".into()));
        wharf_config.push(("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()));
        wharf.add_connector(&format!("wharf-{topic}"), &wharf_config);
        let (theirs, ours) = match case.by_source {
            true => (format!("items_{theirs}"), format!("items_{ours}")),
            false => (theirs, ours),
        };
        tables.push((case, theirs, ours));
    }
    let dir = wharf.dir.path().to_path_buf();
    let connectors: Vec<(&str, Vec<(&str, String)>)> =
        connect_connectors.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    let _connect = KillOnDrop(start_connect(&dir, Some(&debezium_plugins()), &connectors));
    let worker = wharf.start();
    let connect_log = || std::fs::read_to_string(dir.join("connect.log")).unwrap_or_default();

    for (case, theirs, ours) in &tables {
        for (who, table) in [("Debezium's JDBC sink in Kafka Connect", theirs), ("Wharf's jdbc-sink", ours)] {
            let done = worker.wait_for_rows(db, table, case.rows, Duration::from_secs(120));
            if !done {
                let log = connect_log();
                let tail: Vec<&str> = log
                    .lines()
                    .filter(|l| l.contains("ERROR") || l.contains("Caused by") || l.contains("Exception"))
                    .rev()
                    .take(40)
                    .collect();
                panic!(
                    "{}: {who} did not write {} rows into {table}; it has {:?}\nConnect's errors end:\n{}",
                    case.name,
                    case.rows,
                    db.rows(table),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
        }
        assert_eq!(db.shape(ours), db.shape(theirs), "{}: the tables differ (Wharf's, then Debezium's)", case.name);
        let log = connect_log();
        let tail: Vec<&str> =
            log.lines().filter(|l| l.contains("ERROR") || l.contains("WARN")).rev().take(20).collect();
        assert_eq!(
            db.rows(ours),
            db.rows(theirs),
            "{}: the rows differ (Wharf's, then Debezium's); Connect's warnings and errors end:\n{}",
            case.name,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
}

trait RowWait {
    fn wait_for_rows(&self, db: Db, table: &str, count: usize, timeout: Duration) -> bool;
}

impl RowWait for Worker {
    /// Whether `table` holds `count` rows within `timeout`, and no more arrive for a moment.
    fn wait_for_rows(&self, db: Db, table: &str, count: usize, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if db.rows(table).is_ok_and(|r| r.len() == count) {
                std::thread::sleep(Duration::from_millis(1500));
                return db.rows(table).is_ok_and(|r| r.len() == count);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    }
}
