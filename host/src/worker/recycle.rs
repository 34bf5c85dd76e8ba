//! `wasm.instance.recycle.records`: a task's plugin instance (and the transform plugins of its
//! chain) replaced by fresh ones after that many records, at a flush boundary: everything the
//! old instance handled is stored first (a source's offsets, a sink's flush and offset commit),
//! so nothing is lost or repeated. For plugins whose language runtime keeps something of every
//! call; off (0) by default.
//!
//! What carries over is what the plugin already keeps with the host: a source's stored offsets,
//! which the new instance reads when it opens, and a sink's assigned partitions, which it is
//! given again through `open-partitions`. What the old instance held only in its own memory is
//! gone, as after a task restart.

use super::TaskFailure;

/// Counts a task's records and opens its replacement instance when they reach the bound.
pub(super) struct Recycler<T> {
    every: u64,
    since: u64,
    /// The last try found Kafka behind: the next waits for the task's next regular flush.
    waiting: bool,
    label: String,
    reopen: Box<dyn FnMut() -> Result<T, TaskFailure> + Send>,
}

impl<T> Recycler<T> {
    /// None when `every` is 0 (recycling is off).
    pub(super) fn new(
        every: u64,
        label: &str,
        reopen: Box<dyn FnMut() -> Result<T, TaskFailure> + Send>,
    ) -> Option<Self> {
        (every > 0).then(|| Recycler { every, since: 0, waiting: false, label: label.to_string(), reopen })
    }

    /// Records the instance handled since it was opened.
    pub(super) fn count(&mut self, records: usize) {
        self.since = self.since.saturating_add(records as u64);
    }

    /// Whether the instance has handled its `wasm.instance.recycle.records` (and no earlier try
    /// is waiting for the next regular flush).
    pub(super) fn due(&self) -> bool {
        self.since >= self.every && !self.waiting
    }

    /// The flush before the replacement could not store everything yet (Kafka is behind): the
    /// next try comes after the task's next regular flush, not on every loop.
    pub(super) fn wait_for_flush(&mut self) {
        self.waiting = true;
    }

    /// The task flushed at its interval: a waiting replacement may be tried again.
    pub(super) fn flushed(&mut self) {
        self.waiting = false;
    }

    /// A fresh instance, once the caller has stored everything the old one handled.
    pub(super) fn reopen(&mut self) -> Result<T, TaskFailure> {
        let opened = (self.reopen)().map_err(|failure| TaskFailure {
            message: format!(
                "replacing the plugin's instance after {} records (wasm.instance.recycle.records={}) failed: {}",
                self.since, self.every, failure.message
            ),
            ..failure
        })?;
        tracing::info!(
            task = self.label.as_str(),
            "replaced the plugin's instance with a fresh one after {} records (wasm.instance.recycle.records={})",
            self.since,
            self.every
        );
        self.since = 0;
        Ok(opened)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_at_zero_and_due_at_the_bound() {
        assert!(Recycler::<u32>::new(0, "t-0", Box::new(|| Ok(1))).is_none());
        let mut opened = 0;
        let mut r = Recycler::new(
            1000,
            "t-0",
            Box::new(move || {
                opened += 1;
                Ok(opened)
            }),
        )
        .unwrap();
        r.count(999);
        assert!(!r.due());
        r.count(1);
        assert!(r.due());
        assert_eq!(r.reopen().unwrap(), 1);
        assert!(!r.due(), "the count starts again with the new instance");
        r.count(2000);
        r.wait_for_flush();
        assert!(!r.due(), "a try that found Kafka behind waits for the next flush");
        r.flushed();
        assert!(r.due());
        assert_eq!(r.reopen().unwrap(), 2);
    }

    #[test]
    fn a_failed_reopen_names_the_setting() {
        let mut r = Recycler::<u32>::new(10, "t-0", Box::new(|| Err(TaskFailure::new("no memory".into())))).unwrap();
        r.count(10);
        let failure = r.reopen().err().unwrap();
        assert!(failure.message.contains("wasm.instance.recycle.records=10"), "{}", failure.message);
        assert!(failure.message.contains("no memory"), "{}", failure.message);
    }
}
