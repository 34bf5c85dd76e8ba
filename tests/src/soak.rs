//! Soaks: a million records through one instance of a plugin (sources, sinks and transforms),
//! driven through the host's instance API without Kafka, as a task's thread drives it
//! (`tests/tests/soak_*.rs`, one test binary, so one process, per language). What the instance's linear memory
//! and the process's resident memory hold after 100,000 records is taken as the plateau; after a
//! million, the instance may hold at most 2 MiB and the process at most 8 MiB more. A plugin
//! whose runtime keeps something of every call (a leaked argument, a growing cache) fails here
//! long before it would fail a worker after an afternoon.
//!
//! A soak given `recycle` replaces its instance after that many records, at a flush boundary, as
//! a worker does with `wasm.instance.recycle.records`: for runtimes that keep something of every
//! call (the plugin author's guide names them), what is bounded is then each instance's span.
//!
//! The soaks of one binary run one at a time (`ONE_AT_A_TIME`): the resident memory read is the
//! process's, and two soaks side by side would count each other's.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use crate::workspace;
use wharf::config::connector::FolderGrant;
use wharf::config::WasmLimits;
use wharf::runtime::{Grants, Plugin, Runtime};
use wharf_connect::model::{ConnectRecord, PolledRecord, SinkRecord};

/// Records each soak moves through its instance (`WHARF_SOAK_RECORDS` asks for more, for a longer
/// soak by hand).
fn records_wanted() -> usize {
    std::env::var("WHARF_SOAK_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000).max(1_000_000)
}
/// Records after which the instance's memory is taken as the plateau.
const PLATEAU_AT: usize = 100_000;
/// What the instance's linear memory may grow by between the plateau and the end.
const INSTANCE_GROWTH: usize = 2 * 1024 * 1024;
/// What the process's resident memory may grow by over the same span.
const PROCESS_GROWTH: usize = 8 * 1024 * 1024;
/// Records given to a sink's `put` or a transform's `apply` at once, as a task's batch.
const BATCH: usize = 1000;
/// A sink is flushed (and a source committed) after this many batches, as a task would at its
/// offset flush interval.
const BATCHES_PER_FLUSH: usize = 20;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Memory read at the plateau and at the end of a soak.
#[derive(Clone, Copy, Debug)]
struct Reading {
    records: usize,
    instance: usize,
    process: usize,
    /// The process's resident memory outside its linear memories: the host's own.
    host: usize,
}

/// The process's resident memory in bytes, from `/proc/self/statm`.
fn resident_bytes() -> usize {
    let statm = fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    pages * page
}

/// Resident bytes of the process's linear memories. wasmtime reserves 4 GiB of address space for
/// each and makes its first pages accessible as the memory grows, which splits the reservation
/// into contiguous anonymous mappings (`rw-p` pages, then `---p` ones) in `/proc/self/smaps`: runs
/// of such mappings spanning at least 4 GiB are linear memories. A garbage collector that touches
/// more of a heap already grown makes its pages resident without any growth; what the host itself
/// holds is the rest.
fn linear_memory_resident_bytes() -> usize {
    const RESERVATION: u64 = 4 << 30;
    let smaps = fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    // (start, end, anonymous, resident bytes) of each mapping, in address order.
    let mut maps: Vec<(u64, u64, bool, usize)> = Vec::new();
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        if let Some((start, end)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16)) {
                // An anonymous mapping names no file: its inode (the fifth field) is 0.
                let anonymous = words.nth(3) == Some("0") && words.next().is_none();
                maps.push((start, end, anonymous, 0));
                continue;
            }
        }
        if let Some(rss) = line.strip_prefix("Rss:").and_then(|v| v.split_whitespace().next()) {
            if let (Some(last), Ok(kib)) = (maps.last_mut(), rss.parse::<usize>()) {
                last.3 = kib * 1024;
            }
        }
    }
    let (mut total, mut run_start, mut run_rss, mut previous_end) = (0, 0, 0, u64::MAX);
    for &(start, end, anonymous, rss) in &maps {
        if !anonymous {
            previous_end = u64::MAX;
            continue;
        }
        if start != previous_end {
            (run_start, run_rss) = (start, 0);
        }
        run_rss += rss;
        previous_end = end;
        if end - run_start >= RESERVATION {
            total += run_rss;
            (run_start, run_rss, previous_end) = (end, 0, u64::MAX);
        }
    }
    total
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

impl Reading {
    fn now(records: usize, instance: usize) -> Self {
        let process = resident_bytes();
        Reading { records, instance, process, host: process.saturating_sub(linear_memory_resident_bytes()) }
    }
}

/// Watches a soak: takes the plateau once `PLATEAU_AT` records have passed, and checks the bounds
/// at the end.
struct Watch {
    name: String,
    plateau: Option<Reading>,
    collected_heap: bool,
    started: Instant,
    reported: usize,
}

impl Watch {
    fn new(name: &str, plan: &Plan) -> Self {
        Watch {
            name: name.to_string(),
            plateau: None,
            collected_heap: plan.collected_heap,
            started: Instant::now(),
            reported: 0,
        }
    }

    fn passed(&mut self, records: usize, instance: usize) {
        if self.plateau.is_none() && records >= PLATEAU_AT {
            self.plateau = Some(Reading::now(records, instance));
        }
        // Progress, every half million records (shown with --nocapture).
        if records / 500_000 > self.reported {
            self.reported = records / 500_000;
            eprintln!("soak {}: {records} records, instance memory {:.2} MiB", self.name, mib(instance));
        }
    }

    fn finish(self, records: usize, instance: usize) {
        let end = Reading::now(records, instance);
        let plateau = self.plateau.expect("the soak passed its plateau");
        eprintln!(
            "soak {}: {} records in {:.1} s; instance memory {:.2} MiB at {} records, {:.2} MiB at {}; \
             process resident {:.1} MiB, then {:.1} MiB, of which outside linear memory {:.1} MiB, then {:.1} MiB",
            self.name,
            end.records,
            self.started.elapsed().as_secs_f64(),
            mib(plateau.instance),
            plateau.records,
            mib(end.instance),
            end.records,
            mib(plateau.process),
            mib(end.process),
            mib(plateau.host),
            mib(end.host),
        );
        assert!(end.records >= records_wanted(), "{}: only {} records went through", self.name, end.records);
        assert!(
            self.collected_heap || end.instance <= plateau.instance + INSTANCE_GROWTH,
            "{}: the instance's memory grew from {:.2} MiB at {} records to {:.2} MiB at {}",
            self.name,
            mib(plateau.instance),
            plateau.records,
            mib(end.instance),
            end.records
        );
        // The instance's memory is bounded above; the process's is checked outside it (pages of
        // a grown heap touched for the first time are no growth).
        assert!(
            end.host <= plateau.host + PROCESS_GROWTH,
            "{}: the process's resident memory outside linear memory grew from {:.1} MiB at {} records to {:.1} \
             MiB at {}",
            self.name,
            mib(plateau.host),
            plateau.records,
            mib(end.host),
            end.records
        );
    }
}

/// The runtime every soak shares, compiling into the suite's compile cache.
fn runtime() -> &'static Runtime {
    static RUNTIME: std::sync::OnceLock<Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new(workspace().join("target/test-compile-cache")).unwrap())
}

fn load(file: &str) -> Plugin {
    let path = workspace().join(file);
    assert!(path.exists(), "{} is missing: ./run test builds it", path.display());
    let (component, _) = runtime().load_component(&path).unwrap();
    Plugin::inspect(runtime(), component, path).unwrap()
}

fn limits() -> WasmLimits {
    WasmLimits { max_records_per_call: BATCH as u32, ..WasmLimits::default() }
}

fn config(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn folder(path: &Path, writable: bool) -> FolderGrant {
    let path = path.canonicalize().unwrap();
    FolderGrant { guest: path.clone(), path, writable }
}

/// A batch of datagen's records in `format` (`value.format`: bytes, string or struct; with
/// `+headers`, each record carries two headers as data).
fn datagen_batch(format: &str) -> Vec<PolledRecord> {
    let limits = limits();
    let mut source = load("target/plugins/datagen.wasm")
        .open_source(
            runtime(),
            Grants::none("soak-datagen", &limits),
            &config(&[
                ("topic", "soak"),
                ("count", "-1"),
                ("value.format", format.trim_end_matches("+headers")),
                ("value.size", "40"),
                ("headers", if format.ends_with("+headers") { "true" } else { "false" }),
            ]),
            &limits,
        )
        .unwrap();
    let mut batch = Vec::new();
    while batch.len() < BATCH {
        batch.extend(source.poll().unwrap());
    }
    batch.truncate(BATCH);
    source.close().unwrap();
    batch
}

/// A million lines of JSON in a file, for the sources that read files.
fn lines_file(dir: &Path) -> PathBuf {
    let path = dir.join("in.jsonl");
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    for i in 0..records_wanted() {
        writeln!(out, r#"{{"id":{i},"name":"item {i}"}}"#).unwrap();
    }
    out.flush().unwrap();
    path
}

/// How a soak runs: by default one instance for a million records, its memory held to the
/// bounds above.
#[derive(Clone, Copy, Default)]
pub struct Plan {
    /// The instance is replaced after this many records, at a flush boundary, as a worker does
    /// with `wasm.instance.recycle.records`.
    pub recycle: Option<usize>,
    /// A garbage-collected heap that grows in steps its collector's timing decides, towards a
    /// working size it reaches after more records than `PLATEAU_AT` (from one run to the next,
    /// StarlingMonkey's reached 115 to 143 MiB after a million small records): the instance's
    /// growth is reported, and held only to `wasm.memory.max.bytes`, which fails a call past it.
    pub collected_heap: bool,
}

impl Plan {
    /// The instance replaced every `records`.
    pub fn recycled(records: usize) -> Self {
        Plan { recycle: Some(records), ..Plan::default() }
    }

    /// A garbage-collected heap (`collected_heap`).
    pub fn collected_heap() -> Self {
        Plan { collected_heap: true, ..Plan::default() }
    }

    fn due(&self, since: usize) -> bool {
        self.recycle.is_some_and(|every| since >= every)
    }
}

/// A source polled for a million records; committed every `BATCHES_PER_FLUSH` polls.
pub fn source(file: &str, settings: &[(&str, &str)], folders: Vec<FolderGrant>, plan: Plan) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let plugin = load(file);
    let limits = limits();
    let open = || {
        let grants = Grants { folders: folders.clone(), ..Grants::none(&plugin.info.name, &limits) };
        plugin.open_source(runtime(), grants, &config(settings), &limits).unwrap()
    };
    let mut source = open();
    let mut watch = Watch::new(&plugin.info.name, &plan);
    let (mut records, mut polls, mut since) = (0, 0, 0);
    while records < records_wanted() {
        let polled = source.poll().unwrap();
        assert!(!polled.is_empty() || polls < 1_000_000, "{} stopped giving records", plugin.info.name);
        records += polled.len();
        since += polled.len();
        polls += 1;
        if polls % BATCHES_PER_FLUSH == 0 {
            source.commit().unwrap();
            if plan.due(since) {
                std::mem::replace(&mut source, open()).close().unwrap();
                since = 0;
            }
        }
        watch.passed(records, source.memory_bytes());
    }
    watch.finish(records, source.memory_bytes());
    source.close().unwrap();
}

/// A sink given a million records in batches of `BATCH`, flushed every `BATCHES_PER_FLUSH`.
pub fn sink(file: &str, settings: &[(&str, &str)], grants: impl Fn(Grants) -> Grants, format: &str, plan: Plan) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let plugin = load(file);
    let limits = limits();
    let batch = datagen_batch(format);
    let partition = wharf_connect::model::TopicPartition { topic: "soak".into(), partition: 0 };
    let open = || {
        let grants = grants(Grants::none(&plugin.info.name, &limits));
        let mut sink = plugin.open_sink(runtime(), grants, &config(settings), &limits).unwrap();
        sink.open_partitions(std::slice::from_ref(&partition)).unwrap();
        sink
    };
    let mut sink = open();
    let mut watch = Watch::new(&plugin.info.name, &plan);
    let (mut offset, mut batches, mut since) = (0i64, 0, 0);
    while (offset as usize) < records_wanted() {
        let records: Vec<SinkRecord> = batch
            .iter()
            .map(|r| {
                offset += 1;
                SinkRecord {
                    topic: "soak".into(),
                    partition: 0,
                    offset: offset - 1,
                    key: r.key.clone(),
                    value: r.value.clone(),
                    headers: r.headers.clone(),
                    timestamp: r.timestamp,
                }
            })
            .collect();
        since += records.len();
        if let Err(e) = sink.put(records).outcome {
            panic!("{}: put failed after {} records: {e}", plugin.info.name, offset as usize - BATCH);
        }
        batches += 1;
        if batches % BATCHES_PER_FLUSH == 0 {
            sink.flush(&[wharf_connect::model::PartitionOffset { topic: "soak".into(), partition: 0, offset }])
                .unwrap();
            if plan.due(since) {
                let mut old = std::mem::replace(&mut sink, open());
                old.close_partitions(std::slice::from_ref(&partition)).unwrap();
                old.close().unwrap();
                since = 0;
            }
        }
        watch.passed(offset as usize, sink.memory_bytes());
    }
    watch.finish(offset as usize, sink.memory_bytes());
    sink.close().unwrap();
}

/// A transform given a batch of `BATCH` records again and again.
pub fn transform(file: &str, settings: &[(&str, &str)], plan: Plan) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let plugin = load(file);
    let limits = limits();
    let batch: Vec<ConnectRecord> = datagen_batch("string").into_iter().map(ConnectRecord::from).collect();
    let open = || {
        plugin.open_transform(runtime(), Grants::none(&plugin.info.name, &limits), &config(settings), &limits).unwrap()
    };
    let mut transform = open();
    let mut watch = Watch::new(&plugin.info.name, &plan);
    let (mut records, mut since) = (0, 0);
    while records < records_wanted() {
        let out = transform.apply(batch.clone()).unwrap();
        assert_eq!(out.len(), batch.len(), "{} answered for every record", plugin.info.name);
        records += out.len();
        since += out.len();
        if plan.due(since) {
            std::mem::replace(&mut transform, open()).close().unwrap();
            since = 0;
        }
        watch.passed(records, transform.memory_bytes());
    }
    watch.finish(records, transform.memory_bytes());
    transform.close().unwrap();
}

/// A sink writing into a fresh folder of its own, deleted at the end.
pub fn file_sink(file: &str, format: &str, plan: Plan) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let granted = folder(dir.path(), true);
    sink(
        file,
        &[("file", &out.display().to_string()), ("topics", "soak")],
        |g| Grants { folders: vec![granted.clone()], ..g },
        format,
        plan,
    );
}

/// A source reading the million lines of a fresh file.
pub fn file_source(file: &str, plan: Plan) {
    let dir = tempfile::tempdir().unwrap();
    let input = lines_file(dir.path());
    let granted = folder(dir.path(), false);
    source(file, &[("file", &input.display().to_string()), ("topic", "soak")], vec![granted], plan);
}

/// Answers every HTTP request 200 (one request a connection, as the HTTP sink's example server
/// in languages.rs does), for the HTTP sink: its address.
pub fn http_receiver() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let Ok(clone) = stream.try_clone() else { continue };
            let mut reader = BufReader::new(clone);
            let (mut length, mut line) = (0usize, String::new());
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}");
        }
    });
    address
}
