//! Automatic restarts of FAILED tasks (`auto.restart.*`, Strimzi's `autoRestart`), a phase of the
//! herder's round on the worker that runs the task: the worker that owns a task is the one that
//! writes its status and can restart it, so no other worker needs asking.
//!
//! A task's count of automatic restarts in a row lives in its statuses on the status topic (the
//! worker writes it into each), so it survives a move of the task or a new leader. The `n`-th
//! restart in a row comes `n² - n` back-off units after the failure was first seen here (at once,
//! then 2, 6, 12, ... units), at most 60 units; the count starts over once the task has run for one
//! unit (its next status says so). Failures marked not restartable (the config's checks, a
//! plugin's fatal refusal to open) stay FAILED.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::config::connector::AutoRestart;
use crate::storage::ConfigSnapshot;
use crate::worker::Worker;
use wharf_connect::model::{State, Status, TargetState, TaskId};

/// What this worker has seen of the tasks it runs: each one's state and count, and since when.
#[derive(Default)]
pub(super) struct AutoRestarts {
    seen: BTreeMap<TaskId, Seen>,
}

struct Seen {
    state: State,
    restarts: u32,
    since: Instant,
    /// The log said why the task stays FAILED.
    told: bool,
}

/// What becomes of one task this round.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Decision {
    Nothing,
    /// Restart it now, as automatic restart number `restarts + 1` in a row.
    Restart,
    /// It ran for one back-off unit: its count starts over.
    Reset,
    /// It stays FAILED, for the reason given.
    GiveUp(String),
}

/// The decision for a task in `status`, which has looked so for `seen_for`.
pub(super) fn decide(policy: &AutoRestart, enabled: bool, status: &Status, seen_for: Duration) -> Decision {
    match status.state {
        State::Failed if !enabled => Decision::Nothing,
        State::Failed if !status.restartable => Decision::GiveUp(
            "its failure is not one a restart mends (the config, or the plugin refused it as fatal)".into(),
        ),
        State::Failed if policy.max_restarts.is_some_and(|max| status.auto_restarts >= max) => {
            Decision::GiveUp(format!(
                "it was restarted automatically {} time(s) in a row, auto.restart.max.restarts={}",
                status.auto_restarts,
                policy.max_restarts.unwrap_or_default()
            ))
        }
        State::Failed if seen_for >= policy.backoff(status.auto_restarts) => Decision::Restart,
        State::Running if status.auto_restarts > 0 && seen_for >= policy.backoff_unit => Decision::Reset,
        _ => Decision::Nothing,
    }
}

impl AutoRestarts {
    /// Restarts the tasks of this worker whose time has come, and starts over the counts of those
    /// that ran long enough.
    pub(super) fn run(&mut self, worker: &Worker, snapshot: &ConfigSnapshot) {
        let now = Instant::now();
        let mut present = std::collections::BTreeSet::new();
        for name in worker.running_names() {
            if snapshot.connectors.get(&name).is_none_or(|e| e.target != TargetState::Started) {
                continue;
            }
            let (Some((_, tasks)), Some(statuses)) = (worker.running(&name), worker.statuses().get(&name)) else {
                continue;
            };
            let Some(policy) = worker.auto_restart_of(&name) else { continue };
            let enabled = policy.enable.unwrap_or(worker.config().auto_restart_enable);
            for id in tasks.keys() {
                // Only the statuses this worker wrote: another's are about a run elsewhere.
                let Some(status) = statuses.tasks.get(id).filter(|s| s.worker_id == worker.id()) else { continue };
                let task = TaskId::new(&name, *id);
                present.insert(task.clone());
                let seen = self.seen.entry(task.clone()).or_insert(Seen {
                    state: status.state,
                    restarts: status.auto_restarts,
                    since: now,
                    told: false,
                });
                if seen.state != status.state || seen.restarts != status.auto_restarts {
                    *seen = Seen { state: status.state, restarts: status.auto_restarts, since: now, told: false };
                }
                match decide(&policy, enabled, status, now.saturating_duration_since(seen.since)) {
                    Decision::Nothing => {}
                    Decision::GiveUp(why) => {
                        if !seen.told {
                            seen.told = true;
                            tracing::warn!(task = task.to_string(), "task {task} stays FAILED: {why}; restart it through the REST API once its cause is mended");
                        }
                    }
                    // Said once: the status shows the count until the task's next status.
                    Decision::Reset if seen.told => {}
                    Decision::Reset => {
                        seen.told = true;
                        tracing::info!(
                            task = task.to_string(),
                            "task {task} has run for auto.restart.backoff.unit.ms={} ms: its count of automatic restarts starts over",
                            policy.backoff_unit.as_millis()
                        );
                        worker.reset_auto_restarts(&name, *id);
                    }
                    Decision::Restart => {
                        let next = status.auto_restarts.saturating_add(1);
                        let limit = policy.max_restarts.map_or("no limit".to_string(), |max| format!("at most {max}"));
                        tracing::warn!(
                            task = task.to_string(),
                            "task {task} FAILED; restarting it automatically (restart {next} in a row, {limit}; the next one waits {} s)",
                            policy.backoff(next).as_secs()
                        );
                        // Seen running from now: a run that lasts one unit starts the count over
                        // even if no round sees it twice.
                        *seen = Seen { state: State::Running, restarts: next, since: now, told: false };
                        if let Err(e) = worker.restart_task_automatically(&name, *id) {
                            tracing::error!(
                                task = task.to_string(),
                                "the automatic restart of task {task} failed: {e}"
                            );
                        }
                    }
                }
            }
        }
        self.seen.retain(|task, _| present.contains(task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: State, auto_restarts: u32) -> Status {
        Status {
            state,
            worker_id: "w".into(),
            trace: None,
            records_skipped: 0,
            generation: 1,
            version: None,
            auto_restarts,
            restartable: true,
        }
    }

    const UNIT: Duration = Duration::from_secs(60);

    #[test]
    fn restarts_at_once_then_after_n_squared_plus_n_units_at_most_sixty() {
        let policy = AutoRestart { enable: Some(true), max_restarts: None, backoff_unit: UNIT };
        let waits: Vec<u64> = (0..10).map(|n| policy.backoff(n).as_secs() / 60).collect();
        assert_eq!(waits, [0, 2, 6, 12, 20, 30, 42, 56, 60, 60]);
        assert_eq!(decide(&policy, true, &status(State::Failed, 0), Duration::ZERO), Decision::Restart);
        assert_eq!(
            decide(&policy, true, &status(State::Failed, 2), 6 * UNIT - Duration::from_millis(1)),
            Decision::Nothing
        );
        assert_eq!(decide(&policy, true, &status(State::Failed, 2), 6 * UNIT), Decision::Restart);
        assert_eq!(decide(&policy, true, &status(State::Failed, u32::MAX), 60 * UNIT), Decision::Restart);
    }

    #[test]
    fn a_task_that_ran_one_unit_starts_its_count_over() {
        let policy = AutoRestart { enable: Some(true), max_restarts: Some(3), backoff_unit: UNIT };
        assert_eq!(decide(&policy, true, &status(State::Running, 3), UNIT), Decision::Reset);
        assert_eq!(decide(&policy, true, &status(State::Running, 3), UNIT / 2), Decision::Nothing);
        assert_eq!(decide(&policy, true, &status(State::Running, 0), 10 * UNIT), Decision::Nothing);
    }

    #[test]
    fn gives_up_past_the_maximum_on_what_a_restart_cannot_mend_and_when_off() {
        let policy = AutoRestart { enable: Some(true), max_restarts: Some(2), backoff_unit: UNIT };
        assert_eq!(decide(&policy, true, &status(State::Failed, 1), 2 * UNIT), Decision::Restart);
        let given_up = decide(&policy, true, &status(State::Failed, 2), 60 * UNIT);
        assert!(
            matches!(&given_up, Decision::GiveUp(why) if why.contains("auto.restart.max.restarts=2")),
            "{given_up:?}"
        );
        let fatal = Status { restartable: false, ..status(State::Failed, 0) };
        assert!(matches!(decide(&policy, true, &fatal, UNIT), Decision::GiveUp(_)));
        assert_eq!(decide(&policy, false, &status(State::Failed, 0), 60 * UNIT), Decision::Nothing);
        for state in [State::Paused, State::Unassigned, State::Restarting, State::Stopped] {
            assert_eq!(decide(&policy, true, &status(state, 1), 60 * UNIT), Decision::Nothing);
        }
    }
}
