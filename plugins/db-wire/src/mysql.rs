//! MariaDB's (and MySQL's) client/server protocol, as much as a sink needs: the handshake with
//! `mysql_native_password` (MariaDB's default; an authentication switch to it is followed), and
//! text queries (`COM_QUERY`) with their OK, error and result set answers. Values travel inside
//! the statement as literals the dialect writes (`dialect.rs`), strings as hexadecimal, so no
//! value is ever parsed as SQL.

use std::io::{BufReader, Read, Write};

use crate::net::Connection as Socket;
use crate::Login;
use wharf_jdbc_url::TlsMode;

use sha1::{Digest, Sha1};

/// A packet's payload is at most this; a longer one is split, which a sink's statements never
/// need (they stay under `max_allowed_packet` and this).
const MAX_PAYLOAD: usize = 0xff_ffff;
/// The most rows an answer may hold here (a table's columns, say).
const MAX_ROWS: usize = 100_000;

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_FOUND_ROWS: u32 = 2;
const CLIENT_LONG_FLAG: u32 = 4;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_PROTOCOL_41: u32 = 512;
const CLIENT_SSL: u32 = 2048;
const CLIENT_TRANSACTIONS: u32 = 8192;
const CLIENT_SECURE_CONNECTION: u32 = 32768;
const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
/// utf8mb4_unicode_ci.
const UTF8MB4: u8 = 224;

/// Why a call failed: the connection (lost, refused, a protocol error), or the server refused
/// the statement (the connection stays usable).
#[derive(Debug, Clone)]
pub enum MyError {
    Connection(String),
    /// The server refused the user, the password or the database.
    SignIn(String),
    Server {
        code: u16,
        state: String,
        message: String,
    },
}

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MyError::Connection(m) | MyError::SignIn(m) => f.write_str(m),
            MyError::Server { code, state, message } => write!(f, "{message} (error {code}, SQLSTATE {state})"),
        }
    }
}

impl MyError {
    /// Whether trying again later may succeed: the connection, a lock wait or a deadlock, a
    /// statement over its time, the server short of connections or going away.
    pub fn is_transient(&self) -> bool {
        match self {
            MyError::Connection(_) => true,
            MyError::SignIn(_) => false,
            MyError::Server { code, .. } => {
                matches!(code, 1040 | 1053 | 1205 | 1213 | 1927 | 1969 | 3024 | 2006 | 2013)
            }
        }
    }
}

fn lost(what: &str, e: std::io::Error) -> MyError {
    MyError::Connection(format!("the connection to MariaDB was lost while {what}: {e}"))
}

pub struct Connection {
    reader: BufReader<Socket>,
    sequence: u8,
    pub server_version: String,
}

/// A query's answer: its rows, each column as text (none for NULL).
pub type Rows = Vec<Vec<Option<String>>>;

impl Connection {
    pub fn connect(login: &Login<'_>) -> Result<Connection, MyError> {
        let stream = crate::net::open(&login.endpoint, login.timeout, "MariaDB").map_err(MyError::Connection)?;
        let mut connection = Connection {
            reader: BufReader::with_capacity(64 * 1024, stream),
            sequence: 0,
            server_version: String::new(),
        };
        connection.handshake(login)?;
        Ok(connection)
    }

    fn handshake(&mut self, login: &Login<'_>) -> Result<(), MyError> {
        let greeting = self.read_packet()?;
        if greeting.first() == Some(&0xff) {
            return Err(server_error(&greeting));
        }
        let bad = || MyError::Connection("MariaDB's greeting does not parse".into());
        let mut at = Cursor { bytes: &greeting, at: 0 };
        if at.byte().ok_or_else(bad)? != 10 {
            return Err(MyError::Connection("MariaDB greets with a protocol other than 10".into()));
        }
        // MariaDB says 5.5.5- first, for clients that compare versions with MySQL's.
        let version = at.nul_string().ok_or_else(bad)?;
        self.server_version = version.strip_prefix("5.5.5-").unwrap_or(&version).to_string();
        at.skip(4).ok_or_else(bad)?; // connection id
        let mut seed = at.take(8).ok_or_else(bad)?.to_vec();
        at.skip(1).ok_or_else(bad)?;
        let lower = at.u16().ok_or_else(bad)?;
        at.skip(3).ok_or_else(bad)?; // character set, status
        let upper = at.u16().ok_or_else(bad)?;
        let capabilities = u32::from(lower) | (u32::from(upper) << 16);
        let seed_length = at.byte().ok_or_else(bad)?;
        at.skip(10).ok_or_else(bad)?;
        if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let rest = (usize::from(seed_length).saturating_sub(8)).max(13);
            let part = at.take(rest).ok_or_else(bad)?;
            seed.extend_from_slice(part.strip_suffix(&[0]).unwrap_or(part));
        }
        // The answer is mysql_native_password's whatever the greeting names (MySQL 8 greets with
        // caching_sha2_password): a server whose account uses another plugin asks to switch.
        let _greeting_plugin = at.nul_string();

        let mut flags = CLIENT_LONG_PASSWORD
            | CLIENT_FOUND_ROWS
            | CLIENT_LONG_FLAG
            | CLIENT_CONNECT_WITH_DB
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH
            | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA;
        // TLS as the URL's sslMode asks: the SSL packet (the answer's first 32 bytes, with
        // CLIENT_SSL), the handshake, then the whole answer over TLS.
        let offered = capabilities & CLIENT_SSL != 0;
        let encrypt = match login.endpoint.tls {
            TlsMode::Disable | TlsMode::Allow => false,
            TlsMode::Prefer => offered,
            _ if offered => true,
            _ => return Err(MyError::SignIn(crate::net::no_tls(&login.endpoint, "MariaDB", "ssl_cert and ssl_key"))),
        };
        if encrypt {
            flags |= CLIENT_SSL;
            let mut request = Vec::with_capacity(32);
            request.extend_from_slice(&flags.to_le_bytes());
            request.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
            request.push(UTF8MB4);
            request.extend_from_slice(&[0u8; 23]);
            self.write_packet(&request)?;
            crate::net::start_tls(&mut self.reader, &login.endpoint, "MariaDB").map_err(|(transient, message)| {
                if transient {
                    MyError::Connection(message)
                } else {
                    MyError::SignIn(message)
                }
            })?;
        }
        let answer = self.auth_answer("mysql_native_password", &seed, login)?;
        let mut response = Vec::with_capacity(128);
        response.extend_from_slice(&flags.to_le_bytes());
        response.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
        response.push(UTF8MB4);
        response.extend_from_slice(&[0u8; 23]);
        push_nul(&mut response, login.user);
        push_lenenc(&mut response, answer.len() as u64);
        response.extend_from_slice(&answer);
        push_nul(&mut response, login.database);
        push_nul(&mut response, "mysql_native_password");
        self.write_packet(&response)?;
        loop {
            let packet = self.read_packet()?;
            match packet.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => {
                    return Err(match server_error(&packet) {
                        MyError::Server { code: 1045, message, .. } => MyError::SignIn(format!(
                            "MariaDB refused {} at {}: {message}; check {} and {}",
                            login.user, login.address, login.keys.user, login.keys.password
                        )),
                        MyError::Server { code: 1049, message, .. } => MyError::SignIn(format!(
                            "MariaDB at {} has no database {}: {message}; check {}",
                            login.address, login.database, login.keys.database
                        )),
                        other => other,
                    })
                }
                // An authentication switch: the plugin's name and a new seed.
                Some(0xfe) => {
                    let mut at = Cursor { bytes: &packet, at: 1 };
                    let plugin = at.nul_string().ok_or_else(bad)?;
                    let seed = at.rest();
                    let seed = seed.strip_suffix(&[0]).unwrap_or(seed).to_vec();
                    let answer = self.auth_answer(&plugin, &seed, login)?;
                    self.write_packet(&answer)?;
                }
                _ => {
                    return Err(MyError::Connection(
                        "MariaDB answered the sign-in with a packet that does not parse".into(),
                    ))
                }
            }
        }
    }

    fn auth_answer(&self, plugin: &str, seed: &[u8], login: &Login<'_>) -> Result<Vec<u8>, MyError> {
        match plugin {
            "mysql_native_password" => Ok(match login.password {
                None | Some("") => Vec::new(),
                Some(password) => native_password(password.as_bytes(), seed),
            }),
            other => Err(MyError::SignIn(format!(
                "MariaDB asks {} to sign in with {other}, and {} speaks mysql_native_password; give the user that \
                 plugin (ALTER USER … IDENTIFIED VIA mysql_native_password USING PASSWORD('…'))",
                login.user, login.keys.client
            ))),
        }
    }

    /// Runs one statement; the rows of a query, nothing for others.
    pub fn query(&mut self, sql: &str) -> Result<Rows, MyError> {
        if sql.len() + 1 >= MAX_PAYLOAD {
            // ER_NET_PACKET_TOO_LARGE: the statement's rows are refused, the connection is fine.
            return Err(MyError::Server {
                code: 1153,
                state: "08S01".into(),
                message: format!(
                    "a statement of {} bytes is more than one packet carries; lower batch.size",
                    sql.len()
                ),
            });
        }
        self.sequence = 0;
        let mut packet = Vec::with_capacity(sql.len() + 1);
        packet.push(0x03);
        packet.extend_from_slice(sql.as_bytes());
        self.write_packet(&packet)?;
        let mut rows = Vec::new();
        let mut error = None;
        // A statement may answer with several results (CLIENT_MULTI_RESULTS); read them all.
        loop {
            let first = self.read_packet()?;
            let more = match first.first() {
                Some(0x00) => ok_more(&first),
                Some(0xff) => {
                    error.get_or_insert(server_error(&first));
                    false
                }
                Some(0xfb) => {
                    return Err(MyError::Connection("MariaDB asks for a local file, which is never sent".into()))
                }
                _ => {
                    let columns = Cursor { bytes: &first, at: 0 }.lenenc().unwrap_or(0);
                    for _ in 0..columns {
                        self.read_packet()?;
                    }
                    self.read_packet()?; // the EOF after the column definitions
                    loop {
                        let row = self.read_packet()?;
                        match row.first() {
                            Some(0xfe) if row.len() < 9 => break ok_more(&row),
                            Some(0xff) => {
                                error.get_or_insert(server_error(&row));
                                break false;
                            }
                            _ => {
                                if rows.len() < MAX_ROWS {
                                    rows.push(text_row(&row, columns)?);
                                }
                            }
                        }
                    }
                }
            };
            if !more {
                break;
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        self.reader.get_ref().is_tls()
    }

    pub fn close(mut self) {
        self.sequence = 0;
        let _ = self.write_packet(&[0x01]);
    }

    fn write_packet(&mut self, payload: &[u8]) -> Result<(), MyError> {
        let mut packet = Vec::with_capacity(payload.len() + 4);
        packet.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
        packet.push(self.sequence);
        self.sequence = self.sequence.wrapping_add(1);
        packet.extend_from_slice(payload);
        let socket = self.reader.get_mut();
        socket.write_all(&packet).and_then(|()| socket.flush()).map_err(|e| lost("sending", e))
    }

    fn read_packet(&mut self) -> Result<Vec<u8>, MyError> {
        let mut payload = Vec::new();
        loop {
            let mut head = [0u8; 4];
            self.reader.read_exact(&mut head).map_err(|e| lost("reading", e))?;
            let length = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
            self.sequence = head[3].wrapping_add(1);
            let start = payload.len();
            payload.resize(start + length, 0);
            self.reader.read_exact(&mut payload[start..]).map_err(|e| lost("reading", e))?;
            if length < MAX_PAYLOAD {
                return Ok(payload);
            }
            if payload.len() > 64 * MAX_PAYLOAD {
                return Err(MyError::Connection("MariaDB sent an answer larger than a sink reads".into()));
            }
        }
    }
}

/// mysql_native_password: SHA1(password) XOR SHA1(seed + SHA1(SHA1(password))).
fn native_password(password: &[u8], seed: &[u8]) -> Vec<u8> {
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut hasher = Sha1::new();
    hasher.update(seed);
    hasher.update(stage2);
    let mix = hasher.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// Whether an OK or EOF packet says more results follow (SERVER_MORE_RESULTS_EXISTS).
fn ok_more(packet: &[u8]) -> bool {
    let mut at = Cursor { bytes: packet, at: 1 };
    let status = match packet.first() {
        Some(0x00) => {
            let _ = at.lenenc();
            let _ = at.lenenc();
            at.u16()
        }
        _ => {
            at.skip(2);
            at.u16()
        }
    };
    status.is_some_and(|s| s & 0x0008 != 0)
}

fn server_error(packet: &[u8]) -> MyError {
    let mut at = Cursor { bytes: packet, at: 1 };
    let code = at.u16().unwrap_or(0);
    let mut state = String::new();
    if at.bytes.get(at.at) == Some(&b'#') {
        at.skip(1);
        state = at.take(5).map(|s| String::from_utf8_lossy(s).into_owned()).unwrap_or_default();
    }
    MyError::Server { code, state, message: String::from_utf8_lossy(at.rest()).into_owned() }
}

fn text_row(packet: &[u8], columns: u64) -> Result<Vec<Option<String>>, MyError> {
    let bad = || MyError::Connection("MariaDB sent a row that does not parse".into());
    let mut at = Cursor { bytes: packet, at: 0 };
    let mut row = Vec::new();
    for _ in 0..columns {
        if at.bytes.get(at.at) == Some(&0xfb) {
            at.skip(1);
            row.push(None);
            continue;
        }
        let length = at.lenenc().ok_or_else(bad)? as usize;
        let value = at.take(length).ok_or_else(bad)?;
        row.push(Some(String::from_utf8_lossy(value).into_owned()));
    }
    Ok(row)
}

fn push_nul(buffer: &mut Vec<u8>, text: &str) {
    buffer.extend_from_slice(text.as_bytes());
    buffer.push(0);
}

fn push_lenenc(buffer: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => buffer.push(n as u8),
        251..=0xffff => {
            buffer.push(0xfc);
            buffer.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            buffer.push(0xfd);
            buffer.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            buffer.push(0xfe);
            buffer.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Reads a packet front to back; every read is checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    fn lenenc(&mut self) -> Option<u64> {
        match self.byte()? {
            n @ 0..=250 => Some(u64::from(n)),
            0xfc => self.take(2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]]))),
            0xfd => self.take(3).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], 0]))),
            0xfe => self.take(8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])),
            _ => None,
        }
    }

    fn nul_string(&mut self) -> Option<String> {
        let rest = self.bytes.get(self.at..)?;
        let end = rest.iter().position(|b| *b == 0)?;
        self.at += end + 1;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    }

    fn rest(&mut self) -> &'a [u8] {
        let rest = self.bytes.get(self.at..).unwrap_or(&[]);
        self.at = self.bytes.len();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_password_scrambles_as_the_server_checks_it() {
        // The server stores SHA1(SHA1(password)) and checks SHA1(answer XOR SHA1(seed + stored)).
        let (password, seed) = (b"wharf".as_slice(), b"12345678901234567890".as_slice());
        let answer = native_password(password, seed);
        let stored = Sha1::digest(Sha1::digest(password));
        let mut hasher = Sha1::new();
        hasher.update(seed);
        hasher.update(stored);
        let mix = hasher.finalize();
        let stage1: Vec<u8> = answer.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect();
        assert_eq!(Sha1::digest(&stage1).as_slice(), stored.as_slice());
    }

    #[test]
    fn length_encoded_integers_read_back_as_written() {
        for n in [0u64, 250, 251, 65_535, 65_536, 16_777_215, 16_777_216, u64::MAX] {
            let mut buffer = Vec::new();
            push_lenenc(&mut buffer, n);
            assert_eq!(Cursor { bytes: &buffer, at: 0 }.lenenc(), Some(n));
        }
        assert_eq!(Cursor { bytes: &[0xfc, 1], at: 0 }.lenenc(), None);
    }

    #[test]
    fn errors_carry_code_and_state_and_transient_ones_are_known() {
        let mut packet = vec![0xff];
        packet.extend_from_slice(&1213u16.to_le_bytes());
        packet.extend_from_slice(b"#40001Deadlock found");
        let error = server_error(&packet);
        assert!(error.is_transient());
        assert_eq!(error.to_string(), "Deadlock found (error 1213, SQLSTATE 40001)");
        let duplicate = MyError::Server { code: 1062, state: "23000".into(), message: String::new() };
        assert!(!duplicate.is_transient());
    }
}
