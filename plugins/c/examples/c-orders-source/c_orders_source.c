/* c-orders-source: makes up orders, each a struct with a schema (com.example.Order: decimals,
 * dates, a timestamp, an array of structs, an optional field), for the worker's converters to
 * write; `count` orders in all (-1: without end), resuming after the last one stored. It shows
 * the SDK's data builder: schemas built once, values built into the batch; metrics of its own:
 * orders made, the next order's id, lines per order; and an exactly-once source (built for
 * data-source-exactly-once, as its file `world` says): it gives exactly-once delivery, since it
 * resumes from its stored offset and each order has an offset of its own, and when the host lets
 * it define transactions it ends one after every `orders.per.transaction` orders, aborting every
 * `abort.every.transaction`-th. */
#include <stdio.h>
#include <stdlib.h>

#include "wharf.h"

static const wharf_config_key keys[] = {
    {"topic", WHARF_STRING, NULL, true, WHARF_HIGH, "The topic to write to."},
    {"count", WHARF_LONG, "-1", false, WHARF_MEDIUM, "How many orders in all; -1 never stops."},
    {"orders.per.transaction", WHARF_INT, "10", false, WHARF_LOW,
     "With transaction.boundary=connector: how many orders each transaction holds (at least 1). Order n ends "
     "transaction (n + 1) / orders.per.transaction when n + 1 is a multiple of it; orders count from 0."},
    {"abort.every.transaction", WHARF_INT, "0", false, WHARF_LOW,
     "With transaction.boundary=connector: aborts every transaction whose number (counting from 1) is a multiple "
     "of this, instead of committing it, so that read_committed consumers never see its orders; 0 never aborts."},
};

/* Each order has an offset of its own and a task resumes after the last one stored: exactly once,
 * whatever the config. */
static wharf_exactly_once orders_exactly_once(const wharf_config *config) { return WHARF_EXACTLY_ONCE_SUPPORTED; }

static bool orders_define_transactions(const wharf_config *config) { return true; }

const wharf_plugin_info WHARF_PLUGIN = {
    .name = "c-orders-source",
    .version = "0.1.0",
    .description = "Makes up orders as structs with a schema (C example)",
    .config = keys,
    .config_len = sizeof keys / sizeof keys[0],
    .exactly_once_support = orders_exactly_once,
    .can_define_transaction_boundaries = orders_define_transactions,
};

static wharf_schema *order_schema;
static wharf_schema *string_schema;

/* The schemas, once: Order and its OrderLine, and a string for keys and headers. */
static int make_schemas(void) {
    if (order_schema) return WHARF_OK;
    if (!string_schema && !(string_schema = wharf_schema_new(WHARF_TYPE_STRING))) {
        wharf_error("out of memory making the string schema");
        return WHARF_FAIL;
    }
    wharf_schema *line = wharf_schema_struct("com.example.OrderLine");
    wharf_schema *order = wharf_schema_version(wharf_schema_struct("com.example.Order"), 1);
    if (!line || !order) {
        wharf_error("out of memory making the order schema");
        return WHARF_FAIL;
    }
    int made = wharf_schema_add_field(line, "sku", wharf_schema_new(WHARF_TYPE_STRING));
    made |= wharf_schema_add_field(line, "quantity", wharf_schema_new(WHARF_TYPE_INT32));
    made |= wharf_schema_add_field(order, "id", wharf_schema_new(WHARF_TYPE_INT64));
    made |= wharf_schema_add_field(order, "customer", wharf_schema_new(WHARF_TYPE_STRING));
    made |= wharf_schema_add_field(order, "total", wharf_schema_decimal(2));
    made |= wharf_schema_add_field(order, "day", wharf_schema_date());
    made |= wharf_schema_add_field(order, "placed", wharf_schema_timestamp());
    made |= wharf_schema_add_field(order, "lines", wharf_schema_array(line));
    made |= wharf_schema_add_field(order, "note", wharf_schema_optional(wharf_schema_new(WHARF_TYPE_STRING)));
    if (made != WHARF_OK) return WHARF_FAIL;
    order_schema = order;
    return WHARF_OK;
}

typedef struct {
    const char *topic;
    long long count;
    long long next;
    long long per_transaction; /* orders in a transaction */
    long long abort_every;     /* aborts transaction k when k is a multiple of it; 0: never */
    int64_t made, next_id, lines;
} orders;

/* 2024-01-02T09:30:00Z */
#define START_MS 1704187800000LL
#define START_DAY 19724
#define DAY_MS 86400000LL

/* Order n, the same every time, in the batch. */
static wharf_value order(wharf_batch *b, long long n) {
    char customer[32];
    snprintf(customer, sizeof customer, "customer-%lld", n % 7);
    wharf_value lines[3];
    size_t nlines = (size_t)(n % 3 + 1);
    for (size_t i = 0; i < nlines; i++) {
        char sku[16];
        snprintf(sku, sizeof sku, "sku-%zu", i);
        wharf_value line[2] = {wharf_string(b, sku), wharf_int32(b, (int32_t)i + 1)};
        lines[i] = wharf_struct(b, line, 2);
    }
    wharf_value fields[7] = {
        wharf_int64(b, n),
        wharf_string(b, customer),
        wharf_decimal(b, n * 125 + 99, 2),
        wharf_int32(b, (int32_t)(START_DAY + n)),
        wharf_int64(b, START_MS + n * 60000),
        wharf_array(b, lines, nlines),
        n % 2 ? wharf_string(b, "gift") : wharf_null(b),
    };
    return wharf_struct(b, fields, 7);
}

/* The int config key `key`, or `fallback` when it is absent; false (with the error set) when it
 * is below `least`. */
static bool int_key(const wharf_config *config, const char *key, long long fallback, long long least, long long *out) {
    const char *text = wharf_config_get(config, key);
    *out = text ? strtoll(text, NULL, 10) : fallback;
    if (*out < least) {
        wharf_error("%s is %s; set it to %lld or more", key, text, least);
        return false;
    }
    return true;
}

int wharf_source_open(const wharf_config *config, void **state) {
    if (make_schemas() != WHARF_OK) return WHARF_FAIL;
    long long per_transaction, abort_every;
    if (!int_key(config, "orders.per.transaction", 10, 1, &per_transaction) ||
        !int_key(config, "abort.every.transaction", 0, 0, &abort_every)) {
        return WHARF_FAIL;
    }
    orders *t = calloc(1, sizeof *t);
    if (!t) {
        wharf_error("out of memory opening the task");
        return WHARF_FAIL;
    }
    t->topic = wharf_config_get(config, "topic");
    const char *count = wharf_config_get(config, "count");
    t->count = count ? strtoll(count, NULL, 10) : -1;
    t->per_transaction = per_transaction;
    t->abort_every = abort_every;
    int64_t stored;
    t->next = wharf_committed_offset("orders", "made up", "id", &stored) ? stored + 1 : 0;
    const wharf_tag sdk[] = {{"sdk", "c"}};
    const double per_order[] = {1, 2, 3};
    t->made = wharf_metric("orders-made", "Orders made", WHARF_COUNTER, sdk, 1, NULL, 0);
    t->next_id = wharf_metric("next-order-id", "The id of the next order", WHARF_GAUGE, sdk, 1, NULL, 0);
    t->lines = wharf_metric("order-lines", "Lines per order", WHARF_HISTOGRAM, sdk, 1, per_order, 3);
    if (t->made < 0 || t->next_id < 0 || t->lines < 0) {
        free(t);
        return WHARF_FAIL;
    }
    *state = t;
    return WHARF_OK;
}

/* Ends the transaction after order n, record `index` of the batch, when n is the last of one:
 * transaction k = (n + 1) / orders.per.transaction is aborted when k is a multiple of
 * abort.every.transaction, and committed otherwise. */
static void end_transaction_after(const orders *t, long long n, uint32_t index) {
    if ((n + 1) % t->per_transaction != 0) return;
    long long k = (n + 1) / t->per_transaction;
    if (t->abort_every > 0 && k % t->abort_every == 0) {
        wharf_transaction_abort_after(index);
    } else {
        wharf_transaction_commit_after(index);
    }
}

int wharf_source_poll(void *state, uint32_t max_records, wharf_batch *batch) {
    orders *t = state;
    bool transactions = wharf_transaction_defines_boundaries();
    for (uint32_t i = 0; i < max_records && (t->count < 0 || t->next < t->count); i++) {
        char key[24];
        snprintf(key, sizeof key, "%lld", t->next);
        wharf_value value = order(batch, t->next);
        wharf_value key_text = wharf_string(batch, key);
        int added = wharf_batch_add_part(batch, t->topic, wharf_part_data(string_schema, key_text), wharf_part_data(order_schema, value),
                                         "orders", "made up", "id", t->next);
        if (added == WHARF_OK) {
            wharf_value origin = wharf_string(batch, "c-orders-source");
            added = wharf_batch_add_header(batch, "origin", wharf_part_data(string_schema, origin));
        }
        if (added != WHARF_OK) return added;
        wharf_metric_update(t->made, 1);
        wharf_metric_update(t->lines, (double)(t->next % 3 + 1));
        if (transactions) end_transaction_after(t, t->next, i);
        t->next++;
    }
    wharf_metric_update(t->next_id, (double)t->next);
    return WHARF_OK;
}

int wharf_source_commit(void *state) { return WHARF_OK; }

void wharf_source_close(void *state) { free(state); }
