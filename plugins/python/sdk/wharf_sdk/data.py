"""Kafka Connect's data model in Python: schemas, and values as Python's own types.

A record's key, value or header value is one of:

- `bytes`: goes to Kafka as it is (no converter touches it);
- `str`: a string with a string schema (Kafka's FileStreamSource emits lines so);
- `Data(schema, value)`: a value with a schema, for the worker's converters to write;
- anything else (`dict`, `list`, `int`, `float`, `bool`): a value without a schema, as Connect
  allows (JsonConverter with `schemas.enable=false` writes it as JSON).

Values by schema type: int8 … int64 `int`; float32, float64 `float`; boolean `bool`; string
`str`; bytes `bytes`; array `list`; map `dict` (or a list of (key, value) pairs); struct a `dict`
by field name (or a list in field order); the logical types `Decimal` (`decimal.Decimal` or an
unscaled `int`), `Date` (`datetime.date` or days), `Time` (`datetime.time` or milliseconds) and
`Timestamp` (`datetime.datetime`, naive meaning UTC, or milliseconds). A sink receives the same
types back, with the schemas in `key_schema` and `value_schema`.

Build a schema once and use it for every record: the host receives each distinct schema once
per batch.
"""

import datetime
import decimal
import math
import struct
from dataclasses import dataclass, field, replace
from typing import Any, List, Optional, Tuple

__all__ = ["Data", "Schema"]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"

_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array", "map", "struct")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_DAY_MS = 86_400_000
_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


@dataclass(frozen=True, eq=False)
class Schema:
    """A Kafka Connect schema. Make one with the constructors (`Schema.int32()`,
    `Schema.struct("com.example.Person", [("name", Schema.string())])`, `Schema.timestamp()` …)
    and `.as_optional()`, `.with_default(v)`, `.with_doc(text)`, `.with_version(n)`."""

    type: str
    optional: bool = False
    default: Any = None
    name: Optional[str] = None
    version: Optional[int] = None
    doc: Optional[str] = None
    parameters: Optional[List[Tuple[str, str]]] = None
    fields: List[Tuple[str, "Schema"]] = field(default_factory=list)
    key: Optional["Schema"] = None
    value: Optional["Schema"] = None

    def __post_init__(self):
        if self.type not in _TYPES:
            raise ValueError(f"schema type {self.type!r} is not one of {', '.join(_TYPES)}")

    def as_optional(self) -> "Schema":
        return replace(self, optional=True)

    def with_default(self, value) -> "Schema":
        return replace(self, default=value)

    def with_doc(self, doc: str) -> "Schema":
        return replace(self, doc=doc)

    def with_version(self, version: int) -> "Schema":
        return replace(self, version=version)

    def parameter(self, key: str) -> Optional[str]:
        return dict(self.parameters or []).get(key)

    @staticmethod
    def int8(): return Schema("int8")

    @staticmethod
    def int16(): return Schema("int16")

    @staticmethod
    def int32(): return Schema("int32")

    @staticmethod
    def int64(): return Schema("int64")

    @staticmethod
    def float32(): return Schema("float32")

    @staticmethod
    def float64(): return Schema("float64")

    @staticmethod
    def boolean(): return Schema("boolean")

    @staticmethod
    def string(): return Schema("string")

    @staticmethod
    def bytes(): return Schema("bytes")

    @staticmethod
    def array(element: "Schema"): return Schema("array", value=element)

    @staticmethod
    def map(key: "Schema", value: "Schema"): return Schema("map", key=key, value=value)

    @staticmethod
    def struct(name: Optional[str], fields: List[Tuple[str, "Schema"]]):
        return Schema("struct", name=name, fields=list(fields))

    @staticmethod
    def decimal(scale: int): return Schema("bytes", name=DECIMAL, version=1, parameters=[("scale", str(scale))])

    @staticmethod
    def date(): return Schema("int32", name=DATE, version=1)

    @staticmethod
    def time(): return Schema("int32", name=TIME, version=1)

    @staticmethod
    def timestamp(): return Schema("int64", name=TIMESTAMP, version=1)


@dataclass(frozen=True)
class Data:
    """A value with its schema."""

    schema: Optional[Schema]
    value: Any


class DataError(ValueError):
    """A value that does not fit its schema; the message says where."""


def _where(path: str) -> str:
    return f" at {path}" if path else ""


# The value types of numbers in data without a schema that Python's `int` and `float` do not tell
# apart from int64 and float64. A transform's reader notes them (`number_kinds`) and its writer
# writes them back as they were, where they still fit.
_NARROW = {"Value_Int8": "int8", "Value_Int16": "int16", "Value_Int32": "int32", "Value_Float32": "float32"}
_NO_KINDS: dict = {}  # never written to


def _fits_float32(v: float) -> bool:
    try:
        return math.isnan(v) or struct.unpack("<f", struct.pack("<f", v))[0] == v
    except OverflowError:
        return False


class BatchWriter:
    """Builds the flat `schemas` and `values` tables of one batch. `number_kinds`: a
    `BatchReader`'s, for data without a schema that a transform read."""

    def __init__(self, number_kinds=None):
        from wit_world.imports import data as wit

        self.wit = wit
        self.schemas = []
        self.values = []
        self._known = {}
        self.number_kinds = number_kinds

    def part(self, item, path: str):
        wit = self.wit
        if item is None:
            return None
        if isinstance(item, (bytes, bytearray, memoryview)):
            return wit.Part_Raw(bytes(item))
        if isinstance(item, str):
            return wit.Part_Data(wit.Datum(self.schema(_STRING), self.value(_STRING, item, path)))
        if isinstance(item, Data):
            schema = None if item.schema is None else self.schema(item.schema)
            value = self.value(item.schema, item.value, path) if item.schema else self.schemaless(item.value, path)
            return wit.Part_Data(wit.Datum(schema, value))
        return wit.Part_Data(wit.Datum(None, self.schemaless(item, path)))

    def schema(self, s: Schema) -> int:
        known = self._known.get(id(s))
        if known is not None and known[1] is s:
            return known[0]
        wit = self.wit
        fields = [wit.Field(name, self.schema(f)) for name, f in s.fields]
        key = None if s.key is None else self.schema(s.key)
        value = None if s.value is None else self.schema(s.value)
        default = None if s.default is None else self.value(s, s.default, "the default of a schema")
        self.schemas.append(
            wit.Schema(
                type=wit.SchemaType[s.type.upper()],
                optional=s.optional,
                default_value=default,
                name=s.name,
                version=s.version,
                doc=s.doc,
                parameters=s.parameters,
                fields=fields,
                key_schema=key,
                value_schema=value,
            )
        )
        index = len(self.schemas) - 1
        self._known[id(s)] = (index, s)
        return index

    def _push(self, node) -> int:
        self.values.append(node)
        return len(self.values) - 1

    def value(self, s: Schema, v, path: str) -> int:
        wit = self.wit
        if v is None:
            if not s.optional and s.default is None:
                raise DataError(f"None{_where(path)}, whose {s.type} schema is not optional")
            return self._push(wit.Value_Null())
        kind = s.type
        if s.name == DECIMAL and kind == "bytes":
            scale = int(s.parameter("scale") or 0)
            if isinstance(v, decimal.Decimal):
                unscaled = int(v.scaleb(scale).to_integral_value())
            elif isinstance(v, int) and not isinstance(v, bool):
                unscaled = v
            else:
                raise DataError(f"a Decimal{_where(path)} takes a decimal.Decimal or an int, not {type(v).__name__}")
            length = max(1, (unscaled.bit_length() + 8) // 8)
            return self._push(wit.Value_Decimal(wit.Decimal(unscaled.to_bytes(length, "big", signed=True), scale)))
        if s.name == DATE and isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
            v = (v - _EPOCH.date()).days
        elif s.name == TIME and isinstance(v, datetime.time):
            v = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        elif s.name == TIMESTAMP and isinstance(v, datetime.datetime):
            aware = v if v.tzinfo is not None else v.replace(tzinfo=datetime.timezone.utc)
            v = (aware - _EPOCH) // datetime.timedelta(milliseconds=1)
        if kind in _RANGES:
            if not isinstance(v, int) or isinstance(v, bool):
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is {kind}: give an int")
            bits = _RANGES[kind]
            if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
                raise DataError(f"{v}{_where(path)} does not fit {kind}")
            return self._push(getattr(wit, f"Value_Int{bits}")(v))
        if kind in ("float32", "float64"):
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is {kind}: give a float")
            return self._push((wit.Value_Float32 if kind == "float32" else wit.Value_Float64)(float(v)))
        if kind == "boolean":
            if not isinstance(v, bool):
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is boolean: give a bool")
            return self._push(wit.Value_Boolean(v))
        if kind == "string":
            if not isinstance(v, str):
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is string: give a str")
            return self._push(wit.Value_String(v))
        if kind == "bytes":
            if not isinstance(v, (bytes, bytearray, memoryview)):
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is bytes: give bytes")
            return self._push(wit.Value_Bytes(bytes(v)))
        if kind == "array":
            if not isinstance(v, (list, tuple)):
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is an array: give a list")
            return self._push(wit.Value_Array([self.value(s.value, e, f"{path}[{i}]") for i, e in enumerate(v)]))
        if kind == "map":
            entries = v.items() if isinstance(v, dict) else v
            try:
                pairs = [(self.value(s.key, k, f"{path}.key"), self.value(s.value, e, f"{path}[{k!r}]")) for k, e in entries]
            except (TypeError, ValueError) as e:
                if isinstance(e, DataError):
                    raise
                raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is a map: give a dict") from None
            return self._push(wit.Value_Map(pairs))
        # struct
        names = [name for name, _ in s.fields]
        if isinstance(v, dict):
            unknown = [k for k in v if k not in names]
            if unknown:
                raise DataError(f"the struct{_where(path)} has no field {unknown[0]!r}; its fields are {', '.join(names)}")
            items = [v.get(name) for name in names]
        elif isinstance(v, (list, tuple)) and len(v) == len(names):
            items = list(v)
        else:
            raise DataError(f"{type(v).__name__}{_where(path)}, whose schema is a struct: give a dict by field name")
        inner = f"{path}." if path else ""
        return self._push(
            wit.Value_Struct([self.value(f, item, f"{inner}{name}") for (name, f), item in zip(s.fields, items)])
        )

    def _kept(self, kind, v):
        """The number as the value type it had (`kind`), or None when it no longer fits it."""
        wit = self.wit
        if kind == "float32":
            return wit.Value_Float32(v) if isinstance(v, float) and _fits_float32(v) else None
        if isinstance(v, int) and not isinstance(v, bool):
            bits = _RANGES[kind]
            if -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
                return getattr(wit, f"Value_Int{bits}")(v)
        return None

    def _noted(self, container):
        """The number types a reader noted for a container's values and keys (none by default)."""
        noted = self.number_kinds.get(id(container)) if self.number_kinds else None
        return (noted[1], noted[2]) if noted is not None and noted[0] is container else (_NO_KINDS, _NO_KINDS)

    def schemaless(self, v, path: str, kind: Optional[str] = None) -> int:
        """`kind`: the value type a number had when it was read, kept where it still fits."""
        wit = self.wit
        if v is None:
            return self._push(wit.Value_Null())
        if kind is not None:
            kept = self._kept(kind, v)
            if kept is not None:
                return self._push(kept)
        if isinstance(v, bool):
            return self._push(wit.Value_Boolean(v))
        if isinstance(v, int):
            if not -(1 << 63) <= v < (1 << 63):
                raise DataError(f"{v}{_where(path)} does not fit int64")
            return self._push(wit.Value_Int64(v))
        if isinstance(v, float):
            return self._push(wit.Value_Float64(v))
        if isinstance(v, str):
            return self._push(wit.Value_String(v))
        if isinstance(v, (bytes, bytearray, memoryview)):
            return self._push(wit.Value_Bytes(bytes(v)))
        if isinstance(v, (list, tuple)):
            values, _ = self._noted(v)
            return self._push(wit.Value_Array([self.schemaless(e, f"{path}[{i}]", values.get(i)) for i, e in enumerate(v)]))
        if isinstance(v, dict):
            values, keys = self._noted(v)
            return self._push(
                wit.Value_Map(
                    [
                        (self.schemaless(k, f"{path}.key", keys.get(k)), self.schemaless(e, f"{path}[{k!r}]", values.get(k)))
                        for k, e in v.items()
                    ]
                )
            )
        raise DataError(
            f"{type(v).__name__}{_where(path)} has no place in data without a schema: give None, bool, int, float, "
            "str, bytes, a list or a dict, or Data(schema, value)"
        )


_STRING = Schema.string()


class BatchReader:
    """Reads the flat tables of a batch the host sent into Python values and schemas.

    `number_kinds`, a dict, if given, gets for each list or dict read from data without a schema
    the value types of the int8, int16, int32 and float32 numbers it holds, by `id()`:
    (the container, {index or key: type of the value}, {key: type of the key}), for a
    `BatchWriter` to write them back as they were."""

    def __init__(self, schemas, values, number_kinds=None):
        from wit_world.imports import data as wit

        self.wit = wit
        self.values = values
        self.number_kinds = number_kinds
        self.schemas: List[Schema] = []
        for s in schemas:
            def earlier(i):
                if i is None:
                    return None
                if i >= len(self.schemas):
                    raise DataError(f"a schema refers to schema {i}, which is not before it")
                return self.schemas[i]

            built = Schema(
                type=s.type.name.lower(),
                optional=s.optional,
                name=s.name,
                version=s.version,
                doc=s.doc,
                parameters=s.parameters,
                fields=[(f.name, earlier(f.schema)) for f in s.fields],
                key=earlier(s.key_schema),
                value=earlier(s.value_schema),
            )
            if s.default_value is not None:
                built = replace(built, default=self.value(built, s.default_value))
            self.schemas.append(built)

    def narrow_kind(self, index: int) -> Optional[str]:
        """The value type of the number at `index` when Python's int or float does not tell it."""
        return _NARROW.get(type(self.values[index]).__name__)

    def _note(self, container, values, keys):
        """Notes the narrow number types among a container's values and keys (value indices)."""
        value_kinds = {at: kind for at, i in values.items() if (kind := self.narrow_kind(i))}
        key_kinds = {at: kind for at, i in keys.items() if (kind := self.narrow_kind(i))}
        if value_kinds or key_kinds:
            self.number_kinds[id(container)] = (container, value_kinds, key_kinds)

    def part(self, part):
        """(value, schema) of a key, value or header value."""
        if part is None:
            return None, None
        if isinstance(part, self.wit.Part_Raw):
            return part.value, None
        datum = part.value
        schema = None if datum.schema is None else self.schemas[datum.schema]
        return self.value(schema, datum.value), schema

    def value(self, schema: Optional[Schema], index: int):
        wit = self.wit
        node = self.values[index]
        if isinstance(node, wit.Value_Null):
            return None
        if isinstance(node, wit.Value_Decimal):
            unscaled = int.from_bytes(node.value.unscaled, "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-node.value.scale)
        if isinstance(node, wit.Value_Array):
            element = schema.value if schema else None
            out = [self.value(element, i) for i in node.value]
            if self.number_kinds is not None and schema is None:
                self._note(out, {at: i for at, i in enumerate(node.value)}, {})
            return out
        if isinstance(node, wit.Value_Map):
            k, v = (schema.key, schema.value) if schema else (None, None)
            pairs = [(self.value(k, a), self.value(v, b)) for a, b in node.value]
            try:
                out = dict(pairs)
            except TypeError:
                return pairs  # keys Python cannot hash (lists, dicts) stay pairs
            if self.number_kinds is not None and schema is None:
                keys = [key for key, _ in pairs]
                self._note(out, {key: b for key, (_, b) in zip(keys, node.value)}, {key: a for key, (a, _) in zip(keys, node.value)})
            return out
        if isinstance(node, wit.Value_Struct):
            fields = schema.fields if schema else []
            return {name: self.value(f, i) for (name, f), i in zip(fields, node.value)}
        v = node.value
        name = schema.name if schema else None
        if name == DATE and isinstance(v, int):
            return _EPOCH.date() + datetime.timedelta(days=v)
        if name == TIME and isinstance(v, int):
            return (_EPOCH + datetime.timedelta(milliseconds=v)).time()
        if name == TIMESTAMP and isinstance(v, int):
            return _EPOCH + datetime.timedelta(milliseconds=v)
        return v
