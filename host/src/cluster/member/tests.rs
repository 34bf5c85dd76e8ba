//! The member's decisions against a scripted coordinator and a participant that records what it
//! was told: no Kafka.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

use super::*;
use crate::cluster::assign::{Assignment, MemberView, TaskId, Work};
use crate::cluster::coordinator::{Coordinator, Discovery, JoinRequest, Joined, Synced};

/// How the coordinator answers a join.
enum JoinAnswer {
    /// `MemberIdRequired`, with the id to join with.
    MemberIdRequired(&'static str),
    /// The round is complete: the generation and its leader (this member's metadata is among
    /// the members the leader is given).
    Joined { generation: i32, leader: &'static str },
}

/// What the member asked, in order.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    Join { member_id: String, owned: Work },
    Sync { member_id: String, generation: i32 },
    Heartbeat,
    Leave { member_id: String },
}

#[derive(Default)]
struct Script {
    joins: VecDeque<JoinAnswer>,
    /// Answers for a follower's syncs; a leader's sync is answered with what it assigned itself.
    syncs: VecDeque<Assignment>,
    /// Heartbeat answers; when none is left, heartbeats succeed, unless `unreachable`.
    heartbeats: VecDeque<Option<ResponseError>>,
    /// The coordinator neither answers nor can be found.
    unreachable: bool,
    /// Finding the coordinator fails in a way retrying cannot mend (say, a refused password).
    refused: bool,
    /// How often the member looked for the coordinator.
    finds: usize,
    asked: Vec<Asked>,
    /// The id the member joined with last, for the members list.
    member_id: String,
}

type Shared = Arc<Mutex<Script>>;

struct Scripted(Shared);

impl Discovery for Scripted {
    fn find(&mut self, _group_id: &str) -> Result<Box<dyn Coordinator>, WireError> {
        let mut script = self.0.lock().unwrap();
        script.finds += 1;
        if script.refused {
            return Err(WireError::fatal("SASL PLAIN authentication to Kafka broker broker.test:9092 failed"));
        }
        if script.unreachable {
            return Err(WireError::new("no broker answers"));
        }
        Ok(Box::new(ScriptedCoordinator(self.0.clone())))
    }
}

struct ScriptedCoordinator(Shared);

fn nothing_scripted() -> WireError {
    // A real coordinator would hold the call; this one answers slowly that it has nothing.
    std::thread::sleep(Duration::from_millis(50));
    WireError::new("nothing more is scripted")
}

impl Coordinator for ScriptedCoordinator {
    fn address(&self) -> &str {
        "coordinator.test:9092"
    }

    fn join(&mut self, request: &JoinRequest<'_>, _timeout: Duration) -> Result<Joined, WireError> {
        let mut script = self.0.lock().unwrap();
        let metadata: MemberMetadata = serde_json::from_slice(&request.metadata).unwrap();
        script.asked.push(Asked::Join { member_id: request.member_id.to_string(), owned: metadata.owned });
        let Some(answer) = script.joins.pop_front() else {
            drop(script);
            return Err(nothing_scripted());
        };
        Ok(match answer {
            JoinAnswer::MemberIdRequired(id) => {
                script.member_id = id.to_string();
                Joined {
                    error: Some(ResponseError::MemberIdRequired),
                    member_id: id.to_string(),
                    generation: -1,
                    leader: String::new(),
                    members: Vec::new(),
                }
            }
            JoinAnswer::Joined { generation, leader } => {
                let member_id = script.member_id.clone();
                let members = match leader == member_id {
                    true => vec![(member_id.clone(), request.metadata.clone())],
                    false => Vec::new(),
                };
                Joined { error: None, member_id, generation, leader: leader.to_string(), members }
            }
        })
    }

    fn sync(
        &mut self,
        _group_id: &str,
        generation: i32,
        member_id: &str,
        assignments: Vec<(String, Vec<u8>)>,
        _timeout: Duration,
    ) -> Result<Synced, WireError> {
        let mut script = self.0.lock().unwrap();
        script.asked.push(Asked::Sync { member_id: member_id.to_string(), generation });
        let assignment = match assignments.into_iter().find(|(m, _)| m == member_id) {
            Some((_, bytes)) => bytes,
            None => match script.syncs.pop_front() {
                Some(a) => serde_json::to_vec(&a).unwrap(),
                None => {
                    drop(script);
                    return Err(nothing_scripted());
                }
            },
        };
        Ok(Synced { error: None, assignment })
    }

    fn heartbeat(
        &mut self,
        _group_id: &str,
        _generation: i32,
        _member_id: &str,
        _timeout: Duration,
    ) -> Result<Option<ResponseError>, WireError> {
        let mut script = self.0.lock().unwrap();
        script.asked.push(Asked::Heartbeat);
        if script.unreachable {
            return Err(WireError::new("the coordinator does not answer"));
        }
        Ok(script.heartbeats.pop_front().flatten())
    }

    fn leave(&mut self, _group_id: &str, member_id: &str) -> Result<(), WireError> {
        self.0.lock().unwrap().asked.push(Asked::Leave { member_id: member_id.to_string() });
        Ok(())
    }
}

/// What the member told the worker, in order.
#[derive(Debug, Clone, PartialEq)]
enum Told {
    Lead,
    Follow,
    Revoke(Work),
    CatchUp(i64),
    Assigned,
}

struct Recorder {
    told: Mutex<Vec<Told>>,
    /// What the config topic names, for a leader.
    desired: Work,
    /// Whether the config topic can be read as far as asked.
    catches_up: bool,
}

impl Participant for Recorder {
    fn config_offset(&self) -> i64 {
        7
    }
    fn lead(&self) -> Result<(i64, Work), String> {
        self.told.lock().unwrap().push(Told::Lead);
        Ok((7, self.desired.clone()))
    }
    fn follow(&self) {
        self.told.lock().unwrap().push(Told::Follow);
    }
    fn revoke(&self, work: &Work) {
        self.told.lock().unwrap().push(Told::Revoke(work.clone()));
    }
    fn catch_up(&self, offset: i64, _timeout: Duration) -> bool {
        self.told.lock().unwrap().push(Told::CatchUp(offset));
        self.catches_up
    }
    fn assigned(&self) {
        self.told.lock().unwrap().push(Told::Assigned);
    }
}

fn work(tasks: &[(&str, u32)]) -> Work {
    let mut work = Work::default();
    for (connector, task) in tasks {
        work.connectors.insert(connector.to_string());
        work.tasks.insert(TaskId { connector: connector.to_string(), task: *task });
    }
    work
}

/// An assignment from the leader `m0` to a follower.
fn from_leader(owned: Work, revoked: Work) -> Assignment {
    Assignment {
        leader: "m0".into(),
        leader_url: "http://leader:8083".into(),
        config_offset: 7,
        owned: owned.clone(),
        revoked,
        delay_ms: 0,
        members: [(
            "m1".to_string(),
            MemberView { url: "http://me:8083".into(), worker_id: "me:8083".into(), owned, giving_up: Work::default() },
        )]
        .into(),
    }
}

struct Group {
    script: Shared,
    recorder: Arc<Recorder>,
    view: Arc<ClusterView>,
    handle: Option<MemberHandle>,
}

impl Group {
    fn start(script: Script, desired: Work, catches_up: bool, session: Duration) -> Self {
        let script = Arc::new(Mutex::new(script));
        let recorder = Arc::new(Recorder { told: Mutex::default(), desired, catches_up });
        let view = Arc::new(ClusterView::default());
        let config = MemberConfig {
            group_id: "workers".into(),
            bootstrap: vec!["broker.test:9092".into()],
            client_id: "test".into(),
            url: "http://me:8083".into(),
            worker_id: "me:8083".into(),
            session_timeout: session,
            heartbeat_interval: Duration::from_millis(20),
            rebalance_timeout: Duration::from_secs(1),
            max_delay: Duration::ZERO,
            sync_timeout: Duration::from_secs(1),
            security: WireSecurity::default(),
        };
        let handle =
            Member::start_with(config, view.clone(), recorder.clone(), Box::new(Scripted(script.clone()))).unwrap();
        Group { script, recorder, view, handle: Some(handle) }
    }

    fn told(&self) -> Vec<Told> {
        self.recorder.told.lock().unwrap().clone()
    }

    fn asked(&self) -> Vec<Asked> {
        self.script.lock().unwrap().asked.clone()
    }

    fn eventually(&self, what: &str, mut check: impl FnMut(&Group) -> bool) {
        let started = Instant::now();
        while !check(self) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{what} did not happen; told {:?}; asked {:?}",
                self.told(),
                self.asked()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn leave(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.leave("workers", Duration::from_secs(5));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.leave();
    }
}

const SESSION: Duration = Duration::from_secs(5);

#[test]
fn a_lone_leader_assigns_itself_everything_once_it_read_the_config_and_leaves_on_stop() {
    let desired = work(&[("orders", 0), ("orders", 1)]);
    let script = Script {
        joins: [JoinAnswer::MemberIdRequired("m1"), JoinAnswer::Joined { generation: 1, leader: "m1" }].into(),
        ..Script::default()
    };
    let mut group = Group::start(script, desired.clone(), true, SESSION);
    group.eventually("the assignment", |g| g.told().contains(&Told::Assigned));
    assert_eq!(group.told(), [Told::Lead, Told::CatchUp(7), Told::Assigned]);
    let membership = group.view.get();
    assert_eq!((membership.generation, membership.is_leader, membership.owned), (1, true, desired));
    assert_eq!(membership.leader.map(|l| l.url), Some("http://me:8083".to_string()));
    // The first join has no id; the second uses the one the coordinator gave.
    let joins: Vec<String> = group
        .asked()
        .into_iter()
        .filter_map(|a| match a {
            Asked::Join { member_id, .. } => Some(member_id),
            _ => None,
        })
        .collect();
    assert_eq!(joins, ["", "m1"]);
    group.eventually("heartbeats", |g| g.asked().contains(&Asked::Heartbeat));
    group.leave();
    assert_eq!(group.asked().last(), Some(&Asked::Leave { member_id: "m1".into() }));
}

#[test]
fn a_member_the_coordinator_no_longer_knows_stops_all_its_work_and_joins_without_its_id() {
    let owned = work(&[("orders", 0)]);
    let script = Script {
        joins: [JoinAnswer::MemberIdRequired("m1"), JoinAnswer::Joined { generation: 1, leader: "m0" }].into(),
        syncs: [from_leader(owned.clone(), Work::default())].into(),
        heartbeats: [None, None, Some(ResponseError::UnknownMemberId)].into(),
        ..Script::default()
    };
    let group = Group::start(script, Work::default(), true, SESSION);
    group.eventually("the work stopped", |g| g.told().contains(&Told::Revoke(owned.clone())));
    assert_eq!(group.told(), [Told::CatchUp(7), Told::Assigned, Told::Revoke(owned)]);
    assert!(group.view.get().owned.is_empty());
    group.eventually("a join without the old id", |g| {
        g.asked().iter().filter(|a| matches!(a, Asked::Join { member_id, .. } if member_id.is_empty())).count() == 2
    });
}

#[test]
fn revoked_work_stops_before_the_member_rejoins_and_the_next_join_says_so() {
    let (both, first) = (work(&[("orders", 0), ("orders", 1)]), work(&[("orders", 0)]));
    let second = both.minus(&first);
    let script = Script {
        joins: [
            JoinAnswer::MemberIdRequired("m1"),
            JoinAnswer::Joined { generation: 1, leader: "m0" },
            JoinAnswer::Joined { generation: 2, leader: "m0" },
        ]
        .into(),
        syncs: [from_leader(both.clone(), Work::default()), from_leader(first.clone(), second.clone())].into(),
        heartbeats: [Some(ResponseError::RebalanceInProgress)].into(),
        ..Script::default()
    };
    let group = Group::start(script, Work::default(), true, SESSION);
    group.eventually("the third join", |g| g.asked().iter().filter(|a| matches!(a, Asked::Join { .. })).count() >= 4);
    let told = group.told();
    assert_eq!(told[..4], [Told::CatchUp(7), Told::Assigned, Told::Revoke(second), Told::CatchUp(7)]);
    let joined_owning: Vec<Work> = group
        .asked()
        .into_iter()
        .filter_map(|a| match a {
            Asked::Join { owned, .. } => Some(owned),
            _ => None,
        })
        .collect();
    // Before the first assignment nothing; then both tasks; after the revocation only the first.
    assert_eq!(joined_owning[..4], [Work::default(), Work::default(), both, first.clone()]);
    assert_eq!(group.view.get().owned, first);
}

#[test]
fn new_work_waits_until_the_config_topic_was_read_as_far_as_the_leader_read_it() {
    let owned = work(&[("orders", 0)]);
    let script = Script {
        joins: [JoinAnswer::MemberIdRequired("m1"), JoinAnswer::Joined { generation: 1, leader: "m0" }].into(),
        syncs: [from_leader(owned, Work::default())].into(),
        ..Script::default()
    };
    let group = Group::start(script, Work::default(), false, SESSION);
    group.eventually("a rejoin after the failed catch-up", |g| {
        g.asked().iter().filter(|a| matches!(a, Asked::Join { .. })).count() >= 3
    });
    assert_eq!(group.told(), [Told::CatchUp(7)]);
    assert!(group.view.get().owned.is_empty());
}

#[test]
fn a_coordinator_silent_for_a_session_costs_the_member_its_work() {
    let owned = work(&[("orders", 0)]);
    let script = Script {
        joins: [JoinAnswer::MemberIdRequired("m1"), JoinAnswer::Joined { generation: 1, leader: "m0" }].into(),
        syncs: [from_leader(owned.clone(), Work::default())].into(),
        ..Script::default()
    };
    let group = Group::start(script, Work::default(), true, Duration::from_millis(300));
    group.eventually("the assignment", |g| g.told().contains(&Told::Assigned));
    let silent_since = Instant::now();
    group.script.lock().unwrap().unreachable = true;
    group.eventually("the work stopped", |g| g.told().contains(&Told::Revoke(owned.clone())));
    assert!(silent_since.elapsed() >= Duration::from_millis(250), "stopped before the session ran out");
    assert!(group.view.get().owned.is_empty());
}

#[test]
fn after_a_fatal_error_the_member_waits_before_it_tries_again_yet_leaves_at_once() {
    let mut group = Group::start(Script { refused: true, ..Script::default() }, Work::default(), true, SESSION);
    group.eventually("the first try", |g| g.script.lock().unwrap().finds >= 1);
    // Nothing to wait for: the point is that nothing happens for a while (three retries' worth
    // of RETRY_BACKOFF).
    std::thread::sleep(RETRY_BACKOFF * 3);
    assert_eq!(group.script.lock().unwrap().finds, 1);
    let leaving = Instant::now();
    group.leave();
    assert!(leaving.elapsed() < Duration::from_secs(1), "leaving waited out the pause");
}
