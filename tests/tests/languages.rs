//! Plugins written in Python, JavaScript and C, built from source by `./run test`
//! (plugins/build-examples), run by a real worker on the real broker.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

/// Writes lines to a file whose folder the test grants to the plugin.
fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
}

fn utf8(values: Vec<Vec<u8>>) -> Vec<String> {
    values.into_iter().map(|v| String::from_utf8(v).unwrap()).collect()
}

/// Waits for a task's FAILED status and returns its trace.
fn failed_trace(worker: &Worker, connector: &str) -> String {
    worker.wait(&format!("{connector} to fail"), Duration::from_secs(60), || {
        let status = worker.get(&format!("/connectors/{connector}/status"))?;
        let task = &status["tasks"][0];
        (task["state"] == "FAILED").then(|| task["trace"].as_str().unwrap_or_default().to_string())
    })
}

#[test]
fn python_source_reads_json_lines_into_a_topic_exactly() {
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.jsonl"), unique("py-src"));
    let lines: Vec<String> = (0..500).map(|i| format!(r#"{{"id":{i},"name":"item {i}"}}"#)).collect();
    write(&input, &(lines.join("\n") + "\n"));
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "py-src",
        &[
            ("connector.class", "jsonl-source".into()),
            ("file", input.display().to_string()),
            ("topic", topic.clone()),
            ("key.field", "id".into()),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("500 records", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 500).then_some(values)
    });
    assert_eq!(utf8(values), lines);
    let status = worker.get("/connectors/py-src/status").unwrap();
    assert_eq!(status["tasks"][0]["state"], "RUNNING", "{status}");
}

#[test]
fn python_sink_writes_every_record_as_a_json_line_exactly() {
    let data = tempfile::tempdir().unwrap();
    let (output, topic) = (data.path().join("out.jsonl"), unique("py-sink"));
    create_topic(&topic, 1, "delete");
    for i in 0..300 {
        produce(&topic, 0, &format!("k{i}"), format!("value {i}").as_bytes());
    }
    let mut s = Standalone::new(&[]);
    let name = unique("py-sink");
    s.add_connector(
        &name,
        &[
            ("connector.class", "jsonl-sink".into()),
            ("file", output.display().to_string()),
            ("topics", topic.clone()),
            ("wasm.fs.write", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    worker.wait("300 lines", Duration::from_secs(60), || (count_lines(&output) >= 300).then_some(()));
    let got: Vec<Value> = read_lines(&output).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let expected: Vec<Value> = (0..300)
        .map(|i| json!({"topic": topic, "partition": 0, "offset": i, "key": format!("k{i}"), "value": format!("value {i}")}))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_python_exception_fails_the_task_with_pythons_message() {
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("bad.jsonl");
    write(&input, "{\"ok\": 1}\nthis is not json\n");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "py-bad",
        &[
            ("connector.class", "jsonl-source".into()),
            ("file", input.display().to_string()),
            ("topic", unique("py-bad")),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let trace = failed_trace(&worker, "py-bad");
    assert!(trace.contains("JSONDecodeError: Expecting value: line 1 column 1 (char 0)"), "{trace}");
    assert!(trace.contains("Traceback"), "the Python traceback is kept: {trace}");
}
