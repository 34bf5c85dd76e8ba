"""Conversions between the SDK's Python values and the generated WIT types, and the error
handling every exported call shares."""

import traceback
from typing import Dict, List, Tuple

try:
    from wit_world.imports import types
except ImportError:
    # A world that also imports `wasi:tls/types` (the `*-with-net` worlds), built without
    # `--import-interface-name 'wharf:connector/types@0.1.8=types'`.
    from wit_world.imports import wharf_connector_types as types
from componentize_py_types import Err

from . import ConfigKey, FatalError, RetriableError

_TYPES = {t.name.lower(): t for t in types.ConfigType}
_IMPORTANCE = {i.name.lower(): i for i in types.Importance}


def scalar(value):
    # bool before int: True is an int in Python.
    if value is None:
        return types.Scalar_Null()
    if isinstance(value, bool):
        return types.Scalar_Boolean(value)
    if isinstance(value, int):
        return types.Scalar_Integer(value)
    if isinstance(value, float):
        return types.Scalar_Float(value)
    if isinstance(value, str):
        return types.Scalar_Text(value)
    raise FatalError(f"offset and partition values must be None, bool, int, float or str, not {type(value).__name__}")


def offset_map(mapping) -> List[Tuple[str, object]]:
    return [(k, scalar(v)) for k, v in mapping.items()]


def offset_dict(pairs) -> Dict[str, object]:
    return {k: (None if isinstance(v, types.Scalar_Null) else v.value) for k, v in pairs}


def as_bytes(value):
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise FatalError(f"keys, values and headers must be bytes or str, not {type(value).__name__}")


def config_key(key: ConfigKey):
    kind = _TYPES.get(key.type.lower())
    if kind is None:
        raise FatalError(f"config key {key.name!r} has type {key.type!r}; use one of {', '.join(_TYPES)}")
    importance = _IMPORTANCE.get(key.importance.lower())
    if importance is None:
        raise FatalError(f"config key {key.name!r} has importance {key.importance!r}; use high, medium or low")
    return types.ConfigKey(
        name=key.name,
        type=kind,
        default_value=key.default,
        required=key.required,
        importance=importance,
        documentation=key.doc,
        group=key.group,
    )


def plugin_info(connector, kind):
    return types.PluginInfo(
        name=connector.name,
        version=connector.version,
        description=connector.description,
        kind=kind,
        config=[config_key(k) for k in connector.config],
    )


def guarded(call, *args):
    """Runs a plugin's method; its exception becomes the host's retriable or fatal error, with
    Python's own message and traceback."""
    try:
        return call(*args)
    except RetriableError as e:
        raise Err(types.ConnectorError_Retriable(str(e) or type(e).__name__))
    except FatalError as e:
        raise Err(types.ConnectorError_Fatal(str(e) or type(e).__name__))
    except Exception as e:
        detail = "".join(traceback.format_exception(e)).rstrip()
        raise Err(types.ConnectorError_Fatal(f"{type(e).__name__}: {e}\n{detail}"))


def connector_exports(connector_class, kind, base):
    """The class componentize-py calls for the `connector` interface."""

    class Connector(base):
        def describe(self):
            return plugin_info(connector_class(), kind)

        def validate(self, config):
            problems = connector_class().validate(dict(config))
            return [types.ConfigProblem(name=name, message=message) for name, message in problems]

        def task_configs(self, config, max_tasks):
            def split():
                configs = connector_class().task_configs(dict(config), max_tasks)
                return [[(str(k), str(v)) for k, v in c.items() if v is not None] for c in configs]

            return guarded(split)

    return Connector


_NAMES = {
    "file-to-read": "FILE_TO_READ",
    "file-to-write": "FILE_TO_WRITE",
    "folder-to-read": "FOLDER_TO_READ",
    "folder-to-write": "FOLDER_TO_WRITE",
    "host-port": "HOST_PORT",
    "url": "URL",
}


def grants_exports(connector_class, base):
    """The class componentize-py calls for the `grants` interface."""
    from wit_world.exports import grants

    class Grants(base):
        def declare(self):
            declared = []
            for key, what in connector_class.grants:
                member = _NAMES.get(what)
                if member is None:
                    raise ValueError(f"grants: {key!r} names {what!r}; use one of {', '.join(_NAMES)}")
                declared.append(grants.KeyGrant(key=key, names=getattr(grants.Names, member)))
            return declared

    return Grants


def open_task(registered, world, config):
    """Makes and opens the registered connector's task, for a `task` resource's `open`."""
    if registered is None or registered.task is None:
        raise TypeError(f"no {world} connector exported: call wharf_sdk.{world}.export(YourConnector) in app.py")

    def start():
        inner = registered.task()
        inner.open(dict(config))
        return inner

    return guarded(start)
