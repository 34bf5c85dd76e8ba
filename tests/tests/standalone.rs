//! A standalone worker on the real broker: files in, Kafka in between, files out.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wharf_e2e::*;

/// Fixed-width lines, so a byte position tells how many lines came before it.
fn line(i: usize) -> String {
    format!("line-{i:09}")
}
const LINE_BYTES: usize = 15;

fn write_lines(path: &Path, range: std::ops::Range<usize>) {
    let mut file = OpenOptions::new().create(true).append(true).open(path).unwrap();
    let text: String = range.map(|i| line(i) + "\n").collect();
    file.write_all(text.as_bytes()).unwrap();
}

fn file_source(w: &mut Standalone, name: &str, input: &Path, topic: &str) {
    w.add_connector(
        name,
        &[
            ("connector.class", "file-source".into()),
            ("file", input.display().to_string()),
            ("topic", topic.into()),
            ("wasm.fs.read", w.dir.path().display().to_string()),
        ],
    );
}

fn file_sink(w: &mut Standalone, name: &str, topic: &str, output: &Path) {
    w.add_connector(
        name,
        &[
            ("connector.class", "file-sink".into()),
            ("topics", topic.into()),
            ("file", output.display().to_string()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
        ],
    );
}

#[test]
fn a_100k_line_file_arrives_identical_through_kafka() {
    let mut w = Standalone::new(&[]);
    let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("round-trip"));
    write_lines(&input, 0..100_000);
    file_source(&mut w, "src", &input, &topic);
    file_sink(&mut w, &unique("sink"), &topic, &output);
    let started = Instant::now();
    let worker = w.start();
    worker.wait("100,000 lines in the output file", Duration::from_secs(180), || {
        (count_lines(&output) >= 100_000).then_some(())
    });
    let elapsed = started.elapsed();
    eprintln!(
        "round trip of 100,000 lines: {:.2} s from worker start, {:.0} lines/s",
        elapsed.as_secs_f64(),
        100_000.0 / elapsed.as_secs_f64()
    );
    assert_eq!(fs::read(&output).unwrap(), fs::read(&input).unwrap(), "output differs from input");
    for connector in worker.get("/connectors").unwrap().as_array().unwrap() {
        let connector = connector.as_str().unwrap();
        let status = worker.get(&format!("/connectors/{connector}/status")).unwrap();
        assert_eq!(status["connector"]["state"], "RUNNING", "{status}");
        assert_eq!(status["tasks"][0]["state"], "RUNNING", "{status}");
    }
}

#[test]
fn kafkas_stock_converter_settings_carry_lines_through_kafka_as_json_strings() {
    // The converter lines of Kafka's config/connect-standalone.properties.
    let json = "org.apache.kafka.connect.json.JsonConverter".to_string();
    let mut w = Standalone::new(&[
        ("key.converter", json.clone()),
        ("value.converter", json),
        ("key.converter.schemas.enable", "true".into()),
        ("value.converter.schemas.enable", "true".into()),
    ]);
    let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("stock-converters"));
    write_lines(&input, 0..100);
    file_source(&mut w, "src", &input, &topic);
    file_sink(&mut w, &unique("sink"), &topic, &output);
    let worker = w.start();
    worker
        .wait("100 lines in the output file", Duration::from_secs(60), || (count_lines(&output) >= 100).then_some(()));
    assert_eq!(fs::read(&output).unwrap(), fs::read(&input).unwrap(), "output differs from input");
    // Each line is a string with a string schema, as FileStreamSource makes it.
    let first = topic_values(&topic).first().map(|v| String::from_utf8_lossy(v).into_owned());
    assert_eq!(first, Some(format!(r#"{{"schema":{{"type":"string","optional":false}},"payload":"{}"}}"#, line(0))));
}

#[test]
fn an_unknown_converter_is_refused_with_the_ones_there_are() {
    let w = Standalone::new(&[("value.converter", "io.confluent.connect.avro.AvroConverter".into())]);
    let (status, log) = w.run_to_failure();
    assert!(!status.success());
    assert!(
        log.contains("value.converter=io.confluent.connect.avro.AvroConverter")
            && log.contains("org.apache.kafka.connect.json.JsonConverter"),
        "{log}"
    );
}

#[test]
fn lines_appended_while_running_arrive_too() {
    let mut w = Standalone::new(&[]);
    let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("append"));
    write_lines(&input, 0..10);
    file_source(&mut w, "src", &input, &topic);
    file_sink(&mut w, &unique("sink"), &topic, &output);
    let worker = w.start();
    worker.wait("the first 10 lines", Duration::from_secs(60), || (count_lines(&output) >= 10).then_some(()));
    write_lines(&input, 10..25);
    worker.wait("the 15 appended lines", Duration::from_secs(60), || (count_lines(&output) >= 25).then_some(()));
    assert_eq!(read_lines(&output), (0..25).map(line).collect::<Vec<_>>());
}

#[test]
fn kill_9_mid_stream_loses_no_line_and_duplicates_only_the_unflushed_interval() {
    let mut w = Standalone::new(&[("offset.flush.interval.ms", "300".into())]);
    let (input, topic) = (w.path("in.txt"), unique("kill9"));
    fs::write(&input, "").unwrap();
    file_source(&mut w, "src", &input, &topic);
    let offsets_file = w.worker_dir.path().join("offsets.json");

    // A writer keeps appending for the whole test, so the kill lands mid-stream.
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (input, written, stop) = (input.clone(), written.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let from = written.load(Ordering::Relaxed);
                write_lines(&input, from..from + 200);
                written.store(from + 200, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };

    let mut worker = w.start();
    worker.wait("some committed offsets and records", Duration::from_secs(60), || {
        (committed_position(&offsets_file) > 0 && topic_count(&topic) > 20_000).then_some(())
    });
    worker.kill_9();
    let in_topic_at_kill = topic_count(&topic);
    let committed_lines = committed_position(&offsets_file) / LINE_BYTES as i64;
    assert!(committed_lines <= in_topic_at_kill, "offsets ran ahead of Kafka: {committed_lines} > {in_topic_at_kill}");

    let restarted = w.start();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let total = written.load(Ordering::Relaxed);
    // Offsets are stored only after Kafka acknowledged the records before them, so once the
    // whole file is committed every line is in the topic.
    let end = (total * LINE_BYTES) as i64;
    restarted.wait(&format!("the offset of all {total} lines committed"), Duration::from_secs(120), || {
        (committed_position(&offsets_file) >= end).then_some(())
    });

    let values = topic_values(&topic);
    let mut seen = std::collections::HashSet::new();
    let mut duplicates = 0;
    for value in &values {
        if !seen.insert(value.clone()) {
            duplicates += 1;
        }
    }
    let missing: Vec<String> = (0..total).map(line).filter(|l| !seen.contains(l.as_bytes())).take(5).collect();
    assert!(missing.is_empty(), "lines lost across kill -9, e.g. {missing:?}");
    let bound = in_topic_at_kill - committed_lines;
    eprintln!(
        "kill -9: {total} lines, {duplicates} duplicates (bound {bound}: delivered but not yet committed at the kill)"
    );
    assert!(duplicates as i64 <= bound, "{duplicates} duplicates exceed the unflushed interval's {bound}");
}

/// The byte position stored for the test's file source, or 0.
fn committed_position(offsets_file: &Path) -> i64 {
    let Ok(text) = fs::read_to_string(offsets_file) else {
        return 0;
    };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
        return 0;
    };
    doc["offsets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["key"][0] == "src")
        .filter_map(|e| e["value"]["position"].as_i64())
        .max()
        .unwrap_or(0)
}

#[test]
fn sigterm_stops_gracefully_and_a_restart_duplicates_nothing() {
    let mut w = Standalone::new(&[("offset.flush.interval.ms", "60000".into())]);
    let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("graceful"));
    write_lines(&input, 0..1000);
    file_source(&mut w, "src", &input, &topic);
    file_sink(&mut w, &unique("sink"), &topic, &output);
    let mut worker = w.start();
    worker.wait("1000 lines out", Duration::from_secs(60), || (count_lines(&output) >= 1000).then_some(()));
    let started = Instant::now();
    let status = worker.terminate();
    assert!(status.success(), "exit status {status:?}:\n{}", worker.log());
    assert!(
        started.elapsed() < Duration::from_secs(5) + Duration::from_secs(3),
        "shutdown exceeded the graceful timeout"
    );

    // Offsets were flushed and committed on the way out, although no interval had passed.
    write_lines(&input, 1000..1010);
    let again = w.start();
    again.wait("the 10 new lines", Duration::from_secs(60), || (count_lines(&output) >= 1010).then_some(()));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(read_lines(&output), (0..1010).map(line).collect::<Vec<_>>());
}

#[test]
fn a_trapping_plugin_fails_its_task_and_the_other_connector_keeps_delivering() {
    let mut w = Standalone::new(&[]);
    let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("healthy"));
    write_lines(&input, 0..500);
    w.add_connector(
        "trapper",
        &[
            ("connector.class", "test-trapper".into()),
            ("topic", unique("never")),
            ("message", "the trapper was told to trap".into()),
        ],
    );
    file_source(&mut w, "src", &input, &topic);
    file_sink(&mut w, &unique("sink"), &topic, &output);
    let worker = w.start();
    let task = worker.wait_task_state("trapper", 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("the trapper was told to trap"), "trace: {trace}");
    assert!(trace.contains("poll"), "trace names the call: {trace}");
    write_lines(&input, 500..600);
    worker.wait("600 lines out", Duration::from_secs(60), || (count_lines(&output) >= 600).then_some(()));
    assert_eq!(read_lines(&output), (0..600).map(line).collect::<Vec<_>>());
    assert_eq!(worker.task_state_now("src", 0).0, "RUNNING");
}

#[test]
fn a_put_refused_as_retriable_is_delivered_again_and_nothing_after_it_first() {
    // Small batches, so that many puts happen and every third is refused while later batches
    // are already fetched.
    let mut w = Standalone::new(&[("consumer.max.poll.records", "500".into())]);
    let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("flaky"));
    write_lines(&input, 0..20_000);
    file_source(&mut w, "src", &input, &topic);
    w.add_connector(
        &unique("flaky"),
        &[
            ("connector.class", "test-flaky-sink".into()),
            ("topics", topic.clone()),
            ("file", output.display().to_string()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
            ("fail.every", "3".into()),
        ],
    );
    let worker = w.start();
    worker.wait("20,000 lines out", Duration::from_secs(120), || (count_lines(&output) >= 20_000).then_some(()));
    // Give a stale batch, if one were delivered, the time to show up.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(read_lines(&output), (0..20_000).map(line).collect::<Vec<_>>(), "every line once, in order");
    let log = worker.log();
    assert!(
        log.contains("put failed with a retriable error, delivering the batch again"),
        "no refused put in the log:\n{log}"
    );
}

/// How many times the worker's log says the task started.
fn starts(worker: &Worker, task: &str) -> usize {
    // Connect's context, `[<connector>|task-<n>]`, which the worker writes after the level.
    let label = match task.rsplit_once('-') {
        Some((connector, n)) => format!("[{connector}|task-{n}]"),
        None => task.to_string(),
    };
    worker.log().lines().filter(|l| l.contains("task running") && l.contains(&label)).count()
}

#[test]
fn json_log_lines_say_whose_they_are() {
    let mut w = Standalone::new(&[("wharf.log.format", "json".into())]);
    w.add_connector("trapper", &[("connector.class", "test-trapper".into()), ("topic", unique("never"))]);
    let worker = w.start();
    worker.wait_task_state("trapper", 0, "FAILED");
    let log = worker.log();
    // The lines before the worker's config is read are text; every line after it is an object.
    let lines: Vec<serde_json::Value> =
        log.lines().skip_while(|l| !l.starts_with('{')).map(|l| serde_json::from_str(l).expect(l)).collect();
    assert!(lines.len() > 10, "{log}");
    let of_task: Vec<&serde_json::Value> = lines.iter().filter(|l| l["task"] == 0).collect();
    assert!(of_task.iter().all(|l| l["connector"] == "trapper"), "{of_task:?}");
    let said = |message: &str| of_task.iter().any(|l| l["message"].as_str().is_some_and(|m| m.starts_with(message)));
    assert!(said("task running") && said("task failed: plugin trapped in poll"), "{of_task:?}");
    // What the plugin wrote to stderr, on the task's thread, is the task's too.
    assert!(of_task.iter().any(|l| l["target"] == "plugin"), "{of_task:?}");
    assert!(lines.iter().all(|l| l["timestamp"].is_string() && l["level"].is_string()), "{log}");
}

/// Log lines of automatic restarts of `task`, the `n`-th in a row.
fn auto_restarts_logged(worker: &Worker, task: &str, n: u32) -> usize {
    let said = format!("task {task} FAILED; restarting it automatically (restart {n} in a row");
    worker.log().lines().filter(|l| l.contains(&said)).count()
}

#[test]
fn failed_tasks_restart_by_themselves_as_auto_restart_says() {
    let mut w = Standalone::new(&[]);
    let auto = |more: &[(&'static str, &str)]| {
        let mut config = vec![
            ("connector.class", "test-trapper".to_string()),
            ("topic", unique("never")),
            ("auto.restart.enable", "true".into()),
            ("auto.restart.backoff.unit.ms", "300".into()),
        ];
        config.extend(more.iter().map(|(k, v)| (*k, v.to_string())));
        config
    };
    // Fails at once each time: restarted at once, then after 2 and 6 units, then left FAILED.
    w.add_connector("again", &auto(&[("auto.restart.max.restarts", "3")]));
    // Refuses to open as fatal: no restart mends that.
    w.add_connector("refused", &auto(&[("fail.open", "fatal")]));
    // Runs several back-off units before it fails: its count starts over each time.
    w.add_connector("late", &auto(&[("trap.after.polls", "25"), ("auto.restart.max.restarts", "1")]));
    // The worker's default: off.
    w.add_connector("off", &[("connector.class", "test-trapper".into()), ("topic", unique("never"))]);
    let worker = w.start();

    let given_up =
        worker.wait("task again-0 to stay FAILED after 3 automatic restarts", Duration::from_secs(90), || {
            let (state, task) = worker.task_state("again", 0)?;
            (state == "FAILED" && task["auto_restarts"] == 3 && worker.log().contains("task again-0 stays FAILED"))
                .then_some(task)
        });
    let trace = given_up["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("trapper was told to trap"), "{trace}");
    assert!(trace.ends_with("Restarted automatically 3 time(s) in a row (auto.restart.*)."), "{trace}");
    for n in 1..=3 {
        assert_eq!(auto_restarts_logged(&worker, "again-0", n), 1, "restart {n} of again-0");
    }
    assert!(worker.log().contains("auto.restart.max.restarts=3"));
    let (_, metrics, _) = worker.call("GET", "/metrics", None);
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    assert!(metrics.lines().any(|l| l == r#"wharf_task_auto_restarts{connector="again",task="0"} 3"#), "{metrics}");

    let (state, refused) = worker.task_state_now("refused", 0);
    assert_eq!(state, "FAILED", "{refused}");
    assert!(refused.get("auto_restarts").is_none(), "{refused}");
    assert!(worker.log().contains("task refused-0 stays FAILED: its failure is not one a restart mends"));
    assert_eq!(starts(&worker, "refused-0"), 0);
    assert_eq!(auto_restarts_logged(&worker, "refused-0", 1), 0);
    let (state, off) = worker.task_state_now("off", 0);
    assert_eq!(state, "FAILED", "{off}");
    assert_eq!(starts(&worker, "off-0"), 1, "a connector without auto.restart.enable was restarted");

    // With at most 1 restart in a row, a third start shows the count started over in between.
    worker.wait("task late-0 to start a third time", Duration::from_secs(120), || {
        (starts(&worker, "late-0") >= 3).then_some(())
    });
    assert!(worker.log().contains("task late-0 has run for auto.restart.backoff.unit.ms=300 ms"));
    assert_eq!(auto_restarts_logged(&worker, "late-0", 2), 0);

    // A restart through the REST API starts the count over: the task is restarted again.
    let (code, _, _) = worker.call("POST", "/connectors/again/tasks/0/restart", None);
    assert_eq!(code, 204);
    worker.wait("an automatic restart of again-0 after the one asked for", Duration::from_secs(60), || {
        (auto_restarts_logged(&worker, "again-0", 1) == 2).then_some(())
    });
}

#[test]
fn restart_follows_include_tasks_and_only_failed() {
    let mut w = Standalone::new(&[]);
    let (input, topic) = (w.path("in.txt"), unique("restarts"));
    write_lines(&input, 0..500);
    w.add_connector("trapper", &[("connector.class", "test-trapper".into()), ("topic", unique("never"))]);
    file_source(&mut w, "src", &input, &topic);
    let worker = w.start();
    worker.wait_task_state("trapper", 0, "FAILED");
    worker.wait_task_state("src", 0, "RUNNING");
    worker.wait("500 records", Duration::from_secs(60), || (topic_count(&topic) >= 500).then_some(()));
    assert_eq!(starts(&worker, "src-0"), 1);

    // No parameters: the connector only, 204; its task keeps running.
    let (code, _, _) = worker.call("POST", "/connectors/src/restart", None);
    assert_eq!(code, 204);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(starts(&worker, "src-0"), 1, "a connector-only restart restarted its task");

    // onlyFailed with nothing failed: 202, nothing restarts.
    let (code, body, _) = worker.call("POST", "/connectors/src/restart?includeTasks=true&onlyFailed=true", None);
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["connector"]["state"], "RUNNING", "{body}");
    assert_eq!(body["tasks"][0]["state"], "RUNNING", "{body}");

    // onlyFailed picks the failed task, not the running connector.
    let (code, body, _) = worker.call("POST", "/connectors/trapper/restart?includeTasks=true&onlyFailed=true", None);
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["name"], "trapper");
    assert_eq!(body["connector"]["state"], "RUNNING", "{body}");
    assert_eq!(body["tasks"][0]["state"], "RESTARTING", "{body}");
    worker.wait("the trapper task started again", Duration::from_secs(30), || {
        (starts(&worker, "trapper-0") == 2).then_some(())
    });
    worker.wait_task_state("trapper", 0, "FAILED");

    // includeTasks alone: the connector and every task.
    let (code, body, _) = worker.call("POST", "/connectors/src/restart?includeTasks=true", None);
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["connector"]["state"], "RESTARTING", "{body}");
    assert_eq!(body["tasks"][0]["state"], "RESTARTING", "{body}");
    worker.wait("the source task started again", Duration::from_secs(30), || {
        (starts(&worker, "src-0") == 2).then_some(())
    });
    worker.wait_task_state("src", 0, "RUNNING");
    write_lines(&input, 500..600);
    worker.wait("lines written after the restart", Duration::from_secs(60), || {
        (topic_count(&topic) >= 600).then_some(())
    });

    let (code, body, _) = worker.call("POST", "/connectors/src/restart?includeTasks=maybe", None);
    assert_eq!(code, 400, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("includeTasks"), "{body}");
    let (code, _, _) = worker.call("POST", "/connectors/ghost/restart?includeTasks=true", None);
    assert_eq!(code, 404);
}

#[test]
fn offsets_are_reported_in_kafka_connects_shapes() {
    let mut w = Standalone::new(&[]);
    let (input, output, topic, sink) = (w.path("in.txt"), w.path("out.txt"), unique("offsets"), unique("sink"));
    write_lines(&input, 0..300);
    file_source(&mut w, "src", &input, &topic);
    file_sink(&mut w, &sink, &topic, &output);
    let worker = w.start();
    worker.wait("300 lines out", Duration::from_secs(60), || (count_lines(&output) >= 300).then_some(()));
    let expected_source = serde_json::json!({"offsets": [{
        "partition": {"filename": input.display().to_string()},
        "offset": {"position": 300 * LINE_BYTES},
    }]});
    worker.wait("the source's offsets", Duration::from_secs(10), || {
        (worker.get("/connectors/src/offsets")? == expected_source).then_some(())
    });
    let expected_sink = serde_json::json!({"offsets": [{
        "partition": {"kafka_topic": topic, "kafka_partition": 0},
        "offset": {"kafka_offset": 300},
    }]});
    worker.wait("the sink's offsets", Duration::from_secs(10), || {
        (worker.get(&format!("/connectors/{sink}/offsets"))? == expected_sink).then_some(())
    });
    assert_eq!(worker.call("GET", "/connectors/ghost/offsets", None).0, 404);

    // Offsets change only while the connector is stopped.
    let source_to_line_100 = serde_json::json!({"offsets": [{
        "partition": {"filename": input.display().to_string()},
        "offset": {"position": 100 * LINE_BYTES},
    }]});
    let (code, body, _) = worker.call("PATCH", "/connectors/src/offsets", Some(&source_to_line_100.to_string()));
    assert_eq!(code, 400, "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("STOPPED"), "{body}");
    for name in ["src", sink.as_str()] {
        assert_eq!(worker.call("PUT", &format!("/connectors/{name}/stop"), None).0, 204);
        worker.wait("STOPPED", Duration::from_secs(30), || {
            (worker.get(&format!("/connectors/{name}/status"))?["connector"]["state"] == "STOPPED").then_some(())
        });
    }
    let (code, body, _) = worker.call("PATCH", "/connectors/src/offsets", Some(&source_to_line_100.to_string()));
    assert_eq!(code, 200, "{body}");
    assert_eq!(worker.get("/connectors/src/offsets").unwrap(), source_to_line_100);
    let sink_to_250 = serde_json::json!({"offsets": [{
        "partition": {"kafka_topic": topic, "kafka_partition": 0},
        "offset": {"kafka_offset": 250},
    }]});
    let path = format!("/connectors/{sink}/offsets");
    // The stopped sink's consumer may still be leaving its group for a moment.
    worker.wait("the sink's offsets altered", Duration::from_secs(30), || {
        (worker.call("PATCH", &path, Some(&sink_to_250.to_string())).0 == 200).then_some(())
    });
    assert_eq!(worker.get(&path).unwrap(), sink_to_250);

    // Resumed, the source reads again from line 100 and the sink from record 250.
    for name in ["src", sink.as_str()] {
        assert_eq!(worker.call("PUT", &format!("/connectors/{name}/resume"), None).0, 202);
    }
    worker.wait("550 lines out", Duration::from_secs(60), || (count_lines(&output) >= 550).then_some(()));
    std::thread::sleep(Duration::from_secs(1));
    let expected: Vec<String> = (0..300).chain(250..300).chain(100..300).map(line).collect();
    assert_eq!(read_lines(&output), expected);

    // A reset forgets them all.
    for name in ["src", sink.as_str()] {
        assert_eq!(worker.call("PUT", &format!("/connectors/{name}/stop"), None).0, 204);
    }
    for name in ["src", sink.as_str()] {
        let path = format!("/connectors/{name}/offsets");
        worker.wait("the offsets reset", Duration::from_secs(30), || {
            (worker.call("DELETE", &path, None).0 == 200).then_some(())
        });
        assert_eq!(worker.get(&path).unwrap(), serde_json::json!({"offsets": []}), "{name}");
    }
}

#[test]
fn rest_answers_in_kafka_connect_shapes() {
    let mut w = Standalone::new(&[]);
    let (input, topic) = (w.path("in.txt"), unique("rest"));
    write_lines(&input, 0..3);
    file_source(&mut w, "src", &input, &topic);
    let worker = w.start();
    let root = worker.get("/").unwrap();
    assert!(root["version"].is_string() && root["kafka_cluster_id"].is_string(), "{root}");
    // A Kafka Connect version, which clients that gate features on it parse, and Wharf's beside it.
    assert_eq!(root["version"], "4.1.1", "{root}");
    assert_eq!(root["wharf_version"], wharf::VERSION, "{root}");
    assert_eq!(worker.get("/connectors").unwrap(), serde_json::json!(["src"]));
    worker.wait_task_state("src", 0, "RUNNING");
    let status = worker.get("/connectors/src/status").unwrap();
    assert_eq!(status["name"], "src");
    assert_eq!(status["type"], "source");
    assert_eq!(status["connector"]["worker_id"], format!("127.0.0.1:{}", worker.port));
    assert_eq!(status["tasks"][0]["id"], 0);
    let config = worker.get("/connectors/src/config").unwrap();
    assert_eq!(config["connector.class"], "file-source");
    let (code, body) = worker.get_raw("/connectors/nope/status");
    assert_eq!(code, 404);
    assert_eq!(body["error_code"], 404);
    assert!(body["message"].as_str().unwrap().contains("nope"), "{body}");
}

#[test]
fn an_unknown_plugin_is_refused_with_the_plugins_found() {
    let mut w = Standalone::new(&[]);
    w.add_connector("bad", &[("connector.class", "no-such-plugin".into()), ("topic", "t".into())]);
    let (status, log) = w.run_to_failure();
    assert!(!status.success());
    assert!(log.contains("connector.class=no-such-plugin") && log.contains("file-source"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn malformed_properties_are_refused_with_file_and_line() {
    let mut w = Standalone::new(&[]);
    let bad = w.path("bad.properties");
    fs::write(&bad, "name=x\nconnector.class=file-source\ntopic=\\u12\n").unwrap();
    w.connector_files.push(bad);
    let (status, log) = w.run_to_failure();
    assert!(!status.success());
    assert!(log.contains("bad.properties, line 3") && log.contains("\\u"), "{log}");
}

#[test]
fn a_missing_required_key_is_named() {
    let mut w = Standalone::new(&[]);
    w.add_connector("src", &[("connector.class", "file-source".into()), ("file", "/tmp/x".into())]);
    let (status, log) = w.run_to_failure();
    assert!(!status.success());
    assert!(log.contains("\"topic\" is required"), "{log}");
}

#[test]
fn an_unreachable_broker_names_bootstrap_servers() {
    let port = free_port();
    let w = Standalone::new(&[
        ("bootstrap.servers", format!("127.0.0.1:{port}")),
        ("wharf.bootstrap.timeout.ms", "2000".into()),
    ]);
    let (status, log) = w.run_to_failure();
    assert!(!status.success());
    assert!(log.contains(&format!("bootstrap.servers=127.0.0.1:{port}")), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// A team moving from Kafka Connect keeps each key in its partition: keyed source records go
/// where the Java producer's default partitioner sends them (librdkafka's own default hashes
/// differently).
#[test]
fn keyed_source_records_land_in_the_partition_the_java_producer_chooses() {
    let topic = unique("keyed");
    create_topic(&topic, 6, "delete");
    let mut w = Standalone::new(&[]);
    w.add_connector(
        "keyed-gen",
        &[
            ("connector.class", "datagen".into()),
            ("topic", topic.clone()),
            ("count", "300".into()),
            ("key.size", "8".into()),
        ],
    );
    let worker = w.start();
    worker.wait("300 records", Duration::from_secs(60), || (topic_count(&topic) >= 300).then_some(()));
    let records = topic_records(&topic);
    assert_eq!(records.len(), 300);
    let mut partitions = std::collections::BTreeSet::new();
    for (partition, key, _) in &records {
        assert_eq!(
            *partition,
            wharf::kafka::partitioner::partition_for_key(key.as_bytes(), 6),
            "key {key} is in partition {partition}"
        );
        partitions.insert(*partition);
    }
    assert!(partitions.len() > 1, "300 keys all in one partition: {partitions:?}");
}

/// Source tasks share the worker's producer for their producer settings, instead of a Kafka
/// client (and its threads and connections) each: twelve tasks of one connector and six of one
/// with a producer override run on two producers, and each task still stores its own offsets
/// once Kafka has its records.
#[test]
fn source_tasks_share_a_producer_per_producer_settings() {
    let (shared, own) = (unique("shared-producer"), unique("own-producer"));
    let mut w = Standalone::new(&[]);
    w.add_connector(
        "gen-shared",
        &[
            ("connector.class", "datagen".into()),
            ("topic", shared.clone()),
            ("count", "1200".into()),
            ("tasks.max", "12".into()),
        ],
    );
    w.add_connector(
        "gen-own",
        &[
            ("connector.class", "datagen".into()),
            ("topic", own.clone()),
            ("count", "600".into()),
            ("tasks.max", "6".into()),
            ("producer.override.linger.ms", "20".into()),
        ],
    );
    let worker = w.start();
    worker.wait("every record", Duration::from_secs(60), || {
        (topic_count(&shared) >= 1200 && topic_count(&own) >= 600).then_some(())
    });
    for (connector, tasks) in [("gen-shared", 12), ("gen-own", 6)] {
        let path = format!("/connectors/{connector}/offsets");
        let offsets = worker.wait("each task's stored offsets", Duration::from_secs(30), || {
            let offsets = worker.get(&path)?["offsets"].as_array()?.clone();
            (offsets.len() == tasks).then_some(offsets)
        });
        let total: i64 = offsets.iter().map(|o| o["offset"]["sequence"].as_i64().unwrap_or(0)).sum();
        assert!(total > 0, "{connector}: {offsets:?}");
    }
    // Each producer has one thread that serves its delivery reports (`kafka::polled`).
    let producers = fs::read_dir(format!("/proc/{}/task", worker.pid()))
        .unwrap()
        .filter_map(|t| fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "producer-poll")
        .count();
    assert_eq!(producers, 2, "18 source tasks of two producer settings should run on 2 producers");
    assert_eq!(topic_count(&shared), 1200);
    assert_eq!(topic_count(&own), 600);
}
