//! Outgoing HTTP for plugins (wasi:http). A request goes only to an authority granted in
//! `wasm.http.allow`, and only to the addresses its name had when the task started: the host
//! never looks the name up again when it sends, so a name whose DNS answer changes while the
//! task runs (DNS rebinding, to a cloud's metadata address say) cannot carry a request
//! elsewhere. `wasm.net.connect` holds its TCP grants to their start-time addresses the same way
//! (`sandbox::grant_network`).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::network::{resolve_grant, socket_room};
use super::plugin_log::PluginLog;

/// What wasmtime-wasi-http drives after the response head: the rest of the connection.
type Connection = Box<dyn Future<Output = Result<(), Error>> + Send>;
type Sent = Result<(http::Response<WasiBody>, Connection), Error>;

/// How long connecting, and waiting for a response's head, may take when the plugin sets no
/// timeout of its own. Each read of a response by the plugin is also bounded by its call's
/// `wasm.call.timeout.ms`.
const HTTP_DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The authorities a task may send HTTP requests to, each with the addresses it had at start.
pub(crate) struct HttpGrant {
    log: PluginLog,
    /// `host:port`, host in lower case, as `wasm.http.allow` names it.
    pinned: HashMap<String, Vec<SocketAddr>>,
    /// `wasm.max.sockets.per.worker`.
    max_sockets: usize,
}

impl HttpGrant {
    /// Resolves every granted authority now (a name that does not resolve fails the task's
    /// start, saying which).
    pub(super) fn new(log: PluginLog, authorities: &[String], max_sockets: usize) -> anyhow::Result<HttpGrant> {
        let mut pinned = HashMap::with_capacity(authorities.len());
        for authority in authorities {
            let authority = authority.to_ascii_lowercase();
            let addresses = resolve_grant("wasm.http.allow", &authority)?;
            pinned.insert(authority, addresses);
        }
        Ok(HttpGrant { log, pinned, max_sockets })
    }
}

impl WasiHttpHooks for HttpGrant {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        // Only wasmtime's own request futures use `fut`; a request sent here reports through
        // the returned future.
        _ = fut;
        let uri = request.uri();
        let tls = uri.scheme_str() == Some("https");
        let default_port = if tls { 443 } else { 80 };
        let target = uri.authority().map(|a| (a.host().to_ascii_lowercase(), a.port_u16().unwrap_or(default_port)));
        let authority = target.as_ref().map(|(host, port)| format!("{host}:{port}"));
        let addresses = authority.as_ref().and_then(|a| self.pinned.get(a)).cloned();
        let (Some((host, _)), Some(addresses)) = (target, addresses) else {
            self.log.refused(&format!(
                "refused HTTP request to {}: not granted in wasm.http.allow",
                authority.as_deref().unwrap_or("(no authority)")
            ));
            return Box::new(std::future::ready(Err(Error::HttpRequestDenied)));
        };
        if let Err(why) = socket_room(self.max_sockets) {
            self.log.refused(&format!("refused HTTP request to {host}: {why}"));
            return Box::new(std::future::ready(Err(Error::HttpRequestDenied)));
        }
        Box::new(send_pinned(request, options, host, tls, addresses))
    }
}

/// A byte stream to the server, plain or TLS.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// Sends `request` over a new HTTP/1.1 connection to one of `addresses`, with TLS to `host`
/// when `tls`.
async fn send_pinned(
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    host: String,
    tls: bool,
    addresses: Vec<SocketAddr>,
) -> Sent {
    let connect_timeout = options.and_then(|o| o.connect_timeout).unwrap_or(HTTP_DEFAULT_TIMEOUT);
    let head_timeout = options.and_then(|o| o.first_byte_timeout).unwrap_or(HTTP_DEFAULT_TIMEOUT);
    let within = |future| tokio::time::timeout(connect_timeout, future);

    let tcp = within(tokio::net::TcpStream::connect(&addresses[..]))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Connect)?;
    let stream: Box<dyn Stream> = if tls {
        let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_string())?;
        let secured = tokio::time::timeout(connect_timeout, tls_connector()?.connect(name, tcp))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        Box::new(secured)
    } else {
        Box::new(tcp)
    };
    let (mut sender, connection) =
        tokio::time::timeout(connect_timeout, hyper::client::conn::http1::handshake(TokioIo::new(stream)))
            .await
            .map_err(|_| Error::ConnectionTimeout)??;

    // The request line carries the path alone; the authority is in the Host header already.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;

    // The connection must be driven while the response head is awaited.
    let mut connection = Some(Box::pin(connection));
    let sending = tokio::time::timeout(head_timeout, sender.send_request(request));
    tokio::pin!(sending);
    let response = loop {
        let Some(driving) = connection.as_mut() else { break sending.await };
        tokio::select! {
            sent = &mut sending => break sent,
            ended = driving => {
                connection = None;
                ended?;
            }
        }
    };
    let response = response.map_err(|_| Error::ConnectionReadTimeout)??;
    let rest: Connection = Box::new(async move {
        match connection {
            Some(connection) => connection.await.map_err(Error::from),
            None => Ok(()),
        }
    });
    Ok((response.map(|body| body.map_err(Error::from).boxed_unsync()), rest))
}

/// TLS to servers whose certificates chain to the Web PKI's roots (Mozilla's list).
fn tls_connector() -> Result<tokio_rustls::TlsConnector, Error> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map(|builder| Arc::new(builder.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
    });
    match config {
        Ok(config) => Ok(tokio_rustls::TlsConnector::from(config.clone())),
        Err(message) => Err(Error::InternalError(Some(format!("cannot set up TLS: {message}")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::pin::Pin;

    /// Answers one request with 204 and hands back what it received.
    fn one_shot_server() -> (SocketAddr, std::thread::JoinHandle<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let served = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut received = [0u8; 4096];
            let n = stream.read(&mut received).unwrap();
            stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n").unwrap();
            String::from_utf8_lossy(&received[..n]).into_owned()
        });
        (address, served)
    }

    fn request(uri: &str, host: &str) -> http::Request<WasiBody> {
        let body = http_body_util::Empty::new().map_err(|never| match never {}).boxed_unsync();
        http::Request::get(uri).header(http::header::HOST, host).body(body).unwrap()
    }

    fn send(grant: &mut HttpGrant, request: http::Request<WasiBody>) -> Result<u16, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let sent = grant.send_request(request, None, Box::new(std::future::ready(Ok(()))));
        runtime.block_on(async move {
            let (response, rest) = Pin::from(sent).await?;
            let status = response.status().as_u16();
            Pin::from(rest).await?;
            Ok(status)
        })
    }

    #[test]
    fn a_request_goes_to_the_address_pinned_at_start_without_a_new_lookup() {
        let (address, served) = one_shot_server();
        // A name that never resolves (RFC 6761): the request can only reach the server through
        // the pinned address.
        let authority = format!("pinned.invalid:{}", address.port());
        let log = PluginLog::new("http-test", 8192, 100);
        let mut grant =
            HttpGrant { log, pinned: HashMap::from([(authority.clone(), vec![address])]), max_sockets: 4096 };
        let status = send(&mut grant, request(&format!("http://{authority}/path?q=1"), &authority));
        assert_eq!(status.unwrap(), 204);
        let received = served.join().unwrap();
        assert!(received.starts_with("GET /path?q=1 HTTP/1.1\r\n"), "{received}");
        assert!(received.to_ascii_lowercase().contains(&format!("host: {authority}")), "{received}");
    }

    #[test]
    fn a_request_to_an_authority_not_granted_is_refused() {
        let log = PluginLog::new("http-test", 8192, 100);
        let mut grant = HttpGrant { log, pinned: HashMap::new(), max_sockets: 4096 };
        let refused = send(&mut grant, request("http://127.0.0.1:9/", "127.0.0.1:9"));
        assert!(matches!(refused, Err(Error::HttpRequestDenied)), "{refused:?}");
    }
}
