//! TLS for plugins (`wasi:tls`): a plugin starts a handshake over a socket it opened within its
//! grants, and the host runs it under the policy its connector's config set for that server. A
//! JDBC URL's TLS settings (`sslmode`, `sslrootcert`, `serverSslCert`, …, read by
//! `wharf_jdbc_url`) become a policy for each of its servers; any other server's certificate must
//! chain to the authorities of `wasm.tls.trust`, or to the public ones (Mozilla's list) without
//! it, and name the server. The plugin names the
//! server and nothing else: it cannot loosen what the config asks.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use wasmtime_wasi_tls::{TlsProvider, TlsStream, TlsTransport, WasiTlsCtx, WasiTlsCtxBuilder};
use wharf_jdbc_url::Roots;

use crate::config::connector::{ServerTls, Verify};

/// The longest a handshake may take before the host gives it up.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most certificates one trusted-roots file may hold.
const MAX_ROOTS: usize = 1_000;

/// The largest trusted-roots file read.
const MAX_ROOTS_FILE_BYTES: u64 = 4 << 20;

/// The `wasi:tls` context of a task: its servers' policies.
pub fn context(label: &str, servers: &[ServerTls]) -> WasiTlsCtx {
    WasiTlsCtxBuilder::new().provider(Box::new(provider(label, servers))).build()
}

fn provider(label: &str, servers: &[ServerTls]) -> PolicyProvider {
    let servers = servers
        .iter()
        .map(|server| {
            let config = client_config(server).map_err(|problem| {
                let to = server.host.as_deref().unwrap_or("the servers no JDBC URL names");
                format!("cannot set up TLS to {to} as {} asks: {problem}", server.origin)
            });
            if let Err(problem) = &config {
                tracing::warn!("{label}: {problem}; a connection to it will fail until the setting is fixed");
            }
            Policy { server: server.clone(), config }
        })
        .collect();
    PolicyProvider { servers }
}

type Handshake = Pin<Box<dyn Future<Output = Result<Box<dyn TlsStream>, wasmtime_wasi_tls::Error>> + Send>>;

struct PolicyProvider {
    servers: Vec<Policy>,
}

/// A server's policy, with the client configuration it makes (or why it cannot be made).
struct Policy {
    server: ServerTls,
    config: Result<Arc<ClientConfig>, String>,
}

impl TlsProvider for PolicyProvider {
    fn connect(&self, server_name: String, transport: Box<dyn TlsTransport>) -> Handshake {
        let wanted = server_name.trim_matches(['[', ']']).to_ascii_lowercase();
        let named = |p: &&Policy| {
            p.server.host.as_deref().is_some_and(|h| h.trim_matches(['[', ']']).eq_ignore_ascii_case(&wanted))
        };
        let found = self.servers.iter().find(named).or_else(|| self.servers.iter().find(|p| p.server.host.is_none()));
        let (config, policy) = match found {
            Some(found) => (found.config.clone(), Some(found.server.clone())),
            None => (public_config().clone(), None),
        };
        Box::pin(async move {
            let fail = |message: String| wasmtime_wasi_tls::Error::msg(message);
            let config = config.map_err(fail)?;
            let name = ServerName::try_from(wanted.clone())
                .map_err(|_| fail(format!("\"{server_name}\" is not a host name or an IP address to verify")))?;
            let connector = tokio_rustls::TlsConnector::from(config);
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, transport)).await {
                Err(_) => Err(fail(format!(
                    "the TLS handshake with {server_name} did not finish within {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                ))),
                Ok(Err(e)) => Err(fail(explain(&server_name, policy.as_ref(), e))),
                Ok(Ok(stream)) => Ok(Box::new(stream) as Box<dyn TlsStream>),
            }
        })
    }
}

/// A failed handshake in words a person can act on: what the certificate lacked, and which
/// setting decides it.
fn explain(server: &str, policy: Option<&ServerTls>, error: std::io::Error) -> String {
    let trusted = match policy.and_then(|p| p.roots.as_ref()) {
        Some(Roots::File(path)) => format!("the certificates in {path}"),
        Some(Roots::Pem(_)) => "the certificate given in the URL".to_string(),
        None => "the public certificate authorities".to_string(),
    };
    let setting = policy.map_or_else(|| "the plugin's settings".to_string(), |p| p.origin.clone());
    // What makes a server trusted: the JDBC URL's settings for the servers it names,
    // wasm.tls.trust for any other.
    let (trust_fix, name_fix) = if policy.is_none_or(|p| p.host.is_none()) {
        (
            "name a file holding the authority that signed it in wasm.tls.trust".to_string(),
            "connect by a name the certificate holds (a server no JDBC URL names is verified by name, with \
             wasm.tls.trust or without)"
                .to_string(),
        )
    } else {
        (
            format!("name the authority that signed it (sslrootcert, serverSslCert) or loosen {setting}"),
            format!(
                "connect by a name the certificate holds, or verify only the chain (sslmode=verify-ca, \
                 sslMode=verify-ca) in {setting}"
            ),
        )
    };
    let cause = error.to_string();
    let hint = match error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::BadSignature)) => {
            format!("its certificate is not signed by {trusted}; {trust_fix}")
        }
        Some(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => format!("its certificate does not name {server}; {name_fix}"),
        Some(rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. } | CertificateError::NotValidYet,
        )) => "its certificate is outside its validity dates; renew it on the server".to_string(),
        Some(rustls::Error::InvalidCertificate(_)) => format!("its certificate was refused under {setting}"),
        _ => "check that the server speaks TLS on this connection".to_string(),
    };
    format!("TLS with {server} failed ({cause}): {hint}")
}

fn crypto() -> Arc<CryptoProvider> {
    static PROVIDER: LazyLock<Arc<CryptoProvider>> =
        LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));
    PROVIDER.clone()
}

/// Full verification against the public authorities: for servers no config names.
fn public_config() -> &'static Result<Arc<ClientConfig>, String> {
    static CONFIG: LazyLock<Result<Arc<ClientConfig>, String>> = LazyLock::new(|| {
        let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        ClientConfig::builder_with_provider(crypto())
            .with_safe_default_protocol_versions()
            .map(|builder| Arc::new(builder.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
    });
    &CONFIG
}

fn client_config(server: &ServerTls) -> Result<Arc<ClientConfig>, String> {
    if server.verify == Verify::ChainAndName && server.roots.is_none() {
        return public_config().clone();
    }
    let builder = ClientConfig::builder_with_provider(crypto())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match server.verify {
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate { crypto: crypto() }))
            .with_no_client_auth(),
        Verify::ChainAndName => builder.with_root_certificates(roots(server.roots.as_ref())?).with_no_client_auth(),
        Verify::Chain => {
            let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(server.roots.as_ref())?), crypto())
                .build()
                .map_err(|e| e.to_string())?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyName { chain })).with_no_client_auth()
        }
    };
    Ok(Arc::new(config))
}

/// The certificates to trust: a PEM file, PEM text, or the public authorities.
fn roots(given: Option<&Roots>) -> Result<RootCertStore, String> {
    let pem = match given {
        None => return Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }),
        Some(Roots::Pem(text)) => text.clone().into_bytes(),
        Some(Roots::File(path)) => {
            let size = std::fs::metadata(path).map_err(|e| format!("cannot read {path}: {e}"))?.len();
            if size > MAX_ROOTS_FILE_BYTES {
                return Err(format!("{path} is {size} bytes, more than a file of certificates holds"));
            }
            std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?
        }
    };
    let what = match given {
        Some(Roots::File(path)) => path.as_str(),
        _ => "the PEM text",
    };
    let mut store = RootCertStore::empty();
    for (i, certificate) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        if i >= MAX_ROOTS {
            return Err(format!("{what} holds more than {MAX_ROOTS} certificates"));
        }
        let certificate = certificate.map_err(|e| format!("{what} is not PEM certificates: {e}"))?;
        store.add(certificate).map_err(|e| format!("{what} holds a certificate that cannot be trusted: {e}"))?;
    }
    if store.is_empty() {
        return Err(format!("{what} holds no certificate (-----BEGIN CERTIFICATE-----)"));
    }
    Ok(store)
}

/// Accepts any certificate, checking only that the server holds its key: encryption without
/// authentication, as `sslmode=require` asks.
#[derive(Debug)]
struct AnyCertificate {
    crypto: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            certificate,
            signed,
            &self.crypto.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            certificate,
            signed,
            &self.crypto.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.crypto.signature_verification_algorithms.supported_schemes()
    }
}

/// Verifies the chain and the dates as usual, and accepts a certificate for any name
/// (`verify-ca`). The chain is checked before the name, so a name error means the chain held.
#[derive(Debug)]
struct AnyName {
    chain: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, certificate, signed)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, certificate, signed)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An authority (PEM) and a server certificate and key it issued for `names`.
    fn issued(names: &[&str]) -> (String, String, String) {
        let mut authority = CertificateParams::new(Vec::<String>::new()).unwrap();
        authority.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let authority_key = KeyPair::generate().unwrap();
        let authority_pem = authority.self_signed(&authority_key).unwrap().pem();
        let issuer = Issuer::new(authority, authority_key);
        let server = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        let server_key = KeyPair::generate().unwrap();
        let server_pem = server.signed_by(&server_key, &issuer).unwrap().pem();
        (authority_pem, server_pem, server_key.serialize_pem())
    }

    /// A TLS server on loopback that answers one connection's "ping" with "pong".
    async fn serve(certificate: &str, key: &str) -> std::net::SocketAddr {
        let chain = CertificateDer::pem_slice_iter(certificate.as_bytes()).map(Result::unwrap).collect();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(crypto())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                if let Ok(mut stream) = acceptor.accept(socket).await {
                    let mut ping = [0u8; 4];
                    if stream.read_exact(&mut ping).await.is_ok() {
                        let _ = stream.write_all(b"pong").await;
                        let _ = stream.flush().await;
                    }
                }
            }
        });
        address
    }

    fn policy(host: &str, verify: Verify, roots: Option<Roots>) -> ServerTls {
        ServerTls { host: Some(host.into()), verify, roots, origin: "connection.url".into() }
    }

    /// A handshake through a task's provider with `servers`' policies, as the plugin names
    /// `server_name`, then one exchange.
    async fn talk(servers: &[ServerTls], address: std::net::SocketAddr, server_name: &str) -> Result<(), String> {
        let provider = provider("test", servers);
        let socket = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut stream = provider.connect(server_name.into(), Box::new(socket)).await.map_err(|e| e.to_string())?;
        stream.write_all(b"ping").await.unwrap();
        stream.flush().await.unwrap();
        let mut pong = [0u8; 4];
        stream.read_exact(&mut pong).await.unwrap();
        assert_eq!(&pong, b"pong");
        Ok(())
    }

    #[tokio::test]
    async fn each_mode_checks_what_the_drivers_check() {
        let dir = tempfile::tempdir().unwrap();
        let (authority, certificate, key) = issued(&["db.example.test", "127.0.0.1"]);
        let (other_authority, _, _) = issued(&["elsewhere.test"]);
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &authority).unwrap();
        let ca = Some(Roots::File(ca.display().to_string()));
        let address = serve(&certificate, &key).await;

        // verify-full: the chain and the name.
        talk(&[policy("127.0.0.1", Verify::ChainAndName, ca.clone())], address, "127.0.0.1").await.unwrap();
        let wrong_name = talk(&[policy("localhost", Verify::ChainAndName, ca.clone())], address, "localhost").await;
        let message = wrong_name.unwrap_err();
        assert!(message.contains("does not name localhost") && message.contains("verify-ca"), "{message}");
        // verify-ca: the chain, any name.
        talk(&[policy("localhost", Verify::Chain, ca.clone())], address, "localhost").await.unwrap();
        let stranger = Some(Roots::Pem(other_authority));
        let message =
            talk(&[policy("localhost", Verify::Chain, stranger.clone())], address, "localhost").await.unwrap_err();
        assert!(message.contains("not signed by the certificate given in the URL"), "{message}");
        // require: encrypted, nothing verified.
        talk(&[policy("localhost", Verify::Nothing, stranger)], address, "localhost").await.unwrap();
        // A server no config names: the public authorities, which did not sign this one.
        let message = talk(&[policy("other", Verify::Nothing, None)], address, "127.0.0.1").await.unwrap_err();
        assert!(
            message.contains("not signed by the public certificate authorities") && message.contains("wasm.tls.trust"),
            "{message}"
        );
        // ... or the authorities of wasm.tls.trust, and the name still counts.
        let every_other =
            ServerTls { host: None, verify: Verify::ChainAndName, roots: ca.clone(), origin: "wasm.tls.trust".into() };
        talk(&[policy("other", Verify::Nothing, None), every_other.clone()], address, "127.0.0.1").await.unwrap();
        let message = talk(std::slice::from_ref(&every_other), address, "localhost").await.unwrap_err();
        assert!(message.contains("does not name localhost") && message.contains("wasm.tls.trust"), "{message}");
        let stranger_file = dir.path().join("stranger.pem");
        std::fs::write(&stranger_file, issued(&["x.test"]).0).unwrap();
        let stranger = ServerTls { roots: Some(Roots::File(stranger_file.display().to_string())), ..every_other };
        let message = talk(&[stranger], address, "127.0.0.1").await.unwrap_err();
        assert!(message.contains("not signed by the certificates in") && message.contains("stranger.pem"), "{message}");
    }

    #[tokio::test]
    async fn a_file_of_roots_that_cannot_be_read_fails_the_connection_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (_, certificate, key) = issued(&["127.0.0.1"]);
        let address = serve(&certificate, &key).await;
        let missing = dir.path().join("missing.pem").display().to_string();
        let message =
            talk(&[policy("127.0.0.1", Verify::Chain, Some(Roots::File(missing.clone())))], address, "127.0.0.1")
                .await
                .unwrap_err();
        assert!(message.contains(&format!("cannot read {missing}")) && message.contains("connection.url"), "{message}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate").unwrap();
        let message = talk(
            &[policy("127.0.0.1", Verify::Chain, Some(Roots::File(empty.display().to_string())))],
            address,
            "127.0.0.1",
        )
        .await
        .unwrap_err();
        assert!(message.contains("holds no certificate"), "{message}");
    }
}
