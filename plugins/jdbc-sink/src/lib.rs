//! `jdbc-sink`: writes records into PostgreSQL and MariaDB, as Kafka Connect's JDBC sinks do, from the
//! configs people already have for them: Debezium's under
//! `io.debezium.connector.jdbc.JdbcSinkConnector` (and under this plugin's own name), Confluent's
//! under `io.confluent.connect.jdbc.JdbcSinkConnector`. It speaks PostgreSQL's wire protocol
//! through the sandbox's sockets; `connection.url` grants it the servers it names.
//!
//! - `settings`: the two key sets, read into one `Settings`;
//! - `rows`: records as rows (table, operation, key and value columns);
//! - `dialect`: each database's types, values and statements;
//! - `db`: one session over either database, through the wire protocols of `wharf-db-wire`;
//! - `writer`: a put's rows into the database, in one transaction;
//! - `metrics`: the sink's own metrics (rows written and refused, put times).

// The native build runs the unit tests only; the component is where every item is used.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use wharf_sdk::*;

mod db;
mod dialect;
mod metrics;
mod rows;
mod settings;
mod writer;

/// `wasm.call.timeout.ms`, when the connector config leaves it to the worker: statements end
/// well within it.
const DEFAULT_CALL_TIMEOUT_MS: u64 = 5_000;

struct JdbcSink;

impl Connector for JdbcSink {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "jdbc-sink".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description:
                "Writes records into PostgreSQL or MariaDB tables: insert, upsert or update by primary key, deletes, \
                          tables made and extended from record schemas; Debezium's and Confluent's JDBC sink configs"
                    .into(),
            kind: ConnectorKind::Sink,
            config: settings::definitions(),
        }
    }

    fn validate(config: &Config) -> Vec<ConfigProblem> {
        match settings::read(config.pairs()) {
            Ok(_) => Vec::new(),
            Err(problems) => problems,
        }
    }

    fn task_configs(config: &Config, max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        // Each task writes the partitions the worker gives it; rows of one key stay in one
        // partition, so in one task, in order.
        Ok((0..max_tasks.max(1)).map(|_| config.clone()).collect())
    }

    fn connection_grants() -> Vec<ConnectionGrant> {
        vec![ConnectionGrant::JdbcUrl("connection.url".into())]
    }
}

struct JdbcSinkTask {
    settings: settings::Settings,
    writer: writer::Writer,
    skipped: Vec<&'static str>,
}

impl SinkTask for JdbcSinkTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let settings = settings::read(config.pairs()).map_err(|problems| {
            let text: Vec<String> = problems.into_iter().map(|p| p.message).collect();
            ConnectorError::Fatal(text.join("; "))
        })?;
        for note in settings::no_effect(config.pairs()) {
            log(Level::Info, &note);
        }
        let call_timeout_ms = config.parse_or("wasm.call.timeout.ms", DEFAULT_CALL_TIMEOUT_MS)?;
        log(
            Level::Info,
            &format!(
                "writing to {} as {} ({:?} mode, primary key {:?})",
                settings.url.redacted(),
                settings.user,
                settings.insert_mode,
                settings.pk_mode
            ),
        );
        let connector = config.get("name").unwrap_or("jdbc-sink");
        let writer = writer::Writer::new(settings.clone(), connector, call_timeout_ms);
        metrics::register();
        Ok(JdbcSinkTask { settings, writer, skipped: Vec::new() })
    }

    fn put(&mut self, records: Vec<SinkRecord>) -> Result<(), ConnectorError> {
        let mut batch = Vec::with_capacity(records.len());
        for record in &records {
            match rows::read(&self.settings, record) {
                Ok(rows::Read::Row(row)) => batch.push(row),
                Ok(rows::Read::Skip(what)) => {
                    if !self.skipped.contains(&what) {
                        self.skipped.push(what);
                        log(Level::Info, &format!("skipping {what}; said once"));
                    }
                }
                Err(reason) => {
                    metrics::refused();
                    report_errant(&record.topic, record.partition, record.offset, &reason)?
                }
            }
        }
        if self.settings.reduce {
            batch = reduce(batch);
        }
        self.writer.put(batch)
    }

    fn flush(&mut self, _offsets: Vec<PartitionOffset>) -> Result<(), ConnectorError> {
        // Every put commits before it returns.
        Ok(())
    }

    fn close(&mut self) {
        self.writer.close();
    }
}

/// `use.reduction.buffer`: each key's last row of the batch only (rows without a key all stay).
fn reduce(batch: Vec<rows::Row>) -> Vec<rows::Row> {
    let key_of = |row: &rows::Row| -> Option<(rows::TableId, Vec<String>)> {
        (!row.key.is_empty()).then(|| (row.table.clone(), row.key.iter().map(|c| format!("{:?}", c.value)).collect()))
    };
    let mut last = std::collections::HashMap::new();
    for (i, row) in batch.iter().enumerate() {
        if let Some(key) = key_of(row) {
            last.insert(key, i);
        }
    }
    batch
        .into_iter()
        .enumerate()
        .filter(|(i, row)| key_of(row).is_none_or(|k| last.get(&k) == Some(i)))
        .map(|(_, row)| row)
        .collect()
}

impl SinkConnector for JdbcSink {
    type Task = JdbcSinkTask;
}

// Exported in the component only: the native build runs the unit tests.
#[cfg(target_arch = "wasm32")]
sink_connector!(JdbcSink);
