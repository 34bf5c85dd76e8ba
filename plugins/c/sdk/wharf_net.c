/* wharf_net.h over the bindings `wit-bindgen c` generates for the *-with-net worlds:
 * wasi:sockets for TCP, wasi:io polls bounded by a monotonic-clock timer for every wait, and the
 * host's wasi:tls for encryption. Resources are dropped children first: streams, then the TLS
 * connection they belong to, then the socket (the host refuses to drop a parent before). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wharf.h"
#include "wharf_net.h"

#if defined(WHARF_SOURCE) && defined(WHARF_EXACTLY_ONCE)
#include "data_source_with_net_exactly_once.h"
#define NW(name) data_source_with_net_exactly_once_##name
#elif defined(WHARF_SOURCE)
#include "data_source_with_net.h"
#define NW(name) data_source_with_net_##name
#else
#include "data_sink_with_net.h"
#define NW(name) data_sink_with_net_##name
#endif

struct wharf_conn {
    wasi_sockets_tcp_own_tcp_socket_t socket;
    bool usable; /* the streams below are live */
    wasi_io_streams_own_input_stream_t in;
    wasi_io_streams_own_output_stream_t out;
    bool tls;
    wasi_tls_types_own_client_connection_t tls_conn;
    char host[256];
    char shown[64]; /* the address connected to, for messages */
};

static uint64_t deadline_in(uint32_t timeout_ms) {
    return wasi_clocks_monotonic_clock_now() + (uint64_t)timeout_ms * 1000000u;
}

/* Waits until `pollable` is ready, or fails at `deadline`; drops the pollable either way. */
static wharf_net_error wait_on(wasi_io_poll_own_pollable_t pollable, uint64_t deadline, const char *what) {
    wasi_io_poll_borrow_pollable_t waited = wasi_io_poll_borrow_pollable(pollable);
    bool ready = wasi_io_poll_method_pollable_ready(waited);
    if (!ready) {
        wasi_io_poll_own_pollable_t timer = wasi_clocks_monotonic_clock_subscribe_instant(deadline);
        wasi_io_poll_borrow_pollable_t both[2] = {waited, wasi_io_poll_borrow_pollable(timer)};
        wasi_io_poll_list_borrow_pollable_t in = {both, 2};
        NW(list_u32_t) out;
        wasi_io_poll_poll(&in, &out);
        for (size_t i = 0; i < out.len; i++) ready = ready || out.ptr[i] == 0;
        NW(list_u32_free)(&out);
        wasi_io_poll_pollable_drop_own(timer);
    }
    wasi_io_poll_pollable_drop_own(pollable);
    if (!ready) {
        wharf_error("%s timed out", what);
        return WHARF_NET_TIMEOUT;
    }
    return WHARF_NET_OK;
}

static wharf_net_error socket_error(wasi_sockets_network_error_code_t code, const char *what) {
    switch (code) {
    case WASI_SOCKETS_NETWORK_ERROR_CODE_CONNECTION_REFUSED:
        wharf_error("%s: connection refused", what);
        return WHARF_NET_REFUSED;
    case WASI_SOCKETS_NETWORK_ERROR_CODE_CONNECTION_RESET:
    case WASI_SOCKETS_NETWORK_ERROR_CODE_CONNECTION_ABORTED:
        wharf_error("%s: connection reset", what);
        return WHARF_NET_RESET;
    case WASI_SOCKETS_NETWORK_ERROR_CODE_TIMEOUT:
        wharf_error("%s timed out", what);
        return WHARF_NET_TIMEOUT;
    case WASI_SOCKETS_NETWORK_ERROR_CODE_ACCESS_DENIED:
    case WASI_SOCKETS_NETWORK_ERROR_CODE_NOT_SUPPORTED:
        wharf_error("%s: not granted to this connector (wasm.net.connect, or a key the plugin declares)", what);
        return WHARF_NET_DENIED;
    case WASI_SOCKETS_NETWORK_ERROR_CODE_NAME_UNRESOLVABLE:
    case WASI_SOCKETS_NETWORK_ERROR_CODE_TEMPORARY_RESOLVER_FAILURE:
    case WASI_SOCKETS_NETWORK_ERROR_CODE_PERMANENT_RESOLVER_FAILURE:
        wharf_error("%s: the name does not resolve", what);
        return WHARF_NET_UNRESOLVED;
    default:
        wharf_error("%s: socket error %d", what, (int)code);
        return WHARF_NET_OTHER;
    }
}

/* The message of an error resource, which is dropped. */
static void error_text(wasi_io_error_own_error_t error, char *buf, size_t cap) {
    NW(string_t) text;
    wasi_io_error_method_error_to_debug_string(wasi_io_error_borrow_error(error), &text);
    snprintf(buf, cap, "%.*s", (int)text.len, (const char *)text.ptr);
    NW(string_free)(&text);
    wasi_io_error_error_drop_own(error);
}

static wharf_net_error stream_error(wasi_io_streams_stream_error_t *error, const char *what) {
    if (error->tag == WASI_IO_STREAMS_STREAM_ERROR_CLOSED) {
        wharf_error("%s: the connection is closed", what);
        return WHARF_NET_CLOSED;
    }
    char detail[512];
    error_text(error->val.last_operation_failed, detail, sizeof detail);
    wharf_error("%s: %s", what, detail);
    return WHARF_NET_RESET;
}

static bool ipv4_literal(const char *host, wasi_sockets_network_ip_address_t *address) {
    unsigned a, b, c, d;
    char rest;
    if (sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &rest) != 4 || a > 255 || b > 255 || c > 255 || d > 255) {
        return false;
    }
    address->tag = WASI_SOCKETS_NETWORK_IP_ADDRESS_IPV4;
    address->val.ipv4 = (wasi_sockets_network_ipv4_address_t){(uint8_t)a, (uint8_t)b, (uint8_t)c, (uint8_t)d};
    return true;
}

static wharf_net_error resolve(wasi_sockets_network_borrow_network_t net, const char *host, uint64_t deadline,
                               wasi_sockets_network_ip_address_t *addresses, size_t *count) {
    char what[300];
    snprintf(what, sizeof what, "resolving %s", host);
    NW(string_t) name;
    NW(string_set)(&name, host);
    wasi_sockets_ip_name_lookup_own_resolve_address_stream_t lookup;
    wasi_sockets_network_error_code_t code;
    if (!wasi_sockets_ip_name_lookup_resolve_addresses(net, &name, &lookup, &code)) return socket_error(code, what);
    wharf_net_error result = WHARF_NET_OK;
    *count = 0;
    for (;;) {
        wasi_sockets_ip_name_lookup_option_ip_address_t next;
        wasi_sockets_ip_name_lookup_borrow_resolve_address_stream_t stream =
            wasi_sockets_ip_name_lookup_borrow_resolve_address_stream(lookup);
        if (!wasi_sockets_ip_name_lookup_method_resolve_address_stream_resolve_next_address(stream, &next, &code)) {
            if (code == WASI_SOCKETS_NETWORK_ERROR_CODE_WOULD_BLOCK) {
                result = wait_on(wasi_sockets_ip_name_lookup_method_resolve_address_stream_subscribe(stream), deadline, what);
                if (result != WHARF_NET_OK) break;
                continue;
            }
            result = socket_error(code, what);
            break;
        }
        if (!next.is_some) break;
        if (*count < WHARF_NET_MAX_ADDRESSES) addresses[(*count)++] = next.val;
    }
    wasi_sockets_ip_name_lookup_resolve_address_stream_drop_own(lookup);
    return result;
}

static wharf_net_error connect_to(wasi_sockets_network_borrow_network_t net, wasi_sockets_network_ip_address_t *address,
                                  uint16_t port, uint64_t deadline, wharf_conn *conn) {
    wasi_sockets_network_ip_socket_address_t remote;
    wasi_sockets_network_ip_address_family_t family;
    if (address->tag == WASI_SOCKETS_NETWORK_IP_ADDRESS_IPV4) {
        wasi_sockets_network_ipv4_address_t a = address->val.ipv4;
        family = WASI_SOCKETS_NETWORK_IP_ADDRESS_FAMILY_IPV4;
        remote.tag = WASI_SOCKETS_NETWORK_IP_SOCKET_ADDRESS_IPV4;
        remote.val.ipv4 = (wasi_sockets_network_ipv4_socket_address_t){port, a};
        snprintf(conn->shown, sizeof conn->shown, "%u.%u.%u.%u:%u", a.f0, a.f1, a.f2, a.f3, port);
    } else {
        wasi_sockets_network_ipv6_address_t a = address->val.ipv6;
        family = WASI_SOCKETS_NETWORK_IP_ADDRESS_FAMILY_IPV6;
        remote.tag = WASI_SOCKETS_NETWORK_IP_SOCKET_ADDRESS_IPV6;
        remote.val.ipv6 = (wasi_sockets_network_ipv6_socket_address_t){port, 0, a, 0};
        snprintf(conn->shown, sizeof conn->shown, "[%x:%x:%x:%x:%x:%x:%x:%x]:%u", a.f0, a.f1, a.f2, a.f3, a.f4, a.f5,
                 a.f6, a.f7, port);
    }
    char what[96];
    snprintf(what, sizeof what, "connecting to %s", conn->shown);
    wasi_sockets_network_error_code_t code;
    if (!wasi_sockets_tcp_create_socket_create_tcp_socket(family, &conn->socket, &code)) return socket_error(code, what);
    wasi_sockets_tcp_borrow_tcp_socket_t socket = wasi_sockets_tcp_borrow_tcp_socket(conn->socket);
    wharf_net_error result = WHARF_NET_OK;
    if (!wasi_sockets_tcp_method_tcp_socket_start_connect(socket, net, &remote, &code)) {
        result = socket_error(code, what);
    } else {
        for (;;) {
            wasi_sockets_tcp_tuple2_own_input_stream_own_output_stream_t streams;
            if (wasi_sockets_tcp_method_tcp_socket_finish_connect(socket, &streams, &code)) {
                conn->in = streams.f0;
                conn->out = streams.f1;
                conn->usable = true;
                return WHARF_NET_OK;
            }
            if (code != WASI_SOCKETS_NETWORK_ERROR_CODE_WOULD_BLOCK) {
                result = socket_error(code, what);
                break;
            }
            result = wait_on(wasi_sockets_tcp_method_tcp_socket_subscribe(socket), deadline, what);
            if (result != WHARF_NET_OK) break;
        }
    }
    wasi_sockets_tcp_tcp_socket_drop_own(conn->socket);
    return result;
}

wharf_net_error wharf_conn_open(const char *host, uint16_t port, uint32_t timeout_ms, wharf_conn **out) {
    *out = NULL;
    if (!host || strlen(host) >= sizeof((wharf_conn *)0)->host) {
        wharf_error("\"%s\" is not a host name", host ? host : "");
        return WHARF_NET_UNRESOLVED;
    }
    wharf_conn *conn = calloc(1, sizeof *conn);
    if (!conn) {
        wharf_error("out of memory connecting to %s:%u", host, port);
        return WHARF_NET_OTHER;
    }
    snprintf(conn->host, sizeof conn->host, "%s", host);
    uint64_t deadline = deadline_in(timeout_ms);
    /* Sockets outlive the network they were opened in: it is dropped on the way out. */
    wasi_sockets_network_own_network_t network = wasi_sockets_instance_network_instance_network();
    wasi_sockets_network_borrow_network_t net = wasi_sockets_network_borrow_network(network);
    wasi_sockets_network_ip_address_t addresses[WHARF_NET_MAX_ADDRESSES];
    size_t count = 0;
    wharf_net_error result = WHARF_NET_OK;
    if (ipv4_literal(host, &addresses[0])) {
        count = 1;
    } else {
        result = resolve(net, host, deadline, addresses, &count);
        if (result == WHARF_NET_OK && count == 0) {
            wharf_error("%s resolves to no address", host);
            result = WHARF_NET_UNRESOLVED;
        }
    }
    if (result == WHARF_NET_OK) {
        /* Each address in turn; the last failure stands if none answers. */
        for (size_t i = 0; i < count; i++) {
            result = connect_to(net, &addresses[i], port, deadline, conn);
            if (result == WHARF_NET_OK) break;
        }
    }
    wasi_sockets_network_network_drop_own(network);
    if (result != WHARF_NET_OK) {
        free(conn);
        return result;
    }
    *out = conn;
    return WHARF_NET_OK;
}

wharf_net_error wharf_conn_start_tls(wharf_conn *conn, const char *server_name, uint32_t timeout_ms) {
    if (conn->tls) {
        wharf_error("the connection to %s is already encrypted", conn->shown);
        return WHARF_NET_TLS;
    }
    if (!conn->usable) {
        wharf_error("the connection to %s is closed or unusable after a failed TLS handshake", conn->shown);
        return WHARF_NET_CLOSED;
    }
    const char *name = server_name ? server_name : conn->host;
    char what[300];
    snprintf(what, sizeof what, "the TLS handshake with %s", name);
    uint64_t deadline = deadline_in(timeout_ms);
    NW(string_t) wanted;
    NW(string_set)(&wanted, name);
    conn->usable = false; /* the handshake takes the plain streams */
    wasi_tls_types_own_future_client_streams_t future =
        wasi_tls_types_static_client_handshake_finish(wasi_tls_types_constructor_client_handshake(&wanted, conn->in, conn->out));
    wasi_tls_types_borrow_future_client_streams_t pending = wasi_tls_types_borrow_future_client_streams(future);
    wasi_tls_types_result_result_tuple3_own_client_connection_own_input_stream_own_output_stream_own_io_error_void_t outcome;
    wharf_net_error result = WHARF_NET_OK;
    while (!wasi_tls_types_method_future_client_streams_get(pending, &outcome)) {
        result = wait_on(wasi_tls_types_method_future_client_streams_subscribe(pending), deadline, what);
        if (result != WHARF_NET_OK) break;
    }
    if (result == WHARF_NET_OK) {
        if (outcome.is_err) {
            wharf_error("%s: its result was taken twice", what);
            result = WHARF_NET_TLS;
        } else if (outcome.val.ok.is_err) {
            char detail[1024];
            error_text(outcome.val.ok.val.err, detail, sizeof detail);
            wharf_error("%s", detail);
            result = WHARF_NET_TLS;
        } else {
            conn->tls_conn = outcome.val.ok.val.ok.f0;
            conn->in = outcome.val.ok.val.ok.f1;
            conn->out = outcome.val.ok.val.ok.f2;
            conn->tls = true;
            conn->usable = true;
        }
    }
    wasi_tls_types_future_client_streams_drop_own(future);
    return result;
}

bool wharf_conn_is_tls(const wharf_conn *conn) {
    return conn && conn->tls;
}

wharf_net_error wharf_conn_read(wharf_conn *conn, void *buf, size_t cap, uint32_t timeout_ms, size_t *n) {
    *n = 0;
    char what[96];
    snprintf(what, sizeof what, "reading from %s", conn->shown);
    if (!conn->usable) {
        wharf_error("%s: the connection is closed or unusable after a failed TLS handshake", what);
        return WHARF_NET_CLOSED;
    }
    if (cap == 0) return WHARF_NET_OK;
    uint64_t deadline = deadline_in(timeout_ms);
    wasi_io_streams_borrow_input_stream_t in = wasi_io_streams_borrow_input_stream(conn->in);
    uint64_t wanted = cap < WHARF_NET_MAX_READ_BYTES ? cap : WHARF_NET_MAX_READ_BYTES;
    for (;;) {
        NW(list_u8_t) data;
        wasi_io_streams_stream_error_t error;
        if (!wasi_io_streams_method_input_stream_read(in, wanted, &data, &error)) {
            if (error.tag == WASI_IO_STREAMS_STREAM_ERROR_CLOSED) return WHARF_NET_OK;
            return stream_error(&error, what);
        }
        if (data.len > 0) {
            size_t taken = data.len < cap ? data.len : cap;
            memcpy(buf, data.ptr, taken);
            *n = taken;
            NW(list_u8_free)(&data);
            return WHARF_NET_OK;
        }
        NW(list_u8_free)(&data);
        wharf_net_error result = wait_on(wasi_io_streams_method_input_stream_subscribe(in), deadline, what);
        if (result != WHARF_NET_OK) return result;
    }
}

wharf_net_error wharf_conn_write_all(wharf_conn *conn, const void *data, size_t len, uint32_t timeout_ms) {
    char what[96];
    snprintf(what, sizeof what, "writing to %s", conn->shown);
    if (!conn->usable) {
        wharf_error("%s: the connection is closed or unusable after a failed TLS handshake", what);
        return WHARF_NET_CLOSED;
    }
    uint64_t deadline = deadline_in(timeout_ms);
    wasi_io_streams_borrow_output_stream_t out = wasi_io_streams_borrow_output_stream(conn->out);
    const uint8_t *next = data;
    wasi_io_streams_stream_error_t error;
    wharf_net_error result;
    while (len > 0) {
        uint64_t permitted;
        if (!wasi_io_streams_method_output_stream_check_write(out, &permitted, &error)) return stream_error(&error, what);
        if (permitted == 0) {
            result = wait_on(wasi_io_streams_method_output_stream_subscribe(out), deadline, what);
            if (result != WHARF_NET_OK) return result;
            continue;
        }
        size_t chunk = len < permitted ? len : (size_t)permitted;
        NW(list_u8_t) bytes = {(uint8_t *)next, chunk};
        if (!wasi_io_streams_method_output_stream_write(out, &bytes, &error)) return stream_error(&error, what);
        next += chunk;
        len -= chunk;
    }
    if (!wasi_io_streams_method_output_stream_flush(out, &error)) return stream_error(&error, what);
    /* The flush is done when the stream accepts writes again. */
    for (;;) {
        uint64_t permitted;
        if (!wasi_io_streams_method_output_stream_check_write(out, &permitted, &error)) return stream_error(&error, what);
        if (permitted > 0) return WHARF_NET_OK;
        result = wait_on(wasi_io_streams_method_output_stream_subscribe(out), deadline, what);
        if (result != WHARF_NET_OK) return result;
    }
}

void wharf_conn_close(wharf_conn *conn) {
    if (!conn) return;
    if (conn->tls) wasi_tls_types_method_client_connection_close_output(wasi_tls_types_borrow_client_connection(conn->tls_conn));
    if (conn->usable) {
        wasi_io_streams_input_stream_drop_own(conn->in);
        wasi_io_streams_output_stream_drop_own(conn->out);
    }
    if (conn->tls) wasi_tls_types_client_connection_drop_own(conn->tls_conn);
    wasi_sockets_tcp_tcp_socket_drop_own(conn->socket);
    free(conn);
}
