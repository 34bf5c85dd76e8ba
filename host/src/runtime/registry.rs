//! The plugins found under the worker's `plugin.path`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::engine::{LoadedFrom, Runtime};
use super::instance::Plugin;

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

pub struct PluginRegistry {
    plugins: BTreeMap<String, Arc<Plugin>>,
    /// Files that looked like plugins but could not be loaded, with the reason.
    pub problems: Vec<(PathBuf, String)>,
}

impl PluginRegistry {
    /// Loads every `.wasm` file below the given folders. A file that fails is reported and
    /// skipped; it never stops the worker.
    pub fn scan(runtime: &Runtime, folders: &[PathBuf]) -> PluginRegistry {
        let mut registry = PluginRegistry { plugins: BTreeMap::new(), problems: Vec::new() };
        let mut files = Vec::new();
        for folder in folders {
            if !folder.is_dir() {
                let reason = "plugin.path entry is not a folder (or does not exist)".to_string();
                tracing::warn!("{}: {reason}", folder.display());
                registry.problems.push((folder.clone(), reason));
                continue;
            }
            collect_wasm_files(folder, 0, &mut files);
        }
        files.sort();
        for path in files {
            let started = Instant::now();
            let loaded = runtime
                .load_component(&path)
                .and_then(|(component, from)| Ok((Plugin::inspect(runtime, component, path.clone())?, from)));
            match loaded {
                Ok((plugin, from)) => {
                    let name = plugin.info.name.clone();
                    tracing::info!(
                        "loaded plugin {name} {} ({:?}) from {} in {:.1} ms{}",
                        plugin.info.version,
                        plugin.info.kind,
                        path.display(),
                        started.elapsed().as_secs_f64() * 1000.0,
                        if from == LoadedFrom::Cache { ", compiled code from cache" } else { "" }
                    );
                    if let Some(earlier) = registry.plugins.get(&name) {
                        let reason =
                            format!("plugin name {name} is also used by {}; keeping that one", earlier.path.display());
                        tracing::warn!("{}: {reason}", path.display());
                        registry.problems.push((path, reason));
                        continue;
                    }
                    registry.plugins.insert(name, Arc::new(plugin));
                }
                Err(e) => {
                    let reason = format!("{e:#}");
                    tracing::warn!("skipping {}: {reason}", path.display());
                    registry.problems.push((path, reason));
                }
            }
        }
        registry
    }

    /// The plugin for a `connector.class` value: its name or a Kafka Connect alias.
    pub fn find(&self, class: &str) -> Option<Arc<Plugin>> {
        let name = ALIASES.iter().find(|(alias, _)| *alias == class).map_or(class, |(_, name)| name);
        self.plugins.get(name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
    }

    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values()
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
