//! What one plugin instance may touch: its own store, a memory cap, the folders granted in its
//! connector config and nothing else, and the `host` interface.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;

use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::sockets::WasiSocketsCtxView;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::{wit, wit_errant, wit_host, wit_progress, wit_transactions};
use super::http_out::HttpGrant;
use super::network::{self, socket_room};
use super::plugin_log::{LogLevel, PluginLog};
use super::stderr::StderrTail;
use super::transactions::End;
use super::wit_convert::{offset_map_from_wit, offset_map_to_wit};
use crate::config::{FolderGrant, WasmLimits};
use crate::sync::Unpoisoned;
use wharf_connect::model::OffsetMap;

/// Looks up committed source offsets of the task's connector.
pub type OffsetLookup = Arc<dyn Fn(&OffsetMap) -> Option<OffsetMap> + Send + Sync>;

/// Everything a plugin instance is given.
pub struct Grants {
    /// `connector-name` or `connector-name-N`, used in log lines.
    pub label: String,
    pub folders: Vec<FolderGrant>,
    /// `host:port` addresses the plugin may open TCP connections to.
    pub connect: Vec<String>,
    /// `host:port` authorities the plugin may send HTTP requests to (wasi:http).
    pub http: Vec<String>,
    /// Across all of the instance's linear memories.
    pub memory_max_bytes: usize,
    /// Entries of the instance's resource table: sockets, streams, pollables, open files.
    pub max_host_handles: usize,
    /// `wasm.log.line.max.bytes` and `wasm.log.lines.per.second`.
    pub log_line_max_bytes: usize,
    pub log_lines_per_second: u32,
    /// `wasm.fs.inline`: file system calls block the calling (task) thread instead of going
    /// through the I/O runtime's blocking pool.
    pub fs_inline: bool,
    pub offsets: Option<OffsetLookup>,
    /// The connector's resolved secrets, kept out of the plugin's log lines.
    pub secrets: crate::config::providers::Secrets,
    /// `wasm.max.sockets.per.worker`: past this many sockets in the worker, a plugin's connect
    /// or HTTP request is refused.
    pub max_sockets: usize,
    /// What the certificates of the servers the connector's config names must prove, when the
    /// plugin speaks TLS to them (`wasi:tls`); other servers' must chain to the public
    /// authorities and name the server.
    pub tls: Vec<crate::config::connector::ServerTls>,
    /// Told of every call into the instance, its `open` included, and keeper of the metrics
    /// the plugin registers (the worker's metrics); none for instances outside a task.
    pub observer: Option<Arc<dyn TaskObserver>>,
    /// The task defines its own transactions (`transaction.boundary=connector` on a worker with
    /// exactly-once source support): its `transaction-context` requests act.
    pub defines_transactions: bool,
}

impl Grants {
    /// No folders, no network, no offsets: for connector calls and measurements.
    pub fn none(label: &str, limits: &WasmLimits) -> Self {
        Grants {
            label: label.to_string(),
            folders: Vec::new(),
            connect: Vec::new(),
            http: Vec::new(),
            memory_max_bytes: limits.memory_max_bytes,
            max_host_handles: limits.max_host_handles,
            log_line_max_bytes: limits.log_line_max_bytes,
            log_lines_per_second: limits.log_lines_per_second,
            fs_inline: limits.fs_inline,
            offsets: None,
            secrets: Default::default(),
            // Such an instance has no network at all.
            max_sockets: 0,
            tls: Vec::new(),
            observer: None,
            defines_transactions: false,
        }
    }
}

pub struct TaskState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) memory: MemoryCap,
    log: PluginLog,
    offsets: Option<OffsetLookup>,
    stderr: StderrTail,
    http_ctx: WasiHttpCtx,
    http_grant: HttpGrant,
    tls: wasmtime_wasi_tls::WasiTlsCtx,
    /// Whether the engine enforces call deadlines (see `Runtime::call_deadlines`).
    pub(crate) call_deadlines: bool,
    /// The runtime whose timers and I/O the instance's WASI waits use (`Runtime::io`).
    pub(crate) io: Option<tokio::runtime::Handle>,
    /// The call that ran out of time and was given up half-way, after which the instance is not
    /// entered again.
    pub(crate) abandoned: Option<&'static str>,
    /// The call that trapped, after which the instance is not entered again.
    pub(crate) trapped: Option<&'static str>,
    /// The host names of the `wasm.net.connect` grants: the only names the plugin may look up.
    lookup_names: Vec<String>,
    /// `wasm.max.sockets.per.worker`.
    max_sockets: usize,
    /// A sink's `put` under way: its records, and what the plugin reported of them.
    pub(crate) putting: Option<Putting>,
    /// Whether reported records are skipped (`errors.tolerance=all`) rather than failing the
    /// task, for the answer `errant-records.report` gives.
    pub(crate) tolerate_errant: bool,
    /// The last line the plugin reported through `progress.report`, until the task takes it.
    progress: Option<String>,
    /// Told of every call into the plugin once it ended, and keeper of the plugin's own
    /// metrics (the worker's metrics).
    pub(crate) observer: Option<Arc<dyn TaskObserver>>,
    /// What the plugin asked of its transactions (`transaction-context`, 0.1.8) since the host
    /// last read it.
    pub(crate) transactions: super::transactions::TransactionRequests,
}

/// What became of one call into a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// It returned (an error the plugin returned counts as returned).
    Returned,
    /// It ran past `wasm.call.timeout.ms`.
    DeadlineHit,
    /// It trapped, or broke a limit of the sandbox.
    Trapped,
}

/// Told of each call into a task's plugin instance as it ends: which call, how long it took,
/// what became of it, and the bytes of linear memory the instance holds after it; and keeper of
/// the metrics the plugin registers of its own (`metrics`, contract 0.1.7). Called on the task's
/// thread; it must be cheap.
pub trait TaskObserver: Send + Sync {
    fn call_ended(&self, call: &'static str, took: std::time::Duration, outcome: CallOutcome, memory_bytes: usize);

    /// The plugin registers a metric: its handle, or what is wrong with it.
    fn register_metric(&self, metric: PluginMetric) -> Result<u32, String>;

    /// The plugin records values into the metrics it registered, by handle.
    fn record_metrics(&self, values: &[(u32, f64)]);

    /// Records crossed the sandbox's boundary: a source's `poll` returned them, or a sink's
    /// `put` was handed them; `bytes` as `wasm.max.bytes.per.call` counts them.
    fn crossed(&self, records: usize, bytes: usize);

    /// The host refused the plugin something its grants do not allow (a connect, a name
    /// lookup, an HTTP request, a socket past the worker's budget).
    fn refused(&self);
}

/// A metric a plugin registers (`metrics.register`), as it gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginMetric {
    pub name: String,
    pub description: String,
    pub kind: PluginMetricKind,
    pub tags: Vec<(String, String)>,
    pub buckets: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginMetricKind {
    Counter,
    Gauge,
    Histogram,
}

/// The records of the `put` under way, by topic (an index into `topics`), partition and offset,
/// and the records the plugin reported as errant (at most one report per record).
#[derive(Default)]
pub(crate) struct Putting {
    pub topics: Vec<String>,
    pub records: Vec<(u32, i32, i64)>,
    pub reported: Vec<ErrantReport>,
}

/// A record a sink reported it could not write, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrantReport {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub reason: String,
}

/// The longest reason of one errant report the host keeps; the rest is cut.
const MAX_ERRANT_REASON_BYTES: usize = 8 << 10;

/// The longest progress line the host keeps (`progress.report`); the rest is cut.
pub const MAX_PROGRESS_BYTES: usize = 1024;

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut_to(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

impl Putting {
    /// Notes the records of a batch about to be put.
    pub(crate) fn of<'a>(records: impl Iterator<Item = (&'a str, i32, i64)>) -> Self {
        let mut putting = Putting::default();
        for (topic, partition, offset) in records {
            let index = match putting.topics.iter().rposition(|t| t == topic) {
                Some(i) => i,
                None => {
                    putting.topics.push(topic.to_string());
                    putting.topics.len() - 1
                }
            };
            putting.records.push((index as u32, partition, offset));
        }
        putting
    }
}

/// Source partitions one `committed-offsets` call may ask for: the lookups run in host code.
pub const MAX_OFFSET_LOOKUPS: usize = 10_000;

/// Core instances, linear memories and tables one plugin instance may create: a component is a
/// handful of core modules, and these bound the host's bookkeeping for one that is not.
const MAX_CORE_INSTANCES: usize = 256;
const MAX_MEMORIES: usize = 64;
const MAX_TABLES: usize = 256;
/// Table elements across all of an instance's tables (host memory: function references).
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

/// Caps linear memory across all of an instance's memories (a component of many core modules
/// gets one budget, not one per memory) and remembers a refused growth, to explain the trap that
/// follows.
pub(crate) struct MemoryCap {
    pub max_bytes: usize,
    pub refused: Option<usize>,
    /// Bytes of every memory so far.
    total_bytes: usize,
    table_elements: usize,
}

impl MemoryCap {
    pub(crate) fn new(max_bytes: usize) -> Self {
        MemoryCap { max_bytes, refused: None, total_bytes: 0, table_elements: 0 }
    }

    /// Bytes of linear memory the instance holds now, across all of its memories.
    pub(crate) fn used_bytes(&self) -> usize {
        self.total_bytes
    }
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.total_bytes.saturating_sub(current).saturating_add(desired);
        if total > self.max_bytes {
            self.refused = Some(total);
            return Ok(false);
        }
        self.total_bytes = total;
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.table_elements.saturating_sub(current).saturating_add(desired);
        if total > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.table_elements = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_CORE_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

impl TaskState {
    pub fn new(grants: Grants) -> anyhow::Result<Self> {
        let refusals = grants
            .observer
            .clone()
            .map(|observer| -> Arc<dyn Fn() + Send + Sync> { Arc::new(move || observer.refused()) });
        let log = PluginLog::new(&grants.label, grants.log_line_max_bytes, grants.log_lines_per_second)
            .hiding(&grants.secrets)
            .telling_refusals(refusals);
        let stderr = StderrTail::new(log.clone());
        let mut builder = WasiCtxBuilder::new();
        builder.allow_blocking_current_thread(grants.fs_inline);
        builder.stderr(stderr.clone());
        for folder in &grants.folders {
            let perms = if folder.writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
            let guest = folder.guest.to_string_lossy().into_owned();
            let setting = if folder.writable { "wasm.fs.write" } else { "wasm.fs.read" };
            let opened = open_granted(&folder.path, setting)?;
            // The sandbox opens the very folder checked, through its descriptor, not the path again.
            let by_descriptor = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&opened));
            builder.preopened_dir(&by_descriptor, &guest, perms).map_err(|e| {
                anyhow::anyhow!(
                    "cannot grant folder {} ({setting}): {e}; check that it exists and the worker may read it",
                    folder.path.display(),
                )
            })?;
        }
        grant_network(&mut builder, &log, &grants.connect)?;
        let mut table = ResourceTable::new();
        table.set_max_capacity(grants.max_host_handles);
        Ok(TaskState {
            wasi: builder.build(),
            table,
            memory: MemoryCap::new(grants.memory_max_bytes),
            log: log.clone(),
            offsets: grants.offsets,
            stderr,
            http_ctx: WasiHttpCtx::new(),
            http_grant: HttpGrant::new(log, &grants.http, grants.max_sockets)?,
            tls: super::tls::context(&grants.label, &grants.tls),
            call_deadlines: true,
            io: None,
            abandoned: None,
            trapped: None,
            max_sockets: grants.max_sockets,
            lookup_names: grants
                .connect
                .iter()
                .filter_map(|entry| entry.rsplit_once(':').map(|(host, _)| host.trim_matches(['[', ']']).to_string()))
                .collect(),
            putting: None,
            tolerate_errant: false,
            progress: None,
            observer: grants.observer.clone(),
            transactions: super::transactions::TransactionRequests::new(grants.defines_transactions),
        })
    }

    /// What the plugin wrote to stderr, trimmed, for failure reports.
    pub fn stderr_text(&self) -> String {
        self.stderr.text()
    }
}

/// Opens a granted folder and checks that what was opened is the folder the grant names (`path`,
/// canonical when the grant was checked against the ceiling): a symbolic link swapped into the
/// path since then leads elsewhere, and is refused.
fn open_granted(path: &std::path::Path, setting: &str) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let folder =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC).open(path).map_err(
            |e| {
                anyhow::anyhow!(
                    "cannot grant folder {} ({setting}): {e}; check that it exists and the worker may read it",
                    path.display()
                )
            },
        )?;
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&folder)))
        .map_err(|e| anyhow::anyhow!("cannot tell which folder {} opened as ({e})", path.display()))?;
    if opened != path {
        anyhow::bail!(
            "{setting}: the folder {} changed since it was checked (it now leads to {}); a link was put in its \
             place, so nothing is granted",
            path.display(),
            opened.display()
        );
    }
    Ok(folder)
}

/// TCP connections only to the granted addresses, checked on every connect; a refusal leaves a
/// log line naming the task and the address. The granted names are resolved when the task starts,
/// and again (at most every `REFRESH_GRANTS`) when the plugin connects to an address they did not
/// resolve to then: a database that moves to a new address is reached again when the plugin
/// reconnects, within the same checks. No UDP, no listening sockets, and name lookups only when
/// something is granted.
fn grant_network(builder: &mut WasiCtxBuilder, log: &PluginLog, connect: &[String]) -> anyhow::Result<()> {
    let granted = std::sync::Arc::new(std::sync::Mutex::new(network::Granted::resolve(connect)?));
    let any = !connect.is_empty();
    // Without a grant there are no TCP sockets at all: creating one takes a file descriptor
    // before any address is checked.
    builder.allow_tcp(any);
    builder.allow_udp(false);
    builder.allow_ip_name_lookup(any);
    let log = log.clone();
    builder.socket_addr_check(move |address, usage| {
        let granted = granted.clone();
        let log = log.clone();
        Box::pin(async move {
            let permitted = match usage {
                SocketAddrUse::TcpConnect => {
                    let check = move || granted.locked().permits(address, network::resolve_grant);
                    // A lookup blocks: off the runtime's threads when there is a runtime.
                    match tokio::runtime::Handle::try_current() {
                        Ok(runtime) => runtime.spawn_blocking(check).await.unwrap_or(false),
                        Err(_) => check(),
                    }
                }
                // Connecting binds the local end to an ephemeral port first.
                SocketAddrUse::TcpBind => address.ip().is_unspecified() && address.port() == 0,
                _ => false,
            };
            if !permitted {
                log.refused(&format!("refused {usage:?} to {address}: not granted in wasm.net.connect"));
            }
            permitted
        })
    });
    Ok(())
}

impl WasiHttpView for TaskState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { hooks: &mut self.http_grant, table: &mut self.table, ctx: &mut self.http_ctx }
    }
}

impl WasiView for TaskState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl wasmtime_wasi_tls::WasiTlsView for TaskState {
    fn tls(&mut self) -> wasmtime_wasi_tls::WasiTlsCtxView<'_> {
        wasmtime_wasi_tls::WasiTlsCtxView { ctx: &mut self.tls, table: &mut self.table }
    }
}

/// `wasi:sockets/ip-name-lookup` limited to the host names of the connector's `wasm.net.connect`
/// grants, so that a plugin cannot leak data through lookups of names of its own making; literal
/// addresses need no lookup and pass through.
pub(crate) struct GrantedLookup;

impl wasmtime::component::HasData for GrantedLookup {
    type Data<'a> = GrantedLookupView<'a>;
}

pub(crate) struct GrantedLookupView<'a> {
    sockets: WasiSocketsCtxView<'a>,
    names: &'a [String],
    log: &'a PluginLog,
    /// `wasm.max.sockets.per.worker`, checked when the plugin creates a TCP socket (which takes a
    /// descriptor before it connects anywhere).
    max_sockets: usize,
}

impl TaskState {
    pub(crate) fn granted_lookup(&mut self) -> GrantedLookupView<'_> {
        GrantedLookupView {
            sockets: WasiSocketsCtxView { ctx: self.wasi.sockets(), table: &mut self.table },
            names: &self.lookup_names,
            log: &self.log,
            max_sockets: self.max_sockets,
        }
    }
}

mod lookup {
    use wasmtime::component::Resource;
    use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{Host, HostResolveAddressStream, ResolveAddressStream};
    use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
    use wasmtime_wasi::p2::{DynPollable, SocketError};

    use super::GrantedLookupView;

    impl Host for GrantedLookupView<'_> {
        fn resolve_addresses(
            &mut self,
            network: Resource<Network>,
            name: String,
        ) -> Result<Resource<ResolveAddressStream>, SocketError> {
            let literal = name.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok();
            if !literal && !self.names.iter().any(|granted| granted.eq_ignore_ascii_case(&name)) {
                self.log.refused(&format!("refused a name lookup of {name:?}: not a host granted in wasm.net.connect"));
                return Err(ErrorCode::PermanentResolverFailure.into());
            }
            Host::resolve_addresses(&mut self.sockets, network, name)
        }
    }

    /// `wasi:sockets/tcp-create-socket` within the worker's socket budget, in place of WASI's
    /// own (which it then calls).
    impl wasmtime_wasi::p2::bindings::sockets::tcp_create_socket::Host for GrantedLookupView<'_> {
        fn create_tcp_socket(
            &mut self,
            family: network::IpAddressFamily,
        ) -> Result<Resource<wasmtime_wasi::p2::bindings::sockets::tcp::TcpSocket>, SocketError> {
            if let Err(why) = super::socket_room(self.max_sockets) {
                self.log.refused(&format!("refused a new TCP socket: {why}"));
                return Err(ErrorCode::NewSocketLimit.into());
            }
            wasmtime_wasi::p2::bindings::sockets::tcp_create_socket::Host::create_tcp_socket(&mut self.sockets, family)
        }
    }

    /// Error conversions, as WASI's own (ip-name-lookup's errors are network's).
    impl network::Host for GrantedLookupView<'_> {
        fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
            network::Host::convert_error_code(&mut self.sockets, error)
        }

        fn network_error_code(&mut self, error: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
            network::Host::network_error_code(&mut self.sockets, error)
        }
    }

    impl network::HostNetwork for GrantedLookupView<'_> {
        fn drop(&mut self, this: Resource<Network>) -> wasmtime::Result<()> {
            network::HostNetwork::drop(&mut self.sockets, this)
        }
    }

    impl HostResolveAddressStream for GrantedLookupView<'_> {
        fn resolve_next_address(
            &mut self,
            stream: Resource<ResolveAddressStream>,
        ) -> Result<Option<IpAddress>, SocketError> {
            HostResolveAddressStream::resolve_next_address(&mut self.sockets, stream)
        }

        fn subscribe(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<Resource<DynPollable>> {
            HostResolveAddressStream::subscribe(&mut self.sockets, stream)
        }

        fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
            HostResolveAddressStream::drop(&mut self.sockets, stream)
        }
    }
}

impl wit::Host for TaskState {}

impl wit_host::Host for TaskState {
    fn log(&mut self, level: wit_host::Level, message: String) {
        let level = match level {
            wit_host::Level::Trace => LogLevel::Trace,
            wit_host::Level::Debug => LogLevel::Debug,
            wit_host::Level::Info => LogLevel::Info,
            wit_host::Level::Warn => LogLevel::Warn,
            wit_host::Level::Error => LogLevel::Error,
        };
        self.log.line(level, "", message.as_bytes(), 0);
    }

    fn committed_offsets(&mut self, partitions: Vec<wit::OffsetMap>) -> wasmtime::Result<Vec<Option<wit::OffsetMap>>> {
        if partitions.len() > MAX_OFFSET_LOOKUPS {
            return Err(wasmtime::format_err!(
                "committed-offsets was asked for {} source partitions at once, more than {MAX_OFFSET_LOOKUPS}; ask in \
                 smaller lists",
                partitions.len()
            ));
        }
        let Some(lookup) = &self.offsets else {
            return Ok(partitions.iter().map(|_| None).collect());
        };
        Ok(partitions.into_iter().map(|p| lookup(&offset_map_from_wit(p)).map(offset_map_to_wit)).collect())
    }

    fn request_task_reconfiguration(&mut self) {
        tracing::warn!(
            task = self.log.label(),
            "the plugin asked for its tasks to be reconfigured, which this host does not do by itself yet; \
             restart the connector (POST /connectors/{{name}}/restart) to split it into tasks again"
        );
    }
}

/// `transaction-context` (0.1.8): the requests are kept for the source loop (`transactions`).
impl wit_transactions::Host for TaskState {
    fn defines_boundaries(&mut self) -> bool {
        self.transactions.defines
    }

    fn commit(&mut self) {
        self.transactions.ask_batch(End::Commit, self.log.label());
    }

    fn commit_after(&mut self, index: u32) {
        self.transactions.ask_after(index, End::Commit, self.log.label());
    }

    fn abort(&mut self) {
        self.transactions.ask_batch(End::Abort, self.log.label());
    }

    fn abort_after(&mut self, index: u32) {
        self.transactions.ask_after(index, End::Abort, self.log.label());
    }
}

impl wit_progress::Host for TaskState {
    fn report(&mut self, line: String) {
        self.progress = Some(cut_to(line, MAX_PROGRESS_BYTES));
    }
}

/// The interface name of the `metrics` import, which `link_metrics` defines (the contract's
/// version: later 0.1 plugins' imports are matched to it by semver).
const METRICS_INTERFACE: &str = "wharf:connector/metrics@0.1.8";

/// The most tags one metric may have, bucket bounds a histogram, and bytes a name, tag or
/// description (Prometheus's own rules are checked by the worker).
pub const MAX_METRIC_TAGS: usize = 8;
pub const MAX_METRIC_BUCKETS: usize = 32;
pub const MAX_METRIC_TEXT_BYTES: usize = 256;
/// Values `update` hands the worker at a time, however many the plugin passed.
const METRIC_UPDATES_AT_ONCE: usize = 256;

/// `metrics.register`'s argument, read lazily: its strings and lists stay in the plugin's memory
/// until their lengths are checked.
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lift)]
#[component(record)]
struct MetricArg {
    name: wasmtime::component::WasmStr,
    description: wasmtime::component::WasmStr,
    kind: MetricKindArg,
    tags: wasmtime::component::WasmList<(wasmtime::component::WasmStr, wasmtime::component::WasmStr)>,
    buckets: wasmtime::component::WasmList<f64>,
}

// Its variants are made by the derived `Lift` from the plugin's value, which rustc does not see.
#[allow(dead_code)]
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lift, Clone, Copy)]
#[component(enum)]
#[repr(u8)]
enum MetricKindArg {
    #[component(name = "counter")]
    Counter,
    #[component(name = "gauge")]
    Gauge,
    #[component(name = "histogram")]
    Histogram,
}

/// Defines the `metrics` import (contract 0.1.7) by hand rather than through the bindings: the
/// generated ones copy every argument before the host sees it, and a plugin's tags may all point
/// at one large string, which would make the host copy it once per tag. Here a count or a length
/// is checked before anything is copied, and `update` reads its values in place.
pub(super) fn link_metrics(linker: &mut wasmtime::component::Linker<TaskState>) -> anyhow::Result<()> {
    let mut metrics = linker.instance(METRICS_INTERFACE)?;
    metrics.func_wrap("register", |mut store, (metric,): (MetricArg,)| Ok((register_metric(&mut store, metric)?,)))?;
    metrics.func_wrap("update", |mut store, (values,): (wasmtime::component::WasmList<(u32, f64)>,)| {
        let Some(observer) = store.data().observer.clone() else { return Ok(()) };
        let mut chunk = Vec::with_capacity(values.len().min(METRIC_UPDATES_AT_ONCE));
        for value in values.iter(&mut store)? {
            chunk.push(value?);
            if chunk.len() == METRIC_UPDATES_AT_ONCE {
                observer.record_metrics(&chunk);
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            observer.record_metrics(&chunk);
        }
        Ok(())
    })?;
    Ok(())
}

/// A string of the plugin's, at most `MAX_METRIC_TEXT_BYTES` long, or why not.
fn metric_text(
    store: &wasmtime::StoreContextMut<'_, TaskState>,
    text: &wasmtime::component::WasmStr,
    what: &str,
) -> wasmtime::Result<Result<String, String>> {
    let text = text.to_str(store)?;
    if text.len() > MAX_METRIC_TEXT_BYTES {
        return Ok(Err(format!("{what} is {} bytes long; at most {MAX_METRIC_TEXT_BYTES} are allowed", text.len())));
    }
    Ok(Ok(text.into_owned()))
}

/// `metrics.register`: the metric read within its bounds and handed to the task's observer. An
/// error of the plugin's own making is its answer; memory that cannot be read traps.
fn register_metric(
    store: &mut wasmtime::StoreContextMut<'_, TaskState>,
    metric: MetricArg,
) -> wasmtime::Result<Result<u32, String>> {
    let name = match metric_text(store, &metric.name, "the metric's name")? {
        Ok(name) => name,
        Err(why) => return Ok(Err(why)),
    };
    if metric.tags.len() > MAX_METRIC_TAGS {
        return Ok(Err(format!(
            "the metric {name:?} has {} tags; at most {MAX_METRIC_TAGS} are allowed",
            metric.tags.len()
        )));
    }
    if metric.buckets.len() > MAX_METRIC_BUCKETS {
        return Ok(Err(format!(
            "the histogram {name:?} has {} bucket bounds; at most {MAX_METRIC_BUCKETS} are allowed",
            metric.buckets.len()
        )));
    }
    // A description is help text: a long one is cut, not refused.
    let description = metric.description.to_str(&*store)?;
    let mut end = description.len().min(MAX_METRIC_TEXT_BYTES);
    while !description.is_char_boundary(end) {
        end -= 1;
    }
    let description = description[..end].to_string();
    let mut tags = Vec::with_capacity(metric.tags.len());
    for index in 0..metric.tags.len() {
        let Some(tag) = metric.tags.get(&mut *store, index) else { break };
        let (key, value) = tag?;
        let key = match metric_text(store, &key, "a tag's name")? {
            Ok(key) => key,
            Err(why) => return Ok(Err(format!("{why} (metric {name:?})"))),
        };
        let value = match metric_text(store, &value, &format!("the value of the tag {key:?}"))? {
            Ok(value) => value,
            Err(why) => return Ok(Err(format!("{why} (metric {name:?})"))),
        };
        tags.push((key, value));
    }
    let buckets = metric.buckets.iter(&mut *store)?.collect::<wasmtime::Result<Vec<f64>>>()?;
    // An instance outside a task (a benchmark's, a harness's) keeps no metrics: the plugin opens
    // as it would in a task, and its updates go nowhere.
    let Some(observer) = store.data().observer.clone() else { return Ok(Ok(0)) };
    let kind = match metric.kind {
        MetricKindArg::Counter => PluginMetricKind::Counter,
        MetricKindArg::Gauge => PluginMetricKind::Gauge,
        MetricKindArg::Histogram => PluginMetricKind::Histogram,
    };
    Ok(observer.register_metric(PluginMetric { name, description, kind, tags, buckets }))
}

impl TaskState {
    /// The line the plugin reported since the last call, if any.
    pub(crate) fn take_progress(&mut self) -> Option<String> {
        self.progress.take()
    }
}

impl wit_errant::Host for TaskState {
    fn report(
        &mut self,
        topic: String,
        partition: i32,
        offset: i64,
        reason: String,
    ) -> wasmtime::Result<Result<(), String>> {
        let tolerate = self.tolerate_errant;
        let Some(putting) = &mut self.putting else {
            return Ok(Err(
                "errant-records.report is for records of the batch being put, and no put is under way".into()
            ));
        };
        let known = putting
            .topics
            .iter()
            .position(|t| *t == topic)
            .is_some_and(|index| putting.records.contains(&(index as u32, partition, offset)));
        if !known {
            return Ok(Err(format!(
                "the record at {topic}-{partition} offset {offset} is not in the batch being put; report only records \
                 put gave"
            )));
        }
        let already =
            putting.reported.iter().any(|r| r.offset == offset && r.partition == partition && r.topic == topic);
        if !already {
            // At most one report per record of the batch: the batch bounds what is kept.
            let reason = cut_to(reason, MAX_ERRANT_REASON_BYTES);
            putting.reported.push(ErrantReport { topic, partition, offset, reason });
        }
        if tolerate {
            Ok(Ok(()))
        } else {
            Ok(Err("errors.tolerance=none: the task fails when this put returns; set errors.tolerance=all for the \
                    host to skip reported records (to errors.deadletterqueue.topic.name, if set)"
                .into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_memory_cap_holds_across_all_memories_of_an_instance() {
        let mut cap = MemoryCap::new(256 * MIB);
        assert!(cap.memory_growing(0, 200 * MIB, None).unwrap());
        // A second memory may not take what the first already holds.
        assert!(!cap.memory_growing(0, 100 * MIB, None).unwrap());
        assert_eq!(cap.refused, Some(300 * MIB));
        assert!(cap.memory_growing(0, 50 * MIB, None).unwrap());
        // The first memory grows within what is left.
        assert!(cap.memory_growing(200 * MIB, 206 * MIB, None).unwrap());
        assert!(!cap.memory_growing(206 * MIB, 207 * MIB, None).unwrap());
    }

    #[test]
    fn a_granted_folder_swapped_for_a_link_after_its_check_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (granted, elsewhere) = (root.join("granted"), root.join("elsewhere"));
        std::fs::create_dir(&granted).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        assert!(open_granted(&granted, "wasm.fs.read").is_ok());
        std::fs::remove_dir(&granted).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &granted).unwrap();
        let refused = open_granted(&granted, "wasm.fs.read").unwrap_err().to_string();
        assert!(refused.contains("changed since it was checked") && refused.contains("elsewhere"), "{refused}");
    }

    #[test]
    fn table_elements_are_bounded_across_tables() {
        let mut cap = MemoryCap::new(MIB);
        assert!(cap.table_growing(0, MAX_TABLE_ELEMENTS - 10, None).unwrap());
        assert!(!cap.table_growing(0, 11, None).unwrap());
        assert!(cap.table_growing(0, 10, None).unwrap());
    }
}
