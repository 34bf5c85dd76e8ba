"""Source connectors: read an outside system, hand records to the host in batches."""

from typing import Dict, List, Optional, Type

from wit_world import exports
try:
    from wit_world.imports import types
except ImportError:
    # A world that also imports `wasi:tls/types` (the `*-with-net` worlds), built without
    # `--import-interface-name 'wharf:connector/types@0.1.8=types'`.
    from wit_world.imports import wharf_connector_types as types

from . import Connector, FatalError, SourceRecord, _convert

# Imported while the plugin is built, as componentize-py keeps only the modules a build imports:
# so `wharf_sdk.transactions` finds the host's transaction context whenever app.py imports it.
# Absent from worlds without exactly-once sources.
try:
    from wit_world.imports import transaction_context  # noqa: F401
except ImportError:
    pass

# Built for the `data-source` world, records carry data (see `wharf_sdk.data`); for the
# `source` world, bytes.
try:
    from wit_world.exports import data_source_task as _task_api

    _DATA = True
except ImportError:
    from wit_world.exports import source_task as _task_api

    _DATA = False

__all__ = ["SourceConnector", "SourceTask", "export"]


class SourceTask:
    """One running task. The host calls `open` once, then `poll` again and again (an empty list
    means nothing to read right now), `commit` after the offsets of what `poll` returned are
    stored, and `close` at the end. Keep each call short: the host bounds it with
    `wasm.call.timeout.ms`. A task of a connector that defines its own transactions commits and
    aborts them from `poll`, with `wharf_sdk.transactions`."""

    def open(self, config: Dict[str, str]) -> None:
        pass

    def poll(self, max_records: int) -> List[SourceRecord]:
        raise NotImplementedError("a source task must define poll(self, max_records)")

    def keep_alive(self) -> None:
        """Called instead of `poll`, about once a second, while the host holds records back
        (Kafka is slow or away): read nothing, but keep connections alive."""
        pass

    def commit(self) -> None:
        pass

    def close(self) -> None:
        pass


class SourceConnector(Connector):
    """Set `task` to your `SourceTask` subclass.

    Built for a world with exactly-once sources (`data-source-exactly-once`,
    `data-source-with-net-exactly-once`), the connector also says what it offers when the worker
    runs sources in Kafka transactions: override `exactly_once_support` and
    `can_define_transaction_boundaries` (Kafka Connect's methods of the same names). Plugins of
    the other worlds are never asked."""

    task: Optional[Type[SourceTask]] = None

    def exactly_once_support(self, config: Dict[str, str]) -> Optional[bool]:
        """Whether the tasks, run in Kafka transactions with this config, deliver every record
        exactly once: True when they resume exactly from the offsets the host stores with their
        records and give each record an offset of its own, False when they do not, None (the
        default) to say nothing. On a worker with `exactly.once.source.support=enabled`, a
        connector configured with `exactly.once.support=required` is refused unless it answers
        True."""
        return None

    def can_define_transaction_boundaries(self, config: Dict[str, str]) -> bool:
        """Whether the tasks, with this config, say where their transactions end (through
        `wharf_sdk.transactions`). False by default; on a worker with
        `exactly.once.source.support=enabled`, a connector configured with
        `transaction.boundary=connector` is refused unless it answers True."""
        return False


_registered: Optional[Type[SourceConnector]] = None


def _records(records: List[SourceRecord]):
    """Converts one poll's records. Records of one stream usually share their partition, so each
    distinct partition is converted once per poll."""
    partitions = {}

    def partition_of(r):
        if not isinstance(r, SourceRecord):
            raise TypeError(f"poll must return SourceRecord objects, not {type(r).__name__}")
        key = tuple(r.source_partition.items())
        partition = partitions.get(key)
        if partition is None:
            partition = partitions[key] = _convert.offset_map(r.source_partition)
        return partition

    if _DATA:
        return _batch(records, partition_of)
    return [
        types.SourceRecord(
            source_partition=partition_of(r),
            source_offset=_convert.offset_map(r.source_offset),
            topic=r.topic,
            partition=r.partition,
            key=_convert.as_bytes(r.key),
            value=_convert.as_bytes(r.value),
            headers=[types.Header(key=k, value=_convert.as_bytes(v)) for k, v in r.headers] if r.headers else [],
            timestamp=r.timestamp,
        )
        for r in records
    ]


def _batch(records, partition_of):
    """The poll's records as a data batch: their keys, values and header values in the batch's
    flat tables (`wharf_sdk.data`)."""
    from wit_world.imports import data as wit_data

    from .data import BatchWriter, DataError

    writer = BatchWriter()
    batch = []
    for i, r in enumerate(records):
        partition = partition_of(r)
        try:
            key = writer.part(r.key, "")
            value = writer.part(r.value, "")
            headers = [wit_data.Header(key=k, value=writer.part(v, "")) for k, v in r.headers] if r.headers else []
        except DataError as e:
            raise FatalError(f"record {i} of the poll, for topic {r.topic!r}: {e}") from None
        batch.append(
            _task_api.SourceRecord(
                source_partition=partition,
                source_offset=_convert.offset_map(r.source_offset),
                topic=r.topic,
                partition=r.partition,
                key=key,
                value=value,
                headers=headers,
                timestamp=r.timestamp,
            )
        )
    return _task_api.SourceBatch(schemas=writer.schemas, values=writer.values, records=batch)


class Task(_task_api.Task):
    """The `task` resource componentize-py exports; it drives the registered connector's task."""

    def __init__(self, inner: SourceTask):
        self.inner = inner

    @classmethod
    def open(cls, config):
        return cls(_convert.open_task(_registered, "source", config))

    def poll(self, max_records):
        if max_records == 0:
            # The host holds records back: nothing is read (contract 0.1.6).
            keep_alive = getattr(self.inner, "keep_alive", None)
            if keep_alive is not None:
                _convert.guarded(keep_alive)
            return _records([])
        return _convert.guarded(lambda: _records(self.inner.poll(max_records) or []))

    def commit(self):
        _convert.guarded(self.inner.commit)

    def close(self):
        try:
            self.inner.close()
        except Exception:
            pass


def _capability(api, answer, method: str, allowed: str):
    if answer is True:
        return api.Capability.SUPPORTED
    if answer is False:
        return api.Capability.UNSUPPORTED
    raise TypeError(f"{method} must return {allowed}, not {answer!r}")


def _exactly_once_exports(connector_class, base):
    """The class componentize-py calls for the `exactly-once` interface: it asks the
    connector's `exactly_once_support` and `can_define_transaction_boundaries`."""
    from wit_world.exports import exactly_once as api

    name = connector_class.__name__

    class ExactlyOnce(base):
        def exactly_once_support(self, config):
            answer = connector_class().exactly_once_support(dict(config))
            if answer is None:
                return None
            return _capability(api, answer, f"{name}.exactly_once_support", "True, False or None")

        def can_define_transaction_boundaries(self, config):
            answer = connector_class().can_define_transaction_boundaries(dict(config))
            return _capability(api, answer, f"{name}.can_define_transaction_boundaries", "True or False")

    return ExactlyOnce


def export(connector: Type[SourceConnector]):
    """Registers a source connector; assign the result in app.py, under the names of the world's
    exports: `Connector, DataSourceTask, Grants = wharf_sdk.source.export(MyConnector)` for the
    `data-source` world (and `data-source-with-net`), `Connector, SourceTask, Grants = ...` for
    `source`, and `Connector, DataSourceTask, Grants, ExactlyOnce = ...` for the worlds with
    exactly-once sources (`data-source-exactly-once`, `data-source-with-net-exactly-once`)."""
    global _registered
    if not (isinstance(connector, type) and issubclass(connector, SourceConnector)):
        raise TypeError("export() takes a SourceConnector subclass")
    _registered = connector

    class SourceTaskInterface(exports.DataSourceTask if _DATA else exports.SourceTask):
        pass

    names = (
        _convert.connector_exports(connector, types.ConnectorKind.SOURCE, exports.Connector),
        SourceTaskInterface,
        _convert.grants_exports(connector, exports.Grants),
    )
    # Only the worlds with exactly-once sources export `exactly-once` (contract 0.1.8).
    exactly_once = getattr(exports, "ExactlyOnce", None)
    if exactly_once is not None:
        names += (_exactly_once_exports(connector, exactly_once),)
    return names
