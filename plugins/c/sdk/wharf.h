/* Write Wharf connector plugins in C.
 *
 * A plugin defines WHARF_PLUGIN (its name, version and config keys) and the task functions of
 * its kind, below; wharf.c turns them into the component's exports. Build with plugins/c/build.
 *
 * Every task function returns WHARF_OK (0) on success. Any other value is an error: WHARF_RETRY
 * makes the host call again later, anything else fails the task. Say what went wrong with
 * wharf_error() before returning; the host shows that message in the task's trace. A poll that
 * fails hands over none of the records it added: keep the task's position where it was.
 */
#ifndef WHARF_H
#define WHARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WHARF_OK 0
#define WHARF_RETRY 1
#define WHARF_FAIL 2

typedef enum { WHARF_BOOLEAN, WHARF_INT, WHARF_LONG, WHARF_DOUBLE, WHARF_STRING, WHARF_LIST, WHARF_PASSWORD } wharf_config_type;
typedef enum { WHARF_HIGH, WHARF_MEDIUM, WHARF_LOW } wharf_importance;
typedef enum { WHARF_TRACE, WHARF_DEBUG, WHARF_INFO, WHARF_WARN, WHARF_ERROR } wharf_level;

/* One configuration key, as Kafka Connect's ConfigDef describes it. A required key has no
 * default: a config without it is refused before the plugin sees it. */
typedef struct {
    const char *name;
    wharf_config_type type;
    const char *default_value; /* NULL: none */
    bool required;
    wharf_importance importance;
    const char *doc;
} wharf_config_key;

/* What the value of a config key names. The host grants what the values name (the folder of a
 * file, the folder itself, the host:port addresses, the URLs' host:port), within what the
 * worker's operator allows (wasm.ceiling.*), so a connector config needs no wasm.* keys. */
typedef enum {
    WHARF_FILE_TO_READ,
    WHARF_FILE_TO_WRITE,
    WHARF_FOLDER_TO_READ,
    WHARF_FOLDER_TO_WRITE,
    WHARF_HOST_PORT,
    WHARF_URL
} wharf_names;

typedef struct {
    const char *key;
    wharf_names names;
} wharf_key_grant;

typedef struct {
    const char *name;
    const char *version;
    const char *description;
    const wharf_config_key *config;
    size_t config_len;
    const wharf_key_grant *grants; /* NULL: none */
    size_t grants_len;
} wharf_plugin_info;

/* Defined by the plugin. */
extern const wharf_plugin_info WHARF_PLUGIN;

/* A connector or task config. */
typedef struct wharf_config wharf_config;

/* The value of `key`, NUL-terminated, or NULL when the config lacks it. The string lives as long
 * as the config: for a task, until its close function returns. */
const char *wharf_config_get(const wharf_config *config, const char *key);

/* Sets the message of the error the current function is about to return (printf-style). */
void wharf_error(const char *format, ...);

/* Writes a line to the worker's log, tagged with the connector and task (printf-style). */
void wharf_log(wharf_level level, const char *format, ...);

/* ---- Sources ---- */

/* The records one poll returns. */
typedef struct wharf_batch wharf_batch;

/* Appends a record. key may be NULL (no key); value may be NULL (a tombstone). The source
 * partition is {partition_key: partition_value} and the source offset {offset_key: offset}: the
 * host stores the offset once Kafka holds the record, and wharf_committed_offset returns it after
 * a restart. Returns WHARF_OK, or WHARF_FAIL when out of memory. */
int wharf_batch_add(wharf_batch *batch, const char *topic, const void *key, size_t key_len, const void *value,
                    size_t value_len, const char *partition_key, const char *partition_value,
                    const char *offset_key, int64_t offset);

/* The stored offset of source partition {partition_key: partition_value} under offset_key.
 * Returns false when there is none yet. */
bool wharf_committed_offset(const char *partition_key, const char *partition_value, const char *offset_key,
                            int64_t *offset);

/* A source plugin defines these. `state` is the plugin's own, made by open. */
int wharf_source_open(const wharf_config *config, void **state);
int wharf_source_poll(void *state, uint32_t max_records, wharf_batch *batch);
int wharf_source_commit(void *state);
void wharf_source_close(void *state);

/* ---- Sinks ---- */

typedef struct {
    const char *topic; /* NUL-terminated */
    int32_t partition;
    int64_t offset;
    const uint8_t *key; /* NULL: no key */
    size_t key_len;
    const uint8_t *value; /* NULL: no value */
    size_t value_len;
    int64_t timestamp; /* -1: none */
} wharf_sink_record;

/* A sink plugin defines these. flush must make every record put so far durable: the host then
 * commits the Kafka offsets, so those records are never delivered again. */
int wharf_sink_open(const wharf_config *config, void **state);
int wharf_sink_put(void *state, const wharf_sink_record *records, size_t count);
int wharf_sink_flush(void *state);
void wharf_sink_close(void *state);

#endif
