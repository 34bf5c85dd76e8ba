//! The plugins found under the worker's `plugin.path`: every version of every plugin, kept up to
//! date while the worker runs (files added, replaced or removed are picked up by `rescan`).
//!
//! A file whose compiled code is in the compile cache is loaded at once, on the scanning thread
//! (a millisecond or so). A file that must be compiled (seconds for a large component) goes to a
//! pool of at most `wasm.compile.threads` threads, so that the worker answers REST and runs the
//! connectors of the plugins it has while others compile. Until the compiled plugin is in the
//! catalogue, `find` answers `FindError::Compiling` for a name it does not know yet: callers wait
//! (REST, up to `COMPILE_WAIT`) or say so in a status (the herder), rather than fail. Listeners
//! (`on_change`) hear when a compiled plugin arrives.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use semver::{Version, VersionReq};

use super::engine::{LoadedFrom, Runtime};
use super::instance::Plugin;
use crate::sync::{Unpoisoned, UnpoisonedRw};

/// Kafka Connect class names that Wharf's shipped plugins stand in for, so that existing
/// connector configs work unchanged.
const ALIASES: &[(&str, &str)] = &[
    ("FileStreamSource", "file-source"),
    ("FileStreamSourceConnector", "file-source"),
    ("org.apache.kafka.connect.file.FileStreamSourceConnector", "file-source"),
    ("FileStreamSink", "file-sink"),
    ("FileStreamSinkConnector", "file-sink"),
    ("org.apache.kafka.connect.file.FileStreamSinkConnector", "file-sink"),
    // jdbc-sink reads each one's keys by the class it was named by.
    ("io.debezium.connector.jdbc.JdbcSinkConnector", "jdbc-sink"),
    ("io.confluent.connect.jdbc.JdbcSinkConnector", "jdbc-sink"),
    ("io.debezium.connector.postgresql.PostgresConnector", "postgres-cdc"),
];

/// Deepest folder level searched below each `plugin.path` entry.
const MAX_SCAN_DEPTH: usize = 8;

/// Files waiting for or under compilation at once; more wait for a later scan.
pub const MAX_QUEUED_COMPILES: usize = 256;

/// Files still compiling that a `FindError::Compiling` names; it counts the rest.
const NAMED_COMPILES: usize = 5;

/// How long a REST call that names a plugin not loaded yet waits for the files still compiling.
pub const COMPILE_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("connector.class={class} names no plugin in plugin.path ({path}). Plugins found: {found}")]
    Unknown { class: String, path: String, found: String },
    #[error("connector.class={class}: no version matches connector.version={wanted}; versions available: {available}")]
    NoVersion { class: String, wanted: String, available: String },
    #[error(
        "connector.class={class} names a transform plugin, which runs in a connector's transforms \
         (transforms.<alias>.type={class}), not as a connector"
    )]
    NotAConnector { class: String },
    /// The name is not known yet, and files of `plugin.path` are still compiling: it may be one
    /// of them.
    #[error("{class} is not loaded yet: plugin.path files are still compiling ({files}), and it may be one of them")]
    Compiling {
        class: String,
        files: String,
        /// The catalogue's change count when this was answered: wait for it to move.
        changes: u64,
    },
}

/// What a file under `plugin.path` turned out to be.
enum Loaded {
    Plugin { name: String, version: Version },
    Problem(String),
}

struct FileEntry {
    /// Modification time and length, to notice a replaced file.
    stamp: (SystemTime, u64),
    loaded: Loaded,
}

#[derive(Default)]
struct Catalogue {
    /// name → version → plugin.
    plugins: BTreeMap<String, BTreeMap<Version, Arc<Plugin>>>,
    files: BTreeMap<PathBuf, FileEntry>,
}

/// Files waiting for a compile thread or being compiled.
#[derive(Default)]
struct Compiles {
    /// Each file with the stamp it is compiled at and since when it waits.
    pending: BTreeMap<PathBuf, ((SystemTime, u64), Instant)>,
    queue: VecDeque<PathBuf>,
    /// Compile threads alive; each ends when the queue is empty.
    threads: usize,
    /// Bumped at every change of the catalogue that a compile brought, and when a compile ends.
    changes: u64,
}

type Listener = Box<dyn Fn() + Send + Sync>;

pub struct PluginRegistry {
    /// The plugin files loaded since the worker started, for its metrics.
    pub loads: LoadCounts,
    folders: Vec<PathBuf>,
    catalogue: RwLock<Catalogue>,
    compiles: Mutex<Compiles>,
    /// Signalled whenever `Compiles::changes` moves.
    compiled: Condvar,
    compile_threads: usize,
    listeners: Mutex<Vec<Listener>>,
}

pub use wharf_connect::model::{parse_version, parse_version_requirement};

/// The plugin files a worker loaded: their code from the compile cache, or compiled; or failed
/// (not a component, not a plugin); and the time compiles took.
#[derive(Default)]
pub struct LoadCounts {
    pub from_cache: std::sync::atomic::AtomicU64,
    pub compiled: std::sync::atomic::AtomicU64,
    pub failed: std::sync::atomic::AtomicU64,
    pub compile_us: std::sync::atomic::AtomicU64,
}

impl LoadCounts {
    fn count(&self, loaded: &Option<Arc<Plugin>>, from: Option<LoadedFrom>, compile: Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        match (loaded, from) {
            (Some(_), Some(LoadedFrom::Cache)) => self.from_cache.fetch_add(1, Relaxed),
            (Some(_), Some(LoadedFrom::Compiled)) => {
                self.compile_us.fetch_add(compile.as_micros().min(u128::from(u64::MAX)) as u64, Relaxed);
                self.compiled.fetch_add(1, Relaxed)
            }
            _ => self.failed.fetch_add(1, Relaxed),
        };
    }
}

impl PluginRegistry {
    /// Loads every `.wasm` file below the given folders: those in the compile cache before this
    /// returns, the others on at most `compile_threads` threads of their own. A file that fails
    /// is reported and skipped; it never stops the worker.
    pub fn scan(runtime: &Arc<Runtime>, folders: &[PathBuf], compile_threads: usize) -> Arc<PluginRegistry> {
        let registry = Arc::new(PluginRegistry {
            loads: LoadCounts::default(),
            folders: folders.to_vec(),
            catalogue: RwLock::default(),
            compiles: Mutex::default(),
            compiled: Condvar::new(),
            compile_threads: compile_threads.max(1),
            listeners: Mutex::default(),
        });
        for folder in folders {
            if !folder.is_dir() {
                tracing::warn!("{}: plugin.path entry is not a folder (or does not exist)", folder.display());
            }
        }
        registry.rescan(runtime);
        registry
    }

    /// Calls `listener` (on a compile thread) each time a compiled file joins the catalogue.
    pub fn on_change(&self, listener: impl Fn() + Send + Sync + 'static) {
        self.listeners.locked().push(Box::new(listener));
    }

    /// Brings the catalogue in line with the files now under `plugin.path`: removed files leave
    /// it, cached ones are loaded now, others are queued for compilation. Returns whether
    /// anything changed or was queued. Tasks already running keep the plugin they started with;
    /// a replaced file's old plugin stays until the new one is compiled.
    pub fn rescan(self: &Arc<Self>, runtime: &Arc<Runtime>) -> bool {
        let mut found = Vec::new();
        for folder in &self.folders {
            if folder.is_dir() {
                collect_wasm_files(folder, 0, &mut found);
            }
        }
        found.sort();
        let stamps: BTreeMap<PathBuf, (SystemTime, u64)> = found
            .into_iter()
            .filter_map(|path| {
                let meta = std::fs::metadata(&path).ok()?;
                Some((path, (meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len())))
            })
            .collect();

        let (removed, changed): (Vec<PathBuf>, Vec<PathBuf>) = {
            let catalogue = self.catalogue.read_locked();
            let compiles = self.compiles.locked();
            let removed = catalogue.files.keys().filter(|p| !stamps.contains_key(*p)).cloned().collect();
            let changed = stamps
                .iter()
                .filter(|(p, stamp)| catalogue.files.get(*p).is_none_or(|e| e.stamp != **stamp))
                .filter(|(p, stamp)| compiles.pending.get(*p).is_none_or(|(at, _)| at != *stamp))
                .map(|(p, _)| p.clone())
                .collect();
            (removed, changed)
        };
        {
            // A file gone while it waited is not compiled; one gone while compiling is dropped
            // when its compile ends (its stamp is no longer pending).
            let mut compiles = self.compiles.locked();
            let gone: Vec<PathBuf> = compiles.pending.keys().filter(|p| !stamps.contains_key(*p)).cloned().collect();
            for path in gone {
                compiles.pending.remove(&path);
                compiles.queue.retain(|p| *p != path);
                compiles.changes += 1;
            }
        }
        if removed.is_empty() && changed.is_empty() {
            return false;
        }
        if !removed.is_empty() {
            let mut catalogue = self.catalogue.write_locked();
            for path in &removed {
                catalogue.forget(path, true);
            }
        }
        // Small files first: a plugin that compiles in a moment does not wait behind large ones.
        let mut changed = changed;
        changed.sort_by_key(|path| stamps[path].1);
        for path in changed {
            let stamp = stamps[&path];
            let cached = runtime.cached_component(&path);
            if !matches!(cached, Ok(None)) {
                // Taken now: an earlier version of the file still compiling must not replace it
                // when its compile ends.
                let mut compiles = self.compiles.locked();
                if compiles.pending.remove(&path).is_some() {
                    compiles.queue.retain(|p| *p != path);
                    compiles.changes += 1;
                }
            }
            match cached {
                Ok(Some((component, entry))) => {
                    let component = Ok((component, LoadedFrom::Cache, Some(entry)));
                    let loaded = load(runtime, &path, stamp, component, Instant::now());
                    self.loads.count(&loaded.1, Some(LoadedFrom::Cache), Duration::ZERO);
                    self.catalogue.write_locked().take(path, loaded);
                }
                Ok(None) => self.queue(runtime, path, stamp),
                Err(e) => {
                    let loaded = load(runtime, &path, stamp, Err(e), Instant::now());
                    self.loads.count(&loaded.1, None, Duration::ZERO);
                    self.catalogue.write_locked().take(path, loaded);
                }
            }
        }
        true
    }

    /// Queues a file for a compile thread, starting one when fewer than `compile_threads` run.
    fn queue(self: &Arc<Self>, runtime: &Arc<Runtime>, path: PathBuf, stamp: (SystemTime, u64)) {
        let mut compiles = self.compiles.locked();
        if compiles.pending.len() >= MAX_QUEUED_COMPILES && !compiles.pending.contains_key(&path) {
            tracing::warn!(
                "{}: not compiled yet, {MAX_QUEUED_COMPILES} plugin files already wait for compilation; it is taken \
                 at a later scan",
                path.display()
            );
            return;
        }
        tracing::info!("compiling {} in the background; plugins already loaded go on meanwhile", path.display());
        compiles.pending.insert(path.clone(), (stamp, Instant::now()));
        if !compiles.queue.contains(&path) {
            compiles.queue.push_back(path);
        }
        if compiles.threads >= self.compile_threads {
            return;
        }
        let (registry, runtime) = (Arc::downgrade(self), runtime.clone());
        let spawned =
            std::thread::Builder::new().name("plugin-compile".into()).spawn(move || compile_thread(registry, runtime));
        match spawned {
            Ok(_) => compiles.threads += 1,
            Err(e) if compiles.threads == 0 => {
                // Nothing would take the queue: let a later scan try again.
                tracing::error!("cannot start a thread to compile plugins ({e}); trying again at the next scan");
                compiles.pending.clear();
                compiles.queue.clear();
            }
            Err(e) => tracing::warn!("cannot start another thread to compile plugins ({e}); the running ones go on"),
        }
    }

    /// Takes what a compile thread made of `path`, unless the file changed or went meanwhile.
    fn compiled(&self, path: PathBuf, stamp: (SystemTime, u64), loaded: (FileEntry, Option<Arc<Plugin>>)) {
        {
            let mut catalogue = self.catalogue.write_locked();
            let mut compiles = self.compiles.locked();
            if compiles.pending.get(&path).is_some_and(|(at, _)| *at == stamp) {
                compiles.pending.remove(&path);
                catalogue.take(path, loaded);
            }
            compiles.changes += 1;
        }
        self.compiled.notify_all();
        for listener in self.listeners.locked().iter() {
            listener();
        }
    }

    /// Rescans every `interval` on a thread of its own, until `stop` is set or the registry is
    /// gone.
    pub fn watch(
        self: &Arc<Self>,
        runtime: Arc<Runtime>,
        interval: Duration,
        stop: Arc<crate::sync::Stop>,
    ) -> std::io::Result<()> {
        let registry = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("plugin-scan".into())
            .spawn(move || loop {
                if stop.sleep(interval) {
                    return;
                }
                let Some(registry) = registry.upgrade() else { return };
                registry.rescan(&runtime);
            })
            .map(drop)
    }

    /// Files compiling now or waiting to, with how long each has waited.
    pub fn compiling(&self) -> Vec<(PathBuf, Duration)> {
        self.compiles.locked().pending.iter().map(|(path, (_, since))| (path.clone(), since.elapsed())).collect()
    }

    /// Waits until no file is compiling or `timeout` passes; whether none is.
    pub fn wait_compiled(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut compiles = self.compiles.locked();
        while !compiles.pending.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            compiles = self.compiled.wait_timeout(compiles, left).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        true
    }

    /// `find`, waiting up to `timeout` while the answer is `Compiling`.
    pub fn find_waiting(
        &self,
        class: &str,
        version: Option<&VersionReq>,
        timeout: Duration,
    ) -> Result<Arc<Plugin>, FindError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.find(class, version) {
                Err(FindError::Compiling { changes, .. }) if Instant::now() < deadline => {
                    let compiles = self.compiles.locked();
                    if compiles.changes == changes {
                        let left = deadline.saturating_duration_since(Instant::now());
                        let _ = self.compiled.wait_timeout(compiles, left);
                    }
                }
                answer => return answer,
            }
        }
    }

    /// The plugin for a `connector.class` value (its name or a Kafka Connect alias): the newest
    /// version, or the newest that `version` allows.
    pub fn find(&self, class: &str, version: Option<&VersionReq>) -> Result<Arc<Plugin>, FindError> {
        let name = ALIASES.iter().find(|(alias, _)| *alias == class).map_or(class, |(_, name)| name);
        let catalogue = self.catalogue.read_locked();
        let missing = match catalogue.plugins.get(name) {
            None => FindError::Unknown {
                class: class.to_string(),
                path: self.folders.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                found: match catalogue.plugins.keys().cloned().collect::<Vec<_>>() {
                    names if names.is_empty() => "none".to_string(),
                    names => names.join(", "),
                },
            },
            Some(versions) => {
                let chosen = match version {
                    None => versions.values().next_back(),
                    Some(req) => versions.iter().rev().find(|(v, _)| req.matches(v)).map(|(_, p)| p),
                };
                match chosen {
                    Some(plugin) => return Ok(plugin.clone()),
                    None => FindError::NoVersion {
                        class: class.to_string(),
                        wanted: version.map(ToString::to_string).unwrap_or_default(),
                        available: versions.keys().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                    },
                }
            }
        };
        // A file still compiling may be the plugin (or the version) asked for.
        let compiles = self.compiles.locked();
        if compiles.pending.is_empty() {
            return Err(missing);
        }
        let mut files = compiles
            .pending
            .iter()
            .take(NAMED_COMPILES)
            .map(|(path, (_, since))| format!("{} for {:.0} s", path.display(), since.elapsed().as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ");
        if compiles.pending.len() > NAMED_COMPILES {
            files.push_str(&format!(" and {} more", compiles.pending.len() - NAMED_COMPILES));
        }
        Err(FindError::Compiling { class: class.to_string(), files, changes: compiles.changes })
    }

    /// The connector plugin `class` names (as `find`), refusing a transform plugin.
    pub fn find_connector(&self, class: &str, version: Option<&VersionReq>) -> Result<Arc<Plugin>, FindError> {
        let plugin = self.find(class, version)?;
        match plugin.info.kind.connector() {
            Some(_) => Ok(plugin),
            None => Err(FindError::NotAConnector { class: class.to_string() }),
        }
    }

    pub fn names(&self) -> Vec<String> {
        self.catalogue.read_locked().plugins.keys().cloned().collect()
    }

    /// Every version of every plugin, by name then version.
    pub fn plugins(&self) -> Vec<Arc<Plugin>> {
        let catalogue = self.catalogue.read_locked();
        catalogue.plugins.values().flat_map(|versions| versions.values().cloned()).collect()
    }

    /// Files that could not be loaded, with the reason.
    pub fn problems(&self) -> Vec<(PathBuf, String)> {
        let catalogue = self.catalogue.read_locked();
        catalogue
            .files
            .iter()
            .filter_map(|(path, entry)| match &entry.loaded {
                Loaded::Problem(reason) => Some((path.clone(), reason.clone())),
                Loaded::Plugin { .. } => None,
            })
            .collect()
    }
}

impl Catalogue {
    /// Drops what `path` held; `announce` says so in the log (the file is gone, not replaced).
    fn forget(&mut self, path: &Path, announce: bool) {
        let Some(entry) = self.files.remove(path) else { return };
        let Loaded::Plugin { name, version } = entry.loaded else { return };
        let now_empty = self.plugins.get_mut(&name).is_some_and(|versions| {
            versions.remove(&version);
            versions.is_empty()
        });
        if now_empty {
            self.plugins.remove(&name);
        }
        if announce {
            tracing::info!("plugin {name} {version} removed ({} is gone)", path.display());
        }
    }

    /// Puts what `path` now holds in place of what it held.
    fn take(&mut self, path: PathBuf, (mut entry, plugin): (FileEntry, Option<Arc<Plugin>>)) {
        self.forget(&path, false);
        if let (Loaded::Plugin { name, version }, Some(plugin)) = (&entry.loaded, plugin) {
            let versions = self.plugins.entry(name.clone()).or_default();
            if let Some(existing) = versions.get(version) {
                let reason =
                    format!("plugin {name} {version} is also in {}; keeping that one", existing.path.display());
                tracing::warn!("{}: {reason}", path.display());
                entry.loaded = Loaded::Problem(reason);
            } else {
                versions.insert(version.clone(), plugin);
            }
        }
        self.files.insert(path, entry);
    }
}

/// Compiles `file` into the compile cache unless it is there, and keeps what the plugin says of
/// itself beside it, so that a worker loading it links it without running it: what `wharf plugin
/// compile` does for each file, and so what a worker's compile processes do.
pub fn compile_into_cache(runtime: &Runtime, file: &Path) -> anyhow::Result<LoadedFrom> {
    let (_, from) = runtime.load_component(file)?;
    if let Some((component, entry)) = runtime.cached_component(file)? {
        if super::described::read(&entry).is_none() {
            let plugin = Plugin::inspect(runtime, component, file.to_path_buf())?;
            super::described::write(&entry, &plugin.info);
        }
    }
    Ok(from)
}

/// Takes queued files until there are none, then ends (or when the registry is gone).
fn compile_thread(registry: std::sync::Weak<PluginRegistry>, runtime: Arc<Runtime>) {
    loop {
        let Some(this) = registry.upgrade() else { return };
        let next = {
            let mut compiles = this.compiles.locked();
            loop {
                match compiles.queue.pop_front() {
                    None => {
                        compiles.threads -= 1;
                        break None;
                    }
                    // Still wanted, at this stamp (a later scan may have dropped it).
                    Some(path) => {
                        if let Some((stamp, since)) = compiles.pending.get(&path) {
                            break Some((path, *stamp, *since));
                        }
                    }
                }
            }
        };
        let Some((path, stamp, since)) = next else { return };
        let started = Instant::now();
        let component = runtime.load_component_apart(&path);
        let took = started.elapsed();
        let from = component.as_ref().ok().map(|(_, from, _)| *from);
        let loaded = load(&runtime, &path, stamp, component, since);
        this.loads.count(&loaded.1, from, took);
        this.compiled(path, stamp, loaded);
    }
}

/// Inspects a component loaded (or not) from `path`, for the catalogue.
fn load(
    runtime: &Runtime,
    path: &Path,
    stamp: (SystemTime, u64),
    component: anyhow::Result<(wasmtime::component::Component, LoadedFrom, Option<PathBuf>)>,
    since: Instant,
) -> (FileEntry, Option<Arc<Plugin>>) {
    let result = component
        .and_then(|(component, from, entry)| {
            // What the plugin said of itself when it was compiled, if kept beside its code;
            // otherwise it is asked (and the answer kept).
            let kept = entry.as_deref().and_then(super::described::read);
            let plugin = match kept {
                Some(info) => Plugin::described(runtime, component, path.to_path_buf(), info)?,
                None => {
                    let plugin = Plugin::inspect(runtime, component, path.to_path_buf())?;
                    if let Some(entry) = &entry {
                        super::described::write(entry, &plugin.info);
                    }
                    plugin
                }
            };
            Ok((plugin, from))
        })
        .and_then(|(plugin, from)| {
            let version = parse_version(&plugin.info.version)
                .map_err(|e| anyhow::anyhow!("plugin {} has version {e}", plugin.info.name))?;
            Ok((plugin, from, version))
        });
    match result {
        Ok((plugin, from, version)) => {
            tracing::info!(
                "loaded plugin {} {} ({:?}) from {} in {:.1} ms{}",
                plugin.info.name,
                version,
                plugin.info.kind,
                path.display(),
                since.elapsed().as_secs_f64() * 1000.0,
                if from == LoadedFrom::Cache { ", compiled code from cache" } else { ", compiled now" }
            );
            let loaded = Loaded::Plugin { name: plugin.info.name.clone(), version };
            (FileEntry { stamp, loaded }, Some(Arc::new(plugin)))
        }
        Err(e) => {
            let reason = format!("{e:#}");
            tracing::warn!("skipping {}: {reason}", path.display());
            (FileEntry { stamp, loaded: Loaded::Problem(reason) }, None)
        }
    }
}

fn collect_wasm_files(folder: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        tracing::warn!("cannot list plugin folder {}", folder.display());
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && depth < MAX_SCAN_DEPTH {
            collect_wasm_files(&path, depth + 1, out);
        } else if path.extension().is_some_and(|e| e == "wasm") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_versions_are_padded() {
        assert_eq!(parse_version("1").unwrap(), Version::new(1, 0, 0));
        assert_eq!(parse_version("1.2").unwrap(), Version::new(1, 2, 0));
        assert!(parse_version("one").is_err());
    }

    #[test]
    fn requirements_accept_exact_maven_ranges_and_semver() {
        let exact = parse_version_requirement("0.1.0").unwrap();
        assert!(exact.matches(&Version::new(0, 1, 0)) && !exact.matches(&Version::new(0, 1, 1)));
        let range = parse_version_requirement("[1.0,2.0)").unwrap();
        assert!(range.matches(&Version::new(1, 5, 0)) && !range.matches(&Version::new(2, 0, 0)));
        let semver = parse_version_requirement(">=1.1, <2").unwrap();
        assert!(semver.matches(&Version::new(1, 1, 0)) && !semver.matches(&Version::new(1, 0, 9)));
        assert!(parse_version_requirement("[x,").is_err());
    }
}
