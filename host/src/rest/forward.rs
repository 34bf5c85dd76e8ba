//! Requests that another worker of the group must carry out: writes go to the leader (the only
//! writer of the config topic), restarts to the worker that runs the connector or task.
//!
//! What goes is signed with the cluster's session key over its method, path, time and body, and
//! the user's `Authorization` stays behind: member URLs come from the group's metadata, which a
//! client outside the cluster may have written, so a URL must also pass this worker's
//! `ForwardRules` (`wharf.rest.forward.allowed.urls`) before anything is sent to it.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{read_body, ApiError, RestState, Shared, SignedByMember};
use crate::peer::{send, ForwardRules, FORWARDED_BY, MAX_REQUEST_BODY};

/// How long a write waits for the group to have a leader before it is answered with 409.
const LEADER_WAIT: Duration = Duration::from_secs(10);

/// The route of the internal endpoint by which a worker hands the leader task configs.
const TASK_CONFIGS_ROUTE: &str = "/connectors/{name}/tasks";

/// This worker's rules for the member URLs it sends requests to.
fn rules(state: &RestState) -> ForwardRules {
    let config = state.herder.worker_config();
    let patterns = config.distributed.as_ref().map(|d| d.forward_allowed_urls.as_slice()).unwrap_or_default();
    ForwardRules::new(config.rest_scheme(), &config.advertised, patterns)
}

/// The 502 for a member URL that this worker's rules refuse; `why` names the URL and the rule.
fn refused(why: String) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        format!(
            "This worker does not pass the request on to the group member that must carry it out: {why}. If that \
             member is a worker of this cluster, allow its URL in wharf.rest.forward.allowed.urls in this worker's \
             config; if it is not, a client outside the cluster joined the group, and the group needs SASL and ACLs"
        ),
    )
}

/// The session key and algorithm this worker signs with, or the 409 while the cluster has none.
fn signing_key(state: &RestState) -> Result<(wharf_connect::model::SessionKey, String), ApiError> {
    let Some(distributed) = &state.herder.worker_config().distributed else {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a standalone worker was asked to pass a request on to another worker; this is a bug",
        ));
    };
    let Some(key) = state.herder.snapshot().session_key else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "Cannot pass the request on yet: the cluster has no session key to sign it with (the leader makes one \
             when it starts leading). Retry in a few seconds",
        ));
    };
    Ok((key, distributed.signature_algorithm.clone()))
}

/// Passes a request on to `base` (another worker's REST URL) and answers with its response.
pub(super) async fn pass_on(state: &RestState, request: Request, base: &str) -> Response {
    match passed_on(state, request, base).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn passed_on(state: &RestState, request: Request, base: &str) -> Result<Response, ApiError> {
    rules(state).check(base).map_err(refused)?;
    let (key, algorithm) = signing_key(state)?;
    let method = request.method().to_string();
    let path = request.uri().path_and_query().map_or_else(|| "/".to_string(), |p| p.to_string());
    let (parts, body) = request.into_parts();
    let body = read_body(&parts.headers, body, MAX_REQUEST_BODY).await?.to_vec();
    // Only the signature goes along: never the user's credentials, nor a signature the request
    // came with (this worker checked it, and answers for what it passes on).
    let headers = crate::peer::sign_request(&key, &algorithm, &method, &path, &body)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e))?;
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let me = state.herder.worker_id().to_string();
    let sent = tokio::task::spawn_blocking(move || send(&method, &url, Some(body), &me, &headers)).await;
    match sent {
        Ok(Ok((status, body))) => Ok(Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())),
        Ok(Err(e)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("Cannot complete the request now: the worker at {base} that must carry it out did not answer ({e}). The group may be rebalancing; retry in a few seconds"),
        )),
        Err(e) => Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("request handler failed: {e}"))),
    }
}

/// Asks the worker at `base` (another worker's REST URL) to restart task `task` of `connector`,
/// which it runs, in a request this worker signs; what went wrong otherwise.
pub(super) async fn restart_task_on(state: &RestState, base: &str, connector: &str, task: u32) -> Result<(), String> {
    rules(state).check(base).map_err(|why| format!("not sent: {why} (wharf.rest.forward.allowed.urls)"))?;
    let (key, algorithm) = signing_key(state).map_err(|e| e.message)?;
    let path = format!("/connectors/{}/tasks/{task}/restart", crate::peer::path_segment(connector));
    let headers = crate::peer::sign_request(&key, &algorithm, "POST", &path, b"")?;
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let me = state.herder.worker_id().to_string();
    let sent = tokio::task::spawn_blocking(move || send("POST", &url, None, &me, &headers))
        .await
        .map_err(|e| e.to_string())?;
    match sent? {
        (status, _) if status < 300 => Ok(()),
        (status, body) => Err(format!("the worker running it answered {status}: {}", String::from_utf8_lossy(&body))),
    }
}

/// The 409 Kafka Connect answers while a group has no leader.
pub(super) fn no_leader() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "Cannot complete the request now: the group is rebalancing and has no leader yet. Retry in a few seconds",
    )
}

/// Middleware for the routes that write the config topic: a follower passes the request on to
/// the leader; during a rebalance the answer is 409. A request another worker passed on is
/// carried out here (the herder refuses it with 409 if this worker no longer leads).
pub(super) async fn to_leader(State(state): State<Shared>, request: Request, next: Next) -> Response {
    if request.method() == Method::GET || request.headers().contains_key(FORWARDED_BY) {
        return next.run(request).await;
    }
    let Some(mut membership) = state.herder.membership() else { return next.run(request).await };
    // Task configs skip HTTP Basic: their signature and size are checked before this worker
    // waits for a leader or sends anything on, so that nobody else makes it hold their bodies.
    let internal = request.method() == Method::POST
        && request.extensions().get::<MatchedPath>().is_some_and(|m| m.as_str() == TASK_CONFIGS_ROUTE);
    let request = match internal {
        true => match checked_task_configs(&state, request).await {
            Ok(request) => request,
            Err(e) => return e.into_response(),
        },
        false => request,
    };
    // The leader of the last generation writes even while a rebalance is under way (each create
    // asks for one): its config writer is fenced the moment another worker becomes the leader,
    // and a write refused so is answered 409, to be retried. Writes then never wait for the
    // rebalances they cause.
    if membership.is_leader {
        return next.run(request).await;
    }
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
            pass_on(&state, request, &leader.url).await
        }
        None => no_leader().into_response(),
    }
}

/// Reads the body of task configs another worker sent (at most `MAX_REQUEST_BODY`) and checks
/// their signature; the request again, its body in memory.
async fn checked_task_configs(state: &RestState, request: Request) -> Result<Request, ApiError> {
    let (parts, body) = request.into_parts();
    let body = read_body(&parts.headers, body, MAX_REQUEST_BODY).await?;
    let signed = parts.extensions.get::<SignedByMember>().is_some();
    super::check_member_request(state, signed, &parts.headers, &body)?;
    Ok(Request::from_parts(parts, Body::from(body)))
}
