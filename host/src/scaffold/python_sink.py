"""{{name}}: a Wharf sink plugin. It counts the records it receives and logs the count on every
flush. Replace the counting with writing to your system (durably, by the end of `flush`)."""

import wharf_sdk
from wharf_sdk.sink import SinkConnector, SinkTask


class Task(SinkTask):
    def open(self, config):
        self.seen = 0

    def put(self, records):
        self.seen += len(records)

    def flush(self, offsets):
        wharf_sdk.log("info", f"{self.seen} records so far")


class Plugin(SinkConnector):
    name = "{{name}}"
    version = "0.1.0"
    description = "Counts records (a template to start from)"
    task = Task


# The names of the `data-sink` world's exports (build.sh builds for it).
Connector, DataSinkTask, Grants = wharf_sdk.sink.export(Plugin)
