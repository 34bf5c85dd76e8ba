use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use wharf::config::{ConnectorConfig, Mode, WorkerConfig};
use wharf::logging::LogFormat;

/// Wharf: a Kafka Connect-style connector host whose connectors are WebAssembly components.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one worker with connectors from properties files; source offsets in a local file.
    Standalone {
        /// Worker properties (bootstrap.servers, plugin.path, offset.storage.file.filename, …).
        worker: PathBuf,
        /// Connector properties files (name, connector.class, tasks.max, plugin keys).
        connectors: Vec<PathBuf>,
    },
    /// Run a worker whose state lives in Kafka topics; connectors are managed over REST.
    Distributed {
        /// Worker properties.
        worker: PathBuf,
    },
    /// A demo with no Kafka needed: an in-memory Kafka stand-in, datagen → topic → file sink.
    Dev {
        /// Folders holding the plugins (.wasm).
        #[arg(long = "plugin-path", default_value = "target/plugins")]
        plugin_path: Vec<PathBuf>,
        /// Folder for the demo's output file and offsets.
        #[arg(long, default_value = "wharf-dev")]
        dir: PathBuf,
        /// REST API port on 127.0.0.1.
        #[arg(long, default_value_t = 8083)]
        port: u16,
        /// Records per second that datagen makes.
        #[arg(long, default_value_t = 100)]
        rate: u32,
    },
    /// Measurements that need no Kafka.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Prints a line for wharf.rest.basic.auth.credentials.file: NAME and a salted hash of the
    /// password read from the first line of standard input (never the password itself).
    RestCredential {
        /// The user's name.
        name: String,
    },
    /// Work with plugin files.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Compile seconds and records/s of source plugins compiled at each of the code
    /// generator's optimisation levels.
    Tiers {
        /// Source plugins that produce records endlessly with `count=-1` (datagen and the
        /// orders examples do).
        #[arg(long = "plugin", required = true)]
        plugins: Vec<PathBuf>,
        /// Seconds of polling per measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
    /// Records/s across the WebAssembly boundary at batch sizes 1 to 10000, with and without the
    /// sandbox's limits.
    Boundary {
        /// A source plugin that produces records endlessly (datagen does).
        #[arg(long, default_value = "target/plugins/datagen.wasm")]
        plugin: PathBuf,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// A transform plugin to time too, on datagen's structs (test-transform's settings).
        #[arg(long)]
        transform: Option<PathBuf>,
    },
    /// How long one GET /metrics takes to write for a worker that runs this many tasks, each
    /// with counts of every kind.
    Scrape {
        #[arg(long, default_value_t = 1000)]
        tasks: u32,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Print what Wharf sees in a plugin: kind, name, version, configuration definition.
    Inspect {
        /// The plugin component (.wasm).
        file: PathBuf,
    },
    /// Compile plugins into a compile cache ahead of time, so that workers using that cache
    /// (`wasm.cache.dir`) start them without compiling: large Python and JavaScript components
    /// take seconds each.
    Compile {
        /// The cache folder, as a worker's `wasm.cache.dir`.
        #[arg(long)]
        cache_dir: PathBuf,
        /// Plugin files (.wasm), or folders whose .wasm files to compile.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Files compiled at once (as a worker's `wasm.compile.threads`).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
        threads: u16,
    },
    /// Write a new plugin project that builds as it is (`./build.sh`).
    New {
        /// The language to write it in.
        #[arg(long, value_enum)]
        lang: wharf::scaffold::Lang,
        /// Source (into Kafka), sink (out of Kafka), or transform (changes or drops records on
        /// their way, named in a connector's transforms).
        #[arg(long, value_enum)]
        kind: wharf::scaffold::Kind,
        /// The plugin's name, which connectors use as connector.class (a transform's as
        /// transforms.<alias>.type).
        name: String,
        /// Where to write it (default: a new folder named after the plugin).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    // With RUST_BACKTRACE set, errors (wasmtime's, anyhow's) would capture a backtrace of the host
    // each, and one handed to a plugin (an I/O error's debug string) would carry kilobytes of the
    // host's internals into the plugin's messages. RUST_LIB_BACKTRACE governs errors only: panics
    // keep their backtraces. Set before any thread starts.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    let cli = Cli::parse();
    wharf::logging::install();
    // Workers compile plugins in processes of this executable (`wharf plugin compile`).
    if let Ok(executable) = std::env::current_exe() {
        wharf::runtime::engine::compile_in_processes_of(executable);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match cli.command {
        Command::Standalone { worker, connectors } => {
            let mut config = WorkerConfig::from_file(&worker, Mode::Standalone)?;
            wharf::logging::set_format(if config.log_json { LogFormat::Json } else { LogFormat::Text });
            // Connector files may hold secrets of every connector: no grant may reach them.
            for file in &connectors {
                config.wasm.ceiling.protect(file, "connector config file");
            }
            let connectors = connectors
                .iter()
                .map(|path| ConnectorConfig::from_file(path, &config.wasm, &config.config_providers))
                .collect::<Result<Vec<_>, _>>()?;
            runtime.block_on(wharf::serve::standalone::run(config, connectors, None))
        }
        Command::Distributed { worker } => {
            let config = WorkerConfig::from_file(&worker, Mode::Distributed)?;
            wharf::logging::set_format(if config.log_json { LogFormat::Json } else { LogFormat::Text });
            runtime.block_on(wharf::serve::distributed::run(config))
        }
        Command::Dev { plugin_path, dir, port, rate } => {
            runtime.block_on(wharf::dev::run(wharf::dev::DevOptions { plugin_path, dir, port, rate }))
        }
        Command::RestCredential { name } => {
            if name.is_empty() || name.contains(['=', ':', ' ', '#', '!']) {
                anyhow::bail!("the name {name:?} cannot be a user of HTTP Basic authentication: leave out '=', ':', spaces, '#' and '!'");
            }
            let mut password = String::new();
            std::io::stdin().read_line(&mut password)?;
            let password = password.trim_end_matches(['\n', '\r']);
            if password.is_empty() {
                anyhow::bail!("no password on standard input: echo the password into `wharf rest-credential {name}`");
            }
            let hash = wharf::rest::auth::hash_password(password).map_err(|e| anyhow::anyhow!(e))?;
            println!("{name}={hash}");
            Ok(())
        }
        Command::Plugin { command: PluginCommand::Inspect { file } } => inspect(&file),
        Command::Plugin { command: PluginCommand::Compile { cache_dir, paths, threads } } => {
            compile(cache_dir, &paths, usize::from(threads))
        }
        Command::Plugin { command: PluginCommand::New { lang, kind, name, dir } } => {
            let dir = wharf::scaffold::create(lang, kind, &name, dir.as_deref())?;
            println!(
                "wrote {} ({lang:?} {kind:?} plugin {name}); build it with {}/build.sh",
                dir.display(),
                dir.display()
            );
            Ok(())
        }
        Command::Bench { command: BenchCommand::Boundary { plugin, seconds, transform } } => {
            wharf::bench::boundary(&plugin, seconds, transform.as_deref())
        }
        Command::Bench { command: BenchCommand::Tiers { plugins, seconds } } => wharf::bench::tiers(&plugins, seconds),
        Command::Bench { command: BenchCommand::Scrape { tasks } } => {
            wharf::bench::scrape(tasks);
            Ok(())
        }
    }
}

fn compile(cache_dir: PathBuf, paths: &[PathBuf], threads: usize) -> Result<()> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).with_context(|| format!("cannot list {}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let runtime = wharf::runtime::Runtime::new(cache_dir.clone())?;
    if runtime.cache_dir().is_none() {
        anyhow::bail!("{} cannot be used as a compile cache (see the warning above)", cache_dir.display());
    }
    // Each file on one of `threads` threads, taking the next file when done.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicUsize::new(0);
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(files.len()) {
            scope.spawn(|| loop {
                let Some(file) = files.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) else { return };
                let began = std::time::Instant::now();
                match wharf::runtime::registry::compile_into_cache(&runtime, file) {
                    Ok(wharf::runtime::LoadedFrom::Cache) => println!("{}: compiled already", file.display()),
                    Ok(wharf::runtime::LoadedFrom::Compiled) => {
                        println!("{}: compiled in {:.1} s", file.display(), began.elapsed().as_secs_f64())
                    }
                    Err(e) => {
                        eprintln!("{}: {e:#}", file.display());
                        failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner();
    if failed > 0 {
        anyhow::bail!("{failed} of {} plugin file(s) could not be compiled (see above)", files.len());
    }
    println!(
        "{} plugin file(s) ready in {} ({:.1} s, {threads} at once)",
        files.len(),
        cache_dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn inspect(file: &std::path::Path) -> Result<()> {
    let cache = wharf::config::worker::default_cache_dir();
    let runtime = wharf::runtime::Runtime::new(cache)?;
    let (component, _) = runtime.load_component(file)?;
    let plugin = wharf::runtime::Plugin::inspect(&runtime, component, file.to_path_buf())?;
    let info = &plugin.info;
    use std::fmt::Write as _;
    let mut text = String::new();
    writeln!(text, "file:        {}", file.display())?;
    writeln!(text, "kind:        {:?}", info.kind)?;
    writeln!(text, "name:        {}", info.name)?;
    writeln!(text, "version:     {}", info.version)?;
    writeln!(text, "description: {}", info.description)?;
    let imports: Vec<String> =
        plugin.component().component_type().imports(&runtime.engine).map(|(name, _)| name.to_string()).collect();
    writeln!(text, "imports:     {}", if imports.is_empty() { "nothing".to_string() } else { imports.join(", ") })?;
    writeln!(text, "config:")?;
    for key in &info.config {
        let default = match (&key.default_value, key.required) {
            (_, true) => "required".to_string(),
            (Some(d), false) => format!("default {d:?}"),
            (None, false) => "optional".to_string(),
        };
        writeln!(
            text,
            "  {:<24} {:<8} {:<6} {default}: {}",
            key.name, key.type_name, key.importance, key.documentation
        )?;
    }
    if info.kind == wharf_connect::model::PluginKind::Transform {
        writeln!(text, "grants:      those of the connector whose transforms use it")?;
    } else if info.grants.is_empty() && info.connections.is_empty() {
        writeln!(text, "grants:      none declared (the connector config grants with wasm.* keys)")?;
    } else {
        writeln!(text, "grants (what config values name; granted within the worker's wasm.ceiling.*):")?;
        for grant in &info.grants {
            writeln!(text, "  {:<24} {}", grant.key, grant.names.describe())?;
        }
        for connection in &info.connections {
            writeln!(text, "  {}", connection.describe())?;
        }
    }
    // A reader that stops early (`| head`) is not an error.
    match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
