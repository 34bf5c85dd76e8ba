//! Sections 7 and 8 of the benchmark: many tasks on one worker, idle and at a fixed total rate
//! (threads, resident memory, CPU), and a worker's restart on, and a second worker's join to, a
//! cluster of many connectors. Kafka Connect runs the same number of FileStreamSource
//! connectors on empty files; Wharf its file source on empty files, and datagen for the rate.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wharf_e2e::unique;

use super::{proc_status_field, source_config, start_in_group, Converters, Engine, Worker};

/// The total rate of the loaded rows, over all tasks.
pub const TOTAL_RATE: u64 = 1_000;

pub struct Sizes {
    pub tasks: Vec<usize>,
    /// How long a worker may take to have every task running (or to balance after a join)
    /// before the cell says it did not.
    pub ready_timeout: Duration,
    /// How long usage is measured, after `settle`.
    pub window: Duration,
    pub settle: Duration,
}

/// What a worker process used over a window.
#[derive(Clone, Copy)]
pub struct Usage {
    pub threads: u64,
    pub rss_mib: f64,
    pub cpu_seconds_per_minute: f64,
    /// From the first connector's creation to every task running.
    pub ready_seconds: f64,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Load {
    /// File sources on empty files.
    Idle,
    /// Datagen tasks, `TOTAL_RATE` records/s over all of them.
    Rate,
}

/// Process figures read from `/proc`.
fn threads_and_rss(pid: u32) -> (u64, f64) {
    (proc_status_field(pid, "Threads:"), proc_status_field(pid, "VmRSS:") as f64 / 1024.0)
}

/// CPU seconds the process used so far (user and system).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces: the state
    // first, utime and stime the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<f64>().ok()).sum();
    // SAFETY: sysconf reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks / per_second
}

impl Worker {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn usage_over(&self, window: Duration) -> (u64, f64, f64) {
        let before = cpu_seconds(self.pid());
        std::thread::sleep(window);
        let used = cpu_seconds(self.pid()) - before;
        let (threads, rss) = threads_and_rss(self.pid());
        (threads, rss, used * 60.0 / window.as_secs_f64())
    }

    /// The tasks in the RUNNING state, per worker id, from `GET /connectors?expand=status`.
    fn running_tasks(&self) -> Vec<(String, usize)> {
        let Ok(mut response) = ureq::get(&self.url("/connectors?expand=status")).call() else { return Vec::new() };
        let Ok(body) = response.body_mut().read_json::<Value>() else { return Vec::new() };
        let mut per_worker: Vec<(String, usize)> = Vec::new();
        let connectors = body.as_object().cloned().unwrap_or_default();
        for (_, connector) in connectors {
            let tasks = connector["status"]["tasks"].as_array().cloned().unwrap_or_default();
            for task in tasks.iter().filter(|t| t["state"] == "RUNNING") {
                let worker = task["worker_id"].as_str().unwrap_or("").to_string();
                match per_worker.iter_mut().find(|(w, _)| *w == worker) {
                    Some((_, n)) => *n += 1,
                    None => per_worker.push((worker, 1)),
                }
            }
        }
        per_worker
    }

    /// Waits until `done` holds of the running tasks; the time it took, or None after `timeout`.
    fn wait_tasks(&self, timeout: Duration, done: impl Fn(&[(String, usize)]) -> bool) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if done(&self.running_tasks()) {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        None
    }

    /// This worker's id, as its statuses name it.
    fn id(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

fn running_on(tasks: &[(String, usize)], worker: &str) -> usize {
    tasks.iter().filter(|(w, _)| w == worker).map(|(_, n)| n).sum()
}

/// Creates the connectors of `tasks` tasks under `load`.
fn create(worker: &Worker, engine: Engine, data: &Path, tasks: usize, load: Load) {
    match load {
        Load::Idle => {
            let topic = unique("bench-idle");
            for i in 0..tasks {
                let file = data.join(format!("idle-{i}.txt"));
                fs::write(&file, "").unwrap();
                worker.create(&format!("idle-{i}"), source_config(engine, data, &file, &topic));
            }
        }
        Load::Rate => {
            let connectors = tasks.min(10);
            let per_connector = tasks / connectors;
            let rate = TOTAL_RATE as f64 / tasks as f64;
            let topic = unique("bench-rate");
            for i in 0..connectors {
                worker.create(
                    &format!("rate-{i}"),
                    json!({"connector.class": "datagen", "topic": topic, "rate": rate.to_string(),
                           "tasks.max": per_connector.to_string(), "value.size": "100"}),
                );
            }
        }
    }
}

/// One cell row: `tasks` tasks of `load` on a fresh worker of `engine`. None when the worker
/// did not have them all running within `Sizes::ready_timeout`.
pub fn run(engine: Engine, tasks: usize, load: Load, sizes: &Sizes) -> Option<Usage> {
    let dir = tempfile::tempdir().unwrap();
    let group = unique("bench-scale");
    let mut worker = start_in_group(engine, dir.path(), Converters::Plain, &group, &[]);
    worker.wait_rest();
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let created = Instant::now();
    create(&worker, engine, &data, tasks, load);
    worker.wait_tasks(sizes.ready_timeout, |running| running.iter().map(|(_, n)| n).sum::<usize>() >= tasks)?;
    let ready_seconds = created.elapsed().as_secs_f64();
    std::thread::sleep(sizes.settle);
    let (threads, rss_mib, cpu_seconds_per_minute) = worker.usage_over(sizes.window);
    Some(Usage { threads, rss_mib, cpu_seconds_per_minute, ready_seconds })
}

/// What section 8 measures for one engine, in seconds; None where it did not happen within
/// `ready_timeout`.
#[derive(Default)]
pub struct Cluster {
    /// A worker restarted on the internal topics of `tasks` idle connectors: to REST answering.
    pub rest_after_restart: Option<f64>,
    /// … to every task running on it again.
    pub running_after_restart: Option<f64>,
    /// A second worker joins: until each runs at least 45% of the tasks.
    pub balanced_after_join: Option<f64>,
}

pub fn cluster(engine: Engine, tasks: usize, ready_timeout: Duration) -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let group = unique("bench-cluster");
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let mut first = start_in_group(engine, dir.path(), Converters::Plain, &group, &[]);
    first.wait_rest();
    create(&first, engine, &data, tasks, Load::Idle);
    let all = |running: &[(String, usize)]| running.iter().map(|(_, n)| n).sum::<usize>() >= tasks;
    if first.wait_tasks(ready_timeout, all).is_none() {
        return Cluster::default();
    }
    drop(first);

    let mut result = Cluster::default();
    // Each worker's file ceiling is its folder's `data`: the same folder for all three, where the
    // connectors' files are.
    let second_dir = dir.path().join("second");
    fs::create_dir_all(&second_dir).unwrap();
    std::os::unix::fs::symlink(&data, second_dir.join("data")).unwrap();
    let mut restarted = start_in_group(engine, &second_dir, Converters::Plain, &group, &[]);
    let spawned = Instant::now();
    restarted.wait_rest();
    result.rest_after_restart = Some(spawned.elapsed().as_secs_f64());
    let id = restarted.id();
    if restarted.wait_tasks(ready_timeout, |running| running_on(running, &id) >= tasks).is_none() {
        return result;
    }
    result.running_after_restart = Some(spawned.elapsed().as_secs_f64());

    let third_dir = dir.path().join("third");
    fs::create_dir_all(&third_dir).unwrap();
    std::os::unix::fs::symlink(&data, third_dir.join("data")).unwrap();
    let mut joining = start_in_group(engine, &third_dir, Converters::Plain, &group, &[]);
    let joined = Instant::now();
    joining.wait_rest();
    let (old, new) = (restarted.id(), joining.id());
    let least = tasks * 45 / 100;
    let balanced = restarted
        .wait_tasks(ready_timeout, |running| running_on(running, &old) >= least && running_on(running, &new) >= least);
    result.balanced_after_join = balanced.map(|_| joined.elapsed().as_secs_f64());
    result
}
