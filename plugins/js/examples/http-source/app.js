// http-source: polls an HTTP endpoint for new items. GET <url>?offset=N answers a JSON array of
// the items from position N on; each item becomes a record (its JSON as the value, its "id" as
// the key when it has one), and N is the source offset, so a restart resumes where it stopped.
// With value.format=json the item itself is the value, data without a schema for value.converter.
import { committedOffset, defineSource, log, RetriableError } from '../../sdk/wharf-sdk.js';

class HttpSourceTask {
  open(config) {
    this.url = config.url;
    this.topic = config.topic;
    this.partition = { url: this.url };
    this.parsed = (config['value.format'] ?? 'bytes').trim() === 'json';
    this.offset = committedOffset(this.partition)?.offset ?? 0;
    log('info', `polling ${this.url} from offset ${this.offset}`);
  }

  async poll(maxRecords) {
    const separator = this.url.includes('?') ? '&' : '?';
    let response;
    try {
      response = await fetch(`${this.url}${separator}offset=${this.offset}&limit=${maxRecords}`);
    } catch (e) {
      throw new RetriableError(`cannot reach ${this.url}: ${e.message}`);
    }
    if (response.status === 429 || response.status >= 500) {
      throw new RetriableError(`${this.url} answered ${response.status}; asking again shortly`);
    }
    const items = JSON.parse(await response.text()); // a SyntaxError fails the task with its message
    const records = items.slice(0, maxRecords).map((item) => {
      this.offset += 1;
      return {
        topic: this.topic,
        key: item.id == null ? undefined : String(item.id),
        value: this.parsed ? item : JSON.stringify(item),
        sourcePartition: this.partition,
        sourceOffset: { offset: this.offset },
      };
    });
    return records;
  }
}

// The names of the data-source world's exports, which plugins/build-examples builds for.
export const { connector, dataSourceTask, grants } = defineSource({
  name: 'http-source',
  version: '0.1.0',
  description: 'Polls an HTTP endpoint for JSON items (JavaScript example)',
  config: [
    { name: 'url', required: true, importance: 'high', doc: 'The endpoint to poll; its host:port is granted (within wasm.ceiling.http.allow).' },
    { name: 'topic', required: true, importance: 'high', doc: 'The topic to write to.' },
    { name: 'value.format', default: 'bytes', doc: 'bytes (each item as its JSON text) or json (the item as data without a schema, for value.converter).' },
  ],
  grants: { url: 'url' },
  Task: HttpSourceTask,
});
