//! A source that misbehaves on purpose, so tests can check that the sandbox contains it. The
//! `behaviour` key picks what its task does in `poll`:
//! - `spin`: loops forever;
//! - `hog`: allocates memory until the allocator gives up;
//! - `flood`: returns far more records than it was asked for;
//! - `bulky`: returns ten records of one MiB each;
//! - `read`: reads the file `target` and sends its first line as a record (fails if it cannot);
//! - `connect`: opens a TCP connection to `target` (host:port) and sends "connected" as a record;
//! - `http`: sends `GET http://<target>/` through wasi:http and sends the status code as a record;
//! - `handles`: holds more and more host handles (clock pollables) until the host refuses one;
//! - `forge`: sends one record with key `target` and value `value` to `topic`, whatever it is
//!   (the worker's config topic, say), then nothing more.

use std::io::{BufRead, BufReader};

use wharf_sdk::*;

struct Misbehaver;

impl Connector for Misbehaver {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-misbehaver".into(),
            version: "0.1.0".into(),
            description: "Misbehaves on purpose (for tests)".into(),
            kind: ConnectorKind::Source,
            config: vec![
                required_key(
                    "behaviour",
                    ConfigType::String,
                    "spin, hog, flood, bulky, read, connect, http, handles or forge",
                ),
                required_key("topic", ConfigType::String, "Where records go"),
                optional_key(
                    "target",
                    ConfigType::String,
                    "",
                    "The file to read, host:port to connect to, or key to forge",
                ),
                optional_key("value", ConfigType::String, "", "The value of the forged record"),
                optional_key("secret", ConfigType::Password, "", "A password the REST API never shows"),
            ],
        }
    }

    fn validate(config: &Config) -> Vec<ConfigProblem> {
        match config.get("behaviour") {
            Some("spin" | "hog" | "flood" | "bulky" | "read" | "connect" | "http" | "forge" | "handles") | None => {
                Vec::new()
            }
            Some(other) => vec![ConfigProblem {
                name: "behaviour".into(),
                message: format!(
                    "unknown behaviour {other}: use spin, hog, flood, bulky, read, connect, http or forge"
                ),
            }],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        Ok(vec![config.clone()])
    }
}

struct MisbehaverTask {
    behaviour: String,
    topic: String,
    target: String,
    value: String,
    done: bool,
}

impl MisbehaverTask {
    fn record(&self, value: &str) -> SourceRecord {
        source_record(Vec::new(), Vec::new(), &self.topic, value.as_bytes().to_vec())
    }
}

impl SourceTask for MisbehaverTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        Ok(MisbehaverTask {
            behaviour: config.require("behaviour")?.to_string(),
            topic: config.require("topic")?.to_string(),
            target: config.get("target").unwrap_or_default().to_string(),
            value: config.get("value").unwrap_or_default().to_string(),
            done: false,
        })
    }

    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        if self.done {
            return Ok(Vec::new());
        }
        match self.behaviour.as_str() {
            "spin" => loop {
                std::hint::black_box(&self.behaviour);
            },
            "hog" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "flood" => Ok((0..max_records as u64 * 2 + 10).map(|i| self.record(&i.to_string())).collect()),
            "bulky" => Ok((0..10).map(|_| self.record(&"x".repeat(1 << 20))).collect()),
            "read" => {
                let file = std::fs::File::open(&self.target)
                    .map_err(|e| ConnectorError::Fatal(format!("cannot read {}: {e}", self.target)))?;
                let mut line = String::new();
                BufReader::new(file)
                    .read_line(&mut line)
                    .map_err(|e| ConnectorError::Fatal(format!("cannot read {}: {e}", self.target)))?;
                self.done = true;
                Ok(vec![self.record(line.trim_end())])
            }
            "connect" => {
                std::net::TcpStream::connect(&self.target)
                    .map_err(|e| ConnectorError::Fatal(format!("cannot connect to {}: {e}", self.target)))?;
                self.done = true;
                Ok(vec![self.record("connected")])
            }
            "http" => {
                let status = http_get(&self.target)
                    .map_err(|e| ConnectorError::Fatal(format!("HTTP GET http://{}/ failed: {e}", self.target)))?;
                self.done = true;
                Ok(vec![self.record(&status.to_string())])
            }
            "handles" => {
                let mut held = Vec::new();
                loop {
                    held.push(wasi::clocks::monotonic_clock::subscribe_duration(1_000_000_000));
                    std::hint::black_box(&held);
                }
            }
            "forge" => {
                self.done = true;
                let mut record = self.record(&self.value);
                record.key = Some(self.target.as_bytes().to_vec());
                Ok(vec![record])
            }
            other => Err(ConnectorError::Fatal(format!("unknown behaviour {other}"))),
        }
    }
}

/// `GET http://<authority>/` through wasi:http; the response's status code.
fn http_get(authority: &str) -> Result<u16, String> {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, OutgoingRequest, Scheme};
    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&Scheme::Http)).map_err(|_| "bad scheme")?;
    request.set_authority(Some(authority)).map_err(|_| "bad authority")?;
    request.set_path_with_query(Some("/")).map_err(|_| "bad path")?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let response =
        pending.get().ok_or("no response")?.map_err(|_| "response taken twice")?.map_err(|e| format!("{e:?}"))?;
    Ok(response.status())
}

impl SourceConnector for Misbehaver {
    type Task = MisbehaverTask;
}

source_connector!(Misbehaver);
