//! What reaches the herder's thread: one channel of `Event`s, in the shape of Kafka Connect's
//! `DistributedHerder` request queue. Requests from other threads (REST, the group member, the
//! threads that generate and deliver task configs), and the store's changes; the loop's ticks
//! are the waits that end without an event (`round::RECONCILE_INTERVAL`).

use wharf_connect::model::Pairs;

use super::error::HerderError;
use super::place;
use crate::cluster::Work;
use crate::worker::StartError;

/// One thing for the herder's thread to see to; every event is followed by a round.
pub(super) enum Event {
    Request(Request),
    /// The config store read something new (at most one waits in the channel at a time).
    StoreChanged,
    /// A round is due now (the group assigned work, the worker stops).
    Wake,
}

/// What other threads ask of the herder's thread. Those that wait for the answer carry where to
/// send it.
pub(super) enum Request {
    /// Generate the connector's task configs again at the next reconciliation.
    RestartConnector(String),
    RestartTask {
        name: String,
        id: u32,
        answer: Answer<Result<(), HerderError>>,
    },
    /// Stop the work the group took away (the group member waits for it before rejoining).
    Revoke {
        work: Work,
        answer: Answer<()>,
    },
    /// On the leader, before it assigns: the work the assignment covers. Not waited for: the
    /// next round takes it before it reconciles.
    AssignedWork(Work),
    /// A connector's task configs, generated off the herder's thread from `from` (its config).
    Generated {
        name: String,
        from: Pairs,
        configs: Result<Vec<Pairs>, StartError>,
    },
    /// A health check: answered as soon as the herder's thread gets to it.
    Health(Answer<()>),
    /// A plugin finished compiling: connectors that waited for one try again now.
    PluginsChanged,
    /// What became of task configs delivered off the herder's thread, to the config store or
    /// to the leader.
    Forwarded {
        name: String,
        from: Option<Pairs>,
        delivery: Delivery,
    },
}

impl Request {
    /// Answers of the herder's own threads (generations and deliveries, at most
    /// `round::MAX_GENERATING` at once): never refused, or a connector would wait forever.
    pub(super) fn must_arrive(&self) -> bool {
        matches!(self, Request::Generated { .. } | Request::Forwarded { .. })
    }
}

pub(super) type Answer<T> = std::sync::mpsc::SyncSender<T>;

/// Task configs on their way to the config store or to the leader.
pub(super) struct Forward {
    pub(super) name: String,
    /// The connector config they were generated from; none for the empty task list of a
    /// stopped connector, which a resume must generate anew.
    pub(super) from: Option<Pairs>,
    pub(super) tasks: Vec<Pairs>,
    /// Never `NoLeader`: a round without a leader leaves task configs to a later one.
    pub(super) to: place::Destination,
}

/// What became of task configs delivered off the herder's thread.
pub(super) enum Delivery {
    /// Written to the config store (by this worker or by the leader).
    Accepted,
    /// Not taken this time (no leader, a fenced writer, a leader that did not answer); a later
    /// round tries again.
    Later,
    /// The config store refused them: the connector fails.
    Failed(StartError),
}
