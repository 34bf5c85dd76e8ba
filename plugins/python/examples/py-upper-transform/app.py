"""py-upper-transform: upper-cases a record's value when it is a string (with a string schema or
without a schema), or, with `field` set, that field of a struct value; drops records whose value
is null; and adds the header `transformed-by` (bytes: the plugin's name) to every record it
keeps. Other values pass as they are. The same transform as js-upper-transform and
c-upper-transform."""

from wharf_sdk import ConfigKey
from wharf_sdk.transform import Transform, export

NAME = "py-upper-transform"


class UpperTransform(Transform):
    name = NAME
    version = "0.1.0"
    description = "Upper-cases string values, or one string field of struct values (Python example)"
    config = [
        ConfigKey("field", default="", doc="The struct field to upper-case; empty: only string values are."),
    ]

    def open(self, config):
        self.field = config.get("field") or None

    def apply(self, record):
        if record.value is None:
            return None
        schema = record.value_schema
        if isinstance(record.value, str):
            record.value = record.value.upper()
        elif self.field and schema is not None and schema.type == "struct" and isinstance(record.value.get(self.field), str):
            record.value[self.field] = record.value[self.field].upper()
        record.headers.append(("transformed-by", NAME.encode()))
        return record


# The name of the `transform` world's export, which plugins/build-examples builds for.
Transformer = export(UpperTransform)
