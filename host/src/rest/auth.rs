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

/// The users of a credentials file and the checks lately passed.
pub struct Credentials {
    users: BTreeMap<String, Hash>,
    /// SHA-256 of (user, password) of a passed check, and when it passed.
    remembered: Mutex<BTreeMap<[u8; 32], Instant>>,
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
    pub fn load(path: &Path, key: &str) -> Result<Self, String> {
        let size = std::fs::metadata(path).map_err(|e| format!("{key}={}: cannot read it: {e}", path.display()))?.len();
        if size > MAX_FILE_BYTES {
            return Err(format!("{key}={}: larger than {MAX_FILE_BYTES} bytes", path.display()));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{key}={}: cannot read it: {e}", path.display()))?;
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
        Ok(Credentials { users, remembered: Mutex::new(BTreeMap::new()) })
    }

    pub fn users(&self) -> usize {
        self.users.len()
    }

    /// Whether `password` is `user`'s. Costs a PBKDF2 unless the same pair passed lately.
    pub fn check(&self, user: &str, password: &str) -> bool {
        let Some(stored) = self.users.get(user) else { return false };
        let key = {
            let mut context = ring::digest::Context::new(&ring::digest::SHA256);
            context.update(user.as_bytes());
            context.update(&[0]);
            context.update(password.as_bytes());
            let digest = context.finish();
            let mut key = [0u8; 32];
            key.copy_from_slice(digest.as_ref());
            key
        };
        if let Ok(remembered) = self.remembered.lock() {
            if remembered.get(&key).is_some_and(|at| at.elapsed() < REMEMBERED_FOR) {
                return true;
            }
        }
        let passed = ring::pbkdf2::verify(
            ring::pbkdf2::PBKDF2_HMAC_SHA256,
            stored.iterations,
            &stored.salt,
            password.as_bytes(),
            &stored.hash,
        )
        .is_ok();
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
    let (user, password) = (user.to_string(), password.to_string());
    let checked = tokio::task::spawn_blocking(move || credentials.check(&user, &password)).await;
    match checked {
        Ok(true) => next.run(request).await,
        Ok(false) => unauthorized("The user or password is not right"),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("checking the credentials failed: {e}"))
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_checks_its_password_only_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials.properties");
        let hash = hash_password("open sesame").unwrap();
        assert!(hash.starts_with("$pbkdf2-sha256$i=600000$") && !hash.contains("sesame"), "{hash}");
        std::fs::write(&file, format!("alice={hash}\n")).unwrap();
        let credentials = Credentials::load(&file, "k").unwrap();
        assert!(credentials.check("alice", "open sesame"));
        assert!(credentials.check("alice", "open sesame"), "remembered");
        assert!(!credentials.check("alice", "open sesame!"));
        assert!(!credentials.check("bob", "open sesame"));
        std::fs::write(&file, "alice=plaintext\n").unwrap();
        let refused = Credentials::load(&file, "k").err().unwrap();
        assert!(refused.contains("line 1") && refused.contains("wharf rest-credential alice"), "{refused}");
        assert!(internal(&Method::POST, "/connectors/a/tasks") && !internal(&Method::GET, "/connectors/a/tasks"));
        assert!(!internal(&Method::POST, "/connectors/a/tasks/0/restart"));
    }
}
