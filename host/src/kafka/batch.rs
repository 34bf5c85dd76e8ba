//! Reading a consumer's records in batches. rdkafka's `BaseConsumer::poll` returns one message a
//! call, and each call reads the clock, allocates and takes the queue's lock; at a sink's rates
//! that was a third of the thread reading from Kafka. A `FetchQueue` is a librdkafka queue of its
//! own that assigned partitions are forwarded to, read with `rd_kafka_consume_batch_queue`.
//! Rebalances and errors stay on the consumer's queue, which must still be polled: batch reads
//! would serve a rebalance without the application's callback.

use std::ffi::{c_void, CStr, CString};
use std::time::Duration;

use rdkafka::bindings as rd;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};

/// One message of a batch, borrowed from librdkafka until the next one is read.
pub struct RawMessage<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Milliseconds since the epoch, when the record has a timestamp.
    pub timestamp: Option<i64>,
    headers: *mut rd::rd_kafka_headers_t,
}

impl<'a> RawMessage<'a> {
    /// The record's headers in order, as (key, value).
    pub fn headers(&self) -> Vec<(String, Option<Vec<u8>>)> {
        let mut headers = Vec::new();
        if self.headers.is_null() {
            return headers;
        }
        for index in 0.. {
            let (mut name, mut value, mut size) = (std::ptr::null(), std::ptr::null(), 0usize);
            // SAFETY: `headers` belongs to the message, which outlives `self`; librdkafka fills
            // the three out-parameters on success.
            let found = unsafe { rd::rd_kafka_header_get_all(self.headers, index, &mut name, &mut value, &mut size) };
            if found != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                break;
            }
            // SAFETY: on success `name` is a NUL-terminated string and `value` (when not null)
            // points at `size` bytes, both owned by the message.
            let key = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
            let value =
                (!value.is_null()).then(|| unsafe { std::slice::from_raw_parts(value.cast::<u8>(), size) }.to_vec());
            headers.push((key, value));
        }
        headers
    }
}

/// A queue the consumer's assigned partitions feed, read in batches. Must be dropped before its
/// consumer.
pub struct FetchQueue {
    queue: *mut rd::rd_kafka_queue_t,
    client: *mut rd::rd_kafka_t,
}

// SAFETY: librdkafka's queues and handles may be used from any thread; the queue is destroyed
// once, in `drop`.
unsafe impl Send for FetchQueue {}
unsafe impl Sync for FetchQueue {}

impl FetchQueue {
    pub fn new<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> Option<Self> {
        let client = consumer.client().native_ptr();
        // SAFETY: `client` is a live consumer handle.
        let queue = unsafe { rd::rd_kafka_queue_new(client) };
        (!queue.is_null()).then_some(FetchQueue { queue, client })
    }

    /// Sends the partition's records here rather than to the consumer's queue. librdkafka
    /// undoes this on every new assignment, so it is called for each. Records fetched before
    /// stay on the consumer's queue.
    pub fn take_over(&self, topic: &str, partition: i32) -> bool {
        let Ok(topic) = CString::new(topic) else { return false };
        // SAFETY: live handle and NUL-terminated topic; the partition queue reference is released
        // after forwarding.
        unsafe {
            let source = rd::rd_kafka_queue_get_partition(self.client, topic.as_ptr(), partition);
            if source.is_null() {
                return false;
            }
            rd::rd_kafka_queue_forward(source, self.queue);
            rd::rd_kafka_queue_destroy(source);
        }
        true
    }

    /// Reads up to `max` messages, waiting up to `wait` only when none is there yet, and hands
    /// each to `each` (or its error to `error`). Returns how many were read.
    pub fn read(
        &self,
        max: usize,
        wait: Duration,
        mut each: impl FnMut(RawMessage<'_>),
        mut error: impl FnMut(String),
    ) -> usize {
        let mut messages: Vec<*mut rd::rd_kafka_message_t> = vec![std::ptr::null_mut(); max];
        let mut count = self.consume(&mut messages, 0);
        if count == 0 && !wait.is_zero() {
            // Wait for one message only: asked for more, librdkafka would wait for them all.
            let wait_ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
            count = self.consume(&mut messages[..1], wait_ms);
            if count == 1 {
                count += self.consume(&mut messages[1..], 0);
            }
        }
        // Topic names repeat: look each handle's name up once per batch.
        let mut names: Vec<(*mut rd::rd_kafka_topic_t, String)> = Vec::new();
        for &message in &messages[..count] {
            // SAFETY: librdkafka returned `count` valid messages, each destroyed exactly once
            // below, after its last use.
            let m = unsafe { &*message };
            if m.err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                // SAFETY: an error message carries its error string.
                let text = unsafe { CStr::from_ptr(rd::rd_kafka_message_errstr(message)) };
                error(text.to_string_lossy().into_owned());
            } else {
                let name = match names.iter().find(|(rkt, _)| *rkt == m.rkt) {
                    Some((_, name)) => name.as_str(),
                    None => {
                        // SAFETY: a consumed message holds its topic handle.
                        let name = unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(m.rkt)) };
                        names.push((m.rkt, name.to_string_lossy().into_owned()));
                        names.last().map(|(_, n)| n.as_str()).unwrap_or_default()
                    }
                };
                let bytes = |ptr: *mut c_void, len: usize| {
                    // SAFETY: librdkafka's key and payload pointers cover `len` bytes owned by
                    // the message.
                    (!ptr.is_null()).then(|| unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
                };
                let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
                // SAFETY: valid message, and `kind` is written by librdkafka.
                let timestamp = unsafe { rd::rd_kafka_message_timestamp(message, &mut kind) };
                let mut headers = std::ptr::null_mut();
                // SAFETY: valid message; `headers` stays owned by it.
                let has_headers = unsafe { rd::rd_kafka_message_headers(message, &mut headers) }
                    == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR;
                each(RawMessage {
                    topic: name,
                    partition: m.partition,
                    offset: m.offset,
                    key: bytes(m.key, m.key_len),
                    value: bytes(m.payload, m.len),
                    timestamp: (kind != rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
                        && timestamp >= 0)
                        .then_some(timestamp),
                    headers: if has_headers { headers } else { std::ptr::null_mut() },
                });
            }
            // SAFETY: returned by consume_batch_queue, not used after this.
            unsafe { rd::rd_kafka_message_destroy(message) };
        }
        count
    }

    fn consume(&self, into: &mut [*mut rd::rd_kafka_message_t], wait_ms: i32) -> usize {
        if into.is_empty() {
            return 0;
        }
        // SAFETY: `into` has room for `into.len()` message pointers.
        let count = unsafe { rd::rd_kafka_consume_batch_queue(self.queue, wait_ms, into.as_mut_ptr(), into.len()) };
        usize::try_from(count).unwrap_or(0)
    }
}

impl Drop for FetchQueue {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once. Partitions still forwarded here keep the
        // underlying queue alive (librdkafka counts references) until they are unassigned.
        unsafe { rd::rd_kafka_queue_destroy(self.queue) };
    }
}
