//! A bound on REST calls that cost more than a lookup: a validation runs the plugin, a connector
//! write validates it too, a sink's offsets are a round trip to Kafka, and the internal
//! `POST /connectors/{name}/tasks`, which skips HTTP Basic, reads a body of up to 2 MiB to check
//! its signature (and a follower then holds a thread passing it to the leader). At most
//! `wharf.rest.max.concurrent.expensive` run at once; a call that finds them all taken waits up
//! to `EXPENSIVE_WAIT` and is then answered 429, so a flood of them cannot take every thread and
//! every plugin instance's memory.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// How long an expensive call waits for one of the running ones to finish.
pub(super) const EXPENSIVE_WAIT: Duration = Duration::from_secs(10);

pub(super) struct ExpensiveCalls {
    permits: tokio::sync::Semaphore,
    max: usize,
}

impl ExpensiveCalls {
    pub(super) fn new(max: usize) -> Self {
        ExpensiveCalls { permits: tokio::sync::Semaphore::new(max), max }
    }

    /// A permit, held until dropped; none when all stayed taken for `EXPENSIVE_WAIT`.
    pub(super) async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        match tokio::time::timeout(EXPENSIVE_WAIT, self.permits.acquire()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }

    /// The 429 for a call that found every permit taken; `what` names the calls they bound.
    pub(super) fn busy(&self, what: &str) -> Response {
        let mut response = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this worker is answering {} {what} already (wharf.rest.max.concurrent.expensive={}) and none \
                 finished within {} s; try again shortly, or raise the setting in the worker config",
                self.max,
                self.max,
                EXPENSIVE_WAIT.as_secs()
            ),
        )
        .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        response
    }
}

/// Whether a request is one of the expensive ones; everything else passes at once.
fn is_expensive(method: &Method, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    if path.ends_with("/config/validate") || path.ends_with("/offsets") {
        return true;
    }
    let connector_write = path == "/connectors" && method == Method::POST
        || path.starts_with("/connectors/") && path.ends_with("/config") && method == Method::PUT;
    let task_configs = method == Method::POST
        && path.starts_with("/connectors/")
        && path.ends_with("/tasks")
        && path.matches('/').count() == 3;
    connector_write || task_configs
}

pub(super) async fn limit(State(calls): State<Arc<ExpensiveCalls>>, request: Request, next: Next) -> Response {
    if !is_expensive(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    match calls.permit().await {
        // The permit is held until the answer is ready (the handler runs to its end even when
        // the caller goes away: `contain_panics` runs it as a task of its own).
        Some(_permit) => next.run(request).await,
        None => calls.busy("validations, connector writes, task configs or offset calls"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validations_writes_and_offsets_are_expensive_reads_are_not() {
        assert!(is_expensive(&Method::PUT, "/connector-plugins/datagen/config/validate"));
        assert!(is_expensive(&Method::POST, "/connectors"));
        assert!(is_expensive(&Method::PUT, "/connectors/a/config"));
        assert!(is_expensive(&Method::GET, "/connectors/a/offsets"));
        assert!(is_expensive(&Method::DELETE, "/connectors/a/offsets"));
        assert!(!is_expensive(&Method::GET, "/connectors"));
        assert!(!is_expensive(&Method::GET, "/connectors/a/config"));
        assert!(!is_expensive(&Method::GET, "/connectors/a/status"));
        assert!(!is_expensive(&Method::PUT, "/connectors/a/pause"));
    }

    #[test]
    fn task_configs_from_another_worker_are_expensive_a_restart_is_not() {
        assert!(is_expensive(&Method::POST, "/connectors/a/tasks"));
        assert!(is_expensive(&Method::POST, "/connectors/a%2Fb/tasks/"));
        assert!(!is_expensive(&Method::GET, "/connectors/a/tasks"));
        assert!(!is_expensive(&Method::POST, "/connectors/a/tasks/0/restart"));
    }
}
