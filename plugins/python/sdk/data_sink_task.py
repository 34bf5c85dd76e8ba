# componentize-py looks for the exported `task` resource of the `data-sink-task` interface in a
# module of this name; the SDK provides it.
from wharf_sdk.sink import Task  # noqa: F401
