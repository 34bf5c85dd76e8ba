//! The REST API, in Kafka Connect's shapes. Errors are `{"error_code", "message"}`.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::runtime::records::ConnectorKind;
use crate::storage::status::ConnectorStatus;
use crate::worker::Worker;

pub struct RestState {
    pub worker: Arc<Worker>,
    pub kafka_cluster_id: String,
}

type Shared = Arc<RestState>;

pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/connectors", get(list_connectors).post(not_yet))
        .route("/connectors/{name}", get(connector_info).delete(not_yet))
        .route(
            "/connectors/{name}/config",
            get(connector_config).put(not_yet),
        )
        .route("/connectors/{name}/status", get(connector_status))
        .route("/connectors/{name}/tasks", get(connector_tasks))
        .route("/connector-plugins", get(list_plugins))
        .fallback(not_found)
        .with_state(state)
}

pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error_code": self.status.as_u16(), "message": self.message});
        (self.status, Json(body)).into_response()
    }
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "HTTP 404 Not Found")
}

async fn not_yet() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "changing connectors over REST is not available yet; a standalone worker takes its \
         connectors as properties files on its command line",
    )
}

async fn root(State(state): State<Shared>) -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": option_env!("WHARF_COMMIT").unwrap_or("unknown"),
        "kafka_cluster_id": state.kafka_cluster_id,
    }))
}

#[derive(Deserialize)]
struct ListQuery {
    expand: Option<String>,
}

async fn list_connectors(
    State(state): State<Shared>,
    Query(query): Query<ListQuery>,
) -> Json<Value> {
    let names = state.worker.connector_names();
    match query.expand.as_deref() {
        Some(expand) => {
            let expansions: Vec<&str> = expand.split(',').collect();
            let mut out = Map::new();
            for name in names {
                let mut entry = Map::new();
                if expansions.contains(&"status") {
                    entry.insert(
                        "status".into(),
                        status_json(&state, &name).unwrap_or(Value::Null),
                    );
                }
                if expansions.contains(&"info") {
                    entry.insert(
                        "info".into(),
                        info_json(&state, &name).unwrap_or(Value::Null),
                    );
                }
                out.insert(name, Value::Object(entry));
            }
            Json(Value::Object(out))
        }
        None => Json(json!(names)),
    }
}

fn kind_name(kind: ConnectorKind) -> &'static str {
    match kind {
        ConnectorKind::Source => "source",
        ConnectorKind::Sink => "sink",
    }
}

fn config_json(pairs: &[(String, String)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn missing(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("Connector {name} not found"))
}

fn info_json(state: &RestState, name: &str) -> Option<Value> {
    let (config, kind, tasks) = state.worker.connector_info(name)?;
    let task_ids: Vec<Value> = (0..tasks.len())
        .map(|i| json!({"connector": name, "task": i}))
        .collect();
    Some(json!({
        "name": name,
        "config": config_json(&config.raw),
        "tasks": task_ids,
        "type": kind_name(kind),
    }))
}

async fn connector_info(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    info_json(&state, &name)
        .map(Json)
        .ok_or_else(|| missing(&name))
}

async fn connector_config(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (config, _, _) = state
        .worker
        .connector_info(&name)
        .ok_or_else(|| missing(&name))?;
    Ok(Json(config_json(&config.raw)))
}

async fn connector_tasks(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (_, _, tasks) = state
        .worker
        .connector_info(&name)
        .ok_or_else(|| missing(&name))?;
    let tasks: Vec<Value> = tasks
        .iter()
        .enumerate()
        .map(|(i, config)| json!({"id": {"connector": name, "task": i}, "config": config_json(config)}))
        .collect();
    Ok(Json(json!(tasks)))
}

fn status_body(status: ConnectorStatus) -> Value {
    let tasks: Vec<Value> = status
        .tasks
        .iter()
        .map(|(id, task)| {
            let mut entry = json!({"id": id, "state": task.state, "worker_id": task.worker_id});
            if let Some(trace) = &task.trace {
                entry["trace"] = json!(trace);
            }
            entry
        })
        .collect();
    let mut connector =
        json!({"state": status.connector.state, "worker_id": status.connector.worker_id});
    if let Some(trace) = &status.connector.trace {
        connector["trace"] = json!(trace);
    }
    json!({
        "name": status.name,
        "connector": connector,
        "tasks": tasks,
        "type": status.kind.map(kind_name).unwrap_or("unknown"),
    })
}

fn status_json(state: &RestState, name: &str) -> Option<Value> {
    state.worker.status.get(name).map(status_body)
}

async fn connector_status(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    status_json(&state, &name).map(Json).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("No status found for connector {name}"),
        )
    })
}

async fn list_plugins(State(state): State<Shared>) -> Json<Value> {
    let plugins: Vec<Value> = state
        .worker
        .registry
        .plugins()
        .map(|p| json!({"class": p.info.name, "type": kind_name(p.info.kind), "version": p.info.version}))
        .collect();
    Json(json!(plugins))
}
