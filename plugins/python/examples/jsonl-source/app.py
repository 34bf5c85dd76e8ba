"""jsonl-source: reads a file of JSON lines from a granted folder, one record per line, and
follows the file as it grows. A line that is not JSON fails the task, naming the line. With
`value.format=json` each value is the parsed document as data without a schema (objects as maps,
arrays, numbers, strings), for `value.converter` to write; with `bytes` (the default) the line as
it is."""

import json

import wharf_sdk
from wharf_sdk import ConfigKey, SourceRecord
from wharf_sdk.source import SourceConnector, SourceTask


class JsonLinesTask(SourceTask):
    def open(self, config):
        self.path = config["file"]
        self.topic = config["topic"]
        self.key_field = config.get("key.field") or None
        self.parsed = config.get("value.format", "bytes").strip() == "json"
        self.partition = {"filename": self.path}
        stored = wharf_sdk.committed_offset(self.partition)
        self.position = int(stored["position"]) if stored else 0
        self.line = int(stored.get("line", 0)) if stored else 0
        self.file = None
        wharf_sdk.log("info", f"reading {self.path} from byte {self.position}")

    def poll(self, max_records):
        if self.file is None:
            try:
                self.file = open(self.path, "rb")
            except FileNotFoundError:
                return []
            self.file.seek(self.position)
        records = []
        while len(records) < max_records:
            start = self.file.tell()
            raw = self.file.readline()
            if not raw.endswith(b"\n"):
                # Nothing more, or a line still being written: read it whole next time.
                self.file.seek(start)
                break
            self.line += 1
            text = raw.rstrip(b"\r\n")
            if not text.strip():
                self.position = self.file.tell()
                continue
            document = json.loads(text)  # a JSONDecodeError fails the task with Python's message
            key = None
            if self.key_field is not None and isinstance(document, dict) and self.key_field in document:
                key = str(document[self.key_field])
            self.position = self.file.tell()
            records.append(
                SourceRecord(
                    topic=self.topic,
                    key=key,
                    value=wharf_sdk.Data(None, document) if self.parsed else text,
                    source_partition=self.partition,
                    source_offset={"position": self.position, "line": self.line},
                )
            )
        return records

    def close(self):
        if self.file is not None:
            self.file.close()


class JsonLinesSource(SourceConnector):
    name = "jsonl-source"
    version = "0.1.0"
    description = "Reads JSON lines from a file (Python example)"
    config = [
        ConfigKey("file", required=True, importance="high", doc="The JSON-lines file to read; its folder is granted for reading."),
        ConfigKey("topic", required=True, importance="high", doc="The topic to write to."),
        ConfigKey("key.field", doc="A field of each JSON object whose value becomes the record key."),
        ConfigKey(
            "value.format",
            default="bytes",
            doc="bytes (each line as it is) or json (the parsed document as data without a schema, for value.converter).",
        ),
    ]
    grants = [("file", "file-to-read")]
    task = JsonLinesTask

    def validate(self, config):
        problems = []
        if not config.get("file", "").startswith("/"):
            problems.append(("file", "must be an absolute path"))
        if config.get("value.format", "bytes").strip() not in ("bytes", "json"):
            problems.append(("value.format", "must be bytes or json"))
        return problems


# The names of the `data-source` world's exports, which plugins/build-examples builds for.
Connector, DataSourceTask, Grants = wharf_sdk.source.export(JsonLinesSource)
