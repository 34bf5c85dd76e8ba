//! What a task may reach on the network: the names of its grants resolved to addresses when the
//! task starts (for `wasm.net.connect`, the sandbox's sockets, looked up again when the plugin
//! reconnects elsewhere: `Granted`; and for `wasm.http.allow`, `http_out.rs`), and the
//! worker-wide budget of sockets both draw on.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::config::ceiling::is_inward;

/// The addresses of a granted `host:port` (`key` names the setting), looked up now, once: what
/// the task may reach for as long as it runs.
///
/// A host name, other than `localhost`, whose addresses include a loopback, link-local or
/// unspecified one is refused: that is where a name under someone else's control is pointed to
/// reach the worker's own machine or a cloud's metadata service (169.254.169.254). An operator
/// who means it grants the address itself.
pub(super) fn resolve_grant(key: &str, entry: &str) -> anyhow::Result<Vec<SocketAddr>> {
    let addresses: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(entry)
        .map_err(|e| anyhow::anyhow!("{key}: cannot resolve {entry}: {e}; check the host name and port"))?
        .collect();
    let host = entry.rsplit_once(':').map_or(entry, |(host, _)| host).trim_matches(['[', ']']);
    if host.parse::<IpAddr>().is_ok() || host.eq_ignore_ascii_case("localhost") {
        return Ok(addresses);
    }
    if let Some(inner) = addresses.iter().find(|a| is_inward(a.ip())) {
        anyhow::bail!(
            "{key}: the name in {entry} resolves to {}, a loopback, link-local, metadata-service or unspecified address; grant \
             {inner} itself if the plugin is meant to reach it",
            inner.ip()
        );
    }
    Ok(addresses)
}

/// The least time between two lookups of a task's granted names after the first: a plugin that
/// keeps connecting to an address it was not granted costs a lookup now and then, not one each.
pub(super) const REFRESH_GRANTS: Duration = Duration::from_secs(5);

/// A task's `wasm.net.connect` grants: the `host:port` entries and the addresses they resolved
/// to.
pub(super) struct Granted {
    entries: Vec<String>,
    addresses: HashSet<SocketAddr>,
    resolved: Instant,
}

impl Granted {
    /// Resolves every entry now; a name that does not resolve fails the task's start, naming it.
    pub(super) fn resolve(entries: &[String]) -> anyhow::Result<Granted> {
        let mut addresses = HashSet::new();
        for entry in entries {
            addresses.extend(resolve_grant("wasm.net.connect", entry)?);
        }
        Ok(Granted { entries: entries.to_vec(), addresses, resolved: Instant::now() })
    }

    /// Whether `address` is granted: one of the addresses the entries resolved to, or, when it
    /// is not and the last lookup is older than `REFRESH_GRANTS`, one they resolve to now
    /// (through `lookup`, with `resolve_grant`'s checks). A name that no longer resolves keeps
    /// its earlier addresses.
    pub(super) fn permits(
        &mut self,
        address: SocketAddr,
        lookup: impl Fn(&str, &str) -> anyhow::Result<Vec<SocketAddr>>,
    ) -> bool {
        if self.addresses.contains(&address) {
            return true;
        }
        if self.entries.is_empty() || self.resolved.elapsed() < REFRESH_GRANTS {
            return false;
        }
        self.resolved = Instant::now();
        for entry in &self.entries {
            if let Ok(found) = lookup("wasm.net.connect", entry) {
                self.addresses.extend(found);
            }
        }
        self.addresses.contains(&address)
    }
}

/// Whether the worker may open one more socket for a plugin: it holds fewer than `max` now, its
/// own (Kafka clients, REST) and every plugin's counted, from the process's open descriptors. A
/// new socket is rare next to the records it carries, so counting then is cheap enough, and it
/// keeps the worker's own connections from running out of descriptors.
pub(super) fn socket_room(max: usize) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return Ok(()) };
    let held = entries
        .flatten()
        .filter(|entry| {
            std::fs::read_link(entry.path())
                .is_ok_and(|target| target.as_os_str().as_encoded_bytes().starts_with(b"socket:"))
        })
        .count();
    if held >= max {
        return Err(format!(
            "the worker holds {held} sockets, and wasm.max.sockets.per.worker={max}; raise it in the worker \
             config, or run fewer connections per task"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_link_local_and_unspecified_addresses_are_inward() {
        for inward in [
            "127.0.0.1",
            "127.0.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "::",
            "::ffff:127.0.0.1",
            "fd00:ec2::254",
            "100.100.100.200",
            "168.63.129.16",
            "64:ff9b::7f00:1",
        ] {
            assert!(is_inward(inward.parse().unwrap()), "{inward}");
        }
        for outward in ["10.0.0.1", "192.168.1.1", "8.8.8.8", "2001:db8::1", "::ffff:10.1.2.3"] {
            assert!(!is_inward(outward.parse().unwrap()), "{outward}");
        }
    }

    #[test]
    fn granted_addresses_and_localhost_resolve_as_given() {
        assert_eq!(
            resolve_grant("wasm.net.connect", "127.0.0.1:9092").unwrap(),
            vec!["127.0.0.1:9092".parse().unwrap()]
        );
        assert!(resolve_grant("wasm.net.connect", "localhost:9092").unwrap().iter().all(|a| a.ip().is_loopback()));
        let error = resolve_grant("wasm.http.allow", "no-such-host.invalid:80").unwrap_err().to_string();
        assert!(error.starts_with("wasm.http.allow: cannot resolve no-such-host.invalid:80"), "{error}");
    }

    #[test]
    fn a_granted_name_is_looked_up_again_for_an_address_it_did_not_resolve_to_at_most_so_often() {
        let mut granted = Granted::resolve(&["127.0.0.1:5432".to_string()]).unwrap();
        let moved: SocketAddr = "127.0.0.2:5432".parse().unwrap();
        let lookups = std::cell::Cell::new(0);
        let now_at_moved = |_: &str, _: &str| {
            lookups.set(lookups.get() + 1);
            Ok(vec![moved])
        };
        assert!(granted.permits("127.0.0.1:5432".parse().unwrap(), now_at_moved));
        // Too soon after the first lookup: not looked up again.
        assert!(!granted.permits(moved, now_at_moved));
        assert_eq!(lookups.get(), 0);
        granted.resolved -= REFRESH_GRANTS;
        assert!(granted.permits(moved, now_at_moved));
        assert_eq!(lookups.get(), 1);
        // An address no granted name resolves to stays refused, and costs no lookup so soon.
        assert!(!granted.permits("10.9.9.9:5432".parse().unwrap(), now_at_moved));
        assert_eq!(lookups.get(), 1);
        // Nothing granted, nothing looked up.
        let mut none = Granted::resolve(&[]).unwrap();
        none.resolved -= REFRESH_GRANTS;
        assert!(!none.permits(moved, now_at_moved));
        assert_eq!(lookups.get(), 1);
    }

    #[test]
    fn the_worker_wide_socket_budget_counts_the_process_sockets() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _held: Vec<std::net::TcpStream> =
            (0..3).map(|_| std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap()).collect();
        assert!(socket_room(100_000).is_ok());
        let refused = socket_room(3).unwrap_err();
        assert!(refused.contains("and wasm.max.sockets.per.worker=3;"), "{refused}");
    }
}
