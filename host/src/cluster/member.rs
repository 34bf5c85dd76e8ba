//! One worker's membership in its group: find the coordinator, join, (as leader) assign, sync,
//! then heartbeat until a rebalance, and leave on the way out. Runs on a thread of its own and
//! tells the worker what to run through a `Participant`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

use super::assign::{Assignment, Assignor, MemberMetadata, Work};
use super::client::{WireError, REQUEST_TIMEOUT};
use super::coordinator::{Coordinator, Discovery, JoinRequest, WireCoordinator, WireDiscovery};
use super::security::WireSecurity;
use super::{ClusterView, Leader};

/// What the membership needs from the worker.
pub trait Participant: Send + Sync {
    /// How far this worker has read the config topic (the next offset).
    fn config_offset(&self) -> i64;
    /// Called on the leader only, before it assigns: becomes the config topic's only writer,
    /// reads it to the end, and returns its offset and the work it names.
    fn lead(&self) -> Result<(i64, Work), String>;
    /// Leadership went to another worker.
    fn follow(&self);
    /// Stops the given work and waits until it stopped.
    fn revoke(&self, work: &Work);
    /// Reads the config topic at least up to `offset`; false if that took longer than `timeout`.
    fn catch_up(&self, offset: i64, timeout: Duration) -> bool;
    /// The view holds a new assignment: start what is new.
    fn assigned(&self);
}

pub struct MemberConfig {
    pub group_id: String,
    /// `host:port` of the bootstrap brokers.
    pub bootstrap: Vec<String>,
    pub client_id: String,
    pub url: String,
    pub worker_id: String,
    pub session_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub rebalance_timeout: Duration,
    pub max_delay: Duration,
    pub sync_timeout: Duration,
    /// TLS and SASL for every connection to the brokers.
    pub security: WireSecurity,
}

/// How long to wait before retrying after the coordinator could not be found or reached.
const RETRY_BACKOFF: Duration = Duration::from_millis(500);
/// How long to wait after a failure that retrying cannot mend (credentials or a certificate
/// refused): long enough not to hammer the brokers or flood the log, short enough to notice a
/// fix made on the broker's side.
const FATAL_BACKOFF: Duration = Duration::from_secs(30);

/// Why a round of membership ended.
enum Next {
    /// Join again (a rebalance); the work keeps running.
    Rejoin,
    /// The coordinator moved or the connection broke: find it again, then join.
    Rediscover,
    Stop,
}

pub struct Member {
    config: MemberConfig,
    view: Arc<ClusterView>,
    participant: Arc<dyn Participant>,
    stop: Arc<crate::sync::Stop>,
    assignor: Assignor,
    discovery: Box<dyn Discovery>,
    coordinator: Option<Box<dyn Coordinator>>,
    member_id: String,
    generation: i32,
    owned: Work,
    was_leader: bool,
    /// The leader rejoins at this moment so that held-back work can move.
    scheduled_rejoin: Option<Instant>,
    /// When the coordinator last answered.
    last_contact: Instant,
}

/// The running membership: stop it to leave the group.
pub struct MemberHandle {
    stop: Arc<crate::sync::Stop>,
    view: Arc<ClusterView>,
    thread: Option<crate::sync::Stoppable>,
    /// For the connection `leave` may open of its own.
    security: WireSecurity,
}

impl MemberHandle {
    /// Leaves the group (at once, without waiting for the session to time out) and waits for
    /// the membership thread to finish, at most `timeout`.
    pub fn leave(mut self, group_id: &str, timeout: Duration) {
        self.stop.stop();
        self.view.request_rejoin("stopping");
        let deadline = Instant::now() + timeout;
        let Some(thread) = self.thread.take() else { return };
        let Err(thread) = thread.ended_by(Instant::now() + Duration::from_secs(1)) else { return };
        // Waiting in a JoinGroup: leave over a connection of our own, which ends the wait.
        let membership = self.view.get();
        if let (Some(address), false) = (membership.coordinator, membership.member_id.is_empty()) {
            let left = WireCoordinator::open(&address, "wharf-leave", &self.security)
                .and_then(|mut c| c.leave(group_id, &membership.member_id));
            match left {
                Ok(_) => tracing::info!("left group {group_id}"),
                Err(e) => tracing::warn!("could not leave group {group_id} ({e})"),
            }
        }
        if thread.ended_by(deadline).is_err() {
            tracing::warn!("the group membership did not end within {} ms; leaving it behind", timeout.as_millis());
        }
    }
}

impl Member {
    /// Joins the group on a thread of its own; fails only when the system cannot start a thread.
    pub fn start(
        config: MemberConfig,
        view: Arc<ClusterView>,
        participant: Arc<dyn Participant>,
    ) -> std::io::Result<MemberHandle> {
        let discovery = WireDiscovery {
            bootstrap: config.bootstrap.clone(),
            client_id: config.client_id.clone(),
            security: config.security.clone(),
        };
        Member::start_with(config, view, participant, Box::new(discovery))
    }

    /// As `start`, reaching the coordinator through `discovery`.
    pub fn start_with(
        config: MemberConfig,
        view: Arc<ClusterView>,
        participant: Arc<dyn Participant>,
        discovery: Box<dyn Discovery>,
    ) -> std::io::Result<MemberHandle> {
        let stop = Arc::new(crate::sync::Stop::default());
        let security = config.security.clone();
        let member = Member {
            assignor: Assignor::new(config.max_delay),
            discovery,
            config,
            view: view.clone(),
            participant,
            stop: stop.clone(),
            coordinator: None,
            member_id: String::new(),
            generation: -1,
            owned: Work::default(),
            was_leader: false,
            scheduled_rejoin: None,
            last_contact: Instant::now(),
        };
        let thread = crate::sync::Stoppable::spawn_with("group-member".into(), stop.clone(), move || member.run())?;
        Ok(MemberHandle { stop, view, thread: Some(thread), security })
    }

    fn stopping(&self) -> bool {
        self.stop.is_stopped()
    }

    fn run(mut self) {
        tracing::info!("joining group {} as {}", self.config.group_id, self.config.url);
        let mut next = Next::Rediscover;
        let mut failures = 0u32;
        while !self.stopping() {
            next = match next {
                Next::Rediscover => match self.find_coordinator() {
                    Ok(()) => {
                        failures = 0;
                        Next::Rejoin
                    }
                    Err(e) if e.fatal => {
                        tracing::error!(
                            "cannot join group {}: {e}; trying again in {} s",
                            self.config.group_id,
                            FATAL_BACKOFF.as_secs()
                        );
                        failures = 0;
                        self.pause(FATAL_BACKOFF);
                        Next::Rediscover
                    }
                    Err(e) => {
                        self.check_session();
                        // Say it at once, then every 20th time (about every 10 s).
                        if failures.is_multiple_of(20) {
                            tracing::warn!(
                                "cannot find the coordinator of group {}: {e}; retrying",
                                self.config.group_id
                            );
                        }
                        failures += 1;
                        self.stop.sleep(RETRY_BACKOFF);
                        Next::Rediscover
                    }
                },
                Next::Rejoin => self.join_and_sync(),
                Next::Stop => break,
            };
        }
        self.leave();
    }

    fn find_coordinator(&mut self) -> Result<(), WireError> {
        self.coordinator = None;
        let coordinator = self.discovery.find(&self.config.group_id)?;
        tracing::info!("group {} has its coordinator at {}", self.config.group_id, coordinator.address());
        self.coordinator = Some(coordinator);
        Ok(())
    }

    /// Stops everything this worker runs: its membership is gone, and the group may have given
    /// the work to others.
    fn lose_everything(&mut self, why: &str) {
        if !self.owned.is_empty() {
            tracing::warn!("{why}: stopping {} until the group assigns work again", self.owned.describe());
            let owned = std::mem::take(&mut self.owned);
            self.view.update(|m| m.owned = Work::default());
            self.participant.revoke(&owned);
        }
        self.view.update(|m| {
            m.leader = None;
            m.is_leader = false;
        });
        if self.was_leader {
            self.was_leader = false;
            self.participant.follow();
        }
    }

    fn join_and_sync(&mut self) -> Next {
        let Some(address) = self.coordinator.as_ref().map(|c| c.address().to_string()) else {
            return Next::Rediscover;
        };
        let member_id = self.member_id.clone();
        self.view.update(|m| {
            m.leader = None;
            m.member_id = member_id;
            m.coordinator = Some(address);
            m.rebalances.begin();
        });
        let metadata = MemberMetadata {
            url: self.config.url.clone(),
            worker_id: self.config.worker_id.clone(),
            config_offset: self.participant.config_offset(),
            owned: self.owned.clone(),
        };
        let metadata = match serde_json::to_vec(&metadata) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::error!("cannot write this worker's group metadata ({e}); retrying");
                self.stop.sleep(RETRY_BACKOFF);
                return Next::Rejoin;
            }
        };
        let request = JoinRequest {
            group_id: &self.config.group_id,
            member_id: &self.member_id,
            session_timeout: self.config.session_timeout,
            rebalance_timeout: self.config.rebalance_timeout,
            metadata,
        };
        let timeout = self.rebalance_call_timeout();
        let Some(connection) = self.coordinator.as_mut() else { return Next::Rediscover };
        let asked = std::time::Instant::now();
        let joined = connection.join(&request, timeout);
        let took = asked.elapsed();
        let Some(joined) = self.answered(joined, "joining") else {
            self.view.update(|m| m.rebalances.fail());
            return Next::Rediscover;
        };
        match joined.error {
            None => self.view.update(|m| m.rebalances.answered(false, took)),
            // The protocol's first step: neither a join nor a failure.
            Some(ResponseError::MemberIdRequired) => {
                self.member_id = joined.member_id;
                return Next::Rejoin;
            }
            Some(e) => {
                self.view.update(|m| m.rebalances.fail());
                return self.on_group_error(e, "JoinGroup");
            }
        }
        self.member_id = joined.member_id;
        self.generation = joined.generation;
        let is_leader = joined.leader == self.member_id;

        let mut assignments = Vec::new();
        if is_leader {
            match self.assign(&joined.members) {
                Ok(list) => assignments = list,
                Err(e) => {
                    tracing::error!("as leader of group {}, cannot assign work: {e}; rejoining", self.config.group_id);
                    self.stop.sleep(RETRY_BACKOFF);
                    return Next::Rejoin;
                }
            }
        } else if self.was_leader {
            self.was_leader = false;
            // Writes sent here from now on go to the new leader, not to a writer just dropped.
            self.view.update(|m| m.is_leader = false);
            self.participant.follow();
        }

        let timeout = self.rebalance_call_timeout();
        let Some(connection) = self.coordinator.as_mut() else { return Next::Rediscover };
        let asked = std::time::Instant::now();
        let synced = connection.sync(&self.config.group_id, self.generation, &self.member_id, assignments, timeout);
        let took = asked.elapsed();
        let Some(synced) = self.answered(synced, "syncing with") else {
            self.view.update(|m| m.rebalances.fail());
            return Next::Rediscover;
        };
        if synced.error.is_none() {
            self.view.update(|m| m.rebalances.answered(true, took));
        }
        if let Some(e) = synced.error {
            self.view.update(|m| m.rebalances.fail());
            return self.on_group_error(e, "SyncGroup");
        }
        let assignment: Assignment = match serde_json::from_slice(&synced.assignment) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(
                    "the leader of group {} sent an assignment this worker cannot read ({e}); is a worker of \
                     another version in the group? Rejoining",
                    self.config.group_id
                );
                self.stop.sleep(RETRY_BACKOFF);
                return Next::Rejoin;
            }
        };
        self.apply(assignment, is_leader)
    }

    /// The leader's part: read every member's metadata and hand out work.
    fn assign(&mut self, members: &[(String, Vec<u8>)]) -> Result<Vec<(String, Vec<u8>)>, String> {
        let (config_offset, desired) = self.participant.lead()?;
        self.was_leader = true;
        let mut metadata = BTreeMap::new();
        for (member_id, bytes) in members {
            match serde_json::from_slice::<MemberMetadata>(bytes) {
                Ok(m) => {
                    metadata.insert(member_id.clone(), m);
                }
                Err(e) => {
                    return Err(format!(
                        "member {member_id} sent metadata that is not Wharf's ({e}); every worker of group {} must \
                         run a compatible version of Wharf",
                        self.config.group_id
                    ))
                }
            }
        }
        let behind: Vec<String> = metadata
            .values()
            .filter(|m| m.config_offset < config_offset)
            .map(|m| format!("{} (at {})", m.url, m.config_offset))
            .collect();
        if !behind.is_empty() {
            tracing::info!(
                "members behind the config topic's offset {config_offset} catch up before they start: {}",
                behind.join(", ")
            );
        }
        let round =
            self.assignor.assign(&self.member_id, self.generation, &metadata, &desired, config_offset, Instant::now());
        self.scheduled_rejoin = round.delay.map(|d| Instant::now() + d);
        if let Some(delay) = round.delay {
            tracing::info!(
                "work of departed workers waits {} ms (scheduled.rebalance.max.delay.ms) for them to come back",
                delay.as_millis()
            );
        }
        let mut list = Vec::new();
        for (member, assignment) in &round.assignments {
            tracing::info!(
                "generation {}: {} gets {}{}",
                self.generation,
                assignment.members[member].url,
                assignment.owned.describe(),
                if assignment.revoked.is_empty() {
                    String::new()
                } else {
                    format!(" and gives up {}", assignment.revoked.describe())
                }
            );
            let bytes =
                serde_json::to_vec(assignment).map_err(|e| format!("cannot write the assignment of {member} ({e})"))?;
            list.push((member.clone(), bytes));
        }
        Ok(list)
    }

    /// Takes on an assignment: stop what was revoked, catch up with the config topic, start
    /// what is new. Revocations end with a rejoin so that the work can move.
    fn apply(&mut self, assignment: Assignment, is_leader: bool) -> Next {
        // Should this worker lead the next round, it believes members' claims as this one backs them.
        self.assignor.learn(self.generation, &assignment.members);
        let revoked = self.owned.minus(&assignment.owned);
        if !revoked.is_empty() {
            tracing::info!("giving up {} for the group to move", revoked.describe());
            // Out of the view first, so that no reconcile starts it again meanwhile.
            self.view.update(|m| m.owned = m.owned.minus(&revoked));
            let (participant, giving_up) = (self.participant.clone(), revoked.clone());
            let kept_membership = self.while_heartbeating(move || participant.revoke(&giving_up));
            if !kept_membership {
                self.owned = self.owned.intersect(&assignment.owned);
                self.lose_everything("the group dropped this worker while it stopped the work it gave up");
                return Next::Rejoin;
            }
        }
        let kept = self.owned.intersect(&assignment.owned);
        let caught_up = self.participant.catch_up(assignment.config_offset, self.config.sync_timeout);
        // New work only once the config it runs with has been read.
        self.owned = if caught_up { assignment.owned.clone() } else { kept };
        self.view.update(|m| {
            m.generation = self.generation;
            m.member_id = self.member_id.clone();
            m.is_leader = is_leader;
            m.leader = Some(Leader { member_id: assignment.leader.clone(), url: assignment.leader_url.clone() });
            m.owned = self.owned.clone();
            m.members = assignment.members.clone();
            m.rebalances.complete();
        });
        if !caught_up {
            tracing::warn!(
                "could not read the config topic up to offset {} within worker.sync.timeout.ms={}; rejoining",
                assignment.config_offset,
                self.config.sync_timeout.as_millis()
            );
            return Next::Rejoin;
        }
        tracing::info!(
            "joined group {} in generation {} ({}); this worker runs {}",
            self.config.group_id,
            self.generation,
            if is_leader { "as leader".to_string() } else { format!("leader {}", assignment.leader_url) },
            assignment.owned.describe()
        );
        self.participant.assigned();
        if !revoked.is_empty() {
            return Next::Rejoin;
        }
        self.heartbeat()
    }

    /// Runs `work` (stopping tasks, which may take a while) on a thread of its own while this
    /// thread keeps heartbeating, so that the group does not drop this worker meanwhile.
    /// Returns false if the coordinator no longer knows this member.
    fn while_heartbeating(&mut self, work: impl FnOnce() + Send) -> bool {
        let mut known = true;
        std::thread::scope(|scope| {
            // Dropped when `work` ends, panicking or not: the end is a message, not a poll.
            let (ends, ended) = std::sync::mpsc::sync_channel::<()>(1);
            let running = scope.spawn(move || {
                let _ends = ends;
                work()
            });
            let interval = self.config.heartbeat_interval.max(Duration::from_millis(10));
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(interval) {
                if !known {
                    continue;
                }
                match self.send_heartbeat() {
                    // A rebalance in progress waits for this member's rejoin, which follows.
                    Ok(None) | Ok(Some(ResponseError::RebalanceInProgress)) => {}
                    Ok(Some(ResponseError::UnknownMemberId | ResponseError::IllegalGeneration)) => known = false,
                    Ok(Some(e)) => tracing::warn!("heartbeat while stopping work: {e}"),
                    Err(e) => tracing::warn!("heartbeat while stopping work failed: {e}"),
                }
            }
            let _ = running.join();
        });
        known
    }

    /// Sends one heartbeat; the coordinator's error, if any. Any answer counts as contact.
    fn send_heartbeat(&mut self) -> Result<Option<ResponseError>, WireError> {
        let timeout = self.heartbeat_timeout();
        let connection = self.coordinator.as_mut().ok_or_else(|| WireError::new("no coordinator connection"))?;
        let answer = connection.heartbeat(&self.config.group_id, self.generation, &self.member_id, timeout)?;
        self.heard();
        self.view.update(|m| m.rebalances.heartbeat());
        Ok(answer)
    }

    /// How long a JoinGroup or SyncGroup may wait: a rebalance may take its whole timeout.
    fn rebalance_call_timeout(&self) -> Duration {
        self.config.rebalance_timeout + Duration::from_secs(5)
    }

    /// The answer to a JoinGroup or SyncGroup. None when the coordinator could not be asked
    /// (it was logged, and the session checked): find the coordinator again.
    fn answered<T>(&mut self, answer: Result<T, WireError>, what: &str) -> Option<T> {
        match answer {
            Ok(response) => {
                self.heard();
                Some(response)
            }
            Err(e) => {
                tracing::warn!("{what} group {} failed: {e}", self.config.group_id);
                self.check_session();
                None
            }
        }
    }

    /// Notes that the coordinator answered.
    fn heard(&mut self) {
        self.last_contact = Instant::now();
    }

    /// Stops all work once the coordinator has not been heard from for a session: by then the
    /// group has dropped this worker and may give its work to others.
    fn check_session(&mut self) {
        if self.last_contact.elapsed() >= self.config.session_timeout && !self.owned.is_empty() {
            self.lose_everything(&format!(
                "the coordinator of group {} has not answered for session.timeout.ms={}",
                self.config.group_id,
                self.config.session_timeout.as_millis()
            ));
        }
    }

    /// Waits `pause`, or less when asked to stop, waking when the session runs out meanwhile
    /// so that the work stops on time.
    fn pause(&mut self, pause: Duration) {
        let until = Instant::now() + pause;
        loop {
            self.check_session();
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let session_left = self.config.session_timeout.saturating_sub(self.last_contact.elapsed());
            let step = match self.owned.is_empty() || session_left.is_zero() {
                true => left,
                false => left.min(session_left),
            };
            if self.stop.sleep(step) {
                return;
            }
        }
    }

    /// How long a heartbeat may wait for its answer: well within a session.
    fn heartbeat_timeout(&self) -> Duration {
        (self.config.session_timeout / 2).clamp(Duration::from_millis(500), REQUEST_TIMEOUT)
    }

    fn heartbeat(&mut self) -> Next {
        let mut last_ok = Instant::now();
        loop {
            self.check_session();
            let wait = match self.scheduled_rejoin {
                Some(at) => at.saturating_duration_since(Instant::now()).min(self.config.heartbeat_interval),
                None => self.config.heartbeat_interval,
            };
            let requested = self.view.wait_for_rejoin(wait);
            if self.stopping() {
                return Next::Stop;
            }
            if let Some(reason) = requested {
                tracing::info!("rejoining group {}: {reason}", self.config.group_id);
                return Next::Rejoin;
            }
            if self.scheduled_rejoin.is_some_and(|at| Instant::now() >= at) {
                self.scheduled_rejoin = None;
                tracing::info!("the wait for departed workers is over; rebalancing so their work moves");
                return Next::Rejoin;
            }
            if last_ok.elapsed() < self.config.heartbeat_interval.mul_f32(0.9) {
                continue;
            }
            match self.send_heartbeat() {
                Ok(answer) => match answer {
                    None => last_ok = Instant::now(),
                    Some(ResponseError::RebalanceInProgress) => {
                        tracing::info!("group {} is rebalancing; rejoining", self.config.group_id);
                        return Next::Rejoin;
                    }
                    Some(e) => return self.on_group_error(e, "Heartbeat"),
                },
                Err(e) => {
                    tracing::warn!("heartbeat to the coordinator of group {} failed: {e}", self.config.group_id);
                    self.check_session();
                    return Next::Rediscover;
                }
            }
        }
    }

    fn on_group_error(&mut self, error: ResponseError, call: &str) -> Next {
        let group = self.config.group_id.clone();
        match error {
            ResponseError::RebalanceInProgress => Next::Rejoin,
            ResponseError::UnknownMemberId | ResponseError::IllegalGeneration | ResponseError::FencedInstanceId => {
                self.lose_everything(&format!(
                    "the coordinator of group {group} no longer knows this member ({call}: {error})"
                ));
                self.member_id.clear();
                self.generation = -1;
                Next::Rejoin
            }
            ResponseError::NotCoordinator
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::CoordinatorLoadInProgress => {
                tracing::info!("the coordinator of group {group} moved ({call}: {error}); looking for it again");
                self.stop.sleep(RETRY_BACKOFF);
                Next::Rediscover
            }
            ResponseError::InconsistentGroupProtocol => {
                tracing::error!(
                    "group {group} is in use by clients that are not Wharf workers of this version ({call}: {error}). \
                     Give this cluster a group.id of its own; retrying in 5 s"
                );
                self.stop.sleep(Duration::from_secs(5));
                Next::Rejoin
            }
            ResponseError::InvalidSessionTimeout => {
                tracing::error!(
                    "the brokers refuse session.timeout.ms={} ({call}: {error}): it must lie within their \
                     group.min.session.timeout.ms and group.max.session.timeout.ms (6000 to 1800000 by \
                     default). Change session.timeout.ms; retrying in 5 s",
                    self.config.session_timeout.as_millis()
                );
                self.stop.sleep(Duration::from_secs(5));
                Next::Rejoin
            }
            ResponseError::GroupAuthorizationFailed => {
                tracing::error!(
                    "Kafka refuses this worker access to group {group} ({call}: {error}); grant it, retrying in 5 s"
                );
                self.stop.sleep(Duration::from_secs(5));
                Next::Rejoin
            }
            other => {
                tracing::warn!("{call} in group {group} failed: {other}; retrying");
                self.stop.sleep(RETRY_BACKOFF);
                Next::Rejoin
            }
        }
    }

    fn leave(&mut self) {
        if self.member_id.is_empty() {
            return;
        }
        let group = self.config.group_id.clone();
        let member_id = self.member_id.clone();
        let left = self.coordinator.as_mut().map(|c| c.leave(&group, &member_id));
        match left {
            Some(Ok(_)) => tracing::info!("left group {group}"),
            Some(Err(e)) => tracing::warn!("could not leave group {group} ({e}); it notices after session.timeout.ms"),
            None => {}
        }
        self.view.update(|m| {
            m.leader = None;
            m.is_leader = false;
        });
    }
}

#[cfg(test)]
mod tests;
