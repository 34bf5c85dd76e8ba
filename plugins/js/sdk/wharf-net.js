// TCP connections with deadlines, and TLS through the worker, for plugins built for the
// `data-source-with-net` and `data-sink-with-net` worlds (`wit/net.wit`). Import this module only
// from such plugins: it imports `wasi:sockets` and `wasi:tls`, which other worlds lack.
//
//   import { Connection, connectionGrantsOf } from '../../sdk/wharf-net.js';
//   const conn = Connection.connect('db.example.com', 5432, { timeoutMs: 10000 });
//   conn.startTls();                           // optional: the worker runs the handshake
//   conn.writeAll('hello\n');
//   const reply = conn.readLine({ timeoutMs: 5000 });
//   conn.close();
//
// A plugin may connect only to the addresses its connector's config grants (`wasm.net.connect`,
// or keys the connector declares in `grants` or `connections`). What a server's certificate must
// prove is the worker's decision, not the plugin's: a JDBC URL's `sslmode` for the servers it
// names, otherwise a chain to the authorities in `wasm.tls.trust` (the public ones without it)
// and the server's name.
//
// Every wait has a deadline: a call that cannot finish in time throws a `NetError` whose `code`
// is 'timeout' and leaves the connection as it was (a read may be tried again). Other codes:
// 'refused', 'reset', 'closed', 'denied' (an address the connector was not granted), 'tls',
// 'unresolved', 'other'; each message says what was being done and with which server. Connect
// only from a task's calls (`open`, `put`, `poll`, ...): there is no network while the plugin is
// being built.
//
// Every resource is dropped explicitly, in order (pollables, streams, the TLS connection, the
// socket): the component's glue does not leave them to the garbage collector once used.
import { instanceNetwork } from 'wasi:sockets/instance-network@0.2.12';
import { resolveAddresses, ResolveAddressStream } from 'wasi:sockets/ip-name-lookup@0.2.12';
import { TcpSocket } from 'wasi:sockets/tcp@0.2.12';
import { createTcpSocket } from 'wasi:sockets/tcp-create-socket@0.2.12';
import { Error as IoError } from 'wasi:io/error@0.2.12';
import { poll, Pollable } from 'wasi:io/poll@0.2.12';
import { InputStream, OutputStream } from 'wasi:io/streams@0.2.12';
import { now, subscribeInstant } from 'wasi:clocks/monotonic-clock@0.2.12';
import { ClientConnection, ClientHandshake, FutureClientStreams } from 'wasi:tls/types@0.2.0-draft';

// The resource types the calls above return. The component's glue makes a type's class only when
// its interface is imported by name, so each is imported (and kept) even where no code names it.
export const RESOURCE_TYPES = [
  ResolveAddressStream, TcpSocket, IoError, Pollable, InputStream, OutputStream, ClientConnection, FutureClientStreams,
];

// `wasi:sockets/network` has a resource and no function, and componentize-js 0.23 makes no class
// for such a resource while its glue names one: `instanceNetwork()` would throw "ReferenceError:
// import_network_0_2_12$Network is not defined". The glue runs in a global object of its own and
// looks the name up there, so a class of that name is put into that global (reached through the
// Function constructor of a function of the glue). Such a network has no way to be dropped from
// JavaScript (its drop is private to the glue), so each instance takes one network and keeps it:
// sockets borrow it only while they connect.
const NETWORK_CLASS = 'import_network_0_2_12$Network';
let sharedNetwork = null;
function network() {
  if (sharedNetwork === null) {
    const glueGlobal = instanceNetwork.constructor('return this')();
    if (glueGlobal[NETWORK_CLASS] === undefined) glueGlobal[NETWORK_CLASS] = class Network {};
    try {
      sharedNetwork = instanceNetwork();
    } catch (e) {
      throw new NetError('other', `cannot open the network (the toolchain's bindings changed?): ${e?.message ?? e}`);
    }
  }
  return sharedNetwork;
}

/** The most bytes one read asks the host for. */
export const MAX_READ_BYTES = 64 * 1024;
/** The most addresses a host name's lookup is tried at. */
export const MAX_ADDRESSES = 16;
/** The longest line `readLine` gathers unless told otherwise. */
export const MAX_LINE_BYTES = 1024 * 1024;

const DEFAULT_TIMEOUT_MS = 30000;
const dispose = Symbol.dispose || Symbol.for('dispose');
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A failed network operation; `code` says which kind (see above). */
export class NetError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'NetError';
    this.code = code;
  }
}

function drop(resource) {
  if (resource != null) {
    try {
      resource[dispose]();
    } catch (_) {
      // Already dropped, or consumed by the call it was handed to.
    }
  }
}

function deadlineIn(timeoutMs) {
  return now() + BigInt(Math.max(0, Math.floor((timeoutMs ?? DEFAULT_TIMEOUT_MS) * 1e6)));
}

/** Waits on a pollable made by `subscribe`, then drops it; throws 'timeout' at `deadline`. */
function waitOn(pollable, deadline, what) {
  try {
    if (pollable.ready()) return;
    const timer = subscribeInstant(deadline);
    let ready;
    try {
      ready = poll([pollable, timer]);
    } finally {
      drop(timer);
    }
    if (!Array.from(ready).includes(0)) throw new NetError('timeout', `${what} timed out`);
  } finally {
    drop(pollable);
  }
}

const SOCKET_CODES = {
  'connection-refused': 'refused',
  'connection-reset': 'reset',
  'connection-aborted': 'reset',
  timeout: 'timeout',
  'access-denied': 'denied',
  'not-supported': 'denied',
  'name-unresolvable': 'unresolved',
  'temporary-resolver-failure': 'unresolved',
  'permanent-resolver-failure': 'unresolved',
};

function payloadOf(e) {
  return e && Object.prototype.hasOwnProperty.call(e, 'payload') ? e.payload : undefined;
}

function socketError(e, what) {
  const payload = payloadOf(e);
  if (typeof payload !== 'string') return e instanceof NetError ? e : new NetError('other', `${what}: ${e?.message ?? e}`);
  const detail =
    payload === 'access-denied'
      ? 'not granted to this connector (wasm.net.connect, or a key the plugin declares)'
      : payload.replaceAll('-', ' ');
  return new NetError(SOCKET_CODES[payload] ?? 'other', `${what}: ${detail}`);
}

function streamError(e, what) {
  const payload = payloadOf(e);
  if (payload?.tag === 'closed') return new NetError('closed', `${what}: the connection is closed`);
  if (payload?.tag === 'last-operation-failed') {
    let detail;
    try {
      detail = payload.val.toDebugString();
    } finally {
      drop(payload.val);
    }
    return new NetError('reset', `${what}: ${detail}`);
  }
  return e;
}

function concat(a, b) {
  if (a.length === 0) return b;
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a, 0);
  joined.set(b, a.length);
  return joined;
}

/** `host` as an address when it is an IP address literal, else undefined. */
function literal(host) {
  const bare = host.replace(/^\[|\]$/g, '');
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(bare);
  if (v4) {
    const octets = v4.slice(1).map(Number);
    if (octets.every((o) => o <= 255)) return [{ tag: 'ipv4', val: octets }];
  }
  return undefined;
}

function resolve(net, host, deadline) {
  const what = `resolving ${host}`;
  let lookup;
  try {
    lookup = resolveAddresses(net, host);
  } catch (e) {
    throw socketError(e, what);
  }
  const addresses = [];
  try {
    for (;;) {
      let address;
      try {
        address = lookup.resolveNextAddress();
      } catch (e) {
        if (payloadOf(e) === 'would-block') {
          waitOn(lookup.subscribe(), deadline, what);
          continue;
        }
        throw socketError(e, what);
      }
      if (address === undefined) return addresses;
      if (addresses.length < MAX_ADDRESSES) addresses.push(address);
    }
  } finally {
    drop(lookup);
  }
}

function shownOf(address, port) {
  if (address.tag === 'ipv4') return `${address.val.join('.')}:${port}`;
  return `[${Array.from(address.val, (w) => w.toString(16)).join(':')}]:${port}`;
}

function connectTo(net, address, host, port, deadline) {
  const shown = shownOf(address, port);
  const what = `connecting to ${shown}`;
  const remote =
    address.tag === 'ipv4'
      ? { tag: 'ipv4', val: { port, address: address.val } }
      : { tag: 'ipv6', val: { port, flowInfo: 0, address: address.val, scopeId: 0 } };
  let socket;
  try {
    socket = createTcpSocket(address.tag);
  } catch (e) {
    throw socketError(e, what);
  }
  try {
    socket.startConnect(net, remote);
    for (;;) {
      try {
        const [input, output] = socket.finishConnect();
        return new Connection(socket, input, output, host, shown);
      } catch (e) {
        if (payloadOf(e) !== 'would-block') throw e;
        waitOn(socket.subscribe(), deadline, what);
      }
    }
  } catch (e) {
    drop(socket);
    throw socketError(e, what);
  }
}

/** One TCP connection, perhaps encrypted. Close it when done: the worker counts a task's open
 * connections. */
export class Connection {
  constructor(socket, input, output, host, shown) {
    this.socket = socket;
    this.streams = [input, output];
    this.tls = null;
    this.host = host; // as given to `connect`: the name TLS verifies by default
    this.shown = shown; // the address connected to, for messages
    this.buffer = new Uint8Array(0);
  }

  /** Opens a connection to `host` (a name or an IP address) at `port`, trying each address the
   * name resolves to in turn, all within `timeoutMs`. */
  static connect(host, port, { timeoutMs } = {}) {
    const deadline = deadlineIn(timeoutMs);
    const net = network();
    const addresses = literal(host) ?? resolve(net, host, deadline);
    let last = new NetError('unresolved', `${host} resolves to no address`);
    for (const address of addresses) {
      try {
        return connectTo(net, address, host, port, deadline);
      } catch (e) {
        if (!(e instanceof NetError)) throw e;
        last = e;
      }
    }
    throw last;
  }

  /** Encrypts the connection: the worker runs a TLS handshake over it with `serverName` (the host
   * connected to, by default) under the policy the connector's config sets. */
  startTls({ serverName, timeoutMs } = {}) {
    if (this.tls) throw new NetError('tls', 'the connection is already encrypted');
    if (this.buffer.length > 0) {
      throw new NetError('tls', 'the server sent bytes before the TLS handshake; refusing to start it');
    }
    const [input, output] = this.usable();
    const name = serverName || this.host.replace(/^\[|\]$/g, '');
    this.streams = null;
    const deadline = deadlineIn(timeoutMs);
    const future = ClientHandshake.finish(new ClientHandshake(name, input, output));
    let outcome;
    try {
      while ((outcome = future.get()) === undefined) {
        waitOn(future.subscribe(), deadline, `the TLS handshake with ${name}`);
      }
    } finally {
      drop(future);
    }
    if (outcome.tag !== 'ok') throw new NetError('tls', "the TLS handshake's result was taken twice");
    if (outcome.val.tag !== 'ok') {
      const error = outcome.val.val;
      let detail;
      try {
        detail = error.toDebugString();
      } finally {
        drop(error);
      }
      throw new NetError('tls', detail);
    }
    const [connection, tlsInput, tlsOutput] = outcome.val.val;
    this.tls = connection;
    this.streams = [tlsInput, tlsOutput];
  }

  get isTls() {
    return this.tls !== null;
  }

  /** Up to `maxBytes` bytes (a Uint8Array) as soon as any arrive; an empty array when the server
   * closed the connection. */
  read({ maxBytes = MAX_READ_BYTES, timeoutMs } = {}) {
    if (this.buffer.length > 0) {
      const data = this.buffer.subarray(0, maxBytes);
      this.buffer = this.buffer.subarray(data.length);
      return data;
    }
    return this.readSome(maxBytes, deadlineIn(timeoutMs));
  }

  /** Exactly `n` bytes; throws 'closed' if the server closes the connection before. */
  readExactly(n, { timeoutMs } = {}) {
    const deadline = deadlineIn(timeoutMs);
    while (this.buffer.length < n) {
      const more = this.readSome(Math.min(MAX_READ_BYTES, Math.max(n - this.buffer.length, 1)), deadline);
      if (more.length === 0) {
        throw new NetError('closed', `${this.shown} closed the connection after ${this.buffer.length} of ${n} bytes`);
      }
      this.buffer = concat(this.buffer, more);
    }
    const data = this.buffer.slice(0, n);
    this.buffer = this.buffer.subarray(n);
    return data;
  }

  /** The next line as text, without its '\n' (nor a '\r' before it); null when the server closed
   * the connection (a last line without '\n' is returned first). On 'timeout' what arrived is
   * kept for the next call; `timeoutMs: 0` takes only what has arrived already. */
  readLine({ timeoutMs, maxBytes = MAX_LINE_BYTES } = {}) {
    const deadline = deadlineIn(timeoutMs);
    let searched = 0;
    for (;;) {
      const end = this.buffer.indexOf(10, searched);
      if (end >= 0) {
        let line = this.buffer.subarray(0, end);
        this.buffer = this.buffer.subarray(end + 1);
        if (line.length > 0 && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
        return decoder.decode(line);
      }
      if (this.buffer.length > maxBytes) {
        throw new NetError('other', `${this.shown} sent a line longer than ${maxBytes} bytes`);
      }
      searched = this.buffer.length;
      const more = this.readSome(MAX_READ_BYTES, deadline);
      if (more.length === 0) {
        const last = this.buffer;
        this.buffer = new Uint8Array(0);
        return last.length > 0 ? decoder.decode(last) : null;
      }
      this.buffer = concat(this.buffer, more);
    }
  }

  /** Sends every byte of `data` (a string, as UTF-8, or a Uint8Array) and waits until the worker
   * has passed them on. */
  writeAll(data, { timeoutMs } = {}) {
    const [, output] = this.usable();
    const deadline = deadlineIn(timeoutMs);
    let bytes = typeof data === 'string' ? encoder.encode(data) : data;
    const what = `writing to ${this.shown}`;
    try {
      while (bytes.length > 0) {
        const permitted = Number(output.checkWrite());
        if (permitted === 0) {
          waitOn(output.subscribe(), deadline, what);
          continue;
        }
        const n = Math.min(bytes.length, permitted);
        output.write(bytes.subarray(0, n));
        bytes = bytes.subarray(n);
      }
      output.flush();
      while (Number(output.checkWrite()) === 0) waitOn(output.subscribe(), deadline, what);
    } catch (e) {
      throw streamError(e, what);
    }
  }

  /** Closes the connection (sending TLS's close notice first when encrypted). Never throws. */
  close() {
    const streams = this.streams ?? [];
    const connection = this.tls;
    this.streams = null;
    this.tls = null;
    if (connection) {
      try {
        connection.closeOutput();
      } catch (_) {
        // The server may be gone already.
      }
    }
    // A resource may not be dropped before those made from it.
    for (const resource of [...streams, connection, this.socket]) drop(resource);
    this.socket = null;
  }

  usable() {
    if (!this.streams) {
      throw new NetError('closed', `the connection to ${this.shown} is closed or unusable after a failed TLS handshake`);
    }
    return this.streams;
  }

  readSome(maxBytes, deadline) {
    const [input] = this.usable();
    const what = `reading from ${this.shown}`;
    for (;;) {
      let data;
      try {
        data = input.read(BigInt(Math.max(1, Math.min(maxBytes, MAX_READ_BYTES))));
      } catch (e) {
        if (payloadOf(e)?.tag === 'closed') return new Uint8Array(0);
        throw streamError(e, what);
      }
      if (data.length > 0) return data;
      waitOn(input.subscribe(), deadline, what);
    }
  }
}

/** The `connection-grants` export of the `*-with-net` worlds, from `spec.connections`: a list of
 * `{ jdbcUrl: key }` and `{ host: hostKey, port: portKey, defaultPort }` entries.
 *
 *   export const connectionGrants = connectionGrantsOf(spec); */
export function connectionGrantsOf(spec) {
  return {
    declare() {
      return (spec.connections ?? []).map((entry) => {
        if (typeof entry.jdbcUrl === 'string') return { tag: 'jdbc-url', val: entry.jdbcUrl };
        if (typeof entry.host === 'string' && typeof entry.port === 'string') {
          return { tag: 'host-and-port', val: { hostKey: entry.host, portKey: entry.port, defaultPort: entry.defaultPort ?? 0 } };
        }
        throw new Error(`connections: ${JSON.stringify(entry)}; use { jdbcUrl: key } or { host, port, defaultPort }`);
      });
    },
  };
}
