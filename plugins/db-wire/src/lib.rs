//! The wire protocols of the databases Wharf's plugins talk to, over the sandbox's sockets (no
//! database code runs in the host):
//!
//! - `net`: a connection to a granted server, and TLS started over it as the config asks;
//! - `postgres`: PostgreSQL's frontend/backend protocol: sign-in, simple and extended queries,
//!   and the replication protocol's streaming (`START_REPLICATION`, `CopyBoth`);
//! - `mysql`: MariaDB's (and MySQL's) client/server protocol: sign-in and text queries.
//!
//! Messages name the config keys a person fixes, which differ between plugins: [`Keys`] says
//! which.

// The native build runs the unit tests only; a plugin's component is where every item is used.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod mysql;
pub mod net;
pub mod postgres;

/// The config keys that name what a sign-in uses, for messages that say what to fix.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    /// The plugin, as it names itself: `jdbc-sink`.
    pub client: &'static str,
    /// The key(s) that name the server: `connection.url`.
    pub server: &'static str,
    /// The key(s) that name the user: `connection.username (connection.user)`.
    pub user: &'static str,
    /// The key of the password: `connection.password`.
    pub password: &'static str,
    /// Where the database is named: `the database of connection.url`.
    pub database: &'static str,
}

/// Where and as whom to sign in.
pub struct Login<'a> {
    pub endpoint: net::Endpoint<'a>,
    /// `host:port`, for messages.
    pub address: &'a str,
    pub user: &'a str,
    pub password: Option<&'a str>,
    pub database: &'a str,
    pub application: &'a str,
    /// For connecting, and for each read and write.
    pub timeout: std::time::Duration,
    /// The config keys behind these, for messages.
    pub keys: &'a Keys,
    /// A replication connection (PostgreSQL's `replication=database`): it runs replication
    /// commands (`CREATE_REPLICATION_SLOT`, `START_REPLICATION`) beside simple queries.
    pub replication: bool,
}
