"""{{name}}: a Wharf source plugin. It writes "hello 1", "hello 2", … to `topic` and resumes after
the last number stored. Replace the counting with reading your system."""

import wharf_sdk
from wharf_sdk import ConfigKey, SourceRecord
from wharf_sdk.source import SourceConnector, SourceTask

PARTITION = {"stream": "counter"}


class Task(SourceTask):
    def open(self, config):
        self.topic = config["topic"]
        stored = wharf_sdk.committed_offset(PARTITION)
        self.next = (stored["last"] if stored else 0) + 1
        wharf_sdk.log("info", f"counting from {self.next}")

    def poll(self, max_records):
        records = []
        for _ in range(max_records):
            records.append(SourceRecord(topic=self.topic, value=f"hello {self.next}", source_partition=PARTITION, source_offset={"last": self.next}))
            self.next += 1
        return records


class Plugin(SourceConnector):
    name = "{{name}}"
    version = "0.1.0"
    description = "Counts (a template to start from)"
    config = [ConfigKey("topic", required=True, importance="high", doc="The topic to write to.")]
    task = Task


# The names of the `data-source` world's exports (build.sh builds for it).
Connector, DataSourceTask, Grants = wharf_sdk.source.export(Plugin)
