//! Topics that belong to Kafka or to the worker itself. A plugin's records never reach them and
//! a sink never reads them: a source that could write the config topic could create connectors
//! with any grant, and one that could write the offset or status topic could rewind or forge
//! other connectors' state.

use super::worker::WorkerConfig;

/// Kafka's own internal topics.
const KAFKA_INTERNAL: &[&str] =
    &["__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"];

/// The topics no plugin may touch, each with what it is.
#[derive(Debug, Clone, Default)]
pub struct ReservedTopics {
    topics: Vec<(String, String)>,
    /// `wharf.reserved.topics`.
    pattern: Option<wharf_connect::transform::FullMatch>,
}

impl ReservedTopics {
    pub fn of(config: &WorkerConfig) -> Self {
        let mut topics: Vec<(String, String)> =
            KAFKA_INTERNAL.iter().map(|t| (t.to_string(), "an internal topic of Kafka".to_string())).collect();
        if let Some(d) = &config.distributed {
            for (topic, setting) in [
                (&d.config_topic, "config.storage.topic"),
                (&d.offset_topic, "offset.storage.topic"),
                (&d.status_topic, "status.storage.topic"),
            ] {
                topics.push((topic.clone(), format!("the worker's {setting}")));
            }
        }
        ReservedTopics { topics, pattern: config.reserved_topics.clone() }
    }

    /// What a reserved topic is, or `None` for a topic plugins may use.
    pub fn reason(&self, topic: &str) -> Option<&str> {
        if let Some((_, why)) = self.topics.iter().find(|(t, _)| t == topic) {
            return Some(why.as_str());
        }
        self.pattern.as_ref().filter(|p| p.0.is_match(topic)).map(|_| "matched by the worker's wharf.reserved.topics")
    }

    /// What makes `topic` one a dead-letter queue may not write: a reserved topic, or any topic
    /// whose name starts with `__`, which Kafka and other systems keep for their own. (Sources
    /// may write such topics, as Debezium's `__debezium-heartbeat.*`; a queue copies records of
    /// the caller's choosing verbatim, so it may not.)
    pub fn dead_letter_reason(&self, topic: &str) -> Option<&str> {
        self.reason(topic).or_else(|| topic.starts_with("__").then_some("named like Kafka's internal topics (__…)"))
    }

    /// The first reserved topic among `topics`, with why it is refused, in words for a status.
    /// Consecutive equal topics (the usual batch) are looked up once.
    pub fn refuse_any<'a>(&self, topics: impl IntoIterator<Item = &'a str>) -> Option<String> {
        let mut previous: Option<&str> = None;
        for topic in topics {
            if previous == Some(topic) {
                continue;
            }
            if let Some(why) = self.reason(topic) {
                return Some(format!(
                    "topic \"{topic}\" is {why}; records from a plugin never reach Kafka's or the worker's \
                     internal topics (choose another topic)"
                ));
            }
            previous = Some(topic);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::properties;
    use crate::config::Mode;

    fn distributed() -> WorkerConfig {
        let text = "bootstrap.servers=localhost:9092\nplugin.path=/p\ngroup.id=g\n\
                    config.storage.topic=cfg\noffset.storage.topic=off\nstatus.storage.topic=st\n";
        WorkerConfig::from_properties(&properties::parse(text, "test").unwrap(), "test", Mode::Distributed).unwrap()
    }

    #[test]
    fn kafka_topics_and_the_storage_topics_are_reserved() {
        let reserved = ReservedTopics::of(&distributed());
        for topic in ["__consumer_offsets", "__transaction_state", "cfg", "off", "st"] {
            assert!(reserved.reason(topic).is_some(), "{topic}");
        }
        assert_eq!(reserved.reason("cfg"), Some("the worker's config.storage.topic"));
        assert_eq!(reserved.reason("orders"), None);
    }

    #[test]
    fn a_dead_letter_queue_may_not_write_internal_or_operator_reserved_topics() {
        let text = "bootstrap.servers=localhost:9092\nplugin.path=/p\ngroup.id=g\nconfig.storage.topic=cfg\n\
                    offset.storage.topic=off\nstatus.storage.topic=st\nwharf.reserved.topics=other-connect-.*\n";
        let config =
            WorkerConfig::from_properties(&properties::parse(text, "test").unwrap(), "test", Mode::Distributed);
        let reserved = ReservedTopics::of(&config.unwrap());
        for topic in ["cfg", "off", "st", "__consumer_offsets", "__anything", "other-connect-configs"] {
            assert!(reserved.dead_letter_reason(topic).is_some(), "{topic}");
        }
        assert_eq!(reserved.reason("other-connect-status"), Some("matched by the worker's wharf.reserved.topics"));
        // Sources may write __-prefixed topics of their own; only the queue may not.
        assert_eq!(reserved.reason("__debezium-heartbeat.db"), None);
        assert_eq!(reserved.dead_letter_reason("dlq-orders"), None);
    }

    #[test]
    fn a_batch_is_refused_for_its_first_reserved_topic() {
        let reserved = ReservedTopics::of(&distributed());
        assert_eq!(reserved.refuse_any(["a", "a", "b"]), None);
        let refusal = reserved.refuse_any(["a", "a", "off", "cfg"]).unwrap();
        assert!(refusal.starts_with("topic \"off\" is the worker's offset.storage.topic;"), "{refusal}");
    }
}
