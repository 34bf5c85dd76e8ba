"""py-orders-source: makes up orders, each a struct with a schema (`com.example.Order`: decimals,
dates, a timestamp, an array of structs, an optional field), for the worker's converters to
write; `count` orders in all (-1: without end), resuming after the last one stored. It shows the
SDK's data model: `Schema` built once, values as Python's own types; and metrics of its own:
orders made, the next order's id, lines per order."""

import datetime
from decimal import Decimal

import wharf_sdk
from wharf_sdk import ConfigKey, Data, Schema, SourceRecord
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
            self.made.update(1)
            self.lines.update(self.next % 3 + 1)
            self.next += 1
        self.next_id.update(self.next)
        return records


class OrdersSource(SourceConnector):
    name = "py-orders-source"
    version = "0.1.0"
    description = "Makes up orders as structs with a schema (Python example)"
    config = [
        ConfigKey("topic", required=True, importance="high", doc="The topic to write to."),
        ConfigKey("count", type="long", default="-1", doc="How many orders in all; -1 never stops."),
    ]
    task = OrdersTask


# The names of the `data-source` world's exports, which plugins/build-examples builds for.
Connector, DataSourceTask, Grants = wharf_sdk.source.export(OrdersSource)
