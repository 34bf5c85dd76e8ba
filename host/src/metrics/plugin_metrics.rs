//! Metrics a task's plugin keeps of its own (contract 0.1.7 `metrics`, Kafka Connect 4.1's plugin
//! metrics): registered by the plugin, recorded by it on the task's thread, served as
//! `kafka_connect_plugins_<name>{connector,task,<tags>}` for as long as the task runs.
//!
//! Registration checks what Prometheus would refuse (a name, a label) and holds each task to
//! `wasm.max.plugin.metrics`; recording is a relaxed atomic store per value, the metric found by
//! its handle in the task's list, which one `update` call locks once (uncontended but for scrapes).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::exposition::{Exposition, Kind};
use crate::sync::Unpoisoned;

/// The prefix of every plugin metric's name, as Strimzi's rules name Connect's `plugins` group.
pub const PREFIX: &str = "kafka_connect_plugins_";

/// The longest name a plugin may give a metric, and a tag.
pub const MAX_NAME_BYTES: usize = 64;
/// The longest description kept, and the longest tag value.
pub const MAX_TEXT_BYTES: usize = 256;
/// The most tags of one metric.
pub const MAX_TAGS: usize = 8;
/// The most bucket bounds of one histogram.
pub const MAX_BUCKETS: usize = 32;
/// A histogram's bounds when the plugin gives none: Prometheus's clients' defaults.
pub const DEFAULT_BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// What a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

/// A metric as the plugin asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    pub name: String,
    pub description: String,
    pub kind: MetricKind,
    pub tags: Vec<(String, String)>,
    pub buckets: Vec<f64>,
}

/// One registered metric: its value (a counter's or gauge's, as `f64` bits), or its histogram.
struct Metric {
    /// The name served: `PREFIX`, the plugin's name, and `_total` for a counter.
    family: String,
    description: String,
    kind: MetricKind,
    tags: Vec<(String, String)>,
    value: AtomicU64,
    /// A histogram's bounds and its observations per bucket (the last for the rest; not
    /// cumulative: made so when scraped), their sum (`f64` bits) and count.
    bounds: Vec<f64>,
    buckets: Vec<AtomicU64>,
    sum: AtomicU64,
}

impl Metric {
    /// Only the task's thread records: a load and a store suffice.
    fn record(&self, value: f64) {
        if !value.is_finite() {
            return;
        }
        match self.kind {
            MetricKind::Counter if value > 0.0 => add_f64(&self.value, value),
            MetricKind::Counter => {}
            MetricKind::Gauge => self.value.store(value.to_bits(), Ordering::Relaxed),
            MetricKind::Histogram => {
                let bucket = self.bounds.iter().position(|bound| value <= *bound).unwrap_or(self.bounds.len());
                if let Some(count) = self.buckets.get(bucket) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                add_f64(&self.sum, value);
            }
        }
    }
}

fn add_f64(cell: &AtomicU64, value: f64) {
    let sum = f64::from_bits(cell.load(Ordering::Relaxed)) + value;
    cell.store(sum.to_bits(), Ordering::Relaxed);
}

/// The metrics one task run's plugin registered, by handle (their place in the list).
#[derive(Default)]
pub struct PluginMetrics {
    metrics: Mutex<Vec<Arc<Metric>>>,
}

impl PluginMetrics {
    /// Registers the plugin's metric, at most `limit` per task; the same name and tags again give
    /// the same handle. The error says what to change, in words the plugin can log.
    pub fn register(&self, spec: MetricSpec, limit: usize) -> Result<u32, String> {
        let name = metric_name(&spec.name).map_err(|why| format!("the metric name {:?} {why}", spec.name))?;
        if spec.tags.len() > MAX_TAGS {
            return Err(format!("the metric {name} has {} tags; at most {MAX_TAGS} are allowed", spec.tags.len()));
        }
        let mut tags = Vec::with_capacity(spec.tags.len());
        for (tag, value) in &spec.tags {
            let tag = metric_name(tag).map_err(|why| format!("the tag {tag:?} of the metric {name} {why}"))?;
            if ["connector", "task", "le"].contains(&tag.as_str()) {
                return Err(format!("the tag {tag:?} of the metric {name} is the host's own; choose another name"));
            }
            if tags.iter().any(|(seen, _): &(String, String)| *seen == tag) {
                return Err(format!("the metric {name} has the tag {tag:?} twice"));
            }
            if value.len() > MAX_TEXT_BYTES {
                return Err(format!(
                    "the value of the tag {tag} of the metric {name} is longer than {MAX_TEXT_BYTES} bytes"
                ));
            }
            tags.push((tag, value.clone()));
        }
        let bounds = match spec.kind {
            MetricKind::Histogram if spec.buckets.is_empty() => DEFAULT_BUCKETS.to_vec(),
            MetricKind::Histogram => {
                let rising = spec.buckets.windows(2).all(|pair| pair[0] < pair[1]);
                if spec.buckets.len() > MAX_BUCKETS || !rising || spec.buckets.iter().any(|b| !b.is_finite()) {
                    return Err(format!(
                        "the buckets of the histogram {name} must be at most {MAX_BUCKETS} finite bounds, each above \
                         the last (or none, for the defaults)"
                    ));
                }
                spec.buckets.clone()
            }
            _ => Vec::new(),
        };
        let family = match spec.kind {
            MetricKind::Counter if !name.ends_with("_total") => format!("{PREFIX}{name}_total"),
            _ => format!("{PREFIX}{name}"),
        };
        let mut metrics = self.metrics.locked();
        for (handle, metric) in metrics.iter().enumerate() {
            if stem(&metric.family) == stem(&family) && metric.kind != spec.kind {
                return Err(format!(
                    "the metric {name} is registered as a {} already; register it as one, or choose another name",
                    kind_word(metric.kind)
                ));
            }
            if metric.family == family {
                if metric.tags == tags {
                    return Ok(handle as u32);
                }
                continue;
            }
            // Names Prometheus would read as one: `x` and `x_total`, or a histogram's own series.
            let histogram_series = |histogram: &str, other: &str| {
                ["_bucket", "_sum", "_count"].iter().any(|end| format!("{histogram}{end}") == other)
            };
            if stem(&metric.family) == stem(&family)
                || (metric.kind == MetricKind::Histogram && histogram_series(&metric.family, &family))
                || (spec.kind == MetricKind::Histogram && histogram_series(&family, &metric.family))
            {
                return Err(format!(
                    "the metric {name} would be served under a name its {} {} uses already; choose another name",
                    kind_word(metric.kind),
                    metric.family.strip_prefix(PREFIX).unwrap_or(&metric.family)
                ));
            }
        }
        if metrics.len() >= limit {
            return Err(format!(
                "the task holds {limit} metrics already, as many as wasm.max.plugin.metrics allows; {name} is not \
                 registered (raise wasm.max.plugin.metrics in the connector's and the worker's config, or register \
                 fewer)"
            ));
        }
        let description = cut(&spec.description, MAX_TEXT_BYTES).replace(['\n', '\r'], " ");
        let buckets = match spec.kind {
            MetricKind::Histogram => (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            _ => Vec::new(),
        };
        let handle = metrics.len() as u32;
        metrics.push(Arc::new(Metric {
            family,
            description,
            kind: spec.kind,
            tags,
            value: AtomicU64::new(0f64.to_bits()),
            bounds,
            buckets,
            sum: AtomicU64::new(0f64.to_bits()),
        }));
        Ok(handle)
    }

    /// Records the plugin's values; an unknown handle is passed over.
    pub fn record(&self, values: &[(u32, f64)]) {
        let metrics = self.metrics.locked();
        for (handle, value) in values {
            if let Some(metric) = metrics.get(*handle as usize) {
                metric.record(*value);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.metrics.locked().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A family's name without a counter's `_total`: what OpenMetrics names its family.
fn stem(family: &str) -> &str {
    family.strip_suffix("_total").unwrap_or(family)
}

fn kind_word(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Histogram => "histogram",
    }
}

/// A plugin's metric or tag name as served: small letters, digits and `_`, from a letter.
fn metric_name(given: &str) -> Result<String, &'static str> {
    if given.is_empty() || given.len() > MAX_NAME_BYTES {
        return Err("must be 1 to 64 bytes long");
    }
    let mut name = String::with_capacity(given.len());
    for c in given.chars() {
        match c {
            'a'..='z' | '0'..='9' | '_' => name.push(c),
            'A'..='Z' => name.push(c.to_ascii_lowercase()),
            '-' | '.' => name.push('_'),
            _ => return Err("may hold only letters, digits, '_', '-' and '.'"),
        }
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("must start with a letter");
    }
    Ok(name)
}

fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Every task's plugin metrics, family by family: a name several tasks use is one family, of
/// the kind and help the first of them gave it (a metric of another kind under that name, or
/// under a name OpenMetrics reads as the same, `x` beside `x_total`, is left out); names that
/// would clash with another family's samples (a histogram's `_count`) are left out too.
pub fn render(out: &mut Exposition, tasks: &[(&str, String, &PluginMetrics)]) {
    type Row = (usize, Arc<Metric>);
    let mut families: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for (index, (_, _, metrics)) in tasks.iter().enumerate() {
        for metric in metrics.metrics.locked().iter() {
            families.entry(metric.family.clone()).or_default().push((index, metric.clone()));
        }
    }
    // The first family of each stem keeps it.
    let mut stems: BTreeMap<&str, &str> = BTreeMap::new();
    for family in families.keys() {
        stems.entry(stem(family)).or_insert(family);
    }
    let taken: std::collections::BTreeSet<String> = families
        .iter()
        .filter(|(_, rows)| rows.first().is_some_and(|(_, m)| m.kind == MetricKind::Histogram))
        .flat_map(|(family, _)| ["_bucket", "_sum", "_count"].map(|end| format!("{family}{end}")))
        .collect();
    for (family, rows) in &families {
        let Some((_, first)) = rows.first() else { continue };
        if taken.contains(family) || stems.get(stem(family)).is_some_and(|owner| *owner != family.as_str()) {
            continue;
        }
        let kind = match first.kind {
            MetricKind::Counter => Kind::Counter,
            MetricKind::Gauge => Kind::Gauge,
            MetricKind::Histogram => Kind::Histogram,
        };
        let help = if first.description.is_empty() { "A metric of the task's plugin" } else { &first.description };
        out.family(family, kind, help);
        for (index, metric) in rows.iter().filter(|(_, m)| m.kind == first.kind) {
            let Some((connector, task, _)) = tasks.get(*index) else { continue };
            let mut labels: Vec<(&str, &str)> = vec![("connector", connector), ("task", task.as_str())];
            labels.extend(metric.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            if metric.kind != MetricKind::Histogram {
                out.sample(family, &labels, f64::from_bits(metric.value.load(Ordering::Relaxed)));
                continue;
            }
            let mut cumulative = 0u64;
            let bounds: Vec<String> =
                metric.bounds.iter().map(|b| format!("{b:?}")).chain(["+Inf".to_string()]).collect();
            for (bound, count) in bounds.iter().zip(&metric.buckets) {
                cumulative += count.load(Ordering::Relaxed);
                let mut with_le = labels.clone();
                with_le.push(("le", bound));
                out.sample(&format!("{family}_bucket"), &with_le, cumulative as f64);
            }
            out.sample(&format!("{family}_sum"), &labels, f64::from_bits(metric.sum.load(Ordering::Relaxed)));
            out.sample(&format!("{family}_count"), &labels, cumulative as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, kind: MetricKind, tags: &[(&str, &str)]) -> MetricSpec {
        MetricSpec {
            name: name.to_string(),
            description: format!("{name} help"),
            kind,
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            buckets: Vec::new(),
        }
    }

    #[test]
    fn counters_gauges_and_histograms_are_served_under_the_plugins_prefix_with_their_tags() {
        let a = PluginMetrics::default();
        let rows = a.register(spec("rows-written", MetricKind::Counter, &[("table", "orders")]), 10).unwrap();
        let lag = a.register(spec("Lag.Ms", MetricKind::Gauge, &[]), 10).unwrap();
        let mut latency = spec("write_seconds", MetricKind::Histogram, &[]);
        latency.buckets = vec![0.1, 1.0];
        let latency = a.register(latency, 10).unwrap();
        a.record(&[(rows, 3.0), (rows, 2.0), (rows, -4.0), (lag, 7.5), (lag, 1.0), (latency, 0.05)]);
        a.record(&[(latency, 0.5), (latency, 3.0), (99, 1.0), (rows, f64::NAN)]);
        let b = PluginMetrics::default();
        let rows_b = b.register(spec("rows_written", MetricKind::Counter, &[("table", "items")]), 10).unwrap();
        b.record(&[(rows_b, 1.0)]);

        let mut out = Exposition::default();
        render(&mut out, &[("sink", "0".to_string(), &a), ("sink", "1".to_string(), &b)]);
        let text = out.into_text();
        let expected = r#"# HELP kafka_connect_plugins_lag_ms Lag.Ms help
# TYPE kafka_connect_plugins_lag_ms gauge
kafka_connect_plugins_lag_ms{connector="sink",task="0"} 1
# HELP kafka_connect_plugins_rows_written_total rows-written help
# TYPE kafka_connect_plugins_rows_written_total counter
kafka_connect_plugins_rows_written_total{connector="sink",task="0",table="orders"} 5
kafka_connect_plugins_rows_written_total{connector="sink",task="1",table="items"} 1
# HELP kafka_connect_plugins_write_seconds write_seconds help
# TYPE kafka_connect_plugins_write_seconds histogram
kafka_connect_plugins_write_seconds_bucket{connector="sink",task="0",le="0.1"} 1
kafka_connect_plugins_write_seconds_bucket{connector="sink",task="0",le="1.0"} 2
kafka_connect_plugins_write_seconds_bucket{connector="sink",task="0",le="+Inf"} 3
kafka_connect_plugins_write_seconds_sum{connector="sink",task="0"} 3.55
kafka_connect_plugins_write_seconds_count{connector="sink",task="0"} 3
"#;
        assert_eq!(text, expected);
    }

    #[test]
    fn registering_again_gives_the_same_handle_and_the_limit_holds() {
        let metrics = PluginMetrics::default();
        let first = metrics.register(spec("rows", MetricKind::Counter, &[("t", "a")]), 2).unwrap();
        assert_eq!(metrics.register(spec("rows_total", MetricKind::Counter, &[("t", "a")]), 2), Ok(first));
        let second = metrics.register(spec("rows", MetricKind::Counter, &[("t", "b")]), 2).unwrap();
        assert_ne!(first, second);
        let refused = metrics.register(spec("other", MetricKind::Gauge, &[]), 2).unwrap_err();
        assert!(refused.contains("wasm.max.plugin.metrics"), "{refused}");
        let kind = metrics.register(spec("rows", MetricKind::Gauge, &[]), 10).unwrap_err();
        assert!(kind.contains("registered as a counter"), "{kind}");
        assert_eq!(metrics.len(), 2);
        // A gauge `level` and a gauge `level_total` would be one family to OpenMetrics; a gauge
        // named as a histogram's own series would hide in it.
        let gauges = PluginMetrics::default();
        gauges.register(spec("level", MetricKind::Gauge, &[]), 10).unwrap();
        let twin = gauges.register(spec("level_total", MetricKind::Gauge, &[]), 10).unwrap_err();
        assert!(twin.contains("uses already"), "{twin}");
        gauges.register(spec("depth", MetricKind::Histogram, &[]), 10).unwrap();
        let hidden = gauges.register(spec("depth_count", MetricKind::Gauge, &[]), 10).unwrap_err();
        assert!(hidden.contains("histogram depth"), "{hidden}");
    }

    #[test]
    fn names_tags_and_buckets_prometheus_would_refuse_are_refused_with_the_reason() {
        let metrics = PluginMetrics::default();
        let refused = |s: MetricSpec| metrics.register(s, 10).unwrap_err();
        assert!(refused(spec("9lives", MetricKind::Gauge, &[])).contains("must start with a letter"));
        assert!(refused(spec("rows written", MetricKind::Gauge, &[])).contains("may hold only"));
        assert!(refused(spec("", MetricKind::Gauge, &[])).contains("1 to 64"));
        assert!(refused(spec(&"x".repeat(65), MetricKind::Gauge, &[])).contains("1 to 64"));
        assert!(refused(spec("rows", MetricKind::Gauge, &[("task", "x")])).contains("host's own"));
        assert!(refused(spec("rows", MetricKind::Gauge, &[("a", "x"), ("A", "y")])).contains("twice"));
        let many: Vec<(String, String)> = (0..9).map(|i| (format!("t{i}"), String::new())).collect();
        let mut too_many = spec("rows", MetricKind::Gauge, &[]);
        too_many.tags = many;
        assert!(refused(too_many).contains("at most 8"));
        let mut falling = spec("h", MetricKind::Histogram, &[]);
        falling.buckets = vec![1.0, 0.5];
        assert!(refused(falling).contains("each above the last"));
        assert!(metrics.is_empty());
    }

    #[test]
    fn a_name_of_another_kind_in_another_task_and_a_histograms_own_names_are_left_out() {
        let a = PluginMetrics::default();
        a.register(spec("depth", MetricKind::Histogram, &[]), 10).unwrap();
        let b = PluginMetrics::default();
        b.register(spec("depth", MetricKind::Gauge, &[]), 10).unwrap();
        b.register(spec("depth_count", MetricKind::Gauge, &[]), 10).unwrap();
        let mut out = Exposition::default();
        render(&mut out, &[("c", "0".to_string(), &a), ("c", "1".to_string(), &b)]);
        let text = out.into_text();
        assert!(!text.contains(r#"task="1""#), "{text}");
        assert_eq!(text.matches("# TYPE").count(), 1, "{text}");
        // A counter `x` (served as `x_total`) in one task, a gauge `x` in another: OpenMetrics
        // would name both families `x`, so only the first is served.
        let c = PluginMetrics::default();
        c.register(spec("x", MetricKind::Counter, &[]), 10).unwrap();
        let d = PluginMetrics::default();
        d.register(spec("x", MetricKind::Gauge, &[]), 10).unwrap();
        let mut out = Exposition::new(super::super::exposition::Format::OpenMetrics);
        render(&mut out, &[("c", "0".to_string(), &c), ("c", "1".to_string(), &d)]);
        let text = out.into_text();
        assert_eq!(text.matches("# TYPE kafka_connect_plugins_x ").count(), 1, "{text}");
    }
}
