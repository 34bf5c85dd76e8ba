//! The worker-to-worker HTTP client: a worker passes a request to another worker of its group
//! (a write to the leader, task configs to the leader, a restart to the task's worker), only to
//! member URLs its `ForwardRules` allow, and the signatures of Kafka Connect's sessioned
//! protocol: the leader distributes a session key through the config topic, and a worker signs
//! what it sends another with it. A worker of this release signs the method, the path, the time
//! and the body (`request_signature_headers`, in `X-Wharf-Signature`), so that a captured
//! request cannot be replayed to another path or after `wharf.inter.worker.signature.max.skew.ms`;
//! Kafka Connect's signature of the body alone (`signature_headers`, in `X-Connect-Authorization`)
//! is checked only where `wharf.inter.worker.legacy.signatures` lets workers of earlier releases
//! use it.
//!
//! `send` passes a request on, marked `FORWARDED_BY` so that it is never passed on again, and
//! follows no redirect; `path_segment` percent-encodes a connector name for a path;
//! `new_session_key` makes the leader's key; `sign_request` and `RequestSignature` make and check
//! the request signature, `signature_headers` and `verify` Connect's body-only one. The REST API's
//! `forward` sends a user's request on without its `Authorization`, signed instead.

use std::time::Duration;

use base64::Engine;

use wharf_connect::model::SessionKey;

/// Kafka Connect's headers of a signed request: the signature (base64) of the body alone and
/// its algorithm. Accepted only with `wharf.inter.worker.legacy.signatures`.
pub const SIGNATURE: &str = "x-connect-authorization";
pub const SIGNATURE_ALGORITHM: &str = "x-connect-request-signature-algorithm";

/// The headers of a request signed over its method, path (with query), time and body: the
/// signature (base64), its algorithm, and when it was signed (milliseconds since the epoch).
/// Named apart from Connect's so that a receiver never mistakes one form for the other.
pub const REQUEST_SIGNATURE: &str = "x-wharf-signature";
pub const REQUEST_SIGNATURE_ALGORITHM: &str = "x-wharf-signature-algorithm";
pub const SIGNED_AT: &str = "x-wharf-signed-at";

/// Put before what a request signature covers, so that no other message signed with the
/// session key (a legacy body signature) can pass for one.
const REQUEST_SIGNATURE_CONTEXT: &[u8] = b"wharf-request-signature-v1\n";

fn hmac(algorithm: &str) -> Option<ring::hmac::Algorithm> {
    match algorithm {
        "HmacSHA256" => Some(ring::hmac::HMAC_SHA256),
        "HmacSHA384" => Some(ring::hmac::HMAC_SHA384),
        "HmacSHA512" => Some(ring::hmac::HMAC_SHA512),
        _ => None,
    }
}

/// A new session key of `algorithm`, as long as Java's `KeyGenerator` makes one for it.
pub fn new_session_key(algorithm: &str, now_ms: i64) -> Result<SessionKey, String> {
    use ring::rand::SecureRandom;
    let bytes = match algorithm {
        "HmacSHA384" => 48,
        "HmacSHA512" => 64,
        _ => 32,
    };
    let mut key = vec![0u8; bytes];
    ring::rand::SystemRandom::new().fill(&mut key).map_err(|_| "the system gave no random bytes".to_string())?;
    Ok(SessionKey { key, algorithm: algorithm.to_string(), created_ms: now_ms })
}

/// The headers that sign `body` alone with the session key (Kafka Connect's form, which a
/// receiver accepts only with `wharf.inter.worker.legacy.signatures`; `request_signature_headers`
/// is the form to send).
pub fn signature_headers(key: &SessionKey, algorithm: &str, body: &[u8]) -> Vec<(String, String)> {
    let Some(hmac) = hmac(algorithm) else { return Vec::new() };
    let tag = ring::hmac::sign(&ring::hmac::Key::new(hmac, &key.key), body);
    vec![
        (SIGNATURE.to_string(), base64::engine::general_purpose::STANDARD.encode(tag.as_ref())),
        (SIGNATURE_ALGORITHM.to_string(), algorithm.to_string()),
    ]
}

/// Milliseconds since the epoch by this machine's clock, as requests are signed with.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What a request signature covers: the method, the path with its query as the receiver sees
/// it, the time and the body, each line-separated (a method, path and number hold no newline).
fn signed_message(method: &str, path: &str, signed_at_ms: i64, body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(REQUEST_SIGNATURE_CONTEXT.len() + method.len() + path.len() + 24 + body.len());
    message.extend_from_slice(REQUEST_SIGNATURE_CONTEXT);
    message.extend_from_slice(method.to_ascii_uppercase().as_bytes());
    message.push(b'\n');
    message.extend_from_slice(path.as_bytes());
    message.push(b'\n');
    message.extend_from_slice(signed_at_ms.to_string().as_bytes());
    message.push(b'\n');
    message.extend_from_slice(body);
    message
}

/// The headers that sign a request to another worker: `method` on `path` (with its query, as
/// it goes on the wire), made at `signed_at_ms`, carrying `body`.
pub fn request_signature_headers(
    key: &SessionKey,
    algorithm: &str,
    method: &str,
    path: &str,
    signed_at_ms: i64,
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    let Some(hmac) = hmac(algorithm) else {
        return Err(format!(
            "cannot sign a request with {algorithm}: inter.worker.signature.algorithm takes HmacSHA256, HmacSHA384 or \
             HmacSHA512"
        ));
    };
    let message = signed_message(method, path, signed_at_ms, body);
    let tag = ring::hmac::sign(&ring::hmac::Key::new(hmac, &key.key), &message);
    Ok(vec![
        (REQUEST_SIGNATURE.to_string(), base64::engine::general_purpose::STANDARD.encode(tag.as_ref())),
        (REQUEST_SIGNATURE_ALGORITHM.to_string(), algorithm.to_string()),
        (SIGNED_AT.to_string(), signed_at_ms.to_string()),
    ])
}

/// `request_signature_headers` signed now.
pub fn sign_request(
    key: &SessionKey,
    algorithm: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    request_signature_headers(key, algorithm, method, path, now_ms(), body)
}

/// Why a signed request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SignatureRefusal {
    Missing,
    /// An algorithm the receiver does not accept (`inter.worker.verification.algorithms`).
    Algorithm(String),
    Invalid,
    /// A signing time that is not a number of milliseconds.
    Timestamp(String),
    /// Signed further from the receiver's clock than `wharf.inter.worker.signature.max.skew.ms`.
    Stale {
        signed_at_ms: i64,
        now_ms: i64,
    },
}

/// The signature headers of a request, read and checked as far as they can be without its body
/// (present, an accepted algorithm, signed recently), so that a receiver reads no body for a
/// request it would refuse anyway.
#[derive(Debug)]
pub struct RequestSignature {
    hmac: ring::hmac::Algorithm,
    tag: Vec<u8>,
    signed_at_ms: i64,
}

impl RequestSignature {
    pub fn read(
        allowed: &[String],
        algorithm: Option<&str>,
        signature: Option<&str>,
        signed_at: Option<&str>,
        now_ms: i64,
        max_skew: Duration,
    ) -> Result<Self, SignatureRefusal> {
        let (Some(algorithm), Some(signature), Some(signed_at)) = (algorithm, signature, signed_at) else {
            return Err(SignatureRefusal::Missing);
        };
        let Some(hmac) = hmac(algorithm).filter(|_| allowed.iter().any(|a| a == algorithm)) else {
            return Err(SignatureRefusal::Algorithm(algorithm.to_string()));
        };
        let signed_at_ms: i64 =
            signed_at.trim().parse().map_err(|_| SignatureRefusal::Timestamp(signed_at.chars().take(40).collect()))?;
        let skew_ms = i64::try_from(max_skew.as_millis()).unwrap_or(i64::MAX);
        if now_ms.abs_diff(signed_at_ms) > skew_ms.unsigned_abs() {
            return Err(SignatureRefusal::Stale { signed_at_ms, now_ms });
        }
        let tag = base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .map_err(|_| SignatureRefusal::Invalid)?;
        Ok(RequestSignature { hmac, tag, signed_at_ms })
    }

    /// Checks the signature over the request, in constant time.
    pub fn verify(&self, key: &SessionKey, method: &str, path: &str, body: &[u8]) -> Result<(), SignatureRefusal> {
        let message = signed_message(method, path, self.signed_at_ms, body);
        ring::hmac::verify(&ring::hmac::Key::new(self.hmac, &key.key), &message, &self.tag)
            .map_err(|_| SignatureRefusal::Invalid)
    }
}

/// Checks a legacy signature (of the body alone) against the session key, in constant time.
pub fn verify(
    key: &SessionKey,
    allowed: &[String],
    algorithm: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
) -> Result<(), SignatureRefusal> {
    let (Some(algorithm), Some(signature)) = (algorithm, signature) else { return Err(SignatureRefusal::Missing) };
    let Some(hmac) = hmac(algorithm).filter(|_| allowed.iter().any(|a| a == algorithm)) else {
        return Err(SignatureRefusal::Algorithm(algorithm.to_string()));
    };
    let tag =
        base64::engine::general_purpose::STANDARD.decode(signature.trim()).map_err(|_| SignatureRefusal::Invalid)?;
    ring::hmac::verify(&ring::hmac::Key::new(hmac, &key.key), body, &tag).map_err(|_| SignatureRefusal::Invalid)
}

/// Set on a request one worker passes to another; such a request is never passed on again.
pub const FORWARDED_BY: &str = "x-wharf-forwarded-by";

/// How long a forwarded request may take (a write waits for the config topic).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest request body a worker passes on, or reads to check its signature: axum's
/// default limit, which every handler's body extractor applies anyway.
pub const MAX_REQUEST_BODY: usize = 2 * 1024 * 1024;

/// The largest answer read back from another worker.
pub const MAX_ANSWER_BODY: usize = 16 * 1024 * 1024;

/// Percent-encodes a connector name for use as one path segment.
pub fn path_segment(name: &str) -> String {
    let mut out = String::new();
    for byte in name.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The TLS settings of requests to `https://` workers, set once at start by a worker whose own
/// listener is https (its keystore and truststore).
static TLS: std::sync::OnceLock<ureq::tls::TlsConfig> = std::sync::OnceLock::new();

pub fn use_tls(config: ureq::tls::TlsConfig) {
    let _ = TLS.set(config);
}

/// Which member URLs this worker passes requests on to (`wharf.rest.forward.allowed.urls`).
/// Member URLs come from the group's metadata, which any client able to join the group writes:
/// nothing goes to a URL of another scheme than this worker's own, nor to one that no pattern
/// matches. Without patterns, this worker's own scheme and advertised port are allowed on any
/// host.
#[derive(Debug, Clone)]
pub struct ForwardRules {
    scheme: String,
    /// The port of this worker's advertised URL, allowed when no pattern is given.
    own_port: Option<u16>,
    patterns: Vec<String>,
}

/// The parts of `scheme://host[:port][/]`: scheme and host lowercased, the port as written.
fn url_parts(url: &str) -> Option<(String, String, Option<&str>)> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    // A path, query, fragment or user name would make the URL mean more than a worker's address.
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', '\\']) || authority.contains(char::is_whitespace)
    {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (authority, None),
    };
    // An IPv6 address only in brackets; any other colon is not a host's.
    let bracketed = host.starts_with('[') && host.ends_with(']');
    if host.is_empty() || (host.contains(':') && !bracketed) {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

impl ForwardRules {
    /// `scheme` is this worker's (`http` or `https`), `advertised` its advertised `host:port`,
    /// `patterns` the setting's `scheme://host:port` entries (`*` for any host or port).
    pub fn new(scheme: &str, advertised: &str, patterns: &[String]) -> Self {
        let own_port = advertised.rsplit_once(':').and_then(|(_, port)| port.parse().ok());
        ForwardRules { scheme: scheme.to_ascii_lowercase(), own_port, patterns: patterns.to_vec() }
    }

    /// Whether a request may go to the member at `url`; if not, why, in words that name the
    /// setting.
    pub fn check(&self, url: &str) -> Result<(), String> {
        let Some((scheme, host, port)) = url_parts(url) else {
            return Err(format!("{url:?} is not of the form {}://host:port", self.scheme));
        };
        if scheme != self.scheme {
            return Err(format!(
                "{url} uses {scheme}, and this worker passes requests on over {} only, the scheme of its own listener",
                self.scheme
            ));
        }
        let port = match port {
            Some(port) => port.parse::<u16>().ok(),
            None => default_port(&scheme),
        };
        let Some(port) = port else { return Err(format!("{url} names no port a worker can listen on")) };
        if self.patterns.is_empty() {
            return match self.own_port == Some(port) {
                true => Ok(()),
                false => Err(format!(
                    "{url} is on port {port}, and with wharf.rest.forward.allowed.urls empty this worker passes \
                     requests on only to {}://<any host>:{} (its own scheme and advertised port)",
                    self.scheme,
                    self.own_port.map_or_else(|| "?".to_string(), |p| p.to_string())
                )),
            };
        }
        let matches = |pattern: &str| {
            let Some((p_scheme, p_host, p_port)) = url_parts(pattern) else { return false };
            let port_matches = match p_port {
                Some("*") => true,
                Some(p) => p.parse::<u16>().ok() == Some(port),
                None => default_port(&p_scheme) == Some(port),
            };
            p_scheme == scheme && (p_host == "*" || p_host == host) && port_matches
        };
        match self.patterns.iter().any(|p| matches(p)) {
            true => Ok(()),
            false => Err(format!("{url} matches none of wharf.rest.forward.allowed.urls={}", self.patterns.join(","))),
        }
    }
}

/// The body of `POST /connectors/{name}/tasks`, a follower's task configs for the leader: a JSON
/// array of objects, one per task, each key with its last value.
pub fn task_configs_body(tasks: &[Vec<(String, String)>]) -> Result<Vec<u8>, serde_json::Error> {
    let objects: Vec<std::collections::BTreeMap<&str, &str>> =
        tasks.iter().map(|task| task.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()).collect();
    serde_json::to_vec(&objects)
}

/// Sends a request to another worker and returns its status and body. `headers` go along: the
/// request's signature. The caller has checked `url` with its `ForwardRules`.
pub fn send(
    method: &str,
    url: &str,
    body: Option<Vec<u8>>,
    forwarded_by: &str,
    headers: &[(String, String)],
) -> Result<(u16, Vec<u8>), String> {
    let agent: ureq::Agent =
        // No redirects: an answer is relayed to the caller, never followed elsewhere.
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(FORWARD_TIMEOUT))
            .tls_config(TLS.get().cloned().unwrap_or_default())
            .build()
            .into();
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header(FORWARDED_BY, forwarded_by);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request =
        request.body(body.unwrap_or_default()).map_err(|e| format!("cannot build a request to {url}: {e}"))?;
    let mut response = agent.run(request).map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER_BODY as u64)
        .read_to_vec()
        .map_err(|e| format!("cannot read the answer of {url}: {e}"))?;
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_configs_go_to_the_leader_as_an_array_of_objects_with_each_keys_last_value() {
        let task = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let body = task_configs_body(&[task(&[("file", "a"), ("quote", "\"x\""), ("file", "b")]), task(&[])]).unwrap();
        assert_eq!(String::from_utf8(body).unwrap(), r#"[{"file":"b","quote":"\"x\""},{}]"#);
    }

    #[test]
    fn a_signature_checks_out_with_its_key_and_body_only() {
        let key = new_session_key("HmacSHA256", 1).unwrap();
        assert_eq!(key.key.len(), 32);
        let headers = signature_headers(&key, "HmacSHA256", b"[{}]");
        let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let allowed = vec!["HmacSHA256".to_string()];
        assert_eq!(verify(&key, &allowed, get(SIGNATURE_ALGORITHM), get(SIGNATURE), b"[{}]"), Ok(()));
        assert_eq!(
            verify(&key, &allowed, get(SIGNATURE_ALGORITHM), get(SIGNATURE), b"[{},{}]"),
            Err(SignatureRefusal::Invalid)
        );
        let other = new_session_key("HmacSHA256", 2).unwrap();
        assert_eq!(
            verify(&other, &allowed, get(SIGNATURE_ALGORITHM), get(SIGNATURE), b"[{}]"),
            Err(SignatureRefusal::Invalid)
        );
        assert_eq!(verify(&key, &allowed, None, None, b"[{}]"), Err(SignatureRefusal::Missing));
        assert_eq!(
            verify(&key, &allowed, Some("HmacSHA512"), get(SIGNATURE), b"[{}]"),
            Err(SignatureRefusal::Algorithm("HmacSHA512".into()))
        );
    }

    const SKEW: Duration = Duration::from_secs(60);

    /// Reads and verifies a request signed by `headers` as the receiver at `now` would.
    fn check(
        key: &SessionKey,
        headers: &[(String, String)],
        now: i64,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(), SignatureRefusal> {
        let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let allowed = vec!["HmacSHA256".to_string()];
        let signature = RequestSignature::read(
            &allowed,
            get(REQUEST_SIGNATURE_ALGORITHM),
            get(REQUEST_SIGNATURE),
            get(SIGNED_AT),
            now,
            SKEW,
        )?;
        signature.verify(key, method, path, body)
    }

    #[test]
    fn a_request_signature_checks_out_for_its_method_path_time_and_body_only() {
        let key = new_session_key("HmacSHA256", 1).unwrap();
        let at = 1_700_000_000_000;
        let headers =
            request_signature_headers(&key, "HmacSHA256", "POST", "/connectors/a/tasks", at, b"[{}]").unwrap();
        assert_eq!(check(&key, &headers, at + 5_000, "POST", "/connectors/a/tasks", b"[{}]"), Ok(()));
        assert_eq!(check(&key, &headers, at, "post", "/connectors/a/tasks", b"[{}]"), Ok(()), "methods are one case");
        for (method, path, body) in [
            ("POST", "/connectors/b/tasks", &b"[{}]"[..]),
            ("POST", "/connectors/a/tasks?x=1", b"[{}]"),
            ("PUT", "/connectors/a/tasks", b"[{}]"),
            ("POST", "/connectors/a/tasks", b"[{},{}]"),
        ] {
            assert_eq!(
                check(&key, &headers, at, method, path, body),
                Err(SignatureRefusal::Invalid),
                "{method} {path}"
            );
        }
        let other = new_session_key("HmacSHA256", 2).unwrap();
        assert_eq!(check(&other, &headers, at, "POST", "/connectors/a/tasks", b"[{}]"), Err(SignatureRefusal::Invalid));
    }

    #[test]
    fn a_request_signed_longer_ago_or_later_than_the_skew_is_refused_before_its_body_is_read() {
        let key = new_session_key("HmacSHA256", 1).unwrap();
        let at = 1_700_000_000_000;
        let headers = request_signature_headers(&key, "HmacSHA256", "DELETE", "/connectors/a", at, b"").unwrap();
        let late = at + 60_001;
        assert_eq!(
            check(&key, &headers, late, "DELETE", "/connectors/a", b""),
            Err(SignatureRefusal::Stale { signed_at_ms: at, now_ms: late })
        );
        let early = at - 60_001;
        assert_eq!(
            check(&key, &headers, early, "DELETE", "/connectors/a", b""),
            Err(SignatureRefusal::Stale { signed_at_ms: at, now_ms: early })
        );
        assert_eq!(check(&key, &headers, at + 60_000, "DELETE", "/connectors/a", b""), Ok(()));
        // The time is signed: moving it forward breaks the signature.
        let mut moved = headers.clone();
        moved.iter_mut().filter(|(k, _)| k == SIGNED_AT).for_each(|(_, v)| *v = (at + 30_000).to_string());
        assert_eq!(check(&key, &moved, at + 60_000, "DELETE", "/connectors/a", b""), Err(SignatureRefusal::Invalid));
        let mut garbled = headers;
        garbled.iter_mut().filter(|(k, _)| k == SIGNED_AT).for_each(|(_, v)| *v = "yesterday".into());
        assert_eq!(
            check(&key, &garbled, at, "DELETE", "/connectors/a", b""),
            Err(SignatureRefusal::Timestamp("yesterday".into()))
        );
    }

    #[test]
    fn a_captured_legacy_signature_does_not_pass_for_a_request_signature() {
        let key = new_session_key("HmacSHA256", 1).unwrap();
        let at = 1_700_000_000_000;
        let legacy = signature_headers(&key, "HmacSHA256", b"[{}]");
        let get = |name: &str| legacy.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let mut headers = vec![
            (REQUEST_SIGNATURE.to_string(), get(SIGNATURE).unwrap()),
            (REQUEST_SIGNATURE_ALGORITHM.to_string(), get(SIGNATURE_ALGORITHM).unwrap()),
        ];
        assert_eq!(check(&key, &headers, at, "POST", "/connectors/a/tasks", b"[{}]"), Err(SignatureRefusal::Missing));
        headers.push((SIGNED_AT.to_string(), at.to_string()));
        assert_eq!(check(&key, &headers, at, "POST", "/connectors/a/tasks", b"[{}]"), Err(SignatureRefusal::Invalid));
    }

    fn rules(scheme: &str, patterns: &[&str]) -> ForwardRules {
        ForwardRules::new(scheme, "w1.example:8083", &patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn without_patterns_only_the_workers_own_scheme_and_port_are_forwarded_to() {
        let empty = rules("https", &[]);
        assert_eq!(empty.check("https://w2.example:8083"), Ok(()));
        assert_eq!(empty.check("https://W2.example:8083/"), Ok(()));
        assert_eq!(empty.check("https://[::1]:8083"), Ok(()));
        let plain = empty.check("http://w2.example:8083").unwrap_err();
        assert!(plain.contains("uses http") && plain.contains("over https only"), "{plain}");
        let port = empty.check("https://evil.example:80").unwrap_err();
        assert!(port.contains("wharf.rest.forward.allowed.urls empty") && port.contains(":8083"), "{port}");
        assert!(rules("http", &[]).check("http://evil.example").is_err(), "port 80 is not the advertised one");
    }

    #[test]
    fn patterns_allow_their_hosts_and_ports_and_nothing_else() {
        let list = rules("http", &["http://127.0.0.1:*", "http://*:9000", "https://w3.example:8083", "not a url"]);
        assert_eq!(list.check("http://127.0.0.1:41234"), Ok(()));
        assert_eq!(list.check("http://anything.example:9000"), Ok(()));
        let refused = list.check("http://evil.example:8083").unwrap_err();
        assert!(refused.contains("matches none of wharf.rest.forward.allowed.urls=http://127.0.0.1:*"), "{refused}");
        assert!(list.check("https://w3.example:8083").is_err(), "another scheme than the worker's own");
        for bad in [
            "http://127.0.0.1:8083/evil",
            "http://user@127.0.0.1:8083",
            "http://127.0.0.1:8083?x",
            "127.0.0.1:8083",
            "http://127.0.0.1:port",
            "http://::1:8083",
            "",
        ] {
            assert!(list.check(bad).is_err(), "{bad}");
        }
    }
}
