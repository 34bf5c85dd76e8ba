//! The shipped `postgres-cdc` against a real PostgreSQL (`scripts/postgres`, started by `./run
//! test`, with wal_level=logical) and a real broker: Debezium's PostgreSQL connector config as
//! people have it, the snapshot and the stream of changes it writes, and where it resumes.

use std::time::Duration;

use serde_json::Value;
use wharf_e2e::databases::{postgres, try_sql};
use wharf_e2e::*;

/// Runs SQL through psql; its rows.
fn sql(statement: &str) -> Vec<String> {
    try_sql(statement).unwrap_or_else(|e| panic!("psql {statement}: {e}"))
}

/// A schema of the test's own (names are lower case, as PostgreSQL folds them).
fn schema(prefix: &str) -> String {
    let name = unique(prefix).replace('-', "_").to_lowercase();
    sql(&format!("CREATE SCHEMA {name}"));
    name
}

/// Debezium's PostgreSQL connector config for the tables `tables` (schema.table, comma
/// separated), on a slot and a publication of the test's own, dropped when the task stops.
fn debezium_config(prefix: &str, tables: &str, slot: &str) -> Vec<(&'static str, String)> {
    let (host, port) = postgres().rsplit_once(':').map(|(h, p)| (h.to_string(), p.to_string())).unwrap();
    vec![
        ("connector.class", "io.debezium.connector.postgresql.PostgresConnector".into()),
        ("database.hostname", host),
        ("database.port", port),
        ("database.user", "wharf".into()),
        ("database.password", "wharf".into()),
        ("database.dbname", "wharf".into()),
        ("database.sslmode", "disable".into()),
        ("topic.prefix", prefix.into()),
        ("plugin.name", "pgoutput".into()),
        ("slot.name", slot.into()),
        ("publication.name", format!("{slot}_pub")),
        ("publication.autocreate.mode", "filtered".into()),
        ("table.include.list", tables.into()),
        ("key.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
        ("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
    ]
}

/// The topic's records as JSON: key and value (null for a tombstone).
fn events(topic: &str) -> Vec<(Value, Value)> {
    topic_records(topic)
        .into_iter()
        .map(|(_, key, value)| {
            let key = serde_json::from_str(&key).unwrap_or(Value::Null);
            let value = value.map_or(Value::Null, |v| serde_json::from_str(&v).unwrap());
            (key, value)
        })
        .collect()
}

fn wait_events(worker: &Worker, topic: &str, count: usize) -> Vec<(Value, Value)> {
    worker.wait(&format!("{count} record(s) in {topic}"), Duration::from_secs(90), || {
        let got = topic_count(topic);
        (got >= count as i64).then_some(())
    });
    let all = events(topic);
    assert_eq!(all.len(), count, "{topic}: {all:#?}");
    all
}

fn payload(event: &(Value, Value)) -> &Value {
    &event.1["payload"]
}

/// A replication slot a test makes (through a connector): dropped when the test ends, however it
/// ends, so that slots left behind neither hold the server's WAL nor use up
/// max_replication_slots.
struct Slot(String);

impl Slot {
    fn new(name: &str) -> Slot {
        Slot(name.to_string())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let slot = &self.0;
        // The process reading it (a worker just killed) may hold it for a moment.
        for _ in 0..50 {
            let _ = try_sql(&format!(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active"
            ));
            match try_sql(&format!(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{slot}'"
            )) {
                Ok(_) => return,
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}
/// One connector of Debezium's config on `table` (schema.table), with `extra` keys in place of
/// the config's, in a standalone worker of its own that is not started yet; its slot is dropped
/// when the test ends.
struct OneConnector {
    standalone: Standalone,
    connector: String,
    prefix: String,
    topic: String,
    slot: String,
    config: Vec<(&'static str, String)>,
    _slot: Slot,
}

fn one_connector(table: &str, extra: &[(&'static str, String)]) -> OneConnector {
    let prefix = unique("pg").replace('-', "_");
    let slot = unique("slot").replace('-', "_").to_lowercase();
    let mut config = debezium_config(&prefix, table, &slot);
    for (key, value) in extra {
        config.retain(|(k, _)| k != key);
        config.push((key, value.clone()));
    }
    let connector = unique("cdc");
    let mut standalone = Standalone::new(&[]);
    standalone.add_connector(&connector, &config);
    OneConnector {
        standalone,
        connector,
        topic: format!("{prefix}.{table}"),
        prefix,
        _slot: Slot::new(&slot),
        slot,
        config,
    }
}

#[test]
fn a_debezium_config_snapshots_then_streams_inserts_updates_and_deletes() {
    let schema = schema("cdc");
    sql(&format!(
        "CREATE TABLE {schema}.orders (id int PRIMARY KEY, note text NOT NULL, price numeric(10,2), at timestamptz, \
         tags text[]); INSERT INTO {schema}.orders VALUES (1, 'one', 1.50, '2024-02-29 10:00:00.25+02', \
         '{{a,b}}'), (2, 'two', NULL, NULL, NULL)"
    ));
    let OneConnector { standalone, connector, topic, slot, _slot, .. } =
        one_connector(&format!("{schema}.orders"), &[("slot.drop.on.stop", "true".to_string())]);
    let mut worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    // Its first progress line, in the RUNNING status: the snapshot about to be read.
    let progress = worker.wait("the snapshot's progress in the task's status", Duration::from_secs(30), || {
        let (_, task) = worker.task_state(&connector, 0)?;
        task["trace"].as_str().map(str::to_string)
    });
    assert!(progress.starts_with("snapshot: 0 row(s) read"), "{progress}");

    // The snapshot: both rows as reads, the first marked first and the last last.
    let snapshot = wait_events(&worker, &topic, 2);
    let first = payload(&snapshot[0]);
    assert_eq!(first["op"], "r");
    assert_eq!(first["source"]["snapshot"], "first");
    assert_eq!(payload(&snapshot[1])["source"]["snapshot"], "last");
    assert_eq!(first["source"]["connector"], "postgresql");
    assert_eq!(first["source"]["version"], "3.6.1.Final");
    assert_eq!(first["source"]["schema"], schema.as_str());
    assert_eq!(first["source"]["table"], "orders");
    assert_eq!(first["after"]["id"], 1);
    assert_eq!(first["after"]["note"], "one");
    // 150 at scale 2, as Connect's Decimal writes it in JSON: base64 of the unscaled integer.
    assert_eq!(first["after"]["price"], "AJY=");
    assert_eq!(first["after"]["at"], "2024-02-29T08:00:00.250000Z");
    assert_eq!(first["after"]["tags"], serde_json::json!(["a", "b"]));
    assert_eq!(snapshot[0].0["payload"], serde_json::json!({"id": 1}));
    assert_eq!(snapshot[0].0["schema"]["name"], format!("{topic}.Key"));
    assert_eq!(snapshot[0].1["schema"]["name"], format!("{topic}.Envelope"));
    assert_eq!(snapshot[0].1["schema"]["version"], 2);

    // Changes, each in a transaction of its own.
    sql(&format!("INSERT INTO {schema}.orders VALUES (3, 'three', 3, now(), '{{}}')"));
    sql(&format!("UPDATE {schema}.orders SET note = 'two, changed' WHERE id = 2"));
    sql(&format!("DELETE FROM {schema}.orders WHERE id = 1"));
    let all = wait_events(&worker, &topic, 6);
    let (insert, update, delete, tombstone) = (payload(&all[2]), payload(&all[3]), payload(&all[4]), &all[5]);
    assert_eq!((insert["op"].as_str(), insert["after"]["id"].as_i64()), (Some("c"), Some(3)));
    assert_eq!(insert["source"]["snapshot"], "false");
    assert!(insert["source"]["lsn"].as_i64().unwrap() > 0, "{insert}");
    assert!(insert["source"]["txId"].as_i64().unwrap() > 0, "{insert}");
    assert_eq!(update["op"], "u");
    assert_eq!(update["before"], Value::Null);
    assert_eq!(update["after"]["note"], "two, changed");
    assert_eq!(delete["op"], "d");
    assert_eq!(delete["before"]["id"], 1);
    assert_eq!(delete["after"], Value::Null);
    assert_eq!(tombstone.0["payload"], serde_json::json!({"id": 1}));
    assert_eq!(tombstone.1, Value::Null);

    // The source's own metrics (brought up to date about every second): the snapshot's two rows,
    // the three changes streamed, and how far behind the stream is.
    let task = format!(r#"connector="{connector}",task="0""#);
    let metric = |name: &str| worker.metric(&format!("kafka_connect_plugins_postgres_cdc_{name}"), &task);
    worker.wait("the streamed changes in the source's metrics", Duration::from_secs(30), || {
        metric("streaming_events_total").filter(|n| *n >= 3.0)
    });
    assert_eq!(metric("snapshot_rows_scanned_total"), Some(2.0));
    assert_eq!(metric("snapshot_running"), Some(0.0));
    assert_eq!(metric("snapshot_remaining_tables"), Some(0.0));
    assert!(metric("streaming_wal_bytes_behind").is_some_and(|b| b >= 0.0));
    assert!(metric("streaming_milliseconds_behind_source").is_some_and(|ms| ms >= 0.0));

    worker.terminate();
    // slot.drop.on.stop=true: the slot is gone with the task.
    assert_eq!(sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'")), ["0"]);
}

fn debezium_plugins() -> String {
    std::env::var("DEBEZIUM_POSTGRES_PLUGINS").unwrap_or_else(|_| {
        panic!(
            "DEBEZIUM_POSTGRES_PLUGINS is not set: run the suite with ./run test, which fetches Debezium's connector"
        )
    })
}

/// What differs between any two runs of a connector, or between two connectors on one database
/// by design: times, WAL positions, transaction ids, and the topic prefix each was given.
fn normalized(mut value: Value, prefix: &str) -> Value {
    fn walk(value: &mut Value, prefix: &str) {
        match value {
            Value::String(s) if s.contains(prefix) => *s = s.replace(prefix, "PREFIX"),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    // Transaction ids: `<xid>:<lsn>`.
                    let transaction_id = v.as_str().is_some_and(|t| {
                        t.split_once(':').is_some_and(|(a, b)| {
                            [a, b].iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
                        })
                    });
                    if key == "id" && transaction_id {
                        *v = Value::from("varies");
                    }
                    walk(v, prefix);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, prefix)),
            _ => {}
        }
    }
    walk(&mut value, prefix);
    let payload = &mut value["payload"];
    if payload.is_object() {
        for varying in ["ts_ms", "ts_us", "ts_ns"] {
            if payload.get(varying).is_some() {
                payload[varying] = Value::from("varies");
            }
        }
        if let Some(source) = payload.get_mut("source").and_then(Value::as_object_mut) {
            for varying in ["ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence", "xmin"] {
                if source.get(varying).is_some_and(|v| !v.is_null()) {
                    source.insert(varying.into(), Value::from("varies"));
                }
            }
        }
    }
    value
}

/// The first place two JSON values differ, as a path.
fn difference(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys()) {
                let (x, y) = (a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null));
                if a.contains_key(key) != b.contains_key(key) {
                    return Some(format!("{path}.{key}: Wharf {x}, Debezium {y}"));
                }
                if let Some(d) = difference(x, y, &format!("{path}.{key}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| difference(x, y, &format!("{path}[{i}]")))
        }
        _ if ours == theirs => None,
        _ => Some(format!("{path}: Wharf {ours}, Debezium {theirs}")),
    }
}

/// Both connectors on one database, one table of many types: a snapshot, then inserts, updates
/// (one leaving a TOASTed column unchanged) and deletes. Each record's key and value, as
/// JsonConverter writes them with their schemas, equal Debezium's but for times, WAL positions,
/// transaction ids and the topic prefix.
#[test]
fn the_events_equal_those_debeziums_postgresql_connector_writes_for_the_same_changes() {
    let schema = schema("cmp");
    sql(&format!("CREATE TYPE {schema}.mood AS ENUM ('sad', 'ok', 'happy')"));
    sql(&format!(
        "CREATE TABLE {schema}.kinds (id bigint PRIMARY KEY, small smallint, whole integer NOT NULL, big bigint, \
         price numeric(12,3), any_number numeric, ratio real, precise double precision, label text, short \
         varchar(20), code char(3), flag boolean, day date, clock time, clock_ms time(3), clock_zoned timetz, \
         moment timestamp, moment_ms timestamp(3), instant timestamptz, span interval, id_uuid uuid, doc json, \
         docb jsonb, raw bytea, numbers integer[], words text[], feeling {schema}.mood, essay text)"
    ));
    let row = |id: i64| {
        format!(
            "INSERT INTO {schema}.kinds VALUES ({id}, -7, 42, 9007199254740993, 1234.5, 3.14159265358979, 0.5, \
             2.718281828459045, 'naïve ☃', 'short', 'ab', true, '2024-02-29', '13:45:01.123456', '13:45:01.123', \
             '13:45:01.5+02', '2024-02-29 13:45:01.123456', '2024-02-29 13:45:01.123', '2024-02-29 \
             13:45:01.123456+05:30', '1 year 2 mons 3 days 04:05:06.789', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', \
             '{{\"a\": [1, 2]}}', '{{\"b\": {{\"c\": null}}}}', '\\x00ff10', '{{1,NULL,3}}', '{{\"x y\",z}}', 'ok', \
             (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 200) g))"
        )
    };
    sql(&row(1));
    sql(&format!("INSERT INTO {schema}.kinds (id, whole) VALUES (2, 0)"));

    let changes = [
        row(3),
        format!("UPDATE {schema}.kinds SET label = 'changed', numbers = '{{}}' WHERE id = 3"),
        format!("UPDATE {schema}.kinds SET essay = 'short now', feeling = 'happy' WHERE id = 1"),
        format!("DELETE FROM {schema}.kinds WHERE id = 2"),
    ];
    // 2 reads, an insert, 2 updates, a delete and its tombstone.
    let compared = compare_with_debezium(&[(&format!("{schema}.kinds"), 2, 7)], &[], &changes);
    let mine = &compared[0];
    // The update of row 3 left its TOASTed essay alone: the stream did not carry it.
    assert_eq!(mine[3].1["payload"]["op"], "u");
    assert_eq!(mine[3].1["payload"]["after"]["essay"], "__debezium_unavailable_value");
}

/// A client of the test database, for many statements from one connection.
fn client() -> postgres::Client {
    let (host, port) = postgres().rsplit_once(':').map(|(h, p)| (h.to_string(), p.to_string())).unwrap();
    postgres::Config::new()
        .host(&host)
        .port(port.parse().unwrap())
        .user("wharf")
        .password("wharf")
        .dbname("wharf")
        .connect(postgres::NoTls)
        .unwrap()
}

/// The `id`s of the change events of a topic (tombstones left out), in order, with their ops.
fn ids_and_ops(topic: &str) -> Vec<(i64, String)> {
    events(topic)
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|e| {
            let p = payload(e);
            let row = if p["after"].is_null() { &p["before"] } else { &p["after"] };
            (row["id"].as_i64().unwrap(), p["op"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn a_stopped_connector_resumes_where_it_stopped_without_a_new_snapshot() {
    let schema = schema("resume");
    sql(&format!("CREATE TABLE {schema}.t (id int PRIMARY KEY, n int); INSERT INTO {schema}.t VALUES (1, 0)"));
    let OneConnector { standalone, connector, topic, slot, _slot, .. } = one_connector(&format!("{schema}.t"), &[]);
    let mut worker = standalone.start();
    wait_events(&worker, &topic, 1);
    sql(&format!("INSERT INTO {schema}.t VALUES (2, 0)"));
    wait_events(&worker, &topic, 2);
    worker.terminate();

    // Changes while no task reads the slot.
    sql(&format!("INSERT INTO {schema}.t VALUES (3, 0)"));
    sql(&format!("UPDATE {schema}.t SET n = 1 WHERE id = 2"));
    let worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    wait_events(&worker, &topic, 4);
    sql(&format!("INSERT INTO {schema}.t VALUES (4, 0)"));
    wait_events(&worker, &topic, 5);
    let expected: Vec<(i64, String)> =
        [(1, "r"), (2, "c"), (3, "c"), (2, "u"), (4, "c")].iter().map(|(i, o)| (*i, o.to_string())).collect();
    assert_eq!(ids_and_ops(&topic), expected);
    assert!(worker.log().contains(&format!("streaming changes of the slot {slot}")), "{}", worker.log());
    drop(worker);
}

/// kill -9 of the worker while changes stream: the restarted task loses none, repeats at most
/// what it had not stored yet, and reads no snapshot again.
#[test]
fn a_killed_worker_loses_no_change_and_does_not_start_over() {
    let schema = schema("kill");
    sql(&format!("CREATE TABLE {schema}.t (id int PRIMARY KEY)"));
    let OneConnector { standalone, connector, topic, slot, _slot, .. } = one_connector(&format!("{schema}.t"), &[]);
    let mut worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    // The slot exists once the task streams.
    worker.wait("the slot", Duration::from_secs(60), || {
        (sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active")) == ["1"])
            .then_some(())
    });
    // A first change, and time for its offset to be stored (offset.flush.interval.ms=500).
    sql(&format!("INSERT INTO {schema}.t VALUES (1)"));
    wait_events(&worker, &topic, 1);
    std::thread::sleep(Duration::from_millis(1500));
    const ROWS: i64 = 3000;
    let insert = format!("INSERT INTO {schema}.t VALUES ($1)");
    let writer = std::thread::spawn(move || {
        let mut db = client();
        for id in 2..=ROWS {
            db.execute(insert.as_str(), &[&(id as i32)]).unwrap();
        }
    });
    worker.wait("changes to arrive", Duration::from_secs(60), || (topic_count(&topic) > 300).then_some(()));
    worker.kill_9();
    let before = topic_count(&topic);
    writer.join().unwrap();
    let worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    worker.wait(&format!("all {ROWS} inserts"), Duration::from_secs(120), || {
        let ids: std::collections::BTreeSet<i64> = ids_and_ops(&topic).into_iter().map(|(id, _)| id).collect();
        (ids.len() as i64 == ROWS).then_some(())
    });
    let all = ids_and_ops(&topic);
    assert!(all.iter().all(|(_, op)| op == "c"), "a snapshot was read again");
    let repeated = all.len() as i64 - ROWS;
    eprintln!("{before} record(s) before kill -9; {repeated} repeated after it");
    assert!(repeated < before, "the restarted task started over: {repeated} of {before} repeated");
    drop(worker);
}

/// The server ends the replication connection (as a failover or an administrator does): the
/// task connects again and resumes after the last change it handed over, losing and repeating
/// nothing.
#[test]
fn a_dropped_replication_connection_resumes_from_the_last_change_handed_over() {
    let schema = schema("drop");
    sql(&format!("CREATE TABLE {schema}.t (id int PRIMARY KEY)"));
    let OneConnector { standalone, connector, topic, slot, _slot, .. } =
        one_connector(&format!("{schema}.t"), &[("slot.drop.on.stop", "true".to_string())]);
    let worker = standalone.start();
    worker.wait("the slot", Duration::from_secs(60), || {
        (sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active")) == ["1"])
            .then_some(())
    });
    sql(&format!("INSERT INTO {schema}.t VALUES (1)"));
    wait_events(&worker, &topic, 1);
    sql(&format!("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '{slot}'"));
    sql(&format!("INSERT INTO {schema}.t VALUES (2)"));
    sql(&format!("INSERT INTO {schema}.t VALUES (3)"));
    wait_events(&worker, &topic, 3);
    std::thread::sleep(Duration::from_secs(2));
    let expected: Vec<(i64, String)> = (1..=3).map(|i| (i, "c".to_string())).collect();
    assert_eq!(ids_and_ops(&topic), expected);
    assert!(worker.log().contains("connecting again"), "{}", worker.log());
    assert_eq!(worker.task_state_now(&connector, 0).0, "RUNNING");
}

/// A user without the REPLICATION attribute: the task fails saying what to grant.
#[test]
fn a_user_who_may_not_replicate_fails_the_task_saying_what_to_grant() {
    let user = unique("noreplication").replace('-', "_").to_lowercase();
    sql(&format!("CREATE ROLE {user} LOGIN PASSWORD 'secret'"));
    let OneConnector { standalone, connector, _slot, .. } = one_connector(
        "public.nothing",
        &[("database.user", user.clone()), ("database.password", "secret".to_string())],
    );
    let worker = standalone.start();
    let status = worker.wait_task_state(&connector, 0, "FAILED");
    let trace = status["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains(&format!("ALTER ROLE \"{user}\" REPLICATION")), "{trace}");
}

/// Debezium runs on Kafka Connect, snapshots and streams, and stops; Wharf takes the connector
/// over under the same name on the same offset topic: it resumes from Debezium's stored offsets
/// and slot, reads no snapshot, and loses none of the changes made in between.
#[test]
fn a_connector_moved_from_kafka_connect_resumes_from_debeziums_offsets_and_slot() {
    let schema = schema("move");
    sql(&format!("CREATE TABLE {schema}.t (id int PRIMARY KEY, n int); INSERT INTO {schema}.t VALUES (1, 0), (2, 0)"));
    let prefix = unique("pg").replace('-', "_");
    let slot = unique("slot").replace('-', "_").to_lowercase();
    let _slot = Slot::new(&slot);
    let config: serde_json::Map<String, Value> = debezium_config(&prefix, &format!("{schema}.t"), &slot)
        .into_iter()
        .filter(|(k, _)| !k.ends_with(".converter"))
        .map(|(k, v)| (k.to_string(), Value::String(v)))
        .collect();
    let connector = unique("moving");
    let topic = format!("{prefix}.{schema}.t");
    let dir = tempfile::tempdir().unwrap();
    let group = unique("connect-cdc");
    let port = free_port();
    let mut connect = start_connect_distributed(dir.path(), &group, port, Some(&debezium_plugins()));
    let connect_log = || std::fs::read_to_string(dir.path().join("connect.log")).unwrap_or_default();
    wait_for("Kafka Connect to answer", Duration::from_secs(120), || {
        (rest_call(port, "GET", "/connectors", None).0 == 200).then_some(())
    });
    let body = serde_json::json!({"name": connector, "config": config});
    let (code, answer) = rest_call(port, "POST", "/connectors", Some(&body));
    assert_eq!(code, 201, "{answer}");
    wait_for("Debezium's snapshot", Duration::from_secs(120), || {
        assert!(!connect_log().contains(" ERROR "), "Kafka Connect logged an error:\n{}", connect_log());
        (topic_count(&topic) >= 2).then_some(())
    });
    wait_for("Debezium's slot", Duration::from_secs(60), || {
        (sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active")) == ["1"])
            .then_some(())
    });
    sql(&format!("INSERT INTO {schema}.t VALUES (3, 0)"));
    wait_for("Debezium's insert", Duration::from_secs(60), || (topic_count(&topic) >= 3).then_some(()));
    // Time for Connect to store the insert's offset, then a clean stop.
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: a signal to our own child process.
    unsafe { libc::kill(connect.0.id() as i32, libc::SIGTERM) };
    let _ = connect.0.wait();
    drop(connect);
    wait_for("the slot to be free", Duration::from_secs(30), || {
        (sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active")) == ["0"])
            .then_some(())
    });

    // Changes while nothing reads the slot.
    sql(&format!("INSERT INTO {schema}.t VALUES (4, 0)"));
    sql(&format!("UPDATE {schema}.t SET n = 1 WHERE id = 1"));

    // Wharf, a cluster of its own but Connect's offset topic.
    let cluster = Distributed::with(
        unique("wharf-cdc"),
        [format!("{group}-wharf-configs"), format!("{group}-offsets"), format!("{group}-wharf-status")],
        &[],
    );
    let worker = cluster.start();
    let mut wharf_config = config.clone();
    wharf_config.insert("key.converter".into(), "org.apache.kafka.connect.json.JsonConverter".into());
    wharf_config.insert("value.converter".into(), "org.apache.kafka.connect.json.JsonConverter".into());
    wharf_config.insert("slot.drop.on.stop".into(), "true".into());
    let (code, answer) = create(&worker, &connector, Value::Object(wharf_config));
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state(&connector, 0, "RUNNING");
    wait_events(&worker, &topic, 5);
    std::thread::sleep(Duration::from_secs(2));
    let expected: Vec<(i64, String)> =
        [(1, "r"), (2, "r"), (3, "c"), (4, "c"), (1, "u")].iter().map(|(i, o)| (*i, o.to_string())).collect();
    assert_eq!(ids_and_ops(&topic), expected, "{}", worker.log());
    let (_, value) = &events(&topic)[4];
    assert_eq!(value["payload"]["source"]["version"], "3.6.1.Final");
    drop(worker);
}

/// Runs Debezium's connector in Kafka Connect and Wharf's beside it on `tables` (schema.table,
/// the records each topic holds after the snapshot and at the end), with the config's `extra`
/// keys; makes `changes` once both stream; then compares each topic's records, key and value,
/// field by field. Wharf's records, normalized, per table.
fn compare_with_debezium(
    tables: &[(&str, i64, i64)],
    extra: &[(&'static str, &str)],
    changes: &[String],
) -> Vec<Vec<(Value, Value)>> {
    let run = unique("cmp").replace('-', "_").to_lowercase();
    let (ours, theirs) = (format!("w{run}"), format!("d{run}"));
    let _slots = (Slot::new(&format!("{ours}_slot")), Slot::new(&format!("{theirs}_slot")));
    let list = tables.iter().map(|(t, _, _)| *t).collect::<Vec<_>>().join(",");
    let mut wharf_config = debezium_config(&ours, &list, &format!("{ours}_slot"));
    wharf_config.push(("slot.drop.on.stop", "true".into()));
    let mut connect_config: Vec<(&str, String)> = debezium_config(&theirs, &list, &format!("{theirs}_slot"))
        .into_iter()
        .filter(|(k, _)| !k.ends_with(".converter"))
        .collect();
    connect_config.push(("slot.drop.on.stop", "true".into()));
    for (key, value) in extra {
        wharf_config.push((key, value.to_string()));
        connect_config.push((key, value.to_string()));
    }
    let mut wharf = Standalone::new(&[]);
    wharf.add_connector("wharf-cdc", &wharf_config);
    let dir = wharf.dir.path().to_path_buf();
    let connect = KillOnDrop(start_connect(&dir, Some(&debezium_plugins()), &[("debezium-cdc", connect_config)]));
    let mut worker = wharf.start();
    let connect_log = || std::fs::read_to_string(dir.join("connect.log")).unwrap_or_default();
    let wait_all = |at_end: bool| {
        for (table, snapshot, end) in tables {
            let count = if at_end { *end } else { *snapshot };
            let (our_topic, their_topic) = (format!("{ours}.{table}"), format!("{theirs}.{table}"));
            worker.wait(&format!("{count} records of {table} from each connector"), Duration::from_secs(180), || {
                let log = connect_log();
                if log.contains(" ERROR ") {
                    let causes: Vec<&str> = log
                        .lines()
                        .filter(|l| l.contains(" ERROR ") || l.starts_with("Caused by") || l.contains("Exception"))
                        .take(12)
                        .collect();
                    panic!("Kafka Connect logged an error:\n{}", causes.join("\n"));
                }
                (topic_count(&our_topic) >= count && topic_count(&their_topic) >= count).then_some(())
            });
        }
    };
    wait_all(false);
    // Both slots stream, so the changes below reach both.
    worker.wait("both slots", Duration::from_secs(60), || {
        let active = sql(&format!(
            "SELECT count(*) FROM pg_replication_slots WHERE slot_name IN ('{ours}_slot', '{theirs}_slot') AND active"
        ));
        (active == ["2"]).then_some(())
    });
    for change in changes {
        sql(change);
    }
    wait_all(true);
    // Anything more either writes arrives now.
    std::thread::sleep(Duration::from_secs(1));
    let records = |topic: &str, prefix: &str| -> Vec<(Value, Value)> {
        topic_records(topic)
            .into_iter()
            .map(|(_, key, value)| {
                let parse = |t: &str| normalized(serde_json::from_str(t).unwrap_or(Value::Null), prefix);
                (parse(&key), value.as_deref().map_or(Value::Null, parse))
            })
            .collect()
    };
    let mut all = Vec::new();
    for (table, _, _) in tables {
        let (mine, debezium) =
            (records(&format!("{ours}.{table}"), &ours), records(&format!("{theirs}.{table}"), &theirs));
        let summary = |records: &[(Value, Value)]| -> Vec<String> {
            records.iter().map(|(k, v)| format!("key {} op {}", k["payload"], v["payload"]["op"])).collect()
        };
        assert_eq!(
            summary(&mine),
            summary(&debezium),
            "{table}: the records differ (Wharf's, then Debezium's); Connect's log ends:\n{}",
            connect_log().lines().rev().take(30).collect::<Vec<_>>().join("\n")
        );
        for (i, ((my_key, my_value), (their_key, their_value))) in mine.iter().zip(&debezium).enumerate() {
            if let Some(d) = difference(my_key, their_key, "key") {
                panic!("{table}, record {i}: the keys differ at {d}\nWharf: {my_key}\nDebezium: {their_key}");
            }
            if let Some(d) = difference(my_value, their_value, "value") {
                panic!(
                    "{table}, record {i}: the values differ at {d}\nWharf: {}\nDebezium: {}",
                    my_value["payload"], their_value["payload"]
                );
            }
        }
        all.push(mine);
    }
    worker.terminate();
    drop(connect);
    all
}

/// Tables of other shapes: a full replica identity (old rows in updates and deletes), a table
/// without a primary key, an update that changes the key, a column added mid-stream, truncates
/// (skipped.operations=none), and columns with defaults.
#[test]
fn old_rows_keyless_tables_key_changes_new_columns_and_truncates_equal_debeziums() {
    let schema = schema("shapes");
    sql(&format!(
        "CREATE TABLE {schema}.full_rows (id int PRIMARY KEY, note text NOT NULL, n int); ALTER TABLE \
         {schema}.full_rows REPLICA IDENTITY FULL; CREATE TABLE {schema}.no_key (a int, b text); ALTER TABLE \
         {schema}.no_key REPLICA IDENTITY FULL; CREATE TABLE {schema}.keyed (id int PRIMARY KEY, note text NOT \
         NULL); INSERT INTO {schema}.full_rows VALUES (1, 'a', 1); INSERT INTO {schema}.no_key VALUES (1, 'x'); \
         INSERT INTO {schema}.keyed VALUES (1, 'k'); CREATE TABLE {schema}.defaults (id serial PRIMARY KEY, \
         status text NOT NULL DEFAULT 'new', at timestamptz DEFAULT now(), price numeric(8,2) DEFAULT 1.5, day \
         date DEFAULT '2024-01-01', n int DEFAULT NULL, uid uuid DEFAULT gen_random_uuid()); INSERT INTO \
         {schema}.defaults (n) VALUES (1)"
    ));
    let changes = [
        format!("UPDATE {schema}.full_rows SET n = 2 WHERE id = 1"),
        format!("DELETE FROM {schema}.full_rows WHERE id = 1"),
        format!("UPDATE {schema}.no_key SET b = 'y' WHERE a = 1"),
        format!("DELETE FROM {schema}.no_key WHERE a = 1"),
        format!("UPDATE {schema}.keyed SET id = 11 WHERE id = 1"),
        format!("ALTER TABLE {schema}.keyed ADD COLUMN added int DEFAULT 5"),
        format!("INSERT INTO {schema}.keyed VALUES (2, 'after the new column', 7)"),
        format!("TRUNCATE {schema}.keyed"),
        format!("INSERT INTO {schema}.defaults (status, price) VALUES ('old', NULL)"),
    ];
    compare_with_debezium(
        &[
            // read, update, delete, tombstone
            (&format!("{schema}.full_rows"), 1, 4),
            // read, update, delete, tombstone (without a key, as Debezium writes it)
            (&format!("{schema}.no_key"), 1, 4),
            // read, delete + tombstone + create of the new key, insert, truncate
            (&format!("{schema}.keyed"), 1, 6),
            // read, insert: a serial key, defaults of literals and functions
            (&format!("{schema}.defaults"), 1, 2),
        ],
        &[("skipped.operations", "none")],
        &changes,
    );
}

/// Debezium's modes for decimals, times, bytes, intervals and hstore columns, each compared with
/// Debezium's own output: the defaults, then two other sets.
#[test]
fn each_handling_mode_writes_values_as_debeziums_does() {
    try_sql("CREATE EXTENSION IF NOT EXISTS hstore").unwrap();
    let mode_sets: [&[(&'static str, &str)]; 3] = [
        &[],
        &[
            ("decimal.handling.mode", "double"),
            ("time.precision.mode", "connect"),
            ("binary.handling.mode", "base64"),
            ("interval.handling.mode", "string"),
            ("hstore.handling.mode", "map"),
        ],
        &[("decimal.handling.mode", "string"), ("time.precision.mode", "isostring"), ("binary.handling.mode", "hex")],
    ];
    for modes in mode_sets {
        let schema = schema("modes");
        sql(&format!(
            "CREATE TABLE {schema}.m (id int PRIMARY KEY, price numeric(10,2) DEFAULT 2.5, any_number numeric, day \
             date, clock time, clock_ms time(3), moment timestamp DEFAULT now(), moment_ms timestamp(3), raw bytea, \
             span interval DEFAULT '01:00:00', attrs hstore); INSERT INTO {schema}.m VALUES (1, 12.5, 1.500, \
             '2024-02-29', '13:45:01.123456', '13:45:01.5', '2024-02-29 13:45:01.123456', '2024-02-29 13:45:01.5', \
             '\\x00fb10', '1 year -2 days 03:00:00.25', 'b=>2, a=>1, \"Aa\"=>NULL, BB=>x')"
        ));
        let changes = [format!(
            "INSERT INTO {schema}.m VALUES (2, -0.5, -3, '1969-12-31', '00:00:00', '23:59:59.999', '1969-12-31 \
             23:59:59.999999', '2000-01-01 00:00:00', '\\x', '-00:00:01', '')"
        )];
        compare_with_debezium(&[(&format!("{schema}.m"), 1, 2)], modes, &changes);
    }
}

/// The slot is dropped while the connector is stopped: the changes since its stored position are
/// lost, so the task fails naming the position and snapshot.mode=when_needed; with that mode, it
/// reads the tables again and streams on.
#[test]
fn a_lost_slot_fails_the_task_unless_snapshot_mode_is_when_needed() {
    let schema = schema("lost");
    sql(&format!("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1)"));
    let OneConnector { mut standalone, connector, topic, slot, config, _slot, .. } =
        one_connector(&format!("{schema}.t"), &[]);
    let mut worker = standalone.start();
    wait_events(&worker, &topic, 1);
    sql(&format!("INSERT INTO {schema}.t VALUES (2)"));
    wait_events(&worker, &topic, 2);
    std::thread::sleep(Duration::from_millis(1500));
    worker.terminate();
    drop(Slot::new(&slot));
    sql(&format!("INSERT INTO {schema}.t VALUES (3)"));

    let mut worker = standalone.start();
    let status = worker.wait_task_state(&connector, 0, "FAILED");
    let trace = status["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("snapshot.mode=when_needed") && trace.contains(&slot), "{trace}");
    assert!(trace.contains("resume at "), "{trace}");
    worker.terminate();

    let mut again = config.clone();
    again.push(("snapshot.mode", "when_needed".into()));
    standalone.connector_files.clear();
    standalone.add_connector(&connector, &again);
    let worker = standalone.start();
    // The tables again: rows 1, 2 and 3 as reads.
    wait_events(&worker, &topic, 5);
    let read: Vec<(i64, String)> = ids_and_ops(&topic).into_iter().skip(2).collect();
    assert_eq!(read, [(1, "r".to_string()), (2, "r".to_string()), (3, "r".to_string())]);
    sql(&format!("INSERT INTO {schema}.t VALUES (4)"));
    wait_events(&worker, &topic, 6);
}

/// With heartbeats on, an idle captured table does not hold the server's WAL: the heartbeat
/// records carry the stream's position, and once stored it is confirmed to the server, whose
/// slot advances past WAL written for other tables.
#[test]
fn heartbeats_let_the_slot_advance_while_the_captured_tables_are_idle() {
    let schema = schema("beat");
    sql(&format!(
        "CREATE TABLE {schema}.t (id int PRIMARY KEY); CREATE TABLE {schema}.other (id int); CREATE TABLE \
         {schema}.beats (at timestamptz)"
    ));
    let OneConnector { standalone, prefix, slot, _slot, .. } = one_connector(
        &format!("{schema}.t"),
        &[
            ("heartbeat.interval.ms", "200".to_string()),
            ("status.update.interval.ms", "500".to_string()),
            ("heartbeat.action.query", format!("INSERT INTO {schema}.beats VALUES (now())")),
        ],
    );
    let worker = standalone.start();
    worker.wait("the slot", Duration::from_secs(60), || {
        (sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active")) == ["1"])
            .then_some(())
    });
    // WAL for a table the publication leaves out.
    sql(&format!("INSERT INTO {schema}.other SELECT generate_series(1, 1000)"));
    let written = sql("SELECT pg_current_wal_lsn() - '0/0'")[0].parse::<f64>().unwrap();
    worker.wait("the slot to pass the other table's WAL", Duration::from_secs(60), || {
        let confirmed =
            sql(&format!("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = '{slot}'"))[0]
                .parse::<f64>()
                .unwrap();
        (confirmed >= written).then_some(())
    });
    // heartbeat.action.query ran at the heartbeats.
    assert_ne!(sql(&format!("SELECT count(*) FROM {schema}.beats")), ["0"]);
    let beats = topic_records(&format!("__debezium-heartbeat.{prefix}"));
    assert!(!beats.is_empty());
    let key: Value = serde_json::from_str(&beats[0].1).unwrap();
    assert_eq!(key["payload"], serde_json::json!({"serverName": prefix}));
    assert_eq!(key["schema"]["name"], "io.debezium.connector.common.ServerNameKey");
    let value: Value = serde_json::from_str(beats[0].2.as_deref().unwrap()).unwrap();
    assert_eq!(value["schema"]["name"], "io.debezium.connector.common.Heartbeat");
    assert!(value["payload"]["ts_ms"].as_i64().unwrap() > 0);
}

/// TLS as `database.sslmode` and `database.sslrootcert` say, checked by the worker: the default
/// `prefer` encrypts without checking; `verify-full` with the server's authority checks the
/// certificate; `verify-full` without it fails the task naming the setting.
#[test]
fn tls_follows_database_sslmode_and_sslrootcert() {
    let ca = std::env::var("WHARF_TEST_POSTGRES_CA").expect("WHARF_TEST_POSTGRES_CA is not set: run ./run test");
    let schema = schema("tls");
    sql(&format!("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1)"));
    let run = |mode: Option<&str>, trust: bool| -> (Worker, String, Slot, Standalone) {
        let prefix = unique("pg").replace('-', "_");
        let slot_name = unique("slot").replace('-', "_").to_lowercase();
        let slot = Slot::new(&slot_name);
        let mut config = debezium_config(&prefix, &format!("{schema}.t"), &slot_name);
        config.retain(|(k, _)| *k != "database.sslmode");
        if let Some(mode) = mode {
            config.push(("database.sslmode", mode.into()));
        }
        let mut standalone = Standalone::new(&[]);
        if trust {
            let copy = standalone.path("ca.pem");
            std::fs::copy(&ca, &copy).unwrap();
            config.push(("database.sslrootcert", copy.display().to_string()));
        }
        let connector = unique("cdc");
        standalone.add_connector(&connector, &config);
        let worker = standalone.start();
        (worker, format!("{prefix}.{schema}.t|{connector}"), slot, standalone)
    };
    let encrypted = |connector: &str| {
        sql(&format!(
            "SELECT s.ssl FROM pg_stat_replication r JOIN pg_stat_ssl s ON s.pid = r.pid WHERE r.application_name = \
             'wharf {connector}'"
        ))
    };
    for (mode, trust) in [(None, false), (Some("verify-full"), true)] {
        let (worker, names, _slot, _files) = run(mode, trust);
        let (topic, connector) = names.split_once('|').unwrap();
        wait_events(&worker, topic, 1);
        worker.wait("the replication connection", Duration::from_secs(30), || {
            (encrypted(connector) == ["t"]).then_some(())
        });
    }
    let (worker, names, _slot, _files) = run(Some("verify-full"), false);
    let (_, connector) = names.split_once('|').unwrap();
    let status = worker.wait_task_state(connector, 0, "FAILED");
    let trace = status["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("database.sslmode=verify-full"), "{trace}");
}

/// `provide.transaction.metadata=true`: the BEGIN and END records of the transaction topic and
/// the `transaction` block of each event equal Debezium's (but for ids, which hold WAL positions),
/// for a transaction over two tables, a key change and a delete.
#[test]
fn transaction_metadata_equals_debeziums() {
    let schema = schema("txmeta");
    sql(&format!(
        "CREATE TABLE {schema}.t1 (id int PRIMARY KEY, n int); CREATE TABLE {schema}.t2 (id int PRIMARY KEY); \
         INSERT INTO {schema}.t1 VALUES (1, 0); INSERT INTO {schema}.t2 VALUES (1)"
    ));
    let changes = [
        format!(
            "BEGIN; INSERT INTO {schema}.t1 VALUES (2, 0); INSERT INTO {schema}.t2 VALUES (2); INSERT INTO \
             {schema}.t1 VALUES (3, 0); COMMIT"
        ),
        format!("UPDATE {schema}.t1 SET id = 10 WHERE id = 1"),
        format!("DELETE FROM {schema}.t2 WHERE id = 1"),
    ];
    compare_with_debezium(
        &[
            // read, 2 inserts, delete + tombstone + create of the new key
            (&format!("{schema}.t1"), 1, 6),
            // read, insert, delete + tombstone
            (&format!("{schema}.t2"), 1, 4),
            // BEGIN and END of each of the three transactions
            ("transaction", 0, 6),
        ],
        &[("provide.transaction.metadata", "true")],
        &changes,
    );
}

/// While Kafka takes no records, the host holds the task's records back and asks it to keep its
/// connections alive: the task goes on sending status to PostgreSQL, so that a server with a
/// short `wal_sender_timeout` keeps the replication connection; the task's status shows how far
/// the stream is behind.
#[test]
fn a_task_held_back_by_kafka_keeps_its_replication_connection_and_shows_its_lag() {
    let schema = schema("held");
    let user = unique("impatient").replace('-', "_").to_lowercase();
    let publication = format!("{user}_pub");
    // A server that drops a replication connection silent for 2 s (a role setting, so that
    // other tests' connections keep the default).
    sql(&format!(
        "CREATE ROLE {user} LOGIN REPLICATION PASSWORD 'secret'; ALTER ROLE {user} SET wal_sender_timeout = '2s'; \
         CREATE TABLE {schema}.t (id int PRIMARY KEY, note text); GRANT USAGE ON SCHEMA {schema} TO {user}; \
         GRANT SELECT ON {schema}.t TO {user}; CREATE PUBLICATION {publication} FOR TABLE {schema}.t"
    ));
    // Records go to a broker that is not there: the producer's queue fills and stays full.
    let nowhere = free_port();
    let OneConnector { standalone, connector, slot, _slot, .. } = one_connector(
        &format!("{schema}.t"),
        &[
            ("database.user", user.clone()),
            ("database.password", "secret".to_string()),
            ("publication.name", publication.clone()),
            ("publication.autocreate.mode", "disabled".to_string()),
            ("snapshot.mode", "no_data".to_string()),
            ("status.update.interval.ms", "500".to_string()),
            ("producer.override.bootstrap.servers", format!("127.0.0.1:{nowhere}")),
            ("producer.override.buffer.memory", "16384".to_string()),
        ],
    );
    let worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    let reader = || {
        sql(&format!("SELECT active_pid FROM pg_replication_slots WHERE slot_name = '{slot}' AND active"))
            .into_iter()
            .next()
    };
    let pid = worker.wait("the task to stream from its slot", Duration::from_secs(60), reader);
    let progress = worker.wait("the stream's progress in the task's status", Duration::from_secs(30), || {
        let (_, task) = worker.task_state(&connector, 0)?;
        task["trace"].as_str().filter(|t| t.starts_with("streaming")).map(str::to_string)
    });
    assert!(progress.contains(&format!("streaming from the slot {slot}: ")), "{progress}");
    assert!(progress.contains("KiB of WAL behind the server"), "{progress}");

    // More changes than the producer and the send queue hold.
    sql(&format!("INSERT INTO {schema}.t SELECT g, 'row ' || g FROM generate_series(1, 20000) g"));
    // Held back four times the server's timeout, the task is still the slot's reader, on the
    // same connection.
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(reader(), Some(pid.clone()), "the replication connection was dropped while the task waited");
    let log = worker.log();
    assert!(!log.contains("connecting again"), "{log}");
    assert_eq!(worker.task_state_now(&connector, 0).0, "RUNNING");
}

/// A PostgreSQL server of a test's own, started by the project's script with a `wal_level`
/// change data capture cannot read; stopped and removed when the test ends.
struct OtherServer {
    dir: std::path::PathBuf,
    port: u16,
}

impl OtherServer {
    fn start(wal_level: &str) -> OtherServer {
        let port = free_port();
        // Under target/: the server's user must reach the folder (a private temporary folder
        // would shut it out).
        let dir = workspace().join("target").join(unique("postgres-other"));
        let started = std::process::Command::new(workspace().join("scripts/postgres"))
            .args(["start", "--port", &port.to_string(), "--wal-level", wal_level, "--dir"])
            .arg(&dir)
            .output()
            .expect("run scripts/postgres");
        assert!(started.status.success(), "scripts/postgres start: {}", String::from_utf8_lossy(&started.stderr));
        OtherServer { dir, port }
    }
}

impl Drop for OtherServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new(workspace().join("scripts/postgres"))
            .args(["stop", "--port", &self.port.to_string(), "--dir"])
            .arg(&self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server that does not write logical WAL: the task fails saying what to change in PostgreSQL.
#[test]
fn a_server_without_logical_wal_fails_the_task_saying_what_to_change() {
    let server = OtherServer::start("replica");
    let OneConnector { standalone, connector, _slot, .. } = one_connector(
        "public.nothing",
        &[("database.hostname", "127.0.0.1".to_string()), ("database.port", server.port.to_string())],
    );
    let worker = standalone.start();
    let status = worker.wait_task_state(&connector, 0, "FAILED");
    let trace = status["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("runs with wal_level=replica"), "{trace}");
    assert!(trace.contains("ALTER SYSTEM SET wal_level = logical"), "{trace}");
}

/// The snapshot's connection is lost half-way: its transaction is gone with it, so the task
/// reads the snapshot again from the start (never streaming past rows it did not read), and then
/// streams; every row arrives.
#[test]
fn a_connection_lost_during_the_snapshot_starts_the_snapshot_over() {
    const ROWS: usize = 100_000;
    let schema = schema("midsnap");
    sql(&format!(
        "CREATE TABLE {schema}.t (id int PRIMARY KEY, note text); INSERT INTO {schema}.t SELECT g, 'row ' || g FROM \
         generate_series(1, {ROWS}) g"
    ));
    let OneConnector { standalone, connector, topic, _slot, .. } = one_connector(
        &format!("{schema}.t"),
        &[("slot.drop.on.stop", "true".to_string()), ("snapshot.fetch.size", "500".to_string())],
    );
    let worker = standalone.start();
    worker.wait("the snapshot's first rows", Duration::from_secs(60), || (topic_count(&topic) > 0).then_some(()));
    // The connection reading the table (the replication connection is a walsender).
    let killed = sql(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'wharf {connector}' \
         AND backend_type = 'client backend'"
    ));
    assert_eq!(killed, ["1"]);
    worker.wait("a second snapshot's rows", Duration::from_secs(120), || {
        (topic_count(&topic) > ROWS as i64).then_some(())
    });
    sql(&format!("INSERT INTO {schema}.t VALUES ({}, 'after')", ROWS + 1));
    worker.wait("the change after the snapshot", Duration::from_secs(60), || {
        let ids: std::collections::BTreeSet<i64> = topic_records(&topic)
            .iter()
            .filter_map(|(_, key, _)| serde_json::from_str::<Value>(key).ok()?["payload"]["id"].as_i64())
            .collect();
        (ids.len() == ROWS + 1).then_some(())
    });
    let log = worker.log();
    assert!(log.contains("connecting again"), "{log}");
    assert_eq!(worker.task_state_now(&connector, 0).0, "RUNNING");
}
