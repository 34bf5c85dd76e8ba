"""Write Wharf connector plugins in Python.

A plugin is a connector class and a task class. Subclass `SourceConnector` and `SourceTask` (or
`SinkConnector` and `SinkTask`), then hand the connector to `wharf_sdk.source.export` (or
`wharf_sdk.sink.export`) in your `app.py`; componentize-py turns the result into a component. A
transform plugin is one class: subclass `wharf_sdk.transform.Transform` and hand it to
`wharf_sdk.transform.export`.

Configs arrive as plain `dict`s of strings; records are the dataclasses below; an exception a
task raises fails the task with its message, unless it is a `RetriableError`, which makes the
host call again later. A sink reports a record it cannot write with `report_errant`; a task
keeps metrics of its own with `counter`, `gauge` and `histogram`. A source built for a world
with exactly-once sources says what it offers (`SourceConnector.exactly_once_support`) and may
commit and abort its own Kafka transactions (`wharf_sdk.transactions`). Built for the
`data-source` and `data-sink` worlds, keys, values and header values carry Kafka Connect's data
model (`wharf_sdk.data`: `Schema`, `Data`, and Python's own types for values); for `source` and
`sink`, bytes.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from .data import Data, Schema

__all__ = [
    "ConfigKey",
    "Connector",
    "Data",
    "FatalError",
    "RetriableError",
    "Schema",
    "SinkRecord",
    "SourceRecord",
    "TransformRecord",
    "committed_offset",
    "committed_offsets",
    "counter",
    "gauge",
    "histogram",
    "log",
    "Metric",
    "report_errant",
]

Scalar = Union[None, bool, int, float, str]
OffsetMap = Dict[str, Scalar]
Bytes = Union[bytes, str, None]


class RetriableError(Exception):
    """A passing problem (a network blip, a busy server): the host retries the call later."""


class FatalError(Exception):
    """The task cannot go on: the host marks it FAILED with this message."""


@dataclass
class ConfigKey:
    """One configuration key, as Kafka Connect's `ConfigDef` describes it.

    `type` is one of boolean, int, long, double, string, list, password; `importance` one of
    high, medium, low. A key with `required=True` has no default: a config without it is refused
    before your code sees it.
    """

    name: str
    type: str = "string"
    default: Optional[str] = None
    required: bool = False
    importance: str = "medium"
    doc: str = ""
    group: Optional[str] = None


@dataclass
class SourceRecord:
    """A record for the host to write to Kafka.

    `source_partition` names the stream it came from and `source_offset` how far into it; once
    Kafka holds the record, the host stores the offset, and `committed_offset` returns it after a
    restart. Keys, values and header values may be `bytes` (sent as they are) or `str` (UTF-8;
    in the data worlds a string with a string schema), and in the data worlds `Data(schema,
    value)` or a value without a schema (`dict`, `list`, numbers): see `wharf_sdk.data`.
    """

    topic: str
    value: Any
    key: Any = None
    source_partition: OffsetMap = field(default_factory=dict)
    source_offset: OffsetMap = field(default_factory=dict)
    partition: Optional[int] = None
    headers: List[Tuple[str, Any]] = field(default_factory=list)
    timestamp: Optional[int] = None


@dataclass
class SinkRecord:
    """A record the host read from Kafka. In the data worlds its key, value and header values are
    what the connector's converters read (Python values, their schemas in `key_schema` and
    `value_schema`; bytes through `ByteArrayConverter`); otherwise bytes."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    headers: List[Tuple[str, Any]]
    timestamp: Optional[int]
    key_schema: Optional[Schema] = None
    value_schema: Optional[Schema] = None


@dataclass
class TransformRecord:
    """A record as a transform sees it (Kafka Connect's `ConnectRecord`): a source's before the
    worker's converters, a sink's after them. Its key and value as a sink's are, with their
    schemas in `key_schema` and `value_schema` (None for bytes, or data without a schema); a
    header's value is `bytes` for bytes and `Data(schema, value)` for data. Change it in place, or
    make another (`dataclasses.replace(record, value=...)`)."""

    topic: str
    # A source record's fixed partition (None: the key chooses), or a sink record's.
    partition: Optional[int]
    key: Any
    value: Any
    headers: List[Tuple[str, Any]] = field(default_factory=list)
    # Milliseconds since the Unix epoch.
    timestamp: Optional[int] = None
    key_schema: Optional[Schema] = None
    value_schema: Optional[Schema] = None


class Connector:
    """What every connector says about itself. Override the class attributes, and `validate` or
    `task_configs` when the defaults do not fit."""

    name: str = ""
    version: str = "0.1.0"
    description: str = ""
    config: List[ConfigKey] = []
    # Which config keys name files, folders, addresses or URLs, as (key, what) pairs; `what` is
    # one of file-to-read, file-to-write, folder-to-read, folder-to-write, host-port, url. The
    # host grants what their values name, within the worker's wasm.ceiling.* settings.
    grants: List[Tuple[str, str]] = []

    def validate(self, config: Dict[str, str]) -> List[Tuple[str, str]]:
        """Problems beyond what the config definition checks, as (key, message) pairs."""
        return []

    def task_configs(self, config: Dict[str, str], max_tasks: int) -> List[Dict[str, str]]:
        """Splits the connector config into at most `max_tasks` task configs; one task by default."""
        return [dict(config)]


def log(level: str, message: str) -> None:
    """Writes a line to the worker's log, tagged with the connector and task. `level` is one of
    trace, debug, info, warn, error."""
    from wit_world.imports import host

    host.log(host.Level[level.upper()], message)


def committed_offsets(partitions: List[OffsetMap]) -> List[Optional[OffsetMap]]:
    """The stored offsets of these source partitions, in the same order; None where there is none."""
    from wit_world.imports import host

    from . import _convert

    found = host.committed_offsets([_convert.offset_map(p) for p in partitions])
    return [None if o is None else _convert.offset_dict(o) for o in found]


def committed_offset(partition: OffsetMap) -> Optional[OffsetMap]:
    """The stored offset of one source partition, or None."""
    return committed_offsets([partition])[0]


class Metric:
    """A metric the task registered (`counter`, `gauge`, `histogram`): `update(value)` adds to a
    counter, sets a gauge, or observes a value into a histogram."""

    def __init__(self, handle: int):
        self._handle = handle

    def update(self, value: float) -> None:
        from wit_world.imports import metrics

        metrics.update([(self._handle, float(value))])


def _register(name: str, description: str, kind: str, tags: Optional[Dict[str, str]], buckets) -> Metric:
    try:
        from wit_world.imports import metrics
    except ImportError:
        raise FatalError(
            "metrics are for sources and sinks of wharf:connector 0.1.7 or later: this world has no metrics interface"
        ) from None
    from componentize_py_types import Err

    spec = metrics.Metric(
        name=name,
        description=description,
        kind=metrics.MetricKind[kind],
        tags=[(str(k), str(v)) for k, v in (tags or {}).items()],
        buckets=[float(b) for b in (buckets or [])],
    )
    try:
        return Metric(metrics.register(spec))
    except Err as e:
        raise FatalError(e.value) from None


def counter(name: str, description: str = "", tags: Optional[Dict[str, str]] = None) -> Metric:
    """Registers a count that only grows, served by the worker as
    `kafka_connect_plugins_<name>_total{connector, task, <tags>}` while the task runs. The name is
    letters, digits and `_` (`-` and `.` read as `_`); at most 8 tags. Registering the same name
    and tags again gives the same metric. Raises `FatalError` with the host's reason when it
    refuses the name, a tag, or one more metric than `wasm.max.plugin.metrics`."""
    return _register(name, description, "COUNTER", tags, None)


def gauge(name: str, description: str = "", tags: Optional[Dict[str, str]] = None) -> Metric:
    """Registers a value that goes up and down, as `counter` does (served without `_total`)."""
    return _register(name, description, "GAUGE", tags, None)


def histogram(
    name: str, description: str = "", tags: Optional[Dict[str, str]] = None, buckets: Optional[List[float]] = None
) -> Metric:
    """Registers how values spread, as `counter` does, counted in buckets of the given rising
    upper bounds (at most 32; Prometheus's defaults, 0.005 to 10, when none)."""
    return _register(name, description, "HISTOGRAM", tags, buckets)


def report_errant(record: Union[SinkRecord, Tuple[str, int, int]], reason: str) -> None:
    """Reports a record of the batch being put that the task could not write, and why (Kafka
    Connect's errant record reporter). `record` is a `SinkRecord` that `put` received, or its
    `(topic, partition, offset)`.

    With `errors.tolerance=all` the host skips the record (to the dead-letter queue, if the
    connector has one) and this returns: go on with the rest of the batch. Otherwise it raises
    `FatalError` with the host's answer: with `errors.tolerance=none` the task fails once `put`
    returns, whatever it returns, so let the error pass. Also raised for a record that is not
    in the batch being put, a call outside `put`, or a call from a source. Only for sinks.
    """
    if isinstance(record, tuple):
        topic, partition, offset = record
    else:
        topic, partition, offset = record.topic, record.partition, record.offset
    try:
        from wit_world.imports import errant_records
    except ImportError:
        raise FatalError(
            "report_errant is for sinks (of wharf:connector 0.1.3 or later): this world has no errant-records interface"
        ) from None
    from componentize_py_types import Err

    try:
        errant_records.report(topic, partition, offset, str(reason))
    except Err as e:
        raise FatalError(e.value) from None
