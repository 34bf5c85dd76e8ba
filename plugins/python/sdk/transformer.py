# componentize-py looks for the exported `transform` resource of the `transformer` interface in a
# module of this name; the SDK provides it.
from wharf_sdk.transform import TransformResource as Transform  # noqa: F401
