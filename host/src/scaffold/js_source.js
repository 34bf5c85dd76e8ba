// {{name}}: a Wharf source plugin. It writes "hello 1", "hello 2", … to `topic` and resumes after
// the last number stored. Replace the counting with reading your system (fetch works, for the
// hosts a connector grants with wasm.http.allow).
import { committedOffset, defineSource, log } from './sdk/wharf-sdk.js';

const PARTITION = { stream: 'counter' };

class Task {
  open(config) {
    this.topic = config.topic;
    this.next = (committedOffset(PARTITION)?.last ?? 0) + 1;
    log('info', `counting from ${this.next}`);
  }

  poll(maxRecords) {
    const records = [];
    for (let i = 0; i < maxRecords; i++, this.next++) {
      records.push({ topic: this.topic, value: `hello ${this.next}`, sourcePartition: PARTITION, sourceOffset: { last: this.next } });
    }
    return records;
  }
}

// The names of the data-source world's exports (build.sh builds for it).
export const { connector, dataSourceTask, grants } = defineSource({
  name: '{{name}}',
  version: '0.1.0',
  description: 'Counts (a template to start from)',
  config: [{ name: 'topic', required: true, importance: 'high', doc: 'The topic to write to.' }],
  Task,
});
