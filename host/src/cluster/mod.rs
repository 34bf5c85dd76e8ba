//! Workers with one `group.id` form a cluster through Kafka's group membership protocol
//! (protocol type `connect`): `member` speaks it to the group coordinator, `assign` is the
//! leader's incremental cooperative assignment, `client` the wire connection, `security` its TLS
//! and SASL. `ClusterView` is what the rest of the worker sees of it: what this worker owns, and
//! who leads.
//!
//! - `client`: a blocking connection over the `kafka-protocol` crate, plain or TLS (rustls), then
//!   SASL PLAIN or SCRAM; a `WireError` says whether trying again can help. Each response frame
//!   passes `wire_check` before it is decoded.
//! - `coordinator`: the member's calls as traits (`Discovery`, `Coordinator`), spoken over `client`
//!   by `WireDiscovery` and `WireCoordinator`; `WireDiscovery::remove_static_member` removes a sink
//!   task's static member from its group, as the Java admin client's member removal does, which
//!   librdkafka lacks.
//! - `member`: `Member`, FindCoordinator, JoinGroup, SyncGroup, Heartbeat and LeaveGroup on a
//!   thread of its own, asking the worker through a `Participant` (to lead, to give work up, to
//!   catch up with the config topic); `member/tests.rs` drives it with a scripted coordinator.
//! - `assign`: `Assignor`, with `MemberMetadata` and `Assignment` as JSON in the group protocol
//!   `wharf-1`.
//!
//! This module keeps the group; it never runs tasks or writes topics itself.

pub mod assign;
pub mod client;
pub mod coordinator;
pub mod member;
pub mod security;
mod wire_check;

use crate::sync::Unpoisoned;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub use assign::{MemberView, TaskId, Work};

/// The leader of the group as of the last assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Leader {
    pub member_id: String,
    pub url: String,
}

/// This worker's place in its group.
#[derive(Debug, Clone, Default)]
pub struct Membership {
    pub generation: i32,
    pub member_id: String,
    /// `host:port` of the group coordinator this worker talks to.
    pub coordinator: Option<String>,
    /// None while a rebalance is in progress or before the first one completed.
    pub leader: Option<Leader>,
    pub is_leader: bool,
    /// What this worker runs.
    pub owned: Work,
    /// Every member's URL and work as of the last assignment.
    pub members: BTreeMap<String, MemberView>,
    /// The worker's rebalances so far, for its metrics.
    pub rebalances: Rebalances,
}

/// How this worker's rebalances went (Connect's `connect-worker-rebalance-metrics`), and its
/// calls to the group coordinator (`connect-coordinator-metrics`).
#[derive(Debug, Clone, Default)]
pub struct Rebalances {
    /// When the rebalance under way began; none between rebalances.
    pub started: Option<std::time::Instant>,
    pub completed: u64,
    /// Milliseconds the completed ones took, together and the longest.
    pub total_ms: u64,
    pub max_ms: u64,
    pub last_completed: Option<std::time::Instant>,
    /// Attempts that ended without an assignment (an error of the coordinator's, or no answer).
    pub failed: u64,
    /// JoinGroup and SyncGroup calls answered without an error, and the milliseconds they took
    /// together.
    pub joins: u64,
    pub join_ms: u64,
    pub syncs: u64,
    pub sync_ms: u64,
    /// Heartbeats answered, and when the last was.
    pub heartbeats: u64,
    pub last_heartbeat: Option<std::time::Instant>,
}

impl Rebalances {
    /// A rebalance begins (a join); one already under way goes on.
    pub fn begin(&mut self) {
        self.started.get_or_insert_with(std::time::Instant::now);
    }

    /// A JoinGroup (`sync` false) or SyncGroup call was answered after `took`.
    pub fn answered(&mut self, sync: bool, took: std::time::Duration) {
        let ms = took.as_millis().min(u128::from(u64::MAX)) as u64;
        if sync {
            self.syncs += 1;
            self.sync_ms = self.sync_ms.saturating_add(ms);
        } else {
            self.joins += 1;
            self.join_ms = self.join_ms.saturating_add(ms);
        }
    }

    /// A heartbeat was answered.
    pub fn heartbeat(&mut self) {
        self.heartbeats += 1;
        self.last_heartbeat = Some(std::time::Instant::now());
    }

    /// The attempt under way ended without an assignment.
    pub fn fail(&mut self) {
        self.failed += 1;
    }

    /// The rebalance under way ended with an assignment.
    pub fn complete(&mut self) {
        let now = std::time::Instant::now();
        if let Some(started) = self.started.take() {
            let took = now.duration_since(started).as_millis() as u64;
            self.completed += 1;
            self.total_ms += took;
            self.max_ms = self.max_ms.max(took);
        }
        self.last_completed = Some(now);
    }
}

impl Membership {
    /// The REST URL of the worker that owns `connector`, if known.
    pub fn connector_owner(&self, connector: &str) -> Option<&MemberView> {
        self.members.values().find(|m| m.owned.connectors.contains(connector))
    }

    pub fn task_owner(&self, task: &TaskId) -> Option<&MemberView> {
        self.members.values().find(|m| m.owned.tasks.contains(task))
    }
}

/// Shared between the membership thread (which writes it) and the herder and REST API (which
/// read it and may ask for a rebalance).
#[derive(Default)]
pub struct ClusterView {
    state: Mutex<Membership>,
    rejoin: Mutex<Option<String>>,
    wake: Condvar,
}

impl ClusterView {
    pub fn get(&self) -> Membership {
        self.state.locked().clone()
    }

    pub fn update(&self, f: impl FnOnce(&mut Membership)) {
        f(&mut self.state.locked());
    }

    /// Asks the membership thread to rejoin the group (which starts a rebalance), saying why.
    pub fn request_rejoin(&self, reason: impl Into<String>) {
        let mut rejoin = self.rejoin.locked();
        if rejoin.is_none() {
            *rejoin = Some(reason.into());
        }
        self.wake.notify_all();
    }

    /// Waits up to `timeout` for a rejoin request; returns and clears its reason.
    fn wait_for_rejoin(&self, timeout: Duration) -> Option<String> {
        let rejoin = self.rejoin.locked();
        let (mut rejoin, _) = self
            .wake
            .wait_timeout_while(rejoin, timeout, |r| r.is_none())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        rejoin.take()
    }
}
