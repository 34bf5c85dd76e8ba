"""Source connectors: read an outside system, hand records to the host in batches."""

from typing import Dict, List, Optional, Type

from wit_world import exports
from wit_world.exports import source_task
from wit_world.imports import types

from . import Connector, SourceRecord, _convert

__all__ = ["SourceConnector", "SourceTask", "export"]


class SourceTask:
    """One running task. The host calls `open` once, then `poll` again and again (an empty list
    means nothing to read right now), `commit` after the offsets of what `poll` returned are
    stored, and `close` at the end. Keep each call short: the host bounds it with
    `wasm.call.timeout.ms`."""

    def open(self, config: Dict[str, str]) -> None:
        pass

    def poll(self, max_records: int) -> List[SourceRecord]:
        raise NotImplementedError("a source task must define poll(self, max_records)")

    def commit(self) -> None:
        pass

    def close(self) -> None:
        pass


class SourceConnector(Connector):
    """Set `task` to your `SourceTask` subclass."""

    task: Optional[Type[SourceTask]] = None


_registered: Optional[Type[SourceConnector]] = None


def _records(records: List[SourceRecord]):
    """Converts one poll's records. Records of one stream usually share their partition, so each
    distinct partition is converted once per poll."""
    partitions = {}
    converted = []
    for r in records:
        if not isinstance(r, SourceRecord):
            raise TypeError(f"poll must return SourceRecord objects, not {type(r).__name__}")
        key = tuple(r.source_partition.items())
        partition = partitions.get(key)
        if partition is None:
            partition = partitions[key] = _convert.offset_map(r.source_partition)
        converted.append(
            types.SourceRecord(
                source_partition=partition,
                source_offset=_convert.offset_map(r.source_offset),
                topic=r.topic,
                partition=r.partition,
                key=_convert.as_bytes(r.key),
                value=_convert.as_bytes(r.value),
                headers=[types.Header(key=k, value=_convert.as_bytes(v)) for k, v in r.headers] if r.headers else [],
                timestamp=r.timestamp,
            )
        )
    return converted


class Task(source_task.Task):
    """The `task` resource componentize-py exports; it drives the registered connector's task."""

    def __init__(self, inner: SourceTask):
        self.inner = inner

    @classmethod
    def open(cls, config):
        return cls(_convert.open_task(_registered, "source", config))

    def poll(self, max_records):
        return _convert.guarded(lambda: _records(self.inner.poll(max_records) or []))

    def commit(self):
        _convert.guarded(self.inner.commit)

    def close(self):
        try:
            self.inner.close()
        except Exception:
            pass


def export(connector: Type[SourceConnector]):
    """Registers a source connector; assign the result in app.py:
    `Connector, SourceTask, Grants = wharf_sdk.source.export(MyConnector)`."""
    global _registered
    if not (isinstance(connector, type) and issubclass(connector, SourceConnector)):
        raise TypeError("export() takes a SourceConnector subclass")
    _registered = connector

    class SourceTaskInterface(exports.SourceTask):
        pass

    return (
        _convert.connector_exports(connector, types.ConnectorKind.SOURCE, exports.Connector),
        SourceTaskInterface,
        _convert.grants_exports(connector, exports.Grants),
    )
