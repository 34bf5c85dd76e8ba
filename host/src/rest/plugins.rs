//! `/connector-plugins`: what the registry holds, each plugin's configuration definition, and
//! config validation in Kafka Connect's `ConfigInfos` shape.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;

use super::entities::{ConfigInfo, ConfigInfos, ConfigKeyInfo, ConfigValueInfo, PluginInfo};
use super::{bad_request, entities, ApiError, Shared};
use crate::herder::HIDDEN;
use crate::runtime::Plugin;
use wharf_connect::model::parse_version_requirement;

#[derive(Deserialize)]
pub(super) struct ListQuery {
    #[serde(rename = "connectorsOnly")]
    connectors_only: Option<bool>,
}

/// Every version of every plugin; with `connectorsOnly=false`, as in Kafka Connect, the
/// converters, transforms and predicates the worker has (built in, so with Wharf's version) and,
/// Wharf's own, the files that failed to load.
pub(super) async fn list(State(state): State<Shared>, Query(query): Query<ListQuery>) -> Json<Vec<PluginInfo>> {
    let everything = query.connectors_only == Some(false);
    let mut entries: Vec<PluginInfo> = state
        .herder
        .plugins()
        .iter()
        // Transform plugins are listed with everything else, as Connect lists its transforms.
        .filter(|p| everything || p.info.kind.connector().is_some())
        .map(|p| PluginInfo {
            class: p.info.name.clone(),
            kind: p.info.kind.name(),
            version: Some(p.info.version.clone()),
            error: None,
        })
        .collect();
    if everything {
        let built_in = |class: String, kind: &'static str| PluginInfo {
            class,
            kind,
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            error: None,
        };
        entries.extend(state.herder.built_in_plugins().into_iter().map(|(class, kind)| built_in(class, kind)));
        entries.extend(state.herder.plugin_problems().into_iter().map(|(path, reason)| PluginInfo {
            class: path.display().to_string(),
            kind: "invalid",
            version: None,
            error: Some(reason),
        }));
    }
    Json(entries)
}

#[derive(Deserialize)]
pub(super) struct VersionQuery {
    version: Option<String>,
}

fn find(state: &Shared, name: &str, version: Option<&str>) -> Result<std::sync::Arc<Plugin>, ApiError> {
    let requirement = version.map(parse_version_requirement).transpose().map_err(bad_request)?;
    state
        .herder
        .find_plugin(name, requirement.as_ref())
        .map_err(|e| ApiError::new(StatusCode::NOT_FOUND, e.to_string()))
}

/// The plugin's configuration definition (the newest version, or `?version=`).
pub(super) async fn config_definition(
    State(state): State<Shared>,
    Path(name): Path<String>,
    Query(query): Query<VersionQuery>,
) -> Result<Json<Vec<ConfigKeyInfo>>, ApiError> {
    let plugin = find(&state, &name, query.version.as_deref())?;
    Ok(Json(plugin.info.config.iter().enumerate().map(|(i, k)| ConfigKeyInfo::of(k, i + 1)).collect()))
}

/// The validate answer, in Kafka Connect's `ConfigInfos` shape: the herder finds the problems
/// (`Herder::validate_connector`, the check a create makes), here they are only laid out.
pub(super) async fn validate(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<ConfigInfos>, ApiError> {
    let entities::ConfigBody(config) = entities::ConfigBody::parse(&body)?;
    // Off the server's threads: grants read the file system, and the plugin's validate may take
    // up to wasm.call.timeout.ms.
    let herder = state.herder.clone();
    let (plugin, reports) =
        tokio::task::spawn_blocking(move || herder.validate_connector(&name, config)).await.map_err(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("validating the config failed: {e}"))
        })??;
    let mut groups: Vec<String> = Vec::new();
    for report in &reports {
        if let Some(group) = &report.definition.group {
            if !groups.contains(group) {
                groups.push(group.clone());
            }
        }
    }
    let error_count: usize = reports.iter().map(|r| r.errors.len()).sum();
    let given: Vec<(String, String)> =
        reports.iter().filter_map(|r| Some((r.definition.name.clone(), r.value.clone()?))).collect();
    let url_secrets = crate::config::connector::urls_with_passwords(&plugin.info, &given);
    let configs = reports
        .into_iter()
        .enumerate()
        .map(|(i, report)| {
            let hidden = (report.definition.type_name == "PASSWORD" || url_secrets.contains(&report.definition.name))
                && report.value.is_some();
            let value = if hidden { Some(HIDDEN.to_string()) } else { report.value };
            let definition = ConfigKeyInfo::of(&report.definition, i + 1);
            let value = ConfigValueInfo {
                name: report.definition.name,
                value,
                recommended_values: Vec::new(),
                errors: report.errors,
                visible: true,
            };
            ConfigInfo { definition, value }
        })
        .collect();
    Ok(Json(ConfigInfos { name: plugin.info.name.clone(), error_count, groups, configs }))
}
