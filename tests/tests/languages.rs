//! Plugins written in Python, JavaScript and C, built from source by `./run test`
//! (plugins/build-examples), run by a real worker on the real broker.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use wharf_e2e::*;

/// Writes lines to a file whose folder the test grants to the plugin.
fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
}

fn utf8(values: Vec<Vec<u8>>) -> Vec<String> {
    values.into_iter().map(|v| String::from_utf8(v).unwrap()).collect()
}

/// Waits for a task's FAILED status and returns its trace.
fn failed_trace(worker: &Worker, connector: &str) -> String {
    worker.wait(&format!("{connector} to fail"), Duration::from_secs(60), || {
        let status = worker.get(&format!("/connectors/{connector}/status"))?;
        let task = &status["tasks"][0];
        (task["state"] == "FAILED").then(|| task["trace"].as_str().unwrap_or_default().to_string())
    })
}

#[test]
fn python_source_reads_json_lines_into_a_topic_exactly() {
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.jsonl"), unique("py-src"));
    let lines: Vec<String> = (0..500).map(|i| format!(r#"{{"id":{i},"name":"item {i}"}}"#)).collect();
    write(&input, &(lines.join("\n") + "\n"));
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "py-src",
        &[
            ("connector.class", "jsonl-source".into()),
            ("file", input.display().to_string()),
            ("topic", topic.clone()),
            ("key.field", "id".into()),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("500 records", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 500).then_some(values)
    });
    assert_eq!(utf8(values), lines);
    let status = worker.get("/connectors/py-src/status").unwrap();
    assert_eq!(status["tasks"][0]["state"], "RUNNING", "{status}");
}

#[test]
fn python_sink_writes_every_record_as_a_json_line_exactly() {
    let data = tempfile::tempdir().unwrap();
    let (output, topic) = (data.path().join("out.jsonl"), unique("py-sink"));
    create_topic(&topic, 1, "delete");
    for i in 0..300 {
        produce(&topic, 0, &format!("k{i}"), format!("value {i}").as_bytes());
    }
    let mut s = Standalone::new(&[]);
    let name = unique("py-sink");
    s.add_connector(
        &name,
        &[
            ("connector.class", "jsonl-sink".into()),
            ("file", output.display().to_string()),
            ("topics", topic.clone()),
            ("wasm.fs.write", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    worker.wait("300 lines", Duration::from_secs(60), || (count_lines(&output) >= 300).then_some(()));
    let got: Vec<Value> = read_lines(&output).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let expected: Vec<Value> = (0..300)
        .map(|i| json!({"topic": topic, "partition": 0, "offset": i, "key": format!("k{i}"), "value": format!("value {i}")}))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn python_data_crosses_both_ways_through_json_converter() {
    // The source hands over each parsed document as data without a schema, which the
    // connector's JsonConverter writes as JSON; the sink receives structs, decimals and dates
    // that JsonConverter read from envelopes, as Python values.
    let data = tempfile::tempdir().unwrap();
    let (input, output) = (data.path().join("in.jsonl"), data.path().join("out.jsonl"));
    let (documents, sunk) = (unique("py-docs"), unique("py-structs"));
    let lines: Vec<String> = (0..50)
        .map(|i| format!(r#"{{"id":{i},"name":"item {i}","tags":["a",{i}],"ratio":{i}.5,"ok":true}}"#))
        .collect();
    write(&input, &(lines.join("\n") + "\n"));
    create_topic(&sunk, 1, "delete");
    let schema = r#"{"type":"struct","name":"com.example.Order","fields":[{"field":"id","type":"int32"},{"field":"price","type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"}},{"field":"day","type":"int32","name":"org.apache.kafka.connect.data.Date"},{"field":"note","type":"string","optional":true}]}"#;
    for i in 0..20 {
        // 12.34 is 1234 unscaled: 0x04d2.
        let payload = format!(
            r#"{{"id":{i},"price":"BNI=","day":19724,"note":{}}}"#,
            if i % 2 == 0 { "null" } else { r#""odd""# }
        );
        produce(&sunk, 0, &format!("k{i}"), format!(r#"{{"schema":{schema},"payload":{payload}}}"#).as_bytes());
    }
    let json = "org.apache.kafka.connect.json.JsonConverter".to_string();
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "py-docs",
        &[
            ("connector.class", "jsonl-source".into()),
            ("file", input.display().to_string()),
            ("topic", documents.clone()),
            ("value.format", "json".into()),
            ("value.converter", json.clone()),
            ("value.converter.schemas.enable", "false".into()),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    s.add_connector(
        "py-structs",
        &[
            ("connector.class", "jsonl-sink".into()),
            ("file", output.display().to_string()),
            ("topics", sunk.clone()),
            ("value.converter", json),
            ("wasm.fs.write", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("50 documents", Duration::from_secs(60), || {
        let values = topic_values(&documents);
        (values.len() >= 50).then_some(values)
    });
    assert_eq!(utf8(values), lines, "JsonConverter writes the documents as they were read");
    worker.wait("20 lines", Duration::from_secs(60), || (count_lines(&output) >= 20).then_some(()));
    let got: Vec<Value> = read_lines(&output).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let expected: Vec<Value> = (0..20)
        .map(|i| {
            let note = if i % 2 == 0 { Value::Null } else { json!("odd") };
            json!({"topic": sunk, "partition": 0, "offset": i, "key": format!("k{i}"),
                   "value": {"id": i, "price": "12.34", "day": "2024-01-02", "note": note}})
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_python_exception_fails_the_task_with_pythons_message() {
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("bad.jsonl");
    write(&input, "{\"ok\": 1}\nthis is not json\n");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "py-bad",
        &[
            ("connector.class", "jsonl-source".into()),
            ("file", input.display().to_string()),
            ("topic", unique("py-bad")),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let trace = failed_trace(&worker, "py-bad");
    assert!(trace.contains("JSONDecodeError: Expecting value: line 1 column 1 (char 0)"), "{trace}");
    assert!(trace.contains("Traceback"), "the Python traceback is kept: {trace}");
}

/// A small HTTP server for the JavaScript examples: `GET /items?offset=N&limit=M` answers a JSON
/// array of items from N on, `GET /garbage` answers text that is not JSON, `POST /sink` keeps
/// each body.
struct ItemServer {
    port: u16,
    posted: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ItemServer {
    fn start(items: Vec<Value>) -> ItemServer {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let posted: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let kept = posted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let target = request_line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let answer = if request_line.starts_with("POST") {
                    kept.lock().unwrap().push(String::from_utf8_lossy(&body).into_owned());
                    "{}".to_string()
                } else if target.starts_with("/garbage") {
                    "this is not JSON".to_string()
                } else {
                    let param = |name: &str| -> usize {
                        target
                            .split(['?', '&'])
                            .find_map(|p| p.strip_prefix(&format!("{name}=")))
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0)
                    };
                    let (offset, limit) = (param("offset"), param("limit").max(1));
                    let slice: Vec<&Value> = items.iter().skip(offset).take(limit).collect();
                    serde_json::to_string(&slice).unwrap()
                };
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        ItemServer { port, posted }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Waits until at least `count` records were posted, and returns them all.
    fn wait_posted(&self, worker: &Worker, count: usize) -> Vec<Value> {
        worker.wait(&format!("{count} records posted"), Duration::from_secs(60), || {
            let records: Vec<Value> = self
                .posted
                .lock()
                .unwrap()
                .iter()
                .flat_map(|body| serde_json::from_str::<Vec<Value>>(body).unwrap())
                .collect();
            (records.len() >= count).then_some(records)
        })
    }

    fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// A TCP server of lines, over TLS with a certificate for localhost (only) from an
/// authority of its own (written to `authority`, a file test workers let connectors name): it
/// keeps every line a client sends, and sends each client `lines`, then waits for it to close.
struct LineServer {
    port: u16,
    received: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    authority: tempfile::TempPath,
}

impl LineServer {
    fn start(lines: Vec<String>) -> LineServer {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        use rustls::pki_types::pem::PemObject;
        use std::io::{BufRead, BufReader, Write};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca, ca_key);
        let server_key = KeyPair::generate().unwrap();
        // Only the name: a plugin that verified the address it connected to would be refused.
        let server =
            CertificateParams::new(vec!["localhost".to_string()]).unwrap().signed_by(&server_key, &issuer).unwrap();
        let authority = tempfile::NamedTempFile::new().unwrap();
        fs::write(authority.path(), ca_pem).unwrap();
        let config =
            rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(
                    vec![server.der().clone()],
                    rustls::pki_types::PrivateKeyDer::from_pem_slice(server_key.serialize_pem().as_bytes()).unwrap(),
                )
                .unwrap();
        let config = std::sync::Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let kept = received.clone();
        std::thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(socket) = socket else { continue };
                let (config, kept, lines) = (config.clone(), kept.clone(), lines.clone());
                std::thread::spawn(move || {
                    let Ok(session) = rustls::ServerConnection::new(config) else { return };
                    let mut stream = rustls::StreamOwned::new(session, socket);
                    for line in &lines {
                        if writeln!(stream, "{line}").is_err() {
                            return;
                        }
                    }
                    let _ = stream.flush();
                    for line in BufReader::new(stream).lines() {
                        let Ok(line) = line else { return };
                        kept.lock().unwrap().push(line);
                    }
                });
            }
        });
        LineServer { port, received, authority: authority.into_temp_path() }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

#[test]
fn python_sink_writes_json_lines_over_tls_trusting_the_connectors_authority() {
    let server = LineServer::start(Vec::new());
    let stranger = LineServer::start(Vec::new());
    let topic = unique("py-tls");
    create_topic(&topic, 1, "delete");
    for i in 0..100 {
        produce(&topic, 0, &format!("k{i}"), format!("value {i}").as_bytes());
    }
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "py-tls",
        &[
            ("connector.class", "socket-sink".into()),
            ("address", format!("localhost:{}", server.port)),
            ("tls", "true".into()),
            ("wasm.tls.trust", server.authority.display().to_string()),
            ("topics", topic.clone()),
        ],
    );
    // The same server's certificate, trusted by nobody the connector names.
    s.add_connector(
        "py-untrusted",
        &[
            ("connector.class", "socket-sink".into()),
            ("address", format!("localhost:{}", stranger.port)),
            ("tls", "true".into()),
            ("topics", topic.clone()),
        ],
    );
    let worker = s.start();
    let lines = worker.wait("100 lines over TLS", Duration::from_secs(60), || {
        let lines = server.received();
        (lines.len() >= 100).then_some(lines)
    });
    let lines: Vec<Value> = lines.iter().map(|line| serde_json::from_str(line).unwrap()).collect();
    let expected: Vec<Value> = (0..100)
        .map(|i| json!({"topic": topic, "partition": 0, "offset": i, "key": format!("k{i}"), "value": format!("value {i}")}))
        .collect();
    assert_eq!(lines, expected);
    let log = worker.wait("the refused handshake in the log", Duration::from_secs(60), || {
        let log = worker.log();
        log.contains("not signed by the public certificate authorities").then_some(log)
    });
    assert!(log.contains("wasm.tls.trust"), "the refusal names the setting that would fix it:\n{log}");
    assert!(stranger.received().is_empty(), "nothing crosses a refused handshake");
}

#[test]
fn javascript_source_reads_lines_over_tls_trusting_the_connectors_authority() {
    let lines: Vec<String> = (0..200).map(|i| format!("line {i} {}", "x".repeat(i % 50))).collect();
    let server = LineServer::start(lines.clone());
    let topic = unique("js-tls");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "js-tls",
        &[
            ("connector.class", "socket-source".into()),
            ("address", format!("localhost:{}", server.port)),
            ("tls", "true".into()),
            ("wasm.tls.trust", server.authority.display().to_string()),
            ("topic", topic.clone()),
            ("poll.timeout.ms", "200".into()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("200 lines", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 200).then_some(values)
    });
    assert_eq!(utf8(values), lines);
    assert!(worker.log().contains("over TLS"), "{}", worker.log());
    // Polls that find no line wait out their deadline and return empty: the task stays up.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(worker.task_state_now("js-tls", 0).0, "RUNNING");
    assert_eq!(topic_values(&topic).len(), 200);
}

#[test]
fn javascript_source_fetches_items_into_a_topic_exactly() {
    let items: Vec<Value> = (0..200).map(|i| json!({"id": i, "text": format!("item {i}")})).collect();
    let server = ItemServer::start(items.clone());
    let topic = unique("js-src");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "js-src",
        &[
            ("connector.class", "http-source".into()),
            ("url", server.url("/items")),
            ("topic", topic.clone()),
            ("wasm.http.allow", server.authority()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("200 records", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 200).then_some(values)
    });
    let expected: Vec<String> = items.iter().map(|i| serde_json::to_string(i).unwrap()).collect();
    assert_eq!(utf8(values), expected);
}

#[test]
fn javascript_sink_posts_every_record_with_fetch_to_the_granted_host() {
    let server = ItemServer::start(Vec::new());
    let topic = unique("js-sink");
    create_topic(&topic, 1, "delete");
    for i in 0..100 {
        produce(&topic, 0, &format!("k{i}"), format!("value {i}").as_bytes());
    }
    let mut s = Standalone::new(&[]);
    let name = unique("js-sink");
    s.add_connector(
        &name,
        &[
            ("connector.class", "http-sink".into()),
            ("url", server.url("/sink")),
            ("topics", topic.clone()),
            ("wasm.http.allow", server.authority()),
        ],
    );
    let worker = s.start();
    let posted = server.wait_posted(&worker, 100);
    let expected: Vec<Value> = (0..100)
        .map(|i| json!({"topic": topic, "partition": 0, "offset": i, "key": format!("k{i}"), "value": format!("value {i}")}))
        .collect();
    assert_eq!(posted, expected);
}

#[test]
fn javascript_data_crosses_both_ways_through_json_converter() {
    // The source hands each fetched item over as data without a schema, which JsonConverter
    // writes; the sink posts the structs, decimals and timestamps JsonConverter read from
    // envelopes, as JavaScript values.
    let items: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "text": format!("item {i}"), "tags": ["a", i], "ratio": i as f64 + 0.5}))
        .collect();
    let server = ItemServer::start(items.clone());
    let (documents, sunk) = (unique("js-docs"), unique("js-structs"));
    create_topic(&sunk, 1, "delete");
    let schema = r#"{"type":"struct","name":"com.example.Order","fields":[{"field":"id","type":"int64"},{"field":"price","type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"}},{"field":"at","type":"int64","name":"org.apache.kafka.connect.data.Timestamp"},{"field":"tags","type":"array","items":{"type":"string"}}]}"#;
    for i in 0..20 {
        // -12.30 is -1230 unscaled: 0xfb32.
        let payload = format!(r#"{{"id":{i},"price":"+zI=","at":1700000000000,"tags":["x","y"]}}"#);
        produce(&sunk, 0, &format!("k{i}"), format!(r#"{{"schema":{schema},"payload":{payload}}}"#).as_bytes());
    }
    let json = "org.apache.kafka.connect.json.JsonConverter".to_string();
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "js-docs",
        &[
            ("connector.class", "http-source".into()),
            ("url", server.url("/items")),
            ("topic", documents.clone()),
            ("value.format", "json".into()),
            ("value.converter", json.clone()),
            ("value.converter.schemas.enable", "false".into()),
            ("wasm.http.allow", server.authority()),
        ],
    );
    s.add_connector(
        "js-structs",
        &[
            ("connector.class", "http-sink".into()),
            ("url", server.url("/sink")),
            ("topics", sunk.clone()),
            ("value.converter", json),
            ("wasm.http.allow", server.authority()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("50 documents", Duration::from_secs(60), || {
        let values = topic_values(&documents);
        (values.len() >= 50).then_some(values)
    });
    let expected: Vec<String> = items.iter().map(|i| serde_json::to_string(i).unwrap()).collect();
    assert_eq!(utf8(values), expected, "JsonConverter writes the items as they were fetched");
    let posted = server.wait_posted(&worker, 20);
    let expected: Vec<Value> = (0..20)
        .map(|i| {
            json!({"topic": sunk, "partition": 0, "offset": i, "key": format!("k{i}"),
                   "value": {"id": i, "price": "-12.30", "at": "2023-11-14T22:13:20.000Z", "tags": ["x", "y"]}})
        })
        .collect();
    assert_eq!(posted, expected);
}

/// What JsonConverter writes for order `n` of the orders examples: its schema and its payload.
fn order_json(n: i64) -> Value {
    use base64::Engine;
    let field = |name: &str, schema: Value| {
        let mut schema = schema;
        schema["field"] = json!(name);
        schema
    };
    let required = |t: &str| json!({"type": t, "optional": false});
    let logical = |t: &str, name: &str| json!({"type": t, "optional": false, "name": name, "version": 1});
    let line = json!({"type": "struct", "optional": false, "name": "com.example.OrderLine",
                      "fields": [field("sku", required("string")), field("quantity", required("int32"))]});
    let mut decimal = logical("bytes", "org.apache.kafka.connect.data.Decimal");
    decimal["parameters"] = json!({"scale": "2"});
    let schema = json!({"type": "struct", "optional": false, "name": "com.example.Order", "version": 1, "fields": [
        field("id", required("int64")),
        field("customer", required("string")),
        field("total", decimal),
        field("day", logical("int32", "org.apache.kafka.connect.data.Date")),
        field("placed", logical("int64", "org.apache.kafka.connect.data.Timestamp")),
        field("lines", json!({"type": "array", "optional": false, "items": line})),
        field("note", json!({"type": "string", "optional": true})),
    ]});
    // The unscaled cents, in the shortest big-endian two's complement, in base64.
    let cents = n * 125 + 99;
    let bytes = cents.to_be_bytes();
    let mut start = bytes.iter().position(|b| *b != 0).unwrap_or(7);
    if bytes[start] & 0x80 != 0 {
        start -= 1;
    }
    let total = base64::engine::general_purpose::STANDARD.encode(&bytes[start..]);
    let lines: Vec<Value> = (0..n % 3 + 1).map(|i| json!({"sku": format!("sku-{i}"), "quantity": i + 1})).collect();
    let payload = json!({
        "id": n, "customer": format!("customer-{}", n % 7), "total": total, "day": 19724 + n,
        "placed": 1_704_187_800_000i64 + n * 60_000, "lines": lines,
        "note": if n % 2 == 1 { json!("gift") } else { Value::Null },
    });
    json!({"schema": schema, "payload": payload})
}

#[test]
fn python_javascript_and_c_sources_write_structs_with_schemas_through_json_converter() {
    let mut s = Standalone::new(&[]);
    let connectors = ["py-orders-source", "js-orders-source", "c-orders-source"];
    let topics = [unique("py-orders"), unique("js-orders"), unique("c-orders")];
    for (connector, topic) in connectors.into_iter().zip(&topics) {
        s.add_connector(
            connector,
            &[
                ("connector.class", connector.into()),
                ("topic", topic.clone()),
                ("count", "30".into()),
                ("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
            ],
        );
    }
    let worker = s.start();
    let mut written = Vec::new();
    for (connector, topic) in connectors.into_iter().zip(&topics) {
        let records = worker.wait(&format!("30 orders from {connector}"), Duration::from_secs(90), || {
            let records = timed_topic_records(topic);
            (records.len() >= 30).then_some(records)
        });
        for (n, record) in records.iter().enumerate() {
            let value: Value = serde_json::from_str(record.value.as_deref().unwrap_or_default()).unwrap();
            assert_eq!(value, order_json(n as i64), "{connector}, order {n}");
            assert_eq!(record.key, n.to_string());
            assert_eq!(record.headers, vec![("origin".to_string(), Some(connector.to_string()))]);
        }
        written.push(records.into_iter().map(|r| r.value).collect::<Vec<_>>());
    }
    assert_eq!(written[0], written[1], "the SDKs hand over the same data, so JsonConverter writes the same bytes");
    assert_eq!(written[0], written[2], "the SDKs hand over the same data, so JsonConverter writes the same bytes");
}

/// The orders sources of Python, JavaScript and C each keep metrics of their own through their
/// SDK (contract 0.1.7): a counter, a gauge and a histogram, served with the task's labels and
/// the SDK's tag; and a registration past `wasm.max.plugin.metrics` fails each task with the
/// host's reason.
#[test]
fn every_sdks_plugin_metrics_are_served_and_their_limit_holds() {
    let mut s = Standalone::new(&[]);
    let sources = [("py-orders-source", "python"), ("js-orders-source", "javascript"), ("c-orders-source", "c")];
    for (class, _) in sources {
        for (name, limit) in [(class.to_string(), "100"), (format!("{class}-limited"), "2")] {
            s.add_connector(
                &name,
                &[
                    ("connector.class", class.into()),
                    ("topic", unique("metered")),
                    ("count", "30".into()),
                    ("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
                    ("wasm.max.plugin.metrics", limit.into()),
                ],
            );
        }
    }
    let worker = s.start();
    for (class, sdk) in sources {
        let labels = |more: &str| format!(r#"connector="{class}",task="0",sdk="{sdk}"{more}"#);
        let made = worker.wait(&format!("{class}'s orders counted"), Duration::from_secs(90), || {
            worker.metric("kafka_connect_plugins_orders_made_total", &labels("")).filter(|n| *n >= 30.0)
        });
        assert_eq!(made, 30.0, "{class}");
        let next = worker.wait(&format!("{class}'s gauge"), Duration::from_secs(30), || {
            worker.metric("kafka_connect_plugins_next_order_id", &labels("")).filter(|n| *n >= 30.0)
        });
        assert_eq!(next, 30.0, "{class}");
        let histogram = "kafka_connect_plugins_order_lines";
        // Orders have 1, 2 or 3 lines in turn.
        for (le, expected) in [("1.0", 10.0), ("2.0", 20.0), ("3.0", 30.0), ("+Inf", 30.0)] {
            let bucket = worker.metric(&format!("{histogram}_bucket"), &labels(&format!(r#",le="{le}""#)));
            assert_eq!(bucket, Some(expected), "{class}, le={le}");
        }
        assert_eq!(worker.metric(&format!("{histogram}_sum"), &labels("")), Some(60.0), "{class}");
        assert_eq!(worker.metric(&format!("{histogram}_count"), &labels("")), Some(30.0), "{class}");

        let limited = format!("{class}-limited");
        worker.wait_task_state(&limited, 0, "FAILED");
        let trace = failed_trace(&worker, &limited);
        assert!(trace.contains("wasm.max.plugin.metrics"), "{class}: {trace}");
        assert!(trace.contains("order_lines is not registered"), "{class}: {trace}");
    }
}

/// While Kafka takes no records, the host holds each source's records back and asks it about
/// once a second to keep its connections alive (`poll` with 0 records, contract 0.1.6): each
/// SDK answers without reading, and every task keeps running.
#[test]
fn sources_of_every_sdk_wait_out_a_kafka_that_takes_nothing() {
    let mut s = Standalone::new(&[]);
    let connectors = ["py-orders-source", "js-orders-source", "c-orders-source", "datagen"];
    // A broker that is not there, and room for a few records only.
    let nowhere = format!("127.0.0.1:{}", free_port());
    for connector in connectors {
        s.add_connector(
            connector,
            &[
                ("connector.class", connector.into()),
                ("topic", unique("held")),
                ("count", "1000000".into()),
                ("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
                ("producer.override.bootstrap.servers", nowhere.clone()),
                ("producer.override.buffer.memory", "16384".into()),
            ],
        );
    }
    let worker = s.start();
    for connector in connectors {
        worker.wait_task_state(connector, 0, "RUNNING");
    }
    // Several rounds of keeping alive.
    std::thread::sleep(Duration::from_secs(5));
    for connector in connectors {
        let (state, task) = worker.task_state_now(connector, 0);
        assert_eq!(state, "RUNNING", "{connector}: {task}");
    }
    let log = worker.log();
    assert!(!log.contains("keep its connections alive"), "{log}");
}

#[test]
fn a_javascript_error_fails_the_task_with_javascripts_message() {
    let server = ItemServer::start(Vec::new());
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "js-bad",
        &[
            ("connector.class", "http-source".into()),
            ("url", server.url("/garbage")),
            ("topic", unique("js-bad")),
            ("wasm.http.allow", server.authority()),
        ],
    );
    let worker = s.start();
    let trace = failed_trace(&worker, "js-bad");
    assert!(trace.contains("SyntaxError"), "{trace}");
    assert!(trace.contains("JSON"), "the engine's own words about the bad JSON: {trace}");
}

#[test]
fn c_source_reads_lines_into_a_topic_exactly() {
    let data = tempfile::tempdir().unwrap();
    let (input, topic) = (data.path().join("in.txt"), unique("c-src"));
    let lines: Vec<String> = (0..1000).map(|i| format!("line {i} from C")).collect();
    write(&input, &(lines.join("\n") + "\n"));
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "c-src",
        &[
            ("connector.class", "lines-source".into()),
            ("file", input.display().to_string()),
            ("topic", topic.clone()),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let values = worker.wait("1000 records", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 1000).then_some(values)
    });
    assert_eq!(utf8(values), lines);
}

#[test]
fn a_c_error_return_fails_the_task_with_its_message() {
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("long.txt");
    write(&input, "short\nthis line is far too long\n");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "c-bad",
        &[
            ("connector.class", "lines-source".into()),
            ("file", input.display().to_string()),
            ("topic", unique("c-bad")),
            ("max.line.bytes", "10".into()),
            ("wasm.fs.read", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    let trace = failed_trace(&worker, "c-bad");
    let expected = format!("line at byte 6 of {} is longer than max.line.bytes=10", input.display());
    assert!(trace.contains(&expected), "{trace}");
}

/// `wharf plugin new` for every language and kind writes a project whose build.sh builds a
/// component that `wharf plugin inspect` accepts, with the right kind and name.
#[test]
fn scaffolded_projects_build_and_pass_inspect() {
    let root = workspace();
    let toolchains = |what: &str| -> String {
        let out = std::process::Command::new(root.join("scripts/toolchains")).arg(what).output().unwrap();
        assert!(out.status.success(), "scripts/toolchains {what}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let path = format!("{}:{}", toolchains("path"), std::env::var("PATH").unwrap_or_default());
    let adapter = toolchains("adapter");
    let dir = tempfile::tempdir().unwrap();
    for lang in ["rust", "python", "js", "c"] {
        for kind in ["source", "sink", "transform"] {
            let name = format!("new-{lang}-{kind}");
            let project = dir.path().join(&name);
            let made = std::process::Command::new(wharf_binary())
                .args(["plugin", "new", "--lang", lang, "--kind", kind, &name, "--dir"])
                .arg(&project)
                .output()
                .unwrap();
            assert!(made.status.success(), "plugin new {lang} {kind}: {}", String::from_utf8_lossy(&made.stderr));
            let built = std::process::Command::new(project.join("build.sh"))
                .env("PATH", &path)
                .env("WASI_ADAPTER", &adapter)
                // A Rust project builds in a target folder of its own, out of the way.
                .env("CARGO_TARGET_DIR", root.join("target/scaffold-test"))
                .output()
                .unwrap();
            assert!(
                built.status.success(),
                "{name}/build.sh failed:\n{}\n{}",
                String::from_utf8_lossy(&built.stdout),
                String::from_utf8_lossy(&built.stderr)
            );
            let wasm = project.join(format!("{name}.wasm"));
            let inspected =
                std::process::Command::new(wharf_binary()).args(["plugin", "inspect"]).arg(&wasm).output().unwrap();
            let text = String::from_utf8_lossy(&inspected.stdout);
            assert!(inspected.status.success(), "inspect {name}: {}", String::from_utf8_lossy(&inspected.stderr));
            let kind_line = match kind {
                "source" => "kind:        Source",
                "sink" => "kind:        Sink",
                _ => "kind:        Transform",
            };
            assert!(text.contains(kind_line) && text.contains(&format!("name:        {name}")), "{text}");
        }
    }
}

#[test]
fn c_sink_writes_every_value_as_a_line_exactly() {
    let data = tempfile::tempdir().unwrap();
    let (output, topic) = (data.path().join("out.txt"), unique("c-sink"));
    create_topic(&topic, 1, "delete");
    for i in 0..300 {
        produce(&topic, 0, &format!("k{i}"), format!("value {i} from Kafka").as_bytes());
    }
    let mut s = Standalone::new(&[]);
    let name = unique("c-sink");
    s.add_connector(
        &name,
        &[
            ("connector.class", "lines-sink".into()),
            ("file", output.display().to_string()),
            ("topics", topic.clone()),
            ("wasm.fs.write", data.path().display().to_string()),
        ],
    );
    let worker = s.start();
    worker.wait("300 lines", Duration::from_secs(60), || (count_lines(&output) >= 300).then_some(()));
    let expected: Vec<String> = (0..300).map(|i| format!("value {i} from Kafka")).collect();
    assert_eq!(read_lines(&output), expected);
}

#[test]
fn c_sink_writes_lines_over_tls_trusting_the_connectors_authority() {
    let server = LineServer::start(Vec::new());
    let topic = unique("c-tls");
    create_topic(&topic, 1, "delete");
    for i in 0..300 {
        produce(&topic, 0, &format!("k{i}"), format!("value {i} from Kafka").as_bytes());
    }
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "c-tls",
        &[
            ("connector.class", "c-socket-sink".into()),
            ("address", format!("localhost:{}", server.port)),
            ("tls", "true".into()),
            ("wasm.tls.trust", server.authority.display().to_string()),
            ("topics", topic.clone()),
        ],
    );
    let worker = s.start();
    let lines = worker.wait("300 lines over TLS", Duration::from_secs(60), || {
        let lines = server.received();
        (lines.len() >= 300).then_some(lines)
    });
    let expected: Vec<String> = (0..300).map(|i| format!("value {i} from Kafka")).collect();
    assert_eq!(lines, expected);
    assert!(worker.log().contains("connected to localhost:") && worker.log().contains("over TLS"), "{}", worker.log());
}

#[test]
fn c_sink_reads_strings_from_data_and_refuses_structs_with_the_way_out() {
    // Through StringConverter the sink receives strings as data and writes them; through
    // JsonConverter a struct, which it refuses with the record and the converter to use.
    let data = tempfile::tempdir().unwrap();
    let (strings, structs) = (unique("c-strings"), unique("c-structs"));
    let (text, refused) = (data.path().join("text.txt"), data.path().join("refused.txt"));
    create_topic(&strings, 1, "delete");
    create_topic(&structs, 1, "delete");
    for i in 0..50 {
        produce(&strings, 0, &format!("k{i}"), format!("line {i} é").as_bytes());
    }
    let envelope = r#"{"schema":{"type":"struct","fields":[{"field":"a","type":"int32"}]},"payload":{"a":1}}"#;
    produce(&structs, 0, "k", envelope.as_bytes());
    let mut s = Standalone::new(&[]);
    for (name, topic, file, converter) in [
        ("c-strings", &strings, &text, "org.apache.kafka.connect.storage.StringConverter"),
        ("c-structs", &structs, &refused, "org.apache.kafka.connect.json.JsonConverter"),
    ] {
        s.add_connector(
            name,
            &[
                ("connector.class", "lines-sink".into()),
                ("file", file.display().to_string()),
                ("topics", topic.clone()),
                ("value.converter", converter.into()),
                ("wasm.fs.write", data.path().display().to_string()),
            ],
        );
    }
    let worker = s.start();
    worker.wait("50 lines", Duration::from_secs(60), || (count_lines(&text) >= 50).then_some(()));
    let expected: Vec<String> = (0..50).map(|i| format!("line {i} é")).collect();
    assert_eq!(read_lines(&text), expected);
    let trace = failed_trace(&worker, "c-structs");
    assert!(
        trace.contains(&format!("{structs}-0 offset 0")) && trace.contains("StringConverter"),
        "the trace names the record and the way out: {trace}"
    );
}

#[test]
fn every_sdk_declares_what_config_keys_name() {
    let examples = workspace().join("target/example-plugins");
    for (plugin, key, names) in [
        ("jsonl-source", "file", "a file to read"),
        ("jsonl-sink", "file", "a file to write"),
        ("http-source", "url", "URLs to fetch"),
        ("http-sink", "url", "URLs to fetch"),
        ("lines-source", "file", "a file to read"),
        ("lines-sink", "file", "a file to write"),
    ] {
        let out = std::process::Command::new(wharf_binary())
            .args(["plugin", "inspect"])
            .arg(examples.join(format!("{plugin}.wasm")))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{plugin}: {}", String::from_utf8_lossy(&out.stderr));
        let declared = text.lines().skip_while(|l| !l.starts_with("grants")).skip(1).any(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.first() == Some(&key) && l.trim_end().ends_with(names)
        });
        assert!(declared, "{plugin} does not declare that {key} names {names}:\n{text}");
    }
}

#[test]
fn python_javascript_c_and_rust_transform_plugins_make_the_same_records() {
    // datagen's ten-field structs, each language's upper-casing transform on the `name` field,
    // JsonConverter: the same bytes in every topic, the field upper-cased, the header added.
    let mut s = Standalone::new(&[]);
    let transforms = ["py-upper-transform", "js-upper-transform", "c-upper-transform", "test-transform"];
    let topics: Vec<String> = transforms.iter().map(|t| unique(t)).collect();
    for (transform, topic) in transforms.iter().zip(&topics) {
        s.add_connector(
            &format!("gen-{transform}"),
            &[
                ("connector.class", "datagen".into()),
                ("topic", topic.clone()),
                ("count", "25".into()),
                ("value.format", "struct".into()),
                ("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()),
                ("transforms", "up".into()),
                ("transforms.up.type", transform.to_string()),
                ("transforms.up.field", "name".into()),
            ],
        );
    }
    let worker = s.start();
    let mut written = Vec::new();
    for (transform, topic) in transforms.iter().zip(&topics) {
        let records = worker.wait(&format!("25 records through {transform}"), Duration::from_secs(90), || {
            let records = timed_topic_records(topic);
            (records.len() >= 25).then_some(records)
        });
        for record in &records {
            let value: Value = serde_json::from_str(record.value.as_deref().unwrap_or_default()).unwrap();
            let name = value["payload"]["name"].as_str().unwrap_or_default().to_string();
            assert!(!name.is_empty() && name == name.to_uppercase(), "{transform}: {value}");
            let header = record.headers.iter().find(|(k, _)| k == "transformed-by").and_then(|(_, v)| v.as_deref());
            assert_eq!(header, Some(*transform), "{transform}: {:?}", record.headers);
        }
        written.push(records.into_iter().map(|r| r.value).collect::<Vec<_>>());
    }
    for (i, transform) in transforms.iter().enumerate().skip(1) {
        assert_eq!(written[i], written[0], "{transform} and {} write the same values", transforms[0]);
    }
}

#[test]
fn go_source_counts_into_a_topic_and_goes_on_from_its_stored_offset() {
    let topic = unique("go-src");
    let mut s = Standalone::new(&[]);
    s.add_connector(
        "go-src",
        &[("connector.class", "sequence-source".into()), ("topic", topic.clone()), ("count", "300".into())],
    );
    let mut worker = s.start();
    let values = worker.wait("300 numbers", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 300).then_some(values)
    });
    let expected: Vec<String> = (1..=300).map(|n| n.to_string()).collect();
    assert_eq!(utf8(values), expected);
    worker.terminate();
    // Started again with a larger count, it goes on after the last number it stored.
    s.connector_files.clear();
    s.add_connector(
        "go-src",
        &[("connector.class", "sequence-source".into()), ("topic", topic.clone()), ("count", "400".into())],
    );
    let worker = s.start();
    let values = worker.wait("400 numbers", Duration::from_secs(60), || {
        let values = topic_values(&topic);
        (values.len() >= 400).then_some(values)
    });
    std::thread::sleep(Duration::from_secs(1));
    let expected: Vec<String> = (1..=400).map(|n| n.to_string()).collect();
    assert_eq!(utf8(topic_values(&topic)), expected, "each number once");
    let _ = values;
    assert!(worker.log().contains("counting from 301"), "{}", worker.log());
}
