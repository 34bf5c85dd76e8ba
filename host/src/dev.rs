//! `wharf dev`: a demo that needs no Kafka installed. It starts librdkafka's in-process mock
//! cluster — a stand-in for a broker that keeps everything in memory — and runs datagen → topic
//! → file sink on a standalone worker.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rdkafka::mocking::MockCluster;

use crate::config::keys::{connector as C, worker as W};
use crate::config::properties::Property;
use crate::config::{ConnectorConfig, Mode, WorkerConfig};
use crate::serve::standalone;

pub struct DevOptions {
    pub plugin_path: Vec<PathBuf>,
    pub dir: PathBuf,
    pub port: u16,
    pub rate: u32,
}

const TOPIC: &str = "wharf-dev-datagen";

pub async fn run(options: DevOptions) -> Result<()> {
    std::fs::create_dir_all(&options.dir)
        .with_context(|| format!("cannot create the demo folder {}", options.dir.display()))?;
    let dir = std::fs::canonicalize(&options.dir)?;
    // The sink's folder holds its output only: the worker's offsets file stays out of its reach.
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create the demo's output folder {}", out_dir.display()))?;
    let output = out_dir.join("datagen.out");
    // A fresh demo each run: the in-memory broker forgets everything, so must the offsets.
    let offsets = dir.join("offsets.json");
    let _ = std::fs::remove_file(&offsets);
    let _ = std::fs::remove_file(&output);

    let cluster = MockCluster::new(1).context("cannot start the in-memory Kafka stand-in")?;
    cluster.create_topic(TOPIC, 3, 1).context("cannot create the demo topic in the in-memory Kafka")?;
    let bootstrap = cluster.bootstrap_servers();

    eprintln!();
    eprintln!("  ************************************************************************");
    eprintln!("  *  wharf dev: Kafka here is an IN-MEMORY STAND-IN (librdkafka's mock   *");
    eprintln!("  *  cluster) at {bootstrap:<20}. It is not a real broker and KEEPS  *");
    eprintln!("  *  NOTHING: every record is gone when this process stops.             *");
    eprintln!("  *  For a real broker: scripts/kafka start, then wharf standalone.     *");
    eprintln!("  ************************************************************************");
    eprintln!();

    let plugin_path = options.plugin_path.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(",");
    let worker_props = [
        (W::BOOTSTRAP_SERVERS.name, bootstrap.clone()),
        (W::PLUGIN_PATH.name, plugin_path),
        (W::LISTENERS.name, format!("http://127.0.0.1:{}", options.port)),
        (W::OFFSET_STORAGE_FILE_FILENAME.name, offsets.display().to_string()),
        (W::OFFSET_FLUSH_INTERVAL_MS.name, "2000".into()),
        (W::WASM_CEILING_FS_WRITE.name, out_dir.display().to_string()),
    ];
    let props: Vec<Property> = worker_props
        .into_iter()
        .enumerate()
        .map(|(i, (k, v))| Property { key: k.into(), value: v, line: i + 1 })
        .collect();
    let worker = WorkerConfig::from_properties(&props, "wharf dev settings", Mode::Standalone)?;

    let pairs = |items: &[(&str, String)]| items.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<Vec<_>>();
    let connectors = vec![
        ConnectorConfig::from_pairs(
            pairs(&[
                (C::NAME.name, "dev-datagen".into()),
                (C::CONNECTOR_CLASS.name, "datagen".into()),
                ("topic", TOPIC.into()),
                ("rate", options.rate.to_string()),
                ("value.size", "64".into()),
                ("key.size", "8".into()),
            ]),
            "wharf dev",
            &worker.wasm,
        )?,
        ConnectorConfig::from_pairs(
            pairs(&[
                (C::NAME.name, "dev-file-sink".into()),
                (C::CONNECTOR_CLASS.name, "file-sink".into()),
                (C::TOPICS.name, TOPIC.into()),
                ("file", output.display().to_string()),
                (C::WASM_FS_WRITE.name, out_dir.display().to_string()),
            ]),
            "wharf dev",
            &worker.wasm,
        )?,
    ];

    let port = options.port;
    let rate = options.rate;
    let on_ready: crate::serve::OnReady = Box::new(move |_worker| {
        eprintln!();
        eprintln!("  Wharf is running: datagen ({rate} records/s) → topic {TOPIC} → file sink");
        eprintln!("    statuses:  curl -s http://127.0.0.1:{port}/connectors?expand=status");
        eprintln!("    output:    tail -f {}", output.display());
        eprintln!("    stop:      Ctrl-C");
        eprintln!();
    });
    let result = standalone::run(worker, connectors, Some(on_ready)).await;
    drop(cluster);
    result
}
