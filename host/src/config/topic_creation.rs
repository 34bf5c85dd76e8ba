//! A source connector's topic creation (Kafka Connect's KIP-158): `topic.creation.groups` and
//! `topic.creation.<group>.*`. A connector that sets `topic.creation.default.replication.factor`
//! and `topic.creation.default.partitions` has the topics its records go to created, before the
//! first record, with the settings of the first group (in `topic.creation.groups` order) whose
//! `include` patterns match the topic and whose `exclude` patterns do not, or the `default`
//! group's; any other `topic.creation.<group>.<key>` is a topic config (`cleanup.policy`, …).

/// The most groups a connector may name: each is checked for every new topic.
pub const MAX_GROUPS: usize = 64;

use wharf_connect::transform::FullMatch;

const PREFIX: &str = "topic.creation.";

#[derive(Debug, Clone)]
pub struct TopicGroup {
    pub name: String,
    include: Vec<FullMatch>,
    exclude: Vec<FullMatch>,
    /// -1: the broker's default.
    pub partitions: i32,
    /// -1: the broker's default.
    pub replication_factor: i32,
    /// Topic configs for the topics of the group.
    pub configs: Vec<(String, String)>,
}

impl TopicGroup {
    fn takes(&self, topic: &str) -> bool {
        self.include.iter().any(|r| r.0.is_match(topic)) && !self.exclude.iter().any(|r| r.0.is_match(topic))
    }
}

/// The groups of a connector that creates its topics; `default` last.
#[derive(Debug, Clone)]
pub struct TopicCreation {
    pub groups: Vec<TopicGroup>,
}

impl TopicCreation {
    /// The settings a new topic is created with.
    pub fn group_for(&self, topic: &str) -> Option<&TopicGroup> {
        self.groups.iter().find(|g| g.takes(topic))
    }

    /// The connector's topic creation: none when it sets no `topic.creation.*` key; every
    /// problem, each with its key, otherwise.
    pub fn of_connector(config: &[(String, String)]) -> Result<Option<Self>, Vec<(String, String)>> {
        let get = |key: &str| wharf_connect::model::last_value(config, key).map(str::trim);
        if !config.iter().any(|(k, _)| k.starts_with(PREFIX)) {
            return Ok(None);
        }
        let mut problems = Vec::new();
        let mut problem = |key: &str, message: String| problems.push((key.to_string(), message));
        let names: Vec<String> = get("topic.creation.groups")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(String::from)
            .collect();
        if names.len() > MAX_GROUPS {
            problem(
                "topic.creation.groups",
                format!("topic.creation.groups names {} groups: at most {MAX_GROUPS}", names.len()),
            );
        }
        if names.iter().any(|n| n == "default") {
            problem(
                "topic.creation.groups",
                "topic.creation.groups names \"default\", which every connector that creates topics has already: \
                 set its settings with topic.creation.default.* and leave it out of the list"
                    .into(),
            );
        }
        let mut groups = Vec::new();
        for name in names.iter().map(String::as_str).chain(["default"]) {
            let key = |setting: &str| format!("{PREFIX}{name}.{setting}");
            let number = |setting: &str, problem: &mut dyn FnMut(&str, String)| -> Option<i32> {
                let key = key(setting);
                match get(&key) {
                    // A group other than default takes default's when it gives none.
                    None if name != "default" => None,
                    None => {
                        problem(
                            &key,
                            format!(
                                "Missing required configuration \"{key}\" which has no default value: a connector that \
                                 creates its topics gives topic.creation.default.replication.factor and \
                                 topic.creation.default.partitions (-1 for the broker's default)"
                            ),
                        );
                        None
                    }
                    // Every group's settings take what the default group's definitions take.
                    Some(text) => match super::keys::connector_key(&format!("{PREFIX}default.{setting}")) {
                        Some(defined) => match defined.number_as(&key, text) {
                            Ok(n) => Some(n.clamp(-1, i32::MAX as i64) as i32),
                            Err(message) => {
                                problem(&key, message);
                                None
                            }
                        },
                        None => {
                            problem(&key, format!("{key} has no definition in the host's key table (a bug)"));
                            None
                        }
                    },
                }
            };
            let partitions = number("partitions", &mut problem);
            let replication_factor = number("replication.factor", &mut problem);
            let mut patterns = |setting: &str| -> Vec<FullMatch> {
                let key = key(setting);
                let default = if name == "default" && setting == "include" { ".*" } else { "" };
                let mut found = Vec::new();
                for text in get(&key).unwrap_or(default).split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    match FullMatch::new(text) {
                        Ok(r) => found.push(r),
                        Err(e) => {
                            problem(&key, format!("{key} holds {text}, which is not a pattern Wharf can read: {e}"))
                        }
                    }
                }
                found
            };
            let include = patterns("include");
            let exclude = patterns("exclude");
            let own = format!("{PREFIX}{name}.");
            let configs: Vec<(String, String)> = config
                .iter()
                .filter_map(|(k, v)| k.strip_prefix(&own).map(|setting| (setting.to_string(), v.trim().to_string())))
                .filter(|(setting, _)| {
                    !["include", "exclude", "partitions", "replication.factor"].contains(&setting.as_str())
                })
                .collect();
            groups.push((name.to_string(), include, exclude, partitions, replication_factor, configs));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let (default_partitions, default_replication) =
            groups.last().map(|(_, _, _, p, r, _)| (p.unwrap_or(-1), r.unwrap_or(-1))).unwrap_or((-1, -1));
        let groups = groups
            .into_iter()
            .map(|(name, include, exclude, partitions, replication, configs)| TopicGroup {
                name,
                include,
                exclude,
                partitions: partitions.unwrap_or(default_partitions),
                replication_factor: replication.unwrap_or(default_replication),
                configs,
            })
            .collect();
        Ok(Some(TopicCreation { groups }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_first_group_that_takes_a_topic_gives_its_settings_and_default_the_rest() {
        let creation = TopicCreation::of_connector(&pairs(&[
            ("topic.creation.groups", "compacted, wide"),
            ("topic.creation.default.replication.factor", "1"),
            ("topic.creation.default.partitions", "3"),
            ("topic.creation.compacted.include", "state-.*"),
            ("topic.creation.compacted.cleanup.policy", "compact"),
            ("topic.creation.wide.include", "events-.*, state-wide"),
            ("topic.creation.wide.exclude", "events-tiny"),
            ("topic.creation.wide.partitions", "12"),
        ]))
        .unwrap()
        .unwrap();
        let group =
            |topic: &str| creation.group_for(topic).map(|g| (g.name.as_str(), g.partitions, g.replication_factor));
        assert_eq!(group("state-users"), Some(("compacted", 3, 1)));
        assert_eq!(group("state-wide"), Some(("compacted", 3, 1)), "the first group in the list wins");
        assert_eq!(group("events-clicks"), Some(("wide", 12, 1)));
        assert_eq!(group("events-tiny"), Some(("default", 3, 1)));
        assert_eq!(
            creation.group_for("state-users").unwrap().configs,
            [("cleanup.policy".to_string(), "compact".to_string())]
        );
        assert!(TopicCreation::of_connector(&pairs(&[("topics", "x")])).unwrap().is_none());
    }

    #[test]
    fn missing_or_wrong_settings_are_refused_on_their_keys() {
        let problems = TopicCreation::of_connector(&pairs(&[
            ("topic.creation.groups", "g"),
            ("topic.creation.default.replication.factor", "0"),
            ("topic.creation.g.include", "(?=x)"),
        ]))
        .unwrap_err();
        let keys: Vec<&str> = problems.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "topic.creation.g.include",
                "topic.creation.default.partitions",
                "topic.creation.default.replication.factor"
            ]
        );
        assert!(problems[1].1.starts_with("Missing required configuration \"topic.creation.default.partitions\""));
    }
}
