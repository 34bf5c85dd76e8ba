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
