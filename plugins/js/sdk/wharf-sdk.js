// Write Wharf connector plugins in JavaScript (ES modules; componentize-js builds the component).
//
//   import { defineSource } from '../../sdk/wharf-sdk.js';
//   class MyTask { open(config) {} poll(maxRecords) { return [...]; } }
//   export const { connector, sourceTask, grants } = defineSource({ name: 'my-source', config: [...], Task: MyTask });
//
// `grants` in the spec lists which config keys name files, folders, addresses or URLs, e.g.
// `grants: { file: 'file-to-read' }` (also file-to-write, folder-to-read, folder-to-write,
// host-port, url): the host grants what their values name, within the worker's wasm.ceiling.*.
//
// Configs arrive as plain objects of strings. A task's methods may return promises (to use
// fetch, say); the host waits for them. An error a method throws fails the task with its
// message and stack, unless it is a RetriableError, which makes the host call again later.

import * as host from 'wharf:connector/host@0.1.2';

/** A passing problem (a network blip, a busy server): the host retries the call later. */
export class RetriableError extends Error {
  constructor(message) { super(message); this.name = 'RetriableError'; }
}

/** The task cannot go on: the host marks it FAILED with this message. */
export class FatalError extends Error {
  constructor(message) { super(message); this.name = 'FatalError'; }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bytes as text (UTF-8), or null. */
export function text(bytes) {
  return bytes == null ? null : decoder.decode(bytes);
}

/** Writes a line to the worker's log: level is trace, debug, info, warn or error. */
export function log(level, message) {
  host.log(level, String(message));
}

function scalar(value) {
  if (value === null || value === undefined) return { tag: 'null' };
  switch (typeof value) {
    case 'boolean': return { tag: 'boolean', val: value };
    case 'bigint': return { tag: 'integer', val: value };
    case 'number': return Number.isInteger(value) ? { tag: 'integer', val: BigInt(value) } : { tag: 'float', val: value };
    case 'string': return { tag: 'text', val: value };
    default: throw new FatalError(`offset and partition values must be null, boolean, number or string, not ${typeof value}`);
  }
}

function offsetMap(object) {
  return Object.entries(object ?? {}).map(([k, v]) => [k, scalar(v)]);
}

function offsetObject(pairs) {
  const object = {};
  for (const [k, v] of pairs) {
    // Integers beyond 2^53 stay BigInts, so they come back exactly as stored.
    const integer = v.tag === 'integer' && Number.isSafeInteger(Number(v.val)) ? Number(v.val) : v.val;
    object[k] = v.tag === 'null' ? null : integer;
  }
  return object;
}

/** The stored offset of a source partition (a plain object), or null. */
export function committedOffset(partition) {
  const [found] = host.committedOffsets([offsetMap(partition)]);
  return found == null ? null : offsetObject(found);
}

function bytes(value) {
  if (value == null) return undefined;
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  throw new FatalError(`keys, values and headers must be strings or Uint8Arrays, not ${typeof value}`);
}

function failure(e) {
  if (e instanceof RetriableError) return { tag: 'retriable', val: e.message };
  if (e instanceof FatalError) return { tag: 'fatal', val: e.message };
  if (e instanceof Error) return { tag: 'fatal', val: `${e.name}: ${e.message}\n${e.stack ?? ''}`.trimEnd() };
  return { tag: 'fatal', val: String(e) };
}

/** Runs a plugin method; a thrown error (or a rejected promise) becomes the host's error. */
function guarded(call) {
  let result;
  try {
    result = call();
  } catch (e) {
    throw failure(e);
  }
  if (result && typeof result.then === 'function') {
    return result.catch((e) => { throw failure(e); });
  }
  return result;
}

const CONFIG_TYPES = ['boolean', 'int', 'long', 'double', 'string', 'list', 'password'];

function describe(spec, kind) {
  return {
    name: spec.name,
    version: spec.version ?? '0.1.0',
    description: spec.description ?? '',
    kind,
    config: (spec.config ?? []).map((key) => {
      const type = key.type ?? 'string';
      if (!CONFIG_TYPES.includes(type)) throw new FatalError(`config key ${key.name} has type ${type}; use one of ${CONFIG_TYPES.join(', ')}`);
      return {
        name: key.name,
        type,
        defaultValue: key.default ?? undefined,
        required: key.required ?? false,
        importance: key.importance ?? 'medium',
        documentation: key.doc ?? '',
        group: key.group ?? undefined,
      };
    }),
  };
}

function connectorExport(spec, kind) {
  return {
    describe() { return describe(spec, kind); },
    validate(config) {
      const problems = spec.validate ? spec.validate(Object.fromEntries(config)) : [];
      return problems.map(([name, message]) => ({ name, message }));
    },
    taskConfigs(config, maxTasks) {
      return guarded(() => {
        const configs = spec.taskConfigs ? spec.taskConfigs(Object.fromEntries(config), maxTasks) : [Object.fromEntries(config)];
        return configs.map((c) => Object.entries(c).filter(([, v]) => v != null).map(([k, v]) => [String(k), String(v)]));
      });
    },
  };
}

const NAMES = ['file-to-read', 'file-to-write', 'folder-to-read', 'folder-to-write', 'host-port', 'url'];

function grantsExport(spec) {
  return {
    declare() {
      return Object.entries(spec.grants ?? {}).map(([key, names]) => {
        if (!NAMES.includes(names)) throw new FatalError(`grants: ${key} names ${names}; use one of ${NAMES.join(', ')}`);
        return { key, names };
      });
    },
  };
}

function sourceRecord(r) {
  return {
    sourcePartition: offsetMap(r.sourcePartition),
    sourceOffset: offsetMap(r.sourceOffset),
    topic: r.topic,
    partition: r.partition ?? undefined,
    key: bytes(r.key),
    value: bytes(r.value),
    headers: (r.headers ?? []).map(([key, value]) => ({ key, value: bytes(value) })),
    timestamp: r.timestamp == null ? undefined : BigInt(r.timestamp),
  };
}

/** Makes and opens the plugin's task, for a `task` resource's `open`. */
function openTask(spec, config, Task) {
  return guarded(() => {
    const inner = new spec.Task();
    const opened = inner.open?.(Object.fromEntries(config));
    // An async open is waited for: no call reaches the task before it finished.
    return opened && typeof opened.then === 'function' ? opened.then(() => new Task(inner)) : new Task(inner);
  });
}

/**
 * A source connector. `spec`: name, version, description, config (a list of
 * { name, type, default, required, importance, doc, group }), optional validate(config) returning
 * [key, message] pairs and taskConfigs(config, maxTasks), and Task: a class with open(config),
 * poll(maxRecords) returning records { topic, value, key, partition, sourcePartition,
 * sourceOffset, headers, timestamp }, and optional commit() and close().
 */
export function defineSource(spec) {
  class Task {
    static open(config) { return openTask(spec, config, Task); }
    constructor(inner) { this.inner = inner; }
    poll(maxRecords) {
      return guarded(() => {
        const records = this.inner.poll(maxRecords);
        return records && typeof records.then === 'function'
          ? records.then((list) => (list ?? []).map(sourceRecord))
          : (records ?? []).map(sourceRecord);
      });
    }
    commit() { return guarded(() => this.inner.commit?.()); }
    close() { try { this.inner.close?.(); } catch (_) { /* closing: nothing to report to */ } }
  }
  return { connector: connectorExport(spec, 'source'), sourceTask: { Task }, grants: grantsExport(spec) };
}

function sinkRecord(r) {
  return {
    topic: r.topic,
    partition: r.partition,
    offset: Number(r.offset),
    key: r.key ?? null,
    value: r.value ?? null,
    headers: r.headers.map((h) => [h.key, h.value ?? null]),
    timestamp: r.timestamp == null ? null : Number(r.timestamp),
  };
}

/**
 * A sink connector. `spec` as for defineSource; Task: a class with open(config), put(records)
 * (records { topic, partition, offset, key, value, headers, timestamp }, keys and values
 * Uint8Array or null), and optional flush(offsets), openPartitions(list), closePartitions(list),
 * close(). After flush succeeds the host commits the offsets: make everything durable by then.
 */
export function defineSink(spec) {
  class Task {
    static open(config) { return openTask(spec, config, Task); }
    constructor(inner) { this.inner = inner; }
    openPartitions(partitions) { return guarded(() => this.inner.openPartitions?.(partitions.map((p) => [p.topic, p.partition]))); }
    put(records) { return guarded(() => this.inner.put(records.map(sinkRecord))); }
    flush(offsets) { return guarded(() => this.inner.flush?.(offsets.map((o) => [o.topic, o.partition, Number(o.offset)]))); }
    closePartitions(partitions) { return guarded(() => this.inner.closePartitions?.(partitions.map((p) => [p.topic, p.partition]))); }
    close() { try { this.inner.close?.(); } catch (_) { /* closing: nothing to report to */ } }
  }
  return { connector: connectorExport(spec, 'sink'), sinkTask: { Task }, grants: grantsExport(spec) };
}
