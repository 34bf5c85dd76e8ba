//! What a running task's status says besides RUNNING: the line its plugin last reported on its
//! progress (`progress.report`, contract 0.1.6), shown as the status's `trace`, and the count of
//! records skipped under `errors.tolerance=all`. Both go into one status record, so that writing
//! one never clears the other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::storage::State;

use super::Reporter;
use crate::storage::StatusStore;
use crate::sync::Unpoisoned;

/// How often, at most, a changing progress line is written to the status topic; the first is
/// written at once, and the latest line of an interval at its end.
pub(super) const PROGRESS_PUBLISH_INTERVAL: Duration = Duration::from_secs(30);

/// One task's RUNNING status, as it is written.
pub(super) struct RunningStatus {
    status: Arc<dyn StatusStore>,
    reporter: Reporter,
    connector: String,
    task: u32,
    stop: Arc<crate::sync::Stop>,
    shown: Mutex<Shown>,
    /// A progress line waits for its interval: the task loop's check costs one load when none does.
    waiting: AtomicBool,
}

#[derive(Default)]
struct Shown {
    skipped: u64,
    progress: Option<String>,
    /// The latest line, not written yet.
    pending: Option<String>,
    last_progress: Option<Instant>,
}

impl RunningStatus {
    pub(super) fn new(
        status: Arc<dyn StatusStore>,
        reporter: Reporter,
        connector: &str,
        task: u32,
        stop: Arc<crate::sync::Stop>,
    ) -> Arc<Self> {
        Arc::new(RunningStatus {
            status,
            reporter,
            connector: connector.to_string(),
            task,
            stop,
            shown: Mutex::new(Shown::default()),
            waiting: AtomicBool::new(false),
        })
    }

    /// The count of skipped records grew: written at once (the tolerance spaces its calls).
    pub(super) fn skipped(&self, count: u64) {
        let mut shown = self.shown.locked();
        shown.skipped = count;
        self.write(&shown);
    }

    /// What the plugin reported since the last call, if anything: a line is written at once
    /// when none was for an interval; a waiting one at the interval's end. Called by the task
    /// loop as it goes (one load when nothing waits).
    pub(super) fn show(&self, reported: Option<String>) {
        // A count of automatic restarts that started over is written here, on the task's thread.
        if self.reporter.auto_restarts.take_reset() {
            let shown = self.shown.locked();
            self.write(&shown);
        }
        if reported.is_none() && !self.waiting.load(Ordering::Relaxed) {
            return;
        }
        let mut shown = self.shown.locked();
        if let Some(line) = reported {
            let unchanged = shown.progress.as_deref() == Some(line.as_str());
            shown.pending = (!unchanged).then_some(line);
            self.waiting.store(!unchanged, Ordering::Relaxed);
        }
        self.publish_due(&mut shown);
    }

    fn publish_due(&self, shown: &mut Shown) {
        if shown.last_progress.is_some_and(|at| at.elapsed() < PROGRESS_PUBLISH_INTERVAL) {
            return;
        }
        let Some(line) = shown.pending.take() else { return };
        shown.progress = Some(line);
        shown.last_progress = Some(Instant::now());
        self.waiting.store(false, Ordering::Relaxed);
        self.write(shown);
    }

    fn write(&self, shown: &Shown) {
        // A stopping task's last word is its stop (or its failure), not a progress line.
        if self.stop.is_stopped() {
            return;
        }
        let mut running = self.reporter.status(State::Running, shown.progress.clone());
        running.records_skipped = shown.skipped;
        self.status.put_task(&self.connector, self.task, running);
    }
}
