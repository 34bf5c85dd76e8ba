//! A task's failed records under its connector's `errors.*` policy: with `errors.tolerance=none`
//! a record that a converter or a transform fails on fails the task, as before; with `all` it is
//! skipped (a source stores its offset, a sink commits past it and sends it to the dead-letter
//! queue, if there is one), logged if `errors.log.enable` asks, and counted; the count is
//! published in the task's status. A plugin's retriable `put` or `poll` failure is retried with
//! pauses that grow, up to `errors.retry.timeout` when it is set.

use std::time::{Duration, Instant};

use crate::config::{ErrorPolicy, RetryTimeout};

use super::TaskFailure;

/// Where in the record path a record failed (Kafka Connect's `Stage`, by its names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    KeyConverter,
    ValueConverter,
    HeaderConverter,
    Transformation,
    /// A sink's plugin reported the record as errant during `put`.
    TaskPut,
}

impl Stage {
    /// Connect's name of the stage, as the `__connect.errors.stage` header writes it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Stage::KeyConverter => "KEY_CONVERTER",
            Stage::ValueConverter => "VALUE_CONVERTER",
            Stage::HeaderConverter => "HEADER_CONVERTER",
            Stage::Transformation => "TRANSFORMATION",
            Stage::TaskPut => "TASK_PUT",
        }
    }
}

/// A record a converter or a transform failed on, or a sink's plugin reported: the stage, the
/// class that failed, and the message, which names the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RecordFailure {
    pub stage: Stage,
    pub class: String,
    pub message: String,
}

impl RecordFailure {
    /// The task's failure when the record is not tolerated.
    pub(super) fn into_task_failure(self) -> TaskFailure {
        TaskFailure::new(self.message)
    }
}

/// How often the count of skipped records is logged while records keep being skipped.
const SKIPPED_REPORT_INTERVAL: Duration = Duration::from_secs(30);
/// How often, at most, the count is written to the task's status while it grows.
const SKIPPED_PUBLISH_INTERVAL: Duration = Duration::from_secs(2);
/// The pause after a retriable failure while `errors.retry.timeout` is not set.
const UNSET_RETRY_PAUSE: Duration = Duration::from_millis(500);
/// The first pause after a retriable failure when `errors.retry.timeout` is set; each next one
/// doubles, up to `errors.retry.delay.max.ms` (Kafka Connect's schedule).
const RETRY_PAUSE_MIN: Duration = Duration::from_millis(300);

/// Writes the count of skipped records into the task's status.
pub(super) type PublishSkipped = Box<dyn FnMut(u64) + Send>;

/// One task's tolerance of failed records.
pub(super) struct Tolerance {
    policy: ErrorPolicy,
    task: String,
    skipped: u64,
    reported: u64,
    last_report: Option<Instant>,
    published: u64,
    last_publish: Option<Instant>,
    publish: Option<PublishSkipped>,
    /// The task's counts of failed and skipped records, for its metrics.
    counters: Option<std::sync::Arc<crate::metrics::tasks::TaskCounters>>,
    /// Since when, and how many times in a row, the plugin failed with a retriable error.
    retrying: Option<(Instant, u32)>,
}

/// What follows a plugin's retriable failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// Try again after this pause.
    After(Duration),
    /// `errors.retry.timeout` is spent after this long: `errors.tolerance` decides.
    Spent(Duration),
}

impl Tolerance {
    pub(super) fn new(policy: ErrorPolicy, task: &str) -> Self {
        Tolerance {
            policy,
            task: task.to_string(),
            skipped: 0,
            reported: 0,
            last_report: None,
            published: 0,
            last_publish: None,
            publish: None,
            counters: None,
            retrying: None,
        }
    }

    /// Where failed and skipped records are counted.
    pub(super) fn counting(mut self, counters: std::sync::Arc<crate::metrics::tasks::TaskCounters>) -> Self {
        self.counters = Some(counters);
        self
    }

    /// Where the count of skipped records is published as it grows.
    pub(super) fn publishing(mut self, publish: PublishSkipped) -> Self {
        self.publish = Some(publish);
        self
    }

    /// After a retriable failure of the plugin: whether to try again, and after what pause.
    pub(super) fn retry(&mut self) -> Retry {
        let retry = self.next_retry();
        // Connect counts the retries made, not a spent timeout.
        if let (Retry::After(_), Some(counters)) = (&retry, &self.counters) {
            crate::metrics::tasks::TaskCounters::add(&counters.retries, 1);
        }
        retry
    }

    fn next_retry(&mut self) -> Retry {
        let (since, tries) = self.retrying.get_or_insert_with(|| (Instant::now(), 0));
        *tries = tries.saturating_add(1);
        let elapsed = since.elapsed();
        let growing = || {
            let doubled = RETRY_PAUSE_MIN.saturating_mul(1u32 << (*tries - 1).min(20));
            doubled.min(self.policy.retry_delay_max)
        };
        match self.policy.retry_timeout {
            RetryTimeout::Unset => Retry::After(UNSET_RETRY_PAUSE),
            RetryTimeout::Forever => Retry::After(growing()),
            RetryTimeout::Within(timeout) if elapsed >= timeout => {
                self.retrying = None;
                Retry::Spent(elapsed)
            }
            RetryTimeout::Within(timeout) => Retry::After(growing().min(timeout - elapsed)),
        }
    }

    /// The plugin's call succeeded: a later failure starts a new round of retries.
    pub(super) fn succeeded(&mut self) {
        self.retrying = None;
    }

    /// What a spent `errors.retry.timeout` says in a message.
    pub(super) fn retried_for(&self, elapsed: Duration) -> String {
        match self.policy.retry_timeout {
            RetryTimeout::Within(t) if t.is_zero() => "errors.retry.timeout=0 allows no retry".to_string(),
            RetryTimeout::Within(t) => {
                format!("retried for {} ms, and errors.retry.timeout={} is spent", elapsed.as_millis(), t.as_millis())
            }
            RetryTimeout::Unset | RetryTimeout::Forever => "retried".to_string(),
        }
    }

    pub(super) fn policy(&self) -> &ErrorPolicy {
        &self.policy
    }

    /// Whether the task goes on without the record (`Ok`) or fails (`Err`). `record` says which
    /// record it was, for the log, and is only called when the log asks for it.
    pub(super) fn skip(&mut self, failure: RecordFailure, record: impl FnOnce() -> String) -> Result<(), TaskFailure> {
        use crate::metrics::tasks::TaskCounters;
        if let Some(counters) = &self.counters {
            TaskCounters::add(&counters.failures, 1);
            let now = u64::try_from(wharf_connect::model::now_ms()).unwrap_or(0);
            counters.last_error_ms.store(now, std::sync::atomic::Ordering::Relaxed);
        }
        if !self.policy.tolerate_all {
            return Err(failure.into_task_failure());
        }
        self.skipped += 1;
        if let Some(counters) = &self.counters {
            TaskCounters::add(&counters.skipped, 1);
        }
        if self.policy.log {
            if let Some(counters) = &self.counters {
                TaskCounters::add(&counters.errors_logged, 1);
            }
            let task = self.task.as_str();
            let (stage, class) = (failure.stage.name(), failure.class.as_str());
            if self.policy.log_messages {
                tracing::warn!(
                    task,
                    "skipped {} (errors.tolerance=all): stage {stage}, class {class}: {}",
                    record(),
                    failure.message
                );
            } else {
                tracing::warn!(
                    task,
                    "skipped a record (errors.tolerance=all): stage {stage}, class {class}: {}",
                    failure.message
                );
            }
        } else if self.skipped == 1 {
            tracing::warn!(
                task = self.task.as_str(),
                "skipped a record that {} failed on (errors.tolerance=all); further skips are counted, not \
                 logged one by one: set errors.log.enable=true to log each",
                failure.class
            );
        }
        Ok(())
    }

    /// Logs how many records were skipped so far, at most every `SKIPPED_REPORT_INTERVAL`, and
    /// publishes the count in the task's status, at most every `SKIPPED_PUBLISH_INTERVAL`; each
    /// only when the count grew.
    pub(super) fn report(&mut self) {
        if self.skipped != self.published && self.last_publish.is_none_or(|at| at.elapsed() >= SKIPPED_PUBLISH_INTERVAL)
        {
            if let Some(publish) = &mut self.publish {
                publish(self.skipped);
            }
            self.published = self.skipped;
            self.last_publish = Some(Instant::now());
        }
        if self.skipped == self.reported {
            return;
        }
        if self.last_report.is_some_and(|at| at.elapsed() < SKIPPED_REPORT_INTERVAL) {
            return;
        }
        tracing::info!(
            task = self.task.as_str(),
            skipped = self.skipped,
            "{} record(s) skipped so far under errors.tolerance=all",
            self.skipped
        );
        self.reported = self.skipped;
        self.last_report = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure() -> RecordFailure {
        RecordFailure { stage: Stage::ValueConverter, class: "JsonConverter".into(), message: "bad".into() }
    }

    #[test]
    fn none_fails_the_task_with_the_records_message_and_all_counts_skips() {
        let mut strict = Tolerance::new(ErrorPolicy::default(), "c-0");
        assert_eq!(strict.skip(failure(), || unreachable!()).unwrap_err().message, "bad");
        let mut lenient = Tolerance::new(ErrorPolicy { tolerate_all: true, ..ErrorPolicy::default() }, "c-0");
        lenient.skip(failure(), || unreachable!("not logged without errors.log.include.messages")).unwrap();
        lenient.skip(failure(), || unreachable!()).unwrap();
        assert_eq!(lenient.skipped, 2);
    }

    #[test]
    fn the_count_is_published_when_it_grew() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let policy = ErrorPolicy { tolerate_all: true, ..ErrorPolicy::default() };
        let mut tolerance = Tolerance::new(policy, "c-0").publishing(Box::new(move |n| sink.lock().unwrap().push(n)));
        tolerance.report();
        tolerance.skip(failure(), || unreachable!()).unwrap();
        tolerance.skip(failure(), || unreachable!()).unwrap();
        tolerance.report();
        tolerance.skip(failure(), || unreachable!()).unwrap();
        // Within the interval: the next count waits for a later report.
        tolerance.report();
        assert_eq!(*seen.lock().unwrap(), vec![2]);
    }

    fn retrying(timeout: RetryTimeout, delay_max_ms: u64) -> Tolerance {
        let policy = ErrorPolicy {
            retry_timeout: timeout,
            retry_delay_max: Duration::from_millis(delay_max_ms),
            ..ErrorPolicy::default()
        };
        Tolerance::new(policy, "c-0")
    }

    #[test]
    fn retries_pause_longer_each_time_up_to_the_delay_max() {
        let mut forever = retrying(RetryTimeout::Forever, 1000);
        let pauses: Vec<Retry> = (0..4).map(|_| forever.retry()).collect();
        let after = |ms| Retry::After(Duration::from_millis(ms));
        assert_eq!(pauses, vec![after(300), after(600), after(1000), after(1000)]);
        forever.succeeded();
        assert_eq!(forever.retry(), after(300));
        let mut unset = retrying(RetryTimeout::Unset, 60_000);
        assert_eq!((unset.retry(), unset.retry()), (after(500), after(500)));
    }

    #[test]
    fn a_spent_timeout_hands_over_to_the_tolerance() {
        let mut none = retrying(RetryTimeout::Within(Duration::ZERO), 60_000);
        assert!(matches!(none.retry(), Retry::Spent(_)));
        assert_eq!(none.retried_for(Duration::ZERO), "errors.retry.timeout=0 allows no retry");
        let mut bounded = retrying(RetryTimeout::Within(Duration::from_millis(50)), 60_000);
        // The pause never runs past the timeout.
        assert!(matches!(bounded.retry(), Retry::After(p) if p <= Duration::from_millis(50)));
        std::thread::sleep(Duration::from_millis(60));
        assert!(matches!(bounded.retry(), Retry::Spent(e) if e >= Duration::from_millis(50)));
        // A new round starts after a spent one.
        assert!(matches!(bounded.retry(), Retry::After(_)));
    }
}
