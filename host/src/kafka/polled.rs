//! A producer whose delivery reports a thread of its own serves, as rdkafka's
//! `ThreadedProducer` does, without its cost when idle.
//!
//! rdkafka's `BaseProducer::poll(timeout)` waits in librdkafka for whole milliseconds and loops
//! until its own deadline; librdkafka wakes up to a millisecond before that deadline, and the
//! rest is spent calling it again without waiting. `ThreadedProducer` polls for 100 ms at a
//! time, so each of its threads kept about 1% of a core busy doing nothing, whatever the load.
//! Here the thread polls for `POLL_WAIT` at a time: delivery reports are still served as they
//! come (the wait ends at each one), and the idle cost is a tenth.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::{ClientConfig, FromClientConfigAndContext};
use rdkafka::error::KafkaResult;
use rdkafka::producer::{BaseProducer, ProducerContext};

/// How long one wait for delivery reports lasts; the thread ends at most this long after the
/// producer is dropped.
const POLL_WAIT: Duration = Duration::from_secs(1);

/// A `BaseProducer` with a thread that serves its delivery reports (and errors, logs,
/// statistics) until the producer is dropped. Everything else is the `BaseProducer`'s.
pub struct PolledProducer<C: ProducerContext + 'static> {
    producer: Arc<BaseProducer<C>>,
    stopped: Arc<AtomicBool>,
}

impl<C: ProducerContext + 'static> PolledProducer<C> {
    /// The producer `config` makes with `context`, and its polling thread.
    pub fn create(config: &ClientConfig, context: C) -> KafkaResult<Self> {
        let producer = Arc::new(BaseProducer::from_config_and_context(config, context)?);
        let stopped = Arc::new(AtomicBool::new(false));
        let (polled, stop) = (producer.clone(), stopped.clone());
        std::thread::Builder::new()
            .name("producer-poll".into())
            .spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    polled.poll(POLL_WAIT);
                }
            })
            .map_err(|e| {
                rdkafka::error::KafkaError::ClientCreation(format!("cannot start the producer's polling thread: {e}"))
            })?;
        Ok(PolledProducer { producer, stopped })
    }
}

impl<C: ProducerContext + 'static> Deref for PolledProducer<C> {
    type Target = BaseProducer<C>;

    fn deref(&self) -> &BaseProducer<C> {
        &self.producer
    }
}

impl<C: ProducerContext + 'static> Drop for PolledProducer<C> {
    /// The thread ends after its current wait and drops the producer last; nothing waits for it,
    /// so that a task or a worker stopping never waits up to `POLL_WAIT`. Records not yet
    /// acknowledged are the owner's to wait for before (`kafka::flush`).
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
    }
}
