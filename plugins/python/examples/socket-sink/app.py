"""socket-sink: writes every record as one JSON line ({"topic", "partition", "offset", "key",
"value"}) to a TCP server, over TLS when `tls` is true: the input of Logstash's `tcp` codec
json_lines, Vector's and Fluent Bit's `socket`/`tcp` sources, or any line-reading service.

`put` writes its batch and returns once the worker has passed the bytes on; a failed connection
is closed and the batch retried on a new one (the host delivers it again), so nothing is lost,
and a line may arrive twice after a reconnect. Certificates are checked by the worker: against
the authorities in the connector's `wasm.tls.trust`, or the public ones, and the server's name."""

import json

from wharf_sdk import ConfigKey, RetriableError, log
from wharf_sdk.net import Connection, connection_grants
from wharf_sdk.sink import SinkConnector, SinkTask, export


def text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def plain(value):
    """What json cannot write by itself: decimals, dates and times as their text, bytes as text."""
    if isinstance(value, bytes):
        return text(value)
    return str(value)


def address_of(value):
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address={value!r} is not HOST:PORT, e.g. logs.example.com:5170")
    return host.strip("[]"), int(port)


class SocketSinkTask(SinkTask):
    def open(self, config):
        self.host, self.port = address_of(config["address"])
        self.tls = config.get("tls", "false").strip().lower() == "true"
        self.server_name = config.get("tls.server.name", "").strip() or None  # None: the host
        self.timeout = int(config.get("timeout.ms", "10000")) / 1000
        self.conn = None

    def connection(self):
        if self.conn is None:
            conn = Connection.connect(self.host, self.port, timeout=self.timeout)
            try:
                if self.tls:
                    conn.start_tls(self.server_name, timeout=self.timeout)
            except BaseException:
                conn.close()
                raise
            log("info", f"connected to {self.host}:{self.port}{' over TLS' if conn.is_tls else ''}")
            self.conn = conn
        return self.conn

    def put(self, records):
        lines = []
        for r in records:
            line = {"topic": r.topic, "partition": r.partition, "offset": r.offset, "key": text(r.key), "value": text(r.value)}
            lines.append(json.dumps(line, separators=(",", ":"), default=plain) + "\n")
        if not lines:
            return
        try:
            self.connection().write_all("".join(lines).encode("utf-8"), timeout=self.timeout)
        except (ConnectionError, TimeoutError, OSError) as e:
            if self.conn is not None:
                self.conn.close()
                self.conn = None
            raise RetriableError(f"writing {len(lines)} records to {self.host}:{self.port}: {e}") from None

    def flush(self, offsets):
        pass

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class SocketSink(SinkConnector):
    name = "socket-sink"
    version = "0.1.0"
    description = "Writes records as JSON lines to a TCP server, over TLS if asked (Python example)"
    config = [
        ConfigKey("address", required=True, importance="high", doc="HOST:PORT of the server; granted for TCP connections."),
        ConfigKey("tls", type="boolean", default="false", importance="high", doc="Whether to encrypt the connection with TLS."),
        ConfigKey("tls.server.name", default="", doc="The name the server's certificate must hold; the host of address when empty."),
        ConfigKey("timeout.ms", type="long", default="10000", doc="How long connecting, the handshake and each write may take."),
    ]
    grants = [("address", "host-port")]
    task = SocketSinkTask

    def validate(self, config):
        try:
            address_of(config.get("address", ""))
        except ValueError as e:
            return [("address", str(e))]
        return []


# The names of the `data-sink-with-net` world's exports (the file `world` names it).
Connector, DataSinkTask, Grants = export(SocketSink)
ConnectionGrants = connection_grants(SocketSink)
from wharf_sdk.sink import Task  # noqa: F401
