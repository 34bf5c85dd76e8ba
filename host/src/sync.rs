//! Locks that a panic does not put out of service. A panic while one of the host's locks is held
//! is a bug, and it fails the request or task it happened in; the data behind these locks is
//! whole between statements, so the next caller goes on with it instead of every later request
//! failing on a poisoned lock until the worker is restarted.

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
