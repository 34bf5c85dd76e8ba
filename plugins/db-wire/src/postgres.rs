//! PostgreSQL's frontend/backend protocol (version 3), as much of it as a sink and a change data
//! capture source need: start-up and authentication (SCRAM-SHA-256, MD5, cleartext), simple
//! queries, the extended protocol with text parameters, and the streaming replication protocol
//! (`START_REPLICATION` and the `CopyBoth` messages inside it). Over the sandbox's TCP sockets;
//! no host-side database code.

use std::io::{BufReader, Read, Write};

use crate::net::Connection as Socket;
use crate::Login;
use wharf_jdbc_url::TlsMode;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The largest backend message read: a sink reads only small answers (table definitions, command
/// tags), and a change event or snapshot row larger than this is refused with this bound named.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// The most rows a query's answer may hold here (a table's columns, say).
const MAX_ROWS: usize = 100_000;
/// Notices kept from one statement, for the log.
const MAX_NOTICES: usize = 16;
/// Statements sent ahead of the next one at most; another is run at once.
const MAX_AHEAD: u8 = 4;

/// Why a call failed: the connection (lost, refused, a protocol error: connect again), or the
/// server refused the statement (the connection stays usable).
#[derive(Debug, Clone)]
pub enum PgError {
    Connection(String),
    /// The server refused the user, the password or the database, or TLS could not be had as the
    /// URL asks: retrying does not mend it.
    SignIn(String),
    /// The server refused this connection's sign-in with SQLSTATE 28000 (pg_hba.conf has no
    /// line for it, or refuses it): `sslmode=allow` tries again over TLS.
    NotAuthorized(String),
    Server(ServerError),
}

/// An `ErrorResponse`: its SQLSTATE and messages.
#[derive(Debug, Clone, Default)]
pub struct ServerError {
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgError::Connection(m) | PgError::SignIn(m) | PgError::NotAuthorized(m) => f.write_str(m),
            PgError::Server(e) => {
                write!(f, "{} (SQLSTATE {})", e.message, e.code)?;
                if let Some(detail) = &e.detail {
                    write!(f, "; {detail}")?;
                }
                if let Some(hint) = &e.hint {
                    write!(f, "; hint: {hint}")?;
                }
                Ok(())
            }
        }
    }
}

impl PgError {
    /// Whether trying again later may succeed: the connection, a timeout, a lock, a deadlock,
    /// a serialization failure, the server short of resources or shutting down.
    pub fn is_transient(&self) -> bool {
        match self {
            PgError::Connection(_) => true,
            PgError::SignIn(_) | PgError::NotAuthorized(_) => false,
            PgError::Server(e) => {
                let class = e.code.get(..2).unwrap_or("");
                matches!(class, "08" | "53" | "57") || matches!(e.code.as_str(), "40001" | "40P01" | "55P03" | "55006")
            }
        }
    }
}

fn lost(what: &str, e: std::io::Error) -> PgError {
    PgError::Connection(format!("the connection to PostgreSQL was lost while {what}: {e}"))
}

/// One open connection.
pub struct Connection {
    /// The socket, read through a buffer; writes go to it through `out`.
    reader: BufReader<Socket>,
    /// Messages not sent yet.
    out: Vec<u8>,
    /// Simple statements sent ahead (`run_ahead`) whose answers come before the next one's.
    ahead: u8,
    /// Notices of the last statement.
    pub notices: Vec<String>,
    /// `server_version`, as the server reported it.
    pub server_version: String,
}

/// A query's answer: its rows, each column as text (none for NULL).
pub type Rows = Vec<Vec<Option<String>>>;

impl Connection {
    /// Connects and signs in, with TLS as the URL's `sslmode` asks: `prefer` (pgjdbc's
    /// default) asks the server for TLS and goes on in plaintext when it has none; `allow` signs
    /// in in plaintext and, when the server refuses that, again over TLS.
    pub fn connect(login: &Login<'_>) -> Result<Connection, PgError> {
        match login.endpoint.tls {
            TlsMode::Allow => match Connection::open(login, false) {
                Err(PgError::NotAuthorized(_)) => Connection::open(login, true),
                other => other,
            },
            mode => Connection::open(login, mode.asks_first()),
        }
    }

    fn open(login: &Login<'_>, ask_for_tls: bool) -> Result<Connection, PgError> {
        let stream = crate::net::open(&login.endpoint, login.timeout, "PostgreSQL").map_err(PgError::Connection)?;
        let mut connection = Connection {
            reader: BufReader::with_capacity(64 * 1024, stream),
            out: Vec::with_capacity(64 * 1024),
            ahead: 0,
            notices: Vec::new(),
            server_version: String::new(),
        };
        if ask_for_tls {
            connection.ask_for_tls(login)?;
        }
        connection.start(login)?;
        Ok(connection)
    }

    /// Sends the SSLRequest and, on 'S', starts TLS; on 'N' goes on in plaintext unless the
    /// URL requires TLS.
    fn ask_for_tls(&mut self, login: &Login<'_>) -> Result<(), PgError> {
        // Length 8, then the code 80877103.
        self.out.extend_from_slice(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
        self.flush()?;
        let mut answer = [0u8; 1];
        self.reader.read_exact(&mut answer).map_err(|e| lost("reading the answer to its request for TLS", e))?;
        match answer[0] {
            b'S' => crate::net::start_tls(&mut self.reader, &login.endpoint, "PostgreSQL").map_err(
                |(transient, message)| if transient { PgError::Connection(message) } else { PgError::SignIn(message) },
            ),
            b'N' if login.endpoint.tls.required() => Err(PgError::SignIn(crate::net::no_tls(
                &login.endpoint,
                "PostgreSQL",
                "ssl=on, ssl_cert_file, ssl_key_file",
            ))),
            b'N' => Ok(()),
            other => Err(PgError::Connection(format!(
                "PostgreSQL at {} answered the request for TLS with {other:#04x}, neither S nor N",
                login.address
            ))),
        }
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        self.reader.get_ref().is_tls()
    }

    fn start(&mut self, login: &Login<'_>) -> Result<(), PgError> {
        let mut body = Vec::new();
        body.extend_from_slice(&196_608i32.to_be_bytes()); // protocol 3.0
        for (k, v) in [
            ("user", login.user),
            ("database", login.database),
            ("application_name", login.application),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO"),
            ("TimeZone", "UTC"),
        ] {
            push_str(&mut body, k);
            push_str(&mut body, v);
        }
        if login.replication {
            push_str(&mut body, "replication");
            push_str(&mut body, "database");
        }
        body.push(0);
        let mut message = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        message.extend_from_slice(&body);
        self.out.extend_from_slice(&message);
        self.flush()?;
        self.authenticate(login)?;
        loop {
            let (tag, body) = self.read_message()?;
            match tag {
                b'Z' => return Ok(()),
                b'S' => {
                    let mut fields = body.split(|b| *b == 0);
                    let name = fields.next().unwrap_or_default();
                    let value = fields.next().unwrap_or_default();
                    if name == b"server_version" {
                        self.server_version = String::from_utf8_lossy(value).into_owned();
                    }
                }
                b'K' | b'N' => {}
                b'E' => return Err(PgError::Server(server_error(&body))),
                other => return Err(unexpected(other, "starting")),
            }
        }
    }

    fn authenticate(&mut self, login: &Login<'_>) -> Result<(), PgError> {
        let mut scram: Option<Scram> = None;
        loop {
            let (tag, body) = self.read_message()?;
            if tag == b'E' {
                let error = server_error(&body);
                return Err(match error.code.as_str() {
                    "28P01" | "28000" => {
                        let message = format!(
                            "PostgreSQL refused {} at {}: {} (SQLSTATE {}); check {} and {}",
                            login.user, login.address, error.message, error.code, login.keys.user, login.keys.password
                        );
                        match error.code.as_str() {
                            "28000" => PgError::NotAuthorized(message),
                            _ => PgError::SignIn(message),
                        }
                    }
                    "3D000" => PgError::SignIn(format!(
                        "PostgreSQL at {} has no database {}: {}; check {}",
                        login.address, login.database, error.message, login.keys.database
                    )),
                    _ => PgError::Server(error),
                });
            }
            if tag != b'R' || body.len() < 4 {
                return Err(unexpected(tag, "signing in"));
            }
            let code = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
            let data = &body[4..];
            self.answer_authentication(login, code, data, &mut scram)?;
            if code == 0 {
                return Ok(());
            }
        }
    }

    /// Answers one authentication request of the server.
    fn answer_authentication(
        &mut self,
        login: &Login<'_>,
        code: i32,
        data: &[u8],
        scram: &mut Option<Scram>,
    ) -> Result<(), PgError> {
        let need_password = || {
            PgError::SignIn(format!(
                "PostgreSQL asks a password of {}, and {} is not set",
                login.user, login.keys.password
            ))
        };
        {
            match code {
                0 => return Ok(()),
                3 => {
                    let password = login.password.ok_or_else(need_password)?;
                    let mut message = password.as_bytes().to_vec();
                    message.push(0);
                    self.send(b'p', &message)?;
                }
                5 => {
                    let password = login.password.ok_or_else(need_password)?;
                    let salt = data.get(..4).ok_or_else(|| unexpected(b'R', "reading the MD5 salt"))?;
                    let inner = hex(&md5::Md5::digest([password.as_bytes(), login.user.as_bytes()].concat()));
                    let outer = hex(&md5::Md5::digest([inner.as_bytes(), salt].concat()));
                    let mut message = format!("md5{outer}").into_bytes();
                    message.push(0);
                    self.send(b'p', &message)?;
                }
                10 => {
                    let offered: Vec<&[u8]> = data.split(|b| *b == 0).filter(|m| !m.is_empty()).collect();
                    if !offered.contains(&b"SCRAM-SHA-256".as_slice()) {
                        let names: Vec<String> =
                            offered.iter().map(|m| String::from_utf8_lossy(m).into_owned()).collect();
                        return Err(PgError::SignIn(format!(
                            "PostgreSQL offers SASL mechanisms {} and {} speaks SCRAM-SHA-256 (without channel binding)",
                            names.join(", "),
                            login.keys.client
                        )));
                    }
                    let password = login.password.ok_or_else(need_password)?;
                    let exchange = Scram::new(password)?;
                    let first = exchange.client_first();
                    let mut message = Vec::new();
                    push_str(&mut message, "SCRAM-SHA-256");
                    message.extend_from_slice(&(first.len() as i32).to_be_bytes());
                    message.extend_from_slice(first.as_bytes());
                    self.send(b'p', &message)?;
                    *scram = Some(exchange);
                }
                11 => {
                    let exchange = scram.as_mut().ok_or_else(|| unexpected(b'R', "SCRAM"))?;
                    let answer = exchange.client_final(data)?;
                    self.send(b'p', answer.as_bytes())?;
                }
                12 => {
                    let exchange = scram.as_ref().ok_or_else(|| unexpected(b'R', "SCRAM"))?;
                    exchange.check_server_final(data)?;
                }
                other => {
                    return Err(PgError::SignIn(format!(
                        "PostgreSQL asks for authentication method {other}, which {} does not speak (it speaks \
                         SCRAM-SHA-256, MD5 and password)",
                        login.keys.client
                    )))
                }
            }
        }
        self.flush()
    }

    /// Runs statements through the simple protocol (BEGIN, COMMIT, DDL), and returns the rows
    /// of the last.
    pub fn simple(&mut self, sql: &str) -> Result<Rows, PgError> {
        let mut message = Vec::with_capacity(sql.len() + 1);
        push_str(&mut message, sql);
        self.send(b'Q', &message)?;
        self.flush()?;
        // Both answers are read whatever the first says, so that the next begins in step.
        let ahead = self.answers_ahead();
        let rows = self.collect();
        ahead.and(rows)
    }

    /// Sends a statement without values (a `BEGIN`) with the next one, saving a round trip;
    /// its answer is read, and its error returned, before the next one's.
    pub fn run_ahead(&mut self, sql: &str) -> Result<(), PgError> {
        if self.ahead >= MAX_AHEAD {
            return self.simple(sql).map(|_| ());
        }
        let mut message = Vec::with_capacity(sql.len() + 1);
        push_str(&mut message, sql);
        self.send(b'Q', &message)?;
        self.ahead += 1;
        Ok(())
    }

    /// Reads the answers of statements sent ahead; the first error, once all are read.
    fn answers_ahead(&mut self) -> Result<(), PgError> {
        let mut outcome = Ok(());
        while self.ahead > 0 {
            self.ahead -= 1;
            let answer = self.collect();
            if outcome.is_ok() {
                outcome = answer.map(|_| ());
            }
        }
        outcome
    }

    /// Runs one statement with text parameters (`$1`, `$2`, …; `None` for NULL) through the
    /// extended protocol, and returns its rows and the number it affected.
    pub fn execute(&mut self, sql: &str, params: &[Option<&str>]) -> Result<(Rows, u64), PgError> {
        if params.len() > u16::MAX as usize {
            return Err(PgError::Connection(format!(
                "a statement of {} parameters is more than PostgreSQL's 65535",
                params.len()
            )));
        }
        let mut parse = Vec::with_capacity(sql.len() + 8);
        push_str(&mut parse, "");
        push_str(&mut parse, sql);
        parse.extend_from_slice(&0i16.to_be_bytes());
        self.send(b'P', &parse)?;
        let size: usize = params.iter().map(|p| 4 + p.map_or(0, str::len)).sum();
        let mut bind = Vec::with_capacity(size + 16);
        push_str(&mut bind, "");
        push_str(&mut bind, "");
        bind.extend_from_slice(&0i16.to_be_bytes()); // every parameter in text
        bind.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for param in params {
            match param {
                None => bind.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(text) => {
                    bind.extend_from_slice(&(text.len() as i32).to_be_bytes());
                    bind.extend_from_slice(text.as_bytes());
                }
            }
        }
        bind.extend_from_slice(&0i16.to_be_bytes()); // every result column in text
        self.send(b'B', &bind)?;
        let mut execute = Vec::new();
        push_str(&mut execute, "");
        execute.extend_from_slice(&0i32.to_be_bytes());
        self.send(b'E', &execute)?;
        self.send(b'S', &[])?;
        self.flush()?;
        let ahead = self.answers_ahead();
        let mut affected = 0;
        let rows = self.collect_counting(&mut affected);
        ahead?;
        Ok((rows?, affected))
    }

    /// Runs `START_REPLICATION …` and enters the `CopyBoth` exchange: from here on
    /// [`Connection::next_replication`] reads what the server streams and
    /// [`Connection::send_status`] answers it.
    pub fn start_replication(&mut self, command: &str) -> Result<(), PgError> {
        let mut message = Vec::with_capacity(command.len() + 1);
        push_str(&mut message, command);
        self.send(b'Q', &message)?;
        self.flush()?;
        loop {
            let (tag, body) = self.read_message()?;
            match tag {
                b'W' => return Ok(()),
                b'N' => {}
                b'E' => {
                    let error = server_error(&body);
                    // The error ends the command; ReadyForQuery follows.
                    let _ = self.collect();
                    return Err(PgError::Server(error));
                }
                other => return Err(unexpected(other, "starting replication")),
            }
        }
    }

    /// The next message of a replication stream, waiting at most `wait` for one to begin (a
    /// message that has begun is read whole, under the connection's timeout); none when the
    /// server sent nothing in that time.
    pub fn next_replication(&mut self, wait: std::time::Duration) -> Result<Option<Replication>, PgError> {
        if self.reader.buffer().is_empty() {
            let socket = self.reader.get_mut();
            let timeout = socket.timeout();
            socket.set_timeout(wait);
            let ready = std::io::BufRead::fill_buf(&mut self.reader).map(|b| b.is_empty());
            self.reader.get_mut().set_timeout(timeout);
            match ready {
                Ok(false) => {}
                Ok(true) => {
                    return Err(PgError::Connection("PostgreSQL closed the replication connection".into()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Ok(None),
                Err(e) => return Err(lost("waiting for the replication stream", e)),
            }
        }
        let (tag, body) = self.read_message()?;
        match tag {
            b'd' => Replication::read(&body).map(Some),
            b'c' => Err(PgError::Connection("PostgreSQL ended the replication stream (CopyDone)".into())),
            b'E' => Err(PgError::Server(server_error(&body))),
            b'N' => {
                if self.notices.len() < MAX_NOTICES {
                    self.notices.push(server_error(&body).message);
                }
                Ok(None)
            }
            other => Err(unexpected(other, "streaming replication")),
        }
    }

    /// Sends a standby status update: every change up to `flushed` is durable on this side, so
    /// the server may free its WAL and a restart resumes after it. `reply` asks the server to
    /// answer at once (with a keepalive).
    pub fn send_status(&mut self, flushed: Lsn, reply: bool) -> Result<(), PgError> {
        let mut body = Vec::with_capacity(34);
        body.push(b'r');
        for _ in 0..3 {
            body.extend_from_slice(&flushed.0.to_be_bytes());
        }
        body.extend_from_slice(&(unix_micros_now() - POSTGRES_EPOCH_MICROS).to_be_bytes());
        body.push(u8::from(reply));
        self.send(b'd', &body)?;
        self.flush()
    }

    /// Says goodbye; errors do not matter any more.
    pub fn close(mut self) {
        let _ = self.send(b'X', &[]);
        let _ = self.flush();
    }

    fn collect(&mut self) -> Result<Rows, PgError> {
        let mut affected = 0;
        self.collect_counting(&mut affected)
    }

    /// Reads until `ReadyForQuery`: the rows, the count of the command tag, the first error.
    fn collect_counting(&mut self, affected: &mut u64) -> Result<Rows, PgError> {
        self.notices.clear();
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let (tag, body) = self.read_message()?;
            match tag {
                b'Z' => break,
                b'D' => {
                    if rows.len() >= MAX_ROWS {
                        error.get_or_insert(PgError::Connection(format!("an answer of more than {MAX_ROWS} rows")));
                        continue;
                    }
                    rows.push(data_row(&body)?);
                }
                b'C' => {
                    let text = String::from_utf8_lossy(body.strip_suffix(b"\0").unwrap_or(&body)).into_owned();
                    *affected += text.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
                }
                b'E' => {
                    error.get_or_insert(PgError::Server(server_error(&body)));
                }
                b'N' => {
                    if self.notices.len() < MAX_NOTICES {
                        self.notices.push(server_error(&body).message);
                    }
                }
                b'T' | b'1' | b'2' | b'3' | b'n' | b'I' | b's' | b'S' | b't' | b'A' => {}
                other => return Err(unexpected(other, "reading an answer")),
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }

    fn send(&mut self, tag: u8, body: &[u8]) -> Result<(), PgError> {
        let length = i32::try_from(body.len() + 4)
            .map_err(|_| PgError::Connection("a message larger than PostgreSQL's protocol allows".into()))?;
        self.out.push(tag);
        self.out.extend_from_slice(&length.to_be_bytes());
        self.out.extend_from_slice(body);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), PgError> {
        let socket = self.reader.get_mut();
        let sent = socket.write_all(&self.out).and_then(|()| socket.flush()).map_err(|e| lost("sending", e));
        self.out.clear();
        sent
    }

    fn read_message(&mut self) -> Result<(u8, Vec<u8>), PgError> {
        let mut head = [0u8; 5];
        self.reader.read_exact(&mut head).map_err(|e| lost("reading", e))?;
        let length = i32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let length = usize::try_from(length)
            .ok()
            .and_then(|l| l.checked_sub(4))
            .filter(|l| *l <= MAX_MESSAGE_BYTES)
            .ok_or_else(|| {
                PgError::Connection(format!("PostgreSQL sent a message of length {length}, which is not one to read"))
            })?;
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body).map_err(|e| lost("reading", e))?;
        Ok((head[0], body))
    }
}

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z).
pub const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

fn unix_micros_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A position in the write-ahead log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn(pub u64);

impl std::fmt::Display for Lsn {
    /// PostgreSQL's form: `16/B374D848`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xffff_ffff)
    }
}

impl std::str::FromStr for Lsn {
    type Err = String;
    fn from_str(text: &str) -> Result<Lsn, String> {
        let bad = || format!("\"{text}\" is not a WAL position (expected two hexadecimal numbers, as 16/B374D848)");
        let (high, low) = text.trim().split_once('/').ok_or_else(bad)?;
        let high = u32::from_str_radix(high, 16).map_err(|_| bad())?;
        let low = u32::from_str_radix(low, 16).map_err(|_| bad())?;
        Ok(Lsn((u64::from(high) << 32) | u64::from(low)))
    }
}

/// A message of a replication stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Replication {
    /// WAL data (`XLogData`): where it starts, and the plugin's message (pgoutput's).
    Wal { start: Lsn, end: Lsn, data: Vec<u8> },
    /// The server's keepalive: its end of WAL, and whether it wants an answer now (else it
    /// drops the connection after `wal_sender_timeout`).
    Keepalive { end: Lsn, reply: bool },
}

impl Replication {
    fn read(body: &[u8]) -> Result<Replication, PgError> {
        let bad = || PgError::Connection("PostgreSQL sent a replication message that does not parse".into());
        let u64_at = |at: usize| -> Result<u64, PgError> {
            let bytes = body.get(at..at + 8).ok_or_else(bad)?;
            let mut array = [0u8; 8];
            array.copy_from_slice(bytes);
            Ok(u64::from_be_bytes(array))
        };
        match body.first() {
            Some(b'w') => Ok(Replication::Wal {
                start: Lsn(u64_at(1)?),
                end: Lsn(u64_at(9)?),
                data: body.get(25..).ok_or_else(bad)?.to_vec(),
            }),
            Some(b'k') => {
                Ok(Replication::Keepalive { end: Lsn(u64_at(1)?), reply: body.get(17).ok_or_else(bad)? != &0 })
            }
            _ => Err(bad()),
        }
    }
}

fn push_str(buffer: &mut Vec<u8>, text: &str) {
    buffer.extend_from_slice(text.as_bytes());
    buffer.push(0);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unexpected(tag: u8, what: &str) -> PgError {
    PgError::Connection(format!("PostgreSQL sent an unexpected message ({}) while {what}", tag as char))
}

fn server_error(body: &[u8]) -> ServerError {
    let mut error = ServerError::default();
    for field in body.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let text = String::from_utf8_lossy(&field[1..]).into_owned();
        match field[0] {
            b'C' => error.code = text,
            b'M' => error.message = text,
            b'D' => error.detail = Some(text),
            b'H' => error.hint = Some(text),
            _ => {}
        }
    }
    error
}

fn data_row(body: &[u8]) -> Result<Vec<Option<String>>, PgError> {
    let bad = || PgError::Connection("PostgreSQL sent a data row that does not parse".into());
    let count = i16::from_be_bytes([*body.first().ok_or_else(bad)?, *body.get(1).ok_or_else(bad)?]);
    let mut at = 2;
    let mut row = Vec::with_capacity(count.max(0) as usize);
    for _ in 0..count {
        let length = body.get(at..at + 4).ok_or_else(bad)?;
        let length = i32::from_be_bytes([length[0], length[1], length[2], length[3]]);
        at += 4;
        if length < 0 {
            row.push(None);
            continue;
        }
        let value = body.get(at..at + length as usize).ok_or_else(bad)?;
        row.push(Some(String::from_utf8_lossy(value).into_owned()));
        at += length as usize;
    }
    Ok(row)
}

/// The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it: no channel
/// binding; the user name is the start-up message's, so the exchange's is empty.
struct Scram {
    password: String,
    nonce: String,
    client_first_bare: String,
    /// The server's signature to expect, once the client-final message is written.
    expected: Option<Vec<u8>>,
}

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &[u8]) -> Result<Vec<u8>, PgError> {
    let mut mac = HmacSha256::new_from_slice(key).map_err(|e| PgError::Connection(format!("SCRAM: {e}")))?;
    mac.update(data);
    Ok(mac.finalize().into_bytes().to_vec())
}

/// The most PBKDF2 iterations a server may ask for: more only costs the task its deadline.
const MAX_SCRAM_ITERATIONS: u32 = 1_000_000;

impl Scram {
    fn new(password: &str) -> Result<Scram, PgError> {
        let mut random = [0u8; 18];
        getrandom::fill(&mut random)
            .map_err(|e| PgError::Connection(format!("no randomness for the SCRAM nonce: {e}")))?;
        let nonce = BASE64.encode(random);
        Ok(Scram { password: password.to_string(), client_first_bare: format!("n=,r={nonce}"), nonce, expected: None })
    }

    fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    fn client_final(&mut self, server_first: &[u8]) -> Result<String, PgError> {
        let bad = |what: &str| PgError::Connection(format!("PostgreSQL's SCRAM challenge {what}"));
        let server_first = std::str::from_utf8(server_first).map_err(|_| bad("is not text"))?;
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attribute in server_first.split(',') {
            match attribute.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(v),
                Some(("i", v)) => iterations = Some(v),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(bad("lacks its nonce, salt or iteration count"));
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(bad("does not extend this client's nonce"));
        }
        let salt = BASE64.decode(salt).map_err(|_| bad("has a salt that is not base64"))?;
        let iterations: u32 = iterations.parse().map_err(|_| bad("has an iteration count that is no number"))?;
        if !(1..=MAX_SCRAM_ITERATIONS).contains(&iterations) {
            return Err(bad("asks for an iteration count outside 1 to 1000000"));
        }
        // Hi(password, salt, i): PBKDF2 with HMAC-SHA-256, one block.
        let mut block = hmac(self.password.as_bytes(), &[salt.as_slice(), &1u32.to_be_bytes()].concat())?;
        let mut salted = block.clone();
        for _ in 1..iterations {
            block = hmac(self.password.as_bytes(), &block)?;
            salted.iter_mut().zip(&block).for_each(|(s, b)| *s ^= b);
        }
        let client_key = hmac(&salted, b"Client Key")?;
        let stored_key = Sha256::digest(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac(&stored_key, auth_message.as_bytes())?;
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(k, s)| k ^ s).collect();
        let server_key = hmac(&salted, b"Server Key")?;
        self.expected = Some(hmac(&server_key, auth_message.as_bytes())?);
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)))
    }

    /// The server proves it knows the credential, not just that it let this client in.
    fn check_server_final(&self, server_final: &[u8]) -> Result<(), PgError> {
        let text = String::from_utf8_lossy(server_final);
        let signature = text.strip_prefix("v=").and_then(|v| BASE64.decode(v.trim_end()).ok());
        match (signature, &self.expected) {
            (Some(signature), Some(expected)) if &signature == expected => Ok(()),
            _ => Err(PgError::SignIn(
                "PostgreSQL's SCRAM answer does not prove that it knows the password; not going on".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

    use super::*;

    /// RFC 7677's example, with PostgreSQL's empty user name in the exchange.
    #[test]
    fn scram_proves_the_password_as_rfc_7677_computes_it() {
        let mut scram = Scram {
            password: "pencil".into(),
            nonce: "rOprNGfwEbeRWgbNEkqO".into(),
            client_first_bare: "n=user,r=rOprNGfwEbeRWgbNEkqO".into(),
            expected: None,
        };
        let answer = scram
            .client_final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        assert_eq!(
            answer,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        scram.check_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap();
        assert!(scram.check_server_final(b"v=AAAA").is_err());
    }

    #[test]
    fn wal_positions_read_and_print_as_postgresql_writes_them() {
        let lsn: Lsn = "16/B374D848".parse().unwrap();
        assert_eq!(lsn, Lsn(0x16_B374_D848));
        assert_eq!(lsn.to_string(), "16/B374D848");
        assert_eq!(Lsn(0).to_string(), "0/0");
        assert!("16B374D848".parse::<Lsn>().is_err());
        assert!("x/1".parse::<Lsn>().is_err());
    }

    #[test]
    fn replication_messages_parse_and_short_ones_are_refused() {
        let mut wal = vec![b'w'];
        wal.extend_from_slice(&5u64.to_be_bytes());
        wal.extend_from_slice(&9u64.to_be_bytes());
        wal.extend_from_slice(&0i64.to_be_bytes());
        wal.extend_from_slice(b"B...");
        assert_eq!(
            Replication::read(&wal).unwrap(),
            Replication::Wal { start: Lsn(5), end: Lsn(9), data: b"B...".to_vec() }
        );
        let mut keepalive = vec![b'k'];
        keepalive.extend_from_slice(&7u64.to_be_bytes());
        keepalive.extend_from_slice(&0i64.to_be_bytes());
        keepalive.push(1);
        assert_eq!(Replication::read(&keepalive).unwrap(), Replication::Keepalive { end: Lsn(7), reply: true });
        assert!(Replication::read(&keepalive[..10]).is_err());
        assert!(Replication::read(b"").is_err());
    }

    #[test]
    fn transient_errors_are_the_connection_timeouts_locks_and_resources() {
        let server = |code: &str| PgError::Server(ServerError { code: code.into(), ..Default::default() });
        for code in ["08006", "57014", "40001", "40P01", "55P03", "53300"] {
            assert!(server(code).is_transient(), "{code}");
        }
        for code in ["23505", "22P02", "42P01", "42703"] {
            assert!(!server(code).is_transient(), "{code}");
        }
    }
}
