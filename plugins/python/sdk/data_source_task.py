# componentize-py looks for the exported `task` resource of the `data-source-task` interface in a
# module of this name; the SDK provides it.
from wharf_sdk.source import Task  # noqa: F401
