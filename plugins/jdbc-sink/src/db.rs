//! One seam over the two databases: a statement with its values (`Sql`), a session that runs it
//! (`Session`, over `postgres.rs` or `mysql.rs`), and their errors (`DbError`).

use crate::dialect::Dialect;
pub use wharf_db_wire::Login;
use wharf_db_wire::{mysql, postgres};

/// The keys of a sink's config that messages about signing in name.
pub const KEYS: wharf_db_wire::Keys = wharf_db_wire::Keys {
    client: "jdbc-sink",
    server: "connection.url",
    user: "connection.username (connection.user)",
    password: "connection.password",
    database: "the database of connection.url",
};

/// A value for a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Null,
    /// Digits (with a sign, a point, an exponent), written as they are.
    Number(String),
    /// Text the column reads (also dates and times).
    Text(String),
    Bytes(Vec<u8>),
}

/// A statement: PostgreSQL's carries `$n` and its parameters; MariaDB's has its values written
/// in as literals.
#[derive(Debug, Clone)]
pub struct Sql {
    dialect: Dialect,
    pub text: String,
    pub params: Vec<Param>,
}

impl Sql {
    pub fn new(dialect: Dialect) -> Sql {
        Sql { dialect, text: String::new(), params: Vec::new() }
    }

    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    pub fn param(&mut self, param: Param) {
        match self.dialect {
            Dialect::Postgres => {
                self.params.push(param);
                self.text.push('$');
                self.text.push_str(&self.params.len().to_string());
            }
            Dialect::MariaDb => match param {
                Param::Null => self.text.push_str("NULL"),
                Param::Number(n) => self.text.push_str(&n),
                // Hexadecimal, read as UTF-8 text: no value is ever parsed as SQL.
                Param::Text(t) => {
                    self.text.push_str("_utf8mb4 X'");
                    push_hex(&mut self.text, t.as_bytes());
                    self.text.push('\'');
                }
                Param::Bytes(b) => {
                    self.text.push_str("X'");
                    push_hex(&mut self.text, &b);
                    self.text.push('\'');
                }
            },
        }
    }
}

fn push_hex(text: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    text.reserve(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0xf)] as char);
    }
}

/// Why a call failed.
#[derive(Debug, Clone)]
pub enum DbError {
    /// The connection: lost, refused, or a protocol error; connect again.
    Connection(String),
    /// The server refused the sign-in (user, password, database): fix the config.
    SignIn(String),
    /// The server refused the statement; the connection stays usable.
    Server { code: String, message: String, transient: bool },
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Connection(m) | DbError::SignIn(m) | DbError::Server { message: m, .. } => f.write_str(m),
        }
    }
}

impl DbError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            DbError::Connection(_) => true,
            DbError::SignIn(_) => false,
            DbError::Server { transient, .. } => *transient,
        }
    }

    pub fn code(&self) -> &str {
        match self {
            DbError::Connection(_) | DbError::SignIn(_) => "",
            DbError::Server { code, .. } => code,
        }
    }

    /// A refusal of a value the sink made itself (it never reaches the server).
    pub fn value(message: String) -> DbError {
        DbError::Server { code: "22000".into(), message, transient: false }
    }
}

impl From<postgres::PgError> for DbError {
    fn from(e: postgres::PgError) -> Self {
        let transient = e.is_transient();
        match e {
            postgres::PgError::Connection(m) => DbError::Connection(m),
            postgres::PgError::SignIn(m) | postgres::PgError::NotAuthorized(m) => DbError::SignIn(m),
            postgres::PgError::Server(ref s) => {
                DbError::Server { code: s.code.clone(), message: e.to_string(), transient }
            }
        }
    }
}

impl From<mysql::MyError> for DbError {
    fn from(e: mysql::MyError) -> Self {
        let transient = e.is_transient();
        match e {
            mysql::MyError::Connection(m) => DbError::Connection(m),
            mysql::MyError::SignIn(m) => DbError::SignIn(m),
            mysql::MyError::Server { code, .. } => {
                DbError::Server { code: code.to_string(), message: e.to_string(), transient }
            }
        }
    }
}

/// A query's answer: rows of text columns (none for NULL).
pub type Rows = Vec<Vec<Option<String>>>;

/// An open session with either database.
pub enum Session {
    Postgres(postgres::Connection),
    MariaDb(mysql::Connection),
}

impl Session {
    pub fn connect(dialect: Dialect, login: &Login<'_>) -> Result<Session, DbError> {
        Ok(match dialect {
            Dialect::Postgres => Session::Postgres(postgres::Connection::connect(login)?),
            Dialect::MariaDb => Session::MariaDb(mysql::Connection::connect(login)?),
        })
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        match self {
            Session::Postgres(c) => c.is_tls(),
            Session::MariaDb(c) => c.is_tls(),
        }
    }

    pub fn server_version(&self) -> &str {
        match self {
            Session::Postgres(c) => &c.server_version,
            Session::MariaDb(c) => &c.server_version,
        }
    }

    /// Runs statements without values (BEGIN, COMMIT, DDL, SET).
    pub fn run(&mut self, sql: &str) -> Result<(), DbError> {
        match self {
            Session::Postgres(c) => c.simple(sql).map(|_| ()).map_err(Into::into),
            Session::MariaDb(c) => c.query(sql).map(|_| ()).map_err(Into::into),
        }
    }

    /// Runs a statement without values (a `BEGIN`) together with the next one where the
    /// protocol allows it (PostgreSQL), saving a round trip; at once otherwise. Its error comes
    /// from the next statement.
    pub fn run_ahead(&mut self, sql: &str) -> Result<(), DbError> {
        match self {
            Session::Postgres(c) => c.run_ahead(sql).map_err(Into::into),
            Session::MariaDb(c) => c.query(sql).map(|_| ()).map_err(Into::into),
        }
    }

    /// Runs one statement with its values; its rows.
    pub fn query(&mut self, sql: &Sql) -> Result<Rows, DbError> {
        match self {
            Session::Postgres(c) => {
                let texts: Vec<Option<String>> = sql
                    .params
                    .iter()
                    .map(|p| match p {
                        Param::Null => None,
                        Param::Number(s) | Param::Text(s) => Some(s.clone()),
                        Param::Bytes(b) => {
                            let mut text = String::from("\\x");
                            push_hex(&mut text, b);
                            Some(text)
                        }
                    })
                    .collect();
                let params: Vec<Option<&str>> = texts.iter().map(Option::as_deref).collect();
                c.execute(&sql.text, &params).map(|(rows, _)| rows).map_err(Into::into)
            }
            Session::MariaDb(c) => c.query(&sql.text).map_err(Into::into),
        }
    }

    pub fn close(self) {
        match self {
            Session::Postgres(c) => c.close(),
            Session::MariaDb(c) => c.close(),
        }
    }
}
