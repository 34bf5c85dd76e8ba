//! The source's own metrics, served by the worker as `kafka_connect_plugins_postgres_cdc_*` with
//! the task's `connector` and `task`, after Debezium's snapshot and streaming figures: rows the
//! snapshot read and tables it has left, whether it runs, changes streamed, and how far the
//! stream is behind the server (WAL bytes, and the age of the last change read, as Debezium's
//! MilliSecondsBehindSource). Registered when the task opens; a task whose worker refuses them
//! (`wasm.max.plugin.metrics`) logs why once and captures on without them.

use wharf_sdk::metrics::{Counter, Gauge, Updates};
use wharf_sdk::{log, ConnectorError, Level};

use crate::capture::Figures;

pub struct Metrics {
    snapshot_rows: Counter,
    streamed: Counter,
    snapshot_running: Gauge,
    snapshot_tables_left: Gauge,
    wal_bytes_behind: Gauge,
    ms_behind_source: Gauge,
    /// The figures last sent, for the counters' increments.
    sent: Figures,
    updates: Updates,
}

impl Metrics {
    /// The task's metrics, or none (said in the log) when the worker refuses them.
    pub fn register() -> Option<Metrics> {
        let registered = (|| -> Result<Metrics, ConnectorError> {
            Ok(Metrics {
                snapshot_rows: Counter::register(
                    "postgres-cdc-snapshot-rows-scanned",
                    "Rows the snapshot read, since the task started",
                    &[],
                )?,
                streamed: Counter::register(
                    "postgres-cdc-streaming-events",
                    "Changes read from the replication slot, since the task started",
                    &[],
                )?,
                snapshot_running: Gauge::register("postgres-cdc-snapshot-running", "1 while a snapshot runs", &[])?,
                snapshot_tables_left: Gauge::register(
                    "postgres-cdc-snapshot-remaining-tables",
                    "Tables the running snapshot has still to read",
                    &[],
                )?,
                wal_bytes_behind: Gauge::register(
                    "postgres-cdc-streaming-wal-bytes-behind",
                    "Bytes of WAL between what the stream read and the server's end",
                    &[],
                )?,
                ms_behind_source: Gauge::register(
                    "postgres-cdc-streaming-milliseconds-behind-source",
                    "How long before it was read the last change read was committed on the server, in milliseconds",
                    &[],
                )?,
                sent: Figures::default(),
                updates: Updates::default(),
            })
        })();
        match registered {
            Ok(metrics) => Some(metrics),
            Err(ConnectorError::Fatal(why) | ConnectorError::Retriable(why)) => {
                log(Level::Warn, &format!("the source keeps no metrics of its own: {why}"));
                None
            }
        }
    }

    /// Hands the capture's figures to the host, in one call.
    pub fn update(&mut self, now: Figures) {
        let running = if now.snapshot_running { 1.0 } else { 0.0 };
        self.updates
            .add(self.snapshot_rows, now.snapshot_rows.saturating_sub(self.sent.snapshot_rows) as f64)
            .add(self.streamed, now.streamed.saturating_sub(self.sent.streamed) as f64)
            .set(self.snapshot_running, running)
            .set(self.snapshot_tables_left, now.snapshot_tables_left as f64)
            .set(self.wal_bytes_behind, now.wal_bytes_behind as f64);
        if let Some(ms) = now.ms_behind_source {
            self.updates.set(self.ms_behind_source, ms);
        }
        self.updates.send();
        self.sent = now;
    }
}
