/* TCP connections with deadlines, and TLS through the worker, for C plugins built for the
 * data-source-with-net and data-sink-with-net worlds (plugins/c/build data-sink-with-net ...).
 *
 *   wharf_conn *conn;
 *   if (wharf_conn_open(host, port, 10000, &conn) != WHARF_NET_OK) return WHARF_RETRY;
 *   if (wharf_conn_start_tls(conn, NULL, 10000) != WHARF_NET_OK) { wharf_conn_close(conn); return WHARF_RETRY; }
 *   wharf_conn_write_all(conn, "PING\r\n", 6, 5000);
 *   wharf_conn_close(conn);
 *
 * A plugin may connect only to the addresses its connector's config grants (wasm.net.connect, or
 * keys the plugin declares in `grants` or `connections`). What a server's certificate must prove
 * is the worker's decision: a JDBC URL's sslmode for the servers it names, otherwise the server's
 * name and a chain to the authorities of the connector's wasm.tls.trust (the public ones
 * without it).
 *
 * Every function that can fail returns WHARF_NET_OK or the kind of failure, and then has set the
 * message (what was being done, with which server, and why) as wharf_error does, so that a task
 * function may return WHARF_RETRY or WHARF_FAIL at once. Every wait has a deadline: a
 * WHARF_NET_TIMEOUT leaves the connection as it was (a read may be tried again). Connect only from
 * a task's functions, and close every connection you open. */
#ifndef WHARF_NET_H
#define WHARF_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    WHARF_NET_OK = 0,
    WHARF_NET_TIMEOUT,    /* the deadline passed */
    WHARF_NET_REFUSED,    /* nothing listens there */
    WHARF_NET_RESET,      /* the connection broke */
    WHARF_NET_CLOSED,     /* the connection is closed (or unusable after a failed handshake) */
    WHARF_NET_DENIED,     /* the address is not granted to this connector */
    WHARF_NET_TLS,        /* the handshake failed: the message says what the certificate lacked */
    WHARF_NET_UNRESOLVED, /* the name resolves to no address */
    WHARF_NET_OTHER
} wharf_net_error;

/* The most bytes one read asks the host for, and the most addresses a name is tried at. */
#define WHARF_NET_MAX_READ_BYTES (64 * 1024)
#define WHARF_NET_MAX_ADDRESSES 16

typedef struct wharf_conn wharf_conn;

/* Opens a connection to host (a name or an IPv4 address) at port, trying each address the name
 * resolves to in turn, all within timeout_ms. */
wharf_net_error wharf_conn_open(const char *host, uint16_t port, uint32_t timeout_ms, wharf_conn **conn);

/* Encrypts the connection: the worker runs a TLS handshake over it with server_name (NULL: the
 * host given to wharf_conn_open) under the policy the connector's config sets. */
wharf_net_error wharf_conn_start_tls(wharf_conn *conn, const char *server_name, uint32_t timeout_ms);

bool wharf_conn_is_tls(const wharf_conn *conn);

/* Reads up to cap bytes into buf as soon as any arrive; *n = 0 when the server closed the
 * connection. */
wharf_net_error wharf_conn_read(wharf_conn *conn, void *buf, size_t cap, uint32_t timeout_ms, size_t *n);

/* Sends len bytes and waits until the worker has passed them on. */
wharf_net_error wharf_conn_write_all(wharf_conn *conn, const void *data, size_t len, uint32_t timeout_ms);

/* Closes the connection (TLS's close notice first when encrypted) and frees it. NULL is fine. */
void wharf_conn_close(wharf_conn *conn);

#endif
