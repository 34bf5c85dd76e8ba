//! The plugins found under the worker's `plugin.path`: every version of every plugin, kept up to
//! date while the worker runs (files added, replaced or removed are picked up by `rescan`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use semver::{Version, VersionReq};

use super::engine::{LoadedFrom, Runtime};
use super::instance::Plugin;
use crate::sync::UnpoisonedRw;

/// Kafka Connect class names that Wharf's shipped plugins stand in for, so that existing
/// connector configs work unchanged.
const ALIASES: &[(&str, &str)] = &[
    ("FileStreamSource", "file-source"),
    ("FileStreamSourceConnector", "file-source"),
    ("org.apache.kafka.connect.file.FileStreamSourceConnector", "file-source"),
    ("FileStreamSink", "file-sink"),
    ("FileStreamSinkConnector", "file-sink"),
    ("org.apache.kafka.connect.file.FileStreamSinkConnector", "file-sink"),
];

/// Deepest folder level searched below each `plugin.path` entry.
const MAX_SCAN_DEPTH: usize = 8;

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

pub struct PluginRegistry {
    folders: Vec<PathBuf>,
    catalogue: RwLock<Catalogue>,
}

pub use crate::model::{parse_version, parse_version_requirement};

impl PluginRegistry {
    /// Loads every `.wasm` file below the given folders. A file that fails is reported and
    /// skipped; it never stops the worker.
    pub fn scan(runtime: &Runtime, folders: &[PathBuf]) -> PluginRegistry {
        let registry = PluginRegistry { folders: folders.to_vec(), catalogue: RwLock::default() };
        for folder in folders {
            if !folder.is_dir() {
                tracing::warn!("{}: plugin.path entry is not a folder (or does not exist)", folder.display());
            }
        }
        registry.rescan(runtime);
        registry
    }

    /// Brings the catalogue in line with the files now under `plugin.path`; returns whether
    /// anything changed. Tasks already running keep the plugin they started with.
    pub fn rescan(&self, runtime: &Runtime) -> bool {
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
            let removed = catalogue.files.keys().filter(|p| !stamps.contains_key(*p)).cloned().collect();
            let changed = stamps
                .iter()
                .filter(|(p, stamp)| catalogue.files.get(*p).is_none_or(|e| e.stamp != **stamp))
                .map(|(p, _)| p.clone())
                .collect();
            (removed, changed)
        };
        if removed.is_empty() && changed.is_empty() {
            return false;
        }
        // Compiling happens outside the lock: REST calls and task starts go on meanwhile.
        let loaded: Vec<(PathBuf, FileEntry, Option<Arc<Plugin>>)> =
            changed.iter().map(|path| self.load(runtime, path, stamps[path])).collect();

        let mut catalogue = self.catalogue.write_locked();
        for path in removed.iter().chain(changed.iter()) {
            if let Some(entry) = catalogue.files.remove(path) {
                if let Loaded::Plugin { name, version } = entry.loaded {
                    let now_empty = catalogue.plugins.get_mut(&name).is_some_and(|versions| {
                        versions.remove(&version);
                        versions.is_empty()
                    });
                    if now_empty {
                        catalogue.plugins.remove(&name);
                    }
                    if removed.contains(path) {
                        tracing::info!("plugin {name} {version} removed ({} is gone)", path.display());
                    }
                }
            }
        }
        for (path, mut entry, plugin) in loaded {
            if let (Loaded::Plugin { name, version }, Some(plugin)) = (&entry.loaded, plugin) {
                let versions = catalogue.plugins.entry(name.clone()).or_default();
                if let Some(existing) = versions.get(version) {
                    let reason =
                        format!("plugin {name} {version} is also in {}; keeping that one", existing.path.display());
                    tracing::warn!("{}: {reason}", path.display());
                    entry.loaded = Loaded::Problem(reason);
                } else {
                    versions.insert(version.clone(), plugin);
                }
            }
            catalogue.files.insert(path, entry);
        }
        true
    }

    fn load(
        &self,
        runtime: &Runtime,
        path: &Path,
        stamp: (SystemTime, u64),
    ) -> (PathBuf, FileEntry, Option<Arc<Plugin>>) {
        let started = Instant::now();
        let result = runtime
            .load_component(path)
            .and_then(|(component, from)| Ok((Plugin::inspect(runtime, component, path.to_path_buf())?, from)))
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
                    started.elapsed().as_secs_f64() * 1000.0,
                    if from == LoadedFrom::Cache { ", compiled code from cache" } else { "" }
                );
                let loaded = Loaded::Plugin { name: plugin.info.name.clone(), version };
                (path.to_path_buf(), FileEntry { stamp, loaded }, Some(Arc::new(plugin)))
            }
            Err(e) => {
                let reason = format!("{e:#}");
                tracing::warn!("skipping {}: {reason}", path.display());
                (path.to_path_buf(), FileEntry { stamp, loaded: Loaded::Problem(reason) }, None)
            }
        }
    }

    /// Rescans every `interval` on a thread of its own, until `stop` is set or the registry is
    /// gone.
    pub fn watch(self: &Arc<Self>, runtime: Arc<Runtime>, interval: Duration, stop: Arc<crate::sync::Stop>) {
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
            .expect("the system could not start the plugin scan thread");
    }

    /// The plugin for a `connector.class` value (its name or a Kafka Connect alias): the newest
    /// version, or the newest that `version` allows.
    pub fn find(&self, class: &str, version: Option<&VersionReq>) -> Result<Arc<Plugin>, FindError> {
        let name = ALIASES.iter().find(|(alias, _)| *alias == class).map_or(class, |(_, name)| name);
        let catalogue = self.catalogue.read_locked();
        let Some(versions) = catalogue.plugins.get(name) else {
            return Err(FindError::Unknown {
                class: class.to_string(),
                path: self.folders.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                found: match catalogue.plugins.keys().cloned().collect::<Vec<_>>() {
                    names if names.is_empty() => "none".to_string(),
                    names => names.join(", "),
                },
            });
        };
        let chosen = match version {
            None => versions.values().next_back(),
            Some(req) => versions.iter().rev().find(|(v, _)| req.matches(v)).map(|(_, p)| p),
        };
        chosen.cloned().ok_or_else(|| FindError::NoVersion {
            class: class.to_string(),
            wanted: version.map(ToString::to_string).unwrap_or_default(),
            available: versions.keys().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        })
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
