//! `Connection` outside the sandbox: a std TCP stream, without TLS.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

pub struct Connection {
    stream: TcpStream,
}

impl Connection {
    pub fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<Connection> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} resolves to no address"));
        for address in (host, port).to_socket_addrs()?.take(super::MAX_ADDRESSES) {
            match TcpStream::connect_timeout(&address, timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(Connection { stream });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    pub fn start_tls(&mut self, _server_name: &str, _timeout: Duration) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "TLS comes from the host's wasi:tls, inside the sandbox: this build runs outside it",
        ))
    }

    pub fn is_tls(&self) -> bool {
        false
    }

    pub fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        self.stream.read(buf)
    }

    pub fn write(&mut self, buf: &[u8], timeout: Duration) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        self.stream.write(buf)
    }

    pub fn flush(&mut self, _timeout: Duration) -> io::Result<()> {
        self.stream.flush()
    }
}
