//! The socket to a database: each address of the granted name tried in turn, each within a
//! deadline, and reads and writes under one too, so that a silent network fails a call as a
//! lost connection (retried) instead of running it into the worker's call deadline.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Opens a connection to `address` (`host:port`); `what` names the database in messages.
pub fn open(address: &str, timeout: Duration, what: &str) -> Result<TcpStream, String> {
    let addresses = address
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {address} for {what}: {e}; check the host in connection.url"))?;
    let mut last = format!("{address} resolves to no address");
    for socket in addresses {
        match TcpStream::connect_timeout(&socket, timeout) {
            Ok(stream) => {
                // A platform without socket timeouts keeps blocking reads: the call's deadline
                // still ends them.
                let _ = stream.set_read_timeout(Some(timeout));
                let _ = stream.set_write_timeout(Some(timeout));
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = format!("{socket}: {e}"),
        }
    }
    Err(format!(
        "cannot connect to {what} at {address} ({last}); check that the server runs there and that connection.url names it"
    ))
}
