//! A blocking connection to one Kafka broker that speaks the wire protocol directly (framing,
//! headers, version choice), for the group membership APIs that librdkafka keeps to itself.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

/// A broker could not be reached, or its answer made no sense; the caller finds the coordinator
/// again and retries.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct WireError {
    pub message: String,
}

fn wire(message: impl Into<String>) -> WireError {
    WireError { message: message.into() }
}

pub struct Connection {
    address: String,
    stream: TcpStream,
    client_id: String,
    correlation: i32,
    /// API key → (min, max) version the broker supports.
    versions: BTreeMap<i16, (i16, i16)>,
}

/// How long to wait for a connection to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an ordinary request may take; JoinGroup passes its own (a rebalance may be slow).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response accepted, a guard against reading garbage as a length.
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

impl Connection {
    /// Connects to `address` (`host:port`) and asks which API versions the broker speaks.
    pub fn open(address: &str, client_id: &str) -> Result<Self, WireError> {
        let addrs: Vec<_> = address
            .to_socket_addrs()
            .map_err(|e| wire(format!("cannot resolve Kafka broker address {address}: {e}")))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            wire(format!(
                "cannot connect to Kafka broker {address}: {}",
                last.map_or("no address".to_string(), |e| e.to_string())
            ))
        })?;
        stream.set_nodelay(true).ok();
        let mut connection = Connection {
            address: address.to_string(),
            stream,
            client_id: client_id.to_string(),
            correlation: 0,
            versions: BTreeMap::new(),
        };
        let response = connection.call_with(&ApiVersionsRequest::default(), 2, REQUEST_TIMEOUT)?;
        if response.error_code != 0 {
            return Err(wire(format!("broker {address} refused ApiVersions (error code {})", response.error_code)));
        }
        connection.versions = response.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect();
        Ok(connection)
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// The version to speak for `R`: the highest both sides know, at most `preferred`.
    pub fn version_of<R: Request>(&self, preferred: i16) -> Result<i16, WireError> {
        let api = ApiKey::try_from(R::KEY).map(|k| format!("{k:?}")).unwrap_or_else(|_| R::KEY.to_string());
        let (broker_min, broker_max) = *self
            .versions
            .get(&R::KEY)
            .ok_or_else(|| wire(format!("broker {} does not support the {api} API", self.address)))?;
        let version = preferred.min(broker_max).min(R::VERSIONS.max);
        if version < broker_min.max(R::VERSIONS.min) {
            return Err(wire(format!(
                "broker {} speaks {api} versions {broker_min}..{broker_max}, Wharf up to {preferred}",
                self.address
            )));
        }
        Ok(version)
    }

    /// Sends a request at the best common version up to `preferred` and reads its response.
    pub fn call<R: Request>(
        &mut self,
        request: &R,
        preferred: i16,
        timeout: Duration,
    ) -> Result<R::Response, WireError> {
        let version = self.version_of::<R>(preferred)?;
        self.call_with(request, version, timeout)
    }

    fn call_with<R: Request>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, WireError> {
        self.correlation = self.correlation.wrapping_add(1);
        let correlation = self.correlation;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation)
            .with_client_id(Some(StrBytes::from_string(self.client_id.clone())));
        let mut body = BytesMut::new();
        let encoded =
            header.encode(&mut body, R::header_version(version)).and_then(|_| request.encode(&mut body, version));
        encoded.map_err(|e| wire(format!("cannot encode a request for broker {}: {e}", self.address)))?;

        let mut frame = Vec::with_capacity(body.len() + 4);
        frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
        frame.extend_from_slice(&body);
        let io = |e: std::io::Error| wire(format!("connection to Kafka broker {} failed: {e}", self.address));
        self.stream.set_write_timeout(Some(timeout)).map_err(io)?;
        self.stream.set_read_timeout(Some(timeout)).map_err(io)?;
        self.stream.write_all(&frame).map_err(io)?;

        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).map_err(io)?;
        let size = i32::from_be_bytes(size);
        if size < 0 || size as usize > MAX_RESPONSE {
            return Err(wire(format!("broker {} sent a response of impossible size {size}", self.address)));
        }
        let mut response = vec![0u8; size as usize];
        self.stream.read_exact(&mut response).map_err(io)?;
        let mut buf = bytes::Bytes::from(response);
        let decode = |e: anyhow::Error| wire(format!("cannot decode a response of broker {}: {e}", self.address));
        let header = ResponseHeader::decode(&mut buf, R::Response::header_version(version)).map_err(decode)?;
        if header.correlation_id != correlation {
            return Err(wire(format!(
                "broker {} answered request {} while {correlation} was expected",
                self.address, header.correlation_id
            )));
        }
        let response = R::Response::decode(&mut buf, version).map_err(decode)?;
        if buf.has_remaining() {
            tracing::debug!("{} bytes left over in a response of broker {}", buf.remaining(), self.address);
        }
        Ok(response)
    }
}
