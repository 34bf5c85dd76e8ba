//! The task's work: set up (server checks, publication, slot), snapshot, then stream. Each
//! `poll` does a bounded part of it and returns within its budget.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wharf_db_wire::net::Endpoint;
use wharf_db_wire::postgres::{Connection, Lsn, PgError, Replication, POSTGRES_EPOCH_MICROS};
use wharf_db_wire::{Keys, Login};
use wharf_sdk::{committed_offset, log, ConnectorError, Level, OffsetMap, Scalar, SourceRecord};

use crate::catalog::{self, quoted};
use crate::events::{self, Cell, Events, Position, Table};
use crate::pgoutput::{self, Message};
use crate::settings::{Settings, SnapshotMode};

const KEYS: Keys = Keys {
    client: "postgres-cdc",
    server: "database.hostname and database.port",
    user: "database.user",
    password: "database.password",
    database: "database.dbname",
};

/// Records made ahead of the host's asking at most (a truncate of many tables, a delete and its
/// tombstone): past it, the stream is not read until the host takes them.
const MAX_PENDING: usize = 4096;
/// Reconnections in a row before the task fails; the log names each failure.
const MAX_RECONNECTS: u32 = 60;

/// What a stored offset says.
#[derive(Debug, Clone, Default)]
struct Stored {
    lsn: Option<u64>,
    lsn_proc: Option<u64>,
    lsn_commit: Option<u64>,
    message_type: Option<String>,
    /// A snapshot was under way and did not finish.
    snapshot_running: bool,
    tx_id: Option<i64>,
    ts_us: i64,
}

impl Stored {
    fn read(offset: &OffsetMap) -> Stored {
        let get = |key: &str| offset.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let number = |key: &str| match get(key) {
            Some(Scalar::Integer(n)) => Some(*n),
            Some(Scalar::Float(f)) => Some(*f as i64),
            Some(Scalar::Text(t)) => t.parse().ok(),
            _ => None,
        };
        let truth = |key: &str| match get(key) {
            Some(Scalar::Boolean(b)) => *b,
            Some(Scalar::Text(t)) => t == "true",
            _ => false,
        };
        let snapshot = match get("snapshot") {
            Some(Scalar::Boolean(true)) => true,
            Some(Scalar::Text(t)) => t == "INITIAL" || t == "true",
            _ => false,
        };
        let done = truth("last_snapshot_record") || truth("snapshot_completed");
        let lsn_proc = number("lsn_proc").map(|n| n as u64);
        Stored {
            lsn: number("lsn").map(|n| n as u64),
            lsn_proc,
            lsn_commit: number("lsn_commit").map(|n| n as u64).or(lsn_proc),
            message_type: match get("messageType") {
                Some(Scalar::Text(t)) => Some(t.clone()),
                _ => None,
            },
            snapshot_running: snapshot && !done,
            tx_id: number("txId"),
            ts_us: number("ts_usec").unwrap_or(0),
        }
    }
}

/// A snapshot row waiting for the next one, which tells whether it was the last of its table.
struct Held {
    table: Arc<Table>,
    row: wharf_sdk::Value,
    first_of_table: bool,
    last_of_table: bool,
}

struct Snapshot {
    /// Tables still to read, in order.
    tables: VecDeque<(String, String)>,
    /// The table whose cursor is open.
    current: Option<Arc<Table>>,
    rows_of_current: u64,
    rows: u64,
    held: Option<Held>,
    first_given: bool,
    position: Position,
    /// Where streaming begins once the snapshot is done.
    stream_from: Lsn,
    started: Instant,
}

/// Which changes a resumed stream has already delivered.
#[derive(Debug, Clone, Copy, Default)]
struct Resume {
    /// Transactions whose commit record starts before this were delivered whole.
    commit: Option<u64>,
    /// In the first transaction after them, changes up to this were delivered.
    processed: Option<u64>,
}

struct Transaction {
    /// Changes at or before this were delivered before a restart.
    skip_through: Option<u64>,
    xid: u32,
    /// Its events so far, for `provide.transaction.metadata`.
    events: i64,
    /// Whether its BEGIN record was written (so its END is).
    begun: bool,
}

enum Phase {
    Setup,
    Snapshot(Box<Snapshot>),
    Stream,
    /// `snapshot.mode=initial_only`, its snapshot done.
    Finished,
}

pub struct Capture {
    settings: Settings,
    events: Events,
    application: String,
    /// Each read and write's deadline, within the call's.
    io_timeout: Duration,
    /// How long a poll may take.
    budget: Duration,
    catalog: Option<Connection>,
    replication: Option<Connection>,
    phase: Phase,
    /// Captured tables by relation OID; `None` for relations not captured.
    tables: HashMap<u32, Option<Arc<Table>>>,
    pending: VecDeque<SourceRecord>,
    /// The stream's position: where the last message read leaves it.
    position: Position,
    transaction: Option<Transaction>,
    resume: Resume,
    /// The position of the last record the host took.
    returned: Option<Stored>,
    /// What the host has stored, confirmed to the server.
    confirmed: Lsn,
    last_status: Instant,
    last_heartbeat: Instant,
    reconnects: u32,
    streamed: u64,
    /// Rows the snapshots of this task run read.
    snapshot_rows: u64,
    /// How far behind the server the last change read was, in ms, when it was read.
    lag_ms: Option<f64>,
    /// The end of the server's WAL, as its last message said.
    server_end: Lsn,
}

/// Where the capture stands, in figures (the task's metrics).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    /// Rows the snapshot read, changes streamed, since the task started.
    pub snapshot_rows: u64,
    pub streamed: u64,
    pub snapshot_running: bool,
    /// Tables the running snapshot has still to read (the one being read included).
    pub snapshot_tables_left: u64,
    /// Streaming: bytes of WAL between what was read and the server's end.
    pub wal_bytes_behind: u64,
    /// Streaming: how long before it was read the last change read was committed, in ms.
    pub ms_behind_source: Option<f64>,
}

fn fatal(message: String) -> ConnectorError {
    ConnectorError::Fatal(message)
}

impl Capture {
    pub fn new(settings: Settings, connector: &str, call_timeout_ms: u64) -> Capture {
        let events = Events::new(&settings.prefix, &settings.database, settings.tombstones);
        let call = Duration::from_millis(call_timeout_ms.max(100));
        let budget = Duration::from_millis(settings.poll_interval_ms).min(call / 2);
        Capture {
            settings,
            events,
            application: format!("wharf {connector}"),
            io_timeout: call * 3 / 5,
            budget,
            catalog: None,
            replication: None,
            phase: Phase::Setup,
            tables: HashMap::new(),
            pending: VecDeque::new(),
            position: Position::default(),
            transaction: None,
            resume: Resume::default(),
            returned: None,
            confirmed: Lsn(0),
            last_status: Instant::now(),
            last_heartbeat: Instant::now(),
            reconnects: 0,
            streamed: 0,
            snapshot_rows: 0,
            lag_ms: None,
            server_end: Lsn(0),
        }
    }

    fn connect(&self, replication: bool) -> Result<Connection, PgError> {
        let address = format!("{}:{}", self.settings.host, self.settings.port);
        let login = Login {
            endpoint: Endpoint {
                host: &self.settings.host,
                port: self.settings.port,
                address: &address,
                tls: self.settings.tls,
                tls_setting: &self.settings.tls_setting,
                server_key: KEYS.server,
            },
            address: &address,
            user: &self.settings.user,
            password: self.settings.password.as_deref(),
            database: &self.settings.database,
            application: &self.application,
            timeout: self.io_timeout,
            keys: &KEYS,
            replication,
        };
        Connection::connect(&login)
    }

    /// At most `max` records; none when nothing changed within the poll's budget.
    pub fn poll(&mut self, max: usize) -> Result<Vec<SourceRecord>, ConnectorError> {
        let started = Instant::now();
        let outcome = match self.phase {
            Phase::Setup => self.setup(),
            Phase::Snapshot(_) => self.snapshot(max, started),
            Phase::Stream => self.stream(max, started),
            Phase::Finished => {
                std::thread::sleep(self.budget);
                Ok(())
            }
        };
        if let Err(e) = outcome {
            self.lost(e)?;
        }
        let take = self.pending.len().min(max);
        let records: Vec<SourceRecord> = self.pending.drain(..take).collect();
        if let Some(last) = records.last() {
            self.returned = Some(Stored::read(&last.source_offset));
        }
        Ok(records)
    }

    /// A failed step: a lost connection is opened again on the next poll, resuming after the
    /// last record returned; anything else fails the task.
    fn lost(&mut self, error: Failure) -> Result<(), ConnectorError> {
        match error {
            Failure::Fatal(message) => Err(fatal(message)),
            Failure::Connection(message) => {
                self.reconnects += 1;
                if self.reconnects > MAX_RECONNECTS {
                    return Err(fatal(format!(
                        "{message}; gave up after {MAX_RECONNECTS} attempts to connect again in a row"
                    )));
                }
                log(
                    Level::Warn,
                    &format!(
                        "{message}; connecting again (attempt {} of {MAX_RECONNECTS}), resuming after the last change \
                         handed to the worker",
                        self.reconnects
                    ),
                );
                self.close_connections();
                // Records not handed over yet are read again from the server.
                self.pending.clear();
                self.transaction = None;
                if matches!(self.phase, Phase::Stream) {
                    self.phase = Phase::Setup;
                }
                if let Phase::Snapshot(_) = self.phase {
                    // The snapshot's transaction is gone with its connection: it starts over.
                    self.phase = Phase::Setup;
                }
                std::thread::sleep(self.budget.min(Duration::from_secs(1)));
                Ok(())
            }
        }
    }

    fn close_connections(&mut self) {
        if let Some(c) = self.catalog.take() {
            c.close();
        }
        if let Some(c) = self.replication.take() {
            c.close();
        }
    }

    /// Checks the server, makes the publication and the slot, and decides whether to snapshot.
    fn setup(&mut self) -> Result<(), Failure> {
        let mut db = self.connect(false).map_err(Failure::from)?;
        catalog::check_server(&mut db, &self.settings).map_err(Failure::Fatal)?;
        let stored = match &self.returned {
            // Reconnecting: resume after what the host took (a snapshot under way starts over).
            Some(returned) => Some(returned.clone()),
            None => committed_offset(&self.events.partition).map(|o| Stored::read(&o)),
        };
        let snapshot_wanted = match self.settings.snapshot {
            SnapshotMode::Always => self.returned.is_none(),
            SnapshotMode::NoData => false,
            _ => stored.as_ref().is_none_or(|s| s.snapshot_running),
        };
        let streams = self.settings.snapshot != SnapshotMode::InitialOnly;
        let slot = catalog::slot(&mut db, &self.settings.slot).map_err(Failure::from)?;
        if let Some(slot) = &slot {
            if slot.plugin != "pgoutput" {
                return Err(Failure::Fatal(format!(
                    "the replication slot {} decodes with {}, and postgres-cdc reads pgoutput: drop the slot \
                     (SELECT pg_drop_replication_slot('{}')) or name another with slot.name",
                    self.settings.slot, slot.plugin, self.settings.slot
                )));
            }
            if slot.database != self.settings.database {
                return Err(Failure::Fatal(format!(
                    "the replication slot {} belongs to the database {}, not {}: name another with slot.name",
                    self.settings.slot, slot.database, self.settings.database
                )));
            }
            if let Some(pid) = &slot.active_pid {
                return Err(Failure::Connection(format!(
                    "the replication slot {} is in use by the server process {pid} (another connector or client \
                     reads it)",
                    self.settings.slot
                )));
            }
        }
        // Stored offsets that point into a slot that is gone, or behind what the slot kept:
        // the changes between are lost.
        let mut snapshot_wanted = snapshot_wanted;
        let mut stored = stored;
        if let (Some(s), true, false) = (&stored, streams, snapshot_wanted) {
            let position = s.lsn_proc.or(s.lsn).unwrap_or(0);
            let gone = match &slot {
                None => Some("does not exist".to_string()),
                Some(slot) => {
                    slot.restart.filter(|r| r.0 > position).map(|r| format!("keeps changes from {r} on only"))
                }
            };
            if let Some(why) = gone {
                if self.settings.snapshot == SnapshotMode::WhenNeeded {
                    log(
                        Level::Warn,
                        &format!(
                            "the stored position {} is no longer available (the slot {} {why}); \
                             snapshot.mode=when_needed, so the tables are read again",
                            Lsn(position),
                            self.settings.slot
                        ),
                    );
                    snapshot_wanted = true;
                    stored = None;
                } else {
                    return Err(Failure::Fatal(format!(
                        "the stored offsets resume at {}, and the replication slot {} {why}: the changes since are \
                         lost. Set snapshot.mode=when_needed to read the tables again, or delete the connector's \
                         offsets",
                        Lsn(position),
                        self.settings.slot
                    )));
                }
            }
        }
        if streams {
            let publish = publish_list(&self.settings);
            catalog::ensure_publication(&mut db, &self.settings, publish.as_deref()).map_err(Failure::Fatal)?;
        }
        let mut replication = None;
        let mut exported = None;
        if streams {
            let mut stream = self.connect(true).map_err(Failure::from)?;
            if slot.is_none() {
                let rows = stream
                    .simple(&format!("CREATE_REPLICATION_SLOT {} LOGICAL pgoutput", quoted(&self.settings.slot)))
                    .map_err(|e| match e {
                        PgError::Server(_) => Failure::Fatal(format!(
                            "creating the replication slot {} failed: {e}; check max_replication_slots and that {} \
                             has the REPLICATION attribute",
                            self.settings.slot, self.settings.user
                        )),
                        other => Failure::from(other),
                    })?;
                let row = rows.into_iter().next().unwrap_or_default();
                let consistent: Option<Lsn> = row.get(1).cloned().flatten().and_then(|l| l.parse().ok());
                let name = row.get(2).cloned().flatten();
                log(
                    Level::Info,
                    &format!(
                        "made the replication slot {} at {}",
                        self.settings.slot,
                        consistent.map_or("?".into(), |l| l.to_string())
                    ),
                );
                exported = consistent.zip(name);
            }
            replication = Some(stream);
        }
        let resume = match &stored {
            Some(s) if !snapshot_wanted => {
                let partial = !matches!(s.message_type.as_deref(), Some("COMMIT") | Some("BEGIN") | None)
                    || self.returned.is_some();
                Resume { commit: s.lsn_commit, processed: if partial { s.lsn_proc } else { None } }
            }
            _ => Resume::default(),
        };
        if snapshot_wanted {
            self.begin_snapshot(&mut db, exported.as_ref())?;
        } else if let Some(mut stream) = replication.take() {
            let from = stored.as_ref().and_then(|s| s.lsn_proc.or(s.lsn)).unwrap_or(0);
            if let Some(s) = &stored {
                self.position = Position {
                    ts_us: s.ts_us,
                    tx_id: s.tx_id,
                    lsn: s.lsn,
                    lsn_proc: s.lsn_proc,
                    lsn_commit: s.lsn_commit,
                    ..Position::default()
                };
            }
            self.start_stream(&mut stream, Lsn(from))?;
            self.resume = resume;
            replication = Some(stream);
            self.phase = Phase::Stream;
        } else {
            self.phase = Phase::Finished;
        }
        self.catalog = Some(db);
        self.replication = replication;
        self.reconnects = 0;
        Ok(())
    }

    fn start_stream(&mut self, stream: &mut Connection, from: Lsn) -> Result<(), Failure> {
        let command = format!(
            "START_REPLICATION SLOT {} LOGICAL {from} (\"proto_version\" '1', \"publication_names\" {})",
            quoted(&self.settings.slot),
            catalog::literal(&self.settings.publication)
        );
        stream.start_replication(&command).map_err(|e| match e {
            PgError::Server(s) if s.code == "55006" => Failure::Connection(format!(
                "the replication slot {} is in use by another process: {}",
                self.settings.slot, s.message
            )),
            PgError::Server(s) => Failure::Fatal(format!("{command} failed: {} (SQLSTATE {})", s.message, s.code)),
            other => Failure::from(other),
        })?;
        log(Level::Info, &format!("streaming changes of the slot {} from {from}", self.settings.slot));
        self.confirmed = from;
        self.last_status = Instant::now();
        Ok(())
    }

    /// Opens the snapshot's transaction: on the slot's exported snapshot when the slot was just
    /// made, so that streaming continues exactly where the snapshot ends.
    fn begin_snapshot(&mut self, db: &mut Connection, exported: Option<&(Lsn, String)>) -> Result<(), Failure> {
        db.simple("BEGIN ISOLATION LEVEL REPEATABLE READ").map_err(Failure::from)?;
        if let Some((_, name)) = exported {
            db.simple(&format!("SET TRANSACTION SNAPSHOT {}", catalog::literal(name))).map_err(Failure::from)?;
        }
        let row = db
            .simple(
                "SELECT pg_current_wal_lsn()::text, pg_current_xact_id()::text, (extract(epoch FROM \
                 current_timestamp) * 1000000)::int8::text",
            )
            .map_err(Failure::from)?
            .into_iter()
            .next()
            .unwrap_or_default();
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let current: Lsn = text(0).parse().map_err(Failure::Fatal)?;
        let lsn = exported.map_or(current, |(l, _)| *l);
        let tables: VecDeque<(String, String)> = catalog::captured(db, &self.settings)
            .map_err(Failure::from)?
            .into_iter()
            .filter(|(s, t)| self.settings.snapshot_tables.allows(&format!("{s}.{t}")))
            .collect();
        log(
            Level::Info,
            &format!(
                "snapshot of {} table(s) at {lsn}: {}",
                tables.len(),
                tables.iter().map(|(s, t)| format!("{s}.{t}")).collect::<Vec<_>>().join(", ")
            ),
        );
        let position = Position {
            ts_us: text(2).parse().unwrap_or(0),
            tx_id: text(1).parse().ok(),
            lsn: Some(lsn.0),
            snapshot: Some("true"),
            ..Position::default()
        };
        self.phase = Phase::Snapshot(Box::new(Snapshot {
            tables,
            current: None,
            rows_of_current: 0,
            rows: 0,
            held: None,
            first_given: false,
            position,
            stream_from: lsn,
            started: Instant::now(),
        }));
        Ok(())
    }

    fn snapshot(&mut self, max: usize, started: Instant) -> Result<(), Failure> {
        let Phase::Snapshot(snap) = &mut self.phase else { return Ok(()) };
        let db = self.catalog.as_mut().ok_or_else(|| Failure::Connection("no connection".into()))?;
        while self.pending.len() < max && started.elapsed() < self.budget {
            let Some(table) = snap.current.clone() else {
                // The next table, or the end.
                let Some((schema, name)) = snap.tables.pop_front() else {
                    if let Some(held) = snap.held.take() {
                        let record = release(&self.events, &mut snap.first_given, &snap.position, held, true);
                        self.pending.push_back(record);
                    }
                    db.simple("COMMIT").map_err(Failure::from)?;
                    log(
                        Level::Info,
                        &format!(
                            "snapshot done: {} row(s) in {:.1} s",
                            snap.rows,
                            snap.started.elapsed().as_secs_f64()
                        ),
                    );
                    let from = snap.stream_from;
                    let position = snap.position.clone();
                    if self.settings.snapshot == SnapshotMode::InitialOnly {
                        self.phase = Phase::Finished;
                        return Ok(());
                    }
                    self.position = Position { snapshot: None, ..position };
                    let mut stream = self.replication.take().ok_or_else(|| Failure::Connection("no stream".into()))?;
                    self.phase = Phase::Stream;
                    self.start_stream(&mut stream, from)?;
                    self.replication = Some(stream);
                    return Ok(());
                };
                let columns = catalog::columns(db, &schema, &name).map_err(Failure::from)?;
                let built = Table::new(&self.settings, &self.events.source, &schema, &name, &columns)
                    .map_err(Failure::Fatal)?;
                db.simple(&format!(
                    "DECLARE wharf_snapshot NO SCROLL CURSOR FOR SELECT * FROM {}.{}",
                    quoted(&schema),
                    quoted(&name)
                ))
                .map_err(Failure::from)?;
                log(Level::Info, &format!("snapshot: reading {schema}.{name}"));
                snap.current = Some(Arc::new(built));
                snap.rows_of_current = 0;
                continue;
            };
            let want = (max - self.pending.len()).clamp(1, self.settings.fetch_size as usize);
            let rows = db.simple(&format!("FETCH {want} FROM wharf_snapshot")).map_err(Failure::from)?;
            let got = rows.len();
            for row in rows {
                let cells: Vec<Cell<'_>> = row.iter().map(|c| c.as_deref().map_or(Cell::Null, Cell::Text)).collect();
                let value = table.row(&cells).map_err(Failure::Fatal)?;
                if let Some(held) = snap.held.take() {
                    let record = release(&self.events, &mut snap.first_given, &snap.position, held, false);
                    self.pending.push_back(record);
                }
                snap.held = Some(Held {
                    table: table.clone(),
                    row: value,
                    first_of_table: snap.rows_of_current == 0,
                    last_of_table: false,
                });
                snap.rows_of_current += 1;
                snap.rows += 1;
            }
            self.snapshot_rows += got as u64;
            if got < want {
                db.simple("CLOSE wharf_snapshot").map_err(Failure::from)?;
                if let Some(held) = &mut snap.held {
                    held.last_of_table = true;
                }
                log(
                    Level::Info,
                    &format!(
                        "snapshot: {}.{} read, {} row(s); {} table(s) to go",
                        table.schema,
                        table.table,
                        snap.rows_of_current,
                        snap.tables.len()
                    ),
                );
                snap.current = None;
            }
        }
        Ok(())
    }

    fn stream(&mut self, max: usize, started: Instant) -> Result<(), Failure> {
        let heartbeat = Duration::from_millis(self.settings.heartbeat_ms);
        loop {
            if self.pending.len() >= max.min(MAX_PENDING) {
                break;
            }
            let left = self.budget.saturating_sub(started.elapsed());
            // Once there is something to hand over, only what has already arrived is read.
            let wait = if self.pending.is_empty() { left } else { Duration::ZERO };
            if left.is_zero() && !self.pending.is_empty() {
                break;
            }
            let stream = self.replication.as_mut().ok_or_else(|| Failure::Connection("no stream".into()))?;
            let message = stream.next_replication(wait).map_err(Failure::from)?;
            match message {
                None => {
                    if left.is_zero() || wait.is_zero() {
                        break;
                    }
                }
                Some(Replication::Keepalive { end, reply }) => {
                    self.server_end = self.server_end.max(end);
                    if reply {
                        self.send_status(true)?;
                    }
                    // An idle stream: everything before `end` is read, so with heartbeats on,
                    // the position may move there and the slot advance.
                    if !heartbeat.is_zero()
                        && self.transaction.is_none()
                        && self.pending.is_empty()
                        && self.position.lsn.is_some_and(|l| end.0 > l)
                    {
                        self.position.lsn = Some(end.0);
                        self.position.lsn_proc = Some(end.0);
                        self.position.lsn_commit = Some(end.0);
                    }
                }
                Some(Replication::Wal { start, end, data }) => {
                    self.server_end = self.server_end.max(end);
                    let message = pgoutput::decode(&data).map_err(Failure::Fatal)?;
                    self.apply(start, message)?;
                }
            }
            if started.elapsed() >= self.budget && !self.pending.is_empty() {
                break;
            }
        }
        if !heartbeat.is_zero()
            && self.last_heartbeat.elapsed() >= heartbeat
            && self.transaction.is_none()
            && self.position.lsn.is_some()
        {
            self.last_heartbeat = Instant::now();
            self.pending.push_back(self.events.heartbeat(&self.settings.heartbeat_topic, &self.position));
            if let (Some(query), Some(db)) = (&self.settings.heartbeat_query, self.catalog.as_mut()) {
                match db.simple(query) {
                    Ok(_) => {}
                    Err(PgError::Server(e)) => log(
                        Level::Warn,
                        &format!(
                            "heartbeat.action.query failed: {} (SQLSTATE {}); the task goes on",
                            e.message, e.code
                        ),
                    ),
                    Err(e) => return Err(Failure::from(e)),
                }
            }
        }
        if self.last_status.elapsed() >= Duration::from_millis(self.settings.status_interval_ms) {
            self.send_status(false)?;
        }
        Ok(())
    }

    fn send_status(&mut self, reply: bool) -> Result<(), Failure> {
        let stream = self.replication.as_mut().ok_or_else(|| Failure::Connection("no stream".into()))?;
        stream.send_status(self.confirmed, reply).map_err(Failure::from)?;
        self.last_status = Instant::now();
        Ok(())
    }

    /// The host stored the offsets of every record returned so far: the server may free the WAL
    /// before them.
    pub fn commit(&mut self) -> Result<(), ConnectorError> {
        // The `lsn_commit` (else `lsn_proc`) of the last record returned, as Debezium confirms.
        let Some(lsn) = self.returned.as_ref().and_then(|r| r.lsn_commit.or(r.lsn_proc)) else { return Ok(()) };
        if Lsn(lsn) <= self.confirmed || !matches!(self.phase, Phase::Stream) {
            return Ok(());
        }
        self.confirmed = Lsn(lsn);
        if let Err(e) = self.send_status(false) {
            // The next poll notices the lost connection; the position is sent again then.
            log(Level::Warn, &format!("could not confirm {} to PostgreSQL: {}", Lsn(lsn), e.message()));
        }
        Ok(())
    }

    fn relation(&mut self, relation: pgoutput::Relation) -> Result<(), Failure> {
        if !catalog::is_captured(&self.settings, &relation.schema, &relation.table) {
            self.tables.insert(relation.oid, None);
            return Ok(());
        }
        let db = self.catalog.as_mut().ok_or_else(|| Failure::Connection("no connection".into()))?;
        let known = catalog::columns(db, &relation.schema, &relation.table).map_err(Failure::from)?;
        // The stream's columns and types decide; the catalog adds nullability, keys and labels.
        let columns: Vec<events::CatalogColumn> = relation
            .columns
            .iter()
            .map(|c| {
                let found = known.iter().find(|k| k.name == c.name);
                events::CatalogColumn {
                    name: c.name.clone(),
                    type_oid: found.filter(|k| k.type_oid != c.type_oid).map_or(c.type_oid, |k| k.type_oid),
                    modifier: found.filter(|k| k.type_oid != c.type_oid).map_or(c.modifier, |k| k.modifier),
                    not_null: found.is_some_and(|k| k.not_null),
                    type_name: found.map(|k| k.type_name.clone()).unwrap_or_default(),
                    labels: found.and_then(|k| k.labels.clone()),
                    key_position: match found {
                        Some(k) => k.key_position,
                        None if c.key => Some(1),
                        None => None,
                    },
                    default: found.and_then(|k| k.default.clone()),
                }
            })
            .collect();
        let (schema, name) = (relation.schema.clone(), relation.table.clone());
        let table =
            Table::new(&self.settings, &self.events.source, &schema, &name, &columns).map_err(Failure::Fatal)?;
        self.tables.insert(relation.oid, Some(Arc::new(table)));
        Ok(())
    }

    fn table(&self, oid: u32) -> Result<Option<Arc<Table>>, Failure> {
        match self.tables.get(&oid) {
            Some(table) => Ok(table.clone()),
            None => Err(Failure::Fatal(format!(
                "PostgreSQL sent a change of relation {oid} before describing it, which pgoutput does not do"
            ))),
        }
    }

    /// Counts an event of `table` in the open transaction, for `provide.transaction.metadata`:
    /// its `transaction` block and the offset's counters.
    fn count(&mut self, table: &Table, at: Lsn) {
        let Some(t) = self.transaction.as_mut().filter(|t| t.begun) else { return };
        t.events += 1;
        let name = format!("{}.{}", table.schema, table.table);
        let orders = &mut self.position.collection_orders;
        let in_table = match orders.iter_mut().find(|(n, _)| *n == name) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                orders.push((name, 1));
                1
            }
        };
        self.position.block = Some((format!("{}:{}", t.xid, at.0), t.events, in_table));
    }

    /// Whether a change at `lsn` of the current transaction was delivered before a restart.
    fn delivered(&self, lsn: u64) -> bool {
        self.transaction.as_ref().and_then(|t| t.skip_through).is_some_and(|through| lsn <= through)
    }

    fn apply(&mut self, at: Lsn, message: Message) -> Result<(), Failure> {
        match message {
            Message::Begin { final_lsn, commit_micros, xid } => {
                let skip_through = match (self.resume.commit, self.resume.processed) {
                    (_, Some(processed)) if self.resume.commit.is_none_or(|c| final_lsn.0 >= c) => {
                        // The first transaction after the delivered ones: from here on no more skipping.
                        self.resume.processed = None;
                        Some(processed)
                    }
                    (Some(commit), _) if final_lsn.0 < commit => Some(u64::MAX),
                    _ => None,
                };
                self.position.tx_id = Some(i64::from(xid));
                self.position.ts_us = commit_micros + POSTGRES_EPOCH_MICROS;
                self.position.lsn = Some(at.0);
                self.position.message_type = Some("BEGIN");
                self.position.collection_orders.clear();
                self.position.block = None;
                let begun = match &self.settings.transaction_topic {
                    Some(topic) if skip_through.is_none() => {
                        self.position.transaction_id = Some(xid.to_string());
                        let record = self.events.transaction(
                            topic,
                            format!("{xid}:{}", at.0),
                            self.position.ts_us.div_euclid(1000),
                            None,
                            &self.position,
                        );
                        self.pending.push_back(record);
                        true
                    }
                    _ => false,
                };
                self.transaction = Some(Transaction { skip_through, xid, events: 0, begun });
            }
            Message::Commit { end_lsn, .. } => {
                let transaction = self.transaction.take();
                self.position.lsn = Some(end_lsn.0.max(at.0));
                self.position.lsn_proc = self.position.lsn;
                self.position.lsn_commit = self.position.lsn;
                self.position.message_type = Some("COMMIT");
                self.position.block = None;
                if let (Some(topic), Some(t)) = (&self.settings.transaction_topic, transaction) {
                    if t.begun {
                        let record = self.events.transaction(
                            topic,
                            format!("{}:{}", t.xid, at.0),
                            self.position.ts_us.div_euclid(1000),
                            Some((t.events, self.position.collection_orders.clone())),
                            &self.position,
                        );
                        self.pending.push_back(record);
                    }
                }
                self.position.transaction_id = None;
                self.position.collection_orders.clear();
            }
            Message::Relation(relation) => self.relation(relation)?,
            Message::Type { .. } | Message::Other(_) => {}
            Message::Insert { relation, new } => self.change(at, relation, "c", None, Some(new))?,
            Message::Update { relation, old, new } => self.change(at, relation, "u", old, Some(new))?,
            Message::Delete { relation, old } => self.change(at, relation, "d", Some(old), None)?,
            Message::Truncate { relations, .. } => {
                self.position.lsn = Some(at.0);
                self.position.lsn_proc = Some(at.0);
                self.position.message_type = Some("TRUNCATE");
                if self.settings.skipped.contains(&'t') || self.delivered(at.0) {
                    return Ok(());
                }
                for oid in relations {
                    if let Some(table) = self.table(oid)? {
                        self.count(&table, at);
                        let record = self.events.change(&table, "t", None, None, None, &self.position);
                        self.pending.push_back(record);
                    }
                }
            }
        }
        Ok(())
    }

    fn change(
        &mut self,
        at: Lsn,
        relation: u32,
        op: &'static str,
        old: Option<Vec<pgoutput::Cell>>,
        new: Option<Vec<pgoutput::Cell>>,
    ) -> Result<(), Failure> {
        self.position.lsn = Some(at.0);
        self.position.lsn_proc = Some(at.0);
        self.position.message_type = Some(match op {
            "c" => "INSERT",
            "u" => "UPDATE",
            _ => "DELETE",
        });
        let op_char = op.chars().next().unwrap_or('c');
        if self.delivered(at.0) || self.settings.skipped.contains(&op_char) {
            return Ok(());
        }
        let Some(table) = self.table(relation)? else { return Ok(()) };
        fn cells(tuple: &[pgoutput::Cell]) -> Vec<Cell<'_>> {
            tuple
                .iter()
                .map(|c| match c {
                    pgoutput::Cell::Null => Cell::Null,
                    pgoutput::Cell::Unchanged => Cell::Unchanged,
                    pgoutput::Cell::Text(t) => Cell::Text(t),
                })
                .collect()
        }
        let before = match &old {
            Some(tuple) => Some(table.row(&cells(tuple)).map_err(Failure::Fatal)?),
            None => None,
        };
        let after = match &new {
            Some(tuple) => Some(table.row(&cells(tuple)).map_err(Failure::Fatal)?),
            None => None,
        };
        let key = table.key_of(after.as_ref().or(before.as_ref()).unwrap_or(&wharf_sdk::Value::Null));
        // An update that changes the key: a delete of the old key and a create of the new, as
        // Debezium writes it.
        if op == "u" {
            let old_key = before.as_ref().and_then(|b| table.key_of(b));
            if let (Some(old_key), Some(new_key)) = (&old_key, &key) {
                if old_key != new_key {
                    self.count(&table, at);
                    let delete =
                        self.events.change(&table, "d", before.clone(), None, Some(old_key.clone()), &self.position);
                    self.pending.push_back(delete);
                    if self.events.tombstones {
                        let tombstone = self.events.tombstone(&table, Some(old_key.clone()), &self.position);
                        self.pending.push_back(tombstone);
                    }
                    self.count(&table, at);
                    let create = self.events.change(&table, "c", None, after, key, &self.position);
                    self.pending.push_back(create);
                    self.streamed += 1;
                    self.note_lag();
                    return Ok(());
                }
            }
        }
        // With the default replica identity an update carries no old row: `before` is null.
        self.count(&table, at);
        let record = self.events.change(&table, op, before, after, key.clone(), &self.position);
        self.pending.push_back(record);
        if op == "d" && self.events.tombstones {
            self.pending.push_back(self.events.tombstone(&table, key, &self.position));
        }
        self.streamed += 1;
        self.note_lag();
        Ok(())
    }

    /// While the host holds records back: nothing is read, but the server hears from the task
    /// every `status.update.interval.ms`, so that it does not drop a connection that only waits.
    pub fn keep_alive(&mut self) {
        if !matches!(self.phase, Phase::Stream) || self.replication.is_none() {
            return;
        }
        if self.last_status.elapsed() >= Duration::from_millis(self.settings.status_interval_ms) {
            if let Err(e) = self.send_status(false) {
                // The next poll notices the lost connection and connects again.
                log(Level::Warn, &format!("could not send status to PostgreSQL while waiting: {}", e.message()));
            }
        }
    }

    /// Where the capture stands, in figures: the snapshot's rows and tables, the changes
    /// streamed, the stream's lag.
    /// Notes how long ago the change just read was committed, as Debezium's
    /// MilliSecondsBehindSource measures it when it processes a change (so it stays where it was
    /// while nothing changes).
    fn note_lag(&mut self) {
        if self.position.ts_us == 0 {
            return;
        }
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
        self.lag_ms = Some((now - self.position.ts_us).max(0) as f64 / 1e3);
    }

    pub fn figures(&self) -> Figures {
        let mut figures = Figures { snapshot_rows: self.snapshot_rows, streamed: self.streamed, ..Figures::default() };
        match &self.phase {
            Phase::Snapshot(s) => {
                figures.snapshot_running = true;
                figures.snapshot_tables_left = s.tables.len() as u64 + u64::from(s.current.is_some());
            }
            Phase::Stream => {
                let read = self.position.lsn_proc.or(self.position.lsn).unwrap_or(0);
                figures.wal_bytes_behind = self.server_end.0.saturating_sub(read);
                figures.ms_behind_source = self.lag_ms;
            }
            Phase::Setup | Phase::Finished => {}
        }
        figures
    }

    /// What the task reports of itself: the phase, the snapshot's progress, the stream's lag.
    pub fn progress(&self) -> String {
        match &self.phase {
            Phase::Setup => "connecting".into(),
            Phase::Snapshot(s) => {
                let seconds = s.started.elapsed().as_secs_f64();
                let table = s
                    .current
                    .as_ref()
                    .map_or(String::new(), |t| format!(" ({} of {}.{} so far)", s.rows_of_current, t.schema, t.table));
                format!(
                    "snapshot: {} row(s) read in {seconds:.0} s{table}, {} more table(s) to read",
                    s.rows,
                    s.tables.len()
                )
            }
            Phase::Stream => {
                let read = self.position.lsn_proc.or(self.position.lsn).unwrap_or(0);
                let behind = self.server_end.0.saturating_sub(read);
                let age = match self.position.ts_us {
                    0 => String::new(),
                    ts => {
                        let now = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_micros() as i64);
                        format!(", the last change read was committed {:.1} s ago", (now - ts).max(0) as f64 / 1e6)
                    }
                };
                format!(
                    "streaming from the slot {}: {} change(s) read, {} KiB of WAL behind the server (read to {}, \
                     its end at {}){age}; {} confirmed as stored",
                    self.settings.slot,
                    self.streamed,
                    behind / 1024,
                    Lsn(read),
                    self.server_end,
                    self.confirmed
                )
            }
            Phase::Finished => "snapshot done; snapshot.mode=initial_only streams nothing".into(),
        }
    }

    /// Stops: the slot is dropped when `slot.drop.on.stop` says so.
    pub fn close(&mut self) {
        if let Some(stream) = self.replication.take() {
            stream.close();
        }
        if self.settings.drop_slot {
            if let Some(db) = self.catalog.as_mut() {
                let sql = format!("SELECT pg_drop_replication_slot({})", catalog::literal(&self.settings.slot));
                // The walsender may take a moment to let go of the slot.
                for _ in 0..10 {
                    match db.simple(&sql) {
                        Ok(_) => {
                            log(
                                Level::Info,
                                &format!("dropped the replication slot {} (slot.drop.on.stop)", self.settings.slot),
                            );
                            break;
                        }
                        Err(PgError::Server(s)) if s.code == "55006" => std::thread::sleep(Duration::from_millis(100)),
                        Err(e) => {
                            log(
                                Level::Warn,
                                &format!("could not drop the replication slot {}: {e}", self.settings.slot),
                            );
                            break;
                        }
                    }
                }
            }
        }
        if let Some(db) = self.catalog.take() {
            db.close();
        }
    }
}

/// A snapshot row as its record, marked as Debezium marks it: `first` (the snapshot's first
/// row), `last` (its last), `first_in_data_collection` and `last_in_data_collection` (a table's
/// first and last), else `true`.
fn release(events: &Events, first_given: &mut bool, position: &Position, held: Held, last: bool) -> SourceRecord {
    let marker = if last {
        "last"
    } else if !*first_given {
        "first"
    } else if held.last_of_table {
        "last_in_data_collection"
    } else if held.first_of_table {
        "first_in_data_collection"
    } else {
        "true"
    };
    *first_given = true;
    let at = Position { snapshot: Some(marker), ..position.clone() };
    let key = held.table.key_of(&held.row);
    events.change(&held.table, "r", None, Some(held.row), key, &at)
}

/// Which operations the publication publishes, when `skipped.operations` is given: the others.
fn publish_list(settings: &Settings) -> Option<String> {
    if settings.skipped == ['t'] {
        return None;
    }
    let all = [('c', "insert"), ('u', "update"), ('d', "delete"), ('t', "truncate")];
    Some(all.iter().filter(|(c, _)| !settings.skipped.contains(c)).map(|(_, n)| *n).collect::<Vec<_>>().join(","))
}

/// Why a step failed.
pub enum Failure {
    /// The connection: open it again and resume.
    Connection(String),
    /// Needs a person: the message says what to change.
    Fatal(String),
}

impl Failure {
    fn message(&self) -> &str {
        match self {
            Failure::Connection(m) | Failure::Fatal(m) => m,
        }
    }
}

impl From<PgError> for Failure {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Connection(m) => Failure::Connection(m),
            PgError::Server(ref s) if e.is_transient() => Failure::Connection(format!("{e} ({})", s.code)),
            other => Failure::Fatal(other.to_string()),
        }
    }
}
