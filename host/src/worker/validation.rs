//! The one check of a connector config that a create and the validate answer share: what the
//! host's rules find (the key table's checks in the parser, the plugin's required and typed keys,
//! a sink's topics, the ceilings, reserved topics, the override policy, the grants and the
//! transform plugins), each problem on the key it is about, then the plugin's own `validate`.

use std::sync::Arc;

use super::{StartError, Worker};
use crate::config::keys::connector as C;
use crate::config::ConnectorConfig;
use crate::runtime::Plugin;
use wharf_connect::model::{last_value, ConfigKey, ConfigProblem, KeyReport, PluginKind};

/// Whether the values of the keys a plugin defines are checked against their types: for a config
/// given now (a create, the validate answer), not for one stored already (a start, a generation),
/// which was taken before the check existed and keeps running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Types {
    Checked,
    Unchecked,
}

/// Where a problem of no one key is reported, as Kafka Connect does.
pub(super) const WHOLE_CONFIG_KEY: &str = C::CONNECTOR_CLASS.name;

/// Whether `value` is a value of the given Kafka Connect type; the refusal in Connect's words.
fn type_problem(type_name: &str, value: &str) -> Option<String> {
    let ok = match type_name {
        "INT" => value.trim().parse::<i32>().is_ok(),
        "LONG" => value.trim().parse::<i64>().is_ok(),
        "SHORT" => value.trim().parse::<i16>().is_ok(),
        "DOUBLE" => value.trim().parse::<f64>().is_ok(),
        "BOOLEAN" => matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "false"),
        _ => true,
    };
    (!ok).then(|| format!("Invalid value {value} for configuration: expected {}", type_name.to_ascii_lowercase()))
}

/// The problems with the keys a plugin defines: a required one missing or empty, a value not of
/// its type; and a sink's topics, which `topics` or `topics.regex` name (the one place where the
/// pattern stands in for the list, whatever the plugin declares). Needs no parsed config, so the
/// validate answer has these even when the host's keys do not parse.
pub(super) fn definition_problems(plugin: &Plugin, config: &[(String, String)], types: Types) -> Vec<ConfigProblem> {
    let sink = plugin.info.kind == PluginKind::Sink;
    let mut problems = Vec::new();
    for key in plugin.info.config.iter().filter(|k| !(sink && k.name == C::TOPICS.name)) {
        match last_value(config, &key.name).filter(|v| !v.trim().is_empty()) {
            None if key.required => problems.push(ConfigProblem {
                name: key.name.clone(),
                message: format!("\"{}\" is required and has no default: set it ({})", key.name, key.documentation),
            }),
            Some(value) if types == Types::Checked => problems.extend(
                type_problem(key.type_name, value).map(|message| ConfigProblem { name: key.name.clone(), message }),
            ),
            Some(_) => {}
            None => {}
        }
    }
    let names_a_topic = |key: &str| last_value(config, key).is_some_and(|v| v.split(',').any(|t| !t.trim().is_empty()));
    if sink && !names_a_topic(C::TOPICS.name) && !names_a_topic(C::TOPICS_REGEX.name) {
        problems.push(ConfigProblem {
            name: C::TOPICS.name.into(),
            message: "\"topics\" or \"topics.regex\" is required for a sink: list the topics to read, separated by \
                      commas, or give a pattern of their names"
                .into(),
        });
    }
    problems
}

impl Worker {
    /// The validate answer for `given`, a config of `plugin`: every key the connector has (the
    /// host's, then the plugin's) with its value and the problems found on it, then the keys
    /// only a problem names. Blocking: grants read the file system, and the plugin's `validate`
    /// runs (within `wasm.call.timeout.ms`), so never on the herder's thread.
    pub fn validation(&self, plugin: &Arc<Plugin>, given: Vec<(String, String)>) -> Result<Vec<KeyReport>, StartError> {
        let sink = plugin.info.kind == PluginKind::Sink;
        let mut keys = crate::config::keys::connector_keys(sink);
        keys.extend(plugin.info.config.iter().cloned());
        let mut reports: Vec<KeyReport> = keys
            .into_iter()
            .map(|definition| {
                let value = last_value(&given, &definition.name).map(String::from);
                let value = value.or_else(|| definition.default_value.clone());
                KeyReport { definition, value, errors: Vec::new() }
            })
            .collect();
        let name_given = last_value(&given, C::NAME.name).is_some_and(|n| !n.is_empty());
        let mut problems: Vec<ConfigProblem> = Vec::new();
        if !name_given {
            // Kafka Connect's words, which its clients show as they are.
            problems.push(ConfigProblem {
                name: C::NAME.name.into(),
                message: "Missing required configuration \"name\" which has no default value.".into(),
            });
        }
        let config = &self.config;
        // The grants the plugin declares are checked by `host_problems`, with the host's other rules.
        let parsed =
            ConnectorConfig::resolving(given.clone(), "being validated", &config.wasm, &config.config_providers);
        let (resolved, secrets) = match parsed {
            Ok(parsed) => {
                let (_, found) = self.host_problems(&parsed, Types::Checked)?;
                problems.extend(found);
                problems.extend(self.check_transform_plugins(&parsed));
                (parsed.resolved, parsed.secrets)
            }
            Err(e) => {
                for problem in e.problems() {
                    // A missing name is reported once, above, in Kafka Connect's words.
                    if problem.key() == Some(C::NAME.name) && !name_given {
                        continue;
                    }
                    let name = problem.key().unwrap_or(WHOLE_CONFIG_KEY).to_string();
                    problems.push(ConfigProblem { name, message: problem.to_string() });
                }
                problems.extend(definition_problems(plugin, &given, Types::Checked));
                // With its references resolved, as a start gives it; one that cannot be resolved
                // is reported above, and the plugin sees it as written.
                config
                    .config_providers
                    .resolve_recording(&given)
                    .unwrap_or_else(|_| (given.clone(), Default::default()))
            }
        };
        // The name as written: a name that is a reference is refused above, never resolved.
        let label =
            last_value(&given, C::NAME.name).filter(|n| !n.contains("${")).unwrap_or(&plugin.info.name).to_string();
        let found = self.plugin_validate(plugin, &label, &resolved, &secrets).map_err(|e| StartError::Plugin {
            name: label.clone(),
            message: secrets.scrub(&format!("the plugin's validate failed: {e}")),
        })?;
        problems.extend(found);
        // Messages may quote values; a value that came from a reference is shown as the reference.
        for problem in &mut problems {
            problem.message = secrets.scrub(&problem.message);
        }
        for problem in problems {
            match reports.iter_mut().find(|r| r.definition.name == problem.name) {
                Some(report) => report.errors.push(problem.message),
                None => reports.push(KeyReport {
                    definition: ConfigKey {
                        name: problem.name.clone(),
                        type_name: "STRING",
                        default_value: None,
                        required: false,
                        importance: "LOW",
                        documentation: String::new(),
                        group: None,
                    },
                    // As written: a resolved reference would show a secret.
                    value: last_value(&given, &problem.name).map(String::from),
                    errors: vec![problem.message],
                }),
            }
        }
        Ok(reports)
    }
}

#[cfg(test)]
mod tests {
    use super::type_problem;

    #[test]
    fn values_are_checked_against_their_type() {
        for (type_name, good, bad) in [
            ("INT", "42", "lots"),
            ("LONG", "-7", "1.5"),
            ("SHORT", "3", "70000"),
            ("DOUBLE", "0.5", "half"),
            ("BOOLEAN", "TRUE", "yes"),
        ] {
            assert_eq!(type_problem(type_name, good), None, "{type_name} {good}");
            let refused = type_problem(type_name, bad).unwrap_or_default();
            assert!(refused.contains(bad) && refused.contains(&type_name.to_ascii_lowercase()), "{refused}");
        }
        assert_eq!(type_problem("STRING", "anything"), None);
    }
}
