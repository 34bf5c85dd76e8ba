//! The sink's own metrics, served by the worker as `kafka_connect_plugins_jdbc_sink_*` with the
//! task's `connector` and `task`: rows written (committed), rows refused (records the sink could
//! not read as rows, and rows the database refused: both reported as errant), and how long each
//! put's transaction took. Registered when the task opens; a task whose worker refuses them
//! (`wasm.max.plugin.metrics`) logs why once and writes on without them.

use std::cell::RefCell;
use std::time::Duration;

use wharf_sdk::metrics::{Counter, Histogram};
use wharf_sdk::{log, ConnectorError, Level};

struct Registered {
    written: Counter,
    refused: Counter,
    put_seconds: Histogram,
}

thread_local! {
    static METRICS: RefCell<Option<Registered>> = const { RefCell::new(None) };
}

/// The bounds of the put times, in seconds: a transaction of a few rows to one near the call's
/// deadline.
const PUT_SECONDS: [f64; 10] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

/// Registers the metrics of the task that opens.
pub fn register() {
    let registered = (|| -> Result<Registered, ConnectorError> {
        Ok(Registered {
            written: Counter::register("jdbc-sink-rows-written", "Rows the sink wrote and committed", &[])?,
            refused: Counter::register(
                "jdbc-sink-rows-refused",
                "Records reported as errant: not readable as rows, or refused by the database",
                &[],
            )?,
            put_seconds: Histogram::register(
                "jdbc-sink-put-seconds",
                "How long each put's transaction took, in seconds",
                &[],
                &PUT_SECONDS,
            )?,
        })
    })();
    let registered = match registered {
        Ok(registered) => Some(registered),
        Err(ConnectorError::Fatal(why) | ConnectorError::Retriable(why)) => {
            log(Level::Warn, &format!("the sink keeps no metrics of its own: {why}"));
            None
        }
    };
    METRICS.with(|metrics| *metrics.borrow_mut() = registered);
}

/// A put committed `rows` rows, in `took`.
pub fn put(rows: usize, took: Duration) {
    METRICS.with(|metrics| {
        if let Some(m) = metrics.borrow().as_ref() {
            m.written.add(rows as f64);
            m.put_seconds.observe(took.as_secs_f64());
        }
    });
}

/// A record was reported as errant.
pub fn refused() {
    METRICS.with(|metrics| {
        if let Some(m) = metrics.borrow().as_ref() {
            m.refused.add(1.0);
        }
    });
}
