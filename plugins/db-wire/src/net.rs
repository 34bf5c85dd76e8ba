//! The connection to a database: the SDK's [`Connection`] (each address of the granted name
//! tried in turn, every wait under a deadline, so that a silent network fails a call as a lost
//! connection, retried, instead of running it into the worker's call deadline), and TLS started
//! over it as the URL asks.

use std::io::BufReader;
use std::time::Duration;

use wharf_jdbc_url::TlsMode;
pub use wharf_sdk::net::Connection;

/// Where and how to connect.
#[derive(Clone, Copy)]
pub struct Endpoint<'a> {
    pub host: &'a str,
    pub port: u16,
    /// `host:port`, for messages.
    pub address: &'a str,
    pub tls: TlsMode,
    /// The URL property that set `tls`, with its value, for messages: `sslmode=require`.
    pub tls_setting: &'a str,
    /// The config key(s) that name the server, for messages: `connection.url`.
    pub server_key: &'a str,
}

/// Opens a connection to `endpoint`; `what` names the database in messages.
pub fn open(endpoint: &Endpoint<'_>, timeout: Duration, what: &str) -> Result<Connection, String> {
    Connection::connect(endpoint.host, endpoint.port, timeout).map_err(|e| {
        format!(
            "cannot connect to {what} at {} ({e}); check that the server runs there and that {} names it",
            endpoint.address, endpoint.server_key
        )
    })
}

/// Why TLS did not start: `Err(true, …)` when trying again may mend it (a timeout), `Err(false,
/// …)` when it needs a person (a certificate the policy refuses, a server without TLS).
pub type TlsFailure = (bool, String);

/// Starts TLS over `reader`'s connection once the server agreed to it. Nothing the server sent
/// may be waiting unread: bytes before the handshake would be trusted as if encrypted.
pub fn start_tls(reader: &mut BufReader<Connection>, endpoint: &Endpoint<'_>, what: &str) -> Result<(), TlsFailure> {
    if !reader.buffer().is_empty() {
        return Err((
            false,
            format!(
                "{what} at {} sent data before the TLS handshake began, which a server must not; the connection was \
                 closed",
                endpoint.address
            ),
        ));
    }
    reader.get_mut().start_tls(endpoint.host).map_err(|e| {
        let transient = e.kind() == std::io::ErrorKind::TimedOut;
        (transient, format!("TLS with {what} at {} ({}) failed: {e}", endpoint.address, endpoint.tls_setting))
    })
}

/// The message when the server has no TLS and the URL requires it.
pub fn no_tls(endpoint: &Endpoint<'_>, what: &str, server_setting: &str) -> String {
    format!(
        "{what} at {} does not offer TLS, and {} requires it ({}); turn TLS on in the server \
         ({server_setting}), or ask for it only when offered",
        endpoint.address, endpoint.server_key, endpoint.tls_setting
    )
}
