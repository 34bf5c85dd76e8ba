/* c-socket-sink: writes each record's value as one line to a TCP server, over TLS when `tls` is
 * true (Graphite's plaintext protocol, a syslog relay, any line-reading service). put writes its
 * batch and returns once the worker has passed the bytes on; a failed connection is closed and
 * the batch retried on a new one (the host delivers it again), so nothing is lost and a line may
 * arrive twice after a reconnect. A value is written as it is when it is bytes or a string. The
 * server's certificate is checked by the worker: its name, and a chain to the authorities of the
 * connector's wasm.tls.trust (the public ones without it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf.h"
#include "wharf_net.h"

static const wharf_config_key keys[] = {
    {"address", WHARF_STRING, NULL, true, WHARF_HIGH, "HOST:PORT of the server; granted for TCP connections."},
    {"tls", WHARF_BOOLEAN, "false", false, WHARF_HIGH, "Whether to encrypt the connection with TLS."},
    {"tls.server.name", WHARF_STRING, "", false, WHARF_MEDIUM,
     "The name the server's certificate must hold; the host of address when empty."},
    {"timeout.ms", WHARF_LONG, "10000", false, WHARF_LOW, "How long connecting, the handshake and each write may take."},
};

/* The host grants TCP connections to the address "address" names. */
static const wharf_key_grant grants[] = {
    {"address", WHARF_HOST_PORT},
};

const wharf_plugin_info WHARF_PLUGIN = {
    .name = "c-socket-sink",
    .version = "0.1.0",
    .description = "Writes record values as lines to a TCP server, over TLS if asked (C example)",
    .config = keys,
    .config_len = sizeof keys / sizeof keys[0],
    .grants = grants,
    .grants_len = sizeof grants / sizeof grants[0],
};

typedef struct {
    char host[256];
    uint16_t port;
    bool tls;
    const char *server_name; /* NULL: host */
    uint32_t timeout_ms;
    wharf_conn *conn;
    char *buffer; /* one batch's lines */
    size_t capacity;
} sink;

int wharf_sink_open(const wharf_config *config, void **state) {
    const char *address = wharf_config_get(config, "address");
    const char *colon = address ? strrchr(address, ':') : NULL;
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (!colon || colon == address || (size_t)(colon - address) >= 256 || port < 1 || port > 65535) {
        wharf_error("address=\"%s\" is not HOST:PORT, e.g. metrics.example.com:2003", address ? address : "");
        return WHARF_FAIL;
    }
    sink *s = calloc(1, sizeof *s);
    if (!s) {
        wharf_error("out of memory");
        return WHARF_FAIL;
    }
    memcpy(s->host, address, (size_t)(colon - address));
    s->port = (uint16_t)port;
    const char *tls = wharf_config_get(config, "tls");
    s->tls = tls && strcmp(tls, "true") == 0;
    const char *name = wharf_config_get(config, "tls.server.name");
    s->server_name = name && *name ? name : NULL;
    const char *timeout = wharf_config_get(config, "timeout.ms");
    s->timeout_ms = timeout ? (uint32_t)strtoul(timeout, NULL, 10) : 10000;
    *state = s;
    return WHARF_OK;
}

static void disconnect(sink *s) {
    wharf_conn_close(s->conn);
    s->conn = NULL;
}

static int connected(sink *s) {
    if (s->conn) return WHARF_OK;
    wharf_conn *conn;
    if (wharf_conn_open(s->host, s->port, s->timeout_ms, &conn) != WHARF_NET_OK) return WHARF_RETRY;
    if (s->tls && wharf_conn_start_tls(conn, s->server_name, s->timeout_ms) != WHARF_NET_OK) {
        wharf_conn_close(conn);
        return WHARF_RETRY;
    }
    wharf_log(WHARF_INFO, "connected to %s:%u%s", s->host, s->port, wharf_conn_is_tls(conn) ? " over TLS" : "");
    s->conn = conn;
    return WHARF_OK;
}

int wharf_sink_put(void *state, const wharf_sink_record *records, size_t count) {
    sink *s = state;
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        const void *value = records[i].value;
        size_t len = records[i].value_len;
        if (records[i].value_data) {
            value = wharf_datum_string(records[i].value_data, &len);
            if (!value) value = wharf_datum_bytes(records[i].value_data, &len);
            if (!value) {
                wharf_error("the value of %s-%d offset %lld is data of kind %d, not a string or bytes: c-socket-sink "
                            "writes text; set value.converter=org.apache.kafka.connect.storage.StringConverter",
                            records[i].topic, (int)records[i].partition, (long long)records[i].offset,
                            (int)wharf_datum_kind(records[i].value_data));
                return WHARF_FAIL;
            }
        }
        if (used + len + 1 > s->capacity) {
            size_t wanted = (used + len + 1) * 2;
            char *grown = realloc(s->buffer, wanted);
            if (!grown) {
                wharf_error("out of memory for a batch of %zu records", count);
                return WHARF_FAIL;
            }
            s->buffer = grown;
            s->capacity = wanted;
        }
        if (len) memcpy(s->buffer + used, value, len);
        used += len;
        s->buffer[used++] = '\n';
    }
    if (used == 0) return WHARF_OK;
    int ready = connected(s);
    if (ready != WHARF_OK) return ready;
    if (wharf_conn_write_all(s->conn, s->buffer, used, s->timeout_ms) != WHARF_NET_OK) {
        disconnect(s);
        return WHARF_RETRY;
    }
    return WHARF_OK;
}

int wharf_sink_flush(void *state) {
    (void)state;
    return WHARF_OK;
}

void wharf_sink_close(void *state) {
    sink *s = state;
    disconnect(s);
    free(s->buffer);
    free(s);
}
