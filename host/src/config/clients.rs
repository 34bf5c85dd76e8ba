//! Kafka client settings written with the Java client's names, as Kafka Connect worker files
//! write them under `producer.`, `consumer.` and `admin.`, translated to librdkafka's. Security
//! settings have their own translation (`config::security`); this is the rest. A name that both
//! clients share passes unchanged, a renamed one gets librdkafka's name (and its unit), and a
//! Java-only one either is left out, when leaving it out changes nothing Connect would do, or is
//! refused with what to use instead. Names in neither table pass unchanged: librdkafka's own
//! names are welcome, and librdkafka names any it does not know when the client is made.

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
    All,
}

impl OverridePolicy {
    /// The policy by Kafka Connect's alias (`None`, `Principal`, `All`) or class name.
    pub fn parse(value: &str) -> Result<Self, String> {
        let value = value.trim();
        let alias = value
            .strip_prefix("org.apache.kafka.connect.connector.policy.")
            .unwrap_or(value)
            .trim_end_matches("ConnectorClientConfigOverridePolicy");
        match alias {
            "None" => Ok(OverridePolicy::None),
            "Principal" => Ok(OverridePolicy::Principal),
            "All" => Ok(OverridePolicy::All),
            _ => Err(format!(
                "connector.client.config.override.policy={value} is not a policy Wharf has: use None, Principal or All \
                 (or their Kafka Connect class names)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OverridePolicy::None => "None",
            OverridePolicy::Principal => "Principal",
            OverridePolicy::All => "All",
        }
    }

    /// Why the override `key` (as the connector wrote it, prefix and all) is not allowed.
    pub fn refusal(self, key: &str) -> Option<String> {
        let setting = key.split_once(".override.").map_or(key, |(_, setting)| setting);
        let allowed = match self {
            OverridePolicy::None => false,
            OverridePolicy::Principal => ["security.protocol", "sasl.mechanism", "sasl.jaas.config"].contains(&setting),
            OverridePolicy::All => true,
        };
        (!allowed).then(|| {
            format!(
                "\"{key}\" is not allowed: the worker's connector.client.config.override.policy={} {}; remove it, or \
                 change the policy in the worker config",
                self.name(),
                match self {
                    OverridePolicy::None => "lets connectors override no client setting",
                    _ => "lets connectors override only security.protocol, sasl.mechanism and sasl.jaas.config",
                }
            )
        })
    }
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

    #[test]
    fn the_override_policy_allows_what_kafka_connects_allows() {
        let class = "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy";
        assert_eq!(OverridePolicy::parse(class), Ok(OverridePolicy::Principal));
        assert_eq!(OverridePolicy::parse("All"), Ok(OverridePolicy::All));
        assert!(OverridePolicy::parse("Some").unwrap_err().contains("use None, Principal or All"));
        let principal = OverridePolicy::Principal;
        assert_eq!(principal.refusal("producer.override.sasl.jaas.config"), None);
        let refused = principal.refusal("consumer.override.max.poll.records").unwrap();
        assert!(refused.contains("\"consumer.override.max.poll.records\" is not allowed"), "{refused}");
        assert!(OverridePolicy::None.refusal("admin.override.security.protocol").is_some());
        assert_eq!(OverridePolicy::All.refusal("producer.override.linger.ms"), None);
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
