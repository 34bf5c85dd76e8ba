//! The shipped `jdbc-sink` against a real PostgreSQL (`scripts/postgres`, started by `./run
//! test`) and a real broker: Debezium's and Confluent's configs as people have them, the rows
//! and tables they make, and what happens to a row the database refuses.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::databases::{self, mariadb, postgres, try_sql, Bytes};
use wharf_e2e::*;

/// MariaDB's answer, bytes as they are.
fn try_maria(statement: &str) -> Result<Vec<String>, String> {
    databases::try_maria(statement, Bytes::AsTheyAre)
}

fn jdbc_url() -> String {
    format!("jdbc:postgresql://{}/wharf", postgres())
}

/// Runs SQL through psql; its rows, columns separated by `|`.
fn sql(statement: &str) -> Vec<String> {
    try_sql(statement).unwrap_or_else(|e| panic!("psql {statement}: {e}"))
}

/// Waits until `query` answers `expected` (the table may not be there yet).
fn wait_rows(worker: &Worker, query: &str, expected: &[&str]) {
    worker.wait(&format!("{query} to answer {expected:?}"), Duration::from_secs(60), || {
        try_sql(query).ok().filter(|rows| rows == expected).map(|_| ())
    });
}

fn key(id: i32) -> Vec<u8> {
    json!({"schema": {"type": "struct", "name": "Key", "fields": [{"field": "id", "type": "int32", "optional": false}]},
           "payload": {"id": id}})
    .to_string()
    .into_bytes()
}

/// A value with a struct schema: an id, an optional name, a decimal price and a timestamp.
fn order(id: i32, name: Option<&str>, cents: i64, at_ms: i64) -> Vec<u8> {
    // The unscaled integer in big-endian two's complement, shortest form, as Connect writes it.
    let bytes = cents.to_be_bytes();
    let mut start = 0;
    while start < 7
        && ((bytes[start] == 0 && bytes[start + 1] & 0x80 == 0)
            || (bytes[start] == 0xff && bytes[start + 1] & 0x80 != 0))
    {
        start += 1;
    }
    let price = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes[start..]);
    json!({
        "schema": {"type": "struct", "name": "Order", "optional": false, "fields": [
            {"field": "id", "type": "int32", "optional": false},
            {"field": "name", "type": "string", "optional": true},
            {"field": "price", "type": "bytes", "optional": false, "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2", "connect.decimal.precision": "10"}},
            {"field": "at", "type": "int64", "optional": false, "name": "org.apache.kafka.connect.data.Timestamp"}
        ]},
        "payload": {"id": id, "name": name, "price": price, "at": at_ms}
    })
    .to_string()
    .into_bytes()
}

fn produce_keyed(topic: &str, key: &[u8], value: Option<&[u8]>) {
    produce_all(topic, &[(key.to_vec(), value.map(<[u8]>::to_vec))]);
}

/// Keyed records to partition 0, in order, through one producer.
fn produce_all(topic: &str, records: &[(Vec<u8>, Option<Vec<u8>>)]) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let producer: BaseProducer = rdkafka::ClientConfig::new().set("bootstrap.servers", bootstrap()).create().unwrap();
    for (key, value) in records {
        let mut record = BaseRecord::<[u8], [u8]>::to(topic).key(key).partition(0);
        if let Some(value) = value {
            record = record.payload(value);
        }
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
}

/// A standalone worker running `connector` of `config`, once its task runs; the worker's files
/// live as long as the `Standalone`.
fn one_sink(connector: &str, config: &[(&str, String)]) -> (Standalone, Worker) {
    let mut standalone = Standalone::new(&[]);
    standalone.add_connector(connector, config);
    let worker = standalone.start();
    worker.wait_task_state(connector, 0, "RUNNING");
    (standalone, worker)
}

fn json_converters() -> Vec<(&'static str, String)> {
    vec![
        ("key.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
        ("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
    ]
}

#[test]
fn a_debezium_config_upserts_deletes_and_makes_the_table_from_the_schema() {
    let topic = unique("dbz.orders").replace('-', "_");
    let table = topic.replace('.', "_").to_lowercase();
    create_topic(&topic, 1, "delete");
    let mut config = vec![
        ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", jdbc_url()),
        ("connection.username", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("insert.mode", "upsert".into()),
        ("primary.key.mode", "record_key".into()),
        ("delete.enabled", "true".into()),
        ("schema.evolution", "basic".into()),
        ("connection.pool.max_size", "10".into()),
    ];
    config.extend(json_converters());
    let connector = unique("dbz-orders");
    let (_standalone, worker) = one_sink(&connector, &config);

    let t0 = 1_704_067_200_000; // 2024-01-01T00:00:00Z
    produce_keyed(&topic, &key(1), Some(&order(1, Some("apple"), 125, t0)));
    produce_keyed(&topic, &key(2), Some(&order(2, None, 9_900, t0 + 1_500)));
    produce_keyed(&topic, &key(3), Some(&order(3, Some("cherry"), 1, t0)));
    produce_keyed(&topic, &key(2), Some(&order(2, Some("banana"), 10_000, t0 + 2_000)));
    produce_keyed(&topic, &key(3), None);
    wait_rows(
        &worker,
        &format!("SELECT id, name, price, at FROM {table} ORDER BY id"),
        &["1|apple|1.25|2024-01-01 00:00:00", "2|banana|100.00|2024-01-01 00:00:02"],
    );
    // The table as Debezium's JDBC sink makes it.
    let columns = sql(&format!(
        "SELECT column_name, data_type, is_nullable, \
         CASE WHEN data_type = 'numeric' THEN numeric_precision || ',' || numeric_scale ELSE '' END \
         FROM information_schema.columns WHERE table_name = '{table}' ORDER BY ordinal_position"
    ));
    assert_eq!(
        columns,
        ["id|integer|NO|", "name|text|YES|", "price|numeric|NO|10,2", "at|timestamp without time zone|NO|"]
    );
    let key_columns = sql(&format!(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
         WHERE i.indrelid = '{table}'::regclass AND i.indisprimary"
    ));
    assert_eq!(key_columns, ["id"]);
    // A replay rewrites the same rows: upsert is effectively once.
    produce_keyed(&topic, &key(1), Some(&order(1, Some("apple"), 125, t0)));
    produce_keyed(&topic, &key(4), Some(&order(4, Some("date"), 300, t0)));
    wait_rows(&worker, &format!("SELECT count(*), sum(price) FROM {table}"), &["3|104.25"]);
    assert!(worker.log().contains("connection.pool.max_size has no effect"), "a key without effect is said in the log");
}

#[test]
fn a_confluent_config_inserts_with_kafka_coordinates_into_a_quoted_table() {
    let topic = unique("Cfl_Orders").replace('-', "_");
    create_topic(&topic, 1, "delete");
    let mut config = vec![
        ("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", jdbc_url()),
        ("connection.user", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("pk.mode", "kafka".into()),
        ("auto.create", "true".into()),
        // Timestamps as the clocks of Paris showed them, summer time or not, as Confluent's sink
        // binds them through a calendar of the zone.
        ("db.timezone", "Europe/Paris".into()),
    ];
    config.extend(json_converters());
    let connector = unique("cfl-orders");
    let (_standalone, worker) = one_sink(&connector, &config);
    // 2024-01-15 and 2024-07-15, noon UTC.
    produce_keyed(&topic, &key(7), Some(&order(7, Some("fig"), 250, 1_705_320_000_000)));
    produce_keyed(&topic, &key(8), Some(&order(8, Some("grape"), 75, 1_721_044_800_000)));
    // Confluent's sink quotes names and keeps their case.
    wait_rows(
        &worker,
        &format!("SELECT \"__connect_offset\", id, name, price, at FROM \"{topic}\" ORDER BY 1"),
        &["0|7|fig|2.50|2024-01-15 13:00:00", "1|8|grape|0.75|2024-07-15 14:00:00"],
    );
    let columns = sql(&format!(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{topic}' ORDER BY ordinal_position"
    ));
    assert_eq!(
        columns,
        [
            "__connect_topic|text",
            "__connect_partition|integer",
            "__connect_offset|bigint",
            "id|integer",
            "name|text",
            "price|numeric",
            "at|timestamp without time zone",
        ]
    );
}

/// Confluent's `timestamp.fields.list`: int64 fields, or their text, counting microseconds since
/// the epoch are written to timestamp columns.
#[test]
fn a_confluent_config_writes_listed_number_and_text_fields_as_timestamps() {
    let topic = unique("cfl_stamps").replace('-', "_");
    create_topic(&topic, 1, "delete");
    let mut config = vec![
        ("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", jdbc_url()),
        ("connection.user", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("auto.create", "true".into()),
        ("timestamp.fields.list", "seen_us,seen_text".into()),
    ];
    config.extend(json_converters());
    let connector = unique("cfl-stamps");
    let (_standalone, worker) = one_sink(&connector, &config);
    let value = json!({
        "schema": {"type": "struct", "name": "Seen", "optional": false, "fields": [
            {"field": "id", "type": "int32", "optional": false},
            {"field": "seen_us", "type": "int64", "optional": false},
            {"field": "seen_text", "type": "string", "optional": true},
            {"field": "count", "type": "int64", "optional": false}
        ]},
        "payload": {"id": 1, "seen_us": 1_705_320_000_123_456i64, "seen_text": "-1", "count": 3}
    });
    produce_keyed(&topic, &key(1), Some(value.to_string().as_bytes()));
    wait_rows(
        &worker,
        &format!("SELECT id, seen_us, seen_text, count FROM \"{topic}\""),
        &["1|2024-01-15 12:00:00.123456|1969-12-31 23:59:59.999999|3"],
    );
    let columns = sql(&format!(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{topic}' ORDER BY ordinal_position"
    ));
    assert_eq!(
        columns,
        ["id|integer", "seen_us|timestamp without time zone", "seen_text|timestamp without time zone", "count|bigint"]
    );
}

#[test]
fn a_row_the_database_refuses_goes_to_the_dead_letter_queue_and_the_others_are_written() {
    let topic = unique("refused").replace('-', "_");
    let dlq = unique("refused-dlq");
    create_topic(&topic, 1, "delete");
    sql(&format!(
        "CREATE TABLE {topic} (id integer PRIMARY KEY, name text, price numeric(10,2) CHECK (price > 1), at timestamp)"
    ));
    let mut config = vec![
        ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", jdbc_url()),
        ("connection.username", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("primary.key.mode", "record_key".into()),
        ("errors.tolerance", "all".into()),
        ("errors.deadletterqueue.topic.name", dlq.clone()),
        ("errors.deadletterqueue.topic.replication.factor", "1".into()),
        ("errors.deadletterqueue.context.headers.enable", "true".into()),
    ];
    config.extend(json_converters());
    let connector = unique("refused");
    let (_standalone, worker) = one_sink(&connector, &config);
    produce_keyed(&topic, &key(1), Some(&order(1, Some("ok"), 500, 0)));
    produce_keyed(&topic, &key(2), Some(&order(2, Some("too cheap"), 50, 0)));
    produce_keyed(&topic, &key(3), Some(&order(3, Some("ok too"), 700, 0)));
    wait_rows(&worker, &format!("SELECT id FROM {topic} ORDER BY id"), &["1", "3"]);
    let dead = worker.wait("the refused record in the dead-letter queue", Duration::from_secs(60), || {
        let records = topic_values(&dlq);
        (!records.is_empty()).then_some(records)
    });
    assert_eq!(dead.len(), 1);
    assert!(String::from_utf8_lossy(&dead[0]).contains("too cheap"));
    assert_eq!(worker.task_state_now(&connector, 0).0, "RUNNING");
    // The sink's own metrics: two rows written, one refused, a put time for each put.
    let task = format!(r#"connector="{connector}",task="0""#);
    let written = worker.wait("the sink's metrics", Duration::from_secs(30), || {
        worker.metric("kafka_connect_plugins_jdbc_sink_rows_written_total", &task).filter(|n| *n >= 2.0)
    });
    assert_eq!(written, 2.0);
    assert_eq!(worker.metric("kafka_connect_plugins_jdbc_sink_rows_refused_total", &task), Some(1.0));
    let puts = worker.metric("kafka_connect_plugins_jdbc_sink_put_seconds_count", &task).unwrap_or_default();
    assert!(puts >= 1.0, "{puts}");
}

#[test]
fn a_missing_table_without_schema_evolution_fails_the_task_naming_table_and_setting() {
    let topic = unique("missing").replace('-', "_");
    create_topic(&topic, 1, "delete");
    let mut config = vec![
        ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", jdbc_url()),
        ("connection.username", "wharf".into()),
        ("connection.password", "wharf".into()),
    ];
    config.extend(json_converters());
    let connector = unique("missing");
    let (_standalone, worker) = one_sink(&connector, &config);
    produce_keyed(&topic, &key(1), Some(&order(1, Some("x"), 100, 0)));
    let failed = worker.wait_task_state(&connector, 0, "FAILED");
    let trace = failed["trace"].as_str().unwrap_or_default();
    assert!(
        trace.contains(&format!(
            "the table {topic} for the record at {topic}-0 offset 0 does not exist, and schema.evolution=none"
        )),
        "{trace}"
    );
}

#[test]
fn validate_refuses_mixed_and_inconsistent_keys_and_a_server_outside_the_ceiling_by_name() {
    let standalone = Standalone::new(&[]);
    let worker = standalone.start();
    let validate = |config: Value| -> Value {
        let (code, answer, _) = worker.call(
            "PUT",
            "/connector-plugins/io.debezium.connector.jdbc.JdbcSinkConnector/config/validate",
            Some(&config.to_string()),
        );
        assert_eq!(code, 200, "{answer}");
        answer
    };
    let errors_of = |answer: &Value| -> Vec<(String, String)> {
        answer["configs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| {
                let errors = c["value"]["errors"].as_array()?;
                let first = errors.first()?.as_str()?.to_string();
                Some((c["value"]["name"].as_str()?.to_string(), first))
            })
            .collect()
    };
    let answer = validate(json!({
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "name": "v", "topics": "t",
        "connection.url": jdbc_url(), "connection.username": "wharf",
        "insert.mode": "upsert", "pk.mode": "record_key"
    }));
    let errors = errors_of(&answer);
    assert!(errors.iter().any(|(k, m)| k == "pk.mode" && m.contains("Confluent's JDBC sink's key")), "{errors:?}");
    assert!(errors.iter().any(|(k, m)| k == "primary.key.mode" && m.contains("insert.mode=upsert")), "{errors:?}");

    let answer = validate(json!({
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "name": "v", "topics": "t",
        "connection.url": "jdbc:postgresql://db.example.com:5432/wharf?password=hunter2", "connection.username": "wharf"
    }));
    let errors = errors_of(&answer);
    let (_, url_error) = errors.iter().find(|(k, _)| k == "connection.url").unwrap();
    assert!(url_error.contains("connection.url=db.example.com:5432 is outside what this worker allows"), "{url_error}");
    assert!(!url_error.contains("hunter2"), "the error shows the server, not the URL: {url_error}");
    // A URL that holds a password is a secret, as a PASSWORD key is.
    assert!(!answer.to_string().contains("hunter2"), "{answer}");
    let shown = answer["configs"].as_array().unwrap().iter().find(|c| c["value"]["name"] == "connection.url").unwrap();
    assert_eq!(shown["value"]["value"], "[hidden]");
}

fn debezium_upsert(topic: &str) -> Vec<(&'static str, String)> {
    let mut config = vec![
        ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.to_string()),
        ("connection.url", jdbc_url()),
        ("connection.username", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("insert.mode", "upsert".into()),
        ("primary.key.mode", "record_key".into()),
        ("schema.evolution", "basic".into()),
        ("flush.retry.delay.ms", "200".into()),
        ("flush.max.retries", "1000".into()),
    ];
    config.extend(json_converters());
    config
}

#[test]
fn connections_cut_under_load_lose_no_row_and_double_none() {
    let topic = unique("cut").replace('-', "_");
    create_topic(&topic, 1, "delete");
    let mut standalone = Standalone::new(&[]);
    let connector = unique("cut");
    standalone.add_connector(&connector, &debezium_upsert(&topic));
    let worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    let terminate = format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'wharf-jdbc-sink {connector}'"
    );
    let mut cut = 0;
    for round in 0..10 {
        let records: Vec<_> = (round * 50..(round + 1) * 50)
            .map(|id| (key(id), Some(order(id, Some("row"), i64::from(id) + 100, 0))))
            .collect();
        produce_all(&topic, &records);
        std::thread::sleep(Duration::from_millis(100));
        cut += sql(&terminate).first().and_then(|n| n.parse::<i32>().ok()).unwrap_or(0);
    }
    wait_rows(&worker, &format!("SELECT count(*), count(DISTINCT id), sum(price) FROM {topic}"), &["500|500|1747.50"]);
    assert!(cut > 0, "no connection of the sink was cut; the test did not test");
    assert!(worker.log().contains("the batch will be written again"), "a cut connection is retried");
    assert_eq!(worker.task_state_now(&connector, 0).0, "RUNNING");
}

#[test]
fn a_connector_moved_from_kafka_connect_resumes_from_its_committed_offsets() {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::TopicPartitionList;
    let topic = unique("moved").replace('-', "_");
    create_topic(&topic, 1, "delete");
    for id in 1..=3 {
        produce_keyed(&topic, &key(id), Some(&order(id, Some("before"), 100, 0)));
    }
    // What Kafka Connect left: the sink's group connect-<name> committed up to offset 2.
    let connector = unique("moved");
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", format!("connect-{connector}"))
        .create()
        .unwrap();
    let mut offsets = TopicPartitionList::new();
    offsets.add_partition_offset(&topic, 0, rdkafka::Offset::Offset(2)).unwrap();
    consumer.commit(&offsets, CommitMode::Sync).unwrap();
    drop(consumer);

    let mut standalone = Standalone::new(&[]);
    standalone.add_connector(&connector, &debezium_upsert(&topic));
    let worker = standalone.start();
    worker.wait_task_state(&connector, 0, "RUNNING");
    produce_keyed(&topic, &key(4), Some(&order(4, Some("after"), 100, 0)));
    wait_rows(&worker, &format!("SELECT id, name FROM {topic} ORDER BY id"), &["3|before", "4|after"]);
}

fn wait_maria(worker: &Worker, query: &str, expected: &[&str]) {
    let last = std::cell::RefCell::new(Err(String::new()));
    let answered = wait_for_answer(Duration::from_secs(60), || {
        *last.borrow_mut() = try_maria(query);
        matches!(&*last.borrow(), Ok(rows) if rows == expected)
    });
    assert!(
        answered,
        "{query} did not answer {expected:?} in MariaDB; its last answer: {:?}\n{}",
        last.borrow(),
        worker.log()
    );
}

/// Whether `check` held within `timeout`.
fn wait_for_answer(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Debezium's config upserting by record key into MariaDB, making the table, with JSON converters.
fn maria_debezium_upsert(topic: &str) -> Vec<(&'static str, String)> {
    let mut config = vec![
        ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.to_string()),
        ("connection.url", format!("jdbc:mariadb://{}/wharf", mariadb())),
        ("connection.username", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("insert.mode", "upsert".into()),
        ("primary.key.mode", "record_key".into()),
        ("schema.evolution", "basic".into()),
    ];
    config.extend(json_converters());
    config
}

#[test]
fn a_debezium_config_upserts_and_deletes_in_mariadb_through_its_own_protocol() {
    let topic = unique("maria.orders").replace('-', "_");
    let table = topic.replace('.', "_").to_lowercase();
    create_topic(&topic, 1, "delete");
    let mut config = maria_debezium_upsert(&topic);
    config.push(("delete.enabled", "true".into()));
    let connector = unique("maria");
    let (_standalone, worker) = one_sink(&connector, &config);
    let t0 = 1_704_067_200_000;
    produce_all(
        &topic,
        &[
            (key(1), Some(order(1, Some("apple's"), 125, t0))),
            (key(2), Some(order(2, None, 9_900, t0 + 1_500))),
            (key(3), Some(order(3, Some("cherry"), 1, t0))),
            (key(2), Some(order(2, Some("banana \u{1F34C}"), 10_000, t0 + 2_000))),
            (key(3), None),
        ],
    );
    wait_maria(
        &worker,
        &format!("SELECT id, name, price, at FROM {table} WHERE id = 1 OR id = 3"),
        &["1|apple's|1.25|2024-01-01 00:00:00.000000"],
    );
    // Text goes as UTF-8 (the client's own display may not be), checked byte for byte.
    let banana = format!("SELECT HEX(name), price, at FROM {table} WHERE id = 2");
    let expected = format!(
        "{}|100.00|2024-01-01 00:00:02.000000",
        "banana \u{1F34C}".bytes().map(|b| format!("{b:02X}")).collect::<String>()
    );
    wait_maria(&worker, &banana, &[expected.as_str()]);
    let columns = try_maria(&format!(
        "SELECT column_name, column_type, is_nullable, column_key FROM information_schema.columns \
         WHERE table_schema = 'wharf' AND table_name = '{table}' ORDER BY ordinal_position"
    ))
    .unwrap();
    assert_eq!(columns, ["id|int(11)|NO|PRI", "name|longtext|YES|", "price|decimal(10,2)|NO|", "at|datetime(6)|NO|"]);
}

/// Maps go to MariaDB as json columns holding JSON objects. (Debezium's sink means to do the same,
/// but binds `cast(? as json)`, which MariaDB refuses: docs/connectors/jdbc-sink.md.)
#[test]
fn maps_go_to_mariadb_as_json_objects() {
    let topic = unique("maria.maps").replace('-', "_");
    let table = topic.replace('.', "_").to_lowercase();
    create_topic(&topic, 1, "delete");
    let config = maria_debezium_upsert(&topic);
    let connector = unique("maria-maps");
    let (_standalone, worker) = one_sink(&connector, &config);
    let value = |id: i32, attributes: serde_json::Value| {
        let fields = serde_json::json!([
            {"field": "id", "type": "int32", "optional": false},
            {"field": "attributes", "type": "map", "optional": true,
             "keys": {"type": "string", "optional": false}, "values": {"type": "double", "optional": true}}
        ]);
        let schema = serde_json::json!({"type": "struct", "name": "Mapped", "optional": false, "fields": fields});
        serde_json::json!({"schema": schema, "payload": {"id": id, "attributes": attributes}}).to_string().into_bytes()
    };
    produce_all(
        &topic,
        &[
            (key(1), Some(value(1, serde_json::json!({"plain": 1.5, "quote\" é": null})))),
            (key(2), Some(value(2, serde_json::Value::Null))),
            (key(3), Some(value(3, serde_json::json!({})))),
        ],
    );
    wait_maria(
        &worker,
        &format!("SELECT id, attributes, JSON_VALID(attributes) FROM {table} ORDER BY id"),
        &["1|{\"plain\":1.5,\"quote\\\\\" é\":null}|1", "2|NULL|NULL", "3|{}|1"],
    );
    let columns = try_maria(&format!(
        "SELECT column_name, column_type FROM information_schema.columns \
         WHERE table_schema = 'wharf' AND table_name = '{table}' ORDER BY ordinal_position"
    ))
    .unwrap();
    assert_eq!(columns, ["id|int(11)", "attributes|longtext"]);
}

#[test]
fn a_confluent_config_inserts_into_mariadb_with_kafka_coordinates() {
    let topic = unique("CflMaria").replace('-', "_");
    create_topic(&topic, 1, "delete");
    let mut config = vec![
        ("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", format!("jdbc:mysql://{}/wharf", mariadb())),
        ("connection.user", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("pk.mode", "kafka".into()),
        ("auto.create", "true".into()),
    ];
    config.extend(json_converters());
    let connector = unique("cfl-maria");
    let (_standalone, worker) = one_sink(&connector, &config);
    produce_all(
        &topic,
        &[(key(7), Some(order(7, Some("fig"), 250, 0))), (key(8), Some(order(8, Some("grape"), 75, 0)))],
    );
    wait_maria(
        &worker,
        &format!("SELECT __connect_offset, id, name, price FROM `{topic}` ORDER BY 1"),
        &["0|7|fig|2.50", "1|8|grape|0.75"],
    );
    let columns = try_maria(&format!(
        "SELECT column_name, column_type FROM information_schema.columns \
         WHERE table_schema = 'wharf' AND table_name = '{topic}' ORDER BY ordinal_position"
    ))
    .unwrap();
    assert_eq!(
        columns,
        [
            "__connect_topic|varchar(256)",
            "__connect_partition|int(11)",
            "__connect_offset|bigint(20)",
            "id|int(11)",
            "name|text",
            "price|decimal(65,2)",
            "at|datetime(3)",
        ]
    );
}

#[test]
fn a_row_mariadb_refuses_goes_to_the_dead_letter_queue_and_the_others_are_written() {
    let topic = unique("maria_refused").replace('-', "_");
    let dlq = unique("maria-refused-dlq");
    create_topic(&topic, 1, "delete");
    try_maria(&format!(
        "CREATE TABLE {topic} (id integer PRIMARY KEY, name text, price decimal(10,2) CHECK (price > 1), at datetime(6))"
    ))
    .unwrap();
    let mut config = vec![
        ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
        ("topics", topic.clone()),
        ("connection.url", format!("jdbc:mariadb://{}/wharf", mariadb())),
        ("connection.username", "wharf".into()),
        ("connection.password", "wharf".into()),
        ("primary.key.mode", "record_key".into()),
        ("errors.tolerance", "all".into()),
        ("errors.deadletterqueue.topic.name", dlq.clone()),
        ("errors.deadletterqueue.topic.replication.factor", "1".into()),
    ];
    config.extend(json_converters());
    let connector = unique("maria-refused");
    let (_standalone, worker) = one_sink(&connector, &config);
    produce_all(
        &topic,
        &[
            (key(1), Some(order(1, Some("ok"), 500, 0))),
            (key(2), Some(order(2, Some("too cheap"), 50, 0))),
            (key(3), Some(order(3, Some("ok too"), 700, 0))),
        ],
    );
    wait_maria(&worker, &format!("SELECT id FROM {topic} ORDER BY id"), &["1", "3"]);
    let dead = worker.wait("the refused record in the dead-letter queue", Duration::from_secs(60), || {
        let records = topic_values(&dlq);
        (!records.is_empty()).then_some(records)
    });
    assert_eq!(dead.len(), 1);
    assert!(String::from_utf8_lossy(&dead[0]).contains("too cheap"));
}

#[test]
fn a_database_that_goes_silent_fails_the_put_as_retriable_within_the_call() {
    // A server that takes the connection and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap();
    let held = std::thread::spawn(move || silent.incoming().take(3).filter_map(Result::ok).collect::<Vec<_>>());
    let topic = unique("silent").replace('-', "_");
    create_topic(&topic, 1, "delete");
    let mut config = debezium_upsert(&topic);
    config.retain(|(k, _)| *k != "connection.url");
    config.push(("connection.url", format!("jdbc:postgresql://{address}/wharf")));
    let connector = unique("silent");
    let (_standalone, worker) = one_sink(&connector, &config);
    produce_keyed(&topic, &key(1), Some(&order(1, Some("x"), 100, 0)));
    worker.wait("the silent database to fail a put as retriable", Duration::from_secs(60), || {
        worker
            .log()
            .contains("the batch will be written again: the connection to PostgreSQL was lost while reading")
            .then_some(())
    });
    assert_eq!(worker.task_state_now(&connector, 0).0, "RUNNING", "a silent database is retried, not a dead task");
    drop(held);
}

/// The authority that signed a test server's certificate (`--tls` of scripts/postgres and
/// scripts/mariadb), copied into `dir`, which the workers' grant ceiling covers.
fn server_authority(variable: &str, dir: &std::path::Path) -> String {
    let path = std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: run the suite with ./run test, which starts the databases with TLS")
    });
    let copy = dir.join(format!("{}.pem", variable.to_lowercase()));
    std::fs::copy(&path, &copy).unwrap_or_else(|e| panic!("{variable}={path}: {e}"));
    copy.display().to_string()
}

/// An authority that signed nothing the servers hold, as PEM in `dir`.
fn stranger_authority(dir: &std::path::Path) -> String {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut authority = CertificateParams::new(Vec::<String>::new()).unwrap();
    authority.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let pem = authority.self_signed(&KeyPair::generate().unwrap()).unwrap().pem();
    let path = dir.join("stranger.pem");
    std::fs::write(&path, pem).unwrap();
    path.display().to_string()
}

#[test]
fn a_url_asking_for_verified_tls_writes_over_it_and_a_certificate_it_cannot_trust_fails_the_task() {
    let topic = unique("tls.orders").replace('-', "_");
    let table = topic.replace('.', "_").to_lowercase();
    create_topic(&topic, 1, "delete");
    let mut standalone = Standalone::new(&[]);
    let authority = server_authority("WHARF_TEST_POSTGRES_CA", standalone.dir.path());
    let stranger = stranger_authority(standalone.dir.path());
    let config = |url: String, table: &str| {
        let mut config = vec![
            ("connector.class", "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
            ("topics", topic.clone()),
            ("connection.url", url),
            // A user the server lets in only over TLS (scripts/postgres --tls).
            ("connection.username", "wharf_tls".into()),
            ("connection.password", "wharf".into()),
            ("schema.evolution", "basic".into()),
            ("collection.name.format", table.to_string()),
        ];
        config.extend(json_converters());
        config
    };
    let verified = unique("tls-verified");
    standalone.add_connector(
        &verified,
        &config(format!("{}?sslmode=verify-full&sslrootcert={authority}", jdbc_url()), &table),
    );
    let refused = unique("tls-stranger");
    standalone.add_connector(
        &refused,
        &config(format!("{}?sslmode=verify-ca&sslrootcert={stranger}", jdbc_url()), &format!("{table}_stranger")),
    );
    // pgjdbc's allow: plaintext first, then TLS when the server refuses the plaintext sign-in.
    let allowed = unique("tls-allow");
    standalone.add_connector(&allowed, &config(format!("{}?sslmode=allow", jdbc_url()), &format!("{table}_allow")));
    let worker = standalone.start();
    worker.wait_task_state(&verified, 0, "RUNNING");
    produce_keyed(&topic, &key(1), Some(&order(1, Some("sealed"), 100, 0)));
    // Every connector reads the record; the one that trusts a stranger's authority writes nothing.
    wait_rows(&worker, &format!("SELECT id, name FROM {table}"), &["1|sealed"]);
    wait_rows(&worker, &format!("SELECT id, name FROM {table}_allow"), &["1|sealed"]);
    let encrypted = sql(&format!(
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'wharf-jdbc-sink {verified}'"
    ));
    assert_eq!(encrypted, ["t"], "the sink's session is encrypted");
    assert!(worker.log().contains("as wharf_tls, over TLS"), "{}", worker.log());
    let failed = worker.wait_task_state(&refused, 0, "FAILED");
    let trace = failed["trace"].as_str().unwrap_or_default();
    assert!(
        trace.contains(&format!("its certificate is not signed by the certificates in {stranger}"))
            && trace.contains("connection.url (sslmode=verify-ca)"),
        "{trace}"
    );
}

#[test]
fn mariadb_over_tls_as_its_connector_j_url_asks() {
    let topic = unique("tls.maria").replace('-', "_");
    let table = topic.replace('.', "_").to_lowercase();
    create_topic(&topic, 1, "delete");
    let mut standalone = Standalone::new(&[]);
    let authority = server_authority("WHARF_TEST_MARIADB_CA", standalone.dir.path());
    let config = |url: String| {
        let mut config = vec![
            ("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector".to_string()),
            ("topics", topic.clone()),
            ("connection.url", url),
            // A user MariaDB lets in only over TLS (REQUIRE SSL; scripts/mariadb --tls).
            ("connection.user", "wharf_tls".into()),
            ("connection.password", "wharf".into()),
            ("auto.create", "true".into()),
            ("table.name.format", table.clone()),
        ];
        config.extend(json_converters());
        config
    };
    let verified = unique("maria-tls");
    standalone.add_connector(
        &verified,
        &config(format!("jdbc:mariadb://{}/wharf?sslMode=verify-full&serverSslCert={authority}", mariadb())),
    );
    // MariaDB Connector/J's default is no TLS, which this user may not sign in with.
    let plain = unique("maria-plain");
    standalone.add_connector(&plain, &config(format!("jdbc:mariadb://{}/wharf", mariadb())));
    let worker = standalone.start();
    worker.wait_task_state(&verified, 0, "RUNNING");
    produce_keyed(&topic, &key(7), Some(&order(7, Some("sealed"), 700, 0)));
    wait_maria(&worker, &format!("SELECT id, name FROM {table}"), &["7|sealed"]);
    assert!(worker.log().contains("as wharf_tls, over TLS"), "{}", worker.log());
    let failed = worker.wait_task_state(&plain, 0, "FAILED");
    let trace = failed["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("MariaDB refused wharf_tls"), "{trace}");
}
