//! Each task's counts, as Kafka Connect's `source-task-metrics`, `sink-task-metrics` and
//! `task-error-metrics` give them: added to on the record path with a relaxed atomic add per
//! batch, read when scraped. Rates are worked out at the scrape from the counts of earlier
//! scrapes within `RATE_WINDOW`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wharf_connect::model::ConnectorKind;

use crate::sync::Unpoisoned;

/// The span a rate covers: Kafka Connect's default `metrics.sample.window.ms` (30 s) times
/// `metrics.num.samples` (2).
pub const RATE_WINDOW: Duration = Duration::from_secs(60);

/// The most earlier scrapes a task keeps for its rates.
const MAX_RATE_SAMPLES: usize = 64;

/// One task run's counts.
pub struct TaskCounters {
    pub kind: ConnectorKind,
    started: Instant,
    /// A source's records returned by `poll`; a sink's records read from Kafka.
    pub read: AtomicU64,
    /// A sink's records handed to `put`, after transforms (a source's come from `deliveries`).
    pub put: AtomicU64,
    /// Records a converter, a transform or the plugin failed on.
    pub failures: AtomicU64,
    /// Records skipped under `errors.tolerance=all`.
    pub skipped: AtomicU64,
    /// A source's records Kafka acknowledged, as its producer counts them.
    acked: OnceLock<Arc<AtomicU64>>,
    /// (when, read, written) at earlier scrapes, oldest first.
    samples: Mutex<VecDeque<(Instant, u64, u64)>>,
}

impl TaskCounters {
    fn new(kind: ConnectorKind) -> Self {
        TaskCounters {
            kind,
            started: Instant::now(),
            read: AtomicU64::new(0),
            put: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            acked: OnceLock::new(),
            samples: Mutex::new(VecDeque::new()),
        }
    }

    /// Adds `n` to a count (one call per batch on the record path).
    pub fn add(count: &AtomicU64, n: usize) {
        count.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A source's records are counted as written once Kafka acknowledged them: its producer's
    /// count of those.
    pub fn count_acked(&self, acked: Arc<AtomicU64>) {
        let _ = self.acked.set(acked);
    }

    /// Records written: a source's to Kafka (acknowledged), a sink's to its plugin.
    pub fn written(&self) -> u64 {
        match self.kind {
            ConnectorKind::Source => self.acked.get().map_or(0, |a| a.load(Ordering::Relaxed)),
            ConnectorKind::Sink => self.put.load(Ordering::Relaxed),
        }
    }

    pub fn read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Records read and written a second over about the last `RATE_WINDOW`: since the oldest
    /// scrape within it (or the last one before it), or since the task started.
    pub fn rates(&self, now: Instant) -> (f64, f64) {
        let (read, written) = (self.read(), self.written());
        let mut samples = self.samples.locked();
        // The base is the oldest scrape within the window, or the last one before it.
        while samples.get(1).is_some_and(|(at, _, _)| now.duration_since(*at) > RATE_WINDOW) {
            samples.pop_front();
        }
        let (since, read_then, written_then) = samples.front().copied().unwrap_or((self.started, 0, 0));
        if samples.len() >= MAX_RATE_SAMPLES {
            samples.pop_front();
        }
        samples.push_back((now, read, written));
        let seconds = now.duration_since(since).as_secs_f64();
        if seconds < 1e-3 {
            return (0.0, 0.0);
        }
        (read.saturating_sub(read_then) as f64 / seconds, written.saturating_sub(written_then) as f64 / seconds)
    }
}

/// The counts of the tasks this worker runs, by connector and task. A task's are kept from its
/// start until the worker stops it (a failed task's stay, as Connect keeps its metric groups);
/// a restarted task starts from zero.
#[derive(Default)]
pub struct TaskRegistry {
    tasks: Mutex<BTreeMap<(String, u32), Arc<TaskCounters>>>,
}

impl TaskRegistry {
    /// Fresh counts for a task starting now, in place of an earlier run's.
    pub fn register(&self, connector: &str, task: u32, kind: ConnectorKind) -> Arc<TaskCounters> {
        let counters = Arc::new(TaskCounters::new(kind));
        self.tasks.locked().insert((connector.to_string(), task), counters.clone());
        counters
    }

    pub fn remove(&self, connector: &str, task: u32) {
        self.tasks.locked().remove(&(connector.to_string(), task));
    }

    pub fn remove_connector(&self, connector: &str) {
        self.tasks.locked().retain(|(name, _), _| name != connector);
    }

    pub fn clear(&self) {
        self.tasks.locked().clear();
    }

    /// Every task's counts, by connector and task.
    pub fn all(&self) -> Vec<((String, u32), Arc<TaskCounters>)> {
        self.tasks.locked().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_cover_the_counts_since_the_oldest_scrape_in_the_window() {
        let counters = TaskCounters::new(ConnectorKind::Sink);
        let start = counters.started;
        TaskCounters::add(&counters.read, 100);
        TaskCounters::add(&counters.put, 50);
        // The first scrape: since the task started.
        assert_eq!(counters.rates(start + Duration::from_secs(10)), (10.0, 5.0));
        TaskCounters::add(&counters.read, 300);
        // The next: since the first.
        assert_eq!(counters.rates(start + Duration::from_secs(20)), (30.0, 0.0));
        // Long after, nothing new: since the last scrape before the window.
        assert_eq!(counters.rates(start + Duration::from_secs(200)), (0.0, 0.0));
    }

    #[test]
    fn a_restarted_task_starts_from_zero_and_a_stopped_ones_counts_go() {
        let registry = TaskRegistry::default();
        let first = registry.register("c", 0, ConnectorKind::Source);
        TaskCounters::add(&first.read, 5);
        let second = registry.register("c", 0, ConnectorKind::Source);
        assert_eq!(registry.all().len(), 1);
        assert_eq!(registry.all()[0].1.read(), 0);
        drop(second);
        registry.register("c", 1, ConnectorKind::Source);
        registry.remove("c", 0);
        assert_eq!(registry.all().into_iter().map(|(k, _)| k).collect::<Vec<_>>(), [("c".to_string(), 1)]);
        registry.remove_connector("c");
        assert!(registry.all().is_empty());
    }
}
