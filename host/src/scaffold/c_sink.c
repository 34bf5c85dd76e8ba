/* {{name}}: a Wharf sink plugin. It counts the records it receives and logs the count on every
 * flush. Replace the counting with writing to your system (durably, by the end of flush). */
#include <stdlib.h>

#include "wharf.h"

const wharf_plugin_info WHARF_PLUGIN = {
    .name = "{{name}}",
    .version = "0.1.0",
    .description = "Counts records (a template to start from)",
    .config = NULL,
    .config_len = 0,
};

typedef struct {
    unsigned long long seen;
} counter;

int wharf_sink_open(const wharf_config *config, void **state) {
    *state = calloc(1, sizeof(counter));
    return WHARF_OK;
}

int wharf_sink_put(void *state, const wharf_sink_record *records, size_t count) {
    ((counter *)state)->seen += count;
    return WHARF_OK;
}

int wharf_sink_flush(void *state) {
    wharf_log(WHARF_INFO, "%llu records so far", ((counter *)state)->seen);
    return WHARF_OK;
}

void wharf_sink_close(void *state) { free(state); }
