//! Plugins under sustained load through Kafka, on a real worker: the shipped Python sink over a
//! million records in one task with flat memory, and `wasm.instance.recycle.records` replacing a
//! task's instance without losing or repeating a record.
//!
//! The Python sink runs as docs/plugins/python.md tells operators to run it: componentize-py's
//! runtime keeps 16 bytes of every empty list the host hands over (a record without headers
//! carries one), which over a million records moved the worker's resident memory from 226 MiB to
//! 262 MiB in one instance; with `wasm.instance.recycle.records` the task replaces its instance
//! every 250,000 records and stays flat.

use std::collections::BTreeSet;
use std::fs;
use std::time::Duration;

use serde_json::Value;
use wharf_e2e::*;

const JSON: &str = "org.apache.kafka.connect.json.JsonConverter";

/// The worker's resident memory in bytes, from `/proc/PID/status`.
fn resident_bytes(worker: &Worker) -> u64 {
    let status = fs::read_to_string(format!("/proc/{}/status", worker.pid())).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib * 1024
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Waits until datagen wrote `count` records to `topic`.
fn wait_written(worker: &Worker, topic: &str, count: i64) {
    worker.wait(&format!("{count} records in {topic}"), Duration::from_secs(600), || {
        (topic_count(topic) >= count).then_some(())
    });
}

#[test]
fn the_python_sink_moves_a_million_structs_through_one_task_with_flat_memory_recycling_its_instance() {
    const RECORDS: usize = 1_000_000;
    let topic = unique("sustained-py");
    create_topic(&topic, 1, "delete");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "make",
        &[
            ("connector.class", "datagen".into()),
            ("topic", topic.clone()),
            ("count", RECORDS.to_string()),
            ("value.format", "struct".into()),
            ("value.converter", JSON.into()),
        ],
    );
    let worker = s.start();
    // The records are all in Kafka before the sink starts: what the worker holds then is the
    // sink's alone.
    wait_written(&worker, &topic, RECORDS as i64);
    let output = s.path("out.jsonl");
    let (status, answer) = create(
        &worker,
        "py-sink",
        serde_json::json!({
            "connector.class": "jsonl-sink",
            "topics": topic,
            "file": output.display().to_string(),
            "value.converter": JSON,
            "wasm.fs.write": s.dir.path().display().to_string(),
            "wasm.instance.recycle.records": "250000",
        }),
    );
    assert_eq!(status, 201, "{answer}");
    // The file grows to hundreds of MiB: it is counted every two seconds.
    let lines = |at_least: usize| {
        wait_for(&format!("{at_least} lines"), Duration::from_secs(900), || {
            let now = count_lines(&output);
            if now < at_least {
                std::thread::sleep(Duration::from_secs(2));
            }
            (now >= at_least).then_some(now)
        })
    };
    // The plateau is taken once the instance was recycled (after 250,000 records): a recycle
    // builds the new instance beside the old, and the allocator keeps that high-water mark.
    // From there to a million, two more recycles and 600,000 records must not add to it.
    lines(400_000);
    let plateau = resident_bytes(&worker);
    lines(RECORDS);
    let end = resident_bytes(&worker);
    eprintln!("worker resident memory: {:.1} MiB at 400,000 lines, {:.1} MiB at 1,000,000", mib(plateau), mib(end));
    let state = worker.task_state_now("py-sink", 0);
    assert_eq!(state.0, "RUNNING", "{}", state.1);
    assert!(
        end <= plateau + 8 * 1024 * 1024,
        "the worker's resident memory grew from {:.1} MiB at 400,000 lines to {:.1} MiB at a million",
        mib(plateau),
        mib(end)
    );
    // Every record exactly once.
    let offsets: BTreeSet<i64> = fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets.len(), RECORDS);
    assert_eq!(count_lines(&output), RECORDS);
    let replaced = worker.log().matches("replaced the plugin's instance with a fresh one").count();
    assert!(replaced >= 3, "the instance was replaced {replaced} times over a million records");
}

#[test]
fn recycled_instances_lose_and_repeat_nothing() {
    const ORDERS: usize = 30_000;
    let (topic, output) = (unique("recycled"), "out.jsonl");
    create_topic(&topic, 1, "delete");
    let mut s = Standalone::new(&[]);
    // A source whose instance is replaced every 5,000 records: it goes on from its stored offset.
    s.add_connector(
        "orders",
        &[
            ("connector.class", "py-orders-source".into()),
            ("topic", topic.clone()),
            ("count", ORDERS.to_string()),
            ("value.converter", JSON.into()),
            ("wasm.instance.recycle.records", "5000".into()),
        ],
    );
    // A sink whose instance is replaced every 5,000 records: it is given its partition again.
    s.add_connector(
        "lines",
        &[
            ("connector.class", "jsonl-sink".into()),
            ("topics", topic.clone()),
            ("file", s.path(output).display().to_string()),
            ("value.converter", JSON.into()),
            ("wasm.instance.recycle.records", "5000".into()),
            ("wasm.fs.write", s.dir.path().display().to_string()),
        ],
    );
    let worker = s.start();
    worker.wait("every order written", Duration::from_secs(300), || {
        (count_lines(&s.path(output)) >= ORDERS).then_some(())
    });
    // Nothing more comes: the source stops at its count, from its stored offset.
    std::thread::sleep(Duration::from_secs(3));
    let ids: Vec<i64> = topic_values(&topic)
        .iter()
        .map(|v| serde_json::from_slice::<Value>(v).unwrap()["payload"]["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, (0..ORDERS as i64).collect::<Vec<_>>(), "each order once, in order");
    let offsets: Vec<i64> = read_lines(&s.path(output))
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, (0..ORDERS as i64).collect::<Vec<_>>(), "each record written once, in order");
    let log = worker.log();
    // Each line says whose it is as Kafka Connect's context does.
    for task in ["[orders|task-0]", "[lines|task-0]"] {
        let replaced = log
            .lines()
            .filter(|l| l.contains("replaced the plugin's instance with a fresh one") && l.contains(task))
            .count();
        assert!(replaced >= 4, "{task}'s instance was replaced {replaced} times over {ORDERS} records:\n{log}");
    }
    for (connector, _) in [("orders", 0), ("lines", 0)] {
        let state = worker.task_state_now(connector, 0);
        assert!(state.0 == "RUNNING" || state.0 == "UNASSIGNED", "{connector}: {}", state.1);
    }
}
