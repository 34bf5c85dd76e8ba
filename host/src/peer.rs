//! The worker-to-worker HTTP client: a worker passes a request to another worker of its group
//! (a write to the leader, task configs to the leader, a restart to the task's worker), and the
//! signatures of Kafka Connect's sessioned protocol: the leader distributes a session key
//! through the config topic, and a worker's own requests to the internal endpoint carry an HMAC
//! of their body in `X-Connect-Authorization`, which the receiver checks.

use std::time::Duration;

use base64::Engine;

use crate::model::SessionKey;

/// Kafka Connect's headers of a signed request: the signature (base64) and its algorithm.
pub const SIGNATURE: &str = "x-connect-authorization";
pub const SIGNATURE_ALGORITHM: &str = "x-connect-request-signature-algorithm";

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

/// The headers that sign `body` with the session key.
pub fn signature_headers(key: &SessionKey, algorithm: &str, body: &[u8]) -> Vec<(String, String)> {
    let Some(hmac) = hmac(algorithm) else { return Vec::new() };
    let tag = ring::hmac::sign(&ring::hmac::Key::new(hmac, &key.key), body);
    vec![
        (SIGNATURE.to_string(), base64::engine::general_purpose::STANDARD.encode(tag.as_ref())),
        (SIGNATURE_ALGORITHM.to_string(), algorithm.to_string()),
    ]
}

/// Why a request to the internal endpoint is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SignatureRefusal {
    Missing,
    /// An algorithm the receiver does not accept (`inter.worker.verification.algorithms`).
    Algorithm(String),
    Invalid,
}

/// Checks a request's signature against the session key, in constant time.
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

/// The largest request body passed on (and answer read back).
pub const MAX_BODY: usize = 16 * 1024 * 1024;

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

/// Sends a request to another worker and returns its status and body. `headers` go along: the
/// `Authorization` of the user's request it carries out, or the request's signature.
/// The body of `POST /connectors/{name}/tasks`, a follower's task configs for the leader: a JSON
/// array of objects, one per task, each key with its last value.
pub fn task_configs_body(tasks: &[Vec<(String, String)>]) -> Result<Vec<u8>, serde_json::Error> {
    let objects: Vec<std::collections::BTreeMap<&str, &str>> =
        tasks.iter().map(|task| task.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()).collect();
    serde_json::to_vec(&objects)
}

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
        .limit(MAX_BODY as u64)
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
}
