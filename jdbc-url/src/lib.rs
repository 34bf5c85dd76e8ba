//! JDBC URLs as the drivers Kafka Connect's SQL connectors load read them: PostgreSQL's (pgjdbc),
//! MariaDB's (Connector/J 3) and MySQL's (Connector/J 8). The host reads one to grant a plugin the
//! servers and certificate files it names; a SQL plugin reads the same one to connect. Both read
//! it here, so that what is granted is what is used.
//!
//! The forms read:
//! - `jdbc:postgresql://host[:port][,host[:port]…]/[database][?k=v&…]`, `jdbc:postgresql:database`
//!   and `jdbc:postgresql:/` (both on `localhost`), with IPv6 hosts in brackets;
//! - `jdbc:mariadb:[mode:]//hosts/[database][?…]`, a host as `host[:port]` or
//!   `address=(host=…)(port=…)(type=…)`;
//! - `jdbc:mysql:[mode:]//[user[:password]@]hosts/[database][?…]`, a host as `host[:port]`,
//!   `address=(host=…)(port=…)` or `(host=…,port=…)`.
//!
//! A password can be in a URL (`password=`, or MySQL's `user:password@`): no error here and no
//! [`JdbcUrl::redacted`] form shows a URL's properties or user part.

use std::fmt;

mod tls;
pub use tls::{Roots, Tls, TlsMode};

/// Whether `url` holds a password (a `password` property, or MySQL's `user:password@`), or
/// may: a URL that does not parse counts when `password` or `@` is anywhere in it, so that a
/// caller that hides such values fails closed.
pub fn holds_password(url: &str) -> bool {
    match JdbcUrl::parse(url) {
        Ok(parsed) => parsed.property("password").is_some(),
        Err(_) => url.to_ascii_lowercase().contains("password") || url.contains('@'),
    }
}

/// Which driver's grammar and defaults a URL follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    Postgres,
    MariaDb,
    MySql,
}

impl Driver {
    /// The port of a host given without one.
    pub fn default_port(self) -> u16 {
        match self {
            Driver::Postgres => 5432,
            Driver::MariaDb | Driver::MySql => 3306,
        }
    }

    /// The URL's subprotocol: `postgresql`, `mariadb` or `mysql`.
    pub fn subprotocol(self) -> &'static str {
        match self {
            Driver::Postgres => "postgresql",
            Driver::MariaDb => "mariadb",
            Driver::MySql => "mysql",
        }
    }

    /// Whether property names match in any case (MariaDB's and MySQL's drivers), or exactly
    /// (pgjdbc).
    fn names_ignore_case(self) -> bool {
        !matches!(self, Driver::Postgres)
    }

    /// The properties that name a file of certificates or keys, and whether the value is a
    /// `file:` URL rather than a path.
    fn file_properties(self) -> &'static [(&'static str, FileValue)] {
        match self {
            Driver::Postgres => {
                &[("sslrootcert", FileValue::Path), ("sslcert", FileValue::Path), ("sslkey", FileValue::Path)]
            }
            Driver::MariaDb => &[
                ("serverSslCert", FileValue::PathOrPem),
                ("keyStore", FileValue::PathOrFileUrl),
                ("trustStore", FileValue::PathOrFileUrl),
            ],
            Driver::MySql => &[
                ("trustCertificateKeyStoreUrl", FileValue::FileUrl),
                ("clientCertificateKeyStoreUrl", FileValue::FileUrl),
            ],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileValue {
    /// A path.
    Path,
    /// A path, or the certificate itself as PEM text (or a `classpath:` resource): only a path
    /// names a file.
    PathOrPem,
    /// A path or a `file:` URL.
    PathOrFileUrl,
    /// A `file:` URL.
    FileUrl,
}

/// One server of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// A host name or an IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
}

impl Server {
    /// `host:port`, with an IPv6 address in brackets.
    pub fn address(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }
}

/// A file a URL's property names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFile {
    /// The property, as the driver spells it.
    pub property: &'static str,
    pub path: String,
}

/// Why a URL cannot be read. The message never holds the URL's properties or user part, where
/// a password may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JdbcUrlError(String);

impl fmt::Display for JdbcUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JdbcUrlError {}

fn refuse<T>(message: impl Into<String>) -> Result<T, JdbcUrlError> {
    Err(JdbcUrlError(message.into()))
}

/// A JDBC URL, read.
#[derive(Clone, PartialEq, Eq)]
pub struct JdbcUrl {
    pub driver: Driver,
    /// At least one.
    pub servers: Vec<Server>,
    pub database: Option<String>,
    /// The properties after `?`, decoded, in their order (MySQL's `user:password@` as `user`
    /// and `password` before them).
    properties: Vec<(String, String)>,
}

impl fmt::Debug for JdbcUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// The most servers one URL may list.
pub const MAX_SERVERS: usize = 64;

impl JdbcUrl {
    pub fn parse(url: &str) -> Result<JdbcUrl, JdbcUrlError> {
        let url = url.trim();
        let Some(rest) = url.strip_prefix("jdbc:") else {
            return refuse(
                "is not a JDBC URL: it must start with jdbc:postgresql:, jdbc:mariadb: or jdbc:mysql: (for \
                 example jdbc:postgresql://db.example.com:5432/inventory)",
            );
        };
        let (subprotocol, rest) = rest.split_once(':').unwrap_or((rest, ""));
        let driver = match subprotocol {
            "postgresql" => Driver::Postgres,
            "mariadb" => Driver::MariaDb,
            "mysql" => Driver::MySql,
            "mysql+srv" => {
                return refuse(
                    "is a jdbc:mysql+srv: URL, whose servers come from DNS SRV records, which Wharf does not \
                     look up; list the servers in a jdbc:mysql:// URL",
                )
            }
            other => {
                let shown: String = other.chars().take(40).collect();
                return refuse(format!(
                    "names the driver \"{shown}\"; Wharf's SQL connectors speak jdbc:postgresql:, jdbc:mariadb: \
                     and jdbc:mysql:"
                ));
            }
        };
        let rest = match driver {
            Driver::Postgres => rest,
            Driver::MariaDb | Driver::MySql => strip_mode(rest),
        };
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut properties = read_properties(query)?;
        let (servers, database) = match location.strip_prefix("//") {
            Some(hierarchy) => {
                let (authority, path) = hierarchy.split_once('/').unwrap_or((hierarchy, ""));
                let authority = match authority.rsplit_once('@') {
                    Some((user_part, hosts)) if driver == Driver::MySql => {
                        let (user, password) = match user_part.split_once(':') {
                            Some((user, password)) => (user, Some(password)),
                            None => (user_part, None),
                        };
                        let mut given = vec![("user".to_string(), decode(user, "the user before @")?)];
                        if let Some(password) = password {
                            given.push(("password".to_string(), decode(password, "the password before @")?));
                        }
                        properties.splice(0..0, given);
                        hosts
                    }
                    Some(_) => {
                        return refuse(format!(
                            "names a user before the host (user@host), which jdbc:{}: does not read; give the \
                             user and password in the connector's own keys",
                            driver.subprotocol()
                        ))
                    }
                    None => authority,
                };
                (read_servers(driver, authority)?, decode(path, "the database name")?)
            }
            None if driver == Driver::Postgres => {
                // jdbc:postgresql:database and jdbc:postgresql:/ are on localhost.
                let path = location.strip_prefix('/').unwrap_or(location);
                (vec![Server { host: "localhost".into(), port: 5432 }], decode(path, "the database name")?)
            }
            None => return refuse(format!("has no //: write jdbc:{}://host:port/database", driver.subprotocol())),
        };
        let database = Some(database).filter(|d| !d.is_empty());
        Ok(JdbcUrl { driver, servers, database, properties })
    }

    /// A property's value (its last, when set twice), by its name as the driver matches names.
    pub fn property(&self, name: &str) -> Option<&str> {
        let ignore_case = self.driver.names_ignore_case();
        self.properties
            .iter()
            .rev()
            .find(|(k, _)| if ignore_case { k.eq_ignore_ascii_case(name) } else { k == name })
            .map(|(_, v)| v.as_str())
    }

    /// The names of the properties given, in their order (for refusing unknown ones).
    pub fn property_names(&self) -> impl Iterator<Item = &str> {
        self.properties.iter().map(|(k, _)| k.as_str())
    }

    /// The files the URL's TLS properties name (certificates, keys, key stores).
    pub fn files(&self) -> Result<Vec<NamedFile>, JdbcUrlError> {
        let mut files = Vec::new();
        for &(property, kind) in self.driver.file_properties() {
            let Some(value) = self.property(property).map(str::trim).filter(|v| !v.is_empty()) else { continue };
            let path = match kind {
                FileValue::Path => Some(value.to_string()),
                FileValue::PathOrPem if value.starts_with("-----BEGIN") || value.starts_with("classpath:") => None,
                FileValue::PathOrPem | FileValue::PathOrFileUrl => {
                    Some(file_url_path(value).unwrap_or_else(|| value.to_string()))
                }
                FileValue::FileUrl => Some(file_url_path(value).ok_or_else(|| {
                    JdbcUrlError(format!(
                        "{property} must be a file: URL (file:/etc/certs/truststore.p12); Wharf reads no other kind"
                    ))
                })?),
            };
            if let Some(path) = path {
                if !path.starts_with('/') {
                    return refuse(format!(
                        "{property} names a relative path; give the file's absolute path, which the worker's \
                         wasm.ceiling.fs.read must allow"
                    ));
                }
                files.push(NamedFile { property, path });
            }
        }
        Ok(files)
    }

    /// The URL without its user part and properties, for messages and logs.
    pub fn redacted(&self) -> String {
        let servers: Vec<String> = self.servers.iter().map(Server::address).collect();
        format!("jdbc:{}://{}/{}", self.driver.subprotocol(), servers.join(","), self.database.as_deref().unwrap_or(""))
    }
}

/// The URL after MariaDB's and MySQL's high-availability mode (`replication:` and the like),
/// which names no server.
fn strip_mode(rest: &str) -> &str {
    for mode in ["replication:", "loadbalance:", "sequential:", "aurora:", "failover:", "load-balance-read:"] {
        if let Some(after) = rest.strip_prefix(mode) {
            return after;
        }
    }
    rest
}

fn read_properties(query: &str) -> Result<Vec<(String, String)>, JdbcUrlError> {
    let mut properties = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode(name, "a property's name")?;
        let value = decode(value, &format!("the value of {name}"))?;
        properties.push((name, value));
    }
    Ok(properties)
}

/// Percent-decodes `text`; `what` names it in the error, which never shows it.
fn decode(text: &str, what: &str) -> Result<String, JdbcUrlError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(byte) => out.push(byte),
                None => return refuse(format!("{what} has a % not followed by two hexadecimal digits")),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| JdbcUrlError(format!("{what} decodes to bytes that are not UTF-8")))
}

/// The path of a `file:` URL (`file:/p`, `file:///p`, `file://localhost/p`).
fn file_url_path(value: &str) -> Option<String> {
    let rest = value.strip_prefix("file:")?;
    let path = match rest.strip_prefix("//") {
        Some(after) => &after[after.find('/')?..],
        None => rest,
    };
    decode(path, "a file: URL").ok()
}

/// The servers of an authority: host specs separated by commas outside parentheses.
fn read_servers(driver: Driver, authority: &str) -> Result<Vec<Server>, JdbcUrlError> {
    let mut specs = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in authority.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                specs.push(&authority[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    specs.push(&authority[start..]);
    if specs.len() > MAX_SERVERS {
        return refuse(format!("lists {} servers, more than the {MAX_SERVERS} Wharf reads", specs.len()));
    }
    let servers = specs
        .iter()
        .map(|spec| spec.trim())
        .filter(|spec| !spec.is_empty() || authority.trim().is_empty())
        .map(|spec| read_server(driver, spec))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(servers)
}

fn read_server(driver: Driver, spec: &str) -> Result<Server, JdbcUrlError> {
    if spec.is_empty() {
        return Ok(Server { host: "localhost".into(), port: driver.default_port() });
    }
    let keyed = spec.strip_prefix("address=").or_else(|| spec.starts_with('(').then_some(spec));
    if let Some(keyed) = keyed {
        if driver == Driver::Postgres {
            return refuse("names a server as address=(…), which jdbc:postgresql: does not read; write host:port");
        }
        return keyed_server(driver, keyed);
    }
    let (host, port) = if let Some(bracketed) = spec.strip_prefix('[') {
        let Some((host, after)) = bracketed.split_once(']') else {
            return refuse(format!("has the server \"{spec}\", whose [ has no ]; write [2001:db8::1]:5432"));
        };
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return refuse(format!("has the server \"{spec}\"; write [2001:db8::1]:5432")),
            },
        };
        (host, port)
    } else {
        match spec.split_once(':') {
            Some((_, after)) if after.contains(':') => {
                return refuse(format!(
                    "has the server \"{spec}\"; write an IPv6 address in brackets: [2001:db8::1]:5432"
                ))
            }
            Some((host, port)) => (host, Some(port)),
            None => (spec, None),
        }
    };
    Ok(Server { host: checked_host(spec, host)?, port: checked_port(driver, spec, port)? })
}

/// `(host=…)(port=…)(type=…)` or `(host=…,port=…)`.
fn keyed_server(driver: Driver, keyed: &str) -> Result<Server, JdbcUrlError> {
    let (mut host, mut port) = (None, None);
    for group in keyed.split(['(', ')']).filter(|g| !g.trim().is_empty()) {
        for pair in group.split(',') {
            match pair.split_once('=').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim())) {
                Some((k, v)) if k == "host" => host = Some(v),
                Some((k, v)) if k == "port" => port = Some(v),
                Some(_) => {}
                None => return refuse(format!("has the server \"{keyed}\", which is not (host=…)(port=…)")),
            }
        }
    }
    let Some(host) = host else {
        return refuse(format!("has the server \"{keyed}\" without host=; write address=(host=db)(port=3306)"));
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok(Server { host: checked_host(keyed, host)?, port: checked_port(driver, keyed, port)? })
}

fn checked_host(spec: &str, host: &str) -> Result<String, JdbcUrlError> {
    let fine = !host.is_empty()
        && host.len() <= 253
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%'));
    if !fine {
        return refuse(format!("has the server \"{spec}\", whose host is not a host name or an IP address"));
    }
    Ok(host.to_string())
}

fn checked_port(driver: Driver, spec: &str, port: Option<&str>) -> Result<u16, JdbcUrlError> {
    match port.map(str::trim) {
        None | Some("") => Ok(driver.default_port()),
        Some(port) => match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok(p),
            _ => refuse(format!("has the server \"{spec}\", whose port is not a number from 1 to 65535")),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

    use super::*;

    fn servers(url: &str) -> Vec<String> {
        JdbcUrl::parse(url).unwrap().servers.iter().map(Server::address).collect()
    }

    fn refused(url: &str) -> String {
        JdbcUrl::parse(url).unwrap_err().to_string()
    }

    #[test]
    fn postgres_urls_read_as_pgjdbc_reads_them() {
        let url =
            JdbcUrl::parse("jdbc:postgresql://db.example.com:6543/inventory?sslmode=verify-full&user=app").unwrap();
        assert_eq!(url.driver, Driver::Postgres);
        assert_eq!(servers("jdbc:postgresql://db.example.com:6543/inventory"), ["db.example.com:6543"]);
        assert_eq!(url.database.as_deref(), Some("inventory"));
        assert_eq!(url.property("sslmode"), Some("verify-full"));
        assert_eq!(url.property("SSLMODE"), None, "pgjdbc matches property names exactly");
        assert_eq!(servers("jdbc:postgresql://a,b:5433/x"), ["a:5432", "b:5433"]);
        assert_eq!(servers("jdbc:postgresql://[::1]:5740/accounting"), ["[::1]:5740"]);
        assert_eq!(servers("jdbc:postgresql:inventory"), ["localhost:5432"]);
        assert_eq!(JdbcUrl::parse("jdbc:postgresql:/").unwrap().database, None);
        assert_eq!(servers("jdbc:postgresql:///x"), ["localhost:5432"]);
        assert_eq!(JdbcUrl::parse("jdbc:postgresql://h/").unwrap().database, None);
        assert_eq!(JdbcUrl::parse("jdbc:postgresql://h/my%20db").unwrap().database.as_deref(), Some("my db"));
    }

    #[test]
    fn mariadb_and_mysql_urls_read_as_their_drivers_read_them() {
        assert_eq!(servers("jdbc:mariadb://db:3307/shop"), ["db:3307"]);
        assert_eq!(servers("jdbc:mariadb:replication://primary,replica:3308/shop"), ["primary:3306", "replica:3308"]);
        assert_eq!(
            servers("jdbc:mariadb://address=(host=a)(port=3310)(type=primary),address=(host=b)/x"),
            ["a:3310", "b:3306"]
        );
        assert_eq!(servers("jdbc:mysql://(host=a,port=3311),b/x"), ["a:3311", "b:3306"]);
        let url = JdbcUrl::parse("jdbc:mysql://app:s%40cret@db/shop?useSSL=true").unwrap();
        assert_eq!(url.property("user"), Some("app"));
        assert_eq!(url.property("password"), Some("s@cret"));
        assert_eq!(url.property("usessl"), Some("true"), "MySQL's and MariaDB's drivers match names in any case");
    }

    #[test]
    fn the_files_tls_properties_name_are_found_in_each_drivers_spelling() {
        let files = |url: &str| -> Vec<(&'static str, String)> {
            JdbcUrl::parse(url).unwrap().files().unwrap().into_iter().map(|f| (f.property, f.path)).collect()
        };
        assert_eq!(
            files("jdbc:postgresql://h/d?sslmode=verify-full&sslrootcert=/etc/pg/ca.pem&sslcert=/etc/pg/c.pem&sslkey=/etc/pg/k.pk8"),
            [("sslrootcert", "/etc/pg/ca.pem".into()), ("sslcert", "/etc/pg/c.pem".into()), ("sslkey", "/etc/pg/k.pk8".into())]
        );
        assert_eq!(
            files("jdbc:mariadb://h/d?sslMode=verify-full&serverSslCert=/etc/maria/ca.pem&keyStore=file:///etc/maria/ks.p12"),
            [("serverSslCert", "/etc/maria/ca.pem".into()), ("keyStore", "/etc/maria/ks.p12".into())]
        );
        assert!(files("jdbc:mariadb://h/d?serverSslCert=-----BEGIN%20CERTIFICATE-----").is_empty());
        assert_eq!(
            files("jdbc:mysql://h/d?trustCertificateKeyStoreUrl=file:/etc/my/trust.p12"),
            [("trustCertificateKeyStoreUrl", "/etc/my/trust.p12".into())]
        );
        let url = JdbcUrl::parse("jdbc:mysql://h/d?trustCertificateKeyStoreUrl=https://x/trust.p12").unwrap();
        assert!(url.files().unwrap_err().to_string().starts_with("trustCertificateKeyStoreUrl must be a file: URL"));
        let url = JdbcUrl::parse("jdbc:postgresql://h/d?sslrootcert=ca.pem").unwrap();
        assert!(url.files().unwrap_err().to_string().contains("relative path"));
    }

    #[test]
    fn a_bad_url_is_refused_with_what_to_write_instead() {
        assert!(refused("postgresql://h/d").starts_with("is not a JDBC URL"));
        assert!(refused("jdbc:oracle:thin:@h:1521:x").contains("names the driver \"oracle\""));
        assert!(refused("jdbc:mysql+srv://cluster/x").contains("DNS SRV"));
        assert!(refused("jdbc:postgresql://h:99999/d").contains("port is not a number from 1 to 65535"));
        assert!(refused("jdbc:postgresql://h:x/d").contains("port is not a number"));
        assert!(refused("jdbc:postgresql://::1/d").contains("IPv6 address in brackets"));
        assert!(refused("jdbc:postgresql://[::1/d").contains("has no ]"));
        assert!(refused("jdbc:mariadb:shop").contains("has no //"));
        assert!(refused("jdbc:postgresql://h/d?a=%zz").contains("% not followed by two hexadecimal digits"));
        assert!(refused("jdbc:postgresql://address=(host=a)/d").contains("does not read"));
        assert!(refused("jdbc:postgresql://u@h/d").contains("names a user before the host"));
        assert!(refused("jdbc:postgresql://h!/d").contains("not a host name"));
        let many = (0..=MAX_SERVERS).map(|i| format!("h{i}")).collect::<Vec<_>>().join(",");
        assert!(refused(&format!("jdbc:postgresql://{many}/d")).contains("servers, more than"));
    }

    #[test]
    fn no_error_and_no_redacted_form_shows_a_password() {
        for url in [
            "jdbc:mysql://app:hunter2@db:99999/shop",
            "jdbc:mysql://app:hunter2%zz@db/shop",
            "jdbc:postgresql://h/d?password=hunter2&x=%z",
            "jdbc:postgresql://h:0/d?password=hunter2",
        ] {
            let error = refused(url);
            assert!(!error.contains("hunter2"), "{error}");
        }
        let url = JdbcUrl::parse("jdbc:mysql://app:hunter2@db/shop?password=hunter2").unwrap();
        assert_eq!(url.redacted(), "jdbc:mysql://db:3306/shop");
        assert!(!format!("{url:?}").contains("hunter2"));
    }

    #[test]
    fn a_url_holds_a_password_in_a_property_or_before_the_host_or_may_when_it_does_not_parse() {
        assert!(holds_password("jdbc:postgresql://h/d?password=x"));
        assert!(holds_password("jdbc:mysql://u:x@h/d"));
        assert!(holds_password("jdbc:mariadb://h/d?PASSWORD=x"));
        assert!(!holds_password("jdbc:postgresql://h/d?user=u&sslmode=require"));
        assert!(!holds_password("jdbc:mysql://u@h/d"));
        assert!(holds_password("jdbc:postgresql://h:99999/d?password=x"));
        assert!(holds_password("not a url but user@host"));
        assert!(!holds_password("not a url"));
    }
}
