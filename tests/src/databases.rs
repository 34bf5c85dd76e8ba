//! The test databases `./run test` starts (scripts/postgres and scripts/mariadb, database and
//! user wharf in each), and their own command-line clients to read what a sink wrote.

use std::process::Command;

/// `WHARF_TEST_POSTGRES`: host:port of the test PostgreSQL.
pub fn postgres() -> String {
    std::env::var("WHARF_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!("WHARF_TEST_POSTGRES is not set: run the suite with ./run test, which starts PostgreSQL")
    })
}

/// `WHARF_TEST_MARIADB`: host:port of the test MariaDB.
pub fn mariadb() -> String {
    std::env::var("WHARF_TEST_MARIADB").unwrap_or_else(|_| {
        panic!("WHARF_TEST_MARIADB is not set: run the suite with ./run test, which starts MariaDB")
    })
}

fn host_and_port(address: &str) -> (String, String) {
    let (host, port) = address.rsplit_once(':').unwrap_or_else(|| panic!("{address} is not host:port"));
    (host.to_string(), port.to_string())
}

/// Runs SQL through psql as wharf; its rows, columns separated by `|`, or what psql said.
pub fn try_sql(statement: &str) -> Result<Vec<String>, String> {
    let (host, port) = host_and_port(&postgres());
    let out = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", &host, "-p", &port, "-U", "wharf"])
        .args(["-d", "wharf", "-c", statement])
        .env("PGPASSWORD", "wharf")
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).filter(|l| !l.is_empty()).collect())
}

/// How the mariadb client shows bytes.
#[derive(Clone, Copy, PartialEq)]
pub enum Bytes {
    AsTheyAre,
    AsHex,
}

/// Runs SQL through the mariadb client as wharf; its rows, columns separated by `|`, or what it
/// said.
pub fn try_maria(statement: &str, bytes: Bytes) -> Result<Vec<String>, String> {
    let (host, port) = host_and_port(&mariadb());
    let mut command = Command::new("mariadb");
    command.args(["--no-defaults", "-N", "-B"]);
    if bytes == Bytes::AsHex {
        command.arg("--binary-as-hex");
    }
    let out =
        command.args(["-h", &host, "-P", &port, "-u", "wharf", "-pwharf", "wharf", "-e", statement]).output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(|l| l.replace('\t', "|")).filter(|l| !l.is_empty()).collect())
}
