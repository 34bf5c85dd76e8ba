//! Section 11 of the benchmark: change events a second out of PostgreSQL. Wharf's `postgres-cdc`
//! and Debezium's PostgreSQL connector 3.6.1 in Kafka Connect, each with the same Debezium config
//! and JsonConverter, capture the same changes of a six-column table:
//!
//! - **streaming**: `rows` inserts, in transactions of [`TRANSACTION`] rows, written while the
//!   three readers' slots already exist, so that each reads the same backlog of WAL as fast as
//!   it can (the database's own insert rate is not timed);
//! - **snapshot**: a table of `rows` rows read by a connector's initial snapshot.
//!
//! The ceilings read the same data natively, with nothing written anywhere: for streaming, a
//! bare replication client (Wharf's wire protocol crate, built natively) decoding every pgoutput
//! message of its own slot; for the snapshot, a client reading the table through a cursor,
//! `snapshot.fetch.size` rows a fetch, in the repeatable-read transaction a snapshot uses.

use std::time::{Duration, Instant};

use serde_json::json;
use wharf_db_wire::postgres::{Connection, Replication};
use wharf_db_wire::{net::Endpoint, Keys, Login};
use wharf_e2e::{delete_topics, topic_count, unique};
use wharf_jdbc_url::TlsMode;
use wharf_postgres_cdc::pgoutput::{self, Message};

use super::jdbc::{client, postgres};
use super::{cell, median, start_in_group, Converters, Engine};

pub struct Sizes {
    /// Rows inserted for the streaming workload.
    pub stream_rows: usize,
    /// Rows of the snapshot's table.
    pub snapshot_rows: usize,
    pub runs: usize,
    pub timeout: Duration,
}

/// Rows in each transaction of the streaming workload.
const TRANSACTION: usize = 1_000;

/// Debezium's default `snapshot.fetch.size`, which both connectors and the snapshot's ceiling use.
const FETCH: usize = 10_240;

/// The table both workloads capture: the columns of an ordinary business table.
const COLUMNS: &str = "id bigint PRIMARY KEY, name text NOT NULL, quantity integer NOT NULL, \
                       price numeric(10,2), created timestamptz NOT NULL, active boolean NOT NULL";

/// Rows `first..last` (1-based), as one `INSERT … SELECT`.
fn insert(table: &str, first: usize, last: usize) -> String {
    format!(
        "INSERT INTO {table} SELECT g, 'customer ' || g, g % 1000, (g % 100000) / 100.0, \
         timestamptz '2026-01-01 00:00:00+00' + g * interval '1 millisecond', g % 2 = 0 \
         FROM generate_series({first}, {last}) g"
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Stream,
    Snapshot,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Stream => "streaming inserts",
            Workload::Snapshot => "snapshot",
        }
    }
}

/// One run of a connector.
struct Run {
    /// Events a second from the first event in the topic to the last (the topic counted every
    /// 100 ms).
    rate: f64,
    /// Seconds from connector creation to the first event in the topic.
    first_event: f64,
    /// The worker's peak RSS, MiB.
    peak_mib: f64,
}

fn debezium_config(prefix: &str, table: &str, slot: &str, publication: &str, mode: &str) -> serde_json::Value {
    let (host, port) = postgres().rsplit_once(':').map(|(h, p)| (h.to_string(), p.to_string())).unwrap_or_default();
    json!({
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": host,
        "database.port": port,
        "database.user": "wharf",
        "database.password": "wharf",
        "database.dbname": "wharf",
        "database.sslmode": "disable",
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.name": publication,
        "publication.autocreate.mode": "filtered",
        "table.include.list": format!("public.{table}"),
        "snapshot.mode": mode,
    })
}

/// One connector on a fresh worker until `events` are in its topic.
fn run_connector(
    engine: Engine,
    workload: Workload,
    table: &str,
    publication: &str,
    slot: &str,
    events: usize,
    timeout: Duration,
) -> Option<Run> {
    let dir = tempfile::tempdir().unwrap();
    let mut extra = Vec::new();
    match engine {
        // The operator's allowance for the database Debezium's keys name.
        Engine::Wharf => extra.push(("wasm.ceiling.net.connect", "127.0.0.1:*".to_string())),
        Engine::Connect => extra.push((
            "plugin.path",
            std::env::var("DEBEZIUM_POSTGRES_PLUGINS").expect(
                "DEBEZIUM_POSTGRES_PLUGINS is not set: run ./run bench, which fetches Debezium's PostgreSQL connector",
            ),
        )),
    }
    let mut worker = start_in_group(engine, dir.path(), Converters::Json, &unique("bench-cdc"), &extra);
    worker.wait_rest();
    let prefix = unique("cdc").replace('-', "_");
    let topic = format!("{prefix}.public.{table}");
    let mode = match workload {
        // The slot exists and holds the backlog: stream it from its start, reading no table.
        Workload::Stream => "no_data",
        Workload::Snapshot => "initial",
    };
    let started = Instant::now();
    worker.create(&unique("cdc"), debezium_config(&prefix, table, slot, publication, mode));
    let mut first: Option<(Instant, usize)> = None;
    loop {
        let seen = topic_count(&topic).max(0) as usize;
        if seen > 0 && first.is_none() {
            first = Some((Instant::now(), seen));
        }
        if seen >= events {
            break;
        }
        if started.elapsed() > timeout {
            eprintln!("cdc: {} had {seen} of {events} events after {timeout:?}", engine.name());
            drop(worker);
            delete_topics(&[&topic]);
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some((first_at, first_count)) = first else {
        delete_topics(&[&topic]);
        return None;
    };
    // Events that all arrived between two counts (a smoke run's few) leave no span to time:
    // then the rate counts from connector creation.
    let rate = match first_count < events {
        true => (events - first_count) as f64 / first_at.elapsed().as_secs_f64().max(1e-3),
        false => events as f64 / started.elapsed().as_secs_f64(),
    };
    let first_event = first_at.duration_since(started).as_secs_f64();
    let run = Run { rate, first_event, peak_mib: worker.memory().1 as f64 / 1024.0 };
    eprintln!(
        "cdc: {} {}: {:.0} events/s, first event after {:.1} s, peak RSS {:.0} MiB",
        engine.name(),
        workload.name(),
        run.rate,
        run.first_event,
        run.peak_mib
    );
    drop(worker);
    // Debezium's events with their schemas take kilobytes each: the measured topic goes.
    delete_topics(&[&topic]);
    Some(run)
}

const KEYS: Keys = Keys {
    client: "the benchmark's ceiling",
    server: "WHARF_TEST_POSTGRES",
    user: "its user",
    password: "its password",
    database: "its database",
};

/// A native connection to the benchmark's database, through the same wire protocol crate the
/// plugin uses.
fn native(replication: bool) -> Connection {
    let address = postgres();
    let (host, port) = address.rsplit_once(':').unwrap_or_default();
    let port: u16 = port.parse().expect("WHARF_TEST_POSTGRES ends with a port");
    let login = Login {
        endpoint: Endpoint {
            host,
            port,
            address: &address,
            tls: TlsMode::Disable,
            tls_setting: "sslmode=disable",
            server_key: KEYS.server,
        },
        address: &address,
        user: "wharf",
        password: Some("wharf"),
        database: "wharf",
        application: "wharf-bench",
        timeout: Duration::from_secs(30),
        keys: &KEYS,
        replication,
    };
    Connection::connect(&login).unwrap_or_else(|e| panic!("the ceiling cannot connect to PostgreSQL: {e}"))
}

/// The streaming ceiling: the slot's pgoutput messages decoded until `events` inserts went by;
/// inserts a second from `START_REPLICATION` on.
fn stream_ceiling(slot: &str, publication: &str, events: usize, timeout: Duration) -> Option<f64> {
    let mut stream = native(true);
    let started = Instant::now();
    stream
        .start_replication(&format!(
            "START_REPLICATION SLOT \"{slot}\" LOGICAL 0/0 (\"proto_version\" '1', \"publication_names\" '{publication}')"
        ))
        .unwrap_or_else(|e| panic!("the ceiling cannot start replication: {e}"));
    let (mut seen, mut confirmed, mut last_status) = (0usize, 0u64, Instant::now());
    while seen < events {
        if started.elapsed() > timeout {
            eprintln!("cdc: the replication ceiling saw {seen} of {events} inserts after {timeout:?}");
            return None;
        }
        let reply = match stream.next_replication(Duration::from_millis(500)) {
            Ok(Some(Replication::Wal { data, end, .. })) => {
                match pgoutput::decode(&data) {
                    Ok(Message::Insert { new, .. }) => {
                        std::hint::black_box(new);
                        seen += 1;
                    }
                    Ok(other) => {
                        std::hint::black_box(other);
                    }
                    Err(e) => panic!("the ceiling cannot decode a pgoutput message: {e}"),
                }
                confirmed = end.0;
                false
            }
            Ok(Some(Replication::Keepalive { reply, .. })) => reply,
            Ok(None) => false,
            Err(e) => panic!("the ceiling's replication stream failed: {e}"),
        };
        if reply || last_status.elapsed() > Duration::from_secs(10) {
            let _ = stream.send_status(wharf_db_wire::postgres::Lsn(confirmed), false);
            last_status = Instant::now();
        }
    }
    let rate = events as f64 / started.elapsed().as_secs_f64();
    stream.close();
    eprintln!("cdc: the replication ceiling: {rate:.0} inserts/s");
    Some(rate)
}

/// The snapshot's ceiling: the table through a cursor in a repeatable-read transaction,
/// `FETCH` rows at a time, every value as text; rows a second.
fn snapshot_ceiling(table: &str, rows: usize) -> f64 {
    let mut db = native(false);
    let started = Instant::now();
    db.simple(&format!(
        "BEGIN ISOLATION LEVEL REPEATABLE READ; DECLARE bench_cursor NO SCROLL CURSOR FOR SELECT * FROM {table}"
    ))
    .unwrap_or_else(|e| panic!("the ceiling cannot open a cursor: {e}"));
    let mut read = 0;
    loop {
        let batch = db
            .simple(&format!("FETCH {FETCH} FROM bench_cursor"))
            .unwrap_or_else(|e| panic!("the ceiling cannot fetch: {e}"));
        if batch.is_empty() {
            break;
        }
        read += batch.len();
        std::hint::black_box(batch);
    }
    let _ = db.simple("COMMIT");
    assert_eq!(read, rows, "the snapshot's ceiling read every row");
    let rate = rows as f64 / started.elapsed().as_secs_f64();
    db.close();
    eprintln!("cdc: the snapshot's ceiling: {rate:.0} rows/s");
    rate
}

fn sql(statement: &str) {
    client().batch_execute(statement).unwrap_or_else(|e| match e.as_db_error() {
        Some(db) => panic!("{statement}: {db}"),
        None => panic!("{statement}: {e}"),
    });
}

/// Drops the slots and the table of a run, however it ends.
struct Cleanup {
    table: String,
    publication: String,
    slots: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let mut db = client();
        for slot in &self.slots {
            // A worker that stops releases its slot within a moment.
            for _ in 0..100 {
                let dropped = db.batch_execute(&format!(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{slot}'"
                ));
                if dropped.is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = db.batch_execute(&format!(
            "DROP PUBLICATION IF EXISTS {}; DROP TABLE IF EXISTS {}",
            self.publication, self.table
        ));
    }
}

/// The samples of one workload.
#[derive(Default)]
struct Samples {
    wharf: Vec<f64>,
    connect: Vec<f64>,
    ceiling: Vec<f64>,
    wharf_first: Vec<f64>,
    connect_first: Vec<f64>,
    wharf_rss: Vec<f64>,
    connect_rss: Vec<f64>,
}

impl Samples {
    fn push(&mut self, engine: Engine, run: Option<Run>) {
        let Some(run) = run else { return };
        let (rates, firsts, rss) = match engine {
            Engine::Wharf => (&mut self.wharf, &mut self.wharf_first, &mut self.wharf_rss),
            Engine::Connect => (&mut self.connect, &mut self.connect_first, &mut self.connect_rss),
        };
        rates.push(run.rate);
        firsts.push(run.first_event);
        rss.push(run.peak_mib);
    }
}

fn stream_run(sizes: &Sizes, samples: &mut Samples) {
    let table = unique("bench_cdc_stream").replace('-', "_");
    let publication = format!("{table}_pub");
    let slot = |who: &str| format!("{table}_{who}");
    let slots = vec![slot("wharf"), slot("connect"), slot("ceiling")];
    let _cleanup = Cleanup { table: table.clone(), publication: publication.clone(), slots: slots.clone() };
    sql(&format!("CREATE TABLE {table} ({COLUMNS}); CREATE PUBLICATION {publication} FOR TABLE {table}"));
    for slot in &slots {
        sql(&format!("SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')"));
    }
    eprintln!("cdc: inserting {} rows in transactions of {TRANSACTION}", sizes.stream_rows);
    let mut db = client();
    for first in (1..=sizes.stream_rows).step_by(TRANSACTION) {
        let last = (first + TRANSACTION - 1).min(sizes.stream_rows);
        db.batch_execute(&insert(&table, first, last)).expect("the workload's inserts");
    }
    samples.ceiling.extend(stream_ceiling(&slot("ceiling"), &publication, sizes.stream_rows, sizes.timeout));
    for engine in [Engine::Wharf, Engine::Connect] {
        let who = if engine == Engine::Wharf { "wharf" } else { "connect" };
        let run =
            run_connector(engine, Workload::Stream, &table, &publication, &slot(who), sizes.stream_rows, sizes.timeout);
        samples.push(engine, run);
    }
}

fn snapshot_run(sizes: &Sizes, samples: &mut Samples) {
    let table = unique("bench_cdc_snapshot").replace('-', "_");
    let publication = format!("{table}_pub");
    let slot = |who: &str| format!("{table}_{who}");
    let _cleanup =
        Cleanup { table: table.clone(), publication: publication.clone(), slots: vec![slot("wharf"), slot("connect")] };
    eprintln!("cdc: filling a table of {} rows", sizes.snapshot_rows);
    sql(&format!("CREATE TABLE {table} ({COLUMNS}); {}", insert(&table, 1, sizes.snapshot_rows)));
    sql(&format!("VACUUM ANALYZE {table}"));
    samples.ceiling.push(snapshot_ceiling(&table, sizes.snapshot_rows));
    for engine in [Engine::Wharf, Engine::Connect] {
        let who = if engine == Engine::Wharf { "wharf" } else { "connect" };
        let run = run_connector(
            engine,
            Workload::Snapshot,
            &table,
            &publication,
            &slot(who),
            sizes.snapshot_rows,
            sizes.timeout,
        );
        samples.push(engine, run);
    }
}

pub fn section(sizes: &Sizes, heading: &str, date: &str, machine: &str, build: &str) -> String {
    let mut out = format!(
        "{heading}\n\n{date}; {machine}; Wharf {build} build, distributed worker; PostgreSQL 15 on loopback \
         (`wal_level=logical`). One task with Debezium's config and JsonConverter (schemas on), on both engines, \
         capturing a table of six columns (bigint key, text, integer, numeric(10,2), timestamptz, boolean). \
         *Streaming*: {} inserts in transactions of {TRANSACTION} rows, written after the slots were made, so each \
         reader drains the same backlog of WAL (`snapshot.mode=no_data` on the existing slot). *Snapshot*: a table of \
         {} rows read by `snapshot.mode=initial` (`snapshot.fetch.size={FETCH}`). Events a second from the first event \
         in the topic to the last (the topic counted every 100 ms), and seconds from connector creation to the first \
         event; median of {} run(s), (min–max) when there are several. Kafka Connect 4.1.1 runs Debezium's PostgreSQL \
         connector 3.6.1.Final. The ceilings write nothing: for streaming, a native replication client (Wharf's wire \
         protocol crate) decoding every pgoutput message of a slot of its own; for the snapshot, a native client \
         fetching the table through a cursor, {FETCH} rows a fetch, as text.\n\n\
         | events/s | Wharf postgres-cdc | Kafka Connect, Debezium | Wharf / Connect | ceiling | Wharf / ceiling | first event, s: Wharf | Connect | peak RSS, MiB: Wharf | Connect |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        sizes.stream_rows, sizes.snapshot_rows, sizes.runs
    );
    for workload in [Workload::Stream, Workload::Snapshot] {
        let mut samples = Samples::default();
        for run in 1..=sizes.runs {
            eprintln!("cdc: run {run}/{}: {}", sizes.runs, workload.name());
            match workload {
                Workload::Stream => stream_run(sizes, &mut samples),
                Workload::Snapshot => snapshot_run(sizes, &mut samples),
            }
        }
        let ratio = |a: &[f64], b: &[f64]| {
            if a.is_empty() || b.is_empty() {
                "—".to_string()
            } else {
                format!("{:.2}", median(a) / median(b))
            }
        };
        let cells = |values: &[f64]| if values.is_empty() { "—".to_string() } else { cell(values) };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            workload.name(),
            cells(&samples.wharf),
            cells(&samples.connect),
            ratio(&samples.wharf, &samples.connect),
            cells(&samples.ceiling),
            ratio(&samples.wharf, &samples.ceiling),
            super::jdbc::seconds(&samples.wharf_first),
            super::jdbc::seconds(&samples.connect_first),
            cells(&samples.wharf_rss),
            cells(&samples.connect_rss)
        ));
    }
    out
}
