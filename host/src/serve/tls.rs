//! The REST API over HTTPS (`listeners=https://…` with `listeners.https.ssl.*`): the server's
//! rustls config from its keystore (PEM or PKCS12), client certificates checked against the
//! truststore when `ssl.client.auth` asks for them, and a listener that completes each TLS
//! handshake off the accept loop. The same keystore and truststore make the client with which
//! this worker calls the other workers of its cluster.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;

use crate::config::worker::RestTls;

/// How long a client has to complete its TLS handshake, and how many may be under way at once.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const HANDSHAKES_AT_ONCE: usize = 256;
/// Connections whose handshake completed, waiting for the server to take them.
const READY_QUEUE: usize = 64;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &std::path::Path, key: &str) -> Result<Vec<u8>, String> {
    let what = format!("{key}={}", path.display());
    let bytes = crate::config::security::read_bounded(path).map_err(|e| format!("{what}: {e}"))?;
    crate::config::security::refuse_jks(&bytes, &what, &path.display().to_string())?;
    Ok(bytes)
}

fn is_pem(bytes: &[u8], kind: Option<&str>) -> bool {
    kind.map_or_else(
        || bytes.starts_with(b"-----") || String::from_utf8_lossy(bytes).contains("-----BEGIN"),
        |k| k.eq_ignore_ascii_case("PEM"),
    )
}

/// The keystore's certificate chain and private key.
fn identity(tls: &RestTls) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let key_name = format!("{}ssl.keystore.location", tls.prefix);
    let path = tls.keystore_location.as_deref().ok_or_else(|| format!("{key_name} is not set"))?;
    let bytes = read(path, &key_name)?;
    if is_pem(&bytes, tls.keystore_type.as_deref()) {
        let certificates = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{key_name}={}: a certificate cannot be read ({e})", path.display()))?;
        let key = PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
            format!(
                "{key_name}={}: no unencrypted private key found ({e}); an encrypted one can be decrypted with \
                 `openssl pkcs8 -in key.pem -out plain.pem`",
                path.display()
            )
        })?;
        if certificates.is_empty() {
            return Err(format!("{key_name}={} holds no certificate", path.display()));
        }
        return Ok((certificates, key));
    }
    let password = tls.keystore_password.as_deref().unwrap_or("");
    let store = openssl::pkcs12::Pkcs12::from_der(&bytes)
        .map_err(|e| format!("{key_name}={} is neither PEM nor PKCS12 ({e})", path.display()))?;
    let parsed = store.parse2(password).map_err(|_| {
        format!("{key_name}={} cannot be opened with {}ssl.keystore.password", path.display(), tls.prefix)
    })?;
    let der = |e: openssl::error::ErrorStack| format!("{key_name}={}: {e}", path.display());
    let key = parsed.pkey.ok_or_else(|| format!("{key_name}={} holds no private key", path.display()))?;
    let key = PrivateKeyDer::try_from(key.private_key_to_pkcs8().map_err(der)?)
        .map_err(|e| format!("{key_name}={}: {e}", path.display()))?;
    let mut certificates = Vec::new();
    for certificate in parsed.cert.into_iter().chain(parsed.ca.into_iter().flatten()) {
        certificates.push(CertificateDer::from(certificate.to_der().map_err(der)?));
    }
    if certificates.is_empty() {
        return Err(format!("{key_name}={} holds no certificate", path.display()));
    }
    Ok((certificates, key))
}

/// The truststore's certificates, if one is set.
fn trusted(tls: &RestTls) -> Result<Option<rustls::RootCertStore>, String> {
    let key_name = format!("{}ssl.truststore.location", tls.prefix);
    let Some(path) = tls.truststore_location.as_deref() else { return Ok(None) };
    let bytes = read(path, &key_name)?;
    let certificates: Vec<CertificateDer<'static>> = if is_pem(&bytes, tls.truststore_type.as_deref()) {
        CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{key_name}={}: a certificate cannot be read ({e})", path.display()))?
    } else {
        let store = openssl::pkcs12::Pkcs12::from_der(&bytes)
            .map_err(|e| format!("{key_name}={} is neither PEM nor PKCS12 ({e})", path.display()))?;
        let parsed = store.parse2(tls.truststore_password.as_deref().unwrap_or("")).map_err(|_| {
            format!("{key_name}={} cannot be opened with {}ssl.truststore.password", path.display(), tls.prefix)
        })?;
        let mut certificates = Vec::new();
        for certificate in parsed.cert.into_iter().chain(parsed.ca.into_iter().flatten()) {
            let der = certificate.to_der().map_err(|e| format!("{key_name}={}: {e}", path.display()))?;
            certificates.push(CertificateDer::from(der));
        }
        certificates
    };
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(format!("{key_name}={} holds no usable certificate", path.display()));
    }
    Ok(Some(roots))
}

/// The REST API's server config.
pub fn server_config(tls: &RestTls) -> Result<Arc<rustls::ServerConfig>, String> {
    let (certificates, key) = identity(tls)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let builder = match (tls.client_auth.as_str(), trusted(tls)?) {
        ("requested" | "required", Some(roots)) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
            let verifier = if tls.client_auth == "requested" { verifier.allow_unauthenticated() } else { verifier };
            let verifier = verifier.build().map_err(|e| format!("cannot check client certificates: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(certificates, key)
        .map_err(|e| format!("{}ssl.keystore.location: the key does not go with the certificate ({e})", tls.prefix))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The client with which this worker calls the others over HTTPS: it trusts the truststore
/// (or, without one, the keystore's own chain) and presents the keystore's certificate.
pub fn peer_client(tls: &RestTls) -> Result<ureq::tls::TlsConfig, String> {
    use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig, TlsProvider};
    let (certificates, key) = identity(tls)?;
    let roots: Vec<Certificate<'static>> = match tls.truststore_location.as_deref() {
        Some(path) => {
            let key_name = format!("{}ssl.truststore.location", tls.prefix);
            let bytes = read(path, &key_name)?;
            if is_pem(&bytes, tls.truststore_type.as_deref()) {
                CertificateDer::pem_slice_iter(&bytes)
                    .filter_map(Result::ok)
                    .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                    .collect()
            } else {
                trusted(tls)?;
                certificates.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect()
            }
        }
        None => certificates.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect(),
    };
    let client_certificates: Vec<Certificate<'static>> =
        certificates.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect();
    // ureq takes a key of a known kind from PEM text.
    let label = match &key {
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    };
    let pem = {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(key.secret_der());
        let lines: Vec<&str> = encoded.as_bytes().chunks(64).filter_map(|c| std::str::from_utf8(c).ok()).collect();
        format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
    };
    let private =
        PrivateKey::from_pem(pem.as_bytes()).map_err(|e| format!("the keystore's key cannot be used ({e})"))?;
    Ok(TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::new_with_certs(&roots))
        .client_cert(Some(ClientCert::new_with_certs(&client_certificates, private)))
        .build())
}

/// Accepts TCP connections and hands on those whose TLS handshake completed.
pub struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    pub fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (to_server, ready) = tokio::sync::mpsc::channel(READY_QUEUE);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES_AT_ONCE));
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!("REST listener: cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(permit) = handshakes.clone().acquire_owned().await else { return };
                let (acceptor, to_server) = (acceptor.clone(), to_server.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = to_server.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!("REST listener: TLS handshake with {peer} failed: {e}"),
                        Err(_) => tracing::debug!("REST listener: {peer} did not finish its TLS handshake in time"),
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for crate::rest::auth::ClientAddress
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        crate::rest::auth::ClientAddress(*stream.remote_addr())
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for crate::rest::auth::ClientAddress
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        crate::rest::auth::ClientAddress(*stream.remote_addr())
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept loop ended (the runtime is shutting down): nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
