//! Exactly-once sources (KIP-618) on the real broker: workers with
//! `exactly.once.source.support=enabled` write each source task's records and offsets in one
//! transaction, so that a `read_committed` consumer sees every line once, whatever kills the
//! workers; the settings are checked as Kafka Connect checks them; a worker that Kafka would not
//! let use transactions refuses to start, saying why.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

fn exactly_once(delay_ms: u64) -> Vec<(&'static str, String)> {
    let mut settings = quick_failover(delay_ms);
    settings.push(("exactly.once.source.support", "enabled".into()));
    settings
}

/// How many times each line arrived, as a consumer of `isolation` reads the topic now (the
/// values are JSON strings that hold the line).
fn line_counts(topic: &str, isolation: &str) -> BTreeMap<String, usize> {
    line_counts_at(&bootstrap(), topic, isolation)
}

/// The file source's config for the lines of `input`, to `topic`, with `extra` settings.
fn file_source(input: &Path, topic: &str, extra: &[(&str, &str)]) -> Value {
    let mut config = json!({
        "connector.class": "file-source",
        "file": input.display().to_string(),
        "topic": topic,
        "wasm.fs.read": input.parent().map(|p| p.display().to_string()).unwrap_or_default(),
    });
    for (key, value) in extra {
        config[*key] = json!(value);
    }
    config
}

/// How many times each line arrived on the brokers of `bootstrap`, as a consumer of `isolation`
/// reads the topic now.
fn line_counts_at(bootstrap: &str, topic: &str, isolation: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for value in topic_values_at(bootstrap, topic, isolation) {
        let line = String::from_utf8_lossy(&value).trim_matches('"').to_string();
        *counts.entry(line).or_default() += 1;
    }
    counts
}

/// The messages a worker's validate answer puts on `key` for `config` (of the plugin its
/// `connector.class` names), joined by spaces.
fn validation_errors(worker: &Worker, config: &Value, key: &str) -> String {
    let plugin = config["connector.class"].as_str().unwrap_or_default();
    let path = format!("/connector-plugins/{plugin}/config/validate");
    let (code, answer, _) = worker.call("PUT", &path, Some(&config.to_string()));
    assert_eq!(code, 200, "{answer}");
    let entry = answer["configs"].as_array().unwrap().iter().find(|c| c["value"]["name"] == key);
    let errors = entry.map(|e| e["value"]["errors"].clone()).unwrap_or(Value::Null);
    errors.as_array().map(|e| e.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

/// The worker (its REST port) that reports running task 0 of `connector`.
fn runner(worker: &Worker, connector: &str) -> Option<String> {
    let status = worker.get(&format!("/connectors/{connector}/status"))?;
    let task = &status["tasks"][0];
    (task["state"] == "RUNNING").then(|| task["worker_id"].as_str().map(String::from))?
}

#[test]
fn every_line_arrives_once_for_read_committed_consumers_across_kill_9s() {
    let settings = exactly_once(1000);
    let d = Distributed::new(&settings);
    let homes: Vec<Distributed> = [0, 1].iter().map(|_| d.again(&settings)).collect();
    let clusters: Vec<&Distributed> = [&d, &homes[0], &homes[1]].into_iter().collect();
    let mut workers: Vec<Worker> = clusters.iter().map(|c| c.start()).collect();
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("in.txt");
    // Two sources of the same lines: one commits after every batch it polls, the other every
    // second, so that a kill almost always finds a transaction open.
    let boundaries = [("poll", unique("eos-poll"), None), ("interval", unique("eos-interval"), Some("1000"))];
    let (stop_feed, written) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let feeder = feed(&input, stop_feed.clone(), written.clone());
    for (name, topic, interval) in &boundaries {
        create_topic(topic, 3, "delete");
        let mut config = json!({
            "connector.class": "file-source",
            "file": input.display().to_string(),
            "topic": topic,
            "wasm.fs.read": data.path().display().to_string(),
            "transaction.boundary": name,
        });
        if let Some(ms) = interval {
            config["transaction.boundary.interval.ms"] = json!(ms);
        }
        let (code, answer) = create(&workers[0], name, &config);
        assert_eq!(code, 201, "{answer}");
    }

    // Three times: kill -9 the worker that runs one of the tasks while lines keep coming, wait
    // until another runs it, and start the killed one again.
    for (round, connector) in ["interval", "poll", "interval"].into_iter().enumerate() {
        let watcher = &workers[(round + 1) % 3];
        let running = watcher.wait("the source task RUNNING", Duration::from_secs(60), || runner(watcher, connector));
        let victim = workers.iter().position(|w| format!("127.0.0.1:{}", w.port) == running).unwrap();
        // Let it commit a few transactions of its own first.
        let before = written.load(Ordering::Relaxed);
        wait_for("more lines written", Duration::from_secs(30), || {
            (written.load(Ordering::Relaxed) >= before + 1000).then_some(())
        });
        workers[victim].kill_9();
        let survivor = &workers[(victim + 1) % 3];
        survivor.wait("the task RUNNING on another worker", Duration::from_secs(60), || {
            runner(survivor, connector).filter(|now| *now != running)
        });
        println!("round {round}: killed {running}, which ran {connector}-0, mid-stream; the task runs elsewhere");
        workers[victim] = clusters[victim].start();
    }

    stop_feed.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
    let total = written.load(Ordering::Relaxed);
    for (name, topic, _) in &boundaries {
        let counts = workers[0].wait("every line committed", Duration::from_secs(120), || {
            let counts = line_counts(topic, "read_committed");
            (counts.len() >= total).then_some(counts)
        });
        let read: usize = counts.values().sum();
        let duplicates = read - counts.len();
        let missing = (0..total).filter(|i| !counts.contains_key(&format!("line-{i:09}"))).count();
        let uncommitted: usize = line_counts(topic, "read_uncommitted").values().sum();
        // Each transaction ends with a marker, which takes an offset of its own.
        let offsets = topic_count(topic);
        println!(
            "transaction.boundary={name}: {total} lines through 3 kill -9s; read_committed read {read} records \
             ({duplicates} duplicates, {missing} missing), read_uncommitted {uncommitted} (the aborted transactions' \
             records among them); {} offsets hold transaction markers",
            offsets - uncommitted as i64
        );
        assert_eq!(counts.len(), total, "{name}: lines that were never written arrived");
        assert_eq!((duplicates, missing), (0, 0), "{name}");
        assert!(offsets > uncommitted as i64, "{name}: no transaction markers, so no transactions");
        if *name == "interval" {
            assert!(uncommitted > read, "{name}: no kill found a transaction open, so nothing was aborted");
        }
    }
}

#[test]
fn exactly_once_settings_are_checked_as_kafka_connect_checks_them() {
    let data = tempfile::tempdir().unwrap();
    let source = |extra: &[(&str, &str)]| {
        let mut config = json!({
            "name": "checked",
            "connector.class": "file-source",
            "file": data.path().join("in.txt").display().to_string(),
            "topic": unique("eos-checks"),
            "wasm.fs.read": data.path().display().to_string(),
        });
        for (key, value) in extra {
            config[*key] = Value::String(value.to_string());
        }
        config
    };

    // Without exactly-once support on the worker, required is refused, requested is not.
    let plain = Distributed::new(&[]);
    let worker = plain.start();
    let required = source(&[("exactly.once.support", "required")]);
    let message = validation_errors(&worker, &required, "exactly.once.support");
    assert!(message.contains("This worker does not have exactly-once source support enabled"), "{message}");
    let (code, answer) = create(&worker, "checked", &required);
    assert_eq!(code, 400, "{answer}");
    assert!(answer.to_string().contains("exactly-once source support enabled"), "{answer}");
    assert_eq!(
        validation_errors(&worker, &source(&[("exactly.once.support", "requested")]), "exactly.once.support"),
        ""
    );
    drop(worker);

    // With it, the plugin is asked (contract 0.1.8): the file source says it gives exactly-once
    // with a file to read; a plugin that does not say, or says it does not, fails the preflight
    // check in Kafka Connect's words; one that cannot define transaction boundaries may not be
    // asked to.
    let enabled = Distributed::new(&exactly_once(2000));
    let worker = enabled.start();
    assert_eq!(validation_errors(&worker, &required, "exactly.once.support"), "");
    let message = validation_errors(&worker, &source(&[("transaction.boundary", "connector")]), "transaction.boundary");
    assert!(
        message.contains(
            "The connector does not support connector-defined transaction boundaries with the given configuration."
        ),
        "{message}"
    );
    let transactor = |extra: &[(&str, &str)]| {
        let mut config = json!({"name": "said", "connector.class": "test-transactor", "topic": unique("eos-said")});
        for (key, value) in extra {
            config[*key] = Value::String(value.to_string());
        }
        config
    };
    let required_of =
        |answer: &str| transactor(&[("exactly.once.support", "required"), ("answer.exactly.once", answer)]);
    assert_eq!(validation_errors(&worker, &required_of("supported"), "exactly.once.support"), "");
    let message = validation_errors(&worker, &required_of("none"), "exactly.once.support");
    assert!(message.contains("does not implement the API required for preflight validation"), "{message}");
    let message = validation_errors(&worker, &required_of("unsupported"), "exactly.once.support");
    assert!(
        message.contains("The connector does not support exactly-once semantics with the provided configuration."),
        "{message}"
    );
    let boundaries = |answer: &str| transactor(&[("transaction.boundary", "connector"), ("answer.boundaries", answer)]);
    assert_eq!(validation_errors(&worker, &boundaries("supported"), "transaction.boundary"), "");
    let message = validation_errors(&worker, &boundaries("unsupported"), "transaction.boundary");
    assert!(message.contains("does not support connector-defined transaction boundaries"), "{message}");
    // A plugin built before 0.1.8 does not say, and a create is refused as validate is.
    let legacy = json!({"name": "legacy", "connector.class": "test-legacy", "topic": unique("eos-legacy"),
        "exactly.once.support": "required"});
    let (code, answer) = create(&worker, "legacy", &legacy);
    assert_eq!(code, 400, "{answer}");
    assert!(answer.to_string().contains("does not implement the API required for preflight validation"), "{answer}");
    let message = validation_errors(&worker, &source(&[("offsets.storage.topic", "")]), "offsets.storage.topic");
    assert!(message.contains("String must be non-empty"), "{message}");
    let interval = source(&[("transaction.boundary", "interval"), ("transaction.boundary.interval.ms", "200")]);
    let (code, answer) = create(&worker, "checked", &interval);
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("checked", 0, "RUNNING");
    drop(worker);

    // Standalone mode has no exactly-once sources, as in Kafka Connect.
    let standalone = Standalone::new(&[("exactly.once.source.support", "enabled".into())]);
    let (status, log) = standalone.run_to_failure();
    assert!(!status.success());
    assert!(log.contains("standalone mode does not support exactly-once source connectors"), "{log}");
}

#[test]
fn a_worker_kafka_would_not_let_use_transactions_refuses_to_start_and_says_why() {
    // The brokers take transactions of at most transaction.max.timeout.ms (15 minutes).
    let mut settings = exactly_once(2000);
    settings.push(("producer.transaction.timeout.ms", "3600000".into()));
    let (status, log) = Distributed::new(&settings).run_to_failure();
    assert!(!status.success());
    assert!(
        log.contains("exactly.once.source.support=enabled, and Kafka refused transactional id")
            && log.contains("transaction.max.timeout.ms")
            && log.contains("exactly.once.source.support=disabled"),
        "{log}"
    );
    // The same worker without exactly-once support starts.
    let worker = Distributed::new(&[("producer.transaction.timeout.ms", "3600000".into())]).start();
    assert!(worker.get("/").is_some());
}

#[test]
fn a_lower_task_count_fences_the_tasks_it_no_longer_has_and_the_count_is_recorded_as_connect_records_it() {
    let d = Distributed::new(&exactly_once(2000));
    let worker = d.start();
    let topic = unique("eos-datagen");
    let config = |tasks: &str| json!({"connector.class": "datagen", "topic": topic, "rate": "50", "tasks.max": tasks});
    let (code, answer) = create(&worker, "gen", config("4"));
    assert_eq!(code, 201, "{answer}");
    for task in 0..4 {
        worker.wait_task_state("gen", task, "RUNNING");
    }
    // Three numbers go: the leader fences their producers together.
    let (code, answer, _) = worker.call("PUT", "/connectors/gen/config", Some(&config("1").to_string()));
    assert_eq!(code, 200, "{answer}");
    worker.wait("the task the new generation no longer has fenced", Duration::from_secs(60), || {
        let log = worker.log();
        let fencing = log.find("connector gen: fencing the transactional producers of its tasks 1..4")?;
        log[fencing..]
            .contains("connector gen: earlier tasks fenced; 1 task(s) may now write in transactions")
            .then_some(())
    });
    worker.wait_task_state("gen", 0, "RUNNING");
    // Each batch datagen returns is a transaction of its own (transaction.boundary=poll): the
    // sizes of those committed are Connect's transaction-size metrics.
    let labels = r#"connector="gen",task="0""#;
    let (min, max, avg) = worker.wait("transaction sizes", Duration::from_secs(30), || {
        let read = |what: &str| worker.metric(&format!("kafka_connect_source_task_transaction_size_{what}"), labels);
        Some((read("min")?, read("max")?, read("avg")?)).filter(|(min, _, _)| *min > 0.0)
    });
    assert!(min >= 1.0 && min <= avg && avg <= max, "min {min}, avg {avg}, max {max}");
    // Kafka Connect's record, last written for the new generation.
    let counts: Vec<Option<String>> = topic_records(&d.topics[0])
        .into_iter()
        .filter(|(_, key, _)| key == "tasks-fencing-gen")
        .map(|(_, _, value)| value)
        .collect();
    assert_eq!(counts.last(), Some(&Some(r#"{"task-count":1}"#.to_string())), "{counts:?}");
    // The endpoint is the workers' own: a request no member signed is refused.
    let (code, answer, _) = worker.call("PUT", "/connectors/gen/fence", None);
    assert_eq!(code, 403, "{answer}");
    assert!(answer["message"].as_str().unwrap_or("").contains("Internal request missing required signature"));
}

#[test]
fn a_worker_paused_past_its_session_finds_its_task_fenced_and_nothing_it_sent_since_is_read() {
    // The task's transactions last two seconds, so that one is open when its worker is paused;
    // the pause (about 8 s) is far below the producer's transaction.timeout.ms (60 s), so that
    // fencing, not the broker's timeout, ends it.
    let settings = exactly_once(500);
    let d = Distributed::new(&settings);
    let other = d.again(&settings);
    let workers = [d.start(), other.start()];
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.txt"), unique("eos-zombie"));
    create_topic(&topic, 1, "delete");
    let config = file_source(
        &input,
        &topic,
        &[("transaction.boundary", "interval"), ("transaction.boundary.interval.ms", "2000")],
    );
    let (stop_feed, written) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let feeder = feed(&input, stop_feed.clone(), written.clone());
    let (code, answer) = create(&workers[0], "src", &config);
    assert_eq!(code, 201, "{answer}");
    let running = workers[0].wait("the task RUNNING", Duration::from_secs(60), || runner(&workers[0], "src"));
    let paused = workers.iter().position(|w| format!("127.0.0.1:{}", w.port) == running).unwrap();
    let survivor = &workers[1 - paused];
    wait_for("a few transactions", Duration::from_secs(30), || (written.load(Ordering::Relaxed) >= 2000).then_some(()));

    // SAFETY: signals to our own child process.
    unsafe { libc::kill(workers[paused].pid(), libc::SIGSTOP) };
    survivor.wait("the task RUNNING on the other worker", Duration::from_secs(60), || {
        runner(survivor, "src").filter(|now| *now != running)
    });
    let taken_over = written.load(Ordering::Relaxed);
    wait_for("the successor at work", Duration::from_secs(30), || {
        (written.load(Ordering::Relaxed) >= taken_over + 1000).then_some(())
    });
    // SAFETY: as above.
    unsafe { libc::kill(workers[paused].pid(), libc::SIGCONT) };
    let fenced = format!("Kafka fenced the task's transactional producer (transactional.id {}-src-0)", d.group);
    workers[paused].wait("the paused worker's task fenced", Duration::from_secs(60), || {
        workers[paused].log().contains(&fenced).then_some(())
    });

    stop_feed.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
    let total = written.load(Ordering::Relaxed);
    let counts = survivor.wait("every line committed", Duration::from_secs(120), || {
        let counts = line_counts(&topic, "read_committed");
        (counts.len() >= total).then_some(counts)
    });
    let read: usize = counts.values().sum();
    let uncommitted: usize = line_counts(&topic, "read_uncommitted").values().sum();
    println!(
        "{total} lines; read_committed read {read}, read_uncommitted {uncommitted} (the fenced worker's open \
         transaction among them)"
    );
    assert_eq!((read, counts.len()), (total, total), "duplicates or lines never written");
    // Not asserted: a pause in the moment between a commit and the next record finds no open
    // transaction (the fencing above holds either way).
    if uncommitted == read {
        println!("the paused worker had no open transaction when it was paused");
    }
    // The paused worker stays in the cluster; the task runs once.
    survivor.wait("the task RUNNING once", Duration::from_secs(60), || runner(survivor, "src"));
}

#[test]
fn kafka_connect_reads_a_config_topic_wharf_wrote_with_exactly_once_on() {
    let d = Distributed::new(&exactly_once(2000));
    let worker = d.start();
    let data = tempfile::tempdir().unwrap();
    let gen = |tasks: &str| json!({"connector.class": "datagen", "topic": unique("eos-copy"), "rate": "5", "tasks.max": tasks});
    let lines = json!({
        "connector.class": "file-source",
        "file": data.path().join("in.txt").display().to_string(),
        "topic": unique("eos-copy-lines"),
        "wasm.fs.read": data.path().display().to_string(),
    });
    assert_eq!(create(&worker, "gen", gen("2")).0, 201);
    assert_eq!(create(&worker, "lines", &lines).0, 201);
    worker.wait_task_state("gen", 1, "RUNNING");
    worker.wait_task_state("lines", 0, "RUNNING");
    // A second generation of gen's tasks, fenced and recorded again.
    let (code, answer, _) = worker.call("PUT", "/connectors/gen/config", Some(&gen("1").to_string()));
    assert_eq!(code, 200, "{answer}");
    let records = worker.wait("gen's second task count recorded", Duration::from_secs(60), || {
        let records = topic_records(&d.topics[0]);
        records
            .iter()
            .any(|(_, key, value)| key == "tasks-fencing-gen" && value.as_deref() == Some(r#"{"task-count":1}"#))
            .then_some(records)
    });
    assert!(records.iter().any(|(_, key, _)| key == "tasks-fencing-lines"), "{records:?}");

    // The records, as Wharf committed them, into the config topic of a Connect cluster of its own.
    let group = unique("connect-eos-copy");
    create_topic(&format!("{group}-configs"), 1, "compact");
    for (_, key, value) in &records {
        // A tombstone is copied as one: a record without a value.
        match value {
            Some(value) => produce(&format!("{group}-configs"), 0, key, value.as_bytes()),
            None => produce_tombstone(&format!("{group}-configs"), key),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // Connect's INFO log into a file, through the Log4j config scripts/kafka-connect keeps.
    let log_config = std::process::Command::new(workspace().join("scripts/kafka-connect")).arg("log-config").output();
    let log_config = String::from_utf8_lossy(&log_config.unwrap().stdout).trim().to_string();
    let log_file = dir.path().join("connect-worker.log");
    let options =
        [format!("-Dlog4j2.configurationFile={log_config}"), format!("-Dwharf.connect.log={}", log_file.display())];
    let _connect = start_connect_distributed_with(dir.path(), &group, port, None, &options);
    let listed = wait_for("Kafka Connect listing the connectors", Duration::from_secs(120), || {
        let (code, answer) = rest_call(port, "GET", "/connectors", None);
        let mut names: Vec<String> = answer.as_array()?.iter().filter_map(|n| n.as_str().map(String::from)).collect();
        names.sort();
        (code == 200 && !names.is_empty()).then_some(names)
    });
    assert_eq!(listed, ["gen", "lines"]);
    let (_, config) = rest_call(port, "GET", "/connectors/gen/config", None);
    assert_eq!(config["tasks.max"], "1", "{config}");
    // Connect refuses Wharf's own record and cannot load Wharf's plugins; nothing else is wrong.
    std::thread::sleep(Duration::from_secs(3));
    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
    // Each entry of the log: its first line and the lines of its stack trace.
    let mut entries: Vec<String> = Vec::new();
    for line in log.lines() {
        match entries.last_mut() {
            Some(entry) if !line.starts_with('[') => {
                entry.push('\n');
                entry.push_str(line);
            }
            _ => entries.push(line.to_string()),
        }
    }
    let errors: Vec<&String> = entries
        .iter()
        .filter(|entry| entry.lines().next().is_some_and(|first| first.contains(" ERROR ")))
        .filter(|entry| {
            !(entry.contains("Discarding") && entry.contains("invalid key") && entry.contains("wharf-cluster-owner"))
        })
        // Wharf's plugins are no classes of Connect's: neither the connectors nor their tasks load.
        .filter(|entry| !entry.contains("Failed to find any class that implements Connector and which name matches"))
        .filter(|entry| !entry.contains("since it is not a recognizable type (source or sink)"))
        .collect();
    let errors: Vec<&str> = errors.iter().map(|e| e.as_str()).collect();
    assert!(errors.is_empty(), "Kafka Connect's errors on Wharf's config topic:\n{}", errors.join("\n"));
    assert!(log.contains("wharf-cluster-owner"), "Connect did not read Wharf's own record:\n{log}");
}

#[test]
fn a_connectors_own_offsets_topic_takes_over_from_the_workers_and_keeps_a_copy_there() {
    let d = Distributed::new(&exactly_once(2000));
    let worker = d.start();
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.txt"), unique("eos-own"));
    create_topic(&topic, 1, "delete");
    let write = |from: usize, to: usize| {
        let mut file = OpenOptions::new().create(true).append(true).open(&input).unwrap();
        file.write_all((from..to).map(|i| format!("line-{i:09}\n")).collect::<String>().as_bytes()).unwrap();
    };
    let committed = |lines: usize| {
        worker.wait("the lines committed", Duration::from_secs(60), || {
            let counts = line_counts(&topic, "read_committed");
            (counts.values().sum::<usize>() >= lines).then_some(counts)
        })
    };
    write(0, 1000);
    let mut config = json!({
        "connector.class": "file-source",
        "file": input.display().to_string(),
        "topic": topic,
        "wasm.fs.read": data.path().display().to_string(),
    });
    assert_eq!(create(&worker, "src", &config).0, 201);
    committed(1000);

    // A topic of its own from now on: it is empty, so the task goes on from the offset stored in
    // the worker's topic, and no line is read twice.
    let own = unique("src-offsets");
    config["offsets.storage.topic"] = json!(own);
    let (code, answer, _) = worker.call("PUT", "/connectors/src/config", Some(&config.to_string()));
    assert_eq!(code, 200, "{answer}");
    worker.wait("the task restarted", Duration::from_secs(60), || {
        worker.log().contains(&format!("reading the offset topic {own}")).then_some(())
    });
    worker.wait_task_state("src", 0, "RUNNING");
    write(1000, 2000);
    let counts = committed(2000);
    assert_eq!((counts.len(), counts.values().sum::<usize>()), (2000, 2000), "lines read twice or lost");

    // The offset is in the connector's topic, with a copy in the worker's, as Connect keeps them.
    let end = std::fs::metadata(&input).unwrap().len();
    let key = json!(["src", {"filename": input.display().to_string()}]).to_string();
    let last = |topic: &str| {
        topic_records(topic).into_iter().filter(|(_, k, _)| *k == key).filter_map(|(_, _, v)| v).next_back()
    };
    let position = worker.wait("the offset in the connector's own topic", Duration::from_secs(30), || {
        last(&own).filter(|v| v.contains(&format!("\"position\":{end}")))
    });
    assert!(position.contains(&end.to_string()));
    worker.wait("a copy in the worker's offset topic", Duration::from_secs(30), || {
        last(&d.topics[1]).filter(|v| v.contains(&format!("\"position\":{end}")))
    });
    let offsets = worker.get("/connectors/src/offsets").unwrap();
    assert_eq!(offsets["offsets"][0]["offset"]["position"], json!(end), "{offsets}");

    // An existing topic that would delete offsets is refused, as Kafka Connect refuses it.
    let deleting = unique("src-deleting-offsets");
    create_topic(&deleting, 1, "delete");
    let mut other = config.clone();
    other["offsets.storage.topic"] = json!(deleting);
    assert_eq!(create(&worker, "deleting", &other).0, 201);
    let trace = worker.wait_task_state("deleting", 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string();
    assert!(
        trace.contains(&format!("topic '{deleting}' (named by offsets.storage.topic) has cleanup.policy=delete")),
        "{trace}"
    );

    // Neither another cluster's internal topics nor this one's config and status topics.
    config["offsets.storage.topic"] = json!(d.topics[0]);
    let (code, answer, _) = worker.call("PUT", "/connectors/src/config", Some(&config.to_string()));
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or("").contains("offsets.storage.topic names"), "{answer}");
}

#[test]
fn every_line_arrives_once_across_a_broker_restart() {
    let broker = OwnBroker::start();
    let mut settings = exactly_once(1000);
    settings.push(("bootstrap.servers", broker.bootstrap()));
    let d = Distributed::new(&settings);
    let other = d.again(&settings);
    let workers = [d.start(), other.start()];
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.txt"), unique("eos-restart"));
    // A task that a commit failed while the broker was away comes back by itself.
    let config = file_source(
        &input,
        &topic,
        &[
            ("transaction.boundary", "interval"),
            ("transaction.boundary.interval.ms", "500"),
            ("auto.restart.enable", "true"),
            ("auto.restart.backoff.unit.ms", "1000"),
        ],
    );
    let (stop_feed, written) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let feeder = feed(&input, stop_feed.clone(), written.clone());
    assert_eq!(create(&workers[0], "src", &config).0, 201);
    workers[0].wait_task_state("src", 0, "RUNNING");
    wait_for("lines written", Duration::from_secs(30), || (written.load(Ordering::Relaxed) >= 2000).then_some(()));
    broker.restart();
    let after = written.load(Ordering::Relaxed);
    wait_for("more lines written", Duration::from_secs(30), || {
        (written.load(Ordering::Relaxed) >= after + 2000).then_some(())
    });
    stop_feed.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
    let total = written.load(Ordering::Relaxed);
    let counts = workers[0].wait("every line committed", Duration::from_secs(180), || {
        let counts = line_counts_at(&broker.bootstrap(), &topic, "read_committed");
        (counts.len() >= total).then_some(counts)
    });
    let read: usize = counts.values().sum();
    let uncommitted: usize = line_counts_at(&broker.bootstrap(), &topic, "read_uncommitted").values().sum();
    println!("{total} lines through a broker restart: read_committed read {read}, read_uncommitted {uncommitted}");
    assert_eq!((read, counts.len()), (total, total), "duplicates or lines never written");
}

/// The numbers a consumer of `isolation` reads from `topic`, in order (the test transactor's
/// values are the numbers as text).
fn numbers(topic: &str, isolation: &str) -> Vec<i64> {
    topic_values_as(topic, isolation)
        .iter()
        .filter_map(|v| String::from_utf8_lossy(v).trim_matches('"').parse().ok())
        .collect()
}

/// What a source that defines its transactions (`transaction.boundary=connector`) commits and
/// aborts: the transactor ends one after every ten records and aborts every third, so
/// `read_committed` reads the other two thirds once each, and `read_uncommitted` every record;
/// nothing is committed but what the plugin asks (the last five records' transaction never ends),
/// and the aborted records are not polled again. A second source aborts each batch as a whole.
#[test]
fn a_source_that_defines_its_transactions_commits_and_aborts_where_it_asks() {
    let cluster = Distributed::new(&exactly_once(2000));
    let worker = cluster.start();
    let (topic, whole) = (unique("eos-defined"), unique("eos-batches"));
    let config = json!({"connector.class": "test-transactor", "topic": topic, "count": "305",
        "orders.per.transaction": "10", "abort.every.transaction": "3",
        "transaction.boundary": "connector", "exactly.once.support": "required",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"});
    let (code, answer) = create(&worker, "defined", &config);
    assert_eq!(code, 201, "{answer}");
    let batches = json!({"connector.class": "test-transactor", "topic": whole, "count": "100",
        "orders.per.transaction": "1000", "end.batches": "abort", "transaction.boundary": "connector"});
    let (code, answer) = create(&worker, "batches", &batches);
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("defined", 0, "RUNNING");
    let expected: Vec<i64> = (0..300).filter(|n| (n / 10 + 1) % 3 != 0).collect();
    assert_eq!(expected.len(), 200);
    worker.wait("200 committed records", Duration::from_secs(60), || {
        (numbers(&topic, "read_committed").len() >= 200).then_some(())
    });
    worker.wait("every record sent", Duration::from_secs(60), || {
        (numbers(&topic, "read_uncommitted").len() >= 305 && numbers(&whole, "read_uncommitted").len() >= 100)
            .then_some(())
    });
    // Settled: nothing more arrives, and no aborted record comes back on a later poll.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(numbers(&topic, "read_committed"), expected);
    assert_eq!(numbers(&topic, "read_uncommitted"), (0..305).collect::<Vec<i64>>(), "every record sent once");
    assert_eq!(numbers(&whole, "read_committed"), Vec::<i64>::new(), "every batch was aborted");
    assert_eq!(numbers(&whole, "read_uncommitted"), (0..100).collect::<Vec<i64>>());
    // The aborted batches' offsets were committed all the same.
    worker.wait("the aborted batches' offsets", Duration::from_secs(30), || {
        (worker.get("/connectors/batches/offsets")?["offsets"][0]["offset"]["next"] == 99).then_some(())
    });

    // Restarted, the task resumes after the last record of the last transaction that ended,
    // aborted or not: the five records of the transaction left open are sent again, and never
    // committed.
    let (code, _, _) = worker.call("POST", "/connectors/defined/restart?includeTasks=true", None);
    assert!(code == 202 || code == 204, "restart answered {code}");
    assert_eq!(worker.get("/connectors/defined/offsets").unwrap()["offsets"][0]["offset"]["next"], 299);
    let again: Vec<i64> = (0..305).chain(300..305).collect();
    worker.wait("the open transaction's records sent again", Duration::from_secs(60), || {
        (numbers(&topic, "read_uncommitted") == again).then_some(())
    });
    assert_eq!(numbers(&topic, "read_committed"), expected);
}

/// A plugin that breaks the transaction contract fails its task, saying how.
#[test]
fn a_source_that_asks_the_impossible_of_its_transactions_fails_saying_what() {
    let cluster = Distributed::new(&exactly_once(2000));
    let worker = cluster.start();
    for (name, breaks, said) in [
        ("both", "both", "both commit and abort its transaction after record 0"),
        ("beyond", "beyond", "which returned 25 record(s)"),
    ] {
        let config = json!({"connector.class": "test-transactor", "topic": unique("eos-broken"),
            "break": breaks, "transaction.boundary": "connector"});
        let (code, answer) = create(&worker, name, &config);
        assert_eq!(code, 201, "{answer}");
        let trace = worker.wait_task_state(name, 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string();
        assert!(trace.contains(said), "{trace}");
        assert!(trace.contains("transaction-context"), "{trace}");
    }
}

/// The orders ids a consumer of `isolation` reads from `topic`, in order (JSON values, with or
/// without their schema).
fn order_ids(topic: &str, isolation: &str) -> Vec<i64> {
    topic_values_as(topic, isolation)
        .iter()
        .filter_map(|v| serde_json::from_slice::<Value>(v).ok())
        .filter_map(|v| v["payload"]["id"].as_i64().or_else(|| v["id"].as_i64()))
        .collect()
}

/// The Python, JavaScript and C SDKs give their sources the same say over transactions as the
/// Rust SDK: each language's orders example, told to end a transaction after every ten orders
/// and abort every third, says it gives exactly-once delivery and can define its boundaries, and
/// `read_committed` reads the same two thirds of its orders from each.
#[test]
fn sources_of_every_sdk_define_their_transactions_alike() {
    let cluster = Distributed::new(&exactly_once(2000));
    let worker = cluster.start();
    let expected: Vec<i64> = (0..300).filter(|n| (n / 10 + 1) % 3 != 0).collect();
    let mut topics = Vec::new();
    for class in ["py-orders-source", "js-orders-source", "c-orders-source"] {
        let topic = unique(class);
        let config = json!({"connector.class": class, "topic": topic, "count": "300",
            "orders.per.transaction": "10", "abort.every.transaction": "3",
            "transaction.boundary": "connector", "exactly.once.support": "required",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter"});
        let (code, answer) = create(&worker, class, &config);
        assert_eq!(code, 201, "{class}: {answer}");
        topics.push((class, topic));
    }
    for (class, topic) in &topics {
        worker.wait(&format!("200 committed orders from {class}"), Duration::from_secs(120), || {
            (order_ids(topic, "read_committed").len() >= 200).then_some(())
        });
    }
    std::thread::sleep(Duration::from_secs(2));
    for (class, topic) in &topics {
        assert_eq!(order_ids(topic, "read_committed"), expected, "{class}");
        assert_eq!(order_ids(topic, "read_uncommitted"), (0..300).collect::<Vec<i64>>(), "{class}");
    }
}
