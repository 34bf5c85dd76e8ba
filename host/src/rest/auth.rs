//! HTTP Basic authentication of REST requests, the role Kafka Connect's
//! `BasicAuthSecurityRestExtension` plays: with `wharf.rest.basic.auth.credentials.file` (or
//! that extension named in `rest.extension.classes`) every request must carry
//! `Authorization: Basic …` with a user and password of the credentials file, or is answered
//! 401 with a `WWW-Authenticate` challenge. The file holds `name=<hash>` lines (a Java
//! properties file), each hash made by `wharf rest-credential NAME`: PBKDF2-HMAC-SHA256 with a
//! salt of its own, never the password.
//!
//! As in Connect, the worker-to-worker endpoint `POST /connectors/{name}/tasks` is left to the
//! workers' own means: it is how a follower hands its task configs to the leader.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::ApiError;

/// The hash's name in a credentials line: `$pbkdf2-sha256$i=<iterations>$<salt>$<hash>`.
const SCHEME: &str = "pbkdf2-sha256";
/// Iterations of a new hash (OWASP's advice for PBKDF2-HMAC-SHA256), and the fewest accepted.
const ITERATIONS: u32 = 600_000;
const MIN_ITERATIONS: u32 = 10_000;
const SALT_BYTES: usize = 16;
const HASH_BYTES: usize = 32;
/// A checked user and password is remembered this long, so that a client's every request does
/// not cost a PBKDF2; at most this many are remembered.
const REMEMBERED_FOR: Duration = Duration::from_secs(300);
const REMEMBERED_MAX: usize = 256;
/// The largest credentials file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

struct Hash {
    iterations: NonZeroU32,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

/// Consecutive failed checks a client address may make before it must wait; each failure
/// beyond doubles the wait, up to `MAX_BACKOFF`.
const FREE_FAILURES: u32 = 5;
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Client addresses whose failures are kept at most; beyond, the oldest go.
const MAX_TRACKED_ADDRESSES: usize = 10_000;

/// The users of a credentials file and the checks lately passed.
pub struct Credentials {
    users: BTreeMap<String, Hash>,
    /// SHA-256 of (user, password) of a passed check, and when it passed.
    remembered: Mutex<BTreeMap<[u8; 32], Instant>>,
    /// A hash no password is known to match, checked for an unknown user: a wrong user costs
    /// what a wrong password does, and timing tells no names.
    decoy: Hash,
    /// Password checks running now; at most `wharf.rest.max.concurrent.password.checks`.
    checks: Arc<tokio::sync::Semaphore>,
    /// Per client address: failed checks in a row, and when the last one failed.
    failures: Mutex<std::collections::HashMap<std::net::IpAddr, (u32, Instant)>>,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD_NO_PAD
}

/// A credentials line's hash of `password`, with a new random salt.
pub fn hash_password(password: &str) -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut salt = [0u8; SALT_BYTES];
    ring::rand::SystemRandom::new().fill(&mut salt).map_err(|_| "the system gave no random bytes".to_string())?;
    let iterations = NonZeroU32::new(ITERATIONS).ok_or("no iterations")?;
    let mut hash = [0u8; HASH_BYTES];
    ring::pbkdf2::derive(ring::pbkdf2::PBKDF2_HMAC_SHA256, iterations, &salt, password.as_bytes(), &mut hash);
    Ok(format!("${SCHEME}$i={ITERATIONS}${}${}", b64().encode(salt), b64().encode(hash)))
}

fn parse_hash(text: &str) -> Result<Hash, String> {
    let parts: Vec<&str> = text.trim().split('$').collect();
    let ["", scheme, iterations, salt, hash] = parts.as_slice() else {
        return Err(format!("is not a hash of `wharf rest-credential` (${SCHEME}$i=…$salt$hash)"));
    };
    if *scheme != SCHEME {
        return Err(format!("uses {scheme}; only {SCHEME} is known"));
    }
    let iterations: u32 = iterations
        .strip_prefix("i=")
        .and_then(|i| i.parse().ok())
        .ok_or_else(|| format!("has no iteration count (i=…): {iterations}"))?;
    if iterations < MIN_ITERATIONS {
        return Err(format!("has {iterations} iterations, fewer than {MIN_ITERATIONS}; make it again"));
    }
    let decode =
        |what: &str, value: &str| b64().decode(value).map_err(|e| format!("has a {what} that is not base64 ({e})"));
    Ok(Hash {
        iterations: NonZeroU32::new(iterations).ok_or("has no iterations")?,
        salt: decode("salt", salt)?,
        hash: decode("hash", hash)?,
    })
}

impl Credentials {
    /// Reads a credentials file; `key` is the setting that names it, for messages.
    /// `max_checks` password checks run at once.
    pub fn load(path: &Path, key: &str, max_checks: usize) -> Result<Self, String> {
        let text = crate::config::files::read_regular_text(path, MAX_FILE_BYTES)
            .map_err(|e| format!("{key}={}: cannot read it: {e}", path.display()))?;
        let props = crate::config::properties::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
        let mut users = BTreeMap::new();
        for p in props {
            let hash = parse_hash(&p.value).map_err(|why| {
                format!(
                    "{key}={}, line {}: the entry of {} {why}; make it with `wharf rest-credential {}`",
                    path.display(),
                    p.line,
                    p.key,
                    p.key
                )
            })?;
            users.insert(p.key, hash);
        }
        if users.is_empty() {
            return Err(format!(
                "{key}={} names no user: add lines made with `wharf rest-credential NAME`",
                path.display()
            ));
        }
        // Random bytes no derivation is known to give: as costly to check as a real hash.
        let decoy = Hash {
            iterations: NonZeroU32::new(ITERATIONS).ok_or("no iterations")?,
            salt: rand_bytes()?[..SALT_BYTES].to_vec(),
            hash: rand_bytes()?[..HASH_BYTES].to_vec(),
        };
        Ok(Credentials {
            users,
            remembered: Mutex::new(BTreeMap::new()),
            decoy,
            checks: Arc::new(tokio::sync::Semaphore::new(max_checks.max(1))),
            failures: Mutex::new(std::collections::HashMap::new()),
        })
    }

    pub fn users(&self) -> usize {
        self.users.len()
    }

    /// Whether `password` is `user`'s. Costs a PBKDF2 unless the same pair passed lately.
    pub fn check(&self, user: &str, password: &str) -> bool {
        self.passed_lately(user, password) || self.verify(user, password)
    }

    /// SHA-256 of the pair, the key of `remembered`.
    fn pair_key(user: &str, password: &str) -> [u8; 32] {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(user.as_bytes());
        context.update(&[0]);
        context.update(password.as_bytes());
        let digest = context.finish();
        let mut key = [0u8; 32];
        key.copy_from_slice(digest.as_ref());
        key
    }

    /// Whether the pair passed a check lately: no PBKDF2 needed.
    fn passed_lately(&self, user: &str, password: &str) -> bool {
        if !self.users.contains_key(user) {
            return false;
        }
        let key = Self::pair_key(user, password);
        self.remembered
            .lock()
            .is_ok_and(|remembered| remembered.get(&key).is_some_and(|at| at.elapsed() < REMEMBERED_FOR))
    }

    /// The PBKDF2 check, the same cost for an unknown user (against the decoy) as for a known one.
    fn verify(&self, user: &str, password: &str) -> bool {
        let (stored, known) = match self.users.get(user) {
            Some(stored) => (stored, true),
            None => (&self.decoy, false),
        };
        let key = Self::pair_key(user, password);
        let passed = ring::pbkdf2::verify(
            ring::pbkdf2::PBKDF2_HMAC_SHA256,
            stored.iterations,
            &stored.salt,
            password.as_bytes(),
            &stored.hash,
        )
        .is_ok()
            && known;
        if passed {
            if let Ok(mut remembered) = self.remembered.lock() {
                remembered.retain(|_, at| at.elapsed() < REMEMBERED_FOR);
                if remembered.len() < REMEMBERED_MAX {
                    remembered.insert(key, Instant::now());
                }
            }
        }
        passed
    }

    /// How long `address` must still wait before its next check, after failures in a row.
    fn backoff(&self, address: std::net::IpAddr) -> Option<Duration> {
        let failures = self.failures.lock().ok()?;
        let (count, last) = failures.get(&address)?;
        let over = count.checked_sub(FREE_FAILURES)?;
        let wait = Duration::from_secs(1u64 << over.min(6)).min(MAX_BACKOFF);
        wait.checked_sub(last.elapsed())
    }

    /// Counts a check of `address`: a pass forgets its failures.
    fn record(&self, address: std::net::IpAddr, passed: bool) {
        let Ok(mut failures) = self.failures.lock() else { return };
        if passed {
            failures.remove(&address);
            return;
        }
        if failures.len() >= MAX_TRACKED_ADDRESSES && !failures.contains_key(&address) {
            failures.retain(|_, (_, last)| last.elapsed() < MAX_BACKOFF);
            if failures.len() >= MAX_TRACKED_ADDRESSES {
                let oldest = failures.iter().min_by_key(|(_, (_, last))| *last).map(|(a, _)| *a);
                if let Some(oldest) = oldest {
                    failures.remove(&oldest);
                }
            }
        }
        let entry = failures.entry(address).or_insert((0, Instant::now()));
        *entry = (entry.0.saturating_add(1), Instant::now());
    }
}

/// Whose failures an address counts toward: an IPv4 address, or an IPv6 address's /64, which one
/// client holds whole (it could otherwise try each of its addresses in turn).
fn client_of(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            std::net::IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
        v4 => v4,
    }
}

/// The address a REST request came from, as the listener (plain or TLS) saw it.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub std::net::SocketAddr);

fn rand_bytes() -> Result<[u8; 32], String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| "the system gave no random bytes".to_string())?;
    Ok(bytes)
}

fn too_many(message: String, wait: Duration) -> Response {
    let mut response = ApiError::new(StatusCode::TOO_MANY_REQUESTS, message).into_response();
    if let Ok(value) = header::HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// The worker-to-worker endpoint, which carries no user's credentials.
fn internal(method: &Method, path: &str) -> bool {
    method == Method::POST
        && path.starts_with("/connectors/")
        && path.ends_with("/tasks")
        && path.matches('/').count() == 3
}

fn unauthorized(message: &str) -> Response {
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Basic realm=\"wharf\", charset=\"UTF-8\""));
    response
}

/// Middleware: the request goes on if it carries credentials of the file (or is internal).
pub async fn check(State(credentials): State<Option<Arc<Credentials>>>, request: Request, next: Next) -> Response {
    let Some(credentials) = credentials else { return next.run(request).await };
    // A member of the cluster signed it over its method, path, time and body (`rest::SignedByMember`).
    if request.extensions().get::<crate::rest::SignedByMember>().is_some() {
        return next.run(request).await;
    }
    if internal(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic ").or_else(|| v.strip_prefix("basic ")))
        .and_then(|encoded| base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let Some(given) = given else {
        return unauthorized("This worker requires HTTP Basic authentication: send Authorization: Basic with a user of its credentials file");
    };
    let Some((user, password)) = given.split_once(':') else {
        return unauthorized("The Authorization header holds no user:password");
    };
    if credentials.passed_lately(user, password) {
        return next.run(request).await;
    }
    let address =
        request.extensions().get::<axum::extract::ConnectInfo<ClientAddress>>().map(|c| client_of(c.0 .0.ip()));
    if let Some(wait) = address.and_then(|a| credentials.backoff(a)) {
        return too_many(
            format!("Too many wrong passwords from this address in a row: try again in {} s", wait.as_secs().max(1)),
            wait,
        );
    }
    // Each check is a quarter second of a core: a few at a time, on threads of their own, so
    // that a flood of guesses neither takes the cores nor the threads that serve other requests.
    let Ok(permit) = credentials.checks.clone().try_acquire_owned() else {
        return too_many(
            "Too many password checks at once (wharf.rest.max.concurrent.password.checks): try again shortly".into(),
            Duration::from_secs(1),
        );
    };
    let (user, password) = (user.to_string(), password.to_string());
    let (answer, answered) = tokio::sync::oneshot::channel();
    let checking = credentials.clone();
    let spawned = std::thread::Builder::new().name("rest-password-check".into()).spawn(move || {
        let passed = checking.verify(&user, &password);
        drop(permit);
        let _ = answer.send(passed);
    });
    if let Err(e) = spawned {
        return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, format!("cannot check the credentials now: {e}"))
            .into_response();
    }
    let passed = answered.await.unwrap_or(false);
    if let Some(address) = address {
        credentials.record(address, passed);
    }
    if passed {
        next.run(request).await
    } else {
        unauthorized("The user or password is not right")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_that_keeps_failing_waits_longer_and_a_pass_forgets_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials.properties");
        std::fs::write(&file, format!("alice={}\n", hash_password("pw").unwrap())).unwrap();
        let credentials = Credentials::load(&file, "k", 2).unwrap();
        let address: std::net::IpAddr = "192.0.2.7".parse().unwrap();
        for _ in 0..FREE_FAILURES {
            assert_eq!(credentials.backoff(address), None);
            credentials.record(address, false);
        }
        credentials.record(address, false);
        let wait = credentials.backoff(address).unwrap();
        assert!(wait > Duration::from_millis(1500) && wait <= Duration::from_secs(2), "{wait:?}");
        assert_eq!(credentials.backoff("192.0.2.8".parse().unwrap()), None);
        credentials.record(address, true);
        assert_eq!(credentials.backoff(address), None);
        // An unknown user is checked against the decoy, which no password passes.
        assert!(!credentials.verify("mallory", "pw") && credentials.verify("alice", "pw"));
        assert_eq!(credentials.checks.available_permits(), 2);
        // One IPv6 client is its /64.
        let (a, b): (std::net::IpAddr, std::net::IpAddr) =
            ("2001:db8:1:2::7".parse().unwrap(), "2001:db8:1:2:ffff::1".parse().unwrap());
        assert_eq!(client_of(a), client_of(b));
        assert_eq!(client_of("::ffff:192.0.2.7".parse().unwrap()), "192.0.2.7".parse::<std::net::IpAddr>().unwrap());
    }

    #[test]
    fn a_hash_checks_its_password_only_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials.properties");
        let hash = hash_password("open sesame").unwrap();
        assert!(hash.starts_with("$pbkdf2-sha256$i=600000$") && !hash.contains("sesame"), "{hash}");
        std::fs::write(&file, format!("alice={hash}\n")).unwrap();
        let credentials = Credentials::load(&file, "k", 2).unwrap();
        assert!(credentials.check("alice", "open sesame"));
        assert!(credentials.check("alice", "open sesame"), "remembered");
        assert!(!credentials.check("alice", "open sesame!"));
        assert!(!credentials.check("bob", "open sesame"));
        std::fs::write(&file, "alice=plaintext\n").unwrap();
        let refused = Credentials::load(&file, "k", 2).err().unwrap();
        assert!(refused.contains("line 1") && refused.contains("wharf rest-credential alice"), "{refused}");
        assert!(internal(&Method::POST, "/connectors/a/tasks") && !internal(&Method::GET, "/connectors/a/tasks"));
        assert!(!internal(&Method::POST, "/connectors/a/tasks/0/restart"));
    }
}
