//! Locks that a panic does not put out of service. A panic while one of the host's locks is held
//! is a bug, and it fails the request or task it happened in; the data behind these locks is
//! whole between statements, so the next caller goes on with it instead of every later request
//! failing on a poisoned lock until the worker is restarted.
//!
//! `Unpoisoned` and `UnpoisonedRw` take those locks. `Stop` is how a thread is asked to stop: a
//! flag whose waits (`Stop::sleep`) end when it is set; a thread that waits on something else is
//! woken there as well (the herder's thread by an event, the group member through the
//! `ClusterView`). `Stoppable` is a thread whose end is awaited with a deadline, as tasks and
//! their fetch threads are. `panic_message` says what a caught panic said.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locking a `Mutex`, poisoned or not.
pub trait Unpoisoned<T: ?Sized> {
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Unpoisoned<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Reading and writing an `RwLock`, as `Unpoisoned::locked` does for a `Mutex`.
pub trait UnpoisonedRw<T: ?Sized> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> UnpoisonedRw<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }
    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The one way a thread of the host is asked to stop: a flag its loop checks between steps,
/// whose waits (`sleep`) end the moment it is set.
#[derive(Default)]
pub struct Stop {
    stopped: std::sync::atomic::AtomicBool,
    lock: Mutex<()>,
    changed: std::sync::Condvar,
}

impl Stop {
    pub fn stop(&self) {
        let _held = self.lock.locked();
        self.stopped.store(true, std::sync::atomic::Ordering::Relaxed);
        self.changed.notify_all();
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits up to `duration`, less if asked to stop meanwhile; true when asked to stop.
    pub fn sleep(&self, duration: std::time::Duration) -> bool {
        let held = self.lock.locked();
        let (_held, _) = self
            .changed
            .wait_timeout_while(held, duration, |_| !self.is_stopped())
            .unwrap_or_else(PoisonError::into_inner);
        self.is_stopped()
    }
}

/// A thread asked to stop through a `Stop`, whose end can be awaited with a deadline (no
/// polling: the thread's end is a message).
pub struct Stoppable {
    pub stop: std::sync::Arc<Stop>,
    /// In a lock only so that holders of a `Stoppable` may be shared between threads.
    ended: Mutex<std::sync::mpsc::Receiver<()>>,
    thread: std::thread::JoinHandle<()>,
}

impl Stoppable {
    /// Starts `run` on a thread named `name`, handing it the thread's `Stop`.
    pub fn spawn(name: String, run: impl FnOnce(std::sync::Arc<Stop>) + Send + 'static) -> std::io::Result<Stoppable> {
        let stop = std::sync::Arc::new(Stop::default());
        let given = stop.clone();
        Self::spawn_with(name, stop, move || run(given))
    }

    /// Starts `run` on a thread named `name`; `stop` is the `Stop` that `run` watches.
    pub fn spawn_with(
        name: String,
        stop: std::sync::Arc<Stop>,
        run: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<Stoppable> {
        let (ends, ended) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            // Dropped when the thread ends, panicking or not: that is the message.
            let _ends = ends;
            run()
        })?;
        Ok(Stoppable { stop, ended: Mutex::new(ended), thread })
    }

    /// Waits for the thread to end, however long that takes.
    pub fn join(self) {
        let _ = self.thread.join();
    }

    /// Waits until `deadline` for the thread to end: joined if it did, handed back if not.
    pub fn ended_by(self, deadline: std::time::Instant) -> Result<(), Stoppable> {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let ended = self.ended.locked().recv_timeout(left);
        match ended {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(self),
            _ => {
                let _ = self.thread.join();
                Ok(())
            }
        }
    }
}

/// What a caught panic said, for a log line.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        return (*message).to_string();
    }
    if let Some(message) = panic.downcast_ref::<String>() {
        return message.clone();
    }
    "a panic without a message".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_ends_a_sleep_at_once_and_the_end_is_seen_without_polling() {
        let started = std::time::Instant::now();
        let thread =
            Stoppable::spawn("sleeper".into(), |stop| while !stop.sleep(std::time::Duration::from_secs(60)) {})
                .unwrap();
        thread.stop.stop();
        assert!(thread.ended_by(std::time::Instant::now() + std::time::Duration::from_secs(5)).is_ok());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let stuck =
            Stoppable::spawn("stuck".into(), |_| std::thread::sleep(std::time::Duration::from_millis(300))).unwrap();
        let stuck = stuck.ended_by(std::time::Instant::now() + std::time::Duration::from_millis(10)).unwrap_err();
        assert!(stuck.ended_by(std::time::Instant::now() + std::time::Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn a_panic_under_the_lock_leaves_it_usable() {
        let shared = std::sync::Arc::new(Mutex::new(1));
        let held = shared.clone();
        let _ = std::thread::spawn(move || {
            let _guard = held.locked();
            panic!("a bug while the lock is held");
        })
        .join();
        assert!(shared.is_poisoned());
        *shared.locked() += 1;
        assert_eq!(*shared.locked(), 2);
    }
}
