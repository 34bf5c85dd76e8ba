//! Hostile plugins and hostile requests against a distributed worker that also runs a healthy
//! datagen connector (the canary). Each test checks the attack's outcome (refused, or its task
//! FAILED with a reason naming what it tried), that the worker answers the next request, and that
//! the canary kept running.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wharf_e2e::*;

fn failed_trace(worker: &Worker, name: &str) -> String {
    worker.wait_task_state(name, 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string()
}

/// Waits for the connector itself (not a task) to be FAILED; its trace.
fn connector_failed_trace(worker: &Worker, name: &str) -> String {
    let status = worker.wait(&format!("connector {name} to fail"), Duration::from_secs(60), || {
        let status = worker.get(&format!("/connectors/{name}/status"))?;
        (status["connector"]["state"] == "FAILED").then_some(status)
    });
    status["connector"]["trace"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_plugin_cannot_write_kafkas_or_the_workers_internal_topics() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let canary = canary(&worker);
    // A record that, read back from the config topic, would create a connector with any grant.
    let forged = json!({"properties": {"name": "pwn", "connector.class": "test-misbehaver",
        "behaviour": "read", "topic": "loot", "target": "/etc/hostname", "wasm.fs.read": "/"}})
    .to_string();
    let targets = [
        (d.topics[0].as_str(), "the worker's config.storage.topic"),
        (d.topics[1].as_str(), "the worker's offset.storage.topic"),
        (d.topics[2].as_str(), "the worker's status.storage.topic"),
        ("__consumer_offsets", "an internal topic of Kafka"),
        ("__transaction_state", "an internal topic of Kafka"),
    ];
    for (i, (topic, what)) in targets.iter().enumerate() {
        let name = format!("forger-{i}");
        let config = json!({"connector.class": "test-misbehaver", "behaviour": "forge", "topic": topic,
            "target": "connector-pwn", "value": forged});
        let (code, answer) = create(&worker, &name, config);
        assert_eq!(code, 201, "{answer}");
        let trace = failed_trace(&worker, &name);
        assert!(trace.contains(&format!("topic \"{topic}\" is {what}")), "{name}: {trace}");
    }
    let forged_records = topic_records(&d.topics[0]).into_iter().filter(|(_, key, _)| key == "connector-pwn").count();
    assert_eq!(forged_records, 0, "a forged record reached the config topic");
    let names = worker.get("/connectors").unwrap();
    assert!(!names.as_array().unwrap().iter().any(|n| n == "pwn"), "{names}");
    assert_unharmed(&worker, &canary);
}

#[test]
fn a_sink_cannot_read_the_workers_internal_topics() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let out = tempfile::tempdir().unwrap();
    for topic in [d.topics[0].as_str(), "__consumer_offsets"] {
        let config = json!({"connector.class": "file-sink", "topics": format!("ordinary,{topic}"),
            "file": out.path().join("out.txt").display().to_string(),
            "wasm.fs.write": out.path().display().to_string()});
        let (code, answer) = create(&worker, &unique("reader"), config);
        assert_eq!(code, 400, "{answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("\"topics\" names \"{topic}\"")), "{message}");
    }
}

#[test]
fn names_that_read_as_another_name_are_refused_and_the_worker_keeps_serving() {
    let d = Distributed::new(&[]);
    let mut worker = d.start();
    let canary = canary(&worker);
    let datagen = || json!({"connector.class": "datagen", "topic": unique("names"), "rate": "1"});
    let (code, answer) = create(&worker, "x", datagen());
    assert_eq!(code, 201, "{answer}");
    for name in ["x ", " x", "x\t", "x\r\nSet-Cookie: a=b", "..", "x\u{202e}"] {
        let (code, answer) = create(&worker, name, datagen());
        assert_eq!(code, 400, "{name:?}: {answer}");
        assert!(answer["message"].as_str().unwrap_or_default().contains("connector name"), "{answer}");
    }
    let (code, answer, _) = worker.call("PUT", "/connectors/x/pause", None);
    assert_eq!(code, 202, "{answer}");
    worker.wait("x to be PAUSED", Duration::from_secs(30), || {
        (worker.get("/connectors/x/status")?["connector"]["state"] == "PAUSED").then_some(())
    });

    // Records an older worker (or anyone who can write the topic) left behind: a name with a
    // trailing space, and a config under one name that names another. Replayed after a restart,
    // they are skipped with a line naming the key, and x can still be changed and deleted.
    let config = |name: &str| {
        json!({"properties": {"name": name, "connector.class": "datagen", "topic": "t"}}).to_string().into_bytes()
    };
    produce(&d.topics[0], 0, "connector-x ", &config("x "));
    produce(&d.topics[0], 0, "connector-y", &config("x"));
    worker.terminate();
    let worker = d.start();
    let log = worker.wait("the replay to skip both records", Duration::from_secs(30), || {
        let log = worker.log();
        (log.contains("key \"connector-x \"") && log.contains("key \"connector-y\"")).then_some(log)
    });
    assert!(log.contains("has whitespace before or after it"), "{log}");
    let names = worker.get("/connectors").unwrap();
    assert_eq!(names.as_array().unwrap().iter().filter(|n| *n == "x" || *n == "y").count(), 1, "{names}");
    let (code, answer, _) = worker.call("PUT", "/connectors/x/resume", None);
    assert_eq!(code, 202, "{answer}");
    let (code, answer, _) = worker.call("DELETE", "/connectors/x", None);
    assert_eq!(code, 204, "{answer}");
    assert_unharmed(&worker, &canary);
}

#[test]
fn tasks_beyond_the_workers_ceilings_are_refused_or_failed() {
    let d = Distributed::new(&[("wharf.tasks.max.per.worker", "3".into())]);
    let worker = d.start();
    let canary = canary(&worker);
    let (code, answer) =
        create(&worker, "boom", json!({"connector.class": "datagen", "topic": unique("boom"), "tasks.max": "1000000"}));
    assert_eq!(code, 400, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("tasks.max=1000000 is above this worker's ceiling wharf.tasks.max.per.connector=256"),
        "{message}"
    );

    // The canary runs one task; two more fit under the worker's ceiling of three.
    let (code, answer) =
        create(&worker, "wide", json!({"connector.class": "datagen", "topic": unique("wide"), "tasks.max": "3"}));
    assert_eq!(code, 201, "{answer}");
    let states = worker.wait("the three tasks of wide to settle", Duration::from_secs(60), || {
        let states: Vec<String> =
            (0..3).map(|id| worker.task_state("wide", id).map(|(s, _)| s)).collect::<Option<_>>()?;
        (!states.iter().any(|s| s == "UNASSIGNED")).then_some(states)
    });
    assert_eq!(states.iter().filter(|s| *s == "RUNNING").count(), 2, "{states:?}");
    let failed = (0..3).find(|id| worker.task_state_now("wide", *id).0 == "FAILED").unwrap();
    let trace = worker.task_state_now("wide", failed).1["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("wharf.tasks.max.per.worker=3"), "{trace}");
    assert_unharmed(&worker, &canary);
}

/// A raw HTTP/1.1 request, so that a test controls every header (Host, Origin, Content-Type)
/// as a browser would send them. Returns the status code and the whole answer.
fn raw_request(port: u16, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let code = answer.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, answer)
}

#[test]
fn web_pages_cannot_drive_the_rest_api() {
    let d = Distributed::new(&[("access.control.allow.origin", "https://ui.example".into())]);
    let worker = d.start();
    let canary = canary(&worker);
    let port = worker.port;
    let body = json!({"name": "csrf", "config": {"connector.class": "datagen", "topic": unique("csrf")}}).to_string();
    let post = |headers: &str| {
        raw_request(
            port,
            &format!(
                "POST /connectors HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    // A form or fetch(no-cors) from any page: a "simple" request, sent without asking first.
    let (code, answer) = post("Content-Type: text/plain\r\n");
    assert_eq!(code, 415, "{answer}");
    assert!(answer.contains("Content-Type: application/json"), "{answer}");
    let (code, answer) = post("Content-Type: application/json\r\nOrigin: https://evil.example\r\n");
    assert_eq!(code, 403, "{answer}");
    assert!(answer.contains("access.control.allow.origin"), "{answer}");
    // DNS rebinding: the page's own name, resolved to 127.0.0.1.
    let (code, answer) = raw_request(
        port,
        "GET /connectors?expand=info HTTP/1.1\r\nHost: rebound.evil.example:8083\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 403, "{answer}");
    assert!(!worker.get("/connectors").unwrap().as_array().unwrap().iter().any(|n| n == "csrf"));

    // The origin the operator allowed works, with CORS answers.
    let (code, answer) = raw_request(
        port,
        &format!(
            "OPTIONS /connectors HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: https://ui.example\r\n\
             Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(code, 204, "{answer}");
    assert!(answer.to_ascii_lowercase().contains("access-control-allow-origin: https://ui.example"), "{answer}");
    let (code, answer) = post("Content-Type: application/json\r\nOrigin: https://ui.example\r\n");
    assert_eq!(code, 201, "{answer}");
    assert_unharmed(&worker, &canary);
}

#[test]
fn password_values_are_hidden_in_every_answer_and_kept_when_sent_back_hidden() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let topic = unique("secretive");
    let config = json!({"connector.class": "test-misbehaver", "behaviour": "forge", "topic": topic,
        "target": "k", "value": "v", "secret": "hunter2"});
    let (code, answer) = create(&worker, "secretive", config.clone());
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["config"]["secret"], "[hidden]", "{answer}");
    worker.wait_task_state("secretive", 0, "RUNNING");
    let answers = [
        worker.get("/connectors/secretive").unwrap(),
        worker.get("/connectors/secretive/config").unwrap(),
        worker.get("/connectors/secretive/tasks").unwrap(),
        worker.get("/connectors?expand=info").unwrap(),
        worker.call("PUT", "/connector-plugins/test-misbehaver/config/validate", Some(&config.to_string())).1,
    ];
    for answer in &answers {
        let text = answer.to_string();
        assert!(!text.contains("hunter2") && text.contains("[hidden]"), "{text}");
    }
    // Get, edit, put: the hidden value stands for the stored one.
    let mut edited = worker.get("/connectors/secretive/config").unwrap();
    edited["value"] = json!("v2");
    let (code, answer, _) = worker.call("PUT", "/connectors/secretive/config", Some(&edited.to_string()));
    assert_eq!(code, 200, "{answer}");
    let stored = topic_records(&d.topics[0])
        .into_iter()
        .filter(|(_, key, _)| key == "connector-secretive")
        .filter_map(|(_, _, value)| serde_json::from_str::<Value>(&value?).ok())
        .next_back()
        .unwrap();
    assert_eq!(stored["properties"]["secret"], "hunter2", "{stored}");
    assert_eq!(stored["properties"]["value"], "v2", "{stored}");
    assert!(!worker.log().contains("hunter2"), "the secret reached the log");
}

/// The worker's open file descriptors, from /proc.
fn open_files(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn a_handle_flood_fails_its_task_at_the_handle_limit() {
    let d = Distributed::new(&[("wasm.max.host.handles", "256".into())]);
    let worker = d.start();
    let canary = canary(&worker);
    let files_before = open_files(worker.pid());
    let (code, answer) = create(
        &worker,
        "flood",
        json!({"connector.class": "test-misbehaver", "behaviour": "handles", "topic": unique("h")}),
    );
    assert_eq!(code, 201, "{answer}");
    let trace = failed_trace(&worker, "flood");
    assert!(trace.contains("resource table has no free keys: the plugin holds wasm.max.host.handles=256"), "{trace}");
    // TCP is not even available to a plugin without a wasm.net.connect grant, so sockets cannot
    // pile up either; the worker holds about the files it held before.
    assert!(
        open_files(worker.pid()) < files_before + 50,
        "{} files open, {files_before} before",
        open_files(worker.pid())
    );
    assert_unharmed(&worker, &canary);
}

/// Threads of the worker whose names start with one of `prefixes` (names are cut at 15 bytes).
fn threads_named(pid: i32, prefixes: &[&str]) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| prefixes.iter().any(|p| name.starts_with(p)))
        .count()
}

#[test]
fn plugin_calls_that_sleep_end_on_the_call_deadline() {
    let d = Distributed::new(&[("wasm.call.timeout.ms", "2000".into())]);
    let worker = d.start();
    let canary = canary(&worker);
    let sleeper = |call: &str| json!({"connector.class": "test-misbehaver", "behaviour": "read", "topic": unique("s"), "sleep.in": call});
    let deadline = "exceeded wasm.call.timeout.ms=2000 in";

    // Validation, alone and as part of a create, answers once the deadline has passed.
    let asked = Instant::now();
    let (code, answer, _) = worker.call(
        "PUT",
        "/connector-plugins/test-misbehaver/config/validate",
        Some(&sleeper("validate").to_string()),
    );
    assert_eq!(code, 500, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains(&format!("{deadline} validate")), "{answer}");
    assert!(asked.elapsed() < Duration::from_secs(10), "validate took {:?}", asked.elapsed());
    let asked = Instant::now();
    let (code, answer) = create(&worker, "slow-validate", sleeper("validate"));
    assert!(code >= 400, "{code} {answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains(&format!("{deadline} validate")), "{answer}");
    assert!(asked.elapsed() < Duration::from_secs(10), "create took {:?}", asked.elapsed());

    // Splitting into tasks fails the connector; opening and polling fail their task.
    let asked = Instant::now();
    let (code, answer) = create(&worker, "slow-split", sleeper("task-configs"));
    assert_eq!(code, 201, "{answer}");
    // Writes do not wait for the plugin calls that follow them, nor does a task restart, which
    // the herder's thread carries out: the plugin's calls run off it.
    std::thread::sleep(Duration::from_millis(300));
    let (code, answer, _) = worker.call("POST", "/connectors/canary/tasks/0/restart", None);
    assert_eq!(code, 204, "restart: {answer}");
    for action in ["pause", "resume"] {
        let (code, answer, _) = worker.call("PUT", &format!("/connectors/canary/{action}"), None);
        assert_eq!(code, 202, "{action}: {answer}");
    }
    assert!(asked.elapsed() < Duration::from_millis(1500), "the writes took {:?}", asked.elapsed());
    let trace = connector_failed_trace(&worker, "slow-split");
    assert!(trace.contains(&format!("{deadline} task-configs")), "{trace}");
    for call in ["open", "poll"] {
        let name = format!("slow-{call}");
        let (code, answer) = create(&worker, &name, sleeper(call));
        assert_eq!(code, 201, "{answer}");
        let trace = failed_trace(&worker, &name);
        assert!(trace.contains(&format!("{deadline} {call}")), "{name}: {trace}");
    }

    // A task deleted while its plugin sleeps gives its threads back.
    let (code, answer) = create(&worker, "napper", sleeper("poll"));
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("napper", 0, "RUNNING");
    let napper_threads = ["task-napper-0", "napper-0-"];
    assert!(threads_named(worker.pid(), &napper_threads) > 0, "the napper's threads were not found");
    let (code, answer, _) = worker.call("DELETE", "/connectors/napper", None);
    assert_eq!(code, 204, "{answer}");
    worker.wait("the napper's threads to end", Duration::from_secs(30), || {
        (threads_named(worker.pid(), &napper_threads) == 0).then_some(())
    });
    assert_unharmed(&worker, &canary);
}

#[test]
fn a_log_flood_is_bounded_and_cannot_forge_lines() {
    let d = Distributed::new(&[("wasm.log.lines.per.second", "50".into())]);
    let worker = d.start();
    let canary = canary(&worker);
    let started = Instant::now();
    let (code, answer) = create(
        &worker,
        "chatter",
        json!({"connector.class": "test-misbehaver", "behaviour": "log-flood", "topic": unique("l")}),
    );
    assert_eq!(code, 201, "{answer}");
    worker.wait("lines to be dropped", Duration::from_secs(30), || {
        worker
            .log()
            .contains("log line(s) of the plugin's: it logged more than wasm.log.lines.per.second=50")
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let log = worker.log();
    let seconds = started.elapsed().as_secs() + 2;
    let flood_lines = log.lines().filter(|l| l.contains("FORGED-BY-PLUGIN") || l.contains("FORGED-ON-STDERR")).count();
    assert!(flood_lines as u64 <= 50 * seconds, "{flood_lines} flood lines logged in about {seconds} s");
    assert!(flood_lines > 0, "no line of the plugin's was logged");
    let forged: Vec<&str> = log.lines().filter(|l| l.starts_with("2026-01-01T00:00:00Z")).collect();
    assert!(forged.is_empty(), "the plugin forged log lines: {forged:?}");
    assert!(log.contains("\\n2026-01-01T00:00:00Z ERROR wharf: FORGED-BY-PLUGIN"), "newlines are not shown escaped");
    assert!(log.contains("more bytes cut at wasm.log.line.max.bytes=8192"), "the long line was not cut");
    assert_eq!(worker.task_state_now("chatter", 0).0, "RUNNING");
    assert_unharmed(&worker, &canary);
}

#[test]
fn a_connector_that_generates_a_million_task_configs_fails_saying_so() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let canary = canary(&worker);
    let (code, answer) = create(
        &worker,
        "splitter",
        json!({"connector.class": "test-misbehaver", "behaviour": "read", "topic": unique("t"),
            "tasks.max": "4", "task.configs": "1000000"}),
    );
    assert_eq!(code, 201, "{answer}");
    let trace = connector_failed_trace(&worker, "splitter");
    assert!(trace.contains("generated 1000000 task configurations, more than tasks.max=4"), "{trace}");
    assert_eq!(worker.get("/connectors/splitter/tasks").unwrap(), json!([]));
    assert_unharmed(&worker, &canary);
}

#[test]
fn expensive_calls_past_the_bound_wait_then_are_answered_429() {
    let d = Distributed::new(&[
        ("wharf.rest.max.concurrent.expensive", "1".into()),
        ("wasm.call.timeout.ms", "15000".into()),
    ]);
    let worker = d.start();
    let canary = canary(&worker);
    let slow = json!({"connector.class": "test-misbehaver", "behaviour": "read", "topic": "t", "sleep.in": "validate"});
    let port = worker.port;
    let first = std::thread::spawn(move || {
        let body = slow.to_string();
        raw_request(
            port,
            &format!(
                "PUT /connector-plugins/test-misbehaver/config/validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: \
                 application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    });
    std::thread::sleep(Duration::from_secs(2));
    let quick = json!({"connector.class": "test-misbehaver", "behaviour": "read", "topic": "t"});
    let asked = Instant::now();
    let (code, answer, headers) =
        worker.call("PUT", "/connector-plugins/test-misbehaver/config/validate", Some(&quick.to_string()));
    assert_eq!(code, 429, "{answer}");
    assert!(
        answer["message"].as_str().unwrap_or_default().contains("wharf.rest.max.concurrent.expensive=1"),
        "{answer}"
    );
    assert!(headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("retry-after") && v == "1"), "{headers:?}");
    assert!(asked.elapsed() >= Duration::from_secs(9), "answered after {:?}", asked.elapsed());
    // Reads are not held back, and once the slow call ends the next one runs.
    assert_eq!(worker.call("GET", "/connectors", None).0, 200);
    let (first_code, _) = first.join().unwrap();
    assert_eq!(first_code, 500);
    let (code, answer, _) =
        worker.call("PUT", "/connector-plugins/test-misbehaver/config/validate", Some(&quick.to_string()));
    assert_eq!(code, 200, "{answer}");
    assert_unharmed(&worker, &canary);
}

#[test]
fn grants_stay_inside_the_operators_ceiling_and_away_from_the_workers_files() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let canary = canary(&worker);
    let temp = std::env::temp_dir().display().to_string();
    let link = d.path("to-etc");
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    let worker_dir = d.worker_dir.path().display().to_string();
    let cases = [
        ("wasm.fs.read", "/etc".to_string(), format!("wasm.fs.read=/etc is outside what this worker allows: wasm.ceiling.fs.read is {temp}")),
        ("wasm.fs.write", "/etc".to_string(), format!("wasm.fs.write=/etc is outside what this worker allows: wasm.ceiling.fs.write is {temp}")),
        ("wasm.fs.read", link.display().to_string(), "(resolved: /etc) is outside what this worker allows".to_string()),
        ("wasm.fs.read", format!("{temp}/../etc"), "contains \"..\"".to_string()),
        ("wasm.fs.write", worker_dir.clone(), format!("{worker_dir} would give the connector the worker's own config file")),
        ("wasm.fs.read", temp.clone(), "would give the connector the worker's own".to_string()),
        ("wasm.net.connect", "10.0.0.1:22".to_string(), "wasm.net.connect=10.0.0.1:22 is outside what this worker allows: wasm.ceiling.net.connect is 127.0.0.1:*, localhost:*".to_string()),
        ("wasm.http.allow", "example.com:80".to_string(), "wasm.http.allow=example.com:80 is outside what this worker allows: wasm.ceiling.http.allow is".to_string()),
    ];
    for (i, (key, value, says)) in cases.iter().enumerate() {
        let config = json!({"connector.class": "test-misbehaver", "behaviour": "read", "topic": "t", "target": "/etc/hostname", *key: value});
        let (code, answer) = create(&worker, &format!("grabby-{i}"), config.clone());
        assert_eq!(code, 400, "{key}={value}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(says.as_str()), "{key}={value}: {message}");
        let (code, answer, _) =
            worker.call("PUT", "/connector-plugins/test-misbehaver/config/validate", Some(&config.to_string()));
        assert_eq!(code, 200, "{answer}");
        assert!(answer["error_count"].as_u64().unwrap_or(0) >= 1, "validate of {key}={value}: {answer}");
    }
    // Inside the ceiling, the grant works.
    std::fs::write(d.path("data.txt"), "inside\n").unwrap();
    let topic = unique("inside");
    let (code, answer) = create(
        &worker,
        "reader",
        json!({"connector.class": "test-misbehaver", "behaviour": "read", "topic": topic,
            "target": d.path("data.txt").display().to_string(), "wasm.fs.read": d.dir.path().display().to_string()}),
    );
    assert_eq!(code, 201, "{answer}");
    worker.wait("the granted file's line", Duration::from_secs(30), || {
        topic_values(&topic).iter().any(|v| v == b"inside").then_some(())
    });
    assert!(worker
        .get("/connectors")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .all(|n| !n.as_str().unwrap_or("").starts_with("grabby")));
    assert_unharmed(&worker, &canary);
}

#[test]
fn concurrent_creates_of_one_name_give_one_connector() {
    let d = Distributed::new(&[]);
    let worker = d.start();
    let port = worker.port;
    let creators: Vec<_> = (0..6)
        .map(|i| {
            std::thread::spawn(move || {
                let body =
                    json!({"name": "twin", "config": {"connector.class": "datagen", "topic": format!("twin-{i}"),
                    "rate": "1"}})
                    .to_string();
                let request = format!(
                    "POST /connectors HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \
                     {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                raw_request(port, &request).0
            })
        })
        .collect();
    let mut codes: Vec<u16> = creators.into_iter().map(|c| c.join().unwrap()).collect();
    codes.sort();
    assert_eq!(codes, [201, 409, 409, 409, 409, 409]);
}
