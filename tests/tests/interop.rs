//! Wharf's file connectors beside a real Kafka Connect 4.1 standalone worker's, on the suite's
//! broker: each side's source writes a topic the other side's sink reads, through JsonConverter,
//! and both sources write the same bytes for the same lines. (The converters and transforms
//! alone are compared with Connect's own classes in `connect/tests/conformance.rs`.)

#[test]
fn lines_cross_between_kafka_connects_file_connectors_and_wharfs_through_json_converter() {
    use std::time::Duration;
    use wharf_e2e::*;

    let lines: Vec<String> = (0..200).map(|i| format!("line {i} with \"quotes\", a tab\t, é and 😀")).collect();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let json = "org.apache.kafka.connect.json.JsonConverter".to_string();
    let mut w = Standalone::new(&[("value.converter", json.clone()), ("key.converter", json)]);
    let dir = w.dir.path().to_path_buf();
    let (from_connect, from_wharf) = (unique("from-connect"), unique("from-wharf"));
    let (connect_in, wharf_in) = (dir.join("connect-in.txt"), dir.join("wharf-in.txt"));
    let (wharf_out, connect_out) = (dir.join("wharf-out.txt"), dir.join("connect-out.txt"));
    std::fs::write(&connect_in, &text).unwrap();
    std::fs::write(&wharf_in, &text).unwrap();
    // Connect's source writes one topic, Wharf's sink reads it; Wharf's source writes another,
    // Connect's sink reads it.
    let _connect = wharf_e2e::KillOnDrop(wharf_e2e::start_connect(
        &dir,
        None,
        &[
            (
                "connect-source",
                vec![
                    ("connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector".into()),
                    ("file", connect_in.display().to_string()),
                    ("topic", from_connect.clone()),
                ],
            ),
            (
                "connect-sink",
                vec![
                    ("connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector".into()),
                    ("file", connect_out.display().to_string()),
                    ("topics", from_wharf.clone()),
                ],
            ),
        ],
    ));
    w.add_connector(
        "wharf-source",
        &[
            ("connector.class", "file-source".into()),
            ("file", wharf_in.display().to_string()),
            ("topic", from_wharf.clone()),
            ("wasm.fs.read", dir.display().to_string()),
        ],
    );
    w.add_connector(
        "wharf-sink",
        &[
            ("connector.class", "file-sink".into()),
            ("file", wharf_out.display().to_string()),
            ("topics", from_connect.clone()),
            ("wasm.fs.write", dir.display().to_string()),
        ],
    );
    let worker = w.start();
    let connect_log = || std::fs::read_to_string(dir.join("connect.log")).unwrap_or_default();
    for (what, output) in
        [("Wharf's sink, from Connect's source", &wharf_out), ("Connect's sink, from Wharf's source", &connect_out)]
    {
        let arrived = worker.wait(what, Duration::from_secs(120), || {
            let got = read_lines(output);
            (got.len() >= lines.len()).then_some(got)
        });
        if arrived != lines {
            panic!("{what}: the lines differ from the input\nConnect's log ends:\n{}", connect_log());
        }
    }
    // Both sources wrote the same bytes for the same lines.
    let (theirs, ours) = (topic_values(&from_connect), topic_values(&from_wharf));
    assert_eq!(theirs.len(), lines.len());
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(o),
            String::from_utf8_lossy(t),
            "line {i}: Wharf's record differs from Connect's"
        );
    }
}
