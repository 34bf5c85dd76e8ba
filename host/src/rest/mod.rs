//! The REST API, in Kafka Connect's shapes. Errors are `{"error_code", "message"}`.
//!
//! Routes read and write through the `Herder` only. Every route is wrapped by `guard` (JSON
//! bodies only, `Origin` and `Host` checked, CORS answers), `check_member_signature` (a request
//! another worker signed with the cluster's session key is marked `SignedByMember`, which HTTP
//! Basic accepts), `auth` (HTTP Basic), `contain_panics` (a panic answers 500 and fails only its
//! request) and `limit` (expensive calls bounded).
//!
//! - `entities`: the answers as types under Connect's entity names, and the request bodies as types
//!   read and checked in one place (`CreateConnector`, `ConfigBody`, `ConfigPatch`, `TaskConfigs`,
//!   `AlterOffsets`), each refusing a wrong shape with the shape it takes. The `/admin/loggers`
//!   body and a sink's offsets in `PATCH …/offsets` are read where they are used.
//! - `loggers`: `/admin/loggers`; `?scope=cluster` writes a `logger-cluster-<namespace>` record
//!   that each worker's herder applies when it reads it.
//! - `forward`: a follower passes writes to the leader and restarts to the worker that runs the
//!   connector or task; a restart with `includeTasks` or `onlyFailed` is planned on the
//!   connector's worker (`Herder::restart_plan`) and carried out after the 202.
//! - `plugins`: `/connector-plugins` and validation.
//!
//! PASSWORD values are answered as `[hidden]` (`herder::HIDDEN`), and a `[hidden]` sent back keeps
//! the stored value. Offsets are read and changed (a STOPPED connector's only) through the herder.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use std::collections::BTreeMap;

use crate::herder::{
    ConnectorOffsets, Health, Herder, HerderError, OffsetsChange, RestartPlan, RestartRequest, Written,
};
use wharf_connect::model::TargetState;
use wharf_connect::model::{map_from_json, map_to_json};
use wharf_connect::model::{ConnectorKind, OffsetMap};

pub mod auth;
mod entities;
mod forward;
mod guard;
mod limit;
mod loggers;
mod plugins;

pub struct RestState {
    pub herder: Arc<Herder>,
    pub kafka_cluster_id: String,
    /// Set when requests must carry HTTP Basic credentials of this file's users.
    pub credentials: Option<Arc<auth::Credentials>>,
    /// When the worker started, in milliseconds since the epoch (its metrics' app-info).
    pub started_unix_ms: u64,
}

pub(crate) type Shared = Arc<RestState>;

/// Marks a request that another worker of the cluster signed with the session key, over its
/// method, path, time and body (`check_member_signature`, which runs before HTTP Basic): the
/// worker that passed it on checked its user, so this one does not ask for credentials again.
#[derive(Debug, Clone, Copy)]
pub struct SignedByMember;

/// How long the body of a request signed by another worker may take to arrive: it is read
/// before any other check, by whoever sent it.
const SIGNED_BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What `check_member_signature` works with: the worker's state, and a bound on the bodies it
/// reads at once (as many as `wharf.rest.max.concurrent.expensive`, with permits of their own:
/// a signed request that is an expensive call takes one of those later, in `limit`).
#[derive(Clone)]
struct MemberSignatures {
    state: Shared,
    reading: Arc<limit::ExpensiveCalls>,
}

pub fn router(state: Shared) -> Router {
    let guard = Arc::new(guard::RequestGuard::of(state.herder.worker_config()));
    let credentials = state.credentials.clone();
    let expensive = Arc::new(limit::ExpensiveCalls::new(state.herder.worker_config().rest_max_concurrent_expensive));
    let signatures = MemberSignatures {
        state: state.clone(),
        reading: Arc::new(limit::ExpensiveCalls::new(state.herder.worker_config().rest_max_concurrent_expensive)),
    };
    // Writes to the config topic: a follower passes them on to the leader.
    let writes = Router::new()
        .route("/connectors", get(list_connectors).post(create_connector))
        .route("/connectors/{name}", get(connector_info).delete(delete_connector))
        .route(
            "/connectors/{name}/config",
            get(connector_config).put(put_connector_config).patch(patch_connector_config),
        )
        .route("/connectors/{name}/tasks", get(connector_tasks).post(put_task_configs))
        .route("/connectors/{name}/fence", put(fence_zombies))
        .route("/connectors/{name}/pause", put(pause))
        .route("/connectors/{name}/resume", put(resume))
        .route("/connectors/{name}/stop", put(stop))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), forward::to_leader));
    // `admin.listeners` left empty turns the /admin endpoints off, as in Kafka Connect.
    let admin = match state.herder.worker_config().admin_endpoints {
        true => Router::new()
            .route("/admin/loggers", get(loggers::list))
            .route("/admin/loggers/{logger}", get(loggers::get).put(loggers::set)),
        false => Router::new(),
    };
    Router::new()
        .route("/", get(root))
        .merge(admin)
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .merge(writes)
        .route("/connectors/{name}/status", get(connector_status))
        .route("/connectors/{name}/tasks/{task}/status", get(task_status))
        .route("/connectors/{name}/topics", get(connector_topics))
        .route("/connectors/{name}/topics/reset", put(reset_connector_topics))
        .route("/connectors/{name}/restart", post(restart_connector))
        .route("/connectors/{name}/offsets", get(connector_offsets).patch(alter_offsets).delete(reset_offsets))
        .route("/connectors/{name}/tasks/{task}/restart", post(restart_task))
        .route("/connector-plugins", get(plugins::list))
        .route("/connector-plugins/{plugin}/config", get(plugins::config_definition))
        .route("/connector-plugins/{plugin}/config/validate", put(plugins::validate))
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(expensive, limit::limit))
        .layer(axum::middleware::from_fn(contain_panics))
        .layer(axum::middleware::from_fn_with_state(credentials, auth::check))
        // Before HTTP Basic: a request another worker signed carries no user's credentials.
        .layer(axum::middleware::from_fn_with_state(signatures, check_member_signature))
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}

/// The listener of `metrics.listeners`: `GET /metrics` alone, behind the same guard and
/// authentication as the REST API.
pub fn metrics_router(state: Shared) -> Router {
    let guard = Arc::new(guard::RequestGuard::of(state.herder.worker_config()));
    let credentials = state.credentials.clone();
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn(contain_panics))
        .layer(axum::middleware::from_fn_with_state(credentials, auth::check))
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}

/// Reads a request body of at most `limit` bytes.
pub(crate) async fn read_body(
    headers: &axum::http::HeaderMap,
    body: axum::body::Body,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let Some(length) = declared.filter(|l| *l > limit as u64) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body has {length} bytes; this worker takes at most {limit}"),
        ));
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|e| bad_request(format!("cannot read the request body (at most {limit} bytes): {e}")))
}

/// Middleware: a request with a worker's request signature (`X-Wharf-Signature`) goes on marked
/// `SignedByMember` if the signature is right, and is refused otherwise; any other request goes
/// on as it is, for HTTP Basic and the handlers to judge.
async fn check_member_signature(
    State(signatures): State<MemberSignatures>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let carries = [crate::peer::REQUEST_SIGNATURE, crate::peer::REQUEST_SIGNATURE_ALGORITHM, crate::peer::SIGNED_AT]
        .iter()
        .any(|name| request.headers().contains_key(*name));
    if !carries {
        return next.run(request).await;
    }
    match signed_by_member(&signatures, request).await {
        Ok(request) => next.run(request).await,
        Err(refusal) => refusal,
    }
}

async fn signed_by_member(
    signatures: &MemberSignatures,
    request: axum::extract::Request,
) -> Result<axum::extract::Request, Response> {
    let state = &signatures.state;
    let forbidden = |message: String| ApiError::new(StatusCode::FORBIDDEN, message).into_response();
    let Some(distributed) = &state.herder.worker_config().distributed else {
        return Err(forbidden(
            "This request carries a signature of a cluster's worker, and this worker is standalone".into(),
        ));
    };
    let (parts, body) = request.into_parts();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let signature = crate::peer::RequestSignature::read(
        &distributed.verification_algorithms,
        header(crate::peer::REQUEST_SIGNATURE_ALGORITHM),
        header(crate::peer::REQUEST_SIGNATURE),
        header(crate::peer::SIGNED_AT),
        crate::peer::now_ms(),
        distributed.signature_max_skew,
    )
    .map_err(|refusal| signature_refusal(distributed, refusal).into_response())?;
    let Some(key) = state.herder.snapshot().session_key else { return Err(no_session_key().into_response()) };
    let Some(_reading) = signatures.reading.permit().await else {
        return Err(signatures.reading.busy("requests signed by other workers"));
    };
    let read = tokio::time::timeout(SIGNED_BODY_WAIT, read_body(&parts.headers, body, crate::peer::MAX_REQUEST_BODY));
    let body = match read.await {
        Ok(body) => body.map_err(IntoResponse::into_response)?,
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!("the body of this signed request did not arrive within {} s", SIGNED_BODY_WAIT.as_secs()),
            )
            .into_response())
        }
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    signature
        .verify(&key, parts.method.as_str(), path, &body)
        .map_err(|refusal| signature_refusal(distributed, refusal).into_response())?;
    let mut request = axum::extract::Request::from_parts(parts, axum::body::Body::from(body));
    request.extensions_mut().insert(SignedByMember);
    Ok(request)
}

/// A panic while answering (a bug) fails that request with a 500 and a message; the worker goes
/// on serving the next one.
async fn contain_panics(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let path = request.uri().path().to_string();
    match tokio::spawn(next.run(request)).await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!("answering {path} failed: {e}");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the worker failed while answering {path} ({e}); its log has the details"),
            )
            .into_response()
        }
    }
}

pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = entities::ErrorMessage { error_code: self.status.as_u16(), message: self.message };
        (self.status, Json(body)).into_response()
    }
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "HTTP 404 Not Found")
}

impl From<HerderError> for ApiError {
    fn from(e: HerderError) -> Self {
        let status = match &e {
            HerderError::NotFound(_) | HerderError::TaskNotFound(..) | HerderError::PluginNotFound(_) => {
                StatusCode::NOT_FOUND
            }
            HerderError::Conflict(_) => StatusCode::CONFLICT,
            HerderError::BadConfig(_) => StatusCode::BAD_REQUEST,
            HerderError::Store(_) | HerderError::Kafka(_) | HerderError::Plugin(_) | HerderError::Bug(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            HerderError::NotLeader(_) => StatusCode::CONFLICT,
            HerderError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError::new(status, e.to_string())
    }
}

/// Runs a herder call off the async runtime: stopping tasks waits for threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HerderError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("request handler failed: {e}")))?
        .map_err(ApiError::from)
}

pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, message)
}

impl From<entities::BadRequest> for ApiError {
    fn from(e: entities::BadRequest) -> Self {
        bad_request(e.0)
    }
}

async fn create_connector(State(state): State<Shared>, body: Bytes) -> Result<Response, ApiError> {
    let entities::CreateConnector { name, config, initial_state } = entities::CreateConnector::parse(&body)?;
    let herder = state.herder.clone();
    let n = name.clone();
    blocking(move || herder.create_connector(&n, config, initial_state)).await?;
    let info = info_json(&state, &name).unwrap_or(Value::Null);
    Ok((StatusCode::CREATED, [(header::LOCATION, format!("/connectors/{name}"))], Json(info)).into_response())
}

async fn put_connector_config(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let entities::ConfigBody(config) = entities::ConfigBody::parse(&body)?;
    let herder = state.herder.clone();
    let n = name.clone();
    let written = blocking(move || herder.put_connector(&n, config, true)).await?;
    let info = info_json(&state, &name).unwrap_or(Value::Null);
    let status = if written == Written::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(info)).into_response())
}

/// `PATCH /connectors/{name}/config`: the keys given change, those given as null go.
async fn patch_connector_config(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<entities::ConnectorInfo>, ApiError> {
    let entities::ConfigPatch(patch) = entities::ConfigPatch::parse(&body)?;
    let herder = state.herder.clone();
    let n = name.clone();
    blocking(move || herder.patch_connector(&n, patch)).await?;
    info(&state, &name).map(Json).ok_or_else(|| missing(&name))
}

async fn delete_connector(State(state): State<Shared>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    let herder = state.herder.clone();
    blocking(move || herder.delete_connector(&name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn set_state(state: Shared, name: String, target: TargetState) -> Result<StatusCode, ApiError> {
    let herder = state.herder.clone();
    blocking(move || herder.set_target_state(&name, target)).await?;
    Ok(StatusCode::ACCEPTED)
}

async fn pause(State(state): State<Shared>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    set_state(state, name, TargetState::Paused).await
}

async fn resume(State(state): State<Shared>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    set_state(state, name, TargetState::Started).await
}

/// Connect answers a stop with 204, a pause or resume with 202.
async fn stop(State(state): State<Shared>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    set_state(state, name, TargetState::Stopped).await.map(|_| StatusCode::NO_CONTENT)
}

/// Task configs generated by the worker that runs a connector, for the leader to write (an
/// internal route of the group, as in Kafka Connect).
async fn put_task_configs(
    State(state): State<Shared>,
    Path(name): Path<String>,
    signed: Option<axum::Extension<SignedByMember>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    check_member_request(&state, signed.is_some(), &headers, &body)?;
    let entities::TaskConfigs(tasks) = entities::TaskConfigs::parse(&body)?;
    let herder = state.herder.clone();
    blocking(move || herder.put_task_configs(&name, tasks)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Kafka Connect's internal `PUT /connectors/{name}/fence`: a worker whose exactly-once source
/// task is about to start asks the leader to fence the connector's earlier tasks. Signed by a
/// member, as task configs are.
async fn fence_zombies(
    State(state): State<Shared>,
    Path(name): Path<String>,
    signed: Option<axum::Extension<SignedByMember>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    check_member_request(&state, signed.is_some(), &headers, &body)?;
    let herder = state.herder.clone();
    blocking(move || herder.fence_zombies(&name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The 409 while the cluster has no session key to check signatures with.
fn no_session_key() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "The cluster has no session key yet to check this request's signature with; retry shortly",
    )
}

/// A refused signature as Kafka Connect words it, with what to do where there is something.
fn signature_refusal(
    distributed: &crate::config::worker::DistributedConfig,
    refusal: crate::peer::SignatureRefusal,
) -> ApiError {
    use crate::peer::SignatureRefusal;
    let forbidden = |message: String| ApiError::new(StatusCode::FORBIDDEN, message);
    match refusal {
        SignatureRefusal::Missing => forbidden(format!(
            "Internal request missing required signature: a worker signs it with {}, {} and {} together",
            crate::peer::REQUEST_SIGNATURE,
            crate::peer::REQUEST_SIGNATURE_ALGORITHM,
            crate::peer::SIGNED_AT
        )),
        SignatureRefusal::Invalid => forbidden(
            "Internal request contained invalid signature; if the cluster's session key changed just now, retry in a \
             few seconds"
                .into(),
        ),
        SignatureRefusal::Timestamp(given) => ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{} must be milliseconds since the epoch, not {given:?}", crate::peer::SIGNED_AT),
        ),
        SignatureRefusal::Stale { signed_at_ms, now_ms } => forbidden(format!(
            "Internal request signed at {signed_at_ms}, {} ms from this worker's clock ({now_ms}), more than \
             wharf.inter.worker.signature.max.skew.ms={}: a replayed request, or clocks that differ (synchronise \
             the workers' clocks)",
            now_ms.abs_diff(signed_at_ms),
            distributed.signature_max_skew.as_millis()
        )),
        SignatureRefusal::Algorithm(algorithm) => ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "This worker does not accept signatures made with {algorithm}; it accepts {} \
                 (inter.worker.verification.algorithms)",
                distributed.verification_algorithms.join(", ")
            ),
        ),
    }
}

/// Only a worker of the cluster may make the requests workers make of each other (task configs
/// for the leader, a fencing): its request is signed with the session key the leader distributed (`signed`: `check_member_signature` found a request
/// signature right), or, with `wharf.inter.worker.legacy.signatures`, carries Kafka Connect's
/// signature of the body alone, which a worker of an earlier release makes. A standalone worker
/// takes them from no one.
fn check_member_request(
    state: &RestState,
    signed: bool,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<(), ApiError> {
    let forbidden = |message: String| ApiError::new(StatusCode::FORBIDDEN, message);
    let Some(distributed) = &state.herder.worker_config().distributed else {
        return Err(forbidden(
            "This endpoint is for the workers of a cluster, which sign their requests to each other (task configs for \
             the leader, a fencing of a connector's earlier tasks); a standalone worker takes none"
                .into(),
        ));
    };
    if signed {
        return Ok(());
    }
    let Some(key) = state.herder.snapshot().session_key else { return Err(no_session_key()) };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (algorithm, signature) = (header(crate::peer::SIGNATURE_ALGORITHM), header(crate::peer::SIGNATURE));
    if algorithm.is_none() && signature.is_none() {
        return Err(signature_refusal(distributed, crate::peer::SignatureRefusal::Missing));
    }
    if !distributed.legacy_signatures {
        return Err(forbidden(format!(
            "Internal request contained invalid signature: {} signs the body alone, as workers of earlier releases \
             do, and this worker accepts that only with wharf.inter.worker.legacy.signatures=true (during a rolling \
             upgrade); workers of this release sign with {}",
            crate::peer::SIGNATURE,
            crate::peer::REQUEST_SIGNATURE
        )));
    }
    crate::peer::verify(&key, &distributed.verification_algorithms, algorithm, signature, body)
        .map_err(|refusal| signature_refusal(distributed, refusal))
}

/// Whether a request was passed on by another worker (and must be carried out here).
fn forwarded(request: &axum::extract::Request) -> bool {
    request.headers().contains_key(crate::peer::FORWARDED_BY)
}

/// Kafka Connect's shape: `{"offsets": [{"partition": {…}, "offset": {…}}]}`; a sink's
/// partitions are `{"kafka_topic", "kafka_partition"}` and its offsets `{"kafka_offset"}`.
async fn connector_offsets(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<entities::ConnectorOffsets>, ApiError> {
    let herder = state.herder.clone();
    let offsets = blocking(move || herder.connector_offsets(&name)).await?;
    let offsets = match offsets {
        ConnectorOffsets::Source(offsets) => offsets
            .iter()
            .map(|(partition, offset)| entities::ConnectorOffset {
                partition: map_to_json(partition),
                offset: map_to_json(offset),
            })
            .collect(),
        ConnectorOffsets::Sink(offsets) => offsets
            .into_iter()
            .map(|(topic, partition, offset)| entities::ConnectorOffset::of_sink(topic, partition, offset))
            .collect(),
    };
    Ok(Json(entities::ConnectorOffsets { offsets }))
}

/// `PATCH /connectors/{name}/offsets` with `{"offsets": [{"partition": {…}, "offset": {…} | null}]}`,
/// for a STOPPED connector; the entries are shaped as `GET` gives them for the connector's kind.
async fn alter_offsets(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<entities::Message>, ApiError> {
    let entities::AlterOffsets(entries) = entities::AlterOffsets::parse(&body)?;
    let change = match state.herder.connector_kind(&name)? {
        ConnectorKind::Source => OffsetsChange::Source(source_offset_changes(&entries)?),
        ConnectorKind::Sink => OffsetsChange::Sink(sink_offset_changes(&name, &entries)?),
    };
    let herder = state.herder.clone();
    let message = blocking(move || herder.change_offsets(&name, change)).await?;
    Ok(Json(entities::Message { message }))
}

fn source_offset_changes(entries: &[entities::OffsetEntry]) -> Result<Vec<(OffsetMap, Option<OffsetMap>)>, ApiError> {
    let parse = |v: &Value, what: &str| {
        map_from_json(v).ok_or_else(|| {
            bad_request(format!(
                "a source {what} must be a JSON object of strings, numbers, booleans or nulls, not {v}"
            ))
        })
    };
    entries
        .iter()
        .map(|entities::OffsetEntry { partition, offset }| {
            Ok((parse(partition, "partition")?, offset.as_ref().map(|o| parse(o, "offset")).transpose()?))
        })
        .collect()
}

fn sink_offset_changes(name: &str, entries: &[entities::OffsetEntry]) -> Result<Vec<(String, i32, i64)>, ApiError> {
    entries
        .iter()
        .map(|entities::OffsetEntry { partition, offset }| {
            let topic = partition["kafka_topic"].as_str();
            let number = partition["kafka_partition"].as_i64().and_then(|p| i32::try_from(p).ok());
            let (Some(topic), Some(number)) = (topic, number) else {
                return Err(bad_request(format!(
                    "a sink partition must look like {{\"kafka_topic\": \"name\", \"kafka_partition\": 0}}, not {partition}"
                )));
            };
            let Some(offset) = offset else {
                return Err(bad_request(format!(
                    "forgetting the offset of one partition of a sink ({topic}-{number}) is not supported; give an \
                     offset, or reset them all with DELETE /connectors/{name}/offsets"
                )));
            };
            let Some(value) = offset["kafka_offset"].as_i64().filter(|o| *o >= 0) else {
                return Err(bad_request(format!(
                    "a sink offset must look like {{\"kafka_offset\": 42}} (not negative), not {offset}"
                )));
            };
            Ok((topic.to_string(), number, value))
        })
        .collect()
}

/// `DELETE /connectors/{name}/offsets`, for a STOPPED connector.
async fn reset_offsets(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<entities::Message>, ApiError> {
    let herder = state.herder.clone();
    let message = blocking(move || herder.change_offsets(&name, OffsetsChange::Reset)).await?;
    Ok(Json(entities::Message { message }))
}

/// `includeTasks` and `onlyFailed` of `POST /connectors/{name}/restart`.
#[derive(Deserialize)]
struct RestartQuery {
    #[serde(rename = "includeTasks")]
    include_tasks: Option<String>,
    #[serde(rename = "onlyFailed")]
    only_failed: Option<String>,
}

fn flag(name: &str, value: Option<&str>) -> Result<bool, ApiError> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(bad_request(format!("{name} must be true or false, not \"{other}\""))),
    }
}

/// Kafka Connect's restart: without `includeTasks` and `onlyFailed`, the connector only, answered
/// 204 once done; with either, the connector and/or tasks they pick (with `onlyFailed`, only
/// FAILED ones), answered 202 at once with the connector's status, RESTARTING for what restarts.
async fn restart_connector(
    State(state): State<Shared>,
    Path(name): Path<String>,
    Query(query): Query<RestartQuery>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let restart = RestartRequest {
        include_tasks: flag("includeTasks", query.include_tasks.as_deref())?,
        only_failed: flag("onlyFailed", query.only_failed.as_deref())?,
    };
    if let (Some(membership), false) = (state.herder.membership(), forwarded(&request)) {
        match membership.connector_owner(&name) {
            Some(owner) if owner.worker_id != state.herder.worker_id() => {
                return Ok(forward::pass_on(&state, request, &owner.url).await);
            }
            Some(_) => {}
            None if !state.herder.snapshot().connectors.contains_key(&name) => {
                return Err(HerderError::NotFound(name).into());
            }
            None => return Err(unowned(format!("connector {name}"))),
        }
    }
    if restart == RestartRequest::default() {
        let herder = state.herder.clone();
        blocking(move || herder.restart_connector(&name)).await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let plan = state.herder.restart_plan(&name, restart)?;
    let mut body = status(&state, &name)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("Status for connector {name} not found")))?;
    if plan.connector {
        body.connector.state = wharf_connect::model::State::Restarting;
    }
    for task in body.tasks.iter_mut().filter(|t| plan.tasks.contains(&t.id)) {
        task.state.state = wharf_connect::model::State::Restarting;
    }
    // Carried out after the answer, as Kafka Connect does.
    tokio::spawn(carry_out_restart(state.clone(), name, plan));
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

async fn carry_out_restart(state: Shared, name: String, plan: RestartPlan) {
    if plan.connector {
        let herder = state.herder.clone();
        let n = name.clone();
        if let Err(e) = blocking(move || herder.restart_connector(&n)).await {
            tracing::warn!("restarting connector {name}: {}", e.message);
        }
    }
    let me = state.herder.worker_id().to_string();
    let membership = state.herder.membership();
    for task in plan.tasks {
        let id = wharf_connect::model::TaskId::new(&name, task);
        let owner = membership.as_ref().and_then(|m| m.task_owner(&id));
        match owner {
            Some(owner) if owner.worker_id != me => {
                if let Err(e) = forward::restart_task_on(&state, &owner.url, &name, task).await {
                    tracing::warn!("restarting task {task} of connector {name}: {e}");
                }
            }
            None if membership.is_some() => {
                tracing::warn!("restarting task {task} of connector {name}: no worker runs it at the moment")
            }
            _ => {
                let herder = state.herder.clone();
                let n = name.clone();
                if let Err(e) = blocking(move || herder.restart_task(&n, task)).await {
                    tracing::warn!("restarting task {task} of connector {name}: {}", e.message);
                }
            }
        }
    }
}

/// 409 for work that no worker runs at the moment (its worker left and the group has not
/// moved the work yet).
fn unowned(what: String) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "Cannot complete the request now: {what} is not assigned to any worker at the moment (a worker left \
             the group, or a rebalance is in progress). Retry in a few seconds"
        ),
    )
}

async fn restart_task(
    State(state): State<Shared>,
    Path((name, task)): Path<(String, String)>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let task: u32 = task.parse().map_err(|_| bad_request(format!("task id \"{task}\" is not a number")))?;
    if let (Some(membership), false) = (state.herder.membership(), forwarded(&request)) {
        let id = wharf_connect::model::TaskId::new(&name, task);
        match membership.task_owner(&id) {
            Some(owner) if owner.worker_id != state.herder.worker_id() => {
                return Ok(forward::pass_on(&state, request, &owner.url).await);
            }
            Some(_) => {}
            None => {
                let snapshot = state.herder.snapshot();
                let Some(entry) = snapshot.connectors.get(&name) else {
                    return Err(HerderError::NotFound(name).into());
                };
                if entry.tasks.as_ref().is_none_or(|t| task as usize >= t.len()) {
                    return Err(HerderError::TaskNotFound(name, task).into());
                }
                return Err(unowned(format!("task {task} of connector {name}")));
            }
        }
    }
    let herder = state.herder.clone();
    blocking(move || herder.restart_task(&name, task)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /health` (KIP-1017): 200 when the worker takes requests, 503 while it starts, 500 when
/// its herder does not answer.
async fn health(State(state): State<Shared>) -> Response {
    let herder = state.herder.clone();
    let health = tokio::task::spawn_blocking(move || herder.health())
        .await
        .unwrap_or_else(|e| Health::Unhealthy(format!("the health check failed ({e})")));
    let (code, status, message) = match health {
        Health::Healthy => {
            (StatusCode::OK, "healthy", "Worker has completed startup and is ready to handle requests.".to_string())
        }
        Health::Starting(why) => {
            (StatusCode::SERVICE_UNAVAILABLE, "starting", format!("Worker is still starting up. {why}"))
        }
        Health::Unhealthy(why) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "unhealthy",
            format!("Worker was unable to handle this request and may be unable to handle other requests. {why}"),
        ),
    };
    (code, Json(entities::WorkerStatus { status, message })).into_response()
}

/// `GET /metrics`: the worker's metrics in Prometheus's text format, under Strimzi's names for
/// Kafka Connect's (`crate::metrics`).
async fn metrics(State(state): State<Shared>, headers: axum::http::HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = crate::metrics::exposition::Format::asked(accept);
    let herder = &state.herder;
    let snapshot = herder.snapshot();
    let connectors = snapshot
        .connectors
        .iter()
        .map(|(name, entry)| crate::metrics::ConnectorView {
            name: name.clone(),
            class: entry
                .config
                .iter()
                .find(|(k, _)| k == "connector.class")
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
            kind: herder.kind_of(entry),
            status: herder.stored_status(name),
        })
        .collect();
    let view = crate::metrics::WorkerView {
        worker_id: herder.worker_id().to_string(),
        version: entities::KAFKA_CONNECT_VERSION.to_string(),
        commit: option_env!("WHARF_COMMIT").unwrap_or("unknown").to_string(),
        started_unix_ms: state.started_unix_ms,
        distributed: herder.worker_config().distributed.is_some(),
        connectors,
        tasks: herder.task_metrics(),
        startups: herder.startups(),
        plugin_loads: herder.plugin_loads(),
        rebalance: herder.membership().map(|m| crate::metrics::RebalanceView {
            rebalancing: m.leader.is_none(),
            epoch: m.generation,
            leader: m.leader.map(|l| l.url),
            completed: m.rebalances.completed,
            total_ms: m.rebalances.total_ms,
            max_ms: m.rebalances.max_ms,
            last_completed: m.rebalances.last_completed,
            coordinator: crate::metrics::CoordinatorCalls {
                failed: m.rebalances.failed,
                joins: m.rebalances.joins,
                join_ms: m.rebalances.join_ms,
                syncs: m.rebalances.syncs,
                sync_ms: m.rebalances.sync_ms,
                heartbeats: m.rebalances.heartbeats,
                last_heartbeat: m.rebalances.last_heartbeat,
            },
        }),
    };
    ([(header::CONTENT_TYPE, format.content_type())], crate::metrics::render(&view, format)).into_response()
}

async fn root(State(state): State<Shared>) -> Json<entities::ServerInfo> {
    Json(entities::ServerInfo {
        version: entities::KAFKA_CONNECT_VERSION,
        commit: option_env!("WHARF_COMMIT").unwrap_or("unknown"),
        kafka_cluster_id: state.kafka_cluster_id.clone(),
        wharf_version: env!("CARGO_PKG_VERSION"),
    })
}

/// `GET /connectors`: the names; with `expand=status` and/or `expand=info` (repeated, as Connect
/// documents it, or comma-separated) each connector's status and info, by name. A connector
/// whose status or info is gone meanwhile is left out, as Connect leaves it out.
async fn list_connectors(State(state): State<Shared>, Query(query): Query<Vec<(String, String)>>) -> Response {
    let names: Vec<String> = state.herder.snapshot().connectors.into_keys().collect();
    let asked: Vec<&str> = query.iter().filter(|(k, _)| k == "expand").map(|(_, v)| v.as_str()).collect();
    if asked.is_empty() {
        return Json(names).into_response();
    }
    let expansions: Vec<&str> = asked.iter().flat_map(|v| v.split(',')).map(str::trim).collect();
    let mut out = BTreeMap::new();
    for name in names {
        let mut entry = entities::ConnectorExpansions::default();
        if expansions.contains(&"status") {
            let Some(status) = status(&state, &name) else { continue };
            entry.status = Some(status);
        }
        if expansions.contains(&"info") {
            let Some(info) = info(&state, &name) else { continue };
            entry.info = Some(info);
        }
        out.insert(name, entry);
    }
    Json(out).into_response()
}

fn missing(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("Connector {name} not found"))
}

fn info(state: &RestState, name: &str) -> Option<entities::ConnectorInfo> {
    let snapshot = state.herder.snapshot();
    let entry = snapshot.connectors.get(name)?;
    let tasks = entry.tasks.as_ref().map_or(0, Vec::len) as u32;
    Some(entities::ConnectorInfo {
        name: name.to_string(),
        config: entities::shown_config(&entry.config, &state.herder.secret_keys(&entry.config)),
        tasks: (0..tasks).map(|task| entities::ConnectorTaskId { connector: name.to_string(), task }).collect(),
        kind: entities::kind_name(state.herder.kind_of(entry)),
    })
}

/// `info` as JSON, or null when the connector is gone.
fn info_json(state: &RestState, name: &str) -> Option<Value> {
    info(state, name).and_then(|info| serde_json::to_value(info).ok())
}

async fn connector_info(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<entities::ConnectorInfo>, ApiError> {
    info(&state, &name).map(Json).ok_or_else(|| missing(&name))
}

async fn connector_config(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<entities::ConfigMap>, ApiError> {
    let snapshot = state.herder.snapshot();
    let entry = snapshot.connectors.get(&name).ok_or_else(|| missing(&name))?;
    Ok(Json(entities::shown_config(&entry.config, &state.herder.secret_keys(&entry.config))))
}

async fn connector_tasks(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Vec<entities::TaskInfo>>, ApiError> {
    let snapshot = state.herder.snapshot();
    let entry = snapshot.connectors.get(&name).ok_or_else(|| missing(&name))?;
    let secrets = state.herder.secret_keys(&entry.config);
    let tasks = entry
        .tasks
        .iter()
        .flatten()
        .zip(0..)
        .map(|(config, task)| entities::TaskInfo {
            id: entities::ConnectorTaskId { connector: name.clone(), task },
            config: entities::shown_config(config, &secrets),
        })
        .collect();
    Ok(Json(tasks))
}

/// The connector's status, none when it is gone.
fn status(state: &RestState, name: &str) -> Option<entities::ConnectorStateInfo> {
    if !state.herder.snapshot().connectors.contains_key(name) {
        return None;
    }
    state.herder.connector_status(name).map(entities::ConnectorStateInfo::from)
}

async fn connector_status(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<entities::ConnectorStateInfo>, ApiError> {
    status(&state, &name)
        .map(Json)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("No status found for connector {name}")))
}

/// `GET /connectors/{name}/tasks/{task}/status`.
async fn task_status(
    State(state): State<Shared>,
    Path((name, task)): Path<(String, String)>,
) -> Result<Json<entities::TaskState>, ApiError> {
    let not_found = || ApiError::new(StatusCode::NOT_FOUND, format!("No status found for task {name}-{task}"));
    let id: u32 = task.parse().map_err(|_| not_found())?;
    let status = status(&state, &name).ok_or_else(not_found)?;
    status.tasks.into_iter().find(|t| t.id == id).map(Json).ok_or_else(not_found)
}

/// `GET /connectors/{name}/topics`: the topics the connector's tasks used. As in Kafka Connect,
/// a connector that does not exist (or used none) has none.
async fn connector_topics(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<BTreeMap<String, entities::ActiveTopicsInfo>>, ApiError> {
    if !state.herder.worker_config().topic_tracking {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "Topic tracking is disabled."));
    }
    let topics = state.herder.connector_topics(&name);
    Ok(Json(BTreeMap::from([(name, entities::ActiveTopicsInfo { topics })])))
}

/// `PUT /connectors/{name}/topics/reset`: forgets them (202).
async fn reset_connector_topics(State(state): State<Shared>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    let config = state.herder.worker_config();
    if !config.topic_tracking {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "Topic tracking is disabled."));
    }
    if !config.topic_tracking_allow_reset {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "Topic tracking reset is disabled."));
    }
    state.herder.reset_connector_topics(&name);
    Ok(StatusCode::ACCEPTED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    #[test]
    fn the_status_code_follows_the_kind_of_failure() {
        let code = |e: HerderError| ApiError::from(e).status;
        assert_eq!(code(HerderError::BadConfig("tasks.max=0".into())), StatusCode::BAD_REQUEST);
        assert_eq!(code(HerderError::Kafka("the brokers did not answer".into())), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(code(HerderError::Plugin("validate trapped".into())), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(code(HerderError::NotFound("x".into())), StatusCode::NOT_FOUND);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any body, JSON or not, is read into its request or refused with a 400; nothing panics.
        #[test]
        fn no_request_body_makes_the_json_readers_panic(body in proptest::prelude::prop_oneof![
            proptest::prelude::any::<Vec<u8>>(),
            "\\{(\"[a-z.]{0,5}\": ?(\"[^\"]{0,4}\"|-?[0-9]{1,30}(\\.[0-9]+)?(e[0-9]{1,4})?|true|null|\\[\\]|\\{\\}),?){0,4}\\}"
                .prop_map(String::into_bytes),
        ]) {
            let _ = entities::ConfigBody::parse(&body);
            let _ = entities::CreateConnector::parse(&body);
            let _ = entities::TaskConfigs::parse(&body);
            let _ = entities::AlterOffsets::parse(&body);
        }
    }
}
