//! `wharf bench boundary`: how fast records cross the WebAssembly boundary, without Kafka, at
//! several batch sizes, with the sandbox's limits (call deadlines and a memory cap) and without;
//! with `--transform`, what a transform plugin costs per record beside Wharf's native transforms.
//! `wharf bench tiers`: what compiling a component costs at each of the code generator's
//! optimisation levels, and what its code then does per second. `wharf bench scrape`: what one
//! `GET /metrics` costs a worker of many tasks.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::WasmLimits;
use crate::runtime::{Grants, Plugin, Runtime};

const BATCH_SIZES: [u32; 4] = [1, 100, 1000, 10000];

/// What the records' values are, and what is done with them after `poll`.
#[derive(Clone, Copy)]
enum Workload {
    /// 100-byte values, as bytes.
    Bytes,
    /// datagen's struct of ten fields (`value.format=struct`), as data.
    Struct,
    /// The same structs, each then written by JsonConverter (with schemas).
    StructAsJson,
}

/// Records per second a source plugin returns from `poll`, for each batch size.
fn measure(
    plugin_file: &Path,
    call_deadlines: bool,
    capped: bool,
    seconds: f64,
    workload: Workload,
) -> Result<Vec<f64>> {
    let cache = crate::config::worker::default_cache_dir();
    let runtime = Runtime::with_deadlines(cache, call_deadlines)?;
    let (component, _) = runtime.load_component(plugin_file)?;
    let plugin = Plugin::inspect(&runtime, component, plugin_file.to_path_buf())?;
    let format = match workload {
        Workload::Bytes => "bytes",
        Workload::Struct | Workload::StructAsJson => "struct",
    };
    let config: Vec<(String, String)> =
        [("topic", "bench"), ("value.size", "100"), ("count", "-1"), ("value.format", format)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    let mut json = wharf_connect::convert::Converter::new(
        wharf_connect::convert::Role::Value,
        "org.apache.kafka.connect.json.JsonConverter",
        &wharf_connect::convert::Settings::under("value.converter", &[]),
    )?;
    let mut rates = Vec::new();
    for batch in BATCH_SIZES {
        let limits = WasmLimits {
            memory_max_bytes: if capped { WasmLimits::default().memory_max_bytes } else { usize::MAX },
            call_timeout: Duration::from_secs(5),
            max_records_per_call: batch,
            max_bytes_per_call: usize::MAX,
            ..WasmLimits::default()
        };
        let grants = Grants::none(&format!("bench-{batch}"), &limits);
        let mut instance = plugin.open_source(&runtime, grants, &config, &limits).map_err(anyhow::Error::msg)?;
        let run_for = Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let mut records = 0usize;
        while started.elapsed() < run_for {
            let polled = instance.poll().map_err(anyhow::Error::msg)?;
            records += polled.len();
            if let Workload::StructAsJson = workload {
                for record in &polled {
                    if let Some(wharf_connect::model::Part::Data(data)) = &record.value {
                        std::hint::black_box(json.from_data(data)?);
                    }
                }
            }
        }
        rates.push(records as f64 / started.elapsed().as_secs_f64());
        instance.close().map_err(anyhow::Error::msg)?;
    }
    Ok(rates)
}

/// Records/s through a transform plugin's `apply` at each batch size, and through a native chain
/// of Connect's InsertField and MaskField for comparison: datagen's ten-field structs, polled once
/// per batch size and given again and again (cloning a batch is timed apart and taken off).
fn measure_transform(source_file: &Path, transform_file: &Path, seconds: f64) -> Result<Vec<(f64, f64)>> {
    let cache = crate::config::worker::default_cache_dir();
    let runtime = Runtime::with_deadlines(cache, true)?;
    let load = |file: &Path| -> Result<Plugin> {
        let (component, _) = runtime.load_component(file)?;
        Plugin::inspect(&runtime, component, file.to_path_buf())
    };
    let source = load(source_file)?;
    let transform = load(transform_file)?;
    let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let source_config = pairs(&[("topic", "bench"), ("count", "-1"), ("value.format", "struct")]);
    let transform_config = pairs(&[("field", "name"), ("drop.containing", ""), ("fail.containing", "")]);
    let native = wharf_connect::transform::Chain::of_connector(&pairs(&[
        ("transforms", "insert,mask"),
        ("transforms.insert.type", "org.apache.kafka.connect.transforms.InsertField$Value"),
        ("transforms.insert.static.field", "origin"),
        ("transforms.insert.static.value", "bench"),
        ("transforms.mask.type", "org.apache.kafka.connect.transforms.MaskField$Value"),
        ("transforms.mask.fields", "text"),
    ]))
    .map_err(|problems| anyhow::anyhow!("{problems:?}"))?;
    let mut rates = Vec::new();
    for batch in BATCH_SIZES {
        let limits =
            WasmLimits { max_records_per_call: batch, max_bytes_per_call: usize::MAX, ..WasmLimits::default() };
        let mut polling = source
            .open_source(&runtime, Grants::none("bench-source", &limits), &source_config, &limits)
            .map_err(anyhow::Error::msg)?;
        let records: Vec<wharf_connect::model::ConnectRecord> = polling
            .poll()
            .map_err(anyhow::Error::msg)?
            .into_iter()
            .map(wharf_connect::model::ConnectRecord::from)
            .collect();
        polling.close().map_err(anyhow::Error::msg)?;
        let mut instance = transform
            .open_transform(&runtime, Grants::none("bench-transform", &limits), &transform_config, &limits)
            .map_err(anyhow::Error::msg)?;
        let run_for = Duration::from_secs_f64(seconds);
        let (mut through_plugin, mut plugin_time) = (0usize, Duration::ZERO);
        let started = Instant::now();
        while started.elapsed() < run_for {
            let given = records.clone();
            let at = Instant::now();
            through_plugin += std::hint::black_box(instance.apply(given).map_err(anyhow::Error::msg)?).len();
            plugin_time += at.elapsed();
        }
        instance.close().map_err(anyhow::Error::msg)?;
        let (mut through_native, mut native_time) = (0usize, Duration::ZERO);
        let started = Instant::now();
        while started.elapsed() < run_for {
            let given = records.clone();
            let at = Instant::now();
            for record in given {
                std::hint::black_box(native.apply(record).map_err(|e| anyhow::anyhow!(e.message))?);
                through_native += 1;
            }
            native_time += at.elapsed();
        }
        rates.push((
            through_plugin as f64 / plugin_time.as_secs_f64(),
            through_native as f64 / native_time.as_secs_f64(),
        ));
    }
    Ok(rates)
}

pub fn boundary(plugin_file: &Path, seconds: f64, transform: Option<&Path>) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "Records/s returned by `poll` of {} (100-byte values), {seconds} s per cell, {cores} core(s), one thread",
        plugin_file.display()
    );
    let with = measure(plugin_file, true, true, seconds, Workload::Bytes).context("with limits")?;
    let without = measure(plugin_file, false, false, seconds, Workload::Bytes).context("without limits")?;
    println!();
    println!("| batch | with deadlines + memory cap | without | with / without |");
    println!("|---:|---:|---:|---:|");
    for (i, batch) in BATCH_SIZES.iter().enumerate() {
        println!("| {batch} | {:.0} | {:.0} | {:.2} |", with[i], without[i], with[i] / without[i]);
    }
    // The same plugin with a ten-field struct per record (Connect data, its schema once a batch),
    // with limits, and then through JsonConverter as a worker would write it.
    let structs = measure(plugin_file, true, true, seconds, Workload::Struct).context("structs")?;
    let as_json = measure(plugin_file, true, true, seconds, Workload::StructAsJson).context("structs as JSON")?;
    println!();
    println!("| batch | bytes, records/s | 10-field struct, records/s | struct / bytes | µs per struct record | struct + JsonConverter, records/s |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (i, batch) in BATCH_SIZES.iter().enumerate() {
        println!(
            "| {batch} | {:.0} | {:.0} | {:.2} | {:.2} | {:.0} |",
            with[i],
            structs[i],
            structs[i] / with[i],
            1e6 / structs[i],
            as_json[i]
        );
    }
    if let Some(transform) = transform {
        let rates = measure_transform(plugin_file, transform, seconds).context("transform plugin")?;
        println!();
        println!(
            "Transforms on the same structs: {} (upper-casing one field) against Wharf's native InsertField and MaskField",
            transform.display()
        );
        println!();
        println!(
            "| batch | plugin transform, records/s | µs per record | native chain of two, records/s | µs per record |"
        );
        println!("|---:|---:|---:|---:|---:|");
        for (batch, (plugin, native)) in BATCH_SIZES.iter().zip(rates) {
            println!("| {batch} | {plugin:.0} | {:.2} | {native:.0} | {:.2} |", 1e6 / plugin, 1e6 / native);
        }
    }
    Ok(())
}

/// Compile seconds and records/s of `poll` (batches of 100, `seconds` long) of each source
/// plugin, compiled at each Cranelift optimisation level.
pub fn tiers(plugins: &[std::path::PathBuf], seconds: f64) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("Compiling at each optimisation level ({cores} core(s), no compile cache), then `poll` in batches of 100 for {seconds} s");
    println!();
    println!("| plugin | level | compile, s | records/s | records/s / Speed's |");
    println!("|---|---|---:|---:|---:|");
    for file in plugins {
        let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let mut speed_rate = None;
        for (label, level) in [("Speed", wasmtime::OptLevel::Speed), ("None", wasmtime::OptLevel::None)] {
            let cache = std::env::temp_dir().join(format!("wharf-tiers-{}", std::process::id()));
            let runtime = Runtime::with_opt_level(cache.clone(), level)?;
            let started = Instant::now();
            let component = wasmtime::component::Component::new(&runtime.engine, &bytes)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("cannot compile {}", file.display()))?;
            let compile = started.elapsed().as_secs_f64();
            let plugin = Plugin::inspect(&runtime, component, file.clone())?;
            let config: Vec<(String, String)> =
                [("topic", "bench"), ("count", "-1")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let limits = WasmLimits {
                call_timeout: Duration::from_secs(30),
                max_records_per_call: 100,
                max_bytes_per_call: usize::MAX,
                ..WasmLimits::default()
            };
            let mut instance = plugin
                .open_source(&runtime, Grants::none("bench-tiers", &limits), &config, &limits)
                .map_err(anyhow::Error::msg)?;
            let run_for = Duration::from_secs_f64(seconds);
            let (started, mut records) = (Instant::now(), 0usize);
            while started.elapsed() < run_for {
                records += instance.poll().map_err(anyhow::Error::msg)?.len();
            }
            let rate = records as f64 / started.elapsed().as_secs_f64();
            instance.close().map_err(anyhow::Error::msg)?;
            let _ = std::fs::remove_dir_all(&cache);
            let base = *speed_rate.get_or_insert(rate);
            println!("| {name} | {label} | {compile:.1} | {rate:.0} | {:.2} |", rate / base);
        }
    }
    Ok(())
}

/// Times writing one scrape of a worker that runs `tasks` tasks (ten per connector, half of the
/// connectors sources), each with counts of every kind, over 20 scrapes; prints the median and
/// the size of the text.
pub fn scrape(tasks: u32) {
    use crate::metrics::{self, exposition::Format, tasks::TaskRegistry};
    use wharf_connect::model::{ConnectorKind, ConnectorStatus, State, Status};
    let registry = TaskRegistry::default();
    let status = |state: State| Status {
        state,
        worker_id: "bench:8083".into(),
        trace: None,
        records_skipped: 0,
        generation: 1,
        version: Some("1.0.0".into()),
        auto_restarts: 0,
        restartable: true,
    };
    let mut connectors = Vec::new();
    for c in 0..tasks.div_ceil(10) {
        let name = format!("connector-{c}");
        let kind = if c % 2 == 0 { ConnectorKind::Source } else { ConnectorKind::Sink };
        let ids: Vec<u32> = (0..10).filter(|t| c * 10 + t < tasks).collect();
        for id in &ids {
            let counters = registry.register(&name, *id, kind);
            metrics::tasks::TaskCounters::add(&counters.read, 1000);
            counters.batch_time.record_time(Duration::from_micros(300));
            counters.batch_size.record(100);
            counters.commit_time.record_time(Duration::from_millis(3));
            counters.plugin.record(
                "poll",
                Duration::from_micros(250),
                metrics::plugin_calls::Ending::Returned,
                1 << 22,
            );
            counters.plugin.record(
                "commit",
                Duration::from_micros(90),
                metrics::plugin_calls::Ending::Returned,
                1 << 22,
            );
        }
        connectors.push(metrics::ConnectorView {
            class: "datagen".into(),
            kind: Some(kind),
            status: Some(ConnectorStatus {
                name: name.clone(),
                kind: Some(kind),
                connector: status(State::Running),
                tasks: ids.iter().map(|id| (*id, status(State::Running))).collect(),
            }),
            name,
        });
    }
    let view = metrics::WorkerView {
        worker_id: "bench:8083".into(),
        version: "4.1.1".into(),
        commit: "bench".into(),
        started_unix_ms: 0,
        distributed: false,
        connectors,
        tasks: registry.all(),
        startups: Default::default(),
        rebalance: None,
        plugin_loads: Default::default(),
    };
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..20 {
        let started = Instant::now();
        bytes = metrics::render(&view, Format::Text).len();
        times.push(started.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "GET /metrics of {tasks} tasks: {:.1} ms to write (median of {}), {:.1} MiB of text",
        median.as_secs_f64() * 1000.0,
        times.len(),
        bytes as f64 / (1024.0 * 1024.0)
    );
}
