//! The parts of Kafka Connect 4.1's REST API that scripts and client libraries lean on, on a
//! standalone worker and real Kafka: health, one task's status, the repeated `expand`, a create's
//! `initial_state`, a config patch, the answer to a stop, and the plugin version in statuses.

use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

fn datagen(topic: &str) -> Value {
    json!({"connector.class": "datagen", "topic": topic, "rate": "5", "tasks.max": "2"})
}

fn create(worker: &Worker, body: Value) -> (u16, Value) {
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    (code, answer)
}

#[test]
fn health_task_status_expand_initial_state_patch_and_stop_answer_as_connect_does() {
    let worker = Standalone::new(&[]).start();

    let (code, health, _) = worker.call("GET", "/health", None);
    assert_eq!(code, 200, "{health}");
    assert_eq!(
        health,
        json!({"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."})
    );

    // A connector created RUNNING (the default) reports its plugin's version for itself and its tasks.
    let (code, answer) = create(&worker, json!({"name": "gen", "config": datagen(&unique("surface"))}));
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("gen", 1, "RUNNING");
    let status = worker.get("/connectors/gen/status").unwrap();
    let version = status["connector"]["version"].as_str().unwrap_or_default().to_string();
    assert!(!version.is_empty(), "{status}");
    assert_eq!(status["tasks"][1]["version"], json!(version), "{status}");

    // One task's status: Connect's TaskState.
    let (code, task, _) = worker.call("GET", "/connectors/gen/tasks/1/status", None);
    assert_eq!(code, 200, "{task}");
    assert_eq!(task["id"], 1);
    assert_eq!(task["state"], "RUNNING");
    assert_eq!(task["worker_id"], status["tasks"][1]["worker_id"]);
    assert_eq!(task["version"], json!(version));
    for missing in
        ["/connectors/gen/tasks/7/status", "/connectors/gen/tasks/x/status", "/connectors/nope/tasks/0/status"]
    {
        let (code, answer, _) = worker.call("GET", missing, None);
        assert_eq!(code, 404, "{missing}: {answer}");
        assert!(answer["message"].as_str().unwrap_or_default().starts_with("No status found for task "), "{answer}");
    }

    // initial_state: PAUSED and STOPPED connectors start so; an unknown state is refused.
    let (code, answer) =
        create(&worker, json!({"name": "paused", "config": datagen(&unique("surface")), "initial_state": "PAUSED"}));
    assert_eq!(code, 201, "{answer}");
    let (code, answer) =
        create(&worker, json!({"name": "stopped", "config": datagen(&unique("surface")), "initial_state": "stopped"}));
    assert_eq!(code, 201, "{answer}");
    worker.wait("the paused connector's status", Duration::from_secs(30), || {
        let status = worker.get("/connectors/paused/status")?;
        (status["connector"]["state"] == "PAUSED").then_some(())
    });
    worker.wait("the stopped connector's status", Duration::from_secs(30), || {
        let status = worker.get("/connectors/stopped/status")?;
        (status["connector"]["state"] == "STOPPED" && status["tasks"] == json!([])).then_some(())
    });
    let topic = worker.get("/connectors/paused/config").unwrap()["topic"].as_str().unwrap_or_default().to_string();
    assert_eq!(topic_count(&topic), 0, "a connector created PAUSED produced records");
    let (code, answer) =
        create(&worker, json!({"name": "odd", "config": datagen(&unique("surface")), "initial_state": "SLEEPING"}));
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("initial_state"), "{answer}");

    // The documented, repeated expand, and the comma-separated one, answer alike.
    let repeated = worker.get("/connectors?expand=status&expand=info").unwrap();
    let joined = worker.get("/connectors?expand=info,status").unwrap();
    for answer in [&repeated, &joined] {
        for name in ["gen", "paused", "stopped"] {
            assert_eq!(answer[name]["info"]["name"], name, "{answer}");
            assert_eq!(answer[name]["status"]["name"], name, "{answer}");
        }
    }
    let only_info = worker.get("/connectors?expand=info").unwrap();
    assert!(only_info["gen"].get("status").is_none(), "{only_info}");
    assert_eq!(worker.get("/connectors?expand=nothing-known").unwrap()["gen"], json!({}));

    // PATCH: given keys change, a null removes one, the rest stays; the answer is ConnectorInfo.
    let patch = json!({"rate": "7", "tasks.max": null});
    let (code, info, _) = worker.call("PATCH", "/connectors/gen/config", Some(&patch.to_string()));
    assert_eq!(code, 200, "{info}");
    assert_eq!(info["name"], "gen");
    assert_eq!(info["config"]["rate"], "7", "{info}");
    assert!(info["config"].get("tasks.max").is_none(), "{info}");
    assert_eq!(info["config"]["connector.class"], "datagen", "{info}");
    worker.wait("one task after tasks.max went back to its default", Duration::from_secs(30), || {
        let tasks = worker.get("/connectors/gen/tasks")?;
        (tasks.as_array()?.len() == 1).then_some(())
    });
    let (code, answer, _) = worker.call("PATCH", "/connectors/nope/config", Some(r#"{"rate": "1"}"#));
    assert_eq!(code, 404, "{answer}");
    let (code, answer, _) = worker.call("PATCH", "/connectors/gen/config", Some(r#"{"tasks.max": "0"}"#));
    assert_eq!(code, 400, "{answer}");
    assert_eq!(worker.get("/connectors/gen/config").unwrap()["rate"], "7", "a refused patch changed the config");

    // A stop answers 204, as Connect's does; pause and resume 202.
    assert_eq!(worker.call("PUT", "/connectors/gen/stop", None).0, 204);
    assert_eq!(worker.call("PUT", "/connectors/paused/resume", None).0, 202);
    assert_eq!(worker.call("PUT", "/connectors/nope/stop", None).0, 404);
}
