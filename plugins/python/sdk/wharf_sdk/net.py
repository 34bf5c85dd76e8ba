"""TCP connections with deadlines, and TLS through the worker, for plugins built for the
`data-source-with-net` and `data-sink-with-net` worlds (`wit/net.wit`).

    from wharf_sdk.net import Connection

    with Connection.connect("db.example.com", 5432, timeout=10) as conn:
        conn.start_tls()                      # optional: the worker runs the handshake
        conn.write_all(b"hello\\n")
        reply = conn.read_line(timeout=5)

A plugin may connect only to the addresses its connector's config grants (`wasm.net.connect`, or
keys the connector declares in `grants` or `connections`). What a server's certificate must prove
is the worker's decision, not the plugin's: a JDBC URL's `sslmode` for the servers it names,
otherwise a chain to the authorities in `wasm.tls.trust` (the public ones without it) and the
server's name.

Every wait has a deadline: a call that cannot finish in `timeout` seconds raises `TimeoutError`
and leaves the connection as it was (a read may be tried again). Errors are Python's own:
`ConnectionRefusedError`, `ConnectionResetError`, `BrokenPipeError`, `PermissionError` (an
address the connector was not granted), `ConnectionError` for the rest, each saying what was
being done and to which server. Connect only from a task's calls (`open`, `put`, `poll`, ...):
there is no network while the plugin is being built.
"""

import ipaddress
from typing import List, Optional

__all__ = ["Connection", "connection_grants"]

# The most bytes one read asks the host for.
MAX_READ_BYTES = 64 * 1024
# The most addresses a host name's lookup is tried at.
MAX_ADDRESSES = 16
# The longest line `read_line` gathers unless told otherwise.
MAX_LINE_BYTES = 1024 * 1024


# Imported when the plugin is built, as every module its app imports: componentize-py bundles
# the generated bindings a build imports.
from componentize_py_types import Err  # noqa: E402
from wit_world.imports import (  # noqa: E402
    error,  # noqa: F401  (the class of a failed stream's or handshake's error)
    instance_network,
    ip_name_lookup,
    monotonic_clock,
    network,
    poll,
    streams,
    tcp,  # noqa: F401  (the socket resource's class)
    tcp_create_socket,
)

try:
    from wit_world.imports import tls
except ImportError:
    # Built without `--import-interface-name 'wasi:tls/types@0.2.0-draft=tls'`.
    from wit_world.imports import wasi_tls_types as tls


def _deadline(timeout: float) -> int:
    return monotonic_clock.now() + max(0, int(timeout * 1_000_000_000))


def _wait(pollable, deadline: int, what: str) -> None:
    """Waits until `pollable` is ready, or raises TimeoutError at `deadline` saying what for."""
    if pollable.ready():
        return
    with monotonic_clock.subscribe_instant(deadline) as timer:
        ready = poll.poll([pollable, timer])
    if 0 not in ready:
        raise TimeoutError(f"{what} timed out")


_SOCKET_ERRORS = {
    "CONNECTION_REFUSED": ConnectionRefusedError,
    "CONNECTION_RESET": ConnectionResetError,
    "CONNECTION_ABORTED": ConnectionAbortedError,
    "TIMEOUT": TimeoutError,
    "ACCESS_DENIED": PermissionError,
    "NOT_SUPPORTED": PermissionError,
}


def _socket_error(code, what: str) -> Exception:
    name = getattr(code, "name", str(code))
    kind = _SOCKET_ERRORS.get(name, ConnectionError)
    if name == "ACCESS_DENIED":
        detail = "not granted to this connector (wasm.net.connect, or a key the plugin declares)"
    else:
        detail = name.lower().replace("_", " ")
    return kind(f"{what}: {detail}")


def _error_text(failure) -> str:
    """The message of a `wasi:io` error, which is dropped."""
    with failure:
        return failure.to_debug_string()


def _stream_error(error, what: str) -> Exception:
    if isinstance(error, streams.StreamError_Closed):
        return BrokenPipeError(f"{what}: the connection is closed")
    return ConnectionResetError(f"{what}: {_error_text(error.value)}")


class Connection:
    """One TCP connection, perhaps encrypted. Close it (or use `with`) when done: the worker
    counts a task's open connections."""

    def __init__(self, socket, input, output, host: str, shown: str):
        self._socket = socket
        self._streams = (input, output)
        self._tls = None
        self._host = host  # as given to `connect`: the name TLS verifies by default
        self._shown = shown  # the address connected to, for messages
        self._buffer = b""

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def connect(cls, host: str, port: int, timeout: float = 30.0) -> "Connection":
        """Opens a connection to `host` (a name or an IP address) at `port`, trying each address
        the name resolves to in turn, all within `timeout` seconds."""
        deadline = _deadline(timeout)
        # Sockets outlive the network they were opened in: it is dropped on the way out.
        net = instance_network.instance_network()
        try:
            addresses = _literal(host)
            if addresses is None:
                addresses = _resolve(net, host, deadline)
            last: Exception = ConnectionError(f"{host} resolves to no address")
            for address in addresses:
                try:
                    return _connect_to(cls, net, address, host, port, deadline)
                except (ConnectionError, TimeoutError, PermissionError) as e:
                    last = e
            raise last
        finally:
            net.__exit__(None, None, None)

    def start_tls(self, server_name: Optional[str] = None, timeout: float = 30.0) -> None:
        """Encrypts the connection: the worker runs a TLS handshake over it with `server_name`
        (the host connected to, by default) under the policy the connector's config sets. Bytes
        already read and not yet returned are refused: a server must not send any before it."""
        if self._tls is not None:
            raise ValueError("the connection is already encrypted")
        if self._buffer:
            raise ConnectionError("the server sent bytes before the TLS handshake; refusing to start it")
        input, output = self._usable()
        name = server_name or self._host.strip("[]")
        self._streams = None
        deadline = _deadline(timeout)
        future = tls.ClientHandshake.finish(tls.ClientHandshake(name, input, output))
        try:
            with future.subscribe() as pollable:
                while True:
                    outcome = future.get()
                    if outcome is not None:
                        break
                    _wait(pollable, deadline, f"the TLS handshake with {name}")
            inner = getattr(outcome, "value", outcome)
            if isinstance(outcome, Err) or inner is None:
                raise ConnectionError("the TLS handshake's result was taken twice")
            if isinstance(inner, Err):
                raise ConnectionAbortedError(_error_text(inner.value))
            connection, input, output = getattr(inner, "value", inner)
        finally:
            future.__exit__(None, None, None)
        self._tls = connection
        self._streams = (input, output)

    @property
    def is_tls(self) -> bool:
        return self._tls is not None

    # -- reading and writing -----------------------------------------------------------------

    def read(self, max_bytes: int = MAX_READ_BYTES, timeout: float = 30.0) -> bytes:
        """Up to `max_bytes` bytes as soon as any arrive; `b""` when the server closed the
        connection."""
        if self._buffer:
            data, self._buffer = self._buffer[:max_bytes], self._buffer[max_bytes:]
            return data
        return self._read(max_bytes, _deadline(timeout))

    def read_exactly(self, n: int, timeout: float = 30.0) -> bytes:
        """Exactly `n` bytes; `EOFError` if the server closes the connection before."""
        deadline = _deadline(timeout)
        while len(self._buffer) < n:
            more = self._read(min(MAX_READ_BYTES, max(n - len(self._buffer), 1)), deadline)
            if not more:
                raise EOFError(f"{self._shown} closed the connection after {len(self._buffer)} of {n} bytes")
            self._buffer += more
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def read_line(self, timeout: float = 30.0, max_bytes: int = MAX_LINE_BYTES) -> Optional[bytes]:
        """The next line, without its `\\n` (nor a `\\r` before it); `None` when the server closed
        the connection (a last line without `\\n` is returned first). A line longer than
        `max_bytes` raises `ValueError`. On `TimeoutError` what arrived is kept for the next call."""
        deadline = _deadline(timeout)
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._buffer) > max_bytes:
                raise ValueError(f"{self._shown} sent a line longer than {max_bytes} bytes")
            searched = len(self._buffer)
            more = self._read(MAX_READ_BYTES, deadline)
            if not more:
                line, self._buffer = self._buffer, b""
                return line or None
            self._buffer += more

    def write_all(self, data: bytes, timeout: float = 30.0) -> None:
        """Sends every byte of `data` and waits until the worker has passed them on."""
        _, output = self._usable()
        deadline = _deadline(timeout)
        view = memoryview(bytes(data))
        what = f"writing to {self._shown}"
        try:
            while view:
                permitted = output.check_write()
                if permitted == 0:
                    with output.subscribe() as pollable:
                        _wait(pollable, deadline, what)
                    continue
                n = min(len(view), permitted)
                output.write(bytes(view[:n]))
                view = view[n:]
            output.flush()
            while output.check_write() == 0:
                with output.subscribe() as pollable:
                    _wait(pollable, deadline, what)
        except Err as e:
            raise _stream_error(e.value, what) from None

    def close(self) -> None:
        """Closes the connection (sending TLS's close notice first when encrypted). Never
        raises."""
        streams, self._streams = self._streams, None
        connection, self._tls = self._tls, None
        # A resource may not be dropped before those made from it: streams, then the TLS
        # connection, then the socket.
        if connection is not None:
            try:
                connection.close_output()
            except Exception:
                pass
        for resource in [*(streams or ()), connection, self._socket]:
            if resource is not None:
                try:
                    resource.__exit__(None, None, None)
                except Exception:
                    pass
        self._socket = None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Connection({self._shown}{', TLS' if self._tls else ''})"

    # -- inside -------------------------------------------------------------------------------

    def _usable(self):
        if self._streams is None:
            raise ConnectionError(f"the connection to {self._shown} is closed or unusable after a failed TLS handshake")
        return self._streams

    def _read(self, max_bytes: int, deadline: int) -> bytes:
        input, _ = self._usable()
        what = f"reading from {self._shown}"
        while True:
            try:
                data = input.read(max(1, min(max_bytes, MAX_READ_BYTES)))
            except Err as e:
                if isinstance(e.value, streams.StreamError_Closed):
                    return b""
                raise _stream_error(e.value, what) from None
            if data:
                return data
            with input.subscribe() as pollable:
                _wait(pollable, deadline, what)


def _literal(host: str):
    """`host` as an address when it is an IP address, else None."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if ip.version == 4:
        return [network.IpAddress_Ipv4(tuple(ip.packed))]
    words = ip.packed
    return [network.IpAddress_Ipv6(tuple(int.from_bytes(words[i : i + 2], "big") for i in range(0, 16, 2)))]


def _resolve(net, host: str, deadline: int) -> List:
    what = f"resolving {host}"
    try:
        lookup = ip_name_lookup.resolve_addresses(net, host)
    except Err as e:
        raise _socket_error(e.value, what) from None
    addresses = []
    with lookup:
        while True:
            try:
                address = lookup.resolve_next_address()
            except Err as e:
                if getattr(e.value, "name", "") == "WOULD_BLOCK":
                    with lookup.subscribe() as pollable:
                        _wait(pollable, deadline, what)
                    continue
                raise _socket_error(e.value, what) from None
            if address is None:
                return addresses
            if len(addresses) < MAX_ADDRESSES:
                addresses.append(address)


def _connect_to(cls, net, address, host: str, port: int, deadline: int) -> Connection:
    if isinstance(address, network.IpAddress_Ipv4):
        family = network.IpAddressFamily.IPV4
        remote = network.IpSocketAddress_Ipv4(network.Ipv4SocketAddress(port=port, address=address.value))
        shown = ".".join(str(b) for b in address.value) + f":{port}"
    else:
        family = network.IpAddressFamily.IPV6
        remote = network.IpSocketAddress_Ipv6(
            network.Ipv6SocketAddress(port=port, flow_info=0, address=address.value, scope_id=0)
        )
        shown = "[" + ":".join(f"{word:x}" for word in address.value) + f"]:{port}"
    what = f"connecting to {shown}"
    try:
        socket = tcp_create_socket.create_tcp_socket(family)
    except Err as e:
        raise _socket_error(e.value, what) from None
    try:
        socket.start_connect(net, remote)
        while True:
            try:
                input, output = socket.finish_connect()
                return cls(socket, input, output, host, shown)
            except Err as e:
                if getattr(e.value, "name", "") != "WOULD_BLOCK":
                    raise
                with socket.subscribe() as pollable:
                    _wait(pollable, deadline, what)
    except Err as e:
        socket.__exit__(None, None, None)
        raise _socket_error(e.value, what) from None
    except BaseException:
        socket.__exit__(None, None, None)
        raise


def connection_grants(connector_class):
    """The class for the `connection-grants` export of the `*-with-net` worlds, from the
    connector's `connections`: a list of `("jdbc-url", key)` and
    `("host-and-port", host_key, port_key, default_port)` entries.

        ConnectionGrants = connection_grants(MySink)
    """
    from wit_world import exports
    from wit_world.exports import connection_grants as api

    class ConnectionGrants(exports.ConnectionGrants):
        def declare(self):
            declared = []
            for entry in getattr(connector_class, "connections", []):
                if entry[0] == "jdbc-url" and len(entry) == 2:
                    declared.append(api.ConnectionGrant_JdbcUrl(entry[1]))
                elif entry[0] == "host-and-port" and len(entry) == 4:
                    declared.append(
                        api.ConnectionGrant_HostAndPort(
                            api.HostAndPort(host_key=entry[1], port_key=entry[2], default_port=int(entry[3]))
                        )
                    )
                else:
                    raise ValueError(
                        f"connections: {entry!r}; use (\"jdbc-url\", key) or "
                        "(\"host-and-port\", host_key, port_key, default_port)"
                    )
            return declared

    return ConnectionGrants
