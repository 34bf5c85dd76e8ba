//! A connector's `errors.*` keys, as Kafka Connect reads them: whether a record that a converter
//! or a transform fails on fails the task (`errors.tolerance=none`, the default) or is skipped
//! (`all`), whether such failures are logged and with what, how long a retriable failure is
//! retried, and, for sinks, the dead-letter queue the skipped records go to.

use std::time::Duration;

use super::keys::{connector as C, Key};
use wharf_connect::model::last_value;

/// What a connector does with a record that fails conversion or transformation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// `errors.tolerance=all`: skip failed records instead of failing the task.
    pub tolerate_all: bool,
    /// `errors.retry.timeout`: how long a plugin's retriable failure is retried.
    pub retry_timeout: RetryTimeout,
    /// `errors.retry.delay.max.ms`: the longest wait between two tries.
    pub retry_delay_max: Duration,
    /// `errors.log.enable`: each failure is logged (as a warning; the task goes on).
    pub log: bool,
    /// `errors.log.include.messages`: the log names the record (topic, partition, offset and
    /// timestamp, or the source record's offset).
    pub log_messages: bool,
    /// `errors.deadletterqueue.*`: where a sink's skipped records go, if anywhere.
    pub dead_letter_queue: Option<DeadLetterQueue>,
}

/// `errors.retry.timeout`, as the connector gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryTimeout {
    /// Not set: a plugin's retriable `put` or `poll` failure is retried until it succeeds, as
    /// Kafka Connect retries a task's `RetriableException`.
    Unset,
    /// `-1`: retried for ever, the pauses growing up to `errors.retry.delay.max.ms`.
    Forever,
    /// Retried for at most this long (zero: not at all), then `errors.tolerance` decides.
    Within(Duration),
}

/// A sink's dead-letter queue: the topic skipped records are written to as they were read (key,
/// value, headers and timestamp), with `__connect.errors.*` headers if asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterQueue {
    pub topic: String,
    /// The replication factor of the topic when the worker creates it (one partition).
    pub replication_factor: i16,
    pub context_headers: bool,
}

impl Default for ErrorPolicy {
    fn default() -> Self {
        ErrorPolicy {
            tolerate_all: false,
            retry_timeout: RetryTimeout::Unset,
            retry_delay_max: Duration::from_millis(60_000),
            log: false,
            log_messages: false,
            dead_letter_queue: None,
        }
    }
}

/// A key of the policy and what is wrong with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyProblem {
    pub key: &'static str,
    pub message: String,
}

impl ErrorPolicy {
    /// The policy a connector config gives; every problem, each with its key. `topics` are the
    /// sink's topics, which may not include the dead-letter queue.
    pub fn of_connector(config: &[(String, String)], topics: &[String]) -> Result<Self, Vec<PolicyProblem>> {
        let get = |key: &Key| last_value(config, key.name).map(str::trim);
        let mut problems = Vec::new();
        let mut policy = ErrorPolicy::default();
        let mut problem = |key: &'static str, message: String| problems.push(PolicyProblem { key, message });

        // Each value checked by its definition in `config::keys`; a refused one is noted.
        let mut checked = |key: &'static Key| match super::keys::connector_value(config, key.name)? {
            Ok(value) => Some(value),
            Err(message) => {
                problem(key.name, message);
                None
            }
        };
        use super::keys::Checked::{Flag, Number, Word};
        policy.tolerate_all = checked(&C::ERRORS_TOLERANCE) == Some(Word("all"));
        match checked(&C::ERRORS_RETRY_TIMEOUT) {
            Some(Number(-1)) => policy.retry_timeout = RetryTimeout::Forever,
            Some(Number(ms)) => policy.retry_timeout = RetryTimeout::Within(Duration::from_millis(ms.max(0) as u64)),
            _ => {}
        }
        if let Some(Number(ms)) = checked(&C::ERRORS_RETRY_DELAY_MAX_MS) {
            policy.retry_delay_max = Duration::from_millis(ms.max(1) as u64);
        }
        policy.log = checked(&C::ERRORS_LOG_ENABLE) == Some(Flag(true));
        policy.log_messages = checked(&C::ERRORS_LOG_INCLUDE_MESSAGES) == Some(Flag(true));
        let context_headers = checked(&C::ERRORS_DEADLETTERQUEUE_CONTEXT_HEADERS_ENABLE) == Some(Flag(true));
        let replication_factor = match checked(&C::ERRORS_DEADLETTERQUEUE_TOPIC_REPLICATION_FACTOR) {
            Some(Number(n)) => n.clamp(-1, i16::MAX as i64) as i16,
            _ => 3,
        };
        if let Some(topic) = get(&C::ERRORS_DEADLETTERQUEUE_TOPIC_NAME).filter(|t| !t.is_empty()) {
            if topics.iter().any(|t| t == topic) {
                problem(
                    C::ERRORS_DEADLETTERQUEUE_TOPIC_NAME.name,
                    format!(
                        "errors.deadletterqueue.topic.name={topic}: the DLQ topic '{topic}' may not be included in \
                         the list of topics ('topics={}') consumed by the connector, or a failed record would be read \
                         again and again; choose another topic",
                        topics.join(",")
                    ),
                );
            }
            policy.dead_letter_queue =
                Some(DeadLetterQueue { topic: topic.to_string(), replication_factor, context_headers });
        }
        if problems.is_empty() {
            Ok(policy)
        } else {
            Err(problems)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn connects_defaults_and_keys() {
        assert_eq!(ErrorPolicy::of_connector(&[], &[]).unwrap(), ErrorPolicy::default());
        let policy = ErrorPolicy::of_connector(
            &pairs(&[
                ("errors.tolerance", "ALL"),
                ("errors.retry.timeout", "-1"),
                ("errors.retry.delay.max.ms", "500"),
                ("errors.log.enable", "true"),
                ("errors.log.include.messages", "true"),
                ("errors.deadletterqueue.topic.name", "dlq"),
                ("errors.deadletterqueue.topic.replication.factor", "1"),
                ("errors.deadletterqueue.context.headers.enable", "true"),
            ]),
            &["in".to_string()],
        )
        .unwrap();
        assert!(policy.tolerate_all && policy.log && policy.log_messages);
        assert_eq!(policy.retry_timeout, RetryTimeout::Forever);
        assert_eq!(policy.retry_delay_max, Duration::from_millis(500));
        assert_eq!(
            policy.dead_letter_queue,
            Some(DeadLetterQueue { topic: "dlq".into(), replication_factor: 1, context_headers: true })
        );
    }

    #[test]
    fn a_retry_timeout_is_unset_forever_or_bounded() {
        let timeout = |v: &str| ErrorPolicy::of_connector(&pairs(&[("errors.retry.timeout", v)]), &[]).unwrap();
        assert_eq!(ErrorPolicy::default().retry_timeout, RetryTimeout::Unset);
        assert_eq!(timeout("0").retry_timeout, RetryTimeout::Within(Duration::ZERO));
        assert_eq!(timeout(" 2500 ").retry_timeout, RetryTimeout::Within(Duration::from_millis(2500)));
        assert_eq!(timeout("-1").retry_timeout, RetryTimeout::Forever);
    }

    #[test]
    fn every_wrong_key_is_named() {
        let problems = ErrorPolicy::of_connector(
            &pairs(&[
                ("errors.tolerance", "some"),
                ("errors.retry.timeout", "-2"),
                ("errors.log.enable", "yes"),
                ("errors.deadletterqueue.topic.name", "in"),
            ]),
            &["in".to_string()],
        )
        .unwrap_err();
        let keys: Vec<&str> = problems.iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            ["errors.tolerance", "errors.retry.timeout", "errors.log.enable", "errors.deadletterqueue.topic.name"]
        );
        assert!(problems[3].message.contains("may not be included in the list of topics"), "{}", problems[3].message);
    }
}
