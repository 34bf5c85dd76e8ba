// js-orders-source: makes up orders, each a struct with a schema (com.example.Order: decimals,
// dates, a timestamp, an array of structs, an optional field), for the worker's converters to
// write; `count` orders in all (-1: without end), resuming after the last one stored. It shows
// the SDK's data model: a Schema built once, values as plain objects; and metrics of its own:
// orders made, the next order's id, lines per order.
//
// It gives exactly-once delivery (built for the data-source-exactly-once world): it resumes from
// its stored offset and gives every order an offset of its own. When the host lets it define its
// transactions (transaction.boundary=connector), each transaction holds `orders.per.transaction`
// orders: the order with id n ends one when n + 1 is a multiple of it, and that transaction,
// number (n + 1) / orders.per.transaction counting from 1, is aborted when that number is a
// multiple of `abort.every.transaction` (0: never), committed otherwise.
import { committedOffset, Data, defineSource, FatalError, Schema } from '../../sdk/wharf-sdk.js';
import { counter, gauge, histogram } from '../../sdk/wharf-metrics.js';
import { abortAfter, commitAfter, definesBoundaries } from '../../sdk/wharf-transactions.js';

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
    const [problem] = validate(config);
    if (problem) throw new FatalError(`${problem[0]}: ${problem[1]}`);
    this.perTransaction = Number(config['orders.per.transaction'] ?? '10');
    this.abortEvery = Number(config['abort.every.transaction'] ?? '0');
    const stored = committedOffset(PARTITION);
    this.next = stored ? Number(stored.id) + 1 : 0;
    const sdk = { sdk: 'javascript' };
    this.made = counter('orders-made', 'Orders made', sdk);
    this.nextId = gauge('next-order-id', 'The id of the next order', sdk);
    this.lines = histogram('order-lines', 'Lines per order', sdk, [1, 2, 3]);
  }

  poll(maxRecords) {
    const records = [];
    const boundaries = definesBoundaries();
    while (records.length < maxRecords && (this.count < 0 || this.next < this.count)) {
      records.push({
        topic: this.topic,
        key: String(this.next),
        value: new Data(ORDER, order(this.next)),
        headers: [['origin', 'js-orders-source']],
        sourcePartition: PARTITION,
        sourceOffset: { id: this.next },
      });
      if (boundaries) this.endTransaction(this.next, records.length - 1);
      this.made.update(1);
      this.lines.update(this.next % 3 + 1);
      this.next += 1;
    }
    this.nextId.update(this.next);
    return records;
  }

  /** Ends the transaction after order n (record `index` of the batch) when n is its last order. */
  endTransaction(n, index) {
    if ((n + 1) % this.perTransaction !== 0) return;
    const transaction = (n + 1) / this.perTransaction;
    if (this.abortEvery > 0 && transaction % this.abortEvery === 0) abortAfter(index);
    else commitAfter(index);
  }
}

/** The problems of a config's transaction keys, as [key, message] pairs. */
function validate(config) {
  const problems = [];
  const perTransaction = config['orders.per.transaction'] ?? '10';
  if (!/^\s*\d+\s*$/.test(perTransaction) || Number(perTransaction) < 1) {
    problems.push(['orders.per.transaction', `"${perTransaction}" is not a whole number of orders, 1 or more`]);
  }
  const abortEvery = config['abort.every.transaction'] ?? '0';
  if (!/^\s*\d+\s*$/.test(abortEvery)) {
    problems.push(['abort.every.transaction', `"${abortEvery}" is not a whole number, 0 or more (0 aborts none)`]);
  }
  return problems;
}

// The names of the data-source-exactly-once world's exports, which plugins/build-examples builds
// for (the file `world` names it).
export const { connector, dataSourceTask, grants, exactlyOnce } = defineSource({
  name: 'js-orders-source',
  version: '0.1.0',
  description: 'Makes up orders as structs with a schema (JavaScript example)',
  config: [
    { name: 'topic', required: true, importance: 'high', doc: 'The topic to write to.' },
    { name: 'count', type: 'long', default: '-1', doc: 'How many orders in all; -1 never stops.' },
    {
      name: 'orders.per.transaction', type: 'int', default: '10',
      doc: 'How many orders each transaction holds, at least 1, when the connector defines its transactions (transaction.boundary=connector).',
    },
    {
      name: 'abort.every.transaction', type: 'int', default: '0',
      doc: 'Abort every n-th transaction (the n-th, the 2n-th, ...) instead of committing it, when the connector defines its transactions; 0 aborts none.',
    },
  ],
  validate,
  exactlyOnceSupport: 'supported',
  canDefineTransactionBoundaries: true,
  Task: OrdersTask,
});
