//! A source task's say over its transactions (contract 0.1.8 `transaction-context`, Kafka
//! Connect's `TransactionContext`): what the plugin asks while it runs is kept in its store (the
//! import is `sandbox`'s), and the source loop reads it with each batch
//! (`SourceInstance::transaction_ends`).
//!
//! The requests act only for a task whose connector runs with `transaction.boundary=connector`
//! on a worker with exactly-once source support enabled (`Grants::defines_transactions`); any
//! other task's are ignored, with one warning, as Kafka Connect gives such a task no context.

use std::collections::BTreeMap;

/// How a transaction the plugin asked for ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Commit,
    Abort,
}

impl End {
    fn verb(self) -> &'static str {
        match self {
            End::Commit => "commit",
            End::Abort => "abort",
        }
    }
}

/// Where the plugin asked one batch's transactions to end: after records (by their index in
/// the batch, in order), and after the whole batch.
#[derive(Debug, Default, PartialEq)]
pub struct TransactionEnds {
    pub after: Vec<(usize, End)>,
    pub batch: Option<End>,
}

/// What the plugin asked since the host last read it.
#[derive(Default)]
pub(crate) struct TransactionRequests {
    /// The task defines its transactions: its requests act.
    pub(crate) defines: bool,
    /// The most records the `poll` under way may return; none outside a poll.
    polling: Option<u32>,
    /// Ends after records of the poll under way, by index: at most one per record, so at most
    /// `wasm.max.records.per.call` of them.
    after: BTreeMap<u32, End>,
    /// The end after the next batch (`commit` or `abort`).
    batch: Option<End>,
    /// The first request that breaks the contract: the task fails with it once the call ends.
    broken: Option<String>,
    /// A request of a task that does not define its transactions was warned about.
    warned: bool,
}

impl TransactionRequests {
    /// Requests that act when `defines` (the task defines its transactions).
    pub(crate) fn new(defines: bool) -> Self {
        TransactionRequests { defines, ..Default::default() }
    }

    /// A `poll` of at most `max` records begins; requests for records of a poll that failed are
    /// forgotten with it (a batch's end it asked for is taken after it, `take_batch_end`).
    pub(crate) fn poll_begins(&mut self, max: u32) {
        self.after.clear();
        self.polling = (max > 0).then_some(max);
    }

    pub(crate) fn poll_ended(&mut self) {
        self.polling = None;
    }

    /// The end the plugin asked of the batch, alone (after a poll that failed); a request that
    /// broke the contract is kept for the next `take`.
    pub(crate) fn take_batch_end(&mut self) -> Option<End> {
        self.batch.take()
    }

    /// What the plugin asked of the batch its poll returned, `count` records long; `Err` says
    /// how a request broke the contract.
    pub(crate) fn take(&mut self, count: usize) -> Result<TransactionEnds, String> {
        if let Some(broken) = self.broken.take() {
            self.after.clear();
            self.batch = None;
            return Err(broken);
        }
        let after = std::mem::take(&mut self.after);
        if let Some((&index, &end)) = after.iter().find(|(&index, _)| index as usize >= count) {
            return Err(format!(
                "the task asked to {} its transaction after record {index} of its poll, which returned {count} \
                 record(s); commit-after and abort-after name a record of the batch the poll returns, from 0",
                end.verb()
            ));
        }
        Ok(TransactionEnds {
            after: after.into_iter().map(|(index, end)| (index as usize, end)).collect(),
            batch: self.batch.take(),
        })
    }

    /// Whether a request acts; the first of a task that does not define its transactions is
    /// warned about.
    fn acts(&mut self, label: &str) -> bool {
        if !self.defines && !self.warned {
            self.warned = true;
            tracing::warn!(
                task = label,
                "the plugin asked to commit or abort a transaction, which only a task whose connector has \
                 transaction.boundary=connector on a worker with exactly.once.source.support=enabled may do; its \
                 requests are ignored (it should check defines-boundaries first)"
            );
        }
        self.defines
    }

    pub(crate) fn ask_batch(&mut self, end: End, label: &str) {
        if !self.acts(label) {
            return;
        }
        if self.batch.is_some_and(|asked| asked != end) {
            self.break_with(
                "the task asked to both commit and abort the transaction of the same batch (Kafka Connect: \
                 \"Connector requested both commit and abort of same transaction\")"
                    .into(),
            );
        }
        self.batch = Some(end);
    }

    pub(crate) fn ask_after(&mut self, index: u32, end: End, label: &str) {
        if !self.acts(label) {
            return;
        }
        let Some(max) = self.polling else {
            return self.break_with(format!(
                "the task asked to {} its transaction after record {index} outside a poll; commit-after and \
                 abort-after name a record of the batch the current poll returns (commit and abort end the \
                 transaction after the next batch)",
                end.verb()
            ));
        };
        if index >= max {
            return self.break_with(format!(
                "the task asked to {} its transaction after record {index} of a poll that may return at most {max} \
                 record(s) (wasm.max.records.per.call)",
                end.verb()
            ));
        }
        if self.after.insert(index, end).is_some_and(|asked| asked != end) {
            self.break_with(format!(
                "the task asked to both commit and abort its transaction after record {index} (Kafka Connect: \
                 \"Connector requested both commit and abort of same record\")"
            ));
        }
    }

    fn break_with(&mut self, why: String) {
        self.broken.get_or_insert(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defining() -> TransactionRequests {
        TransactionRequests { defines: true, ..Default::default() }
    }

    #[test]
    fn a_polls_requests_come_back_in_record_order_with_the_batchs_end() {
        let mut requests = defining();
        requests.poll_begins(100);
        requests.ask_after(7, End::Abort, "t");
        requests.ask_after(2, End::Commit, "t");
        requests.ask_after(7, End::Abort, "t");
        requests.ask_batch(End::Commit, "t");
        requests.poll_ended();
        let ends = requests.take(10).unwrap();
        assert_eq!(ends.after, vec![(2, End::Commit), (7, End::Abort)]);
        assert_eq!(ends.batch, Some(End::Commit));
        assert_eq!(requests.take(0).unwrap(), TransactionEnds::default());
    }

    #[test]
    fn a_batch_request_outside_a_poll_waits_for_the_next_batch() {
        let mut requests = defining();
        requests.ask_batch(End::Abort, "t");
        requests.poll_begins(10);
        requests.poll_ended();
        assert_eq!(requests.take(3).unwrap().batch, Some(End::Abort));
    }

    #[test]
    fn requests_that_break_the_contract_fail_the_task_saying_how() {
        let mut requests = defining();
        requests.ask_after(0, End::Commit, "t");
        assert!(requests.take(1).unwrap_err().contains("outside a poll"));

        requests.poll_begins(5);
        requests.ask_after(3, End::Commit, "t");
        requests.poll_ended();
        let why = requests.take(2).unwrap_err();
        assert!(why.contains("after record 3 of its poll, which returned 2 record(s)"), "{why}");

        requests.poll_begins(5);
        requests.ask_after(9, End::Abort, "t");
        assert!(requests.take(5).unwrap_err().contains("at most 5 record(s)"));

        requests.poll_begins(5);
        requests.ask_after(1, End::Commit, "t");
        requests.ask_after(1, End::Abort, "t");
        assert!(requests.take(5).unwrap_err().contains("same record"));

        requests.ask_batch(End::Commit, "t");
        requests.ask_batch(End::Abort, "t");
        assert!(requests.take(0).unwrap_err().contains("same transaction"));
        assert_eq!(requests.take(0).unwrap(), TransactionEnds::default());
    }

    #[test]
    fn a_task_that_does_not_define_its_transactions_is_not_heard() {
        let mut requests = TransactionRequests::default();
        requests.poll_begins(5);
        requests.ask_after(1, End::Commit, "t");
        requests.ask_after(1, End::Abort, "t");
        requests.ask_batch(End::Abort, "t");
        requests.poll_ended();
        assert_eq!(requests.take(5).unwrap(), TransactionEnds::default());
    }
}
