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
        let dir = workspace().join("target").join(unique("prometheus"));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.with_extension("yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: connect\n    metrics_path: /metrics\n    static_configs:\n\
                 \x20     - targets: ['127.0.0.1:{worker_port}']\n        labels:\n\
                 \x20         strimzi_io_kind: KafkaConnect\n          strimzi_io_cluster: my-connect\n\
                 \x20         namespace: kafka\n          kubernetes_pod_name: my-connect-connect-0\n"
            ),
        )
        .unwrap();
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
    let worker = Standalone::new(&[]).start();
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
        .filter(|l| !l.contains(r#"non-histogram and non-summary metrics should not have "_count" suffix"#))
        .collect();
    assert!(unexpected.is_empty(), "promtool: {findings}\n{text}");
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
