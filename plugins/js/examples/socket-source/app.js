// socket-source: reads lines from a TCP server, over TLS when `tls` is true, and writes each line
// as a record's value to `topic`: a feed of events, logs or quotes that a service streams to
// whoever connects. A line's bytes become the value as they are (without the line end).
//
// A stream read from a socket has no position to resume from: after a restart or a reconnect the
// task reads what the server sends from then on. `poll` waits at most `poll.timeout.ms` for the
// first line, then takes the lines that have already arrived, up to the batch size. When the
// server closes the connection the task connects again on the next poll. Certificates are
// checked by the worker: against the authorities in the connector's `wasm.tls.trust`, or the
// public ones, and the server's name.
import { defineSource, log, RetriableError } from '../../sdk/wharf-sdk.js';
import { Connection, connectionGrantsOf, NetError } from '../../sdk/wharf-net.js';

function addressOf(value) {
  const match = /^\s*\[?([^\]\s]+?)\]?:(\d{1,5})\s*$/.exec(value ?? '');
  const port = match ? Number(match[2]) : 0;
  if (!match || port < 1 || port > 65535) {
    throw new Error(`address="${value}" is not HOST:PORT, e.g. feed.example.com:7000`);
  }
  return [match[1], port];
}

class SocketSourceTask {
  open(config) {
    [this.host, this.port] = addressOf(config.address);
    this.topic = config.topic;
    this.tls = (config.tls ?? 'false').trim().toLowerCase() === 'true';
    this.serverName = (config['tls.server.name'] ?? '').trim() || undefined; // undefined: the host
    this.timeoutMs = Number(config['timeout.ms'] ?? '10000');
    this.pollTimeoutMs = Number(config['poll.timeout.ms'] ?? '1000');
    this.partition = { address: `${this.host}:${this.port}` };
    this.lines = 0;
    this.conn = null;
  }

  connection() {
    if (!this.conn) {
      const conn = Connection.connect(this.host, this.port, { timeoutMs: this.timeoutMs });
      try {
        if (this.tls) conn.startTls({ serverName: this.serverName, timeoutMs: this.timeoutMs });
      } catch (e) {
        conn.close();
        throw e;
      }
      log('info', `connected to ${this.host}:${this.port}${conn.isTls ? ' over TLS' : ''}`);
      this.conn = conn;
    }
    return this.conn;
  }

  disconnect() {
    this.conn?.close();
    this.conn = null;
  }

  poll(maxRecords) {
    const records = [];
    try {
      const conn = this.connection();
      let timeoutMs = this.pollTimeoutMs;
      while (records.length < maxRecords) {
        const line = conn.readLine({ timeoutMs });
        if (line === null) {
          log('info', `${this.host}:${this.port} closed the connection; connecting again on the next poll`);
          this.disconnect();
          break;
        }
        this.lines += 1;
        records.push({
          topic: this.topic,
          value: line,
          sourcePartition: this.partition,
          sourceOffset: { lines: this.lines },
        });
        timeoutMs = 0; // after the first line, only what has arrived already
      }
    } catch (e) {
      if (!(e instanceof NetError)) throw e;
      if (e.code !== 'timeout') {
        this.disconnect();
        if (records.length === 0) throw new RetriableError(`reading from ${this.host}:${this.port}: ${e.message}`);
      }
    }
    return records;
  }

  close() {
    this.disconnect();
  }
}

const spec = {
  name: 'socket-source',
  version: '0.1.0',
  description: 'Reads lines from a TCP server, over TLS if asked (JavaScript example)',
  config: [
    { name: 'address', required: true, importance: 'high', doc: 'HOST:PORT of the server; granted for TCP connections.' },
    { name: 'topic', required: true, importance: 'high', doc: 'The topic to write to.' },
    { name: 'tls', type: 'boolean', default: 'false', importance: 'high', doc: 'Whether to encrypt the connection with TLS.' },
    { name: 'tls.server.name', default: '', doc: 'The name the server certificate must hold; the host of address when empty.' },
    { name: 'timeout.ms', type: 'long', default: '10000', doc: 'How long connecting and the handshake may take.' },
    { name: 'poll.timeout.ms', type: 'long', default: '1000', doc: 'How long a poll waits for the first line.' },
  ],
  grants: { address: 'host-port' },
  Task: SocketSourceTask,
};

// The names of the data-source-with-net world's exports (the file `world` names it).
export const { connector, dataSourceTask, grants } = defineSource(spec);
export const connectionGrants = connectionGrantsOf(spec);
