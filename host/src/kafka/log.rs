//! A compacted topic read from the beginning and then followed, with a way to wait until
//! everything written so far has been applied ("read to the end"). The config, offset and status
//! stores of a distributed worker are built on it.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::sync::Unpoisoned;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::{ClientConfig, ClientContext, Message, Offset, TopicPartitionList};

/// Reaching the end of a partition is how the follower knows it caught up, not an error worth
/// a log line.
pub struct FollowerContext;

impl ClientContext for FollowerContext {
    fn error(&self, error: KafkaError, reason: &str) {
        let end_of_partition = matches!(error, KafkaError::PartitionEOF(_))
            || error.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::PartitionEOF);
        if !end_of_partition {
            tracing::error!("Kafka client error: {error}: {reason}");
        }
    }
}

impl ConsumerContext for FollowerContext {}

/// One record of the log; `value` is none for a tombstone.
pub struct LogRecord<'a> {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// How long one poll of the follower waits.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How often waiters (`wait_for`, `read_to_end`) are told of progress while the follower reads
/// records that came before the end of their partitions.
const TELL_EVERY: Duration = Duration::from_millis(5);
/// Pause before asking again for the end offsets of a topic the client does not know yet.
const END_OFFSETS_BACKOFF: Duration = Duration::from_millis(20);

pub struct KafkaLog {
    topic: String,
    partitions: i32,
    consumer: Arc<BaseConsumer<FollowerContext>>,
    /// Next offset to read, per partition, as far as the follower got.
    progress: Arc<(Mutex<BTreeMap<i32, i64>>, Condvar)>,
    /// The follower thread (its `Stop` ends it).
    follower: Option<crate::sync::Stoppable>,
}

impl KafkaLog {
    /// Starts following `topic` from its beginning; `apply` sees every record, in order per
    /// partition, on the follower thread.
    pub fn start(
        consumer_config: &ClientConfig,
        topic: &str,
        partitions: i32,
        mut apply: impl FnMut(LogRecord<'_>) + Send + 'static,
    ) -> anyhow::Result<Self> {
        let mut config = consumer_config.clone();
        config
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "true")
            // A writer waits for its own record to come back: keep each idle fetch short.
            .set("fetch.wait.max.ms", "50")
            .set("auto.offset.reset", "earliest");
        // No group: the log is assigned, never subscribed, so a group id only names the client.
        if config.get("group.id").is_none() {
            config.set("group.id", format!("wharf-log-reader-{topic}"));
        }
        let consumer: Arc<BaseConsumer<FollowerContext>> = Arc::new(
            config
                .create_with_context(FollowerContext)
                .map_err(|e| anyhow::anyhow!("cannot create a consumer for topic {topic}: {e}"))?,
        );
        // Offset 0 rather than the logical beginning: librdkafka looks a logical offset up first,
        // which delays the first fetch by half a second. A log whose start moved past 0 is reset
        // to its beginning by `auto.offset.reset`.
        let mut assignment = TopicPartitionList::new();
        for p in 0..partitions {
            assignment
                .add_partition_offset(topic, p, Offset::Offset(0))
                .map_err(|e| anyhow::anyhow!("cannot assign {topic}-{p}: {e}"))?;
        }
        consumer.assign(&assignment).map_err(|e| anyhow::anyhow!("cannot read topic {topic}: {e}"))?;

        let progress: Arc<(Mutex<BTreeMap<i32, i64>>, Condvar)> = Arc::default();
        let follower = {
            let (consumer, progress, topic) = (consumer.clone(), progress.clone(), topic.to_string());
            crate::sync::Stoppable::spawn(format!("log-{topic}"), move |stop| {
                // When waiters were last told, and whether the follower got further since.
                let (mut told, mut untold) = (Instant::now(), false);
                while !stop.is_stopped() {
                    let polled = consumer.poll(POLL_TIMEOUT);
                    // Nothing more to read for now: the end of a partition, or a quiet poll.
                    let caught_up = matches!(polled, None | Some(Err(KafkaError::PartitionEOF(_))));
                    let reached = match polled {
                        None => None,
                        Some(Ok(message)) => {
                            apply(LogRecord {
                                partition: message.partition(),
                                offset: message.offset(),
                                key: message.key(),
                                value: message.payload(),
                            });
                            Some((message.partition(), message.offset() + 1))
                        }
                        Some(Err(KafkaError::PartitionEOF(partition))) => consumer
                            .position()
                            .ok()
                            .and_then(|list| list.find_partition(&topic, partition).and_then(|e| e.offset().to_raw()))
                            .filter(|o| *o >= 0)
                            .map(|o| (partition, o)),
                        Some(Err(e)) => {
                            tracing::warn!("reading topic {topic}: {e}");
                            None
                        }
                    };
                    if let Some((partition, next)) = reached {
                        let mut positions = progress.0.locked();
                        let entry = positions.entry(partition).or_insert(0);
                        *entry = (*entry).max(next);
                        untold = true;
                    }
                    // Waiters are woken once caught up, and every `TELL_EVERY` while catching up:
                    // woken for each record, a reader of a long topic spent more time switching
                    // threads than reading.
                    if untold && (caught_up || told.elapsed() >= TELL_EVERY) {
                        progress.1.notify_all();
                        (told, untold) = (Instant::now(), false);
                    }
                }
            })?
        };
        Ok(KafkaLog { topic: topic.to_string(), partitions, consumer, progress, follower: Some(follower) })
    }

    /// The next offset the follower will read in `partition`.
    pub fn position(&self, partition: i32) -> i64 {
        self.progress.0.locked().get(&partition).copied().unwrap_or(0)
    }

    /// Waits until the follower has read `partition` at least up to `offset`; false on timeout.
    pub fn wait_for(&self, partition: i32, offset: i64, timeout: Duration) -> bool {
        let (lock, changed) = &*self.progress;
        let positions = lock.locked();
        let (positions, _) = changed
            .wait_timeout_while(positions, timeout, |p| p.get(&partition).copied().unwrap_or(0) < offset)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        positions.get(&partition).copied().unwrap_or(0) >= offset
    }

    /// The end of each non-empty partition. A topic created a moment ago may not be known to
    /// the client yet (unknown partition, no leader): asked again until `deadline`.
    fn end_offsets(&self, deadline: Instant) -> anyhow::Result<Vec<(i32, i64)>> {
        // One ListOffsets request for every partition (timestamp -1 asks for the end; under
        // read_committed, the last stable offset). Requests share the connection with the
        // follower's fetches, each of which may wait up to `fetch.wait.max.ms` on the broker, so
        // one request per partition would add up.
        let mut query = TopicPartitionList::new();
        for p in 0..self.partitions {
            query
                .add_partition_offset(&self.topic, p, Offset::End)
                .map_err(|e| anyhow::anyhow!("cannot ask for the end of {}-{p}: {e}", self.topic))?;
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let problem = match self.consumer.offsets_for_times(query.clone(), left) {
                Err(e) => format!("{e}"),
                Ok(answer) => {
                    match answer.elements().iter().find_map(|e| e.error().err().map(|err| (e.partition(), err))) {
                        Some((partition, error)) => format!("partition {partition}: {error}"),
                        None => {
                            return Ok(answer
                                .elements()
                                .iter()
                                .filter_map(|e| {
                                    e.offset().to_raw().filter(|end| *end > 0).map(|end| (e.partition(), end))
                                })
                                .collect())
                        }
                    }
                }
            };
            if Instant::now() + END_OFFSETS_BACKOFF >= deadline {
                anyhow::bail!("cannot read the end offsets of topic {}: {problem}", self.topic);
            }
            tracing::debug!("asking again for the end offsets of topic {} ({problem})", self.topic);
            std::thread::sleep(END_OFFSETS_BACKOFF);
        }
    }

    /// Waits until every record in the topic at the time of the call has been applied.
    pub fn read_to_end(&self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let ends = self.end_offsets(deadline)?;
        let (lock, changed) = &*self.progress;
        let mut positions = lock.locked();
        loop {
            let behind = ends.iter().find(|(p, end)| positions.get(p).copied().unwrap_or(0) < *end);
            let Some((partition, end)) = behind else { return Ok(()) };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                anyhow::bail!(
                    "could not read topic {} to its end within {} ms (partition {partition} is at {} of {end})",
                    self.topic,
                    timeout.as_millis(),
                    positions.get(partition).copied().unwrap_or(0)
                );
            }
            positions = changed
                .wait_timeout(positions, left.min(Duration::from_millis(200)))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for KafkaLog {
    fn drop(&mut self) {
        if let Some(follower) = self.follower.take() {
            follower.stop.stop();
            follower.join();
        }
    }
}
