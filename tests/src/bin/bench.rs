//! The benchmark harness: Wharf side by side with Apache Kafka Connect on the same broker and the
//! same data, and against a bare rdkafka producer and consumer as the ceilings. Prints a markdown table of
//! medians with their spread and writes it to a file. Run it through `./run bench` (or
//! `./run bench --smoke`), which builds Wharf, fetches Kafka Connect, and starts the broker;
//! `--only wharf` or `--only datagen` runs one side and prints it, for profiling; `--only scale`
//! prints sections 7 and 8 (many tasks on one worker; restart and join at scale, `scale.rs`);
//! `--only languages` section 9 (Python and JavaScript plugins beside Rust, `languages.rs`);
//! `--only jdbc` section 10 (the SQL sink into PostgreSQL beside Debezium's, `jdbc.rs`);
//! `--only cdc` section 11 (change data capture from PostgreSQL beside Debezium's, `cdc.rs`);
//! `--only eos` section 13 (a source with exactly-once support on and off, on both engines).
//!
//! Settings that make the comparison fair, for both engines: one task, string/byte pass-through
//! converters (and, for the `j` rows and row `1t`, JsonConverter with schemas for keys and values
//! on both; row `1t` adds the same four transforms on both),
//! `offset.flush.interval.ms=1000`, producer `acks=all` with idempotence and
//! `linger.ms=5`, the same 100-byte lines, a fresh worker and fresh topics for every run. Kafka
//! Connect runs with the heap its launch script gives (`-Xms256M -Xmx2G`) and
//! `plugin.discovery=service_load`, as its own start-up warning advises.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::ClientConfig;
use rdkafka::Message;
use serde_json::{json, Value};
use wharf_e2e::{bootstrap, cluster_properties, count_lines, free_port, topic_count, unique, workspace};

#[path = "bench/cdc.rs"]
mod cdc;
#[path = "bench/jdbc.rs"]
mod jdbc;
#[path = "bench/languages.rs"]
mod languages;
#[path = "bench/scale.rs"]
mod scale;

#[derive(Clone, Copy, PartialEq)]
enum Engine {
    Wharf,
    Connect,
}

/// What the workers' converters make of the lines.
#[derive(Clone, Copy, PartialEq)]
enum Converters {
    /// Lines as they are (StringConverter in Connect; Wharf's default in Wharf).
    Plain,
    /// JsonConverter with schemas, for keys and values, on both engines.
    Json,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Wharf => "Wharf",
            Engine::Connect => "Kafka Connect",
        }
    }
}

struct Options {
    lines: usize,
    runs: usize,
    out: PathBuf,
    boundary_seconds: f64,
    /// `--only wharf`, `--only datagen` or `--only scale`: one engine's workloads, or the scale
    /// sections, printed, not written to a file (for profiling one workload).
    only: Option<String>,
    /// `--baseline PATH`: a `wharf` of an earlier commit, whose throughput section 12 sets beside
    /// this build's.
    baseline: Option<PathBuf>,
    scale: scale::Sizes,
    /// The tasks of section 8's cluster.
    cluster_tasks: usize,
    languages: languages::Sizes,
    jdbc: jdbc::Sizes,
    cdc: cdc::Sizes,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let lines = value("--lines").map(|v| v.parse().expect("--lines takes a number")).unwrap_or(if smoke {
        2_000
    } else {
        1_000_000
    });
    let runs = value("--runs").map(|v| v.parse().expect("--runs takes a number")).unwrap_or(if smoke { 1 } else { 3 });
    let default_out =
        if smoke { workspace().join("target/bench-smoke.md") } else { workspace().join("tests/bench/RESULTS.md") };
    let out = value("--out").map(PathBuf::from).unwrap_or(default_out);
    let only = value("--only");
    if let Some(only) = &only {
        assert!(
            ["wharf", "datagen", "scale", "languages", "jdbc", "cdc", "baseline", "eos"].contains(&only.as_str()),
            "--only takes wharf, datagen, scale, languages, jdbc, cdc, baseline or eos, not {only}"
        );
    }
    let baseline = value("--baseline").map(PathBuf::from);
    if let Some(baseline) = &baseline {
        assert!(
            baseline.is_file(),
            "--baseline {}: no such file (a wharf binary of the commit to compare with)",
            baseline.display()
        );
    }
    assert!(
        only.as_deref() != Some("baseline") || baseline.is_some(),
        "--only baseline takes --baseline PATH: ./run bench --baseline COMMIT builds it"
    );
    let scale = if smoke {
        scale::Sizes {
            tasks: vec![1, 10],
            window: Duration::from_secs(3),
            settle: Duration::from_secs(1),
            ready_timeout: Duration::from_secs(60),
        }
    } else {
        scale::Sizes {
            tasks: vec![1, 10, 100, 1000],
            window: Duration::from_secs(30),
            settle: Duration::from_secs(5),
            ready_timeout: Duration::from_secs(600),
        }
    };
    let cluster_tasks = if smoke { 10 } else { 1000 };
    let languages = languages::Sizes {
        tasks: if smoke { vec![1, 2] } else { vec![1, 10, 100] },
        settle: Duration::from_secs(if smoke { 1 } else { 5 }),
        ready_timeout: Duration::from_secs(if smoke { 120 } else { 600 }),
        compile_timeout: Duration::from_secs(600),
        load_dirs: if smoke { &["target/plugins"] } else { &["target/plugins", "target/example-plugins"] },
        tier_seconds: if smoke { 0.2 } else { 3.0 },
    };
    let jdbc = jdbc::Sizes {
        rows: if smoke { 2_000 } else { 200_000 },
        runs,
        timeout: Duration::from_secs(if smoke { 120 } else { 900 }),
    };
    let cdc = cdc::Sizes {
        stream_rows: if smoke { 2_000 } else { 200_000 },
        snapshot_rows: if smoke { 2_000 } else { 500_000 },
        runs,
        timeout: Duration::from_secs(if smoke { 120 } else { 900 }),
    };
    Options {
        lines,
        runs,
        out,
        baseline,
        boundary_seconds: if smoke { 0.2 } else { 1.0 },
        only,
        scale,
        cluster_tasks,
        languages,
        jdbc,
        cdc,
    }
}

/// A worker process of either engine, on fresh internal topics.
struct Worker {
    child: Child,
    port: u16,
    spawned: Instant,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_properties(path: &Path, pairs: &[(&str, String)]) {
    let text: String = pairs.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    fs::write(path, text).unwrap();
}

/// A number field of `/proc/<pid>/status` (`Threads:`, `VmRSS:` in KiB, …); 0 when unreadable.
fn proc_status_field(pid: u32, name: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn start(engine: Engine, dir: &Path, converters: Converters) -> Worker {
    start_in_group(engine, dir, converters, &unique("bench"), &[])
}

/// A worker of `group`, whose internal topics are named after it (`cluster_properties`); `dir`
/// holds its properties file and log, one worker to a folder. `extra` settings come last; a
/// Connect worker given a `plugin.path` scans it for plugins without ServiceLoader manifests.
fn start_in_group(
    engine: Engine,
    dir: &Path,
    converters: Converters,
    group: &str,
    extra: &[(&'static str, String)],
) -> Worker {
    let port = free_port();
    let mut props = vec![("bootstrap.servers", bootstrap())];
    props.extend(cluster_properties(group));
    props.extend([
        ("listeners", format!("http://127.0.0.1:{port}")),
        ("offset.flush.interval.ms", "1000".into()),
        ("producer.linger.ms", "5".into()),
    ]);
    if converters == Converters::Json {
        props.push(("key.converter", "org.apache.kafka.connect.json.JsonConverter".into()));
        props.push(("value.converter", "org.apache.kafka.connect.json.JsonConverter".into()));
    }
    let worker_file = dir.join("worker.properties");
    let log = fs::File::create(dir.join(format!("{}.log", unique("worker")))).unwrap();
    let mut command = match engine {
        Engine::Wharf => {
            props.push(("plugin.path", workspace().join("target/plugins").display().to_string()));
            props.push(("wasm.ceiling.fs.write", dir.join("data").display().to_string()));
            let mut c = Command::new(wharf_binary());
            c.arg("distributed").arg(&worker_file).env("RUST_LOG", "warn");
            c
        }
        Engine::Connect => {
            if converters == Converters::Plain {
                props.push(("key.converter", "org.apache.kafka.connect.storage.StringConverter".into()));
                props.push(("value.converter", "org.apache.kafka.connect.storage.StringConverter".into()));
            }
            props.push(("producer.acks", "all".into()));
            props.push(("producer.enable.idempotence", "true".into()));
            // Connect's own advice: without it a classpath scan adds seconds and memory.
            let discovery = if extra.iter().any(|(k, _)| *k == "plugin.path") { "hybrid_warn" } else { "service_load" };
            props.push(("plugin.discovery", discovery.into()));
            let classpath = std::env::var("CONNECT_CLASSPATH").expect("CONNECT_CLASSPATH is not set: run ./run bench");
            let mut c = Command::new("java");
            // The heap connect-distributed.sh gives a worker.
            c.args(["-Xms256M", "-Xmx2G"]);
            if let Ok(log4j) = std::env::var("CONNECT_LOG4J") {
                c.arg(format!("-Dlog4j2.configurationFile={log4j}"));
                c.arg(format!("-Dwharf.connect.log={}", dir.join("connect.log").display()));
            }
            c.arg("-cp").arg(classpath).arg("org.apache.kafka.connect.cli.ConnectDistributed").arg(&worker_file);
            c
        }
    };
    props.extend(extra.iter().cloned());
    write_properties(&worker_file, &props);
    let spawned = Instant::now();
    let child = command.stdout(Stdio::null()).stderr(log).spawn().expect("start a worker");
    Worker { child, port, spawned }
}

impl Worker {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Waits until `GET /connectors` answers; the time since the process was spawned.
    fn wait_rest(&mut self) -> Duration {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if ureq::get(&self.url("/connectors")).call().is_ok() {
                return self.spawned.elapsed();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("a worker exited before its REST API came up ({status})");
            }
            assert!(Instant::now() < deadline, "a worker's REST API did not come up in 120 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn create(&self, name: &str, config: Value) {
        let body = json!({"name": name, "config": config});
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut response = agent.post(&self.url("/connectors")).send_json(&body).expect("POST /connectors");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        assert!(status == 201, "creating {name} answered {status}: {text}");
    }

    /// The byte position the source connector `source` last committed in its file; 0 before
    /// the first commit (KIP-875's `GET /connectors/{name}/offsets`, the same on both engines).
    fn committed_position(&self) -> u64 {
        let Ok(mut response) = ureq::get(&self.url("/connectors/source/offsets")).call() else { return 0 };
        let Ok(answer) = response.body_mut().read_json::<Value>() else { return 0 };
        answer["offsets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["offset"]["position"].as_u64())
            .max()
            .unwrap_or(0)
    }

    /// Resident memory now and at its peak, in KiB.
    fn memory(&self) -> (u64, u64) {
        let pid = self.child.id();
        (proc_status_field(pid, "VmRSS:"), proc_status_field(pid, "VmHWM:"))
    }
}

fn source_config(engine: Engine, dir: &Path, file: &Path, topic: &str) -> Value {
    match engine {
        Engine::Wharf => json!({"connector.class": "file-source", "file": file.display().to_string(), "topic": topic,
            "wasm.fs.read": dir.display().to_string(), "tasks.max": "1"}),
        Engine::Connect => json!({"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": file.display().to_string(), "topic": topic, "tasks.max": "1"}),
    }
}

fn sink_config(engine: Engine, dir: &Path, file: &Path, topic: &str) -> Value {
    match engine {
        Engine::Wharf => json!({"connector.class": "file-sink", "file": file.display().to_string(), "topics": topic,
            "wasm.fs.write": dir.display().to_string(), "tasks.max": "1"}),
        Engine::Connect => json!({"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": file.display().to_string(), "topics": topic, "tasks.max": "1"}),
    }
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Default)]
struct Samples {
    startup_ms: Vec<f64>,
    idle_mib: Vec<f64>,
    source_rate: Vec<f64>,
    peak_mib: Vec<f64>,
    sink_rate: Vec<f64>,
    /// The sink's rate from its first line in the output file, as the bare consumer is timed
    /// from its first record.
    sink_steady: Vec<f64>,
}

/// The transforms of workload 1t, the same on both engines: each line hoisted into a struct
/// (FileStreamSource's lines are strings), then Kafka Connect's chain of three: a static field
/// inserted, the topic renamed, the inserted field masked.
fn transform_chain() -> Value {
    json!({
        "transforms": "hoist,insert,route,mask",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.insert.static.field": "origin",
        "transforms.insert.static.value": "bench",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "$1-routed",
        "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
        "transforms.mask.fields": "origin",
    })
}

/// Workload 1t for one engine: the file source through `transform_chain` and JsonConverter;
/// the rate from connector creation until every line is in the renamed topic.
fn run_transformed_source(engine: Engine, input: &Path, lines: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = start(engine, dir.path(), Converters::Json);
    worker.wait_rest();
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let local_input = data.join("input.txt");
    fs::copy(input, &local_input).unwrap();
    let topic = unique("bench-transformed");
    let mut config = source_config(engine, &data, &local_input, &topic);
    for (key, value) in transform_chain().as_object().unwrap() {
        config[key] = value.clone();
    }
    let routed = format!("{topic}-routed");
    let started = Instant::now();
    worker.create("transformed", config);
    wait_until("every line in the renamed topic", Duration::from_secs(600), || topic_count(&routed) >= lines as i64);
    lines as f64 / started.elapsed().as_secs_f64()
}

/// One run of workloads 1, 2, 4 and 5 for one engine.
fn run_pipeline(engine: Engine, converters: Converters, input: &Path, lines: usize, samples: &mut Samples) {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = start(engine, dir.path(), converters);
    samples.startup_ms.push(worker.wait_rest().as_secs_f64() * 1000.0);
    // The connectors' files, apart from the worker's own (no grant may cover those).
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();

    let empty = data.join("empty.txt");
    fs::write(&empty, "").unwrap();
    worker.create("idle", source_config(engine, &data, &empty, &unique("idle")));
    std::thread::sleep(Duration::from_secs(3));
    samples.idle_mib.push(worker.memory().0 as f64 / 1024.0);

    let local_input = data.join("input.txt");
    fs::copy(input, &local_input).unwrap();
    let topic = unique("bench-lines");
    let started = Instant::now();
    worker.create("source", source_config(engine, &data, &local_input, &topic));
    wait_until("every line in the topic", Duration::from_secs(600), || topic_count(&topic) >= lines as i64);
    samples.source_rate.push(lines as f64 / started.elapsed().as_secs_f64());
    samples.peak_mib.push(worker.memory().1 as f64 / 1024.0);

    let output = data.join("output.txt");
    let started = Instant::now();
    // A sink's consumer group is `connect-<name>`: a name of its own in every run, or a sink
    // could wait for the previous run's member of the same group to time out.
    worker.create(&unique("sink"), sink_config(engine, &data, &output, &topic));
    wait_until("a first line in the output file", Duration::from_secs(600), || count_lines(&output) > 0);
    let first = Instant::now();
    let before_first = count_lines(&output);
    wait_until("every line in the output file", Duration::from_secs(600), || count_lines(&output) >= lines);
    samples.sink_rate.push(lines as f64 / started.elapsed().as_secs_f64());
    samples.sink_steady.push(rate_after_first(lines, before_first, first, samples.sink_rate.last().copied()));
}

/// The rate of the records that came after the first sighting. When every record was already
/// there at once (tiny smoke sizes), there is nothing to time: the rate from creation stands in.
fn rate_after_first(total: usize, seen_at_first: usize, first: Instant, overall: Option<f64>) -> f64 {
    match total.saturating_sub(seen_at_first) {
        0 => overall.unwrap_or(0.0),
        after => after as f64 / first.elapsed().as_secs_f64(),
    }
}

/// Workload 3: Wharf's datagen against a bare producer with the same settings; then the bare
/// consumer ceiling of workload 2: the same records read back by a consumer with the settings of
/// Wharf's sink consumer, doing nothing with them. Returns (datagen, producer, consumer) rates.
/// Wharf's datagen rate is given twice: from connector creation, and from its first record in
/// the topic (the bare producer has no start to pay for). With `Converters::Json`, datagen
/// emits its ten-field struct through JsonConverter (workload 3j), the bare producer writes the
/// bytes of Wharf's first record again and again, and the consumer ceiling is not measured.
fn run_datagen(lines: usize, converters: Converters) -> ((f64, f64), f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = start(Engine::Wharf, dir.path(), converters);
    worker.wait_rest();
    let topic = unique("bench-datagen");
    let started = Instant::now();
    let format = if converters == Converters::Json { "struct" } else { "bytes" };
    worker.create(
        "datagen",
        json!({"connector.class": "datagen", "topic": topic, "count": lines.to_string(), "value.size": "100",
               "value.format": format}),
    );
    wait_until("a first datagen record", Duration::from_secs(600), || topic_count(&topic) > 0);
    let first = Instant::now();
    let before_first = topic_count(&topic) as usize;
    wait_until("every datagen record", Duration::from_secs(600), || topic_count(&topic) >= lines as i64);
    let wharf_rate = lines as f64 / started.elapsed().as_secs_f64();
    let wharf_steady = rate_after_first(lines, before_first, first, Some(wharf_rate));
    drop(worker);

    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .create()
        .unwrap();
    let value = match converters {
        Converters::Json => first_value(&topic),
        Converters::Plain => vec![b'x'; 100],
    };
    let topic = unique("bench-bare");
    let started = Instant::now();
    for _ in 0..lines {
        let mut record = BaseRecord::<(), [u8]>::to(&topic).payload(&value);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, returned)) => {
                    record = returned;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
    producer.flush(Duration::from_secs(120)).unwrap();
    let producer_rate = lines as f64 / started.elapsed().as_secs_f64();
    if converters == Converters::Json {
        return ((wharf_rate, wharf_steady), producer_rate, 0.0);
    }

    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", unique("bench-bare-consumer"))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.queue.backoff.ms", "10")
        .create()
        .unwrap();
    consumer.subscribe(&[topic.as_str()]).unwrap();
    let mut read = 0usize;
    let mut started = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    while read < lines && Instant::now() < deadline {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
            // Timed from the first record: group join and assignment are not reading.
            started.get_or_insert_with(Instant::now);
            std::hint::black_box(message.payload());
            read += 1;
        }
    }
    let consumer_rate = read as f64 / started.map_or(f64::INFINITY, |s| s.elapsed().as_secs_f64());
    ((wharf_rate, wharf_steady), producer_rate, consumer_rate)
}

/// The value of the first record in partition 0 of a topic.
fn first_value(topic: &str) -> Vec<u8> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", unique("bench-first"))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition_offset(topic, 0, rdkafka::Offset::Beginning).unwrap();
    consumer.assign(&list).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
            return message.payload().unwrap_or_default().to_vec();
        }
    }
    panic!("no record could be read from {topic}");
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn cell(values: &[f64]) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.len() == 1 {
        format!("{:.0}", values[0])
    } else {
        format!("{:.0} ({:.0}–{:.0})", median(values), min, max)
    }
}

fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()))
        .map(|kib| format!("{:.0} GiB", kib as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{cores} cores ({cpu}), {memory} memory")
}

/// The build of Wharf beside this harness, as the reports name it.
const BUILD: &str = if cfg!(debug_assertions) { "debug" } else { "release" };

/// The time now, as the reports give it.
fn utc_now() -> String {
    Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The `wharf` section 12 runs in place of this build's, while it runs the baseline's.
static WHARF_IN_PLACE: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// The `wharf` built beside this harness: the release build for a measured run, the debug build
/// that the test suite already made for `--smoke`, which checks that the harness works and times
/// nothing.
fn wharf_binary() -> std::path::PathBuf {
    if let Some(in_place) = WHARF_IN_PLACE.lock().ok().and_then(|w| w.clone()) {
        return in_place;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("wharf")))
        .filter(|wharf| wharf.exists())
        .unwrap_or_else(|| workspace().join("target/release/wharf"))
}

fn main() {
    let options = options();
    let input = workspace().join(format!("target/bench-input-{}.txt", options.lines));
    if !input.exists() {
        let mut file = std::io::BufWriter::new(fs::File::create(&input).unwrap());
        for i in 0..options.lines {
            // 100 bytes a line, newline included.
            writeln!(file, "{i:012} {}", "x".repeat(86)).unwrap();
        }
    }
    if options.only.as_deref() == Some("scale") {
        // Sections 7 and 8 alone take their own run: they replace those of the results file,
        // whose other sections keep the date of theirs.
        let sections = scale_sections(&options);
        println!("{sections}");
        replace_sections(&options.out, SCALE_HEADING, &[LANGUAGES_HEADING], &sections);
        eprintln!("sections 7 and 8 written to {}", options.out.display());
        return;
    }
    if options.only.as_deref() == Some("languages") {
        let section = languages_section(&options);
        println!("{section}");
        replace_sections(&options.out, LANGUAGES_HEADING, &[JDBC_HEADING], &section);
        eprintln!("section 9 written to {}", options.out.display());
        return;
    }
    if options.only.as_deref() == Some("jdbc") {
        let section = jdbc_section(&options);
        println!("{section}");
        replace_sections(&options.out, JDBC_HEADING, &[CDC_HEADING], &section);
        eprintln!("section 10 written to {}", options.out.display());
        return;
    }
    if options.only.as_deref() == Some("baseline") {
        let section = baseline_section(&options, &input);
        println!("{section}");
        replace_sections(&options.out, BASELINE_HEADING, &[EOS_HEADING], &section);
        eprintln!("section 12 written to {}", options.out.display());
        return;
    }
    if options.only.as_deref() == Some("cdc") {
        let section = cdc_section(&options);
        println!("{section}");
        replace_sections(&options.out, CDC_HEADING, &[BASELINE_HEADING, EOS_HEADING], &section);
        eprintln!("section 11 written to {}", options.out.display());
        return;
    }
    if options.only.as_deref() == Some("eos") {
        let section = eos_section(&options, &input);
        println!("{section}");
        replace_sections(&options.out, EOS_HEADING, &[], &section);
        eprintln!("section 13 written to {}", options.out.display());
        return;
    }
    if let Some(only) = options.only.as_deref() {
        for run in 1..=options.runs {
            if only == "wharf" {
                let mut samples = Samples::default();
                run_pipeline(Engine::Wharf, Converters::Plain, &input, options.lines, &mut samples);
                println!(
                    "run {run}: start-up {:.0} ms, idle {:.0} MiB, source {:.0}/s, peak {:.0} MiB, sink {:.0}/s ({:.0}/s from its first line)",
                    samples.startup_ms[0],
                    samples.idle_mib[0],
                    samples.source_rate[0],
                    samples.peak_mib[0],
                    samples.sink_rate[0],
                    samples.sink_steady[0]
                );
            } else {
                let ((wharf, steady), producer, consumer) = run_datagen(options.lines, Converters::Plain);
                println!(
                    "run {run}: datagen {wharf:.0}/s ({steady:.0}/s from its first record), bare producer {producer:.0}/s, \
                     bare consumer {consumer:.0}/s"
                );
            }
        }
        return;
    }
    let mut samples = [Samples::default(), Samples::default()];
    let mut json = [Samples::default(), Samples::default()];
    let mut transformed: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for run in 1..=options.runs {
        for (i, engine) in [Engine::Wharf, Engine::Connect].into_iter().enumerate() {
            eprintln!("run {run}/{}: {} moving {} lines", options.runs, engine.name(), options.lines);
            run_pipeline(engine, Converters::Plain, &input, options.lines, &mut samples[i]);
            eprintln!("run {run}/{}: {} moving {} lines as JSON", options.runs, engine.name(), options.lines);
            run_pipeline(engine, Converters::Json, &input, options.lines, &mut json[i]);
            eprintln!(
                "run {run}/{}: {} moving {} lines through four transforms",
                options.runs,
                engine.name(),
                options.lines
            );
            transformed[i].push(run_transformed_source(engine, &input, options.lines));
        }
    }
    let mut datagen = (Vec::new(), Vec::new(), Vec::new());
    let mut structs = (Vec::new(), Vec::new(), Vec::new());
    let mut bare_consumer = Vec::new();
    for run in 1..=options.runs {
        eprintln!("run {run}/{}: datagen, the bare producer and the bare consumer", options.runs);
        let ((wharf, steady), bare, consumer) = run_datagen(options.lines, Converters::Plain);
        datagen.0.push(wharf);
        datagen.2.push(steady);
        datagen.1.push(bare);
        bare_consumer.push(consumer);
        eprintln!("run {run}/{}: datagen structs through JsonConverter, and the bare producer", options.runs);
        let ((wharf, steady), bare, _) = run_datagen(options.lines, Converters::Json);
        structs.0.push(wharf);
        structs.2.push(steady);
        structs.1.push(bare);
    }
    eprintln!("measuring the WebAssembly boundary");
    let boundary = Command::new(wharf_binary())
        .args(["bench", "boundary", "--seconds", &options.boundary_seconds.to_string(), "--plugin"])
        .arg(workspace().join("target/plugins/datagen.wasm"))
        .arg("--transform")
        .arg(workspace().join("target/test-plugins/test-transform.wasm"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("run wharf bench boundary");
    let boundary = String::from_utf8_lossy(&boundary.stdout).into_owned();

    let [w, c] = &samples;
    let [wj, cj] = &json;
    let [wt, ct] = &transformed;
    let rows: [(&str, &Vec<f64>, &Vec<f64>); 8] = [
        ("1. file source → topic, records/s", &w.source_rate, &c.source_rate),
        ("2. topic → file sink, records/s", &w.sink_rate, &c.sink_rate),
        ("1j. file source → topic, JsonConverter, records/s", &wj.source_rate, &cj.source_rate),
        ("2j. topic → file sink, JsonConverter, records/s", &wj.sink_rate, &cj.sink_rate),
        ("1t. file source → HoistField, InsertField, RegexRouter, MaskField → topic, JsonConverter, records/s", wt, ct),
        ("4. peak RSS during workload 1, MiB", &w.peak_mib, &c.peak_mib),
        ("4. RSS idle with one connector, MiB", &w.idle_mib, &c.idle_mib),
        ("5. start-up to REST answering, ms", &w.startup_ms, &c.startup_ms),
    ];
    let mut report = String::new();
    let date = utc_now();
    report.push_str(&format!("# Benchmark results\n\n{date}; {}; Apache Kafka 4.1.1 broker on loopback.\n", machine()));
    report.push_str(&format!(
        "{} lines of 100 bytes; median of {} run(s), (min–max) when there are several; Wharf {} build, distributed worker.\n\n",
        options.lines,
        options.runs,
        BUILD
    ));
    report.push_str("| figure | Wharf | Kafka Connect | Wharf / Connect |\n|---|---:|---:|---:|\n");
    for (name, wharf, connect) in rows {
        report.push_str(&format!(
            "| {name} | {} | {} | {:.2} |\n",
            cell(wharf),
            cell(connect),
            median(wharf) / median(connect)
        ));
    }
    report.push_str(&format!(
        "\nThe ceilings: the bare clients are timed from their first record; Wharf both from connector creation (as above) and from its first record.\n\n\
         | records/s | Wharf from creation | Wharf from first record | bare rdkafka client | fraction of the ceiling (first record) |\n|---|---:|---:|---:|---:|\n\
         | 3. datagen → topic (bare producer) | {} | {} | {} | {:.2} |\n\
         | 3j. datagen structs → topic, JsonConverter (bare producer, the same bytes) | {} | {} | {} | {:.2} |\n\
         | 2. topic → file sink (bare consumer) | {} | {} | {} | {:.2} |\n",
        cell(&datagen.0),
        cell(&datagen.2),
        cell(&datagen.1),
        median(&datagen.2) / median(&datagen.1),
        cell(&structs.0),
        cell(&structs.2),
        cell(&structs.1),
        median(&structs.2) / median(&structs.1),
        cell(&w.sink_rate),
        cell(&w.sink_steady),
        cell(&bare_consumer),
        median(&w.sink_steady) / median(&bare_consumer)
    ));
    report.push_str(&format!("\n## 6. The WebAssembly boundary (no Kafka)\n\n{}\n", boundary.trim()));
    report.push_str(&scale_sections(&options));
    report.push_str(&languages_section(&options));
    report.push_str(&jdbc_section(&options));
    report.push_str(&cdc_section(&options));
    if options.baseline.is_some() {
        report.push_str(&baseline_section(&options, &input));
    }
    report.push_str(&eos_section(&options, &input));
    println!("{report}");
    if let Some(parent) = options.out.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(&options.out, &report).unwrap();
    eprintln!("written to {}", options.out.display());
}

/// Where sections 7 and 8 begin in the results file.
const SCALE_HEADING: &str = "\n## 7. Many tasks on one worker";

/// Where section 9 begins in the results file.
const LANGUAGES_HEADING: &str = "\n## 9. Plugins in Python and JavaScript";

/// Puts `sections` in the results file in place of the text from `from` up to the first of the
/// later headings `until` that the file has (or the end); the other sections keep theirs, and
/// their date.
fn replace_sections(out: &Path, from: &str, until: &[&str], sections: &str) {
    let written = fs::read_to_string(out).unwrap_or_default();
    let start = written.find(from).unwrap_or(written.len());
    let end = until.iter().filter_map(|u| written[start..].find(u).map(|at| start + at)).min().unwrap_or(written.len());
    let (before, after) = (written[..start].trim_end(), &written[end..]);
    fs::write(out, format!("{before}\n{}\n{after}", sections.trim_end())).unwrap();
}

/// Where section 10 begins in the results file.
const JDBC_HEADING: &str = "\n## 10. The SQL sink into PostgreSQL";

/// Section 10.
fn jdbc_section(options: &Options) -> String {
    jdbc::section(&options.jdbc, JDBC_HEADING, &utc_now(), &machine(), BUILD)
}

/// Where section 12 begins in the results file.
const BASELINE_HEADING: &str = "\n## 12. Beside an earlier commit";

/// Section 12: workloads 1 and 2 with this build's `wharf` and with `--baseline`'s, in turns
/// (the first of each round alternating), median of `--runs`; then what one scrape of 1,000 tasks
/// costs this build. What the baseline lacks (the metrics of every task, for one) this build's
/// figures pay for.
fn baseline_section(options: &Options, input: &Path) -> String {
    let Some(baseline) = options.baseline.clone() else { return String::new() };
    let mut ours = Samples::default();
    let mut theirs = Samples::default();
    for run in 1..=options.runs {
        let order = if run % 2 == 1 { [true, false] } else { [false, true] };
        for baseline_first in order {
            let (label, samples) =
                if baseline_first { ("the baseline", &mut theirs) } else { ("this build", &mut ours) };
            eprintln!("run {run}/{}: {label} moving {} lines", options.runs, options.lines);
            if let Ok(mut in_place) = WHARF_IN_PLACE.lock() {
                *in_place = baseline_first.then(|| baseline.clone());
            }
            run_pipeline(Engine::Wharf, Converters::Plain, input, options.lines, samples);
        }
    }
    if let Ok(mut in_place) = WHARF_IN_PLACE.lock() {
        *in_place = None;
    }
    let scrape = Command::new(wharf_binary())
        .args(["bench", "scrape", "--tasks", "1000"])
        .env("RUST_LOG", "warn")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(workspace())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let rows: [(&str, &Vec<f64>, &Vec<f64>); 3] = [
        ("1. file source → topic, records/s", &ours.source_rate, &theirs.source_rate),
        ("2. topic → file sink, records/s", &ours.sink_rate, &theirs.sink_rate),
        ("4. peak RSS during workload 1, MiB", &ours.peak_mib, &theirs.peak_mib),
    ];
    let mut section = format!(
        "{BASELINE_HEADING}\n\n{}; {}; Wharf {} builds, distributed worker, {} lines of 100 bytes; median of {} \
         run(s) each, the two builds in turns. This build: commit {head}; the baseline: {}.\n\n\
         | figure | this build | the baseline | this / baseline |\n|---|---:|---:|---:|\n",
        utc_now(),
        machine(),
        BUILD,
        options.lines,
        options.runs,
        baseline
            .parent()
            .and_then(|p| p.file_name())
            .map_or_else(|| baseline.display().to_string(), |c| format!("commit {}", c.to_string_lossy()))
    );
    for (name, this, that) in rows {
        section.push_str(&format!(
            "| {name} | {} | {} | {:.3} |\n",
            cell(this),
            cell(that),
            median(this) / median(that)
        ));
    }
    section.push_str(&format!("\n{scrape}\n"));
    section
}

/// Where section 13 begins in the results file.
const EOS_HEADING: &str = "\n## 13. Exactly-once sources";

/// The interval of section 13's third setting: short, so that the last commit after the end of
/// the file adds little to a run, and long enough that each transaction holds tens of thousands
/// of records.
const EOS_INTERVAL_MS: u64 = 100;

/// One of section 13's settings: the worker's `exactly.once.source.support`, the connector's
/// settings, and what a run's progress line says of them beside the support.
struct EosRun<'a> {
    support: &'a str,
    boundary: &'a str,
    connector: &'a [(&'a str, &'a str)],
}

/// Workload 1 with `exactly.once.source.support` disabled, then enabled with a transaction per
/// batch its poll returns (`transaction.boundary=poll`, the default) and with one every
/// `EOS_INTERVAL_MS` (`transaction.boundary=interval`), on both engines, in turns; each run is
/// timed from the connector's creation until the offset it committed is the end of the file
/// (records of open transactions count for nothing until their commit).
fn eos_section(options: &Options, input: &Path) -> String {
    // The poll run is `POLL`, whose transactions are counted.
    const POLL: usize = 1;
    let interval = EOS_INTERVAL_MS.to_string();
    let settings = [
        EosRun { support: "disabled", boundary: "", connector: &[] },
        EosRun { support: "enabled", boundary: "", connector: &[] },
        EosRun {
            support: "enabled",
            boundary: ", transaction.boundary=interval",
            connector: &[("transaction.boundary", "interval"), ("transaction.boundary.interval.ms", &interval)],
        },
    ];
    // [engine][setting] → records a second.
    let mut rates: [[Vec<f64>; 3]; 2] = Default::default();
    // [engine] → transactions of each run with transaction.boundary=poll (the committed records
    // of its offset topic: one a transaction, as each engine commits a batch's offsets with it).
    let mut transactions: [Vec<f64>; 2] = Default::default();
    let end = fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    for run in 1..=options.runs {
        for (e, engine) in [Engine::Wharf, Engine::Connect].into_iter().enumerate() {
            for (s, setting) in settings.iter().enumerate() {
                eprintln!(
                    "run {run}/{}: {} moving {} lines, exactly.once.source.support={}{}",
                    options.runs,
                    engine.name(),
                    options.lines,
                    setting.support,
                    setting.boundary
                );
                let dir = tempfile::tempdir().unwrap();
                let extra = [("exactly.once.source.support", setting.support.to_string())];
                let group = unique("bench-eos");
                let mut worker = start_in_group(engine, dir.path(), Converters::Plain, &group, &extra);
                worker.wait_rest();
                let data = dir.path().join("data");
                fs::create_dir_all(&data).unwrap();
                let local_input = data.join("input.txt");
                fs::copy(input, &local_input).unwrap();
                let mut config = source_config(engine, &data, &local_input, &unique("bench-eos"));
                for (key, value) in setting.connector {
                    config[*key] = json!(value);
                }
                let started = Instant::now();
                worker.create("source", config);
                wait_until("the whole file's offset committed", Duration::from_secs(900), || {
                    worker.committed_position() >= end
                });
                rates[e][s].push(options.lines as f64 / started.elapsed().as_secs_f64());
                if s == POLL {
                    let offsets = wharf_e2e::topic_values_as(&format!("{group}-offsets"), "read_committed");
                    transactions[e].push(offsets.len() as f64);
                }
            }
        }
    }
    let ratio = |e: usize, s: usize| median(&rates[e][s]) / median(&rates[e][0]);
    // What exactly-once adds to each transaction: the time the enabled runs took beyond the
    // disabled ones, over the transactions they committed.
    let added_ms = |e: usize| {
        let seconds = |rate: f64| options.lines as f64 / rate;
        let count = median(&transactions[e]).max(1.0);
        (seconds(median(&rates[e][POLL])) - seconds(median(&rates[e][0]))) * 1000.0 / count
    };
    let per_transaction = |e: usize| options.lines as f64 / median(&transactions[e]).max(1.0);
    format!(
        "{EOS_HEADING}\n\n{}; {}; Wharf {} build, one distributed worker per run; workload 1 ({} lines of 100 \
         bytes), timed until the file's last offset is committed; median of {} run(s). Enabled runs every source \
         task in transactions: one per batch its poll returns (transaction.boundary=poll, the default), or one \
         every {EOS_INTERVAL_MS} ms (transaction.boundary=interval), on both engines.\n\n\
         | records/s | disabled | enabled, poll | enabled / disabled | enabled, interval | enabled / disabled |\n\
         |---|---:|---:|---:|---:|---:|\n\
         | Wharf | {} | {} | {:.2} | {} | {:.2} |\n| Kafka Connect | {} | {} | {:.2} | {} | {:.2} |\n\n\
         What exactly-once costs Wharf beside what it costs Connect (Wharf's ratio over Connect's): {:.2} with a \
         transaction a poll, {:.2} with a transaction every {EOS_INTERVAL_MS} ms. Per transaction it adds {:.1} ms \
         to Wharf ({:.0} records a transaction) and {:.1} ms to Connect ({:.0} records a transaction): the same \
         time costs a faster engine a larger share of its throughput.\n",
        utc_now(),
        machine(),
        BUILD,
        options.lines,
        options.runs,
        cell(&rates[0][0]),
        cell(&rates[0][1]),
        ratio(0, 1),
        cell(&rates[0][2]),
        ratio(0, 2),
        cell(&rates[1][0]),
        cell(&rates[1][1]),
        ratio(1, 1),
        cell(&rates[1][2]),
        ratio(1, 2),
        ratio(0, 1) / ratio(1, 1),
        ratio(0, 2) / ratio(1, 2),
        added_ms(0),
        per_transaction(0),
        added_ms(1),
        per_transaction(1),
    )
}

/// Where section 11 begins in the results file.
const CDC_HEADING: &str = "\n## 11. Change data capture from PostgreSQL";

/// Section 11.
fn cdc_section(options: &Options) -> String {
    cdc::section(&options.cdc, CDC_HEADING, &utc_now(), &machine(), BUILD)
}

/// Section 9, one run.
fn languages_section(options: &Options) -> String {
    languages::section(&options.languages, LANGUAGES_HEADING, &utc_now(), &machine(), BUILD)
}

/// Sections 7 and 8, one run each.
fn scale_sections(options: &Options) -> String {
    let sizes = &options.scale;
    let mut out = format!(
        "{SCALE_HEADING}\n\n{}; {}; Wharf {} build, distributed worker. \
         One run each; usage over {} s, {} s after every task was running. Idle: file sources on empty files, \
         one task each (Kafka Connect: FileStreamSource). At {} records/s: Wharf's datagen, that rate over all tasks \
         (at most 10 connectors). CPU is the worker process's user and system time.\n\n\
         | tasks | load | engine | threads | RSS, MiB | CPU s per minute | all running after, s |\n|---:|---|---|---:|---:|---:|---:|\n",
        utc_now(),
        machine(),
        BUILD,
        sizes.window.as_secs(),
        sizes.settle.as_secs(),
        scale::TOTAL_RATE
    );
    for &tasks in &sizes.tasks {
        for (engine, load) in [
            (Engine::Wharf, scale::Load::Idle),
            (Engine::Connect, scale::Load::Idle),
            (Engine::Wharf, scale::Load::Rate),
        ] {
            let load_name = match load {
                scale::Load::Idle => "idle".to_string(),
                scale::Load::Rate => format!("{} records/s", scale::TOTAL_RATE),
            };
            eprintln!("scale: {} with {tasks} task(s), {load_name}", engine.name());
            let row = match scale::run(engine, tasks, load, sizes) {
                Some(u) => format!(
                    "| {} | {:.1} | {:.2} | {:.1} |",
                    u.threads, u.rss_mib, u.cpu_seconds_per_minute, u.ready_seconds
                ),
                None => format!("| not all running within {} s | | | |", sizes.ready_timeout.as_secs()),
            };
            out.push_str(&format!("| {tasks} | {load_name} | {} {row}\n", engine.name()));
        }
    }
    let tasks = options.cluster_tasks;
    let limit = options.scale.ready_timeout.as_secs();
    let seconds = |v: Option<f64>| v.map_or(format!("did not within {limit} s"), |s| format!("{s:.1}"));
    out.push_str(&format!(
        "\n## 8. Restart and join with {tasks} connectors\n\n\
         {tasks} idle file sources, one task each, on one distributed worker; the worker is stopped and a new one \
         started on the same internal topics; then a second worker joins. Seconds.\n\n\
         | figure | Wharf | Kafka Connect |\n|---|---:|---:|\n"
    ));
    let mut figures = Vec::new();
    for engine in [Engine::Wharf, Engine::Connect] {
        eprintln!("scale: {} restarting and joining with {tasks} connectors", engine.name());
        figures.push(scale::cluster(engine, tasks, options.scale.ready_timeout));
    }
    let [w, c] = [&figures[0], &figures[1]];
    for (name, wharf, connect) in [
        ("restart: REST answering", w.rest_after_restart, c.rest_after_restart),
        ("restart: every task running on the new worker", w.running_after_restart, c.running_after_restart),
        ("a second worker joins: each runs at least 45% of the tasks", w.balanced_after_join, c.balanced_after_join),
    ] {
        out.push_str(&format!("| {name} | {} | {} |\n", seconds(wharf), seconds(connect)));
    }
    out
}
