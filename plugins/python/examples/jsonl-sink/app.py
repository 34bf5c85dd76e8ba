"""jsonl-sink: writes every record it receives as one JSON line
({"topic", "partition", "offset", "key", "value"}) to a file in a granted folder. Lines are
buffered by `put` and written and synced by `flush`. Bytes (the default converter's) are written
as text; data the connector's converters read (JsonConverter's, say) as the JSON it maps to, a
struct as an object by field name, decimals, dates and times as their text."""

import json
import os

from wharf_sdk import ConfigKey
from wharf_sdk.sink import SinkConnector, SinkTask, export


def text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def plain(value):
    """What json cannot write by itself: decimals, dates and times as their text, bytes as text."""
    if isinstance(value, bytes):
        return text(value)
    return str(value)


class JsonLinesSinkTask(SinkTask):
    def open(self, config):
        self.file = open(config["file"], "a", encoding="utf-8")
        self.pending = []

    def put(self, records):
        for r in records:
            line = {"topic": r.topic, "partition": r.partition, "offset": r.offset, "key": text(r.key), "value": text(r.value)}
            self.pending.append(json.dumps(line, separators=(",", ":"), default=plain))

    def flush(self, offsets):
        if self.pending:
            self.file.write("\n".join(self.pending) + "\n")
            self.pending.clear()
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self):
        self.file.close()


class JsonLinesSink(SinkConnector):
    name = "jsonl-sink"
    version = "0.1.0"
    description = "Writes records as JSON lines to a file (Python example)"
    config = [
        ConfigKey("file", required=True, importance="high", doc="The file to append to; its folder is granted for writing."),
    ]
    grants = [("file", "file-to-write")]
    task = JsonLinesSinkTask


# The names of the `data-sink` world's exports, which plugins/build-examples builds for.
Connector, DataSinkTask, Grants = export(JsonLinesSink)
