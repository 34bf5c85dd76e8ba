//! `wharf bench boundary`: how fast records cross the WebAssembly boundary, without Kafka, at
//! several batch sizes, with the sandbox's limits (call deadlines and a memory cap) and without.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::WasmLimits;
use crate::runtime::{Grants, Plugin, Runtime};

const BATCH_SIZES: [u32; 4] = [1, 100, 1000, 10000];

/// Records per second a source plugin returns from `poll`, for each batch size.
fn measure(plugin_file: &Path, call_deadlines: bool, capped: bool, seconds: f64) -> Result<Vec<f64>> {
    let cache = crate::config::worker::default_cache_dir();
    let runtime = Runtime::with_deadlines(cache, call_deadlines)?;
    let (component, _) = runtime.load_component(plugin_file)?;
    let plugin = Plugin::inspect(&runtime, component, plugin_file.to_path_buf())?;
    let config: Vec<(String, String)> = [("topic", "bench"), ("value.size", "100"), ("count", "-1")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
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
            records += instance.poll().map_err(anyhow::Error::msg)?.len();
        }
        rates.push(records as f64 / started.elapsed().as_secs_f64());
        instance.close().map_err(anyhow::Error::msg)?;
    }
    Ok(rates)
}

pub fn boundary(plugin_file: &Path, seconds: f64) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "Records/s returned by `poll` of {} (100-byte values), {seconds} s per cell, {cores} core(s), one thread",
        plugin_file.display()
    );
    let with = measure(plugin_file, true, true, seconds).context("with limits")?;
    let without = measure(plugin_file, false, false, seconds).context("without limits")?;
    println!();
    println!("| batch | with deadlines + memory cap | without | with / without |");
    println!("|---:|---:|---:|---:|");
    for (i, batch) in BATCH_SIZES.iter().enumerate() {
        println!("| {batch} | {:.0} | {:.0} | {:.2} |", with[i], without[i], with[i] / without[i]);
    }
    Ok(())
}
