"""Transform plugins: a single message transform of one's own, which a connector config names as
Kafka Connect's transforms are named (`transforms=a`, `transforms.a.type=<your plugin's name>`,
its settings under `transforms.a.`). Built for the `transform` world.

    from wharf_sdk import ConfigKey
    from wharf_sdk.transform import Transform, export

    class Upper(Transform):
        name = "upper"
        version = "0.1.0"
        description = "Upper-cases string values"
        config = [ConfigKey("field", default="", doc="...")]

        def open(self, config):
            self.field = config.get("field") or None

        def apply(self, record):
            if isinstance(record.value, str):
                record.value = record.value.upper()
            return record          # or None, to drop it

    Transformer = export(Upper)    # the name of the `transform` world's export

A record's key and value are what the host holds, as a sink's are (`key_schema` and
`value_schema` say their schemas, None for bytes or data without a schema); a header's value is
`bytes` for bytes and `Data(schema, value)` for data (its schema None without one). The record
`apply` returns goes out as it is then: a key or value with a schema as data with that schema,
`bytes` without one as bytes, anything else without one as data without a schema (where the
bytes and numbers it came with keep their types); header values as a source's (`bytes`, `str`,
`Data`, or data without a schema).
"""

from typing import Any, Dict, List, Optional, Tuple

from wit_world import exports
from wit_world.exports import transformer as _api
from wit_world.imports import types

from . import ConfigKey, FatalError, TransformRecord, _convert
from .data import BatchReader, BatchWriter, Data, DataError

__all__ = ["Transform", "TransformRecord", "export"]


class Transform:
    """A transform plugin. Override the class attributes, then `open` and `apply` (and
    `validate`, `apply_batch` or `close` if you need them). One is made and opened for each task
    of a connector that names it; calls on one come one at a time."""

    name: str = ""
    version: str = "0.1.0"
    description: str = ""
    # Its settings, as they are written after `transforms.<alias>.`.
    config: List[ConfigKey] = []

    def validate(self, config: Dict[str, str]) -> List[Tuple[str, str]]:
        """Problems with settings beyond what the definition checks, as (key, message) pairs.
        Called on an instance that is not opened."""
        return []

    def open(self, config: Dict[str, str]) -> None:
        """Starts with the transform's settings (the definition's defaults filled in)."""

    def apply(self, record: TransformRecord) -> Optional[TransformRecord]:
        """One record: what it becomes (the same record, changed or not, or a new one), or None
        to drop it. An exception fails the record, and through `apply_batch` its batch (with
        `errors.tolerance=all` the host then gives the records one at a time, to skip only those
        that fail)."""
        raise NotImplementedError("a transform must define apply(self, record)")

    def apply_batch(self, records: List[TransformRecord]) -> List[Optional[TransformRecord]]:
        """A batch: one answer for each record, in order. By default each record through
        `apply`; override it to work on the batch as a whole."""
        return [self.apply(r) for r in records]

    def close(self) -> None:
        """The transform stops; no call follows."""


_registered: Optional[type] = None


class _Read:
    """A batch's records read from its tables, and what the answers need to write data without a
    schema back as it was: for each record, its key's and value's bytes or narrow number type
    (bytes go back as data only when the answer keeps those very bytes), and the number types
    inside lists and dicts (`number_kinds`)."""

    def __init__(self, batch):
        from wit_world.imports import data as wit

        self.wit = wit
        self.number_kinds: Dict[int, Any] = {}
        self.reader = BatchReader(batch.schemas, batch.values, self.number_kinds)
        self.kept: List[Tuple[Any, Any]] = []
        self.records = [self.record(r) for r in batch.records]

    def part(self, part):
        """(value, schema, how it was: its bytes or number type in data without a schema, or None)."""
        if part is None or isinstance(part, self.wit.Part_Raw):
            return (None if part is None else part.value), None, None
        value, schema = self.reader.part(part)
        if schema is not None:
            return value, schema, None
        return value, None, (value if isinstance(value, bytes) else self.reader.narrow_kind(part.value.value))

    def header(self, h):
        if h.value is None or isinstance(h.value, self.wit.Part_Raw):
            return h.key, (None if h.value is None else h.value.value)
        value, schema = self.reader.part(h.value)
        return h.key, Data(schema, value)

    def record(self, r) -> TransformRecord:
        key, key_schema, key_was = self.part(r.key)
        value, value_schema, value_was = self.part(r.value)
        self.kept.append((key_was, value_was))
        return TransformRecord(
            topic=r.topic,
            partition=r.partition,
            key=key,
            value=value,
            headers=[self.header(h) for h in r.headers],
            timestamp=r.timestamp,
            key_schema=key_schema,
            value_schema=value_schema,
        )


def _part(writer: BatchWriter, value, schema, was):
    """A key or value as an answer has it; `was` as `_Read.part` noted it."""
    if schema is not None:
        return writer.part(Data(schema, value), "")
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)) and value is not was:
        return writer.part(value, "")
    return writer.wit.Part_Data(writer.wit.Datum(None, writer.schemaless(value, "", was if isinstance(was, str) else None)))


def _written(answers, read: _Read):
    """The answers as a transformed batch: their keys, values and header values in its tables."""
    from wit_world.imports import data as wit

    writer = BatchWriter(read.number_kinds)
    records = []
    for i, (r, (key_was, value_was)) in enumerate(zip(answers, read.kept)):
        if r is None:
            records.append(None)
            continue
        if not isinstance(r, TransformRecord):
            raise FatalError(f"the answer for record {i} of the batch is a {type(r).__name__}: give a TransformRecord, or None to drop it")
        try:
            key = _part(writer, r.key, r.key_schema, key_was)
            value = _part(writer, r.value, r.value_schema, value_was)
            headers = [wit.Header(key=k, value=writer.part(v, "")) for k, v in r.headers] if r.headers else []
        except DataError as e:
            raise FatalError(f"record {i} of the batch, for topic {r.topic!r}: {e}") from None
        records.append(
            _api.TransformRecord(
                topic=r.topic,
                partition=r.partition,
                key=key,
                value=value,
                headers=headers,
                timestamp=r.timestamp,
            )
        )
    return _api.TransformedBatch(schemas=writer.schemas, values=writer.values, records=records)


def _apply(inner: Transform, batch):
    try:
        read = _Read(batch)
    except (DataError, IndexError) as e:
        raise FatalError(f"the host sent a batch this SDK cannot read: {e}") from None
    answers = inner.apply_batch(read.records)
    answers = list(answers) if answers is not None else []
    if len(answers) != len(read.records):
        raise FatalError(
            f"apply_batch returned {len(answers)} answers for {len(read.records)} records; "
            "it must return one for each, in order (None for a record it drops)"
        )
    return _written(answers, read)


class TransformResource(_api.Transform):
    """The `transform` resource componentize-py exports (from the top-level `transformer`
    module); it drives the registered transform."""

    def __init__(self, inner: Transform):
        self.inner = inner

    @classmethod
    def open(cls, config):
        def start():
            if _registered is None:
                raise FatalError("no transform exported: call wharf_sdk.transform.export(YourTransform) in app.py")
            inner = _registered()
            inner.open(dict(config))
            return inner

        return cls(_convert.guarded(start))

    def apply(self, batch):
        return _convert.guarded(_apply, self.inner, batch)

    def close(self):
        try:
            self.inner.close()
        except Exception:
            pass


def export(transform: type):
    """Registers a transform; assign the result in app.py under the name of the `transform`
    world's export: `Transformer = wharf_sdk.transform.export(MyTransform)`."""
    global _registered
    if not (isinstance(transform, type) and issubclass(transform, Transform)):
        raise TypeError("export() takes a Transform subclass")
    _registered = transform

    class Transformer(exports.Transformer):
        def describe(self):
            return _api.TransformInfo(
                name=transform.name,
                version=transform.version,
                description=transform.description,
                config=[_convert.config_key(k) for k in transform.config],
            )

        def validate(self, config):
            problems = transform().validate(dict(config))
            return [types.ConfigProblem(name=name, message=message) for name, message in problems]

    return Transformer
