//! The plugin registry: plugins dropped in while the worker runs, versions side by side, broken
//! files reported, configuration definitions and validation over REST, the compile cache.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

/// Copies a plugin in under a temporary name and renames it, as an installer would.
fn drop_in(version: &str, folder: &Path) {
    let source = workspace().join(format!("target/test-plugin-versions/test-versioned-{version}.wasm"));
    let partial = folder.join(format!("test-versioned-{version}.part"));
    fs::copy(&source, &partial).unwrap();
    fs::rename(&partial, folder.join(format!("test-versioned-{version}.wasm"))).unwrap();
}

fn listed(worker: &Worker, name: &str, version: &str) -> bool {
    worker
        .get("/connector-plugins")
        .is_some_and(|list| list.as_array().unwrap().iter().any(|p| p["class"] == name && p["version"] == version))
}

fn create_versioned(worker: &Worker, name: &str, version: Option<&str>) -> (u16, Value, String) {
    let topic = unique(name);
    let mut config = json!({"connector.class": "test-versioned", "topic": topic});
    if let Some(version) = version {
        config["connector.version"] = json!(version);
    }
    let (code, body, _) =
        worker.call("POST", "/connectors", Some(&json!({"name": name, "config": config}).to_string()));
    (code, body, topic)
}

fn first_value(worker: &Worker, topic: &str) -> String {
    worker.wait(&format!("a record in {topic}"), Duration::from_secs(30), || (topic_count(topic) >= 1).then_some(()));
    String::from_utf8(topic_values(topic).remove(0)).unwrap()
}

#[test]
fn plugins_dropped_in_while_running_are_usable_and_versions_live_side_by_side() {
    let drop_folder = tempfile::tempdir().unwrap();
    let plugin_path = format!("{},{}", plugin_path(), drop_folder.path().display());
    let w = Standalone::new(&[("plugin.path", plugin_path), ("plugin.scan.interval.ms", "200".into())]);
    let worker = w.start();
    assert!(!listed(&worker, "test-versioned", "1.0.0"));

    drop_in("1.0.0", drop_folder.path());
    worker.wait("version 1.0.0 to be listed", Duration::from_secs(30), || {
        listed(&worker, "test-versioned", "1.0.0").then_some(())
    });
    let (code, body, first_topic) = create_versioned(&worker, "first", None);
    assert_eq!(code, 201, "{body}");
    assert_eq!(first_value(&worker, &first_topic), "1.0.0");

    drop_in("2.0.0", drop_folder.path());
    worker.wait("version 2.0.0 to be listed", Duration::from_secs(30), || {
        listed(&worker, "test-versioned", "2.0.0").then_some(())
    });
    assert!(listed(&worker, "test-versioned", "1.0.0"), "both versions are listed");

    let (_, _, unpinned) = create_versioned(&worker, "unpinned", None);
    assert_eq!(first_value(&worker, &unpinned), "2.0.0", "the newest version runs by default");
    let (_, _, pinned) = create_versioned(&worker, "pinned", Some("1.0.0"));
    assert_eq!(first_value(&worker, &pinned), "1.0.0");
    let (_, _, ranged) = create_versioned(&worker, "ranged", Some("[1.0,2.0)"));
    assert_eq!(first_value(&worker, &ranged), "1.0.0");

    let (code, error, _) = create_versioned(&worker, "missing", Some("3.0.0"));
    assert_eq!(code, 400, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("no version matches connector.version") && message.contains("1.0.0, 2.0.0"), "{message}");

    // Removing a file takes its version away; the task that runs it keeps running.
    fs::remove_file(drop_folder.path().join("test-versioned-1.0.0.wasm")).unwrap();
    worker.wait("version 1.0.0 to be gone", Duration::from_secs(30), || {
        (!listed(&worker, "test-versioned", "1.0.0")).then_some(())
    });
    assert_eq!(worker.task_state_now("pinned", 0).0, "RUNNING");
}

#[test]
fn a_file_that_is_not_a_plugin_is_reported_and_harms_nothing() {
    let drop_folder = tempfile::tempdir().unwrap();
    fs::write(drop_folder.path().join("broken.wasm"), b"this is not WebAssembly").unwrap();
    let plugin_path = format!("{},{}", plugin_path(), drop_folder.path().display());
    let w = Standalone::new(&[("plugin.path", plugin_path)]);
    let worker = w.start();
    let all = worker.get("/connector-plugins?connectorsOnly=false").unwrap();
    let broken = all.as_array().unwrap().iter().find(|p| p["class"].as_str().unwrap().ends_with("broken.wasm"));
    let broken = broken.unwrap_or_else(|| panic!("broken.wasm is not reported: {all}"));
    assert_eq!(broken["type"], "invalid");
    assert!(broken["error"].as_str().unwrap().contains("not a valid WebAssembly component"), "{broken}");
    // As in Kafka Connect, the built-in converters, transforms and predicates are listed too.
    let has =
        |class: &str, kind: &str| all.as_array().unwrap().iter().any(|p| p["class"] == class && p["type"] == kind);
    assert!(has("org.apache.kafka.connect.transforms.Cast$Key", "transformation"), "{all}");
    assert!(has("org.apache.kafka.connect.transforms.RegexRouter", "transformation"), "{all}");
    assert!(has("org.apache.kafka.connect.transforms.predicates.HasHeaderKey", "predicate"), "{all}");
    assert!(has("org.apache.kafka.connect.json.JsonConverter", "converter"), "{all}");
    assert!(has("org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter"), "{all}");
    assert!(!has("org.apache.kafka.connect.storage.SimpleHeaderConverter", "converter"), "{all}");
    let connectors_only = worker.get("/connector-plugins").unwrap();
    assert!(connectors_only.as_array().unwrap().iter().all(|p| p["type"] == "source" || p["type"] == "sink"));
    assert!(listed(&worker, "file-source", "0.1.0"));
}

#[test]
fn plugin_config_definitions_and_validation_use_kafka_connects_shapes() {
    let w = Standalone::new(&[]);
    let worker = w.start();
    let definition = worker.get("/connector-plugins/file-source/config").unwrap();
    let file = definition.as_array().unwrap().iter().find(|k| k["name"] == "file").unwrap();
    assert_eq!(file["type"], "STRING");
    assert_eq!(file["required"], true);
    let batch = definition.as_array().unwrap().iter().find(|k| k["name"] == "batch.size").unwrap();
    assert_eq!(batch["default_value"], "2000");

    let bad = json!({"name": "x", "connector.class": "file-source", "topic": "a,b", "batch.size": "lots"});
    let (code, report, _) =
        worker.call("PUT", "/connector-plugins/file-source/config/validate", Some(&bad.to_string()));
    assert_eq!(code, 200, "{report}");
    assert_eq!(report["name"], "file-source");
    assert_eq!(report["error_count"], 3, "{report}");
    let errors_of = |key: &str| -> Vec<String> {
        let entry = report["configs"].as_array().unwrap().iter().find(|c| c["value"]["name"] == key).unwrap();
        entry["value"]["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect()
    };
    assert!(errors_of("file")[0].contains("is required"), "{report}");
    assert!(errors_of("batch.size")[0].contains("lots"), "{report}");
    assert!(errors_of("topic")[0].contains("one topic"), "{report}");
    assert!(report["groups"].as_array().unwrap().contains(&json!("Common")));

    // The host's own checks land on the key they are about.
    let bad_host = json!({"name": "x", "file": w.path("in.txt").display().to_string(), "topic": "t",
        "wasm.max.bytes.per.call": "0"});
    let (_, report, _) =
        worker.call("PUT", "/connector-plugins/file-source/config/validate", Some(&bad_host.to_string()));
    assert_eq!(report["error_count"], 1, "{report}");
    let on_key = report["configs"].as_array().unwrap().iter().find(|c| c["value"]["name"] == "wasm.max.bytes.per.call");
    let errors = on_key.map(|c| c["value"]["errors"].to_string()).unwrap_or_default();
    assert!(errors.contains("wasm.max.bytes.per.call=0 is not valid"), "{report}");
    assert_eq!(on_key.unwrap()["definition"]["group"], "Sandbox", "{report}");

    // The file lies in a folder of its own (not one that holds the worker's files).
    let good = json!({"name": "x", "file": w.path("in.txt").display().to_string(), "topic": "t"});
    let (_, report, _) = worker.call("PUT", "/connector-plugins/file-source/config/validate", Some(&good.to_string()));
    assert_eq!(report["error_count"], 0, "{report}");

    // Kafka Connect's short and long names of a plugin are the plugin, in the URL and the body.
    let long = json!({"name": "x", "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": w.path("in.txt").display().to_string(), "topic": "t"});
    let (code, report, _) =
        worker.call("PUT", "/connector-plugins/FileStreamSource/config/validate", Some(&long.to_string()));
    assert_eq!((code, report["error_count"].clone()), (200, json!(0)), "{report}");
    let (code, report, _) = worker.call("PUT", "/connector-plugins/file-sink/config/validate", Some(&long.to_string()));
    assert_eq!(code, 400, "{report}");
    assert!(
        report["message"].as_str().unwrap_or_default().contains("does not match request type file-sink"),
        "{report}"
    );

    // A missing name is an error, as Connect counts it.
    let nameless = json!({"file": w.path("in.txt").display().to_string(), "topic": "t"});
    let (_, report, _) =
        worker.call("PUT", "/connector-plugins/file-source/config/validate", Some(&nameless.to_string()));
    assert_eq!(report["error_count"], 1, "{report}");
    let name = report["configs"].as_array().unwrap().iter().find(|c| c["value"]["name"] == "name").unwrap();
    assert_eq!(name["value"]["errors"], json!(["Missing required configuration \"name\" which has no default value."]));

    let (code, _, _) = worker.call("GET", "/connector-plugins/nope/config", None);
    assert_eq!(code, 404);
}

#[test]
fn a_second_start_loads_compiled_plugins_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    // The shipped plugins only: they compile in a moment, beside the other tests.
    let w = Standalone::new(&[
        ("wasm.cache.dir", cache.path().display().to_string()),
        ("plugin.path", workspace().join("target/plugins").display().to_string()),
    ]);
    let first = w.start();
    // Compiled in the background: the worker serves before.
    let log = first.wait("file-source to be compiled", Duration::from_secs(60), || {
        let log = first.log();
        log.contains("loaded plugin file-source").then_some(log)
    });
    let compiled: Vec<&str> = log.lines().filter(|l| l.contains("loaded plugin file-source")).collect();
    assert!(!compiled.is_empty() && compiled.iter().all(|l| !l.contains("from cache")), "{log}");
    drop(first);
    let second = w.start();
    let log = second.log();
    let loaded: Vec<&str> = log.lines().filter(|l| l.contains("loaded plugin file-source")).collect();
    assert!(!loaded.is_empty() && loaded.iter().all(|l| l.contains("compiled code from cache")), "{log}");
    for line in compiled.iter().chain(loaded.iter()) {
        eprintln!("{line}");
    }
}

/// A copy of a component that no compile cache has seen: its bytes with a custom section of its
/// own at the end.
fn uncompiled_copy(source: &Path, target: &Path) {
    let mut bytes = fs::read(source).unwrap();
    let (name, salt) = (b"wharf-test-salt", unique("salt"));
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend_from_slice(salt.as_bytes());
    assert!(section.len() < 128, "one byte of length");
    bytes.extend_from_slice(&[0, section.len() as u8]);
    bytes.extend_from_slice(&section);
    fs::write(target, bytes).unwrap();
}

fn state_and_trace(worker: &Worker, connector: &str) -> Option<(String, String)> {
    let status = worker.get(&format!("/connectors/{connector}/status"))?;
    let state = status["connector"]["state"].as_str()?.to_string();
    Some((state, status["connector"]["trace"].as_str().unwrap_or("").to_string()))
}

#[test]
fn a_plugin_compiles_in_the_background_while_others_run_and_its_connectors_wait_for_it() {
    // The suite's compile cache holds every plugin but the copy below, which must compile.
    let cache = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(workspace().join("target/test-compile-cache")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cwasm") {
            fs::copy(&path, cache.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let compiling = tempfile::tempdir().unwrap();
    let example = workspace().join("target/example-plugins/jsonl-source.wasm");
    uncompiled_copy(&example, &compiling.path().join("jsonl-source.wasm"));
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("in.jsonl");
    fs::write(&input, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n").unwrap();
    let shipped = workspace().join("target/plugins");
    let mut w = Standalone::new(&[
        ("plugin.path", format!("{},{}", shipped.display(), compiling.path().display())),
        ("wasm.cache.dir", cache.path().display().to_string()),
    ]);
    let jsonl = |topic: &str| {
        vec![
            ("connector.class", "jsonl-source".to_string()),
            ("file", input.display().to_string()),
            ("topic", topic.to_string()),
            ("wasm.fs.read", data.path().display().to_string()),
        ]
    };
    let first_topic = unique("compiled-late");
    w.add_connector("waits", &jsonl(&first_topic));
    let worker = w.start();

    // The connector given at start waits, and says why.
    let trace = worker.wait("the connector to wait for its plugin", Duration::from_secs(30), || {
        let (state, trace) = state_and_trace(&worker, "waits")?;
        (state == "UNASSIGNED" && trace.contains("still compiling")).then_some(trace)
    });
    assert!(trace.contains("jsonl-source") && trace.contains("jsonl-source.wasm"), "{trace}");

    // A plugin in the cache runs meanwhile.
    let (lines, other_topic) = (data.path().join("lines.txt"), unique("runs-meanwhile"));
    fs::write(&lines, "a\nb\n").unwrap();
    let config = json!({"name": "meanwhile", "config": {"connector.class": "FileStreamSource",
        "file": lines.display().to_string(), "topic": other_topic,
        "wasm.fs.read": data.path().display().to_string()}});
    let (code, body, _) = worker.call("POST", "/connectors", Some(&config.to_string()));
    assert_eq!(code, 201, "{body}");
    worker.wait_task_state("meanwhile", 0, "RUNNING");
    worker.wait("two lines", Duration::from_secs(30), || (topic_count(&other_topic) >= 2).then_some(()));
    assert!(
        !worker.log().contains("loaded plugin jsonl-source"),
        "the Python component was still compiling while the other connector started"
    );

    // A create over REST waits for the compilation rather than refusing the unknown name.
    let second_topic = unique("created-while-compiling");
    let mut second = serde_json::Map::new();
    for (key, value) in jsonl(&second_topic) {
        second.insert(key.to_string(), json!(value));
    }
    let body = json!({"name": "created-while-compiling", "config": second});
    // Under a loaded machine the compile may outlast one wait (60 s); a client asked to try again
    // does so once.
    let (mut code, mut answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    if code == 503 {
        (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    }
    assert_eq!(code, 201, "{answer}");

    // Both run once it is compiled, the first without a restart.
    for (connector, topic) in [("waits", &first_topic), ("created-while-compiling", &second_topic)] {
        worker.wait_task_state(connector, 0, "RUNNING");
        worker.wait("three records", Duration::from_secs(60), || (topic_count(topic) >= 3).then_some(()));
    }
    let log = worker.log();
    assert!(log.contains("compiling") && log.contains("in the background"), "{log}");
    assert!(log.lines().any(|l| l.contains("loaded plugin jsonl-source") && l.contains("compiled now")), "{log}");
}
