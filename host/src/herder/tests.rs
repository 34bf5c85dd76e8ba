//! The herder's logic over in-memory stores and a worker without plugins: no Kafka, no plugin.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::storage::MemoryConfigStore;

struct Fixture {
    herder: Arc<Herder>,
    /// The herder's thread, until a test starts it.
    herder_loop: Option<HerderLoop>,
    store: Arc<MemoryConfigStore>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let (worker, dir) = crate::worker::tests::worker_without_plugins();
    let store = Arc::new(MemoryConfigStore::default());
    let (herder, herder_loop) = Herder::new(Arc::new(worker), store.clone(), None);
    Fixture { herder, herder_loop: Some(herder_loop), store, _dir: dir }
}

/// The herder's thread, running until dropped.
struct Running {
    herder: Arc<Herder>,
    stop: Arc<crate::sync::Stop>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    fn start(f: &mut Fixture) -> Self {
        let stop = Arc::new(crate::sync::Stop::default());
        let herder_loop = f.herder_loop.take().expect("the herder's thread starts once");
        let thread = Some(herder_loop.spawn(stop.clone()).unwrap());
        Running { herder: f.herder.clone(), stop, thread }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        self.herder.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn config(name: &str, class: &str) -> Pairs {
    vec![("connector.class".into(), class.into()), ("name".into(), name.into())]
}

/// Waits up to ten seconds for `check` to hold.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what} did not happen");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_connector_without_its_plugin_fails_saying_which_and_is_not_retried_at_once() {
    let mut f = fixture();
    let _running = Running::start(&mut f);
    f.store.put_connector("orphan", &config("orphan", "no-such-plugin"), None).unwrap();
    eventually("the FAILED status", || {
        f.herder.connector_status("orphan").is_some_and(|s| s.connector.state == State::Failed)
    });
    let trace = f.herder.connector_status("orphan").and_then(|s| s.connector.trace).unwrap_or_default();
    assert!(trace.contains("no-such-plugin"), "{trace}");
    // Rounds that follow (woken here on purpose) do not ask again within the interval.
    let generations = || f.herder.generations.load(std::sync::atomic::Ordering::Relaxed);
    let before = generations();
    for _ in 0..20 {
        f.herder.wake();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(generations(), before, "the failed connector was asked again at once");
    assert!(before >= 1);
}

#[test]
fn requests_beyond_the_queue_bound_are_refused_as_busy() {
    let f = fixture();
    f.store.put_connector("c", &config("c", "no-such-plugin"), None).unwrap();
    // No thread carries them out: the channel fills, where the store's change above waits too.
    for _ in 0..MAX_QUEUED_EVENTS - 1 {
        f.herder.restart_connector("c").unwrap();
    }
    let refused = f.herder.restart_connector("c").unwrap_err();
    assert!(matches!(refused, HerderError::Busy(_)), "{refused}");
    assert!(refused.to_string().contains("1024 requests waiting"), "{refused}");
}

#[test]
fn a_task_restart_is_answered_by_the_herders_thread() {
    let mut f = fixture();
    f.store.put_connector("c", &config("c", "no-such-plugin"), None).unwrap();
    assert!(matches!(f.herder.restart_task("gone", 0), Err(HerderError::NotFound(_))));
    // The herder's thread answers, and promptly: the task does not run here.
    let started = Instant::now();
    let _running = Running::start(&mut f);
    let answer = f.herder.restart_task("c", 3);
    assert!(matches!(answer, Err(HerderError::TaskNotFound(ref name, 3)) if name == "c"), "{answer:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_deleted_connector_loses_its_status() {
    let mut f = fixture();
    let _running = Running::start(&mut f);
    f.store.put_connector("short-lived", &config("short-lived", "no-such-plugin"), None).unwrap();
    eventually("a status", || f.herder.connector_status("short-lived").is_some());
    f.herder.delete_connector("short-lived").unwrap();
    eventually("the status to go", || f.herder.connector_status("short-lived").is_none());
}

#[test]
fn the_last_name_of_a_config_is_the_one_checked_against_the_url() {
    let f = fixture();
    let named = |names: &[&str]| -> Pairs {
        let mut config = config("ignored", "no-such-plugin");
        config.retain(|(k, _)| k != "name");
        config.extend(names.iter().map(|n| ("name".to_string(), n.to_string())));
        config
    };
    let mismatch = f.herder.put_connector("x", named(&["x", "other"]), false).err().map(|e| e.to_string());
    assert!(mismatch.as_deref().is_some_and(|e| e.contains("(other) doesn't match")), "{mismatch:?}");
    // Past the name check, it is refused only for its missing plugin.
    let refused = f.herder.put_connector("x", named(&["other", "x"]), false).err().map(|e| e.to_string());
    assert!(refused.as_deref().is_some_and(|e| e.contains("names no plugin")), "{refused:?}");
}

#[test]
fn a_start_failure_answers_by_its_kind() {
    let name = || "c".to_string();
    let message = || "m".to_string();
    let kind = |e: StartError| HerderError::from(e);
    assert!(matches!(kind(StartError::Invalid { name: name(), problems: message() }), HerderError::BadConfig(_)));
    assert!(matches!(kind(StartError::Plugin { name: name(), message: message() }), HerderError::Plugin(_)));
    assert!(matches!(kind(StartError::Store { name: name(), message: message() }), HerderError::Store(_)));
    assert!(matches!(kind(StartError::Bug { name: name(), message: message() }), HerderError::Bug(_)));
    assert!(matches!(kind(StartError::Conflict { name: name(), message: message() }), HerderError::Bug(_)));
}

/// A cluster member's herder over in-memory stores: its group gives it `owned`.
fn member_fixture() -> (Fixture, Arc<crate::cluster::ClusterView>) {
    let (worker, dir) = crate::worker::tests::worker_without_plugins();
    let store = Arc::new(MemoryConfigStore::default());
    let view = Arc::new(crate::cluster::ClusterView::default());
    view.update(|m| m.generation = 7);
    let (herder, herder_loop) = Herder::new(Arc::new(worker), store.clone(), Some(view.clone()));
    (Fixture { herder, herder_loop: Some(herder_loop), store, _dir: dir }, view)
}

#[test]
fn a_member_starts_and_reports_only_the_connectors_its_group_gave_it() {
    let (mut f, view) = member_fixture();
    let _running = Running::start(&mut f);
    f.store.put_connector("elsewhere", &config("elsewhere", "no-such-plugin"), None).unwrap();
    // Rounds run (woken on purpose) and leave the connector to the worker that owns it.
    for _ in 0..20 {
        f.herder.wake();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(f.herder.connector_status("elsewhere").is_none(), "a member reported a connector it does not own");
    assert_eq!(f.herder.generations.load(std::sync::atomic::Ordering::Relaxed), 0, "it asked a plugin all the same");

    // Given to this member, the connector is tried here, and its status carries the generation.
    view.update(|m| {
        m.owned.connectors.insert("elsewhere".into());
    });
    f.herder.wake();
    eventually("the FAILED status", || {
        f.herder.connector_status("elsewhere").is_some_and(|s| s.connector.state == State::Failed)
    });
    let status = f.herder.connector_status("elsewhere").map(|s| s.connector);
    assert_eq!(status.map(|s| s.generation), Some(7));
}
