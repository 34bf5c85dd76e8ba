//! `postgres-cdc`: change data capture from PostgreSQL, as Debezium's PostgreSQL connector does
//! it and with its config (`io.debezium.connector.postgresql.PostgresConnector`): a snapshot of
//! the captured tables, then every insert, update and delete read from a logical replication
//! slot (pgoutput), written to Kafka as Debezium's change events. It speaks PostgreSQL's wire
//! protocol through the sandbox's sockets; `database.hostname` and `database.port` grant it the
//! one server.
//!
//! - `settings`: Debezium's keys, read;
//! - `catalog`: what is asked of the server outside the stream (checks, tables, publication, slot);
//! - `pgoutput`: the replication stream's messages;
//! - `values`: PostgreSQL's values as Kafka Connect data, as Debezium maps them;
//! - `events`: change events, their schemas and their offsets;
//! - `capture`: setup, snapshot and streaming, a bounded step each poll;
//! - `metrics`: the source's own metrics, after Debezium's snapshot and streaming figures.

// The native build runs the unit tests only; the component is where every item is used.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use wharf_sdk::*;

mod capture;
mod catalog;
mod events;
mod metrics;
/// Public for the benchmark, whose ceiling decodes the same stream natively.
pub mod pgoutput;
mod settings;
mod values;

/// `wasm.call.timeout.ms`, when the connector config leaves it to the worker.
const DEFAULT_CALL_TIMEOUT_MS: u64 = 5_000;
/// How often the task's progress goes to its status (`progress.report`).
const PROGRESS_REPORT_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// How often the task's metrics are brought up to date: about as often as a scrape could see.
const METRICS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// How often the task's progress goes to the log while it reads.
const PROGRESS_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

struct PostgresCdc;

impl Connector for PostgresCdc {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "postgres-cdc".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Change data capture from PostgreSQL: a snapshot, then every change read from a logical \
                          replication slot (pgoutput), as Debezium's PostgreSQL connector writes them and with its \
                          config"
                .into(),
            kind: ConnectorKind::Source,
            config: settings::definitions(),
        }
    }

    fn validate(config: &Config) -> Vec<ConfigProblem> {
        match settings::read(config.pairs()) {
            Ok(_) => Vec::new(),
            Err(problems) => problems,
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        // One slot, one reader: one task whatever tasks.max says, as Debezium.
        Ok(vec![config.clone()])
    }

    fn connection_grants() -> Vec<ConnectionGrant> {
        vec![ConnectionGrant::HostAndPortWithTls {
            host_key: "database.hostname".into(),
            port_key: "database.port".into(),
            default_port: 5432,
            mode_key: "database.sslmode".into(),
            default_mode: "prefer".into(),
            root_cert_key: Some("database.sslrootcert".into()),
        }]
    }
}

struct PostgresCdcTask {
    capture: capture::Capture,
    metrics: Option<metrics::Metrics>,
    /// None until the first update of the metrics.
    last_metrics: Option<std::time::Instant>,
    /// None until the first report.
    last_report: Option<std::time::Instant>,
    last_log: std::time::Instant,
}

impl SourceTask for PostgresCdcTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let settings = settings::read(config.pairs()).map_err(|problems| {
            let text: Vec<String> = problems.into_iter().map(|p| p.message).collect();
            ConnectorError::Fatal(text.join("; "))
        })?;
        for note in settings::no_effect(config.pairs()) {
            log(Level::Info, &note);
        }
        if config.get("plugin.name").is_none() {
            log(
                Level::Info,
                "plugin.name is not set: Debezium's default is decoderbufs, which needs a server extension; the \
                 slot is read with pgoutput, PostgreSQL's own",
            );
        }
        let call_timeout_ms = config.parse_or("wasm.call.timeout.ms", DEFAULT_CALL_TIMEOUT_MS)?;
        log(
            Level::Info,
            &format!(
                "capturing changes of {} at {}:{} as {} into {}.<schema>.<table> (slot {}, publication {})",
                settings.database,
                settings.host,
                settings.port,
                settings.user,
                settings.prefix,
                settings.slot,
                settings.publication
            ),
        );
        let connector = config.get("name").unwrap_or("postgres-cdc").to_string();
        Ok(PostgresCdcTask {
            capture: capture::Capture::new(settings, &connector, call_timeout_ms),
            metrics: metrics::Metrics::register(),
            last_metrics: None,
            last_report: None,
            last_log: std::time::Instant::now(),
        })
    }

    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        let records = self.capture.poll(max_records.max(1) as usize)?;
        self.report();
        Ok(records)
    }

    fn keep_alive(&mut self) -> Result<(), ConnectorError> {
        self.capture.keep_alive();
        self.report();
        Ok(())
    }

    fn commit(&mut self) -> Result<(), ConnectorError> {
        self.capture.commit()
    }

    fn close(&mut self) {
        self.capture.close();
    }
}

impl PostgresCdcTask {
    /// Progress into the task's status every `PROGRESS_REPORT_EVERY`, and the log every
    /// `PROGRESS_LOG_EVERY`.
    fn report(&mut self) {
        if let Some(metrics) = &mut self.metrics {
            if self.last_metrics.is_none_or(|at| at.elapsed() >= METRICS_EVERY) {
                self.last_metrics = Some(std::time::Instant::now());
                metrics.update(self.capture.figures());
            }
        }
        if self.last_report.is_some_and(|at| at.elapsed() < PROGRESS_REPORT_EVERY) {
            return;
        }
        self.last_report = Some(std::time::Instant::now());
        let line = self.capture.progress();
        report_progress(&line);
        if self.last_log.elapsed() >= PROGRESS_LOG_EVERY {
            self.last_log = std::time::Instant::now();
            log(Level::Info, &line);
        }
    }
}

impl SourceConnector for PostgresCdc {
    type Task = PostgresCdcTask;

    /// Supported, as Debezium's PostgreSQL connector answers: the stream resumes right after the
    /// last change committed with its offset. A snapshot stopped half-way starts over, so its
    /// first rows may come twice, as with Debezium (docs/connectors/postgres-cdc.md).
    fn exactly_once_support(_config: &Config) -> Option<Capability> {
        Some(Capability::Supported)
    }
}

// Exported in the component only: the native build runs the unit tests.
#[cfg(target_arch = "wasm32")]
source_connector!(PostgresCdc);
