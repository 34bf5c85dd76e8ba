//! Sink tasks' static members (KIP-345) after their task stopped. A static member keeps
//! its place in its consumer group when its consumer closes, so that the task's next run, here
//! or on another worker, takes it over at once without a rebalance. When the task will not run
//! again (its connector was deleted or stopped, or its task count lowered), the place must be
//! given up, or the member's partitions wait for its `session.timeout.ms`: the worker asks the
//! group's coordinator to remove the member, naming the member id its consumer had, so that a
//! newer run that took the place over keeps it. That is why an entry stays while the task runs
//! here again: a run that stops before it joined its group leaves the older member in place.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::cluster::coordinator::{Removal, WireDiscovery};
use crate::kafka::StaticMember;
use crate::sync::Unpoisoned;

/// The most static members kept on one worker; beyond it the oldest is forgotten, and leaves
/// its group when its session runs out, as a member of a killed worker does.
pub(super) const MAX_PARKED_MEMBERS: usize = 4096;

/// How many times a member's removal is tried, at most once per reconciliation after the first,
/// while the coordinator cannot be reached.
pub(super) const MAX_REMOVAL_TRIES: u32 = 5;

/// What a sink task with a static member needs to give its place up later.
pub(super) struct Departure {
    pub connector: String,
    pub task: u32,
    /// Which run of the task on this worker (`ParkedMembers::next_run`): an older run that
    /// ends late never replaces a newer one's entry.
    pub run: u64,
    pub member: StaticMember,
    /// Finds the group's coordinator with the consumer's own bootstrap and security settings.
    pub coordinators: WireDiscovery,
    pub parked: Arc<ParkedMembers>,
}

impl Departure {
    /// Called when the task's run ended with its consumer closed, as member `member_id`.
    pub(super) fn park(self, member_id: String) {
        let parked = self.parked.clone();
        parked.park(Parked { departure: self, member_id, tries: 0 });
    }
}

struct Parked {
    departure: Departure,
    member_id: String,
    tries: u32,
}

/// The static members of tasks that stopped on this worker, by connector and task.
#[derive(Default)]
pub(super) struct ParkedMembers {
    entries: Mutex<BTreeMap<(String, u32), Parked>>,
    runs: AtomicU64,
}

impl ParkedMembers {
    /// A number for a task's run that starts now, greater than every earlier one.
    pub(super) fn next_run(&self) -> u64 {
        self.runs.fetch_add(1, Ordering::Relaxed)
    }

    fn park(&self, parked: Parked) {
        let mut entries = self.entries.locked();
        let key = (parked.departure.connector.clone(), parked.departure.task);
        if entries.get(&key).is_some_and(|newer| newer.departure.run > parked.departure.run) {
            return;
        }
        entries.insert(key, parked);
        if entries.len() > MAX_PARKED_MEMBERS {
            let oldest = entries.iter().min_by_key(|(_, p)| p.departure.run).map(|(key, _)| key.clone());
            if let Some((connector, task)) = oldest {
                entries.remove(&(connector.clone(), task));
                tracing::debug!(
                    "forgetting the static member of task {connector}-{task} (MAX_PARKED_MEMBERS={MAX_PARKED_MEMBERS})"
                );
            }
        }
    }

    /// Removes the members of the tasks `gone` names from their groups, on a thread of its own.
    pub(super) fn release(&self, gone: impl Fn(&str, u32) -> bool) {
        self.release_where(|connector, task, _| gone(connector, task));
    }

    /// A task starts with another identity in its group (its connector's `group.id` or
    /// `group.instance.id` changed): the member of its earlier run gives its place up.
    pub(super) fn release_if_changed(&self, connector: &str, task: u32, member: &StaticMember) {
        self.release_where(|c, t, parked| c == connector && t == task && parked != member);
    }

    fn release_where(&self, leaves: impl Fn(&str, u32, &StaticMember) -> bool) {
        let leaving = self.take(leaves);
        if leaving.is_empty() {
            return;
        }
        let spawned = std::thread::Builder::new().name("group-leave".into()).spawn(move || {
            for parked in leaving {
                leave(parked);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(
                "cannot start a thread to remove stopped sink tasks from their groups ({e}); their partitions move \
                 when the consumers' session.timeout.ms runs out"
            );
        }
    }

    /// Takes the entries `leaves` names out.
    fn take(&self, leaves: impl Fn(&str, u32, &StaticMember) -> bool) -> Vec<Parked> {
        let mut entries = self.entries.locked();
        let keys: Vec<(String, u32)> = entries
            .iter()
            .filter(|((connector, task), p)| leaves(connector, *task, &p.departure.member))
            .map(|(key, _)| key.clone())
            .collect();
        keys.iter().filter_map(|key| entries.remove(key)).collect()
    }

    #[cfg(test)]
    fn parked(&self) -> Vec<(String, u32, String)> {
        self.entries.locked().iter().map(|((c, t), p)| (c.clone(), *t, p.member_id.clone())).collect()
    }
}

/// Asks the coordinator to remove one member; one that could not be asked is parked again, for
/// the next reconciliation to try, up to `MAX_REMOVAL_TRIES`.
fn leave(mut parked: Parked) {
    let task = format!("{}-{}", parked.departure.connector, parked.departure.task);
    let StaticMember { group, instance } = parked.departure.member.clone();
    let answer = parked.departure.coordinators.remove_static_member(&group, &parked.member_id, &instance);
    match answer {
        Ok(Removal::Removed) => tracing::info!(task, "static member {instance} left group {group} for good"),
        Ok(Removal::NotThere) => tracing::info!(task, "group {group} no longer had static member {instance}"),
        Ok(Removal::Replaced) => {
            tracing::info!(task, "another consumer holds {instance} in group {group} now, and keeps it")
        }
        Err(e) if !e.fatal && parked.tries + 1 < MAX_REMOVAL_TRIES => {
            tracing::info!(task, "cannot remove static member {instance} from group {group} yet ({e}); trying again");
            parked.tries += 1;
            let members = parked.departure.parked.clone();
            members.park(parked);
        }
        Err(e) => tracing::warn!(
            task,
            "cannot remove static member {instance} from group {group} ({e}); its partitions move to the group's \
             other members when the consumer's session.timeout.ms runs out"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn departure(parked: &Arc<ParkedMembers>, connector: &str, task: u32) -> Departure {
        Departure {
            connector: connector.into(),
            task,
            run: parked.next_run(),
            member: StaticMember { group: format!("connect-{connector}"), instance: format!("{connector}-{task}") },
            // Nothing listens there: a removal fails at once, and is only logged.
            coordinators: WireDiscovery {
                bootstrap: vec!["127.0.0.1:1".into()],
                client_id: "test".into(),
                security: Default::default(),
            },
            parked: parked.clone(),
        }
    }

    fn keys(parked: &ParkedMembers) -> Vec<(String, u32)> {
        parked.parked().into_iter().map(|(c, t, _)| (c, t)).collect()
    }

    #[test]
    fn members_wait_until_their_task_is_gone_and_a_late_older_run_replaces_no_newer_one() {
        let parked = Arc::new(ParkedMembers::default());
        for (connector, task) in [("a", 0), ("a", 1), ("b", 0)] {
            departure(&parked, connector, task).park(format!("m-{connector}-{task}"));
        }
        // Two runs of b-0 end in the other order: the newer run's member stays.
        let (older, newer) = (departure(&parked, "b", 0), departure(&parked, "b", 0));
        newer.park("m-b-0-newer".into());
        older.park("m-b-0-older".into());
        assert!(parked.parked().contains(&("b".to_string(), 0, "m-b-0-newer".to_string())));
        // (What `release` takes; its thread's removals are not waited for here.)
        let gone = parked.take(|connector, task, _| connector == "a" && task >= 1 || connector == "b");
        assert_eq!(gone.len(), 2);
        assert_eq!(keys(&parked), vec![("a".to_string(), 0)]);
        // The same task with another identity releases the earlier one.
        let same = StaticMember { group: "connect-a".into(), instance: "a-0".into() };
        let other = StaticMember { group: "connect-a".into(), instance: "renamed-a-0".into() };
        assert!(parked.take(|c, t, m| c == "a" && t == 0 && *m != same).is_empty());
        assert_eq!(parked.take(|c, t, m| c == "a" && t == 0 && *m != other).len(), 1);
        assert!(keys(&parked).is_empty());
    }

    #[test]
    fn the_oldest_member_is_forgotten_beyond_the_bound() {
        let parked = Arc::new(ParkedMembers::default());
        for task in 0..=MAX_PARKED_MEMBERS as u32 {
            departure(&parked, "c", task).park(format!("m-{task}"));
        }
        let kept = keys(&parked);
        assert_eq!(kept.len(), MAX_PARKED_MEMBERS);
        assert!(!kept.contains(&("c".to_string(), 0)) && kept.contains(&("c".to_string(), 1)));
    }
}
