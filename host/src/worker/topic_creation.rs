//! A source task's topic creation (`topic.creation.*`, KIP-158): before the first record to a
//! topic, the topic is created with its group's settings if it does not exist.

use std::collections::HashSet;

use crate::config::topic_creation::TopicCreation;
use crate::config::WorkerConfig;

/// The most topics remembered as existing; beyond it a topic is looked up again (correct, only
/// slower).
const MAX_KNOWN_TOPICS: usize = 10_000;

pub(super) struct TopicCreator {
    /// None when the connector creates no topics, or the worker's `topic.creation.enable` is false.
    creating: Option<(TopicCreation, WorkerConfig, wharf_connect::model::Pairs)>,
    known: HashSet<String>,
    last: String,
}

impl TopicCreator {
    /// `admin` holds the connector's `admin.override.*` settings.
    pub(super) fn new(creation: Option<&TopicCreation>, worker: &WorkerConfig, admin: &[(String, String)]) -> Self {
        let creating = match creation {
            Some(creation) if worker.topic_creation => Some((creation.clone(), worker.clone(), admin.to_vec())),
            _ => None,
        };
        TopicCreator { creating, known: HashSet::new(), last: String::new() }
    }

    /// Makes sure `topic` exists before a record is sent to it; the error says why it could not
    /// be created.
    pub(super) fn ensure(&mut self, topic: &str) -> Result<(), String> {
        let Some((creation, worker, admin)) = &self.creating else { return Ok(()) };
        if self.last == topic || self.known.contains(topic) {
            return Ok(());
        }
        let Some(group) = creation.group_for(topic) else {
            // Not taken by any group (default's include narrowed): left to the broker.
            return Ok(());
        };
        crate::kafka::admin::ensure_plain_topic(
            worker,
            admin,
            topic,
            group.partitions,
            group.replication_factor,
            &group.configs,
        )
        .map_err(|e| format!("{e:#} (topic.creation.{}.*)", group.name))?;
        if self.known.len() < MAX_KNOWN_TOPICS {
            self.known.insert(topic.to_string());
        }
        self.last.clear();
        self.last.push_str(topic);
        Ok(())
    }
}
