//! The parts of Kafka Connect 4.1's REST API that scripts and client libraries lean on, on a
//! standalone worker and real Kafka: health, one task's status, the repeated `expand`, a create's
//! `initial_state`, a config patch, the answer to a stop, and the plugin version in statuses.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

fn datagen(topic: &str) -> Value {
    json!({"connector.class": "datagen", "topic": topic, "rate": "5", "tasks.max": "2"})
}

/// `GET /connectors/{name}/topics`'s answer: `{"<name>": {"topics": [...]}}`.
fn topics_of(connector: &str, topics: Value) -> Value {
    Value::Object(serde_json::Map::from_iter([(connector.to_string(), json!({"topics": topics}))]))
}

fn create(worker: &Worker, body: Value) -> (u16, Value) {
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    (code, answer)
}

#[test]
fn health_task_status_expand_initial_state_patch_and_stop_answer_as_connect_does() {
    let worker = Standalone::new(&[]).start();

    let (code, health, _) = worker.call("GET", "/health", None);
    assert_eq!(code, 200, "{health}");
    assert_eq!(
        health,
        json!({"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."})
    );

    // A connector created RUNNING (the default) reports its plugin's version for itself and its tasks.
    let (code, answer) = create(&worker, json!({"name": "gen", "config": datagen(&unique("surface"))}));
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("gen", 1, "RUNNING");
    let status = worker.get("/connectors/gen/status").unwrap();
    let version = status["connector"]["version"].as_str().unwrap_or_default().to_string();
    assert!(!version.is_empty(), "{status}");
    assert_eq!(status["tasks"][1]["version"], json!(version), "{status}");

    // One task's status: Connect's TaskState.
    let (code, task, _) = worker.call("GET", "/connectors/gen/tasks/1/status", None);
    assert_eq!(code, 200, "{task}");
    assert_eq!(task["id"], 1);
    assert_eq!(task["state"], "RUNNING");
    assert_eq!(task["worker_id"], status["tasks"][1]["worker_id"]);
    assert_eq!(task["version"], json!(version));
    for missing in
        ["/connectors/gen/tasks/7/status", "/connectors/gen/tasks/x/status", "/connectors/nope/tasks/0/status"]
    {
        let (code, answer, _) = worker.call("GET", missing, None);
        assert_eq!(code, 404, "{missing}: {answer}");
        assert!(answer["message"].as_str().unwrap_or_default().starts_with("No status found for task "), "{answer}");
    }

    // initial_state: PAUSED and STOPPED connectors start so; an unknown state is refused.
    let (code, answer) =
        create(&worker, json!({"name": "paused", "config": datagen(&unique("surface")), "initial_state": "PAUSED"}));
    assert_eq!(code, 201, "{answer}");
    let (code, answer) =
        create(&worker, json!({"name": "stopped", "config": datagen(&unique("surface")), "initial_state": "stopped"}));
    assert_eq!(code, 201, "{answer}");
    worker.wait("the paused connector's status", Duration::from_secs(30), || {
        let status = worker.get("/connectors/paused/status")?;
        (status["connector"]["state"] == "PAUSED").then_some(())
    });
    worker.wait("the stopped connector's status", Duration::from_secs(30), || {
        let status = worker.get("/connectors/stopped/status")?;
        (status["connector"]["state"] == "STOPPED" && status["tasks"] == json!([])).then_some(())
    });
    let topic = worker.get("/connectors/paused/config").unwrap()["topic"].as_str().unwrap_or_default().to_string();
    assert_eq!(topic_count(&topic), 0, "a connector created PAUSED produced records");
    let (code, answer) =
        create(&worker, json!({"name": "odd", "config": datagen(&unique("surface")), "initial_state": "SLEEPING"}));
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("initial_state"), "{answer}");

    // The documented, repeated expand, and the comma-separated one, answer alike.
    let repeated = worker.get("/connectors?expand=status&expand=info").unwrap();
    let joined = worker.get("/connectors?expand=info,status").unwrap();
    for answer in [&repeated, &joined] {
        for name in ["gen", "paused", "stopped"] {
            assert_eq!(answer[name]["info"]["name"], name, "{answer}");
            assert_eq!(answer[name]["status"]["name"], name, "{answer}");
        }
    }
    let only_info = worker.get("/connectors?expand=info").unwrap();
    assert!(only_info["gen"].get("status").is_none(), "{only_info}");
    assert_eq!(worker.get("/connectors?expand=nothing-known").unwrap()["gen"], json!({}));

    // PATCH: given keys change, a null removes one, the rest stays; the answer is ConnectorInfo.
    let patch = json!({"rate": "7", "tasks.max": null});
    let (code, info, _) = worker.call("PATCH", "/connectors/gen/config", Some(&patch.to_string()));
    assert_eq!(code, 200, "{info}");
    assert_eq!(info["name"], "gen");
    assert_eq!(info["config"]["rate"], "7", "{info}");
    assert!(info["config"].get("tasks.max").is_none(), "{info}");
    assert_eq!(info["config"]["connector.class"], "datagen", "{info}");
    worker.wait("one task after tasks.max went back to its default", Duration::from_secs(30), || {
        let tasks = worker.get("/connectors/gen/tasks")?;
        (tasks.as_array()?.len() == 1).then_some(())
    });
    let (code, answer, _) = worker.call("PATCH", "/connectors/nope/config", Some(r#"{"rate": "1"}"#));
    assert_eq!(code, 404, "{answer}");
    let (code, answer, _) = worker.call("PATCH", "/connectors/gen/config", Some(r#"{"tasks.max": "0"}"#));
    assert_eq!(code, 400, "{answer}");
    assert_eq!(worker.get("/connectors/gen/config").unwrap()["rate"], "7", "a refused patch changed the config");

    // A stop answers 204, as Connect's does; pause and resume 202.
    assert_eq!(worker.call("PUT", "/connectors/gen/stop", None).0, 204);
    assert_eq!(worker.call("PUT", "/connectors/paused/resume", None).0, 202);
    assert_eq!(worker.call("PUT", "/connectors/nope/stop", None).0, 404);
}

/// A connector's own client settings (`consumer.override.*`, …) reach its Kafka clients, in
/// the Java client's names, and a worker whose policy forbids them refuses the connector.
#[test]
fn connector_client_overrides_apply_and_the_workers_policy_refuses_what_it_forbids() {
    let w = Standalone::new(&[]);
    let worker = w.start();
    let topic = unique("overridden");
    create_topic(&topic, 1, "delete");
    for i in 0..5 {
        produce(&topic, 0, "k", format!("before-{i}").as_bytes());
    }
    // The sink starts at the end of the topic (Wharf's own default is its start): the records
    // written before it are not read.
    let output = w.path("out.txt");
    let sink = json!({"name": "late-sink", "config": {
        "connector.class": "file-sink", "topics": topic, "file": output.display().to_string(),
        "wasm.fs.write": w.dir.path().display().to_string(),
        "consumer.override.auto.offset.reset": "latest",
        "consumer.override.fetch.max.wait.ms": "100"}});
    let (code, answer) = create(&worker, sink);
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("late-sink", 0, "RUNNING");
    let mut sent = 0;
    worker.wait("a record written after the sink started", Duration::from_secs(60), || {
        produce(&topic, 0, "k", format!("after-{sent}").as_bytes());
        sent += 1;
        std::thread::sleep(Duration::from_millis(300));
        (count_lines(&output) > 0).then_some(())
    });
    let lines = read_lines(&output);
    assert!(lines.iter().all(|l| l.starts_with("after-")), "records from before the sink were read: {lines:?}");

    let strict = Standalone::new(&[("connector.client.config.override.policy", "None".into())]).start();
    let (code, answer) = create(
        &strict,
        json!({"name": "gen", "config": {"connector.class": "datagen", "topic": unique("strict"), "rate": "5",
            "producer.override.linger.ms": "50"}}),
    );
    assert_eq!(code, 400, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"producer.override.linger.ms\" is not allowed")
            && message.contains("connector.client.config.override.policy=None"),
        "{answer}"
    );
    // A Java-only setting is refused naming the key as written.
    let (code, answer) = create(
        &worker,
        json!({"name": "blocky", "config": {"connector.class": "datagen", "topic": unique("blocky"), "rate": "5",
            "producer.override.max.block.ms": "1000"}}),
    );
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("producer.override.max.block.ms"), "{answer}");
}

/// `/admin/loggers`: a worker's levels are read and changed while it runs, on this worker (the
/// loggers whose level changed are answered) or on every worker of the cluster (through the
/// config topic), and the log follows.
#[test]
fn log_levels_change_while_the_worker_runs_on_one_worker_or_the_whole_cluster() {
    let w = Distributed::new(&[]);
    let worker = w.start();
    // The suite starts workers with RUST_LOG=info,wharf=debug.
    let (code, all, _) = worker.call("GET", "/admin/loggers", None);
    assert_eq!(code, 200, "{all}");
    assert_eq!((all["root"]["level"].clone(), all["wharf"]["level"].clone()), (json!("INFO"), json!("DEBUG")), "{all}");

    let (code, changed, _) = worker.call("PUT", "/admin/loggers/wharf", Some(r#"{"level": "warn"}"#));
    assert_eq!((code, changed), (200, json!(["wharf"])));
    let (_, below, _) = worker.call("GET", "/admin/loggers/wharf.worker", None);
    assert_eq!(below["level"], "WARN", "a module below wharf takes its level: {below}");
    let (_, set, _) = worker.call("GET", "/admin/loggers/wharf", None);
    assert!(set["last_modified"].as_i64().is_some(), "{set}");
    let quiet_from = worker.log().len();
    let (code, answer) = create(&worker, json!({"name": "quiet", "config": datagen(&unique("quiet"))}));
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("quiet", 0, "RUNNING");
    let log = worker.log();
    let chatty: Vec<&str> = log[quiet_from..]
        .lines()
        .filter(|l| l.contains("wharf::") && (l.contains("INFO") || l.contains("DEBUG")))
        .collect();
    assert!(chatty.is_empty(), "wharf logged below WARN after it was set to WARN:\n{}", chatty.join("\n"));

    let (code, answer, _) = worker.call("PUT", "/admin/loggers/wharf?scope=cluster", Some(r#"{"level": "DEBUG"}"#));
    assert_eq!(code, 204, "{answer}");
    worker.wait("the cluster-wide level to reach this worker", Duration::from_secs(30), || {
        (worker.get("/admin/loggers/wharf")?["level"] == "DEBUG").then_some(())
    });
    let (code, answer, _) = worker.call("PUT", "/admin/loggers/wharf", Some(r#"{"level": "LOUD"}"#));
    assert_eq!((code, answer["message"].clone()), (404, json!("invalid log level 'LOUD'.")));
    let (code, _, _) = worker.call("GET", "/admin/loggers/org.example.Nothing", None);
    assert_eq!(code, 404);
}

/// Topic tracking: the topics a connector's tasks write to or read from are listed, a reset
/// forgets them until they are used again, a deleted connector's are forgotten, and a worker
/// with tracking off refuses both calls.
#[test]
fn the_topics_a_connector_uses_are_tracked_and_reset() {
    let w = Distributed::new(&[]);
    let worker = w.start();
    let topic = unique("tracked");
    // Names of their own: a sink's consumer group is connect-<name>, shared with any other sink
    // of that name on the broker.
    let (gen, sink) = (unique("gen"), unique("sink"));
    let (code, answer) = create(&worker, json!({"name": gen, "config": datagen(&topic)}));
    assert_eq!(code, 201, "{answer}");
    let output = w.path("out.txt");
    let sink_body = json!({"name": sink, "config": {"connector.class": "file-sink", "topics": topic,
        "file": output.display().to_string(), "wasm.fs.write": w.dir.path().display().to_string()}});
    let (code, answer) = create(&worker, sink_body);
    assert_eq!(code, 201, "{answer}");
    for connector in [gen.as_str(), sink.as_str()] {
        worker.wait(&format!("{connector}'s topic to be tracked"), Duration::from_secs(60), || {
            let topics = worker.get(&format!("/connectors/{connector}/topics"))?;
            (topics == topics_of(connector, json!([topic]))).then_some(())
        });
    }
    // With its source stopped the sink reads nothing more, so a reset leaves it with none; once
    // the source runs again, the sink's running task records its topic again.
    let (code, _, _) = worker.call("PUT", &format!("/connectors/{gen}/stop"), None);
    assert_eq!(code, 204);
    worker.wait("the source to stop", Duration::from_secs(30), || {
        let status = worker.get(&format!("/connectors/{gen}/status"))?;
        (status["connector"]["state"] == "STOPPED" && status["tasks"] == json!([])).then_some(())
    });
    // What the source wrote last reaches the sink first.
    let written = topic_count(&topic);
    worker.wait("the sink to read everything", Duration::from_secs(30), || {
        (count_lines(&output) as i64 >= written).then_some(())
    });
    let (code, _, _) = worker.call("PUT", &format!("/connectors/{sink}/topics/reset"), None);
    assert_eq!(code, 202);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(worker.get(&format!("/connectors/{sink}/topics")).unwrap(), topics_of(&sink, json!([])));
    let (code, _, _) = worker.call("PUT", &format!("/connectors/{gen}/resume"), None);
    assert_eq!(code, 202);
    worker.wait("the sink's topic to be tracked again", Duration::from_secs(30), || {
        (worker.get(&format!("/connectors/{sink}/topics"))? == topics_of(&sink, json!([topic]))).then_some(())
    });
    // Deleted, the source's topics are forgotten (a connector that does not exist has none).
    let (code, _, _) = worker.call("DELETE", &format!("/connectors/{gen}"), None);
    assert_eq!(code, 204);
    worker.wait("the deleted connector's topics to be forgotten", Duration::from_secs(30), || {
        (worker.get(&format!("/connectors/{gen}/topics"))? == topics_of(&gen, json!([]))).then_some(())
    });

    let off = Distributed::new(&[("topic.tracking.enable", "false".into())]).start();
    let (code, answer, _) = off.call("GET", "/connectors/gen/topics", None);
    assert_eq!((code, answer["message"].clone()), (403, json!("Topic tracking is disabled.")));
    let no_reset = Distributed::new(&[("topic.tracking.allow.reset", "false".into())]).start();
    let (code, answer, _) = no_reset.call("PUT", "/connectors/gen/topics/reset", None);
    assert_eq!((code, answer["message"].clone()), (403, json!("Topic tracking reset is disabled.")));
}

/// `topics.regex`: a sink reads every topic whose whole name matches, one created after it
/// started included, and no other; its committed offsets cover the matching topics.
#[test]
fn a_sink_of_topics_regex_reads_every_matching_topic_and_one_created_later() {
    let w = Standalone::new(&[]);
    let worker = w.start();
    let prefix = unique("rx");
    let (first, second, other) = (format!("{prefix}-a"), format!("{prefix}-b"), format!("{prefix}x-c"));
    for topic in [&first, &other] {
        create_topic(topic, 1, "delete");
        produce(topic, 0, "k", format!("from {topic}").as_bytes());
    }
    let output = w.path("out.txt");
    let sink = json!({"name": "rx-sink", "config": {"connector.class": "file-sink",
        "topics.regex": format!("{prefix}-.*"), "file": output.display().to_string(),
        "wasm.fs.write": w.dir.path().display().to_string()}});
    let (code, answer) = create(&worker, sink);
    assert_eq!(code, 201, "{answer}");
    worker.wait("the matching topic's record", Duration::from_secs(60), || (count_lines(&output) >= 1).then_some(()));
    create_topic(&second, 1, "delete");
    produce(&second, 0, "k", format!("from {second}").as_bytes());
    worker.wait("the record of the topic created later", Duration::from_secs(60), || {
        (count_lines(&output) >= 2).then_some(())
    });
    std::thread::sleep(Duration::from_secs(1));
    let mut lines = read_lines(&output);
    lines.sort();
    assert_eq!(lines, [format!("from {first}"), format!("from {second}")]);
    worker.wait("offsets committed for both topics", Duration::from_secs(30), || {
        let offsets = worker.get("/connectors/rx-sink/offsets")?;
        let topics: Vec<&str> =
            offsets["offsets"].as_array()?.iter().filter_map(|o| o["partition"]["kafka_topic"].as_str()).collect();
        (topics.contains(&first.as_str()) && topics.contains(&second.as_str())).then_some(())
    });
}

/// `topic.creation.*` (KIP-158): a source's topics are created before their first record with
/// the settings of the first group that takes them, or the default group's.
#[test]
fn a_sources_topics_are_created_with_its_topic_creation_groups() {
    let w = Standalone::new(&[]);
    let worker = w.start();
    let (plain, compacted) = (unique("created"), unique("state-created"));
    for (name, topic) in [("plain-gen", &plain), ("state-gen", &compacted)] {
        // Keyed: a compacted topic refuses records without a key.
        let config = json!({"connector.class": "datagen", "topic": topic, "rate": "5", "key.size": "8",
            "topic.creation.groups": "state",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "3",
            "topic.creation.state.include": "state-.*",
            "topic.creation.state.partitions": "2",
            "topic.creation.state.cleanup.policy": "compact"});
        let (code, answer) = create(&worker, json!({"name": name, "config": config}));
        assert_eq!(code, 201, "{answer}");
    }
    for topic in [&plain, &compacted] {
        worker.wait(&format!("records in {topic}"), Duration::from_secs(60), || (topic_count(topic) > 0).then_some(()));
    }
    assert_eq!(topic_settings(&plain), (3, "delete".to_string()));
    assert_eq!(topic_settings(&compacted), (2, "compact".to_string()));
    // Half a group's settings is refused on the key that is missing.
    let (code, answer) = create(
        &worker,
        json!({"name": "half", "config": {"connector.class": "datagen", "topic": unique("half"), "rate": "5",
            "topic.creation.default.replication.factor": "1"}}),
    );
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("topic.creation.default.partitions"), "{answer}");
}

/// The samples of a scrape whose name is `name`: each line's labels and value.
fn samples(text: &str, name: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, labels) = series.split_once('{').map_or((series, ""), |(m, rest)| (m, rest));
            (metric == name).then(|| (labels.trim_end_matches('}').to_string(), value.to_string()))
        })
        .collect()
}

/// `GET /metrics`: the statuses of the connectors and tasks this worker runs, under the names
/// Strimzi's JMX exporter rules give Kafka Connect's, in Prometheus's text format; a deleted
/// connector's series go with it.
#[test]
fn metrics_show_the_workers_connectors_and_tasks_under_strimzis_names() {
    let worker = Standalone::new(&[]).start();
    let topic = unique("metrics");
    let (code, _) = create(&worker, json!({"name": "gen", "config": datagen(&topic)}));
    assert_eq!(code, 201);
    // A sink whose converter fails on every record (datagen's bytes are no JSON envelope), and
    // skips them.
    let out = tempfile::tempdir().unwrap();
    let (code, _) = create(
        &worker,
        json!({"name": "skipper", "config": {"connector.class": "file-sink", "topics": topic,
            "file": out.path().join("out.txt").display().to_string(), "wasm.fs.write": out.path().display().to_string(),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter", "errors.tolerance": "all"}}),
    );
    assert_eq!(code, 201);
    let (code, _) = create(
        &worker,
        json!({"name": "trap", "config": {"connector.class": "test-trapper", "topic": unique("trap")}}),
    );
    assert_eq!(code, 201);
    worker.wait_task_state("gen", 1, "RUNNING");
    worker.wait_task_state("trap", 0, "FAILED");

    let (code, body, headers) = worker.call("GET", "/metrics", None);
    assert_eq!(code, 200);
    let content_type = headers.iter().find(|(k, _)| k == "content-type").map(|(_, v)| v.as_str());
    assert_eq!(content_type, Some("text/plain; version=0.0.4; charset=utf-8"));
    let text = body.as_str().unwrap_or_default().to_string();
    // Every family says its help and type before its samples.
    for family in
        ["kafka_connect_connector_status", "kafka_connect_connector_task_status", "kafka_connect_worker_task_count"]
    {
        let help = text.find(&format!("# HELP {family} ")).unwrap_or(usize::MAX);
        let kind = text.find(&format!("# TYPE {family} gauge\n")).unwrap_or(usize::MAX);
        let first = text.find(&format!("\n{family}")).unwrap_or(usize::MAX);
        assert!(help < kind && kind < first && first != usize::MAX, "{family}:\n{text}");
    }
    let status = samples(&text, "kafka_connect_connector_status");
    assert!(status.contains(&(r#"connector="gen",status="running""#.into(), "1".into())), "{text}");
    assert!(status.contains(&(r#"connector="trap",status="running""#.into(), "1".into())), "{text}");
    let kinds = samples(&text, "kafka_connect_connector_connector_type");
    assert!(kinds.contains(&(r#"connector="gen",connector_type="source""#.into(), "1".into())), "{text}");
    let classes = samples(&text, "kafka_connect_connector_connector_class");
    assert!(classes.contains(&(r#"connector="trap",connector_class="test-trapper""#.into(), "1".into())), "{text}");
    let tasks = samples(&text, "kafka_connect_connector_task_status");
    for expected in [
        r#"connector="gen",task="0",status="running""#,
        r#"connector="gen",task="1",status="running""#,
        r#"connector="trap",task="0",status="failed""#,
    ] {
        assert!(tasks.contains(&(expected.into(), "1".into())), "{expected}:\n{text}");
    }
    assert_eq!(samples(&text, "kafka_connect_worker_connector_count"), [(String::new(), "3".to_string())]);
    assert_eq!(samples(&text, "kafka_connect_worker_task_count"), [(String::new(), "4".to_string())]);
    let counts = |family: &str| -> Vec<(String, String)> {
        samples(&text, family).into_iter().filter(|(labels, _)| !labels.contains("skipper")).collect()
    };
    assert_eq!(
        counts("kafka_connect_worker_connector_failed_task_count"),
        [(r#"connector="gen""#.to_string(), "0".to_string()), (r#"connector="trap""#.to_string(), "1".to_string())]
    );
    assert_eq!(
        counts("kafka_connect_worker_connector_running_task_count"),
        [(r#"connector="gen""#.to_string(), "2".to_string()), (r#"connector="trap""#.to_string(), "0".to_string())]
    );
    assert!(text.contains("# TYPE kafka_connect_source_task_source_record_poll_total counter\n"), "{text}");

    // Each task's records: the source's polled and acknowledged, the sink's read and skipped.
    let value = |text: &str, family: &str, labels: &str| -> f64 {
        samples(text, family).into_iter().find(|(l, _)| l == labels).map_or(-1.0, |(_, v)| v.parse().unwrap_or(-1.0))
    };
    // A scrape reads one series after another while the tasks count on: each figure is waited
    // for, and the counts that must agree are compared once the source is paused and the sink
    // has caught up.
    let gen0 = r#"connector="gen",task="0""#;
    let sink0 = r#"connector="skipper",task="0""#;
    let text = worker.wait("records counted on both sides", Duration::from_secs(60), || {
        let (_, body, _) = worker.call("GET", "/metrics", None);
        let text = body.as_str().unwrap_or_default().to_string();
        let positive = [
            ("kafka_connect_task_error_total_records_skipped", sink0),
            ("kafka_connect_sink_task_sink_record_read_total", sink0),
            ("kafka_connect_source_task_source_record_write_total", gen0),
            ("kafka_connect_source_task_source_record_poll_total", gen0),
            ("kafka_connect_source_task_source_record_poll_rate", gen0),
        ];
        positive.iter().all(|(family, labels)| value(&text, family, labels) > 0.0).then_some(text)
    });
    assert_eq!(value(&text, "kafka_connect_sink_task_sink_record_send_total", sink0), 0.0, "{text}");
    assert_eq!(value(&text, "kafka_connect_task_error_total_records_skipped", gen0), 0.0, "{text}");
    // Wharf's own: the records that crossed the sandbox's boundary (counted as the plugin's poll
    // returns, before the poll count, so at least as many) and their bytes; none reached the
    // sink's put.
    let crossed = value(&text, "wharf_task_plugin_records_total", gen0);
    assert!(crossed >= value(&text, "kafka_connect_source_task_source_record_poll_total", gen0), "{text}");
    assert!(value(&text, "wharf_task_plugin_bytes_total", gen0) > crossed, "{text}");
    assert_eq!(value(&text, "wharf_task_plugin_records_total", sink0), 0.0, "{text}");
    let (code, _, _) = worker.call("PUT", "/connectors/gen/pause", None);
    assert_eq!(code, 202);
    worker.wait_task_state("gen", 0, "PAUSED");
    worker.wait_task_state("gen", 1, "PAUSED");
    // Every record the sink read, its converter failed on, and it skipped.
    let text = worker.wait("the sink's counts to agree", Duration::from_secs(60), || {
        let (_, body, _) = worker.call("GET", "/metrics", None);
        let text = body.as_str().unwrap_or_default().to_string();
        let read = value(&text, "kafka_connect_sink_task_sink_record_read_total", sink0);
        let failed = value(&text, "kafka_connect_task_error_total_record_failures", sink0);
        let skipped = value(&text, "kafka_connect_task_error_total_records_skipped", sink0);
        (read > 0.0 && read == failed && failed == skipped).then_some(text)
    });
    assert_eq!(value(&text, "kafka_connect_sink_task_sink_record_send_total", sink0), 0.0, "{text}");
    // The clients' bytes, from librdkafka's statistics (every 5 s): the sink's consumer read some.
    worker.wait("the sink consumer's bytes", Duration::from_secs(60), || {
        let (_, body, _) = worker.call("GET", "/metrics", None);
        let text = body.as_str().unwrap_or_default().to_string();
        let read: f64 = samples(&text, "kafka_consumer_incoming_byte_total")
            .iter()
            .filter(|(labels, _)| labels.contains("skipper"))
            .filter_map(|(_, v)| v.parse::<f64>().ok())
            .sum();
        // Wharf's own figures of the same consumer: its round trips to the broker.
        let round_trip = samples(&text, "wharf_client_round_trip_avg_seconds")
            .iter()
            .filter(|(labels, _)| labels.contains("skipper") && labels.contains(r#"client="consumer""#))
            .filter_map(|(_, v)| v.parse::<f64>().ok())
            .fold(0.0, f64::max);
        (read > 0.0 && round_trip > 0.0).then_some(())
    });
    let version = samples(&text, "kafka_connect_version");
    assert_eq!(version.len(), 1, "{text}");
    assert!(version[0].0.contains(r#"version="4.1"#), "{text}");
    // Standalone: no group, so no coordinator.
    assert!(samples(&text, "kafka_connect_coordinator_assigned_tasks").is_empty(), "{text}");

    let (code, _, _) = worker.call("DELETE", "/connectors/trap", None);
    assert_eq!(code, 204);
    worker.wait("the deleted connector's series to go", Duration::from_secs(30), || {
        let (_, body, _) = worker.call("GET", "/metrics", None);
        let text = body.as_str().unwrap_or_default().to_string();
        (!text.contains(r#"connector="trap""#)).then_some(())
    });
}
