//! What standalone and distributed workers share: the Kafka check, the REST listener, the plugin
//! registry, the worker and herder, and an orderly stop on SIGTERM or Ctrl-C.
//!
//! `run` starts a worker of either flavour and stops it in order. `standalone` takes connectors
//! from properties files and keeps offsets in a file; `distributed` keeps everything in the three
//! internal topics and joins the group (`GroupParticipant`: what the group member asks of this
//! worker). `tls` serves the REST API over HTTPS and makes the client that calls other workers.
//! This is wiring: none of the modules it wires uses it.

pub mod distributed;
pub mod standalone;
pub mod tls;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::cluster::member::MemberHandle;
use crate::cluster::ClusterView;
use crate::config::{ConnectorConfig, WorkerConfig};
use crate::herder::Herder;
use crate::kafka;
use crate::rest::{self, RestState};
use crate::runtime::{PluginRegistry, Runtime};
use crate::storage::{ConfigStore, OffsetStore, StatusStore};
use crate::worker::Worker;

/// What a caller may print once everything runs (used by `wharf dev`).
pub type OnReady = Box<dyn FnOnce(&Worker) + Send>;

/// The stores of one flavour of worker.
pub struct Stores {
    pub config: Arc<dyn ConfigStore>,
    pub offsets: Arc<dyn OffsetStore>,
    pub status: Arc<dyn StatusStore>,
    /// A distributed worker's place in its group, and how it joins once the herder exists.
    pub cluster: Option<(Arc<ClusterView>, JoinGroup)>,
}

/// Joins the group; the handle leaves it.
pub type JoinGroup = Box<dyn FnOnce(Arc<Herder>) -> std::io::Result<MemberHandle> + Send>;

pub type OpenStores = Box<dyn FnOnce(WorkerConfig) -> Pin<Box<dyn Future<Output = Result<Stores>> + Send>> + Send>;

/// Runs a worker until SIGTERM or Ctrl-C. `open_stores` runs once Kafka answered; `connectors`
/// are created (as if over REST) once the worker runs.
pub async fn run(
    config: WorkerConfig,
    open_stores: OpenStores,
    connectors: Vec<ConnectorConfig>,
    on_ready: Option<OnReady>,
) -> Result<()> {
    let started = Instant::now();
    let started_at = started_unix_ms();
    // The REST API's TLS keys and credentials are read before anything starts: a bad file stops
    // the worker.
    let rest_tls = match &config.rest_tls {
        None => None,
        Some(settings) => {
            let server = tls::server_config(settings).map_err(|m| anyhow::anyhow!(m))?;
            crate::peer::use_tls(tls::peer_client(settings).map_err(|m| anyhow::anyhow!(m))?);
            Some(server)
        }
    };
    let credentials = match &config.rest_credentials_file {
        None => None,
        Some(path) => {
            let credentials = rest::auth::Credentials::load(
                path,
                "wharf.rest.basic.auth.credentials.file",
                config.rest_max_concurrent_password_checks,
            )
            .map_err(|message| anyhow::anyhow!(message))?;
            tracing::info!(
                "REST requests need HTTP Basic credentials of the {} user(s) in {}",
                credentials.users(),
                path.display()
            );
            Some(Arc::new(credentials))
        }
    };
    tracing::info!("connecting to Kafka at {}", config.bootstrap_servers);
    let check = config.clone();
    let cluster_id = tokio::task::spawn_blocking(move || kafka::cluster_id(&check)).await??;
    tracing::info!("Kafka cluster {cluster_id} answers");

    let listener = tokio::net::TcpListener::bind(&config.rest_bind).await.with_context(|| {
        format!(
            "cannot listen on {} (listeners): is another worker running there? Choose another port \
             with listeners=http://HOST:PORT",
            config.rest_bind
        )
    })?;

    // `metrics.listeners`: bound now, so that a port in use stops the worker before it starts.
    let metrics_listener = match &config.metrics_listener {
        None => None,
        Some((bind, metrics_tls)) => {
            let listener = tokio::net::TcpListener::bind(bind).await.with_context(|| {
                format!("cannot listen on {bind} (metrics.listeners): is something else there? Choose another port")
            })?;
            let server = match metrics_tls {
                None => None,
                Some(settings) => Some(tls::server_config(settings).map_err(|m| anyhow::anyhow!(m))?),
            };
            Some((listener, server))
        }
    };

    let stores = open_stores(config.clone()).await?;

    let cache_dir = config.compile_cache_dir.clone();
    let plugin_path = config.plugin_path.clone();
    let scan_interval = config.plugin_scan_interval;
    let compile_threads = config.compile_threads;
    // Asks the herder's thread and the plugin scan to stop once the REST server has.
    let stop_loop = Arc::new(crate::sync::Stop::default());
    let stop_scan = stop_loop.clone();
    let (runtime, registry) = tokio::task::spawn_blocking(move || -> Result<_> {
        let runtime = Arc::new(Runtime::new(cache_dir)?);
        let registry = PluginRegistry::scan(&runtime, &plugin_path, compile_threads);
        registry
            .watch(runtime.clone(), scan_interval, stop_scan)
            .map_err(|e| anyhow::anyhow!("the system could not start the plugin scan thread: {e}"))?;
        Ok((runtime, registry))
    })
    .await??;
    let compiling = registry.compiling().len();
    match compiling {
        0 => tracing::info!("plugins available: {}", registry.names().join(", ")),
        n => tracing::info!(
            "plugins available now: {}; {n} plugin file(s) compiling in the background",
            match registry.names() {
                names if names.is_empty() => "none yet".to_string(),
                names => names.join(", "),
            }
        ),
    }

    let worker = Arc::new(Worker::new(config, runtime, registry, stores.offsets, stores.status));
    let (view, join) = match stores.cluster {
        Some((view, join)) => (Some(view), Some(join)),
        None => (None, None),
    };
    let (herder, herder_loop) = Herder::new(worker.clone(), stores.config, view);
    let listening = Arc::downgrade(&herder);
    worker.registry().on_change(move || {
        if let Some(herder) = listening.upgrade() {
            herder.plugins_changed();
        }
    });
    let starter = herder.clone();
    // The herder's thread reconciles first thing once it runs.
    let start_result = tokio::task::spawn_blocking(move || -> Result<()> {
        for connector in connectors {
            starter.put_connector_at_start(&connector.name, connector.raw.clone())?;
        }
        Ok(())
    })
    .await?;
    if let Err(e) = start_result {
        stop(worker).await;
        return Err(e);
    }
    let herder_loop = herder_loop
        .spawn(stop_loop.clone())
        .map_err(|e| anyhow::anyhow!("the system could not start the herder thread: {e}"))?;
    let member = join
        .map(|join| join(herder.clone()))
        .transpose()
        .map_err(|e| anyhow::anyhow!("the system could not start the group membership thread: {e}"))?;

    let rest_state = Arc::new(RestState {
        herder: herder.clone(),
        kafka_cluster_id: cluster_id,
        credentials,
        started_unix_ms: started_at,
    });
    if let Some((listener, server)) = metrics_listener {
        serve_metrics(listener, server, rest::metrics_router(rest_state.clone()))?;
    }
    let app = rest::router(rest_state);
    tracing::info!(
        "worker {} ready in {:.0} ms; REST API on {}://{}",
        worker.id(),
        started.elapsed().as_secs_f64() * 1000.0,
        worker.config().rest_scheme(),
        worker.config().rest_bind
    );
    if let Some(on_ready) = on_ready {
        on_ready(&worker);
    }
    // Each request knows its client's address (the back-off of failed password checks).
    let app = app.into_make_service_with_connect_info::<rest::auth::ClientAddress>();
    match rest_tls {
        None => axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await,
        Some(server) => {
            let listener = tls::TlsListener::new(listener, server)?;
            axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await
        }
    }
    .context("the REST server stopped unexpectedly")?;
    stop_loop.stop();
    herder.wake();
    let _ = tokio::task::spawn_blocking(move || herder_loop.join()).await;
    stop(worker.clone()).await;
    // Leave only once the tasks stopped, so that no task runs twice when the group moves them.
    if let Some(member) = member {
        let group = worker.config().distributed.as_ref().map(|d| d.group_id.clone()).unwrap_or_default();
        let _ = tokio::task::spawn_blocking(move || member.leave(&group, Duration::from_secs(10))).await;
    }
    Ok(())
}

async fn stop(worker: Arc<Worker>) {
    tracing::info!(
        "stopping: flushing source offsets and committing sink offsets (at most task.shutdown.graceful.timeout.ms={})",
        worker.config().task_shutdown_graceful_timeout.as_millis()
    );
    let stopping = worker.clone();
    let _ = tokio::task::spawn_blocking(move || stopping.stop_all()).await;
    tracing::info!("worker stopped");
}

/// Serves `GET /metrics` on the listener of `metrics.listeners`, on a task of its own that ends with
/// the process.
fn serve_metrics(
    listener: tokio::net::TcpListener,
    server: Option<Arc<rustls::ServerConfig>>,
    app: axum::Router,
) -> Result<()> {
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let scheme = if server.is_some() { "https" } else { "http" };
    let app = app.into_make_service_with_connect_info::<rest::auth::ClientAddress>();
    match server {
        None => {
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!("the metrics listener stopped: {e}");
                }
            });
        }
        Some(server) => {
            let listener = tls::TlsListener::new(listener, server)?;
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!("the metrics listener stopped: {e}");
                }
            });
        }
    }
    tracing::info!("metrics on {scheme}://{address}/metrics (metrics.listeners)");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => tracing::info!("interrupted (Ctrl-C)"),
        _ = term => tracing::info!("received SIGTERM"),
    }
}

/// Now, in milliseconds since the epoch: when the worker started, for its metrics.
fn started_unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
