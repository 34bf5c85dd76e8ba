//! Kafka Connect's config providers on a real broker: a connector config holds
//! `${provider:path:key}` references to secrets in files and folders of the worker; the worker
//! that runs the connector and its tasks puts the values in, while the config topic and every
//! REST answer keep the references. A reference that cannot be resolved is refused, or fails
//! the connector, with a message that names it and never the value.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

#[test]
fn references_are_resolved_where_the_connector_runs_and_stored_as_references() {
    let secrets = tempfile::tempdir().unwrap();
    let file_provider = "org.apache.kafka.common.config.provider.FileConfigProvider";
    let w = Distributed::new(&[
        ("config.providers", "file,dir".to_string()),
        ("config.providers.file.class", file_provider.to_string()),
        ("config.providers.file.param.allowed.paths", secrets.path().display().to_string()),
        ("config.providers.dir.class", "org.apache.kafka.common.config.provider.DirectoryConfigProvider".to_string()),
    ]);
    let input = w.path("input.txt");
    std::fs::write(&input, "one\ntwo\nthree\n").unwrap();
    let topic = unique("hidden-topic");
    let properties = secrets.path().join("source.properties");
    std::fs::write(&properties, format!("input.file={}\n", input.display())).unwrap();
    std::fs::create_dir(secrets.path().join("names")).unwrap();
    std::fs::write(secrets.path().join("names/topic"), &topic).unwrap();

    let file_ref = format!("${{file:{}:input.file}}", properties.display());
    let topic_ref = format!("${{dir:{}:topic}}", secrets.path().join("names").display());
    let worker = w.start();
    let body = json!({"name": "hidden", "config": {
        "connector.class": "file-source", "file": file_ref, "topic": topic_ref,
        "wasm.fs.read": w.dir.path().display().to_string(),
    }});
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["config"]["file"], file_ref.as_str());

    worker.wait("the lines in the topic the reference names", Duration::from_secs(60), || {
        (topic_count(&topic) >= 3).then_some(())
    });
    let config = worker.get("/connectors/hidden/config").unwrap();
    assert_eq!(
        (config["file"].as_str(), config["topic"].as_str()),
        (Some(file_ref.as_str()), Some(topic_ref.as_str()))
    );
    let tasks = worker.get("/connectors/hidden/tasks").unwrap();
    let task_config = &tasks[0]["config"];
    assert_eq!(task_config["topic"].as_str(), Some(topic_ref.as_str()), "{tasks}");
    // Neither the topic the secret names nor the file's path is in the config topic.
    let records = topic_records(&w.topics[0]);
    assert!(!records.is_empty());
    for (_, key, value) in &records {
        let value = value.as_deref().unwrap_or_default();
        assert!(!value.contains(&topic) && !value.contains(&input.display().to_string()), "{key}: {value}");
    }

    // A reference the worker cannot resolve is refused, named, and its neighbours' values are
    // not shown.
    let missing = format!("${{file:{}:no.such.key}}", properties.display());
    let outside = "${file:/etc/hostname:x}".to_string();
    let unknown = "${vault:secret/db:password}".to_string();
    for (reference, why) in [(&missing, "does not have"), (&outside, "allowed.paths"), (&unknown, "config.providers")] {
        let body = json!({"name": unique("refused"), "config": {
            "connector.class": "file-source", "file": reference, "topic": "t",
            "wasm.fs.read": w.dir.path().display().to_string(),
        }});
        let (code, error, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
        let message = error["message"].as_str().unwrap_or_default();
        assert_eq!(code, 400, "{error}");
        assert!(message.contains(reference.as_str()) && message.contains(why), "{message}");
        assert!(!message.contains(&input.display().to_string()), "{message}");
    }

    // Once the secret is gone, the connector's next start fails naming the reference.
    std::fs::write(&properties, "other=1\n").unwrap();
    let (code, _, _) = worker.call("POST", "/connectors/hidden/restart?includeTasks=true", None);
    assert!(code == 202 || code == 204, "restart answered {code}");
    let failed: Value = worker.wait("the connector failed on its reference", Duration::from_secs(60), || {
        let status = worker.get("/connectors/hidden/status")?;
        (status["connector"]["state"] == "FAILED").then_some(status)
    });
    let trace = failed["connector"]["trace"].as_str().unwrap_or_default();
    assert!(trace.contains(&file_ref) && trace.contains("does not have"), "{failed}");
}
