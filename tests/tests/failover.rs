//! Sink tasks fail over as the same member of their consumer group (static membership,
//! KIP-345): a restarted or moved task takes its partitions back at once instead of waiting for
//! the old consumer's session to run out, a task that will not run again gives its place up, and
//! a consumer whose place was taken is fenced and stops its task.
//!
//! Each sink here has a consumer session of two minutes, longer than any wait of these tests:
//! only a task taking its place back, or a member removed, explains partitions read again in
//! time. With dynamic membership each of them would wait for the whole session.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use wharf_e2e::*;

const SESSION: &str = "120000";
/// Far shorter than `SESSION`.
const PATIENCE: Duration = Duration::from_secs(60);

fn lines_of(paths: &[&PathBuf]) -> BTreeSet<String> {
    paths.iter().flat_map(|p| read_lines(p)).collect()
}

fn file_sink(topic: &str, output: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("connector.class", "file-sink".into()),
        ("file", output.display().to_string()),
        ("topics", topic.into()),
        ("wasm.fs.write", output.parent().unwrap().display().to_string()),
        ("consumer.override.session.timeout.ms", SESSION.into()),
    ]
}

#[test]
fn a_standalone_sink_killed_and_restarted_reads_again_at_once_and_loses_nothing() {
    let topic = unique("failover-alone");
    create_topic(&topic, 2, "delete");
    let mut w = Standalone::new(&[("offset.flush.interval.ms", "300".into())]);
    let output = w.path("out.txt");
    w.add_connector("failover-sink", &file_sink(&topic, &output));
    let stream = CountedStream::start(&topic, 2);
    let mut worker = w.start();
    worker.wait("lines in the sink's file", PATIENCE, || (count_lines(&output) >= 200).then_some(()));
    assert!(worker.log().contains("joins group connect-failover-sink as static member"), "{}", worker.log());

    worker.kill_9();
    let killed = Instant::now();
    let at_kill = count_lines(&output);
    let restarted = w.start();
    restarted.wait("the restarted sink writing again", PATIENCE, || (count_lines(&output) > at_kill).then_some(()));
    println!(
        "standalone: kill -9, restart, first record written again after {:.1} s (consumer session.timeout.ms={SESSION})",
        killed.elapsed().as_secs_f64()
    );

    let written: BTreeSet<String> = stream.stop().into_iter().collect();
    restarted.wait("every line written, in the sink's file", PATIENCE, || {
        written.is_subset(&lines_of(&[&output])).then_some(())
    });
}

#[test]
fn a_lower_task_count_frees_the_removed_tasks_partitions_at_once() {
    let topic = unique("failover-shrink");
    create_topic(&topic, 2, "delete");
    let w = Standalone::new(&[("offset.flush.interval.ms", "300".into())]);
    let output = w.path("out.txt");
    let [first, second] = [0, 1].map(|i| w.path(&format!("out.txt.{i}")));
    let config = |tasks: &str| {
        json!({
            "connector.class": "test-flaky-sink",
            "file": output.display().to_string(),
            "file.per.task": "true",
            "fail.every": "1000000000",
            "tasks.max": tasks,
            "topics": topic,
            "wasm.fs.write": w.dir.path().display().to_string(),
            "consumer.override.session.timeout.ms": SESSION,
        })
    };
    let stream = CountedStream::start(&topic, 2);
    let worker = w.start();
    let (code, body, _) = worker.call("PUT", "/connectors/shrinking/config", Some(&config("2").to_string()));
    assert_eq!(code, 201, "{body}");
    // Each task reads one of the two partitions.
    worker.wait("both tasks writing", PATIENCE, || (count_lines(&first) > 0 && count_lines(&second) > 0).then_some(()));

    let (code, body, _) = worker.call("PUT", "/connectors/shrinking/config", Some(&config("1").to_string()));
    assert_eq!(code, 200, "{body}");
    let lowered = Instant::now();
    worker.wait("task 0 reading both partitions", PATIENCE, || {
        let lines = read_lines(&first);
        let after = &lines[lines.len().saturating_sub(200)..];
        (after.iter().any(|l| l.starts_with("p0-")) && after.iter().any(|l| l.starts_with("p1-"))).then_some(())
    });
    println!("tasks.max 2 → 1: the remaining task read both partitions after {:.1} s", lowered.elapsed().as_secs_f64());
    // The removal's answer is logged after the coordinator acted on it, so after the move too.
    worker.wait("the removed task's member leaving its group", PATIENCE, || {
        worker.log().contains("left group connect-shrinking for good").then_some(())
    });

    let written: BTreeSet<String> = stream.stop().into_iter().collect();
    worker.wait("every line written, in the sinks' files", PATIENCE, || {
        written.is_subset(&lines_of(&[&first, &second])).then_some(())
    });
}

#[test]
fn a_consumer_whose_place_another_took_is_fenced_and_stops_its_task() {
    // Two standalone workers run a connector of one name in one group, with one
    // group.instance.id given: the second to join takes the place, and the first stops.
    let topic = unique("failover-fenced");
    create_topic(&topic, 1, "delete");
    let stream = CountedStream::start(&topic, 1);
    let mut homes = [Standalone::new(&[]), Standalone::new(&[])];
    let outputs = [homes[0].path("out.txt"), homes[1].path("out.txt")];
    for (home, output) in homes.iter_mut().zip(&outputs) {
        let mut config = file_sink(&topic, output);
        config.push(("consumer.override.group.instance.id", "shared".into()));
        home.add_connector("twin", &config);
    }
    let first = homes[0].start();
    first.wait("the first worker's sink writing", PATIENCE, || (count_lines(&outputs[0]) > 0).then_some(()));
    let second = homes[1].start();
    second.wait("the second worker's sink writing", PATIENCE, || (count_lines(&outputs[1]) > 0).then_some(()));

    let failed = first.wait_task_state("twin", 0, "FAILED");
    let trace = failed["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("was fenced") && trace.contains("group.instance.id=shared-twin-0"), "{trace}");
    assert_eq!(second.task_state_now("twin", 0).0, "RUNNING");
    // The fenced task writes nothing more, while the one that took its place goes on.
    let (stopped_at, going_at) = (count_lines(&outputs[0]), count_lines(&outputs[1]));
    second.wait("more lines from the second worker", PATIENCE, || {
        (count_lines(&outputs[1]) > going_at + 100).then_some(())
    });
    assert_eq!(count_lines(&outputs[0]), stopped_at, "the fenced task wrote after it stopped");
    drop(stream);
}

#[test]
fn a_sink_whose_worker_is_killed_reads_again_on_another_within_the_worker_groups_failover() {
    let d = Distributed::new(&quick_failover(2000));
    let others: Vec<Distributed> = (0..2).map(|_| d.again(&quick_failover(2000))).collect();
    let mut workers = [d.start(), others[0].start(), others[1].start()];
    let topic = unique("failover-cluster");
    create_topic(&topic, 2, "delete");
    let data = tempfile::tempdir().unwrap();
    let output = data.path().join("out.txt");
    let config: serde_json::Map<String, serde_json::Value> =
        file_sink(&topic, &output).into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    let stream = CountedStream::start(&topic, 2);
    let body = json!({"name": "moving", "config": config});
    let (code, answer, _) = workers[0].call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    let owner = workers[0].wait("the sink RUNNING", PATIENCE, || {
        let (state, task) = workers[0].task_state("moving", 0)?;
        (state == "RUNNING").then(|| task["worker_id"].as_str().unwrap_or_default().to_string())
    });
    workers[0].wait("lines in the sink's file", PATIENCE, || (count_lines(&output) >= 200).then_some(()));

    let victim = workers.iter().position(|w| format!("127.0.0.1:{}", w.port) == owner).unwrap();
    workers[victim].kill_9();
    let killed = Instant::now();
    let at_kill = count_lines(&output);
    let watcher = &workers[(victim + 1) % 3];
    watcher
        .wait("the sink writing again on another worker", PATIENCE, || (count_lines(&output) > at_kill).then_some(()));
    println!(
        "cluster: kill -9 of the sink's worker, first record written again after {:.1} s (worker session.timeout.ms=3000, \
         scheduled.rebalance.max.delay.ms=2000, consumer session.timeout.ms={SESSION})",
        killed.elapsed().as_secs_f64()
    );
    let (state, task) = watcher.task_state_now("moving", 0);
    assert_eq!(state, "RUNNING");
    assert_ne!(task["worker_id"], owner);

    let written: BTreeSet<String> = stream.stop().into_iter().collect();
    watcher.wait("every line written, in the sink's file", PATIENCE, || {
        written.is_subset(&lines_of(&[&output])).then_some(())
    });
}
