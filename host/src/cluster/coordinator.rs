//! The calls a member makes to its group's coordinator, as a trait: `Discovery` finds the
//! coordinator and connects to it, `Coordinator` joins, syncs, heartbeats and leaves. The wire
//! protocol over `client::Connection` implements them for the worker; the member's tests script
//! them.

use std::time::Duration;

use kafka_protocol::error::{ParseResponseErrorCode, ResponseError};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_protocol::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use kafka_protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_protocol::messages::LeaveGroupResponse;
use kafka_protocol::messages::{GroupId, HeartbeatRequest};
use kafka_protocol::protocol::StrBytes;

use super::assign::PROTOCOL;
use super::client::{Connection, WireError, REQUEST_TIMEOUT};
use super::security::WireSecurity;

/// What a member asks when it joins.
pub struct JoinRequest<'a> {
    pub group_id: &'a str,
    /// Empty on the first join; the coordinator then answers `MemberIdRequired` with one.
    pub member_id: &'a str,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    /// The member's metadata for the leader (`assign::MemberMetadata`, as JSON).
    pub metadata: Vec<u8>,
}

/// The coordinator's answer to a join.
pub struct Joined {
    pub error: Option<ResponseError>,
    pub member_id: String,
    pub generation: i32,
    pub leader: String,
    /// Every member's id and metadata; given to the leader only.
    pub members: Vec<(String, Vec<u8>)>,
}

/// The coordinator's answer to a sync: this member's assignment (as JSON), or an error.
pub struct Synced {
    pub error: Option<ResponseError>,
    pub assignment: Vec<u8>,
}

/// One connection to the coordinator of a group. A `WireError` means it could not be asked or
/// its answer made no sense: the member looks for the coordinator again (after a pause, when the
/// error is fatal).
pub trait Coordinator: Send {
    /// Where it is, as `host:port`.
    fn address(&self) -> &str;
    fn join(&mut self, request: &JoinRequest<'_>, timeout: Duration) -> Result<Joined, WireError>;
    /// Sends the leader's assignments (member id, assignment as JSON); others send none.
    fn sync(
        &mut self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        assignments: Vec<(String, Vec<u8>)>,
        timeout: Duration,
    ) -> Result<Synced, WireError>;
    /// The coordinator's error, if it answered with one.
    fn heartbeat(
        &mut self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        timeout: Duration,
    ) -> Result<Option<ResponseError>, WireError>;
    fn leave(&mut self, group_id: &str, member_id: &str) -> Result<(), WireError>;
}

/// Finds the coordinator of a group.
pub trait Discovery: Send {
    fn find(&mut self, group_id: &str) -> Result<Box<dyn Coordinator>, WireError>;
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn error_of(code: i16) -> Option<ResponseError> {
    code.err()
}

/// The coordinator over Kafka's wire protocol.
pub struct WireCoordinator(Connection);

impl WireCoordinator {
    pub fn open(address: &str, client_id: &str, security: &WireSecurity) -> Result<Self, WireError> {
        Connection::open(address, client_id, security).map(WireCoordinator)
    }
}

impl Coordinator for WireCoordinator {
    fn address(&self) -> &str {
        self.0.address()
    }

    fn join(&mut self, request: &JoinRequest<'_>, timeout: Duration) -> Result<Joined, WireError> {
        let wire = JoinGroupRequest::default()
            .with_group_id(GroupId(text(request.group_id)))
            .with_session_timeout_ms(millis(request.session_timeout))
            .with_rebalance_timeout_ms(millis(request.rebalance_timeout))
            .with_member_id(text(request.member_id))
            .with_protocol_type(text("connect"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(text(PROTOCOL))
                .with_metadata(bytes::Bytes::from(request.metadata.clone()))]);
        let joined = self.0.call(&wire, 7, timeout)?;
        Ok(Joined {
            error: error_of(joined.error_code),
            member_id: joined.member_id.to_string(),
            generation: joined.generation_id,
            leader: joined.leader.to_string(),
            members: joined.members.iter().map(|m| (m.member_id.to_string(), m.metadata.to_vec())).collect(),
        })
    }

    fn sync(
        &mut self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        assignments: Vec<(String, Vec<u8>)>,
        timeout: Duration,
    ) -> Result<Synced, WireError> {
        let assignments = assignments
            .into_iter()
            .map(|(member, bytes)| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(text(&member))
                    .with_assignment(bytes::Bytes::from(bytes))
            })
            .collect();
        let wire = SyncGroupRequest::default()
            .with_group_id(GroupId(text(group_id)))
            .with_generation_id(generation)
            .with_member_id(text(member_id))
            .with_protocol_type(Some(text("connect")))
            .with_protocol_name(Some(text(PROTOCOL)))
            .with_assignments(assignments);
        let synced = self.0.call(&wire, 5, timeout)?;
        Ok(Synced { error: error_of(synced.error_code), assignment: synced.assignment.to_vec() })
    }

    fn heartbeat(
        &mut self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        timeout: Duration,
    ) -> Result<Option<ResponseError>, WireError> {
        let request = HeartbeatRequest::default()
            .with_group_id(GroupId(text(group_id)))
            .with_generation_id(generation)
            .with_member_id(text(member_id));
        let response = self.0.call(&request, 4, timeout)?;
        Ok(error_of(response.error_code))
    }

    /// Leaves the group at once (versions 3 and later name the leaving members in a list).
    fn leave(&mut self, group_id: &str, member_id: &str) -> Result<(), WireError> {
        let version = self.0.version_of::<LeaveGroupRequest>(4)?;
        let request = LeaveGroupRequest::default().with_group_id(GroupId(text(group_id)));
        let request = if version >= 3 {
            request.with_members(vec![MemberIdentity::default().with_member_id(text(member_id))])
        } else {
            request.with_member_id(text(member_id))
        };
        let response = self.0.call(&request, version, REQUEST_TIMEOUT)?;
        match error_of(leave_answer(&response)) {
            None => Ok(()),
            Some(e) => Err(WireError::new(e.to_string())),
        }
    }
}

impl WireCoordinator {
    /// One LeaveGroup naming the member by both ids (version 3, Kafka 2.4, and later).
    fn remove_static_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance_id: &str,
    ) -> Result<Removal, WireError> {
        let version = self.0.version_of::<LeaveGroupRequest>(4)?;
        if version < 3 {
            return Err(WireError::fatal(format!(
                "the broker at {} cannot remove a static member from a group (LeaveGroup version 3, Kafka 2.4, \
                 is needed)",
                self.0.address()
            )));
        }
        let request = LeaveGroupRequest::default().with_group_id(GroupId(text(group_id))).with_members(vec![
            MemberIdentity::default().with_member_id(text(member_id)).with_group_instance_id(Some(text(instance_id))),
        ]);
        let response = self.0.call(&request, version, REQUEST_TIMEOUT)?;
        match error_of(leave_answer(&response)) {
            None => Ok(Removal::Removed),
            Some(ResponseError::UnknownMemberId) => Ok(Removal::NotThere),
            Some(ResponseError::FencedInstanceId) => Ok(Removal::Replaced),
            Some(
                e @ (ResponseError::NotCoordinator
                | ResponseError::CoordinatorNotAvailable
                | ResponseError::CoordinatorLoadInProgress),
            ) => Err(WireError::new(e.to_string())),
            Some(e) => Err(WireError::fatal(format!("the coordinator of group {group_id} refused: {e}"))),
        }
    }
}

/// A LeaveGroup's error code: the whole request's, or else that of the one member it named.
fn leave_answer(response: &LeaveGroupResponse) -> i16 {
    match response.error_code {
        0 => response.members.first().map_or(0, |m| m.error_code),
        whole => whole,
    }
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// Finds the coordinator by asking the bootstrap brokers in turn.
pub struct WireDiscovery {
    pub bootstrap: Vec<String>,
    pub client_id: String,
    pub security: WireSecurity,
}

impl Discovery for WireDiscovery {
    fn find(&mut self, group_id: &str) -> Result<Box<dyn Coordinator>, WireError> {
        self.connect(group_id).map(|c| Box::new(c) as Box<dyn Coordinator>)
    }
}

/// What became of a static member asked to leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// The group had no such member: its session ran out, or it never joined.
    NotThere,
    /// Another consumer holds the `group.instance.id` now, and keeps it.
    Replaced,
}

/// How many times a removal asks again after the coordinator moved or was loading.
const REMOVE_ATTEMPTS: usize = 3;

impl WireDiscovery {
    /// Removes a static member (KIP-345) from a group, as the admin API's member removal does.
    /// `member_id` is the id the coordinator gave that consumer: when a newer consumer has taken
    /// over the `group.instance.id`, the coordinator keeps it and answers `Replaced`.
    pub fn remove_static_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance_id: &str,
    ) -> Result<Removal, WireError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let answer =
                self.connect(group_id).and_then(|mut c| c.remove_static_member(group_id, member_id, instance_id));
            match answer {
                Err(e) if !e.fatal && attempt < REMOVE_ATTEMPTS => {
                    tracing::debug!("removing member {instance_id} from group {group_id}: {e}; asking again");
                    std::thread::sleep(Duration::from_millis(200 * attempt as u64));
                }
                other => return other,
            }
        }
    }

    fn connect(&mut self, group_id: &str) -> Result<WireCoordinator, WireError> {
        let mut problems = Vec::new();
        let mut fatal = false;
        for broker in &self.bootstrap {
            let found = Connection::open(broker, &self.client_id, &self.security).and_then(|mut c| {
                // Version 4 asks for many groups at once; earlier ones for one.
                let version = c.version_of::<FindCoordinatorRequest>(4)?;
                let request = if version >= 4 {
                    FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![text(group_id)])
                } else {
                    FindCoordinatorRequest::default().with_key(text(group_id)).with_key_type(0)
                };
                let response = c.call(&request, version, REQUEST_TIMEOUT)?;
                let (code, host, port, message) = match response.coordinators.first() {
                    Some(k) => {
                        (k.error_code, k.host.to_string(), k.port, k.error_message.as_ref().map(|m| m.to_string()))
                    }
                    None => (
                        response.error_code,
                        response.host.to_string(),
                        response.port,
                        response.error_message.as_ref().map(|m| m.to_string()),
                    ),
                };
                if let Some(e) = error_of(code) {
                    return Err(WireError::new(format!("{e} {}", message.unwrap_or_default())));
                }
                // An IPv6 address needs brackets before the port.
                Ok(if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") })
            });
            match found.and_then(|address| WireCoordinator::open(&address, &self.client_id, &self.security)) {
                Ok(coordinator) => return Ok(coordinator),
                Err(e) => {
                    // Credentials or certificates one broker refuses need fixing even when
                    // another broker is merely down.
                    fatal |= e.fatal;
                    problems.push(format!("{broker}: {e}"));
                }
            }
        }
        Err(WireError { message: problems.join("; "), fatal })
    }
}
