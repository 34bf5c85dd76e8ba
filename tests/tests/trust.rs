//! What a REST caller or a plugin author tries in order to get past the sandbox, the operator's
//! ceilings or a secret, each against a distributed worker that also runs a healthy datagen
//! connector (the canary): the attempt is refused with a message that names the key and what
//! would allow it (or that nothing does), or its task fails saying why; no secret appears in any
//! answer, status or stored record; the worker keeps answering and the canary keeps writing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wharf_e2e::*;

/// Every error message of a validate answer, joined.
fn validate_errors(worker: &Worker, plugin: &str, config: &Value) -> String {
    let asked = Instant::now();
    let (code, answer, _) =
        worker.call("PUT", &format!("/connector-plugins/{plugin}/config/validate"), Some(&config.to_string()));
    assert_eq!(code, 200, "{answer}");
    assert!(asked.elapsed() < Duration::from_secs(10), "validate took {:?}", asked.elapsed());
    let errors: Vec<String> = answer["configs"]
        .as_array()
        .map(|configs| {
            configs
                .iter()
                .flat_map(|c| c["value"]["errors"].as_array().cloned().unwrap_or_default())
                .filter_map(|e| e.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    errors.join("; ")
}

/// A shared library whose constructor writes `marker`: what an attacker would have a client load.
fn library_that_marks(dir: &Path, marker: &Path) -> PathBuf {
    let source = dir.join("mark.c");
    std::fs::write(
        &source,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void mark(void) {{ FILE *f = fopen(\"{}\", \"w\"); \
             if (f) {{ fputs(\"loaded\", f); fclose(f); }} }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let library = dir.join("mark.so");
    let built = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&library).arg(&source).output().unwrap();
    assert!(built.status.success(), "cc: {}", String::from_utf8_lossy(&built.stderr));
    library
}

fn make_fifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid, NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

#[test]
fn client_overrides_cannot_load_code_read_files_or_weaken_the_workers_connections() {
    // Key stores the operator allows live outside every folder connectors may grant (/tmp here).
    let stores = workspace().join(format!("target/{}", unique("override-stores")));
    std::fs::create_dir_all(&stores).unwrap();
    let d = Distributed::new(&[("connector.client.config.override.allowed.paths", stores.display().to_string())]);
    let worker = d.start();
    let canary = canary(&worker);
    let marker = d.path("constructor-ran");
    let library = library_that_marks(d.dir.path(), &marker).display().to_string();
    let fifo = d.path("fifo");
    make_fifo(&fifo);
    let fifo = fifo.display().to_string();
    let cases = [
        ("producer.override.plugin.library.paths", library.clone(), "is never allowed in a connector config"),
        ("producer.override.ssl.engine.location", library.clone(), "is never allowed in a connector config"),
        ("producer.override.debug", "all".to_string(), "is never allowed in a connector config"),
        (
            "producer.override.enable.ssl.certificate.verification",
            "false".to_string(),
            "is not a setting of Kafka's Java clients",
        ),
        ("producer.override.ssl.ca.location", "/etc/passwd".to_string(), "is not a setting of Kafka's Java clients"),
        ("producer.override.ssl.truststore.location", fifo.clone(), "is not a regular file"),
        ("producer.override.ssl.keystore.location", library.clone(), "a folder connectors may grant their plugins"),
        (
            "producer.override.ssl.truststore.location",
            "/etc/passwd".to_string(),
            "is outside connector.client.config.override.allowed.paths",
        ),
        ("producer.override.ssl.endpoint.identification.algorithm", String::new(), "carries the worker's"),
    ];
    for (i, (key, value, says)) in cases.iter().enumerate() {
        let config = json!({"connector.class": "datagen", "topic": unique("loot"), *key: value});
        let (code, answer) = create(&worker, &format!("overrider-{i}"), &config);
        assert_eq!(code, 400, "{key}={value}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("\"{key}")) && message.contains(says), "{key}={value}: {message}");
        let errors = validate_errors(&worker, "datagen", &config);
        assert!(errors.contains(says), "validate of {key}={value}: {errors}");
    }
    assert!(!marker.exists(), "a client loaded the connector's library");
    let names = worker.get("/connectors").unwrap();
    assert_eq!(names, json!(["canary"]));
    assert_unharmed(&worker, &canary);
    let _ = std::fs::remove_dir_all(&stores);
}

#[test]
fn the_allowlist_policy_applies_only_the_settings_it_names() {
    let d = Distributed::new(&[
        ("connector.client.config.override.policy", "Allowlist".to_string()),
        ("connector.client.config.override.allowlist", "linger.ms, batch.size".to_string()),
    ]);
    let worker = d.start();
    let allowed =
        json!({"connector.class": "datagen", "topic": unique("allowed"), "producer.override.linger.ms": "20"});
    let (code, answer) = create(&worker, "allowed", &allowed);
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("allowed", 0, "RUNNING");
    let refused = json!({"connector.class": "datagen", "topic": unique("refused"), "producer.override.acks": "1"});
    let (code, answer) = create(&worker, "refused", &refused);
    assert_eq!(code, 400, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\"producer.override.acks\" is not allowed")
            && message.contains("names (linger.ms, batch.size)")
            && message.contains("add acks to connector.client.config.override.allowlist"),
        "{message}"
    );
}

#[test]
fn resolved_secrets_appear_in_no_answer_status_log_or_stored_record() {
    let secret = format!("hunter2-{}", unique("s"));
    let variable = format!("WHARF_TRUST_SECRET_{}", std::process::id());
    std::env::set_var(&variable, &secret);
    let secrets_dir = tempfile::tempdir().unwrap();
    let fifo = secrets_dir.path().join("fifo");
    make_fifo(&fifo);
    let d = Distributed::new(&[
        ("config.providers", "env,file".to_string()),
        ("config.providers.env.class", "org.apache.kafka.common.config.provider.EnvVarConfigProvider".to_string()),
        ("config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider".to_string()),
    ]);
    let worker = d.start();
    let canary = canary(&worker);
    let reference = format!("${{env:{variable}}}");
    let shows_no_secret = |what: &str, text: &str| assert!(!text.contains(&secret), "{what} shows the secret: {text}");

    // A host key given a secret: validate and create name the reference, never the value.
    let config = json!({"connector.class": "datagen", "name": "x", "topic": "t", "tasks.max": reference});
    let errors = validate_errors(&worker, "datagen", &config);
    assert!(errors.contains(&reference), "{errors}");
    shows_no_secret("validate", &errors);
    let (code, answer) = create(&worker, "x", &config);
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains(&reference), "{answer}");
    shows_no_secret("create", &answer.to_string());

    // The name is shown everywhere: it may not be a reference.
    let (code, answer, _) = worker.call(
        "POST",
        "/connectors",
        Some(&json!({"name": reference, "config": {"connector.class": "datagen", "topic": "t"}}).to_string()),
    );
    assert_eq!(code, 400, "{answer}");
    shows_no_secret("a create named by a reference", &answer.to_string());
    let errors =
        validate_errors(&worker, "datagen", &json!({"connector.class": "datagen", "name": reference, "topic": "t"}));
    assert!(errors.contains("may not come from a provider"), "{errors}");
    shows_no_secret("validate of the name", &errors);

    // Nor may the class: a failed plugin lookup would quote it.
    let (code, answer) = create(&worker, "classy", json!({"connector.class": reference, "topic": "t"}));
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("may not come from a provider"), "{answer}");
    shows_no_secret("a create whose class is a reference", &answer.to_string());

    // A plugin that adds a reference its connector config never held: its task fails naming the key.
    let smuggler = json!({"connector.class": "test-misbehaver", "behaviour": "unavailable", "topic": "t",
        "smuggle.env": variable});
    let (code, answer) = create(&worker, "smuggler", &smuggler);
    assert_eq!(code, 201, "{answer}");
    let trace = worker.wait_task_state("smuggler", 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("\"smuggled\" holds the reference") && trace.contains(&reference), "{trace}");

    // A plugin that copies the secret into another key: stored as the reference, not in clear.
    let copier = json!({"connector.class": "test-misbehaver", "behaviour": "unavailable", "topic": "t",
        "secret": reference, "copy.secret": "whole"});
    let (code, answer) = create(&worker, "copier", &copier);
    assert_eq!(code, 201, "{answer}");
    let tasks = worker.wait("the copier's task configs", Duration::from_secs(30), || {
        worker.get("/connectors/copier/tasks").filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
    });
    assert_eq!(tasks[0]["config"]["copied"], reference.as_str(), "{tasks}");
    // Inside another value it cannot be given back as the reference: the connector fails.
    let inside = json!({"connector.class": "test-misbehaver", "behaviour": "unavailable", "topic": "t",
        "secret": reference, "copy.secret": "inside"});
    let (code, answer) = create(&worker, "inside", &inside);
    assert_eq!(code, 201, "{answer}");
    let status =
        worker.wait("the connector that hides a secret inside a value to fail", Duration::from_secs(60), || {
            let status = worker.get("/connectors/inside/status")?;
            (status["connector"]["state"] == "FAILED").then_some(status)
        });
    let trace = status["connector"]["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("\"inside\"") && trace.contains(&reference), "{trace}");

    // A plugin that logs the secret and fails with it: the log and the status show the reference.
    let teller = json!({"connector.class": "test-misbehaver", "behaviour": "tell", "topic": "t", "secret": reference});
    let (code, answer) = create(&worker, "teller", &teller);
    assert_eq!(code, 201, "{answer}");
    let trace = worker.wait_task_state("teller", 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains(&format!("the secret is {reference}")), "{trace}");
    worker.wait("the plugin's log line", Duration::from_secs(30), || {
        worker.log().contains(&format!("the secret is {reference}")).then_some(())
    });

    // A reference to a FIFO is answered at once.
    let config = json!({"connector.class": "datagen", "name": "x", "topic": format!("${{file:{}:k}}", fifo.display())});
    let errors = validate_errors(&worker, "datagen", &config);
    assert!(errors.contains("is not a regular file"), "{errors}");

    // Nowhere in what the worker wrote: its log, statuses, configs.
    shows_no_secret("the worker's log", &worker.log());
    for topic in &d.topics {
        for (_, key, value) in topic_records(topic) {
            shows_no_secret(&format!("record {key} of {topic}"), value.as_deref().unwrap_or_default());
        }
    }
    for name in ["smuggler", "copier", "inside", "teller"] {
        shows_no_secret(name, &worker.get(&format!("/connectors/{name}/status")).unwrap_or_default().to_string());
        shows_no_secret(name, &worker.get(&format!("/connectors/{name}/tasks")).unwrap_or_default().to_string());
    }
    assert_unharmed(&worker, &canary);
}

#[test]
fn a_dead_letter_queue_cannot_write_the_workers_or_kafkas_internal_topics() {
    let d = Distributed::new(&[("wharf.reserved.topics", "other-cluster-.*".to_string())]);
    let worker = d.start();
    let canary = canary(&worker);
    let out = tempfile::tempdir().unwrap();
    for queue in
        [d.topics[0].as_str(), d.topics[2].as_str(), "__consumer_offsets", "__anything", "other-cluster-configs"]
    {
        let config = json!({"connector.class": "file-sink", "name": "queued", "topics": unique("in"),
            "file": out.path().join("out.txt").display().to_string(),
            "wasm.fs.write": out.path().display().to_string(),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "errors.tolerance": "all", "errors.deadletterqueue.topic.name": queue});
        let (code, answer) = create(&worker, "queued", &config);
        assert_eq!(code, 400, "{queue}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("errors.deadletterqueue.topic.name={queue} is ")), "{message}");
        let errors = validate_errors(&worker, "file-sink", &config);
        assert!(errors.contains("never writes Kafka's or the worker's internal topics"), "{errors}");
    }
    let before = topic_records(&d.topics[0]).len();
    assert_eq!(worker.get("/connectors").unwrap(), json!(["canary"]));
    assert_eq!(topic_records(&d.topics[0]).len(), before);
    assert_unharmed(&worker, &canary);
}

#[test]
fn a_wildcard_ceiling_does_not_reach_metadata_services_or_loopback_by_address() {
    let d = Distributed::new(&[
        ("wasm.ceiling.http.allow", "*:80,127.0.0.1:*".to_string()),
        ("wasm.ceiling.net.connect", "*:*".to_string()),
    ]);
    let worker = d.start();
    let cases = [
        ("wasm.http.allow", "169.254.169.254:80"),
        ("wasm.http.allow", "[fd00:ec2::254]:80"),
        ("wasm.http.allow", "100.100.100.200:80"),
        ("wasm.http.allow", "[::ffff:169.254.169.254]:80"),
        ("wasm.net.connect", "127.0.0.1:8083"),
        ("wasm.net.connect", "localhost:8083"),
        ("wasm.net.connect", "168.63.129.16:80"),
    ];
    for (i, (key, value)) in cases.iter().enumerate() {
        let config = json!({"connector.class": "test-misbehaver", "behaviour": "http", "topic": "t",
            "target": value, *key: value});
        let (code, answer) = create(&worker, &format!("metadata-{i}"), &config);
        assert_eq!(code, 400, "{key}={value}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains("allows only by naming it"), "{key}={value}: {message}");
    }
    // An address the ceiling names is granted as before.
    let config = json!({"connector.class": "test-misbehaver", "behaviour": "http", "topic": "t",
        "target": "127.0.0.1:9", "wasm.http.allow": "127.0.0.1:9"});
    let (code, answer) = create(&worker, "named", &config);
    assert_eq!(code, 201, "{answer}");
}

#[test]
fn a_plugins_connects_stop_at_the_workers_socket_budget() {
    // A budget below what the worker itself holds (its Kafka clients and REST listener).
    let d = Distributed::new(&[("wasm.max.sockets.per.worker", "1".to_string())]);
    let worker = d.start();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = listener.local_addr().unwrap().to_string();
    let config = json!({"connector.class": "test-misbehaver", "behaviour": "connect", "topic": unique("budget"),
        "target": target, "wasm.net.connect": target});
    let (code, answer) = create(&worker, "connector", &config);
    assert_eq!(code, 201, "{answer}");
    let trace = worker.wait_task_state("connector", 0, "FAILED")["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("cannot connect"), "{trace}");
    worker.wait("the refusal in the log", Duration::from_secs(30), || {
        worker.log().contains("and wasm.max.sockets.per.worker=1;").then_some(())
    });
    let (code, _, _) = worker.call("GET", "/connectors", None);
    assert_eq!(code, 200);
}
