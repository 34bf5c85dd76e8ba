//! How the group membership client secures its connections: TLS (rustls) and SASL (PLAIN and
//! SCRAM), read from the same librdkafka-named settings that secure the worker's librdkafka
//! clients, so that one set of worker settings covers both.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ring::{digest, hmac, pbkdf2};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::sync::Unpoisoned;

/// The most files read from an `ssl.ca.location` directory.
const MAX_CA_FILES: usize = 4096;
/// Kafka refuses SCRAM credentials with fewer iterations (RFC 7677's minimum as well); a broker
/// asking for fewer is not one to trust with a proof of the password.
pub(super) const MIN_SCRAM_ITERATIONS: u32 = 4096;
/// Kafka stores SCRAM credentials with at most this many iterations; more would only make a
/// hostile broker's answer cost this worker CPU time.
pub(super) const MAX_SCRAM_ITERATIONS: u32 = 16384;

/// `security.protocol`: whether connections use TLS, SASL, both or neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Plaintext => "PLAINTEXT",
            Protocol::Ssl => "SSL",
            Protocol::SaslPlaintext => "SASL_PLAINTEXT",
            Protocol::SaslSsl => "SASL_SSL",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        [Protocol::Plaintext, Protocol::Ssl, Protocol::SaslPlaintext, Protocol::SaslSsl]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(value.trim()))
    }

    fn uses_tls(self) -> bool {
        matches!(self, Protocol::Ssl | Protocol::SaslSsl)
    }

    fn uses_sasl(self) -> bool {
        matches!(self, Protocol::SaslPlaintext | Protocol::SaslSsl)
    }
}

/// `sasl.mechanism`: the SASL mechanisms the membership client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl Mechanism {
    /// The name Kafka knows the mechanism by.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    fn parse(value: &str) -> Option<Self> {
        [Mechanism::Plain, Mechanism::ScramSha256, Mechanism::ScramSha512]
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(value.trim()))
    }
}

/// The user and password for SASL, and the SCRAM salted password of the last exchange.
#[derive(Clone)]
pub(super) struct Sasl {
    pub(super) mechanism: Mechanism,
    pub(super) username: String,
    password: String,
    /// A broker keeps one salt and iteration count per user, so every connection after the
    /// first reuses the (deliberately slow) PBKDF2 result, as RFC 5802 allows.
    salted: Arc<Mutex<Option<SaltedPassword>>>,
}

impl Sasl {
    /// PLAIN's one message: no authorization id, then the user and the password.
    pub(super) fn plain_token(&self) -> Vec<u8> {
        format!("\0{}\0{}", self.username, self.password).into_bytes()
    }
}

struct SaltedPassword {
    mechanism: Mechanism,
    salt: Vec<u8>,
    iterations: u32,
    value: Vec<u8>,
}

/// The TLS side: the rustls configuration and what it was built from (for `Debug`).
#[derive(Clone)]
struct Tls {
    config: Arc<rustls::ClientConfig>,
    verify_host_name: bool,
    trusted: &'static str,
    client_certificate: Option<&'static str>,
}

/// How the membership client secures its connections to the brokers. The default is plaintext
/// without authentication.
#[derive(Clone, Default)]
pub struct WireSecurity {
    protocol: Protocol,
    tls: Option<Tls>,
    sasl: Option<Sasl>,
}

impl fmt::Debug for WireSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("WireSecurity");
        s.field("protocol", &self.protocol.name());
        if let Some(tls) = &self.tls {
            s.field("trusted", &tls.trusted)
                .field("verify_host_name", &tls.verify_host_name)
                .field("client_certificate", &tls.client_certificate);
        }
        if let Some(sasl) = &self.sasl {
            s.field("mechanism", &sasl.mechanism.name())
                .field("username", &sasl.username)
                .field("password", &"<hidden>");
        }
        s.finish()
    }
}

/// Why the security settings cannot secure the group membership client, by the part of them
/// that is wrong; each message names the setting and says how to fix it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecuritySettingsError {
    /// `security.protocol` names no protocol Kafka has.
    #[error("{0}")]
    Protocol(String),
    /// The TLS settings (`ssl.*`): trusted authorities, client certificate or key.
    #[error("{0}")]
    Tls(String),
    /// The SASL settings (`sasl.*`): mechanism, user or password.
    #[error("{0}")]
    Sasl(String),
}

impl WireSecurity {
    /// Reads the librdkafka-named security settings (`security.protocol`, `sasl.*`, `ssl.*`)
    /// that secure the worker's Kafka clients; other keys are ignored, and the last value of a
    /// key wins. Certificate and key files are read here, so that a mistake fails the worker at
    /// start. The error names the setting and says how to fix it.
    pub fn from_settings(settings: &[(String, String)]) -> Result<WireSecurity, SecuritySettingsError> {
        let settings = Settings::of(settings);
        let protocol = match settings.get("security.protocol") {
            None => Protocol::Plaintext,
            Some(value) => Protocol::parse(value).ok_or_else(|| {
                SecuritySettingsError::Protocol(format!(
                    "security.protocol={value} is not a protocol Kafka knows; set it to PLAINTEXT, SSL, \
                     SASL_PLAINTEXT or SASL_SSL, as the brokers' listener expects"
                ))
            })?,
        };
        let tls = match protocol.uses_tls() {
            true => Some(read_tls(&settings).map_err(SecuritySettingsError::Tls)?),
            false => None,
        };
        let sasl = match protocol.uses_sasl() {
            true => Some(read_sasl(&settings, protocol).map_err(SecuritySettingsError::Sasl)?),
            false => None,
        };
        Ok(WireSecurity { protocol, tls, sasl })
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The SASL mechanism, when the protocol authenticates with SASL.
    pub fn mechanism(&self) -> Option<Mechanism> {
        self.sasl.as_ref().map(|s| s.mechanism)
    }

    pub(super) fn tls_config(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.tls.as_ref().map(|t| t.config.clone())
    }

    pub(super) fn sasl(&self) -> Option<&Sasl> {
        self.sasl.as_ref()
    }
}

/// The settings by key, the last value of each winning; `sasl.mechanisms` is librdkafka's alias
/// of `sasl.mechanism`, so the two are one key.
struct Settings<'a>(BTreeMap<&'a str, &'a str>);

impl<'a> Settings<'a> {
    fn of(settings: &'a [(String, String)]) -> Self {
        let mut map = BTreeMap::new();
        for (key, value) in settings {
            let key = match key.as_str() {
                "sasl.mechanisms" => "sasl.mechanism",
                other => other,
            };
            map.insert(key, value.as_str());
        }
        Settings(map)
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.get(key).copied()
    }

    /// A value, when set to anything but blanks.
    fn given(&self, key: &str) -> Option<&'a str> {
        self.get(key).map(str::trim).filter(|v| !v.is_empty())
    }
}

fn read_sasl(settings: &Settings<'_>, protocol: Protocol) -> Result<Sasl, String> {
    let protocol = protocol.name();
    let supported = "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512";
    let mechanism = match settings.given("sasl.mechanism") {
        None => {
            return Err(format!(
                "security.protocol={protocol} needs sasl.mechanism; set it to {supported}, as the brokers' \
                 listener enables"
            ))
        }
        Some(name) => Mechanism::parse(name).ok_or_else(|| {
            format!(
                "sasl.mechanism={name} is not supported by the group membership client; use {supported}, and \
                 enable that mechanism on the brokers"
            )
        })?,
    };
    let name = mechanism.name();
    let username = settings.get("sasl.username").unwrap_or("");
    if username.is_empty() {
        return Err(format!(
            "SASL {name} needs a user: sasl.username is not set; set username=\"…\" in sasl.jaas.config"
        ));
    }
    let Some(password) = settings.get("sasl.password") else {
        return Err(format!(
            "SASL {name} needs a password: sasl.password is not set; set password=\"…\" in sasl.jaas.config"
        ));
    };
    match mechanism {
        Mechanism::Plain if username.contains('\0') || password.contains('\0') => {
            return Err("sasl.username and sasl.password cannot contain a NUL character with SASL PLAIN, which \
                        separates them with one; change the user or password"
                .to_string())
        }
        // Kafka's SCRAM grammar allows ASCII names only (no NUL).
        Mechanism::ScramSha256 | Mechanism::ScramSha512 if !username.bytes().all(|b| (1..0x80).contains(&b)) => {
            return Err(format!(
                "sasl.username={username} is not a name Kafka accepts for SASL {name}, which takes ASCII \
                 characters only; use another user"
            ))
        }
        _ => {}
    }
    Ok(Sasl { mechanism, username: username.to_string(), password: password.to_string(), salted: Arc::default() })
}

fn read_tls(settings: &Settings<'_>) -> Result<Tls, String> {
    let verify_host_name = match settings.get("ssl.endpoint.identification.algorithm").map(str::trim) {
        None => true,
        Some(v) if v.eq_ignore_ascii_case("https") => true,
        // Java's way of saying none is the empty value.
        Some(v) if v.eq_ignore_ascii_case("none") || v.is_empty() => false,
        Some(other) => {
            return Err(format!(
                "ssl.endpoint.identification.algorithm={other} is not known; set it to https to check that a \
                 broker's certificate names the broker's host, or to none (empty in Java's settings) to check \
                 only that a trusted authority issued it"
            ))
        }
    };
    let (roots, trusted) = trusted_roots(settings)?;
    let client = client_certificate(settings)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up for the group membership client: {e}"))?;
    let builder = match verify_host_name {
        true => builder.with_root_certificates(roots),
        false => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly { roots: Arc::new(roots), algorithms })),
    };
    let (config, client_certificate) = match client {
        None => (builder.with_no_client_auth(), None),
        Some(ClientCertificate { chain, key, from }) => {
            let config = builder.with_client_auth_cert(chain, key).map_err(|e| {
                format!(
                    "{from} does not hold a usable client certificate and key ({e}); check that the key belongs \
                     to the certificate"
                )
            })?;
            (config, Some(from))
        }
    };
    Ok(Tls { config: Arc::new(config), verify_host_name, trusted, client_certificate })
}

/// The certificate authorities to trust, and which setting named them.
fn trusted_roots(settings: &Settings<'_>) -> Result<(RootCertStore, &'static str), String> {
    let location = settings.given("ssl.ca.location").filter(|l| *l != "probe");
    let inline = settings.given("ssl.ca.pem");
    if location.is_none() && inline.is_none() {
        // librdkafka uses the system's store here ("probe" asks it to look for one); the
        // well-known authorities stand in for it.
        return Ok((RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }, "well-known authorities"));
    }
    let mut certificates = Vec::new();
    if let Some(location) = location {
        certificates.extend(ca_location(location)?);
    }
    if let Some(pem) = inline {
        let found = certificates_in(pem.as_bytes()).map_err(|e| {
            format!("ssl.ca.pem is not PEM text ({e}); set ssl.truststore.certificates to PEM certificates")
        })?;
        if found.is_empty() {
            return Err("ssl.ca.pem holds no certificate; set ssl.truststore.certificates to the PEM text of the \
                        authorities that issued the brokers' certificates"
                .to_string());
        }
        certificates.extend(found);
    }
    let mut roots = RootCertStore::empty();
    for (index, certificate) in certificates.into_iter().enumerate() {
        roots.add(certificate).map_err(|e| {
            format!(
                "certificate {} of the trusted authorities (ssl.ca.location, ssl.ca.pem) cannot be used ({e}); \
                 check ssl.truststore.location",
                index + 1
            )
        })?;
    }
    let trusted = match (location.is_some(), inline.is_some()) {
        (true, true) => "ssl.ca.location and ssl.ca.pem",
        (true, false) => "ssl.ca.location",
        _ => "ssl.ca.pem",
    };
    Ok((roots, trusted))
}

/// The certificates in the PEM file `location`, or in every file of the directory `location`
/// (as OpenSSL's hashed certificate folders hold them).
fn ca_location(location: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let path = Path::new(location);
    let fix = "set ssl.truststore.location to a PEM file of the authorities that issued the brokers' certificates";
    if !path.is_dir() {
        let bytes = read_file(path).map_err(|e| format!("ssl.ca.location={location}: {e}; {fix}"))?;
        let found = certificates_in(&bytes)
            .map_err(|e| format!("ssl.ca.location={location} is not a PEM file ({e}); {fix}"))?;
        if found.is_empty() {
            return Err(format!("ssl.ca.location={location} holds no PEM certificate; {fix}"));
        }
        return Ok(found);
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| format!("ssl.ca.location={location}: cannot list it ({e}); {fix}"))?;
    let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    files.sort();
    if files.len() > MAX_CA_FILES {
        return Err(format!(
            "ssl.ca.location={location} holds {} files, more than the {MAX_CA_FILES} Wharf reads; {fix}",
            files.len()
        ));
    }
    let mut found = Vec::new();
    for file in files {
        // A folder of certificates may hold other files too; only what parses counts.
        if let Ok(certificates) = read_file(&file).map_err(|_| ()).and_then(|b| certificates_in(&b).map_err(|_| ())) {
            found.extend(certificates);
        }
    }
    if found.is_empty() {
        return Err(format!("ssl.ca.location={location} is a folder without PEM certificates; {fix}"));
    }
    Ok(found)
}

fn certificates_in(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, rustls::pki_types::pem::Error> {
    CertificateDer::pem_slice_iter(pem).collect()
}

fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    crate::config::security::read_bounded(path)
}

/// A client certificate chain and its key, for brokers that ask for one (mutual TLS).
struct ClientCertificate {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    from: &'static str,
}

fn client_certificate(settings: &Settings<'_>) -> Result<Option<ClientCertificate>, String> {
    let keystore = settings.given("ssl.keystore.location");
    let certificate = one_of(settings, "ssl.certificate.location", "ssl.certificate.pem")?;
    let key = one_of(settings, "ssl.key.location", "ssl.key.pem")?;
    if let Some(keystore) = keystore {
        if certificate.is_some() || key.is_some() {
            return Err(format!(
                "ssl.keystore.location={keystore} and ssl.certificate.*/ssl.key.* both name a client certificate; \
                 keep one: a PKCS12 keystore (ssl.keystore.type=PKCS12) or a PEM keystore"
            ));
        }
        return pkcs12_keystore(settings, keystore).map(Some);
    }
    let (chain, key) = match (certificate, key) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err("a client certificate (ssl.certificate.location or ssl.certificate.pem) needs its key: set \
                        ssl.key.location or ssl.key.pem (ssl.keystore.key in Java's settings)"
                .to_string())
        }
        (None, Some(_)) => {
            return Err("a client key (ssl.key.location or ssl.key.pem) needs its certificate: set \
                        ssl.certificate.location or ssl.certificate.pem (ssl.keystore.certificate.chain in Java's \
                        settings)"
                .to_string())
        }
        (Some(certificate), Some(key)) => (certificate, key),
    };
    let fix = "set the keystore to the worker's PEM client certificate chain";
    let bytes = pem_bytes(&chain)?;
    let chain_der = certificates_in(&bytes).map_err(|e| format!("{} is not PEM ({e}); {fix}", chain.describe()))?;
    if chain_der.is_empty() {
        return Err(format!("{} holds no PEM certificate; {fix}", chain.describe()));
    }
    let key_der = private_key(settings, &key, &pem_bytes(&key)?)?;
    Ok(Some(ClientCertificate { chain: chain_der, key: key_der, from: chain.name }))
}

/// A PEM value given either as a file (`*.location`) or inline (`*.pem`).
struct PemSetting<'a> {
    name: &'static str,
    value: &'a str,
    file: bool,
}

impl PemSetting<'_> {
    fn describe(&self) -> String {
        match self.file {
            true => format!("{}={}", self.name, self.value),
            false => self.name.to_string(),
        }
    }
}

fn one_of<'a>(
    settings: &Settings<'a>,
    location: &'static str,
    inline: &'static str,
) -> Result<Option<PemSetting<'a>>, String> {
    match (settings.given(location), settings.given(inline)) {
        (Some(_), Some(_)) => Err(format!("{location} and {inline} are both set; keep one of them")),
        (Some(value), None) => Ok(Some(PemSetting { name: location, value, file: true })),
        (None, Some(value)) => Ok(Some(PemSetting { name: inline, value, file: false })),
        (None, None) => Ok(None),
    }
}

fn pem_bytes(setting: &PemSetting<'_>) -> Result<Vec<u8>, String> {
    match setting.file {
        true => read_file(Path::new(setting.value))
            .map_err(|e| format!("{}: {e}; point it at a readable PEM file", setting.describe())),
        false => Ok(setting.value.as_bytes().to_vec()),
    }
}

/// The client key: PKCS#8, PKCS#1 or SEC1 PEM; an encrypted one is opened with
/// `ssl.key.password`.
fn private_key(settings: &Settings<'_>, key: &PemSetting<'_>, bytes: &[u8]) -> Result<PrivateKeyDer<'static>, String> {
    let text = String::from_utf8_lossy(bytes);
    let encrypted = text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED");
    if !encrypted {
        return PrivateKeyDer::from_pem_slice(bytes).map_err(|e| {
            format!(
                "{} holds no usable private key ({e}); give the key as PEM (BEGIN PRIVATE KEY, RSA PRIVATE KEY or \
                 EC PRIVATE KEY)",
                key.describe()
            )
        });
    }
    let Some(password) = settings.get("ssl.key.password") else {
        return Err(format!(
            "{} is encrypted and ssl.key.password is not set; set ssl.key.password, or store the key \
             unencrypted (openssl pkcs8 -topk8 -nocrypt -in key.pem -out plain-key.pem)",
            key.describe()
        ));
    };
    let opened = openssl::pkey::PKey::private_key_from_pem_passphrase(bytes, password.as_bytes())
        .and_then(|k| k.private_key_to_pkcs8());
    let der = opened.map_err(|e| {
        format!(
            "{} cannot be decrypted with ssl.key.password ({e}); check the password, or store the key \
             unencrypted (openssl pkcs8 -topk8 -nocrypt -in key.pem -out plain-key.pem)",
            key.describe()
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)))
}

/// A PKCS12 keystore's key, certificate and chain.
fn pkcs12_keystore(settings: &Settings<'_>, location: &str) -> Result<ClientCertificate, String> {
    let what = format!("ssl.keystore.location={location}");
    let Some(password) = settings.get("ssl.keystore.password") else {
        return Err(format!("{what} needs ssl.keystore.password; set the keystore's password"));
    };
    if password.contains('\0') {
        return Err("ssl.keystore.password cannot contain a NUL character; change the keystore's password".into());
    }
    let bytes = read_file(Path::new(location)).map_err(|e| format!("{what}: {e}; point it at a PKCS12 keystore"))?;
    crate::config::security::refuse_jks(&bytes, &what, location)?;
    let parsed = openssl::pkcs12::Pkcs12::from_der(&bytes)
        .map_err(|e| format!("{what} is not a PKCS12 keystore ({e}); set ssl.keystore.type to its type"))?
        .parse2(password)
        .map_err(|e| {
            format!(
                "{what} cannot be opened with ssl.keystore.password ({e}); check the password (a keystore \
                 with outdated encryption can be re-exported: openssl pkcs12 -legacy -in old.p12 -nodes | \
                 openssl pkcs12 -export -out keystore.p12)"
            )
        })?;
    let (Some(key), Some(certificate)) = (parsed.pkey, parsed.cert) else {
        return Err(format!(
            "{what} holds no private key with its certificate; put the worker's key and certificate in it"
        ));
    };
    let der_error = |e: openssl::error::ErrorStack| format!("{what} holds a certificate or key Wharf cannot use ({e})");
    let mut chain = vec![CertificateDer::from(certificate.to_der().map_err(der_error)?)];
    for authority in parsed.ca.iter().flatten() {
        chain.push(CertificateDer::from(authority.to_der().map_err(der_error)?));
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.private_key_to_pkcs8().map_err(der_error)?));
    Ok(ClientCertificate { chain, key, from: "ssl.keystore.location" })
}

/// With `ssl.endpoint.identification.algorithm=none`: a trusted authority must have issued the
/// broker's certificate, whatever name it gives.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let certificate = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &certificate,
            &self.roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A client nonce: printable, without commas, as SCRAM asks.
pub(super) fn client_nonce() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system has no randomness for a SCRAM nonce".to_string())?;
    Ok(BASE64.encode(bytes))
}

/// The client side of one SCRAM exchange (RFC 5802, RFC 7677), as Kafka speaks it: no channel
/// binding, no authorization id, and the password taken as its UTF-8 bytes (Kafka applies no
/// SASLprep).
pub(super) struct Scram<'a> {
    sasl: &'a Sasl,
    nonce: String,
    client_first_bare: String,
    /// Known once the client-final message is written.
    expected: Option<(hmac::Key, String)>,
}

impl<'a> Scram<'a> {
    pub(super) fn new(sasl: &'a Sasl, nonce: String) -> Self {
        let name = sasl.username.replace('=', "=3D").replace(',', "=2C");
        let client_first_bare = format!("n={name},r={nonce}");
        Scram { sasl, nonce, client_first_bare, expected: None }
    }

    pub(super) fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message (with the proof) for the broker's server-first message.
    pub(super) fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let server_first =
            std::str::from_utf8(server_first).map_err(|_| "the broker's SCRAM challenge is not text".to_string())?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for (index, attribute) in server_first.split(',').enumerate() {
            match attribute.split_once('=') {
                Some(("m", _)) if index == 0 => {
                    return Err("the broker asks for a SCRAM extension Wharf does not know".into());
                }
                Some(("r", value)) => nonce = Some(value),
                Some(("s", value)) => salt = Some(value),
                Some(("i", value)) => iterations = Some(value),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(format!("the broker's SCRAM challenge lacks the nonce, salt or iterations: {server_first}"));
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the broker's SCRAM nonce does not extend this worker's".into());
        }
        let salt = BASE64.decode(salt).map_err(|e| format!("the broker's SCRAM salt is not base64 ({e})"))?;
        let iterations: u32 =
            iterations.parse().map_err(|_| format!("the broker's SCRAM iteration count {iterations} is no number"))?;
        if !(MIN_SCRAM_ITERATIONS..=MAX_SCRAM_ITERATIONS).contains(&iterations) {
            return Err(format!(
                "the broker asks for {iterations} SCRAM iterations, outside the {MIN_SCRAM_ITERATIONS} to \
                 {MAX_SCRAM_ITERATIONS} Kafka allows"
            ));
        }
        let (hmac_algorithm, digest_algorithm) = match self.sasl.mechanism {
            Mechanism::ScramSha512 => (hmac::HMAC_SHA512, &digest::SHA512),
            _ => (hmac::HMAC_SHA256, &digest::SHA256),
        };
        let salted = self.salted_password(&salt, iterations);
        let salted = hmac::Key::new(hmac_algorithm, &salted);
        let client_key = hmac::sign(&salted, b"Client Key");
        let stored_key = digest::digest(digest_algorithm, client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac::sign(&hmac::Key::new(hmac_algorithm, stored_key.as_ref()), auth_message.as_bytes());
        let proof: Vec<u8> = client_key.as_ref().iter().zip(signature.as_ref()).map(|(k, s)| k ^ s).collect();
        let server_key = hmac::sign(&salted, b"Server Key");
        self.expected = Some((hmac::Key::new(hmac_algorithm, server_key.as_ref()), auth_message));
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the broker's server-final message: its signature proves that it knows the
    /// credential, not just that it let this worker in.
    pub(super) fn check_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let Some((server_key, auth_message)) = &self.expected else {
            return Err("the broker ended the SCRAM exchange early".into());
        };
        let text = String::from_utf8_lossy(server_final);
        let first = text.split(',').next().unwrap_or("");
        if let Some(error) = first.strip_prefix("e=") {
            return Err(format!("the broker refused: {error}"));
        }
        let signature = first
            .strip_prefix("v=")
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or_else(|| "the broker's SCRAM answer carries no server signature".to_string())?;
        hmac::verify(server_key, auth_message.as_bytes(), &signature)
            .map_err(|_| "the broker's SCRAM server signature is wrong: it does not know this user's credential".into())
    }

    fn salted_password(&self, salt: &[u8], iterations: u32) -> Vec<u8> {
        let mechanism = self.sasl.mechanism;
        let mut cached = self.sasl.salted.locked();
        if let Some(c) =
            cached.as_ref().filter(|c| c.mechanism == mechanism && c.salt == salt && c.iterations == iterations)
        {
            return c.value.clone();
        }
        let (algorithm, length) = match mechanism {
            Mechanism::ScramSha512 => (pbkdf2::PBKDF2_HMAC_SHA512, digest::SHA512_OUTPUT_LEN),
            _ => (pbkdf2::PBKDF2_HMAC_SHA256, digest::SHA256_OUTPUT_LEN),
        };
        let mut value = vec![0u8; length];
        let rounds = NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN);
        pbkdf2::derive(algorithm, rounds, salt, self.sasl.password.as_bytes(), &mut value);
        *cached = Some(SaltedPassword { mechanism, salt: salt.to_vec(), iterations, value: value.clone() });
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn refused(pairs: &[(&str, &str)]) -> String {
        refusal(pairs).to_string()
    }

    fn refusal(pairs: &[(&str, &str)]) -> SecuritySettingsError {
        match WireSecurity::from_settings(&settings(pairs)) {
            Ok(security) => panic!("accepted {security:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_refusal_says_which_part_of_the_settings_is_wrong() {
        assert!(matches!(refusal(&[("security.protocol", "TLS")]), SecuritySettingsError::Protocol(_)));
        assert!(matches!(
            refusal(&[("security.protocol", "SSL"), ("ssl.ca.location", "/nonexistent/ca.pem")]),
            SecuritySettingsError::Tls(_)
        ));
        assert!(matches!(
            refusal(&[("security.protocol", "SASL_PLAINTEXT"), ("sasl.mechanism", "GSSAPI")]),
            SecuritySettingsError::Sasl(_)
        ));
    }

    fn sasl_of(mechanism: Mechanism, username: &str, password: &str) -> Sasl {
        Sasl { mechanism, username: username.into(), password: password.into(), salted: Arc::default() }
    }

    /// A self-signed certificate and its key, as PEM.
    fn certificate_and_key() -> (Vec<u8>, openssl::pkey::PKey<openssl::pkey::Private>) {
        let (certificate, key) = crate::config::security::self_signed("wharf worker");
        (certificate.to_pem().unwrap(), key)
    }

    #[test]
    fn no_settings_mean_plaintext_without_authentication() {
        let security = WireSecurity::from_settings(&[]).unwrap();
        assert_eq!(security.protocol(), Protocol::Plaintext);
        assert!(security.tls_config().is_none() && security.sasl().is_none());
    }

    #[test]
    fn the_protocol_is_read_in_any_case_and_the_last_value_wins() {
        let security =
            WireSecurity::from_settings(&settings(&[("security.protocol", "SASL_SSL"), ("security.protocol", "ssl")]))
                .unwrap();
        assert_eq!(security.protocol(), Protocol::Ssl);
        assert!(security.tls_config().is_some() && security.sasl().is_none());
    }

    #[test]
    fn an_unknown_protocol_is_refused_with_the_ones_kafka_knows() {
        let e = refused(&[("security.protocol", "TLS")]);
        assert!(e.contains("security.protocol=TLS") && e.contains("SASL_SSL"), "{e}");
    }

    #[test]
    fn sasl_without_a_mechanism_is_refused() {
        let e = refused(&[("security.protocol", "SASL_PLAINTEXT"), ("sasl.username", "u"), ("sasl.password", "p")]);
        assert!(e.contains("needs sasl.mechanism"), "{e}");
    }

    #[test]
    fn an_unsupported_mechanism_is_refused_by_name() {
        for mechanism in ["GSSAPI", "OAUTHBEARER"] {
            let e = refused(&[("security.protocol", "SASL_PLAINTEXT"), ("sasl.mechanism", mechanism)]);
            assert!(e.contains(&format!("sasl.mechanism={mechanism}")) && e.contains("SCRAM-SHA-512"), "{e}");
        }
    }

    #[test]
    fn sasl_mechanisms_is_an_alias_of_sasl_mechanism_and_the_last_of_them_wins() {
        let security = WireSecurity::from_settings(&settings(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.mechanisms", "scram-sha-512"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
        ]))
        .unwrap();
        assert_eq!(security.mechanism(), Some(Mechanism::ScramSha512));
        assert!(security.tls_config().is_none());
    }

    #[test]
    fn sasl_needs_a_user_and_a_password() {
        let base = [("security.protocol", "SASL_SSL"), ("sasl.mechanism", "PLAIN")];
        let e = refused(&[base[0], base[1], ("sasl.password", "p")]);
        assert!(e.contains("sasl.username") && e.contains("sasl.jaas.config"), "{e}");
        let e = refused(&[base[0], base[1], ("sasl.username", "u")]);
        assert!(e.contains("sasl.password") && e.contains("sasl.jaas.config"), "{e}");
    }

    #[test]
    fn a_scram_user_name_must_be_ascii() {
        let e = refused(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.username", "jürgen"),
            ("sasl.password", "p"),
        ]);
        assert!(e.contains("sasl.username=jürgen") && e.contains("ASCII"), "{e}");
    }

    #[test]
    fn debug_never_shows_the_password() {
        let security = WireSecurity::from_settings(&settings(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
        ]))
        .unwrap();
        let shown = format!("{security:?}");
        assert!(shown.contains("alice") && shown.contains("SASL_SSL") && !shown.contains("alice-secret"), "{shown}");
    }

    #[test]
    fn an_unknown_endpoint_identification_algorithm_is_refused() {
        let e = refused(&[("security.protocol", "SSL"), ("ssl.endpoint.identification.algorithm", "dns")]);
        assert!(e.contains("ssl.endpoint.identification.algorithm=dns") && e.contains("none"), "{e}");
        for off in ["none", "NONE", ""] {
            let pairs = [("security.protocol", "SSL"), ("ssl.endpoint.identification.algorithm", off)];
            let security = WireSecurity::from_settings(&settings(&pairs)).unwrap();
            assert!(!security.tls.as_ref().unwrap().verify_host_name, "{off:?}");
        }
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_refused_by_its_setting() {
        let e = refused(&[("security.protocol", "SSL"), ("ssl.ca.location", "/nonexistent/ca.pem")]);
        assert!(e.contains("ssl.ca.location=/nonexistent/ca.pem") && e.contains("ssl.truststore.location"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let e = refused(&[("security.protocol", "SSL"), ("ssl.ca.location", empty.to_str().unwrap())]);
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let e = refused(&[("security.protocol", "SSL"), ("ssl.ca.pem", "nothing")]);
        assert!(e.contains("ssl.ca.pem holds no certificate"), "{e}");
    }

    #[test]
    fn trusted_authorities_come_from_a_file_a_folder_or_inline_pem() {
        let (pem, _) = certificate_and_key();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, &pem).unwrap();
        std::fs::write(dir.path().join("README"), "not a certificate").unwrap();
        let text = String::from_utf8(pem).unwrap();
        for pairs in [
            [("security.protocol", "SSL"), ("ssl.ca.location", file.to_str().unwrap())],
            [("security.protocol", "SSL"), ("ssl.ca.location", dir.path().to_str().unwrap())],
            [("security.protocol", "SSL"), ("ssl.ca.pem", text.as_str())],
        ] {
            let security = WireSecurity::from_settings(&settings(&pairs)).unwrap();
            assert!(security.tls_config().is_some(), "{pairs:?}");
        }
    }

    #[test]
    fn a_client_certificate_needs_its_key_and_one_source_of_each() {
        let (pem, key) = certificate_and_key();
        let (pem, key) =
            (String::from_utf8(pem).unwrap(), String::from_utf8(key.private_key_to_pem_pkcs8().unwrap()).unwrap());
        let e = refused(&[("security.protocol", "SSL"), ("ssl.certificate.pem", &pem)]);
        assert!(e.contains("needs its key") && e.contains("ssl.key.pem"), "{e}");
        let e = refused(&[("security.protocol", "SSL"), ("ssl.key.pem", &key)]);
        assert!(e.contains("needs its certificate"), "{e}");
        let e = refused(&[
            ("security.protocol", "SSL"),
            ("ssl.certificate.pem", &pem),
            ("ssl.certificate.location", "/tmp/x.pem"),
            ("ssl.key.pem", &key),
        ]);
        assert!(e.contains("ssl.certificate.location and ssl.certificate.pem are both set"), "{e}");
        let pairs = [("security.protocol", "SSL"), ("ssl.certificate.pem", &pem), ("ssl.key.pem", &key)];
        let security = WireSecurity::from_settings(&settings(&pairs)).unwrap();
        assert_eq!(security.tls.unwrap().client_certificate, Some("ssl.certificate.pem"));
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let (pem, _) = certificate_and_key();
        let (_, other) = certificate_and_key();
        let (pem, key) =
            (String::from_utf8(pem).unwrap(), String::from_utf8(other.private_key_to_pem_pkcs8().unwrap()).unwrap());
        let e = refused(&[("security.protocol", "SSL"), ("ssl.certificate.pem", &pem), ("ssl.key.pem", &key)]);
        assert!(e.contains("ssl.certificate.pem does not hold a usable client certificate and key"), "{e}");
    }

    #[test]
    fn an_encrypted_key_needs_ssl_key_password_and_opens_with_it() {
        let (pem, key) = certificate_and_key();
        let pem = String::from_utf8(pem).unwrap();
        let encrypted =
            key.private_key_to_pem_pkcs8_passphrase(openssl::symm::Cipher::aes_256_cbc(), b"changeit").unwrap();
        let encrypted = String::from_utf8(encrypted).unwrap();
        let base = [("security.protocol", "SSL"), ("ssl.certificate.pem", pem.as_str()), ("ssl.key.pem", &encrypted)];
        let e = refused(&base);
        assert!(e.contains("ssl.key.pem is encrypted and ssl.key.password is not set"), "{e}");
        let e = refused(&[base[0], base[1], base[2], ("ssl.key.password", "wrong")]);
        assert!(e.contains("cannot be decrypted with ssl.key.password"), "{e}");
        let opened =
            WireSecurity::from_settings(&settings(&[base[0], base[1], base[2], ("ssl.key.password", "changeit")]));
        assert!(opened.is_ok(), "{:?}", opened.err());
    }

    #[test]
    fn a_pkcs12_keystore_needs_its_password_and_no_other_client_certificate() {
        let (pem, key) = certificate_and_key();
        let certificate = openssl::x509::X509::from_pem(&pem).unwrap();
        let store =
            openssl::pkcs12::Pkcs12::builder().name("worker").pkey(&key).cert(&certificate).build2("changeit").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keystore.p12");
        std::fs::write(&path, store.to_der().unwrap()).unwrap();
        let location = path.to_str().unwrap();
        let e = refused(&[("security.protocol", "SSL"), ("ssl.keystore.location", location)]);
        assert!(e.contains("needs ssl.keystore.password"), "{e}");
        let e = refused(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.location", location),
            ("ssl.keystore.password", "wrong"),
        ]);
        assert!(e.contains("cannot be opened with ssl.keystore.password"), "{e}");
        let e = refused(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.location", location),
            ("ssl.keystore.password", "changeit"),
            ("ssl.certificate.location", "/tmp/cert.pem"),
        ]);
        assert!(e.contains("both name a client certificate"), "{e}");
        let jks = dir.path().join("keystore.jks");
        std::fs::write(&jks, [0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2]).unwrap();
        let e = refused(&[
            ("security.protocol", "SSL"),
            ("ssl.keystore.location", jks.to_str().unwrap()),
            ("ssl.keystore.password", "changeit"),
        ]);
        assert!(e.contains("Java keystore (JKS)") && e.contains("keytool -importkeystore"), "{e}");
        let pairs =
            [("security.protocol", "SSL"), ("ssl.keystore.location", location), ("ssl.keystore.password", "changeit")];
        let security = WireSecurity::from_settings(&settings(&pairs)).unwrap();
        assert_eq!(security.tls.unwrap().client_certificate, Some("ssl.keystore.location"));
    }

    /// RFC 7677, section 3.
    const NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const SERVER_FIRST: &str = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    #[test]
    fn scram_sha_256_answers_rfc_7677s_test_vector() {
        let sasl = sasl_of(Mechanism::ScramSha256, "user", "pencil");
        let mut scram = Scram::new(&sasl, NONCE.into());
        assert_eq!(scram.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let client_final = scram.client_final(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(client_final).unwrap(), CLIENT_FINAL);
        scram.check_server_final(SERVER_FINAL.as_bytes()).unwrap();
        // The second exchange takes the salted password from the cache and gets the same proof.
        let mut again = Scram::new(&sasl, NONCE.into());
        assert_eq!(again.client_final(SERVER_FIRST.as_bytes()).unwrap(), CLIENT_FINAL.as_bytes());
    }

    #[test]
    fn a_wrong_server_signature_is_refused() {
        let sasl = sasl_of(Mechanism::ScramSha256, "user", "pencil");
        let mut scram = Scram::new(&sasl, NONCE.into());
        scram.client_final(SERVER_FIRST.as_bytes()).unwrap();
        let e = scram.check_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap_err();
        assert!(e.contains("server signature is wrong"), "{e}");
        let e = scram.check_server_final(b"e=invalid-proof").unwrap_err();
        assert!(e.contains("invalid-proof"), "{e}");
    }

    #[test]
    fn a_server_first_message_that_breaks_the_rules_is_refused() {
        let sasl = sasl_of(Mechanism::ScramSha256, "user", "pencil");
        let cases = [
            ("r=rOprNGfwEbeRWgbNEkqO%hvYD,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", "4095 SCRAM iterations"),
            ("r=rOprNGfwEbeRWgbNEkqO%hvYD,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100000000", "100000000 SCRAM iterations"),
            ("r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
            ("r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
            ("m=ext,r=rOprNGfwEbeRWgbNEkqO%hvYD,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "extension"),
            ("r=rOprNGfwEbeRWgbNEkqO%hvYD,i=4096", "lacks"),
        ];
        for (server_first, expected) in cases {
            let e = Scram::new(&sasl, NONCE.into()).client_final(server_first.as_bytes()).unwrap_err();
            assert!(e.contains(expected), "{server_first}: {e}");
        }
    }

    #[test]
    fn scram_escapes_commas_and_equals_signs_in_the_user_name() {
        let sasl = sasl_of(Mechanism::ScramSha512, "a=b,c", "p");
        assert_eq!(Scram::new(&sasl, "n".into()).client_first(), b"n,,n=a=3Db=2Cc,r=n");
    }

    #[test]
    fn plain_sends_the_user_and_password_after_an_empty_authorization_id() {
        assert_eq!(sasl_of(Mechanism::Plain, "alice", "secret").plain_token(), b"\0alice\0secret");
    }
}
