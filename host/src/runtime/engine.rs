//! The wasmtime engine shared by every plugin: compilation with an on-disk cache, the linker
//! with WASI and the `host` interface, and the epoch clock behind call deadlines.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

use super::bindings::wit_host;
use super::sandbox::TaskState;

/// How often the epoch advances. Call deadlines are rounded up to whole ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

pub struct Runtime {
    pub engine: Engine,
    /// Whether calls run under `wasm.call.timeout.ms` (epoch interruption). Always on in a
    /// worker; off only to measure what the deadlines cost.
    pub call_deadlines: bool,
    pub linker: Linker<TaskState>,
    cache_dir: PathBuf,
    _ticker: Arc<EpochTicker>,
}

/// Advances the engine's epoch every `EPOCH_TICK` until dropped.
struct EpochTicker {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How a component came to be loaded, for logs and measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedFrom {
    Cache,
    Compiled,
}

impl Runtime {
    pub fn new(cache_dir: PathBuf) -> Result<Self> {
        Self::with_deadlines(cache_dir, true)
    }

    /// A runtime whose calls may run without deadlines: for measuring their cost, never for
    /// running connectors.
    pub fn with_deadlines(cache_dir: PathBuf, call_deadlines: bool) -> Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(call_deadlines);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        let engine =
            Engine::new(&config).map_err(anyhow::Error::from).context("cannot start the WebAssembly engine")?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(anyhow::Error::from).context("cannot link WASI")?;
        // Linked for every plugin so that toolchains that import it by default load; requests
        // are refused unless the connector grants them (`wasm.http.allow`).
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)
            .map_err(anyhow::Error::from)
            .context("cannot link wasi:http")?;
        wit_host::add_to_linker::<TaskState, HasSelf<TaskState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)
            .context("cannot link the wharf:connector/host interface")?;

        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ticker = Arc::new(EpochTicker { stop: stop.clone() });
        let weak_engine = engine.weak();
        std::thread::Builder::new()
            .name("wharf-epoch".into())
            .spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match weak_engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => return,
                    }
                }
            })
            .context("cannot start the epoch thread")?;

        Ok(Runtime { engine, call_deadlines, linker, cache_dir, _ticker: ticker })
    }

    /// Epoch ticks that cover `timeout`.
    pub fn deadline_ticks(timeout: Duration) -> u64 {
        (timeout.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64 + 1
    }

    /// Loads a component, from the compile cache when this exact file was compiled before by
    /// this exact engine, compiling and caching it otherwise.
    pub fn load_component(&self, path: &Path) -> Result<(Component, LoadedFrom)> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let cached = self.cache_dir.join(format!("{}.cwasm", self.cache_key(&bytes)));
        if cached.exists() {
            // SAFETY: the file was written by `Component::serialize` of an engine with the same
            // compatibility hash (it is part of the name), into a folder only Wharf writes.
            match unsafe { Component::deserialize_file(&self.engine, &cached) } {
                Ok(component) => return Ok((component, LoadedFrom::Cache)),
                Err(e) => tracing::warn!(
                    "ignoring unreadable compiled cache entry {}: {e:#}; compiling again",
                    cached.display()
                ),
            }
        }
        let started = Instant::now();
        let component = Component::new(&self.engine, &bytes)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("{} is not a valid WebAssembly component", path.display()))?;
        tracing::debug!("compiled {} in {:?}", path.display(), started.elapsed());
        if let Err(e) = self.store_in_cache(&component, &cached) {
            tracing::warn!(
                "cannot cache compiled {} in {}: {e:#}; it will be compiled again next start",
                path.display(),
                self.cache_dir.display()
            );
        }
        Ok((component, LoadedFrom::Compiled))
    }

    fn cache_key(&self, bytes: &[u8]) -> String {
        let mut engine_hash = DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut engine_hash);
        let file_hash = Sha256::digest(bytes);
        let hex: String = file_hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}-{:016x}", engine_hash.finish())
    }

    fn store_in_cache(&self, component: &Component, target: &Path) -> Result<()> {
        std::fs::create_dir_all(&self.cache_dir)?;
        let serialized = component.serialize()?;
        // Write then rename, so a reader never sees half a file.
        let temp = target.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, serialized)?;
        std::fs::rename(&temp, target)?;
        Ok(())
    }
}
