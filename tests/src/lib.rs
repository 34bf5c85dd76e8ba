//! Helpers for the end-to-end tests: start real `wharf` processes against the real Kafka broker
//! that `./run test` starts, talk to them over REST, and read topics.
//!
//! The broker address comes from `WHARF_TEST_BOOTSTRAP`; the binary and plugins from the build
//! that `./run test` makes.

pub mod databases;
pub mod soak;

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
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

pub fn wharf_binary() -> PathBuf {
    let path = workspace().join("target/debug/wharf");
    assert!(path.exists(), "{} is missing: run the suite with ./run test, which builds it", path.display());
    path
}

/// The shipped plugins, the purpose-made test plugins and the examples in other languages.
pub fn plugin_path() -> String {
    let root = workspace().join("target");
    for dir in ["plugins", "test-plugins", "example-plugins"] {
        assert!(root.join(dir).is_dir(), "target/{dir} is missing: run ./run test, which builds the plugins");
    }
    format!(
        "{},{},{}",
        root.join("plugins").display(),
        root.join("test-plugins").display(),
        root.join("example-plugins").display()
    )
}

/// A name no other test (or earlier run) uses, for topics and connectors.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{nanos}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A port nothing listens on now, and that no other test of this process was given: the system
/// may hand a port just released to the next `bind(0)`, before the first test's worker binds it.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
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

/// A distributed worker's cluster settings on topics of its own (`<group>-configs`, …), each
/// with one replica, as a one-broker test cluster needs; for Wharf's workers and Kafka Connect's.
pub fn cluster_properties(group: &str) -> Vec<(&'static str, String)> {
    vec![
        ("group.id", group.to_string()),
        ("config.storage.topic", format!("{group}-configs")),
        ("offset.storage.topic", format!("{group}-offsets")),
        ("status.storage.topic", format!("{group}-status")),
        ("config.storage.replication.factor", "1".into()),
        ("offset.storage.replication.factor", "1".into()),
        ("status.storage.replication.factor", "1".into()),
    ]
}

/// A process that is killed when the test ends, however it ends (a Kafka Connect worker).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What test workers let connectors grant: temporary folders and the loopback interface.
fn grant_ceiling() -> Vec<(&'static str, String)> {
    let temp = std::env::temp_dir().display().to_string();
    vec![
        ("wasm.ceiling.fs.read", temp.clone()),
        ("wasm.ceiling.fs.write", temp),
        ("wasm.ceiling.net.connect", "127.0.0.1:*,localhost:*".to_string()),
        ("wasm.ceiling.http.allow", "127.0.0.1:*,localhost:*".to_string()),
    ]
}

/// A standalone worker: data in `dir` (which connectors may be granted), the worker's own files
/// (its config, offsets, connector files and log) in `worker_dir`, which no grant may cover.
pub struct Standalone {
    pub dir: tempfile::TempDir,
    pub worker_dir: tempfile::TempDir,
    pub port: u16,
    pub worker_file: PathBuf,
    pub connector_files: Vec<PathBuf>,
}

impl Standalone {
    /// Worker properties for the test broker; `extra` may override the defaults.
    pub fn new(extra: &[(&str, String)]) -> Self {
        let (dir, worker_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let port = free_port();
        let worker_file = worker_dir.path().join("worker.properties");
        let mut props = vec![
            ("bootstrap.servers", bootstrap()),
            ("plugin.path", plugin_path()),
            ("listeners", format!("http://127.0.0.1:{port}")),
            ("offset.storage.file.filename", worker_dir.path().join("offsets.json").display().to_string()),
            ("offset.flush.interval.ms", "500".to_string()),
            ("wasm.cache.dir", workspace().join("target/test-compile-cache").display().to_string()),
        ];
        props.extend(grant_ceiling());
        for (key, value) in extra {
            props.retain(|(k, _)| k != key);
            props.push((key, value.clone()));
        }
        write_properties(&worker_file, &props);
        Standalone { dir, worker_dir, port, worker_file, connector_files: Vec::new() }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn add_connector(&mut self, name: &str, pairs: &[(&str, String)]) {
        let file = self.worker_dir.path().join(format!("{name}.properties"));
        let mut all = vec![("name", name.to_string())];
        all.extend(pairs.iter().cloned());
        write_properties(&file, &all);
        self.connector_files.push(file);
    }

    fn command(&self) -> Command {
        let mut command = Command::new(wharf_binary());
        command.arg("standalone").arg(&self.worker_file).args(&self.connector_files);
        command
    }

    pub fn start(&self) -> Worker {
        Worker::spawn(self.command(), self.port, self.worker_dir.path())
    }

    /// Runs a worker expected to fail at start; returns its exit status and log.
    pub fn run_to_failure(&self) -> (ExitStatus, String) {
        run_to_failure(self.command())
    }
}

/// A distributed worker's properties, on topics of its own unless `with_topics_of` shares them;
/// data in `dir`, the worker's own files in `worker_dir`.
pub struct Distributed {
    pub dir: tempfile::TempDir,
    pub worker_dir: tempfile::TempDir,
    pub port: u16,
    pub worker_file: PathBuf,
    pub group: String,
    pub topics: [String; 3],
}

impl Distributed {
    pub fn new(extra: &[(&str, String)]) -> Self {
        let group = unique("cluster");
        let topics = [format!("{group}-configs"), format!("{group}-offsets"), format!("{group}-status")];
        Self::with(group, topics, extra)
    }

    /// Another worker properties file for the same cluster and topics, in a fresh folder.
    pub fn again(&self, extra: &[(&str, String)]) -> Self {
        Self::with(self.group.clone(), self.topics.clone(), extra)
    }

    pub fn with(group: String, topics: [String; 3], extra: &[(&str, String)]) -> Self {
        let (dir, worker_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let port = free_port();
        let worker_file = worker_dir.path().join("worker.properties");
        let mut props = vec![
            ("bootstrap.servers", bootstrap()),
            ("plugin.path", plugin_path()),
            ("listeners", format!("http://127.0.0.1:{port}")),
            ("group.id", group.clone()),
            ("config.storage.topic", topics[0].clone()),
            ("offset.storage.topic", topics[1].clone()),
            ("status.storage.topic", topics[2].clone()),
            ("config.storage.replication.factor", "1".to_string()),
            ("offset.storage.replication.factor", "1".to_string()),
            ("status.storage.replication.factor", "1".to_string()),
            ("offset.flush.interval.ms", "500".to_string()),
            ("wasm.cache.dir", workspace().join("target/test-compile-cache").display().to_string()),
            // The test cluster's workers share one host on several ports; by default a worker
            // forwards only to members on its own port.
            ("wharf.rest.forward.allowed.urls", "http://127.0.0.1:*,https://127.0.0.1:*".to_string()),
        ];
        props.extend(grant_ceiling());
        for (key, value) in extra {
            props.retain(|(k, _)| k != key);
            props.push((key, value.clone()));
        }
        write_properties(&worker_file, &props);
        Distributed { dir, worker_dir, port, worker_file, group, topics }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self) -> Command {
        let mut command = Command::new(wharf_binary());
        command.arg("distributed").arg(&self.worker_file);
        command
    }

    pub fn start(&self) -> Worker {
        Worker::spawn(self.command(), self.port, self.worker_dir.path())
    }

    pub fn run_to_failure(&self) -> (ExitStatus, String) {
        run_to_failure(self.command())
    }
}

pub struct Worker {
    child: Option<Child>,
    pub port: u16,
    log_path: PathBuf,
    /// The `Authorization` header every request of the test carries, if the worker asks for one.
    authorization: Option<String>,
    /// For a worker with an https listener: the authority its certificate is checked against.
    https_authority: Option<Vec<u8>>,
}

/// Starting a worker with the test's credentials or over HTTPS, for either mode.
pub trait Launch {
    fn launch(&self, authorization: Option<String>, https_authority: Option<Vec<u8>>) -> Worker;

    /// A worker whose REST API wants HTTP Basic credentials; the test's requests carry
    /// `authorization`.
    fn start_as(&self, authorization: &str) -> Worker {
        self.launch(Some(authorization.to_string()), None)
    }

    /// A worker with an https listener whose certificate `authority` (PEM) issued.
    fn start_https(&self, authority: Vec<u8>, authorization: Option<&str>) -> Worker {
        self.launch(authorization.map(String::from), Some(authority))
    }
}

impl Launch for Standalone {
    fn launch(&self, authorization: Option<String>, https_authority: Option<Vec<u8>>) -> Worker {
        Worker::launch(self.command(), self.port, self.worker_dir.path(), authorization, https_authority)
    }
}

impl Launch for Distributed {
    fn launch(&self, authorization: Option<String>, https_authority: Option<Vec<u8>>) -> Worker {
        Worker::launch(self.command(), self.port, self.worker_dir.path(), authorization, https_authority)
    }
}

/// Runs a worker expected to fail at start; returns its exit status and what it printed.
fn run_to_failure(mut command: Command) -> (ExitStatus, String) {
    let output = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap().wait_with_output().unwrap();
    (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
}

impl Worker {
    /// Starts a worker with its log in `dir` and waits for its REST API.
    fn spawn(command: Command, port: u16, dir: &Path) -> Worker {
        Self::launch(command, port, dir, None, None)
    }

    /// Starts a worker with its log in `dir`, the test's requests carrying `authorization` and,
    /// for an https listener, checking its certificate against `https_authority` (PEM); waits
    /// for its REST API.
    fn launch(
        mut command: Command,
        port: u16,
        dir: &Path,
        authorization: Option<String>,
        https_authority: Option<Vec<u8>>,
    ) -> Worker {
        let log_path = dir.join(format!("worker-{}.log", unique("run")));
        let log = fs::File::create(&log_path).unwrap();
        let child =
            command.env("RUST_LOG", "info,wharf=debug").stdout(Stdio::null()).stderr(log).spawn().expect("start wharf");
        let worker = Worker { child: Some(child), port, log_path, authorization, https_authority };
        worker.wait_ready();
        worker
    }

    pub fn log(&self) -> String {
        // Lossy: a plugin may write bytes that are not UTF-8, and the rest of the log still reads.
        fs::read(&self.log_path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default()
    }

    fn url(&self, path: &str) -> String {
        let scheme = if self.https_authority.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// An agent for this worker; `errors` makes an error status an error, as `ureq::get` does.
    fn agent(&self, errors: bool) -> ureq::Agent {
        let mut config = ureq::Agent::config_builder().http_status_as_error(errors);
        if let Some(authority) = &self.https_authority {
            let roots = vec![ureq::tls::Certificate::from_pem(authority).expect("a PEM authority")];
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .provider(ureq::tls::TlsProvider::Rustls)
                    .root_certs(ureq::tls::RootCerts::new_with_certs(&roots))
                    .build(),
            );
        }
        config.build().into()
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // Ready once it says so: another process on the port would answer too.
            if self.log().contains(" ready in ") && self.get("/connectors").is_some() {
                return;
            }
            let log = self.log();
            if log.contains("error: cannot listen on") {
                panic!("wharf could not listen on its port:\n{log}");
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
        let url = self.url(path);
        let mut request = self.agent(true).get(&url);
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        let mut response = request.call().ok()?;
        response.body_mut().read_json::<Value>().ok()
    }

    /// GET a REST path and return the status code and body, errors included.
    pub fn get_raw(&self, path: &str) -> (u16, Value) {
        let url = self.url(path);
        let agent = self.agent(false);
        let mut request = agent.get(&url);
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        let mut response = request.call().expect("REST call");
        let status = response.status().as_u16();
        let mut text = String::new();
        response.body_mut().as_reader().read_to_string(&mut text).unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// The value of one series of `GET /metrics` (its name and its labels as written, such as
    /// `connector="x",task="0"`), if the worker serves it.
    pub fn metric(&self, name: &str, labels: &str) -> Option<f64> {
        let (_, body, _) = self.call("GET", "/metrics", None);
        let series = if labels.is_empty() { format!("{name} ") } else { format!("{name}{{{labels}}} ") };
        body.as_str()?.lines().find_map(|line| line.strip_prefix(&series)?.trim().parse().ok())
    }

    /// Sends a request with an optional JSON body; returns the status code, body and headers.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value, Vec<(String, String)>) {
        self.call_as(self.authorization.as_deref(), method, path, body)
    }

    /// As `call`, with this `Authorization` header (or none).
    pub fn call_as(
        &self,
        authorization: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, Value, Vec<(String, String)>) {
        let url = self.url(path);
        let agent = self.agent(false);
        let mut request =
            ureq::http::Request::builder().method(method).uri(&url).header("Content-Type", "application/json");
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        let request = request.body(body.unwrap_or("").to_string()).unwrap();
        let mut response = agent.run(request).expect("REST call");
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect();
        let mut text = String::new();
        response.body_mut().as_reader().read_to_string(&mut text).unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)), headers)
    }

    /// POSTs `body` to `path` with the headers of a worker-to-worker signature.
    pub fn call_signed(
        &self,
        path: &str,
        body: &str,
        algorithm: &str,
        signature: &str,
    ) -> (u16, Value, Vec<(String, String)>) {
        let url = self.url(path);
        let agent = self.agent(false);
        let request = ureq::http::Request::builder()
            .method("POST")
            .uri(&url)
            .header("Content-Type", "application/json")
            .header("X-Connect-Authorization", signature)
            .header("X-Connect-Request-Signature-Algorithm", algorithm)
            .body(body.to_string())
            .unwrap();
        let mut response = agent.run(request).expect("REST call");
        let status = response.status().as_u16();
        let mut text = String::new();
        response.body_mut().as_reader().read_to_string(&mut text).unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)), Vec::new())
    }

    pub fn task_state(&self, connector: &str, task: u32) -> Option<(String, Value)> {
        let status = self.get(&format!("/connectors/{connector}/status"))?;
        let task = status["tasks"].as_array()?.iter().find(|t| t["id"] == task)?.clone();
        Some((task["state"].as_str()?.to_string(), task))
    }

    /// A task's state and status now. A reading that fails (a REST call on a loaded machine)
    /// is taken again for up to 10 s; a state other than the one hoped for is not.
    pub fn task_state_now(&self, connector: &str, task: u32) -> (String, Value) {
        self.wait(&format!("a status reading of task {connector}-{task}"), Duration::from_secs(10), || {
            self.task_state(connector, task)
        })
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
                // Debug lines (one per offset flush) would bury what happened.
                let tail: Vec<&str> = log.lines().filter(|l| !l.contains("DEBUG")).rev().take(60).collect();
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
/// `Basic …` for a user and password, as an `Authorization` header carries them.
pub fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// A credentials file line for `user`, made by `wharf rest-credential`.
pub fn credential_line(user: &str, password: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(wharf_binary())
        .args(["rest-credential", user])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{password}\n").as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "wharf rest-credential failed");
    String::from_utf8(output.stdout).unwrap()
}

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
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)).unwrap();
    let partitions: Vec<i32> = metadata.topics()[0].partitions().iter().map(|p| p.id()).collect();
    let mut list = TopicPartitionList::new();
    let mut remaining = 0i64;
    let mut ends = Vec::new();
    for p in &partitions {
        let (low, high) = watermarks(&consumer, topic, *p);
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

/// Every record value a consumer of `isolation.level` (read_committed or read_uncommitted)
/// reads in a topic from the start to the end of each partition now. Under read_committed the
/// end is the last stable offset: records of open or aborted transactions are never read, and
/// the markers that end transactions take offsets of their own, so counting offsets does not
/// count records.
pub fn topic_values_as(topic: &str, isolation: &str) -> Vec<Vec<u8>> {
    topic_values_at(&bootstrap(), topic, isolation)
}

/// `topic_values_as` on the brokers of `bootstrap` (a test's own broker, say).
pub fn topic_values_at(bootstrap: &str, topic: &str, isolation: &str) -> Vec<Vec<u8>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", unique("reader"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", isolation)
        .create()
        .unwrap();
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)).unwrap();
    let partitions: Vec<i32> = metadata.topics()[0].partitions().iter().map(|p| p.id()).collect();
    let mut list = TopicPartitionList::new();
    for p in &partitions {
        list.add_partition_offset(topic, *p, Offset::Beginning).unwrap();
    }
    consumer.assign(&list).unwrap();
    let mut values = Vec::new();
    let mut ended = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while ended.len() < partitions.len() {
        assert!(Instant::now() < deadline, "could not read {topic} to its end");
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => values.push(message.payload().unwrap_or_default().to_vec()),
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                ended.insert(p);
            }
            Some(Err(e)) => panic!("reading {topic}: {e}"),
            None => {}
        }
    }
    values
}

/// A partition's low and high offsets. A topic just created may have no leader yet for a moment
/// (`NotLeaderForPartition`, `LeaderNotAvailable`): asked again until it has, for up to 30 s.
fn watermarks<C: rdkafka::consumer::ConsumerContext>(
    consumer: &BaseConsumer<C>,
    topic: &str,
    partition: i32,
) -> (i64, i64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match consumer.fetch_watermarks(topic, partition, Duration::from_secs(10)) {
            Ok(marks) => return marks,
            Err(e) if Instant::now() < deadline => {
                eprintln!("offsets of {topic}-{partition} not known yet ({e}); asking again");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("cannot read the offsets of {topic}-{partition}: {e}"),
        }
    }
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

pub fn admin() -> rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> {
    ClientConfig::new().set("bootstrap.servers", bootstrap()).create().unwrap()
}

/// Creates a topic the way an operator would before starting a worker.
pub fn create_topic(name: &str, partitions: i32, cleanup_policy: &str) {
    use rdkafka::admin::{AdminOptions, NewTopic, TopicReplication};
    let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1)).set("cleanup.policy", cleanup_policy);
    let runtime = tokio_runtime();
    let results = runtime.block_on(admin().create_topics([&topic], &AdminOptions::new())).unwrap();
    for result in results {
        result.unwrap();
    }
}

/// Partition count and cleanup.policy of a topic, read through the admin API.
pub fn topic_settings(name: &str) -> (usize, String) {
    use rdkafka::admin::{AdminOptions, ResourceSpecifier};
    let client = admin();
    let metadata = client.inner().fetch_metadata(Some(name), Duration::from_secs(10)).unwrap();
    let partitions = metadata.topics()[0].partitions().len();
    let runtime = tokio_runtime();
    let described =
        runtime.block_on(client.describe_configs(&[ResourceSpecifier::Topic(name)], &AdminOptions::new())).unwrap();
    let resource = described.into_iter().next().unwrap().unwrap();
    let policy = resource.get("cleanup.policy").and_then(|e| e.value.clone()).unwrap_or_default();
    (partitions, policy)
}

/// Deletes topics (a benchmark's large ones, once measured); a topic already gone is no error.
pub fn delete_topics(names: &[&str]) {
    let runtime = tokio_runtime();
    let _ = runtime.block_on(admin().delete_topics(names, &rdkafka::admin::AdminOptions::new()));
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Writes one record with a string key to a topic.
pub fn produce(topic: &str, partition: i32, key: &str, value: &[u8]) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", bootstrap()).create().unwrap();
    producer.send(BaseRecord::to(topic).key(key).payload(value).partition(partition)).map_err(|(e, _)| e).unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
}

/// Appends numbered lines (`line-000000042`) to `path`, 50 every 40 ms, until `stop`, counting
/// them in `written`.
pub fn feed(
    path: &Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    written: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut next = 0;
        while !stop.load(Ordering::Relaxed) {
            let mut file = fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
            let chunk: String = (next..next + 50).map(|i| format!("line-{i:09}\n")).collect();
            file.write_all(chunk.as_bytes()).unwrap();
            next += 50;
            written.store(next, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(40));
        }
    })
}

/// A broker of a test's own (`scripts/kafka` on a free port and a folder of its own), for a test
/// that restarts it: the suite's broker is shared by the tests that run beside it. Stopped when
/// dropped.
pub struct OwnBroker {
    pub port: u16,
    dir: tempfile::TempDir,
}

impl OwnBroker {
    pub fn start() -> Self {
        let broker = OwnBroker { port: free_port(), dir: tempfile::tempdir().unwrap() };
        broker.script("start");
        broker
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops the broker and starts it again on its data.
    pub fn restart(&self) {
        self.script("restart");
    }

    fn script(&self, command: &str) {
        let out = Command::new(workspace().join("scripts/kafka"))
            .args([command, "--port", &self.port.to_string(), "--dir"])
            .arg(self.dir.path().join("kafka"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/kafka {command} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let _ = Command::new(workspace().join("scripts/kafka"))
            .args(["stop", "--port", &self.port.to_string(), "--dir"])
            .arg(self.dir.path().join("kafka"))
            .output();
    }
}

/// Writes a tombstone (a record with a key and no value) to partition 0 of a topic.
pub fn produce_tombstone(topic: &str, key: &str) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", bootstrap()).create().unwrap();
    producer.send(BaseRecord::<str, [u8]>::to(topic).key(key).partition(0)).map_err(|(e, _)| e).unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
}

/// Every record of a topic with its partition, key and value, read to the current end.
pub fn topic_records(topic: &str) -> Vec<(i32, String, Option<String>)> {
    timed_topic_records(topic).into_iter().map(|r| (r.partition, r.key, r.value)).collect()
}

/// One record of a topic as read back, with the time its producer gave it.
pub struct TimedRecord {
    pub partition: i32,
    pub key: String,
    pub value: Option<String>,
    /// Seconds since the epoch (the record's CreateTime).
    pub at: f64,
    /// The headers, their values as text.
    pub headers: Vec<(String, Option<String>)>,
}

/// Every record of a topic up to its end now, in each partition's order.
pub fn timed_topic_records(topic: &str) -> Vec<TimedRecord> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", unique("reader"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)).unwrap();
    let mut list = TopicPartitionList::new();
    let mut ends = Vec::new();
    for p in metadata.topics()[0].partitions() {
        let (_, high) = watermarks(&consumer, topic, p.id());
        list.add_partition_offset(topic, p.id(), Offset::Beginning).unwrap();
        ends.push((p.id(), high));
    }
    consumer.assign(&list).unwrap();
    let mut records = Vec::new();
    let mut done: Vec<i32> = ends.iter().filter(|(_, h)| *h == 0).map(|(p, _)| *p).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while done.len() < ends.len() {
        assert!(Instant::now() < deadline, "could not read {topic} to its end");
        let Some(message) = consumer.poll(Duration::from_millis(200)) else { continue };
        let message = match message {
            Ok(m) => m,
            // The end of a partition whose last offsets are transaction markers (the config
            // topic is written in transactions), which are never delivered.
            Err(KafkaError::PartitionEOF(partition)) => {
                if !done.contains(&partition) {
                    done.push(partition);
                }
                continue;
            }
            Err(e) => panic!("reading {topic}: {e}"),
        };
        let end = ends.iter().find(|(p, _)| *p == message.partition()).unwrap().1;
        if message.offset() < end {
            records.push(TimedRecord {
                partition: message.partition(),
                key: String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned(),
                value: message.payload().map(|v| String::from_utf8_lossy(v).into_owned()),
                at: message.timestamp().to_millis().unwrap_or(0) as f64 / 1000.0,
                headers: message
                    .headers()
                    .map(|hs| {
                        use rdkafka::message::Headers;
                        hs.iter()
                            .map(|h| (h.key.to_string(), h.value.map(|v| String::from_utf8_lossy(v).into_owned())))
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
        if message.offset() + 1 >= end && !done.contains(&message.partition()) {
            done.push(message.partition());
        }
    }
    records
}

/// The offset a consumer group committed for partition 0 of a topic.
pub fn committed_offset(group: &str, topic: &str) -> Option<i64> {
    let consumer: BaseConsumer =
        ClientConfig::new().set("bootstrap.servers", bootstrap()).set("group.id", group).create().unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition(topic, 0);
    let committed = consumer.committed_offsets(list, Duration::from_secs(10)).ok()?;
    committed.find_partition(topic, 0)?.offset().to_raw().filter(|o| *o >= 0)
}

/// What every Kafka Connect worker of the tests has: the suite's broker, JsonConverter for keys
/// and values, offsets flushed every second, and the plugins of `plugin_path` (a folder without
/// ServiceLoader manifests, found by scanning it) or only those on its classpath.
fn connect_settings(plugin_path: Option<&str>) -> Vec<(&'static str, String)> {
    let json = "org.apache.kafka.connect.json.JsonConverter".to_string();
    let mut settings = vec![
        ("bootstrap.servers", bootstrap()),
        ("key.converter", json.clone()),
        ("value.converter", json),
        ("offset.flush.interval.ms", "1000".into()),
    ];
    match plugin_path {
        Some(path) => settings.extend([("plugin.path", path.to_string()), ("plugin.discovery", "hybrid_warn".into())]),
        None => settings.push(("plugin.discovery", "service_load".into())),
    }
    settings
}

/// A Kafka Connect 4.1 standalone worker with JsonConverter for keys and values, running
/// `connectors`, on the suite's broker, with the plugins of `plugin_path` besides those on its
/// classpath; its log goes to `connect.log` in `dir`.
pub fn start_connect(
    dir: &std::path::Path,
    plugin_path: Option<&str>,
    connectors: &[(&str, Vec<(&str, String)>)],
) -> std::process::Child {
    start_connect_with(dir, plugin_path, connectors, &[])
}

/// `start_connect`, with more options for `java` (a `-javaagent:`, say).
pub fn start_connect_with(
    dir: &std::path::Path,
    plugin_path: Option<&str>,
    connectors: &[(&str, Vec<(&str, String)>)],
    java_options: &[String],
) -> std::process::Child {
    let classpath = std::env::var("CONNECT_CLASSPATH").expect("CONNECT_CLASSPATH is not set: run ./run test");
    let worker = dir.join("connect-worker.properties");
    let mut settings = connect_settings(plugin_path);
    settings.extend([
        ("key.converter.schemas.enable", "true".into()),
        ("value.converter.schemas.enable", "true".into()),
        ("offset.storage.file.filename", dir.join("connect.offsets").display().to_string()),
        ("listeners", format!("http://127.0.0.1:{}", free_port())),
    ]);
    write_properties(&worker, &settings);
    let mut command = std::process::Command::new("java");
    // The worker's INFO log into connect.log, through the Log4j config scripts/kafka-connect keeps.
    let log_config = Command::new(workspace().join("scripts/kafka-connect")).arg("log-config").output().unwrap();
    let log_config = String::from_utf8_lossy(&log_config.stdout).trim().to_string();
    command.args(["-Xms64M", "-Xmx512M", "-cp", &classpath]);
    command.args(java_options);
    command.arg(format!("-Dlog4j2.configurationFile={log_config}"));
    command.arg(format!("-Dwharf.connect.log={}", dir.join("connect.log").display()));
    command.arg("org.apache.kafka.connect.cli.ConnectStandalone");
    command.arg(&worker);
    for (name, pairs) in connectors {
        let file = dir.join(format!("{name}.properties"));
        let mut all = vec![("name", name.to_string())];
        all.extend(pairs.iter().cloned());
        write_properties(&file, &all);
        command.arg(&file);
    }
    let errors = std::fs::File::create(dir.join("connect.stderr")).unwrap();
    command.stdout(std::process::Stdio::null()).stderr(errors).spawn().expect("java could not start Kafka Connect")
}

/// Writes numbered records to the partitions of a topic in turn until stopped, 20 every 20 ms:
/// values `p<partition>-<n>`, `n` counting over all partitions.
pub struct CountedStream {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl CountedStream {
    pub fn start(topic: &str, partitions: i32) -> Self {
        use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (topic, stopped) = (topic.to_string(), stop.clone());
        let thread = std::thread::spawn(move || {
            let producer: BaseProducer =
                ClientConfig::new().set("bootstrap.servers", bootstrap()).set("linger.ms", "5").create().unwrap();
            let mut written = Vec::new();
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..20 {
                    let partition = written.len() as i32 % partitions;
                    let value = format!("p{partition}-{:09}", written.len());
                    let record = BaseRecord::<(), _>::to(&topic).payload(&value).partition(partition);
                    producer.send(record).map_err(|(e, _)| e).unwrap();
                    written.push(value);
                }
                producer.poll(Duration::from_millis(20));
            }
            producer.flush(Duration::from_secs(30)).unwrap();
            written
        });
        CountedStream { stop, thread: Some(thread) }
    }

    /// Stops writing; every value written, each acknowledged by the broker.
    pub fn stop(mut self) -> Vec<String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().expect("running").join().unwrap()
    }
}

impl Drop for CountedStream {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Worker settings for quick failure detection in a cluster: the test broker allows sessions this
/// short (scripts/kafka); a departed worker's work waits `delay_ms` for it.
pub fn quick_failover(delay_ms: u64) -> Vec<(&'static str, String)> {
    vec![
        ("session.timeout.ms", "3000".into()),
        ("heartbeat.interval.ms", "500".into()),
        ("rebalance.timeout.ms", "10000".into()),
        ("scheduled.rebalance.max.delay.ms", delay_ms.to_string()),
        ("offset.flush.interval.ms", "300".into()),
    ]
}

/// A healthy datagen connector writing to a topic of its own, beside whatever a test attempts.
pub struct Canary {
    pub topic: String,
}

/// Creates the canary connector, named `canary`, and waits for its task to run.
pub fn canary(worker: &Worker) -> Canary {
    let topic = unique("canary");
    let body =
        serde_json::json!({"name": "canary", "config": {"connector.class": "datagen", "topic": topic, "rate": "200"}});
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    worker.wait_task_state("canary", 0, "RUNNING");
    Canary { topic }
}

/// The canary still runs and its topic keeps growing, and the worker answers within 10 s
/// (generous: this guards against a wedged worker, not a slow one).
pub fn assert_unharmed(worker: &Worker, canary: &Canary) {
    let before = topic_count(&canary.topic);
    worker.wait("the canary to write more records", Duration::from_secs(30), || {
        (topic_count(&canary.topic) > before).then_some(())
    });
    assert_eq!(worker.task_state_now("canary", 0).0, "RUNNING");
    let asked = std::time::Instant::now();
    let (code, _, _) = worker.call("GET", "/connectors?expand=status", None);
    assert_eq!(code, 200);
    assert!(asked.elapsed() < Duration::from_secs(10), "the worker took {:?} to answer", asked.elapsed());
}

/// `POST /connectors` of `config` under `name`: the answer's code and body.
pub fn create(worker: &Worker, name: &str, config: impl std::borrow::Borrow<Value>) -> (u16, Value) {
    let body = serde_json::json!({"name": name, "config": config.borrow()});
    let (code, answer, _) = worker.call("POST", "/connectors", Some(&body.to_string()));
    (code, answer)
}

/// One REST call to the worker (Wharf's or Kafka Connect's) at 127.0.0.1:`port`: its status code and body (JSON, or the text as a string).
pub fn rest_call(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .body(body.map(Value::to_string).unwrap_or_default())
        .unwrap();
    match agent.run(request) {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let text = response.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
        }
        Err(e) => (0, Value::String(e.to_string())),
    }
}

/// A Kafka Connect 4.1 distributed worker at 127.0.0.1:`port` on the topics of `group`, with
/// JsonConverter, and the plugins of `plugin_path` besides those on its classpath; its log goes
/// to `connect.log` in `dir`.
pub fn start_connect_distributed(dir: &Path, group: &str, port: u16, plugin_path: Option<&str>) -> KillOnDrop {
    start_connect_distributed_with(dir, group, port, plugin_path, &[])
}

/// `start_connect_distributed`, with more options for `java` (a `-javaagent:`, say).
pub fn start_connect_distributed_with(
    dir: &Path,
    group: &str,
    port: u16,
    plugin_path: Option<&str>,
    java_options: &[String],
) -> KillOnDrop {
    let classpath = std::env::var("CONNECT_CLASSPATH").expect("CONNECT_CLASSPATH is not set: run ./run test");
    let worker = dir.join("connect-distributed.properties");
    let mut settings = connect_settings(plugin_path);
    settings
        .extend([("listeners", format!("http://127.0.0.1:{port}")), ("rest.advertised.host.name", "127.0.0.1".into())]);
    settings.extend(cluster_properties(group));
    write_properties(&worker, &settings);
    let log = fs::File::create(dir.join("connect.log")).unwrap();
    let child = Command::new("java")
        .args(["-Xms64M", "-Xmx512M", "-cp", &classpath])
        .args(java_options)
        .arg("org.apache.kafka.connect.cli.ConnectDistributed")
        .arg(&worker)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("java could not start Kafka Connect");
    KillOnDrop(child)
}
