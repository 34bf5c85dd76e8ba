//! A standalone worker: connectors come from properties files at launch, source offsets live in
//! a local file, configs and statuses in memory.

use std::sync::Arc;

use anyhow::{Context, Result};

use super::{self as serve, OnReady, Stores};
use crate::config::{ConnectorConfig, WorkerConfig};
use crate::storage::{FileOffsetStore, MemoryConfigStore, MemoryStatusStore};

pub async fn run(config: WorkerConfig, connectors: Vec<ConnectorConfig>, on_ready: Option<OnReady>) -> Result<()> {
    let offsets_path =
        config.offset_storage_file.clone().context("offset.storage.file.filename is required in standalone mode")?;
    let open_stores: serve::OpenStores = Box::new(move |_config| {
        Box::pin(async move {
            Ok(Stores {
                config: Arc::new(MemoryConfigStore::default()),
                offsets: Arc::new(FileOffsetStore::open(&offsets_path)?),
                status: Arc::new(MemoryStatusStore::default()),
                cluster: None,
            })
        })
    });
    serve::run(config, open_stores, connectors, on_ready).await
}
