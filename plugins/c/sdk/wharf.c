/* The component's exports, in terms of the plain C functions of wharf.h. Compiled with
 * -DWHARF_SOURCE or -DWHARF_SINK (and -DWHARF_DATA for the data worlds, -DWHARF_NET for the
 * *-with-net ones, -DWHARF_EXACTLY_ONCE for the *-exactly-once ones), or -DWHARF_TRANSFORM, next
 * to the bindings `wit-bindgen c` generated for that world. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf.h"

#if defined(WHARF_EXACTLY_ONCE) && !(defined(WHARF_SOURCE) && defined(WHARF_DATA))
#error "-DWHARF_EXACTLY_ONCE goes with -DWHARF_SOURCE -DWHARF_DATA: only the data-source worlds have *-exactly-once variants"
#endif

#if defined(WHARF_TRANSFORM)
#include "transform.h"
#define W(name) transform_##name
#define TASK(name) exports_wharf_connector_transformer_##name
#elif defined(WHARF_SOURCE) && defined(WHARF_DATA) && defined(WHARF_NET) && defined(WHARF_EXACTLY_ONCE)
#include "data_source_with_net_exactly_once.h"
#define W(name) data_source_with_net_exactly_once_##name
#define TASK(name) exports_wharf_connector_data_source_task_##name
#elif defined(WHARF_SOURCE) && defined(WHARF_DATA) && defined(WHARF_NET)
#include "data_source_with_net.h"
#define W(name) data_source_with_net_##name
#define TASK(name) exports_wharf_connector_data_source_task_##name
#elif defined(WHARF_SOURCE) && defined(WHARF_DATA) && defined(WHARF_EXACTLY_ONCE)
#include "data_source_exactly_once.h"
#define W(name) data_source_exactly_once_##name
#define TASK(name) exports_wharf_connector_data_source_task_##name
#elif defined(WHARF_SOURCE) && defined(WHARF_DATA)
#include "data_source.h"
#define W(name) data_source_##name
#define TASK(name) exports_wharf_connector_data_source_task_##name
#elif defined(WHARF_SOURCE)
#include "source.h"
#define W(name) source_##name
#define TASK(name) exports_wharf_connector_source_task_##name
#elif defined(WHARF_SINK) && defined(WHARF_DATA) && defined(WHARF_NET)
#include "data_sink_with_net.h"
#define W(name) data_sink_with_net_##name
#define TASK(name) exports_wharf_connector_data_sink_task_##name
#elif defined(WHARF_SINK) && defined(WHARF_DATA)
#include "data_sink.h"
#define W(name) data_sink_##name
#define TASK(name) exports_wharf_connector_data_sink_task_##name
#elif defined(WHARF_SINK)
#include "sink.h"
#define W(name) sink_##name
#define TASK(name) exports_wharf_connector_sink_task_##name
#else
#error "compile wharf.c with -DWHARF_SOURCE, -DWHARF_SINK or -DWHARF_TRANSFORM"
#endif

/* Data sources and transforms build data; data sinks and transforms read it. */
#if defined(WHARF_TRANSFORM) || (defined(WHARF_SOURCE) && defined(WHARF_DATA))
#define BUILDS_DATA
#endif
#if defined(WHARF_TRANSFORM) || (defined(WHARF_SINK) && defined(WHARF_DATA))
#define READS_DATA
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

#if !defined(WHARF_TRANSFORM)
int64_t wharf_metric(const char *name, const char *description, wharf_metric_kind kind, const wharf_tag *tags,
                     size_t tags_len, const double *buckets, size_t buckets_len) {
    if (!name || (tags_len && !tags) || (buckets_len && !buckets)) {
        wharf_error("wharf_metric takes a name, and its tags and buckets with their counts");
        return -1;
    }
    wharf_connector_metrics_metric_t metric;
    W(string_set)(&metric.name, name);
    W(string_set)(&metric.description, description ? description : "");
    metric.kind = (wharf_connector_metrics_metric_kind_t)kind;
    metric.tags.len = tags_len;
    metric.tags.ptr = tags_len ? calloc(tags_len, sizeof *metric.tags.ptr) : NULL;
    if (tags_len && !metric.tags.ptr) {
        wharf_error("out of memory registering the metric %s", name);
        return -1;
    }
    for (size_t i = 0; i < tags_len; i++) {
        W(string_set)(&metric.tags.ptr[i].f0, tags[i].name ? tags[i].name : "");
        W(string_set)(&metric.tags.ptr[i].f1, tags[i].value ? tags[i].value : "");
    }
    metric.buckets.ptr = (double *)buckets;
    metric.buckets.len = buckets_len;
    uint32_t handle = 0;
    wstring refused;
    bool registered = wharf_connector_metrics_register(&metric, &handle, &refused);
    free(metric.tags.ptr);
    if (registered) return handle;
    wharf_error("%.*s", (int)refused.len, (const char *)refused.ptr);
    W(string_free)(&refused);
    return -1;
}

void wharf_metric_update(int64_t metric, double value) {
    if (metric < 0 || metric > UINT32_MAX) return;
    W(tuple2_u32_f64_t) one = {.f0 = (uint32_t)metric, .f1 = value};
    W(list_tuple2_u32_f64_t) values = {.ptr = &one, .len = 1};
    wharf_connector_metrics_update(&values);
}

#endif

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

/* WHARF_PLUGIN's config keys, for a describe. */
static void describe_keys(wharf_connector_types_config_key_t **ptr, size_t *len) {
    size_t n = WHARF_PLUGIN.config_len;
    *ptr = n ? calloc(n, sizeof(wharf_connector_types_config_key_t)) : NULL;
    *len = *ptr ? n : 0;
    for (size_t i = 0; i < *len; i++) {
        const wharf_config_key *k = &WHARF_PLUGIN.config[i];
        wharf_connector_types_config_key_t *out = &(*ptr)[i];
        W(string_dup)(&out->name, k->name);
        out->type = (wharf_connector_types_config_type_t)k->type;
        set_option_string(&out->default_value, k->default_value);
        out->required = k->required;
        out->importance = (wharf_connector_types_importance_t)k->importance;
        W(string_dup)(&out->documentation, k->doc ? k->doc : "");
        set_option_string(&out->group, NULL);
    }
}

#if !defined(WHARF_TRANSFORM)

void exports_wharf_connector_connector_describe(exports_wharf_connector_connector_plugin_info_t *ret) {
    W(string_dup)(&ret->name, WHARF_PLUGIN.name);
    W(string_dup)(&ret->version, WHARF_PLUGIN.version);
    W(string_dup)(&ret->description, WHARF_PLUGIN.description ? WHARF_PLUGIN.description : "");
#if defined(WHARF_SOURCE)
    ret->kind = WHARF_CONNECTOR_TYPES_CONNECTOR_KIND_SOURCE;
#else
    ret->kind = WHARF_CONNECTOR_TYPES_CONNECTOR_KIND_SINK;
#endif
    describe_keys(&ret->config.ptr, &ret->config.len);
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

#if defined(WHARF_NET)
/* The *-with-net worlds export connection-grants: the plugin's `connections`. */
void exports_wharf_connector_connection_grants_declare(exports_wharf_connector_connection_grants_list_connection_grant_t *ret) {
    size_t n = WHARF_PLUGIN.connections ? WHARF_PLUGIN.connections_len : 0;
    ret->len = n;
    ret->ptr = n ? calloc(n, sizeof(exports_wharf_connector_connection_grants_connection_grant_t)) : NULL;
    if (n && !ret->ptr) {
        ret->len = 0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const wharf_connection_grant *c = &WHARF_PLUGIN.connections[i];
        exports_wharf_connector_connection_grants_connection_grant_t *out = &ret->ptr[i];
        if (c->jdbc_url_key) {
            out->tag = EXPORTS_WHARF_CONNECTOR_CONNECTION_GRANTS_CONNECTION_GRANT_JDBC_URL;
            W(string_dup)(&out->val.jdbc_url, c->jdbc_url_key);
        } else {
            out->tag = EXPORTS_WHARF_CONNECTOR_CONNECTION_GRANTS_CONNECTION_GRANT_HOST_AND_PORT;
            W(string_dup)(&out->val.host_and_port.host_key, c->host_key ? c->host_key : "");
            W(string_dup)(&out->val.host_and_port.port_key, c->port_key ? c->port_key : "");
            out->val.host_and_port.default_port = c->default_port;
        }
    }
}
#endif

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

#if defined(WHARF_EXACTLY_ONCE)
/* The *-exactly-once worlds export exactly-once: the answers of the plugin's functions, asked
 * with a wharf_config as the tasks get theirs. */

typedef exports_wharf_connector_exactly_once_capability_t capability;

bool exports_wharf_connector_exactly_once_exactly_once_support(exports_wharf_connector_exactly_once_config_t *config,
                                                                capability *ret) {
    wharf_exactly_once answer = WHARF_EXACTLY_ONCE_UNKNOWN;
    if (WHARF_PLUGIN.exactly_once_support) {
        wharf_config *c = config_from(config);
        answer = WHARF_PLUGIN.exactly_once_support(c);
        config_free(c);
    } else {
        wharf_connector_types_config_free(config);
    }
    switch (answer) {
    case WHARF_EXACTLY_ONCE_SUPPORTED:
        *ret = EXPORTS_WHARF_CONNECTOR_EXACTLY_ONCE_CAPABILITY_SUPPORTED;
        return true;
    case WHARF_EXACTLY_ONCE_UNSUPPORTED:
        *ret = EXPORTS_WHARF_CONNECTOR_EXACTLY_ONCE_CAPABILITY_UNSUPPORTED;
        return true;
    default:
        return false;
    }
}

capability exports_wharf_connector_exactly_once_can_define_transaction_boundaries(
    exports_wharf_connector_exactly_once_config_t *config) {
    bool can = false;
    if (WHARF_PLUGIN.can_define_transaction_boundaries) {
        wharf_config *c = config_from(config);
        can = WHARF_PLUGIN.can_define_transaction_boundaries(c);
        config_free(c);
    } else {
        wharf_connector_types_config_free(config);
    }
    return can ? EXPORTS_WHARF_CONNECTOR_EXACTLY_ONCE_CAPABILITY_SUPPORTED
               : EXPORTS_WHARF_CONNECTOR_EXACTLY_ONCE_CAPABILITY_UNSUPPORTED;
}
#endif

#endif /* connectors */

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

/* ---- Schemas (either world) ---- */

struct wharf_schema {
    wharf_type type;
    bool optional;
    char *name;
    char *doc;
    bool has_version;
    int32_t version;
    bool decimal; /* a Decimal: the scale parameter */
    int32_t scale;
    size_t nfields;
    char **field_names;
    const wharf_schema **fields;
    const wharf_schema *key;
    const wharf_schema *value;
};

static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *out = malloc(n + 1);
    if (out) memcpy(out, s, n + 1);
    return out;
}

wharf_schema *wharf_schema_new(wharf_type type) {
    wharf_schema *s = calloc(1, sizeof *s);
    if (s) s->type = type;
    return s;
}

wharf_schema *wharf_schema_struct(const char *name) {
    wharf_schema *s = wharf_schema_new(WHARF_TYPE_STRUCT);
    if (s && name) s->name = dup_or_null(name);
    return s;
}

int wharf_schema_add_field(wharf_schema *s, const char *name, const wharf_schema *field) {
    if (!s || !name || !field || s->type != WHARF_TYPE_STRUCT) {
        wharf_error("wharf_schema_add_field takes a struct schema, a field name and a field schema");
        return WHARF_FAIL;
    }
    char **names = realloc(s->field_names, (s->nfields + 1) * sizeof *names);
    if (names) s->field_names = names;
    const wharf_schema **fields = realloc(s->fields, (s->nfields + 1) * sizeof *fields);
    if (fields) s->fields = fields;
    char *copy = dup_or_null(name);
    if (!names || !fields || !copy) {
        free(copy);
        wharf_error("out of memory adding field %s to a schema", name);
        return WHARF_FAIL;
    }
    s->field_names[s->nfields] = copy;
    s->fields[s->nfields++] = field;
    return WHARF_OK;
}

wharf_schema *wharf_schema_array(const wharf_schema *element) {
    wharf_schema *s = wharf_schema_new(WHARF_TYPE_ARRAY);
    if (s) s->value = element;
    return s;
}

wharf_schema *wharf_schema_map(const wharf_schema *key, const wharf_schema *value) {
    wharf_schema *s = wharf_schema_new(WHARF_TYPE_MAP);
    if (s) {
        s->key = key;
        s->value = value;
    }
    return s;
}

static wharf_schema *logical(wharf_type type, const char *name) {
    wharf_schema *s = wharf_schema_new(type);
    if (s) {
        s->name = dup_or_null(name);
        s->has_version = true;
        s->version = 1;
    }
    return s;
}

wharf_schema *wharf_schema_decimal(int32_t scale) {
    wharf_schema *s = logical(WHARF_TYPE_BYTES, "org.apache.kafka.connect.data.Decimal");
    if (s) {
        s->decimal = true;
        s->scale = scale;
    }
    return s;
}

wharf_schema *wharf_schema_date(void) { return logical(WHARF_TYPE_INT32, "org.apache.kafka.connect.data.Date"); }
wharf_schema *wharf_schema_time(void) { return logical(WHARF_TYPE_INT32, "org.apache.kafka.connect.data.Time"); }
wharf_schema *wharf_schema_timestamp(void) { return logical(WHARF_TYPE_INT64, "org.apache.kafka.connect.data.Timestamp"); }

wharf_schema *wharf_schema_optional(wharf_schema *s) {
    if (s) s->optional = true;
    return s;
}

wharf_schema *wharf_schema_version(wharf_schema *s, int32_t version) {
    if (s) {
        s->has_version = true;
        s->version = version;
    }
    return s;
}

wharf_schema *wharf_schema_doc(wharf_schema *s, const char *doc) {
    if (s) {
        free(s->doc);
        s->doc = dup_or_null(doc);
    }
    return s;
}

#if defined(WHARF_SOURCE) || defined(WHARF_TRANSFORM)

/* Grows an array of `size`-byte items to hold one more; false when out of memory. */
static bool room_for_one(void **ptr, size_t len, size_t *capacity, size_t size) {
    if (len < *capacity) return true;
    size_t grown = *capacity ? *capacity * 2 : 16;
    void *more = realloc(*ptr, grown * size);
    if (!more) return false;
    *ptr = more;
    *capacity = grown;
    return true;
}

/* A copy of bytes for the bindings, which free only non-empty lists after the call: nothing is
 * allocated for an empty one. */
static bool copy_bytes(W(list_u8_t) *list, const void *bytes, size_t len) {
    list->ptr = NULL;
    list->len = 0;
    if (bytes && len > 0) {
        list->ptr = malloc(len);
        if (!list->ptr) return false;
        memcpy(list->ptr, bytes, len);
        list->len = len;
    }
    return true;
}

#endif

#if defined(WHARF_SOURCE)
#if defined(WHARF_DATA)
typedef TASK(source_record_t) source_record;
#else
typedef wharf_connector_types_source_record_t source_record;
#endif
#endif

/* The schema and value tables of a batch: built into for a data source's poll; read for a data
 * sink's put; for a transform's apply, read and built into, since the answer takes over the
 * tables of the batch given. */
#if defined(WHARF_TRANSFORM)
typedef TASK(transformed_batch_t) data_tables;
#elif defined(BUILDS_DATA)
typedef TASK(source_batch_t) data_tables;
#elif defined(READS_DATA)
typedef struct {
    TASK(list_schema_t) schemas;
    TASK(list_value_t) values;
} data_tables;
#endif

#if defined(WHARF_SOURCE) || defined(WHARF_TRANSFORM)
struct wharf_batch {
#if defined(WHARF_SOURCE)
    source_record **records;
    size_t *len;
    size_t capacity;
#endif
#if defined(BUILDS_DATA)
    data_tables *tables;
    size_t schemas_capacity;
    size_t values_capacity;
    /* The schemas already in the batch's table, by address. */
    const wharf_schema **known;
    uint32_t *known_index;
    size_t known_len;
    size_t known_capacity;
#endif
#if defined(WHARF_TRANSFORM)
    /* The values of the batch as it was given; those after them were built during apply. */
    size_t given_values;
#endif
};
#endif

#if defined(BUILDS_DATA)

/* ---- Building data (data sources and transforms) ---- */

static wharf_value push(wharf_batch *b, wharf_connector_data_value_t node) {
    TASK(list_value_t) *values = &b->tables->values;
    if (!room_for_one((void **)&values->ptr, values->len, &b->values_capacity, sizeof node)) return WHARF_NO_VALUE;
    values->ptr[values->len] = node;
    return (wharf_value)values->len++;
}

#define SCALAR(fn, ctype, TAG, field)                                                 \
    wharf_value fn(wharf_batch *b, ctype v) {                                         \
        wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_##TAG}; \
        node.val.field = v;                                                           \
        return push(b, node);                                                         \
    }
SCALAR(wharf_boolean, bool, BOOLEAN, boolean)
SCALAR(wharf_int8, int8_t, INT8, int8)
SCALAR(wharf_int16, int16_t, INT16, int16)
SCALAR(wharf_int32, int32_t, INT32, int32)
SCALAR(wharf_int64, int64_t, INT64, int64)
SCALAR(wharf_float32, float, FLOAT32, float32)
SCALAR(wharf_float64, double, FLOAT64, float64)

wharf_value wharf_null(wharf_batch *b) {
    return push(b, (wharf_connector_data_value_t){.tag = WHARF_CONNECTOR_DATA_VALUE_NULL});
}

wharf_value wharf_string_n(wharf_batch *b, const char *s, size_t len) {
    wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_STRING};
    if (!copy_bytes((W(list_u8_t) *)&node.val.string, s, len)) return WHARF_NO_VALUE;
    return push(b, node);
}

wharf_value wharf_string(wharf_batch *b, const char *s) { return s ? wharf_string_n(b, s, strlen(s)) : WHARF_NO_VALUE; }

wharf_value wharf_bytes(wharf_batch *b, const void *bytes, size_t len) {
    wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_BYTES};
    if (!copy_bytes(&node.val.bytes, bytes, len)) return WHARF_NO_VALUE;
    return push(b, node);
}

/* A list of value indices for the bindings; false when one of them failed or out of memory. */
static bool indices(W(list_u32_t) *list, const wharf_value *items, size_t n) {
    list->ptr = NULL;
    list->len = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i] == WHARF_NO_VALUE) return false;
    }
    if (n == 0) return true;
    list->ptr = malloc(n * sizeof(uint32_t));
    if (!list->ptr) return false;
    memcpy(list->ptr, items, n * sizeof(uint32_t));
    list->len = n;
    return true;
}

wharf_value wharf_array(wharf_batch *b, const wharf_value *elements, size_t n) {
    wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_ARRAY};
    if (!indices(&node.val.array, elements, n)) return WHARF_NO_VALUE;
    return push(b, node);
}

wharf_value wharf_struct(wharf_batch *b, const wharf_value *fields, size_t n) {
    wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_STRUCT};
    if (!indices(&node.val.struct_, fields, n)) return WHARF_NO_VALUE;
    return push(b, node);
}

wharf_value wharf_map(wharf_batch *b, const wharf_value *keys, const wharf_value *values, size_t n) {
    wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_MAP};
    node.val.map.ptr = NULL;
    node.val.map.len = 0;
    for (size_t i = 0; i < n; i++) {
        if (keys[i] == WHARF_NO_VALUE || values[i] == WHARF_NO_VALUE) return WHARF_NO_VALUE;
    }
    if (n > 0) {
        node.val.map.ptr = malloc(n * sizeof *node.val.map.ptr);
        if (!node.val.map.ptr) return WHARF_NO_VALUE;
        for (size_t i = 0; i < n; i++) node.val.map.ptr[i] = (W(tuple2_u32_u32_t)){keys[i], values[i]};
        node.val.map.len = n;
    }
    return push(b, node);
}

wharf_value wharf_decimal(wharf_batch *b, int64_t unscaled, int32_t scale) {
    /* Big-endian two's complement, in as few bytes as keep the sign. */
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)((uint64_t)unscaled >> (56 - 8 * i));
    size_t start = 0;
    while (start < 7 && ((bytes[start] == 0x00 && !(bytes[start + 1] & 0x80)) ||
                         (bytes[start] == 0xff && (bytes[start + 1] & 0x80)))) {
        start++;
    }
    wharf_connector_data_value_t node = {.tag = WHARF_CONNECTOR_DATA_VALUE_DECIMAL};
    if (!copy_bytes(&node.val.decimal.unscaled, bytes + start, 8 - start)) return WHARF_NO_VALUE;
    node.val.decimal.scale = scale;
    return push(b, node);
}

static void option_text(W(option_string_t) *option, const char *s) {
    option->is_some = s != NULL;
    if (s) W(string_dup)(&option->val, s);
}

/* The index of a schema in the batch's table, adding it (and the schemas it refers to) the
 * first time; false when out of memory. */
static bool schema_index(wharf_batch *b, const wharf_schema *s, uint32_t *index) {
    for (size_t i = 0; i < b->known_len; i++) {
        if (b->known[i] == s) {
            *index = b->known_index[i];
            return true;
        }
    }
    wharf_connector_data_schema_t node;
    memset(&node, 0, sizeof node);
    node.type = (wharf_connector_data_schema_type_t)s->type;
    node.optional = s->optional;
    option_text(&node.name, s->name);
    option_text(&node.doc, s->doc);
    node.version.is_some = s->has_version;
    node.version.val = s->version;
    if (s->decimal) {
        char scale[16];
        snprintf(scale, sizeof scale, "%d", (int)s->scale);
        node.parameters.is_some = true;
        node.parameters.val.len = 1;
        node.parameters.val.ptr = calloc(1, sizeof *node.parameters.val.ptr);
        if (!node.parameters.val.ptr) return false;
        W(string_dup)(&node.parameters.val.ptr[0].f0, "scale");
        W(string_dup)(&node.parameters.val.ptr[0].f1, scale);
    }
    if (s->nfields) {
        node.fields.ptr = calloc(s->nfields, sizeof *node.fields.ptr);
        if (!node.fields.ptr) return false;
        node.fields.len = s->nfields;
        for (size_t i = 0; i < s->nfields; i++) {
            W(string_dup)(&node.fields.ptr[i].name, s->field_names[i]);
            if (!schema_index(b, s->fields[i], &node.fields.ptr[i].schema)) return false;
        }
    }
    if (s->key) {
        node.key_schema.is_some = true;
        if (!schema_index(b, s->key, &node.key_schema.val)) return false;
    }
    if (s->value) {
        node.value_schema.is_some = true;
        if (!schema_index(b, s->value, &node.value_schema.val)) return false;
    }
    TASK(list_schema_t) *schemas = &b->tables->schemas;
    if (!room_for_one((void **)&schemas->ptr, schemas->len, &b->schemas_capacity, sizeof node)) return false;
    if (!room_for_one((void **)&b->known, b->known_len, &b->known_capacity, sizeof *b->known)) return false;
    uint32_t *more = realloc(b->known_index, b->known_capacity * sizeof *more);
    if (!more) return false;
    b->known_index = more;
    schemas->ptr[schemas->len] = node;
    *index = (uint32_t)schemas->len++;
    b->known[b->known_len] = s;
    b->known_index[b->known_len++] = *index;
    return true;
}

/* A part for the bindings; false (with the error set) when it cannot be made. */
static bool part_of(wharf_batch *b, wharf_part given, bool *is_some, wharf_connector_data_part_t *out, const char *what) {
    memset(out, 0, sizeof *out);
    *is_some = given.kind != 0;
    if (given.kind == 0) return true;
    if (given.kind == 1) {
        out->tag = WHARF_CONNECTOR_DATA_PART_RAW;
        if (copy_bytes(&out->val.raw, given.bytes, given.len)) return true;
        wharf_error("out of memory copying the %s of a record", what);
        return false;
    }
    if (given.kind != 2 || given.value == WHARF_NO_VALUE || given.value >= b->tables->values.len) {
        wharf_error("the %s of a record is not a part wharf.h makes (or a value builder ran out of memory)", what);
        return false;
    }
    out->tag = WHARF_CONNECTOR_DATA_PART_DATA;
    out->val.data.value = given.value;
    if (given.schema) {
        out->val.data.schema.is_some = true;
        if (!schema_index(b, given.schema, &out->val.data.schema.val)) {
            wharf_error("out of memory adding the schema of a record's %s", what);
            return false;
        }
    }
    return true;
}

#endif

#if defined(READS_DATA)

/* ---- Reading data (data sinks and transforms) ---- */

static const wharf_connector_data_value_t *node_of(const wharf_datum *d) {
    const data_tables *t = d->batch;
    return t && d->value < t->values.len ? &t->values.ptr[d->value] : NULL;
}

static const wharf_connector_data_schema_t *schema_of(const wharf_datum *d) {
    const data_tables *t = d->batch;
    return t && d->schema >= 0 && (size_t)d->schema < t->schemas.len ? &t->schemas.ptr[d->schema] : NULL;
}

wharf_kind wharf_datum_kind(const wharf_datum *d) {
    const wharf_connector_data_value_t *n = node_of(d);
    return n ? (wharf_kind)n->tag : WHARF_KIND_NULL;
}

bool wharf_datum_boolean(const wharf_datum *d, bool *out) {
    const wharf_connector_data_value_t *n = node_of(d);
    if (!n || n->tag != WHARF_CONNECTOR_DATA_VALUE_BOOLEAN) return false;
    *out = n->val.boolean;
    return true;
}

bool wharf_datum_int(const wharf_datum *d, int64_t *out) {
    const wharf_connector_data_value_t *n = node_of(d);
    if (!n) return false;
    switch (n->tag) {
        case WHARF_CONNECTOR_DATA_VALUE_INT8: *out = n->val.int8; return true;
        case WHARF_CONNECTOR_DATA_VALUE_INT16: *out = n->val.int16; return true;
        case WHARF_CONNECTOR_DATA_VALUE_INT32: *out = n->val.int32; return true;
        case WHARF_CONNECTOR_DATA_VALUE_INT64: *out = n->val.int64; return true;
        default: return false;
    }
}

bool wharf_datum_float(const wharf_datum *d, double *out) {
    const wharf_connector_data_value_t *n = node_of(d);
    if (!n) return false;
    if (n->tag == WHARF_CONNECTOR_DATA_VALUE_FLOAT32) *out = n->val.float32;
    else if (n->tag == WHARF_CONNECTOR_DATA_VALUE_FLOAT64) *out = n->val.float64;
    else return false;
    return true;
}

const char *wharf_datum_string(const wharf_datum *d, size_t *len) {
    const wharf_connector_data_value_t *n = node_of(d);
    if (!n || n->tag != WHARF_CONNECTOR_DATA_VALUE_STRING) return NULL;
    *len = n->val.string.len;
    return n->val.string.len ? (const char *)n->val.string.ptr : "";
}

const uint8_t *wharf_datum_bytes(const wharf_datum *d, size_t *len) {
    const wharf_connector_data_value_t *n = node_of(d);
    if (!n || n->tag != WHARF_CONNECTOR_DATA_VALUE_BYTES) return NULL;
    *len = n->val.bytes.len;
    return n->val.bytes.len ? n->val.bytes.ptr : (const uint8_t *)"";
}

size_t wharf_datum_count(const wharf_datum *d) {
    const wharf_connector_data_value_t *n = node_of(d);
    if (!n) return 0;
    switch (n->tag) {
        case WHARF_CONNECTOR_DATA_VALUE_ARRAY: return n->val.array.len;
        case WHARF_CONNECTOR_DATA_VALUE_STRUCT: return n->val.struct_.len;
        case WHARF_CONNECTOR_DATA_VALUE_MAP: return n->val.map.len;
        default: return 0;
    }
}

static wharf_datum child(const wharf_datum *d, uint32_t value, const W(option_u32_t) *schema) {
    wharf_datum out = {d->batch, schema && schema->is_some ? (int64_t)schema->val : -1, value};
    return out;
}

wharf_datum wharf_datum_child(const wharf_datum *d, size_t i) {
    const wharf_connector_data_value_t *n = node_of(d);
    const wharf_connector_data_schema_t *s = schema_of(d);
    wharf_datum none = {d->batch, -1, UINT32_MAX};
    if (n && n->tag == WHARF_CONNECTOR_DATA_VALUE_ARRAY && i < n->val.array.len) {
        return child(d, n->val.array.ptr[i], s ? &s->value_schema : NULL);
    }
    if (n && n->tag == WHARF_CONNECTOR_DATA_VALUE_STRUCT && i < n->val.struct_.len) {
        W(option_u32_t) field = {s && i < s->fields.len, s && i < s->fields.len ? s->fields.ptr[i].schema : 0};
        return child(d, n->val.struct_.ptr[i], &field);
    }
    return none;
}

wharf_datum wharf_datum_map_key(const wharf_datum *d, size_t i) {
    const wharf_connector_data_value_t *n = node_of(d);
    const wharf_connector_data_schema_t *s = schema_of(d);
    wharf_datum none = {d->batch, -1, UINT32_MAX};
    if (!n || n->tag != WHARF_CONNECTOR_DATA_VALUE_MAP || i >= n->val.map.len) return none;
    return child(d, n->val.map.ptr[i].f0, s ? &s->key_schema : NULL);
}

wharf_datum wharf_datum_map_value(const wharf_datum *d, size_t i) {
    const wharf_connector_data_value_t *n = node_of(d);
    const wharf_connector_data_schema_t *s = schema_of(d);
    wharf_datum none = {d->batch, -1, UINT32_MAX};
    if (!n || n->tag != WHARF_CONNECTOR_DATA_VALUE_MAP || i >= n->val.map.len) return none;
    return child(d, n->val.map.ptr[i].f1, s ? &s->value_schema : NULL);
}

const char *wharf_datum_field_name(const wharf_datum *d, size_t i, size_t *len) {
    const wharf_connector_data_schema_t *s = schema_of(d);
    if (!s || i >= s->fields.len) return NULL;
    *len = s->fields.ptr[i].name.len;
    return (const char *)s->fields.ptr[i].name.ptr;
}

const char *wharf_datum_schema_name(const wharf_datum *d, size_t *len) {
    const wharf_connector_data_schema_t *s = schema_of(d);
    if (!s || !s->name.is_some) return NULL;
    *len = s->name.val.len;
    return (const char *)s->name.val.ptr;
}

#endif

#if defined(WHARF_SOURCE)

struct TASK(task_t) {
    task_core core;
};

static void scalar_text(wharf_connector_types_tuple2_string_scalar_t *entry, const char *key, const char *value) {
    W(string_dup)(&entry->f0, key);
    entry->f1.tag = WHARF_CONNECTOR_TYPES_SCALAR_TEXT;
    W(string_dup)(&entry->f1.val.text, value);
}

/* A new record at the end of the batch, with its topic, partition and offset; NULL when out of
 * memory or a name is missing (the error is set). */
static source_record *next_record(wharf_batch *batch, const char *topic, const char *partition_key,
                                  const char *partition_value, const char *offset_key, int64_t offset) {
    if (!topic || !partition_key || !partition_value || !offset_key) {
        wharf_error("a record needs a topic, a partition key and value, and an offset key (one is NULL)");
        return NULL;
    }
    if (!room_for_one((void **)batch->records, *batch->len, &batch->capacity, sizeof(source_record))) {
        wharf_error("out of memory after %zu records in one poll", *batch->len);
        return NULL;
    }
    source_record *r = &(*batch->records)[(*batch->len)++];
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
    return r;
}

#if defined(WHARF_DATA)

int wharf_batch_add_part(wharf_batch *batch, const char *topic, wharf_part key, wharf_part value,
                         const char *partition_key, const char *partition_value, const char *offset_key, int64_t offset) {
    source_record *r = next_record(batch, topic, partition_key, partition_value, offset_key, offset);
    if (!r) return WHARF_FAIL;
    if (!part_of(batch, key, &r->key.is_some, &r->key.val, "key") ||
        !part_of(batch, value, &r->value.is_some, &r->value.val, "value")) {
        return WHARF_FAIL;
    }
    return WHARF_OK;
}

int wharf_batch_add(wharf_batch *batch, const char *topic, const void *key, size_t key_len, const void *value,
                    size_t value_len, const char *partition_key, const char *partition_value,
                    const char *offset_key, int64_t offset) {
    wharf_part k = key ? wharf_part_bytes(key, key_len) : wharf_part_none();
    wharf_part v = value ? wharf_part_bytes(value, value_len) : wharf_part_none();
    return wharf_batch_add_part(batch, topic, k, v, partition_key, partition_value, offset_key, offset);
}

int wharf_batch_add_header(wharf_batch *batch, const char *key, wharf_part value) {
    if (*batch->len == 0 || !key) {
        wharf_error("wharf_batch_add_header needs a key and a record added before it");
        return WHARF_FAIL;
    }
    source_record *r = &(*batch->records)[*batch->len - 1];
    TASK(header_t) *more = realloc(r->headers.ptr, (r->headers.len + 1) * sizeof *more);
    if (!more) {
        wharf_error("out of memory adding header %s", key);
        return WHARF_FAIL;
    }
    r->headers.ptr = more;
    TASK(header_t) *h = &r->headers.ptr[r->headers.len++];
    memset(h, 0, sizeof *h);
    W(string_dup)(&h->key, key);
    return part_of(batch, value, &h->value.is_some, &h->value.val, "header") ? WHARF_OK : WHARF_FAIL;
}

#else /* bytes */

static void bytes_option(W(option_list_u8_t) *option, const void *bytes, size_t len) {
    option->is_some = bytes != NULL;
    if (!copy_bytes(&option->val, bytes, len)) option->is_some = false;
}

int wharf_batch_add(wharf_batch *batch, const char *topic, const void *key, size_t key_len, const void *value,
                    size_t value_len, const char *partition_key, const char *partition_value,
                    const char *offset_key, int64_t offset) {
    source_record *r = next_record(batch, topic, partition_key, partition_value, offset_key, offset);
    if (!r) return WHARF_FAIL;
    bytes_option(&r->key, key, key_len);
    bytes_option(&r->value, value, value_len);
    return WHARF_OK;
}

#endif

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

bool TASK(static_task_open)(TASK(config_t) *config, TASK(own_task_t) *ret, TASK(connector_error_t) *err) {
    TASK(task_t) *task = calloc(1, sizeof *task);
    if (!core_open(&task->core, config, wharf_source_open, "wharf_source_open", err)) {
        free(task);
        return false;
    }
    *ret = TASK(task_new)(task);
    return true;
}

#if defined(WHARF_DATA)
bool TASK(method_task_poll)(TASK(borrow_task_t) self, uint32_t max_records, TASK(source_batch_t) *ret,
                            TASK(connector_error_t) *err) {
    memset(ret, 0, sizeof *ret);
    if (max_records == 0) {
        /* The host holds records back (contract 0.1.6): nothing is read. */
        return true;
    }
    wharf_batch batch = {.records = &ret->records.ptr, .len = &ret->records.len, .tables = ret};
    bool ok = outcome(wharf_source_poll(self->core.state, max_records, &batch), "wharf_source_poll", err);
    free(batch.known);
    free(batch.known_index);
    if (!ok) {
        TASK(source_batch_free)(ret);
        return false;
    }
    return true;
}
#else
bool TASK(method_task_poll)(TASK(borrow_task_t) self, uint32_t max_records, TASK(list_source_record_t) *ret,
                            TASK(connector_error_t) *err) {
    ret->ptr = NULL;
    ret->len = 0;
    if (max_records == 0) {
        /* The host holds records back (contract 0.1.6): nothing is read. */
        return true;
    }
    wharf_batch batch = {.records = &ret->ptr, .len = &ret->len};
    if (!outcome(wharf_source_poll(self->core.state, max_records, &batch), "wharf_source_poll", err)) {
        TASK(list_source_record_free)(ret);
        return false;
    }
    return true;
}
#endif

bool TASK(method_task_commit)(TASK(borrow_task_t) self, TASK(connector_error_t) *err) {
    return outcome(wharf_source_commit(self->core.state), "wharf_source_commit", err);
}

#if defined(WHARF_EXACTLY_ONCE)
bool wharf_transaction_defines_boundaries(void) { return wharf_connector_transaction_context_defines_boundaries(); }
void wharf_transaction_commit(void) { wharf_connector_transaction_context_commit(); }
void wharf_transaction_commit_after(uint32_t index) { wharf_connector_transaction_context_commit_after(index); }
void wharf_transaction_abort(void) { wharf_connector_transaction_context_abort(); }
void wharf_transaction_abort_after(uint32_t index) { wharf_connector_transaction_context_abort_after(index); }
#endif

void TASK(method_task_close)(TASK(borrow_task_t) self) { core_close(&self->core, wharf_source_close); }

void TASK(task_destructor)(TASK(task_t) *rep) {
    core_close(&rep->core, wharf_source_close);
    config_free(rep->core.config);
    free(rep);
}

#elif defined(WHARF_SINK)


struct TASK(task_t) {
    task_core core;
};

bool TASK(static_task_open)(TASK(config_t) *config, TASK(own_task_t) *ret, TASK(connector_error_t) *err) {
    TASK(task_t) *task = calloc(1, sizeof *task);
    if (!core_open(&task->core, config, wharf_sink_open, "wharf_sink_open", err)) {
        free(task);
        return false;
    }
    *ret = TASK(task_new)(task);
    return true;
}

bool TASK(method_task_open_partitions)(TASK(borrow_task_t) self, TASK(list_topic_partition_t) *partitions,
                                       TASK(connector_error_t) *err) {
    (void)self;
    (void)err;
    TASK(list_topic_partition_free)(partitions);
    return true;
}

int wharf_report_errant(const wharf_sink_record *record, const char *format, ...) {
    if (!record || !record->topic || !format) {
        wharf_error("wharf_report_errant takes a record put was given (or its topic, partition and offset) and a reason");
        return WHARF_FAIL;
    }
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    int len = vsnprintf(NULL, 0, format, args);
    va_end(args);
    char *reason = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (reason) vsnprintf(reason, (size_t)len + 1, format, again);
    va_end(again);
    if (!reason) {
        wharf_error("%s reporting the record at %s-%d offset %lld", len < 0 ? "cannot format the reason" : "out of memory",
                    record->topic, (int)record->partition, (long long)record->offset);
        return WHARF_FAIL;
    }
    wstring topic, why, answer;
    W(string_set)(&topic, record->topic);
    W(string_set)(&why, reason);
    bool reported = wharf_connector_errant_records_report(&topic, record->partition, record->offset, &why, &answer);
    free(reason);
    if (reported) return WHARF_OK;
    if (answer.len) wharf_error("%.*s", (int)answer.len, (const char *)answer.ptr);
    else wharf_error("the host refused the report of the record at %s-%d offset %lld", record->topic,
                     (int)record->partition, (long long)record->offset);
    W(string_free)(&answer);
    return WHARF_FAIL;
}

#if defined(WHARF_DATA)

bool TASK(method_task_put)(TASK(borrow_task_t) self, TASK(sink_batch_t) *batch, TASK(connector_error_t) *err) {
    size_t n = batch->records.len;
    data_tables t = {batch->schemas, batch->values};
    wharf_sink_record *plain = calloc(n ? n : 1, sizeof *plain);
    wharf_datum *data = calloc(n ? 2 * n : 1, sizeof *data);
    char **topics = calloc(n ? n : 1, sizeof(char *));
    if (!plain || !data || !topics) {
        free(plain);
        free(data);
        free(topics);
        TASK(sink_batch_free)(batch);
        err->tag = WHARF_CONNECTOR_TYPES_CONNECTOR_ERROR_RETRIABLE;
        W(string_dup)(&err->val.retriable, "out of memory reading a batch; it is delivered again");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        TASK(sink_record_t) *r = &batch->records.ptr[i];
        topics[i] = copy_n(r->topic.ptr, r->topic.len);
        plain[i] = (wharf_sink_record){
            .topic = topics[i],
            .partition = r->partition,
            .offset = r->offset,
            .timestamp = r->timestamp.is_some ? r->timestamp.val : -1,
        };
        TASK(option_part_t) *parts[2] = {&r->key, &r->value};
        for (int p = 0; p < 2; p++) {
            if (!parts[p]->is_some) continue;
            const uint8_t *bytes = NULL;
            size_t len = 0;
            const wharf_datum *datum = NULL;
            if (parts[p]->val.tag == WHARF_CONNECTOR_DATA_PART_RAW) {
                bytes = parts[p]->val.val.raw.len ? parts[p]->val.val.raw.ptr : (const uint8_t *)"";
                len = parts[p]->val.val.raw.len;
            } else {
                wharf_connector_data_datum_t *given = &parts[p]->val.val.data;
                data[2 * i + p] = (wharf_datum){&t, given->schema.is_some ? (int64_t)given->schema.val : -1, given->value};
                datum = &data[2 * i + p];
            }
            if (p == 0) {
                plain[i].key = bytes;
                plain[i].key_len = len;
                plain[i].key_data = datum;
            } else {
                plain[i].value = bytes;
                plain[i].value_len = len;
                plain[i].value_data = datum;
            }
        }
    }
    bool ok = outcome(wharf_sink_put(self->core.state, plain, n), "wharf_sink_put", err);
    for (size_t i = 0; i < n; i++) free(topics[i]);
    free(topics);
    free(plain);
    free(data);
    TASK(sink_batch_free)(batch);
    return ok;
}

#else /* bytes */

bool TASK(method_task_put)(TASK(borrow_task_t) self, TASK(list_sink_record_t) *records, TASK(connector_error_t) *err) {
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
    TASK(list_sink_record_free)(records);
    return ok;
}

#endif

bool TASK(method_task_flush)(TASK(borrow_task_t) self, TASK(list_partition_offset_t) *offsets, TASK(connector_error_t) *err) {
    TASK(list_partition_offset_free)(offsets);
    return outcome(wharf_sink_flush(self->core.state), "wharf_sink_flush", err);
}

bool TASK(method_task_close_partitions)(TASK(borrow_task_t) self, TASK(list_topic_partition_t) *partitions,
                                        TASK(connector_error_t) *err) {
    (void)self;
    (void)err;
    TASK(list_topic_partition_free)(partitions);
    return true;
}

void TASK(method_task_close)(TASK(borrow_task_t) self) { core_close(&self->core, wharf_sink_close); }

void TASK(task_destructor)(TASK(task_t) *rep) {
    core_close(&rep->core, wharf_sink_close);
    config_free(rep->core.config);
    free(rep);
}

#endif

#if defined(WHARF_TRANSFORM)

/* ---- Transforms ----
 *
 * The answer takes over what the batch given holds: its schema and value tables (new values are
 * built after the given ones) and each record, which the plugin's changes edit in place. A record
 * kept as it is costs no copy. */

typedef TASK(transform_record_t) out_record;

struct wharf_record_state {
    wharf_batch *batch;
    out_record *out; /* the record of the answer */
    char *topic;     /* out's topic, NUL-terminated */
    wharf_datum key, value;
    wharf_header *headers;
    wharf_datum *header_data;
    char **header_keys;
};

/* The batch of the apply running, to tell a change made during it from one made after. */
static wharf_batch *applying;

/* The canonical ABI hands an empty list over with a pointer that is not the heap's: one that is
 * grown or freed must start from NULL. */
#define HEAP_OR_NULL(list)                      \
    do {                                        \
        if ((list).len == 0) (list).ptr = NULL; \
    } while (0)

struct TASK(transform_t) {
    task_core core;
};

void exports_wharf_connector_transformer_describe(TASK(transform_info_t) *ret) {
    W(string_dup)(&ret->name, WHARF_PLUGIN.name);
    W(string_dup)(&ret->version, WHARF_PLUGIN.version);
    W(string_dup)(&ret->description, WHARF_PLUGIN.description ? WHARF_PLUGIN.description : "");
    describe_keys(&ret->config.ptr, &ret->config.len);
}

void exports_wharf_connector_transformer_validate(TASK(config_t) *config, TASK(list_config_problem_t) *ret) {
    /* Required keys and types are checked by the host from the definition; open refuses the rest. */
    wharf_connector_types_config_free(config);
    ret->ptr = NULL;
    ret->len = 0;
}

bool TASK(static_transform_open)(TASK(config_t) *config, TASK(own_transform_t) *ret, TASK(connector_error_t) *err) {
    TASK(transform_t) *transform = calloc(1, sizeof *transform);
    if (!transform) {
        wharf_connector_types_config_free(config);
        err->tag = WHARF_CONNECTOR_TYPES_CONNECTOR_ERROR_FATAL;
        W(string_dup)(&err->val.fatal, "out of memory opening the transform");
        return false;
    }
    if (!core_open(&transform->core, config, wharf_transform_open, "wharf_transform_open", err)) {
        free(transform);
        return false;
    }
    *ret = TASK(transform_new)(transform);
    return true;
}

/* Points a view's bytes or datum at a part of the answer. */
static void view_part(struct wharf_record_state *st, bool is_some, const wharf_connector_data_part_t *part,
                      wharf_datum *storage, const uint8_t **bytes, size_t *len, const wharf_datum **data) {
    *bytes = NULL;
    *len = 0;
    *data = NULL;
    if (!is_some) return;
    if (part->tag == WHARF_CONNECTOR_DATA_PART_RAW) {
        *bytes = part->val.raw.len ? part->val.raw.ptr : (const uint8_t *)"";
        *len = part->val.raw.len;
    } else {
        const wharf_connector_data_datum_t *d = &part->val.data;
        *storage = (wharf_datum){st->batch->tables, d->schema.is_some ? (int64_t)d->schema.val : -1, d->value};
        *data = storage;
    }
}

static void view_key_and_value(wharf_transform_record *r) {
    struct wharf_record_state *st = r->state_;
    view_part(st, st->out->key.is_some, &st->out->key.val, &st->key, &r->key, &r->key_len, &r->key_data);
    view_part(st, st->out->value.is_some, &st->out->value.val, &st->value, &r->value, &r->value_len, &r->value_data);
}

static void free_header_view(struct wharf_record_state *st, size_t n) {
    for (size_t i = 0; st->header_keys && i < n; i++) free(st->header_keys[i]);
    free(st->header_keys);
    free(st->headers);
    free(st->header_data);
    st->header_keys = NULL;
    st->headers = NULL;
    st->header_data = NULL;
}

/* Points the view's headers at the record's; false (with the error set) when out of memory. */
static bool view_headers(wharf_transform_record *r) {
    struct wharf_record_state *st = r->state_;
    free_header_view(st, r->headers_len);
    r->headers = NULL;
    r->headers_len = 0;
    size_t n = st->out->headers.len;
    if (n == 0) return true;
    st->headers = calloc(n, sizeof *st->headers);
    st->header_data = calloc(n, sizeof *st->header_data);
    st->header_keys = calloc(n, sizeof *st->header_keys);
    bool ok = st->headers && st->header_data && st->header_keys;
    for (size_t i = 0; ok && i < n; i++) {
        wharf_connector_data_header_t *h = &st->out->headers.ptr[i];
        st->header_keys[i] = copy_n(h->key.ptr, h->key.len);
        ok = st->header_keys[i] != NULL;
        st->headers[i].key = st->header_keys[i];
        view_part(st, h->value.is_some, &h->value.val, &st->header_data[i], &st->headers[i].value,
                  &st->headers[i].value_len, &st->headers[i].value_data);
    }
    if (!ok) {
        free_header_view(st, n);
        wharf_error("out of memory reading the headers of a record for %s", r->topic);
        return false;
    }
    r->headers = st->headers;
    r->headers_len = n;
    return true;
}

/* The view of a record of the answer; false (with the error set) when out of memory. */
static bool view_record(wharf_transform_record *r) {
    struct wharf_record_state *st = r->state_;
    st->topic = copy_n(st->out->topic.ptr, st->out->topic.len);
    if (!st->topic) {
        wharf_error("out of memory reading a batch of records to transform");
        return false;
    }
    r->topic = st->topic;
    r->partition = st->out->partition.is_some ? st->out->partition.val : -1;
    r->timestamp = st->out->timestamp.is_some ? st->out->timestamp.val : -1;
    r->drop = false;
    view_key_and_value(r);
    return view_headers(r);
}

/* The record's state when a change may be made to it now; NULL (with the error set) otherwise. */
static struct wharf_record_state *changing(wharf_transform_record *r, const char *what) {
    if (!r || !r->state_ || !applying || r->state_->batch != applying) {
        wharf_error("%s takes a record given to wharf_transform_apply, while it runs", what);
        return NULL;
    }
    return r->state_;
}

int wharf_record_set_topic(wharf_transform_record *record, const char *topic) {
    struct wharf_record_state *st = changing(record, "wharf_record_set_topic");
    if (!st) return WHARF_FAIL;
    if (!topic || !*topic) {
        wharf_error("a record's topic cannot be %s (record for %s)", topic ? "empty" : "NULL", record->topic);
        return WHARF_FAIL;
    }
    char *copy = dup_or_null(topic);
    if (!copy) {
        wharf_error("out of memory setting the topic of a record for %s", record->topic);
        return WHARF_FAIL;
    }
    W(string_free)(&st->out->topic);
    W(string_dup)(&st->out->topic, copy);
    free(st->topic);
    st->topic = copy;
    record->topic = copy;
    return WHARF_OK;
}

/* Replaces one of a record's parts with `given`; on failure the part is as it was. */
static int set_part(wharf_transform_record *record, wharf_part given, bool *is_some, wharf_connector_data_part_t *part,
                    const char *what) {
    wharf_connector_data_part_t made;
    bool some;
    if (!part_of(record->state_->batch, given, &some, &made, what)) return WHARF_FAIL;
    if (*is_some) wharf_connector_data_part_free(part);
    *is_some = some;
    *part = made;
    view_key_and_value(record);
    return WHARF_OK;
}

int wharf_record_set_key(wharf_transform_record *record, wharf_part part) {
    struct wharf_record_state *st = changing(record, "wharf_record_set_key");
    if (!st) return WHARF_FAIL;
    return set_part(record, part, &st->out->key.is_some, &st->out->key.val, "key");
}

int wharf_record_set_value(wharf_transform_record *record, wharf_part part) {
    struct wharf_record_state *st = changing(record, "wharf_record_set_value");
    if (!st) return WHARF_FAIL;
    return set_part(record, part, &st->out->value.is_some, &st->out->value.val, "value");
}

int wharf_record_add_header(wharf_transform_record *record, const char *key, wharf_part value) {
    struct wharf_record_state *st = changing(record, "wharf_record_add_header");
    if (!st) return WHARF_FAIL;
    if (!key) {
        wharf_error("wharf_record_add_header needs a key (record for %s)", record->topic);
        return WHARF_FAIL;
    }
    wharf_connector_data_header_t h;
    memset(&h, 0, sizeof h);
    if (!part_of(st->batch, value, &h.value.is_some, &h.value.val, "header")) return WHARF_FAIL;
    TASK(list_header_t) *headers = &st->out->headers;
    wharf_connector_data_header_t *more = realloc(headers->ptr, (headers->len + 1) * sizeof *more);
    if (!more) {
        if (h.value.is_some) wharf_connector_data_part_free(&h.value.val);
        wharf_error("out of memory adding header %s to a record for %s", key, record->topic);
        return WHARF_FAIL;
    }
    W(string_dup)(&h.key, key);
    headers->ptr = more;
    headers->ptr[headers->len++] = h;
    return view_headers(record) ? WHARF_OK : WHARF_FAIL;
}

int wharf_record_remove_headers(wharf_transform_record *record, const char *key) {
    struct wharf_record_state *st = changing(record, "wharf_record_remove_headers");
    if (!st) return WHARF_FAIL;
    if (!key) {
        wharf_error("wharf_record_remove_headers needs a key (record for %s)", record->topic);
        return WHARF_FAIL;
    }
    TASK(list_header_t) *headers = &st->out->headers;
    size_t key_len = strlen(key), kept = 0;
    for (size_t i = 0; i < headers->len; i++) {
        wharf_connector_data_header_t *h = &headers->ptr[i];
        if (h->key.len == key_len && memcmp(h->key.ptr, key, key_len) == 0) {
            wharf_connector_data_header_free(h);
        } else {
            headers->ptr[kept++] = *h;
        }
    }
    headers->len = kept;
    return view_headers(record) ? WHARF_OK : WHARF_FAIL;
}

int wharf_datum_set(const wharf_datum *d, wharf_value value) {
    if (!applying || !d || d->batch != applying->tables) {
        wharf_error("wharf_datum_set takes a datum of a record given to wharf_transform_apply, while it runs");
        return WHARF_FAIL;
    }
    TASK(list_value_t) *values = &applying->tables->values;
    if (d->value >= values->len) {
        wharf_error("wharf_datum_set was given a datum that names no value (a child past the end of its parent?)");
        return WHARF_FAIL;
    }
    if (value == WHARF_NO_VALUE || value >= values->len || value < applying->given_values || value == d->value) {
        wharf_error(value == WHARF_NO_VALUE ? "wharf_datum_set was given no value (a value builder ran out of memory)"
                                            : "wharf_datum_set takes a value built during this apply");
        return WHARF_FAIL;
    }
    wharf_connector_data_value_free(&values->ptr[d->value]);
    values->ptr[d->value] = values->ptr[value];
    if (value == values->len - 1) {
        values->len--;
    } else {
        values->ptr[value] = (wharf_connector_data_value_t){.tag = WHARF_CONNECTOR_DATA_VALUE_NULL};
    }
    return WHARF_OK;
}

bool TASK(method_transform_apply)(TASK(borrow_transform_t) self, TASK(transform_batch_t) *batch,
                                  TASK(transformed_batch_t) *ret, TASK(connector_error_t) *err) {
    size_t n = batch->records.len;
    memset(ret, 0, sizeof *ret);
    HEAP_OR_NULL(batch->schemas);
    HEAP_OR_NULL(batch->values);
    HEAP_OR_NULL(batch->records);
    wharf_transform_record *views = calloc(n ? n : 1, sizeof *views);
    struct wharf_record_state *states = calloc(n ? n : 1, sizeof *states);
    TASK(option_transform_record_t) *answers = n ? calloc(n, sizeof *answers) : NULL;
    if (!views || !states || (n && !answers)) {
        free(views);
        free(states);
        free(answers);
        TASK(transform_batch_free)(batch);
        err->tag = WHARF_CONNECTOR_TYPES_CONNECTOR_ERROR_FATAL;
        W(string_dup)(&err->val.fatal, "out of memory reading a batch of records to transform");
        return false;
    }
    ret->schemas = batch->schemas;
    ret->values = batch->values;
    ret->records.ptr = answers;
    ret->records.len = n;
    for (size_t i = 0; i < n; i++) {
        answers[i].is_some = true;
        answers[i].val = batch->records.ptr[i];
        HEAP_OR_NULL(answers[i].val.headers);
    }
    free(batch->records.ptr);
    wharf_batch out = {
        .tables = ret,
        .schemas_capacity = ret->schemas.len,
        .values_capacity = ret->values.len,
        .given_values = ret->values.len,
    };
    bool viewed = true;
    for (size_t i = 0; viewed && i < n; i++) {
        states[i] = (struct wharf_record_state){.batch = &out, .out = &answers[i].val};
        views[i].state_ = &states[i];
        viewed = view_record(&views[i]);
    }
    int code = WHARF_FAIL;
    if (viewed) {
        applying = &out;
        code = wharf_transform_apply(self->core.state, views, n, &out);
        applying = NULL;
    }
    bool ok = outcome(code, "wharf_transform_apply", err);
    if (ok) {
        for (size_t i = 0; i < n; i++) {
            out_record *o = &answers[i].val;
            if (views[i].drop) {
                TASK(transform_record_free)(o);
                memset(&answers[i], 0, sizeof answers[i]);
                continue;
            }
            o->partition.is_some = views[i].partition >= 0;
            o->partition.val = views[i].partition >= 0 ? views[i].partition : 0;
            o->timestamp.is_some = views[i].timestamp >= 0;
            o->timestamp.val = views[i].timestamp >= 0 ? views[i].timestamp : 0;
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(states[i].topic);
        free_header_view(&states[i], views[i].headers_len);
    }
    free(views);
    free(states);
    free(out.known);
    free(out.known_index);
    if (!ok) TASK(transformed_batch_free)(ret);
    return ok;
}

void TASK(method_transform_close)(TASK(borrow_transform_t) self) { core_close(&self->core, wharf_transform_close); }

void TASK(transform_destructor)(TASK(transform_t) *rep) {
    core_close(&rep->core, wharf_transform_close);
    config_free(rep->core.config);
    free(rep);
}

#endif
