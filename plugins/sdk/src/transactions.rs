//! A source task's say over its transactions (contract 0.1.8, Kafka Connect's
//! `TransactionContext`), for a connector that runs with `transaction.boundary=connector` on a
//! worker with `exactly.once.source.support=enabled` and says it can
//! ([`SourceConnector::can_define_transaction_boundaries`](crate::SourceConnector::can_define_transaction_boundaries)).
//!
//! The host then commits nothing by itself: the task's records go into one transaction until
//! the task asks for a commit or an abort. An aborted record is never visible to
//! `read_committed` consumers and is skipped for good (its offset is still committed, so the task
//! is not handed it again); a transaction still open when the task stops is aborted, and its
//! records are polled again from the offsets last committed.
//!
//! Records are named by their index in the `Vec` the current [`poll`](crate::SourceTask::poll)
//! returns, from 0:
//!
//! ```ignore
//! fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
//!     let records = self.read(max_records)?;
//!     if wharf_sdk::transactions::defines_boundaries() {
//!         if let Some(last) = records.iter().rposition(|r| self.ends_a_unit(r)) {
//!             wharf_sdk::transactions::commit_after(last as u32);
//!         }
//!     }
//!     Ok(records)
//! }
//! ```
//!
//! Asking to both commit and abort after the same record (or the same batch), or naming a record
//! outside the batch or outside a `poll`, fails the task.

use crate::bindings::data_source::wharf::connector::transaction_context as wit;

/// Whether the host lets this task say where its transactions end. When false, the calls
/// below are ignored (the worker logs one warning).
pub fn defines_boundaries() -> bool {
    wit::defines_boundaries()
}

/// Commits the transaction once the batch the current `poll` returns (outside a `poll`, the
/// next one's) is sent.
pub fn commit() {
    wit::commit()
}

/// Commits the transaction right after record `index` of the batch the current `poll` returns;
/// the records after it begin the next transaction.
pub fn commit_after(index: u32) {
    wit::commit_after(index)
}

/// Aborts the transaction once the batch the current `poll` returns (outside a `poll`, the next
/// one's) is sent: nothing of it becomes visible.
pub fn abort() {
    wit::abort()
}

/// Aborts the transaction right after record `index` of the batch the current `poll` returns;
/// the records after it begin the next transaction.
pub fn abort_after(index: u32) {
    wit::abort_after(index)
}
