//! HTTP Basic authentication on the REST API: off by default; with a credentials file of hashed
//! passwords (made by `wharf rest-credential`), a request without credentials or with wrong
//! ones is answered 401 with a `WWW-Authenticate` challenge, and one with a user's password goes
//! through, also when a follower passes it on to the leader.

use std::time::Duration;

use serde_json::json;
use wharf_e2e::*;

fn credentials_file(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("rest-credentials.properties");
    std::fs::write(&file, credential_line("alice", "open sesame") + &credential_line("bob", "b0b")).unwrap();
    file
}

/// Which of the workers leads their group, once each joined it.
fn leader_of(workers: &[Worker]) -> usize {
    let mut leader = 0;
    for (i, w) in workers.iter().enumerate() {
        w.wait("the worker joined its group", Duration::from_secs(60), || {
            w.log().contains("joined group").then_some(())
        });
        if w.log().contains("as leader") {
            leader = i;
        }
    }
    leader
}

#[test]
fn requests_without_a_users_password_are_refused_with_a_challenge() {
    let secrets = tempfile::tempdir().unwrap();
    let file = credentials_file(secrets.path());
    assert!(!std::fs::read_to_string(&file).unwrap().contains("open sesame"), "the password is not stored");
    let w = Standalone::new(&[
        (
            "rest.extension.classes",
            "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension".into(),
        ),
        ("wharf.rest.basic.auth.credentials.file", file.display().to_string()),
    ]);
    let worker = w.start_as(&basic("alice", "open sesame"));
    for authorization in
        [None, Some(basic("alice", "wrong")), Some(basic("carol", "open sesame")), Some("Bearer x".into())]
    {
        let (code, body, headers) = worker.call_as(authorization.as_deref(), "GET", "/connectors", None);
        assert_eq!(code, 401, "{authorization:?}: {body}");
        let challenge =
            headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("www-authenticate")).map(|(_, v)| v.as_str());
        assert!(challenge.is_some_and(|c| c.starts_with("Basic")), "{headers:?}");
        assert_eq!(body["error_code"], 401, "{body}");
    }
    assert_eq!(worker.call_as(Some(&basic("bob", "b0b")), "GET", "/connectors", None).0, 200);
    assert_eq!(worker.call("GET", "/", None).0, 200);
}

#[test]
fn a_cluster_with_authentication_passes_a_users_writes_on_to_the_leader() {
    let secrets = tempfile::tempdir().unwrap();
    let file = credentials_file(secrets.path());
    let settings = [("wharf.rest.basic.auth.credentials.file", file.display().to_string())];
    let first = Distributed::new(&settings);
    let second = first.again(&settings);
    let alice = basic("alice", "open sesame");
    let workers = [first.start_as(&alice), second.start_as(&alice)];
    let leader = leader_of(&workers);
    let follower = &workers[1 - leader];
    let body = json!({"name": "gen", "config": {"connector.class": "datagen", "topic": unique("gen"), "rate": "10", "tasks.max": "2"}});
    // Without credentials the follower refuses it itself; with them the leader writes it.
    assert_eq!(follower.call_as(None, "POST", "/connectors", Some(&body.to_string())).0, 401);
    let (code, answer, _) = follower.call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    for worker in &workers {
        worker.wait("both tasks running", Duration::from_secs(60), || {
            let status = worker.get("/connectors/gen/status")?;
            let tasks = status["tasks"].as_array()?;
            (tasks.len() == 2 && tasks.iter().all(|t| t["state"] == "RUNNING")).then_some(())
        });
    }
}

#[test]
fn task_configs_reach_the_leader_only_signed_with_the_clusters_session_key() {
    let first = Distributed::new(&[]);
    let second = first.again(&[]);
    let workers = [first.start(), second.start()];
    for worker in &workers {
        worker.wait("the worker joined its group", Duration::from_secs(60), || {
            worker.log().contains("joined group").then_some(())
        });
    }
    // Connectors on both workers: those the follower runs send their task configs, signed.
    for i in 0..4 {
        let body = json!({"name": format!("gen{i}"), "config": {"connector.class": "datagen",
            "topic": unique("gen"), "rate": "1", "tasks.max": "1"}});
        assert_eq!(workers[i % 2].call("POST", "/connectors", Some(&body.to_string())).0, 201);
    }
    for i in 0..4 {
        workers[0].wait("every connector's task running", Duration::from_secs(60), || {
            let status = workers[0].get(&format!("/connectors/gen{i}/status"))?;
            (status["tasks"][0]["state"] == "RUNNING").then_some(())
        });
    }
    // Kafka Connect's session key record in the config topic.
    let records = topic_records(&first.topics[0]);
    let (_, _, value) = records.iter().find(|(_, key, _)| key == "session-key").expect("a session-key record");
    let key: serde_json::Value = serde_json::from_str(value.as_deref().unwrap_or_default()).unwrap();
    assert_eq!(key["algorithm"], "HmacSHA256", "{key}");
    assert!(key["key"].is_string() && key["creation-timestamp"].is_i64(), "{key}");

    // Anyone else is refused, whichever worker they ask.
    let forged = r#"[{"connector.class":"datagen","topic":"stolen"}]"#;
    for worker in &workers {
        let (code, error, _) = worker.call("POST", "/connectors/gen0/tasks", Some(forged));
        assert_eq!(code, 403, "{error}");
        assert!(error["message"].as_str().unwrap_or_default().contains("missing required signature"), "{error}");
        let (code, error, _) =
            worker.call_signed("/connectors/gen0/tasks", forged, "HmacSHA256", "bm90IGEgc2lnbmF0dXJl");
        assert_eq!(code, 403, "{error}");
        assert!(error["message"].as_str().unwrap_or_default().contains("invalid signature"), "{error}");
    }
    let tasks = workers[0].get("/connectors/gen0/tasks").unwrap();
    assert_ne!(tasks[0]["config"]["topic"], "stolen", "{tasks}");
}

/// A test authority (PEM) and a keystore (PEM: key and certificate for 127.0.0.1) it issued.
fn rest_certificates(dir: &std::path::Path) -> (Vec<u8>, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
    let mut authority = CertificateParams::new(Vec::<String>::new()).unwrap();
    authority.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    authority.distinguished_name.push(DnType::CommonName, "wharf test REST authority");
    let authority_key = KeyPair::generate().unwrap();
    let authority_pem = authority.self_signed(&authority_key).unwrap().pem();
    let issuer = Issuer::new(authority, authority_key);
    let mut server = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let server_key = KeyPair::generate().unwrap();
    let server_pem = server.signed_by(&server_key, &issuer).unwrap().pem();
    let keystore = dir.join("rest-keystore.pem");
    std::fs::write(&keystore, server_key.serialize_pem() + &server_pem).unwrap();
    std::fs::write(dir.join("rest-authority.pem"), &authority_pem).unwrap();
    (authority_pem.into_bytes(), keystore)
}

#[test]
fn a_cluster_serves_https_and_its_workers_pass_requests_on_over_it_with_credentials() {
    let secrets = tempfile::tempdir().unwrap();
    let (authority, keystore) = rest_certificates(secrets.path());
    let settings = [
        ("listeners.https.ssl.keystore.location", keystore.display().to_string()),
        ("listeners.https.ssl.truststore.location", secrets.path().join("rest-authority.pem").display().to_string()),
        ("wharf.rest.basic.auth.credentials.file", credentials_file(secrets.path()).display().to_string()),
    ];
    let first = Distributed::new(&settings);
    let second = first.again(&settings);
    for d in [&first, &second] {
        let text = std::fs::read_to_string(&d.worker_file).unwrap();
        std::fs::write(&d.worker_file, text.replace("listeners=http://", "listeners=https://")).unwrap();
    }
    let alice = basic("alice", "open sesame");
    let workers = [first.start_https(authority.clone(), Some(&alice)), second.start_https(authority, Some(&alice))];
    let leader = leader_of(&workers);
    // Plain HTTP finds no API there.
    let plain = ureq::get(&format!("http://127.0.0.1:{}/connectors", workers[0].port)).call();
    assert!(plain.is_err(), "{plain:?}");

    let follower = &workers[1 - leader];
    for i in 0..2 {
        let body = json!({"name": format!("tls{i}"), "config": {"connector.class": "datagen",
            "topic": unique("gen"), "rate": "1", "tasks.max": "1"}});
        let (code, answer, _) = follower.call("POST", "/connectors", Some(&body.to_string()));
        assert_eq!(code, 201, "{answer}");
    }
    for i in 0..2 {
        follower.wait("the task running", Duration::from_secs(60), || {
            let status = follower.get(&format!("/connectors/tls{i}/status"))?;
            (status["tasks"][0]["state"] == "RUNNING").then_some(())
        });
    }
}

#[test]
fn a_flood_of_wrong_passwords_is_answered_429_while_known_users_are_served() {
    let secrets = tempfile::tempdir().unwrap();
    let file = credentials_file(secrets.path());
    let w = Standalone::new(&[("wharf.rest.basic.auth.credentials.file", file.display().to_string())]);
    let worker = w.start_as(&basic("alice", "open sesame"));
    let (codes, served) = std::thread::scope(|scope| {
        let guesses: Vec<_> = (0..12)
            .map(|i| {
                let worker = &worker;
                scope.spawn(move || {
                    let user = if i % 2 == 0 { "alice" } else { "mallory" };
                    worker.call_as(Some(&basic(user, &format!("guess-{i}"))), "GET", "/connectors", None).0
                })
            })
            .collect();
        // A user whose password passed lately is answered at once, flood or not.
        let asked = std::time::Instant::now();
        let served = worker.call_as(Some(&basic("alice", "open sesame")), "GET", "/connectors", None).0;
        assert!(asked.elapsed() < Duration::from_secs(10), "took {:?}", asked.elapsed());
        (guesses.into_iter().map(|g| g.join().unwrap()).collect::<Vec<u16>>(), served)
    });
    assert_eq!(served, 200);
    assert!(codes.iter().all(|c| *c == 401 || *c == 429), "{codes:?}");
    assert!(codes.contains(&429), "at most two checks run at once, the rest are answered 429: {codes:?}");
    // Past five failures in a row, this address waits before its next guess.
    let waited = (0..7).find_map(|_| {
        let (code, _, headers) = worker.call_as(Some(&basic("bob", "nope")), "GET", "/connectors", None);
        (code == 429).then_some(headers)
    });
    let headers = waited.expect("no back-off after seven wrong passwords in a row");
    assert!(headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("retry-after")), "{headers:?}");
    assert_eq!(worker.call_as(Some(&basic("alice", "open sesame")), "GET", "/connectors", None).0, 200);
}
