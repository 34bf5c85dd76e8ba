//! The worker's metrics for Prometheus (`GET /metrics`), under the names Strimzi's JMX exporter
//! rules give Kafka Connect's metric groups, so that dashboards built for Connect read Wharf.
//!
//! Served: app-info (start time, version, commit), `connector-metrics` (status, class, type,
//! version), `connector-task-metrics` status, `connect-worker-metrics` (connector and task
//! counts, per connector its tasks by state, and the starts of connectors and tasks) and
//! `connect-coordinator-metrics` (assigned connectors and tasks), made from the statuses when
//! scraped: a connector or task counts as this worker's while its latest status was written by
//! this worker, as Connect registers a group where the connector or task runs, and a deleted
//! one's series are gone with its status. Then each running task's records, batches and offset
//! commits (`source-task-metrics`, `sink-task-metrics`, `connector-task-metrics`: totals, rates,
//! averages and maxima) and failures (`task-error-metrics`), from the counts the tasks keep
//! (`tasks`). And a cluster member's rebalances (`connect-worker-rebalance-metrics`), and the task
//! producers' and sink consumers' bytes and connections (`clients`). Of Wharf's own family, each
//! task's calls into its plugin (`plugin_calls`) and its automatic restarts; and the metrics each
//! task's plugin keeps of its own (`plugin_metrics`, `kafka_connect_plugins_*`).

pub mod clients;
pub mod exposition;
pub mod plugin_calls;
pub mod plugin_metrics;
pub mod tasks;

use exposition::{Exposition, Kind};
use wharf_connect::model::{ConnectorKind, ConnectorStatus, State};

/// What one scrape reads of the worker.
pub struct WorkerView {
    pub worker_id: String,
    /// The Kafka Connect version the worker answers as, and its commit.
    pub version: String,
    pub commit: String,
    pub started_unix_ms: u64,
    /// Whether the worker is a member of a cluster (the coordinator's group exists).
    pub distributed: bool,
    pub connectors: Vec<ConnectorView>,
    /// The counts of the tasks this worker runs, by connector and task.
    pub tasks: Vec<((String, u32), std::sync::Arc<tasks::TaskCounters>)>,
    /// The worker's starts of connectors and tasks.
    pub startups: std::sync::Arc<tasks::WorkerCounts>,
    /// A member of a cluster: its group's rebalances.
    pub rebalance: Option<RebalanceView>,
    /// The plugin files the worker loaded.
    pub plugin_loads: PluginLoads,
}

/// The plugin files a worker loaded since it started, by where their code came from, and the
/// seconds compiles took (Wharf's own).
#[derive(Debug, Clone, Copy, Default)]
pub struct PluginLoads {
    pub from_cache: u64,
    pub compiled: u64,
    pub failed: u64,
    pub compile_seconds: f64,
}

/// Wharf's own worker series: plugin loads, compile time, tasks past their stop deadline.
fn wharf_worker_families(out: &mut Exposition, loads: &PluginLoads, counts: &tasks::WorkerCounts) {
    const LOADS: &str = "wharf_worker_plugin_loads_total";
    out.family(
        LOADS,
        Kind::Counter,
        "Plugin files loaded, by where their code came from (the compile cache, compiled now) or failed",
    );
    for (from, count) in [("cache", loads.from_cache), ("compiled", loads.compiled), ("failed", loads.failed)] {
        out.sample(LOADS, &[("from", from)], count as f64);
    }
    const COMPILE: &str = "wharf_worker_plugin_compile_seconds_total";
    out.family(COMPILE, Kind::Counter, "Seconds spent compiling plugin files not in the compile cache");
    out.sample(COMPILE, &[], loads.compile_seconds);
    const LATE: &str = "wharf_worker_tasks_past_stop_deadline_total";
    out.family(LATE, Kind::Counter, "Tasks that had not stopped within task.shutdown.graceful.timeout.ms");
    out.sample(LATE, &[], counts.past_stop_deadline.load(std::sync::atomic::Ordering::Relaxed) as f64);
}

/// Where the worker's group stands (Connect's `connect-worker-rebalance-metrics`).
pub struct RebalanceView {
    pub rebalancing: bool,
    pub epoch: i32,
    /// The leader's URL, once an assignment named it.
    pub leader: Option<String>,
    /// Rebalances completed, and the milliseconds they took together and the longest.
    pub completed: u64,
    pub total_ms: u64,
    pub max_ms: u64,
    pub last_completed: Option<std::time::Instant>,
    /// Its calls to the group coordinator (`connect-coordinator-metrics`).
    pub coordinator: CoordinatorCalls,
}

/// A member's calls to its group coordinator since the worker started: attempts to rebalance
/// that failed, JoinGroup and SyncGroup calls answered and the milliseconds they took, heartbeats
/// answered and when the last was.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoordinatorCalls {
    pub failed: u64,
    pub joins: u64,
    pub join_ms: u64,
    pub syncs: u64,
    pub sync_ms: u64,
    pub heartbeats: u64,
    pub last_heartbeat: Option<std::time::Instant>,
}

/// Connect's coordinator figures of the group (`connect-coordinator-metrics` beside the
/// assignment): totals since the worker started, averages over them, and how long ago.
fn coordinator_families(out: &mut Exposition, client: &[(&str, &str)], rebalance: &RebalanceView) {
    let calls = &rebalance.coordinator;
    let average = |total: u64, count: u64| if count == 0 { f64::NAN } else { total as f64 / count as f64 };
    let ago = |at: Option<std::time::Instant>| at.map_or(-1.0, |at| at.elapsed().as_secs() as f64);
    let families: [(&str, Kind, &str, f64); 11] = [
        ("failed_rebalance_total", Kind::Counter, "Rebalance attempts that failed", calls.failed as f64),
        ("heartbeat_total", Kind::Counter, "Heartbeats the coordinator answered", calls.heartbeats as f64),
        ("join_total", Kind::Counter, "JoinGroup calls the coordinator answered", calls.joins as f64),
        ("join_time_avg", Kind::Gauge, "The average JoinGroup call, in ms", average(calls.join_ms, calls.joins)),
        ("sync_total", Kind::Counter, "SyncGroup calls the coordinator answered", calls.syncs as f64),
        ("sync_time_avg", Kind::Gauge, "The average SyncGroup call, in ms", average(calls.sync_ms, calls.syncs)),
        ("rebalance_total", Kind::Counter, "Rebalances completed", rebalance.completed as f64),
        (
            "rebalance_latency_total",
            Kind::Counter,
            "Milliseconds the completed rebalances took",
            rebalance.total_ms as f64,
        ),
        (
            "rebalance_latency_avg",
            Kind::Gauge,
            "The average completed rebalance, in ms",
            average(rebalance.total_ms, rebalance.completed),
        ),
        (
            "last_rebalance_seconds_ago",
            Kind::Gauge,
            "Seconds since the last rebalance completed (-1 before the first)",
            ago(rebalance.last_completed),
        ),
        (
            "last_heartbeat_seconds_ago",
            Kind::Gauge,
            "Seconds since the last heartbeat was answered (-1 before the first)",
            ago(calls.last_heartbeat),
        ),
    ];
    for (suffix, kind, help, value) in families {
        let family = format!("kafka_connect_coordinator_{suffix}");
        out.family(&family, kind, help);
        out.sample(&family, client, value);
    }
}

/// A connector whose config exists.
pub struct ConnectorView {
    pub name: String,
    /// `connector.class`, as the config gives it.
    pub class: String,
    pub kind: Option<ConnectorKind>,
    pub status: Option<ConnectorStatus>,
}

/// A state as Connect's `status` attributes write it.
fn state_name(state: State) -> &'static str {
    match state {
        State::Unassigned => "unassigned",
        State::Running => "running",
        State::Paused => "paused",
        State::Stopped => "stopped",
        State::Failed => "failed",
        State::Restarting => "restarting",
    }
}

/// One series of every task (or of every source or sink task): its family, and its value from
/// the task's counts and window.
struct TaskSeries {
    family: &'static str,
    kind: Kind,
    help: &'static str,
    /// The tasks of this kind only; every task when none.
    of: Option<ConnectorKind>,
    value: fn(&tasks::TaskCounters, &tasks::Window) -> f64,
}

const fn series(
    family: &'static str,
    kind: Kind,
    of: Option<ConnectorKind>,
    help: &'static str,
    value: fn(&tasks::TaskCounters, &tasks::Window) -> f64,
) -> TaskSeries {
    TaskSeries { family, kind, help, of, value }
}

const SOURCE: Option<ConnectorKind> = Some(ConnectorKind::Source);
const SINK: Option<ConnectorKind> = Some(ConnectorKind::Sink);
const EVERY: Option<ConnectorKind> = None;

fn load(count: &std::sync::atomic::AtomicU64) -> f64 {
    count.load(std::sync::atomic::Ordering::Relaxed) as f64
}

/// Connect's task groups: `source-task-metrics`, `sink-task-metrics`, `connector-task-metrics`
/// and `task-error-metrics`, under Strimzi's names.
#[rustfmt::skip]
const TASK_SERIES: &[TaskSeries] = &[
    series("kafka_connect_source_task_source_record_poll_total", Kind::Counter, SOURCE, "Records the task's poll returned", |c, _| c.read() as f64),
    series("kafka_connect_source_task_source_record_poll_rate", Kind::Gauge, SOURCE, "Records the task's poll returned, a second", |_, w| w.read_rate),
    series("kafka_connect_source_task_source_record_write_total", Kind::Counter, SOURCE, "Records written to Kafka (acknowledged), after transforms", |c, _| c.written() as f64),
    series("kafka_connect_source_task_source_record_write_rate", Kind::Gauge, SOURCE, "Records written to Kafka (acknowledged), after transforms, a second", |_, w| w.written_rate),
    series("kafka_connect_source_task_poll_batch_avg_time_ms", Kind::Gauge, SOURCE, "The average time in milliseconds the task's poll took", |_, w| w.batch_ms.avg),
    series("kafka_connect_source_task_poll_batch_max_time_ms", Kind::Gauge, SOURCE, "The longest time in milliseconds the task's poll took", |_, w| w.batch_ms.max),
    series("kafka_connect_sink_task_sink_record_read_total", Kind::Counter, SINK, "Records read from Kafka, before transforms", |c, _| c.read() as f64),
    series("kafka_connect_sink_task_sink_record_read_rate", Kind::Gauge, SINK, "Records read from Kafka, before transforms, a second", |_, w| w.read_rate),
    series("kafka_connect_sink_task_sink_record_send_total", Kind::Counter, SINK, "Records handed to the task's put, after transforms", |c, _| c.written() as f64),
    series("kafka_connect_sink_task_sink_record_send_rate", Kind::Gauge, SINK, "Records handed to the task's put, after transforms, a second", |_, w| w.written_rate),
    series("kafka_connect_sink_task_put_batch_avg_time_ms", Kind::Gauge, SINK, "The average time in milliseconds the task's put took", |_, w| w.batch_ms.avg),
    series("kafka_connect_sink_task_put_batch_max_time_ms", Kind::Gauge, SINK, "The longest time in milliseconds the task's put took", |_, w| w.batch_ms.max),
    // A commit Wharf starts is carried out: none is skipped.
    series("kafka_connect_sink_task_partition_count", Kind::Gauge, SINK, "The partitions assigned to the task", |c, _| load(&c.partitions)),
    series("kafka_connect_sink_task_offset_commit_seq_no", Kind::Gauge, SINK, "The offset commits the task started", |c, _| load(&c.commits_started)),
    series("kafka_connect_sink_task_offset_commit_completion_total", Kind::Counter, SINK, "The offset commits the task completed", |c, _| c.commit_time.count() as f64),
    series("kafka_connect_sink_task_offset_commit_completion_rate", Kind::Gauge, SINK, "The offset commits the task completed, a second", |_, w| w.commit_rate),
    series("kafka_connect_sink_task_offset_commit_skip_total", Kind::Counter, SINK, "The offset commits skipped", |_, _| 0.0),
    series("kafka_connect_sink_task_offset_commit_skip_rate", Kind::Gauge, SINK, "The offset commits skipped, a second", |_, _| 0.0),
    series("kafka_connect_connector_task_running_ratio", Kind::Gauge, EVERY, "The part of the last minute the task ran", |_, w| w.running_ratio),
    // A paused Wharf task is stopped: it has no series while it is paused.
    series("kafka_connect_connector_task_pause_ratio", Kind::Gauge, EVERY, "The part of the last minute the task was paused", |_, _| 0.0),
    series("kafka_connect_connector_task_batch_size_avg", Kind::Gauge, EVERY, "The average records of the task's batches", |_, w| w.batch_size.avg),
    series("kafka_connect_connector_task_batch_size_max", Kind::Gauge, EVERY, "The most records of one of the task's batches", |_, w| w.batch_size.max),
    series("kafka_connect_connector_task_offset_commit_avg_time_ms", Kind::Gauge, EVERY, "The average time in milliseconds the task's offset commits took", |_, w| w.commit_ms.avg),
    series("kafka_connect_connector_task_offset_commit_max_time_ms", Kind::Gauge, EVERY, "The longest time in milliseconds one of the task's offset commits took", |_, w| w.commit_ms.max),
    series("kafka_connect_task_error_total_record_failures", Kind::Gauge, EVERY, "Record processing failures of the task", |c, _| load(&c.failures)),
    series("kafka_connect_task_error_total_record_errors", Kind::Gauge, EVERY, "Records that failed, with no retry left", |c, _| load(&c.failures)),
    series("kafka_connect_task_error_total_records_skipped", Kind::Gauge, EVERY, "Records skipped under errors.tolerance=all", |c, _| load(&c.skipped)),
    series("kafka_connect_task_error_total_retries", Kind::Gauge, EVERY, "Operations retried after a retriable error", |c, _| load(&c.retries)),
    series("kafka_connect_task_error_total_errors_logged", Kind::Gauge, EVERY, "Failures written to the log (errors.log.enable)", |c, _| load(&c.errors_logged)),
    series("kafka_connect_task_error_deadletterqueue_produce_requests", Kind::Gauge, EVERY, "Records handed to the dead-letter queue", |c, _| load(&c.dlq_requests)),
    series("kafka_connect_task_error_deadletterqueue_produce_failures", Kind::Gauge, EVERY, "Records the dead-letter queue could not take", |c, _| load(&c.dlq_failures)),
    series("kafka_connect_task_error_last_error_timestamp", Kind::Gauge, EVERY, "When a record last failed, in milliseconds since the epoch (0 before the first)", |c, _| load(&c.last_error_ms)),
];

/// Each task's series of Connect's task groups (`TASK_SERIES`).
fn task_families(out: &mut Exposition, tasks: &[((String, u32), std::sync::Arc<tasks::TaskCounters>)]) {
    let now = std::time::Instant::now();
    // A task's window is read once per scrape: each reading records the scrape.
    let rows: Vec<(&str, String, &tasks::TaskCounters, tasks::Window)> = tasks
        .iter()
        .map(|((connector, task), counters)| {
            (connector.as_str(), task.to_string(), counters.as_ref(), counters.window(now))
        })
        .collect();
    for series in TASK_SERIES {
        out.family(series.family, series.kind, series.help);
        for (connector, task, counters, window) in
            rows.iter().filter(|row| series.of.is_none_or(|kind| row.2.kind == kind))
        {
            out.sample(series.family, &[("connector", connector), ("task", task)], (series.value)(counters, window));
        }
    }
}

/// A transactional source task's transaction sizes (Connect's `transaction-size-*` of
/// `source-task-metrics`, which only its exactly-once tasks have).
fn transaction_families(out: &mut Exposition, tasks: &[((String, u32), std::sync::Arc<tasks::TaskCounters>)]) {
    let sized: Vec<(&str, String, (f64, f64, f64))> = tasks
        .iter()
        .filter_map(|((connector, task), counters)| {
            counters.transactions.get().map(|sizes| (connector.as_str(), task.to_string(), sizes.read()))
        })
        .collect();
    if sized.is_empty() {
        return;
    }
    type Pick = fn(&(f64, f64, f64)) -> f64;
    let families: [(&str, &str, Pick); 3] = [
        ("min", "The records of the smallest transaction the task committed", |s| s.0),
        ("max", "The records of the largest transaction the task committed", |s| s.1),
        ("avg", "The average records of the transactions the task committed", |s| s.2),
    ];
    for (suffix, help, pick) in families {
        let family = format!("kafka_connect_source_task_transaction_size_{suffix}");
        out.family(&family, Kind::Gauge, help);
        for (connector, task, sizes) in &sized {
            out.sample(&family, &[("connector", connector), ("task", task)], pick(sizes));
        }
    }
}

/// The worker's starts of connectors and tasks (`connect-worker-metrics`): totals, and the part
/// of the attempts that succeeded or failed (0 before the first, as Connect shows it).
fn startup_families(out: &mut Exposition, startups: &tasks::WorkerCounts) {
    use std::sync::atomic::Ordering::Relaxed;
    let counts = [
        ("connector", startups.connector_success.load(Relaxed), startups.connector_failure.load(Relaxed)),
        ("task", startups.task_success.load(Relaxed), startups.task_failure.load(Relaxed)),
    ];
    for (what, success, failure) in counts {
        let attempts = success + failure;
        let part = |n: u64| if attempts == 0 { 0.0 } else { n as f64 / attempts as f64 };
        let families: [(&str, Kind, String, f64); 5] = [
            (
                "startup_attempts_total",
                Kind::Counter,
                format!("The {what} starts this worker attempted"),
                attempts as f64,
            ),
            ("startup_success_total", Kind::Counter, format!("The {what} starts that succeeded"), success as f64),
            ("startup_failure_total", Kind::Counter, format!("The {what} starts that failed"), failure as f64),
            (
                "startup_success_percentage",
                Kind::Gauge,
                format!("The part of the {what} starts that succeeded"),
                part(success),
            ),
            (
                "startup_failure_percentage",
                Kind::Gauge,
                format!("The part of the {what} starts that failed"),
                part(failure),
            ),
        ];
        for (suffix, kind, help, value) in families {
            let family = format!("kafka_connect_worker_{what}_{suffix}");
            out.family(&family, kind, &help);
            out.sample(&family, &[], value);
        }
    }
}

/// The Kafka clients' bytes and connections, as Connect's producer and consumer metrics.
fn client_families(out: &mut Exposition, live: &[std::sync::Arc<clients::ClientFigures>]) {
    use std::sync::atomic::Ordering::Relaxed;
    type Pick = fn(&clients::ClientFigures) -> u64;
    for (kind, prefix) in
        [(clients::ClientKind::Producer, "kafka_producer"), (clients::ClientKind::Consumer, "kafka_consumer")]
    {
        let families: [(&str, Kind, &str, Pick); 3] = [
            ("outgoing_byte_total", Kind::Counter, "Bytes the client sent to the brokers", |c| {
                c.sent_bytes.load(Relaxed)
            }),
            ("incoming_byte_total", Kind::Counter, "Bytes the client received from the brokers", |c| {
                c.received_bytes.load(Relaxed)
            }),
            ("connection_count", Kind::Gauge, "Brokers the client is connected to", |c| c.connections.load(Relaxed)),
        ];
        for (suffix, type_, help, pick) in families {
            let family = format!("{prefix}_{suffix}");
            out.family(&family, type_, help);
            for client in live.iter().filter(|c| c.kind == kind) {
                if let Some(id) = client.client_id() {
                    out.sample(&family, &[("clientid", id)], pick(client) as f64);
                }
            }
        }
    }
}

/// Wharf's own figures of the Kafka clients: queues, requests in flight, round trips, batches.
fn wharf_client_families(out: &mut Exposition, live: &[std::sync::Arc<clients::ClientFigures>]) {
    use std::sync::atomic::Ordering::Relaxed;
    type Pick = fn(&clients::ClientFigures) -> f64;
    let families: [(&str, &str, Pick); 7] = [
        (
            "wharf_client_queued_messages",
            "Messages waiting in the client's queues (a producer's: not yet acknowledged)",
            |c| c.queued_messages.load(Relaxed) as f64,
        ),
        ("wharf_client_queued_bytes", "Bytes of the messages waiting in the client's queues", |c| {
            c.queued_bytes.load(Relaxed) as f64
        }),
        ("wharf_client_requests_in_flight", "Requests sent to the brokers and not answered yet", |c| {
            c.in_flight.load(Relaxed) as f64
        }),
        (
            "wharf_client_round_trip_avg_seconds",
            "The brokers' average round trip, over librdkafka's last statistics window",
            |c| c.rtt_avg_us.load(Relaxed) as f64 / 1e6,
        ),
        (
            "wharf_client_round_trip_p99_seconds",
            "The worst broker's 99th percentile round trip, over the same window",
            |c| c.rtt_p99_us.load(Relaxed) as f64 / 1e6,
        ),
        ("wharf_client_batch_avg_bytes", "A producer's average batch, in bytes", |c| {
            c.batch_bytes_avg.load(Relaxed) as f64
        }),
        ("wharf_client_batch_avg_messages", "A producer's average batch, in messages", |c| {
            c.batch_messages_avg.load(Relaxed) as f64
        }),
    ];
    for (family, help, pick) in families {
        out.family(family, Kind::Gauge, help);
        // Only producers batch.
        let batches = family.contains("_batch_");
        for client in live.iter().filter(|c| !batches || c.kind == clients::ClientKind::Producer) {
            let kind = match client.kind {
                clients::ClientKind::Producer => "producer",
                clients::ClientKind::Consumer => "consumer",
            };
            if let Some(id) = client.client_id() {
                out.sample(family, &[("clientid", id), ("client", kind)], pick(client));
            }
        }
    }
}

/// The group's rebalances as this worker saw them.
fn rebalance_families(out: &mut Exposition, rebalance: &RebalanceView) {
    const P: &str = "kafka_connect_worker_rebalance_";
    let stats = rebalance;
    out.family(&format!("{P}connect_protocol"), Kind::Untyped, "The rebalance protocol the worker speaks");
    out.sample(&format!("{P}connect_protocol"), &[("connect_protocol", "sessioned")], 1.0);
    if let Some(leader) = &rebalance.leader {
        out.family(&format!("{P}leader_name"), Kind::Untyped, "The URL of the group's leader");
        out.sample(&format!("{P}leader_name"), &[("leader_name", leader)], 1.0);
    }
    let average = match stats.completed {
        0 => 0.0,
        n => stats.total_ms as f64 / n as f64,
    };
    let gauges: [(&str, &str, f64); 5] = [
        ("epoch", "The group generation this worker is in", rebalance.epoch as f64),
        ("rebalancing", "Whether a rebalance is under way (1) or not (0)", f64::from(u8::from(rebalance.rebalancing))),
        ("rebalance_avg_time_ms", "The average time the worker's completed rebalances took", average),
        ("rebalance_max_time_ms", "The longest time one of the worker's rebalances took", stats.max_ms as f64),
        (
            "time_since_last_rebalance_ms",
            "Milliseconds since the worker's last rebalance completed (-1 before the first)",
            stats.last_completed.map_or(-1.0, |at| at.elapsed().as_millis() as f64),
        ),
    ];
    for (name, help, value) in gauges {
        out.family(&format!("{P}{name}"), Kind::Gauge, help);
        out.sample(&format!("{P}{name}"), &[], value);
    }
    out.family(&format!("{P}completed_rebalances_total"), Kind::Counter, "The rebalances this worker completed");
    out.sample(&format!("{P}completed_rebalances_total"), &[], stats.completed as f64);
}

/// The scrape's text.
pub fn render(view: &WorkerView, format: exposition::Format) -> String {
    let mut out = Exposition::new(format);
    let me = view.worker_id.as_str();
    let client = [("clientid", me)];

    out.family(
        "kafka_connect_start_time_seconds",
        Kind::Gauge,
        "The time the worker started, in seconds since the epoch",
    );
    out.sample("kafka_connect_start_time_seconds", &client, view.started_unix_ms as f64 / 1000.0);
    out.family("kafka_connect_version", Kind::Untyped, "The Kafka Connect version the worker answers as");
    out.sample("kafka_connect_version", &[("clientid", me), ("version", &view.version)], 1.0);
    out.family("kafka_connect_commit_id", Kind::Untyped, "The commit the worker was built from");
    out.sample("kafka_connect_commit_id", &[("clientid", me), ("commit_id", &view.commit)], 1.0);

    // The connectors and tasks this worker runs.
    let here: Vec<(&ConnectorView, &ConnectorStatus)> = view
        .connectors
        .iter()
        .filter_map(|c| c.status.as_ref().map(|s| (c, s)))
        .filter(|(_, s)| s.connector.worker_id == me)
        .collect();
    let tasks_here = |status: &ConnectorStatus| -> Vec<(u32, State)> {
        status.tasks.iter().filter(|(_, t)| t.worker_id == me).map(|(id, t)| (*id, t.state)).collect()
    };

    let connector_families: [(&str, &str); 4] = [
        ("kafka_connect_connector_status", "The connector's status (1 for the one it has)"),
        ("kafka_connect_connector_connector_class", "The connector's class"),
        ("kafka_connect_connector_connector_type", "The connector's type: source or sink"),
        ("kafka_connect_connector_connector_version", "The version of the connector's plugin"),
    ];
    for (family, help) in connector_families {
        out.family(family, Kind::Gauge, help);
        for (connector, status) in &here {
            let name = connector.name.as_str();
            let labels: [(&str, &str); 2] = match family {
                "kafka_connect_connector_status" => {
                    [("connector", name), ("status", state_name(status.connector.state))]
                }
                "kafka_connect_connector_connector_class" => {
                    [("connector", name), ("connector_class", &connector.class)]
                }
                "kafka_connect_connector_connector_type" => [
                    ("connector", name),
                    ("connector_type", connector.kind.or(status.kind).map_or("unknown", ConnectorKind::name)),
                ],
                _ => [
                    ("connector", name),
                    ("connector_version", status.connector.version.as_deref().unwrap_or("unknown")),
                ],
            };
            out.sample(family, &labels, 1.0);
        }
    }

    out.family("kafka_connect_connector_task_status", Kind::Gauge, "The task's status (1 for the one it has)");
    for connector in &view.connectors {
        let Some(status) = &connector.status else { continue };
        for (id, state) in tasks_here(status) {
            let task = id.to_string();
            out.sample(
                "kafka_connect_connector_task_status",
                &[("connector", &connector.name), ("task", &task), ("status", state_name(state))],
                1.0,
            );
        }
    }

    // Wharf's own: Strimzi keeps this count in the KafkaConnector's status (`autoRestart.count`).
    out.family(
        "wharf_task_auto_restarts",
        Kind::Gauge,
        "Automatic restarts in a row of the task (auto.restart.*); 0 once it has run for one back-off unit",
    );
    for connector in &view.connectors {
        let Some(status) = &connector.status else { continue };
        for (id, task) in status.tasks.iter().filter(|(_, t)| t.worker_id == me) {
            let id = id.to_string();
            out.sample(
                "wharf_task_auto_restarts",
                &[("connector", &connector.name), ("task", &id)],
                f64::from(task.auto_restarts),
            );
        }
    }

    let per_connector: Vec<(&str, Vec<(u32, State)>)> = view
        .connectors
        .iter()
        .filter_map(|c| c.status.as_ref().map(|s| (c.name.as_str(), tasks_here(s))))
        .filter(|(_, tasks)| !tasks.is_empty())
        .collect();
    let task_count: usize = per_connector.iter().map(|(_, tasks)| tasks.len()).sum();
    out.family("kafka_connect_worker_connector_count", Kind::Gauge, "The number of connectors run in this worker");
    out.sample("kafka_connect_worker_connector_count", &[], here.len() as f64);
    out.family("kafka_connect_worker_task_count", Kind::Gauge, "The number of tasks run in this worker");
    out.sample("kafka_connect_worker_task_count", &[], task_count as f64);
    // Connect counts `destroyed` tasks too: a task whose connector was deleted; here its status
    // is gone with the connector, so the count is always 0.
    let by_state: [(&str, Option<State>, &str); 7] = [
        (
            "kafka_connect_worker_connector_total_task_count",
            None,
            "The number of tasks of the connector on this worker",
        ),
        (
            "kafka_connect_worker_connector_running_task_count",
            Some(State::Running),
            "The number of running tasks of the connector on this worker",
        ),
        (
            "kafka_connect_worker_connector_paused_task_count",
            Some(State::Paused),
            "The number of paused tasks of the connector on this worker",
        ),
        (
            "kafka_connect_worker_connector_failed_task_count",
            Some(State::Failed),
            "The number of failed tasks of the connector on this worker",
        ),
        (
            "kafka_connect_worker_connector_unassigned_task_count",
            Some(State::Unassigned),
            "The number of unassigned tasks of the connector on this worker",
        ),
        (
            "kafka_connect_worker_connector_destroyed_task_count",
            None,
            "The number of destroyed tasks of the connector on this worker",
        ),
        (
            "kafka_connect_worker_connector_restarting_task_count",
            Some(State::Restarting),
            "The number of restarting tasks of the connector on this worker",
        ),
    ];
    for (family, state, help) in by_state {
        out.family(family, Kind::Gauge, help);
        for (name, tasks) in &per_connector {
            let count = match (family.contains("_destroyed_"), state) {
                (true, _) => 0,
                (false, None) => tasks.len(),
                (false, Some(state)) => tasks.iter().filter(|(_, s)| *s == state).count(),
            };
            out.sample(family, &[("connector", name)], count as f64);
        }
    }

    startup_families(&mut out, &view.startups);
    wharf_worker_families(&mut out, &view.plugin_loads, &view.startups);
    task_families(&mut out, &view.tasks);
    transaction_families(&mut out, &view.tasks);
    let plugin_calls: Vec<(&str, String, &plugin_calls::PluginCalls)> = view
        .tasks
        .iter()
        .map(|((connector, task), counters)| (connector.as_str(), task.to_string(), &counters.plugin))
        .collect();
    plugin_calls::render(&mut out, &plugin_calls);
    let plugin_metrics: Vec<(&str, String, &plugin_metrics::PluginMetrics)> = view
        .tasks
        .iter()
        .map(|((connector, task), counters)| (connector.as_str(), task.to_string(), &counters.plugin_metrics))
        .collect();
    plugin_metrics::render(&mut out, &plugin_metrics);
    if let Some(rebalance) = &view.rebalance {
        rebalance_families(&mut out, rebalance);
    }
    let live = clients::live();
    client_families(&mut out, &live);
    wharf_client_families(&mut out, &live);

    if view.distributed {
        out.family(
            "kafka_connect_coordinator_assigned_connectors",
            Kind::Gauge,
            "The number of connectors assigned to this worker",
        );
        out.sample("kafka_connect_coordinator_assigned_connectors", &client, here.len() as f64);
        out.family(
            "kafka_connect_coordinator_assigned_tasks",
            Kind::Gauge,
            "The number of tasks assigned to this worker",
        );
        out.sample("kafka_connect_coordinator_assigned_tasks", &client, task_count as f64);
        if let Some(rebalance) = &view.rebalance {
            coordinator_families(&mut out, &client, rebalance);
        }
    }
    out.into_text()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wharf_connect::model::Status;

    fn status(state: State, worker: &str) -> Status {
        Status {
            state,
            worker_id: worker.into(),
            trace: None,
            records_skipped: 0,
            generation: 1,
            version: Some("1.2.3".into()),
            auto_restarts: 0,
            restartable: true,
        }
    }

    #[test]
    fn only_what_runs_on_this_worker_is_its_own() {
        let mine = ConnectorStatus {
            name: "mine".into(),
            kind: Some(ConnectorKind::Sink),
            connector: status(State::Running, "w1"),
            tasks: [(0, status(State::Running, "w1")), (1, status(State::Failed, "w2"))].into(),
        };
        let theirs = ConnectorStatus {
            name: "theirs".into(),
            kind: None,
            connector: status(State::Paused, "w2"),
            tasks: [(0, status(State::Paused, "w1"))].into(),
        };
        let view = WorkerView {
            worker_id: "w1".into(),
            version: "4.1.1".into(),
            commit: "abc".into(),
            started_unix_ms: 1_500,
            distributed: true,
            connectors: vec![
                ConnectorView { name: "mine".into(), class: "c.Mine".into(), kind: None, status: Some(mine) },
                ConnectorView { name: "theirs".into(), class: "c.Theirs".into(), kind: None, status: Some(theirs) },
                ConnectorView { name: "new".into(), class: "c.New".into(), kind: None, status: None },
            ],
            tasks: Vec::new(),
            startups: std::sync::Arc::new(tasks::WorkerCounts {
                connector_success: 3.into(),
                connector_failure: 1.into(),
                ..Default::default()
            }),
            plugin_loads: PluginLoads { from_cache: 2, compiled: 1, failed: 0, compile_seconds: 1.5 },
            rebalance: Some(RebalanceView {
                rebalancing: false,
                epoch: 3,
                leader: Some("http://w1:8083/".into()),
                completed: 2,
                total_ms: 300,
                max_ms: 200,
                last_completed: None,
                coordinator: CoordinatorCalls { joins: 2, join_ms: 30, ..Default::default() },
            }),
        };
        let text = render(&view, exposition::Format::Text);
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(has(r#"kafka_connect_connector_status{connector="mine",status="running"} 1"#), "{text}");
        assert!(has(r#"kafka_connect_connector_connector_type{connector="mine",connector_type="sink"} 1"#), "{text}");
        assert!(has(r#"kafka_connect_connector_connector_version{connector="mine",connector_version="1.2.3"} 1"#));
        assert!(!text.contains(r#"kafka_connect_connector_status{connector="theirs""#), "{text}");
        assert!(has(r#"kafka_connect_connector_task_status{connector="mine",task="0",status="running"} 1"#));
        assert!(has(r#"kafka_connect_connector_task_status{connector="theirs",task="0",status="paused"} 1"#));
        assert!(!text.contains(r#"task="1""#), "{text}");
        assert!(has(r#"wharf_task_auto_restarts{connector="mine",task="0"} 0"#), "{text}");
        assert!(has("kafka_connect_worker_connector_startup_attempts_total 4"), "{text}");
        assert!(has("kafka_connect_worker_connector_startup_failure_percentage 0.25"), "{text}");
        assert!(has("kafka_connect_worker_task_startup_success_percentage 0"), "{text}");
        assert!(has(r#"wharf_worker_plugin_loads_total{from="cache"} 2"#), "{text}");
        assert!(has(r#"wharf_worker_plugin_loads_total{from="compiled"} 1"#), "{text}");
        assert!(has("wharf_worker_plugin_compile_seconds_total 1.5"), "{text}");
        assert!(has("wharf_worker_tasks_past_stop_deadline_total 0"), "{text}");
        assert!(has("kafka_connect_worker_connector_count 1"), "{text}");
        assert!(has("kafka_connect_worker_task_count 2"), "{text}");
        assert!(has(r#"kafka_connect_worker_connector_paused_task_count{connector="theirs"} 1"#), "{text}");
        assert!(has(r#"kafka_connect_coordinator_assigned_tasks{clientid="w1"} 2"#), "{text}");
        assert!(has(r#"kafka_connect_coordinator_join_time_avg{clientid="w1"} 15"#), "{text}");
        assert!(has(r#"kafka_connect_coordinator_rebalance_latency_avg{clientid="w1"} 150"#), "{text}");
        assert!(has(r#"kafka_connect_coordinator_last_heartbeat_seconds_ago{clientid="w1"} -1"#), "{text}");
        assert!(has(r#"kafka_connect_start_time_seconds{clientid="w1"} 1.5"#), "{text}");
        assert!(has("kafka_connect_worker_rebalance_rebalancing 0"), "{text}");
        assert!(has("kafka_connect_worker_rebalance_epoch 3"), "{text}");
        assert!(has("kafka_connect_worker_rebalance_completed_rebalances_total 2"), "{text}");
        assert!(has("kafka_connect_worker_rebalance_rebalance_avg_time_ms 150"), "{text}");
        assert!(has("kafka_connect_worker_rebalance_time_since_last_rebalance_ms -1"), "{text}");
        assert!(has(r#"kafka_connect_worker_rebalance_leader_name{leader_name="http://w1:8083/"} 1"#), "{text}");
    }
}
