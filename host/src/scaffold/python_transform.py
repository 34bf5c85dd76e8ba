"""{{name}}: a Wharf transform plugin. It adds the header `transformed-by` (the plugin's name, as
bytes) to every record and keeps the record as it is otherwise. Replace that with your change;
return None from `apply` to drop a record."""

from wharf_sdk.transform import Transform, export


class Plugin(Transform):
    name = "{{name}}"
    version = "0.1.0"
    description = "Adds a header to every record (a template to start from)"
    # Its settings (ConfigKey), as a connector writes them after `transforms.<alias>.`.
    config = []

    def apply(self, record):
        record.headers.append(("transformed-by", b"{{name}}"))
        return record


# The name of the `transform` world's export (build.sh builds for it).
Transformer = export(Plugin)
