//! Single message transforms and predicates, configured as in Kafka Connect, on a real broker:
//! a source's records are routed, given and stripped of headers before they reach Kafka; a
//! sink's are filtered by a predicate and given a header before `put`; dropped records are still
//! accounted for (a source's offset is stored, a sink commits past them).

use std::time::Duration;

use wharf_e2e::*;

#[test]
fn a_sources_records_are_routed_and_their_headers_changed_before_kafka() {
    let mut w = Standalone::new(&[]);
    let base = unique("orders");
    w.add_connector(
        "gen",
        &[
            ("connector.class", "datagen".into()),
            ("topic", format!("{base}-raw")),
            ("count", "20".into()),
            ("value.size", "30".into()),
            ("headers", "true".into()),
            ("transforms", "route, tag, drop".into()),
            ("transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter".into()),
            ("transforms.route.regex", "(.*)-raw".into()),
            ("transforms.route.replacement", "$1-clean".into()),
            ("transforms.tag.type", "org.apache.kafka.connect.transforms.InsertHeader".into()),
            ("transforms.tag.header", "origin".into()),
            ("transforms.tag.value.literal", "datagen".into()),
            ("transforms.drop.type", "org.apache.kafka.connect.transforms.DropHeaders".into()),
            ("transforms.drop.headers", "created".into()),
        ],
    );
    let worker = w.start();
    let routed = format!("{base}-clean");
    let records = worker.wait("20 routed records", Duration::from_secs(60), || {
        let records = timed_topic_records(&routed);
        (records.len() >= 20).then_some(records)
    });
    for (seq, record) in records.iter().enumerate() {
        let expected =
            vec![("sequence".to_string(), Some(seq.to_string())), ("origin".to_string(), Some("datagen".to_string()))];
        assert_eq!(record.headers, expected, "record {seq}");
    }
    assert_eq!(topic_count(&format!("{base}-raw")), 0, "nothing reaches the topic the plugin named");
}

#[test]
fn records_a_source_filter_drops_still_have_their_offsets_stored() {
    let mut w = Standalone::new(&[]);
    let topic = unique("dropped");
    w.add_connector(
        "gen",
        &[
            ("connector.class", "datagen".into()),
            ("topic", topic.clone()),
            ("count", "30".into()),
            ("value.size", "30".into()),
            ("transforms", "none".into()),
            ("transforms.none.type", "Filter".into()),
        ],
    );
    let worker = w.start();
    let offsets = worker.wait("the last record's source offset stored", Duration::from_secs(60), || {
        let offsets = worker.get("/connectors/gen/offsets")?;
        (offsets["offsets"][0]["offset"]["sequence"] == 29).then_some(offsets)
    });
    assert_eq!(offsets["offsets"].as_array().map(Vec::len), Some(1), "{offsets}");
    assert_eq!(topic_count(&topic), 0, "every record was dropped");
}

#[test]
fn a_sinks_records_are_filtered_by_a_predicate_and_committed_past() {
    let mut w = Standalone::new(&[]);
    let (kept, skipped) = (unique("kept"), unique("skipped"));
    for topic in [&kept, &skipped] {
        create_topic(topic, 1, "delete");
        for i in 0..10 {
            produce(topic, 0, &format!("k{i}"), format!("{topic} {i}").as_bytes());
        }
    }
    let output = w.path("out.txt");
    let name = unique("filtered");
    w.add_connector(
        &name,
        &[
            ("connector.class", "test-flaky-sink".into()),
            ("topics", format!("{kept},{skipped}")),
            ("file", output.display().to_string()),
            ("fail.every", "1000000".into()),
            ("headers", "true".into()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
            ("transforms", "skip,tag".into()),
            ("transforms.skip.type", "org.apache.kafka.connect.transforms.Filter".into()),
            ("transforms.skip.predicate", "is-skipped".into()),
            ("transforms.tag.type", "org.apache.kafka.connect.transforms.InsertHeader".into()),
            ("transforms.tag.header", "seen".into()),
            ("transforms.tag.value.literal", "true".into()),
            ("predicates", "is-skipped".into()),
            ("predicates.is-skipped.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches".into()),
            ("predicates.is-skipped.pattern", skipped.clone()),
        ],
    );
    let worker = w.start();
    let group = format!("connect-{name}");
    worker.wait("both topics committed to their end", Duration::from_secs(60), || {
        (committed_offset(&group, &kept) == Some(10) && committed_offset(&group, &skipped) == Some(10)).then_some(())
    });
    let expected: Vec<String> = (0..10).map(|i| format!("{kept} {i} | seen=Boolean(true)")).collect();
    assert_eq!(read_lines(&output), expected, "only the kept topic's records, each with the header");
}

/// A connector's transforms naming the test transform plugin (`plugins/testing/transform`).
fn plugin_transform(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs = vec![
        ("transforms".to_string(), "mine".to_string()),
        ("transforms.mine.type".to_string(), "test-transform".to_string()),
        ("transforms.mine.version".to_string(), "0.1".to_string()),
    ];
    pairs.extend(settings.iter().map(|(k, v)| (format!("transforms.mine.{k}"), v.to_string())));
    pairs
}

#[test]
fn a_transform_plugin_changes_and_drops_a_sources_records_before_kafka() {
    let mut w = Standalone::new(&[]);
    let topic = unique("plugin-transformed");
    let mut pairs: Vec<(&str, String)> = vec![
        ("connector.class", "datagen".into()),
        ("topic", topic.clone()),
        ("count", "20".into()),
        ("value.size", "40".into()),
    ];
    let transforms = plugin_transform(&[("drop.containing", "00000000000000000003 ")]);
    pairs.extend(transforms.iter().map(|(k, v)| (k.as_str(), v.clone())));
    w.add_connector("gen", &pairs);
    let worker = w.start();
    worker.wait("the last record's source offset stored", Duration::from_secs(60), || {
        let offsets = worker.get("/connectors/gen/offsets")?;
        (offsets["offsets"][0]["offset"]["sequence"] == 19).then_some(())
    });
    let records = timed_topic_records(&topic);
    assert_eq!(records.len(), 19, "record 3 was dropped");
    for record in &records {
        let value = record.value.as_deref().unwrap_or_default();
        assert!(!value.starts_with("00000000000000000003 "), "{value}");
        assert_eq!(value, value.to_uppercase(), "upper-cased by the plugin");
        assert!(
            record.headers.iter().any(|(k, v)| k == "transformed-by" && v.as_deref() == Some("test-transform")),
            "{:?}",
            record.headers
        );
    }
    let listed = worker.get("/connector-plugins?connectorsOnly=false").unwrap();
    assert!(
        listed.as_array().unwrap().iter().any(|p| p["class"] == "test-transform" && p["type"] == "transformation"),
        "{listed}"
    );
    let connectors = worker.get("/connector-plugins").unwrap();
    assert!(connectors.as_array().unwrap().iter().all(|p| p["class"] != "test-transform"), "{connectors}");
}

#[test]
fn a_transform_plugins_failures_skip_only_their_records_under_tolerance_or_fail_the_task() {
    let mut w = Standalone::new(&[]);
    let topic = unique("plugin-failures");
    create_topic(&topic, 1, "delete");
    for (i, value) in ["ok a", "bad b", "drop c", "ok d"].iter().enumerate() {
        produce(&topic, 0, &format!("k{i}"), value.as_bytes());
    }
    let dlq = unique("plugin-dlq");
    let (tolerant_out, strict_out) = (w.path("tolerant.txt"), w.path("strict.txt"));
    let sink = |w: &mut Standalone, name: &str, out: &std::path::Path, extra: &[(&str, &str)]| {
        let mut pairs: Vec<(String, String)> = vec![
            ("connector.class".into(), "test-flaky-sink".into()),
            ("topics".into(), topic.clone()),
            ("file".into(), out.display().to_string()),
            ("fail.every".into(), "1000000".into()),
            ("headers".into(), "true".into()),
            ("wasm.fs.write".into(), w.dir.path().display().to_string()),
        ];
        pairs.extend(plugin_transform(&[("drop.containing", "drop"), ("fail.containing", "bad")]));
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let pairs: Vec<(&str, String)> = pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        w.add_connector(name, &pairs);
    };
    let (tolerant, strict) = (unique("tolerant"), unique("strict"));
    sink(
        &mut w,
        &tolerant,
        &tolerant_out,
        &[
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", &dlq),
            ("errors.deadletterqueue.topic.replication.factor", "1"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ],
    );
    sink(&mut w, &strict, &strict_out, &[]);
    let worker = w.start();
    worker.wait("the tolerant sink committed to the end", Duration::from_secs(60), || {
        (committed_offset(&format!("connect-{tolerant}"), &topic) == Some(4)).then_some(())
    });
    // The plugin failed the batch; given one record at a time it failed only "bad b".
    assert_eq!(
        read_lines(&tolerant_out),
        ["OK A | transformed-by=bytes:test-transform", "OK D | transformed-by=bytes:test-transform"]
    );
    let queued = worker.wait("the refused record in the dead-letter queue", Duration::from_secs(30), || {
        let records = timed_topic_records(&dlq);
        (!records.is_empty()).then_some(records)
    });
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].value.as_deref(), Some("bad b"), "as it was read");
    let header = |key: &str| queued[0].headers.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.clone());
    assert_eq!(header("__connect.errors.stage").as_deref(), Some("TRANSFORMATION"));
    assert_eq!(header("__connect.errors.class.name").as_deref(), Some("test-transform"));
    let task = worker.wait_task_state(&strict, 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("transforms.mine (test-transform)") && trace.contains("refused on purpose"), "{task}");
}

#[test]
fn a_transform_that_names_no_plugin_is_refused_with_what_there_is() {
    let mut w = Standalone::new(&[]);
    let mut pairs: Vec<(&str, String)> =
        vec![("connector.class", "datagen".into()), ("topic", unique("never")), ("count", "1".into())];
    let transforms = [
        ("transforms".to_string(), "a,b".to_string()),
        ("transforms.a.type".to_string(), "no-such-transform".to_string()),
        ("transforms.b.type".to_string(), "test-transform".to_string()),
        ("transforms.b.drop.containing".to_string(), "x".to_string()),
        ("transforms.b.fail.containing".to_string(), "x".to_string()),
    ];
    pairs.extend(transforms.iter().map(|(k, v)| (k.as_str(), v.clone())));
    w.add_connector("gen", &pairs);
    let (status, output) = w.run_to_failure();
    assert!(!status.success());
    assert!(
        output.contains(
            "transforms.a.type=no-such-transform is neither one of Kafka Connect's transforms nor a transform plugin"
        ),
        "{output}"
    );
    assert!(output.contains("transforms.b.fail.containing: is the same text as drop.containing"), "{output}");
}
