// js-orders-source: makes up orders, each a struct with a schema (com.example.Order: decimals,
// dates, a timestamp, an array of structs, an optional field), for the worker's converters to
// write; `count` orders in all (-1: without end), resuming after the last one stored. It shows
// the SDK's data model: a Schema built once, values as plain objects; and metrics of its own:
// orders made, the next order's id, lines per order.
import { committedOffset, Data, defineSource, Schema } from '../../sdk/wharf-sdk.js';
import { counter, gauge, histogram } from '../../sdk/wharf-metrics.js';

const LINE = Schema.struct('com.example.OrderLine', [['sku', Schema.string()], ['quantity', Schema.int32()]]);
const ORDER = Schema.struct('com.example.Order', [
  ['id', Schema.int64()],
  ['customer', Schema.string()],
  ['total', Schema.decimal(2)],
  ['day', Schema.date()],
  ['placed', Schema.timestamp()],
  ['lines', Schema.array(LINE)],
  ['note', Schema.string().asOptional()],
]).withVersion(1);
const PARTITION = { orders: 'made up' };
const START = Date.UTC(2024, 0, 2, 9, 30);
const DAY = 86400000;

/** Order n, the same every time. */
function order(n) {
  const cents = n * 125 + 99;
  return {
    id: n,
    customer: `customer-${n % 7}`,
    total: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`,
    day: new Date(Math.floor((START + n * DAY) / DAY) * DAY),
    placed: new Date(START + n * 60000),
    lines: Array.from({ length: (n % 3) + 1 }, (_, i) => ({ sku: `sku-${i}`, quantity: i + 1 })),
    note: n % 2 ? 'gift' : null,
  };
}

class OrdersTask {
  open(config) {
    this.topic = config.topic;
    this.count = Number(config.count ?? '-1');
    const stored = committedOffset(PARTITION);
    this.next = stored ? Number(stored.id) + 1 : 0;
    const sdk = { sdk: 'javascript' };
    this.made = counter('orders-made', 'Orders made', sdk);
    this.nextId = gauge('next-order-id', 'The id of the next order', sdk);
    this.lines = histogram('order-lines', 'Lines per order', sdk, [1, 2, 3]);
  }

  poll(maxRecords) {
    const records = [];
    while (records.length < maxRecords && (this.count < 0 || this.next < this.count)) {
      records.push({
        topic: this.topic,
        key: String(this.next),
        value: new Data(ORDER, order(this.next)),
        headers: [['origin', 'js-orders-source']],
        sourcePartition: PARTITION,
        sourceOffset: { id: this.next },
      });
      this.made.update(1);
      this.lines.update(this.next % 3 + 1);
      this.next += 1;
    }
    this.nextId.update(this.next);
    return records;
  }
}

// The names of the data-source world's exports, which plugins/build-examples builds for.
export const { connector, dataSourceTask, grants } = defineSource({
  name: 'js-orders-source',
  version: '0.1.0',
  description: 'Makes up orders as structs with a schema (JavaScript example)',
  config: [
    { name: 'topic', required: true, importance: 'high', doc: 'The topic to write to.' },
    { name: 'count', type: 'long', default: '-1', doc: 'How many orders in all; -1 never stops.' },
  ],
  Task: OrdersTask,
});
