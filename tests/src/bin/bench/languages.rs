//! Section 9 of the benchmark: plugins written in Python and JavaScript beside a Rust one. What a
//! worker's memory grows by with 1, 10 and 100 tasks of one plugin, what a worker with every
//! example plugin loaded holds while idle, and how long each component takes to load the first
//! time (compiled) and then (from the compile cache).
//!
//! Memory is read three ways from `/proc`: RSS (what `ps` shows), PSS (each page shared between
//! mappings or processes counted once, in shares) and private dirty memory (written pages that
//! belong to this process alone). A task's linear memory maps its plugin's snapshot from the
//! compile cache copy-on-write: pages the task only reads are counted in RSS once per task, but
//! they are one page of the page cache, which PSS shows.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wharf_e2e::{bootstrap, cluster_properties, free_port, unique, workspace, write_properties};

use super::{wharf_binary, Worker};

pub struct Sizes {
    pub tasks: Vec<usize>,
    /// Waited after every task is running, before memory is read.
    pub settle: Duration,
    pub ready_timeout: Duration,
    /// How long a worker may take to compile every plugin with a fresh cache.
    pub compile_timeout: Duration,
    /// The plugin folders whose first loads are timed (a smoke run takes the shipped plugins
    /// only: compiling the examples in other languages takes minutes, and times nothing there).
    pub load_dirs: &'static [&'static str],
    /// Seconds of polling per optimisation level.
    pub tier_seconds: f64,
}

/// The plugins compared: a Rust, a Python and a JavaScript source that each make 10 records
/// (through JsonConverter) and then have nothing more to do.
const PLUGINS: [(&str, &str); 3] =
    [("Rust", "datagen"), ("Python", "py-orders-source"), ("JavaScript", "js-orders-source")];

/// Memory of a process, in MiB.
#[derive(Clone, Copy, Default)]
struct Memory {
    rss: f64,
    pss: f64,
    private_dirty: f64,
}

fn memory(pid: u32) -> Memory {
    let rollup = fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let field = |name: &str| -> f64 {
        rollup
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    Memory { rss: field("Rss:"), pss: field("Pss:"), private_dirty: field("Private_Dirty:") }
}

/// Where the plugins are: the shipped ones, and the examples in other languages.
const PLUGIN_DIRS: &[&str] = &["target/plugins", "target/example-plugins"];

/// A distributed Wharf worker whose `plugin.path` holds the shipped plugins and the examples in
/// other languages, compiling into `cache`, logging plugin loads to `log`.
fn start(dir: &Path, cache: &Path, log: &Path) -> Worker {
    let dirs: Vec<PathBuf> = PLUGIN_DIRS.iter().map(|d| workspace().join(d)).collect();
    start_with(dir, cache, log, &dirs)
}

/// A worker as `start` makes it, whose `plugin.path` holds `dirs`.
fn start_with(dir: &Path, cache: &Path, log: &Path, dirs: &[PathBuf]) -> Worker {
    let port = free_port();
    let mut props = vec![("bootstrap.servers", bootstrap())];
    props.extend(cluster_properties(&unique("bench-languages")));
    let plugins = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(",");
    props.extend([
        ("listeners", format!("http://127.0.0.1:{port}")),
        ("plugin.path", plugins),
        ("wasm.cache.dir", cache.display().to_string()),
    ]);
    let worker_file = dir.join(format!("{}.properties", unique("worker")));
    write_properties(&worker_file, &props);
    let log = fs::File::create(log).unwrap();
    let child = Command::new(wharf_binary())
        .arg("distributed")
        .arg(&worker_file)
        .env("RUST_LOG", "warn,wharf::runtime::registry=info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start a worker");
    Worker { child, port, spawned: Instant::now() }
}

/// The plugin files a worker loads from `dirs`.
fn plugin_files(dirs: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    for dir in dirs {
        for entry in fs::read_dir(workspace().join(dir)).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".wasm") {
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    names
}

/// From a worker's log: each plugin's load time in ms, from lines like "loaded plugin NAME 0.1.0
/// (Source) from PATH in 12.3 ms, …".
fn load_times(log: &str) -> Vec<(String, f64)> {
    log.lines()
        .filter_map(|line| {
            let rest = &line[line.find("loaded plugin ")? + "loaded plugin ".len()..];
            let name = rest.split_whitespace().next()?.to_string();
            let ms = rest.rsplit_once(" in ")?.1.split_whitespace().next()?.parse::<f64>().ok()?;
            Some((name, ms))
        })
        .collect()
}

/// Waits until the worker's log names `count` loaded plugins; the time since it was spawned.
fn wait_loaded(worker: &Worker, log: &Path, count: usize, timeout: Duration) -> Option<f64> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if load_times(&fs::read_to_string(log).unwrap_or_default()).len() >= count {
            return Some(worker.spawned.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// First loads: a fresh compile cache, then the same cache again.
struct Loads {
    rest_cold: f64,
    all_loaded_cold: Option<f64>,
    cold: Vec<(String, f64)>,
    cached: Vec<(String, f64)>,
    rest_cached: f64,
    idle_all_plugins: Memory,
    /// The cold start's worker once it compiled every plugin.
    idle_after_compiling: Memory,
}

fn loads(sizes: &Sizes, cache: &Path) -> Loads {
    let dir = tempfile::tempdir().unwrap();
    let files = plugin_files(sizes.load_dirs);
    let load_dirs: Vec<PathBuf> = sizes.load_dirs.iter().map(|d| workspace().join(d)).collect();
    let cold_log = dir.path().join("cold.log");
    let mut cold = start_with(dir.path(), cache, &cold_log, &load_dirs);
    let rest_cold = cold.wait_rest().as_secs_f64();
    let all_loaded_cold = wait_loaded(&cold, &cold_log, files.len(), sizes.compile_timeout);
    std::thread::sleep(sizes.settle);
    let idle_after_compiling = memory(cold.child.id());
    drop(cold);
    let cached_log = dir.path().join("cached.log");
    let mut cached = start_with(dir.path(), cache, &cached_log, &load_dirs);
    let rest_cached = cached.wait_rest().as_secs_f64();
    wait_loaded(&cached, &cached_log, files.len(), sizes.ready_timeout);
    std::thread::sleep(sizes.settle);
    let idle_all_plugins = memory(cached.child.id());
    Loads {
        rest_cold,
        all_loaded_cold,
        cold: load_times(&fs::read_to_string(&cold_log).unwrap_or_default()),
        cached: load_times(&fs::read_to_string(&cached_log).unwrap_or_default()),
        rest_cached,
        idle_all_plugins,
        idle_after_compiling,
    }
}

/// A worker's memory with `tasks` tasks of `plugin` running (one connector each), or None when
/// they were not all running within `ready_timeout`.
fn with_tasks(plugin: &str, tasks: usize, sizes: &Sizes, cache: &Path) -> Option<Memory> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut worker = match sizes.load_dirs.len() < PLUGIN_DIRS.len() {
        // A smoke run's cache lacks the examples: a folder of the one plugin keeps the worker
        // from compiling all the others first.
        true => {
            let only = dir.path().join("plugins");
            fs::create_dir_all(&only).unwrap();
            let file = format!("{plugin}.wasm");
            let found = PLUGIN_DIRS.iter().map(|d| workspace().join(d).join(&file)).find(|f| f.is_file());
            fs::copy(found.expect("the plugin's file"), only.join(&file)).unwrap();
            start_with(dir.path(), cache, &log, &[only])
        }
        false => start(dir.path(), cache, &log),
    };
    worker.wait_rest();
    let topic = unique("bench-languages");
    for i in 0..tasks {
        // The examples make structs: JsonConverter writes them (and datagen's bytes).
        worker.create(
            &format!("{plugin}-{i}"),
            json!({"connector.class": plugin, "topic": topic, "count": "10",
                   "value.converter": "org.apache.kafka.connect.json.JsonConverter"}),
        );
    }
    let deadline = Instant::now() + sizes.ready_timeout;
    while running(&worker) < tasks {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    std::thread::sleep(sizes.settle);
    Some(memory(worker.child.id()))
}

fn running(worker: &Worker) -> usize {
    let Ok(mut response) = ureq::get(&worker.url("/connectors?expand=status")).call() else { return 0 };
    let Ok(body) = response.body_mut().read_json::<Value>() else { return 0 };
    let connectors = body.as_object().cloned().unwrap_or_default();
    connectors
        .values()
        .map(|c| c["status"]["tasks"].as_array().map_or(0, |t| t.iter().filter(|t| t["state"] == "RUNNING").count()))
        .sum()
}

/// Section 9, one run.
pub fn section(sizes: &Sizes, heading: &str, when: &str, machine: &str, build: &str) -> String {
    // The cache the first loads fill serves the task rows.
    let cache = tempfile::tempdir().unwrap();
    let compiled = cache.path().join("compiled");
    eprintln!("languages: first loads, compiled and from the cache");
    let loads = loads(sizes, &compiled);

    let mut out = format!(
        "{heading}\n\n{when}; {machine}; Wharf {build} build, distributed worker whose plugin.path holds the shipped \
         plugins and every example in Python, JavaScript and C. One run each.\n\n\
         Memory, MiB: RSS counts a page once per mapping, so snapshot pages that tasks share copy-on-write count once \
         per task; PSS counts each shared page once, in shares; private dirty is what the worker alone wrote. Each \
         task is one connector making 10 records and then idle. Per extra task: (N tasks − 1 task) / (N − 1).\n\n\
         | plugin | tasks | RSS | PSS | private dirty | RSS per extra task | PSS per extra task | private dirty per extra task |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for (language, plugin) in PLUGINS {
        let mut one: Option<Memory> = None;
        for &tasks in &sizes.tasks {
            eprintln!("languages: {tasks} task(s) of {plugin}");
            let row = match with_tasks(plugin, tasks, sizes, &compiled) {
                None => format!("| not all running within {} s | | | | | |", sizes.ready_timeout.as_secs()),
                Some(m) => {
                    let extra = |f: fn(&Memory) -> f64| match (one, tasks) {
                        (Some(base), n) if n > 1 => format!("{:.2}", (f(&m) - f(&base)) / (n - 1) as f64),
                        _ => String::new(),
                    };
                    let row = format!(
                        "| {:.1} | {:.1} | {:.1} | {} | {} | {} |",
                        m.rss,
                        m.pss,
                        m.private_dirty,
                        extra(|m| m.rss),
                        extra(|m| m.pss),
                        extra(|m| m.private_dirty)
                    );
                    if tasks == 1 {
                        one = Some(m);
                    }
                    row
                }
            };
            out.push_str(&format!("| {language} ({plugin}) | {tasks} {row}\n"));
        }
    }
    let (m, c) = (loads.idle_all_plugins, loads.idle_after_compiling);
    out.push_str(&format!(
        "\nIdle, no connector, every plugin loaded from the compile cache: RSS {:.1} MiB, PSS {:.1} MiB, private dirty \
         {:.1} MiB. The same worker once it compiled them all (a fresh cache): RSS {:.1} MiB, PSS {:.1} MiB, private \
         dirty {:.1} MiB.\n",
        m.rss, m.pss, m.private_dirty, c.rss, c.pss, c.private_dirty
    ));

    let cold_total: f64 = loads.cold.iter().map(|(_, ms)| ms).sum();
    out.push_str(&format!(
        "\nFirst loads, ms: compiled (a fresh compile cache; at most wasm.compile.threads=2 at once, each from when \
         it was queued) and from the cache (the next start). With the fresh cache the worker answered REST after \
         {:.1} s and had every plugin after {}; the compile times add up to {:.1} s. From the cache: REST after {:.1} s.\n\n\
         | plugin | compiled, ms | from the cache, ms |\n|---|---:|---:|\n",
        loads.rest_cold,
        loads.all_loaded_cold.map_or("more than the timeout".to_string(), |s| format!("{s:.1} s")),
        cold_total / 1000.0,
        loads.rest_cached
    ));
    for (name, cold_ms) in &loads.cold {
        let cached = loads.cached.iter().find(|(n, _)| n == name).map_or(String::new(), |(_, ms)| format!("{ms:.1}"));
        out.push_str(&format!("| {name} | {cold_ms:.0} | {cached} |\n"));
    }

    // Whether a cheaper tier would pay: the same plugins compiled without optimisation.
    eprintln!("languages: compiling at each optimisation level");
    let mut tiers = Command::new(wharf_binary());
    tiers.args(["bench", "tiers", "--seconds", &sizes.tier_seconds.to_string()]).env("RUST_LOG", "warn");
    for (_, plugin) in PLUGINS {
        let folder = if plugin == "datagen" { "target/plugins" } else { "target/example-plugins" };
        tiers.arg("--plugin").arg(workspace().join(folder).join(format!("{plugin}.wasm")));
    }
    let tiers = tiers.output().expect("run wharf bench tiers");
    out.push_str(&format!("\n{}\n", String::from_utf8_lossy(&tiers.stdout).trim()));
    out
}
