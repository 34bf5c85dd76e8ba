//! Kafka client settings written with the Java client's names, as Kafka Connect worker files
//! write them under `producer.`, `consumer.` and `admin.`, translated to librdkafka's. Security
//! settings have their own translation (`config::security`); this is the rest. A name that both
//! clients share passes unchanged, a renamed one gets librdkafka's name (and its unit), and a
//! Java-only one either is left out, when leaving it out changes nothing Connect would do, or is
//! refused with what to use instead. Names in neither table pass unchanged: librdkafka's own
//! names are welcome in the worker's own `producer.*`, `consumer.*` and `admin.*` settings, and
//! librdkafka names any it does not know when the client is made. A connector's overrides are
//! held to `OverrideRules` first: Java names only, nothing that loads code or names a file the
//! operator did not allow.

/// What becomes of one Java client setting.
#[derive(Debug, Clone, Copy)]
pub enum Client {
    /// librdkafka reads it under another name, in the same unit.
    Renamed(&'static str),
    /// librdkafka reads it under another name, in KiB where Java counts bytes.
    Kibibytes(&'static str),
    /// librdkafka reads it under another name; Java's -1 (the system's default) is its 0.
    SocketBuffer(&'static str),
    /// Its values are Java's words or class names: each maps to librdkafka's value.
    Values(&'static [(&'static str, &'static str)]),
    /// Left out, with why that changes nothing.
    Dropped(&'static str),
    /// Refused, with what to use instead.
    Refused(&'static str),
    /// Kept under its name for the host, which reads it itself and does not hand it to librdkafka.
    Host(&'static str),
}

/// Java client settings whose librdkafka name or values differ, or that librdkafka lacks.
#[rustfmt::skip]
pub const JAVA_CLIENT_SETTINGS: &[(&str, Client)] = &[
    ("max.request.size", Client::Renamed("message.max.bytes")),
    ("buffer.memory", Client::Kibibytes("queue.buffering.max.kbytes")),
    ("fetch.max.wait.ms", Client::Renamed("fetch.wait.max.ms")),
    ("send.buffer.bytes", Client::SocketBuffer("socket.send.buffer.bytes")),
    ("receive.buffer.bytes", Client::SocketBuffer("socket.receive.buffer.bytes")),
    ("auto.offset.reset", Client::Values(&[("earliest", "earliest"), ("latest", "latest"), ("none", "error")])),
    ("partition.assignment.strategy", Client::Values(&[
        ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
        ("org.apache.kafka.clients.consumer.RoundRobinAssignor", "roundrobin"),
        ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky"),
        ("range", "range"),
        ("roundrobin", "roundrobin"),
        ("cooperative-sticky", "cooperative-sticky"),
    ])),
    ("partitioner.class", Client::Values(&[
        ("org.apache.kafka.clients.producer.internals.DefaultPartitioner", "murmur2_random"),
        ("org.apache.kafka.clients.producer.UniformStickyPartitioner", "random"),
    ])),
    ("key.serializer", Client::Dropped("Kafka Connect replaces it with its byte array serializer too: records reach the producer as bytes")),
    ("value.serializer", Client::Dropped("Kafka Connect replaces it with its byte array serializer too: records reach the producer as bytes")),
    ("key.deserializer", Client::Dropped("Kafka Connect replaces it with its byte array deserializer too: converters read the bytes")),
    ("value.deserializer", Client::Dropped("Kafka Connect replaces it with its byte array deserializer too: converters read the bytes")),
    ("metric.reporters", Client::Dropped("Wharf's clients report no JMX metrics")),
    ("metrics.num.samples", Client::Dropped("Wharf's clients report no JMX metrics")),
    ("metrics.sample.window.ms", Client::Dropped("Wharf's clients report no JMX metrics")),
    ("metrics.recording.level", Client::Dropped("Wharf's clients report no JMX metrics")),
    ("auto.include.jmx.reporter", Client::Dropped("Wharf's clients report no JMX metrics")),
    ("enable.metrics.push", Client::Dropped("librdkafka pushes no client metrics to the broker")),
    ("max.poll.records", Client::Host("the most records one put hands a sink task, within wasm.max.records.per.call")),
    ("max.block.ms", Client::Refused("librdkafka's producer does not block a send; queue.buffering.max.kbytes (buffer.memory) bounds what waits for delivery")),
    ("interceptor.classes", Client::Refused("Wharf runs no Java classes; a transform plugin can see or change each record instead")),
    ("default.api.timeout.ms", Client::Refused("librdkafka has no such setting; request.timeout.ms and session.timeout.ms bound its calls")),
    ("socket.connection.setup.timeout.max.ms", Client::Refused("librdkafka has no such setting; socket.connection.setup.timeout.ms bounds a connection attempt")),
    ("exclude.internal.topics", Client::Dropped("a sink's topics.regex never matches Kafka's internal topics (__…), as with the Java consumer's default")),
    ("security.providers", Client::Refused("librdkafka uses OpenSSL, not Java security providers")),
];

/// `connector.client.config.override.policy`: which of a connector's `producer.override.*`,
/// `consumer.override.*` and `admin.override.*` settings the worker applies. A connector that
/// gives one the policy does not allow is refused, as Kafka Connect refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverridePolicy {
    None,
    /// Only the client's identity: `security.protocol`, `sasl.mechanism`, `sasl.jaas.config`.
    Principal,
    /// Only the settings `connector.client.config.override.allowlist` names (Kafka 4.2).
    Allowlist,
    All,
}

/// The settings the `Principal` policy allows.
const PRINCIPAL_SETTINGS: [&str; 3] = ["security.protocol", "sasl.mechanism", "sasl.jaas.config"];

impl OverridePolicy {
    /// The policy by Kafka Connect's alias (`None`, `Principal`, `Allowlist`, `All`) or class name.
    pub fn parse(value: &str) -> Result<Self, String> {
        let value = value.trim();
        let alias = value
            .strip_prefix("org.apache.kafka.connect.connector.policy.")
            .unwrap_or(value)
            .trim_end_matches("ConnectorClientConfigOverridePolicy");
        match alias {
            "None" => Ok(OverridePolicy::None),
            "Principal" => Ok(OverridePolicy::Principal),
            "Allowlist" => Ok(OverridePolicy::Allowlist),
            "All" => Ok(OverridePolicy::All),
            _ => Err(format!(
                "connector.client.config.override.policy={value} is not a policy Wharf has: use None, Principal, \
                 Allowlist or All (or their Kafka Connect class names)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OverridePolicy::None => "None",
            OverridePolicy::Principal => "Principal",
            OverridePolicy::Allowlist => "Allowlist",
            OverridePolicy::All => "All",
        }
    }
}

/// Client settings no connector may override, whatever the policy, each with why: they load code
/// into the worker, run commands, or flood its log.
const NEVER_OVERRIDDEN: &[(&str, &str)] = &[
    ("plugin.library.paths", "it loads a shared library into the worker process"),
    ("ssl.engine.", "it loads an OpenSSL engine into the worker process"),
    ("ssl.providers", "it loads OpenSSL providers into the worker process"),
    ("sasl.kerberos.kinit.cmd", "it runs a command on the worker's machine"),
    ("debug", "it writes the client's protocol traces, credentials included, to the worker's log"),
];

/// What a worker lets connectors' client overrides reach: the policy, its allow-list, and the
/// folders in which an override may name a file.
#[derive(Debug, Clone, PartialEq)]
pub struct OverrideRules {
    /// `connector.client.config.override.policy`.
    pub policy: OverridePolicy,
    /// `connector.client.config.override.allowlist`: the settings (without `producer.` and the
    /// like) the `Allowlist` policy allows.
    pub allowlist: Vec<String>,
    /// `connector.client.config.override.allowed.paths`: folders in which an override may name a
    /// file (a key or trust store); empty, as by default, allows none.
    pub allowed_paths: Vec<std::path::PathBuf>,
    /// Folders no override may name a file in, whatever `allowed_paths` says: those connectors
    /// may grant their plugins (`wasm.ceiling.fs.*`), where a plugin could plant the file.
    pub granted_folders: Vec<std::path::PathBuf>,
}

impl Default for OverrideRules {
    fn default() -> Self {
        OverrideRules {
            policy: OverridePolicy::All,
            allowlist: Vec::new(),
            allowed_paths: Vec::new(),
            granted_folders: Vec::new(),
        }
    }
}

impl OverrideRules {
    /// Why the override `setting=value`, written under `prefix` (`producer.override.`, …), may not
    /// be used; the message names the key and the worker setting that would allow it, or says
    /// that none does. `keeps_credentials` says whether the client goes on using the worker's
    /// brokers and credentials (the connector overrides neither `bootstrap.servers` nor
    /// `sasl.jaas.config`): then it may not change how they are protected.
    pub fn refusal(&self, prefix: &str, setting: &str, value: &str, keeps_credentials: bool) -> Option<String> {
        let key = format!("{prefix}{setting}");
        let family = prefix.strip_suffix("override.").unwrap_or(prefix);
        if let Some((_, why)) = NEVER_OVERRIDDEN
            .iter()
            .find(|(never, _)| setting == *never || (never.ends_with('.') && setting.starts_with(never)))
        {
            return Some(format!(
                "\"{key}\" is never allowed in a connector config: {why}; no worker setting allows it (an operator \
                 who means it sets {family}{setting} in the worker config)"
            ));
        }
        if !is_java_client_setting(setting) {
            return Some(format!(
                "\"{key}\" is not a setting of Kafka's Java clients; connectors may override only those (librdkafka's \
                 own settings are the operator's: {family}{setting} in the worker config), and no policy allows it"
            ));
        }
        let allowed = match self.policy {
            OverridePolicy::None => false,
            OverridePolicy::Principal => PRINCIPAL_SETTINGS.contains(&setting),
            OverridePolicy::Allowlist => self.allowlist.iter().any(|a| a == setting),
            OverridePolicy::All => true,
        };
        if !allowed {
            let what = match self.policy {
                OverridePolicy::None => "lets connectors override no client setting".to_string(),
                OverridePolicy::Principal => {
                    "lets connectors override only security.protocol, sasl.mechanism and sasl.jaas.config".to_string()
                }
                _ => match self.allowlist.is_empty() {
                    true => "lets connectors override no client setting: connector.client.config.override.allowlist \
                             is empty"
                        .to_string(),
                    false => format!(
                        "lets connectors override only what connector.client.config.override.allowlist names ({})",
                        self.allowlist.join(", ")
                    ),
                },
            };
            let change = match self.policy {
                OverridePolicy::Allowlist => {
                    format!("add {setting} to connector.client.config.override.allowlist in the worker config")
                }
                _ => "change the policy in the worker config".to_string(),
            };
            return Some(format!(
                "\"{key}\" is not allowed: the worker's connector.client.config.override.policy={} {what}; remove it, or \
                 {change}",
                self.policy.name()
            ));
        }
        if names_a_file(setting) {
            if let Err(why) = self.file_allowed(value) {
                return Some(format!("\"{key}\" names {}: {why}", value.trim()));
            }
        }
        if keeps_credentials && turns_off_verification(setting, value) {
            return Some(format!(
                "\"{key}={}\" would turn off the broker's host-name check for a client that carries the worker's \
                 credentials; remove it, or point the client at brokers of its own ({prefix}bootstrap.servers, with \
                 credentials of its own); no worker setting allows it",
                value.trim()
            ));
        }
        if keeps_credentials && protects_credentials(setting) {
            return Some(format!(
                "\"{key}\" would change how the worker's credentials are sent (the protocol, the mechanism, or the \
                 authorities trusted to be the brokers) for a client that carries them; give the client credentials \
                 of its own ({prefix}sasl.jaas.config) or brokers of its own ({prefix}bootstrap.servers); no worker \
                 setting allows it"
            ));
        }
        None
    }

    /// Whether an override may name the file `value`: a regular file inside
    /// `connector.client.config.override.allowed.paths` and outside every granted folder.
    fn file_allowed(&self, value: &str) -> Result<(), String> {
        let listed =
            |paths: &[std::path::PathBuf]| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        if self.allowed_paths.is_empty() {
            return Err("connectors may name files only inside connector.client.config.override.allowed.paths, which \
                        is empty; the operator may add the file's folder to it in the worker config"
                .to_string());
        }
        let path = std::path::Path::new(value.trim());
        let real = std::fs::canonicalize(path).map_err(|e| format!("it cannot be read ({e})"))?;
        if !real.is_file() {
            return Err("it is not a regular file".to_string());
        }
        if let Some(granted) = self.granted_folders.iter().find(|f| real.starts_with(f)) {
            return Err(format!(
                "it lies in {}, a folder connectors may grant their plugins (wasm.ceiling.fs.*), where no override may \
                 name a file; keep key and trust stores elsewhere",
                granted.display()
            ));
        }
        if !self.allowed_paths.iter().any(|a| real.starts_with(a)) {
            return Err(format!(
                "it is outside connector.client.config.override.allowed.paths ({}); the operator may add its folder \
                 to that setting in the worker config",
                listed(&self.allowed_paths)
            ));
        }
        Ok(())
    }
}

/// Whether a client setting's value names a file on the worker's machine.
pub fn names_a_file(setting: &str) -> bool {
    setting.ends_with(".location") || setting.ends_with(".file") || setting.ends_with(".files")
}

/// Whether a setting decides how a client's credentials travel: its protocol and SASL mechanism
/// (PLAIN sends a SCRAM user's password as it is), and the authorities it trusts to be the
/// brokers (one of the connector's choosing lets a stranger pose as them).
fn protects_credentials(setting: &str) -> bool {
    matches!(setting, "security.protocol" | "sasl.mechanism" | "ssl.key.password")
        || setting.starts_with("ssl.truststore.")
        || setting.starts_with("ssl.keystore.")
}

/// Whether a setting turns off the check of the broker's certificate or host name.
fn turns_off_verification(setting: &str, value: &str) -> bool {
    let value = value.trim();
    match setting {
        "ssl.endpoint.identification.algorithm" => value.is_empty() || value.eq_ignore_ascii_case("none"),
        "enable.ssl.certificate.verification" => value.eq_ignore_ascii_case("false"),
        _ => false,
    }
}

/// The settings of Kafka 4.1's Java producer, consumer and admin clients (their `ConfigDef`s),
/// sorted: the only client settings a connector may override. A name librdkafka alone has is the
/// operator's to set, in the worker config.
#[rustfmt::skip]
const JAVA_CLIENT_NAMES: &[&str] = &[
    "acks",
    "allow.auto.create.topics",
    "auto.commit.interval.ms",
    "auto.offset.reset",
    "batch.size",
    "bootstrap.controllers",
    "bootstrap.servers",
    "buffer.memory",
    "check.crcs",
    "client.dns.lookup",
    "client.id",
    "client.rack",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "connections.max.idle.ms",
    "default.api.timeout.ms",
    "delivery.timeout.ms",
    "enable.auto.commit",
    "enable.idempotence",
    "enable.metrics.push",
    "exclude.internal.topics",
    "fetch.max.bytes",
    "fetch.max.wait.ms",
    "fetch.min.bytes",
    "group.id",
    "group.instance.id",
    "group.protocol",
    "group.remote.assignor",
    "heartbeat.interval.ms",
    "interceptor.classes",
    "isolation.level",
    "key.deserializer",
    "key.serializer",
    "linger.ms",
    "max.block.ms",
    "max.in.flight.requests.per.connection",
    "max.partition.fetch.bytes",
    "max.poll.interval.ms",
    "max.poll.records",
    "max.request.size",
    "metadata.max.age.ms",
    "metadata.max.idle.ms",
    "metadata.recovery.rebootstrap.trigger.ms",
    "metadata.recovery.strategy",
    "metric.reporters",
    "metrics.num.samples",
    "metrics.recording.level",
    "metrics.sample.window.ms",
    "partition.assignment.strategy",
    "partitioner.adaptive.partitioning.enable",
    "partitioner.availability.timeout.ms",
    "partitioner.class",
    "partitioner.ignore.keys",
    "receive.buffer.bytes",
    "reconnect.backoff.max.ms",
    "reconnect.backoff.ms",
    "request.timeout.ms",
    "retries",
    "retry.backoff.max.ms",
    "retry.backoff.ms",
    "sasl.client.callback.handler.class",
    "sasl.jaas.config",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.retry.backoff.ms",
    "sasl.mechanism",
    "sasl.oauthbearer.assertion.algorithm",
    "sasl.oauthbearer.assertion.claim.aud",
    "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss",
    "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds",
    "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.template.file",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.header.urlencode",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwt.retriever.class",
    "sasl.oauthbearer.jwt.validator.class",
    "sasl.oauthbearer.scope",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url",
    "security.protocol",
    "security.providers",
    "send.buffer.bytes",
    "session.timeout.ms",
    "share.acknowledgement.mode",
    "socket.connection.setup.timeout.max.ms",
    "socket.connection.setup.timeout.ms",
    "ssl.cipher.suites",
    "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm",
    "ssl.engine.factory.class",
    "ssl.key.password",
    "ssl.keymanager.algorithm",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.protocol",
    "ssl.provider",
    "ssl.secure.random.implementation",
    "ssl.trustmanager.algorithm",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "transaction.timeout.ms",
    "transaction.two.phase.commit.enable",
    "transactional.id",
    "value.deserializer",
    "value.serializer",
];

/// Whether `setting` is one of Kafka's Java producer, consumer or admin client settings.
/// (Names of earlier versions that the translation table knows count too.)
pub fn is_java_client_setting(setting: &str) -> bool {
    JAVA_CLIENT_NAMES.binary_search(&setting).is_ok() || JAVA_CLIENT_SETTINGS.iter().any(|(name, _)| *name == setting)
}

/// A setting that cannot be used: its key as written (prefix and all) and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientProblem {
    pub key: String,
    pub message: String,
}

/// `settings` (names without `prefix`, which is how they were written: `"producer."`, …) with
/// every Java name translated to librdkafka's; Java-only names that change nothing are left out,
/// and named in the log once.
pub fn translate(settings: &[(String, String)], prefix: &str) -> Result<Vec<(String, String)>, ClientProblem> {
    let mut out = Vec::with_capacity(settings.len());
    let mut dropped = Vec::new();
    for (key, value) in settings {
        let Some((_, client)) = JAVA_CLIENT_SETTINGS.iter().find(|(name, _)| name == key) else {
            out.push((key.clone(), value.clone()));
            continue;
        };
        let problem = |message: String| ClientProblem { key: format!("{prefix}{key}"), message };
        let trimmed = value.trim();
        match *client {
            Client::Renamed(name) => out.push((name.to_string(), trimmed.to_string())),
            Client::Kibibytes(name) => {
                let bytes: u64 = trimmed.parse().map_err(|_| {
                    problem(format!(
                        "{prefix}{key}={trimmed} is not a number of bytes (librdkafka's {name} takes it in KiB)"
                    ))
                })?;
                out.push((name.to_string(), bytes.div_ceil(1024).max(1).to_string()));
            }
            Client::SocketBuffer(name) => {
                let bytes: i64 = trimmed.parse().map_err(|_| {
                    problem(format!("{prefix}{key}={trimmed} is not a number of bytes (-1 for the system's default)"))
                })?;
                out.push((name.to_string(), bytes.max(0).to_string()));
            }
            Client::Values(values) => {
                let Some((_, mapped)) = values.iter().find(|(java, _)| java.eq_ignore_ascii_case(trimmed)) else {
                    let choices: Vec<&str> = values.iter().map(|(java, _)| *java).collect();
                    return Err(problem(format!(
                        "{prefix}{key}={trimmed} has no librdkafka counterpart; use one of {}",
                        choices.join(", ")
                    )));
                };
                // A Java setting may give a list; librdkafka's takes its own words the same way.
                let name = if *key == "partitioner.class" { "partitioner" } else { key.as_str() };
                out.push((name.to_string(), mapped.to_string()));
            }
            // The host's one such setting is a count of records.
            Client::Host(_) => match trimmed.parse::<u32>() {
                Ok(n) if n >= 1 => out.push((key.clone(), trimmed.to_string())),
                _ => {
                    return Err(problem(format!("{prefix}{key}={trimmed} is not valid: a whole number of at least 1")))
                }
            },
            Client::Dropped(_) => dropped.push(format!("{prefix}{key}")),
            Client::Refused(instead) => {
                return Err(problem(format!("{prefix}{key} is a Java client setting that librdkafka lacks: {instead}")))
            }
        }
    }
    if !dropped.is_empty() {
        tracing::info!(
            "{} left out: Java client settings with no librdkafka counterpart that change nothing here (see \
             docs/configuration.md)",
            dropped.join(", ")
        );
    }
    Ok(out)
}

/// A family of client settings (`producer.`, `consumer.override.`, …) as librdkafka reads them:
/// the security settings translated by `config::security`, then the rest by `translate`.
pub fn for_librdkafka(settings: &[(String, String)], prefix: &str) -> Result<Vec<(String, String)>, ClientProblem> {
    let secure =
        super::security::translate(settings, prefix).map_err(|p| ClientProblem { key: p.key, message: p.message })?;
    translate(&secure, prefix)
}

/// The table of `docs/configuration.md`: each Java name and what becomes of it.
pub fn reference() -> String {
    let mut page = String::from("| Java client setting | In Wharf |\n|---|---|\n");
    for (name, client) in JAVA_CLIENT_SETTINGS {
        let what = match client {
            Client::Renamed(to) => format!("librdkafka's `{to}`"),
            Client::Kibibytes(to) => format!("librdkafka's `{to}`, bytes rounded up to KiB"),
            Client::SocketBuffer(to) => format!("librdkafka's `{to}` (-1, the system's default, becomes 0)"),
            Client::Values(values) => {
                let pairs: Vec<String> = values
                    .iter()
                    .map(|(java, rd)| match java == rd {
                        true => format!("`{java}`"),
                        false => format!("`{java}` → `{rd}`"),
                    })
                    .collect();
                let to = if *name == "partitioner.class" { "partitioner" } else { name };
                format!("librdkafka's `{to}`: {}; other values are refused", pairs.join(", "))
            }
            Client::Dropped(why) => format!("left out: {why}"),
            Client::Refused(instead) => format!("refused: {instead}"),
            Client::Host(what) => format!("read by Wharf: {what}"),
        };
        page.push_str(&format!("| `{name}` | {what} |\n"));
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(policy: OverridePolicy) -> OverrideRules {
        OverrideRules { policy, ..OverrideRules::default() }
    }

    #[test]
    fn the_override_policy_allows_what_kafka_connects_allows() {
        let class = "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy";
        assert_eq!(OverridePolicy::parse(class), Ok(OverridePolicy::Principal));
        assert_eq!(OverridePolicy::parse("All"), Ok(OverridePolicy::All));
        let allowlist = "org.apache.kafka.connect.connector.policy.AllowlistConnectorClientConfigOverridePolicy";
        assert_eq!(OverridePolicy::parse(allowlist), Ok(OverridePolicy::Allowlist));
        assert!(OverridePolicy::parse("Some").unwrap_err().contains("use None, Principal, Allowlist or All"));
        let principal = rules(OverridePolicy::Principal);
        assert_eq!(principal.refusal("producer.override.", "sasl.jaas.config", "x", false), None);
        let refused = principal.refusal("consumer.override.", "max.poll.records", "5", false).unwrap();
        assert!(refused.contains("\"consumer.override.max.poll.records\" is not allowed"), "{refused}");
        assert!(rules(OverridePolicy::None).refusal("admin.override.", "security.protocol", "SSL", false).is_some());
        assert_eq!(rules(OverridePolicy::All).refusal("producer.override.", "linger.ms", "5", false), None);
    }

    #[test]
    fn the_allowlist_policy_allows_only_what_it_names() {
        let mut allowlist = rules(OverridePolicy::Allowlist);
        let refused = allowlist.refusal("producer.override.", "linger.ms", "5", false).unwrap();
        assert!(refused.contains("connector.client.config.override.allowlist is empty"), "{refused}");
        assert!(refused.contains("add linger.ms to connector.client.config.override.allowlist"), "{refused}");
        allowlist.allowlist = vec!["linger.ms".into(), "batch.size".into()];
        assert_eq!(allowlist.refusal("producer.override.", "linger.ms", "5", false), None);
        let refused = allowlist.refusal("consumer.override.", "group.id", "other", false).unwrap();
        assert!(refused.contains("names (linger.ms, batch.size)"), "{refused}");
    }

    #[test]
    fn settings_that_load_code_or_are_librdkafkas_own_are_refused_under_every_policy() {
        let all = rules(OverridePolicy::All);
        for (setting, says) in [
            ("plugin.library.paths", "loads a shared library"),
            ("ssl.engine.location", "loads an OpenSSL engine"),
            ("ssl.engine.id", "loads an OpenSSL engine"),
            ("ssl.engine.factory.class", "loads an OpenSSL engine"),
            ("ssl.providers", "loads OpenSSL providers"),
            ("sasl.kerberos.kinit.cmd", "runs a command"),
            ("debug", "protocol traces"),
            ("ssl.ca.location", "not a setting of Kafka's Java clients"),
            ("enable.ssl.certificate.verification", "not a setting of Kafka's Java clients"),
            ("queue.buffering.max.ms", "not a setting of Kafka's Java clients"),
        ] {
            let refused = all.refusal("producer.override.", setting, "x", false).unwrap();
            assert!(refused.starts_with(&format!("\"producer.override.{setting}\" ")), "{refused}");
            assert!(refused.contains(says) && refused.contains("no"), "{setting}: {refused}");
        }
    }

    #[test]
    fn an_override_names_a_file_only_inside_the_allowed_paths_and_never_a_granted_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for sub in ["stores", "granted"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("stores/ca.pem"), "pem").unwrap();
        std::fs::write(root.join("granted/ca.pem"), "pem").unwrap();
        std::fs::write(root.join("elsewhere.pem"), "pem").unwrap();
        let store = |name: &str| root.join(name).display().to_string();
        let mut r = rules(OverridePolicy::All);
        let refused = r.refusal("consumer.override.", "ssl.truststore.location", &store("stores/ca.pem"), false);
        assert!(refused.unwrap().contains("connector.client.config.override.allowed.paths, which is empty"));
        r.allowed_paths = vec![root.join("stores"), root.clone()];
        r.granted_folders = vec![root.join("granted")];
        assert_eq!(r.refusal("consumer.override.", "ssl.truststore.location", &store("stores/ca.pem"), false), None);
        let refused = r.refusal("consumer.override.", "ssl.keystore.location", &store("granted/ca.pem"), false);
        assert!(refused.unwrap().contains("a folder connectors may grant their plugins"));
        let refused = r.refusal("consumer.override.", "ssl.truststore.location", &store("stores"), false);
        assert!(refused.unwrap().contains("is not a regular file"));
        r.allowed_paths = vec![root.join("stores")];
        let refused = r.refusal("consumer.override.", "ssl.truststore.location", &store("elsewhere.pem"), false);
        assert!(refused.unwrap().contains("is outside connector.client.config.override.allowed.paths"));
    }

    #[test]
    fn a_client_with_the_workers_credentials_keeps_its_certificate_checks_and_mechanism() {
        let all = rules(OverridePolicy::All);
        for value in ["", "none"] {
            let refused = all.refusal("producer.override.", "ssl.endpoint.identification.algorithm", value, true);
            assert!(refused.unwrap().contains("carries the worker's"));
            let own = all.refusal("producer.override.", "ssl.endpoint.identification.algorithm", value, false);
            assert_eq!(own, None);
        }
        assert_eq!(all.refusal("producer.override.", "ssl.endpoint.identification.algorithm", "https", true), None);
        for setting in ["ssl.truststore.certificates", "ssl.truststore.type", "sasl.mechanism", "security.protocol"] {
            let refused = all.refusal("consumer.override.", setting, "x", true).unwrap();
            assert!(refused.contains("would change how the worker's credentials are sent"), "{refused}");
            assert_eq!(all.refusal("consumer.override.", setting, "x", false), None, "{setting}");
        }
    }

    #[test]
    fn the_java_names_are_sorted_and_cover_the_translation_table() {
        assert!(JAVA_CLIENT_NAMES.windows(2).all(|w| w[0] < w[1]));
        for (name, _) in JAVA_CLIENT_SETTINGS {
            assert!(is_java_client_setting(name), "{name}");
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn java_names_become_librdkafkas_and_shared_names_pass() {
        let given = pairs(&[
            ("max.request.size", "2097152"),
            ("buffer.memory", "33554433"),
            ("linger.ms", "20"),
            ("receive.buffer.bytes", "-1"),
            ("partitioner.class", "org.apache.kafka.clients.producer.internals.DefaultPartitioner"),
            ("auto.offset.reset", "none"),
            ("key.serializer", "org.apache.kafka.common.serialization.StringSerializer"),
        ]);
        let wanted = pairs(&[
            ("message.max.bytes", "2097152"),
            ("queue.buffering.max.kbytes", "32769"),
            ("linger.ms", "20"),
            ("socket.receive.buffer.bytes", "0"),
            ("partitioner", "murmur2_random"),
            ("auto.offset.reset", "error"),
        ]);
        assert_eq!(translate(&given, "producer.").unwrap(), wanted);
    }

    #[test]
    fn a_java_only_name_or_value_is_refused_naming_the_key_as_written() {
        let cases = [
            ("max.block.ms", "60000", "producer.max.block.ms is a Java client setting", "queue.buffering.max.kbytes"),
            ("max.poll.records", "lots", "consumer.max.poll.records=lots is not valid", "at least 1"),
            ("buffer.memory", "lots", "producer.buffer.memory=lots is not a number", "KiB"),
            (
                "partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.StickyAssignor",
                "has no librdkafka counterpart",
                "CooperativeStickyAssignor",
            ),
        ];
        for (key, value, says, and) in cases {
            let prefix = if ["partition.assignment.strategy", "max.poll.records"].contains(&key) {
                "consumer."
            } else {
                "producer."
            };
            let problem = translate(&pairs(&[(key, value)]), prefix).unwrap_err();
            assert_eq!(problem.key, format!("{prefix}{key}"));
            assert!(problem.message.contains(says) && problem.message.contains(and), "{}", problem.message);
        }
    }
}
