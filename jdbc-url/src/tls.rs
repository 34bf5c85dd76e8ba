//! How a URL asks for its connections to be encrypted, as its driver reads it: pgjdbc's `sslmode`
//! (and `ssl`), MariaDB Connector/J 3's `sslMode` (and its older `useSsl` family), MySQL
//! Connector/J's `sslMode` (and `useSSL`, `requireSSL`, `verifyServerCertificate`). The host
//! reads it to decide what a connection's certificate must prove; the SQL plugin reads it to
//! decide whether to ask the server for TLS. Both read it here.

use super::{file_url_path, Driver, JdbcUrl, JdbcUrlError};

/// What the connections of a URL do about TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: TlsMode,
    /// The certificates to trust, when the URL names them; otherwise the well-known public
    /// certificate authorities (in place of the Java trust store the drivers fall back on).
    pub roots: Option<Roots>,
    /// The properties that decided the mode, for messages: `sslmode=verify-full`, or
    /// `sslmode unset: prefer` for the driver's default.
    pub setting: String,
}

/// The drivers' modes, from the weakest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsMode {
    /// Never encrypt (pgjdbc `disable`, MariaDB's default `disable`, MySQL `DISABLED`).
    Disable,
    /// Plaintext; TLS without verification only when the server refuses a plaintext sign-in
    /// (pgjdbc `allow`).
    Allow,
    /// TLS without verification when the server offers it, plaintext when it does not (pgjdbc's
    /// default `prefer`, MySQL's default `PREFERRED`).
    Prefer,
    /// TLS or no connection, the certificate not verified (pgjdbc `require`, MariaDB `trust`,
    /// MySQL `REQUIRED`).
    Require,
    /// TLS, the certificate's chain verified up to a trusted authority; any host name.
    VerifyCa,
    /// TLS, the chain verified and the certificate naming the host connected to.
    VerifyFull,
}

impl TlsMode {
    /// Whether a connection must be encrypted or fail.
    pub fn required(self) -> bool {
        self >= TlsMode::Require
    }

    /// Whether the connection asks the server for TLS before signing in.
    pub fn asks_first(self) -> bool {
        self >= TlsMode::Prefer
    }

    /// Whether the certificate's chain is verified.
    pub fn verifies(self) -> bool {
        self >= TlsMode::VerifyCa
    }

    /// libpq's and pgjdbc's `sslmode` values: `disable`, `allow`, `prefer`, `require`,
    /// `verify-ca`, `verify-full`.
    pub fn from_sslmode(value: &str) -> Option<TlsMode> {
        Some(match value {
            "disable" => TlsMode::Disable,
            "allow" => TlsMode::Allow,
            "prefer" => TlsMode::Prefer,
            "require" => TlsMode::Require,
            "verify-ca" => TlsMode::VerifyCa,
            "verify-full" => TlsMode::VerifyFull,
            _ => return None,
        })
    }
}

/// Trusted certificates, as the URL gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// A PEM file, by its absolute path.
    File(String),
    /// PEM text inside the URL (MariaDB's `serverSslCert=-----BEGIN CERTIFICATE-----…`).
    Pem(String),
}

fn refuse<T>(message: String) -> Result<T, JdbcUrlError> {
    Err(JdbcUrlError(message))
}

impl JdbcUrl {
    /// What the URL asks of TLS. Refused, naming the property: a mode the driver does not
    /// know, a client certificate or a Java key store (which Wharf cannot present or read), and
    /// pgjdbc's direct TLS negotiation.
    pub fn tls(&self) -> Result<Tls, JdbcUrlError> {
        match self.driver {
            Driver::Postgres => self.postgres_tls(),
            Driver::MariaDb => self.mariadb_tls(),
            Driver::MySql => self.mysql_tls(),
        }
    }

    fn given(&self, name: &str) -> Option<&str> {
        self.property(name).map(str::trim)
    }

    fn postgres_tls(&self) -> Result<Tls, JdbcUrlError> {
        for property in ["sslcert", "sslkey", "sslpassword", "sslpasswordcallback"] {
            if self.given(property).is_some_and(|v| !v.is_empty()) {
                return refuse(format!(
                    "{property} asks for a client certificate, which Wharf cannot present (WASI's TLS has no \
                     client certificates); sign in with a password, or leave {property} out"
                ));
            }
        }
        if let Some(negotiation) = self.given("sslNegotiation").filter(|v| !v.eq_ignore_ascii_case("postgres")) {
            return refuse(format!(
                "sslNegotiation={negotiation}: Wharf negotiates TLS the classic way (sslNegotiation=postgres); \
                 leave the property out"
            ));
        }
        let mut setting = match (self.given("sslmode"), self.given("ssl")) {
            (Some(mode), _) => format!("sslmode={mode}"),
            (None, Some(ssl)) => format!("ssl={ssl}"),
            (None, None) => "sslmode unset: prefer".to_string(),
        };
        let mut mode = match self.given("sslmode") {
            Some(value) => match TlsMode::from_sslmode(value) {
                Some(mode) => mode,
                None => {
                    return refuse(format!(
                        "sslmode={value} is not one of pgjdbc's modes: disable, allow, prefer, require, verify-ca, \
                         verify-full"
                    ))
                }
            },
            // pgjdbc: `ssl` with no value or "true" is verify-full; any other value prefer.
            None => match self.given("ssl") {
                Some("" | "true") => TlsMode::VerifyFull,
                _ => TlsMode::Prefer,
            },
        };
        match self.given("sslfactory") {
            None | Some("") | Some("org.postgresql.ssl.LibPQFactory" | "org.postgresql.ssl.DefaultJavaSSLFactory") => {}
            // pgjdbc's factory that accepts any certificate: its chain is not checked.
            Some("org.postgresql.ssl.NonValidatingFactory") => {
                mode = mode.min(TlsMode::Require);
                setting.push_str(", sslfactory=NonValidatingFactory");
            }
            Some(other) => {
                return refuse(format!(
                    "sslfactory={other} is a Java class, which Wharf cannot load; use sslmode and sslrootcert"
                ))
            }
        }
        let roots = match self.given("sslrootcert").filter(|v| !v.is_empty()) {
            Some(path) if path.starts_with('/') => Some(Roots::File(path.to_string())),
            Some(_) => {
                return refuse(
                    "sslrootcert names a relative path; give the file's absolute path, which the worker's \
                     wasm.ceiling.fs.read must allow"
                        .into(),
                )
            }
            None => None,
        };
        Ok(Tls { mode, roots, setting })
    }

    fn mariadb_tls(&self) -> Result<Tls, JdbcUrlError> {
        for property in ["keyStore", "keyStorePassword"] {
            if self.given(property).is_some_and(|v| !v.is_empty()) {
                return refuse(format!(
                    "{property} asks for a client certificate, which Wharf cannot present (WASI's TLS has no \
                     client certificates); sign in with a password, or leave {property} out"
                ));
            }
        }
        if self.given("trustStore").is_some_and(|v| !v.is_empty()) {
            return refuse(
                "trustStore names a Java key store, which Wharf does not read; give the certificate authority as a \
                 PEM file (or PEM text) in serverSslCert"
                    .into(),
            );
        }
        let mut mode = match self.given("sslMode") {
            None => TlsMode::Disable,
            Some(value) => match value.to_ascii_lowercase().as_str() {
                "disable" | "disabled" | "0" | "false" => TlsMode::Disable,
                "trust" | "required" => TlsMode::Require,
                "verify-ca" | "verify_ca" => TlsMode::VerifyCa,
                "verify-full" | "verify_identity" | "1" | "true" => TlsMode::VerifyFull,
                _ => {
                    return refuse(format!(
                        "sslMode={value} is not one of MariaDB Connector/J's modes: disable, trust, verify-ca, \
                         verify-full"
                    ))
                }
            },
        };
        // Connector/J 3 reads the older options after sslMode, and they win.
        let mut setting = match self.given("sslMode") {
            Some(value) => format!("sslMode={value}"),
            None => "sslMode unset: disable".to_string(),
        };
        let on = |name: &str| matches!(self.given(name), Some("" | "true" | "1"));
        if on("useSsl") || on("useSSL") {
            setting = "useSsl=true".to_string();
            for option in ["trustServerCertificate", "disableSslHostnameVerification"] {
                if on(option) {
                    setting.push_str(&format!(", {option}=true"));
                }
            }
            mode = if on("trustServerCertificate") {
                TlsMode::Require
            } else if on("disableSslHostnameVerification") {
                TlsMode::VerifyCa
            } else {
                TlsMode::VerifyFull
            };
        }
        let roots = match self.given("serverSslCert").filter(|v| !v.is_empty()) {
            None => None,
            Some(pem) if pem.starts_with("-----") => Some(Roots::Pem(pem.to_string())),
            Some(other) if other.starts_with("classpath:") => {
                return refuse(
                    "serverSslCert names a classpath: resource, which Wharf has no classpath to find; give the \
                     file's absolute path or the PEM text"
                        .into(),
                )
            }
            Some(other) => {
                Some(Roots::File(absolute("serverSslCert", file_url_path(other).unwrap_or_else(|| other.to_string()))?))
            }
        };
        Ok(Tls { mode, roots, setting })
    }

    fn mysql_tls(&self) -> Result<Tls, JdbcUrlError> {
        if self.given("clientCertificateKeyStoreUrl").is_some_and(|v| !v.is_empty()) {
            return refuse(
                "clientCertificateKeyStoreUrl asks for a client certificate, which Wharf cannot present (WASI's \
                 TLS has no client certificates); sign in with a password"
                    .into(),
            );
        }
        if self.given("trustCertificateKeyStoreUrl").is_some_and(|v| !v.is_empty()) {
            return refuse(
                "trustCertificateKeyStoreUrl names a Java key store, which Wharf does not read; use a jdbc:mariadb: \
                 URL with the certificate authority as PEM in serverSslCert"
                    .into(),
            );
        }
        let flag = |name: &str| self.given(name).map(|v| v.eq_ignore_ascii_case("true") || v == "1");
        let mode = match self.given("sslMode") {
            Some(value) => match value.to_ascii_uppercase().as_str() {
                "DISABLED" => TlsMode::Disable,
                "PREFERRED" => TlsMode::Prefer,
                "REQUIRED" => TlsMode::Require,
                "VERIFY_CA" => TlsMode::VerifyCa,
                "VERIFY_IDENTITY" => TlsMode::VerifyFull,
                _ => {
                    return refuse(format!(
                        "sslMode={value} is not one of MySQL Connector/J's modes: DISABLED, PREFERRED, REQUIRED, \
                         VERIFY_CA, VERIFY_IDENTITY"
                    ))
                }
            },
            // The older options count only without sslMode.
            None => match (flag("useSSL"), flag("requireSSL"), flag("verifyServerCertificate")) {
                (Some(false), _, _) => TlsMode::Disable,
                (_, _, Some(true)) => TlsMode::VerifyCa,
                (_, Some(true), _) => TlsMode::Require,
                _ => TlsMode::Prefer,
            },
        };
        let setting = match self.given("sslMode") {
            Some(value) => format!("sslMode={value}"),
            None => {
                let given: Vec<String> = ["useSSL", "requireSSL", "verifyServerCertificate"]
                    .iter()
                    .filter_map(|name| self.given(name).map(|v| format!("{name}={v}")))
                    .collect();
                match given.is_empty() {
                    true => "sslMode unset: PREFERRED".to_string(),
                    false => given.join(", "),
                }
            }
        };
        Ok(Tls { mode, roots: None, setting })
    }
}

fn absolute(property: &str, path: String) -> Result<String, JdbcUrlError> {
    match path.starts_with('/') {
        true => Ok(path),
        false => refuse(format!(
            "{property} names a relative path; give the file's absolute path, which the worker's \
             wasm.ceiling.fs.read must allow"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(url: &str) -> Tls {
        JdbcUrl::parse(url).unwrap().tls().unwrap()
    }

    fn refused(url: &str) -> String {
        JdbcUrl::parse(url).unwrap().tls().unwrap_err().to_string()
    }

    #[test]
    fn pgjdbc_prefers_tls_unless_told_and_reads_ssl_as_verify_full() {
        assert_eq!(tls("jdbc:postgresql://db/shop").mode, TlsMode::Prefer);
        assert_eq!(tls("jdbc:postgresql://db/shop?ssl=true").mode, TlsMode::VerifyFull);
        assert_eq!(tls("jdbc:postgresql://db/shop?ssl").mode, TlsMode::VerifyFull);
        assert_eq!(tls("jdbc:postgresql://db/shop?ssl=false").mode, TlsMode::Prefer, "as pgjdbc reads it");
        assert_eq!(tls("jdbc:postgresql://db/shop?ssl=true&sslmode=require").mode, TlsMode::Require);
        assert_eq!(tls("jdbc:postgresql://db/shop?sslmode=disable").mode, TlsMode::Disable);
        assert_eq!(tls("jdbc:postgresql://db/shop?sslmode=allow").mode, TlsMode::Allow);
        assert_eq!(tls("jdbc:postgresql://db/shop?sslmode=verify-ca").mode, TlsMode::VerifyCa);
        assert_eq!(
            tls("jdbc:postgresql://db/shop?ssl=true&sslfactory=org.postgresql.ssl.NonValidatingFactory").mode,
            TlsMode::Require
        );
        let full = tls("jdbc:postgresql://db/shop?sslmode=verify-full&sslrootcert=/etc/pg/ca.pem");
        assert_eq!(full.roots, Some(Roots::File("/etc/pg/ca.pem".into())));
        assert_eq!(full.setting, "sslmode=verify-full");
        assert_eq!(tls("jdbc:postgresql://db/shop").setting, "sslmode unset: prefer");
        assert!(full.mode.verifies() && full.mode.required() && full.mode.asks_first());
        assert!(!TlsMode::Require.verifies() && !TlsMode::Prefer.required() && !TlsMode::Allow.asks_first());
    }

    #[test]
    fn pgjdbc_properties_wharf_cannot_honour_are_refused_by_name() {
        assert!(refused("jdbc:postgresql://db/shop?sslmode=verify").contains("sslmode=verify is not one of"));
        assert!(
            refused("jdbc:postgresql://db/shop?sslcert=/c.pem").starts_with("sslcert asks for a client certificate")
        );
        assert!(refused("jdbc:postgresql://db/shop?sslNegotiation=direct").starts_with("sslNegotiation=direct"));
        assert!(refused("jdbc:postgresql://db/shop?sslfactory=com.acme.F").starts_with("sslfactory=com.acme.F"));
        assert!(refused("jdbc:postgresql://db/shop?sslrootcert=ca.pem").contains("relative path"));
        assert_eq!(tls("jdbc:postgresql://db/shop?sslNegotiation=postgres").mode, TlsMode::Prefer);
    }

    #[test]
    fn mariadb_connector_j_disables_by_default_and_its_older_options_win() {
        assert_eq!(tls("jdbc:mariadb://db/shop").mode, TlsMode::Disable);
        assert_eq!(tls("jdbc:mariadb://db/shop?sslMode=trust").mode, TlsMode::Require);
        assert_eq!(tls("jdbc:mariadb://db/shop?sslmode=VERIFY_CA").mode, TlsMode::VerifyCa);
        assert_eq!(tls("jdbc:mariadb://db/shop?sslMode=verify-full").mode, TlsMode::VerifyFull);
        assert_eq!(tls("jdbc:mariadb://db/shop?sslMode=trust&useSsl=true").mode, TlsMode::VerifyFull);
        let legacy = tls("jdbc:mariadb://db/shop?useSSL&trustServerCertificate=true");
        assert_eq!(
            (legacy.mode, legacy.setting.as_str()),
            (TlsMode::Require, "useSsl=true, trustServerCertificate=true")
        );
        assert_eq!(tls("jdbc:mariadb://db/shop?useSsl=1&disableSslHostnameVerification=true").mode, TlsMode::VerifyCa);
        assert_eq!(tls("jdbc:mariadb://db/shop?useSsl=false").mode, TlsMode::Disable);
        assert_eq!(
            tls("jdbc:mariadb://db/shop?sslMode=verify-ca&serverSslCert=file:///etc/m/ca.pem").roots,
            Some(Roots::File("/etc/m/ca.pem".into()))
        );
        assert_eq!(
            tls("jdbc:mariadb://db/shop?sslMode=verify-ca&serverSslCert=-----BEGIN%20CERTIFICATE-----x").roots,
            Some(Roots::Pem("-----BEGIN CERTIFICATE-----x".into()))
        );
        assert!(refused("jdbc:mariadb://db/shop?sslMode=PREFERRED").contains("not one of MariaDB Connector/J's modes"));
        assert!(refused("jdbc:mariadb://db/shop?trustStore=/t.jks").starts_with("trustStore names a Java key store"));
        assert!(refused("jdbc:mariadb://db/shop?keyStore=/k.p12").starts_with("keyStore asks for a client"));
        assert!(refused("jdbc:mariadb://db/shop?serverSslCert=classpath:ca.pem").contains("classpath:"));
    }

    #[test]
    fn mysql_connector_j_prefers_tls_and_reads_its_older_options_without_ssl_mode() {
        assert_eq!(tls("jdbc:mysql://db/shop").mode, TlsMode::Prefer);
        assert_eq!(tls("jdbc:mysql://db/shop?sslMode=required").mode, TlsMode::Require);
        assert_eq!(tls("jdbc:mysql://db/shop?sslMode=VERIFY_IDENTITY").mode, TlsMode::VerifyFull);
        assert_eq!(tls("jdbc:mysql://db/shop?useSSL=false").mode, TlsMode::Disable);
        let legacy = tls("jdbc:mysql://db/shop?useSSL=true&requireSSL=true");
        assert_eq!((legacy.mode, legacy.setting.as_str()), (TlsMode::Require, "useSSL=true, requireSSL=true"));
        assert_eq!(tls("jdbc:mysql://db/shop?useSSL=true&verifyServerCertificate=true").mode, TlsMode::VerifyCa);
        assert_eq!(tls("jdbc:mysql://db/shop?sslMode=DISABLED&useSSL=true").mode, TlsMode::Disable);
        assert!(refused("jdbc:mysql://db/shop?sslMode=trust").contains("not one of MySQL Connector/J's modes"));
        assert!(refused("jdbc:mysql://db/shop?trustCertificateKeyStoreUrl=file:/t.jks").contains("Java key store"));
    }
}
