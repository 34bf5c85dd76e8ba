//! Helpers for the end-to-end tests: start real `wharf` processes against the real Kafka broker
//! that `./run test` starts, talk to them over REST, and read topics.
//!
//! The broker address comes from `WHARF_TEST_BOOTSTRAP`; the binary and plugins from the build
//! that `./run test` makes.

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde_json::Value;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

pub fn bootstrap() -> String {
    std::env::var("WHARF_TEST_BOOTSTRAP").unwrap_or_else(|_| {
        panic!("WHARF_TEST_BOOTSTRAP is not set: run the suite with ./run test, which starts Kafka")
    })
}

fn wharf_binary() -> PathBuf {
    let path = workspace().join("target/debug/wharf");
    assert!(path.exists(), "{} is missing: run the suite with ./run test, which builds it", path.display());
    path
}

/// The shipped plugins and the purpose-made test plugins.
pub fn plugin_path() -> String {
    let root = workspace().join("target");
    for dir in ["plugins", "test-plugins"] {
        assert!(root.join(dir).is_dir(), "target/{dir} is missing: run ./run test, which builds the plugins");
    }
    format!("{},{}", root.join("plugins").display(), root.join("test-plugins").display())
}

/// A name no other test (or earlier run) uses, for topics and connectors.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{nanos}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `check` until it returns `Some`, or panics with `what` after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn write_properties(path: &Path, pairs: &[(&str, String)]) {
    let text: String = pairs.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    fs::write(path, text).unwrap();
}

/// A standalone worker's files in a temporary folder.
pub struct Standalone {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub worker_file: PathBuf,
    pub connector_files: Vec<PathBuf>,
}

impl Standalone {
    /// Worker properties for the test broker; `extra` may override the defaults.
    pub fn new(extra: &[(&str, String)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let worker_file = dir.path().join("worker.properties");
        let mut props = vec![
            ("bootstrap.servers", bootstrap()),
            ("plugin.path", plugin_path()),
            ("listeners", format!("http://127.0.0.1:{port}")),
            ("offset.storage.file.filename", dir.path().join("offsets.json").display().to_string()),
            ("offset.flush.interval.ms", "500".to_string()),
            ("wasm.cache.dir", workspace().join("target/test-compile-cache").display().to_string()),
        ];
        for (key, value) in extra {
            props.retain(|(k, _)| k != key);
            props.push((key, value.clone()));
        }
        write_properties(&worker_file, &props);
        Standalone { dir, port, worker_file, connector_files: Vec::new() }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn add_connector(&mut self, name: &str, pairs: &[(&str, String)]) {
        let file = self.path(&format!("{name}.properties"));
        let mut all = vec![("name", name.to_string())];
        all.extend(pairs.iter().cloned());
        write_properties(&file, &all);
        self.connector_files.push(file);
    }

    pub fn start(&self) -> Worker {
        let log_path = self.path(&format!("worker-{}.log", unique("run")));
        let log = fs::File::create(&log_path).unwrap();
        let child = Command::new(wharf_binary())
            .arg("standalone")
            .arg(&self.worker_file)
            .args(&self.connector_files)
            .env("RUST_LOG", "info,wharf=debug")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start wharf");
        let worker = Worker { child: Some(child), port: self.port, log_path };
        worker.wait_ready();
        worker
    }

    /// Runs a worker expected to fail at start; returns its exit status and log.
    pub fn run_to_failure(&self) -> (ExitStatus, String) {
        let output = Command::new(wharf_binary())
            .arg("standalone")
            .arg(&self.worker_file)
            .args(&self.connector_files)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start wharf")
            .wait_with_output()
            .unwrap();
        (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

pub struct Worker {
    child: Option<Child>,
    pub port: u16,
    log_path: PathBuf,
}

impl Worker {
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.get("/connectors").is_some() {
                return;
            }
            if let Some(child) = &self.child {
                let pid = child.id() as i32;
                // SAFETY: kill with signal 0 only checks that the process exists.
                if unsafe { libc::kill(pid, 0) } != 0 {
                    panic!("wharf exited before its REST API came up:\n{}", self.log());
                }
            }
            assert!(Instant::now() < deadline, "wharf REST API did not come up in 60 s:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// GET a REST path; `None` if the worker does not answer or answers an error.
    pub fn get(&self, path: &str) -> Option<Value> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let mut response = ureq::get(&url).call().ok()?;
        response.body_mut().read_json::<Value>().ok()
    }

    /// GET a REST path and return the status code and body, errors included.
    pub fn get_raw(&self, path: &str) -> (u16, Value) {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut response = agent.get(&url).call().expect("REST call");
        let status = response.status().as_u16();
        let mut text = String::new();
        response.body_mut().as_reader().read_to_string(&mut text).unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub fn task_state(&self, connector: &str, task: u32) -> Option<(String, Value)> {
        let status = self.get(&format!("/connectors/{connector}/status"))?;
        let task = status["tasks"].as_array()?.iter().find(|t| t["id"] == task)?.clone();
        Some((task["state"].as_str()?.to_string(), task))
    }

    pub fn wait_task_state(&self, connector: &str, task: u32, state: &str) -> Value {
        self.wait(&format!("task {connector}-{task} to be {state}"), Duration::from_secs(60), || {
            self.task_state(connector, task).filter(|(s, _)| s == state).map(|(_, t)| t)
        })
    }

    /// Like `wait_for`, with the end of this worker's log in the failure message.
    pub fn wait<T>(&self, what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = check() {
                return value;
            }
            if Instant::now() >= deadline {
                let log = self.log();
                let tail: Vec<&str> = log.lines().rev().take(60).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                panic!("timed out after {timeout:?} waiting for {what}; worker log ends:\n{}", tail.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    pub fn kill_9(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().unwrap()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Lines of a file, or none if it does not exist yet.
pub fn read_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path).map(|t| t.lines().map(String::from).collect()).unwrap_or_default()
}

pub fn count_lines(path: &Path) -> usize {
    fs::read(path).map(|b| b.iter().filter(|c| **c == b'\n').count()).unwrap_or(0)
}

/// Every record value in a topic, read from the start to the current end.
pub fn topic_values(topic: &str) -> Vec<Vec<u8>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", unique("reader"))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)).unwrap();
    let partitions: Vec<i32> = metadata.topics()[0].partitions().iter().map(|p| p.id()).collect();
    let mut list = TopicPartitionList::new();
    let mut remaining = 0i64;
    let mut ends = Vec::new();
    for p in &partitions {
        let (low, high) = consumer.fetch_watermarks(topic, *p, Duration::from_secs(10)).unwrap();
        list.add_partition_offset(topic, *p, Offset::Beginning).unwrap();
        remaining += high - low;
        ends.push((*p, high));
    }
    consumer.assign(&list).unwrap();
    let mut values = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while remaining > 0 {
        assert!(Instant::now() < deadline, "could not read {topic} to its end");
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            let message = message.unwrap();
            let end = ends.iter().find(|(p, _)| *p == message.partition()).unwrap().1;
            if message.offset() < end {
                values.push(message.payload().unwrap_or_default().to_vec());
                remaining -= 1;
            }
        }
    }
    values
}

/// Records in a topic now (sum of end minus start offsets over partitions); 0 if it is missing.
pub fn topic_count(topic: &str) -> i64 {
    let consumer: BaseConsumer = ClientConfig::new().set("bootstrap.servers", bootstrap()).create().unwrap();
    let Ok(metadata) = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)) else {
        return 0;
    };
    let Some(t) = metadata.topics().first() else {
        return 0;
    };
    if t.error().is_some() {
        return 0;
    }
    t.partitions()
        .iter()
        .map(|p| consumer.fetch_watermarks(topic, p.id(), Duration::from_secs(10)).map(|(l, h)| h - l).unwrap_or(0))
        .sum()
}
