//! Checks a response frame against the layout of its API and version before kafka-protocol
//! decodes it. Its decoder (0.18) reserves room for an array from the count on the wire before it
//! reads an element, so a count of 2^31-1 in a frame of a few bytes aborts the worker on an
//! allocation failure.
//!
//! Each walker here follows the crate's `Decodable` impl of its message field by field and
//! version by version (`kafka-protocol-0.18.0/src/messages/*_response.rs`): the same fields in
//! the same order and encodings, the tagged fields the decoder reads as fields included. Every
//! count and length is weighed against the bytes left before anything is skipped, and every
//! element is walked, without allocating. So once a frame passes, each array the decoder meets
//! holds as many elements as its count says, inside the frame (at most `client::MAX_RESPONSE` bytes), and
//! what the decoder reserves is what the response really holds. An API or version not listed here
//! is refused rather than decoded unchecked.

use kafka_protocol::messages::ApiKey;

/// A response refused before decoding.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{api} v{version} response: {problem}")]
pub(super) struct Refusal {
    /// The API's name, or its key when kafka-protocol knows no such API.
    pub api: String,
    pub version: i16,
    pub problem: Problem,
}

/// What is wrong with a response. `field` is the field's path in the message, as
/// kafka-protocol's structs name it (`members[].metadata`).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum Problem {
    /// More array elements or tagged fields than the frame could hold at one byte each.
    #[error("{field} counts {count} elements but only {left} bytes are left in the frame")]
    TooMany { field: &'static str, count: u64, left: usize },
    /// A string or bytes field longer than the rest of the frame.
    #[error("{field} is {length} bytes long but only {left} bytes are left in the frame")]
    TooLong { field: &'static str, length: u64, left: usize },
    #[error("the frame ends inside {field} ({needs} bytes needed, {left} left)")]
    Truncated { field: &'static str, needs: usize, left: usize },
    /// A length below -1, the only negative one that means something (null).
    #[error("{field} has the negative length {length}")]
    Negative { field: &'static str, length: i32 },
    #[error("Wharf does not know the layout of this response, so cannot check it before decoding")]
    UnknownLayout,
}

type Step = Result<(), Problem>;

/// Walks `frame` (response header and body, after the size) as the response to API `api_key` at
/// `version`, with a header at `header_version`. Returns the number of bytes after the body,
/// which the decoder leaves unread too.
pub(super) fn check(api_key: i16, version: i16, header_version: i16, frame: &[u8]) -> Result<usize, Refusal> {
    let mut walk = Walk { rest: frame };
    match header(&mut walk, header_version).and_then(|()| body(&mut walk, api_key, version)) {
        Ok(()) => Ok(walk.rest.len()),
        Err(problem) => {
            let api = ApiKey::try_from(api_key).map_or_else(|_| format!("API {api_key}"), |k| format!("{k:?}"));
            Err(Refusal { api, version, problem })
        }
    }
}

/// The version ranges are those of kafka-protocol 0.18's decoders, which refuse any other.
fn body(walk: &mut Walk<'_>, api_key: i16, version: i16) -> Step {
    let Ok(api) = ApiKey::try_from(api_key) else { return Err(Problem::UnknownLayout) };
    match (api, version) {
        (ApiKey::ApiVersions, 0..=4) => api_versions(walk, version),
        (ApiKey::SaslHandshake, 0..=1) => sasl_handshake(walk),
        (ApiKey::SaslAuthenticate, 0..=2) => sasl_authenticate(walk, version),
        (ApiKey::FindCoordinator, 0..=6) => find_coordinator(walk, version),
        (ApiKey::JoinGroup, 0..=9) => join_group(walk, version),
        (ApiKey::SyncGroup, 0..=5) => sync_group(walk, version),
        (ApiKey::Heartbeat, 0..=4) => heartbeat(walk, version),
        (ApiKey::LeaveGroup, 0..=5) => leave_group(walk, version),
        _ => Err(Problem::UnknownLayout),
    }
}

fn header(walk: &mut Walk<'_>, version: i16) -> Step {
    match version {
        0 => walk.fixed(4, "header.correlation_id"),
        1 => {
            walk.fixed(4, "header.correlation_id")?;
            walk.tagged_fields("header.tagged_fields")
        }
        _ => Err(Problem::UnknownLayout),
    }
}

fn api_versions(walk: &mut Walk<'_>, version: i16) -> Step {
    let flexible = version >= 3;
    walk.fixed(2, "error_code")?;
    walk.array(flexible, "api_keys", |walk| {
        walk.fixed(2, "api_keys[].api_key")?;
        walk.fixed(2, "api_keys[].min_version")?;
        walk.fixed(2, "api_keys[].max_version")?;
        if flexible {
            walk.tagged_fields("api_keys[].tagged_fields")?;
        }
        Ok(())
    })?;
    if version >= 1 {
        walk.fixed(4, "throttle_time_ms")?;
    }
    if flexible {
        // The decoder reads these four tags as fields, whatever size the tag says.
        walk.tagged_fields_with("tagged_fields", |walk, tag| {
            match tag {
                0 => walk.array(true, "supported_features", |walk| {
                    walk.string(true, "supported_features[].name")?;
                    walk.fixed(2, "supported_features[].min_version")?;
                    walk.fixed(2, "supported_features[].max_version")?;
                    walk.tagged_fields("supported_features[].tagged_fields")
                })?,
                1 => walk.fixed(8, "finalized_features_epoch")?,
                2 => walk.array(true, "finalized_features", |walk| {
                    walk.string(true, "finalized_features[].name")?;
                    walk.fixed(2, "finalized_features[].max_version_level")?;
                    walk.fixed(2, "finalized_features[].min_version_level")?;
                    walk.tagged_fields("finalized_features[].tagged_fields")
                })?,
                3 => walk.fixed(1, "zk_migration_ready")?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
    }
    Ok(())
}

fn sasl_handshake(walk: &mut Walk<'_>) -> Step {
    walk.fixed(2, "error_code")?;
    walk.array(false, "mechanisms", |walk| walk.string(false, "mechanisms[]"))
}

fn sasl_authenticate(walk: &mut Walk<'_>, version: i16) -> Step {
    let flexible = version >= 2;
    walk.fixed(2, "error_code")?;
    walk.string(flexible, "error_message")?;
    walk.bytes(flexible, "auth_bytes")?;
    if version >= 1 {
        walk.fixed(8, "session_lifetime_ms")?;
    }
    if flexible {
        walk.tagged_fields("tagged_fields")?;
    }
    Ok(())
}

fn find_coordinator(walk: &mut Walk<'_>, version: i16) -> Step {
    let flexible = version >= 3;
    if version >= 1 {
        walk.fixed(4, "throttle_time_ms")?;
    }
    if version <= 3 {
        walk.fixed(2, "error_code")?;
    }
    if (1..=3).contains(&version) {
        walk.string(flexible, "error_message")?;
    }
    if version <= 3 {
        walk.fixed(4, "node_id")?;
        walk.string(flexible, "host")?;
        walk.fixed(4, "port")?;
    }
    if version >= 4 {
        walk.array(true, "coordinators", |walk| {
            walk.string(true, "coordinators[].key")?;
            walk.fixed(4, "coordinators[].node_id")?;
            walk.string(true, "coordinators[].host")?;
            walk.fixed(4, "coordinators[].port")?;
            walk.fixed(2, "coordinators[].error_code")?;
            walk.string(true, "coordinators[].error_message")?;
            walk.tagged_fields("coordinators[].tagged_fields")
        })?;
    }
    if flexible {
        walk.tagged_fields("tagged_fields")?;
    }
    Ok(())
}

fn join_group(walk: &mut Walk<'_>, version: i16) -> Step {
    let flexible = version >= 6;
    if version >= 2 {
        walk.fixed(4, "throttle_time_ms")?;
    }
    walk.fixed(2, "error_code")?;
    walk.fixed(4, "generation_id")?;
    if version >= 7 {
        walk.string(true, "protocol_type")?;
    }
    walk.string(flexible, "protocol_name")?;
    walk.string(flexible, "leader")?;
    if version >= 9 {
        walk.fixed(1, "skip_assignment")?;
    }
    walk.string(flexible, "member_id")?;
    walk.array(flexible, "members", |walk| {
        walk.string(flexible, "members[].member_id")?;
        if version >= 5 {
            walk.string(flexible, "members[].group_instance_id")?;
        }
        walk.bytes(flexible, "members[].metadata")?;
        if flexible {
            walk.tagged_fields("members[].tagged_fields")?;
        }
        Ok(())
    })?;
    if flexible {
        walk.tagged_fields("tagged_fields")?;
    }
    Ok(())
}

fn sync_group(walk: &mut Walk<'_>, version: i16) -> Step {
    let flexible = version >= 4;
    if version >= 1 {
        walk.fixed(4, "throttle_time_ms")?;
    }
    walk.fixed(2, "error_code")?;
    if version >= 5 {
        walk.string(true, "protocol_type")?;
        walk.string(true, "protocol_name")?;
    }
    walk.bytes(flexible, "assignment")?;
    if flexible {
        walk.tagged_fields("tagged_fields")?;
    }
    Ok(())
}

fn heartbeat(walk: &mut Walk<'_>, version: i16) -> Step {
    if version >= 1 {
        walk.fixed(4, "throttle_time_ms")?;
    }
    walk.fixed(2, "error_code")?;
    if version >= 4 {
        walk.tagged_fields("tagged_fields")?;
    }
    Ok(())
}

fn leave_group(walk: &mut Walk<'_>, version: i16) -> Step {
    let flexible = version >= 4;
    if version >= 1 {
        walk.fixed(4, "throttle_time_ms")?;
    }
    walk.fixed(2, "error_code")?;
    if version >= 3 {
        walk.array(flexible, "members", |walk| {
            walk.string(flexible, "members[].member_id")?;
            walk.string(flexible, "members[].group_instance_id")?;
            walk.fixed(2, "members[].error_code")?;
            if flexible {
                walk.tagged_fields("members[].tagged_fields")?;
            }
            Ok(())
        })?;
    }
    if flexible {
        walk.tagged_fields("tagged_fields")?;
    }
    Ok(())
}

/// The rest of a frame, read with the encodings of `kafka_protocol::protocol::types`.
struct Walk<'a> {
    rest: &'a [u8],
}

impl<'a> Walk<'a> {
    fn take(&mut self, needs: usize, field: &'static str) -> Result<&'a [u8], Problem> {
        let Some((taken, rest)) = self.rest.split_at_checked(needs) else {
            return Err(Problem::Truncated { field, needs, left: self.rest.len() });
        };
        self.rest = rest;
        Ok(taken)
    }

    fn fixed(&mut self, size: usize, field: &'static str) -> Step {
        self.take(size, field).map(drop)
    }

    fn int16(&mut self, field: &'static str) -> Result<i16, Problem> {
        let b = self.take(2, field)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn int32(&mut self, field: &'static str) -> Result<i32, Problem> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// As `types::UnsignedVarInt` reads it: at most five bytes, whatever the last one's
    /// continuation bit, and bits past the 32nd dropped.
    fn unsigned_varint(&mut self, field: &'static str) -> Result<u32, Problem> {
        let mut value = 0u32;
        for i in 0..5 {
            let b = u32::from(self.take(1, field)?[0]);
            value |= (b & 0x7f) << (i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// Skips the `length` bytes of a string or bytes field.
    fn skip(&mut self, field: &'static str, length: u64) -> Step {
        let left = self.rest.len();
        if length > left as u64 {
            return Err(Problem::TooLong { field, length, left });
        }
        self.rest = &self.rest[length as usize..];
        Ok(())
    }

    /// A string, nullable or not (the decoder tells them apart, after this check).
    fn string(&mut self, flexible: bool, field: &'static str) -> Step {
        if flexible {
            return self.compact_length(field);
        }
        match self.int16(field)? {
            -1 => Ok(()),
            length if length >= 0 => self.skip(field, length as u64),
            length => Err(Problem::Negative { field, length: length.into() }),
        }
    }

    fn bytes(&mut self, flexible: bool, field: &'static str) -> Step {
        if flexible {
            return self.compact_length(field);
        }
        match self.int32(field)? {
            -1 => Ok(()),
            length if length >= 0 => self.skip(field, length as u64),
            length => Err(Problem::Negative { field, length }),
        }
    }

    /// A compact string or compact bytes: length + 1 as an unsigned varint, 0 for null.
    fn compact_length(&mut self, field: &'static str) -> Step {
        match self.unsigned_varint(field)? {
            0 => Ok(()),
            n => self.skip(field, u64::from(n - 1)),
        }
    }

    /// An array (a compact one in flexible versions), each element walked by `element`.
    fn array(&mut self, flexible: bool, field: &'static str, mut element: impl FnMut(&mut Self) -> Step) -> Step {
        let count = if flexible {
            match self.unsigned_varint(field)? {
                0 => return Ok(()),
                n => u64::from(n - 1),
            }
        } else {
            match self.int32(field)? {
                -1 => return Ok(()),
                n if n >= 0 => n as u64,
                length => return Err(Problem::Negative { field, length }),
            }
        };
        self.at_most_left(field, count)?;
        for _ in 0..count {
            element(self)?;
        }
        Ok(())
    }

    /// Every array element of the layouts here takes at least one byte, and every tagged field
    /// two (its tag and size), so a count beyond the bytes left cannot be true.
    fn at_most_left(&self, field: &'static str, count: u64) -> Step {
        let left = self.rest.len();
        if count > left as u64 {
            return Err(Problem::TooMany { field, count, left });
        }
        Ok(())
    }

    /// Tagged fields the decoder keeps as bytes without reading them.
    fn tagged_fields(&mut self, field: &'static str) -> Step {
        self.tagged_fields_with(field, |_, _| Ok(false))
    }

    /// Tagged fields, of which `known` walks the ones the decoder reads as fields (returning
    /// true), after their tag and size.
    fn tagged_fields_with(
        &mut self,
        field: &'static str,
        mut known: impl FnMut(&mut Self, u32) -> Result<bool, Problem>,
    ) -> Step {
        let count = self.unsigned_varint(field)?;
        self.at_most_left(field, count.into())?;
        for _ in 0..count {
            let tag = self.unsigned_varint(field)?;
            let size = self.unsigned_varint(field)?;
            if !known(self, tag)? {
                self.skip(field, size.into())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Responses made by kafka-protocol's own encoder, at every version its decoder reads: the
    //! walk ends where the decoder ends. The same frames with one count or length made huge are
    //! refused, naming the field.

    use std::collections::BTreeMap;

    use bytes::{Buf, Bytes, BytesMut};
    use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
    use kafka_protocol::messages::leave_group_response::MemberResponse;
    use kafka_protocol::messages::{
        ApiVersionsResponse, BrokerId, FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse,
        LeaveGroupResponse, ResponseHeader, SaslAuthenticateResponse, SaslHandshakeResponse, SyncGroupResponse,
    };
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, StrBytes};

    use super::*;

    /// Bytes after the body, which both the walk and the decoder must leave.
    const TRAILER: &[u8] = &[0xab, 0xcd, 0xef];

    fn text(s: &str) -> StrBytes {
        StrBytes::from_string(s.to_string())
    }

    /// An unknown tagged field, which every flexible struct may carry.
    fn unknown() -> BTreeMap<i32, Bytes> {
        BTreeMap::from([(17, Bytes::from_static(b"later"))])
    }

    /// Header and body as a broker sends them, after the size.
    fn frame<R: Encodable + HeaderVersion>(response: &R, version: i16) -> Vec<u8> {
        let mut buf = BytesMut::new();
        let header = ResponseHeader::default().with_correlation_id(42).with_unknown_tagged_fields(unknown());
        header.encode(&mut buf, R::header_version(version)).unwrap();
        response.encode(&mut buf, version).unwrap();
        buf.to_vec()
    }

    /// The frame passes the check, decodes, and the walk ends where the decoder does.
    fn passes<R: Encodable + Decodable + HeaderVersion>(api: ApiKey, response: &R, version: i16) {
        let mut bytes = frame(response, version);
        bytes.extend_from_slice(TRAILER);
        let left = check(api as i16, version, R::header_version(version), &bytes)
            .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
        let mut buf = Bytes::from(bytes);
        ResponseHeader::decode(&mut buf, R::header_version(version)).unwrap();
        R::decode(&mut buf, version).unwrap_or_else(|e| panic!("{api:?} v{version} does not decode: {e}"));
        assert_eq!((left, buf.remaining()), (TRAILER.len(), TRAILER.len()), "{api:?} v{version}");
    }

    /// `with`, whose count (or length) differs from `without`'s only in the elements (or bytes)
    /// that follow it, made to say `huge`; and the bytes left after it.
    fn patched(with: &[u8], without: &[u8], compact: bool, huge: u32) -> (Vec<u8>, usize) {
        assert!(with.len() > without.len());
        let first_difference = with.iter().zip(without).position(|(a, b)| a != b).unwrap();
        // Small counts differ from 0 in the last byte of a 4-byte count, in the only byte of a
        // varint one.
        let (at, width) = if compact { (first_difference, 1) } else { (first_difference - 3, 4) };
        assert!(with[at..at + width].iter().all(|&b| b < 0x80), "a small count at {at}");
        let mut count = Vec::new();
        if compact {
            let mut value = huge;
            while value >= 0x80 {
                count.push(value as u8 | 0x80);
                value >>= 7;
            }
            count.push(value as u8);
        } else {
            count.extend_from_slice(&huge.to_be_bytes());
        }
        let mut bytes = with[..at].to_vec();
        bytes.extend_from_slice(&count);
        bytes.extend_from_slice(&with[at + width..]);
        let left = with.len() - at - width;
        (bytes, left)
    }

    /// `with` and `without` differ in the elements of one array (or the bytes of one field): with
    /// its count (or length) made huge, the frame is refused for that field.
    fn refuses<R: Encodable + HeaderVersion>(
        api: ApiKey,
        version: i16,
        [with, without]: [&R; 2],
        compact: bool,
        expected: impl Fn(u64, usize) -> Problem,
    ) {
        let huge = if compact { u32::MAX } else { i32::MAX as u32 };
        let (bytes, left) = patched(&frame(with, version), &frame(without, version), compact, huge);
        let count = if compact { u64::from(huge - 1) } else { u64::from(huge) };
        let refusal = check(api as i16, version, R::header_version(version), &bytes).unwrap_err();
        let api = format!("{api:?}");
        assert_eq!(refusal, Refusal { api, version, problem: expected(count, left) });
    }

    fn too_many(field: &'static str) -> impl Fn(u64, usize) -> Problem {
        move |count, left| Problem::TooMany { field, count, left }
    }

    fn too_long(field: &'static str) -> impl Fn(u64, usize) -> Problem {
        move |length, left| Problem::TooLong { field, length, left }
    }

    fn versions<R: Message>() -> std::ops::RangeInclusive<i16> {
        R::VERSIONS.min..=R::VERSIONS.max
    }

    fn api_versions(version: i16, keys: usize, features: usize) -> ApiVersionsResponse {
        let flexible = version >= 3;
        let key = |k: usize| {
            let key = ApiVersion::default().with_api_key(k as i16).with_min_version(0).with_max_version(9);
            if flexible {
                key.with_unknown_tagged_fields(unknown())
            } else {
                key
            }
        };
        let mut response = ApiVersionsResponse::default().with_api_keys((0..keys).map(key).collect());
        if flexible {
            let supported = |i| {
                SupportedFeatureKey::default()
                    .with_name(text(&format!("feature.{i}")))
                    .with_max_version(3)
                    .with_unknown_tagged_fields(unknown())
            };
            let finalized = |i| {
                FinalizedFeatureKey::default()
                    .with_name(text(&format!("feature.{i}")))
                    .with_max_version_level(2)
                    .with_unknown_tagged_fields(unknown())
            };
            response = response
                .with_supported_features((0..features).map(supported).collect())
                .with_finalized_features_epoch(5)
                .with_finalized_features((0..2).map(finalized).collect())
                .with_zk_migration_ready(true)
                .with_unknown_tagged_fields(unknown());
        }
        response
    }

    fn sasl_handshake(mechanisms: &[&str]) -> SaslHandshakeResponse {
        SaslHandshakeResponse::default().with_mechanisms(mechanisms.iter().map(|m| text(m)).collect())
    }

    fn sasl_authenticate(version: i16, token: &'static [u8]) -> SaslAuthenticateResponse {
        let response = SaslAuthenticateResponse::default()
            .with_error_message(Some(text("fine")))
            .with_auth_bytes(Bytes::from_static(token));
        match version {
            0 => response,
            1 => response.with_session_lifetime_ms(3_600_000),
            _ => response.with_session_lifetime_ms(3_600_000).with_unknown_tagged_fields(unknown()),
        }
    }

    fn find_coordinator(version: i16, coordinators: usize, host: &str) -> FindCoordinatorResponse {
        let response = FindCoordinatorResponse::default().with_throttle_time_ms(1);
        let response = match version {
            0..=3 => response.with_node_id(BrokerId(3)).with_host(text(host)).with_port(9092),
            _ => response.with_coordinators(
                (0..coordinators)
                    .map(|i| {
                        Coordinator::default()
                            .with_key(text(&format!("group-{i}")))
                            .with_node_id(BrokerId(3))
                            .with_host(text(host))
                            .with_port(9092)
                            .with_error_message(Some(text("none")))
                            .with_unknown_tagged_fields(unknown())
                    })
                    .collect(),
            ),
        };
        match version {
            0 => response.with_error_message(None),
            1 | 2 => response.with_error_message(Some(text("none"))),
            _ => response.with_unknown_tagged_fields(unknown()),
        }
    }

    fn join_group(version: i16, members: usize, metadata: &'static [u8]) -> JoinGroupResponse {
        let member = |i: usize| {
            let member = JoinGroupResponseMember::default()
                .with_member_id(text(&format!("worker-{i}")))
                .with_metadata(Bytes::from_static(metadata));
            let member = if version >= 5 { member.with_group_instance_id(Some(text("static"))) } else { member };
            if version >= 6 {
                member.with_unknown_tagged_fields(unknown())
            } else {
                member
            }
        };
        let response = JoinGroupResponse::default()
            .with_generation_id(8)
            .with_protocol_name(Some(text("sessioned")))
            .with_leader(text("worker-0"))
            .with_member_id(text("worker-0"))
            .with_members((0..members).map(member).collect());
        let response = if version >= 7 { response.with_protocol_type(Some(text("connect"))) } else { response };
        let response = if version >= 9 { response.with_skip_assignment(true) } else { response };
        if version >= 6 {
            response.with_unknown_tagged_fields(unknown())
        } else {
            response
        }
    }

    fn sync_group(version: i16, assignment: &'static [u8]) -> SyncGroupResponse {
        let response = SyncGroupResponse::default().with_assignment(Bytes::from_static(assignment));
        let response = if version >= 5 {
            response.with_protocol_type(Some(text("connect"))).with_protocol_name(Some(text("sessioned")))
        } else {
            response
        };
        if version >= 4 {
            response.with_unknown_tagged_fields(unknown())
        } else {
            response
        }
    }

    fn heartbeat(version: i16, tagged: BTreeMap<i32, Bytes>) -> HeartbeatResponse {
        let response = HeartbeatResponse::default().with_error_code(27);
        if version >= 4 {
            response.with_unknown_tagged_fields(tagged)
        } else {
            response
        }
    }

    fn leave_group(version: i16, members: usize) -> LeaveGroupResponse {
        let member = |i: usize| {
            let member = MemberResponse::default()
                .with_member_id(text(&format!("worker-{i}")))
                .with_group_instance_id(Some(text("static")));
            if version >= 4 {
                member.with_unknown_tagged_fields(unknown())
            } else {
                member
            }
        };
        let response = LeaveGroupResponse::default().with_error_code(0);
        let response = if version >= 3 { response.with_members((0..members).map(member).collect()) } else { response };
        if version >= 4 {
            response.with_unknown_tagged_fields(unknown())
        } else {
            response
        }
    }

    #[test]
    fn every_version_kafka_protocol_decodes_passes_and_is_walked_to_where_the_decoder_stops() {
        for v in versions::<ApiVersionsResponse>() {
            passes(ApiKey::ApiVersions, &api_versions(v, 3, 2), v);
        }
        for v in versions::<SaslHandshakeResponse>() {
            passes(ApiKey::SaslHandshake, &sasl_handshake(&["PLAIN", "SCRAM-SHA-512"]), v);
        }
        for v in versions::<SaslAuthenticateResponse>() {
            passes(ApiKey::SaslAuthenticate, &sasl_authenticate(v, b"r=nonce,s=salt,i=4096"), v);
        }
        for v in versions::<FindCoordinatorResponse>() {
            passes(ApiKey::FindCoordinator, &find_coordinator(v, 2, "kafka-1"), v);
        }
        for v in versions::<JoinGroupResponse>() {
            passes(ApiKey::JoinGroup, &join_group(v, 3, br#"{"url":"http://w:8083"}"#), v);
        }
        for v in versions::<SyncGroupResponse>() {
            passes(ApiKey::SyncGroup, &sync_group(v, br#"{"connectors":["c"]}"#), v);
        }
        for v in versions::<HeartbeatResponse>() {
            passes(ApiKey::Heartbeat, &heartbeat(v, unknown()), v);
        }
        for v in versions::<LeaveGroupResponse>() {
            passes(ApiKey::LeaveGroup, &leave_group(v, 2), v);
        }
    }

    #[test]
    fn api_versions_with_a_huge_count_is_refused() {
        // Wharf asks for version 2; 3 and later carry arrays in tagged fields too.
        let keys = [&api_versions(2, 3, 0), &api_versions(2, 0, 0)];
        refuses(ApiKey::ApiVersions, 2, keys, false, too_many("api_keys"));
        let keys = [&api_versions(3, 3, 0), &api_versions(3, 0, 0)];
        refuses(ApiKey::ApiVersions, 3, keys, true, too_many("api_keys"));
        // One feature more: the size of their tagged field differs first, then the count after it.
        let (with, without) = (frame(&api_versions(4, 1, 2), 4), frame(&api_versions(4, 1, 1), 4));
        let at = with.iter().zip(&without).position(|(a, b)| a != b).unwrap() + 1;
        let mut bytes = with.clone();
        bytes.splice(at..at + 1, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        let refusal = check(ApiKey::ApiVersions as i16, 4, 0, &bytes).unwrap_err();
        let left = with.len() - at - 1;
        let expected = Problem::TooMany { field: "supported_features", count: u64::from(u32::MAX - 1), left };
        assert_eq!(refusal.problem, expected);
    }

    #[test]
    fn the_refusal_names_the_api_the_field_the_count_and_the_bytes_left() {
        let (bytes, left) =
            patched(&frame(&join_group(7, 2, b"{}"), 7), &frame(&join_group(7, 0, b"{}"), 7), true, 0x8000_0000);
        let refusal = check(ApiKey::JoinGroup as i16, 7, 1, &bytes).unwrap_err();
        let expected = "JoinGroup v7 response: members counts 2147483647 elements but only {left} bytes are left in \
                        the frame";
        assert_eq!(refusal.to_string(), expected.replace("{left}", &left.to_string()));
    }

    #[test]
    fn sasl_responses_with_a_huge_count_or_length_are_refused() {
        let mechanisms = [&sasl_handshake(&["PLAIN"]), &sasl_handshake(&[])];
        refuses(ApiKey::SaslHandshake, 1, mechanisms, false, too_many("mechanisms"));
        for v in 0..=1 {
            let token = [&sasl_authenticate(v, b"token"), &sasl_authenticate(v, b"")];
            refuses(ApiKey::SaslAuthenticate, v, token, false, too_long("auth_bytes"));
        }
        let token = [&sasl_authenticate(2, b"token"), &sasl_authenticate(2, b"")];
        refuses(ApiKey::SaslAuthenticate, 2, token, true, too_long("auth_bytes"));
    }

    #[test]
    fn find_coordinator_with_a_huge_count_or_length_is_refused() {
        let coordinators = [&find_coordinator(4, 1, "kafka-1"), &find_coordinator(4, 0, "kafka-1")];
        refuses(ApiKey::FindCoordinator, 4, coordinators, true, too_many("coordinators"));
        let host = [&find_coordinator(3, 0, "kafka-1"), &find_coordinator(3, 0, "")];
        refuses(ApiKey::FindCoordinator, 3, host, true, too_long("host"));
    }

    #[test]
    fn join_group_with_a_huge_member_count_or_metadata_length_is_refused() {
        for v in [5, 7] {
            let members = [&join_group(v, 2, b"{}"), &join_group(v, 0, b"{}")];
            refuses(ApiKey::JoinGroup, v, members, v >= 6, too_many("members"));
            let metadata = [&join_group(v, 1, b"{}"), &join_group(v, 1, b"")];
            refuses(ApiKey::JoinGroup, v, metadata, v >= 6, too_long("members[].metadata"));
        }
    }

    #[test]
    fn sync_group_with_a_huge_assignment_length_is_refused() {
        for v in [3, 5] {
            let assignment = [&sync_group(v, b"{}"), &sync_group(v, b"")];
            refuses(ApiKey::SyncGroup, v, assignment, v >= 4, too_long("assignment"));
        }
    }

    #[test]
    fn heartbeat_with_a_huge_count_of_tagged_fields_is_refused() {
        let tagged = [&heartbeat(4, unknown()), &heartbeat(4, BTreeMap::new())];
        // The count of tagged fields is no count + 1: patched to u32::MAX, it says u32::MAX.
        let (bytes, left) = patched(&frame(tagged[0], 4), &frame(tagged[1], 4), true, u32::MAX);
        let refusal = check(ApiKey::Heartbeat as i16, 4, 1, &bytes).unwrap_err();
        let expected = Problem::TooMany { field: "tagged_fields", count: u64::from(u32::MAX), left };
        assert_eq!(refusal.problem, expected);
    }

    #[test]
    fn leave_group_with_a_huge_member_count_is_refused() {
        for v in [3, 4] {
            let members = [&leave_group(v, 1), &leave_group(v, 0)];
            refuses(ApiKey::LeaveGroup, v, members, v >= 4, too_many("members"));
        }
    }

    #[test]
    fn a_flexible_header_with_a_huge_count_of_tagged_fields_is_refused() {
        let mut bytes = 42i32.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0]);
        let refusal = check(ApiKey::Heartbeat as i16, 4, 1, &bytes).unwrap_err();
        let expected = Problem::TooMany { field: "header.tagged_fields", count: u64::from(u32::MAX), left: 2 };
        assert_eq!(refusal.problem, expected);
    }

    #[test]
    fn a_frame_that_ends_inside_a_field_is_refused() {
        let bytes = frame(&heartbeat(0, BTreeMap::new()), 0);
        let refusal = check(ApiKey::Heartbeat as i16, 0, 0, &bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(refusal.problem, Problem::Truncated { field: "error_code", needs: 2, left: 1 });
    }

    #[test]
    fn a_negative_count_other_than_null_is_refused() {
        let mut bytes = frame(&sasl_handshake(&[]), 1);
        let at = bytes.len() - 4;
        bytes[at..].copy_from_slice(&(-2i32).to_be_bytes());
        let refusal = check(ApiKey::SaslHandshake as i16, 1, 0, &bytes).unwrap_err();
        assert_eq!(refusal.problem, Problem::Negative { field: "mechanisms", length: -2 });
    }

    #[test]
    fn an_api_or_version_without_a_known_layout_is_refused_rather_than_decoded_unchecked() {
        let bytes = frame(&heartbeat(4, BTreeMap::new()), 4);
        let refusal = check(ApiKey::Heartbeat as i16, 5, 1, &bytes).unwrap_err();
        assert_eq!(refusal.problem, Problem::UnknownLayout);
        let refusal = check(ApiKey::Fetch as i16, 4, 1, &bytes).unwrap_err();
        let expected = "Fetch v4 response: Wharf does not know the layout of this response, so cannot check it \
                        before decoding";
        assert_eq!(refusal.to_string(), expected);
    }
}
