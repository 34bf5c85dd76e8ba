// Write Wharf connector plugins in JavaScript (ES modules; componentize-js builds the component).
//
//   import { defineSource } from '../../sdk/wharf-sdk.js';
//   class MyTask { open(config) {} poll(maxRecords) { return [...]; } }
//   export const { connector, dataSourceTask, grants } = defineSource({ name: 'my-source', config: [...], Task: MyTask });
//
// Export `dataSourceTask` (or `dataSinkTask`) for the data-source (data-sink) world, whose keys,
// values and header values carry Kafka Connect's data model: a Uint8Array goes to Kafka as it
// is, a string is a string with a string schema, `new Data(schema, value)` a value with a schema
// (`Schema.struct('com.example.Order', [['id', Schema.int32()]])` …), and any other value
// (objects, arrays, numbers, booleans) data without a schema. Export `sourceTask` (`sinkTask`)
// for the source (sink) world: bytes only.
//
// `grants` in the spec lists which config keys name files, folders, addresses or URLs, e.g.
// `grants: { file: 'file-to-read' }` (also file-to-write, folder-to-read, folder-to-write,
// host-port, url): the host grants what their values name, within the worker's wasm.ceiling.*.
//
// Configs arrive as plain objects of strings. A task's methods may return promises (to use
// fetch, say); the host waits for them. An error a method throws fails the task with its
// message and stack, unless it is a RetriableError, which makes the host call again later.
//
// A source that gives exactly-once delivery (contract 0.1.8) says so in its spec
// (`exactlyOnceSupport`, `canDefineTransactionBoundaries`) and exports `exactlyOnce` too, built
// for a `*-exactly-once` world; its task commits and aborts its own transactions with
// wharf-transactions.js, which imports an interface only those worlds have, so this one does not.
//
// A sink reports a record it cannot write with `reportErrant(record, reason)` from
// wharf-sink.js: that module imports an interface the source worlds lack, so this one does not.
//
// A transform plugin (the transform world) exports `transformer` from defineTransform: its
// `apply(record)` returns the record, changed or not, or null to drop it.

import * as host from 'wharf:connector/host@0.1.8';

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

/** Bytes as text (UTF-8), null for null, anything else (a string, data) as it is. */
export function text(value) {
  if (value == null) return null;
  return isBytes(value) ? decoder.decode(value) : value;
}

/** Whether a value is bytes: a Uint8Array, also one the host handed over (from another realm). */
function isBytes(value) {
  return ArrayBuffer.isView(value) && value.BYTES_PER_ELEMENT === 1;
}

export const DECIMAL = 'org.apache.kafka.connect.data.Decimal';
export const DATE = 'org.apache.kafka.connect.data.Date';
export const TIME = 'org.apache.kafka.connect.data.Time';
export const TIMESTAMP = 'org.apache.kafka.connect.data.Timestamp';
const TYPES = ['int8', 'int16', 'int32', 'int64', 'float32', 'float64', 'boolean', 'string', 'bytes', 'array', 'map', 'struct'];
const DAY_MS = 86400000;
const INT_BITS = { int8: 8, int16: 16, int32: 32, int64: 64 };

/**
 * A Kafka Connect schema. Make one with the constructors (`Schema.int32()`, `Schema.string()`,
 * `Schema.array(s)`, `Schema.map(k, v)`, `Schema.struct(name, [[field, schema], ...])`,
 * `Schema.decimal(scale)`, `Schema.date()`, `Schema.time()`, `Schema.timestamp()`) and
 * `.asOptional()`, `.withDefault(v)`, `.withDoc(text)`, `.withVersion(n)`. Build it once: a batch
 * carries each schema once.
 */
export class Schema {
  constructor(type, { optional = false, defaultValue, name, version, doc, parameters, fields = [], key, value } = {}) {
    if (!TYPES.includes(type)) throw new FatalError(`schema type ${type} is not one of ${TYPES.join(', ')}`);
    Object.assign(this, { type, optional, defaultValue, name, version, doc, parameters, fields, key, value });
  }
  with(changes) { return new Schema(this.type, { ...this, ...changes }); }
  asOptional() { return this.with({ optional: true }); }
  withDefault(value) { return this.with({ defaultValue: value }); }
  withDoc(doc) { return this.with({ doc }); }
  withVersion(version) { return this.with({ version }); }
  parameter(key) { return (this.parameters ?? []).find(([k]) => k === key)?.[1]; }
  static int8() { return new Schema('int8'); }
  static int16() { return new Schema('int16'); }
  static int32() { return new Schema('int32'); }
  static int64() { return new Schema('int64'); }
  static float32() { return new Schema('float32'); }
  static float64() { return new Schema('float64'); }
  static boolean() { return new Schema('boolean'); }
  static string() { return new Schema('string'); }
  static bytes() { return new Schema('bytes'); }
  static array(element) { return new Schema('array', { value: element }); }
  static map(key, value) { return new Schema('map', { key, value }); }
  static struct(name, fields) { return new Schema('struct', { name: name ?? undefined, fields }); }
  static decimal(scale) { return new Schema('bytes', { name: DECIMAL, version: 1, parameters: [['scale', String(scale)]] }); }
  static date() { return new Schema('int32', { name: DATE, version: 1 }); }
  static time() { return new Schema('int32', { name: TIME, version: 1 }); }
  static timestamp() { return new Schema('int64', { name: TIMESTAMP, version: 1 }); }
}

/** A value with its schema. */
export class Data {
  constructor(schema, value) { this.schema = schema; this.value = value; }
}

const STRING = Schema.string();
const at = (path) => (path ? ` at ${path}` : '');
const kindOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : isBytes(v) ? 'bytes' : typeof v);

/** The unscaled integer as Connect writes it: big-endian two's complement, shortest. */
function twosComplement(n) {
  const out = [];
  let x = n;
  for (;;) {
    out.push(Number(BigInt.asUintN(8, x)));
    x >>= 8n;
    const sign = out[out.length - 1] & 0x80;
    if ((x === 0n && !sign) || (x === -1n && sign)) break;
  }
  return Uint8Array.from(out.reverse());
}

/** A decimal's unscaled integer at `scale`, from a bigint (already unscaled), or a string or number in decimal. */
function unscaled(v, scale, path) {
  if (typeof v === 'bigint') return v;
  const textValue = typeof v === 'number' ? String(v) : v;
  const m = typeof textValue === 'string' && /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(textValue.trim());
  if (!m || (m[2] === '' && !m[3])) throw new FatalError(`a Decimal${at(path)} takes a bigint (unscaled) or a decimal string, not ${JSON.stringify(v)}`);
  let fraction = m[3] ?? '';
  if (fraction.length > scale) {
    if (/[^0]/.test(fraction.slice(scale))) throw new FatalError(`${textValue}${at(path)} has more decimal places than its schema's scale ${scale}`);
    fraction = fraction.slice(0, scale);
  }
  const digits = `${m[2] || '0'}${fraction.padEnd(scale, '0')}`;
  const n = scale >= 0 ? BigInt(digits) : BigInt(digits) / 10n ** BigInt(-scale);
  return m[1] === '-' ? -n : n;
}

// The value types a number in data without a schema may have had. JavaScript has one number
// type, so a transform's reader notes them (`numberTags`) and its writer writes them back as they
// were, where they still fit.
const NUMBER_TAGS = new Set(['int8', 'int16', 'int32', 'int64', 'float32', 'float64']);

/** A number as the value type it had, or undefined when it no longer fits that type. */
function keptNumber(tag, v) {
  if (tag === 'float64') return typeof v === 'number' ? { tag, val: v } : undefined;
  if (tag === 'float32') return typeof v === 'number' && (Math.fround(v) === v || Number.isNaN(v)) ? { tag, val: v } : undefined;
  const bits = INT_BITS[tag];
  if (!bits || !(typeof v === 'bigint' || Number.isInteger(v))) return undefined;
  const n = BigInt(v);
  return n === BigInt.asIntN(bits, n) ? { tag, val: bits === 64 ? n : Number(n) } : undefined;
}

class BatchWriter {
  /** `numberTags`: a reader's, for data without a schema that a transform read (see BatchReader). */
  constructor(numberTags) { this.schemas = []; this.values = []; this.known = new Map(); this.numberTags = numberTags; }

  part(item, path) {
    if (item === undefined || item === null) return undefined;
    if (isBytes(item)) return { tag: 'raw', val: item };
    if (typeof item === 'string') return { tag: 'data', val: { schema: this.schema(STRING), value: this.value(STRING, item, path) } };
    if (item instanceof Data) {
      const schema = item.schema == null ? undefined : this.schema(item.schema);
      const value = item.schema == null ? this.schemaless(item.value, path) : this.value(item.schema, item.value, path);
      return { tag: 'data', val: { schema, value } };
    }
    return { tag: 'data', val: { schema: undefined, value: this.schemaless(item, path) } };
  }

  schema(s) {
    const known = this.known.get(s);
    if (known !== undefined) return known;
    if (!(s instanceof Schema)) throw new FatalError(`a schema must be a Schema, not ${kindOf(s)}`);
    const fields = s.fields.map(([name, f]) => ({ name, schema: this.schema(f) }));
    const keySchema = s.key == null ? undefined : this.schema(s.key);
    const valueSchema = s.value == null ? undefined : this.schema(s.value);
    const defaultValue = s.defaultValue == null ? undefined : this.value(s, s.defaultValue, 'the default of a schema');
    this.schemas.push({
      type: s.type, optional: s.optional, defaultValue, name: s.name ?? undefined, version: s.version ?? undefined,
      doc: s.doc ?? undefined, parameters: s.parameters ?? undefined, fields, keySchema, valueSchema,
    });
    const index = this.schemas.length - 1;
    this.known.set(s, index);
    return index;
  }

  push(node) { this.values.push(node); return this.values.length - 1; }

  value(s, v, path) {
    if (v === null || v === undefined) {
      if (!s.optional && s.defaultValue == null) throw new FatalError(`null${at(path)}, whose ${s.type} schema is not optional`);
      return this.push({ tag: 'null' });
    }
    const kind = s.type;
    if (s.name === DECIMAL && kind === 'bytes') {
      const scale = Number(s.parameter('scale') ?? 0);
      return this.push({ tag: 'decimal', val: { unscaled: twosComplement(unscaled(v, scale, path)), scale } });
    }
    if (v instanceof Date) {
      const ms = v.getTime();
      if (s.name === DATE) v = Math.floor(ms / DAY_MS);
      else if (s.name === TIME) v = ((ms % DAY_MS) + DAY_MS) % DAY_MS;
      else if (s.name === TIMESTAMP) v = BigInt(ms);
    }
    const bits = INT_BITS[kind];
    if (bits) {
      if (!(typeof v === 'bigint' || Number.isInteger(v))) throw new FatalError(`${kindOf(v)} ${String(v)}${at(path)}, whose schema is ${kind}: give an integer`);
      const n = BigInt(v);
      if (n !== BigInt.asIntN(bits, n)) throw new FatalError(`${n}${at(path)} does not fit ${kind}`);
      return this.push({ tag: kind, val: bits === 64 ? n : Number(n) });
    }
    if (kind === 'float32' || kind === 'float64') {
      if (typeof v !== 'number') throw new FatalError(`${kindOf(v)}${at(path)}, whose schema is ${kind}: give a number`);
      return this.push({ tag: kind, val: v });
    }
    if (kind === 'boolean' || kind === 'string') {
      if (typeof v !== kind) throw new FatalError(`${kindOf(v)}${at(path)}, whose schema is ${kind}: give a ${kind}`);
      return this.push({ tag: kind, val: v });
    }
    if (kind === 'bytes') {
      if (!isBytes(v)) throw new FatalError(`${kindOf(v)}${at(path)}, whose schema is bytes: give a Uint8Array`);
      return this.push({ tag: 'bytes', val: v });
    }
    if (kind === 'array') {
      if (!Array.isArray(v)) throw new FatalError(`${kindOf(v)}${at(path)}, whose schema is an array: give an array`);
      return this.push({ tag: 'array', val: v.map((e, i) => this.value(s.value, e, `${path}[${i}]`)) });
    }
    if (kind === 'map') {
      let entries;
      if (v instanceof Map) entries = [...v.entries()];
      else if (typeof v === 'object' && !Array.isArray(v)) {
        const numeric = INT_BITS[s.key.type] || s.key.type.startsWith('float');
        entries = Object.entries(v).map(([k, e]) => [numeric ? Number(k) : k, e]);
      } else throw new FatalError(`${kindOf(v)}${at(path)}, whose schema is a map: give a Map or an object`);
      return this.push({ tag: 'map', val: entries.map(([k, e]) => [this.value(s.key, k, `${path}.key`), this.value(s.value, e, `${path}[${String(k)}]`)]) });
    }
    // struct
    if (typeof v !== 'object' || Array.isArray(v) || isBytes(v)) {
      throw new FatalError(`${kindOf(v)}${at(path)}, whose schema is a struct: give an object by field name`);
    }
    const names = s.fields.map(([name]) => name);
    const unknown = Object.keys(v).find((k) => !names.includes(k));
    if (unknown !== undefined) throw new FatalError(`the struct${at(path)} has no field ${unknown}; its fields are ${names.join(', ')}`);
    const prefix = path ? `${path}.` : '';
    return this.push({ tag: 'struct', val: s.fields.map(([name, f]) => this.value(f, v[name], `${prefix}${name}`)) });
  }

  /** `tag`: the value type a number had when it was read, kept where it still fits. */
  schemaless(v, path, tag) {
    if (v === null || v === undefined) return this.push({ tag: 'null' });
    if (tag !== undefined) {
      const kept = keptNumber(tag, v);
      if (kept) return this.push(kept);
    }
    const noted = typeof v === 'object' ? this.numberTags?.get(v) : undefined;
    const tags = noted?.values;
    const keyTags = noted?.keys;
    switch (typeof v) {
      case 'boolean': return this.push({ tag: 'boolean', val: v });
      case 'bigint':
        if (v !== BigInt.asIntN(64, v)) throw new FatalError(`${v}${at(path)} does not fit int64`);
        return this.push({ tag: 'int64', val: v });
      case 'number': return this.push(Number.isInteger(v) ? { tag: 'int64', val: BigInt(v) } : { tag: 'float64', val: v });
      case 'string': return this.push({ tag: 'string', val: v });
      default: break;
    }
    if (isBytes(v)) return this.push({ tag: 'bytes', val: v });
    if (Array.isArray(v)) return this.push({ tag: 'array', val: v.map((e, i) => this.schemaless(e, `${path}[${i}]`, tags?.get(i))) });
    if (v instanceof Map) return this.push({ tag: 'map', val: [...v.entries()].map(([k, e]) => [this.schemaless(k, `${path}.key`, keyTags?.get(k)), this.schemaless(e, `${path}[${String(k)}]`, tags?.get(k))]) });
    if (typeof v === 'object' && !(v instanceof Date)) {
      return this.push({ tag: 'map', val: Object.entries(v).map(([k, e]) => [this.schemaless(k, `${path}.key`), this.schemaless(e, `${path}[${k}]`, tags?.get(k))]) });
    }
    throw new FatalError(`${kindOf(v)}${at(path)} has no place in data without a schema: give null, a boolean, number, bigint, string, Uint8Array, array, Map or object, or new Data(schema, value)`);
  }
}

class BatchReader {
  /**
   * `numberTags`, a WeakMap, if given, gets for each array, object or Map read from data without
   * a schema the value types of the numbers it holds (index or key to tag), for a BatchWriter to
   * write them back as they were.
   */
  constructor(schemas, values, numberTags) {
    this.values = values;
    this.numberTags = numberTags;
    this.schemas = [];
    for (const s of schemas) {
      const earlier = (i) => {
        if (i === undefined || i === null) return undefined;
        if (i >= this.schemas.length) throw new FatalError(`the host sent a batch this SDK cannot read: a schema refers to schema ${i}, which is not before it`);
        return this.schemas[i];
      };
      let built = new Schema(s.type, {
        optional: s.optional, name: s.name, version: s.version, doc: s.doc, parameters: s.parameters,
        fields: s.fields.map((f) => [f.name, earlier(f.schema)]), key: earlier(s.keySchema), value: earlier(s.valueSchema),
      });
      if (s.defaultValue !== undefined) built = built.withDefault(this.value(built, s.defaultValue));
      this.schemas.push(built);
    }
  }

  /** [value, schema] of a key, value or header value. */
  part(p) {
    if (p === undefined || p === null) return [null, undefined];
    if (p.tag === 'raw') return [p.val, undefined];
    const schema = p.val.schema === undefined ? undefined : this.schemas[p.val.schema];
    return [this.value(schema, p.val.value), schema];
  }

  /**
   * Notes the value types of the numbers among a container's entries ([key, value index, and for
   * a map the key's index]): { values, keys }, each a Map from an entry's key (an array's index)
   * to the type of the number that is its value, or its key.
   */
  noteNumbers(container, entries) {
    let values;
    let keys;
    for (const [key, i, k] of entries) {
      const tag = this.values[i]?.tag;
      if (NUMBER_TAGS.has(tag)) (values ??= new Map()).set(key, tag);
      const keyTag = k === undefined ? undefined : this.values[k]?.tag;
      if (NUMBER_TAGS.has(keyTag)) (keys ??= new Map()).set(key, keyTag);
    }
    if (values || keys) this.numberTags.set(container, { values, keys });
  }

  value(schema, index) {
    const node = this.values[index];
    if (node === undefined) throw new FatalError(`the host sent a batch this SDK cannot read: value ${index} is beyond its table`);
    switch (node.tag) {
      case 'null': return null;
      case 'decimal': {
        const { unscaled: bytes, scale } = node.val;
        let n = 0n;
        for (const b of bytes) n = (n << 8n) | BigInt(b);
        if (bytes.length && bytes[0] & 0x80) n -= 1n << BigInt(8 * bytes.length);
        const negative = n < 0n;
        let digits = (negative ? -n : n).toString();
        if (scale <= 0) return `${negative ? '-' : ''}${digits}${'0'.repeat(-scale)}`;
        digits = digits.padStart(scale + 1, '0');
        return `${negative ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
      }
      // Lists of indices arrive as typed arrays, whose map would keep numbers only.
      case 'array': {
        const out = Array.from(node.val, (i) => this.value(schema?.value, i));
        if (this.numberTags && !schema) this.noteNumbers(out, Array.from(node.val, (i, at) => [at, i]));
        return out;
      }
      case 'map': {
        const pairs = Array.from(node.val, ([k, v]) => [this.value(schema?.key, k), this.value(schema?.value, v)]);
        const out = pairs.every(([k]) => typeof k === 'string') ? Object.fromEntries(pairs) : new Map(pairs);
        if (this.numberTags && !schema) this.noteNumbers(out, Array.from(node.val, ([k, v], n) => [pairs[n][0], v, k]));
        return out;
      }
      case 'struct': {
        const out = {};
        (schema?.fields ?? []).forEach(([name, f], i) => { out[name] = this.value(f, node.val[i]); });
        return out;
      }
      case 'int64': {
        if (schema?.name === TIMESTAMP) return new Date(Number(node.val));
        return Number.isSafeInteger(Number(node.val)) ? Number(node.val) : node.val;
      }
      case 'int32':
        if (schema?.name === DATE) return new Date(node.val * DAY_MS);
        if (schema?.name === TIME) return new Date(node.val);
        return node.val;
      default: return node.val;
    }
  }
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

/** The task's optional keepAlive(), waited for when async; then `empty`. */
function keepAlive(inner, empty) {
  const kept = inner.keepAlive?.();
  return kept && typeof kept.then === 'function' ? kept.then(() => empty) : empty;
}

/**
 * A source connector. `spec`: name, version, description, config (a list of
 * { name, type, default, required, importance, doc, group }), optional validate(config) returning
 * [key, message] pairs and taskConfigs(config, maxTasks), and Task: a class with open(config),
 * poll(maxRecords) returning records { topic, value, key, partition, sourcePartition,
 * sourceOffset, headers, timestamp }, and optional keepAlive() (called instead of poll, about once a
 * second, while the host holds records back: read nothing, keep connections alive), commit() and
 * close().
 *
 * Exactly-once (contract 0.1.8; exported as `exactlyOnce`, for the `*-exactly-once` worlds):
 * optional exactlyOnceSupport(config), 'supported' when the tasks resume exactly from the offsets
 * the host commits and give each record an offset of its own, 'unsupported', or undefined (the
 * default: the connector does not say); and canDefineTransactionBoundaries(config), true when the
 * tasks end their own transactions with wharf-transactions.js (default false). Either may be a
 * constant instead of a function, and each takes true, false, 'supported' or 'unsupported'.
 */
export function defineSource(spec) {
  class Task {
    static open(config) { return openTask(spec, config, Task); }
    constructor(inner) { this.inner = inner; }
    poll(maxRecords) {
      // 0: the host holds records back; nothing is read (contract 0.1.6).
      if (maxRecords === 0) return guarded(() => keepAlive(this.inner, []));
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
  class DataTask {
    static open(config) { return openTask(spec, config, DataTask); }
    constructor(inner) { this.inner = inner; }
    poll(maxRecords) {
      if (maxRecords === 0) return guarded(() => keepAlive(this.inner, sourceBatch([])));
      return guarded(() => {
        const records = this.inner.poll(maxRecords);
        return records && typeof records.then === 'function' ? records.then(sourceBatch) : sourceBatch(records);
      });
    }
    commit() { return guarded(() => this.inner.commit?.()); }
    close() { try { this.inner.close?.(); } catch (_) { /* closing: nothing to report to */ } }
  }
  return {
    connector: connectorExport(spec, 'source'),
    sourceTask: { Task },
    dataSourceTask: { Task: DataTask },
    grants: grantsExport(spec),
    exactlyOnce: exactlyOnceExport(spec),
  };
}

/**
 * A spec's exactly-once answer for a config: 'supported', 'unsupported', or `fallback` when it
 * gives none. The host cannot take an error here, so a failing or unreadable answer is logged
 * and counts as `fallback`.
 */
function capability(spec, key, config, fallback) {
  let answer;
  try {
    answer = typeof spec[key] === 'function' ? spec[key](Object.fromEntries(config)) : spec[key];
  } catch (e) {
    host.log('error', `${key} failed, so the connector answers as if it did not say: ${failure(e).val}`);
    return fallback;
  }
  if (answer === true || answer === 'supported') return 'supported';
  if (answer === false || answer === 'unsupported') return 'unsupported';
  if (answer != null) {
    const given = typeof answer.then === 'function' ? 'a promise' : typeof answer === 'object' ? kindOf(answer) : typeof answer === 'string' ? `'${answer}'` : `${typeof answer} ${String(answer)}`;
    host.log('error', `${key} returned ${given}, so the connector answers as if it did not say; return true, false, 'supported' or 'unsupported', at once`);
  }
  return fallback;
}

function exactlyOnceExport(spec) {
  return {
    exactlyOnceSupport(config) { return capability(spec, 'exactlyOnceSupport', config, undefined); },
    canDefineTransactionBoundaries(config) { return capability(spec, 'canDefineTransactionBoundaries', config, 'unsupported'); },
  };
}

/** A poll's records as a data batch: keys, values and header values in the batch's tables. */
function sourceBatch(records) {
  const writer = new BatchWriter();
  const batch = (records ?? []).map((r, i) => {
    try {
      return {
        sourcePartition: offsetMap(r.sourcePartition),
        sourceOffset: offsetMap(r.sourceOffset),
        topic: r.topic,
        partition: r.partition ?? undefined,
        key: writer.part(r.key, ''),
        value: writer.part(r.value, ''),
        headers: (r.headers ?? []).map(([key, value]) => ({ key, value: writer.part(value, '') })),
        timestamp: r.timestamp == null ? undefined : BigInt(r.timestamp),
      };
    } catch (e) {
      if (e instanceof FatalError) throw new FatalError(`record ${i} of the poll, for topic ${r.topic}: ${e.message}`);
      throw e;
    }
  });
  return { schemas: writer.schemas, values: writer.values, records: batch };
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
 * (records { topic, partition, offset, key, value, keySchema, valueSchema, headers, timestamp }),
 * and optional flush(offsets), openPartitions(list), closePartitions(list), close(). After flush
 * succeeds the host commits the offsets: make everything durable by then. A record put cannot
 * write may go to reportErrant(record, reason) (wharf-sink.js) instead. Through `sinkTask`
 * keys and values are Uint8Arrays or null; through `dataSinkTask` they are what the connector's
 * converters read: structs as objects by field name, maps as objects (a Map when a key is not a
 * string), arrays, numbers (int64 beyond 2^53 a BigInt), Decimal as its decimal string, Date,
 * Time and Timestamp as Dates, bytes (ByteArrayConverter's) as Uint8Arrays.
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
  class DataTask {
    static open(config) { return openTask(spec, config, DataTask); }
    constructor(inner) { this.inner = inner; }
    openPartitions(partitions) { return Task.prototype.openPartitions.call(this, partitions); }
    put(batch) { return guarded(() => this.inner.put(sinkRecords(batch))); }
    flush(offsets) { return Task.prototype.flush.call(this, offsets); }
    closePartitions(partitions) { return Task.prototype.closePartitions.call(this, partitions); }
    close() { Task.prototype.close.call(this); }
  }
  return {
    connector: connectorExport(spec, 'sink'),
    sinkTask: { Task },
    dataSinkTask: { Task: DataTask },
    grants: grantsExport(spec),
  };
}

/** The records of a data batch, their parts read from its tables. */
function sinkRecords(batch) {
  const reader = new BatchReader(batch.schemas, batch.values);
  return batch.records.map((r) => {
    const [key, keySchema] = reader.part(r.key);
    const [value, valueSchema] = reader.part(r.value);
    return {
      topic: r.topic,
      partition: r.partition,
      offset: Number(r.offset),
      key,
      value,
      keySchema,
      valueSchema,
      headers: r.headers.map((h) => [h.key, reader.part(h.value)[0]]),
      timestamp: r.timestamp == null ? null : Number(r.timestamp),
    };
  });
}

/**
 * A transform plugin: a single message transform of one's own, which a connector config names as
 * Kafka Connect's transforms are named (`transforms.a.type=<name>`, its settings under
 * `transforms.a.`). Export `transformer` for the transform world:
 *
 *   export const { transformer } = defineTransform({
 *     name: 'upper', version: '0.1.0', description: 'Upper-cases string values',
 *     config: [{ name: 'field', default: '', doc: '...' }],
 *     open(config) { this.field = config.field || null; },
 *     apply(record) { if (typeof record.value === 'string') record.value = record.value.toUpperCase(); return record; },
 *   });
 *
 * `spec`: name, version, description, config and validate(config) as for defineSource;
 * open(config) (the settings after `transforms.<alias>.`, defaults filled in); apply(record),
 * which returns what the record becomes (the same object, changed or not, or another) or null to
 * drop it; optional applyBatch(records), one answer for each record in order (by default each
 * through apply), and close(). One transform is opened for each task of a connector that names
 * it: `this` in those methods is that transform's own object (whose prototype is the spec), for
 * the state open sets. Methods may return promises.
 *
 * A record is { topic, partition, key, value, keySchema, valueSchema, headers, timestamp }: its
 * key and value as a sink's (keySchema and valueSchema undefined for bytes, or data without a
 * schema), a header's value a Uint8Array for bytes and `new Data(schema, value)` for data
 * (schema undefined without one), partition and timestamp null when there are none. What apply
 * returns goes out as it is then: a key or value with a schema as data with that schema, a
 * Uint8Array without one as bytes, anything else without one as data without a schema (where the
 * bytes and numbers it came with keep their types: a float64 2.0 stays a float64); header values
 * as a source's.
 */
export function defineTransform(spec) {
  if (typeof spec?.apply !== 'function' && typeof spec?.applyBatch !== 'function') {
    throw new FatalError('defineTransform needs apply(record) (or applyBatch(records)) in its spec');
  }
  class Transform {
    static open(config) {
      return guarded(() => {
        const inner = Object.create(spec);
        const opened = inner.open?.(Object.fromEntries(config));
        return opened && typeof opened.then === 'function' ? opened.then(() => new Transform(inner)) : new Transform(inner);
      });
    }
    constructor(inner) { this.inner = inner; }
    apply(batch) {
      return guarded(() => {
        const read = transformRecords(batch);
        const answers = this.inner.applyBatch ? this.inner.applyBatch(read.records) : applyEach(this.inner, read.records);
        return answers && typeof answers.then === 'function' ? answers.then((a) => transformedBatch(a, read)) : transformedBatch(answers, read);
      });
    }
    close() { try { this.inner.close?.(); } catch (_) { /* closing: nothing to report to */ } }
  }
  return {
    transformer: {
      describe() {
        const { kind: _, ...info } = describe(spec, undefined);
        return info;
      },
      validate(config) {
        const problems = spec.validate ? spec.validate(Object.fromEntries(config)) : [];
        return problems.map(([name, message]) => ({ name, message }));
      },
      Transform,
    },
  };
}

/** Each record through apply; a promise when any answer is one. */
function applyEach(inner, records) {
  const answers = records.map((r) => inner.apply(r));
  return answers.some((a) => a && typeof a.then === 'function') ? Promise.all(answers) : answers;
}

/**
 * The records of a transform batch, read from its tables, and what the answers need to write
 * data without a schema back as it was: for each record, its key's and value's bytes or number
 * type (bytes go back as data only when the answer keeps those very bytes), and the number types
 * inside arrays and maps.
 */
function transformRecords(batch) {
  const numberTags = new WeakMap();
  const reader = new BatchReader(batch.schemas, batch.values, numberTags);
  const kept = [];
  // [value, schema, how it was: the bytes or the number's value type in data without a schema]
  const part = (p) => {
    if (p === undefined || p === null) return [null, undefined, undefined];
    if (p.tag === 'raw') return [p.val, undefined, undefined];
    const [value, schema] = reader.part(p);
    if (schema !== undefined) return [value, schema, undefined];
    const tag = batch.values[p.val.value]?.tag;
    return [value, schema, isBytes(value) ? value : NUMBER_TAGS.has(tag) ? tag : undefined];
  };
  const records = batch.records.map((r) => {
    const [key, keySchema, keyWas] = part(r.key);
    const [value, valueSchema, valueWas] = part(r.value);
    kept.push([keyWas, valueWas]);
    return {
      topic: r.topic,
      partition: r.partition ?? null,
      key,
      value,
      keySchema,
      valueSchema,
      headers: r.headers.map((h) => {
        if (h.value === undefined || h.value === null) return [h.key, null];
        if (h.value.tag === 'raw') return [h.key, h.value.val];
        const [value, schema] = reader.part(h.value);
        return [h.key, new Data(schema, value)];
      }),
      timestamp: r.timestamp == null ? null : Number(r.timestamp),
    };
  });
  return { records, kept, numberTags };
}

/** A key or value as a transform's answer has it; `was` as transformRecords noted it. */
function transformPart(writer, value, schema, was) {
  if (schema != null) return writer.part(new Data(schema, value), '');
  if (value === null || value === undefined) return undefined;
  if (isBytes(value)) return value === was ? { tag: 'data', val: { schema: undefined, value: writer.schemaless(value, '') } } : { tag: 'raw', val: value };
  return { tag: 'data', val: { schema: undefined, value: writer.schemaless(value, '', typeof was === 'string' ? was : undefined) } };
}

/** What apply made of a batch, in the tables of a transformed batch. */
function transformedBatch(answers, read) {
  const given = read.records.length;
  if (!Array.isArray(answers) || answers.length !== given) {
    const got = Array.isArray(answers) ? `${answers.length} answers` : kindOf(answers ?? null);
    throw new FatalError(`applyBatch returned ${got} for ${given} records; it must return one for each, in order (null for a record it drops)`);
  }
  const writer = new BatchWriter(read.numberTags);
  const records = answers.map((r, i) => {
    if (r === null || r === undefined) return undefined;
    if (typeof r !== 'object' || typeof r.topic !== 'string') {
      throw new FatalError(`the answer for record ${i} of the batch is not a record but ${kindOf(r)}: give a record ({ topic, key, value, ... }), or null to drop it`);
    }
    const [keyWas, valueWas] = read.kept[i];
    try {
      return {
        topic: r.topic,
        partition: r.partition ?? undefined,
        key: transformPart(writer, r.key, r.keySchema, keyWas),
        value: transformPart(writer, r.value, r.valueSchema, valueWas),
        headers: (r.headers ?? []).map(([key, value]) => ({ key, value: writer.part(value, '') })),
        timestamp: r.timestamp == null ? undefined : BigInt(r.timestamp),
      };
    } catch (e) {
      if (e instanceof FatalError) throw new FatalError(`record ${i} of the batch, for topic ${r.topic}: ${e.message}`);
      throw e;
    }
  });
  return { schemas: writer.schemas, values: writer.values, records };
}
