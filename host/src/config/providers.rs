//! Kafka Connect's config providers: a worker's `config.providers=file,env` with
//! `config.providers.<name>.class` and `config.providers.<name>.param.*` names where secrets live,
//! and a connector config refers to one as `${provider:path:key}` (or `${provider:key}`) instead of
//! holding it. The reference is what the config topic and the REST API keep; the worker that
//! runs the connector or the task puts the value in when it starts it, and takes it out again of
//! the task configs the plugin generates before they are stored.
//!
//! The three providers Kafka ships, by their class names: `FileConfigProvider` (a key of a Java
//! properties file), `DirectoryConfigProvider` (the content of a file in a folder, the key being
//! its name) and `EnvVarConfigProvider` (an environment variable of the worker). Unlike Kafka,
//! which leaves a reference it cannot resolve as it is, a reference that cannot be resolved is an
//! error that names it (and never the value).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use wharf_connect::model::{last_value, Pairs};

const FILE_CLASS: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
const DIRECTORY_CLASS: &str = "org.apache.kafka.common.config.provider.DirectoryConfigProvider";
const ENV_CLASS: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";

/// The most references one connector or task config may hold, and the largest file a reference
/// reads: a config is small, and a secret smaller.
const MAX_REFERENCES: usize = 1_000;
const MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone)]
struct EnvPattern(regex::Regex);

/// The worker's config providers, by name.
#[derive(Debug, Clone, Default)]
pub struct ConfigProviders {
    providers: BTreeMap<String, Provider>,
}

#[derive(Debug, Clone)]
struct Provider {
    class: &'static str,
    kind: ProviderKind,
}

#[derive(Debug, Clone)]
enum ProviderKind {
    File { allowed: Vec<PathBuf> },
    Directory { allowed: Vec<PathBuf> },
    Env { allowed: Option<EnvPattern> },
}

/// A `${provider:path:key}` in a value: where it starts and ends, and its parts.
struct Reference<'a> {
    start: usize,
    end: usize,
    provider: &'a str,
    path: &'a str,
    key: &'a str,
}

/// The references in a value, as Kafka's pattern `\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}` finds
/// them: the provider ends at the first colon, the path (if there is a second colon) at the next.
fn references(value: &str) -> Vec<Reference<'_>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = value[from..].find("${") {
        let start = from + at;
        let body_start = start + 2;
        let Some(close) = value[body_start..].find('}') else { break };
        let body = &value[body_start..body_start + close];
        let end = body_start + close + 1;
        match body.split_once(':') {
            Some((provider, rest)) => {
                let (path, key) = rest.split_once(':').unwrap_or(("", rest));
                found.push(Reference { start, end, provider, path, key });
                from = end;
            }
            // No colon before the closing brace: not a reference; look again past its "${".
            None => from = body_start,
        }
    }
    found
}

impl ConfigProviders {
    /// The providers a worker config names; each problem with its key.
    pub fn of_worker(config: &[(String, String)]) -> Result<Self, (String, String)> {
        let mut providers = BTreeMap::new();
        let Some(list) = last_value(config, super::keys::worker::CONFIG_PROVIDERS.name) else {
            return Ok(ConfigProviders::default());
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let class_key = format!("config.providers.{name}.class");
            let Some(class) = last_value(config, &class_key).map(str::trim) else {
                return Err((
                    class_key.clone(),
                    format!(
                        "config.providers names \"{name}\" but {class_key} is not set; set it to {FILE_CLASS}, \
                         {DIRECTORY_CLASS} or {ENV_CLASS}"
                    ),
                ));
            };
            let param = |p: &str| last_value(config, &format!("config.providers.{name}.param.{p}")).map(str::trim);
            let allowed_paths = || -> Result<Vec<PathBuf>, (String, String)> {
                let key = format!("config.providers.{name}.param.allowed.paths");
                let mut paths = Vec::new();
                for path in param("allowed.paths").unwrap_or("").split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let normal = normalize(Path::new(path));
                    if !normal.is_absolute() {
                        return Err((key.clone(), format!("{key}: the path {path} is not absolute")));
                    }
                    if !normal.exists() {
                        return Err((key.clone(), format!("{key}: the path {path} does not exist")));
                    }
                    paths.push(normal);
                }
                Ok(paths)
            };
            let short = class.rsplit('.').next().unwrap_or(class);
            let provider = match short {
                "FileConfigProvider" => {
                    Provider { class: FILE_CLASS, kind: ProviderKind::File { allowed: allowed_paths()? } }
                }
                "DirectoryConfigProvider" => {
                    Provider { class: DIRECTORY_CLASS, kind: ProviderKind::Directory { allowed: allowed_paths()? } }
                }
                "EnvVarConfigProvider" => {
                    let key = format!("config.providers.{name}.param.allowlist.pattern");
                    let allowed = match param("allowlist.pattern") {
                        None => None,
                        Some(pattern) => match regex::Regex::new(&format!("^(?:{pattern})$")) {
                            Ok(re) => Some(EnvPattern(re)),
                            Err(e) => {
                                return Err((key.clone(), format!("{key}={pattern} is not a valid pattern: {e}")))
                            }
                        },
                    };
                    Provider { class: ENV_CLASS, kind: ProviderKind::Env { allowed } }
                }
                _ => {
                    return Err((
                        class_key.clone(),
                        format!(
                            "{class_key}={class} is not a config provider Wharf has; it has {FILE_CLASS}, \
                             {DIRECTORY_CLASS} and {ENV_CLASS}"
                        ),
                    ))
                }
            };
            tracing::debug!("config provider {name}: {}", provider.class);
            providers.insert(name.to_string(), provider);
        }
        Ok(ConfigProviders { providers })
    }

    /// Whether a config holds references at all (most do not: they are then used as they are).
    pub fn refers(config: &[(String, String)]) -> bool {
        config.iter().any(|(_, v)| v.contains("${") && !references(v).is_empty())
    }

    /// The config with every reference replaced by its value; each reference that cannot be
    /// resolved is an error that names the key and the reference.
    pub fn resolve(&self, config: &[(String, String)]) -> Result<Pairs, Pairs> {
        self.resolve_recording(config).map(|(resolved, _)| resolved)
    }

    /// As `resolve`, with the values the references stood for, to be kept out of what the host
    /// writes.
    pub fn resolve_recording(&self, config: &[(String, String)]) -> Result<(Pairs, Secrets), Pairs> {
        let mut secrets = Secrets::default();
        if !Self::refers(config) {
            return Ok((config.to_vec(), secrets));
        }
        let mut problems = Vec::new();
        let mut resolved = Vec::with_capacity(config.len());
        let mut count = 0;
        for (key, value) in config {
            let found = references(value);
            if found.is_empty() {
                resolved.push((key.clone(), value.clone()));
                continue;
            }
            count += found.len();
            if count > MAX_REFERENCES {
                problems.push((key.clone(), format!("the config holds more than {MAX_REFERENCES} references")));
                break;
            }
            let mut out = String::with_capacity(value.len());
            let mut at = 0;
            for reference in found {
                out.push_str(&value[at..reference.start]);
                let written = &value[reference.start..reference.end];
                match self.lookup(&reference) {
                    Ok(secret) => {
                        out.push_str(&secret);
                        secrets.add(secret, written);
                    }
                    Err(why) => problems.push((key.clone(), format!("{key}: the reference {written} {why}"))),
                }
                at = reference.end;
            }
            out.push_str(&value[at..]);
            resolved.push((key.clone(), out));
        }
        if problems.is_empty() {
            Ok((resolved, secrets))
        } else {
            Err(problems)
        }
    }

    /// A task config's references resolved, each only if the connector's owner wrote it: a
    /// reference the stored connector config (`stored`) does not hold came from the plugin,
    /// which may not reach the worker's secrets that way, and fails the task, naming the key.
    pub fn resolve_task(
        &self,
        stored: &[(String, String)],
        task: &[(String, String)],
    ) -> Result<Vec<(String, String)>, String> {
        for (key, value) in task {
            for reference in references(value) {
                let written = &value[reference.start..reference.end];
                if !stored.iter().any(|(_, v)| v.contains(written)) {
                    return Err(format!(
                        "its task config's key \"{key}\" holds the reference {written}, which the connector's config \
                         does not: a plugin's task configs may carry only references the connector's owner wrote"
                    ));
                }
            }
        }
        self.resolve(task).map_err(|problems| {
            let problems: Vec<String> = problems.into_iter().map(|(_, message)| message).collect();
            format!("its task config holds references that cannot be resolved: {}", problems.join("; "))
        })
    }

    /// Task configs a plugin generated from the resolved connector config, with the values that
    /// came from references given back as the references (Kafka Connect's reverse transform), so
    /// that no secret is stored: a task key whose value is what a key of the connector config
    /// resolved to gets that key's stored value.
    ///
    /// A value equal to what any key holding a reference resolved to, under whatever key, gets
    /// that key's stored value; a value that still holds a secret (`secrets`) is refused, naming
    /// the key and the reference, so that no secret reaches the config topic in clear.
    pub fn unresolve(
        stored: &[(String, String)],
        resolved: &[(String, String)],
        secrets: &Secrets,
        task: Vec<(String, String)>,
    ) -> Result<Vec<(String, String)>, String> {
        if !Self::refers(stored) {
            return Ok(task);
        }
        let referring: Vec<(&str, &str)> = stored
            .iter()
            .filter(|(_, v)| !references(v).is_empty())
            .filter_map(|(k, original)| last_value(resolved, k).map(|secret| (secret, original.as_str())))
            .collect();
        task.into_iter()
            .map(|(key, value)| {
                let same_key = last_value(stored, &key)
                    .filter(|v| !references(v).is_empty())
                    .filter(|_| last_value(resolved, &key) == Some(value.as_str()));
                if let Some(original) = same_key {
                    return Ok((key, original.to_string()));
                }
                if let Some((_, original)) = referring.iter().find(|(secret, _)| *secret == value) {
                    return Ok((key, original.to_string()));
                }
                match secrets.found_in(&value) {
                    Some(reference) => Err(format!(
                        "the plugin's task config puts the value of {reference} into the key \"{key}\"; a task config \
                         may carry a secret only as the connector config's whole value, which is stored as its \
                         reference"
                    )),
                    None => Ok((key, value)),
                }
            })
            .collect()
    }

    fn lookup(&self, reference: &Reference<'_>) -> Result<String, String> {
        let name = reference.provider;
        let Some(provider) = self.providers.get(name) else {
            let known: Vec<&str> = self.providers.keys().map(String::as_str).collect();
            return Err(format!(
                "names the config provider \"{name}\", which this worker does not have ({}); add it to the worker's \
                 config.providers with config.providers.{name}.class",
                if known.is_empty() {
                    "config.providers is empty".to_string()
                } else {
                    format!("it has {}", known.join(", "))
                }
            ));
        };
        let (path, key) = (reference.path, reference.key);
        match &provider.kind {
            ProviderKind::File { allowed } => {
                let file = allowed_path(path, allowed, name)?;
                let text = read_bounded(&file)?;
                let props = super::properties::parse(&text, &file.display().to_string())
                    .map_err(|e| format!("cannot be read: {e}"))?;
                props
                    .iter()
                    .rev()
                    .find(|p| p.key == key)
                    .map(|p| p.value.clone())
                    .ok_or_else(|| format!("names the key \"{key}\", which {} does not have", file.display()))
            }
            ProviderKind::Directory { allowed } => {
                let dir = allowed_path(path, allowed, name)?;
                if key.is_empty() || key.contains('/') || key == "." || key == ".." {
                    return Err(format!("names \"{key}\", which is not a file name"));
                }
                let file = dir.join(key);
                if !file.exists() {
                    return Err(format!("names the file {}, which is not there", file.display()));
                }
                read_bounded(&file)
            }
            ProviderKind::Env { allowed } => {
                if !path.is_empty() {
                    return Err(format!(
                        "gives a path ({path}), which EnvVarConfigProvider does not take: write ${{{name}:{key}}}"
                    ));
                }
                if allowed.as_ref().is_some_and(|re| !re.0.is_match(key)) {
                    return Err(format!(
                        "names the variable {key}, which config.providers.{name}.param.allowlist.pattern does not allow"
                    ));
                }
                std::env::var(key)
                    .map_err(|_| format!("names the environment variable {key}, which the worker does not have"))
            }
        }
    }
}

/// `path` if it is absolute and within `allowed` (when there are any), normalized.
fn allowed_path(path: &str, allowed: &[PathBuf], provider: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("gives no path: write ${provider:path:key}".to_string());
    }
    let normal = normalize(Path::new(path));
    if !allowed.is_empty() && !allowed.iter().any(|a| normal.starts_with(a)) {
        return Err(format!("names {path}, which is outside config.providers.{provider}.param.allowed.paths"));
    }
    Ok(normal)
}

/// The path with `.` and `..` taken out (without looking at the file system), as Java's
/// `Path.normalize` does.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A regular file of at most `MAX_FILE_BYTES`, as text: a FIFO, a device or a `/proc` file is
/// refused before it is read, so a reference cannot hang or exhaust the worker.
fn read_bounded(file: &Path) -> Result<String, String> {
    super::files::read_regular_text(file, MAX_FILE_BYTES).map_err(|e| format!("cannot be read: {e}"))
}

/// The values a config's references stood for, each with its reference: what no message,
/// status, log line or stored task config may show. `scrub` puts the reference back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// (value, reference), longest value first, so that a value inside another is replaced last.
    pairs: Vec<(String, String)>,
}

/// How long a secret must be for a value that merely holds it to be refused: a short one (a port
/// number, say) would refuse innocent values, and is refused only when a value is it.
const MIN_CONTAINED_SECRET: usize = 8;

impl Secrets {
    /// Keeps `secret` under `reference`, and the forms messages may show it in: trimmed (the
    /// host trims values it reads) and escaped as log lines escape it.
    fn add(&mut self, secret: String, reference: &str) {
        let trimmed = secret.trim().to_string();
        let escaped = wharf_connect::model::escaped(&secret);
        let escaped_trimmed = wharf_connect::model::escaped(&trimmed);
        for form in [secret, trimmed, escaped, escaped_trimmed] {
            if form.is_empty() || self.pairs.iter().any(|(s, _)| *s == form) {
                continue;
            }
            let at = self.pairs.partition_point(|(s, _)| s.len() >= form.len());
            self.pairs.insert(at, (form, reference.to_string()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// `text` with every secret in it replaced by its reference.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (secret, reference) in &self.pairs {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), reference);
            }
        }
        out
    }

    /// The reference of a secret `text` is, or holds (a secret of at least `MIN_CONTAINED_SECRET`
    /// characters), if any.
    pub fn found_in(&self, text: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(secret, _)| {
                text == secret || (secret.chars().count() >= MIN_CONTAINED_SECRET && text.contains(secret.as_str()))
            })
            .map(|(_, r)| r.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn providers(dir: &Path) -> ConfigProviders {
        ConfigProviders::of_worker(&pairs(&[
            ("config.providers", "file,dir,env"),
            ("config.providers.file.class", FILE_CLASS),
            ("config.providers.file.param.allowed.paths", &dir.display().to_string()),
            ("config.providers.dir.class", "DirectoryConfigProvider"),
            ("config.providers.env.class", ENV_CLASS),
            ("config.providers.env.param.allowlist.pattern", "WHARF_TEST_.*"),
        ]))
        .unwrap()
    }

    #[test]
    fn references_are_found_as_kafkas_pattern_finds_them() {
        let found: Vec<(&str, &str, &str)> = references("a ${file:/p/q:k} b ${env:HOME} ${topic} ${x:y:z:w}")
            .iter()
            .map(|r| (r.provider, r.path, r.key))
            .collect();
        assert_eq!(found, [("file", "/p/q", "k"), ("env", "", "HOME"), ("x", "y", "z:w")]);
        assert!(references("${topic}-${timestamp}").is_empty());
        assert!(!ConfigProviders::refers(&pairs(&[("topic.format", "${topic}-${timestamp}")])));
    }

    #[test]
    fn each_provider_resolves_its_references() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secrets.properties");
        std::fs::write(&file, "db.password=first\ndb.password=s3cret\nuser = alice\n").unwrap();
        std::fs::write(dir.path().join("token"), "t0ken\n").unwrap();
        std::env::set_var("WHARF_TEST_SECRET", "from-env");
        let p = providers(dir.path());
        let f = file.display();
        let d = dir.path().display();
        let config = pairs(&[
            ("password", &format!("${{file:{f}:db.password}}")),
            ("url", &format!("jdbc://${{file:{f}:user}}@db:${{env:WHARF_TEST_SECRET}}")),
            ("token", &format!("${{dir:{d}:token}}")),
            ("plain", "as it is"),
        ]);
        let resolved = p.resolve(&config).unwrap();
        assert_eq!(
            resolved,
            pairs(&[
                ("password", "s3cret"),
                ("url", "jdbc://alice@db:from-env"),
                ("token", "t0ken\n"),
                ("plain", "as it is")
            ])
        );
        // Task configs keep the references, not the values, under whatever key.
        let (_, secrets) = p.resolve_recording(&config).unwrap();
        let task = pairs(&[("password", "s3cret"), ("copy", "s3cret"), ("token", "changed"), ("task.id", "0")]);
        let reference = format!("${{file:{f}:db.password}}");
        assert_eq!(
            ConfigProviders::unresolve(&config, &resolved, &secrets, task).unwrap(),
            pairs(&[("password", &reference), ("copy", &reference), ("token", "changed"), ("task.id", "0")])
        );
        // A short secret is refused only as a whole value (a port number inside a URL is no leak);
        // a longer one inside another value is refused, naming the key and the reference.
        let task = pairs(&[("dsn", "user=a password=s3cret")]);
        assert!(ConfigProviders::unresolve(&config, &resolved, &secrets, task).is_ok());
        let mut long = Secrets::default();
        long.add("correct horse battery\n".to_string(), "${dir:/run/secrets:pw}");
        let task = pairs(&[("dsn", "user=a password=correct horse battery")]);
        let refused = ConfigProviders::unresolve(&config, &resolved, &long, task).unwrap_err();
        assert!(
            refused.contains("\"dsn\"") && refused.contains("${dir:/run/secrets:pw}") && !refused.contains("horse")
        );
        assert_eq!(secrets.scrub("tasks.max=s3cret is not valid"), format!("tasks.max={reference} is not valid"));
        // The forms a message may show a secret in: trimmed, or escaped as a log line.
        assert_eq!(long.scrub("x=correct horse battery is not valid"), "x=${dir:/run/secrets:pw} is not valid");
        assert_eq!(long.scrub("said correct horse battery\\n"), "said ${dir:/run/secrets:pw}");
    }

    #[test]
    fn a_task_config_resolves_only_references_the_connector_config_holds() {
        std::env::set_var("WHARF_TEST_TASK_SECRET", "hidden-value");
        let p = ConfigProviders::of_worker(&pairs(&[
            ("config.providers", "env"),
            ("config.providers.env.class", ENV_CLASS),
        ]))
        .unwrap();
        let stored = pairs(&[("password", "${env:WHARF_TEST_TASK_SECRET}")]);
        let task = pairs(&[("password", "${env:WHARF_TEST_TASK_SECRET}"), ("task.id", "0")]);
        assert_eq!(p.resolve_task(&stored, &task).unwrap()[0].1, "hidden-value");
        let invented = pairs(&[("x", "${env:HOME}")]);
        let refused = p.resolve_task(&stored, &invented).unwrap_err();
        assert!(refused.contains("\"x\" holds the reference ${env:HOME}, which the connector's config does not"));
    }

    #[test]
    fn a_reference_that_cannot_be_resolved_is_named_and_its_value_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secrets.properties");
        std::fs::write(&file, "db.password=s3cret\n").unwrap();
        std::env::set_var("OTHER_VARIABLE_OF_WHARF_TESTS", "x");
        let p = providers(dir.path());
        let cases = [
            (format!("${{file:{}:nope}}", file.display()), "does not have"),
            ("${file:/etc/passwd:root}".to_string(), "outside config.providers.file.param.allowed.paths"),
            ("${vault:secret/db:password}".to_string(), "does not have (it has dir, env, file)"),
            ("${env:OTHER_VARIABLE_OF_WHARF_TESTS}".to_string(), "allowlist.pattern does not allow"),
            ("${env:WHARF_TEST_NOT_SET_ANYWHERE}".to_string(), "which the worker does not have"),
            ("${env:/x:WHARF_TEST_SECRET}".to_string(), "does not take"),
            (format!("${{dir:{}:missing}}", dir.path().display()), "which is not there"),
        ];
        for (value, why) in cases {
            let problems = p.resolve(&pairs(&[("k", &value)])).unwrap_err();
            assert_eq!(problems.len(), 1, "{value}");
            let (key, message) = &problems[0];
            assert_eq!(key, "k");
            assert!(message.contains(&value) && message.contains(why), "{value}: {message}");
            assert!(!message.contains("s3cret"), "{message}");
        }
    }

    #[test]
    fn a_reference_to_a_fifo_or_a_device_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::config::files::make_fifo(&fifo);
        let p = providers(dir.path());
        let unbounded = ConfigProviders::of_worker(&pairs(&[
            ("config.providers", "file"),
            ("config.providers.file.class", FILE_CLASS),
        ]))
        .unwrap();
        let cases = [
            (&p, format!("${{file:{}:k}}", fifo.display())),
            (&p, format!("${{dir:{}:fifo}}", dir.path().display())),
            (&unbounded, "${file:/dev/zero:k}".to_string()),
        ];
        for (providers, value) in cases {
            let problems = providers.resolve(&pairs(&[("k", &value)])).unwrap_err();
            assert!(problems[0].1.contains("is not a regular file"), "{value}: {}", problems[0].1);
        }
    }

    #[test]
    fn a_worker_config_is_checked_key_by_key() {
        let refused = |items: &[(&str, &str)]| ConfigProviders::of_worker(&pairs(items)).unwrap_err();
        assert_eq!(refused(&[("config.providers", "file")]).0, "config.providers.file.class");
        let (key, message) =
            refused(&[("config.providers", "v"), ("config.providers.v.class", "com.example.VaultConfigProvider")]);
        assert_eq!(key, "config.providers.v.class");
        assert!(message.contains("FileConfigProvider"), "{message}");
        let (key, _) = refused(&[
            ("config.providers", "file"),
            ("config.providers.file.class", FILE_CLASS),
            ("config.providers.file.param.allowed.paths", "relative/path"),
        ]);
        assert_eq!(key, "config.providers.file.param.allowed.paths");
        assert!(ConfigProviders::of_worker(&[]).unwrap().providers.is_empty());
    }
}
