/* The component's exports, in terms of the plain C functions of wharf.h. Compiled with
 * -DWHARF_SOURCE or -DWHARF_SINK next to the bindings `wit-bindgen c` generated for that world. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf.h"

#if defined(WHARF_SOURCE)
#include "source.h"
#define W(name) source_##name
#elif defined(WHARF_SINK)
#include "sink.h"
#define W(name) sink_##name
#else
#error "compile wharf.c with -DWHARF_SOURCE or -DWHARF_SINK"
#endif

typedef W(string_t) wstring;

struct wharf_config {
    size_t len;
    char **keys;
    char **values;
};

static char *copy_n(const uint8_t *bytes, size_t len) {
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, bytes, len);
        s[len] = 0;
    }
    return s;
}

/* Takes the generated config (and frees it). */
static wharf_config *config_from(wharf_connector_types_config_t *given) {
    wharf_config *c = calloc(1, sizeof *c);
    c->len = given->len;
    c->keys = calloc(given->len ? given->len : 1, sizeof(char *));
    c->values = calloc(given->len ? given->len : 1, sizeof(char *));
    for (size_t i = 0; i < given->len; i++) {
        c->keys[i] = copy_n(given->ptr[i].f0.ptr, given->ptr[i].f0.len);
        c->values[i] = copy_n(given->ptr[i].f1.ptr, given->ptr[i].f1.len);
    }
    wharf_connector_types_config_free(given);
    return c;
}

static void config_free(wharf_config *c) {
    if (!c) return;
    for (size_t i = 0; i < c->len; i++) {
        free(c->keys[i]);
        free(c->values[i]);
    }
    free(c->keys);
    free(c->values);
    free(c);
}

const char *wharf_config_get(const wharf_config *config, const char *key) {
    const char *found = NULL;
    for (size_t i = 0; i < config->len; i++) {
        if (strcmp(config->keys[i], key) == 0) found = config->values[i]; /* the last one wins */
    }
    return found;
}

static char error_message[1024];

void wharf_error(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(error_message, sizeof error_message, format, args);
    va_end(args);
}

void wharf_log(wharf_level level, const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    wstring message;
    W(string_set)(&message, line);
    wharf_connector_host_log((wharf_connector_host_level_t)level, &message);
}

/* Turns a plugin function's return code into the host's error; true when it succeeded. */
static bool outcome(int code, const char *what, wharf_connector_types_connector_error_t *err) {
    if (code == WHARF_OK) {
        error_message[0] = 0;
        return true;
    }
    char text[1100];
    if (error_message[0]) {
        snprintf(text, sizeof text, "%s", error_message);
    } else {
        snprintf(text, sizeof text, "%s returned %d", what, code);
    }
    error_message[0] = 0;
    if (code == WHARF_RETRY) {
        err->tag = WHARF_CONNECTOR_TYPES_CONNECTOR_ERROR_RETRIABLE;
        W(string_dup)(&err->val.retriable, text);
    } else {
        err->tag = WHARF_CONNECTOR_TYPES_CONNECTOR_ERROR_FATAL;
        W(string_dup)(&err->val.fatal, text);
    }
    return false;
}

static void set_option_string(W(option_string_t) *option, const char *s) {
    option->is_some = s != NULL;
    if (s) W(string_dup)(&option->val, s);
}

void exports_wharf_connector_connector_describe(exports_wharf_connector_connector_plugin_info_t *ret) {
    W(string_dup)(&ret->name, WHARF_PLUGIN.name);
    W(string_dup)(&ret->version, WHARF_PLUGIN.version);
    W(string_dup)(&ret->description, WHARF_PLUGIN.description ? WHARF_PLUGIN.description : "");
#if defined(WHARF_SOURCE)
    ret->kind = WHARF_CONNECTOR_TYPES_CONNECTOR_KIND_SOURCE;
#else
    ret->kind = WHARF_CONNECTOR_TYPES_CONNECTOR_KIND_SINK;
#endif
    size_t n = WHARF_PLUGIN.config_len;
    ret->config.len = n;
    ret->config.ptr = n ? calloc(n, sizeof(wharf_connector_types_config_key_t)) : NULL;
    for (size_t i = 0; i < n; i++) {
        const wharf_config_key *k = &WHARF_PLUGIN.config[i];
        wharf_connector_types_config_key_t *out = &ret->config.ptr[i];
        W(string_dup)(&out->name, k->name);
        out->type = (wharf_connector_types_config_type_t)k->type;
        set_option_string(&out->default_value, k->default_value);
        out->required = k->required;
        out->importance = (wharf_connector_types_importance_t)k->importance;
        W(string_dup)(&out->documentation, k->doc ? k->doc : "");
        set_option_string(&out->group, NULL);
    }
}

void exports_wharf_connector_grants_declare(exports_wharf_connector_grants_list_key_grant_t *ret) {
    size_t n = WHARF_PLUGIN.grants ? WHARF_PLUGIN.grants_len : 0;
    ret->len = n;
    ret->ptr = n ? calloc(n, sizeof(exports_wharf_connector_grants_key_grant_t)) : NULL;
    if (n && !ret->ptr) {
        ret->len = 0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        W(string_dup)(&ret->ptr[i].key, WHARF_PLUGIN.grants[i].key);
        ret->ptr[i].names = (exports_wharf_connector_grants_names_t)WHARF_PLUGIN.grants[i].names;
    }
}

void exports_wharf_connector_connector_validate(exports_wharf_connector_connector_config_t *config,
                                                exports_wharf_connector_connector_list_config_problem_t *ret) {
    /* Required keys are checked by the host from the config definition. */
    wharf_connector_types_config_free(config);
    ret->ptr = NULL;
    ret->len = 0;
}

bool exports_wharf_connector_connector_task_configs(exports_wharf_connector_connector_config_t *config,
                                                    uint32_t max_tasks,
                                                    exports_wharf_connector_connector_list_config_t *ret,
                                                    exports_wharf_connector_connector_connector_error_t *err) {
    (void)max_tasks;
    (void)err;
    /* One task with the connector's config: hand the config back as the only task config. */
    ret->len = 1;
    ret->ptr = malloc(sizeof(wharf_connector_types_config_t));
    ret->ptr[0] = *config;
    return true;
}

/* What a task resource holds, in either world. */
typedef struct {
    wharf_config *config;
    void *state;
    bool closed;
} task_core;

/* Takes the config and runs the plugin's open function; true when it succeeded. */
static bool core_open(task_core *core, wharf_connector_types_config_t *config, int (*open)(const wharf_config *, void **),
                      const char *what, wharf_connector_types_connector_error_t *err) {
    core->config = config_from(config);
    if (!outcome(open(core->config, &core->state), what, err)) {
        config_free(core->config);
        return false;
    }
    return true;
}

/* Runs the plugin's close function once. */
static void core_close(task_core *core, void (*close)(void *)) {
    if (!core->closed) {
        core->closed = true;
        close(core->state);
    }
}

#if defined(WHARF_SOURCE)

struct exports_wharf_connector_source_task_task_t {
    task_core core;
};

struct wharf_batch {
    exports_wharf_connector_source_task_list_source_record_t *list;
    size_t capacity;
};

static void scalar_text(wharf_connector_types_tuple2_string_scalar_t *entry, const char *key, const char *value) {
    W(string_dup)(&entry->f0, key);
    entry->f1.tag = WHARF_CONNECTOR_TYPES_SCALAR_TEXT;
    W(string_dup)(&entry->f1.val.text, value);
}

static void bytes_option(W(option_list_u8_t) *option, const void *bytes, size_t len) {
    option->is_some = bytes != NULL;
    option->val.ptr = NULL;
    option->val.len = 0;
    if (bytes && len > 0) {
        /* The bindings free only non-empty lists after the call: allocate nothing for an empty one. */
        option->val.ptr = malloc(len);
        memcpy(option->val.ptr, bytes, len);
        option->val.len = len;
    }
}

int wharf_batch_add(wharf_batch *batch, const char *topic, const void *key, size_t key_len, const void *value,
                    size_t value_len, const char *partition_key, const char *partition_value,
                    const char *offset_key, int64_t offset) {
    if (!topic || !partition_key || !partition_value || !offset_key) {
        wharf_error("wharf_batch_add needs a topic, a partition key and value, and an offset key (one is NULL)");
        return WHARF_FAIL;
    }
    if (batch->list->len == batch->capacity) {
        size_t capacity = batch->capacity ? batch->capacity * 2 : 64;
        void *grown = realloc(batch->list->ptr, capacity * sizeof(wharf_connector_types_source_record_t));
        if (!grown) {
            wharf_error("out of memory after %zu records in one poll", batch->list->len);
            return WHARF_FAIL;
        }
        batch->list->ptr = grown;
        batch->capacity = capacity;
    }
    wharf_connector_types_source_record_t *r = &batch->list->ptr[batch->list->len++];
    memset(r, 0, sizeof *r);
    r->source_partition.len = 1;
    r->source_partition.ptr = calloc(1, sizeof(wharf_connector_types_tuple2_string_scalar_t));
    scalar_text(&r->source_partition.ptr[0], partition_key, partition_value);
    r->source_offset.len = 1;
    r->source_offset.ptr = calloc(1, sizeof(wharf_connector_types_tuple2_string_scalar_t));
    W(string_dup)(&r->source_offset.ptr[0].f0, offset_key);
    r->source_offset.ptr[0].f1.tag = WHARF_CONNECTOR_TYPES_SCALAR_INTEGER;
    r->source_offset.ptr[0].f1.val.integer = offset;
    W(string_dup)(&r->topic, topic);
    bytes_option(&r->key, key, key_len);
    bytes_option(&r->value, value, value_len);
    return WHARF_OK;
}

bool wharf_committed_offset(const char *partition_key, const char *partition_value, const char *offset_key,
                            int64_t *offset) {
    wharf_connector_types_tuple2_string_scalar_t entry;
    scalar_text(&entry, partition_key, partition_value);
    wharf_connector_host_offset_map_t partition = {&entry, 1};
    wharf_connector_host_list_offset_map_t partitions = {&partition, 1};
    wharf_connector_host_list_option_offset_map_t found;
    wharf_connector_host_committed_offsets(&partitions, &found);
    wharf_connector_types_tuple2_string_scalar_free(&entry);
    bool hit = false;
    if (found.len == 1 && found.ptr[0].is_some) {
        wharf_connector_host_offset_map_t *map = &found.ptr[0].val;
        for (size_t i = 0; i < map->len; i++) {
            bool named = map->ptr[i].f0.len == strlen(offset_key) && memcmp(map->ptr[i].f0.ptr, offset_key, map->ptr[i].f0.len) == 0;
            if (named && map->ptr[i].f1.tag == WHARF_CONNECTOR_TYPES_SCALAR_INTEGER) {
                *offset = map->ptr[i].f1.val.integer;
                hit = true;
            }
        }
    }
    wharf_connector_host_list_option_offset_map_free(&found);
    return hit;
}

bool exports_wharf_connector_source_task_static_task_open(exports_wharf_connector_source_task_config_t *config,
                                                          exports_wharf_connector_source_task_own_task_t *ret,
                                                          exports_wharf_connector_source_task_connector_error_t *err) {
    exports_wharf_connector_source_task_task_t *task = calloc(1, sizeof *task);
    if (!core_open(&task->core, config, wharf_source_open, "wharf_source_open", err)) {
        free(task);
        return false;
    }
    *ret = exports_wharf_connector_source_task_task_new(task);
    return true;
}

bool exports_wharf_connector_source_task_method_task_poll(exports_wharf_connector_source_task_borrow_task_t self,
                                                          uint32_t max_records,
                                                          exports_wharf_connector_source_task_list_source_record_t *ret,
                                                          exports_wharf_connector_source_task_connector_error_t *err) {
    ret->ptr = NULL;
    ret->len = 0;
    wharf_batch batch = {ret, 0};
    if (!outcome(wharf_source_poll(self->core.state, max_records, &batch), "wharf_source_poll", err)) {
        exports_wharf_connector_source_task_list_source_record_free(ret);
        return false;
    }
    return true;
}

bool exports_wharf_connector_source_task_method_task_commit(exports_wharf_connector_source_task_borrow_task_t self,
                                                            exports_wharf_connector_source_task_connector_error_t *err) {
    return outcome(wharf_source_commit(self->core.state), "wharf_source_commit", err);
}

void exports_wharf_connector_source_task_method_task_close(exports_wharf_connector_source_task_borrow_task_t self) {
    core_close(&self->core, wharf_source_close);
}

void exports_wharf_connector_source_task_task_destructor(exports_wharf_connector_source_task_task_t *rep) {
    core_close(&rep->core, wharf_source_close);
    config_free(rep->core.config);
    free(rep);
}

#else /* WHARF_SINK */

struct exports_wharf_connector_sink_task_task_t {
    task_core core;
};

bool exports_wharf_connector_sink_task_static_task_open(exports_wharf_connector_sink_task_config_t *config,
                                                        exports_wharf_connector_sink_task_own_task_t *ret,
                                                        exports_wharf_connector_sink_task_connector_error_t *err) {
    exports_wharf_connector_sink_task_task_t *task = calloc(1, sizeof *task);
    if (!core_open(&task->core, config, wharf_sink_open, "wharf_sink_open", err)) {
        free(task);
        return false;
    }
    *ret = exports_wharf_connector_sink_task_task_new(task);
    return true;
}

bool exports_wharf_connector_sink_task_method_task_open_partitions(exports_wharf_connector_sink_task_borrow_task_t self,
                                                                   exports_wharf_connector_sink_task_list_topic_partition_t *partitions,
                                                                   exports_wharf_connector_sink_task_connector_error_t *err) {
    (void)self;
    (void)err;
    exports_wharf_connector_sink_task_list_topic_partition_free(partitions);
    return true;
}

bool exports_wharf_connector_sink_task_method_task_put(exports_wharf_connector_sink_task_borrow_task_t self,
                                                       exports_wharf_connector_sink_task_list_sink_record_t *records,
                                                       exports_wharf_connector_sink_task_connector_error_t *err) {
    size_t n = records->len;
    wharf_sink_record *plain = calloc(n ? n : 1, sizeof *plain);
    char **topics = calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        wharf_connector_types_sink_record_t *r = &records->ptr[i];
        topics[i] = copy_n(r->topic.ptr, r->topic.len);
        plain[i] = (wharf_sink_record){
            .topic = topics[i],
            .partition = r->partition,
            .offset = r->offset,
            .key = r->key.is_some ? r->key.val.ptr : NULL,
            .key_len = r->key.is_some ? r->key.val.len : 0,
            .value = r->value.is_some ? r->value.val.ptr : NULL,
            .value_len = r->value.is_some ? r->value.val.len : 0,
            .timestamp = r->timestamp.is_some ? r->timestamp.val : -1,
        };
    }
    bool ok = outcome(wharf_sink_put(self->core.state, plain, n), "wharf_sink_put", err);
    for (size_t i = 0; i < n; i++) free(topics[i]);
    free(topics);
    free(plain);
    exports_wharf_connector_sink_task_list_sink_record_free(records);
    return ok;
}

bool exports_wharf_connector_sink_task_method_task_flush(exports_wharf_connector_sink_task_borrow_task_t self,
                                                         exports_wharf_connector_sink_task_list_partition_offset_t *offsets,
                                                         exports_wharf_connector_sink_task_connector_error_t *err) {
    exports_wharf_connector_sink_task_list_partition_offset_free(offsets);
    return outcome(wharf_sink_flush(self->core.state), "wharf_sink_flush", err);
}

bool exports_wharf_connector_sink_task_method_task_close_partitions(exports_wharf_connector_sink_task_borrow_task_t self,
                                                                    exports_wharf_connector_sink_task_list_topic_partition_t *partitions,
                                                                    exports_wharf_connector_sink_task_connector_error_t *err) {
    (void)self;
    (void)err;
    exports_wharf_connector_sink_task_list_topic_partition_free(partitions);
    return true;
}

void exports_wharf_connector_sink_task_method_task_close(exports_wharf_connector_sink_task_borrow_task_t self) {
    core_close(&self->core, wharf_sink_close);
}

void exports_wharf_connector_sink_task_task_destructor(exports_wharf_connector_sink_task_task_t *rep) {
    core_close(&rep->core, wharf_sink_close);
    config_free(rep->core.config);
    free(rep);
}

#endif
