//! Kafka client security settings as a Kafka Connect worker file writes them (the Java client's
//! names: `security.protocol`, `ssl.truststore.*`, `ssl.keystore.*`, `sasl.mechanism`,
//! `sasl.jaas.config`, …), translated into librdkafka's (`ssl.ca.location`, `ssl.ca.pem`,
//! `sasl.username`, …), which every client of the worker is given: librdkafka's producers,
//! consumers and admin clients, and the group membership client, which reads the same names.
//!
//! Stores librdkafka cannot read are converted here: a PKCS12 truststore becomes PEM text, a PEM
//! keystore file its certificate and key. A JKS store, Java's own format, is refused with the
//! command that converts it. Java settings with no librdkafka counterpart are left out and
//! named in the log once.

use std::path::Path;

/// Java-only settings that have no librdkafka counterpart; left out (librdkafka chooses its
/// protocols, ciphers and providers from OpenSSL's defaults).
const JAVA_ONLY: &[&str] = &[
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.provider",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    "ssl.cipher.suites",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "ssl.keystore.type",
    // The REST listener's, when its settings fall back to the worker's ssl.* (as in Connect).
    "ssl.client.auth",
];
const JAVA_ONLY_PREFIXES: &[&str] =
    &["sasl.login.", "sasl.client.callback.handler.class", "sasl.kerberos.", "sasl.oauthbearer."];

/// The largest store file read (a truststore or keystore is a few KiB).
const MAX_STORE_BYTES: u64 = 4 * 1024 * 1024;

/// A truststore, keystore or key file: a regular file of at most `MAX_STORE_BYTES`.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    super::files::read_regular(path, MAX_STORE_BYTES)
}

/// A Java KeyStore (JKS or JCEKS, by its first bytes) is refused with the command that converts
/// it; `what` names the setting and its value.
pub fn refuse_jks(bytes: &[u8], what: &str, location: &str) -> Result<(), String> {
    if bytes.starts_with(&[0xfe, 0xed, 0xfe, 0xed]) || bytes.starts_with(&[0xce, 0xce, 0xce, 0xce]) {
        return Err(format!(
            "{what} is a Java keystore (JKS), which Wharf does not read; convert it to PKCS12 with \
             `keytool -importkeystore -srckeystore {location} -srcstoretype JKS -destkeystore store.p12 \
             -deststoretype PKCS12` (or export the certificates as PEM with `keytool -exportcert -rfc`) and set the \
             type to PKCS12 or PEM"
        ));
    }
    Ok(())
}

/// A self-signed EC certificate and its key, for tests that need a store.
#[cfg(test)]
pub fn self_signed(common_name: &str) -> (openssl::x509::X509, openssl::pkey::PKey<openssl::pkey::Private>) {
    use openssl::{asn1::Asn1Time, bn::BigNum, ec, hash::MessageDigest, nid::Nid, x509};
    let group = ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let key = openssl::pkey::PKey::from_ec_key(ec::EcKey::generate(&group).unwrap()).unwrap();
    let mut name = x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", common_name).unwrap();
    let name = name.build();
    let mut builder = x509::X509Builder::new().unwrap();
    builder.set_version(2).unwrap();
    builder.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap()).unwrap();
    builder.set_subject_name(&name).unwrap();
    builder.set_issuer_name(&name).unwrap();
    builder.set_pubkey(&key).unwrap();
    builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
    builder.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
    builder.sign(&key, MessageDigest::sha256()).unwrap();
    (builder.build(), key)
}

/// Whether a key is one of Kafka's client security settings.
pub fn is_security_key(key: &str) -> bool {
    key == "security.protocol" || key.starts_with("ssl.") || key.starts_with("sasl.")
}

/// A setting that cannot be used, with its key (as written, prefix and all) and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityProblem {
    pub key: String,
    pub message: String,
}

/// The settings with every Java security setting translated to librdkafka's; other settings
/// pass unchanged. `prefix` (`""`, `"producer."`, …) is how the keys were written, for messages.
pub fn translate(settings: &[(String, String)], prefix: &str) -> Result<Vec<(String, String)>, SecurityProblem> {
    let get = |key: &str| wharf_connect::model::last_value(settings, key).map(str::trim);
    let problem = |key: &str, message: String| SecurityProblem { key: format!("{prefix}{key}"), message };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    for (key, value) in settings {
        let value = value.trim();
        match key.as_str() {
            "security.protocol" => {
                let protocol = value.to_ascii_uppercase();
                if !["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"].contains(&protocol.as_str()) {
                    return Err(problem(
                        key,
                        format!("{prefix}{key}={value} is not a protocol Kafka clients speak: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
                    ));
                }
                out.push((key.clone(), protocol));
            }
            "sasl.mechanism" | "sasl.mechanisms" => {
                let mechanism = value.to_ascii_uppercase();
                match mechanism.as_str() {
                    "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" => out.push(("sasl.mechanism".into(), mechanism)),
                    "GSSAPI" => {
                        return Err(problem(
                            key,
                            format!("{prefix}{key}=GSSAPI (Kerberos) is not supported by Wharf; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
                        ))
                    }
                    _ => {
                        return Err(problem(
                            key,
                            format!("{prefix}{key}={value} is not supported by Wharf; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
                        ))
                    }
                }
            }
            "sasl.jaas.config" => {
                let (username, password) =
                    jaas_credentials(value).map_err(|why| problem(key, format!("{prefix}{key}: {why}")))?;
                out.push(("sasl.username".into(), username));
                out.push(("sasl.password".into(), password));
            }
            "ssl.truststore.location" => {
                let kind = get("ssl.truststore.type");
                let password = get("ssl.truststore.password").filter(|p| !p.is_empty());
                match read_store(value, kind, &format!("{prefix}{key}")).map_err(|why| problem(key, why))? {
                    Store::Pem(_) => out.push(("ssl.ca.location".into(), value.to_string())),
                    Store::Pkcs12(der) => {
                        let Some(password) = password else {
                            return Err(problem(
                                "ssl.truststore.password",
                                format!("{prefix}ssl.truststore.location={value} is a PKCS12 store: set {prefix}ssl.truststore.password"),
                            ));
                        };
                        let pem = pkcs12_certificates(&der, password)
                            .map_err(|why| problem(key, format!("{prefix}{key}={value}: {why}")))?;
                        out.push(("ssl.ca.pem".into(), pem));
                    }
                }
            }
            "ssl.truststore.certificates" => out.push(("ssl.ca.pem".into(), value.to_string())),
            "ssl.keystore.location" => {
                let kind = get("ssl.keystore.type");
                match read_store(value, kind, &format!("{prefix}{key}")).map_err(|why| problem(key, why))? {
                    Store::Pem(text) => {
                        let (certificates, key_pem) = split_pem(&text);
                        if certificates.is_empty() || key_pem.is_empty() {
                            return Err(problem(
                                key,
                                format!("{prefix}{key}={value} is a PEM keystore but does not hold both a certificate and a private key"),
                            ));
                        }
                        out.push(("ssl.certificate.pem".into(), certificates));
                        out.push(("ssl.key.pem".into(), key_pem));
                    }
                    Store::Pkcs12(_) => {
                        let Some(password) = get("ssl.keystore.password").filter(|p| !p.is_empty()) else {
                            return Err(problem(
                                "ssl.keystore.password",
                                format!("{prefix}ssl.keystore.location={value} is a PKCS12 store: set {prefix}ssl.keystore.password"),
                            ));
                        };
                        out.push(("ssl.keystore.location".into(), value.to_string()));
                        out.push(("ssl.keystore.password".into(), password.to_string()));
                    }
                }
            }
            // Taken with the location above.
            "ssl.keystore.password" => {}
            "ssl.keystore.certificate.chain" => out.push(("ssl.certificate.pem".into(), value.to_string())),
            "ssl.keystore.key" => out.push(("ssl.key.pem".into(), value.to_string())),
            "ssl.endpoint.identification.algorithm" => {
                let algorithm = match value.to_ascii_lowercase().as_str() {
                    "https" => "https",
                    "" | "none" => "none",
                    _ => {
                        return Err(problem(
                            key,
                            format!("{prefix}{key}={value}: use https (check the broker's host name, the default) or leave it empty (do not)"),
                        ))
                    }
                };
                out.push((key.clone(), algorithm.to_string()));
            }
            other if JAVA_ONLY.contains(&other) || JAVA_ONLY_PREFIXES.iter().any(|p| other.starts_with(p)) => {
                left_out.push(format!("{prefix}{other}"));
            }
            _ => out.push((key.clone(), value.to_string())),
        }
    }
    let protocol = wharf_connect::model::last_value(&out, super::keys::worker::SECURITY_PROTOCOL.name);
    let sasl = matches!(protocol, Some("SASL_PLAINTEXT" | "SASL_SSL"));
    if sasl {
        if !out.iter().any(|(k, _)| k == "sasl.mechanism") {
            return Err(problem(
                "sasl.mechanism",
                format!("{prefix}security.protocol={} needs {prefix}sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's default, GSSAPI, is not supported)", protocol.unwrap_or_default()),
            ));
        }
        if !out.iter().any(|(k, _)| k == "sasl.username") {
            return Err(problem(
                "sasl.jaas.config",
                format!("{prefix}security.protocol={} needs the user and password: set {prefix}sasl.jaas.config (…PlainLoginModule or …ScramLoginModule required username=\"…\" password=\"…\";)", protocol.unwrap_or_default()),
            ));
        }
    }
    let kept: Vec<&str> = left_out
        .iter()
        .map(String::as_str)
        .filter(|k| !k.ends_with(".type") && !k.ends_with("truststore.password") && !k.ends_with("client.auth"))
        .collect();
    if !kept.is_empty() {
        tracing::warn!(
            "{} have no counterpart in librdkafka and are left out: its TLS protocols, ciphers and providers are OpenSSL's defaults",
            kept.join(", ")
        );
    }
    Ok(out)
}

enum Store {
    Pem(String),
    Pkcs12(Vec<u8>),
}

/// A truststore or keystore file, by what it holds (its first bytes), checked against the type
/// given, if any.
fn read_store(location: &str, kind: Option<&str>, key: &str) -> Result<Store, String> {
    let bytes = read_bounded(Path::new(location)).map_err(|e| format!("{key}={location}: {e}"))?;
    let kind = kind.map(str::to_ascii_uppercase);
    refuse_jks(&bytes, &format!("{key}={location}"), location)?;
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("-----BEGIN") {
        if kind.as_deref().is_some_and(|k| k != "PEM" && k != "JKS") {
            return Err(format!(
                "{key}={location} holds PEM text, not {}: set its type to PEM",
                kind.unwrap_or_default()
            ));
        }
        return Ok(Store::Pem(text.into_owned()));
    }
    if bytes.first() == Some(&0x30) {
        if kind.as_deref().is_some_and(|k| k == "PEM") {
            return Err(format!("{key}={location} is a binary (PKCS12) store, not PEM: set its type to PKCS12"));
        }
        return Ok(Store::Pkcs12(bytes));
    }
    Err(format!("{key}={location} is neither PEM nor PKCS12"))
}

/// The certificates of a PKCS12 truststore, as PEM text.
fn pkcs12_certificates(der: &[u8], password: &str) -> Result<String, String> {
    let store = openssl::pkcs12::Pkcs12::from_der(der).map_err(|e| format!("not a PKCS12 store ({e})"))?;
    let parsed = store.parse2(password).map_err(|_| "cannot be opened with the password given".to_string())?;
    let mut pem = String::new();
    let certificates = parsed.cert.into_iter().chain(parsed.ca.into_iter().flatten());
    for certificate in certificates {
        let text =
            certificate.to_pem().map_err(|e| format!("holds a certificate that cannot be written as PEM ({e})"))?;
        pem.push_str(&String::from_utf8_lossy(&text));
    }
    if pem.is_empty() {
        return Err("holds no certificate".into());
    }
    Ok(pem)
}

/// A PEM file's certificates and its private key, each as PEM text.
fn split_pem(text: &str) -> (String, String) {
    let (mut certificates, mut key) = (String::new(), String::new());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let block = &rest[start..];
        let Some(label_end) = block[11..].find("-----") else { break };
        let label = &block[11..11 + label_end];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = block.find(&end_marker) else { break };
        let whole = &block[..end + end_marker.len()];
        if label.contains("PRIVATE KEY") {
            key.push_str(whole);
            key.push('\n');
        } else if label == "CERTIFICATE" {
            certificates.push_str(whole);
            certificates.push('\n');
        }
        rest = &block[end + end_marker.len()..];
    }
    (certificates, key)
}

/// The user and password of a `sasl.jaas.config` for Kafka's `PlainLoginModule` or
/// `ScramLoginModule`: `<class> <flag> key=value … ;`, values bare or quoted.
fn jaas_credentials(config: &str) -> Result<(String, String), String> {
    let tokens = jaas_tokens(config)?;
    let mut tokens = tokens.into_iter();
    let class = tokens.next().ok_or("it is empty")?;
    const MODULES: [&str; 2] = [
        "org.apache.kafka.common.security.plain.PlainLoginModule",
        "org.apache.kafka.common.security.scram.ScramLoginModule",
    ];
    if !MODULES.contains(&class.as_str()) {
        return Err(format!("the login module {class} is not supported; use {} or {}", MODULES[0], MODULES[1]));
    }
    let flag = tokens.next().ok_or("the login module's flag (required) is missing")?;
    if !["required", "requisite", "sufficient", "optional"].contains(&flag.to_ascii_lowercase().as_str()) {
        return Err(format!("\"{flag}\" is not a login module flag: write required"));
    }
    let (mut username, mut password, mut ended) = (None, None, false);
    let rest: Vec<String> = tokens.collect();
    let mut i = 0;
    while i < rest.len() {
        if rest[i] == ";" {
            ended = true;
            break;
        }
        if rest.get(i + 1).map(String::as_str) != Some("=") {
            return Err(format!("expected key=value after {class}, found \"{}\"", rest[i]));
        }
        let value = rest.get(i + 2).cloned().ok_or_else(|| format!("{} has no value", rest[i]))?;
        match rest[i].as_str() {
            "username" => username = Some(value),
            "password" => password = Some(value),
            _ => {}
        }
        i += 3;
    }
    if !ended {
        return Err("it must end with ;".into());
    }
    match (username, password) {
        (Some(u), Some(p)) => Ok((u, p)),
        _ => Err("it needs username=\"…\" and password=\"…\"".into()),
    }
}

/// Words, `=`, `;` and quoted strings (with backslash escapes) of a JAAS entry.
fn jaas_tokens(text: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '=' || c == ';' {
            tokens.push(c.to_string());
            chars.next();
        } else if c == '"' || c == '\'' {
            chars.next();
            let mut value = String::new();
            loop {
                match chars.next() {
                    None => return Err("a quoted value is not closed".into()),
                    Some('\\') => value.extend(chars.next()),
                    Some(q) if q == c => break,
                    Some(other) => value.push(other),
                }
            }
            tokens.push(value);
        } else {
            let mut word = String::new();
            while let Some(&w) = chars.peek() {
                if w.is_whitespace() || w == '=' || w == ';' || w == '"' || w == '\'' {
                    break;
                }
                word.push(w);
                chars.next();
            }
            tokens.push(word);
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn value<'a>(settings: &'a [(String, String)], key: &str) -> Option<&'a str> {
        wharf_connect::model::last_value(settings, key)
    }

    #[test]
    fn sasl_settings_become_librdkafkas() {
        let jaas = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="a \"b\" c";"#;
        let out = translate(
            &pairs(&[
                ("security.protocol", "sasl_ssl"),
                ("sasl.mechanism", "SCRAM-SHA-512"),
                ("sasl.jaas.config", jaas),
                ("ssl.endpoint.identification.algorithm", ""),
                ("ssl.enabled.protocols", "TLSv1.3"),
                ("ssl.client.auth", "required"),
                ("acks", "all"),
            ]),
            "",
        )
        .unwrap();
        assert_eq!(value(&out, "security.protocol"), Some("SASL_SSL"));
        assert_eq!(value(&out, "sasl.mechanism"), Some("SCRAM-SHA-512"));
        assert_eq!((value(&out, "sasl.username"), value(&out, "sasl.password")), (Some("alice"), Some("a \"b\" c")));
        assert_eq!(value(&out, "ssl.endpoint.identification.algorithm"), Some("none"));
        assert_eq!(value(&out, "ssl.enabled.protocols"), None);
        assert_eq!(value(&out, "ssl.client.auth"), None);
        assert_eq!(value(&out, "sasl.jaas.config"), None);
        assert_eq!(value(&out, "acks"), Some("all"));
    }

    #[test]
    fn a_setting_that_cannot_work_is_named_with_its_prefix() {
        let refused = |items: &[(&str, &str)]| translate(&pairs(items), "producer.").unwrap_err();
        let p = refused(&[("security.protocol", "SASL_SSL"), ("sasl.mechanism", "GSSAPI")]);
        assert_eq!(p.key, "producer.sasl.mechanism");
        assert!(p.message.contains("GSSAPI"), "{}", p.message);
        let p = refused(&[("security.protocol", "SASL_SSL"), ("sasl.mechanism", "PLAIN")]);
        assert_eq!(p.key, "producer.sasl.jaas.config");
        let p = refused(&[("sasl.jaas.config", "com.example.Kerberos required;")]);
        assert!(p.message.contains("not supported"), "{}", p.message);
        let p = refused(&[(
            "sasl.jaas.config",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p""#,
        )]);
        assert!(p.message.contains("end with ;"), "{}", p.message);
        let p = refused(&[("security.protocol", "TLS")]);
        assert!(p.message.contains("SASL_SSL"), "{}", p.message);
    }

    #[test]
    fn stores_are_read_by_what_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        let jks = dir.path().join("trust.jks");
        std::fs::write(&jks, [0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]).unwrap();
        let p = translate(&pairs(&[("ssl.truststore.location", &jks.display().to_string())]), "").unwrap_err();
        assert!(p.message.contains("keytool -importkeystore"), "{}", p.message);

        let pem = dir.path().join("keystore.pem");
        std::fs::write(
            &pem,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let location = pem.display().to_string();
        let out = translate(
            &pairs(&[
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &location),
                ("ssl.truststore.location", &location),
            ]),
            "",
        )
        .unwrap();
        assert_eq!(value(&out, "ssl.key.pem"), Some("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
        assert_eq!(
            value(&out, "ssl.certificate.pem"),
            Some("-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n")
        );
        assert_eq!(value(&out, "ssl.ca.location"), Some(location.as_str()));
        assert_eq!(value(&out, "ssl.keystore.location"), None);
    }

    #[test]
    fn a_pkcs12_truststore_becomes_pem_text_with_its_password_and_is_refused_without() {
        use openssl::pkcs12::Pkcs12;
        let (certificate, key) = self_signed("wharf test authority");
        let store = Pkcs12::builder().name("ca").pkey(&key).cert(&certificate).build2("changeit").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.p12");
        std::fs::write(&path, store.to_der().unwrap()).unwrap();
        let location = path.display().to_string();

        let out = translate(
            &pairs(&[
                ("ssl.truststore.type", "PKCS12"),
                ("ssl.truststore.location", &location),
                ("ssl.truststore.password", "changeit"),
            ]),
            "",
        )
        .unwrap();
        let pem = value(&out, "ssl.ca.pem").unwrap();
        assert_eq!(pem.as_bytes(), certificate.to_pem().unwrap().as_slice());
        assert_eq!(value(&out, "ssl.truststore.password"), None);
        let p = translate(&pairs(&[("ssl.truststore.location", &location)]), "admin.").unwrap_err();
        assert_eq!(p.key, "admin.ssl.truststore.password");
        let p = translate(&pairs(&[("ssl.truststore.location", &location), ("ssl.truststore.password", "wrong")]), "")
            .unwrap_err();
        assert!(p.message.contains("cannot be opened with the password"), "{}", p.message);
    }
}
