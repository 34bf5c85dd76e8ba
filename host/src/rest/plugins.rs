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
use crate::model::parse_version_requirement;
use crate::model::ConfigKey;
use crate::runtime::Plugin;

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(rename = "connectorsOnly")]
    connectors_only: Option<bool>,
}

/// Every version of every plugin; with `connectorsOnly=false`, as in Kafka Connect, the
/// converters, transforms and predicates the worker has (built in, so with Wharf's version) and,
/// Wharf's own, the files that failed to load.
pub async fn list(State(state): State<Shared>, Query(query): Query<ListQuery>) -> Json<Vec<PluginInfo>> {
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
        entries.extend(crate::config::built_in_plugins().into_iter().map(|(class, kind)| built_in(class, kind)));
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
pub struct VersionQuery {
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
pub async fn config_definition(
    State(state): State<Shared>,
    Path(name): Path<String>,
    Query(query): Query<VersionQuery>,
) -> Result<Json<Vec<ConfigKeyInfo>>, ApiError> {
    let plugin = find(&state, &name, query.version.as_deref())?;
    Ok(Json(plugin.info.config.iter().enumerate().map(|(i, k)| ConfigKeyInfo::of(k, i + 1)).collect()))
}

/// Whether `value` is a valid value of the given Kafka Connect type.
fn type_problem(type_name: &str, value: &str) -> Option<String> {
    let ok = match type_name {
        "INT" => value.trim().parse::<i32>().is_ok(),
        "LONG" => value.trim().parse::<i64>().is_ok(),
        "DOUBLE" => value.trim().parse::<f64>().is_ok(),
        "BOOLEAN" => matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "false"),
        _ => true,
    };
    (!ok).then(|| format!("Invalid value {value} for configuration: expected {}", type_name.to_ascii_lowercase()))
}

/// Checks types, required keys and defaults against the definition, then the host's keys, then
/// the plugin's own `validate`.
pub async fn validate(
    State(state): State<Shared>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<ConfigInfos>, ApiError> {
    let entities::ConfigBody(mut config) = entities::ConfigBody::parse(&body)?;
    let given_class = config.iter().find(|(k, _)| k == "connector.class").map(|(_, v)| v.clone());
    match given_class {
        None => config.push(("connector.class".into(), name.clone())),
        // A short name, a Kafka Connect class name and the plugin's own name are one plugin.
        Some(class) if class != name => {
            let plugin_name = |given: &str| state.herder.find_plugin(given, None).ok().map(|p| p.info.name.clone());
            if plugin_name(&class).is_none() || plugin_name(&class) != plugin_name(&name) {
                return Err(bad_request(format!(
                    "Included connector type {class} does not match request type {name}: connector.class in the \
                     body names another plugin than the URL"
                )));
            }
        }
        Some(_) => {}
    }
    let version = crate::model::last_value(&config, "connector.version")
        .or_else(|| crate::model::last_value(&config, "connector.plugin.version"))
        .map(String::from);
    let plugin = find(&state, &name, version.as_deref())?;
    if plugin.info.kind.connector().is_none() {
        return Err(bad_request(format!(
            "{name} is a transform plugin: validate the config of a connector that uses it \
             (transforms.<alias>.type={name}) with PUT /connector-plugins/<the connector's plugin>/config/validate"
        )));
    }
    let get = |key: &str| crate::model::last_value(&config, key).map(String::from);

    // The keys every connector has (`config::keys`), then the plugin's own.
    let mut keys = crate::config::keys::connector_keys(plugin.info.kind == crate::model::PluginKind::Sink);
    keys.extend(plugin.info.config.iter().cloned());
    let mut entries: Vec<(ConfigKey, Option<String>, Vec<String>)> = keys
        .into_iter()
        .map(|key| {
            let value = get(&key.name).or_else(|| key.default_value.clone());
            let mut errors = Vec::new();
            match &value {
                // Kafka Connect's words, which its clients show as they are.
                None if key.name == "name" => {
                    errors.push("Missing required configuration \"name\" which has no default value.".to_string())
                }
                // A sink's topics.regex stands in for topics.
                None if key.name == "topics" && get("topics.regex").is_some_and(|r| !r.trim().is_empty()) => {}
                None if key.required => errors.push(format!("\"{}\" is required and has no default: set it", key.name)),
                Some(v) => errors.extend(type_problem(key.type_name, v)),
                None => {}
            }
            (key, value, errors)
        })
        .collect();

    // The host's own checks (limits, grants, versions), reported on the key they name.
    // Off the server's threads: checking grants reads the file system (links, a slow mount).
    let (checking, declaring, herder) = (config.clone(), plugin.clone(), state.herder.clone());
    let host_checked = tokio::task::spawn_blocking(move || herder.check_host_keys(checking, &declaring))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("checking the config failed: {e}")))?;
    if let Err(e) = host_checked {
        for problem in e.problems() {
            // A missing name is reported once, above, in Kafka Connect's words.
            let missing_name = problem.key() == Some("name") && !config.iter().any(|(k, _)| k == "name");
            if missing_name {
                continue;
            }
            // On the key it is about; a problem of no one key on connector.class, as Connect does.
            let on = problem.key().unwrap_or("connector.class");
            let target = entries.iter().position(|(k, _, _)| k.name == on).unwrap_or(1);
            entries[target].2.push(problem.to_string());
        }
    }
    // The plugin runs on a blocking thread, never on the server's own: its call may take up to
    // wasm.call.timeout.ms.
    let (validating, label, given, herder) = (plugin.clone(), name.clone(), config.clone(), state.herder.clone());
    let problems = tokio::task::spawn_blocking(move || herder.plugin_validate(&validating, &label, &given))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("the plugin's validate failed: {e}")))?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("the plugin's validate failed: {e}")))?;
    for problem in problems {
        match entries.iter_mut().find(|(k, _, _)| k.name == problem.name) {
            Some(entry) => entry.2.push(problem.message),
            None => entries.push((
                ConfigKey {
                    name: problem.name.clone(),
                    type_name: "STRING",
                    default_value: None,
                    required: false,
                    importance: "LOW",
                    documentation: String::new(),
                    group: None,
                },
                get(&problem.name),
                vec![problem.message],
            )),
        }
    }

    let mut groups: Vec<String> = Vec::new();
    for (key, _, _) in &entries {
        if let Some(group) = &key.group {
            if !groups.contains(group) {
                groups.push(group.clone());
            }
        }
    }
    let error_count: usize = entries.iter().map(|(_, _, errors)| errors.len()).sum();
    let configs = entries
        .into_iter()
        .enumerate()
        .map(|(i, (key, value, errors))| {
            let value = if key.type_name == "PASSWORD" && value.is_some() { Some(HIDDEN.to_string()) } else { value };
            let definition = ConfigKeyInfo::of(&key, i + 1);
            let value =
                ConfigValueInfo { name: key.name, value, recommended_values: Vec::new(), errors, visible: true };
            ConfigInfo { definition, value }
        })
        .collect();
    Ok(Json(ConfigInfos { name: plugin.info.name.clone(), error_count, groups, configs }))
}
