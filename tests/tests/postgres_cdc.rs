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

fn drop_slot(slot: &str) {
    let _ = try_sql(&format!(
        "SELECT pg_drop_replication_slot('{slot}') FROM pg_replication_slots WHERE slot_name = '{slot}'"
    ));
}

#[test]
fn a_debezium_config_snapshots_then_streams_inserts_updates_and_deletes() {
    let schema = schema("cdc");
    sql(&format!(
        "CREATE TABLE {schema}.orders (id int PRIMARY KEY, note text NOT NULL, price numeric(10,2), at timestamptz, \
         tags text[]); INSERT INTO {schema}.orders VALUES (1, 'one', 1.50, '2024-02-29 10:00:00.25+02', \
         '{{a,b}}'), (2, 'two', NULL, NULL, NULL)"
    ));
    let prefix = unique("pg").replace('-', "_");
    let slot = unique("slot").replace('-', "_").to_lowercase();
    let mut config = debezium_config(&prefix, &format!("{schema}.orders"), &slot);
    config.push(("slot.drop.on.stop", "true".into()));
    let connector = unique("cdc");
    let mut standalone = Standalone::new(&[]);
    standalone.add_connector(&connector, &config);
    let mut worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    let topic = format!("{prefix}.{schema}.orders");

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

    worker.terminate();
    // slot.drop.on.stop=true: the slot is gone with the task.
    assert_eq!(sql(&format!("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'")), ["0"]);
    drop_slot(&slot);
}
