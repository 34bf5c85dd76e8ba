//! What a plugin said of itself (`describe`, `grants`, `connection-grants` and `connection-tls`), kept beside its compiled code in the
//! compile cache (`<entry>.described.json`). A plugin loaded from the cache is then linked, not
//! run: running it would map in its interpreter's start-up code and memory for nothing, tens of
//! MiB for a Python or JavaScript component that no connector uses yet.
//!
//! An entry is taken only when it is a plain file of this user's that no one else may write (as
//! the compiled code beside it), was written by this very version of the host, and reads back
//! whole; otherwise the plugin is inspected again and the entry written anew.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use wharf_connect::model::{ConfigKey, ConnectionGrant, KeyGrant, Names, PluginInfo, PluginKind, ServerTlsKeys};

/// Changes when the shape below changes.
const FORMAT: u32 = 3;

/// Largest entry read back; a description is a few KiB.
const MAX_ENTRY_BYTES: u64 = 4 << 20;

#[derive(Serialize, Deserialize)]
struct Entry {
    format: u32,
    host: String,
    name: String,
    version: String,
    description: String,
    kind: String,
    config: Vec<Key>,
    grants: Vec<(String, String)>,
    connections: Vec<Connection>,
}

#[derive(Serialize, Deserialize)]
enum Connection {
    JdbcUrl { key: String },
    HostAndPort { host_key: String, port_key: String, default_port: u16, tls: Option<Tls> },
}

#[derive(Serialize, Deserialize)]
struct Tls {
    mode_key: String,
    default_mode: String,
    root_cert_key: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Key {
    name: String,
    type_name: String,
    default_value: Option<String>,
    required: bool,
    importance: String,
    documentation: String,
    group: Option<String>,
}

const TYPES: [&str; 7] = ["BOOLEAN", "INT", "LONG", "DOUBLE", "STRING", "LIST", "PASSWORD"];
const IMPORTANCES: [&str; 3] = ["HIGH", "MEDIUM", "LOW"];
const KINDS: [PluginKind; 3] = [PluginKind::Source, PluginKind::Sink, PluginKind::Transform];
const NAMES: [(Names, &str); 6] = [
    (Names::FileToRead, "file-to-read"),
    (Names::FileToWrite, "file-to-write"),
    (Names::FolderToRead, "folder-to-read"),
    (Names::FolderToWrite, "folder-to-write"),
    (Names::HostPort, "host-port"),
    (Names::Url, "url"),
];

fn path_of(entry: &Path) -> PathBuf {
    entry.with_extension("described.json")
}

/// What the plugin compiled into `entry` said of itself, if it was kept and can be trusted.
pub(super) fn read(entry: &Path) -> Option<PluginInfo> {
    let path = path_of(entry);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES || super::engine::private_entry(&path).is_err() {
        return None;
    }
    let kept: Entry = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    if kept.format != FORMAT || kept.host != env!("CARGO_PKG_VERSION") {
        return None;
    }
    let config = kept
        .config
        .into_iter()
        .map(|k| {
            Some(ConfigKey {
                name: k.name,
                type_name: TYPES.iter().find(|t| **t == k.type_name)?,
                default_value: k.default_value,
                required: k.required,
                importance: IMPORTANCES.iter().find(|i| **i == k.importance)?,
                documentation: k.documentation,
                group: k.group,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let grants = kept
        .grants
        .into_iter()
        .map(|(key, names)| Some(KeyGrant { key, names: NAMES.iter().find(|(_, n)| *n == names)?.0 }))
        .collect::<Option<Vec<_>>>()?;
    Some(PluginInfo {
        name: kept.name,
        version: kept.version,
        description: kept.description,
        kind: *KINDS.iter().find(|k| k.name() == kept.kind)?,
        config,
        grants,
        connections: kept
            .connections
            .into_iter()
            .map(|c| match c {
                Connection::JdbcUrl { key } => ConnectionGrant::JdbcUrl { key },
                Connection::HostAndPort { host_key, port_key, default_port, tls } => ConnectionGrant::HostAndPort {
                    host_key,
                    port_key,
                    default_port,
                    tls: tls.map(|t| ServerTlsKeys {
                        mode_key: t.mode_key,
                        default_mode: t.default_mode,
                        root_cert_key: t.root_cert_key,
                    }),
                },
            })
            .collect(),
    })
}

/// Keeps what a plugin said of itself beside its compiled code; a failure only costs an
/// inspection at the next load, so it is logged and not returned.
pub(super) fn write(entry: &Path, info: &PluginInfo) {
    let kept = Entry {
        format: FORMAT,
        host: env!("CARGO_PKG_VERSION").to_string(),
        name: info.name.clone(),
        version: info.version.clone(),
        description: info.description.clone(),
        kind: info.kind.name().to_string(),
        config: info
            .config
            .iter()
            .map(|k| Key {
                name: k.name.clone(),
                type_name: k.type_name.to_string(),
                default_value: k.default_value.clone(),
                required: k.required,
                importance: k.importance.to_string(),
                documentation: k.documentation.clone(),
                group: k.group.clone(),
            })
            .collect(),
        grants: info
            .grants
            .iter()
            .filter_map(|g| Some((g.key.clone(), NAMES.iter().find(|(n, _)| *n == g.names)?.1.to_string())))
            .collect(),
        connections: info
            .connections
            .iter()
            .map(|c| match c.clone() {
                ConnectionGrant::JdbcUrl { key } => Connection::JdbcUrl { key },
                ConnectionGrant::HostAndPort { host_key, port_key, default_port, tls } => Connection::HostAndPort {
                    host_key,
                    port_key,
                    default_port,
                    tls: tls.map(|t| Tls {
                        mode_key: t.mode_key,
                        default_mode: t.default_mode,
                        root_cert_key: t.root_cert_key,
                    }),
                },
            })
            .collect(),
    };
    let written = serde_json::to_vec(&kept)
        .map_err(std::io::Error::other)
        .and_then(|bytes| super::engine::write_privately(&bytes, &path_of(entry)));
    if let Err(e) = written {
        tracing::warn!("cannot keep the description of {} beside its compiled code: {e}", info.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_reads_back_as_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("x.cwasm");
        let info = PluginInfo {
            name: "p".into(),
            version: "1.2.3".into(),
            description: "a plugin".into(),
            kind: PluginKind::Sink,
            config: vec![ConfigKey {
                name: "file".into(),
                type_name: "STRING",
                default_value: Some("/tmp/x".into()),
                required: true,
                importance: "HIGH",
                documentation: "where".into(),
                group: Some("g".into()),
            }],
            grants: vec![KeyGrant { key: "file".into(), names: Names::FileToWrite }],
            connections: vec![
                ConnectionGrant::JdbcUrl { key: "connection.url".into() },
                ConnectionGrant::HostAndPort {
                    host_key: "database.hostname".into(),
                    port_key: "database.port".into(),
                    default_port: 5432,
                    tls: Some(ServerTlsKeys {
                        mode_key: "database.sslmode".into(),
                        default_mode: "prefer".into(),
                        root_cert_key: Some("database.sslrootcert".into()),
                    }),
                },
            ],
        };
        write(&entry, &info);
        assert_eq!(read(&entry), Some(info));
    }

    #[test]
    fn an_entry_of_another_host_version_or_shape_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("x.cwasm");
        let other = r#"{"format":2,"host":"0.0.0-other","name":"p","version":"1","description":"","kind":"source","config":[],"grants":[],"connections":[]}"#;
        super::super::engine::write_privately(other.as_bytes(), &path_of(&entry)).unwrap();
        assert_eq!(read(&entry), None);
        super::super::engine::write_privately(b"{not json", &path_of(&entry)).unwrap();
        assert_eq!(read(&entry), None);
        let unknown_type = other.replace("0.0.0-other", env!("CARGO_PKG_VERSION")).replace(
            r#""config":[]"#,
            r#""config":[{"name":"k","type_name":"NUMBER","default_value":null,"required":false,"importance":"LOW","documentation":"","group":null}]"#,
        );
        super::super::engine::write_privately(unknown_type.as_bytes(), &path_of(&entry)).unwrap();
        assert_eq!(read(&entry), None);
    }
}
