//! The worker-to-worker HTTP client: a worker passes a request to another worker of its group
//! (a write to the leader, task configs to the leader, a restart to the task's worker).

use std::time::Duration;

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

/// Sends a request to another worker and returns its status and body. `authorization` is the
/// `Authorization` header of the user's request it carries out, passed on as it came.
pub fn send(
    method: &str,
    url: &str,
    body: Option<Vec<u8>>,
    forwarded_by: &str,
    authorization: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let agent: ureq::Agent =
        // No redirects: an answer is relayed to the caller, never followed elsewhere.
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(FORWARD_TIMEOUT))
            .build()
            .into();
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header(FORWARDED_BY, forwarded_by);
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
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
