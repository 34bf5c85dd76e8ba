//! Sink tasks' static members (KIP-345) after their task stopped. A static member keeps
//! its place in its consumer group when its consumer closes, so that the task's next run, here
//! or on another worker, takes it over at once without a rebalance. When the task will not run
//! again (its connector was deleted or stopped, or its task count lowered), the place must be
//! given up, or the member's partitions wait for its `session.timeout.ms`: the worker asks the
//! group's coordinator to remove the member, naming the member id its consumer had, so that a
//! newer run that took the place over keeps it. That is why an entry stays while the task runs
//! here again: a run that stops before it joined its group leaves the older member in place.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::cluster::coordinator::{Removal, WireDiscovery};
use crate::kafka::StaticMember;
use crate::sync::Unpoisoned;

/// The most static members kept on one worker; beyond it the oldest is forgotten, and leaves
/// its group when its session runs out, as a member of a killed worker does.
pub const MAX_PARKED_MEMBERS: usize = 4096;

/// What a sink task with a static member needs to give its place up later.
pub struct Departure {
    pub connector: String,
    pub task: u32,
    pub member: StaticMember,
    /// Finds the group's coordinator with the consumer's own bootstrap and security settings.
    pub coordinators: WireDiscovery,
    pub parked: Arc<ParkedMembers>,
}

impl Departure {
    /// Called when the task's run ended with its consumer closed, as member `member_id`.
    pub fn park(self, member_id: String) {
        let parked = self.parked.clone();
        parked.park(Parked { departure: self, member_id });
    }
}

struct Parked {
    departure: Departure,
    member_id: String,
}

/// The static members of tasks that stopped on this worker, by connector and task.
#[derive(Default)]
pub struct ParkedMembers {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_task: BTreeMap<(String, u32), (u64, Parked)>,
    /// Counts parkings, to find the oldest entry.
    next: u64,
}

impl ParkedMembers {
    fn park(&self, parked: Parked) {
        let mut entries = self.entries.locked();
        let key = (parked.departure.connector.clone(), parked.departure.task);
        let order = entries.next;
        entries.next += 1;
        entries.by_task.insert(key, (order, parked));
        if entries.by_task.len() > MAX_PARKED_MEMBERS {
            let oldest = entries.by_task.iter().min_by_key(|(_, (order, _))| *order).map(|(key, _)| key.clone());
            if let Some((connector, task)) = oldest {
                entries.by_task.remove(&(connector.clone(), task));
                tracing::debug!(
                    "forgetting the static member of task {connector}-{task} (MAX_PARKED_MEMBERS={MAX_PARKED_MEMBERS})"
                );
            }
        }
    }

    /// Removes the members `gone` names from their groups, on a thread of its own.
    pub fn release(&self, gone: impl Fn(&str, u32) -> bool) {
        let leaving: Vec<Parked> = {
            let mut entries = self.entries.locked();
            let keys: Vec<(String, u32)> =
                entries.by_task.keys().filter(|(connector, task)| gone(connector, *task)).cloned().collect();
            keys.iter().filter_map(|key| entries.by_task.remove(key)).map(|(_, parked)| parked).collect()
        };
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

    #[cfg(test)]
    fn parked(&self) -> Vec<(String, u32)> {
        self.entries.locked().by_task.keys().cloned().collect()
    }
}

fn leave(parked: Parked) {
    let Parked { mut departure, member_id } = parked;
    let task = format!("{}-{}", departure.connector, departure.task);
    let StaticMember { group, instance } = &departure.member;
    match departure.coordinators.remove_static_member(group, &member_id, instance) {
        Ok(Removal::Removed) => tracing::info!(task, "static member {instance} left group {group} for good"),
        Ok(Removal::NotThere) => tracing::info!(task, "group {group} no longer had static member {instance}"),
        Ok(Removal::Replaced) => {
            tracing::info!(task, "another consumer holds {instance} in group {group} now, and keeps it")
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

    #[test]
    fn members_wait_until_their_task_runs_again_or_is_gone() {
        let parked = Arc::new(ParkedMembers::default());
        for (connector, task) in [("a", 0), ("a", 1), ("b", 0)] {
            departure(&parked, connector, task).park(format!("m-{connector}-{task}"));
        }
        // A later run of a task that stops takes its entry over.
        departure(&parked, "b", 0).park("m-b-0-again".into());
        assert_eq!(parked.parked().len(), 3);
        parked.release(|connector, task| connector == "a" && task >= 1 || connector == "b");
        assert_eq!(parked.parked(), vec![("a".to_string(), 0)]);
    }

    #[test]
    fn the_oldest_member_is_forgotten_beyond_the_bound() {
        let parked = Arc::new(ParkedMembers::default());
        for task in 0..=MAX_PARKED_MEMBERS as u32 {
            departure(&parked, "c", task).park(format!("m-{task}"));
        }
        let kept = parked.parked();
        assert_eq!(kept.len(), MAX_PARKED_MEMBERS);
        assert!(!kept.contains(&("c".to_string(), 0)) && kept.contains(&("c".to_string(), 1)));
    }
}
