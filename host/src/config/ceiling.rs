//! The operator's ceiling on connector grants. A connector may only grant what the worker's
//! settings allow: folders under `wasm.ceiling.fs.read` / `wasm.ceiling.fs.write`, addresses in
//! `wasm.ceiling.net.connect`, HTTP authorities in `wasm.ceiling.http.allow`. Whatever the
//! ceiling, no grant may cover the worker's own files: `plugin.path`, `wasm.cache.dir`, the
//! offsets file, its config files.
//!
//! Paths are compared in canonical form: `..` is refused outright, and a path that exists is
//! resolved (symbolic links included) at each check, so a link planted under an allowed folder
//! cannot lead a grant out of it.

use std::path::{Component, Path, PathBuf};

/// Worker settings of the ceiling, for messages and the list of known keys.
pub const FS_READ: &str = "wasm.ceiling.fs.read";
pub const FS_WRITE: &str = "wasm.ceiling.fs.write";
pub const NET_CONNECT: &str = "wasm.ceiling.net.connect";
pub const HTTP_ALLOW: &str = "wasm.ceiling.http.allow";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct GrantCeiling {
    /// Folders under which connectors may grant reading (writing ones count too).
    pub read: Vec<PathBuf>,
    /// Folders under which connectors may grant writing.
    pub write: Vec<PathBuf>,
    /// `host:port` patterns connectors may grant TCP to; `*` stands for any host or any port.
    pub connect: Vec<String>,
    /// `host:port` patterns connectors may grant HTTP to.
    pub http: Vec<String>,
    /// The worker's own files and folders, with what each is.
    pub protected: Vec<(PathBuf, String)>,
}

impl GrantCeiling {
    /// Adds a path no grant may cover or lie inside, with what it is (`plugin.path`).
    pub fn protect(&mut self, path: &Path, what: &str) {
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map(|dir| dir.join(path)).unwrap_or_else(|_| path.to_path_buf())
        };
        // Links first, then `..`: `a/link/..` is the link target's parent, as the system sees it.
        self.protected.push((lexical(&resolve(&path)), what.to_string()));
    }

    /// Checks a folder grant of `key` (`wasm.fs.read` or `wasm.fs.write`) and gives its canonical
    /// form; the error names the key, the value and the worker setting.
    pub fn folder(&self, key: &str, given: &str, writable: bool) -> Result<PathBuf, String> {
        self.folder_for(key, given, given, writable)
    }

    /// Checks the grant of `folder`, which the value of `key` names (the value itself, or the
    /// folder of the file it names).
    pub fn folder_for(&self, key: &str, value: &str, folder: &str, writable: bool) -> Result<PathBuf, String> {
        let path = Path::new(folder);
        let named =
            if folder == value { format!("{key}={value}") } else { format!("{key}={value} (its folder {folder})") };
        if !path.is_absolute() {
            return Err(format!("{key}: \"{value}\" is not an absolute path; grant folders by their full path"));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!("{key}: \"{value}\" contains \"..\"; name it by its plain absolute path"));
        }
        if let Some(link) = dangling_link(path) {
            return Err(format!(
                "{named}: {} is a symbolic link to something that does not exist (yet); grant the folder it should \
                 lead to, by its own path",
                link.display()
            ));
        }
        let canonical = resolve(&lexical(path));
        let resolved =
            if canonical.as_path() == path { String::new() } else { format!(" (resolved: {})", canonical.display()) };
        for (protected, what) in &self.protected {
            if protected.starts_with(&canonical) || canonical.starts_with(protected) {
                return Err(format!(
                    "{named}{resolved} would give the connector the worker's own {what} ({}); grant a folder that \
                     holds only the connector's data",
                    protected.display()
                ));
            }
        }
        let (setting, allowed): (&str, Vec<&PathBuf>) = if writable {
            (FS_WRITE, self.write.iter().collect())
        } else {
            (FS_READ, self.read.iter().chain(&self.write).collect())
        };
        if allowed.iter().any(|root| canonical.starts_with(resolve(root))) {
            return Ok(canonical);
        }
        let shown = |folders: &[PathBuf]| folders.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
        let also = if writable || self.write.is_empty() {
            String::new()
        } else {
            format!(" (and {FS_WRITE}, which allows reading too, {})", listed(&shown(&self.write)))
        };
        let own = if writable { shown(&self.write) } else { shown(&self.read) };
        Err(format!(
            "{named}{resolved} is outside what this worker allows: {setting} {}{also}; the operator may add the \
             folder (or one above it) to {setting} in the worker config",
            listed(&own)
        ))
    }

    /// Checks a `host:port` grant of `key` (`wasm.net.connect` or `wasm.http.allow`).
    pub fn address(&self, key: &str, given: &str, http: bool) -> Result<(), String> {
        let (setting, allowed) = if http { (HTTP_ALLOW, &self.http) } else { (NET_CONNECT, &self.connect) };
        let Some((host, port)) = given.rsplit_once(':') else {
            return Err(format!("{key}: \"{given}\" is not HOST:PORT"));
        };
        let matches = |pattern: &String| {
            pattern
                .rsplit_once(':')
                .is_some_and(|(h, p)| (h == "*" || h.eq_ignore_ascii_case(host)) && (p == "*" || p == port))
        };
        if !allowed.iter().any(matches) {
            return Err(self.outside(key, given, setting, allowed, host, port));
        }
        // A `*` host lets a connector name any host, but not, by a literal address, the worker's
        // own machine or a cloud's metadata service: that takes an entry naming the address.
        let literal = host.trim_matches(['[', ']']);
        let inward = match literal.parse::<std::net::IpAddr>() {
            Ok(ip) => is_inward(ip).then(|| ip.to_string()),
            Err(_) => literal.eq_ignore_ascii_case("localhost").then(|| literal.to_ascii_lowercase()),
        };
        let Some(inward) = inward else { return Ok(()) };
        // The entry must name the address and cover the port: `127.0.0.1:5432` does not open the
        // worker's other local ports.
        let named = |pattern: &String| {
            pattern.rsplit_once(':').is_some_and(|(h, p)| {
                let h = h.trim_matches(['[', ']']);
                let names = h.eq_ignore_ascii_case(&inward)
                    || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.to_string() == inward);
                names && (p == "*" || p == port)
            })
        };
        if allowed.iter().any(named) {
            return Ok(());
        }
        Err(format!(
            "{key}={given} names {literal}, a loopback, link-local, metadata-service or unspecified address, which \
             {setting} ({}) allows only by naming it; the operator may add {given} to {setting} in the worker \
             config if connectors are meant to reach it",
            allowed.join(", ")
        ))
    }

    fn outside(&self, key: &str, given: &str, setting: &str, allowed: &[String], host: &str, port: &str) -> String {
        format!(
            "{key}={given} is outside what this worker allows: {setting} {}; the operator may add {given} (or a \
             pattern such as {host}:* or *:{port}) to {setting} in the worker config",
            listed(allowed)
        )
    }
}

/// Addresses that reach the worker's own machine or a cloud's metadata service rather than a
/// server of the connector's: loopback (127/8, ::1), unspecified (0/8, ::), link-local
/// (169.254/16, fe80::/10, where most metadata services answer) and the metadata services of
/// AWS over IPv6 (fd00:ec2::254), Alibaba (100.100.100.200) and Azure (168.63.129.16); an IPv4
/// address also in its IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms.
pub fn is_inward(ip: std::net::IpAddr) -> bool {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let v4 = |v4: Ipv4Addr| {
        let [a, b, ..] = v4.octets();
        a == 127
            || a == 0
            || (a == 169 && b == 254)
            || v4 == Ipv4Addr::new(100, 100, 100, 200)
            || v4 == Ipv4Addr::new(168, 63, 129, 16)
    };
    match ip {
        IpAddr::V4(address) => v4(address),
        IpAddr::V6(address) => {
            let s = address.segments();
            if let Some(mapped) = address.to_ipv4_mapped() {
                return v4(mapped);
            }
            let [.., a, b, c, d] = address.octets();
            // NAT64 (64:ff9b::/96) and the deprecated IPv4-compatible form (::a.b.c.d).
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || (s[..6] == [0, 0, 0, 0, 0, 0] && s[6] != 0) {
                return v4(Ipv4Addr::new(a, b, c, d));
            }
            // 6to4 (2002:a.b.c.d::/48).
            if s[0] == 0x2002 {
                let [_, _, a, b, c, d, ..] = address.octets();
                if v4(Ipv4Addr::new(a, b, c, d)) {
                    return true;
                }
            }
            address.is_loopback()
                || address.is_unspecified()
                || (s[0] & 0xffc0) == 0xfe80
                || address == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

fn listed(entries: &[String]) -> String {
    if entries.is_empty() {
        "is empty".to_string()
    } else {
        format!("is {}", entries.join(", "))
    }
}

/// `path` without `.` components (and without `..`, which the callers refuse or fold).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The canonical form of an absolute path: symbolic links resolved for the longest part that
/// exists, the rest appended as written.
pub fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(&existing) {
            let mut resolved = canonical;
            for part in rest.iter().rev() {
                resolved.push(part);
            }
            return resolved;
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent().map(Path::to_path_buf)) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The first component of `path` that is a symbolic link whose target does not exist: granting
/// through it would follow the link wherever it comes to point.
fn dangling_link(path: &Path) -> Option<PathBuf> {
    let mut walked = PathBuf::new();
    for component in path.components() {
        walked.push(component);
        match std::fs::symlink_metadata(&walked) {
            Ok(meta) if meta.file_type().is_symlink() && std::fs::metadata(&walked).is_err() => return Some(walked),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// A list setting of the ceiling: folders (absolute, made canonical) or `host:port` patterns.
pub fn parse_folders(setting: &str, raw: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let mut folders = Vec::new();
    for entry in raw.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let path = Path::new(entry);
        if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(format!("{setting}: \"{entry}\" is not a plain absolute path (no \"..\")"));
        }
        folders.push(resolve(&lexical(path)));
    }
    Ok(folders)
}

pub fn parse_addresses(setting: &str, raw: Option<&str>) -> Result<Vec<String>, String> {
    let mut patterns = Vec::new();
    for entry in raw.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let valid = entry
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && (port == "*" || port.parse::<u16>().is_ok()));
        if !valid {
            return Err(format!(
                "{setting}: \"{entry}\" is not HOST:PORT (either may be *), e.g. {setting}=db.example.com:5432,*:443"
            ));
        }
        patterns.push(entry.to_string());
    }
    Ok(patterns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ceiling(root: &Path) -> GrantCeiling {
        let mut ceiling = GrantCeiling {
            read: vec![resolve(&root.join("in"))],
            write: vec![resolve(&root.join("out"))],
            connect: vec!["db.example.com:5432".into(), "*:443".into()],
            http: vec!["api.example.com:*".into()],
            protected: Vec::new(),
        };
        ceiling.protect(&root.join("in/plugins"), "plugin.path");
        ceiling
    }

    #[test]
    fn folders_inside_the_ceiling_are_granted_in_canonical_form() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["in/data", "in/plugins", "out", "elsewhere"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let c = ceiling(root);
        let data = root.join("in/data");
        assert_eq!(c.folder("wasm.fs.read", &data.display().to_string(), false), Ok(resolve(&data)));
        // Not created yet: granted as written under the resolved parent.
        let later = root.join("in/later");
        assert_eq!(c.folder("wasm.fs.read", &later.display().to_string(), false), Ok(resolve(&later)));
        // Writing needs the write ceiling; reading may use it too.
        let out = root.join("out").display().to_string();
        assert!(c.folder("wasm.fs.read", &out, false).is_ok());
        let refused = c.folder("wasm.fs.write", &data.display().to_string(), true).unwrap_err();
        assert!(refused.contains("is outside what this worker allows: wasm.ceiling.fs.write is "), "{refused}");
        assert!(refused.starts_with(&format!("wasm.fs.write={}", data.display())), "{refused}");
    }

    #[test]
    fn dot_dot_links_and_the_workers_own_files_do_not_lead_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["in", "in/plugins", "elsewhere"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let c = ceiling(root);
        let dotted = format!("{}/in/../elsewhere", root.display());
        assert!(c.folder("wasm.fs.read", &dotted, false).unwrap_err().contains("contains \"..\""));
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("in/link")).unwrap();
        let link = format!("{}/in/link", root.display());
        let refused = c.folder("wasm.fs.read", &link, false).unwrap_err();
        assert!(refused.contains("(resolved: ") && refused.contains("elsewhere"), "{refused}");
        for covering in [format!("{}/in", root.display()), format!("{}/in/plugins/sub", root.display())] {
            let refused = c.folder("wasm.fs.read", &covering, false).unwrap_err();
            assert!(refused.contains("would give the connector the worker's own plugin.path"), "{refused}");
        }
        assert!(c.folder("wasm.fs.read", "relative/path", false).unwrap_err().contains("not an absolute path"));
        std::os::unix::fs::symlink(root.join("elsewhere/not-yet"), root.join("in/dangling")).unwrap();
        let dangling = format!("{}/in/dangling/sub", root.display());
        let refused = c.folder("wasm.fs.read", &dangling, false).unwrap_err();
        assert!(refused.contains("is a symbolic link to something that does not exist"), "{refused}");
    }

    #[test]
    fn addresses_must_match_a_pattern_of_the_ceiling() {
        let c = ceiling(Path::new("/nowhere"));
        assert!(c.address("wasm.net.connect", "db.example.com:5432", false).is_ok());
        assert!(c.address("wasm.net.connect", "DB.example.com:5432", false).is_ok());
        assert!(c.address("wasm.net.connect", "anything.example:443", false).is_ok());
        let refused = c.address("wasm.net.connect", "db.example.com:22", false).unwrap_err();
        assert!(
            refused.starts_with(
                "wasm.net.connect=db.example.com:22 is outside what this worker allows: wasm.ceiling.net.connect is \
                 db.example.com:5432, *:443"
            ),
            "{refused}"
        );
        assert!(c.address("wasm.http.allow", "api.example.com:8443", true).is_ok());
        let refused = c.address("wasm.http.allow", "db.example.com:5432", true).unwrap_err();
        assert!(refused.contains("wasm.ceiling.http.allow is api.example.com:*"), "{refused}");
        let empty = GrantCeiling::default().address("wasm.http.allow", "a:1", true).unwrap_err();
        assert!(empty.contains("wasm.ceiling.http.allow is empty"), "{empty}");
    }

    #[test]
    fn a_wildcard_host_does_not_reach_loopback_or_metadata_addresses_by_literal() {
        let c = GrantCeiling { http: vec!["*:80".into(), "10.1.2.3:80".into()], ..Default::default() };
        for literal in [
            "169.254.169.254",
            "[fd00:ec2::254]",
            "100.100.100.200",
            "168.63.129.16",
            "[fe80::1]",
            "127.0.0.2",
            "[::1]",
            "0.0.0.0",
            "[::]",
            "[::ffff:169.254.169.254]",
            "[64:ff9b::a9fe:a9fe]",
            "localhost",
        ] {
            let given = format!("{literal}:80");
            let refused = c.address("wasm.http.allow", &given, true).unwrap_err();
            assert!(refused.contains("allows only by naming it"), "{given}: {refused}");
            assert!(refused.starts_with(&format!("wasm.http.allow={given} names ")), "{refused}");
        }
        assert!(c.address("wasm.http.allow", "203.0.113.9:80", true).is_ok());
        assert!(c.address("wasm.http.allow", "metadata.example:80", true).is_ok());
        let named = GrantCeiling { connect: vec!["169.254.169.254:80".into(), "[::1]:*".into()], ..Default::default() };
        assert!(named.address("wasm.net.connect", "169.254.169.254:80", false).is_ok());
        assert!(named.address("wasm.net.connect", "[::1]:9092", false).is_ok());
        // Naming an address opens only the ports the entry covers.
        let one_port = GrantCeiling { connect: vec!["*:*".into(), "127.0.0.1:5432".into()], ..Default::default() };
        assert!(one_port.address("wasm.net.connect", "127.0.0.1:5432", false).is_ok());
        assert!(one_port.address("wasm.net.connect", "127.0.0.1:8083", false).is_err());
        for literal in ["[::a9fe:a9fe]:80", "[2002:a9fe:a9fe::1]:80"] {
            assert!(one_port.address("wasm.net.connect", literal, false).is_err(), "{literal}");
        }
    }

    #[test]
    fn ceiling_settings_are_checked() {
        assert!(parse_folders(FS_READ, Some("/srv/in, /srv/shared")).unwrap().len() == 2);
        assert!(parse_folders(FS_READ, Some("srv")).unwrap_err().contains("not a plain absolute path"));
        assert!(parse_folders(FS_READ, Some("/srv/../etc")).is_err());
        assert_eq!(parse_addresses(NET_CONNECT, Some("*:443, db:*")).unwrap(), vec!["*:443", "db:*"]);
        assert!(parse_addresses(NET_CONNECT, Some("db")).unwrap_err().contains("is not HOST:PORT"));
    }
}
