//! A blocking connection to one Kafka broker that speaks the wire protocol directly (framing,
//! headers, version choice), for the group membership APIs that librdkafka keeps to itself.
//! It speaks TLS and SASL as `security::WireSecurity` says.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use kafka_protocol::error::{ParseResponseErrorCode, ResponseError};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use rustls::pki_types::ServerName;

use super::security::{self, Mechanism, Sasl, Scram, WireSecurity};
use super::wire_check;

/// A broker could not be reached, or its answer made no sense: the caller finds the coordinator
/// again and retries. A fatal one (authentication refused, a certificate not trusted) would fail
/// the same way again until the settings or the broker change.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct WireError {
    pub message: String,
    pub fatal: bool,
}

impl WireError {
    /// A failure that may pass: retry soon.
    pub fn new(message: impl Into<String>) -> Self {
        WireError { message: message.into(), fatal: false }
    }

    /// A failure that retrying soon cannot mend.
    pub fn fatal(message: impl Into<String>) -> Self {
        WireError { message: message.into(), fatal: true }
    }
}

/// `host:port` of each of `bootstrap.servers`, without a listener name.
pub fn bootstrap_addresses(servers: &str) -> Vec<String> {
    servers
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.rsplit_once("://").map_or(s, |(_, address)| address).to_string())
        .collect()
}

fn wire(message: impl Into<String>) -> WireError {
    WireError::new(message)
}

/// The socket, plain or inside TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(socket) => socket,
            Stream::Tls(tls) => &tls.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.read(buf),
            Stream::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(socket) => socket.write(buf),
            Stream::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(socket) => socket.flush(),
            Stream::Tls(tls) => tls.flush(),
        }
    }
}

pub struct Connection {
    address: String,
    stream: Stream,
    client_id: String,
    correlation: i32,
    /// API key → (min, max) version the broker supports.
    versions: BTreeMap<i16, (i16, i16)>,
    /// When the broker ends the SASL session (`connections.max.reauth.ms`): past it, requests
    /// are refused so that the member opens a new connection instead of losing this one in the
    /// middle of a call.
    session_ends: Option<Instant>,
}

/// How long to wait for a connection to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an ordinary request may take; JoinGroup passes its own (a rebalance may be slow).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response accepted, a guard against reading garbage as a length.
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

/// Of a session the broker limits, the share used before reconnecting: the rest leaves room for
/// a call under way and for clocks that disagree a little.
const SESSION_SHARE: f64 = 0.9;

impl Connection {
    /// Connects to `address` (`host:port`), secures the connection as `security` says (TLS
    /// handshake, then SASL after ApiVersions), and learns which API versions the broker speaks.
    pub fn open(address: &str, client_id: &str, security: &WireSecurity) -> Result<Self, WireError> {
        let socket = connect(address)?;
        let stream = match security.tls_config() {
            None => Stream::Plain(socket),
            Some(config) => Stream::Tls(handshake(address, socket, config)?),
        };
        let mut connection = Connection {
            address: address.to_string(),
            stream,
            client_id: client_id.to_string(),
            correlation: 0,
            versions: BTreeMap::new(),
            session_ends: None,
        };
        let response = connection.call_with(&ApiVersionsRequest::default(), 2, REQUEST_TIMEOUT)?;
        if response.error_code != 0 {
            return Err(wire(format!("broker {address} refused ApiVersions (error code {})", response.error_code)));
        }
        connection.versions = response.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect();
        if let Some(sasl) = security.sasl() {
            connection.authenticate(sasl)?;
        }
        Ok(connection)
    }

    /// SaslHandshake, then SaslAuthenticate until the mechanism is done. Version 1 of the
    /// handshake is what makes the broker expect SaslAuthenticate requests rather than raw
    /// tokens.
    fn authenticate(&mut self, sasl: &Sasl) -> Result<(), WireError> {
        let mechanism = sasl.mechanism;
        let name = mechanism.name();
        let address = self.address.clone();
        let handshake = self.version_of::<SaslHandshakeRequest>(1)?;
        if handshake < 1 {
            return Err(WireError::fatal(format!(
                "Kafka broker {address} is too old for SASL {name} from Wharf (it lacks SaslHandshake version 1, \
                 Kafka 1.0)"
            )));
        }
        let request = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(name));
        let answer = self.call_with(&request, handshake, REQUEST_TIMEOUT)?;
        match answer.error_code.err() {
            None => {}
            Some(ResponseError::UnsupportedSaslMechanism) => {
                let enabled: Vec<String> = answer.mechanisms.iter().map(|m| m.to_string()).collect();
                return Err(WireError::fatal(format!(
                    "SASL {name} authentication to Kafka broker {address} failed: the broker enables only {}; \
                     check sasl.mechanism",
                    if enabled.is_empty() { "none".to_string() } else { enabled.join(", ") }
                )));
            }
            Some(e) => return Err(sasl_refused(mechanism, &address, e, None)),
        }
        let version = self.version_of::<SaslAuthenticateRequest>(2)?;
        // The broker counts the session from its end of the exchange, after this moment.
        let started = Instant::now();
        let last = match mechanism {
            Mechanism::Plain => self.sasl_step(mechanism, version, sasl.plain_token())?,
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => {
                let nonce = security::client_nonce().map_err(wire)?;
                let mut scram = Scram::new(sasl, nonce);
                let server_first = self.sasl_step(mechanism, version, scram.client_first())?;
                let scram_failed = |e: String| {
                    WireError::fatal(format!("SASL {name} authentication to Kafka broker {address} failed: {e}"))
                };
                let client_final = scram.client_final(&server_first.auth_bytes).map_err(scram_failed)?;
                let server_final = self.sasl_step(mechanism, version, client_final)?;
                scram.check_server_final(&server_final.auth_bytes).map_err(scram_failed)?;
                server_final
            }
        };
        if last.session_lifetime_ms > 0 {
            let lifetime = Duration::from_millis(last.session_lifetime_ms as u64).mul_f64(SESSION_SHARE);
            // A lifetime beyond the clock's range is no limit at all.
            self.session_ends = started.checked_add(lifetime);
        }
        Ok(())
    }

    fn sasl_step(
        &mut self,
        mechanism: Mechanism,
        version: i16,
        token: Vec<u8>,
    ) -> Result<SaslAuthenticateResponse, WireError> {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from(token));
        let answer = self.call_with(&request, version, REQUEST_TIMEOUT)?;
        match answer.error_code.err() {
            None => Ok(answer),
            Some(e) => {
                Err(sasl_refused(mechanism, &self.address, e, answer.error_message.as_ref().map(|m| m.to_string())))
            }
        }
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
        if self.session_ends.is_some_and(|at| Instant::now() >= at) {
            return Err(wire(format!(
                "the SASL session with Kafka broker {} is over (connections.max.reauth.ms); connecting again",
                self.address
            )));
        }
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
        let io = |e: std::io::Error| io_failure(&self.address, e);
        self.stream.socket().set_write_timeout(Some(timeout)).map_err(io)?;
        self.stream.socket().set_read_timeout(Some(timeout)).map_err(io)?;
        self.stream.write_all(&frame).map_err(io)?;
        self.stream.flush().map_err(io)?;

        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).map_err(io)?;
        let size = i32::from_be_bytes(size);
        if size < 0 || size as usize > MAX_RESPONSE {
            return Err(wire(format!(
                "Kafka broker {} sent a response of impossible size {size}; check that security.protocol matches \
                 the broker's listener at this address (a TLS listener answers plaintext so)",
                self.address
            )));
        }
        let mut response = vec![0u8; size as usize];
        self.stream.read_exact(&mut response).map_err(io)?;
        // kafka-protocol reserves room for an array from the count on the wire: a count the frame
        // cannot hold must not reach it.
        wire_check::check(R::KEY, version, R::Response::header_version(version), &response).map_err(|e| {
            wire(format!(
                "Kafka broker {} sent a response that cannot be right, refused before decoding: {e}",
                self.address
            ))
        })?;
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

/// A TCP connection to the first address of `address` that answers.
fn connect(address: &str) -> Result<TcpStream, WireError> {
    let addrs: Vec<_> = address
        .to_socket_addrs()
        .map_err(|e| wire(format!("cannot resolve Kafka broker address {address}: {e}")))?
        .collect();
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(socket) => {
                socket.set_nodelay(true).ok();
                return Ok(socket);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(wire(format!(
        "cannot connect to Kafka broker {address}: {}",
        last.map_or("no address".to_string(), |e| e.to_string())
    )))
}

/// The host part of `host:port` (`[v6]:port` too), which the broker's certificate must name.
fn host_of(address: &str) -> &str {
    address.rsplit_once(':').map_or(address, |(host, _)| host).trim_matches(['[', ']'])
}

/// Completes the TLS handshake within CONNECT_TIMEOUT, so that certificate problems surface
/// here, named, rather than as a broken first request.
fn handshake(
    address: &str,
    socket: TcpStream,
    config: Arc<rustls::ClientConfig>,
) -> Result<Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>, WireError> {
    let host = host_of(address);
    let name = ServerName::try_from(host.to_string()).map_err(|e| {
        WireError::fatal(format!(
            "Kafka broker address {address} has no host name TLS can check ({e}); correct bootstrap.servers or \
             the broker's advertised.listeners"
        ))
    })?;
    let connection = rustls::ClientConnection::new(config, name)
        .map_err(|e| wire(format!("cannot start TLS with Kafka broker {address}: {e}")))?;
    let mut tls = Box::new(rustls::StreamOwned::new(connection, socket));
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    while tls.conn.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(wire(format!(
                "the TLS handshake with Kafka broker {address} took longer than {} s; is it a TLS listener \
                 (security.protocol)?",
                CONNECT_TIMEOUT.as_secs()
            )));
        }
        let io = |e: std::io::Error| io_failure(address, e);
        tls.sock.set_read_timeout(Some(left)).map_err(io)?;
        tls.sock.set_write_timeout(Some(left)).map_err(io)?;
        let rustls::StreamOwned { conn, sock } = &mut *tls;
        conn.complete_io(sock).map_err(io)?;
    }
    Ok(tls)
}

/// A failed read or write, with TLS's reasons told apart: a certificate refused on either side
/// stays refused until someone changes it.
fn io_failure(address: &str, e: std::io::Error) -> WireError {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(tls) => tls_failure(address, tls),
        // What a listener of another security.protocol does with a request it cannot read.
        None if matches!(e.kind(), std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset) => {
            wire(format!(
                "Kafka broker {address} closed the connection ({e}); if it keeps doing so, check that \
                 security.protocol matches the broker's listener at this address"
            ))
        }
        None => wire(format!("connection to Kafka broker {address} failed: {e}")),
    }
}

fn tls_failure(address: &str, e: &rustls::Error) -> WireError {
    use rustls::{AlertDescription as Alert, CertificateError as Certificate, Error};
    match e {
        // A bad signature under a trusted authority's name is most often an authority made
        // anew with the old name: not the one trusted either.
        Error::InvalidCertificate(Certificate::UnknownIssuer | Certificate::BadSignature) => WireError::fatal(format!(
            "the certificate of Kafka broker {address} was not issued by a trusted authority; check \
             ssl.truststore.location"
        )),
        Error::InvalidCertificate(Certificate::NotValidForName | Certificate::NotValidForNameContext { .. }) => {
            WireError::fatal(format!(
                "the certificate of Kafka broker {address} is not valid for the name {} ({e}); check \
                 ssl.endpoint.identification.algorithm and the broker's certificate",
                host_of(address)
            ))
        }
        Error::InvalidCertificate(_) => WireError::fatal(format!(
            "the certificate of Kafka broker {address} cannot be trusted ({e}); check the broker's certificate \
             and ssl.truststore.location"
        )),
        Error::AlertReceived(
            alert @ (Alert::BadCertificate
            | Alert::CertificateRequired
            | Alert::UnknownCA
            | Alert::CertificateUnknown
            | Alert::UnsupportedCertificate
            | Alert::CertificateExpired
            | Alert::CertificateRevoked
            | Alert::AccessDenied),
        ) => WireError::fatal(format!(
            "Kafka broker {address} refused this worker's TLS client certificate ({alert:?}); check \
             ssl.keystore.location (the certificate, and that the broker trusts its issuer)"
        )),
        other => wire(format!(
            "TLS with Kafka broker {address} failed: {other}; check that the listener at this address speaks TLS \
             (security.protocol) and whether it asks for a client certificate (ssl.keystore.location)"
        )),
    }
}

/// The broker refused to authenticate this worker.
fn sasl_refused(mechanism: Mechanism, address: &str, e: ResponseError, message: Option<String>) -> WireError {
    let name = mechanism.name();
    let said = message.filter(|m| !m.is_empty()).unwrap_or_else(|| e.to_string());
    match e {
        ResponseError::SaslAuthenticationFailed => WireError::fatal(format!(
            "SASL {name} authentication to Kafka broker {address} failed: {said}; check sasl.jaas.config (the user \
             and password)"
        )),
        ResponseError::UnsupportedSaslMechanism | ResponseError::IllegalSaslState => WireError::fatal(format!(
            "SASL {name} authentication to Kafka broker {address} failed: {said}; check sasl.mechanism and the \
             listener's sasl.enabled.mechanisms"
        )),
        _ => wire(format!("SASL {name} authentication to Kafka broker {address} failed: {said}")),
    }
}

#[cfg(test)]
mod tests {
    //! The connection against a broker played by the test: TLS from rustls, SASL answered as
    //! Kafka answers it.

    use std::net::TcpListener;

    use base64::engine::general_purpose::STANDARD as BASE64;
    use base64::Engine as _;
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{
        ApiVersionsResponse, HeartbeatRequest, HeartbeatResponse, SaslAuthenticateResponse, SaslHandshakeResponse,
    };
    use openssl::pkey::{PKey, Private};
    use openssl::x509::X509;
    use ring::{digest, hmac, pbkdf2};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

    use super::*;

    /// How the played broker behaves.
    #[derive(Clone, Copy)]
    struct Broker {
        /// The one mechanism it enables.
        mechanism: &'static str,
        /// alice's password as the broker knows it.
        password: &'static str,
        session_lifetime_ms: i64,
        /// Answers SCRAM with a signature made without the credential.
        forges_signature: bool,
        /// Says in its ApiVersions answer that it lists this many APIs, whatever it lists.
        claims_api_count: Option<i32>,
    }

    const BROKER: Broker = Broker {
        mechanism: "SCRAM-SHA-256",
        password: "alice-secret",
        session_lifetime_ms: 0,
        forges_signature: false,
        claims_api_count: None,
    };

    /// Serves one connection on a port of its own; returns its address.
    fn start(broker: Broker, tls: Option<Arc<rustls::ServerConfig>>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let Ok((socket, _)) = listener.accept() else { return };
            socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            match tls {
                None => serve(broker, socket),
                Some(config) => {
                    let connection = rustls::ServerConnection::new(config).unwrap();
                    serve(broker, rustls::StreamOwned::new(connection, socket))
                }
            }
        });
        address
    }

    fn serve(broker: Broker, mut stream: impl Read + Write) {
        let mut scram_first: Option<(String, String)> = None;
        loop {
            let mut size = [0u8; 4];
            if stream.read_exact(&mut size).is_err() {
                return;
            }
            // As Kafka's socket.request.max.bytes, which is what turns a TLS hello away.
            let size = i32::from_be_bytes(size);
            if !(0..1024 * 1024).contains(&size) {
                return;
            }
            let mut body = vec![0u8; size as usize];
            if stream.read_exact(&mut body).is_err() {
                return;
            }
            let mut body = bytes::Bytes::from(body);
            let key = ApiKey::try_from(i16::from_be_bytes([body[0], body[1]])).unwrap();
            let version = i16::from_be_bytes([body[2], body[3]]);
            let header = RequestHeader::decode(&mut body, key.request_header_version(version)).unwrap();
            let mut out = BytesMut::new();
            ResponseHeader::default()
                .with_correlation_id(header.correlation_id)
                .encode(&mut out, key.response_header_version(version))
                .unwrap();
            match key {
                ApiKey::ApiVersions => {
                    let api = |key: ApiKey, max| {
                        ApiVersion::default().with_api_key(key as i16).with_min_version(0).with_max_version(max)
                    };
                    let keys = vec![
                        api(ApiKey::ApiVersions, 3),
                        api(ApiKey::SaslHandshake, 1),
                        api(ApiKey::SaslAuthenticate, 2),
                        api(ApiKey::Heartbeat, 4),
                    ];
                    ApiVersionsResponse::default().with_api_keys(keys).encode(&mut out, version).unwrap();
                    if let Some(count) = broker.claims_api_count {
                        // After the correlation id and the error code, as of version 2.
                        assert_eq!(version, 2);
                        out[6..10].copy_from_slice(&count.to_be_bytes());
                    }
                }
                ApiKey::SaslHandshake => {
                    let request = SaslHandshakeRequest::decode(&mut body, version).unwrap();
                    let code = if request.mechanism.as_str() == broker.mechanism { 0 } else { 33 };
                    SaslHandshakeResponse::default()
                        .with_error_code(code)
                        .with_mechanisms(vec![StrBytes::from_static_str(broker.mechanism)])
                        .encode(&mut out, version)
                        .unwrap();
                }
                ApiKey::SaslAuthenticate => {
                    let request = SaslAuthenticateRequest::decode(&mut body, version).unwrap();
                    let answer = authenticate(broker, &request.auth_bytes, &mut scram_first);
                    answer.with_session_lifetime_ms(broker.session_lifetime_ms).encode(&mut out, version).unwrap();
                }
                ApiKey::Heartbeat => {
                    HeartbeatRequest::decode(&mut body, version).unwrap();
                    HeartbeatResponse::default().encode(&mut out, version).unwrap();
                }
                other => panic!("the played broker does not answer {other:?}"),
            }
            let mut frame = (out.len() as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(&out);
            if stream.write_all(&frame).and_then(|_| stream.flush()).is_err() {
                return;
            }
        }
    }

    /// The broker's side of PLAIN and SCRAM; `first` holds SCRAM's first round (client-first
    /// bare, server-first) until the second.
    fn authenticate(broker: Broker, token: &[u8], first: &mut Option<(String, String)>) -> SaslAuthenticateResponse {
        let refuse = |message: &str| {
            SaslAuthenticateResponse::default()
                .with_error_code(58)
                .with_error_message(Some(StrBytes::from_string(message.to_string())))
        };
        let text = String::from_utf8(token.to_vec()).unwrap();
        if broker.mechanism == "PLAIN" {
            return match text == format!("\0alice\0{}", broker.password) {
                true => SaslAuthenticateResponse::default(),
                false => refuse("Authentication failed: Invalid username or password"),
            };
        }
        let (hmac_algorithm, digest_algorithm, pbkdf2_algorithm) = match broker.mechanism {
            "SCRAM-SHA-512" => (hmac::HMAC_SHA512, &digest::SHA512, pbkdf2::PBKDF2_HMAC_SHA512),
            _ => (hmac::HMAC_SHA256, &digest::SHA256, pbkdf2::PBKDF2_HMAC_SHA256),
        };
        let salt = b"played broker salt";
        let Some((bare, server_first)) = first.take() else {
            let bare = text.strip_prefix("n,,").unwrap().to_string();
            let nonce = bare.split_once(",r=").unwrap().1;
            let server_first = format!("r={nonce}broker-nonce,s={},i=4096", BASE64.encode(salt));
            *first = Some((bare, server_first.clone()));
            return SaslAuthenticateResponse::default().with_auth_bytes(bytes::Bytes::from(server_first));
        };
        let (without_proof, proof) = text.split_once(",p=").unwrap();
        let proof = BASE64.decode(proof).unwrap();
        let auth_message = format!("{bare},{server_first},{without_proof}");
        let mut salted = vec![0u8; digest_algorithm.output_len()];
        let rounds = std::num::NonZeroU32::new(4096).unwrap();
        pbkdf2::derive(pbkdf2_algorithm, rounds, salt, broker.password.as_bytes(), &mut salted);
        let salted = hmac::Key::new(hmac_algorithm, &salted);
        let stored_key = digest::digest(digest_algorithm, hmac::sign(&salted, b"Client Key").as_ref());
        let signature = hmac::sign(&hmac::Key::new(hmac_algorithm, stored_key.as_ref()), auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(signature.as_ref()).map(|(p, s)| p ^ s).collect();
        if digest::digest(digest_algorithm, &client_key).as_ref() != stored_key.as_ref() {
            return refuse(&format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                broker.mechanism
            ));
        }
        let server_key = hmac::Key::new(hmac_algorithm, hmac::sign(&salted, b"Server Key").as_ref());
        let verifier = match broker.forges_signature {
            true => vec![7u8; digest_algorithm.output_len()],
            false => hmac::sign(&server_key, auth_message.as_bytes()).as_ref().to_vec(),
        };
        let server_final = format!("v={}", BASE64.encode(verifier));
        SaslAuthenticateResponse::default().with_auth_bytes(bytes::Bytes::from(server_final))
    }

    /// A certificate signed by `issuer` (itself when None), naming `names` (IP addresses or DNS
    /// names).
    fn certificate(common_name: &str, names: &[&str], issuer: Option<&(X509, PKey<Private>)>) -> (X509, PKey<Private>) {
        use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName};
        use openssl::{asn1::Asn1Time, bn::BigNum, ec, hash::MessageDigest, nid::Nid, x509};
        let group = ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let key = PKey::from_ec_key(ec::EcKey::generate(&group).unwrap()).unwrap();
        let mut name = x509::X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", common_name).unwrap();
        let name = name.build();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        let serial = BigNum::from_u32(rand_serial()).unwrap().to_asn1_integer().unwrap();
        builder.set_serial_number(&serial).unwrap();
        builder.set_subject_name(&name).unwrap();
        builder.set_issuer_name(issuer.map_or(&*name, |(c, _)| c.subject_name())).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
        match issuer {
            None => {
                builder.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
                builder.append_extension(KeyUsage::new().critical().key_cert_sign().build().unwrap()).unwrap();
            }
            Some((ca, _)) => {
                let mut alternative = SubjectAlternativeName::new();
                for n in names {
                    match n.parse::<std::net::IpAddr>() {
                        Ok(_) => alternative.ip(n),
                        Err(_) => alternative.dns(n),
                    };
                }
                let extension = alternative.build(&builder.x509v3_context(Some(ca), None)).unwrap();
                builder.append_extension(extension).unwrap();
                builder.append_extension(ExtendedKeyUsage::new().server_auth().build().unwrap()).unwrap();
            }
        }
        builder.sign(issuer.map_or(&key, |(_, k)| k), MessageDigest::sha256()).unwrap();
        (builder.build(), key)
    }

    fn rand_serial() -> u32 {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; 4];
        ring::rand::SystemRandom::new().fill(&mut bytes).unwrap();
        u32::from_be_bytes(bytes) >> 1
    }

    /// An authority, and a broker certificate it issued for `names`.
    struct Pki {
        authority_pem: String,
        server: Arc<rustls::ServerConfig>,
    }

    fn pki(names: &[&str]) -> Pki {
        pki_from("played authority", names)
    }

    fn pki_from(authority: &str, names: &[&str]) -> Pki {
        let authority = certificate(authority, &[], None);
        let (leaf, key) = certificate("played broker", names, Some(&authority));
        let chain = vec![CertificateDer::from(leaf.to_der().unwrap())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.private_key_to_pkcs8().unwrap()));
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Pki { authority_pem: String::from_utf8(authority.0.to_pem().unwrap()).unwrap(), server: Arc::new(server) }
    }

    fn security(pairs: &[(&str, &str)]) -> WireSecurity {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        WireSecurity::from_settings(&pairs).unwrap()
    }

    fn alice(protocol: &str, mechanism: &str, password: &str) -> Vec<(String, String)> {
        [
            ("security.protocol", protocol),
            ("sasl.mechanism", mechanism),
            ("sasl.username", "alice"),
            ("sasl.password", password),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn heartbeat(connection: &mut Connection) -> Result<HeartbeatResponse, WireError> {
        connection.call(&HeartbeatRequest::default(), 4, REQUEST_TIMEOUT)
    }

    fn refusal(result: Result<Connection, WireError>) -> WireError {
        match result {
            Ok(_) => panic!("the connection was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn scram_over_tls_authenticates_before_the_first_request() {
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            let pki = pki(&["127.0.0.1"]);
            let address = start(Broker { mechanism, ..BROKER }, Some(pki.server.clone()));
            let mut settings = alice("SASL_SSL", mechanism, "alice-secret");
            settings.push(("ssl.ca.pem".into(), pki.authority_pem.clone()));
            let security = WireSecurity::from_settings(&settings).unwrap();
            let mut connection = Connection::open(&address, "test", &security).unwrap();
            assert_eq!(heartbeat(&mut connection).unwrap().error_code, 0, "{mechanism}");
        }
    }

    #[test]
    fn plain_authenticates_without_tls() {
        let address = start(Broker { mechanism: "PLAIN", ..BROKER }, None);
        let security = WireSecurity::from_settings(&alice("SASL_PLAINTEXT", "PLAIN", "alice-secret")).unwrap();
        let mut connection = Connection::open(&address, "test", &security).unwrap();
        assert_eq!(heartbeat(&mut connection).unwrap().error_code, 0);
    }

    #[test]
    fn a_refused_password_is_fatal_and_names_the_mechanism_and_the_broker() {
        for mechanism in ["PLAIN", "SCRAM-SHA-256"] {
            let address = start(Broker { mechanism, ..BROKER }, None);
            let security = WireSecurity::from_settings(&alice("SASL_PLAINTEXT", mechanism, "wrong")).unwrap();
            let e = refusal(Connection::open(&address, "test", &security));
            assert!(e.fatal, "{e}");
            let expected =
                format!("SASL {mechanism} authentication to Kafka broker {address} failed: Authentication failed");
            assert!(e.message.starts_with(&expected), "{e}");
            assert!(e.message.ends_with("check sasl.jaas.config (the user and password)"), "{e}");
        }
    }

    #[test]
    fn a_mechanism_the_broker_does_not_enable_is_fatal_and_the_error_lists_the_ones_it_does() {
        let address = start(Broker { mechanism: "SCRAM-SHA-512", ..BROKER }, None);
        let security = WireSecurity::from_settings(&alice("SASL_PLAINTEXT", "PLAIN", "alice-secret")).unwrap();
        let e = refusal(Connection::open(&address, "test", &security));
        assert!(e.fatal && e.message.contains("enables only SCRAM-SHA-512; check sasl.mechanism"), "{e}");
    }

    #[test]
    fn a_broker_that_cannot_prove_it_knows_the_credential_is_refused() {
        let address = start(Broker { forges_signature: true, ..BROKER }, None);
        let security = WireSecurity::from_settings(&alice("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice-secret")).unwrap();
        let e = refusal(Connection::open(&address, "test", &security));
        assert!(e.fatal && e.message.contains("server signature is wrong"), "{e}");
    }

    #[test]
    fn a_certificate_from_an_authority_not_trusted_is_fatal() {
        // Another authority, and one made anew under the same name.
        for trusted in ["another authority", "played authority"] {
            let served = pki(&["127.0.0.1"]);
            let trusted = pki_from(trusted, &["127.0.0.1"]);
            let address = start(BROKER, Some(served.server));
            let security = security(&[("security.protocol", "SSL"), ("ssl.ca.pem", &trusted.authority_pem)]);
            let e = refusal(Connection::open(&address, "test", &security));
            assert!(e.fatal, "{e}");
            assert_eq!(
                e.message,
                format!(
                    "the certificate of Kafka broker {address} was not issued by a trusted authority; check \
                     ssl.truststore.location"
                )
            );
        }
    }

    #[test]
    fn a_certificate_for_another_name_is_fatal_unless_the_name_check_is_off() {
        let pki = pki(&["kafka.test"]);
        let address = start(BROKER, Some(pki.server.clone()));
        let checked = security(&[("security.protocol", "SSL"), ("ssl.ca.pem", &pki.authority_pem)]);
        let e = refusal(Connection::open(&address, "test", &checked));
        assert!(e.fatal, "{e}");
        let expected = format!("the certificate of Kafka broker {address} is not valid for the name 127.0.0.1 (");
        assert!(e.message.starts_with(&expected), "{e}");
        assert!(
            e.message.ends_with("; check ssl.endpoint.identification.algorithm and the broker's certificate"),
            "{e}"
        );

        let address = start(BROKER, Some(pki.server.clone()));
        let unchecked = security(&[
            ("security.protocol", "SSL"),
            ("ssl.ca.pem", &pki.authority_pem),
            ("ssl.endpoint.identification.algorithm", "none"),
        ]);
        let mut connection = Connection::open(&address, "test", &unchecked).unwrap();
        assert_eq!(heartbeat(&mut connection).unwrap().error_code, 0);
    }

    #[test]
    fn requests_are_refused_once_the_sasl_session_is_over_so_that_the_member_reconnects() {
        let address = start(Broker { mechanism: "PLAIN", session_lifetime_ms: 200, ..BROKER }, None);
        let security = WireSecurity::from_settings(&alice("SASL_PLAINTEXT", "PLAIN", "alice-secret")).unwrap();
        let mut connection = Connection::open(&address, "test", &security).unwrap();
        assert_eq!(heartbeat(&mut connection).unwrap().error_code, 0);
        std::thread::sleep(Duration::from_millis(200));
        let e = heartbeat(&mut connection).unwrap_err();
        assert!(!e.fatal && e.message.contains("SASL session"), "{e}");
    }

    #[test]
    fn a_response_counting_more_elements_than_it_holds_is_refused_before_decoding() {
        let address = start(Broker { claims_api_count: Some(i32::MAX), ..BROKER }, None);
        let e = refusal(Connection::open(&address, "test", &WireSecurity::default()));
        assert!(!e.fatal, "{e}");
        // Four APIs of 6 bytes each, and the throttle time.
        let expected = format!(
            "Kafka broker {address} sent a response that cannot be right, refused before decoding: ApiVersions v2 \
             response: api_keys counts 2147483647 elements but only 28 bytes are left in the frame"
        );
        assert_eq!(e.message, expected);
    }

    #[test]
    fn a_protocol_that_does_not_match_the_listener_is_named_in_the_error() {
        let pki = pki(&["127.0.0.1"]);
        let address = start(BROKER, Some(pki.server.clone()));
        let e = refusal(Connection::open(&address, "test", &WireSecurity::default()));
        assert!(e.message.contains("check that security.protocol matches the broker's listener"), "{e}");

        let address = start(BROKER, None);
        let tls = security(&[("security.protocol", "SSL"), ("ssl.ca.pem", &pki.authority_pem)]);
        let e = refusal(Connection::open(&address, "test", &tls));
        assert!(e.message.contains("check that security.protocol matches the broker's listener"), "{e}");
    }
}
