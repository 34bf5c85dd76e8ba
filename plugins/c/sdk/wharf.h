/* Write Wharf connector plugins in C.
 *
 * A plugin defines WHARF_PLUGIN (its name, version and config keys) and the task functions of
 * its kind, below: a source's, a sink's or a transform's; wharf.c turns them into the
 * component's exports. Build with plugins/c/build.
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
 * default: a config without it is refused before the plugin sees it. A transform's keys are its
 * settings, as a connector config writes them after `transforms.<alias>.`. */
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

/* A server the config names the way database drivers do (net worlds only): a key whose value is
 * a JDBC URL (jdbc_url_key), or a host key with a port key and the port when it is left out. The
 * host grants the servers (and, for a URL, the certificate files it names). */
typedef struct {
    const char *jdbc_url_key; /* NULL: host_key and port_key name the server */
    const char *host_key;
    const char *port_key;
    uint16_t default_port;
} wharf_connection_grant;

/* A connector or task config. */
typedef struct wharf_config wharf_config;

/* A source connector's answer to whether its tasks deliver every record exactly once, given a
 * config (Kafka Connect's ExactlyOnceSupport). They do when they resume exactly from the offsets
 * the host commits with their records and give each record an offset of its own. */
typedef enum {
    WHARF_EXACTLY_ONCE_UNKNOWN,     /* the connector does not say */
    WHARF_EXACTLY_ONCE_SUPPORTED,
    WHARF_EXACTLY_ONCE_UNSUPPORTED,
} wharf_exactly_once;

typedef struct {
    const char *name;
    const char *version;
    const char *description;
    const wharf_config_key *config;
    size_t config_len;
    const wharf_key_grant *grants; /* NULL: none; a transform has none (its world grants nothing) */
    size_t grants_len;
    /* The *-with-net worlds only (plugins/c/build data-sink-with-net ...): see wharf_net.h. */
    const wharf_connection_grant *connections; /* NULL: none */
    size_t connections_len;
    /* The *-exactly-once worlds only (plugins/c/build data-source-exactly-once ...): what the
     * source connector answers when a worker with exactly-once source support validates a
     * config. exactly_once_support says whether the tasks deliver every record exactly once
     * (NULL: WHARF_EXACTLY_ONCE_UNKNOWN); can_define_transaction_boundaries whether they end
     * their own transactions with wharf_transaction_commit and the like, with that config
     * (NULL: false). A value outside the enum reads as WHARF_EXACTLY_ONCE_UNKNOWN. */
    wharf_exactly_once (*exactly_once_support)(const wharf_config *config);
    bool (*can_define_transaction_boundaries)(const wharf_config *config);
} wharf_plugin_info;

/* Defined by the plugin. */
extern const wharf_plugin_info WHARF_PLUGIN;

/* The value of `key`, NUL-terminated, or NULL when the config lacks it. The string lives as long
 * as the config: for a task, until its close function returns. */
const char *wharf_config_get(const wharf_config *config, const char *key);

/* Sets the message of the error the current function is about to return (printf-style). */
void wharf_error(const char *format, ...);

/* Writes a line to the worker's log, tagged with the connector and task (printf-style). */
void wharf_log(wharf_level level, const char *format, ...);

/* ---- Metrics of the task's own (contract 0.1.7) ----
 *
 * Served by the worker as kafka_connect_plugins_<name>{connector, task, <tags>} while the task
 * runs: register them in open, update them as the task works. Not in transform builds. */
#if !defined(WHARF_TRANSFORM)
typedef enum {
    WHARF_COUNTER = 0,   /* grows by each update (served with _total at the end of its name) */
    WHARF_GAUGE = 1,     /* set by each update */
    WHARF_HISTOGRAM = 2, /* observes each update, counted in the first bucket it fits */
} wharf_metric_kind;

typedef struct {
    const char *name;
    const char *value;
} wharf_tag;

/* Registers a metric: a name of letters, digits and '_' ('-' and '.' read as '_'), a one-line
 * description, at most 8 tags, and for a histogram its rising bucket bounds (none, NULL and 0,
 * for Prometheus's defaults). Returns its handle (0 or more); registering the same name and tags
 * again returns the same one. Returns -1 with the host's reason as the error message, as
 * wharf_error sets it (a name the host refuses, or wasm.max.plugin.metrics reached), so that open
 * may return WHARF_FAIL, or log it and go on: updates of -1 are ignored. */
int64_t wharf_metric(const char *name, const char *description, wharf_metric_kind kind, const wharf_tag *tags,
                     size_t tags_len, const double *buckets, size_t buckets_len);

/* Adds to a counter, sets a gauge, or observes a value into a histogram. */
void wharf_metric_update(int64_t metric, double value);
#endif

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

/* ---- Transactions of exactly-once sources (contract 0.1.8) ----
 *
 * Built for data-source-exactly-once or data-source-with-net-exactly-once (plugins/c/build
 * data-source-exactly-once ..., which defines WHARF_EXACTLY_ONCE), a source task may end its
 * transactions itself. It does so only when its connector runs with transaction.boundary=connector
 * on a worker with exactly-once source support, and wharf_transaction_defines_boundaries() says
 * so: the host then commits nothing by itself, and a transaction still open when the task stops
 * is aborted (its records are polled again from the offsets last committed). Otherwise the calls
 * below are ignored, and the host commits as transaction.boundary says.
 *
 * An index names a record of the batch the current wharf_source_poll fills: 0 is the first
 * record added. Outside a poll, commit and abort apply to the next poll's batch. Asking for the
 * same record, or the same batch, to be both committed and aborted fails the task, as does an
 * index outside the batch or a *_after call outside a poll. The records of an aborted
 * transaction never reach read_committed consumers, and are not polled again: the host still
 * commits their offsets. In other builds these functions do not compile. */
#define WHARF_EXACTLY_ONCE_ONLY                                                                          \
    "the transaction calls need a source built for a *-exactly-once world of wharf:connector 0.1.8 or " \
    "later: plugins/c/build data-source-exactly-once (or data-source-with-net-exactly-once) DIR "      \
    "OUT.wasm, which defines WHARF_EXACTLY_ONCE"
#if defined(WHARF_EXACTLY_ONCE)
#define WHARF_TRANSACTION_CALL
#elif defined(__clang__)
#define WHARF_TRANSACTION_CALL __attribute__((unavailable(WHARF_EXACTLY_ONCE_ONLY)))
#else
#define WHARF_TRANSACTION_CALL __attribute__((error(WHARF_EXACTLY_ONCE_ONLY)))
#endif

/* Whether the host lets this task end its transactions; false means the calls below are ignored. */
WHARF_TRANSACTION_CALL bool wharf_transaction_defines_boundaries(void);

/* Commits the transaction once the current poll's batch is sent: its records and every record
 * sent before them. */
WHARF_TRANSACTION_CALL void wharf_transaction_commit(void);

/* Commits the transaction right after record `index` of the current poll's batch: that record
 * and the ones before it are in the transaction; the ones after it begin the next. */
WHARF_TRANSACTION_CALL void wharf_transaction_commit_after(uint32_t index);

/* Aborts the transaction once the current poll's batch is sent: none of its records, nor any
 * sent since the last commit, is ever visible to read_committed consumers. */
WHARF_TRANSACTION_CALL void wharf_transaction_abort(void);

/* Aborts the transaction right after record `index` of the current poll's batch; the records
 * after it begin the next. */
WHARF_TRANSACTION_CALL void wharf_transaction_abort_after(uint32_t index);

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
    /* Data worlds: the key or value as data when a converter read it (key or value is then
     * NULL); NULL when it is bytes or absent. */
    const struct wharf_datum *key_data;
    const struct wharf_datum *value_data;
} wharf_sink_record;

/* A sink plugin defines these. flush must make every record put so far durable: the host then
 * commits the Kafka offsets, so those records are never delivered again. */
int wharf_sink_open(const wharf_config *config, void **state);
int wharf_sink_put(void *state, const wharf_sink_record *records, size_t count);
int wharf_sink_flush(void *state);
void wharf_sink_close(void *state);

#if defined(WHARF_SINK)
/* Reports a record of the batch being put that the sink could not write, and why (printf-style):
 * Kafka Connect's errant record reporter. Call it from wharf_sink_put with one of the records it
 * was given, or with `&(wharf_sink_record){.topic = t, .partition = p, .offset = o}`.
 *
 * Returns WHARF_OK when the host skips the record (errors.tolerance=all; to the dead-letter
 * queue, if the connector has one): go on with the rest of the batch. Otherwise returns
 * WHARF_FAIL with the host's answer as the error message, as wharf_error sets it, so that put may
 * return it as it is: with errors.tolerance=none the task fails once put returns, whatever put
 * returns. WHARF_FAIL too for a record that is not in the batch being put, or a call outside
 * put. Declared in sink builds only (-DWHARF_SINK): the source worlds cannot report. */
int wharf_report_errant(const wharf_sink_record *record, const char *format, ...);
#endif

/* ---- Data (Kafka Connect's data model) ----
 *
 * Built for the data-source, data-sink or transform world (plugins/c/build data-source|data-sink|
 * transform ...), a record's key, value and header values are each either bytes, which go to
 * Kafka as they are, or
 * data: a schema and a value, which the worker's converters write (value.converter=
 * org.apache.kafka.connect.json.JsonConverter gives Connect's JSON). Schemas are built once and
 * kept (they are never freed for you); values are built into the batch being filled and named by
 * a wharf_value. Every value is used once: by one record, header, or parent value. */

typedef enum {
    WHARF_TYPE_INT8,
    WHARF_TYPE_INT16,
    WHARF_TYPE_INT32,
    WHARF_TYPE_INT64,
    WHARF_TYPE_FLOAT32,
    WHARF_TYPE_FLOAT64,
    WHARF_TYPE_BOOLEAN,
    WHARF_TYPE_STRING,
    WHARF_TYPE_BYTES,
    WHARF_TYPE_ARRAY,
    WHARF_TYPE_MAP,
    WHARF_TYPE_STRUCT
} wharf_type;

typedef struct wharf_schema wharf_schema;

/* Schemas; each returns NULL when out of memory, and the setters return the schema they change.
 * Date values are int32 days since the epoch, Time int32 milliseconds of the day, Timestamp
 * int64 milliseconds since the epoch, Decimal an unscaled integer (wharf_decimal). */
wharf_schema *wharf_schema_new(wharf_type type);
wharf_schema *wharf_schema_struct(const char *name); /* name may be NULL; add fields in order */
int wharf_schema_add_field(wharf_schema *s, const char *name, const wharf_schema *field);
wharf_schema *wharf_schema_array(const wharf_schema *element);
wharf_schema *wharf_schema_map(const wharf_schema *key, const wharf_schema *value);
wharf_schema *wharf_schema_decimal(int32_t scale);
wharf_schema *wharf_schema_date(void);
wharf_schema *wharf_schema_time(void);
wharf_schema *wharf_schema_timestamp(void);
wharf_schema *wharf_schema_optional(wharf_schema *s);
wharf_schema *wharf_schema_version(wharf_schema *s, int32_t version);
wharf_schema *wharf_schema_doc(wharf_schema *s, const char *doc);

/* A value of the batch being filled. WHARF_NO_VALUE (out of memory) carries through the
 * builders, and a record given it fails the poll with a message. */
typedef uint32_t wharf_value;
#define WHARF_NO_VALUE UINT32_MAX

wharf_value wharf_null(wharf_batch *b);
wharf_value wharf_boolean(wharf_batch *b, bool v);
wharf_value wharf_int8(wharf_batch *b, int8_t v);
wharf_value wharf_int16(wharf_batch *b, int16_t v);
wharf_value wharf_int32(wharf_batch *b, int32_t v);
wharf_value wharf_int64(wharf_batch *b, int64_t v);
wharf_value wharf_float32(wharf_batch *b, float v);
wharf_value wharf_float64(wharf_batch *b, double v);
wharf_value wharf_string(wharf_batch *b, const char *s); /* NUL-terminated, copied */
wharf_value wharf_string_n(wharf_batch *b, const char *s, size_t len);
wharf_value wharf_bytes(wharf_batch *b, const void *bytes, size_t len);
wharf_value wharf_array(wharf_batch *b, const wharf_value *elements, size_t n);
wharf_value wharf_map(wharf_batch *b, const wharf_value *keys, const wharf_value *values, size_t n);
wharf_value wharf_struct(wharf_batch *b, const wharf_value *fields, size_t n); /* in the schema's field order */
wharf_value wharf_decimal(wharf_batch *b, int64_t unscaled, int32_t scale);

/* A record's key or value, or a header's value. */
typedef struct {
    int kind; /* 0: none (a null key, a tombstone, a null header), 1: bytes, 2: data */
    const void *bytes;
    size_t len;
    const wharf_schema *schema; /* NULL: data without a schema */
    wharf_value value;
} wharf_part;

static inline wharf_part wharf_part_none(void) { return (wharf_part){0, NULL, 0, NULL, 0}; }
static inline wharf_part wharf_part_bytes(const void *bytes, size_t len) { return (wharf_part){1, bytes, len, NULL, 0}; }
static inline wharf_part wharf_part_data(const wharf_schema *schema, wharf_value value) {
    return (wharf_part){2, NULL, 0, schema, value};
}

/* As wharf_batch_add, with a key and a value that may be data. */
int wharf_batch_add_part(wharf_batch *batch, const char *topic, wharf_part key, wharf_part value,
                         const char *partition_key, const char *partition_value, const char *offset_key, int64_t offset);

/* Adds a header to the record added last. */
int wharf_batch_add_header(wharf_batch *batch, const char *key, wharf_part value);

/* Reading data in a data sink or a transform: a wharf_sink_record's key_data and value_data
 * (or a wharf_transform_record's) point at these while put (or apply) runs. */
typedef struct wharf_datum {
    const void *batch;
    int64_t schema; /* -1: no schema */
    uint32_t value;
} wharf_datum;

/* What a value is; the order of the contract's value variants. */
typedef enum {
    WHARF_KIND_NULL,
    WHARF_KIND_BOOLEAN,
    WHARF_KIND_INT8,
    WHARF_KIND_INT16,
    WHARF_KIND_INT32,
    WHARF_KIND_INT64,
    WHARF_KIND_FLOAT32,
    WHARF_KIND_FLOAT64,
    WHARF_KIND_STRING,
    WHARF_KIND_BYTES,
    WHARF_KIND_ARRAY,
    WHARF_KIND_MAP,
    WHARF_KIND_STRUCT,
    WHARF_KIND_DECIMAL
} wharf_kind;

wharf_kind wharf_datum_kind(const wharf_datum *d);
bool wharf_datum_boolean(const wharf_datum *d, bool *out);
bool wharf_datum_int(const wharf_datum *d, int64_t *out);   /* any of int8 … int64 */
bool wharf_datum_float(const wharf_datum *d, double *out);  /* float32 or float64 */
const char *wharf_datum_string(const wharf_datum *d, size_t *len); /* not NUL-terminated; NULL if not a string */
const uint8_t *wharf_datum_bytes(const wharf_datum *d, size_t *len);
size_t wharf_datum_count(const wharf_datum *d);             /* elements, fields or entries */
wharf_datum wharf_datum_child(const wharf_datum *d, size_t i);     /* array element or struct field i */
wharf_datum wharf_datum_map_key(const wharf_datum *d, size_t i);
wharf_datum wharf_datum_map_value(const wharf_datum *d, size_t i);
const char *wharf_datum_field_name(const wharf_datum *d, size_t i, size_t *len); /* of a struct with a schema */
const char *wharf_datum_schema_name(const wharf_datum *d, size_t *len);         /* NULL: none */

/* ---- Transforms ----
 *
 * Built for the transform world (plugins/c/build transform ...), a plugin is a single message
 * transform of one's own, which a connector config names as Kafka Connect's transforms are
 * named: `transforms=up`, `transforms.up.type=<WHARF_PLUGIN.name>`, its settings (WHARF_PLUGIN's
 * keys) under `transforms.up.`. One transform is opened for each task of the connector, and it is
 * given the records of each batch: a source's before the converters, a sink's after them. It
 * says what becomes of each: kept as it is (the default), changed, or dropped. One record in gives
 * at most one out.
 *
 * A record's key, value and header values are read as a sink reads them (bytes, or a wharf_datum
 * for the wharf_datum_* readers) and changed through the functions below. New values are built
 * with the builders above into the batch given to wharf_transform_apply, as a source builds them;
 * a value built is used once. */

/* A header of a record being transformed. */
typedef struct {
    const char *key;               /* NUL-terminated */
    const uint8_t *value;          /* bytes; NULL when data or a null header */
    size_t value_len;
    const wharf_datum *value_data; /* data; NULL when bytes or a null header */
} wharf_header;

/* A record being transformed (Kafka Connect's ConnectRecord). Read its fields; set `partition`,
 * `timestamp` and `drop` directly, and change the rest through wharf_record_set_* and
 * wharf_record_*_header, which keep these fields up to date. Everything it points at lives until
 * wharf_transform_apply returns. */
typedef struct {
    const char *topic;             /* NUL-terminated */
    int32_t partition;             /* -1: none (a source record whose key chooses) */
    int64_t timestamp;             /* -1: none */
    const uint8_t *key;            /* bytes; NULL when data or a null key */
    size_t key_len;
    const wharf_datum *key_data;   /* data; NULL when bytes or a null key */
    const uint8_t *value;          /* bytes; NULL when data or a null value (a tombstone) */
    size_t value_len;
    const wharf_datum *value_data; /* data; NULL when bytes or a null value */
    const wharf_header *headers;
    size_t headers_len;
    bool drop;                     /* set it to drop the record */
    /* The SDK's own. */
    struct wharf_record_state *state_;
} wharf_transform_record;

/* A transform plugin defines these. open gets the transform's settings (the keys after
 * `transforms.<alias>.`, WHARF_PLUGIN's defaults filled in) and refuses bad ones by failing.
 * apply is given every record of a batch, and builds new values into `batch`. A failing apply
 * (any code but WHARF_OK: a transform is not retried) fails the whole batch, with wharf_error's
 * message; with the connector's errors.tolerance=all the host then gives the records one at a
 * time, to skip only those that fail. */
int wharf_transform_open(const wharf_config *config, void **state);
int wharf_transform_apply(void *state, wharf_transform_record *records, size_t count, wharf_batch *batch);
void wharf_transform_close(void *state);

#if defined(WHARF_TRANSFORM)
/* Changes to a record given to wharf_transform_apply, while it runs. Each returns WHARF_OK, or
 * WHARF_FAIL with the error set, which wharf_transform_apply may return as it is. Declared in
 * transform builds only (-DWHARF_TRANSFORM). */

/* The record now goes to `topic` (copied). */
int wharf_record_set_topic(wharf_transform_record *record, const char *topic);

/* The record's key or value is now `part`: wharf_part_none() (a null key, a tombstone),
 * wharf_part_bytes, or wharf_part_data with a value built into the batch. */
int wharf_record_set_key(wharf_transform_record *record, wharf_part part);
int wharf_record_set_value(wharf_transform_record *record, wharf_part part);

/* Adds a header (the key copied) after the record's others. */
int wharf_record_add_header(wharf_transform_record *record, const char *key, wharf_part value);

/* Removes every header named `key`. */
int wharf_record_remove_headers(wharf_transform_record *record, const char *key);

/* Puts `value`, just built into the batch and used nowhere else, where `d` is: a record's key or
 * value, a header's value, a struct's field, an array's element or a map's entry. It keeps d's
 * schema, so the value must fit it (a string for a string schema); d then reads the new value.
 * Upper-casing a struct's field:
 *
 *     wharf_datum name = wharf_datum_child(records[i].value_data, 2);
 *     size_t len;
 *     const char *s = wharf_datum_string(&name, &len);
 *     if (s) wharf_datum_set(&name, wharf_string_n(batch, upper_copy_of(s, len), len));
 */
int wharf_datum_set(const wharf_datum *d, wharf_value value);
#endif

#endif
