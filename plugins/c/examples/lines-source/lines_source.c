/* lines-source: reads a text file from a granted folder, one record per line, and follows the
 * file as it grows; the byte position is the source offset. Each line is a string with a string
 * schema, as Kafka's FileStreamSource emits it (through the default converter, its bytes as they
 * are). A line longer than max.line.bytes fails the task (a non-zero return with a message). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf.h"

static const wharf_config_key keys[] = {
    {"file", WHARF_STRING, NULL, true, WHARF_HIGH, "The file to read; its folder is granted for reading."},
    {"topic", WHARF_STRING, NULL, true, WHARF_HIGH, "The topic to write to."},
    {"max.line.bytes", WHARF_INT, "1048576", false, WHARF_LOW, "The longest line accepted; a longer one fails the task."},
};

/* The host grants reading the folder of "file". */
static const wharf_key_grant grants[] = {
    {"file", WHARF_FILE_TO_READ},
};

const wharf_plugin_info WHARF_PLUGIN = {
    .name = "lines-source",
    .version = "0.1.0",
    .description = "Reads lines from a file (C example)",
    .config = keys,
    .config_len = sizeof keys / sizeof keys[0],
    .grants = grants,
    .grants_len = sizeof grants / sizeof grants[0],
};

typedef struct {
    const char *path;
    const char *topic;
    size_t max_line;
    FILE *file;
    int64_t position;
    char *line;
} lines;

/* Built once, kept for the plugin's life. */
static wharf_schema *line_schema;

int wharf_source_open(const wharf_config *config, void **state) {
    lines *t = calloc(1, sizeof *t);
    t->path = wharf_config_get(config, "file");
    t->topic = wharf_config_get(config, "topic");
    const char *max = wharf_config_get(config, "max.line.bytes");
    long long wanted = max ? strtoll(max, NULL, 10) : 1048576;
    if (wanted <= 0 || wanted > 64 * 1024 * 1024) {
        wharf_error("max.line.bytes must be a number from 1 to 67108864, not \"%s\"", max);
        free(t);
        return WHARF_FAIL;
    }
    t->max_line = (size_t)wanted;
    t->line = malloc(t->max_line + 2);
    if (!t->line) {
        wharf_error("cannot allocate a line buffer of max.line.bytes=%zu", t->max_line);
        free(t);
        return WHARF_FAIL;
    }
    if (!wharf_committed_offset("filename", t->path, "position", &t->position)) t->position = 0;
    if (!line_schema && !(line_schema = wharf_schema_new(WHARF_TYPE_STRING))) {
        wharf_error("out of memory making the line schema");
        free(t->line);
        free(t);
        return WHARF_FAIL;
    }
    wharf_log(WHARF_INFO, "reading %s from byte %lld", t->path, (long long)t->position);
    *state = t;
    return WHARF_OK;
}

int wharf_source_poll(void *state, uint32_t max_records, wharf_batch *batch) {
    lines *t = state;
    if (!t->file) {
        t->file = fopen(t->path, "rb");
        if (!t->file) {
            if (errno == ENOENT) return WHARF_OK; /* not there yet */
            wharf_error("cannot open %s: %s", t->path, strerror(errno));
            return WHARF_FAIL;
        }
    }
    clearerr(t->file);
    if (fseeko(t->file, (off_t)t->position, SEEK_SET) != 0) {
        wharf_error("cannot seek to byte %lld of %s: %s", (long long)t->position, t->path, strerror(errno));
        return WHARF_FAIL;
    }
    for (uint32_t n = 0; n < max_records; n++) {
        if (!fgets(t->line, (int)t->max_line + 2, t->file)) break;
        /* The length from the file position, not strlen: a line may hold NUL bytes. */
        size_t len = (size_t)(ftello(t->file) - (off_t)t->position);
        if (len == 0 || t->line[len - 1] != '\n') {
            if (len > t->max_line) {
                wharf_error("line at byte %lld of %s is longer than max.line.bytes=%zu", (long long)t->position,
                            t->path, t->max_line);
                return WHARF_FAIL;
            }
            break; /* a line still being written: read it whole next time */
        }
        int64_t next = t->position + (int64_t)len;
        len--;
        if (len > 0 && t->line[len - 1] == '\r') len--;
        wharf_value text = wharf_string_n(batch, t->line, len);
        int added = wharf_batch_add_part(batch, t->topic, wharf_part_none(), wharf_part_data(line_schema, text), "filename",
                                         t->path, "position", next);
        if (added != WHARF_OK) return added;
        t->position = next;
    }
    return WHARF_OK;
}

int wharf_source_commit(void *state) {
    return WHARF_OK;
}

void wharf_source_close(void *state) {
    lines *t = state;
    if (t->file) fclose(t->file);
    free(t->line);
    free(t);
}
