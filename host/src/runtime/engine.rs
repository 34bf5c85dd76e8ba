//! The wasmtime engine shared by every plugin: compilation with an on-disk cache, the linker
//! with WASI and the `host` interface, and the epoch clock behind call deadlines.

use std::collections::hash_map::DefaultHasher;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

use super::bindings::{wit_errant, wit_host, wit_progress, wit_transactions};
use super::sandbox::{GrantedLookup, TaskState};

/// How often the epoch advances. Call deadlines are rounded up to whole ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Threads of the plugins' I/O runtime that run blocking WASI work (streamed file reads and
/// writes, name lookups, and every file system call when `wasm.fs.inline=false`). One stuck on a
/// file that never answers stays stuck, but its plugin call still ends at its deadline; at the
/// bound, further blocking work of every plugin waits for a free thread. With `wasm.fs.inline`
/// (the default) the other file system calls run on the task's thread: two hand-offs fewer per
/// call, and a call that a hung file system holds ends when the system answers.
pub const WASI_BLOCKING_THREADS: usize = 64;

/// The executable that compiles plugins in processes of their own (`wharf plugin compile`), set
/// by the `wharf` binary (`compile_in_processes_of`). Without it (the library in tests) plugins
/// compile in this process.
static COMPILER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// How long a compile process may take before it is killed and its file reported.
pub const COMPILE_TIMEOUT: Duration = Duration::from_secs(600);

/// The end of a compile process's error output kept for the report.
const COMPILER_OUTPUT_BYTES: usize = 8192;

/// Compile processes run at this niceness, below the worker's tasks and REST.
const COMPILER_NICENESS: i32 = 10;

/// Has `load_component_apart` compile in processes of `executable` (the `wharf` binary), so that
/// what compiling takes (hundreds of MiB for a large component, which the allocator keeps once
/// freed) never stays in the worker, and a compiler that fails on a file cannot take it down.
pub fn compile_in_processes_of(executable: PathBuf) {
    let _ = COMPILER.set(executable);
}

pub struct Runtime {
    pub engine: Engine,
    /// The engine's settings, for the short-lived engines that compile (`load_component`).
    config: Config,
    /// Whether calls run under `wasm.call.timeout.ms` (epoch interruption). Always on in a
    /// worker; off only to measure what the deadlines cost.
    pub call_deadlines: bool,
    pub linker: Linker<TaskState>,
    /// Drives what plugins wait for inside WASI (timers, sockets, wasi:http, blocking file work).
    /// Plugin calls themselves run on the calling thread (`PluginIo::block_on`), never on this
    /// runtime's threads.
    pub(crate) io: PluginIo,
    /// The compile cache, when it is a folder only this user can write; compiled code from a
    /// folder others can write would run as native code in this process.
    cache_dir: Option<PathBuf>,
    _ticker: Arc<EpochTicker>,
}

/// Advances the engine's epoch every `EPOCH_TICK` until dropped.
struct EpochTicker {
    stop: Arc<crate::sync::Stop>,
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.stop();
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
        Self::build(cache_dir, call_deadlines, wasmtime::OptLevel::Speed)
    }

    /// A runtime whose code generator optimises at `level`: for measuring what compiling costs
    /// at each level, never for running connectors.
    pub fn with_opt_level(cache_dir: PathBuf, level: wasmtime::OptLevel) -> Result<Self> {
        Self::build(cache_dir, true, level)
    }

    fn build(cache_dir: PathBuf, call_deadlines: bool, opt_level: wasmtime::OptLevel) -> Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(call_deadlines);
        config.cranelift_opt_level(opt_level);
        // Plugin calls are futures (see `bindings`); each runs on a stack of its own, kept by
        // the store between calls.
        config.async_stack_size(ASYNC_STACK_BYTES);
        let engine =
            Engine::new(&config).map_err(anyhow::Error::from).context("cannot start the WebAssembly engine")?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from).context("cannot link WASI")?;
        // Name lookups only of the granted hosts (`GrantedLookup`), in place of WASI's own.
        linker.allow_shadowing(true);
        wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::add_to_linker::<TaskState, GrantedLookup>(
            &mut linker,
            TaskState::granted_lookup,
        )
        .map_err(anyhow::Error::from)
        .context("cannot link wasi:sockets/ip-name-lookup")?;
        // New TCP sockets within the worker's socket budget, in place of WASI's own.
        wasmtime_wasi::p2::bindings::sockets::tcp_create_socket::add_to_linker::<TaskState, GrantedLookup>(
            &mut linker,
            TaskState::granted_lookup,
        )
        .map_err(anyhow::Error::from)
        .context("cannot link wasi:sockets/tcp-create-socket")?;
        linker.allow_shadowing(false);
        // Linked for every plugin so that toolchains that import it by default load; requests
        // are refused unless the connector grants them (`wasm.http.allow`).
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("cannot link wasi:http")?;
        // TLS over a plugin's own sockets, under its connector's policy (`runtime::tls`).
        let mut tls = wasmtime_wasi_tls::p2::LinkOptions::default();
        tls.tls(true);
        wasmtime_wasi_tls::p2::add_to_linker(&mut linker, &tls)
            .map_err(anyhow::Error::from)
            .context("cannot link wasi:tls")?;
        wit_host::add_to_linker::<TaskState, HasSelf<TaskState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)
            .context("cannot link the wharf:connector/host interface")?;
        wit_errant::add_to_linker::<TaskState, HasSelf<TaskState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)
            .context("cannot link the wharf:connector/errant-records interface")?;
        wit_progress::add_to_linker::<TaskState, HasSelf<TaskState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)
            .context("cannot link the wharf:connector/progress interface")?;
        wit_transactions::add_to_linker::<TaskState, HasSelf<TaskState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)
            .context("cannot link the wharf:connector/transaction-context interface")?;
        super::sandbox::link_metrics(&mut linker).context("cannot link the wharf:connector/metrics interface")?;

        let stop = Arc::new(crate::sync::Stop::default());
        let ticker = Arc::new(EpochTicker { stop: stop.clone() });
        let weak_engine = engine.weak();
        std::thread::Builder::new()
            .name("wharf-epoch".into())
            .spawn(move || {
                while !stop.sleep(EPOCH_TICK) {
                    match weak_engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => return,
                    }
                }
            })
            .context("cannot start the epoch thread")?;

        let cache_dir = match private_folder(&cache_dir) {
            Ok(()) => Some(cache_dir),
            Err(problem) => {
                tracing::warn!(
                    "not using the compile cache {}: {problem}; plugins are compiled at every start. Point \
                     wasm.cache.dir at a folder only this user can write",
                    cache_dir.display()
                );
                None
            }
        };
        let io = PluginIo::new()?;
        Ok(Runtime { engine, config, call_deadlines, linker, io, cache_dir, _ticker: ticker })
    }

    /// The compile cache in use; `None` when the configured folder is not private to this user.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// Epoch ticks that cover `timeout`.
    pub fn deadline_ticks(timeout: Duration) -> u64 {
        (timeout.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64 + 1
    }

    /// Loads a component, from the compile cache when this exact file was compiled before by
    /// this exact engine, compiling and caching it otherwise.
    pub fn load_component(&self, path: &Path) -> Result<(Component, LoadedFrom)> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let cached = self.cache_entry(&bytes);
        if let Some(component) = cached.as_deref().and_then(|c| self.load_cached(c)) {
            return Ok((component, LoadedFrom::Cache));
        }
        let started = Instant::now();
        let serialized =
            self.compile(&bytes).with_context(|| format!("{} is not a valid WebAssembly component", path.display()))?;
        tracing::debug!("compiled {} in {:?}", path.display(), started.elapsed());
        if let Some(cached) = &cached {
            match write_privately(&serialized, cached) {
                // Mapped from the cache file, the code and memory images are the page cache's,
                // not this process's private memory.
                Ok(()) => {
                    if let Some(mapped) = self.load_cached(cached) {
                        return Ok((mapped, LoadedFrom::Compiled));
                    }
                }
                Err(e) => tracing::warn!(
                    "cannot cache compiled {} as {}: {e:#}; it will be compiled again next start",
                    path.display(),
                    cached.display()
                ),
            }
        }
        // SAFETY: the bytes are what `compile` serialized a moment ago, with this engine's
        // settings.
        let component = unsafe { Component::deserialize(&self.engine, &serialized) }
            .map_err(anyhow::Error::from)
            .context("cannot load the code just compiled")?;
        Ok((component, LoadedFrom::Compiled))
    }

    /// Compiles a component on an engine of its own with this one's settings, so that its
    /// code generator goes when it is done: a code generator keeps the buffers it grew for the
    /// largest function it ever compiled (hundreds of MiB for an interpreter's), and this
    /// engine lives as long as the worker. The result loads in this engine.
    fn compile(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let compiler = Engine::new(&self.config).map_err(anyhow::Error::from).context("cannot start a compiler")?;
        let component = Component::new(&compiler, bytes).map_err(anyhow::Error::from)?;
        let serialized = component.serialize().map_err(anyhow::Error::from)?;
        Ok(serialized)
    }

    /// Like `load_component`, compiling in a process of its own (`compile_in_processes_of`)
    /// into the compile cache and mapping the result from there; in this process when there is
    /// no compiler executable or no usable cache.
    /// Also the cache entry it is mapped from, when it is.
    pub fn load_component_apart(&self, path: &Path) -> Result<(Component, LoadedFrom, Option<PathBuf>)> {
        let in_process = |runtime: &Self| runtime.load_component(path).map(|(c, from)| (c, from, None));
        let (Some(compiler), Some(dir)) = (COMPILER.get(), &self.cache_dir) else { return in_process(self) };
        if let Some((component, entry)) = self.cached_component(path)? {
            return Ok((component, LoadedFrom::Cache, Some(entry)));
        }
        compile_apart(compiler, dir, path)?;
        match self.cached_component(path)? {
            Some((component, entry)) => Ok((component, LoadedFrom::Compiled, Some(entry))),
            // Replaced meanwhile, or its entry not taken: compiled here, as without a cache.
            None => in_process(self),
        }
    }

    /// The component of `path` from the compile cache; `None` when it must be compiled.
    pub fn cached_component(&self, path: &Path) -> Result<Option<(Component, PathBuf)>> {
        if self.cache_dir.is_none() {
            return Ok(None);
        }
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(self.cache_entry(&bytes).and_then(|entry| self.load_cached(&entry).map(|component| (component, entry))))
    }

    /// Where the compiled code of a file with these bytes is kept, when there is a usable cache.
    fn cache_entry(&self, bytes: &[u8]) -> Option<PathBuf> {
        self.cache_dir.as_ref().map(|dir| dir.join(format!("{}.cwasm", self.cache_key(bytes))))
    }

    /// A cache entry's component, when there is a usable one.
    fn load_cached(&self, cached: &Path) -> Option<Component> {
        if !cached.exists() {
            return None;
        }
        if let Err(problem) = private_entry(cached) {
            tracing::warn!("ignoring compiled cache entry {}: {problem}; compiling again", cached.display());
            return None;
        }
        // SAFETY: the entry is a plain file of this user's that no one else may write, in a
        // folder only this user may write (both checked), so it was written by
        // `Component::serialize` of an engine with the same compatibility hash (part of its
        // name) or by this user on purpose. Its code and memory images are mapped from the
        // file, not copied: every task of a plugin shares them.
        match unsafe { Component::deserialize_file(&self.engine, cached) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!("ignoring unreadable compiled cache entry {}: {e:#}; compiling again", cached.display());
                None
            }
        }
    }

    fn cache_key(&self, bytes: &[u8]) -> String {
        let mut engine_hash = DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut engine_hash);
        let file_hash = Sha256::digest(bytes);
        let hex: String = file_hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}-{:016x}", engine_hash.finish())
    }
}

/// Runs `wharf plugin compile` on one file into `cache_dir`, at a lower priority, within
/// `COMPILE_TIMEOUT`; its error output is the error.
fn compile_apart(compiler: &Path, cache_dir: &Path, file: &Path) -> Result<()> {
    use std::io::Read;
    let mut child = std::process::Command::new(compiler)
        .args(["plugin", "compile", "--threads", "1", "--cache-dir"])
        .arg(cache_dir)
        .arg(file)
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {} to compile {}", compiler.display(), file.display()))?;
    // SAFETY: setpriority only changes the scheduling priority of our own child.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, child.id(), COMPILER_NICENESS);
    }
    let reader = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut kept: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > COMPILER_OUTPUT_BYTES {
                    kept.drain(..kept.len() - COMPILER_OUTPUT_BYTES);
                }
            }
            String::from_utf8_lossy(&kept).trim().to_string()
        })
    });
    let deadline = Instant::now() + COMPILE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(anyhow::anyhow!(
                    "compiling it took longer than {} s; it was given up",
                    COMPILE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => break Err(anyhow::Error::from(e).context("cannot wait for the compile process")),
        }
    };
    let output = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    let status = status?;
    if status.success() {
        return Ok(());
    }
    // `wharf plugin compile` names the file and says what is wrong with it.
    let named = format!("{}: ", file.display());
    let reason = match output.lines().rev().find_map(|l| l.strip_prefix(&named)) {
        Some(reason) => reason.to_string(),
        None => output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string(),
    };
    Err(anyhow::anyhow!(if reason.is_empty() { format!("the compile process failed ({status})") } else { reason }))
}

/// The pieces a cache entry is written in.
const CACHE_WRITE_BYTES: usize = 64 << 10;

/// Writes `bytes` as `target`, a file only this user may read or write: written in full (in
/// pieces: the page cache keeps a file written in one go in large folios, and a worker that maps
/// it is then charged whole folios of code it never runs) and flushed to disk, then renamed, so
/// a reader (or the next start, after a crash) never sees half a file; the temporary name is new
/// (create_new), so nothing planted under it is written through.
pub(crate) fn write_privately(bytes: &[u8], target: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temp = target.with_extension(format!("tmp{}-{}", std::process::id(), COUNTER.next()));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
    let written = bytes
        .chunks(CACHE_WRITE_BYTES)
        .try_for_each(|piece| file.write_all(piece))
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            std::fs::rename(&temp, target)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// The stack a plugin call runs on: wasmtime's default for WebAssembly's own stack (512 KiB)
/// plus room for the host functions it calls.
const ASYNC_STACK_BYTES: usize = 2 << 20;

/// The tokio runtime behind plugins' WASI waits. It is shut down in the background when the
/// `Runtime` goes, so dropping it never blocks (nor panics inside an async context).
pub(crate) struct PluginIo {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl PluginIo {
    fn new() -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(WASI_BLOCKING_THREADS)
            .thread_name("wharf-plugin-io")
            .enable_all()
            .build()
            .context("cannot start the plugins' I/O runtime")?;
        let handle = runtime.handle().clone();
        Ok(PluginIo { runtime: Some(runtime), handle })
    }

    pub(crate) fn handle(&self) -> tokio::runtime::Handle {
        self.handle.clone()
    }
}

/// Runs `future` on the calling thread, with the timers and I/O of `io` (a `PluginIo`'s handle),
/// and gives up on it after `deadline`: `None`. Called from plain threads and blocking tasks,
/// never from an async task.
pub(crate) fn block_on_until<F: Future>(
    io: &tokio::runtime::Handle,
    deadline: Duration,
    future: F,
) -> Option<F::Output> {
    io.block_on(async move { tokio::time::timeout(deadline, future).await.ok() })
}

impl Drop for PluginIo {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Distinct temporary names within one process.
static COUNTER: TempCounter = TempCounter(std::sync::atomic::AtomicU64::new(0));
struct TempCounter(std::sync::atomic::AtomicU64);
impl TempCounter {
    fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Creates the cache folder (mode 0700) if missing, and checks that it belongs to this user and
/// that no one else may write it.
fn private_folder(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot create it ({e})"))?;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot read it ({e})"))?;
    if !meta.is_dir() {
        return Err("it is not a folder (a symbolic link is not taken)".into());
    }
    owned_and_unshared(&meta)?;
    safe_ancestors(dir)
}

/// Every folder above `dir` belongs to this user or to root, and no one else may write it
/// unless it is sticky (as /tmp is, where others may add but not rename or remove what is
/// ours): otherwise another user could swap the cache folder, or an entry, for their own
/// between its check and its use.
fn safe_ancestors(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let canonical = std::fs::canonicalize(dir).map_err(|e| format!("cannot resolve it ({e})"))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for ancestor in canonical.ancestors().skip(1) {
        let meta = std::fs::metadata(ancestor).map_err(|e| format!("cannot read {} ({e})", ancestor.display()))?;
        if meta.uid() != me && meta.uid() != 0 {
            return Err(format!(
                "the folder above it, {}, belongs to user id {}, who could replace the cache; choose a cache folder \
                 under folders of this user's or root's (wasm.cache.dir, or WHARF_CACHE)",
                ancestor.display(),
                meta.uid()
            ));
        }
        let sticky = meta.mode() & 0o1000 != 0;
        if meta.mode() & 0o022 != 0 && !sticky {
            return Err(format!(
                "others may write the folder above it, {} (mode {:o}), and could replace the cache; choose a cache \
                 folder under folders only this user or root may write (wasm.cache.dir, or WHARF_CACHE)",
                ancestor.display(),
                meta.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// A cache entry is taken only if it is a plain file of this user's that no one else may write.
pub(crate) fn private_entry(file: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(file).map_err(|e| format!("cannot read it ({e})"))?;
    if !meta.is_file() {
        return Err("it is not a plain file".into());
    }
    owned_and_unshared(&meta)
}

fn owned_and_unshared(meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("it belongs to user id {}, not to this user ({me})", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("others may write it (mode {:o})", meta.mode() & 0o777));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_cache_folder_others_may_write_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("compiled");
        assert_eq!(private_folder(&cache), Ok(()));
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let problem = private_folder(&cache).unwrap_err();
        assert!(problem.contains("others may write it (mode 777)"), "{problem}");
    }

    #[test]
    fn a_cache_folder_under_a_folder_others_may_write_is_not_used_unless_it_is_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let problem = private_folder(&shared.join("compiled")).unwrap_err();
        assert!(problem.contains("others may write the folder above it") && problem.contains("shared"), "{problem}");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(private_folder(&shared.join("compiled")), Ok(()));
    }

    #[test]
    fn a_cache_entry_others_may_write_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("x.cwasm");
        std::fs::write(&entry, b"planted").unwrap();
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(private_entry(&entry), Ok(()));
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(private_entry(&entry).is_err());
        let link = dir.path().join("y.cwasm");
        std::os::unix::fs::symlink(&entry, &link).unwrap();
        assert!(private_entry(&link).unwrap_err().contains("not a plain file"));
    }
}
