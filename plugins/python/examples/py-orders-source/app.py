"""py-orders-source: makes up orders, each a struct with a schema (`com.example.Order`: decimals,
dates, a timestamp, an array of structs, an optional field), for the worker's converters to
write; `count` orders in all (-1: without end), resuming after the last one stored. It shows the
SDK's data model: `Schema` built once, values as Python's own types; metrics of its own: orders
made, the next order's id, lines per order; and exactly-once delivery: built for the
`data-source-exactly-once` world, it says it gives exactly-once delivery (it resumes from its
stored offset and gives every order an offset of its own) and can define its transactions. Run
with `transaction.boundary=connector`, it ends a transaction after every
`orders.per.transaction` orders (after orders 9, 19, 29, ... by default), and aborts every
`abort.every.transaction`-th of them (0: none) instead of committing it. With a `count` that is
not a multiple of `orders.per.transaction`, the orders after the last full transaction stay in
one that never ends, so `read_committed` consumers never see them."""

import datetime
from decimal import Decimal

import wharf_sdk
from wharf_sdk import ConfigKey, Data, Schema, SourceRecord, transactions
from wharf_sdk.source import SourceConnector, SourceTask

LINE = Schema.struct("com.example.OrderLine", [("sku", Schema.string()), ("quantity", Schema.int32())])
ORDER = Schema.struct(
    "com.example.Order",
    [
        ("id", Schema.int64()),
        ("customer", Schema.string()),
        ("total", Schema.decimal(2)),
        ("day", Schema.date()),
        ("placed", Schema.timestamp()),
        ("lines", Schema.array(LINE)),
        ("note", Schema.string().as_optional()),
    ],
).with_version(1)
PARTITION = {"orders": "made up"}
START = datetime.datetime(2024, 1, 2, 9, 30, tzinfo=datetime.timezone.utc)


def order(n):
    """Order n, the same every time."""
    return {
        "id": n,
        "customer": f"customer-{n % 7}",
        "total": Decimal(n * 125) / 100 + Decimal("0.99"),
        "day": (START + datetime.timedelta(days=n)).date(),
        "placed": START + datetime.timedelta(minutes=n),
        "lines": [{"sku": f"sku-{i}", "quantity": i + 1} for i in range(n % 3 + 1)],
        "note": "gift" if n % 2 else None,
    }


class OrdersTask(SourceTask):
    def open(self, config):
        self.topic = config["topic"]
        self.count = int(config.get("count", "-1"))
        self.per_transaction = int(config.get("orders.per.transaction", "10"))
        self.abort_every = int(config.get("abort.every.transaction", "0"))
        # True only under `transaction.boundary=connector`; otherwise the host commits on its own.
        self.defines_boundaries = transactions.defines_boundaries()
        stored = wharf_sdk.committed_offset(PARTITION)
        self.next = int(stored["id"]) + 1 if stored else 0
        sdk = {"sdk": "python"}
        self.made = wharf_sdk.counter("orders-made", "Orders made", sdk)
        self.next_id = wharf_sdk.gauge("next-order-id", "The id of the next order", sdk)
        self.lines = wharf_sdk.histogram("order-lines", "Lines per order", sdk, buckets=[1, 2, 3])

    def poll(self, max_records):
        records = []
        while len(records) < max_records and (self.count < 0 or self.next < self.count):
            records.append(
                SourceRecord(
                    topic=self.topic,
                    key=str(self.next),
                    value=Data(ORDER, order(self.next)),
                    headers=[("origin", "py-orders-source")],
                    source_partition=PARTITION,
                    source_offset={"id": self.next},
                )
            )
            if self.defines_boundaries:
                self.end_transaction(self.next, len(records) - 1)
            self.made.update(1)
            self.lines.update(self.next % 3 + 1)
            self.next += 1
        self.next_id.update(self.next)
        return records

    def end_transaction(self, n, index):
        """Order n, at `index` of the batch, ends transaction k = (n + 1) / orders.per.transaction
        when it is the last order of one: aborted when k is a multiple of abort.every.transaction,
        committed otherwise."""
        if (n + 1) % self.per_transaction:
            return
        k = (n + 1) // self.per_transaction
        if self.abort_every > 0 and k % self.abort_every == 0:
            transactions.abort_after(index)
        else:
            transactions.commit_after(index)


class OrdersSource(SourceConnector):
    name = "py-orders-source"
    version = "0.1.0"
    description = "Makes up orders as structs with a schema (Python example)"
    config = [
        ConfigKey("topic", required=True, importance="high", doc="The topic to write to."),
        ConfigKey("count", type="long", default="-1", doc="How many orders in all; -1 never stops."),
        ConfigKey(
            "orders.per.transaction",
            type="int",
            default="10",
            doc="With transaction.boundary=connector: how many orders each transaction holds, at least 1. "
            "A transaction ends after each order whose id plus 1 is a multiple of it.",
        ),
        ConfigKey(
            "abort.every.transaction",
            type="int",
            default="0",
            doc="With transaction.boundary=connector: abort every n-th transaction (counting from 1) "
            "instead of committing it; its orders are never visible to read_committed consumers. "
            "0 aborts none.",
        ),
    ]
    task = OrdersTask

    def validate(self, config):
        problems = []
        for key, least in (("orders.per.transaction", 1), ("abort.every.transaction", 0)):
            value = config.get(key)
            if value is None:
                continue
            try:
                number = int(value)
            except ValueError:
                problems.append((key, f"must be a whole number, not {value!r}"))
                continue
            if number < least:
                problems.append((key, f"must be at least {least}, not {number}"))
        return problems

    def exactly_once_support(self, config):
        # Each order's offset is its own id, and a task resumes right after the stored one.
        return True

    def can_define_transaction_boundaries(self, config):
        return True


# The names of the `data-source-exactly-once` world's exports, the world in the file `world`
# that plugins/build-examples builds for.
Connector, DataSourceTask, Grants, ExactlyOnce = wharf_sdk.source.export(OrdersSource)
