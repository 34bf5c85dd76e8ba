//! Connections to the servers a connector's config grants: TCP with a deadline on every wait
//! (connecting, reading, writing), and TLS started over an open connection, as databases ask
//! (PostgreSQL's SSLRequest, MySQL's and MariaDB's SSL packet) or from the first byte.
//!
//! Inside the sandbox the connection goes through `wasi:sockets` and TLS through the host's
//! `wasi:tls`: the host runs the handshake and verifies the server's certificate as the
//! connector's config asks (for a JDBC URL: `sslmode`, `sslrootcert`, `serverSslCert`, …; for
//! any other server: a chain to the public authorities, naming the server). A plugin names the
//! server; it cannot loosen the check. Built natively (a plugin's unit tests), a `Connection`
//! is a plain TCP stream and [`Connection::start_tls`] fails.
//!
//! ```no_run
//! use std::io::{Read, Write};
//! use std::time::Duration;
//! use wharf_sdk::net::Connection;
//!
//! # fn main() -> std::io::Result<()> {
//! let mut connection = Connection::connect("db.example.com", 5432, Duration::from_secs(10))?;
//! connection.write_all(&[0, 0, 0, 8, 4, 210, 22, 47])?; // PostgreSQL's SSLRequest
//! let mut answer = [0u8; 1];
//! connection.read_exact(&mut answer)?;
//! if answer[0] == b'S' {
//!     connection.start_tls("db.example.com")?;
//! }
//! # Ok(())
//! # }
//! ```

use std::io;
use std::time::Duration;

#[cfg(target_os = "wasi")]
#[path = "net/wasi.rs"]
mod imp;
#[cfg(not(target_os = "wasi"))]
#[path = "net/native.rs"]
mod imp;

/// The most addresses of one name tried.
pub const MAX_ADDRESSES: usize = 16;

/// A TCP connection, plain or encrypted, whose every wait ends at the connection's timeout.
pub struct Connection {
    inner: imp::Connection,
    timeout: Duration,
}

impl Connection {
    /// Connects to `host` (a name, or an IPv4 or IPv6 address) at `port`: each address the name
    /// resolves to in turn, until one answers, all within `timeout`. Later reads and writes each
    /// wait at most `timeout` too ([`Connection::set_timeout`] changes it).
    pub fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<Connection> {
        let inner = imp::Connection::connect(host.trim_matches(['[', ']']), port, timeout)?;
        Ok(Connection { inner, timeout })
    }

    /// How long each read, write or handshake may wait from now on.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// How long each read, write or handshake may wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Starts TLS over the connection: what is read and written from here on is encrypted. The
    /// host verifies the server's certificate as the connector's config asks for
    /// `server_name` (the host name the config gives). Nothing the server sent before may be
    /// left unread. After a failed handshake the connection is unusable: open a new one.
    pub fn start_tls(&mut self, server_name: &str) -> io::Result<()> {
        self.inner.start_tls(server_name.trim_matches(['[', ']']), self.timeout)
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

impl io::Read for Connection {
    /// Reads what has arrived, waiting at most the timeout for the first byte; `Ok(0)` when the
    /// server closed the connection, `TimedOut` when nothing came.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf, self.timeout)
    }
}

impl io::Write for Connection {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf, self.timeout)
    }

    /// Returns once what was written has left, waiting at most the timeout.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush(self.timeout)
    }
}
