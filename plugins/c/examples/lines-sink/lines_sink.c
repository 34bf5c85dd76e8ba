/* lines-sink: writes each record's value as one line of a file in a granted folder. put buffers
 * in the C library; flush writes and syncs, so what Kafka's committed offsets cover is on disk.
 * A value is written as it is when it is bytes or a string (what ByteArrayConverter and
 * StringConverter give); other data fails the task with the record and the way out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wharf.h"

static const wharf_config_key keys[] = {
    {"file", WHARF_STRING, NULL, true, WHARF_HIGH, "The file to append to; its folder is granted for writing."},
};

/* The host grants writing the folder of "file". */
static const wharf_key_grant grants[] = {
    {"file", WHARF_FILE_TO_WRITE},
};

const wharf_plugin_info WHARF_PLUGIN = {
    .name = "lines-sink",
    .version = "0.1.0",
    .description = "Writes record values as lines to a file (C example)",
    .config = keys,
    .config_len = sizeof keys / sizeof keys[0],
    .grants = grants,
    .grants_len = sizeof grants / sizeof grants[0],
};

typedef struct {
    const char *path;
    FILE *file;
} sink;

int wharf_sink_open(const wharf_config *config, void **state) {
    sink *s = calloc(1, sizeof *s);
    s->path = wharf_config_get(config, "file");
    s->file = fopen(s->path, "ab");
    if (!s->file) {
        wharf_error("cannot open %s for appending: %s", s->path, strerror(errno));
        free(s);
        return WHARF_FAIL;
    }
    *state = s;
    return WHARF_OK;
}

int wharf_sink_put(void *state, const wharf_sink_record *records, size_t count) {
    sink *s = state;
    for (size_t i = 0; i < count; i++) {
        const void *value = records[i].value;
        size_t len = records[i].value_len;
        if (records[i].value_data) {
            value = wharf_datum_string(records[i].value_data, &len);
            if (!value) value = wharf_datum_bytes(records[i].value_data, &len);
            if (!value) {
                wharf_error("the value of %s-%d offset %lld is data of kind %d, not a string or bytes: lines-sink writes "
                            "text; set value.converter=org.apache.kafka.connect.storage.StringConverter to write "
                            "the value's bytes as they are",
                            records[i].topic, (int)records[i].partition, (long long)records[i].offset,
                            (int)wharf_datum_kind(records[i].value_data));
                return WHARF_FAIL;
            }
        }
        if (len > 0 && fwrite(value, 1, len, s->file) != len) {
            wharf_error("cannot write to %s: %s", s->path, strerror(errno));
            return WHARF_FAIL;
        }
        if (fputc('\n', s->file) == EOF) {
            wharf_error("cannot write to %s: %s", s->path, strerror(errno));
            return WHARF_FAIL;
        }
    }
    return WHARF_OK;
}

int wharf_sink_flush(void *state) {
    sink *s = state;
    if (fflush(s->file) != 0 || fsync(fileno(s->file)) != 0) {
        wharf_error("cannot write %s to disk: %s", s->path, strerror(errno));
        return WHARF_RETRY;
    }
    return WHARF_OK;
}

void wharf_sink_close(void *state) {
    sink *s = state;
    fclose(s->file);
    free(s);
}
