// {{name}}: a Wharf transform plugin. It adds the header transformed-by (the plugin's name, as
// bytes) to every record and keeps the record as it is otherwise. Replace that with your change;
// return null from apply to drop a record.
import { defineTransform } from './sdk/wharf-sdk.js';

const NAME = new TextEncoder().encode('{{name}}');

// The name of the transform world's export (build.sh builds for it).
export const { transformer } = defineTransform({
  name: '{{name}}',
  version: '0.1.0',
  description: 'Adds a header to every record (a template to start from)',
  // Its settings, as a connector writes them after transforms.<alias>.
  config: [],
  apply(record) {
    record.headers.push(['transformed-by', NAME]);
    return record;
  },
});
