// http-sink: posts every batch of records to a URL as a JSON array of
// { topic, partition, offset, key, value }, with fetch. The host grants the URL's host and port
// (the url key is declared to name a URL); nothing else is reachable. Bytes (the default
// converter's) are posted as text, data a converter read as the JSON it maps to (an int64, which
// reaches JavaScript as a BigInt, as a JSON number, or as text past 2^53).
import { defineSink, FatalError, RetriableError, text } from '../../sdk/wharf-sdk.js';

/** JSON.stringify's replacer for what it cannot write itself: a BigInt (an int64) as a number,
 * or as its digits where a number would lose them. */
function jsonNumbers(key, value) {
  if (typeof value !== 'bigint') return value;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : value.toString();
}

class HttpSinkTask {
  open(config) {
    this.url = config.url;
  }

  async put(records) {
    if (records.length === 0) return;
    const body = JSON.stringify(records.map((r) => ({
      topic: r.topic, partition: r.partition, offset: r.offset, key: text(r.key), value: text(r.value),
    })), jsonNumbers);
    const response = await fetch(this.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (response.status === 429 || response.status >= 500) {
      throw new RetriableError(`${this.url} answered ${response.status}; the batch is sent again`);
    }
    // Read to its end, the answer's body frees its stream and the connection at once, not
    // whenever the garbage collector gets to it.
    const answer = await response.text();
    if (response.status >= 300) {
      throw new FatalError(`${this.url} refused a batch with ${response.status}: ${answer}`);
    }
  }
}

// The names of the data-sink world's exports, which plugins/build-examples builds for.
export const { connector, dataSinkTask, grants } = defineSink({
  name: 'http-sink',
  version: '0.1.0',
  description: 'Posts records as JSON to an HTTP endpoint (JavaScript example)',
  config: [
    { name: 'url', required: true, importance: 'high', doc: 'Where to POST each batch; its host:port is granted (within wasm.ceiling.http.allow).' },
  ],
  grants: { url: 'url' },
  validate(config) {
    return /^https?:\/\//.test(config.url ?? '') ? [] : [['url', 'must start with http:// or https://']];
  },
  Task: HttpSinkTask,
});
