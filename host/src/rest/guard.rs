//! What keeps web pages away from a REST API on loopback: a page the worker's user opens can send
//! requests to `127.0.0.1:8083` (cross-site request forgery) and, through a name it rebinds to
//! that address, read the answers (DNS rebinding). So:
//! - a request body must be declared JSON (`Content-Type: application/json`), which a page
//!   cannot send across origins without the browser asking first;
//! - a request with an `Origin` header is refused unless `access.control.allow.origin` allows that
//!   origin (or it is the worker's own address); allowed origins get CORS answers;
//! - the `Host` header must name this worker: an IP address, `localhost`, the listener's host or
//!   `rest.advertised.host.name`, so a rebound name is refused.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::config::WorkerConfig;

/// What requests must look like to reach a handler.
#[derive(Debug, Clone)]
pub(super) struct RequestGuard {
    /// Host names (no port) a request's `Host` may name besides IP addresses and `localhost`.
    hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) allowed; `*` allows any.
    origins: Vec<String>,
    /// `access.control.allow.methods`, for the answer to a preflight.
    methods: String,
}

impl RequestGuard {
    pub(super) fn of(config: &WorkerConfig) -> Self {
        let host_of = |address: &str| address.rsplit_once(':').map_or(address, |(h, _)| h).to_ascii_lowercase();
        let mut hosts = vec![host_of(&config.rest_bind), host_of(&config.advertised)];
        // The host `metrics.listeners` names, which a scraper may call it by.
        if let Some((bind, _)) = &config.metrics_listener {
            hosts.push(host_of(bind));
        }
        hosts.dedup();
        let mut origins = config.rest_allowed_origins.clone();
        // The worker's own pages (if any) are of its own origin.
        let scheme = config.rest_scheme();
        origins.push(format!("{scheme}://{}", config.rest_bind.to_ascii_lowercase()));
        origins.push(format!("{scheme}://{}", config.advertised.to_ascii_lowercase()));
        RequestGuard { hosts, origins, methods: config.rest_allowed_methods.clone() }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        // "[::1]:8083", "127.0.0.1:8083", "name:8083", "name"
        let name = if let Some(rest) = host.strip_prefix('[') {
            match rest.split_once(']') {
                Some((inside, _)) => inside.to_string(),
                None => return false,
            }
        } else {
            host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h).to_string()
        };
        let name = name.trim_end_matches('.');
        name.parse::<std::net::IpAddr>().is_ok() || name == "localhost" || self.hosts.iter().any(|h| h == name)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        self.origins.iter().any(|o| o == "*" || *o == origin)
    }

    fn problem(&self, request: &Request) -> Option<ApiError> {
        let headers = request.headers();
        let refuse = |status: StatusCode, message: String| Some(ApiError::new(status, message));
        match headers.get(header::HOST).map(|h| h.to_str()) {
            Some(Ok(host)) if self.host_allowed(host) => {}
            Some(Ok(host)) => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    format!(
                        "Host {host:?} does not name this worker; send requests to its IP address, to localhost, \
                         or to the name in rest.advertised.host.name"
                    ),
                )
            }
            Some(Err(_)) => return refuse(StatusCode::BAD_REQUEST, "the Host header is not readable text".into()),
            // HTTP/1.0 without Host: a client on this machine, not a browser.
            None => {}
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                return refuse(
                    StatusCode::FORBIDDEN,
                    format!(
                        "requests from web pages of origin {origin:?} are not allowed; list the origin in the worker's \
                         access.control.allow.origin to allow them"
                    ),
                );
            }
        }
        let has_body = headers
            .get(header::CONTENT_LENGTH)
            .map_or(headers.contains_key(header::TRANSFER_ENCODING), |length| length.as_bytes() != b"0");
        if has_body && matches!(*request.method(), Method::POST | Method::PUT | Method::PATCH) {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|t| t.to_str().ok())
                .and_then(|t| t.split(';').next())
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
            if !json {
                return refuse(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "a request body must be JSON, sent with the header Content-Type: application/json".into(),
                );
            }
        }
        None
    }
}

/// Refuses requests the guard does not allow; answers CORS preflights of allowed origins and adds
/// the CORS header to their answers.
pub(super) async fn check(State(guard): State<Arc<RequestGuard>>, request: Request, next: Next) -> Response {
    if let Some(problem) = guard.problem(&request) {
        return problem.into_response();
    }
    let origin = request.headers().get(header::ORIGIN).cloned();
    if request.method() == Method::OPTIONS && origin.is_some() {
        let mut answer = StatusCode::NO_CONTENT.into_response();
        let headers = answer.headers_mut();
        if let Ok(methods) = HeaderValue::from_str(&guard.methods) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
        }
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("content-type"));
        if let Some(origin) = origin {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        }
        return answer;
    }
    let mut response = next.run(request).await;
    if let Some(origin) = origin {
        response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(origins: &[&str]) -> RequestGuard {
        RequestGuard {
            hosts: vec!["127.0.0.1".into(), "worker-1.example".into()],
            origins: origins.iter().map(|o| o.to_string()).collect(),
            methods: "GET,POST,PUT,DELETE".into(),
        }
    }

    fn request(method: &str, headers: &[(&str, &str)], body: &str) -> Request {
        let mut builder = Request::builder().method(method).uri("/connectors");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        builder.header("content-length", body.len().to_string()).body(axum::body::Body::from(body.to_string())).unwrap()
    }

    fn status(guard: &RequestGuard, request: &Request) -> Option<u16> {
        guard.problem(request).map(|e| e.status.as_u16())
    }

    #[test]
    fn a_body_that_is_not_declared_json_is_refused() {
        let g = guard(&[]);
        let host = ("host", "127.0.0.1:8083");
        assert_eq!(status(&g, &request("POST", &[host, ("content-type", "text/plain")], "{}")), Some(415));
        assert_eq!(status(&g, &request("POST", &[host], "{}")), Some(415));
        assert_eq!(
            status(&g, &request("POST", &[host, ("content-type", "application/json; charset=utf-8")], "{}")),
            None
        );
        // Kafka Connect's clients send pause, resume and restart without a body.
        assert_eq!(status(&g, &request("PUT", &[host], "")), None);
    }

    #[test]
    fn hosts_that_do_not_name_the_worker_are_refused() {
        let g = guard(&[]);
        for allowed in ["127.0.0.1:8083", "localhost:8083", "[::1]:8083", "WORKER-1.example:8083", "10.0.0.7"] {
            assert_eq!(status(&g, &request("GET", &[("host", allowed)], "")), None, "{allowed}");
        }
        for refused in ["attacker.example:8083", "127.0.0.1.attacker.example", "[::1"] {
            assert_eq!(status(&g, &request("GET", &[("host", refused)], "")), Some(403), "{refused}");
        }
    }

    #[test]
    fn origins_must_be_allowed_by_the_worker() {
        let host = ("host", "127.0.0.1:8083");
        let none = guard(&[]);
        assert_eq!(status(&none, &request("GET", &[host, ("origin", "https://evil.example")], "")), Some(403));
        let some = guard(&["https://ui.example"]);
        assert_eq!(status(&some, &request("GET", &[host, ("origin", "https://ui.example")], "")), None);
        assert_eq!(status(&some, &request("GET", &[host, ("origin", "https://evil.example")], "")), Some(403));
        let any = guard(&["*"]);
        assert_eq!(status(&any, &request("GET", &[host, ("origin", "https://evil.example")], "")), None);
    }
}
