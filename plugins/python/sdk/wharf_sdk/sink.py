"""Sink connectors: receive records the host read from Kafka, in batches, and make them durable
on `flush`."""

from typing import Dict, List, Optional, Tuple, Type

from wit_world import exports
try:
    from wit_world.imports import types
except ImportError:
    # A world that also imports `wasi:tls/types` (the `*-with-net` worlds), built without
    # `--import-interface-name 'wharf:connector/types@0.1.8=types'`.
    from wit_world.imports import wharf_connector_types as types

from . import Connector, FatalError, SinkRecord, _convert, report_errant

# Built for the `data-sink` world, records carry data as the connector's converters read it (see
# `wharf_sdk.data`); for the `sink` world, bytes.
try:
    from wit_world.exports import data_sink_task as _task_api

    _DATA = True
except ImportError:
    from wit_world.exports import sink_task as _task_api

    _DATA = False

# A component holds only the Python modules imported while componentize-py built it, and nothing
# else imports these bindings then: import them now, for `report_errant` to find when it runs.
try:
    from wit_world.imports import errant_records as _errant_records  # noqa: F401
except ImportError:  # a sink built with a contract older than 0.1.3
    pass

__all__ = ["SinkConnector", "SinkTask", "export", "report_errant"]


class SinkTask:
    """One running task. `put` receives batches (buffer them if you like); `flush` must make
    everything received so far durable, after which the host commits the Kafka offsets, so those
    records are never delivered again. A record `put` cannot write may be handed to
    `report_errant(record, reason)` instead of failing the whole batch."""

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


def _records(batch) -> List[SinkRecord]:
    """The records of a data batch, their parts read from the batch's tables."""
    if not _DATA:
        return [_record(r) for r in batch]
    from .data import BatchReader, DataError

    try:
        reader = BatchReader(batch.schemas, batch.values)
        records = []
        for r in batch.records:
            key, key_schema = reader.part(r.key)
            value, value_schema = reader.part(r.value)
            headers = [(h.key, reader.part(h.value)[0]) for h in r.headers]
            records.append(
                SinkRecord(r.topic, r.partition, r.offset, key, value, headers, r.timestamp, key_schema, value_schema)
            )
        return records
    except (DataError, IndexError) as e:
        raise FatalError(f"the host sent a batch this SDK cannot read: {e}") from None


class Task(_task_api.Task):
    """The `task` resource componentize-py exports; it drives the registered connector's task."""

    def __init__(self, inner: SinkTask):
        self.inner = inner

    @classmethod
    def open(cls, config):
        return cls(_convert.open_task(_registered, "sink", config))

    def open_partitions(self, partitions):
        _convert.guarded(self.inner.open_partitions, [(p.topic, p.partition) for p in partitions])

    def put(self, records):
        _convert.guarded(lambda: self.inner.put(_records(records)))

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
    """Registers a sink connector; assign the result in app.py, under the names of the world's
    exports: `Connector, DataSinkTask, Grants = wharf_sdk.sink.export(MyConnector)` for the
    `data-sink` world, `Connector, SinkTask, Grants = ...` for `sink`."""
    global _registered
    if not (isinstance(connector, type) and issubclass(connector, SinkConnector)):
        raise TypeError("export() takes a SinkConnector subclass")
    _registered = connector

    class SinkTaskInterface(exports.DataSinkTask if _DATA else exports.SinkTask):
        pass

    return (
        _convert.connector_exports(connector, types.ConnectorKind.SINK, exports.Connector),
        SinkTaskInterface,
        _convert.grants_exports(connector, exports.Grants),
    )
