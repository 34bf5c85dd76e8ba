//! Kafka with TLS and SASL: a broker of the project's script with a SASL_SSL listener (SCRAM
//! users made when it is formatted, its certificate made here, by a test authority), and
//! workers that reach it with Kafka Connect's settings. A wrong password, an authority the
//! worker does not trust and a certificate for another host name each stop the worker at start
//! with their own message.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use wharf_e2e::*;

const USER: &str = "alice";
const PASSWORD: &str = "alice-secret";

/// A broker with a PLAINTEXT and a SASL_SSL listener, stopped when dropped.
struct SecureBroker {
    port: u16,
    secure_port: u16,
    dir: PathBuf,
    tls: tempfile::TempDir,
}

impl SecureBroker {
    fn start() -> Self {
        let tls = tempfile::tempdir().unwrap();
        make_certificates(tls.path());
        let (port, secure_port) = (free_port(), free_port());
        let dir = workspace().join(format!("target/kafka-secure-{port}"));
        let started = Command::new(workspace().join("scripts/kafka"))
            .args(["start", "--port", &port.to_string(), "--sasl-ssl-port", &secure_port.to_string()])
            .arg("--tls-dir")
            .arg(tls.path())
            .args(["--scram-user", &format!("{USER}:{PASSWORD}")])
            .arg("--dir")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            started.status.success(),
            "the SASL_SSL broker did not start: {}{}",
            String::from_utf8_lossy(&started.stdout),
            String::from_utf8_lossy(&started.stderr)
        );
        SecureBroker { port, secure_port, dir, tls }
    }

    fn authority(&self) -> PathBuf {
        self.tls.path().join("authority.pem")
    }

    fn stranger(&self) -> PathBuf {
        self.tls.path().join("stranger.pem")
    }

    /// A worker's settings for the SASL_SSL listener, as a Kafka Connect worker file writes them.
    fn settings(&self, host: &str, mechanism: &str, password: &str, truststore: &Path) -> Vec<(&'static str, String)> {
        let module = match mechanism {
            "PLAIN" => "org.apache.kafka.common.security.plain.PlainLoginModule",
            _ => "org.apache.kafka.common.security.scram.ScramLoginModule",
        };
        vec![
            ("bootstrap.servers", format!("{host}:{}", self.secure_port)),
            ("security.protocol", "SASL_SSL".into()),
            ("sasl.mechanism", mechanism.into()),
            ("sasl.jaas.config", format!(r#"{module} required username="{USER}" password="{password}";"#)),
            ("ssl.truststore.type", "PEM".into()),
            ("ssl.truststore.location", truststore.display().to_string()),
            ("wharf.bootstrap.timeout.ms", "8000".into()),
        ]
    }
}

impl Drop for SecureBroker {
    fn drop(&mut self) {
        let _ = Command::new(workspace().join("scripts/kafka"))
            .args(["stop", "--port", &self.port.to_string()])
            .arg("--dir")
            .arg(&self.dir)
            .output();
    }
}

/// The broker's key and certificate (for 127.0.0.1 only) signed by a test authority, the
/// authority's certificate, and another authority's, which signed nothing of the broker's.
fn make_certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
    let authority = |name: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let certificate = params.self_signed(&key).unwrap();
        (params, key, certificate)
    };
    let (params, key, certificate) = authority("wharf test authority");
    std::fs::write(dir.join("authority.pem"), certificate.pem()).unwrap();
    let (_, _, stranger) = authority("a stranger");
    std::fs::write(dir.join("stranger.pem"), stranger.pem()).unwrap();
    let issuer = Issuer::new(params, key);
    let mut server = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    server.distinguished_name.push(DnType::CommonName, "kafka");
    server.extended_key_usages.push(ExtendedKeyUsagePurpose::ServerAuth);
    let server_key = KeyPair::generate().unwrap();
    let server_certificate = server.signed_by(&server_key, &issuer).unwrap();
    std::fs::write(dir.join("server-keystore.pem"), server_key.serialize_pem() + &server_certificate.pem()).unwrap();
}

fn file_source(w: &mut Standalone, input: &Path, topic: &str) {
    w.add_connector(
        "source",
        &[
            ("connector.class", "file-source".into()),
            ("file", input.display().to_string()),
            ("topic", topic.into()),
            ("wasm.fs.read", w.dir.path().display().to_string()),
        ],
    );
}

fn file_sink(w: &mut Standalone, topic: &str, output: &Path) {
    w.add_connector(
        "sink",
        &[
            ("connector.class", "file-sink".into()),
            ("topics", topic.into()),
            ("file", output.display().to_string()),
            ("wasm.fs.write", w.dir.path().display().to_string()),
        ],
    );
}

/// Runs a standalone worker with `settings` that must refuse to start; its log.
fn refused(settings: Vec<(&str, String)>) -> String {
    let mut w = Standalone::new(&settings);
    let input = w.path("in.txt");
    std::fs::write(&input, "x\n").unwrap();
    file_source(&mut w, &input, &unique("refused"));
    let (status, output) = w.run_to_failure();
    assert!(!status.success(), "the worker started: {output}");
    output
}

#[test]
fn workers_reach_kafka_over_sasl_ssl_and_say_why_when_they_cannot() {
    let broker = SecureBroker::start();
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"] {
        let mut w = Standalone::new(&broker.settings("127.0.0.1", mechanism, PASSWORD, &broker.authority()));
        let (input, output, topic) = (w.path("in.txt"), w.path("out.txt"), unique("secure"));
        std::fs::write(&input, (0..100).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
        file_source(&mut w, &input, &topic);
        file_sink(&mut w, &topic, &output);
        let worker = w.start();
        worker.wait(&format!("100 lines through Kafka with {mechanism}"), Duration::from_secs(60), || {
            (count_lines(&output) >= 100).then_some(())
        });
        assert_eq!(read_lines(&output), (0..100).map(|i| format!("line {i}")).collect::<Vec<_>>());
    }

    let wrong_password =
        refused(broker.settings("127.0.0.1", "SCRAM-SHA-256", "not-the-password", &broker.authority()));
    assert!(
        wrong_password.contains("refused this worker's credentials") && wrong_password.contains("SCRAM-SHA-256"),
        "{wrong_password}"
    );
    let untrusted = refused(broker.settings("127.0.0.1", "SCRAM-SHA-256", PASSWORD, &broker.stranger()));
    assert!(untrusted.contains("was not issued by an authority this worker trusts"), "{untrusted}");
    // The certificate names 127.0.0.1, not localhost.
    let wrong_host = refused(broker.settings("localhost", "SCRAM-SHA-256", PASSWORD, &broker.authority()));
    assert!(wrong_host.contains("does not name the host localhost"), "{wrong_host}");
    // Without the host name check the same connection is accepted.
    let mut settings = broker.settings("localhost", "SCRAM-SHA-256", PASSWORD, &broker.authority());
    settings.push(("ssl.endpoint.identification.algorithm", String::new()));
    let w = Standalone::new(&settings);
    let worker = w.start();
    assert!(worker.get("/connectors").is_some());
}

#[test]
fn a_connector_cannot_send_the_workers_credentials_to_brokers_of_its_choosing() {
    let broker = SecureBroker::start();
    let w = Standalone::new(&broker.settings("127.0.0.1", "PLAIN", PASSWORD, &broker.authority()));
    let worker = w.start();
    // Stands for a broker the connector's writer controls: it keeps whatever it is sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = kept.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut stream = stream;
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    kept.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            });
        }
    });
    let body = json!({"name": "elsewhere", "config": {"connector.class": "datagen", "topic": unique("elsewhere"),
        "producer.override.bootstrap.servers": format!("127.0.0.1:{port}")}});
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    worker.wait("the redirected producer to reach the listener", Duration::from_secs(60), || {
        (seen.lock().unwrap().len() > 8).then_some(())
    });
    // Whatever handshake it would have begun has had time to begin.
    std::thread::sleep(Duration::from_secs(3));
    let bytes = seen.lock().unwrap().clone();
    let holds = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert_ne!(bytes[0], 0x16, "the redirected client began a TLS handshake with the worker's ssl settings");
    assert!(!holds(USER.as_bytes()) && !holds(PASSWORD.as_bytes()), "the worker's user reached the listener");
    assert!(!holds(b"PLAIN"), "the redirected client began a SASL handshake");

    // A client that keeps the worker's brokers and credentials keeps its certificate checks too.
    let body = json!({"name": "unchecked", "config": {"connector.class": "datagen", "topic": unique("unchecked"),
        "producer.override.ssl.endpoint.identification.algorithm": ""}});
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("carries the worker's"), "{answer}");
}

#[test]
fn a_cluster_of_three_workers_runs_over_sasl_ssl_with_its_membership_secured_too() {
    let broker = SecureBroker::start();
    let mut settings = broker.settings("127.0.0.1", "SCRAM-SHA-512", PASSWORD, &broker.authority());
    settings.push(("session.timeout.ms", "6000".into()));
    settings.push(("heartbeat.interval.ms", "1000".into()));
    let first = Distributed::new(&settings);
    let others: Vec<Distributed> = (0..2).map(|_| first.again(&settings)).collect();
    let workers: Vec<Worker> = std::iter::once(first.start()).chain(others.iter().map(Distributed::start)).collect();
    for worker in &workers {
        worker.wait("the worker joined its group", Duration::from_secs(60), || {
            worker.log().contains("joined group").then_some(())
        });
    }
    let data = tempfile::tempdir().unwrap();
    let (input, output, topic) = (data.path().join("in.txt"), data.path().join("out.txt"), unique("secure-cluster"));
    std::fs::write(&input, (0..500).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
    let dir = data.path().display().to_string();
    let source = serde_json::json!({"name": "source", "config": {"connector.class": "file-source",
        "file": input.display().to_string(), "topic": topic, "wasm.fs.read": dir}});
    let sink = serde_json::json!({"name": "sink", "config": {"connector.class": "file-sink",
        "file": output.display().to_string(), "topics": topic, "wasm.fs.write": dir}});
    // Writes sent to any worker reach the leader, which writes the config topic.
    for (worker, body) in [(&workers[1], &source), (&workers[2], &sink)] {
        let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
        assert_eq!(code, 201, "{answer}");
    }
    workers[0].wait("500 lines through the secured cluster", Duration::from_secs(90), || {
        (count_lines(&output) >= 500).then_some(())
    });
    assert_eq!(read_lines(&output), (0..500).map(|i| format!("line {i}")).collect::<Vec<_>>());
    for worker in &workers {
        let status = worker.get("/connectors/sink/status").unwrap();
        assert_eq!(status["tasks"][0]["state"], "RUNNING", "{status}");
    }
}
