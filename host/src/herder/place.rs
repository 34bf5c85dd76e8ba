//! What differs between a standalone worker and a member of a cluster, behind one trait, so that
//! a round of the herder reads the same for both. A round takes its `Place` once, at its start.

use crate::cluster::{ClusterView, Membership, TaskId};

/// Where a worker stands, asked anew each time: alone for good, or in a group whose view the
/// group member changes.
pub(super) trait Standing: Send + Sync {
    /// The place a round works from.
    fn place(&self) -> Box<dyn Place>;
    /// The group's view now; none outside a group.
    fn membership(&self) -> Option<Membership>;
    /// Asks the group member to rejoin (a rebalance); nothing to do outside a group.
    fn request_rejoin(&self, why: String);
}

impl Standing for Alone {
    fn place(&self) -> Box<dyn Place> {
        Box::new(Alone)
    }

    fn membership(&self) -> Option<Membership> {
        None
    }

    fn request_rejoin(&self, _: String) {}
}

impl Standing for ClusterView {
    fn place(&self) -> Box<dyn Place> {
        Box::new(self.get())
    }

    fn membership(&self) -> Option<Membership> {
        Some(self.get())
    }

    fn request_rejoin(&self, why: String) {
        ClusterView::request_rejoin(self, why)
    }
}

pub(super) trait Place {
    /// Whether this worker runs the connector itself: its status and its task configs.
    fn owns_connector(&self, name: &str) -> bool;
    fn owns_task(&self, name: &str, task: u32) -> bool;
    /// The group generation statuses are written in; none outside a group.
    fn generation(&self) -> Option<i32>;
    /// Where task configs this worker generates go.
    fn task_configs_go(&self) -> Destination;
    /// Whether the tasks of a connector that failed still run (in a cluster they do: the
    /// connector's failure is its own; a standalone worker runs none).
    fn runs_tasks_of_failed_connectors(&self) -> bool;
    /// The connectors whose deletion this worker sees to: `None` for every one it reported (a
    /// standalone worker, which also stops them), or those the group gave it.
    fn owned_connectors(&self) -> Option<Vec<String>>;
    /// Whether this worker assigns the group's work (and rebalances when the config names
    /// other work than it assigned).
    fn leads(&self) -> bool;
}

/// Where task configs go.
pub(super) enum Destination {
    /// Into the config store, by this worker.
    Store,
    /// Into the config store, by this worker as the group's leader (whose writer may have been
    /// fenced by a newer leader).
    StoreAsLeader,
    /// To the leader, at this REST URL.
    Leader(String),
    /// Nowhere yet: the group has no leader (a rebalance is under way).
    NoLeader,
}

/// A standalone worker: it runs everything and writes its own task configs.
pub(super) struct Alone;

impl Place for Alone {
    fn owns_connector(&self, _: &str) -> bool {
        true
    }

    fn owns_task(&self, _: &str, _: u32) -> bool {
        true
    }

    fn generation(&self) -> Option<i32> {
        None
    }

    fn task_configs_go(&self) -> Destination {
        Destination::Store
    }

    fn runs_tasks_of_failed_connectors(&self) -> bool {
        false
    }

    fn owned_connectors(&self) -> Option<Vec<String>> {
        None
    }

    fn leads(&self) -> bool {
        false
    }
}

/// A member of a cluster, as its group last assigned it work.
impl Place for Membership {
    fn owns_connector(&self, name: &str) -> bool {
        self.owned.connectors.contains(name)
    }

    fn owns_task(&self, name: &str, task: u32) -> bool {
        self.owned.tasks.contains(&TaskId { connector: name.to_string(), task })
    }

    fn generation(&self) -> Option<i32> {
        Some(self.generation)
    }

    fn task_configs_go(&self) -> Destination {
        match (&self.leader, self.is_leader) {
            (_, true) => Destination::StoreAsLeader,
            (Some(leader), false) => Destination::Leader(leader.url.clone()),
            (None, false) => Destination::NoLeader,
        }
    }

    fn runs_tasks_of_failed_connectors(&self) -> bool {
        true
    }

    fn owned_connectors(&self) -> Option<Vec<String>> {
        Some(self.owned.connectors.iter().cloned().collect())
    }

    fn leads(&self) -> bool {
        self.is_leader
    }
}
