//! Wharf's own metric family, of what only a WebAssembly host can tell: each task's calls into
//! its plugin (how long each kind took, as a histogram), the deadlines and traps they hit, the
//! linear memory its instance holds, the records and bytes that crossed the sandbox's boundary,
//! and what its grants made the host refuse. Recorded on the task's thread once per call with relaxed
//! atomics, read when scraped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::exposition::{Exposition, Kind};

/// The calls a task makes into its plugin, by the names the runtime gives them; any other name
/// counts as `other`.
pub const CALLS: [&str; 8] = ["open", "poll", "commit", "put", "flush", "open-partitions", "close-partitions", "close"];

/// The histogram's upper bounds, in seconds; a last bucket holds the rest (`+Inf`).
pub const BUCKETS: [f64; 8] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// One kind of call's histogram: calls per bucket (not cumulative: made so at the scrape) and
/// their sum.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_us: AtomicU64,
}

/// What happened to a call, as the worker tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Returned,
    DeadlineHit,
    Trapped,
}

/// A task's calls into its plugin.
#[derive(Default)]
pub struct PluginCalls {
    calls: [Histogram; CALLS.len() + 1],
    deadlines: AtomicU64,
    traps: AtomicU64,
    memory_bytes: AtomicU64,
    records: AtomicU64,
    bytes: AtomicU64,
    refusals: AtomicU64,
}

impl PluginCalls {
    /// A call ended (a few relaxed atomics: one call per batch on the record path), leaving the
    /// instance with `memory_bytes` of linear memory.
    pub fn record(&self, call: &str, took: Duration, ending: Ending, memory_bytes: usize) {
        let index = CALLS.iter().position(|c| *c == call).unwrap_or(CALLS.len());
        let histogram = &self.calls[index];
        let seconds = took.as_secs_f64();
        let bucket = BUCKETS.iter().position(|bound| seconds <= *bound).unwrap_or(BUCKETS.len());
        histogram.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        histogram.sum_us.fetch_add(took.as_micros().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
        match ending {
            Ending::Returned => {}
            Ending::DeadlineHit => {
                self.deadlines.fetch_add(1, Ordering::Relaxed);
            }
            Ending::Trapped => {
                self.traps.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.memory_bytes.store(memory_bytes as u64, Ordering::Relaxed);
    }

    /// Records crossed the boundary (once per batch).
    pub fn crossed(&self, records: usize, bytes: usize) {
        self.records.fetch_add(records as u64, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The host refused the plugin something its grants do not allow.
    pub fn refused(&self) {
        self.refusals.fetch_add(1, Ordering::Relaxed);
    }
}

/// The family's series for each task (`connector`, `task`, its calls).
pub fn render(out: &mut Exposition, tasks: &[(&str, String, &PluginCalls)]) {
    const CALL_SECONDS: &str = "wharf_task_plugin_call_seconds";
    out.family(CALL_SECONDS, Kind::Histogram, "How long the task's calls into its plugin took, by call");
    // Written as floats (`1.0`), OpenMetrics' canonical form, which the text format reads too.
    let bounds: Vec<String> = BUCKETS.iter().map(|b| format!("{b:?}")).chain(["+Inf".to_string()]).collect();
    for (connector, task, calls) in tasks {
        for (index, histogram) in calls.calls.iter().enumerate() {
            let counts: Vec<u64> = histogram.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
            let total: u64 = counts.iter().sum();
            // Only the calls the task makes.
            if total == 0 {
                continue;
            }
            let call = CALLS.get(index).copied().unwrap_or("other");
            let mut cumulative = 0;
            for (bound, count) in bounds.iter().zip(&counts) {
                cumulative += count;
                let labels =
                    [("connector", *connector), ("task", task.as_str()), ("call", call), ("le", bound.as_str())];
                out.sample(&format!("{CALL_SECONDS}_bucket"), &labels, cumulative as f64);
            }
            let labels = [("connector", *connector), ("task", task.as_str()), ("call", call)];
            let sum = histogram.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
            out.sample(&format!("{CALL_SECONDS}_sum"), &labels, sum);
            out.sample(&format!("{CALL_SECONDS}_count"), &labels, total as f64);
        }
    }
    type Pick = fn(&PluginCalls) -> u64;
    let families: [(&str, Kind, &str, Pick); 6] = [
        ("wharf_task_plugin_deadlines_total", Kind::Counter, "Calls that ran past wasm.call.timeout.ms", |c| {
            c.deadlines.load(Ordering::Relaxed)
        }),
        ("wharf_task_plugin_traps_total", Kind::Counter, "Calls that trapped or broke a limit of the sandbox", |c| {
            c.traps.load(Ordering::Relaxed)
        }),
        (
            "wharf_task_plugin_memory_bytes",
            Kind::Gauge,
            "Bytes of linear memory the task's plugin instance holds, after its last call",
            |c| c.memory_bytes.load(Ordering::Relaxed),
        ),
        (
            "wharf_task_plugin_records_total",
            Kind::Counter,
            "Records that crossed the sandbox's boundary: returned by a source's poll, handed to a sink's put",
            |c| c.records.load(Ordering::Relaxed),
        ),
        (
            "wharf_task_plugin_bytes_total",
            Kind::Counter,
            "Bytes of those records, as wasm.max.bytes.per.call counts them (topics, keys, values, headers, partitions and offsets)",
            |c| c.bytes.load(Ordering::Relaxed),
        ),
        (
            "wharf_task_grants_refused_total",
            Kind::Counter,
            "Connects, name lookups, HTTP requests and sockets the host refused the plugin under its grants",
            |c| c.refusals.load(Ordering::Relaxed),
        ),
    ];
    for (family, kind, help, pick) in families {
        out.family(family, kind, help);
        for (connector, task, calls) in tasks {
            out.sample(family, &[("connector", connector), ("task", task)], pick(calls) as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_fill_a_cumulative_histogram_by_kind() {
        let calls = PluginCalls::default();
        calls.record("poll", Duration::from_micros(500), Ending::Returned, 1 << 20);
        calls.record("poll", Duration::from_millis(30), Ending::Returned, 2 << 20);
        calls.record("poll", Duration::from_secs(9), Ending::DeadlineHit, 2 << 20);
        calls.record("commit", Duration::from_millis(2), Ending::Trapped, 3 << 20);
        let mut out = Exposition::default();
        render(&mut out, &[("c", "0".to_string(), &calls)]);
        let text = out.into_text();
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(has("# TYPE wharf_task_plugin_call_seconds histogram"), "{text}");
        assert!(
            has(r#"wharf_task_plugin_call_seconds_bucket{connector="c",task="0",call="poll",le="0.001"} 1"#),
            "{text}"
        );
        assert!(
            has(r#"wharf_task_plugin_call_seconds_bucket{connector="c",task="0",call="poll",le="0.05"} 2"#),
            "{text}"
        );
        assert!(
            has(r#"wharf_task_plugin_call_seconds_bucket{connector="c",task="0",call="poll",le="5.0"} 2"#),
            "{text}"
        );
        assert!(
            has(r#"wharf_task_plugin_call_seconds_bucket{connector="c",task="0",call="poll",le="+Inf"} 3"#),
            "{text}"
        );
        assert!(has(r#"wharf_task_plugin_call_seconds_count{connector="c",task="0",call="poll"} 3"#), "{text}");
        assert!(has(r#"wharf_task_plugin_call_seconds_sum{connector="c",task="0",call="poll"} 9.0305"#), "{text}");
        assert!(has(r#"wharf_task_plugin_call_seconds_count{connector="c",task="0",call="commit"} 1"#), "{text}");
        assert!(!text.contains(r#"call="put""#), "{text}");
        assert!(has(r#"wharf_task_plugin_deadlines_total{connector="c",task="0"} 1"#), "{text}");
        assert!(has(r#"wharf_task_plugin_traps_total{connector="c",task="0"} 1"#), "{text}");
        assert!(has(r#"wharf_task_plugin_memory_bytes{connector="c",task="0"} 3145728"#), "{text}");
    }
}
