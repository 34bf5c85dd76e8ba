//! Wharf's REST API against Kafka Connect 4.1's own: the same calls go to a real Kafka Connect
//! distributed worker (its jars, from `scripts/kafka-connect`) and to a Wharf distributed worker
//! on the suite's broker, and each answer's status code and JSON shape (the keys of every object
//! and the type of every value, not the values) must be the same. The few differences that
//! remain are listed in `KNOWN`, each with its reason; the test fails on any other difference,
//! and on a known one that went away, so that the list stays true.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wharf_e2e::rest_call as call;
use wharf_e2e::*;

/// Differences that remain: the call's label, the start of the difference as `differences`
/// words it, and why.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "GET /connectors?expand=status,info",
        "answer.conformance-source.",
        "Wharf also reads the comma-separated form, which Connect takes for one unknown expansion and answers {}",
    ),
    (
        "GET /connectors/{c}/tasks",
        "answer[0].config.task.class is missing",
        "Connect adds its Task's Java class to each task config; a Wharf task is its plugin's, with no class",
    ),
];

/// Calls whose answer is an object keyed by names (loggers), not by fields: the shape of its
/// values is compared, not its keys.
const KEYED_BY_NAME: &[&str] = &["GET /admin/loggers"];

/// At most this much of an answer is shown in a failure.
const SHOWN: usize = 400;

fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// Keys Wharf adds to Connect's objects, which Connect's clients pass over.
const WHARF_EXTRAS: &[&str] = &["wharf_version"];

fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// How Wharf's answer differs from Connect's in shape: keys missing or added, values of another
/// type. A null on either side matches any type (Connect leaves optional fields null); arrays are
/// compared by their first elements, which have the shape of the rest.
fn differences(at: &str, connect: &Value, wharf: &Value, out: &mut Vec<String>) {
    match (connect, wharf) {
        (Value::Null, _) | (_, Value::Null) => {}
        (Value::Object(c), Value::Object(w)) => {
            for (key, value) in c {
                match w.get(key) {
                    None => out.push(format!("{at}.{key} is missing")),
                    Some(other) => differences(&format!("{at}.{key}"), value, other, out),
                }
            }
            for key in w.keys().filter(|k| !c.contains_key(*k) && !WHARF_EXTRAS.contains(&k.as_str())) {
                out.push(format!("{at}.{key} is not in Connect's answer"));
            }
        }
        (Value::Array(c), Value::Array(w)) => match (c.first(), w.first()) {
            (Some(c), Some(w)) => differences(&format!("{at}[0]"), c, w, out),
            (None, None) => {}
            (c, w) => out.push(format!(
                "{at} has {} elements in Connect's answer, {} in Wharf's",
                c.map_or(0, |_| 1),
                w.map_or(0, |_| 1)
            )),
        },
        (c, w) if kind(c) == kind(w) => {}
        (c, w) => out.push(format!("{at} is {} in Connect's answer, {} in Wharf's", kind(c), kind(w))),
    }
}

/// The same script of calls, run against one worker: each call's label and answer.
struct Script<'a> {
    port: u16,
    dir: &'a std::path::Path,
    answers: Vec<(String, u16, Value)>,
}

impl Script<'_> {
    fn call(&mut self, label: &str, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = call(self.port, method, path, body.as_ref());
        self.answers.push((label.to_string(), status, answer.clone()));
        answer
    }

    fn source_config(&self) -> Value {
        json!({
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": self.dir.join("in.txt").display().to_string(),
            "topic": unique("conformance"),
            "tasks.max": "1",
        })
    }

    fn wait_running(&self, connector: &str) {
        wait_until(&format!("{connector} RUNNING on the worker at {}", self.port), Duration::from_secs(90), || {
            let (_, status) = call(self.port, "GET", &format!("/connectors/{connector}/status"), None);
            status["connector"]["state"] == "RUNNING" && status["tasks"][0]["state"] == "RUNNING"
        });
    }

    fn wait_state(&self, connector: &str, state: &str) {
        wait_until(&format!("{connector} {state} on the worker at {}", self.port), Duration::from_secs(60), || {
            let (_, status) = call(self.port, "GET", &format!("/connectors/{connector}/status"), None);
            status["connector"]["state"] == state
        });
    }

    /// The calls Kafka Connect's users and client libraries make, in an order that leaves each
    /// connector in a known state before it is asked about.
    fn run(&mut self) {
        std::fs::write(self.dir.join("in.txt"), "one\ntwo\nthree\n").unwrap();
        self.call("GET /", "GET", "/", None);
        self.call("GET /health", "GET", "/health", None);
        self.call("GET /connectors (none)", "GET", "/connectors", None);
        self.call("GET /connector-plugins", "GET", "/connector-plugins", None);
        self.call("GET /connector-plugins?connectorsOnly=true", "GET", "/connector-plugins?connectorsOnly=true", None);
        self.call("GET /connector-plugins/{p}/config", "GET", "/connector-plugins/FileStreamSource/config", None);
        self.call("GET /connector-plugins/{unknown}/config", "GET", "/connector-plugins/NoSuchConnector/config", None);
        let mut config = self.source_config();
        config["name"] = json!("conformance-source");
        self.call(
            "PUT /connector-plugins/{p}/config/validate",
            "PUT",
            "/connector-plugins/FileStreamSource/config/validate",
            Some(config.clone()),
        );
        let mut nameless = self.source_config();
        nameless["file"] = json!("");
        self.call(
            "PUT /connector-plugins/{p}/config/validate (no name)",
            "PUT",
            "/connector-plugins/FileStreamSourceConnector/config/validate",
            Some(nameless),
        );

        let body = json!({"name": "conformance-source", "config": self.source_config()});
        self.call("POST /connectors", "POST", "/connectors", Some(body.clone()));
        self.call("POST /connectors (exists)", "POST", "/connectors", Some(body));
        self.call("POST /connectors (no name)", "POST", "/connectors", Some(json!({"config": self.source_config()})));
        self.wait_running("conformance-source");
        self.call("GET /connectors", "GET", "/connectors", None);
        self.call("GET /connectors?expand=status&expand=info", "GET", "/connectors?expand=status&expand=info", None);
        self.call("GET /connectors?expand=status,info", "GET", "/connectors?expand=status,info", None);
        self.call("GET /connectors/{c}", "GET", "/connectors/conformance-source", None);
        self.call("GET /connectors/{c}/config", "GET", "/connectors/conformance-source/config", None);
        self.call("GET /connectors/{c}/status", "GET", "/connectors/conformance-source/status", None);
        self.call("GET /connectors/{c}/tasks", "GET", "/connectors/conformance-source/tasks", None);
        self.call("GET /connectors/{c}/tasks/{t}/status", "GET", "/connectors/conformance-source/tasks/0/status", None);
        self.call(
            "GET /connectors/{c}/tasks/{unknown}/status",
            "GET",
            "/connectors/conformance-source/tasks/7/status",
            None,
        );
        self.call("GET /connectors/{unknown}", "GET", "/connectors/no-such-connector", None);
        self.call("GET /connectors/{unknown}/status", "GET", "/connectors/no-such-connector/status", None);
        // Connect records a topic once the producer acknowledged a record to it.
        wait_until(&format!("a tracked topic on the worker at {}", self.port), Duration::from_secs(60), || {
            let (_, topics) = call(self.port, "GET", "/connectors/conformance-source/topics", None);
            topics["conformance-source"]["topics"].as_array().is_some_and(|t| !t.is_empty())
        });
        self.call("GET /connectors/{c}/topics", "GET", "/connectors/conformance-source/topics", None);
        self.call("PUT /connectors/{c}/topics/reset", "PUT", "/connectors/conformance-source/topics/reset", None);
        let mut changed = self.source_config();
        changed["batch.size"] = json!("100");
        self.call("PUT /connectors/{c}/config", "PUT", "/connectors/conformance-source/config", Some(changed));
        self.call(
            "PATCH /connectors/{c}/config",
            "PATCH",
            "/connectors/conformance-source/config",
            Some(json!({"batch.size": null, "tasks.max": "1"})),
        );
        self.wait_running("conformance-source");
        self.call("PUT /connectors/{c}/pause", "PUT", "/connectors/conformance-source/pause", None);
        self.wait_state("conformance-source", "PAUSED");
        self.call("PUT /connectors/{c}/resume", "PUT", "/connectors/conformance-source/resume", None);
        self.wait_running("conformance-source");
        self.call("POST /connectors/{c}/restart", "POST", "/connectors/conformance-source/restart", None);
        self.wait_running("conformance-source");
        self.call(
            "POST /connectors/{c}/restart?includeTasks=true",
            "POST",
            "/connectors/conformance-source/restart?includeTasks=true",
            None,
        );
        self.wait_running("conformance-source");
        self.call(
            "POST /connectors/{c}/tasks/{t}/restart",
            "POST",
            "/connectors/conformance-source/tasks/0/restart",
            None,
        );
        self.wait_running("conformance-source");
        self.call("PUT /connectors/{c}/stop", "PUT", "/connectors/conformance-source/stop", None);
        self.wait_state("conformance-source", "STOPPED");
        self.call("GET /connectors/{c}/offsets", "GET", "/connectors/conformance-source/offsets", None);
        self.call("DELETE /connectors/{c}/offsets", "DELETE", "/connectors/conformance-source/offsets", None);
        self.call("DELETE /connectors/{c}", "DELETE", "/connectors/conformance-source", None);
        self.call("DELETE /connectors/{unknown}", "DELETE", "/connectors/conformance-source", None);

        let stopped =
            json!({"name": "conformance-stopped", "config": self.source_config(), "initial_state": "STOPPED"});
        self.call("POST /connectors (initial_state)", "POST", "/connectors", Some(stopped));
        self.wait_state("conformance-stopped", "STOPPED");
        self.call("GET /connectors/{c}/status (stopped)", "GET", "/connectors/conformance-stopped/status", None);
        self.call("GET /admin/loggers", "GET", "/admin/loggers", None);
        self.call("GET /admin/loggers/{logger}", "GET", "/admin/loggers/root", None);
        let logger = "/admin/loggers/org.apache.kafka.connect.runtime.rest";
        self.call("PUT /admin/loggers/{logger}", "PUT", logger, Some(json!({"level": "DEBUG"})));
        self.call("GET /admin/loggers/{logger} (set)", "GET", logger, None);
        self.call("PUT /admin/loggers/{logger} (unknown level)", "PUT", logger, Some(json!({"level": "LOUD"})));
        self.call("PUT /admin/loggers/{logger} (no level)", "PUT", logger, Some(json!({})));
        let cluster = format!("{logger}?scope=cluster");
        self.call("PUT /admin/loggers/{logger}?scope=cluster", "PUT", &cluster, Some(json!({"level": "INFO"})));
    }
}

#[test]
fn rest_calls_answer_with_kafka_connects_status_codes_and_shapes() {
    let connect_dir = tempfile::tempdir().unwrap();
    let connect_port = free_port();
    let _connect = start_connect_distributed(connect_dir.path(), &unique("connect-conformance"), connect_port, None);
    let w = Distributed::new(&[("wasm.ceiling.fs.read", std::env::temp_dir().display().to_string())]);
    let wharf = w.start();
    wait_until("Kafka Connect's REST API", Duration::from_secs(120), || {
        call(connect_port, "GET", "/connectors", None).0 == 200
    });

    let mut connect = Script { port: connect_port, dir: connect_dir.path(), answers: Vec::new() };
    connect.run();
    let mut ours = Script { port: wharf.port, dir: w.dir.path(), answers: Vec::new() };
    ours.run();

    let mut matching = 0;
    let mut unexpected = Vec::new();
    let mut seen_known = Vec::new();
    for ((label, c_status, c_body), (_, w_status, w_body)) in connect.answers.iter().zip(&ours.answers) {
        let mut found = Vec::new();
        if c_status != w_status {
            found.push(format!("status {w_status}, Connect's {c_status}"));
        }
        if c_status == w_status {
            match KEYED_BY_NAME.contains(&label.as_str()) {
                true => {
                    let first =
                        |v: &Value| v.as_object().and_then(|o| o.values().next().cloned()).unwrap_or(Value::Null);
                    differences("answer[*]", &first(c_body), &first(w_body), &mut found)
                }
                false => differences("answer", c_body, w_body, &mut found),
            }
        }
        if found.is_empty() {
            matching += 1;
            continue;
        }
        for difference in found {
            match KNOWN.iter().find(|(l, start, _)| l == label && difference.starts_with(start)) {
                Some(known) => seen_known.push(known.0),
                None => unexpected.push(format!(
                    "{label}: {difference}\n  Connect: {c_status} {}\n  Wharf:   {w_status} {}",
                    shown(c_body),
                    shown(w_body)
                )),
            }
        }
    }
    println!("{matching} of {} calls answer as Kafka Connect 4.1.1 does", connect.answers.len());
    assert!(unexpected.is_empty(), "{} differences from Kafka Connect:\n{}", unexpected.len(), unexpected.join("\n"));
    let gone: Vec<&str> = KNOWN.iter().map(|k| k.0).filter(|label| !seen_known.contains(label)).collect();
    assert!(gone.is_empty(), "these known differences are gone; take them out of KNOWN: {gone:?}");
}
