//! A task's failed records under its connector's `errors.*` policy: with `errors.tolerance=none`
//! a record that a converter or a transform fails on fails the task, as before; with `all` it is
//! skipped (a source stores its offset, a sink commits past it and sends it to the dead-letter
//! queue, if there is one), logged if `errors.log.enable` asks, and counted.

use std::time::{Duration, Instant};

use crate::config::ErrorPolicy;

use super::TaskFailure;

/// Where in the record path a record failed (Kafka Connect's `Stage`, by its names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    KeyConverter,
    ValueConverter,
    HeaderConverter,
    Transformation,
    /// A sink's plugin reported the record as errant during `put`.
    TaskPut,
}

impl Stage {
    /// Connect's name of the stage, as the `__connect.errors.stage` header writes it.
    pub fn name(self) -> &'static str {
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
pub struct RecordFailure {
    pub stage: Stage,
    pub class: String,
    pub message: String,
}

impl RecordFailure {
    /// The task's failure when the record is not tolerated.
    pub fn into_task_failure(self) -> TaskFailure {
        TaskFailure::new(self.message)
    }
}

/// How often the count of skipped records is logged while records keep being skipped.
const SKIPPED_REPORT_INTERVAL: Duration = Duration::from_secs(30);

/// One task's tolerance of failed records.
pub struct Tolerance {
    policy: ErrorPolicy,
    task: String,
    skipped: u64,
    reported: u64,
    last_report: Option<Instant>,
}

impl Tolerance {
    pub fn new(policy: ErrorPolicy, task: &str) -> Self {
        Tolerance { policy, task: task.to_string(), skipped: 0, reported: 0, last_report: None }
    }

    pub fn policy(&self) -> &ErrorPolicy {
        &self.policy
    }

    /// Whether the task goes on without the record (`Ok`) or fails (`Err`). `record` says which
    /// record it was, for the log, and is only called when the log asks for it.
    pub fn skip(&mut self, failure: RecordFailure, record: impl FnOnce() -> String) -> Result<(), TaskFailure> {
        if !self.policy.tolerate_all {
            return Err(failure.into_task_failure());
        }
        self.skipped += 1;
        if self.policy.log {
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

    /// Logs how many records were skipped so far, at most every `SKIPPED_REPORT_INTERVAL` and
    /// only when the count grew.
    pub fn report(&mut self) {
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
}
