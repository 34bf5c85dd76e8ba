"""Sink connectors: receive records the host read from Kafka, in batches, and make them durable
on `flush`."""

from typing import Dict, List, Optional, Tuple, Type

from wit_world import exports
from wit_world.exports import sink_task
from wit_world.imports import types

from . import Connector, SinkRecord, _convert

__all__ = ["SinkConnector", "SinkTask", "export"]


class SinkTask:
    """One running task. `put` receives batches (buffer them if you like); `flush` must make
    everything received so far durable, after which the host commits the Kafka offsets, so those
    records are never delivered again."""

    def open(self, config: Dict[str, str]) -> None:
        pass

    def open_partitions(self, partitions: List[Tuple[str, int]]) -> None:
        pass

    def put(self, records: List[SinkRecord]) -> None:
        raise NotImplementedError("a sink task must define put(self, records)")

    def flush(self, offsets: Dict[Tuple[str, int], int]) -> None:
        pass

    def close_partitions(self, partitions: List[Tuple[str, int]]) -> None:
        pass

    def close(self) -> None:
        pass


class SinkConnector(Connector):
    """Set `task` to your `SinkTask` subclass. Sinks read the topics named by `topics`."""

    task: Optional[Type[SinkTask]] = None


_registered: Optional[Type[SinkConnector]] = None


def _record(r) -> SinkRecord:
    return SinkRecord(r.topic, r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers], r.timestamp)


class Task(sink_task.Task):
    """The `task` resource componentize-py exports; it drives the registered connector's task."""

    def __init__(self, inner: SinkTask):
        self.inner = inner

    @classmethod
    def open(cls, config):
        return cls(_convert.open_task(_registered, "sink", config))

    def open_partitions(self, partitions):
        _convert.guarded(self.inner.open_partitions, [(p.topic, p.partition) for p in partitions])

    def put(self, records):
        _convert.guarded(lambda: self.inner.put([_record(r) for r in records]))

    def flush(self, offsets):
        _convert.guarded(self.inner.flush, {(o.topic, o.partition): o.offset for o in offsets})

    def close_partitions(self, partitions):
        _convert.guarded(self.inner.close_partitions, [(p.topic, p.partition) for p in partitions])

    def close(self):
        try:
            self.inner.close()
        except Exception:
            pass


def export(connector: Type[SinkConnector]):
    """Registers a sink connector; assign the result in app.py:
    `Connector, SinkTask, Grants = wharf_sdk.sink.export(MyConnector)`."""
    global _registered
    if not (isinstance(connector, type) and issubclass(connector, SinkConnector)):
        raise TypeError("export() takes a SinkConnector subclass")
    _registered = connector

    class SinkTaskInterface(exports.SinkTask):
        pass

    return (
        _convert.connector_exports(connector, types.ConnectorKind.SINK, exports.Connector),
        SinkTaskInterface,
        _convert.grants_exports(connector, exports.Grants),
    )
