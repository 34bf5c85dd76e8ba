//! The worker's Kafka clients as Strimzi's dashboard reads Connect's: bytes sent and received and
//! open broker connections of each task producer and sink consumer, from librdkafka's
//! statistics (`statistics.interval.ms`, `STATISTICS_INTERVAL_MS` unless the config sets it).
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
}

/// What the figures are read from, of librdkafka's statistics (the rest is skipped).
#[derive(serde::Deserialize)]
struct Statistics {
    client_id: String,
    tx_bytes: i64,
    rx_bytes: i64,
    #[serde(default)]
    brokers: HashMap<String, Broker>,
}

#[derive(serde::Deserialize)]
struct Broker {
    state: String,
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
                 "rx_bytes": 56, "brokers": {"127.0.0.1:9092/1": {"state": "UP", "nodeid": 1},
                 "127.0.0.1:9092/bootstrap": {"state": "INIT", "nodeid": -1}}, "topics": {}}"#,
        );
        assert_eq!(figures.client_id(), Some("wharf-w-producer-1"));
        assert_eq!(figures.sent_bytes.load(Ordering::Relaxed), 1234);
        assert_eq!(figures.received_bytes.load(Ordering::Relaxed), 56);
        assert_eq!(figures.connections.load(Ordering::Relaxed), 1);
        figures.update(b"not json");
        assert_eq!(figures.sent_bytes.load(Ordering::Relaxed), 1234);
        assert!(live().iter().any(|c| Arc::ptr_eq(c, &figures)));
        let weak = Arc::downgrade(&figures);
        drop(figures);
        assert!(weak.upgrade().is_none());
        assert!(!live().iter().any(|c| c.client_id() == Some("wharf-w-producer-1")));
    }
}
