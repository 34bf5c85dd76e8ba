// Metrics a source or sink task keeps of its own (wharf:connector 0.1.7), in a module of its own:
// it imports `wharf:connector/metrics`, which the transform world lacks, so a transform that
// imported it would not build. The worker serves each as
// kafka_connect_plugins_<name>{connector, task, <tags>} while the task runs:
//
//   import { counter, gauge, histogram } from './sdk/wharf-metrics.js';
//
//   open(config) {
//     this.written = counter('rows-written', 'Rows written', { table: config.table });
//   },
//   put(records) {
//     ...
//     this.written.update(records.length);
//   }

import { register, update } from 'wharf:connector/metrics@0.1.8';
import { FatalError } from './wharf-sdk.js';

/** A metric the task registered: `update(value)` adds to a counter, sets a gauge, or observes a
 * value into a histogram. */
export class Metric {
  constructor(handle) { this.handle = handle; }

  update(value) {
    update([[this.handle, Number(value)]]);
  }
}

function registered(name, description, kind, tags, buckets) {
  const metric = {
    name: String(name),
    description: String(description ?? ''),
    kind,
    tags: Object.entries(tags ?? {}).map(([k, v]) => [String(k), String(v)]),
    buckets: Float64Array.from(buckets ?? [], Number),
  };
  try {
    return new Metric(register(metric));
  } catch (e) {
    // The host's reason arrives as the payload of the error the bindings throw.
    if (e && typeof e.payload === 'string') throw new FatalError(e.payload);
    throw e;
  }
}

/**
 * Registers a count that only grows, served as kafka_connect_plugins_<name>_total. The name is
 * letters, digits and '_' ('-' and '.' read as '_'); `tags` an object of at most 8 labels of its
 * own. Registering the same name and tags again gives the same metric. Throws a FatalError with
 * the host's reason when it refuses the name, a tag, or one more metric than
 * wasm.max.plugin.metrics.
 */
export function counter(name, description, tags) {
  return registered(name, description, 'counter', tags);
}

/** Registers a value that goes up and down, as counter does (served without _total). */
export function gauge(name, description, tags) {
  return registered(name, description, 'gauge', tags);
}

/** Registers how values spread, as counter does, in buckets of the given rising upper bounds (at
 * most 32; Prometheus's defaults, 0.005 to 10, when none). */
export function histogram(name, description, tags, buckets) {
  return registered(name, description, 'histogram', tags, buckets);
}
