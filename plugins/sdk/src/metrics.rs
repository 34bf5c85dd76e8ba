//! Metrics a source or sink task keeps of its own (contract 0.1.7), served by the worker as
//! `kafka_connect_plugins_<name>{connector, task, <tags>}` while the task runs: register them in
//! `open`, update them as the task works.
//!
//! ```ignore
//! let written = wharf_sdk::metrics::Counter::register("rows-written", "Rows written", &[("table", "orders")])?;
//! written.add(rows as f64);
//! ```

use crate::bindings::source::wharf::connector::metrics as wit;
use crate::ConnectorError;

/// Registers a metric; the host's reason is a fatal error (a refused name or tag, or one more
/// metric than `wasm.max.plugin.metrics`).
fn register(
    name: &str,
    description: &str,
    kind: wit::MetricKind,
    tags: &[(&str, &str)],
    buckets: &[f64],
) -> Result<u32, ConnectorError> {
    let metric = wit::Metric {
        name: name.to_string(),
        description: description.to_string(),
        kind,
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        buckets: buckets.to_vec(),
    };
    wit::register(&metric).map_err(ConnectorError::Fatal)
}

/// A count that only grows, served with `_total` at the end of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter(u32);

impl Counter {
    /// A name of letters, digits and `_` (`-` and `.` read as `_`), a one-line description, at
    /// most 8 tags of its own. Registering the same name and tags again gives the same counter.
    pub fn register(name: &str, description: &str, tags: &[(&str, &str)]) -> Result<Counter, ConnectorError> {
        register(name, description, wit::MetricKind::Counter, tags, &[]).map(Counter)
    }

    /// Adds `value` (a negative one is ignored).
    pub fn add(&self, value: f64) {
        wit::update(&[(self.0, value)]);
    }
}

/// A value that goes up and down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauge(u32);

impl Gauge {
    /// As [`Counter::register`].
    pub fn register(name: &str, description: &str, tags: &[(&str, &str)]) -> Result<Gauge, ConnectorError> {
        register(name, description, wit::MetricKind::Gauge, tags, &[]).map(Gauge)
    }

    /// Sets the gauge to `value`.
    pub fn set(&self, value: f64) {
        wit::update(&[(self.0, value)]);
    }
}

/// How values spread, counted in buckets by their upper bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Histogram(u32);

impl Histogram {
    /// As [`Counter::register`], with the buckets' rising upper bounds (at most 32; empty for
    /// Prometheus's defaults, 0.005 to 10).
    pub fn register(
        name: &str,
        description: &str,
        tags: &[(&str, &str)],
        buckets: &[f64],
    ) -> Result<Histogram, ConnectorError> {
        register(name, description, wit::MetricKind::Histogram, tags, buckets).map(Histogram)
    }

    /// Counts `value` in its bucket.
    pub fn observe(&self, value: f64) {
        wit::update(&[(self.0, value)]);
    }
}

/// Several updates in one call into the host: a counter's addition, a gauge's value, a
/// histogram's observation, each by its metric.
#[derive(Debug, Default, Clone)]
pub struct Updates(Vec<(u32, f64)>);

impl Updates {
    /// Adds `value` to the counter.
    pub fn add(&mut self, counter: Counter, value: f64) -> &mut Self {
        self.0.push((counter.0, value));
        self
    }

    /// Sets the gauge to `value`.
    pub fn set(&mut self, gauge: Gauge, value: f64) -> &mut Self {
        self.0.push((gauge.0, value));
        self
    }

    /// Counts `value` in the histogram's bucket.
    pub fn observe(&mut self, histogram: Histogram, value: f64) -> &mut Self {
        self.0.push((histogram.0, value));
        self
    }

    /// Hands them to the host and starts over.
    pub fn send(&mut self) {
        if !self.0.is_empty() {
            wit::update(&self.0);
            self.0.clear();
        }
    }
}
