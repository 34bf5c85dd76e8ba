/* {{name}}: a Wharf source plugin. It writes "hello 1", "hello 2", … to `topic` and resumes after
 * the last number stored. Replace the counting with reading your system. */
#include <stdio.h>
#include <stdlib.h>

#include "wharf.h"

static const wharf_config_key keys[] = {
    {"topic", WHARF_STRING, NULL, true, WHARF_HIGH, "The topic to write to."},
};

const wharf_plugin_info WHARF_PLUGIN = {
    .name = "{{name}}",
    .version = "0.1.0",
    .description = "Counts (a template to start from)",
    .config = keys,
    .config_len = 1,
};

typedef struct {
    const char *topic;
    int64_t next;
} counter;

int wharf_source_open(const wharf_config *config, void **state) {
    counter *c = calloc(1, sizeof *c);
    c->topic = wharf_config_get(config, "topic");
    int64_t last = 0;
    wharf_committed_offset("stream", "counter", "last", &last);
    c->next = last + 1;
    wharf_log(WHARF_INFO, "counting from %lld", (long long)c->next);
    *state = c;
    return WHARF_OK;
}

int wharf_source_poll(void *state, uint32_t max_records, wharf_batch *batch) {
    counter *c = state;
    char value[32];
    for (uint32_t i = 0; i < max_records; i++, c->next++) {
        int len = snprintf(value, sizeof value, "hello %lld", (long long)c->next);
        int added = wharf_batch_add(batch, c->topic, NULL, 0, value, (size_t)len, "stream", "counter", "last", c->next);
        if (added != WHARF_OK) return added;
    }
    return WHARF_OK;
}

int wharf_source_commit(void *state) { return WHARF_OK; }

void wharf_source_close(void *state) { free(state); }
