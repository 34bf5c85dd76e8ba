//! The worker's metrics as a real Prometheus (Debian's, started by `scripts/prometheus`) scrapes
//! them, with the static labels Strimzi's PodMonitor would add, asked for through Prometheus's
//! HTTP API as Strimzi's Connect dashboard asks; and what `promtool check metrics` says of them.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

/// A Prometheus of the test's own, stopped and removed when the test ends.
struct Prometheus {
    dir: PathBuf,
    port: u16,
}

impl Prometheus {
    /// Scrapes the worker on `worker_port` every second, with Strimzi's labels.
    fn scraping(worker_port: u16) -> Prometheus {
        Prometheus::scraping_jobs(&[("connect", worker_port)])
    }

    /// Scrapes `/metrics` of each job's port every second, with Strimzi's labels.
    fn scraping_jobs(jobs: &[(&str, u16)]) -> Prometheus {
        let dir = workspace().join("target").join(unique("prometheus"));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.with_extension("yml");
        let mut text = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n".to_string();
        for (job, port) in jobs {
            text.push_str(&format!(
                "  - job_name: {job}\n    metrics_path: /metrics\n    static_configs:\n\
                 \x20     - targets: ['127.0.0.1:{port}']\n        labels:\n\
                 \x20         strimzi_io_kind: KafkaConnect\n          strimzi_io_cluster: my-connect\n\
                 \x20         namespace: kafka\n          kubernetes_pod_name: my-connect-connect-0\n"
            ));
        }
        std::fs::write(&config, text).unwrap();
        let port = free_port();
        let started = Command::new(workspace().join("scripts/prometheus"))
            .args(["start", "--port", &port.to_string(), "--config"])
            .arg(&config)
            .arg("--dir")
            .arg(&dir)
            .output()
            .expect("run scripts/prometheus");
        assert!(started.status.success(), "scripts/prometheus start: {}", String::from_utf8_lossy(&started.stderr));
        Prometheus { dir, port }
    }

    /// An instant query's result: each series' labels and value.
    fn query(&self, expression: &str) -> Vec<(Value, f64)> {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let Ok(mut response) = ureq::get(&url).query("query", expression).call() else { return Vec::new() };
        let body: Value = response.body_mut().read_json().unwrap_or(Value::Null);
        body["data"]["result"]
            .as_array()
            .map(|series| {
                series
                    .iter()
                    .map(|s| {
                        (s["metric"].clone(), s["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = Command::new(workspace().join("scripts/prometheus")).arg("stop").arg("--dir").arg(&self.dir).output();
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(self.dir.with_extension("yml"));
    }
}

fn create(worker: &Worker, name: &str, config: Value) {
    let (code, body, _) =
        worker.call("POST", "/connectors", Some(&json!({"name": name, "config": config}).to_string()));
    assert_eq!(code, 201, "{body}");
}

#[test]
fn prometheus_scrapes_the_series_strimzis_dashboard_queries() {
    // Kept: its folder holds the worker's log.
    let standalone = Standalone::new(&[]);
    let worker = standalone.start();
    create(&worker, "gen", json!({"connector.class": "datagen", "topic": unique("prom"), "rate": "20"}));
    // Restarted automatically once, then left FAILED.
    let trap = json!({
        "connector.class": "test-trapper",
        "topic": unique("trap"),
        "auto.restart.enable": "true",
        "auto.restart.max.restarts": "1",
        "auto.restart.backoff.unit.ms": "100",
    });
    create(&worker, "trap", trap);
    worker.wait_task_state("gen", 0, "RUNNING");
    worker.wait("task trap-0 FAILED after its automatic restart", Duration::from_secs(60), || {
        worker.task_state("trap", 0).filter(|(state, task)| state == "FAILED" && task["auto_restarts"] == 1)
    });
    let prometheus = Prometheus::scraping(worker.port);

    // The dashboard's own expressions, on the cluster its variables select.
    let selected = r#"strimzi_io_cluster="my-connect",namespace="kafka",kubernetes_pod_name=~"my-connect-connect-.+""#;
    let status = worker.wait("Prometheus to have scraped the worker", Duration::from_secs(60), || {
        let result = prometheus.query(&format!(r#"kafka_connect_connector_status{{{selected}}}"#));
        (result.len() == 2).then_some(result)
    });
    for (labels, value) in &status {
        assert_eq!(labels["status"], "running", "{labels}");
        assert_eq!(labels["strimzi_io_kind"], "KafkaConnect", "{labels}");
        assert_eq!(*value, 1.0);
    }
    let sum = |expression: &str| prometheus.query(expression).first().map_or(f64::NAN, |(_, v)| *v);
    assert_eq!(sum(&format!("sum(kafka_connect_worker_connector_count{{{selected}}})")), 2.0);
    assert_eq!(sum(&format!("sum(kafka_connect_worker_task_count{{{selected}}})")), 2.0);
    assert_eq!(sum(&format!(r#"sum(kafka_connect_connector_task_status{{{selected},status="failed"}})"#)), 1.0);
    assert_eq!(sum(&format!("sum(kafka_connect_worker_connector_failed_task_count{{{selected}}})")), 1.0);
    let class = prometheus.query(&format!(r#"kafka_connect_connector_connector_class{{{selected},connector="gen"}}"#));
    assert_eq!(class.first().map(|(labels, _)| labels["connector_class"].clone()), Some(json!("datagen")));
    // Records move: the source's acknowledged records grow between scrapes.
    worker.wait("a rate of records written", Duration::from_secs(60), || {
        let rate = sum(&format!(
            r#"sum(rate(kafka_connect_source_task_source_record_write_total{{{selected},connector="gen"}}[10s]))"#
        ));
        (rate > 0.0).then_some(())
    });
    // The throughput panels: the producer's bytes and connections, from its statistics.
    worker.wait("the producer's bytes", Duration::from_secs(60), || {
        let bytes = sum(&format!("sum(kafka_producer_outgoing_byte_total{{{selected}}})"));
        let connections = sum(&format!("sum(kafka_producer_connection_count{{{selected}}})"));
        (bytes > 0.0 && connections >= 1.0).then_some(())
    });
    // Wharf's own family: the plugin's calls as a histogram Prometheus can take quantiles of, the
    // trap of the failing task's run, the instance's memory.
    worker.wait("a quantile of the source's poll calls", Duration::from_secs(60), || {
        let p99 = sum(&format!(
            r#"histogram_quantile(0.99, sum by (le) (rate(wharf_task_plugin_call_seconds_bucket{{{selected},connector="gen",call="poll"}}[10s])))"#
        ));
        (p99 > 0.0 && p99 <= 5.0).then_some(())
    });
    assert_eq!(sum(&format!(r#"sum(wharf_task_plugin_traps_total{{{selected},connector="trap"}})"#)), 1.0);
    assert_eq!(sum(&format!(r#"sum(wharf_task_plugin_deadlines_total{{{selected}}})"#)), 0.0);
    assert!(sum(&format!(r#"sum(wharf_task_plugin_memory_bytes{{{selected},connector="gen"}})"#)) > 65536.0);
    let restarts = prometheus.query(&format!(r#"wharf_task_auto_restarts{{{selected},connector="trap"}}"#));
    assert_eq!(restarts.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [1.0], "{restarts:?}");
    let failures = prometheus.query(&format!("kafka_connect_task_error_total_record_failures{{{selected}}}"));
    assert_eq!(failures.len(), 2, "{failures:?}");
    // A log written to a file carries no terminal colour codes.
    let log = worker.log();
    assert!(log.contains("task failed") && !log.contains('\u{1b}'), "{log}");
}

/// `promtool check metrics` on a scrape: the only findings are those Strimzi's names for
/// Connect's attributes carry (gauges named `…_count`, units written `_ms`), which a dashboard
/// made for Connect needs as they are.
#[test]
fn promtool_finds_only_what_connects_names_carry() {
    let metrics_port = free_port();
    // Kept: its folder holds the worker's log.
    let standalone = Standalone::new(&[("metrics.listeners", format!("http://127.0.0.1:{metrics_port}"))]);
    let worker = standalone.start();
    create(&worker, "gen", json!({"connector.class": "datagen", "topic": unique("lint"), "rate": "5"}));
    worker.wait_task_state("gen", 0, "RUNNING");
    let (_, body, _) = worker.call("GET", "/metrics", None);
    let text = body.as_str().unwrap_or_default().to_string();
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (scripts/packages ensure prometheus)");
    use std::io::Write;
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = promtool.wait_with_output().unwrap();
    let findings = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let unexpected: Vec<&str> = findings
        .lines()
        .filter(|l| !l.trim().is_empty())
        // Connect's names as Strimzi's rules give them: gauges named `…_count` and units written
        // `_ms`. Wharf's own family has neither.
        .filter(|l| {
            let connects = l.starts_with("kafka_connect_");
            let expected = l.contains(r#"non-histogram and non-summary metrics should not have "_count" suffix"#)
                || l.contains("metric names should not contain abbreviated units");
            !(connects && expected)
        })
        .collect();
    assert!(unexpected.is_empty(), "promtool: {findings}\n{text}");

    // Asked for OpenMetrics, as Prometheus asks first, the same series in it; on the listener of
    // metrics.listeners, which serves nothing else.
    let url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let mut response = ureq::get(&url)
        .header("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
        .call()
        .expect("GET /metrics");
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(content_type.starts_with("application/openmetrics-text; version=1.0.0"), "{content_type}");
    let open = response.body_mut().read_to_string().unwrap_or_default();
    assert!(open.ends_with("# EOF\n"), "{open}");
    assert!(open.contains("# TYPE kafka_connect_source_task_source_record_poll counter\n"), "{open}");
    assert!(open.contains("\nkafka_connect_source_task_source_record_poll_total{"), "{open}");
    let other = ureq::get(&format!("http://127.0.0.1:{metrics_port}/connectors")).call();
    assert!(matches!(other, Err(ureq::Error::StatusCode(404))), "{other:?}");
    assert!(worker.log().contains(&format!("metrics on http://127.0.0.1:{metrics_port}/metrics")));
}

/// A distributed worker adds its group's figures: the rebalance it completed, the leader, and
/// what the coordinator assigned it.
#[test]
fn a_cluster_members_metrics_say_how_its_group_stands() {
    let worker = Distributed::new(&[]).start();
    create(&worker, "gen", json!({"connector.class": "datagen", "topic": unique("group"), "rate": "5"}));
    worker.wait_task_state("gen", 0, "RUNNING");
    let (_, body, _) = worker.call("GET", "/metrics", None);
    let text = body.as_str().unwrap_or_default().to_string();
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(has("kafka_connect_worker_rebalance_rebalancing 0"), "{text}");
    assert!(has(r#"kafka_connect_worker_rebalance_connect_protocol{connect_protocol="sessioned"} 1"#), "{text}");
    assert!(text.contains("kafka_connect_worker_rebalance_leader_name{leader_name=\"http"), "{text}");
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    assert!(value("kafka_connect_worker_rebalance_completed_rebalances_total") >= 1.0, "{text}");
    assert!(value("kafka_connect_worker_rebalance_epoch") >= 1.0, "{text}");
    assert!(value("kafka_connect_worker_rebalance_time_since_last_rebalance_ms") >= 0.0, "{text}");
    let assigned = text.lines().find(|l| l.starts_with("kafka_connect_coordinator_assigned_tasks{clientid="));
    assert!(assigned.is_some_and(|l| l.ends_with(" 1")), "{text}");
}

/// The Connect group a series belongs to, by the name Strimzi's rules give it.
fn connect_group(name: &str) -> Option<&'static str> {
    const GROUPS: [(&str, &str); 12] = [
        ("kafka_connect_start_time_seconds", "app-info"),
        ("kafka_connect_version", "app-info"),
        ("kafka_connect_commit_id", "app-info"),
        ("kafka_connect_connector_task_", "connector-task-metrics"),
        ("kafka_connect_connector_", "connector-metrics"),
        ("kafka_connect_source_task_", "source-task-metrics"),
        ("kafka_connect_sink_task_", "sink-task-metrics"),
        ("kafka_connect_task_error_", "task-error-metrics"),
        ("kafka_connect_worker_rebalance_", "connect-worker-rebalance-metrics"),
        ("kafka_connect_worker_", "connect-worker-metrics"),
        ("kafka_connect_coordinator_", "connect-coordinator-metrics"),
        ("kafka_connect_", "other connect"),
    ];
    GROUPS.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, group)| *group)
}

/// Each series' name and label names (Prometheus's and the scrape config's left out), of a job.
fn shapes(prometheus: &Prometheus, job: &str) -> std::collections::BTreeSet<String> {
    let ours =
        ["__name__", "job", "instance", "strimzi_io_kind", "strimzi_io_cluster", "namespace", "kubernetes_pod_name"];
    prometheus
        .query(&format!(r#"{{job="{job}",__name__=~"kafka_.+"}}"#))
        .into_iter()
        .filter_map(|(labels, _)| {
            let name = labels["__name__"].as_str()?.to_string();
            let mut names: Vec<&str> =
                labels.as_object()?.keys().map(String::as_str).filter(|label| !ours.contains(label)).collect();
            names.sort();
            Some(format!("{name}{{{}}}", names.join(",")))
        })
        .collect()
}

/// What a Kafka Connect 4.1.1 worker's JMX exporter serves under Strimzi's rules
/// (`tests/metrics/connect-jmx-rules.yaml`) beside what Wharf serves, for the same connectors (the
/// sink with a transform under a predicate, whose Connect groups hold text the rules drop): for
/// every Connect group the series' names and label names are the same, but for the differences
/// `docs/operations.md` lists (attributes not built yet). The Kafka clients' groups are compared
/// the other way only: every client series Wharf serves, Connect's clients have too.
#[test]
fn connects_metric_names_and_labels_under_strimzis_rules_are_wharfs() {
    let standalone = Standalone::new(&[]);
    let dir = standalone.dir.path().to_path_buf();
    let (input, output, topic) = (dir.join("in.txt"), dir.join("out.txt"), unique("compare"));
    std::fs::write(&input, "a\nb\nc\n").unwrap();
    let worker = standalone.start();
    let grant = dir.display().to_string();
    create(
        &worker,
        "src",
        json!({"connector.class": "file-source", "file": input, "topic": topic, "wasm.fs.read": grant}),
    );
    create(
        &worker,
        "sink",
        json!({"connector.class": "file-sink", "file": output, "topics": topic, "wasm.fs.write": grant,
            "transforms": "mark", "transforms.mark.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.mark.header": "seen", "transforms.mark.value.literal": "yes",
            "transforms.mark.predicate": "any", "predicates": "any",
            "predicates.any.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "predicates.any.pattern": ".*"}),
    );
    worker.wait_task_state("src", 0, "RUNNING");
    worker.wait_task_state("sink", 0, "RUNNING");

    let connect_dir = dir.join("connect");
    std::fs::create_dir_all(&connect_dir).unwrap();
    let connect_topic = unique("compare-connect");
    let agent = std::env::var("JMX_EXPORTER_JAR").expect("JMX_EXPORTER_JAR is not set: run ./run test");
    let rules = workspace().join("tests/metrics/connect-jmx-rules.yaml");
    let exporter_port = free_port();
    let file = |name: &str| connect_dir.join(name).display().to_string();
    std::fs::write(connect_dir.join("in.txt"), "a\nb\nc\n").unwrap();
    let connectors = [
        (
            "src",
            vec![
                ("connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector".to_string()),
                ("file", file("in.txt")),
                ("topic", connect_topic.clone()),
            ],
        ),
        (
            "sink",
            vec![
                ("connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector".to_string()),
                ("file", file("out.txt")),
                ("topics", connect_topic.clone()),
                ("transforms", "mark".to_string()),
                ("transforms.mark.type", "org.apache.kafka.connect.transforms.InsertHeader".to_string()),
                ("transforms.mark.header", "seen".to_string()),
                ("transforms.mark.value.literal", "yes".to_string()),
                ("transforms.mark.predicate", "any".to_string()),
                ("predicates", "any".to_string()),
                ("predicates.any.type", "org.apache.kafka.connect.transforms.predicates.TopicNameMatches".to_string()),
                ("predicates.any.pattern", ".*".to_string()),
            ],
        ),
    ];
    let _connect = KillOnDrop(start_connect_with(
        &connect_dir,
        None,
        &connectors,
        &[format!("-javaagent:{agent}=127.0.0.1:{exporter_port}:{}", rules.display())],
    ));
    let prometheus = Prometheus::scraping_jobs(&[("wharf", worker.port), ("kafka-connect", exporter_port)]);
    // Both workers' tasks run, and their sinks have consumed (their consumers' byte counts
    // exist); Connect's groups show once its tasks have registered theirs, which on a busy
    // machine may be some scrapes after its task statuses: every group Wharf shows is waited for.
    let wharf = worker.wait("Wharf's metrics", Duration::from_secs(60), || {
        let shapes = shapes(&prometheus, "wharf");
        shapes.iter().any(|s| s.starts_with("kafka_consumer_incoming_byte_total")).then_some(shapes)
    });
    let groups = |shapes: &std::collections::BTreeSet<String>| -> std::collections::BTreeSet<&'static str> {
        shapes.iter().filter_map(|s| connect_group(s)).filter(|g| *g != "app-info").collect()
    };
    let connect = worker.wait("Kafka Connect's metrics through the JMX exporter", Duration::from_secs(120), || {
        let shapes = shapes(&prometheus, "kafka-connect");
        let running =
            prometheus.query(r#"kafka_connect_connector_task_status{job="kafka-connect",status="running"}"#).len();
        let consumed = shapes.iter().any(|s| s.starts_with("kafka_consumer_incoming_byte_total"));
        (running == 2 && consumed && groups(&shapes).is_superset(&groups(&wharf))).then_some(shapes)
    });

    let mut differences = Vec::new();
    for shape in connect.iter().filter(|s| connect_group(s).is_some()) {
        if !wharf.contains(shape) {
            differences.push(format!("{} only in Connect: {shape}", connect_group(shape).unwrap_or_default()));
        }
    }
    for shape in &wharf {
        let is_connects = connect_group(shape).is_some() || !shape.starts_with("kafka_connect_");
        if is_connects && !connect.contains(shape) {
            differences.push(format!("only in Wharf: {shape}"));
        }
    }
    differences.sort();
    let documented: Vec<String> = DOCUMENTED_DIFFERENCES.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences, documented,
        "the differences from Connect's metrics changed: docs/operations.md lists them"
    );
}

/// A distributed Kafka Connect 4.1.1 worker's rebalance and coordinator groups, through the JMX
/// exporter under Strimzi's rules, beside a distributed Wharf worker's, each the one member of a
/// group of its own running one source: the series' names and label names are the same, but for
/// the differences `docs/operations.md` lists.
#[test]
fn a_cluster_members_groups_are_connects_under_strimzis_rules() {
    let wharf = Distributed::new(&[]).start();
    create(&wharf, "gen", json!({"connector.class": "datagen", "topic": unique("cluster-compare"), "rate": "5"}));
    wharf.wait_task_state("gen", 0, "RUNNING");

    let dir = tempfile::tempdir().unwrap();
    let agent = std::env::var("JMX_EXPORTER_JAR").expect("JMX_EXPORTER_JAR is not set: run ./run test");
    let rules = workspace().join("tests/metrics/connect-jmx-rules.yaml");
    let (exporter_port, rest_port) = (free_port(), free_port());
    let _connect = start_connect_distributed_with(
        dir.path(),
        &unique("connect-compare"),
        rest_port,
        None,
        &[format!("-javaagent:{agent}=127.0.0.1:{exporter_port}:{}", rules.display())],
    );
    let rest = |method: &str, path: &str, body: Option<Value>| -> (u16, Value) {
        rest_call(rest_port, method, path, body.as_ref())
    };
    wait_for("Kafka Connect's REST API", Duration::from_secs(120), || (rest("GET", "/", None).0 == 200).then_some(()));
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "a\nb\n").unwrap();
    let source = json!({"name": "src", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": input.display().to_string(), "topic": unique("cluster-compare-connect")}});
    let created = wait_for("the connector in Kafka Connect", Duration::from_secs(60), || {
        let (code, body) = rest("POST", "/connectors", Some(source.clone()));
        (code == 201 || code == 409).then_some(body)
    });
    let prometheus = Prometheus::scraping_jobs(&[("wharf", wharf.port), ("kafka-connect", exporter_port)]);
    let cluster_groups = ["connect-worker-rebalance-metrics", "connect-coordinator-metrics"];
    let of_the_cluster = |shapes: std::collections::BTreeSet<String>| -> std::collections::BTreeSet<String> {
        shapes.into_iter().filter(|s| connect_group(s).is_some_and(|g| cluster_groups.contains(&g))).collect()
    };
    let ours = wharf.wait("Wharf's cluster metrics", Duration::from_secs(60), || {
        let shapes = of_the_cluster(shapes(&prometheus, "wharf"));
        (shapes.iter().any(|s| s.starts_with("kafka_connect_coordinator_"))).then_some(shapes)
    });
    let theirs = wharf.wait("Kafka Connect's cluster metrics", Duration::from_secs(120), || {
        let shapes = of_the_cluster(shapes(&prometheus, "kafka-connect"));
        let running = prometheus.query(r#"kafka_connect_connector_task_status{job="kafka-connect",status="running"}"#);
        let groups: std::collections::BTreeSet<&str> = shapes.iter().filter_map(|s| connect_group(s)).collect();
        (!running.is_empty() && groups.len() == cluster_groups.len()).then_some(shapes)
    });
    let mut differences: Vec<String> = theirs
        .difference(&ours)
        .map(|s| format!("{} only in Connect: {s}", connect_group(s).unwrap_or_default()))
        .chain(ours.difference(&theirs).map(|s| format!("only in Wharf: {s}")))
        .collect();
    differences.sort();
    let documented: Vec<String> = DOCUMENTED_CLUSTER_DIFFERENCES.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences, documented,
        "the differences from Connect's cluster metrics changed: docs/operations.md lists them (created: {created})"
    );
}

/// What `a_cluster_members_groups_are_connects_under_strimzis_rules` finds different: nothing.
const DOCUMENTED_CLUSTER_DIFFERENCES: &[&str] = &[];

/// What `connects_metric_names_and_labels_under_strimzis_rules_are_wharfs` finds different, as
/// docs/operations.md explains it: Connect's active counts of records (which come with the
/// exporter's `_objectname` label), and Wharf's worker app-info, which a Connect 4.1.1 worker does
/// not serve through the exporter.
const DOCUMENTED_DIFFERENCES: &[&str] = &[
    "only in Wharf: kafka_connect_commit_id{clientid,commit_id}",
    "only in Wharf: kafka_connect_start_time_seconds{clientid}",
    "only in Wharf: kafka_connect_version{clientid,version}",
    "sink-task-metrics only in Connect: kafka_connect_sink_task_sink_record_active_count{_objectname,connector,task}",
    "source-task-metrics only in Connect: kafka_connect_source_task_source_record_active_count{_objectname,connector,task}",
];
