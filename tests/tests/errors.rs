//! Kafka Connect's `errors.*` on a real broker: with `errors.tolerance=all` a record that a
//! converter or a transform fails on is skipped while every other record arrives; a sink writes
//! it, as it was read, to its dead-letter queue with Connect's `__connect.errors.*` headers and
//! commits past it; a source stores its offset. With the default (`none`) the task fails, as the
//! converter and transform tests show.

use std::time::Duration;

use wharf_e2e::*;

const JSON: &str = "org.apache.kafka.connect.json.JsonConverter";

fn header<'a>(record: &'a TimedRecord, key: &str) -> Option<&'a str> {
    record.headers.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.as_deref())
}

/// A `test-flaky-sink` of `topic` into `out` that refuses no put of its own accord.
fn flaky_sink(w: &mut Standalone, name: &str, topic: &str, out: &std::path::Path, extra: &[(&str, String)]) {
    let mut pairs = vec![
        ("connector.class", "test-flaky-sink".to_string()),
        ("topics", topic.to_string()),
        ("file", out.display().to_string()),
        ("fail.every", "1000000".to_string()),
        ("wasm.fs.write", w.dir.path().display().to_string()),
    ];
    pairs.extend(extra.iter().cloned());
    w.add_connector(name, &pairs);
}

/// errors.tolerance=all with a dead-letter queue that carries the context headers.
fn tolerant_with_queue(dlq: &str) -> Vec<(&'static str, String)> {
    vec![
        ("errors.tolerance", "all".to_string()),
        ("errors.deadletterqueue.topic.name", dlq.to_string()),
        ("errors.deadletterqueue.topic.replication.factor", "1".to_string()),
        ("errors.deadletterqueue.context.headers.enable", "true".to_string()),
    ]
}

#[test]
fn a_poison_record_lands_in_the_dead_letter_queue_with_its_headers_while_the_rest_arrives() {
    let mut w = Standalone::new(&[]);
    let topic = unique("poison");
    create_topic(&topic, 1, "delete");
    // Record 4 is not JSON; record 7 is JSON but not an object, which ExtractField refuses.
    for i in 0..10 {
        let value = match i {
            4 => "{not json".to_string(),
            7 => "42".to_string(),
            _ => format!(r#"{{"line":"line {i}"}}"#),
        };
        produce(&topic, 0, &format!("k{i}"), value.as_bytes());
    }
    let dlq = unique("dlq");
    let output = w.path("out.txt");
    let name = unique("tolerant");
    w.add_connector(
        &name,
        &[
            ("connector.class", "file-sink".into()),
            ("topics", topic.clone()),
            ("file", output.display().to_string()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
            ("value.converter", JSON.into()),
            ("value.converter.schemas.enable", "false".into()),
            ("transforms", "line".into()),
            ("transforms.line.type", "org.apache.kafka.connect.transforms.ExtractField$Value".into()),
            ("transforms.line.field", "line".into()),
            ("errors.tolerance", "all".into()),
            ("errors.log.enable", "true".into()),
            ("errors.log.include.messages", "true".into()),
            ("errors.deadletterqueue.topic.name", dlq.clone()),
            ("errors.deadletterqueue.topic.replication.factor", "1".into()),
            ("errors.deadletterqueue.context.headers.enable", "true".into()),
        ],
    );
    let worker = w.start();
    let group = format!("connect-{name}");
    worker.wait("the topic committed to its end", Duration::from_secs(60), || {
        (committed_offset(&group, &topic) == Some(10)).then_some(())
    });
    let expected: Vec<String> = (0..10).filter(|i| *i != 4 && *i != 7).map(|i| format!("line {i}")).collect();
    assert_eq!(read_lines(&output), expected, "every other record arrives, in order");

    let queued = worker.wait("two records in the dead-letter queue", Duration::from_secs(30), || {
        let records = timed_topic_records(&dlq);
        (records.len() >= 2).then_some(records)
    });
    assert_eq!(queued.len(), 2, "only the two poison records");
    let (bad_json, not_object) = (&queued[0], &queued[1]);
    assert_eq!((bad_json.key.as_str(), bad_json.value.as_deref()), ("k4", Some("{not json")), "as it was read");
    assert_eq!((not_object.key.as_str(), not_object.value.as_deref()), ("k7", Some("42")));
    for (record, offset) in [(bad_json, "4"), (not_object, "7")] {
        assert_eq!(header(record, "__connect.errors.topic"), Some(topic.as_str()));
        assert_eq!(header(record, "__connect.errors.partition"), Some("0"));
        assert_eq!(header(record, "__connect.errors.offset"), Some(offset));
        assert_eq!(header(record, "__connect.errors.connector.name"), Some(name.as_str()));
        assert_eq!(header(record, "__connect.errors.task.id"), Some("0"));
        assert_eq!(
            header(record, "__connect.errors.exception.class.name"),
            Some("org.apache.kafka.connect.errors.DataException")
        );
        assert!(header(record, "__connect.errors.exception.stacktrace").is_some_and(|t| t.contains("DataException")));
    }
    assert_eq!(header(bad_json, "__connect.errors.stage"), Some("VALUE_CONVERTER"));
    assert_eq!(header(bad_json, "__connect.errors.class.name"), Some(JSON));
    assert!(header(bad_json, "__connect.errors.exception.message").is_some_and(|m| m.contains("offset 4")));
    assert_eq!(header(not_object, "__connect.errors.stage"), Some("TRANSFORMATION"));
    assert_eq!(
        header(not_object, "__connect.errors.class.name"),
        Some("org.apache.kafka.connect.transforms.ExtractField$Value")
    );
    assert!(
        header(not_object, "__connect.errors.exception.message").is_some_and(|m| m.contains("Only Map objects")),
        "{:?}",
        not_object.headers
    );
    let log = worker.log();
    assert!(log.contains(&format!("topic='{topic}', partition=0, offset=4")), "the log names the record:\n{log}");
    assert_eq!(worker.task_state(&name, 0).map(|(state, _)| state).as_deref(), Some("RUNNING"));
}

#[test]
fn records_a_source_cannot_convert_are_skipped_and_their_offsets_stored() {
    // Structs cannot be written by ByteArrayConverter: without tolerance the task fails (see
    // the converter tests); with errors.tolerance=all each record is skipped and its offset
    // still stored, so a restart does not produce them again.
    let mut w = Standalone::new(&[]);
    let topic = unique("unconvertible");
    w.add_connector(
        "gen",
        &[
            ("connector.class", "datagen".into()),
            ("topic", topic.clone()),
            ("count", "20".into()),
            ("value.format", "struct".into()),
            ("errors.tolerance", "all".into()),
        ],
    );
    let worker = w.start();
    worker.wait("the last record's source offset stored", Duration::from_secs(60), || {
        let offsets = worker.get("/connectors/gen/offsets")?;
        (offsets["offsets"][0]["offset"]["sequence"] == 19).then_some(())
    });
    assert_eq!(topic_count(&topic), 0, "no record could be written");
    assert_eq!(worker.task_state("gen", 0).map(|(state, _)| state).as_deref(), Some("RUNNING"));
    assert!(worker.log().contains("errors.log.enable=true"), "the first skip says how to see each one");
}

#[test]
fn a_dead_letter_queue_among_the_sinks_own_topics_is_refused() {
    let mut w = Standalone::new(&[]);
    let topic = unique("loop");
    w.add_connector(
        "sink",
        &[
            ("connector.class", "file-sink".into()),
            ("topics", topic.clone()),
            ("file", w.path("out.txt").display().to_string()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
            ("errors.tolerance", "all".into()),
            ("errors.deadletterqueue.topic.name", topic.clone()),
        ],
    );
    let (status, output) = w.run_to_failure();
    assert!(!status.success());
    assert!(output.contains("errors.deadletterqueue.topic.name") && output.contains("may not be included"), "{output}");
}

#[test]
fn records_a_sink_reports_as_errant_go_to_the_dead_letter_queue_or_fail_the_task() {
    let mut w = Standalone::new(&[]);
    let topic = unique("reported");
    create_topic(&topic, 1, "delete");
    for i in 0..6 {
        let value = if i == 2 { format!("bad {i}") } else { format!("ok {i}") };
        produce(&topic, 0, &format!("k{i}"), value.as_bytes());
    }
    let dlq = unique("reported-dlq");
    let (tolerant_out, strict_out) = (w.path("tolerant.txt"), w.path("strict.txt"));
    let marker = [("errant.marker", "bad".to_string())];
    let (tolerant, strict) = (unique("tolerant"), unique("strict"));
    let mut tolerant_pairs = tolerant_with_queue(&dlq);
    tolerant_pairs.extend(marker.iter().cloned());
    flaky_sink(&mut w, &tolerant, &topic, &tolerant_out, &tolerant_pairs);
    flaky_sink(&mut w, &strict, &topic, &strict_out, &marker);
    let worker = w.start();

    let group = format!("connect-{tolerant}");
    worker.wait("the tolerant sink committed to the end", Duration::from_secs(60), || {
        (committed_offset(&group, &topic) == Some(6)).then_some(())
    });
    assert_eq!(read_lines(&tolerant_out), ["ok 0", "ok 1", "ok 3", "ok 4", "ok 5"]);
    let queued = worker.wait("the reported record in the dead-letter queue", Duration::from_secs(30), || {
        let records = timed_topic_records(&dlq);
        (!records.is_empty()).then_some(records)
    });
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].key.as_str(), queued[0].value.as_deref()), ("k2", Some("bad 2")));
    assert_eq!(header(&queued[0], "__connect.errors.stage"), Some("TASK_PUT"));
    assert_eq!(header(&queued[0], "__connect.errors.class.name"), Some("test-flaky-sink"));
    assert_eq!(header(&queued[0], "__connect.errors.offset"), Some("2"));
    assert!(header(&queued[0], "__connect.errors.exception.message").is_some_and(|m| m.contains("holds \"bad\"")));

    // Without tolerance the task fails with the plugin's reason, and nothing past the batch is
    // committed.
    let task = worker.wait_task_state(&strict, 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("offset 2") && trace.contains("holds \"bad\""), "{task}");
    assert_eq!(committed_offset(&format!("connect-{strict}"), &topic), None);
}

#[test]
fn a_put_that_keeps_failing_is_retried_until_errors_retry_timeout_then_skipped_or_fatal() {
    let mut w = Standalone::new(&[]);
    let topic = unique("refused");
    create_topic(&topic, 1, "delete");
    for i in 0..3 {
        produce(&topic, 0, &format!("k{i}"), format!("ok {i}").as_bytes());
    }
    let dlq = unique("refused-dlq");
    let (tolerant_out, strict_out) = (w.path("tolerant.txt"), w.path("strict.txt"));
    let retries = [
        ("refuse.marker", "bad".to_string()),
        ("errors.retry.timeout", "1500".to_string()),
        ("errors.retry.delay.max.ms", "200".to_string()),
    ];
    let (tolerant, strict) = (unique("tolerant"), unique("strict"));
    let mut tolerant_pairs = tolerant_with_queue(&dlq);
    tolerant_pairs.extend(retries.iter().cloned());
    flaky_sink(&mut w, &tolerant, &topic, &tolerant_out, &tolerant_pairs);
    flaky_sink(&mut w, &strict, &topic, &strict_out, &retries);
    let worker = w.start();
    worker.wait("both sinks wrote the first records", Duration::from_secs(60), || {
        (read_lines(&tolerant_out).len() == 3 && read_lines(&strict_out).len() == 3).then_some(())
    });

    // The refused record comes alone, so that its batch holds nothing else.
    produce(&topic, 0, "k3", b"bad 3");
    let queued = worker.wait("the refused record in the dead-letter queue", Duration::from_secs(30), || {
        let records = timed_topic_records(&dlq);
        (!records.is_empty()).then_some(records)
    });
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].key.as_str(), queued[0].value.as_deref()), ("k3", Some("bad 3")));
    assert_eq!(header(&queued[0], "__connect.errors.stage"), Some("TASK_PUT"));
    assert_eq!(header(&queued[0], "__connect.errors.offset"), Some("3"));
    let message = header(&queued[0], "__connect.errors.exception.message").unwrap_or_default().to_string();
    assert!(message.contains("errors.retry.timeout=1500 is spent") && message.contains("refused"), "{message}");
    assert!(worker.log().contains("delivering the batch again"), "the put was retried before it was given up");

    for i in 4..6 {
        produce(&topic, 0, &format!("k{i}"), format!("ok {i}").as_bytes());
    }
    let group = format!("connect-{tolerant}");
    worker.wait("the tolerant sink committed past the refused record", Duration::from_secs(60), || {
        (committed_offset(&group, &topic) == Some(6)).then_some(())
    });
    assert_eq!(read_lines(&tolerant_out), ["ok 0", "ok 1", "ok 2", "ok 4", "ok 5"]);
    let skipped = worker.wait("the skipped record counted in the task's status", Duration::from_secs(30), || {
        let (state, task) = worker.task_state(&tolerant, 0)?;
        (state == "RUNNING" && task["records_skipped"] == 1).then_some(task)
    });
    assert_eq!(skipped["records_skipped"], 1);

    // Without tolerance the task fails once the timeout is spent, and nothing of the refused
    // batch is committed.
    let task = worker.wait_task_state(&strict, 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("errors.retry.timeout=1500 is spent") && trace.contains("offset 3"), "{task}");
    assert_eq!(read_lines(&strict_out), ["ok 0", "ok 1", "ok 2"]);
    assert!(committed_offset(&format!("connect-{strict}"), &topic).is_none_or(|o| o <= 3));
}

#[test]
fn a_poll_that_keeps_failing_is_retried_for_ever_by_default_and_until_errors_retry_timeout_when_set() {
    let mut w = Standalone::new(&[]);
    let source = |w: &mut Standalone, name: &str, extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("connector.class", "test-misbehaver".to_string()),
            ("behaviour", "unavailable".to_string()),
            ("topic", unique("unavailable")),
        ];
        pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        w.add_connector(name, &pairs);
    };
    let (patient, bounded, tolerant) = (unique("patient"), unique("bounded"), unique("tolerant"));
    source(&mut w, &patient, &[]);
    source(&mut w, &bounded, &[("errors.retry.timeout", "1000"), ("errors.retry.delay.max.ms", "100")]);
    source(
        &mut w,
        &tolerant,
        &[("errors.retry.timeout", "0"), ("errors.tolerance", "all"), ("errors.retry.delay.max.ms", "100")],
    );
    let worker = w.start();

    let task = worker.wait_task_state(&bounded, 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(
        trace.contains("errors.retry.timeout=1000 is spent") && trace.contains("the source system is unavailable"),
        "{task}"
    );
    worker.wait("the tolerant source going on past its failures", Duration::from_secs(30), || {
        worker.log().contains("errors.tolerance=all, so the task goes on polling").then_some(())
    });
    // Without the key the poll is retried until it succeeds, as Connect does.
    worker.wait("the patient source retrying", Duration::from_secs(30), || {
        let retries = worker.log().matches("polling again in 500 ms").count();
        (retries >= 3).then_some(())
    });
    for name in [&patient, &tolerant] {
        assert_eq!(worker.task_state(name, 0).map(|(state, _)| state).as_deref(), Some("RUNNING"), "{name}");
    }
}
