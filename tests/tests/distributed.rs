//! A distributed worker on the real broker: state in three compacted topics, connectors over REST.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

fn write_lines(path: &Path, range: std::ops::Range<usize>) {
    let mut file = OpenOptions::new().create(true).append(true).open(path).unwrap();
    let text: String = range.map(|i| format!("line-{i:09}\n")).collect();
    file.write_all(text.as_bytes()).unwrap();
}

fn lines(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("line-{i:09}")).collect()
}

fn source_config(dir: &Path, input: &Path, topic: &str) -> Value {
    json!({
        "connector.class": "file-source",
        "file": input.display().to_string(),
        "topic": topic,
        "wasm.fs.read": dir.display().to_string(),
    })
}

fn sink_config(dir: &Path, output: &Path, topic: &str) -> Value {
    json!({
        "connector.class": "file-sink",
        "file": output.display().to_string(),
        "topics": topic,
        "wasm.fs.write": dir.display().to_string(),
    })
}

#[test]
fn connectors_created_over_rest_move_data_and_report_running() {
    let d = Distributed::new(&[]);
    let data = tempfile::tempdir().unwrap();
    let (input, output, topic) = (data.path().join("in.txt"), data.path().join("out.txt"), unique("rest-flow"));
    write_lines(&input, 0..200);
    let worker = d.start();

    let body = json!({"name": "src", "config": source_config(data.path(), &input, &topic)}).to_string();
    let (code, created, headers) = worker.call("POST", "/connectors", Some(&body));
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["name"], "src");
    assert_eq!(created["type"], "source");
    assert_eq!(created["config"]["topic"], topic.as_str());
    assert!(created["tasks"].is_array(), "{created}");
    assert!(
        headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("location") && v.ends_with("/connectors/src")),
        "{headers:?}"
    );

    let sink = unique("sink");
    let (code, _, _) = worker.call(
        "PUT",
        &format!("/connectors/{sink}/config"),
        Some(&sink_config(data.path(), &output, &topic).to_string()),
    );
    assert_eq!(code, 201);
    worker.wait("200 lines out", Duration::from_secs(60), || (count_lines(&output) >= 200).then_some(()));
    assert_eq!(read_lines(&output), lines(0..200));
    for name in ["src", sink.as_str()] {
        worker.wait_task_state(name, 0, "RUNNING");
        let status = worker.get(&format!("/connectors/{name}/status")).unwrap();
        assert_eq!(status["connector"]["state"], "RUNNING");
        assert_eq!(status["connector"]["worker_id"], format!("127.0.0.1:{}", d.port));
    }
    let tasks = worker.get("/connectors/src/tasks").unwrap();
    assert_eq!(tasks[0]["id"], json!({"connector": "src", "task": 0}));
    assert_eq!(tasks[0]["config"]["topic"], topic.as_str());

    // Sink offsets are in Kafka's __consumer_offsets, under the connector's group.
    worker.wait("the sink's committed offset", Duration::from_secs(30), || {
        (committed_offset(&format!("connect-{sink}"), &topic) == Some(200)).then_some(())
    });
    let offsets = topic_records(&d.topics[1]);
    assert!(offsets.iter().all(|(_, key, _)| key.starts_with("[\"src\",")), "only source offsets: {offsets:?}");

    // Updating a config answers 200 and the connector runs with it.
    let mut updated = sink_config(data.path(), &output, &topic);
    updated["batch.note"] = json!("changed");
    let (code, body, _) = worker.call("PUT", &format!("/connectors/{sink}/config"), Some(&updated.to_string()));
    assert_eq!(code, 200, "{body}");
    worker.wait("the new sink config", Duration::from_secs(30), || {
        worker.get(&format!("/connectors/{sink}/config")).filter(|c| c["batch.note"] == "changed")
    });

    let (code, _, _) = worker.call("DELETE", &format!("/connectors/{sink}"), None);
    assert_eq!(code, 204);
    assert_eq!(worker.get("/connectors").unwrap(), json!(["src"]));
}

#[test]
fn rest_errors_say_what_to_fix() {
    let d = Distributed::new(&[]);
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("in.txt");
    write_lines(&input, 0..1);
    let worker = d.start();
    let config = source_config(data.path(), &input, &unique("errors"));
    let body = json!({"name": "src", "config": config}).to_string();
    assert_eq!(worker.call("POST", "/connectors", Some(&body)).0, 201);

    let (code, error, _) = worker.call("POST", "/connectors", Some(&body));
    assert_eq!((code, error["error_code"].clone()), (409, json!(409)));
    assert!(error["message"].as_str().unwrap().contains("src already exists"), "{error}");

    let (code, error, _) = worker.call("POST", "/connectors", Some("{not json"));
    assert_eq!(code, 400);
    assert!(error["message"].as_str().unwrap().contains("not valid JSON"), "{error}");

    let mut mismatched = config.clone();
    mismatched["name"] = json!("other");
    let (code, error, _) = worker.call("PUT", "/connectors/src/config", Some(&mismatched.to_string()));
    assert_eq!(code, 400);
    assert!(error["message"].as_str().unwrap().contains("doesn't match"), "{error}");

    let (code, error, _) = worker.call(
        "POST",
        "/connectors",
        Some(&json!({"name": "x", "config": {"connector.class": "nope"}}).to_string()),
    );
    assert_eq!(code, 400);
    assert!(error["message"].as_str().unwrap().contains("connector.class=nope"), "{error}");

    let (code, error, _) = worker.call("POST", "/connectors", Some(&json!({"config": {}}).to_string()));
    assert_eq!(code, 400);
    assert!(error["message"].as_str().unwrap().contains("\"name\""), "{error}");

    for (method, path) in [
        ("GET", "/connectors/ghost"),
        ("GET", "/connectors/ghost/status"),
        ("DELETE", "/connectors/ghost"),
        ("PUT", "/connectors/ghost/pause"),
        ("POST", "/connectors/ghost/restart"),
        ("POST", "/connectors/src/tasks/7/restart"),
    ] {
        let (code, error, _) = worker.call(method, path, None);
        assert_eq!(code, 404, "{method} {path}: {error}");
        assert_eq!(error["error_code"], 404);
    }
}

#[test]
fn a_fresh_worker_rebuilds_connectors_states_and_offsets_from_the_topics() {
    // A killed worker's sink stays in its consumer group until the session times out.
    let settings =
        [("offset.flush.interval.ms", "200".to_string()), ("consumer.session.timeout.ms", "6000".to_string())];
    let d = Distributed::new(&settings);
    let data = tempfile::tempdir().unwrap();
    let (input, output, topic) = (data.path().join("in.txt"), data.path().join("out.txt"), unique("rebuild"));
    write_lines(&input, 0..1000);
    let mut worker = d.start();
    let sink = unique("sink");
    for (name, config) in [
        ("src", source_config(data.path(), &input, &topic)),
        (sink.as_str(), sink_config(data.path(), &output, &topic)),
        ("paused", json!({"connector.class": "datagen", "topic": unique("p"), "rate": "1"})),
        ("deleted", json!({"connector.class": "datagen", "topic": unique("d"), "rate": "1"})),
        ("stopped", json!({"connector.class": "datagen", "topic": unique("s"), "rate": "1"})),
    ] {
        let (code, body, _) = worker.call("PUT", &format!("/connectors/{name}/config"), Some(&config.to_string()));
        assert_eq!(code, 201, "{name}: {body}");
    }
    assert_eq!(worker.call("PUT", "/connectors/paused/pause", None).0, 202);
    assert_eq!(worker.call("PUT", "/connectors/stopped/stop", None).0, 204);
    assert_eq!(worker.call("DELETE", "/connectors/deleted", None).0, 204);
    worker.wait("1000 lines out", Duration::from_secs(60), || (count_lines(&output) >= 1000).then_some(()));
    worker.wait("the source's offsets stored", Duration::from_secs(30), || {
        topic_records(&d.topics[1]).iter().any(|(_, _, v)| v.as_deref() == Some(r#"{"position":15000}"#)).then_some(())
    });
    worker.wait("the sink's offsets committed", Duration::from_secs(30), || {
        (committed_offset(&format!("connect-{sink}"), &topic) == Some(1000)).then_some(())
    });
    worker.kill_9();

    // Another folder, another port: nothing local survives, only the topics.
    let fresh = d.again(&settings);
    let worker = fresh.start();
    worker.wait("the connectors replayed", Duration::from_secs(30), || {
        (worker.get("/connectors")? == json!(["paused", sink, "src", "stopped"])).then_some(())
    });
    // The offsets come back from the topics too.
    let source_offsets = worker.get("/connectors/src/offsets").unwrap();
    assert_eq!(
        source_offsets,
        json!({"offsets": [{"partition": {"filename": input.display().to_string()}, "offset": {"position": 15000}}]})
    );
    let sink_offsets = worker.get(&format!("/connectors/{sink}/offsets")).unwrap();
    assert_eq!(sink_offsets["offsets"][0]["offset"]["kafka_offset"], 1000, "{sink_offsets}");
    // The killed worker's statuses stay in the topic until the group gives its work to the
    // fresh one (after session.timeout.ms), which then reports under its own id.
    let me = format!("127.0.0.1:{}", fresh.port);
    worker.wait("the fresh worker to run src", Duration::from_secs(60), || {
        let status = worker.get("/connectors/src/status")?;
        let ours = |s: &Value| s["state"] == "RUNNING" && s["worker_id"] == me.as_str();
        (ours(&status["connector"]) && ours(&status["tasks"][0])).then_some(())
    });
    worker.wait("paused to stay PAUSED", Duration::from_secs(30), || {
        let status = worker.get("/connectors/paused/status")?;
        (status["connector"]["state"] == "PAUSED" && status["connector"]["worker_id"] == me.as_str()).then_some(())
    });
    worker.wait("stopped to stay STOPPED", Duration::from_secs(30), || {
        let status = worker.get("/connectors/stopped/status")?;
        (status["connector"]["state"] == "STOPPED" && status["connector"]["worker_id"] == me.as_str()).then_some(())
    });

    write_lines(&input, 1000..1100);
    worker.wait("the 100 new lines", Duration::from_secs(60), || (count_lines(&output) >= 1100).then_some(()));
    std::thread::sleep(Duration::from_millis(1000));
    let out = read_lines(&output);
    let expected = lines(0..1100);
    assert!(expected.iter().all(|l| out.contains(l)), "a line was lost");
    // Offsets were stored before the kill, and the sink committed what it wrote: no repeats.
    assert_eq!(out.len(), 1100, "lines were repeated after the restart");
}

#[test]
fn auto_created_topics_have_exactly_the_right_settings() {
    let d = Distributed::new(&[("offset.storage.partitions", "7".into()), ("status.storage.partitions", "3".into())]);
    let _worker = d.start();
    assert_eq!(topic_settings(&d.topics[0]), (1, "compact".to_string()));
    assert_eq!(topic_settings(&d.topics[1]), (7, "compact".to_string()));
    assert_eq!(topic_settings(&d.topics[2]), (3, "compact".to_string()));
}

#[test]
fn a_config_topic_with_three_partitions_is_refused() {
    let d = Distributed::new(&[]);
    create_topic(&d.topics[0], 3, "compact");
    let (status, log) = d.run_to_failure();
    assert!(!status.success());
    let expected = format!(
        "topic '{}' (named by config.storage.topic) has 3 partitions, but it must have exactly 1 so that every \
         worker reads connector configurations in one total order",
        d.topics[0]
    );
    assert!(log.contains(&expected), "{log}");
}

#[test]
fn a_status_topic_that_deletes_is_refused() {
    let d = Distributed::new(&[]);
    create_topic(&d.topics[2], 5, "delete");
    let (status, log) = d.run_to_failure();
    assert!(!status.success());
    let expected = format!(
        "topic '{}' (named by status.storage.topic) has cleanup.policy=delete, but it must be exactly cleanup.policy=compact",
        d.topics[2]
    );
    assert!(log.contains(&expected), "{log}");
}

#[test]
fn a_second_cluster_on_the_same_topics_is_refused() {
    let first = Distributed::new(&[]);
    let worker = first.start();
    let other = Distributed::with(unique("other-cluster"), first.topics.clone(), &[]);
    let (status, log) = other.run_to_failure();
    assert!(!status.success());
    assert!(log.contains(&format!("belongs to the cluster with group.id={}", first.group)), "{log}");
    assert!(log.contains(&format!("this worker has group.id={}", other.group)), "{log}");
    assert!(worker.get("/connectors").is_some(), "the first cluster keeps running");
}

#[test]
fn a_garbage_record_in_the_config_topic_is_skipped() {
    let d = Distributed::new(&[]);
    create_topic(&d.topics[0], 1, "compact");
    produce(&d.topics[0], 0, "connector-broken", b"\x00\x01 not json");
    produce(&d.topics[0], 0, "who-knows", b"{}");
    let worker = d.start();
    let body = json!({"name": "gen", "config": {"connector.class": "datagen", "topic": unique("g"), "rate": "1"}});
    assert_eq!(worker.call("POST", "/connectors", Some(&body.to_string())).0, 201);
    worker.wait_task_state("gen", 0, "RUNNING");
    assert_eq!(worker.get("/connectors").unwrap(), json!(["gen"]));
    let log = worker.log();
    assert!(log.contains("skipping record") && log.contains("connector-broken"), "{log}");
}

#[test]
fn internal_records_use_kafka_connects_keys_values_and_partitions() {
    let d = Distributed::new(&[("offset.flush.interval.ms", "200".into())]);
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.txt"), unique("formats"));
    write_lines(&input, 0..10);
    let worker = d.start();
    let body = json!({"name": "src", "config": source_config(data.path(), &input, &topic)});
    assert_eq!(worker.call("POST", "/connectors", Some(&body.to_string())).0, 201);
    worker.wait("offsets", Duration::from_secs(30), || (!topic_records(&d.topics[1]).is_empty()).then_some(()));
    assert_eq!(worker.call("PUT", "/connectors/src/pause", None).0, 202);

    let configs = topic_records(&d.topics[0]);
    let value_of = |key: &str| -> Value {
        let (_, _, v) =
            configs.iter().rev().find(|(_, k, _)| k == key).unwrap_or_else(|| panic!("no {key}: {configs:?}"));
        serde_json::from_str(v.as_deref().unwrap()).unwrap()
    };
    assert_eq!(value_of("connector-src")["properties"]["topic"], topic.as_str());
    assert_eq!(value_of("task-src-0")["properties"]["file"], input.display().to_string());
    assert_eq!(value_of("commit-src"), json!({"tasks": 1}));
    assert_eq!(value_of("target-state-src"), json!({"state": "PAUSED", "state.v2": "PAUSED"}));

    let expected_key = json!(["src", {"filename": input.display().to_string()}]).to_string();
    let (partition, key, value) = topic_records(&d.topics[1]).into_iter().last().unwrap();
    assert_eq!(key, expected_key);
    assert_eq!(value.as_deref(), Some(r#"{"position":150}"#));
    assert_eq!(partition, wharf::kafka::partitioner::partition_for_key(key.as_bytes(), 25), "murmur2 partition");

    let statuses = topic_records(&d.topics[2]);
    let (partition, _, value) = statuses.iter().rev().find(|(_, k, _)| k == "status-connector-src").unwrap();
    let status: Value = serde_json::from_str(value.as_deref().unwrap()).unwrap();
    assert_eq!(status["state"], "PAUSED");
    assert_eq!(status["worker_id"], format!("127.0.0.1:{}", d.port));
    assert!(status.get("trace").is_some() && status["generation"].is_number(), "{status}");
    assert_eq!(*partition, wharf::kafka::partitioner::partition_for_key(b"status-connector-src", 5));
    let _ = fs::remove_file(&input);
}

#[test]
fn kafka_connects_file_configs_run_unchanged_where_the_operator_allows_their_folders() {
    let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let d = Distributed::new(&[
        ("wasm.ceiling.fs.read", inside.path().display().to_string()),
        ("wasm.ceiling.fs.write", inside.path().display().to_string()),
    ]);
    let (input, output, topic) = (inside.path().join("in.txt"), inside.path().join("out.txt"), unique("connect-cfg"));
    write_lines(&input, 0..100);
    let worker = d.start();
    // Kafka Connect's own configs, word for word: no wasm.* key.
    let source = json!({"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": input.display().to_string(), "topic": topic, "tasks.max": "1"});
    let sink = json!({"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "file": output.display().to_string(), "topics": topic, "tasks.max": "1"});
    for (name, config) in [("src", &source), (unique("sink").as_str(), &sink)] {
        let body = json!({"name": name, "config": config}).to_string();
        let (code, answer, _) = worker.call("POST", "/connectors", Some(&body));
        assert_eq!(code, 201, "{name}: {answer}");
    }
    worker.wait("every line in the output", Duration::from_secs(60), || (count_lines(&output) >= 100).then_some(()));
    assert_eq!(read_lines(&output), lines(0..100));

    // Outside the operator's folders the create is refused, naming the key and the setting.
    let elsewhere = outside.path().join("in.txt");
    write_lines(&elsewhere, 0..1);
    let mut refused = source.clone();
    refused["file"] = json!(elsewhere.display().to_string());
    let (code, answer, _) =
        worker.call("POST", "/connectors", Some(&json!({"name": "far", "config": refused}).to_string()));
    assert_eq!(code, 400, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("file={}", elsewhere.display()))
            && message.contains(&format!(
                "is outside what this worker allows: wasm.ceiling.fs.read is {}",
                inside.path().display()
            ))
            && message.contains("the plugin declares that \"file\" names a file to read"),
        "{message}"
    );
}

#[test]
fn a_plugin_built_for_the_first_contract_version_still_runs() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let topic = unique("legacy");
    let body = json!({"name": "old", "config": {"connector.class": "test-legacy", "topic": topic, "count": "25"}});
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    worker.wait("the legacy plugin's records", Duration::from_secs(60), || (topic_count(&topic) >= 25).then_some(()));
    let values: Vec<Vec<u8>> = topic_values(&topic);
    assert!(values.iter().any(|v| v == b"legacy-24"), "{} records", values.len());
    assert_eq!(worker.task_state_now("old", 0).0, "RUNNING");
}

/// Automatic restarts on a distributed worker: the worker's `wharf.auto.restart.enable` turns them
/// on, the count of restarts in a row is written into the task's record in the status topic, and
/// the worker that takes the task over goes on from that count.
#[test]
fn a_tasks_count_of_automatic_restarts_lives_in_the_status_topic_and_moves_with_it() {
    let mut settings = quick_failover(1000);
    settings.push(("wharf.auto.restart.enable", "true".to_string()));
    let d = Distributed::new(&settings);
    let first = d.start();
    let config = json!({
        "connector.class": "test-trapper",
        "topic": unique("never"),
        "auto.restart.max.restarts": "1",
        "auto.restart.backoff.unit.ms": "200",
    });
    let (code, body, _) =
        first.call("POST", "/connectors", Some(&json!({"name": "trap", "config": config}).to_string()));
    assert_eq!(code, 201, "{body}");
    first.wait("task trap-0 FAILED after one automatic restart", Duration::from_secs(60), || {
        first.task_state("trap", 0).filter(|(state, task)| state == "FAILED" && task["auto_restarts"] == 1)
    });
    let record = topic_records(&d.topics[2])
        .into_iter()
        .rev()
        .find(|(_, key, _)| key == "status-task-trap-0")
        .and_then(|(_, _, value)| value)
        .unwrap_or_default();
    let record: Value = serde_json::from_str(&record).unwrap_or_default();
    assert_eq!((&record["state"], &record["auto_restarts"]), (&json!("FAILED"), &json!(1)), "{record}");
    drop(first);

    // The next worker starts the task it takes over; failing again, it is past the maximum.
    let next = d.again(&settings);
    let second = next.start();
    second.wait("the next worker to give the task up", Duration::from_secs(90), || {
        second
            .log()
            .contains("task trap-0 stays FAILED: it was restarted automatically 1 time(s) in a row")
            .then_some(())
    });
    assert!(
        second.log().contains("[trap|task-0] wharf::worker: task running"),
        "the task did not run on the next worker"
    );
    assert!(!second.log().contains("restarting it automatically"), "the count did not move with the task");
    let (state, task) = second.task_state_now("trap", 0);
    assert_eq!((state.as_str(), &task["auto_restarts"]), ("FAILED", &json!(1)), "{task}");
}
