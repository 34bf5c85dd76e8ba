/* {{name}}: a Wharf transform plugin. It adds the header transformed-by (the plugin's name, as
 * bytes) to every record and keeps the record as it is otherwise. Replace that with your change;
 * set a record's `drop` to drop it. */
#include <string.h>

#include "wharf.h"

#define NAME "{{name}}"

const wharf_plugin_info WHARF_PLUGIN = {
    .name = NAME,
    .version = "0.1.0",
    .description = "Adds a header to every record (a template to start from)",
    /* Its settings, as a connector writes them after transforms.<alias>. */
    .config = NULL,
    .config_len = 0,
};

int wharf_transform_open(const wharf_config *config, void **state) {
    *state = NULL;
    return WHARF_OK;
}

int wharf_transform_apply(void *state, wharf_transform_record *records, size_t count, wharf_batch *batch) {
    for (size_t i = 0; i < count; i++) {
        int rc = wharf_record_add_header(&records[i], "transformed-by", wharf_part_bytes(NAME, strlen(NAME)));
        if (rc != WHARF_OK) return rc;
    }
    return WHARF_OK;
}

void wharf_transform_close(void *state) {}
