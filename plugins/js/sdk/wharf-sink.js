// What only sinks may use, in a module of its own: it imports `wharf:connector/errant-records`,
// which the sink and data-sink worlds have and the source worlds lack, so a source that imported
// it would not build. A sink imports it next to wharf-sdk.js:
//
//   import { defineSink } from './sdk/wharf-sdk.js';
//   import { reportErrant } from './sdk/wharf-sink.js';
//
//   put(records) {
//     for (const r of records) {
//       if (!fits(r)) { reportErrant(r, 'no column for it'); continue; }
//       ...
//     }
//   }

import { report } from 'wharf:connector/errant-records@0.1.8';
import { FatalError } from './wharf-sdk.js';

/**
 * Reports a record of the batch being put that the task could not write, and why (Kafka
 * Connect's errant record reporter). `record` is one of the records put received, or any object
 * with its `topic`, `partition` and `offset`.
 *
 * With errors.tolerance=all the host skips the record (to the dead-letter queue, if the
 * connector has one) and this returns: go on with the rest of the batch. Otherwise it throws a
 * FatalError with the host's answer: with errors.tolerance=none the task fails once put returns,
 * whatever put returns, so let the error pass. Thrown too for a record that is not in the batch
 * being put, or a call outside put.
 */
export function reportErrant(record, reason) {
  const { topic, partition, offset } = record ?? {};
  if (typeof topic !== 'string' || !Number.isInteger(partition) || !(typeof offset === 'bigint' || Number.isSafeInteger(offset))) {
    throw new FatalError('reportErrant takes a record put received (or { topic, partition, offset }) and a reason');
  }
  try {
    report(topic, partition, BigInt(offset), String(reason));
  } catch (e) {
    // The host's answer arrives as the payload of the error the bindings throw.
    if (e && typeof e.payload === 'string') throw new FatalError(e.payload);
    throw e;
  }
}
