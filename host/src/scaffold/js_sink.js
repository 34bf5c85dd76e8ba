// {{name}}: a Wharf sink plugin. It counts the records it receives and logs the count on every
// flush. Replace the counting with writing to your system (durably, by the end of flush).
import { defineSink, log } from './sdk/wharf-sdk.js';

class Task {
  open(config) { this.seen = 0; }
  put(records) { this.seen += records.length; }
  flush(offsets) { log('info', `${this.seen} records so far`); }
}

// The names of the data-sink world's exports (build.sh builds for it).
export const { connector, dataSinkTask, grants } = defineSink({
  name: '{{name}}',
  version: '0.1.0',
  description: 'Counts records (a template to start from)',
  Task,
});
