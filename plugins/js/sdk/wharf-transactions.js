// A source task's say over its transactions (wharf:connector 0.1.8, Kafka Connect's
// TransactionContext), in a module of its own: it imports `wharf:connector/transaction-context`,
// which only the `*-exactly-once` worlds have (`data-source-exactly-once`,
// `data-source-with-net-exactly-once`), so a plugin built for any other world must not import it:
// componentize-js refuses it (`Error loading module "wharf:connector/transaction-context@0.1.8"`).
//
//   import { abortAfter, commitAfter, definesBoundaries } from './sdk/wharf-transactions.js';
//
//   poll(maxRecords) {
//     const records = ...;
//     if (definesBoundaries() && records.length > 0) commitAfter(records.length - 1);
//     return records;
//   }
//
// The calls act only when the host lets the task define its transactions: its connector runs with
// `transaction.boundary=connector` on a worker with `exactly.once.source.support=enabled`.
// Otherwise `definesBoundaries()` answers false and the others do nothing. The host then commits
// nothing by itself: a transaction ends only when the task commits or aborts it, and one still
// open when the task stops is aborted (its records are polled again from the offsets last
// committed). An aborted record is skipped for good: the host still commits its source offset.
//
// An index names a record of the list the current `poll` returns (0 is the first). Asking for the
// same record, or the same batch, to be both committed and aborted fails the task, as does an
// index beyond the batch or a call with an index outside `poll`.

import * as context from 'wharf:connector/transaction-context@0.1.8';
import { FatalError } from './wharf-sdk.js';

/** Whether the host lets this task define its transactions (`transaction.boundary=connector`). */
export function definesBoundaries() {
  return context.definesBoundaries();
}

/**
 * Commits the transaction once the batch the current `poll` returns is sent (called outside a
 * `poll`: the next one's): its records, and every record sent before them.
 */
export function commit() {
  context.commit();
}

/**
 * Commits the transaction right after record `index` of the batch the current `poll` returns:
 * the records before it, and it, are in the transaction; the ones after it begin the next.
 */
export function commitAfter(index) {
  context.commitAfter(recordIndex('commitAfter', index));
}

/**
 * Aborts the transaction once the batch the current `poll` returns is sent (called outside a
 * `poll`: the next one's): none of its records, nor any sent since the last commit, is ever
 * visible to `read_committed` consumers.
 */
export function abort() {
  context.abort();
}

/**
 * Aborts the transaction right after record `index` of the batch the current `poll` returns;
 * the records after it begin the next.
 */
export function abortAfter(index) {
  context.abortAfter(recordIndex('abortAfter', index));
}

function recordIndex(call, index) {
  if (!Number.isInteger(index) || index < 0 || index > 0xffffffff) {
    throw new FatalError(`${call} takes the index of a record in the list poll returns (0 for the first), not ${String(index)}`);
  }
  return index;
}
