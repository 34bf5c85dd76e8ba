//! Several distributed workers with one group.id on the real broker: they share the work,
//! survive a kill -9, rebalance for a newcomer, forward writes to the leader and leave at once on
//! SIGTERM. Every test checks from the statuses the workers wrote to the status topic that no
//! task ever ran on two workers at the same time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use wharf_e2e::*;

fn id_of(worker: &Worker) -> String {
    format!("127.0.0.1:{}", worker.port)
}

/// Every task of the given connectors with the worker that reports running it, once all of them
/// are RUNNING.
fn running_tasks(worker: &Worker, connectors: &[&str]) -> Option<BTreeMap<String, String>> {
    let mut tasks = BTreeMap::new();
    for name in connectors {
        let status = worker.get(&format!("/connectors/{name}/status"))?;
        let list = status["tasks"].as_array()?;
        if list.is_empty() {
            return None;
        }
        for task in list {
            if task["state"] != "RUNNING" {
                return None;
            }
            tasks.insert(format!("{name}-{}", task["id"]), task["worker_id"].as_str()?.to_string());
        }
    }
    Some(tasks)
}

fn connector_owners(worker: &Worker, connectors: &[&str]) -> Option<BTreeMap<String, String>> {
    let mut owners = BTreeMap::new();
    for name in connectors {
        let status = worker.get(&format!("/connectors/{name}/status"))?;
        if status["connector"]["state"] != "RUNNING" {
            return None;
        }
        owners.insert(name.to_string(), status["connector"]["worker_id"].as_str()?.to_string());
    }
    Some(owners)
}

/// How many items each of `ids` holds; items held by others count under their id too.
fn counts(owners: &BTreeMap<String, String>, ids: &[String]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = ids.iter().map(|id| (id.clone(), 0)).collect();
    for owner in owners.values() {
        *counts.entry(owner.clone()).or_default() += 1;
    }
    counts
}

fn balanced(counts: &BTreeMap<String, usize>) -> bool {
    let (min, max) = (counts.values().min().copied().unwrap_or(0), counts.values().max().copied().unwrap_or(0));
    max - min <= 1
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One task status record of the status topic: (task, worker, state), with the time it was
/// written; a removed task has no worker and no state.
struct TaskRecord {
    task: String,
    worker: String,
    state: String,
    at: f64,
}

/// The task status records of a cluster's status topic, in the order each task's were written.
fn task_records(status_topic: &str) -> Vec<TaskRecord> {
    timed_topic_records(status_topic)
        .into_iter()
        .filter_map(|record| {
            let task = record.key.strip_prefix("status-task-")?.to_string();
            let status: Value = record.value.as_deref().map_or(Value::Null, |v| serde_json::from_str(v).unwrap());
            let text = |field: &str| status[field].as_str().unwrap_or_default().to_string();
            Some(TaskRecord { task, worker: text("worker_id"), state: text("state"), at: record.at })
        })
        .collect()
}

/// When each task ran on each worker, from the statuses the workers wrote: (task, worker,
/// start, end). A task runs on a worker from a RUNNING status that worker wrote to its next
/// other status from that worker or the task's removal; one still open ends when its worker
/// stopped (`stopped`), or now.
fn task_intervals(records: &[TaskRecord], stopped: &BTreeMap<String, f64>) -> Vec<(String, String, f64, f64)> {
    let mut open: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut intervals = Vec::new();
    for record in records {
        let ends = |(task, worker): &(String, String)| {
            *task == record.task && (record.state.is_empty() || (*worker == record.worker && record.state != "RUNNING"))
        };
        let ended: Vec<(String, String)> = open.keys().filter(|k| ends(k)).cloned().collect();
        for key in ended {
            let start = open.remove(&key).unwrap();
            intervals.push((key.0, key.1, start, record.at));
        }
        if record.state == "RUNNING" {
            open.entry((record.task.clone(), record.worker.clone())).or_insert(record.at);
        }
    }
    let now = now_secs();
    for ((task, worker), start) in open {
        let end = stopped.get(&worker).copied().unwrap_or(now);
        intervals.push((task, worker, start, end));
    }
    intervals
}

/// Asserts, from the cluster's status topic, that no task ran on two workers at once. `stopped`
/// holds the workers that stopped (killed or ended) and when.
fn assert_never_twice(status_topic: &str, stopped: &[(String, f64)]) {
    let records = task_records(status_topic);
    let stopped: BTreeMap<String, f64> = stopped.iter().cloned().collect();
    let all = task_intervals(&records, &stopped);
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if a.0 == b.0 && a.1 != b.1 && a.2 < b.3 && b.2 < a.3 {
                // Every status of the task, to see how it happened.
                let story: Vec<String> = records
                    .iter()
                    .filter(|r| r.task == a.0)
                    .map(|r| {
                        format!("{:.3} {} {}", r.at, r.worker, if r.state.is_empty() { "removed" } else { &r.state })
                    })
                    .collect();
                panic!(
                    "task {} ran on {} ({:.3}..{:.3}) and on {} ({:.3}..{:.3}) at once:\n{}",
                    a.0,
                    a.1,
                    a.2,
                    a.3,
                    b.1,
                    b.2,
                    b.3,
                    story.join("\n")
                );
            }
        }
    }
    assert!(!all.is_empty(), "the status topic {status_topic} shows no task running at all");
}

#[test]
fn task_intervals_show_a_task_that_two_workers_ran_at_once() {
    let record = |task: &str, worker: &str, state: &str, at: f64| TaskRecord {
        task: task.into(),
        worker: worker.into(),
        state: state.into(),
        at,
    };
    let handed_over = [
        record("t-0", "a", "RUNNING", 1.0),
        record("t-0", "a", "UNASSIGNED", 2.0),
        record("t-0", "b", "UNASSIGNED", 2.5),
        record("t-0", "b", "RUNNING", 3.0),
    ];
    let none = BTreeMap::new();
    let intervals = task_intervals(&handed_over, &none);
    assert_eq!(intervals.len(), 2);
    assert!(intervals.iter().any(|i| i.1 == "a" && i.2 == 1.0 && i.3 == 2.0));
    // b started while a never said it stopped, and a was not killed before: both ran it.
    let doubled = [record("t-0", "a", "RUNNING", 1.0), record("t-0", "b", "RUNNING", 3.0)];
    let intervals = task_intervals(&doubled, &none);
    assert!(intervals.iter().all(|i| i.2 < 3.0 + 1.0 && i.3 > 3.0), "{:?}", intervals);
    // Killed at 2: its time ends there.
    let killed = BTreeMap::from([("a".to_string(), 2.0)]);
    let intervals = task_intervals(&doubled, &killed);
    assert!(intervals.iter().any(|i| i.1 == "a" && i.3 == 2.0));
    // A removed task ends for every worker.
    let removed = [record("t-0", "a", "RUNNING", 1.0), record("t-0", "", "", 2.0)];
    assert_eq!(task_intervals(&removed, &none)[0].3, 2.0);
}

/// How many times each task started on `worker`, from the RUNNING statuses it wrote.
fn starts(status_topic: &str, worker: &str) -> BTreeMap<String, usize> {
    let mut starts = BTreeMap::new();
    for record in task_records(status_topic) {
        if record.worker == worker && record.state == "RUNNING" {
            *starts.entry(record.task).or_default() += 1;
        }
    }
    starts
}

fn now_secs() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

#[test]
fn three_workers_share_the_work_survive_a_kill_and_rebalance_for_a_newcomer() {
    let d = Distributed::new(&quick_failover(2000));
    // Each worker has a folder (and log) of its own, kept until the end.
    let homes: Vec<Distributed> = (0..3).map(|_| d.again(&quick_failover(2000))).collect();
    let mut workers: Vec<Worker> = vec![d.start(), homes[0].start(), homes[1].start()];
    let data = tempfile::tempdir().unwrap();
    let (input, output, topic) = (data.path().join("in.txt"), data.path().join("out.txt"), unique("cluster-lines"));
    let sink = unique("sink");
    let gen = "gen";
    let dir = data.path().display().to_string();
    let connectors = [
        (
            "src".to_string(),
            json!({"connector.class": "file-source", "file": input.display().to_string(), "topic": topic, "wasm.fs.read": dir}),
        ),
        (
            sink.clone(),
            json!({"connector.class": "file-sink", "file": output.display().to_string(), "topics": topic, "wasm.fs.write": dir}),
        ),
        (
            gen.to_string(),
            json!({"connector.class": "datagen", "topic": unique("cluster-gen"), "rate": "20", "tasks.max": "4"}),
        ),
    ];
    let (stop_feed, written) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let feeder = feed(&input, stop_feed.clone(), written.clone());
    for (i, (name, config)) in connectors.iter().enumerate() {
        // Sent to every worker in turn: the followers pass them on to the leader.
        let body = json!({"name": name, "config": config});
        let (code, answer, _) = workers[i].call("POST", "/connectors", Some(&body.to_string()));
        assert_eq!(code, 201, "{answer}");
    }
    let names = ["src", sink.as_str(), gen];
    let ids: Vec<String> = workers.iter().map(id_of).collect();

    // Six tasks over three workers: two each; three connectors: one each.
    let started = Instant::now();
    let tasks = workers[0].wait("six RUNNING tasks, two per worker", Duration::from_secs(60), || {
        let tasks = running_tasks(&workers[0], &names)?;
        (tasks.len() == 6 && counts(&tasks, &ids).values().all(|c| *c == 2)).then_some(tasks)
    });
    let owners = workers[0].wait("connectors one per worker", Duration::from_secs(30), || {
        let owners = connector_owners(&workers[0], &names)?;
        counts(&owners, &ids).values().all(|c| *c == 1).then_some(owners)
    });
    println!("three workers: balanced {:.1} s after the first connector was created", started.elapsed().as_secs_f64());
    assert!(tasks.values().all(|w| ids.contains(w)) && owners.values().all(|w| ids.contains(w)));
    // Every worker tells the same story.
    for worker in &workers[1..] {
        worker.wait("the same statuses on every worker", Duration::from_secs(10), || {
            (running_tasks(worker, &names)? == tasks).then_some(())
        });
    }

    // kill -9 the worker that runs the sink's task: after the session timeout and the delay,
    // its tasks run on the two others, and every line still arrives.
    let victim = ids.iter().position(|id| *id == tasks[&format!("{sink}-0")]).unwrap();
    let killed_at = now_secs();
    let kill_clock = Instant::now();
    workers[victim].kill_9();
    let survivors: Vec<usize> = (0..3).filter(|i| *i != victim).collect();
    let survivor_ids: Vec<String> = survivors.iter().map(|i| ids[*i].clone()).collect();
    let watcher = &workers[survivors[0]];
    let moved = watcher.wait("the killed worker's tasks running elsewhere", Duration::from_secs(60), || {
        let tasks = running_tasks(watcher, &names)?;
        let counts = counts(&tasks, &survivor_ids);
        (tasks.len() == 6 && counts.len() == 2 && counts.values().all(|c| *c == 3)).then_some(tasks)
    });
    println!(
        "kill -9 to every task RUNNING on the survivors: {:.1} s (session.timeout.ms=3000, scheduled.rebalance.max.delay.ms=2000)",
        kill_clock.elapsed().as_secs_f64()
    );

    // A fourth worker joins: balanced again, and tasks that stay where they were never restart.
    let before: BTreeMap<usize, BTreeMap<String, usize>> =
        survivors.iter().map(|i| (*i, starts(&d.topics[2], &ids[*i]))).collect();
    let join_clock = Instant::now();
    workers.push(homes[2].start());
    let all_ids: Vec<String> = survivors.iter().map(|i| ids[*i].clone()).chain([id_of(&workers[3])]).collect();
    let settled = workers[3].wait("balance over three workers again", Duration::from_secs(60), || {
        let tasks = running_tasks(&workers[3], &names)?;
        let counts = counts(&tasks, &all_ids);
        (tasks.len() == 6 && counts.len() == 3 && counts.values().all(|c| *c == 2)).then_some(tasks)
    });
    println!("a new worker joined: balanced {:.1} s later", join_clock.elapsed().as_secs_f64());
    let owners = workers[3].wait("connectors one per worker again", Duration::from_secs(30), || {
        let owners = connector_owners(&workers[3], &names)?;
        let counts = counts(&owners, &all_ids);
        (counts.len() == 3 && balanced(&counts)).then_some(owners)
    });
    assert_eq!(owners.len(), 3);
    for i in &survivors {
        let after = starts(&d.topics[2], &ids[*i]);
        for (task, owner) in &settled {
            if *owner == ids[*i] && moved[task] == ids[*i] {
                assert_eq!(after.get(task), before[i].get(task), "task {task} stayed on {owner} but was restarted");
            }
        }
    }

    // Every line written through it all reaches the sink's file (duplicates allowed).
    stop_feed.store(true, Ordering::Relaxed);
    feeder.join().unwrap();
    let total = written.load(Ordering::Relaxed);
    let expected: BTreeSet<String> = (0..total).map(|i| format!("line-{i:09}")).collect();
    workers[3].wait("every line in the sink's file", Duration::from_secs(60), || {
        let got: BTreeSet<String> = read_lines(&output).into_iter().collect();
        expected.is_subset(&got).then_some(())
    });

    assert_never_twice(&d.topics[2], &[(ids[victim].clone(), killed_at)]);
}

#[test]
fn writes_sent_to_any_worker_take_effect_and_every_worker_sees_them() {
    let d = Distributed::new(&quick_failover(2000));
    let second = d.again(&quick_failover(2000));
    let workers = [d.start(), second.start()];
    let topic = unique("fw");
    let body = json!({"name": "gen", "config": {"connector.class": "datagen", "topic": topic, "rate": "5"}});
    // Sent to the second worker to join, which is a follower unless the first failed.
    let (code, answer, _) = workers[1].call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 201, "{answer}");
    for worker in &workers {
        worker.wait("the connector running", Duration::from_secs(30), || running_tasks(worker, &["gen"]));
    }
    let passed_on = workers.iter().any(|w| strip_ansi(&w.log()).contains("passing POST /connectors on to the leader"));
    assert!(
        passed_on,
        "neither worker passed the write on to the leader:\n{}\n---\n{}",
        strip_ansi(&workers[0].log()),
        strip_ansi(&workers[1].log())
    );

    // A config change made through one worker is visible on both within moments.
    for (i, rate) in [(0usize, "7"), (1, "9")] {
        let config = json!({"connector.class": "datagen", "topic": topic, "rate": rate});
        let (code, answer, _) = workers[i].call("PUT", "/connectors/gen/config", Some(&config.to_string()));
        assert_eq!(code, 200, "{answer}");
        for worker in &workers {
            worker.wait("the change on every worker", Duration::from_secs(3), || {
                (worker.get("/connectors/gen/config")?["rate"] == rate).then_some(())
            });
        }
    }
    // Pause through one, resume through the other.
    assert_eq!(workers[0].call("PUT", "/connectors/gen/pause", None).0, 202);
    workers[1].wait("PAUSED", Duration::from_secs(10), || {
        (workers[1].get("/connectors/gen/status")?["tasks"][0]["state"] == "PAUSED").then_some(())
    });
    assert_eq!(workers[1].call("PUT", "/connectors/gen/resume", None).0, 202);
    workers[0].wait("RUNNING again", Duration::from_secs(10), || running_tasks(&workers[0], &["gen"]));
    // A task restart reaches the worker that runs the task, wherever it is sent.
    for worker in &workers {
        let (code, answer, _) = worker.call("POST", "/connectors/gen/tasks/0/restart", None);
        assert_eq!(code, 204, "{answer}");
    }
    // tasks.max splits the connector anew, over both workers, and back.
    let ids: Vec<String> = workers.iter().map(id_of).collect();
    let config = json!({"connector.class": "datagen", "topic": topic, "rate": "5", "tasks.max": "3"});
    assert_eq!(workers[1].call("PUT", "/connectors/gen/config", Some(&config.to_string())).0, 200);
    workers[0].wait("three tasks over two workers", Duration::from_secs(30), || {
        let tasks = running_tasks(&workers[0], &["gen"])?;
        let counts = counts(&tasks, &ids);
        (tasks.len() == 3 && counts.len() == 2 && balanced(&counts)).then_some(())
    });
    // A restart with includeTasks, sent to either worker, restarts every task where it runs.
    let started =
        |task: &str| -> usize { ids.iter().map(|id| starts(&d.topics[2], id).get(task).copied().unwrap_or(0)).sum() };
    let tasks = ["gen-0", "gen-1", "gen-2"];
    let before: Vec<usize> = tasks.iter().map(|t| started(t)).collect();
    let (code, answer, _) = workers[1].call("POST", "/connectors/gen/restart?includeTasks=true", None);
    assert_eq!(code, 202, "{answer}");
    let states: Vec<&Value> = answer["tasks"].as_array().unwrap().iter().map(|t| &t["state"]).collect();
    assert_eq!(states, [&json!("RESTARTING"); 3], "{answer}");
    workers[0].wait("every task started again", Duration::from_secs(30), || {
        tasks.iter().zip(&before).all(|(t, b)| started(t) > *b).then_some(())
    });
    workers[0].wait("three tasks running", Duration::from_secs(30), || {
        (running_tasks(&workers[0], &["gen"])?.len() == 3).then_some(())
    });
    let config = json!({"connector.class": "datagen", "topic": topic, "rate": "5", "tasks.max": "1"});
    assert_eq!(workers[0].call("PUT", "/connectors/gen/config", Some(&config.to_string())).0, 200);
    for worker in &workers {
        worker.wait("one task again", Duration::from_secs(30), || {
            let tasks = running_tasks(worker, &["gen"])?;
            (tasks.keys().collect::<Vec<_>>() == ["gen-0"]).then_some(())
        });
    }
    assert_never_twice(&d.topics[2], &[]);
}

/// A connector config change restarts each task once, with the task configs generated from the
/// new config, wherever the task runs (Kafka Connect restarts them when the new task configs
/// are committed): counted from the RUNNING statuses in the status topic. Both kinds of change:
/// one that changes the task configs, and one of a host key that leaves them as they were.
#[test]
fn a_config_change_restarts_each_task_once() {
    let d = Distributed::new(&quick_failover(2000));
    let second = d.again(&quick_failover(2000));
    let workers = [d.start(), second.start()];
    let ids: Vec<String> = workers.iter().map(id_of).collect();
    let topic = unique("once");
    let config = |extra: &[(&str, &str)]| {
        let mut config = json!({"connector.class": "datagen", "topic": topic, "rate": "5", "tasks.max": "2"});
        for (key, value) in extra {
            config[*key] = json!(value);
        }
        config
    };
    let body = json!({"name": "once", "config": config(&[])});
    assert_eq!(workers[0].call("POST", "/connectors", Some(&body.to_string())).0, 201);
    // One task on each worker: one of them runs its task without running the connector.
    workers[0].wait("a task on each worker", Duration::from_secs(60), || {
        let tasks = running_tasks(&workers[0], &["once"])?;
        (tasks.len() == 2 && counts(&tasks, &ids).len() == 2).then_some(())
    });
    let started =
        |task: &str| -> usize { ids.iter().map(|id| starts(&d.topics[2], id).get(task).copied().unwrap_or(0)).sum() };
    let tasks = ["once-0", "once-1"];
    for change in [config(&[("rate", "7")]), config(&[("rate", "7"), ("errors.log.enable", "true")])] {
        let before: Vec<usize> = tasks.iter().map(|t| started(t)).collect();
        let (code, answer, _) = workers[1].call("PUT", "/connectors/once/config", Some(&change.to_string()));
        assert_eq!(code, 200, "{answer}");
        workers[0].wait("every task started again", Duration::from_secs(30), || {
            tasks.iter().zip(&before).all(|(t, b)| started(t) > *b).then_some(())
        });
        // A second start would follow within a round or two: give it well over that.
        std::thread::sleep(Duration::from_secs(8));
        let after: Vec<usize> = tasks.iter().map(|t| started(t)).collect();
        let again: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        assert_eq!(again, [1, 1], "starts per task for the change to {change}");
        let running = running_tasks(&workers[0], &["once"]).unwrap_or_default();
        assert_eq!(running.len(), 2, "{running:?}");
    }
    assert_never_twice(&d.topics[2], &[]);
}

#[test]
fn a_worker_stopped_with_sigterm_leaves_the_group_at_once() {
    // A session timeout far longer than the wait below: only leaving the group explains the move.
    let mut slow = quick_failover(0);
    slow.retain(|(k, _)| *k != "session.timeout.ms" && *k != "heartbeat.interval.ms");
    slow.push(("session.timeout.ms", "45000".into()));
    slow.push(("heartbeat.interval.ms", "1000".into()));
    let d = Distributed::new(&slow);
    let second = d.again(&slow);
    let mut workers = [d.start(), second.start()];
    let body = json!({"name": "gen", "config": {"connector.class": "datagen", "topic": unique("term"), "rate": "5", "tasks.max": "2"}});
    assert_eq!(workers[0].call("POST", "/connectors", Some(&body.to_string())).0, 201);
    let ids: Vec<String> = workers.iter().map(id_of).collect();
    workers[0].wait("one task per worker", Duration::from_secs(30), || {
        let tasks = running_tasks(&workers[0], &["gen"])?;
        counts(&tasks, &ids).values().all(|c| *c == 1).then_some(())
    });
    let leaving_log = {
        let status = workers[1].terminate();
        assert!(status.success(), "SIGTERM should end the worker cleanly");
        workers[1].log()
    };
    let stopped_at = now_secs();
    assert!(strip_ansi(&leaving_log).contains("left group"), "{leaving_log}");
    let clock = Instant::now();
    workers[0].wait("both tasks on the remaining worker", Duration::from_secs(20), || {
        let tasks = running_tasks(&workers[0], &["gen"])?;
        tasks.values().all(|w| *w == ids[0]).then_some(())
    });
    println!("SIGTERM to the work moved: {:.1} s (session.timeout.ms=45000)", clock.elapsed().as_secs_f64());
    assert_never_twice(&d.topics[2], &[(ids[1].clone(), stopped_at)]);
}

#[test]
fn a_write_to_a_follower_whose_leader_died_is_answered_409_with_retry() {
    let d = Distributed::new(&quick_failover(2000));
    let second = d.again(&quick_failover(2000));
    let mut workers = [d.start(), second.start()];
    let leader = workers[0].wait("a leader", Duration::from_secs(30), || {
        let led = |w: &Worker| {
            let log = strip_ansi(&w.log());
            let last = log.lines().rev().find(|l| l.contains("joined group"))?.to_string();
            Some(last.contains("as leader"))
        };
        let roles = (led(&workers[0])?, led(&workers[1])?);
        match roles {
            (true, false) => Some(0),
            (false, true) => Some(1),
            _ => None,
        }
    });
    let follower = 1 - leader;
    workers[leader].kill_9();
    // The follower still knows the dead leader until the session times out.
    let body = json!({"name": "late", "config": {"connector.class": "datagen", "topic": unique("late")}});
    let (code, answer, _) = workers[follower].call("POST", "/connectors", Some(&body.to_string()));
    assert_eq!(code, 409, "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("retry"), "{answer}");
    // Once the group notices, the follower leads and the same request succeeds.
    workers[follower].wait("the follower to take over", Duration::from_secs(30), || {
        let (code, _, _) = workers[follower].call("POST", "/connectors", Some(&body.to_string()));
        (code == 201).then_some(())
    });
}

/// Each worker's polls of each task, from the `tick <index>` lines the misbehaver's `tick`
/// behaviour logs: (task index, log timestamp, worker). The timestamps share the machine's clock
/// and have one fixed-width form, so they compare as text.
fn ticks(worker: &str, log: &str) -> Vec<(String, String, String)> {
    strip_ansi(log)
        .lines()
        .filter_map(|line| {
            let (_, after) = line.split_once(" tick ")?;
            let index = after.split_whitespace().next()?.to_string();
            let at = line.split_whitespace().next()?.to_string();
            Some((index, at, worker.to_string()))
        })
        .collect()
}

/// Seconds since midnight of a log timestamp (`2026-12-04T21:07:14.123456Z`).
fn seconds_of(at: &str) -> f64 {
    let time = at.split('T').nth(1).unwrap_or("").trim_end_matches('Z');
    time.split(':').fold(0.0, |total, part| total * 60.0 + part.parse::<f64>().unwrap_or(0.0))
}

#[test]
fn a_task_never_polls_on_two_workers_at_once_across_joins_and_leaves() {
    let settings = quick_failover(0);
    let first = Distributed::new(&settings);
    let mut workers: Vec<(Worker, String)> = Vec::new();
    let started = first.start();
    let id = id_of(&started);
    workers.push((started, id));
    let body = json!({"name": "ticks", "config": {"connector.class": "test-misbehaver", "behaviour": "tick",
        "topic": unique("ticks"), "task.copies": "4", "tasks.max": "4"}});
    assert_eq!(workers[0].0.call("POST", "/connectors", Some(&body.to_string())).0, 201);
    workers[0].0.wait("the four tasks running", Duration::from_secs(60), || running_tasks(&workers[0].0, &["ticks"]));
    let mut ended_logs: Vec<(String, String)> = Vec::new();
    for round in 0..3 {
        // A worker joins while the others run the tasks; then the oldest leaves with SIGTERM.
        let joining = first.again(&settings).start();
        let id = id_of(&joining);
        workers.push((joining, id));
        std::thread::sleep(Duration::from_secs(3));
        let (mut leaving, id) = workers.remove(0);
        let status = leaving.terminate();
        assert!(status.success(), "round {round}: SIGTERM should end the worker cleanly");
        ended_logs.push((id, leaving.log()));
        std::thread::sleep(Duration::from_secs(2));
    }
    let survivor = &workers[workers.len() - 1].0;
    survivor.wait("the four tasks running on the workers left", Duration::from_secs(60), || {
        running_tasks(survivor, &["ticks"])
    });
    std::thread::sleep(Duration::from_secs(1));
    let mut all: Vec<(String, String, String)> = Vec::new();
    for (id, log) in &ended_logs {
        all.extend(ticks(id, log));
    }
    for (worker, id) in &workers {
        all.extend(ticks(id, &worker.log()));
    }
    all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    // A worker's run of a task: ticks less than 150 ms apart (a poll every 20 ms or so). Runs of
    // one task on two workers must not overlap.
    let mut runs: Vec<(String, String, f64, f64)> = Vec::new();
    for (index, at, worker) in &all {
        let t = seconds_of(at);
        match runs.iter_mut().rev().find(|r| r.0 == *index && r.1 == *worker) {
            Some(run) if t - run.3 < 0.15 => run.3 = t,
            _ => runs.push((index.clone(), worker.clone(), t, t)),
        }
    }
    assert!(runs.len() >= 4, "too few runs seen: {runs:?}");
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            assert!(
                !(a.0 == b.0 && a.1 != b.1 && a.2 <= b.3 && b.2 <= a.3),
                "task {} polled on {} ({:.3}..{:.3}) and on {} ({:.3}..{:.3}) at once",
                a.0,
                a.1,
                a.2,
                a.3,
                b.1,
                b.2,
                b.3
            );
        }
    }
}
