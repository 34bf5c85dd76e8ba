//! `/admin/loggers`: the worker's log levels, read and changed while it runs (`crate::logging`),
//! in Kafka Connect's shapes and status codes.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::{bad_request, ApiError, Shared};
use crate::logging::{LevelError, LoggerLevel, Loggers};

/// One logger's level: `{"level": "INFO", "last_modified": null}`.
#[derive(Serialize)]
pub(super) struct LoggerLevelInfo {
    level: String,
    last_modified: Option<i64>,
}

impl From<LoggerLevel> for LoggerLevelInfo {
    fn from(l: LoggerLevel) -> Self {
        LoggerLevelInfo { level: l.level, last_modified: l.last_modified }
    }
}

#[derive(Deserialize)]
pub(super) struct ScopeQuery {
    scope: Option<String>,
}

fn loggers() -> Result<&'static Loggers, ApiError> {
    crate::logging::global().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "this process's log levels cannot be changed: it runs without a worker's log setup",
        )
    })
}

/// `GET /admin/loggers`: every logger with a level of its own, and `root`.
pub(super) async fn list() -> Result<Json<BTreeMap<String, LoggerLevelInfo>>, ApiError> {
    Ok(Json(loggers()?.all().into_iter().map(|(name, level)| (name, level.into())).collect()))
}

/// `GET /admin/loggers/{logger}`.
pub(super) async fn get(Path(name): Path<String>) -> Result<Json<LoggerLevelInfo>, ApiError> {
    loggers()?
        .level(&name)
        .map(|level| Json(level.into()))
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("Logger {name} not found.")))
}

/// `PUT /admin/loggers/{logger}` with `{"level": "DEBUG"}`: the logger and the loggers below it.
/// `scope=worker` (the default) answers the names of the loggers whose level changed;
/// `scope=cluster` sets it on every worker of the cluster and answers 204.
pub(super) async fn set(
    State(state): State<Shared>,
    Path(name): Path<String>,
    Query(query): Query<ScopeQuery>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let loggers = loggers()?;
    let body: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| bad_request(format!("the body is not JSON ({e}): send {{\"level\": \"DEBUG\"}}")))?;
    let Some(level) = body.get("level").and_then(|l| l.as_str()).map(str::to_string) else {
        return Err(bad_request("Desired 'level' parameter was not specified in request."));
    };
    let scope = query.scope.as_deref().unwrap_or("worker").to_ascii_lowercase();
    if scope == "cluster" {
        crate::logging::check_level(&level).map_err(refusal)?;
        let herder = state.herder.clone();
        super::blocking(move || herder.set_cluster_logger_level(&name, &level)).await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if scope != "worker" {
        tracing::warn!("PUT /admin/loggers/{name} asked for scope={scope}, which is not worker or cluster; setting it on this worker");
    }
    let changed = loggers.set(&name, &level, wharf_connect::model::now_ms()).map_err(refusal)?;
    Ok(Json(changed).into_response())
}

fn refusal(e: LevelError) -> ApiError {
    match e {
        // Kafka Connect answers 404 to a level it does not know.
        LevelError::UnknownLevel(_) => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
        LevelError::TooMany => bad_request(e.to_string()),
        LevelError::Filter(_) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
