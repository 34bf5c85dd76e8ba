//! A source that misbehaves on purpose, so tests can check that the sandbox contains it. The
//! `behaviour` key picks what its task does in `poll`:
//! - `spin`: loops forever;
//! - `hog`: allocates memory until the allocator gives up;
//! - `flood`: returns far more records than it was asked for;
//! - `bulky`: returns ten records of one MiB each;
//! - `bulky-offsets`: returns ten small records, each with a source offset of one MiB;
//! - `aliased`: returns as many records as it may, whose values all point at one buffer of
//!   32 KiB in its memory, so that copying the answer out would take 2,000 times what the
//!   plugin holds;
//! - `read`: reads the file `target` and sends its first line as a record (fails if it cannot);
//! - `connect`: opens a TCP connection to `target` (host:port) and sends "connected" as a record;
//! - `lookup`: looks the name of `target` (host:port) up and sends "resolved" as a record;
//! - `http`: sends `GET http://<target>/` through wasi:http and sends the status code as a record;
//! - `handles`: holds more and more host handles (clock pollables) until the host refuses one;
//! - `forge`: sends one record with key `target` and value `value` to `topic`, whatever it is
//!   (the worker's config topic, say), then nothing more;
//! - `log-flood`: logs one line of 100,000 bytes at its first poll, then at every poll 5,000
//!   lines through the host and 5,000 on stderr, each carrying a newline and a forged log line of
//!   the worker's.
//! - `unavailable`: every poll fails with a retriable error, as for a system that is down;
//! - `tell`: logs its `secret` and fails its first poll with an error that holds it;
//! - `tick`: logs `tick <task.index>` through the host at every poll, then waits 20 ms and sends
//!   one record, so that a test can tell from the workers' logs which ran the task when.
//!
//! `task.configs` is how many (empty) task configurations the connector generates (one, the
//! connector's own config, by default); `task.copies` is how many copies of the connector's own
//! config it generates instead, each with its `task.index`. To each task config it generates, `smuggle.env` adds the
//! key `smuggled` holding a reference to that environment variable, which the connector config
//! never held; `copy.secret=whole` adds the key `copied` holding the resolved `secret`, and
//! `copy.secret=inside` the key `inside` holding `password=<secret>`.
//!
//! `sleep.in` names a call that waits an hour on the WASI clock (`std::thread::sleep`) before it
//! does anything: `validate`, `task-configs`, `open` or `poll`.

use std::io::{BufRead, BufReader};

use wharf_sdk::*;

struct Misbehaver;

const BEHAVIOURS: [&str; 16] = [
    "spin",
    "hog",
    "flood",
    "bulky",
    "bulky-offsets",
    "aliased",
    "read",
    "connect",
    "lookup",
    "http",
    "handles",
    "forge",
    "log-flood",
    "unavailable",
    "tell",
    "tick",
];

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
                    "spin, hog, flood, bulky, bulky-offsets, aliased, read, connect, lookup, http, handles, forge or log-flood",
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
                optional_key("task.configs", ConfigType::Int, "", "How many task configs to generate"),
                optional_key("sleep.in", ConfigType::String, "", "validate, task-configs, open or poll: waits an hour"),
                optional_key("task.copies", ConfigType::Int, "", "How many copies of the config to generate as task configs"),
                optional_key("smuggle.env", ConfigType::String, "", "An environment variable whose reference each task config gets"),
                optional_key("copy.secret", ConfigType::String, "", "whole or inside: copies the secret into each task config"),
            ],
        }
    }

    fn validate(config: &Config) -> Vec<ConfigProblem> {
        sleep_if(config, "validate");
        match config.get("behaviour") {
            Some(known) if BEHAVIOURS.contains(&known) => Vec::new(),
            None => Vec::new(),
            Some(other) => vec![ConfigProblem {
                name: "behaviour".into(),
                message: format!("unknown behaviour {other}: use one of {}", BEHAVIOURS.join(", ")),
            }],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        sleep_if(config, "task-configs");
        let mut configs = match (config.get("task.configs"), config.get("task.copies")) {
            (Some(count), _) => match count.parse::<usize>() {
                Ok(count) => vec![Config::default(); count],
                Err(_) => return Err(ConnectorError::Fatal("task.configs must be a whole number".into())),
            },
            (None, Some(copies)) => {
                let copies = copies
                    .parse::<usize>()
                    .map_err(|_| ConnectorError::Fatal("task.copies must be a whole number".into()))?;
                (0..copies)
                    .map(|index| {
                        let mut copy = config.clone();
                        copy.set("task.index", index.to_string());
                        copy
                    })
                    .collect()
            }
            (None, None) => vec![config.clone()],
        };
        let secret = config.get("secret").unwrap_or_default().to_string();
        for task in &mut configs {
            if let Some(name) = config.get("smuggle.env").filter(|n| !n.is_empty()) {
                task.set("smuggled", format!("${{env:{name}}}"));
            }
            match config.get("copy.secret") {
                Some("whole") => task.set("copied", &secret),
                Some("inside") => task.set("inside", format!("password={secret}")),
                _ => {}
            }
        }
        Ok(configs)
    }
}

/// Waits an hour on the WASI clock when `sleep.in` names `call`.
fn sleep_if(config: &Config, call: &str) {
    if config.get("sleep.in") == Some(call) {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

struct MisbehaverTask {
    behaviour: String,
    secret: String,
    index: String,
    sleep_in_poll: bool,
    long_line_logged: bool,
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
        sleep_if(&config, "open");
        Ok(MisbehaverTask {
            sleep_in_poll: config.get("sleep.in") == Some("poll"),
            long_line_logged: false,
            behaviour: config.require("behaviour")?.to_string(),
            secret: config.get("secret").unwrap_or_default().to_string(),
            index: config.get("task.index").unwrap_or("0").to_string(),
            topic: config.require("topic")?.to_string(),
            target: config.get("target").unwrap_or_default().to_string(),
            value: config.get("value").unwrap_or_default().to_string(),
            done: false,
        })
    }

    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        if self.sleep_in_poll {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
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
            "bulky-offsets" => Ok((0..10)
                .map(|i| {
                    let mut record = self.record("small");
                    record.source_partition = vec![("p".into(), Scalar::Integer(i))];
                    record.source_offset = vec![("o".into(), Scalar::Text("x".repeat(1 << 20)))];
                    record
                })
                .collect()),
            "aliased" => {
                // One buffer, owned (as far as the bindings know) by every record: the host must
                // stop copying before the copies add up. The plugin is never entered again.
                let buffer: &'static mut [u8] = Vec::leak(vec![b'a'; 32 * 1024]);
                let (pointer, length) = (buffer.as_mut_ptr(), buffer.len());
                Ok((0..max_records)
                    .map(|_| {
                        let mut record = self.record("");
                        // SAFETY: none, on purpose; the answer is never dropped by this plugin.
                        record.value = Some(Part::Bytes(unsafe { Vec::from_raw_parts(pointer, length, length) }));
                        record
                    })
                    .collect())
            }
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
            "lookup" => {
                use std::net::ToSocketAddrs;
                let found = self
                    .target
                    .to_socket_addrs()
                    .map_err(|e| ConnectorError::Fatal(format!("cannot look up {}: {e}", self.target)))?;
                self.done = true;
                Ok(vec![self.record(&format!("resolved {}", found.count()))])
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
            "log-flood" => {
                if !self.long_line_logged {
                    self.long_line_logged = true;
                    log(Level::Warn, &format!("long {}", "y".repeat(100_000)));
                }
                for i in 0..5000 {
                    log(Level::Warn, &format!("flood {i}\n2026-01-01T00:00:00Z ERROR wharf: FORGED-BY-PLUGIN {i}"));
                    eprintln!("stderr flood {i}\r2026-01-01T00:00:00Z ERROR wharf: FORGED-ON-STDERR {i}");
                }
                Ok(Vec::new())
            }
            "forge" => {
                self.done = true;
                let mut record = self.record(&self.value);
                record.key = Some(Part::Bytes(self.target.as_bytes().to_vec()));
                Ok(vec![record])
            }
            "unavailable" => Err(ConnectorError::Retriable("the source system is unavailable".into())),
            "tick" => {
                log(Level::Info, &format!("tick {}", self.index));
                std::thread::sleep(std::time::Duration::from_millis(20));
                Ok(vec![self.record("tick")])
            }
            "tell" => {
                log(Level::Warn, &format!("the secret is {}", self.secret));
                Err(ConnectorError::Fatal(format!("cannot go on: the secret is {}", self.secret)))
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
