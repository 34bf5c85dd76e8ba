//! Each task's counts, as Kafka Connect's `source-task-metrics`, `sink-task-metrics` and
//! `task-error-metrics` give them: added to on the record path with a relaxed atomic add per
//! batch, read when scraped. Rates, average and longest batch times are worked out at the scrape
//! from the counts of earlier scrapes within `RATE_WINDOW`. And the worker's starts of connectors
//! and tasks (`WorkerCounts`, Connect's `connect-worker-metrics` startup attributes).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wharf_connect::model::ConnectorKind;

use crate::sync::Unpoisoned;

/// The span a rate covers unless the worker says otherwise: Kafka Connect's default
/// `metrics.sample.window.ms` (30 s) times `metrics.num.samples` (2).
pub const RATE_WINDOW: Duration = Duration::from_secs(60);

/// The most earlier scrapes a task keeps for its rates.
const MAX_RATE_SAMPLES: usize = 64;

/// One task run's counts.
pub struct TaskCounters {
    pub kind: ConnectorKind,
    started: Instant,
    /// The span rates, averages and maxima cover.
    window: Duration,
    /// A source's records returned by `poll`; a sink's records read from Kafka.
    pub read: AtomicU64,
    /// A sink's records handed to `put`, after transforms (a source's come from `deliveries`).
    pub put: AtomicU64,
    /// Records a converter, a transform or the plugin failed on.
    pub failures: AtomicU64,
    /// Records skipped under `errors.tolerance=all`.
    pub skipped: AtomicU64,
    /// Operations retried after a retriable error (`errors.retry.*`).
    pub retries: AtomicU64,
    /// Failures written to the log (`errors.log.enable`).
    pub errors_logged: AtomicU64,
    /// Records handed to the dead-letter queue, and those it could not take.
    pub dlq_requests: AtomicU64,
    pub dlq_failures: AtomicU64,
    /// When a record last failed, in ms since the epoch; 0 before the first.
    pub last_error_ms: AtomicU64,
    /// A source's polls that returned records, a sink's puts: how long each took (µs) and how
    /// many records it carried.
    pub batch_time: Measure,
    pub batch_size: Measure,
    /// Offset commits that completed (a source's flush of offsets, a sink's flush and commit),
    /// and how long each took (µs); and the commits started.
    pub commit_time: Measure,
    pub commits_started: AtomicU64,
    /// A sink's assigned partitions.
    pub partitions: AtomicU64,
    /// The task's calls into its plugin (Wharf's own family).
    pub plugin: super::plugin_calls::PluginCalls,
    /// The metrics the task's plugin registered of its own.
    pub plugin_metrics: super::plugin_metrics::PluginMetrics,
    /// When the task's thread ended (it failed); its running ratio falls from then on.
    ended: OnceLock<Instant>,
    /// A source's records Kafka acknowledged, as its producer counts them.
    acked: OnceLock<Arc<AtomicU64>>,
    /// A transactional source's committed transactions, by their records (exactly-once
    /// sources); none for a task that is not transactional.
    pub transactions: OnceLock<TransactionSizes>,
    /// The counts at earlier scrapes, oldest first.
    samples: Mutex<VecDeque<Sample>>,
}

/// The records of a transactional source task's committed transactions since it started:
/// Kafka Connect's `transaction-size-min`, `-max` and `-avg` (an aborted transaction is not
/// counted, as in Connect).
#[derive(Default)]
pub struct TransactionSizes {
    count: AtomicU64,
    total: AtomicU64,
    /// `u64::MAX` before the first.
    min: AtomicU64,
    max: AtomicU64,
}

impl TransactionSizes {
    pub fn new() -> Self {
        TransactionSizes { min: AtomicU64::new(u64::MAX), ..Default::default() }
    }

    /// A transaction of `records` records was committed (once per commit, off the record path).
    pub fn committed(&self, records: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(records, Ordering::Relaxed);
        self.min.fetch_min(records, Ordering::Relaxed);
        self.max.fetch_max(records, Ordering::Relaxed);
    }

    /// (min, max, avg), each 0 before the first commit.
    pub fn read(&self) -> (f64, f64, f64) {
        let count = self.count.load(Ordering::Relaxed);
        if count == 0 {
            return (0.0, 0.0, 0.0);
        }
        let total = self.total.load(Ordering::Relaxed) as f64;
        (self.min.load(Ordering::Relaxed) as f64, self.max.load(Ordering::Relaxed) as f64, total / count as f64)
    }
}

/// The sum, count and longest of what a kind of event measured (the time a call took, the
/// records a batch carried).
#[derive(Default)]
pub struct Measure {
    total: AtomicU64,
    count: AtomicU64,
    /// The longest since the last scrape.
    max: AtomicU64,
}

impl Measure {
    /// One event measured `value` (three relaxed atomics, once per batch on the record path).
    pub fn record(&self, value: u64) {
        self.total.fetch_add(value, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(value, Ordering::Relaxed);
    }

    /// One call took `took`, in microseconds.
    pub fn record_time(&self, took: Duration) {
        self.record(took.as_micros().min(u128::from(u64::MAX)) as u64);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn read(&self) -> Reading {
        Reading {
            total: self.total.load(Ordering::Relaxed),
            count: self.count.load(Ordering::Relaxed),
            max: self.max.swap(0, Ordering::Relaxed),
        }
    }
}

/// A measure as a scrape read it; `max` is the largest since the scrape before.
#[derive(Clone, Copy, Default)]
struct Reading {
    total: u64,
    count: u64,
    max: u64,
}

/// The average and largest of a measure over a window; NaN without an event, as Connect shows a
/// measure without samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub avg: f64,
    pub max: f64,
}

/// A task's counts as one scrape read them.
#[derive(Clone, Copy)]
struct Sample {
    at: Instant,
    read: u64,
    written: u64,
    /// Batch time, batch size and commit time.
    measures: [Reading; 3],
}

/// What a scrape shows of a task over about the last `RATE_WINDOW`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Records read and written a second.
    pub read_rate: f64,
    pub written_rate: f64,
    /// Batches (polls or puts) in milliseconds and in records.
    pub batch_ms: Spread,
    pub batch_size: Spread,
    /// Completed offset commits, in milliseconds, and a second.
    pub commit_ms: Spread,
    pub commit_rate: f64,
    /// The part of the window the task ran (a Wharf task that is paused is stopped, and counts
    /// no more).
    pub running_ratio: f64,
}

impl TaskCounters {
    fn new(kind: ConnectorKind, window: Duration) -> Self {
        let started = Instant::now();
        // The task's start is the first point a window may begin at.
        let start = Sample { at: started, read: 0, written: 0, measures: [Reading::default(); 3] };
        TaskCounters {
            kind,
            started,
            window,
            read: AtomicU64::new(0),
            put: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            errors_logged: AtomicU64::new(0),
            dlq_requests: AtomicU64::new(0),
            dlq_failures: AtomicU64::new(0),
            last_error_ms: AtomicU64::new(0),
            batch_time: Measure::default(),
            batch_size: Measure::default(),
            commit_time: Measure::default(),
            commits_started: AtomicU64::new(0),
            partitions: AtomicU64::new(0),
            plugin: Default::default(),
            plugin_metrics: Default::default(),
            ended: OnceLock::new(),
            acked: OnceLock::new(),
            transactions: OnceLock::new(),
            samples: Mutex::new(VecDeque::from([start])),
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

    /// The task's thread has ended.
    pub fn ended(&self) {
        let _ = self.ended.set(Instant::now());
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

    /// The task over about the last window (`RATE_WINDOW` unless the worker sets another): since
    /// the last scrape before it (or the task's start, when that is within it). Each call counts
    /// as a scrape.
    pub fn window(&self, now: Instant) -> Window {
        // Taken first: two scrapes at once (the REST listener's and metrics.listeners') read and
        // record their samples one after the other, in order.
        let mut samples = self.samples.locked();
        let now = samples.back().map_or(now, |last| now.max(last.at));
        let current = Sample {
            at: now,
            read: self.read(),
            written: self.written(),
            measures: [self.batch_time.read(), self.batch_size.read(), self.commit_time.read()],
        };
        // The base is the last point (the start, a scrape) at or before the window's beginning,
        // or the first one.
        while samples.get(1).is_some_and(|s| now.duration_since(s.at) > self.window) {
            samples.pop_front();
        }
        let start = Sample { at: self.started, read: 0, written: 0, measures: [Reading::default(); 3] };
        let base = samples.front().copied().unwrap_or(start);
        let spread = |i: usize, unit: f64| {
            let events = current.measures[i].count.saturating_sub(base.measures[i].count);
            if events == 0 {
                return Spread { avg: f64::NAN, max: f64::NAN };
            }
            // The largest of each interval after the base's.
            let max = samples.iter().skip(1).map(|s| s.measures[i].max).chain([current.measures[i].max]).max();
            let total = current.measures[i].total.saturating_sub(base.measures[i].total);
            Spread { avg: total as f64 / events as f64 / unit, max: max.unwrap_or(0) as f64 / unit }
        };
        let (batch_ms, batch_size, commit_ms) = (spread(0, 1000.0), spread(1, 1.0), spread(2, 1000.0));
        let seconds = now.duration_since(base.at).as_secs_f64();
        let per_second = |now: u64, then: u64| match seconds < 1e-3 {
            true => 0.0,
            false => now.saturating_sub(then) as f64 / seconds,
        };
        let window = Window {
            read_rate: per_second(current.read, base.read),
            written_rate: per_second(current.written, base.written),
            batch_ms,
            batch_size,
            commit_ms,
            commit_rate: per_second(current.measures[2].count, base.measures[2].count),
            running_ratio: match seconds < 1e-3 {
                true => 1.0,
                false => {
                    let until = self.ended.get().copied().unwrap_or(now).min(now);
                    until.saturating_duration_since(base.at.max(self.started)).as_secs_f64() / seconds
                }
            },
        };
        if samples.len() >= MAX_RATE_SAMPLES {
            samples.pop_front();
        }
        samples.push_back(current);
        window
    }
}

/// The worker's starts of connectors (the generation of their task configs) and of tasks (their
/// threads, once the config's checks passed), and its tasks that stopped late, since it started.
#[derive(Default)]
pub struct WorkerCounts {
    pub connector_success: AtomicU64,
    pub connector_failure: AtomicU64,
    pub task_success: AtomicU64,
    pub task_failure: AtomicU64,
    /// Tasks that had not stopped by `task.shutdown.graceful.timeout.ms` (Wharf's own).
    pub past_stop_deadline: AtomicU64,
}

/// The counts of the tasks this worker runs, by connector and task. A task's are kept from its
/// start until the worker stops it (a failed task's stay, as Connect keeps its metric groups);
/// a restarted task starts from zero.
pub struct TaskRegistry {
    tasks: Mutex<BTreeMap<(String, u32), Arc<TaskCounters>>>,
    /// Starts of connectors and tasks.
    pub startups: Arc<WorkerCounts>,
    /// The span the tasks' rates, averages and maxima cover.
    window: Duration,
}

impl Default for TaskRegistry {
    fn default() -> Self {
        TaskRegistry::with_window(RATE_WINDOW)
    }
}

impl TaskRegistry {
    /// A registry whose tasks' rates, averages and maxima cover `window`
    /// (`metrics.sample.window.ms` × `metrics.num.samples`).
    pub fn with_window(window: Duration) -> Self {
        TaskRegistry { tasks: Mutex::default(), startups: Arc::default(), window }
    }

    /// Fresh counts for a task starting now, in place of an earlier run's.
    pub fn register(&self, connector: &str, task: u32, kind: ConnectorKind) -> Arc<TaskCounters> {
        let counters = Arc::new(TaskCounters::new(kind, self.window));
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
        let counters = TaskCounters::new(ConnectorKind::Sink, RATE_WINDOW);
        let start = counters.started;
        TaskCounters::add(&counters.read, 100);
        TaskCounters::add(&counters.put, 50);
        let rates = |w: Window| (w.read_rate, w.written_rate);
        // The first scrape: since the task started.
        assert_eq!(rates(counters.window(start + Duration::from_secs(10))), (10.0, 5.0));
        TaskCounters::add(&counters.read, 300);
        // The next: still since the start, within the window.
        assert_eq!(rates(counters.window(start + Duration::from_secs(20))), (20.0, 2.5));
        // Long after, nothing new: since the last scrape before the window.
        assert_eq!(rates(counters.window(start + Duration::from_secs(200))), (0.0, 0.0));
    }

    #[test]
    fn batch_times_average_and_longest_cover_the_window() {
        let counters = TaskCounters::new(ConnectorKind::Source, RATE_WINDOW);
        let start = counters.started;
        let no_batch = counters.window(start + Duration::from_secs(1));
        assert!(no_batch.batch_ms.avg.is_nan() && no_batch.batch_ms.max.is_nan());
        let ms = |w: Window| (w.batch_ms.avg, w.batch_ms.max);
        counters.batch_time.record_time(Duration::from_millis(10));
        counters.batch_time.record_time(Duration::from_millis(30));
        counters.batch_size.record(7);
        assert_eq!(ms(counters.window(start + Duration::from_secs(10))), (20.0, 30.0));
        counters.batch_time.record_time(Duration::from_millis(2));
        counters.batch_size.record(1);
        // Both scrapes within the window: the longest of either interval.
        let second = counters.window(start + Duration::from_secs(40));
        assert_eq!(ms(second), (14.0, 30.0));
        assert_eq!(second.batch_size, Spread { avg: 4.0, max: 7.0 });
        counters.batch_time.record_time(Duration::from_millis(4));
        counters.commit_time.record_time(Duration::from_millis(5));
        // The first interval has left the window.
        let third = counters.window(start + Duration::from_secs(75));
        assert_eq!(ms(third), (3.0, 4.0));
        assert_eq!(third.commit_ms, Spread { avg: 5.0, max: 5.0 });
        // One commit since the scrape at 10 s, 65 s before.
        assert_eq!(third.commit_rate, 1.0 / 65.0);
        // A window without a batch has none to show.
        assert!(counters.window(start + Duration::from_secs(300)).batch_ms.max.is_nan());
    }

    #[test]
    fn a_failed_tasks_running_ratio_falls_to_nothing() {
        let counters = TaskCounters::new(ConnectorKind::Sink, RATE_WINDOW);
        let start = counters.started;
        assert_eq!(counters.window(start + Duration::from_secs(30)).running_ratio, 1.0);
        counters.ended();
        let ended = *counters.ended.get().unwrap();
        let later = ended + Duration::from_secs(30);
        let ratio = counters.window(later).running_ratio;
        // Since the scrape at 30 s: it ran until it ended, a moment after the task started.
        assert!(ratio < 0.01, "{ratio}");
        assert_eq!(counters.window(later + Duration::from_secs(120)).running_ratio, 0.0);
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
