//! Section 10 of the benchmark: rows a second into PostgreSQL. Wharf's `jdbc-sink` and
//! Debezium's JDBC sink 3.5 in Kafka Connect, each with the same Debezium config, read the same
//! records (a struct key and a struct value of four fields, through JsonConverter) and write them
//! as inserts (no primary key) and as upserts (primary key from the record key). The ceiling is a
//! native client in this binary (`postgres`, the Rust crate) writing the same rows in the same
//! statements: multi-row inserts (upserts with `ON CONFLICT … DO UPDATE`) of `batch.size` rows,
//! one transaction each, values as literals. Each run writes a fresh table from a fresh worker.

use std::time::{Duration, Instant};

use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde_json::{json, Value};
use wharf_e2e::{bootstrap, create_topic, unique};

use super::{cell, median, start_in_group, Converters, Engine};

pub struct Sizes {
    pub rows: usize,
    pub runs: usize,
    pub timeout: Duration,
}

/// Debezium's default `batch.size`, which both sinks and the ceiling use.
const BATCH: usize = 500;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Insert,
    Upsert,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Insert => "insert",
            Mode::Upsert => "upsert",
        }
    }
}

pub(super) fn postgres() -> String {
    std::env::var("WHARF_TEST_POSTGRES")
        .expect("WHARF_TEST_POSTGRES is not set: run ./run bench, which starts PostgreSQL")
}

/// A client of the database, for counting rows while a sink writes them.
pub(super) fn client() -> postgres::Client {
    let (host, port) = postgres().rsplit_once(':').map(|(h, p)| (h.to_string(), p.to_string())).unwrap_or_default();
    postgres::Client::connect(
        &format!("host={host} port={port} user=wharf password=wharf dbname=wharf"),
        postgres::NoTls,
    )
    .expect("a client of the benchmark's PostgreSQL")
}

/// The rows of `table`; none while it does not exist.
fn count(client: &mut postgres::Client, table: &str) -> usize {
    client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .ok()
        .and_then(|row| row.try_get::<_, i64>(0).ok())
        .map_or(0, |n| n as usize)
}

/// The records of a run: `rows` distinct keys, as JsonConverter writes them.
fn produce(topic: &str, rows: usize) {
    create_topic(topic, 1, "delete");
    let producer: ThreadedProducer<DefaultProducerContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("linger.ms", "20")
        .set("batch.num.messages", "10000")
        .create()
        .expect("a producer");
    let key_schema = json!({"type": "struct", "name": "Key", "optional": false,
        "fields": [{"field": "id", "type": "int32", "optional": false}]});
    let value_schema = json!({"type": "struct", "name": "Order", "optional": false, "fields": [
        {"field": "id", "type": "int32", "optional": false},
        {"field": "name", "type": "string", "optional": true},
        {"field": "quantity", "type": "int64", "optional": false},
        {"field": "at", "type": "int64", "optional": false, "name": "org.apache.kafka.connect.data.Timestamp"}
    ]});
    for id in 0..rows {
        let key = json!({"schema": key_schema, "payload": {"id": id}}).to_string();
        let value = json!({"schema": value_schema, "payload": {"id": id, "name": format!("order {id}"),
            "quantity": id * 7, "at": 1_700_000_000_000u64 + id as u64}})
        .to_string();
        let mut record = BaseRecord::to(topic).key(&key).payload(&value).partition(0);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    record = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
    producer.flush(Duration::from_secs(60)).expect("every record sent");
}

/// One run of a sink.
struct SinkRun {
    /// Rows a second from the first row in the table to the last.
    rate: f64,
    /// Seconds from connector creation to the first row in the table.
    first_row: f64,
    /// The worker's peak RSS, MiB.
    peak_mib: f64,
}

fn run_sink(engine: Engine, mode: Mode, topic: &str, rows: usize, timeout: Duration) -> Option<SinkRun> {
    let dir = tempfile::tempdir().unwrap();
    let mut extra = Vec::new();
    if engine == Engine::Wharf {
        // The operator's allowance for the database the URL names.
        extra.push(("wasm.ceiling.net.connect", "127.0.0.1:*".to_string()));
    }
    if engine == Engine::Connect {
        let plugins = std::env::var("DEBEZIUM_JDBC_PLUGINS")
            .expect("DEBEZIUM_JDBC_PLUGINS is not set: run ./run bench, which fetches Debezium's JDBC sink");
        extra.push(("plugin.path", plugins));
    }
    let mut worker = start_in_group(engine, dir.path(), Converters::Json, &unique("bench-jdbc"), &extra);
    worker.wait_rest();
    let table = unique(&format!("bench_{}", mode.name())).replace('-', "_");
    let mut config = json!({
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "topics": topic,
        "tasks.max": "1",
        "connection.url": format!("jdbc:postgresql://{}/wharf", postgres()),
        "connection.username": "wharf",
        "connection.password": "wharf",
        "schema.evolution": "basic",
        "collection.name.format": table,
        "batch.size": BATCH.to_string(),
    });
    if mode == Mode::Upsert {
        config["insert.mode"] = Value::from("upsert");
        config["primary.key.mode"] = Value::from("record_key");
    }
    let mut counter = client();
    let started = Instant::now();
    worker.create(&unique("jdbc"), config);
    let mut first: Option<(Instant, usize)> = None;
    loop {
        let written = count(&mut counter, &table);
        if written > 0 && first.is_none() {
            first = Some((Instant::now(), written));
        }
        if written >= rows {
            break;
        }
        if started.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (first_at, first_count) = first?;
    // Rows that all arrived between two counts (a smoke run's few) leave no span to time: then
    // the rate counts from connector creation.
    let rate = match first_count < rows {
        true => (rows - first_count) as f64 / first_at.elapsed().as_secs_f64().max(1e-3),
        false => rows as f64 / started.elapsed().as_secs_f64(),
    };
    let first_row = first_at.duration_since(started).as_secs_f64();
    Some(SinkRun { rate, first_row, peak_mib: worker.memory().1 as f64 / 1024.0 })
}

/// The ceiling: the same rows in the same statements from a native client, one transaction per
/// batch; rows a second.
fn run_native(mode: Mode, rows: usize) -> f64 {
    let mut client = client();
    let table = unique(&format!("bench_native_{}", mode.name())).replace('-', "_");
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (id integer NOT NULL, name text NULL, quantity bigint NOT NULL, at timestamp(6) NOT NULL{})",
            if mode == Mode::Upsert { ", PRIMARY KEY(id)" } else { "" }
        ))
        .expect("the native client creates its table");
    let started = Instant::now();
    for first in (0..rows).step_by(BATCH) {
        let mut sql = format!("BEGIN; INSERT INTO {table} (id,name,quantity,at) VALUES ");
        for id in first..(first + BATCH).min(rows) {
            if id > first {
                sql.push(',');
            }
            let micros = (1_700_000_000_000u64 + id as u64) * 1000;
            sql.push_str(&format!(
                "({id},'order {id}',{},to_timestamp({}::float8 / 1000000) AT TIME ZONE 'UTC')",
                id * 7,
                micros
            ));
        }
        if mode == Mode::Upsert {
            sql.push_str(
                " ON CONFLICT (id) DO UPDATE SET name=EXCLUDED.name,quantity=EXCLUDED.quantity,at=EXCLUDED.at",
            );
        }
        sql.push_str("; COMMIT");
        client.batch_execute(&sql).expect("the native client writes a batch");
    }
    rows as f64 / started.elapsed().as_secs_f64()
}

pub fn section(sizes: &Sizes, heading: &str, date: &str, machine: &str, build: &str) -> String {
    let mut out = format!(
        "{heading}\n\n{date}; {machine}; Wharf {build} build, distributed worker; PostgreSQL 15 on loopback. \
         {} records of a struct key and a four-field struct value through JsonConverter, read by one task with \
         Debezium's config (`batch.size={BATCH}`, `schema.evolution=basic`); rows a second from the first row in the \
         table to the last (the table counted every 100 ms), and seconds from connector creation to the first row \
         (start-up, joining the group, the first fetch, creating the table); median of {} run(s), (min–max) when \
         there are several. Kafka Connect runs \
         Debezium's JDBC sink 3.5.0.Final. The ceiling writes the same rows in the same statements from a native client \
         (`batch.size` rows a statement, one transaction each).\n\n\
         | rows/s | Wharf jdbc-sink | Kafka Connect, Debezium | Wharf / Connect | native client | Wharf / native | first row, s: Wharf | Connect | peak RSS, MiB: Wharf | Connect |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        sizes.rows, sizes.runs
    );
    for mode in [Mode::Insert, Mode::Upsert] {
        let (mut wharf, mut connect, mut native) = (Vec::new(), Vec::new(), Vec::new());
        let (mut wharf_rss, mut connect_rss) = (Vec::new(), Vec::new());
        let (mut wharf_first, mut connect_first) = (Vec::new(), Vec::new());
        for run in 1..=sizes.runs {
            let topic = unique(&format!("bench-jdbc-{}", mode.name()));
            eprintln!("jdbc: run {run}/{}: {} {} records", sizes.runs, mode.name(), sizes.rows);
            produce(&topic, sizes.rows);
            for (engine, rates, firsts, rss) in [
                (Engine::Wharf, &mut wharf, &mut wharf_first, &mut wharf_rss),
                (Engine::Connect, &mut connect, &mut connect_first, &mut connect_rss),
            ] {
                match run_sink(engine, mode, &topic, sizes.rows, sizes.timeout) {
                    Some(run) => {
                        rates.push(run.rate);
                        firsts.push(run.first_row);
                        rss.push(run.peak_mib);
                    }
                    None => eprintln!("jdbc: {} did not write every row within {:?}", engine.name(), sizes.timeout),
                }
            }
            native.push(run_native(mode, sizes.rows));
        }
        let ratio = |a: &[f64], b: &[f64]| {
            if a.is_empty() || b.is_empty() {
                "—".to_string()
            } else {
                format!("{:.2}", median(a) / median(b))
            }
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            mode.name(),
            cell(&wharf),
            cell(&connect),
            ratio(&wharf, &connect),
            cell(&native),
            ratio(&wharf, &native),
            seconds(&wharf_first),
            seconds(&connect_first),
            cell(&wharf_rss),
            cell(&connect_rss)
        ));
    }
    out
}

/// A median of seconds with one decimal, and the spread.
pub(super) fn seconds(values: &[f64]) -> String {
    if values.is_empty() {
        return "—".to_string();
    }
    let (min, max) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    match values.len() {
        1 => format!("{:.1}", median(values)),
        _ => format!("{:.1} ({min:.1}–{max:.1})", median(values)),
    }
}
