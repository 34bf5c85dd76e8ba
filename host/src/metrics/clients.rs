//! The worker's Kafka clients as Strimzi's dashboard reads Connect's: bytes sent and received and
//! open broker connections of each task producer and sink consumer; and for Wharf's own family
//! their queues (messages and bytes waiting, requests in flight), round trips to the brokers and
//! producers' batches; from librdkafka's statistics (`statistics.interval.ms`, `STATISTICS_INTERVAL_MS` unless the config sets it).
//! A client's figures go when the client does: the registry holds them weakly.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::sync::Unpoisoned;

/// How often librdkafka reports a client's statistics, unless its config says otherwise.
pub const STATISTICS_INTERVAL_MS: &str = "5000";

/// The most clients whose figures are kept at once; past it a new client's are not shown.
const MAX_CLIENTS: usize = 65_536;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    Producer,
    Consumer,
}

/// One client's latest figures.
pub struct ClientFigures {
    pub kind: ClientKind,
    /// `client.id`, as the first statistics said.
    client_id: OnceLock<String>,
    pub sent_bytes: AtomicU64,
    pub received_bytes: AtomicU64,
    pub connections: AtomicU64,
    /// Messages and bytes waiting in the client's queues (a producer's not yet acknowledged).
    pub queued_messages: AtomicU64,
    pub queued_bytes: AtomicU64,
    /// Requests sent to the brokers and not yet answered.
    pub in_flight: AtomicU64,
    /// The brokers' average and worst 99th-percentile round trip, in µs (0 before the first).
    pub rtt_avg_us: AtomicU64,
    pub rtt_p99_us: AtomicU64,
    /// A producer's average batch, in bytes and messages, over its topics.
    pub batch_bytes_avg: AtomicU64,
    pub batch_messages_avg: AtomicU64,
}

/// What the figures are read from, of librdkafka's statistics (the rest is skipped).
#[derive(serde::Deserialize)]
struct Statistics {
    client_id: String,
    tx_bytes: i64,
    rx_bytes: i64,
    #[serde(default)]
    msg_cnt: i64,
    #[serde(default)]
    msg_size: i64,
    #[serde(default)]
    brokers: HashMap<String, Broker>,
    #[serde(default)]
    topics: HashMap<String, Topic>,
}

#[derive(serde::Deserialize)]
struct Broker {
    state: String,
    #[serde(default)]
    waitresp_cnt: i64,
    #[serde(default)]
    rtt: Window,
}

#[derive(serde::Deserialize)]
struct Topic {
    #[serde(default)]
    batchsize: Window,
    #[serde(default)]
    batchcnt: Window,
    #[serde(default)]
    partitions: HashMap<String, Partition>,
}

/// A consumer's partition: the messages fetched and not yet read, and their bytes.
#[derive(serde::Deserialize)]
struct Partition {
    #[serde(default)]
    fetchq_cnt: i64,
    #[serde(default)]
    fetchq_size: i64,
}

/// One of librdkafka's rolling windows (`rtt`, `batchsize`, `batchcnt`): only what is read.
#[derive(serde::Deserialize, Default)]
struct Window {
    #[serde(default)]
    avg: i64,
    #[serde(default)]
    p99: i64,
    #[serde(default)]
    cnt: i64,
}

/// The average of the windows that saw something, as a whole number (0 when none did).
fn average<'a>(windows: impl Iterator<Item = &'a Window>, pick: fn(&Window) -> i64) -> u64 {
    let (sum, count) = windows.filter(|w| w.cnt > 0).fold((0i64, 0i64), |(s, c), w| (s.saturating_add(pick(w)), c + 1));
    if count == 0 {
        0
    } else {
        (sum / count).max(0) as u64
    }
}

impl ClientFigures {
    /// Takes in a statistics report (librdkafka's JSON); one that does not parse changes nothing.
    pub fn update(&self, json: &[u8]) {
        let Ok(statistics) = serde_json::from_slice::<Statistics>(json) else { return };
        let _ = self.client_id.set(statistics.client_id);
        self.sent_bytes.store(statistics.tx_bytes.max(0) as u64, Ordering::Relaxed);
        self.received_bytes.store(statistics.rx_bytes.max(0) as u64, Ordering::Relaxed);
        let up = statistics.brokers.values().filter(|b| b.state == "UP").count();
        self.connections.store(up as u64, Ordering::Relaxed);
        // A producer's queue is its own; a consumer's, the messages fetched into its partitions'
        // queues and not read yet.
        let (queued, queued_bytes) = match self.kind {
            ClientKind::Producer => (statistics.msg_cnt, statistics.msg_size),
            ClientKind::Consumer => {
                statistics.topics.values().flat_map(|t| t.partitions.values()).fold((0i64, 0i64), |(n, b), p| {
                    (n.saturating_add(p.fetchq_cnt.max(0)), b.saturating_add(p.fetchq_size.max(0)))
                })
            }
        };
        self.queued_messages.store(queued.max(0) as u64, Ordering::Relaxed);
        self.queued_bytes.store(queued_bytes.max(0) as u64, Ordering::Relaxed);
        let in_flight: i64 = statistics.brokers.values().map(|b| b.waitresp_cnt.max(0)).sum();
        self.in_flight.store(in_flight as u64, Ordering::Relaxed);
        self.rtt_avg_us.store(average(statistics.brokers.values().map(|b| &b.rtt), |w| w.avg), Ordering::Relaxed);
        let p99 = statistics.brokers.values().filter(|b| b.rtt.cnt > 0).map(|b| b.rtt.p99.max(0)).max();
        self.rtt_p99_us.store(p99.unwrap_or(0) as u64, Ordering::Relaxed);
        let batches = || statistics.topics.values();
        self.batch_bytes_avg.store(average(batches().map(|t| &t.batchsize), |w| w.avg), Ordering::Relaxed);
        self.batch_messages_avg.store(average(batches().map(|t| &t.batchcnt), |w| w.avg), Ordering::Relaxed);
    }

    /// None until the first statistics arrived.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.get().map(String::as_str)
    }
}

fn clients() -> &'static Mutex<Vec<Weak<ClientFigures>>> {
    static CLIENTS: OnceLock<Mutex<Vec<Weak<ClientFigures>>>> = OnceLock::new();
    CLIENTS.get_or_init(Mutex::default)
}

/// Figures for a client about to be made; its context keeps them and updates them.
pub fn register(kind: ClientKind) -> Arc<ClientFigures> {
    let figures = Arc::new(ClientFigures {
        kind,
        client_id: OnceLock::new(),
        sent_bytes: AtomicU64::new(0),
        received_bytes: AtomicU64::new(0),
        connections: AtomicU64::new(0),
        queued_messages: AtomicU64::new(0),
        queued_bytes: AtomicU64::new(0),
        in_flight: AtomicU64::new(0),
        rtt_avg_us: AtomicU64::new(0),
        rtt_p99_us: AtomicU64::new(0),
        batch_bytes_avg: AtomicU64::new(0),
        batch_messages_avg: AtomicU64::new(0),
    });
    let mut all = clients().locked();
    all.retain(|c| c.strong_count() > 0);
    if all.len() < MAX_CLIENTS {
        all.push(Arc::downgrade(&figures));
    }
    figures
}

/// The clients alive now.
pub fn live() -> Vec<Arc<ClientFigures>> {
    let mut all = clients().locked();
    all.retain(|c| c.strong_count() > 0);
    all.iter().filter_map(Weak::upgrade).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_give_bytes_and_the_brokers_connected() {
        let figures = register(ClientKind::Producer);
        assert_eq!(figures.client_id(), None);
        figures.update(
            br#"{"name": "p#producer-1", "client_id": "wharf-w-producer-1", "type": "producer", "tx_bytes": 1234,
                 "rx_bytes": 56, "msg_cnt": 7, "msg_size": 700,
                 "brokers": {"127.0.0.1:9092/1": {"state": "UP", "nodeid": 1, "waitresp_cnt": 2,
                                                  "rtt": {"avg": 1500, "p99": 4000, "cnt": 10}},
                             "127.0.0.1:9092/2": {"state": "UP", "nodeid": 2, "waitresp_cnt": 1,
                                                  "rtt": {"avg": 500, "p99": 9000, "cnt": 3}},
                             "127.0.0.1:9092/bootstrap": {"state": "INIT", "nodeid": -1,
                                                          "rtt": {"avg": 0, "p99": 0, "cnt": 0}}},
                 "topics": {"t": {"batchsize": {"avg": 16000, "cnt": 4}, "batchcnt": {"avg": 160, "cnt": 4}},
                            "u": {"batchsize": {"avg": 0, "cnt": 0}, "batchcnt": {"avg": 0, "cnt": 0}}}}"#,
        );
        assert_eq!(figures.client_id(), Some("wharf-w-producer-1"));
        assert_eq!(figures.sent_bytes.load(Ordering::Relaxed), 1234);
        assert_eq!(figures.received_bytes.load(Ordering::Relaxed), 56);
        assert_eq!(figures.connections.load(Ordering::Relaxed), 2);
        assert_eq!(figures.queued_messages.load(Ordering::Relaxed), 7);
        assert_eq!(figures.queued_bytes.load(Ordering::Relaxed), 700);
        assert_eq!(figures.in_flight.load(Ordering::Relaxed), 3);
        // The brokers that saw round trips: their average, and the worst 99th percentile.
        assert_eq!(figures.rtt_avg_us.load(Ordering::Relaxed), 1000);
        assert_eq!(figures.rtt_p99_us.load(Ordering::Relaxed), 9000);
        assert_eq!(figures.batch_bytes_avg.load(Ordering::Relaxed), 16000);
        assert_eq!(figures.batch_messages_avg.load(Ordering::Relaxed), 160);
        figures.update(b"not json");
        assert_eq!(figures.sent_bytes.load(Ordering::Relaxed), 1234);
        assert!(live().iter().any(|c| Arc::ptr_eq(c, &figures)));
        let weak = Arc::downgrade(&figures);
        drop(figures);
        assert!(weak.upgrade().is_none());
        assert!(!live().iter().any(|c| c.client_id() == Some("wharf-w-producer-1")));
    }

    #[test]
    fn a_consumers_queue_is_what_its_partitions_fetched_and_it_has_not_read() {
        let figures = register(ClientKind::Consumer);
        figures.update(
            br#"{"client_id": "c", "tx_bytes": 1, "rx_bytes": 2, "msg_cnt": 0, "msg_size": 0,
                 "topics": {"t": {"partitions": {"0": {"fetchq_cnt": 5, "fetchq_size": 500},
                                                 "1": {"fetchq_cnt": 2, "fetchq_size": 200},
                                                 "-1": {"fetchq_cnt": 0, "fetchq_size": 0}}}}}"#,
        );
        assert_eq!(figures.queued_messages.load(Ordering::Relaxed), 7);
        assert_eq!(figures.queued_bytes.load(Ordering::Relaxed), 700);
    }
}
