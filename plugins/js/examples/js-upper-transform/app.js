// js-upper-transform: upper-cases a record's value when it is a string (with a string schema or
// without a schema), or, with `field` set, that field of a struct value; drops records whose
// value is null; and adds the header `transformed-by` (bytes: the plugin's name) to every record
// it keeps. Other values pass as they are. The same transform as py-upper-transform and
// c-upper-transform.

import { defineTransform } from '../../sdk/wharf-sdk.js';

const NAME = 'js-upper-transform';
const NAME_BYTES = new TextEncoder().encode(NAME);

// The name of the transform world's export, which plugins/build-examples builds for.
export const { transformer } = defineTransform({
  name: NAME,
  version: '0.1.0',
  description: 'Upper-cases string values, or one string field of struct values (JavaScript example)',
  config: [{ name: 'field', default: '', doc: 'The struct field to upper-case; empty: only string values are.' }],

  open(config) {
    this.field = config.field || null;
  },

  apply(record) {
    if (record.value === null) return null;
    if (typeof record.value === 'string') {
      record.value = record.value.toUpperCase();
    } else if (this.field && record.valueSchema?.type === 'struct' && typeof record.value[this.field] === 'string') {
      record.value[this.field] = record.value[this.field].toUpperCase();
    }
    record.headers.push(['transformed-by', NAME_BYTES]);
    return record;
  },
});
