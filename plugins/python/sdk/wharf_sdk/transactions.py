"""A source task's say over its Kafka transactions (Kafka Connect's `TransactionContext`).

For plugins built for a world with exactly-once sources (`data-source-exactly-once`,
`data-source-with-net-exactly-once`, wharf:connector 0.1.8 or later) whose connector answers
`can_define_transaction_boundaries` with True. When a user runs the connector with
`transaction.boundary=connector` on a worker with `exactly.once.source.support=enabled`,
`defines_boundaries()` is True and the task decides where its transactions end, from `poll`:

    from wharf_sdk import transactions

    def poll(self, max_records):
        records = self.read(max_records)
        if transactions.defines_boundaries() and records:
            transactions.commit_after(len(records) - 1)   # or commit(), abort(), abort_after(i)
        return records

The host then commits nothing by itself: records stay in one open transaction until the task
commits or aborts it, and a transaction still open when the task stops is aborted (its records
are polled again from the offsets last committed). An aborted record is never visible to
`read_committed` consumers, and its source offset is committed all the same: it is skipped for
good, not polled again.

An index names a record of the list the `poll` being answered returns (0 is the first). Asking
for the same record, or the same batch, to be both committed and aborted, or naming an index
outside that list, or calling `commit_after` or `abort_after` outside `poll`, fails the task.

When `defines_boundaries()` is False (another `transaction.boundary`, or exactly-once support
off) the other calls do nothing. In a world without exactly-once sources, `defines_boundaries()`
is False and the other calls raise `FatalError`, since the plugin cannot define transactions
there.
"""

from . import FatalError

# Imported when the plugin is built (`wharf_sdk.source` imports it too): componentize-py keeps
# only the modules a build imports. None in a world without exactly-once sources.
try:
    from wit_world.imports import transaction_context as _context
except ImportError:
    _context = None

__all__ = ["abort", "abort_after", "commit", "commit_after", "defines_boundaries"]

# The largest index the host can be given (the contract's u32).
_MAX_INDEX = 2**32 - 1


def _required(call: str):
    if _context is None:
        raise FatalError(
            f"transactions.{call} needs a plugin built for an exactly-once world of wharf:connector 0.1.8 "
            "or later (data-source-exactly-once or data-source-with-net-exactly-once): this world has "
            "no transaction-context interface"
        )
    return _context


def _index(call: str, index) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= _MAX_INDEX:
        raise ValueError(
            f"transactions.{call} takes the index of a record in the list poll returns (0 for the first), "
            f"not {index!r}"
        )
    return index


def defines_boundaries() -> bool:
    """Whether the host lets this task define its transactions: True only when the connector
    runs with `transaction.boundary=connector` on a worker with exactly-once source support
    enabled. False in a world without exactly-once sources."""
    return _context is not None and bool(_context.defines_boundaries())


def commit() -> None:
    """Commits the transaction once the batch being returned from `poll` (called outside
    `poll`: the next batch) is sent, with its records and every record sent before them."""
    _required("commit()").commit()


def commit_after(index: int) -> None:
    """Commits the transaction right after record `index` of the list `poll` is about to return:
    the records up to it, and it, are in the transaction; those after it begin the next one."""
    _required("commit_after()").commit_after(_index("commit_after()", index))


def abort() -> None:
    """Aborts the transaction once the batch being returned from `poll` (called outside `poll`:
    the next batch) is sent: none of its records, nor any sent since the last commit, is ever
    visible to `read_committed` consumers."""
    _required("abort()").abort()


def abort_after(index: int) -> None:
    """Aborts the transaction right after record `index` of the list `poll` is about to return;
    the records after it begin the next transaction."""
    _required("abort_after()").abort_after(_index("abort_after()", index))
