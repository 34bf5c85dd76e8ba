//! Kafka Connect's topic tracking (`topic.tracking.enable`): each topic a task writes to or
//! reads from is recorded once in the status store, for `GET /connectors/{name}/topics`.

use std::collections::HashSet;
use std::sync::Arc;

use crate::storage::status::{StatusStore, MAX_TRACKED_TOPICS};

/// A task's record of the topics it used. `used` runs per record (sources) or per partition of
/// a batch (sinks) and compares with the last topic first, so a task that writes one topic pays
/// one string comparison per record; the store's reset count is read once per batch.
pub(super) struct TopicTracker {
    status: Option<Arc<dyn StatusStore>>,
    connector: String,
    task: u32,
    seen: HashSet<String>,
    last: String,
    /// The store's count of resets when `seen` was last cleared.
    resets: u64,
}

impl TopicTracker {
    /// A tracker that records; with `enabled` false, one that does nothing.
    pub(super) fn new(status: Arc<dyn StatusStore>, enabled: bool, connector: &str, task: u32) -> Self {
        TopicTracker {
            status: enabled.then_some(status.clone()),
            connector: connector.to_string(),
            task,
            seen: HashSet::new(),
            last: String::new(),
            resets: status.topic_resets(),
        }
    }

    /// Once per batch: topics forgotten since (a reset) are recorded again as they are used, as
    /// Kafka Connect does.
    pub(super) fn refresh(&mut self) {
        let Some(status) = &self.status else { return };
        let resets = status.topic_resets();
        if resets != self.resets {
            self.resets = resets;
            self.seen.clear();
            self.last.clear();
        }
    }

    /// Per record (or per partition of a batch): records `topic` the first time.
    pub(super) fn used(&mut self, topic: &str) {
        let Some(status) = &self.status else { return };
        if self.last == topic {
            return;
        }
        if !self.seen.contains(topic) && self.seen.len() < MAX_TRACKED_TOPICS {
            self.seen.insert(topic.to_string());
            status.put_topic(&self.connector, topic, self.task, wharf_connect::model::now_ms());
        }
        self.last.clear();
        self.last.push_str(topic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::status::MemoryStatusStore;

    #[test]
    fn each_topic_is_recorded_once_and_a_disabled_tracker_records_none() {
        let store: Arc<dyn StatusStore> = Arc::new(MemoryStatusStore::default());
        let mut tracker = TopicTracker::new(store.clone(), true, "c", 0);
        for topic in ["b", "b", "a", "b"] {
            tracker.used(topic);
        }
        assert_eq!(store.topics("c"), ["a", "b"]);
        let mut off = TopicTracker::new(store.clone(), false, "d", 0);
        off.used("x");
        assert!(store.topics("d").is_empty());
        store.reset_topics("c");
        assert!(store.topics("c").is_empty());
        tracker.refresh();
        tracker.used("b");
        assert_eq!(store.topics("c"), ["b"], "a topic used after a reset is recorded again");
    }
}
