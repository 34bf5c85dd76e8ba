//! `Connection` inside the sandbox: `wasi:sockets` for TCP, `wasi:io` polls bounded by a
//! monotonic-clock timer for every wait, and the host's `wasi:tls` for encryption.

use std::io;
use std::time::Duration;

use wasip2::clocks::monotonic_clock;
use wasip2::io::poll::{poll, Pollable};
use wasip2::io::streams::{InputStream, OutputStream, StreamError};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress, Network,
};
use wasip2::sockets::tcp::TcpSocket;

mod tls {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasi:tls/imports@0.2.0-draft",
        with: {
            "wasi:io/error@0.2.12": wasip2::io::error,
            "wasi:io/poll@0.2.12": wasip2::io::poll,
            "wasi:io/streams@0.2.12": wasip2::io::streams,
        },
    });
    pub use self::wasi::tls::types::*;
}

/// The most bytes one read asks the host for.
const MAX_READ_BYTES: usize = 64 << 10;

pub struct Connection {
    // Fields drop in this order: the streams, then the TLS connection they belong to, then the
    // socket the plain streams came from (the host refuses to drop a resource with children).
    streams: Option<(InputStream, OutputStream)>,
    tls: Option<tls::ClientConnection>,
    _socket: TcpSocket,
}

/// A monotonic-clock instant `timeout` from now.
fn deadline(timeout: Duration) -> u64 {
    monotonic_clock::now().saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX))
}

/// Waits until `pollable` is ready, or fails at `deadline` with `TimedOut`, saying what was
/// waited for.
fn wait(pollable: &Pollable, deadline: u64, what: &str) -> io::Result<()> {
    if !pollable.ready() {
        let timer = monotonic_clock::subscribe_instant(deadline);
        let ready = poll(&[pollable, &timer]);
        if !ready.contains(&0) {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out")));
        }
    }
    Ok(())
}

fn socket_error(code: ErrorCode, what: &str) -> io::Error {
    let kind = match code {
        ErrorCode::ConnectionRefused => io::ErrorKind::ConnectionRefused,
        ErrorCode::ConnectionReset => io::ErrorKind::ConnectionReset,
        ErrorCode::ConnectionAborted => io::ErrorKind::ConnectionAborted,
        ErrorCode::Timeout => io::ErrorKind::TimedOut,
        ErrorCode::AccessDenied | ErrorCode::NotSupported => io::ErrorKind::PermissionDenied,
        ErrorCode::NameUnresolvable | ErrorCode::TemporaryResolverFailure => io::ErrorKind::NotFound,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{what}: {}", code.message()))
}

fn stream_error(error: StreamError, what: &str) -> io::Error {
    match error {
        StreamError::Closed => io::Error::new(io::ErrorKind::BrokenPipe, format!("{what}: the connection is closed")),
        StreamError::LastOperationFailed(e) => {
            io::Error::new(io::ErrorKind::ConnectionReset, format!("{what}: {}", e.to_debug_string()))
        }
    }
}

fn unusable() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the connection is unusable after a failed TLS handshake")
}

impl Connection {
    pub fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<Connection> {
        let until = deadline(timeout);
        let network = instance_network();
        let addresses = match host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(ip)) => {
                let [a, b, c, d] = ip.octets();
                vec![IpAddress::Ipv4((a, b, c, d))]
            }
            Ok(std::net::IpAddr::V6(ip)) => {
                let s = ip.segments();
                vec![IpAddress::Ipv6((s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]))]
            }
            Err(_) => resolve(&network, host, until)?,
        };
        let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} resolves to no address"));
        for address in addresses {
            match connect_to(&network, address, port, until) {
                Ok(connection) => return Ok(connection),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    pub fn start_tls(&mut self, server_name: &str, timeout: Duration) -> io::Result<()> {
        if self.tls.is_some() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the connection is already encrypted"));
        }
        let (input, output) = self.streams.take().ok_or_else(unusable)?;
        let until = deadline(timeout);
        let handshake = tls::ClientHandshake::new(server_name, input, output);
        let future = tls::ClientHandshake::finish(handshake);
        let pollable = future.subscribe();
        let outcome = loop {
            match future.get() {
                Some(Ok(outcome)) => break outcome,
                Some(Err(())) => return Err(io::Error::other("the TLS handshake's result was taken twice")),
                None => wait(&pollable, until, &format!("the TLS handshake with {server_name}"))?,
            }
        };
        drop(pollable);
        match outcome {
            Ok((connection, input, output)) => {
                self.streams = Some((input, output));
                self.tls = Some(connection);
                Ok(())
            }
            Err(e) => Err(io::Error::new(io::ErrorKind::ConnectionAborted, e.to_debug_string())),
        }
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    pub fn read(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let (input, _) = self.streams.as_ref().ok_or_else(unusable)?;
        let until = deadline(timeout);
        let wanted = buf.len().min(MAX_READ_BYTES) as u64;
        loop {
            match input.read(wanted) {
                Ok(bytes) if !bytes.is_empty() => {
                    let n = bytes.len().min(buf.len());
                    buf[..n].copy_from_slice(&bytes[..n]);
                    return Ok(n);
                }
                Ok(_) => wait(&input.subscribe(), until, "reading from the server")?,
                Err(StreamError::Closed) => return Ok(0),
                Err(e) => return Err(stream_error(e, "reading from the server")),
            }
        }
    }

    pub fn write(&mut self, buf: &[u8], timeout: Duration) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let (_, output) = self.streams.as_ref().ok_or_else(unusable)?;
        let until = deadline(timeout);
        loop {
            match output.check_write() {
                Ok(0) => wait(&output.subscribe(), until, "writing to the server")?,
                Ok(permitted) => {
                    let n = buf.len().min(usize::try_from(permitted).unwrap_or(usize::MAX));
                    output.write(&buf[..n]).map_err(|e| stream_error(e, "writing to the server"))?;
                    return Ok(n);
                }
                Err(e) => return Err(stream_error(e, "writing to the server")),
            }
        }
    }

    pub fn flush(&mut self, timeout: Duration) -> io::Result<()> {
        let (_, output) = self.streams.as_ref().ok_or_else(unusable)?;
        let until = deadline(timeout);
        output.flush().map_err(|e| stream_error(e, "sending to the server"))?;
        // The flush is done when the stream accepts writes again.
        loop {
            match output.check_write() {
                Ok(0) => wait(&output.subscribe(), until, "sending to the server")?,
                Ok(_) => return Ok(()),
                Err(e) => return Err(stream_error(e, "sending to the server")),
            }
        }
    }
}

/// The addresses `host` resolves to, at most `MAX_ADDRESSES`.
fn resolve(network: &Network, host: &str, until: u64) -> io::Result<Vec<IpAddress>> {
    let what = format!("resolving {host}");
    let lookup =
        wasip2::sockets::ip_name_lookup::resolve_addresses(network, host).map_err(|code| socket_error(code, &what))?;
    let mut addresses = Vec::new();
    loop {
        match lookup.resolve_next_address() {
            Ok(Some(address)) if addresses.len() < super::MAX_ADDRESSES => addresses.push(address),
            Ok(Some(_)) => {}
            Ok(None) => return Ok(addresses),
            Err(ErrorCode::WouldBlock) => wait(&lookup.subscribe(), until, &what)?,
            Err(code) => return Err(socket_error(code, &what)),
        }
    }
}

fn connect_to(network: &Network, address: IpAddress, port: u16, until: u64) -> io::Result<Connection> {
    let (family, remote) = match address {
        IpAddress::Ipv4(address) => (IpAddressFamily::Ipv4, IpSocketAddress::Ipv4(Ipv4SocketAddress { port, address })),
        IpAddress::Ipv6(address) => (
            IpAddressFamily::Ipv6,
            IpSocketAddress::Ipv6(Ipv6SocketAddress { port, flow_info: 0, address, scope_id: 0 }),
        ),
    };
    let shown = match address {
        IpAddress::Ipv4((a, b, c, d)) => format!("{a}.{b}.{c}.{d}:{port}"),
        IpAddress::Ipv6(s) => {
            let ip = std::net::Ipv6Addr::new(s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7);
            format!("[{ip}]:{port}")
        }
    };
    let what = format!("connecting to {shown}");
    let socket = wasip2::sockets::tcp_create_socket::create_tcp_socket(family).map_err(|c| socket_error(c, &what))?;
    socket.start_connect(network, remote).map_err(|c| socket_error(c, &what))?;
    loop {
        match socket.finish_connect() {
            Ok((input, output)) => {
                return Ok(Connection { streams: Some((input, output)), tls: None, _socket: socket })
            }
            Err(ErrorCode::WouldBlock) => wait(&socket.subscribe(), until, &what)?,
            Err(code) => return Err(socket_error(code, &what)),
        }
    }
}
