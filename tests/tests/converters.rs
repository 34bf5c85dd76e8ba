//! Records with shape: a source plugin hands over Connect data (a schema and a value), and the
//! connector's converters decide the bytes in Kafka, on a real broker.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

const JSON: &str = "org.apache.kafka.connect.json.JsonConverter";

fn datagen(w: &mut Standalone, name: &str, topic: &str, extra: &[(&str, &str)]) {
    let mut pairs = vec![
        ("connector.class", "datagen".to_string()),
        ("topic", topic.to_string()),
        ("count", "20".to_string()),
        ("value.size", "30".to_string()),
    ];
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    w.add_connector(name, &pairs);
}

fn values(topic: &str, count: usize) -> Vec<String> {
    wait_for(&format!("{count} records in {topic}"), Duration::from_secs(60), || {
        let values = topic_values(topic);
        (values.len() >= count).then_some(values)
    })
    .into_iter()
    .map(|v| String::from_utf8(v).unwrap())
    .collect()
}

#[test]
fn structs_reach_kafka_as_json_converter_writes_them() {
    let mut w = Standalone::new(&[("value.converter", JSON.into())]);
    let topic = unique("structs");
    datagen(&mut w, "gen", &topic, &[("value.format", "struct")]);
    let _worker = w.start();
    let values = values(&topic, 20);
    // The schema, in Connect's member order, once per record.
    let schema = r#"{"type":"struct","fields":[{"type":"int64","optional":false,"field":"sequence"},{"type":"int32","optional":false,"field":"task"},{"type":"string","optional":false,"field":"name"},{"type":"string","optional":false,"field":"text"},{"type":"boolean","optional":false,"field":"even"},{"type":"double","optional":false,"field":"ratio"},{"type":"float","optional":true,"field":"score"},{"type":"int16","optional":false,"field":"small"},{"type":"int8","optional":false,"field":"tiny"},{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"created"}],"optional":false,"name":"wharf.datagen.Record","version":1,"doc":"A record made up by datagen"}"#;
    for (seq, text) in values.iter().enumerate() {
        let prefix =
            format!(r#"{{"schema":{schema},"payload":{{"sequence":{seq},"task":0,"name":"record-{seq}","text":""#);
        assert!(text.starts_with(&prefix), "record {seq}:\n{text}\nexpected to start with\n{prefix}");
        let parsed: Value = serde_json::from_str(text).unwrap();
        let payload = &parsed["payload"];
        assert_eq!(payload["even"], json!(seq % 2 == 0));
        assert_eq!(payload["tiny"], json!(seq % 100));
        assert_eq!(payload["created"], json!(1_700_000_000_000u64 + seq as u64 * 1000));
        assert_eq!(payload["score"].is_null(), seq % 10 == 9, "{text}");
        assert_eq!(payload["text"].as_str().unwrap().len(), 9);
    }
}

#[test]
fn without_schemas_the_payload_alone_is_written() {
    let mut w =
        Standalone::new(&[("value.converter", JSON.into()), ("value.converter.schemas.enable", "false".into())]);
    let topic = unique("schemaless");
    datagen(&mut w, "gen", &topic, &[("value.format", "string")]);
    let _worker = w.start();
    for (seq, text) in values(&topic, 20).iter().enumerate() {
        let line: String = serde_json::from_str(text).unwrap();
        assert!(line.starts_with(&format!("{seq:020} ")), "{text}");
    }
}

#[test]
fn a_connector_chooses_its_own_converter_and_raw_bytes_pass_through_any() {
    let mut w = Standalone::new(&[("value.converter", JSON.into())]);
    let (strings, raw) = (unique("strings"), unique("raw"));
    datagen(
        &mut w,
        "text",
        &strings,
        &[("value.format", "string"), ("value.converter", "org.apache.kafka.connect.storage.StringConverter")],
    );
    datagen(&mut w, "bytes", &raw, &[]);
    let _worker = w.start();
    for topic in [&strings, &raw] {
        for (seq, text) in values(topic, 20).iter().enumerate() {
            assert!(text.starts_with(&format!("{seq:020} ")) && text.len() == 30, "{topic}: {text}");
        }
    }
}

#[test]
fn data_a_converter_cannot_write_fails_the_task_with_the_reason() {
    // The default converter writes bytes only.
    let mut w = Standalone::new(&[]);
    let topic = unique("unwritable");
    datagen(&mut w, "gen", &topic, &[("value.format", "struct")]);
    let worker = w.start();
    let task = worker.wait_task_state("gen", 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(
        trace.contains("value.converter=org.apache.kafka.connect.converters.ByteArrayConverter")
            && trace.contains(&topic)
            && trace.contains("STRUCT"),
        "{task}"
    );
    assert_eq!(topic_count(&topic), 0, "nothing of the batch may reach Kafka");
}

fn file_sink(w: &mut Standalone, name: &str, topic: &str, output: &std::path::Path, extra: &[(&str, &str)]) {
    let mut pairs = vec![
        ("connector.class", "file-sink".to_string()),
        ("topics", topic.to_string()),
        ("file", output.display().to_string()),
        ("wasm.fs.write", w.dir.path().display().to_string()),
    ];
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    w.add_connector(name, &pairs);
}

#[test]
fn a_sink_receives_what_its_converter_read_from_the_bytes() {
    // Strings written as JSON by the source's converter are read back as strings by the sink's.
    let mut w = Standalone::new(&[("value.converter", JSON.into())]);
    let topic = unique("json-strings");
    let output = w.path("out.txt");
    datagen(&mut w, "gen", &topic, &[("value.format", "string")]);
    file_sink(&mut w, "sink", &topic, &output, &[]);
    let worker = w.start();
    let lines = worker.wait("20 lines in the sink's file", Duration::from_secs(60), || {
        let lines = read_lines(&output);
        (lines.len() >= 20).then_some(lines)
    });
    for (seq, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("{seq:020} ")) && line.len() == 30, "{line}");
    }
    assert!(values(&topic, 1)[0].starts_with(r#"{"schema":{"type":"string","optional":false},"payload":"0000"#));
}

#[test]
fn header_values_cross_as_data_through_the_header_converter() {
    // Data headers become SimpleHeaderConverter's text in Kafka, and a sink reads that text back
    // as data with the schema Connect infers: a small number reads as an int8, a timestamp's
    // text as a Timestamp. A connector that names StringConverter gets the text as strings.
    let mut w = Standalone::new(&[]);
    let topic = unique("data-headers");
    let (typed, text) = (w.path("typed.txt"), w.path("text.txt"));
    datagen(&mut w, "gen", &topic, &[("headers", "true"), ("count", "20")]);
    let sink = |w: &mut Standalone, name: &str, file: &std::path::Path, extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("connector.class", "test-flaky-sink".to_string()),
            ("topics", topic.clone()),
            ("file", file.display().to_string()),
            ("fail.every", "1000000".to_string()),
            ("headers", "true".to_string()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
        ];
        pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        w.add_connector(name, &pairs);
    };
    sink(&mut w, "typed", &typed, &[]);
    sink(&mut w, "text", &text, &[("header.converter", "org.apache.kafka.connect.storage.StringConverter")]);
    let worker = w.start();
    let read = |file: &std::path::Path| {
        worker.wait("20 lines", Duration::from_secs(60), || {
            let lines = read_lines(file);
            (lines.len() >= 20).then_some(lines)
        })
    };
    let (typed, text) = (read(&typed), read(&text));
    let in_kafka = timed_topic_records(&topic);
    assert_eq!(in_kafka.len(), 20);
    for (seq, record) in in_kafka.iter().enumerate() {
        let created = 1_700_000_000_000i64 + seq as i64 * 1000;
        let secs = created / 1000 % 60;
        let stamp = format!("2023-11-14T22:13:{secs:02}.000Z");
        let expected =
            vec![("sequence".to_string(), Some(seq.to_string())), ("created".to_string(), Some(stamp.clone()))];
        assert_eq!(record.headers, expected, "record {seq}");
        let value = record.value.as_deref().unwrap_or_default();
        assert_eq!(
            typed[seq],
            format!("{value} | sequence=Int8({seq}) created=org.apache.kafka.connect.data.Timestamp:Int64({created})")
        );
        assert_eq!(text[seq], format!("{value} | sequence=String(\"{seq}\") created=String(\"{stamp}\")"));
    }
}

#[test]
fn a_sink_given_data_it_cannot_write_fails_with_the_record_and_the_way_out() {
    let mut w = Standalone::new(&[("value.converter", JSON.into())]);
    let topic = unique("json-structs");
    let (refused, text) = (w.path("refused.txt"), w.path("text.txt"));
    datagen(&mut w, "gen", &topic, &[("value.format", "struct")]);
    file_sink(&mut w, "structs", &topic, &refused, &[]);
    // The same records read as text: the JSON as it is in Kafka.
    file_sink(
        &mut w,
        "text",
        &topic,
        &text,
        &[("value.converter", "org.apache.kafka.connect.storage.StringConverter")],
    );
    let worker = w.start();
    let task = worker.wait_task_state("structs", 0, "FAILED");
    let trace = task["trace"].as_str().unwrap_or_default();
    assert!(trace.contains(&format!("{topic}-0 offset 0")) && trace.contains("StringConverter"), "{task}");
    let lines = worker.wait("20 lines of JSON", Duration::from_secs(60), || {
        let lines = read_lines(&text);
        (lines.len() >= 20).then_some(lines)
    });
    assert_eq!(lines, values(&topic, 20));
}
