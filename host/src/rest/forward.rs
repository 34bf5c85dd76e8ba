//! Requests that another worker of the group must carry out: writes go to the leader (the only
//! writer of the config topic), restarts to the worker that runs the connector or task.

use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, Shared};

/// How long a write waits for the group to have a leader before it is answered with 409.
const LEADER_WAIT: Duration = Duration::from_secs(10);

use crate::peer::{send, FORWARDED_BY, MAX_BODY};

/// Passes a request on to `base` (another worker's REST URL) and answers with its response.
pub async fn pass_on(request: Request, base: &str, me: &str) -> Response {
    let method = request.method().to_string();
    // The user's credentials and a worker's signature go along as they came.
    let headers: Vec<(String, String)> =
        [axum::http::header::AUTHORIZATION.as_str(), crate::peer::SIGNATURE, crate::peer::SIGNATURE_ALGORITHM]
            .into_iter()
            .filter_map(|name| {
                let value = request.headers().get(name)?.to_str().ok()?;
                Some((name.to_string(), value.to_string()))
            })
            .collect();
    let path = request.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let body = match to_bytes(request.into_body(), MAX_BODY).await {
        Ok(b) => b.to_vec(),
        Err(e) => {
            return ApiError::new(StatusCode::BAD_REQUEST, format!("cannot read the request body: {e}")).into_response()
        }
    };
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let me = me.to_string();
    let sent = tokio::task::spawn_blocking(move || send(&method, &url, Some(body), &me, &headers)).await;
    match sent {
        Ok(Ok((status, body))) => Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()),
        Ok(Err(e)) => ApiError::new(
            StatusCode::CONFLICT,
            format!("Cannot complete the request now: the worker at {base} that must carry it out did not answer ({e}). The group may be rebalancing; retry in a few seconds"),
        )
        .into_response(),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("request handler failed: {e}")).into_response(),
    }
}

/// Asks the worker at `base` (another worker's REST URL) to restart task `task` of `connector`,
/// which it runs, with the user's credentials; what went wrong otherwise.
pub async fn restart_task_on(
    base: &str,
    connector: &str,
    task: u32,
    me: &str,
    authorization: Option<String>,
) -> Result<(), String> {
    let url = format!("{base}/connectors/{}/tasks/{task}/restart", crate::peer::path_segment(connector));
    let me = me.to_string();
    let sent = tokio::task::spawn_blocking(move || {
        let headers: Vec<(String, String)> =
            authorization.into_iter().map(|a| ("authorization".to_string(), a)).collect();
        send("POST", &url, None, &me, &headers)
    })
    .await
    .map_err(|e| e.to_string())?;
    match sent? {
        (status, _) if status < 300 => Ok(()),
        (status, body) => Err(format!("the worker running it answered {status}: {}", String::from_utf8_lossy(&body))),
    }
}

/// The user's `Authorization` header, which a request carried out by another worker takes along.
pub fn authorization(request: &Request) -> Option<String> {
    request.headers().get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// The 409 Kafka Connect answers while a group has no leader.
pub fn no_leader() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "Cannot complete the request now: the group is rebalancing and has no leader yet. Retry in a few seconds",
    )
}

/// Middleware for the routes that write the config topic: a follower passes the request on to
/// the leader; during a rebalance the answer is 409. A request another worker passed on is
/// carried out here (the herder refuses it with 409 if this worker no longer leads).
pub async fn to_leader(State(state): State<Shared>, request: Request, next: Next) -> Response {
    if request.method() == Method::GET || request.headers().contains_key(FORWARDED_BY) {
        return next.run(request).await;
    }
    let Some(mut membership) = state.herder.membership() else { return next.run(request).await };
    // A rebalance usually ends within moments: wait a little for a leader before giving up.
    let deadline = tokio::time::Instant::now() + LEADER_WAIT;
    while membership.leader.is_none() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        membership = state.herder.membership().unwrap_or_default();
    }
    if membership.is_leader && membership.leader.is_some() {
        return next.run(request).await;
    }
    match membership.leader {
        Some(leader) => {
            let path = request.uri().path().to_string();
            tracing::info!("passing {} {path} on to the leader at {}", request.method(), leader.url);
            pass_on(request, &leader.url, state.herder.worker_id()).await
        }
        None => no_leader().into_response(),
    }
}
